//! `tcplab compare`: runs lined up point by point on one metric, as a
//! table (terminal and HTML) and as CSV. A measure the validity rules leave
//! out (`analysis::validity`, with the line rate each run's place stored)
//! shows its reason in place of the number, has no ratio and is not
//! plotted; the CSV keeps its mean and says why in `left_out`.

use crate::factor_text::factor_text;
use crate::metrics::{ci_of, marks_small_sample, Metric};
use analysis::findings::{differ, CurvePoint};
use analysis::validity::{why_left_out, Invalid, LeftOut};
use analysis::PointSummary;
use record::factor::param_keys_by_name;
use record::StoredRun;
use report::format::scale_for_values;
use report::{measure, Table, Unit};

/// The note under the comparison table.
pub const COMPARE_NOTE: &str =
    "mean ± 95% CI half-width; ratio to the first run, * where the intervals do not overlap";

/// The small-sample footnote when a cell of the comparison `table` carries
/// the mark.
pub fn small_sample_note(table: &Table) -> Option<&'static str> {
    table
        .rows
        .iter()
        .flatten()
        .any(|c| c.ends_with(report::format::SMALL_SAMPLE_MARK))
        .then_some(report::format::SMALL_SAMPLE_NOTE)
}

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
    /// Per run, the measures of its points the validity rules leave out.
    pub left_out: Vec<Vec<LeftOut>>,
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
            left_out: runs
                .iter()
                .map(|(r, p)| analysis::validity::left_out(&r.trials, p))
                .collect(),
        }
    }

    /// Why row `row`'s measure in run `run` is left out, if it is.
    pub fn why_left_out(&self, row: usize, run: usize) -> Option<&Invalid> {
        let pi = self.rows[row].1[run]?;
        why_left_out(&self.left_out[run], pi, &self.key)
    }

    /// The summary of row `row` in run `run` when it may be shown: the run
    /// has the point and its measure is not left out.
    pub fn shown<'a>(
        &self,
        runs: &'a [RunPoints],
        row: usize,
        run: usize,
    ) -> Option<&'a analysis::Summary> {
        self.summary(runs, row, run)
            .filter(|_| self.why_left_out(row, run).is_none())
    }

    /// One line per left-out measure of the compared metric: "run 2:
    /// Throughput of point 1 (write_size=256K) is left out: …".
    pub fn left_out_lines(&self, runs: &[RunPoints]) -> Vec<String> {
        let mut out = Vec::new();
        for (k, (r, pts)) in runs.iter().enumerate() {
            let varying = crate::terminal::varying_factors(pts);
            let key = self.key.as_str();
            for l in crate::left_out::left_out_lines(pts, &varying, &self.left_out[k], |m| m == key)
            {
                out.push(format!("run {}: {l}", r.meta.id));
            }
        }
        out
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
    /// the first run's, starred where the intervals do not overlap; a
    /// left-out measure's reason in place of its number, and no ratio; ‡
    /// beside a mean of fewer than 5 trials with a CI wider than itself.
    pub fn table(&self, runs: &[RunPoints], m: Metric) -> Table {
        let (f, u) = scale_for_values(
            (0..self.rows.len())
                .flat_map(|r| (0..runs.len()).map(move |k| (r, k)))
                .filter_map(|(r, k)| self.shown(runs, r, k))
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
            let base = self.shown(runs, ri, 0);
            for k in 0..runs.len() {
                let s = self.shown(runs, ri, k);
                row.push(match (s, self.why_left_out(ri, k)) {
                    (_, Some(why)) => why.cell(),
                    (Some(s), None) if marks_small_sample(s) => format!(
                        "{} {}",
                        measure(s.mean * f, ci_of(s).map(|c| c * f), Unit::Plain),
                        report::format::SMALL_SAMPLE_MARK
                    ),
                    (Some(s), None) => measure(s.mean * f, ci_of(s).map(|c| c * f), Unit::Plain),
                    (None, None) => "—".into(),
                });
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
                "left_out",
            ]
            .iter()
            .map(|s| s.to_string()),
        );
        out.push_str(&header.join(","));
        out.push('\n');
        for (ri, (levels, _)) in self.rows.iter().enumerate() {
            let base = self.shown(runs, ri, 0).map(|s| s.mean);
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
                let why = self.why_left_out(ri, k);
                row.push(
                    base.filter(|b| *b != 0.0 && why.is_none())
                        .map_or(String::new(), |b| (s.mean / b).to_string()),
                );
                row.push(why.map_or(String::new(), |w| q(&w.reason())));
                out.push_str(&row.join(","));
                out.push('\n');
            }
        }
        out.into_bytes()
    }
}

impl Comparison {
    /// The comparison as JSON (`tcplab compare --json`): the metric, the
    /// runs (the first is the baseline), the factors that tell points
    /// apart, the fixed factors that differ, and one row per point with
    /// each run's mean, 95% CI half-width (null under two trials), trial
    /// count, ratio to the first run and why the measure is left out.
    pub fn json(&self, runs: &[RunPoints]) -> serde_json::Value {
        use serde_json::json;
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .enumerate()
            .map(|(ri, (levels, _))| {
                let base = self.shown(runs, ri, 0).map(|s| s.mean);
                let per_run: Vec<serde_json::Value> = runs
                    .iter()
                    .enumerate()
                    .filter_map(|(k, (r, _))| {
                        let s = self.summary(runs, ri, k)?;
                        let why = self.why_left_out(ri, k);
                        let ratio = base
                            .filter(|b| *b != 0.0 && why.is_none())
                            .map(|b| s.mean / b);
                        Some(json!({
                            "run": r.meta.id,
                            "mean": finite(s.mean),
                            "ci95": ci_of(s),
                            "n": s.n,
                            "ratio_to_first": ratio.and_then(finite),
                            "left_out": why.map(|w| w.reason()),
                        }))
                    })
                    .collect();
                let levels: serde_json::Map<String, serde_json::Value> = self
                    .factors
                    .iter()
                    .zip(levels)
                    .map(|(f, l)| (f.clone(), l.clone().into()))
                    .collect();
                json!({ "levels": levels, "runs": per_run })
            })
            .collect();
        json!({
            "metric": self.key,
            "baseline_run": runs.first().map(|(r, _)| r.meta.id),
            "runs": runs.iter().map(|(r, _)| json!({
                "run": r.meta.id,
                "kind": r.meta.kind,
                "host": r.meta.host.hostname,
                "started_at": r.meta.started_at,
            })).collect::<Vec<_>>(),
            "factors": self.factors,
            "differences": self.differences,
            "rows": rows,
        })
    }
}

/// A finite number, or `None` (JSON has no NaN or infinity).
fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
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
    if let Some(note) = small_sample_note(table) {
        out += &format!("{note}\n");
    }
    for l in cmp.left_out_lines(runs) {
        out += &format!("{l}\n");
    }
    out
}
