//! The stack's TCP against Linux's over a TUN opened with the virtio-net
//! header and offloads (`TunKind::TunOffload`: TSO4/TSO6/CSUM), in a
//! network namespace of its own (`tcplab-offload-<pid>-<n>`, deleted on
//! drop, so on panic too). 10 MB each way with every byte checked, and
//! proof from the counters that super-packets were used both ways: Linux
//! hands the stack packets larger than the MSS (its TSO/GRO left them
//! whole), the stack hands Linux super-segments that the kernel cuts.
//! The same transfers over a plain TUN run beside them, and both
//! throughputs are printed (meaningful in release:
//! `cargo test -p stack --release --test interop_offload -- --nocapture`).
//! Skipped, with a message, without root or TUN.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::iface::{DropReason, InterfaceCounters};
use stack::phy::tun::{TunKind, TunTap};
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::{Counters, TcpConfig};
use stack::time::{Clock, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant as WallInstant};

/// What each transfer moves by default: 10 MB.
const DEFAULT_BULK_BYTES: u64 = 10 * 1000 * 1000;
/// How long one transfer may take before it fails instead of hanging.
const TRANSFER_LIMIT: Duration = Duration::from_secs(120);
/// Linux's MSS toward the stack and the stack's toward Linux, MTU 1500.
const MSS: usize = 1460;
const PORT: u16 = 5001;

/// What each transfer moves: 10 MB, or `TCPLAB_OFFLOAD_MB` megabytes (a
/// longer run gives steadier throughput figures).
fn bulk_bytes() -> u64 {
    std::env::var("TCPLAB_OFFLOAD_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(DEFAULT_BULK_BYTES, |mb| mb * 1000 * 1000)
}

// The stream's byte pattern, made and checked a 2048-byte block at a time.
#[path = "support/stream_pattern.rs"]
mod stream_pattern;
use stream_pattern::{fill as fill_pattern, first_mismatch, pattern};

/// What one transfer showed.
#[derive(Debug)]
struct Transfer {
    /// Bytes the receiving end got, in order and checked.
    bytes: u64,
    /// The first offset that broke the pattern, if any.
    mismatch: Option<u64>,
    /// From the connection's start to the last byte read.
    seconds: f64,
    /// The stack's connection counters at the end.
    tcp: Counters,
    /// The stack's interface counters at the end.
    iface: InterfaceCounters,
}

impl Transfer {
    fn mbit_per_s(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.seconds / 1e6
    }
}

struct Setup {
    ns: Netns,
    stack: Stack<TunTap>,
    linux: Ipv4Addr,
    ours: Ipv4Addr,
}

fn setup(kind: TunKind, subnet: u8) -> Option<Setup> {
    let ns = Netns::new("offload")?;
    let linux = Ipv4Addr::new(10, 83, subnet, 1);
    let ours = Ipv4Addr::new(10, 83, subnet, 2);
    let device = ns.device(kind, &format!("{linux}/24"));
    let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap();
    let iface = stack::iface::InterfaceConfig::new(Medium::Ip, cidr);
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).expect("an ISN secret");
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let stack = Stack::new(device, iface, TcpConfig::default(), isn, clock);
    Some(Setup {
        ns,
        stack,
        linux,
        ours,
    })
}

/// Linux connects to the stack, writes `bulk_bytes()` of the pattern and
/// closes; the stack reads and checks every byte until Linux's FIN.
fn linux_to_stack(kind: TunKind, subnet: u8) -> Option<Transfer> {
    let Setup {
        ns,
        mut stack,
        ours,
        ..
    } = setup(kind, subnet)?;
    let listener = stack.tcp.listen(PORT, 4).expect("listen");
    let to = SocketAddrV4::new(ours, PORT);
    let total = bulk_bytes();
    let writer = ns.run(move || {
        let mut s =
            TcpStream::connect_timeout(&to.into(), Duration::from_secs(5)).expect("connect");
        let mut chunk = vec![0u8; 256 * 1024];
        let mut sent = 0u64;
        while sent < total {
            let n = (total - sent).min(chunk.len() as u64) as usize;
            fill_pattern(sent, &mut chunk[..n]);
            s.write_all(&chunk[..n]).expect("write");
            sent += n as u64;
        }
        s.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    let start = WallInstant::now();
    let mut conn = None;
    let mut bytes = 0u64;
    let mut mismatch = None;
    let mut buf = vec![0u8; 256 * 1024];
    let mut seconds = 0.0;
    let mut tcp = Counters::default();
    while start.elapsed() < TRANSFER_LIMIT {
        let now = stack.now();
        stack
            .run_until(now.after(Duration::from_millis(10)))
            .expect("the stack loop");
        if conn.is_none() {
            conn = stack.tcp.accept(listener).expect("accept");
        }
        let Some(c) = conn else { continue };
        loop {
            let n = stack.tcp.recv(c, &mut buf).expect("recv");
            if n == 0 {
                break;
            }
            if mismatch.is_none() {
                mismatch = first_mismatch(bytes, &buf[..n]);
            }
            bytes += n as u64;
        }
        tcp = stack.tcp.connection(c).expect("the connection").counters();
        if stack.tcp.peer_finished(c).expect("the connection") {
            seconds = start.elapsed().as_secs_f64();
            stack.tcp.close(c).expect("close");
            let until = WallInstant::now() + Duration::from_secs(5);
            while WallInstant::now() < until && stack.tcp.connections().next().is_some() {
                let now = stack.now();
                stack
                    .run_until(now.after(Duration::from_millis(10)))
                    .unwrap();
            }
            break;
        }
    }
    writer.join().expect("Linux's writer");
    Some(Transfer {
        bytes,
        mismatch,
        seconds,
        tcp,
        iface: *stack.iface.counters(),
    })
}

/// The stack connects to Linux, writes `bulk_bytes()` of the pattern and
/// closes; Linux reads and checks every byte until the stack's FIN.
fn stack_to_linux(kind: TunKind, subnet: u8) -> Option<Transfer> {
    let Setup {
        ns,
        mut stack,
        linux,
        ours,
    } = setup(kind, subnet)?;
    let listener = ns
        .run(move || TcpListener::bind(SocketAddrV4::new(linux, PORT)).expect("bind"))
        .join()
        .unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(TRANSFER_LIMIT)).unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        let mut mismatch = None;
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if mismatch.is_none() {
                        mismatch = first_mismatch(got, &buf[..n]);
                    }
                    got += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => panic!("Linux's read: {e}"),
            }
        }
        done_tx.send(()).unwrap();
        drop(s);
        (got, mismatch)
    });
    let start = WallInstant::now();
    let now = stack.now();
    let c = stack
        .tcp
        .connect(ours, SocketAddrV4::new(linux, PORT), now)
        .expect("connect");
    let mut chunk = vec![0u8; 256 * 1024];
    let mut sent = 0u64;
    let total = bulk_bytes();
    let mut closed = false;
    let mut seconds = 0.0;
    while start.elapsed() < TRANSFER_LIMIT {
        while sent < total {
            let n = (total - sent).min(chunk.len() as u64) as usize;
            fill_pattern(sent, &mut chunk[..n]);
            match stack.tcp.send(c, &chunk[..n]) {
                Ok(0) => break,
                Ok(k) => sent += k as u64,
                Err(stack::socket::TcpSocketError::NotSending) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        if sent == total && !closed {
            stack.tcp.shutdown(c).expect("shutdown");
            closed = true;
        }
        let now = stack.now();
        stack
            .run_until(now.after(Duration::from_millis(10)))
            .expect("the stack loop");
        if done_rx.try_recv().is_ok() {
            seconds = start.elapsed().as_secs_f64();
            break;
        }
    }
    let tcp = stack.tcp.connection(c).expect("the connection").counters();
    // Answer Linux's FIN, then let the connection go.
    let until = WallInstant::now() + Duration::from_millis(200);
    while WallInstant::now() < until {
        let now = stack.now();
        stack
            .run_until(now.after(Duration::from_millis(10)))
            .unwrap();
    }
    let (bytes, mismatch) = reader.join().expect("Linux's reader");
    Some(Transfer {
        bytes,
        mismatch,
        seconds,
        tcp,
        iface: *stack.iface.counters(),
    })
}

/// Drops other than Linux's own IPv6 chatter on a new link (router
/// solicitations, MLD), which the IPv4-only stack counts as unknown.
fn drops_but_ipv6(i: &InterfaceCounters) -> u64 {
    i.total_drops() - i.drops(DropReason::UnknownEthertype)
}

fn assert_whole(what: &str, t: &Transfer) {
    assert_eq!(t.mismatch, None, "{what}: the stream broke at that offset");
    assert_eq!(t.bytes, bulk_bytes(), "{what}: bytes received");
    assert!(t.seconds > 0.0, "{what}: did not finish in time: {t:?}");
}

fn report(what: &str, offload: &Transfer, plain: &Transfer) {
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!(
        "{what} ({build}): offload TUN {:.0} Mbit/s, plain TUN {:.0} Mbit/s ({:.2}x); \
         frames in/out with offloads {}/{}, without {}/{}",
        offload.mbit_per_s(),
        plain.mbit_per_s(),
        offload.mbit_per_s() / plain.mbit_per_s(),
        offload.iface.frames_in,
        offload.iface.frames_out,
        plain.iface.frames_in,
        plain.iface.frames_out,
    );
}

#[test]
fn the_fast_pattern_is_the_pattern() {
    let mut buf = vec![0u8; 10_000];
    for start in [0u64, 1, 2047, 2048, 250, 524_287, 1 << 33] {
        fill_pattern(start, &mut buf);
        for (k, &b) in buf.iter().enumerate() {
            assert_eq!(b, pattern(start + k as u64), "offset {}", start + k as u64);
        }
        assert_eq!(first_mismatch(start, &buf), None);
        buf[777] ^= 1;
        assert_eq!(first_mismatch(start, &buf), Some(start + 777));
    }
}

#[test]
fn linux_sends_the_stack_super_packets_through_the_offload_tun() {
    let Some(offload) = linux_to_stack(TunKind::TunOffload, 1) else {
        return;
    };
    assert_whole("Linux → stack, offload", &offload);
    let i = &offload.iface;
    println!("Linux → stack, offload: {i:?}");
    // Linux's TSO left packets whole: larger than one MSS, counted.
    assert!(i.super_packets_in > 0, "no super-packet arrived: {i:?}");
    assert!(
        i.bytes_in / i.frames_in > MSS as u64,
        "average frame {}",
        i.bytes_in / i.frames_in
    );
    // Their checksums were partial and not verified (NEEDS_CSUM) ...
    assert!(i.checksums_trusted_in >= i.super_packets_in, "{i:?}");
    assert_eq!(drops_but_ipv6(i), 0, "{i:?}");
    // ... and the stack's ACKs went out with partial checksums Linux took.
    assert!(i.checksums_offloaded_out > 0, "{i:?}");
    // The ACK clock ran on super-packets: far fewer ACKs than MSS-sized
    // segments.
    assert!(
        offload.tcp.segments_out < bulk_bytes() / MSS as u64,
        "{:?}",
        offload.tcp
    );

    let plain = linux_to_stack(TunKind::Tun, 2).expect("the plain TUN as well");
    assert_whole("Linux → stack, plain", &plain);
    assert_eq!(plain.iface.super_packets_in, 0);
    assert_eq!(plain.iface.checksums_trusted_in, 0);
    report("Linux → stack", &offload, &plain);
}

#[test]
fn the_stack_sends_linux_super_segments_through_the_offload_tun() {
    let Some(offload) = stack_to_linux(TunKind::TunOffload, 3) else {
        return;
    };
    assert_whole("stack → Linux, offload", &offload);
    let (t, i) = (&offload.tcp, &offload.iface);
    println!("stack → Linux, offload: {t:?} {i:?}");
    // TCP built super-segments and the interface wrote them with TSO.
    assert!(t.super_segments_out > 0, "{t:?}");
    assert!(i.super_packets_out >= t.super_segments_out, "{i:?}");
    // Counters count wire segments: at least the payload over the MSS.
    let data_mss = (MSS - 12) as u64;
    assert!(t.segments_out >= bulk_bytes().div_ceil(data_mss), "{t:?}");
    assert!(
        i.super_packet_segments_out > 2 * i.super_packets_out,
        "{i:?}"
    );
    // Far fewer writes than wire segments.
    assert!(i.frames_out < t.segments_out / 2, "{i:?} {t:?}");
    assert_eq!(drops_but_ipv6(i), 0, "{i:?}");

    let plain = stack_to_linux(TunKind::Tun, 4).expect("the plain TUN as well");
    assert_whole("stack → Linux, plain", &plain);
    assert_eq!(plain.tcp.super_segments_out, 0);
    assert_eq!(plain.iface.super_packets_out, 0);
    report("stack → Linux", &offload, &plain);
}

#[test]
fn ping_and_udp_pass_the_whole_stack_over_the_offload_tun() {
    let Some(Setup {
        ns,
        mut stack,
        linux,
        ours,
    }) = setup(TunKind::TunOffload, 5)
    else {
        return;
    };
    let udp = stack.udp.bind(7007).expect("bind");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let stack_thread = std::thread::spawn(move || {
        while !stopping.load(std::sync::atomic::Ordering::Relaxed) {
            let now = stack.now();
            stack
                .run_until(now.after(Duration::from_millis(10)))
                .expect("the stack loop");
            // Echo every datagram back, reversed.
            while let Some((from, mut data)) = stack.udp.recv_from(udp).expect("the socket") {
                data.reverse();
                stack.udp.send_to(udp, from, &data).expect("send_to");
            }
        }
        stack
    });
    let ping = testkit::need_tool("ping")
        .then(|| ns.exec(&["ping", "-c", "3", "-i", "0.2", "-W", "2", &ours.to_string()]));
    let answer = ns
        .run(move || {
            let socket = std::net::UdpSocket::bind(SocketAddrV4::new(linux, 0)).expect("bind");
            socket
                .set_read_timeout(Some(Duration::from_secs(3)))
                .unwrap();
            socket
                .send_to(b"offloaded", SocketAddrV4::new(ours, 7007))
                .expect("send");
            let mut buf = [0u8; 2048];
            let (n, _) = socket.recv_from(&mut buf).expect("the stack's answer");
            buf[..n].to_vec()
        })
        .join();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stack = stack_thread.join().expect("the stack thread");
    let i = *stack.iface.counters();
    println!("ping and UDP over the offload TUN: {i:?}");
    // Linux's datagram came with a partial checksum (not verified here);
    // ours left with one the kernel finished, or Linux would drop it.
    assert_eq!(answer.expect("Linux's UDP socket"), b"dedaolffo");
    assert!(i.checksums_trusted_in >= 1, "{i:?}");
    assert!(i.checksums_offloaded_out >= 1, "{i:?}");
    if let Some((ok, out)) = ping {
        assert!(ok, "ping failed: {out}");
        assert!(out.contains("3 packets transmitted, 3 received"), "{out}");
        assert_eq!(i.echo_replies_sent, 3, "{i:?}");
    }
    assert_eq!(drops_but_ipv6(&i), 0, "{i:?}");
}
