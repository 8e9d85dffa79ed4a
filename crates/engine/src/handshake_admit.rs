//! Making room in the handshake loop ([`super`]) for a new connection:
//! taking it in, closing another as `room::choose` says, and keeping one
//! taken in past the bounds only if its first frame proved a key.

use super::{Conn, Gatekeeper, Stage, Transcript, FIRST_FRAME_GRACE};
use crate::pending::{Full, PendingOrder};
use crate::proto::Message;
use crate::room::{choose, Choice, Facts};
use crate::server_log::ServerEvent;
use mio::net::TcpStream;
use mio::{Interest, Poll, Token};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Takes in a new connection, closing the oldest of its kind if the
/// pending bounds are reached. Where none may be closed yet, it is taken
/// in provisionally: the refusal is returned, for [`keep_if_proven`] once
/// its first frame has been read.
#[allow(clippy::too_many_arguments)]
pub(super) fn admit(
    n: u64,
    mut stream: TcpStream,
    peer: SocketAddr,
    handshake: Duration,
    round: u64,
    conns: &mut HashMap<u64, Conn>,
    order: &mut PendingOrder,
    poll: &Poll,
    gk: &Gatekeeper,
) -> Option<String> {
    // Room is made as `room::choose` says.
    let now = Instant::now();
    let ip = peer.ip();
    let mut provisional = None;
    loop {
        let facts = |n: u64| {
            conns.get(&n).map_or(
                Facts {
                    aged: true,
                    silent: true,
                    read_once: true,
                },
                |c| Facts {
                    aged: c
                        .by
                        .checked_sub(handshake)
                        .is_none_or(|at| now >= at + FIRST_FRAME_GRACE),
                    silent: c.is_silent(),
                    read_once: c.round < round,
                },
            )
        };
        let (old, reason) = match choose(order, ip, &gk.pending, facts) {
            Choice::Admit => break,
            Choice::Close(n, why) => (n, why),
            Choice::CloseOverShare(n, key, full) => {
                close_over_share((n, full), key, conns, order, poll, gk);
                continue;
            }
            Choice::Refuse(why) => {
                provisional = Some(why);
                break;
            }
        };
        close_for_room(old, reason, conns, order, poll, gk);
    }
    let _ = stream.set_nodelay(true);
    if poll
        .registry()
        .register(&mut stream, Token(n as usize), Interest::READABLE)
        .is_err()
    {
        return None;
    }
    order.insert(n, peer.ip());
    conns.insert(
        n,
        Conn {
            stream,
            peer,
            by: Instant::now() + handshake,
            inbuf: Vec::new(),
            out: Vec::new(),
            stage: Stage::Hello,
            transcript: Transcript::default(),
            writable: true,
            frames: 0,
            proven: false,
            round,
        },
    );
    provisional
}

/// Tells handshake `old` why it is closed for room, logs it within the
/// log limits, and closes it.
fn close_for_room(
    old: u64,
    reason: String,
    conns: &mut HashMap<u64, Conn>,
    order: &mut PendingOrder,
    poll: &Poll,
    gk: &Gatekeeper,
) {
    if let Some(c) = conns.get_mut(&old) {
        c.reply(&Message::Error {
            message: reason.clone(),
        });
        gk.gate.emit_limited(
            c.peer,
            &ServerEvent::Refused {
                peer: c.peer,
                key: None,
                reason,
            },
        );
    }
    close(old, conns, order, poll);
}

/// Handshake `n`, taken in past the bounds with nothing to close, stays if
/// its first frame proved a key, and another is closed for it
/// ([`room::for_provisional`]); otherwise it is closed with `why` (a flood
/// reopening as fast as its connections close keeps every place young and
/// unread, and locked out the key holders of its address, 8 of 12).
pub(super) fn keep_if_proven(
    n: u64,
    why: String,
    conns: &mut HashMap<u64, Conn>,
    order: &mut PendingOrder,
    poll: &Poll,
    gk: &Gatekeeper,
) {
    let Some(ip) = conns.get(&n).map(|c| c.peer.ip()) else {
        return; // finished or closed already
    };
    let silent = |m: u64| conns.get(&m).is_none_or(Conn::is_silent);
    match crate::room::for_provisional(order, n, ip, &gk.pending, silent, why) {
        Choice::Admit => {}
        Choice::Close(old, reason) => close_for_room(old, reason, conns, order, poll, gk),
        Choice::CloseOverShare(old, key, full) => {
            close_over_share((old, full), key, conns, order, poll, gk)
        }
        Choice::Refuse(why) => close_for_room(n, why, conns, order, poll, gk),
    }
}

/// Closes handshake `old`, the oldest proven one of key `key`, which is
/// past the key's share of the reached bound `full`, telling it and the
/// log why.
fn close_over_share(
    (old, full): (u64, Full),
    key: usize,
    conns: &mut HashMap<u64, Conn>,
    order: &mut PendingOrder,
    poll: &Poll,
    gk: &Gatekeeper,
) {
    let name = gk.keys.as_ref().map(|r| r[key].1.name.clone());
    if let Some(c) = conns.get_mut(&old) {
        let reason = full.share_reason(&gk.pending, c.peer.ip(), name.as_deref().unwrap_or("?"));
        c.reply(&Message::Error {
            message: reason.clone(),
        });
        gk.gate.emit_key_holder(
            c.peer,
            &ServerEvent::Refused {
                peer: c.peer,
                key: name.clone(),
                reason,
            },
        );
    }
    close(old, conns, order, poll);
}

pub(super) fn close(n: u64, conns: &mut HashMap<u64, Conn>, order: &mut PendingOrder, poll: &Poll) {
    order.remove(n);
    if let Some(mut c) = conns.remove(&n) {
        let _ = poll.registry().deregister(&mut c.stream);
    }
}
