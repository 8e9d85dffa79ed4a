//! A probe session: the BPF programs of the chosen groups, loaded with the
//! experiment's filter in read-only data, attached for one trial, and a
//! thread draining their ring buffer. Dropping the session detaches them.

use crate::buffer::RecordBuffer;
use crate::depth::ProbeDepth;
use crate::error::ProbeError;
use crate::event::{ProbeEvent, ProbeId};
use crate::groups::ProbeGroup;
use crate::skel::path::{PathSkel, PathSkelBuilder};
use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, RingBufferBuilder};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most ports a filter holds (`MAX_PORTS` in `events.h`).
pub const MAX_PORTS: usize = 8;

/// Default ring buffer size: 64 MiB holds about a million records, several
/// seconds of a veth stream even if the reader falls behind.
pub const DEFAULT_RING_BYTES: u32 = 64 << 20;

/// What to probe and which flows to keep.
#[derive(Debug, Clone)]
pub struct ProbeConfig {
    /// Groups to attach (`cpu` is handled by the sampler, not here).
    pub groups: BTreeSet<ProbeGroup>,
    /// Keep packets and sockets with one of these ports at either end
    /// (empty: keep everything).
    pub ports: Vec<u16>,
    /// Thread group whose scheduler switches `sched` records (0: none).
    pub tgid: u32,
    /// Ring buffer bytes (a power of two).
    pub ring_bytes: u32,
    /// How far the programs go (anything but full records nothing).
    pub depth: ProbeDepth,
}

/// What a session recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Capture {
    /// Every record as the kernel wrote it ([`crate::EVENT_SIZE`] bytes
    /// each), in time order.
    #[serde(skip)]
    pub raw: Vec<u8>,
    /// Records captured per probe.
    pub written: BTreeMap<String, u64>,
    /// Records the BPF side handed to the ring buffer (whole batches).
    pub flushed: u64,
    /// Of those, records that arrived through the ring buffer: equal to
    /// `flushed` unless the drain timed out.
    pub from_ring: u64,
    /// Records read from the per-CPU batches still partly filled at the end.
    pub from_batches: u64,
    /// Records lost per probe because the ring buffer was full.
    pub lost: BTreeMap<String, u64>,
    /// Invocations the kernel skipped per probe because the same program
    /// was already running on that CPU (an interrupt nested in it).
    pub missed: BTreeMap<String, u64>,
    /// Probes that were attached.
    pub attached: Vec<String>,
    /// Probes that could not be attached on this kernel, with the reason.
    pub skipped: BTreeMap<String, String>,
    /// Ports of the filter.
    pub ports: Vec<u16>,
    /// Seconds the programs were attached.
    pub attached_s: f64,
}

impl Capture {
    /// Number of records.
    pub fn count(&self) -> usize {
        self.raw.len() / crate::EVENT_SIZE
    }

    /// The records, decoded.
    pub fn events(&self) -> Vec<ProbeEvent> {
        crate::decode_all(&self.raw)
    }

    /// Records lost in all: ring buffer full, nested too deep, invocations
    /// skipped, or handed to the ring buffer but not drained in time.
    pub fn total_lost(&self) -> u64 {
        self.lost.values().sum::<u64>()
            + self.missed.values().sum::<u64>()
            + self.flushed.saturating_sub(self.from_ring)
    }
}

/// Probes attached for the life of the value.
pub struct ProbeSession {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<Capture, ProbeError>>>,
}

impl ProbeSession {
    /// Loads and attaches the programs; returns once they are live.
    pub fn start(cfg: ProbeConfig) -> Result<ProbeSession, ProbeError> {
        if cfg.ports.len() > MAX_PORTS {
            return Err(ProbeError::Unsupported(format!(
                "probes filter at most {MAX_PORTS} ports, got {}",
                cfg.ports.len()
            )));
        }
        check_btf()?;
        // libbpf would print its own diagnostics to stderr; ours say what to do.
        libbpf_rs::set_print(None);
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tcplab-probe".into())
            .spawn(move || run(cfg, s, ready_tx))
            .map_err(|e| ProbeError::Thread(e.to_string()))?;
        let mut session = ProbeSession {
            stop,
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(()) => Ok(session),
            Err(_) => match session.join() {
                Err(e) => Err(e),
                Ok(_) => Err(ProbeError::Thread("stopped before attaching".into())),
            },
        }
    }

    /// Detaches the programs, drains the ring buffer and returns the records.
    pub fn stop(mut self) -> Result<Capture, ProbeError> {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }

    fn join(&mut self) -> Result<Capture, ProbeError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| ProbeError::Thread("panicked".into()))?,
            None => Err(ProbeError::Thread("already stopped".into())),
        }
    }
}

impl Drop for ProbeSession {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// CO-RE needs the kernel's BTF.
fn check_btf() -> Result<(), ProbeError> {
    if std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        Ok(())
    } else {
        Err(ProbeError::Unsupported(
            "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing; it needs \
             CONFIG_DEBUG_INFO_BTF=y), so the CO-RE probes cannot load"
                .into(),
        ))
    }
}

/// The program of a probe, for autoload and attach.
macro_rules! prog_of {
    ($progs:expr, $id:expr) => {
        match $id {
            ProbeId::SendApp => &mut $progs.send_app,
            ProbeId::TcpSendmsg => &mut $progs.tcp_sendmsg,
            ProbeId::DevQueue => &mut $progs.dev_queue,
            ProbeId::QdiscEnqueue => &mut $progs.qdisc_enq,
            ProbeId::QdiscDequeue => &mut $progs.qdisc_deq,
            ProbeId::DevStartXmit => &mut $progs.dev_start_xmit,
            ProbeId::DevXmit => &mut $progs.dev_xmit,
            ProbeId::NetifReceive => &mut $progs.netif_receive,
            ProbeId::TcpProbe => &mut $progs.tcp_probe,
            ProbeId::SkDataReady => &mut $progs.data_ready,
            ProbeId::RecvApp => &mut $progs.recv_app,
            ProbeId::RcvSpace => &mut $progs.rcv_space,
            ProbeId::Retransmit => &mut $progs.retransmit,
            ProbeId::SchedSwitch => &mut $progs.sched_switch,
        }
    };
}

fn run(
    cfg: ProbeConfig,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<()>,
) -> Result<Capture, ProbeError> {
    let wanted: BTreeSet<ProbeId> = cfg
        .groups
        .iter()
        .flat_map(|g| g.probes().iter().copied())
        .collect();
    let mut storage = MaybeUninit::uninit();
    let mut open = PathSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| ProbeError::bpf("opening the BPF object", e))?;
    {
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| ProbeError::Thread("BPF object has no rodata".into()))?;
        for (i, p) in cfg.ports.iter().enumerate() {
            ro.filter_ports[i] = *p;
        }
        ro.n_ports = cfg.ports.len() as u32;
        ro.filter_tgid = cfg.tgid;
        ro.depth = cfg.depth.code();
        // SAFETY: gettid has no preconditions.
        ro.ignore_tid = unsafe { libc::gettid() } as u32;
    }
    open.maps
        .events
        .set_max_entries(cfg.ring_bytes)
        .map_err(|e| ProbeError::bpf("sizing the ring buffer", e))?;
    for id in ProbeId::ALL {
        prog_of!(open.progs, id).set_autoload(wanted.contains(&id));
    }
    let mut skel: PathSkel = open
        .load()
        .map_err(|e| ProbeError::bpf("loading the BPF programs", e))?;

    skel.maps
        .bss_data
        .as_deref_mut()
        .ok_or_else(|| ProbeError::Thread("BPF object has no bss".into()))?
        .enabled = 1;
    let mut capture = Capture {
        ports: cfg.ports.clone(),
        ..Capture::default()
    };
    let mut links: Vec<Link> = Vec::new();
    for id in &wanted {
        match prog_of!(skel.progs, *id).attach() {
            Ok(l) => {
                links.push(l);
                capture.attached.push(id.tracepoint().to_string());
            }
            Err(e) => {
                capture
                    .skipped
                    .insert(id.tracepoint().to_string(), format!("{e:#}"));
            }
        }
    }
    if links.is_empty() && !wanted.is_empty() {
        let why: Vec<String> = capture
            .skipped
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        return Err(ProbeError::Unsupported(format!(
            "no probe could be attached ({})",
            why.join("; ")
        )));
    }

    let records = RefCell::new(RecordBuffer::new());
    let mut rb = RingBufferBuilder::new();
    rb.add(&skel.maps.events, |data: &[u8]| {
        records.borrow_mut().push(data);
        0
    })
    .map_err(|e| ProbeError::bpf("reading the ring buffer", e))?;
    let rb = rb
        .build()
        .map_err(|e| ProbeError::bpf("reading the ring buffer", e))?;

    let t0 = Instant::now();
    let _ = ready.send(());
    while !stop.load(Ordering::Relaxed) {
        // Records are submitted without wake-ups (cheaper in the kernel);
        // draining every few milliseconds keeps the buffer far from full.
        std::thread::sleep(Duration::from_millis(5));
        rb.consume()
            .map_err(|e| ProbeError::bpf("reading the ring buffer", e))?;
        records.borrow_mut().refill();
    }
    // Stop writing first: programs check the flag after taking a nesting
    // level, so once it is clear and every CPU's levels are free, no
    // program is writing a record or a batch.
    if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
        bss.enabled = 0;
    }
    capture.attached_s = t0.elapsed().as_secs_f64();
    // Wait up to a second for every level to be free; programs take
    // microseconds, so the last snapshot is kept even if one never was.
    let mut partial = PartialBatches::default();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(20));
        partial = PartialBatches::read(&skel.maps.batch)?;
        if partial.quiet {
            break;
        }
    }
    // Every batch output before that is committed: drain until all arrived
    // (or a second has passed).
    capture.flushed = percpu_sum(&skel.maps.flushed, 0)?;
    for _ in 0..50 {
        rb.consume()
            .map_err(|e| ProbeError::bpf("reading the ring buffer", e))?;
        if records.borrow().len() as u64 >= capture.flushed {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(rb);
    capture.lost = per_probe(&skel.maps.lost, &wanted)?;
    capture.missed = recursion_misses(&skel, &wanted);
    let records = records.into_inner();
    capture.from_ring = records.len() as u64;
    capture.from_batches = (partial.records.len() / crate::EVENT_SIZE) as u64;
    let mut raw = records.into_bytes();
    raw.extend_from_slice(&partial.records);
    capture.raw = sort_by_time(&raw);
    capture.written = per_probe_counts(&capture.raw, &wanted);
    drop(links);
    Ok(capture)
}

/// The program behind each probe, by its name in `path.bpf.c`.
fn program_name(id: ProbeId) -> &'static str {
    match id {
        ProbeId::SendApp => "send_app",
        ProbeId::TcpSendmsg => "tcp_sendmsg",
        ProbeId::DevQueue => "dev_queue",
        ProbeId::QdiscEnqueue => "qdisc_enq",
        ProbeId::QdiscDequeue => "qdisc_deq",
        ProbeId::DevStartXmit => "dev_start_xmit",
        ProbeId::DevXmit => "dev_xmit",
        ProbeId::NetifReceive => "netif_receive",
        ProbeId::TcpProbe => "tcp_probe",
        ProbeId::SkDataReady => "data_ready",
        ProbeId::RecvApp => "recv_app",
        ProbeId::RcvSpace => "rcv_space",
        ProbeId::Retransmit => "retransmit",
        ProbeId::SchedSwitch => "sched_switch",
    }
}

/// The kernel's count of skipped nested invocations per probe, for the
/// programs of this session (those that use its ring buffer).
fn recursion_misses(skel: &PathSkel, wanted: &BTreeSet<ProbeId>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(events) = skel.maps.events.info() else {
        return out;
    };
    let events_id = events.info.id;
    let opts = ProgInfoQueryOptions::default().include_map_ids(true);
    for p in ProgInfoIter::with_query_opts(opts) {
        if !p.map_ids.contains(&events_id) {
            continue;
        }
        let name = p.name.to_string_lossy();
        if let Some(id) = wanted.iter().find(|id| program_name(**id) == name) {
            out.insert(id.tracepoint().to_string(), p.recursion_misses);
        }
    }
    out
}

/// Layout of `struct batches` in `path.bpf.c`: records per batch, nesting
/// levels, and the bytes before the first record.
const BATCH: usize = 32;
const NEST: usize = 4;
const BATCH_HEADER: usize = 32;

/// The per-CPU batches as read at the end of a session.
#[derive(Default)]
struct PartialBatches {
    /// No CPU had a nesting level in use: no program was writing.
    quiet: bool,
    /// The records waiting in every CPU's batches.
    records: Vec<u8>,
}

impl PartialBatches {
    fn read(map: &dyn MapCore) -> Result<PartialBatches, ProbeError> {
        let per_cpu = map
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ProbeError::bpf("reading the record batches", e))?
            .unwrap_or_default();
        let word = |v: &[u8], at: usize| {
            v.get(at..at + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])) as usize)
                .unwrap_or(0)
        };
        let mut out = PartialBatches {
            quiet: true,
            records: Vec::new(),
        };
        for v in &per_cpu {
            if word(v, 0) != 0 {
                out.quiet = false;
            }
            for level in 0..NEST {
                let n = word(v, 4 + 4 * level).min(BATCH);
                let start = BATCH_HEADER + level * BATCH * crate::EVENT_SIZE;
                if let Some(recs) = v.get(start..start + n * crate::EVENT_SIZE) {
                    out.records.extend_from_slice(recs);
                }
            }
        }
        Ok(out)
    }
}

/// Records reordered by timestamp (stable): batches arrive per CPU and
/// nesting level, not in the order the records were written.
fn sort_by_time(raw: &[u8]) -> Vec<u8> {
    let mut recs: Vec<&[u8]> = raw.chunks_exact(crate::EVENT_SIZE).collect();
    recs.sort_by_key(|r| u64::from_ne_bytes(r[..8].try_into().unwrap_or([0; 8])));
    recs.concat()
}

/// Records per probe, by tracepoint name, for the probes of the session.
fn per_probe_counts(raw: &[u8], wanted: &BTreeSet<ProbeId>) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = wanted
        .iter()
        .map(|id| (id.tracepoint().to_string(), 0))
        .collect();
    for e in crate::decode_all(raw) {
        *out.entry(e.probe_id().tracepoint().to_string())
            .or_default() += 1;
    }
    out
}

/// One per-CPU counter array read out per probe, by tracepoint name.
fn per_probe(
    map: &dyn MapCore,
    wanted: &BTreeSet<ProbeId>,
) -> Result<BTreeMap<String, u64>, ProbeError> {
    wanted
        .iter()
        .map(|id| Ok((id.tracepoint().to_string(), percpu_sum(map, *id as u32)?)))
        .collect()
}

/// Sums one slot of a per-CPU array of u64 counters.
fn percpu_sum(map: &dyn MapCore, key: u32) -> Result<u64, ProbeError> {
    let vals = map
        .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| ProbeError::bpf("reading probe counters", e))?
        .unwrap_or_default();
    Ok(vals
        .iter()
        .filter_map(|v| v.get(..8))
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
        .sum())
}
