//! The bulk sender's data path: one blocking system call per write, through
//! the API the trial chose (write, sendmsg, sendfile or MSG_ZEROCOPY).

use crate::pattern::Pattern;
use crate::report::ZeroCopyStats;
use crate::sockopt::setsockopt_int;
use record::Api;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Sends pattern windows on one socket through one API.
pub struct ChunkSender<'a> {
    fd: RawFd,
    api: Api,
    flags: libc::c_int,
    pattern: &'a Pattern,
    memfd: Option<OwnedFd>,
    zc: Option<ZeroCopy>,
}

impl<'a> ChunkSender<'a> {
    /// Prepares sending on `fd` (a connected TCP socket) with `api`; `cork`
    /// adds MSG_MORE (TCP_CORK for sendfile).
    pub fn new(
        fd: RawFd,
        api: Api,
        cork: bool,
        pattern: &'a Pattern,
    ) -> io::Result<ChunkSender<'a>> {
        let mut flags = 0;
        if cork {
            flags |= libc::MSG_MORE;
        }
        let mut memfd = None;
        let mut zc = None;
        match api {
            Api::Sendfile => {
                memfd = Some(pattern_memfd(pattern)?);
                if cork {
                    setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_CORK, 1)?;
                }
            }
            Api::Zerocopy => {
                setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_ZEROCOPY, 1)?;
                flags |= libc::MSG_ZEROCOPY;
                zc = Some(ZeroCopy::default());
            }
            Api::Write | Api::Sendmsg => {}
        }
        if api == Api::Write && cork {
            // write(2) has no flags; MSG_MORE needs send(2), the same path.
        }
        Ok(ChunkSender {
            fd,
            api,
            flags,
            pattern,
            memfd,
            zc,
        })
    }

    /// Sends up to `len` bytes of the pattern at stream offset `offset` with
    /// one system call; returns the bytes the kernel took.
    #[inline]
    pub fn send(&mut self, offset: u64, len: usize) -> io::Result<usize> {
        loop {
            let rc = self.send_once(offset, len);
            if rc >= 0 {
                if let Some(zc) = &mut self.zc {
                    zc.sends += 1;
                    if zc.sends % 64 == 0 {
                        zc.drain(self.fd, false)?;
                    }
                }
                return Ok(rc as usize);
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ENOBUFS) if self.zc.is_some() => {
                    // Too many zero-copy sends in flight: wait for completions.
                    self.zc.as_mut().expect("zc").drain(self.fd, true)?;
                }
                _ => return Err(err),
            }
        }
    }

    #[inline]
    fn send_once(&self, offset: u64, len: usize) -> isize {
        let data = self.pattern.window(offset, len);
        // SAFETY: data points to `len` readable bytes that outlive the call
        // (and, for MSG_ZEROCOPY, the whole trial); fd is a socket we own.
        unsafe {
            match self.api {
                Api::Write if self.flags == 0 => libc::write(self.fd, data.as_ptr().cast(), len),
                Api::Write | Api::Zerocopy => {
                    libc::send(self.fd, data.as_ptr().cast(), len, self.flags)
                }
                Api::Sendmsg => {
                    let mut iov = libc::iovec {
                        iov_base: data.as_ptr() as *mut libc::c_void,
                        iov_len: len,
                    };
                    let mut msg: libc::msghdr = std::mem::zeroed();
                    msg.msg_iov = &mut iov;
                    msg.msg_iovlen = 1;
                    libc::sendmsg(self.fd, &msg, self.flags)
                }
                Api::Sendfile => {
                    let memfd = self.memfd.as_ref().expect("memfd").as_raw_fd();
                    let mut off = (offset % crate::pattern::PERIOD as u64) as libc::off_t;
                    libc::sendfile(self.fd, memfd, &mut off, len)
                }
            }
        }
    }

    /// Waits for outstanding zero-copy completions (bounded) and returns the counts.
    pub fn finish(mut self) -> io::Result<Option<ZeroCopyStats>> {
        if self.api == Api::Sendfile && self.flags & libc::MSG_MORE != 0 {
            setsockopt_int(self.fd, libc::IPPROTO_TCP, libc::TCP_CORK, 0)?;
        }
        let Some(zc) = &mut self.zc else {
            return Ok(None);
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while zc.completed < zc.sends && std::time::Instant::now() < deadline {
            zc.drain(self.fd, true)?;
        }
        Ok(Some(ZeroCopyStats {
            sends: zc.sends,
            completed: zc.completed,
            copied: zc.copied,
        }))
    }
}

/// linux/errqueue.h: origin of zero-copy completions.
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// linux/errqueue.h: the kernel copied instead.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// MSG_ZEROCOPY completion tracking from the socket's error queue.
#[derive(Debug, Default)]
struct ZeroCopy {
    sends: u64,
    completed: u64,
    copied: u64,
}

impl ZeroCopy {
    /// Reads completion notifications; if `block`, waits up to 100 ms for one.
    fn drain(&mut self, fd: RawFd, block: bool) -> io::Result<()> {
        if block {
            let mut pfd = libc::pollfd {
                fd,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid pollfd. POLLERR is always reported.
            unsafe { libc::poll(&mut pfd, 1, 100) };
        }
        loop {
            let mut control = [0u64; 16];
            // SAFETY: msghdr points at a control buffer we own; no data iov.
            let rc = unsafe {
                let mut msg: libc::msghdr = std::mem::zeroed();
                msg.msg_control = control.as_mut_ptr().cast();
                msg.msg_controllen = std::mem::size_of_val(&control);
                let rc = libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT);
                if rc >= 0 {
                    self.parse(&msg);
                }
                rc
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EAGAIN) => Ok(()),
                    Some(libc::EINTR) => continue,
                    _ => Err(e),
                };
            }
        }
    }

    /// # Safety
    /// `msg` must come from a successful recvmsg with its control buffer alive.
    unsafe fn parse(&mut self, msg: &libc::msghdr) {
        let mut cm = libc::CMSG_FIRSTHDR(msg);
        while !cm.is_null() {
            let level = (*cm).cmsg_level;
            let ty = (*cm).cmsg_type;
            let is_err = (level == libc::SOL_IP && ty == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && ty == libc::IPV6_RECVERR);
            if is_err {
                let ee = libc::CMSG_DATA(cm) as *const libc::sock_extended_err;
                let ee = std::ptr::read_unaligned(ee);
                if ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY {
                    let n = u64::from(ee.ee_data.wrapping_sub(ee.ee_info)) + 1;
                    self.completed += n;
                    if ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                        self.copied += n;
                    }
                }
            }
            cm = libc::CMSG_NXTHDR(msg, cm);
        }
    }
}

/// A memfd holding the pattern's backing buffer, for sendfile.
fn pattern_memfd(p: &Pattern) -> io::Result<OwnedFd> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: name is a valid C string.
    let fd = unsafe { libc::memfd_create(c"tcplab-pattern".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we now own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut f = std::fs::File::from(owned);
    f.write_all(p.backing())?;
    Ok(OwnedFd::from(f))
}
