//! The Guerrero & Frieder findings follow the data, in both directions: per
//! layer, a rate that rises with frame size is flagged, not stated; the
//! kernel's srtt is compared with the application's RTT within or beyond
//! the CIs; silly segments are the tiny ones; the traced transfer counts
//! each packet once, in wire segments; congestion-control modules differ
//! only beyond their CIs.

use super::report::{
    congestion_control_finding, layer_claim, percent_pm, rtt_finding, tcp_against_ethernet,
    LayerClaim,
};
use super::trace::{packet_finding, throughput_finding};
use crate::data::{ExperimentRecord, StudyData, StudySettings};
use crate::fixtures::{finding_texts, stored_study_run};
use analysis::findings::CurvePoint;
use analysis::path::analyse_with_mss;
use record::probe_event::{tcp_flags, ProbeEvent, ProbeId};
use record::{PointRecord, TestKind, TrialOutcome, TrialParams, TrialRecord, TrialStatus};
use std::collections::BTreeMap;

fn cp(x: f64, mean: f64, ci: f64) -> CurvePoint {
    CurvePoint { x, mean, ci }
}

/// A curve over 64..1512-byte frames: `rate(x)` packets/s, ±1% CI.
fn curve(rate: impl Fn(f64) -> f64) -> Vec<CurvePoint> {
    [64.0, 224.0, 384.0, 704.0, 1024.0, 1344.0, 1512.0]
        .into_iter()
        .map(|x| cp(x, rate(x), rate(x) * 0.01))
        .collect()
}

/// Bytes per second (Mbit/s) of a packet-rate curve.
fn bytes_of(pps: &[CurvePoint]) -> Vec<CurvePoint> {
    pps.iter()
        .map(|p| cp(p.x, p.mean * p.x * 8e-6, p.ci * p.x * 8e-6))
        .collect()
}

#[test]
fn a_flat_packet_rate_is_a_per_packet_cost_and_a_falling_one_is_not() {
    let flat = curve(|_| 400_000.0);
    let Some(LayerClaim::Finding(f)) = layer_claim("Ethernet", &flat, &bytes_of(&flat), &[]) else {
        panic!("a flat curve is a finding");
    };
    assert!(
        f.contains("does not change with frame size beyond its 95% CI"),
        "{f}"
    );
    assert!(
        f.contains(
            "+0.0% ± 2.0% end to end, +0.0% ± 0.0% along a straight line through the 7 sizes"
        ),
        "{f}"
    );
    assert!(f.contains("A fixed per-packet cost sets the rate"), "{f}");
    assert!(
        f.contains("bytes per second grow 23.6× for 24× the frame"),
        "{f}"
    );
    // Bytes per second constant: the packet rate falls as 1/size.
    let falling = curve(|x| 1e9 / x);
    let Some(LayerClaim::Finding(f)) = layer_claim("UDP", &falling, &bytes_of(&falling), &[])
    else {
        panic!("a falling curve is a finding");
    };
    assert!(f.contains("falls with frame size"), "{f}");
    assert!(
        f.contains("a per-byte cost (copies, the link) sets the rate"),
        "{f}"
    );
    assert!(!f.contains("per-packet cost sets"), "{f}");
}

#[test]
fn a_packet_rate_that_rises_with_frame_size_is_flagged_not_stated() {
    // The old report printed "TCP: … (143% kept …): it barely depends on
    // size" here.
    let rising = curve(|x| 150_000.0 + 40.0 * x);
    let frames = vec![cp(64.0, 90.0, 1.0)];
    let claim = layer_claim("TCP", &rising, &bytes_of(&rising), &frames);
    let Some(LayerClaim::Impossible(w)) = claim else {
        panic!("a rise is flagged: {claim:?}");
    };
    assert!(w.contains("rises with frame size"), "{w}");
    assert!(w.contains("not a measure of them"), "{w}");
    assert!(w.contains("64-byte writes left as 90-byte frames"), "{w}");
    // Frames as written: no coalescing reason is given.
    let Some(LayerClaim::Impossible(w)) =
        layer_claim("TCP", &rising, &bytes_of(&rising), &[cp(64.0, 64.0, 0.0)])
    else {
        panic!("still flagged");
    };
    assert!(!w.contains("coalesced"), "{w}");
    // The same rise inside wide CIs is no claim either way.
    let noisy: Vec<CurvePoint> = [(64.0, 150_000.0), (1512.0, 210_000.0)]
        .into_iter()
        .map(|(x, m)| cp(x, m, 80_000.0))
        .collect();
    let Some(LayerClaim::Finding(f)) = layer_claim("TCP", &noisy, &[], &[]) else {
        panic!("within CI: a finding of no change");
    };
    assert!(f.contains("does not change"), "{f}");
    assert!(f.contains("+40% ± 107% end to end"), "{f}");
    assert!(!f.contains("straight line"), "{f}");
}

#[test]
fn tcp_against_ethernet_is_below_only_beyond_ci() {
    let e = cp(64.0, 450_000.0, 10_000.0);
    let low = tcp_against_ethernet(&e, &cp(64.0, 160_000.0, 10_000.0));
    assert!(
        low.contains("(36%), below raw Ethernet beyond the 95% CIs"),
        "{low}"
    );
    let wide = tcp_against_ethernet(&e, &cp(64.0, 160_000.0, 300_000.0));
    assert!(wide.contains("no difference beyond the 95% CIs"), "{wide}");
    assert!(wide.contains("310000"), "{wide}");
}

#[test]
fn the_srtt_sentence_says_which_rtt_is_larger_and_whether_beyond_ci() {
    let app = cp(0.0, 32e-6, 2e-6);
    let lower = rtt_finding("veth", &cp(0.0, 24e-6, 1e-6), &app);
    assert!(
        lower.contains("lower by 8.00 µs (25%), beyond the 95% CIs"),
        "{lower}"
    );
    let higher = rtt_finding("veth", &cp(0.0, 48e-6, 1e-6), &app);
    assert!(
        higher.contains("higher by 16.0 µs (50%), beyond the 95% CIs"),
        "{higher}"
    );
    let within = rtt_finding("veth", &cp(0.0, 24e-6, 20e-6), &cp(0.0, 32e-6, 236e-6));
    assert!(
        within.contains("lower by 8.00 µs (25%), within the 95% CIs"),
        "{within}"
    );
    assert!(
        within.contains("smaller than 256 µs could not have been seen"),
        "{within}"
    );
    let single = rtt_finding("man", &cp(0.0, 2e-3, f64::NAN), &cp(0.0, 2e-3, 1e-5));
    assert!(single.contains("no difference is claimed"), "{single}");
}

#[test]
fn congestion_control_modules_differ_only_beyond_their_cis() {
    let (reno, bbr) = ("Linux TCP, reno".to_string(), "Linux TCP, bbr".to_string());
    let apart = congestion_control_finding(
        "lan100",
        &[(&reno, cp(0.0, 94e6, 1e6)), (&bbr, cp(0.0, 47e6, 1e6))],
    )
    .unwrap();
    assert!(
        apart.contains("Linux TCP, reno is the fastest sender")
            && apart.contains("2.00× apart beyond"),
        "{apart}"
    );
    let alike = congestion_control_finding(
        "veth",
        &[(&reno, cp(0.0, 48e9, 12e9)), (&bbr, cp(0.0, 28e9, 13e9))],
    )
    .unwrap();
    assert!(
        alike.contains("do not differ beyond their 95% CIs"),
        "{alike}"
    );
    assert!(!alike.contains("fastest"), "{alike}");
}

/// The fastest and slowest modules are named by their throughput, not by
/// where they stand: the data flip (bbr faster), the input order flips,
/// and with three modules the fastest or slowest may sit in the middle.
#[test]
fn the_fastest_module_is_named_wherever_it_stands_in_the_input() {
    let (reno, bbr, cubic) = (
        "Linux TCP, reno".to_string(),
        "Linux TCP, bbr".to_string(),
        "Linux TCP, cubic".to_string(),
    );
    let finding = |m: &[(&String, CurvePoint)]| congestion_control_finding("lan100", m).unwrap();
    // The data flip: bbr, second, is now the faster.
    let flipped = finding(&[(&reno, cp(0.0, 47e6, 1e6)), (&bbr, cp(0.0, 94e6, 1e6))]);
    assert_eq!(
        flipped,
        "On lan100, Linux TCP, bbr is the fastest sender (94.0 ± 1.0 Mbit/s) and Linux TCP, reno \
         the slowest (47.0 ± 1.0 Mbit/s), 2.00× apart beyond the 95% CIs."
    );
    // The input order flips with the same data: the same sentence.
    let swapped = finding(&[(&bbr, cp(0.0, 94e6, 1e6)), (&reno, cp(0.0, 47e6, 1e6))]);
    assert_eq!(swapped, flipped);
    // Three modules, the fastest in the middle and the slowest last.
    let middle = finding(&[
        (&reno, cp(0.0, 60e6, 1e6)),
        (&cubic, cp(0.0, 90e6, 1e6)),
        (&bbr, cp(0.0, 30e6, 1e6)),
    ]);
    assert!(
        middle.starts_with("On lan100, Linux TCP, cubic is the fastest sender (90.0 ± 1.0 Mbit/s) and Linux TCP, bbr the slowest (30.0 ± 1.0 Mbit/s), 3.00× apart"),
        "{middle}"
    );
    // The fastest last and the slowest in the middle.
    let last = finding(&[
        (&reno, cp(0.0, 60e6, 1e6)),
        (&cubic, cp(0.0, 20e6, 1e6)),
        (&bbr, cp(0.0, 80e6, 1e6)),
    ]);
    assert!(
        last.starts_with("On lan100, Linux TCP, bbr is the fastest sender (80.0 ± 1.0 Mbit/s) and Linux TCP, cubic the slowest (20.0 ± 1.0 Mbit/s), 4.00× apart"),
        "{last}"
    );
}

#[test]
fn throughput_is_cut_only_beyond_ci() {
    let h = cp(0.0, 5.6e9, 1.7e9);
    let cut = throughput_finding(&h, &cp(0.0, 59e6, 10e6));
    assert!(cut.contains("95× less, beyond the 95% CIs"), "{cut}");
    let same = throughput_finding(&h, &cp(0.0, 5.0e9, 1.7e9));
    assert!(same.contains("no difference beyond the 95% CIs"), "{same}");
}

// ---- Probed experiments through the whole report ----

const SENDER: u16 = 40_000;
const RECEIVER: u16 = 5_001;

fn rec(probe: ProbeId, ts: u64, skb: u64, len: u32, seq: u32) -> ProbeEvent {
    ProbeEvent {
        ts_ns: ts,
        id: skb,
        len,
        seq,
        ack: 0,
        ifindex: 2,
        x: [0; 4],
        sport: SENDER,
        dport: RECEIVER,
        win: 0,
        probe: probe as u8,
        flags: tcp_flags::ACK,
        cpu: 0,
        tid: 7,
    }
}

/// A transfer of `segments` data skbs of `len` bytes, the receiver
/// offering `window` bytes as each arrives and ACKing every other one;
/// `routed`: each packet queued again (same skb) at a router.
fn transfer(segments: u32, len: u32, window: u32, routed: bool) -> Vec<ProbeEvent> {
    let mut v = vec![rec(ProbeId::SendApp, 0, 0, 1 << 20, 1 << 20)];
    for i in 0..segments {
        let t = 1_000 + i as u64 * 10_000;
        let d = rec(ProbeId::DevQueue, t, 100 + i as u64, len, i * len);
        v.push(d);
        let mut arrive = rec(ProbeId::TcpProbe, t + 2_000, 0, len, i * len);
        (arrive.sport, arrive.dport, arrive.x[3]) = (RECEIVER, SENDER, window);
        v.push(arrive);
        let mut ack = rec(ProbeId::DevQueue, t + 3_000, 5_000 + i as u64, 0, 0);
        (ack.sport, ack.dport, ack.ack) = (RECEIVER, SENDER, (i + 1) * len);
        if i % 2 == 1 {
            v.push(ack);
        }
        if routed {
            let mut fwd = d;
            (fwd.ts_ns, fwd.ifindex) = (t + 1_000, 3);
            v.push(fwd);
            if i % 2 == 1 {
                let mut afwd = ack;
                afwd.ts_ns = t + 4_000;
                v.push(afwd);
            }
        }
    }
    v
}

/// An openlink92 run of probed experiments: each `(id, events, snd_mss)`
/// one point with two trials carrying the same records.
fn probed_study(exps: Vec<(&str, Vec<ProbeEvent>, f64)>) -> StudyData {
    let (mut points, mut trials, mut experiments) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = BTreeMap::new();
    for (id, ev, mss) in exps {
        let pid = points.len() as i64 + 1;
        experiments.push(ExperimentRecord {
            id: id.into(),
            title: id.into(),
            command: String::new(),
            first_point: points.len() as u32,
            points: 1,
        });
        points.push(PointRecord {
            id: pid,
            index: points.len() as u32,
            params: TrialParams::defaults(TestKind::TcpStream),
            precision: None,
        });
        for (k, thr) in [1e8, 1.02e8].into_iter().enumerate() {
            let mut o = TrialOutcome::default();
            o.metrics.insert("throughput_bps".into(), thr);
            o.metrics.insert("snd_mss".into(), mss);
            let tid = trials.len() as i64 + 1;
            events.insert(tid, ev.clone());
            trials.push(TrialRecord {
                id: tid,
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
    let settings = StudySettings {
        study: "openlink92".into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, "", points, trials);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, events, BTreeMap::new()).unwrap()
}

fn findings_of(d: &StudyData) -> Vec<String> {
    finding_texts(super::report(d))
}

#[test]
fn silly_segments_are_the_tiny_ones_healthy_none_pathological_most() {
    // Healthy: full 1448-byte segments into a 64 KB window. Pathological:
    // 64-byte segments into 64-byte windows while a megabyte waits.
    let d = probed_study(vec![
        ("sws-healthy", transfer(20, 1448, 65_536, false), 1448.0),
        ("sws-pathological", transfer(20, 64, 64, false), 1448.0),
    ]);
    let f = findings_of(&d);
    let healthy = f.iter().find(|s| s.starts_with("Healthy:")).unwrap();
    assert!(
        healthy.starts_with("Healthy: 0 of 40 wire data segments (0.0%) were silly (under 362 B"),
        "{healthy}"
    );
    assert!(
        healthy.contains("0 of 40 windows the receiver offered (0%) were below one MSS"),
        "{healthy}"
    );
    assert!(
        healthy.ends_with(": no silly window syndrome."),
        "{healthy}"
    );
    let sick = f.iter().find(|s| s.starts_with("Pathological:")).unwrap();
    assert!(
        sick.starts_with("Pathological: 40 of 40 wire data segments (100.0%) were silly"),
        "{sick}"
    );
    assert!(
        sick.contains("40 of 40 windows the receiver offered (100%) were below one MSS"),
        "{sick}"
    );
    assert!(
        sick.contains("silly window syndrome, most segments are tiny"),
        "{sick}"
    );
}

#[test]
fn half_window_segments_are_the_avoidance_not_the_syndrome() {
    // As on this VM: a 1448-byte window, the sender's MSS cut to 724.
    let d = probed_study(vec![(
        "sws-pathological",
        transfer(10, 724, 1448, false),
        724.0,
    )]);
    let f = findings_of(&d);
    let sick = f.iter().find(|s| s.starts_with("Pathological:")).unwrap();
    assert!(
        sick.contains("0 of 20 wire data segments (0.0%) were silly"),
        "{sick}"
    );
    assert!(sick.contains("half the largest window offered"), "{sick}");
}

#[test]
fn the_traced_transfer_counts_each_packet_once_in_wire_segments() {
    // 2896-byte GSO aggregates through a router: each counted once, two
    // wire segments apiece.
    let d = probed_study(vec![(
        "time-sequence",
        transfer(10, 2896, 65_536, true),
        1448.0,
    )]);
    let f = findings_of(&d);
    let s = f
        .iter()
        .find(|s| s.starts_with("Counted once each"))
        .unwrap_or_else(|| panic!("{f:#?}"));
    assert!(
        s.contains("20 data segments on the wire (10 skbs split at the 1448-byte MSS, 1448 bytes per segment) drew 5 pure ACKs"),
        "{s}"
    );
    // The same records without the MSS: one segment per skb, and the
    // sentence says the MSS is unknown.
    let a = analyse_with_mss(&transfer(10, 2896, 65_536, true), None);
    let s = packet_finding(&a.packets, None).unwrap();
    assert!(
        s.contains("10 data skbs (2896 bytes each; the MSS is unknown"),
        "{s}"
    );
    assert!(!s.contains("TCP_INFO"), "no TCP_INFO count given: {s}");
    assert!(s.contains(": the window rides on the ACKs"), "{s}");
    // A receiver that follows each ACK with a window update of its own
    // (same ACK number, a new window): the pitfall the paper fixed.
    let mut v = transfer(10, 1448, 65_536, false);
    for i in 0..10u32 {
        let mut upd = rec(
            ProbeId::DevQueue,
            1_000_000 + i as u64,
            9_000 + i as u64,
            0,
            0,
        );
        (upd.sport, upd.dport, upd.ack, upd.win) = (RECEIVER, SENDER, 2 * 1448, 100 + i as u16);
        v.push(upd);
    }
    let a = analyse_with_mss(&v, Some(1448));
    let s = packet_finding(&a.packets, Some(10.0)).unwrap();
    assert!(s.contains("separate window updates; TCP_INFO counted 10 data segments sent: window updates add packets"), "{s}");
}

/// A point of the implementations experiment moving `bytes` or running
/// for `secs`.
fn amount_point(bytes: Option<u64>, secs: Option<f64>) -> analysis::PointSummary {
    let mut params = TrialParams::defaults(TestKind::TcpStream);
    params.bytes = bytes;
    params.duration_s = secs;
    analysis::PointSummary {
        point_id: 1,
        index: 0,
        params,
        trials_ok: 5,
        trials_failed: 0,
        failures: Vec::new(),
        metrics: Default::default(),
        precision: None,
    }
}

#[test]
fn the_implementations_caption_names_what_the_trials_moved() {
    use super::report::transfer_amount;
    let file = amount_point(Some(2_560_000), None);
    let timed = amount_point(None, Some(0.3));
    assert_eq!(transfer_amount(&[&file, &file]), "2.56 MB transfers");
    assert_eq!(transfer_amount(&[&timed]), "0.3 s transfers");
    assert_eq!(
        transfer_amount(&[&file, &timed]),
        "transfers of 2.56 MB and 0.3 s"
    );
}

#[test]
fn a_change_beyond_its_ci_never_reads_as_within_it() {
    // The full run's UDP line: -3.4% ± 2.9% printed as "-3% ± 3%".
    assert_eq!(percent_pm(-3.4, 2.9), "-3.4% ± 2.9%");
    assert_eq!(percent_pm(40.2, 107.0), "+40% ± 107%");
}
