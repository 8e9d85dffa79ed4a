//! The server keeps serving: malformed, unknown and out-of-sync control
//! messages get clear errors, and other clients are unaffected.

use engine::proto::{read_message, write_frame, write_message, Message, VERSION};
use engine::{Client, Limits, Server};
use record::{TestKind, TrialParams};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn server(limits: Limits) -> SocketAddr {
    Server::bind("127.0.0.1:0".parse().unwrap(), limits)
        .unwrap()
        .spawn()
        .unwrap()
}

fn error_text(m: Message) -> String {
    match m {
        Message::Error { message } => message,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

fn quick_trial(addr: SocketAddr) {
    let mut c = Client::connect(addr, Duration::from_secs(5)).unwrap();
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.duration_s = None;
    p.bytes = Some(1 << 20);
    let o = c.run_trial(&p, &Arc::new(AtomicBool::new(false))).unwrap();
    assert_eq!(o.metrics["bytes"], (1 << 20) as f64);
}

#[test]
fn malformed_messages_get_errors_and_others_are_served() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let addr = server(Limits::default());
    // A client that speaks nonsense inside valid frames: errors, connection kept.
    let mut bad = TcpStream::connect(addr).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write_frame(&mut bad, VERSION, b"{not json").unwrap();
    assert!(error_text(read_message(&mut bad).unwrap()).contains("malformed"));
    write_frame(&mut bad, VERSION, br#"{"type":"launch_missiles"}"#).unwrap();
    assert!(error_text(read_message(&mut bad).unwrap()).contains("unknown variant"));
    write_message(
        &mut bad,
        &Message::Setup {
            params: TrialParams::defaults(TestKind::TcpRr),
        },
    )
    .unwrap();
    assert!(error_text(read_message(&mut bad).unwrap()).contains("hello"));
    write_message(&mut bad, &Message::ClientDone).unwrap();
    assert!(error_text(read_message(&mut bad).unwrap()).contains("unexpected"));

    // Meanwhile a well-behaved client is served.
    quick_trial(addr);

    // A fifth frame before the handshake closes the connection.
    write_message(&mut bad, &Message::ClientDone).unwrap();
    assert!(error_text(read_message(&mut bad).unwrap())
        .contains("more than 4 frames before the handshake completed"));
    let mut rest = Vec::new();
    assert_eq!(bad.read_to_end(&mut rest).unwrap(), 0);

    // A wrong version and a wrong magic desynchronise: error, then close.
    let mut bad = TcpStream::connect(addr).unwrap();
    bad.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write_frame(&mut bad, 99, b"{}").unwrap();
    assert!(error_text(read_message(&mut bad).unwrap()).contains("version 99"));
    let mut rest = Vec::new();
    assert_eq!(bad.read_to_end(&mut rest).unwrap(), 0);
    let mut http = TcpStream::connect(addr).unwrap();
    std::io::Write::write_all(&mut http, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(error_text(read_message(&mut http).unwrap()).contains("bad magic"));

    // An oversized frame is refused without allocating it.
    let mut big = TcpStream::connect(addr).unwrap();
    let mut head = b"TCPL".to_vec();
    head.extend_from_slice(&VERSION.to_be_bytes());
    head.extend_from_slice(&u32::MAX.to_be_bytes());
    std::io::Write::write_all(&mut big, &head).unwrap();
    assert!(error_text(read_message(&mut big).unwrap()).contains("exceeds"));

    quick_trial(addr);
}

#[test]
fn invalid_setup_is_refused_and_the_connection_stays_usable() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let addr = server(Limits::default());
    let mut c = Client::connect(addr, Duration::from_secs(5)).unwrap();
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.write_size = 2;
    let err = c
        .run_trial(&p, &Arc::new(AtomicBool::new(false)))
        .unwrap_err();
    assert!(err.to_string().contains("--write-size"), "{err}");
    assert!(c.usable());
    let mut p = TrialParams::defaults(TestKind::TcpRr);
    p.duration_s = Some(0.2);
    c.run_trial(&p, &Arc::new(AtomicBool::new(false))).unwrap();
}

#[test]
fn per_client_bounds_are_enforced() {
    let addr = server(Limits {
        max_parallel: 4,
        max_clients: 2,
        ..Limits::default()
    });
    let mut c = Client::connect(addr, Duration::from_secs(5)).unwrap();
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.parallel = 5;
    let err = c
        .run_trial(&p, &Arc::new(AtomicBool::new(false)))
        .unwrap_err();
    assert!(err.to_string().contains("--parallel"), "{err}");
    let _second = Client::connect(addr, Duration::from_secs(5)).unwrap();
    let third = Client::connect(addr, Duration::from_secs(5));
    assert!(third.err().unwrap().to_string().contains("busy"));
    drop(c);
    // The slot frees once the server sees the client gone: poll for it
    // (a fixed wait raced the server's thread on a busy host).
    let t0 = std::time::Instant::now();
    loop {
        match Client::connect(addr, Duration::from_secs(5)) {
            Ok(_) => break,
            Err(e) if e.to_string().contains("busy") && t0.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!(
                "the slot was not freed {:?} after the client left: {e}",
                t0.elapsed()
            ),
        }
    }
}

#[test]
fn several_clients_at_once() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let addr = server(Limits::default());
    let hs: Vec<_> = (0..3)
        .map(|_| std::thread::spawn(move || quick_trial(addr)))
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}
