//! Small helpers shared by the studies' reports: curves as report series,
//! factor levels read off a point's parameters.

use analysis::findings::CurvePoint;
use record::TrialParams;
use report::format::scale_for_values;
use report::{Figure, Point, Series, Unit};

/// A measured curve as a report series with CI error bars.
pub fn series(name: &str, c: &[CurvePoint]) -> Series {
    Series::new(
        name,
        c.iter()
            .map(|p| Point::with_ci(p.x, p.mean, p.ci))
            .collect(),
    )
}

/// The write size of a point, bytes.
pub fn write_size(p: &TrialParams) -> Option<f64> {
    Some(p.write_size as f64)
}

/// Load workers beside the sender (0 without `--load`).
pub fn load_workers(p: &TrialParams) -> u32 {
    p.load.as_ref().map_or(0, |l| l.workers)
}

/// The place a point ran in, by its `--topology` name.
pub fn place(p: &TrialParams) -> String {
    p.topology.name().to_string()
}

/// The sender's CPU fraction under `--host-speed` (1 without).
pub fn sender_speed(p: &TrialParams) -> f64 {
    use record::params::HostSide;
    match &p.host_speed {
        Some(h) if matches!(h.side, HostSide::Sender | HostSide::Both) => h.fraction,
        _ => 1.0,
    }
}

/// The value of a curve at x, if it has one.
pub fn at(c: &[CurvePoint], x: f64) -> Option<CurvePoint> {
    c.iter().find(|p| p.x == x).copied()
}

/// Sets a logarithmic y axis when every mean is positive and they span
/// more than 30×, so small values stay readable beside large ones.
pub fn auto_log_y(f: &mut report::Figure) {
    let ys: Vec<f64> = f
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.y))
        .collect();
    let min = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ys.iter().copied().fold(0.0, f64::max);
    if !ys.is_empty() && min > 0.0 && max / min > 30.0 {
        f.log_y = true;
        f.y_from_zero = false;
    }
}

/// Every point of a figure, its series' and its reference's.
fn points_mut(f: &mut Figure) -> impl Iterator<Item = &mut Point> {
    f.series
        .iter_mut()
        .chain(f.reference.as_mut())
        .flat_map(|s| s.points.iter_mut())
}

/// Writes a figure's y values in one prefix of `unit`, chosen by
/// `report::format::scale_for_values` for the largest of them, as a table
/// column's: the values (error bars and the paper's reference with them)
/// are given in `given` × `unit` (1e6 for Mbit/s of `Unit::Si("bit/s")`)
/// and the axis reads `quantity (prefix unit)`, e.g. `throughput
/// (Gbit/s)`, so its label and its values agree.
pub fn y_in(f: &mut Figure, quantity: &str, unit: Unit, given: f64) {
    let (factor, text) = scale_for_values(
        f.series
            .iter()
            .chain(f.reference.as_ref())
            .flat_map(|s| s.points.iter().map(|p| p.y * given)),
        unit,
    );
    let k = given * factor;
    for p in points_mut(f) {
        p.y *= k;
        p.ci_lo = p.ci_lo.map(|v| v * k);
        p.ci_hi = p.ci_hi.map(|v| v * k);
    }
    f.y_label = format!("{quantity} ({text})");
}

/// [`y_in`] for the x axis.
pub fn x_in(f: &mut Figure, quantity: &str, unit: Unit, given: f64) {
    let (factor, text) = scale_for_values(
        f.series
            .iter()
            .chain(f.reference.as_ref())
            .flat_map(|s| s.points.iter().map(|p| p.x * given)),
        unit,
    );
    let k = given * factor;
    for p in points_mut(f) {
        p.x *= k;
    }
    f.x_label = format!("{quantity} ({text})");
}

/// [`y_in`] for a throughput given in Mbit/s, as the studies' curves hold
/// it: `throughput (Gbit/s)` on a fast host, `throughput (Mbit/s)` on a
/// 10 Mbit/s link.
pub fn throughput_y(f: &mut Figure, quantity: &str) {
    y_in(f, quantity, Unit::Si("bit/s"), 1e6);
}
