//! A study run's document built from a real SQLite store in a temp dir:
//! title, host section, the study's findings, verdict, experiments and data
//! files, following the stored data.

use crate::data::{ExperimentRecord, StudySettings, SETTINGS_KEY};
use crate::document::{document, is_study_run, load, point_range};
use crate::StudyError;
use record::probe_event::{encode_all, ProbeEvent, ProbeId, EVENT_SIZE, EVENT_VERSION};
use record::{
    EventBlob, HostFacts, HostProfile, Measured, PointRecord, RunMeta, RunStatus, Store, TestKind,
    TrialOutcome, TrialParams, TrialRecord, TrialStatus,
};
use report::{Block, Report};

const HOST: &str = "studyhost";

fn meta(kind: &str, study: &str, host: &str, experiments: Vec<ExperimentRecord>) -> RunMeta {
    let settings = StudySettings {
        study: study.into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    RunMeta {
        id: 0,
        kind: kind.into(),
        command: "tcplab study".into(),
        seed: 1,
        place: "veth".into(),
        started_at: "2024-05-01T10:00:00Z".into(),
        finished_at: None,
        status: RunStatus::Running,
        host: HostFacts {
            hostname: host.into(),
            cpu_model: "Test CPU".into(),
            ..HostFacts::default()
        },
        settings: serde_json::json!({ SETTINGS_KEY: settings }),
        tool_version: "test".into(),
    }
}

/// Stores a completed abrams91 run with one TCP write-size experiment
/// (throughput per write size, three trials at ±1%); the first trial
/// carries `events` when given. Returns the run id.
fn store_study(
    store: &mut Store,
    host: &str,
    curve: &[(u64, f64)],
    events: Option<EventBlob>,
) -> i64 {
    let experiments = vec![ExperimentRecord {
        id: "write-size-tcp-fast".into(),
        title: "TCP throughput against write size".into(),
        command: "tcplab bench tcp-stream --write-size 10,512".into(),
        first_point: 0,
        points: curve.len() as u32,
    }];
    let run = store
        .create_run(&meta("study:abrams91", "abrams91", host, experiments))
        .unwrap();
    let mut seq = 0;
    let mut events = events;
    for (index, &(write_size, bps)) in curve.iter().enumerate() {
        let mut params = TrialParams::defaults(TestKind::TcpStream);
        params.write_size = write_size;
        params.topology = "veth".into();
        let point_id = store
            .add_point(
                run,
                &PointRecord {
                    id: 0,
                    index: index as u32,
                    params,
                    precision: None,
                },
            )
            .unwrap();
        for (repetition, f) in [0.99, 1.0, 1.01].into_iter().enumerate() {
            let mut outcome = TrialOutcome {
                events: events.take(),
                ..TrialOutcome::default()
            };
            outcome.metrics.insert("throughput_bps".into(), bps * f);
            let t = TrialRecord {
                id: 0,
                point_id,
                seq,
                repetition: repetition as u32,
                started_at: String::new(),
                status: TrialStatus::Ok,
                error: None,
                outcome,
            };
            store.add_trial(run, &t).unwrap();
            seq += 1;
        }
    }
    store
        .finish_run(run, RunStatus::Completed, "2024-05-01T10:05:00Z")
        .unwrap();
    run
}

fn measured(v: f64) -> Measured {
    Measured {
        median: v,
        mean: v,
        ci95: 0.0,
        n: 3,
        unit: "s".into(),
    }
}

fn host_profile() -> HostProfile {
    HostProfile {
        version: record::HOST_PROFILE_VERSION,
        created_at: "2024-05-01T09:00:00Z".into(),
        hostname: HOST.into(),
        cpu_model: "Test CPU".into(),
        cores: 2,
        kernel: "6.1.0".into(),
        quick: true,
        copy_cache: measured(20e9),
        copy_cache_aliased: None,
        copy_dram: measured(8e9),
        checksum_rfc1071: measured(2e9),
        checksum_fast: measured(10e9),
        null_syscall: measured(1e-7),
        context_switch: measured(2e-6),
        pipe_overhead: measured(1e-6),
        context_switch_net: None,
        cpu_score: measured(1e8),
    }
}

fn findings(r: &Report) -> Vec<String> {
    r.sections
        .iter()
        .flat_map(|s| &s.blocks)
        .filter_map(|b| match b {
            Block::Finding { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

const SIZES: [u64; 5] = [10, 512, 1460, 8192, 65507];

fn curve(values: [f64; 5]) -> Vec<(u64, f64)> {
    SIZES.into_iter().zip(values).collect()
}

#[test]
fn a_study_document_assembles_host_study_verdict_and_experiments() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("tcplab.db")).unwrap();
    let profile_id = store.add_host_profile(&host_profile()).unwrap();
    let knee = store_study(
        &mut store,
        HOST,
        &curve([1e8, 2e9, 5e9, 5.02e9, 5.01e9]),
        None,
    );
    store_study(
        &mut store,
        "otherhost",
        &curve([1e8, 1e9, 2e9, 3e9, 4e9]),
        None,
    );
    assert!(is_study_run(&store, knee).unwrap());

    let doc = document(&store, knee, &["one experiment ran without probes".into()]).unwrap();
    let r = &doc.report;
    assert_eq!(r.title, "abrams91 on studyhost");
    assert!(r
        .subtitle
        .as_deref()
        .unwrap()
        .starts_with(&format!("tcplab study run {knee} (--quick)")));
    let first = &r.sections[0];
    assert_eq!(first.title, "This host");
    assert!(first.blocks.iter().any(|b| matches!(b, Block::Table(t)
        if t.caption.as_deref().is_some_and(|c| c.starts_with(&format!("Host profile {profile_id} "))))));
    // Every study report has its Methods: what was controlled, and each
    // place with its link settings.
    let methods = r
        .sections
        .iter()
        .find(|s| s.title == "Methods")
        .expect("a Methods section");
    for key in ["trials per point", "places and links", "offloads", "probes"] {
        assert!(
            methods
                .blocks
                .iter()
                .any(|b| matches!(b, Block::KeyValues(kv) if kv.iter().any(|(k, _)| k == key))),
            "Methods without {key}"
        );
    }
    let last = r.sections.last().unwrap();
    assert_eq!(last.title, "Experiments of this run");
    assert_eq!(
        last.blocks[0],
        Block::Warning("one experiment ran without probes".into())
    );
    let Some(Block::Table(experiments)) = last.blocks.iter().find(|b| matches!(b, Block::Table(_)))
    else {
        panic!("the experiments table")
    };
    assert_eq!(experiments.rows.len(), 1);
    assert_eq!(experiments.rows[0][1..5], ["5", "15", "0", "0–4"]);
    let suffixes: Vec<&str> = doc.data_files.iter().map(|f| f.suffix.as_str()).collect();
    assert_eq!(suffixes, ["csv", "json"]);
    let said = findings(r);
    assert_eq!(doc.findings, said.len());
    assert!(
        said.iter().any(|f| f == "On veth, TCP throughput rises with write size up to 1460 B, then is flat within CI."),
        "{said:#?}"
    );

    // The other host's run: its own curve, its own sentence.
    let other = store
        .latest_completed_run_per_host("study:abrams91")
        .unwrap();
    let other_id = other.iter().find(|(h, _)| h == "otherhost").unwrap().1;
    let said = findings(&document(&store, other_id, &[]).unwrap().report);
    assert!(
        said.iter()
            .any(|f| f
                == "On veth, TCP throughput rises with write size over the whole range measured."),
        "{said:#?}"
    );
}

#[test]
fn a_stored_study_without_a_report_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("tcplab.db")).unwrap();
    let run = store
        .create_run(&meta("study:retired", "retired", HOST, Vec::new()))
        .unwrap();
    let err = document(&store, run, &[]).unwrap_err();
    assert!(matches!(err, StudyError::NoReport(_)));
    assert_eq!(err.to_string(), "no report for study retired");
    let plain = store
        .create_run(&RunMeta {
            kind: "tcp-stream".into(),
            ..meta("tcp-stream", "none", HOST, Vec::new())
        })
        .unwrap();
    assert!(!is_study_run(&store, plain).unwrap());
}

#[test]
fn probe_records_load_only_in_this_layout_and_only_when_asked() {
    let event = ProbeEvent {
        ts_ns: 1,
        id: 1,
        len: 0,
        seq: 0,
        ack: 0,
        ifindex: 1,
        x: [0; 4],
        sport: 1,
        dport: 2,
        win: 0,
        probe: ProbeId::DevQueue as u8,
        flags: 0,
        cpu: 0,
        tid: 1,
    };
    let blob = |version| EventBlob {
        version,
        record_size: EVENT_SIZE as u32,
        data: encode_all(&[event]),
    };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("tcplab.db")).unwrap();
    let probed = store_study(
        &mut store,
        HOST,
        &curve([1.0; 5]),
        Some(blob(EVENT_VERSION)),
    );
    let data = load(&store, probed, true).unwrap();
    assert_eq!(data.events.len(), 1);
    assert_eq!(data.events.values().next().unwrap(), &vec![event]);
    assert!(load(&store, probed, false).unwrap().events.is_empty());
    let other_layout = store_study(
        &mut store,
        HOST,
        &curve([1.0; 5]),
        Some(blob(EVENT_VERSION + 1)),
    );
    assert!(load(&store, other_layout, true).unwrap().events.is_empty());
}

#[test]
fn the_index_lists_every_written_study_and_links_only_written_reports() {
    use crate::document::{index, WrittenStudy};
    let written = |name: &str, run_id, file: &str, findings| WrittenStudy {
        name: name.into(),
        run_id,
        file: file.into(),
        findings,
        status: "completed".into(),
    };
    let r = index(
        &[
            written("abrams91", 3, "abrams91-run-3.html", 12),
            written("sunos-ipc", 4, "", 0),
        ],
        301.4,
    );
    assert_eq!(r.subtitle.as_deref(), Some("2 studies in 301 s"));
    let Block::Table(t) = &r.sections[0].blocks[0] else {
        panic!("the index starts with its table");
    };
    assert_eq!(t.rows.len(), 2);
    assert_eq!(
        t.rows[0],
        ["abrams91", "3", "12", "completed", "abrams91-run-3.html"]
    );
    assert_eq!(t.rows[1][0], "sunos-ipc");
    // A study whose report was not written gets a row but no links; a
    // written one its report and the CSV and JSON beside it.
    let hrefs: Vec<&str> = r.data_files.iter().map(|d| d.href.as_str()).collect();
    assert_eq!(
        hrefs,
        [
            "abrams91-run-3.html",
            "abrams91-run-3.csv",
            "abrams91-run-3.json"
        ]
    );
}

#[test]
fn an_experiments_csv_rows_are_its_point_range() {
    let e = |first_point, points| ExperimentRecord {
        id: "x".into(),
        title: String::new(),
        command: String::new(),
        first_point,
        points,
    };
    assert_eq!(point_range(&e(4, 4)), "4–7");
    assert_eq!(point_range(&e(4, 1)), "4");
    assert_eq!(point_range(&e(4, 0)), "—");
}
