//! The commands: bench, server, runs, show, export.

use crate::cli::{BenchArgs, Cli, Command, ExportArgs, Format, LabCommand, ServerArgs, ShowArgs};
use crate::output;
use crate::plan_args::bench_plan;
use crate::runner::execute;
use crate::session::Session;
use crate::usage::usage;
use anyhow::Context;
use record::{RunStatus, Store, StoreError};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let db = cli.db.clone();
    match cli.command {
        Command::Bench(a) => bench(db, *a),
        Command::Server(a) => server(a),
        Command::Runs => runs(db),
        Command::Show(a) => show(db, a),
        Command::Export(a) => export(db, a),
        Command::Probes(a) => crate::probe_report::probes(open_store(db)?, a),
        Command::Lab(c) => lab_command(c),
        Command::Report(a) => crate::report_cmd::report(open_store(db)?, a),
        Command::Compare(a) => crate::report_cmd::compare(open_store(db)?, a),
        Command::Study(a) => crate::study_cmd::study(db, a),
        Command::Import(a) => crate::import_cmd::import(open_store(db)?, a),
        Command::Calibrate(a) => {
            crate::calibrate_cmd::calibrate(open_store(db)?, a, interrupt_flag()?)
        }
    }
}

/// The database path: `--db`, `$TCPLAB_DB`, or the user's data directory.
fn db_path(db: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = db {
        return Ok(p);
    }
    let base = dirs::data_dir().context("no data directory for the database; pass --db PATH")?;
    Ok(base.join("tcplab").join("tcplab.db"))
}

pub(crate) fn open_store(db: Option<PathBuf>) -> anyhow::Result<Store> {
    let path = db_path(db)?;
    Store::open(&path).with_context(|| format!("opening database {}", path.display()))
}

/// Resolves RUN; an unknown or malformed run is bad input.
pub(crate) fn resolve(store: &Store, spec: &str) -> anyhow::Result<i64> {
    store.resolve_run(spec).map_err(|e| match e {
        StoreError::BadRunSpec(_) | StoreError::NoSuchRun(_) | StoreError::NoRuns => usage(e),
        other => other.into(),
    })
}

/// Installs the Ctrl-C / SIGTERM handler: the first signal interrupts the run
/// gracefully, a second one exits at once.
pub(crate) fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ntcplab: interrupted; finishing the current trial's bookkeeping (Ctrl-C again to quit at once)");
    })
    .context("installing the Ctrl-C handler")?;
    Ok(flag)
}

fn bench(db: Option<PathBuf>, a: BenchArgs) -> anyhow::Result<ExitCode> {
    let plan = bench_plan(&a)?;
    if a.sample_hz.is_some() && a.probe.is_none() {
        return Err(usage(crate::probes::SAMPLE_HZ_NEEDS_CPU));
    }
    if a.probe_depth.is_some() && a.probe.is_none() {
        return Err(usage(crate::probes::DEPTH_NEEDS_PROBE));
    }
    let depth = a.probe_depth.unwrap_or_default();
    let probes = a
        .probe
        .as_deref()
        .map(|spec| crate::probes::prepare(spec, a.sample_hz, depth))
        .transpose()?;
    let needs_v6 = plan.points.iter().any(|p| p.ipv6);
    let needs_v4 = plan.points.iter().any(|p| !p.ipv6);
    let mut store = open_store(db)?;
    let interrupt = interrupt_flag()?;
    let quiet = a.quiet || a.json;
    let status = |m: &str| {
        if !quiet {
            eprintln!("tcplab: {m}");
        }
    };
    let session = match &a.to {
        Some(to) => Session::remote(to, needs_v4, needs_v6),
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
    let seed = a.seed.unwrap_or_else(plan::schedule::fresh_seed);
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let end = execute(
        &mut store,
        &plan,
        &mut session,
        seed,
        command,
        &interrupt,
        a.quiet || a.json,
    )?;
    let run = store.load_run(end.run_id)?;
    let points = analysis::summarize_run(&run);
    if a.json {
        let doc = output::run_json(&run, &points, false);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        let varying: Vec<String> = plan.varying.iter().map(|s| s.to_string()).collect();
        println!("{}", output::run_header(&run.meta));
        println!("{}", output::table(plan.test, &points, &varying));
        for l in output::failure_lines(&points, &varying) {
            println!("{l}");
        }
        if let Some(l) = output::probe_loss_warning(&points) {
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

fn server(a: ServerArgs) -> anyhow::Result<ExitCode> {
    let ip: IpAddr = a.bind.parse().map_err(|_| {
        usage(format!(
            "invalid --bind {:?}: expected an IP address",
            a.bind
        ))
    })?;
    if a.max_clients == 0 {
        return Err(usage("--max-clients must be at least 1"));
    }
    let limits = engine::Limits {
        max_clients: a.max_clients,
        ..engine::Limits::default()
    };
    let server = engine::Server::bind(SocketAddr::new(ip, a.port), limits)?;
    eprintln!("tcplab server listening on {}", server.local_addr()?);
    server.serve();
    Ok(ExitCode::SUCCESS)
}

fn runs(db: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let store = open_store(db)?;
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "run",
        "kind",
        "started",
        "status",
        "place",
        "points",
        "trials ok",
        "failed",
    ]);
    for r in store.list_runs()? {
        t.add_row([
            r.id.to_string(),
            r.kind,
            r.started_at,
            r.status.as_str().to_string(),
            r.place,
            r.points.to_string(),
            r.trials_ok.to_string(),
            r.trials_failed.to_string(),
        ]);
    }
    println!("{t}");
    Ok(ExitCode::SUCCESS)
}

fn show(db: Option<PathBuf>, a: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(db)?;
    let id = resolve(&store, &a.run)?;
    let run = store.load_run(id)?;
    let points = analysis::summarize_run(&run);
    if a.json {
        let mut doc = output::run_json(&run, &points, false);
        // The host profile (tcplab calibrate) the run references, or null.
        doc["host_profile_id"] = store.run_host_profile_id(id)?.into();
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let varying = output::varying_factors(&points);
    let test = points
        .first()
        .map(|p| p.params.test)
        .unwrap_or(record::TestKind::TcpStream);
    println!("{}", output::run_header(&run.meta));
    println!("{}", output::table(test, &points, &varying));
    for l in output::failure_lines(&points, &varying) {
        println!("{l}");
    }
    if let Some(l) = output::steal_warning(&points) {
        println!("{l}");
    }
    if let Some(l) = output::probe_loss_warning(&points) {
        println!("{l}");
    }
    Ok(ExitCode::SUCCESS)
}

fn export(db: Option<PathBuf>, a: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(db)?;
    let id = resolve(&store, &a.run)?;
    let run = store.load_run(id)?;
    let mut buf = Vec::new();
    if a.records {
        let mut rows = Vec::new();
        for t in &run.trials {
            if a.trial.is_some_and(|s| s != t.seq) {
                continue;
            }
            if let Some(blob) = store.load_events(t.id)? {
                let events = record::probe_event::decode_all(&blob.data);
                rows.extend(record::export::record_rows(t.seq, &events));
            }
        }
        if rows.is_empty() {
            return Err(usage(format!(
                "run {id} has no probe records{} (bench with --probe queues,tcp,sched)",
                a.trial
                    .map(|s| format!(" in trial {s}"))
                    .unwrap_or_default()
            )));
        }
        match a.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut buf, &rows)?;
                buf.push(b'\n');
            }
            Format::Csv => record::export::records_csv(&rows, &mut buf)?,
        }
    } else {
        match a.format {
            Format::Json => {
                let points = analysis::summarize_run(&run);
                let mut doc = output::run_json(&run, &points, true);
                // The host profile the run references, so that an import
                // elsewhere (tcplab import) keeps the host's figures.
                doc["host_profile"] =
                    serde_json::to_value(store.run_host_profile(id)?.map(|p| p.1))?;
                serde_json::to_writer_pretty(&mut buf, &doc)?;
                buf.push(b'\n');
            }
            Format::Csv => record::export::trials_csv(&run, &mut buf)?,
        }
    }
    match a.out {
        Some(path) => {
            std::fs::write(&path, &buf).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().write_all(&buf)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn lab_command(c: LabCommand) -> anyhow::Result<ExitCode> {
    match c {
        LabCommand::Show { json } => {
            let inv = lab::clean::inventory();
            if json {
                println!("{}", serde_json::to_string_pretty(&inv)?);
            } else if inv.is_empty() {
                println!("nothing of tcplab's exists on this host");
            } else {
                for r in inv {
                    let owner = match r.owner {
                        Some(pid) if r.owner_alive => format!("run pid {pid}, alive"),
                        Some(pid) => format!("run pid {pid}, gone"),
                        None => "no owner".into(),
                    };
                    println!("{} {} ({owner})", r.kind, r.name);
                    for c in r.contents {
                        println!("    {c}");
                    }
                }
            }
        }
        LabCommand::Clean { all } => {
            let r = lab::clean::clean(all);
            for n in &r.removed {
                println!("removed {n}");
            }
            for n in &r.kept {
                println!("kept {n} (its run is alive; --all removes it)");
            }
            for n in &r.failed {
                eprintln!("tcplab: could not remove {n}");
            }
            if r.removed.is_empty() && r.kept.is_empty() && r.failed.is_empty() {
                println!("nothing to clean");
            }
            if !r.failed.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        LabCommand::Profiles => {
            for p in lab::link::profiles() {
                let l = &p.spec;
                println!(
                    "{:8} rate {:>5} Mbit/s  delay {:>4} ms each way  queue {:>4} frames  — {}",
                    p.name,
                    l.rate_bps.map_or(0.0, |r| r as f64 / 1e6),
                    l.delay_s * 1e3,
                    l.queue_frames,
                    p.about
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
