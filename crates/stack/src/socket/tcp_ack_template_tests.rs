use super::AckTemplate;
use crate::wire::checksum::{combine, pseudo_header_sum, sum_bytewise};
use crate::wire::tcp::{TcpPacket, TcpRepr};
use crate::wire::{ChecksumMethod, Ipv4Address, SeqNumber};
use proptest::prelude::*;

const SRC: Ipv4Address = Ipv4Address([10, 9, 0, 2]);
const DST: Ipv4Address = Ipv4Address([10, 9, 0, 1]);

/// A pure ACK as a receiver sends it.
fn ack(ack: u32, window: u16, timestamp: Option<(u32, u32)>) -> TcpRepr<'static> {
    let mut h = TcpRepr::bare(80, 49152, SeqNumber(0x1234_5678));
    h.ack_number = Some(SeqNumber(ack));
    h.window_len = window;
    h.timestamp = timestamp;
    h
}

/// `h` emitted whole by `method`.
fn full(h: &TcpRepr<'static>, method: ChecksumMethod) -> Vec<u8> {
    let mut out = vec![0u8; h.buffer_len()];
    h.emit(
        &mut TcpPacket::new_unchecked(&mut out[..]),
        SRC,
        DST,
        method,
    );
    out
}

/// `h` written as the socket layer writes it under `Incremental`: from
/// `template` when it fits (true returned), else emitted whole and kept
/// as the new template.
fn through(template: &mut Option<AckTemplate>, h: &TcpRepr<'static>) -> (Vec<u8>, bool) {
    let mut out = vec![0xa5u8; h.buffer_len()];
    if let Some(t) = template.as_mut().filter(|t| t.fits(h)) {
        t.write(h, &mut out, (SRC, DST));
        return (out, true);
    }
    let out = full(h, ChecksumMethod::Incremental);
    *template = Some(AckTemplate::new(h, &out));
    (out, false)
}

fn checksum_of(segment: &[u8]) -> u16 {
    u16::from_be_bytes([segment[16], segment[17]])
}

#[test]
fn a_pure_ack_and_nothing_else_takes_a_template() {
    let h = ack(1, 2, None);
    assert!(AckTemplate::takes(&h, 0));
    assert!(!AckTemplate::takes(&h, 1), "data");
    let mut syn = h.clone();
    syn.control = crate::wire::tcp::TcpControl::Syn;
    assert!(!AckTemplate::takes(&syn, 0));
    let mut rst = TcpRepr::bare(80, 49152, SeqNumber(1));
    rst.control = crate::wire::tcp::TcpControl::Rst;
    assert!(!AckTemplate::takes(&rst, 0), "a RST without ACK");
    assert!(!AckTemplate::takes(&TcpRepr::bare(1, 2, SeqNumber(3)), 0));
}

#[test]
fn only_ack_window_and_timestamp_values_may_differ_from_the_template() {
    let base = ack(100, 500, Some((1, 2)));
    let t = AckTemplate::new(&base, &full(&base, ChecksumMethod::Rfc1071));
    assert!(t.fits(&ack(7, 9, Some((3, 4)))));
    assert!(!t.fits(&ack(7, 9, None)), "the timestamps option gone");
    let mut other = ack(100, 500, Some((1, 2)));
    other.seq_number = SeqNumber(1);
    assert!(!t.fits(&other), "another sequence number");
    let mut other = ack(100, 500, Some((1, 2)));
    other.sack_ranges[0] = Some((SeqNumber(5), SeqNumber(9)));
    assert!(!t.fits(&other), "SACK blocks");
    let mut other = ack(100, 500, Some((1, 2)));
    other.push = true;
    assert!(!t.fits(&other), "PSH");
}

/// RFC 1624 §3's corner: a checksum whose full recomputation is 0x0000
/// (the data sums to 0xFFFF) must not come out as 0xFFFF (-0, eqn. 2's
/// answer); and a template whose checksum is 0x0000 patches from there.
#[test]
fn a_patched_checksum_of_zero_is_zero_as_the_full_sum_gives() {
    for timestamp in [None, Some((0x0102_0304, 0x0506_0708))] {
        let base = ack(0, 0x4000, timestamp);
        let mut template = None;
        let (first, patched) = through(&mut template, &base);
        assert!(!patched);
        // The sum with an ACK number of 0, then the low word of the ACK
        // number that brings it to 0xFFFF: a checksum field of 0x0000.
        let mut zeroed = first.clone();
        zeroed[16..18].fill(0);
        let len = zeroed.len() as u16;
        let sum = combine(
            pseudo_header_sum(SRC.0, DST.0, 6, len),
            sum_bytewise(&zeroed),
        );
        let to_zero = ack(u32::from(0xffff - sum), 0x4000, timestamp);
        let want = full(&to_zero, ChecksumMethod::Bytewise);
        assert_eq!(checksum_of(&want), 0x0000, "the full sum gives 0x0000");
        let (got, patched) = through(&mut template, &to_zero);
        assert!(patched);
        assert_eq!(got, want, "patched to 0x0000, not 0xFFFF");
        // From a template whose checksum is 0x0000.
        let next = ack(0x8000_0001, 0x0100, timestamp.map(|(v, e)| (v + 1, e)));
        let (got, patched) = through(&mut template, &next);
        assert!(patched);
        assert_eq!(got, full(&next, ChecksumMethod::Bytewise));
    }
}

fn pure_ack() -> impl Strategy<Value = TcpRepr<'static>> {
    (
        any::<u32>(),
        any::<u16>(),
        any::<(u32, u32)>(),
        prop::option::weighted(0.1, (any::<u32>(), 1u32..5000)),
    )
        .prop_map(|(a, w, ts, sack)| {
            let mut h = ack(a, w, Some(ts));
            h.sack_ranges[0] = sack.map(|(l, n)| (SeqNumber(l), SeqNumber(l.wrapping_add(n))));
            h
        })
}

proptest! {
    /// Every pure ACK written from the template is byte for byte the
    /// segment a full sum gives (checksum included), whatever the values
    /// and whenever the template is rebuilt (SACK blocks come and go; the
    /// timestamps option is on or off for the whole connection).
    #[test]
    fn every_patched_ack_equals_a_full_recomputation(
        acks in prop::collection::vec(pure_ack(), 1..60),
        timestamps in any::<bool>(),
    ) {
        let mut template = None;
        let mut previous: Option<TcpRepr<'static>> = None;
        for mut h in acks {
            if !timestamps {
                h.timestamp = None;
            }
            let (got, patched) = through(&mut template, &h);
            // Patched exactly when only the rewritten fields moved.
            let same_rest = previous.as_ref().is_some_and(|p| p.sack_ranges == h.sack_ranges);
            prop_assert_eq!(patched, same_rest);
            prop_assert_eq!(&got, &full(&h, ChecksumMethod::Bytewise));
            prop_assert!(TcpPacket::new_checked(&got[..])
                .unwrap()
                .verify_checksum(SRC, DST, ChecksumMethod::Rfc1071));
            previous = Some(h);
        }
    }
}
