//! The Markatos sentences follow the data, in both directions: the model's
//! prediction within or outside the measurement's CI, a network that moves
//! more per CPU-second beyond the CIs or not, and latency the network adds
//! or does not.

use super::claims::{latency_sentence, most_and_least};
use super::prediction::{checks, constant, sentences, Inputs};
use analysis::findings::CurvePoint;

fn point(x: f64, mean: f64, ci: f64) -> CurvePoint {
    CurvePoint { x, mean, ci }
}

/// This run's inputs: 18.5 GB/s memory, score 16223, 4658 ± 1786 MB per
/// sender CPU-second.
fn inputs() -> Inputs {
    Inputs {
        mem_bw: 18.5e9,
        cpu_score: 16223.0,
        mb_per_cpu_s: point(1.0, 4658.0, 1786.0),
    }
}

#[test]
fn the_model_predicts_from_measured_inputs_and_says_where_it_holds() {
    let i = inputs();
    let k = constant(&i).unwrap();
    // C = score × (1/4.658e9 − 1/18.5e9) s per byte.
    assert!((k.c - 16223.0 * (1.0 / 4.658e9 - 1.0 / 18.5e9)).abs() < 1e-12);
    assert!(k.c_low < k.c && k.c < k.c_high);
    // Measured throughputs near the prediction at 0.1 and 0.3, half of it
    // at full speed (the golden run's shape).
    let curve = [
        point(0.1, 586e6, 119e6),
        point(0.3, 1.71e9, 0.36e9),
        point(1.0, 2.14e9, 0.78e9),
    ];
    let c = checks(&i, &k, &curve);
    assert_eq!(
        c.iter().map(|x| x.within()).collect::<Vec<_>>(),
        [true, true, false]
    );
    let s = sentences(&i, &k, &c);
    assert!(s[0].contains("C = 2.606e-6 score·s per byte"), "{s:#?}");
    assert!(
        s[0].contains("at CPU share 0.1 it predicts 4.82 Gbit/s against 4.69 ± 0.95 Gbit/s measured (within the 95% CI)"),
        "{s:#?}"
    );
    assert!(s[0].contains("outside the 95% CI, +118%"), "{s:#?}");
    assert!(s[0].ends_with("It predicts 2 of 3 CPU speeds within the measurement's CI."));
    assert!(s[1].contains("it moved 46% of that"), "{s:#?}");
    // A run that follows the model at full speed too: every speed within
    // its CI and no sentence on an idle sender.
    let follows: Vec<CurvePoint> = c
        .iter()
        .map(|x| point(x.share, x.predicted * 1.02, x.predicted * 0.05))
        .collect();
    let d = checks(&i, &k, &follows);
    let t = sentences(&i, &k, &d);
    assert!(d.iter().all(|x| x.within()));
    assert_eq!(t.len(), 1, "{t:#?}");
    assert!(t[0].ends_with("It predicts 3 of 3 CPU speeds within the measurement's CI."));
}

#[test]
fn no_prediction_when_the_sender_outruns_memory() {
    let mut i = inputs();
    i.mb_per_cpu_s = point(1.0, 30_000.0, 100.0);
    assert!(constant(&i).is_err());
}

#[test]
fn most_and_least_per_cpu_second_only_beyond_the_cis() {
    let nets = |lan_ci: f64| {
        vec![
            ("loopback".to_string(), point(1.0, 4658.0, 100.0)),
            ("lan100".to_string(), point(1.0, 6188.0, lan_ci)),
            ("man".to_string(), point(1.0, 2158.0, 100.0)),
        ]
    };
    let wide = most_and_least(&nets(4590.0)).unwrap();
    assert!(
        wide.starts_with("MB per sender CPU-second does not differ between the networks")
            && wide.contains("smaller than 4.69 GB/CPU-s could not have been seen"),
        "{wide}"
    );
    let tight = most_and_least(&nets(200.0)).unwrap();
    assert_eq!(
        tight,
        "The sender moves most data per CPU-second on lan100 (6.19 ± 0.20 GB/CPU-s) and least \
         on man (2.16 ± 0.10 GB/CPU-s), 2.9× less, beyond the 95% CIs."
    );
}

#[test]
fn latency_says_what_the_network_adds_only_beyond_the_cis() {
    let tcp = latency_sentence(
        "TCP 1-byte rr",
        "lan100",
        point(0.0, 12.0e-6, 0.45e-6),
        point(0.0, 15.93e-6, 0.37e-6),
    );
    assert!(
        tcp.contains("75% of the lan100 time is already there on loopback")
            && tcp.contains("the hosts' processing sets most of it"),
        "{tcp}"
    );
    let http = latency_sentence(
        "HTTP page load",
        "lan100",
        point(0.0, 206.5e-6, 7.4e-6),
        point(0.0, 4.4469e-3, 5.9e-6),
    );
    assert!(
        http.contains("the network, not the hosts' processing"),
        "{http}"
    );
    let same = latency_sentence(
        "TCP 1-byte rr",
        "lan100",
        point(0.0, 12.0e-6, 2e-6),
        point(0.0, 13.0e-6, 2e-6),
    );
    assert!(
        same.contains("no difference beyond the 95% CIs") && same.contains("4.00 µs"),
        "{same}"
    );
}

/// A steered trial counts the sender's whole CPU (threads + softirq of its
/// CPU); an unsteered one (loopback, or no pinning) its threads only.
#[test]
fn the_sender_cpu_counted_follows_the_steering() {
    use super::report::{sender_cpu_s, SenderCpu};
    let mut o = record::TrialOutcome::default();
    o.metrics.insert("cpu_sender_s".into(), 0.4);
    o.metrics.insert("cpu_sender_whole_s".into(), 0.7);
    o.metrics.insert("core_sender_index".into(), 0.0);
    o.details = serde_json::json!({"lab": {"steering": {"sender_cpu": 0, "receiver_cpu": 1}}});
    let steered = crate::fixtures::ok_trial(&[], 1, 0, o.clone());
    assert_eq!(sender_cpu_s(&steered), Some((0.7, SenderCpu::Whole(0))));
    o.details =
        serde_json::json!({"lab": {"steering": {"sender_cpu": null, "receiver_cpu": null}}});
    let loopback = crate::fixtures::ok_trial(&[], 1, 0, o);
    assert_eq!(sender_cpu_s(&loopback), Some((0.4, SenderCpu::Threads)));
    assert!(SenderCpu::Threads.words().contains("not steered"));
    assert!(SenderCpu::Whole(0).words().starts_with("CPU 0"));
}

fn mb(v: &[f64]) -> crate::sunos_ipc::change::Estimate {
    crate::sunos_ipc::change::Estimate::from_values(v).unwrap()
}

#[test]
fn a_mileage_trend_is_claimed_only_beyond_the_cis() {
    use super::host_claims::{mileage_sentence, HostMileage};
    let host = |name, score, v: &[f64]| HostMileage {
        name,
        score,
        mb_per_cpu: mb(v),
    };
    let say = |slow: &[f64], fast: &[f64]| {
        mileage_sentence(&host("old", 5000.0, slow), &host("new", 20000.0, fast))
    };
    // 4× the score, 2× the data: mileage falls, beyond the CIs.
    let falls = say(&[1490.0, 1500.0, 1510.0], &[2980.0, 3000.0, 3020.0]);
    assert!(
        falls.contains("for a 4.00× higher CPU score")
            && falls
                .contains("mileage falls with CPU speed beyond the 95% CIs, as the paper found"),
        "{falls}"
    );
    // 8× the data: it rises, unlike the paper.
    let rises = say(&[1490.0, 1500.0, 1510.0], &[11900.0, 12000.0, 12100.0]);
    assert!(
        rises.contains("mileage rises with CPU speed beyond the 95% CIs"),
        "{rises}"
    );
    // 2× the data with CIs as wide as the means: it holds, with what could
    // have been seen.
    let wide = say(&[500.0, 1500.0, 2500.0], &[1000.0, 9000.0, 14000.0]);
    assert!(
        wide.contains("mileage holds within the 95% CIs")
            && wide.contains("MB per score-second could not have been seen"),
        "{wide}"
    );
    // One trial on a host: no trend.
    let one = say(&[1500.0], &[3000.0, 3010.0, 2990.0]);
    assert!(one.contains("no trend in mileage is claimed"), "{one}");
}

#[test]
fn one_c_for_every_host_only_within_each_hosts_range() {
    use super::host_claims::{scaling_sentences, HostPrediction};
    use super::prediction::Constant;
    let host = |name, c: f64, spread: f64, trials| HostPrediction {
        name,
        k: Constant {
            c,
            c_low: c * (1.0 - spread),
            c_high: c * (1.0 + spread),
        },
        trials,
        checks: Vec::new(),
    };
    let overlap = scaling_sentences(&[host("a", 2e-6, 0.1, 3), host("b", 2.1e-6, 0.1, 3)]);
    assert!(
        overlap[0].contains("not fitted to the points shown"),
        "{overlap:#?}"
    );
    assert!(
        overlap[1].starts_with("One C, between 1.89 µs"),
        "{overlap:#?}"
    );
    let apart = scaling_sentences(&[host("a", 2e-6, 0.1, 3), host("b", 3e-6, 0.1, 3)]);
    assert!(
        apart[1].starts_with("The hosts' Cs differ beyond"),
        "{apart:#?}"
    );
    let one = scaling_sentences(&[host("a", 2e-6, 0.0, 1), host("b", 3e-6, 0.1, 3)]);
    assert!(
        one[1].starts_with("a has one trial behind its C, so there is no CI"),
        "{one:#?}"
    );
}
