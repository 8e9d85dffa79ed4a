//! Applying a trial's socket factors to data sockets, before connect or
//! listen where the kernel needs them early (buffers, MSS, congestion control).

use crate::error::EngineError;
use record::TrialParams;
use socket2::{Domain, Protocol, Socket, Type};
use std::net::SocketAddr;

/// Creates a TCP socket for `addr`'s family with the trial's options applied.
pub fn tcp_socket(addr: &SocketAddr, p: &TrialParams) -> Result<Socket, EngineError> {
    let s = Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| EngineError::io("creating TCP socket", e))?;
    apply_tcp(&s, p)?;
    Ok(s)
}

/// Creates a UDP socket for `addr`'s family with the trial's buffer sizes applied.
pub fn udp_socket(addr: &SocketAddr, p: &TrialParams) -> Result<Socket, EngineError> {
    let s = Socket::new(Domain::for_address(*addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| EngineError::io("creating UDP socket", e))?;
    apply_buffers(&s, p)?;
    Ok(s)
}

/// Sets SO_SNDBUF and SO_RCVBUF where the trial asks for them.
pub fn apply_buffers(s: &Socket, p: &TrialParams) -> Result<(), EngineError> {
    if let Some(n) = p.sndbuf {
        s.set_send_buffer_size(n as usize)
            .map_err(|e| EngineError::io("setting SO_SNDBUF", e))?;
    }
    if let Some(n) = p.rcvbuf {
        s.set_recv_buffer_size(n as usize)
            .map_err(|e| EngineError::io("setting SO_RCVBUF", e))?;
    }
    Ok(())
}

/// Applies buffers, TCP_NODELAY, TCP_MAXSEG and TCP_CONGESTION.
pub fn apply_tcp(s: &Socket, p: &TrialParams) -> Result<(), EngineError> {
    apply_buffers(s, p)?;
    if p.nodelay {
        s.set_tcp_nodelay(true)
            .map_err(|e| EngineError::io("setting TCP_NODELAY", e))?;
    }
    if let Some(mss) = p.mss {
        s.set_tcp_mss(mss)
            .map_err(|e| EngineError::io("setting TCP_MAXSEG", e))?;
    }
    if let Some(cc) = &p.cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| EngineError::io(&format!("setting congestion control {cc:?}"), e))?;
    }
    Ok(())
}

/// Sets TCP_DEFER_ACCEPT on listener `s`: a connection is handed to
/// `accept` only once its first bytes arrive (or after about `secs`), so
/// connections that send nothing never take the accepting side's places.
pub fn defer_accept(s: &socket2::Socket, secs: u32) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let v = secs as libc::c_int;
    // SAFETY: an int option of its stated size on a live socket.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `addr` is `from` (any address if `None`); an IPv4-mapped IPv6
/// address is its IPv4 address.
pub fn is_from(addr: &socket2::SockAddr, from: Option<std::net::IpAddr>) -> bool {
    match (from, addr.as_socket()) {
        (Some(want), Some(got)) => got.ip().to_canonical() == want.to_canonical(),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

/// Applies the options that are per connection (not inherited from a listener).
pub fn apply_accepted(s: &Socket, p: &TrialParams) -> Result<(), EngineError> {
    if p.nodelay {
        s.set_tcp_nodelay(true)
            .map_err(|e| EngineError::io("setting TCP_NODELAY", e))?;
    }
    if let Some(cc) = &p.cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| EngineError::io(&format!("setting congestion control {cc:?}"), e))?;
    }
    Ok(())
}

/// A listening TCP socket on `addr` (port 0 for ephemeral) with the options applied.
pub fn tcp_listener(
    addr: SocketAddr,
    p: &TrialParams,
    backlog: i32,
) -> Result<Socket, EngineError> {
    let s = tcp_socket(&addr, p)?;
    s.set_reuse_address(true)
        .map_err(|e| EngineError::io("setting SO_REUSEADDR", e))?;
    s.bind(&addr.into())
        .map_err(|e| EngineError::io(&format!("binding data listener to {addr}"), e))?;
    s.listen(backlog)
        .map_err(|e| EngineError::io("listening on data socket", e))?;
    Ok(s)
}

/// The local port of a bound socket.
pub fn local_port(s: &Socket) -> Result<u16, EngineError> {
    s.local_addr()
        .map_err(|e| EngineError::io("reading local address", e))?
        .as_socket()
        .map(|a| a.port())
        .ok_or_else(|| EngineError::Protocol("socket has no IP address".into()))
}

/// Sets an integer socket option that socket2 does not cover (TCP_CORK with
/// sendfile, SO_ZEROCOPY, SO_RCVLOWAT).
pub fn setsockopt_int(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
    v: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: passes a pointer to a c_int that lives across the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
