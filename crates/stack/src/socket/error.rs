//! Why a TCP socket call failed.

use crate::tcp::tcb::ConnectionError;

/// Why a TCP socket call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TcpSocketError {
    /// Another listener has the port.
    #[error("tcp port {0} is already listened on")]
    PortInUse(u16),
    /// Port 0 cannot be listened on.
    #[error("tcp port 0 cannot be listened on")]
    PortZero,
    /// Every ephemeral port is taken towards that peer.
    #[error("no ephemeral port is free")]
    NoEphemeralPort,
    /// The handle names no socket (or one already closed).
    #[error("no such tcp socket")]
    NoSocket,
    /// The call needs a connection and the handle names a listener, or
    /// the other way round.
    #[error("wrong kind of tcp socket for this call")]
    WrongKind,
    /// The connection ended abnormally.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
    /// The connection can no longer send (closed or shut down).
    #[error("the connection is closed for sending")]
    NotSending,
    /// A connect to an address that is not one host's (the limited
    /// broadcast, a multicast group, 0.0.0.0): RFC 1122 §4.2.3.10.
    #[error("tcp to {0}: not unicast")]
    NotUnicast(std::net::Ipv4Addr),
}
