//! Issue 29's route cache (`--route-cache`), counted by the stack's own
//! block accounting on a real transfer to Linux's TCP over a TUN in a
//! namespace of its own (`tcplab-rtc-…`): with the cache off, the
//! [`Block::RouteLookup`] block is entered once for every segment the
//! connection sends; on, only when the connection has no valid cached
//! route: for its first segment, and once more after a route is added
//! to the table half way through (the table's generation moved). Entry
//! counts, exact; no timing is asserted. Skipped through testkit without
//! root, TUN or `ip`.

#[path = "support/netns.rs"]
mod netns;

#[path = "support/accounted_linux.rs"]
mod accounted_linux;
#[path = "support/stream_pattern.rs"]
mod stream_pattern;

use accounted_linux::{block, can_run, realtime, setting, step, tcp_config};
use stack::account::{self, Block, Options};
use stack::iface::route::{Ipv4Cidr, NextHop, Route};
use stack::phy::tun::TunTap;
use stack::stack::Stack;
use stack::tcp::state::State;
use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener};
use std::sync::mpsc;
use std::time::Duration;

const BYTES: u64 = 4_000_000;
const PORT: u16 = 5311;
const LIMIT: Duration = Duration::from_secs(120);

/// What one transfer counted.
#[derive(Debug)]
struct Counted {
    segments_out: u64,
    route_lookups: f64,
    cache_hits: u64,
    cache_misses: u64,
}

/// The stack connects, sends [`BYTES`] of the pattern and closes, with a
/// route to elsewhere added once half is sent.
fn stack_sends(mut stack: Stack<TunTap>, cache: bool, ours: Ipv4Addr, to: SocketAddrV4) -> Counted {
    realtime();
    stack.tcp.set_route_cache(cache);
    account::start(Options {
        timeline_capacity: 0,
        sample_one_in: 1,
        dilation: None,
    });
    let before = stack.tcp.counters();
    let limit = std::time::Instant::now() + LIMIT;
    let c = stack.tcp.connect(ours, to, stack.now()).expect("connect");
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut sent, mut shut, mut routed) = (0u64, false, false);
    loop {
        if sent < BYTES {
            let n = chunk.len().min((BYTES - sent) as usize);
            stream_pattern::fill(sent, &mut chunk[..n]);
            sent += stack.tcp.send(c, &chunk[..n]).expect("send") as u64;
        }
        if sent >= BYTES / 2 && !routed {
            let elsewhere = Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 0), 24).unwrap();
            let gateway = NextHop::Gateway(Ipv4Addr::new(10, 87, 1, 1));
            stack.iface.add_route(Route {
                cidr: elsewhere,
                next_hop: gateway,
            });
            routed = true;
        }
        if sent == BYTES && !shut {
            stack.tcp.shutdown(c).expect("shutdown");
            shut = true;
        }
        step(&mut stack);
        let state = stack.tcp.connection(c).expect("the connection").state();
        if matches!(state, State::FinWait2 | State::TimeWait | State::Closed) {
            break;
        }
        assert!(std::time::Instant::now() < limit, "sending took too long");
    }
    let report = account::stop().expect("accounting was on");
    let after = stack.tcp.counters();
    Counted {
        segments_out: after.segments_out - before.segments_out,
        route_lookups: block(&report, Block::RouteLookup).0,
        cache_hits: after.route_cache_hits,
        cache_misses: after.route_cache_misses,
    }
}

fn transfer(cache: bool, subnet: u8) -> Counted {
    let (ns, stack, linux, ours) =
        setting("rtc", 87, subnet, tcp_config()).expect("checked by can_run");
    let at = SocketAddrV4::new(linux, PORT);
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = ns.run(move || {
        let listener = TcpListener::bind(at).expect("bind");
        ready_tx.send(()).unwrap();
        let (mut s, _) = listener.accept().expect("accept");
        let mut sink = Vec::new();
        s.read_to_end(&mut sink).expect("read");
        sink
    });
    ready_rx.recv().unwrap();
    let counted = std::thread::spawn(move || stack_sends(stack, cache, ours, at))
        .join()
        .expect("the stack thread");
    let got = reader.join().unwrap();
    assert_eq!(got.len() as u64, BYTES);
    assert_eq!(
        stream_pattern::first_mismatch(0, &got),
        None,
        "a wrong byte"
    );
    eprintln!(
        "--route-cache {}: {counted:?}",
        if cache { "on" } else { "off" }
    );
    counted
}

#[test]
fn with_the_route_cache_a_segment_skips_the_route_lookup_until_the_table_changes() {
    if !can_run() {
        return;
    }
    let _timing = testkit::timing_lock();
    let off = transfer(false, 1);
    assert!(off.segments_out > 1000, "{off:?}");
    assert_eq!(
        off.route_lookups, off.segments_out as f64,
        "one lookup per segment sent"
    );
    assert_eq!((off.cache_hits, off.cache_misses), (0, 0));
    let on = transfer(true, 2);
    assert!(on.segments_out > 1000, "{on:?}");
    // The SYN looks the route up; the route added half way makes it stale
    // once; every other segment leaves on the cached route.
    assert_eq!(on.cache_misses, 2, "{on:?}");
    assert_eq!(on.route_lookups, 2.0, "{on:?}");
    assert_eq!(on.cache_hits + on.cache_misses, on.segments_out, "{on:?}");
}
