//! Admitting a trial's TCP data connections: only a connection from the
//! control connection's address whose first bytes are the trial's token is
//! served. Connections waiting for their token are watched together (one
//! `poll(2)`), so a stranger that connects first and sends nothing delays
//! nobody: the trial's own connection is admitted the moment its token
//! arrives. A stranger's connection is closed at once when its bytes differ
//! from the token, or after [`TOKEN_WAIT`] when it sends none.
//!
//! Two bounds keep a trial's descriptors to what it is charged
//! ([`crate::trial_cost`]): at most [`MAX_PENDING`] connections wait for
//! their token at once, and connections with the whole token are held only
//! while the trial has flows left to give them (a trial's owner cannot park
//! more). When the places are taken, the oldest waiting connection that
//! has had [`GRACE`] is looked at a last time and admitted or closed; when
//! none has, the newcomer is looked at once and kept (its token whole),
//! closed (other bytes), or watched for [`PROBATION`] among at most
//! [`PROBATION_MOST`]. When those are all watched, the oldest makes room
//! for the next once it is [`PROBATION_AGE`] old, and until then nothing
//! more is accepted: a flood waits in the listen queue, not in the gate,
//! so a connection whose token is a moment late is never closed for a
//! newer one, however fast they come, and a flood drains at
//! [`PROBATION_MOST`] per [`PROBATION_AGE`] (3,200 a second). A keyed trial's
//! listener defers accept until the first bytes come (TCP_DEFER_ACCEPT),
//! so its own connections arrive with their token, except those a
//! syncookie completed (past the SYN queue), which probation covers. A
//! trial whose connection never comes fails with the count of connections
//! refused.

use super::{tokens_match, DataWaits};
use crate::auth::KEY_BYTES;
use crate::cancel::Canceller;
use socket2::{SockAddr, Socket};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an accepted connection has to send the trial's token (at most;
/// `DataWaits::first` if shorter).
pub const TOKEN_WAIT: Duration = Duration::from_secs(5);
/// Accepted connections that may wait for their token at once, for the
/// whole trial (all its accepting threads together): counted in the
/// trial's descriptors ([`crate::trial_cost`]).
pub const MAX_PENDING: usize = 16;
/// How long a waiting connection keeps its place against newer ones: a
/// client's token follows its handshake's last ACK, late only by the
/// client's scheduling (many flows connecting at once on a loaded host).
pub const GRACE: Duration = Duration::from_millis(200);
/// Past the waiting places, how long a newcomer without its token yet is
/// watched before it is closed: a syncookie completes a connection without
/// TCP_DEFER_ACCEPT's wait, so the trial's own may be accepted a moment
/// before its token arrives (a flood of silent connections from the
/// client's address, past the SYN queue, had the newcomer looked at once
/// and closed with its token unread: tcp-crr and http aborted, 6 of 6).
pub const PROBATION: Duration = Duration::from_millis(50);
/// Newcomers watched on [`PROBATION`] at once; past it, the oldest is
/// looked at a last time to make room once it is [`PROBATION_AGE`] old.
pub const PROBATION_MOST: usize = 64;
/// The least time a newcomer on probation is watched before a newer one
/// may take its place: the gate stops accepting until the oldest is this
/// old. Before, the oldest made room at once, so a flood of 20,000 silent
/// connections a second from the client's address gave each 3 ms, and a
/// trial's own connection whose token came later (its client slowed by
/// the flood) was closed: tcp-crr aborted 3 of 3.
pub const PROBATION_AGE: Duration = Duration::from_millis(20);
/// The most connections a trial's data listener holds besides its flows:
/// the waiting places and the newcomers on probation (counted in the
/// trial's descriptors, [`crate::trial_cost`]).
pub const HELD_MOST: usize = MAX_PENDING + PROBATION_MOST;
/// The longest one `poll(2)` sleeps, so threads sharing a gate take up
/// connections another thread accepted.
const POLL_SLICE: Duration = Duration::from_millis(20);

/// One place held while a connection waits (among the trial's
/// [`MAX_PENDING`]) or holds the whole token unclaimed (among the flows
/// left): dropped with the connection.
struct Place(Arc<AtomicUsize>);

impl Place {
    fn take(count: &Arc<AtomicUsize>) -> Place {
        count.fetch_add(1, Ordering::Relaxed);
        Place(count.clone())
    }

    /// A place if fewer than `most` are held.
    fn take_below(count: &Arc<AtomicUsize>, most: usize) -> Option<Place> {
        count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < most).then_some(n + 1)
            })
            .ok()
            .map(|_| Place(count.clone()))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How many connections a trial's accepting threads take in all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flows {
    /// The trial's flows (`--parallel`), one accepting thread each for
    /// crr and http.
    pub count: usize,
    /// Whether each flow takes a connection again and again (crr, http)
    /// rather than once (stream, rr).
    pub repeat: bool,
}

/// The oldest connection in `mine` still waiting for its token, in a
/// waiting place (`probation` false) or on probation.
fn oldest_waiting(mine: &[Pending], probation: bool) -> Option<usize> {
    (0..mine.len())
        .filter(|&i| mine[i].len < KEY_BYTES && mine[i].probation == probation)
        .min_by_key(|&i| mine[i].since)
}

/// An accepted connection whose token has not all arrived.
struct Pending {
    /// A waiting place (or one on probation) until the token is whole,
    /// then an unclaimed one.
    place: Place,
    /// Whether it came past the waiting places and is on [`PROBATION`].
    probation: bool,
    sock: Socket,
    addr: SockAddr,
    since: Instant,
    got: [u8; KEY_BYTES],
    len: usize,
}

/// What reading a pending connection's token gave.
enum Read {
    /// The whole token, and it is the trial's.
    Admit,
    /// Not yet all of it.
    Wait,
    /// Other bytes, an end of stream or an error.
    Refuse,
}

impl Pending {
    /// How long it may wait for its token: [`PROBATION`] on probation.
    fn patience(&self, token_wait: Duration) -> Duration {
        if self.probation {
            PROBATION.min(token_wait)
        } else {
            token_wait
        }
    }

    /// Reads what has arrived of the token without blocking.
    fn read(&mut self, token: &[u8; KEY_BYTES]) -> Read {
        if self.len == KEY_BYTES {
            return Read::Admit; // checked when it was complete
        }
        loop {
            // SAFETY: the buffer's tail is writable for its length.
            let n = unsafe {
                libc::recv(
                    self.sock.as_raw_fd(),
                    self.got[self.len..].as_mut_ptr().cast(),
                    KEY_BYTES - self.len,
                    libc::MSG_DONTWAIT,
                )
            };
            match n {
                0 => return Read::Refuse,
                n if n < 0 => {
                    return match io::Error::last_os_error().raw_os_error() {
                        Some(libc::EAGAIN) => Read::Wait,
                        Some(libc::EINTR) => continue,
                        _ => Read::Refuse,
                    }
                }
                n => {
                    let end = self.len + n as usize;
                    // Wrong bytes are refused as soon as they come.
                    if self.got[self.len..end] != token[self.len..end] {
                        return Read::Refuse;
                    }
                    self.len = end;
                    if self.len == KEY_BYTES {
                        return if tokens_match(token, &self.got) {
                            Read::Admit
                        } else {
                            Read::Refuse
                        };
                    }
                }
            }
        }
    }
}

/// The door of one trial's data listener, shared by the threads that
/// accept on it.
pub(crate) struct Gate<'a> {
    listener: &'a Socket,
    waits: &'a DataWaits,
    cancel: &'a Canceller,
    flows: Flows,
    /// Connections accepted by a thread that returned with another one.
    pending: Mutex<Vec<Pending>>,
    /// Connections waiting for their token, in every thread.
    waiting: Arc<AtomicUsize>,
    /// Newcomers past the waiting places, on probation.
    on_probation: Arc<AtomicUsize>,
    /// Connections with the whole token not yet handed to a flow.
    unclaimed: Arc<AtomicUsize>,
    /// Connections handed to a flow (for flows taken once).
    claimed: AtomicUsize,
    refused: AtomicU64,
}

impl<'a> Gate<'a> {
    /// A gate on `listener` (non-blocking) for the trial's `waits` and
    /// `flows`.
    pub(crate) fn new(
        listener: &'a Socket,
        waits: &'a DataWaits,
        cancel: &'a Canceller,
        flows: Flows,
    ) -> Self {
        Gate {
            listener,
            waits,
            cancel,
            flows,
            pending: Mutex::new(Vec::new()),
            waiting: Arc::default(),
            on_probation: Arc::default(),
            unclaimed: Arc::default(),
            claimed: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Connections refused so far (another address, no or another token,
    /// or more with the token than the trial has flows).
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn refuse(&self, p: Pending) {
        drop(p);
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// How many connections with the whole token may wait unclaimed: the
    /// flows left (or every flow's, for flows that take them again).
    fn unclaimed_most(&self) -> usize {
        match self.flows.repeat {
            true => self.flows.count,
            false => self
                .flows
                .count
                .saturating_sub(self.claimed.load(Ordering::Relaxed)),
        }
    }

    /// Whether a connection whose token has just become whole has a flow
    /// to go to, beside those kept whole.
    fn flow_left_for_new(&self) -> bool {
        self.flows.repeat
            || self.claimed.load(Ordering::Relaxed) + self.unclaimed.load(Ordering::Relaxed)
                < self.flows.count
    }

    /// Keeps `p`, whose token is whole, for a later flow, or closes it when
    /// no flow is left for it.
    fn keep_whole(&self, mine: &mut Vec<Pending>, mut p: Pending) {
        match Place::take_below(&self.unclaimed, self.unclaimed_most()) {
            Some(place) => {
                p.place = place;
                mine.push(p);
            }
            None => self.refuse(p),
        }
    }

    /// Waits up to `waits.first` for the next admitted connection; its
    /// read timeout is then `waits.first`. Fails when the listener is shut
    /// down (the trial ends), on a cancel, or when nothing was admitted in
    /// time (the message says how many were refused).
    pub(crate) fn admit(&self) -> io::Result<(Socket, SockAddr)> {
        let deadline = Instant::now() + self.waits.first;
        let token_wait = TOKEN_WAIT.min(self.waits.first);
        let mut mine: Vec<Pending> = Vec::new();
        let admitted = self.admit_into(&mut mine, deadline, token_wait);
        // What this thread still holds, another call takes up.
        if !mine.is_empty() {
            self.pending.lock().expect("gate lock").append(&mut mine);
        }
        let (s, addr) = admitted?;
        s.set_read_timeout(Some(self.waits.first))?;
        Ok((s, addr))
    }

    fn admit_into(
        &self,
        mine: &mut Vec<Pending>,
        deadline: Instant,
        token_wait: Duration,
    ) -> io::Result<(Socket, SockAddr)> {
        loop {
            mine.append(&mut self.pending.lock().expect("gate lock"));
            if self.cancel.is_cancelled() {
                return Err(io::Error::other("cancelled"));
            }
            let Some(token) = self.waits.token.as_ref() else {
                // No token (tcplab's own stack's pairing): the first
                // connection from the right address is the trial's.
                return self.accept_one(deadline);
            };
            // Whoever sent the whole token is in; wrong bytes are out.
            let mut i = 0;
            while i < mine.len() {
                // One kept whole was kept within the flows left.
                let kept = mine[i].len == KEY_BYTES;
                match mine[i].read(token) {
                    Read::Admit if kept || self.flow_left_for_new() => {
                        let p = mine.swap_remove(i);
                        self.claimed.fetch_add(1, Ordering::Relaxed);
                        return Ok((p.sock, p.addr));
                    }
                    Read::Wait if mine[i].since.elapsed() < mine[i].patience(token_wait) => i += 1,
                    _ => self.refuse(mine.swap_remove(i)),
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out());
            }
            // While the gate has stopped accepting, the listener is left
            // out of the poll (a negative descriptor is ignored).
            let paused = self.paused_until(mine).filter(|&t| t > now);
            let listener = match paused {
                Some(_) => -1,
                None => self.listener.as_raw_fd(),
            };
            let mut fds: Vec<libc::pollfd> = std::iter::once(listener)
                .chain(mine.iter().map(|p| p.sock.as_raw_fd()))
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let until = deadline.min(now + POLL_SLICE);
            let wait = paused.map_or(until, |t| until.min(t)) - now;
            // SAFETY: fds is a live array of its stated length.
            let rc = unsafe {
                libc::poll(
                    fds.as_mut_ptr(),
                    fds.len() as _,
                    wait.as_millis() as i32 + 1,
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            if fds[0].revents != 0 || paused.is_some() {
                self.accept_pending(mine, token)?;
            }
        }
    }

    /// Accepts every connection queued on the listener, at the speed of
    /// the calls: from other addresses they are closed at once; when the
    /// places are taken, the oldest waiting connection past its [`GRACE`]
    /// is looked at a last time and kept (its token whole) or closed; and
    /// when every place is held by one still in its grace, the newcomer is
    /// looked at once and kept (its token whole), closed (other bytes) or
    /// put on probation; with probation full too, nothing more is accepted
    /// until its oldest is [`PROBATION_AGE`] old. A keyed trial's listener
    /// defers accept until the first bytes come, so its own connections
    /// arrive with their token, and a flood of silent ones (past the SYN
    /// queue, by syncookies, or after the deferral) is drained at
    /// [`PROBATION_MOST`] per [`PROBATION_AGE`], not held ahead of them.
    fn accept_pending(&self, mine: &mut Vec<Pending>, token: &[u8; KEY_BYTES]) -> io::Result<()> {
        loop {
            while self.waiting.load(Ordering::Relaxed) >= MAX_PENDING {
                match oldest_waiting(mine, false) {
                    Some(i) if mine[i].since.elapsed() >= GRACE => self.last_look(mine, i, token),
                    _ => break,
                }
            }
            if self.waiting.load(Ordering::Relaxed) >= MAX_PENDING
                && !self.probation_room(mine, token)
            {
                return Ok(());
            }
            let (sock, addr) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.raw_os_error() == Some(libc::ECONNABORTED) => continue,
                Err(e) => return Err(e),
            };
            if !crate::sockopt::is_from(&addr, self.waits.from) {
                self.refused.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let mut p = Pending {
                place: Place::take(&self.waiting),
                probation: false,
                sock,
                addr,
                since: Instant::now(),
                got: [0; KEY_BYTES],
                len: 0,
            };
            match p.read(token) {
                // The whole token on arrival, as a deferred accept brings
                // the trial's own: its sender knows the trial's secret.
                Read::Admit => {
                    self.keep_whole(mine, p);
                    continue;
                }
                Read::Refuse => {
                    self.refuse(p);
                    continue;
                }
                Read::Wait => {}
            }
            // Only one still waiting for its token is looked up (10.6 µs
            // each here: too much for every connection of a crr trial).
            if !self.owned_by_client(&p.sock, &p.addr) {
                self.refuse(p);
                continue;
            }
            if self.waiting.load(Ordering::Relaxed) > MAX_PENDING {
                self.put_on_probation(mine, p);
                continue;
            }
            mine.push(p);
        }
    }

    /// Whether the other end of `sock` (from `addr`) belongs to the
    /// trial's client: its owner is the control connection's, where that
    /// is known ([`DataWaits::owner`]).
    fn owned_by_client(&self, sock: &Socket, addr: &SockAddr) -> bool {
        let Some(uid) = self.waits.owner else {
            return true;
        };
        let local = sock.local_addr().ok().and_then(|a| a.as_socket());
        match (local, addr.as_socket()) {
            (Some(local), Some(remote)) => {
                crate::peer_owner::peer_owner(local, remote).is_ok_and(|owner| owner == uid)
            }
            _ => false,
        }
    }

    /// Looks at `mine[i]`, a connection whose time is up, a last time: it
    /// is kept (its token whole) or closed.
    fn last_look(&self, mine: &mut Vec<Pending>, i: usize, token: &[u8; KEY_BYTES]) {
        let mut last = mine.swap_remove(i);
        match last.read(token) {
            Read::Admit => self.keep_whole(mine, last),
            _ => self.refuse(last),
        }
    }

    /// Whether a newcomer could go on probation: a place is free, or this
    /// thread's oldest on probation is [`PROBATION_AGE`] old and is looked
    /// at a last time to make one.
    fn probation_room(&self, mine: &mut Vec<Pending>, token: &[u8; KEY_BYTES]) -> bool {
        if self.on_probation.load(Ordering::Relaxed) < PROBATION_MOST {
            return true;
        }
        match oldest_waiting(mine, true) {
            Some(i) if mine[i].since.elapsed() >= PROBATION_AGE => {
                self.last_look(mine, i, token);
                true
            }
            _ => false,
        }
    }

    /// When the gate, having stopped accepting (every waiting place and
    /// every place on probation held), may make room again: when this
    /// thread's oldest waiting connection has had its [`GRACE`] or its
    /// oldest on probation is [`PROBATION_AGE`] old; after a poll slice
    /// where other threads hold them all. `None` while it accepts.
    fn paused_until(&self, mine: &[Pending]) -> Option<Instant> {
        if self.waiting.load(Ordering::Relaxed) < MAX_PENDING
            || self.on_probation.load(Ordering::Relaxed) < PROBATION_MOST
        {
            return None;
        }
        let waiting = oldest_waiting(mine, false).map(|i| mine[i].since + GRACE);
        let probation = oldest_waiting(mine, true).map(|i| mine[i].since + PROBATION_AGE);
        waiting
            .into_iter()
            .chain(probation)
            .min()
            .or_else(|| Some(Instant::now() + POLL_SLICE))
    }

    /// Watches `p`, a newcomer past the waiting places without its token
    /// yet, for [`PROBATION`] (closed if another thread took the last
    /// place on probation since [`Self::probation_room`]).
    fn put_on_probation(&self, mine: &mut Vec<Pending>, mut p: Pending) {
        let Some(place) = Place::take_below(&self.on_probation, PROBATION_MOST) else {
            return self.refuse(p);
        };
        p.place = place;
        p.probation = true;
        mine.push(p);
    }

    /// The next connection from the right address, for a trial without a
    /// token.
    fn accept_one(&self, deadline: Instant) -> io::Result<(Socket, SockAddr)> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out());
            }
            let mut fd = libc::pollfd {
                fd: self.listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let wait = deadline - now;
            // SAFETY: one live pollfd.
            unsafe { libc::poll(&mut fd, 1, wait.as_millis() as i32 + 1) };
            match self.listener.accept() {
                Ok((s, a)) if crate::sockopt::is_from(&a, self.waits.from) => return Ok((s, a)),
                Ok(_) => {
                    self.refused.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            if self.cancel.is_cancelled() {
                return Err(io::Error::other("cancelled"));
            }
        }
    }

    fn timed_out(&self) -> io::Error {
        let refused = match self.refused() {
            0 => String::new(),
            n => format!(
                "; {n} connections from another address or without the trial's token were refused"
            ),
        };
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no data connection with the trial's token within {} s{refused}",
                self.waits.first.as_secs_f64()
            ),
        )
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
