//! Helpers shared by the binary's integration tests (each test file is its
//! own crate; not every one uses every helper).
#![allow(dead_code)]

pub mod browser;
pub mod control;
pub mod delay_relay;
pub mod fleet_hosts;
pub mod keys;
pub mod lockout;
pub mod server;

use assert_cmd::cargo::cargo_bin;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

/// Whether the tests run as root (namespaces, raw sockets, routes and BPF
/// need it). A test that needs it says so with `testkit::need_root`.
pub use testkit::is_root;

/// A fresh temporary directory and the path of a database `t.db` in it
/// (not yet created); the directory goes when the `TempDir` is dropped.
pub fn temp_db() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    (dir, db)
}

/// `tcplab --db DB`, to add arguments to and run or spawn.
pub fn tcplab_command(db: &Path) -> Command {
    let mut c = Command::new(cargo_bin("tcplab"));
    c.arg("--db").arg(db);
    c
}

/// Runs `tcplab --db DB ARGS…` to completion, stdin closed.
pub fn tcplab(db: &Path, args: &[&str]) -> Output {
    tcplab_command(db)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Fails the test, with the status and stderr, unless the command succeeded.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "status {:?}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The text a successful run printed; fails the test with its stderr otherwise.
pub fn stdout_of(out: &Output) -> String {
    assert_success(out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON a successful run printed; fails the test with its stderr otherwise.
pub fn json_of(out: &Output) -> Value {
    assert_success(out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one line a refused command printed: fails the test unless it exited
/// with status 2 (bad input) and printed exactly one line on stderr. `case`
/// names what was run in the failure message.
pub fn usage_error_line(out: &Output, case: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{case}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{case} printed more than one line: {err}"
    );
    err
}

/// Fails the test unless the command was refused as bad input (status 2,
/// one line) with a message containing `needle`.
pub fn assert_usage_error(out: &Output, needle: &str) {
    let err = usage_error_line(out, needle);
    assert!(err.contains(needle), "expected {needle:?} in {err}");
}

/// The names of everything tcplab's lab has now (namespaces, cgroups,
/// owner files), for [`lab_left_behind`].
pub fn lab_resources() -> Vec<String> {
    lab::clean::inventory()
        .into_iter()
        .map(|r| r.name)
        .collect()
}

/// What runs of the lab left behind since `before` (a [`lab_resources`]
/// snapshot): resources named by a run's tag (`tcplab-<tag>-…`) that
/// appeared since, whose owner process is gone. Another tcplab run on the
/// host (a second CI, a user's study) owns live ones, and other tests'
/// own namespaces (`tcplab-interop-…`) are not lab runs; neither fails a
/// test that checks its own runs cleaned up.
pub fn lab_left_behind(before: &[String]) -> Vec<String> {
    lab::clean::inventory()
        .into_iter()
        .filter(|r| !before.contains(&r.name))
        .filter(|r| {
            let base = r.name.rsplit('/').next().unwrap_or(&r.name);
            lab::names::Tag::of_name(base).is_some() && !r.owner_alive
        })
        .map(|r| format!("{} {} (owner {:?})", r.kind, r.name, r.owner))
        .collect()
}
