//! Output fragmentation on in-memory devices: a 4000-byte UDP datagram
//! leaves as three fragments within the MTU (offsets on 8-byte bounds,
//! one identification, DF clear, MF on all but the last) and the other
//! stack reassembles it whole; TCP is never fragmented, and with the
//! switch off DF is respected and the datagram refused.

use stack::iface::udp::UdpSockets;
use stack::iface::{DropReason, IfaceError, Interface, InterfaceConfig};
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::time::Instant;
use stack::wire::{IpProtocol, Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
const NOW: Instant = Instant(1_000_000_000);

fn config(addr: Ipv4Addr) -> InterfaceConfig {
    InterfaceConfig::new(
        Medium::Ip,
        Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap(),
    )
}

#[test]
fn a_udp_datagram_over_the_mtu_leaves_in_fragments_and_is_reassembled_whole() {
    let (mut a, mut b) = (Interface::new(config(A)), Interface::new(config(B)));
    let mut dev = Loopback::new(Medium::Ip, 1500);
    let (mut a_udp, mut b_udp) = (UdpSockets::default(), UdpSockets::default());
    let sender = a_udp.bind(5000).unwrap();
    let receiver = b_udp.bind(6000).unwrap();
    let data: Vec<u8> = (0..4000u32).map(|i| (i * 7 % 253) as u8).collect();
    a_udp
        .send_to(sender, SocketAddrV4::new(B, 6000), &data)
        .unwrap();
    a_udp.flush(&mut a, &mut dev, NOW).unwrap();

    let fragments: Vec<Vec<u8>> = dev.outbound.drain(..).collect();
    assert_eq!(fragments.len(), 3, "4008 bytes of UDP in 1480-byte pieces");
    let field = |f: &[u8]| u16::from_be_bytes([f[6], f[7]]);
    for (i, f) in fragments.iter().enumerate() {
        assert!(f.len() <= 1500);
        assert_eq!(&f[4..6], &fragments[0][4..6], "one identification");
        assert_eq!(field(f) & 0x4000, 0, "DF clear");
        assert_eq!(field(f) & 0x2000 != 0, i < 2, "MF on all but the last");
        assert_eq!(usize::from(field(f) & 0x1fff) * 8, i * 1480, "offsets");
    }
    assert_eq!(fragments[2].len(), 20 + 4008 - 2 * 1480);
    let c = a.counters();
    assert_eq!((c.datagrams_fragmented, c.fragments_out), (1, 3));

    // B puts it back together, fragments in any order.
    let mut dev_b = Loopback::new(Medium::Ip, 1500);
    dev_b.inbound.extend(fragments.into_iter().rev());
    b.poll(&mut dev_b, NOW, &mut b_udp).unwrap();
    let (from, got) = b_udp.recv_from(receiver).unwrap().expect("the datagram");
    assert_eq!(from, SocketAddrV4::new(A, 5000));
    assert!(got == data, "every byte");
    assert_eq!(b.counters().datagrams_reassembled, 1);
}

#[test]
fn tcp_is_never_fragmented_and_with_the_switch_off_df_is_respected() {
    let mut a = Interface::new(config(A));
    let mut dev = Loopback::new(Medium::Ip, 1500);
    let err = a
        .send_ip(&mut dev, NOW, B.into(), IpProtocol::Tcp, 1481, |_, _| {})
        .unwrap_err();
    assert!(matches!(err, IfaceError::TooBig { len: 1501, .. }), "{err}");
    let mut strict = config(A);
    strict.fragment_output = false;
    let mut a = Interface::new(strict);
    let err = a
        .send_ip(&mut dev, NOW, B.into(), IpProtocol::Udp, 4008, |_, _| {})
        .unwrap_err();
    assert!(matches!(err, IfaceError::TooBig { .. }), "{err}");
    assert_eq!(a.counters().drops(DropReason::TooBig), 1);
    assert!(dev.outbound.is_empty());
}
