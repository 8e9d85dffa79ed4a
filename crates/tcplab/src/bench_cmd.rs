//! `tcplab bench`: plans the sweep, builds the places, runs every trial into
//! one stored run and prints its table (or its JSON).

use crate::cli::BenchArgs;
use crate::plan_args::bench_plan;
use crate::runner::execute;
use crate::session::Session;
use crate::store_access::{interrupt_flag, open_store};
use crate::usage::usage;
use record::RunStatus;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a `--to` server may take to accept and greet, unless
/// `--connect-timeout` says otherwise.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs `tcplab bench`.
pub fn bench(db: Option<PathBuf>, a: BenchArgs) -> anyhow::Result<ExitCode> {
    let plan = bench_plan(&a)?;
    if a.sample_hz.is_some() && a.probe.is_none() {
        return Err(usage(crate::probes::SAMPLE_HZ_NEEDS_CPU));
    }
    if a.probe_depth.is_some() && a.probe.is_none() {
        return Err(usage(crate::probes::DEPTH_NEEDS_PROBE));
    }
    if a.probe_keep.is_some() && a.probe.is_none() {
        return Err(usage(crate::probes::KEEP_NEEDS_PROBE));
    }
    let depth = a.probe_depth.unwrap_or_default();
    let keep = a.probe_keep.unwrap_or_default();
    let probes = a
        .probe
        .as_deref()
        .map(|spec| crate::probes::prepare(spec, a.sample_hz, depth, keep))
        .transpose()?;
    let needs_v6 = plan.points.iter().any(|p| p.ipv6);
    let needs_v4 = plan.points.iter().any(|p| !p.ipv6);
    if a.connect_timeout.is_some() && a.to.is_none() {
        return Err(usage(
            "--connect-timeout needs --to (without it, bench's own server is on loopback)",
        ));
    }
    if a.key.is_some() && a.to.is_none() {
        return Err(usage(
            "--key needs --to (bench's own server is on loopback and needs no key)",
        ));
    }
    if plan.points.iter().any(crate::session::uses_stack) {
        if a.to.is_some() {
            return Err(usage(
                "--stack/--server-stack tcplab run in the stack's place on this host: not with --to",
            ));
        }
        if a.probe.is_some() || a.interval.is_some() {
            return Err(usage(
                "--probe and --interval do not yet watch trials with a tcplab end (their metrics come from the stack's own counters)",
            ));
        }
        for p in plan.points.iter().filter(|p| crate::session::uses_stack(p)) {
            crate::session::check_stack_point(p)?;
        }
    }
    let key = a.key.as_deref().map(crate::key_cmd::read_key).transpose()?;
    // A server given with --to is greeted before the store is opened: one
    // that cannot be reached stores nothing.
    let connect_timeout = a.connect_timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let remote =
        a.to.as_deref()
            .map(|to| Session::remote(to, needs_v4, needs_v6, connect_timeout, key.clone()))
            .transpose()?;
    // …and asked whether it would serve every point: a refusal (its limits
    // or the key's) stores nothing either.
    let mut remote = remote;
    if let Some(s) = remote.as_mut() {
        s.preflight(&plan.points)?;
    }
    let mut store = open_store(db)?;
    let interrupt = interrupt_flag()?;
    let quiet = a.quiet || a.json;
    let status = |m: &str| {
        if !quiet {
            eprintln!("tcplab: {m}");
        }
    };
    let session = match remote {
        Some(s) => Ok(s),
        None => Session::local(&plan.points, &interrupt, &status),
    };
    // Ctrl-C while places were being built or calibrated: nothing was stored,
    // and whatever was built is already torn down.
    if interrupt.load(Ordering::SeqCst) {
        eprintln!("tcplab: interrupted before the first trial; nothing stored");
        return Ok(ExitCode::from(130));
    }
    let mut session = session?;
    session.set_probes(probes);
    if let Some(every) = plan.interval {
        session.set_interval(Some(engine::interval::IntervalSpec {
            every,
            sink: plan
                .print_intervals
                .then(crate::interval_lines::printing_sink),
        }));
    }
    let seed = a.seed.unwrap_or_else(plan::schedule::fresh_seed);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let end = execute(
        &mut store,
        &plan,
        &mut session,
        seed,
        command,
        &interrupt,
        // The interval lines replace the progress bar.
        a.quiet || a.json || a.interval.is_some(),
    )?;
    let run = store.load_run(end.run_id)?;
    let points = analysis::summarize_run(&run);
    // A missed --precision target is a warning, not a failure: the trials
    // measured, and the table and the JSON say how precise they are.
    let varying: Vec<String> = plan.varying.iter().map(|s| s.to_string()).collect();
    for l in sections::precision::missed_lines(&points, &varying) {
        eprintln!("tcplab: warning: precision target missed: {l}");
    }
    if !a.quiet {
        for l in sections::probe_storage::storage_lines(&run, &points, &varying) {
            eprintln!("tcplab: probe data of {l}");
        }
    }
    if a.json {
        let doc = sections::run_json::run_json(&run, &points, false);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{}", sections::terminal::run_header(&run.meta));
        let left_out = analysis::validity::left_out(&run.trials, &points);
        println!(
            "{}",
            sections::terminal::table(plan.test, &points, &varying, &left_out)
        );
        for l in sections::terminal::failure_lines(&points, &varying) {
            println!("{l}");
        }
        for l in sections::streams::stream_lines(&run, &points, &varying) {
            println!("{l}");
        }
        for l in sections::terminal::left_out_lines(&points, &varying, &left_out) {
            println!("{l}");
        }
        for l in sections::terminal::precision_lines(&points, &varying) {
            println!("{l}");
        }
        if let Some(l) = sections::terminal::probe_loss_warning(&points) {
            println!("{l}");
        }
        println!(
            "mean ± 95% CI half-width (Student's t); stored as run {}",
            end.run_id
        );
    }
    Ok(match end.status {
        RunStatus::Interrupted => ExitCode::from(130),
        _ if end.failed > 0 => ExitCode::from(1),
        _ => ExitCode::SUCCESS,
    })
}
