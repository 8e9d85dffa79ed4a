//! UDP sockets (RFC 768), small: bind a port, send a datagram to an
//! address, receive one with its source. The set is the interface's
//! [`IpHandler`] for UDP; what the sockets queue to send goes out through
//! [`UdpSockets::flush`].

use super::interface::{IfaceError, Interface};
use super::upper::{Delivery, IpHandler};
use crate::phy::Device;
use crate::time::Instant;
use crate::wire::udp::UDP_HEADER_LEN;
use crate::wire::{ChecksumMethod, IpProtocol, Ipv4Repr, UdpPacket, UdpRepr};
use std::collections::VecDeque;
use std::net::SocketAddrV4;

/// Why a socket operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UdpError {
    /// Another socket has the port.
    #[error("udp port {0} is in use")]
    PortInUse(u16),
    /// Port 0 cannot be bound.
    #[error("udp port 0 cannot be bound")]
    PortZero,
    /// The handle names no socket.
    #[error("no such udp socket")]
    NoSocket,
    /// The socket's send queue is full.
    #[error("udp send queue full")]
    SendQueueFull,
    /// The datagram does not fit one IPv4 packet.
    #[error("udp payload of {0} bytes is over 65507")]
    TooLong(usize),
}

/// Names one socket of a [`UdpSockets`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpHandle(usize);

/// One bound socket's queues.
#[derive(Debug)]
struct UdpSocket {
    port: u16,
    received: VecDeque<(SocketAddrV4, Vec<u8>)>,
    to_send: VecDeque<(SocketAddrV4, Vec<u8>)>,
    dropped_full: u64,
}

/// The UDP sockets of one interface.
#[derive(Debug)]
pub struct UdpSockets {
    sockets: Vec<Option<UdpSocket>>,
    queue_len: usize,
}

impl Default for UdpSockets {
    fn default() -> UdpSockets {
        UdpSockets::new(64)
    }
}

impl UdpSockets {
    /// No sockets yet; each will queue up to `queue_len` datagrams each
    /// way.
    pub fn new(queue_len: usize) -> UdpSockets {
        UdpSockets {
            sockets: Vec::new(),
            queue_len: queue_len.max(1),
        }
    }

    /// Binds `port` on all our addresses.
    pub fn bind(&mut self, port: u16) -> Result<UdpHandle, UdpError> {
        if port == 0 {
            return Err(UdpError::PortZero);
        }
        if self.sockets.iter().flatten().any(|s| s.port == port) {
            return Err(UdpError::PortInUse(port));
        }
        let socket = UdpSocket {
            port,
            received: VecDeque::new(),
            to_send: VecDeque::new(),
            dropped_full: 0,
        };
        let slot = self.sockets.iter().position(Option::is_none);
        let index = match slot {
            Some(i) => {
                self.sockets[i] = Some(socket);
                i
            }
            None => {
                self.sockets.push(Some(socket));
                self.sockets.len() - 1
            }
        };
        Ok(UdpHandle(index))
    }

    /// Closes a socket, freeing its port.
    pub fn close(&mut self, handle: UdpHandle) {
        if let Some(slot) = self.sockets.get_mut(handle.0) {
            *slot = None;
        }
    }

    fn socket(&mut self, handle: UdpHandle) -> Result<&mut UdpSocket, UdpError> {
        self.sockets
            .get_mut(handle.0)
            .and_then(Option::as_mut)
            .ok_or(UdpError::NoSocket)
    }

    /// Queues `data` for `to`; it leaves at the next [`UdpSockets::flush`].
    pub fn send_to(
        &mut self,
        handle: UdpHandle,
        to: SocketAddrV4,
        data: &[u8],
    ) -> Result<(), UdpError> {
        if data.len() > 65507 {
            return Err(UdpError::TooLong(data.len()));
        }
        let queue_len = self.queue_len;
        let socket = self.socket(handle)?;
        if socket.to_send.len() >= queue_len {
            return Err(UdpError::SendQueueFull);
        }
        socket.to_send.push_back((to, data.to_vec()));
        Ok(())
    }

    /// The oldest datagram received, with its source.
    pub fn recv_from(
        &mut self,
        handle: UdpHandle,
    ) -> Result<Option<(SocketAddrV4, Vec<u8>)>, UdpError> {
        Ok(self.socket(handle)?.received.pop_front())
    }

    /// Datagrams dropped because the socket's receive queue was full.
    pub fn dropped_full(&mut self, handle: UdpHandle) -> Result<u64, UdpError> {
        Ok(self.socket(handle)?.dropped_full)
    }

    /// Sends every queued datagram through `iface`. A datagram refused for
    /// a reason of its own (no route, too big) is dropped and counted by
    /// the interface; a device failure stops the flush and is returned.
    pub fn flush(
        &mut self,
        iface: &mut Interface,
        device: &mut dyn Device,
        now: Instant,
    ) -> Result<usize, IfaceError> {
        let mut sent = 0;
        for socket in self.sockets.iter_mut().flatten() {
            while let Some((to, data)) = socket.to_send.pop_front() {
                let checksum = iface.checksum();
                let repr = UdpRepr {
                    src_port: socket.port,
                    dst_port: to.port(),
                    payload: &data,
                };
                let result = iface.send_ip(
                    device,
                    now,
                    (*to.ip()).into(),
                    IpProtocol::Udp,
                    UDP_HEADER_LEN + data.len(),
                    |ip, out| {
                        repr.emit(
                            &mut UdpPacket::new_unchecked(out),
                            ip.src_addr,
                            ip.dst_addr,
                            checksum,
                        )
                    },
                );
                match result {
                    Ok(_) => sent += 1,
                    Err(IfaceError::Device(e)) => return Err(IfaceError::Device(e)),
                    Err(_) => {}
                }
            }
        }
        Ok(sent)
    }
}

impl IpHandler for UdpSockets {
    fn udp(&mut self, ip: &Ipv4Repr, udp: &UdpRepr<'_>) -> Delivery {
        let queue_len = self.queue_len;
        let Some(socket) = self
            .sockets
            .iter_mut()
            .flatten()
            .find(|s| s.port == udp.dst_port)
        else {
            return Delivery::NoListener;
        };
        if socket.received.len() >= queue_len {
            socket.dropped_full += 1;
        } else {
            let from = SocketAddrV4::new(ip.src_addr.into(), udp.src_port);
            socket.received.push_back((from, udp.payload.to_vec()));
        }
        Delivery::Accepted
    }

    fn tcp(&mut self, _ip: &Ipv4Repr, _segment: &[u8], _checksum: ChecksumMethod) -> Delivery {
        Delivery::NoListener
    }
}
