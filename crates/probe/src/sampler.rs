//! The CPU sampler of `--probe cpu`: a perf event on every online CPU (PMU
//! cycles at a fixed frequency, else the cpu-clock timer at a fixed period)
//! runs `profile.bpf.c`, which counts each sample under its thread and
//! stacks in the kernel. Stopping reads the counts and the stacks and
//! symbolizes them into a [`CpuProfile`].

use crate::depth::ProbeDepth;
use crate::error::ProbeError;
use crate::raw_profile::{RawProfile, RawSample};
use crate::skel::profile::{ProfileSkel, ProfileSkelBuilder};
use crate::symbols::symbolize;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags};
use perf_event_open_sys as sys;
use record::CpuProfile;
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Default sampling period: 100 µs of CPU clock, 10 kHz per CPU.
pub const DEFAULT_PERIOD_NS: u64 = 100_000;

/// Deepest stack the BPF side keeps (`MAX_FRAMES` in `profile.h`).
const MAX_FRAMES: usize = 127;

/// The kernel stack id that marks time no sample hit (`E_UNSAMPLED`).
const UNSAMPLED: i32 = 1000;

/// The kernel's ceiling on samples per second, which throttles any sampling
/// event above it (the kernel lowers it by itself when perf interrupts are
/// slow, as on many VMs).
const MAX_RATE_SYSCTL: &str = "/proc/sys/kernel/perf_event_max_sample_rate";

/// What to sample.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// The experiment's process: its threads keep user stacks too.
    pub tgid: u32,
    /// CPU clock between samples on each CPU, ns.
    pub period_ns: u64,
    /// How far the programs go (anything but full samples nothing).
    pub depth: ProbeDepth,
}

/// Sampling for the life of the value; [`CpuSampler::stop`] returns it.
pub struct CpuSampler {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<Result<RawProfile, ProbeError>>>,
    /// `Some(old)` when the sample-rate ceiling was raised for the session.
    raised_from: Option<u64>,
}

impl CpuSampler {
    /// Opens the perf events, loads and attaches the program; returns once
    /// sampling runs.
    pub fn start(cfg: SamplerConfig) -> Result<CpuSampler, ProbeError> {
        if cfg.period_ns < 10_000 {
            return Err(ProbeError::Unsupported(format!(
                "a sampling period of {} ns is below the 10 µs tcplab allows",
                cfg.period_ns
            )));
        }
        libbpf_rs::set_print(None);
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tcplab-sampler".into())
            .spawn(move || run(cfg, ready_tx, stop_rx))
            .map_err(|e| ProbeError::Thread(e.to_string()))?;
        let mut s = CpuSampler {
            stop: Some(stop_tx),
            thread: Some(thread),
            raised_from: None,
        };
        match ready_rx.recv() {
            Ok(raised_from) => s.raised_from = raised_from,
            Err(_) => {
                return Err(s
                    .join()
                    .err()
                    .unwrap_or_else(|| ProbeError::Thread("stopped before sampling".into())))
            }
        }
        Ok(s)
    }

    /// Stops sampling and returns the symbolized profile.
    pub fn stop(mut self) -> Result<(CpuProfile, RawProfile), ProbeError> {
        let raw = self.join()?;
        let profile = symbolize(&raw);
        Ok((profile, raw))
    }

    /// The sample-rate ceiling before this session raised it, if it did.
    pub fn raised_rate_ceiling_from(&self) -> Option<u64> {
        self.raised_from
    }

    fn join(&mut self) -> Result<RawProfile, ProbeError> {
        self.stop.take();
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| ProbeError::Thread("sampler panicked".into()))?,
            None => Err(ProbeError::Thread("already stopped".into())),
        }
    }
}

impl Drop for CpuSampler {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

/// Samplers running in this process, and the ceiling found before the
/// first of them raised it (restored when the last one stops).
static RAISED: std::sync::Mutex<(u32, Option<u64>)> = std::sync::Mutex::new((0, None));

/// One sampler's share of a raised `kernel.perf_event_max_sample_rate`:
/// acquiring raises the ceiling to twice the rate asked for if it is lower,
/// so the kernel neither refuses nor throttles the sampler; dropping the
/// last share restores the value found before the first.
struct RateCeiling {
    /// The ceiling before any sampler of this process raised it.
    raised_from: Option<u64>,
}

impl RateCeiling {
    fn acquire(rate: u64) -> Result<RateCeiling, ProbeError> {
        let mut g = RAISED.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(text) = std::fs::read_to_string(MAX_RATE_SYSCTL) else {
            g.0 += 1;
            return Ok(RateCeiling { raised_from: g.1 });
        };
        let now: u64 = text.trim().parse().unwrap_or(0);
        let want = rate * 2;
        if now < want {
            if let Err(e) = std::fs::write(MAX_RATE_SYSCTL, want.to_string()) {
                return Err(ProbeError::Unsupported(format!(
                    "kernel.perf_event_max_sample_rate is {now}, below the {rate} samples/s \
                     per CPU asked for, and raising it failed: {e}"
                )));
            }
            if g.1.is_none() {
                g.1 = Some(now);
            }
        }
        g.0 += 1;
        Ok(RateCeiling { raised_from: g.1 })
    }
}

impl Drop for RateCeiling {
    fn drop(&mut self) {
        let mut g = RAISED.lock().unwrap_or_else(|e| e.into_inner());
        g.0 = g.0.saturating_sub(1);
        if g.0 == 0 {
            if let Some(old) = g.1.take() {
                let _ = std::fs::write(MAX_RATE_SYSCTL, old.to_string());
            }
        }
    }
}

/// The event that drives the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleClock {
    /// CPU cycles from the PMU: counts only while a CPU executes, so bursts
    /// of work are sampled in proportion to their cycles (perf's default).
    Cycles,
    /// The cpu-clock software timer: used where there is no PMU (many VMs).
    /// On a VM its timer fires late when the CPU was halted, so threads that
    /// wake often are sampled at their wake-up more than elsewhere; the
    /// time weighting keeps their totals exact but not their shares.
    CpuClock,
}

impl SampleClock {
    /// perf's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            SampleClock::Cycles => "cycles",
            SampleClock::CpuClock => "cpu-clock",
        }
    }
}

/// A sampling event on one CPU, all tasks, in frequency mode: for cycles
/// the kernel retunes the period so a busy CPU is sampled `1/period_ns`
/// times a second whatever its clock rate (a fixed cycle count undershoots
/// on a VM whose stated MHz is not what the guest gets); for cpu-clock it
/// turns the frequency into that fixed period.
fn open_sampling_event(cpu: i32, period_ns: u64, clock: SampleClock) -> std::io::Result<OwnedFd> {
    let (type_, config) = match clock {
        SampleClock::Cycles => (
            sys::bindings::PERF_TYPE_HARDWARE,
            sys::bindings::PERF_COUNT_HW_CPU_CYCLES as u64,
        ),
        SampleClock::CpuClock => (
            sys::bindings::PERF_TYPE_SOFTWARE,
            sys::bindings::PERF_COUNT_SW_CPU_CLOCK as u64,
        ),
    };
    let mut attr = sys::bindings::perf_event_attr {
        size: std::mem::size_of::<sys::bindings::perf_event_attr>() as u32,
        type_,
        config,
        ..Default::default()
    };
    attr.__bindgen_anon_1.sample_freq = 1_000_000_000 / period_ns;
    attr.set_freq(1);
    // SAFETY: attr is a valid, initialised perf_event_attr.
    let fd = unsafe {
        sys::perf_event_open(
            &mut attr,
            -1,
            cpu,
            -1,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// CPUs listed in /sys/devices/system/cpu/online ("0-3,5").
fn online_cpus() -> Vec<i32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|s| !s.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
            out.extend(a..=b);
        }
    }
    if out.is_empty() {
        out.push(0);
    }
    out
}

fn run(
    cfg: SamplerConfig,
    ready: mpsc::Sender<Option<u64>>,
    stop: mpsc::Receiver<()>,
) -> Result<RawProfile, ProbeError> {
    let mut storage = MaybeUninit::uninit();
    let mut open = ProfileSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| ProbeError::bpf("opening the sampler's BPF object", e))?;
    {
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| ProbeError::Thread("sampler BPF object has no rodata".into()))?;
        ro.filter_tgid = cfg.tgid;
        ro.depth = cfg.depth.code();
        // SAFETY: gettid has no preconditions.
        ro.ignore_tid = unsafe { libc::gettid() } as u32;
    }
    let mut skel: ProfileSkel = open
        .load()
        .map_err(|e| ProbeError::bpf("loading the sampler", e))?;
    // Raised once the program is known to load (a privilege problem is
    // reported as such, not as a sysctl that could not be written), and
    // before the events open: the kernel refuses a frequency above it.
    let ceiling = RateCeiling::acquire(1_000_000_000 / cfg.period_ns)?;
    let mut cpus = 0u32;
    // The switch hook first: samples are weighted by the time since the
    // running thread was switched in.
    let mut links: Vec<Link> = vec![skel
        .progs
        .switch_out
        .attach()
        .map_err(|e| ProbeError::bpf("attaching the sampler's sched_switch hook", e))?];
    let cpus_online = online_cpus();
    let first = cpus_online.first().copied().unwrap_or(0);
    let clock = match open_sampling_event(first, cfg.period_ns, SampleClock::Cycles) {
        Ok(_) => SampleClock::Cycles,
        Err(_) => SampleClock::CpuClock,
    };
    for cpu in cpus_online {
        let fd = open_sampling_event(cpu, cfg.period_ns, clock).map_err(|e| {
            ProbeError::Unsupported(format!(
                "perf_event_open({}) on CPU {cpu} failed: {e} (sampling needs root or \
                 CAP_PERFMON, and a kernel with CONFIG_PERF_EVENTS)",
                clock.name()
            ))
        })?;
        use std::os::fd::{AsRawFd, IntoRawFd};
        let link = skel
            .progs
            .sample
            .attach_perf_event(fd.as_raw_fd())
            .map_err(|e| ProbeError::bpf("attaching the sampler to perf events", e))?;
        // The link owns the event from here: libbpf closes it on detach.
        let _ = fd.into_raw_fd();
        links.push(link);
        cpus += 1;
    }
    skel.maps
        .bss_data
        .as_deref_mut()
        .ok_or_else(|| ProbeError::Thread("sampler BPF object has no bss".into()))?
        .enabled = 1;
    let t0 = Instant::now();
    let stat0 = CpuStat::now();
    let _ = ready.send(ceiling.raised_from);
    // Block until stopped (the sender is dropped).
    let _ = stop.recv();
    if let Some(bss) = skel.maps.bss_data.as_deref_mut() {
        bss.enabled = 0;
    }
    let duration_s = t0.elapsed().as_secs_f64();
    let stat1 = CpuStat::now();
    drop(links);
    let mut raw = read_maps(&skel)?;
    raw.period_ns = cfg.period_ns;
    raw.cpus = cpus;
    raw.clock = clock.name().to_string();
    raw.duration_s = duration_s;
    raw.tgid = cfg.tgid;
    raw.busy_s = stat1.busy_s - stat0.busy_s;
    raw.idle_s = stat1.idle_s - stat0.idle_s;
    Ok(raw)
}

/// The host's summed CPU time from the `cpu` line of /proc/stat.
struct CpuStat {
    busy_s: f64,
    idle_s: f64,
}

impl CpuStat {
    fn now() -> CpuStat {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let f: Vec<f64> = text
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap_or(0.0))
            .collect();
        let at = |i: usize| f.get(i).copied().unwrap_or(0.0) / hz;
        // user nice system idle iowait irq softirq steal
        CpuStat {
            busy_s: at(0) + at(1) + at(2) + at(5) + at(6),
            idle_s: at(3) + at(4),
        }
    }
}

/// Reads the counts, their stacks, the thread names and the trouble counters.
fn read_maps(skel: &ProfileSkel) -> Result<RawProfile, ProbeError> {
    let mut stacks: HashMap<i32, Vec<u64>> = HashMap::new();
    let mut stack_of = |id: i32| -> Vec<u64> {
        if id < 0 {
            return Vec::new();
        }
        stacks
            .entry(id)
            .or_insert_with(|| {
                skel.maps
                    .stacks
                    .lookup(&(id as u32).to_ne_bytes(), MapFlags::ANY)
                    .ok()
                    .flatten()
                    .map(|v| frames(&v))
                    .unwrap_or_default()
            })
            .clone()
    };
    let mut out = RawProfile::default();
    for key in skel.maps.counts.keys() {
        if key.len() < 24 {
            continue;
        }
        let word = |i: usize| u32::from_ne_bytes(key[i..i + 4].try_into().unwrap_or([0; 4]));
        let Some(val) = skel
            .maps
            .counts
            .lookup(&key, MapFlags::ANY)
            .map_err(|e| ProbeError::bpf("reading sample counts", e))?
        else {
            continue;
        };
        let u64_at = |i: usize| {
            u64::from_ne_bytes(
                val.get(i..i + 8)
                    .and_then(|b| b.try_into().ok())
                    .unwrap_or([0; 8]),
            )
        };
        let kstack = word(8) as i32;
        out.samples.push(RawSample {
            tid: word(0),
            tgid: word(4),
            kernel: stack_of(kstack),
            user: match u64::from_ne_bytes(key[16..24].try_into().unwrap_or([0; 8])) {
                0 => Vec::new(),
                ip => vec![ip],
            },
            count: u64_at(0),
            ns: u64_at(8),
            unsampled: kstack == -UNSAMPLED,
        });
    }
    for key in skel.maps.comms.keys() {
        let Ok(Some(v)) = skel.maps.comms.lookup(&key, MapFlags::ANY) else {
            continue;
        };
        let tid = u32::from_ne_bytes(
            key.get(..4)
                .and_then(|b| b.try_into().ok())
                .unwrap_or([0; 4]),
        );
        let end = v.iter().position(|b| *b == 0).unwrap_or(v.len());
        out.comms
            .insert(tid, String::from_utf8_lossy(&v[..end]).into_owned());
    }
    for key in skel.maps.times.keys() {
        let Ok(Some(v)) = skel.maps.times.lookup(&key, MapFlags::ANY) else {
            continue;
        };
        let at = |b: &[u8], i: usize| {
            u64::from_ne_bytes(
                b.get(i..i + 8)
                    .and_then(|b| b.try_into().ok())
                    .unwrap_or([0; 8]),
            )
        };
        let tid = u32::from_ne_bytes(
            key.get(..4)
                .and_then(|b| b.try_into().ok())
                .unwrap_or([0; 4]),
        );
        out.stints.insert(tid, (at(&v, 0), at(&v, 8)));
    }
    out.lost = percpu_slot(&skel.maps.trouble, 0)?;
    out.broken = percpu_slot(&skel.maps.trouble, 1)?;
    Ok(out)
}

/// The non-zero frames of a stack-map value.
fn frames(v: &[u8]) -> Vec<u64> {
    v.chunks_exact(8)
        .take(MAX_FRAMES)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
        .take_while(|a| *a != 0)
        .collect()
}

fn percpu_slot(map: &dyn MapCore, key: u32) -> Result<u64, ProbeError> {
    let vals = map
        .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
        .map_err(|e| ProbeError::bpf("reading sampler counters", e))?
        .unwrap_or_default();
    Ok(vals
        .iter()
        .filter_map(|v| v.get(..8))
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
        .sum())
}
