//! The server holds each running trial to what it granted: it measures
//! the bytes the trial's sockets move (TCP_INFO's bytes received and
//! acked on every TCP data socket, the datagram flows' byte counters) and
//! the CPU its threads use (`/proc/self/task/TID/schedstat` of every thread
//! that registered a data socket), once per control tick, and ends a trial
//! over its rate or CPU budget with one line saying so.
//!
//! The rate check has two parts, both with a slack of one write per flow
//! plus 64 KiB (a paced sender writes a whole write, then sleeps):
//! - since the trial's start, at most [`TOTAL_MARGIN`] × the grant: an
//!   honest pacer is never ahead of its schedule by more than one write,
//!   and the margin covers a clock that ticks between a write and its
//!   count; it bounds the average a client can take by idling first;
//! - over the last [`WINDOW`], at most [`WINDOW_MARGIN`] × the grant: a
//!   pacer that fell behind (a busy host) catches up in a burst, which
//!   2 s at twice the rate covers; a sender that never paced is caught
//!   within the first window.
//!
//! The CPU check: the trial's threads' CPU over the last [`WINDOW`] divided
//! by the window, at most the budget (CPU-seconds per wall second). A
//! one-flow trial's threads cannot use more than one CPU-second per second,
//! so the default budget (half the host's CPUs, at least 1.5) never ends
//! one. An owner's running trials are also held together, to its key's
//! `max_cpu` or (with several keys) to `--max-trial-cpu` and their `--load`
//! workers: each look reports the trial's use, and the busiest of an owner
//! over its budget is ended ([`crate::owner_cpu`]).
//!
//! After each trial the server gives freed memory back to the kernel
//! ([`return_memory`]); at start it fixes malloc's mmap threshold so large
//! buffers are mapped and unmapped rather than kept in its heap.

use crate::cancel::Canceller;
use crate::key_policy::KeyPolicy;
use crate::key_usage::{Owner, TrialGrant, Usage};
use crate::limits::Limits;
use crate::overuse::Overuse;
use crate::owner_cpu::Meter;
use crate::tcpinfo::TcpInfo;
use record::TrialParams;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The window of the rate and CPU checks.
pub const WINDOW: Duration = Duration::from_secs(2);
/// How far over its grant a trial may go over the window.
pub const WINDOW_MARGIN: f64 = 2.0;
/// How far over its grant a trial may go since its start.
pub const TOTAL_MARGIN: f64 = 1.25;
/// CPU-seconds a trial may use beyond its budget since it started (its
/// threads' start-up, a first burst).
pub const CPU_SLACK_S: f64 = 0.1;

/// The most a trial under a rate grant may have in flight at once (two
/// writes per flow), in seconds of its grant: past it, the trial is
/// refused before it runs rather than ended for a burst its writes make.
pub const BURST_GRANT_S: f64 = 2.0;
/// Bytes in flight a trial may always have, whatever its grant.
pub const MIN_BURST: u64 = 1 << 20;

/// Two writes per flow: the bytes a trial may have sent before its
/// pacing holds it (the watch's slack).
fn burst_bytes(parallel: u32, write_size: u64) -> u64 {
    u64::from(parallel.max(1)).saturating_mul(write_size.saturating_mul(2))
}

/// Takes trial `p`'s share of the server for the client at `peer` holding
/// `key` (its key's, or its address's): the grant (held until dropped),
/// the trial as the server runs it (an unpaced reverse stream paced at its
/// grant), and the watch that holds it to the grant under `l`.
pub(crate) fn grant(
    usage: &Arc<Usage>,
    key: Option<&KeyPolicy>,
    peer: Option<SocketAddr>,
    p: &TrialParams,
    l: &Limits,
) -> Result<(TrialGrant, TrialParams, TrialWatch), String> {
    let owner = match (key, peer) {
        (Some(k), _) => Owner::Key(k.name.clone()),
        (None, Some(a)) => Owner::Address(a.ip()),
        (None, None) => Owner::Key(String::new()),
    };
    let workers = p
        .load
        .filter(|w| w.side == crate::workloads::side_of(p, false))
        .map_or(0, |w| w.workers);
    // Workers that would take a key's whole max_cpu leave the trial's own
    // threads nothing: refused before anything is held.
    if let Some((k, c)) = key.and_then(|k| Some((k, k.max_cpu?))) {
        if l.enforce_grants && workers > 0 && f64::from(workers) >= c {
            return Err(format!(
                "key {:?}: --load with {workers} workers on the server would use {workers} CPU-seconds per second, over the trial's budget of {c} (max_cpu)",
                k.name
            ));
        }
    }
    // A key's trials together are held to its max_cpu or, with several
    // keys, to --max-trial-cpu and their --load workers: a trial that
    // would find less than a quarter of that left is refused now.
    let key_cpu = key.and_then(|k| k.max_cpu);
    let together = match key {
        _ if !l.enforce_grants => None,
        Some(_) if key_cpu.is_some() => key_cpu.map(|c| (c, 0.0)),
        Some(_) if usage.several_keys() => Some((l.max_trial_cpu, f64::from(workers))),
        _ => None,
    };
    let field = if key_cpu.is_some() {
        "max_cpu"
    } else {
        "--max-trial-cpu for each key's trials together"
    };
    if let (Some((base, extra)), Some(k)) = (together, key) {
        let (used, extras) = usage.cpu_used(&owner);
        if (base + extras + extra - used) * 4.0 < base {
            return Err(format!(
                "key {:?}: its running trials use {used:.2} CPU-seconds per second of its {:.2} ({field}), leaving less than a quarter for another",
                k.name,
                base + extras
            ));
        }
    }
    let meter = together.map(|(base, extra)| (usage.cpu_meter(owner.clone(), base, extra), field));
    let grant = usage.trial(owner, key, p, workers)?;
    let paced = grant.paced(p);
    if let Some(g) = grant.rate_bps.filter(|_| l.enforce_grants) {
        let burst = burst_bytes(paced.parallel, paced.write_size);
        let allowed = (BURST_GRANT_S * g as f64 / 8.0).max(MIN_BURST as f64);
        if burst as f64 > allowed {
            let who = key.map_or_else(String::new, |k| format!("key {:?}: ", k.name));
            return Err(format!(
                "{who}{} flows of {} B writes may have {} B in flight at once, more than {BURST_GRANT_S} s of the {} granted: use a smaller --write-size or fewer --parallel",
                paced.parallel.max(1),
                paced.write_size,
                burst,
                record::numbers::rate_text(g as f64)
            ));
        }
    }
    // `--load` workers on the server each burn a CPU. Under a key's
    // `max_cpu` they count in it (more workers than it could never
    // finish: refused); otherwise the server's --max-trial-cpu is for the
    // trial's own threads, and the workers (bounded by --max-load-workers)
    // are added to it.
    let cpu = if !l.enforce_grants {
        f64::INFINITY
    } else if key_cpu.is_some() {
        l.max_trial_cpu
    } else {
        l.max_trial_cpu + f64::from(workers)
    };
    let mut watch = TrialWatch::new(
        key.map(|k| k.name.as_str()),
        grant.rate_bps.filter(|_| l.enforce_grants),
        cpu,
        paced.parallel,
        paced.write_size,
    );
    watch.together = meter;
    Ok((grant, paced, watch))
}

/// A running trial's watch and canceller, looked at once per control tick.
pub(crate) struct Budget<'w> {
    watch: &'w mut TrialWatch,
    cancel: &'w Canceller,
}

impl<'w> Budget<'w> {
    /// Looks at the trial of `cancel` with `watch`.
    pub(crate) fn new(watch: &'w mut TrialWatch, cancel: &'w Canceller) -> Budget<'w> {
        Budget { watch, cancel }
    }

    /// Why the trial must end now, if it is over its budget.
    pub(crate) fn over(&mut self) -> Option<String> {
        self.watch.check(self.cancel)
    }
}

/// What a running trial was granted, and its measurements so far.
pub(crate) struct TrialWatch {
    /// The key's name, for the reason.
    key: Option<String>,
    granted_bps: Option<u64>,
    slack_bytes: u64,
    cpu_budget: f64,
    started: Instant,
    /// (time, bytes moved, CPU ns) at each tick within the window.
    samples: VecDeque<(Instant, u64, u64)>,
    tcp_last: HashMap<RawFd, u64>,
    tcp_bytes: u64,
    cpu_last: HashMap<libc::pid_t, u64>,
    cpu_ns: u64,
    /// (bytes, CPU ns, when) at the last look.
    last: (u64, u64, Instant),
    /// Its place among its owner's running trials, whose CPU is held
    /// together ([`crate::owner_cpu`]).
    together: Option<(Meter<Owner>, &'static str)>,
}

impl TrialWatch {
    /// Watches a trial granted `granted_bps` (none: no rate check) and
    /// `cpu_budget` CPU-seconds per second, with `parallel` flows of
    /// `write_size`.
    pub(crate) fn new(
        key: Option<&str>,
        granted_bps: Option<u64>,
        cpu_budget: f64,
        parallel: u32,
        write_size: u64,
    ) -> TrialWatch {
        TrialWatch {
            key: key.map(str::to_string),
            granted_bps,
            slack_bytes: burst_bytes(parallel, write_size).saturating_add(64 << 10),
            cpu_budget,
            started: Instant::now(),
            samples: VecDeque::new(),
            tcp_last: HashMap::new(),
            tcp_bytes: 0,
            cpu_last: HashMap::new(),
            cpu_ns: 0,
            last: (0, 0, Instant::now()),
            together: None,
        }
    }

    /// Whether it holds the trial to a rate (and so counts its bytes).
    pub(crate) fn holds_rate(&self) -> bool {
        self.granted_bps.is_some()
    }

    /// Measures the trial once; why it must end, if it is over a budget.
    pub(crate) fn check(&mut self, cancel: &Canceller) -> Option<String> {
        let now = Instant::now();
        let bytes = self.bytes(cancel);
        let cpu = self.cpu(cancel);
        self.last = (bytes, cpu, now);
        self.samples.push_back((now, bytes, cpu));
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= WINDOW {
            self.samples.pop_front();
        }
        let (t0, b0, c0) = *self.samples.front()?;
        let span = now.duration_since(t0);
        let who = self
            .key
            .as_ref()
            .map_or_else(String::new, |k| format!("key {k:?}: "));
        if let Some(g) = self.granted_bps {
            // `moved` bytes over `secs`, against `margin` × the grant plus
            // the writes in flight.
            let over = |moved: u64, secs: f64, margin: f64, over_what: &str| {
                let allowed = margin * g as f64 / 8.0 * secs + self.slack_bytes as f64;
                (moved as f64 > allowed).then(|| {
                    format!(
                        "{who}the trial moved {} {over_what}, over the {} the server granted (ended at {margin} × the grant)",
                        rate_short(moved as f64 * 8.0 / secs),
                        record::numbers::rate_text(g as f64)
                    )
                })
            };
            let elapsed = now.duration_since(self.started).as_secs_f64();
            let on_average = format!("on average over {elapsed:.1} s");
            if let Some(why) = over(bytes, elapsed, TOTAL_MARGIN, &on_average) {
                return Some(why);
            }
            if span >= WINDOW {
                let s = span.as_secs_f64();
                let lately = format!("over the last {s:.1} s");
                if let Some(why) = over(bytes - b0, s, WINDOW_MARGIN, &lately) {
                    return Some(why);
                }
            }
        }
        if self.cpu_budget.is_finite() {
            let field = if self.key.is_some() {
                "max_cpu or --max-trial-cpu"
            } else {
                "--max-trial-cpu"
            };
            let over = |used_ns: u64, secs: f64, margin: f64, over_what: &str| {
                let used = used_ns as f64 / 1e9 / secs;
                (used > margin * self.cpu_budget + CPU_SLACK_S / secs).then(|| {
                    format!(
                        "{who}the trial's server threads used {used:.2} CPU-seconds per second {over_what}, over its budget of {} ({field}): ended",
                        self.cpu_budget
                    )
                })
            };
            // Since it started (a trial shorter than the window is held
            // too), then over the last window.
            let elapsed = now.duration_since(self.started).as_secs_f64();
            if elapsed >= 0.3 {
                let since = format!("since it started {elapsed:.1} s ago");
                if let Some(why) = over(cpu, elapsed, TOTAL_MARGIN, &since) {
                    return Some(why);
                }
            }
            if span >= WINDOW {
                let s = span.as_secs_f64();
                if let Some(why) = over(cpu - c0, s, 1.0, &format!("over the last {s:.1} s")) {
                    return Some(why);
                }
            }
        }
        // What it uses now, among its owner's trials: over the last
        // window, or since it started less its start-up slack.
        let elapsed = now.duration_since(self.started).as_secs_f64();
        let rate = if span >= WINDOW {
            Some((cpu - c0) as f64 / 1e9 / span.as_secs_f64())
        } else {
            (elapsed >= 0.3).then(|| (cpu as f64 / 1e9 - CPU_SLACK_S).max(0.0) / elapsed)
        };
        let (meter, field) = self.together.as_ref()?;
        let over = meter.report(rate?)?;
        Some(format!(
            "{who}its {} running trials used {:.2} CPU-seconds per second together, over its {:.2} ({}): this one, the busiest at {:.2}, ended",
            over.trials,
            over.sum,
            over.budget,
            field,
            over.own
        ))
    }

    /// What the trial took beyond its grant × its time (and its first
    /// write per flow) and its CPU budget × its time, as of the last look, with the allowances an owner may owe
    /// ([`crate::overuse`]): its burst allowance, and twice the CPU slack.
    pub(crate) fn overuse(&self) -> Overuse {
        let (bytes, cpu_ns, at) = self.last;
        let secs = at.duration_since(self.started).as_secs_f64();
        let mut o = Overuse::default();
        if let Some(g) = self.granted_bps {
            let rate = g as f64 / 8.0;
            // A paced trial's first write per flow goes at once, whatever
            // its rate: that much (half the watch's slack) is not owed.
            let first_writes = self.slack_bytes as f64 / 2.0;
            o.bytes = (bytes as f64 - rate * secs - first_writes).max(0.0);
            o.bytes_allowed = (BURST_GRANT_S * rate).max(MIN_BURST as f64);
        }
        if self.cpu_budget.is_finite() {
            o.cpu_s = (cpu_ns as f64 / 1e9 - self.cpu_budget * secs).max(0.0);
            o.cpu_allowed = 2.0 * CPU_SLACK_S;
        }
        o
    }

    /// Bytes moved so far: TCP sockets' received and acked bytes (each
    /// socket's growth since the last look, those closed since counted to
    /// their end) and the datagram flows' counts.
    fn bytes(&mut self, cancel: &Canceller) -> u64 {
        let mut seen = HashMap::new();
        let (last, total) = (&mut self.tcp_last, &mut self.tcp_bytes);
        cancel.each_socket_and_closed(|closed, open| {
            // In the order they closed: a descriptor reused since is a new
            // socket, counted from zero.
            for (fd, v) in closed {
                let before = last.remove(&fd).unwrap_or(0);
                *total += if v >= before { v - before } else { v };
            }
            for &fd in open {
                // SAFETY: the canceller holds fd open while this runs.
                let b = unsafe { BorrowedFd::borrow_raw(fd) };
                let Ok(i) = TcpInfo::read(b) else { continue };
                let v = i.bytes_received.unwrap_or(0) + i.bytes_acked.unwrap_or(0);
                let before = last.get(&fd).copied().unwrap_or(0);
                // A smaller count is a new socket on a reused descriptor.
                *total += if v >= before { v - before } else { v };
                seen.insert(fd, v);
            }
        });
        self.tcp_last = seen;
        self.tcp_bytes + cancel.flow_bytes()
    }

    /// CPU ns the trial's threads used so far (each thread's growth since
    /// the last look; a thread that ended counts to its last socket's end).
    fn cpu(&mut self, cancel: &Canceller) -> u64 {
        for tid in cancel.threads() {
            let ns = match (thread_cpu_ns(tid), cancel.cpu_at_unregister(tid)) {
                (Some(a), Some(b)) => a.max(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => continue,
            };
            let before = self.cpu_last.insert(tid, ns).unwrap_or(0);
            self.cpu_ns += ns.saturating_sub(before);
        }
        self.cpu_ns
    }
}

/// A measured rate for a sentence, three digits at most: `15.8gbit`, `812mbit`.
fn rate_short(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "gbit")
    } else if bps >= 1e6 {
        (bps / 1e6, "mbit")
    } else {
        (bps / 1e3, "kbit")
    };
    if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}

/// CPU time of thread `tid` of this process, in ns (schedstat's first field).
fn thread_cpu_ns(tid: libc::pid_t) -> Option<u64> {
    let t = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    t.split_whitespace().next()?.parse().ok()
}

/// Gives memory freed by the trial back to the kernel.
pub(crate) fn return_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Makes every allocation of 256 KiB or more a mapping of its own, unmapped
/// when freed (glibc otherwise raises its threshold after the first large
/// free, and later large buffers stay in the heap after the trial).
pub(crate) fn fix_mmap_threshold() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes malloc's tuning.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_flow_over_its_grant_is_ended_and_one_within_is_not() {
        let cancel = Canceller::new();
        let flow = cancel.flow_counter();
        let mut w = TrialWatch::new(Some("b"), Some(8_000_000), f64::INFINITY, 1, 1000);
        assert_eq!(w.check(&cancel), None);
        // 1 MB/s granted: 10 MB at once is far over.
        flow.store(10_000_000, Ordering::Relaxed);
        let why = w.check(&cancel).unwrap();
        // Nearly all of it is owed to the key's next trials: 10 MB less
        // 1 MB/s × the moments since the start and the first write.
        let o = w.overuse();
        assert!(o.bytes > 9.9e6 && o.bytes < 1e7 - 1000.0, "{o:?}");
        assert_eq!(o.bytes_allowed, 2.0 * 1e6); // 2 s of 1 MB/s
        assert!(
            why.starts_with("key \"b\": the trial moved")
                && why.contains("8mbit the server granted"),
            "{why}"
        );
        assert_eq!(rate_short(15.78e9), "15.8gbit");
        assert_eq!(rate_short(812.4e6), "812mbit");
        let mut ok = TrialWatch::new(None, Some(8_000_000), f64::INFINITY, 1, 1000);
        flow.store(0, Ordering::Relaxed);
        assert_eq!(ok.check(&cancel), None);
    }

    /// Connections that open and close between two looks (an http page
    /// load) count to their last byte on a metered canceller, and not on
    /// an unmetered one; a live one counts its growth once.
    #[test]
    fn connections_closed_between_looks_count_on_a_metered_canceller() {
        use std::io::{Read, Write};
        let moved = |cancel: &Canceller, w: &mut TrialWatch| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut total = 0;
            for _ in 0..5 {
                let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
                let (mut s, _) = l.accept().unwrap();
                let reg = cancel.register(&s);
                c.write_all(&[7u8; 100_000]).unwrap();
                let mut buf = vec![0u8; 100_000];
                s.read_exact(&mut buf).unwrap();
                s.write_all(&[1u8; 1000]).unwrap();
                c.read_exact(&mut buf[..1000]).unwrap();
                // What the other end acked of the 1000 bytes is counted
                // once it has arrived there.
                std::thread::sleep(Duration::from_millis(5));
                drop(reg);
                total = w.bytes(cancel);
            }
            total
        };
        let mut w = TrialWatch::new(None, None, f64::INFINITY, 1, 1);
        let metered = moved(&Canceller::metered(), &mut w);
        assert_eq!(metered, 5 * 101_000);
        let mut w = TrialWatch::new(None, None, f64::INFINITY, 1, 1);
        assert_eq!(moved(&Canceller::new(), &mut w), 0);
    }

    #[test]
    fn this_threads_cpu_is_read() {
        let cancel = Canceller::new();
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let _reg = cancel.register(&s);
        let mut w = TrialWatch::new(None, None, 1.0, 1, 1);
        let a = w.cpu(&cancel);
        crate::cpu::burn(Duration::from_millis(30), || false);
        let b = w.cpu(&cancel);
        assert!(b >= a + 25_000_000, "{a} {b}");
    }
}
