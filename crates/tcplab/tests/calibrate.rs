//! `tcplab calibrate` through the binary: a quick calibration stores a
//! profile with plausible figures, later runs reference it, and bad input
//! is refused with one line.

mod common;

use common::{assert_success, json_of, tcplab, temp_db, usage_error_line};
use rusqlite::Connection;

#[test]
fn a_quick_calibration_is_stored_and_referenced_by_later_runs() {
    // The calibration times copies, checksums and context switches, and
    // compares them: one timed test at a time, and the figures of a run
    // that others left alone (the last one stored, so `latest` is it).
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    let q = testkit::until_quiet("calibration", testkit::QuietLimits::default(), &[], || {
        json_of(&tcplab(&db, &["calibrate", "--quick", "--json"]))
    });
    eprintln!("calibration: {}", q.describe());
    let v = q.value;
    let id = v["id"].as_i64().unwrap();
    let med = |k: &str| v[k]["median"].as_f64().unwrap();
    // Plausible ranges on any host this runs on, and relations that hold.
    assert!(med("copy_cache") > 1e9 && med("copy_dram") > 1e8, "{v}");
    assert!(med("copy_cache") >= 0.8 * med("copy_dram"), "{v}");
    assert!(med("checksum_fast") > med("checksum_rfc1071"), "{v}");
    // The 4 KiB-aliased copy is measured on every host; only some CPUs
    // slow down there, so just its presence and a sane rate are asserted.
    assert!(med("copy_cache_aliased") > 1e8, "{v}");
    assert_eq!(v["copy_cache_aliased"]["n"], 3);
    assert!((1e-8..1e-4).contains(&med("null_syscall")), "{v}");
    assert!((1e-7..1e-3).contains(&med("context_switch")), "{v}");
    // The switch alone: the ping-pong minus the pipe's own cost, positive
    // and below the ping-pong figure it came from.
    let net = v["context_switch_net"]["median"].as_f64().unwrap();
    assert!(net > 0.0 && net < med("context_switch"), "{v}");
    assert!(med("cpu_score") > 1.0, "{v}");
    assert_eq!(v["cpu_score"]["n"], 3);
    // --show latest reads the same profile back.
    let shown = json_of(&tcplab(&db, &["calibrate", "--show", "latest", "--json"]));
    assert_eq!(shown["id"].as_i64(), Some(id));
    assert_eq!(shown["cpu_score"], v["cpu_score"]);
    // A run made afterwards references it.
    let run = json_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--bytes",
            "1M",
            "--repeat",
            "1",
            "--json",
        ],
    ));
    let run_id = run["run_id"].as_i64().unwrap();
    let conn = Connection::open(&db).unwrap();
    let referenced: Option<i64> = conn
        .query_row(
            "SELECT host_profile_id FROM runs WHERE id = ?1",
            [run_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(referenced, Some(id));
    let shown = json_of(&tcplab(&db, &["show", &run_id.to_string(), "--json"]));
    assert_eq!(shown["host_profile_id"].as_i64(), Some(id), "{shown}");
    // And its report shows the profile.
    let html = dir.path().join("r.html");
    let out = tcplab(
        &db,
        &[
            "report",
            &run_id.to_string(),
            "--out",
            html.to_str().unwrap(),
        ],
    );
    assert_success(&out);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(
        text.contains(&format!("Host profile {id}")),
        "no profile in the report"
    );
}

#[test]
fn unknown_profiles_are_bad_input() {
    let (_dir, db) = temp_db();
    for which in ["99", "x", "latest"] {
        let out = tcplab(&db, &["calibrate", "--show", which]);
        usage_error_line(&out, which);
    }
}
