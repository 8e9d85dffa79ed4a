//! `--probe`: tcplab's eBPF probes attached to the data phase of each trial,
//! their records stored with the trial and summarised in its details.

use crate::usage::usage;
use engine::TrialObserver;
use probe::{
    Capture, CpuSampler, ProbeConfig, ProbeDepth, ProbeGroup, ProbeSession, SamplerConfig,
    DEFAULT_PERIOD_NS, DEFAULT_RING_BYTES,
};
use record::{CpuProfile, EventBlob, ThreadRole, TrialOutcome, TrialParams};
use serde_json::json;
use std::collections::BTreeSet;

/// What `--probe` (and `--sample-hz`) asked for.
#[derive(Debug, Clone)]
pub struct ProbeSet {
    /// The probe groups.
    pub groups: BTreeSet<ProbeGroup>,
    /// The CPU sampler's period per CPU, ns (`cpu` group only).
    pub period_ns: u64,
    /// How far the programs go (`--probe-depth`; full unless measuring
    /// what probing costs).
    pub depth: ProbeDepth,
    /// What each trial keeps on disk (`--probe-keep`).
    pub keep: ProbeKeep,
}

/// What a probed trial keeps on disk (`--probe-keep`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProbeKeep {
    /// Every probe record, and the CPU samples.
    #[default]
    All,
    /// The path analysis derived from the records (hop histograms, queue
    /// series, packet classes, time–sequence series, thread times) in
    /// place of the records, and the CPU samples.
    Summary,
}

impl ProbeKeep {
    /// The name stored in each trial's probe details.
    fn name(self) -> &'static str {
        match self {
            ProbeKeep::All => "all",
            ProbeKeep::Summary => sections::path_source::SUMMARY_KEEP,
        }
    }
}

/// The error for `--probe-keep` without `--probe`.
pub const KEEP_NEEDS_PROBE: &str = "--probe-keep applies only with --probe";

/// The error for `--sample-hz` without the `cpu` group.
pub const SAMPLE_HZ_NEEDS_CPU: &str = "--sample-hz applies only with --probe cpu (or all)";

/// The error for `--probe-depth` without `--probe`.
pub const DEPTH_NEEDS_PROBE: &str = "--probe-depth applies only with --probe";

/// Slowest and fastest `--sample-hz` (the sampler refuses periods under 10 µs).
const SAMPLE_HZ_RANGE: std::ops::RangeInclusive<u32> = 100..=100_000;

/// What this kernel cannot give, said once in every trial's probe details.
const NO_FENTRY: &str = "tracepoints and raw tracepoints only: this build does not use \
    kprobes or fentry/fexit, so function durations are not measured directly \
    (this development kernel refuses both); the records give the time between probe points";

/// Parses `--probe` (and `--sample-hz`, which needs the `cpu` group) and
/// checks, once, that this kernel and process can load and attach the
/// programs at `depth`: a one-line explanation (exit 2) if not.
pub fn prepare(
    spec: &str,
    sample_hz: Option<u32>,
    depth: ProbeDepth,
    keep: ProbeKeep,
) -> anyhow::Result<ProbeSet> {
    let groups = probe::parse_groups(spec).map_err(usage)?;
    let period_ns = match sample_hz {
        None => DEFAULT_PERIOD_NS,
        Some(_) if !groups.contains(&ProbeGroup::Cpu) => {
            return Err(usage(SAMPLE_HZ_NEEDS_CPU));
        }
        Some(hz) if !SAMPLE_HZ_RANGE.contains(&hz) => {
            return Err(usage(format!(
                "--sample-hz must be {}..={}, got {hz}",
                SAMPLE_HZ_RANGE.start(),
                SAMPLE_HZ_RANGE.end()
            )));
        }
        Some(hz) => 1_000_000_000 / u64::from(hz),
    };
    let set = ProbeSet {
        groups,
        period_ns,
        depth,
        keep,
    };
    if has_tracepoints(&set.groups) {
        // A filter on port 0 matches no real flow: load and attach, then detach.
        let check = ProbeSession::start(ProbeConfig {
            groups: set.groups.clone(),
            ports: vec![0],
            tgid: 0,
            ring_bytes: 1 << 16,
            depth,
        })
        .map_err(|e| usage(format!("--probe {spec}: {e}")))?;
        check
            .stop()
            .map_err(|e| usage(format!("--probe {spec}: {e}")))?;
    }
    if set.groups.contains(&ProbeGroup::Cpu) {
        let check = CpuSampler::start(sampler_config(&set))
            .map_err(|e| usage(format!("--probe cpu: {e}")))?;
        check
            .stop()
            .map_err(|e| usage(format!("--probe cpu: {e}")))?;
    }
    Ok(set)
}

/// Whether any chosen group has tracepoint probes (all but `cpu`).
fn has_tracepoints(groups: &BTreeSet<ProbeGroup>) -> bool {
    groups.iter().any(|g| !g.probes().is_empty())
}

/// The sampler of `--probe cpu`: this process, every CPU, one sample per
/// `period_ns` (10 kHz unless `--sample-hz` says otherwise).
fn sampler_config(set: &ProbeSet) -> SamplerConfig {
    SamplerConfig {
        tgid: std::process::id(),
        period_ns: set.period_ns,
        depth: set.depth,
    }
}

/// Attaches the probes for one trial at a time.
pub struct ProbeObserver {
    probes: ProbeSet,
    session: Option<ProbeSession>,
    sampler: Option<CpuSampler>,
}

impl ProbeObserver {
    /// An observer for `probes`.
    pub fn new(probes: ProbeSet) -> ProbeObserver {
        ProbeObserver {
            probes,
            session: None,
            sampler: None,
        }
    }
}

impl TrialObserver for ProbeObserver {
    fn start(&mut self, _p: &TrialParams, ports: &[u16]) -> Result<(), String> {
        if has_tracepoints(&self.probes.groups) {
            let cfg = ProbeConfig {
                groups: self.probes.groups.clone(),
                ports: ports.to_vec(),
                tgid: std::process::id(),
                ring_bytes: DEFAULT_RING_BYTES,
                depth: self.probes.depth,
            };
            self.session = Some(ProbeSession::start(cfg).map_err(|e| e.to_string())?);
        }
        if self.probes.groups.contains(&ProbeGroup::Cpu) {
            let cfg = sampler_config(&self.probes);
            self.sampler = Some(CpuSampler::start(cfg).map_err(|e| e.to_string())?);
        }
        Ok(())
    }

    fn finish(&mut self, o: &mut TrialOutcome) -> Result<(), String> {
        let sampled = match self.sampler.take() {
            Some(s) => {
                let raised = s.raised_rate_ceiling_from();
                let (profile, _) = s.stop().map_err(|e| e.to_string())?;
                Some((profile, raised))
            }
            None => None,
        };
        let cap = match self.session.take() {
            Some(s) => Some(s.stop().map_err(|e| e.to_string())?),
            None => None,
        };
        o.details["probe"] = json!({
            "groups": self.probes.groups.iter().map(|g| g.name()).collect::<Vec<_>>(),
            "depth": self.probes.depth.name(),
            "note": NO_FENTRY,
        });
        let attached_s = cap.as_ref().map(|c| c.attached_s);
        if let Some(cap) = cap {
            record_capture(cap, self.probes.depth, o);
        }
        // Short of full depth the sampler walked no stack: its profile is
        // empty and would read as a trial that used no CPU.
        if let Some((profile, raised)) = sampled.filter(|_| self.probes.depth == ProbeDepth::Full) {
            record_profile(profile, raised, o);
        }
        if self.probes.keep == ProbeKeep::Summary {
            keep_summary_only(o)?;
        }
        record_storage(o, self.probes.keep, attached_s);
        Ok(())
    }

    fn abort(&mut self) {
        self.session = None;
        self.sampler = None;
    }
}

/// Adds CPU samples to a trial, with the engine's sender and receiver
/// threads named as such.
fn record_profile(mut p: CpuProfile, raised_from: Option<u64>, o: &mut TrialOutcome) {
    for (role, key) in [
        (ThreadRole::Sender, "sender"),
        (ThreadRole::Receiver, "receiver"),
    ] {
        let tids: Vec<u32> = o.details["tids"][key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_u64())
                    .map(|v| v as u32)
                    .collect()
            })
            .unwrap_or_default();
        for t in p.threads.iter_mut().filter(|t| tids.contains(&t.tid)) {
            t.role = role;
        }
    }
    let samples = p.total_samples();
    o.metrics.insert("probe_cpu_samples".into(), samples as f64);
    o.metrics.insert("probe_cpu_coverage".into(), p.coverage());
    o.details["probe"]["cpu"] = json!({
        "period_ns": p.period_ns,
        "cpus": p.cpus,
        "samples": samples,
        "coverage": p.coverage(),
        "lost_samples": p.lost_samples,
        "broken_stacks": p.broken_stacks,
        "sample_rate_ceiling_raised_from": raised_from,
    });
    o.profile = Some(p);
}

/// Adds a capture to a trial: counts as metrics, the summary as details,
/// the records as the trial's event blob (none short of full depth, where
/// nothing was recorded: an empty blob would read as a trial whose flow
/// sent nothing).
fn record_capture(mut cap: Capture, depth: ProbeDepth, o: &mut TrialOutcome) {
    o.metrics.insert("probe_records".into(), cap.count() as f64);
    o.metrics
        .insert("probe_lost".into(), cap.total_lost() as f64);
    let d = &mut o.details["probe"];
    d["event_version"] = json!(probe::EVENT_VERSION);
    d["ports"] = json!(cap.ports);
    d["attached"] = json!(cap.attached);
    d["skipped"] = json!(cap.skipped);
    d["written"] = json!(cap.written);
    d["flushed"] = json!(cap.flushed);
    d["from_ring"] = json!(cap.from_ring);
    d["from_batches"] = json!(cap.from_batches);
    d["lost"] = json!(cap.lost);
    d["missed"] = json!(cap.missed);
    d["attached_s"] = json!(cap.attached_s);
    if depth != ProbeDepth::Full {
        return;
    }
    o.events = Some(EventBlob {
        version: probe::EVENT_VERSION,
        record_size: probe::EVENT_SIZE as u32,
        data: std::mem::take(&mut cap.raw),
    });
}

/// `--probe-keep summary`: the path analysis of the trial's records, at its
/// sender's MSS as the reports analyse it, replaces the records.
fn keep_summary_only(o: &mut TrialOutcome) -> Result<(), String> {
    let Some(blob) = o.events.take() else {
        return Ok(());
    };
    let events = record::probe_event::decode_all(&blob.data);
    let mss = analysis::path::sender_mss(&o.metrics);
    let analysis = analysis::path::analyse_with_mss(&events, mss);
    o.path_summary = Some(serde_json::to_string(&analysis).map_err(|e| e.to_string())?);
    Ok(())
}

/// What the trial stores of its probing, in its details (`probe.stored`)
/// and as the `probe_stored_bytes` metric: records taken, bytes of records,
/// path summary and CPU samples kept, and the seconds the probes ran.
fn record_storage(o: &mut TrialOutcome, keep: ProbeKeep, attached_s: Option<f64>) {
    let records = o.metrics.get("probe_records").copied().unwrap_or(0.0);
    let record_bytes = o.events.as_ref().map_or(0, |b| b.data.len());
    let summary_bytes = o.path_summary.as_ref().map_or(0, String::len);
    let profile_bytes = o
        .profile
        .as_ref()
        .and_then(|p| serde_json::to_string(p).ok())
        .map_or(0, |j| j.len());
    let probed_s = attached_s.or_else(|| o.profile.as_ref().map(|p| p.duration_s));
    let bytes = record_bytes + summary_bytes + profile_bytes;
    o.metrics.insert("probe_stored_bytes".into(), bytes as f64);
    o.details["probe"]["keep"] = json!(keep.name());
    o.details["probe"]["stored"] = json!({
        "records": records,
        "bytes": bytes,
        "record_bytes": record_bytes,
        "summary_bytes": summary_bytes,
        "profile_bytes": profile_bytes,
        "probed_s": probed_s,
    });
}
