//! The studies' findings on synthetic runs built experiment by experiment
//! (sunos-ipc, openlink92, huang-chen, the verdict): each sentence checked
//! on data that makes it read one way and on data that flips it.

use crate::data::StudyData;
use crate::fixtures::{outcome_of, study_run_of};
use record::{TestKind, TrialParams};
use std::collections::BTreeMap;

/// One point of a synthetic experiment: its parameters and metrics.
type SyntheticPoint<'a> = (TrialParams, Vec<(&'a str, f64)>);

/// A study run of `study` from experiments, each a list of points with
/// their metrics; three trials per point at ±1%.
fn study_run(study: &str, exps: Vec<(&str, Vec<SyntheticPoint>)>) -> StudyData {
    let exps = exps
        .into_iter()
        .map(|(id, pts)| {
            let pts = pts
                .into_iter()
                .map(|(params, metrics)| {
                    let outcomes = [0.99, 1.0, 1.01]
                        .iter()
                        .map(|f| outcome_of(metrics.iter().map(|(k, v)| (*k, v * f))))
                        .collect();
                    (params, outcomes)
                })
                .collect();
            (id, pts)
        })
        .collect();
    study_run_of(study, "", exps, BTreeMap::new())
}

fn all_findings(sections: Vec<report::Section>) -> Vec<String> {
    crate::fixtures::finding_texts(sections)
}

#[test]
fn an_experiment_left_out_at_the_place_is_said_with_why() {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.sndbuf = Some(4096);
    p.rcvbuf = Some(4096);
    p.topology = record::PlaceName::Loopback;
    let m = vec![("throughput_bps", 1e9)];
    let mut d = study_run("sunos-ipc", vec![("sockbuf-4k", vec![(p, m)])]);
    let warnings = |d: &StudyData| -> Vec<String> {
        crate::sunos_ipc::report(d)
            .remove(0)
            .blocks
            .iter()
            .filter_map(|b| match b {
                report::Block::Warning(w) => Some(w.clone()),
                _ => None,
            })
            .collect()
    };
    assert!(warnings(&d).is_empty(), "{:#?}", warnings(&d));
    let plan = crate::plan(
        "sunos-ipc",
        &crate::PlanOptions {
            quick: true,
            topology: Some("loopback".into()),
        },
    )
    .unwrap();
    d.settings.skipped = plan.skipped;
    let w = warnings(&d);
    assert!(
        w.iter().any(|w| w.starts_with(
            "The buffer sizes on a 10 Mbit/s link with a 20 ms RTT were not run: --topology \
             loopback has no link profile"
        )),
        "{w:#?}"
    );
}

#[test]
fn sunos_ipc_findings_follow_the_data() {
    // Throughput (Mbit/s) and ACKs per data segment per buffer size on veth.
    let run = |curve: &[(&str, u64, f64, f64)], mem_bw: Option<f64>| {
        let exps = curve
            .iter()
            .map(|&(id, size, mbit, acks)| {
                let mut p = TrialParams::defaults(TestKind::TcpStream);
                p.sndbuf = Some(size);
                p.rcvbuf = Some(size);
                let mut lo = p.clone();
                p.topology = "veth".into();
                let m = vec![
                    ("throughput_bps", mbit * 1e6),
                    // 100 of the 1000 segments sent were lost: the ACKs
                    // count per segment received.
                    ("data_segs_out", 1000.0),
                    ("receiver_data_segs_in", 900.0),
                    ("receiver_segs_out", acks * 900.0),
                ];
                lo.topology = record::PlaceName::Loopback;
                (id, vec![(p, m.clone()), (lo, m)])
            })
            .collect();
        let mut d = study_run("sunos-ipc", exps);
        d.host.mem_bw = mem_bw;
        all_findings(crate::sunos_ipc::report(&d))
    };
    let a = run(
        &[
            ("sockbuf-4k", 4096, 700.0, 0.5),
            ("sockbuf-16k", 16384, 1900.0, 0.2),
            ("sockbuf-1m", 1 << 20, 1950.0, 0.15),
        ],
        Some(1e10),
    );
    assert!(
        a.iter().any(|f| f
            == "On veth, the largest step is from 4 KB to 16 KB buffers (2.71×, beyond the 95% CIs), where the paper found it."),
        "{a:#?}"
    );
    assert!(
        a.iter()
            .any(|f| f
                .contains("ACKs per data segment it received with 4 KB buffers and 0.150 ± 0 with 1 MB: 3.33× as many with the smaller buffers, beyond the 95% CIs")),
        "{a:#?}"
    );
    // 1950 Mbit/s (243.75 MB/s) is 2% of a 10 GB/s DRAM copy rate.
    assert!(
        a.iter().any(|f| f
            .starts_with("Local TCP's highest mean is 1.95 ± 0.05 Gbit/s (1 MB buffers): 2% of this host's DRAM copy rate")),
        "{a:#?}"
    );
    let b = run(
        &[
            ("sockbuf-4k", 4096, 700.0, 0.3),
            ("sockbuf-16k", 16384, 760.0, 0.3),
            ("sockbuf-1m", 1 << 20, 1950.0, 0.3),
        ],
        None,
    );
    assert!(
        b.iter().any(|f| f
            .contains("from 16 KB to 1 MB buffers (2.57×, beyond the 95% CIs); the paper's was from 4 KB to 16 KB")),
        "{b:#?}"
    );
    assert!(!b.iter().any(|f| f.starts_with("Local TCP")), "{b:#?}");
    assert_ne!(a, b);
}

/// The socket-buffer table and figure write throughput in one prefix for
/// the column and the axis, the one the finding beside them uses.
#[test]
fn the_socket_buffer_table_and_figure_share_the_findings_prefix() {
    let section = |mbit: f64| {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.sndbuf = Some(65536);
        p.rcvbuf = Some(65536);
        p.topology = "veth".into();
        let m = vec![("throughput_bps", mbit * 1e6)];
        let d = study_run("sunos-ipc", vec![("sockbuf-64k", vec![(p, m)])]);
        crate::sunos_ipc::report(&d).remove(0)
    };
    let header_and_cell = |s: &report::Section| {
        s.blocks
            .iter()
            .find_map(|b| match b {
                report::Block::Table(t) if t.header[1] == "buffers" => {
                    Some((t.header[2].clone(), t.rows[0][2].clone()))
                }
                _ => None,
            })
            .expect("the socket-buffer table")
    };
    let fast = section(21700.0);
    let (header, cell) = header_and_cell(&fast);
    assert_eq!(header, "throughput (Gbit/s)");
    assert!(cell.starts_with("21.7"), "{cell}");
    let fig = fast.figures().next().unwrap();
    assert_eq!(fig.y_label, "throughput (Gbit/s)");
    assert!((fig.series[0].points[0].y - 21.7).abs() < 1e-9);
    let slow = section(9.4);
    let (header, cell) = header_and_cell(&slow);
    assert_eq!(header, "throughput (Mbit/s)");
    assert!(cell.starts_with("9.40"), "{cell}");
    assert_eq!(
        slow.figures().next().unwrap().y_label,
        "throughput (Mbit/s)"
    );
}

#[test]
fn the_implementation_matrix_and_stream_size_findings_follow_the_data() {
    let matrix = |reno: f64, bbr: f64| {
        let pts = [("reno", reno), ("bbr", bbr)]
            .into_iter()
            .map(|(cc, mbit)| {
                let mut p = TrialParams::defaults(TestKind::TcpStream);
                p.cc = Some(cc.into());
                p.topology = "lan100".into();
                (
                    p,
                    vec![("throughput_bps", mbit * 1e6), ("retransmits", 0.0)],
                )
            })
            .collect();
        all_findings(crate::openlink92::report(&study_run(
            "openlink92",
            vec![("implementations", pts)],
        )))
    };
    let a = matrix(94.0, 47.0);
    assert!(
        a.iter().any(
            |f| f.starts_with("On lan100, Linux TCP, reno is the fastest sender (94.0")
                && f.contains("2.00× apart beyond the 95% CIs")
        ),
        "{a:#?}"
    );
    let b = matrix(90.0, 92.0);
    assert!(
        b.iter()
            .any(|f| f.contains("bbr 92") && f.contains("do not differ beyond their 95% CIs")),
        "{b:#?}"
    );
    // Stream size: NODELAY against Nagle at small writes.
    let stream = |nodelay_cost: f64| {
        let mut pts = Vec::new();
        for (nodelay, cost) in [(true, nodelay_cost), (false, 2.0)] {
            for ws in [64u64, 1024] {
                let mut p = TrialParams::defaults(TestKind::TcpStream);
                p.write_size = ws;
                p.nodelay = nodelay;
                let c = if ws == 64 { cost } else { 0.5 };
                pts.push((p, vec![("service_demand_sender_us_per_kb", c)]));
            }
        }
        all_findings(crate::huang_chen::report(&study_run(
            "huang-chen",
            vec![("stream-size", pts)],
        )))
    };
    let c = stream(8.0);
    assert!(
        c.iter().any(|f| f.starts_with("At 64-byte writes, NODELAY costs the sender 4.00× the CPU per KB of Nagle's algorithm, beyond the 95% CIs")),
        "{c:#?}"
    );
    let e = stream(3.0);
    assert!(
        e.iter().any(|f| f.contains("1.50× the CPU per KB")),
        "{e:#?}"
    );
    let same = stream(2.01);
    assert!(
        same.iter()
            .any(|f| f.contains("cost the sender the same CPU per KB within the 95% CIs")),
        "{same:#?}"
    );
}

#[test]
fn the_verdict_leaves_out_pathological_experiments() {
    let point = |rwnd: f64| {
        let p = TrialParams::defaults(TestKind::TcpStream);
        (
            p,
            vec![
                ("throughput_bps", 1e9),
                ("busy_s", 1.0),
                ("rwnd_limited_s", rwnd),
            ],
        )
    };
    let d = study_run(
        "openlink92",
        vec![
            ("sws-healthy", vec![point(0.1)]),
            ("sws-pathological", vec![point(1.0)]),
        ],
    );
    let v = crate::verdict::verdict(&d);
    let w = v.iter().find(|b| b.name == "the receive window").unwrap();
    assert!((w.score.unwrap() - 0.1).abs() < 1e-9, "{v:#?}");
}

#[test]
fn huang_chen_totals_and_fits_come_from_the_unprobed_twin() {
    // Issue 30, rule 1: the probed trials' sender CPU is flat across MSS
    // (the sampler's own cost swamps it); the unprobed twin's falls with
    // the segment count. The Fig. 8 curve and the fit follow the twin.
    let point = |mss: u32, cpu_s: f64| {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.mss = Some(mss);
        p.topology = "veth".into();
        let bytes = 20e6;
        (
            p,
            vec![
                ("bytes", bytes),
                ("data_segs_out", bytes / f64::from(mss)),
                ("cpu_sender_s", cpu_s),
                ("throughput_bps", 1e9),
            ],
        )
    };
    let probed = vec![point(256, 0.1), point(512, 0.1), point(1280, 0.1)];
    let unprobed = vec![point(256, 0.114), point(512, 0.080), point(1280, 0.047)];
    let texts = |d: &StudyData| -> Vec<String> {
        crate::huang_chen::report(d)
            .into_iter()
            .flat_map(|s| s.blocks)
            .filter_map(|b| match b {
                report::Block::Finding { text } | report::Block::Paragraph(text) => Some(text),
                _ => None,
            })
            .collect()
    };
    let with_twin = study_run(
        "huang-chen",
        vec![
            ("mss-blocks", probed.clone()),
            ("unprobed-mss-blocks", unprobed),
        ],
    );
    let t = texts(&with_twin);
    assert!(
        t.iter()
            .any(|x| x.contains("come from the MSS experiment's unprobed twin (9 trials")),
        "{t:#?}"
    );
    let curve = t
        .iter()
        .find(|x| x.contains("sender CPU per 20 MB"))
        .unwrap_or_else(|| panic!("{t:#?}"));
    assert!(curve.contains("falls"), "{curve}");
    // Without a twin the probed trials are used, and the report says so.
    let alone = study_run("huang-chen", vec![("mss-blocks", probed)]);
    let t = texts(&alone);
    assert!(
        t.iter()
            .any(|x| x.contains("this run has no unprobed twin")),
        "{t:#?}"
    );
    let curve = t
        .iter()
        .find(|x| x.contains("sender CPU per 20 MB"))
        .unwrap_or_else(|| panic!("{t:#?}"));
    assert!(!curve.contains("falls"), "{curve}");
}
