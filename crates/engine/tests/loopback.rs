//! Real trials over loopback against an embedded server: every test type
//! delivers every byte intact, in both directions and with parallel flows.

use engine::{Client, Limits, Server};
use record::{Api, TestKind, TrialParams};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn client() -> Client {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), Limits::default()).unwrap();
    let addr = server.spawn().unwrap();
    Client::connect(addr, Duration::from_secs(5)).unwrap()
}

fn run(c: &mut Client, p: &TrialParams) -> record::TrialOutcome {
    let stop = Arc::new(AtomicBool::new(false));
    c.run_trial(p, &stop)
        .unwrap_or_else(|e| panic!("{:?}: {e}", p))
}

#[test]
fn tcp_stream_delivers_every_byte_with_each_api() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut c = client();
    for api in [Api::Write, Api::Sendmsg, Api::Sendfile, Api::Zerocopy] {
        for ws in [10u64, 1460, 65536] {
            let mut p = TrialParams::defaults(TestKind::TcpStream);
            p.duration_s = None;
            p.bytes = Some(3_000_017);
            p.write_size = ws;
            p.api = api;
            let o = run(&mut c, &p);
            assert_eq!(o.metrics["bytes"], 3_000_017.0, "{api:?} {ws}");
            assert!(o.metrics["throughput_bps"] > 0.0);
            assert!(o.metrics["cpu_sender_s"] > 0.0);
            assert!(o.metrics["data_segs_out"] >= 1.0);
        }
    }
}

#[test]
fn reverse_and_parallel_streams() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut c = client();
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.duration_s = None;
    p.bytes = Some(10_000_001);
    p.parallel = 3;
    p.reverse = true;
    p.cork = true;
    let o = run(&mut c, &p);
    assert_eq!(o.metrics["bytes"], 10_000_001.0);
    p.reverse = false;
    p.duration_s = Some(0.3);
    p.bytes = None;
    let o = run(&mut c, &p);
    assert!(o.metrics["bytes"] > 1e6);
}

#[test]
fn udp_stream_counts_datagrams() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut c = client();
    for reverse in [false, true] {
        let mut p = TrialParams::defaults(TestKind::UdpStream);
        p.duration_s = None;
        p.bytes = Some(1000 * 1000);
        p.write_size = 1000;
        p.send_rate_bps = Some(200_000_000);
        p.reverse = reverse;
        let o = run(&mut c, &p);
        assert_eq!(o.metrics["datagrams_sent"], 1000.0);
        assert_eq!(
            o.metrics["datagrams_received"] + o.metrics["datagrams_lost"],
            1000.0
        );
        assert_eq!(o.metrics["duplicates"], 0.0);
    }
}

#[test]
fn transactions_complete() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut c = client();
    for test in [TestKind::TcpRr, TestKind::TcpCrr, TestKind::Http] {
        let mut p = TrialParams::defaults(test);
        p.duration_s = Some(0.3);
        if test == TestKind::TcpRr {
            p.write_size = 14;
            p.parallel = 2;
        }
        let o = run(&mut c, &p);
        assert!(o.metrics["transactions"] >= 10.0, "{test}");
        assert!(o.metrics["latency_p50_s"] > 0.0);
        assert!(o.metrics["latency_p99_s"] >= o.metrics["latency_p50_s"]);
    }
}

#[test]
fn udp_loss_matches_the_kernel_socket_drop_counter() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut c = client();
    // A tiny receive buffer and an unpaced sender force drops at the socket.
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.duration_s = None;
    p.bytes = Some(20 << 20);
    p.write_size = 1400;
    p.rcvbuf = Some(4096);
    let o = run(&mut c, &p);
    let m = &o.metrics;
    let lost = m["datagrams_lost"];
    assert!(lost > 100.0, "expected forced loss, got {lost}");
    assert_eq!(m["datagrams_sent"], m["datagrams_received"] + lost);
    // On loopback every lost datagram is a receive-buffer drop on our socket
    // (or, rarely, at the per-CPU input backlog).
    assert_eq!(lost, m["socket_drops"] + m["kernel_backlog_drops"], "{m:?}");
    // The namespace-wide counter saw at least our drops.
    assert!(m["kernel_rcvbuf_errors"] >= m["socket_drops"]);
    assert!((m["loss_rate"] - lost / m["datagrams_sent"]).abs() < 1e-12);
}
