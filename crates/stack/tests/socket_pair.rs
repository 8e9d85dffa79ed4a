//! Two whole stacks ([`Stack`]) wired back to back through in-memory
//! devices on one [`ManualClock`]: no system calls, no sleeps. The wire
//! moves every frame one way or the other between polls; time moves only
//! when a test advances it, so the timers the socket set reports
//! (`poll_at`) are checked exactly.

use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::socket::TcpSocketError;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::{ConnectionError, TcpConfig};
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

struct Pair {
    clock: Arc<ManualClock>,
    a: Stack<Loopback>,
    b: Stack<Loopback>,
}

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>, seed: u8) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let iface = InterfaceConfig::new(Medium::Ip, cidr);
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [seed; 32]);
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::new(Medium::Ip, 1500),
        iface,
        TcpConfig::default(),
        isn,
        clock,
    )
}

impl Pair {
    fn new() -> Pair {
        let clock = Arc::new(ManualClock::new(Instant(1_000_000_000)));
        Pair {
            a: stack_at(A, clock.clone(), 1),
            b: stack_at(B, clock.clone(), 2),
            clock,
        }
    }

    /// Polls both stacks and moves frames across until the wire is quiet
    /// (time does not move); returns the frames moved.
    fn settle(&mut self) -> usize {
        let mut moved = 0;
        loop {
            let now = self.clock.now();
            self.a.poll(now).unwrap();
            self.b.poll(now).unwrap();
            let a_out: Vec<_> = self.a.device.outbound.drain(..).collect();
            let b_out: Vec<_> = self.b.device.outbound.drain(..).collect();
            if a_out.is_empty() && b_out.is_empty() {
                return moved;
            }
            moved += a_out.len() + b_out.len();
            self.b.device.inbound.extend(a_out);
            self.a.device.inbound.extend(b_out);
        }
    }

    /// Advances the clock to the earlier of both stacks' next timers.
    fn advance_to_next_timer(&mut self) -> Option<Instant> {
        let next = [self.a.tcp.poll_at(), self.b.tcp.poll_at()]
            .into_iter()
            .flatten()
            .min()?;
        self.clock.set(next);
        Some(next)
    }
}

fn pattern(i: usize) -> u8 {
    (i % 251) as u8 ^ (i >> 9) as u8
}

#[test]
fn a_connection_between_two_stacks_moves_data_closes_and_leaves_time_wait_after_2msl() {
    let mut p = Pair::new();
    let listener = p.a.tcp.listen(80, 8).unwrap();
    let now = p.clock.now();
    let c = p.b.tcp.connect(B, SocketAddrV4::new(A, 80), now).unwrap();
    p.settle();
    let s = p.a.tcp.accept(listener).unwrap().expect("handshake done");
    assert_eq!(p.b.tcp.connection(c).unwrap().state(), State::Established);

    let data: Vec<u8> = (0..300_000).map(pattern).collect();
    let (mut sent, mut got) = (0, Vec::new());
    let mut buf = vec![0u8; 8192];
    while got.len() < data.len() {
        sent += p.b.tcp.send(c, &data[sent..]).unwrap();
        if p.settle() == 0 {
            // Nothing moved: only a timer (delayed ACK) can go on.
            p.advance_to_next_timer().expect("a timer is armed");
        }
        loop {
            let n = p.a.tcp.recv(s, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }
    assert!(got == data, "every byte in order");

    // B closes first: FIN-WAIT-1 → FIN-WAIT-2; A reads the end, closes.
    p.b.tcp.shutdown(c).unwrap();
    p.settle();
    assert!(p.a.tcp.peer_finished(s).unwrap());
    assert_eq!(p.b.tcp.connection(c).unwrap().state(), State::FinWait2);
    p.a.tcp.close(s).unwrap();
    p.settle();
    assert_eq!(p.a.tcp.connections().count(), 0, "A's LAST-ACK ended");
    let conn = p.b.tcp.connection(c).unwrap();
    assert_eq!(conn.state(), State::TimeWait);
    // The set reports TIME-WAIT's end: 2·MSL = 240 s from now.
    let time_wait_end = p.clock.now().after(Duration::from_secs(240));
    assert_eq!(p.b.tcp.poll_at(), Some(time_wait_end));
    p.b.tcp.close(c).unwrap();
    p.clock.set(time_wait_end);
    p.settle();
    assert_eq!(p.b.tcp.connections().count(), 0, "removed after TIME-WAIT");
    assert_eq!(p.b.tcp.poll_at(), None, "no timer left");
}

#[test]
fn connecting_to_a_port_nobody_listens_on_is_refused() {
    let mut p = Pair::new();
    let now = p.clock.now();
    let c = p.b.tcp.connect(B, SocketAddrV4::new(A, 81), now).unwrap();
    p.settle();
    assert_eq!(p.a.tcp.counters().no_socket, 1);
    let conn = p.b.tcp.connection(c).unwrap();
    assert_eq!(conn.state(), State::Closed);
    assert_eq!(conn.error(), Some(ConnectionError::Refused));
    let mut buf = [0u8; 4];
    assert_eq!(
        p.b.tcp.recv(c, &mut buf),
        Err(TcpSocketError::Connection(ConnectionError::Refused))
    );
}

#[test]
fn a_lost_syn_is_sent_again_when_the_reported_timer_fires() {
    let mut p = Pair::new();
    p.a.tcp.listen(80, 8).unwrap();
    let now = p.clock.now();
    let c = p.b.tcp.connect(B, SocketAddrV4::new(A, 80), now).unwrap();
    p.b.poll(now).unwrap();
    assert_eq!(p.b.device.outbound.len(), 1, "the SYN");
    p.b.device.outbound.clear(); // lost on the wire
    let rto = p.b.tcp.poll_at().expect("the retransmission timer");
    assert_eq!(
        rto.since(now),
        Duration::from_secs(1),
        "RFC 6298's initial RTO"
    );
    p.clock.set(Instant(rto.nanos() - 1));
    assert_eq!(p.settle(), 0, "nothing before the timer");
    p.clock.set(rto);
    p.settle();
    assert_eq!(p.b.tcp.connection(c).unwrap().state(), State::Established);
    assert_eq!(p.b.tcp.connection(c).unwrap().counters().timeouts, 1);
}

/// Opens, uses and closes connections from B to A, B closing first (so B
/// holds TIME-WAIT), half a second passing every 1,000; returns how many
/// opened before B ran out of ephemeral ports (None: never).
fn open_and_close_until_refused(p: &mut Pair, attempts: usize) -> Option<usize> {
    let listener = p.a.tcp.listen(80, 64).unwrap();
    for i in 0..attempts {
        let now = p.clock.now();
        let c = match p.b.tcp.connect(B, SocketAddrV4::new(A, 80), now) {
            Ok(c) => c,
            Err(TcpSocketError::NoEphemeralPort) => return Some(i),
            Err(e) => panic!("connection {i}: {e}"),
        };
        p.settle();
        let s = p.a.tcp.accept(listener).unwrap().expect("accepted");
        assert_eq!(p.b.tcp.connection(c).unwrap().state(), State::Established);
        p.b.tcp.close(c).unwrap();
        p.settle();
        p.a.tcp.close(s).unwrap();
        p.settle();
        if i % 1000 == 999 {
            p.clock.advance(Duration::from_millis(500));
        }
    }
    None
}

#[test]
fn time_wait_reuse_lets_a_client_outlast_its_ephemeral_ports_and_without_it_they_run_out() {
    let ports = usize::from(u16::MAX - stack::socket::tcp::EPHEMERAL_FIRST) + 1;
    let mut p = Pair::new();
    assert_eq!(
        open_and_close_until_refused(&mut p, ports + 10),
        Some(ports),
        "without reuse every port is held in TIME-WAIT"
    );
    assert_eq!(p.b.tcp.counters().time_wait_reused, 0);

    let mut p = Pair::new();
    p.b.tcp.set_config(TcpConfig {
        time_wait_reuse: true,
        ..TcpConfig::default()
    });
    assert_eq!(open_and_close_until_refused(&mut p, ports + 500), None);
    let reused = p.b.tcp.counters().time_wait_reused;
    assert_eq!(
        reused, 500,
        "each connection past the ports took over an old TIME-WAIT"
    );
}
