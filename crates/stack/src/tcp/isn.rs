//! Initial sequence numbers per RFC 6528: ISN = M + F(localip, localport,
//! remoteip, remoteport, secretkey), where M is a clock ticking every 4 µs
//! and F the first 32 bits of SHA-256 over the connection's 4-tuple and a
//! secret drawn once from the OS random generator. For a fixed 4-tuple the
//! ISN then advances with the clock, as RFC 9293 §3.4.1 wants, while an
//! off-path attacker cannot predict another connection's.
//! [`IsnGenerator::fixed`] pins every ISN instead, for tests that must
//! start in a chosen place of the sequence space (the wrap at 2³²).

use std::net::{IpAddr, SocketAddr};

use sha2::{Digest, Sha256};

use crate::time::Instant;
use crate::wire::seq::SeqNumber;

/// A connection's 4-tuple as this end sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// This end's address and port.
    pub local: SocketAddr,
    /// The peer's address and port.
    pub remote: SocketAddr,
}

/// Why no ISN generator could be made.
#[derive(Debug, thiserror::Error)]
pub enum IsnError {
    /// The OS random generator did not give a secret.
    #[error("the OS random generator failed: {0}")]
    Random(String),
}

/// How ISNs are chosen: the switch a study may turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsnPolicy {
    /// RFC 6528: the 4 µs clock plus a keyed hash of the 4-tuple.
    #[default]
    Rfc6528,
    /// RFC 793's clock alone (predictable; for comparison and tests).
    ClockOnly,
}

/// The length of M's tick: 4 µs (RFC 6528 §3, RFC 9293 §3.4.1).
pub const ISN_TICK_NANOS: u64 = 4_000;

/// Chooses ISNs for new connections.
#[derive(Clone)]
pub struct IsnGenerator {
    policy: IsnPolicy,
    secret: [u8; 32],
    /// Every ISN is this one ([`IsnGenerator::fixed`]; tests only).
    fixed: Option<SeqNumber>,
}

impl std::fmt::Debug for IsnGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.debug_struct("IsnGenerator")
            .field("policy", &self.policy)
            .field("fixed", &self.fixed)
            .finish_non_exhaustive()
    }
}

impl IsnGenerator {
    /// A generator with a fresh secret from the OS random generator.
    pub fn from_os_rng(policy: IsnPolicy) -> Result<IsnGenerator, IsnError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|e| IsnError::Random(e.to_string()))?;
        Ok(IsnGenerator {
            policy,
            secret,
            fixed: None,
        })
    }

    /// A generator with a given secret (tests, reproducible runs).
    pub fn with_secret(policy: IsnPolicy, secret: [u8; 32]) -> IsnGenerator {
        IsnGenerator {
            policy,
            secret,
            fixed: None,
        }
    }

    /// A generator whose every ISN is `isn`, whatever the 4-tuple and the
    /// time: for tests that start a connection at a chosen place in the
    /// sequence space (just below 2³², so its data crosses the wrap at
    /// once; issue 27). Never for real traffic: a predictable ISN is what
    /// RFC 6528 exists to prevent, and two incarnations of one 4-tuple
    /// would start at the same number.
    pub fn fixed(isn: SeqNumber) -> IsnGenerator {
        IsnGenerator {
            policy: IsnPolicy::ClockOnly,
            secret: [0; 32],
            fixed: Some(isn),
        }
    }

    /// M: the 4 µs clock at `now`, modulo 2³².
    pub fn clock_part(now: Instant) -> u32 {
        (now.nanos() / ISN_TICK_NANOS) as u32
    }

    /// F: the keyed hash of the 4-tuple (0 under [`IsnPolicy::ClockOnly`]).
    pub fn tuple_part(&self, tuple: &FourTuple) -> u32 {
        if self.policy == IsnPolicy::ClockOnly {
            return 0;
        }
        let mut h = Sha256::new();
        for end in [tuple.local, tuple.remote] {
            match end.ip() {
                IpAddr::V4(a) => h.update(a.octets()),
                IpAddr::V6(a) => h.update(a.octets()),
            }
            h.update(end.port().to_be_bytes());
        }
        h.update(self.secret);
        let digest = h.finalize();
        u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
    }

    /// The ISN for a connection on `tuple` opened at `now`.
    pub fn isn(&self, tuple: &FourTuple, now: Instant) -> SeqNumber {
        if let Some(isn) = self.fixed {
            return isn;
        }
        SeqNumber(Self::clock_part(now).wrapping_add(self.tuple_part(tuple)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use super::*;
    use crate::time::{Clock, ManualClock};

    fn tuple(local_port: u16, remote: &str) -> FourTuple {
        FourTuple {
            local: SocketAddr::from(([10, 0, 0, 1], local_port)),
            remote: remote.parse().unwrap(),
        }
    }

    #[test]
    fn for_one_tuple_the_isn_advances_one_per_4_microseconds() {
        let g = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).unwrap();
        let t = tuple(40_000, "10.0.0.2:80");
        let clock = ManualClock::new(Instant(123_456_789));
        let mut last = g.isn(&t, clock.now());
        for step_us in [4u64, 40, 4_000, 1_000_000, 3_000_000_000] {
            clock.advance(Duration::from_micros(step_us));
            let next = g.isn(&t, clock.now());
            assert!(next > last, "the ISN moves forward over {step_us} µs");
            assert_eq!(next - last, (step_us / 4) as usize);
            last = next;
        }
        clock.advance(Duration::from_nanos(3_999 - 123_456_789 % 4_000));
        assert_eq!(g.isn(&t, clock.now()), last, "less than a tick later");
    }

    #[test]
    fn different_tuples_and_secrets_get_unrelated_offsets() {
        let g = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [7; 32]);
        let now = Instant(1_000_000);
        let mut seen = HashSet::new();
        for port in 1024..1524 {
            seen.insert(g.isn(&tuple(port, "10.0.0.2:80"), now));
        }
        seen.insert(g.isn(&tuple(1024, "10.0.0.3:80"), now));
        seen.insert(g.isn(&tuple(1024, "[fd00::2]:80"), now));
        assert_eq!(seen.len(), 502, "every tuple its own ISN");
        // Swapping the ends is another tuple.
        let t = tuple(1024, "10.0.0.2:80");
        let swapped = FourTuple {
            local: t.remote,
            remote: t.local,
        };
        assert_ne!(g.isn(&t, now), g.isn(&swapped, now));
        // Another secret, another offset; the same secret, the same one.
        let other = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [8; 32]);
        assert_ne!(g.tuple_part(&t), other.tuple_part(&t));
        let same = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [7; 32]);
        assert_eq!(g.isn(&t, now), same.isn(&t, now));
        // Two generators from the OS draw different secrets.
        let a = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).unwrap();
        let b = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).unwrap();
        assert_ne!(a.tuple_part(&t), b.tuple_part(&t));
    }

    #[test]
    fn clock_only_is_rfc_793s_predictable_clock() {
        let g = IsnGenerator::with_secret(IsnPolicy::ClockOnly, [1; 32]);
        let now = Instant(4_000 * 1_000);
        assert_eq!(g.isn(&tuple(1, "10.0.0.2:80"), now), SeqNumber(1_000));
        assert_eq!(g.isn(&tuple(2, "10.0.0.9:81"), now), SeqNumber(1_000));
        assert!(!format!("{g:?}").contains("secret"));
    }

    #[test]
    fn a_fixed_generator_gives_its_isn_for_every_tuple_and_time() {
        let g = IsnGenerator::fixed(SeqNumber(u32::MAX - 99));
        for (port, nanos) in [(1, 0), (2, 4_000), (40_000, 3_000_000_000_000)] {
            let t = tuple(port, "10.0.0.2:80");
            assert_eq!(g.isn(&t, Instant(nanos)), SeqNumber(u32::MAX - 99));
        }
        assert!(format!("{g:?}").contains("4294967196"), "{g:?}");
        // The other constructors leave it unset: the ISN moves.
        let h = IsnGenerator::with_secret(IsnPolicy::ClockOnly, [1; 32]);
        assert_ne!(
            h.isn(&tuple(1, "10.0.0.2:80"), Instant(0)),
            h.isn(&tuple(1, "10.0.0.2:80"), Instant(4_000))
        );
    }
}
