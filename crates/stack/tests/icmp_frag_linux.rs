//! Against Linux over TUN, in a namespace of its own
//! (`tcplab-icmpfrag-<pid>-<n>`, deleted on drop): a 4000-byte UDP
//! datagram the stack sends in fragments arrives whole at a Linux socket,
//! and a connected Linux UDP socket sending to a port the stack has not
//! bound gets ECONNREFUSED from the stack's port unreachable. Skipped,
//! with a message, without root or TUN.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::iface::udp::UdpSockets;
use stack::iface::{Interface, InterfaceConfig, InterfaceCounters};
use stack::phy::tun::{TunKind, TunTap};
use stack::phy::{Device, Medium};
use stack::time::{Clock, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

const LINUX: Ipv4Addr = Ipv4Addr::new(10, 83, 1, 1);
const OURS: Ipv4Addr = Ipv4Addr::new(10, 83, 1, 2);

/// Runs the stack's interface and UDP sockets on `device` until `stop`,
/// sending `to_send` (once) from port 5000; returns its counters.
fn run_stack(
    mut device: TunTap,
    stop: Arc<AtomicBool>,
    to_send: mpsc::Receiver<(SocketAddrV4, Vec<u8>)>,
) -> InterfaceCounters {
    let clock = MonotonicClock::default();
    let config = InterfaceConfig::new(
        Medium::Ip,
        Ipv4Cidr::new(Ipv4Address::from(OURS), 24).unwrap(),
    );
    let mut iface = Interface::new(config);
    let mut sockets = UdpSockets::default();
    let socket = sockets.bind(5000).unwrap();
    while !stop.load(Ordering::Relaxed) {
        device.wait(Some(Duration::from_millis(5))).unwrap();
        let now = clock.now();
        iface.poll(&mut device, now, &mut sockets).unwrap();
        while let Ok((to, data)) = to_send.try_recv() {
            sockets.send_to(socket, to, &data).unwrap();
        }
        sockets.flush(&mut iface, &mut device, now).unwrap();
    }
    *iface.counters()
}

#[test]
fn linux_reassembles_the_stacks_fragments_and_gets_econnrefused_from_its_port_unreachable() {
    let Some(ns) = Netns::new("icmpfrag") else {
        return;
    };
    let device = ns.device(TunKind::Tun, &format!("{LINUX}/24"));
    let stop = Arc::new(AtomicBool::new(false));
    let (send_tx, send_rx) = mpsc::channel();
    let stopping = stop.clone();
    let stack = std::thread::spawn(move || run_stack(device, stopping, send_rx));

    let data: Vec<u8> = (0..4000u32).map(|i| (i * 13 % 251) as u8).collect();
    let expected = data.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let linux = ns.run(move || {
        let socket = UdpSocket::bind(SocketAddrV4::new(LINUX, 6000)).expect("bind");
        socket
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        ready_tx.send(()).unwrap();
        let mut buf = vec![0u8; 8192];
        let received = socket
            .recv_from(&mut buf)
            .map(|(n, from)| (buf[..n].to_vec(), from));
        // A connected socket to a port nobody bound on the stack.
        let probe = UdpSocket::bind(SocketAddrV4::new(LINUX, 0)).expect("bind");
        probe.connect(SocketAddrV4::new(OURS, 9)).expect("connect");
        probe
            .set_read_timeout(Some(Duration::from_secs(3)))
            .unwrap();
        probe.send(b"anyone?").expect("send");
        let refused = probe.recv(&mut buf).map_err(|e| e.kind());
        (received, refused)
    });
    ready_rx.recv().expect("Linux listens");
    send_tx
        .send((SocketAddrV4::new(LINUX, 6000), data))
        .unwrap();
    let (received, refused) = linux.join().expect("Linux's side");
    stop.store(true, Ordering::Relaxed);
    let counters = stack.join().expect("the stack thread");
    eprintln!("{counters:?}");
    let (got, from) = received.expect("the datagram reached Linux");
    assert_eq!(from, SocketAddrV4::new(OURS, 5000).into());
    assert_eq!(got.len(), 4000);
    assert!(got == expected, "every byte");
    assert_eq!(counters.datagrams_fragmented, 1, "{counters:?}");
    assert_eq!(counters.fragments_out, 3);
    assert_eq!(refused, Err(std::io::ErrorKind::ConnectionRefused));
    assert_eq!(counters.icmp_errors_sent, 1, "{counters:?}");
}
