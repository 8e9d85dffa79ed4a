//! `--probe-keep summary`: a trial whose path analysis was stored in place
//! of its records reads back as the same analysis in `tcplab probes` and
//! the run report, and the views that need the records say they were not
//! kept.

use super::*;
use crate::path_source::RAW_NOT_KEPT;
use analysis::path::analyse_with_mss;

#[test]
fn a_kept_summary_reads_back_as_the_records_analysis() {
    let (_dir, mut store) = store();
    let events = path_events(300);
    let summary = serde_json::to_string(&analyse_with_mss(&events, None)).unwrap();
    let kept = |events: Option<EventBlob>, summary: Option<String>, keep: &str| Extras {
        events,
        path_summary: summary,
        details: Some(serde_json::json!({"probe": {"keep": keep}})),
        ..Extras::default()
    };
    let run = store_run(
        &mut store,
        HOST,
        vec![PointSpec {
            write_size: 1024,
            trials: vec![
                (
                    metrics(&[("throughput_bps", 1e8)]),
                    kept(Some(blob(&events, EVENT_VERSION)), None, "all"),
                ),
                (
                    metrics(&[("throughput_bps", 1e8)]),
                    kept(None, Some(summary), "summary"),
                ),
            ],
        }],
    );
    let id = run.meta.id;
    let trials = ProbedTrials::load(&store, &run, None).unwrap();
    assert_eq!(trials.probed.len(), 2);
    let json = trials.json(id);
    assert_eq!(
        json["trials"][0]["analysis"], json["trials"][1]["analysis"],
        "the stored analysis is the records' analysis"
    );
    assert_eq!(json["trials"][0]["records_kept"], true);
    assert_eq!(json["trials"][1]["records_kept"], false);
    let text = trials.text(id);
    assert_eq!(text.matches(RAW_NOT_KEPT).count(), 1, "{text}");
    // A capture can only come from the trial that kept its records.
    assert_eq!(trials.first_with_records().map(|(t, _)| t.seq), Some(0));

    // With no records at all, the report still has its path section.
    let (_dir2, mut summary_only) = super::store();
    let run = store_run(
        &mut summary_only,
        HOST,
        vec![PointSpec {
            write_size: 1024,
            trials: vec![(
                metrics(&[("throughput_bps", 1e8)]),
                kept(
                    None,
                    Some(serde_json::to_string(&analyse_with_mss(&events, None)).unwrap()),
                    "summary",
                ),
            )],
        }],
    );
    let trials = ProbedTrials::load(&summary_only, &run, None).unwrap();
    assert!(trials.first_with_records().is_none());
    let r = report_of(&summary_only, &run);
    assert!(section(&r, "Probes: the path of one trial").is_some());
}
