//! The virtio-net header (`struct virtio_net_hdr`, virtio spec §5.1.6) that
//! precedes every packet on a TUN device opened with `IFF_VNET_HDR`: it
//! tells the kernel how to segment a super-packet and where to finish a
//! partial checksum, and tells the reader the same of what the kernel
//! hands over. Ten bytes, in the host's byte order (little-endian on the
//! machines tcplab runs on; the kernel's default for a TUN device).

/// The header's length with `TUNSETVNETHDRSZ` left at its default.
pub const VNET_HDR_LEN: usize = 10;

/// `flags`: the checksum from `csum_start` on is partial (the pseudo-header
/// sum is in place); whoever receives the packet must finish it.
pub const F_NEEDS_CSUM: u8 = 1;
/// `flags`: the checksum has been verified.
pub const F_DATA_VALID: u8 = 2;

/// What kind of segmentation a packet needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GsoType {
    /// A packet to send as it is.
    None,
    /// A TCP/IPv4 super-packet, to cut into `gso_size` payloads.
    TcpV4,
    /// A UDP super-packet (UFO).
    Udp,
    /// A TCP/IPv6 super-packet.
    TcpV6,
    /// A value this code does not know (kept as it came).
    Other(u8),
}

impl GsoType {
    fn from_byte(b: u8) -> GsoType {
        match b & !0x80 {
            0 => GsoType::None,
            1 => GsoType::TcpV4,
            3 => GsoType::Udp,
            4 => GsoType::TcpV6,
            _ => GsoType::Other(b),
        }
    }

    fn to_byte(self) -> u8 {
        match self {
            GsoType::None => 0,
            GsoType::TcpV4 => 1,
            GsoType::Udp => 3,
            GsoType::TcpV6 => 4,
            GsoType::Other(b) => b,
        }
    }
}

/// One virtio-net header, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtioNetHdr {
    /// [`F_NEEDS_CSUM`], [`F_DATA_VALID`].
    pub flags: u8,
    /// The segmentation wanted.
    pub gso_type: GsoType,
    /// Whether the ECN bit of `gso_type` is set (segments carry CWR).
    pub gso_ecn: bool,
    /// The length of the headers (IP + TCP) copied onto each segment.
    pub hdr_len: u16,
    /// The payload bytes per segment.
    pub gso_size: u16,
    /// Where the checksummed part starts (the TCP or UDP header).
    pub csum_start: u16,
    /// Where, from `csum_start`, the checksum field sits.
    pub csum_offset: u16,
}

impl VirtioNetHdr {
    /// The header of a packet that needs nothing done.
    pub const PLAIN: VirtioNetHdr = VirtioNetHdr {
        flags: 0,
        gso_type: GsoType::None,
        gso_ecn: false,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
    };

    /// Decodes the first [`VNET_HDR_LEN`] bytes of `buf`, or `None` if it
    /// is shorter.
    pub fn parse(buf: &[u8]) -> Option<VirtioNetHdr> {
        let b = buf.get(..VNET_HDR_LEN)?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Some(VirtioNetHdr {
            flags: b[0],
            gso_type: GsoType::from_byte(b[1]),
            gso_ecn: b[1] & 0x80 != 0,
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        })
    }

    /// Writes the header into the first [`VNET_HDR_LEN`] bytes of `buf`
    /// (which must be that long).
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type.to_byte() | if self.gso_ecn { 0x80 } else { 0 };
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }
}

impl VirtioNetHdr {
    /// The header of a packet whose transport checksum the kernel is to
    /// finish: the field at `csum_start + csum_offset` holds the
    /// pseudo-header sum (`NEEDS_CSUM`).
    pub fn partial_checksum(csum_start: u16, csum_offset: u16) -> VirtioNetHdr {
        VirtioNetHdr {
            flags: F_NEEDS_CSUM,
            csum_start,
            csum_offset,
            ..VirtioNetHdr::PLAIN
        }
    }

    /// The header of a TCP/IPv4 super-packet the kernel cuts into
    /// `gso_size`-byte payloads, each with a copy of the first `hdr_len`
    /// bytes (IP and TCP headers) and its checksum finished (TSO needs
    /// `NEEDS_CSUM`: the TCP header starts at `csum_start`).
    pub fn tcp4_super(csum_start: u16, hdr_len: u16, gso_size: u16) -> VirtioNetHdr {
        VirtioNetHdr {
            gso_type: GsoType::TcpV4,
            hdr_len,
            gso_size,
            ..VirtioNetHdr::partial_checksum(csum_start, TCP_CSUM_OFFSET)
        }
    }

    /// Whether the sender vouches for the transport checksum, so the
    /// receiver need not verify it: `NEEDS_CSUM` (the checksum is partial,
    /// the data came from the host's own stack) or `DATA_VALID` (someone
    /// verified it).
    pub fn checksum_trusted(&self) -> bool {
        self.flags & (F_NEEDS_CSUM | F_DATA_VALID) != 0
    }

    /// Whether this is a super-packet the receiver sees uncut (GRO or the
    /// peer's TSO): a segmentation type other than none.
    pub fn is_super_packet(&self) -> bool {
        self.gso_type != GsoType::None
    }
}

/// Where the TCP checksum sits from the TCP header's start.
pub const TCP_CSUM_OFFSET: u16 = 16;
/// Where the UDP checksum sits from the UDP header's start.
pub const UDP_CSUM_OFFSET: u16 = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tso_header_round_trips_in_the_kernels_layout() {
        let h = VirtioNetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: GsoType::TcpV4,
            gso_ecn: false,
            hdr_len: 40,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        };
        let mut b = [0u8; VNET_HDR_LEN];
        h.emit(&mut b);
        // flags, gso_type, then four little-endian u16s (virtio_net.h).
        assert_eq!(b, [1, 1, 40, 0, 0xa8, 0x05, 20, 0, 16, 0]);
        assert_eq!(VirtioNetHdr::parse(&b), Some(h));
        assert_eq!(VirtioNetHdr::parse(&b[..9]), None);
    }

    #[test]
    fn builders_set_what_the_kernel_reads() {
        let h = VirtioNetHdr::tcp4_super(20, 52, 1448);
        assert_eq!(h.flags, F_NEEDS_CSUM);
        assert_eq!(h.gso_type, GsoType::TcpV4);
        assert_eq!((h.csum_start, h.csum_offset), (20, 16));
        assert_eq!((h.hdr_len, h.gso_size), (52, 1448));
        assert!(h.is_super_packet() && h.checksum_trusted());
        let p = VirtioNetHdr::partial_checksum(20, UDP_CSUM_OFFSET);
        assert!(!p.is_super_packet() && p.checksum_trusted());
        assert!(!VirtioNetHdr::PLAIN.checksum_trusted());
        let valid = VirtioNetHdr {
            flags: F_DATA_VALID,
            ..VirtioNetHdr::PLAIN
        };
        assert!(valid.checksum_trusted());
    }
}
