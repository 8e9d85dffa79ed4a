//! `ping` through the whole [`Stack`] (interface, UDP and TCP sockets,
//! the loop of `run_until`), not only the bare interface: Linux in a
//! namespace of its own pings the stack over a TUN and a TAP device while
//! the stack also listens on a TCP port. Skipped, with a message, without
//! root, TUN or `ping`.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::iface::InterfaceConfig;
use stack::phy::tun::TunKind;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn ping_installed() -> bool {
    testkit::need_tool("ping")
}

/// Linux pings the stack five times; every request gets its reply, and
/// the stack's interface counted them.
fn ping_the_stack(kind: TunKind, subnet: u8) {
    if !ping_installed() {
        return;
    }
    let Some(ns) = Netns::new("ping") else {
        return;
    };
    let linux = Ipv4Addr::new(10, 83, subnet, 1);
    let ours = Ipv4Addr::new(10, 83, subnet, 2);
    let device = ns.device(kind, &format!("{linux}/24"));
    let medium = if kind == TunKind::Tap {
        Medium::Ethernet
    } else {
        Medium::Ip
    };
    let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap();
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).expect("an ISN secret");
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let mut stack = Stack::new(
        device,
        InterfaceConfig::new(medium, cidr),
        TcpConfig::default(),
        isn,
        clock.clone(),
    );
    stack.tcp.listen(5004, 4).expect("listen");
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let stack_thread = std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let now = clock.now();
            stack
                .run_until(now.after(Duration::from_millis(10)))
                .expect("the stack loop");
        }
        stack
    });
    let (ok, out) = ns.exec(&["ping", "-c", "5", "-i", "0.2", "-W", "2", &ours.to_string()]);
    stop.store(true, Ordering::Relaxed);
    let stack = stack_thread.join().expect("the stack thread");
    let counters = stack.iface.counters();
    eprintln!("{kind:?} ping through Stack: {out}\n{counters:?}");
    assert!(ok, "ping failed: {out}");
    assert!(out.contains("5 packets transmitted, 5 received"), "{out}");
    assert_eq!(counters.echo_replies_sent, 5, "{counters:?}");
    if kind == TunKind::Tap {
        assert!(counters.arp_replies_sent >= 1, "{counters:?}");
    }
    let tcp = stack.tcp.counters();
    assert_eq!(
        (tcp.passive_opens, tcp.segments_out),
        (0, 0),
        "no TCP was involved: {tcp:?}"
    );
}

#[test]
fn linux_pings_the_whole_stack_over_tun() {
    ping_the_stack(TunKind::Tun, 1);
}

#[test]
fn linux_pings_the_whole_stack_over_tap() {
    ping_the_stack(TunKind::Tap, 2);
}
