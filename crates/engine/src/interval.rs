//! Per-interval samples of a running stream trial (`bench --interval`), as
//! iperf3 prints them: the bytes each connection moved in each interval
//! and, for a TCP sender, the retransmits in it and the congestion window
//! at its end.
//!
//! The data path stays lean: each connection's loop stores its running byte
//! count in an [`AtomicU64`] (one relaxed store per system call, no clock
//! read, no branch), and a separate sampler thread reads those counters
//! and TCP_INFO (getsockopt on the connection's descriptor) at each
//! interval's end. A connection registers with the [`Meter`] before its
//! first byte and marks its end after its last; the registration is a
//! guard dropped before the socket closes, so a descriptor is never read
//! after reuse.

use crate::tcpinfo::TcpInfo;
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A final interval shorter than this share of `--interval` is folded into
/// the one before it (the few writes after a duration-bound trial's stop),
/// so a 10 s trial at 1 s intervals has ten intervals, as in iperf3.
pub const TAIL_FOLD_SHARE: f64 = 0.1;

/// What one connection did in one interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamInterval {
    /// The connection, from 1 (iperf3's `[  5]` column).
    pub stream: u32,
    /// Payload bytes moved in the interval.
    pub bytes: u64,
    /// Segments retransmitted in the interval (TCP senders).
    pub retransmits: Option<u64>,
    /// Congestion window at the interval's end, in bytes (TCP senders).
    pub cwnd_bytes: Option<u64>,
}

/// One interval of a trial: every connection's share and their sum.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Start, seconds since the trial's data phase began.
    pub start_s: f64,
    /// End, seconds since the trial's data phase began.
    pub end_s: f64,
    /// Payload bytes moved in the interval, all connections.
    pub bytes: u64,
    /// Bits per second over the interval, all connections.
    pub throughput_bps: f64,
    /// Segments retransmitted in the interval, all connections (TCP senders).
    pub retransmits: Option<u64>,
    /// Each connection's share.
    pub streams: Vec<StreamInterval>,
}

/// Receives each interval as soon as it is measured (the live lines).
pub type IntervalSink = Arc<dyn Fn(&IntervalSample) + Send + Sync>;

/// `--interval`: how often to sample, and who prints the samples.
#[derive(Clone)]
pub struct IntervalSpec {
    /// The interval.
    pub every: Duration,
    /// Called from the sampler thread with each interval, if set.
    pub sink: Option<IntervalSink>,
}

/// One registered connection.
struct Conn {
    stream: u32,
    counter: Arc<AtomicU64>,
    /// Readable for TCP_INFO while registered (TCP senders only).
    fd: Option<RawFd>,
    tcp_sender: bool,
    ended: Option<Instant>,
    last_bytes: u64,
    last_retrans: Option<u32>,
    /// TCP_INFO read by the connection's own thread at its end.
    final_info: Option<TcpInfo>,
}

struct State {
    conns: Vec<Conn>,
    stopping: bool,
    samples: Vec<IntervalSample>,
    /// Time zero: when the first connection registered (its data start).
    started: Option<Instant>,
    last_at: Instant,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    every: Duration,
    sink: Option<IntervalSink>,
}

/// Samples the connections of one side of one trial every interval.
pub struct Meter {
    shared: Arc<Shared>,
    sampler: Option<JoinHandle<()>>,
}

/// What the connections of a side register with; a clone of the [`Meter`]'s.
#[derive(Clone)]
pub struct MeterHandle {
    shared: Arc<Shared>,
}

/// A connection's place in the [`Meter`]: its byte counter, kept until the
/// connection ends.
pub struct Registration {
    shared: Arc<Shared>,
    index: usize,
    counter: Arc<AtomicU64>,
}

impl Meter {
    /// Starts the sampler, which samples every `spec.every` from the first
    /// connection's registration on (iperf3 too counts from its streams'
    /// start, not from the connection set-up before it).
    pub fn start(spec: &IntervalSpec) -> std::io::Result<Meter> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                conns: Vec::new(),
                stopping: false,
                samples: Vec::new(),
                started: None,
                last_at: Instant::now(),
            }),
            wake: Condvar::new(),
            every: spec.every,
            sink: spec.sink.clone(),
        });
        let s = shared.clone();
        let sampler = std::thread::Builder::new()
            .name("tcplab-interval".into())
            .spawn(move || sample_until_stopped(&s))?;
        Ok(Meter {
            shared,
            sampler: Some(sampler),
        })
    }

    /// The handle connections register with.
    pub fn handle(&self) -> MeterHandle {
        MeterHandle {
            shared: self.shared.clone(),
        }
    }

    /// Stops sampling and returns the intervals: the last one ends when the
    /// last connection did.
    pub fn stop(mut self) -> Vec<IntervalSample> {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        if let Some(h) = self.sampler.take() {
            let _ = h.join();
        }
        std::mem::take(&mut self.shared.lock().samples)
    }
}

impl MeterHandle {
    /// Registers connection `stream` (from 1) on `sock`; `tcp_sender` reads
    /// its TCP_INFO at each interval.
    pub fn register(&self, stream: u32, sock: &impl AsRawFd, tcp_sender: bool) -> Registration {
        let counter = Arc::new(AtomicU64::new(0));
        let mut st = self.shared.lock();
        if st.started.is_none() {
            let now = Instant::now();
            st.started = Some(now);
            st.last_at = now;
            self.shared.wake.notify_all();
        }
        st.conns.push(Conn {
            stream,
            counter: counter.clone(),
            fd: tcp_sender.then(|| sock.as_raw_fd()),
            tcp_sender,
            ended: None,
            last_bytes: 0,
            last_retrans: tcp_sender.then_some(0),
            final_info: None,
        });
        Registration {
            shared: self.shared.clone(),
            index: st.conns.len() - 1,
            counter,
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        if let Some(h) = self.sampler.take() {
            self.shared.lock().stopping = true;
            self.shared.wake.notify_all();
            let _ = h.join();
        }
    }
}

impl Registration {
    /// The counter the connection's loop stores its running byte count in.
    pub fn counter(&self) -> &AtomicU64 {
        &self.counter
    }

    /// Marks the connection's end at `at` (when its last byte moved); the
    /// last interval ends at the latest such mark. Its TCP_INFO is read now.
    pub fn ended_at(&self, at: Instant) {
        let mut st = self.shared.lock();
        let c = &mut st.conns[self.index];
        if c.ended.is_none() {
            c.ended = Some(at);
            if let Some(fd) = c.fd {
                // SAFETY: the connection's socket is open while it is registered.
                c.final_info = TcpInfo::read(unsafe { BorrowedFd::borrow_raw(fd) }).ok();
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.ended_at(Instant::now());
        // The socket closes after this guard: never read its descriptor again.
        self.shared.lock().conns[self.index].fd = None;
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The sampler thread: one sample at each interval's end, and a last one
/// when stopped.
fn sample_until_stopped(sh: &Shared) {
    let mut k = 1u32;
    let mut st = sh.lock();
    loop {
        if st.stopping {
            break;
        }
        let Some(started) = st.started else {
            st = sh.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let due = started + sh.every * k;
        let now = Instant::now();
        if now < due {
            st = sh
                .wake
                .wait_timeout(st, due - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        // A busy host may wake us late: skip the boundaries already passed.
        while started + sh.every * k <= now {
            k += 1;
        }
        let all_ended = !st.conns.is_empty() && st.conns.iter().all(|c| c.ended.is_some());
        if all_ended {
            // The trial's data already ended: the last interval ends with it.
            break;
        }
        let s = take_sample(&mut st, now, false);
        st.samples.push(s.clone());
        if let Some(f) = &sh.sink {
            // Printed without the lock: a slow terminal or a full pipe
            // never holds up a connection registering or ending.
            drop(st);
            f(&s);
            st = sh.lock();
        }
    }
    let end = st
        .conns
        .iter()
        .filter_map(|c| c.ended)
        .max()
        .unwrap_or_else(Instant::now)
        .max(st.last_at);
    if st.started.is_none() {
        // No connection registered (the trial failed before its data).
        return;
    }
    let s = take_sample(&mut st, end, true);
    let short = (s.end_s - s.start_s) < sh.every.as_secs_f64() * TAIL_FOLD_SHARE;
    match st.samples.last_mut() {
        Some(prev) if short => {
            fold(prev, &s);
            // The folded interval was printed without its tail: the sink
            // sees nothing more; the stored series sums to the total.
        }
        _ => {
            st.samples.push(s.clone());
            drop(st);
            if let Some(f) = &sh.sink {
                f(&s);
            }
        }
    }
}

/// The interval from the previous sample to `at`, per connection.
fn take_sample(st: &mut State, at: Instant, last: bool) -> IntervalSample {
    let started = st.started.unwrap_or(st.last_at);
    let start_s = st.last_at.duration_since(started).as_secs_f64();
    let end_s = at.duration_since(started).as_secs_f64();
    st.last_at = at;
    let mut streams = Vec::with_capacity(st.conns.len());
    for c in &mut st.conns {
        let bytes = c.counter.load(Ordering::Relaxed);
        let info = match (last, c.fd) {
            (true, _) | (false, None) => c.final_info.clone(),
            // SAFETY: a registered descriptor is open (the guard is
            // dropped, under this lock, before the socket closes).
            (false, Some(fd)) => TcpInfo::read(unsafe { BorrowedFd::borrow_raw(fd) }).ok(),
        };
        let (retransmits, cwnd_bytes) = match (&info, c.tcp_sender) {
            (Some(i), true) => {
                let before = c.last_retrans.unwrap_or(0);
                c.last_retrans = Some(i.total_retrans);
                (
                    Some(u64::from(i.total_retrans.saturating_sub(before))),
                    Some(u64::from(i.snd_cwnd) * u64::from(i.snd_mss)),
                )
            }
            (None, true) => (Some(0), None),
            _ => (None, None),
        };
        streams.push(StreamInterval {
            stream: c.stream,
            bytes: bytes.saturating_sub(c.last_bytes),
            retransmits,
            cwnd_bytes,
        });
        c.last_bytes = bytes;
    }
    streams.sort_by_key(|s| s.stream);
    sample_of(start_s, end_s, streams)
}

fn sample_of(start_s: f64, end_s: f64, streams: Vec<StreamInterval>) -> IntervalSample {
    let bytes = streams.iter().map(|s| s.bytes).sum();
    let retransmits = streams
        .iter()
        .any(|s| s.retransmits.is_some())
        .then(|| streams.iter().filter_map(|s| s.retransmits).sum());
    let d = end_s - start_s;
    IntervalSample {
        start_s,
        end_s,
        bytes,
        throughput_bps: if d > 0.0 { bytes as f64 * 8.0 / d } else { 0.0 },
        retransmits,
        streams,
    }
}

/// Adds a short last interval to the one before it.
fn fold(prev: &mut IntervalSample, tail: &IntervalSample) {
    let mut streams = prev.streams.clone();
    for t in &tail.streams {
        match streams.iter_mut().find(|s| s.stream == t.stream) {
            Some(s) => {
                s.bytes += t.bytes;
                s.retransmits = match (s.retransmits, t.retransmits) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                s.cwnd_bytes = t.cwnd_bytes.or(s.cwnd_bytes);
            }
            None => streams.push(t.clone()),
        }
    }
    *prev = sample_of(prev.start_s, tail.end_s, streams);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ms: u64) -> IntervalSpec {
        IntervalSpec {
            every: Duration::from_millis(ms),
            sink: None,
        }
    }

    #[test]
    fn intervals_add_up_to_the_count_and_cover_the_run() {
        // How many intervals a 105 ms run makes depends on the meter's
        // wake-ups: one timed test at a time, on a quiet host.
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "a 105 ms run metered every 20 ms",
            testkit::QuietLimits::default(),
            &[],
            || {
                let m = Meter::start(&spec(20)).unwrap();
                let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                let reg = m.handle().register(1, &sock, false);
                let mut total = 0u64;
                let t0 = Instant::now();
                while t0.elapsed() < Duration::from_millis(105) {
                    total += 1000;
                    reg.counter().store(total, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                }
                reg.ended_at(Instant::now());
                drop(reg);
                (m.stop(), total)
            },
        );
        eprintln!("a 105 ms run metered every 20 ms: {}", q.describe());
        let (s, total) = q.value;
        assert_eq!(s.iter().map(|i| i.bytes).sum::<u64>(), total);
        // 105 ms at 20 ms: five whole intervals and a 5 ms tail (25% of
        // one), kept as its own; a late wake-up on a busy host may merge two.
        assert!((4..=6).contains(&s.len()), "{s:?}");
        for w in s.windows(2) {
            assert_eq!(w[0].end_s, w[1].start_s);
        }
        assert!(s.iter().all(|i| i.retransmits.is_none()));
    }

    #[test]
    fn a_short_tail_is_folded_into_the_interval_before_it() {
        let mut prev = sample_of(
            0.0,
            1.0,
            vec![StreamInterval {
                stream: 1,
                bytes: 100,
                retransmits: Some(2),
                cwnd_bytes: Some(10),
            }],
        );
        let tail = sample_of(
            1.0,
            1.01,
            vec![StreamInterval {
                stream: 1,
                bytes: 5,
                retransmits: Some(1),
                cwnd_bytes: Some(20),
            }],
        );
        fold(&mut prev, &tail);
        assert_eq!((prev.start_s, prev.end_s, prev.bytes), (0.0, 1.01, 105));
        assert_eq!(prev.retransmits, Some(3));
        assert_eq!(prev.streams[0].cwnd_bytes, Some(20));
    }
}
