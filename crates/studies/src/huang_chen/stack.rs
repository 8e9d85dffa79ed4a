//! Huang & Chen redone on tcplab's own stack: the experiments (a stack
//! end beside Linux over a plain TUN, its function blocks timed exactly by
//! `--account on`) and each trial's block times, read back from the CPU
//! profile the accounting stores (`tcplab_stack::<block>` frames).

use crate::data::StudyData;
use crate::spec::{levels, repeat, stack_duration, Experiment, PlanOptions};
use analysis::cpu::{attribute, STACK_BLOCK_PREFIX};
use analysis::layers::Block;
use record::{CpuProfile, ThreadRole, TrialParams};
use std::collections::BTreeMap;

/// Sender to Linux per checksum variant and MSS: Table 1 and the
/// per-packet and per-byte fit.
pub(super) const CHECKSUM: &str = "checksum-stack";
/// The same over the offloading TUN, checksums left to the kernel.
pub(super) const OFFLOAD: &str = "checksum-offload-stack";
/// Linux to a stack receiver, ACK every segment or every second one.
pub(super) const ACK: &str = "ack-stack";
/// Linux to a stack receiver that ACKs every segment, its ACKs' checksums
/// summed (rfc1071) or patched from the last one's (incremental).
pub(super) const ACK_CHECKSUM: &str = "checksum-ack-stack";
/// The stack sender's routing table: structure against size.
pub(super) const ROUTES: &str = "routes-stack";

/// The MSS levels of the fit: two in `--quick` (enough to part packets
/// from bytes), the paper's five in full.
fn mss_levels(o: &PlanOptions) -> &'static str {
    levels(o, "256,1024", "256,512,768,1024,1280")
}

/// The route counts of Table 2 on the stack.
pub(super) fn route_levels(o: &PlanOptions) -> &'static str {
    levels(o, "1,100000", "1,1000,100000")
}

/// The stack experiments. Stack trials run in the stack's own namespace
/// behind a TUN device: they take no `--topology`.
pub(super) fn experiments(o: &PlanOptions) -> Vec<Experiment> {
    let r = repeat(o);
    let dur = stack_duration(o);
    let common = format!("--account on --write-size 8192 --duration {dur} --repeat {r}");
    vec![
        Experiment::bench(
            CHECKSUM,
            "Table 1 and Figs 8–9 on tcplab's stack: a stack sender to Linux over a plain TUN (every segment a packet), each block timed by the cycle counter, per checksum variant and MSS (not incremental, which patches only pure ACKs: a sender's data segments are summed whole under it)",
            format!(
                "tcp-stream --stack tcplab --checksum bytewise,rfc1071 --mss {} {common}",
                mss_levels(o)
            ),
        ),
        Experiment::bench(
            OFFLOAD,
            "Fig. 4 on tcplab's stack: the checksum left to the kernel (the offloading TUN), per MSS",
            format!(
                "tcp-stream --stack tcplab-offload --checksum offload --mss {} {common}",
                mss_levels(o)
            ),
        ),
        Experiment::bench(
            ACK,
            "§3, Fig. 5 on tcplab's stack: Linux sending to a stack receiver that ACKs every data segment (off) or every second one (every2), MSS 1024",
            format!("tcp-stream --server-stack tcplab --delack off,every2 --mss 1024 {common}"),
        ),
        Experiment::bench(
            ACK_CHECKSUM,
            "The incremental checksum (RFC 1624) where the stack applies it: Linux sending to a stack receiver that ACKs every data segment, its ACKs summed (rfc1071) or patched from the connection's last ACK (incremental), MSS 1024",
            format!(
                "tcp-stream --server-stack tcplab --checksum rfc1071,incremental --delack off --mss 1024 {common}"
            ),
        ),
        Experiment::bench(
            ROUTES,
            "Table 2 on tcplab's stack: the sender's per-packet cost against the routes in its table, for each table structure, MSS 1024",
            format!(
                "tcp-stream --stack tcplab --route-table linear,hash,trie --routes {} --mss 1024 {common}",
                route_levels(o)
            ),
        ),
    ]
}

/// One accounted stack trial, seen from one end.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StackTrial {
    /// The trial's parameters.
    pub params: TrialParams,
    /// Exclusive seconds per stack block (`checksum`, `tcp_output`, …) of
    /// the end's thread.
    pub blocks: BTreeMap<String, f64>,
    /// Seconds per Huang & Chen block ([`Block::ALL`] order), by the
    /// analysis crate's block table.
    pub hc: Vec<f64>,
    /// The end's busy seconds by the cycle counter.
    pub busy_s: f64,
    /// Data segments: sent by a sending end, received by a receiving one.
    pub segments: f64,
    /// Segments the end sent back (a receiver's ACKs; 0 for a sender).
    pub acks: f64,
    /// Segments whose checksum RFC 1624 patched (`--checksum
    /// incremental`); `None` in a run from before the stack counted them.
    pub incremental: Option<f64>,
    /// Payload bytes transferred.
    pub bytes: f64,
}

impl StackTrial {
    /// A block's seconds (0 when it never ran).
    pub fn block_s(&self, name: &str) -> f64 {
        self.blocks.get(name).copied().unwrap_or(0.0)
    }

    /// A block's µs per data segment.
    pub fn block_us_per_segment(&self, name: &str) -> f64 {
        self.block_s(name) * 1e6 / self.segments
    }
}

/// The exclusive seconds per stack block of `role`'s threads.
pub(super) fn stack_blocks(p: &CpuProfile, role: ThreadRole) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in p.stacks.iter().filter(|s| p.role_of(s.tid) == role) {
        let Some(f) = s.kernel.first().or(s.user.first()) else {
            continue;
        };
        if let Some(name) = p.symbol(*f).strip_prefix(STACK_BLOCK_PREFIX) {
            *out.entry(name.to_string()).or_insert(0.0) += s.ns as f64 * 1e-9;
        }
    }
    out
}

/// The accounted trials of `id` from the end that sends (`sender`) or
/// receives; trials without a profile, a busy time or segments are left
/// out.
pub(super) fn stack_trials(d: &StudyData, id: &str, sender: bool) -> Vec<StackTrial> {
    let (end, role) = if sender {
        ("client", ThreadRole::Sender)
    } else {
        ("server", ThreadRole::Receiver)
    };
    d.trials_of(id)
        .into_iter()
        .filter_map(|(t, p)| {
            let prof = d.profiles.get(&t.id)?;
            let m = &t.outcome.metrics;
            let get = |k: &str| m.get(k).copied().filter(|v| v.is_finite());
            let (segments, acks) = if sender {
                (get(&format!("stack_{end}_segments_out"))?, 0.0)
            } else {
                (
                    get(&format!("stack_{end}_segments_in"))?,
                    get(&format!("stack_{end}_segments_out"))?,
                )
            };
            Some(StackTrial {
                params: p.clone(),
                blocks: stack_blocks(prof, role),
                hc: {
                    let a = attribute(prof);
                    let r = a.role(role);
                    Block::ALL
                        .iter()
                        .map(|b| r.map_or(0.0, |r| r.block_s(*b)))
                        .collect()
                },
                busy_s: get(&format!("stack_{end}_account_busy_s"))?,
                segments,
                acks,
                incremental: get(&format!("stack_{end}_incremental_checksums")),
                bytes: get("bytes")?,
            })
        })
        .filter(|s| s.segments > 0.0 && s.busy_s > 0.0 && s.bytes > 0.0)
        .collect()
}
