//! Issue 19's switches change what they should, read from the stack's own
//! counters on real trials (TUN devices in a namespace, Linux's TCP at the
//! other end): `--delack`, `--nagle`, `--header-prediction`, `--checksum`,
//! `--rtt-estimator`, `--route-table` with `--routes`, `--pcb-lookup`,
//! `--route-cache`, `--flow-control`
//! (also from a tcpdump of the flow) and `--recv-work`'s paced reader.
//! What the wire shows of the others is in `switches_wire.rs` and
//! `sws_wire.rs`. Needs root and TUN.

use record::factor::{Checksum, DelayedAck, FlowControl, PcbLookup, RouteTable, RttEstimator};
use record::{StackImpl, TestKind, TrialParams};
use testkit::tcpdump;
#[path = "support/stack_place.rs"]
mod stack_place;

use stack_place::place;
use stackend::StackPlace;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const BYTES: u64 = 4 << 20;

/// A 4 MB tcp-stream from `client` to `server`.
fn stream(client: StackImpl, server: StackImpl) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = client;
    p.server_stack = server;
    p.bytes = Some(BYTES);
    p.duration_s = None;
    p
}

/// [`run`] until it ran on a quiet host: for the trials whose asserted
/// values (ratios, rates) depend on the host's speed.
fn quiet_run(what: &str, place: &mut StackPlace, p: &TrialParams) -> BTreeMap<String, f64> {
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || run(place, p));
    eprintln!("{what}: {}", q.describe());
    q.value
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
        let m = quiet_run(&format!("--delack {level}"), place, &p);
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
fn pcb_lookup_list_walks_the_pcb_list_and_route_cache_on_skips_the_lookup() {
    let Some(mut place) = place() else { return };
    for (lookup, cache) in [(PcbLookup::List, true), (PcbLookup::Hash, false)] {
        // Linux sends, the stack receives: a lookup per segment in, a
        // route per ACK out.
        let mut p = stream(StackImpl::Kernel, StackImpl::Tcplab);
        p.pcb_lookup = Some(lookup);
        p.route_cache = Some(cache);
        let m = run(&mut place, &p);
        let get = |k: &str| m[&format!("stack_server_{k}")];
        let (hits, misses) = (get("pcb_cache_hits"), get("pcb_cache_misses"));
        let (rt_hits, rt_misses) = (get("route_cache_hits"), get("route_cache_misses"));
        eprintln!(
            "--pcb-lookup {lookup} --route-cache {cache}: PCB cache {hits} hits {misses} misses, {} walked; route cache {rt_hits} hits {rt_misses} misses of {} segments out",
            get("pcb_walked"),
            get("segments_out")
        );
        if lookup == PcbLookup::List {
            // Every segment of the trial's connections was looked up (the
            // control connection's too, on the same sockets).
            assert!(hits + misses >= get("segments_in"), "{m:?}");
            assert!(get("pcb_walked") >= misses, "{m:?}");
        } else {
            assert_eq!((hits, misses), (0.0, 0.0));
        }
        if cache {
            assert!(rt_hits + rt_misses >= get("segments_out"), "{m:?}");
            assert!(rt_misses < rt_hits / 10.0, "{m:?}");
        } else {
            assert_eq!((rt_hits, rt_misses), (0.0, 0.0));
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
        // The round trip measured is the host's: on a busy one, longer.
        let m = quiet_run(&format!("--rtt-estimator {est}"), &mut place, &p);
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
        // Transactions a second are the host's speed too.
        let what = format!("--nagle {nagle}");
        let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
            place.run(&p, &stop).unwrap_or_else(|e| panic!("{e}"))
        });
        eprintln!("{what}: {}", q.describe());
        let t = q.value.metrics["transactions_per_s"];
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
    // The reader's burn is CPU time: on a busy host it reads slower (and
    // the unpaced transfer it is compared with is slower too).
    let what = "--recv-work 1ms per KB, then none";
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || {
        let o = place.run(&p, &stop).unwrap_or_else(|e| panic!("{e}"));
        let mut unpaced = p.clone();
        unpaced.recv_work_ns_per_kb = None;
        let free = place.run(&unpaced, &stop).unwrap_or_else(|e| panic!("{e}"));
        (o, free.metrics["throughput_bps"])
    });
    eprintln!("{what}: {}", q.describe());
    let (o, free) = q.value;
    assert_eq!(o.metrics["bytes"], (1 << 20) as f64);
    let paced = o.metrics["throughput_bps"];
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

/// A tcp-stream from the stack to Linux of about `seconds` at `rate`
/// (4 MB without one), with `--flow-control` as given. `--nodelay`: with
/// Nagle on, the short last segment waits for Linux's delayed ACK of the
/// one before (up to 40 ms), which is no part of the rate.
fn paced_stream(flow: Option<FlowControl>, seconds: f64) -> TrialParams {
    let mut p = stream(StackImpl::Tcplab, StackImpl::Kernel);
    p.flow_control = flow;
    p.nodelay = true;
    p.bytes = Some(match flow.and_then(FlowControl::rate_bps) {
        Some(bps) => (bps as f64 / 8.0 * seconds) as u64,
        None => BYTES,
    });
    p
}

/// Within 2% of `rate`, or the panic names what measured it.
fn assert_within_2_percent(what: &str, measured: f64, rate: u64) {
    let off = measured / rate as f64 - 1.0;
    eprintln!(
        "rate:{} Mbit/s: {what} {:.2} Mbit/s ({:+.2}%)",
        rate / 1_000_000,
        measured / 1e6,
        off * 100.0
    );
    assert!(off.abs() < 0.02, "{what}: {measured} bit/s against {rate}");
}

/// The stack's address on the client's device.
const OURS: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 213, 1, 2);

/// One paced trial with a capture of the client's device: its metrics,
/// the packets tcpdump wrote and its closing report. Nothing about the
/// capture is judged here: a busy host makes tcpdump drop, and that run
/// is measured again ([`capture_rate`] judges the quiet one).
fn paced_trial(
    place: &mut StackPlace,
    p: &TrialParams,
    device: &str,
    file: &std::path::Path,
) -> (BTreeMap<String, f64>, Vec<tcpdump::Packet>, String) {
    let stop = Arc::new(AtomicBool::new(false));
    let capture = tcpdump::Capture::start(place.namespace(), device, file);
    let run = place.run(p, &stop);
    let (packets, report) = capture.stop();
    let _ = std::fs::remove_file(file);
    let m = run.unwrap_or_else(|e| panic!("{p:?}: {e}")).metrics;
    assert_eq!(m["bytes"], p.bytes.unwrap() as f64, "{m:?}");
    (m, packets, report)
}

/// The payload rate tcpdump saw, after checking the capture is whole:
/// no packet dropped by the kernel, every octet the stack sent in it.
fn capture_rate(m: &BTreeMap<String, f64>, packets: &[tcpdump::Packet], report: &str) -> f64 {
    assert_eq!(
        tcpdump::kernel_drops(report),
        Some(0),
        "tcpdump dropped packets, so it is no reference: {report}"
    );
    // Every octet the stack sent (retransmissions too) is in the capture.
    let wire_bytes: usize = packets
        .iter()
        .filter(|k| k.src == OURS)
        .map(|k| k.payload)
        .sum();
    assert_eq!(wire_bytes as f64, m["stack_client_data_bytes_out"], "{m:?}");
    tcpdump::payload_rate(packets, OURS).expect("data in the capture")
}

#[test]
fn flow_control_rate_holds_the_sending_rate_within_2_percent_and_window_is_faster() {
    if !testkit::need_tool("tcpdump") {
        return;
    }
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    // Window flow control first (it also makes the client's TUN device,
    // which the capture then listens on). Its rate is compared with the
    // paced one's below: on a quiet host.
    let what = "window flow control";
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || {
        place
            .run(&paced_stream(Some(FlowControl::Window), 1.0), &stop)
            .unwrap_or_else(|e| panic!("{e}"))
            .metrics
    });
    eprintln!("{what}: {}", q.describe());
    let window = q.value;
    let window_rate = window["throughput_bps"];
    eprintln!("window: {:.0} Mbit/s", window_rate / 1e6);
    assert_eq!(window["stack_client_pacing_dropped_s"], 0.0);
    let device = place.device(true).expect("the client's device").to_string();
    let mut paced = Vec::new();
    for rate in [50_000_000u64, 200_000_000] {
        let p = paced_stream(Some(FlowControl::Rate(rate)), 1.0);
        let file =
            std::env::temp_dir().join(format!("tcplab-flowctl-{}-{rate}.pcap", std::process::id()));
        // Timed, and tcpdump must keep up: on a quiet host (the lock is
        // held for the test by its place). The pacer may give up at most
        // 2% of its schedule (its thread held off past the burst
        // allowance; none is expected), so a pacer that falls behind
        // fails here rather than excusing its own rate.
        let what = format!("rate:{} Mbit/s captured", rate / 1_000_000);
        let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
            paced_trial(&mut place, &p, &device, &file)
        });
        eprintln!("{what}: {}", q.describe());
        let (m, packets, report) = q.value;
        let on_wire = capture_rate(&m, &packets, &report);
        let dropped = m["stack_client_pacing_dropped_s"];
        let schedule = p.bytes.unwrap() as f64 * 8.0 / rate as f64;
        assert!(
            dropped <= 0.02 * schedule,
            "rate:{rate}: the pacer gave up {:.1} ms of its {:.0} ms schedule (over 2%)",
            dropped * 1e3,
            schedule * 1e3
        );
        assert_within_2_percent("tcpdump on the TUN device", on_wire, rate);
        assert_within_2_percent(
            "the stack's send span",
            m["stack_client_send_rate_bps"],
            rate,
        );
        assert_within_2_percent("Linux's receiver (throughput)", m["throughput_bps"], rate);
        paced.push(m["throughput_bps"]);
    }
    assert!(
        window_rate > 2.0 * paced[0],
        "window {window_rate} bit/s against rate:50M's {}",
        paced[0]
    );
}
