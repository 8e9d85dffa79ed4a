//! The connections still in their handshake, counted in total, per source
//! address and per IPv6 /64, with room for each new one made by closing an
//! older one of its kind: a flood of silent connections, reopened as they
//! close, then only ever closes its own (oldest) connections. Which ones
//! may be closed is the caller's rule ([`crate::handshake`]): never one
//! whose first frame proved the key ([`crate::early_proof`]), so a flood
//! without the key cannot close a key holder's handshake however long its
//! round trip.

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
    /// The one-line reason told to (and logged for) the connection closed
    /// for a new one, chosen as `which` says.
    pub(crate) fn reason(self, l: &PendingLimits, ip: IpAddr, which: Chosen) -> String {
        let which = match which {
            Chosen::Silent => "the oldest that has sent nothing",
            Chosen::Busiest => "the oldest of the source holding the most",
            Chosen::Oldest => "the oldest",
        };
        format!("{}; {which} is closed for a new one", self.bound(l, ip))
    }

    /// The one-line reason told to a new connection refused because its
    /// kind is at `hard` (twice the bounds) and none of its handshakes may
    /// close yet (proven, or not yet read once).
    pub(crate) fn refusal(self, hard: &PendingLimits, ip: IpAddr) -> String {
        format!(
            "{} x2), none of which may be closed yet; try again",
            self.bound(hard, ip).trim_end_matches(')')
        )
    }

    /// The one-line reason told to a key holder's proven handshake closed
    /// because key `name` holds more than its share of this bound.
    pub(crate) fn share_reason(self, l: &PendingLimits, ip: IpAddr, name: &str) -> String {
        let bound = match self {
            Full::Total => l.total,
            Full::Address => l.per_address,
            Full::Prefix => l.per_prefix,
        };
        format!(
            "{}; key {name:?} holds more than its {} (a quarter), and its oldest is closed for a new one",
            self.bound(l, ip),
            proven_share(bound)
        )
    }

    fn bound(self, l: &PendingLimits, ip: IpAddr) -> String {
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
        format!("closing: {n} handshakes pending {what} ({flag})")
    }
}

/// How the handshake closed for a new one was chosen, for its reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chosen {
    /// The oldest of those that have sent no frame.
    Silent,
    /// The oldest of the source holding the most.
    Busiest,
    /// The oldest that could go.
    Oldest,
}

/// Proven handshakes one key may hold of a full `bound` (the total, one
/// address's or one /64's): a quarter of it (at least one), so that eight
/// keys' holders at the least are needed to fill twice the bound with
/// proven handshakes, in all and behind one address (a NAT) alike.
pub(crate) fn proven_share(bound: usize) -> usize {
    (bound / 4).max(1)
}

/// Whether a new handshake fits (see [`PendingOrder::room`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// Under every bound.
    Fits,
    /// A bound is reached: close this handshake for the new one.
    Close(u64, Full),
    /// A bound is reached and none of its kind may be closed.
    Full(Full),
}

/// How far past the total bound [`PendingOrder::room`] looks for one to
/// close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// Only in the source that looks most like a flood.
    Busiest,
    /// In every source, most flood-like first.
    Any,
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
    /// The key each proven handshake proved, and each key's, in order.
    key_of: HashMap<u64, usize>,
    proven_by_key: HashMap<usize, BTreeSet<u64>>,
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

    /// Whether one more handshake from `ip` fits under `l`, and if not,
    /// which one to close for it: of the full kind (address, then /64),
    /// the oldest one `may_close` allows. Past the total bound it comes
    /// from the source (address or IPv6 /64) that looks most like a flood:
    /// the one whose unproven handshakes outnumber its proven ones by the
    /// most (a few proven ones do not cover a flood, and a key holder's
    /// relay or NAT with as many proven as unproven is spared), then one
    /// none of whose handshakes proved the key, then the one with the
    /// oldest. With [`Pass::Busiest`] only that source is looked at (if
    /// none of its handshakes may close, none does); with [`Pass::Any`]
    /// the next source is, and so on.
    pub(crate) fn room(
        &self,
        ip: IpAddr,
        l: &PendingLimits,
        may_close: impl Fn(u64) -> bool,
        pass: Pass,
    ) -> Room {
        let oldest = |s: &BTreeSet<u64>| s.iter().copied().find(|&n| may_close(n));
        fn kind(
            m: &HashMap<IpAddr, BTreeSet<u64>>,
            k: IpAddr,
            max: usize,
        ) -> Option<&BTreeSet<u64>> {
            m.get(&k).filter(|s| s.len() >= max.max(1))
        }
        let verdict = |n: Option<u64>, full: Full| match n {
            Some(n) => Room::Close(n, full),
            None => Room::Full(full),
        };
        if let Some(s) = kind(&self.by_address, ip, l.per_address) {
            return verdict(oldest(s), Full::Address);
        }
        if let Some(s) = kind(&self.by_prefix, rate_key(ip), l.per_prefix) {
            return verdict(oldest(s), Full::Prefix);
        }
        if self.all.len() < l.total.max(1) {
            return Room::Fits;
        }
        // One pass over the sources, no sorting: the most flood-like
        // source overall (Busiest), or the most flood-like one that has a
        // handshake `may_close` allows (Any).
        let ranked = self.by_prefix.values().filter_map(|s| {
            let mut unproven = s.iter().copied().filter(|n| !self.proven.contains(n));
            let first = unproven.next()?;
            let count = 1 + unproven.count();
            let proven = s.len() - count;
            let rank = (
                count.saturating_sub(proven),
                proven == 0,
                std::cmp::Reverse(first),
            );
            Some((rank, s))
        });
        let n = match pass {
            Pass::Busiest => ranked.max_by_key(|r| r.0).and_then(|(_, s)| oldest(s)),
            Pass::Any => ranked
                .filter_map(|(rank, s)| Some((rank, oldest(s)?)))
                .max_by_key(|r| r.0)
                .map(|(_, n)| n),
        };
        verdict(n, Full::Total)
    }

    /// Whether handshake `n` proved the key in its first frame.
    pub(crate) fn is_proven(&self, n: u64) -> bool {
        self.proven.contains(&n)
    }

    /// Marks handshake `n` as having proved key `key` (its index in the
    /// key ring) in its first frame.
    pub(crate) fn prove(&mut self, n: u64, key: usize) {
        if !self.all.contains(&n) || !self.proven.insert(n) {
            return;
        }
        self.key_of.insert(n, key);
        self.proven_by_key.entry(key).or_default().insert(n);
    }

    /// Past twice a bound with nothing else to close: of the handshakes
    /// `full` counts for a new one from `ip` (in all, from `ip`, from its
    /// /64), the oldest proven one of the key holding the most, if that key
    /// holds more than its share ([`proven_share`] of the bound in `l`),
    /// and the key. One key's holders cannot fill the table, or one
    /// address's places (a NAT), with proven handshakes that are never
    /// closed for room and lock out every other key; a fleet of one key
    /// keeps all of its until someone else needs the room.
    pub(crate) fn over_share(
        &self,
        ip: IpAddr,
        full: Full,
        l: &PendingLimits,
    ) -> Option<(u64, usize)> {
        let (scope, bound) = match full {
            Full::Total => (Some(&self.all), l.total),
            Full::Address => (self.by_address.get(&ip), l.per_address),
            Full::Prefix => (self.by_prefix.get(&rate_key(ip)), l.per_prefix),
        };
        let scope = scope?;
        // (how many, the key, its oldest): the most, then the lowest key.
        let mut most: Option<(usize, usize, u64)> = None;
        for (&key, mine) in &self.proven_by_key {
            let mut held = mine.iter().copied().filter(|m| scope.contains(m));
            let Some(oldest) = held.next() else {
                continue;
            };
            let count = 1 + held.count();
            if most
                .is_none_or(|(c, k, _)| (count, std::cmp::Reverse(key)) > (c, std::cmp::Reverse(k)))
            {
                most = Some((count, key, oldest));
            }
        }
        let (count, key, oldest) = most?;
        (count > proven_share(bound)).then_some((oldest, key))
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
        if let Some(k) = self.key_of.remove(&n) {
            if let Some(s) = self.proven_by_key.get_mut(&k) {
                s.remove(&n);
                if s.is_empty() {
                    self.proven_by_key.remove(&k);
                }
            }
        }
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

    fn any(_: u64) -> bool {
        true
    }

    #[test]
    fn a_key_past_its_share_of_the_full_table_gives_up_its_oldest() {
        let l = PendingLimits {
            total: 8,
            per_address: 8,
            per_prefix: 8,
        };
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let mut o = PendingOrder::default();
        for n in 1..=8 {
            o.insert(n, if n <= 5 { a } else { b });
        }
        // Two is a key's share of 8: key 0 holds three, key 1 two.
        for n in [1, 2, 3] {
            o.prove(n, 0);
        }
        for n in [6, 7] {
            o.prove(n, 1);
        }
        assert_eq!(o.over_share(b, Full::Total, &l), Some((1, 0)));
        o.remove(1);
        assert_eq!(o.over_share(b, Full::Total, &l), None);
        // Proving twice counts once; a handshake that is gone is not marked.
        o.prove(2, 0);
        assert_eq!(o.over_share(b, Full::Total, &l), None);
        o.prove(1, 0);
        assert!(!o.proven.contains(&1));
        assert_eq!(o.proven_by_key[&0].len(), 2);
    }

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
        assert_eq!(o.room(a, &l, any, Pass::Any), Room::Fits);
        o.insert(3, a);
        assert_eq!(o.room(a, &l, any, Pass::Any), Room::Close(1, Full::Address));
        let v6 = |i: u16| -> IpAddr { format!("2001:db8::{i}").parse().unwrap() };
        for i in 0..3 {
            o.insert(10 + i as u64, v6(i));
        }
        assert_eq!(
            o.room(v6(9), &l, any, Pass::Any),
            Room::Close(10, Full::Prefix)
        );
        // The total: from the source holding the most (the /64's three).
        let other: IpAddr = "10.0.0.9".parse().unwrap();
        assert_eq!(
            o.room(other, &l, any, Pass::Busiest),
            Room::Close(10, Full::Total)
        );
        o.remove(1);
        o.remove(10);
        assert_eq!(o.room(a, &l, any, Pass::Any), Room::Fits);
        assert_eq!(o.len(), 4);
        assert!(Full::Prefix.reason(&l, v6(1), Chosen::Oldest).contains(
            "3 handshakes pending from 2001:db8::/64 (--max-pending-per-prefix); the oldest is closed"
        ));
    }

    #[test]
    fn a_proven_handshake_is_never_chosen_and_a_full_kind_without_another_says_so() {
        let l = PendingLimits {
            total: 4,
            per_address: 2,
            per_prefix: 4,
        };
        let mut o = PendingOrder::default();
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        o.insert(1, a);
        o.insert(2, a);
        o.prove(1, 0);
        let unproven = |o: &PendingOrder| {
            let p = o.proven.clone();
            move |n: u64| !p.contains(&n)
        };
        // The per-address bound: the unproven 2 goes, though 1 is older.
        assert_eq!(
            o.room(a, &l, unproven(&o), Pass::Any),
            Room::Close(2, Full::Address)
        );
        o.prove(2, 0);
        assert_eq!(
            o.room(a, &l, unproven(&o), Pass::Any),
            Room::Full(Full::Address)
        );
        // The total: b holds two unproven, the third address one.
        o.remove(2);
        o.insert(3, b);
        o.insert(4, b);
        o.insert(5, "10.0.0.3".parse().unwrap());
        let d: IpAddr = "10.0.0.4".parse().unwrap();
        assert_eq!(
            o.room(d, &l, unproven(&o), Pass::Busiest),
            Room::Close(3, Full::Total)
        );
        for n in [3, 4, 5] {
            o.prove(n, 0);
        }
        assert_eq!(
            o.room(d, &l, unproven(&o), Pass::Any),
            Room::Full(Full::Total)
        );
        assert_eq!(
            Full::Total.refusal(&l, d),
            "closing: 4 handshakes pending in all (--max-pending x2), none of which may be closed yet; try again"
        );
        // Proving one that is gone marks nothing.
        o.remove(1);
        o.prove(1, 0);
        assert!(!o.proven.contains(&1));
    }

    #[test]
    fn the_most_flood_like_source_goes_first() {
        let l = PendingLimits {
            total: 3,
            per_address: 8,
            per_prefix: 8,
        };
        let new: IpAddr = "10.0.0.9".parse().unwrap();
        // A slow client's one handshake against a flood's two from one
        // address: the flood's oldest goes; if its handshakes may not close
        // yet (too young), the busiest pass closes nothing, not the client.
        let mut o = PendingOrder::default();
        o.insert(1, "10.0.0.1".parse().unwrap());
        o.insert(2, "10.0.0.2".parse().unwrap());
        o.insert(3, "10.0.0.2".parse().unwrap());
        assert_eq!(
            o.room(new, &l, any, Pass::Busiest),
            Room::Close(2, Full::Total)
        );
        assert_eq!(
            o.room(new, &l, |n| n == 1, Pass::Busiest),
            Room::Full(Full::Total)
        );
        assert_eq!(
            o.room(new, &l, |n| n == 1, Pass::Any),
            Room::Close(1, Full::Total)
        );
        // One each: the oldest goes (the caller spares a slow client that
        // has spoken by closing silent handshakes first).
        let mut o = PendingOrder::default();
        for (n, a) in [(1, "10.0.0.1"), (2, "10.0.0.2"), (3, "10.0.0.3")] {
            o.insert(n, a.parse().unwrap());
        }
        assert_eq!(
            o.room(new, &l, any, Pass::Busiest),
            Room::Close(1, Full::Total)
        );
        assert_eq!(
            o.room(new, &l, |n| n > 1, Pass::Any),
            Room::Close(2, Full::Total)
        );
        // A source where key holders proved the key as often as not (a
        // relay, a NAT) ranks below every source that proved nothing,
        // though it holds more.
        let l = PendingLimits { total: 6, ..l };
        let mut o = PendingOrder::default();
        let relay: IpAddr = "10.0.0.1".parse().unwrap();
        for n in 1..=4 {
            o.insert(n, relay);
        }
        o.prove(1, 0);
        o.prove(2, 1);
        o.insert(5, "10.0.0.5".parse().unwrap());
        o.insert(6, "10.0.0.6".parse().unwrap());
        assert_eq!(
            o.room(new, &l, any, Pass::Busiest),
            Room::Close(5, Full::Total)
        );
        assert_eq!(
            o.room(new, &l, |n| n != 5, Pass::Any),
            Room::Close(6, Full::Total)
        );
        assert_eq!(
            o.room(new, &l, |n| (3..5).contains(&n), Pass::Any),
            Room::Close(3, Full::Total)
        );
        // One proven handshake does not cover a flood: a source with one
        // proven and three unproven ranks above one with a single unproven
        // (before: below it, and the single one was closed).
        let mut o = PendingOrder::default();
        let flood: IpAddr = "10.0.0.1".parse().unwrap();
        for n in 1..=4 {
            o.insert(n, flood);
        }
        o.prove(1, 0);
        o.insert(5, "10.0.0.5".parse().unwrap());
        o.insert(6, "10.0.0.6".parse().unwrap());
        assert_eq!(
            o.room(new, &l, |n| n != 1, Pass::Busiest),
            Room::Close(2, Full::Total)
        );
    }

    #[test]
    fn a_key_past_its_share_of_one_addresss_places_gives_up_its_oldest() {
        // One address (a NAT) with room for 8: one key's holders keep no
        // more than 2 proven of them when room is needed there, though
        // the table has room (before: all 8, and every other key behind
        // the NAT was refused until they finished).
        let l = PendingLimits {
            total: 1024,
            per_address: 8,
            per_prefix: 32,
        };
        let nat: IpAddr = "10.0.0.1".parse().unwrap();
        let elsewhere: IpAddr = "10.0.0.2".parse().unwrap();
        let mut o = PendingOrder::default();
        for n in 1..=8 {
            o.insert(n, nat);
        }
        o.insert(9, elsewhere);
        for n in 1..=7 {
            o.prove(n, 0);
        }
        o.prove(8, 1);
        o.prove(9, 0);
        assert_eq!(o.over_share(nat, Full::Address, &l), Some((1, 0)));
        // The total is far from full: nothing is over there.
        assert_eq!(o.over_share(nat, Full::Total, &l), None);
        for n in 1..=4 {
            o.remove(n);
        }
        assert_eq!(o.over_share(nat, Full::Address, &l), Some((5, 0)));
        o.remove(5);
        assert_eq!(o.over_share(nat, Full::Address, &l), None);
        // An IPv6 /64 is cut at a quarter of its own bound.
        let v6 = |i: u16| -> IpAddr { format!("2001:db8::{i}").parse().unwrap() };
        let l = PendingLimits {
            total: 1024,
            per_address: 8,
            per_prefix: 8,
        };
        let mut o = PendingOrder::default();
        for n in 1..=8u64 {
            o.insert(n, v6(n as u16));
            o.prove(n, (n % 3) as usize);
        }
        // Keys 1 and 2 hold three each, key 0 two: key 1 (the lower) gives.
        assert_eq!(o.over_share(v6(20), Full::Prefix, &l), Some((1, 1)));
        assert!(Full::Prefix
            .share_reason(&l, v6(1), "fleet")
            .contains("8 handshakes pending from 2001:db8::/64 (--max-pending-per-prefix); key \"fleet\" holds more than its 2 (a quarter)"));
    }
}
