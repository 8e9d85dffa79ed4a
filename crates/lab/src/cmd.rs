//! Running iproute2 and ethtool: the kernel's own tools for namespaces,
//! links and qdiscs, with their stderr kept for the error message.

use crate::error::LabError;
use std::collections::VecDeque;
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// The most recent commands the lab ran (or their equivalents, see
/// [`note`]), so that a place can record the literal commands that built
/// it for a reader to rerun (issue 30, rule 8).
static LOG: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// Lines [`LOG`] keeps; a place takes a few dozen.
const LOG_LINES: usize = 4096;

/// Adds a command line to the log: every command [`run`] runs, and the
/// command-line equivalent of what the lab does by system call (an
/// offload set by ioctl is logged as the `ethtool -K` that does it).
pub fn note(line: String) {
    let mut log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    if log.len() == LOG_LINES {
        log.pop_front();
    }
    log.push_back(line);
}

/// The logged command lines that mention `needle` (a place's tag, which
/// every name it creates carries), oldest first.
pub fn logged_mentioning(needle: &str) -> Vec<String> {
    let log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    log.iter().filter(|l| l.contains(needle)).cloned().collect()
}

/// Runs `program args…`; an error carries the command line and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    let line = format!("{program} {}", args.join(" "));
    note(line.clone());
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::io(format!("running `{line}`"), e))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(LabError::Command {
            command: line,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// `ip -n NS args…` (or plain `ip args…` for the root namespace).
pub fn ip(ns: Option<&str>, args: &[&str]) -> Result<String, LabError> {
    match ns {
        Some(n) => {
            let mut a = vec!["-n", n];
            a.extend_from_slice(args);
            run("ip", &a)
        }
        None => run("ip", args),
    }
}

/// `ip netns exec NS program args…`.
pub fn in_ns(ns: &str, program: &str, args: &[&str]) -> Result<String, LabError> {
    let mut a = vec!["netns", "exec", ns, program];
    a.extend_from_slice(args);
    run("ip", &a)
}

/// `tc args…` inside a namespace.
pub fn tc(ns: &str, args: &[&str]) -> Result<String, LabError> {
    in_ns(ns, "tc", args)
}
