//! `tcplab server` (the remote end of `bench --to`) and `tcplab lab` (what
//! tcplab built on this host, cleaning it up, the link profiles).

use crate::cli::{LabCommand, ServerArgs};
use crate::usage::usage;
use engine::server_log::ServerEvent;
use engine::KeyPolicy;
use report::format::{number, Unit};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

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
    let limits = a.limits.limits(a.max_clients).map_err(usage)?;
    let pending = a.limits.pending().map_err(usage)?;
    let keys = match (&a.key, &a.keys) {
        (Some(path), _) => {
            let name = path
                .file_stem()
                .map_or("key".into(), |s| s.to_string_lossy().into_owned());
            let key = crate::key_cmd::read_key(path)?;
            Some(vec![(key, KeyPolicy::unlimited(&name))])
        }
        (None, Some(path)) => Some(crate::keys_file::read_keys(path, &limits).map_err(usage)?),
        (None, None) => None,
    };
    if keys.is_none() && !a.insecure && !ip.is_loopback() {
        return Err(usage(format!(
            "--bind {ip} is not a loopback address: give --key FILE (tcplab key new), or --insecure to serve anyone who can reach it"
        )));
    }
    // Enough descriptors for every client at once, or one line saying why not.
    if let Err(e) = engine::fd_limit::ensure(&limits, pending.total) {
        eprintln!("tcplab server: warning: {e}");
    }
    let soft = engine::fd_limit::soft_limit();
    let fit = engine::fd_limit::split(&limits, pending.total, soft);
    if fit.pending < pending.total {
        eprintln!(
            "tcplab server: warning: the open-file limit {soft} holds {} handshakes under way, not --max-pending {}: the bound is lowered to fit",
            fit.pending, pending.total
        );
    }
    let stdout = match (a.quiet, a.json) {
        (true, _) => None,
        (false, json) => Some(json),
    };
    let log: engine::server_log::ServerLog = Arc::new(move |e: &ServerEvent| {
        let time = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        // A closed stderr or stdout must not stop the server: errors are
        // ignored (println! would panic).
        let _ = writeln!(std::io::stderr(), "{}", json_line(e, &time));
        let _ = match stdout {
            Some(true) => writeln!(std::io::stdout(), "{}", json_line(e, &time)),
            Some(false) => writeln!(std::io::stdout(), "{time} {}", text_line(e)),
            None => Ok(()),
        };
    });
    let mut server = engine::Server::bind(SocketAddr::new(ip, a.port), limits)?
        .with_log(log)
        .with_pending_limits(pending);
    if let Some(keys) = keys {
        server = server.with_keys(keys);
    }
    eprintln!("tcplab server listening on {}", server.local_addr()?);
    server.serve();
    Ok(ExitCode::SUCCESS)
}

/// One line of the server's JSON log: the event as one JSON object, with
/// its `time`.
fn json_line(e: &ServerEvent, time: &str) -> String {
    let mut v = serde_json::to_value(e).unwrap_or_default();
    v["time"] = time.into();
    v.to_string()
}

/// ` with key NAME`, or nothing.
fn with_key(key: &Option<String>) -> String {
    key.as_ref()
        .map(|k| format!(" with key {k}"))
        .unwrap_or_default()
}

/// One line of the server's text log on stdout (after the time).
fn text_line(e: &ServerEvent) -> String {
    match e {
        ServerEvent::Connected { peer, client, key } => {
            format!("{peer} connected ({client}){}", with_key(key))
        }
        ServerEvent::Refused { peer, key, reason } => {
            format!("{peer}{} refused: {reason}", with_key(key))
        }
        ServerEvent::Trial {
            peer,
            key: _,
            test,
            parallel,
            role,
            bytes,
            seconds,
            throughput_bps,
            result,
            error,
        } => {
            let streams = if *parallel > 1 {
                format!(" ×{parallel}")
            } else {
                String::new()
            };
            let rate = throughput_bps
                .map(|r| format!(", {}", number(r, Unit::Si("bit/s"))))
                .unwrap_or_default();
            let why = error.as_ref().map(|w| format!(": {w}")).unwrap_or_default();
            format!(
                "{peer} {test}{streams} {role}: {} in {}{rate}, {result}{why}",
                number(*bytes as f64, Unit::Si("B")),
                number(*seconds, Unit::Si("s")),
            )
        }
        ServerEvent::Suppressed {
            address,
            key_holders,
            dropped,
            burst,
            per_second,
        } => {
            format!(
            "{}: {dropped} log line{} dropped (over {burst} at once or {per_second} a second {}{})",
            address.map_or("all addresses".to_string(), |a| a.to_string()),
            if *dropped == 1 { "" } else { "s" },
            if *key_holders {
                "about key holders and trials"
            } else {
                "before authentication"
            },
            if address.is_none() { ", all addresses together" } else { "" }
        )
        }
        ServerEvent::Disconnected { peer, trials } => {
            format!(
                "{peer} disconnected after {trials} trial{}",
                if *trials == 1 { "" } else { "s" }
            )
        }
    }
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
