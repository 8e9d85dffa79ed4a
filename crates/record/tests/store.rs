//! The SQLite store and exports against real database files.

use record::export::{run_json, trials_csv};
use record::{
    EventBlob, HostFacts, LoadSide, LoadSpec, PointRecord, RunMeta, RunStatus, Store, StoreError,
    TestKind, TrialOutcome, TrialParams, TrialRecord, TrialStatus,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn meta(seed: u64) -> RunMeta {
    let mut sysctls = BTreeMap::new();
    sysctls.insert("net.ipv4.tcp_congestion_control".into(), "cubic".into());
    RunMeta {
        id: 0,
        kind: "tcp-stream".into(),
        command: "tcplab run tcp-stream --repeat 2".into(),
        seed,
        place: "loopback".into(),
        started_at: "2024-05-01T12:00:00Z".into(),
        finished_at: None,
        status: RunStatus::Running,
        host: HostFacts {
            hostname: "box".into(),
            cores: 4,
            kernel: "6.1.0 #1 SMP".into(),
            congestion_control: "cubic".into(),
            sysctls,
            ..HostFacts::default()
        },
        settings: serde_json::json!({ "repeat": 2, "precision": null }),
        tool_version: "0.1.0".into(),
    }
}

fn point(index: u32, write_size: u64) -> PointRecord {
    let mut params = TrialParams::defaults(TestKind::TcpStream);
    params.write_size = write_size;
    if index == 1 {
        params.cc = Some("bbr".into());
        params.sndbuf = Some(65536);
        params.load = Some(LoadSpec {
            side: LoadSide::Receiver,
            workers: 2,
        });
    }
    PointRecord {
        id: 0,
        index,
        params,
        precision: None,
    }
}

fn ok_trial(point_id: i64, seq: u32, repetition: u32, throughput: f64) -> TrialRecord {
    let metrics = BTreeMap::from([
        ("throughput_bps".to_string(), throughput),
        ("delay_s".to_string(), 0.25),
        ("retransmits".to_string(), f64::NAN),
        ("loss".to_string(), f64::INFINITY),
    ]);
    TrialRecord {
        id: 0,
        point_id,
        seq,
        repetition,
        started_at: format!("2024-05-01T12:00:0{seq}Z"),
        status: TrialStatus::Ok,
        error: None,
        outcome: TrialOutcome {
            metrics,
            details: serde_json::json!({ "tcp_info": { "rtt_us": 30 } }),
            events: None,
            profile: None,
            path_summary: None,
        },
    }
}

fn failed_trial(point_id: i64, seq: u32, repetition: u32) -> TrialRecord {
    TrialRecord {
        status: TrialStatus::Failed,
        error: Some("connection refused".into()),
        outcome: TrialOutcome::default(),
        ..ok_trial(point_id, seq, repetition, 1.0)
    }
}

/// Stores a run with 2 points, 3 ok trials and 1 failed one; returns the run id.
fn populate(store: &mut Store, seed: u64) -> i64 {
    let run = store.create_run(&meta(seed)).unwrap();
    let p0 = store.add_point(run, &point(0, 4096)).unwrap();
    let p1 = store.add_point(run, &point(1, 131072)).unwrap();
    store.add_trial(run, &ok_trial(p1, 0, 0, 2.0e9)).unwrap();
    store.add_trial(run, &ok_trial(p0, 1, 0, 1.0e9)).unwrap();
    store.add_trial(run, &failed_trial(p1, 2, 1)).unwrap();
    store.add_trial(run, &ok_trial(p0, 3, 1, 1.5e9)).unwrap();
    run
}

fn db_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("nested").join("dir").join("tcplab.db")
}

#[test]
fn round_trips_a_run_through_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let run_id = {
        let mut store = Store::open(&path).unwrap();
        let run = populate(&mut store, u64::MAX - 5);
        store
            .finish_run(run, RunStatus::Interrupted, "2024-05-01T12:01:00Z")
            .unwrap();
        run
    };

    let store = Store::open(&path).unwrap();
    let run = store.load_run(run_id).unwrap();
    assert_eq!(run.meta.id, run_id);
    assert_eq!(run.meta.seed, u64::MAX - 5);
    assert_eq!(run.meta.status, RunStatus::Interrupted);
    assert_eq!(
        run.meta.finished_at.as_deref(),
        Some("2024-05-01T12:01:00Z")
    );
    assert_eq!(run.meta.host, meta(0).host);
    assert_eq!(run.meta.settings, meta(0).settings);
    assert_eq!(run.meta.command, meta(0).command);

    assert_eq!(run.points.len(), 2);
    assert_eq!(run.points[0].index, 0);
    assert_eq!(run.points[0].params, point(0, 4096).params);
    assert_eq!(run.points[1].params, point(1, 131072).params);

    let seqs: Vec<u32> = run.trials.iter().map(|t| t.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
    assert_eq!(run.trials[0].point_id, run.points[1].id);
    assert_eq!(run.trials[0].outcome.metrics["throughput_bps"], 2.0e9);
    assert_eq!(run.trials[0].outcome.details["tcp_info"]["rtt_us"], 30);
    assert_eq!(run.trials[3].repetition, 1);

    let failed = &run.trials[2];
    assert_eq!(failed.status, TrialStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some("connection refused"));
    assert!(failed.outcome.metrics.is_empty());
}

#[test]
fn a_setting_added_after_the_run_started_is_kept_beside_the_others() {
    let mut store = Store::open_in_memory().unwrap();
    let run = populate(&mut store, 1);
    let found = serde_json::json!({"converged": true, "rounds": 5});
    store
        .add_run_setting(run, "host_model_calibration", found.clone())
        .unwrap();
    let settings = store.load_run(run).unwrap().meta.settings;
    assert_eq!(settings["host_model_calibration"], found);
    // What was there stays.
    for (k, v) in meta(0).settings.as_object().unwrap() {
        assert_eq!(&settings[k], v, "{k}");
    }
    assert!(matches!(
        store.add_run_setting(99, "x", serde_json::json!(1)),
        Err(StoreError::NoSuchRun(99))
    ));
}

#[test]
fn non_finite_metrics_are_dropped() {
    let mut store = Store::open_in_memory().unwrap();
    let run = populate(&mut store, 1);
    let loaded = store.load_run(run).unwrap();
    for trial in loaded.trials.iter().filter(|t| t.status == TrialStatus::Ok) {
        let names: Vec<&str> = trial.outcome.metrics.keys().map(String::as_str).collect();
        assert_eq!(names, ["delay_s", "throughput_bps"]);
    }
}

#[test]
fn a_failed_trial_stores_no_metrics() {
    let mut store = Store::open_in_memory().unwrap();
    let run = store.create_run(&meta(1)).unwrap();
    let p = store.add_point(run, &point(0, 1)).unwrap();
    let mut trial = ok_trial(p, 0, 0, 5.0);
    trial.status = TrialStatus::Failed;
    store.add_trial(run, &trial).unwrap();
    let loaded = store.load_run(run).unwrap();
    assert!(loaded.trials[0].outcome.metrics.is_empty());
}

#[test]
fn lists_runs_newest_first_with_counts() {
    let mut store = Store::open_in_memory().unwrap();
    assert!(store.list_runs().unwrap().is_empty());
    let first = populate(&mut store, 1);
    store
        .finish_run(first, RunStatus::Completed, "2024-05-01T13:00:00Z")
        .unwrap();
    let second = store.create_run(&meta(2)).unwrap();

    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].id, second);
    assert_eq!(runs[0].status, RunStatus::Running);
    assert_eq!((runs[0].points, runs[0].trials_ok), (0, 0));
    assert_eq!(runs[1].id, first);
    assert_eq!(runs[1].status, RunStatus::Completed);
    assert_eq!(runs[1].kind, "tcp-stream");
    assert_eq!(runs[1].place, "loopback");
    assert_eq!(runs[1].points, 2);
    assert_eq!(runs[1].trials_ok, 3);
    assert_eq!(runs[1].trials_failed, 1);
}

#[test]
fn resolves_run_specs() {
    let mut store = Store::open_in_memory().unwrap();
    assert!(matches!(
        store.resolve_run("latest"),
        Err(StoreError::NoRuns)
    ));
    let a = store.create_run(&meta(1)).unwrap();
    let b = store.create_run(&meta(2)).unwrap();
    assert_eq!(store.latest_run_id().unwrap(), Some(b));
    assert_eq!(store.resolve_run("latest").unwrap(), b);
    assert_eq!(store.resolve_run(&a.to_string()).unwrap(), a);
    assert!(matches!(
        store.resolve_run("99"),
        Err(StoreError::NoSuchRun(99))
    ));
    let err = store.resolve_run("12x").unwrap_err();
    assert!(matches!(err, StoreError::BadRunSpec(ref s) if s == "12x"));
    assert_eq!(
        err.to_string(),
        "invalid run \"12x\": expected a run id or \"latest\""
    );
}

#[test]
fn missing_runs_and_points_are_reported() {
    let mut store = Store::open_in_memory().unwrap();
    assert!(matches!(store.load_run(7), Err(StoreError::NoSuchRun(7))));
    assert_eq!(
        store.load_run(7).unwrap_err().to_string(),
        "no run with id 7"
    );
    assert!(matches!(
        store.finish_run(7, RunStatus::Failed, "t"),
        Err(StoreError::NoSuchRun(7))
    ));
    assert!(matches!(
        store.add_point(7, &point(0, 1)),
        Err(StoreError::NoSuchRun(7))
    ));
    let a = store.create_run(&meta(1)).unwrap();
    let b = store.create_run(&meta(2)).unwrap();
    let pa = store.add_point(a, &point(0, 1)).unwrap();
    assert!(matches!(
        store.add_trial(b, &ok_trial(pa, 0, 0, 1.0)),
        Err(StoreError::NoSuchPoint { run, point }) if run == b && point == pa
    ));
    assert!(store.load_run(b).unwrap().trials.is_empty());
}

#[test]
fn delete_run_cascades() {
    let mut store = Store::open_in_memory().unwrap();
    let gone = populate(&mut store, 1);
    let kept = populate(&mut store, 2);
    store.delete_run(gone).unwrap();
    assert!(matches!(
        store.load_run(gone),
        Err(StoreError::NoSuchRun(_))
    ));
    assert!(matches!(
        store.delete_run(gone),
        Err(StoreError::NoSuchRun(_))
    ));
    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, kept);
    let loaded = store.load_run(kept).unwrap();
    assert_eq!(loaded.trials.len(), 4);
    assert_eq!(loaded.trials[0].outcome.metrics.len(), 2);
}

#[test]
fn reopening_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let run = populate(&mut Store::open(&path).unwrap(), 1);
    for _ in 0..3 {
        let store = Store::open(&path).unwrap();
        assert_eq!(store.list_runs().unwrap().len(), 1);
        assert_eq!(store.load_run(run).unwrap().trials.len(), 4);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, record::store::SCHEMA_VERSION as i64);
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn exports_trials_as_csv() {
    let mut store = Store::open_in_memory().unwrap();
    let run_id = populate(&mut store, 1);
    let run = store.load_run(run_id).unwrap();
    let mut out = Vec::new();
    trials_csv(&run, &mut out).unwrap();

    let mut reader = csv::Reader::from_reader(out.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(header.len(), 6 + record::FACTORS.len() + 1 + 2);
    assert_eq!(
        &header[..6],
        ["run_id", "point", "seq", "repetition", "status", "error"]
    );
    assert_eq!(header[6], "param_test");
    assert_eq!(header[13], "param_rcvlowat");
    assert_eq!(header[16], "param_quickack");
    assert_eq!(header[25], "param_load");
    assert_eq!(header[29], "param_pin");
    assert_eq!(
        &header[30..35],
        [
            "param_routes",
            "param_checksum_offload",
            "param_offload",
            "param_layer",
            "param_connect"
        ]
    );
    assert_eq!(&header[35..37], ["param_stack", "param_server_stack"]);
    assert_eq!(
        &header[37..53],
        [
            "param_delack",
            "param_sws",
            "param_nagle",
            "param_header_prediction",
            "param_checksum",
            "param_rtt_estimator",
            "param_timers",
            "param_route_table",
            "param_pcb_lookup",
            "param_route_cache",
            "param_layers",
            "param_flow_control",
            "param_account",
            "param_cpu_speed",
            "param_initial_window",
            "param_host_model"
        ]
    );
    assert_eq!(&header[53..], ["delay_s", "throughput_bps"]);

    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let first = &rows[0];
    assert_eq!(&first[col("run_id")], run_id.to_string());
    assert_eq!(&first[col("point")], "1");
    assert_eq!(&first[col("param_test")], "tcp-stream");
    assert_eq!(&first[col("param_cc")], "bbr");
    assert_eq!(&first[col("param_load")], "receiver:2");
    assert_eq!(&first[col("param_mss")], "");
    assert_eq!(&first[col("param_rcvlowat")], "", "auto is empty");
    assert_eq!(&first[col("param_nodelay")], "false");
    assert_eq!(&first[col("param_quickack")], "false");
    assert_eq!(&first[col("param_routes")], "");
    assert_eq!(&first[col("param_checksum_offload")], "true");
    assert_eq!(&first[col("throughput_bps")], "2000000000");
    let failed = &rows[2];
    assert_eq!(&failed[col("status")], "failed");
    assert_eq!(&failed[col("error")], "connection refused");
    assert_eq!(&failed[col("throughput_bps")], "");
}

#[test]
fn exports_the_raw_run_as_json() {
    let mut store = Store::open_in_memory().unwrap();
    let run_id = populate(&mut store, 1);
    let run = store.load_run(run_id).unwrap();
    let json = run_json(&run);
    assert_eq!(json["meta"]["id"], run_id);
    assert_eq!(json["points"].as_array().unwrap().len(), 2);
    assert_eq!(json["trials"].as_array().unwrap().len(), 4);
    assert_eq!(
        json["trials"][1]["outcome"]["metrics"]["throughput_bps"],
        1.0e9
    );
}

#[test]
fn probe_records_are_stored_per_trial_and_only_for_successes() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut store = Store::open(&path).unwrap();
    let run = store.create_run(&meta(7)).unwrap();
    let p = store.add_point(run, &point(0, 1460)).unwrap();
    let blob = EventBlob {
        version: 1,
        record_size: 64,
        data: (0..64 * 3).map(|i| i as u8).collect(),
    };
    let mut ok = ok_trial(p, 0, 0, 1.0e9);
    ok.outcome.events = Some(blob.clone());
    let ok_id = store.add_trial(run, &ok).unwrap();
    let mut failed = failed_trial(p, 1, 1);
    failed.outcome.events = Some(blob.clone());
    let failed_id = store.add_trial(run, &failed).unwrap();
    let plain_id = store.add_trial(run, &ok_trial(p, 2, 2, 1.0e9)).unwrap();
    drop(store);

    let store = Store::open(&path).unwrap();
    let got = store.load_events(ok_id).unwrap().expect("stored");
    assert_eq!(got, blob);
    assert_eq!(got.count(), 3);
    assert_eq!(store.load_events(failed_id).unwrap(), None);
    assert_eq!(store.load_events(plain_id).unwrap(), None);
    // Deleting the run takes its records with it.
    let mut store = store;
    store.delete_run(run).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let left: i64 = conn
        .query_row("SELECT COUNT(*) FROM trial_events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

fn profile(hostname: &str, score: f64) -> record::HostProfile {
    let m = |v: f64, unit: &str| record::Measured {
        median: v,
        mean: v,
        ci95: 0.01 * v,
        n: 3,
        unit: unit.into(),
    };
    record::HostProfile {
        version: record::HOST_PROFILE_VERSION,
        created_at: "2026-11-22T18:00:00Z".into(),
        hostname: hostname.into(),
        cpu_model: "cpu".into(),
        cores: 2,
        kernel: "6.18".into(),
        quick: true,
        copy_cache: m(1.5e11, "B/s"),
        copy_cache_aliased: Some(m(1.4e11, "B/s")),
        copy_dram: m(1.2e10, "B/s"),
        checksum_rfc1071: m(2e9, "B/s"),
        checksum_fast: m(3e10, "B/s"),
        null_syscall: m(1.2e-7, "s"),
        context_switch: m(2.2e-6, "s"),
        pipe_overhead: m(5.5e-7, "s"),
        context_switch_net: Some(m(1.65e-6, "s")),
        cpu_score: m(score, "1/s"),
    }
}

#[test]
fn profiles_stored_before_the_net_switch_time_still_load() {
    let mut v = serde_json::to_value(profile("box", 1.0)).unwrap();
    v.as_object_mut().unwrap().remove("context_switch_net");
    let old: record::HostProfile = serde_json::from_value(v).unwrap();
    assert_eq!(old.context_switch_net, None);
    assert_eq!(old.cpu_score.median, 1.0);
}

#[test]
fn runs_reference_the_newest_profile_of_their_host() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut store = Store::open(&path).unwrap();
    // Before any profile, a run references none.
    let r0 = store.create_run(&meta(1)).unwrap();
    assert_eq!(store.run_host_profile(r0).unwrap(), None);
    let old = store.add_host_profile(&profile("box", 100.0)).unwrap();
    let other = store.add_host_profile(&profile("elsewhere", 5.0)).unwrap();
    let new = store.add_host_profile(&profile("box", 200.0)).unwrap();
    assert!(old < other && other < new);
    let (id, p) = store.latest_host_profile("box").unwrap().unwrap();
    assert_eq!((id, p.cpu_score.median), (new, 200.0));
    assert_eq!(store.load_host_profile(old).unwrap(), profile("box", 100.0));
    assert!(matches!(
        store.load_host_profile(999),
        Err(StoreError::NoSuchProfile(999))
    ));
    // meta() runs on host "box": the newest profile of "box", not "elsewhere".
    let r1 = store.create_run(&meta(2)).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.run_host_profile(r1).unwrap().map(|x| x.0), Some(new));
    assert_eq!(store.run_host_profile(r0).unwrap(), None);
}

/// A database at `path` holding one run of host `hostname` made after its
/// host profile, with probe records and CPU samples on one trial.
fn foreign_database(path: &std::path::Path, hostname: &str) -> i64 {
    let mut store = Store::open(path).unwrap();
    store.add_host_profile(&profile(hostname, 42.0)).unwrap();
    let mut m = meta(9);
    m.host.hostname = hostname.into();
    let run = store.create_run(&m).unwrap();
    let p0 = store.add_point(run, &point(0, 4096)).unwrap();
    let p1 = store.add_point(run, &point(1, 65536)).unwrap();
    let mut probed = ok_trial(p1, 0, 0, 3.0e9);
    probed.outcome.events = Some(EventBlob {
        version: 1,
        record_size: 8,
        data: (0..24).collect(),
    });
    probed.outcome.profile = Some(record::CpuProfile {
        version: 1,
        period_ns: 100_000,
        clock: "cpu-clock".into(),
        cpus: 2,
        duration_s: 1.0,
        symbols: vec!["tcp_sendmsg".into()],
        threads: Vec::new(),
        stacks: Vec::new(),
        busy_s: 0.5,
        ..Default::default()
    });
    store.add_trial(run, &probed).unwrap();
    // A trial probed with --probe-keep summary: its path analysis, no records.
    let mut summarized = ok_trial(p0, 3, 2, 1.0e9);
    summarized.outcome.path_summary = Some(r#"{"records":3}"#.into());
    store.add_trial(run, &summarized).unwrap();
    store
        .set_point_precision(
            p1,
            &record::PrecisionOutcome {
                confidence: 0.95,
                target_rel_half_width: 0.05,
                reached_rel_half_width: Some(0.103),
                trials: 6,
                max_repeat: 6,
                met: false,
            },
        )
        .unwrap();
    store.add_trial(run, &ok_trial(p0, 1, 0, 1.0e9)).unwrap();
    store.add_trial(run, &failed_trial(p0, 2, 1)).unwrap();
    store
        .finish_run(run, RunStatus::Completed, "2024-05-01T12:02:00Z")
        .unwrap();
    run
}

#[test]
fn a_database_imports_whole_runs_once_with_their_host_profile() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs.db");
    foreign_database(&theirs, "elsewhere");
    let before = std::fs::read(&theirs).unwrap();
    let ours = dir.path().join("ours.db");
    let mut store = Store::open(&ours).unwrap();
    populate(&mut store, 1); // a run of our own first, so ids differ
    let foreign = Store::read_foreign_database(&theirs).unwrap();
    assert_eq!(foreign.len(), 1);
    // The source is only read.
    assert_eq!(std::fs::read(&theirs).unwrap(), before);
    let prov = serde_json::json!({ "from": "theirs.db", "run": foreign[0].run.meta.id });
    let record::ImportOutcome::Imported(id) = store.import_run(&foreign[0], prov.clone()).unwrap()
    else {
        panic!("the run was not imported")
    };
    // Importing again stores nothing new.
    assert_eq!(
        store.import_run(&foreign[0], prov).unwrap(),
        record::ImportOutcome::AlreadyPresent(id)
    );
    assert_eq!(store.list_runs().unwrap().len(), 2);
    drop(store);

    let store = Store::open(&ours).unwrap();
    let got = store.load_run(id).unwrap();
    let src = &foreign[0].run;
    assert_eq!(got.meta.host.hostname, "elsewhere");
    assert_eq!((got.meta.seed, got.meta.status), (9, RunStatus::Completed));
    assert_eq!(got.meta.settings["imported"]["from"], "theirs.db");
    assert_eq!(got.meta.settings["repeat"], 2);
    assert_eq!(got.points.len(), 2);
    assert_eq!(got.trials.len(), 4);
    let met: Vec<Option<bool>> = got
        .points
        .iter()
        .map(|p| p.precision.map(|o| o.met))
        .collect();
    assert_eq!(met, vec![None, Some(false)]);
    for (g, s) in got.trials.iter().zip(&src.trials) {
        assert_eq!((g.seq, g.status, &g.error), (s.seq, s.status, &s.error));
        assert_eq!(g.outcome.metrics, s.outcome.metrics);
        // Trials point at the imported points with the same parameters.
        let gp = got.points.iter().find(|p| p.id == g.point_id).unwrap();
        let sp = src.points.iter().find(|p| p.id == s.point_id).unwrap();
        assert_eq!((gp.index, &gp.params), (sp.index, &sp.params));
        assert_eq!(gp.precision, sp.precision);
        assert_eq!(store.load_events(g.id).unwrap(), s.outcome.events);
        assert_eq!(
            store.load_path_summary(g.id).unwrap(),
            s.outcome.path_summary
        );
        assert_eq!(
            store.load_profile(g.id).unwrap().map(|p| p.symbols),
            s.outcome.profile.clone().map(|p| p.symbols)
        );
    }
    // The run references its own host's profile, which is now here too.
    let (_, p) = store.run_host_profile(id).unwrap().expect("profile");
    assert_eq!(p, profile("elsewhere", 42.0));
    assert_eq!(
        store.latest_completed_run_per_host("tcp-stream").unwrap(),
        vec![("elsewhere".to_string(), id)]
    );
}

#[test]
fn only_tcplab_databases_import() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        Store::read_foreign_database(&missing),
        Err(StoreError::BadImport(_))
    ));
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "not sqlite at all, just some text").unwrap();
    assert!(Store::read_foreign_database(&text).is_err());
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER)")
        .unwrap();
    let e = Store::read_foreign_database(&other).unwrap_err();
    assert!(e.to_string().contains("not a tcplab database"), "{e}");
}

#[test]
fn a_json_export_imports_with_its_trials() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs.db");
    let src_id = foreign_database(&theirs, "elsewhere");
    let src = Store::open(&theirs).unwrap();
    let run = src.load_run(src_id).unwrap();
    // The export as tcplab export writes it: the raw run, flattened.
    let raw = run_json(&run);
    let mut doc = raw["meta"].clone();
    doc["run_id"] = raw["meta"]["id"].clone();
    doc["points"] = serde_json::to_value(
        run.points
            .iter()
            .map(|p| {
                serde_json::json!({
                    "index": p.index,
                    "point_id": p.id,
                    "params": p.params,
                    "precision": p.precision,
                })
            })
            .collect::<Vec<_>>(),
    )
    .unwrap();
    doc["trials"] = raw["trials"].clone();
    doc["host_profile"] = serde_json::to_value(profile("elsewhere", 42.0)).unwrap();
    let f = record::import::read_json_export(&doc.to_string()).unwrap();
    let mut store = Store::open(&dir.path().join("ours.db")).unwrap();
    let record::ImportOutcome::Imported(id) = store.import_run(&f, serde_json::json!({})).unwrap()
    else {
        panic!("not imported")
    };
    let got = store.load_run(id).unwrap();
    assert_eq!(got.trials.len(), 4);
    // Each point's precision outcome comes along.
    let met: Vec<Option<bool>> = got
        .points
        .iter()
        .map(|p| p.precision.map(|o| o.met))
        .collect();
    assert_eq!(met, vec![None, Some(false)]);
    assert_eq!(got.trials[0].outcome.metrics["throughput_bps"], 3.0e9);
    assert_eq!(
        store
            .run_host_profile(id)
            .unwrap()
            .unwrap()
            .1
            .cpu_score
            .median,
        42.0
    );
    // Without trials or point ids it is refused, naming why.
    doc.as_object_mut().unwrap().remove("trials");
    let e = record::import::read_json_export(&doc.to_string()).unwrap_err();
    assert!(e.to_string().contains("no trials"), "{e}");
    assert!(record::import::read_json_export("{}").is_err());
}

/// The status column of run `id`, read straight from the file.
fn stored_status(path: &std::path::Path, id: i64) -> String {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    c.query_row("SELECT status FROM runs WHERE id = ?1", [id], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_running_run_whose_owner_is_gone_is_killed_and_a_live_ones_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    let (live, reused, elsewhere) = {
        let mut store = Store::open(&path).unwrap();
        let ids = [(); 3].map(|()| store.create_run(&meta(1)).unwrap());
        (ids[0], ids[1], ids[2])
    };
    // This test process owns all three. Make the second's pid belong to a
    // process that started at another time (a reused pid), and the third's
    // owner run on another host.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute(
            "UPDATE runs SET owner_start_ticks = owner_start_ticks + 1 WHERE id = ?1",
            [reused],
        )
        .unwrap();
        c.execute(
            "UPDATE runs SET owner_host = 'elsewhere', owner_boot_id = 'x' WHERE id = ?1",
            [elsewhere],
        )
        .unwrap();
    }
    // Read-only: the dead owner's run reads as killed, but is not rewritten.
    {
        let ro = Store::open_read_only(&path).unwrap();
        let status = |id| ro.load_run(id).unwrap().meta.status;
        assert_eq!(status(live), RunStatus::Running);
        assert_eq!(status(reused), RunStatus::Killed);
        assert_eq!(status(elsewhere), RunStatus::Running);
        let listed: Vec<_> = ro.list_runs().unwrap().iter().map(|r| r.status).collect();
        assert_eq!(
            listed,
            [RunStatus::Running, RunStatus::Killed, RunStatus::Running]
        );
    }
    assert_eq!(stored_status(&path, reused), "running");
    // Opened for writing, the store records it.
    drop(Store::open(&path).unwrap());
    assert_eq!(stored_status(&path, reused), "killed");
    assert_eq!(stored_status(&path, live), "running");
    assert_eq!(stored_status(&path, elsewhere), "running");
}

#[test]
fn a_read_only_open_creates_nothing_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/x.db");
    match Store::open_read_only(&missing) {
        Err(StoreError::NoDatabase(p)) => assert_eq!(p, missing),
        other => panic!("expected NoDatabase, got {other:?}"),
    }
    assert!(!dir.path().join("no").exists(), "a folder was created");

    let path = dir.path().join("r.db");
    {
        let mut store = Store::open(&path).unwrap();
        let id = store.create_run(&meta(3)).unwrap();
        store
            .finish_run(id, RunStatus::Completed, "2024-05-01T12:01:00Z")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let mut ro = Store::open_read_only(&path).unwrap();
    assert_eq!(ro.list_runs().unwrap().len(), 1);
    assert!(ro.create_run(&meta(4)).is_err(), "a read-only store wrote");
    drop(ro);
    assert_eq!(std::fs::read(&path).unwrap(), before, "the file changed");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["r.db"], "no -wal or -shm is left behind");
}
