//! The reports' finding sentences follow the data: the same report code on
//! two different (stored-run-shaped) data sets says different things.

use crate::data::{ExperimentRecord, StudyData, StudySettings, SETTINGS_KEY};
use record::{
    HostFacts, PointRecord, RunMeta, RunStatus, StoredRun, TestKind, TrialOutcome, TrialParams,
    TrialRecord, TrialStatus,
};
use std::collections::BTreeMap;

/// A stored-run-shaped data set: TCP and UDP throughput (bit/s) per write
/// size on `veth`, three trials per point at mean ± 1%.
fn write_size_run(tcp: &[(u64, f64)], udp: &[(u64, f64)]) -> StudyData {
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let mut experiments = Vec::new();
    for (id, test, curve) in [
        ("write-size-tcp-fast", TestKind::TcpStream, tcp),
        ("write-size-udp-fast", TestKind::UdpStream, udp),
    ] {
        experiments.push(ExperimentRecord {
            id: id.into(),
            title: id.into(),
            command: String::new(),
            first_point: points.len() as u32,
            points: curve.len() as u32,
        });
        for &(ws, bps) in curve {
            let mut p = TrialParams::defaults(test);
            p.write_size = ws;
            p.topology = Some("veth".into());
            let pid = points.len() as i64 + 1;
            points.push(PointRecord {
                id: pid,
                index: points.len() as u32,
                params: p,
            });
            for (k, f) in [0.99, 1.0, 1.01].iter().enumerate() {
                let mut o = TrialOutcome::default();
                o.metrics.insert("throughput_bps".into(), bps * f);
                o.metrics.insert("loss_rate".into(), 0.0);
                trials.push(TrialRecord {
                    id: trials.len() as i64 + 1,
                    point_id: pid,
                    seq: trials.len() as u32,
                    repetition: k as u32,
                    started_at: String::new(),
                    status: TrialStatus::Ok,
                    error: None,
                    outcome: o,
                });
            }
        }
    }
    let settings = StudySettings {
        study: "abrams91".into(),
        quick: true,
        experiments,
    };
    let run = StoredRun {
        meta: RunMeta {
            id: 1,
            kind: "study:abrams91".into(),
            command: String::new(),
            seed: 1,
            place: String::new(),
            started_at: String::new(),
            finished_at: None,
            status: RunStatus::Completed,
            host: HostFacts::default(),
            settings: serde_json::json!({ SETTINGS_KEY: settings }),
            tool_version: String::new(),
        },
        points,
        trials,
    };
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}

fn findings(d: &StudyData) -> Vec<String> {
    crate::abrams91::report(d)
        .into_iter()
        .flat_map(|s| s.blocks)
        .filter_map(|b| match b {
            report::Block::Finding { text } => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn write_size_findings_follow_the_data() {
    let sizes = [10, 512, 1460, 8192, 65507];
    // A knee at 1460 B, and UDP overtaking TCP from 8 KB.
    let tcp: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e8, 2e9, 5e9, 5.02e9, 5.01e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let udp: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e7, 1e9, 4e9, 8e9, 9e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let a = findings(&write_size_run(&tcp, &udp));
    assert!(
        a.iter().any(|f| f == "On veth, TCP throughput rises with write size up to 1460 B, then is flat within CI."),
        "{a:#?}"
    );
    assert!(
        a.iter().any(|f| f.contains("UDP exceeds TCP from 8 KB on")),
        "{a:#?}"
    );
    // Other data, other sentences: TCP rising to the end, UDP never ahead.
    let tcp2: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e8, 2e9, 5e9, 7e9, 9e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let udp2: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e7, 1e9, 4e9, 6e9, 8e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let b = findings(&write_size_run(&tcp2, &udp2));
    assert!(
        b.iter()
            .any(|f| f
                == "On veth, TCP throughput rises with write size over the whole range measured."),
        "{b:#?}"
    );
    assert!(
        b.iter().any(|f| f.contains("UDP never overtakes it")),
        "{b:#?}"
    );
    assert_ne!(a, b);
}

#[test]
fn a_run_without_study_settings_is_refused() {
    let mut d = write_size_run(&[(10, 1e6)], &[(10, 1e6)]);
    d.run.meta.settings = serde_json::json!({});
    let summaries = analysis::summarize_run(&d.run);
    assert!(matches!(
        StudyData::new(d.run, summaries, BTreeMap::new(), BTreeMap::new()),
        Err(crate::StudyError::NotAStudy(1))
    ));
}

#[test]
fn the_verdict_ranks_what_the_data_shows() {
    let sizes = [512u64, 65507];
    let tcp: Vec<(u64, f64)> = sizes.iter().map(|&s| (s, 1e9)).collect();
    let with = |rwnd: f64, link_share: f64| {
        let mut d = write_size_run(&tcp, &tcp);
        for t in d.run.trials.iter_mut() {
            t.outcome.metrics.insert("busy_s".into(), 1.0);
            t.outcome.metrics.insert("rwnd_limited_s".into(), rwnd);
            t.outcome.details = serde_json::json!({"lab": {
                "calibration": {"line_rate_bps": 1e9 / link_share},
                "place": {"link": "ether10"}
            }});
        }
        crate::verdict::verdict(&d)
    };
    let a = with(0.6, 0.3);
    assert_eq!(a[0].name, "window and flow control", "{a:#?}");
    assert!((a[0].score.unwrap() - 0.6).abs() < 1e-9);
    // UDP trials carry no window accounting: the TCP points decide.
    let b = with(0.1, 0.95);
    assert_eq!(b[0].name, "the link", "{b:#?}");
    // The best trial: 1.01 × 0.95 of the line rate.
    assert!((b[0].score.unwrap() - 0.9595).abs() < 1e-6, "{b:#?}");
    assert!(
        b[0].evidence.contains("96% of the 1052.6 Mbit/s line rate"),
        "{b:#?}"
    );
    // No CPU samples: the CPU candidates say so and rank last.
    assert!(b.iter().any(|x| x.name == "data copy" && x.score.is_none()));
    assert!(b.last().unwrap().score.is_none());
}
