//! layer-rate: how many packets and bytes per second a host moves at one
//! protocol layer, by frame size (Guerrero & Frieder Figs 1–4). Each layer
//! rides on a stream test: `tcp` is tcp-stream with one write per segment
//! (NODELAY), `udp` is udp-stream, and `ip` and `eth` are udp-stream's
//! sequenced datagrams carried in raw IPv4 datagrams (protocol 253, RFC
//! 3692's experimentation number) or raw Ethernet frames (AF_PACKET,
//! EtherType 0x88B5, the IEEE's local experimental type, sent to the
//! broadcast address of the veth pair). `--write-size` is the frame size on
//! the wire without the FCS; each layer's payload is what its headers leave.

use crate::error::EngineError;
use crate::report::SideReport;
use record::{ProtocolLayer, TestKind, TrialParams};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// EtherType of tcplab's raw frames (IEEE 802 local experimental 1).
pub const ETHERTYPE: u16 = 0x88B5;
/// IP protocol number of tcplab's raw datagrams (RFC 3692).
pub const IP_PROTO: i32 = 253;
/// Smallest frame accepted (Ethernet's 64-byte minimum less the FCS).
pub const MIN_FRAME: u64 = 60;
/// Largest frame accepted (1500-byte MTU plus the Ethernet header).
pub const MAX_FRAME: u64 = 1514;

/// The trial as its carrier test runs it: layer-rate becomes tcp-stream or
/// udp-stream with the layer's payload size; other tests are unchanged.
pub fn effective(p: &TrialParams) -> TrialParams {
    let mut q = p.clone();
    if p.test != TestKind::LayerRate {
        return q;
    }
    let layer = p.layer.unwrap_or(ProtocolLayer::Tcp);
    match layer {
        ProtocolLayer::Tcp => {
            q.test = TestKind::TcpStream;
            q.nodelay = true;
            q.write_size = layer.payload(p.write_size, 1);
        }
        ProtocolLayer::Udp | ProtocolLayer::Ip | ProtocolLayer::Eth => {
            q.test = TestKind::UdpStream;
            q.write_size = layer.payload(p.write_size, super::udp::HEADER as u64);
        }
    }
    q
}

/// Whether a (carrier) trial sends raw datagrams instead of UDP.
pub fn is_raw(p: &TrialParams) -> bool {
    matches!(p.layer, Some(ProtocolLayer::Eth | ProtocolLayer::Ip))
}

/// The device the route to `ip` leaves by, in the calling thread's
/// namespace (from /proc/thread-self/net/route: the longest matching
/// prefix, or the device that owns `ip`).
pub fn device_toward(ip: Ipv4Addr) -> Result<String, EngineError> {
    let text = std::fs::read_to_string("/proc/thread-self/net/route")
        .map_err(|e| EngineError::io("reading the routing table", e))?;
    device_in(&text, ip).ok_or_else(|| {
        EngineError::Protocol(format!(
            "no network device leads to {ip}: layer-rate needs two namespaces (--topology veth)"
        ))
    })
}

/// The device of the longest prefix matching `ip` in a /proc/net/route
/// table (None when only `lo` or nothing matches).
fn device_in(text: &str, ip: Ipv4Addr) -> Option<String> {
    let target = u32::from(ip);
    // The kernel prints each address's network-order bytes read as a
    // host-order number.
    let hex = |s: &str| {
        u32::from_str_radix(s, 16)
            .ok()
            .map(|v| u32::from_be_bytes(v.to_ne_bytes()))
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (dev, dest, mask) = (f.first()?, hex(f.get(1)?)?, hex(f.get(7)?)?);
            (target & mask == dest & mask).then(|| (mask.count_ones(), dev.to_string()))
        })
        .max_by_key(|(bits, _)| *bits)
        .map(|(_, dev)| dev)
        .filter(|d| d != "lo")
}

fn ifindex(dev: &str) -> Result<u32, EngineError> {
    let name = std::ffi::CString::new(dev)
        .map_err(|_| EngineError::Protocol(format!("bad device name {dev:?}")))?;
    // SAFETY: name is a valid NUL-terminated string.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(EngineError::io(
            &format!("looking up device {dev}"),
            std::io::Error::last_os_error(),
        )),
        i => Ok(i),
    }
}

/// The link-layer address of every station on `dev` (broadcast).
fn broadcast_on(dev: &str) -> Result<SockAddr, EngineError> {
    let index = ifindex(dev)?;
    // SAFETY: a zeroed sockaddr_storage holds a valid sockaddr_ll once its
    // fields are set; the length written is that of sockaddr_ll.
    let (_, addr) = unsafe {
        SockAddr::try_init(|storage, len| {
            let ll = storage.cast::<libc::sockaddr_ll>();
            (*ll).sll_family = libc::AF_PACKET as u16;
            (*ll).sll_protocol = ETHERTYPE.to_be();
            (*ll).sll_ifindex = index as i32;
            (*ll).sll_halen = 6;
            (*ll).sll_addr = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0];
            *len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            Ok(())
        })
    }
    .map_err(|e| EngineError::io("building the link-layer address", e))?;
    Ok(addr)
}

fn v4(ip: IpAddr) -> Result<Ipv4Addr, EngineError> {
    match ip {
        IpAddr::V4(a) => Ok(a),
        IpAddr::V6(_) => Err(EngineError::Protocol(
            "layer-rate runs over IPv4 only".into(),
        )),
    }
}

fn raw_socket(domain: i32, ty: Type, proto: i32) -> Result<Socket, EngineError> {
    Socket::new(Domain::from(domain), ty, Some(Protocol::from(proto))).map_err(|e| {
        EngineError::io(
            "opening a raw socket (layer-rate eth and ip need CAP_NET_RAW: run as root)",
            e,
        )
    })
}

/// The receiving socket of a raw layer at the server address `ip`: an
/// AF_PACKET socket bound to tcplab's EtherType on the device that holds
/// `ip`, or a raw IPv4 socket for protocol 253.
pub fn raw_receiver(p: &TrialParams, ip: IpAddr) -> Result<Socket, EngineError> {
    let ip = v4(ip)?;
    let s = match p.layer {
        Some(ProtocolLayer::Eth) => {
            let s = raw_socket(libc::AF_PACKET, Type::DGRAM, i32::from(ETHERTYPE.to_be()))?;
            // bind(2) on a packet socket uses the device and EtherType of
            // the address and ignores the link-layer address.
            let addr = broadcast_on(&device_toward(ip)?)?;
            s.bind(&addr)
                .map_err(|e| EngineError::io("binding the AF_PACKET socket", e))?;
            s
        }
        _ => {
            let s = raw_socket(libc::AF_INET, Type::RAW, IP_PROTO)?;
            s.bind(&SocketAddr::new(ip.into(), 0).into())
                .map_err(|e| EngineError::io("binding the raw IP socket", e))?;
            s
        }
    };
    crate::sockopt::apply_buffers(&s, p)?;
    Ok(s)
}

/// The sending socket of a raw layer toward the server address `ip`, and
/// the destination each datagram must name (AF_PACKET sockets cannot
/// connect). The AF_PACKET sender uses protocol 0, so it receives nothing
/// (not even copies of its own frames).
pub fn raw_sender(p: &TrialParams, ip: IpAddr) -> Result<(Socket, Option<SockAddr>), EngineError> {
    let ip = v4(ip)?;
    let (s, dest) = match p.layer {
        Some(ProtocolLayer::Eth) => {
            let s = raw_socket(libc::AF_PACKET, Type::DGRAM, 0)?;
            let dest = broadcast_on(&device_toward(ip)?)?;
            (s, Some(dest))
        }
        _ => {
            let s = raw_socket(libc::AF_INET, Type::RAW, IP_PROTO)?;
            s.connect(&SocketAddr::new(ip.into(), 0).into())
                .map_err(|e| EngineError::io("connecting the raw IP socket", e))?;
            (s, None)
        }
    };
    crate::sockopt::apply_buffers(&s, p)?;
    Ok((s, dest))
}

/// Adds the layer-rate metrics, per frame, to a trial combined as its
/// carrier test (`m`): packets per second received and sent, frame and
/// payload bit rates, and sender CPU per packet.
pub fn add_metrics(
    p: &TrialParams,
    m: &mut BTreeMap<String, f64>,
    snd: &SideReport,
) -> Result<(), EngineError> {
    let layer = p.layer.unwrap_or(ProtocolLayer::Tcp);
    let get = |k: &str| m.get(k).copied();
    let delay = get("delay_s")
        .filter(|d| *d > 0.0)
        .ok_or_else(|| EngineError::Endpoint("layer-rate: nothing was received".into()))?;
    let (received, sent) = match layer {
        ProtocolLayer::Tcp => (
            get("receiver_data_segs_in").unwrap_or(0.0),
            get("data_segs_out").unwrap_or(0.0),
        ),
        _ => (
            get("datagrams_received").unwrap_or(0.0),
            get("datagrams_sent").unwrap_or(0.0),
        ),
    };
    if received <= 0.0 {
        return Err(EngineError::Endpoint(
            "layer-rate: no packets were received".into(),
        ));
    }
    let payload_bytes = get("bytes").unwrap_or(0.0);
    // Bytes of whole frames: each packet's payload plus its headers.
    let frame_bytes = payload_bytes + received * layer.header_bytes() as f64;
    let pps = received / delay;
    m.insert("packets".into(), received);
    m.insert("packets_per_s".into(), pps);
    m.insert("frame_bytes".into(), frame_bytes / received);
    m.insert("payload_bps".into(), payload_bytes * 8.0 / delay);
    m.insert("throughput_bps".into(), frame_bytes * 8.0 / delay);
    if snd.wall_s > 0.0 {
        m.insert("sent_packets_per_s".into(), sent / snd.wall_s);
    }
    if sent > 0.0 {
        m.insert("cpu_sender_us_per_packet".into(), snd.cpu_s() * 1e6 / sent);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_layer_carries_what_its_headers_leave() {
        let mut p = TrialParams::defaults(TestKind::LayerRate);
        p.write_size = 1514;
        for (layer, test, payload) in [
            (ProtocolLayer::Tcp, TestKind::TcpStream, 1448),
            (ProtocolLayer::Udp, TestKind::UdpStream, 1472),
            (ProtocolLayer::Ip, TestKind::UdpStream, 1480),
            (ProtocolLayer::Eth, TestKind::UdpStream, 1500),
        ] {
            p.layer = Some(layer);
            let q = effective(&p);
            assert_eq!((q.test, q.write_size), (test, payload), "{layer}");
            assert_eq!(q.nodelay, layer == ProtocolLayer::Tcp);
        }
        // A 60-byte frame leaves TCP no payload: one byte, a larger frame.
        p.write_size = 60;
        p.layer = Some(ProtocolLayer::Tcp);
        assert_eq!(effective(&p).write_size, 1);
        p.layer = Some(ProtocolLayer::Udp);
        assert_eq!(effective(&p).write_size, 18);
        // Other tests pass through.
        let s = TrialParams::defaults(TestKind::TcpStream);
        assert_eq!(effective(&s), s);
    }

    #[test]
    fn the_longest_prefix_names_the_device() {
        // As a little-endian kernel prints it: 10.77.0.0/24 on the veth
        // end, a default route via eth0.
        let table =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                     tcplab-1-a\t00004D0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        if cfg!(target_endian = "little") {
            assert_eq!(
                device_in(table, Ipv4Addr::new(10, 77, 0, 2)).as_deref(),
                Some("tcplab-1-a")
            );
            assert_eq!(
                device_in(table, Ipv4Addr::new(8, 8, 8, 8)).as_deref(),
                Some("eth0")
            );
        }
        assert_eq!(device_in("Iface\n", Ipv4Addr::new(10, 0, 0, 1)), None);
    }
}
