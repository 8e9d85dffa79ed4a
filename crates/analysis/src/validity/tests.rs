use super::*;
use record::{PointRecord, TrialOutcome, TrialParams};
use std::collections::BTreeMap;

#[test]
fn a_mean_above_the_line_rate_is_impossible_whatever_its_ci() {
    // 12 ± 0.5 Mbit/s on a 10 Mbit/s link: impossible.
    assert!(above_line_rate(12e6, 10e6));
    // 11 ± 1.5 Mbit/s: the interval reaches the line rate, but the mean
    // is above it, which goodput (without its headers) cannot be.
    assert!(above_line_rate(11e6, 10e6));
    assert!(above_line_rate(10.01e6, 10e6));
    // At or below the line rate: never, however wide the CI.
    assert!(!above_line_rate(10e6, 10e6));
    assert!(!above_line_rate(9.7e6, 10e6));
    // No calibration, no verdict.
    assert!(!above_line_rate(12e6, 0.0));
}

#[test]
fn a_rate_needs_enough_datagrams() {
    assert!(too_few_datagrams(6.0));
    assert!(too_few_datagrams(99.0));
    assert!(too_few_datagrams(f64::NAN));
    assert!(!too_few_datagrams(100.0));
    assert!(!too_few_datagrams(33820.0));
}

#[test]
fn a_loss_rate_needs_enough_datagrams_sent() {
    assert!(too_few_for_loss(40.0));
    assert!(too_few_for_loss(f64::NAN));
    assert!(!too_few_for_loss(100.0));
}

#[test]
fn a_rate_over_a_link_needs_a_long_enough_interval() {
    assert!(too_short_interval(0.002));
    assert!(too_short_interval(0.0199));
    assert!(too_short_interval(f64::NAN));
    assert!(!too_short_interval(0.02));
    assert!(!too_short_interval(0.21));
}

/// Three trials of one point of `test` on `place` (with an emulated link
/// of `line_rate` bit/s when given), each with `metrics`.
fn point(
    test: TestKind,
    place: &str,
    line_rate: Option<f64>,
    metrics: &[(&str, f64)],
) -> (Vec<TrialRecord>, PointSummary) {
    let mut params = TrialParams::defaults(test);
    params.topology = place.into();
    let details = match line_rate {
        Some(l) => serde_json::json!({"lab": {
            "calibration": {"goodput_bps": l * 0.94},
            "place": {"link": {"rate_bps": l, "framing_bytes": 24}}
        }}),
        None => serde_json::json!({"lab": {"place": {"link": null}}}),
    };
    let trials: Vec<TrialRecord> = (0..3)
        .map(|k| TrialRecord {
            id: k + 1,
            point_id: 1,
            seq: k as u32,
            repetition: k as u32,
            started_at: String::new(),
            status: TrialStatus::Ok,
            error: None,
            outcome: TrialOutcome {
                metrics: metrics
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect::<BTreeMap<_, _>>(),
                details: details.clone(),
                ..TrialOutcome::default()
            },
        })
        .collect();
    let record = PointRecord {
        id: 1,
        index: 0,
        params,
        precision: None,
    };
    let p = crate::summarize_points(&[record], &trials).remove(0);
    (trials, p)
}

#[test]
fn a_rate_within_the_line_rate_is_shown_and_one_above_is_not() {
    let (trials, p) = point(
        TestKind::TcpStream,
        "lan1g",
        Some(1e9),
        &[("throughput_bps", 0.94e9), ("delay_s", 0.2)],
    );
    assert_eq!(line_rate_bps(&trials, &p), Some(1e9));
    assert!(left_out(&trials, &[p]).is_empty());
    let (trials, p) = point(
        TestKind::TcpStream,
        "lan1g",
        Some(1e9),
        &[("throughput_bps", 1.3e9), ("delay_s", 0.2)],
    );
    let out = left_out(&trials, &[p]);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].metric, "throughput_bps");
    assert_eq!(out[0].why.cell(), "invalid: above the 1.0 Gbit/s line rate");
    assert_eq!(why_left_out(&out, 0, "throughput_bps"), Some(&out[0].why));
    assert_eq!(why_left_out(&out, 0, "loss_rate"), None);
}

#[test]
fn without_an_emulated_link_there_is_no_line_rate_to_exceed() {
    // 30 Gbit/s on loopback over 2 ms: no link, no cap, no interval rule.
    let (trials, p) = point(
        TestKind::TcpStream,
        "loopback",
        None,
        &[("throughput_bps", 30e9), ("delay_s", 0.002)],
    );
    assert_eq!(line_rate_bps(&trials, &p), None);
    assert!(left_out(&trials, &[p]).is_empty());
}

#[test]
fn a_short_transfer_over_a_link_is_not_a_rate() {
    let (trials, p) = point(
        TestKind::TcpStream,
        "lan1g",
        Some(1e9),
        &[("throughput_bps", 0.9e9), ("delay_s", 0.0021)],
    );
    assert_eq!(
        throughput_validity(&p, line_rate_bps(&trials, &p)),
        Err(Invalid::TooShortInterval { interval_s: 0.0021 })
    );
    assert_eq!(
        left_out(&trials, &[p])[0].why.cell(),
        "n/a: 2.1 ms interval"
    );
    let (trials, p) = point(
        TestKind::TcpStream,
        "lan1g",
        Some(1e9),
        &[("throughput_bps", 0.9e9), ("delay_s", 0.2)],
    );
    assert_eq!(throughput_validity(&p, line_rate_bps(&trials, &p)), Ok(()));
}

#[test]
fn a_udp_rate_and_loss_need_enough_datagrams() {
    let few = [
        ("throughput_bps", 3e6),
        ("loss_rate", 0.0),
        ("datagrams_received", 8.0),
        ("datagrams_sent", 8.0),
    ];
    let (trials, p) = point(TestKind::UdpStream, "loopback", None, &few);
    let out = left_out(&trials, &[p]);
    let cells: Vec<(&str, String)> = out.iter().map(|l| (l.metric, l.why.cell())).collect();
    assert_eq!(
        cells,
        [
            ("throughput_bps", "n/a: 8 datagrams".to_string()),
            ("loss_rate", "n/a: 8 datagrams sent".to_string())
        ]
    );
    let many = [
        ("throughput_bps", 3e6),
        ("loss_rate", 0.0),
        ("datagrams_received", 800.0),
        ("datagrams_sent", 800.0),
    ];
    let (trials, p) = point(TestKind::UdpStream, "loopback", None, &many);
    assert!(left_out(&trials, &[p]).is_empty());
}

#[test]
fn reasons_state_the_numbers() {
    let a = Invalid::AboveLineRate {
        mean_bps: 11.7e6,
        ci_bps: 0.02e6,
        line_rate_bps: 10.02e6,
    };
    assert_eq!(
        a.reason(),
        "invalid: 11.70 ± 0.02 Mbit/s: its mean exceeds the link's line rate of 10.0 Mbit/s, \
         which goodput cannot reach (the line rate counts its headers and framing too)"
    );
    // A single trial has no CI: its mean alone, by the same rule.
    let one = Invalid::AboveLineRate {
        mean_bps: 1.234e9,
        ci_bps: f64::NAN,
        line_rate_bps: 1e9,
    };
    assert!(
        one.reason()
            .starts_with("invalid: 1.23 Gbit/s: its mean exceeds"),
        "{}",
        one.reason()
    );
    assert_eq!(a.cell(), "invalid: above the 10.0 Mbit/s line rate");
    let b = Invalid::TooFewDatagrams { received: 6.0 };
    assert!(b
        .reason()
        .starts_with("n/a: the receive rate would rest on 6 datagrams"));
    let c = Invalid::TooShortInterval { interval_s: 0.0021 };
    assert!(c.reason().starts_with(
        "n/a: the rate would rest on 2.1 ms from first byte to last, shorter than the 20 ms"
    ));
    let d = Invalid::TooFewForLoss { sent: 40.0 };
    assert!(d
        .reason()
        .starts_with("n/a: the loss rate would rest on 40 datagrams sent per trial"));
}

/// Issue 30, rule 3: the line rate is the link's set rate, not the one a
/// calibration's goodput implies; a link that sets no rate caps nothing;
/// the payload ceiling is the line rate less headers and framing.
#[test]
fn the_line_rate_is_the_links_set_rate() {
    let (mut trials, p) = point(
        TestKind::TcpStream,
        "ether10",
        Some(10e6),
        &[("throughput_bps", 9.9e6), ("delay_s", 1.0)],
    );
    for t in trials.iter_mut() {
        t.outcome.details["lab"]["calibration"] =
            serde_json::json!({"goodput_bps": 9.393e6, "line_rate_bps": 9.8e6});
    }
    let r = link_rates(&trials, &p).unwrap();
    assert_eq!(r.line_rate_bps, 10e6);
    assert_eq!(r.calibrated_goodput_bps, 9.393e6);
    assert!((r.payload_ceiling_bps(1448.0) - 9.4148e6).abs() < 100.0);
    // 9.9 Mbit/s is within the set 10 Mbit/s, though above the 9.8 the
    // calibration stored.
    assert_eq!(throughput_validity(&p, line_rate_bps(&trials, &p)), Ok(()));
    // A link with a delay and no rate caps nothing.
    for t in trials.iter_mut() {
        t.outcome.details["lab"]["place"]["link"] =
            serde_json::json!({"rate_bps": null, "delay_s": 0.03});
    }
    assert_eq!(link_rates(&trials, &p), None);
    // Above the set rate: invalid.
    let (trials, p) = point(
        TestKind::TcpStream,
        "ether10",
        Some(10e6),
        &[("throughput_bps", 10.1e6), ("delay_s", 1.0)],
    );
    assert!(matches!(
        throughput_validity(&p, line_rate_bps(&trials, &p)),
        Err(Invalid::AboveLineRate { .. })
    ));
}

/// The brief's impossible CPU figures: whole CPU below the threads' own, or
/// above wall time, by more than a tick at each end; within that, true.
#[test]
fn impossible_cpu_times_are_named() {
    let m = |v: &[(&str, f64)]| -> BTreeMap<String, f64> {
        v.iter().map(|(k, x)| (k.to_string(), *x)).collect()
    };
    let below = m(&[
        ("cpu_sender_whole_s", 0.16),
        ("cpu_sender_s", 0.187),
        ("sender_wall_s", 1.0),
    ]);
    let why = cpu_impossible(&below, "sender").unwrap();
    assert!(
        why.contains("0.160 s") && why.contains("below its threads' own 0.187 s"),
        "{why}"
    );
    let above = m(&[
        ("cpu_sender_whole_s", 1.09),
        ("cpu_sender_s", 0.9),
        ("sender_wall_s", 1.0),
    ]);
    assert!(cpu_impossible(&above, "sender")
        .unwrap()
        .contains("exceeds its 1.000 s of wall time"));
    let fine = m(&[
        ("cpu_sender_whole_s", 0.18),
        ("cpu_sender_s", 0.187),
        ("sender_wall_s", 1.0),
    ]);
    assert_eq!(cpu_impossible(&fine, "sender"), None);
    assert_eq!(cpu_impossible(&below, "receiver"), None);
}
