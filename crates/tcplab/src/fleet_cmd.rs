//! `tcplab fleet run INVENTORY PLAN`: checks the inventory and the plan
//! before anything is contacted, runs the plan across the hosts (the
//! `fleet` crate), prints each host's progress on stderr and the outcome on
//! stdout, and writes the study reports with every host beside the others.

use crate::cli::{Cli, Command, FleetRunArgs};
use crate::usage::usage;
use clap::Parser;
use fleet::{Event, FleetPlan, Inventory};
use std::process::ExitCode;

/// Runs `tcplab fleet run`.
pub fn run(db: Option<std::path::PathBuf>, a: FleetRunArgs) -> anyhow::Result<ExitCode> {
    let inv = Inventory::read(&a.inventory).map_err(usage)?;
    let plan = FleetPlan::new(a.plan.clone()).map_err(|e| usage(format!("plan: {e}")))?;
    // The plan is parsed here as the hosts will parse it, so a typo is one
    // line now, not one failure per host.
    let words = std::iter::once("tcplab".to_string()).chain(a.plan.iter().cloned());
    match Cli::try_parse_from(words) {
        Ok(Cli {
            command: Command::Study(s),
            ..
        }) => {
            if s.name != "all" && studies::study(&s.name).is_err() {
                return Err(usage(format!(
                    "plan: no study {:?} (one of {}, all)",
                    s.name,
                    studies::names().join(", ")
                )));
            }
        }
        Ok(Cli {
            command: Command::Bench(b),
            ..
        }) => {
            crate::plan_args::bench_plan(&b).map_err(|e| usage(format!("plan: {e}")))?;
        }
        Ok(_) => unreachable!("FleetPlan::new admits only study and bench"),
        Err(e) => {
            return Err(usage(format!(
                "plan: {}",
                crate::usage::clap_error_line(&e, &a.plan)
            )))
        }
    }
    if let Some(out) = &a.out {
        if !plan.is_study() {
            return Err(usage(
                "--out writes study reports; the plan is a bench plan",
            ));
        }
        crate::report_files::check_out(&out.join("x.html"))?;
    }
    let mut store = crate::store_access::open_store(db)?;
    let stop = crate::store_access::interrupt_flag()?;
    let opts = fleet::Options {
        jobs: a.jobs.map(|j| j as usize).unwrap_or(inv.hosts.len()),
        connect_timeout: a.connect_timeout,
        keep_remote: a.keep_remote,
        started_at: crate::runner::now(),
        version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let quiet = a.quiet;
    let summary = fleet::run(&inv, &plan, &opts, &mut store, &stop, |e| {
        if let Some(line) = progress_line(e, quiet) {
            eprintln!("{line}");
        }
    })?;
    let mut reports = Vec::new();
    if let Some(out) = &a.out {
        for t in summary.tasks.iter().filter(|t| !t.runs.is_empty()) {
            for &id in &t.runs {
                let kind = store.load_run(id)?.meta.kind;
                let Some(study) = kind.strip_prefix("study:") else {
                    continue;
                };
                let html = out.join(format!("{}-{study}-run-{id}.html", t.client));
                crate::study_report::write(&store, id, &[], &html, true)?;
                reports.push((t.client.clone(), id, html));
            }
        }
    }
    let interrupted = stop.load(std::sync::atomic::Ordering::SeqCst);
    if a.json {
        let doc = serde_json::json!({
            "inventory": a.inventory,
            "plan": a.plan,
            "seconds": summary.seconds,
            "interrupted": interrupted,
            "tasks": summary.tasks,
            "missing": summary.missing.iter().map(|(h, why)| serde_json::json!({"host": h, "reason": why})).collect::<Vec<_>>(),
            "reports": reports.iter().map(|(h, id, p)| serde_json::json!({"host": h, "run": id, "html": p})).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_outcome(&summary, &reports);
    }
    Ok(if interrupted {
        ExitCode::from(130)
    } else if summary.missing.is_empty() && summary.tasks.iter().all(|t| t.status == "ok") {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The stderr line for one event; failures are printed even when quiet.
fn progress_line(e: &Event, quiet: bool) -> Option<String> {
    let line = match e {
        Event::Ready { host, version } => format!("fleet: [{host}] ready ({version})"),
        Event::HostFailed { host, reason } => {
            return Some(format!(
                "fleet: [{host}] FAILED, skipped from here on: {reason}"
            ))
        }
        Event::Started { task } => format!("fleet: [{task}] started"),
        Event::Line { task, line } => format!("fleet: [{task}] {line}"),
        Event::Imported { task, run, kind } => {
            format!("fleet: [{task}] stored here as run {run} ({kind})")
        }
        Event::Finished {
            task,
            result: Ok(()),
            seconds,
        } => format!("fleet: [{task}] done in {}", clock(*seconds)),
        Event::Finished {
            task,
            result: Err(e),
            seconds,
        } => {
            return Some(format!(
                "fleet: [{task}] FAILED after {}: {e}",
                clock(*seconds)
            ))
        }
        Event::Skipped { task, reason } => {
            return Some(format!("fleet: [{task}] skipped: {reason}"))
        }
    };
    (!quiet).then_some(line)
}

fn clock(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{seconds:.1}s")
    }
}

fn print_outcome(s: &fleet::Summary, reports: &[(String, i64, std::path::PathBuf)]) {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_header(["task", "status", "runs stored here", "time", "reason"]);
    for o in &s.tasks {
        let runs = o
            .runs
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        t.add_row([
            o.task.clone(),
            o.status.clone(),
            if runs.is_empty() { "-".into() } else { runs },
            clock(o.seconds),
            o.reason.clone().unwrap_or_default(),
        ]);
    }
    println!("{t}");
    for (host, why) in &s.missing {
        println!("missing: {host}: {why}");
    }
    for (host, id, html) in reports {
        println!("report ({host}, run {id}): {}", html.display());
    }
    println!("fleet run took {}", clock(s.seconds));
}
