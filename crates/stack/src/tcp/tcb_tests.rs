use super::*;

#[test]
fn the_window_shift_is_the_smallest_that_covers_the_buffer_and_at_most_14() {
    assert_eq!(window_shift_for(0), 0);
    assert_eq!(window_shift_for(65_535), 0);
    assert_eq!(window_shift_for(65_536), 1);
    assert_eq!(window_shift_for(256 * 1024), 3);
    assert_eq!(window_shift_for(1 << 20), 5);
    assert_eq!(window_shift_for(4 << 20), 7);
    // RFC 7323 §2.3: 65535 << 14 is just under 2^30.
    assert_eq!(window_shift_for(1 << 30), MAX_WINDOW_SHIFT);
    assert_eq!(window_shift_for(usize::MAX), MAX_WINDOW_SHIFT);
}

#[test]
fn limit_clock_accrues_only_while_the_condition_holds() {
    let mut c = LimitClock::default();
    assert_eq!(c.update(true, Instant(100)), 0);
    assert_eq!(c.update(true, Instant(250)), 150);
    assert_eq!(c.update(false, Instant(400)), 150);
    assert_eq!(c.update(false, Instant(900)), 0);
    assert_eq!(c.update(true, Instant(1000)), 0);
    assert_eq!(c.update(false, Instant(1001)), 1);
}

#[test]
fn an_outgoing_segment_lends_its_payload_to_the_wire_repr() {
    let mut header = TcpRepr::bare(1, 2, SeqNumber(3));
    header.push = true;
    let seg = Segment::new(header, b"abc".to_vec());
    let repr = seg.repr();
    assert_eq!(repr.payload, b"abc");
    assert!(repr.push);
    assert_eq!(repr.segment_len(), 3);
}

/// An established connection with 3000 octets sent (SND.MAX) whose
/// retransmission timeout took SND.NXT back to SND.UNA, and the persist
/// timer armed (a small window held the go-back's segment: the review's
/// case).
fn gone_back_with_persist_armed() -> Connection {
    use super::super::isn::{FourTuple, IsnGenerator, IsnPolicy};
    let tuple = FourTuple {
        local: "10.0.0.1:40000".parse().unwrap(),
        remote: "10.0.0.2:5001".parse().unwrap(),
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [9; 32]);
    let mut c = Connection::open_active(TcpConfig::default(), tuple, &isn, Instant::ZERO);
    c.state = State::Established;
    c.send_buf = std::collections::VecDeque::from(vec![1u8; 3000]);
    c.snd_una = c.iss + 1;
    c.snd_max = c.snd_una + 3000usize;
    c.snd_nxt = c.snd_una;
    c.timers
        .arm_persist(Instant::ZERO, std::time::Duration::from_secs(1));
    c
}

/// A segment without data, a RST included, carries SND.MAX whenever no
/// window probe's octet is out, the persist timer armed or not: a peer
/// that holds all 3000 octets has RCV.NXT = SND.MAX and drops a RST at
/// SND.UNA unheard (RFC 9293 §3.10.7.4, RFC 5961 §3). Found by the
/// re-review of the abort's RST.
#[test]
fn with_the_persist_timer_armed_after_a_go_back_a_rst_still_carries_snd_max() {
    let mut c = gone_back_with_persist_armed();
    let snd_max = c.snd_max;
    let rst = c.abort().expect("a RST");
    assert_eq!(rst.header.seq_number, snd_max, "the RST's sequence number");
}

/// While a window probe's octet is out (SND.MAX = its octet + 1), the
/// segment without data stays at SND.NXT, the probe's octet: SND.MAX
/// lies beyond a closed window the peer did not take the octet into.
#[test]
fn while_a_window_probe_is_out_a_rst_carries_the_probes_octet() {
    let mut c = gone_back_with_persist_armed();
    c.snd_max = c.snd_nxt + 1usize;
    c.window_probe = Some(c.snd_nxt);
    let probe = c.snd_nxt;
    let rst = c.abort().expect("a RST");
    assert_eq!(rst.header.seq_number, probe);
}
