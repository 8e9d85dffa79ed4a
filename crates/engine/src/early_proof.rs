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
//! own [`EARLY_PER_KEY`] nonces: a key's holder who sends proofs as fast
//! as it can fills only its own, and other keys keep their exemption.

use crate::auth::{from_hex, to_hex, Key, Nonce, KEY_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};
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
    /// [`EARLY_PER_KEY`] of this key's proofs are remembered already.
    Full,
}

/// The nonces of the early proofs taken, per key, each until its time
/// leaves the window, so a proof is taken once.
#[derive(Default)]
pub struct EarlyProofs {
    per_key: std::collections::HashMap<usize, KeyProofs>,
}

/// One key's remembered nonces.
#[derive(Default)]
struct KeyProofs {
    seen: HashSet<Nonce>,
    /// (when it may be forgotten, nonce), oldest first.
    expiry: VecDeque<(u64, Nonce)>,
}

impl EarlyProofs {
    /// Takes `early` as the proof of `key` (index `which` in the server's
    /// key ring) over `nonce` at the server's time `now`, or says why not.
    pub fn take(
        &mut self,
        which: usize,
        key: &Key,
        nonce: &Nonce,
        early: &EarlyProof,
        now: u64,
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
            .take(nonce, early.time, now)
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
    fn take(&mut self, nonce: &Nonce, time: u64, now: u64) -> Result<(), NotTaken> {
        while let Some(&(until, n)) = self.expiry.front() {
            if until >= now {
                break;
            }
            self.expiry.pop_front();
            self.seen.remove(&n);
        }
        if self.seen.contains(nonce) {
            return Err(NotTaken::Replayed);
        }
        if self.seen.len() >= EARLY_PER_KEY {
            return Err(NotTaken::Full);
        }
        // Past this, its time is out of the window: no need to remember.
        // (The queue is in the order taken, so one whose time is ahead may
        // wait behind an earlier one: kept longer, never forgotten early.)
        let until = time.max(now) + EARLY_WINDOW_S;
        self.seen.insert(*nonce);
        self.expiry.push_back((until, *nonce));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            seen.take(1, &other, &nonce, &p, now),
            Err(NotTaken::Wrong),
            "another key's"
        );
        assert_eq!(
            seen.take(0, &k, &[4u8; 32], &p, now),
            Err(NotTaken::Wrong),
            "another nonce's"
        );
        let mut moved = p.clone();
        moved.time += 1;
        assert_eq!(seen.take(0, &k, &nonce, &moved, now), Err(NotTaken::Wrong));
        assert_eq!(seen.take(0, &k, &nonce, &p, now), Ok(()));
        assert_eq!(
            seen.take(0, &k, &nonce, &p, now + 1),
            Err(NotTaken::Replayed)
        );
        // Too old or too far ahead: not taken, whatever the nonce.
        let old = EarlyProof::new(&k, &[5u8; 32], now - EARLY_WINDOW_S - 1);
        assert_eq!(
            seen.take(0, &k, &[5u8; 32], &old, now),
            Err(NotTaken::OutOfWindow)
        );
        let ahead = EarlyProof::new(&k, &[6u8; 32], now + EARLY_AHEAD_S + 1);
        assert_eq!(
            seen.take(0, &k, &[6u8; 32], &ahead, now),
            Err(NotTaken::OutOfWindow)
        );
        // Remembered while its time is in the window, forgotten after:
        // by then a replay is out of the window anyway.
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen.take(0, &k, &nonce, &p, now + EARLY_WINDOW_S - 10),
            Err(NotTaken::Replayed)
        );
        let later = now + 2 * EARLY_WINDOW_S;
        let fresh = EarlyProof::new(&k, &[9u8; 32], later);
        assert_eq!(seen.take(0, &k, &[9u8; 32], &fresh, later), Ok(()));
        assert_eq!(seen.len(), 1, "the first nonce is forgotten");
        assert_eq!(
            seen.take(0, &k, &nonce, &p, later),
            Err(NotTaken::OutOfWindow)
        );
    }

    /// One key's holder sending proofs as fast as it can fills its own
    /// quota only: another key's proofs are still taken.
    #[test]
    fn one_key_filling_its_quota_leaves_the_others_theirs() {
        let (a, b) = (key(7), key(8));
        let now = 1_800_000_000;
        let mut seen = EarlyProofs::default();
        for i in 0..EARLY_PER_KEY as u32 {
            let mut n = [0u8; 32];
            n[..4].copy_from_slice(&i.to_be_bytes());
            let p = EarlyProof::new(&a, &n, now + EARLY_AHEAD_S);
            assert_eq!(seen.take(0, &a, &n, &p, now), Ok(()));
        }
        let n = [0xffu8; 32];
        let p = EarlyProof::new(&a, &n, now);
        assert_eq!(seen.take(0, &a, &n, &p, now), Err(NotTaken::Full));
        let p = EarlyProof::new(&b, &n, now);
        assert_eq!(seen.take(1, &b, &n, &p, now), Ok(()));
        // Its proofs are forgotten once their time has left the window.
        let later = now + EARLY_AHEAD_S + EARLY_WINDOW_S + 1;
        let p = EarlyProof::new(&a, &n, later);
        assert_eq!(seen.take(0, &a, &n, &p, later), Ok(()));
    }
}
