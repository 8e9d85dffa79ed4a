//! Running iproute2 and ethtool: the kernel's own tools for namespaces,
//! links and qdiscs, with their stderr kept for the error message.

use crate::error::LabError;
use std::process::{Command, Stdio};

/// Runs `program args…`; an error carries the command line and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    let line = format!("{program} {}", args.join(" "));
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
