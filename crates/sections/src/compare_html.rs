//! The HTML report of `tcplab compare`: the runs, the table side by side
//! with an overlay figure (without the measures the validity rules leave
//! out, each named with its reason), and each run's host.

use crate::compare::{Comparison, RunPoints, COMPARE_NOTE};
use crate::factor_text::{factor_label, factor_number, is_size, point_label};
use crate::metrics::{capitalize, ci_of, Metric};
use report::doc::host_facts;
use report::format::scale_for_values;
use report::{Block, Figure, Point, Report, Section, Series, SeriesStyle, Table, TickFormat};

/// The HTML report of `tcplab compare --out`: the runs and their hosts,
/// the comparison `table` of metric `m`, and an overlay figure.
pub fn compare_report(runs: &[RunPoints], cmp: &Comparison, table: Table, m: Metric) -> Report {
    let ids: Vec<String> = runs.iter().map(|(r, _)| r.meta.id.to_string()).collect();
    let mut rep = Report::new(format!("tcplab compare: runs {}", ids.join(", "))).with_subtitle(
        format!("{} side by side; the first run is the baseline", m.name),
    );
    let mut s = Section::new("Runs");
    let mut t = Table::new([
        "run", "test", "started", "status", "place", "host", "CPU", "cores", "kernel", "cc",
    ])
    .with_caption("The runs and the hosts they ran on");
    t.numeric = vec![
        true, false, false, false, false, false, false, true, false, false,
    ];
    for (r, _) in runs {
        let h = &r.meta.host;
        t.row([
            r.meta.id.to_string(),
            r.meta.kind.clone(),
            r.meta.started_at.clone(),
            r.meta.status.as_str().to_string(),
            r.meta.place.clone(),
            h.hostname.clone(),
            h.cpu_model.clone(),
            h.cores.to_string(),
            h.kernel.split_whitespace().next().unwrap_or("").to_string(),
            h.congestion_control.clone(),
        ]);
    }
    s.push(t);
    for d in &cmp.differences {
        s.warning(d.clone());
    }
    rep.push(s);

    let mut s = Section::new("Side by side");
    s.paragraph(COMPARE_NOTE);
    let note = crate::compare::small_sample_note(&table);
    s.push(table);
    if let Some(note) = note {
        s.paragraph(note);
    }
    for l in cmp.left_out_lines(runs) {
        s.warning(format!("Not plotted: {l}"));
    }
    let drawn = |k: usize, pi: usize| {
        analysis::validity::why_left_out(&cmp.left_out[k], pi, &cmp.key).is_none()
    };
    // The overlay: against the first numeric factor, one series per run (and
    // per combination of the other factors); or bars per point.
    let (f, u) = scale_for_values(
        runs.iter()
            .enumerate()
            .flat_map(|(k, (_, p))| {
                p.iter()
                    .enumerate()
                    .filter(move |(pi, _)| drawn(k, *pi))
                    .filter_map(|(_, x)| x.metrics.get(&cmp.key))
            })
            .map(|s| s.mean),
        m.unit,
    );
    let y = if u.is_empty() {
        m.name.to_string()
    } else {
        format!("{} ({u})", m.name)
    };
    let numeric = cmp.factors.iter().find(|fac| {
        runs.iter()
            .all(|(_, p)| p.iter().all(|x| factor_number(&x.params, fac).is_some()))
    });
    let mut fig;
    match numeric {
        Some(fac) => {
            let others: Vec<String> = cmp.factors.iter().filter(|x| *x != fac).cloned().collect();
            fig = Figure::new(
                format!("{} against {}", capitalize(m.name), fac.replace('_', " ")),
                factor_label(fac),
                y,
            );
            fig.x_ticks = if is_size(fac) {
                TickFormat::Bytes
            } else {
                TickFormat::Number
            };
            let mut xs = Vec::new();
            for (k, (r, pts)) in runs.iter().enumerate() {
                let mut series: Vec<Series> = Vec::new();
                for (pi, p) in pts.iter().enumerate() {
                    let (Some(x), Some(sm), true) = (
                        factor_number(&p.params, fac),
                        p.metrics.get(&cmp.key),
                        drawn(k, pi),
                    ) else {
                        continue;
                    };
                    xs.push(x);
                    let combo = point_label(p, &others);
                    let name = if combo.is_empty() {
                        format!("run {} ({})", r.meta.id, r.meta.host.hostname)
                    } else {
                        format!("run {} · {combo}", r.meta.id)
                    };
                    let pt = Point::with_ci(x, sm.mean * f, ci_of(sm).unwrap_or(0.0) * f);
                    match series.iter_mut().find(|s| s.name == name) {
                        Some(s) => s.points.push(pt),
                        None => series.push(Series::new(name, vec![pt])),
                    }
                }
                fig.series.extend(series);
            }
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            fig.log_x = lo > 0.0 && hi / lo > 30.0;
        }
        None => {
            fig = Figure::new(format!("{} per point", capitalize(m.name)), "point", y);
            fig.x_ticks = TickFormat::Labels(
                cmp.rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        (
                            i as f64,
                            if r.0.is_empty() {
                                format!("point {i}")
                            } else {
                                r.0.join(", ")
                            },
                        )
                    })
                    .collect(),
            );
            for (k, (r, _)) in runs.iter().enumerate() {
                let pts: Vec<Point> = (0..cmp.rows.len())
                    .filter_map(|ri| {
                        cmp.shown(runs, ri, k).map(|sm| {
                            Point::with_ci(ri as f64, sm.mean * f, ci_of(sm).unwrap_or(0.0) * f)
                        })
                    })
                    .collect();
                fig.series.push(
                    Series::new(format!("run {} ({})", r.meta.id, r.meta.host.hostname), pts)
                        .with_style(SeriesStyle::Bars),
                );
            }
        }
    }
    fig.caption = Some("Means; error bars: 95% CI (Student's t).".into());
    s.push(fig);
    rep.push(s);

    let mut s = Section::new("Hosts");
    for (r, _) in runs {
        s.push(Block::Heading(format!(
            "run {}: {}",
            r.meta.id, r.meta.host.hostname
        )));
        s.push(host_facts(&r.meta.host));
    }
    rep.push(s);
    rep
}
