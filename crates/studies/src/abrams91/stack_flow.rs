//! Abrams & Chen §3.5, Figs 8–9 on tcplab's stack: window against
//! rate-based flow control on a mismatched pair. The stack sends with each
//! flow control (λ: its rate into a fast Linux receiver) to a Linux
//! receiver slowed by work per KB read (μ: that receiver's rate behind an
//! unpaced sender and default buffers), through a small receive buffer;
//! each arm's throughput is judged against min(λ, μ).

use super::stack_runs::{FLOW, LAMBDA, MU, RECV_WORK, SMALL_RCVBUF};
use crate::data::StudyData;
use analysis::findings::{differ, CurvePoint};
use record::factor::FlowControl;
use record::TrialParams;
use report::{measure, Section, Table, Unit};

const CITE: &str = "Abrams & Chen 1991";

fn bps(p: &CurvePoint) -> String {
    measure(p.mean, (p.ci > 0.0).then_some(p.ci), Unit::Si("bit/s"))
}

/// One flow control on the mismatched pair.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Arm {
    /// The flow control, as the bench takes it.
    pub flow: FlowControl,
    /// The sender's rate into a fast receiver, bit/s.
    pub lambda: CurvePoint,
    /// The slowed receiver's rate, bit/s.
    pub mu: CurvePoint,
    /// Throughput on the pair, bit/s.
    pub measured: CurvePoint,
}

/// Where an arm's throughput lies against min(λ, μ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Within the 95% CIs.
    At,
    /// Below beyond them.
    Below,
    /// Above beyond them: λ or μ was underestimated.
    Above,
}

impl Arm {
    /// min(λ, μ), with the CI of the smaller.
    pub fn bound(&self) -> CurvePoint {
        if self.lambda.mean <= self.mu.mean {
            self.lambda
        } else {
            self.mu
        }
    }

    /// The throughput against the bound, by the CIs (with `differ`'s 1%
    /// floor).
    pub fn verdict(&self) -> Verdict {
        let b = self.bound();
        if !differ(&self.measured, &b) {
            Verdict::At
        } else if self.measured.mean < b.mean {
            Verdict::Below
        } else {
            Verdict::Above
        }
    }

    fn name(&self) -> String {
        match self.flow {
            FlowControl::Window => "Window flow control (the sender unpaced)".into(),
            FlowControl::Rate(r) => format!(
                "Rate-based flow control at {}",
                measure(r as f64, None, Unit::Si("bit/s"))
            ),
        }
    }
}

/// λ against μ in words: which is larger beyond the CIs, or neither.
fn regime(a: &Arm) -> String {
    let rho = a.lambda.mean / a.mu.mean;
    if !differ(&a.lambda, &a.mu) {
        format!("ρ = λ/μ = {rho:.2}, λ within the 95% CIs of μ")
    } else if a.lambda.mean > a.mu.mean {
        format!("ρ = λ/μ = {rho:.2}, λ > μ beyond the 95% CIs")
    } else {
        format!("ρ = λ/μ = {rho:.2}, λ < μ beyond the 95% CIs")
    }
}

/// One arm's claim: its λ, μ and ρ, and its throughput at, below or above
/// min(λ, μ) by the 95% CIs (by how much when not at it).
pub(super) fn arm_finding(a: &Arm) -> String {
    let b = a.bound();
    let rel = (a.measured.mean / b.mean - 1.0) * 100.0;
    let verdict = match a.verdict() {
        Verdict::At => format!(
            "at the bound within the 95% CIs (a difference under {} could not have been seen)",
            measure(
                analysis::findings::resolution_of(a.measured.mean, a.measured.ci, b.mean, b.ci),
                None,
                Unit::Si("bit/s")
            )
        ),
        Verdict::Below => format!("{:.0}% below the bound, beyond the 95% CIs", -rel),
        Verdict::Above => format!(
            "{rel:.0}% above the bound, beyond the 95% CIs: impossible for a true bound, so λ or \
             μ was underestimated here"
        ),
    };
    format!(
        "{} (λ = {} into a fast receiver; μ = {}; {}): throughput {} against min(λ, μ) = {}, {}.",
        a.name(),
        bps(&a.lambda),
        bps(&a.mu),
        regime(a),
        bps(&a.measured),
        bps(&b),
        verdict
    )
}

/// The claim over the arms: how many of each flow control reached
/// min(λ, μ), set against the paper's call for rate-based flow control.
pub(super) fn summary_finding(arms: &[Arm]) -> Option<String> {
    let count = |window: bool| {
        let v: Vec<&Arm> = arms
            .iter()
            .filter(|a| (a.flow == FlowControl::Window) == window)
            .collect();
        (
            v.iter().filter(|a| a.verdict() == Verdict::At).count(),
            v.len(),
        )
    };
    let (rate_at, rate_n) = count(false);
    let (win_at, win_n) = count(true);
    if rate_n + win_n == 0 {
        return None;
    }
    let verdict = match (
        rate_n > 0 && rate_at == rate_n,
        win_n > 0 && win_at == win_n,
    ) {
        (true, true) => "both flow controls tracked the bound on this pair",
        (true, false) => {
            "rate-based flow control tracked the bound where window flow control did not, as \
             the paper proposed"
        }
        (false, true) => {
            "window flow control tracked the bound where rate-based flow control did not, \
             unlike the paper's proposal"
        }
        (false, false) => "neither flow control tracked the bound at every arm",
    };
    Some(format!(
        "Against min(λ, μ): rate-based flow control was at the bound at {rate_at} of {rate_n} \
         arms, window flow control at {win_at} of {win_n}: {verdict}."
    ))
}

/// Throughput per trial over `id`'s trials with flow control `fc` (any
/// flow control when `None`).
fn rate_of(d: &StudyData, id: &str, fc: Option<FlowControl>) -> Option<CurvePoint> {
    let keep =
        |p: &TrialParams| fc.is_none_or(|f| p.flow_control.unwrap_or(FlowControl::Window) == f);
    let v: Vec<f64> = d
        .trials_of(id)
        .iter()
        .filter(|(_, p)| keep(p))
        .filter_map(|(t, _)| t.outcome.metrics.get("throughput_bps").copied())
        .collect();
    CurvePoint::of_values(0.0, &v)
}

/// The arms of this run: each flow control of the mismatch experiment with
/// its λ and the run's μ.
pub(super) fn arms(d: &StudyData) -> Vec<Arm> {
    let Some(mu) = rate_of(d, MU, None) else {
        return Vec::new();
    };
    let mut flows: Vec<FlowControl> = d
        .trials_of(FLOW)
        .iter()
        .map(|(_, p)| p.flow_control.unwrap_or(FlowControl::Window))
        .collect();
    flows.sort();
    flows.dedup();
    flows
        .into_iter()
        .filter_map(|f| {
            Some(Arm {
                flow: f,
                lambda: rate_of(d, LAMBDA, Some(f))?,
                mu,
                measured: rate_of(d, FLOW, Some(f))?,
            })
        })
        .collect()
}

/// The section.
pub(super) fn stack_flow_section(d: &StudyData) -> Section {
    let mut s = Section::new(
        "On tcplab's stack: window against rate-based flow control on a mismatched pair (§3.5, Figs 8–9)",
    );
    s.paper_finding(
        format!("{CITE}, §3.5 and Figs 8–9"),
        "Throughput is bounded by min(λ, μ); window flow control with an undersized receive \
         buffer falls below it (to half near ρ = 1), and a rate-based sender that knows μ could \
         track the bound.",
    );
    let arms = arms(d);
    if arms.is_empty() {
        s.warning(format!(
            "{FLOW}, {LAMBDA} or {MU} has no successful trial in this run: no stack mismatch."
        ));
        return s;
    }
    s.paragraph(format!(
        "Controls: tcplab's stack sends (the client, behind a plain TUN device in a namespace of \
         its own) to Linux, whose reader burns {RECV_WORK} of CPU per KB read (μ). λ is each \
         flow control's throughput into the same Linux receiver without that work; μ is the \
         slowed receiver's throughput behind the unpaced sender with default buffers; the \
         mismatch runs use a {SMALL_RCVBUF} receive buffer."
    ));
    let mut t = Table::new([
        "flow control",
        "λ",
        "μ",
        "ρ = λ/μ",
        "min(λ, μ)",
        "measured",
        "against the bound",
    ])
    .key()
    .with_caption("Mean ± 95% CI over trials; the bound's CI is that of the smaller of λ and μ");
    for a in &arms {
        t.row([
            a.flow.to_string(),
            bps(&a.lambda),
            bps(&a.mu),
            format!("{:.2}", a.lambda.mean / a.mu.mean),
            bps(&a.bound()),
            bps(&a.measured),
            match a.verdict() {
                Verdict::At => "at it".to_string(),
                Verdict::Below => format!(
                    "{:.0}% below",
                    (1.0 - a.measured.mean / a.bound().mean) * 100.0
                ),
                Verdict::Above => "above: impossible, λ or μ underestimated".to_string(),
            },
        ]);
    }
    s.push(t);
    for a in &arms {
        s.finding(arm_finding(a));
    }
    if let Some(f) = summary_finding(&arms) {
        s.finding(f);
    }
    s
}
