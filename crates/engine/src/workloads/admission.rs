//! Admitting a trial's TCP data connections: only a connection from the
//! control connection's address whose first bytes are the trial's token is
//! served. Connections waiting for their token are watched together (one
//! `poll(2)`), so a stranger that connects first and sends nothing delays
//! nobody: the trial's own connection is admitted the moment its token
//! arrives. A stranger's connection is closed at once when its bytes differ
//! from the token, or after [`TOKEN_WAIT`] when it sends none; at most
//! [`MAX_PENDING`] wait at a time (the oldest goes first, after a last look
//! for its token). A trial whose connection never comes fails with the
//! count of connections refused.

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
/// The longest one `poll(2)` sleeps, so threads sharing a gate take up
/// connections another thread accepted.
const POLL_SLICE: Duration = Duration::from_millis(20);

/// One place among the trial's [`MAX_PENDING`], held while a connection
/// waits for its token.
struct WaitSlot(Arc<AtomicUsize>);

impl WaitSlot {
    fn take(waiting: &Arc<AtomicUsize>) -> WaitSlot {
        waiting.fetch_add(1, Ordering::Relaxed);
        WaitSlot(waiting.clone())
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An accepted connection whose token has not all arrived.
struct Pending {
    _slot: WaitSlot,
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
    /// Connections accepted by a thread that returned with another one.
    pending: Mutex<Vec<Pending>>,
    /// Connections waiting for their token, in every thread.
    waiting: Arc<AtomicUsize>,
    refused: AtomicU64,
}

impl<'a> Gate<'a> {
    /// A gate on `listener` (non-blocking) for the trial's `waits`.
    pub(crate) fn new(listener: &'a Socket, waits: &'a DataWaits, cancel: &'a Canceller) -> Self {
        Gate {
            listener,
            waits,
            cancel,
            pending: Mutex::new(Vec::new()),
            waiting: Arc::default(),
            refused: AtomicU64::new(0),
        }
    }

    /// Connections refused so far (another address, no or another token).
    pub(crate) fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn refuse(&self, p: Pending) {
        drop(p);
        self.refused.fetch_add(1, Ordering::Relaxed);
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
                match mine[i].read(token) {
                    Read::Admit => {
                        let p = mine.swap_remove(i);
                        return Ok((p.sock, p.addr));
                    }
                    Read::Wait if mine[i].since.elapsed() < token_wait => i += 1,
                    _ => self.refuse(mine.swap_remove(i)),
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out());
            }
            let mut fds: Vec<libc::pollfd> = std::iter::once(self.listener.as_raw_fd())
                .chain(mine.iter().map(|p| p.sock.as_raw_fd()))
                .map(|fd| libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let wait = deadline.min(now + POLL_SLICE) - now;
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
            if fds[0].revents != 0 {
                self.accept_pending(mine, token)?;
            }
        }
    }

    /// Accepts every connection queued on the listener into `mine`;
    /// connections from other addresses are closed at once, and past
    /// [`MAX_PENDING`] the oldest waiting one is looked at a last time and
    /// admitted or closed.
    fn accept_pending(&self, mine: &mut Vec<Pending>, token: &[u8; KEY_BYTES]) -> io::Result<()> {
        loop {
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
            let p = Pending {
                _slot: WaitSlot::take(&self.waiting),
                sock,
                addr,
                since: Instant::now(),
                got: [0; KEY_BYTES],
                len: 0,
            };
            if self.waiting.load(Ordering::Relaxed) > MAX_PENDING {
                // The trial's places are taken: this thread's oldest (or,
                // holding none, the new one) is looked at a last time and
                // admitted or closed.
                let oldest = (0..mine.len()).min_by_key(|&i| mine[i].since);
                let mut last = match oldest {
                    Some(i) => std::mem::replace(&mut mine[i], p),
                    None => p,
                };
                match last.read(token) {
                    // Kept: it is admitted on the next round.
                    Read::Admit => mine.push(Pending {
                        len: KEY_BYTES,
                        ..last
                    }),
                    _ => self.refuse(last),
                }
                continue;
            }
            mine.push(p);
        }
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
