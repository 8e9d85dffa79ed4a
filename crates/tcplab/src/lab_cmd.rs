//! `tcplab server` (the remote end of `bench --to`) and `tcplab lab` (what
//! tcplab built on this host, cleaning it up, the link profiles).

use crate::cli::{LabCommand, ServerArgs};
use crate::usage::usage;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

/// Runs `tcplab server`.
pub fn server(a: ServerArgs) -> anyhow::Result<ExitCode> {
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

/// Runs `tcplab lab`.
pub fn lab_command(c: LabCommand) -> anyhow::Result<ExitCode> {
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
        LabCommand::Profiles { json: true } => {
            let list: Vec<serde_json::Value> = lab::link::profiles()
                .into_iter()
                .map(|p| serde_json::json!({ "name": p.name, "about": p.about, "link": p.spec }))
                .collect();
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        LabCommand::Profiles { json: false } => {
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
