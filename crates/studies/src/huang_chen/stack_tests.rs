//! The stack experiments' plan (no topology, exact accounting, a bounded
//! quick budget) and each stack claim on synthetic data, both ways.

use super::paper::{table1_column, us_per_packet, TABLE1, TABLE1_SENDER_TOTAL, TABLE2};
use super::stack::{experiments, stack_blocks, StackTrial};
use super::stack_ack_checksum::{ack_checksum_sentence, patched_acks_sentence};
use super::stack_claims::{
    cheapest_per_byte_sentence, delack_sentence, fit_cells, largest_block_sentence,
    offload_share_sentence, route_growth_sentence, total_sentence,
};
use super::stack_costs::checksum_shares;
use crate::spec::{Experiment, PlanOptions};
use analysis::cpu::PacketByteFit;
use analysis::findings::CurvePoint;
use record::{CpuProfile, ProfiledStack, ProfiledThread, TestKind, ThreadRole, TrialParams};

fn cp(mean: f64, ci: f64) -> CurvePoint {
    CurvePoint { x: 0.0, mean, ci }
}

fn arg<'a>(e: &'a Experiment, flag: &str) -> Option<&'a str> {
    let i = e.args.iter().position(|a| a == flag)?;
    e.args.get(i + 1).map(String::as_str)
}

/// Seconds of trials an experiment runs: points (the product of its
/// comma lists) × repeats × (duration + `setup`).
fn trial_seconds(e: &Experiment, setup: f64) -> f64 {
    let mut points = 1usize;
    for w in e.args.windows(2) {
        if w[0].starts_with("--") && !matches!(w[0].as_str(), "--repeat" | "--duration") {
            points *= w[1].split(',').count();
        }
    }
    let reps: f64 = arg(e, "--repeat").unwrap().parse().unwrap();
    let dur: f64 = arg(e, "--duration")
        .unwrap()
        .trim_end_matches('s')
        .parse()
        .unwrap();
    points as f64 * reps * (dur + setup)
}

#[test]
fn the_stack_experiments_account_exactly_without_a_topology() {
    for quick in [false, true] {
        let o = PlanOptions {
            quick,
            topology: Some("ether10".into()),
        };
        let e = experiments(&o);
        assert_eq!(e.len(), 5);
        for x in &e {
            assert_eq!(arg(x, "--account"), Some("on"), "{}", x.command());
            assert!(arg(x, "--topology").is_none(), "{}", x.command());
            assert!(!x.is_probed(), "{}", x.command());
            let stack = arg(x, "--stack").or(arg(x, "--server-stack")).unwrap();
            assert!(stack.starts_with("tcplab"), "{}", x.command());
        }
        // The study's plan keeps them: a stack's --routes are its own.
        let plan = crate::plan(super::NAME, &o).unwrap();
        for x in &e {
            assert!(plan.experiments.iter().any(|p| p.id == x.id), "{}", x.id);
        }
    }
}

#[test]
fn the_quick_stack_trials_add_at_most_45_seconds() {
    let o = PlanOptions {
        quick: true,
        topology: None,
    };
    // 0.3 s to set up and tear down a stack trial's place.
    let quick: f64 = experiments(&o).iter().map(|e| trial_seconds(e, 0.3)).sum();
    assert!(quick <= 45.0, "quick stack trials take {quick:.1} s");
    let full: f64 = experiments(&PlanOptions::default())
        .iter()
        .map(|e| trial_seconds(e, 0.3))
        .sum();
    assert!(full > quick, "the full study is richer: {full:.1} s");
}

#[test]
fn the_papers_tables_are_copied_as_printed() {
    let i = table1_column(1024).unwrap();
    // 43.39 s for 20,000 packets: 2169.5 µs each.
    assert!((us_per_packet(TABLE1_SENDER_TOTAL[i], i) - 2169.5).abs() < 1e-9);
    // The rows add up to the total within the paper's measurement error (1.1% at MSS 768).
    for (k, total) in TABLE1_SENDER_TOTAL.iter().enumerate() {
        let sum: f64 = TABLE1.iter().map(|r| r.2[k]).sum();
        assert!(
            (sum - total).abs() / total < 0.02,
            "column {k}: {sum} vs {total}"
        );
    }
    assert_eq!(
        TABLE2[0].1, TABLE1[2].2[i],
        "Table 2's first row is Table 1's (C)"
    );
    assert!(table1_column(1460).is_none());
}

#[test]
fn a_profiles_stack_blocks_are_read_by_role() {
    let p = CpuProfile {
        symbols: vec![
            "tcplab_stack::checksum".into(),
            "tcplab_stack::device_send_write".into(),
            "tcp_sendmsg".into(),
        ],
        threads: vec![ProfiledThread {
            tid: 7,
            tgid: 7,
            comm: "tcplab-stack".into(),
            role: ThreadRole::Sender,
        }],
        stacks: vec![
            ProfiledStack {
                tid: 7,
                unsampled: false,
                kernel: vec![],
                user: vec![0],
                samples: 3,
                ns: 2_000,
            },
            ProfiledStack {
                tid: 7,
                unsampled: false,
                kernel: vec![1],
                user: vec![],
                samples: 1,
                ns: 5_000,
            },
            ProfiledStack {
                tid: 7,
                unsampled: false,
                kernel: vec![2],
                user: vec![],
                samples: 1,
                ns: 9_000,
            },
        ],
        ..CpuProfile::default()
    };
    let s = stack_blocks(&p, ThreadRole::Sender);
    assert_eq!(s.len(), 2, "{s:?}");
    assert!((s["checksum"] - 2e-6).abs() < 1e-15);
    assert!((s["device_send_write"] - 5e-6).abs() < 1e-15);
    assert!(stack_blocks(&p, ThreadRole::Receiver).is_empty());
}

#[test]
fn the_costliest_block_is_claimed_only_beyond_the_cis() {
    let apart = largest_block_sentence(
        "sender",
        &[
            ("checksum".into(), cp(1.0, 0.1)),
            ("device_send_write".into(), cp(3.0, 0.1)),
        ],
    )
    .unwrap();
    assert!(apart.contains("is device_send_write"), "{apart}");
    assert!(apart.contains("apart beyond the 95% CIs"), "{apart}");
    let flipped = largest_block_sentence(
        "sender",
        &[
            ("checksum".into(), cp(3.0, 0.1)),
            ("device_send_write".into(), cp(1.0, 0.1)),
        ],
    )
    .unwrap();
    assert!(flipped.contains("is checksum"), "{flipped}");
    let close = largest_block_sentence(
        "sender",
        &[
            ("checksum".into(), cp(2.9, 0.3)),
            ("device_send_write".into(), cp(3.0, 0.3)),
        ],
    )
    .unwrap();
    assert!(close.contains("cannot be told apart"), "{close}");
    assert!(largest_block_sentence("sender", &[]).is_none());
}

#[test]
fn the_total_is_set_against_the_paper_and_linux_both_ways() {
    let cheaper = total_sentence(1024, 2169.5, &cp(2.0, 0.1), Some((1024, &cp(6.0, 0.2))));
    assert!(cheaper.contains("1085× less than the paper's"), "{cheaper}");
    assert!(
        cheaper.contains("3.0× less than Linux, beyond"),
        "{cheaper}"
    );
    let dearer = total_sentence(1024, 2169.5, &cp(6.0, 0.1), Some((1024, &cp(2.0, 0.2))));
    assert!(dearer.contains("3.0× more than Linux, beyond"), "{dearer}");
    let same = total_sentence(1024, 2169.5, &cp(2.0, 0.5), Some((1024, &cp(2.2, 0.5))));
    assert!(same.contains("cannot be told apart"), "{same}");
    assert!(!total_sentence(256, 990.0, &cp(2.0, 0.1), None).contains("Linux"));
}

#[test]
fn the_cheapest_checksum_per_byte_is_claimed_beyond_the_intervals() {
    let w = "the checksum block alone";
    let v = vec![
        ("bytewise".to_string(), cp(1.2, 0.04)),
        ("rfc1071".to_string(), cp(0.4, 0.04)),
        ("offload".to_string(), cp(0.3, 0.04)),
    ];
    let s = cheapest_per_byte_sentence(w, &v).unwrap();
    assert!(s.contains("(the checksum block alone) is offload"), "{s}");
    assert!(
        s.contains("with rfc1071, the next cheapest, apart beyond"),
        "{s}"
    );
    let flipped = vec![
        ("bytewise".to_string(), cp(0.1, 0.01)),
        ("rfc1071".to_string(), cp(0.4, 0.02)),
    ];
    let s = cheapest_per_byte_sentence(w, &flipped).unwrap();
    assert!(s.contains(") is bytewise"), "{s}");
    let tie = vec![
        ("rfc1071".to_string(), cp(0.40, 0.1)),
        ("incremental".to_string(), cp(0.41, 0.1)),
    ];
    let s = cheapest_per_byte_sentence(w, &tie).unwrap();
    assert!(
        s.contains("no checksum variant costs least per byte"),
        "{s}"
    );
    assert!(
        s.contains("under the 0.200 ns the trials could detect"),
        "{s}"
    );
    assert!(cheapest_per_byte_sentence(w, &tie[..1]).is_none());
}

#[test]
fn offloads_checksum_share_is_about_zero_only_when_its_ci_is() {
    let zero = offload_share_sentence(&cp(0.0005, 0.0002), ("rfc1071", &cp(0.2, 0.01)));
    assert!(zero.contains("about zero"), "{zero}");
    assert!(zero.contains("0.05% ± 0.02%"), "{zero}");
    let not = offload_share_sentence(&cp(0.008, 0.005), ("rfc1071", &cp(0.2, 0.01)));
    assert!(not.contains("not about zero"), "{not}");
}

#[test]
fn delayed_acks_are_claimed_from_the_cis() {
    let halved = delack_sentence(
        &cp(1.0, 0.01),
        &cp(0.5, 0.01),
        &cp(0.8, 0.05),
        &cp(0.4, 0.05),
    );
    assert!(
        halved.contains("ACKs per data segment 1.000 ± 0.010 → 0.500 ± 0.010 (-50%), down beyond"),
        "{halved}"
    );
    assert!(halved.contains("per data packet 0.800 ± 0.050 → 0.400 ± 0.050 (-50%), down"));
    let up = delack_sentence(
        &cp(0.5, 0.01),
        &cp(1.0, 0.01),
        &cp(0.4, 0.05),
        &cp(0.8, 0.05),
    );
    assert!(up.contains("(+100%), up beyond"), "{up}");
    let none = delack_sentence(
        &cp(1.0, 0.1),
        &cp(0.98, 0.1),
        &cp(0.8, 0.05),
        &cp(0.8, 0.05),
    );
    assert!(
        none.contains("no change beyond the 95% CIs (a change under 20% could not"),
        "{none}"
    );
}

#[test]
fn a_routing_table_grows_with_its_size_only_beyond_the_cis() {
    let grows = route_growth_sentence("linear", (1, &cp(0.05, 0.01)), (100000, &cp(90.0, 3.0)));
    assert!(
        grows.contains("it grows with the table, ×1800.0, beyond"),
        "{grows}"
    );
    let flat = route_growth_sentence("trie", (1, &cp(0.05, 0.01)), (100000, &cp(0.055, 0.01)));
    assert!(flat.contains("does not grow beyond the 95% CIs"), "{flat}");
    let down = route_growth_sentence("hash", (1, &cp(0.09, 0.005)), (100000, &cp(0.05, 0.005)));
    assert!(down.contains("lower with more routes"), "{down}");
    let single = route_growth_sentence("hash", (1, &cp(0.09, 0.0)), (100000, &cp(0.05, 0.0)));
    assert!(single.contains("single trials"), "{single}");
}

fn fit(per_packet_us: f64, per_byte_ns: f64, se: f64, r2: f64) -> PacketByteFit {
    PacketByteFit {
        n: 10,
        per_packet_us,
        per_packet_se_us: se,
        per_byte_ns,
        per_byte_se_ns: se,
        r2,
        rms_rel_error: 0.1,
    }
}

#[test]
fn a_fit_is_reported_only_when_it_beats_the_mean_with_costs_not_below_zero() {
    let (cells, w) = fit_cells("rfc1071", &fit(0.5, 0.2, 0.05, 0.8));
    assert!(w.is_none());
    assert_eq!(cells.0, "0.500 ± 0.098");
    assert_eq!(cells.1, "0.200 ± 0.098");
    let (cells, w) = fit_cells("rfc1071", &fit(0.5, 0.2, 0.05, -0.3));
    assert_eq!(cells.0, "fit failed");
    assert!(w.unwrap().contains("failed: R² -0.30"));
    let (cells, w) = fit_cells("rfc1071", &fit(0.5, -0.1, 0.2, 0.3));
    assert_eq!(cells.1, "unresolved");
    assert!(w
        .unwrap()
        .contains("its 95% interval holds zero, unresolved"));
    let (cells, w) = fit_cells("rfc1071", &fit(0.5, -1.0, 0.1, 0.3));
    assert_eq!(cells.1, "impossible");
    assert!(w
        .unwrap()
        .contains("below zero beyond its 95% interval, impossible"));
}

#[test]
fn a_checksum_share_above_all_of_the_busy_time_is_left_out_as_impossible() {
    let trial = |checksum_s: f64| StackTrial {
        params: TrialParams::defaults(TestKind::TcpStream),
        blocks: [("checksum".to_string(), checksum_s)].into_iter().collect(),
        hc: Vec::new(),
        busy_s: 0.1,
        segments: 1000.0,
        acks: 0.0,
        incremental: None,
        bytes: 1e6,
    };
    let mut w = Vec::new();
    let ok = checksum_shares(&[trial(0.02), trial(0.03)], "checksum-stack", &mut w);
    assert_eq!(ok.len(), 2);
    assert!(w.is_empty());
    let v = checksum_shares(&[trial(0.02), trial(0.15)], "checksum-stack", &mut w);
    assert_eq!(v.len(), 1);
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("150.0% of busy time"), "{}", w[0]);
    assert!(w[0].contains("impossible, left out"), "{}", w[0]);
}

#[test]
fn the_incremental_arms_patched_acks_are_counted_and_judged_both_ways() {
    let most = patched_acks_sentence(9_990.0, 10_000.0);
    assert!(most.contains("patched 9990 of the 10000 ACKs"), "{most}");
    assert!(most.contains("(99.9%)"), "{most}");
    assert!(
        most.contains("measures the incremental update on most"),
        "{most}"
    );
    let none = patched_acks_sentence(0.0, 10_000.0);
    assert!(none.contains("(0.0%)"), "{none}");
    assert!(
        none.contains("rfc1071's full sums under another name"),
        "{none}"
    );
    let few = patched_acks_sentence(1_000.0, 10_000.0);
    assert!(few.contains("(10.0%)"), "{few}");
    assert!(few.contains("mostly measured rfc1071's full sums"), "{few}");
    // No ACK at all: nothing patched, no division by zero.
    assert!(patched_acks_sentence(0.0, 0.0).contains("none"));
}

#[test]
fn the_incremental_checksums_cost_is_claimed_only_beyond_the_cis() {
    let down = ack_checksum_sentence(&cp(0.30, 0.01), &cp(0.25, 0.01));
    assert!(down.contains("rfc1071 → incremental"), "{down}");
    assert!(
        down.contains(
            "checksum-block µs per data packet 0.300 ± 0.010 → 0.250 ± 0.010 (-17%), down beyond"
        ),
        "{down}"
    );
    let up = ack_checksum_sentence(&cp(0.25, 0.01), &cp(0.30, 0.01));
    assert!(up.contains("up beyond the 95% CIs"), "{up}");
    let same = ack_checksum_sentence(&cp(0.30, 0.05), &cp(0.29, 0.05));
    assert!(same.contains("no change beyond the 95% CIs"), "{same}");
}
