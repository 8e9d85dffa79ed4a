//! The incremental checksum (RFC 1624) where tcplab's stack applies it:
//! a receiver's pure ACKs, each written from the connection's last with
//! the ACK number, window and timestamps rewritten (`--checksum
//! incremental`). Linux sends to a stack receiver that ACKs every data
//! segment, under rfc1071 and under incremental: how many ACKs the update
//! patched (the stack's `incremental_checksums` counter) and what it did
//! to the checksum block. A sender's data segments each carry new payload
//! and are summed whole under either method (a quick run's stack sender
//! patched none of its 34,000–77,000 segments per trial, and retransmitted
//! none), so the stack-sender checksum experiment has no incremental arm.

use super::paper::{CHECKSUM_SHARE, CHECKSUM_TCPIP_SHARE};
use super::stack::{stack_trials, StackTrial, ACK_CHECKSUM};
use super::stack_claims::change_clause;
use super::stack_table1::{point, us_cell};
use crate::data::StudyData;
use analysis::findings::CurvePoint;
use record::factor::Checksum;
use report::{Section, Table};

/// The share of ACKs patched at or above which the arm is said to measure
/// the incremental update.
const MOST: f64 = 0.5;

/// How many of the receiver's ACKs RFC 1624 patched under `--checksum
/// incremental`: `patched` of `acks`, over the arm's trials.
pub(super) fn patched_acks_sentence(patched: f64, acks: f64) -> String {
    let share = if acks > 0.0 { patched / acks } else { 0.0 };
    let head = format!(
        "With --checksum incremental, RFC 1624 patched {patched:.0} of the {acks:.0} ACKs the \
         stack receiver sent ({:.1}%) instead of summing them",
        share * 100.0
    );
    if share >= MOST {
        format!("{head}: the arm measures the incremental update on most of its ACKs.")
    } else if patched == 0.0 {
        format!("{head}: none, so the arm measured rfc1071's full sums under another name.")
    } else {
        format!(
            "{head}: under {:.0}% of them, so the arm mostly measured rfc1071's full sums.",
            MOST * 100.0
        )
    }
}

/// What the incremental update did to the receiver's checksum block per
/// data packet, rfc1071 → incremental.
pub(super) fn ack_checksum_sentence(rfc1071: &CurvePoint, incremental: &CurvePoint) -> String {
    format!(
        "On tcplab's stack receiver (an ACK per data segment), --checksum rfc1071 → \
         incremental: {}.",
        change_clause("checksum-block µs per data packet", rfc1071, incremental)
    )
}

/// Per-trial values of `f` as a mean and its 95% CI.
fn over(v: &[&StackTrial], f: impl Fn(&StackTrial) -> f64) -> Option<CurvePoint> {
    point(&v.iter().map(|t| f(t)).collect::<Vec<_>>())
}

/// The incremental checksum on the stack receiver's ACKs.
pub(super) fn ack_checksum_section(d: &StudyData) -> Section {
    let mut s = Section::new(
        "The incremental checksum (RFC 1624) on tcplab's stack receiver's ACKs: rfc1071 against \
         incremental",
    );
    s.paper_finding(
        "Huang & Chen, §3 and Fig. 4",
        format!(
            "The checksum took almost {CHECKSUM_SHARE}% of the sender's time \
             ({CHECKSUM_TCPIP_SHARE} of TCP/IP's own), a per-byte cost; done in hardware it would \
             save that share."
        ),
    );
    let all = stack_trials(d, ACK_CHECKSUM, false);
    let arm = |c: Checksum| -> Vec<&StackTrial> {
        all.iter()
            .filter(|t| t.params.checksum.unwrap_or(Checksum::Rfc1071) == c)
            .collect()
    };
    let (rfc, inc) = (arm(Checksum::Rfc1071), arm(Checksum::Incremental));
    if rfc.is_empty() && inc.is_empty() {
        s.warning(format!(
            "No accounted receiver trial of {ACK_CHECKSUM}: it needs --server-stack tcplab \
             --checksum rfc1071,incremental --account on."
        ));
        return s;
    }
    s.paragraph(
        "Linux sends to tcplab's stack over a plain TUN; the stack receives, verifying every \
         data segment's checksum in full, and ACKs every data segment (--delack off). Under \
         --checksum incremental each pure ACK that differs from the connection's last only in \
         its ACK number, window and timestamps is written from it with the checksum patched \
         by RFC 1624 eqn. 3; the stack counts them (stack_server_incremental_checksums). A \
         data segment is summed whole under either method, so the checksum block's per-byte \
         cost is the same; only the ACKs' header sums can differ. Per data segment received; \
         ± are 95% t intervals over trials.",
    );
    let mut t = Table::new([
        "checksum",
        "trials",
        "ACKs per data segment",
        "ACKs patched by RFC 1624",
        "checksum block (µs per data packet)",
        "ACK generation (µs per ACK)",
        "busy (µs per data packet)",
    ])
    .key();
    let mut checksum_cost = Vec::new();
    let (mut findings, mut warnings) = (Vec::new(), Vec::new());
    for (c, v) in [(Checksum::Rfc1071, &rfc), (Checksum::Incremental, &inc)] {
        if v.is_empty() {
            warnings.push(format!(
                "No accounted trial of {ACK_CHECKSUM} with --checksum {}.",
                c.name()
            ));
            checksum_cost.push(None);
            continue;
        }
        let acks: f64 = v.iter().map(|t| t.acks).sum();
        let patched: Option<f64> = v.iter().map(|t| t.incremental).sum();
        let cost = over(v, |t| t.block_us_per_segment("checksum"));
        checksum_cost.push(cost);
        t.row([
            c.name().to_string(),
            v.len().to_string(),
            us_cell(over(v, |t| t.acks / t.segments)),
            patched.map_or("— (not counted)".into(), |p| {
                format!("{p:.0} of {acks:.0} ({:.1}%)", p / acks.max(1.0) * 100.0)
            }),
            us_cell(cost),
            us_cell(over(v, |t| {
                t.block_s("ack_generation") * 1e6 / t.acks.max(1.0)
            })),
            us_cell(over(v, |t| t.busy_s * 1e6 / t.segments)),
        ]);
        if c == Checksum::Incremental {
            match patched {
                Some(p) => findings.push(patched_acks_sentence(p, acks)),
                None => warnings.push(
                    "The incremental arm's trials carry no count of patched ACKs (a run from \
                     before the stack counted them): how many ACKs it applied to is unknown."
                        .to_string(),
                ),
            }
        }
    }
    s.push(t);
    if let [Some(a), Some(b)] = checksum_cost[..] {
        findings.push(ack_checksum_sentence(&a, &b));
    }
    for f in findings {
        s.finding(f);
    }
    for w in warnings {
        s.warning(w);
    }
    s
}
