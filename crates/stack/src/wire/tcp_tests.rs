use super::*;

const LINUX_SRC: Ipv4Address = Ipv4Address::new(10, 78, 0, 1);
const LINUX_DST: Ipv4Address = Ipv4Address::new(10, 78, 0, 2);

/// The TCP part of a SYN Linux 6.18 sent into a TUN device
/// (`IFF_TUN|IFF_NO_PI`, 10.78.0.1/24, in a namespace) for a `connect()`
/// to 10.78.0.2:47123, read from the TUN fd on 2026-11-25. The IP header
/// was `45 00 00 3c cf 9a 40 00 40 06 56 83 0a 4e 00 01 0a 4e 00 02`.
/// Options, in Linux's order: MSS 1460, SACK-permitted, timestamps
/// (TSval 0xff8f4f98, TSecr 0), NOP, window scale 10.
const LINUX_SYN: [u8; 40] = [
    0x9e, 0x90, 0xb8, 0x13, 0x78, 0xda, 0xdb, 0x33, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0,
    0x3e, 0x93, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0xff, 0x8f, 0x4f, 0x98,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
];

/// The ACK Linux sent on loopback after a handshake (`tcpdump -x -i lo`,
/// 2026-11-25; NOP NOP timestamps), with its checksum field replaced by
/// the full checksum (loopback leaves only the pseudo-header sum there).
fn linux_ack() -> Vec<u8> {
    let mut seg = vec![
        0xcc, 0x48, 0xb8, 0x13, 0x21, 0x95, 0x03, 0x9b, 0x41, 0xd9, 0x2b, 0x6c, 0x80, 0x10, 0x00,
        0x40, 0xfe, 0x28, 0x00, 0x00, 0x01, 0x01, 0x08, 0x0a, 0xf6, 0x7e, 0x3f, 0x54, 0x50, 0xb7,
        0x43, 0x31,
    ];
    let lo = Ipv4Address::new(127, 0, 0, 1);
    TcpPacket::new_unchecked(&mut seg[..]).fill_checksum(lo, lo, ChecksumMethod::Rfc1071);
    seg
}

#[test]
fn parses_a_linux_syn() {
    let packet = TcpPacket::new_checked(&LINUX_SYN[..]).unwrap();
    assert!(packet.verify_checksum(LINUX_SRC, LINUX_DST, ChecksumMethod::Bytewise));
    let repr = TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Rfc1071).unwrap();
    assert_eq!(repr.src_port, 40592);
    assert_eq!(repr.dst_port, 47123);
    assert_eq!(repr.control, TcpControl::Syn);
    assert_eq!(repr.seq_number, SeqNumber(0x78da_db33));
    assert_eq!(repr.ack_number, None);
    assert_eq!(repr.window_len, 64240);
    assert_eq!(repr.max_seg_size, Some(1460));
    assert!(repr.sack_permitted);
    assert_eq!(repr.timestamp, Some((0xff8f_4f98, 0)));
    assert_eq!(repr.window_scale, Some(10));
    assert_eq!(repr.sack_ranges, [None; 3]);
    assert!(repr.payload.is_empty());
    assert_eq!(repr.header_len(), 40);
}

#[test]
fn emitting_linux_syn_repr_gives_linux_bytes() {
    let packet = TcpPacket::new_checked(&LINUX_SYN[..]).unwrap();
    let repr = TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Rfc1071).unwrap();
    for method in [
        ChecksumMethod::Bytewise,
        ChecksumMethod::Rfc1071,
        ChecksumMethod::Incremental,
    ] {
        let mut out = [0u8; 40];
        repr.emit(
            &mut TcpPacket::new_unchecked(&mut out[..]),
            LINUX_SRC,
            LINUX_DST,
            method,
        );
        assert_eq!(out, LINUX_SYN, "{method:?}");
    }
}

#[test]
fn a_corrupted_segment_fails_its_checksum_unless_offloaded() {
    let mut bytes = LINUX_SYN;
    bytes[30] ^= 0x01;
    let packet = TcpPacket::new_checked(&bytes[..]).unwrap();
    let err = TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Bytewise);
    assert_eq!(err, Err(WireError::Checksum));
    assert!(TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Offload).is_ok());
    // The same bytes between other addresses fail too: the pseudo-header counts.
    let packet = TcpPacket::new_checked(&LINUX_SYN[..]).unwrap();
    let other = Ipv4Address::new(10, 78, 0, 3);
    let err = TcpRepr::parse(&packet, LINUX_SRC, other, ChecksumMethod::Rfc1071);
    assert_eq!(err, Err(WireError::Checksum));
}

#[test]
fn parses_a_linux_ack_with_timestamps_and_emits_it_back() {
    let seg = linux_ack();
    let lo = Ipv4Address::new(127, 0, 0, 1);
    let packet = TcpPacket::new_checked(&seg[..]).unwrap();
    let repr = TcpRepr::parse(&packet, lo, lo, ChecksumMethod::Rfc1071).unwrap();
    assert_eq!(repr.control, TcpControl::None);
    assert_eq!(repr.ack_number, Some(SeqNumber(0x41d9_2b6c)));
    assert_eq!(repr.window_len, 64);
    assert_eq!(repr.timestamp, Some((0xf67e_3f54, 0x50b7_4331)));
    assert_eq!(repr.max_seg_size, None);
    let mut out = vec![0u8; repr.buffer_len()];
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut out[..]),
        lo,
        lo,
        ChecksumMethod::Bytewise,
    );
    assert_eq!(out, seg);
}

#[test]
fn sack_blocks_unknown_options_and_eol_padding() {
    let mut repr = TcpRepr::bare(1000, 2000, SeqNumber(5));
    repr.ack_number = Some(SeqNumber(100));
    repr.sack_ranges = [
        Some((SeqNumber(300), SeqNumber(400))),
        Some((SeqNumber(500), SeqNumber(600))),
        None,
    ];
    let mut buf = vec![0u8; repr.buffer_len()];
    assert_eq!(repr.header_len(), 20 + 4 + 16);
    let (a, b) = (LINUX_SRC, LINUX_DST);
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut buf[..]),
        a,
        b,
        ChecksumMethod::Rfc1071,
    );
    assert_eq!(&buf[20..24], &[1, 1, 5, 18]);
    let parsed = TcpRepr::parse(
        &TcpPacket::new_checked(&buf[..]).unwrap(),
        a,
        b,
        ChecksumMethod::Rfc1071,
    );
    assert_eq!(parsed.unwrap(), repr);

    // An unknown kind (30, MPTCP) is skipped by its length; EOL ends the
    // list and what follows it is ignored; four SACK blocks keep three.
    let mut options = vec![30, 4, 0xab, 0xcd, 5, 34];
    for edge in [10u32, 20, 30, 40, 50, 60, 70, 80] {
        options.extend_from_slice(&edge.to_be_bytes());
    }
    options.extend_from_slice(&[0, 2, 4, 0]);
    let seg = segment_with_options(&options);
    let packet = TcpPacket::new_checked(&seg[..]).unwrap();
    let parsed = TcpRepr::parse(&packet, a, b, ChecksumMethod::Offload).unwrap();
    assert_eq!(
        parsed.max_seg_size, None,
        "the MSS after EOL is padding, not an option"
    );
    let edges = |l, r| Some((SeqNumber(l), SeqNumber(r)));
    assert_eq!(
        parsed.sack_ranges,
        [edges(10, 20), edges(30, 40), edges(50, 60)]
    );
}

/// A bare ACK segment with the given option bytes (a multiple of 4).
fn segment_with_options(options: &[u8]) -> Vec<u8> {
    let mut seg = vec![0u8; 20 + options.len()];
    seg[0..4].copy_from_slice(&[0x03, 0xe8, 0x07, 0xd0]);
    seg[12] = (((20 + options.len()) / 4) as u8) << 4;
    seg[13] = 0x10;
    seg[20..].copy_from_slice(options);
    seg
}

#[test]
fn malformed_option_lengths_are_refused() {
    let cases: [(&[u8], &str); 5] = [
        (&[2, 3, 5, 1], "tcp option length wrong for its kind"),
        (&[2, 1, 0, 0], "tcp option length below 2"),
        (&[30, 9, 0, 0], "tcp option past the header's end"),
        (&[1, 1, 1, 8], "tcp option without a length"),
        (
            &[5, 11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            "tcp option length wrong for its kind",
        ),
    ];
    for (options, why) in cases {
        let seg = segment_with_options(options);
        let packet = TcpPacket::new_checked(&seg[..]).unwrap();
        let err = TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Offload);
        assert_eq!(err, Err(WireError::Malformed(why)), "{options:?}");
    }
    // A zero-length unknown option would never advance: refused, no loop.
    let seg = segment_with_options(&[99, 0, 0, 0]);
    let packet = TcpPacket::new_checked(&seg[..]).unwrap();
    assert!(TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Offload).is_err());
}

#[test]
fn flag_combinations_ports_and_lengths() {
    let mut seg = segment_with_options(&[]);
    seg[13] = FLAG_SYN | FLAG_FIN;
    let packet = TcpPacket::new_checked(&seg[..]).unwrap();
    let err = TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Offload);
    assert_eq!(
        err,
        Err(WireError::Malformed("tcp flags combine syn, fin and rst"))
    );
    let mut seg = segment_with_options(&[]);
    seg[2] = 0;
    seg[3] = 0;
    let packet = TcpPacket::new_checked(&seg[..]).unwrap();
    let err = TcpRepr::parse(&packet, LINUX_SRC, LINUX_DST, ChecksumMethod::Offload);
    assert_eq!(err, Err(WireError::Malformed("tcp port 0")));
    let mut seg = segment_with_options(&[]);
    seg[12] = 0x40;
    assert_eq!(
        TcpPacket::new_checked(&seg[..]).unwrap_err(),
        WireError::Malformed("tcp data offset below 5")
    );
    assert_eq!(
        TcpPacket::new_checked(&LINUX_SYN[..39]).unwrap_err(),
        WireError::Truncated("tcp options")
    );
    assert_eq!(
        TcpPacket::new_checked(&LINUX_SYN[..19]).unwrap_err(),
        WireError::Truncated("tcp header")
    );
}

#[test]
fn sack_blocks_that_do_not_fit_are_left_out() {
    let mut repr = TcpRepr::bare(1, 2, SeqNumber(0));
    repr.control = TcpControl::Syn;
    repr.max_seg_size = Some(1460);
    repr.sack_permitted = true;
    repr.timestamp = Some((1, 2));
    repr.window_scale = Some(7);
    let block = Some((SeqNumber(1), SeqNumber(2)));
    repr.sack_ranges = [block; 3];
    // 20 bytes of SYN options leave room for 2 blocks (4 + 16).
    assert_eq!(repr.header_len(), 60);
    let mut buf = vec![0u8; repr.buffer_len()];
    let (a, b) = (LINUX_SRC, LINUX_DST);
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut buf[..]),
        a,
        b,
        ChecksumMethod::Rfc1071,
    );
    let parsed = TcpRepr::parse(
        &TcpPacket::new_checked(&buf[..]).unwrap(),
        a,
        b,
        ChecksumMethod::Rfc1071,
    );
    assert_eq!(parsed.unwrap().sack_ranges, [block, block, None]);
}

#[test]
fn incremental_ack_rewrite_matches_recomputation() {
    let (a, b) = (LINUX_SRC, LINUX_DST);
    let mut repr = TcpRepr::bare(1, 2, SeqNumber(10));
    repr.ack_number = Some(SeqNumber(0xfffffff0));
    repr.window_len = 512;
    repr.payload = b"some payload, odd";
    let mut template = vec![0u8; repr.buffer_len()];
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut template[..]),
        a,
        b,
        ChecksumMethod::Rfc1071,
    );
    for (ack, window) in [
        (SeqNumber(0x10), 1024u16),
        (SeqNumber(0xfffffff0), 0),
        (SeqNumber(0), 0xffff),
    ] {
        let mut patched = template.clone();
        let mut view = TcpPacket::new_unchecked(&mut patched[..]);
        view.rewrite_ack_and_window(ack, window, (a, b), ChecksumMethod::Incremental);
        let mut full = template.clone();
        let mut view = TcpPacket::new_unchecked(&mut full[..]);
        view.rewrite_ack_and_window(ack, window, (a, b), ChecksumMethod::Bytewise);
        assert_eq!(patched, full, "ack {ack:?} window {window}");
        assert!(TcpPacket::new_checked(&patched[..])
            .unwrap()
            .verify_checksum(a, b, ChecksumMethod::Rfc1071));
    }
}

/// Timestamps rewritten in place: RFC 1624 gives the bytes a full sum
/// gives, with the option where this stack puts it (after two NOPs) and
/// at an odd offset (after one), where its values straddle 16-bit words.
#[test]
fn incremental_timestamp_rewrite_matches_recomputation() {
    let (a, b) = (LINUX_SRC, LINUX_DST);
    let mut repr = TcpRepr::bare(1, 2, SeqNumber(10));
    repr.ack_number = Some(SeqNumber(0x0102_0304));
    repr.timestamp = Some((0xfffe_0001, 7));
    let mut ours = vec![0u8; repr.buffer_len()];
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut ours[..]),
        a,
        b,
        ChecksumMethod::Rfc1071,
    );
    // NOP, timestamps, NOP: the option at offset 21, TSval at 23.
    let mut odd = ours.clone();
    odd[20..32].copy_from_slice(&[1, 8, 10, 0xff, 0xfe, 0, 1, 0, 0, 0, 7, 1]);
    TcpPacket::new_unchecked(&mut odd[..]).fill_checksum(a, b, ChecksumMethod::Rfc1071);
    for (template, at) in [(ours, 24), (odd, 23)] {
        assert_eq!(
            TcpPacket::new_unchecked(&template[..]).timestamps_at(),
            Some(at)
        );
        for values in [(0, 0), (0xffff_ffff, 0x8000_0000), (0x0001_fffe, 12345)] {
            let mut patched = template.clone();
            TcpPacket::new_unchecked(&mut patched[..]).rewrite_timestamps(
                at,
                values,
                (a, b),
                ChecksumMethod::Incremental,
            );
            let mut summed = template.clone();
            TcpPacket::new_unchecked(&mut summed[..]).rewrite_timestamps(
                at,
                values,
                (a, b),
                ChecksumMethod::Bytewise,
            );
            assert_eq!(patched, summed, "TSval at {at}, {values:?}");
            let parsed = TcpRepr::parse(
                &TcpPacket::new_checked(&patched[..]).unwrap(),
                a,
                b,
                ChecksumMethod::Rfc1071,
            )
            .unwrap();
            assert_eq!(parsed.timestamp, Some(values));
        }
    }
    let none = {
        let mut r = repr.clone();
        r.timestamp = None;
        let mut out = vec![0u8; r.buffer_len()];
        r.emit(
            &mut TcpPacket::new_unchecked(&mut out[..]),
            a,
            b,
            ChecksumMethod::Rfc1071,
        );
        out
    };
    assert_eq!(TcpPacket::new_unchecked(&none[..]).timestamps_at(), None);
}

#[test]
fn a_payload_in_two_parts_emits_the_bytes_of_the_whole() {
    let (a, b) = (LINUX_SRC, LINUX_DST);
    let payload: Vec<u8> = (0..1461u32).map(|i| (i * 13 % 256) as u8).collect();
    let mut repr = TcpRepr::bare(1, 2, SeqNumber(10));
    repr.ack_number = Some(SeqNumber(77));
    repr.timestamp = Some((5, 6));
    repr.payload = &payload;
    for method in [
        ChecksumMethod::Bytewise,
        ChecksumMethod::Rfc1071,
        ChecksumMethod::Offload,
    ] {
        let mut whole = vec![0u8; repr.buffer_len()];
        repr.emit(&mut TcpPacket::new_unchecked(&mut whole[..]), a, b, method);
        // The checksum summed while copying is the one summed after.
        let mut refilled = whole.clone();
        TcpPacket::new_unchecked(&mut refilled[..]).fill_checksum(a, b, method);
        assert_eq!(refilled, whole, "{method:?}");
        assert_eq!(&whole[whole.len() - payload.len()..], &payload[..]);
        // Every split, odd and even, the empty first or second part too.
        for split in [0, 1, 2, 3, 731, 1460, 1461] {
            let mut header = repr.clone();
            header.payload = &[];
            let mut parts = vec![0xeeu8; whole.len()];
            let (first, second) = payload.split_at(split);
            header.emit_with_payload_parts(
                &mut TcpPacket::new_unchecked(&mut parts[..]),
                a,
                b,
                method,
                [first, second],
            );
            assert_eq!(parts, whole, "{method:?} split at {split}");
        }
    }
    let mut corrupt = vec![0u8; repr.buffer_len()];
    let mut header = repr.clone();
    header.payload = &[];
    header.emit_with_payload_parts(
        &mut TcpPacket::new_unchecked(&mut corrupt[..]),
        a,
        b,
        ChecksumMethod::Rfc1071,
        [&payload[..700], &payload[700..]],
    );
    corrupt[40] ^= 1;
    assert!(!TcpPacket::new_checked(&corrupt[..])
        .unwrap()
        .verify_checksum(a, b, ChecksumMethod::Rfc1071));
}
