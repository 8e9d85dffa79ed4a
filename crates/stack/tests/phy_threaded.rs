//! The driver thread against Linux: a TUN device in a namespace of its own
//! (`tcplab-thr-<pid>-<n>`), its system calls on the `tcplab-driver`
//! thread, the frames crossing to the test's thread through the queues.
//! Skipped, with a message, where /dev/net/tun or namespaces are missing.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::phy::threaded::{DriverThread, QueueStats, QUEUE_FRAMES};
use stack::phy::tun::TunKind;
use stack::phy::Device;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

const LINUX: Ipv4Addr = Ipv4Addr::new(10, 9, 7, 1);
const US: Ipv4Addr = Ipv4Addr::new(10, 9, 7, 2);

/// The one's-complement sum of `data` (RFC 1071), not complemented.
fn ones_sum(data: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in data.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// An IPv4 ICMP echo request from us to Linux with sequence number `seq`.
fn echo_request(id: u16, seq: u16) -> Vec<u8> {
    let mut icmp = vec![8, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&seq.to_be_bytes());
    icmp.extend_from_slice(&[0x5a; 56]);
    let sum = !ones_sum(&icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    let mut h = vec![0u8; 20];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
    h[6] = 0x40;
    h[8] = 64;
    h[9] = 1;
    h[12..16].copy_from_slice(&US.octets());
    h[16..20].copy_from_slice(&LINUX.octets());
    let sum = !ones_sum(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h.extend_from_slice(&icmp);
    h
}

/// The sequence number of `p` if it is an echo reply with identifier `id`.
fn reply_seq(p: &[u8], id: u16) -> Option<u16> {
    (p.len() >= 28 && p[9] == 1 && p[20] == 0 && p[24..26] == id.to_be_bytes())
        .then(|| u16::from_be_bytes([p[26], p[27]]))
}

/// Bursts of echo requests, of [`BURST`] each.
const BURSTS: u16 = 10;
/// Requests in a burst: below Linux's TUN ring of 500.
const BURST: u16 = 200;

/// What one run of the bursts and of the flood saw: the queues' counts
/// after each, or the deadline one of them missed.
type Run = Result<(QueueStats, QueueStats), String>;

/// Bursts of echo requests through a fresh driver thread, each answered
/// whole before the next, then a flood faster than the driver writes.
fn bursts_then_flood(ns: &Netns) -> Run {
    // A fresh device per run: the queues' counts and depths start at zero
    // (the last run's device went with its driver thread).
    let dev = ns.device(TunKind::Tun, "10.9.7.1/24");
    let mut dev = DriverThread::spawn(dev).expect("spawning the driver thread");
    let id = 0x7c2b;
    let mut seen = vec![false; usize::from(BURSTS * BURST)];
    let mut replies = 0usize;
    let mut buf = vec![0u8; dev.capabilities().max_frame];
    // Bursts below a queue's length, each answered whole before the next:
    // neither our queues nor Linux's TUN ring (500 frames) overflow, so
    // every request must come back exactly once.
    for b in 0..BURSTS {
        for seq in b * BURST..(b + 1) * BURST {
            dev.transmit(&echo_request(id, seq)).expect("transmit");
        }
        let want = usize::from((b + 1) * BURST);
        let deadline = Instant::now() + Duration::from_secs(5);
        while replies < want {
            if Instant::now() >= deadline {
                return Err(format!("{replies} of {want} replies in 5 s"));
            }
            match dev.receive(&mut buf).expect("receive") {
                Some(n) => {
                    if let Some(seq) = reply_seq(&buf[..n], id) {
                        assert!(!seen[usize::from(seq)], "reply {seq} twice");
                        seen[usize::from(seq)] = true;
                        replies += 1;
                    }
                }
                None => {
                    dev.wait(Some(Duration::from_millis(50))).expect("wait");
                }
            }
        }
    }
    let bursts = dev.stats();

    // Queueing faster than the driver writes fills the outbound queue, and
    // `transmit` waits for room (back-pressure) instead of dropping.
    let n = 8 * QUEUE_FRAMES as u16;
    for seq in 0..n {
        dev.transmit(&echo_request(id + 1, seq)).expect("transmit");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while dev.stats().outbound_frames < bursts.outbound_frames + u64::from(n) {
        if Instant::now() >= deadline {
            return Err(format!("the flood not written in 5 s: {:?}", dev.stats()));
        }
        while dev.receive(&mut buf).expect("receive").is_some() {}
        dev.wait(Some(Duration::from_millis(10))).expect("wait");
    }
    Ok((bursts, dev.stats()))
}

#[test]
fn echo_requests_cross_the_driver_thread_both_ways_and_the_queues_count_them() {
    // Whether a burst queues, the flood fills the queue, and the replies
    // come within 5 s depend on the test's thread outpacing the driver's
    // on a CPU of its own: one timed test at a time, on a quiet host (the
    // lock held until the namespace is gone).
    let _timing = testkit::timing_lock();
    let Some(ns) = Netns::new("thr") else { return };
    let what = "bursts and a flood through the driver thread";
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || {
        bursts_then_flood(&ns)
    });
    eprintln!("{what}: {}", q.describe());
    let (s, flooded) = q.value.unwrap_or_else(|late| panic!("{late}"));
    let total = u64::from(BURSTS * BURST);
    assert_eq!(s.outbound_frames, total, "{s:?}");
    assert!(s.inbound_frames >= total, "{s:?}");
    assert!(s.outbound_max_depth > 1, "a burst never queued: {s:?}");
    assert!(s.outbound_max_depth <= QUEUE_FRAMES as u64, "{s:?}");
    assert!(s.inbound_max_depth <= QUEUE_FRAMES as u64, "{s:?}");
    assert!(s.driver_wakeups > 0, "{s:?}");
    assert_eq!(s.outbound_full, 0, "{s:?}");

    let s = flooded;
    assert!(s.outbound_full > 0, "the queue never filled: {s:?}");
    assert_eq!(s.outbound_max_depth, QUEUE_FRAMES as u64, "{s:?}");
}

#[test]
fn dropping_the_stacks_side_ends_the_driver_thread_and_removes_the_device() {
    let Some(ns) = Netns::new("thr") else { return };
    let dev = ns.device(TunKind::Tun, "10.9.7.1/24");
    let name = dev.name().to_string();
    let dev = DriverThread::spawn(dev).expect("spawning the driver thread");
    let (up, _) = ns.exec(&["ip", "link", "show", "dev", &name]);
    assert!(up, "{name} missing while the driver runs");
    drop(dev);
    // The driver thread owned the fd and is joined by drop: the device is
    // gone now, not some time later.
    let (still, _) = ns.exec(&["ip", "link", "show", "dev", &name]);
    assert!(!still, "{name} outlived the driver thread");
}
