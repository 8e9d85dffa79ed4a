//! Finding sentences computed from a run's data: the shape of a measured
//! curve (where it rises, where it flattens within its confidence
//! intervals), where one curve overtakes another, and how a measured value
//! stands against a bound. Reports print these under each figure, so a
//! figure's caption says what this host did, never canned text.

/// One point of a measured curve: a factor level and the metric's mean
/// with its 95% CI half-width there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CurvePoint {
    /// The factor level (e.g. write size, bytes).
    pub x: f64,
    /// The metric's mean at that level.
    pub mean: f64,
    /// Half-width of its 95% confidence interval (0 when n < 2).
    pub ci: f64,
}

impl CurvePoint {
    /// The mean and 95% CI of `values` at level `x` (CI 0 for a single
    /// value); `None` for no values.
    pub fn of_values(x: f64, values: &[f64]) -> Option<CurvePoint> {
        let s = crate::stats::Summary::new(values)?;
        let ci = if s.ci95.is_finite() { s.ci95 } else { 0.0 };
        Some(CurvePoint {
            x,
            mean: s.mean,
            ci,
        })
    }
}

/// Whether two means differ beyond their confidence intervals (intervals
/// that do not overlap). Where neither has an interval (single trials, or
/// trials that all read the same), a 1% floor stands in for one, so that
/// two single trials a hair apart are not called different; with an
/// interval on either side the intervals alone decide, as every sentence
/// that says "beyond the 95% CIs" means.
pub fn differ(a: &CurvePoint, b: &CurvePoint) -> bool {
    (a.mean - b.mean).abs() > a.ci + b.ci + no_interval_floor(a, b)
}

/// The smallest difference [`differ`] can see between two means with
/// these CI half-widths: the half-widths, plus the 1% floor where neither
/// has an interval. What a "no change" sentence gives as the change that
/// could not have been seen.
pub fn resolution_of(mean_a: f64, ci_a: f64, mean_b: f64, ci_b: f64) -> f64 {
    let ci = |c: f64| if c.is_finite() { c } else { 0.0 };
    let a = CurvePoint {
        x: 0.0,
        mean: mean_a,
        ci: ci(ci_a),
    };
    let b = CurvePoint {
        x: 0.0,
        mean: mean_b,
        ci: ci(ci_b),
    };
    a.ci + b.ci + no_interval_floor(&a, &b)
}

/// The 1% floor [`differ`] uses when neither point has an interval, else 0.
fn no_interval_floor(a: &CurvePoint, b: &CurvePoint) -> f64 {
    if a.ci > 0.0 || b.ci > 0.0 {
        0.0
    } else {
        0.01 * a.mean.abs().max(b.mean.abs())
    }
}

/// The shape of a curve over increasing x.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Fewer than two points.
    TooShort,
    /// Every point within CI of every other.
    Flat,
    /// Rises up to `knee`, then stays within CI of the highest point.
    RisesThenFlat {
        /// The first x whose mean is within CI of the maximum, with every
        /// later point also within CI of it.
        knee: f64,
    },
    /// Rises to the last point.
    Rises,
    /// Falls to the last point, or from `from` on.
    Falls {
        /// Where the fall begins (the x of the maximum).
        from: f64,
    },
    /// Rises to a peak at `peak`, then falls beyond CI.
    Peaks {
        /// The x of the maximum.
        peak: f64,
    },
}

/// Classifies a curve (points in any order; sorted by x here).
pub fn shape(points: &[CurvePoint]) -> Shape {
    let mut p: Vec<CurvePoint> = points.to_vec();
    p.sort_by(|a, b| a.x.total_cmp(&b.x));
    if p.len() < 2 {
        return Shape::TooShort;
    }
    let imax = (0..p.len())
        .max_by(|&a, &b| p[a].mean.total_cmp(&p[b].mean))
        .unwrap_or(0);
    let top = p[imax];
    if p.iter().all(|q| !differ(q, &top)) {
        return Shape::Flat;
    }
    let after_falls = p[imax + 1..].iter().any(|q| differ(q, &top));
    if after_falls {
        let before_lower = p[..imax].iter().any(|q| differ(q, &top));
        return if before_lower {
            Shape::Peaks { peak: top.x }
        } else {
            Shape::Falls { from: top.x }
        };
    }
    // No later point falls below the top: find the first x from which every
    // point is within CI of the top.
    let knee = (0..p.len())
        .find(|&i| p[i..].iter().all(|q| !differ(q, &top)))
        .unwrap_or(imax);
    if knee + 1 >= p.len() {
        Shape::Rises
    } else {
        Shape::RisesThenFlat { knee: p[knee].x }
    }
}

/// The smallest x (of the levels both curves have) from which `a` stays
/// above `b` beyond CI at every later common level; `None` if it never
/// does. Curves are matched by equal x.
pub fn overtakes_from(a: &[CurvePoint], b: &[CurvePoint]) -> Option<f64> {
    let mut common: Vec<(CurvePoint, CurvePoint)> = a
        .iter()
        .filter_map(|pa| b.iter().find(|pb| pb.x == pa.x).map(|pb| (*pa, *pb)))
        .collect();
    common.sort_by(|x, y| x.0.x.total_cmp(&y.0.x));
    let above = |(pa, pb): &(CurvePoint, CurvePoint)| pa.mean > pb.mean && differ(pa, pb);
    (0..common.len())
        .find(|&i| common[i..].iter().all(above))
        .map(|i| common[i].0.x)
}

/// A byte size as people write it: 10 B, 1460 B, 8 KB, 64 KB, 1.5 MB
/// (KB = 1024 bytes, as the papers use).
pub fn size_words(bytes: f64) -> String {
    let b = bytes.round();
    if b >= 1024.0 * 1024.0 && (b % (1024.0 * 1024.0) == 0.0 || b >= 10.0 * 1024.0 * 1024.0) {
        format!("{} MB", trim(b / (1024.0 * 1024.0)))
    } else if b >= 1024.0 && b % 1024.0 == 0.0 {
        format!("{} KB", trim(b / 1024.0))
    } else {
        format!("{} B", b as u64)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.trim_end_matches(".0").to_string()
}

/// A sentence on one curve's shape: "`what` rises with `factor` up to
/// 8 KB, then is flat within CI." `fmt_x` writes a level.
pub fn shape_sentence(
    what: &str,
    factor: &str,
    s: &Shape,
    fmt_x: &dyn Fn(f64) -> String,
) -> String {
    match s {
        Shape::TooShort => format!("{what}: too few levels of {factor} to describe a trend."),
        Shape::Flat => format!("{what} does not change with {factor} beyond its 95% CI."),
        Shape::RisesThenFlat { knee } => format!(
            "{what} rises with {factor} up to {}, then is flat within CI.",
            fmt_x(*knee)
        ),
        Shape::Rises => format!("{what} rises with {factor} over the whole range measured."),
        Shape::Falls { from } => format!("{what} falls as {factor} grows beyond {}.", fmt_x(*from)),
        Shape::Peaks { peak } => format!(
            "{what} peaks at {factor} = {}, and is lower beyond CI on both sides.",
            fmt_x(*peak)
        ),
    }
}

/// The largest difference from the curve's highest point that [`shape`]
/// could have missed: a level's and the top's CI half-widths (plus the 1%
/// floor of [`differ`] where neither has an interval). `None` for a curve
/// of one point.
pub fn flat_resolution(curve: &[CurvePoint]) -> Option<f64> {
    let top = curve.iter().max_by(|a, b| a.mean.total_cmp(&b.mean))?;
    curve
        .iter()
        .filter(|q| q.x != top.x)
        .map(|q| q.ci + top.ci + no_interval_floor(q, top))
        .max_by(f64::total_cmp)
}

/// [`shape_sentence`] for `curve`; a flat curve also says how large a
/// change could have gone unseen, written by `fmt_y` ("no change" always
/// comes with the smallest change the trials could have detected).
pub fn shape_finding(
    what: &str,
    factor: &str,
    curve: &[CurvePoint],
    fmt_x: &dyn Fn(f64) -> String,
    fmt_y: &dyn Fn(f64) -> String,
) -> String {
    let sh = shape(curve);
    let s = shape_sentence(what, factor, &sh, fmt_x);
    match (sh, flat_resolution(curve)) {
        (Shape::Flat, Some(r)) => format!(
            "{s} A change smaller than {} could not have been seen (the CI half-widths).",
            fmt_y(r)
        ),
        _ => s,
    }
}

/// Which of several named means is the largest, judged by their CIs. A
/// ranking is decided pair by pair (issue 30, rule 4): a clear first
/// differs from every other, and names said to be within CI of each other
/// are so in every pair.
#[derive(Debug, Clone, PartialEq)]
pub enum Largest<'a> {
    /// `first` is larger than every other beyond the CIs ([`differ`]);
    /// `second` is the runner-up (`None` when there is no other).
    Clear {
        /// The largest.
        first: &'a str,
        /// The next largest.
        second: Option<&'a str>,
    },
    /// The largest mean is within the CI of another: `tied` are names
    /// within CI of each other in every pair, the largest mean first, and
    /// `resolution` the smallest difference from the runner-up the trials
    /// could have shown (both CI half-widths plus the 1% floor of
    /// [`differ`]).
    Within {
        /// Names within CI of each other, pair by pair, largest mean
        /// first: each next name by mean that is within CI of every name
        /// already taken (so a wide CI near the top cannot tie two names
        /// that differ from each other).
        tied: Vec<&'a str>,
        /// The smallest difference that would have been seen.
        resolution: f64,
    },
}

/// Which of `items` (name, mean with CI; the x is ignored) is the largest:
/// a clear first only beyond the CIs of every other. `None` when there are
/// no items.
pub fn largest<'a>(items: &[(&'a str, CurvePoint)]) -> Option<Largest<'a>> {
    let mut sorted: Vec<&(&str, CurvePoint)> = items.iter().collect();
    sorted.sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean));
    let (first, top) = *sorted.first().copied()?;
    let Some(&&(second, next)) = sorted.get(1) else {
        return Some(Largest::Clear {
            first,
            second: None,
        });
    };
    if sorted[1..].iter().all(|(_, p)| differ(&top, p)) {
        return Some(Largest::Clear {
            first,
            second: Some(second),
        });
    }
    let mut taken: Vec<&(&str, CurvePoint)> = vec![sorted[0]];
    for item in &sorted[1..] {
        if taken.iter().all(|(_, p)| !differ(p, &item.1)) {
            taken.push(item);
        }
    }
    let tied = taken.iter().map(|(n, _)| *n).collect();
    Some(Largest::Within {
        tied,
        resolution: top.ci + next.ci + no_interval_floor(&top, &next),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(v: &[(f64, f64, f64)]) -> Vec<CurvePoint> {
        v.iter()
            .map(|&(x, mean, ci)| CurvePoint { x, mean, ci })
            .collect()
    }

    #[test]
    fn rising_then_flat_curve_has_its_knee() {
        let c = curve(&[
            (10.0, 1.0, 0.1),
            (100.0, 5.0, 0.2),
            (1024.0, 9.8, 0.3),
            (8192.0, 10.0, 0.4),
            (65536.0, 10.2, 0.4),
        ]);
        assert_eq!(shape(&c), Shape::RisesThenFlat { knee: 1024.0 });
        // Tighter CIs at the top move the knee: the data decide.
        let c2 = curve(&[
            (10.0, 1.0, 0.1),
            (100.0, 5.0, 0.2),
            (1024.0, 9.8, 0.1),
            (8192.0, 10.0, 0.1),
            (65536.0, 10.2, 0.1),
        ]);
        assert_eq!(shape(&c2), Shape::RisesThenFlat { knee: 8192.0 });
        let s = shape_sentence("TCP throughput", "write size", &shape(&c2), &size_words);
        assert_eq!(
            s,
            "TCP throughput rises with write size up to 8 KB, then is flat within CI."
        );
    }

    #[test]
    fn other_shapes() {
        assert_eq!(
            shape(&curve(&[(1.0, 5.0, 1.0), (2.0, 5.5, 1.0)])),
            Shape::Flat
        );
        assert_eq!(
            shape(&curve(&[(1.0, 1.0, 0.1), (2.0, 2.0, 0.1), (3.0, 3.0, 0.1)])),
            Shape::Rises
        );
        assert_eq!(
            shape(&curve(&[(1.0, 3.0, 0.1), (2.0, 2.0, 0.1)])),
            Shape::Falls { from: 1.0 }
        );
        assert_eq!(
            shape(&curve(&[(1.0, 1.0, 0.1), (2.0, 3.0, 0.1), (3.0, 1.5, 0.1)])),
            Shape::Peaks { peak: 2.0 }
        );
        assert_eq!(shape(&curve(&[(1.0, 1.0, 0.1)])), Shape::TooShort);
    }

    #[test]
    fn overtaking_needs_every_later_level_beyond_ci() {
        let tcp = curve(&[(512.0, 5.0, 0.1), (1460.0, 6.0, 0.1), (2048.0, 6.5, 0.1)]);
        let udp = curve(&[(512.0, 4.0, 0.1), (1460.0, 7.0, 0.1), (2048.0, 8.0, 0.1)]);
        assert_eq!(overtakes_from(&udp, &tcp), Some(1460.0));
        assert_eq!(overtakes_from(&tcp, &udp), None);
        // Within CI at the last level: no longer "above".
        let udp2 = curve(&[(512.0, 4.0, 0.1), (1460.0, 7.0, 0.1), (2048.0, 6.6, 0.5)]);
        assert_eq!(overtakes_from(&udp2, &tcp), None);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_words(10.0), "10 B");
        assert_eq!(size_words(1460.0), "1460 B");
        assert_eq!(size_words(8192.0), "8 KB");
        assert_eq!(size_words(65536.0), "64 KB");
        assert_eq!(size_words(512000.0), "500 KB");
        assert_eq!(size_words(4.0 * 1024.0 * 1024.0), "4 MB");
    }

    #[test]
    fn a_flat_curve_says_what_change_it_could_have_missed() {
        let flat = curve(&[(4.0, 9.40, 0.01), (16.0, 9.41, 0.02), (64.0, 9.40, 0.01)]);
        let s = shape_finding("T", "buffer", &flat, &|x| format!("{x}"), &|y| {
            format!("{y:.3} u")
        });
        assert!(s.contains("does not change with buffer"), "{s}");
        // 0.02 + 0.01 at the widest pair: the CIs alone decide.
        assert!(s.contains("A change smaller than 0.030 u could not"), "{s}");
        // Issue 30: disjoint CIs are a change, however small (0.4%); the
        // 1% floor stands in only where no point has an interval.
        let small = curve(&[
            (4.0, 9.3635, 0.0153),
            (16.0, 9.389, 0.0013),
            (64.0, 9.3998, 0.0016),
        ]);
        let t = shape_finding("T", "buffer", &small, &|x| format!("{x}"), &|y| {
            format!("{y}")
        });
        assert!(t.contains("rises with buffer"), "{t}");
        let singles = curve(&[(4.0, 9.36, 0.0), (64.0, 9.40, 0.0)]);
        let t = shape_finding("T", "buffer", &singles, &|x| format!("{x}"), &|y| {
            format!("{y:.3} u")
        });
        assert!(
            t.contains("does not change") && t.contains("0.094 u"),
            "{t}"
        );
        let rises = curve(&[(4.0, 1.0, 0.01), (16.0, 5.0, 0.02), (64.0, 9.0, 0.01)]);
        let t = shape_finding("T", "buffer", &rises, &|x| format!("{x}"), &|y| {
            format!("{y:.3} u")
        });
        assert!(!t.contains("A change smaller"), "{t}");
    }

    fn named(v: &[(&'static str, f64, f64)]) -> Vec<(&'static str, CurvePoint)> {
        v.iter()
            .map(|&(n, mean, ci)| (n, CurvePoint { x: 0.0, mean, ci }))
            .collect()
    }

    #[test]
    fn a_ranking_is_decided_pair_by_pair() {
        let p = |mean, ci| CurvePoint { x: 0.0, mean, ci };
        // Issue 30's example: a wide CI at the top overlaps hops that
        // differ from each other; they are not "within the CIs of each
        // other".
        let hops = [
            ("send socket", p(300.0, 400.0)),
            ("receive socket", p(145.0, 59.0)),
            ("to IP input", p(13.9, 3.3)),
            ("driver", p(0.483, 0.030)),
        ];
        let Some(Largest::Within { tied, .. }) = largest(&hops) else {
            panic!("{:?}", largest(&hops))
        };
        for (i, a) in tied.iter().enumerate() {
            for b in &tied[i + 1..] {
                let pa = hops.iter().find(|h| h.0 == *a).unwrap().1;
                let pb = hops.iter().find(|h| h.0 == *b).unwrap().1;
                assert!(
                    !differ(&pa, &pb),
                    "{a} and {b} differ but are tied: {tied:?}"
                );
            }
        }
        assert_eq!(tied, ["send socket", "receive socket"]);
        // Narrow CIs: every pair differs, the first is clear.
        let narrow = [("a", p(10.0, 1.0)), ("b", p(5.0, 1.0)), ("c", p(1.0, 0.1))];
        assert_eq!(
            largest(&narrow),
            Some(Largest::Clear {
                first: "a",
                second: Some("b")
            })
        );
        // Beyond the runner-up but not beyond a wide third: not clear.
        let wide = [("a", p(10.0, 1.0)), ("b", p(5.0, 1.0)), ("c", p(4.0, 6.0))];
        assert!(matches!(largest(&wide), Some(Largest::Within { .. })));
    }

    #[test]
    fn the_largest_is_named_only_beyond_the_runner_ups_ci() {
        let clear = named(&[("tcp", 0.30, 0.02), ("copy", 0.50, 0.03), ("ip", 0.1, 0.01)]);
        assert_eq!(
            largest(&clear),
            Some(Largest::Clear {
                first: "copy",
                second: Some("tcp")
            })
        );
        // The same means with wide CIs: within them, with what could be seen.
        let wide = named(&[("tcp", 0.30, 0.12), ("copy", 0.50, 0.13), ("ip", 0.1, 0.01)]);
        match largest(&wide) {
            Some(Largest::Within { tied, resolution }) => {
                assert_eq!(tied, ["copy", "tcp"]);
                assert!((resolution - (0.13 + 0.12)).abs() < 1e-12);
            }
            other => panic!("{other:?}"),
        }
        // The data flip, the first flips.
        let flipped = named(&[("tcp", 0.50, 0.02), ("copy", 0.30, 0.03)]);
        assert_eq!(
            largest(&flipped),
            Some(Largest::Clear {
                first: "tcp",
                second: Some("copy")
            })
        );
        assert_eq!(
            largest(&named(&[("only", 1.0, 0.5)])),
            Some(Largest::Clear {
                first: "only",
                second: None
            })
        );
        assert_eq!(largest(&[]), None);
    }
}
