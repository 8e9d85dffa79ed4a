//! The interface: one device's medium, MAC and IPv4 addresses, its routing
//! table, ARP cache, checksum method, fragment reassembly and counters.
//! [`Interface::poll`] reads frames from a [`Device`] and answers what the
//! interface answers itself (ARP, `ping`); UDP and TCP go to an
//! [`IpHandler`]. Input is in `input.rs`, output (`send_ip`, ARP
//! resolution) in `output.rs`.

use super::arp_cache::{ArpCache, ArpConfig};
use super::counters::InterfaceCounters;
use super::fragment::{FragmentConfig, Reassembler};
use super::offload;
use super::route::{self, NextHop, Route, RouteTable, RouteTableKind};
use super::upper::IpHandler;
use crate::phy::vnet::{VirtioNetHdr, VNET_HDR_LEN};
use crate::phy::{Device, Medium, PhyError};
use crate::time::Instant;
use crate::wire::{ChecksumMethod, EthernetAddress, Ipv4Address, Ipv4Cidr};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// How to build an [`Interface`].
#[derive(Debug, Clone)]
pub struct InterfaceConfig {
    /// IP (TUN) or Ethernet (TAP).
    pub medium: Medium,
    /// Our MAC address (unused on an IP medium).
    pub mac: EthernetAddress,
    /// Our addresses, each with its prefix (a connected route is added
    /// for each).
    pub addresses: Vec<Ipv4Cidr>,
    /// Which routing-table structure to use.
    pub route_table: RouteTableKind,
    /// The ARP cache's lifetimes, rate limit and size.
    pub arp: ArpConfig,
    /// How checksums are computed and verified.
    pub checksum: ChecksumMethod,
    /// The reassembly bounds.
    pub fragments: FragmentConfig,
    /// The TTL of packets we send.
    pub hop_limit: u8,
    /// Whether packets we send carry Don't Fragment (RFC 1191 path MTU
    /// discovery; on by default, as Linux does).
    pub dont_frag: bool,
    /// Frames with a payload read per `poll` at most (default
    /// [`DEFAULT_POLL_BUDGET`]), so one call cannot starve the layers
    /// above: a batch of in-order data is answered by one ACK after it. Header-only frames (at most [`SMALL_FRAME`]
    /// bytes: pure ACKs, SYNs, RSTs) do not count, up to
    /// [`SMALL_FRAMES_PER_BUDGET`] × this many in all: a sender reads
    /// every ACK waiting before it sends again, so it sends on the
    /// freshest window (and the TUN's queue of ACKs does not stay deep).
    pub poll_budget: usize,
    /// Fragment datagrams (not TCP) larger than the MTU instead of
    /// refusing them (on by default, as Linux does for UDP).
    pub fragment_output: bool,
    /// Whether and how fast ICMP errors are sent.
    pub icmp_errors: super::icmp_error::IcmpErrorConfig,
    /// Frames held within one round of the stack (`Stack::poll`) and
    /// written back to back when this many are waiting or the round ends
    /// (0 or 1: each is written as soon as it is built). Written one at a
    /// time, frames reach Linux spaced by the stack's work on the next;
    /// back to back, they find its reader still busy with the first. See
    /// `tx_batch.rs`.
    pub tx_batch: usize,
}

impl InterfaceConfig {
    /// A configuration for `medium` with one address, a locally
    /// administered MAC, a trie, RFC 1071 checksums, TTL 64 and DF.
    pub fn new(medium: Medium, address: Ipv4Cidr) -> InterfaceConfig {
        InterfaceConfig {
            medium,
            mac: EthernetAddress([0x02, 0x00, 0x00, 0x00, 0x00, 0x02]),
            addresses: vec![address],
            route_table: RouteTableKind::Trie,
            arp: ArpConfig::default(),
            checksum: ChecksumMethod::default(),
            fragments: FragmentConfig::default(),
            hop_limit: 64,
            dont_frag: true,
            poll_budget: DEFAULT_POLL_BUDGET,
            fragment_output: true,
            icmp_errors: super::icmp_error::IcmpErrorConfig::default(),
            tx_batch: DEFAULT_TX_BATCH,
        }
    }
}

/// Frames with a payload one round reads at most by default. A receiver
/// answers a round with one ACK, so this is also how many segments an
/// ACK covers in a bulk transfer (smoltcp's covered 96–108 in the runs
/// below). Every ACK written into a TUN runs
/// Linux's sender in the writing thread (its ACK processing, then the
/// data it lets out, cut from super-packets), so fewer ACKs leave more of
/// that work to Linux's own thread: from Linux over a plain TUN with 1
/// MiB buffers, 12 alternated rounds of 1 GB (2026-11-26) gave tcplab /
/// smoltcp 1.078× at 64, 1.152× at 128 (12 of 12 ahead), 1.188× at 256,
/// and 0.992× at 512, where the ACK came too late in the window.
pub const DEFAULT_POLL_BUDGET: usize = 128;

/// The frames a round holds back at most by default (32 full-sized
/// frames: 48 KB).
pub const DEFAULT_TX_BATCH: usize = 32;

/// The largest frame that carries headers only, for the poll budget: a
/// virtio-net header (12), Ethernet (14), IPv4 with no options (20) and
/// TCP with every option (60) come to 106 bytes; 128 leaves room and
/// still counts any frame with a real payload.
pub const SMALL_FRAME: usize = 128;

/// How many frames one `poll` reads in all, as a multiple of its budget,
/// however many of them are header-only.
pub const SMALL_FRAMES_PER_BUDGET: usize = 16;

/// Why the interface could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum IfaceError {
    /// The device failed.
    #[error(transparent)]
    Device(#[from] PhyError),
    /// No route leads to the destination.
    #[error("no route to {0}")]
    NoRoute(Ipv4Address),
    /// The packet is larger than the link's MTU (we do not fragment).
    #[error("packet of {len} bytes exceeds the MTU of {mtu}")]
    TooBig {
        /// The IP packet's length.
        len: usize,
        /// The device's MTU.
        mtu: usize,
    },
    /// The interface has no address to send from.
    #[error("the interface has no address")]
    NoAddress,
    /// TCP from or to an address that is not one host's (a broadcast, a
    /// multicast group, 0.0.0.0): RFC 1122 §4.2.3.10.
    #[error("tcp from or to {0}: not unicast")]
    NotUnicast(Ipv4Address),
}

/// What became of a packet given to `send_ip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// It went to the device.
    Sent,
    /// It waits for the next hop's ARP reply (one per next hop).
    AwaitingArp,
}

/// One network interface over one device.
pub struct Interface {
    pub(super) medium: Medium,
    pub(super) mac: EthernetAddress,
    pub(super) addresses: Vec<Ipv4Cidr>,
    pub(super) routes: Box<dyn RouteTable + Send>,
    /// Advanced by every change to `routes`: a cached route from an
    /// older generation is looked up again.
    pub(super) route_generation: u64,
    pub(super) arp: ArpCache,
    pub(super) checksum: ChecksumMethod,
    pub(super) reassembler: Reassembler,
    pub(super) hop_limit: u8,
    pub(super) dont_frag: bool,
    pub(super) poll_budget: usize,
    pub(super) next_ident: u16,
    pub(super) fragment_output: bool,
    pub(super) icmp_errors: super::icmp_error::TokenBucket,
    /// Packets (IP, no link header) waiting for their next hop's MAC,
    /// with the time they began to wait.
    pub(super) awaiting_arp: HashMap<Ipv4Addr, (Instant, Vec<u8>)>,
    /// How long a packet waits for ARP before it is dropped.
    pub(super) arp_hold: std::time::Duration,
    pub(super) counters: InterfaceCounters,
    pub(super) rx_buffer: Vec<u8>,
    pub(super) tx_buffer: Vec<u8>,
    pub(super) tx_batch: super::tx_batch::TxBatch,
}

impl std::fmt::Debug for Interface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interface")
            .field("medium", &self.medium)
            .field("mac", &self.mac)
            .field("addresses", &self.addresses)
            .field("routes", &self.routes.len())
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl Interface {
    /// An interface as `config` says, with a connected route for each
    /// address.
    pub fn new(config: InterfaceConfig) -> Interface {
        let mut iface = Interface {
            medium: config.medium,
            mac: config.mac,
            addresses: Vec::new(),
            routes: route::new_table(config.route_table),
            route_generation: 0,
            arp: ArpCache::new(config.arp),
            arp_hold: config.arp.request_interval * 3,
            checksum: config.checksum,
            reassembler: Reassembler::new(config.fragments),
            hop_limit: config.hop_limit,
            dont_frag: config.dont_frag,
            poll_budget: config.poll_budget.max(1),
            next_ident: 1,
            fragment_output: config.fragment_output,
            icmp_errors: super::icmp_error::TokenBucket::new(config.icmp_errors),
            awaiting_arp: HashMap::new(),
            counters: InterfaceCounters::default(),
            rx_buffer: Vec::new(),
            tx_buffer: Vec::new(),
            tx_batch: super::tx_batch::TxBatch::new(config.tx_batch),
        };
        for cidr in config.addresses {
            iface.add_address(cidr);
        }
        iface
    }

    /// Adds an address and the connected route to its network.
    pub fn add_address(&mut self, cidr: Ipv4Cidr) {
        self.addresses.push(cidr);
        self.route_generation += 1;
        let network = route::Ipv4Cidr::new(cidr.address().into(), cidr.prefix_len())
            .expect("a wire CIDR's prefix is at most 32");
        self.routes.add(Route {
            cidr: network,
            next_hop: NextHop::Direct,
        });
    }

    /// Adds (or replaces) a route.
    pub fn add_route(&mut self, route: Route) -> Option<Route> {
        self.route_generation += 1;
        self.routes.add(route)
    }

    /// Removes the route for exactly `cidr`.
    pub fn remove_route(&mut self, cidr: route::Ipv4Cidr) -> Option<Route> {
        self.route_generation += 1;
        self.routes.remove(cidr)
    }

    /// The route to `dst`: the one `cache` holds if still valid, else the
    /// table's (timed as [`crate::account::Block::RouteLookup`]), left in
    /// `cache`.
    pub(super) fn route_to(
        &self,
        dst: Ipv4Addr,
        cache: Option<&mut Option<route::cache::CachedRoute>>,
    ) -> Option<Route> {
        let generation = self.route_generation;
        if let Some(hit) = cache
            .as_ref()
            .and_then(|c| c.as_ref())
            .and_then(|c| c.valid_for(generation, dst))
        {
            return Some(hit);
        }
        let route = {
            let _b = crate::account::enter(crate::account::Block::RouteLookup);
            self.routes.lookup(dst)
        }?;
        if let Some(slot) = cache {
            *slot = Some(route::cache::CachedRoute::new(generation, dst, route));
        }
        Some(route)
    }

    /// The routing table's generation: advanced by every change to it.
    pub fn route_generation(&self) -> u64 {
        self.route_generation
    }

    /// The routing table (its structure and size; `--route-table`).
    pub fn route_table(&self) -> &dyn RouteTable {
        &*self.routes
    }

    /// Sends everything off the link to `gateway`.
    pub fn set_default_gateway(&mut self, gateway: Ipv4Address) -> Option<Route> {
        let default = route::Ipv4Cidr::new(Ipv4Addr::UNSPECIFIED, 0).expect("/0 is valid");
        self.route_generation += 1;
        self.routes.add(Route {
            cidr: default,
            next_hop: NextHop::Gateway(gateway.into()),
        })
    }

    /// Our addresses.
    pub fn addresses(&self) -> &[Ipv4Cidr] {
        &self.addresses
    }

    /// Our MAC address.
    pub fn mac(&self) -> EthernetAddress {
        self.mac
    }

    /// The medium.
    pub fn medium(&self) -> Medium {
        self.medium
    }

    /// The checksum method in force.
    pub fn checksum(&self) -> ChecksumMethod {
        self.checksum
    }

    /// The counters so far.
    pub fn counters(&self) -> &InterfaceCounters {
        &self.counters
    }

    /// The ARP cache (to read its statistics or seed it).
    pub fn arp_cache(&mut self) -> &mut ArpCache {
        &mut self.arp
    }

    /// Partial datagrams held for reassembly.
    pub fn partial_datagrams(&self) -> usize {
        self.reassembler.partial_datagrams()
    }

    /// Bytes of fragments held for reassembly.
    pub fn fragment_bytes_held(&self) -> usize {
        self.reassembler.bytes_held()
    }

    /// Whether `addr` is one of ours.
    pub fn has_address(&self, addr: Ipv4Address) -> bool {
        self.addresses.iter().any(|c| c.address() == addr)
    }

    /// Whether `addr` names one host, as TCP needs (RFC 1122
    /// §4.2.3.10): not 0.0.0.0, the limited broadcast, a multicast group,
    /// or the broadcast of one of our networks.
    pub fn is_unicast(&self, addr: Ipv4Address) -> bool {
        addr.is_unicast() && !self.addresses.iter().any(|c| c.broadcast() == Some(addr))
    }

    /// Whether a packet to `addr` is for us: one of our addresses, the
    /// limited broadcast, or one of our networks' broadcasts.
    pub fn accepts(&self, addr: Ipv4Address) -> bool {
        addr.is_broadcast()
            || self
                .addresses
                .iter()
                .any(|c| c.address() == addr || c.broadcast() == Some(addr))
    }

    /// Reads up to the poll budget of frames from `device` (header-only
    /// frames not counted, within a cap: see
    /// [`InterfaceConfig::poll_budget`]), answering ARP and echo requests
    /// and handing UDP and TCP to `upper`; first drops stale fragments and
    /// packets that waited too long for ARP. Returns how many frames were
    /// read.
    pub fn poll(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        upper: &mut dyn IpHandler,
    ) -> Result<usize, IfaceError> {
        let hold = self.arp_hold;
        let before = self.awaiting_arp.len();
        self.awaiting_arp
            .retain(|_, (since, _)| now.since(*since) < hold);
        let unresolved = before - self.awaiting_arp.len();
        self.counters.count_drops(
            super::counters::DropReason::ArpUnresolved,
            unresolved as u64,
        );
        let timed_out = self.reassembler.expire(now);
        self.counters.count_drops(
            super::counters::DropReason::FragmentTimeout,
            timed_out as u64,
        );
        let caps = device.capabilities();
        let max_frame = caps.max_frame;
        let vnet = caps.offloads.vnet_header;
        let mut buffer = std::mem::take(&mut self.rx_buffer);
        buffer.resize(max_frame, 0);
        let mut read = 0;
        let mut counted = 0;
        let cap = self.poll_budget.saturating_mul(SMALL_FRAMES_PER_BUDGET);
        let result = loop {
            if counted == self.poll_budget || read == cap {
                break Ok(read);
            }
            let received = {
                let _b = crate::account::enter(crate::account::Block::DeviceReceive);
                device.receive(&mut buffer)
            };
            match received {
                Ok(Some(len)) => {
                    crate::account::frame_in(len);
                    read += 1;
                    if len > SMALL_FRAME {
                        counted += 1;
                    }
                    self.counters.frames_in += 1;
                    self.counters.bytes_in += len as u64;
                    let (frame, transport) = if vnet {
                        match self.strip_vnet_header(&buffer[..len]) {
                            Some(stripped) => stripped,
                            None => continue,
                        }
                    } else {
                        (&buffer[..len], self.checksum)
                    };
                    if let Err(e) = self.process_frame(device, now, frame, transport, upper) {
                        break Err(e);
                    }
                }
                Ok(None) => break Ok(read),
                Err(e) => break Err(e.into()),
            }
        };
        self.rx_buffer = buffer;
        result
    }

    /// Reads and strips the virtio-net header before a received frame:
    /// the frame and how to check its transport checksum, counting
    /// super-packets and trusted checksums; `None` (a malformed drop) when
    /// the frame is shorter than the header.
    fn strip_vnet_header<'f>(&mut self, frame: &'f [u8]) -> Option<(&'f [u8], ChecksumMethod)> {
        let Some(header) = VirtioNetHdr::parse(frame) else {
            self.counters
                .count_drop(super::counters::DropReason::Malformed);
            return None;
        };
        if header.is_super_packet() {
            self.counters.super_packets_in += 1;
        }
        if header.checksum_trusted() {
            self.counters.checksums_trusted_in += 1;
        }
        let method = offload::receive_checksum(Some(&header), self.checksum);
        Some((&frame[VNET_HDR_LEN..], method))
    }
}
