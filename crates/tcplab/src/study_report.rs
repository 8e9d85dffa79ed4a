//! A study run's HTML report: reads the run back (with its probe records,
//! CPU samples and host profile, and the same study's newest run from each
//! other host in the database), builds the study's sections and verdict,
//! and writes the report beside its raw data. `tcplab study` writes it
//! after the run; `tcplab report RUN` rewrites it, with the other hosts
//! imported since.

use anyhow::Context;
use record::Store;
use report::{DataFile, Report, Section};
use std::collections::BTreeMap;
use std::path::Path;
use studies::StudyData;

/// Writes the report of study run `run_id` to `out`, `warnings` shown
/// under its experiments; prints its summary and returns the number of
/// finding sentences.
pub fn write(store: &Store, run_id: i64, warnings: &[String], out: &Path) -> anyhow::Result<usize> {
    let mut data = load(store, run_id, true)?;
    let name = data.settings.study.clone();
    let own = data.run.meta.host.hostname.clone();
    for (host, id) in store.latest_completed_run_per_host(&data.run.meta.kind)? {
        if host != own {
            data.peers.push(load(store, id, false)?);
        }
    }
    let sections = match name.as_str() {
        studies::abrams91::NAME => studies::abrams91::report(&data),
        studies::markatos02::NAME => studies::markatos02::report(&data),
        studies::sunos_ipc::NAME => studies::sunos_ipc::report(&data),
        studies::openlink92::NAME => studies::openlink92::report(&data),
        studies::huang_chen::NAME => studies::huang_chen::report(&data),
        other => anyhow::bail!("no report for study {other}"),
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
    r.push(host_section(
        &data,
        store.run_host_profile(run_id)?.as_ref(),
    ));
    let mut findings = 0;
    for s in sections {
        findings += count_findings(&s);
        r.push(s);
    }
    let verdict = studies::verdict::section(&data);
    findings += count_findings(&verdict);
    r.push(verdict);
    r.push(experiments_section(&data, warnings));
    let csv = {
        let mut v = Vec::new();
        record::export::trials_csv(&data.run, &mut v)?;
        v
    };
    let json = serde_json::to_vec_pretty(&record::export::run_json(&data.run))?;
    let files = vec![
        DataFile::new("csv", "every trial: parameters and metrics (CSV)", csv),
        DataFile::new(
            "json",
            "the run with per-point summaries and every trial (JSON)",
            json,
        ),
    ];
    let w = report::write_report(&r, out, files)
        .with_context(|| format!("writing the report {}", out.display()))?;
    println!("{}", report::summary_text(&r));
    println!("report: {}", w.html.display());
    Ok(findings)
}

/// Whether run `run_id` was made by `tcplab study`.
pub fn is_study_run(store: &Store, run_id: i64) -> anyhow::Result<bool> {
    Ok(store.load_run(run_id)?.meta.kind.starts_with("study:"))
}

/// A study run read back, with its host profile's figures; with
/// `probe_data`, also its trials' probe records and CPU samples.
fn load(store: &Store, run_id: i64, probe_data: bool) -> anyhow::Result<StudyData> {
    let run = store.load_run(run_id)?;
    let points = analysis::summarize_run(&run);
    let mut events = BTreeMap::new();
    let mut profiles = BTreeMap::new();
    if probe_data {
        for t in &run.trials {
            if let Some(blob) = store.load_events(t.id)? {
                if blob.version == record::probe_event::EVENT_VERSION {
                    events.insert(t.id, record::probe_event::decode_all(&blob.data));
                }
            }
            if let Some(p) = store.load_profile(t.id)? {
                profiles.insert(t.id, p);
            }
        }
    }
    let mut data = StudyData::new(run, points, events, profiles)?;
    if let Some((id, p)) = store.run_host_profile(run_id)? {
        data.host = studies::HostNumbers {
            profile_id: Some(id),
            null_syscall_s: Some(p.null_syscall.median),
            mem_bw: Some(p.copy_dram.median),
            cpu_score: Some(p.cpu_score.median),
            ctx_switch_s: Some(p.context_switch.median),
            checksum_bw: Some(p.checksum_fast.median),
        };
    }
    Ok(data)
}

fn count_findings(s: &Section) -> usize {
    s.blocks
        .iter()
        .filter(|b| matches!(b, report::Block::Finding { .. }))
        .count()
}

fn host_section(d: &StudyData, profile: Option<&(i64, record::HostProfile)>) -> Section {
    let h = &d.run.meta.host;
    let mut s = Section::new("This host");
    let mut kv = vec![
        ("CPU".to_string(), format!("{} × {}", h.cores, h.cpu_model)),
        ("kernel".to_string(), h.kernel.clone()),
        ("system".to_string(), h.os.clone()),
        (
            "congestion control".to_string(),
            h.congestion_control.clone(),
        ),
    ];
    for k in [
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
        "net.core.rmem_max",
    ] {
        if let Some(v) = h.sysctls.get(k) {
            kv.push((k.to_string(), v.clone()));
        }
    }
    s.push(report::Block::KeyValues(kv));
    if let Some((id, p)) = profile {
        s.push(crate::calibrate_cmd::profile_table(p).with_caption(format!(
            "Host profile {id} (tcplab calibrate, {})",
            p.created_at
        )));
        if let Some(note) = crate::calibrate_cmd::aliasing_note(p) {
            s.push(report::Block::Paragraph(note));
        }
    }
    s
}

fn experiments_section(d: &StudyData, warnings: &[String]) -> Section {
    let mut s = Section::new("Experiments of this run");
    for w in warnings {
        s.warning(w.clone());
    }
    let mut t = report::Table::new(["experiment", "points", "trials ok", "failed", "command"]);
    for e in &d.settings.experiments {
        let pts = d.points_of(&e.id);
        t.row([
            format!("{} — {}", e.id, e.title),
            pts.len().to_string(),
            pts.iter().map(|p| p.trials_ok).sum::<u32>().to_string(),
            pts.iter().map(|p| p.trials_failed).sum::<u32>().to_string(),
            e.command.clone(),
        ]);
    }
    s.push(t);
    s
}
