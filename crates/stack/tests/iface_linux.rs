//! The interface against Linux: a TUN and a TAP device, each in a network
//! namespace of its own (`tcplab-iface-<pid>-<n>`, deleted on drop, so on
//! panic too), the stack's event loop on a thread the test starts and
//! stops. Linux's `ping -c 3` gets three replies; a UDP datagram from a
//! socket in the namespace reaches a stack UDP socket and the stack's
//! answer comes back. Skipped, with a message, without root, TUN or
//! `ping`.

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
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The stack's event loop on a thread of its own: polls the device,
/// answers ARP and ping, and echoes every UDP datagram to port 7 back as
/// `echo:` followed by the datagram. Stopped (and joined) on drop.
struct StackThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<InterfaceCounters, String>>>,
}

const UDP_ECHO_PORT: u16 = 7;

impl StackThread {
    fn start(mut device: TunTap, config: InterfaceConfig) -> StackThread {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let handle = std::thread::spawn(move || {
            let clock = MonotonicClock::default();
            let mut iface = Interface::new(config);
            let mut sockets = UdpSockets::default();
            let echo = sockets.bind(UDP_ECHO_PORT).map_err(|e| e.to_string())?;
            while !stopping.load(Ordering::Relaxed) {
                device
                    .wait(Some(Duration::from_millis(10)))
                    .map_err(|e| e.to_string())?;
                let now = clock.now();
                iface
                    .poll(&mut device, now, &mut sockets)
                    .map_err(|e| e.to_string())?;
                while let Some((from, data)) = sockets.recv_from(echo).map_err(|e| e.to_string())? {
                    let answer = echo_answer(&data);
                    sockets
                        .send_to(echo, from, &answer)
                        .map_err(|e| e.to_string())?;
                }
                sockets
                    .flush(&mut iface, &mut device, now)
                    .map_err(|e| e.to_string())?;
            }
            Ok(*iface.counters())
        });
        StackThread {
            stop,
            handle: Some(handle),
        }
    }

    /// Stops the loop and returns the interface's counters.
    fn stop(mut self) -> InterfaceCounters {
        self.stop.store(true, Ordering::Relaxed);
        let handle = self.handle.take().expect("running");
        handle
            .join()
            .expect("the stack thread panicked")
            .expect("the stack loop failed")
    }
}

impl Drop for StackThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What the stack answers a datagram with: `echo:` and the datagram, or
/// for one too large to echo in one packet (we do not fragment on
/// output), its length and byte sum.
fn echo_answer(data: &[u8]) -> Vec<u8> {
    if data.len() <= 1000 {
        let mut answer = b"echo:".to_vec();
        answer.extend_from_slice(data);
        return answer;
    }
    let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
    format!("got {} bytes, sum {sum}", data.len()).into_bytes()
}

fn ping_installed() -> bool {
    testkit::need_tool("ping")
}

/// Linux at 10.81.N.1/24 on a device of `kind`, the stack at 10.81.N.2.
fn start(kind: TunKind, subnet: u8) -> Option<(Netns, StackThread, Ipv4Addr, Ipv4Addr)> {
    let ns = Netns::new("iface")?;
    let linux = Ipv4Addr::new(10, 81, subnet, 1);
    let ours = Ipv4Addr::new(10, 81, subnet, 2);
    let device = ns.device(kind, &format!("{linux}/24"));
    let medium = if kind == TunKind::Tap {
        Medium::Ethernet
    } else {
        Medium::Ip
    };
    let config = InterfaceConfig::new(medium, Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap());
    let stack = StackThread::start(device, config);
    Some((ns, stack, linux, ours))
}

fn ping_three(kind: TunKind, subnet: u8) {
    if !ping_installed() {
        return;
    }
    let Some((ns, stack, _linux, ours)) = start(kind, subnet) else {
        return;
    };
    let (ok, out) = ns.exec(&["ping", "-c", "3", "-i", "0.2", "-W", "2", &ours.to_string()]);
    let counters = stack.stop();
    eprintln!("{kind:?}: {out}");
    assert!(ok, "ping failed: {out}");
    assert!(out.contains("3 packets transmitted, 3 received"), "{out}");
    assert!(counters.echo_replies_sent >= 3, "{counters:?}");
    if kind == TunKind::Tap {
        assert!(
            counters.arp_replies_sent >= 1,
            "Linux asked for our MAC: {counters:?}"
        );
    }
}

fn udp_round_trip(kind: TunKind, subnet: u8) {
    udp_round_trip_of(kind, subnet, b"hello".to_vec());
}

fn udp_round_trip_of(kind: TunKind, subnet: u8, datagram: Vec<u8>) {
    let Some((ns, stack, linux, ours)) = start(kind, subnet) else {
        return;
    };
    let expected = echo_answer(&datagram);
    let fragmented = datagram.len() > 1500 - 28;
    let answer = ns
        .run(move || {
            let socket = UdpSocket::bind(SocketAddrV4::new(linux, 0)).expect("bind");
            socket
                .set_read_timeout(Some(Duration::from_secs(3)))
                .unwrap();
            socket
                .send_to(&datagram, SocketAddrV4::new(ours, UDP_ECHO_PORT))
                .expect("send");
            let mut buf = [0u8; 2048];
            let (n, from) = socket.recv_from(&mut buf).expect("the stack's answer");
            (buf[..n].to_vec(), from)
        })
        .join()
        .unwrap();
    let counters = stack.stop();
    assert_eq!(
        String::from_utf8_lossy(&answer.0),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(answer.1, SocketAddrV4::new(ours, UDP_ECHO_PORT).into());
    assert!(counters.ip_delivered >= 1, "{counters:?}");
    if fragmented {
        assert!(counters.datagrams_reassembled >= 1, "{counters:?}");
    }
}

#[test]
fn linux_pings_the_stack_over_tun() {
    ping_three(TunKind::Tun, 1);
}

#[test]
fn linux_pings_the_stack_over_tap() {
    ping_three(TunKind::Tap, 2);
}

#[test]
fn a_udp_datagram_from_linux_is_answered_over_tun() {
    udp_round_trip(TunKind::Tun, 3);
}

#[test]
fn a_udp_datagram_from_linux_is_answered_over_tap() {
    udp_round_trip(TunKind::Tap, 4);
}

#[test]
fn a_udp_datagram_linux_fragments_is_reassembled_over_tun() {
    let datagram: Vec<u8> = (0..4000u32).map(|i| (i * 13 % 251) as u8).collect();
    udp_round_trip_of(TunKind::Tun, 5, datagram);
}

#[test]
fn a_udp_datagram_linux_fragments_is_reassembled_over_tap() {
    let datagram: Vec<u8> = (0..4000u32).map(|i| (i * 13 % 251) as u8).collect();
    udp_round_trip_of(TunKind::Tap, 6, datagram);
}
