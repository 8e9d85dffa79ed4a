//! Issue 19's stack switches from the command line: a list of levels runs
//! as a sweep, each level is stored with its trial and exported; a bad
//! level, or a switch on a trial with no tcplab end, is bad input before
//! anything is stored.

mod common;

use common::{assert_success, assert_usage_error, json_of, tcplab, temp_db};

#[test]
fn bad_levels_and_kernel_only_trials_are_refused_before_anything_is_stored() {
    let (_dir, db) = temp_db();
    for (args, needle) in [
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--delack",
                "every3",
            ][..],
            "invalid value \"every3\" for --delack",
        ),
        (
            &["bench", "tcp-stream", "--stack", "tcplab", "--sws", "both"][..],
            "for --sws",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--nagle",
                "maybe",
            ][..],
            "for --nagle",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--header-prediction",
                "x",
            ][..],
            "for --header-prediction",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--checksum",
                "crc",
            ][..],
            "for --checksum",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--rtt-estimator",
                "x",
            ][..],
            "for --rtt-estimator",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--timers",
                "fast",
            ][..],
            "invalid value \"fast\" for --timers",
        ),
        (
            &["bench", "tcp-rr", "--timers", "exact,bsd"][..],
            "--timers: Linux has no such switch",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--route-table",
                "x",
            ][..],
            "for --route-table",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--flow-control",
                "window,credit",
            ][..],
            "invalid value \"credit\" for --flow-control",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--flow-control",
                "rate:fast",
            ][..],
            "rate:RATE needs a rate",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--flow-control",
                "rate:0",
            ][..],
            "for --flow-control",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "kernel",
                "--server-stack",
                "kernel",
                "--flow-control",
                "rate:50M",
            ][..],
            "--flow-control: Linux has no such switch",
        ),
        (
            &["bench", "tcp-stream", "--flow-control", "window"][..],
            "SO_MAX_PACING_RATE, which tcplab does not set",
        ),
        (
            &["bench", "tcp-stream", "--delack", "off", "--sws", "off"][..],
            "--delack and --sws: Linux has no such switch",
        ),
        (
            &["bench", "tcp-stream", "--nagle", "off"][..],
            "Linux's Nagle is --nodelay",
        ),
        (
            &["bench", "tcp-rr", "--route-table", "hash", "--routes", "10"][..],
            "--route-table: Linux has no such switch",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--pcb-lookup",
                "tree",
            ][..],
            "for --pcb-lookup",
        ),
        (
            &["bench", "tcp-stream", "--pcb-lookup", "list"][..],
            "--pcb-lookup: Linux has no such switch",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--route-cache",
                "x",
            ][..],
            "for --route-cache",
        ),
        (
            &["bench", "tcp-stream", "--route-cache", "on"][..],
            "--route-cache: Linux has no such switch",
        ),
        (
            &["bench", "tcp-stream", "--stack", "tcplab", "--layers", "x"][..],
            "for --layers",
        ),
        (
            &["bench", "tcp-stream", "--layers", "threaded"][..],
            "--layers: Linux has no such switch",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--account",
                "sample:1",
            ][..],
            "for --account",
        ),
        (
            &["bench", "tcp-stream", "--account", "on"][..],
            "--account: Linux has no such switch",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--checksum",
                "offload",
            ][..],
            "--checksum offload on a tcplab end",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--nagle",
                "on",
                "--nodelay",
            ][..],
            "--nagle on with --nodelay",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--cpu-speed",
                "0",
            ][..],
            "for --cpu-speed",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--cpu-speed",
                "cpu:0.5",
            ][..],
            "no class \"cpu\"",
        ),
        (
            &["bench", "tcp-stream", "--cpu-speed", "0.5"][..],
            "--cpu-speed: Linux has no such switch",
        ),
        (
            // The client sends: the receiver is the Linux server.
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--cpu-speed",
                "receiver=0.5",
            ][..],
            "the receiver is a Linux end here",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--server-stack",
                "tcplab",
                "--reverse",
                "--cpu-speed",
                "receiver=0.5",
            ][..],
            "the receiver is a Linux end here",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--cpu-speed",
                "sender=0.5",
                "--account",
                "sample:8",
            ][..],
            "--cpu-speed with --account sample:N",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--cpu-speed",
                "sender=0.5",
                "--layers",
                "threaded",
            ][..],
            "--cpu-speed with --layers threaded",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--initial-window",
                "3",
            ][..],
            "for --initial-window",
        ),
        (
            &["bench", "tcp-stream", "--initial-window", "10"][..],
            "--initial-window: Linux has no such switch",
        ),
        (
            // Linux has no tcp_tahoe: a trial with a Linux end cannot run it.
            &["bench", "tcp-stream", "--stack", "tcplab", "--cc", "tahoe"][..],
            "--cc tahoe is not available on this host",
        ),
        (
            &["bench", "tcp-stream", "--cc", "reno90"][..],
            "give both --stack tcplab and --server-stack tcplab",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--server-stack",
                "tcplab",
                "--cc",
                "reno91",
            ][..],
            "--cc reno91 (it has reno, cubic, none, tahoe, reno90 and vegas)",
        ),
    ] {
        assert_usage_error(&tcplab(&db, args), needle);
    }
    assert!(!db.exists(), "a store was created for bad input");
}

#[test]
fn a_sweep_of_switches_is_stored_and_exported_with_its_trials() {
    if !testkit::need_root("the stack's place (a namespace and TUN devices) needs root") {
        return;
    }
    if !(testkit::need_path("/dev/net/tun", "the TUN driver") && testkit::need_tool("ip")) {
        return;
    }
    let (_dir, db) = temp_db();
    // The ACK ratios depend on timing: a sender held off the CPU lets the
    // delayed-ACK timer answer single segments. One timed test at a time,
    // on a quiet run (the newest, which `latest` exports).
    let _timing = testkit::timing_lock();
    let q = testkit::until_quiet(
        "a sweep of switches",
        testkit::QuietLimits::default(),
        &[],
        || {
            json_of(&tcplab(
                &db,
                &[
                    "bench",
                    "tcp-stream",
                    "--server-stack",
                    "tcplab",
                    "--delack",
                    "off,every2",
                    "--header-prediction",
                    "off",
                    "--route-table",
                    "linear",
                    "--routes",
                    "100",
                    "--layers",
                    "threaded",
                    "--bytes",
                    "2M",
                    "--repeat",
                    "1",
                    "--json",
                ],
            ))
        },
    );
    eprintln!("a sweep of switches: {}", q.describe());
    let doc = q.value;
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{doc}");
    let mut ratios = Vec::new();
    for pt in points {
        let params = &pt["params"];
        assert_eq!(params["header_prediction"], false, "{params}");
        assert_eq!(params["route_table"], "linear", "{params}");
        assert_eq!(params["layers"], "threaded", "{params}");
        assert!(params["sws"].is_null(), "{params}");
        let m = &pt["metrics"];
        let get = |k: &str| m[k]["mean"].as_f64().unwrap_or(f64::NAN);
        assert_eq!(get("bytes"), (2 << 20) as f64, "{pt}");
        assert_eq!(get("stack_server_header_prediction_hits"), 0.0, "{m}");
        assert_eq!(get("stack_server_routes"), 102.0, "{m}");
        // Every segment the server end took crossed its driver's queue.
        assert!(
            get("stack_server_driver_frames_in") >= get("stack_server_segments_in"),
            "{m}"
        );
        ratios.push((
            params["delack"].as_str().unwrap().to_string(),
            get("stack_server_segments_out") / get("stack_server_segments_in"),
        ));
    }
    assert_eq!(ratios[0].0, "off");
    assert_eq!(ratios[1].0, "every2");
    assert!(ratios[0].1 > 0.95, "{ratios:?}");
    assert!(ratios[1].1 < 0.7, "{ratios:?}");
    let csv = tcplab(&db, &["export", "latest", "--format", "csv"]);
    assert_success(&csv);
    let text = String::from_utf8_lossy(&csv.stdout);
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    for col in [
        "param_delack",
        "param_header_prediction",
        "param_route_table",
        "param_layers",
    ] {
        assert!(header.contains(&col), "{col} missing from {header:?}");
    }
    let delack = header.iter().position(|h| *h == "param_delack").unwrap();
    let mut cells: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(delack).unwrap())
        .collect();
    cells.sort_unstable();
    assert_eq!(cells, ["every2", "off"]);
}

#[test]
fn flow_control_levels_are_stored_exported_and_the_rate_is_the_stacks_sending_rate() {
    if !testkit::need_root("the stack's place (a namespace and TUN devices) needs root") {
        return;
    }
    if !(testkit::need_path("/dev/net/tun", "the TUN driver") && testkit::need_tool("ip")) {
        return;
    }
    let (_dir, db) = temp_db();
    // The pacer's rate is timed: on a quiet host, one timed test at a time.
    let _timing = testkit::timing_lock();
    let q = testkit::until_quiet(
        "a paced stream",
        testkit::QuietLimits::default(),
        &[],
        || {
            json_of(&tcplab(
                &db,
                &[
                    "bench",
                    "tcp-stream",
                    "--stack",
                    "tcplab",
                    "--flow-control",
                    "window,rate:40M",
                    "--nodelay",
                    "--bytes",
                    "2M",
                    "--repeat",
                    "1",
                    "--json",
                ],
            ))
        },
    );
    eprintln!("a paced stream: {}", q.describe());
    let doc = q.value;
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{doc}");
    let mut rates = Vec::new();
    for pt in points {
        let level = pt["params"]["flow_control"].as_str().unwrap().to_string();
        let m = &pt["metrics"];
        let get = |k: &str| m[k]["mean"].as_f64().unwrap_or(f64::NAN);
        assert_eq!(get("bytes"), (2 << 20) as f64, "{pt}");
        let sent = get("stack_client_send_rate_bps");
        eprintln!(
            "--flow-control {level}: the stack sent at {:.1} Mbit/s, Linux received {:.1}",
            sent / 1e6,
            get("throughput_bps") / 1e6
        );
        let dropped = get("stack_client_pacing_dropped_s");
        eprintln!("--flow-control {level}: the pacer gave up {dropped} s");
        rates.push((level, sent, dropped));
    }
    assert_eq!(rates[0].0, "window");
    assert_eq!(rates[1].0, "rate:40mbit", "stored as its flag takes it");
    // Paced, on a quiet host: the pacer gave up at most 2% of its
    // schedule (its thread held off past the burst allowance; none is
    // expected), so a pacer that falls behind fails here rather than
    // excusing its own rate; and the rate, stretched by what it gave up,
    // within 2%.
    let (_, paced, dropped) = rates[1];
    let bits = (2u64 << 20) as f64 * 8.0;
    let schedule = bits / 40e6;
    assert!(
        dropped <= 0.02 * schedule,
        "the pacer gave up {:.1} ms of its {:.1} ms schedule (over 2%)",
        dropped * 1e3,
        schedule * 1e3
    );
    let expected = bits / (schedule + dropped);
    assert!(
        (paced / expected - 1.0).abs() < 0.02,
        "{rates:?}, expected {expected}"
    );
    // And the rate asked for, within 2%, however the schedule went.
    assert!(
        (paced / 40e6 - 1.0).abs() < 0.02,
        "{rates:?} against 40 Mbit/s"
    );
    assert!(rates[0].1 > 2.0 * paced, "window is faster: {rates:?}");
    let csv = tcplab(&db, &["export", "latest", "--format", "csv"]);
    assert_success(&csv);
    let text = String::from_utf8_lossy(&csv.stdout);
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "param_flow_control")
        .unwrap_or_else(|| panic!("param_flow_control missing from {header:?}"));
    let mut cells: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap())
        .collect();
    cells.sort_unstable();
    assert_eq!(cells, ["rate:40mbit", "window"]);
    // The terminal table of the stored run shows each level as typed.
    let shown = tcplab(&db, &["show", "latest"]);
    assert_success(&shown);
    let table = String::from_utf8_lossy(&shown.stdout);
    assert!(
        table.contains("rate:40mbit") && table.contains("window"),
        "{table}"
    );
    // And so does the HTML report's table of the sweep's factors.
    let html = _dir.path().join("flow.html");
    assert_success(&tcplab(
        &db,
        &["report", "latest", "--out", html.to_str().unwrap()],
    ));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<td>flow_control</td><td>window, rate:40mbit (varies)</td>"),
        "the report's factor table lacks --flow-control's levels"
    );
}

/// `--account on` stores the stack end's block times as the trial's CPU
/// profile, and `tcplab probes` prints them in the table the kernel's
/// sampled breakdown uses: by layer, by Huang & Chen's block, by function.
#[test]
fn an_accounted_trials_blocks_print_where_sampled_cpu_profiles_do() {
    if !testkit::need_root("the stack's place (a namespace and TUN devices) needs root") {
        return;
    }
    if !(testkit::need_path("/dev/net/tun", "the TUN driver") && testkit::need_tool("ip")) {
        return;
    }
    let (_dir, db) = temp_db();
    // A real transfer through the stack: not beside a timed test.
    let _timing = testkit::timing_lock();
    let run = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--stack",
            "tcplab",
            "--account",
            "on,off",
            "--bytes",
            "4M",
            "--repeat",
            "1",
        ],
    );
    assert_success(&run);
    let probes = tcplab(&db, &["probes", "latest"]);
    assert_success(&probes);
    let text = String::from_utf8_lossy(&probes.stdout);
    assert!(text.contains("CPU samples (tsc"), "{text}");
    assert!(
        text.contains("tcplab_stack::device_send_write (syscall)"),
        "{text}"
    );
    assert!(text.contains("blocks: write_socket"), "{text}");
    // One accounted trial of two: the unaccounted one has no profile.
    assert_eq!(text.matches("CPU samples (tsc").count(), 1, "{text}");
}
