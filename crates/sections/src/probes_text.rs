//! What `tcplab probes` prints: a run's probed trials read back (probe
//! records and CPU samples), each trial's path as text with its CPU text,
//! the run's function block table and fits; or all of it as JSON.

use crate::cpu_text::{run_text, trial_text};
use crate::path_source::{load_path_source, PathSource};
use crate::SectionsError;
use analysis::path::PathAnalysis;
use analysis::trial_cost::{run_fits, trial_cpu, TrialCpu};
use record::{Store, StoredEventsError, StoredRun, TrialRecord};
use serde_json::{json, Value};

/// A run's probed trials read back: their probe records (or the path
/// analysis kept in their place) and their CPU samples' costs.
#[derive(Debug)]
pub struct ProbedTrials<'a> {
    /// Trials with probe records or a kept path analysis, in trial order.
    pub probed: Vec<(&'a TrialRecord, PathSource)>,
    /// Trials with CPU samples, grouped by point (plan order, then trial).
    pub sampled: Vec<TrialCpu>,
}

impl<'a> ProbedTrials<'a> {
    /// Reads the probe records (or the path analyses kept in their place)
    /// and CPU samples of `run`'s trials (only trial `seq` when given).
    /// Records in another layout are an error naming the trial.
    pub fn load(
        store: &Store,
        run: &'a StoredRun,
        seq: Option<u32>,
    ) -> Result<ProbedTrials<'a>, SectionsError> {
        let mut probed = Vec::new();
        let mut sampled = Vec::new();
        for t in &run.trials {
            if seq.is_some_and(|s| s != t.seq) {
                continue;
            }
            if let Some(p) = store.load_profile(t.id)? {
                sampled.push(trial_cpu(t, &run.points, &p));
            }
            match load_path_source(store, t) {
                Ok(Some(source)) => probed.push((t, source)),
                Ok(None) => {}
                Err(StoredEventsError::Version { stored, reads }) => {
                    return Err(SectionsError::EventLayout {
                        seq: t.seq,
                        stored,
                        reads,
                    })
                }
                Err(StoredEventsError::Store(e)) => return Err(e.into()),
            }
        }
        // The block table reads best grouped by point.
        sampled.sort_by_key(|c| (c.point_index, c.seq));
        Ok(ProbedTrials { probed, sampled })
    }

    /// The first probed trial whose records were kept, with them (a
    /// capture needs the records themselves).
    pub fn first_with_records(
        &self,
    ) -> Option<(&'a TrialRecord, &[record::probe_event::ProbeEvent])> {
        self.probed
            .iter()
            .find_map(|(t, source)| source.records().map(|ev| (*t, ev)))
    }

    /// Whether no trial has probe records or CPU samples.
    pub fn is_empty(&self) -> bool {
        self.probed.is_empty() && self.sampled.is_empty()
    }

    /// Each probed trial's path analysis.
    pub fn analyses(&self) -> Vec<(&'a TrialRecord, PathAnalysis)> {
        self.probed
            .iter()
            .map(|(t, source)| (*t, source.analysis(t)))
            .collect()
    }

    /// `tcplab probes --json` of run `run_id`: each probed trial's analysis,
    /// each sampled trial's CPU costs and the run's fits.
    pub fn json(&self, run_id: i64) -> Value {
        let analyses = self.analyses();
        json!({
            "run": run_id,
            "trials": analyses.iter().map(|(t, an)| json!({
                "seq": t.seq,
                "point_id": t.point_id,
                "lost": t.outcome.metrics.get("probe_lost"),
                "records_kept": !crate::path_source::kept_summary_only(t),
                "analysis": an,
            })).collect::<Vec<_>>(),
            "cpu": self.sampled,
            "cpu_fits": run_fits(&self.sampled),
        })
    }

    /// `tcplab probes` of run `run_id` as text: each probed trial's path and
    /// CPU, then the sampled trials without records, then (with several
    /// sampled trials) the block table and fits.
    pub fn text(&self, run_id: i64) -> String {
        let analyses = self.analyses();
        let mut out = String::new();
        for (t, an) in &analyses {
            out += &trial_path_text(run_id, t, an);
            if crate::path_source::kept_summary_only(t) {
                out += &format!(
                    "  {}: the analysis above was stored when the trial ran\n",
                    crate::path_source::RAW_NOT_KEPT
                );
            }
            if let Some(c) = self.sampled.iter().find(|c| c.seq == t.seq) {
                out += &trial_text(c);
            }
        }
        for c in self
            .sampled
            .iter()
            .filter(|c| !analyses.iter().any(|(t, _)| t.seq == c.seq))
        {
            out += &format!("run {run_id} trial {} ({})\n", c.seq, c.point);
            out += &trial_text(c);
        }
        if self.sampled.len() > 1 {
            out += &run_text(&self.sampled, &run_fits(&self.sampled));
        }
        out
    }
}

/// One probed trial's path as text: records per probe, hop delays, queues,
/// packet classes, ACK causes and thread idle time.
pub fn trial_path_text(run: i64, t: &TrialRecord, a: &PathAnalysis) -> String {
    let mut s = String::new();
    let lost = t.outcome.metrics.get("probe_lost").copied().unwrap_or(0.0);
    s += &format!(
        "run {run} trial {}: {} records over {:.3} s{}\n",
        t.seq,
        a.records,
        a.span_s,
        if lost > 0.0 {
            format!(
                " — WARNING: {lost:.0} records lost ({})",
                loss_causes(&t.outcome.details["probe"])
            )
        } else {
            ", none lost".into()
        }
    );
    s += "  records per probe:";
    for (k, v) in &a.per_probe {
        s += &format!(" {k}={v}");
    }
    s += "\n";
    s += &format!(
        "  {:<60} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
        "hop", "n", "p50 µs", "p90 µs", "p99 µs", "max µs"
    );
    for h in &a.hops {
        s += &format!(
            "  {:<60} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1}\n",
            h.hop, h.n, h.p50_us, h.p90_us, h.p99_us, h.max_us
        );
    }
    for q in &a.queues {
        s += &format!(
            "  {:<60} {:>8} mean {:>10.1} max {:>10.0}\n",
            q.queue, q.n, q.mean, q.max
        );
    }
    for p in &a.packets {
        s += &format!(
            "  flow {}: {} data segments on the wire{} in {} skbs ({:.0} B avg, largest skb {}), {} ACKs, {} window updates, {} control, {} short segments sent with more data queued ({} silly)\n",
            p.flow,
            p.data,
            p.mss.map_or(" (MSS unknown: one per skb)".to_string(), |m| format!(" at MSS {m}")),
            p.data_skbs,
            if p.data > 0 { p.data_bytes as f64 / p.data as f64 } else { 0.0 },
            p.largest_segment,
            p.acks,
            p.window_updates,
            p.control,
            p.small_with_more_queued,
            p.silly
        );
    }
    for c in &a.ack_causes {
        if c.acks > 0 {
            s += &format!(
                "  ACKs {}: {} — {:.0}% within 50 µs after a read (receive-queue drain), {:.0}% on data arrival\n",
                c.flow,
                c.acks,
                c.after_read as f64 / c.acks as f64 * 100.0,
                c.on_arrival as f64 / c.acks as f64 * 100.0
            );
        }
    }
    for th in &a.threads {
        s += &format!(
            "  {} thread {}: blocked {:.1}% of {:.3} s (idle), preempted {:.1}%\n",
            th.role,
            th.tid,
            th.idle_fraction * 100.0,
            th.span_s,
            th.preempted_s / th.span_s * 100.0
        );
    }
    s
}

/// Why a capture's records were lost, from its stored counters: the ring
/// buffer was full or the invocation nested too deep (`lost`), the kernel
/// skipped a probe that fired while the same probe ran on that CPU
/// (`missed`), or batches handed to the ring buffer were not drained in
/// time (`flushed` − `from_ring`).
pub fn loss_causes(probe: &Value) -> String {
    let sum = |k: &str| -> u64 {
        probe[k]
            .as_object()
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    };
    let undrained = probe["flushed"]
        .as_u64()
        .unwrap_or(0)
        .saturating_sub(probe["from_ring"].as_u64().unwrap_or(0));
    let parts: Vec<String> = [
        (sum("lost"), "ring buffer full or nested too deep"),
        (
            sum("missed"),
            "skipped by the kernel while the same probe ran on that CPU",
        ),
        (undrained, "not drained from the ring buffer in time"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    if parts.is_empty() {
        "cause not recorded".into()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod loss_tests {
    use super::loss_causes;
    use serde_json::json;

    #[test]
    fn each_cause_is_named_with_its_count_and_only_when_present() {
        let d = json!({"lost": {"tcp_sendmsg": 32}, "missed": {"net_dev_xmit": 0},
                       "flushed": 64, "from_ring": 64});
        assert_eq!(loss_causes(&d), "32 ring buffer full or nested too deep");
        let d = json!({"lost": {}, "missed": {"net_dev_xmit": 2, "netif_rx": 1},
                       "flushed": 96, "from_ring": 64});
        assert_eq!(
            loss_causes(&d),
            "3 skipped by the kernel while the same probe ran on that CPU; \
             32 not drained from the ring buffer in time"
        );
        assert_eq!(loss_causes(&json!({})), "cause not recorded");
    }
}
