//! A study run's report document: reads the run back from the store (with
//! its probe records, CPU samples and host profile, and the same study's
//! newest run from each other host), and assembles the title, the host
//! section, the study's own sections, the verdict, the experiments section
//! and the CSV and JSON data files. The binary writes and prints it.

use crate::data::{HostNumbers, StudyData};
use crate::{study, verdict, StudyError};
use record::{Store, StoredEventsError};
use report::{Block, DataFile, Report, Section, Table};
use sections::host::study_host_section;
use std::collections::BTreeMap;

/// A study run's report, ready to write.
#[derive(Debug)]
pub struct StudyDocument {
    /// The report.
    pub report: Report,
    /// The run's raw data, written beside the report.
    pub data_files: Vec<DataFile>,
    /// The number of finding sentences in the study's sections and verdict.
    pub findings: usize,
}

/// Whether run `run_id` was made by `tcplab study`.
pub fn is_study_run(store: &Store, run_id: i64) -> Result<bool, StudyError> {
    Ok(store.load_run(run_id)?.meta.kind.starts_with("study:"))
}

/// The report of study run `run_id`, `warnings` shown under its
/// experiments; the same study's newest completed run from each other host
/// in the store is set beside it.
pub fn document(
    store: &Store,
    run_id: i64,
    warnings: &[String],
) -> Result<StudyDocument, StudyError> {
    let mut data = load(store, run_id, true)?;
    let name = data.settings.study.clone();
    let own = data.run.meta.host.hostname.clone();
    for (host, id) in store.latest_completed_run_per_host(&data.run.meta.kind)? {
        if host != own {
            data.peers.push(load(store, id, false)?);
        }
    }
    let sections = match study(&name) {
        Ok(s) => (s.report)(&data),
        Err(_) => return Err(StudyError::NoReport(name)),
    };
    let mut r =
        Report::new(format!("{name} on {}", data.run.meta.host.hostname)).with_subtitle(format!(
            "tcplab study run {run_id}{}, {} — {}",
            if data.settings.quick {
                " (--quick)"
            } else {
                ""
            },
            data.run.meta.started_at,
            data.run.meta.host.cpu_model
        ));
    r.push(study_host_section(
        &data.run.meta.host,
        store.run_host_profile(run_id)?.as_ref(),
    ));
    let mut findings = 0;
    for s in sections {
        findings += count_findings(&s);
        r.push(s);
    }
    if let Some(p) = crate::probe_effect::probe_effect_section(&data) {
        r.push(p);
    }
    let lossy = crate::lossy::lossy_place_warnings(&data);
    if !lossy.is_empty() {
        let mut loss = Section::new("Loss beside throughput");
        for w in lossy {
            loss.warning(w);
        }
        r.push(loss);
    }
    let verdict = verdict::section(&data);
    findings += count_findings(&verdict);
    r.push(verdict);
    let overrides = sections::methods::MethodsOverrides {
        trial_order: crate::methods::trial_order(&data),
        probes: crate::methods::probes_line(&data),
    };
    let mut methods = sections::methods::methods_section_with(&data.run, &data.points, &overrides);
    if let Some(cc) = crate::methods::cc_paragraph(&data.settings.experiments) {
        methods.push(report::Block::Paragraph(cc));
    }
    r.push(methods);
    r.push(experiments_section(&data, warnings));
    let csv = {
        let mut v = Vec::new();
        record::export::trials_csv(&data.run, &mut v)?;
        v
    };
    let json = serde_json::to_vec_pretty(&record::export::run_json(&data.run))?;
    let data_files = vec![
        DataFile::new("csv", "every trial: parameters and metrics (CSV)", csv),
        DataFile::new(
            "json",
            "the run with per-point summaries and every trial (JSON)",
            json,
        ),
    ];
    Ok(StudyDocument {
        report: r,
        data_files,
        findings,
    })
}

/// A study run read back, with its host profile's figures; with
/// `probe_data`, also its trials' probe records (those in this build's
/// layout) and CPU samples.
pub fn load(store: &Store, run_id: i64, probe_data: bool) -> Result<StudyData, StudyError> {
    let run = store.load_run(run_id)?;
    let points = analysis::summarize_run(&run);
    let mut events = BTreeMap::new();
    let mut profiles = BTreeMap::new();
    if probe_data {
        for t in &run.trials {
            match store.load_probe_events(t.id) {
                Ok(Some(e)) => {
                    events.insert(t.id, e);
                }
                Ok(None) | Err(StoredEventsError::Version { .. }) => {}
                Err(StoredEventsError::Store(e)) => return Err(e.into()),
            }
            if let Some(p) = store.load_profile(t.id)? {
                profiles.insert(t.id, p);
            }
        }
    }
    let mut data = StudyData::new(run, points, events, profiles)?;
    if let Some((id, p)) = store.run_host_profile(run_id)? {
        data.host = HostNumbers {
            profile_id: Some(id),
            null_syscall_s: Some(p.null_syscall.median),
            mem_bw: Some(p.copy_dram.median),
            copy_cache_bw: Some(p.copy_cache.median),
            cpu_score: Some(p.cpu_score.median),
            ctx_switch_s: Some(p.context_switch.median),
            checksum_bw: Some(p.checksum_fast.median),
        };
    }
    Ok(data)
}

/// The finding sentences of a section.
fn count_findings(s: &Section) -> usize {
    s.blocks
        .iter()
        .filter(|b| matches!(b, Block::Finding { .. }))
        .count()
}

/// The experiments the run holds: points, trials and the command of each.
fn experiments_section(d: &StudyData, warnings: &[String]) -> Section {
    let mut s = Section::new("Experiments of this run");
    for w in warnings {
        s.warning(w.clone());
    }
    s.paragraph(
        "Each figure links the values it plots and the run's CSV of every trial; an \
         experiment's trials are the CSV rows whose point column lies in its range below.",
    );
    let mut t = Table::new([
        "experiment",
        "points",
        "trials ok",
        "failed",
        "CSV rows: point",
        "command",
    ]);
    t.commands = vec![false, false, false, false, false, true];
    for e in &d.settings.experiments {
        let pts = d.points_of(&e.id);
        t.row([
            format!("{} — {}", e.id, e.title),
            pts.len().to_string(),
            pts.iter().map(|p| p.trials_ok).sum::<u32>().to_string(),
            pts.iter().map(|p| p.trials_failed).sum::<u32>().to_string(),
            point_range(e),
            e.command.clone(),
        ]);
    }
    s.push(t);
    for k in &d.settings.skipped {
        s.warning(format!(
            "Left out at this run's place: {} — {}. {}.",
            k.id, k.title, k.reason
        ));
    }
    s
}

/// The `point` values of an experiment's rows in the run's CSV: `4–7`,
/// `4` for one point, `—` for none.
pub(crate) fn point_range(e: &crate::data::ExperimentRecord) -> String {
    match e.points {
        0 => "—".into(),
        1 => e.first_point.to_string(),
        n => format!("{}–{}", e.first_point, e.first_point + n - 1),
    }
}

/// One study report that `study all` wrote, for the index page.
#[derive(Debug, Clone, PartialEq)]
pub struct WrittenStudy {
    /// The study's name.
    pub name: String,
    /// Its stored run.
    pub run_id: i64,
    /// The report's file name, relative to the index.
    pub file: String,
    /// Finding sentences in the report.
    pub findings: usize,
    /// How the run ended (`completed`, `interrupted`).
    pub status: String,
}

/// The index page of `study all`: one row and one link per study report,
/// in the order they ran.
pub fn index(studies: &[WrittenStudy], elapsed_s: f64) -> Report {
    let mut r = Report::new("tcplab studies")
        .with_subtitle(format!("{} studies in {elapsed_s:.0} s", studies.len()));
    let mut s = Section::new("Reports");
    let mut t = Table::new(["study", "run", "findings", "status", "report"]).key();
    for x in studies {
        t.row([
            x.name.clone(),
            x.run_id.to_string(),
            x.findings.to_string(),
            x.status.clone(),
            x.file.clone(),
        ]);
    }
    s.push(t);
    r.push(s);
    for x in studies.iter().filter(|x| !x.file.is_empty()) {
        r.data_files.push(report::DataLink {
            href: x.file.clone(),
            description: format!("the {} report (run {})", x.name, x.run_id),
        });
        // The data written beside each report, as report::write_report names it.
        let stem = x.file.strip_suffix(".html").unwrap_or(&x.file);
        for (ext, what) in [
            ("csv", "every trial: parameters and metrics"),
            ("json", "the run with per-point summaries and every trial"),
        ] {
            r.data_files.push(report::DataLink {
                href: format!("{stem}.{ext}"),
                description: format!("{} run {}: {what}", x.name, x.run_id),
            });
        }
    }
    r
}
