//! The report of one run: title, results table, figures, the probe and CPU
//! sections of probed runs, parameters and host.

use crate::cpu::cpu_section;
use crate::factor_text::{factor_number, factor_text, point_label};
use crate::figures::figures_section;
use crate::host::host_section;
use crate::metrics::{
    closest, metric_column, small_sample_note, table_metrics, test_of, trials_cell,
};
use crate::path::path_section;
use crate::path_source::{load_path_source, PathSource};
use crate::SectionsError;
use analysis::validity::LeftOut;
use analysis::PointSummary;
use record::factor::param_keys_by_name;
use record::{Store, StoredEventsError, StoredRun, TrialRecord, TrialStatus};
use report::{Block, Report, Section, Table};

/// The whole report of one run (`tcplab report RUN` for a run that is not a
/// study's): results, figures, the probe and CPU sections when the run was
/// probed, parameters and host. `varying` names the factors that vary
/// across the points; `result_warnings` go under the results table. The
/// measures the validity rules leave out (`analysis::validity`, with the
/// line rate each place stored) show their reason in place of the number
/// and are not plotted.
pub fn run_report(
    store: &Store,
    run: &StoredRun,
    points: &[PointSummary],
    varying: &[String],
    result_warnings: &[String],
) -> Result<Report, SectionsError> {
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
    let left_out = analysis::validity::left_out(&run.trials, points);
    rep.push(results_section(points, varying, result_warnings, &left_out));
    rep.push(figures_section(points, varying, &left_out));
    for s in probe_sections(store, run, points, varying)? {
        rep.push(s);
    }
    rep.push(parameters_section(run, points, varying));
    rep.push(crate::methods::methods_section(run, points));
    rep.push(host_section(store, run));
    Ok(rep)
}

/// The run's command, settings and every factor's level(s).
pub fn parameters_section(run: &StoredRun, points: &[PointSummary], varying: &[String]) -> Section {
    let m = &run.meta;
    let st = &m.settings;
    let mut s = Section::new("Parameters");
    s.push(Block::Command {
        label: "command".into(),
        line: m.command.clone(),
    });
    let mut kv = vec![
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

/// The results table: one row per point, each metric's mean ± 95% CI, or
/// the reason a measure is left out (`left_out`, computed over `points`);
/// `warnings` below it, then one per left-out measure.
pub fn results_section(
    points: &[PointSummary],
    varying: &[String],
    warnings: &[String],
    left_out: &[LeftOut],
) -> Section {
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
        .filter_map(|m| metric_column(points, m, left_out))
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
        row.push(trials_cell(p));
        row.extend(cols.iter().map(|c| c.1[i].clone()));
        t.row(row);
    }
    s.push(t);
    if let Some(note) = small_sample_note(points, &table_metrics(test)) {
        s.paragraph(note);
    }
    for w in warnings {
        s.warning(w.clone());
    }
    for w in crate::left_out::left_out_lines(points, varying, left_out, |_| true) {
        s.warning(w);
    }
    for l in crate::precision::missed_lines(points, varying) {
        s.warning(format!(
            "{} Precision target missed: {l}",
            crate::precision::MISSED_MARK
        ));
    }
    s
}

/// The probe and CPU sections, when the run has probed trials: the path of
/// the trial closest to the first probed point's mean, and the CPU section
/// of the sampled trials. Records stored in another layout are left out.
pub fn probe_sections(
    store: &Store,
    run: &StoredRun,
    points: &[PointSummary],
    varying: &[String],
) -> Result<Vec<Section>, SectionsError> {
    let test = test_of(points);
    let key = test.primary_metric();
    let ok: Vec<&TrialRecord> = run
        .trials
        .iter()
        .filter(|t| t.status == TrialStatus::Ok)
        .collect();
    let mut with_events: Vec<(&TrialRecord, PathSource)> = Vec::new();
    let mut with_profile: Vec<(&TrialRecord, record::CpuProfile)> = Vec::new();
    for t in &ok {
        match load_path_source(store, t) {
            Ok(Some(source)) => with_events.push((t, source)),
            Ok(None) | Err(StoredEventsError::Version { .. }) => {}
            Err(StoredEventsError::Store(e)) => return Err(e.into()),
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
        let source = with_events
            .iter()
            .find(|(t, _)| t.id == rep.id)
            .map(|(_, e)| e)
            .unwrap_or(&with_events[0].1);
        let an = source.analysis(rep);
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
