//! The terminal table, a run's JSON and the Methods section, on runs built
//! by the parent module's helpers.

use super::*;

#[test]
fn the_terminal_table_shows_the_varying_factor_and_each_points_mean() {
    let (_dir, mut store) = store();
    let run = store_run(
        &mut store,
        HOST,
        vec![point(1024, &[100e6, 102e6]), point(65536, &[900e6, 900e6])],
    );
    let points = summaries(&run);
    let varying = crate::terminal::varying_factors(&points);
    assert_eq!(varying, ["write_size"]);
    let text = crate::terminal::table(TestKind::TcpStream, &points, &varying, &[]);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" 1K ") || l.contains(" 64K "))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    // Sizes as --write-size takes them; one unit for the column; three
    // digits of the mean with the CI to the same place (the CI of 100 and
    // 102 is ±12.7).
    assert!(text.contains("throughput (Mbit/s)"), "{text}");
    assert!(rows[0].contains(" 101 ± 13 "), "{text}");
    assert!(rows[1].contains(" 900 ± 0 "), "{text}");
    // Two trials, but a CI narrower than the mean: no small-sample mark.
    assert!(!text.contains('‡'), "{text}");
    assert!(crate::terminal::failure_lines(&points, &varying).is_empty());

    // A single point varies nothing; its JSON names it by index and params.
    let one = store_run(&mut store, HOST, vec![point(4096, &[50e6])]);
    let one_points = summaries(&one);
    assert!(crate::terminal::varying_factors(&one_points).is_empty());
    let doc = crate::run_json::run_json(&one, &one_points, true);
    assert_eq!(doc["run_id"], one.meta.id);
    assert_eq!(doc["points"][0]["params"]["write_size"], 4096);
    assert_eq!(doc["trials"].as_array().map(Vec::len), Some(1));
}

/// Ten data skbs of 2896 bytes (two wire segments at MSS 1448), each
/// queued at the sender's egress and, when `routed`, again (same skb, same
/// headers) at a router's egress.
fn gso_events(routed: bool) -> Vec<ProbeEvent> {
    let mut v = Vec::new();
    for skb in 1..=10u64 {
        let mut p = packet(ProbeId::DevQueue, skb * 1_000_000, skb);
        p.len = 2896;
        p.seq = skb as u32 * 2896;
        v.push(p);
        if routed {
            let mut fwd = p;
            (fwd.ts_ns, fwd.ifindex) = (p.ts_ns + 50_000, 3);
            v.push(fwd);
        }
    }
    v
}

/// The run report's packet table of one probed trial with these records
/// and metrics.
fn packet_table_of(events: &[ProbeEvent], trial_metrics: &[(&str, f64)]) -> Table {
    let (_dir, mut store) = store();
    let run = store_run(
        &mut store,
        HOST,
        vec![PointSpec {
            write_size: 1024,
            trials: vec![(
                metrics(trial_metrics),
                Extras {
                    events: Some(blob(events, EVENT_VERSION)),
                    profile: None,
                    path_summary: None,
                    details: None,
                },
            )],
        }],
    );
    let r = report_of(&store, &run);
    let path = section(&r, "Probes: the path of one trial").expect("a path section");
    tables(path)
        .into_iter()
        .find(|t| t.header[0] == "flow")
        .expect("the packet table")
        .clone()
}

#[test]
fn the_packet_table_counts_each_packet_once_in_wire_segments() {
    let with_mss = [("throughput_bps", 1e8), ("snd_mss", 1448.0)];
    // Routed: the router's copies are not counted again, and each 2896-byte
    // aggregate is two 1448-byte segments.
    let t = packet_table_of(&gso_events(true), &with_mss);
    assert_eq!(
        (
            t.rows[0][1].as_str(),
            t.rows[0][2].as_str(),
            t.rows[0][3].as_str()
        ),
        ("20", "10", "1448")
    );
    assert!(t.caption.as_deref().unwrap_or("").contains("MSS, 1448 B"));
    // The same packets on one hop give the same counts.
    let direct = packet_table_of(&gso_events(false), &with_mss);
    assert_eq!(direct.rows[0][1..4], t.rows[0][1..4]);
    // Without the sender's MSS each skb counts once, and the caption says so.
    let t = packet_table_of(&gso_events(true), &[("throughput_bps", 1e8)]);
    assert_eq!(
        (t.rows[0][1].as_str(), t.rows[0][3].as_str()),
        ("10", "2896")
    );
    assert!(t
        .caption
        .as_deref()
        .unwrap_or("")
        .contains("MSS is unknown"));
}

/// The text of one key of the methods section.
fn method(s: &Section, key: &str) -> String {
    s.blocks
        .iter()
        .find_map(|b| match b {
            Block::KeyValues(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no {key} in the methods section"))
}

#[test]
fn the_methods_section_says_what_was_controlled_and_what_was_not_recorded() {
    let (_dir, mut store) = store();
    let mut run = store_run(
        &mut store,
        HOST,
        vec![point(1024, &[100e6, 101e6]), point(65536, &[900e6, 905e6])],
    );
    // An older run: nothing of the kernel, no offloads, no probes, no pinning.
    let points = summaries(&run);
    let s = crate::methods::methods_section(&run, &points);
    assert_eq!(s.title, "Methods");
    assert!(method(&s, "kernel tick").starts_with("not recorded"));
    assert_eq!(method(&s, "CPU mitigations"), "not recorded");
    assert!(
        method(&s, "offloads").contains("4 trials as the host had them"),
        "{}",
        method(&s, "offloads")
    );
    assert!(method(&s, "pinning").starts_with("not pinned"));
    assert!(method(&s, "receive steering (RPS)").starts_with("not recorded"));
    assert!(method(&s, "probes").starts_with("none"));
    assert_eq!(
        method(&s, "trials per point"),
        "2 measured trials per point (4 in all, 2 points)"
    );

    // The same run as recorded now: HZ, mitigations, offloads off at both
    // ends in one trial, every trial probed, pinned endpoints.
    run.meta.host.kernel_hz = Some(250);
    run.meta.host.cpu_vulnerabilities = [
        (
            "spectre_v2".to_string(),
            "Mitigation: Retpolines".to_string(),
        ),
        ("meltdown".to_string(), "Not affected".to_string()),
    ]
    .into_iter()
    .collect();
    let off = serde_json::json!({"tso": false, "gso": false, "gro": false,
        "tx_checksum": false, "rx_checksum": false});
    run.trials[0].outcome.details["lab"]["offloads"] = serde_json::json!({
        "sender": {"device": "a", "state": off}, "receiver": {"device": "b", "state": off}});
    for t in &mut run.trials {
        t.outcome.details["probe"] = serde_json::json!({"depth": "full"});
        t.outcome.details["lab"]["steering"] =
            serde_json::json!({"sender_cpu": null, "receiver_cpu": null});
    }
    for t in &mut run.trials[..2] {
        t.outcome.details["lab"]["steering"] =
            serde_json::json!({"sender_cpu": 0, "receiver_cpu": 1});
        t.outcome
            .metrics
            .insert("core_receiver_softirq_s".into(), 0.4);
    }
    let mut points = summaries(&run);
    points[0].params.pin = Some(record::params::Pin {
        sender: Some(0),
        receiver: Some(1),
    });
    let s = crate::methods::methods_section(&run, &points);
    assert!(method(&s, "kernel tick")
        .starts_with("HZ 250: TCP_INFO's busy and limited times tick in 4 ms"));
    assert_eq!(
        method(&s, "CPU mitigations"),
        "spectre_v2: Mitigation: Retpolines"
    );
    let o = method(&s, "offloads");
    assert!(
        o.contains("sender TSO off, GSO off, GRO off, tx csum off, rx csum off; receiver TSO off"),
        "{o}"
    );
    assert!(
        o.contains("(1 trial)") && o.contains("3 trials as the host had them"),
        "{o}"
    );
    // Only the first of the points was pinned: the line says which.
    let pin = method(&s, "pinning");
    assert!(
        pin.starts_with(&format!(
            "sender and receiver pinned: sender=0,receiver=1 (1 of {} points)",
            points.len()
        )) && (points.len() == 1 || pin.contains("points not pinned")),
        "{pin}"
    );
    let st = method(&s, "receive steering (RPS)");
    assert!(
        st.starts_with(
            "2 trials steered each pinned side's receive processing to its own CPU \
             (sender's end → CPU 0, receiver's end → CPU 1)"
        ) && st.contains("2 trials not steered")
            && st.contains("the receiver's CPU spent a median 0.40 s per trial in softirq")
            && !st.contains("the sender's CPU"),
        "{st}"
    );
    let p = method(&s, "probes");
    assert!(
        p.starts_with("4 of 4 trials probed") && p.contains("no unprobed twin"),
        "{p}"
    );

    // Probed trials beside unprobed ones of the same point: their ratio.
    let (_dir2, mut store2) = self::store();
    let mut twins = store_run(
        &mut store2,
        HOST,
        vec![point(1024, &[80e6, 80e6, 100e6, 100e6])],
    );
    for t in &mut twins.trials[..2] {
        t.outcome.details["probe"] = serde_json::json!({"depth": "full"});
    }
    let s = crate::methods::methods_section(&twins, &summaries(&twins));
    let p = method(&s, "probes");
    assert!(
        p.starts_with("2 of 4 trials probed") && p.contains("0.80× the twins'"),
        "{p}"
    );
}

#[test]
fn the_methods_give_each_places_link_settings() {
    let (_dir, mut store) = store();
    let mut run = store_run(
        &mut store,
        HOST,
        vec![point(1024, &[9e6, 9.1e6]), point(65536, &[5e6, 5.1e6])],
    );
    let link = |rate: Option<u64>, delay: f64, loss: f64, queue: u32| {
        serde_json::json!({"rate_bps": rate, "delay_s": delay, "jitter_s": 0.0, "loss": loss,
            "reorder": 0.0, "mtu": 1500, "queue_frames": queue, "framing_bytes": 24,
            "via": "auto"})
    };
    for (i, t) in run.trials.iter_mut().enumerate() {
        t.outcome.details["lab"] = if i < 2 {
            serde_json::json!({"place": {"label": "ether10", "mechanism": "tbf",
                "link": link(Some(10_000_000), 0.01, 0.0, 32)},
                "calibration": {"goodput_bps": 9.39e6}})
        } else {
            serde_json::json!({"place": {"label": "lossy", "mechanism": "netem",
                "link": link(None, 0.0, 0.001, 100)}})
        };
    }
    let s = crate::methods::methods_section(&run, &summaries(&run));
    let p = method(&s, "places and links");
    assert!(
        p.contains(
            "ether10 via tbf: rate 10.0 Mbit/s, one-way delay 10.0 ms, no jitter, loss or \
             reordering, MTU 1500, queue 32 frames, 24 B framing per frame, token-bucket burst \
             3028 B (two frames or 1 ms at the rate, the larger), calibrated goodput 9.39 Mbit/s (a 2-3 s cubic bulk transfer when the place was set up)"
        ),
        "{p}"
    );
    assert!(
        p.contains("lossy via netem: no rate limit, no added delay, loss 0.100 %, MTU 1500"),
        "{p}"
    );
    assert!(
        !p.contains(
            "lossy via netem: no rate limit, no added delay, loss 0.100 %, MTU 1500, queue"
        ),
        "{p}"
    );
}

#[test]
fn the_terminal_table_and_the_report_write_a_metric_alike_and_mark_small_wild_samples() {
    let (_dir, mut store) = store();
    // Two trials of 1 and 55 Gbit/s: a CI far wider than the mean. Five
    // trials as wild are not marked, nor two that agree.
    let run = store_run(
        &mut store,
        HOST,
        vec![
            point(1024, &[1e9, 55e9]),
            point(4096, &[1e9, 55e9, 1e9, 55e9, 1e9]),
            point(65536, &[30e9, 31e9]),
        ],
    );
    let points = summaries(&run);
    let varying = crate::terminal::varying_factors(&points);
    let text = crate::terminal::table(TestKind::TcpStream, &points, &varying, &[]);
    let row = |size: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {size} ")))
            .unwrap_or_else(|| panic!("no {size} row: {text}"))
            .to_string()
    };
    assert!(text.contains("throughput (Gbit/s)"), "{text}");
    assert!(row("1K").contains(" 28 ± 343 ‡ "), "{text}");
    assert!(!row("4K").contains('‡'), "{text}");
    assert!(row("64K").contains(" 30.5 ± 6.4 "), "{text}");
    assert!(!row("64K").contains('‡'), "{text}");
    assert!(
        text.ends_with("\n‡ fewer than 5 trials and a CI wider than the mean"),
        "{text}"
    );

    // The run report's results table: the same header and cells, and the
    // same footnote.
    let s = crate::run_report::results_section(&points, &varying, &[], &[]);
    let table = s
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
        .unwrap();
    let col = table
        .header
        .iter()
        .position(|h| h == "throughput (Gbit/s)")
        .unwrap();
    let cells: Vec<&str> = table.rows.iter().map(|r| r[col].as_str()).collect();
    assert_eq!(cells[0], "28 ± 343 ‡");
    assert_eq!(cells[2], "30.5 ± 6.4");
    for (i, c) in cells.iter().enumerate() {
        assert!(row(["1K", "4K", "64K"][i]).contains(c), "{c} in {text}");
    }
    assert!(s.blocks.iter().any(|b| matches!(b,
        Block::Paragraph(p) if p == report::format::SMALL_SAMPLE_NOTE)));

    // compare marks the same cell and gives the footnote.
    let (runs, cmp) = compared(&store, &[&run, &run]);
    let m = crate::metrics::known_metric("throughput_bps");
    let t = cmp.table(&runs, m);
    assert_eq!(t.rows[0][1], "28 ± 343 ‡");
    let text = crate::compare::compare_text(&runs, &cmp, &t);
    assert!(text.contains(report::format::SMALL_SAMPLE_NOTE), "{text}");
}

/// Issue 30, rule 8: the methods a reader reruns from: the tool and seed,
/// the trial order as the sequence numbers show it (both ways), the
/// sampler, and each place's commands and qdiscs.
#[test]
fn the_methods_give_what_a_rerun_needs() {
    let (_dir, mut store) = store();
    let mut run = store_run(
        &mut store,
        HOST,
        vec![point(1024, &[9e6, 9.1e6]), point(65536, &[5e6, 5.1e6])],
    );
    let kv = |run: &StoredRun, key: &str| {
        let s = crate::methods::methods_section(run, &summaries(run));
        method(&s, key)
    };
    assert_eq!(kv(&run, "tcplab"), "version test, run seed 7");
    // store_run ran the points in the same order in both rounds.
    assert!(
        kv(&run, "trial order").starts_with(
            "2 rounds of one trial per point, the points in the same order every round"
        ),
        "{}",
        kv(&run, "trial order")
    );
    // Round 1 ran point 2 first: the order changed.
    let seqs: Vec<u32> = run.trials.iter().map(|t| t.seq).collect();
    let (p2r1, p1r1) = (
        run.trials
            .iter()
            .position(|t| t.repetition == 1 && t.point_id == run.trials[2].point_id)
            .unwrap(),
        run.trials
            .iter()
            .position(|t| t.repetition == 1 && t.point_id == run.trials[0].point_id)
            .unwrap(),
    );
    run.trials[p2r1].seq = seqs[p1r1];
    run.trials[p1r1].seq = seqs[p2r1];
    assert!(
        kv(&run, "trial order").starts_with(
            "2 rounds of one trial per point; the points' order changed between rounds"
        ),
        "{}",
        kv(&run, "trial order")
    );
    // No sampled trial: no sampler line; no place commands: no heading.
    let s = crate::methods::methods_section(&run, &summaries(&run));
    assert!(!s.blocks.iter().any(|b| matches!(b, Block::Heading(_))));
    for (i, t) in run.trials.iter_mut().enumerate() {
        t.outcome.details["probe"]["cpu"] = serde_json::json!({"period_ns": 100_000,
            "samples": 9000 + i, "broken_stacks": i, "lost_samples": 0});
        t.outcome.details["lab"]["place"] = serde_json::json!({"label": "veth",
            "commands": ["ip netns add tcplab-1-a", "ip netns add tcplab-1-b"],
            "qdiscs": ["tcplab-1-a: qdisc noqueue 0: dev tcplab-1-a root refcnt 2"]});
    }
    let sampler = kv(&run, "CPU sampler");
    assert!(
        sampler.starts_with("the cpu-clock timer at 10000 Hz on every CPU (perf_event BPF, kernel and user stacks), 4 sampled trials; samples per trial 9000–9003, broken stacks per trial 0–3"),
        "{sampler}"
    );
    let s = crate::methods::methods_section(&run, &summaries(&run));
    let commands: Vec<&str> = s
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Command { line, .. } => Some(line.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        commands,
        ["ip netns add tcplab-1-a", "ip netns add tcplab-1-b"]
    );
    assert!(s.blocks.iter().any(|b| matches!(b, Block::Paragraph(p)
        if p == "veth: each device's root qdisc once built: tcplab-1-a: qdisc noqueue 0: dev tcplab-1-a root refcnt 2.")));
    // A stack place's setup, once however many fresh tags its trials had.
    for (i, t) in run.trials.iter_mut().enumerate() {
        t.outcome.details["stack"] = serde_json::json!({"client": "tcplab", "server": "kernel",
            "commands": [format!("ip netns add tcplab-{i}-u"), format!("ip -n tcplab-{i}-u addr add 10.213.1.1/24 dev tcplab-{i}-c")]});
    }
    let s = crate::methods::methods_section(&run, &summaries(&run));
    let headings: Vec<&String> = s
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Heading(h) => Some(h),
            _ => None,
        })
        .collect();
    assert_eq!(
        headings,
        [
            "veth: the commands that built it, in order",
            "tcplab's stack (tcplab → kernel): the commands that set up its namespace and TUN devices"
        ]
    );
}

/// Congestion control is a TCP point's: UDP points beside reno ones do not
/// add "the host's default", and a run with no TCP point says so.
#[test]
fn the_methods_name_the_tcp_points_congestion_control() {
    let (_dir, mut store) = store();
    let run = store_run(
        &mut store,
        HOST,
        vec![point(1024, &[9e6, 9.1e6]), point(65536, &[5e6, 5.1e6])],
    );
    let mut points = summaries(&run);
    let cc = |points: &[PointSummary]| {
        method(
            &crate::methods::methods_section(&run, points),
            "congestion control",
        )
    };
    points[0].params.cc = Some("reno".into());
    points[1].params.test = TestKind::UdpStream;
    assert_eq!(cc(&points), "reno");
    points[1].params.test = TestKind::TcpStream;
    assert!(
        cc(&points).starts_with("reno (and the host's default, "),
        "{}",
        cc(&points)
    );
    for p in points.iter_mut() {
        p.params.test = TestKind::UdpStream;
    }
    assert_eq!(cc(&points), "none: no point ran over TCP");
}
