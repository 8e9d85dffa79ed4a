//! The command line's basics through the binary: mistakes get clap's
//! suggestion in one line, a negative duration is refused as such,
//! `--json` on the commands that print results, shell completions and man
//! pages built from the parser, `runs delete`, and `--quiet`.

mod common;

use common::{
    assert_success, assert_usage_error, json_of, stdout_of, tcplab, tcplab_command, temp_db,
    usage_error_line,
};
use rusqlite::Connection;
use std::path::Path;
use std::process::{Command, Stdio};

/// A tiny loopback run (one 64 KiB trial); returns its id.
fn tiny_run(db: &Path) -> i64 {
    let v = json_of(&tcplab(
        db,
        &[
            "bench",
            "tcp-stream",
            "--bytes",
            "64K",
            "--repeat",
            "1",
            "--json",
        ],
    ));
    v["run_id"].as_i64().unwrap()
}

/// `SELECT COUNT(*) …` on the database.
fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

/// The commands `tcplab --help` lists.
fn subcommands(db: &Path) -> Vec<String> {
    let help = stdout_of(&tcplab(db, &["--help"]));
    let list = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap();
    let names: Vec<String> = list
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect();
    assert!(names.len() >= 14, "{names:?}");
    names
}

#[test]
fn mistakes_get_clap_suggestions_in_one_line() {
    let (_dir, db) = temp_db();
    let cases: [(&[&str], &str); 5] = [
        (
            &["bench", "tcp-stream", "--write-sise", "1K"],
            "unexpected argument '--write-sise' (did you mean '--write-size'?)",
        ),
        (&["bench", "tcp-steam"], "(did you mean 'tcp-stream'?)"),
        (
            &["bench", "tcp-steam"],
            "valid: tcp-stream, udp-stream, tcp-rr, tcp-crr, http, layer-rate",
        ),
        (
            &["bnech", "tcp-stream"],
            "unrecognized subcommand 'bnech' (did you mean 'bench'?)",
        ),
        (&["runs", "delte", "1"], "(did you mean 'delete'?)"),
    ];
    for (args, needle) in cases {
        assert_usage_error(&tcplab(&db, args), needle);
    }
    assert!(!db.exists(), "a refused command created the database");
}

#[test]
fn a_negative_duration_is_refused_as_a_duration() {
    let (_dir, db) = temp_db();
    let out = tcplab(&db, &["bench", "tcp-stream", "--duration", "-1"]);
    let line = usage_error_line(&out, "--duration -1");
    assert!(line.contains("--duration"), "{line}");
    assert!(line.contains("a duration cannot be negative"), "{line}");
    assert!(!line.contains("unexpected argument"), "{line}");
    // With a unit, or on a flag that is no factor, clap cannot take it
    // as a value; the line still names the flag and quotes the value whole.
    let cases: [&[&str]; 4] = [
        &["bench", "tcp-stream", "--duration", "-1s"],
        &["bench", "tcp-stream", "--interval", "-1s"],
        &["bench", "tcp-stream", "--connect-timeout", "-1"],
        &["bench", "tcp-stream", "--bytes", "-1M"],
    ];
    for args in cases {
        let (flag, value) = (args[2], args[3]);
        let case = args.join(" ");
        let line = usage_error_line(&tcplab(&db, args), &case);
        assert!(
            line.contains(&format!("invalid value '{value}' for '{flag}'")),
            "{case}: {line}"
        );
        assert!(line.contains("cannot be negative"), "{case}: {line}");
        assert!(!line.contains("unexpected argument"), "{case}: {line}");
    }
    // A forgotten value is still said as such.
    assert_usage_error(
        &tcplab(&db, &["bench", "tcp-stream", "--duration", "--bytes", "1M"]),
        "--duration",
    );
    assert!(!db.exists(), "a refused command created the database");
}

#[test]
fn bash_completion_knows_every_command_and_bash_accepts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let script = stdout_of(&tcplab(&db, &["completions", "bash"]));
    for name in subcommands(&db) {
        assert!(script.contains(&name), "bash completion lacks {name}");
    }
    assert!(script.contains("--write-size"), "no factor flags");
    let path = dir.path().join("tcplab.bash");
    std::fs::write(&path, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    for shell in ["zsh", "fish"] {
        assert!(!stdout_of(&tcplab(&db, &["completions", shell])).is_empty());
    }
    assert_usage_error(
        &tcplab(&db, &["completions", "tcsh"]),
        "invalid value 'tcsh'",
    );
    assert!(!db.exists(), "completions created the database");
}

#[test]
fn the_man_page_renders_and_names_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let page = dir.path().join("tcplab.1");
    std::fs::write(&page, stdout_of(&tcplab(&db, &["man"]))).unwrap();
    // man -l where man is installed, else groff.
    let rendered = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .or_else(|_| {
            Command::new("groff")
                .args(["-man", "-Tutf8"])
                .arg(&page)
                .output()
        })
        .expect("man or groff (scripts/setup-debian installs them)");
    assert!(rendered.status.success());
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(text.contains("SUBCOMMANDS"), "{text}");
    for name in subcommands(&db).iter().filter(|n| *n != "help") {
        assert!(
            text.contains(&format!("tcplab-{name}")),
            "man page lacks {name}"
        );
    }
    // --out-dir: one page per command, for packagers.
    let out = dir.path().join("man");
    assert_success(&tcplab(&db, &["man", "--out-dir", out.to_str().unwrap()]));
    for page in ["tcplab.1", "tcplab-bench.1", "tcplab-runs-delete.1"] {
        assert!(out.join(page).is_file(), "no {page}");
    }
    let bench = std::fs::read_to_string(out.join("tcplab-bench.1")).unwrap();
    assert!(
        bench.contains("write\\-size"),
        "bench page lacks its factor flags"
    );
}

#[test]
fn runs_delete_removes_everything_of_the_runs_and_refuses_unknown_ids() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let first = tiny_run(&db);
    let second = tiny_run(&db);
    // Probe records and CPU samples hang off trials: store one of each for
    // the first run's trial, as a probed run would.
    let conn = Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO trial_events (trial_id, version, record_size, count, data)
         SELECT id, 1, 64, 1, zeroblob(64) FROM trials WHERE run_id = ?1",
        [first],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO trial_profiles (trial_id, version, samples, json)
         SELECT id, 1, 0, '{}' FROM trials WHERE run_id = ?1",
        [first],
    )
    .unwrap();
    drop(conn);
    let rows_of = |run: i64| {
        [
            format!("SELECT COUNT(*) FROM runs WHERE id = {run}"),
            format!("SELECT COUNT(*) FROM points WHERE run_id = {run}"),
            format!("SELECT COUNT(*) FROM trials WHERE run_id = {run}"),
            "SELECT COUNT(*) FROM metrics WHERE trial_id NOT IN (SELECT id FROM trials)".to_string(),
            "SELECT COUNT(*) FROM trial_events WHERE trial_id NOT IN (SELECT id FROM trials)"
                .to_string(),
            "SELECT COUNT(*) FROM trial_profiles WHERE trial_id NOT IN (SELECT id FROM trials)"
                .to_string(),
            format!(
                "SELECT COUNT(*) FROM trial_events e JOIN trials t ON t.id = e.trial_id WHERE t.run_id = {run}"
            ),
        ]
        .iter()
        .map(|sql| count(&db, sql))
        .collect::<Vec<i64>>()
    };
    assert_eq!(rows_of(first), [1, 1, 1, 0, 0, 0, 1]);

    // An unknown id among known ones: one line, exit 2, nothing deleted.
    let out = tcplab(&db, &["runs", "delete", &first.to_string(), "999"]);
    assert_usage_error(&out, "no run with id 999");
    assert_eq!(rows_of(first), [1, 1, 1, 0, 0, 0, 1]);
    assert_usage_error(&tcplab(&db, &["runs", "delete", "x"]), "invalid run \"x\"");

    let out = stdout_of(&tcplab(&db, &["runs", "delete", &first.to_string()]));
    assert!(
        out.contains(&format!("deleted run {first} (tcp-stream"))
            && out.contains("1 trials")
            && out.contains("probe data of 1 trials"),
        "{out}"
    );
    assert_eq!(rows_of(first), [0, 0, 0, 0, 0, 0, 0]);
    // The other run is whole.
    assert_eq!(rows_of(second)[..3], [1, 1, 1]);
    let left = json_of(&tcplab(&db, &["runs", "--json"]));
    assert_eq!(left.as_array().unwrap().len(), 1);

    let deleted = json_of(&tcplab(&db, &["runs", "delete", "latest", "--json"]));
    assert_eq!(deleted[0]["id"].as_i64(), Some(second), "{deleted}");
    assert_eq!(deleted[0]["trials"], 1);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM runs"), 0);
    assert_eq!(count(&db, "SELECT COUNT(*) FROM metrics"), 0);
}

#[test]
fn json_on_every_command_that_prints_results() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let first = tiny_run(&db);
    let second = tiny_run(&db);

    let runs = json_of(&tcplab(&db, &["runs", "--json"]));
    let newest = &runs[0];
    assert_eq!(newest["id"].as_i64(), Some(second), "{runs}");
    assert_eq!(newest["kind"], "tcp-stream");
    assert_eq!(newest["status"], "completed");
    assert_eq!(newest["trials_ok"], 1);
    assert!(newest["started_at"].is_string());

    let cmp = json_of(&tcplab(
        &db,
        &["compare", &first.to_string(), &second.to_string(), "--json"],
    ));
    assert_eq!(cmp["metric"], "throughput_bps");
    assert_eq!(cmp["baseline_run"].as_i64(), Some(first));
    let row = &cmp["rows"][0]["runs"];
    assert_eq!(row.as_array().unwrap().len(), 2, "{cmp}");
    assert!(row[0]["mean"].as_f64().unwrap() > 0.0);
    assert_eq!(row[0]["ratio_to_first"].as_f64(), Some(1.0));
    assert!(row[1]["ratio_to_first"].as_f64().unwrap() > 0.0);
    // With --out and --json, stdout is still one JSON document.
    let html = dir.path().join("cmp.html");
    json_of(&tcplab(
        &db,
        &[
            "compare",
            "1",
            "2",
            "--json",
            "--out",
            html.to_str().unwrap(),
        ],
    ));

    let other = dir.path().join("other.db");
    let imported = json_of(&tcplab(&other, &["import", db.to_str().unwrap(), "--json"]));
    assert_eq!(imported["imported"], 2, "{imported}");
    assert_eq!(imported["already_here"], 0);
    assert_eq!(imported["runs"][0]["outcome"], "imported");
    assert!(imported["runs"][0]["run"].as_i64().is_some());
    let again = json_of(&tcplab(&other, &["import", db.to_str().unwrap(), "--json"]));
    assert_eq!(again["already_here"], 2, "{again}");
    assert_eq!(again["runs"][1]["outcome"], "already_here");

    let plan = json_of(&tcplab(&db, &["study", "abrams91", "--plan", "--json"]));
    let experiments = plan["studies"][0]["experiments"].as_array().unwrap();
    assert_eq!(plan["studies"][0]["study"], "abrams91");
    assert!(!experiments.is_empty());
    for e in experiments {
        assert!(e["points"].as_u64().unwrap() > 0, "{e}");
        assert!(
            e["command"].as_str().unwrap().starts_with("tcplab bench "),
            "{e}"
        );
    }

    // Those that had it already.
    assert!(json_of(&tcplab(&db, &["lab", "show", "--json"])).is_array());
    let profiles = json_of(&tcplab(&db, &["lab", "profiles", "--json"]));
    let ether10 = profiles
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "ether10")
        .unwrap();
    assert_eq!(ether10["link"]["rate_bps"], 10_000_000, "{ether10}");
    assert_eq!(
        json_of(&tcplab(&db, &["show", "latest", "--json"]))["run_id"].as_i64(),
        Some(second)
    );
}

#[test]
fn quiet_bench_draws_no_progress_even_on_a_terminal() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    // The progress bar is drawn only on a terminal: run under `script`,
    // which gives the command one.
    let (_dir, db) = temp_db();
    let bench = |extra: &str| {
        let cmd = format!(
            "{} --db {} bench tcp-stream --bytes 64K --repeat 2 {extra}",
            assert_cmd::cargo::cargo_bin("tcplab").display(),
            db.display()
        );
        let out = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .expect("script (util-linux)");
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = bench("");
    assert!(
        shown.contains("/2 trials"),
        "no progress bar on a terminal: {shown}"
    );
    let quiet = bench("--quiet");
    assert!(
        !quiet.contains("/2 trials"),
        "progress with --quiet: {quiet}"
    );
    assert!(quiet.contains("stored as run 2"), "{quiet}");
    // Without a terminal, --quiet leaves stderr empty.
    let out = tcplab_command(&db)
        .args([
            "bench",
            "tcp-stream",
            "--bytes",
            "64K",
            "--repeat",
            "1",
            "-q",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_success(&out);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn quiet_calibration_prints_no_progress() {
    // A calibration keeps the CPUs busy: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let out = tcplab(&db, &["calibrate", "--quick", "--quiet"]);
    assert_success(&out);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("host profile 1:"));
    // --quiet is also a flag of study (checked here without running one).
    assert_success(&tcplab(&db, &["study", "abrams91", "--plan", "--quiet"]));
}

#[test]
fn a_closed_pipe_ends_a_printing_command_quietly() {
    // `tcplab completions bash | head -1`: the reader is gone before the
    // first write. The command ends as cat would (SIGPIPE), never with a
    // panic's backtrace on stderr.
    use std::os::fd::FromRawFd;
    use std::os::unix::process::ExitStatusExt;
    let (_dir, db) = temp_db();
    // The pipe's read end is closed before the child starts, so its first
    // write fails however fast it runs (with a piped stdout dropped after
    // spawn, a fast child could write all of it into the pipe first).
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two descriptors to write.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: fds[0] is the pipe's read end, ours to close.
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] is the pipe's write end, owned by the File from here.
    let writer = unsafe { std::fs::File::from_raw_fd(fds[1]) };
    let child = tcplab_command(&db)
        .args(["completions", "bash"])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}
