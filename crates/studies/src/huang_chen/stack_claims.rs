//! The claims of the stack's sections, on numbers alone (so each is tested
//! on synthetic data both ways): the largest block, the cheapest checksum
//! per byte, offload's checksum share, the ACKs delayed ACKs save, and
//! whether a routing table's cost grows with its size.

use analysis::cpu::PacketByteFit;
use analysis::findings::{differ, CurvePoint};

/// The checksum block's share of the stack's busy time under which it is
/// "about zero".
pub(super) const NEGLIGIBLE_SHARE: f64 = 0.01;

fn us(p: &CurvePoint) -> String {
    if p.ci > 0.0 {
        format!("{:.2} ± {:.2} µs", p.mean, p.ci)
    } else {
        format!("{:.2} µs", p.mean)
    }
}

/// Which block of one end costs most per packet, against the runner-up by
/// the 95% CIs: `rows` are (block, µs per data packet).
pub(super) fn largest_block_sentence(side: &str, rows: &[(String, CurvePoint)]) -> Option<String> {
    let mut v: Vec<&(String, CurvePoint)> = rows.iter().collect();
    v.sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean));
    let (top, p) = v.first()?;
    let Some((next, q)) = v.get(1) else {
        return Some(format!(
            "On tcplab's stack ({side}) the only timed block is {top}, {} per data packet.",
            us(p)
        ));
    };
    Some(if p.ci > 0.0 && q.ci > 0.0 && differ(p, q) {
        format!(
            "On tcplab's stack ({side}) the costliest block per data packet is {top}, {} \
             against {} for the next, {next}: apart beyond the 95% CIs.",
            us(p),
            us(q)
        )
    } else {
        format!(
            "On tcplab's stack ({side}) the costliest blocks per data packet, {top} ({}) and \
             {next} ({}), cannot be told apart by the 95% CIs (a difference under {:.2} µs \
             could not have been seen).",
            us(p),
            us(q),
            analysis::findings::resolution_of(p.mean, p.ci, q.mean, q.ci)
        )
    })
}

/// Which checksum variant costs least per byte by `what` (the fit of the
/// stack's own time, or the checksum block alone), against the next
/// cheapest beyond the 95% intervals: `rows` are (variant, ns per byte
/// with its 95% half-width).
pub(super) fn cheapest_per_byte_sentence(
    what: &str,
    rows: &[(String, CurvePoint)],
) -> Option<String> {
    let mut v: Vec<&(String, CurvePoint)> = rows.iter().collect();
    v.sort_by(|a, b| a.1.mean.total_cmp(&b.1.mean));
    let (best, a) = v.first()?;
    let (next, b) = v.get(1)?;
    let margin = a.ci + b.ci;
    let diff = b.mean - a.mean;
    Some(if diff > margin {
        format!(
            "On tcplab's stack the checksum variant that costs least per byte ({what}) is \
             {best}: {:.3} ± {:.3} ns per byte against {:.3} ± {:.3} ns with {next}, the next \
             cheapest, apart beyond the 95% intervals.",
            a.mean, a.ci, b.mean, b.ci,
        )
    } else {
        format!(
            "On tcplab's stack no checksum variant costs least per byte ({what}) beyond the 95% \
             intervals: {best} {:.3} ns and {next} {:.3} ns differ by {diff:.3} ns, under the \
             {margin:.3} ns the trials could detect.",
            a.mean, b.mean,
        )
    })
}

/// Whether offloading the checksum takes it off the stack's CPU: the
/// checksum block's share of busy time with offload against a computed
/// variant's (`computed` names it).
pub(super) fn offload_share_sentence(
    offload: &CurvePoint,
    computed: (&str, &CurvePoint),
) -> String {
    let pct = |p: &CurvePoint| format!("{:.2}% ± {:.2}%", p.mean * 100.0, p.ci * 100.0);
    let (name, c) = computed;
    if offload.mean + offload.ci < NEGLIGIBLE_SHARE {
        format!(
            "With the checksum offloaded, the stack's checksum block takes {} of its busy \
             time, under {:.0}% at the 95% CI's top: about zero, against {} with {name}.",
            pct(offload),
            NEGLIGIBLE_SHARE * 100.0,
            pct(c)
        )
    } else {
        format!(
            "With the checksum offloaded, the stack's checksum block still takes {} of its \
             busy time (against {} with {name}): not about zero, its CI reaching past {:.0}%.",
            pct(offload),
            pct(c),
            NEGLIGIBLE_SHARE * 100.0
        )
    }
}

/// `metric` from `before` to `after` with its relative change, and whether
/// it went down, up, or neither beyond the 95% CIs (with the smallest
/// change the trials could have shown).
pub(super) fn change_clause(metric: &str, before: &CurvePoint, after: &CurvePoint) -> String {
    let rel = (after.mean - before.mean) / before.mean * 100.0;
    let head = format!(
        "{metric} {:.3} ± {:.3} → {:.3} ± {:.3} ({rel:+.0}%)",
        before.mean, before.ci, after.mean, after.ci
    );
    if !(before.ci > 0.0 && after.ci > 0.0) {
        format!("{head}, without CIs (single trials): no change claimed")
    } else if !differ(before, after) {
        format!(
            "{head}: no change beyond the 95% CIs (a change under {:.0}% could not have been \
             seen)",
            (analysis::findings::resolution_of(before.mean, before.ci, after.mean, after.ci))
                / before.mean
                * 100.0
        )
    } else if after.mean < before.mean {
        format!("{head}, down beyond the 95% CIs")
    } else {
        format!("{head}, up beyond the 95% CIs")
    }
}

/// What ACKing every second segment did on the stack receiver: ACKs per
/// data segment and ACK-generation µs per data packet, off → every2.
pub(super) fn delack_sentence(
    acks_off: &CurvePoint,
    acks_every2: &CurvePoint,
    gen_off: &CurvePoint,
    gen_every2: &CurvePoint,
) -> String {
    format!(
        "On tcplab's stack receiver, ACKing every second segment (--delack off → every2): {}; \
         {}.",
        change_clause("ACKs per data segment", acks_off, acks_every2),
        change_clause("ACK-generation µs per data packet", gen_off, gen_every2)
    )
}

/// Whether a routing table's per-packet route-lookup cost grows from the
/// fewest routes to the most: `few` and `many` are (routes, µs per packet).
pub(super) fn route_growth_sentence(
    table: &str,
    few: (u32, &CurvePoint),
    many: (u32, &CurvePoint),
) -> String {
    let (n0, a) = few;
    let (n1, b) = many;
    let head = format!(
        "On tcplab's stack the {table} routing table's lookup costs {} per packet with {n0} \
         route(s) and {} with {n1}",
        us(a),
        us(b)
    );
    if !(a.ci > 0.0 && b.ci > 0.0) {
        format!("{head}: single trials, no growth claimed.")
    } else if differ(a, b) && b.mean > a.mean {
        format!(
            "{head}: it grows with the table, ×{:.1}, beyond the 95% CIs.",
            b.mean / a.mean.max(f64::MIN_POSITIVE)
        )
    } else if differ(a, b) {
        format!("{head}: lower with more routes, beyond the 95% CIs — it does not grow.")
    } else {
        format!(
            "{head}: it does not grow beyond the 95% CIs (a change under {:.2} µs could not \
             have been seen).",
            analysis::findings::resolution_of(a.mean, a.ci, b.mean, b.ci)
        )
    }
}

/// The stack sender's busy µs per data packet at `mss` against the
/// paper's and, when sampled, Linux's at the MSS nearest (`linux`).
pub(super) fn total_sentence(
    mss: u32,
    paper_us: f64,
    stack: &CurvePoint,
    linux: Option<(u32, &CurvePoint)>,
) -> String {
    let mut out = format!(
        "At MSS {mss} tcplab's stack sender is busy {} per data packet, {:.0}× less than the \
         paper's 386/33 ({paper_us:.2} µs)",
        us(stack),
        paper_us / stack.mean.max(f64::MIN_POSITIVE)
    );
    if let Some((m, l)) = linux {
        let verdict = if !(stack.ci > 0.0 && l.ci > 0.0) {
            "single trials: neither claimed cheaper".to_string()
        } else if !differ(stack, l) {
            format!(
                "the two cannot be told apart by the 95% CIs (a difference under {:.2} µs \
                 could not have been seen)",
                analysis::findings::resolution_of(stack.mean, stack.ci, l.mean, l.ci)
            )
        } else if stack.mean < l.mean {
            format!(
                "the stack costs {:.1}× less than Linux, beyond the 95% CIs",
                l.mean / stack.mean
            )
        } else {
            format!(
                "the stack costs {:.1}× more than Linux, beyond the 95% CIs",
                stack.mean / l.mean
            )
        };
        out.push_str(&format!(
            "; Linux's sender, sampled at MSS {m}, spends {} per data packet: {verdict}",
            us(l)
        ));
    }
    out.push('.');
    out
}

/// A per-packet and per-byte fit's table cells (per packet, per byte, R²)
/// and, when its costs are not reported, the warning saying why: R²
/// below 0 (worse than the mean), or a negative cost (impossible when
/// below zero beyond its 95% interval, else unresolved).
pub(super) fn fit_cells(
    variant: &str,
    f: &PacketByteFit,
) -> ((String, String, String), Option<String>) {
    let r2 = format!("{:.3}", f.r2);
    if f.r2 < 0.0 {
        let w = format!(
            "The fit with --checksum {variant} failed: R² {:.2}, the trials' times scatter \
             around any per-packet plus per-byte line more than the packets and bytes move \
             them; neither cost is reported.",
            f.r2
        );
        return (("fit failed".into(), "fit failed".into(), r2), Some(w));
    }
    let (pp, pb) = (1.96 * f.per_packet_se_us, 1.96 * f.per_byte_se_ns);
    if f.per_packet_us < 0.0 || f.per_byte_ns < 0.0 {
        let beyond = f.per_packet_us + pp < 0.0 || f.per_byte_ns + pb < 0.0;
        let w = format!(
            "The fit with --checksum {variant} gives a negative cost ({:.3} ± {pp:.3} µs per \
             packet, {:.3} ± {pb:.3} ns per byte): {}, so neither is reported.",
            f.per_packet_us,
            f.per_byte_ns,
            if beyond {
                "below zero beyond its 95% interval, impossible"
            } else {
                "its 95% interval holds zero, unresolved"
            }
        );
        let word = if beyond { "impossible" } else { "unresolved" };
        return ((word.into(), word.into(), r2), Some(w));
    }
    (
        (
            format!("{:.3} ± {pp:.3}", f.per_packet_us),
            format!("{:.3} ± {pb:.3}", f.per_byte_ns),
            r2,
        ),
        None,
    )
}
