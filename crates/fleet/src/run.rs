//! A fleet run: prepare every host (working directory, one-time key,
//! calibration), start the servers, run the tasks (each host in one task
//! at a time, up to `jobs` at once), and import each task's runs into the
//! local store as soon as it ends, so a host that fails later, or a killed
//! fleet run, loses nothing already gathered. A host that fails is
//! reported and skipped; the others go on.

use crate::inventory::{Host, Inventory, Role};
use crate::plan::{next_startable, FleetPlan, Task};
use crate::remote::{Remote, RemoteServer};
use crate::ssh::Ssh;
use engine::auth::Key;
use record::{RunStatus, Store};
use serde::Serialize;
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a fleet run behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Most tasks at once.
    pub jobs: usize,
    /// ssh's connect timeout.
    pub connect_timeout: Duration,
    /// Keep each host's working directory (store, key) instead of removing it.
    pub keep_remote: bool,
    /// When the fleet run started, stored with each imported run.
    pub started_at: String,
    /// This tcplab's version, compared with each host's.
    pub version: String,
}

/// What a fleet run reports as it goes. `host` and `task` are names from
/// the inventory (`client` or `client → server`).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A host is ready: its tcplab version.
    Ready {
        /// The host.
        host: String,
        /// What `tcplab --version` printed there.
        version: String,
    },
    /// A host failed and is skipped from here on.
    HostFailed {
        /// The host.
        host: String,
        /// Why, in one line.
        reason: String,
    },
    /// A task started.
    Started {
        /// The task.
        task: String,
    },
    /// A line the task's tcplab printed on its host (or a warning about it).
    Line {
        /// The task (or host).
        task: String,
        /// The line.
        line: String,
    },
    /// A run of the task stored here.
    Imported {
        /// The task.
        task: String,
        /// Its id here.
        run: i64,
        /// Its kind (`bench:tcp-stream`, `study:markatos02`).
        kind: String,
    },
    /// A task ended.
    Finished {
        /// The task.
        task: String,
        /// Ok, or why it failed.
        result: Result<(), String>,
        /// Its wall time.
        seconds: f64,
    },
    /// A task that never ran, and why.
    Skipped {
        /// The task.
        task: String,
        /// Why.
        reason: String,
    },
}

/// One task's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct TaskOutcome {
    /// `client` or `client → server`.
    pub task: String,
    /// The client host.
    pub client: String,
    /// The server host, if any.
    pub server: Option<String>,
    /// `ok`, `failed` or `skipped`.
    pub status: String,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// The runs stored here from it.
    pub runs: Vec<i64>,
    /// Its wall time.
    pub seconds: f64,
}

/// The whole run's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Every task.
    pub tasks: Vec<TaskOutcome>,
    /// Hosts with no results here, each with why.
    pub missing: Vec<(String, String)>,
    /// Wall time.
    pub seconds: f64,
}

/// Why a fleet run could not start at all.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// The plan has no task on this inventory.
    #[error("the plan has no host to run on: no host has the client role")]
    NoTasks,
    /// A local step failed (temporary files, random key).
    #[error("{0}")]
    Local(String),
    /// Storing failed.
    #[error(transparent)]
    Store(#[from] record::StoreError),
}

enum Done {
    Line(usize, String),
    Ended {
        index: usize,
        result: Result<(), String>,
        db: Option<tempfile::NamedTempFile>,
        lost_host: bool,
        seconds: f64,
    },
}

/// Runs `plan` across `inv`'s hosts, storing every host's runs in `store`;
/// `stop` ends it early (tasks running are stopped on their hosts).
pub fn run(
    inv: &Inventory,
    plan: &FleetPlan,
    opts: &Options,
    store: &mut Store,
    stop: &AtomicBool,
    mut on_event: impl FnMut(&Event),
) -> Result<Summary, FleetError> {
    let t0 = Instant::now();
    let tasks = plan.tasks(inv);
    if tasks.is_empty() {
        return Err(FleetError::NoTasks);
    }
    let ssh = Ssh::new(inv.ssh_config.as_deref(), opts.connect_timeout)
        .map_err(|e| FleetError::Local(format!("a directory for ssh's control sockets: {e}")))?;
    let key = Key::generate().map_err(|e| FleetError::Local(e.to_string()))?;
    let n = inv.hosts.len();
    let used: Vec<bool> = (0..n)
        .map(|h| tasks.iter().any(|t| t.hosts().any(|x| x == h)))
        .collect();
    let with_servers = tasks.iter().any(|t| t.server.is_some());

    // 1. Every host used, in parallel: working directory, key, calibration.
    let prepared: Vec<Option<Result<Remote, String>>> = std::thread::scope(|s| {
        let handles: Vec<_> = inv
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let (ssh, key) = (&ssh, &key);
                let calibrate = !plan.is_study() && tasks.iter().any(|t| t.client == i);
                used[i].then(|| {
                    s.spawn(move || prepare(ssh, h, with_servers.then_some(key), calibrate))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("preparing panicked".into()))
                })
            })
            .collect()
    });
    let mut remotes: Vec<Option<Remote>> = Vec::with_capacity(n);
    let mut failed: Vec<Option<String>> = vec![None; n];
    for (i, p) in prepared.into_iter().enumerate() {
        match p {
            Some(Ok(r)) => {
                on_event(&Event::Ready {
                    host: inv.hosts[i].name.clone(),
                    version: r.version.clone(),
                });
                if !r.version.ends_with(&opts.version) {
                    on_event(&Event::Line {
                        task: inv.hosts[i].name.clone(),
                        line: format!(
                            "warning: this host runs {}, the fleet {}",
                            r.version, opts.version
                        ),
                    });
                }
                remotes.push(Some(r));
            }
            Some(Err(reason)) => {
                host_failed(inv, i, &reason, &mut failed, &mut on_event);
                remotes.push(None);
            }
            None => remotes.push(None),
        }
    }

    // 2. The servers.
    let mut servers: Vec<Option<RemoteServer>> = (0..n).map(|_| None).collect();
    for (i, _) in inv.with_role(Role::Server) {
        if !tasks.iter().any(|t| t.server == Some(i)) {
            continue;
        }
        let Some(r) = &remotes[i] else { continue };
        match r.start_server(inv.port, Duration::from_secs(20)) {
            Ok(s) => servers[i] = Some(s),
            Err(reason) => host_failed(
                inv,
                i,
                &format!("starting its server: {reason}"),
                &mut failed,
                &mut on_event,
            ),
        }
    }

    // 3. The tasks.
    let mut outcomes: Vec<Option<TaskOutcome>> = vec![None; tasks.len()];
    let mut pending: Vec<usize> = (0..tasks.len()).collect();
    let mut busy = vec![false; n];
    let mut running = 0usize;
    let (tx, rx) = mpsc::channel::<Done>();
    std::thread::scope(|s| -> Result<(), FleetError> {
        loop {
            // Tasks whose hosts failed never start.
            pending.retain(|&t| {
                let task = tasks[t];
                match task.hosts().find(|&h| failed[h].is_some()) {
                    Some(h) => {
                        let reason = format!(
                            "{} failed: {}",
                            inv.hosts[h].name,
                            failed[h].as_deref().unwrap_or("")
                        );
                        on_event(&Event::Skipped {
                            task: task.label(inv),
                            reason: reason.clone(),
                        });
                        outcomes[t] =
                            Some(outcome(inv, task, "skipped", Some(reason), vec![], 0.0));
                        false
                    }
                    None => true,
                }
            });
            if stop.load(Ordering::SeqCst) {
                for &t in &pending {
                    let reason = "the fleet run was interrupted".to_string();
                    outcomes[t] =
                        Some(outcome(inv, tasks[t], "skipped", Some(reason), vec![], 0.0));
                }
                pending.clear();
            }
            while running < opts.jobs.max(1) {
                let alive: Vec<bool> = failed.iter().map(Option::is_none).collect();
                let pend: Vec<Task> = pending.iter().map(|&t| tasks[t]).collect();
                let Some(k) = next_startable(&pend, &busy, &alive) else {
                    break;
                };
                let index = pending.remove(k);
                let task = tasks[index];
                for h in task.hosts() {
                    busy[h] = true;
                }
                running += 1;
                on_event(&Event::Started {
                    task: task.label(inv),
                });
                let remote = remotes[task.client].as_ref().expect("a prepared host");
                let server = task.server.map(|h| &inv.hosts[h]);
                let (tx, words) = (tx.clone(), plan_words(plan, remote, server, inv.port));
                s.spawn(move || run_task(remote, index, &words, stop, tx));
            }
            if running == 0 && pending.is_empty() {
                return Ok(());
            }
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(Done::Line(index, line)) => on_event(&Event::Line {
                    task: tasks[index].label(inv),
                    line,
                }),
                Ok(Done::Ended {
                    index,
                    result,
                    db,
                    lost_host,
                    seconds,
                }) => {
                    running -= 1;
                    let task = tasks[index];
                    for h in task.hosts() {
                        busy[h] = false;
                    }
                    let label = task.label(inv);
                    let mut runs = Vec::new();
                    if let Some(db) = db {
                        runs = import(store, db.path(), inv, task, opts, &label, &mut on_event)?;
                    }
                    if lost_host {
                        let reason = result.clone().err().unwrap_or_default();
                        host_failed(inv, task.client, &reason, &mut failed, &mut on_event);
                    }
                    if let Some(s) = task.server {
                        if servers[s].as_mut().is_some_and(|x| !x.running()) {
                            host_failed(inv, s, "its server stopped", &mut failed, &mut on_event);
                        }
                    }
                    on_event(&Event::Finished {
                        task: label,
                        result: result.clone(),
                        seconds,
                    });
                    let (status, reason) = match result {
                        Ok(()) => ("ok", None),
                        Err(e) => ("failed", Some(e)),
                    };
                    outcomes[index] = Some(outcome(inv, task, status, reason, runs, seconds));
                }
                Err(_) => {}
            }
        }
    })?;

    // 4. Servers stopped, working directories removed.
    drop(servers);
    for (i, r) in remotes.iter().enumerate() {
        if let Some(r) = r {
            if !opts.keep_remote && failed[i].is_none() {
                let _ = r.clean_up();
            }
        }
        ssh.close(&inv.hosts[i].destination);
    }
    let tasks: Vec<TaskOutcome> = outcomes.into_iter().flatten().collect();
    // A host is missing when it failed, or was a client and stored nothing.
    let missing = inv
        .hosts
        .iter()
        .enumerate()
        .filter(|(i, h)| {
            used[*i]
                && (failed[*i].is_some()
                    || (h.is(Role::Client)
                        && !tasks
                            .iter()
                            .any(|t| t.client == h.name && !t.runs.is_empty())))
        })
        .map(|(i, h)| {
            let why = failed[i].clone().or_else(|| {
                tasks
                    .iter()
                    .find(|t| t.client == h.name && t.reason.is_some())
                    .and_then(|t| t.reason.clone())
            });
            (
                h.name.clone(),
                why.unwrap_or_else(|| "no completed run".into()),
            )
        })
        .collect();
    Ok(Summary {
        tasks,
        missing,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

fn outcome(
    inv: &Inventory,
    task: Task,
    status: &str,
    reason: Option<String>,
    runs: Vec<i64>,
    seconds: f64,
) -> TaskOutcome {
    TaskOutcome {
        task: task.label(inv),
        client: inv.hosts[task.client].name.clone(),
        server: task.server.map(|s| inv.hosts[s].name.clone()),
        status: status.into(),
        reason,
        runs,
        seconds,
    }
}

fn host_failed(
    inv: &Inventory,
    i: usize,
    reason: &str,
    failed: &mut [Option<String>],
    on_event: &mut impl FnMut(&Event),
) {
    if failed[i].is_none() {
        failed[i] = Some(reason.to_string());
        on_event(&Event::HostFailed {
            host: inv.hosts[i].name.clone(),
            reason: reason.to_string(),
        });
    }
}

/// A host made ready: its working directory, the key when servers are
/// used, and for bench plans a quick calibration so its runs carry a host
/// profile (studies calibrate themselves).
fn prepare<'a>(
    ssh: &'a Ssh,
    host: &'a Host,
    key: Option<&Key>,
    calibrate: bool,
) -> Result<Remote<'a>, String> {
    let r = Remote::prepare(ssh, host)?;
    if let Some(key) = key {
        r.put_key(key)?;
    }
    if calibrate {
        r.run(&r.tcplab(&["calibrate".into(), "--quick".into(), "--quiet".into()]))
            .map_err(|e| format!("calibrating: {e}"))?;
    }
    Ok(r)
}

/// The plan's words as the client host runs them.
fn plan_words(plan: &FleetPlan, client: &Remote, server: Option<&Host>, port: u16) -> Vec<String> {
    let mut w = plan.words.clone();
    if plan.is_study() {
        w.extend(["--out".into(), client.workdir.clone()]);
    }
    if let Some(s) = server {
        w.extend([
            "--to".into(),
            format!("{}:{port}", bracketed(&s.address)),
            "--key".into(),
            client.key_path(),
        ]);
    }
    w
}

fn bracketed(address: &str) -> String {
    if address.contains(':') {
        format!("[{address}]")
    } else {
        address.to_string()
    }
}

fn run_task(
    remote: &Remote,
    index: usize,
    words: &[String],
    stop: &AtomicBool,
    tx: mpsc::Sender<Done>,
) {
    let t0 = Instant::now();
    let result = remote.run_tcplab(words, stop, |l| {
        let _ = tx.send(Done::Line(index, l.to_string()));
    });
    let lost_host = matches!(&result, Err(e) if e.starts_with("ssh ") || e == "ssh was killed");
    // What the host stored, even when the task failed: its completed runs
    // are kept (a study of several completed some).
    let db = if lost_host {
        None
    } else {
        tempfile::NamedTempFile::new()
            .ok()
            .and_then(|f| match remote.fetch_db(f.path()) {
                Ok(true) => Some(f),
                _ => None,
            })
    };
    let _ = tx.send(Done::Ended {
        index,
        result,
        db,
        lost_host,
        seconds: t0.elapsed().as_secs_f64(),
    });
}

/// Stores the completed runs of a host's store here, each with where it
/// came from; runs already here are skipped.
fn import(
    store: &mut Store,
    db: &std::path::Path,
    inv: &Inventory,
    task: Task,
    opts: &Options,
    label: &str,
    on_event: &mut impl FnMut(&Event),
) -> Result<Vec<i64>, FleetError> {
    let runs = match Store::read_foreign_database(db) {
        Ok(r) => r,
        Err(e) => {
            on_event(&Event::Line {
                task: label.into(),
                line: format!("its store could not be read: {e}"),
            });
            return Ok(vec![]);
        }
    };
    let host = &inv.hosts[task.client];
    let mut ids = Vec::new();
    for f in runs {
        if f.run.meta.status != RunStatus::Completed {
            on_event(&Event::Line {
                task: label.into(),
                line: format!(
                    "run {} ({}) is {}: not imported",
                    f.run.meta.id,
                    f.run.meta.kind,
                    f.run.meta.status.as_str()
                ),
            });
            continue;
        }
        let provenance = json!({
            "from": format!("fleet:{}", host.name),
            "run": f.run.meta.id,
            "at": opts.started_at,
            "fleet": {
                "host": host.name,
                "destination": host.destination,
                "labels": host.labels,
                "server": task.server.map(|s| inv.hosts[s].name.clone()),
                "started_at": opts.started_at,
            },
        });
        if let record::ImportOutcome::Imported(id) = store.import_run(&f, provenance)? {
            on_event(&Event::Imported {
                task: label.into(),
                run: id,
                kind: f.run.meta.kind.clone(),
            });
            ids.push(id);
        }
    }
    Ok(ids)
}
