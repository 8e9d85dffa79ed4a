//! Issue 29's header prediction as Van Jacobson wrote it, on real bulk
//! transfers with Linux's TCP over a TUN in a namespace of its own
//! (`tcplab-hdrp-…`), each way, the stack's block accounting on (exact
//! counter cycles per bracket). Each hit is one [`Block::TcpInputFast`]
//! entry and each miss one [`Block::TcpInputSlow`] entry, and every byte
//! arrives as sent. From Linux (in-order data predicted), over 90% of
//! the segments hit, each for less than a miss. To Linux (pure ACKs
//! predicted) the rate and costs are measured and printed, not asserted
//! (that test says why). The numbers are the test build's (the stack at
//! opt-level 2), as measured. Skipped through testkit without root, TUN
//! or `ip`.

#[path = "support/netns.rs"]
mod netns;

#[path = "support/accounted_linux.rs"]
mod accounted_linux;
#[path = "support/stream_pattern.rs"]
mod stream_pattern;

use accounted_linux::{block, can_run, realtime, setting, step, tcp_config};
use stack::account::{self, Block, Options, Report};
use stack::phy::tun::TunTap;
use stack::stack::Stack;
use stack::tcp::state::State;
use stack::tcp::tcb::Counters;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::time::Duration;

const BYTES: u64 = 32_000_000;
const STACK_PORT: u16 = 5321;
const LINUX_PORT: u16 = 5322;
const LIMIT: Duration = Duration::from_secs(120);
/// Linux's window when the stack sends, clamped (TCP_WINDOW_CLAMP): VJ's
/// ACK prediction needs the window unchanged and cwnd ≥ the window, which
/// holds when the receiver's window bounds the transfer (as on 1990's
/// paths). Left to autotuning, Linux opens its window to megabytes,
/// beyond what cwnd reaches under the stack's 1 MB send buffer (cwnd
/// grows only while it limits the flight): no ACK was predicted. With
/// SO_RCVBUF at 128 KB instead, its window moves with its free space
/// (162,400 and 163,040 in turn), and 81% were.
const LINUX_WINDOW_CLAMP: libc::c_int = 128 * 1024;

/// TCP_WINDOW_CLAMP on `l` (its connections inherit it).
fn clamp_window(l: &TcpListener, bytes: libc::c_int) {
    // SAFETY: a valid socket and a c_int option of its size.
    let rc = unsafe {
        libc::setsockopt(
            l.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_WINDOW_CLAMP,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "TCP_WINDOW_CLAMP: {}",
        std::io::Error::last_os_error()
    );
}

fn accounting() {
    account::start(Options {
        timeline_capacity: 0,
        sample_one_in: 1,
        dilation: None,
    });
}

/// The stack connects to Linux and sends [`BYTES`] of the pattern.
fn stack_sends(mut stack: Stack<TunTap>, ours: Ipv4Addr, to: SocketAddrV4) -> (Report, Counters) {
    realtime();
    accounting();
    let limit = std::time::Instant::now() + LIMIT;
    let c = stack.tcp.connect(ours, to, stack.now()).expect("connect");
    let mut chunk = vec![0u8; 64 * 1024];
    let (mut sent, mut shut) = (0u64, false);
    loop {
        if sent < BYTES {
            let n = chunk.len().min((BYTES - sent) as usize);
            stream_pattern::fill(sent, &mut chunk[..n]);
            sent += stack.tcp.send(c, &chunk[..n]).expect("send") as u64;
        }
        if sent == BYTES && !shut {
            stack.tcp.shutdown(c).expect("shutdown");
            shut = true;
        }
        step(&mut stack);
        let conn = stack.tcp.connection(c).expect("the connection");
        if matches!(
            conn.state(),
            State::FinWait2 | State::TimeWait | State::Closed
        ) {
            let counters = conn.counters();
            return (account::stop().expect("accounting was on"), counters);
        }
        assert!(std::time::Instant::now() < limit, "sending took too long");
    }
}

/// The stack accepts Linux's connection and reads to its FIN, checking
/// every byte.
fn stack_receives(mut stack: Stack<TunTap>, ready: mpsc::Sender<()>) -> (Report, Counters) {
    realtime();
    accounting();
    let limit = std::time::Instant::now() + LIMIT;
    let listener = stack.tcp.listen(STACK_PORT, 4).expect("listen");
    ready.send(()).unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let (mut got, mut conn) = (0u64, None);
    loop {
        step(&mut stack);
        if conn.is_none() {
            conn = stack.tcp.accept(listener).expect("accept");
        }
        let Some(c) = conn else { continue };
        loop {
            let n = stack.tcp.recv(c, &mut buf).expect("recv");
            if n == 0 {
                break;
            }
            assert_eq!(
                stream_pattern::first_mismatch(got, &buf[..n]),
                None,
                "a wrong byte"
            );
            got += n as u64;
        }
        if stack.tcp.peer_finished(c).expect("the connection") {
            assert_eq!(got, BYTES);
            // Stopped before the close, so every segment timed is counted.
            let counters = stack.tcp.connection(c).expect("the connection").counters();
            let report = account::stop().expect("accounting was on");
            stack.tcp.close(c).expect("close");
            step(&mut stack);
            return (report, counters);
        }
        assert!(std::time::Instant::now() < limit, "receiving took too long");
    }
}

fn to_linux() -> (Report, Counters) {
    let (ns, stack, linux, ours) =
        setting("hdrp", 88, 1, tcp_config()).expect("checked by can_run");
    let at = SocketAddrV4::new(linux, LINUX_PORT);
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = ns.run(move || {
        let listener = TcpListener::bind(at).expect("bind");
        // The connection inherits it: a window the stack's cwnd outgrows.
        clamp_window(&listener, LINUX_WINDOW_CLAMP);
        ready_tx.send(()).unwrap();
        let (mut s, _) = listener.accept().expect("accept");
        let mut buf = vec![0u8; 256 * 1024];
        let (mut got, mut bad) = (0u64, None);
        loop {
            let n = s.read(&mut buf).expect("read");
            if n == 0 {
                return (got, bad);
            }
            if bad.is_none() {
                bad = stream_pattern::first_mismatch(got, &buf[..n]);
            }
            got += n as u64;
        }
    });
    ready_rx.recv().unwrap();
    let run = std::thread::spawn(move || stack_sends(stack, ours, at))
        .join()
        .expect("the stack thread");
    let (got, bad) = reader.join().unwrap();
    assert_eq!(got, BYTES);
    assert_eq!(bad, None, "a wrong byte at Linux");
    run
}

fn from_linux() -> (Report, Counters) {
    let (ns, stack, _linux, ours) =
        setting("hdrp", 88, 2, tcp_config()).expect("checked by can_run");
    let (ready_tx, ready_rx) = mpsc::channel();
    let stack_thread = std::thread::spawn(move || stack_receives(stack, ready_tx));
    ready_rx.recv().unwrap();
    let to = SocketAddrV4::new(ours, STACK_PORT);
    ns.run(move || {
        let mut s =
            TcpStream::connect_timeout(&to.into(), Duration::from_secs(5)).expect("connect");
        let mut chunk = vec![0u8; 64 * 1024];
        let mut sent = 0u64;
        while sent < BYTES {
            let n = chunk.len().min((BYTES - sent) as usize);
            stream_pattern::fill(sent, &mut chunk[..n]);
            s.write_all(&chunk[..n]).expect("write");
            sent += n as u64;
        }
    })
    .join()
    .unwrap();
    stack_thread.join().expect("the stack thread")
}

/// The hit rate and the cost of a hit against a miss, printed; every
/// segment in is one input entry, each hit one fast-path entry (exact).
/// Returns (hit rate, ns a hit, ns a miss).
fn measured(what: &str, report: &Report, k: &Counters) -> (f64, f64, f64) {
    let (hits, hit_ns) = block(report, Block::TcpInputFast);
    let (misses, miss_ns) = block(report, Block::TcpInputSlow);
    let rate = k.header_prediction_hits as f64 / k.segments_in as f64;
    let (per_hit, per_miss) = (hit_ns / hits, miss_ns / misses);
    eprintln!(
        "{what}: {} of {} segments predicted ({:.1}%); a hit {per_hit:.0} ns ({hits:.0} hits), a miss {per_miss:.0} ns ({misses:.0} misses), ×{:.2}",
        k.header_prediction_hits,
        k.segments_in,
        rate * 100.0,
        per_miss / per_hit
    );
    assert_eq!(
        hits, k.header_prediction_hits as f64,
        "{what}: one fast entry per hit"
    );
    assert_eq!(
        hits + misses,
        k.segments_in as f64,
        "{what}: one input entry per segment"
    );
    (rate, per_hit, per_miss)
}

/// Linux sends: the stack's in-order data prediction takes nine in ten
/// segments and more. A hit's cost is printed beside a miss's, not
/// compared: the only misses of a clean bulk transfer are the handshake's
/// ACK and the FIN, whose input includes setting up and closing the
/// connection, so the comparison would say nothing of VJ's fast path.
#[test]
fn header_prediction_takes_nine_in_ten_segments_of_a_bulk_transfer_from_linux() {
    if !can_run() {
        return;
    }
    let _timing = testkit::timing_lock();
    let (report, k) = from_linux();
    let (rate, per_hit, per_miss) = measured("from Linux (data in)", &report, &k);
    eprintln!("from Linux: a hit {per_hit:.0} ns, a miss {per_miss:.0} ns (the handshake's ACK and the FIN)");
    assert!(rate > 0.9, "hit rate {rate:.3}");
}

/// The stack sends to a window-clamped Linux: the ACKs' prediction is
/// measured and printed, and the accounting's identities checked, but
/// its rate is not asserted: VJ's rule feeds on itself (cwnd grows only
/// on the full path, so a sender that did not push cwnd past the window
/// early never predicts), and on this host it ranged from 0% (a run
/// beside a loaded build) to 98%.
#[test]
fn the_acks_of_a_bulk_transfer_to_linux_are_predicted_only_once_cwnd_passes_the_window() {
    if !can_run() {
        return;
    }
    let _timing = testkit::timing_lock();
    let (report, k) = to_linux();
    // Checked: every byte at Linux (in `to_linux`), one input entry per
    // ACK and one fast entry per prediction (in `measured`).
    measured("to Linux (ACKs in)", &report, &k);
}
