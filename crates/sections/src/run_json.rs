//! The JSON document of a run: what `bench --json`, `show --json`,
//! `compare --json` print and what a run report keeps beside its HTML.

use analysis::PointSummary;
use record::StoredRun;
use serde_json::{json, Value};

/// The JSON document of a run: `run_id`, run facts, and `points` with
/// `params`, per-metric `{n, mean, sd, ci95, median, min, max}` (as
/// hyperfine's JSON has them) and, under a `--precision`
/// target, how the point ended against it (`precision`: the target, the
/// half-width reached, the trials, whether it was met; null without one)
/// and, for probed points, what probing stored (`probe_stored`: trials,
/// records, bytes by kind, seconds probed; null unprobed); for stream
/// tests each connection's share of the throughput and their sum
/// (`streams`), and with `--interval` each trial's series (`intervals`:
/// `[{seq, intervals}]`), both null when not stored.
pub fn run_json(run: &StoredRun, points: &[PointSummary], with_trials: bool) -> Value {
    let m = &run.meta;
    let stored = crate::probe_storage::point_storage(run, points);
    let pts: Vec<Value> = points
        .iter()
        .map(|p| {
            let probe_stored = stored
                .iter()
                .find(|(q, _)| q.point_id == p.point_id)
                .map(|(_, s)| s.json());
            json!({
                "index": p.index,
                "point_id": p.point_id,
                "params": p.params,
                "trials_ok": p.trials_ok,
                "trials_failed": p.trials_failed,
                "failures": p.failures,
                "metrics": p.metrics,
                "precision": p.precision,
                "probe_stored": probe_stored,
                "streams": crate::streams::point_streams(run, p),
                "intervals": crate::streams::point_intervals(run, p),
            })
        })
        .collect();
    let mut doc = json!({
        "schema": 1,
        "run_id": m.id,
        "kind": m.kind,
        "status": m.status,
        "started_at": m.started_at,
        "finished_at": m.finished_at,
        "seed": m.seed,
        "place": m.place,
        "command": m.command,
        "tool_version": m.tool_version,
        "host": m.host,
        "settings": m.settings,
        "points": pts,
    });
    if with_trials {
        doc["trials"] = serde_json::to_value(&run.trials).unwrap_or(Value::Null);
    }
    doc
}
