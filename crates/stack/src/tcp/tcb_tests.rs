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
