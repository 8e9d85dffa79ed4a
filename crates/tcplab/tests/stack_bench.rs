//! `tcplab bench --stack kernel,tcplab`: the same test through Linux's
//! sockets and through tcplab's own stack behind a TUN device, stored
//! side by side with the stack's own counters; all four pairings of
//! `--stack` and `--server-stack`; and what cannot run on the stack is bad
//! input before anything is stored.

mod common;

use common::{assert_usage_error, json_of, lab_left_behind, lab_resources, tcplab, temp_db};

#[test]
fn kernel_and_tcplab_ends_run_side_by_side_in_all_four_pairings() {
    if !testkit::need_root("the stack's place (a namespace and TUN devices) needs root") {
        return;
    }
    if !(testkit::need_path("/dev/net/tun", "the TUN driver") && testkit::need_tool("ip")) {
        return;
    }
    // Real transfers through the stack: one timed test at a time.
    let _timing = testkit::timing_lock();
    let before = lab_resources();
    let (_dir, db) = temp_db();
    let doc = json_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--stack",
            "kernel,tcplab",
            "--server-stack",
            "kernel,tcplab",
            "--bytes",
            "2M",
            "--repeat",
            "1",
            "--cc",
            "cubic",
            "--json",
        ],
    ));
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "{doc}");
    for pt in points {
        let (c, s) = (
            pt["params"]["stack"].as_str().unwrap(),
            pt["params"]["server_stack"].as_str().unwrap(),
        );
        let m = &pt["metrics"];
        let bytes = m["bytes"]["mean"].as_f64().unwrap_or(0.0);
        assert_eq!(bytes, (2 << 20) as f64, "{c}→{s}: {pt}");
        assert!(
            m["throughput_bps"]["mean"].as_f64().unwrap() > 1e6,
            "{c}→{s}"
        );
        // The stack's own counters stand in for TCP_INFO where it sends.
        if c == "tcplab" {
            assert!(m["stack_client_segments_out"]["mean"].as_f64().unwrap() > 1000.0);
            assert!(m["retransmits"]["mean"].as_f64().is_some(), "{c}→{s}: {m}");
        }
        if s == "tcplab" {
            assert!(m["stack_server_segments_in"]["mean"].as_f64().unwrap() > 1000.0);
        }
        if c == "kernel" && s == "kernel" {
            assert!(m.get("stack_client_segments_out").is_none());
        }
    }
    assert!(
        lab_left_behind(&before).is_empty(),
        "left behind: {:?}",
        lab_left_behind(&before)
    );
}

#[test]
fn udp_stream_and_transactions_run_on_the_stack_from_the_command_line() {
    if !testkit::need_root("the stack's place (a namespace and TUN devices) needs root") {
        return;
    }
    if !(testkit::need_path("/dev/net/tun", "the TUN driver") && testkit::need_tool("ip")) {
        return;
    }
    // Real transfers through the stack, and a transaction count in fixed
    // time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let doc = json_of(&tcplab(
        &db,
        &[
            "bench",
            "udp-stream",
            "--stack",
            "tcplab",
            "--bytes",
            "1M",
            "--repeat",
            "1",
            "--json",
        ],
    ));
    let m = &doc["points"][0]["metrics"];
    let sent = m["datagrams_sent"]["mean"].as_f64().unwrap();
    assert_eq!(sent, (1u64 << 20).div_ceil(1472) as f64, "{doc}");
    assert!(
        m["datagrams_received"]["mean"].as_f64().unwrap() > 0.0,
        "{doc}"
    );
    // How many transactions 0.3 s holds depends on the CPUs the stack's
    // threads got: counted on a quiet run.
    let q = testkit::until_quiet(
        "stack transactions",
        testkit::QuietLimits::default(),
        &[],
        || {
            json_of(&tcplab(
                &db,
                &[
                    "bench",
                    "tcp-rr",
                    "--server-stack",
                    "tcplab",
                    "--duration",
                    "0.3s",
                    "--repeat",
                    "1",
                    "--json",
                ],
            ))
        },
    );
    eprintln!("stack transactions: {}", q.describe());
    let doc = q.value;
    let m = &doc["points"][0]["metrics"];
    assert!(m["transactions"]["mean"].as_f64().unwrap() > 10.0, "{doc}");
    assert!(
        m["stack_server_segments_in"]["mean"].as_f64().unwrap() > 10.0,
        "{doc}"
    );
}

#[test]
fn what_the_stack_cannot_run_is_bad_input() {
    let (_dir, db) = temp_db();
    for (args, needle) in [
        (
            &[
                "bench",
                "udp-stream",
                "--stack",
                "tcplab",
                "--connect",
                "off",
            ][..],
            "--connect off",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--send-rate",
                "10mbit",
            ][..],
            "--send-rate",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--stack",
                "tcplab",
                "--topology",
                "veth",
            ][..],
            "--topology",
        ),
        (
            &[
                "bench",
                "tcp-stream",
                "--server-stack",
                "tcplab",
                "--to",
                "127.0.0.1",
            ][..],
            "--to",
        ),
        (
            &["bench", "tcp-stream", "--stack", "tcplab", "--cc", "bbr"][..],
            "bbr",
        ),
        (
            &["bench", "tcp-rr", "--stack", "tcplab", "--ipv6"][..],
            "IPv4",
        ),
        (
            &["bench", "tcp-stream", "--stack", "linux"][..],
            "expected kernel, tcplab",
        ),
    ] {
        assert_usage_error(&tcplab(&db, args), needle);
    }
    // Refused before the store was opened: nothing stored at all.
    assert!(!db.exists(), "a store was created for bad input");
}
