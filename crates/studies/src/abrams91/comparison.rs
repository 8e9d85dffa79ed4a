//! The TCP/UDP comparison of Figs 1–3 as a computed claim: which protocol
//! is faster at each write size both curves have (beyond CI, or within it
//! with the smallest difference the trials could have seen), which is
//! faster at the smallest writes, where the other overtakes it and by how
//! much, and whether the paper's pattern (TCP ahead at small writes, UDP at
//! large) holds.

use analysis::findings::{differ, size_words, CurvePoint};
use report::format::{column, number, Unit};

/// Which of two curves leads at one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Lead {
    /// The first curve is higher beyond CI.
    First,
    /// The second curve is higher beyond CI.
    Second,
    /// Within CI of each other.
    Neither,
}

/// Two curves at one level both have.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Level {
    /// The first curve's point.
    pub a: CurvePoint,
    /// The second curve's point.
    pub b: CurvePoint,
    /// Which one leads.
    pub lead: Lead,
}

/// Compares two curves at every level both have, by increasing x.
pub(crate) fn compare(a: &[CurvePoint], b: &[CurvePoint]) -> Vec<Level> {
    let mut out: Vec<Level> = a
        .iter()
        .filter_map(|pa| b.iter().find(|pb| pb.x == pa.x).map(|pb| (*pa, *pb)))
        .map(|(a, b)| Level {
            a,
            b,
            lead: match (differ(&a, &b), a.mean > b.mean) {
                (false, _) => Lead::Neither,
                (true, true) => Lead::First,
                (true, false) => Lead::Second,
            },
        })
        .collect();
    out.sort_by(|x, y| x.a.x.total_cmp(&y.a.x));
    out
}

/// "512 B (912 ± 5 against 472 ± 3 Mbit/s, 1.93×)": a level where `hi`
/// leads, both rates (Mbit/s in the curves) in bit/s with one prefix and
/// the digits of `report::format`.
fn lead_words(x: f64, hi: &CurvePoint, lo: &CurvePoint) -> String {
    let ratio = if lo.mean > 0.0 {
        format!("{:.2}×", hi.mean / lo.mean)
    } else {
        "against nothing".into()
    };
    let (unit, cells) = column(
        &[
            (hi.mean * 1e6, Some(hi.ci * 1e6)),
            (lo.mean * 1e6, Some(lo.ci * 1e6)),
        ],
        Unit::Si("bit/s"),
    );
    format!(
        "{} ({} against {} {unit}, {ratio})",
        size_words(x),
        cells[0],
        cells[1]
    )
}

/// "a, b and c".
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The comparison as a finding: TCP is `tcp`, UDP (received) is `udp`,
/// both in Mbit/s against write size; `None` when they share no level.
pub(crate) fn tcp_udp_sentence(
    where_: &str,
    tcp: &[CurvePoint],
    udp: &[CurvePoint],
) -> Option<String> {
    let levels = compare(tcp, udp);
    let first = levels.first()?;
    let name = |l: Lead| if l == Lead::First { "TCP" } else { "UDP" };
    // The curves are in Mbit/s; written in bit/s by the one rule.
    let mbit = |m: f64, ci: Option<f64>| {
        report::measure(m * 1e6, ci.map(|c| c * 1e6), report::Unit::Si("bit/s"))
    };
    let mut out = format!("On {where_}, at the smallest writes both have, ");
    match first.lead {
        Lead::Neither => out.push_str(&format!(
            "TCP and UDP are within CI of each other ({}: {} against {}; a difference below {} \
             could not have been seen).",
            size_words(first.a.x),
            mbit(first.a.mean, Some(first.a.ci)),
            mbit(first.b.mean, Some(first.b.ci)),
            mbit(first.a.ci + first.b.ci, None)
        )),
        lead => {
            let (hi, lo) = if lead == Lead::First {
                (&first.a, &first.b)
            } else {
                (&first.b, &first.a)
            };
            let other = if lead == Lead::First { "UDP" } else { "TCP" };
            out.push_str(&format!(
                "{} is faster than {other} beyond CI ({}).",
                name(lead),
                lead_words(first.a.x, hi, lo)
                    .replacen(" (", ": ", 1)
                    .trim_end_matches(')')
            ));
        }
    }
    let words = |which: Lead| -> Vec<String> {
        levels
            .iter()
            .skip(1)
            .filter(|l| l.lead == which)
            .map(|l| match which {
                Lead::First => lead_words(l.a.x, &l.a, &l.b),
                _ => lead_words(l.a.x, &l.b, &l.a),
            })
            .collect()
    };
    match first.lead {
        Lead::First | Lead::Second => {
            let leader = first.lead;
            let other = if leader == Lead::First {
                Lead::Second
            } else {
                Lead::First
            };
            let overtakes: Vec<&Level> = levels.iter().filter(|l| l.lead == other).collect();
            match overtakes.first() {
                None => out.push_str(&format!(
                    " {} is faster than {} beyond CI at none of the {} write sizes both have.",
                    name(other),
                    name(leader),
                    levels.len()
                )),
                Some(o) => {
                    out.push_str(&format!(
                        " {} overtakes {} beyond CI at {}.",
                        name(other),
                        name(leader),
                        list(&words(other))
                    ));
                    let again: Vec<String> = levels
                        .iter()
                        .filter(|l| l.a.x > o.a.x && l.lead == leader)
                        .map(|l| size_words(l.a.x))
                        .collect();
                    if !again.is_empty() {
                        out.push_str(&format!(
                            " {} is ahead again beyond CI at {}.",
                            name(leader),
                            list(&again)
                        ));
                    }
                }
            }
        }
        Lead::Neither => {
            let (t, u) = (words(Lead::First), words(Lead::Second));
            if t.is_empty() && u.is_empty() {
                out.push_str(" Neither is faster beyond CI at any larger write size.");
            }
            if !t.is_empty() {
                out.push_str(&format!(" TCP is faster beyond CI at {}.", list(&t)));
            }
            if !u.is_empty() {
                out.push_str(&format!(" UDP is faster beyond CI at {}.", list(&u)));
            }
        }
    }
    let within: Vec<String> = levels
        .iter()
        .skip(1)
        .filter(|l| l.lead == Lead::Neither)
        .map(|l| {
            format!(
                "{} (a difference below {} could not have been seen)",
                size_words(l.a.x),
                // Rates here are in Mbit/s; three significant digits, so a
                // 10 Mbit/s link's tiny CIs do not print as 0.0.
                number((l.a.ci + l.b.ci) * 1e6, Unit::Si("bit/s"))
            )
        })
        .collect();
    if !within.is_empty() && first.lead != Lead::Neither {
        out.push_str(&format!(" Within CI at {}.", list(&within)));
    }
    let last = levels.last().map(|l| l.lead);
    let paper = first.lead == Lead::First && last == Some(Lead::Second) && levels.len() > 1;
    out.push_str(if paper {
        " The paper's pattern (TCP ahead at small writes, UDP at large ones) holds here."
    } else {
        " The paper's pattern (TCP ahead at small writes, UDP at large ones) does not hold here."
    });
    Some(out)
}

/// The sentence on the two senders' rates at full speed (λ with TCP against
/// λ with UDP datagrams of 1 KB): the segmentation-offload explanation is
/// printed only when TCP's sender is the faster beyond CI, which is what it
/// explains.
pub(crate) fn sender_rates_sentence(
    tcp: &CurvePoint,
    udp: &CurvePoint,
    mbit: &dyn Fn(f64) -> String,
) -> String {
    let rates = format!(
        "At full speed the sender produces {} with TCP against {} with UDP datagrams of 1 KB ({:.2}×)",
        mbit(tcp.mean),
        mbit(udp.mean),
        tcp.mean / udp.mean
    );
    match (differ(tcp, udp), tcp.mean > udp.mean) {
        (true, true) => format!(
            "{rates}: TCP is faster beyond CI, as segmentation offload lets TCP send large \
             segments while each UDP datagram pays the whole path."
        ),
        (true, false) => format!(
            "{rates}: UDP is faster beyond CI, so on this host offloads do not make the TCP \
             sender the faster one."
        ),
        (false, _) => format!(
            "{rates}: within CI of each other (a difference below {} could not have been seen).",
            mbit(tcp.ci + udp.ci)
        ),
    }
}
