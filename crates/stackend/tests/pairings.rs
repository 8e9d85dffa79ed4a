//! Every pairing of kernel and tcplab ends runs every TCP test through the
//! stack's place: real TUN devices in a real namespace, Linux's TCP at the
//! other end, every byte checked against the pattern. Needs root and TUN.

use record::{StackImpl, TestKind, TrialParams};
#[path = "support/stack_place.rs"]
mod stack_place;

use stack_place::place;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn trial(test: TestKind, client: StackImpl, server: StackImpl) -> TrialParams {
    let mut p = TrialParams::defaults(test);
    p.stack = client;
    p.server_stack = server;
    p
}

const PAIRINGS: [(StackImpl, StackImpl); 3] = [
    (StackImpl::Tcplab, StackImpl::Kernel),
    (StackImpl::Kernel, StackImpl::Tcplab),
    (StackImpl::Tcplab, StackImpl::Tcplab),
];

#[test]
fn streams_both_ways_in_every_pairing_move_every_byte() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    for (c, s) in PAIRINGS {
        for reverse in [false, true] {
            let mut p = trial(TestKind::TcpStream, c, s);
            p.bytes = Some(4 << 20);
            p.duration_s = None;
            p.reverse = reverse;
            let o = place
                .run(&p, &stop)
                .unwrap_or_else(|e| panic!("{c:?}→{s:?} reverse={reverse}: {e}"));
            let m = &o.metrics;
            assert_eq!(
                m["bytes"],
                (4 << 20) as f64,
                "{c:?}→{s:?} reverse={reverse}"
            );
            assert!(m["throughput_bps"] > 1e6, "{c:?}→{s:?}: {m:?}");
            let end = if c == StackImpl::Tcplab {
                "client"
            } else {
                "server"
            };
            assert!(m[&format!("stack_{end}_segments_out")] > 0.0, "{m:?}");
            eprintln!(
                "{c:?}→{s:?} reverse={reverse}: {:.0} Mbit/s",
                m["throughput_bps"] / 1e6
            );
        }
    }
}

#[test]
fn transactions_run_in_every_pairing() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    for (c, s) in PAIRINGS {
        for test in [TestKind::TcpRr, TestKind::TcpCrr, TestKind::Http] {
            let mut p = trial(test, c, s);
            p.duration_s = Some(0.3);
            p.nodelay = true;
            let o = place
                .run(&p, &stop)
                .unwrap_or_else(|e| panic!("{test:?} {c:?}→{s:?}: {e}"));
            let m = &o.metrics;
            assert!(m["transactions"] >= 5.0, "{test:?} {c:?}→{s:?}: {m:?}");
            assert!(m["latency_p50_s"] > 0.0, "{m:?}");
            eprintln!(
                "{test:?} {c:?}→{s:?}: {} transactions, p50 {:.1} µs",
                m["transactions"],
                m["latency_p50_s"] * 1e6
            );
        }
    }
}

#[test]
fn udp_flows_run_both_ways_in_every_pairing() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    for (c, s) in PAIRINGS {
        for reverse in [false, true] {
            let mut p = trial(TestKind::UdpStream, c, s);
            p.bytes = Some(2000 * 1472);
            p.duration_s = None;
            p.reverse = reverse;
            p.parallel = 2;
            let o = place
                .run(&p, &stop)
                .unwrap_or_else(|e| panic!("udp {c:?}→{s:?} reverse={reverse}: {e}"));
            let m = &o.metrics;
            assert_eq!(
                m["datagrams_sent"], 2000.0,
                "{c:?}→{s:?} reverse={reverse}: {m:?}"
            );
            // Every datagram sent arrived or was counted lost; none twice.
            assert_eq!(
                m["datagrams_received"] + m["datagrams_lost"],
                2000.0,
                "{m:?}"
            );
            assert!(m["datagrams_received"] > 0.0, "{m:?}");
            // Where Linux sends to a user-space end, its device's drops
            // are counted.
            if s.is_tcplab() && !reverse {
                assert!(m.contains_key("stack_server_device_drops"), "{m:?}");
            }
            assert_eq!(m["duplicates"], 0.0);
            eprintln!(
                "udp {c:?}→{s:?} reverse={reverse}: {} of 2000 received; dropped by the devices: client {:?}, server {:?}",
                m["datagrams_received"],
                m.get("stack_client_device_drops"),
                m.get("stack_server_device_drops")
            );
        }
    }
}

#[test]
fn offload_and_tap_devices_carry_every_byte_and_offloads_make_super_packets() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    for (c, s) in [
        (StackImpl::TcplabOffload, StackImpl::Kernel),
        (StackImpl::Kernel, StackImpl::TcplabOffload),
        (StackImpl::TcplabTap, StackImpl::Kernel),
        (StackImpl::Kernel, StackImpl::TcplabTap),
        (StackImpl::TcplabTap, StackImpl::TcplabOffload),
    ] {
        let mut p = trial(TestKind::TcpStream, c, s);
        p.bytes = Some(8 << 20);
        p.duration_s = None;
        let o = place
            .run(&p, &stop)
            .unwrap_or_else(|e| panic!("{c:?}→{s:?}: {e}"));
        let m = &o.metrics;
        assert_eq!(m["bytes"], (8 << 20) as f64, "{c:?}→{s:?}");
        if c == StackImpl::TcplabOffload {
            // Wire segments are counted, not super-packets: at least one
            // per MSS of payload.
            assert!(
                m["stack_client_segments_out"] >= (8 << 20) as f64 / 1460.0,
                "{m:?}"
            );
        }
        assert_eq!(o.details["stack"]["client"], c.name());
        // What set the place up, for a reader to rerun (issue 30, rule 8):
        // the namespace, each TUN device as its ioctl, its addresses.
        let commands: Vec<&str> = o.details["stack"]["commands"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(
            commands
                .iter()
                .any(|l| l.starts_with("ip netns add tcplab-")),
            "{commands:#?}"
        );
        assert!(
            commands.iter().any(|l| l.contains("ioctl TUNSETIFF")),
            "{commands:#?}"
        );
        assert!(
            commands
                .iter()
                .any(|l| l.starts_with("ip -n tcplab-") && l.contains(" addr add 10.213.")),
            "{commands:#?}"
        );
        eprintln!("{c:?}→{s:?}: {:.0} Mbit/s", m["throughput_bps"] / 1e6);
    }
}

#[test]
fn what_the_stack_lacks_is_refused_before_anything_runs() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    let mut p = trial(TestKind::TcpStream, StackImpl::Tcplab, StackImpl::Kernel);
    p.cc = Some("bbr".into());
    let e = place.run(&p, &stop).unwrap_err().to_string();
    assert!(e.contains("bbr"), "{e}");
    let mut p = trial(TestKind::UdpStream, StackImpl::Tcplab, StackImpl::Kernel);
    p.connect = false;
    assert!(place.run(&p, &stop).is_err());
    let p = trial(TestKind::TcpStream, StackImpl::Kernel, StackImpl::Kernel);
    assert!(place.run(&p, &stop).is_err());
}
