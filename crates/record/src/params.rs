//! Trial parameters: one point of a sweep, every factor by its CLI flag name.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which test an endpoint pair runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum TestKind {
    /// Bulk transfer over TCP.
    TcpStream,
    /// Datagram stream with sequence numbers and send timestamps.
    UdpStream,
    /// Request/response over one TCP connection.
    TcpRr,
    /// Connect, request, response, close, repeated.
    TcpCrr,
    /// One 10 KB page and 12 objects (40 KB) on one connection, like lmbench lat_http.
    Http,
    /// Packets and bytes per second a host sustains at one protocol layer
    /// (`--layer`), by frame size (Guerrero & Frieder Figs 1–4).
    LayerRate,
}

impl TestKind {
    /// All tests, in CLI order.
    pub const ALL: [TestKind; 6] = [
        TestKind::TcpStream,
        TestKind::UdpStream,
        TestKind::TcpRr,
        TestKind::TcpCrr,
        TestKind::Http,
        TestKind::LayerRate,
    ];

    /// The CLI name, e.g. `tcp-stream`.
    pub fn name(self) -> &'static str {
        match self {
            TestKind::TcpStream => "tcp-stream",
            TestKind::UdpStream => "udp-stream",
            TestKind::TcpRr => "tcp-rr",
            TestKind::TcpCrr => "tcp-crr",
            TestKind::Http => "http",
            TestKind::LayerRate => "layer-rate",
        }
    }

    /// Parses a CLI name.
    pub fn from_name(s: &str) -> Option<TestKind> {
        TestKind::ALL.into_iter().find(|t| t.name() == s)
    }

    /// True for the transaction tests (rr, crr, http), which report latency percentiles.
    pub fn is_transactional(self) -> bool {
        matches!(self, TestKind::TcpRr | TestKind::TcpCrr | TestKind::Http)
    }

    /// The metric a precision target (`--precision`) applies to.
    pub fn primary_metric(self) -> &'static str {
        if self.is_transactional() {
            "transactions_per_s"
        } else {
            "throughput_bps"
        }
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The protocol layer a `layer-rate` trial sends at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// Raw Ethernet frames (AF_PACKET), EtherType 0x88B5.
    Eth,
    /// Raw IPv4 datagrams, protocol 253 (RFC 3692 experimentation).
    Ip,
    /// UDP datagrams.
    Udp,
    /// TCP segments, one write per segment (NODELAY).
    Tcp,
}

impl Layer {
    /// Every layer, bottom up.
    pub const ALL: [Layer; 4] = [Layer::Eth, Layer::Ip, Layer::Udp, Layer::Tcp];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Eth => "eth",
            Layer::Ip => "ip",
            Layer::Udp => "udp",
            Layer::Tcp => "tcp",
        }
    }

    /// Header bytes in a frame below and including this layer: Ethernet 14,
    /// IPv4 20, UDP 8, TCP 20 + 12 of timestamps (Linux's default).
    pub fn header_bytes(self) -> u64 {
        match self {
            Layer::Eth => 14,
            Layer::Ip => 14 + 20,
            Layer::Udp => 14 + 20 + 8,
            Layer::Tcp => 14 + 20 + 32,
        }
    }

    /// Payload bytes a frame of `frame` bytes carries at this layer, at
    /// least `min` (the frame grows when its headers leave less).
    pub fn payload(self, frame: u64, min: u64) -> u64 {
        frame.saturating_sub(self.header_bytes()).max(min)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the sending application hands data to the kernel (Abrams & Chen §2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// write(2).
    Write,
    /// sendmsg(2) with one iovec.
    Sendmsg,
    /// sendfile(2) from a memfd holding the pattern.
    Sendfile,
    /// send(2) with MSG_ZEROCOPY after SO_ZEROCOPY.
    Zerocopy,
}

impl Api {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            Api::Write => "write",
            Api::Sendmsg => "sendmsg",
            Api::Sendfile => "sendfile",
            Api::Zerocopy => "zerocopy",
        }
    }

    /// Parses a CLI name.
    pub fn from_name(s: &str) -> Option<Api> {
        [Api::Write, Api::Sendmsg, Api::Sendfile, Api::Zerocopy]
            .into_iter()
            .find(|a| a.name() == s)
    }
}

/// Which side of a trial a load or emulation applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum LoadSide {
    /// The side that sends the bulk data (or the client for transaction tests).
    Sender,
    /// The side that receives the bulk data (or the server for transaction tests).
    Receiver,
}

/// N CPU-bound matrix-multiply workers beside one side (Abrams & Chen §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct LoadSpec {
    /// The side the workers run beside.
    pub side: LoadSide,
    /// Number of workers.
    pub workers: u32,
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = match self.side {
            LoadSide::Sender => "sender",
            LoadSide::Receiver => "receiver",
        };
        write!(f, "{side}:{}", self.workers)
    }
}

/// One point of a sweep: every factor, named as its CLI flag (with `_` for `-`).
///
/// Exactly one of `bytes` and `duration_s` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialParams {
    /// The test.
    pub test: TestKind,
    /// Amount as bytes: the file size for streams, request bytes for transaction tests.
    pub bytes: Option<u64>,
    /// Amount as a duration in seconds.
    pub duration_s: Option<f64>,
    /// Bytes per application write (datagram size for UDP, message size for rr/crr).
    pub write_size: u64,
    /// Bytes per application read.
    pub read_size: u64,
    /// SO_SNDBUF, if set.
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF, if set.
    pub rcvbuf: Option<u64>,
    /// SO_RCVLOWAT of a stream receiver; `None` is `auto` (see
    /// [`TrialParams::effective_rcvlowat`]), `Some(1)` the kernel's default.
    #[serde(default)]
    pub rcvlowat: Option<u64>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// MSG_MORE on every write.
    pub cork: bool,
    /// TCP_QUICKACK re-armed by the stream receiver after every read: an
    /// ACK for every segment instead of delayed ACKs (Huang & Chen's ACK
    /// cost). `false` in runs stored before it existed.
    #[serde(default)]
    pub quickack: bool,
    /// TCP_MAXSEG, if set.
    pub mss: Option<u32>,
    /// TCP_CONGESTION, if set.
    pub cc: Option<String>,
    /// Parallel connections (or UDP flows).
    pub parallel: u32,
    /// The server sends instead of the client.
    pub reverse: bool,
    /// Use IPv6.
    pub ipv6: bool,
    /// Send API.
    pub api: Api,
    /// Application pacing of the sender in bits per second (the slower sender λ).
    pub send_rate_bps: Option<u64>,
    /// CPU burnt by the receiver per KB read, in nanoseconds (the slower receiver μ).
    pub recv_work_ns_per_kb: Option<u64>,
    /// CPU-bound load workers beside one side.
    pub load: Option<LoadSpec>,
    /// Where the trial runs: `loopback` (None), `veth`, `router`, or a link
    /// profile such as `ether10`.
    #[serde(default)]
    pub topology: Option<String>,
    /// The link as given to `--link`, e.g. `rate=10mbit,delay=2ms`.
    #[serde(default)]
    pub link: Option<String>,
    /// A CPU quota on one side (`--host-speed`).
    #[serde(default)]
    pub host_speed: Option<HostSpeed>,
    /// CPUs the endpoints are pinned to (`--pin`).
    #[serde(default)]
    pub pin: Option<Pin>,
    /// Extra /32 routes installed in the sender's namespace for the trial
    /// (`--routes`; Huang & Chen's routing-table cost). `None`: none.
    #[serde(default)]
    pub routes: Option<u32>,
    /// Checksum offload on the veth ends (`--checksum-offload`); `false`
    /// turns transmit checksumming off at the sender and receive
    /// checksumming off at the receiver for the trial.
    #[serde(default = "checksum_offload_default")]
    pub checksum_offload: bool,
    /// The layer of a `layer-rate` trial (`--layer`); `None` for others.
    #[serde(default)]
    pub layer: Option<Layer>,
}

/// Checksum offload stays as the device has it unless asked.
fn checksum_offload_default() -> bool {
    true
}

/// Which endpoint a host setting applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum HostSide {
    /// The sending endpoint.
    Sender,
    /// The receiving endpoint.
    Receiver,
    /// Both endpoints, each with its own quota.
    Both,
}

impl HostSide {
    /// True if the setting applies to `side`.
    pub fn covers(self, side: LoadSide) -> bool {
        matches!(
            (self, side),
            (HostSide::Both, _)
                | (HostSide::Sender, LoadSide::Sender)
                | (HostSide::Receiver, LoadSide::Receiver)
        )
    }

    /// The name in flags.
    pub fn name(self) -> &'static str {
        match self {
            HostSide::Sender => "sender",
            HostSide::Receiver => "receiver",
            HostSide::Both => "both",
        }
    }
}

/// A slower host: the endpoint gets `fraction` of one CPU (cgroup quota).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostSpeed {
    /// Which endpoint.
    pub side: HostSide,
    /// Fraction of one CPU, e.g. 0.25.
    pub fraction: f64,
}

impl fmt::Display for HostSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.side.name(), self.fraction)
    }
}

/// CPU pinning of the endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// CPU of the sending endpoint.
    pub sender: Option<u32>,
    /// CPU of the receiving endpoint.
    pub receiver: Option<u32>,
}

impl Pin {
    /// The CPU for `side`, if pinned.
    pub fn cpu(&self, side: LoadSide) -> Option<u32> {
        match side {
            LoadSide::Sender => self.sender,
            LoadSide::Receiver => self.receiver,
        }
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [("sender", self.sender), ("receiver", self.receiver)]
            .iter()
            .filter_map(|(k, v)| v.map(|c| format!("{k}={c}")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// The smallest SO_RCVLOWAT a stream receiver uses when `--rcvlowat` is `auto`.
///
/// A bulk receiver that the kernel wakes for every arriving segment reads
/// small pieces, acknowledges each one and so makes the sender's Nagle
/// release small segments: more wake-ups, ACKs and segments per byte on both
/// sides. Waking at 32 KiB (or on FIN, or when the window nearly closes,
/// which the kernel checks itself) halves the receiver's CPU per byte on
/// loopback at 1460-byte writes.
pub const AUTO_RCVLOWAT_MIN: u64 = 32 * 1024;

/// The largest SO_RCVLOWAT `auto` picks.
///
/// With large writes the wake-up itself is the cost: on loopback the
/// sender's CPU runs the receiver's TCP input and wakes the reader, and a
/// reader woken for every 64 KiB GSO segment costs the sender a wake-up per
/// segment. Waking once per 256 KiB raised 128 KiB-write loopback
/// throughput ~1.5x on the development VM; going higher gained nothing.
pub const AUTO_RCVLOWAT_MAX: u64 = 256 * 1024;

/// The default `--read-size`: room for two wake-ups' worth at the largest
/// auto SO_RCVLOWAT, so one read drains what one wake-up announced.
pub const DEFAULT_READ_SIZE: u64 = 512 * 1024;

impl TrialParams {
    /// The SO_RCVLOWAT a stream receiver sets after its first read: the
    /// explicit level, or for `auto` two writes' worth clamped to
    /// [`AUTO_RCVLOWAT_MIN`]..=[`AUTO_RCVLOWAT_MAX`], then capped at the
    /// read size and at a quarter of an explicit `--rcvbuf` (at least 1).
    ///
    /// Two writes' worth, because at small writes a large low-water mark
    /// starves the sender of the ACKs its Nagle waits on (1460-byte writes
    /// ran ~10% slower at 256 KiB than at 32 KiB), while at large writes the
    /// per-wake-up cost dominates.
    pub fn effective_rcvlowat(&self) -> u64 {
        match self.rcvlowat {
            Some(n) => n,
            None => {
                let mut v = self
                    .write_size
                    .saturating_mul(2)
                    .clamp(AUTO_RCVLOWAT_MIN, AUTO_RCVLOWAT_MAX)
                    .min(self.read_size);
                if let Some(rb) = self.rcvbuf {
                    v = v.min(rb / 4);
                }
                v.max(1)
            }
        }
    }

    /// Defaults for a test: 1 s, 128 KiB writes (1 byte for rr/crr), 512 KiB reads.
    pub fn defaults(test: TestKind) -> TrialParams {
        let write_size = match test {
            TestKind::TcpRr | TestKind::TcpCrr => 1,
            TestKind::UdpStream => 1472,
            TestKind::LayerRate => 1514,
            _ => 128 * 1024,
        };
        TrialParams {
            test,
            bytes: None,
            duration_s: Some(1.0),
            write_size,
            read_size: DEFAULT_READ_SIZE,
            sndbuf: None,
            rcvbuf: None,
            rcvlowat: None,
            nodelay: false,
            cork: false,
            quickack: false,
            mss: None,
            cc: None,
            parallel: 1,
            reverse: false,
            ipv6: false,
            api: Api::Write,
            send_rate_bps: None,
            recv_work_ns_per_kb: None,
            load: None,
            topology: None,
            link: None,
            host_speed: None,
            pin: None,
            routes: None,
            checksum_offload: true,
            layer: (test == TestKind::LayerRate).then_some(Layer::Tcp),
        }
    }
}
