//! Which handshake to close for a new connection past the pending bounds
//! ([`crate::pending`]), in steps, each with its own rule for what may
//! close, and never a handshake that proved its key.
//!
//! Up to the bounds, an unproven handshake older than the first-frame
//! grace goes: first one that has sent nothing (a slowloris, not a slow
//! client between its hello and its proof), then one of the source that
//! looks most like a flood ([`PendingOrder::room`]; nothing if that source
//! has none old enough). Up to twice the bounds, younger ones are spared:
//! a burst of key holders from one address (a fleet, a NAT) may pass a
//! bound, and on a loaded host their connections may be accepted before
//! their first frames arrive. Past twice the bounds, one that has had a
//! turn of the handshake loop to be read goes, whatever its age (silent
//! first, most flood-like source first); with none, the oldest proven one
//! of a key holding more than its share of the full bound goes
//! ([`PendingOrder::over_share`]); with none, the new connection is
//! refused.

use crate::pending::{Chosen, Full, Pass, PendingLimits, PendingOrder, Room};
use std::net::IpAddr;

/// What the handshake loop knows of one handshake under way.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Facts {
    /// Older than the first-frame grace.
    pub(crate) aged: bool,
    /// It has sent no byte yet.
    pub(crate) silent: bool,
    /// The loop has had a turn to read it since it was accepted.
    pub(crate) read_once: bool,
}

/// What to do for a new connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Choice {
    /// There is room: take it in.
    Admit,
    /// Close this handshake (telling it this reason), then choose again.
    Close(u64, String),
    /// Close this proven handshake of this key, which holds more than its
    /// share of the full bound, then choose again.
    CloseOverShare(u64, usize, Full),
    /// Refuse the new connection, telling it this reason.
    Refuse(String),
}

/// Twice the bounds `l`: how far fresh handshakes are spared.
pub(crate) fn hard(l: &PendingLimits) -> PendingLimits {
    PendingLimits {
        total: 2 * l.total,
        per_address: 2 * l.per_address,
        per_prefix: 2 * l.per_prefix,
    }
}

/// The choice for a new connection from `ip` under `l`, with `facts` of
/// each handshake under way.
pub(crate) fn choose(
    order: &PendingOrder,
    ip: IpAddr,
    l: &PendingLimits,
    facts: impl Fn(u64) -> Facts,
) -> Choice {
    let hard = hard(l);
    let unproven = |n: u64| !order.is_proven(n);
    type Rule<'a> = &'a dyn Fn(u64) -> bool;
    let soft_silent = |n| unproven(n) && facts(n).aged && facts(n).silent;
    let soft = |n| unproven(n) && facts(n).aged;
    let hard_silent = |n| unproven(n) && facts(n).read_once && facts(n).silent;
    let hard_any = |n| unproven(n) && facts(n).read_once;
    let steps: [(&PendingLimits, Rule, Pass, Chosen); 4] = [
        (l, &soft_silent, Pass::Any, Chosen::Silent),
        (l, &soft, Pass::Busiest, Chosen::Busiest),
        (&hard, &hard_silent, Pass::Any, Chosen::Silent),
        (&hard, &hard_any, Pass::Any, Chosen::Oldest),
    ];
    let mut last_full = Full::Total;
    for (limits, rule, pass, why) in steps {
        match order.room(ip, limits, rule, pass) {
            Room::Fits => return Choice::Admit,
            Room::Close(n, full) => {
                let why = match (why, full) {
                    (Chosen::Busiest, Full::Total) => Chosen::Busiest,
                    (Chosen::Busiest, _) => Chosen::Oldest,
                    (w, _) => w,
                };
                return Choice::Close(n, full.reason(l, ip, why));
            }
            Room::Full(full) => last_full = full,
        }
    }
    match order.over_share(ip, last_full, l) {
        Some((n, key)) => Choice::CloseOverShare(n, key, last_full),
        None => Choice::Refuse(last_full.refusal(&hard, ip)),
    }
}

/// For connection `n` from `ip`, taken in past twice a bound (where
/// [`choose`] found every handshake young and unread: a flood reopening
/// its connections as fast as they close) and read once: if its first
/// frame proved a key, the handshake to close for it, unproven ones first
/// whatever their age (silent first), then the oldest proven one of a key
/// over its share; otherwise, or with none to close, refuse it (`why`).
/// So a key holder behind a flooded address is served, and a flood's own
/// newcomers are still refused.
pub(crate) fn for_provisional(
    order: &PendingOrder,
    n: u64,
    ip: IpAddr,
    l: &PendingLimits,
    silent: impl Fn(u64) -> bool,
    why: String,
) -> Choice {
    if !order.is_proven(n) {
        return Choice::Refuse(why);
    }
    let hard = hard(l);
    let unproven = |m: u64| m != n && !order.is_proven(m);
    let silent_unproven = |m: u64| unproven(m) && silent(m);
    type Rule<'a> = &'a dyn Fn(u64) -> bool;
    let steps: [(Rule, Chosen); 2] = [
        (&silent_unproven, Chosen::Silent),
        (&unproven, Chosen::Oldest),
    ];
    let mut last_full = Full::Total;
    for (rule, chosen) in steps {
        match order.room(ip, &hard, rule, Pass::Any) {
            Room::Fits => return Choice::Admit,
            Room::Close(m, full) => return Choice::Close(m, full.reason(l, ip, chosen)),
            Room::Full(full) => last_full = full,
        }
    }
    match order.over_share(ip, last_full, l) {
        Some((m, key)) if m != n => Choice::CloseOverShare(m, key, last_full),
        _ => Choice::Refuse(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_ones_go_first_then_young_ones_are_spared_then_the_newcomer_is_refused() {
        let l = PendingLimits {
            total: 2,
            per_address: 8,
            per_prefix: 8,
        };
        let mut o = PendingOrder::default();
        let (slow, flood): (IpAddr, IpAddr) =
            ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let new: IpAddr = "10.0.0.9".parse().unwrap();
        // A slow client that has spoken (1) and a silent one (2), both old.
        o.insert(1, slow);
        o.insert(2, flood);
        let old = |silent| Facts {
            aged: true,
            silent,
            read_once: true,
        };
        let facts = |n: u64| old(n != 1);
        match choose(&o, new, &l, facts) {
            Choice::Close(2, why) => {
                assert!(why.contains("the oldest that has sent nothing"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // Both young and unread: spared up to twice the bound.
        let young = |_: u64| Facts::default();
        assert_eq!(choose(&o, new, &l, young), Choice::Admit);
        o.insert(3, flood);
        o.insert(4, flood);
        match choose(&o, new, &l, young) {
            Choice::Refuse(why) => {
                assert!(why.contains("none of which may be closed yet"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // Read once, past twice the bound: the flood's oldest silent one.
        match choose(&o, new, &l, |n| Facts {
            read_once: true,
            silent: n != 1,
            aged: false,
        }) {
            Choice::Close(2, _) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn past_twice_the_bound_a_key_over_its_share_gives_way_and_others_are_refused() {
        let l = PendingLimits {
            total: 4,
            per_address: 8,
            per_prefix: 8,
        };
        let new: IpAddr = "10.0.0.9".parse().unwrap();
        let read = |_: u64| Facts {
            aged: true,
            silent: false,
            read_once: true,
        };
        // Twice the bound, all proven by key 3: its oldest gives way.
        let mut o = PendingOrder::default();
        for n in 1..=8 {
            o.insert(n, format!("10.0.0.{n}").parse().unwrap());
            o.prove(n, 3);
        }
        assert_eq!(
            choose(&o, new, &l, read),
            Choice::CloseOverShare(1, 3, Full::Total)
        );
        // Eight keys with one each hold no more than their share: refused.
        let mut o = PendingOrder::default();
        for n in 1..=8 {
            o.insert(n, format!("10.0.0.{n}").parse().unwrap());
            o.prove(n, n as usize);
        }
        assert!(matches!(choose(&o, new, &l, read), Choice::Refuse(_)));
    }

    /// Past twice the per-address bound, all young and unread: a proven
    /// newcomer closes an unproven one (silent first), or the oldest of a
    /// key over its share; an unproven newcomer is refused.
    #[test]
    fn a_proven_newcomer_past_twice_the_bound_makes_room_and_an_unproven_one_does_not() {
        let l = PendingLimits {
            total: 64,
            per_address: 4,
            per_prefix: 64,
        };
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let mut o = PendingOrder::default();
        for m in 0..8 {
            o.insert(m, ip);
        }
        let spoke = |m: u64| m == 0;
        // Newcomer 8, unproven: refused.
        o.insert(8, ip);
        assert_eq!(
            for_provisional(&o, 8, ip, &l, |m| !spoke(m), "full".into()),
            Choice::Refuse("full".into())
        );
        // Proven: the oldest silent unproven one (1, as 0 has spoken).
        o.prove(8, 1);
        match for_provisional(&o, 8, ip, &l, |m| !spoke(m), "full".into()) {
            Choice::Close(1, why) => assert!(why.contains("sent nothing"), "{why}"),
            other => panic!("{other:?}"),
        }
        // All others proven by key 0 (over a quarter of 4): its oldest.
        for m in 0..8 {
            o.prove(m, 0);
        }
        assert!(matches!(
            for_provisional(&o, 8, ip, &l, |_| true, "full".into()),
            Choice::CloseOverShare(0, 0, Full::Address)
        ));
    }
}
