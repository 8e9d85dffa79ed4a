//! Axes: the plotting-space [`Axis`] (log10 of the values on a log axis)
//! with its ticks, "nice" linear steps, ticks at decades or powers of two,
//! and the tick labels of each [`TickFormat`].
//!
//! Log axes are drawn by plotting log10 of the values on a linear axis.
//! A log x axis with few distinct values (at most [`MAX_VALUE_TICKS`]) has
//! its ticks at those values, so every plotted x (1460, say) is labelled;
//! with more, ticks sit at 1-2-5 steps of each decade (or powers of two
//! for byte sizes). Along the x axis, labels that would overlap are
//! thinned ([`Axis::x`]).

use super::style::{text_width, DESC_PX, TICK_PX};
use crate::doc::TickFormat;
use crate::format::{bytes_short, compact};
use plotters::coord::ranged1d::Ranged;

/// A log x axis with at most this many distinct values has a tick at each.
pub(super) const MAX_VALUE_TICKS: usize = 12;
/// Least room between two tick labels along the x axis, px.
const LABEL_GAP_PX: f64 = 8.0;

/// One axis in plotting space (log10 of the values on a log axis), with its
/// ticks and their labels.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    pub(super) log: bool,
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<(f64, String)>,
}

impl Axis {
    /// A raw value in plotting space (log10 on a log axis).
    pub(super) fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    /// Whether a raw value can be plotted on this axis.
    pub(super) fn ok(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// The axis as a plotters coordinate.
    pub(super) fn coord(&self) -> Axis {
        self.clone()
    }

    /// The label of the tick at plotting-space position `v`, if any.
    pub(super) fn label(&self, v: f64) -> String {
        let eps = (self.hi - self.lo).abs() * 1e-6;
        self.ticks
            .iter()
            .find(|t| (t.0 - v).abs() <= eps)
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }

    /// Builds an axis over raw values (finite; positive when `log`).
    pub(super) fn new(values: &[f64], log: bool, format: &TickFormat, from_zero: bool) -> Axis {
        let vals: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let (mut min, mut max) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        if !min.is_finite() {
            (min, max) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if !log && from_zero && min > 0.0 {
            min = 0.0;
        }
        if !log && from_zero && max < 0.0 {
            max = 0.0;
        }
        let (mut lo, mut hi) = if log {
            (min.log10(), max.log10())
        } else {
            (min, max)
        };
        if hi - lo <= 0.0 {
            let d = if log {
                0.5
            } else if lo == 0.0 {
                1.0
            } else {
                lo.abs() * 0.1
            };
            lo -= d;
            hi += d;
        }
        let pad = (hi - lo) * 0.05;
        let zero_floor = !log && from_zero && lo == 0.0;
        if !zero_floor {
            lo -= pad;
        }
        hi += pad;
        let ticks = ticks(lo, hi, log, format);
        Axis { log, lo, hi, ticks }
    }
}

impl Axis {
    /// An x axis `px` pixels long over raw values. On a log axis (unless
    /// the ticks are given as labels) with 2 to [`MAX_VALUE_TICKS`]
    /// distinct `tick_values` (the measured x values, say, without a
    /// reference curve's), the ticks are those values; with more,
    /// a log axis of numbers has ticks at 1-2-5 steps of each decade, at
    /// decades, or at every k-th decade, whichever is densest without
    /// overlapping labels. Labels that would still overlap are dropped,
    /// keeping the first and the last.
    pub(super) fn x(
        values: &[f64],
        tick_values: &[f64],
        log: bool,
        format: &TickFormat,
        px: u32,
    ) -> Axis {
        let mut a = Axis::new(values, log, format, false);
        if log && !matches!(format, TickFormat::Labels(_)) {
            let mut distinct: Vec<f64> = tick_values
                .iter()
                .copied()
                .filter(|v| v.is_finite() && *v > 0.0)
                .collect();
            distinct.sort_by(f64::total_cmp);
            // Values within 1% of each other (65507 and 65536) share one
            // tick: the one with the shorter label (64K).
            let mut ticks: Vec<(f64, String)> = Vec::new();
            for v in distinct {
                let t = (v.log10(), tick_label(format, v));
                match ticks.last_mut() {
                    Some(last) if t.0 - last.0 <= 1.01f64.log10() => {
                        if t.1.len() < last.1.len() {
                            *last = t;
                        }
                    }
                    _ => ticks.push(t),
                }
            }
            if (2..=MAX_VALUE_TICKS).contains(&ticks.len()) {
                a.ticks = ticks;
            } else if matches!(format, TickFormat::Number) {
                if let Some(t) = decade_ticks(&a, px) {
                    a.ticks = t;
                }
            }
        }
        a.ticks = thin_labels(&a, px);
        a
    }

    /// Pixel position of plotting-space `p` along an axis `px` long.
    fn px_of(&self, p: f64, px: u32) -> f64 {
        (p - self.lo) / (self.hi - self.lo) * f64::from(px)
    }
}

/// The label of a tick at raw value `v`.
fn tick_label(format: &TickFormat, v: f64) -> String {
    match format {
        TickFormat::Bytes => bytes_short(v),
        _ => compact(v),
    }
}

/// Whether the labels of `ticks` (sorted) leave [`LABEL_GAP_PX`] between
/// each other on axis `a`, `px` long.
fn labels_fit(a: &Axis, ticks: &[(f64, String)], px: u32) -> bool {
    ticks.windows(2).all(|w| {
        let half = |t: &(f64, String)| f64::from(text_width(&t.1, TICK_PX)) / 2.0;
        a.px_of(w[1].0, px) - a.px_of(w[0].0, px) >= half(&w[0]) + half(&w[1]) + LABEL_GAP_PX
    })
}

/// Log ticks of numbers: 1-2-5 steps of each decade, else decades, else
/// every k-th decade: the densest whose labels fit (at least two ticks).
fn decade_ticks(a: &Axis, px: u32) -> Option<Vec<(f64, String)>> {
    let (k0, k1) = (a.lo.floor() as i32, a.hi.ceil() as i32);
    let within = |v: f64| v.log10() >= a.lo - 1e-9 && v.log10() <= a.hi + 1e-9;
    let at = |vals: Vec<f64>| -> Vec<(f64, String)> {
        vals.into_iter()
            .filter(|v| within(*v))
            .map(|v| (v.log10(), compact(v)))
            .collect()
    };
    let mut candidates = vec![at((k0..=k1)
        .flat_map(|k| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(k)))
        .collect())];
    for every in 1..=(k1 - k0).max(1) {
        candidates.push(at((k0..=k1)
            .filter(|k| k.rem_euclid(every) == 0)
            .map(|k| 10f64.powi(k))
            .collect()));
    }
    candidates
        .into_iter()
        .find(|t| t.len() >= 2 && labels_fit(a, t, px))
}

/// The ticks of `a` whose labels do not overlap along an axis `px` long:
/// from the left, each tick is kept when its label clears the last kept
/// one; the last tick replaces the one kept before it when they collide.
fn thin_labels(a: &Axis, px: u32) -> Vec<(f64, String)> {
    let mut kept: Vec<(f64, String)> = Vec::new();
    for t in &a.ticks {
        let fits = match kept.last() {
            Some(last) => labels_fit(a, &[last.clone(), t.clone()], px),
            None => true,
        };
        if fits {
            kept.push(t.clone());
        }
    }
    if let Some(last) = a.ticks.last() {
        let n = kept.len();
        if kept.last() != Some(last)
            && n >= 2
            && labels_fit(a, &[kept[n - 2].clone(), last.clone()], px)
        {
            kept[n - 1] = last.clone();
        }
    }
    kept
}

/// The axis as plotters' coordinate: linear over [lo, hi] in plotting
/// space, with exactly our ticks (and no light mesh lines).
impl Ranged for Axis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (r * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A "nice" step near `raw`: 1, 2, 2.5 or 5 times a power of ten.
pub(super) fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let f = raw / p;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * p
}

/// Multiples of `step` within [lo, hi] (at most 50).
pub(super) fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 && v.len() < 50 {
        let x = k * step;
        v.push(if x.abs() < step * 1e-9 { 0.0 } else { x });
        k += 1.0;
    }
    v
}

/// Tick positions (in plotting space) and labels for an axis over [lo, hi].
fn ticks(lo: f64, hi: f64, log: bool, format: &TickFormat) -> Vec<(f64, String)> {
    let raw = |p: f64| if log { 10f64.powf(p) } else { p };
    let to = |v: f64| if log { v.log10() } else { v };
    match format {
        TickFormat::Labels(l) => l
            .iter()
            .filter(|(v, _)| v.is_finite() && (!log || *v > 0.0))
            .map(|(v, s)| (to(*v), s.clone()))
            .filter(|(p, _)| *p >= lo - 1e-9 && *p <= hi + 1e-9)
            .collect(),
        TickFormat::Bytes => {
            let (a, b) = (raw(lo), raw(hi));
            let mut vals: Vec<f64> = Vec::new();
            if log {
                let e0 = a.log2().ceil() as i32;
                let e1 = b.log2().floor() as i32;
                if e1 - e0 >= 1 {
                    let every = ((e1 - e0 + 1) as f64 / 8.0).ceil().max(1.0) as i32;
                    // Keep ticks on multiples of `every` so 1K, 4K, 16K … line up.
                    let mut e = e0 + (every - e0.rem_euclid(every)) % every;
                    while e <= e1 {
                        vals.push(2f64.powi(e));
                        e += every;
                    }
                }
            }
            if vals.len() < 2 {
                let step = 2f64.powf(((b - a) / 6.0).max(1.0).log2().ceil());
                vals = linear_ticks(a, b, step);
            }
            vals.into_iter()
                .filter(|v| !log || *v > 0.0)
                .map(|v| (to(v), bytes_short(v)))
                .collect()
        }
        TickFormat::Number => {
            let mut vals: Vec<f64> = Vec::new();
            if log {
                let k0 = lo.ceil() as i32;
                let k1 = hi.floor() as i32;
                for k in k0..=k1 {
                    vals.push(10f64.powi(k));
                }
                if vals.len() < 3 {
                    vals.clear();
                    for k in (lo.floor() as i32)..=(hi.ceil() as i32) {
                        for m in [1.0, 2.0, 5.0] {
                            let v = m * 10f64.powi(k);
                            let p = v.log10();
                            if p >= lo && p <= hi {
                                vals.push(v);
                            }
                        }
                    }
                }
            }
            if vals.len() < 2 {
                let (a, b) = (raw(lo), raw(hi));
                vals = linear_ticks(a, b, nice_step((b - a) / 5.0));
                if log {
                    vals.retain(|v| *v > 0.0);
                }
            }
            vals.into_iter().map(|v| (to(v), compact(v))).collect()
        }
    }
}

/// Width of the y label area: the widest tick label, the description
/// and gaps.
pub(super) fn y_area(ticks: &[(f64, String)]) -> u32 {
    let w = ticks
        .iter()
        .map(|t| text_width(&t.1, TICK_PX))
        .max()
        .unwrap_or(20);
    w + 14 + DESC_PX + 14
}
