//! The places a local run uses: each built once (namespaces, link, embedded
//! servers inside them), calibrated once (the link's real rate and RTT),
//! and torn down when the session ends — also on Ctrl-C and on panic, since
//! teardown is in `Drop`.

use engine::interval::IntervalSpec;
use engine::{Client, EngineError, Limits, PlaceHook, Server, ServerHandle, TrialObserver};
use lab::host::{pin_current_thread, CpuQuota};
use lab::names::Tag;
use lab::trial_changes::{TrialChanges, Wanted};
use lab::{Place, PlaceSpec};
use record::{LoadSide, TestKind, TrialOutcome, TrialParams};
use serde::Serialize;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an embedded server in a place may take to accept and greet.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Applies `--host-speed` and `--pin` to endpoint threads: one CPU quota
/// cgroup per side and speed, created on first use.
pub struct HostPlacer {
    tag: Tag,
    quotas: Mutex<HashMap<(LoadSide, u64), Arc<CpuQuota>>>,
}

impl HostPlacer {
    /// A placer whose cgroups will be named `tcplab-<tag>-…`.
    pub fn new() -> Arc<HostPlacer> {
        Arc::new(HostPlacer {
            tag: Tag::fresh(),
            quotas: Mutex::new(HashMap::new()),
        })
    }

    /// The hook endpoints call at the start of each side's first thread.
    pub fn hook(self: &Arc<Self>) -> PlaceHook {
        let me = self.clone();
        Arc::new(move |p: &TrialParams, side: LoadSide| me.place(p, side))
    }

    fn place(&self, p: &TrialParams, side: LoadSide) -> Result<(), String> {
        if let Some(hs) = p.host_speed.filter(|h| h.side.covers(side)) {
            self.quota(side, hs.fraction)?
                .enter_current_thread()
                .map_err(|e| e.to_string())?;
        }
        if let Some(cpu) = p.pin.and_then(|pin| pin.cpu(side)) {
            pin_current_thread(cpu as usize).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn quota(&self, side: LoadSide, fraction: f64) -> Result<Arc<CpuQuota>, String> {
        let mut q = self
            .quotas
            .lock()
            .map_err(|_| "quota lock poisoned".to_string())?;
        if let Some(c) = q.get(&(side, fraction.to_bits())) {
            return Ok(c.clone());
        }
        if q.is_empty() {
            self.tag
                .claim()
                .map_err(|e| format!("writing the owner file under /run/tcplab: {e}"))?;
        }
        let role = match side {
            LoadSide::Sender => format!("s{}", q.len()),
            LoadSide::Receiver => format!("r{}", q.len()),
        };
        let c =
            Arc::new(CpuQuota::create(&self.tag.name(&role), fraction).map_err(|e| e.to_string())?);
        q.insert((side, fraction.to_bits()), c.clone());
        Ok(c)
    }
}

impl HostPlacer {
    /// Removes the quota cgroups (moving any thread still in them out).
    pub fn clear(&self) {
        if let Ok(mut q) = self.quotas.lock() {
            let had = !q.is_empty();
            q.clear();
            if had {
                self.tag.release();
            }
        }
    }
}

impl Drop for HostPlacer {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Adds the `core_<side>_…` metrics of each pinned side's CPU (see
/// [`engine::hoststat::core_metrics`]) when the sides are pinned to
/// distinct CPUs, with each side's whole CPU time (`cpu_<side>_whole_s`,
/// see [`engine::hoststat::whole_side_cpu`]) and the busy time of its CPU
/// that was neither (`core_<side>_other_s`: other processes), and each quota-limited side's achieved CPU share
/// (`host_speed_<side>_achieved`: its threads' CPU time over its wall time)
/// beside the share asked for.
fn add_side_cpu_metrics(
    p: &TrialParams,
    before: &engine::hoststat::CoreStat,
    after: &engine::hoststat::CoreStat,
    metrics: &mut std::collections::BTreeMap<String, f64>,
) {
    if let Some(pin) = p
        .pin
        .filter(|q| q.sender.is_some() && q.sender != q.receiver)
    {
        for (side, cpu) in [("sender", pin.sender), ("receiver", pin.receiver)] {
            if let Some(cpu) = cpu {
                metrics.extend(engine::hoststat::core_metrics(
                    before,
                    after,
                    side,
                    cpu as usize,
                ));
                let get = |k: &str| metrics.get(&format!("core_{side}_{k}")).copied();
                let thread = metrics.get(&format!("cpu_{side}_s")).copied();
                if let (Some(busy), Some(softirq), Some(irq), Some(thread)) =
                    (get("busy_s"), get("softirq_s"), get("irq_s"), thread)
                {
                    let w = engine::hoststat::whole_side_cpu(busy, thread, softirq + irq);
                    metrics.insert(format!("cpu_{side}_whole_s"), w.whole_s);
                    metrics.insert(format!("core_{side}_other_s"), w.other_s);
                }
            }
        }
    }
    if let Some(hs) = p.host_speed {
        for (side, name) in [
            (LoadSide::Sender, "sender"),
            (LoadSide::Receiver, "receiver"),
        ] {
            let (cpu, wall) = (
                metrics.get(&format!("cpu_{name}_s")).copied(),
                metrics.get(&format!("{name}_wall_s")).copied(),
            );
            if let (true, Some(c), Some(w)) = (hs.side.covers(side), cpu, wall) {
                if w > 0.0 {
                    metrics.insert(format!("host_speed_{name}_achieved"), c / w);
                }
            }
        }
    }
}

/// The link's measured properties.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// TCP goodput of a short bulk transfer (bits/s).
    pub goodput_bps: f64,
    /// Median round trip of 1-byte request/response (s).
    pub rtt_s: f64,
    /// MSS the calibration flow used.
    pub mss: f64,
}

/// The control connection in `slot`, reconnected (with `hook` set, within
/// `timeout`) if it is missing or broke in an earlier trial.
pub fn connected<'a>(
    slot: &'a mut Option<Client>,
    addr: SocketAddr,
    hook: Option<&PlaceHook>,
    timeout: Duration,
    key: Option<&engine::Key>,
) -> Result<&'a mut Client, EngineError> {
    if !slot.as_ref().is_some_and(Client::usable) {
        *slot = None;
        let mut c = Client::connect_with_key(addr, timeout, key)?;
        if let Some(h) = hook {
            c.set_hook(h.clone());
        }
        *slot = Some(c);
    }
    Ok(slot.as_mut().expect("connected above"))
}

/// Runs one trial on `client` with `observer` watching it (for this trial only).
pub fn observed(
    client: &mut Client,
    p: &TrialParams,
    interrupt: &Arc<AtomicBool>,
    observer: Option<Box<dyn TrialObserver>>,
) -> Result<TrialOutcome, EngineError> {
    let watched = observer.is_some();
    client.set_observer(observer);
    let r = client.run_trial(p, interrupt);
    if watched {
        client.set_observer(None);
    }
    r
}

/// `cubic` if this kernel offers it.
fn cubic_if_available() -> Option<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .ok()
        .filter(|t| t.split_whitespace().any(|c| c == "cubic"))
        .map(|_| "cubic".to_string())
}

/// A built place with its embedded servers and control connections.
pub struct LivePlace {
    // Declared first so they drop before the namespaces they live in.
    clients: [Option<Client>; 2],
    servers: [Option<ServerHandle>; 2],
    hook: PlaceHook,
    calibration: Option<Calibration>,
    place: Place,
    interval: Option<IntervalSpec>,
}

impl LivePlace {
    /// Builds the place and starts an embedded server in its server namespace.
    pub fn build(spec: &PlaceSpec, hook: PlaceHook) -> anyhow::Result<LivePlace> {
        let place = Place::build(spec)?;
        Ok(LivePlace {
            clients: [None, None],
            servers: [None, None],
            hook,
            calibration: None,
            place,
            interval: None,
        })
    }

    /// Samples every following stream trial at `--interval` (`None`: not).
    pub fn set_interval(&mut self, spec: Option<IntervalSpec>) {
        self.interval = spec;
    }

    fn server_addr(&mut self, v6: bool) -> Result<SocketAddr, EngineError> {
        let slot = usize::from(v6);
        if self.servers[slot].is_none() {
            let ip = self.place.server_ip(v6);
            let hook = self.hook.clone();
            let handle = self
                .place
                .in_server(move || {
                    Server::bind(SocketAddr::new(ip, 0), Limits::embedded())
                        .and_then(|s| s.with_hook(hook).start())
                })
                .map_err(|e| EngineError::Protocol(e.to_string()))??;
            self.servers[slot] = Some(handle);
        }
        Ok(self.servers[slot].as_ref().expect("started").addr())
    }

    /// Runs one trial here: the client side runs in the client namespace.
    pub fn run(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
        observer: Option<Box<dyn TrialObserver>>,
    ) -> Result<TrialOutcome, EngineError> {
        let addr = self.server_addr(p.ipv6)?;
        let slot = usize::from(p.ipv6);
        let _inside = self
            .place
            .enter_client()
            .map_err(|e| EngineError::Protocol(e.to_string()))?;
        let client = connected(
            &mut self.clients[slot],
            addr,
            Some(&self.hook),
            CONNECT_TIMEOUT,
            None,
        )?;
        client.set_interval(self.interval.clone());
        observed(client, p, interrupt, observer)
    }

    /// Measures the link's real rate and RTT with a short bulk transfer and
    /// a 1-byte request/response run.
    pub fn calibrate(&mut self, interrupt: &Arc<AtomicBool>) -> Result<&Calibration, EngineError> {
        let slow = self
            .place
            .info()
            .link
            .as_ref()
            .is_some_and(|l| l.delay_s >= 0.01);
        let mut bulk = TrialParams::defaults(TestKind::TcpStream);
        bulk.duration_s = Some(if slow { 3.0 } else { 2.0 });
        // Cubic fills a short queue steadily; BBR's probing overflows it and
        // the retransmission stalls would be charged to the link.
        bulk.cc = cubic_if_available();
        let m = self.run(&bulk, interrupt, None)?.metrics;
        let goodput = m.get("throughput_bps").copied().unwrap_or(0.0);
        let mss = m.get("snd_mss").copied().unwrap_or(1448.0);
        let mut rr = TrialParams::defaults(TestKind::TcpRr);
        rr.nodelay = true;
        // On a lossy link a lost SYN waits the 1 s initial RTO: a 0.5 s run
        // then completes no transaction (seen once over the 1% emulated
        // link in the lab test), so such a link gets 2.5 s.
        let lossy = self
            .place
            .info()
            .link
            .as_ref()
            .is_some_and(|l| l.loss > 0.0);
        rr.duration_s = Some(if lossy {
            2.5
        } else if slow {
            1.5
        } else {
            0.5
        });
        let r = self.run(&rr, interrupt, None)?.metrics;
        self.calibration = Some(Calibration {
            goodput_bps: goodput,
            rtt_s: r.get("latency_p50_s").copied().unwrap_or(f64::NAN),
            mss,
        });
        Ok(self.calibration.as_ref().expect("just set"))
    }

    /// Runs one trial and records where it ran: the place, its mechanism,
    /// its calibration and, with the emulator, what the link did to this
    /// trial's frames in each direction.
    pub fn run_recorded(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
        observer: Option<Box<dyn TrialObserver>>,
    ) -> Result<TrialOutcome, EngineError> {
        let changes = self.apply_changes(p)?;
        let offloads = self.offload_state(p);
        let before = self.place.emulator_stats();
        let cores_before = engine::hoststat::CoreStat::now();
        let run = self.run(p, interrupt, observer);
        let cores_after = engine::hoststat::CoreStat::now();
        // Undone before the result is looked at: after a failed or
        // interrupted trial too (and on panic, by the guard's Drop).
        let (routes_installed, install_s, quickack_routes) =
            changes.as_ref().map_or((0, 0.0, 0), |c| {
                (c.routes_installed, c.install_s, c.quickack_routes)
            });
        // The sender's routing trie as the trial ran with it (`--routes`).
        let trie = p
            .routes
            .and_then(|_| self.place.endpoint(engine::metrics::sender_is_client(p)))
            .map(|e| lab::trial_changes::fib_trie_stats(&e.ns));
        if let Some(c) = changes {
            c.undo()
                .map_err(|e| EngineError::Protocol(format!("undoing the trial's changes: {e}")))?;
        }
        let mut o = run?;
        add_side_cpu_metrics(p, &cores_before, &cores_after, &mut o.metrics);
        if p.routes.is_some() {
            o.metrics
                .insert("routes_installed".into(), f64::from(routes_installed));
            o.metrics.insert("routes_install_s".into(), install_s);
        }
        if let Some(Ok(t)) = trie {
            o.metrics.insert("fib_main_avg_depth".into(), t.avg_depth);
            o.metrics
                .insert("fib_main_max_depth".into(), f64::from(t.max_depth));
            o.metrics.insert("fib_main_leaves".into(), t.leaves as f64);
        }
        if p.quickack {
            // Routes of the receiver's table that carried `quickack 1`: 0
            // where the place has no namespaces (only TCP_QUICKACK then).
            o.metrics
                .insert("quickack_routes".into(), f64::from(quickack_routes));
        }
        let emulator = match (before, self.place.emulator_stats()) {
            (Some(b), Some(a)) if a.len() == 2 && b.len() == 2 => Some(serde_json::json!({
                "client_to_server": a[0].since(&b[0]),
                "server_to_client": a[1].since(&b[1]),
            })),
            _ => None,
        };
        o.details["lab"] = serde_json::json!({
            "offloads": offloads,
            "place": self.place.info(),
            "calibration": self.calibration,
            "emulator": emulator,
            "steering": self.steering(p),
            // The quota's period, so a reader can rerun --host-speed.
            "cpu_quota_period_us": p.host_speed.map(|_| lab::host::QUOTA_PERIOD_US),
        });
        Ok(o)
    }

    /// Makes the trial's changes to this place (`--routes`,
    /// `--checksum-offload off`, `--offload`, `--quickack`'s route metric);
    /// None when it asks for none.
    fn apply_changes(&self, p: &TrialParams) -> Result<Option<TrialChanges>, EngineError> {
        let client_sends = engine::metrics::sender_is_client(p);
        let has_namespaces = self.place.endpoint(!client_sends).is_some();
        let w = Wanted {
            routes: p.routes.unwrap_or(0),
            checksum_off: !p.checksum_offload,
            offloads_off: p.offload.map_or([false; 5], |o| o.as_array()),
            // Where the place has namespaces, `--quickack` also sets the
            // route metric: TCP_QUICKACK alone lapses between reads.
            quickack_route: p.quickack && has_namespaces,
            steer: self.steer(p),
        };
        if w == Wanted::default() {
            return Ok(None);
        }
        let (Some(s), Some(r)) = (
            self.place.endpoint(client_sends),
            self.place.endpoint(!client_sends),
        ) else {
            return Err(EngineError::Protocol(
                "--routes, --checksum-offload and --offload need a place with namespaces".into(),
            ));
        };
        TrialChanges::apply(w, &s, &r)
            .map(Some)
            .map_err(|e| EngineError::Protocol(format!("changing the place for the trial: {e}")))
    }

    /// The CPUs each end's receive processing is steered to (RPS): with
    /// pinned endpoints in a place with namespaces, each end's to the CPU of
    /// the endpoint that lives there, so that each side's protocol work runs
    /// (and is charged) on its own CPU. Loopback has one device for both
    /// directions and cannot be steered per side.
    fn steer(&self, p: &TrialParams) -> [Option<u32>; 2] {
        match (p.pin, self.place.info().topology) {
            (Some(pin), lab::Topology::Veth | lab::Topology::Router) => [pin.sender, pin.receiver],
            _ => [None, None],
        }
    }

    /// The trial's steering for the record: each side's CPU and the
    /// `rps_cpus` mask its end ran with (`null` where it was not steered).
    fn steering(&self, p: &TrialParams) -> serde_json::Value {
        let [s, r] = self.steer(p);
        serde_json::json!({
            "sender_cpu": s,
            "receiver_cpu": r,
            "note": if s.is_some() || r.is_some() {
                "each pinned side's receive processing (RPS) steered to its own CPU"
            } else if p.pin.is_some() {
                "loopback: one device for both directions, receive processing not steered"
            } else {
                "not steered: softirq work is charged to whichever CPU ran it"
            },
        })
    }

    /// Each end's offloads as the trial runs with them (after its own
    /// changes), by the side it plays; `null` for an end that cannot be
    /// read, and for places without namespaces.
    fn offload_state(&self, p: &TrialParams) -> serde_json::Value {
        let client_sends = engine::metrics::sender_is_client(p);
        let side = |e: Option<lab::trial_changes::Endpoint>| {
            e.map_or(
                serde_json::Value::Null,
                |e| match lab::trial_changes::read_offloads(&e) {
                    Ok(state) => serde_json::json!({ "device": e.dev, "state": state }),
                    Err(err) => serde_json::json!({ "device": e.dev, "error": err.to_string() }),
                },
            )
        };
        serde_json::json!({
            "sender": side(self.place.endpoint(client_sends)),
            "receiver": side(self.place.endpoint(!client_sends)),
        })
    }

    /// The built place.
    pub fn place(&self) -> &Place {
        &self.place
    }
}
