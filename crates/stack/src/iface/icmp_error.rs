//! ICMP destination-unreachable errors, both ways (RFC 792, RFC 1122
//! §3.2.2, RFC 1812 §4.3.2, RFC 1191).
//!
//! - **Out**: a UDP datagram to a port nobody bound gets a port
//!   unreachable, a datagram of a protocol nobody handles a protocol
//!   unreachable, each quoting the offending IP header and as much of its
//!   payload as keeps the error within 576 bytes (RFC 1812 §4.3.2.3).
//!   Never for a datagram to a broadcast or multicast address or from a
//!   non-unicast source, and at most at the rate of a token bucket
//!   (RFC 1812 §4.3.2.8; Linux's defaults, 1000 per second with a burst
//!   of 50).
//! - **In**: a destination unreachable for a datagram we sent is parsed
//!   (its quoted header names the socket: addresses, ports, and TCP's
//!   sequence number) and handed to the transport as an [`IcmpError`]
//!   through [`IpHandler::icmp_error`]; TCP takes it as a soft error
//!   (RFC 1122 §4.2.3.9) and lowers its MSS on fragmentation needed
//!   (RFC 1191).

use super::interface::{IfaceError, Interface};
use super::upper::{Delivery, IpHandler};
use crate::phy::Device;
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::{Icmpv4Packet, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr};
use std::net::SocketAddrV4;
use std::time::Duration;

/// ICMP's destination-unreachable type.
pub const DESTINATION_UNREACHABLE: u8 = 3;
/// The largest ICMP error datagram we send (RFC 1812 §4.3.2.3).
pub const MAX_ERROR_DATAGRAM: usize = 576;
const ICMP_HEADER_LEN: usize = 8;
const IPV4_HEADER_LEN: usize = 20;

/// Destination-unreachable codes (RFC 792, RFC 1122 §3.2.2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnreachableCode {
    /// 0: network unreachable.
    Network,
    /// 1: host unreachable.
    Host,
    /// 2: protocol unreachable.
    Protocol,
    /// 3: port unreachable.
    Port,
    /// 4: fragmentation needed and DF set (RFC 1191 puts the next hop's
    /// MTU in the header).
    FragmentationNeeded,
    /// Any other code.
    Other(u8),
}

impl From<u8> for UnreachableCode {
    fn from(code: u8) -> UnreachableCode {
        match code {
            0 => UnreachableCode::Network,
            1 => UnreachableCode::Host,
            2 => UnreachableCode::Protocol,
            3 => UnreachableCode::Port,
            4 => UnreachableCode::FragmentationNeeded,
            other => UnreachableCode::Other(other),
        }
    }
}

impl From<UnreachableCode> for u8 {
    fn from(code: UnreachableCode) -> u8 {
        match code {
            UnreachableCode::Network => 0,
            UnreachableCode::Host => 1,
            UnreachableCode::Protocol => 2,
            UnreachableCode::Port => 3,
            UnreachableCode::FragmentationNeeded => 4,
            UnreachableCode::Other(other) => other,
        }
    }
}

/// A destination unreachable about a datagram we sent, as the transport
/// sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpError {
    /// Why it did not arrive.
    pub code: UnreachableCode,
    /// RFC 1191's next-hop MTU (fragmentation needed), if the router gave
    /// one.
    pub next_hop_mtu: Option<u16>,
    /// The quoted datagram's protocol.
    pub protocol: IpProtocol,
    /// Our end of it: source address and port.
    pub local: SocketAddrV4,
    /// The peer's end: destination address and port.
    pub remote: SocketAddrV4,
    /// TCP's sequence number in the quoted header.
    pub tcp_seq: Option<SeqNumber>,
}

impl IcmpError {
    /// Parses a destination unreachable's body: the 8-byte ICMP header,
    /// then the quoted IP header and at least 8 bytes of its payload.
    /// None if it is something else or too short.
    pub fn parse(message: &[u8]) -> Option<IcmpError> {
        if message.len() < ICMP_HEADER_LEN + IPV4_HEADER_LEN + 8
            || message[0] != DESTINATION_UNREACHABLE
        {
            return None;
        }
        let mtu = u16::from_be_bytes([message[6], message[7]]);
        let quoted = &message[ICMP_HEADER_LEN..];
        let header_len = usize::from(quoted[0] & 0x0f) * 4;
        if quoted[0] >> 4 != 4 || header_len < IPV4_HEADER_LEN || quoted.len() < header_len + 8 {
            return None;
        }
        let address = |at: usize| {
            std::net::Ipv4Addr::new(quoted[at], quoted[at + 1], quoted[at + 2], quoted[at + 3])
        };
        let transport = &quoted[header_len..];
        let port = |at: usize| u16::from_be_bytes([transport[at], transport[at + 1]]);
        let protocol = IpProtocol::from(quoted[9]);
        let code = UnreachableCode::from(message[1]);
        Some(IcmpError {
            code,
            next_hop_mtu: (code == UnreachableCode::FragmentationNeeded && mtu != 0).then_some(mtu),
            protocol,
            local: SocketAddrV4::new(address(12), port(0)),
            remote: SocketAddrV4::new(address(16), port(2)),
            tcp_seq: (protocol == IpProtocol::Tcp).then(|| {
                SeqNumber(u32::from_be_bytes([
                    transport[4],
                    transport[5],
                    transport[6],
                    transport[7],
                ]))
            }),
        })
    }
}

/// The rate limit on the ICMP errors we send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IcmpErrorConfig {
    /// Send errors at all.
    pub enabled: bool,
    /// Tokens added per second (Linux's `icmp_msgs_per_sec`, 1000).
    pub per_second: u32,
    /// The bucket's size (Linux's `icmp_msgs_burst`, 50).
    pub burst: u32,
}

impl Default for IcmpErrorConfig {
    fn default() -> IcmpErrorConfig {
        IcmpErrorConfig {
            enabled: true,
            per_second: 1000,
            burst: 50,
        }
    }
}

/// A token bucket on the injected clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenBucket {
    pub(crate) config: IcmpErrorConfig,
    tokens: u32,
    /// When the bucket was last topped up.
    refilled: Option<Instant>,
}

impl TokenBucket {
    /// A full bucket.
    pub(crate) fn new(config: IcmpErrorConfig) -> TokenBucket {
        TokenBucket {
            config,
            tokens: config.burst,
            refilled: None,
        }
    }

    /// Takes a token at `now` if there is one.
    pub(crate) fn take(&mut self, now: Instant) -> bool {
        let interval = Duration::from_secs(1) / self.config.per_second.max(1);
        match self.refilled {
            None => self.refilled = Some(now),
            Some(at) if now > at => {
                let earned = now.since(at).as_nanos() / interval.as_nanos();
                if earned > 0 {
                    let earned = u32::try_from(earned).unwrap_or(u32::MAX);
                    self.tokens = self.tokens.saturating_add(earned).min(self.config.burst);
                    self.refilled = Some(at.after(interval * earned.min(1 << 20)));
                    if self.tokens == self.config.burst {
                        self.refilled = Some(now);
                    }
                }
            }
            Some(_) => {}
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }
}

impl Interface {
    /// Answers a datagram nobody takes with a destination unreachable of
    /// `code`, unless RFC 1122 §3.2.2 forbids it or the rate limit holds
    /// it back. `payload` is the datagram's payload after `ip`'s header.
    pub(super) fn send_unreachable(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        ip: &Ipv4Repr,
        payload: &[u8],
        code: UnreachableCode,
    ) -> Result<(), IfaceError> {
        let to_us_alone = self.has_address(ip.dst_addr);
        if !self.icmp_errors.config.enabled || !to_us_alone || !ip.src_addr.is_unicast() {
            return Ok(());
        }
        if !self.icmp_errors.take(now) {
            self.counters.icmp_errors_rate_limited += 1;
            return Ok(());
        }
        let room = MAX_ERROR_DATAGRAM - IPV4_HEADER_LEN - ICMP_HEADER_LEN - IPV4_HEADER_LEN;
        let quoted_payload = &payload[..payload.len().min(room)];
        let quoted_header = Ipv4Repr {
            options_len: 0,
            ..*ip
        };
        let len = ICMP_HEADER_LEN + IPV4_HEADER_LEN + quoted_payload.len();
        let method = self.checksum;
        let sent = self.send_ip_from(
            device,
            now,
            Some(ip.dst_addr),
            ip.src_addr,
            IpProtocol::Icmp,
            len,
            |_, out| {
                out[..ICMP_HEADER_LEN].fill(0);
                out[0] = DESTINATION_UNREACHABLE;
                out[1] = code.into();
                let quoted = &mut out[ICMP_HEADER_LEN..];
                quoted_header.emit(&mut Ipv4Packet::new_unchecked(&mut quoted[..]), method);
                quoted[IPV4_HEADER_LEN..].copy_from_slice(quoted_payload);
                Icmpv4Packet::new_unchecked(out).fill_checksum(method);
            },
        );
        match sent {
            Ok(_) => {
                self.counters.icmp_errors_sent += 1;
                Ok(())
            }
            Err(IfaceError::Device(e)) => Err(IfaceError::Device(e)),
            Err(_) => Ok(()),
        }
    }

    /// A destination unreachable arrived (checksum already verified):
    /// handed to the transport if it quotes a datagram from one of our
    /// addresses.
    pub(super) fn receive_unreachable(
        &mut self,
        message: &[u8],
        upper: &mut dyn IpHandler,
    ) -> Delivery {
        let Some(error) = IcmpError::parse(message) else {
            return Delivery::NoListener;
        };
        if !self.has_address(Ipv4Address::from(*error.local.ip())) {
            return Delivery::NoListener;
        }
        self.counters.icmp_errors_received += 1;
        upper.icmp_error(&error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_gives_its_burst_then_one_token_per_interval() {
        let mut bucket = TokenBucket::new(IcmpErrorConfig {
            enabled: true,
            per_second: 1000,
            burst: 3,
        });
        let t0 = Instant(1_000_000_000);
        assert!((0..3).all(|_| bucket.take(t0)));
        assert!(!bucket.take(t0));
        assert!(!bucket.take(t0.after(Duration::from_micros(999))));
        assert!(bucket.take(t0.after(Duration::from_millis(1))));
        assert!(!bucket.take(t0.after(Duration::from_millis(1))));
        // A long quiet spell refills only up to the burst.
        let later = t0.after(Duration::from_secs(10));
        assert!((0..3).all(|_| bucket.take(later)));
        assert!(!bucket.take(later));
    }

    #[test]
    fn a_quoted_tcp_header_names_the_socket_and_sequence() {
        let mut message = vec![3u8, 4, 0, 0, 0, 0, 0x05, 0xdc];
        let mut quoted = [0u8; 28];
        quoted[0] = 0x45;
        quoted[9] = 6;
        quoted[12..16].copy_from_slice(&[10, 0, 0, 2]);
        quoted[16..20].copy_from_slice(&[10, 0, 0, 1]);
        quoted[20..22].copy_from_slice(&40000u16.to_be_bytes());
        quoted[22..24].copy_from_slice(&80u16.to_be_bytes());
        quoted[24..28].copy_from_slice(&123456u32.to_be_bytes());
        message.extend_from_slice(&quoted);
        let e = IcmpError::parse(&message).unwrap();
        assert_eq!(e.code, UnreachableCode::FragmentationNeeded);
        assert_eq!(e.next_hop_mtu, Some(1500));
        assert_eq!(e.protocol, IpProtocol::Tcp);
        assert_eq!(e.local, "10.0.0.2:40000".parse().unwrap());
        assert_eq!(e.remote, "10.0.0.1:80".parse().unwrap());
        assert_eq!(e.tcp_seq, Some(SeqNumber(123456)));
        assert_eq!(IcmpError::parse(&message[..30]), None, "too short");
    }
}
