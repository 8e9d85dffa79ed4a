//! The Huang & Chen sentences follow the data, in both directions: the
//! per-segment fit (resolved, not distinguishable from zero, failed), the
//! ACK experiment (took effect or not, shares from enough samples or not),
//! and the checksum experiment (throughput change never put down to
//! checksumming).

use super::claims::{
    ack_sentence, checksum_sentences, most_cpu_sentence, nodelay_sentence, share_words, AckArm,
    ChecksumArm, SampledShare, TrialShares,
};
use super::fit_claims::{failed, packet_byte_sentence, shape_finding, MssContrast};
use analysis::cpu::fit_packet_byte;
use analysis::findings::CurvePoint;

/// Trials at four MSS values moving 2–3 MB each: (packets, bytes, seconds)
/// with `per_segment_s` per segment, `per_byte_s` per byte and a
/// multiplicative noise per trial.
fn trials(per_segment_s: f64, per_byte_s: f64, noise: &[f64]) -> Vec<(f64, f64, f64)> {
    let mut out = Vec::new();
    for (i, mss) in [256.0, 512.0, 1024.0, 1280.0].iter().enumerate() {
        for (j, bytes) in [2e6, 3e6].iter().enumerate() {
            let packets = bytes / mss;
            let k = noise[(2 * i + j) % noise.len()];
            out.push((
                packets,
                *bytes,
                (packets * per_segment_s + bytes * per_byte_s) * k,
            ));
        }
    }
    out
}

const NOISE: [f64; 8] = [1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 1.02];

fn point(x: f64, mean: f64, ci: f64) -> CurvePoint {
    CurvePoint { x, mean, ci }
}

#[test]
fn a_positive_per_segment_cost_is_resolved_and_reported() {
    let fit = fit_packet_byte(&trials(2e-6, 0.5e-9, &NOISE)).unwrap();
    assert!(!failed(&fit));
    let s = packet_byte_sentence(&fit, None);
    assert!(
        (fit.per_packet_us - 2.0).abs() < 0.1 && s.starts_with("The sender's CPU costs 1.98 ± "),
        "{s}"
    );
    assert!(
        s.contains("µs per segment plus") && s.contains("per-segment part is"),
        "{s}"
    );
    assert!(
        !s.contains("failed") && !s.contains("not distinguishable"),
        "{s}"
    );
}

#[test]
fn a_per_segment_cost_whose_ci_holds_zero_states_what_could_be_detected() {
    // No per-segment cost at all, noisy times: the CI straddles zero.
    let fit = fit_packet_byte(&trials(0.0, 0.5e-9, &NOISE)).unwrap();
    let lo = fit.per_packet_us - 3.0 * fit.per_packet_se_us;
    assert!(lo < 0.0 && fit.per_packet_us + 3.0 * fit.per_packet_se_us > 0.0);
    assert!(!failed(&fit));
    let s = packet_byte_sentence(&fit, None);
    assert!(
        s.contains("the per-segment cost is not distinguishable from zero"),
        "{s}"
    );
    assert!(
        s.contains("µs per segment (the CI half-width) could not have been detected"),
        "{s}"
    );
    assert!(!s.contains("per-segment part is"), "{s}");
}

#[test]
fn a_negative_per_segment_cost_is_a_failed_fit_with_its_reason() {
    // CPU time that falls as segments multiply: a negative per-segment cost
    // well outside its CI.
    let fit = fit_packet_byte(&trials(-0.3e-6, 1e-9, &[1.0, 1.001, 0.999])).unwrap();
    assert!(
        fit.per_packet_us + 3.0 * fit.per_packet_se_us < 0.0,
        "{fit:?}"
    );
    assert!(failed(&fit));
    let flat = MssContrast {
        small_mss: 256.0,
        large_mss: 1280.0,
        segments_ratio: 5.0,
        cpu_small: point(256.0, 0.0127, 0.015),
        cpu_large: point(1280.0, 0.0173, 0.0056),
        offloads_off: false,
    };
    let s = packet_byte_sentence(&fit, Some(&flat));
    assert!(
        s.starts_with("The per-segment and per-byte fit failed"),
        "{s}"
    );
    assert!(
        s.contains("negative per-segment cost") && s.contains("neither cost is reported"),
        "{s}"
    );
    assert!(
        s.contains("5.0× the segments per 20 MB")
            && s.contains("no more beyond the 95% CIs")
            && s.contains("segmentation offload"),
        "{s}"
    );
    assert!(!s.contains("µs per segment plus"), "{s}");
    // The same failed fit where CPU did rise with the segment count: the
    // offload explanation is not offered.
    let rising = MssContrast {
        cpu_small: point(256.0, 0.05, 0.001),
        ..flat
    };
    let r = packet_byte_sentence(&fit, Some(&rising));
    assert!(
        r.contains("fit failed") && !r.contains("segmentation offload"),
        "{r}"
    );
    assert!(r.contains("scatter around any per-segment"), "{r}");
    // The same flat CPU with offloads off: offload is ruled out, not offered.
    let off = MssContrast {
        offloads_off: true,
        ..flat
    };
    let o = packet_byte_sentence(&fit, Some(&off));
    assert!(
        o.contains("offload does not explain it") && !o.contains("hands the stack 64 KB"),
        "{o}"
    );
}

#[test]
fn a_flat_curve_states_the_smallest_change_it_could_have_seen() {
    let flat = [point(256.0, 1.0, 0.2), point(1280.0, 1.1, 0.1)];
    let s = shape_finding("CPU", "MSS", &flat, "s", &|x| format!("{x:.0} B"));
    assert!(
        s.ends_with("A change smaller than 0.300 s could not have been seen (the CI half-widths)."),
        "{s}"
    );
    let falls = [point(256.0, 2.0, 0.1), point(1280.0, 1.0, 0.1)];
    let t = shape_finding("CPU", "MSS", &falls, "s", &|x| format!("{x:.0} B"));
    assert!(
        t.contains("falls") && !t.contains("could not have been seen"),
        "{t}"
    );
}

fn shares(mean: f64, ci: f64, fewest: u64) -> TrialShares {
    TrialShares {
        point: point(0.0, mean, ci),
        fewest,
    }
}

fn arm(acks: f64, segments: f64, per_segment: (f64, f64), share: Option<TrialShares>) -> AckArm {
    AckArm {
        acks,
        data_segments: segments,
        per_segment: point(0.0, per_segment.0, per_segment.1),
        ack_share: share,
    }
}

#[test]
fn quick_acks_that_gave_no_more_acks_did_not_take_effect() {
    // The golden run's counts: fewer ACKs with TCP_QUICKACK.
    let quick = arm(236.0, 8446.0, (0.028, 0.006), Some(shares(0.062, 0.01, 43)));
    let delayed = arm(321.0, 8609.0, (0.037, 0.197), Some(shares(0.219, 0.1, 61)));
    let s = ack_sentence(&quick, &delayed);
    assert!(s.starts_with("Quick ACKs did not take effect"), "{s}");
    assert!(
        s.contains("236 ACKs for 8446 segments") && s.contains("321 ACKs for 8609 segments"),
        "{s}"
    );
    assert!(!s.contains("CPU"), "no share from this experiment: {s}");
}

#[test]
fn quick_acks_that_took_effect_get_their_cost_from_enough_samples_only() {
    // This host's counts: 0.76 ACKs per segment against 0.027.
    let quick = arm(
        124909.0,
        164215.0,
        (0.76, 0.02),
        Some(shares(0.037, 0.004, 3000)),
    );
    let delayed = arm(
        11555.0,
        426318.0,
        (0.027, 0.002),
        Some(shares(0.0125, 0.002, 4000)),
    );
    let s = ack_sentence(&quick, &delayed);
    assert!(
        s.starts_with("Quick ACKs made the receiver send 28.15× the ACKs of delayed ACKs"),
        "{s}"
    );
    assert!(
        s.contains("fewer than one ACK per data segment (one per 1.3 segments; Linux 6.7"),
        "{s}"
    );
    assert!(s.contains("defer the regular ACK"), "{s}");
    assert!(
        s.contains(
            "ACK work took 3.70 ± 0.40 % of the two endpoints' CPU with quick ACKs and 1.25 ± 0.20 %"
        ) && s.contains("+2.45 percentage points beyond the 95% CIs"),
        "{s}"
    );
    // About one ACK per segment is said so; shares within CI are no change.
    let one = arm(
        9800.0,
        10000.0,
        (0.98, 0.01),
        Some(shares(0.037, 0.02, 3000)),
    );
    let near = arm(
        500.0,
        10000.0,
        (0.05, 0.01),
        Some(shares(0.030, 0.02, 3000)),
    );
    let t = ack_sentence(&one, &near);
    assert!(t.contains("about one ACK per data segment"), "{t}");
    assert!(!t.contains("defer the regular ACK"), "{t}");
    assert!(
        t.contains(
            "no difference beyond the 95% CIs (a change smaller than 4.00 percentage points"
        ),
        "{t}"
    );
    // The same ACK counts from too few samples in a trial: no share is
    // stated, and the two are not compared.
    let few = AckArm {
        ack_share: Some(shares(0.12, 0.01, 866)),
        ..quick
    };
    let u = ack_sentence(&few, &delayed);
    assert!(
        u.contains("n/a (866 samples) and 1.25 ± 0.20 %, too few samples to compare"),
        "{u}"
    );
    assert!(!u.contains("12.0"), "{u}");
}

#[test]
fn a_share_needs_a_thousand_samples_in_every_trial() {
    let s = TrialShares::from_counts(0.0, &[(50, 1000), (60, 2000)]).unwrap();
    assert!(s.stated() && s.fewest == 1000, "{s:?}");
    assert!((s.point.mean - 0.04).abs() < 1e-12, "{s:?}");
    let t = TrialShares::from_counts(0.0, &[(50, 999), (60, 2000)]).unwrap();
    assert!(!t.stated());
    assert_eq!(t.words(), "n/a (999 samples)");
    assert_eq!(
        share_words(Some(&SampledShare {
            share: 0.2,
            samples: 999
        })),
        "n/a (999 samples)"
    );
    assert_eq!(
        share_words(Some(&SampledShare {
            share: 0.2,
            samples: 1000
        })),
        "20.0%"
    );
}

fn cs_arm(sender: Option<(f64, u64)>, throughput: (f64, f64)) -> ChecksumArm {
    ChecksumArm {
        sender: sender.map(|(share, samples)| SampledShare { share, samples }),
        receiver: None,
        throughput: Some(throughput),
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn a_throughput_change_that_lost_tso_too_is_not_put_down_to_checksumming() {
    let on = cs_arm(Some((0.0, 5000)), (11.8e9, 4.9e9));
    let off = cs_arm(Some((0.042, 5000)), (3.8e9, 2.5e9));
    let lost_tso = names(&["receiver rx checksum", "sender tso", "sender tx checksum"]);
    let s = checksum_sentences(&on, &off, Some(&lost_tso));
    assert!(
        s[0].contains("spends 4.2% of its CPU checksumming"),
        "{s:#?}"
    );
    assert!(
        s[1].contains("3.11× apart")
            && s[1].contains("differ in receiver rx checksum, sender tso, sender tx checksum")
            && s[1].contains("cannot be put down to checksumming")
            && s[1].contains("at most 1.04×"),
        "{s:#?}"
    );
    // Too few samples: the share is not stated and the bound is not drawn.
    let thin = cs_arm(Some((0.042, 300)), (3.8e9, 2.5e9));
    let t = checksum_sentences(&on, &thin, Some(&lost_tso));
    assert!(t[0].contains("n/a (300 samples)"), "{t:#?}");
    assert!(
        t[1].contains("not measured with enough samples") && !t[1].contains("at most"),
        "{t:#?}"
    );
}

#[test]
fn with_segmentation_held_off_the_change_is_the_checksums() {
    let only_checksum = names(&["receiver rx checksum", "sender tx checksum"]);
    // A 1.15× drop that a 20% checksum share can explain.
    let on = cs_arm(Some((0.0, 5000)), (4.6e9, 0.1e9));
    let off = cs_arm(Some((0.20, 5000)), (4.0e9, 0.1e9));
    let s = checksum_sentences(&on, &off, Some(&only_checksum));
    assert!(
        s[1].contains("differ only in receiver rx checksum, sender tx checksum")
            && s[1].contains("comes with checksumming in software: the checksum's 20.0%")
            && s[1].contains("at most 1.25×")
            && !s[1].contains("cannot be put down"),
        "{s:#?}"
    );
    // A 3× drop that a 4% share cannot explain says so.
    let off_far = cs_arm(Some((0.04, 5000)), (1.5e9, 0.1e9));
    let t = checksum_sentences(&on, &off_far, Some(&only_checksum));
    assert!(
        t[1].contains("less than the 3.07× seen: the rest is not the sender's checksum CPU"),
        "{t:#?}"
    );
    // Trials that recorded no offload state (a run from before they did):
    // the change is not put down to checksumming.
    let u = checksum_sentences(&on, &off_far, None);
    assert!(
        u[1].contains("recorded no offload state") && u[1].contains("cannot be put down"),
        "{u:#?}"
    );
}

#[test]
fn throughput_within_ci_with_and_without_checksum_offload_is_no_change() {
    let on = cs_arm(Some((0.0, 5000)), (10e9, 1e9));
    let off = cs_arm(Some((0.05, 5000)), (9.5e9, 1e9));
    let s = checksum_sentences(&on, &off, Some(&names(&["sender tx checksum"])));
    assert!(
        s[1].starts_with("Throughput does not differ beyond the 95% CIs")
            && s[1].contains("a change smaller than 2.00 Gbit/s could not have been seen"),
        "{s:#?}"
    );
    assert!(s.iter().all(|x| !x.contains("apart")), "{s:#?}");
}

#[test]
fn nodelay_costs_more_only_beyond_the_cis() {
    let p = |mean: f64, ci: f64| CurvePoint { x: 64.0, mean, ci };
    let more = nodelay_sentence(&p(8.0, 0.5), &p(2.0, 0.2)).unwrap();
    assert!(
        more.starts_with(
            "At 64-byte writes, NODELAY costs the sender 4.00× the CPU per KB of Nagle's \
             algorithm, beyond the 95% CIs (8.00 ± 0.50 µs against 2.00 ± 0.20 µs)"
        ),
        "{more}"
    );
    // The same means with wide CIs: the same cost, with what could be seen.
    let same = nodelay_sentence(&p(8.0, 4.0), &p(2.0, 2.5)).unwrap();
    assert!(
        same.contains("cost the sender the same CPU per KB within the 95% CIs")
            && same.contains("a difference smaller than 6.50 µs per KB could not have been seen"),
        "{same}"
    );
    // Less CPU with NODELAY beyond the CIs is a ratio below one.
    let less = nodelay_sentence(&p(1.0, 0.1), &p(2.0, 0.2)).unwrap();
    assert!(
        less.contains("costs the sender 0.500× the CPU per KB"),
        "{less}"
    );
    assert_eq!(
        nodelay_sentence(
            &p(1.0, 0.1),
            &CurvePoint {
                x: 1024.0,
                mean: 2.0,
                ci: 0.1
            }
        ),
        None
    );
}

#[test]
fn the_block_that_takes_the_most_cpu_is_named_only_beyond_the_cis() {
    let blocks = ["tcp_output", "driver_out", "ip_output"];
    let clear = [
        vec![0.5, 0.3, 0.1],
        vec![0.52, 0.29, 0.1],
        vec![0.48, 0.31, 0.1],
    ];
    let s = most_cpu_sentence("sender", 1024, &blocks, &clear, 0.5);
    assert!(
        s.starts_with("On the sender at MSS 1024, tcp_output takes the most CPU: 50.0 ± 5.0 % over 3 trials, beyond the 95% CIs of the next, driver_out (30.0 ± 2.5 %)"),
        "{s}"
    );
    assert!(
        s.ends_with(
            "(500 ms per 20 MB in all, 86.8× less than the paper's 386/33 sender's 43.4 s)."
        ),
        "{s}"
    );
    // The data flip: driver_out leads.
    let flipped = [
        vec![0.3, 0.5, 0.1],
        vec![0.29, 0.52, 0.1],
        vec![0.31, 0.48, 0.1],
    ];
    let s = most_cpu_sentence("sender", 1024, &blocks, &flipped, 0.5);
    assert!(s.contains(", driver_out takes the most CPU: "), "{s}");
    // Trials that disagree: neither is named, with what could be seen.
    let wide = [
        vec![0.6, 0.2, 0.1],
        vec![0.2, 0.6, 0.1],
        vec![0.45, 0.35, 0.1],
    ];
    let s = most_cpu_sentence("sender", 1024, &blocks, &wide, 0.5);
    assert!(
        s.contains("no one block takes the most CPU: tcp_output (")
            && s.contains("driver_out (")
            && s.contains("could not have been seen"),
        "{s}"
    );
    // One trial: the largest, with no claim.
    let s = most_cpu_sentence("receiver", 512, &blocks, &clear[..1], 0.5);
    assert!(s.contains("tcp_output has the largest share of CPU time (50.0 %) in the one sampled trial; with no CI that is no claim"), "{s}");
}
