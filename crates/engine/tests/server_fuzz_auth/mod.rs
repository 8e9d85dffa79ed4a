//! server_fuzz's campaigns of issue 28: the handshake event loop and the
//! tagged framing after a keyed handshake, on a real keyed server in
//! process.
//!
//! - Many connections at once (up to 24), each a stream of handshake
//!   frames, near-frames, oversized headers and junk, written in chunks cut
//!   anywhere and interleaved across the connections, with pauses, and
//!   ended by a close, a reset or by staying silent. Nothing without the key
//!   is ever welcomed, every reply is a well-formed plain frame, every
//!   connection is closed by its deadline, and a real keyed client is then
//!   served a trial.
//! - On an authenticated connection, a run of tagged `check`s with one
//!   frame tampered (a bit of its header, payload or tag flipped, its tag
//!   cut), replayed, reordered, skipped (a sequence number lost) or sent
//!   untagged: every frame before it is answered, the tampered one never
//!   is, and the server ends the connection.

use engine::auth::{fresh_nonce, nonce_from_hex, to_hex, Key, CLIENT_LABEL};
use engine::early_proof::{unix_now, EarlyProof};
use engine::proto::{
    encode_body, parse_body, read_frame, FrameError, Message, MAX_FRAME, PRE_AUTH_MAX_FRAME,
    VERSION,
};
use engine::session::{Framing, SessionKeys, Side, Transcript};
use engine::{Client, Limits, Server};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};
use record::{TestKind, TrialParams};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fuzz_support::{body, config_from, frame, good_frame};

/// The handshake deadline of the fuzzed server.
const HANDSHAKE: Duration = Duration::from_secs(1);

fn fail(what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(what.to_string())
}

/// A keyed server in process, with tight limits.
fn keyed_server(key: &Key) -> SocketAddr {
    let limits = Limits {
        max_parallel: 2,
        max_duration_s: 0.3,
        max_bytes: 1 << 20,
        max_trial_s: 4.0,
        max_clients: 4,
        handshake_s: HANDSHAKE.as_secs_f64(),
        // The campaign completes thousands of handshakes of one key.
        key_handshakes_per_s: f64::INFINITY,
        key_frames_per_s: f64::INFINITY,
        ..Limits::default()
    };
    Server::bind("127.0.0.1:0".parse().unwrap(), limits)
        .unwrap()
        .with_key(key.clone())
        .spawn()
        .unwrap()
}

/// One handshake-time frame an attacker without the key may send.
fn pre_auth_frame(key_id: String) -> impl Strategy<Value = Vec<u8>> {
    let hello = move |id: Option<String>| {
        good_frame(
            &encode_body(&Message::AuthHello {
                client: "fuzz".into(),
                nonce: "cd".repeat(32),
                key_id: id,
                early: None,
            })
            .unwrap(),
        )
    };
    let right = hello(Some(key_id));
    prop_oneof![
        3 => Just(right),
        1 => "[0-9a-f]{0,20}".prop_map(move |id| hello(Some(id))),
        1 => "[0-9a-f]{64}".prop_map(|p| good_frame(&encode_body(&Message::AuthProof { proof: p }).unwrap())),
        1 => Just(good_frame(br#"{"type":"hello","client":"x"}"#)),
        2 => body().prop_map(|b| good_frame(&b)),
        1 => (PRE_AUTH_MAX_FRAME + 1..=u32::MAX).prop_map(|n| frame(VERSION, n, b"{")),
        1 => vec(any::<u8>(), 1..40),
    ]
}

/// How a fuzzing connection ends.
#[derive(Debug, Clone, Copy)]
enum End {
    Close,
    Reset,
    Silent,
}

/// One fuzzing connection: its bytes and its ending.
#[derive(Debug, Clone)]
struct Script {
    bytes: Vec<u8>,
    end: End,
}

/// A case: the connections, and the interleaving of their writes (which
/// connection, how many bytes, and a pause after in ms).
#[derive(Debug, Clone)]
struct Crowd {
    scripts: Vec<Script>,
    steps: Vec<(Index, usize, u8)>,
}

fn crowd(key_id: String) -> impl Strategy<Value = Crowd> {
    let script = (
        vec(pre_auth_frame(key_id), 0..4),
        prop_oneof![Just(End::Close), Just(End::Reset), Just(End::Silent)],
    )
        .prop_map(|(frames, end)| Script {
            bytes: frames.concat(),
            end,
        });
    (
        vec(script, 1..24),
        vec((any::<Index>(), 1usize..300, 0u8..4), 1..120),
    )
        .prop_map(|(scripts, steps)| Crowd { scripts, steps })
}

/// What the campaigns saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub cases: u64,
    pub connections: u64,
    pub frames: u64,
    pub replies: u64,
}

/// Every whole plain frame in `bytes` must parse; none may be a welcome.
fn check_replies(bytes: &[u8], t: &mut Tally) -> Result<(), TestCaseError> {
    let mut r = bytes;
    loop {
        match read_frame(&mut r, MAX_FRAME) {
            Ok((v, body)) => {
                prop_assert_eq!(v, VERSION);
                let m = parse_body(&body).map_err(fail)?;
                t.replies += 1;
                prop_assert!(
                    matches!(m, Message::Error { .. } | Message::AuthChallenge { .. }),
                    "a connection without the key got {:?}",
                    m
                );
            }
            Err(FrameError::Closed) => return Ok(()),
            Err(e) => return Err(fail(format!("a reply is not a frame: {e}"))),
        }
    }
}

fn run_crowd(addr: SocketAddr, key: &Key, c: &Crowd, t: &mut Tally) -> Result<(), TestCaseError> {
    let mut conns: Vec<(TcpStream, usize, Vec<u8>)> = Vec::new();
    for _ in &c.scripts {
        let s = TcpStream::connect(addr).map_err(fail)?;
        s.set_nonblocking(true).map_err(fail)?;
        conns.push((s, 0, Vec::new()));
    }
    t.connections += c.scripts.len() as u64;
    let started = Instant::now();
    let mut buf = [0u8; 8192];
    let drain = |conns: &mut Vec<(TcpStream, usize, Vec<u8>)>, buf: &mut [u8]| {
        for (s, _, got) in conns.iter_mut() {
            while let Ok(n) = s.read(buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
        }
    };
    for (which, len, pause) in &c.steps {
        let i = which.index(conns.len());
        let (s, at, _) = &mut conns[i];
        let bytes = &c.scripts[i].bytes;
        if *at < bytes.len() {
            let end = (*at + len).min(bytes.len());
            // A server that closed may refuse the rest: that is allowed.
            if let Ok(n) = s.write(&bytes[*at..end]) {
                *at += n;
            }
        }
        if *pause > 0 {
            std::thread::sleep(Duration::from_millis(*pause as u64));
        }
        drain(&mut conns, &mut buf);
    }
    t.frames += c
        .scripts
        .iter()
        .map(|s| s.bytes.len() as u64 / 64 + 1)
        .sum::<u64>();
    for ((s, _, _), script) in conns.iter().zip(&c.scripts) {
        match script.end {
            End::Close => {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
            End::Reset => {
                let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            End::Silent => {}
        }
    }
    // Every connection is closed by the server by its deadline.
    let by = started + HANDSHAKE + Duration::from_millis(1500);
    for (i, (s, _, got)) in conns.iter_mut().enumerate() {
        if matches!(c.scripts[i].end, End::Reset) {
            continue;
        }
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() > by {
                        return Err(fail(format!("connection {i} still open past its deadline")));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => break,
            }
        }
        check_replies(got, t)?;
    }
    drop(conns);
    // A real keyed client is served.
    let mut client = Client::connect_with_key(addr, Duration::from_secs(3), Some(key))
        .map_err(|e| fail(format!("the keyed client after a crowd: {e}")))?;
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.duration_s = None;
    p.bytes = Some(64 << 10);
    p.write_size = 16 << 10;
    p.read_size = 16 << 10;
    let o = client
        .run_trial(&p, &Arc::new(AtomicBool::new(false)))
        .map_err(|e| fail(format!("the keyed client's trial: {e}")))?;
    prop_assert_eq!(o.metrics["bytes"], (64 << 10) as f64);
    t.cases += 1;
    Ok(())
}

/// A keyed handshake by hand; the connection and its framing.
fn handshake(addr: SocketAddr, key: &Key) -> (TcpStream, Framing) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut t = Transcript::default();
    let ours = fresh_nonce().unwrap();
    let hello = encode_body(&Message::AuthHello {
        client: "fuzz".into(),
        nonce: to_hex(&ours),
        key_id: Some(key.id()),
        early: Some(EarlyProof::new(key, &ours, unix_now())),
    })
    .unwrap();
    t.add(&hello);
    s.write_all(&good_frame(&hello)).unwrap();
    let (_, body) = read_frame(&mut s, MAX_FRAME).unwrap();
    let Ok(Message::AuthChallenge { nonce, .. }) = parse_body(&body) else {
        panic!("no challenge")
    };
    t.add(&body);
    let theirs = nonce_from_hex(&nonce).unwrap();
    let proof = encode_body(&Message::AuthProof {
        proof: to_hex(&key.proof(CLIENT_LABEL, &ours, &theirs)),
    })
    .unwrap();
    t.add(&proof);
    s.write_all(&good_frame(&proof)).unwrap();
    let keys = SessionKeys::derive(key, &ours, &theirs, &t.hash());
    let mut f = Framing::sealed(&keys, Side::Client);
    assert!(matches!(f.read(&mut s), Ok(Message::Welcome { .. })));
    (s, f)
}

/// How the one bad frame of a run is made.
#[derive(Debug, Clone)]
enum Tamper {
    /// A bit of the frame flipped (header, payload or tag).
    Flip(Index, u8),
    /// The tag cut short by this many bytes.
    Cut(usize),
    /// An earlier frame sent again.
    Replay(Index),
    /// The next frame sent before this one.
    Reorder,
    /// A frame sealed but never sent: the next one's sequence number is wrong.
    Skip,
    /// The message sent untagged.
    Plain,
}

fn tamper() -> impl Strategy<Value = Tamper> {
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| Tamper::Flip(i, b)),
        1 => (1usize..=32).prop_map(Tamper::Cut),
        1 => any::<Index>().prop_map(Tamper::Replay),
        1 => Just(Tamper::Reorder),
        1 => Just(Tamper::Skip),
        1 => Just(Tamper::Plain),
    ]
}

fn check() -> Message {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.duration_s = Some(0.1);
    Message::Check { params: p }
}

fn run_tampered(
    addr: SocketAddr,
    key: &Key,
    good: usize,
    how: &Tamper,
    t: &mut Tally,
) -> Result<(), TestCaseError> {
    let (mut s, mut f) = handshake(addr, key);
    t.connections += 1;
    let mut sent = Vec::new();
    for _ in 0..good {
        let fr = f.seal(&check()).map_err(fail)?;
        s.write_all(&fr).map_err(fail)?;
        t.frames += 1;
        match f.read(&mut s) {
            Ok(Message::Checked | Message::Error { .. }) => {}
            other => return Err(fail(format!("a good tagged check got {other:?}"))),
        }
        sent.push(fr);
    }
    let bad = match how {
        Tamper::Flip(i, bit) => {
            let mut fr = f.seal(&check()).map_err(fail)?;
            let at = i.index(fr.len());
            fr[at] ^= 1 << bit;
            fr
        }
        Tamper::Cut(n) => {
            let mut fr = f.seal(&check()).map_err(fail)?;
            fr.truncate(fr.len() - n);
            fr
        }
        Tamper::Replay(i) if !sent.is_empty() => sent[i.index(sent.len())].clone(),
        Tamper::Replay(_) | Tamper::Skip => {
            let _ = f.seal(&check()).map_err(fail)?;
            f.seal(&check()).map_err(fail)?
        }
        Tamper::Reorder => {
            let first = f.seal(&check()).map_err(fail)?;
            let mut second = f.seal(&check()).map_err(fail)?;
            second.extend_from_slice(&first);
            second
        }
        Tamper::Plain => good_frame(&encode_body(&check()).map_err(fail)?),
    };
    t.frames += 1;
    let _ = s.write_all(&bad);
    let _ = s.shutdown(std::net::Shutdown::Write);
    // The server answers nothing but an error, then closes.
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        if Instant::now() > until {
            return Err(fail("the server kept a tampered connection open"));
        }
        match f.read(&mut s) {
            Ok(Message::Error { message }) => {
                t.replies += 1;
                prop_assert!(
                    message.contains("authentication tag")
                        || message.contains("reading")
                        || message.contains("exceeds the limit")
                        || message.contains("not a tcplab control frame")
                        || message.contains("unsupported protocol version"),
                    "{}",
                    message
                );
            }
            Ok(other) => return Err(fail(format!("a tampered frame got {other:?}"))),
            Err(FrameError::Closed) => break,
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(fail(format!("after a tampered frame: {e}"))),
        }
    }
    t.cases += 1;
    Ok(())
}

/// Both campaigns; their tallies.
pub fn campaigns() -> (Tally, Tally) {
    let key = Key::generate().unwrap();
    let addr = keyed_server(&key);
    let crowd_tally = std::cell::RefCell::new(Tally::default());
    let mut runner = TestRunner::new(config_from("TCPLAB_FUZZ_HANDSHAKE_CASES", 24));
    let r = runner.run(&crowd(key.id()), |c| {
        run_crowd(addr, &key, &c, &mut crowd_tally.borrow_mut())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
    let tag_tally = std::cell::RefCell::new(Tally::default());
    let mut runner = TestRunner::new(config_from("TCPLAB_FUZZ_HANDSHAKE_CASES", 64));
    let r = runner.run(&(0usize..6, tamper()), |(good, how)| {
        run_tampered(addr, &key, good, &how, &mut tag_tally.borrow_mut())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
    (crowd_tally.into_inner(), tag_tally.into_inner())
}
