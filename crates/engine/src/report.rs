//! What each side of a trial measured, and how the two sides combine into
//! the trial's metrics.

use crate::cpu::CpuTime;
use crate::tcpinfo::TcpInfo;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// What one connection (or UDP flow) measured on one side.
#[derive(Debug)]
pub struct ConnResult {
    /// Payload bytes moved (sent by a sender, received by a receiver).
    pub bytes: u64,
    /// CPU time of the thread that served this connection.
    pub cpu: CpuTime,
    /// When the connection's work began.
    pub started: Instant,
    /// When the last write or read of the connection completed.
    pub ended: Instant,
    /// When the first payload byte arrived (receivers).
    pub first_data: Option<Instant>,
    /// Bytes the first read returned (stream receivers): they arrived
    /// before `first_data`, so a rate over first-to-last leaves them out.
    pub first_read_bytes: u64,
    /// When the last payload byte arrived (receivers).
    pub last_data: Option<Instant>,
    /// Reads or datagrams whose content differed from the pattern.
    pub integrity_errors: u64,
    /// Data-path system calls that moved data (writes or reads), streams only.
    pub calls: u64,
    /// TCP_INFO at the end, if TCP.
    pub tcp_info: Option<TcpInfo>,
    /// Completed transactions (rr, crr, http).
    pub transactions: u64,
    /// Latencies of the transactions, in ns.
    pub latency: Option<Histogram<u64>>,
    /// UDP sender or receiver counters.
    pub udp: Option<UdpCounters>,
    /// MSG_ZEROCOPY completions.
    pub zerocopy: Option<ZeroCopyStats>,
    /// The error that ended this connection early, if any.
    pub error: Option<String>,
    /// The thread that did this connection's work (CPU samples are matched
    /// to the trial's sides by it).
    pub tid: u32,
}

impl ConnResult {
    /// An empty result for work starting now.
    pub fn start() -> ConnResult {
        let now = Instant::now();
        ConnResult {
            bytes: 0,
            cpu: CpuTime::default(),
            started: now,
            ended: now,
            first_data: None,
            first_read_bytes: 0,
            last_data: None,
            integrity_errors: 0,
            calls: 0,
            tcp_info: None,
            transactions: 0,
            latency: None,
            udp: None,
            zerocopy: None,
            error: None,
            // SAFETY: gettid has no preconditions.
            tid: unsafe { libc::gettid() } as u32,
        }
    }

    /// A result for a connection that failed before any work.
    pub fn failed(error: String) -> ConnResult {
        ConnResult {
            error: Some(error),
            ..ConnResult::start()
        }
    }
}

/// UDP counters of one flow (sender or receiver side).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpCounters {
    /// Datagrams sent (sender).
    pub sent: u64,
    /// Send calls that failed with a transient error such as ENOBUFS (sender).
    pub send_errors: u64,
    /// Datagrams received, duplicates included (receiver).
    pub received: u64,
    /// Distinct sequence numbers received (receiver).
    pub distinct: u64,
    /// Datagrams whose sequence number was already seen (receiver).
    pub duplicates: u64,
    /// Datagrams arriving after a higher sequence number (receiver).
    pub reordered: u64,
    /// RFC 1889 interarrival jitter at the end, in seconds (receiver).
    pub jitter_s: f64,
    /// Drops the kernel counted on this socket (/proc/net/udp "drops").
    pub socket_drops: u64,
    /// Datagrams whose sequence number lay behind the receiver's window
    /// (`seq_window::WINDOW` below the highest seen): neither distinct nor
    /// duplicate (receiver).
    #[serde(default)]
    pub out_of_window: u64,
    /// Datagrams refused before they counted: without the trial's token,
    /// from another address, or too short to carry either (receiver).
    #[serde(default)]
    pub rejected: u64,
}

/// MSG_ZEROCOPY completion counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZeroCopyStats {
    /// Zero-copy sends issued.
    pub sends: u64,
    /// Sends whose completion was reported.
    pub completed: u64,
    /// Completions where the kernel fell back to copying.
    pub copied: u64,
}

/// Latency percentiles in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Mean.
    pub mean_s: f64,
    /// Minimum.
    pub min_s: f64,
    /// Median.
    pub p50_s: f64,
    /// 90th percentile.
    pub p90_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// 99.9th percentile.
    pub p999_s: f64,
    /// Maximum.
    pub max_s: f64,
}

impl LatencySummary {
    /// Percentiles of a nanosecond histogram.
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
        let s = |v: u64| v as f64 * 1e-9;
        LatencySummary {
            count: h.len(),
            mean_s: h.mean() * 1e-9,
            min_s: s(h.min()),
            p50_s: s(h.value_at_quantile(0.50)),
            p90_s: s(h.value_at_quantile(0.90)),
            p99_s: s(h.value_at_quantile(0.99)),
            p999_s: s(h.value_at_quantile(0.999)),
            max_s: s(h.max()),
        }
    }
}

/// Kernel-wide UDP and backlog counters, as deltas over the trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelUdpDeltas {
    /// Udp RcvbufErrors (or Udp6RcvbufErrors).
    pub rcvbuf_errors: u64,
    /// Udp InErrors (or Udp6InErrors).
    pub in_errors: u64,
    /// Packets dropped at the per-CPU input backlog (/proc/net/softnet_stat).
    pub backlog_drops: u64,
}

/// What one connection (or UDP flow) of a side moved, for the per-stream
/// rows of `--parallel`, in the side's connection order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamTotal {
    /// Payload bytes moved.
    pub bytes: u64,
    /// Segments retransmitted over the connection's life (TCP, from its
    /// TCP_INFO at the end).
    pub retransmits: Option<u32>,
}

/// Everything one side measured, sent from server to client in `Report`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SideReport {
    /// Payload bytes moved by this side.
    pub bytes: u64,
    /// Summed user CPU of the transfer threads (s).
    pub cpu_user_s: f64,
    /// Summed system CPU of the transfer threads (s).
    pub cpu_sys_s: f64,
    /// First data byte to last data byte, on this side's clock (receivers).
    pub delay_s: Option<f64>,
    /// Bytes of the first read of the connection that received first
    /// (stream receivers): they arrived before the delay's start.
    #[serde(default)]
    pub first_read_bytes: u64,
    /// Start of work to end of the last write or read (s).
    pub wall_s: f64,
    /// Reads or datagrams that failed the pattern check.
    pub integrity_errors: u64,
    /// Completed transactions.
    pub transactions: u64,
    /// Data-path system calls that moved data (stream writes or reads).
    #[serde(default)]
    pub calls: u64,
    /// TCP_INFO per connection.
    pub tcp_info: Vec<TcpInfo>,
    /// UDP counters summed over flows.
    pub udp: Option<UdpCounters>,
    /// Kernel UDP counter deltas (receiver).
    pub kernel_udp: Option<KernelUdpDeltas>,
    /// Latency percentiles (transaction clients).
    pub latency: Option<LatencySummary>,
    /// Zero-copy completions.
    pub zerocopy: Option<ZeroCopyStats>,
    /// CPU seconds the load workers beside this side got (`--load`).
    pub load_cpu_s: Option<f64>,
    /// Errors of individual connections.
    pub errors: Vec<String>,
    /// Threads that did this side's work.
    #[serde(default)]
    pub tids: Vec<u32>,
    /// Each connection's totals, in the side's connection order.
    #[serde(default)]
    pub streams: Vec<StreamTotal>,
}

impl SideReport {
    /// Aggregates per-connection results of one side.
    pub fn from_conns(conns: Vec<ConnResult>) -> SideReport {
        let mut r = SideReport::default();
        let mut cpu = CpuTime::default();
        let mut started: Option<Instant> = None;
        let mut ended: Option<Instant> = None;
        let mut first: Option<Instant> = None;
        let mut last: Option<Instant> = None;
        let mut hist: Option<Histogram<u64>> = None;
        for c in conns {
            r.streams.push(StreamTotal {
                bytes: c.bytes,
                retransmits: c.tcp_info.as_ref().map(|i| i.total_retrans),
            });
            r.bytes += c.bytes;
            cpu = cpu.plus(c.cpu);
            started = Some(started.map_or(c.started, |s| s.min(c.started)));
            ended = Some(ended.map_or(c.ended, |e| e.max(c.ended)));
            if c.first_data.is_some() && (first.is_none() || c.first_data < first) {
                r.first_read_bytes = c.first_read_bytes;
            }
            first = min_opt(first, c.first_data);
            last = max_opt(last, c.last_data);
            r.integrity_errors += c.integrity_errors;
            r.transactions += c.transactions;
            r.calls += c.calls;
            r.tcp_info.extend(c.tcp_info);
            if let Some(u) = c.udp {
                let acc = r.udp.get_or_insert_with(UdpCounters::default);
                acc.sent += u.sent;
                acc.send_errors += u.send_errors;
                acc.received += u.received;
                acc.distinct += u.distinct;
                acc.duplicates += u.duplicates;
                acc.reordered += u.reordered;
                acc.socket_drops += u.socket_drops;
                acc.out_of_window += u.out_of_window;
                acc.rejected += u.rejected;
                acc.jitter_s = acc.jitter_s.max(u.jitter_s);
            }
            if let Some(z) = c.zerocopy {
                let acc = r.zerocopy.get_or_insert_with(ZeroCopyStats::default);
                acc.sends += z.sends;
                acc.completed += z.completed;
                acc.copied += z.copied;
            }
            if let Some(h) = c.latency {
                match &mut hist {
                    Some(acc) => {
                        let _ = acc.add(&h);
                    }
                    None => hist = Some(h),
                }
            }
            r.errors.extend(c.error);
            if !r.tids.contains(&c.tid) {
                r.tids.push(c.tid);
            }
        }
        r.cpu_user_s = cpu.user_s;
        r.cpu_sys_s = cpu.sys_s;
        if let (Some(s), Some(e)) = (started, ended) {
            r.wall_s = e.duration_since(s).as_secs_f64();
        }
        if let (Some(f), Some(l)) = (first, last) {
            r.delay_s = Some(l.duration_since(f).as_secs_f64());
        }
        r.latency = hist
            .filter(|h| !h.is_empty())
            .map(|h| LatencySummary::of(&h));
        r
    }

    /// User plus system CPU seconds.
    pub fn cpu_s(&self) -> f64 {
        self.cpu_user_s + self.cpu_sys_s
    }
}

fn min_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn max_opt(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}
