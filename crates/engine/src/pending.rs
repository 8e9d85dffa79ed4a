//! The connections still in their handshake, counted in total, per source
//! address and per IPv6 /64, with room for each new one made by closing the
//! oldest of its kind: a flood of silent connections, reopened as they
//! close, then only ever closes its own (oldest) connections. A handshake
//! whose first frame proved the key ([`crate::early_proof`]) is closed for
//! room only when every handshake of its kind has proved it too, so a
//! flood without the key cannot close a key holder's handshake however
//! long its round trip.

use crate::server_state::rate_key;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

/// Bounds on connections in their handshake (`tcplab server
/// --max-pending…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    /// Handshakes under way at once, from everywhere.
    pub total: usize,
    /// Handshakes under way at once from one address.
    pub per_address: usize,
    /// Handshakes under way at once from one IPv6 /64 (an IPv4 address
    /// counts as its own prefix).
    pub per_prefix: usize,
}

impl Default for PendingLimits {
    fn default() -> PendingLimits {
        PendingLimits {
            total: 1024,
            per_address: 8,
            per_prefix: 32,
        }
    }
}

/// Which bound made room for a new connection by closing an older one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// `--max-pending`.
    Total,
    /// `--max-pending-per-address`.
    Address,
    /// `--max-pending-per-prefix`.
    Prefix,
}

impl Full {
    /// The one-line reason told to (and logged for) the connection closed.
    pub(crate) fn reason(self, l: &PendingLimits, ip: IpAddr) -> String {
        let (n, what, flag) = match self {
            Full::Total => (l.total, "in all".to_string(), "--max-pending"),
            Full::Address => (
                l.per_address,
                format!("from {ip}"),
                "--max-pending-per-address",
            ),
            Full::Prefix => (
                l.per_prefix,
                format!("from {}/64", rate_key(ip)),
                "--max-pending-per-prefix",
            ),
        };
        let which = match self {
            Full::Total => "the oldest of the source holding the most",
            Full::Address | Full::Prefix => "the oldest",
        };
        format!("closing: {n} handshakes pending {what} ({flag}); {which} is closed for a new one")
    }
}

/// The order of the handshakes under way (by accept number, which is also
/// the order of their deadlines), in total and per address and prefix.
#[derive(Default)]
pub(crate) struct PendingOrder {
    all: BTreeSet<u64>,
    by_address: HashMap<IpAddr, BTreeSet<u64>>,
    by_prefix: HashMap<IpAddr, BTreeSet<u64>>,
    addr_of: HashMap<u64, IpAddr>,
    /// Handshakes whose first frame proved the key.
    proven: HashSet<u64>,
}

impl PendingOrder {
    /// Handshakes under way.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.all.len()
    }

    /// The oldest handshake, if any.
    pub(crate) fn oldest(&self) -> Option<u64> {
        self.all.first().copied()
    }

    /// Which handshake (and why) must close to make room for one more from
    /// `ip` under `l`; `None` if there is room. Past the total bound it is
    /// one of the source holding the most.
    /// The oldest unproven one of a full kind goes first; the oldest
    /// proven one only when all of that kind are proven.
    pub(crate) fn victim(&self, ip: IpAddr, l: &PendingLimits) -> Option<(u64, Full)> {
        let pick = |s: &BTreeSet<u64>| {
            s.iter()
                .find(|n| !self.proven.contains(n))
                .or_else(|| s.first())
                .copied()
        };
        let first = |m: &HashMap<IpAddr, BTreeSet<u64>>, k: IpAddr, max: usize| {
            m.get(&k).filter(|s| s.len() >= max.max(1)).and_then(pick)
        };
        if let Some(n) = first(&self.by_address, ip, l.per_address) {
            return Some((n, Full::Address));
        }
        if let Some(n) = first(&self.by_prefix, rate_key(ip), l.per_prefix) {
            return Some((n, Full::Prefix));
        }
        if self.all.len() >= l.total.max(1) {
            // From the source (address, IPv6 /64) holding the most: a
            // client with one handshake in flight is not the one to go
            // while a flood holds several from each of its addresses.
            let heaviest = self
                .by_prefix
                .values()
                .filter(|s| s.iter().any(|n| !self.proven.contains(n)))
                .max_by_key(|s| (s.len(), std::cmp::Reverse(s.first().copied())));
            return heaviest
                .and_then(pick)
                .or_else(|| pick(&self.all))
                .map(|n| (n, Full::Total));
        }
        None
    }

    /// Whether handshake `n` proved the key in its first frame.
    pub(crate) fn is_proven(&self, n: u64) -> bool {
        self.proven.contains(&n)
    }

    /// Marks handshake `n` as having proved the key in its first frame.
    pub(crate) fn prove(&mut self, n: u64) {
        if self.all.contains(&n) {
            self.proven.insert(n);
        }
    }

    /// Counts handshake `n` from `ip`.
    pub(crate) fn insert(&mut self, n: u64, ip: IpAddr) {
        self.all.insert(n);
        self.by_address.entry(ip).or_default().insert(n);
        self.by_prefix.entry(rate_key(ip)).or_default().insert(n);
        self.addr_of.insert(n, ip);
    }

    /// Stops counting handshake `n`.
    pub(crate) fn remove(&mut self, n: u64) {
        self.all.remove(&n);
        self.proven.remove(&n);
        let Some(ip) = self.addr_of.remove(&n) else {
            return;
        };
        for (m, k) in [
            (&mut self.by_address, ip),
            (&mut self.by_prefix, rate_key(ip)),
        ] {
            if let Some(s) = m.get_mut(&k) {
                s.remove(&n);
                if s.is_empty() {
                    m.remove(&k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_of_the_full_kind_makes_room() {
        let l = PendingLimits {
            total: 6,
            per_address: 2,
            per_prefix: 3,
        };
        let mut o = PendingOrder::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        o.insert(1, a);
        o.insert(2, "10.0.0.2".parse().unwrap());
        assert_eq!(o.victim(a, &l), None);
        o.insert(3, a);
        assert_eq!(o.victim(a, &l), Some((1, Full::Address)));
        let v6 = |i: u16| -> IpAddr { format!("2001:db8::{i}").parse().unwrap() };
        for i in 0..3 {
            o.insert(10 + i as u64, v6(i));
        }
        assert_eq!(o.victim(v6(9), &l), Some((10, Full::Prefix)));
        // The total: from the source holding the most (the /64's three).
        assert_eq!(
            o.victim("10.0.0.9".parse().unwrap(), &l),
            Some((10, Full::Total))
        );
        o.remove(1);
        o.remove(10);
        assert_eq!(o.victim(a, &l), None);
        assert_eq!(o.len(), 4);
        assert!(Full::Prefix
            .reason(&l, v6(1))
            .contains("3 handshakes pending from 2001:db8::/64 (--max-pending-per-prefix)"));
    }

    #[test]
    fn a_proven_handshake_is_closed_only_when_all_of_its_kind_are_proven() {
        let l = PendingLimits {
            total: 4,
            per_address: 2,
            per_prefix: 4,
        };
        let mut o = PendingOrder::default();
        let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        o.insert(1, a);
        o.insert(2, a);
        o.prove(1);
        // The per-address bound: the unproven 2 goes, though 1 is older.
        assert_eq!(o.victim(a, &l), Some((2, Full::Address)));
        o.prove(2);
        assert_eq!(o.victim(a, &l), Some((1, Full::Address)));
        // The total: the oldest unproven, wherever it is from.
        o.remove(2);
        o.insert(3, b);
        o.insert(4, b);
        o.insert(5, "10.0.0.3".parse().unwrap());
        assert_eq!(
            o.victim("10.0.0.4".parse().unwrap(), &l),
            Some((3, Full::Total))
        );
        for n in [3, 4, 5] {
            o.prove(n);
        }
        assert_eq!(
            o.victim("10.0.0.4".parse().unwrap(), &l),
            Some((1, Full::Total))
        );
        // Proving one that is gone marks nothing.
        o.remove(1);
        o.prove(1);
        assert!(!o.proven.contains(&1));
    }
}
