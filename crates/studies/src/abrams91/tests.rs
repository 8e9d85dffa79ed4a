//! abrams91's findings on synthetic runs, each in both directions: the
//! TCP/UDP comparison per write size, the offload sentence only where the
//! data match it, points above the line rate or with too few datagrams left
//! out, and the verdict's link figure being the section's.

use super::comparison::{sender_rates_sentence, tcp_udp_sentence};
use crate::data::{ExperimentRecord, StudyData, StudySettings};
use crate::fixtures::{ok_trial, study_meta};
use analysis::findings::CurvePoint;
use record::{PointRecord, StoredRun, TestKind, TrialOutcome, TrialParams};
use std::collections::BTreeMap;

/// A curve in Mbit/s with a 1% CI at each write size.
fn curve(v: &[(f64, f64)]) -> Vec<CurvePoint> {
    v.iter()
        .map(|&(x, mean)| CurvePoint {
            x,
            mean,
            ci: mean * 0.01,
        })
        .collect()
}

/// The case: the golden run's veth TCP curve against a UDP curve
/// that overtakes it at 512 B and 1460 B (Table 2: 912 against 472, 2632
/// against 595 Mbit/s) and falls behind again from 8 KB. The old sentence
/// said "UDP never overtakes it beyond CI".
#[test]
fn udp_overtaking_in_the_middle_is_said_with_its_ratios() {
    let tcp = curve(&[
        (10.0, 76.1),
        (512.0, 472.0),
        (1460.0, 595.0),
        (8192.0, 4322.7),
        (65507.0, 14253.8),
    ]);
    let udp = curve(&[
        (10.0, 5.6),
        (512.0, 912.0),
        (1460.0, 2632.0),
        (8192.0, 1816.7),
        (65507.0, 2992.8),
    ]);
    let s = tcp_udp_sentence("veth", &tcp, &udp).unwrap();
    assert_eq!(
        s,
        "On veth, at the smallest writes both have, TCP is faster than UDP beyond CI \
         (10 B: 76.1 ± 0.8 against 5.60 ± 0.06 Mbit/s, 13.59×). UDP overtakes TCP beyond CI at \
         512 B (912 ± 9 against 472 ± 5 Mbit/s, 1.93×) and 1460 B (2.63 ± 0.03 against 0.595 ± \
         0.006 Gbit/s, 4.42×). \
         TCP is ahead again beyond CI at 8 KB and 65507 B. The paper's pattern (TCP ahead at \
         small writes, UDP at large ones) does not hold here."
    );
    assert!(!s.contains("never"));
}

/// The other direction: UDP never ahead, with the levels where the two are
/// within CI and the smallest difference they could have shown.
#[test]
fn udp_never_ahead_is_said_with_what_could_be_seen() {
    let tcp = curve(&[(10.0, 76.1), (512.0, 450.0), (65507.0, 14253.8)]);
    let mut udp = curve(&[(10.0, 5.6), (512.0, 440.0), (65507.0, 2992.8)]);
    udp[1].ci = 40.0;
    let s = tcp_udp_sentence("veth", &tcp, &udp).unwrap();
    assert!(
        s.contains("UDP is faster than TCP beyond CI at none of the 3 write sizes both have."),
        "{s}"
    );
    assert!(
        s.contains("Within CI at 512 B (a difference below 44.5 Mbit/s could not have been seen)."),
        "{s}"
    );
    assert!(!s.contains("overtakes"), "{s}");
    // On a 10 Mbit/s link CIs are tiny: the smallest difference keeps its
    // digits instead of reading 0.0 Mbit/s.
    let mut tcp = curve(&[(10.0, 9.4), (1024.0, 9.41)]);
    tcp[1].ci = 0.001;
    let mut udp = curve(&[(10.0, 1.2), (1024.0, 9.41)]);
    udp[1].ci = 0.004;
    let s = tcp_udp_sentence("ether10", &tcp, &udp).unwrap();
    assert!(
        s.contains("a difference below 5.00 kbit/s could not"),
        "{s}"
    );
    assert!(!s.contains("0.0 Mbit/s"), "{s}");
}

/// The paper's pattern: TCP ahead at the smallest writes, UDP at the
/// largest; and UDP ahead from the start, which is not the pattern.
#[test]
fn the_papers_pattern_holds_only_when_the_data_show_it() {
    let tcp = curve(&[(10.0, 8.0), (512.0, 8.0), (8192.0, 8.0)]);
    let udp = curve(&[(10.0, 2.0), (512.0, 8.0), (8192.0, 9.5)]);
    let s = tcp_udp_sentence("ether10", &tcp, &udp).unwrap();
    assert!(
        s.contains(
            "UDP overtakes TCP beyond CI at 8 KB (9.50 ± 0.10 against 8.00 ± 0.08 Mbit/s, 1.19×)."
        ),
        "{s}"
    );
    assert!(s.contains("Within CI at 512 B"), "{s}");
    assert!(s.ends_with("holds here."), "{s}");
    let s = tcp_udp_sentence("ether10", &udp, &tcp).unwrap();
    assert!(
        s.contains("UDP is faster than TCP beyond CI (10 B: 8.00 ± 0.08 against 2.00 ± 0.02 Mbit/s, 4.00×)"),
        "{s}"
    );
    assert!(s.contains("TCP overtakes UDP beyond CI at 8 KB"), "{s}");
    assert!(s.ends_with("does not hold here."), "{s}");
    // Within CI at the smallest writes: neither is said to lead there.
    let same = curve(&[(10.0, 8.0), (512.0, 9.0)]);
    let s = tcp_udp_sentence("ether10", &same, &curve(&[(10.0, 8.01), (512.0, 5.0)])).unwrap();
    assert!(
        s.contains("TCP and UDP are within CI of each other (10 B"),
        "{s}"
    );
    assert!(s.contains("TCP is faster beyond CI at 512 B"), "{s}");
    assert!(tcp_udp_sentence("x", &same, &curve(&[(64.0, 1.0)])).is_none());
}

/// The offload explanation is printed only when TCP's sender is the faster
/// beyond CI; the golden run's UDP-faster numbers do not get it.
#[test]
fn the_offload_explanation_needs_tcp_ahead() {
    let mbit = |v: f64| format!("{:.0} Mbit/s", v / 1e6);
    let p = |mean: f64, ci: f64| CurvePoint { x: 1.0, mean, ci };
    let tcp_ahead = sender_rates_sentence(&p(2e9, 1e7), &p(1e9, 1e7), &mbit);
    assert!(tcp_ahead.contains("segmentation offload"), "{tcp_ahead}");
    let udp_ahead = sender_rates_sentence(&p(761e6, 1e7), &p(1150e6, 1e7), &mbit);
    assert!(!udp_ahead.contains("offload lets"), "{udp_ahead}");
    assert!(udp_ahead.contains("UDP is faster beyond CI"), "{udp_ahead}");
    let within = sender_rates_sentence(&p(761e6, 300e6), &p(1150e6, 300e6), &mbit);
    assert!(
        within.ends_with(
            "within CI of each other (a difference below 600 Mbit/s could not have been seen)."
        ),
        "{within}"
    );
}

/// One point of a synthetic run: experiment id, params, one metrics map
/// per trial.
type SyntheticPoint = (&'static str, TrialParams, Vec<BTreeMap<String, f64>>);

/// A study run of abrams91 on `place`, each trial's lab details carrying
/// its link's line rate (an emulated link).
fn run(place: &str, line_rate_bps: f64, points: Vec<SyntheticPoint>) -> StudyData {
    let mut experiments: Vec<ExperimentRecord> = Vec::new();
    let mut records = Vec::new();
    let mut trials = Vec::new();
    for (i, (id, mut params, ms)) in points.into_iter().enumerate() {
        params.topology = place.into();
        match experiments.iter_mut().find(|e| e.id == id) {
            Some(e) => e.points += 1,
            None => experiments.push(ExperimentRecord {
                id: id.into(),
                title: id.into(),
                command: String::new(),
                first_point: i as u32,
                points: 1,
            }),
        }
        let pid = i as i64 + 1;
        records.push(PointRecord {
            id: pid,
            index: i as u32,
            params,
            precision: None,
        });
        for (k, m) in ms.into_iter().enumerate() {
            let mut o = TrialOutcome {
                metrics: m,
                ..TrialOutcome::default()
            };
            o.details = serde_json::json!({"lab": {
                "place": {"link": {"rate_bps": line_rate_bps}}
            }});
            trials.push(ok_trial(&trials, pid, k, o));
        }
    }
    let settings = StudySettings {
        study: "abrams91".into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = StoredRun {
        meta: study_meta(settings, place),
        points: records,
        trials,
    };
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}

/// Trials with these throughputs (bit/s), and `datagrams` received each
/// when given (a UDP point).
fn trials(bps: &[f64], datagrams: Option<f64>) -> Vec<BTreeMap<String, f64>> {
    bps.iter()
        .map(|&b| {
            let mut m = BTreeMap::from([("throughput_bps".to_string(), b)]);
            if let Some(n) = datagrams {
                m.insert("datagrams_received".into(), n);
                m.insert("loss_rate".into(), 0.5);
            }
            m
        })
        .collect()
}

fn params(test: TestKind, write_size: u64) -> TrialParams {
    let mut p = TrialParams::defaults(test);
    p.write_size = write_size;
    p
}

/// The ether10 write-size experiments: TCP at 9.7 Mbit/s; UDP received at
/// `udp_bps` per trial with `datagrams` received, at 512 B and 8 KB.
fn ether10(udp_bps: [f64; 3], datagrams: f64, load_tcp_bps: [f64; 3]) -> StudyData {
    let tcp = |ws| {
        (
            "write-size-tcp-slow",
            params(TestKind::TcpStream, ws),
            trials(&[9.68e6, 9.70e6, 9.72e6], None),
        )
    };
    let udp = |ws| {
        (
            "write-size-udp-slow",
            params(TestKind::UdpStream, ws),
            trials(&udp_bps, Some(datagrams)),
        )
    };
    let mut load = params(TestKind::TcpStream, 10);
    load.bytes = Some(40960);
    run(
        "ether10",
        10.02e6,
        vec![
            tcp(512),
            tcp(8192),
            udp(512),
            udp(8192),
            ("load-tcp", load, trials(&load_tcp_bps, None)),
        ],
    )
}

fn blocks(d: &StudyData) -> Vec<report::Block> {
    super::report(d)
        .into_iter()
        .flat_map(|s| s.blocks)
        .collect()
}

fn findings(d: &StudyData) -> Vec<String> {
    blocks(d)
        .into_iter()
        .filter_map(|b| match b {
            report::Block::Finding { text } => Some(text),
            _ => None,
        })
        .collect()
}

fn warnings(d: &StudyData) -> Vec<String> {
    blocks(d)
        .into_iter()
        .filter_map(|b| match b {
            report::Block::Warning(text) => Some(text),
            _ => None,
        })
        .collect()
}

/// The UDP series of the write-size figure on ether10, (x, y) pairs.
fn udp_series(d: &StudyData) -> Vec<(f64, f64)> {
    blocks(d)
        .into_iter()
        .find_map(|b| match b {
            report::Block::Figure(f) if f.title.contains("ether10") => Some(f),
            _ => None,
        })
        .unwrap()
        .series
        .into_iter()
        .find(|s| s.name.starts_with("UDP"))
        .unwrap()
        .points
        .into_iter()
        .map(|p| (p.x, p.y))
        .collect()
}

/// UDP received at 11.7 Mbit/s through a 10 Mbit/s link is left out of the
/// figure and the findings with its reason, and so is a mean of 10.3
/// Mbit/s whose CI reaches below the line rate; at 9 Mbit/s, or with a
/// mean of 9.97 Mbit/s whose CI reaches above it, it is data.
#[test]
fn points_above_the_line_rate_are_left_out_with_their_reason() {
    let impossible = ether10([11.69e6, 11.70e6, 11.71e6], 500.0, [9.6e6, 9.7e6, 9.8e6]);
    assert!(udp_series(&impossible).is_empty());
    let w = warnings(&impossible);
    assert!(
        w.iter().any(|w| w.starts_with("Left out of the figure, Table 2's rates and the findings on ether10: UDP at 512 B: invalid: 11.70 ± 0.02 Mbit/s: its mean exceeds the link's line rate of 10.0 Mbit/s, which goodput cannot reach (the line rate counts its headers and framing too); UDP at 8 KB: invalid")),
        "{w:#?}"
    );
    let f = findings(&impossible);
    assert!(!f.iter().any(|f| f.contains("UDP overtakes")), "{f:#?}");
    // Above the line rate within its CI: still impossible, still left out.
    let within_ci = ether10([9.8e6, 10.3e6, 10.8e6], 500.0, [9.6e6, 9.7e6, 9.8e6]);
    assert!(udp_series(&within_ci).is_empty());
    assert!(
        warnings(&within_ci)
            .iter()
            .any(|w| w.contains("UDP at 512 B: invalid: 10.3 ± ")),
        "{:#?}",
        warnings(&within_ci)
    );
    let possible = ether10([8.99e6, 9.0e6, 9.01e6], 500.0, [9.6e6, 9.7e6, 9.8e6]);
    assert_eq!(udp_series(&possible).len(), 2);
    assert!(!warnings(&possible)
        .iter()
        .any(|w| w.starts_with("Left out")));
    // Below the line rate, though its CI reaches above it: data.
    let below = ether10([9.5e6, 9.97e6, 10.44e6], 500.0, [9.6e6, 9.7e6, 9.8e6]);
    assert_eq!(udp_series(&below).len(), 2);
}

/// A UDP rate from 6 datagrams is n/a; from 500 it is a rate.
#[test]
fn a_udp_rate_from_too_few_datagrams_is_na() {
    let few = ether10([8.99e6, 9.0e6, 9.01e6], 6.0, [9.6e6, 9.7e6, 9.8e6]);
    assert!(udp_series(&few).is_empty());
    let w = warnings(&few);
    assert!(
        w.iter().any(|w| w.contains("UDP at 512 B: n/a: the receive rate would rest on 6 datagrams received per trial, fewer than the 100 a rate needs")),
        "{w:#?}"
    );
    let many = ether10([8.99e6, 9.0e6, 9.01e6], 500.0, [9.6e6, 9.7e6, 9.8e6]);
    assert_eq!(udp_series(&many), vec![(512.0, 9.0), (8192.0, 9.0)]);
}

/// The verdict's link figure is the section's, and a point above the line
/// rate (a 40 KB file at 12 Mbit/s through 10 Mbit/s) is neither: the
/// golden run's verdict said 100% from such trials.
#[test]
fn the_verdict_states_the_sections_link_figure() {
    let link_finding = |d: &StudyData| {
        findings(d)
            .into_iter()
            .find(|f| {
                f.starts_with(
                    "The share of its link's line rate this run's TCP points support best",
                )
            })
            .unwrap()
    };
    // The link is the experiment's limit, never the host's: the verdict
    // lists it as imposed, with the section's figure as its evidence.
    struct LinkVerdict {
        evidence: String,
        share: f64,
    }
    let link_verdict = |d: &StudyData| {
        let b = crate::verdict::verdict(d)
            .into_iter()
            .find(|b| b.name == "the link")
            .unwrap();
        assert_eq!(b.standing, crate::verdict::Standing::Imposed, "{b:#?}");
        let (share, text) = b.imposed.unwrap();
        let evidence = text
            .split(" — set by the experiment")
            .next()
            .unwrap()
            .to_string();
        LinkVerdict { evidence, share }
    };
    // The load point at 12 Mbit/s is invalid: the write-size point decides.
    let d = ether10([8.99e6, 9.0e6, 9.01e6], 500.0, [11.9e6, 12.0e6, 12.1e6]);
    let v = link_verdict(&d);
    assert!(v.evidence.starts_with("TCP reached 96.8 ± 0.5 % of the link's 10.0 Mbit/s line rate (9.70 Mbit/s; its payload ceiling at MSS 1448 is 9.58 Mbit/s, 1.2 % above it, more than"), "{}", v.evidence);
    assert!((v.share - 9.70e6 / 10.02e6).abs() < 1e-9, "{}", v.evidence);
    assert!(
        link_finding(&d).contains(&v.evidence),
        "{}",
        link_finding(&d)
    );
    // A valid load point closer to the line rate wins, in both places.
    let d = ether10([8.99e6, 9.0e6, 9.01e6], 500.0, [9.98e6, 9.99e6, 10.0e6]);
    let v = link_verdict(&d);
    assert!(
        v.evidence.starts_with("TCP reached 99.7 ± 0.2 % "),
        "{}",
        v.evidence
    );
    assert!(
        v.evidence.contains("tcp-stream 10 B writes on ether10)"),
        "{}",
        v.evidence
    );
    assert!(
        link_finding(&d).contains(&v.evidence),
        "{}",
        link_finding(&d)
    );
    // Above the line rate within CI (the golden run's 40 KB transfers,
    // 11.1 ± 1.4 Mbit/s): a mean above the line rate is invalid whatever
    // its CI, so it gives no share and the write-size point decides.
    let d = ether10([8.99e6, 9.0e6, 9.01e6], 500.0, [10.5e6, 11.0e6, 11.9e6]);
    let v = link_verdict(&d);
    assert!(v.evidence.starts_with("TCP reached 96.8 ± 0.5 % of the link's 10.0 Mbit/s line rate (9.70 Mbit/s; its payload ceiling at MSS 1448 is 9.58 Mbit/s, 1.2 % above it, more than"), "{}", v.evidence);
    assert!(v.evidence.ends_with("writes on ether10)"), "{}", v.evidence);
    assert!(
        link_finding(&d).contains(&v.evidence),
        "{}",
        link_finding(&d)
    );
}
