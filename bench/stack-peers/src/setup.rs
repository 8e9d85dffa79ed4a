//! What every user-space end shares: the namespace, the TUN's name, both
//! addresses and the sizes both ends use, and what one end reports.

use crate::netns::LinkPackets;
use anyhow::Result;
use std::net::Ipv4Addr;
use std::time::Instant;

/// The TUN device's name inside the namespace.
pub const TUN_NAME: &str = "tperf0";
/// The MSS both ends use (MTU 1500 less 40 bytes of headers).
pub const MSS: u16 = 1460;
/// The port every transfer uses.
pub const PORT: u16 = 5001;

/// One run's setting.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The namespace's name.
    pub ns: String,
    /// Linux's address on the TUN.
    pub linux: Ipv4Addr,
    /// The user-space end's address.
    pub ours: Ipv4Addr,
    /// Send and receive buffer bytes, both ends.
    pub buffer: usize,
    /// tcplab only: answer a batch of in-order segments with one ACK.
    pub ack_per_batch: bool,
    /// tcplab only: frames a round holds back and writes back to back.
    pub tx_batch: usize,
    /// tcplab only: frames with a payload read per round at most.
    pub poll_budget: usize,
    /// tcplab only: the TUN with virtio-net-header offloads (TSO4, CSUM).
    pub offload: bool,
    /// tcplab only: block-cost accounting on the stack's thread over the
    /// timed interval, timing one round (a poll and the work after it) in
    /// this many (`None`: off).
    pub account: Option<u32>,
    /// Both user-space ends: the congestion control their sender runs.
    pub cc: Cc,
}

/// The congestion control a user-space end's sender runs, the same in
/// both stacks so that a ratio compares their code, not their algorithms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Cc {
    /// RFC 5681 (tcplab's default).
    Reno,
    /// RFC 9438.
    Cubic,
    /// None: the windows alone bound what is outstanding (smoltcp's
    /// default when built without a congestion-control feature).
    None,
}

impl Setup {
    /// Gives the TUN (opened by the user-space end) Linux's address and
    /// brings it up, MTU 1500.
    pub fn configure_tun(&self) -> Result<()> {
        let cidr = format!("{}/24", self.linux);
        let ip = |args: &[&str]| {
            let mut all = vec!["-n", self.ns.as_str()];
            all.extend_from_slice(args);
            crate::netns::run("ip", &all)
        };
        ip(&["addr", "add", &cidr, "dev", TUN_NAME])?;
        ip(&["link", "set", TUN_NAME, "mtu", "1500", "up"])?;
        Ok(())
    }

    /// The TUN's packet counters now (zeros if `ip` cannot say).
    pub fn tun_packets(&self) -> LinkPackets {
        crate::netns::link_packets(&self.ns, TUN_NAME).unwrap_or_default()
    }
}

/// The wall and CPU time of one end's measured interval.
#[derive(Debug, Clone)]
pub struct Timed {
    /// Wall seconds.
    pub seconds: f64,
    /// CPU seconds of the end's thread.
    pub cpu_seconds: f64,
    /// Packets on the TUN over the interval, as Linux counts them (rx:
    /// from the user-space end).
    pub packets: LinkPackets,
    /// tcplab with `--account`: the accountant's summary of the interval.
    pub account: Option<serde_json::Value>,
    /// The thread's user seconds, system seconds, voluntary and
    /// involuntary context switches over the interval.
    pub usage: [f64; 4],
    /// The thread's read and write system calls over the interval (each
    /// read of a frame or of nothing, `EAGAIN`; each frame written).
    pub syscalls: [u64; 2],
}

/// Starts a measured interval.
pub struct Stopwatch<'a> {
    setup: &'a Setup,
    packets: LinkPackets,
    wall: Instant,
    usage: [f64; 4],
    syscalls: [u64; 2],
}

impl Stopwatch<'_> {
    /// Now (the TUN's counters read first, outside the interval).
    pub fn start(setup: &Setup) -> Stopwatch<'_> {
        let packets = setup.tun_packets();
        Stopwatch {
            setup,
            packets,
            wall: Instant::now(),
            usage: crate::netns::thread_usage(),
            syscalls: crate::netns::thread_syscalls(),
        }
    }

    /// The interval since `start` (the counters read last, outside it).
    pub fn stop(&self) -> Timed {
        let seconds = self.wall.elapsed().as_secs_f64();
        let now = crate::netns::thread_usage();
        let usage: [f64; 4] = std::array::from_fn(|i| now[i] - self.usage[i]);
        let calls = crate::netns::thread_syscalls();
        Timed {
            syscalls: std::array::from_fn(|i| calls[i] - self.syscalls[i]),
            usage,
            seconds,
            cpu_seconds: usage[0] + usage[1],
            packets: self.setup.tun_packets().since(self.packets),
            account: None,
        }
    }
}

/// How long any one transfer may take.
pub const LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

impl Cc {
    /// The name on the command line and in the JSON line.
    pub fn name(self) -> &'static str {
        match self {
            Cc::Reno => "reno",
            Cc::Cubic => "cubic",
            Cc::None => "none",
        }
    }
}
