//! `tcplab report` and `tcplab compare`: stored runs as self-contained HTML
//! reports (built here from the analysis crate's numbers, rendered by the
//! `report` crate) and as side-by-side terminal tables.

use crate::cli::{CompareArgs, ReportArgs};
use crate::commands::resolve;
use crate::cpu_report::trial_cpu;
use crate::output;
use crate::usage::usage;
use analysis::findings::{differ, shape, shape_sentence, size_words, CurvePoint};
use analysis::layers::Layer;
use analysis::path::{analyse, PathAnalysis, BINS, BIN_US};
use analysis::PointSummary;
use record::factor::{factor_info, param_keys_by_name, FactorKind, Level};
use record::{Store, StoredRun, TestKind, ThreadRole, TrialParams, TrialRecord, TrialStatus};
use report::doc::{host_facts, host_sysctls};
use report::format::{bytes_short, column, compact, number, scale_for_values};
use report::{
    measure, Block, DataFile, Figure, Histogram, Point, Report, ReportError, Section, Series,
    SeriesStyle, StackedBars, Table, TickFormat, Unit,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A metric shown in tables and figures.
#[derive(Debug, Clone, Copy)]
struct Metric {
    key: &'static str,
    name: &'static str,
    unit: Unit,
}

const fn metric(key: &'static str, name: &'static str, unit: Unit) -> Metric {
    Metric { key, name, unit }
}

const THROUGHPUT: Metric = metric("throughput_bps", "throughput", Unit::Si("bit/s"));
const BYTES_PER_CPU: Metric = metric(
    "bytes_per_cpu_s",
    "bytes per CPU second",
    Unit::Si("B/CPU-s"),
);
const TPS: Metric = metric("transactions_per_s", "transactions/s", Unit::Plain);
const P50: Metric = metric("latency_p50_s", "p50 latency", Unit::Si("s"));
const P99: Metric = metric("latency_p99_s", "p99 latency", Unit::Si("s"));
const LOSS: Metric = metric("loss_rate", "loss", Unit::Percent);
const PACKETS: Metric = metric("packets_per_s", "packets per second", Unit::Plain);

/// The table's metrics for a test.
fn table_metrics(test: TestKind) -> Vec<Metric> {
    if test.is_transactional() {
        return vec![
            TPS,
            P50,
            P99,
            metric(
                "cpu_sender_us_per_transaction",
                "client CPU/trans",
                Unit::Fixed("µs"),
            ),
            metric(
                "cpu_receiver_us_per_transaction",
                "server CPU/trans",
                Unit::Fixed("µs"),
            ),
        ];
    }
    if test == TestKind::LayerRate {
        return vec![
            PACKETS,
            metric("throughput_bps", "frame throughput", Unit::Si("bit/s")),
            metric("payload_bps", "payload throughput", Unit::Si("bit/s")),
            LOSS,
            metric(
                "cpu_sender_us_per_packet",
                "sender CPU/packet",
                Unit::Fixed("µs"),
            ),
        ];
    }
    let mut v = vec![THROUGHPUT];
    if test == TestKind::UdpStream {
        v.push(LOSS);
        v.push(metric("jitter_s", "jitter", Unit::Si("s")));
    }
    v.extend([
        BYTES_PER_CPU,
        metric(
            "service_demand_sender_us_per_kb",
            "sender CPU",
            Unit::Fixed("µs/KB"),
        ),
        metric(
            "service_demand_receiver_us_per_kb",
            "receiver CPU",
            Unit::Fixed("µs/KB"),
        ),
    ]);
    if test == TestKind::TcpStream {
        v.push(metric("retransmits", "retransmits", Unit::Plain));
    }
    v
}

/// The figures for a test: (what, metrics drawn together).
fn figure_groups(test: TestKind) -> Vec<(&'static str, Vec<Metric>)> {
    let mut v = if test.is_transactional() {
        vec![
            ("Transactions per second", vec![TPS]),
            ("Latency", vec![P50, P99]),
        ]
    } else if test == TestKind::LayerRate {
        vec![
            ("Packets per second", vec![PACKETS]),
            ("Throughput", vec![THROUGHPUT]),
        ]
    } else {
        vec![("Throughput", vec![THROUGHPUT])]
    };
    if test == TestKind::UdpStream {
        v.push(("Loss", vec![LOSS]));
    }
    v.push(("Bytes per CPU second", vec![BYTES_PER_CPU]));
    v
}

/// True if factor `f` takes byte sizes.
fn is_size(f: &str) -> bool {
    factor_info(f).is_some_and(|i| i.kind.is_bytes())
}

/// A factor's name for axes and headers, with its unit.
fn factor_label(f: &str) -> String {
    factor_info(f).map_or_else(|| f.replace('_', " "), |i| i.label.to_string())
}

/// A factor's value as text.
fn factor_text(params: &TrialParams, f: &str) -> String {
    let Some(v) = params.value(f) else {
        return "—".into();
    };
    match &v.level {
        Level::Auto(_) => "auto".into(),
        Level::Unset => "—".into(),
        Level::Switch(b) => if *b { "on" } else { "off" }.into(),
        Level::Int(_) | Level::Float(_) => {
            let x = v.number().unwrap_or(f64::NAN);
            match v.kind {
                FactorKind::Bytes => bytes_short(x),
                FactorKind::Rate => number(x, Unit::Si("bit/s")),
                FactorKind::NanosPerKb => number(x * 1e-9, Unit::Si("s")) + "/KB",
                _ => v.json().to_string(),
            }
        }
        Level::Name(s) => s.clone(),
        Level::Load(_) | Level::HostSpeed(_) | Level::Pin(_) => v
            .fields()
            .unwrap_or_default()
            .iter()
            .map(|x| x.as_str().map_or(x.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

fn factor_number(params: &TrialParams, f: &str) -> Option<f64> {
    params.value(f).and_then(|v| v.number())
}

/// `write_size=64K, api=write` for the given factors.
fn point_label(p: &PointSummary, factors: &[String]) -> String {
    factors
        .iter()
        .map(|f| format!("{f}={}", factor_text(&p.params, f)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ci_of(s: &analysis::Summary) -> Option<f64> {
    (s.n >= 2 && s.ci95.is_finite()).then_some(s.ci95)
}

fn test_of(points: &[PointSummary]) -> TestKind {
    points
        .first()
        .map(|p| p.params.test)
        .unwrap_or(TestKind::TcpStream)
}

/// The report's output path must be a file in an existing directory.
fn check_out(out: &Path) -> anyhow::Result<()> {
    if out.is_dir() {
        return Err(usage(format!(
            "{} is a directory: give --out a file name such as {}/report.html",
            out.display(),
            out.display()
        )));
    }
    if out.file_stem().is_none_or(|s| s.is_empty()) {
        return Err(usage(format!("{}: no file name to write", out.display())));
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(usage(format!(
            "cannot write {}: directory {} does not exist",
            out.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Writes the report; a path that cannot be written is bad input.
fn write(rep: &Report, out: &Path, data: Vec<DataFile>) -> anyhow::Result<report::Written> {
    report::write_report(rep, out, data).map_err(|e| match e {
        ReportError::Write { .. } | ReportError::BadOutPath(_) | ReportError::BadDataName(_) => {
            usage(e)
        }
        other => anyhow::Error::new(other),
    })
}

fn print_written(rep: &Report, w: &report::Written) {
    print!("{}", report::summary_text(rep));
    println!();
    println!("report: {}", w.html.display());
    for d in &w.data {
        println!("data:   {}", d.display());
    }
}

/// Runs `tcplab report`.
pub fn report(store: Store, a: ReportArgs) -> anyhow::Result<ExitCode> {
    let id = resolve(&store, &a.run)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("tcplab-run-{id}.html")));
    check_out(&out)?;
    if crate::study_report::is_study_run(&store, id)? {
        // A study run gets its study's report, with the other hosts
        // imported since it ran.
        crate::study_report::write(&store, id, &[], &out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let run = store.load_run(id)?;
    let points = analysis::summarize_run(&run);
    let rep = run_report(&store, &run, &points)?;

    let mut csv = Vec::new();
    record::export::trials_csv(&run, &mut csv)?;
    let mut json = serde_json::to_vec_pretty(&output::run_json(&run, &points, true))?;
    json.push(b'\n');
    let data = vec![
        DataFile::new(
            "csv",
            "one row per trial: parameters and every metric (as `tcplab export --format csv`)",
            csv,
        ),
        DataFile::new(
            "json",
            "the run, per-point summaries and every trial with its details (as `tcplab export --format json`)",
            json,
        ),
    ];
    let w = write(&rep, &out, data)?;
    print_written(&rep, &w);
    Ok(ExitCode::SUCCESS)
}

/// The whole report of one run.
fn run_report(store: &Store, run: &StoredRun, points: &[PointSummary]) -> anyhow::Result<Report> {
    let m = &run.meta;
    let mut rep = Report::new(format!("tcplab run {}: {}", m.id, m.kind)).with_subtitle(format!(
        "{} · {} · started {} · host {} ({}, {} cores, kernel {})",
        m.status.as_str(),
        m.place,
        m.started_at,
        m.host.hostname,
        m.host.cpu_model,
        m.host.cores,
        m.host.kernel.split_whitespace().next().unwrap_or("")
    ));
    let varying = output::varying_factors(points);
    rep.push(results_section(points, &varying));
    rep.push(figures_section(points, &varying));
    for s in probe_sections(store, run, points, &varying)? {
        rep.push(s);
    }
    rep.push(parameters_section(run, points, &varying));
    rep.push(host_section(store, run));
    Ok(rep)
}

fn host_section(store: &Store, run: &StoredRun) -> Section {
    let h = &run.meta.host;
    let mut s = Section::new("Host");
    s.paragraph("Facts about the measuring host, read at the start of the run.");
    s.push(host_facts(h));
    for b in host_profile_blocks(store, run) {
        s.push(b);
    }
    if !h.sysctls.is_empty() {
        s.push(host_sysctls(h));
    }
    s
}

/// The host profile the run references (`tcplab calibrate`), as a table.
fn host_profile_blocks(store: &Store, run: &StoredRun) -> Vec<Block> {
    match store.run_host_profile(run.meta.id) {
        Ok(Some((id, p))) => vec![Block::Table(
            crate::calibrate_cmd::profile_table(&p).with_caption(format!(
                "Host profile {id} (tcplab calibrate, {})",
                p.created_at
            )),
        )],
        _ => vec![Block::Paragraph(
            "No host profile: run tcplab calibrate before measuring to record this host's \
             copy, checksum, system call and context switch costs."
                .into(),
        )],
    }
}

fn parameters_section(run: &StoredRun, points: &[PointSummary], varying: &[String]) -> Section {
    let m = &run.meta;
    let st = &m.settings;
    let mut s = Section::new("Parameters");
    let mut kv = vec![
        ("command".to_string(), m.command.clone()),
        ("test".to_string(), m.kind.clone()),
        ("place".to_string(), m.place.clone()),
        ("status".to_string(), m.status.as_str().to_string()),
        ("started".to_string(), m.started_at.clone()),
        (
            "finished".to_string(),
            m.finished_at.clone().unwrap_or_else(|| "—".into()),
        ),
        ("seed".to_string(), m.seed.to_string()),
        ("tcplab".to_string(), m.tool_version.clone()),
        ("points".to_string(), points.len().to_string()),
        (
            "trials".to_string(),
            format!(
                "{} measured, {} failed",
                points.iter().map(|p| p.trials_ok).sum::<u32>(),
                points.iter().map(|p| p.trials_failed).sum::<u32>()
            ),
        ),
    ];
    for k in ["repeat", "precision", "max_repeat", "to"] {
        if let Some(v) = st.get(k).filter(|v| !v.is_null()) {
            kv.push((
                k.replace('_', " "),
                v.as_str().map_or(v.to_string(), str::to_string),
            ));
        }
    }
    s.push(Block::KeyValues(kv));
    // Every factor of the points: its level, or its levels when it varies.
    if !points.is_empty() {
        let mut t = Table::new(["factor", "level(s)"])
            .with_caption("Factors of the sweep (varying ones first)");
        t.numeric = vec![false, false];
        let mut keys: Vec<String> = param_keys_by_name().into_iter().map(String::from).collect();
        keys.sort_by_key(|k| !varying.contains(k));
        for k in &keys {
            let mut levels: Vec<String> = Vec::new();
            for p in points {
                let v = factor_text(&p.params, k);
                if !levels.contains(&v) {
                    levels.push(v);
                }
            }
            let text = if varying.contains(k) {
                format!("{} (varies)", levels.join(", "))
            } else {
                levels.join(", ")
            };
            t.row([k.clone(), text]);
        }
        s.push(t);
    }
    s
}

/// One table column per metric: the unit text and the cells.
fn metric_column(points: &[PointSummary], m: &Metric) -> Option<(String, Vec<String>)> {
    let vals: Vec<(f64, Option<f64>)> = points
        .iter()
        .map(|p| {
            p.metrics
                .get(m.key)
                .map_or((f64::NAN, None), |s| (s.mean, ci_of(s)))
        })
        .collect();
    if vals.iter().all(|v| !v.0.is_finite()) {
        return None;
    }
    let (u, mut cells) = column(&vals, m.unit);
    for (c, p) in cells.iter_mut().zip(points) {
        if p.trials_ok == 0 {
            *c = "failed".into();
        }
    }
    let header = if u.is_empty() {
        m.name.to_string()
    } else {
        format!("{} ({u})", m.name)
    };
    Some((header, cells))
}

fn results_section(points: &[PointSummary], varying: &[String]) -> Section {
    let test = test_of(points);
    let mut s = Section::new("Results");
    s.paragraph(
        "One row per point of the sweep: each metric's mean over the point's successful trials \
         ± the half-width of its 95% confidence interval (Student's t, n − 1 degrees of freedom); \
         n counts the trials that measured. A single trial has no interval.",
    );
    let factors: Vec<String> = if varying.is_empty() {
        vec!["point".into()]
    } else {
        varying.to_vec()
    };
    let cols: Vec<(String, Vec<String>)> = table_metrics(test)
        .iter()
        .filter_map(|m| metric_column(points, m))
        .collect();
    let mut header: Vec<String> = factors.clone();
    header.push("n".into());
    header.extend(cols.iter().map(|c| c.0.clone()));
    let mut t = Table::new(header)
        .with_caption(format!("{}: mean ± 95% CI per point", test.name()))
        .key();
    t.numeric = factors
        .iter()
        .map(|f| points.iter().all(|p| factor_number(&p.params, f).is_some()))
        .collect();
    t.numeric.push(true);
    t.numeric.extend(cols.iter().map(|_| true));
    for (i, p) in points.iter().enumerate() {
        let mut row: Vec<String> = if varying.is_empty() {
            vec![p.index.to_string()]
        } else {
            varying.iter().map(|f| factor_text(&p.params, f)).collect()
        };
        row.push(if p.trials_failed > 0 {
            format!("{} ({} failed)", p.trials_ok, p.trials_failed)
        } else {
            p.trials_ok.to_string()
        });
        row.extend(cols.iter().map(|c| c.1[i].clone()));
        t.row(row);
    }
    s.push(t);
    if let Some(w) = output::steal_warning(points) {
        s.warning(w.trim_start_matches("warning: "));
    }
    if let Some(w) = output::probe_loss_warning(points) {
        s.warning(w.trim_start_matches("warning: "));
    }
    for l in output::failure_lines(points, varying).into_iter().take(10) {
        s.warning(l);
    }
    s
}

/// A numeric factor's levels per point (None where a point has no number).
fn numeric_factor(points: &[PointSummary], f: &str) -> Option<Vec<Option<f64>>> {
    let xs: Vec<Option<f64>> = points.iter().map(|p| factor_number(&p.params, f)).collect();
    let mut distinct: Vec<f64> = xs.iter().flatten().copied().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    (distinct.len() >= 2).then_some(xs)
}

fn fmt_level(f: &str, v: f64) -> String {
    match factor_info(f).map(|i| i.kind) {
        Some(FactorKind::Bytes) => size_words(v),
        Some(FactorKind::Rate) => number(v, Unit::Si("bit/s")),
        _ => compact(v),
    }
}

/// One figure: metrics of `group` against factor `f`, one series per
/// combination of the other varying factors (and per metric when several).
/// Returns the figure and the finding sentences of its curves.
fn factor_figure(
    points: &[PointSummary],
    varying: &[String],
    f: &str,
    xs: &[Option<f64>],
    title: &str,
    group: &[Metric],
) -> Option<(Figure, Vec<String>)> {
    let others: Vec<String> = varying.iter().filter(|v| *v != f).cloned().collect();
    let unit = group[0].unit;
    let (scale, u) = scale_for_values(
        group
            .iter()
            .flat_map(|m| points.iter().filter_map(|p| p.metrics.get(m.key)))
            .map(|s| s.mean),
        unit,
    );
    let mut series: Vec<(String, Vec<Point>, Vec<CurvePoint>)> = Vec::new();
    for m in group {
        for (p, x) in points.iter().zip(xs) {
            let (Some(x), Some(sm)) = (x, p.metrics.get(m.key)) else {
                continue;
            };
            let combo = point_label(p, &others);
            let name = match (group.len() > 1, combo.is_empty()) {
                (true, true) => m.name.to_string(),
                (true, false) => format!("{} · {combo}", m.name),
                (false, true) => m.name.to_string(),
                (false, false) => combo,
            };
            let ci = ci_of(sm).unwrap_or(0.0);
            let idx = match series.iter().position(|s| s.0 == name) {
                Some(i) => i,
                None => {
                    series.push((name, Vec::new(), Vec::new()));
                    series.len() - 1
                }
            };
            series[idx]
                .1
                .push(Point::with_ci(*x, sm.mean * scale, ci * scale));
            series[idx].2.push(CurvePoint {
                x: *x,
                mean: sm.mean,
                ci,
            });
        }
    }
    if series.iter().all(|s| s.1.is_empty()) {
        return None;
    }
    let all_x: Vec<f64> = xs.iter().flatten().copied().collect();
    let (lo, hi) = all_x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let what = group
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(" and ");
    let y_label = if u.is_empty() {
        what.clone()
    } else {
        format!("{what} ({u})")
    };
    let mut fig = Figure::new(
        format!("{title} against {}", f.replace('_', " ")),
        factor_label(f),
        y_label,
    );
    fig.log_x = lo > 0.0 && hi / lo > 30.0;
    fig.x_ticks = if is_size(f) {
        TickFormat::Bytes
    } else {
        TickFormat::Number
    };
    let mut findings = Vec::new();
    let describe = series.len() <= 4;
    for (name, pts, curve) in series {
        if describe {
            let sh = shape(&curve);
            let label = if name == what || name.is_empty() {
                capitalize(&what)
            } else if group.len() > 1 {
                capitalize(&name)
            } else {
                format!("{} ({name})", capitalize(&what))
            };
            findings.push(shape_sentence(&label, &f.replace('_', " "), &sh, &|v| {
                fmt_level(f, v)
            }));
        }
        fig.series.push(Series::new(name, pts));
    }
    fig.caption = Some(format!(
        "Means over each point's trials; error bars: 95% CI (Student's t).{}",
        if fig.log_x {
            " Logarithmic x axis."
        } else {
            ""
        }
    ));
    Some((fig, findings))
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn figures_section(points: &[PointSummary], varying: &[String]) -> Section {
    let test = test_of(points);
    let mut s = Section::new("Figures");
    let numeric: Vec<(String, Vec<Option<f64>>)> = varying
        .iter()
        .filter_map(|f| numeric_factor(points, f).map(|xs| (f.clone(), xs)))
        .collect();
    if points.len() < 2 {
        s.paragraph("The run has one point: there is no curve to draw; see the table above.");
        return s;
    }
    if numeric.is_empty() {
        // Only categorical factors vary: one bar per point.
        let labels: Vec<(f64, String)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, point_label(p, varying)))
            .collect();
        for (title, group) in figure_groups(test) {
            let m = group[0];
            let (scale, u) = scale_for_values(
                points
                    .iter()
                    .filter_map(|p| p.metrics.get(m.key))
                    .map(|x| x.mean),
                m.unit,
            );
            let pts: Vec<Point> = points
                .iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    p.metrics.get(m.key).map(|sm| {
                        Point::with_ci(i as f64, sm.mean * scale, ci_of(sm).unwrap_or(0.0) * scale)
                    })
                })
                .collect();
            if pts.is_empty() {
                continue;
            }
            let y = if u.is_empty() {
                m.name.to_string()
            } else {
                format!("{} ({u})", m.name)
            };
            let mut fig = Figure::new(format!("{title} per point"), "point", y);
            fig.x_ticks = TickFormat::Labels(labels.clone());
            fig.series
                .push(Series::new(m.name, pts).with_style(SeriesStyle::Bars));
            fig.caption = Some("Means; error bars: 95% CI (Student's t).".into());
            s.push(fig);
        }
        return s;
    }
    for (f, xs) in &numeric {
        for (title, group) in figure_groups(test) {
            if let Some((fig, findings)) = factor_figure(points, varying, f, xs, title, &group) {
                s.push(fig);
                for t in findings {
                    s.finding(t);
                }
            }
        }
    }
    s
}

/// The trial of `trials` whose primary metric is closest to `mean`.
fn closest<'a>(
    trials: &[&'a TrialRecord],
    key: &str,
    mean: Option<f64>,
) -> Option<&'a TrialRecord> {
    let v = |t: &TrialRecord| t.outcome.metrics.get(key).copied().unwrap_or(f64::NAN);
    match mean {
        Some(m) => trials
            .iter()
            .min_by(|a, b| (v(a) - m).abs().total_cmp(&(v(b) - m).abs()))
            .copied(),
        None => trials.first().copied(),
    }
}

/// The probe and CPU sections, when the run has probed trials.
fn probe_sections(
    store: &Store,
    run: &StoredRun,
    points: &[PointSummary],
    varying: &[String],
) -> anyhow::Result<Vec<Section>> {
    let test = test_of(points);
    let key = test.primary_metric();
    let ok: Vec<&TrialRecord> = run
        .trials
        .iter()
        .filter(|t| t.status == TrialStatus::Ok)
        .collect();
    let mut with_events: Vec<(&TrialRecord, record::EventBlob)> = Vec::new();
    let mut with_profile: Vec<(&TrialRecord, record::CpuProfile)> = Vec::new();
    for t in &ok {
        if let Some(b) = store.load_events(t.id)? {
            if b.version == record::probe_event::EVENT_VERSION {
                with_events.push((t, b));
            }
        }
        if let Some(p) = store.load_profile(t.id)? {
            with_profile.push((t, p));
        }
    }
    let mut out = Vec::new();
    let label_of = |t: &TrialRecord| {
        points
            .iter()
            .find(|p| p.point_id == t.point_id)
            .map(|p| point_label(p, varying))
            .unwrap_or_default()
    };
    let mean_of = |t: &TrialRecord| {
        points
            .iter()
            .find(|p| p.point_id == t.point_id)
            .and_then(|p| p.metrics.get(key))
            .map(|s| s.mean)
    };
    if !with_events.is_empty() {
        // The representative trial: in the first probed point (plan order),
        // the trial closest to that point's mean.
        let first_point = points
            .iter()
            .find(|p| with_events.iter().any(|(t, _)| t.point_id == p.point_id));
        let pid = first_point.map_or(with_events[0].0.point_id, |p| p.point_id);
        let cands: Vec<&TrialRecord> = with_events
            .iter()
            .filter(|(t, _)| t.point_id == pid)
            .map(|(t, _)| *t)
            .collect();
        let rep = closest(&cands, key, mean_of(cands[0])).unwrap_or(cands[0]);
        let blob = &with_events
            .iter()
            .find(|(t, _)| t.id == rep.id)
            .map(|(_, b)| b)
            .unwrap_or(&with_events[0].1);
        let events = record::probe_event::decode_all(&blob.data);
        let an = analyse(&events);
        out.push(path_section(
            run.meta.id,
            rep,
            &label_of(rep),
            &an,
            with_events.len(),
        ));
    }
    if !with_profile.is_empty() {
        out.push(cpu_section(run, points, varying, &with_profile, key));
    }
    Ok(out)
}

fn path_section(
    run_id: i64,
    t: &TrialRecord,
    label: &str,
    an: &PathAnalysis,
    probed: usize,
) -> Section {
    let mut s = Section::new("Probes: the path of one trial");
    s.paragraph(format!(
        "{probed} trial(s) of this run were probed. Shown here: trial {} ({}), the trial closest to its point's mean — {} records over {:.3} s. `tcplab probes {run_id}` lists every probed trial; `--json` gives the full analysis.",
        t.seq,
        if label.is_empty() { "the only point".to_string() } else { label.to_string() },
        an.records,
        an.span_s,
    ));
    // Findings go under the figure they read: idle time under the
    // time-sequence plot, the slowest hop under the delay histogram.
    let idle_findings: Vec<String> = an
        .threads
        .iter()
        .filter(|th| th.span_s > 0.0)
        .map(|th| {
            format!(
                "The {} thread was blocked (idle) {:.1}% of its {:.1} ms in trial {}.",
                th.role,
                th.idle_fraction * 100.0,
                th.span_s * 1e3,
                t.seq
            )
        })
        .collect();
    let hop_finding = an
        .hops
        .iter()
        .filter(|h| h.n > 0)
        .max_by(|a, b| a.p50_us.total_cmp(&b.p50_us))
        .map(|h| {
            format!(
                "The slowest hop at the median is the {}: p50 {:.1} µs, p99 {:.1} µs over {} packets.",
                h.hop.split(':').next().unwrap_or(&h.hop),
                h.p50_us,
                h.p99_us,
                h.n
            )
        });
    let lost = t.outcome.metrics.get("probe_lost").copied().unwrap_or(0.0);
    if lost > 0.0 {
        s.warning(format!(
            "the probes lost {lost:.0} records in this trial: its figures are incomplete"
        ));
    }
    // Time–sequence: the direction with the most data.
    if let Some(ts) = an.time_sequence.iter().max_by_key(|ts| ts.data.len()) {
        if !ts.data.is_empty() {
            let ymax = ts
                .data
                .iter()
                .chain(&ts.acked)
                .chain(&ts.window_edge)
                .map(|p| p.1)
                .fold(0.0, f64::max);
            let (yf, yu) = Unit::Si("B").scale_for(ymax);
            let pts = |v: &[(f64, f64)]| -> Vec<Point> {
                v.iter()
                    .map(|&(x, y)| Point::new(x * 1e3, y * yf))
                    .collect()
            };
            let mut fig = Figure::new(
                format!("Time–sequence of flow {}", ts.flow),
                "time since the first record (ms)",
                format!("stream position ({yu})"),
            );
            fig.series.push(
                Series::new("data sent (end of segment, net_dev_queue)", pts(&ts.data))
                    .with_style(SeriesStyle::Points),
            );
            if !ts.acked.is_empty() {
                fig.series.push(
                    Series::new("acknowledged (tcp_probe)", pts(&ts.acked))
                        .with_style(SeriesStyle::Path),
                );
            }
            if !ts.window_edge.is_empty() {
                fig.series.push(
                    Series::new("offered window edge (ack + window)", pts(&ts.window_edge))
                        .with_style(SeriesStyle::Path),
                );
            }
            fig.caption = Some(
                "Abrams & Chen Fig. 5 / Guerrero & Frieder Fig. 8: sequence numbers against time. \
                 The gap between data and window edge is the window the sender still had."
                    .into(),
            );
            s.push(fig);
        }
    }
    for f in idle_findings {
        s.finding(f);
    }
    // Per-hop delays.
    let hops: Vec<_> = an.hops.iter().filter(|h| h.n > 0).collect();
    if !hops.is_empty() {
        let mut h = Histogram {
            title: "Per-hop delay histogram".into(),
            caption: Some(format!(
                "Share of each hop's packets per {BIN_US:.0} µs bin (the SunOS IPC study's bins); the last bin holds everything beyond {:.0} µs.",
                BIN_US * BINS as f64
            )),
            x_label: "delay (µs)".into(),
            y_label: "share of the hop's packets (%)".into(),
            edges: (0..=BINS).map(|i| i as f64 * BIN_US).collect(),
            overflow: true,
            series: Vec::new(),
        };
        for hp in &hops {
            let n: u64 = hp.histogram.iter().sum();
            if n == 0 {
                continue;
            }
            h.series.push((
                hp.hop.clone(),
                hp.histogram
                    .iter()
                    .map(|&c| c as f64 / n as f64 * 100.0)
                    .collect(),
            ));
        }
        s.push(h);
        if let Some(f) = hop_finding {
            s.finding(f);
        }
        let mut t = Table::new(["hop", "n", "p50 µs", "p90 µs", "p99 µs", "max µs"])
            .with_caption("Delay of each hop along the path");
        for hp in &hops {
            t.row([
                hp.hop.clone(),
                hp.n.to_string(),
                format!("{:.1}", hp.p50_us),
                format!("{:.1}", hp.p90_us),
                format!("{:.1}", hp.p99_us),
                format!("{:.1}", hp.max_us),
            ]);
        }
        s.push(t);
    }
    if !an.packets.is_empty() {
        let mut t = Table::new([
            "flow",
            "data segments",
            "avg bytes",
            "largest",
            "ACKs",
            "window updates",
            "control",
            "small with more queued",
        ])
        .with_caption("Packets per direction at net_dev_queue");
        for p in &an.packets {
            t.row([
                p.flow.clone(),
                p.data.to_string(),
                if p.data > 0 {
                    format!("{:.0}", p.data_bytes as f64 / p.data as f64)
                } else {
                    "—".into()
                },
                p.largest_segment.to_string(),
                p.acks.to_string(),
                p.window_updates.to_string(),
                p.control.to_string(),
                p.small_with_more_queued.to_string(),
            ]);
        }
        s.push(t);
    }
    if !an.threads.is_empty() {
        let mut t = Table::new(["thread", "span s", "blocked (idle) %", "preempted %"])
            .with_caption("Idle time from sched_switch (Abrams & Chen §3.3)");
        for th in &an.threads {
            t.row([
                format!("{} {}", th.role, th.tid),
                format!("{:.3}", th.span_s),
                format!("{:.1}", th.idle_fraction * 100.0),
                format!(
                    "{:.1}",
                    if th.span_s > 0.0 {
                        th.preempted_s / th.span_s * 100.0
                    } else {
                        0.0
                    }
                ),
            ]);
        }
        s.push(t);
    }
    s
}

fn cpu_section(
    run: &StoredRun,
    points: &[PointSummary],
    varying: &[String],
    profiled: &[(&TrialRecord, record::CpuProfile)],
    key: &str,
) -> Section {
    let mut s = Section::new("CPU: where the time went");
    s.paragraph(
        "From the CPU samples (--probe cpu): for each point, the trial closest to the point's mean; \
         the sender's and the receiver's CPU time split by layer (Cai et al.'s categories; a stack \
         counts in the layer of its innermost known function). `tcplab probes RUN` gives the \
         function blocks and top functions.",
    );
    let mut bars: Vec<(String, Vec<f64>)> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    let mut costs = Table::new([
        "point",
        "side",
        "engine CPU s",
        "sampled CPU s",
        "sampled/engine",
        "µs per segment",
        "µs per KB",
    ])
    .with_caption(
        "CPU cost per side: the engine's per-thread CPU time and what the samples account for",
    );
    for p in points {
        let trials: Vec<&TrialRecord> = profiled
            .iter()
            .filter(|(t, _)| t.point_id == p.point_id)
            .map(|(t, _)| *t)
            .collect();
        let Some(t) = closest(&trials, key, p.metrics.get(key).map(|x| x.mean)) else {
            continue;
        };
        let Some((_, prof)) = profiled.iter().find(|(x, _)| x.id == t.id) else {
            continue;
        };
        let tc = trial_cpu(t, &run.points, prof);
        let label = point_label(p, varying);
        for role in [ThreadRole::Sender, ThreadRole::Receiver] {
            let Some(r) = tc.attribution.role(role) else {
                continue;
            };
            if r.cpu_s <= 0.0 {
                continue;
            }
            let name = if label.is_empty() {
                role.name().to_string()
            } else {
                format!("{label} · {}", role.name())
            };
            let shares: Vec<f64> = Layer::ALL
                .iter()
                .map(|l| r.layer_s(*l) / r.cpu_s * 100.0)
                .collect();
            if let Some((i, top)) = shares.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) {
                findings.push(format!(
                    "{}{}: most CPU time in {} ({top:.0}%).",
                    capitalize(role.name()),
                    if label.is_empty() {
                        String::new()
                    } else {
                        format!(" at {label}")
                    },
                    Layer::ALL[i].name()
                ));
            }
            bars.push((name, shares));
        }
        for side in &tc.sides {
            costs.row([
                if label.is_empty() {
                    format!("trial {}", t.seq)
                } else {
                    format!("{label} (trial {})", t.seq)
                },
                side.role.name().to_string(),
                format!("{:.4}", side.engine_cpu_s),
                format!("{:.4}", side.attributed_cpu_s),
                format!("{:.2}", side.ratio),
                format!("{:.2}", side.us_per_segment),
                format!("{:.3}", side.us_per_kb),
            ]);
        }
    }
    // Keep the layers that hold time somewhere, in report order.
    let used: Vec<usize> = (0..Layer::ALL.len())
        .filter(|&i| bars.iter().any(|b| b.1[i] > 0.05))
        .collect();
    if !bars.is_empty() {
        s.push(StackedBars {
            title: "CPU time per layer, sender and receiver".into(),
            caption: Some(
                "Each bar is one side's CPU time in one trial (100%), split by kernel layer."
                    .into(),
            ),
            value_label: "share of the side's CPU time (%)".into(),
            categories: used
                .iter()
                .map(|&i| Layer::ALL[i].name().to_string())
                .collect(),
            bars: bars
                .into_iter()
                .map(|(n, v)| (n, used.iter().map(|&i| v[i]).collect()))
                .collect(),
        });
    }
    for f in findings {
        s.finding(f);
    }
    if !costs.rows.is_empty() {
        s.push(costs);
    }
    s
}

/// Runs `tcplab compare`.
pub fn compare(store: Store, a: CompareArgs) -> anyhow::Result<ExitCode> {
    if a.runs.len() < 2 {
        return Err(usage(format!(
            "compare needs at least two runs, got {}",
            a.runs.len()
        )));
    }
    if let Some(out) = &a.out {
        check_out(out)?;
    }
    let mut runs: Vec<(StoredRun, Vec<PointSummary>)> = Vec::new();
    for spec in &a.runs {
        let id = resolve(&store, spec)?;
        let run = store.load_run(id)?;
        let points = analysis::summarize_run(&run);
        runs.push((run, points));
    }
    let test = test_of(&runs[0].1);
    let key = a
        .metric
        .clone()
        .unwrap_or_else(|| test.primary_metric().to_string());
    if !runs
        .iter()
        .any(|(_, p)| p.iter().any(|x| x.metrics.contains_key(&key)))
    {
        return Err(usage(format!("no run has the metric {key:?}")));
    }
    let m = known_metric(&key);
    let cmp = Comparison::new(&runs, &key);
    let table = cmp.table(&runs, m);

    // The terminal: each run's host, then the table.
    for (run, _) in &runs {
        let h = &run.meta.host;
        println!(
            "run {}: {} · {} · {} · {} · host {} ({}, {} cores, kernel {}, cc {})",
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
        println!("{d}");
    }
    println!();
    print!("{}", report::text::table_text(&table));
    println!("{}", COMPARE_NOTE);

    if let Some(out) = &a.out {
        let rep = compare_report(&runs, &cmp, table, m);
        let mut json = serde_json::to_vec_pretty(
            &runs
                .iter()
                .map(|(r, p)| output::run_json(r, p, false))
                .collect::<Vec<_>>(),
        )?;
        json.push(b'\n');
        let data = vec![
            DataFile::new(
                "csv",
                "the comparison: one row per point and run",
                cmp.csv(&runs),
            ),
            DataFile::new("json", "each run with its per-point summaries", json),
        ];
        let w = write(&rep, out, data)?;
        println!();
        println!("report: {}", w.html.display());
        for d in &w.data {
            println!("data:   {}", d.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

const COMPARE_NOTE: &str =
    "mean ± 95% CI half-width; ratio to the first run, * where the intervals do not overlap";

/// A metric by name, with its unit when tcplab knows it.
fn known_metric(key: &str) -> Metric {
    for t in TestKind::ALL {
        if let Some(m) = table_metrics(t).into_iter().find(|m| m.key == key) {
            return m;
        }
    }
    let unit = if key.ends_with("_bps") {
        Unit::Si("bit/s")
    } else if key.ends_with("_s") {
        Unit::Si("s")
    } else {
        Unit::Plain
    };
    // The name outlives the command; leaking one short string is fine.
    Metric {
        key: Box::leak(key.to_string().into_boxed_str()),
        name: Box::leak(key.replace('_', " ").into_boxed_str()),
        unit,
    }
}

/// Runs lined up point by point.
struct Comparison {
    /// Factors that tell points apart (varying in any run).
    factors: Vec<String>,
    /// Per row: the factor levels as text and, per run, the point's index
    /// into that run's summaries.
    rows: Vec<(Vec<String>, Vec<Option<usize>>)>,
    /// Lines naming fixed factors that differ between runs.
    differences: Vec<String>,
    key: String,
}

impl Comparison {
    fn new(runs: &[(StoredRun, Vec<PointSummary>)], key: &str) -> Comparison {
        let mut factors: Vec<String> = Vec::new();
        for (_, p) in runs {
            for f in output::varying_factors(p) {
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

    fn summary<'a>(
        &self,
        runs: &'a [(StoredRun, Vec<PointSummary>)],
        row: usize,
        run: usize,
    ) -> Option<&'a analysis::Summary> {
        self.rows[row].1[run].and_then(|pi| runs[run].1[pi].metrics.get(&self.key))
    }

    fn table(&self, runs: &[(StoredRun, Vec<PointSummary>)], m: Metric) -> Table {
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

    fn csv(&self, runs: &[(StoredRun, Vec<PointSummary>)]) -> Vec<u8> {
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

fn compare_report(
    runs: &[(StoredRun, Vec<PointSummary>)],
    cmp: &Comparison,
    table: Table,
    m: Metric,
) -> Report {
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
    s.push(table);
    // The overlay: against the first numeric factor, one series per run (and
    // per combination of the other factors); or bars per point.
    let (f, u) = scale_for_values(
        runs.iter()
            .flat_map(|(_, p)| p.iter().filter_map(|x| x.metrics.get(&cmp.key)))
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
            for (r, pts) in runs {
                let mut series: Vec<Series> = Vec::new();
                for p in pts {
                    let (Some(x), Some(sm)) =
                        (factor_number(&p.params, fac), p.metrics.get(&cmp.key))
                    else {
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
                        cmp.summary(runs, ri, k).map(|sm| {
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
