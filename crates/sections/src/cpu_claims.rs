//! The run report's CPU finding: which kernel layer took the most of a
//! side's CPU time at a point, claimed only from trials with enough samples
//! and only beyond the 95% CIs of the runner-up.

use analysis::findings::{largest, CurvePoint, Largest};
use analysis::layers::CpuLayer;
use analysis::trial_cost::MIN_CPU_SAMPLES;
use report::{measure, Unit};

/// One sampled trial of a side: its samples and its CPU time's share per
/// layer, in [`CpuLayer::ALL`] order (fractions).
#[derive(Debug, Clone, PartialEq)]
pub struct SideShares {
    /// The side's samples in the trial.
    pub samples: u64,
    /// Share of the side's CPU time per layer.
    pub shares: Vec<f64>,
}

/// Whether a trial has samples enough ([`MIN_CPU_SAMPLES`]) for its shares
/// to be stated.
pub fn enough_samples(samples: u64) -> bool {
    samples >= MIN_CPU_SAMPLES
}

/// The finding for one side (`who`, e.g. "Sender at write_size=1024") over
/// the point's sampled trials: n/a with the sample count when no trial has
/// [`MIN_CPU_SAMPLES`]; from one trial, its largest layer without a claim
/// against the others; from several, the layer with the largest mean share
/// when it is beyond the CIs of the runner-up, or the layers within CI of
/// it with the smallest difference the trials could have shown.
pub fn layer_finding(who: &str, trials: &[SideShares]) -> String {
    let used: Vec<&SideShares> = trials
        .iter()
        .filter(|t| enough_samples(t.samples))
        .collect();
    if used.is_empty() {
        let most = trials.iter().map(|t| t.samples).max().unwrap_or(0);
        return format!(
            "{who}: CPU shares n/a ({most} samples in its best-sampled trial, fewer than the \
             {MIN_CPU_SAMPLES} a share needs)."
        );
    }
    let layers: Vec<(&str, CurvePoint)> = CpuLayer::ALL
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let v: Vec<f64> = used
                .iter()
                .map(|t| t.shares.get(i).copied().unwrap_or(0.0))
                .collect();
            Some((l.name(), CurvePoint::of_values(0.0, &v)?))
        })
        .collect();
    let share = |name: &str| {
        let p = layers.iter().find(|(n, _)| *n == name).map(|(_, p)| *p);
        p.map_or("—".into(), |p| {
            measure(p.mean, (used.len() > 1).then_some(p.ci), Unit::Percent)
        })
    };
    if used.len() == 1 {
        let top = layers
            .iter()
            .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
            .map_or("—", |(n, _)| *n);
        return format!(
            "{who}: the largest share of CPU time was {top} ({}) in its one trial with \
             {MIN_CPU_SAMPLES} samples or more; one trial has no CI, so this is no claim against \
             the other layers.",
            share(top)
        );
    }
    let n = used.len();
    match largest(&layers) {
        Some(Largest::Clear {
            first,
            second: Some(second),
        }) => format!(
            "{who}: most CPU time in {first} ({} over {n} trials), beyond the 95% CIs of the next, \
             {second} ({}).",
            share(first),
            share(second)
        ),
        Some(Largest::Clear {
            first,
            second: None,
        }) => {
            format!(
                "{who}: all CPU time in {first} ({} over {n} trials).",
                share(first)
            )
        }
        Some(Largest::Within { tied, resolution }) => {
            let list: Vec<String> = tied.iter().map(|l| format!("{l} ({})", share(l))).collect();
            format!(
                "{who}: no single layer took the most CPU time: {} are within the 95% CIs of each \
                 other over {n} trials (a difference smaller than {} could not have been seen).",
                list.join(", "),
                measure(resolution, None, Unit::Percent)
            )
        }
        None => format!("{who}: no CPU time was sampled."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trial with `samples` whose time went `copy` to copy and the rest
    /// to tcp.
    fn trial(samples: u64, copy: f64) -> SideShares {
        let mut shares = vec![0.0; CpuLayer::ALL.len()];
        let at = |l: CpuLayer| CpuLayer::ALL.iter().position(|x| *x == l).unwrap();
        shares[at(CpuLayer::ALL[0])] = copy;
        shares[at(CpuLayer::ALL[1])] = 1.0 - copy;
        SideShares { samples, shares }
    }

    #[test]
    fn the_layer_is_named_beyond_the_cis_and_flips_with_the_data() {
        let (a, b) = (CpuLayer::ALL[0].name(), CpuLayer::ALL[1].name());
        let high = [trial(1500, 0.70), trial(1500, 0.72), trial(1500, 0.68)];
        let s = layer_finding("Sender", &high);
        assert!(
            s.starts_with(&format!("Sender: most CPU time in {a} (70.0 ± ")),
            "{s}"
        );
        assert!(s.contains(&format!("the next, {b} (30.0 ± ")), "{s}");
        let low = [trial(1500, 0.30), trial(1500, 0.28), trial(1500, 0.32)];
        let s = layer_finding("Sender", &low);
        assert!(
            s.starts_with(&format!("Sender: most CPU time in {b} (70.0 ± ")),
            "{s}"
        );
        let even = [trial(1500, 0.70), trial(1500, 0.30), trial(1500, 0.50)];
        let s = layer_finding("Sender", &even);
        assert!(s.contains("no single layer took the most CPU time"), "{s}");
        assert!(s.contains("a difference smaller than "), "{s}");
    }

    #[test]
    fn trials_with_too_few_samples_give_no_share() {
        let s = layer_finding("Receiver", &[trial(120, 0.9), trial(999, 0.9)]);
        assert_eq!(
            s,
            "Receiver: CPU shares n/a (999 samples in its best-sampled trial, fewer than the \
             1000 a share needs)."
        );
        // Only the trials with enough samples count: one, so no claim.
        let s = layer_finding("Receiver", &[trial(120, 0.1), trial(1000, 0.9)]);
        assert!(
            s.contains("in its one trial with 1000 samples or more"),
            "{s}"
        );
        assert!(s.contains("(90.0 %)"), "{s}");
    }
}
