//! Levels the factor table and the `auto` rules fall back on.

/// Checksum offload stays as the device has it unless asked (the level of
/// runs stored before `--checksum-offload` existed).
pub fn checksum_offload_default() -> bool {
    true
}

/// A udp-stream sender connects its socket unless asked (the level of runs
/// stored before `--connect` existed).
pub fn connect_default() -> bool {
    true
}

/// The smallest SO_RCVLOWAT a stream receiver uses when `--rcvlowat` is `auto`.
///
/// A bulk receiver that the kernel wakes for every arriving segment reads
/// small pieces, acknowledges each one and so makes the sender's Nagle
/// release small segments: more wake-ups, ACKs and segments per byte on both
/// sides. Waking at 32 KiB (or on FIN, or when the window nearly closes,
/// which the kernel checks itself) halves the receiver's CPU per byte on
/// loopback at 1460-byte writes.
pub const AUTO_RCVLOWAT_MIN: u64 = 32 * 1024;

/// The largest SO_RCVLOWAT `auto` picks.
///
/// With large writes the wake-up itself is the cost: on loopback the
/// sender's CPU runs the receiver's TCP input and wakes the reader, and a
/// reader woken for every 64 KiB GSO segment costs the sender a wake-up per
/// segment. Waking once per 256 KiB raised 128 KiB-write loopback
/// throughput ~1.5x on the development VM; going higher gained nothing.
pub const AUTO_RCVLOWAT_MAX: u64 = 256 * 1024;

/// The default `--read-size`: room for two wake-ups' worth at the largest
/// auto SO_RCVLOWAT, so one read drains what one wake-up announced.
pub const DEFAULT_READ_SIZE: u64 = 512 * 1024;
