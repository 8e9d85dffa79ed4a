//! The stack findings follow the data both ways: the idle claim against
//! the paper's 45.3%, the largest block, the per-segment cost against
//! Linux and across write sizes, each flow-control arm against
//! min(λ, μ); impossible accounting is flagged and left out; the sections
//! render from a stored run's trials and profiles.

use super::stack_account::{profile, sender_of};
use super::stack_flow::{arm_finding, summary_finding, Arm, Verdict};
use super::stack_runs::{FLOW, LAMBDA, MU, SEGMENT_COST, TIMELINE};
use super::stack_segment::{across_sizes_finding, segment_finding};
use super::stack_timeline::{idle_finding, largest_block_finding};
use crate::data::{ExperimentRecord, StudyData, StudySettings};
use crate::fixtures::{ok_trial, stored_study_run};
use crate::sunos_ipc::change::Estimate;
use analysis::findings::CurvePoint;
use analysis::Summary;
use record::cpu_profile::CpuProfile;
use record::factor::FlowControl;
use record::{PointRecord, StackImpl, TestKind, TrialOutcome, TrialParams};
use report::{Block, Section};
use std::collections::BTreeMap;

fn cp(mean: f64, ci: f64) -> CurvePoint {
    CurvePoint { x: 0.0, mean, ci }
}

fn est(mean: f64, ci: f64) -> Estimate {
    Estimate { mean, ci, n: 5 }
}

#[test]
fn the_idle_claim_flips_around_the_papers_45_percent() {
    let wall = cp(0.2, 0.001);
    let more = idle_finding(
        "1 KB writes, 4 KB buffers",
        &cp(0.3, 0.02),
        &cp(0.7, 0.02),
        &wall,
        5,
        0.001,
        None,
    );
    assert!(
        more.contains("busy 30.0 ± 2.0 % and idle 70.0 ± 2.0 %")
            && more.contains("more idle than the paper's 80386 sender (45.3%) by 24.7 points"),
        "{more}"
    );
    assert!(more.contains("was not measured in this run"), "{more}");
    let less = idle_finding(
        "1 KB writes, 4 KB buffers",
        &cp(0.9, 0.02),
        &cp(0.1, 0.02),
        &wall,
        5,
        0.001,
        None,
    );
    assert!(
        less.contains("less idle than the paper's 80386 sender (45.3%) by 35.3 points"),
        "{less}"
    );
    let same = idle_finding(
        "1 KB writes, 4 KB buffers",
        &cp(0.55, 0.05),
        &cp(0.45, 0.05),
        &wall,
        5,
        0.001,
        None,
    );
    assert!(
        same.contains("within its 95% CI of the paper's 45.3% (a difference under 6.00 %"),
        "{same}"
    );
    let b = Summary::new(&[0.96, 0.97, 0.95]).unwrap();
    let linux = idle_finding(
        "1 KB writes, 4 KB buffers",
        &cp(0.3, 0.02),
        &cp(0.7, 0.02),
        &wall,
        5,
        0.001,
        Some((&b, "ether10")),
    );
    assert!(
        linux.contains("kernel timeline experiment (on ether10) was blocked 96.0 ± 2.5 %"),
        "{linux}"
    );
    let one = idle_finding(
        "1 KB writes, 4 KB buffers",
        &cp(0.3, 0.0),
        &cp(0.7, 0.0),
        &wall,
        1,
        0.001,
        None,
    );
    assert!(one.contains("from one trial there is no CI"), "{one}");
}

#[test]
fn the_largest_block_is_named_only_beyond_the_next_ones_ci() {
    let clear = largest_block_finding(&[
        ("device_send_write".into(), cp(0.5, 0.02)),
        ("tcp_output".into(), cp(0.2, 0.02)),
    ])
    .unwrap();
    assert!(
        clear.starts_with(
            "The stack sender's largest busy block is device_send_write, 50.0 ± 2.0 %"
        ) && clear.contains("next, tcp_output (20.0 ± 2.0 %)"),
        "{clear}"
    );
    let tied = largest_block_finding(&[
        ("device_send_write".into(), cp(0.35, 0.05)),
        ("tcp_output".into(), cp(0.33, 0.05)),
    ])
    .unwrap();
    assert!(
        tied.starts_with("No one block is the stack sender's largest"),
        "{tied}"
    );
}

#[test]
fn the_segment_cost_is_set_against_linux_and_the_paper_both_ways() {
    let stack = est(4.0, 0.2);
    let cheaper = segment_finding(
        1460,
        &stack,
        None,
        Some(("tcp_output", &est(1.0, 0.1))),
        Some(&est(8.0, 0.3)),
    );
    assert!(
        cheaper.contains("busy 4.00 ± 0.20 µs per data segment")
            && cheaper.contains("213× less than the paper's 851.5 µs")
            && cheaper.contains("its largest block, tcp_output, 1.00 ± 0.10 µs")
            && cheaper.contains("the stack costs 2.00× less than Linux, beyond the 95% CIs"),
        "{cheaper}"
    );
    let dearer = segment_finding(1460, &stack, None, None, Some(&est(2.0, 0.1)));
    assert!(
        dearer.contains("the stack costs 2.00× Linux's, beyond the 95% CIs"),
        "{dearer}"
    );
    let same = segment_finding(1460, &stack, None, None, Some(&est(4.1, 0.3)));
    assert!(
        same.contains("within the 95% CIs (a difference under"),
        "{same}"
    );
    let none = segment_finding(1460, &stack, None, None, None);
    assert!(none.contains("Linux's sender was not measured"), "{none}");
    let flat = across_sizes_finding((1460, &est(4.0, 0.3)), (65536, &est(4.1, 0.3)));
    assert!(flat.contains("no change beyond the 95% CIs"), "{flat}");
    let lower = across_sizes_finding((1460, &est(4.0, 0.1)), (65536, &est(2.0, 0.1)));
    assert!(lower.contains("2.00× lower beyond the 95% CIs"), "{lower}");
}

fn arm(flow: FlowControl, lambda: f64, mu: f64, measured: f64) -> Arm {
    Arm {
        flow,
        lambda: cp(lambda, 0.01 * lambda),
        mu: cp(mu, 0.02 * mu),
        measured: cp(measured, 0.02 * measured),
    }
}

#[test]
fn each_arm_is_at_below_or_above_min_lambda_mu() {
    // λ < μ, paced at 50 Mbit/s: the bound is λ.
    let at = arm(FlowControl::Rate(50_000_000), 50e6, 100e6, 49.5e6);
    assert_eq!(at.verdict(), Verdict::At);
    let s = arm_finding(&at);
    assert!(
        s.starts_with("Rate-based flow control at 50.0 Mbit/s")
            && s.contains("λ < μ beyond the 95% CIs")
            && s.contains("at the bound within the 95% CIs"),
        "{s}"
    );
    // λ > μ, window: the bound is μ, and throughput half of it.
    let below = arm(FlowControl::Window, 2e9, 100e6, 50e6);
    assert_eq!(below.verdict(), Verdict::Below);
    let s = arm_finding(&below);
    assert!(
        s.starts_with("Window flow control (the sender unpaced)")
            && s.contains("λ > μ beyond the 95% CIs")
            && s.contains("50% below the bound, beyond the 95% CIs"),
        "{s}"
    );
    let above = arm(FlowControl::Window, 2e9, 100e6, 150e6);
    assert_eq!(above.verdict(), Verdict::Above);
    assert!(arm_finding(&above).contains("λ or μ was underestimated"));
    // The summary follows the arms.
    let rate_only = summary_finding(&[at.clone(), below.clone()]).unwrap();
    assert!(
        rate_only.contains("at 1 of 1 arms, window flow control at 0 of 1")
            && rate_only.contains("as the paper proposed"),
        "{rate_only}"
    );
    let window_at = arm(FlowControl::Window, 2e9, 100e6, 100e6);
    let rate_below = arm(FlowControl::Rate(300_000_000), 300e6, 100e6, 60e6);
    let reverse = summary_finding(&[window_at, rate_below]).unwrap();
    assert!(reverse.contains("unlike the paper's proposal"), "{reverse}");
}

#[test]
fn a_profile_whose_busy_and_idle_miss_the_wall_time_is_impossible() {
    let ok = sender_of(&profile(0.12, 0.08, 0.2, &[("tcp_output", 0.1)])).unwrap();
    assert!(ok.adds_up());
    let bad = sender_of(&profile(0.12, 0.2, 0.2, &[("tcp_output", 0.1)])).unwrap();
    assert!(!bad.adds_up());
    // A sampled kernel profile is not the stack's accounting.
    let mut kernel = profile(0.1, 0.1, 0.2, &[]);
    kernel.clock = "cpu-clock".into();
    assert!(sender_of(&kernel).is_none());
}

/// A point: its experiment, parameters and each trial's metrics and
/// profile.
type Trials = Vec<(BTreeMap<String, f64>, Option<CpuProfile>)>;

fn stack_params() -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = StackImpl::Tcplab;
    p.duration_s = Some(0.2);
    p
}

fn run(points_in: Vec<(&str, TrialParams, Trials)>) -> StudyData {
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let mut experiments: Vec<ExperimentRecord> = Vec::new();
    let mut profiles = BTreeMap::new();
    for (i, (id, params, ts)) in points_in.into_iter().enumerate() {
        let pid = i as i64 + 1;
        points.push(PointRecord {
            id: pid,
            index: i as u32,
            params,
            precision: None,
        });
        match experiments.last_mut() {
            Some(e) if e.id == id => e.points += 1,
            _ => experiments.push(ExperimentRecord {
                id: id.into(),
                title: String::new(),
                command: String::new(),
                first_point: i as u32,
                points: 1,
            }),
        }
        for (rep, (metrics, prof)) in ts.into_iter().enumerate() {
            let t = ok_trial(
                &trials,
                pid,
                rep,
                TrialOutcome {
                    metrics,
                    ..TrialOutcome::default()
                },
            );
            if let Some(p) = prof {
                profiles.insert(t.id, p);
            }
            trials.push(t);
        }
    }
    let settings = StudySettings {
        study: super::NAME.into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, "loopback", points, trials);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), profiles).unwrap()
}

fn texts(sections: &[Section]) -> Vec<String> {
    sections
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter_map(|b| match b {
            Block::Finding { text } | Block::Warning(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Five accounted trials with `idle` of a 0.2 s wall time idle; the last
/// `bad` of them with idle time that does not add up.
fn accounted_trials(idle: f64, bad: usize) -> Trials {
    (0..5)
        .map(|k| {
            let j = 1.0 + 0.01 * k as f64;
            let busy = 0.2 * (1.0 - idle) * j;
            let idle_s = if k >= 5 - bad { 0.2 } else { 0.2 - busy };
            let m = BTreeMap::from([
                ("data_segs_out".to_string(), 10_000.0),
                ("throughput_bps".to_string(), 5e8),
            ]);
            let p = profile(
                busy,
                idle_s,
                0.2,
                &[
                    ("device_send_write", busy * 0.6),
                    ("tcp_output", busy * 0.3),
                    ("unattributed", busy * 0.1),
                ],
            );
            (m, Some(p))
        })
        .collect()
}

fn rates(v: &[f64]) -> Trials {
    v.iter()
        .map(|r| (BTreeMap::from([("throughput_bps".to_string(), *r)]), None))
        .collect()
}

fn flow(f: FlowControl, work: bool) -> TrialParams {
    let mut p = stack_params();
    p.flow_control = Some(f);
    if work {
        p.recv_work_ns_per_kb = Some(40_000);
        p.rcvbuf = Some(4096);
    }
    p
}

fn stack_run(idle: f64, bad: usize, window_rate: f64) -> StudyData {
    let mut timeline = stack_params();
    timeline.write_size = 1024;
    timeline.rcvbuf = Some(4096);
    let mut seg = stack_params();
    seg.write_size = 1460;
    let w = FlowControl::Window;
    let r = FlowControl::Rate(50_000_000);
    run(vec![
        (TIMELINE, timeline, accounted_trials(idle, bad)),
        (SEGMENT_COST, seg, accounted_trials(0.0, 0)),
        (LAMBDA, flow(w, false), rates(&[2.0e9, 2.02e9, 1.98e9])),
        (LAMBDA, flow(r, false), rates(&[49.8e6, 50e6, 50.1e6])),
        (MU, stack_params(), rates(&[100e6, 101e6, 99e6])),
        (
            FLOW,
            flow(w, true),
            rates(&[window_rate, window_rate * 1.01, window_rate * 0.99]),
        ),
        (FLOW, flow(r, true), rates(&[49.7e6, 50e6, 50.2e6])),
    ])
}

#[test]
fn the_stack_sections_render_from_a_stored_runs_trials_and_profiles() {
    let t = texts(&super::report(&stack_run(0.6, 0, 100e6)));
    let has = |s: &str| t.iter().any(|f| f.contains(s));
    assert!(has("and idle 59.2"), "{t:#?}");
    assert!(has("more idle than the paper's 80386 sender"), "{t:#?}");
    assert!(has("largest busy block is device_send_write"), "{t:#?}");
    // 0.204 s busy over 10,000 segments: 20.4 µs each.
    assert!(
        has("At 1460 B writes tcplab's stack sender is busy 20.4"),
        "{t:#?}"
    );
    assert!(
        has("Window flow control (the sender unpaced)") && has("at the bound within"),
        "{t:#?}"
    );
    assert!(
        has("window flow control at 1 of 1: both flow controls tracked"),
        "{t:#?}"
    );
    // Less idle, an impossible trial, and a window arm below the bound.
    let t = texts(&super::report(&stack_run(0.1, 1, 50e6)));
    let has = |s: &str| t.iter().any(|f| f.contains(s));
    assert!(has("less idle than the paper's 80386 sender"), "{t:#?}");
    assert!(has("its accounting is impossible and left out"), "{t:#?}");
    assert!(has("(1 KB writes, 4 KB buffers, 4 trials of"), "{t:#?}");
    assert!(has("50% below the bound"), "{t:#?}");
    assert!(has("as the paper proposed"), "{t:#?}");
}
