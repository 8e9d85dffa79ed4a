//! Probe records as a pcapng capture that Wireshark and tshark open: the
//! "LAN analyzer" view of Guerrero & Frieder, rebuilt from what the probes
//! saw at `net_dev_start_xmit` (every packet a device of the experiment
//! transmitted, once).
//!
//! The probes record ports, sequence and acknowledgment numbers, flags,
//! window and payload length, not addresses or payload bytes, so each packet
//! is synthesized: an IPv4 header from `10.0.0.1` (client) to `10.0.0.2`
//! (server, the side whose port is one of the trial's data ports), a TCP
//! header, and no payload (the original length says how much there was;
//! Wireshark shows "packet size limited during capture"). The TCP checksum
//! is left zero. Timestamps are the probes' monotonic clock moved to the
//! trial's wall-clock start.

use crate::probe_event::{ProbeEvent, ProbeId};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::io::Write;
use std::net::Ipv4Addr;
use std::time::Duration;

/// The synthesized client address.
pub const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// The synthesized server address.
pub const SERVER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// Why a capture could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The pcapng writer failed.
    #[error("writing pcapng: {0}")]
    Write(#[from] pcap_file::PcapError),
}

/// Writes the packets of `events` (their `net_dev_start_xmit` records) as
/// pcapng. `server_ports` tell the server side; `start_unix_s` is the wall
/// time of the first record. Returns the number of packets written.
pub fn write_pcapng<W: Write>(
    out: W,
    events: &[ProbeEvent],
    server_ports: &[u16],
    start_unix_s: f64,
) -> Result<usize, PcapError> {
    let mut pkts: Vec<&ProbeEvent> = events
        .iter()
        .filter(|e| e.probe_id() == ProbeId::DevStartXmit)
        .collect();
    pkts.sort_by_key(|e| e.ts_ns);
    let mut w = PcapNgWriter::new(out)?;
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::RAW,
        snaplen: 0,
        // pcap-file writes nanosecond timestamps; say so, or readers
        // assume microseconds.
        options: vec![InterfaceDescriptionOption::IfTsResol(9)],
    })?;
    let t0 = pkts.first().map_or(0, |e| e.ts_ns);
    for e in &pkts {
        let from_server = server_ports.contains(&e.sport);
        let (src, dst) = if from_server {
            (SERVER, CLIENT)
        } else {
            (CLIENT, SERVER)
        };
        let data = headers(e, src, dst);
        let wall = start_unix_s.max(0.0) + (e.ts_ns - t0) as f64 / 1e9;
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_secs_f64(wall),
            original_len: (data.len() + e.len as usize) as u32,
            data: Cow::Owned(data),
            options: vec![],
        })?;
    }
    Ok(pkts.len())
}

/// An IPv4 + TCP header for one record.
fn headers(e: &ProbeEvent, src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    let total = (40 + e.len as usize).min(u16::MAX as usize) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[6] = 0x40; // don't fragment
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let mut tcp = [0u8; 20];
    tcp[0..2].copy_from_slice(&e.sport.to_be_bytes());
    tcp[2..4].copy_from_slice(&e.dport.to_be_bytes());
    tcp[4..8].copy_from_slice(&e.seq.to_be_bytes());
    tcp[8..12].copy_from_slice(&e.ack.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = e.flags;
    tcp[14..16].copy_from_slice(&e.win.to_be_bytes());
    let mut v = ip.to_vec();
    v.extend_from_slice(&tcp);
    v
}

/// The Internet checksum (RFC 1071) of a header.
fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32)
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_checksum_verifies_to_zero() {
        let e = ProbeEvent {
            ts_ns: 0,
            id: 0,
            len: 1448,
            seq: 1,
            ack: 2,
            ifindex: 0,
            x: [0; 4],
            sport: 40000,
            dport: 5201,
            win: 100,
            probe: ProbeId::DevStartXmit as u8,
            flags: 0x18,
            cpu: 0,
            tid: 0,
        };
        let h = headers(&e, CLIENT, SERVER);
        assert_eq!(h.len(), 40);
        assert_eq!(checksum(&h[..20]), 0);
        assert_eq!(u16::from_be_bytes([h[2], h[3]]), 1488);
    }
}
