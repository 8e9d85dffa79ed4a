//! Table 2, the routing table's size: a connected UDP socket caches its
//! route, so only an unconnected sender (`--connect off`, sendto() with the
//! address on every datagram) looks the route up per datagram. The CPU
//! samples show whether it does (the LC-trie walk, `fib_table_lookup`,
//! under an output route lookup) and whether that grows with the table;
//! /proc/net/fib_triestat shows whether the trie got deeper.

use super::claims::{trial_share_words, TrialShares};
use super::offloads::{controlled_sentence, offload_states};
use super::paper::{TABLE2, TRANSFER_MB};
use super::samples::count_stacks;
use crate::data::StudyData;
use crate::figures::series;
use analysis::findings::{differ, CurvePoint};
use record::ThreadRole;
use report::{Figure, Section, Table};
use std::collections::BTreeMap;

/// The LC-trie walk.
const TRIE_WALK: [&str; 1] = ["fib_table_lookup"];
/// An output route lookup (a sent datagram's route).
const OUTPUT_LOOKUP: [&str; 3] = [
    "ip_route_output_key_hash",
    "ip_route_output_key_hash_rcu",
    "ip_route_output_flow",
];

/// One (connect, routes) arm of the experiment.
#[derive(Debug, Clone, Default)]
pub(super) struct RouteArm {
    /// Sender CPU µs per datagram, one per trial.
    pub cpu_us: Vec<f64>,
    /// Per trial: (samples in the trie walk under an output lookup, the
    /// sender's samples).
    pub lookup: Vec<(u64, u64)>,
    /// Per trial: the trie's (mean leaf depth, deepest leaf, leaves).
    pub trie: Vec<(f64, f64, f64)>,
}

impl RouteArm {
    /// The output lookups' share of the sender's CPU, trial by trial.
    pub fn lookup_share(&self, routes: f64) -> Option<TrialShares> {
        TrialShares::from_counts(routes, &self.lookup)
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The arms by (connected, routes).
fn arms(d: &StudyData) -> BTreeMap<(bool, u64), RouteArm> {
    let mut out: BTreeMap<(bool, u64), RouteArm> = BTreeMap::new();
    for (t, p) in d.trials_of("routes") {
        let Some(routes) = p.routes else { continue };
        let a = out.entry((p.connect, u64::from(routes))).or_default();
        let m = &t.outcome.metrics;
        if let (Some(n), Some(c)) = (m.get("datagrams_sent"), m.get("cpu_sender_s")) {
            if *n > 0.0 {
                a.cpu_us.push(c / n * 1e6);
            }
        }
        if let Some(prof) = d.profiles.get(&t.id) {
            let c = count_stacks(prof, &[ThreadRole::Sender], &TRIE_WALK, &OUTPUT_LOOKUP);
            a.lookup.push((c.hit, c.total));
        }
        if let (Some(avg), Some(max), Some(leaves)) = (
            m.get("fib_main_avg_depth"),
            m.get("fib_main_max_depth"),
            m.get("fib_main_leaves"),
        ) {
            a.trie.push((*avg, *max, *leaves));
        }
    }
    out
}

/// Whether the route is looked up per datagram: the output lookups' share
/// of the sender's CPU, connected and with sendto().
pub(super) fn per_datagram_sentence(
    connected: Option<&TrialShares>,
    unconnected: Option<&TrialShares>,
) -> String {
    let (Some(c), Some(u)) = (connected, unconnected) else {
        return format!(
            "The run lacks {}, so a route lookup per datagram cannot be shown (output route \
             lookups, fib_table_lookup under ip_route_output_*: {} of the connected sender's CPU, \
             {} of the sendto() sender's).",
            if unconnected.is_none() {
                "sendto() trials (--connect off)"
            } else {
                "connected trials"
            },
            trial_share_words(connected),
            trial_share_words(unconnected)
        );
    };
    let both = format!(
        "output route lookups (fib_table_lookup under ip_route_output_*) took {} of the sender's \
         CPU with sendto() and {} on a connected socket",
        u.words(),
        c.words()
    );
    if !c.stated() || !u.stated() {
        return format!("Too few samples to compare: {both}.");
    }
    if u.point.mean > c.point.mean && differ(&u.point, &c.point) {
        format!(
            "Only the unconnected sender looks its route up per datagram: {both} (the socket's \
             cached route), apart beyond the 95% CIs."
        )
    } else {
        format!(
            "The samples do not show a route lookup per datagram: {both}, not more with \
             sendto() beyond the 95% CIs, so this run cannot show the table's cost."
        )
    }
}

/// How the per-datagram lookup's share changes from the smallest table to
/// the largest (the sendto() sender).
pub(super) fn growth_sentence(small: &TrialShares, large: &TrialShares) -> String {
    let (a, b) = (&small.point, &large.point);
    if !small.stated() || !large.stated() {
        return format!(
            "With sendto(), output route lookups took {} of the sender's CPU at {:.0} routes and \
             {} at {:.0}: too few samples to say how the table's size changes them.",
            small.words(),
            a.x,
            large.words(),
            b.x
        );
    }
    if differ(a, b) {
        format!(
            "With sendto(), output route lookups' share of the sender's CPU went from {} at {:.0} \
             routes to {} at {:.0}: it {} beyond the 95% CIs.",
            small.words(),
            a.x,
            large.words(),
            b.x,
            if b.mean > a.mean { "grew" } else { "fell" }
        )
    } else {
        format!(
            "With sendto(), output route lookups took {} of the sender's CPU at {:.0} routes and \
             {} at {:.0}: no change beyond the 95% CIs, where the paper's linear search grew \
             with every position (a change smaller than {:.2} percentage points could not have \
             been seen).",
            small.words(),
            a.x,
            large.words(),
            b.x,
            analysis::findings::resolution_of(a.mean, a.ci, b.mean, b.ci) * 100.0
        )
    }
}

/// Whether the sender's trie got deeper: (routes, mean leaf depth, deepest
/// leaf, leaves) at the smallest and the largest table.
pub(super) fn trie_sentence(small: (f64, f64, f64, f64), large: (f64, f64, f64, f64)) -> String {
    let (r0, avg0, max0, leaves0) = small;
    let (r1, avg1, max1, leaves1) = large;
    let deeper = max1 > max0 || avg1 > avg0 + 0.05;
    format!(
        "The sender's routing trie (LC-trie, /proc/net/fib_triestat) {} from {r0:.0} to {r1:.0} \
         routes: {leaves0:.0} → {leaves1:.0} leaves, mean leaf depth {avg0:.2} → {avg1:.2}, \
         deepest leaf {max0:.0} → {max1:.0}.",
        if deeper {
            "got deeper"
        } else {
            "did not get deeper"
        }
    )
}

/// The section.
pub(super) fn routes_section(d: &StudyData) -> Section {
    let mut s = Section::new("The routing table's size (Table 2)");
    s.paper_finding("Huang & Chen, Table 2", {
        let (first, last) = (TABLE2[0], TABLE2[TABLE2.len() - 1]);
        format!(
            "With a linear route search, ip_output's time for {TRANSFER_MB} MB grew from {:.2} \
                 s with the destination first in the table to {:.2} s with it tenth: about {:.2} \
                 s per position.",
            first.1,
            last.1,
            (last.1 - first.1) / f64::from(last.0 - first.0)
        )
    });
    let arms = arms(d);
    if arms.is_empty() {
        s.warning("The routing-table experiment has no successful trials in this run.");
        return s;
    }
    s.paragraph(
        "A connected UDP socket keeps its route, so the table is searched only by a sender that \
         names the address in every sendto() (--connect off). The routes are /32s in \
         198.18.0.0/15 on the sender's device; the destination is outside that block.",
    );
    s.paragraph(controlled_sentence(&[(
        "all trials".into(),
        offload_states(d, "routes", |_| true),
    )]));
    let mut f = Figure::new(
        "Sender CPU per 64-byte datagram against routes in the sender's table",
        "routes installed",
        "sender CPU (µs per datagram)",
    );
    f.log_x = true;
    let mut t = Table::new([
        "sender",
        "routes",
        "trie: leaves, mean / deepest leaf depth",
        "sender CPU per datagram",
        "output route lookups (share of sender CPU)",
        "ns per datagram in them",
    ])
    .with_caption(
        "Output route lookups: sender samples whose kernel stack holds fib_table_lookup under \
         ip_route_output_*; a share is shown only where every trial had 1000 samples or more.",
    )
    .key();
    for connected in [false, true] {
        let name = if connected { "connected" } else { "sendto()" };
        let curve: Vec<CurvePoint> = arms
            .iter()
            .filter(|((c, _), _)| *c == connected)
            .filter_map(|((_, r), a)| {
                let st = analysis::summarize(&a.cpu_us)?;
                Some(CurvePoint {
                    x: *r as f64,
                    mean: st.mean,
                    ci: if st.ci95.is_finite() { st.ci95 } else { 0.0 },
                })
            })
            .collect();
        if !curve.is_empty() {
            f.series.push(series(name, &curve));
        }
        for ((_, r), a) in arms.iter().filter(|((c, _), _)| *c == connected) {
            let share = a.lookup_share(*r as f64);
            let cpu = mean(&a.cpu_us);
            let trie = a.trie.first();
            t.row([
                name.to_string(),
                r.to_string(),
                trie.map_or("—".into(), |x| {
                    format!("{:.0}, {:.2} / {:.0}", x.2, x.0, x.1)
                }),
                cpu.map_or("—".into(), |c| format!("{c:.2} µs")),
                trial_share_words(share.as_ref()),
                match (share, cpu) {
                    (Some(sh), Some(c)) if sh.stated() => {
                        format!("{:.0} ns", sh.point.mean * c * 1e3)
                    }
                    _ => "—".into(),
                },
            ]);
        }
    }
    s.push(f);
    s.push(t);
    // Pooled over table sizes: does the sendto() sender look up per datagram?
    let pooled = |connected: bool| {
        let counts: Vec<(u64, u64)> = arms
            .iter()
            .filter(|((c, _), _)| *c == connected)
            .flat_map(|(_, a)| a.lookup.iter().copied())
            .collect();
        TrialShares::from_counts(0.0, &counts)
    };
    let (c, u) = (pooled(true), pooled(false));
    if c.is_some() || u.is_some() {
        s.finding(per_datagram_sentence(c.as_ref(), u.as_ref()));
    }
    let unconnected: Vec<(&u64, &RouteArm)> = arms
        .iter()
        .filter(|((c, _), _)| !*c)
        .map(|((_, r), a)| (r, a))
        .collect();
    if let (Some((r0, a0)), Some((r1, a1))) = (unconnected.first(), unconnected.last()) {
        if r1 > r0 {
            if let (Some(x), Some(y)) = (a0.lookup_share(**r0 as f64), a1.lookup_share(**r1 as f64))
            {
                s.finding(growth_sentence(&x, &y));
            }
        }
    }
    let tries: Vec<(u64, (f64, f64, f64))> = arms
        .iter()
        .filter_map(|((_, r), a)| a.trie.first().map(|x| (*r, *x)))
        .collect();
    if let (Some((r0, t0)), Some((r1, t1))) = (
        tries.iter().min_by_key(|x| x.0),
        tries.iter().max_by_key(|x| x.0),
    ) {
        if r1 > r0 {
            s.finding(trie_sentence(
                (*r0 as f64, t0.0, t0.1, t0.2),
                (*r1 as f64, t1.0, t1.1, t1.2),
            ));
        }
    }
    s
}
