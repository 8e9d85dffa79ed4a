use super::super::isn::{FourTuple, IsnGenerator, IsnPolicy};
use super::super::state::State;
use super::super::tcb::{Connection, Segment, TcpConfig};
use crate::time::Instant;
use std::collections::VecDeque;

/// An established connection whose send ring has wrapped: 2,500 octets
/// acknowledged from a 4,096-octet ring, 6,000 queued in all, so the
/// unacknowledged 3,500 lie in two slices.
fn wrapped(in_place: bool) -> Connection {
    let tuple = FourTuple {
        local: "10.0.0.1:40000".parse().unwrap(),
        remote: "10.0.0.2:5001".parse().unwrap(),
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [3; 32]);
    let mut c = Connection::open_active(TcpConfig::default(), tuple, &isn, Instant::ZERO);
    c.state = State::Established;
    c.snd_mss = 1460;
    let bytes: Vec<u8> = (0..6000u32).map(|i| (i * 7 % 251) as u8).collect();
    c.send_buf = VecDeque::with_capacity(4096);
    c.send_buf.extend(&bytes[..3000]);
    c.send_buf.drain(..2500);
    c.send_buf.extend(&bytes[3000..]);
    c.snd_una = c.iss + 2501;
    c.snd_nxt = c.snd_una;
    c.snd_max = c.snd_una;
    c.leave_payloads_in_send_buffer(in_place);
    c
}

/// Sends the whole queue in MSS-sized segments.
fn send_all(c: &mut Connection) -> Vec<Segment> {
    let mut out = Vec::new();
    while c.unsent() > 0 {
        let n = c.unsent().min(1460);
        c.send_range(c.snd_nxt, n, Instant::ZERO, &mut out);
    }
    out
}

fn in_place_bytes(c: &Connection, seg: &Segment) -> Vec<u8> {
    let p = c.in_place_payload(seg).expect("a payload in the buffer");
    assert_eq!(p.seq, seg.header.seq_number);
    p.parts.concat()
}

#[test]
fn in_place_segments_name_the_bytes_a_copying_connection_copies() {
    let mut copying = wrapped(false);
    let mut in_place = wrapped(true);
    assert!(
        !in_place.send_buf.as_slices().1.is_empty(),
        "the ring has wrapped"
    );
    let copied = send_all(&mut copying);
    let named = send_all(&mut in_place);
    assert_eq!(copied.len(), 3, "1460 + 1460 + 580 octets");
    assert_eq!(named.len(), copied.len());
    let mut wrapped_parts = 0;
    for (c, n) in copied.iter().zip(&named) {
        assert_eq!(c.header, n.header);
        assert!(n.payload.is_empty());
        assert_eq!(n.payload_len(), c.payload.len());
        assert_eq!(copying.in_place_payload(c), None, "it has its own copy");
        assert_eq!(in_place_bytes(&in_place, n), c.payload);
        let p = in_place.in_place_payload(n).unwrap();
        if !p.parts[0].is_empty() && !p.parts[1].is_empty() {
            wrapped_parts += 1;
        }
    }
    assert_eq!(wrapped_parts, 1, "one segment spans the wrap");
    assert_eq!(
        copying.counters().segments_out,
        in_place.counters().segments_out
    );
}

#[test]
fn an_ack_since_the_segment_leaves_its_unacknowledged_rest_or_nothing() {
    let mut c = wrapped(true);
    let segments = send_all(&mut c);
    let whole: Vec<u8> = c.send_buf.iter().copied().collect();
    // 1,000 octets acknowledged: the first segment keeps its last 460.
    c.send_buf.drain(..1000);
    c.snd_una = c.snd_una + 1000;
    let rest = c.in_place_payload(&segments[0]).unwrap();
    assert_eq!(rest.seq, c.snd_una);
    assert_eq!(rest.parts.concat(), whole[1000..1460]);
    assert_eq!(in_place_bytes(&c, &segments[1]), whole[1460..2920]);
    // The first segment wholly acknowledged: nothing left of it.
    c.send_buf.drain(..460);
    c.snd_una = c.snd_una + 460;
    assert_eq!(c.in_place_payload(&segments[0]), None);
    assert_eq!(in_place_bytes(&c, &segments[2]), whole[2920..]);
    // A cleared buffer (a reset) names nothing.
    c.send_buf.clear();
    assert_eq!(c.in_place_payload(&segments[2]), None);
}
