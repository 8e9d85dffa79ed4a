//! Frames a round holds back (`InterfaceConfig::tx_batch`) change when
//! they are written, never what is written: two stacks on one manual
//! clock move the same data with batches of 32 frames and with none, and
//! the sender's frames are the same bytes in the same order; every frame
//! a round built is on the device when `poll` returns, a window of more
//! than one batch included; and a frame too big to hold (an offload
//! TUN's 64 KB super-packet) does not overtake the frames held before it.

use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

const SENDER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>, seed: u8, batch: usize) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let iface = InterfaceConfig {
        tx_batch: batch,
        ..InterfaceConfig::new(Medium::Ip, cidr)
    };
    let tcp = TcpConfig {
        send_buffer: 1 << 20,
        recv_buffer: 1 << 20,
        ..TcpConfig::default()
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [seed; 32]);
    let clock: Arc<dyn Clock> = clock;
    Stack::new(Loopback::new(Medium::Ip, 1500), iface, tcp, isn, clock)
}

/// What one transfer of `bytes` showed: every frame the sender wrote, in
/// order, and the most it wrote in one `poll`.
struct Transfer {
    frames: Vec<Vec<u8>>,
    most_in_one_poll: usize,
    received: Vec<u8>,
}

fn transfer(batch: usize, bytes: usize) -> Transfer {
    let clock = Arc::new(ManualClock::new(Instant(1_000_000_000)));
    let mut tx = stack_at(SENDER, clock.clone(), 1, batch);
    let mut rx = stack_at(RECEIVER, clock.clone(), 2, batch);
    let listener = rx.tcp.listen(5001, 4).unwrap();
    let c = tx
        .tcp
        .connect(SENDER, SocketAddrV4::new(RECEIVER, 5001), clock.now())
        .unwrap();
    let data: Vec<u8> = (0..bytes)
        .map(|i| (i % 251) as u8 ^ (i >> 10) as u8)
        .collect();
    let mut out = Transfer {
        frames: Vec::new(),
        most_in_one_poll: 0,
        received: Vec::new(),
    };
    let (mut sent, mut s) = (0, None);
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..100_000 {
        if out.received.len() == bytes {
            break;
        }
        if sent < bytes {
            sent += tx.tcp.send(c, &data[sent..]).unwrap();
        }
        let now = clock.now();
        tx.poll(now).unwrap();
        let written: Vec<Vec<u8>> = tx.device.outbound.drain(..).collect();
        out.most_in_one_poll = out.most_in_one_poll.max(written.len());
        out.frames.extend(written.iter().cloned());
        rx.device.inbound.extend(written);
        rx.poll(now).unwrap();
        s = s.or_else(|| rx.tcp.accept(listener).unwrap());
        if let Some(s) = s {
            loop {
                let n = rx.tcp.recv(s, &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.received.extend_from_slice(&buf[..n]);
            }
            rx.poll(now).unwrap();
        }
        let acks: Vec<Vec<u8>> = rx.device.outbound.drain(..).collect();
        if out.frames.is_empty() && acks.is_empty() {
            continue;
        }
        if acks.is_empty() && tx.device.inbound.is_empty() {
            // Nothing in flight either way: a timer (delayed ACK) is next.
            if let Some(next) = [tx.tcp.poll_at(), rx.tcp.poll_at()]
                .into_iter()
                .flatten()
                .min()
            {
                clock.set(next.max(clock.now()));
            }
        }
        tx.device.inbound.extend(acks);
    }
    assert_eq!(out.received, data, "every byte, in order");
    out
}

#[test]
fn batched_frames_are_the_same_frames_in_the_same_order_all_out_by_the_end_of_each_poll() {
    let bytes = 3_000_000;
    let batched = transfer(32, bytes);
    let unbatched = transfer(1, bytes);
    assert!(
        batched.most_in_one_poll > 32,
        "a round wrote {} frames at most: the test wants more than one batch",
        batched.most_in_one_poll
    );
    assert_eq!(batched.frames.len(), unbatched.frames.len());
    assert!(
        batched.frames == unbatched.frames,
        "the sender's frames differ with batching"
    );
    assert_eq!(batched.most_in_one_poll, unbatched.most_in_one_poll);
}

#[test]
fn a_frame_too_big_to_hold_leaves_after_the_frames_held_before_it() {
    use stack::iface::Interface;
    use stack::wire::IpProtocol;
    let cidr = Ipv4Cidr::new(Ipv4Address::from(SENDER), 24).unwrap();
    let mut iface = Interface::new(InterfaceConfig::new(Medium::Ip, cidr));
    // The offload TUN's device: super-packets of up to 64 KB.
    let mut device = Loopback::with_offloads(Medium::Ip, 1500);
    let (now, dst) = (Instant(0), Ipv4Address::from(RECEIVER));
    iface.begin_round();
    iface
        .send_ip(&mut device, now, dst, IpProtocol::Udp, 8, |_, out| {
            out.copy_from_slice(&[0x13, 0x89, 0x13, 0x89, 0, 8, 0, 0])
        })
        .unwrap();
    assert!(device.outbound.is_empty(), "the datagram is held");
    // A TCP super-segment whose frame (virtio-net header and 65,535-byte
    // IP packet) is over the 64 KB a batch holds.
    let tcp_len = 65_535 - 20;
    iface
        .send_ip_cut(
            &mut device,
            now,
            None,
            dst,
            IpProtocol::Tcp,
            tcp_len,
            Some(1448),
            |_, out| {
                out.fill(0);
                out[12] = 5 << 4; // a 20-byte TCP header
            },
        )
        .unwrap();
    let lens: Vec<usize> = device.outbound.iter().map(Vec::len).collect();
    let vnet = lens[0] - (20 + 8);
    assert_eq!(
        lens,
        vec![vnet + 20 + 8, vnet + 65_535],
        "the held datagram first, then the super-packet"
    );
    iface.end_round(&mut device).unwrap();
    assert_eq!(device.outbound.len(), 2, "nothing else was held");
}
