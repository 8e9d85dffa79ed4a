//! What a report says about a `--precision` target: the points that missed
//! it (their primary metric's cell marked, one line each naming the
//! half-width reached, the trials and the cap) and one sentence for the
//! Methods section. netperf warns the same way when its confidence
//! interval is wider than asked.

use crate::factor_text::point_label;
use analysis::PointSummary;
use record::PrecisionOutcome;

/// The mark beside a cell whose point missed its precision target.
pub const MISSED_MARK: &str = "†";

/// The outcome of a point that missed its precision target.
fn missed(p: &PointSummary) -> Option<&PrecisionOutcome> {
    p.precision.as_ref().filter(|o| !o.met)
}

/// Whether the cell of `metric` in `p`'s row carries [`MISSED_MARK`]: the
/// point missed its target, and the target applies to this metric (the
/// primary metric of the point's test).
pub fn marks_cell(p: &PointSummary, metric: &str) -> bool {
    missed(p).is_some() && p.params.test.primary_metric() == metric
}

/// One line per point that missed its target: "point 0 (write_size=14):
/// ±10.3% after 6 trials, target ±5% at 95% (--max-repeat 6)".
pub fn missed_lines(points: &[PointSummary], varying: &[String]) -> Vec<String> {
    points
        .iter()
        .filter_map(|p| {
            let o = missed(p)?;
            let label = point_label(p, varying);
            let which = if label.is_empty() {
                format!("point {}", p.index)
            } else {
                format!("point {} ({label})", p.index)
            };
            Some(format!(
                "{which}: {} after {} trials, target {} (--max-repeat {})",
                o.reached_text(),
                o.trials,
                o.target_text(),
                o.max_repeat
            ))
        })
        .collect()
}

/// The Methods sentence on the run's precision target, `None` for a run
/// without one: how many points met it, and which missed it.
pub fn methods_text(points: &[PointSummary], varying: &[String]) -> Option<String> {
    let first = points.iter().find_map(|p| p.precision.as_ref())?;
    let with: Vec<&PointSummary> = points.iter().filter(|p| p.precision.is_some()).collect();
    let misses = missed_lines(points, varying);
    let mut t = format!(
        "target {} (the CI half-width relative to the mean), at most {} trials per \
         point: {} of {} points met it",
        first.target_text(),
        first.max_repeat,
        with.len() - misses.len(),
        with.len()
    );
    if !misses.is_empty() {
        t += &format!(
            "; missed ({MISSED_MARK} in the results): {}",
            misses.join("; ")
        );
    }
    Some(t)
}
