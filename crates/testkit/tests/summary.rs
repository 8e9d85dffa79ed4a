//! `scripts/test-summary`, the closing lines of `scripts/test`, on cargo
//! output written here: the counts follow the output (and the skip log)
//! both ways, a skipped test is not counted passed, and a failing cargo
//! run with no test named failed still says it failed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-summary")
}

/// The script's stdout on `output` and `skips` with cargo's `status`.
fn summary(output: &str, skips: &str, status: i32) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (out, log) = (dir.path().join("out"), dir.path().join("skips"));
    std::fs::write(&out, output).unwrap();
    std::fs::write(&log, skips).unwrap();
    let o = Command::new(script())
        .arg(&out)
        .arg(&log)
        .arg(status.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout).unwrap()
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

const TWO_BINARIES: &str = "\
     Running unittests src/lib.rs (target/debug/deps/alpha-0123456789abcdef)

running 3 tests
test m::one ... ok
test m::two ... FAILED
test m::three ... ignored, a note
test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.10s

     Running tests/wire.rs (target/debug/deps/wire-fedcba9876543210)

running 12 tests
test result: ok. 12 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s
";

#[test]
fn counts_are_summed_over_binaries_and_each_failure_and_skip_is_named() {
    let s = summary(TWO_BINARIES, "wire::a\tno root\nwire::b\tno tcpdump\n", 101);
    assert_eq!(last_line(&s), "11 passed, 1 failed, 3 skipped", "{s}");
    assert!(s.contains("failed (1):\n  alpha::m::two\n"), "{s}");
    assert!(
        s.contains("  wire::a: no root\n  wire::b: no tcpdump\n"),
        "{s}"
    );
    assert!(s.contains("  alpha::m::three: #[ignore]\n"), "{s}");
}

#[test]
fn with_nothing_skipped_or_failed_every_test_passed() {
    let clean = TWO_BINARIES
        .replace("test m::two ... FAILED", "test m::two ... ok")
        .replace("test m::three ... ignored, a note", "test m::three ... ok")
        .replace(
            "FAILED. 1 passed; 1 failed; 1 ignored",
            "ok. 3 passed; 0 failed; 0 ignored",
        );
    let s = summary(&clean, "", 0);
    assert_eq!(s, "15 passed, 0 failed, 0 skipped\n");
}

/// A part of a test skipped in a loop is one skipped test; a test that
/// skipped a part and then failed is a failure, not a skip.
#[test]
fn a_test_is_skipped_once_however_many_parts_skipped_and_a_failure_is_not_a_skip() {
    let s = summary(
        TWO_BINARIES,
        "wire::a\tno tshark\nwire::a\tno tshark\nwire::a\tno tshark\nalpha::m::two\tno ping\n",
        101,
    );
    assert_eq!(last_line(&s), "12 passed, 1 failed, 2 skipped", "{s}");
    assert!(!s.contains("alpha::m::two: no ping"), "{s}");
}

/// A binary killed mid-run (no result line) is a failure, named, even
/// when another test failed too.
#[test]
fn a_binary_without_its_result_line_is_a_failure() {
    let crashed = format!(
        "{TWO_BINARIES}\n     Running tests/probe.rs (target/debug/deps/probe-00112233445566aa)\n\n\
         running 4 tests\ntest one ... ok\nerror: test failed, to rerun pass `--test probe`\n"
    );
    let s = summary(&crashed, "", 101);
    assert!(s.contains("ended without a result (1):\n  probe\n"), "{s}");
    assert_eq!(last_line(&s), "13 passed, 2 failed, 1 skipped", "{s}");
}

#[test]
fn a_failing_run_with_no_test_named_is_a_failure() {
    let s = summary("error: could not compile `alpha`\n", "", 101);
    assert!(s.contains("cargo test exited 101"), "{s}");
    assert_eq!(last_line(&s), "0 passed, 1 failed, 0 skipped");
}

#[test]
fn bad_arguments_are_refused_with_status_2() {
    let o = Command::new(script()).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = Command::new(script())
        .args(["/nonexistent/tcplab-out", "/dev/null"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "test-summary: cannot read /nonexistent/tcplab-out\n"
    );
}
