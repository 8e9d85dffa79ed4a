//! Every connection's handshake, on one thread: a `mio` event loop accepts
//! the control connections and runs `hello` (a server without keys) or
//! `auth_hello` / `auth_challenge` / `auth_proof` (with keys) on each,
//! non-blocking, within `--handshake-timeout`. Only a connection that
//! completes it takes one of `--max-clients`' slots and gets a thread of
//! its own; one that sends nothing costs a socket and a few hundred bytes,
//! never a thread or a slot.
//!
//! Before that, a connection may send at most [`PRE_AUTH_MAX_FRAMES`]
//! frames of at most [`PRE_AUTH_MAX_FRAME`] bytes each (so one connection
//! holds the loop for a bounded few reads, writes and HMACs), the
//! handshakes under way are bounded in total, per address and per IPv6
//! /64 ([`PendingLimits`]: a new one closes the oldest of its kind, one
//! whose `auth_hello` carried a valid early proof last), and what the
//! server logs about them is escaped and rate-limited per address and in
//! total ([`LogGate`]).

use crate::auth::{
    fresh_nonce, nonce_from_hex, to_hex, Nonce, CLIENT_LABEL, KEY_ID_HEX, SERVER_LABEL,
};
use crate::early_proof::{unix_now, EarlyProofs};
use crate::key_policy::KeyRing;
use crate::pending::{PendingLimits, PendingOrder};
use crate::proto::{
    encode_body, header, parse_body, parse_header, FrameError, Message, HEADER_BYTES,
    PRE_AUTH_MAX_FRAME, PRE_AUTH_MAX_FRAMES, VERSION,
};
use crate::server_log::{LogGate, ServerEvent};
use crate::server_state::{ClientSlot, Shared};
use crate::session::{Framing, SessionKeys, Side, Transcript};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "handshake_admit.rs"]
mod admit;
use admit::{admit, close, keep_if_proven};

const LISTENER: Token = Token(usize::MAX);
/// Reply bytes a connection that does not read may leave unsent.
const MAX_UNSENT: usize = 16 << 10;
/// How long a new connection has to send its first frame before it may be
/// closed to make room (within twice the pending bounds).
const FIRST_FRAME_GRACE: Duration = Duration::from_millis(100);
/// At most this many connections are taken in before the loop reads those
/// it has again (and at most half of `--max-pending`): a flood of arrivals
/// cannot keep a key holder's first frame unread, nor turn the whole table
/// over in one turn, so that past twice the bounds there is always a
/// flood's handshake that has had its turn to close.
const ACCEPTS_PER_ROUND: usize = 64;
/// The longest the loop sleeps (it checks for a stop this often).
const TICK: Duration = Duration::from_millis(250);

/// A client that completed its handshake: its connection (blocking again),
/// its framing from now on, its slot, and what it sent after the handshake.
pub(crate) struct Greeted {
    pub(crate) stream: std::net::TcpStream,
    pub(crate) peer: SocketAddr,
    pub(crate) client: String,
    /// The index in the key ring of the key it proved.
    pub(crate) key: Option<usize>,
    pub(crate) framing: Framing,
    pub(crate) slot: ClientSlot,
    /// Bytes it sent after its last handshake frame, to be read first.
    pub(crate) early: Vec<u8>,
    /// Reply bytes not yet sent, to be sent first.
    pub(crate) unsent: Vec<u8>,
}

/// What the loop needs to know.
pub(crate) struct Gatekeeper {
    pub(crate) shared: Arc<Shared>,
    pub(crate) keys: Option<Arc<KeyRing>>,
    pub(crate) name: String,
    pub(crate) gate: Arc<LogGate>,
    pub(crate) pending: PendingLimits,
    /// The early proofs taken, so each is taken once.
    pub(crate) early: std::sync::Mutex<EarlyProofs>,
}

/// Where a handshake is.
enum Stage {
    /// Waiting for `hello` or `auth_hello`.
    Hello,
    /// Challenged: waiting for `auth_proof`.
    Challenged {
        client: String,
        client_nonce: Nonce,
        server_nonce: Nonce,
        key: usize,
    },
}

/// One connection in its handshake.
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
    by: Instant,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    stage: Stage,
    transcript: Transcript,
    writable: bool,
    /// Whole frames received.
    frames: u32,
    /// Its `auth_hello` carried a valid early proof.
    proven: bool,
    /// The turn of the loop it was accepted in.
    round: u64,
}

/// What handling a connection's bytes came to.
enum Next {
    Wait,
    Close,
    Greet(String, Option<usize>, Framing),
}

/// Runs the loop on `listener` until `stopping`; each client that completes
/// its handshake goes to `greeted`.
pub(crate) fn run(
    listener: std::net::TcpListener,
    stopping: &AtomicBool,
    gk: &Gatekeeper,
    mut greeted: impl FnMut(Greeted),
) {
    let mut poll = match Poll::new() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("tcplab server: cannot start its event loop: {e}");
            return;
        }
    };
    let _ = listener.set_nonblocking(true);
    let mut listener = TcpListener::from_std(listener);
    if let Err(e) = poll
        .registry()
        .register(&mut listener, LISTENER, Interest::READABLE)
    {
        eprintln!("tcplab server: cannot watch its listener: {e}");
        return;
    }
    let mut events = Events::with_capacity(256);
    let mut conns: HashMap<u64, Conn> = HashMap::new();
    let mut order = PendingOrder::default();
    let mut next_id = 0u64;
    // Turns of the loop, each one poll.
    let mut round = 0u64;
    let mut accept_at: Option<Instant> = None;
    let mut flushed = Instant::now();
    let handshake = Duration::from_secs_f64(gk.shared.limits.handshake_s);
    loop {
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let now = Instant::now();
        let mut wait = TICK;
        if let Some(c) = order.oldest().and_then(|n| conns.get(&n)) {
            wait = wait.min(c.by.saturating_duration_since(now));
        }
        if let Some(at) = accept_at {
            wait = wait.min(at.saturating_duration_since(now));
        }
        round += 1;
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() != ErrorKind::Interrupted {
                std::thread::sleep(Duration::from_millis(50));
            }
            continue;
        }
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        let mut accept = accept_at.is_some_and(|at| Instant::now() >= at);
        for ev in events.iter() {
            if ev.token() == LISTENER {
                accept = true;
                continue;
            }
            let n = ev.token().0 as u64;
            let Some(c) = conns.get_mut(&n) else { continue };
            if ev.is_writable() {
                c.writable = true;
            }
            let next = c.pump(gk);
            settle(n, next, &mut conns, &mut order, &poll, gk, &mut greeted);
        }
        if accept {
            accept_at = None;
            let per_round = ACCEPTS_PER_ROUND.min(gk.pending.total / 2).max(1);
            for taken in 0.. {
                if taken == per_round {
                    // The rest wait for the next round, after the
                    // connections already in have been read.
                    accept_at = Some(Instant::now());
                    break;
                }
                match listener.accept() {
                    Ok((stream, peer)) => {
                        let n = next_id;
                        next_id += 1;
                        let provisional = admit(
                            n, stream, peer, handshake, round, &mut conns, &mut order, &poll, gk,
                        );
                        // Its first frame has usually arrived with the
                        // connection: read it now, so a key holder's early
                        // proof counts before the next one needs room.
                        if let Some(c) = conns.get_mut(&n) {
                            let next = c.pump(gk);
                            settle(n, next, &mut conns, &mut order, &poll, gk, &mut greeted);
                        }
                        if let Some(why) = provisional {
                            keep_if_proven(n, why, &mut conns, &mut order, &poll, gk);
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => {
                        // E.g. out of descriptors: try again shortly
                        // instead of spinning (or of waiting for an edge).
                        accept_at = Some(Instant::now() + Duration::from_millis(50));
                        break;
                    }
                }
            }
        }
        // Handshakes past their deadline, oldest first.
        let now = Instant::now();
        while let Some(n) = order.oldest() {
            match conns.get_mut(&n) {
                Some(c) if c.by <= now => {
                    let why = format!(
                        "closing: no hello within {} s (--handshake-timeout)",
                        gk.shared.limits.handshake_s
                    );
                    c.reply(&Message::Error { message: why });
                    close(n, &mut conns, &mut order, &poll);
                }
                Some(_) => break,
                None => order.remove(n),
            }
        }
        if flushed.elapsed() >= Duration::from_secs(1) {
            gk.gate.flush();
            flushed = Instant::now();
        }
    }
}

/// `m` as one untagged frame (empty if it cannot be encoded).
fn plain_frame(m: &Message) -> Vec<u8> {
    let Ok(payload) = encode_body(m) else {
        return Vec::new();
    };
    let mut frame = header(VERSION, payload.len()).to_vec();
    frame.extend_from_slice(&payload);
    frame
}

/// Acts on what a connection's bytes came to.
fn settle(
    n: u64,
    next: Next,
    conns: &mut HashMap<u64, Conn>,
    order: &mut PendingOrder,
    poll: &Poll,
    gk: &Gatekeeper,
    greeted: &mut impl FnMut(Greeted),
) {
    match next {
        Next::Wait => {
            let proven_key = conns.get(&n).and_then(|c| match c.stage {
                Stage::Challenged { key, .. } if c.proven => Some(key),
                _ => None,
            });
            if let Some(key) = proven_key {
                order.prove(n, key);
            }
            if let Some(c) = conns.get_mut(&n) {
                let want = if c.out.is_empty() {
                    Interest::READABLE
                } else {
                    Interest::READABLE | Interest::WRITABLE
                };
                let _ = poll
                    .registry()
                    .reregister(&mut c.stream, Token(n as usize), want);
            }
        }
        Next::Close => close(n, conns, order, poll),
        Next::Greet(client, key, framing) => {
            order.remove(n);
            let Some(mut c) = conns.remove(&n) else {
                return;
            };
            let _ = poll.registry().deregister(&mut c.stream);
            // Without keys there is nobody to keep slots for.
            let recent = match (key, &gk.keys) {
                (Some(k), Some(ring)) => gk.shared.note_key(&ring[k].1.name),
                _ => gk.keys.is_none(),
            };
            let name = key.zip(gk.keys.as_ref()).map(|(k, r)| r[k].1.name.as_str());
            let slot = match ClientSlot::take(&gk.shared, Some(c.peer.ip()), name, recent) {
                Ok(s) => s,
                Err(reason) => {
                    // Authenticated: told in a tagged frame.
                    let mut f = framing;
                    if let Ok(frame) = f.seal(&Message::Error {
                        message: reason.clone(),
                    }) {
                        c.out.extend_from_slice(&frame);
                        c.flush();
                    }
                    let event = ServerEvent::Refused {
                        peer: c.peer,
                        key: key.and_then(|k| gk.keys.as_ref().map(|r| r[k].1.name.clone())),
                        reason,
                    };
                    match key {
                        Some(_) => gk.gate.emit_key_holder(c.peer, &event),
                        None => gk.gate.emit_limited(c.peer, &event),
                    }
                    return;
                }
            };
            // SAFETY: the descriptor is mio's stream's, given up by
            // into_raw_fd and owned by the std stream from here on.
            let stream = unsafe { std::net::TcpStream::from_raw_fd(c.stream.into_raw_fd()) };
            if stream.set_nonblocking(false).is_err() {
                return;
            }
            greeted(Greeted {
                stream,
                peer: c.peer,
                client,
                key,
                framing,
                slot,
                early: c.inbuf,
                unsent: c.out,
            });
        }
    }
}

impl Conn {
    /// Whether it has sent no byte yet.
    fn is_silent(&self) -> bool {
        self.frames == 0 && self.inbuf.is_empty()
    }

    /// Reads what has arrived, acts on each whole frame, writes what is due.
    fn pump(&mut self, gk: &Gatekeeper) -> Next {
        if self.writable && !self.flush() {
            return Next::Close;
        }
        let mut buf = [0u8; 4096];
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    if !self.inbuf.is_empty() {
                        self.reply(&Message::Error {
                            message:
                                "reading control connection: the connection closed within a frame"
                                    .into(),
                        });
                    }
                    return Next::Close;
                }
                Ok(k) => {
                    self.inbuf.extend_from_slice(&buf[..k]);
                    match self.frames(gk) {
                        Next::Wait => {}
                        other => return other,
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Next::Wait,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Next::Close,
            }
        }
    }

    /// Acts on every whole frame in the input.
    fn frames(&mut self, gk: &Gatekeeper) -> Next {
        while self.inbuf.len() >= HEADER_BYTES {
            let head: [u8; HEADER_BYTES] = self.inbuf[..HEADER_BYTES].try_into().expect("10 bytes");
            let (version, len) = match parse_header(&head, PRE_AUTH_MAX_FRAME) {
                Ok(v) => v,
                Err(e) => {
                    self.refuse(gk, &e.to_string());
                    return Next::Close;
                }
            };
            let end = HEADER_BYTES + len as usize;
            if self.inbuf.len() < end {
                return Next::Wait;
            }
            let body: Vec<u8> = self.inbuf.drain(..end).skip(HEADER_BYTES).collect();
            self.frames += 1;
            if self.frames > PRE_AUTH_MAX_FRAMES {
                self.refuse(
                    gk,
                    &format!(
                        "closing: more than {PRE_AUTH_MAX_FRAMES} frames before the handshake completed"
                    ),
                );
                return Next::Close;
            }
            if version != VERSION {
                self.reply(&Message::Error {
                    message: FrameError::BadVersion(version).to_string(),
                });
                return Next::Close;
            }
            let next = match parse_body(&body) {
                Ok(m) => self.message(gk, m, &body),
                Err(e) => {
                    // Answered as after the handshake; what a client that
                    // does not read leaves unsent is bounded below.
                    self.reply(&Message::Error {
                        message: e.to_string(),
                    });
                    Next::Wait
                }
            };
            if !matches!(next, Next::Wait) {
                return next;
            }
            if self.out.len() > MAX_UNSENT {
                return Next::Close;
            }
        }
        Next::Wait
    }

    /// Acts on one handshake message.
    fn message(&mut self, gk: &Gatekeeper, m: Message, body: &[u8]) -> Next {
        let keyed = gk.keys.is_some();
        match (m, &self.stage) {
            (Message::Hello { .. }, _) if keyed => {
                self.refuse(
                    gk,
                    "authentication required: this server has a key (bench --key FILE)",
                );
                Next::Close
            }
            (Message::Hello { client }, _) => Next::Greet(client, None, Framing::plain()),
            (
                Message::AuthHello {
                    client,
                    nonce,
                    key_id,
                    early,
                },
                _,
            ) => self.challenge(gk, client, &nonce, key_id.as_deref(), early, body),
            (Message::AuthProof { proof }, Stage::Challenged { .. }) => {
                self.proved(gk, &proof, body)
            }
            (Message::AuthProof { .. }, Stage::Hello) => {
                self.refuse(gk, "auth_proof before auth_hello");
                Next::Close
            }
            (Message::Error { .. }, Stage::Challenged { .. }) => {
                // The client found our proof wrong and said so.
                self.log(gk, "authentication failed: the client's key differs");
                Next::Close
            }
            (Message::Setup { .. } | Message::Check { .. }, _) => {
                self.reply(&Message::Error {
                    message: "expected hello before setup".into(),
                });
                Next::Wait
            }
            (other, _) => {
                self.reply(&Message::Error {
                    message: format!("unexpected message {:?} outside a trial", other.kind()),
                });
                Next::Wait
            }
        }
    }

    /// Answers an `auth_hello` with this server's nonce and proof.
    fn challenge(
        &mut self,
        gk: &Gatekeeper,
        client: String,
        nonce: &str,
        key_id: Option<&str>,
        early: Option<crate::early_proof::EarlyProof>,
        body: &[u8],
    ) -> Next {
        let key = match key_named(gk.keys.as_deref(), key_id) {
            Ok(k) => k,
            Err(why) => {
                self.refuse(gk, &why);
                return Next::Close;
            }
        };
        let ring = gk.keys.as_ref().expect("a key was found");
        let Some(client_nonce) = nonce_from_hex(nonce) else {
            self.refuse(gk, "auth_hello's nonce is not 32 bytes of hex");
            return Next::Close;
        };
        let server_nonce = match fresh_nonce() {
            Ok(n) => n,
            Err(e) => {
                self.refuse(gk, &e.to_string());
                return Next::Close;
            }
        };
        let k = &ring[key].0;
        // A wrong, stale or replayed early proof only leaves the
        // handshake unexempt: the challenge-response decides.
        // One early proof per connection is looked at.
        if let Some(e) = early.filter(|_| !self.proven) {
            let mut taken = gk.early.lock().unwrap_or_else(|p| p.into_inner());
            self.proven = taken
                .take(key, k, &client_nonce, &e, unix_now(), self.peer.ip())
                .is_ok();
        }
        let challenge = Message::AuthChallenge {
            server: gk.name.clone(),
            nonce: to_hex(&server_nonce),
            proof: to_hex(&k.proof(SERVER_LABEL, &client_nonce, &server_nonce)),
        };
        let Ok(payload) = encode_body(&challenge) else {
            return Next::Close;
        };
        // A second auth_hello starts the transcript again.
        self.transcript = Transcript::default();
        self.transcript.add(body);
        self.transcript.add(&payload);
        self.out.extend_from_slice(&header(VERSION, payload.len()));
        self.out.extend_from_slice(&payload);
        self.stage = Stage::Challenged {
            client,
            client_nonce,
            server_nonce,
            key,
        };
        if self.flush() {
            Next::Wait
        } else {
            Next::Close
        }
    }

    /// Checks an `auth_proof`: the client is greeted, its frames tagged from
    /// now on, or refused.
    fn proved(&mut self, gk: &Gatekeeper, proof: &str, body: &[u8]) -> Next {
        let Stage::Challenged {
            client,
            client_nonce,
            server_nonce,
            key,
        } = std::mem::replace(&mut self.stage, Stage::Hello)
        else {
            return Next::Close;
        };
        let ring = gk.keys.as_ref().expect("challenged under a key");
        let k = &ring[key].0;
        let proof = crate::auth::from_hex(proof).unwrap_or_default();
        if !k.verify(CLIENT_LABEL, &client_nonce, &server_nonce, &proof) {
            self.refuse(gk, "authentication failed: the client's key differs");
            return Next::Close;
        }
        self.transcript.add(body);
        let keys = SessionKeys::derive(k, &client_nonce, &server_nonce, &self.transcript.hash());
        Next::Greet(client, Some(key), Framing::sealed(&keys, Side::Server))
    }

    /// Tells the client why it is not served, logs it (rate-limited), and
    /// leaves the closing to the caller.
    fn refuse(&mut self, gk: &Gatekeeper, reason: &str) {
        self.log(gk, reason);
        self.reply(&Message::Error {
            message: reason.to_string(),
        });
    }

    fn log(&self, gk: &Gatekeeper, reason: &str) {
        gk.gate.emit_limited(
            self.peer,
            &ServerEvent::Refused {
                peer: self.peer,
                key: None,
                reason: reason.to_string(),
            },
        );
    }

    /// Queues a plain frame and writes what it can (best effort: a reply
    /// before closing may be lost to a client that does not read).
    fn reply(&mut self, m: &Message) {
        self.out.extend_from_slice(&plain_frame(m));
        self.flush();
    }

    /// Writes what is queued; false if the connection failed.
    fn flush(&mut self) -> bool {
        while !self.out.is_empty() {
            match self.stream.write(&self.out) {
                Ok(0) => return false,
                Ok(k) => {
                    self.out.drain(..k);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.writable = false;
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        true
    }
}

/// The index of the key the client named by `key_id` (or the only key, for
/// a client that names none), or why there is none.
fn key_named(keys: Option<&KeyRing>, key_id: Option<&str>) -> Result<usize, String> {
    let keys = keys.ok_or_else(|| {
        "authentication not set up: this server runs without --key (connect without --key)"
            .to_string()
    })?;
    let found = match key_id {
        Some(id) if id.len() != KEY_ID_HEX || !id.bytes().all(|b| b.is_ascii_hexdigit()) => {
            return Err(format!(
                "authentication failed: the key id is not {KEY_ID_HEX} hex digits"
            ))
        }
        Some(id) => keys.iter().position(|(k, _)| k.id() == id),
        None if keys.len() == 1 => Some(0),
        None => {
            return Err(
                "authentication failed: this server has several keys and the client named none (a tcplab without key ids)"
                    .into(),
            )
        }
    };
    let i = found.ok_or_else(|| {
        format!(
            "authentication failed: the client's key differs (this server has no key with id {})",
            key_id.unwrap_or_default()
        )
    })?;
    if keys[i].0.is_zero() {
        return Err(format!(
            "authentication refused: the server's key {} is all zeros, which anyone can guess (make one with tcplab key new)",
            keys[i].1.name
        ));
    }
    Ok(i)
}
