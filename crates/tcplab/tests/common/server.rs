//! A real `tcplab server` child process for the tests that attack or
//! authenticate against one: started on port 0 (optionally inside a
//! namespace), its address read from its first line on stderr, killed by
//! its pid when dropped. Its stderr (one JSON line per event after the
//! first) is read all along, so the server never blocks on a full pipe.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A `tcplab server` child, stopped by its pid when dropped.
pub struct ServerChild {
    /// The server process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it said on stderr before it listened (warnings).
    pub notes: Vec<String>,
    /// Its stderr lines after the first, as they arrive.
    stderr: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

/// How a server child is started besides its flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct Constraints {
    /// Its open-file limit (soft, hard).
    pub nofile: Option<(u64, u64)>,
    /// The one CPU it runs on.
    pub cpu: Option<usize>,
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ServerChild {
    /// `[ip netns exec NS] tcplab server --bind IP --port 0 EXTRA…`, once it
    /// says where it listens; its log (stdout) is kept for [`Self::log`].
    pub fn start(netns: Option<&str>, ip: &str, extra: &[&str]) -> ServerChild {
        Self::spawn(netns, ip, extra, Stdio::piped())
    }

    /// The same with its stdout log discarded: for attacks that make the
    /// server log more than a pipe holds while nobody reads it.
    pub fn start_unlogged(netns: Option<&str>, ip: &str, extra: &[&str]) -> ServerChild {
        Self::spawn(netns, ip, extra, Stdio::null())
    }

    /// The same, stdout discarded, started with this open-file limit and CPU.
    pub fn start_constrained(
        netns: Option<&str>,
        ip: &str,
        extra: &[&str],
        limits: Constraints,
    ) -> ServerChild {
        Self::spawn_limited(netns, ip, extra, Stdio::null(), limits)
    }

    fn spawn(netns: Option<&str>, ip: &str, extra: &[&str], log: Stdio) -> ServerChild {
        Self::spawn_limited(netns, ip, extra, log, Constraints::default())
    }

    fn spawn_limited(
        netns: Option<&str>,
        ip: &str,
        extra: &[&str],
        log: Stdio,
        limits: Constraints,
    ) -> ServerChild {
        let bin = assert_cmd::cargo::cargo_bin("tcplab");
        let mut c = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let Constraints { nofile, cpu } = limits;
        if nofile.is_some() || cpu.is_some() {
            // SAFETY: setrlimit and sched_setaffinity are async-signal-safe;
            // the closure owns its plain-data captures.
            unsafe {
                c.pre_exec(move || {
                    if let Some((soft, hard)) = nofile {
                        let rl = libc::rlimit {
                            rlim_cur: soft,
                            rlim_max: hard,
                        };
                        if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    if let Some(cpu) = cpu {
                        let mut set: libc::cpu_set_t = std::mem::zeroed();
                        libc::CPU_SET(cpu, &mut set);
                        if libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let mut child = c
            .args(["server", "--bind", ip, "--port", "0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        // Warnings (the open-file limit) come before the listening line.
        let mut notes = Vec::new();
        let addr = loop {
            let mut line = String::new();
            err.read_line(&mut line).unwrap();
            if let Some(a) = line.trim().strip_prefix("tcplab server listening on ") {
                break a.parse().unwrap();
            }
            if line.is_empty() || notes.len() > 10 {
                panic!("server did not start: {notes:?} {line:?}");
            }
            notes.push(line.trim().to_string());
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = stderr.clone();
        let reader = std::thread::spawn(move || {
            for line in err.lines() {
                let Ok(line) = line else { break };
                lines.lock().unwrap().push(line);
            }
        });
        ServerChild {
            child,
            addr,
            notes,
            stderr,
            reader: Some(reader),
        }
    }

    /// The CPU-seconds the server has used so far (user + system).
    pub fn cpu_s(&self) -> f64 {
        cpu_ticks(self.child.id()) as f64 / 100.0
    }

    /// Stops the server and returns its log.
    pub fn log(mut self) -> String {
        let _ = self.child.kill();
        let mut text = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    /// Stops the server and returns its stderr after the first line: each
    /// line parsed as JSON (fails the test on a line that is not).
    /// Waits first until no line has come for 300 ms (at most 5 s), so
    /// the events of a client that just left are in.
    pub fn json_log(self) -> Vec<Value> {
        self.logs().1
    }

    /// Stops the server as [`Self::json_log`] does; returns its stdout (empty
    /// when started unlogged) and its stderr's JSON lines.
    pub fn logs(mut self) -> (String, Vec<Value>) {
        let start = std::time::Instant::now();
        let mut seen = usize::MAX;
        while start.elapsed() < std::time::Duration::from_secs(5) {
            let n = self.stderr.lock().unwrap().len();
            if n == seen {
                break;
            }
            seen = n;
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            r.join().unwrap();
        }
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            out.read_to_string(&mut stdout).unwrap();
        }
        let lines = self.stderr.lock().unwrap().clone();
        let json = lines
            .iter()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line: {l:?}: {e}"))
            })
            .collect();
        (stdout, json)
    }
}

/// The CPU time (user + system) process `pid` has used, in clock ticks.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    f[0] + f[1]
}
