//! `tcplab compare`: runs lined up point by point on one metric, as a
//! table (terminal and HTML) and as CSV.

use crate::factor_text::factor_text;
use crate::metrics::{ci_of, Metric};
use analysis::findings::{differ, CurvePoint};
use analysis::PointSummary;
use record::factor::param_keys_by_name;
use record::StoredRun;
use report::format::scale_for_values;
use report::{measure, Table, Unit};

/// The note under the comparison table.
pub const COMPARE_NOTE: &str =
    "mean ± 95% CI half-width; ratio to the first run, * where the intervals do not overlap";

/// A stored run with its per-point summaries.
pub type RunPoints = (StoredRun, Vec<PointSummary>);

/// Runs lined up point by point.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Factors that tell points apart (varying in any run).
    pub factors: Vec<String>,
    /// Per row: the factor levels as text and, per run, the point's index
    /// into that run's summaries.
    pub rows: Vec<(Vec<String>, Vec<Option<usize>>)>,
    /// Lines naming fixed factors that differ between runs.
    pub differences: Vec<String>,
    /// The compared metric's key.
    pub key: String,
}

impl Comparison {
    /// Lines up `runs` (at least one) on metric `key`; `varying[i]` names
    /// the factors that vary across run i's points.
    pub fn new(runs: &[RunPoints], varying: &[Vec<String>], key: &str) -> Comparison {
        let mut factors: Vec<String> = Vec::new();
        for v in varying {
            for f in v.iter().cloned() {
                if !factors.contains(&f) {
                    factors.push(f);
                }
            }
        }
        let mut rows: Vec<(Vec<String>, Vec<Option<usize>>)> = Vec::new();
        for (ri, (_, pts)) in runs.iter().enumerate() {
            for (pi, p) in pts.iter().enumerate() {
                let levels: Vec<String> =
                    factors.iter().map(|f| factor_text(&p.params, f)).collect();
                let row = match rows.iter().position(|r| r.0 == levels) {
                    Some(i) => i,
                    None => {
                        rows.push((levels, vec![None; runs.len()]));
                        rows.len() - 1
                    }
                };
                if rows[row].1[ri].is_none() {
                    rows[row].1[ri] = Some(pi);
                }
            }
        }
        // Fixed factors that differ between runs.
        let mut differences = Vec::new();
        if !runs[0].1.is_empty() {
            for k in param_keys_by_name()
                .into_iter()
                .filter(|k| !factors.iter().any(|f| f == k))
            {
                let vals: Vec<String> = runs
                    .iter()
                    .map(|(r, p)| {
                        format!(
                            "run {}: {}",
                            r.meta.id,
                            p.first().map_or("—".into(), |x| factor_text(&x.params, k))
                        )
                    })
                    .collect();
                let distinct: std::collections::BTreeSet<String> = runs
                    .iter()
                    .map(|(_, p)| p.first().map_or("—".into(), |x| factor_text(&x.params, k)))
                    .collect();
                if distinct.len() > 1 {
                    differences.push(format!("{k} differs: {}", vals.join(", ")));
                }
            }
        }
        Comparison {
            factors,
            rows,
            differences,
            key: key.to_string(),
        }
    }

    /// The summary of row `row` in run `run`, when that run has the point.
    pub fn summary<'a>(
        &self,
        runs: &'a [RunPoints],
        row: usize,
        run: usize,
    ) -> Option<&'a analysis::Summary> {
        self.rows[row].1[run].and_then(|pi| runs[run].1[pi].metrics.get(&self.key))
    }

    /// The comparison table: per row, each run's mean ± CI and its ratio to
    /// the first run's, starred where the intervals do not overlap.
    pub fn table(&self, runs: &[RunPoints], m: Metric) -> Table {
        let (f, u) = scale_for_values(
            (0..self.rows.len())
                .flat_map(|r| (0..runs.len()).map(move |k| (r, k)))
                .filter_map(|(r, k)| self.summary(runs, r, k))
                .map(|s| s.mean),
            m.unit,
        );
        let mut header: Vec<String> = if self.factors.is_empty() {
            vec!["point".into()]
        } else {
            self.factors.clone()
        };
        let nf = header.len();
        for (i, (r, _)) in runs.iter().enumerate() {
            header.push(if u.is_empty() {
                format!("run {}", r.meta.id)
            } else {
                format!("run {} ({u})", r.meta.id)
            });
            if i > 0 {
                header.push(format!("run {} / run {}", r.meta.id, runs[0].0.meta.id));
            }
        }
        let mut t = Table::new(header)
            .with_caption(format!("{}: each run's mean ± 95% CI", m.name))
            .key();
        t.numeric = vec![false; nf];
        for (ri, (levels, _)) in self.rows.iter().enumerate() {
            let mut row = if self.factors.is_empty() {
                vec![ri.to_string()]
            } else {
                levels.clone()
            };
            let base = self.summary(runs, ri, 0);
            for k in 0..runs.len() {
                let s = self.summary(runs, ri, k);
                row.push(s.map_or("—".into(), |s| {
                    measure(s.mean * f, ci_of(s).map(|c| c * f), Unit::Plain)
                }));
                if k > 0 {
                    row.push(match (base, s) {
                        (Some(b), Some(s)) if b.mean != 0.0 => {
                            let cb = CurvePoint {
                                x: 0.0,
                                mean: b.mean,
                                ci: ci_of(b).unwrap_or(0.0),
                            };
                            let cs = CurvePoint {
                                x: 0.0,
                                mean: s.mean,
                                ci: ci_of(s).unwrap_or(0.0),
                            };
                            format!(
                                "{:.2}×{}",
                                s.mean / b.mean,
                                if differ(&cb, &cs) { " *" } else { "" }
                            )
                        }
                        _ => "—".into(),
                    });
                }
            }
            t.row(row);
        }
        t
    }

    /// The comparison as CSV: one row per point and run.
    pub fn csv(&self, runs: &[RunPoints]) -> Vec<u8> {
        let q = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = String::new();
        let mut header: Vec<String> = self.factors.iter().map(|f| q(f)).collect();
        header.extend(
            [
                "run",
                "host",
                "metric",
                "mean",
                "ci95",
                "n",
                "ratio_to_first",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        out.push_str(&header.join(","));
        out.push('\n');
        for (ri, (levels, _)) in self.rows.iter().enumerate() {
            let base = self.summary(runs, ri, 0).map(|s| s.mean);
            for (k, (r, _)) in runs.iter().enumerate() {
                let Some(s) = self.summary(runs, ri, k) else {
                    continue;
                };
                let mut row: Vec<String> = levels.iter().map(|l| q(l)).collect();
                row.push(r.meta.id.to_string());
                row.push(q(&r.meta.host.hostname));
                row.push(q(&self.key));
                row.push(s.mean.to_string());
                row.push(ci_of(s).map_or(String::new(), |c| c.to_string()));
                row.push(s.n.to_string());
                row.push(
                    base.filter(|b| *b != 0.0)
                        .map_or(String::new(), |b| (s.mean / b).to_string()),
                );
                out.push_str(&row.join(","));
                out.push('\n');
            }
        }
        out.into_bytes()
    }
}

/// What `tcplab compare` prints: each run's facts and host, the fixed
/// factors that differ, the table and its note.
pub fn compare_text(runs: &[RunPoints], cmp: &Comparison, table: &Table) -> String {
    let mut out = String::new();
    for (run, _) in runs {
        let h = &run.meta.host;
        out += &format!(
            "run {}: {} · {} · {} · {} · host {} ({}, {} cores, kernel {}, cc {})\n",
            run.meta.id,
            run.meta.kind,
            run.meta.status.as_str(),
            run.meta.place,
            run.meta.started_at,
            h.hostname,
            h.cpu_model,
            h.cores,
            h.kernel.split_whitespace().next().unwrap_or(""),
            h.congestion_control
        );
    }
    for d in &cmp.differences {
        out += &format!("{d}\n");
    }
    out += "\n";
    out += &report::text::table_text(table);
    out += &format!("{COMPARE_NOTE}\n");
    out
}
