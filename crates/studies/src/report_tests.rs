//! The reports' finding sentences follow the data: the same report code on
//! two different data sets says different things (the write-size runs go
//! through a real SQLite store and back, as `tcplab report` reads them).

use crate::data::{ExperimentRecord, StudyData, StudySettings, SETTINGS_KEY};
use crate::fixtures::{ok_trial, stored_study_run};
use record::{
    HostFacts, PointRecord, RunMeta, RunStatus, StoredRun, TestKind, TrialOutcome, TrialParams,
};
use std::collections::BTreeMap;

/// A stored-run-shaped data set: TCP and UDP throughput (bit/s) per write
/// size on `veth`, three trials per point at mean ± 1%.
fn write_size_run(tcp: &[(u64, f64)], udp: &[(u64, f64)]) -> StudyData {
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let mut experiments = Vec::new();
    for (id, test, curve) in [
        ("write-size-tcp-fast", TestKind::TcpStream, tcp),
        ("write-size-udp-fast", TestKind::UdpStream, udp),
    ] {
        experiments.push(ExperimentRecord {
            id: id.into(),
            title: id.into(),
            command: String::new(),
            first_point: points.len() as u32,
            points: curve.len() as u32,
        });
        for &(ws, bps) in curve {
            let mut p = TrialParams::defaults(test);
            p.write_size = ws;
            p.topology = "veth".into();
            let pid = points.len() as i64 + 1;
            points.push(PointRecord {
                id: pid,
                index: points.len() as u32,
                params: p,
                precision: None,
            });
            for (k, f) in [0.99, 1.0, 1.01].iter().enumerate() {
                let mut o = TrialOutcome::default();
                o.metrics.insert("throughput_bps".into(), bps * f);
                o.metrics.insert("loss_rate".into(), 0.0);
                // Enough datagrams for a UDP receive rate (crate::validity).
                o.metrics.insert("datagrams_received".into(), 1000.0);
                trials.push(ok_trial(&trials, pid, k, o));
            }
        }
    }
    let settings = StudySettings {
        study: "abrams91".into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, "", points, trials);
    let run = through_sqlite(run);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}

/// Writes `run` into a real (in-memory) SQLite store and reads it back, as
/// `tcplab report` reads a stored run.
fn through_sqlite(run: StoredRun) -> StoredRun {
    let mut store = record::Store::open_in_memory().unwrap();
    let id = store.create_run(&run.meta).unwrap();
    let mut ids = BTreeMap::new();
    for p in &run.points {
        ids.insert(p.id, store.add_point(id, p).unwrap());
    }
    for t in &run.trials {
        let mut t = t.clone();
        t.point_id = ids[&t.point_id];
        store.add_trial(id, &t).unwrap();
    }
    store
        .finish_run(id, RunStatus::Completed, "2026-11-23T00:00:00Z")
        .unwrap();
    let back = store.load_run(id).unwrap();
    assert_eq!(back.trials.len(), run.trials.len());
    back
}

fn findings(d: &StudyData) -> Vec<String> {
    crate::abrams91::report(d)
        .into_iter()
        .flat_map(|s| s.blocks)
        .filter_map(|b| match b {
            report::Block::Finding { text } => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn write_size_findings_follow_the_data() {
    let sizes = [10, 512, 1460, 8192, 65507];
    // A knee at 1460 B, and UDP overtaking TCP from 8 KB.
    let tcp: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e8, 2e9, 5e9, 5.02e9, 5.01e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let udp: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e7, 1e9, 4e9, 8e9, 9e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let a = findings(&write_size_run(&tcp, &udp));
    assert!(
        a.iter().any(|f| f == "On veth, TCP throughput rises with write size up to 1460 B, then is flat within CI."),
        "{a:#?}"
    );
    assert!(
        a.iter().any(|f| f.contains(
            "UDP overtakes TCP beyond CI at 8 KB (8.00 ± 0.20 against 5.02 ± 0.12 Gbit/s, 1.59×) and 65507 B"
        )),
        "{a:#?}"
    );
    // Other data, other sentences: TCP rising to the end, UDP never ahead.
    let tcp2: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e8, 2e9, 5e9, 7e9, 9e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let udp2: Vec<(u64, f64)> = sizes
        .iter()
        .zip([1e7, 1e9, 4e9, 6e9, 8e9])
        .map(|(a, b)| (*a, b))
        .collect();
    let b = findings(&write_size_run(&tcp2, &udp2));
    assert!(
        b.iter()
            .any(|f| f
                == "On veth, TCP throughput rises with write size over the whole range measured."),
        "{b:#?}"
    );
    assert!(
        b.iter()
            .any(|f| f.contains("UDP is faster than TCP beyond CI at none of the 5 write sizes")),
        "{b:#?}"
    );
    assert_ne!(a, b);
}

/// The y values of a figure's series, largest first.
fn ys(f: &report::Figure) -> Vec<f64> {
    let mut v: Vec<f64> = f
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.y))
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

/// A throughput figure takes the prefix its values need, as a bench
/// table's column does: Gbit/s on a fast place, Mbit/s on a slow one,
/// its values written in it.
#[test]
fn a_throughput_figure_is_labelled_in_the_prefix_of_its_values() {
    let sizes = [10, 512, 1460, 8192, 65507];
    let fast = |k: f64| -> Vec<(u64, f64)> {
        sizes
            .iter()
            .zip([1e8, 2e9, 5e9, 7e9, 9e9])
            .map(|(a, b)| (*a, b * k))
            .collect()
    };
    let fig = |d: &StudyData| {
        crate::abrams91::report(d)
            .remove(0)
            .figures()
            .next()
            .expect("the write-size figure")
            .clone()
    };
    let f = fig(&write_size_run(&fast(1.0), &fast(0.5)));
    assert_eq!(f.y_label, "throughput (Gbit/s)");
    assert!((ys(&f)[0] - 9.0).abs() < 1e-9, "{:?}", ys(&f));
    let p = f.series[0].points.last().unwrap();
    // The error bar in the same prefix as its mean.
    let hi = p.ci_hi.unwrap();
    assert!(hi > p.y && hi < p.y * 1.1, "{p:?}");
    let f = fig(&write_size_run(&fast(1e-3), &fast(0.5e-3)));
    assert_eq!(f.y_label, "throughput (Mbit/s)");
    assert!((ys(&f)[0] - 9.0).abs() < 1e-9, "{:?}", ys(&f));
}

#[test]
fn a_run_without_study_settings_is_refused() {
    let mut d = write_size_run(&[(10, 1e6)], &[(10, 1e6)]);
    d.run.meta.settings = serde_json::json!({});
    let summaries = analysis::summarize_run(&d.run);
    assert!(matches!(
        StudyData::new(d.run, summaries, BTreeMap::new(), BTreeMap::new()),
        Err(crate::StudyError::NotAStudy(1))
    ));
}

#[test]
fn the_verdict_ranks_what_the_data_shows() {
    let sizes = [512u64, 65507];
    let tcp: Vec<(u64, f64)> = sizes.iter().map(|&s| (s, 1e9)).collect();
    // `link_share`: the trials ran over a shaped link at that share of its
    // line rate; `None`: on veth, no link.
    let with = |rwnd: f64, link_share: Option<f64>| {
        let mut d = write_size_run(&tcp, &tcp);
        for t in d.run.trials.iter_mut() {
            t.outcome.metrics.insert("busy_s".into(), 1.0);
            t.outcome.metrics.insert("rwnd_limited_s".into(), rwnd);
            if let Some(share) = link_share {
                t.outcome.details = serde_json::json!({"lab": {
                    "place": {"link": {"rate_bps": 1e9 / share}}
                }});
            }
        }
        crate::verdict::verdict(&d)
    };
    let a = with(0.6, None);
    assert_eq!(a[0].name, "the receive window", "{a:#?}");
    assert!((a[0].score.unwrap() - 0.6).abs() < 1e-9);
    // UDP trials carry no window accounting: the TCP points decide. On a
    // shaped link, both the link and the window are the experiment's.
    let b = with(0.1, Some(0.95));
    let link = b.iter().find(|x| x.name == "the link").unwrap();
    assert_eq!(link.standing, crate::verdict::Standing::Imposed, "{b:#?}");
    // The best point's mean (trials at 0.99, 1, 1.01 of it): 0.95 of the
    // line rate, the figure the sections print (crate::validity).
    let (share, text) = link.imposed.clone().unwrap();
    assert!((share - 0.95).abs() < 1e-6, "{b:#?}");
    assert!(
        text.contains("95.0 ± 2.4 % of the link's 1.05 Gbit/s line rate"),
        "{b:#?}"
    );
    // No CPU samples: the CPU candidates say so and rank last.
    assert!(b.iter().any(|x| x.name == "data copy" && x.score.is_none()));
    assert!(b.last().unwrap().score.is_none());
    assert_eq!(
        b.last().unwrap().standing,
        crate::verdict::Standing::NotMeasured
    );
}

/// A markatos02-shaped run of host `name`: a loopback 64 KB trial set
/// moving `mb_per_cpu` MB per sender CPU-second, and a CPU-speed sweep
/// following the model with memory bandwidth `bw` and constant `c` on a
/// host of CPU score `score`.
fn markatos_run(name: &str, score: f64, mb_per_cpu: f64, bw: f64, c: f64) -> StudyData {
    use record::params::{HostSide, HostSpeed};
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let model = |share: f64| 1.0 / (1.0 / bw + c / (score * share));
    let mut add = |points: &mut Vec<PointRecord>, p: TrialParams, m: &[(&str, f64)]| {
        let pid = points.len() as i64 + 1;
        points.push(PointRecord {
            id: pid,
            index: points.len() as u32,
            params: p,
            precision: None,
        });
        for (k, f) in [0.99, 1.0, 1.01].iter().enumerate() {
            let mut o = TrialOutcome::default();
            for (key, v) in m {
                o.metrics.insert(key.to_string(), v * f);
            }
            o.metrics.insert("cpu_sender_s".into(), 1.0);
            trials.push(ok_trial(&trials, pid, k, o));
        }
    };
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.write_size = 65536;
    add(
        &mut points,
        p.clone(),
        &[
            ("bytes", mb_per_cpu * 1e6),
            ("throughput_bps", mb_per_cpu * 8e6),
        ],
    );
    for share in [0.1, 0.3, 1.0] {
        let mut q = p.clone();
        q.host_speed = (share < 1.0).then_some(HostSpeed {
            side: HostSide::Both,
            fraction: share,
        });
        add(
            &mut points,
            q,
            &[
                ("bytes", model(share)),
                ("throughput_bps", model(share) * 8.0),
            ],
        );
    }
    let experiments = vec![
        ExperimentRecord {
            id: "mb-per-cpu".into(),
            title: String::new(),
            command: String::new(),
            first_point: 0,
            points: 1,
        },
        ExperimentRecord {
            id: "cpu-speed".into(),
            title: String::new(),
            command: String::new(),
            first_point: 1,
            points: 3,
        },
    ];
    let settings = StudySettings {
        study: "markatos02".into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = StoredRun {
        meta: RunMeta {
            id: 1,
            kind: "study:markatos02".into(),
            command: String::new(),
            seed: 1,
            place: String::new(),
            started_at: String::new(),
            finished_at: None,
            status: RunStatus::Completed,
            host: HostFacts {
                hostname: name.into(),
                ..HostFacts::default()
            },
            settings: serde_json::json!({ SETTINGS_KEY: settings }),
            tool_version: String::new(),
        },
        points,
        trials,
    };
    let summaries = analysis::summarize_run(&run);
    let mut d = StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap();
    d.host.cpu_score = Some(score);
    d.host.mem_bw = Some(bw);
    d
}

fn hosts_section(d: &StudyData) -> report::Section {
    crate::markatos02::report(d)
        .into_iter()
        .find(|s| s.title.starts_with("Across hosts"))
        .expect("the across-hosts section")
}

fn finding_texts(s: &report::Section) -> Vec<String> {
    s.blocks
        .iter()
        .filter_map(|b| match b {
            report::Block::Finding { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// [`markatos_run`] of a host whose sender, busy all the time at full
/// speed, moves what the model gives: its MB per CPU-second and its
/// CPU-speed sweep agree with one C.
fn consistent_host(name: &str, score: f64, bw: f64, c: f64) -> StudyData {
    let mb = 1.0 / (1.0 / bw + c / score) / 1e6;
    markatos_run(name, score, mb, bw, c)
}

#[test]
fn other_hosts_join_the_mileage_and_scaling_plots() {
    // Alone: a table row and how to add hosts, no figures.
    let alone = markatos_run("here", 20_000.0, 3000.0, 1.2e10, 2e-6);
    let s = hosts_section(&alone);
    assert_eq!(s.figures().count(), 0);
    assert!(finding_texts(&s).is_empty());
    // A slower host of the same C: its MB per CPU-second is relatively
    // higher, so mileage falls with speed, and each host's predicted model
    // meets its points, one C within both hosts' ranges.
    let mut d = consistent_host("here", 20_000.0, 1.2e10, 2e-6);
    d.peers
        .push(consistent_host("old-box", 5_000.0, 1.2e10, 2e-6));
    let s = hosts_section(&d);
    assert_eq!(s.figures().count(), 2);
    let mileage_plot = s.figures().next().unwrap();
    let names: Vec<&str> = mileage_plot
        .series
        .iter()
        .map(|x| x.name.as_str())
        .collect();
    assert_eq!(names, ["here", "old-box"]);
    let scaling = s.figures().nth(1).unwrap();
    assert!(
        scaling
            .series
            .iter()
            .any(|x| x.name == "model predicted for old-box")
            && !scaling.series.iter().any(|x| x.name.contains("fitted")),
        "{:?}",
        scaling.series.iter().map(|x| &x.name).collect::<Vec<_>>()
    );
    let f = finding_texts(&s);
    assert!(
        f[0].contains("here (score 20000)")
            && f[0].contains("mileage falls with CPU speed beyond the 95% CIs, as the paper found"),
        "{f:#?}"
    );
    assert!(
        f[1].contains("not fitted to the points shown")
            && f[1]
                .contains("here: C = 2.00 µs × score per byte, 3 of 3 CPU shares predicted within")
            && f[1].contains("old-box: C = 2.00 µs × score per byte, 3 of 3"),
        "{f:#?}"
    );
    assert!(f[2].starts_with("One C, between"), "{f:#?}");
    // The data flip: the old host moves little per CPU-second, a C ten
    // times larger: mileage rises, and no one C serves both.
    let mut e = consistent_host("here", 20_000.0, 1.2e10, 2e-6);
    e.peers
        .push(consistent_host("old-box", 5_000.0, 1.2e10, 2e-5));
    let g = finding_texts(&hosts_section(&e));
    assert!(
        g[0].contains("mileage rises with CPU speed beyond the 95% CIs, unlike the paper"),
        "{g:#?}"
    );
    assert!(
        g[2].starts_with("The hosts' Cs differ beyond the ranges"),
        "{g:#?}"
    );
    // Mileage equal on both hosts: it holds within the CIs, with what
    // could have been seen.
    let here = consistent_host("here", 20_000.0, 1.2e10, 2e-6);
    let mb = 1.0 / (1.0 / 1.2e10 + 2e-6 / 20_000.0) / 1e6;
    let mut h = here;
    h.peers
        .push(markatos_run("old-box", 5_000.0, mb / 4.0, 1.2e10, 2e-6));
    let g = finding_texts(&hosts_section(&h));
    assert!(
        g[0].contains("mileage holds within the 95% CIs")
            && g[0].contains("could not have been seen"),
        "{g:#?}"
    );
}

#[test]
fn the_ten_megabit_figure_carries_the_papers_curve_and_compares_with_it() {
    let sizes = [512u64, 1024, 8192];
    let on_ether10 = |mbit: f64| {
        let tcp: Vec<(u64, f64)> = sizes.iter().map(|&s| (s, mbit * 1e6)).collect();
        let mut d = write_size_run(&tcp, &tcp);
        for e in d.settings.experiments.iter_mut() {
            e.id = e.id.replace("-fast", "-slow");
        }
        for p in d.run.points.iter_mut() {
            p.params.topology = "ether10".into();
        }
        d.points = analysis::summarize_run(&d.run);
        d
    };
    let d = on_ether10(9.4);
    let sec = crate::abrams91::report(&d).remove(0);
    let fig = sec.figures().next().expect("the ether10 figure");
    let r = fig.reference.as_ref().expect("the paper's curve");
    assert!(r.points.iter().all(|p| p.y == 8.4));
    assert_eq!(fig.y_label, "throughput (Mbit/s)");
    let f = findings(&d);
    assert!(
        f.iter()
            .any(|s| s.contains("reaches up to 9.40 ± 0.23 Mbit/s") && s.contains("1.12×")),
        "{f:#?}"
    );
    let g = findings(&on_ether10(4.2));
    assert!(g.iter().any(|s| s.contains("0.50×")), "{g:#?}");
}

/// Issue 30, rule 2: over a lossy place a throughput carries its loss, a
/// comparison of throughputs says loss may explain it, and the report warns
/// per place; with the same throughputs and nothing lost, none of it.
#[test]
fn loss_travels_with_the_ten_megabit_throughput() {
    let sizes = [512u64, 1024, 8192];
    let on_ether10 = |retrans: f64| {
        let tcp: Vec<(u64, f64)> = sizes.iter().map(|&s| (s, 9.4e6)).collect();
        let mut d = write_size_run(&tcp, &tcp);
        for e in d.settings.experiments.iter_mut() {
            e.id = e.id.replace("-fast", "-slow");
        }
        for p in d.run.points.iter_mut() {
            p.params.topology = "ether10".into();
        }
        // UDP points read their loss from loss_rate (0 here), TCP's from
        // these.
        for t in d.run.trials.iter_mut() {
            t.outcome.metrics.insert("bytes_retrans".into(), retrans);
            t.outcome.metrics.insert("bytes_sent".into(), 820_024.0);
        }
        d.points = analysis::summarize_run(&d.run);
        d
    };
    let lossy = on_ether10(308_024.0);
    let f = findings(&lossy);
    assert!(
        f.iter().any(|s| s.contains(
            "reaches up to 9.40 ± 0.23 Mbit/s (8 KB writes; 308,024 of 820,024 bytes \
             retransmitted per trial, 37.6 %), 1.12×"
        )),
        "{f:#?}"
    );
    assert!(
        f.iter().any(|s| s.starts_with("On ether10, TCP throughput")
            && s.contains("These throughputs carry loss, which may explain part of a difference between them or hide one: tcp-stream")),
        "{f:#?}"
    );
    let w = crate::lossy::lossy_place_warnings(&lossy);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with(
            "Loss on ether10: 3 of this run's points there lost or resent data, the most \
             308,024 of 820,024 bytes retransmitted per trial, 37.6 %"
        ),
        "{w:#?}"
    );
    let clean = on_ether10(0.0);
    let f = findings(&clean);
    assert!(
        f.iter()
            .all(|s| !s.contains("retransmitted") && !s.contains("carry loss")),
        "{f:#?}"
    );
    assert!(f
        .iter()
        .any(|s| s.contains("reaches up to 9.40 ± 0.23 Mbit/s (8 KB writes)")));
    assert!(crate::lossy::lossy_place_warnings(&clean).is_empty());
}
