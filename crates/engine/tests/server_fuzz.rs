//! A real server (in process, on a loopback port) fed arbitrary sequences
//! of frames: messages, near-messages and junk in any order (setup before
//! hello, two hellos, a report or a client_done outside a trial), real
//! trials abandoned at any point, and endings that lose the stream's sync
//! (bad magic, wrong version, huge declared lengths, frames cut short).
//!
//! For every case: each in-sync frame gets exactly the reply the protocol
//! promises (a model of the server's state machine says which), the server
//! closes the connection promptly once the client has gone (no hang), and
//! a normal client is then served a real trial. Over the campaign the
//! process's memory and thread count stay bounded.

mod fuzz_support;

use engine::proto::{
    read_message, FrameError, Message, PRE_AUTH_MAX_FRAME, PRE_AUTH_MAX_FRAMES, VERSION,
};
use engine::{validate, Client, Limits, Server};
use fuzz_support::{body, body_of, config, frame, good_frame, legal_trial, message, trial_params};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{TestCaseError, TestRunner};
use record::{TestKind, TrialParams};
use std::io::{ErrorKind, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tight per-client limits, so that a trial a case starts is short (any
/// limit added later keeps its default).
#[allow(clippy::needless_update)]
fn limits() -> Limits {
    Limits {
        max_parallel: 2,
        max_duration_s: 0.3,
        max_bytes: 1 << 20,
        max_io_size: 1 << 16,
        max_trial_s: 4.0,
        // One slot for the fuzzing client, one for the normal client: a
        // slot that is never released shows as "server busy".
        max_clients: 2,
        ..Limits::default()
    }
}

/// How long an in-sync frame may wait for its reply.
const REPLY_WAIT: Duration = Duration::from_secs(5);

/// How long the server may take to close a connection its client has
/// left, trial or no trial (the trial cap is 4 s: a server that waits for
/// it fails).
const LEAVE_WAIT: Duration = Duration::from_millis(1500);

/// Bytes, shown as text (lossily) when a case fails.
#[derive(Clone)]
struct Text(Vec<u8>);

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = String::from_utf8_lossy(&self.0);
        if t.len() > 300 {
            write!(
                f,
                "{:?}… ({} bytes)",
                &t[..t.floor_char_boundary(300)],
                self.0.len()
            )
        } else {
            write!(f, "{t:?}")
        }
    }
}

impl std::ops::Deref for Text {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

/// How the fuzzing client ends a case.
#[derive(Debug, Clone)]
enum Ending {
    /// Closes its side after the frames.
    Close,
    /// Sends bytes that do not start with the magic.
    BadMagic(Text),
    /// Sends a frame of another version.
    BadVersion(u16, Text),
    /// Declares a payload longer than the limit.
    TooLong(u32),
    /// Sends a frame cut short (at least one byte), then closes.
    Truncated(Text, Index),
}

/// What the client does once a trial it set up is ready.
#[derive(Debug, Clone)]
enum InTrial {
    /// Leaves at once.
    Leave,
    /// Says it is done without having sent or received anything.
    ClientDone,
    /// Sends another frame instead.
    Frame(Text),
}

/// One fuzzing connection.
#[derive(Debug, Clone)]
struct Case {
    frames: Vec<Text>,
    ending: Ending,
    in_trial: InTrial,
}

fn hello() -> Vec<u8> {
    body_of(&Message::Hello {
        client: "fuzz".into(),
    })
}

/// A payload: often a hello or a setup (so that sequences reach trials),
/// otherwise anything `body` makes.
fn payload() -> impl Strategy<Value = Text> {
    prop_oneof![
        2 => Just(hello()),
        1 => trial_params().prop_map(|params| body_of(&Message::Setup { params })),
        1 => legal_trial().prop_map(|params| body_of(&Message::Setup { params })),
        6 => body(),
    ]
    .prop_map(Text)
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        3 => Just(Ending::Close),
        1 => vec(any::<u8>(), 1..64)
            .prop_filter("not the magic", |b| !b.starts_with(b"TCPL"))
            .prop_map(|b| Ending::BadMagic(Text(b))),
        1 => (any::<u16>().prop_filter("another version", |v| *v != VERSION), body())
            .prop_map(|(v, b)| Ending::BadVersion(v, Text(b))),
        1 => ((engine::proto::MAX_FRAME + 1)..=u32::MAX).prop_map(Ending::TooLong),
        1 => (message(), any::<Index>())
            .prop_map(|(m, cut)| Ending::Truncated(Text(good_frame(&body_of(&m))), cut)),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let in_trial = prop_oneof![
        Just(InTrial::Leave),
        Just(InTrial::ClientDone),
        payload().prop_map(InTrial::Frame),
    ];
    (vec(payload(), 0..10), ending(), in_trial).prop_map(|(frames, ending, in_trial)| Case {
        frames,
        ending,
        in_trial,
    })
}

/// The reply the protocol promises to one in-sync frame.
#[derive(Debug)]
enum Expect {
    Welcome,
    Error(String),
    ErrorContaining(&'static str),
    /// A valid setup: `ready`, or an error if the trial cannot start.
    Trial,
    /// A valid check: `checked`, or an error (the server's memory bound).
    Checked,
    /// An error containing this, then the connection closes (a refused
    /// handshake; an oversized frame before it may instead be reset).
    Closing(&'static str),
}

/// The server's state machine, as the protocol describes it: `pre_auth`
/// whole frames were sent before this one and before a greeting.
fn expect(payload: &[u8], greeted: bool, pre_auth: u32, limits: &Limits) -> Expect {
    if !greeted && payload.len() > PRE_AUTH_MAX_FRAME as usize {
        return Expect::Closing("before authentication");
    }
    if !greeted && pre_auth >= PRE_AUTH_MAX_FRAMES {
        return Expect::Closing("frames before the handshake completed");
    }
    let parsed = match payload.trim_ascii_start().first() {
        Some(b'{') => serde_json::from_slice::<Message>(payload).ok(),
        _ => None,
    };
    match parsed {
        None => Expect::ErrorContaining("malformed control message"),
        Some(Message::Hello { .. }) if !greeted => Expect::Welcome,
        Some(Message::AuthHello { .. }) if !greeted => Expect::Closing("authentication not set up"),
        Some(Message::AuthProof { .. }) if !greeted => {
            Expect::Closing("auth_proof before auth_hello")
        }
        Some(Message::Setup { .. }) if !greeted => {
            Expect::Error("expected hello before setup".into())
        }
        Some(Message::Setup { params }) => match validate(&params, limits) {
            Err(e) => Expect::Error(e),
            Ok(()) => Expect::Trial,
        },
        Some(Message::Check { .. }) if !greeted => {
            Expect::Error("expected hello before setup".into())
        }
        Some(Message::Check { params }) => match validate(&params, limits) {
            Err(e) => Expect::Error(e),
            Ok(()) => Expect::Checked,
        },
        Some(_) => Expect::ErrorContaining("unexpected message"),
    }
}

fn fail(what: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(what.to_string())
}

/// What a campaign saw.
#[derive(Debug, Default)]
struct Tally {
    cases: u64,
    frames: u64,
    trials: u64,
    desyncs: u64,
}

/// Whether `m` is the server's refusal of a client over its limit.
fn is_busy(m: &Message) -> bool {
    matches!(m, Message::Error { message } if message.starts_with("server busy"))
}

/// Runs one case; returns when the server has closed the connection.
/// While a departed client's slot is still being released, the server
/// may refuse the connection as busy: the case is then tried again.
fn run_case(
    addr: SocketAddr,
    case: &Case,
    limits: &Limits,
    t: &mut Tally,
) -> Result<(), TestCaseError> {
    let give_up = Instant::now() + SLOT_RELEASE;
    loop {
        match run_case_once(addr, case, limits, t)? {
            Served::Yes => return Ok(()),
            Served::Busy if Instant::now() < give_up => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Served::Busy => return Err(fail("the server stayed busy")),
        }
    }
}

/// Whether the server took the connection.
enum Served {
    Yes,
    Busy,
}

fn run_case_once(
    addr: SocketAddr,
    case: &Case,
    limits: &Limits,
    t: &mut Tally,
) -> Result<Served, TestCaseError> {
    let mut s = TcpStream::connect(addr).map_err(fail)?;
    s.set_read_timeout(Some(REPLY_WAIT)).map_err(fail)?;
    s.set_write_timeout(Some(REPLY_WAIT)).map_err(fail)?;
    let mut greeted = false;
    let mut in_trial = false;
    let mut closed = false;
    let mut replied = 0;
    let mut pre_auth = 0;
    for payload in &case.frames {
        let want = expect(payload, greeted, pre_auth, limits);
        if !greeted {
            pre_auth += 1;
        }
        s.write_all(&good_frame(payload)).map_err(fail)?;
        t.frames += 1;
        let got = match read_message(&mut s) {
            Ok(m) if replied == 0 && is_busy(&m) => return Ok(Served::Busy),
            Ok(m) => m,
            Err(FrameError::Io(e))
                if matches!(want, Expect::Closing("before authentication"))
                    && e.kind() == ErrorKind::ConnectionReset =>
            {
                closed = true;
                break;
            }
            // A refused connection is closed with our frame unread.
            Err(FrameError::Io(e)) if replied == 0 && e.kind() == ErrorKind::ConnectionReset => {
                return Ok(Served::Busy)
            }
            Err(e) => return Err(fail(format!("no reply to a frame ({want:?}): {e}"))),
        };
        replied += 1;
        match (&want, got) {
            (Expect::Welcome, Message::Welcome { .. }) => greeted = true,
            (Expect::Error(w), Message::Error { message }) if *w == message => {}
            (Expect::ErrorContaining(w), Message::Error { message }) if message.contains(w) => {}
            (Expect::Trial | Expect::Checked, Message::Error { .. }) => {}
            (Expect::Checked, Message::Checked) => {}
            (Expect::Trial, Message::Ready { .. }) => {
                in_trial = true;
                break;
            }
            (Expect::Closing(w), Message::Error { message }) if message.contains(w) => {
                closed = true;
                break;
            }
            (want, got) => return Err(fail(format!("expected {want:?}, got {got:?}"))),
        }
    }
    let mut may_reset = closed;
    let mut last_error: Option<&str> = None;
    if closed {
        // The server has closed: nothing more is sent.
    } else if in_trial {
        t.trials += 1;
        match &case.in_trial {
            InTrial::Leave => {}
            InTrial::ClientDone => s
                .write_all(&good_frame(&body_of(&Message::ClientDone)))
                .map_err(fail)?,
            InTrial::Frame(b) => s.write_all(&good_frame(b)).map_err(fail)?,
        }
    } else {
        // Writes to a server that has just closed may fail: it has said why.
        let sent = match &case.ending {
            Ending::Close => Ok(()),
            Ending::BadMagic(b) => {
                // Unread bytes after the header make the close a reset.
                may_reset = b.len() > 10;
                last_error = Some(if b.len() >= 10 {
                    "bad magic"
                } else {
                    "reading"
                });
                s.write_all(b)
            }
            Ending::BadVersion(v, b) if !greeted && b.len() > PRE_AUTH_MAX_FRAME as usize => {
                // Its length is refused first, its bytes unread.
                last_error = Some("before authentication");
                may_reset = true;
                s.write_all(&frame(*v, b.len() as u32, b))
            }
            Ending::BadVersion(v, b) if !greeted && pre_auth >= PRE_AUTH_MAX_FRAMES => {
                // A whole frame past the handshake's allowance: counted
                // before its version is looked at.
                last_error = Some("frames before the handshake completed");
                s.write_all(&frame(*v, b.len() as u32, b))
            }
            Ending::BadVersion(v, b) => {
                last_error = Some("unsupported protocol version");
                s.write_all(&frame(*v, b.len() as u32, b))
            }
            Ending::TooLong(n) => {
                last_error = Some("exceeds the limit");
                s.write_all(&frame(VERSION, *n, b""))
            }
            Ending::Truncated(f, cut) => {
                let cut_at = cut.index(f.len() - 1) + 1;
                last_error = Some(
                    if !greeted && cut_at >= 10 && f.len() - 10 > PRE_AUTH_MAX_FRAME as usize {
                        may_reset = true;
                        "before authentication"
                    } else {
                        "reading"
                    },
                );
                s.write_all(&f[..cut.index(f.len() - 1) + 1])
            }
        };
        if case.ending.desyncs() {
            t.desyncs += 1;
        }
        // A server that closed after the header resets what followed.
        if let Err(e) = sent {
            if !may_reset {
                return Err(fail(format!("sending {:?}: {e}", case.ending)));
            }
        }
    }
    // Fails if the server has already reset the connection.
    let _ = s.shutdown(Shutdown::Write);
    // The server must close its side promptly, whatever state it was in,
    // well before a trial's cap would have ended the wait.
    let deadline = Instant::now() + LEAVE_WAIT;
    let mut replies = Vec::new();
    loop {
        if Instant::now() > deadline {
            return Err(fail(format!(
                "the server kept the connection open; replies {replies:?}"
            )));
        }
        match read_message(&mut s) {
            Ok(m @ (Message::Ready { .. } | Message::Report { .. } | Message::Error { .. })) => {
                replies.push(m)
            }
            Ok(other) => return Err(fail(format!("the server sent {other:?}"))),
            Err(FrameError::Closed) => break,
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::ConnectionReset => {
                if replied == 0 && replies.is_empty() && !may_reset && !in_trial {
                    return Ok(Served::Busy);
                }
                if !(may_reset || in_trial) {
                    return Err(fail(format!(
                        "the server reset the connection; replies {replies:?}"
                    )));
                }
                break;
            }
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(fail(format!("reading the server's last replies: {e}"))),
        }
    }
    if replied == 0 && replies.first().is_some_and(is_busy) {
        return Ok(Served::Busy);
    }
    if closed {
        if !replies.is_empty() {
            return Err(fail(format!("after closing the server sent {replies:?}")));
        }
    } else if !in_trial {
        match (last_error, replies.as_slice()) {
            (None, []) => {}
            (Some(_), []) if may_reset => {}
            (Some(w), [Message::Error { message }]) if message.contains(w) => {}
            _ => {
                return Err(fail(format!(
                    "after {:?} the server sent {replies:?}",
                    case.ending
                )))
            }
        }
    } else if replies.len() > 2 {
        return Err(fail(format!(
            "after an abandoned trial the server sent {replies:?}"
        )));
    }
    t.cases += 1;
    Ok(Served::Yes)
}

impl Ending {
    fn desyncs(&self) -> bool {
        !matches!(self, Ending::Close)
    }
}

/// How long a departed client's slot may stay taken: its thread ends
/// just after it closes the connection, but on a busy machine not at once.
const SLOT_RELEASE: Duration = Duration::from_secs(2);

/// Connects a normal client, retrying while the server is busy for at
/// most [`SLOT_RELEASE`].
fn connect(addr: SocketAddr) -> Result<Client, TestCaseError> {
    let give_up = Instant::now() + SLOT_RELEASE;
    loop {
        match Client::connect(addr, REPLY_WAIT) {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() < give_up && e.to_string().contains("busy") => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) => return Err(fail(format!("a normal client: {e}"))),
        }
    }
}

/// A normal client's trial: the server still serves after a case.
fn normal_trial(addr: SocketAddr) -> Result<(), TestCaseError> {
    let mut c = connect(addr)?;
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.duration_s = None;
    p.bytes = Some(64 << 10);
    p.write_size = 16 << 10;
    p.read_size = 16 << 10;
    let o = c
        .run_trial(&p, &Arc::new(AtomicBool::new(false)))
        .map_err(|e| fail(format!("a normal client's trial: {e}")))?;
    prop_assert_eq!(o.metrics["bytes"], (64 << 10) as f64);
    Ok(())
}

/// A field of /proc/self/status, as a number (kB for memory).
fn status(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

#[test]
fn arbitrary_sequences_never_hang_the_server_or_grow_it() {
    // 2000 cases of real trials, each held to 1.5 s and 2 s deadlines: one
    // timed or loading test at a time, for the whole campaign.
    let _timing = testkit::timing_lock();
    let limits = limits();
    let addr = Server::bind("127.0.0.1:0".parse().unwrap(), limits.clone())
        .unwrap()
        .spawn()
        .unwrap();
    let warm = Case {
        frames: vec![Text(hello()), Text(b"{".to_vec())],
        ending: Ending::TooLong(u32::MAX),
        in_trial: InTrial::Leave,
    };
    let mut tally = Tally::default();
    for _ in 0..20 {
        run_case(addr, &warm, &limits, &mut tally).unwrap();
        normal_trial(addr).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let (rss0, threads0) = (status("VmRSS"), status("Threads"));
    let started = Instant::now();

    let mut runner = TestRunner::new(config(2000));
    let tally = std::cell::RefCell::new(Tally::default());
    let result = runner.run(&case(), |c| {
        run_case(addr, &c, &limits, &mut tally.borrow_mut())?;
        normal_trial(addr)
    });
    let tally = tally.into_inner();
    let took = started.elapsed();
    if let Err(e) = result {
        panic!("{e}");
    }
    // Trials' threads end within a trial's cap once their clients have gone.
    let settle = Instant::now() + Duration::from_secs_f64(limits.max_trial_s + 1.0);
    while status("Threads") > threads0 && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (rss1, threads1) = (status("VmRSS"), status("Threads"));
    println!(
        "server campaign: {} cases ({} in-sync frames, {} trials started, {} desyncs) in {:.1} s; \
         RSS {} -> {} kB; threads {} -> {}",
        tally.cases,
        tally.frames,
        tally.trials,
        tally.desyncs,
        took.as_secs_f64(),
        rss0,
        rss1,
        threads0,
        threads1
    );
    assert!(threads1 <= threads0, "threads {threads0} -> {threads1}");
    assert!(rss1 < rss0 + 64 * 1024, "RSS {rss0} -> {rss1} kB");
    // Both slots are free: two clients at once are served.
    let _a = connect(addr).unwrap();
    let _b = connect(addr).unwrap();
}

mod server_fuzz_auth;

/// Issue 28: the handshake loop under crowds of partial, interleaved and
/// abandoned handshakes, and the tagged framing under tampering (see
/// `server_fuzz_auth`). `TCPLAB_FUZZ_HANDSHAKE_CASES` sets each
/// campaign's case count.
#[test]
fn crowded_handshakes_and_tampered_frames_never_get_through() {
    let _timing = testkit::timing_lock();
    let t0 = Instant::now();
    let (crowds, tags) = server_fuzz_auth::campaigns();
    println!(
        "handshake campaign: {} cases, {} connections, ~{} frames, {} replies; \
         tag campaign: {} cases, {} connections, {} frames, {} replies; 0 failures; {:.1} s",
        crowds.cases,
        crowds.connections,
        crowds.frames,
        crowds.replies,
        tags.cases,
        tags.connections,
        tags.frames,
        tags.replies,
        t0.elapsed().as_secs_f64()
    );
}
