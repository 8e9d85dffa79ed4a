//! Issue 29 item 4: `--host-model 386-33` rebuilds Huang & Chen's 386/33
//! sender on tcplab's stack. Its speeds come from a calibration on this
//! host at MSS 1024; the test checks that the slowed stack takes the
//! paper's time per segment there, in each class and in all, with an ACK
//! per segment as the paper's receiver sent, and that at the paper's other
//! columns (256–1280) the data class and the total still land within a
//! factor of two (a check that this host's work grows with the segment as
//! the 386's did; the class split itself comes from all five columns). It
//! prints Table 1 class by class and row by row beside the model's, and
//! what a model with no measurement would give.

mod common;

use analysis::host_model::{model_rows, paper_costs, table1_column, us_per_packet, TABLE1};
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
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--host-model",
                "386-33",
                "--cpu-speed",
                "0.5",
            ][..],
            "--host-model 386-33 cannot be combined with --cpu-speed",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--host-model",
                "386-33",
                "--account",
                "sample:4",
            ][..],
            "cannot be combined with --account sample:N",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--host-model",
                "386-33",
                "--layers",
                "threaded",
            ][..],
            "cannot be combined with --layers threaded",
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
            "--repeat",
            "3",
            "--json",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{stderr}");
    let j = json_of(&out);
    let run_id = j["run_id"].as_i64().unwrap();
    let store = Store::open(&db).unwrap();
    let run = store.load_run(run_id).unwrap();
    // The calibration is stored with the run: its transfers, the first
    // undilated.
    let cal = &run.meta.settings["host_model_calibration"][0];
    assert_eq!(cal["model"], "386-33", "{cal}");
    let rounds = cal["calibration"]["rounds"].as_array().unwrap();
    assert!((4..=6).contains(&rounds.len()), "{cal}");
    assert_eq!(rounds[0]["at"], "1");
    assert_eq!(run.points.len(), 5);
    let speeds = run.points[0]
        .params
        .cpu_speed
        .expect("the model set a speed");
    assert_eq!(cal["speeds"], format!("sender={}", speeds.sender));
    for pt in &run.points {
        let p = &pt.params;
        // One calibration for the sweep: every point runs the same 386.
        assert_eq!(p.cpu_speed, Some(speeds));
        assert!(speeds.receiver.is_full(), "the receiver is not slowed");
        assert_eq!((p.sndbuf, p.rcvbuf), (Some(4096), Some(65536)));
        assert_eq!(p.delack, Some(DelayedAck::Off));
        assert!(p.quickack);
        assert_eq!(p.route_table, Some(RouteTable::Linear));
        assert_eq!(p.route_cache, None);
        assert_eq!(p.checksum, Some(Checksum::Bytewise));
        assert_eq!(p.timers, Some(TimerClock::Bsd));
        assert_eq!(p.rtt_estimator, Some(RttEstimator::Bsd));
        assert_eq!(p.initial_window, Some(1));
        assert_eq!(p.pcb_lookup, Some(PcbLookup::List));
    }
    let f = |c: WorkClass| speeds.sender.of(c);
    let model = record::factor::HostModel::I386At33;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut class_lines = vec![format!(
        "{:<28} {}",
        "µs per segment, median",
        [256, 512, 768, 1024, 1280]
            .map(|m| format!("{:>22}", format!("MSS {m}: paper / 386")))
            .join("")
    )];
    let mut row_lines = class_lines.clone();
    let mut classes = vec![vec![(0.0, 0.0); 5]; 4];
    let mut rows_table = vec![vec![(0.0, 0.0); 5]; TABLE1.len() + 2];
    let mut off_by_2 = Vec::new();
    let reference = paper_costs(model, table1_column(1024).unwrap());
    let mut baseline = Vec::new();
    for pt in &run.points {
        let mss = pt.params.mss.unwrap();
        let col = table1_column(mss).unwrap();
        let trials: Vec<_> = run
            .trials
            .iter()
            .filter(|t| t.point_id == pt.id && t.status == TrialStatus::Ok)
            .collect();
        assert_eq!(trials.len(), 3, "MSS {mss}: a trial failed");
        let mut per_class = [Vec::new(), Vec::new(), Vec::new()];
        let mut per_row = vec![Vec::new(); TABLE1.len() + 2];
        for t in &trials {
            let m = &t.outcome.metrics;
            let segments = m["stack_client_segments_out"];
            // The paper's receiver sent an ACK for every packet.
            let acks = m["stack_client_segments_in"] / segments;
            assert!(
                (0.95..=1.1).contains(&acks),
                "MSS {mss}: {acks:.2} ACKs per segment"
            );
            let per = |s: f64| s * 1e6 / segments;
            // The model's work per class: each class's blocks slowed, and
            // the loop in no block as computation; the brackets' slowed
            // cost is the instrument's and is left out.
            per_class[0].push(
                per(m["stack_client_account_compute_dilated_s"])
                    + per(m["stack_client_account_unattributed_s"].max(0.0))
                        / f(WorkClass::Compute),
            );
            per_class[1].push(per(m["stack_client_account_data_dilated_s"]));
            per_class[2].push(per(m["stack_client_account_device_dilated_s"]));
            let profile = store
                .load_profile(t.id)
                .unwrap()
                .expect("an accounted trial stores its profile");
            let r = model_rows(&profile, speeds.sender, segments);
            for (i, v) in r.rows.iter().enumerate() {
                per_row[i].push(*v);
            }
            per_row[TABLE1.len()].push(r.outside);
            per_row[TABLE1.len() + 1].push(r.brackets);
        }
        let paper = paper_costs(model, col);
        let ours: Vec<f64> = per_class.iter().map(|v| median(v.clone())).collect();
        let total: f64 = ours.iter().sum();
        for (k, c) in WorkClass::ALL.into_iter().enumerate() {
            classes[k][col] = (paper.of(c), ours[k]);
        }
        classes[3][col] = (paper.total(), total);
        // Work on every byte grows with the segment here as on the 386,
        // and so the total stays within 2x; the per-packet classes need
        // not (this host batches more segments per poll round when the
        // 4 KB window holds more of them): printed, not asserted.
        for (what, ratio) in [
            ("data", ours[1] / paper.data),
            ("all three", total / paper.total()),
        ] {
            if !(0.5..=2.0).contains(&ratio) {
                off_by_2.push(format!("MSS {mss} {what}: {ratio:.2}x"));
            }
        }
        for (i, r) in TABLE1.iter().enumerate() {
            rows_table[i][col] = (us_per_packet(r.2[col], col), median(per_row[i].clone()));
        }
        rows_table[TABLE1.len()][col] = (0.0, median(per_row[TABLE1.len()].clone()));
        rows_table[TABLE1.len() + 1][col] = (0.0, median(per_row[TABLE1.len() + 1].clone()));
        // A model with no measurement: the reference column's classes,
        // data scaled by the segment, the rest per packet.
        let k = f64::from(mss) / 1024.0;
        let naive = reference.data * k + reference.compute + reference.device;
        baseline.push(format!(
            "MSS {mss}: model {:.2}x, unmeasured baseline {:.2}x of the paper's {:.1} µs",
            total / paper.total(),
            naive / paper.total(),
            paper.total()
        ));
        if mss == 1024 {
            // The reference column: each class takes the paper's time,
            // within this host's drift from one transfer to the next (its
            // own computation per segment ranged 2.4-8.0 µs between
            // transfers at compute speeds 0.0085-0.0097).
            for (k, c) in WorkClass::ALL.into_iter().enumerate() {
                let ratio = ours[k] / paper.of(c);
                assert!(
                    (0.5..=2.0).contains(&ratio),
                    "MSS 1024 {}: {:.1} µs per segment against the paper's {:.1}",
                    c.name(),
                    ours[k],
                    paper.of(c)
                );
            }
            assert!(
                (0.6..=1.6).contains(&(total / paper.total())),
                "MSS 1024: {total:.1} µs per segment against the paper's {:.1}",
                paper.total()
            );
        }
    }
    let show = |lines: &mut Vec<String>, names: &[String], table: &[Vec<(f64, f64)>]| {
        for (name, row) in names.iter().zip(table) {
            lines.push(format!(
                "{name:<28} {}",
                row.iter()
                    .map(|(p, o)| format!("{:>22}", format!("{p:.1} / {o:.1}")))
                    .collect::<String>()
            ));
        }
    };
    let class_names: Vec<String> = WorkClass::ALL
        .iter()
        .map(|c| c.name().to_string())
        .chain(["all three".to_string()])
        .collect();
    show(&mut class_lines, &class_names, &classes);
    let row_names: Vec<String> = TABLE1
        .iter()
        .map(|r| r.0.to_string())
        .chain(["(other blocks)".into(), "(the brackets' cost)".into()])
        .collect();
    show(&mut row_lines, &row_names, &rows_table);
    eprintln!(
        "by class:\n{}\n\nby Table 1's row:\n{}\n\n{}",
        class_lines.join("\n"),
        row_lines.join("\n"),
        baseline.join("\n")
    );
    assert!(
        off_by_2.is_empty(),
        "the 386's data or total off by more than 2x: {off_by_2:?}"
    );
}
