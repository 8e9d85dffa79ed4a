//! `tcplab probes`: the microscopic view of a run's probed trials, as text,
//! JSON (both built by the `sections` crate) or a pcapng capture.

use crate::cli::ProbesArgs;
use crate::store_access::resolve;
use crate::usage::usage;
use anyhow::Context;
use record::{Store, TrialRecord};
use sections::probes_text::ProbedTrials;
use std::process::ExitCode;

/// Runs `tcplab probes`.
pub fn probes(store: Store, a: ProbesArgs) -> anyhow::Result<ExitCode> {
    let id = resolve(&store, &a.run)?;
    let run = store.load_run(id)?;
    let trials = ProbedTrials::load(&store, &run, a.trial)?;
    if trials.is_empty() {
        // Trials probed at --probe-depth filter or empty recorded nothing
        // on purpose: say so rather than "not probed".
        if let Some(depth) = run
            .trials
            .iter()
            .filter(|t| a.trial.is_none_or(|s| s == t.seq))
            .filter_map(|t| t.outcome.details["probe"]["depth"].as_str())
            .find(|d| *d != "full")
        {
            return Err(usage(format!(
                "run {id}'s probed trials ran at --probe-depth {depth}, which records \
                 nothing (it measures what probing costs); bench at full depth to see records"
            )));
        }
        return Err(usage(match a.trial {
            Some(s) => format!("run {id} has no probed trial with seq {s} (bench with --probe)"),
            None => format!("run {id} has no probed trials (bench with --probe)"),
        }));
    }
    if let Some(path) = &a.pcapng {
        let Some((t, events)) = trials.first_with_records() else {
            if !trials.probed.is_empty() {
                return Err(usage(format!(
                    "run {id}: {}, so there are no packets to write (bench with --probe-keep all)",
                    sections::path_source::RAW_NOT_KEPT
                )));
            }
            return Err(usage(format!(
                "run {id} has CPU samples but no packet records to write (bench with --probe queues)"
            )));
        };
        let ports = server_ports(t);
        let start = humantime::parse_rfc3339(&t.started_at)
            .ok()
            .and_then(|st| st.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let n = record::pcap::write_pcapng(std::io::BufWriter::new(f), events, &ports, start)?;
        eprintln!(
            "tcplab: wrote {n} packets of run {id} trial {} to {}",
            t.seq,
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&trials.json(id))?);
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", trials.text(id));
    Ok(ExitCode::SUCCESS)
}

/// The trial's server-side data ports, as the probe filter recorded them.
fn server_ports(t: &TrialRecord) -> Vec<u16> {
    t.outcome.details["probe"]["ports"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_u64())
                .map(|p| p as u16)
                .collect()
        })
        .unwrap_or_default()
}
