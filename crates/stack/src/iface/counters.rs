//! What the interface counts: frames and bytes in and out, the replies it
//! made on its own, and every drop by its reason, so issue 19 can account
//! the link and IP layers and a test can see why a packet vanished.

/// Why the interface dropped a frame, a packet or a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// An Ethernet frame addressed to another MAC.
    NotOurMac,
    /// An Ethernet frame carrying neither ARP nor IPv4.
    UnknownEthertype,
    /// Bytes that do not parse as the protocol they claim to be.
    Malformed,
    /// An IPv4 header (or ICMP/UDP message) whose checksum fails.
    BadChecksum,
    /// An IPv4 packet for an address that is not ours (we do not forward).
    NotOurAddress,
    /// An IPv4 packet that arrived with TTL 0.
    TtlExpired,
    /// A fragment refused because the reassembly buffers are full (too
    /// many partial datagrams, or too many bytes held).
    FragmentLimit,
    /// A fragment that contradicts the datagram's others (past its end,
    /// a second end, a middle fragment not a multiple of 8 bytes, or a
    /// datagram over 65535 bytes).
    FragmentInvalid,
    /// A partial datagram dropped because its other fragments did not
    /// arrive in time.
    FragmentTimeout,
    /// An IPv4 protocol nobody above handles.
    UnknownProtocol,
    /// An ICMP message other than an echo request or reply.
    UnhandledIcmp,
    /// A UDP datagram for a port nobody bound, or a TCP segment with no
    /// handler.
    NoListener,
    /// An outgoing packet with no route to its destination.
    NoRoute,
    /// An outgoing packet that waited for ARP and was replaced by a newer
    /// one for the same next hop (one is held per next hop).
    ArpPendingReplaced,
    /// An outgoing packet that waited for ARP longer than the hold time
    /// (three request intervals) without an answer.
    ArpUnresolved,
    /// An outgoing packet larger than the link's MTU (the interface does
    /// not fragment on output; DF is set).
    TooBig,
    /// The device refused a frame (its queue was full, or an error).
    DeviceRefused,
    /// A TCP segment to or from an address that is not one host's (a
    /// broadcast, a multicast group, 0.0.0.0), received or about to be
    /// sent: RFC 1122 §4.2.3.10 wants it silently discarded, never
    /// answered (no SYN-ACK, no RST).
    TcpNotUnicast,
}

impl DropReason {
    /// Every reason, in the order of [`DropReason::index`].
    pub const ALL: [DropReason; 18] = [
        DropReason::NotOurMac,
        DropReason::UnknownEthertype,
        DropReason::Malformed,
        DropReason::BadChecksum,
        DropReason::NotOurAddress,
        DropReason::TtlExpired,
        DropReason::FragmentLimit,
        DropReason::FragmentInvalid,
        DropReason::FragmentTimeout,
        DropReason::UnknownProtocol,
        DropReason::UnhandledIcmp,
        DropReason::NoListener,
        DropReason::NoRoute,
        DropReason::ArpPendingReplaced,
        DropReason::ArpUnresolved,
        DropReason::TooBig,
        DropReason::DeviceRefused,
        DropReason::TcpNotUnicast,
    ];

    /// The reason's place in [`DropReason::ALL`].
    pub fn index(self) -> usize {
        DropReason::ALL
            .iter()
            .position(|r| *r == self)
            .expect("every reason is in ALL")
    }

    /// A short snake-case name, for reports.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::NotOurMac => "not_our_mac",
            DropReason::UnknownEthertype => "unknown_ethertype",
            DropReason::Malformed => "malformed",
            DropReason::BadChecksum => "bad_checksum",
            DropReason::NotOurAddress => "not_our_address",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::FragmentLimit => "fragment_limit",
            DropReason::FragmentInvalid => "fragment_invalid",
            DropReason::FragmentTimeout => "fragment_timeout",
            DropReason::UnknownProtocol => "unknown_protocol",
            DropReason::UnhandledIcmp => "unhandled_icmp",
            DropReason::NoListener => "no_listener",
            DropReason::NoRoute => "no_route",
            DropReason::ArpPendingReplaced => "arp_pending_replaced",
            DropReason::ArpUnresolved => "arp_unresolved",
            DropReason::TooBig => "too_big",
            DropReason::DeviceRefused => "device_refused",
            DropReason::TcpNotUnicast => "tcp_not_unicast",
        }
    }
}

/// The interface's counters, all monotonic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InterfaceCounters {
    /// Frames (IP packets on TUN) received from the device.
    pub frames_in: u64,
    /// Frames transmitted to the device.
    pub frames_out: u64,
    /// Bytes received, link headers included.
    pub bytes_in: u64,
    /// Bytes transmitted, link headers included.
    pub bytes_out: u64,
    /// ARP requests sent for next hops.
    pub arp_requests_sent: u64,
    /// ARP replies sent for our addresses.
    pub arp_replies_sent: u64,
    /// Packets that waited for ARP and went out when the reply came.
    pub arp_pending_released: u64,
    /// ICMP echo replies sent.
    pub echo_replies_sent: u64,
    /// Datagrams put together from fragments.
    pub datagrams_reassembled: u64,
    /// IPv4 packets delivered to ICMP, UDP or TCP.
    pub ip_delivered: u64,
    /// Super-packets received uncut from an offload device (its header
    /// names a segmentation type: the kernel's GRO or its TSO skipped).
    pub super_packets_in: u64,
    /// Received packets whose transport checksum was not verified because
    /// the device header vouched for it (`NEEDS_CSUM` or `DATA_VALID`).
    pub checksums_trusted_in: u64,
    /// Super-packets handed to an offload device for it to cut (TSO).
    pub super_packets_out: u64,
    /// The wire segments those super-packets stand for (payload over the
    /// segment size, rounded up).
    pub super_packet_segments_out: u64,
    /// Packets sent with a partial transport checksum for the device to
    /// finish (`NEEDS_CSUM`), super-packets included.
    pub checksums_offloaded_out: u64,
    /// Datagrams sent in fragments because they exceeded the MTU.
    pub datagrams_fragmented: u64,
    /// Fragments sent.
    pub fragments_out: u64,
    /// ICMP destination unreachables sent (port, protocol).
    pub icmp_errors_sent: u64,
    /// ICMP errors not sent because of the rate limit.
    pub icmp_errors_rate_limited: u64,
    /// ICMP destination unreachables received about our datagrams.
    pub icmp_errors_received: u64,
    drops: [u64; DropReason::ALL.len()],
}

impl InterfaceCounters {
    /// Packets dropped for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops[reason.index()]
    }

    /// Packets dropped for any reason.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Counts one drop for `reason`.
    pub fn count_drop(&mut self, reason: DropReason) {
        self.drops[reason.index()] += 1;
    }

    /// Counts `n` drops for `reason`.
    pub fn count_drops(&mut self, reason: DropReason, n: u64) {
        self.drops[reason.index()] += n;
    }
}
