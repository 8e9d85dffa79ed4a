//! The one skip helper of the workspace.
//!
//! A test that cannot run here (not root, no kernel feature, no tool)
//! calls [`skip`] (or one of the `need_*` checks, which call it) and
//! returns. The skip is:
//!
//! - printed as one line starting with [`MARKER`], written to the process's
//!   standard error directly, past the test harness's capture, so it shows
//!   in `cargo test`'s output although the test "passes";
//! - appended to the file named by [`SKIP_LOG`] when that is set, one line
//!   `test<TAB>reason`, which `scripts/test` counts and lists at the end;
//! - a failure instead under [`REQUIRE_ALL`]`=1` (CI, as root with every
//!   package `scripts/setup-debian` installs): the panic names the test and
//!   what was missing.
//!
//! A skip is for a missing precondition only. An error while setting up
//! (a namespace that `ip` failed to add, a TUN device that would not open,
//! the binary exiting 2) is never a skip: the test fails with its message.

use std::fmt::Display;
use std::io::Write;
use std::path::Path;

/// The environment variable that makes every skip a test failure (`1`).
pub const REQUIRE_ALL: &str = "TCPLAB_REQUIRE_ALL";
/// The environment variable naming the file skips are appended to.
pub const SKIP_LOG: &str = "TCPLAB_SKIP_LOG";
/// How every skip line begins, and the only skip marker in the workspace.
pub const MARKER: &str = "tcplab-test SKIPPED";

/// Whether every skip is a failure here (`TCPLAB_REQUIRE_ALL=1`).
pub fn require_all() -> bool {
    std::env::var(REQUIRE_ALL).is_ok_and(|v| v == "1")
}

/// The running test as `binary::test` (the harness names each test's
/// thread after the test; the binary is the executable without cargo's
/// hash).
pub fn current_test() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|stem| match stem.rsplit_once('-') {
            Some((name, hash))
                if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                name.to_string()
            }
            _ => stem,
        })
        .unwrap_or_else(|| "?".into());
    let thread = std::thread::current();
    let test = match thread.name() {
        Some("main") | None => "?",
        Some(name) => name,
    };
    format!("{binary}::{test}")
}

/// The line a skip prints and logs: `MARKER binary::test: missing`.
pub fn skip_line(test: &str, missing: &str) -> String {
    format!("{MARKER} {test}: {missing}")
}

/// Records that the calling test cannot run here because `missing` is
/// missing; the caller then returns. Under `TCPLAB_REQUIRE_ALL=1` it
/// panics instead, naming the test and what is missing.
#[track_caller]
pub fn skip(missing: impl Display) {
    let test = current_test();
    let missing = missing.to_string().replace(['\n', '\t'], " ");
    if require_all() {
        panic!("{REQUIRE_ALL}=1, and {test} cannot run here: {missing}");
    }
    let line = skip_line(&test, &missing);
    // Straight to the file descriptor: `eprintln!` would be captured and
    // hidden, as the test passes.
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
    if let Some(log) = std::env::var_os(SKIP_LOG) {
        append(Path::new(&log), &format!("{test}\t{missing}\n"));
    }
}

/// Appends one line in one `write(2)` (O_APPEND: lines from test binaries
/// and threads running at once do not interleave).
fn append(log: &Path, line: &str) {
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        // A skip that cannot be counted must not pass unseen.
        panic!("cannot record a skip in {}: {e}", log.display());
    }
}

/// Whether `ok`; when not, the test is skipped for `missing` and the
/// caller returns. `if !need(cond, "…") { return; }`
#[track_caller]
pub fn need(ok: bool, missing: impl Display) -> bool {
    if !ok {
        skip(missing);
    }
    ok
}

/// Whether the process runs as root (namespaces, raw sockets, routes,
/// BPF, real-time priority and cgroups need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether the test runs as root; when not, it is skipped with `why`
/// (what root is needed for) and the caller returns.
#[track_caller]
pub fn need_root(why: &str) -> bool {
    need(is_root(), format_args!("root ({why})"))
}

/// Whether `path` exists (a device node, a kernel interface); when not,
/// the test is skipped for `what` and the caller returns.
#[track_caller]
pub fn need_path(path: &str, what: &str) -> bool {
    need(
        Path::new(path).exists(),
        format_args!("{what} ({path} is missing)"),
    )
}

/// Whether the program `tool` is on `PATH`; when not, the test is skipped
/// and the caller returns.
#[track_caller]
pub fn need_tool(tool: &str) -> bool {
    need(
        on_path(tool),
        format_args!("{tool} is not installed (scripts/setup-debian installs it)"),
    )
}

/// Whether an executable file `tool` is in one of `PATH`'s directories.
pub fn on_path(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn the_running_test_is_named_by_its_binary_and_thread() {
        let t = current_test();
        assert!(t.starts_with("testkit::"), "{t}");
        assert!(
            t.ends_with("the_running_test_is_named_by_its_binary_and_thread"),
            "{t}"
        );
    }

    #[test]
    fn a_tool_is_found_on_path_and_a_missing_one_is_not() {
        assert!(on_path("sh"));
        assert!(!on_path("tcplab-no-such-tool"));
    }

    /// This test run again in a child process with `envs`, in its child
    /// role: (succeeded, stderr, stdout, what the skip log holds).
    fn again_in_child(envs: &[(&str, &str)]) -> (bool, String, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("skips");
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "skip::tests::a_skip_is_printed_past_the_capture_logged_and_a_failure_under_require_all",
            ])
            .env(CHILD, "1")
            .env_remove(REQUIRE_ALL)
            .env(SKIP_LOG, &log)
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            std::fs::read_to_string(&log).unwrap_or_default(),
        )
    }

    const CHILD: &str = "TCPLAB_TESTKIT_CHILD";
    const TEST: &str = "testkit::skip::tests::\
        a_skip_is_printed_past_the_capture_logged_and_a_failure_under_require_all";

    /// In its child role (run by itself) the test skips for a made-up
    /// precondition; in its own role it runs that child without and with
    /// `TCPLAB_REQUIRE_ALL=1` and checks what each did.
    #[test]
    fn a_skip_is_printed_past_the_capture_logged_and_a_failure_under_require_all() {
        if std::env::var_os(CHILD).is_some() {
            if !need(false, "a precondition this test makes up") {
                return;
            }
            unreachable!("need(false) said yes");
        }
        let (ok, stderr, _, log) = again_in_child(&[]);
        assert!(ok, "{stderr}");
        // Without --nocapture: the line got past the harness's capture.
        assert!(
            stderr.contains(&format!(
                "{MARKER} {TEST}: a precondition this test makes up\n"
            )),
            "{stderr}"
        );
        assert_eq!(log, format!("{TEST}\ta precondition this test makes up\n"));

        let (ok, stderr, stdout, log) = again_in_child(&[(REQUIRE_ALL, "1")]);
        assert!(!ok, "the skip passed under {REQUIRE_ALL}=1: {stderr}");
        // The harness prints a failed test's panic with its captured output.
        assert!(
            stdout.contains(&format!(
                "{REQUIRE_ALL}=1, and {TEST} cannot run here: a precondition this test makes up"
            )),
            "{stdout}"
        );
        assert!(
            !stderr.contains(MARKER),
            "a failure printed as a skip: {stderr}"
        );
        assert_eq!(log, "", "a failure is not logged as a skip");
    }
}
