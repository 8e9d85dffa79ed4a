//! Helpers shared by the binary's integration tests (each test file is its
//! own crate; not every one uses every helper).
#![allow(dead_code)]

pub mod browser;

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `tcplab --db DB ARGS…` to completion, stdin closed.
pub fn tcplab(db: &Path, args: &[&str]) -> Output {
    Command::new(cargo_bin("tcplab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The JSON a successful run printed; fails the test with its stderr otherwise.
pub fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "status {:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
