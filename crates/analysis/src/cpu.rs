//! CPU attribution of one trial's samples: per role (sender, receiver, …)
//! the time in each layer, each function block and each function; and, over
//! the trials of a run, the split of CPU time into a per-packet and a
//! per-byte cost (Huang & Chen §4).

use crate::layers::{
    Block, BlockTable, Category, CpuLayer, FunctionTable, LayerTable, BLOCK_TABLE_VERSION,
    LAYER_TABLE_VERSION,
};
use record::{CpuProfile, ThreadRole};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Functions listed per role.
pub const TOP_FUNCTIONS: usize = 15;

/// A category's time and share of its role's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// Layer, block or function name.
    pub name: String,
    /// CPU seconds.
    pub cpu_s: f64,
    /// Fraction of the role's CPU seconds.
    pub share: f64,
}

/// A function's time, with the layer it was counted in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionShare {
    /// The function (the frame that decided the layer, or the innermost).
    pub function: String,
    /// Its layer.
    pub layer: CpuLayer,
    /// CPU seconds.
    pub cpu_s: f64,
    /// Fraction of the role's CPU seconds.
    pub share: f64,
}

/// Where one role's CPU time went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleAttribution {
    /// The threads' role.
    pub role: ThreadRole,
    /// Threads with this role.
    pub threads: usize,
    /// CPU seconds of these threads.
    pub cpu_s: f64,
    /// Seconds no sample hit, spread over the sampled stacks of the same
    /// thread (part of `cpu_s`).
    pub unsampled_s: f64,
    /// Per layer, in [`CpuLayer::ALL`] order (layers with no time left out).
    pub layers: Vec<Share>,
    /// Per function block, in [`Block::ALL`] order.
    pub blocks: Vec<Share>,
    /// The functions with the most time, most first.
    pub functions: Vec<FunctionShare>,
}

impl RoleAttribution {
    /// Seconds in one layer.
    pub fn layer_s(&self, l: CpuLayer) -> f64 {
        self.layers
            .iter()
            .find(|s| s.name == l.name())
            .map_or(0.0, |s| s.cpu_s)
    }

    /// Seconds in one block.
    pub fn block_s(&self, b: Block) -> f64 {
        self.blocks
            .iter()
            .find(|s| s.name == b.name())
            .map_or(0.0, |s| s.cpu_s)
    }
}

/// Where a trial's CPU time went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuAttribution {
    /// Version of the layer table used.
    pub layer_table_version: u32,
    /// Version of the block table used.
    pub block_table_version: u32,
    /// The sampling event.
    pub clock: String,
    /// Samples taken.
    pub samples: u64,
    /// Share of busy time hit by samples directly (see [`CpuProfile::coverage`]).
    pub coverage: f64,
    /// Per role, in [`ThreadRole::ALL`] order (roles not seen left out).
    pub roles: Vec<RoleAttribution>,
    /// Idle CPU seconds of the host while sampling (/proc/stat).
    pub host_idle_s: f64,
}

impl CpuAttribution {
    /// The attribution of one role.
    pub fn role(&self, r: ThreadRole) -> Option<&RoleAttribution> {
        self.roles.iter().find(|a| a.role == r)
    }
}

/// Attributes a profile with the built-in tables.
pub fn attribute(p: &CpuProfile) -> CpuAttribution {
    attribute_with(p, LayerTable::builtin(), BlockTable::builtin())
}

/// Attributes a profile with given tables.
pub fn attribute_with(p: &CpuProfile, layers: &LayerTable, blocks: &BlockTable) -> CpuAttribution {
    // Each thread's unsampled time is spread over its sampled stacks in
    // proportion to their time; a thread with no sampled stack keeps it
    // as `other` (or `idle` for the idle task).
    let mut sampled_ns: HashMap<u32, u64> = HashMap::new();
    let mut unsampled_ns: HashMap<u32, u64> = HashMap::new();
    for s in &p.stacks {
        let m = if s.unsampled {
            &mut unsampled_ns
        } else {
            &mut sampled_ns
        };
        *m.entry(s.tid).or_default() += s.ns;
    }
    let mut acc: BTreeMap<ThreadRole, Acc> = BTreeMap::new();
    for s in &p.stacks {
        let role = p.role_of(s.tid);
        let a = acc.entry(role).or_default();
        a.tids.insert(s.tid);
        let sampled = sampled_ns.get(&s.tid).copied().unwrap_or(0);
        let unsampled = unsampled_ns.get(&s.tid).copied().unwrap_or(0);
        if s.unsampled {
            a.unsampled_s += s.ns as f64 * 1e-9;
            if sampled == 0 {
                let (l, b) = if s.tid == 0 {
                    (CpuLayer::Idle, Block::Other)
                } else {
                    (CpuLayer::Other, Block::Other)
                };
                a.add(
                    l,
                    b,
                    if s.tid == 0 { "[idle]" } else { "[unsampled]" },
                    s.ns as f64 * 1e-9,
                );
            }
            continue;
        }
        let scale = if sampled > 0 {
            1.0 + unsampled as f64 / sampled as f64
        } else {
            1.0
        };
        let secs = s.ns as f64 * 1e-9 * scale;
        let mut kernel: Vec<&str> = s.kernel.iter().map(|f| p.symbol(*f)).collect();
        // tcplab's own stack files its blocks' times under user frames
        // `tcplab_stack::<block>` (`--account`): those, and only those,
        // user frames are classified like kernel ones.
        if kernel.is_empty() {
            if let Some(u) = s.user.first().map(|f| p.symbol(*f)) {
                if u.starts_with(STACK_BLOCK_PREFIX) {
                    kernel.push(u);
                }
            }
        }
        let (layer, by) = classify(layers, &kernel);
        let (block, _) = classify(blocks, &kernel);
        let function = match (by, kernel.first(), s.user.first()) {
            (Some(f), _, _) => f.to_string(),
            (None, Some(leaf), _) => leaf.to_string(),
            (None, None, Some(u)) => p.symbol(*u).to_string(),
            (None, None, None) => "[user]".to_string(),
        };
        a.add(layer, block, &function, secs);
    }
    let roles = ThreadRole::ALL
        .into_iter()
        .filter_map(|r| acc.remove(&r).map(|a| a.finish(r)))
        .collect();
    CpuAttribution {
        layer_table_version: LAYER_TABLE_VERSION,
        block_table_version: BLOCK_TABLE_VERSION,
        clock: p.clock.clone(),
        samples: p.total_samples(),
        coverage: p.coverage(),
        roles,
        host_idle_s: p.idle_s,
    }
}

/// The prefix of the symbols tcplab's stack files its block times under.
pub const STACK_BLOCK_PREFIX: &str = "tcplab_stack::";

fn classify<'a, K: Category>(t: &FunctionTable<K>, kernel: &[&'a str]) -> (K, Option<&'a str>) {
    t.classify(kernel.iter().copied())
}

#[derive(Default)]
struct Acc {
    tids: std::collections::BTreeSet<u32>,
    unsampled_s: f64,
    layers: BTreeMap<CpuLayer, f64>,
    blocks: BTreeMap<Block, f64>,
    functions: HashMap<(String, CpuLayer), f64>,
}

impl Acc {
    fn add(&mut self, l: CpuLayer, b: Block, function: &str, secs: f64) {
        *self.layers.entry(l).or_default() += secs;
        *self.blocks.entry(b).or_default() += secs;
        *self.functions.entry((function.to_string(), l)).or_default() += secs;
    }

    fn finish(self, role: ThreadRole) -> RoleAttribution {
        let total: f64 = self.layers.values().sum();
        let share = |v: f64| if total > 0.0 { v / total } else { 0.0 };
        let mut functions: Vec<FunctionShare> = self
            .functions
            .into_iter()
            .map(|((function, layer), cpu_s)| FunctionShare {
                function,
                layer,
                cpu_s,
                share: share(cpu_s),
            })
            .collect();
        functions.sort_by(|a, b| {
            b.cpu_s
                .total_cmp(&a.cpu_s)
                .then(a.function.cmp(&b.function))
        });
        functions.truncate(TOP_FUNCTIONS);
        RoleAttribution {
            role,
            threads: self.tids.len(),
            cpu_s: total,
            unsampled_s: self.unsampled_s,
            layers: CpuLayer::ALL
                .into_iter()
                .filter_map(|l| self.layers.get(&l).map(|v| (l.name(), *v)))
                .map(|(name, cpu_s)| Share {
                    name: name.into(),
                    cpu_s,
                    share: share(cpu_s),
                })
                .collect(),
            blocks: Block::ALL
                .into_iter()
                .filter_map(|b| self.blocks.get(&b).map(|v| (b.name(), *v)))
                .map(|(name, cpu_s)| Share {
                    name: name.into(),
                    cpu_s,
                    share: share(cpu_s),
                })
                .collect(),
            functions,
        }
    }
}

/// CPU time split into a cost per packet and a cost per byte:
/// `time = per_packet × packets + per_byte × bytes`, by least squares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PacketByteFit {
    /// Observations fitted.
    pub n: usize,
    /// Cost per packet, µs.
    pub per_packet_us: f64,
    /// Its standard error, µs.
    pub per_packet_se_us: f64,
    /// Cost per byte, ns.
    pub per_byte_ns: f64,
    /// Its standard error, ns.
    pub per_byte_se_ns: f64,
    /// Coefficient of determination (centred): the share of the variance of
    /// the times that the fit explains.
    pub r2: f64,
    /// Root-mean-square relative error of the fitted times.
    pub rms_rel_error: f64,
}

/// Why a per-packet / per-byte fit is not possible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// Fewer than three observations.
    #[error("a per-packet and per-byte fit needs at least 3 trials, got {0}")]
    TooFew(usize),
    /// Packets and bytes move together (same segment size in every trial),
    /// so the two costs cannot be told apart.
    #[error(
        "packets and bytes are proportional across these trials (one segment size), \
         so per-packet and per-byte costs cannot be separated: sweep --mss or --write-size"
    )]
    Collinear,
}

/// Fits `seconds = a·packets + b·bytes` over (packets, bytes, seconds).
pub fn fit_packet_byte(obs: &[(f64, f64, f64)]) -> Result<PacketByteFit, FitError> {
    let n = obs.len();
    if n < 3 {
        return Err(FitError::TooFew(n));
    }
    let (mut spp, mut spb, mut sbb, mut spy, mut sby) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(p, b, y) in obs {
        spp += p * p;
        spb += p * b;
        sbb += b * b;
        spy += p * y;
        sby += b * y;
    }
    let det = spp * sbb - spb * spb;
    // Collinear when the normal matrix is (nearly) singular.
    if det.abs() <= 1e-9 * spp * sbb {
        return Err(FitError::Collinear);
    }
    let a = (spy * sbb - sby * spb) / det;
    let b = (sby * spp - spy * spb) / det;
    let mean_y = obs.iter().map(|o| o.2).sum::<f64>() / n as f64;
    let (mut sse, mut sst, mut rel) = (0.0, 0.0, 0.0);
    for &(p, bytes, y) in obs {
        let r = y - (a * p + b * bytes);
        sse += r * r;
        sst += (y - mean_y) * (y - mean_y);
        if y != 0.0 {
            rel += (r / y) * (r / y);
        }
    }
    let sigma2 = sse / (n - 2) as f64;
    let se_a = (sigma2 * sbb / det).sqrt();
    let se_b = (sigma2 * spp / det).sqrt();
    Ok(PacketByteFit {
        n,
        per_packet_us: a * 1e6,
        per_packet_se_us: se_a * 1e6,
        per_byte_ns: b * 1e9,
        per_byte_se_ns: se_b * 1e9,
        r2: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
        rms_rel_error: (rel / n as f64).sqrt(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{ProfiledStack, ProfiledThread};

    fn profile() -> CpuProfile {
        let symbols = [
            "rep_movs_alternative",
            "_copy_from_iter",
            "tcp_sendmsg_locked",
            "tcp_ack",
            "tcp_v4_rcv",
            "native_safe_halt",
        ]
        .map(String::from)
        .to_vec();
        let stack = |tid, kernel: Vec<u32>, user: Vec<u32>, ns, unsampled| ProfiledStack {
            tid,
            unsampled,
            kernel,
            user,
            samples: 1,
            ns,
        };
        CpuProfile {
            version: 1,
            period_ns: 100_000,
            clock: "cycles".into(),
            cpus: 2,
            duration_s: 1.0,
            symbols,
            threads: vec![
                ProfiledThread {
                    tid: 10,
                    tgid: 9,
                    comm: "s".into(),
                    role: ThreadRole::Sender,
                },
                ProfiledThread {
                    tid: 0,
                    tgid: 0,
                    comm: "swapper".into(),
                    role: ThreadRole::Idle,
                },
            ],
            stacks: vec![
                // sender: 600 ms copy in tcp_sendmsg, 200 ms tcp_ack, 200 ms user
                stack(10, vec![0, 1, 2], vec![], 600_000_000, false),
                stack(10, vec![3, 4], vec![], 200_000_000, false),
                stack(10, vec![], vec![], 200_000_000, false),
                // and 500 ms no sample hit
                stack(10, vec![], vec![], 500_000_000, true),
                stack(0, vec![5], vec![], 100_000_000, false),
                stack(0, vec![], vec![], 300_000_000, true),
            ],
            busy_s: 1.5,
            idle_s: 0.4,
            lost_samples: 0,
            broken_stacks: 0,
        }
    }

    #[test]
    fn layers_blocks_and_unsampled_time() {
        let a = attribute(&profile());
        let s = a.role(ThreadRole::Sender).unwrap();
        // Unsampled time is spread: 1.5 s in all, in the sampled proportions.
        assert!((s.cpu_s - 1.5).abs() < 1e-9);
        assert!((s.unsampled_s - 0.5).abs() < 1e-9);
        assert!((s.layer_s(CpuLayer::Copy) - 0.9).abs() < 1e-9);
        assert!((s.layer_s(CpuLayer::Tcp) - 0.3).abs() < 1e-9);
        assert!((s.layer_s(CpuLayer::Application) - 0.3).abs() < 1e-9);
        assert!((s.block_s(Block::WriteSocket) - 0.9).abs() < 1e-9);
        assert!((s.block_s(Block::TcpInput) - 0.3).abs() < 1e-9);
        let shares: f64 = s.layers.iter().map(|l| l.share).sum();
        assert!((shares - 1.0).abs() < 1e-9);
        assert_eq!(s.functions[0].function, "rep_movs_alternative");
        let idle = a.role(ThreadRole::Idle).unwrap();
        assert!((idle.layer_s(CpuLayer::Idle) - 0.4).abs() < 1e-9);
    }

    #[test]
    fn the_stacks_block_frames_are_classified_and_other_user_frames_stay_application() {
        let mut p = profile();
        // The sender's user-mode stack: first a frame of tcplab's stack
        // (`--account`), then the same time under an ordinary user frame.
        p.symbols.push("tcplab_stack::checksum".into());
        p.symbols.push("tcplab_stack::device_send_write".into());
        p.symbols.push("memcpy".into());
        let (sum, write, memcpy) = (6, 7, 8);
        p.stacks[2].user = vec![sum];
        let a = attribute(&p);
        let s = a.role(ThreadRole::Sender).unwrap();
        assert!((s.layer_s(CpuLayer::Checksum) - 0.3).abs() < 1e-9);
        assert!(s.layer_s(CpuLayer::Application).abs() < 1e-9);
        // A system-call block filed as a kernel frame: the syscall layer
        // and the driver's output block.
        p.stacks[2].user = vec![];
        p.stacks[2].kernel = vec![write];
        let s = attribute(&p).role(ThreadRole::Sender).unwrap().clone();
        assert!((s.layer_s(CpuLayer::Syscall) - 0.3).abs() < 1e-9);
        assert!((s.block_s(Block::DriverOut) - 0.3).abs() < 1e-9);
        // Any other user frame is the application's, as before.
        p.stacks[2].kernel = vec![];
        p.stacks[2].user = vec![memcpy];
        let s = attribute(&p).role(ThreadRole::Sender).unwrap().clone();
        assert!((s.layer_s(CpuLayer::Application) - 0.3).abs() < 1e-9);
        assert!(s.layer_s(CpuLayer::Copy) > 0.89, "{s:?}");
    }

    #[test]
    fn packet_and_byte_costs_are_recovered() {
        // 2 µs per packet and 0.5 ns per byte, with ±1% noise.
        let obs: Vec<(f64, f64, f64)> =
            [(256.0, 1.01), (512.0, 0.99), (1024.0, 1.0), (1448.0, 1.01)]
                .iter()
                .map(|&(mss, noise)| {
                    let bytes = 20e6;
                    let packets = bytes / mss;
                    (packets, bytes, (2e-6 * packets + 0.5e-9 * bytes) * noise)
                })
                .collect();
        let f = fit_packet_byte(&obs).unwrap();
        assert!((f.per_packet_us - 2.0).abs() < 0.1, "{f:?}");
        assert!((f.per_byte_ns - 0.5).abs() < 0.05, "{f:?}");
        assert!(f.r2 > 0.99, "{f:?}");
        assert!(f.rms_rel_error < 0.02, "{f:?}");
    }

    #[test]
    fn a_fit_needs_distinct_segment_sizes() {
        let same: Vec<(f64, f64, f64)> = (1..=4)
            .map(|i| (i as f64 * 100.0, i as f64 * 146_000.0, i as f64 * 0.01))
            .collect();
        assert_eq!(fit_packet_byte(&same).unwrap_err(), FitError::Collinear);
        assert_eq!(
            fit_packet_byte(&same[..2]).unwrap_err(),
            FitError::TooFew(2)
        );
    }
}
