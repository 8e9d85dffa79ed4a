//! The measures a report leaves out by the validity rules
//! ([`analysis::validity`]): impossible or unsupported values are flagged,
//! never plotted, and each is named with its reason under the table or
//! figure it is missing from.

use crate::factor_text::point_label;
use crate::metrics::known_metric;
use analysis::validity::LeftOut;
use analysis::PointSummary;

/// One sentence per left-out measure of `points` (`left_out` computed over
/// them): "Throughput of point 3 (write_size=256K, topology=lan1g) is
/// left out: n/a: the rate would rest on 2.1 ms …". Only the measures whose
/// metric `keep` accepts.
pub fn left_out_lines(
    points: &[PointSummary],
    varying: &[String],
    left_out: &[LeftOut],
    keep: impl Fn(&str) -> bool,
) -> Vec<String> {
    left_out
        .iter()
        .filter(|l| keep(l.metric))
        .filter_map(|l| {
            let p = points.get(l.point)?;
            let label = point_label(p, varying);
            let which = if label.is_empty() {
                format!("point {}", p.index)
            } else {
                format!("point {} ({label})", p.index)
            };
            Some(format!(
                "{} of {which} is left out: {}",
                crate::metrics::capitalize(known_metric(l.metric).name),
                l.why.reason()
            ))
        })
        .collect()
}
