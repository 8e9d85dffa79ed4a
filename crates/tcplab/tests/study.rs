//! `tcplab study` through the binary: every study's plan passes the bench
//! parser, bad names are refused with one line, and `study all --quick`
//! runs every study for real, stores each as one run and writes their
//! reports and an index page linking them; `study NAME --json` on a real
//! run says what ran and what was written.

mod common;

use common::browser::{assert_rendered, assert_self_contained, attr_values, render};
use common::{assert_success, json_of, tcplab, temp_db, usage_error_line};
use record::{HostFacts, HostProfile, Measured, Store, HOST_PROFILE_VERSION};
use rusqlite::Connection;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn every_study_plan_is_valid_bench_input() {
    let (_dir, db) = temp_db();
    for quick in [true, false] {
        let mut args = vec!["study", "all", "--plan"];
        if quick {
            args.push("--quick");
        }
        let out = tcplab(&db, &args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_success(&out);
        for id in [
            "write-size-tcp-fast",
            "load-file-tcp",
            "mismatch",
            "cpu-speed",
            "sockbuf-4k",
            "stop-and-wait",
            "mss-blocks",
            "routes",
            "layer-rate",
            "implementations",
        ] {
            assert!(text.contains(id), "{id} missing from the plan:\n{text}");
        }
        for study in [
            "abrams91",
            "markatos02",
            "huang-chen",
            "sunos-ipc",
            "openlink92",
        ] {
            assert!(text.contains(&format!("study {study}:")), "{study}: {text}");
        }
    }
    // Planning stores nothing.
    assert!(!db.exists() || tcplab(&db, &["runs"]).stdout.is_empty());
}

/// `study all --plan` at every place `--topology` takes (the lab's bare
/// topologies and every link profile), quick and full, through the bench
/// parser: each plan is valid, and a place without a link profile lists
/// the experiments that need one as left out, with why.
#[test]
fn every_study_plans_at_every_place_the_studies_take() {
    let (_dir, db) = temp_db();
    let places: Vec<String> = ["loopback", "veth", "router"]
        .iter()
        .map(|s| s.to_string())
        .chain(lab::link::profiles().iter().map(|p| p.name.to_string()))
        .collect();
    for place in &places {
        for quick in [true, false] {
            let mut args = vec!["study", "all", "--plan", "--topology", place];
            if quick {
                args.push("--quick");
            }
            let out = tcplab(&db, &args);
            assert_success(&out);
            let text = String::from_utf8_lossy(&out.stdout);
            let bare = ["loopback", "veth", "router"].contains(&place.as_str());
            assert_eq!(
                text.contains("sockbuf-delay-4k   left out: --topology"),
                bare,
                "{place}: {text}"
            );
            assert_eq!(
                text.contains("timeline-paced     left out: --topology"),
                bare,
                "{place}: {text}"
            );
        }
    }
    // The JSON plan says the same.
    let plan = json_of(&tcplab(
        &db,
        &[
            "study",
            "sunos-ipc",
            "--quick",
            "--topology",
            "loopback",
            "--plan",
            "--json",
        ],
    ));
    let skipped = plan["studies"][0]["skipped"].as_array().unwrap();
    let no_link = skipped
        .iter()
        .filter(|k| {
            k["reason"]
                .as_str()
                .unwrap()
                .starts_with("--topology loopback has no link profile")
        })
        .count();
    assert_eq!(no_link, 5, "{plan:#}");
    // Offloads are never switched on the host's own loopback: the queue
    // experiments are left out too, and said why.
    assert!(
        skipped.iter().any(|k| k["id"] == "queues"
            && k["reason"]
                .as_str()
                .unwrap()
                .contains("changes a place's namespaces (--offload)")),
        "{plan:#}"
    );
    // huang-chen keeps only its experiments on tcplab's stack there (its
    // own place, not the host's loopback); the Linux ones are left out,
    // each with why. (A study with nothing left is refused in one line:
    // study_cmd's unit test.)
    let plan = json_of(&tcplab(
        &db,
        &[
            "study",
            "huang-chen",
            "--quick",
            "--topology",
            "loopback",
            "--plan",
            "--json",
        ],
    ));
    let ids: Vec<&str> = plan["studies"][0]["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "checksum-stack",
            "checksum-offload-stack",
            "ack-stack",
            "checksum-ack-stack",
            "routes-stack"
        ],
        "{plan:#}"
    );
    assert_eq!(
        plan["studies"][0]["skipped"].as_array().unwrap().len(),
        5,
        "{plan:#}"
    );
}

#[test]
fn unknown_studies_and_bad_places_are_bad_input() {
    let (_dir, db) = temp_db();
    for args in [
        vec!["study", "nope"],
        vec![
            "study",
            "abrams91",
            "--quick",
            "--topology",
            "nowhere",
            "--plan",
        ],
    ] {
        let out = tcplab(&db, &args);
        usage_error_line(&out, &format!("{args:?}"));
    }
    // A place with a space is named as a place, not split into the bench
    // commands the plan is written as.
    for place in ["lan 100", " "] {
        let out = tcplab(&db, &["study", "markatos02", "--topology", place, "--plan"]);
        let line = usage_error_line(&out, place);
        assert!(
            line.contains("unknown topology") && line.contains(place),
            "{line}"
        );
    }
}

/// A made-up host profile of this host, so that a study starts without
/// calibrating first.
fn store_a_host_profile(db: &Path) {
    let m = |v: f64, unit: &str| Measured {
        median: v,
        mean: v,
        ci95: v * 0.01,
        n: 5,
        unit: unit.into(),
    };
    let host = HostFacts::collect();
    let p = HostProfile {
        version: HOST_PROFILE_VERSION,
        created_at: "2026-01-01T00:00:00Z".into(),
        hostname: host.hostname,
        cpu_model: host.cpu_model,
        cores: host.cores,
        kernel: host.kernel,
        quick: true,
        copy_cache: m(20e9, "B/s"),
        copy_cache_aliased: None,
        copy_dram: m(8e9, "B/s"),
        checksum_rfc1071: m(2e9, "B/s"),
        checksum_fast: m(10e9, "B/s"),
        null_syscall: m(100e-9, "s"),
        context_switch: m(2e-6, "s"),
        pipe_overhead: m(1e-6, "s"),
        context_switch_net: None,
        cpu_score: m(1e8, "1"),
    };
    Store::open(db).unwrap().add_host_profile(&p).unwrap();
}

/// `study NAME --json` on a real run (not `--plan`): interrupted after its
/// first trial, it still prints what ran (the run, its status) and what
/// was written (the report and its data files), each file there.
#[test]
fn a_real_study_run_prints_what_ran_and_what_was_written_as_json() {
    if !testkit::need_root("studies build namespaces and need root") {
        return;
    }
    // A real study runs real transfers in places: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    store_a_host_profile(&db);
    let out_dir = dir.path().join("reports");
    let lab_before = common::lab_resources();
    let child = common::tcplab_command(&db)
        .args(["study", "sunos-ipc", "--quick", "--json", "-q", "--out"])
        .arg(&out_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let trials = || {
        Connection::open(&db)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM trials", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0)
    };
    while trials() < 1 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no trial completed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Interrupted (status 130), it still prints its JSON.
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run: i64 = Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT id FROM runs WHERE kind = 'study:sunos-ipc'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let studies = doc["studies"].as_array().unwrap();
    assert_eq!(studies.len(), 1, "{doc}");
    let s = &studies[0];
    assert_eq!(s["study"], "sunos-ipc", "{doc}");
    assert_eq!(s["run"], run, "{doc}");
    assert_eq!(s["status"], "interrupted", "{doc}");
    assert!(s["findings"].as_u64().is_some(), "{doc}");
    let report = s["report"].as_str().unwrap();
    assert!(
        report.ends_with(&format!("sunos-ipc-run-{run}.html")),
        "{doc}"
    );
    assert!(Path::new(report).exists(), "{report} not written");
    let data = s["data"].as_array().unwrap();
    assert!(!data.is_empty(), "{doc}");
    for f in data {
        let f = f.as_str().unwrap();
        assert!(Path::new(f).exists(), "{f} not written");
    }
    // One study: no index page.
    assert!(doc["index"].is_null(), "{doc}");
    assert!(doc["elapsed_s"].as_f64().unwrap() > 0.0, "{doc}");
    // The places it built are gone (what others have up is theirs).
    let left = common::lab_left_behind(&lab_before);
    assert!(left.is_empty(), "left behind: {left:?}");
    eprintln!(
        "study sunos-ipc --json took {:.0} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn study_all_quick_runs_every_study_into_reports_and_an_index() {
    if !testkit::need_root("studies build namespaces and need root") {
        return;
    }
    // A real study runs real transfers in places: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    let out_dir = dir.path().join("reports");
    let lab_before = common::lab_resources();
    let t0 = Instant::now();
    let out = tcplab(
        &db,
        &[
            "study",
            "all",
            "--quick",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    let secs = t0.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {:?}\n{}\n{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("study all --quick took {secs:.0} s");
    // One run per study, each holding every experiment's points.
    let conn = Connection::open(&db).unwrap();
    let kinds: Vec<(i64, String, String)> = conn
        .prepare("SELECT id, kind, status FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let names: Vec<&str> = kinds.iter().map(|k| k.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "study:abrams91",
            "study:markatos02",
            "study:huang-chen",
            "study:sunos-ipc",
            "study:openlink92"
        ]
    );
    assert!(kinds.iter().all(|k| k.2 == "completed"), "{kinds:?}");
    let index = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    for (id, name, _) in &kinds {
        let study = name.trim_start_matches("study:");
        let file = format!("{study}-run-{id}.html");
        assert!(index.contains(&file), "index does not link {file}");
        let page = out_dir.join(&file);
        let html = std::fs::read_to_string(&page).unwrap();
        assert_self_contained(&html, 2);
        // Every figure links the values it plots and the run's CSV, and
        // every relative link of the page names a file written beside it.
        let figures = html.matches("<figure id=").count();
        assert!(figures >= 2, "{file}: {figures} figures");
        assert_eq!(
            html.matches("class=\"fig-data\"").count(),
            figures,
            "{file}"
        );
        for href in attr_values(&html, "href") {
            if !href.starts_with('#') {
                assert!(
                    out_dir.join(&href).exists(),
                    "{file} links {href}, not written"
                );
            }
        }
        // Each study ends with its verdict.
        assert!(html.contains("Verdict: what limits TCP/IP here"), "{file}");
        // Rendered by a real browser: the DOM holds the figures, and it
        // screenshots and prints.
        let shots = dir.path().join(format!("render-{study}"));
        std::fs::create_dir_all(&shots).unwrap();
        if let Some(r) = render(&page, &shots) {
            assert_rendered(&r, 2);
        }
        for suffix in ["csv", "json"] {
            let data = out_dir.join(format!("{study}-run-{id}.{suffix}"));
            assert!(data.exists(), "{} missing", data.display());
        }
    }
    // Computed findings reach the terminal summary.
    assert!(
        stdout.contains("TCP throughput rises")
            || stdout.contains("TCP throughput does not change")
    );
    assert!(
        stdout.contains("MB per CPU-second")
            || stdout.contains("MB per sender CPU-second does not differ")
            || stdout.contains("moves most data per CPU-second")
    );
    assert!(stdout.contains("On veth, throughput") && stdout.contains("with socket buffer size"));
    assert!(
        stdout.contains("packets/s at 64-byte frames"),
        "openlink92's layer findings"
    );
    assert!(
        stdout.contains("route lookup") || stdout.contains("looks its route up"),
        "huang-chen's routes"
    );
    // Another host's markatos02 run, brought in from its JSON export (here
    // this host's own run relabelled, CPU score halved), joins the mileage
    // and scaling plots when the report is written again.
    let markatos = kinds[1].0.to_string();
    let export = tcplab(&db, &["export", &markatos, "--format", "json"]);
    let mut doc: serde_json::Value = json_of(&export);
    assert!(doc["host_profile"]["cpu_score"]["median"].as_f64().unwrap() > 0.0);
    doc["host"]["hostname"] = "elsewhere".into();
    doc["host_profile"]["hostname"] = "elsewhere".into();
    let score = doc["host_profile"]["cpu_score"]["median"].as_f64().unwrap();
    doc["host_profile"]["cpu_score"]["median"] = (score / 2.0).into();
    let other = dir.path().join("elsewhere.json");
    std::fs::write(&other, doc.to_string()).unwrap();
    let imp = tcplab(&db, &["import", other.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&imp.stdout);
    assert!(imp.status.success() && said.contains("imported"), "{said}");
    let again = tcplab(&db, &["import", other.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already here"));
    let page = dir.path().join("markatos-joined.html");
    let rep = tcplab(&db, &["report", &markatos, "--out", page.to_str().unwrap()]);
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("elsewhere (imported)"),
        "the other host's row"
    );
    assert!(html.contains("MB per sender CPU-second against CPU score, by host"));
    // Markatos' model predicted for each host from its own measurements
    // (nothing fitted across hosts), then whether one C serves them all.
    assert!(
        html.contains("Markatos&#39; model predicted for each host")
            || html.contains("Markatos' model predicted for each host"),
        "the cross-host model's finding"
    );
    let shots = dir.path().join("render-joined");
    std::fs::create_dir_all(&shots).unwrap();
    if let Some(r) = render(&page, &shots) {
        assert_rendered(&r, 2);
    }
    // The places were torn down (what other runs and tests on the host
    // have up is theirs).
    let left = common::lab_left_behind(&lab_before);
    assert!(left.is_empty(), "left behind: {left:?}");
}
