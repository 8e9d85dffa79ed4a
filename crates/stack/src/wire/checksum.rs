//! The Internet checksum (RFC 1071) in the variants issue 19 switches
//! between (`--checksum bytewise|rfc1071|incremental|offload`):
//!
//! - [`sum_bytewise`]: the textbook loop, one 16-bit word at a time;
//! - [`sum_rfc1071`]: RFC 1071's fast form, 32-bit words in the machine's
//!   byte order into a 64-bit accumulator, folded to 16 bits and swapped
//!   once at the end;
//! - [`update_incremental`]: RFC 1624's incremental update
//!   `HC' = ~(~HC + ~m + m')`, for a field rewritten in a packet whose
//!   checksum is already right: under [`ChecksumMethod::Incremental`] a
//!   connection's pure ACK written from its last one (the ACK template,
//!   `socket/tcp_ack_template.rs`, counted in the connection's
//!   `incremental_checksums`) and an ICMP echo reply made from its
//!   request;
//! - none, when the device offloads ([`ChecksumMethod::Offload`]).
//!
//! Sums here are one's-complement sums folded to 16 bits and *not*
//! complemented; the checksum field holds the complement ([`finish`]).

/// Which checksum computation the stack uses (issue 19's `--checksum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChecksumMethod {
    /// One 16-bit word at a time, the textbook loop.
    Bytewise,
    /// RFC 1071 folded over 64-bit words (the default: the fast one).
    #[default]
    Rfc1071,
    /// Full sums as [`ChecksumMethod::Rfc1071`], except where the stack
    /// sends a header it already summed with some fields rewritten: a
    /// connection's pure ACKs (ACK number, window, timestamps moved since
    /// its last) and ICMP echo replies, patched by RFC 1624's update
    /// instead of summed again. A data segment carries new payload and is
    /// summed whole; the stack does not forward, so no TTL is decremented.
    Incremental,
    /// The device computes and checks TCP and UDP checksums: nothing is
    /// verified on input, and output leaves the pseudo-header sum in the
    /// field (virtio-net's `NEEDS_CSUM` convention). The IPv4 header and
    /// ICMP, which no device offloads, are still summed with RFC 1071.
    Offload,
}

impl ChecksumMethod {
    /// The one's-complement sum of `data` (not complemented) by this
    /// method; [`ChecksumMethod::Offload`] sums with RFC 1071, for the
    /// headers a device does not offload.
    pub fn sum(self, data: &[u8]) -> u16 {
        let _b = crate::account::enter(crate::account::Block::Checksum);
        match self {
            ChecksumMethod::Bytewise => sum_bytewise(data),
            ChecksumMethod::Rfc1071 | ChecksumMethod::Incremental | ChecksumMethod::Offload => {
                sum_rfc1071(data)
            }
        }
    }

    /// Copies `src` into `dst` (of the same length) and returns the sum
    /// of the bytes, as [`ChecksumMethod::sum`] would: RFC 1071's form
    /// sums each block as it copies it, so the bytes are read once.
    ///
    /// Accounted as [`crate::account::Block::Checksum`]: on the send path
    /// the payload's copy into the frame is fused with its sum and cannot
    /// be timed apart, so that block then holds the copy too.
    pub fn copy_and_sum(self, dst: &mut [u8], src: &[u8]) -> u16 {
        let _b = crate::account::enter(crate::account::Block::Checksum);
        match self {
            ChecksumMethod::Bytewise => {
                dst.copy_from_slice(src);
                sum_bytewise(dst)
            }
            ChecksumMethod::Rfc1071 | ChecksumMethod::Incremental | ChecksumMethod::Offload => {
                copy_and_sum_rfc1071(dst, src)
            }
        }
    }

    /// Whether transport checksums are computed and verified in software
    /// (false when the device offloads them).
    pub fn in_software(self) -> bool {
        self != ChecksumMethod::Offload
    }

    /// The name issue 19's `--checksum` flag uses.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumMethod::Bytewise => "bytewise",
            ChecksumMethod::Rfc1071 => "rfc1071",
            ChecksumMethod::Incremental => "incremental",
            ChecksumMethod::Offload => "offload",
        }
    }

    /// The method a `--checksum` name selects.
    pub fn from_name(name: &str) -> Option<ChecksumMethod> {
        [
            ChecksumMethod::Bytewise,
            ChecksumMethod::Rfc1071,
            ChecksumMethod::Incremental,
            ChecksumMethod::Offload,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// Adds two one's-complement 16-bit sums (end-around carry).
pub fn combine(a: u16, b: u16) -> u16 {
    let (sum, carry) = a.overflowing_add(b);
    sum + carry as u16
}

/// The checksum field's value for a sum: its complement.
pub fn finish(sum: u16) -> u16 {
    !sum
}

/// The one's-complement sum of `data` one big-endian 16-bit word at a
/// time (an odd last byte is padded with a zero byte, RFC 1071 §4.1).
pub fn sum_bytewise(data: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    let mut i = 0;
    while i + 1 < data.len() {
        acc += u32::from(u16::from_be_bytes([data[i], data[i + 1]]));
        acc = (acc & 0xffff) + (acc >> 16);
        i += 2;
    }
    if i < data.len() {
        acc += u32::from(data[i]) << 8;
    }
    fold32(acc)
}

/// The one's-complement sum of `data` by RFC 1071's shortcuts: 32-bit
/// words in the machine's byte order (§2(B): the sum is byte-order
/// independent, so one swap at the end gives the network-order sum)
/// added into a 64-bit accumulator (§2(C): carries are deferred, 2³²
/// words before one could be lost), folded to 16 bits at the end. With no
/// carry to propagate per word the loop vectorizes: about twice as fast
/// as adding 64-bit big-endian words with end-around carry. The bulk is
/// read 32 bytes at a time as four 64-bit words, each adding its two
/// 32-bit halves into its own accumulator: whole vector loads, where
/// widening one 32-bit word at a time loaded half a register per add.
pub fn sum_rfc1071(data: &[u8]) -> u16 {
    let mut blocks = data.chunks_exact(32);
    let mut lanes = [0u64; 4];
    for block in blocks.by_ref() {
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            let w = u64::from_ne_bytes(word.try_into().expect("8 bytes"));
            *lane += (w & 0xffff_ffff) + (w >> 32);
        }
    }
    let mut acc: u64 = lanes.iter().sum();
    let mut words = blocks.remainder().chunks_exact(4);
    acc += words
        .by_ref()
        .map(|w| u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
        .sum::<u64>();
    let tail = words.remainder();
    if !tail.is_empty() {
        let mut padded = [0u8; 4];
        padded[..tail.len()].copy_from_slice(tail);
        acc += u64::from(u32::from_ne_bytes(padded));
    }
    fold64(acc)
}

/// [`sum_rfc1071`] of `src` while copying it into `dst` (the same
/// length; panics otherwise): each 32-byte block is loaded once, stored
/// and added, where a copy then a sum reads every byte twice.
pub fn copy_and_sum_rfc1071(dst: &mut [u8], src: &[u8]) -> u16 {
    assert_eq!(dst.len(), src.len(), "copy_and_sum lengths");
    let mut lanes = [0u64; 4];
    let mut to = dst.chunks_exact_mut(32);
    let mut from = src.chunks_exact(32);
    for (to_block, block) in to.by_ref().zip(from.by_ref()) {
        let block: &[u8; 32] = block.try_into().expect("32 bytes");
        to_block.copy_from_slice(block);
        for (lane, word) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            let w = u64::from_ne_bytes(word.try_into().expect("8 bytes"));
            *lane += (w & 0xffff_ffff) + (w >> 32);
        }
    }
    // The rest starts at a multiple of 32: an even offset, summed as is,
    // 8 bytes at a time (a copy of unknown length under 32 bytes is a
    // call to memmove; these are moves in registers).
    let mut acc: u64 = lanes.iter().sum();
    let mut to = to.into_remainder().chunks_exact_mut(8);
    let mut from = from.remainder().chunks_exact(8);
    for (to_word, word) in to.by_ref().zip(from.by_ref()) {
        let word: [u8; 8] = word.try_into().expect("8 bytes");
        to_word.copy_from_slice(&word);
        let w = u64::from_ne_bytes(word);
        acc += (w & 0xffff_ffff) + (w >> 32);
    }
    let tail = from.remainder();
    to.into_remainder().copy_from_slice(tail);
    combine(fold64(acc), sum_rfc1071(tail))
}

/// A 64-bit accumulator of native-order 32-bit words folded to the
/// 16-bit sum in network order.
fn fold64(acc: u64) -> u16 {
    let folded = (acc & 0xffff_ffff) + (acc >> 32);
    let folded = (folded & 0xffff_ffff) + (folded >> 32);
    u16::from_be(fold32(folded as u32))
}

/// The sum of a run of bytes that starts at an odd offset of the data
/// summed, from its own sum: its bytes sit in the other half of each
/// 16-bit word (RFC 1071 §2(B), byte-order independence).
pub fn at_odd_offset(sum: u16) -> u16 {
    sum.swap_bytes()
}

fn fold32(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// RFC 1624 eqn. 3: the checksum field after one 16-bit word of the
/// covered data changes from `old_word` to `new_word`, from the field's
/// old value `old_checksum`: `HC' = ~(~HC + ~m + m')`.
pub fn update_incremental(old_checksum: u16, old_word: u16, new_word: u16) -> u16 {
    !combine(combine(!old_checksum, !old_word), new_word)
}

/// [`update_incremental`] for a 32-bit field (two words).
pub fn update_incremental_u32(old_checksum: u16, old_value: u32, new_value: u32) -> u16 {
    let hc = update_incremental(
        old_checksum,
        (old_value >> 16) as u16,
        (new_value >> 16) as u16,
    );
    update_incremental(hc, old_value as u16, new_value as u16)
}

/// The one's-complement sum of the IPv4 pseudo-header (RFC 9293 §3.1,
/// RFC 768): source, destination, zero, protocol, and the TCP or UDP
/// length.
pub fn pseudo_header_sum(src: [u8; 4], dst: [u8; 4], protocol: u8, length: u16) -> u16 {
    let mut acc = u32::from(u16::from_be_bytes([src[0], src[1]]));
    acc += u32::from(u16::from_be_bytes([src[2], src[3]]));
    acc += u32::from(u16::from_be_bytes([dst[0], dst[1]]));
    acc += u32::from(u16::from_be_bytes([dst[2], dst[3]]));
    acc += u32::from(protocol);
    acc += u32::from(length);
    fold32(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 1071 §3's worked example: bytes 00 01 f2 03 f4 f5 f6 f7 sum to
    /// 0xddf2 (0x2ddf0 folded), in any word size.
    #[test]
    fn rfc1071_worked_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum_bytewise(&data), 0xddf2);
        assert_eq!(sum_rfc1071(&data), 0xddf2);
        assert_eq!(finish(sum_rfc1071(&data)), 0x220d);
        // Longer than one 64-bit word, with an odd tail.
        let mut long = data.repeat(3);
        long.push(0x01);
        assert_eq!(sum_rfc1071(&long), sum_bytewise(&long));
    }

    /// Every word 0xffff (a carry out of each addition) up to a 64 KB
    /// super-packet, at every length around the word boundaries: the
    /// deferred carries of the fast form lose none.
    #[test]
    fn all_ones_agree_with_the_textbook_loop_at_every_length() {
        let ones = vec![0xffu8; 65_536];
        for len in (0..64).chain([1459, 1460, 1461, 1480, 65_535, 65_536]) {
            assert_eq!(
                sum_rfc1071(&ones[..len]),
                sum_bytewise(&ones[..len]),
                "{len}"
            );
        }
    }

    /// RFC 1624 §4's example: HC = 0xDD2F, m = 0x5555, m' = 0x3285 gives
    /// HC' = 0x0000 by eqn. 3 (eqn. 2 would give the wrong 0xFFFF).
    #[test]
    fn rfc1624_worked_example() {
        assert_eq!(update_incremental(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    /// A real IPv4 header (a Linux SYN over TUN, see `tcp.rs`) verifies,
    /// and zeroing then refilling its checksum gives Linux's value.
    #[test]
    fn linux_ipv4_header_checksum_verifies() {
        let mut header = [
            0x45, 0x00, 0x00, 0x3c, 0xcf, 0x9a, 0x40, 0x00, 0x40, 0x06, 0x56, 0x83, 0x0a, 0x4e,
            0x00, 0x01, 0x0a, 0x4e, 0x00, 0x02,
        ];
        assert_eq!(sum_bytewise(&header), 0xffff);
        assert_eq!(sum_rfc1071(&header), 0xffff);
        header[10] = 0;
        header[11] = 0;
        assert_eq!(finish(sum_rfc1071(&header)), 0x5683);
    }

    #[test]
    fn names_round_trip() {
        for m in ["bytewise", "rfc1071", "incremental", "offload"] {
            assert_eq!(ChecksumMethod::from_name(m).unwrap().name(), m);
        }
        assert_eq!(ChecksumMethod::from_name("fast"), None);
    }

    proptest! {
        /// The textbook loop and the 64-bit fold agree on every input,
        /// whatever its length and alignment.
        #[test]
        fn bytewise_and_rfc1071_agree(data in proptest::collection::vec(any::<u8>(), 0..2000), skip in 0usize..8) {
            let data = &data[skip.min(data.len())..];
            prop_assert_eq!(sum_bytewise(data), sum_rfc1071(data));
        }

        /// The fused copy copies every byte and sums as the sum alone,
        /// whatever the length and alignment; two runs, the second at an
        /// odd or even offset, sum as the whole.
        #[test]
        fn copy_and_sum_agrees_with_the_sum(data in proptest::collection::vec(any::<u8>(), 0..2000), skip in 0usize..8, split in any::<prop::sample::Index>()) {
            let data = &data[skip.min(data.len())..];
            for method in [ChecksumMethod::Bytewise, ChecksumMethod::Rfc1071] {
                let mut copy = vec![0x5au8; data.len()];
                prop_assert_eq!(method.copy_and_sum(&mut copy, data), sum_bytewise(data));
                prop_assert_eq!(&copy[..], data);
            }
            let at = split.index(data.len() + 1);
            let (a, b) = data.split_at(at);
            let b_sum = if at % 2 == 1 { at_odd_offset(sum_rfc1071(b)) } else { sum_rfc1071(b) };
            let joined = combine(sum_rfc1071(a), b_sum);
            prop_assert_eq!(joined, sum_bytewise(data));
        }

        /// Patching one word with RFC 1624 gives the checksum a full
        /// recomputation gives (the two forms of one's-complement zero,
        /// 0x0000 and 0xFFFF, differ only when all data words are zero).
        #[test]
        fn incremental_agrees_with_recomputation(
            mut data in proptest::collection::vec(any::<u8>(), 2..600),
            at in any::<prop::sample::Index>(),
            new_word in any::<u16>(),
        ) {
            if data.len() % 2 == 1 { data.pop(); }
            let i = at.index(data.len() / 2) * 2;
            let old_checksum = finish(sum_rfc1071(&data));
            let old_word = u16::from_be_bytes([data[i], data[i + 1]]);
            data[i..i + 2].copy_from_slice(&new_word.to_be_bytes());
            let full = finish(sum_bytewise(&data));
            let patched = update_incremental(old_checksum, old_word, new_word);
            if data.iter().all(|&b| b == 0) {
                prop_assert!(patched == 0 || patched == 0xffff);
            } else {
                prop_assert_eq!(patched, full);
            }
        }
    }
}
