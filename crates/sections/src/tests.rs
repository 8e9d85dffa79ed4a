//! The builders on runs stored in a real SQLite store (in a temp dir):
//! synthetic points, trials with metrics, probe records, CPU profiles and
//! host profiles, built without root or BPF.

use crate::compare::{compare_text, Comparison, RunPoints};
use crate::probes_text::ProbedTrials;
use crate::run_report::run_report;
use crate::SectionsError;
use analysis::PointSummary;
use record::probe_event::{encode_all, tcp_flags, ProbeEvent, ProbeId, EVENT_SIZE, EVENT_VERSION};
use record::{
    CpuProfile, EventBlob, HostFacts, HostProfile, Measured, PointRecord, ProfiledStack,
    ProfiledThread, RunMeta, RunStatus, Store, StoredRun, TestKind, ThreadRole, TrialOutcome,
    TrialParams, TrialRecord, TrialStatus,
};
use report::{Block, Report, Section, Table};
use std::collections::BTreeMap;
use tempfile::TempDir;

const HOST: &str = "testhost";

/// A store in a fresh temp dir (kept alive with it).
fn store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("tcplab.db")).unwrap();
    (dir, store)
}

/// What one trial carries besides its metrics.
#[derive(Default, Clone)]
struct Extras {
    events: Option<EventBlob>,
    profile: Option<CpuProfile>,
    /// The path analysis kept in place of the records (`--probe-keep summary`).
    path_summary: Option<String>,
    /// The trial's details (`{}` when None).
    details: Option<serde_json::Value>,
}

/// One point: its write size and its trials' metrics and extras.
struct PointSpec {
    write_size: u64,
    trials: Vec<(BTreeMap<String, f64>, Extras)>,
}

/// A point whose trials measured these throughputs (bit/s).
fn point(write_size: u64, throughputs: &[f64]) -> PointSpec {
    PointSpec {
        write_size,
        trials: throughputs
            .iter()
            .map(|&t| (metrics(&[("throughput_bps", t)]), Extras::default()))
            .collect(),
    }
}

fn metrics(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
    kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Stores a completed tcp-stream run on `host` with these points; returns
/// it read back.
fn store_run(store: &mut Store, host: &str, points: Vec<PointSpec>) -> StoredRun {
    let meta = RunMeta {
        id: 0,
        kind: "tcp-stream".into(),
        command: "tcplab bench tcp-stream".into(),
        seed: 7,
        place: "loopback".into(),
        started_at: "2024-05-01T10:00:00Z".into(),
        finished_at: Some("2024-05-01T10:01:00Z".into()),
        status: RunStatus::Completed,
        host: HostFacts {
            hostname: host.into(),
            cpu_model: "Test CPU".into(),
            cores: 4,
            kernel: "6.1.0 #1".into(),
            ..HostFacts::default()
        },
        settings: serde_json::json!({ "repeat": 3 }),
        tool_version: "test".into(),
    };
    let run = store.create_run(&meta).unwrap();
    let mut seq = 0;
    for (index, p) in points.into_iter().enumerate() {
        let mut params = TrialParams::defaults(TestKind::TcpStream);
        params.write_size = p.write_size;
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
        for (repetition, (metrics, extras)) in p.trials.into_iter().enumerate() {
            let t = TrialRecord {
                id: 0,
                point_id,
                seq,
                repetition: repetition as u32,
                started_at: "2024-05-01T10:00:01Z".into(),
                status: TrialStatus::Ok,
                error: None,
                outcome: TrialOutcome {
                    metrics,
                    details: extras.details.unwrap_or_else(|| serde_json::json!({})),
                    events: extras.events,
                    profile: extras.profile,
                    path_summary: extras.path_summary,
                },
            };
            store.add_trial(run, &t).unwrap();
            seq += 1;
        }
    }
    store.load_run(run).unwrap()
}

fn summaries(run: &StoredRun) -> Vec<PointSummary> {
    analysis::summarize_run(run)
}

fn report_of(store: &Store, run: &StoredRun) -> Report {
    let points = summaries(run);
    run_report(store, run, &points, &["write_size".to_string()], &[]).unwrap()
}

fn section<'a>(r: &'a Report, title: &str) -> Option<&'a Section> {
    r.sections.iter().find(|s| s.title == title)
}

fn tables(s: &Section) -> Vec<&Table> {
    s.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn findings(s: &Section) -> Vec<&str> {
    s.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Finding { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// A packet record at a device probe.
fn packet(probe: ProbeId, ts_ns: u64, skb: u64) -> ProbeEvent {
    ProbeEvent {
        ts_ns,
        id: skb,
        len: 1000,
        seq: (skb as u32) * 1000,
        ack: 0,
        ifindex: 1,
        x: [0; 4],
        sport: 5001,
        dport: 40000,
        win: 100,
        probe: probe as u8,
        flags: tcp_flags::ACK,
        cpu: 0,
        tid: 9,
    }
}

/// Ten data packets, each `driver_us` µs between net_dev_queue and the
/// driver and 60 µs to IP input.
fn path_events(driver_us: u64) -> Vec<ProbeEvent> {
    let mut v = Vec::new();
    for skb in 1..=10u64 {
        let t0 = skb * 1_000_000;
        v.push(packet(ProbeId::DevQueue, t0, skb));
        v.push(packet(ProbeId::DevStartXmit, t0 + driver_us * 1_000, skb));
        v.push(packet(ProbeId::DevXmit, t0 + driver_us * 1_000 + 500, skb));
        v.push(packet(ProbeId::NetifReceive, t0 + 60_000, skb));
    }
    v
}

fn blob(events: &[ProbeEvent], version: u32) -> EventBlob {
    EventBlob {
        version,
        record_size: EVENT_SIZE as u32,
        data: encode_all(events),
    }
}

/// A profile whose sender spent `copy_s` in the copy routine and `tcp_s`
/// in TCP input.
fn profile(copy_s: f64, tcp_s: f64, samples: u64) -> CpuProfile {
    let stack = |kernel: Vec<u32>, s: f64| ProfiledStack {
        tid: 10,
        unsampled: false,
        kernel,
        user: vec![],
        samples: samples / 2,
        ns: (s * 1e9) as u64,
    };
    CpuProfile {
        version: 1,
        period_ns: 100_000,
        clock: "cycles".into(),
        cpus: 2,
        duration_s: 1.0,
        symbols: ["rep_movs_alternative", "tcp_sendmsg_locked", "tcp_ack"]
            .map(String::from)
            .to_vec(),
        threads: vec![ProfiledThread {
            tid: 10,
            tgid: 1,
            comm: "sender".into(),
            role: ThreadRole::Sender,
        }],
        stacks: vec![stack(vec![0, 1], copy_s), stack(vec![2], tcp_s)],
        busy_s: copy_s + tcp_s,
        idle_s: 0.0,
        lost_samples: 0,
        broken_stacks: 0,
    }
}

fn measured(v: f64, unit: &str) -> Measured {
    Measured {
        median: v,
        mean: v,
        ci95: v * 0.01,
        n: 5,
        unit: unit.into(),
    }
}

fn host_profile(aliased_copy: Option<f64>) -> HostProfile {
    HostProfile {
        version: record::HOST_PROFILE_VERSION,
        created_at: "2024-05-01T09:00:00Z".into(),
        hostname: HOST.into(),
        cpu_model: "Test CPU".into(),
        cores: 4,
        kernel: "6.1.0".into(),
        quick: true,
        copy_cache: measured(20e9, "B/s"),
        copy_cache_aliased: aliased_copy.map(|v| measured(v, "B/s")),
        copy_dram: measured(8e9, "B/s"),
        checksum_rfc1071: measured(2e9, "B/s"),
        checksum_fast: measured(10e9, "B/s"),
        null_syscall: measured(100e-9, "s"),
        context_switch: measured(2e-6, "s"),
        pipe_overhead: measured(1e-6, "s"),
        context_switch_net: None,
        cpu_score: measured(1e8, "1"),
    }
}

#[test]
fn a_run_report_tables_every_point_and_reads_the_curve() {
    let (_dir, mut store) = store();
    let rising = store_run(
        &mut store,
        HOST,
        vec![
            point(1024, &[100e6, 101e6, 99e6]),
            point(8192, &[300e6, 302e6, 298e6]),
            point(65536, &[900e6, 905e6, 895e6]),
        ],
    );
    let r = report_of(&store, &rising);
    assert_eq!(
        r.title,
        format!("tcplab run {}: tcp-stream", rising.meta.id)
    );
    let titles: Vec<&str> = r.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        ["Results", "Figures", "Parameters", "Methods", "Host"]
    );
    let results = tables(section(&r, "Results").unwrap())[0];
    assert_eq!(results.rows.len(), 3);
    assert_eq!(results.header[..2], ["write_size", "n"]);
    assert!(results.rows.iter().all(|row| row[1] == "3"));
    assert!(results.header[2].starts_with("throughput"));
    let figures = section(&r, "Figures").unwrap();
    assert!(figures
        .figures()
        .any(|f| f.title == "Throughput against write size"));
    let said = findings(figures);
    assert!(
        said.iter()
            .any(|f| f.starts_with("Throughput rises with write size")),
        "{said:?}"
    );

    let falling = store_run(
        &mut store,
        HOST,
        vec![
            point(1024, &[900e6, 905e6, 895e6]),
            point(8192, &[300e6, 302e6, 298e6]),
            point(65536, &[100e6, 101e6, 99e6]),
        ],
    );
    let said = findings(section(&report_of(&store, &falling), "Figures").unwrap())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(
        said.iter()
            .any(|f| f.starts_with("Throughput falls as write size grows")),
        "{said:?}"
    );
    assert!(!said.iter().any(|f| f.contains("rises")), "{said:?}");
}

/// A killed run's report says which points never ran, as `show` does,
/// and a point that ran keeps its count.
#[test]
fn a_point_that_never_ran_reads_not_run_in_the_report() {
    let (_dir, mut store) = store();
    let killed = store_run(
        &mut store,
        HOST,
        vec![point(1024, &[100e6, 101e6]), point(8192, &[])],
    );
    let r = report_of(&store, &killed);
    let results = tables(section(&r, "Results").unwrap())[0];
    let n: Vec<&str> = results.rows.iter().map(|row| row[1].as_str()).collect();
    assert_eq!(n, ["2", "not run"]);
    let text = crate::terminal::table(TestKind::TcpStream, &summaries(&killed), &[], &[]);
    assert!(text.contains("not run"), "{text}");
}

#[test]
fn result_warnings_go_under_the_results_table() {
    let (_dir, mut store) = store();
    let run = store_run(&mut store, HOST, vec![point(1024, &[1e8])]);
    let points = summaries(&run);
    let r = run_report(
        &store,
        &run,
        &points,
        &[],
        &["the probes lost 3 records".into()],
    )
    .unwrap();
    let results = section(&r, "Results").unwrap();
    assert!(results
        .blocks
        .contains(&Block::Warning("the probes lost 3 records".into())));
    let figures = section(&r, "Figures").unwrap();
    assert!(figures.figures().next().is_none(), "one point: no curve");
}

#[test]
fn the_host_section_shows_the_host_profile_when_there_is_one() {
    let (_dir, mut store) = store();
    let bare = store_run(&mut store, HOST, vec![point(1024, &[1e8])]);
    let host = section(&report_of(&store, &bare), "Host").unwrap().clone();
    assert!(
        tables(&host)
            .iter()
            .all(|t| t.caption.is_none()
                || !t.caption.as_deref().unwrap().starts_with("Host profile"))
    );
    assert!(host
        .blocks
        .iter()
        .any(|b| matches!(b, Block::Paragraph(p) if p.starts_with("No host profile"))));

    let profile_id = store.add_host_profile(&host_profile(None)).unwrap();
    let calibrated = store_run(&mut store, HOST, vec![point(1024, &[1e8])]);
    let host = section(&report_of(&store, &calibrated), "Host")
        .unwrap()
        .clone();
    let profile = tables(&host)
        .into_iter()
        .find(|t| {
            t.caption
                .as_deref()
                .is_some_and(|c| c.starts_with(&format!("Host profile {profile_id} ")))
        })
        .expect("the host profile table");
    assert_eq!(profile.rows[0][0], "memory copy, in cache");
    assert_eq!(profile.rows.len(), 8);
}

#[test]
fn the_aliasing_note_appears_only_for_slow_aliased_copies() {
    let slow = host_profile(Some(5e9));
    let note = crate::host::aliasing_note(&slow).expect("4× slower: a note");
    assert!(note.contains("run 4× slower"), "{note}");
    assert!(crate::host::aliasing_note(&host_profile(Some(15e9))).is_none());
    assert!(crate::host::aliasing_note(&host_profile(None)).is_none());
    let s = crate::host::study_host_section(&HostFacts::default(), Some(&(3, slow)));
    assert!(s
        .blocks
        .iter()
        .any(|b| matches!(b, Block::Paragraph(p) if *p == note)));
}

/// A run whose first point's trials carry these probe records.
fn probed_run(store: &mut Store, blobs: Vec<EventBlob>) -> StoredRun {
    let trials = blobs
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            (
                metrics(&[("throughput_bps", 1e8 + i as f64)]),
                Extras {
                    events: Some(b),
                    profile: None,
                    path_summary: None,
                    details: None,
                },
            )
        })
        .collect();
    store_run(
        store,
        HOST,
        vec![
            PointSpec {
                write_size: 1024,
                trials,
            },
            point(8192, &[2e8]),
        ],
    )
}

#[test]
fn the_path_section_reads_the_probed_trial() {
    let (_dir, mut store) = store();
    let run = probed_run(&mut store, vec![blob(&path_events(300), EVENT_VERSION)]);
    let r = report_of(&store, &run);
    let path = section(&r, "Probes: the path of one trial").expect("a path section");
    let hist = path
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::Histogram(h) => Some(h),
            _ => None,
        })
        .expect("the hop histogram");
    assert_eq!(hist.title, "Per-hop delay histogram");
    let driver = hist
        .series
        .iter()
        .find(|(name, _)| name.starts_with("interface queue"))
        .expect("the net_dev_queue → driver hop");
    assert_eq!(driver.1[6], 100.0, "300 µs falls in the 300–350 µs bin");
    let said = findings(path);
    assert!(
        said.iter()
            .any(|f| f.starts_with("The slowest hop at the median is the interface queue")),
        "{said:?}"
    );
    let hops = tables(path)
        .into_iter()
        .find(|t| t.header[0] == "hop")
        .unwrap();
    let row = hops
        .rows
        .iter()
        .find(|r| r[0].starts_with("interface"))
        .unwrap();
    assert_eq!((row[1].as_str(), row[2].as_str()), ("10", "300.0"));
    let packets = tables(path)
        .into_iter()
        .find(|t| t.header[0] == "flow")
        .expect("the packet table");
    assert_eq!(packets.rows[0][1], "10", "ten data segments");

    // A faster interface queue: the slowest hop is the wire instead.
    let run = probed_run(&mut store, vec![blob(&path_events(5), EVENT_VERSION)]);
    let r = report_of(&store, &run);
    let said = findings(section(&r, "Probes: the path of one trial").unwrap())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert!(
        said.iter()
            .any(|f| f.starts_with("The slowest hop at the median is the to IP input")),
        "{said:?}"
    );
}

#[test]
fn records_of_another_layout_are_left_out_of_the_report_but_named_by_probes() {
    let (_dir, mut store) = store();
    let run = probed_run(&mut store, vec![blob(&path_events(300), EVENT_VERSION + 1)]);
    let r = report_of(&store, &run);
    assert!(section(&r, "Probes: the path of one trial").is_none());
    match ProbedTrials::load(&store, &run, None) {
        Err(e @ SectionsError::EventLayout { .. }) => assert_eq!(
            e.to_string(),
            format!(
                "trial 0 has probe records of layout version {}, this tcplab reads {EVENT_VERSION}",
                EVENT_VERSION + 1
            )
        ),
        other => panic!("expected a layout error, got {other:?}"),
    }
}

#[test]
fn probes_text_and_json_list_each_probed_trial() {
    let (_dir, mut store) = store();
    let run = probed_run(
        &mut store,
        vec![
            blob(&path_events(300), EVENT_VERSION),
            blob(&path_events(100), EVENT_VERSION),
        ],
    );
    let id = run.meta.id;
    let trials = ProbedTrials::load(&store, &run, None).unwrap();
    assert_eq!(trials.probed.len(), 2);
    let text = trials.text(id);
    assert!(
        text.starts_with(&format!("run {id} trial 0: 40 records over ")),
        "{text}"
    );
    assert!(
        text.contains(&format!("run {id} trial 1: 40 records")),
        "{text}"
    );
    assert!(text.contains("none lost"));
    let json = trials.json(id);
    assert_eq!(json["trials"].as_array().unwrap().len(), 2);
    assert_eq!(json["trials"][1]["seq"], 1);
    let only = ProbedTrials::load(&store, &run, Some(1)).unwrap();
    assert_eq!(only.probed.len(), 1);
    assert!(ProbedTrials::load(&store, &run, Some(2))
        .unwrap()
        .is_empty());
}

/// A run whose two points each have these sampled trials (copy s, tcp s),
/// each of `samples` samples.
fn sampled_run(store: &mut Store, trials: &[(f64, f64)], samples: u64) -> StoredRun {
    let sampled = |w| PointSpec {
        write_size: w,
        trials: trials
            .iter()
            .map(|&(copy_s, tcp_s)| {
                (
                    metrics(&[
                        ("throughput_bps", 1e8),
                        ("cpu_sender_s", copy_s + tcp_s),
                        ("data_segs_out", 1000.0),
                        ("bytes", 1024.0 * 1000.0),
                    ]),
                    Extras {
                        events: None,
                        profile: Some(profile(copy_s, tcp_s, samples)),
                        path_summary: None,
                        details: None,
                    },
                )
            })
            .collect(),
    };
    store_run(store, HOST, vec![sampled(1024), sampled(8192)])
}

/// The CPU section's findings, as strings.
fn cpu_findings(store: &Store, run: &StoredRun) -> Vec<String> {
    let r = report_of(store, run);
    findings(section(&r, "CPU: where the time went").expect("a CPU section"))
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_cpu_section_names_the_layer_that_took_the_most() {
    let (_dir, mut store) = store();
    let copy_most = [(0.3, 0.1), (0.31, 0.1), (0.29, 0.1)];
    let run = sampled_run(&mut store, &copy_most, 2000);
    let r = report_of(&store, &run);
    let cpu = section(&r, "CPU: where the time went").expect("a CPU section");
    let said = findings(cpu);
    assert_eq!(said.len(), 2, "one per point's sender: {said:?}");
    assert!(
        said[0].starts_with("Sender at write_size=")
            && said[0].contains(": most CPU time in copy (75.0 ± ")
            && said[0].contains("over 3 trials), beyond the 95% CIs of the next, tcp (25.0 ± "),
        "{said:?}"
    );
    let costs = tables(cpu)[0];
    assert_eq!(costs.rows.len(), 2);
    assert_eq!(costs.rows[0][1], "sender");
    assert_eq!(costs.rows[0][2], "0.4000", "engine CPU s");
    assert_eq!(costs.rows[0][4], "1.00", "sampled/engine");
    assert_eq!(costs.rows[0][5], "400.00", "µs per segment");

    // The data flip, the layer flips.
    let tcp_most = [(0.1, 0.3), (0.1, 0.31), (0.1, 0.29)];
    let run = sampled_run(&mut store, &tcp_most, 2000);
    let said = cpu_findings(&store, &run);
    assert!(
        said[0].contains("most CPU time in tcp (75.0 ± "),
        "{said:?}"
    );
    // Shares that swing from trial to trial: no layer is named.
    let swinging = [(0.3, 0.1), (0.1, 0.3), (0.22, 0.18)];
    let run = sampled_run(&mut store, &swinging, 2000);
    let said = cpu_findings(&store, &run);
    assert!(
        said[0].contains(": no single layer took the most CPU time: copy (")
            && said[0].contains("are within the 95% CIs of each other over 3 trials")
            && said[0].contains("could not have been seen"),
        "{said:?}"
    );
    let unsampled = probed_run(&mut store, vec![]);
    assert!(section(&report_of(&store, &unsampled), "CPU: where the time went").is_none());
}

#[test]
fn cpu_shares_need_a_thousand_samples() {
    let (_dir, mut store) = store();
    let copy_most = [(0.3, 0.1), (0.31, 0.1), (0.29, 0.1)];
    // 998 samples a trial: n/a, and no bars.
    let run = sampled_run(&mut store, &copy_most, 998);
    let r = report_of(&store, &run);
    let cpu = section(&r, "CPU: where the time went").unwrap();
    let said: Vec<String> = findings(cpu).into_iter().map(str::to_string).collect();
    assert!(
        said[0].ends_with(
            ": CPU shares n/a (998 samples in its best-sampled trial, fewer than the 1000 a \
             share needs)."
        ),
        "{said:?}"
    );
    assert!(!cpu
        .blocks
        .iter()
        .any(|b| matches!(b, Block::StackedBars(_))));
    // 1000: the shares are stated, with their bars.
    let run = sampled_run(&mut store, &copy_most, 1000);
    let r = report_of(&store, &run);
    let cpu = section(&r, "CPU: where the time went").unwrap();
    assert!(findings(cpu)[0].contains("most CPU time in copy"));
    assert!(cpu
        .blocks
        .iter()
        .any(|b| matches!(b, Block::StackedBars(_))));
}

fn compared(store: &Store, runs: &[&StoredRun]) -> (Vec<RunPoints>, Comparison) {
    let runs: Vec<RunPoints> = runs
        .iter()
        .map(|r| {
            let run = store.load_run(r.meta.id).unwrap();
            let points = summaries(&run);
            (run, points)
        })
        .collect();
    let varying: Vec<Vec<String>> = runs.iter().map(|_| vec!["write_size".into()]).collect();
    let cmp = Comparison::new(&runs, &varying, "throughput_bps");
    (runs, cmp)
}

#[test]
fn the_comparison_lines_up_points_and_stars_real_differences() {
    let (_dir, mut store) = store();
    let base = store_run(
        &mut store,
        HOST,
        vec![
            point(1024, &[100e6, 101e6, 99e6]),
            point(8192, &[200e6, 201e6, 199e6]),
        ],
    );
    let faster = store_run(
        &mut store,
        "otherhost",
        vec![
            point(1024, &[200e6, 202e6, 198e6]),
            point(65536, &[400e6, 401e6, 399e6]),
        ],
    );
    let same = store_run(
        &mut store,
        HOST,
        vec![
            point(1024, &[100e6, 101e6, 99e6]),
            point(8192, &[200e6, 201e6, 199e6]),
        ],
    );
    let m = crate::metrics::known_metric("throughput_bps");

    let (runs, cmp) = compared(&store, &[&base, &faster]);
    assert_eq!(
        cmp.rows.len(),
        3,
        "1K and 8K from the first run, 64K from the second"
    );
    let t = cmp.table(&runs, m);
    assert_eq!(t.rows[0][3], "2.00× *", "{:?}", t.rows[0]);
    assert_eq!(t.rows[1][2], "—", "the second run has no 8K point");
    assert_eq!(t.rows[1][3], "—");
    let csv = String::from_utf8(cmp.csv(&runs)).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + 4,
        "a header and one row per point and run"
    );
    assert!(
        csv.contains(",otherhost,throughput_bps,200000000,"),
        "{csv}"
    );
    let text = compare_text(&runs, &cmp, &t);
    assert!(
        text.contains("host otherhost (Test CPU, 4 cores, kernel 6.1.0, cc )"),
        "{text}"
    );

    let (runs, cmp) = compared(&store, &[&base, &same]);
    let t = cmp.table(&runs, m);
    assert_eq!(t.rows.len(), 2);
    assert!(t.rows.iter().all(|r| r[3] == "1.00×"), "{:?}", t.rows);

    let html = crate::compare_html::compare_report(&runs, &cmp, t, m);
    let titles: Vec<&str> = html.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles, ["Runs", "Side by side", "Hosts"]);
    let side = &html.sections[1];
    let fig = side.figures().next().expect("the overlay");
    assert_eq!(fig.series.len(), 2, "one series per run");
}

mod probe_keep;
mod terminal_and_methods;
mod validity;
