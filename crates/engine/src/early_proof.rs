//! A key holder's proof in its first frame (`auth_hello`), so that the
//! server can tell it from a flood before the handshake's round trip ends.
//!
//! The server bounds the handshakes under way and makes room for a new one
//! by closing the oldest ([`crate::pending`]). At a real round-trip time a
//! key holder's handshake waits one RTT between the server's challenge and
//! its proof, and a flood that reopens connections faster than that would
//! close it every time. With an early proof — an HMAC under the key over
//! the client's nonce and the time — the server knows from the first frame
//! that the connection holds a key, and a flood without the key never
//! closes it.
//!
//! An early proof only exempts a handshake from being closed for room; the
//! handshake itself is unchanged and still needs the full
//! challenge-response. A proof recorded on the path and replayed is
//! refused: its nonce is remembered while its time is within
//! [`EARLY_WINDOW_S`] of the server's clock (at most [`EARLY_AHEAD_S`]
//! ahead), and a proof outside that is not taken (the handshake then goes
//! on unexempt, so clock skew costs only the exemption). Each key has its
//! own [`EARLY_PER_KEY`] nonces, and each source (address, or IPv6 /64)
//! at most [`EARLY_PER_SOURCE`] of a key's: a key's holder who sends
//! proofs as fast as it can fills only its own source's part, so other
//! keys, and the key's holders elsewhere, keep their exemption.

use crate::auth::{from_hex, to_hex, Key, Nonce, KEY_BYTES};
use crate::server_state::rate_key;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

/// What the early proof is computed over, before the nonce and the time.
pub const EARLY_LABEL: &[u8] = b"tcplab control v3: early proof";

/// How far (in seconds) an early proof's time may be from the server's
/// clock.
pub const EARLY_WINDOW_S: u64 = 300;

/// How far (in seconds) an early proof's time may be ahead of the server's
/// clock (a time far ahead would be remembered the longer).
pub const EARLY_AHEAD_S: u64 = 30;

/// Nonces of one key's early proofs remembered at most; past this, new
/// early proofs of that key are not taken until old ones expire (its
/// handshakes go on unexempt).
pub const EARLY_PER_KEY: usize = 16_384;

/// Nonces of one key's early proofs remembered at most from one source
/// (address, or IPv6 /64): an eighth of [`EARLY_PER_KEY`], so that eight
/// sources at the least are needed to fill a key's.
pub const EARLY_PER_SOURCE: usize = EARLY_PER_KEY / 8;

/// The early proof in an `auth_hello`: the client's clock and an
/// HMAC-SHA256 under the key over the nonce and that time, in hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlyProof {
    /// Seconds since the Unix epoch on the client's clock.
    pub time: u64,
    /// The HMAC, 64 hex digits.
    pub proof: String,
}

/// Seconds since the Unix epoch now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The time as the second input of the key's HMAC.
fn time_block(time: u64) -> Nonce {
    let mut b = [0u8; KEY_BYTES];
    b[..8].copy_from_slice(&time.to_be_bytes());
    b
}

impl EarlyProof {
    /// The proof of `key` over the client's `nonce` at `time`.
    pub fn new(key: &Key, nonce: &Nonce, time: u64) -> EarlyProof {
        EarlyProof {
            time,
            proof: to_hex(&key.proof(EARLY_LABEL, nonce, &time_block(time))),
        }
    }

    /// Whether this is `key`'s proof over `nonce` (in constant time).
    pub fn verifies(&self, key: &Key, nonce: &Nonce) -> bool {
        let proof = from_hex(&self.proof).unwrap_or_default();
        key.verify(EARLY_LABEL, nonce, &time_block(self.time), &proof)
    }
}

/// Why an early proof was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotTaken {
    /// Not the key's proof over this nonce and time.
    Wrong,
    /// Its time is more than [`EARLY_WINDOW_S`] behind the server's or
    /// [`EARLY_AHEAD_S`] ahead.
    OutOfWindow,
    /// This nonce's proof was already taken (a replay).
    Replayed,
    /// [`EARLY_PER_KEY`] of this key's proofs are remembered already, or
    /// [`EARLY_PER_SOURCE`] from this source.
    Full,
}

/// The nonces of the early proofs taken, per key, each until its time
/// leaves the window, so a proof is taken once.
#[derive(Default)]
pub struct EarlyProofs {
    per_key: HashMap<usize, KeyProofs>,
}

/// One key's remembered nonces.
#[derive(Default)]
struct KeyProofs {
    seen: HashSet<Nonce>,
    /// (when it may be forgotten, nonce, its source), oldest first.
    expiry: VecDeque<(u64, Nonce, IpAddr)>,
    /// Nonces remembered per source (address, or IPv6 /64).
    per_source: HashMap<IpAddr, usize>,
}

impl EarlyProofs {
    /// Takes `early` as the proof of `key` (index `which` in the server's
    /// key ring) over `nonce` at the server's time `now`, sent from
    /// `from`, or says why not.
    pub fn take(
        &mut self,
        which: usize,
        key: &Key,
        nonce: &Nonce,
        early: &EarlyProof,
        now: u64,
        from: IpAddr,
    ) -> Result<(), NotTaken> {
        if !early.verifies(key, nonce) {
            return Err(NotTaken::Wrong);
        }
        if now.saturating_sub(early.time) > EARLY_WINDOW_S
            || early.time.saturating_sub(now) > EARLY_AHEAD_S
        {
            return Err(NotTaken::OutOfWindow);
        }
        self.per_key
            .entry(which)
            .or_default()
            .take(nonce, early.time, now, rate_key(from))
    }

    /// Nonces remembered, over all keys.
    pub fn len(&self) -> usize {
        self.per_key.values().map(|k| k.seen.len()).sum()
    }

    /// Whether none is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl KeyProofs {
    fn take(&mut self, nonce: &Nonce, time: u64, now: u64, source: IpAddr) -> Result<(), NotTaken> {
        while let Some(&(until, n, from)) = self.expiry.front() {
            if until >= now {
                break;
            }
            self.expiry.pop_front();
            self.seen.remove(&n);
            if let Some(c) = self.per_source.get_mut(&from) {
                *c -= 1;
                if *c == 0 {
                    self.per_source.remove(&from);
                }
            }
        }
        if self.seen.contains(nonce) {
            return Err(NotTaken::Replayed);
        }
        let mine = self.per_source.get(&source).copied().unwrap_or(0);
        if self.seen.len() >= EARLY_PER_KEY || mine >= EARLY_PER_SOURCE {
            return Err(NotTaken::Full);
        }
        *self.per_source.entry(source).or_default() += 1;
        // Past this, its time is out of the window: no need to remember.
        // (The queue is in the order taken, so one whose time is ahead may
        // wait behind an earlier one: kept longer, never forgotten early.)
        let until = time.max(now) + EARLY_WINDOW_S;
        self.seen.insert(*nonce);
        self.expiry.push_back((until, *nonce, source));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));

    fn key(b: u8) -> Key {
        Key::from_line(&format!("{b:02x}").repeat(32)).unwrap()
    }

    #[test]
    fn a_proof_is_taken_once_within_the_window_and_only_under_its_key() {
        let (k, other) = (key(7), key(8));
        let nonce = [3u8; 32];
        let now = 1_800_000_000;
        let p = EarlyProof::new(&k, &nonce, now - 10);
        let mut seen = EarlyProofs::default();
        assert_eq!(
            seen.take(1, &other, &nonce, &p, now, SRC),
            Err(NotTaken::Wrong),
            "another key's"
        );
        assert_eq!(
            seen.take(0, &k, &[4u8; 32], &p, now, SRC),
            Err(NotTaken::Wrong),
            "another nonce's"
        );
        let mut moved = p.clone();
        moved.time += 1;
        assert_eq!(
            seen.take(0, &k, &nonce, &moved, now, SRC),
            Err(NotTaken::Wrong)
        );
        assert_eq!(seen.take(0, &k, &nonce, &p, now, SRC), Ok(()));
        assert_eq!(
            seen.take(0, &k, &nonce, &p, now + 1, SRC),
            Err(NotTaken::Replayed)
        );
        // Too old or too far ahead: not taken, whatever the nonce.
        let old = EarlyProof::new(&k, &[5u8; 32], now - EARLY_WINDOW_S - 1);
        assert_eq!(
            seen.take(0, &k, &[5u8; 32], &old, now, SRC),
            Err(NotTaken::OutOfWindow)
        );
        let ahead = EarlyProof::new(&k, &[6u8; 32], now + EARLY_AHEAD_S + 1);
        assert_eq!(
            seen.take(0, &k, &[6u8; 32], &ahead, now, SRC),
            Err(NotTaken::OutOfWindow)
        );
        // Remembered while its time is in the window, forgotten after:
        // by then a replay is out of the window anyway.
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen.take(0, &k, &nonce, &p, now + EARLY_WINDOW_S - 10, SRC),
            Err(NotTaken::Replayed)
        );
        let later = now + 2 * EARLY_WINDOW_S;
        let fresh = EarlyProof::new(&k, &[9u8; 32], later);
        assert_eq!(seen.take(0, &k, &[9u8; 32], &fresh, later, SRC), Ok(()));
        assert_eq!(seen.len(), 1, "the first nonce is forgotten");
        assert_eq!(
            seen.take(0, &k, &nonce, &p, later, SRC),
            Err(NotTaken::OutOfWindow)
        );
    }

    /// One key's holders sending proofs as fast as they can from eight
    /// sources fill its quota only: another key's proofs are still taken.
    #[test]
    fn one_key_filling_its_quota_leaves_the_others_theirs() {
        let (a, b) = (key(7), key(8));
        let now = 1_800_000_000;
        let mut seen = EarlyProofs::default();
        for i in 0..EARLY_PER_KEY as u32 {
            let mut n = [0u8; 32];
            n[..4].copy_from_slice(&i.to_be_bytes());
            let p = EarlyProof::new(&a, &n, now + EARLY_AHEAD_S);
            let from = IpAddr::from([10, 0, 1, (i as usize / EARLY_PER_SOURCE) as u8]);
            assert_eq!(seen.take(0, &a, &n, &p, now, from), Ok(()));
        }
        let n = [0xffu8; 32];
        let p = EarlyProof::new(&a, &n, now);
        assert_eq!(seen.take(0, &a, &n, &p, now, SRC), Err(NotTaken::Full));
        let p = EarlyProof::new(&b, &n, now);
        assert_eq!(seen.take(1, &b, &n, &p, now, SRC), Ok(()));
        // Its proofs are forgotten once their time has left the window.
        let later = now + EARLY_AHEAD_S + EARLY_WINDOW_S + 1;
        let p = EarlyProof::new(&a, &n, later);
        assert_eq!(seen.take(0, &a, &n, &p, later, SRC), Ok(()));
    }

    /// One holder of a key sending proofs as fast as it can from one
    /// source fills that source's part only: the same key's holder
    /// elsewhere is still exempt (before: the whole key's 16,384).
    #[test]
    fn one_source_filling_its_part_leaves_the_keys_other_holders_theirs() {
        let k = key(7);
        let now = 1_800_000_000;
        let mut seen = EarlyProofs::default();
        let flood = IpAddr::from([10, 0, 0, 9]);
        let taken = (0..EARLY_PER_KEY as u32)
            .filter(|i| {
                let mut n = [0u8; 32];
                n[..4].copy_from_slice(&i.to_be_bytes());
                let p = EarlyProof::new(&k, &n, now);
                seen.take(0, &k, &n, &p, now, flood).is_ok()
            })
            .count();
        assert_eq!(taken, EARLY_PER_SOURCE);
        let n = [0xeeu8; 32];
        let p = EarlyProof::new(&k, &n, now);
        assert_eq!(seen.take(0, &k, &n, &p, now, SRC), Ok(()));
        // An IPv6 /64 is one source.
        let v6 = |i: u16| -> IpAddr { format!("2001:db8::{i:x}").parse().unwrap() };
        let taken = (0..EARLY_PER_SOURCE as u32 + 10)
            .filter(|i| {
                let mut n = [1u8; 32];
                n[..4].copy_from_slice(&i.to_be_bytes());
                let p = EarlyProof::new(&k, &n, now);
                seen.take(0, &k, &n, &p, now, v6(*i as u16)).is_ok()
            })
            .count();
        assert_eq!(taken, EARLY_PER_SOURCE);
        // Forgotten with their time, the source's part is free again.
        let later = now + EARLY_WINDOW_S + 1;
        let p = EarlyProof::new(&k, &n, later);
        assert_eq!(seen.take(0, &k, &n, &p, later, flood), Ok(()));
    }
}
