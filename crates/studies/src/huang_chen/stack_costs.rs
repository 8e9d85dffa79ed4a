//! The per-packet and per-byte fit on tcplab's stack per checksum variant
//! with the checksum's share (Figs 4, 8–9), the ACK cost on a stack
//! receiver with delayed ACKs off and every2 (Fig. 5), and the stack's
//! routing table's size against per-packet cost per structure (Table 2).

use super::paper::{
    ACK_SAVING, ACK_SHARE, CHECKSUM_SHARE, CHECKSUM_TCPIP_SHARE, TABLE2, TABLE2_PACKETS,
};
use super::stack::{stack_trials, StackTrial, ACK, CHECKSUM, OFFLOAD, ROUTES};
use super::stack_claims::{
    cheapest_per_byte_sentence, delack_sentence, fit_cells, offload_share_sentence,
    route_growth_sentence,
};
use super::stack_table1::{point, us_cell};
use crate::data::StudyData;
use analysis::cpu::fit_packet_byte;
use analysis::findings::CurvePoint;
use record::factor::{Checksum, DelayedAck, RouteTable};
use report::{Section, Table};
use std::collections::BTreeMap;

/// A share cell in percent.
fn pct_cell(p: Option<CurvePoint>) -> String {
    p.map_or("—".into(), |p| {
        format!("{:.2}% ± {:.2}%", p.mean * 100.0, p.ci * 100.0)
    })
}

/// Each trial's checksum share of busy time; trials whose share cannot be
/// (above 1: brackets preempted past the busy time) are left out with a
/// warning.
pub(super) fn checksum_shares(v: &[StackTrial], id: &str, warnings: &mut Vec<String>) -> Vec<f64> {
    let mut out = Vec::new();
    for t in v {
        let share = t.block_s("checksum") / t.busy_s;
        if (0.0..=1.0).contains(&share) {
            out.push(share);
        } else {
            warnings.push(format!(
                "A trial of {id} has a checksum share of {:.1}% of busy time, more than all of \
                 it: impossible, left out.",
                share * 100.0
            ));
        }
    }
    out
}

/// What the stack's own time leaves out: the device's system calls
/// (Linux's side of the TUN runs inside them), the wait for the device,
/// the brackets' own cost and the busy time no bracket covered (where a
/// preempted thread's lost time goes).
const NOT_OWN: [&str; 5] = [
    "device_send_write",
    "device_receive_read",
    "device_wait",
    "accounting_brackets",
    "unattributed",
];

/// The stack's own time in a trial: its timed blocks but [`NOT_OWN`].
fn own_time_s(t: &StackTrial) -> f64 {
    t.blocks
        .iter()
        .filter(|(k, _)| !NOT_OWN.contains(&k.as_str()))
        .map(|(_, v)| *v)
        .sum()
}

/// The per-packet and per-byte fit per checksum variant.
pub(super) fn fit_stack_section(d: &StudyData) -> Section {
    let mut s = Section::new("Per packet and per byte on tcplab's stack, per checksum variant");
    s.paper_finding(
        "Huang & Chen, §3 and Fig. 4",
        format!(
            "The checksum took almost {CHECKSUM_SHARE}% of the sender's time \
             ({CHECKSUM_TCPIP_SHARE} of TCP/IP's own), a per-byte cost; done in hardware it would \
             save that share."
        ),
    );
    let mut arms: Vec<(Checksum, Vec<StackTrial>)> = Vec::new();
    let computed = stack_trials(d, CHECKSUM, true);
    for c in [Checksum::Bytewise, Checksum::Rfc1071] {
        let v: Vec<StackTrial> = computed
            .iter()
            .filter(|t| t.params.checksum.unwrap_or(Checksum::Rfc1071) == c)
            .cloned()
            .collect();
        arms.push((c, v));
    }
    arms.push((Checksum::Offload, stack_trials(d, OFFLOAD, true)));
    if arms.iter().all(|(_, v)| v.is_empty()) {
        s.warning(format!(
            "No accounted trial of {CHECKSUM} or {OFFLOAD}: the fit needs --stack tcplab \
             --account on."
        ));
        return s;
    }
    s.paragraph(
        "Each trial's own stack time by the cycle counter (--account on): its timed blocks \
         less the device's system calls (the TUN write and read, where Linux's own input and \
         output of the packet run), the wait for the device, the brackets' cost and the \
         unattributed rest; per data segment it sent, against the payload bytes per segment, fitted \
         as cost = a·packets + b·bytes (per packet: a + b·bytes per packet) over the MSS \
         levels, per checksum variant; a fit whose R² is \
         below 0 predicts worse than the mean and is reported as failed. Offload runs over the \
         offloading TUN (64 KB super-packets, the checksum left to the kernel), so its packets \
         are super-packets. There is no incremental arm: --checksum incremental patches only \
         pure ACKs by RFC 1624, and a sender's data segments each carry new payload, summed \
         whole under it as under rfc1071 (it is measured on the receiver's ACKs, in its own \
         section). ± are 95% intervals (1.96 standard errors of a fit, t intervals over \
         trials).",
    );
    let mut t = Table::new([
        "checksum",
        "trials",
        "per packet (µs)",
        "per byte (ns)",
        "R²",
        "checksum share of busy time",
        "checksum block ns per byte",
    ])
    .key();
    let mut fitted: Vec<(String, CurvePoint)> = Vec::new();
    let mut direct: Vec<(String, CurvePoint)> = Vec::new();
    let mut shares: BTreeMap<&str, CurvePoint> = BTreeMap::new();
    let mut warnings = Vec::new();
    for (c, v) in &arms {
        if v.is_empty() {
            continue;
        }
        let id = if *c == Checksum::Offload {
            OFFLOAD
        } else {
            CHECKSUM
        };
        // Per packet: cost per packet = a + b·(bytes per packet), the
        // same fit with each trial's counts divided by its packets, so the
        // trials' lengths do not weigh.
        let obs: Vec<(f64, f64, f64)> = v
            .iter()
            .map(|t| (1.0, t.bytes / t.segments, own_time_s(t) / t.segments))
            .collect();
        let fit = fit_packet_byte(&obs);
        let share = point(&checksum_shares(v, id, &mut warnings));
        let per_byte = point(
            &v.iter()
                .map(|t| t.block_s("checksum") * 1e9 / t.bytes)
                .collect::<Vec<_>>(),
        );
        if let Some(p) = share {
            shares.insert(c.name(), p);
        }
        if let Some(p) = per_byte {
            direct.push((c.name().to_string(), p));
        }
        let (pp, pb, r2) = match &fit {
            Ok(f) => {
                let (cells, warning) = fit_cells(c.name(), f);
                if let Some(w) = warning {
                    warnings.push(w);
                } else {
                    fitted.push((
                        c.name().to_string(),
                        CurvePoint {
                            x: 0.0,
                            mean: f.per_byte_ns,
                            ci: 1.96 * f.per_byte_se_ns,
                        },
                    ));
                }
                cells
            }
            Err(e) => {
                warnings.push(format!("No fit with --checksum {}: {e}.", c.name()));
                ("—".into(), "—".into(), "—".into())
            }
        };
        t.row([
            c.name().to_string(),
            v.len().to_string(),
            pp,
            pb,
            r2,
            pct_cell(share),
            per_byte.map_or("—".into(), |p| format!("{:.3} ± {:.3}", p.mean, p.ci)),
        ]);
    }
    s.push(t);
    if let Some(f) = cheapest_per_byte_sentence("the fit of the stack's own time", &fitted) {
        s.finding(f);
    }
    if let Some(f) = cheapest_per_byte_sentence("the checksum block alone", &direct) {
        s.finding(f);
    }
    if let (Some(off), Some(rfc)) = (shares.get("offload"), shares.get("rfc1071")) {
        s.finding(offload_share_sentence(off, ("rfc1071", rfc)));
    }
    for w in warnings {
        s.warning(w);
    }
    s
}

/// Per-trial values of `f` over trials, as a mean and its 95% CI.
fn over(v: &[&StackTrial], f: impl Fn(&StackTrial) -> f64) -> Option<CurvePoint> {
    point(&v.iter().map(|t| f(t)).collect::<Vec<_>>())
}

/// ACK cost on the stack receiver, ACKs every segment against every second.
pub(super) fn ack_stack_section(d: &StudyData) -> Section {
    let mut s = Section::new("ACK cost on tcplab's stack receiver: --delack off against every2");
    s.paper_finding(
        "Huang & Chen, §3 and Fig. 5",
        format!(
            "Sending and receiving the ACKs took roughly {ACK_SHARE}% of the overhead; an ACK for \
             every two packets would halve it, a {ACK_SAVING}% saving."
        ),
    );
    let all = stack_trials(d, ACK, false);
    let arm = |a: DelayedAck| -> Vec<&StackTrial> {
        all.iter()
            .filter(|t| t.params.delack.unwrap_or(DelayedAck::Every2) == a)
            .collect()
    };
    let (off, every2) = (arm(DelayedAck::Off), arm(DelayedAck::Every2));
    if off.is_empty() && every2.is_empty() {
        s.warning(format!(
            "No accounted receiver trial of {ACK}: it needs --server-stack tcplab --account on."
        ));
        return s;
    }
    s.paragraph(
        "Linux sends to tcplab's stack over a plain TUN; the stack receives and generates the \
         ACKs, each block timed exactly (--account on). Per data segment the stack received.",
    );
    type Measure = (&'static str, fn(&StackTrial) -> f64);
    let measures: [Measure; 5] = [
        ("ACKs per data segment", |t| t.acks / t.segments),
        ("ACK generation (µs per data packet)", |t| {
            t.block_us_per_segment("ack_generation")
        }),
        ("ACK generation (µs per ACK sent)", |t| {
            t.block_s("ack_generation") * 1e6 / t.acks.max(1.0)
        }),
        ("ACK generation, share of busy time (%)", |t| {
            t.block_s("ack_generation") / t.busy_s * 100.0
        }),
        ("receiver busy (µs per data packet)", |t| {
            t.busy_s * 1e6 / t.segments
        }),
    ];
    let mut t = Table::new(["measure", "off (ACK every segment)", "every2"]).key();
    let mut got: Vec<(Option<CurvePoint>, Option<CurvePoint>)> = Vec::new();
    for (name, f) in measures {
        let (a, b) = (over(&off, f), over(&every2, f));
        t.row([name.to_string(), us_cell(a), us_cell(b)]);
        got.push((a, b));
    }
    s.push(t);
    if let ((Some(ao), Some(ae)), (Some(go), Some(ge))) = (got[0], got[1]) {
        s.finding(delack_sentence(&ao, &ae, &go, &ge));
    }
    s
}

/// The stack's routing table against its size, per structure.
pub(super) fn routes_stack_section(d: &StudyData) -> Section {
    let mut s =
        Section::new("Routing-table size against per-packet cost on tcplab's stack (Table 2)");
    s.paper_finding(
        "Huang & Chen, Table 2",
        format!(
            "With a linearly searched table, ip_output's time per packet grew with the \
             destination's place in it: {}.",
            TABLE2
                .iter()
                .map(|(n, sec)| format!("place {n}: {:.1} µs", sec / TABLE2_PACKETS * 1e6))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let all = stack_trials(d, ROUTES, true);
    if all.is_empty() {
        s.warning(format!(
            "No accounted trial of {ROUTES}: it needs --stack tcplab --route-table … --routes … \
             --account on."
        ));
        return s;
    }
    s.paragraph(
        "tcplab's stack sends to Linux with N extra /32 routes in its own table (--routes), \
         searched on every packet it sends by the structure --route-table names; the route \
         lookup and ip_output are timed exactly (--account on), per data segment sent.",
    );
    let mut groups: BTreeMap<(&'static str, u32), Vec<&StackTrial>> = BTreeMap::new();
    for t in &all {
        let table = t.params.route_table.unwrap_or(RouteTable::Trie).name();
        groups
            .entry((table, t.params.routes.unwrap_or(0)))
            .or_default()
            .push(t);
    }
    let mut tab = Table::new([
        "table",
        "routes",
        "route lookup (µs per packet)",
        "ip_output with lookup (µs per packet)",
        "busy (µs per packet)",
    ])
    .key();
    let mut lookup: BTreeMap<&str, Vec<(u32, CurvePoint)>> = BTreeMap::new();
    for ((table, n), v) in &groups {
        let l = over(v, |t| t.block_us_per_segment("route_lookup"));
        tab.row([
            table.to_string(),
            n.to_string(),
            us_cell(l),
            us_cell(over(v, |t| {
                t.block_us_per_segment("route_lookup") + t.block_us_per_segment("ip_output")
            })),
            us_cell(over(v, |t| t.busy_s * 1e6 / t.segments)),
        ]);
        if let Some(l) = l {
            lookup.entry(table).or_default().push((*n, l));
        }
    }
    s.push(tab);
    for table in ["linear", "hash", "trie"] {
        let Some(v) = lookup.get(table) else { continue };
        if let (Some(a), Some(b)) = (v.first(), v.last()) {
            if a.0 != b.0 {
                s.finding(route_growth_sentence(table, (a.0, &a.1), (b.0, &b.1)));
            }
        }
    }
    s
}
