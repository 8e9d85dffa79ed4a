//! The SunOS IPC report's findings follow synthetic data in both
//! directions: the load finding (raised, lowered, no change with the
//! smallest detectable change), the ACKs against their chance share, and
//! local throughput against the copy rates, like with like.

use super::acks::{ack_finding, wilson95, AckTally};
use super::change::{compare, Change, Estimate};
use super::load::{queue_finding, throughput_finding};
use super::report::memory_finding;
use crate::data::StudyData;
use crate::fixtures::{finding_texts, outcome_of, study_run_of};
use record::probe_event::{tcp_flags, ProbeEvent, ProbeId};
use record::{LoadSpec, TestKind, TrialParams};
use std::collections::BTreeMap;

/// One synthetic point: its parameters, and each trial's metrics.
type Point = (TrialParams, Vec<Vec<(&'static str, f64)>>);

/// A sunos-ipc run of the given experiments; `events` gives probe records
/// to trials by their 1-based id.
fn run(exps: Vec<(&str, Vec<Point>)>, events: BTreeMap<i64, Vec<ProbeEvent>>) -> StudyData {
    let exps = exps
        .into_iter()
        .map(|(id, pts)| {
            let pts = pts
                .into_iter()
                .map(|(params, per_trial)| {
                    (params, per_trial.into_iter().map(outcome_of).collect())
                })
                .collect();
            (id, pts)
        })
        .collect();
    study_run_of("sunos-ipc", "", exps, events)
}

fn findings(d: &StudyData) -> Vec<String> {
    finding_texts(super::report(d))
}

/// A load point with `workers` on the receiver (0: none) and these
/// throughputs (Mbit/s), one per trial.
fn load_point(workers: u32, mbit: &[f64]) -> Point {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.topology = "veth".into();
    if workers > 0 {
        p.load = Some(LoadSpec {
            side: record::LoadSide::Receiver,
            workers,
        });
    }
    (
        p,
        mbit.iter()
            .map(|m| vec![("throughput_bps", m * 1e6)])
            .collect(),
    )
}

fn load_finding(levels: Vec<Point>) -> String {
    let f = findings(&run(vec![("load", levels)], BTreeMap::new()));
    f.into_iter()
        .find(|f| f.starts_with("Against the unloaded"))
        .unwrap_or_else(|| panic!("no load finding"))
}

#[test]
fn load_that_raises_throughput_is_called_higher() {
    let f = load_finding(vec![
        load_point(0, &[99.0, 100.0, 101.0]),
        load_point(2, &[169.0, 170.0, 171.0]),
        load_point(8, &[98.0, 100.0, 102.0]),
    ]);
    assert!(
        f.starts_with("Against the unloaded 100 ± 2 Mbit/s, throughput with 2 workers on the receiver is higher: 1.70× the unloaded (170 ± 2 Mbit/s); with 8 workers it is unchanged within the 95% CIs"),
        "{f}"
    );
    assert!(
        f.ends_with(
            "Unlike the paper's sharp drop, throughput is higher with 2 workers and lower with no level of load."
        ),
        "{f}"
    );
}

#[test]
fn load_that_lowers_throughput_is_called_lower() {
    let f = load_finding(vec![
        load_point(0, &[99.0, 100.0, 101.0]),
        load_point(2, &[98.0, 100.0, 102.0]),
        load_point(8, &[49.0, 50.0, 51.0]),
    ]);
    assert!(
        f.contains("with 8 workers it is lower: 50% of the unloaded (50.0 ± 2.5 Mbit/s)"),
        "{f}"
    );
    assert!(
        f.ends_with(
            "As in the paper, CPU-bound load on the receiver lowers throughput (with 8 workers)."
        ),
        "{f}"
    );
    // Both at once: a rise at 2 workers and a fall at 8.
    let g = load_finding(vec![
        load_point(0, &[99.0, 100.0, 101.0]),
        load_point(2, &[169.0, 170.0, 171.0]),
        load_point(8, &[49.0, 50.0, 51.0]),
    ]);
    assert!(
        g.ends_with("Throughput is lower with 8 workers, as in the paper, but higher with 2 workers, which the paper did not see."),
        "{g}"
    );
}

#[test]
fn load_within_the_cis_is_no_change_with_the_smallest_detectable_change() {
    // A 1.47× mean, as in the golden run, but with wide intervals.
    let f = load_finding(vec![
        load_point(0, &[4017.0, 3726.0, 3694.0]),
        load_point(2, &[5206.0, 6817.0, 4821.0]),
    ]);
    assert!(
        f.contains("with 2 workers on the receiver is unchanged within the 95% CIs (5.61 ± 2.63 Gbit/s; a change smaller than 3.07 Gbit/s (81% of the unloaded) could not have been seen)"),
        "{f}"
    );
    assert!(
        f.ends_with("Unlike the paper, no level of load changes throughput beyond the 95% CIs."),
        "{f}"
    );
    assert!(!f.contains("higher") && !f.contains("is lower"), "{f}");
}

#[test]
fn a_single_trial_claims_no_change_either_way() {
    // Throughputs in bit/s.
    let base = Estimate {
        mean: 100e6,
        ci: f64::NAN,
        n: 1,
    };
    let other = Estimate {
        mean: 200e6,
        ci: 1e6,
        n: 3,
    };
    assert_eq!(compare(&base, &other), Change::TooFewTrials);
    let levels = vec![(0, base), (2, other)];
    let f = throughput_finding(&levels).unwrap();
    assert!(f.contains("no change can be claimed"), "{f}");
    assert!(f.contains("100 Mbit/s (one trial)"), "{f}");
    // Without an unloaded level there is nothing to compare with.
    assert_eq!(throughput_finding(&levels[1..]), None);
}

/// Fig. 9's finding: the receive socket queue (bytes per probed trial, in
/// KB) and the receiver's preempted share (in %), each by the one number
/// rule, and the claim flips with the data.
#[test]
fn the_queue_finding_follows_the_data_in_kb_and_percent() {
    let unloaded = [2048.0, 2150.0, 1946.0];
    let grown = [20480.0, 21504.0, 19456.0];
    let (pu, pl) = ([0.010, 0.011, 0.009], [0.30, 0.33, 0.27]);
    let f = queue_finding(&unloaded, &grown, (&pu, &pl)).unwrap();
    assert!(
        f.starts_with("Against the unloaded receive socket queue of 2.00 ± 0.25 KB on average (3 probed trials), with receiver load (3 trials) it is higher: 10.00× the unloaded (20.0 ± 2.5 KB)"),
        "{f}"
    );
    assert!(
        f.contains("preempted share of its time, 1.00 ± 0.25 % unloaded, is higher: 30.00× the unloaded (30.0 ± 7.5 %)"),
        "{f}"
    );
    let same = [2000.0, 2150.0, 1900.0];
    let g = queue_finding(&unloaded, &same, (&pu, &pu)).unwrap();
    assert!(
        g.contains("with receiver load (3 trials) it is unchanged within the 95% CIs (1.97 ± 0.31 KB; a change smaller than 0.553 KB"),
        "{g}"
    );
    assert!(!g.contains("is higher"), "{g}");
}

/// Fig. 9's finding the other way: a loaded receive socket queue and a
/// preempted share both lower beyond the CIs read "is lower", with the
/// loaded value as a percentage of the unloaded, and never "is higher".
#[test]
fn the_queue_finding_says_lower_when_the_loaded_queue_and_preemption_fall() {
    let unloaded = [20480.0, 21504.0, 19456.0];
    let shrunk = [5120.0, 5376.0, 4864.0];
    let (pu, pl) = ([0.30, 0.33, 0.27], [0.15, 0.165, 0.135]);
    let f = queue_finding(&unloaded, &shrunk, (&pu, &pl)).unwrap();
    assert_eq!(
        f,
        "Against the unloaded receive socket queue of 20.0 ± 2.5 KB on average (3 probed trials), with receiver load (3 trials) it is lower: 25% of the unloaded (5.00 ± 0.62 KB); the receiving thread's preempted share of its time, 30.0 ± 7.5 % unloaded, is lower: 50% of the unloaded (15.0 ± 3.7 %)."
    );
    assert!(!f.contains("is higher") && !f.contains("unchanged"), "{f}");
}

#[test]
fn wilson_interval_brackets_the_share() {
    let (lo, hi) = wilson95(19, 26);
    assert!(lo < 19.0 / 26.0 && 19.0 / 26.0 < hi);
    assert!(
        (lo - 0.539).abs() < 0.005 && (hi - 0.862).abs() < 0.005,
        "{lo} {hi}"
    );
    assert_eq!(wilson95(0, 10).0, 0.0);
    assert!(wilson95(10, 10).1 > 1.0 - 1e-12);
}

#[test]
fn ack_share_is_judged_against_its_chance_share() {
    let tally = |after_read, chance| AckTally {
        acks: 100,
        after_read,
        chance,
        reads: 40,
    };
    let more = ack_finding(&tally(80, 0.3)).unwrap();
    assert!(
        more.starts_with("Of 100 ACKs the receiver sent, 80% (71% to 87%, 95% CI) followed a read within 50 µs; by chance 30% would have"),
        "{more}"
    );
    assert!(
        more.ends_with("As in the paper, the application's reads drive the ACKs.")
            || more.contains("as in the paper, the application's reads drive the ACKs"),
        "{more}"
    );
    // The same 80% where reads cover nearly all the time: chance explains more.
    let fewer = ack_finding(&tally(80, 0.97)).unwrap();
    assert!(
        fewer.contains("unlike the paper, the reads do not drive the ACKs here"),
        "{fewer}"
    );
    let same = ack_finding(&tally(80, 0.78)).unwrap();
    assert!(
        same.contains("Chance lies within the CI: with 100 ACKs a difference smaller than about 8 points could not have been seen"),
        "{same}"
    );
    assert_eq!(ack_finding(&tally(0, 0.5).with_acks(0)), None);
}

impl AckTally {
    fn with_acks(mut self, acks: u64) -> AckTally {
        self.acks = acks;
        self
    }
}

/// A probe record of the flow `sport` → `dport` at `ts` ns.
fn rec(probe: ProbeId, ts: u64, sport: u16, dport: u16, len: u32) -> ProbeEvent {
    ProbeEvent {
        ts_ns: ts,
        id: ts,
        len,
        seq: 0,
        ack: 0,
        ifindex: 1,
        x: [0; 4],
        sport,
        dport,
        win: 0,
        probe: probe as u8,
        flags: tcp_flags::ACK,
        cpu: 0,
        tid: 1,
    }
}

/// One ack-local trial's records over 10 ms: data from 1000 to 2000, a
/// read every ms, and an ACK `ack_delay_us` after each read.
fn ack_trial(ack_delay_us: u64) -> Vec<ProbeEvent> {
    let mut v = vec![rec(ProbeId::DevQueue, 0, 1000, 2000, 1448)];
    for i in 0..10u64 {
        let t = 100_000 + i * 1_000_000;
        v.push(rec(ProbeId::RecvApp, t, 2000, 1000, 8192));
        v.push(rec(
            ProbeId::DevQueue,
            t + ack_delay_us * 1000,
            2000,
            1000,
            0,
        ));
    }
    v
}

fn ack_findings(ack_delay_us: u64) -> Vec<String> {
    let p = TrialParams::defaults(TestKind::TcpStream);
    let trials = vec![vec![("throughput_bps", 1e9)]; 3];
    let events = (1..=3).map(|id| (id, ack_trial(ack_delay_us))).collect();
    findings(&run(vec![("ack-local", vec![(p, trials)])], events))
}

#[test]
fn acks_after_sparse_reads_beat_chance_and_acks_away_from_them_do_not() {
    // Reads every ms cover 50 µs of each ms: about 5% by chance.
    let after = ack_findings(10);
    let f = after.iter().find(|f| f.starts_with("Of 30 ACKs")).unwrap();
    assert!(
        f.contains(
            "100% (89% to 100%, 95% CI) followed a read within 50 µs; by chance 5% would have"
        ),
        "{f}"
    );
    assert!(f.contains("reads drive the ACKs"), "{f}");
    let away = ack_findings(400);
    let g = away.iter().find(|f| f.starts_with("Of 30 ACKs")).unwrap();
    assert!(g.contains("0% (0% to 11%, 95% CI)"), "{g}");
    assert!(g.contains("Chance lies within the CI"), "{g}");
}

#[test]
fn local_throughput_is_set_against_both_copy_rates_named_for_what_they_are() {
    let f = memory_finding(2.71e9, 0.69e9, 262144.0, Some(160e9), Some(18.5e9)).unwrap();
    assert!(
        f.starts_with("Local TCP's highest mean is 21.7 ± 5.5 Gbit/s (256 KB buffers): 1.7% of this host's in-cache copy rate (160 GB/s"),
        "{f}"
    );
    assert!(
        f.contains("and 15% of its DRAM copy rate (18.5 GB/s"),
        "{f}"
    );
    // The other way round: far more than two copies allow is flagged.
    let impossible = memory_finding(90e9, 1e9, 262144.0, Some(160e9), Some(18.5e9));
    let w = impossible.unwrap_err();
    assert!(w.contains("56% of this host's in-cache copy rate"), "{w}");
    assert!(w.contains("no share is stated"), "{w}");
    // Only a DRAM rate: said plainly that it is not like with like.
    let dram = memory_finding(2.71e9, 0.0, 262144.0, None, Some(18.5e9)).unwrap();
    assert!(
        dram.contains("15% of this host's DRAM copy rate (18.5 GB/s), which measures copies of buffers far larger than the cache, not this transfer's"),
        "{dram}"
    );
    assert!(memory_finding(2.71e9, 0.0, 262144.0, None, None).is_err());
}

/// A socket buffer point on a delayed link: `mbit` ± 2%.
fn buf_point(size: f64, mbit: f64) -> super::report::BufPoint {
    super::report::BufPoint {
        place: "ether10 (ether10,delay=10ms)".into(),
        size,
        throughput: analysis::findings::CurvePoint {
            x: size,
            mean: mbit,
            ci: mbit * 0.02,
        },
        rtt_s: Some(0.02),
        acks_per_segment: None,
    }
}

#[test]
fn buffers_below_the_bandwidth_delay_product_raise_throughput_as_buffer_over_rtt_predicts() {
    use super::report::{window_limited_mbit, window_step_sentence};
    // 4 KB per 20 ms is 1.64 Mbit/s, 16 KB 6.55 Mbit/s.
    assert!((window_limited_mbit(4096.0, 0.02) - 1.6384).abs() < 1e-9);
    let (a, b) = (buf_point(4096.0, 1.5), buf_point(16384.0, 6.1));
    let s = window_step_sentence(&a.place, 0.02, &a, &b);
    assert!(
        s.contains("4 KB allows 1.64 Mbit/s and 16 KB 6.55 Mbit/s"),
        "{s}"
    );
    assert!(s.contains("throughput rose from 1.50 ± 0.03 Mbit/s"), "{s}");
    assert!(s.contains("(4.07×)"), "{s}");
    // No BDP to fill: 16 KB within CI of 4 KB is no rise, with the
    // smallest rise the trials could have seen.
    let (a, b) = (buf_point(4096.0, 9.4), buf_point(16384.0, 9.5));
    let s = window_step_sentence(&a.place, 0.02, &a, &b);
    assert!(s.contains("did not beat 4 KB"), "{s}");
    assert!(s.contains("a rise of 378 kbit/s"), "{s}");
    assert!(s.contains("(base RTT 20.0 ms,"), "{s}");
}

#[test]
fn every_sockbuf_size_has_a_delayed_twin_and_the_queue_experiments_count_segments() {
    let plan = super::plan(&crate::spec::PlanOptions {
        quick: true,
        topology: None,
    });
    let cmd = |id: &str| {
        plan.experiments
            .iter()
            .find(|e| e.id == id)
            .map(|e| e.args.join(" "))
            .unwrap_or_default()
    };
    assert!(cmd("sockbuf-delay-4k").contains("--link ether10,delay=10ms"));
    assert!(cmd("sockbuf-delay-16k").contains("--sndbuf 16K --rcvbuf 16K"));
    assert!(cmd("queues").contains("--offload off"));
    assert!(cmd("load-queues").contains("--offload off"));
}

/// A packet queue's statistics: `n` packets, a mean and a max length.
fn packet_queue(name: &str, mean: f64, max: f64) -> analysis::path::QueueStats {
    analysis::path::QueueStats {
        queue: name.into(),
        n: 100,
        mean,
        max,
        series: Vec::new(),
    }
}

/// Probed trials' packet queues: per trial, the interface queue's and the
/// IP input queue's mean lengths (each trial's longest is twice its mean).
fn queue_trials(v: &[(f64, f64)]) -> Vec<Vec<analysis::path::QueueStats>> {
    let dev = "interface queue (packets from net_dev_queue to the driver, at entry)";
    let ip = "IP input queue (packets from the driver to netif_receive_skb, at entry)";
    v.iter()
        .map(|&(d, i)| vec![packet_queue(dev, d, 2.0 * d), packet_queue(ip, i, 2.0 * i)])
        .collect()
}

fn queues_claim(v: &[(f64, f64)]) -> Option<String> {
    use super::packet_queues::packet_queues_finding;
    let t = queue_trials(v);
    packet_queues_finding(&t.iter().map(|q| q.as_slice()).collect::<Vec<_>>())
}

#[test]
fn the_longer_packet_queue_is_named_only_beyond_the_cis() {
    // Interface 6 ± 1.2, IP input 1.2 ± 0.25 over three trials: as in the paper.
    let paper_like = queues_claim(&[(5.5, 1.1), (6.0, 1.2), (6.5, 1.3)]).unwrap();
    assert!(
        paper_like.contains("over 3 probed trials: the interface queue held 6.00 ± 1.24 packets on average (at most 13.0), the IP input queue 1.20 ± 0.25 packets (at most 2.60)"),
        "{paper_like}"
    );
    assert!(
        paper_like
            .contains("the interface queue was the longer beyond the 95% CIs, as in the paper"),
        "{paper_like}"
    );
    // The data flip: the IP input queue is the longer, unlike the paper.
    let unlike = queues_claim(&[(1.1, 5.5), (1.2, 6.0), (1.3, 6.5)]).unwrap();
    assert!(
        unlike.contains("the IP input queue was the longer beyond the 95% CIs, unlike the paper"),
        "{unlike}"
    );
    // The same means with wide CIs: neither, with what could be seen.
    let within = queues_claim(&[(1.0, 1.0), (11.0, 0.2), (6.0, 2.4)]).unwrap();
    assert!(
        within.contains("neither was the longer within the 95% CIs (a difference smaller than"),
        "{within}"
    );
    assert!(!within.contains("was the longer beyond"), "{within}");
    // One trial: no CI, no claim; one queue alone: no comparison.
    let one = queues_claim(&[(6.0, 1.2)]).unwrap();
    assert!(
        one.contains("with one probed trial there is no CI"),
        "{one}"
    );
    use super::packet_queues::packet_queues_finding;
    let ip_only = [packet_queue(
        "IP input queue (packets from the driver to netif_receive_skb, at entry)",
        4.5,
        30.0,
    )];
    assert!(packet_queues_finding(&[&ip_only[..]]).is_none());
}

fn acks(v: &[f64]) -> super::change::Estimate {
    super::change::Estimate::from_values(v).unwrap()
}

#[test]
fn the_ack_ratio_is_a_difference_only_beyond_the_cis() {
    use super::ack_ratio::ack_ratio_sentence;
    let say = |small: &[f64], large: &[f64]| {
        ack_ratio_sentence("veth", (4096.0, acks(small)), (262144.0, acks(large)))
    };
    // 0.71 against 0.53 with tight CIs: more with the small buffers.
    let more = say(&[0.70, 0.71, 0.72], &[0.52, 0.53, 0.54]);
    assert!(
        more.starts_with("On veth, the receiver sent 0.710 ± 0.025 ACKs per data segment it received with 4 KB buffers and 0.530 ± 0.025 with 256 KB: 1.34× as many with the smaller buffers, beyond the 95% CIs"),
        "{more}"
    );
    // The data flip: fewer with the small buffers, unlike the paper.
    let fewer = say(&[0.52, 0.53, 0.54], &[0.70, 0.71, 0.72]);
    assert!(
        fewer.contains(
            "0.746× as many with the smaller buffers, fewer beyond the 95% CIs, unlike the paper"
        ),
        "{fewer}"
    );
    // The same means with wide CIs: the same, with what could be seen.
    let same = say(&[0.5, 0.9, 0.73], &[0.3, 0.76, 0.53]);
    assert!(
        same.contains("the same within the 95% CIs; a difference smaller than"),
        "{same}"
    );
    assert!(!same.contains("as many with the smaller"), "{same}");
    // One trial: no claim.
    let one = say(&[0.71], &[0.52, 0.53, 0.54]);
    assert!(
        one.contains("0.710 (one trial)") && one.contains("no difference is claimed"),
        "{one}"
    );
}

/// Points on veth at 4 KB, 16 KB and 1 MB with these (Mbit/s, CI).
fn buffers(v: [(f64, f64); 3]) -> Vec<super::report::BufPoint> {
    [4096.0, 16384.0, 1048576.0]
        .iter()
        .zip(v)
        .map(|(&size, (mean, ci))| super::report::BufPoint {
            place: "veth".into(),
            size,
            throughput: analysis::findings::CurvePoint { x: size, mean, ci },
            rtt_s: None,
            acks_per_segment: None,
        })
        .collect()
}

#[test]
fn the_largest_buffer_step_is_one_beyond_the_cis() {
    use super::steps::largest_step_sentence;
    let step = |v: &[super::report::BufPoint]| {
        largest_step_sentence("veth", &v.iter().collect::<Vec<_>>())
    };
    // 4 → 16 KB gains 2.71× beyond the CIs: where the paper found it.
    let s = step(&buffers([(700.0, 20.0), (1900.0, 30.0), (1950.0, 40.0)]));
    assert_eq!(
        s.as_deref(),
        Some("On veth, the largest step is from 4 KB to 16 KB buffers (2.71×, beyond the 95% CIs), where the paper found it.")
    );
    // A larger ratio within the CIs does not count; 16 KB → 1 MB does.
    let s = step(&buffers([(300.0, 250.0), (760.0, 300.0), (1950.0, 40.0)])).unwrap();
    assert!(
        s.contains("from 16 KB to 1 MB buffers (2.57×, beyond the 95% CIs); the paper's was from 4 KB to 16 KB"),
        "{s}"
    );
    // No step beyond the CIs: none is named, with the rise that could be missed.
    let s = step(&buffers([(700.0, 100.0), (760.0, 100.0), (800.0, 100.0)])).unwrap();
    assert!(
        s.starts_with("On veth, no step to a larger buffer raised throughput beyond the 95% CIs (a rise smaller than 200 Mbit/s"),
        "{s}"
    );
    assert_eq!(step(&buffers([(1.0, 0.0); 3])[..1]), None);
    // A sweep with 8 KB between: a 4 → 8 KB step is only part of the
    // paper's 4 → 16 KB one, and says so.
    let mut v = buffers([(700.0, 20.0), (1900.0, 30.0), (1950.0, 40.0)]);
    v[1].size = 8192.0;
    let s = step(&v).unwrap();
    assert!(
        s.ends_with(
            "(2.71×, beyond the 95% CIs), the first part of the paper's step from 4 KB to 16 KB."
        ),
        "{s}"
    );
}

/// Three trials' values for two names.
fn two(a: (&str, [f64; 3]), b: (&str, [f64; 3])) -> super::leaders::PerTrial {
    (0..3)
        .map(|k| vec![(a.0.to_string(), a.1[k]), (b.0.to_string(), b.1[k])])
        .collect()
}

#[test]
fn the_fullest_queue_and_slowest_hop_are_named_only_beyond_the_cis() {
    use super::leaders::{queue_wait_sentence, slowest_hop_sentence};
    let rq = "receive socket queue";
    let sq = "send socket queue";
    // 60 KB against 20 KB, steady: the receive queue, beyond the CIs.
    let s = queue_wait_sentence(&two(
        (sq, [20480.0, 20480.0 * 1.05, 20480.0 * 0.95]),
        (rq, [61440.0, 61440.0 * 1.05, 61440.0 * 0.95]),
    ))
    .unwrap();
    assert!(
        s.starts_with("Data waits most in the receive socket queue: 60.0 ± 7.5 KB over 3 trials, beyond the 95% CIs of the next, the send socket queue (20.0 ± 2.5 KB)."),
        "{s}"
    );
    // The data flip: the send queue.
    let s =
        queue_wait_sentence(&two((sq, [61440.0, 64512.0, 58368.0]), (rq, [20480.0; 3]))).unwrap();
    assert!(
        s.starts_with("Data waits most in the send socket queue: "),
        "{s}"
    );
    // Trials that disagree: neither is named.
    let s = queue_wait_sentence(&two(
        (sq, [61440.0, 10240.0, 40960.0]),
        (rq, [20480.0, 61440.0, 30720.0]),
    ))
    .unwrap();
    assert!(
        s.starts_with("No one socket queue stands out: the ")
            && s.contains("could not have been seen"),
        "{s}"
    );
    // Hops: the slowest at the median, then within CI, then one trial.
    let s =
        slowest_hop_sentence(&two(("ip", [5.0, 5.1, 4.9]), ("tcp", [20.0, 21.0, 19.0]))).unwrap();
    assert!(
        s.starts_with("The slowest hop at the median is the tcp: 20.0 ± 2.5 µs over 3 trials, beyond the 95% CIs of the next, the ip ("),
        "{s}"
    );
    let s =
        slowest_hop_sentence(&two(("ip", [5.0, 25.0, 15.0]), ("tcp", [20.0, 10.0, 15.0]))).unwrap();
    assert!(s.starts_with("No one hop stands out"), "{s}");
    // Shares of a packet's time: the same rule.
    let s = super::leaders::largest_share_sentence(&two(
        ("ip", [0.2, 0.21, 0.19]),
        ("tcp", [0.8, 0.79, 0.81]),
    ))
    .unwrap();
    assert!(
        s.starts_with("The largest share of a packet's time at the median is the tcp: 80.0 ± 2.5 % over 3 trials"),
        "{s}"
    );
    let s = super::leaders::largest_share_sentence(&two(
        ("ip", [0.2, 0.8, 0.5]),
        ("tcp", [0.8, 0.2, 0.5]),
    ))
    .unwrap();
    assert!(s.starts_with("No one hop stands out"), "{s}");
    let one = vec![vec![("ip".to_string(), 5.0), ("tcp".to_string(), 20.0)]];
    let s = slowest_hop_sentence(&one).unwrap();
    assert!(
        s.starts_with("In the one probed trial the largest is the tcp (20.0 µs); with no CI that is no claim against the other hops."),
        "{s}"
    );
}

/// The slowest hop and the largest share are named by the data, not by
/// position: with the ip (the first entry) the slowest or largest, the ip
/// is named, over three trials and in the one-trial case.
#[test]
fn the_slowest_hop_and_largest_share_are_named_when_they_come_first() {
    use super::leaders::{largest_share_sentence, slowest_hop_sentence};
    let s =
        slowest_hop_sentence(&two(("ip", [20.0, 21.0, 19.0]), ("tcp", [5.0, 5.1, 4.9]))).unwrap();
    assert_eq!(
        s,
        "The slowest hop at the median is the ip: 20.0 ± 2.5 µs over 3 trials, beyond the 95% CIs of the next, the tcp (5.00 ± 0.25 µs)."
    );
    let s = largest_share_sentence(&two(("ip", [0.8, 0.79, 0.81]), ("tcp", [0.2, 0.21, 0.19])))
        .unwrap();
    assert_eq!(
        s,
        "The largest share of a packet's time at the median is the ip: 80.0 ± 2.5 % over 3 trials, beyond the 95% CIs of the next, the tcp (20.0 ± 2.5 %)."
    );
    // One trial: the largest is the first entry, and still named.
    let one = vec![vec![("ip".to_string(), 20.0), ("tcp".to_string(), 5.0)]];
    let s = slowest_hop_sentence(&one).unwrap();
    assert_eq!(
        s,
        "In the one probed trial the largest is the ip (20.0 µs); with no CI that is no claim against the other hops."
    );
    let one = vec![vec![("ip".to_string(), 0.7), ("tcp".to_string(), 0.3)]];
    let s = largest_share_sentence(&one).unwrap();
    assert!(
        s.starts_with("In the one probed trial the largest is the ip (70.0 %)"),
        "{s}"
    );
}
