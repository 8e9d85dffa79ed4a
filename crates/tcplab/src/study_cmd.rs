//! `tcplab study NAME|all`: plans a classic study, checks every experiment
//! with the same parser and validation as `tcplab bench`, runs them all in
//! one session into one stored run, and writes the study's HTML report
//! beside its raw data. `all` runs every study and writes an index page.

use crate::cli::{Cli, Command, StudyArgs};
use crate::plan_args::{bench_plan, BenchPlan};
use crate::runner::{now, run_meta, run_points, trial_progress};
use crate::session::Session;
use crate::store_access::{interrupt_flag, open_store};
use crate::usage::usage;
use anyhow::Context;
use clap::Parser;
use probe::ProbeDepth;
use record::{RunStatus, Store};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use studies::{ExperimentRecord, PlanOptions, StudyPlan, StudySettings};

/// One experiment checked and expanded into points.
struct Parsed {
    plan: BenchPlan,
    probe: Option<String>,
}

/// What one study wrote.
struct StudyResult {
    name: String,
    run_id: i64,
    html: PathBuf,
    data: Vec<PathBuf>,
    findings: usize,
    status: RunStatus,
}

/// Runs `tcplab study`.
pub fn study(db: Option<PathBuf>, a: StudyArgs) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = if a.name == "all" {
        studies::names().iter().map(|s| s.to_string()).collect()
    } else {
        vec![a.name.clone()]
    };
    let opts = PlanOptions {
        quick: a.quick,
        topology: a.topology.clone(),
    };
    // Every experiment of every study is checked before anything runs:
    // bad input stops here, with nothing stored.
    let mut planned = Vec::new();
    for n in &names {
        let plan = studies::plan(n, &opts).map_err(usage)?;
        let parsed = parse(&plan)?;
        planned.push((plan, parsed));
    }
    if !a.plan {
        planned = runnable(planned, &a)?;
    }
    if a.plan && a.json {
        println!("{}", serde_json::to_string_pretty(&plan_json(&planned))?);
        return Ok(ExitCode::SUCCESS);
    }
    if a.plan {
        for (plan, parsed) in &planned {
            println!("study {}:", plan.study);
            for (e, p) in plan.experiments.iter().zip(parsed) {
                println!(
                    "  {:<18} {:>4} points × {} repetitions  {}",
                    e.id,
                    p.plan.points.len(),
                    p.plan.rule.repeat,
                    e.command()
                );
            }
            for k in &plan.skipped {
                println!("  {:<18} left out: {}", k.id, k.reason);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let out_dir = a.out.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| usage(format!("cannot create {}: {e}", out_dir.display())))?;
    let mut store = open_store(db)?;
    let interrupt = interrupt_flag()?;
    let t0 = Instant::now();
    // Every run references the host's profile: calibrate first if this
    // host has none (the models and mileage need it).
    let host = record::HostFacts::collect().hostname;
    if store.latest_host_profile(&host)?.is_none() {
        say(
            &a,
            &format!("{host} has no host profile yet: calibrating first"),
        );
        let (id, _) =
            crate::calibrate_cmd::measure_and_store(&mut store, a.quick, &interrupt, a.quiet)?;
        say(&a, &format!("stored host profile {id}"));
    }
    let mut results = Vec::new();
    for (plan, parsed) in planned {
        let r = run_study(&mut store, &plan, parsed, &a, &interrupt, &out_dir)?;
        let stop = r.status == RunStatus::Interrupted;
        results.push(r);
        if stop {
            break;
        }
    }
    let mut index = None;
    if names.len() > 1 {
        let written = write_index(&results, &out_dir, t0.elapsed().as_secs_f64())?;
        if !a.json {
            println!("index of the reports: {}", written.display());
        }
        index = Some(written);
    }
    if a.json {
        let doc = results_json(&results, index.as_deref(), t0.elapsed().as_secs_f64());
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    say(
        &a,
        &format!(
            "{} finished in {:.0} s",
            if names.len() > 1 {
                "every study".to_string()
            } else {
                format!("study {}", names[0])
            },
            t0.elapsed().as_secs_f64()
        ),
    );
    Ok(
        if results.iter().any(|r| r.status == RunStatus::Interrupted) {
            ExitCode::from(130)
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// The studies that have an experiment to run at the place given: a
/// single study with none is refused in one line (with the first reason
/// its plan gives); under `all`, such a study is left out with a line
/// saying so.
fn runnable(
    planned: Vec<(StudyPlan, Vec<Parsed>)>,
    a: &StudyArgs,
) -> anyhow::Result<Vec<(StudyPlan, Vec<Parsed>)>> {
    let single = planned.len() == 1;
    let mut out = Vec::new();
    for (plan, parsed) in planned {
        if !plan.experiments.is_empty() {
            out.push((plan, parsed));
            continue;
        }
        let why = format!(
            "study {} has no experiment that can run at --topology {}: {}",
            plan.study,
            a.topology.as_deref().unwrap_or("(default)"),
            plan.skipped
                .first()
                .map_or("its plan is empty", |k| k.reason.as_str())
        );
        if single {
            return Err(usage(why));
        }
        say(a, &format!("{why}; leaving it out"));
    }
    Ok(out)
}

/// Parses and validates each experiment as `tcplab bench` would.
fn parse(plan: &StudyPlan) -> anyhow::Result<Vec<Parsed>> {
    let mut out = Vec::new();
    for e in &plan.experiments {
        let argv = ["tcplab", "bench"]
            .into_iter()
            .map(String::from)
            .chain(e.args.iter().cloned());
        let cli = Cli::try_parse_from(argv).map_err(|err| {
            usage(format!(
                "study {} experiment {}: {}",
                plan.study,
                e.id,
                crate::usage::clap_error_line(&err, &e.args)
            ))
        })?;
        let Command::Bench(b) = cli.command else {
            unreachable!("the argument vector starts with bench")
        };
        let bp = bench_plan(&b)
            .map_err(|err| usage(format!("study {} experiment {}: {err}", plan.study, e.id)))?;
        out.push(Parsed {
            plan: bp,
            probe: b.probe.clone(),
        });
    }
    Ok(out)
}

fn run_study(
    store: &mut Store,
    plan: &StudyPlan,
    parsed: Vec<Parsed>,
    a: &StudyArgs,
    interrupt: &Arc<AtomicBool>,
    out_dir: &Path,
) -> anyhow::Result<StudyResult> {
    say(
        a,
        &format!(
            "study {}: {} experiments, {} points",
            plan.study,
            plan.experiments.len(),
            parsed.iter().map(|p| p.plan.points.len()).sum::<usize>()
        ),
    );
    let all_points: Vec<record::TrialParams> = parsed
        .iter()
        .flat_map(|p| p.plan.points.iter().cloned())
        .collect();
    let status = |m: &str| say(a, m);
    let mut session = Session::local(&all_points, interrupt, &status)?;
    if interrupt.load(Ordering::SeqCst) {
        anyhow::bail!("interrupted before the first trial; nothing stored");
    }
    let mut records = Vec::new();
    let mut first = 0u32;
    for (e, p) in plan.experiments.iter().zip(&parsed) {
        records.push(ExperimentRecord {
            id: e.id.clone(),
            title: e.title.clone(),
            command: e.command(),
            first_point: first,
            points: p.plan.points.len() as u32,
        });
        first += p.plan.points.len() as u32;
    }
    let settings = StudySettings {
        study: plan.study.clone(),
        quick: a.quick,
        experiments: records,
        skipped: plan.skipped.clone(),
    };
    let seed = a.seed.unwrap_or_else(plan::schedule::fresh_seed);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let meta = run_meta(
        format!("study:{}", plan.study),
        command,
        seed,
        &session,
        json!({ studies::data::SETTINGS_KEY: settings }),
    );
    let run_id = store.create_run(&meta)?;
    let total: u64 = parsed
        .iter()
        .map(|p| p.plan.points.len() as u64 * u64::from(p.plan.rule.repeat))
        .sum();
    let pb = trial_progress(total, a.quiet);
    let mut seq = 0u32;
    let mut run_status = RunStatus::Completed;
    let mut warnings = Vec::new();
    let mut failed = 0;
    for (e, p) in settings.experiments.iter().zip(&parsed) {
        let probes = match &p.probe {
            Some(spec) => match crate::probes::prepare(
                spec,
                None,
                ProbeDepth::Full,
                crate::probes::ProbeKeep::All,
            ) {
                Ok(g) => Some(g),
                Err(err) => {
                    let w = format!("{}: ran without --probe {spec}: {err:#}", e.id);
                    if !a.quiet {
                        pb.println(format!("tcplab: {w}"));
                    }
                    warnings.push(w);
                    None
                }
            },
            None => None,
        };
        session.set_probes(probes);
        let end = run_points(
            store,
            run_id,
            e.first_point,
            &mut seq,
            &p.plan,
            &mut session,
            seed,
            interrupt,
            &pb,
        )?;
        failed += end.failed;
        if end.status == RunStatus::Interrupted {
            run_status = RunStatus::Interrupted;
            break;
        }
    }
    pb.finish_and_clear();
    store.finish_run(run_id, run_status, &now())?;
    // The places are torn down before the report is built.
    drop(session);
    if failed > 0 {
        warnings.push(format!(
            "{failed} trials failed; their points are summarized over the trials that succeeded"
        ));
    }
    let html = out_dir.join(format!("{}-run-{run_id}.html", plan.study));
    let (findings, written) = crate::study_report::write(store, run_id, &warnings, &html, a.json)?;
    Ok(StudyResult {
        name: plan.study.clone(),
        run_id,
        html,
        data: written.data,
        findings,
        status: run_status,
    })
}

/// A progress line on stderr, unless `--quiet`.
fn say(a: &StudyArgs, line: &str) {
    if !a.quiet {
        eprintln!("tcplab: {line}");
    }
}

/// `study --plan --json`: each study's experiments with their points,
/// repetitions and bench command.
fn plan_json(planned: &[(StudyPlan, Vec<Parsed>)]) -> serde_json::Value {
    let studies: Vec<serde_json::Value> = planned
        .iter()
        .map(|(plan, parsed)| {
            let experiments: Vec<serde_json::Value> = plan
                .experiments
                .iter()
                .zip(parsed)
                .map(|(e, p)| {
                    json!({
                        "id": e.id,
                        "title": e.title,
                        "points": p.plan.points.len(),
                        "repetitions": p.plan.rule.repeat,
                        "command": e.command(),
                    })
                })
                .collect();
            let skipped: Vec<serde_json::Value> = plan
                .skipped
                .iter()
                .map(|k| json!({ "id": k.id, "title": k.title, "reason": k.reason }))
                .collect();
            json!({ "study": plan.study, "experiments": experiments, "skipped": skipped })
        })
        .collect();
    json!({ "studies": studies })
}

/// `study --json`: what ran (each study's run and how it ended) and what
/// was written (its report and data files, the index of `study all`).
fn results_json(
    results: &[StudyResult],
    index: Option<&Path>,
    elapsed_s: f64,
) -> serde_json::Value {
    let studies: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            json!({
                "study": r.name,
                "run": r.run_id,
                "status": r.status.as_str(),
                "findings": r.findings,
                "report": r.html,
                "data": r.data,
            })
        })
        .collect();
    json!({ "studies": studies, "index": index, "elapsed_s": elapsed_s })
}

/// Writes the index page of `study all` beside the reports.
fn write_index(results: &[StudyResult], out_dir: &Path, elapsed_s: f64) -> anyhow::Result<PathBuf> {
    let written: Vec<studies::document::WrittenStudy> = results
        .iter()
        .map(|x| studies::document::WrittenStudy {
            name: x.name.clone(),
            run_id: x.run_id,
            file: x
                .html
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            findings: x.findings,
            status: format!("{:?}", x.status).to_lowercase(),
        })
        .collect();
    let r = studies::document::index(&written, elapsed_s);
    let out = out_dir.join("index.html");
    let html = report::render_html(&r)?;
    let tmp = out_dir.join(".index.html.tmp");
    std::fs::write(&tmp, html).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::UsageError;

    fn args(name: &str) -> StudyArgs {
        StudyArgs {
            name: name.into(),
            quick: true,
            topology: Some("loopback".into()),
            out: None,
            plan: true,
            seed: None,
            json: false,
            quiet: true,
        }
    }

    /// Every study has experiments on loopback since tcplab's stack runs
    /// in its own place; the refusal of a study with none is tested here.
    #[test]
    fn a_single_study_with_nothing_to_run_is_refused_in_one_line() {
        let empty = StudyPlan {
            study: "huang-chen".into(),
            experiments: Vec::new(),
            skipped: Vec::new(),
        };
        let e = runnable(vec![(empty, Vec::new())], &args("huang-chen"))
            .err()
            .expect("an empty plan is refused");
        assert!(e.downcast_ref::<UsageError>().is_some(), "bad input: {e}");
        assert_eq!(
            e.to_string(),
            "study huang-chen has no experiment that can run at --topology loopback: its plan \
             is empty"
        );
        let plan = studies::plan(
            "huang-chen",
            &PlanOptions {
                quick: true,
                topology: None,
            },
        )
        .unwrap();
        assert!(runnable(vec![(plan, Vec::new())], &args("huang-chen")).is_ok());
    }
}
