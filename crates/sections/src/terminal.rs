//! A run for the terminal: the results table with mean ± 95% CI, the run
//! header above it, and the lines that warn about failed trials, lost probe
//! records and hypervisor steal, and name the measures the validity rules
//! left out. The run report shows the same warnings.

use crate::metrics::{metric_column, small_sample_note, table_metrics, trials_cell};
use analysis::validity::LeftOut;
use analysis::PointSummary;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use record::{RunMeta, TestKind, TrialParams};

/// A factor's value as text for the table.
fn param_text(p: &TrialParams, name: &str) -> String {
    p.value(name).map_or_else(|| "—".into(), |v| v.table_text())
}

/// The results table: one row per point, the varying factors first, then
/// the same metric columns as the run report's table (`metrics::
/// metric_column`: one unit per metric, one prefix per column, the digits
/// of `report::format`); a measure in `left_out` (computed over `points`,
/// see `analysis::validity::left_out`) shows its reason in place of the
/// number ("invalid: above the 1.0 Gbit/s line rate", "n/a: 8 datagrams").
/// When a cell carries the small-sample mark, its footnote follows the
/// table.
pub fn table(
    test: TestKind,
    points: &[PointSummary],
    varying: &[String],
    left_out: &[LeftOut],
) -> String {
    let metrics = table_metrics(test);
    let cols: Vec<(String, Vec<String>)> = metrics
        .iter()
        .filter_map(|m| metric_column(points, m, left_out))
        .collect();
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    let mut header: Vec<String> = varying.to_vec();
    header.push("n".into());
    header.extend(cols.iter().map(|c| c.0.clone()));
    t.set_header(header);
    for (i, p) in points.iter().enumerate() {
        let mut row: Vec<Cell> = varying
            .iter()
            .map(|k| Cell::new(param_text(&p.params, k)))
            .collect();
        row.push(Cell::new(trials_cell(p)));
        for c in &cols {
            row.push(Cell::new(&c.1[i]).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    let mut text = t.to_string();
    if let Some(note) = small_sample_note(points, &metrics) {
        text = format!("{text}\n{note}");
    }
    text
}

/// Factors that vary across a stored run's points, by name.
pub fn varying_factors(points: &[PointSummary]) -> Vec<String> {
    record::factor::varying_keys(points.iter().map(|p| &p.params))
        .into_iter()
        .map(String::from)
        .collect()
}

/// A header of run facts above the table.
pub fn run_header(m: &RunMeta) -> String {
    format!(
        "run {} · {} · {} · {} · seed {} · {}\nhost {} · {} · {} cores · kernel {} · cc {}",
        m.id,
        m.kind,
        m.status.as_str(),
        m.place,
        m.seed,
        m.started_at,
        m.host.hostname,
        m.host.cpu_model,
        m.host.cores,
        m.host.kernel.split_whitespace().next().unwrap_or(""),
        m.host.congestion_control
    )
}

/// Failure reasons per point, for the lines under the table.
pub fn failure_lines(points: &[PointSummary], varying: &[String]) -> Vec<String> {
    points
        .iter()
        .filter(|p| p.trials_failed > 0)
        .map(|p| {
            let label: Vec<String> = varying
                .iter()
                .map(|k| format!("{k}={}", param_text(&p.params, k)))
                .collect();
            format!(
                "point {} {}: {} failed: {}",
                p.index,
                label.join(" "),
                p.trials_failed,
                p.failures.join("; ")
            )
        })
        .collect()
}

/// One line per measure the table leaves out, with the whole reason:
/// "Throughput of point 2 (write_size=256K) is left out: n/a: …".
pub fn left_out_lines(
    points: &[PointSummary],
    varying: &[String],
    left_out: &[LeftOut],
) -> Vec<String> {
    crate::left_out::left_out_lines(points, varying, left_out, |_| true)
}

/// The lines under the table for the points that missed their
/// `--precision` target, each after the mark their cell carries.
pub fn precision_lines(points: &[PointSummary], varying: &[String]) -> Vec<String> {
    crate::precision::missed_lines(points, varying)
        .into_iter()
        .map(|l| {
            format!(
                "{} precision target missed: {l}",
                crate::precision::MISSED_MARK
            )
        })
        .collect()
}

/// A warning when probes lost records in any trial.
pub fn probe_loss_warning(points: &[PointSummary]) -> Option<String> {
    let lost: f64 = points
        .iter()
        .filter_map(|p| p.metrics.get("probe_lost"))
        .map(|s| s.mean * s.n as f64)
        .sum();
    (lost > 0.0).then(|| {
        format!(
            "warning: the probes lost {lost:.0} records (probe_lost; see `tcplab probes`): their queue and packet figures are incomplete"
        )
    })
}

/// A warning when the hypervisor took a noticeable share of CPU time during
/// the trials (on a virtual machine): timing-sensitive results are then low.
pub fn steal_warning(points: &[PointSummary]) -> Option<String> {
    let worst = points
        .iter()
        .filter_map(|p| p.metrics.get("host_steal_fraction"))
        .map(|s| s.mean)
        .fold(0.0, f64::max);
    (worst > 0.05).then(|| {
        format!(
            "warning: the hypervisor took up to {:.0}% of this machine's CPU time during the trials (host_steal_fraction); throughput and latency are disturbed",
            worst * 100.0
        )
    })
}
