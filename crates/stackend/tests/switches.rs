//! Issue 19's switches change what they should, read from the stack's own
//! counters on real trials (TUN devices in a namespace, Linux's TCP at the
//! other end): `--delack`, `--nagle`, `--header-prediction`, `--checksum`,
//! `--rtt-estimator` and `--route-table` with `--routes`, and `--recv-work`'s
//! paced reader. What the wire shows of them is in `switches_wire.rs` and
//! `sws_wire.rs`. Needs root and TUN.

use record::factor::{Checksum, DelayedAck, RouteTable, RttEstimator};
use record::{StackImpl, TestKind, TrialParams};
use stackend::StackPlace;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const BYTES: u64 = 4 << 20;

fn place() -> Option<StackPlace> {
    match StackPlace::build() {
        Ok(p) => Some(p),
        Err(e) => {
            eprintln!("skipped: cannot build the stack's place here: {e}");
            None
        }
    }
}

/// A 4 MB tcp-stream from `client` to `server`.
fn stream(client: StackImpl, server: StackImpl) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = client;
    p.server_stack = server;
    p.bytes = Some(BYTES);
    p.duration_s = None;
    p
}

fn run(place: &mut StackPlace, p: &TrialParams) -> BTreeMap<String, f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let o = place.run(p, &stop).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    assert_eq!(o.metrics["bytes"], BYTES as f64, "{:?}", o.metrics);
    o.metrics
}

#[test]
fn delack_off_acknowledges_every_segment_every2_every_second_and_timer_and_drain_fewer() {
    let Some(mut place) = place() else { return };
    // Linux sends, the stack receives: its segments out are its ACKs.
    let ratio = |place: &mut StackPlace, level| {
        let mut p = stream(StackImpl::Kernel, StackImpl::Tcplab);
        p.delack = Some(level);
        let m = run(place, &p);
        let r = m["stack_server_segments_out"] / m["stack_server_segments_in"];
        eprintln!("--delack {level}: {r:.3} ACKs per segment received");
        r
    };
    let off = ratio(&mut place, DelayedAck::Off);
    let every2 = ratio(&mut place, DelayedAck::Every2);
    assert!(off > 0.95, "--delack off: {off:.3} ACKs per segment");
    assert!(
        (0.45..0.7).contains(&every2),
        "--delack every2: {every2:.3} ACKs per segment"
    );
    // The timer alone: about one ACK per 10 ms of a ~100 ms transfer
    // (0.006 per segment here), and drain one per emptied receive queue
    // (0.017): both far below every second segment.
    let timer = ratio(&mut place, DelayedAck::Timer(10_000_000));
    let drain = ratio(&mut place, DelayedAck::Drain);
    assert!(timer < every2 / 5.0, "--delack timer:10ms: {timer:.3}");
    assert!(drain < every2 / 5.0, "--delack drain: {drain:.3}");
}

#[test]
fn header_prediction_on_takes_the_fast_path_and_off_never() {
    let Some(mut place) = place() else { return };
    for on in [true, false] {
        let mut p = stream(StackImpl::Kernel, StackImpl::Tcplab);
        p.header_prediction = Some(on);
        let m = run(&mut place, &p);
        let hits = m["stack_server_header_prediction_hits"];
        let rate = m["stack_server_header_prediction_hit_rate"];
        assert_eq!(rate, hits / m["stack_server_segments_in"]);
        eprintln!("--header-prediction {on}: hit rate {rate:.3}");
        if on {
            assert!(rate > 0.5, "hit rate {rate:.3} on a bulk transfer");
        } else {
            assert_eq!(hits, 0.0);
        }
    }
}

#[test]
fn every_checksum_method_moves_every_byte_both_ways() {
    let Some(mut place) = place() else { return };
    for (method, device) in [
        (Checksum::Bytewise, StackImpl::Tcplab),
        (Checksum::Rfc1071, StackImpl::Tcplab),
        (Checksum::Incremental, StackImpl::TcplabTap),
        (Checksum::Offload, StackImpl::TcplabOffload),
    ] {
        for reverse in [false, true] {
            let mut p = stream(device, StackImpl::Kernel);
            p.checksum = Some(method);
            p.reverse = reverse;
            let m = run(&mut place, &p);
            assert!(m["stack_client_segments_in"] > 50.0, "{m:?}");
            eprintln!(
                "--checksum {method} reverse={reverse}: {:.0} Mbit/s",
                m["throughput_bps"] / 1e6
            );
        }
    }
}

#[test]
fn rtt_estimators_show_in_srtt_and_rto() {
    let Some(mut place) = place() else { return };
    let mut measured = Vec::new();
    for est in [RttEstimator::Rfc6298, RttEstimator::Bsd] {
        let mut p = stream(StackImpl::Tcplab, StackImpl::Kernel);
        p.rtt_estimator = Some(est);
        let m = run(&mut place, &p);
        let (srtt, rto) = (m["stack_client_srtt_s"], m["stack_client_rto_s"]);
        eprintln!("--rtt-estimator {est}: srtt {srtt} s, rto {rto} s");
        measured.push((srtt, rto));
    }
    let ((srtt_rfc, rto_rfc), (srtt_bsd, rto_bsd)) = (measured[0], measured[1]);
    // RFC 6298 keeps nanoseconds: a TUN round trip, well under 50 ms,
    // with its 1 s floor on the RTO.
    assert!(srtt_rfc > 0.0 && srtt_rfc < 0.05, "{srtt_rfc}");
    assert_eq!(rto_rfc, 1.0);
    // BSD counts 500 ms ticks (srtt in eighths of one): a sub-tick round
    // trip is no finer than 62.5 ms, and its RTO a whole number of ticks.
    let eighths = srtt_bsd / 0.0625;
    assert!(
        (eighths - eighths.round()).abs() < 1e-6,
        "bsd srtt {srtt_bsd}"
    );
    let ticks = rto_bsd / 0.5;
    assert!(
        (ticks - ticks.round()).abs() < 1e-6 && ticks >= 2.0,
        "{rto_bsd}"
    );
}

#[test]
fn a_thousand_routes_run_in_every_table_structure() {
    let Some(mut place) = place() else { return };
    let mut counts = Vec::new();
    for table in [RouteTable::Linear, RouteTable::Hash, RouteTable::Trie] {
        let mut p = stream(StackImpl::Tcplab, StackImpl::Kernel);
        p.route_table = Some(table);
        p.routes = Some(1000);
        let m = run(&mut place, &p);
        eprintln!(
            "--route-table {table} --routes 1000: {} routes, {:.0} Mbit/s",
            m["stack_client_routes"],
            m["throughput_bps"] / 1e6
        );
        counts.push(m["stack_client_routes"]);
    }
    let plain = run(&mut place, &stream(StackImpl::Tcplab, StackImpl::Kernel));
    let base = plain["stack_client_routes"];
    assert!(
        counts.iter().all(|c| *c == base + 1000.0),
        "{counts:?} against {base}"
    );
}

/// The Nagle/delayed-ACK stall: a 2000-byte request is a full segment and
/// a 540-byte tail; with Nagle the tail waits for the ACK of the first,
/// which Linux delays (40 ms), so about 25 transactions a second; without
/// it, thousands.
#[test]
fn nagle_on_stalls_a_request_with_a_short_tail_and_off_does_not() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    let mut rates = Vec::new();
    for nagle in [true, false] {
        let mut p = TrialParams::defaults(TestKind::TcpRr);
        p.stack = StackImpl::Tcplab;
        p.write_size = 2000;
        p.duration_s = Some(0.5);
        p.nagle = Some(nagle);
        let o = place.run(&p, &stop).unwrap_or_else(|e| panic!("{e}"));
        let t = o.metrics["transactions_per_s"];
        eprintln!("--nagle {nagle}: {t:.0} transactions/s");
        rates.push(t);
    }
    assert!(rates[1] > 5.0 * rates[0], "{rates:?}");
}

/// `--recv-work` on the stack's receiver: its reads are paced to the rate
/// a kernel receiver burning that much per KB would read at, while its
/// loop still serves the connection (every byte arrives and is checked).
#[test]
fn recv_work_holds_the_stacks_reader_to_its_rate() {
    let Some(mut place) = place() else { return };
    let ns_per_kb = 1_000_000; // 1 ms per KB: 1,024,000 bytes/s.
    let rate = 1024.0 / (ns_per_kb as f64 * 1e-9) * 8.0;
    let mut p = stream(StackImpl::Kernel, StackImpl::Tcplab);
    p.bytes = Some(1 << 20);
    p.read_size = 16 << 10;
    p.recv_work_ns_per_kb = Some(ns_per_kb);
    let stop = Arc::new(AtomicBool::new(false));
    let o = place.run(&p, &stop).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(o.metrics["bytes"], (1 << 20) as f64);
    let paced = o.metrics["throughput_bps"];
    p.recv_work_ns_per_kb = None;
    let free = place.run(&p, &stop).unwrap_or_else(|e| panic!("{e}"));
    let free = free.metrics["throughput_bps"];
    eprintln!(
        "--recv-work 1ms per KB: {:.2} Mbit/s against its rate {:.2} (unpaced {:.0})",
        paced / 1e6,
        rate / 1e6,
        free / 1e6
    );
    assert!(paced <= rate * 1.02, "{paced} over {rate}");
    assert!(paced >= rate * 0.7, "{paced} far under {rate}");
    assert!(free > 5.0 * paced, "{free} against {paced}");
    assert!(o.details["stack"]["recv_work"].is_string());
}
