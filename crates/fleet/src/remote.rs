//! One host as a fleet run uses it: a private working directory holding its
//! store and the run's one-time key, tcplab invoked there, a server started
//! and stopped, and the store brought back.

use crate::inventory::Host;
use crate::ssh::{last_line, Ssh};
use engine::auth::Key;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A host with its working directory made.
#[derive(Debug)]
pub struct Remote<'a> {
    /// The inventory's host.
    pub host: &'a Host,
    ssh: &'a Ssh,
    /// The private directory on the host (`mktemp -d`), removed at the end.
    pub workdir: String,
    /// What `tcplab --version` printed there.
    pub version: String,
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

impl<'a> Remote<'a> {
    /// Connects, makes the working directory and asks tcplab its version;
    /// the error is one line saying which step failed.
    pub fn prepare(ssh: &'a Ssh, host: &'a Host) -> Result<Remote<'a>, String> {
        let out = ssh
            .run(
                &host.destination,
                &strings(&["mktemp", "-d", "/tmp/tcplab-fleet.XXXXXX"]),
            )
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ssh {}: {}",
                host.destination,
                last_line(&out.stderr)
            ));
        }
        let workdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !workdir.starts_with("/tmp/tcplab-fleet.") {
            return Err(format!("mktemp on the host printed {workdir:?}"));
        }
        let mut r = Remote {
            host,
            ssh,
            workdir,
            version: String::new(),
        };
        let out = r.run(&strings(&[&host.tcplab, "--version"]))?;
        r.version = String::from_utf8_lossy(&out).trim().to_string();
        Ok(r)
    }

    /// Runs a short command; its stdout, or one line saying why it failed.
    pub fn run(&self, args: &[String]) -> Result<Vec<u8>, String> {
        let out = self
            .ssh
            .run(&self.host.destination, args)
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(format!("{}: {}", args[0], last_line(&out.stderr)))
        }
    }

    /// The store on the host.
    pub fn db(&self) -> String {
        format!("{}/tcplab.db", self.workdir)
    }

    /// Where the run's key is kept on the host.
    pub fn key_path(&self) -> String {
        format!("{}/fleet.key", self.workdir)
    }

    /// Writes the run's key to the host, in a file only its owner reads.
    pub fn put_key(&self, key: &Key) -> Result<(), String> {
        let args = strings(&[
            "sh",
            "-c",
            "umask 077 && cat > \"$1\"",
            "sh",
            &self.key_path(),
        ]);
        let out = self
            .ssh
            .run_with_input(&self.host.destination, &args, key.to_line().as_bytes())
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("writing the key: {}", last_line(&out.stderr)))
        }
    }

    /// `tcplab --db <the host's store> ARGS…` on the host.
    pub fn tcplab(&self, args: &[String]) -> Vec<String> {
        let mut all = strings(&[&self.host.tcplab, "--db", &self.db()]);
        all.extend(args.iter().cloned());
        all
    }

    /// Runs tcplab on the host tied to the connection, handing each line
    /// it prints on stderr to `line`, until it ends or `stop` is set;
    /// Ok when it exits 0, else the reason in one line.
    pub fn run_tcplab(
        &self,
        args: &[String],
        stop: &std::sync::atomic::AtomicBool,
        mut line: impl FnMut(&str),
    ) -> Result<(), String> {
        let mut child = self
            .ssh
            .spawn_tied(&self.host.destination, &self.tcplab(args))
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        let lines = stream_lines(&mut child);
        let mut last = String::new();
        let status = loop {
            while let Ok(l) = lines.try_recv() {
                if !l.trim().is_empty() {
                    line(&l);
                    last = l;
                }
            }
            if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
                break s;
            }
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                // Closing the connection's stdin stops the remote command.
                drop(child.stdin.take());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(l) = lines.recv_timeout(Duration::from_millis(200)) {
            if !l.trim().is_empty() {
                line(&l);
                last = l;
            }
        }
        match status.code() {
            Some(0) => Ok(()),
            // ssh's own failure: the connection, not tcplab.
            Some(255) => Err(format!("ssh {}: {}", self.host.destination, trimmed(&last))),
            Some(c) => Err(format!("tcplab exited with {c}: {}", trimmed(&last))),
            None => Err("ssh was killed".into()),
        }
    }

    /// Starts `tcplab server` on the host with the run's key and waits
    /// until it listens.
    pub fn start_server(&self, port: u16, ready_within: Duration) -> Result<RemoteServer, String> {
        let mut args = strings(&[
            "server",
            "--port",
            &port.to_string(),
            "--key",
            &self.key_path(),
        ]);
        if self.host.address.parse::<std::net::IpAddr>().is_ok() {
            args.extend(strings(&["--bind", &self.host.address]));
        }
        // A server keeps no store: no --db.
        let mut all = vec![self.host.tcplab.clone()];
        all.extend(args);
        let mut child = self
            .ssh
            .spawn_tied(&self.host.destination, &all)
            .map_err(|e| format!("cannot run ssh: {e}"))?;
        let lines = stream_lines(&mut child);
        let t0 = Instant::now();
        let mut last = String::new();
        loop {
            match lines.recv_timeout(Duration::from_millis(100)) {
                Ok(l) if l.contains("listening on") => {
                    return Ok(RemoteServer { child, lines });
                }
                Ok(l) => last = l,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = child.wait();
                    return Err(format!("the server ended: {}", trimmed(&last)));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if t0.elapsed() > ready_within {
                drop(child.stdin.take());
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the server did not listen within {} s: {}",
                    ready_within.as_secs(),
                    trimmed(&last)
                ));
            }
        }
    }

    /// Copies the host's store to `local`; false when the host has none
    /// (nothing ran there).
    pub fn fetch_db(&self, local: &Path) -> Result<bool, String> {
        let args = strings(&[
            "sh",
            "-c",
            "test ! -f \"$1\" || cat \"$1\"",
            "sh",
            &self.db(),
        ]);
        let bytes = self.run(&args)?;
        if bytes.is_empty() {
            return Ok(false);
        }
        std::fs::write(local, bytes).map_err(|e| format!("{}: {e}", local.display()))?;
        Ok(true)
    }

    /// Removes the working directory (store, key, reports) from the host.
    pub fn clean_up(&self) -> Result<(), String> {
        self.run(&strings(&["rm", "-rf", "--", &self.workdir]))
            .map(|_| ())
    }
}

/// A server running on a host; stopped (SIGTERM through the closed
/// connection) when dropped.
#[derive(Debug)]
pub struct RemoteServer {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl RemoteServer {
    /// Whether the server still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What the server printed since the last call.
    pub fn lines(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The ssh process is ours; the remote side ends with its connection.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The child's stdout and stderr, line by line, on one channel (closed
/// when both end).
fn stream_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let readers: Vec<Box<dyn Read + Send>> = vec![
        Box::new(child.stdout.take().expect("piped")),
        Box::new(child.stderr.take().expect("piped")),
    ];
    for r in readers {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(r).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

fn trimmed(line: &str) -> String {
    let l = line.trim();
    let l = l.strip_prefix("tcplab: ").unwrap_or(l);
    if l.is_empty() {
        "no message".into()
    } else {
        l.to_string()
    }
}
