//! Issue 29 item 4: `--host-model 386-33` rebuilds Huang & Chen's 386/33
//! sender on tcplab's stack. Its speeds come from a calibration on this
//! host at MSS 1024; the test checks that the slowed stack takes the
//! paper's time per segment there, in each class and in all, and that the
//! paper's other columns (256–1280), which the calibration never saw,
//! land within a factor of two. It prints Table 1 row by row beside the
//! model's.

mod common;

use analysis::host_model::{
    model_rows, paper_costs, table1_column, us_per_packet, TABLE1, TABLE1_SENDER_TOTAL,
};
use common::{assert_usage_error, json_of, tcplab, temp_db};
use record::factor::{
    Checksum, DelayedAck, PcbLookup, RouteTable, RttEstimator, TimerClock, WorkClass,
};
use record::{Store, TrialStatus};

#[test]
fn a_host_model_is_refused_where_its_sender_is_linux_or_unknown() {
    let (_dir, db) = temp_db();
    for (args, needle) in [
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--host-model",
                "486",
            ][..],
            "invalid value \"486\" for --host-model: expected 386-33",
        ),
        (
            &["bench", "tcp-stream", "--host-model", "386-33"][..],
            "--host-model 386-33 rebuilds the paper's sender on tcplab's own stack",
        ),
        (
            // The client sends, and it is Linux.
            &[
                "bench",
                "tcp-stream",
                "--server-stack",
                "tcplab",
                "--host-model",
                "386-33",
            ][..],
            "give the sending end tcplab's stack",
        ),
    ] {
        assert_usage_error(&tcplab(&db, args), needle);
    }
    assert!(!db.exists(), "a store was created for bad input");
}

#[test]
fn the_386_model_takes_table_1s_time_per_segment() {
    if !testkit::need_root("the stack's place (a namespace and TUN devices) needs root") {
        return;
    }
    if !(testkit::need_path("/dev/net/tun", "the TUN driver") && testkit::need_tool("ip")) {
        return;
    }
    let (_dir, db) = temp_db();
    // The calibration and the trials are timed: one timed test at a time.
    let _timing = testkit::timing_lock();
    let out = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--stack",
            "tcplab",
            "--host-model",
            "386-33",
            "--mss",
            "256,512,768,1024,1280",
            "--bytes",
            "512K",
            "--json",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{stderr}");
    let j = json_of(&out);
    assert!(
        stderr.contains("--host-model 386-33: --cpu-speed sender=")
            || stderr.contains("using the last speeds"),
        "no calibration line: {stderr}"
    );
    let run_id = j["run_id"].as_i64().unwrap();
    let store = Store::open(&db).unwrap();
    let run = store.load_run(run_id).unwrap();
    assert_eq!(run.points.len(), 5);
    let speeds = run.points[0]
        .params
        .cpu_speed
        .expect("the model set a speed");
    for pt in &run.points {
        let p = &pt.params;
        // One calibration for the sweep: every point runs the same 386.
        assert_eq!(p.cpu_speed, Some(speeds));
        assert!(
            speeds.receiver.is_full(),
            "the Linux receiver is not slowed"
        );
        for c in WorkClass::ALL {
            let f = speeds.sender.of(c);
            assert!(f < 0.1, "{}: {f} is not a 386 on this host", c.name());
        }
        assert_eq!((p.sndbuf, p.rcvbuf), (Some(4096), Some(4096)));
        assert_eq!(p.delack, Some(DelayedAck::Off));
        assert!(p.quickack);
        assert_eq!(p.route_table, Some(RouteTable::Linear));
        assert_eq!(p.checksum, Some(Checksum::Bytewise));
        assert_eq!(p.timers, Some(TimerClock::Bsd));
        assert_eq!(p.rtt_estimator, Some(RttEstimator::Bsd));
        assert_eq!(p.initial_window, Some(1));
        assert_eq!(p.pcb_lookup, Some(PcbLookup::List));
        assert_eq!(p.route_cache, Some(true));
    }
    let mut lines = vec![format!(
        "{:<24} {}",
        "µs per segment",
        [256, 512, 768, 1024, 1280]
            .map(|m| format!("{:>22}", format!("MSS {m}: paper / 386")))
            .join("")
    )];
    let mut table = vec![vec![(0.0, 0.0); 5]; TABLE1.len() + 2];
    let mut off_by_2 = Vec::new();
    for pt in &run.points {
        let mss = pt.params.mss.unwrap();
        let col = table1_column(mss).unwrap();
        let trial = run
            .trials
            .iter()
            .find(|t| t.point_id == pt.id && t.status == TrialStatus::Ok)
            .unwrap_or_else(|| panic!("MSS {mss}: no trial succeeded"));
        let m = &trial.outcome.metrics;
        let segments = m["stack_client_segments_out"];
        let profile = store
            .load_profile(trial.id)
            .unwrap()
            .expect("an accounted trial stores its profile");
        let rows = model_rows(&profile, speeds.sender, segments);
        for (i, r) in TABLE1.iter().enumerate() {
            table[i][col] = (us_per_packet(r.2[col], col), rows.rows[i]);
        }
        table[TABLE1.len()][col] = (0.0, rows.outside);
        // The slowed stack's whole busy time, spins included, per segment.
        let busy = m["stack_client_account_busy_s"] * 1e6 / segments;
        let paper_total = us_per_packet(TABLE1_SENDER_TOTAL[col], col);
        table[TABLE1.len() + 1][col] = (paper_total, busy);
        let ratio = busy / paper_total;
        if !(0.5..=2.0).contains(&ratio) {
            off_by_2.push(format!("MSS {mss}: {busy:.0} against {paper_total:.0} µs"));
        }
        if mss == 1024 {
            // The reference column: each class takes the paper's time,
            // within what this host's own cost per segment drifts from
            // trial to trial (the calibration's transfers are other
            // trials): 0.89-1.24x in all over 6 trials at fixed speeds.
            let paper = paper_costs(record::factor::HostModel::I386At33, col);
            let dilated =
                |c: &str| m[&format!("stack_client_account_{c}_dilated_s")] * 1e6 / segments;
            let outside = m["stack_client_account_dilation_outside_added_s"] * 1e6 / segments;
            for (class, ours, theirs) in [
                ("compute", dilated("compute") + outside, paper.compute),
                ("data", dilated("data"), paper.data),
                ("device", dilated("device"), paper.device),
            ] {
                assert!(
                    (ours / theirs - 1.0).abs() < 0.5,
                    "MSS 1024 {class}: {ours:.1} µs per segment against the paper's {theirs:.1}"
                );
            }
            assert!(
                (ratio - 1.0).abs() < 0.35,
                "MSS 1024: {busy:.1} µs per segment against the paper's {paper_total:.1}"
            );
            // A sender this slow sets the rate: a segment per busy time.
            let rate = m["throughput_bps"];
            let bound = 8.0 * f64::from(mss) / (busy * 1e-6);
            assert!(
                rate <= 1.05 * bound && rate >= 0.7 * bound,
                "MSS 1024: {rate:.0} bit/s against the sender's {bound:.0}"
            );
        }
    }
    let names: Vec<String> = TABLE1
        .iter()
        .map(|r| r.0.to_string())
        .chain(["(other blocks)".into(), "Tx. time (sender)".into()])
        .collect();
    for (name, row) in names.iter().zip(&table) {
        lines.push(format!(
            "{name:<24} {}",
            row.iter()
                .map(|(p, o)| format!("{:>22}", format!("{p:.1} / {o:.1}")))
                .collect::<String>()
        ));
    }
    eprintln!("{}", lines.join("\n"));
    assert!(
        off_by_2.is_empty(),
        "the 386's time per segment off by more than 2x: {off_by_2:?}"
    );
}
