//! The factor table: every factor of a trial, once. See macros.rs for what
//! an entry says and what is generated from it.

use super::cpu_speed::CpuSpeed;
use super::defaults::{checksum_offload_default, connect_default, DEFAULT_READ_SIZE};
use super::level_types::{
    Api, HostSpeed, LoadSpec, Pin, PlaceName, ProtocolLayer, StackImpl, TestKind,
};
use super::offloads::OffloadsOff;
use super::parse;
use super::stack_switches::HostModel;
use super::stack_switches::{
    Account, Checksum, DelayedAck, FlowControl, Layers, PcbLookup, RouteTable, RttEstimator, Sws,
    TimerClock,
};

factor_table! {
    /// Amount as bytes: the file size for streams, request bytes for transaction tests.
    bytes: Option<u64> {
        flag: "bytes",
        value_name: "SIZES",
        help: "Amount per trial in bytes (streams: the file size; rr/crr: request bytes; http: body bytes)",
        conflicts_with: "duration",
        label: "bytes (bytes)",
        kind: Bytes,
        level: u64,
        parse: |s, _| parse::positive_size(s),
        set: |p, v| {
            p.bytes = Some(v);
            p.duration_s = None;
        },
        default: |_| None,
    }
    /// Amount as a duration in seconds.
    duration_s: Option<f64> {
        flag: "duration",
        value_name: "DURATIONS",
        help: "Amount per trial as a duration, e.g. 1s, 500ms [default: 1s]",
        label: "duration (s)",
        kind: Seconds,
        level: f64,
        parse: |s, _| parse::duration(s).map(|d| d.as_secs_f64()),
        default: |_| Some(1.0),
    }
    /// Bytes per application write (datagram size for UDP, message size for rr/crr).
    write_size: u64 {
        flag: "write-size",
        value_name: "SIZES",
        help: "Bytes per application write (datagram size for UDP, message size for rr/crr)",
        label: "write size (bytes)",
        kind: Bytes,
        level: u64,
        parse: |s, _| parse::positive_size(s),
        default: |test| match test {
            TestKind::TcpRr | TestKind::TcpCrr => 1,
            TestKind::UdpStream => 1472,
            TestKind::LayerRate => 1514,
            _ => 128 * 1024,
        },
    }
    /// Bytes per application read.
    read_size: u64 {
        flag: "read-size",
        value_name: "SIZES",
        help: "Bytes per application read [default: 512K]",
        label: "read size (bytes)",
        kind: Bytes,
        level: u64,
        parse: |s, _| parse::positive_size(s),
        default: |_| DEFAULT_READ_SIZE,
    }
    /// SO_SNDBUF, if set.
    sndbuf: Option<u64> {
        flag: "sndbuf",
        value_name: "SIZES",
        help: "SO_SNDBUF on every data socket of both endpoints",
        label: "sndbuf (bytes)",
        kind: Bytes,
        level: u64,
        parse: |s, _| parse::positive_size(s),
        default: |_| None,
    }
    /// SO_RCVBUF, if set.
    rcvbuf: Option<u64> {
        flag: "rcvbuf",
        value_name: "SIZES",
        help: "SO_RCVBUF on every data socket of both endpoints (set before listen/connect)",
        label: "rcvbuf (bytes)",
        kind: Bytes,
        level: u64,
        parse: |s, _| parse::positive_size(s),
        default: |_| None,
    }
    /// SO_RCVLOWAT of a stream receiver; `None` is `auto` (see
    /// [`TrialParams::effective_rcvlowat`]), `Some(1)` the kernel's default.
    #[serde(default)]
    rcvlowat: Option<u64> {
        flag: "rcvlowat",
        value_name: "SIZES|auto",
        help: "SO_RCVLOWAT of the tcp-stream receiver, set after its first read: the kernel wakes it when this many bytes wait (or on FIN, or when the window nearly closes). `auto` is twice --write-size within 32K..256K, capped at --read-size and at a quarter of --rcvbuf; 1 is the kernel's default (wake per segment) [default: auto]",
        label: "rcvlowat (bytes)",
        kind: Bytes,
        level: Option<u64>,
        parse: |s, _| parse::rcvlowat(s),
        default: |_| None,
        auto: |p| p.effective_rcvlowat(),
    }
    /// TCP_NODELAY.
    nodelay: bool {
        flag: "nodelay",
        value_name: "ON,OFF",
        help: "TCP_NODELAY; alone means on, or give levels: on,off",
        alone_means_on: true,
        label: "nodelay",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| false,
    }
    /// MSG_MORE on every write.
    cork: bool {
        flag: "cork",
        value_name: "ON,OFF",
        help: "MSG_MORE on every write (TCP_CORK for sendfile); alone means on",
        alone_means_on: true,
        label: "cork",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| false,
    }
    /// TCP_QUICKACK re-armed by the stream receiver after every read: an
    /// ACK for every segment instead of delayed ACKs (Huang & Chen's ACK
    /// cost). `false` in runs stored before it existed.
    #[serde(default)]
    quickack: bool {
        flag: "quickack",
        value_name: "ON,OFF",
        help: "TCP_QUICKACK on the stream receiver, re-armed after every read, and in a place with namespaces the quickack 1 metric on the receiver's routes: an ACK per segment received instead of delayed ACKs; alone means on",
        alone_means_on: true,
        label: "quickack",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| false,
    }
    /// TCP_MAXSEG, if set.
    mss: Option<u32> {
        flag: "mss",
        value_name: "BYTES",
        help: "TCP_MAXSEG in bytes",
        label: "mss (bytes)",
        kind: Bytes,
        level: u32,
        parse: |s, _| parse::count(s, 88, 65_495),
        default: |_| None,
    }
    /// TCP_CONGESTION, if set.
    cc: Option<String> {
        flag: "cc",
        value_name: "NAMES",
        help: "Congestion control module (TCP_CONGESTION), e.g. cubic,bbr,reno",
        label: "cc",
        kind: Name,
        level: String,
        parse: |s, _| parse::cc_name(s),
        default: |_| None,
    }
    /// Parallel connections (or UDP flows).
    parallel: u32 {
        flag: "parallel",
        value_name: "COUNTS",
        help: "Parallel connections (or UDP flows)",
        label: "parallel connections",
        kind: Count,
        level: u32,
        parse: |s, _| parse::count(s, 1, 128),
        default: |_| 1,
    }
    /// The server sends instead of the client.
    reverse: bool {
        flag: "reverse",
        value_name: "ON,OFF",
        help: "The server sends and the client receives (streams only); alone means on",
        alone_means_on: true,
        label: "reverse",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| false,
    }
    /// Use IPv6.
    ipv6: bool {
        flag: "ipv6",
        value_name: "ON,OFF",
        help: "Use IPv6; alone means on",
        alone_means_on: true,
        label: "ipv6",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| false,
    }
    /// Send API.
    api: Api {
        flag: "api",
        value_name: "APIS",
        help: "Send API: write, sendmsg, sendfile or zerocopy (MSG_ZEROCOPY) — tcp-stream only",
        label: "api",
        kind: Name,
        level: Api,
        parse: |s, _| parse::api(s),
        default: |_| Api::Write,
    }
    /// Application pacing of the sender in bits per second (the slower sender λ).
    send_rate_bps: Option<u64> {
        flag: "send-rate",
        value_name: "RATES",
        help: "The sending application paces its writes to this rate (a slower sender λ), e.g. 10mbit",
        label: "send rate (bit/s)",
        kind: Rate,
        level: u64,
        parse: |s, _| parse::rate(s),
        default: |_| None,
    }
    /// CPU burnt by the receiver per KB read, in nanoseconds (the slower receiver μ).
    recv_work_ns_per_kb: Option<u64> {
        flag: "recv-work",
        value_name: "DURATION_PER_KB",
        help: "The receiver burns this much CPU per KB read (a slower receiver μ), e.g. 20us",
        label: "receiver work (ns per KB)",
        kind: NanosPerKb,
        level: u64,
        parse: |s, _| parse::duration_or_zero(s).map(|d| d.as_nanos() as u64),
        default: |_| None,
    }
    /// CPU-bound load workers beside one side.
    load: Option<LoadSpec> {
        flag: "load",
        value_name: "SIDE:N",
        help: "CPU-bound matrix-multiply workers beside one side: sender:N, receiver:N or none",
        label: "load",
        kind: Load,
        level: Option<LoadSpec>,
        parse: |s, _| parse::load(s),
        default: |_| None,
    }
    /// Where the trial runs: loopback, `veth`, `router`, or a link profile
    /// such as `ether10` (stored as `null` for loopback).
    #[serde(default)]
    topology: PlaceName {
        flag: "topology",
        value_name: "NAMES",
        help: "Where trials run: loopback, veth, router, or a link profile (ether10, lan100, lan1g, man, wan) — a list sweeps places",
        label: "topology",
        kind: Name,
        level: PlaceName,
        parse: |s, _| Ok(PlaceName::from_name(s)),
        default: |_| PlaceName::Loopback,
    }
    /// The link as given to `--link`, e.g. `rate=10mbit,delay=2ms`.
    #[serde(default)]
    link: Option<String> {
        flag: "link",
        value_name: "SPEC",
        help: "The link between the hosts, e.g. rate=10mbit,delay=2ms,jitter=200us,loss=0.1%,mtu=1500,queue=64,via=emulator (one link; it may start with a profile name to adjust it)",
        one_level: true,
        label: "link",
        kind: Name,
        level: String,
        parse: |s, _| parse::any_text(s),
        default: |_| None,
    }
    /// A CPU quota on one side (`--host-speed`).
    #[serde(default)]
    host_speed: Option<HostSpeed> {
        flag: "host-speed",
        value_name: "SIDE=F",
        help: "A slower host: the side gets this fraction of one CPU (cgroup quota), e.g. sender=0.25; a list sweeps speeds; none for full speed",
        label: "host speed",
        kind: HostSpeed,
        level: Option<HostSpeed>,
        parse: |s, _| parse::host_speed(s),
        default: |_| None,
    }
    /// CPUs the endpoints are pinned to (`--pin`).
    #[serde(default)]
    pin: Option<Pin> {
        flag: "pin",
        value_name: "SIDE=CPU,…",
        help: "Pin the endpoints to CPUs, e.g. sender=0,receiver=1",
        one_level: true,
        label: "pin",
        kind: Pin,
        level: Pin,
        parse: |s, host| parse::pin(s, host.online_cpus),
        default: |_| None,
    }
    /// Extra /32 routes installed in the sender's namespace for the trial
    /// (`--routes`; Huang & Chen's routing-table cost). `None`: none.
    #[serde(default)]
    routes: Option<u32> {
        flag: "routes",
        value_name: "N,…",
        help: "Extra /32 routes (198.18.0.0/15) in the sender's routing table for each trial, e.g. 1,1000,100000; only in a place's namespaces, or in a tcplab stack end's own table (--route-table)",
        label: "routes",
        kind: Count,
        level: u32,
        parse: |s, host| parse::count(s, 1, host.max_routes),
        default: |_| None,
    }
    /// Checksum offload on the veth ends (`--checksum-offload`); `false`
    /// turns transmit checksumming off at the sender and receive
    /// checksumming off at the receiver for the trial.
    #[serde(default = "checksum_offload_default")]
    checksum_offload: bool {
        flag: "checksum-offload",
        value_name: "ON,OFF",
        help: "Checksum offload on the veth ends: on (as the device has it) or off (the sender checksums in software, and the receiver verifies); only in a place's namespaces",
        label: "checksum offload",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| true,
    }
    /// Offloads switched off at both ends of the place for the trial
    /// (`--offload`); `None` leaves the devices as they are. Every trial in
    /// a place records each end's offload state, whatever this says.
    #[serde(default)]
    offload: Option<OffloadsOff> {
        flag: "offload",
        value_name: "default|off|tso+gso+…",
        help: "Offloads switched off at both veth ends for each trial: default (as the devices have them), off (tso, gso, gro, tx and rx checksum all off), or a +-joined list of tso, gso, gro, tx, rx, e.g. default,off,tso+gso; only in a place's namespaces. Segmentation and receive offloads hide per-packet costs; each trial records every end's offload state",
        label: "offloads off",
        kind: Name,
        level: Option<OffloadsOff>,
        parse: |s, _| parse::offloads(s),
        default: |_| None,
    }
    /// The layer of a `layer-rate` trial (`--layer`); `None` for others.
    #[serde(default)]
    layer: Option<ProtocolLayer> {
        flag: "layer",
        value_name: "eth,ip,udp,tcp",
        help: "layer-rate: the protocol layers to send at (eth = AF_PACKET frames, ip = raw IPv4, udp, tcp) [default: tcp]",
        label: "layer",
        kind: Name,
        level: ProtocolLayer,
        parse: |s, _| parse::layer(s),
        default: |test| (test == TestKind::LayerRate).then_some(ProtocolLayer::Tcp),
    }
    /// Whether udp-stream's sender connects its socket (`--connect`). A
    /// connected socket caches its route; `false` names the address in
    /// every sendto(), so the kernel looks the route up per datagram
    /// (Huang & Chen's routing-table cost). `true` in runs stored before it
    /// existed.
    #[serde(default = "connect_default")]
    connect: bool {
        flag: "connect",
        value_name: "ON,OFF",
        help: "udp-stream: the sender connects its socket (on: the route is cached in the socket) or sends each datagram with sendto() and the address (off: a route lookup per datagram), e.g. on,off [default: on]",
        label: "connected UDP sender",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| true,
    }
    /// The client end's TCP/IP implementation (`--stack`): the kernel, or
    /// tcplab's user-space stack in a namespace behind a TUN device.
    /// `kernel` in runs stored before it existed.
    #[serde(default)]
    stack: StackImpl {
        flag: "stack",
        value_name: "kernel,tcplab,…",
        help: "The client end's TCP/IP: kernel (Linux's sockets), or tcplab's own user-space stack in a namespace of its own behind a TUN device: tcplab (plain TUN, every segment a packet), tcplab-offload (TUN with virtio-net-header offloads: 64 KB super-packets, checksums left to the kernel) or tcplab-tap (TAP: its own Ethernet and ARP); the other end stays Linux unless --server-stack says otherwise — a list compares them [default: kernel]",
        label: "client stack",
        kind: Name,
        level: StackImpl,
        parse: |s, _| parse::stack(s),
        default: |_| StackImpl::Kernel,
    }
    /// The server end's TCP/IP implementation (`--server-stack`), so all
    /// four pairings can run. `kernel` in runs stored before it existed.
    #[serde(default)]
    server_stack: StackImpl {
        flag: "server-stack",
        value_name: "kernel,tcplab,…",
        help: "The server end's TCP/IP: kernel, tcplab, tcplab-offload or tcplab-tap (as --stack, for the server end) [default: kernel]",
        label: "server stack",
        kind: Name,
        level: StackImpl,
        parse: |s, _| parse::stack(s),
        default: |_| StackImpl::Kernel,
    }
    /// When a tcplab stack end acknowledges data (`--delack`); `None`
    /// keeps the stack end's default (every second segment, 40 ms timer).
    #[serde(default)]
    delack: Option<DelayedAck> {
        flag: "delack",
        value_name: "off|every2|timer:DUR|drain",
        help: "tcplab stack ends: when the receiver acknowledges data: off (an ACK per data segment), every2 (RFC 1122: every second full segment or a 40 ms timer), timer:DUR (the timer alone, e.g. timer:200ms as BSD), drain (when the application empties the receive queue) [default: every2]",
        label: "delayed ACK",
        kind: Name,
        level: DelayedAck,
        parse: |s, _| DelayedAck::parse(s),
        default: |_| None,
    }
    /// Silly-window-syndrome avoidance of tcplab stack ends (`--sws`),
    /// receiver and sender; `None` keeps both on.
    #[serde(default)]
    sws: Option<Sws> {
        flag: "sws",
        value_name: "on|off|receiver-off|sender-off",
        help: "tcplab stack ends: SWS avoidance (RFC 1122): on (receiver and sender), off (neither), receiver-off (the receiver advertises every free byte), sender-off (the sender sends whatever the window allows) [default: on]",
        label: "SWS avoidance",
        kind: Name,
        level: Sws,
        parse: |s, _| Sws::parse(s),
        default: |_| None,
    }
    /// Nagle's algorithm on tcplab stack ends (`--nagle`); `None` follows
    /// `--nodelay` (on unless it is given).
    #[serde(default)]
    nagle: Option<bool> {
        flag: "nagle",
        value_name: "ON,OFF",
        help: "tcplab stack ends: Nagle's algorithm (RFC 896); a Linux end follows --nodelay [default: on, off with --nodelay]",
        label: "Nagle",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| None,
    }
    /// The header-prediction fast path of tcplab stack ends
    /// (`--header-prediction`); `None` keeps it on.
    #[serde(default)]
    header_prediction: Option<bool> {
        flag: "header-prediction",
        value_name: "ON,OFF",
        help: "tcplab stack ends: the header-prediction fast path (Van Jacobson's) for in-order data and pure ACKs [default: on]",
        label: "header prediction",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| None,
    }
    /// How tcplab stack ends compute TCP and UDP checksums (`--checksum`);
    /// `None` keeps the device's default (rfc1071, offload on tcplab-offload).
    #[serde(default)]
    checksum: Option<Checksum> {
        flag: "checksum",
        value_name: "bytewise,rfc1071,…",
        help: "tcplab stack ends: how TCP and UDP checksums are computed: bytewise (a 16-bit word at a time), rfc1071 (64-bit words), incremental (rfc1071, but a connection's pure ACKs patched from its last by RFC 1624; data segments are summed whole), offload (left to the kernel: only on --stack tcplab-offload, which always offloads) [default: rfc1071; offload on tcplab-offload]",
        label: "checksum",
        kind: Name,
        level: Checksum,
        parse: |s, _| Checksum::parse(s),
        default: |_| None,
    }
    /// The RTT estimator of tcplab stack ends (`--rtt-estimator`); `None`
    /// keeps RFC 6298.
    #[serde(default)]
    rtt_estimator: Option<RttEstimator> {
        flag: "rtt-estimator",
        value_name: "bsd,rfc6298",
        help: "tcplab stack ends: the RTT estimator: rfc6298 (in ns) or bsd (4.3BSD-Reno's integer EWMA in 500 ms ticks) [default: rfc6298]",
        label: "RTT estimator",
        kind: Name,
        level: RttEstimator,
        parse: |s, _| RttEstimator::parse(s),
        default: |_| None,
    }
    /// The clock of tcplab stack ends' TCP timers (`--timers`, issue 29);
    /// `None` keeps them exact.
    #[serde(default)]
    timers: Option<TimerClock> {
        flag: "timers",
        value_name: "exact,bsd",
        help: "tcplab stack ends: the clock of TCP's timers: exact (each where its interval ends) or bsd (4.3BSD's 500 ms slow timeout counts the retransmit, persist, keepalive and 2MSL timers in whole ticks and RTT samples in ticks crossed, the RTO is whole ticks from 1 to 64 s backed off by tcp_backoff[], and delayed ACKs leave at the next 200 ms fast tick) [default: exact]",
        label: "timers",
        kind: Name,
        level: TimerClock,
        parse: |s, _| TimerClock::parse(s),
        default: |_| None,
    }
    /// The routing-table structure of tcplab stack ends' interfaces
    /// (`--route-table`), which `--routes N` fills; `None` keeps the trie.
    #[serde(default)]
    route_table: Option<RouteTable> {
        flag: "route-table",
        value_name: "linear,hash,trie",
        help: "tcplab stack ends: the interface's routing-table structure (linear, hash or trie), with --routes N extra /32 routes in it [default: trie]",
        label: "route table",
        kind: Name,
        level: RouteTable,
        parse: |s, _| RouteTable::parse(s),
        default: |_| None,
    }
    /// How tcplab stack ends find an incoming segment's connection
    /// (`--pcb-lookup`); `None` keeps the hash.
    #[serde(default)]
    pcb_lookup: Option<PcbLookup> {
        flag: "pcb-lookup",
        value_name: "hash,list",
        help: "tcplab stack ends: how an incoming segment finds its connection: hash (a map by 4-tuple) or list (BSD's in_pcblookup, a walk of every PCB with wildcard match for listeners, behind tcp_last_inpcb's one-entry cache) [default: hash]",
        label: "PCB lookup",
        kind: Name,
        level: PcbLookup,
        parse: |s, _| PcbLookup::parse(s),
        default: |_| None,
    }
    /// Whether tcplab stack ends' connections cache their route
    /// (`--route-cache`); `None` keeps a lookup per packet.
    #[serde(default)]
    route_cache: Option<bool> {
        flag: "route-cache",
        value_name: "ON,OFF",
        help: "tcplab stack ends: each connection caches its route (BSD's inp_route), revalidated when the routing table changes, so a TCP segment skips the route lookup [default: off, a lookup per packet]",
        label: "route cache",
        kind: Switch,
        level: bool,
        parse: |s, _| parse::boolean(s),
        default: |_| None,
    }
    /// How tcplab stack ends' layers share threads (`--layers`); `None`
    /// keeps them merged on one thread.
    #[serde(default)]
    layers: Option<Layers> {
        flag: "layers",
        value_name: "merged,threaded",
        help: "tcplab stack ends: merged (the device's system calls, IP and TCP on the end's one thread) or threaded (the device driver on a thread of its own, joined to IP and TCP by frame queues: Guerrero & Frieder's separate interface process) [default: merged]",
        label: "layers",
        kind: Name,
        level: Layers,
        parse: |s, _| Layers::parse(s),
        default: |_| None,
    }
    /// How a tcplab stack end's sender decides when data leaves
    /// (`--flow-control`); `None` keeps window flow control.
    #[serde(default)]
    flow_control: Option<FlowControl> {
        flag: "flow-control",
        value_name: "window|rate:RATE",
        help: "tcplab stack ends: flow control of what they send: window (what min(cwnd, the peer's window) allows leaves at once) or rate:RATE (Abrams & Chen's rate-based flow control: data segments are paced at RATE of payload, e.g. rate:50M, rate:1gbit, bits per second as --send-rate takes them; the windows only bound what is outstanding) [default: window]",
        label: "flow control",
        kind: Name,
        level: FlowControl,
        parse: |s, _| FlowControl::parse(s),
        default: |_| None,
    }
    /// Block-cost accounting on tcplab stack ends (`--account`); `None`
    /// keeps it off.
    #[serde(default)]
    account: Option<Account> {
        flag: "account",
        value_name: "off|on|sample:N",
        help: "tcplab stack ends: time the stack's function blocks with the cycle counter (issue 19): off, on (every bracket: 5-16% of the stack's CPU here) or sample:N (one poll round in N, scaled up by N); stored as the trial's CPU profile, by layer and by Huang & Chen's blocks [default: off]",
        label: "accounting",
        kind: Name,
        level: Account,
        parse: |s, _| Account::parse(s),
        default: |_| None,
    }
    /// A slower CPU on tcplab stack ends by time dilation (`--cpu-speed`,
    /// issue 29); `None` keeps this CPU's speed.
    #[serde(default)]
    cpu_speed: Option<CpuSpeed> {
        flag: "cpu-speed",
        value_name: "[SIDE=]SPEEDS",
        help: "tcplab stack ends: a slower CPU by exact time dilation (each timed block is followed by a spin of its time x (1/F - 1), accounted as its own block). SPEEDS is one fraction for every class (0.25) or CLASS:F joined with / (compute:0.25/data:1/device:1: protocol computation with the application's own work, copies and checksums, the device's system calls); SIDE is sender= or receiver= (none: both ends), sides joined with +, e.g. receiver=0.25 or sender=compute:0.5+receiver=0.125; turns --account on; a list sweeps speeds [default: this CPU's]",
        label: "cpu speed",
        kind: Name,
        level: CpuSpeed,
        parse: |s, _| CpuSpeed::parse(s),
        default: |_| None,
    }
    /// The initial congestion window of tcplab stack ends, segments
    /// (`--initial-window`, issue 29); `None` keeps RFC 5681's rule.
    #[serde(default)]
    initial_window: Option<u32> {
        flag: "initial-window",
        value_name: "1,2,4,10",
        help: "tcplab stack ends: the initial congestion window in segments: 1 (4.3BSD), 2 (RFC 2581), 4 (RFC 3390's largest), 10 (RFC 6928, Linux's) [default: RFC 5681's min(4 MSS, max(2 MSS, 4380 bytes)), 3 segments at 1448 bytes]",
        label: "initial window (segments)",
        kind: Count,
        level: u32,
        parse: |s, _| parse::initial_window(s),
        default: |_| None,
    }
    /// A paper's machine on tcplab stack ends (`--host-model`, issue 29);
    /// `None` keeps this host's speed and tcplab's mechanisms.
    #[serde(default)]
    host_model: Option<HostModel> {
        flag: "host-model",
        value_name: "386-33",
        help: "tcplab stack ends: a paper's machine rebuilt on the sending stack by its mechanisms and by time dilation: 386-33 (Huang & Chen's IBM PC-386/33: a 4 KB send buffer, an ACK per segment, a linearly searched routing table without a route cache, a 16-bit checksum, and 4.3BSD-Reno's timers, estimator, initial window of 1 and PCB list; each class of the sender's work slowed to the 386's cost per 1024-byte segment in Table 1, by calibration transfers on this host before the trials). A mechanism's flag given explicitly wins over the model's setting; not with --cpu-speed, which the model sets [default: no model]",
        label: "host model",
        kind: Name,
        level: HostModel,
        parse: |s, _| HostModel::parse(s),
        default: |_| None,
    }
}
