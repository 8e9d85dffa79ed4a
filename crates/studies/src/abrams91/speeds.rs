//! Abrams & Chen's host-speed experiments: the CPU time per segment on
//! each side (Table 6, Figs 6–7) and mismatched sender and receiver speeds
//! (§3.5, Figs 8–9), as computed claims.
//!
//! Both run with the sender and receiver pinned to CPUs of their own and
//! each end's receive processing steered (RPS) to its endpoint's CPU, so a
//! side's CPU time includes the protocol work its kernel did in softirq:
//! on veth that work otherwise runs on whichever CPU sent the frame, and a
//! CPU quota on the sender would not charge it.

use super::paper::{D310_ACK_MS, D310_BOUND_MBIT, D310_DATA_MS, D310_PACKET_MS};
use crate::data::StudyData;
use crate::figures::{at, sender_speed};
use analysis::findings::{differ, size_words, CurvePoint};
use analysis::models::{limiter, mismatch_bound, Limiter};
use record::{TestKind, TrialParams};
use report::{measure, Figure, Point, Section, Series, Table, Unit};

use super::comparison::sender_rates_sentence;
use crate::sunos_ipc::change::{compare, Change, Estimate};

const CITE: &str = "Abrams & Chen 1991";

fn mbit(v: f64) -> String {
    measure(v, None, Unit::Si("bit/s"))
}

/// Whether a trial's sides ran on CPUs of their own with their receive
/// processing steered there, so that `cpu_<side>_whole_s` is the side's.
pub(super) fn steered(tr: &record::TrialRecord) -> bool {
    let st = &tr.outcome.details["lab"]["steering"];
    st["sender_cpu"].is_u64() && st["receiver_cpu"].is_u64()
}

/// Table 6, Figs 6–7: each side's whole CPU time (its threads plus the
/// softirq time of its CPU) per data segment.
pub(super) fn segment_cost_section(d: &StudyData) -> Section {
    let mut s = Section::new("CPU time per segment (Table 6, Figs 6–7)");
    s.paper_finding(
        format!("{CITE}, Table 6 and §3.5"),
        format!(
            "The D310 receiver took {D310_DATA_MS} ms to process a 1 KB data segment and \
             {D310_ACK_MS} ms per ACK: at least {D310_PACKET_MS} ms per packet, a bound of \
             {D310_BOUND_MBIT} Mbit/s."
        ),
    );
    let mut t = Table::new([
        "write size",
        "trial",
        "sender CPU",
        "receiver CPU",
        "sender µs/segment",
        "receiver µs/segment",
        "segment (B)",
        "bound from the slower side",
        "measured",
    ])
    .key();
    let mut rows: Vec<SegmentRow> = Vec::new();
    let (mut unsteered, mut shared) = (0, 0);
    // Trials whose tick-counted CPU cannot be true, with the first reason.
    let mut impossible: Vec<String> = Vec::new();
    // The unprobed twins when the run has them: the CPU sampler's own cost
    // would be charged to the sides otherwise.
    let twins = d.trials_of("unprobed-segment-cost");
    let (trials, which) = if twins.is_empty() {
        (
            d.trials_of("segment-cost"),
            "CPU-sampled trials (the sampler's cost included)",
        )
    } else {
        (twins, "unprobed trials")
    };
    for (tr, params) in trials {
        let m = &tr.outcome.metrics;
        let get = |k: &str| m.get(k).copied();
        let (Some(snd), Some(rcv)) = (get("cpu_sender_whole_s"), get("cpu_receiver_whole_s"))
        else {
            unsteered += 1;
            continue;
        };
        if !steered(tr) {
            unsteered += 1;
            continue;
        }
        if let Some(why) = ["sender", "receiver"]
            .iter()
            .find_map(|side| analysis::validity::cpu_impossible(m, side))
        {
            impossible.push(format!("trial {}: {why}", tr.seq));
            continue;
        }
        let other =
            get("core_sender_other_s").unwrap_or(0.0) + get("core_receiver_other_s").unwrap_or(0.0);
        if other > 0.1 * (snd + rcv) {
            shared += 1;
        }
        let (segs_out, segs_in) = (
            get("data_segs_out").unwrap_or(0.0),
            get("receiver_data_segs_in").unwrap_or(0.0),
        );
        if segs_out <= 0.0 || segs_in <= 0.0 {
            continue;
        }
        let us_snd = snd * 1e6 / segs_out;
        let us_rcv = rcv * 1e6 / segs_in;
        let seg_bytes = get("bytes").unwrap_or(0.0) / segs_out;
        let bound = seg_bytes * 8.0 / (us_snd.max(us_rcv) * 1e-6);
        let measured = get("throughput_bps").unwrap_or(0.0);
        let cpu = |k: &str| get(k).map_or("—".into(), |c| format!("CPU {c:.0}"));
        rows.push((
            params.write_size,
            us_snd,
            us_rcv,
            seg_bytes,
            bound,
            measured,
            params.offload.is_some(),
        ));
        t.row([
            size_words(params.write_size as f64),
            tr.seq.to_string(),
            cpu("core_sender_index"),
            cpu("core_receiver_index"),
            format!("{us_snd:.2}"),
            format!("{us_rcv:.2}"),
            format!("{seg_bytes:.0}"),
            mbit(bound),
            mbit(measured),
        ]);
    }
    if !impossible.is_empty() {
        s.warning(format!(
            "{} trials were left out: their CPU times cannot be true, the /proc/stat ticks having \
             covered another span than the trial ({}).",
            impossible.len(),
            impossible.join("; ")
        ));
    }
    if rows.is_empty() {
        s.warning(
            "No trial in this run had both sides pinned to CPUs of their own with their receive \
             processing steered there: each side's CPU time would include softirq work done for \
             the other side, so no per-segment cost is given.",
        );
        return s;
    }
    s.push(t.with_caption(format!(
        "Each side's whole CPU time (its threads, plus the softirq and interrupt time of the CPU \
         it was pinned to, where its receive processing was steered) per data segment, from \
         {which}; /proc/stat ticks of 10 ms"
    )));
    if unsteered > 0 {
        s.warning(format!(
            "{unsteered} trials were left out: their sides were not pinned and steered, so their \
             softirq time was charged wherever it ran."
        ));
    }
    if shared > 0 {
        s.warning(format!(
            "In {shared} trials other processes used more than a tenth of the pinned CPUs' busy \
             time; each side's CPU is its threads plus its CPU's softirq time there, which may \
             include their softirq work."
        ));
    }
    rows.sort_by_key(|r| r.0);
    let mut sizes: Vec<u64> = rows.iter().map(|r| r.0).collect();
    sizes.dedup();
    for ws in sizes {
        let at: Vec<_> = rows.iter().filter(|r| r.0 == ws).collect();
        let est = |f: &dyn Fn(&SegmentRow) -> f64| {
            Estimate::from_values(&at.iter().map(|r| f(r)).collect::<Vec<_>>())
        };
        let (Some(snd), Some(rcv), Some(seg), Some(measured)) =
            (est(&|r| r.1), est(&|r| r.2), est(&|r| r.3), est(&|r| r.5))
        else {
            continue;
        };
        let offloads_off = at.iter().all(|r| r.6);
        s.finding(segment_cost_finding(
            ws,
            seg.mean,
            &snd,
            &rcv,
            measured.mean,
            offloads_off,
        ));
    }
    s
}

/// One trial of Table 6: write size, sender µs and receiver µs per
/// segment, segment bytes, the bound, the measured throughput and whether
/// offloads were off.
type SegmentRow = (u64, f64, f64, f64, f64, f64, bool);

/// Table 6's claim at one write size: each side's CPU µs per data segment
/// (mean ± 95% CI over its trials), which side is slower only beyond the
/// CIs (else that neither is, with the smallest difference the trials
/// could have shown; a single trial claims neither), and the throughput
/// bound the slower mean sets against the mean measured (bit/s).
pub(super) fn segment_cost_finding(
    write_size: u64,
    seg_bytes: f64,
    snd: &Estimate,
    rcv: &Estimate,
    measured_bps: f64,
    offloads_off: bool,
) -> String {
    let us = |e: &Estimate| {
        measure(
            e.mean * 1e-6,
            e.ci.is_finite().then_some(e.ci * 1e-6),
            Unit::Si("s"),
        )
    };
    let bound = seg_bytes * 8.0 / (snd.mean.max(rcv.mean) * 1e-6);
    let bounds = format!(
        "the slower mean bounds throughput at {} against {} measured",
        mbit(bound),
        mbit(measured_bps)
    );
    let claim = match compare(snd, rcv) {
        Change::Raised { ratio } => format!(
            "receiving is the slower side, {}× the sender's cost beyond the 95% CIs; {bounds}",
            measure(ratio, None, Unit::Plain)
        ),
        Change::Lowered { ratio } => format!(
            "sending is the slower side, {}× the receiver's cost beyond the 95% CIs; {bounds}",
            measure(1.0 / ratio, None, Unit::Plain)
        ),
        Change::Unchanged { detectable } => format!(
            "neither side is slower beyond the 95% CIs (a difference smaller than {} per segment \
             could not have been seen); {bounds}",
            measure(detectable * 1e-6, None, Unit::Si("s"))
        ),
        Change::TooFewTrials => format!(
            "with fewer than two trials a side there is no CI, so neither side is called slower; \
             {bounds}"
        ),
    };
    format!(
        "At {} writes{} a data segment ({} B) costs {} of the sender's CPU and {} of the \
         receiver's (over {} trials), each counting the protocol work done in softirq on its own \
         CPU: {claim}.",
        size_words(write_size as f64),
        if offloads_off {
            ", offloads off,"
        } else {
            " (offloads as the devices had them)"
        },
        measure(seg_bytes, None, Unit::Plain),
        us(snd),
        us(rcv),
        snd.n.min(rcv.n)
    )
}

/// Where a measured throughput lies against the bound min(λ, μ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Against {
    /// Within the combined confidence intervals.
    At,
    /// Below the bound beyond them.
    Below,
    /// Above it beyond them: λ or μ was underestimated.
    Above,
}

/// One mismatch point: TCP's throughput and the bound at its ρ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct BoundCheck {
    /// ρ = λ/μ.
    pub rho: f64,
    /// The receive buffer (bytes).
    pub buffer: u64,
    /// TCP throughput (bit/s), mean and CI.
    pub measured: CurvePoint,
    /// min(λ, μ) (bit/s), with the CI of the smaller of the two.
    pub bound: CurvePoint,
}

impl BoundCheck {
    /// Where the measurement lies against the bound.
    pub fn against(&self) -> Against {
        match (
            differ(&self.measured, &self.bound),
            self.measured.mean < self.bound.mean,
        ) {
            (false, _) => Against::At,
            (true, true) => Against::Below,
            (true, false) => Against::Above,
        }
    }

    /// Whether ρ is within a quarter of 1, where the paper saw buffering cost most.
    pub fn near_one(&self) -> bool {
        matches!(limiter(self.rho, 1.0, 0.25), Ok(Limiter::Balanced))
    }
}

/// The mismatch claim: far from ρ = 1 does TCP reach min(λ, μ), and near
/// it does it fall below? Counted against the combined 95% CIs, with the
/// paper's pattern (at the bound far from ρ = 1, below it near) judged.
pub(super) fn bound_claim(checks: &[BoundCheck]) -> String {
    let (near, far): (Vec<&BoundCheck>, Vec<&BoundCheck>) =
        checks.iter().partition(|c| c.near_one());
    let count = |v: &[&BoundCheck], a: Against| v.iter().filter(|c| c.against() == a).count();
    let region = |v: &[&BoundCheck], name: &str| -> String {
        if v.is_empty() {
            return format!("no point fell {name}");
        }
        let mut t = format!(
            "{name} TCP was at the bound at {} of {} points",
            count(v, Against::At),
            v.len()
        );
        let below: Vec<&&BoundCheck> = v.iter().filter(|c| c.against() == Against::Below).collect();
        if let Some(w) = below.iter().min_by(|a, b| {
            (a.measured.mean / a.bound.mean).total_cmp(&(b.measured.mean / b.bound.mean))
        }) {
            t += &format!(
                " and below it at {} (lowest {:.0}% of the bound, ρ = {:.2}, {} receive buffer)",
                below.len(),
                100.0 * w.measured.mean / w.bound.mean,
                w.rho,
                size_words(w.buffer as f64)
            );
        }
        t
    };
    let margin = checks
        .iter()
        .map(|c| c.measured.ci + c.bound.ci)
        .fold(0.0, f64::max);
    let mut out = format!(
        "Against min(λ, μ) with both 95% CIs: {}; {} (a difference smaller than {} could not be \
         seen).",
        region(&far, "far from ρ = 1 (|ρ − 1| > 0.25)"),
        region(&near, "near ρ = 1"),
        mbit(margin)
    );
    let far_holds = !far.is_empty() && count(&far, Against::Below) == 0;
    let near_holds = count(&near, Against::Below) > 0;
    let verdict: &str = match (near.is_empty(), far_holds, near_holds) {
        (true, _, _) => " No speed put λ near μ, so the paper's loss near balance is not tested here.",
        (false, true, true) => " As the paper found: TCP reaches the bound far from ρ = 1 and loses throughput near it.",
        (false, true, false) => " Unlike the paper, TCP reached the bound near ρ = 1 too: its buffers absorbed the mismatch.",
        (false, false, true) => " Unlike the paper, TCP fell below the bound far from ρ = 1 as well as near it.",
        (false, false, false) => " Unlike the paper, TCP fell below the bound far from ρ = 1 but not near it.",
    };
    out += verdict;
    let above = count(&checks.iter().collect::<Vec<_>>(), Against::Above);
    if above > 0 {
        out += &format!(
            " At {above} point{} TCP exceeded the bound beyond CI: λ or μ was underestimated there.",
            if above == 1 { "" } else { "s" }
        );
    }
    out
}

/// §3.5, Figs 8–9: λ and μ measured in the mismatch runs' own setup (pinned
/// and steered, 1 KB writes), the CPU share each quota achieved beside the
/// one asked for, and TCP's throughput against min(λ, μ).
pub(super) fn mismatch_section(d: &StudyData) -> Section {
    let mut s = Section::new("Mismatched sender and receiver speeds (§3.5, Figs 8–9)");
    s.paper_finding(
        format!("{CITE}, Figs 8–9"),
        "Throughput is bounded by min(λ, μ). Far from ρ = 1 TCP reaches the bound with a receive \
         buffer of two segments; near ρ = 1 an undersized receive buffer halves throughput.",
    );
    // λ per sender speed and μ of the slowed receiver: by the paper's
    // definition with UDP, and with TCP itself (the bound uses TCP's when
    // measured: a TCP sender's capacity is not a UDP sender's).
    let speed = |p: &TrialParams| Some(sender_speed(p));
    let lambda_udp = d.curve("lambda", "offered_bps", 1.0, speed, |_| true);
    let mu_udp = d.curve("mu", "throughput_bps", 1.0, |_| Some(0.0), |_| true);
    let lambda_tcp = d.curve("lambda-tcp", "throughput_bps", 1.0, speed, |_| true);
    let mu_tcp = d.curve("mu-tcp", "throughput_bps", 1.0, |_| Some(0.0), |_| true);
    let achieved = d.curve(
        "lambda-tcp",
        "host_speed_sender_achieved",
        1.0,
        speed,
        |_| true,
    );
    let (lambda, mu, how) = if !lambda_tcp.is_empty() && !mu_tcp.is_empty() {
        (lambda_tcp.clone(), mu_tcp.first().copied(), "TCP")
    } else {
        (lambda_udp.clone(), mu_udp.first().copied(), "UDP")
    };
    let (Some(mu), false) = (mu, lambda.is_empty()) else {
        s.warning("λ or μ was not measured in this run.");
        return s;
    };
    let unsteered = ["lambda-tcp", "mu-tcp", "mismatch"]
        .iter()
        .flat_map(|id| d.trials_of(id))
        .filter(|(tr, _)| !steered(tr))
        .count();
    if unsteered > 0 {
        s.warning(format!(
            "{unsteered} trials ran without both sides pinned and their receive processing \
             steered to their own CPUs: there the receiver's protocol work ran on the sender's \
             CPU outside its quota, and a quota slows the sender less than it asks."
        ));
    }
    let cell = |c: &[CurvePoint], x: f64| {
        at(c, x).map_or("—".into(), |p| {
            measure(p.mean, Some(p.ci), Unit::Si("bit/s"))
        })
    };
    let full = lambda.iter().find(|l| l.x == 1.0).copied();
    let mut rates =
        Table::new([
            "sender CPU share asked",
            "achieved",
            "λ, UDP (paper's definition)",
            "λ, TCP",
            "λ / λ at full speed",
            "ρ = λ/μ",
            "min(λ, μ)",
        ])
        .with_caption(format!(
        "μ of the receiver with its extra work per KB: {} by UDP, {} by TCP; ρ and the bound use \
         {how}. Achieved: the sender's CPU time over its wall time under the quota",
        mu_udp
            .first()
            .map_or("—".into(), |m| measure(m.mean, Some(m.ci), Unit::Si("bit/s"))),
        mu_tcp
            .first()
            .map_or("—".into(), |m| measure(m.mean, Some(m.ci), Unit::Si("bit/s"))),
    ));
    for l in &lambda {
        rates.row([
            if l.x == 1.0 {
                "none".into()
            } else {
                format!("{}", l.x)
            },
            at(&achieved, l.x).map_or("—".into(), |a| measure(a.mean, Some(a.ci), Unit::Plain)),
            cell(&lambda_udp, l.x),
            cell(&lambda_tcp, l.x),
            full.map_or("—".into(), |f| format!("{:.2}", l.mean / f.mean)),
            format!("{:.2}", l.mean / mu.mean),
            mbit(mismatch_bound(l.mean, mu.mean).unwrap_or(f64::NAN)),
        ]);
    }
    s.push(rates);
    if let (Some(u), Some(t)) = (lambda_udp.last(), lambda_tcp.last()) {
        s.finding(sender_rates_sentence(t, u, &mbit));
    }
    // TCP throughput per (sender speed, receive buffer), against the bound.
    let mut bufs: Vec<u64> = d
        .points_of("mismatch")
        .iter()
        .filter_map(|p| p.params.rcvbuf)
        .collect();
    bufs.sort();
    bufs.dedup();
    let mut f = Figure::new(
        "Measured TCP throughput against the bound min(λ, μ)",
        "min(λ, μ)",
        "TCP throughput",
    );
    let mut bound_line = Vec::new();
    let mut checks = Vec::new();
    for b in &bufs {
        let keep = |p: &TrialParams| p.rcvbuf == Some(*b) && p.test == TestKind::TcpStream;
        let tcp = d.curve("mismatch", "throughput_bps", 1.0, speed, keep);
        let mut pts = Vec::new();
        for t in &tcp {
            let Some(l) = at(&lambda, t.x) else { continue };
            let Ok(bound) = mismatch_bound(l.mean, mu.mean) else {
                continue;
            };
            let bound_ci = if l.mean <= mu.mean { l.ci } else { mu.ci };
            pts.push(Point::with_ci(bound, t.mean, t.ci));
            bound_line.push(bound);
            checks.push(BoundCheck {
                rho: l.mean / mu.mean,
                buffer: *b,
                measured: *t,
                bound: CurvePoint {
                    x: t.x,
                    mean: bound,
                    ci: bound_ci,
                },
            });
        }
        pts.sort_by(|a, b| a.x.total_cmp(&b.x));
        f.series.push(Series::new(
            format!("receive buffer {}", size_words(*b as f64)),
            pts,
        ));
    }
    bound_line.sort_by(f64::total_cmp);
    if let (Some(lo), Some(hi)) = (bound_line.first(), bound_line.last()) {
        f.reference = Some(Series::new(
            "bound: throughput = min(λ, μ)",
            vec![
                Point::new(0.0, 0.0),
                Point::new(*lo, *lo),
                Point::new(*hi, *hi),
            ],
        ));
    }
    // Both axes in bit/s, each with the prefix its values need.
    crate::figures::x_in(&mut f, "min(λ, μ)", Unit::Si("bit/s"), 1.0);
    crate::figures::y_in(&mut f, "TCP throughput", Unit::Si("bit/s"), 1.0);
    s.push(f);
    if !checks.is_empty() {
        s.finding(bound_claim(&checks));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(rho: f64, buffer: u64, measured: f64, bound: f64) -> BoundCheck {
        let p = |mean: f64| CurvePoint {
            x: 0.0,
            mean,
            ci: 0.02 * mean,
        };
        BoundCheck {
            rho,
            buffer,
            measured: p(measured),
            bound: p(bound),
        }
    }

    #[test]
    fn the_paper_holds_when_far_points_reach_the_bound_and_near_ones_fall_below() {
        let c = [
            check(0.4, 16384, 150e6, 152e6),
            check(2.0, 16384, 395e6, 400e6),
            check(1.0, 4096, 200e6, 400e6),
            check(1.0, 16384, 390e6, 400e6),
        ];
        assert_eq!(c[2].against(), Against::Below);
        assert_eq!(c[0].against(), Against::At);
        let s = bound_claim(&c);
        assert!(
            s.contains("far from ρ = 1 (|ρ − 1| > 0.25) TCP was at the bound at 2 of 2 points;"),
            "{s}"
        );
        assert!(
            s.contains("near ρ = 1 TCP was at the bound at 1 of 2 points and below it at 1 (lowest 50% of the bound, ρ = 1.00, 4 KB receive buffer)"),
            "{s}"
        );
        assert!(s.ends_with("As the paper found: TCP reaches the bound far from ρ = 1 and loses throughput near it."), "{s}");
    }

    #[test]
    fn the_claim_flips_when_the_data_flip() {
        // Near ρ = 1 at the bound: the buffers absorbed the mismatch.
        let s = bound_claim(&[
            check(0.4, 4096, 150e6, 152e6),
            check(1.1, 4096, 398e6, 400e6),
        ]);
        assert!(
            s.contains("Unlike the paper, TCP reached the bound near ρ = 1 too"),
            "{s}"
        );
        // Far below the bound too.
        let s = bound_claim(&[
            check(3.0, 4096, 100e6, 400e6),
            check(1.0, 4096, 100e6, 400e6),
        ]);
        assert!(
            s.contains("fell below the bound far from ρ = 1 as well as near it"),
            "{s}"
        );
        // No point near ρ = 1: not tested, and said so.
        let s = bound_claim(&[check(3.0, 4096, 400e6, 400e6)]);
        assert!(
            s.contains("no point fell near ρ = 1") && s.contains("is not tested here"),
            "{s}"
        );
        // Above the bound beyond CI: flagged.
        let s = bound_claim(&[check(3.0, 4096, 600e6, 400e6)]);
        assert!(
            s.contains("At 1 point TCP exceeded the bound beyond CI"),
            "{s}"
        );
        assert_eq!(check(3.0, 4096, 600e6, 400e6).against(), Against::Above);
    }

    /// A run with only the segment-cost experiment's unprobed twin: one
    /// point per (write size, sender CPU s, receiver CPU s), steered or
    /// not, offloads off; three trials a point, the k-th at the CPU times
    /// × (1 ± `spread` · (k − 1)) (the sender up, the receiver down).
    fn segment_run(points: &[(u64, f64, f64)], steered: bool) -> StudyData {
        segment_run_spread(points, steered, 0.0)
    }

    fn segment_run_spread(points: &[(u64, f64, f64)], steered: bool, spread: f64) -> StudyData {
        use crate::data::{ExperimentRecord, StudySettings};
        use crate::fixtures::{ok_trial, study_meta};
        use record::{PointRecord, StoredRun, TrialOutcome};
        use std::collections::BTreeMap;
        let mut records = Vec::new();
        let mut trials = Vec::new();
        for (i, &(ws, snd, rcv)) in points.iter().enumerate() {
            let mut params = TrialParams::defaults(TestKind::TcpStream);
            params.write_size = ws;
            params.topology = "veth".into();
            params.offload = Some(record::factor::OffloadsOff::ALL);
            let pid = i as i64 + 1;
            records.push(PointRecord {
                id: pid,
                index: i as u32,
                params,
                precision: None,
            });
            for k in 0..3 {
                let d = spread * (k as f64 - 1.0);
                let metrics = BTreeMap::from([
                    ("throughput_bps".to_string(), 1e9),
                    ("bytes".to_string(), 1e8),
                    ("data_segs_out".to_string(), 1e5),
                    ("receiver_data_segs_in".to_string(), 1e5),
                    ("cpu_sender_whole_s".to_string(), snd * (1.0 + d)),
                    ("cpu_receiver_whole_s".to_string(), rcv * (1.0 - d)),
                    ("core_sender_index".to_string(), 0.0),
                    ("core_receiver_index".to_string(), 1.0),
                ]);
                let cpu = |c: u32| {
                    if steered {
                        serde_json::json!(c)
                    } else {
                        serde_json::Value::Null
                    }
                };
                let o = TrialOutcome {
                    metrics,
                    details: serde_json::json!({"lab": {"steering":
                        {"sender_cpu": cpu(0), "receiver_cpu": cpu(1)}}}),
                    ..TrialOutcome::default()
                };
                trials.push(ok_trial(&trials, pid, k, o));
            }
        }
        let settings = StudySettings {
            study: "abrams91".into(),
            quick: true,
            experiments: vec![ExperimentRecord {
                id: "unprobed-segment-cost".into(),
                title: String::new(),
                command: String::new(),
                first_point: 0,
                points: points.len() as u32,
            }],
            skipped: Vec::new(),
        };
        let run = StoredRun {
            meta: study_meta(settings, "veth"),
            points: records,
            trials,
        };
        let summaries = analysis::summarize_run(&run);
        StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
    }

    fn texts(s: &Section) -> Vec<String> {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                report::Block::Finding { text } | report::Block::Warning(text) => {
                    Some(text.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// A whole-CPU figure below the threads' own clock is left out, with
    /// why; the same trials with the clocks agreeing are used.
    #[test]
    fn a_segment_cost_from_impossible_cpu_ticks_is_left_out() {
        let with_threads = |threads: f64| {
            let mut d = segment_run(&[(1460, 0.1, 0.3)], true);
            for t in d.run.trials.iter_mut() {
                t.outcome.metrics.insert("cpu_sender_s".into(), threads);
            }
            d.points = analysis::summarize_run(&d.run);
            texts(&segment_cost_section(&d))
        };
        let bad = with_threads(0.187);
        assert!(
            bad.iter().any(|w| w.starts_with("3 trials were left out: their CPU times cannot be true")
                && w.contains("the sender's whole CPU (0.100 s, threads plus softirq from 10 ms ticks) is below its threads' own 0.187 s")),
            "{bad:?}"
        );
        assert!(
            !bad.iter().any(|f| f.contains("of the sender's CPU and")),
            "{bad:?}"
        );
        let good = with_threads(0.09);
        assert!(
            !good.iter().any(|w| w.contains("cannot be true")),
            "{good:?}"
        );
        assert!(
            good.iter().any(|f| f.contains("of the sender's CPU and")),
            "{good:?}"
        );
    }

    #[test]
    fn the_slower_side_of_table_6_follows_each_sides_whole_cpu() {
        // 0.1 s of sender CPU and 0.3 s of receiver CPU over 100,000
        // segments, ±5% from trial to trial.
        let t = texts(&segment_cost_section(&segment_run_spread(
            &[(1460, 0.1, 0.3)],
            true,
            0.05,
        )));
        assert!(
            t.iter().any(|f| f.starts_with(
                "At 1460 B writes, offloads off, a data segment (1000 B) costs 1.00 ± 0.12 µs of \
                 the sender's CPU and 3.00 ± 0.37 µs of the receiver's (over 3 trials)"
            ) && f.contains(": receiving is the slower side, 3.00× the sender's cost beyond the 95% CIs; the slower mean bounds throughput at")),
            "{t:?}"
        );
        let t = texts(&segment_cost_section(&segment_run_spread(
            &[(1460, 0.3, 0.1)],
            true,
            0.05,
        )));
        assert!(
            t.iter()
                .any(|f| f.contains(": sending is the slower side, 3.00× the receiver's")),
            "{t:?}"
        );
    }

    #[test]
    fn sides_within_their_cis_are_neither_slower() {
        // 0.2 s against 0.22 s, ±30% from trial to trial: within the CIs.
        let t = texts(&segment_cost_section(&segment_run_spread(
            &[(1460, 0.2, 0.22)],
            true,
            0.3,
        )));
        assert!(
            t.iter().any(|f| f.contains(
                ": neither side is slower beyond the 95% CIs (a difference smaller than "
            ) && f.contains("µs per segment could not have been seen)")),
            "{t:?}"
        );
        assert!(!t.iter().any(|f| f.contains("is the slower side")), "{t:?}");
        // One trial a side: no CI, no slower side.
        let one = Estimate::from_values(&[1.0]).unwrap();
        let three = Estimate::from_values(&[3.0]).unwrap();
        let s = segment_cost_finding(1460, 1000.0, &one, &three, 1e9, false);
        assert!(
            s.contains("(offloads as the devices had them)")
                && s.contains("there is no CI, so neither side is called slower"),
            "{s}"
        );
    }

    #[test]
    fn table_6_gives_no_cost_when_the_sides_were_not_steered() {
        let t = texts(&segment_cost_section(&segment_run(
            &[(1460, 0.1, 0.3)],
            false,
        )));
        assert!(
            t.iter().all(|f| !f.contains("µs of the sender's CPU")),
            "{t:?}"
        );
        assert!(
            t.iter()
                .any(|f| f.contains("No trial in this run had both sides pinned")),
            "{t:?}"
        );
    }
}
