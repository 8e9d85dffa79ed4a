//! `tcplab report` and `tcplab compare` through the binary: a real sweep
//! becomes one self-contained HTML file with its data beside it, which
//! Debian's Chromium renders headless (screen and print).

mod common;

use common::browser::{assert_rendered, assert_self_contained, attr_values, render};
use common::{assert_usage_error, json_of, stdout_of, tcplab, tcplab_command, temp_db};
use report::format::column;
use report::Unit;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A small real sweep: two write sizes, two trials each.
fn sweep(db: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "bench",
        "tcp-stream",
        "--write-size",
        "1K,64K",
        "--bytes",
        "2M",
        "--repeat",
        "2",
        "--json",
    ];
    args.extend_from_slice(extra);
    json_of(&tcplab(db, &args))
}

#[test]
fn report_of_a_sweep_is_self_contained_and_renders() {
    // Real transfers (and a headless browser): not beside a timed test.
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    let doc = sweep(&db, &[]);
    let run = doc["run_id"].as_i64().unwrap();
    let page = dir.path().join("sweep.html");
    let out = tcplab(&db, &["report", "latest", "--out", page.to_str().unwrap()]);
    let text = stdout_of(&out);
    // The terminal summary, then where the report went.
    assert!(
        text.starts_with(&format!("tcplab run {run}: tcp-stream")),
        "{text}"
    );
    assert!(
        text.contains("\nResults\n") && text.contains("Figures"),
        "{text}"
    );
    assert!(
        text.contains(&format!("report: {}", page.display())),
        "{text}"
    );

    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html, 2);
    // The table holds each point's throughput as mean ± CI, formatted as
    // the report formats a column.
    let pts = doc["points"].as_array().unwrap();
    let vals: Vec<(f64, Option<f64>)> = pts
        .iter()
        .map(|p| {
            let m = &p["metrics"]["throughput_bps"];
            (m["mean"].as_f64().unwrap(), m["ci95"].as_f64())
        })
        .collect();
    let (unit, cells) = column(&vals, Unit::Si("bit/s"));
    assert!(
        html.contains(&format!("throughput ({unit})")),
        "unit {unit}"
    );
    for c in &cells {
        assert!(c.contains(" ± "), "{c}");
        // Two trials whose CI is wider than their mean carry the
        // small-sample mark.
        assert!(
            html.contains(&format!("<td class=\"num\">{c}</td>"))
                || html.contains(&format!("<td class=\"num\">{c} ‡</td>")),
            "{c} not in the table"
        );
        assert!(text.contains(c.as_str()), "{c} not in the summary");
    }
    // The command under Parameters wraps only between flag groups: each
    // flag with its value in one span the page keeps on one line.
    let write_size = "<span class=\"arg\">--write-size 1K,64K</span>";
    assert!(html.contains(write_size), "no flag group in the command");
    assert!(html.contains("code.cmd .arg { white-space: nowrap; }"));
    for needle in [
        "Throughput against write size",
        "Bytes per CPU second against write size",
        "This host:",
        "Host",
        "net.ipv4.tcp_rmem",
        "Parameters",
        "href=\"sweep.csv\"",
        "href=\"sweep.json\"",
    ] {
        assert!(html.contains(needle), "{needle} missing");
    }
    // Each figure links the values it plots (a CSV of its own) and the
    // run's CSV; every relative link names a file written beside the page.
    let figures = html.matches("<figure id=").count();
    assert_eq!(html.matches("class=\"fig-data\"").count(), figures);
    assert!(html.contains("<a href=\"sweep.fig1.csv\">sweep.fig1.csv</a>"));
    for href in attr_values(&html, "href") {
        if !href.starts_with('#') {
            assert!(dir.path().join(&href).exists(), "{href} not written");
        }
    }
    let fig1 = std::fs::read_to_string(dir.path().join("sweep.fig1.csv")).unwrap();
    assert!(fig1.starts_with("series,"), "{fig1}");
    assert_eq!(fig1.lines().count(), 1 + 2, "two write sizes: {fig1}");
    // The data beside it: the CSV has one row per trial, the JSON every trial.
    let csv = std::fs::read_to_string(dir.path().join("sweep.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 1 + 4, "{csv}");
    assert!(rows[0].starts_with("run_id,point,seq"));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap())
            .unwrap();
    assert_eq!(json["run_id"].as_i64(), Some(run));
    assert_eq!(json["trials"].as_array().unwrap().len(), 4);
    assert_eq!(json["points"].as_array().unwrap().len(), 2);

    // The default name, in the current directory.
    let cwd = tempfile::tempdir().unwrap();
    let out = tcplab_command(&db)
        .args(["report", &run.to_string()])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    stdout_of(&out);
    for ext in ["html", "csv", "json"] {
        assert!(cwd.path().join(format!("tcplab-run-{run}.{ext}")).exists());
    }

    if let Some(r) = render(&page, dir.path()) {
        assert_rendered(&r, 2);
        assert!(r.dom.contains(write_size), "the flag group in the DOM");
        println!("screenshot: {}", r.png.display());
        // Keep the pictures for a human to look at when asked to.
        if let Ok(keep) = std::env::var("TCPLAB_KEEP_RENDER") {
            let keep = PathBuf::from(keep);
            std::fs::create_dir_all(&keep).unwrap();
            std::fs::copy(&r.png, keep.join("sweep.png")).unwrap();
            std::fs::copy(&r.pdf, keep.join("sweep.pdf")).unwrap();
            std::fs::copy(&page, keep.join("sweep.html")).unwrap();
        }
    }
}

#[test]
fn probed_run_report_has_path_and_cpu_figures() {
    if !(testkit::need_root("--probe needs root; the probe part of the report is not tested")
        && testkit::need_path("/sys/kernel/btf/vmlinux", "kernel BTF for the CO-RE probes"))
    {
        return;
    }
    // The CPU samples a share claim needs come from the CPU time the
    // trials got: one timed test at a time, and the report of a run that
    // others left alone (the newest: `latest`).
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    let q = testkit::until_quiet(
        "a probed sweep",
        testkit::QuietLimits::default(),
        &[],
        || {
            let out = tcplab(
                &db,
                &[
                    "bench",
                    "tcp-stream",
                    "--write-size",
                    "1K,64K",
                    // Long enough for the 1,000 CPU samples a side's share
                    // needs (10 kHz): a 2 MB transfer drew a few dozen, and
                    // 0.4 s trials left the figure's trials short of them once
                    // in CI, with the other report tests running beside this
                    // one.
                    "--duration",
                    "1s",
                    "--repeat",
                    "2",
                    "--probe",
                    "all",
                    "--json",
                ],
            );
            json_of(&out);
        },
    );
    eprintln!("a probed sweep: {}", q.describe());
    let page = dir.path().join("probed.html");
    let text = stdout_of(&tcplab(
        &db,
        &["report", "latest", "--out", page.to_str().unwrap()],
    ));
    assert!(text.contains("Probes: the path of one trial"), "{text}");
    assert!(text.contains("CPU: where the time went"), "{text}");
    // A share claim from enough samples (which layer, or that none leads
    // beyond the CIs), not "n/a" for every side.
    assert!(
        [
            "most CPU time in",
            "all CPU time in",
            "no single layer took the most CPU time",
            "the largest share of CPU time was"
        ]
        .iter()
        .any(|c| text.contains(c)),
        "{text}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    // Throughput, bytes/CPU-s, time–sequence, hop histogram, CPU shares.
    assert_self_contained(&html, 5);
    for needle in [
        "Time–sequence of flow",
        "Per-hop delay histogram",
        "CPU time per layer, sender and receiver",
        "Delay of each hop along the path",
        "CPU cost per side",
    ] {
        assert!(html.contains(needle), "{needle} missing");
    }
    if let Some(r) = render(&page, dir.path()) {
        assert_rendered(&r, 5);
        if let Ok(keep) = std::env::var("TCPLAB_KEEP_RENDER") {
            let keep = PathBuf::from(keep);
            std::fs::create_dir_all(&keep).unwrap();
            std::fs::copy(&r.png, keep.join("probed.png")).unwrap();
            std::fs::copy(&page, keep.join("probed.html")).unwrap();
        }
    }
}

#[test]
fn compare_puts_runs_side_by_side() {
    // Real transfers (and a headless browser): not beside a timed test.
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    let a = sweep(&db, &[]);
    let b = sweep(&db, &["--nodelay"]);
    let (ra, rb) = (a["run_id"].as_i64().unwrap(), b["run_id"].as_i64().unwrap());
    let page = dir.path().join("cmp.html");
    let text = stdout_of(&tcplab(
        &db,
        &[
            "compare",
            &ra.to_string(),
            &rb.to_string(),
            "--out",
            page.to_str().unwrap(),
        ],
    ));
    // Each run's host, the fixed factor that differs, the table with ratios.
    assert!(text.contains(&format!("run {ra}: tcp-stream")), "{text}");
    assert!(text.contains("nodelay differs"), "{text}");
    assert!(text.contains(&format!("run {rb} / run {ra}")), "{text}");
    assert!(text.contains('×'), "{text}");
    for ws in ["1K", "64K"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(ws)),
            "{ws}: {text}"
        );
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert_self_contained(&html, 1);
    assert!(html.contains("Throughput against write size"));
    let csv = std::fs::read_to_string(dir.path().join("cmp.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 2 * 2, "{csv}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("cmp.json")).unwrap())
            .unwrap();
    assert_eq!(json.as_array().unwrap().len(), 2);
}

#[test]
fn bad_input_gets_one_line_and_status_2() {
    // Real transfers (and a headless browser): not beside a timed test.
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    // No database yet: a read-only command says so and creates none.
    assert_usage_error(&tcplab(&db, &["report", "latest"]), "no database at");
    assert!(!db.exists());
    json_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--bytes",
            "256K",
            "--repeat",
            "1",
            "--json",
        ],
    ));
    assert_usage_error(&tcplab(&db, &["report", "99"]), "99");
    let missing = dir.path().join("no/such/dir/r.html");
    assert_usage_error(
        &tcplab(
            &db,
            &["report", "latest", "--out", missing.to_str().unwrap()],
        ),
        "does not exist",
    );
    assert_usage_error(
        &tcplab(
            &db,
            &["report", "latest", "--out", dir.path().to_str().unwrap()],
        ),
        "is a directory",
    );
    assert!(!dir.path().join("no").exists());
    assert_usage_error(&tcplab(&db, &["compare", "1"]), "at least two runs");
    assert_usage_error(&tcplab(&db, &["compare", "1", "7"]), "7");
    assert_eq!(tcplab(&db, &["compare"]).status.code(), Some(2));
}
