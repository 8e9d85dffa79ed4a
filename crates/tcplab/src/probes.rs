//! `--probe`: tcplab's eBPF probes attached to the data phase of each trial,
//! their records stored with the trial and summarised in its details.

use crate::usage::usage;
use engine::TrialObserver;
use probe::{Capture, ProbeConfig, ProbeGroup, ProbeSession, DEFAULT_RING_BYTES};
use record::{EventBlob, TrialOutcome, TrialParams};
use serde_json::json;
use std::collections::BTreeSet;

/// The groups `--probe` asked for.
pub type ProbeSet = BTreeSet<ProbeGroup>;

/// What this kernel cannot give, said once in every trial's probe details.
const NO_FENTRY: &str = "tracepoints and raw tracepoints only: this build does not use \
    kprobes or fentry/fexit, so function durations are not measured directly \
    (this development kernel refuses both); the records give the time between probe points";

/// Parses `--probe` and checks, once, that this kernel and process can load
/// and attach the programs: a one-line explanation (exit 2) if not.
pub fn prepare(spec: &str) -> anyhow::Result<ProbeSet> {
    let mut groups = probe::parse_groups(spec).map_err(usage)?;
    // `all` means every group this build has.
    if spec.split(',').any(|s| s.trim() == "all") {
        groups.remove(&ProbeGroup::Cpu);
    }
    if groups.contains(&ProbeGroup::Cpu) {
        return Err(usage(
            "--probe cpu: sampling CPU attribution is not built yet; use queues, tcp or sched",
        ));
    }
    // A filter on port 0 matches no real flow: load and attach, then detach.
    let check = ProbeSession::start(ProbeConfig {
        groups: groups.clone(),
        ports: vec![0],
        tgid: 0,
        ring_bytes: 1 << 16,
    })
    .map_err(|e| usage(format!("--probe {spec}: {e}")))?;
    check
        .stop()
        .map_err(|e| usage(format!("--probe {spec}: {e}")))?;
    Ok(groups)
}

/// Attaches the probes for one trial at a time.
pub struct ProbeObserver {
    groups: ProbeSet,
    session: Option<ProbeSession>,
}

impl ProbeObserver {
    /// An observer for `groups`.
    pub fn new(groups: ProbeSet) -> ProbeObserver {
        ProbeObserver {
            groups,
            session: None,
        }
    }
}

impl TrialObserver for ProbeObserver {
    fn start(&mut self, _p: &TrialParams, ports: &[u16]) -> Result<(), String> {
        let cfg = ProbeConfig {
            groups: self.groups.clone(),
            ports: ports.to_vec(),
            tgid: std::process::id(),
            ring_bytes: DEFAULT_RING_BYTES,
        };
        self.session = Some(ProbeSession::start(cfg).map_err(|e| e.to_string())?);
        Ok(())
    }

    fn finish(&mut self, o: &mut TrialOutcome) -> Result<(), String> {
        let session = self.session.take().ok_or("probes were not started")?;
        let cap = session.stop().map_err(|e| e.to_string())?;
        record_capture(&self.groups, cap, o);
        Ok(())
    }

    fn abort(&mut self) {
        self.session = None;
    }
}

/// Adds a capture to a trial: counts as metrics, the summary as details,
/// the records as the trial's event blob.
fn record_capture(groups: &ProbeSet, mut cap: Capture, o: &mut TrialOutcome) {
    o.metrics.insert("probe_records".into(), cap.count() as f64);
    o.metrics
        .insert("probe_lost".into(), cap.total_lost() as f64);
    o.details["probe"] = json!({
        "groups": groups.iter().map(|g| g.name()).collect::<Vec<_>>(),
        "event_version": probe::EVENT_VERSION,
        "ports": cap.ports,
        "attached": cap.attached,
        "skipped": cap.skipped,
        "written": cap.written,
        "lost": cap.lost,
        "missed": cap.missed,
        "attached_s": cap.attached_s,
        "note": NO_FENTRY,
    });
    o.events = Some(EventBlob {
        version: probe::EVENT_VERSION,
        record_size: probe::EVENT_SIZE as u32,
        data: std::mem::take(&mut cap.raw),
    });
}
