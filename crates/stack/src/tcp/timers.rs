//! A connection's timers on the injected clock: retransmission, delayed
//! ACK, persist (zero-window probe, with backoff), keepalive, TIME-WAIT,
//! FIN-WAIT-2's bound for a released connection, the tail loss probe and
//! the pacer's next send time.
//! Each is a deadline or nothing; the struct says which fires next and
//! when, so the event loop sleeps exactly until then, and hands out the
//! expired ones in deadline order. The intervals (RTO, backoff) are
//! computed elsewhere and passed in, except the persist and keepalive
//! schedules, which are kept here.
//!
//! On BSD's clocks ([`TimerClock::Bsd`], `--timers bsd`) an interval is
//! counted in whole slow ticks and fires at a tick boundary, and a
//! delayed ACK at the next fast tick ([`super::bsd_clock`]); the pacer's
//! deadline alone stays exact (a rate, not one of BSD's timers).

use std::time::Duration;

use super::bsd_clock::BsdClock;
use crate::time::Instant;

/// One of a connection's timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKind {
    /// Retransmission (RFC 6298).
    Retransmit,
    /// Delayed ACK (RFC 1122 §4.2.3.2).
    DelayedAck,
    /// Persist: probe a zero window (RFC 9293 §3.8.6.1).
    Persist,
    /// Keepalive (RFC 1122 §4.2.3.6).
    Keepalive,
    /// TIME-WAIT's 2·MSL.
    TimeWait,
    /// The tail loss probe (RFC 8985 §7).
    LossProbe,
    /// Rate-based flow control: the pacer lets the next data segment go
    /// (see [`super::pacing`]); nothing to do but run output.
    Pace,
    /// A connection the application released waits this long in
    /// FIN-WAIT-2 for the peer's FIN (Linux's `tcp_fin_timeout`).
    FinWait2,
}

const KINDS: [TimerKind; 8] = [
    TimerKind::Retransmit,
    TimerKind::DelayedAck,
    TimerKind::Persist,
    TimerKind::Keepalive,
    TimerKind::TimeWait,
    TimerKind::LossProbe,
    TimerKind::Pace,
    TimerKind::FinWait2,
];

/// Which clock a connection's timers run on: the `--timers` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerClock {
    /// Each deadline exactly where its interval ends, to the nanosecond.
    #[default]
    Exact,
    /// 4.3BSD's slow and fast timeouts: intervals in whole 500 ms ticks
    /// firing at tick boundaries, delayed ACKs at the next 200 ms tick,
    /// RTT samples and the RTO in slow ticks.
    Bsd(BsdClock),
}

/// The timers' settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerConfig {
    /// The clock the timers run on.
    pub clock: TimerClock,
    /// The delayed-ACK timeout (RFC 1122: under 0.5 s; BSD 200 ms, Linux
    /// 40 ms at least).
    pub delayed_ack: Duration,
    /// The persist interval's floor (BSD's `TCPTV_PERSMIN`, 5 s).
    pub persist_min: Duration,
    /// The persist interval's ceiling (`TCPTV_PERSMAX`, 60 s).
    pub persist_max: Duration,
    /// Idle time before the first keepalive probe (RFC 1122: 2 h at least).
    pub keepalive_idle: Duration,
    /// Time between unanswered probes (BSD and Linux: 75 s).
    pub keepalive_interval: Duration,
    /// Unanswered probes before the connection is dropped (Linux: 9).
    pub keepalive_probes: u32,
    /// The maximum segment lifetime (RFC 9293: 2 min); TIME-WAIT is twice it.
    pub msl: Duration,
    /// How long a connection the application released (closed, not only
    /// shut down for sending) waits in FIN-WAIT-2 for the peer's FIN
    /// before it is reset and dropped (Linux's `tcp_fin_timeout`, 60 s;
    /// BSD's `tcp_finwait2_timeout`, 60 s). RFC 9293 has no such bound:
    /// without it a peer that never closes holds the connection forever.
    pub fin_wait_2: Duration,
}

impl Default for TimerConfig {
    fn default() -> TimerConfig {
        TimerConfig {
            clock: TimerClock::Exact,
            delayed_ack: Duration::from_millis(200),
            persist_min: Duration::from_secs(5),
            persist_max: Duration::from_secs(60),
            keepalive_idle: Duration::from_secs(2 * 3600),
            keepalive_interval: Duration::from_secs(75),
            keepalive_probes: 9,
            msl: Duration::from_secs(120),
            fin_wait_2: Duration::from_secs(60),
        }
    }
}

/// What to do when the keepalive timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepaliveAction {
    /// Send probe number n (from 1); the timer is re-armed.
    Probe(u32),
    /// Too many probes went unanswered: drop the connection.
    GiveUp,
}

/// A connection's timers.
#[derive(Debug, Clone)]
pub struct Timers {
    config: TimerConfig,
    deadlines: [Option<Instant>; KINDS.len()],
    /// Zero-window probes sent since the window last opened.
    persist_shift: u32,
    /// Keepalive probes sent since the peer was last heard.
    keepalive_probes: u32,
}

fn slot(kind: TimerKind) -> usize {
    kind as usize
}

impl Timers {
    /// All timers off.
    pub fn new(config: TimerConfig) -> Timers {
        Timers {
            config,
            deadlines: [None; KINDS.len()],
            persist_shift: 0,
            keepalive_probes: 0,
        }
    }

    /// The settings.
    pub fn config(&self) -> &TimerConfig {
        &self.config
    }

    /// Arms `kind` to fire at `at` (replacing any deadline it had).
    pub fn arm(&mut self, kind: TimerKind, at: Instant) {
        self.deadlines[slot(kind)] = Some(at);
    }

    /// Arms `kind` to fire `after` from `now`: exactly then, or on BSD's
    /// clocks at the slow tick boundary that ends `after` rounded up to
    /// whole ticks (a delayed ACK at the next fast tick, whatever `after`).
    pub fn arm_after(&mut self, kind: TimerKind, now: Instant, after: Duration) {
        let at = match self.config.clock {
            TimerClock::Exact => now.after(after),
            TimerClock::Bsd(c) => match kind {
                TimerKind::DelayedAck => c.next_fast_tick(now),
                TimerKind::Pace => now.after(after),
                _ => c.slow_deadline(now, c.slow_ticks(after)),
            },
        };
        self.arm(kind, at);
    }

    /// Turns `kind` off.
    pub fn cancel(&mut self, kind: TimerKind) {
        self.deadlines[slot(kind)] = None;
    }

    /// When `kind` fires, if armed.
    pub fn deadline(&self, kind: TimerKind) -> Option<Instant> {
        self.deadlines[slot(kind)]
    }

    /// The timer that fires next and when (the earlier kind on a tie).
    pub fn next(&self) -> Option<(TimerKind, Instant)> {
        // A plain scan in kind order, a later kind taking over only when
        // strictly earlier: on the data path after every segment, where an
        // iterator chain over (kind, deadline) pairs compiled to spills.
        let mut next: Option<(TimerKind, Instant)> = None;
        for (&kind, &at) in KINDS.iter().zip(&self.deadlines) {
            if let Some(at) = at {
                if next.is_none_or(|(_, best)| at < best) {
                    next = Some((kind, at));
                }
            }
        }
        next
    }

    /// When the next timer fires ([`Timers::next`] without the kind).
    pub fn next_deadline(&self) -> Option<Instant> {
        let mut next = u64::MAX;
        let mut armed = false;
        for at in self.deadlines.iter().flatten() {
            next = next.min(at.0);
            armed = true;
        }
        armed.then_some(Instant(next))
    }

    /// How long the event loop may sleep from `now` (zero if a timer is
    /// due, None if none is armed).
    pub fn sleep_for(&self, now: Instant) -> Option<Duration> {
        self.next().map(|(_, at)| at.since(now))
    }

    /// The next expired timer, disarmed; call until None.
    pub fn poll_expired(&mut self, now: Instant) -> Option<TimerKind> {
        let (kind, at) = self.next()?;
        (at <= now).then(|| {
            self.cancel(kind);
            kind
        })
    }

    /// Arms the delayed-ACK timer unless it is already running (the first
    /// unacknowledged segment sets the deadline).
    pub fn arm_delayed_ack(&mut self, now: Instant) {
        if self.deadline(TimerKind::DelayedAck).is_none() {
            self.arm_after(TimerKind::DelayedAck, now, self.config.delayed_ack);
        }
    }

    /// The persist interval after `persist_shift` probes: the RTO doubled
    /// per probe, kept within [persist_min, persist_max] (BSD's
    /// `tcp_setpersist`).
    pub fn persist_interval(&self, rto: Duration) -> Duration {
        let backed_off = rto.saturating_mul(1u32 << self.persist_shift.min(16));
        backed_off.clamp(self.config.persist_min, self.config.persist_max)
    }

    /// The peer's window is zero and nothing is in flight: arm the persist
    /// timer at the current backoff.
    pub fn arm_persist(&mut self, now: Instant, rto: Duration) {
        let interval = self.persist_interval(rto);
        self.arm_after(TimerKind::Persist, now, interval);
    }

    /// A zero-window probe was sent on expiry: back off and re-arm.
    pub fn on_persist_probe(&mut self, now: Instant, rto: Duration) {
        self.persist_shift += 1;
        self.arm_persist(now, rto);
    }

    /// The window opened: the persist timer stops and its backoff resets.
    pub fn on_window_open(&mut self) {
        self.persist_shift = 0;
        self.cancel(TimerKind::Persist);
    }

    /// Something came from the peer: keepalive starts over from idle.
    pub fn on_peer_heard(&mut self, now: Instant) {
        self.keepalive_probes = 0;
        self.arm_after(TimerKind::Keepalive, now, self.config.keepalive_idle);
    }

    /// The keepalive timer fired: probe (and re-arm) or give up.
    pub fn on_keepalive_fired(&mut self, now: Instant) -> KeepaliveAction {
        if self.keepalive_probes >= self.config.keepalive_probes {
            self.cancel(TimerKind::Keepalive);
            return KeepaliveAction::GiveUp;
        }
        self.keepalive_probes += 1;
        self.arm_after(TimerKind::Keepalive, now, self.config.keepalive_interval);
        KeepaliveAction::Probe(self.keepalive_probes)
    }

    /// TIME-WAIT entered (or a FIN retransmitted in it): 2·MSL from `now`,
    /// and every other timer stops.
    pub fn enter_time_wait(&mut self, now: Instant) {
        self.deadlines = [None; KINDS.len()];
        self.arm_after(TimerKind::TimeWait, now, self.config.msl * 2);
    }
}

#[cfg(test)]
#[path = "timers_tests.rs"]
mod tests;
