//! The types a factor's levels take (send API, protocol layer, load,
//! host speed, pinning, place) and the test a point runs.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
pub enum ProtocolLayer {
    /// Raw Ethernet frames (AF_PACKET), EtherType 0x88B5.
    Eth,
    /// Raw IPv4 datagrams, protocol 253 (RFC 3692 experimentation).
    Ip,
    /// UDP datagrams.
    Udp,
    /// TCP segments, one write per segment (NODELAY).
    Tcp,
}

impl ProtocolLayer {
    /// Every layer, bottom up.
    pub const ALL: [ProtocolLayer; 4] = [
        ProtocolLayer::Eth,
        ProtocolLayer::Ip,
        ProtocolLayer::Udp,
        ProtocolLayer::Tcp,
    ];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolLayer::Eth => "eth",
            ProtocolLayer::Ip => "ip",
            ProtocolLayer::Udp => "udp",
            ProtocolLayer::Tcp => "tcp",
        }
    }

    /// Header bytes in a frame below and including this layer: Ethernet 14,
    /// IPv4 20, UDP 8, TCP 20 + 12 of timestamps (Linux's default).
    pub fn header_bytes(self) -> u64 {
        match self {
            ProtocolLayer::Eth => 14,
            ProtocolLayer::Ip => 14 + 20,
            ProtocolLayer::Udp => 14 + 20 + 8,
            ProtocolLayer::Tcp => 14 + 20 + 32,
        }
    }

    /// Payload bytes a frame of `frame` bytes carries at this layer, at
    /// least `min` (the frame grows when its headers leave less).
    pub fn payload(self, frame: u64, min: u64) -> u64 {
        frame.saturating_sub(self.header_bytes()).max(min)
    }
}

impl fmt::Display for ProtocolLayer {
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

/// Which TCP/IP implementation plays one end of a trial (`--stack`,
/// `--server-stack`): Linux's own, or tcplab's user-space stack (issue 18)
/// in a namespace of its own behind a TUN device (plain, or with
/// virtio-net-header offloads) or a TAP device.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum StackImpl {
    /// The kernel's sockets.
    #[default]
    Kernel,
    /// tcplab's own stack (`crates/stack`) over a plain TUN device: every
    /// segment a packet, every checksum computed.
    Tcplab,
    /// tcplab's stack over a TUN device with virtio-net-header offloads:
    /// super-packets of up to 64 KB each way, checksums left to the kernel.
    TcplabOffload,
    /// tcplab's stack over a TAP device: Ethernet and ARP are its own too.
    TcplabTap,
}

impl StackImpl {
    /// Every implementation, in CLI order.
    pub const ALL: [StackImpl; 4] = [
        StackImpl::Kernel,
        StackImpl::Tcplab,
        StackImpl::TcplabOffload,
        StackImpl::TcplabTap,
    ];

    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            StackImpl::Kernel => "kernel",
            StackImpl::Tcplab => "tcplab",
            StackImpl::TcplabOffload => "tcplab-offload",
            StackImpl::TcplabTap => "tcplab-tap",
        }
    }

    /// Parses a CLI name.
    pub fn from_name(s: &str) -> Option<StackImpl> {
        StackImpl::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Whether this end is tcplab's own stack (on any device).
    pub fn is_tcplab(self) -> bool {
        self != StackImpl::Kernel
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

/// Where a trial runs, as `--topology` names it: the host's own loopback, or
/// a place tcplab builds (`veth`, `router`, or a link profile such as
/// `ether10`).
///
/// Stored runs keep loopback as `null` and every other place as its name,
/// so runs stored before this type existed read back unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PlaceName {
    /// Both endpoints on the host's loopback (no `--topology`, or `loopback`).
    #[default]
    Loopback,
    /// A place built for the trial, by its `--topology` name.
    Named(String),
}

impl PlaceName {
    /// The name `--topology` takes for loopback.
    pub const LOOPBACK: &'static str = "loopback";

    /// The place a `--topology` name means; `loopback` is the host's loopback.
    pub fn from_name(name: &str) -> PlaceName {
        if name == Self::LOOPBACK {
            PlaceName::Loopback
        } else {
            PlaceName::Named(name.to_string())
        }
    }

    /// The `--topology` name, `loopback` included.
    pub fn name(&self) -> &str {
        match self {
            PlaceName::Loopback => Self::LOOPBACK,
            PlaceName::Named(n) => n,
        }
    }

    /// The name of a built place, `None` for loopback.
    pub fn built(&self) -> Option<&str> {
        match self {
            PlaceName::Loopback => None,
            PlaceName::Named(n) => Some(n),
        }
    }

    /// True for the host's loopback.
    pub fn is_loopback(&self) -> bool {
        *self == PlaceName::Loopback
    }
}

impl From<&str> for PlaceName {
    fn from(name: &str) -> PlaceName {
        PlaceName::from_name(name)
    }
}

impl fmt::Display for PlaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for PlaceName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.built().serialize(s)
    }
}

impl<'de> Deserialize<'de> for PlaceName {
    /// `null` is loopback; a name is kept as stored (a stored run never
    /// holds `"loopback"`, which plans turn into `null`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<PlaceName, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map_or(PlaceName::Loopback, PlaceName::Named))
    }
}
