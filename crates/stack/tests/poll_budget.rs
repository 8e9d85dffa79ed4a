//! The interface's poll budget counts frames with a payload: a sender
//! reads every header-only frame waiting (pure ACKs) before it sends
//! again, within a cap, while a batch of data is still cut at the budget
//! (the receiver answers each batch with one ACK).

use stack::iface::interface::{Interface, SMALL_FRAME, SMALL_FRAMES_PER_BUDGET};
use stack::iface::upper::{Delivery, IpHandler};
use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::time::Instant;
use stack::wire::udp::UdpRepr;
use stack::wire::{ChecksumMethod, IpProtocol, Ipv4Address, Ipv4Cidr, Ipv4Packet, Ipv4Repr};

/// Counts the TCP segments handed up and their sizes.
#[derive(Default)]
struct Count {
    small: usize,
    large: usize,
}

impl IpHandler for Count {
    fn udp(&mut self, _ip: &Ipv4Repr, _udp: &UdpRepr<'_>) -> Delivery {
        Delivery::NoListener
    }

    fn tcp(&mut self, _ip: &Ipv4Repr, segment: &[u8], _c: ChecksumMethod) -> Delivery {
        if segment.len() + 20 > SMALL_FRAME {
            self.large += 1;
        } else {
            self.small += 1;
        }
        Delivery::Accepted
    }
}

const BUDGET: usize = 8;

/// An IPv4 packet to 10.0.0.2 carrying `tcp_len` bytes as TCP (the
/// interface does not parse TCP: the handler above only counts).
fn frame(tcp_len: usize) -> Vec<u8> {
    let repr = Ipv4Repr {
        src_addr: Ipv4Address::new(10, 0, 0, 1),
        dst_addr: Ipv4Address::new(10, 0, 0, 2),
        next_header: IpProtocol::Tcp,
        payload_len: tcp_len,
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 1,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        options_len: 0,
    };
    let mut buf = vec![0u8; 20 + tcp_len];
    repr.emit(
        &mut Ipv4Packet::new_unchecked(&mut buf[..]),
        ChecksumMethod::Rfc1071,
    );
    buf
}

fn interface() -> (Interface, Loopback) {
    let cidr = Ipv4Cidr::new(Ipv4Address::new(10, 0, 0, 2), 24).unwrap();
    let mut config = InterfaceConfig::new(Medium::Ip, cidr);
    config.poll_budget = BUDGET;
    (Interface::new(config), Loopback::new(Medium::Ip, 1500))
}

#[test]
fn header_only_frames_are_all_read_before_the_budget_of_data_frames_stops_a_poll() {
    let (mut iface, mut dev) = interface();
    let ack = frame(32); // a pure ACK with timestamps: 52 bytes
    let data = frame(32 + 1448); // a full segment: 1500 bytes
    assert!(ack.len() <= SMALL_FRAME && data.len() > SMALL_FRAME);
    // 50 ACKs waiting, then 20 data frames.
    dev.inbound.extend(std::iter::repeat_n(ack.clone(), 50));
    dev.inbound.extend(std::iter::repeat_n(data.clone(), 20));
    let mut up = Count::default();
    let read = iface.poll(&mut dev, Instant::ZERO, &mut up).unwrap();
    // Every ACK, and the budget of data frames; the rest wait.
    assert_eq!((up.small, up.large), (50, BUDGET));
    assert_eq!(read, 50 + BUDGET);
    assert_eq!(dev.inbound.len(), 20 - BUDGET);

    // Data alone is cut at the budget, as before.
    let (mut iface, mut dev) = interface();
    dev.inbound.extend(std::iter::repeat_n(data, 20));
    let mut up = Count::default();
    assert_eq!(
        iface.poll(&mut dev, Instant::ZERO, &mut up).unwrap(),
        BUDGET
    );
    assert_eq!(up.large, BUDGET);
}

#[test]
fn a_flood_of_header_only_frames_still_ends_a_poll_at_the_cap() {
    let (mut iface, mut dev) = interface();
    let cap = BUDGET * SMALL_FRAMES_PER_BUDGET;
    dev.inbound.extend(std::iter::repeat_n(frame(20), cap + 30));
    let mut up = Count::default();
    assert_eq!(iface.poll(&mut dev, Instant::ZERO, &mut up).unwrap(), cap);
    assert_eq!(up.small, cap);
    assert_eq!(dev.inbound.len(), 30);
}
