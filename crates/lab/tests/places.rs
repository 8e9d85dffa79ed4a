//! Real namespaces, veth pairs, bridges, qdiscs and the emulator: each place
//! connects its two hosts, and nothing is left once it is dropped.

use lab::{Mechanism, Place, PlaceSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn leftovers(tag_names: &[String]) -> Vec<String> {
    let existing = lab::netns::list("tcplab-");
    tag_names
        .iter()
        .filter(|n| existing.contains(n))
        .cloned()
        .collect()
}

/// Echo server in the server namespace; returns the median round trip.
fn round_trip(place: &Place, v6: bool) -> Duration {
    let ip = place.server_ip(v6);
    let listener = place
        .in_server(move || TcpListener::bind(SocketAddr::new(ip, 0)))
        .unwrap()
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut b = [0u8; 1];
        while s.read_exact(&mut b).is_ok() {
            s.write_all(&b).unwrap();
        }
    });
    let mut c = place
        .in_client(move || TcpStream::connect_timeout(&addr, Duration::from_secs(5)))
        .unwrap()
        .unwrap();
    c.set_nodelay(true).unwrap();
    let mut rtts = Vec::new();
    let mut b = [7u8; 1];
    for _ in 0..21 {
        let t = Instant::now();
        c.write_all(&b).unwrap();
        c.read_exact(&mut b).unwrap();
        rtts.push(t.elapsed());
    }
    drop(c);
    server.join().unwrap();
    rtts.sort();
    rtts[10]
}

#[test]
fn every_topology_connects_and_cleans_up() {
    if !testkit::need_root("namespaces, veth pairs and qdiscs") {
        return;
    }
    // Round trips are timed: one timed test at a time, each place's round
    // trips measured on a quiet host.
    let _timing = testkit::timing_lock();
    for (topo, link) in [
        (Some("loopback"), None),
        (Some("veth"), None),
        (Some("veth"), Some("rate=100mbit")),
        (Some("router"), None),
        (Some("ether10"), None),
        (Some("router"), Some("rate=100mbit,via=htb")),
        (Some("router"), Some("delay=1ms,via=emulator")),
    ] {
        let spec = PlaceSpec::parse(topo, link).unwrap();
        let place = Place::build(&spec).unwrap_or_else(|e| panic!("{topo:?} {link:?}: {e}"));
        let names = place.info().namespaces.clone();
        let what = format!("round trips over {topo:?} {link:?}");
        let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
            (round_trip(&place, false), round_trip(&place, true))
        });
        eprintln!("{what}: {}", q.describe());
        let (rtt, rtt6) = q.value;
        if link == Some("delay=1ms,via=emulator") {
            assert!(
                rtt >= Duration::from_micros(1900) && rtt < Duration::from_micros(3000),
                "{rtt:?}"
            );
        }
        assert!(rtt6 < Duration::from_millis(50));
        drop(place);
        assert!(
            leftovers(&names).is_empty(),
            "{topo:?}: left {:?}",
            leftovers(&names)
        );
    }
}

#[test]
fn bad_specs_are_refused() {
    assert!(PlaceSpec::parse(Some("moon"), None).is_err());
    assert!(PlaceSpec::parse(Some("loopback"), Some("rate=1mbit")).is_err());
    // A delay on plain veth needs netem: without it the spec is refused,
    // pointing at the router topology; with it, netem carries the delay.
    let veth_delay = PlaceSpec::parse(Some("veth"), Some("delay=5ms")).unwrap();
    let e = veth_delay.check_with(false).unwrap_err().to_string();
    assert!(e.contains("router"), "{e}");
    assert_eq!(veth_delay.check_with(true).unwrap(), Mechanism::Netem);
    // Asked for by name where there is none, netem is refused by name.
    let netem = PlaceSpec::parse(Some("router"), Some("delay=5ms,via=netem")).unwrap();
    let e = netem.check_with(false).unwrap_err().to_string();
    assert!(e.contains("no netem qdisc"), "{e}");
    assert_eq!(netem.check_with(true).unwrap(), Mechanism::Netem);
    // This host takes the branch its kernel calls for.
    assert_eq!(
        veth_delay.check().is_ok(),
        lab::shaper::netem_available(),
        "{:?}",
        veth_delay.check()
    );
}

/// Issue 30, rule 8: a place records the literal commands that built it
/// and each device's qdisc, so a reader can rebuild it: plain veth ends with
/// no queue of its own (noqueue), ether10 with a tbf at its rate.
#[test]
fn a_place_records_the_commands_that_built_it_and_its_qdiscs() {
    if !testkit::need_root("namespaces, veth pairs and qdiscs") {
        return;
    }
    let veth = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let info = veth.info().clone();
    let ns = &info.namespaces[0];
    assert!(
        info.commands
            .iter()
            .any(|c| c == &format!("ip netns add {ns}")),
        "{:#?}",
        info.commands
    );
    assert!(
        info.commands.iter().any(|c| c.contains("type veth")),
        "{:#?}",
        info.commands
    );
    // Only this place's commands: every one names one of its namespaces.
    assert!(info
        .commands
        .iter()
        .all(|c| info.namespaces.iter().any(|n| c.contains(n.as_str()))));
    assert!(
        info.qdiscs
            .iter()
            .any(|q| q.starts_with(&format!("{ns}: qdisc noqueue"))),
        "{:#?}",
        info.qdiscs
    );
    drop(veth);
    let ether10 = Place::build(&PlaceSpec::parse(Some("ether10"), None).unwrap()).unwrap();
    let info = ether10.info().clone();
    assert!(
        info.commands
            .iter()
            .any(|c| c.contains(" tc qdisc") && c.contains("tbf")),
        "{:#?}",
        info.commands
    );
    assert!(
        info.qdiscs
            .iter()
            .any(|q| q.contains("qdisc tbf") && q.contains("rate 10Mbit")),
        "{:#?}",
        info.qdiscs
    );
    eprintln!("{:#?}\n{:#?}", info.commands, info.qdiscs);
    assert!(!info.qdiscs.iter().any(|q| q.contains(" dev lo ")));
}
