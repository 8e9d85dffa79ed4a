//! The stack's findings follow the data, both ways: each tuning change is
//! better, worse, or no change with the smallest change the trials could
//! have seen; SWS avoidance is said not to show only when every segment
//! was full; merging the layers is a claim on each measure; the tuning
//! table is built from each step's trials.

use super::stack_layers::{merging_finding, Pair};
use super::tuning::{
    change_finding, clause, controls, impossible_cpu, step_flags, step_id, sws_note, Step, CHANGES,
};
use crate::data::{ExperimentRecord, StudyData, StudySettings};
use crate::fixtures::{finding_texts, ok_trial, stored_study_run};
use analysis::findings::CurvePoint;
use record::{PointRecord, StackImpl, TestKind, TrialOutcome, TrialParams};
use report::Unit;
use std::collections::BTreeMap;

fn cp(mean: f64, ci: f64) -> CurvePoint {
    CurvePoint { x: 0.0, mean, ci }
}

#[test]
fn the_steps_apply_the_changes_cumulatively_from_the_untuned_levels() {
    assert_eq!(
        step_flags(0),
        "--sws off --delack off --rtt-estimator bsd --header-prediction off --checksum bytewise"
    );
    assert_eq!(
        step_flags(2),
        "--sws on --delack every2 --rtt-estimator bsd --header-prediction off --checksum bytewise"
    );
    assert_eq!(
        step_flags(CHANGES.len()),
        "--sws on --delack every2 --rtt-estimator rfc6298 --header-prediction on --checksum rfc1071"
    );
}

#[test]
fn a_change_is_better_worse_or_none_by_the_cis() {
    let s = Unit::Si("s");
    let better = clause(
        "sender CPU per segment",
        &cp(4e-6, 0.2e-6),
        &cp(3e-6, 0.2e-6),
        true,
        s,
    );
    assert!(
        better.contains("(-25%), better beyond the 95% CIs"),
        "{better}"
    );
    let worse = clause(
        "sender CPU per segment",
        &cp(3e-6, 0.2e-6),
        &cp(4e-6, 0.2e-6),
        true,
        s,
    );
    assert!(
        worse.contains("(+33%), worse beyond the 95% CIs"),
        "{worse}"
    );
    // Higher throughput is better.
    let up = clause(
        "throughput",
        &cp(1e9, 1e7),
        &cp(2e9, 1e7),
        false,
        Unit::Si("bit/s"),
    );
    assert!(up.contains("better beyond"), "{up}");
    let none = clause(
        "throughput",
        &cp(1e9, 2e8),
        &cp(1.1e9, 1e8),
        false,
        Unit::Si("bit/s"),
    );
    assert!(
        none.contains("no change beyond the 95% CIs (a change under 30% could not have been seen)"),
        "{none}"
    );
    let single = clause(
        "throughput",
        &cp(1e9, 0.0),
        &cp(2e9, 0.0),
        false,
        Unit::Si("bit/s"),
    );
    assert!(single.contains("no change claimed"), "{single}");
    assert!(!single.contains("better"), "{single}");
}

#[test]
fn a_change_finding_names_each_measure_it_has() {
    let before = Step {
        throughput: Some(cp(1e9, 1e7)),
        sender_cpu: Some(cp(4e-6, 0.1e-6)),
        receiver_cpu: None,
        ..Step::default()
    };
    let after = Step {
        throughput: Some(cp(1e9, 1e7)),
        sender_cpu: Some(cp(3e-6, 0.1e-6)),
        receiver_cpu: Some(cp(3e-6, 0.1e-6)),
        ..Step::default()
    };
    let f = change_finding("header prediction on", &before, &after).unwrap();
    assert!(f.starts_with("header prediction on: throughput"), "{f}");
    assert!(
        f.contains("sender CPU per segment") && f.contains("better beyond"),
        "{f}"
    );
    assert!(!f.contains("receiver CPU"), "{f}");
    assert!(change_finding("x", &Step::default(), &after).is_none());
}

#[test]
fn sws_avoidance_cannot_show_only_when_every_segment_was_full() {
    let full = sws_note(&cp(1447.0, 2.0), &cp(1446.0, 2.0), 1460.0, false);
    assert!(
        full.starts_with("SWS avoidance cannot show on this bulk transfer"),
        "{full}"
    );
    assert!(full.contains("1447 and 1446 bytes"), "{full}");
    assert!(!full.contains("SWS section"), "{full}");
    let pointed = sws_note(&cp(1447.0, 2.0), &cp(1446.0, 2.0), 1460.0, true);
    assert!(
        pointed.contains("the SWS section runs such a reader against Linux"),
        "{pointed}"
    );
    let small = sws_note(&cp(90.0, 5.0), &cp(1446.0, 2.0), 1460.0, true);
    assert!(
        small.starts_with("SWS avoidance had small segments to act on"),
        "{small}"
    );
    assert!(!small.contains("cannot show"), "{small}");
}

#[test]
fn merging_the_layers_is_claimed_each_way_from_the_data() {
    let rtt = |threaded: f64, merged: f64| Pair {
        threaded: Some(cp(threaded, 1e-6)),
        merged: Some(cp(merged, 1e-6)),
    };
    let s = Unit::Si("s");
    let buys = merging_finding(
        "request/response",
        "round trip p50",
        &rtt(36e-6, 12e-6),
        true,
        s,
    )
    .unwrap();
    assert!(buys.contains("better beyond the 95% CIs"), "{buys}");
    let costs = merging_finding(
        "request/response",
        "round trip p50",
        &rtt(12e-6, 36e-6),
        true,
        s,
    )
    .unwrap();
    assert!(costs.contains("worse beyond the 95% CIs"), "{costs}");
    let same = merging_finding(
        "request/response",
        "round trip p50",
        &rtt(12e-6, 12.5e-6),
        true,
        s,
    )
    .unwrap();
    assert!(same.contains("no change beyond the 95% CIs"), "{same}");
    let half = Pair {
        threaded: None,
        merged: Some(cp(1.0, 0.1)),
    };
    assert!(merging_finding("stream", "throughput", &half, false, s).is_none());
}

/// A run with the first two tuning steps, whose sender spends
/// `cpu[step]` seconds per trial for 1000 segments.
fn tuning_run(cpu: [f64; 2]) -> StudyData {
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let mut experiments = Vec::new();
    for (i, c) in cpu.iter().enumerate() {
        let mut params = TrialParams::defaults(TestKind::TcpStream);
        params.stack = StackImpl::Tcplab;
        params.server_stack = StackImpl::Tcplab;
        points.push(PointRecord {
            id: i as i64 + 1,
            index: i as u32,
            params,
            precision: None,
        });
        for rep in 0..5 {
            let jitter = 1.0 + 0.01 * rep as f64;
            let outcome = TrialOutcome {
                metrics: BTreeMap::from([
                    ("throughput_bps".to_string(), 1e9 * jitter),
                    ("cpu_sender_s".to_string(), c * jitter),
                    ("cpu_receiver_s".to_string(), 0.004),
                    ("sender_wall_s".to_string(), 0.2),
                    ("bytes".to_string(), 1_446_000.0),
                    ("stack_client_segments_out".to_string(), 1000.0),
                    ("stack_server_segments_in".to_string(), 1000.0),
                    ("stack_server_segments_out".to_string(), 1000.0),
                    ("stack_client_snd_mss".to_string(), 1460.0),
                ]),
                ..TrialOutcome::default()
            };
            trials.push(ok_trial(&trials, i as i64 + 1, rep, outcome));
        }
        experiments.push(ExperimentRecord {
            id: step_id(i),
            title: String::new(),
            command: String::new(),
            first_point: i as u32,
            points: 1,
        });
    }
    let settings = StudySettings {
        study: super::NAME.into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, "loopback", points, trials);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}

#[test]
fn the_tuning_section_claims_each_change_from_its_steps_trials() {
    let sws = |cpu: [f64; 2]| {
        finding_texts(super::report(&tuning_run(cpu)))
            .into_iter()
            .find(|f| f.starts_with("SWS avoidance on:"))
            .expect("the SWS change's finding")
    };
    // 4 µs → 3 µs of sender CPU per segment: better; the reverse: worse.
    let better = sws([0.004, 0.003]);
    assert!(better.contains("sender CPU per segment 4.0"), "{better}");
    assert!(
        better.contains("(-25%), better beyond the 95% CIs"),
        "{better}"
    );
    let worse = sws([0.003, 0.004]);
    assert!(
        worse.contains("(+33%), worse beyond the 95% CIs"),
        "{worse}"
    );
    let all = finding_texts(super::report(&tuning_run([0.004, 0.004])));
    assert!(
        all.iter().any(
            |f| f.starts_with("SWS avoidance cannot show on this bulk transfer")
                && f.contains("1446 and 1446 bytes")
        ),
        "{all:#?}"
    );
}

#[test]
fn the_controls_name_the_ends_and_device_each_point_ran_with() {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = StackImpl::Tcplab;
    p.duration_s = Some(0.2);
    let c = controls(&p);
    assert!(
        c.starts_with("the client (sender) is tcplab's stack behind a plain TUN device (no"),
        "{c}"
    );
    assert!(c.contains("the server Linux"), "{c}");
    assert!(
        c.ends_with("tcp-stream of 128 KB writes, 0.2 s per trial"),
        "{c}"
    );
    p.server_stack = StackImpl::Tcplab;
    let both = controls(&p);
    assert!(
        both.starts_with("both ends are tcplab's stack, each behind a plain TUN"),
        "{both}"
    );
    p.stack = StackImpl::TcplabOffload;
    p.server_stack = StackImpl::Kernel;
    let offload = controls(&p);
    assert!(offload.contains("TSO and checksum offloads"), "{offload}");
    // Request/response: both ends send.
    p.test = TestKind::TcpRr;
    assert!(
        controls(&p).starts_with("the client is tcplab's stack"),
        "{}",
        controls(&p)
    );
    assert!(!offload.contains("no segmentation"), "{offload}");
}

#[test]
fn more_cpu_than_an_end_has_threads_for_is_flagged_as_impossible() {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = StackImpl::Tcplab;
    let m = |cpu: f64| {
        BTreeMap::from([
            ("cpu_sender_s".to_string(), cpu),
            ("sender_wall_s".to_string(), 0.2),
        ])
    };
    assert!(impossible_cpu(&m(0.15), &p, "sender").is_none());
    let why = impossible_cpu(&m(0.3), &p, "sender").expect("1.5 CPUs on one thread");
    assert!(
        why.contains("0.300 CPU-seconds in 0.200 s of wall time with 1 thread"),
        "{why}"
    );
    // Threaded, the stack end has two threads: 0.3 s in 0.2 s can be.
    p.layers = Some(record::factor::Layers::Threaded);
    assert!(impossible_cpu(&m(0.3), &p, "sender").is_none());
    assert!(impossible_cpu(&m(0.5), &p, "sender").is_some());
    // Without the wall time nothing is claimed.
    let no_wall = BTreeMap::from([("cpu_sender_s".to_string(), 9.0)]);
    assert!(impossible_cpu(&no_wall, &p, "sender").is_none());
}

#[test]
fn an_impossible_cpu_figure_is_warned_of_and_left_out_of_the_claims() {
    let warnings = |cpu: [f64; 2]| -> Vec<String> {
        super::report(&tuning_run(cpu))
            .into_iter()
            .flat_map(|s| s.blocks)
            .filter_map(|b| match b {
                report::Block::Warning(w) => Some(w),
                _ => None,
            })
            .collect()
    };
    // 0.5 CPU-seconds in 0.2 s on one thread.
    let w = warnings([0.5, 0.004]);
    assert_eq!(
        w.iter()
            .filter(|w| w.contains("of tuning-0: the sender spent"))
            .count(),
        5,
        "{w:#?}"
    );
    let sws = finding_texts(super::report(&tuning_run([0.5, 0.004])))
        .into_iter()
        .find(|f| f.starts_with("SWS avoidance on:"))
        .unwrap();
    assert!(!sws.contains("sender CPU"), "{sws}");
    assert!(warnings([0.004, 0.004])
        .iter()
        .all(|w| !w.contains("tuning-")));
}

/// A run of the stack's layers experiments whose tcp-rr round trip is
/// `p50[0]` threaded and `p50[1]` merged.
fn layers_run(p50: [f64; 2]) -> StudyData {
    use super::stack_layers::{RR, STREAM};
    use record::factor::Layers;
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let mut experiments = Vec::new();
    for (e, id) in [STREAM, RR].into_iter().enumerate() {
        for (l, layers) in [Layers::Threaded, Layers::Merged].into_iter().enumerate() {
            let i = e * 2 + l;
            let mut params = TrialParams::defaults(if e == 0 {
                TestKind::TcpStream
            } else {
                TestKind::TcpRr
            });
            params.stack = StackImpl::Tcplab;
            params.layers = Some(layers);
            points.push(PointRecord {
                id: i as i64 + 1,
                index: i as u32,
                params,
                precision: None,
            });
            for rep in 0..5 {
                let jitter = 1.0 + 0.01 * rep as f64;
                let outcome = TrialOutcome {
                    metrics: BTreeMap::from([
                        ("throughput_bps".to_string(), 2e9 * jitter),
                        ("latency_p50_s".to_string(), p50[l] * jitter),
                        ("cpu_sender_s".to_string(), 0.05 * jitter),
                        ("sender_wall_s".to_string(), 0.2),
                        ("stack_client_segments_out".to_string(), 10_000.0),
                    ]),
                    ..TrialOutcome::default()
                };
                trials.push(ok_trial(&trials, i as i64 + 1, rep, outcome));
            }
        }
        experiments.push(ExperimentRecord {
            id: id.into(),
            title: String::new(),
            command: String::new(),
            first_point: e as u32 * 2,
            points: 2,
        });
    }
    let settings = StudySettings {
        study: super::NAME.into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, "loopback", points, trials);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}

#[test]
fn the_layers_section_measures_the_stack_and_names_the_better_arrangement() {
    let section = |p50: [f64; 2]| {
        super::report(&layers_run(p50))
            .into_iter()
            .find(|s| s.title == super::merged::TITLE)
            .expect("the layers-merged section")
    };
    let round_trip_row = |s: &report::Section| -> Vec<String> {
        s.blocks
            .iter()
            .find_map(|b| match b {
                report::Block::Table(t) => t
                    .rows
                    .iter()
                    .find(|r| r[0] == "request/response: round trip p50")
                    .cloned(),
                _ => None,
            })
            .expect("the round-trip row")
    };
    let merged_faster = section([36e-6, 12e-6]);
    assert_eq!(round_trip_row(&merged_faster)[3], "merged");
    let text = finding_texts(vec![merged_faster]).join("\n");
    assert!(
        text.contains("(request/response), merging the layers (threaded → merged): round trip p50")
            && text.contains("better beyond the 95% CIs"),
        "{text}"
    );
    assert_eq!(round_trip_row(&section([12e-6, 36e-6]))[3], "threaded");
    let same = section([12e-6, 12e-6]);
    assert_eq!(round_trip_row(&same)[3], "neither beyond the 95% CIs");
    let paragraphs: Vec<&str> = same
        .blocks
        .iter()
        .filter_map(|b| match b {
            report::Block::Paragraph(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        paragraphs.iter().any(|p| p.contains("not processes")),
        "{paragraphs:?}"
    );
    assert!(
        paragraphs
            .iter()
            .any(|p| p
                .contains("Controls: the client (sender) is tcplab's stack behind a plain TUN")),
        "{paragraphs:?}"
    );
}
