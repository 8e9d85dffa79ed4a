//! What a trial may ask for: the rules every test imposes on its factors, and
//! the per-client resource bounds a server enforces.

use crate::workloads::udp;
use record::{Api, TestKind, TrialParams};

/// Resource bounds a server applies to each client.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest `--parallel`.
    pub max_parallel: u32,
    /// Longest duration-bound trial, in seconds.
    pub max_duration_s: f64,
    /// Largest byte-bound trial.
    pub max_bytes: u64,
    /// Largest write or read size.
    pub max_io_size: u64,
    /// Wall-clock cap on any trial, in seconds (the server cancels after it).
    pub max_trial_s: f64,
    /// Concurrent control connections.
    pub max_clients: usize,
    /// Concurrent control connections from one source address.
    pub max_per_address: usize,
    /// Seconds a new connection has to complete its `hello`.
    pub handshake_s: f64,
    /// Seconds a whole message has to arrive once its first byte has, a
    /// set-up trial has for its first data (connection, datagram or hello),
    /// and a trial's `client_done` once the server's side has ended.
    pub message_s: f64,
    /// Seconds a greeted client may sit idle between trials, and a trial's
    /// data may pause (so a paced write must not take longer).
    pub idle_s: f64,
    /// Slowest `--send-rate`, in bit/s.
    pub min_send_rate_bps: u64,
    /// Most `--recv-work`, in ns of CPU per KB.
    pub max_recv_work_ns_per_kb: u64,
    /// Most `--load` workers one client's trial may run on the server.
    pub max_load_workers: u32,
    /// Most `--load` workers running on the server for all clients together.
    pub max_total_load_workers: u32,
    /// Most buffer memory one client's trial may take on the server, in
    /// bytes (every buffer its test allocates: [`crate::trial_cost`]).
    pub max_client_memory: u64,
    /// Most buffer memory all running trials together may take.
    pub max_total_memory: u64,
    /// Most descriptors one client's trial may hold on the server.
    pub max_client_descriptors: u64,
    /// Most CPU one trial's server threads may use, in CPU-seconds per
    /// wall second (a key's `max_cpu` may lower it).
    pub max_trial_cpu: f64,
    /// Whether the server measures each trial's rate and CPU and ends one
    /// over what it granted (`server_budget`).
    pub enforce_grants: bool,
    /// Control frames a key's clients together may send a second, past a
    /// burst of twice as many or 400 (`control_pace`).
    pub key_frames_per_s: f64,
    /// Handshakes a key's holders together may complete a second, past a
    /// burst of 64 or twice as many (`control_pace`).
    pub key_handshakes_per_s: f64,
}

impl Default for Limits {
    /// The bounds of `tcplab server`, a server others may reach.
    fn default() -> Limits {
        Limits {
            max_parallel: 128,
            max_duration_s: 3600.0,
            max_bytes: 1 << 40,
            max_io_size: 16 << 20,
            max_trial_s: 4000.0,
            max_clients: 32,
            max_per_address: 4,
            handshake_s: 10.0,
            message_s: 30.0,
            idle_s: 600.0,
            min_send_rate_bps: 64_000,
            max_recv_work_ns_per_kb: 10_000_000,
            max_load_workers: 8,
            max_total_load_workers: default_total_load_workers(),
            max_client_memory: 256 << 20,
            max_total_memory: 1 << 30,
            // The widest trial: 128 flows with sendfile's memfd each, its
            // listener and the connections it holds waiting (81), and slack.
            max_client_descriptors: 2 * 128 + 88,
            max_trial_cpu: default_trial_cpu(),
            enforce_grants: true,
            key_frames_per_s: crate::control_pace::FRAMES_PER_SECOND,
            key_handshakes_per_s: crate::control_pace::GREETINGS_PER_SECOND,
        }
    }
}

impl Limits {
    /// The bounds of a server bench starts for itself (its only client is
    /// this process): no per-address cap, the host's whole memory and CPU
    /// may go to the trial, as they would without a server, and the client
    /// has minutes, not seconds, to attach its probes before the data.
    pub fn embedded() -> Limits {
        Limits {
            max_per_address: usize::MAX,
            message_s: 300.0,
            max_load_workers: 64,
            max_total_load_workers: u32::MAX,
            max_client_memory: u64::MAX,
            max_total_memory: u64::MAX,
            max_client_descriptors: u64::MAX,
            max_trial_cpu: f64::INFINITY,
            enforce_grants: false,
            key_frames_per_s: f64::INFINITY,
            key_handshakes_per_s: f64::INFINITY,
            ..Limits::default()
        }
    }
}

/// Checks what one trial would take from the server against the
/// per-client bounds (load workers, receive-buffer memory); the message is
/// one line naming the flags, the need and the server's limit.
pub fn admit(p: &TrialParams, l: &Limits) -> Result<(), String> {
    if let Some(load) = p.load {
        if load.workers > l.max_load_workers {
            return Err(format!(
                "server limit: --load with {} workers, over the server's {} per client",
                load.workers, l.max_load_workers
            ));
        }
    }
    let cost = crate::trial_cost::server_cost(p);
    if cost.memory > l.max_client_memory {
        return Err(format!(
            "server limit: {} needs {} of buffers on the server, over the server's {} per client (--max-client-memory)",
            crate::trial_cost::sizing_flags(p),
            binary_bytes(cost.memory),
            binary_bytes(l.max_client_memory)
        ));
    }
    if cost.descriptors > l.max_client_descriptors {
        return Err(format!(
            "server limit: {} --parallel {} needs {} descriptors on the server, over the server's {} per client",
            p.test, p.parallel, cost.descriptors, l.max_client_descriptors
        ));
    }
    Ok(())
}

/// The server's default `--load` workers for all clients together: one
/// per CPU of the host (each burns a CPU; more only share them).
pub fn default_total_load_workers() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}

/// The server's default CPU budget per trial: half the host's CPUs, at
/// least 1.5 CPU-seconds per second (a one-flow trial never reaches it).
pub fn default_trial_cpu() -> f64 {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cpus as f64 / 2.0).max(1.5)
}

/// A byte count for a sentence: `2 GiB`, `256 MiB`, `1.5 KiB`, `100 B`.
pub fn binary_bytes(b: u64) -> String {
    let t = record::numbers::size_text(b as f64);
    match t.chars().last() {
        Some(u @ ('K' | 'M' | 'G')) => format!("{} {u}iB", &t[..t.len() - 1]),
        _ => format!("{t} B"),
    }
}

/// Largest UDP payload over IPv4.
pub const MAX_UDP_PAYLOAD: u64 = 65_507;

/// Checks one point's factors against the test's rules and the limits.
/// The message names the offending flag.
pub fn validate(p: &TrialParams, l: &Limits) -> Result<(), String> {
    match (p.bytes, p.duration_s) {
        (Some(_), Some(_)) => return Err("--bytes and --duration are mutually exclusive".into()),
        (None, None) => return Err("one of --bytes or --duration is required".into()),
        (Some(0), _) => return Err("--bytes must be at least 1".into()),
        (Some(b), _) if b > l.max_bytes => {
            return Err(format!("--bytes {b} exceeds the limit of {}", l.max_bytes))
        }
        (_, Some(d)) if d.is_nan() || d <= 0.0 => {
            return Err(format!("--duration must be positive, got {d}s"))
        }
        (_, Some(d)) if d > l.max_duration_s => {
            return Err(format!(
                "--duration {d}s exceeds the limit of {}s",
                l.max_duration_s
            ))
        }
        _ => {}
    }
    if p.write_size == 0 || p.write_size > l.max_io_size {
        return Err(format!(
            "--write-size must be 1..={}, got {}",
            l.max_io_size, p.write_size
        ));
    }
    if p.read_size == 0 || p.read_size > l.max_io_size {
        return Err(format!(
            "--read-size must be 1..={}, got {}",
            l.max_io_size, p.read_size
        ));
    }
    if p.parallel == 0 || p.parallel > l.max_parallel {
        return Err(format!(
            "--parallel must be 1..={}, got {}",
            l.max_parallel, p.parallel
        ));
    }
    for (flag, v) in [("--sndbuf", p.sndbuf), ("--rcvbuf", p.rcvbuf)] {
        if v == Some(0) || v.is_some_and(|v| v > i32::MAX as u64 / 2) {
            return Err(format!("{flag} must be between 1 and {}", i32::MAX / 2));
        }
    }
    if p.rcvlowat == Some(0) || p.rcvlowat.is_some_and(|v| v > i32::MAX as u64) {
        return Err(format!("--rcvlowat must be between 1 and {}", i32::MAX));
    }
    if let Some(m) = p.mss {
        if !(88..=65_495).contains(&m) {
            return Err(format!("--mss must be 88..=65495, got {m}"));
        }
    }
    if let Some(cc) = &p.cc {
        if cc.is_empty()
            || cc.len() > 15
            || !cc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(format!("--cc {cc:?} is not a congestion control name"));
        }
    }
    if let Some(rate) = p.send_rate_bps.filter(|&r| r < l.min_send_rate_bps) {
        return Err(format!(
            "--send-rate {} is below the limit of {}",
            record::numbers::rate_text(rate as f64),
            record::numbers::rate_text(l.min_send_rate_bps as f64)
        ));
    }
    if let Some(rate) = p.send_rate_bps {
        let gap_s = p.write_size as f64 * 8.0 / rate as f64;
        if gap_s > l.idle_s {
            return Err(format!(
                "--send-rate {} with --write-size {} leaves {gap_s:.0} s between writes, over the idle limit of {} s",
                record::numbers::rate_text(rate as f64),
                record::numbers::size_text(p.write_size as f64),
                l.idle_s
            ));
        }
    }
    if let Some(ns) = p
        .recv_work_ns_per_kb
        .filter(|&ns| ns > l.max_recv_work_ns_per_kb)
    {
        return Err(format!(
            "--recv-work {} per KB exceeds the limit of {} per KB",
            record::numbers::nanos_text(ns as f64),
            record::numbers::nanos_text(l.max_recv_work_ns_per_kb as f64)
        ));
    }
    if let Some(l) = p.load {
        if l.workers > 64 {
            return Err(format!(
                "--load allows at most 64 workers, got {}",
                l.workers
            ));
        }
    }
    test_rules(p)
}

fn test_rules(p: &TrialParams) -> Result<(), String> {
    let t = p.test;
    if t != TestKind::TcpStream {
        if p.api != Api::Write {
            return Err(format!("--api {} applies only to tcp-stream", p.api.name()));
        }
        if p.cork {
            return Err("--cork applies only to tcp-stream".into());
        }
        if p.quickack {
            return Err("--quickack applies only to tcp-stream".into());
        }
        if p.rcvlowat.is_some() {
            return Err("--rcvlowat applies only to tcp-stream".into());
        }
    }
    if !p.connect && (t != TestKind::UdpStream || p.reverse) {
        return Err(
            "--connect off applies only to udp-stream's sender on the client (not with --reverse)"
                .into(),
        );
    }
    if !matches!(t, TestKind::TcpStream | TestKind::UdpStream) {
        if p.reverse {
            return Err(format!(
                "--reverse applies to tcp-stream and udp-stream, not {t}"
            ));
        }
        if p.send_rate_bps.is_some() {
            return Err(format!(
                "--send-rate applies to tcp-stream and udp-stream, not {t}"
            ));
        }
        if p.recv_work_ns_per_kb.is_some() {
            return Err(format!(
                "--recv-work applies to tcp-stream and udp-stream, not {t}"
            ));
        }
    }
    if t == TestKind::UdpStream {
        let max = if p.ipv6 {
            MAX_UDP_PAYLOAD - 20
        } else {
            MAX_UDP_PAYLOAD
        };
        if p.write_size < udp::HEADER as u64 || p.write_size > max {
            return Err(format!(
                "--write-size for udp-stream must be {}..={max} (a datagram carries a {}-byte header), got {}",
                udp::HEADER,
                udp::HEADER,
                p.write_size
            ));
        }
        if p.mss.is_some() || p.nodelay || p.cc.is_some() {
            return Err("--mss, --nodelay and --cc apply only to TCP tests".into());
        }
    }
    if t == TestKind::LayerRate {
        use crate::workloads::layer::{MAX_FRAME, MIN_FRAME};
        if !(MIN_FRAME..=MAX_FRAME).contains(&p.write_size) {
            return Err(format!(
                "--write-size for layer-rate is the frame size, {MIN_FRAME}..={MAX_FRAME} bytes, got {}",
                p.write_size
            ));
        }
        if p.ipv6 {
            return Err("layer-rate runs over IPv4 only: drop --ipv6".into());
        }
        if p.parallel != 1 {
            return Err("--parallel does not apply to layer-rate".into());
        }
        // What bench never sends: a layer-rate without a layer, or over
        // the host's loopback (bench --to and --topology loopback refuse it).
        if p.layer.is_none() || p.topology.is_loopback() {
            return Err("layer-rate needs --layer and a --topology of two namespaces (veth or another place), never loopback".into());
        }
        if p.layer != Some(record::ProtocolLayer::Tcp) && (p.mss.is_some() || p.cc.is_some()) {
            return Err("--mss and --cc apply only to --layer tcp".into());
        }
    } else if p.layer.is_some() {
        return Err("--layer applies only to layer-rate".into());
    }
    if t == TestKind::Http && p.write_size != TrialParams::defaults(t).write_size {
        return Err(
            "--write-size does not apply to http (its page and objects have fixed sizes)".into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_flag() {
        let l = Limits::default();
        let mut p = TrialParams::defaults(TestKind::UdpStream);
        p.write_size = 4;
        assert!(validate(&p, &l).unwrap_err().contains("--write-size"));
        let mut p = TrialParams::defaults(TestKind::TcpRr);
        p.api = Api::Sendfile;
        assert!(validate(&p, &l).unwrap_err().contains("--api"));
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.parallel = 1000;
        assert!(validate(&p, &l).unwrap_err().contains("--parallel"));
        assert!(validate(&TrialParams::defaults(TestKind::Http), &l).is_ok());
    }

    #[test]
    fn pacing_and_work_are_bounded() {
        let l = Limits::default();
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.send_rate_bps = Some(1);
        let e = validate(&p, &l).unwrap_err();
        assert_eq!(e, "--send-rate 1bit is below the limit of 64kbit");
        p.send_rate_bps = Some(8_000_000);
        p.recv_work_ns_per_kb = Some(2_000_000_000);
        let e = validate(&p, &l).unwrap_err();
        assert_eq!(e, "--recv-work 2s per KB exceeds the limit of 10ms per KB");
        p.recv_work_ns_per_kb = Some(2_000_000);
        assert!(validate(&p, &l).is_ok());
        p.send_rate_bps = Some(64_000);
        p.write_size = 16 << 20;
        let e = validate(&p, &l).unwrap_err();
        assert_eq!(e, "--send-rate 64kbit with --write-size 16M leaves 2097 s between writes, over the idle limit of 600 s");
    }

    #[test]
    fn memory_per_client_is_admitted_or_refused_in_one_line() {
        let l = Limits::default();
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.parallel = 128;
        p.read_size = 16 << 20;
        assert_eq!(
            admit(&p, &l).unwrap_err(),
            "server limit: tcp-stream --parallel 128 --write-size 128K --read-size 16M needs 2.0 GiB of buffers on the server, over the server's 256 MiB per client (--max-client-memory)"
        );
        let mut rr = TrialParams::defaults(TestKind::TcpRr);
        rr.parallel = 128;
        rr.write_size = 16 << 20;
        rr.read_size = 1;
        assert_eq!(
            admit(&rr, &l).unwrap_err(),
            "server limit: tcp-rr --parallel 128 --write-size 16M needs 2.0 GiB of buffers on the server, over the server's 256 MiB per client (--max-client-memory)"
        );
        assert!(admit(&p, &Limits::embedded()).is_ok());
        // 16 × 16M is the whole 256 MiB; the pattern and threads add more.
        p.parallel = 16;
        assert!(admit(&p, &l).is_err());
        p.parallel = 14;
        assert!(admit(&p, &l).is_ok());
    }
}
