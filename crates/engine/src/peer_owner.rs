//! Which user owns the other end of a TCP connection on this host, read
//! from the kernel's socket table by sock_diag's exact lookup. On
//! loopback a trial's data connections come from the same user as the
//! control connection that asked for the trial, so another local user's
//! flood of connections to the trial's data port is told apart at once,
//! whatever its timing (a flood from the client's own address could
//! otherwise only be drained by the token rule, [`crate::workloads`]).

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
use netlink_packet_sock_diag::{
    constants::{AF_INET, AF_INET6, IPPROTO_TCP},
    inet::{ExtensionFlags, InetRequest, SocketId, StateFlags},
    SockDiagMessage,
};
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket};
use std::net::SocketAddr;

/// Why the owner of a connection's other end could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    /// The netlink socket could not be opened, written or read.
    #[error("sock_diag: {0}")]
    Io(#[from] std::io::Error),
    /// The kernel has no such socket (closed already, or not on this
    /// host's network namespace).
    #[error("no socket from {remote} to {local} in this host's table")]
    NotFound {
        /// The connection's local end.
        local: SocketAddr,
        /// The connection's other end.
        remote: SocketAddr,
    },
    /// The kernel's answer could not be read.
    #[error("sock_diag answer: {0}")]
    Decode(String),
}

/// The uid owning the socket at `remote`, the other end of a TCP
/// connection whose local end is `local`, both on this host (loopback).
pub fn peer_owner(local: SocketAddr, remote: SocketAddr) -> Result<u32, OwnerError> {
    let family = match remote {
        SocketAddr::V4(_) => AF_INET,
        SocketAddr::V6(_) => AF_INET6,
    };
    // The other end's socket: its source is the remote address.
    let mut id = match remote {
        SocketAddr::V4(_) => SocketId::new_v4(),
        SocketAddr::V6(_) => SocketId::new_v6(),
    };
    id.source_port = remote.port();
    id.source_address = remote.ip();
    id.destination_port = local.port();
    id.destination_address = local.ip();
    id.cookie = [0xff; 8]; // INET_DIAG_NOCOOKIE: look up by addresses only
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST; // one socket, not a dump
    let mut request = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::all(),
            socket_id: id,
        })
        .into(),
    );
    request.finalize();
    let mut out = vec![0; request.buffer_len()];
    request.serialize(&mut out);
    let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&netlink_sys::SocketAddr::new(0, 0))?;
    socket.send(&out, 0)?;
    let mut answer = vec![0; 8192];
    let n = socket.recv(&mut &mut answer[..], 0)?;
    let reply = NetlinkMessage::<SockDiagMessage>::deserialize(&answer[..n])
        .map_err(|e| OwnerError::Decode(e.to_string()))?;
    match reply.payload {
        NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => Ok(r.header.uid),
        NetlinkPayload::Error(e) if e.code.map(|c| c.get()) == Some(-libc::ENOENT) => {
            Err(OwnerError::NotFound { local, remote })
        }
        other => Err(OwnerError::Decode(format!("unexpected {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};
    use std::os::unix::process::CommandExt;

    /// This process's own loopback connection is owned by its uid.
    #[test]
    fn a_connection_of_this_process_is_owned_by_its_user() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, remote) = l.accept().unwrap();
        let uid = peer_owner(s.local_addr().unwrap(), remote).unwrap();
        // SAFETY: getuid cannot fail.
        assert_eq!(uid, unsafe { libc::getuid() });
    }

    /// A connection made by a process running as another user (nobody,
    /// 65534) is owned by that user, not by the server's.
    #[test]
    fn a_connection_of_another_user_is_owned_by_that_user() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut child = std::process::Command::new("python3")
            .args([
                "-c",
                &format!(
                    "import socket,sys; s=socket.create_connection(('127.0.0.1',{port})); sys.stdin.read()"
                ),
            ])
            .stdin(std::process::Stdio::piped())
            .uid(65534)
            .spawn()
            .unwrap();
        let (s, remote) = l.accept().unwrap();
        let uid = peer_owner(s.local_addr().unwrap(), remote);
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(uid.unwrap(), 65534);
    }

    /// A connection whose other end has closed and gone is not found.
    #[test]
    fn a_gone_socket_is_not_found() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let local = l.local_addr().unwrap();
        let err = peer_owner(local, "127.0.0.1:1".parse().unwrap()).unwrap_err();
        assert!(matches!(err, OwnerError::NotFound { .. }), "{err}");
    }
}
