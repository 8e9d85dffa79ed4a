//! `tcplab probes`: the microscopic view of a run's probed trials, as text,
//! JSON or a pcapng capture.

use crate::cli::ProbesArgs;
use crate::commands::resolve;
use crate::cpu_report::{run_fits, run_text, trial_cpu, trial_text, TrialCpu};
use crate::usage::usage;
use analysis::path::{analyse, PathAnalysis};
use anyhow::Context;
use record::probe_event::decode_all;
use record::{Store, TrialRecord};
use serde_json::json;
use std::process::ExitCode;

/// Runs `tcplab probes`.
pub fn probes(store: Store, a: ProbesArgs) -> anyhow::Result<ExitCode> {
    let id = resolve(&store, &a.run)?;
    let run = store.load_run(id)?;
    let mut probed: Vec<(&TrialRecord, Vec<record::probe_event::ProbeEvent>)> = Vec::new();
    let mut sampled: Vec<TrialCpu> = Vec::new();
    for t in &run.trials {
        if a.trial.is_some_and(|s| s != t.seq) {
            continue;
        }
        if let Some(p) = store.load_profile(t.id)? {
            sampled.push(trial_cpu(t, &run.points, &p));
        }
        if let Some(blob) = store.load_events(t.id)? {
            if blob.version != record::probe_event::EVENT_VERSION {
                anyhow::bail!(
                    "trial {} has probe records of layout version {}, this tcplab reads {}",
                    t.seq,
                    blob.version,
                    record::probe_event::EVENT_VERSION
                );
            }
            probed.push((t, decode_all(&blob.data)));
        }
    }
    // The block table reads best grouped by point.
    sampled.sort_by_key(|c| (c.point_index, c.seq));
    if probed.is_empty() && sampled.is_empty() {
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
        let Some((t, events)) = probed.first() else {
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
    let analyses: Vec<(&TrialRecord, PathAnalysis)> =
        probed.iter().map(|(t, ev)| (*t, analyse(ev))).collect();
    let fits = run_fits(&sampled);
    if a.json {
        let doc = json!({
            "run": id,
            "trials": analyses.iter().map(|(t, an)| json!({
                "seq": t.seq,
                "point_id": t.point_id,
                "lost": t.outcome.metrics.get("probe_lost"),
                "analysis": an,
            })).collect::<Vec<_>>(),
            "cpu": sampled,
            "cpu_fits": fits,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (t, an) in &analyses {
        print!("{}", text(id, t, an));
        if let Some(c) = sampled.iter().find(|c| c.seq == t.seq) {
            print!("{}", trial_text(c));
        }
    }
    for c in sampled
        .iter()
        .filter(|c| !analyses.iter().any(|(t, _)| t.seq == c.seq))
    {
        println!("run {id} trial {} ({})", c.seq, c.point);
        print!("{}", trial_text(c));
    }
    if sampled.len() > 1 {
        print!("{}", run_text(&sampled, &fits));
    }
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

fn text(run: i64, t: &TrialRecord, a: &PathAnalysis) -> String {
    let mut s = String::new();
    let lost = t.outcome.metrics.get("probe_lost").copied().unwrap_or(0.0);
    s += &format!(
        "run {run} trial {}: {} records over {:.3} s{}\n",
        t.seq,
        a.records,
        a.span_s,
        if lost > 0.0 {
            format!(" — WARNING: {lost:.0} records lost (ring buffer full)")
        } else {
            ", none lost".into()
        }
    );
    s += "  records per probe:";
    for (k, v) in &a.per_probe {
        s += &format!(" {k}={v}");
    }
    s += "\n";
    s += &format!(
        "  {:<60} {:>8} {:>9} {:>9} {:>9} {:>9}\n",
        "hop", "n", "p50 µs", "p90 µs", "p99 µs", "max µs"
    );
    for h in &a.hops {
        s += &format!(
            "  {:<60} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1}\n",
            h.hop, h.n, h.p50_us, h.p90_us, h.p99_us, h.max_us
        );
    }
    for q in &a.queues {
        s += &format!(
            "  {:<60} {:>8} mean {:>10.1} max {:>10.0}\n",
            q.queue, q.n, q.mean, q.max
        );
    }
    for p in &a.packets {
        s += &format!(
            "  flow {}: {} data segments ({:.0} B avg, largest {}), {} ACKs, {} window updates, {} control, {} small segments sent with more data queued\n",
            p.flow,
            p.data,
            if p.data > 0 { p.data_bytes as f64 / p.data as f64 } else { 0.0 },
            p.largest_segment,
            p.acks,
            p.window_updates,
            p.control,
            p.small_with_more_queued
        );
    }
    for c in &a.ack_causes {
        if c.acks > 0 {
            s += &format!(
                "  ACKs {}: {} — {:.0}% within 50 µs after a read (receive-queue drain), {:.0}% on data arrival\n",
                c.flow,
                c.acks,
                c.after_read as f64 / c.acks as f64 * 100.0,
                c.on_arrival as f64 / c.acks as f64 * 100.0
            );
        }
    }
    for th in &a.threads {
        s += &format!(
            "  {} thread {}: blocked {:.1}% of {:.3} s (idle), preempted {:.1}%\n",
            th.role,
            th.tid,
            th.idle_fraction * 100.0,
            th.span_s,
            th.preempted_s / th.span_s * 100.0
        );
    }
    s
}
