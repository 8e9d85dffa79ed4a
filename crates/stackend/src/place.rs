//! Where the user-space stack's trials run: a namespace of the run's own
//! (`tcplab-<tag>-u`) with a TUN device per user-space end
//! (`tcplab-<tag>-c` for the client end, `-s` for the server end), each on
//! a /24 of its own. Linux's end of a trial lives in the namespace and
//! talks to the stack through the TUN device; with both ends on the stack
//! the namespace routes between the two devices. Everything is removed
//! when the place drops (on error and panic too), and `lab clean` removes
//! what a killed run left.

use crate::account_profile::{add_metrics as add_account_metrics, profile_of};
use crate::config::{ack_per_batch, pcb_lookup, tcp_config};
use crate::driver::{work_for, EndRole, StackRun};
use crate::end_device::{EndDevice, EndStack};
use crate::error::StackEndError;
use crate::iface_config::{add_extra_routes, iface_setup, IfaceSetup};
use crate::metrics::StackStats;
use engine::cancel::Canceller;
use engine::metrics::{combine, sender_is_client};
use engine::report::SideReport;
use engine::workloads::{start_client, start_server, DataWaits, RunningRole};
use lab::names::Tag;
use lab::netns::NetNs;
use record::{StackImpl, TrialOutcome, TrialParams};
use stack::iface::udp::UdpSockets;
use stack::iface::InterfaceConfig;
use stack::phy::tun::{TunConfig, TunKind, TunTap};
use stack::phy::{Medium, PhyError};
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The port a user-space server end listens on.
pub const STACK_PORT: u16 = 5301;
/// Datagrams each user-space UDP socket queues each way.
const UDP_QUEUE: usize = 1024;
/// The MTU of both TUN devices.
pub const MTU: usize = 1500;
/// How long a kernel server end waits for the first data, and for more.
const DATA_WAIT: Duration = Duration::from_secs(10);
/// How long a passive end may take to wrap up once the active end is done.
const WRAP_UP: Duration = Duration::from_secs(15);
/// Slack beyond a trial's duration before it is cancelled.
const SLACK: Duration = Duration::from_secs(30);

/// One user-space end: its stack (while no trial holds it), the kind of
/// device it runs on, and addresses.
struct End {
    stack: Option<EndStack>,
    kind: StackImpl,
    setup: IfaceSetup,
    linux: Ipv4Addr,
    ours: Ipv4Addr,
    device: String,
    /// Whether Linux's route to this end carries the `quickack 1` metric
    /// (`--quickack` with a Linux receiver: an ACK for every segment).
    quickack: bool,
    /// The commands that set the end's device up, in order (opening the
    /// TUN device as the system call it is), for a reader to rerun.
    commands: Vec<String>,
}

/// One side of a running trial.
enum Side {
    Kernel(RunningRole),
    Stack(StackRun),
}

impl Side {
    fn is_active(&self) -> bool {
        match self {
            Side::Kernel(r) => r.is_active(),
            Side::Stack(r) => r.is_active(),
        }
    }

    fn is_finished(&self) -> bool {
        match self {
            Side::Kernel(r) => r.is_finished(),
            Side::Stack(r) => r.is_finished(),
        }
    }

    fn finish(&self) {
        match self {
            Side::Kernel(r) => r.finish(),
            Side::Stack(r) => r.finish(),
        }
    }
}

/// The namespace and TUN devices of the stack's trials.
pub struct StackPlace {
    // Declared first: the devices close before the namespace goes.
    ends: [Option<End>; 2],
    ns: NetNs,
    tag: Tag,
}

impl StackPlace {
    /// Makes the namespace (with forwarding on); the devices come when a
    /// trial first needs them.
    pub fn build() -> Result<StackPlace, StackEndError> {
        let setup = |e: &dyn std::fmt::Display| StackEndError::Setup(e.to_string());
        if !std::path::Path::new("/dev/net/tun").exists() {
            return Err(StackEndError::Setup(
                "/dev/net/tun is missing: this kernel has no TUN driver".into(),
            ));
        }
        let tag = Tag::fresh();
        tag.claim().map_err(|e| setup(&e))?;
        let ns = match NetNs::create(&tag.name("u")) {
            Ok(ns) => ns,
            Err(e) => {
                tag.release();
                return Err(setup(&e));
            }
        };
        let place = StackPlace {
            ends: [None, None],
            ns,
            tag,
        };
        place
            .ns
            .run_in(|| std::fs::write("/proc/sys/net/ipv4/ip_forward", "1"))
            .map_err(|e| setup(&e))?
            .map_err(|e| setup(&format!("turning forwarding on: {e}")))?;
        Ok(place)
    }

    /// The namespace's name.
    pub fn namespace(&self) -> &str {
        self.ns.name()
    }

    /// The TUN device of the client end (`client`) or the server end,
    /// once a trial has made it: where a capture of the end's traffic
    /// listens (it lives in [`StackPlace::namespace`]).
    pub fn device(&self, client: bool) -> Option<&str> {
        let i = usize::from(!client);
        self.ends[i].as_ref().map(|e| e.device.as_str())
    }

    /// A label for the record.
    pub fn label(&self) -> String {
        format!(
            "tcplab's stack behind TUN/TAP devices (namespace {}, MTU {MTU})",
            self.ns.name()
        )
    }

    /// The TUN/TAP devices trial `p` will run on (the client end's, the
    /// server end's; None for a Linux end), made now if they do not exist,
    /// so a capture can be listening on them before the trial starts.
    pub fn devices_for(&mut self, p: &TrialParams) -> Result<[Option<String>; 2], StackEndError> {
        let mut names = [None, None];
        for (i, kind) in [(0, p.stack), (1, p.server_stack)] {
            if kind.is_tcplab() {
                names[i] = Some(self.end(i, kind, iface_setup(p, kind)?)?.device.clone());
            }
        }
        Ok(names)
    }

    /// End `i` (0: the client's device, 1: the server's) on a device of
    /// `kind` with an interface as `setup` says, made on first use and
    /// remade when a trial asks for another kind of device or interface.
    fn end(
        &mut self,
        i: usize,
        kind: StackImpl,
        setup: IfaceSetup,
    ) -> Result<&mut End, StackEndError> {
        if self.ends[i]
            .as_ref()
            .is_some_and(|e| e.kind != kind || e.setup != setup)
        {
            // Closing the device's fd removes it, so its name is free again.
            self.ends[i] = None;
        }
        if self.ends[i].is_none() {
            self.ends[i] = Some(self.make_end(i, kind, setup)?);
        }
        Ok(self.ends[i].as_mut().expect("made above"))
    }

    /// The Linux address on end `i`'s subnet (made on a plain TUN if the
    /// end does not exist yet: a kernel server listens there).
    fn linux_addr(&mut self, i: usize) -> Result<Ipv4Addr, StackEndError> {
        let (kind, setup) = self.ends[i]
            .as_ref()
            .map_or((StackImpl::Tcplab, IfaceSetup::default()), |e| {
                (e.kind, e.setup)
            });
        Ok(self.end(i, kind, setup)?.linux)
    }

    fn make_end(
        &self,
        i: usize,
        kind: StackImpl,
        wanted: IfaceSetup,
    ) -> Result<End, StackEndError> {
        let setup = |e: &dyn std::fmt::Display| StackEndError::Setup(e.to_string());
        let device = self.tag.name(if i == 0 { "c" } else { "s" });
        let (linux, ours) = (
            Ipv4Addr::new(10, 213, 1 + i as u8, 1),
            Ipv4Addr::new(10, 213, 1 + i as u8, 2),
        );
        let (tun_kind, medium) = match kind {
            StackImpl::TcplabOffload => (TunKind::TunOffload, Medium::Ip),
            StackImpl::TcplabTap => (TunKind::Tap, Medium::Ethernet),
            _ => (TunKind::Tun, Medium::Ip),
        };
        let name = device.clone();
        let dev = self
            .ns
            .run_in(move || open_when_free(&TunConfig::new(&name, tun_kind)))
            .map_err(|e| setup(&e))?
            .map_err(|e| setup(&format!("opening TUN device {device}: {e}")))?;
        let ns = self.ns.name();
        let mut commands = vec![format!(
            "# no command: open /dev/net/tun, ioctl TUNSETIFF {device} ({}) inside namespace {ns}",
            match tun_kind {
                TunKind::TunOffload => {
                    "IFF_TUN | IFF_NO_PI | IFF_VNET_HDR, then TUNSETOFFLOAD TSO4, TSO6 and CSUM"
                }
                TunKind::Tap => "IFF_TAP | IFF_NO_PI",
                TunKind::Tun => "IFF_TUN | IFF_NO_PI",
            }
        )];
        for args in [
            vec![
                "-n",
                ns,
                "addr",
                "add",
                &format!("{linux}/24"),
                "dev",
                &device,
            ],
            vec![
                "-n",
                ns,
                "link",
                "set",
                &device,
                "mtu",
                &MTU.to_string(),
                "up",
            ],
        ] {
            commands.push(format!("ip {}", args.join(" ")));
            let out = std::process::Command::new("ip")
                .args(&args)
                .output()
                .map_err(|e| setup(&format!("running ip: {e}")))?;
            if !out.status.success() {
                return Err(StackEndError::Setup(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).map_err(|e| setup(&e))?;
        let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).map_err(|e| setup(&e))?;
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
        let mut iface = InterfaceConfig::new(medium, cidr);
        iface.checksum = wanted.checksum;
        iface.route_table = wanted.route_table;
        let dev = EndDevice::new(dev, wanted.layers)
            .map_err(|e| setup(&format!("the driver thread of {device}: {e}")))?;
        let mut stack = Stack::new(dev, iface, TcpConfig::default(), isn, clock);
        stack.iface.set_default_gateway(Ipv4Address::from(linux));
        add_extra_routes(&mut stack.iface, wanted.extra_routes, linux);
        // Room for a burst of datagrams between two polls, as a kernel
        // socket's default receive buffer holds about this many.
        stack.udp = UdpSockets::new(UDP_QUEUE);
        Ok(End {
            stack: Some(stack),
            kind,
            setup: wanted,
            linux,
            ours,
            device,
            quickack: false,
            commands,
        })
    }

    /// The commands that set this place up: its namespace's (from the
    /// lab's log), then each end's device's.
    fn commands(&self) -> Vec<String> {
        let mut c = lab::cmd::logged_mentioning(self.ns.name());
        c.retain(|l| l.starts_with("ip netns add") || l.contains(" link set lo up"));
        c.extend(self.ends.iter().flatten().flat_map(|e| e.commands.clone()));
        c
    }

    /// Sets (or clears) the `quickack 1` metric on Linux's route to end
    /// `i`: `--quickack` asks a Linux receiver for an ACK per segment, and
    /// TCP_QUICKACK alone, re-armed after each read, still lets Linux
    /// acknowledge every second segment between reads (0.5 ACKs per
    /// segment from a slow sender).
    fn set_quickack(&mut self, i: usize, on: bool) -> Result<(), StackEndError> {
        let ns = self.ns.name().to_string();
        let Some(end) = self.ends[i].as_mut() else {
            return Ok(());
        };
        if end.quickack == on {
            return Ok(());
        }
        let o = end.linux.octets();
        let net = format!("{}.{}.{}.0/24", o[0], o[1], o[2]);
        let linux = end.linux.to_string();
        let mut args = vec![
            "-n",
            &ns,
            "route",
            "replace",
            &net,
            "dev",
            &end.device,
            "proto",
            "kernel",
            "scope",
            "link",
            "src",
            &linux,
        ];
        if on {
            args.extend(["quickack", "1"]);
        }
        let out = std::process::Command::new("ip")
            .args(&args)
            .output()
            .map_err(|e| StackEndError::Setup(format!("running ip: {e}")))?;
        if !out.status.success() {
            return Err(StackEndError::Setup(format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        end.quickack = on;
        Ok(())
    }

    /// Starts the stack's end `i`, on a device of `kind`, on `p` as `role`.
    #[allow(clippy::too_many_arguments)]
    fn start_stack(
        &mut self,
        i: usize,
        kind: StackImpl,
        p: &TrialParams,
        config: &TcpConfig,
        role: EndRole,
        active: bool,
        cancel: &Canceller,
    ) -> Result<(Side, Ipv4Addr), StackEndError> {
        let end = self.end(i, kind, iface_setup(p, kind)?)?;
        let mut stack = end
            .stack
            .take()
            .ok_or_else(|| StackEndError::Stack("the stack is still held by a trial".into()))?;
        stack.tcp.set_config(config.clone());
        stack.tcp.set_ack_per_batch(ack_per_batch(p));
        stack.tcp.set_pcb_lookup(pcb_lookup(p));
        stack.tcp.set_route_cache(p.route_cache == Some(true));
        // The queues' figures count from the trial's start.
        stack.device.take_queue_stats();
        let ours = end.ours;
        let run = StackRun::start(stack, ours, work_for(p, role), p, active, cancel)
            .map_err(|e| StackEndError::Stack(format!("starting its thread: {e}")))?;
        Ok((Side::Stack(run), ours))
    }

    /// Runs trial `p` with the ends its `--stack` and `--server-stack`
    /// say; at least one must be tcplab. A trial the stack breaks ends
    /// with the stack's reason (an error from `combine`), and the stack is
    /// rebuilt for the next one.
    pub fn run(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, StackEndError> {
        let config = tcp_config(p)?;
        if !p.stack.is_tcplab() && !p.server_stack.is_tcplab() {
            return Err(StackEndError::Unsupported(
                "neither end is tcplab (the kernel places run this trial)".into(),
            ));
        }
        let cancel = Canceller::new();
        let client_active = sender_is_client(p);
        // The ends' devices exist before their drop counters are read.
        for (i, kind) in [(0, p.stack), (1, p.server_stack)] {
            if kind.is_tcplab() {
                self.end(i, kind, iface_setup(p, kind)?)?;
                // A Linux peer that receives from this end ACKs every
                // segment under --quickack.
                let peer_receives = (i == 0) == client_active;
                self.set_quickack(i, p.quickack && peer_receives)?;
            }
        }
        let drops_before = self.device_drops();
        let waits = DataWaits {
            first: DATA_WAIT,
            stall: DATA_WAIT,
            from: None,
            token: None,
            owner: None,
        };
        // The server end first, so the client finds it listening.
        let (server, server_ip, ports) = match p.server_stack {
            kind if kind.is_tcplab() => {
                let (side, ip) = self.start_stack(
                    1,
                    kind,
                    p,
                    &config,
                    EndRole::Server(STACK_PORT),
                    !client_active,
                    &cancel,
                )?;
                let flows = if p.test == record::TestKind::UdpStream {
                    p.parallel.max(1) as u16
                } else {
                    1
                };
                (
                    side,
                    ip,
                    (0..flows).map(|i| STACK_PORT + i).collect::<Vec<_>>(),
                )
            }
            _ => {
                let ip = self.linux_addr(0)?;
                let (q, c) = (p.clone(), cancel.clone());
                let (role, ports) = self
                    .ns
                    .run_in(move || start_server(&q, IpAddr::V4(ip), &c, None, waits))
                    .map_err(|e| StackEndError::Setup(e.to_string()))??;
                (Side::Kernel(role), ip, ports)
            }
        };
        let client = match p.stack {
            kind if kind.is_tcplab() => self.start_stack(
                0,
                kind,
                p,
                &config,
                EndRole::Client(server_ip, ports),
                client_active,
                &cancel,
            ),
            _ => {
                let (q, c) = (p.clone(), cancel.clone());
                self.ns
                    .run_in(move || {
                        start_client(&q, IpAddr::V4(server_ip), &ports, &c, None, None, None)
                    })
                    .map_err(|e| StackEndError::Setup(e.to_string()))
                    .and_then(|r| r.map_err(StackEndError::from))
                    .map(|role| (Side::Kernel(role), Ipv4Addr::UNSPECIFIED))
            }
        };
        let client = match client {
            Ok((side, _)) => side,
            Err(e) => {
                cancel.cancel();
                server.finish();
                self.settle(1, server);
                return Err(e);
            }
        };
        let interrupted = wait_for(&client, &server, p, interrupt, &cancel);
        let (client_report, client_stats) = self.settle(0, client);
        let (server_report, server_stats) = self.settle(1, server);
        if interrupted {
            return Err(StackEndError::Interrupted);
        }
        let mut o = combine(p, &client_report, &server_report)?;
        // Packets Linux dropped on their way to a user-space end: its
        // device's transmit queue was full because the end did not read
        // fast enough (loss the stack's own counters cannot see).
        for (i, end) in ["client", "server"].into_iter().enumerate() {
            if let (Some(b), Some(a)) = (drops_before[i], self.device_drops()[i]) {
                o.metrics.insert(
                    format!("stack_{end}_device_drops"),
                    a.saturating_sub(b) as f64,
                );
            }
        }
        let (sender, receiver) = if client_active {
            (&client_stats, &server_stats)
        } else {
            (&server_stats, &client_stats)
        };
        if p.test == record::TestKind::TcpStream {
            if let Some(s) = sender {
                s.add_as_sender(&mut o.metrics);
            }
            if let Some(s) = receiver {
                s.add_as_receiver(&mut o.metrics);
            }
        }
        // Block-cost accounting: the ends' blocks as the trial's CPU
        // profile, and their self-checks as metrics.
        let accounted: Vec<_> = [("client", &client_stats), ("server", &server_stats)]
            .into_iter()
            .filter_map(|(end, s)| Some((end, s.as_ref()?.account.clone()?)))
            .collect();
        for (end, a) in &accounted {
            add_account_metrics(end, &a.report, &mut o.metrics);
        }
        let ends: Vec<_> = accounted.into_iter().map(|(_, a)| a).collect();
        o.profile = profile_of(&ends);
        // TCP counters, for ends that had TCP connections.
        for (end, stats) in [("client", &client_stats), ("server", &server_stats)] {
            if let Some(s) = stats.as_ref().filter(|s| s.connections > 0) {
                s.add_to(end, &mut o.metrics);
            }
        }
        o.details["stack"] = serde_json::json!({
            "client": p.stack.name(),
            "server": p.server_stack.name(),
            "client_device": device_note(p.stack),
            "server_device": device_note(p.server_stack),
            "place": self.label(),
            "devices": self.ends.iter().flatten().map(|e| &e.device).collect::<Vec<_>>(),
            "commands": self.commands(),
            "controlled": "Each user-space end runs on the trial's own thread; its device write()s run Linux's receive path inside the call, so that kernel work is charged to the user-space end's CPU. Metrics stack_* come from the stack's own counters (times in ns on its clock, not TCP_INFO jiffies).",
        });
        if p.recv_work_ns_per_kb.is_some() && receiver.is_some() {
            o.details["stack"]["recv_work"] = serde_json::json!("The stack's receiver waits out its --recv-work on the stack's clock between reads (the same rate as a kernel receiver's, spread over each read), while its loop keeps serving the connection; unlike a kernel receiver's burn it is not in the end's CPU time.");
        }
        Ok(o)
    }

    /// Each end's device's transmit drops so far (None: no such end).
    fn device_drops(&self) -> [Option<u64>; 2] {
        let ns = self.ns.name().to_string();
        let read = |e: &Option<End>| e.as_ref().and_then(|e| tx_dropped(&ns, &e.device));
        [read(&self.ends[0]), read(&self.ends[1])]
    }

    /// Joins a side; a stack end's stack goes back to its slot (or the
    /// slot is emptied, so the next trial builds a fresh one).
    fn settle(&mut self, i: usize, side: Side) -> (SideReport, Option<StackStats>) {
        match side {
            Side::Kernel(role) => (role.join(), None),
            Side::Stack(run) => {
                let (report, stack, mut stats) = run.join();
                if let Some(s) = &stack {
                    stats.routes = Some(s.iface.route_table().len() as u64);
                    stats.sockets = Some(s.tcp.counters());
                    stats.driver_queues = s.device.take_queue_stats();
                }
                match stack {
                    Some(s) => {
                        if let Some(end) = self.ends[i].as_mut() {
                            end.stack = Some(s);
                        }
                    }
                    None => self.ends[i] = None,
                }
                (report, Some(stats))
            }
        }
    }
}

/// The transmit drops of `device` in namespace `ns` (Linux → the stack),
/// from `ip -s -j link`.
fn tx_dropped(ns: &str, device: &str) -> Option<u64> {
    let out = std::process::Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", device])
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v[0]["stats64"]["tx"]["dropped"].as_u64()
}

/// What an end's device does to what it measures, for the record.
fn device_note(kind: StackImpl) -> &'static str {
    match kind {
        StackImpl::Kernel => "Linux's sockets",
        StackImpl::Tcplab => "plain TUN, MTU 1500: every segment a packet, every checksum computed in software",
        StackImpl::TcplabOffload => "TUN with virtio-net-header offloads (TSO4, CSUM): super-packets of up to 64 KB each way, checksums left to the kernel, so per-packet costs are hidden as GSO/GRO hide them",
        StackImpl::TcplabTap => "TAP, MTU 1500: the stack's own Ethernet and ARP are part of what is measured",
    }
}

/// Waits until the active side is done, then asks the passive one to wrap
/// up and waits for it; cancels on Ctrl-C or far past the duration.
/// Returns whether Ctrl-C ended it.
fn wait_for(
    client: &Side,
    server: &Side,
    p: &TrialParams,
    interrupt: &AtomicBool,
    cancel: &Canceller,
) -> bool {
    let (active, passive) = if client.is_active() || !server.is_active() {
        (client, server)
    } else {
        (server, client)
    };
    let deadline = p
        .duration_s
        .map(|d| Instant::now() + Duration::from_secs_f64(d) + SLACK);
    let tick = Duration::from_millis(5);
    let mut interrupted = false;
    while !active.is_finished() {
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            cancel.cancel();
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            cancel.cancel();
        }
        std::thread::sleep(tick);
    }
    passive.finish();
    let until = Instant::now() + WRAP_UP;
    while !passive.is_finished() {
        if interrupt.load(Ordering::Relaxed) {
            interrupted = true;
            cancel.cancel();
        }
        if Instant::now() > until {
            cancel.cancel();
        }
        std::thread::sleep(tick);
    }
    interrupted
}

/// How long a remade end waits for its old device's name to come free.
const DEVICE_FREE_WAIT: Duration = Duration::from_secs(3);

/// Opens the device, waiting while its name is still taken by the end it
/// replaces: TUNSETIFF says EBUSY when that device is of the same kind
/// and EINVAL when it is of another (a TAP end replacing a TUN one).
/// Closing a TUN fd removes the device only when the file's last
/// reference goes, and a process another thread is spawning holds a copy
/// of every fd until its exec closes them (O_CLOEXEC), so the old device
/// can outlive our close by a fraction of a millisecond. A name still
/// taken after `DEVICE_FREE_WAIT` is a real error.
fn open_when_free(config: &TunConfig) -> Result<TunTap, PhyError> {
    let deadline = Instant::now() + DEVICE_FREE_WAIT;
    loop {
        match TunTap::open(config) {
            Err(PhyError::Setup { what, source })
                if name_taken(&what, &source) && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Whether the device could not be attached because its name belongs to
/// a device that still exists: TUNSETIFF's EBUSY (same kind) or EINVAL
/// (another kind).
fn name_taken(step: &str, e: &std::io::Error) -> bool {
    step == "TUNSETIFF" && matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EINVAL))
}

impl Drop for StackPlace {
    fn drop(&mut self) {
        // Devices first (closing a TUN fd removes the device), then the
        // namespace (NetNs's own drop), then the owner file.
        self.ends = [None, None];
        self.tag.release();
    }
}
