//! `--cpu-speed` (issue 29, item 2) on real transfers between the stack
//! on a TUN and Linux's TCP: a slower CPU by time dilation is exact where
//! it can be and says where it cannot.
//!
//! - Within each run, every part of the slowed end's busy time is
//!   slowed: its busy time is its own busy time (without the spins) / F,
//!   within 2% (measured 2.000-2.010, 3.97-4.02 and 8.008-8.035 at
//!   F = 1/2, 1/4, 1/8 over five runs), and what is still owed at the end is under 2%
//!   of what was owed. Each class is still charged 1/F of its time (a
//!   consistency check of the report: true by construction).
//! - Across runs, printed, not asserted: throughput against full speed
//!   and each class's time per packet. They compare trials minutes apart
//!   on a shared host, where the full-speed trials alone moved 1.9-2.6
//!   Gbit/s between two runs of this test; `scripts/bench-dilation`
//!   measures them, alternated over N rounds, with medians.
//! - A slowed receiver's capacity μ (the bytes it took per second of its
//!   busy time, the spins included) predicts the throughput of Linux's
//!   faster sender into it within 10% (a comparison within each trial).
//!
//! The runs of each speed are alternated, and each trial counts only when
//! it ran on a quiet host (testkit). Needs root and TUN.

use record::factor::{Account, CpuSpeed};
use record::{StackImpl, TestKind, TrialParams};
#[path = "support/stack_place.rs"]
mod stack_place;

use stack_place::place;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const CLASSES: [&str; 3] = ["compute", "data", "device"];
const BYTES: u64 = 16 << 20;

/// A 16 MB stream with the stack's end (the client) sending, or
/// receiving when `reverse`, at `speed` (`None`: full speed, accounted).
fn stream(speed: Option<&str>, reverse: bool) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = StackImpl::Tcplab;
    p.bytes = Some(BYTES);
    p.duration_s = None;
    p.reverse = reverse;
    p.account = Some(Account::On);
    p.cpu_speed = speed.map(|s| CpuSpeed::parse(s).unwrap());
    // Linux's end: an ACK per segment as a receiver (fewer ways for the
    // ACK ratio to follow the rate), cubic as a sender (BBR without fq
    // paces by a timer).
    p.quickack = !reverse;
    p.cc = Some("cubic".into());
    p
}

/// What one trial of the stack's end measured.
#[derive(Debug, Clone, Copy)]
struct Run {
    throughput_bps: f64,
    busy_s: f64,
    dilation_s: f64,
    /// What the slower CPU added to busy time in no block (the loop
    /// between brackets and the brackets' own cost).
    outside_added_s: f64,
    /// Each class's time as run and on the slower CPU.
    class_s: [f64; 3],
    dilated_s: [f64; 3],
    packets: f64,
    run_delay_s: f64,
}

impl Run {
    fn of(o: &record::TrialOutcome) -> Run {
        let m = |k: &str| {
            o.metrics
                .get(&format!("stack_client_account_{k}"))
                .copied()
                .unwrap_or(0.0)
        };
        let class_s = CLASSES.map(|c| m(&format!("{c}_s")));
        // At full speed a class's time is as run.
        let dilated_s = if o.metrics.contains_key("stack_client_account_dilation_s") {
            CLASSES.map(|c| m(&format!("{c}_dilated_s")))
        } else {
            class_s
        };
        Run {
            throughput_bps: o.metrics["throughput_bps"],
            busy_s: m("busy_s"),
            dilation_s: m("dilation_s"),
            outside_added_s: m("dilation_outside_added_s"),
            class_s,
            dilated_s,
            packets: m("packets"),
            run_delay_s: m("run_delay_s"),
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs each speed `rounds` times, alternated; the runs of each.
fn alternated(speeds: &[Option<&str>], reverse: bool, rounds: usize) -> Vec<Vec<Run>> {
    let Some(mut place) = place() else {
        return Vec::new();
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut runs = vec![Vec::new(); speeds.len()];
    for _ in 0..rounds {
        for (i, speed) in speeds.iter().enumerate() {
            let what = format!("--cpu-speed {speed:?} reverse={reverse}");
            let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
                place
                    .run(&stream(*speed, reverse), &stop)
                    .unwrap_or_else(|e| panic!("{what}: {e}"))
            });
            let o = q.value;
            assert_eq!(o.metrics["bytes"], BYTES as f64, "{what}");
            let r = Run::of(&o);
            eprintln!("{what}: {r:?}");
            runs[i].push(r);
        }
    }
    runs
}

#[test]
fn a_slower_stack_senders_whole_busy_time_is_its_own_over_f() {
    let speeds = [
        None,
        Some("sender=0.5"),
        Some("sender=0.25"),
        Some("sender=0.125"),
    ];
    let runs = alternated(&speeds, false, 3);
    if runs.is_empty() {
        return;
    }
    let full = &runs[0];
    let per_packet = |r: &Run, c: usize, dilated: bool| {
        (if dilated {
            r.dilated_s[c]
        } else {
            r.class_s[c]
        }) / r.packets
    };
    for (f, slow) in [(0.5, &runs[1]), (0.25, &runs[2]), (0.125, &runs[3])] {
        // What is still owed at the end is under 2% of what was owed (the
        // spins and the bookkeeping after each exit pay the rest by
        // construction), and the end's whole busy time is its own busy
        // time / F: the check that every part of it was slowed.
        for r in slow.iter() {
            let owed: f64 =
                (0..3).map(|c| r.dilated_s[c] - r.class_s[c]).sum::<f64>() + r.outside_added_s;
            assert!(
                (r.dilation_s - owed).abs() <= 0.02 * owed,
                "F={f}: spun {} s for {owed} s owed",
                r.dilation_s
            );
            let own = r.busy_s - r.dilation_s;
            eprintln!(
                "F={f}: busy {:.4} s, of which its own {own:.4} s: {:.4} (1/F = {})",
                r.busy_s,
                r.busy_s / own,
                1.0 / f
            );
            assert!(
                (r.busy_s * f / own - 1.0).abs() <= 0.02,
                "F={f}: busy {} s against its own {own} s",
                r.busy_s
            );
        }
        // Per packet across runs, printed, not asserted: a class's own
        // time per packet moves between runs with the host's load and with
        // the end's pace (crates/stack/README.md gives the figures).
        for (c, name) in CLASSES.iter().enumerate() {
            let at_full = median(full.iter().map(|r| per_packet(r, c, false)).collect());
            let slowed = median(slow.iter().map(|r| per_packet(r, c, true)).collect());
            let ratio = slowed / at_full;
            eprintln!(
                "F={f}: {name} {:.0} ns per packet at full speed, {:.0} slowed: {ratio:.3} (1/F = {})",
                at_full * 1e9,
                slowed * 1e9,
                1.0 / f
            );
        }
        let thr = |rs: &[Run]| median(rs.iter().map(|r| r.throughput_bps).collect());
        let bytes_per_packet =
            |rs: &[Run]| median(rs.iter().map(|r| BYTES as f64 / r.packets).collect());
        let ratio = thr(slow) / thr(full);
        eprintln!(
            "F={f}: throughput {:.0} Mbit/s against {:.0} at full speed: {ratio:.3} (F = {f}); bytes per packet {:.0} against {:.0}; busy {:.3} s against {:.3}; the most a slowed run waited runnable {:.2} ms",
            thr(slow) / 1e6,
            thr(full) / 1e6,
            bytes_per_packet(slow),
            bytes_per_packet(full),
            median(slow.iter().map(|r| r.busy_s).collect()),
            median(full.iter().map(|r| r.busy_s).collect()),
            slow.iter().map(|r| r.run_delay_s).fold(0.0, f64::max) * 1e3,
        );
    }
}

#[test]
fn a_slower_stack_receivers_capacity_predicts_a_fast_senders_throughput() {
    let runs = alternated(&[Some("receiver=0.25")], true, 3);
    if runs.is_empty() {
        return;
    }
    for r in &runs[0] {
        // μ: the bytes the receiver took per second of its busy time.
        let mu = BYTES as f64 * 8.0 / r.busy_s;
        let ratio = r.throughput_bps / mu;
        eprintln!(
            "receiver at 0.25: μ {:.0} Mbit/s, Linux's sender into it {:.0} Mbit/s: {ratio:.3}",
            mu / 1e6,
            r.throughput_bps / 1e6
        );
        assert!(
            (ratio - 1.0).abs() <= 0.10,
            "throughput {ratio:.3} of the receiver's μ"
        );
    }
}
