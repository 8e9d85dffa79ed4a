//! Executes a plan: stores the run and its points, runs trials round by
//! round in randomized order until the stop rule is met, stores each trial
//! as it completes, and marks the run completed or interrupted.

use crate::plan_args::BenchPlan;
use crate::session::Session;
use engine::EngineError;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use plan::Scheduler;
use record::{
    HostFacts, PointRecord, RunMeta, RunStatus, Store, TrialOutcome, TrialRecord, TrialStatus,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

/// How a run ended.
#[derive(Debug, Clone, Copy)]
pub struct RunEnd {
    /// The stored run's id.
    pub run_id: i64,
    /// Completed or interrupted.
    pub status: RunStatus,
    /// Trials that failed.
    pub failed: u32,
}

/// The current time, RFC 3339 UTC.
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// A short label of a point's varying factors, for progress lines: each
/// factor's flag, in words, and its level as the flag takes it (`write
/// size 64K, host speed both=0.1, send rate 100mbit`).
fn label(p: &record::TrialParams, varying: &[&str]) -> String {
    varying
        .iter()
        .map(|k| {
            let level = p.value(k).map(|v| v.table_text()).unwrap_or_default();
            let name = record::factor::factor_info(k).map_or(*k, |f| f.flag);
            format!("{} {level}", name.replace(['-', '_'], " "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn progress(total: u64, quiet: bool) -> ProgressBar {
    let target = if quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let pb = ProgressBar::with_draw_target(Some(total), target);
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} trials{eta_text}  {msg}",
        )
        .expect("valid template")
        .with_key(
            "eta_text",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&eta_text(s.pos(), s.eta()));
            },
        ),
    );
    pb
}

/// The bar's time left: nothing until a trial has ended (indicatif's rate,
/// and so its ETA, is 0 before then), `, ETA 12s` after.
fn eta_text(done: u64, eta: std::time::Duration) -> String {
    if done == 0 {
        String::new()
    } else {
        format!(", ETA {:#}", indicatif::HumanDuration(eta))
    }
}

/// Runs `plan` in `session`, storing everything in `store`.
pub fn execute(
    store: &mut Store,
    plan: &BenchPlan,
    session: &mut Session,
    seed: u64,
    command: String,
    interrupt: &Arc<AtomicBool>,
    quiet: bool,
) -> anyhow::Result<RunEnd> {
    let meta = run_meta(
        plan.test.name().to_string(),
        command,
        seed,
        session,
        plan.settings.clone(),
    );
    let run_id = store.create_run(&meta)?;
    let pb = progress(
        plan.points.len() as u64 * u64::from(plan.rule.repeat),
        quiet,
    );
    let mut seq = 0;
    let end = run_points(
        store, run_id, 0, &mut seq, plan, session, seed, interrupt, &pb,
    )?;
    pb.finish_and_clear();
    store.finish_run(run_id, end.status, &now())?;
    Ok(end)
}

/// The record of a run about to start in `session`.
pub fn run_meta(
    kind: String,
    command: String,
    seed: u64,
    session: &Session,
    settings: serde_json::Value,
) -> RunMeta {
    RunMeta {
        id: 0,
        kind,
        command,
        seed,
        place: session.place(),
        started_at: now(),
        finished_at: None,
        status: RunStatus::Running,
        host: HostFacts::collect(),
        settings,
        tool_version: format!(
            "{} (git {})",
            env!("CARGO_PKG_VERSION"),
            env!("TCPLAB_GIT_COMMIT")
        ),
    }
}

/// A progress bar for `total` trials (hidden when `quiet`).
pub fn trial_progress(total: u64, quiet: bool) -> ProgressBar {
    progress(total, quiet)
}

/// Runs the points of `plan` as points `first_index..` of the stored run
/// `run_id`, round by round in randomized order until the stop rule is
/// met, storing each trial as it completes with the next `seq`. The run is
/// left open: the caller finishes it.
#[allow(clippy::too_many_arguments)]
pub fn run_points(
    store: &mut Store,
    run_id: i64,
    first_index: u32,
    seq: &mut u32,
    plan: &BenchPlan,
    session: &mut Session,
    seed: u64,
    interrupt: &Arc<AtomicBool>,
    pb: &ProgressBar,
) -> anyhow::Result<RunEnd> {
    // A host model's speeds come from a calibration on this host, before
    // any point is stored; without them no trial runs.
    let points = match crate::host_models::resolve(&plan.points, session, interrupt, pb) {
        Ok((points, calibrations)) => {
            if !calibrations.is_empty() {
                store.add_run_setting(
                    run_id,
                    "host_model_calibration",
                    serde_json::Value::Array(calibrations),
                )?;
            }
            points
        }
        Err(crate::host_models::ResolveError::Interrupted) => {
            return Ok(RunEnd {
                run_id,
                status: RunStatus::Interrupted,
                failed: 0,
            });
        }
        Err(crate::host_models::ResolveError::Failed(e)) => {
            store.finish_run(run_id, RunStatus::Failed, &now())?;
            return Err(e);
        }
    };
    let mut point_ids = Vec::with_capacity(points.len());
    for (i, p) in points.iter().enumerate() {
        let rec = PointRecord {
            id: 0,
            index: first_index + i as u32,
            params: p.clone(),
            precision: None,
        };
        point_ids.push(store.add_point(run_id, &rec)?);
    }
    let n = points.len();
    let mut attempts = vec![0u32; n];
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut sched = Scheduler::new(seed);
    let mut failed = 0u32;
    let mut status = RunStatus::Completed;
    'rounds: loop {
        let pending: Vec<usize> = (0..n)
            .filter(|&i| {
                plan.rule
                    .needs_more(&values[i], attempts[i], |v: &[f64], c: f64, r: f64| {
                        analysis::precision_reached(v, c, r, 2)
                    })
            })
            .collect();
        if pending.is_empty() {
            break;
        }
        if pb.position() + pending.len() as u64 > pb.length().unwrap_or(0) {
            pb.set_length(pb.position() + pending.len() as u64);
        }
        for i in sched.order(pending) {
            if interrupt.load(Ordering::Relaxed) {
                status = RunStatus::Interrupted;
                break 'rounds;
            }
            pb.set_message(label(&points[i], &plan.varying));
            if plan.print_intervals {
                let l = crate::interval_lines::trial_heading(
                    *seq,
                    &label(&points[i], &plan.varying),
                    &points[i],
                );
                println!("{}", l.join("\n"));
            }
            let started_at = now();
            let result = session.run(&points[i], interrupt);
            let interrupted = matches!(result, Err(EngineError::Interrupted))
                || interrupt.load(Ordering::Relaxed);
            // A trial cut short by Ctrl-C is stored as failed, never as a measurement.
            let stored = match result {
                _ if interrupted => Err("interrupted by the user".to_string()),
                r => r.map_err(|e| e.to_string()),
            };
            if plan.print_intervals {
                match &stored {
                    Ok(o) => {
                        for l in crate::interval_lines::trial_summary(&points[i], o) {
                            println!("{l}");
                        }
                    }
                    Err(e) => eprintln!("tcplab: trial failed: {e}"),
                }
                println!();
            }
            match &stored {
                // Each point's own test: a study's plan mixes tests.
                Ok(o) => values[i].extend(o.metrics.get(points[i].test.primary_metric())),
                Err(e) => {
                    failed += 1;
                    if !interrupted {
                        pb.println(format!(
                            "trial failed ({}): {e}",
                            label(&points[i], &plan.varying)
                        ));
                    }
                }
            }
            store_trial(
                store,
                run_id,
                point_ids[i],
                *seq,
                attempts[i],
                started_at,
                stored,
            )?;
            if interrupted {
                status = RunStatus::Interrupted;
                break 'rounds;
            }
            attempts[i] += 1;
            *seq += 1;
            pb.inc(1);
        }
    }
    // Each point's standing against --precision, once every point stopped:
    // met, or missed at the --max-repeat cap.
    if let (Some(pr), RunStatus::Completed) = (plan.rule.precision, status) {
        for i in 0..n {
            let outcome = analysis::precision_outcome(
                &values[i],
                attempts[i],
                pr.confidence,
                pr.rel_half_width,
                plan.rule.max_repeat,
            );
            store.set_point_precision(point_ids[i], &outcome)?;
        }
    }
    Ok(RunEnd {
        run_id,
        status,
        failed,
    })
}

fn store_trial(
    store: &mut Store,
    run_id: i64,
    point_id: i64,
    seq: u32,
    repetition: u32,
    started_at: String,
    result: Result<TrialOutcome, String>,
) -> anyhow::Result<()> {
    let (status, error, outcome) = match result {
        Ok(o) => (TrialStatus::Ok, None, o),
        Err(e) => (TrialStatus::Failed, Some(e), TrialOutcome::default()),
    };
    let t = TrialRecord {
        id: 0,
        point_id,
        seq,
        repetition,
        started_at,
        status,
        error,
        outcome,
    };
    store.add_trial(run_id, &t)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{eta_text, label};
    use record::factor::{HostSide, HostSpeed, TestKind};
    use std::time::Duration;

    #[test]
    fn progress_names_each_factor_and_its_level_as_typed() {
        let mut p = record::TrialParams::defaults(TestKind::TcpStream);
        p.host_speed = Some(HostSpeed {
            side: HostSide::Both,
            fraction: 0.1,
        });
        p.write_size = 65536;
        p.send_rate_bps = Some(100_000_000);
        assert_eq!(
            label(&p, &["host_speed", "write_size", "send_rate_bps"]),
            "host speed both=0.1, write size 64K, send rate 100mbit"
        );
        // `--host-speed none`, `--load none`: as typed, not a dash.
        p.host_speed = None;
        assert_eq!(
            label(&p, &["host_speed", "load"]),
            "host speed none, load none"
        );
    }

    #[test]
    fn the_eta_waits_for_the_first_trial() {
        assert_eq!(eta_text(0, Duration::ZERO), "");
        assert_eq!(eta_text(1, Duration::from_secs(3)), ", ETA 3s");
    }
}
