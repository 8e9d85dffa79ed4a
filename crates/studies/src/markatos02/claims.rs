//! The Markatos sentences on MB per CPU-second across networks and on
//! latency: a difference is claimed only beyond the 95% CIs, and "no
//! difference" states the smallest one the trials could have seen.

use analysis::findings::{differ, CurvePoint};
use report::{measure, Unit};

/// Where the sender moves most and least data per CPU-second, from
/// (network, MB per sender CPU-second ± CI); `None` with fewer than two
/// networks.
pub(super) fn most_and_least(per: &[(String, CurvePoint)]) -> Option<String> {
    let most = per.iter().max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))?;
    let least = per.iter().min_by(|a, b| a.1.mean.total_cmp(&b.1.mean))?;
    if most.0 == least.0 {
        return None;
    }
    // MB (10⁶ B) per CPU-second, written as bench writes bytes per CPU-s.
    let mb = |c: &CurvePoint| measure(c.mean * 1e6, Some(c.ci * 1e6), Unit::Si("B/CPU-s"));
    Some(if differ(&most.1, &least.1) {
        format!(
            "The sender moves most data per CPU-second on {} ({}) and least on {} ({}), {:.1}× \
             less, beyond the 95% CIs.",
            most.0,
            mb(&most.1),
            least.0,
            mb(&least.1),
            most.1.mean / least.1.mean
        )
    } else {
        format!(
            "MB per sender CPU-second does not differ between the networks beyond the 95% CIs \
             (from {} on {} to {} on {}): a difference smaller than {} could not have been \
             seen.",
            mb(&least.1),
            least.0,
            mb(&most.1),
            most.0,
            measure((most.1.ci + least.1.ci) * 1e6, None, Unit::Si("B/CPU-s"))
        )
    })
}

/// The median latency of `name` on loopback against the network `net`,
/// seconds (mean over trials ± CI): what the network adds, beyond the CIs
/// or not, and how much of the time is there without a network.
pub(super) fn latency_sentence(
    name: &str,
    net: &str,
    loopback: CurvePoint,
    networked: CurvePoint,
) -> String {
    let s = |c: &CurvePoint| measure(c.mean, Some(c.ci), Unit::Si("s"));
    if !differ(&loopback, &networked) {
        return format!(
            "{name}: median {} on loopback and {} on {net}, no difference beyond the 95% CIs: \
             a difference smaller than {} could not have been seen.",
            s(&loopback),
            s(&networked),
            measure(loopback.ci + networked.ci, None, Unit::Si("s"))
        );
    }
    let share = loopback.mean / networked.mean;
    format!(
        "{name}: median {} on loopback, {} on {net} ({:.1}×); {:.0}% of the {net} time is \
         already there on loopback, so {}.",
        s(&loopback),
        s(&networked),
        networked.mean / loopback.mean,
        share * 100.0,
        if share >= 0.5 {
            "the hosts' processing sets most of it"
        } else {
            "the network, not the hosts' processing, sets most of it"
        }
    )
}
