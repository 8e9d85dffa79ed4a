//! The system's `ssh`, as a fleet uses it: never prompting (BatchMode), one
//! multiplexed connection per host (ControlMaster) so each of a run's many
//! commands costs no new handshake, and remote commands quoted for the
//! remote shell.
//!
//! Every long remote command runs under [`TIED`]: it gets SIGTERM when the
//! ssh connection's standard input ends, so remote work never outlives
//! the fleet run that started it (a killed or interrupted fleet closes the
//! connection; tcplab on the host then stops as on Ctrl-C, and cleans up).
//! SIGTERM, not SIGINT: a shell starts background commands with SIGINT
//! ignored.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// The remote shell script that runs `"$@"` tied to the connection: the
/// command's stdin is /dev/null; a watcher reading the connection's stdin
/// sends the command SIGTERM when that ends; the script exits with the
/// command's status. (`read` is a shell builtin, so killing the watcher
/// leaves no process behind.)
pub const TIED: &str = "exec 3<&0; \"$@\" </dev/null & p=$!; \
     { read -r _ <&3; kill -TERM $p; } 2>/dev/null & w=$!; \
     wait $p; s=$?; kill $w 2>/dev/null; exit $s";

/// How a fleet reaches its hosts.
#[derive(Debug)]
pub struct Ssh {
    config: Option<PathBuf>,
    control_dir: tempfile::TempDir,
    connect_timeout: Duration,
}

impl Ssh {
    /// An ssh client using `config` (ssh -F) when given, with its control
    /// sockets in a fresh private directory.
    pub fn new(config: Option<&Path>, connect_timeout: Duration) -> std::io::Result<Ssh> {
        Ok(Ssh {
            config: config.map(Path::to_path_buf),
            control_dir: tempfile::Builder::new()
                .prefix("tcplab-fleet-ssh")
                .tempdir()?,
            connect_timeout,
        })
    }

    /// `ssh … DESTINATION REMOTE`, with `args` quoted into one remote
    /// command line.
    pub fn command(&self, destination: &str, args: &[String]) -> Command {
        let mut c = Command::new("ssh");
        if let Some(cfg) = &self.config {
            c.arg("-F").arg(cfg);
        }
        let control = self.control_dir.path().join("%C");
        c.args(["-o", "BatchMode=yes", "-o", "ControlMaster=auto"])
            .arg("-o")
            .arg(format!("ControlPath={}", control.display()))
            .args(["-o", "ControlPersist=120", "-o", "ServerAliveInterval=5"])
            .args(["-o", "ServerAliveCountMax=3"])
            .arg("-o")
            .arg(format!(
                "ConnectTimeout={}",
                self.connect_timeout.as_secs().max(1)
            ))
            .arg("--")
            .arg(destination)
            .arg(quote(args));
        c
    }

    /// Runs `args` on the host and waits: its output, stdin closed.
    pub fn run(&self, destination: &str, args: &[String]) -> std::io::Result<Output> {
        self.command(destination, args)
            .stdin(Stdio::null())
            .output()
    }

    /// Runs `args` on the host with `input` on its stdin.
    pub fn run_with_input(
        &self,
        destination: &str,
        args: &[String],
        input: &[u8],
    ) -> std::io::Result<Output> {
        use std::io::Write;
        let mut child = self
            .command(destination, args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let mut stdin = child.stdin.take().expect("piped");
        let written = stdin.write_all(input);
        drop(stdin);
        let out = child.wait_with_output()?;
        written.map(|()| out)
    }

    /// Starts `args` on the host tied to the connection ([`TIED`]): stdout
    /// and stderr piped; dropping the child's stdin stops the remote
    /// command with SIGTERM.
    pub fn spawn_tied(&self, destination: &str, args: &[String]) -> std::io::Result<Child> {
        let mut all = vec!["sh".to_string(), "-c".into(), TIED.into(), "sh".into()];
        all.extend(args.iter().cloned());
        self.command(destination, &all)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    }

    /// Closes the multiplexed connection to `destination`, if one is open.
    pub fn close(&self, destination: &str) {
        let mut c = Command::new("ssh");
        if let Some(cfg) = &self.config {
            c.arg("-F").arg(cfg);
        }
        let control = self.control_dir.path().join("%C");
        let _ = c
            .arg("-o")
            .arg(format!("ControlPath={}", control.display()))
            .args(["-O", "exit", "--", destination])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// One remote command line: each argument quoted for a POSIX shell.
pub fn quote(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            shlex::try_quote(a)
                .map(|q| q.into_owned())
                .unwrap_or_else(|_| "''".into())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last non-empty line of a command's stderr, for a one-line reason.
pub fn last_line(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no message")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_survive_the_remote_shell() {
        let args: Vec<String> = ["echo", "a b", "$HOME", "it's", "x;rm -rf /"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = quote(&args);
        let out = Command::new("sh").arg("-c").arg(&line).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "a b $HOME it's x;rm -rf /\n"
        );
    }

    #[test]
    fn a_tied_command_stops_when_its_input_ends_and_keeps_its_status() {
        use std::io::Read;
        let spawn = |script: &str| {
            Command::new("sh")
                .args(["-c", TIED, "sh", "sh", "-c", script])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        };
        // Ends by itself: its status comes through. (Child::wait would
        // close stdin first, so poll.)
        let mut c = spawn("exit 7");
        let status = loop {
            if let Some(s) = c.try_wait().unwrap() {
                break s;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.code(), Some(7));
        drop(c.stdin.take());
        // Runs until its input ends, then gets SIGTERM.
        let mut c = spawn("trap 'echo stopped; exit 3' TERM; while :; do sleep 0.05; done");
        std::thread::sleep(Duration::from_millis(300));
        assert!(c.try_wait().unwrap().is_none(), "still running");
        drop(c.stdin.take());
        let t0 = std::time::Instant::now();
        let status = c.wait().unwrap();
        let mut said = String::new();
        c.stdout.take().unwrap().read_to_string(&mut said).unwrap();
        assert_eq!(status.code(), Some(3), "{said}");
        assert_eq!(said, "stopped\n");
        assert!(t0.elapsed() < Duration::from_secs(2));
    }
}
