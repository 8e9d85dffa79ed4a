//! The versioned table that maps kernel functions to layers of the network
//! stack (`data/kernel-layers.txt`), and the attribution of one sampled
//! stack to a layer.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Version of `data/kernel-layers.txt`; stored with every attribution.
pub const LAYER_TABLE_VERSION: u32 = 1;

const TABLE: &str = include_str!("../data/kernel-layers.txt");

/// Where a CPU sample's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// User-space code.
    Application,
    /// System call entry and exit, the socket and file layers.
    Syscall,
    /// TCP (and UDP).
    Tcp,
    /// IPv4/IPv6, routing, netfilter.
    Ip,
    /// Device layer, qdiscs, drivers, GRO/NAPI.
    Netdev,
    /// Data copies.
    Copy,
    /// Internet checksum.
    Checksum,
    /// skb and page allocation and freeing.
    Memory,
    /// Spinlocks, socket locks, RCU.
    Locks,
    /// Softirq entry and dispatch.
    Softirq,
    /// Wake-ups and context switches.
    Scheduler,
    /// The idle loop.
    Idle,
    /// Anything else in the kernel.
    Other,
}

impl Layer {
    /// Every layer, in report order (the path from the application down).
    pub const ALL: [Layer; 13] = [
        Layer::Application,
        Layer::Syscall,
        Layer::Tcp,
        Layer::Ip,
        Layer::Netdev,
        Layer::Copy,
        Layer::Checksum,
        Layer::Memory,
        Layer::Locks,
        Layer::Softirq,
        Layer::Scheduler,
        Layer::Idle,
        Layer::Other,
    ];

    /// The layer's name in the table and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Application => "application",
            Layer::Syscall => "syscall",
            Layer::Tcp => "tcp",
            Layer::Ip => "ip",
            Layer::Netdev => "netdev",
            Layer::Copy => "copy",
            Layer::Checksum => "checksum",
            Layer::Memory => "memory",
            Layer::Locks => "locks",
            Layer::Softirq => "softirq",
            Layer::Scheduler => "scheduler",
            Layer::Idle => "idle",
            Layer::Other => "other",
        }
    }

    fn from_name(s: &str) -> Option<Layer> {
        Layer::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// One rule of the table.
#[derive(Debug, Clone)]
struct Rule {
    layer: Layer,
    pattern: String,
    prefix: bool,
}

impl Rule {
    fn matches(&self, name: &str) -> bool {
        if self.prefix {
            name.starts_with(&self.pattern)
        } else {
            name == self.pattern
        }
    }
}

/// The parsed table.
#[derive(Debug)]
pub struct LayerTable {
    rules: Vec<Rule>,
}

/// Why a table could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LayerTableError {
    /// A line is not `layer pattern`, or names no known layer.
    #[error("layer table line {line}: {why}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

impl LayerTable {
    /// The built-in table, version [`LAYER_TABLE_VERSION`].
    pub fn builtin() -> &'static LayerTable {
        static T: OnceLock<LayerTable> = OnceLock::new();
        T.get_or_init(|| LayerTable::parse(TABLE).expect("the built-in layer table parses"))
    }

    /// Parses a table: `layer pattern` per line, `#` comments.
    pub fn parse(text: &str) -> Result<LayerTable, LayerTableError> {
        let mut rules = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |why: String| LayerTableError::BadLine { line: i + 1, why };
            let mut parts = line.split_whitespace();
            let (Some(layer), Some(pattern), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad(format!("expected `layer pattern`, got {line:?}")));
            };
            let layer =
                Layer::from_name(layer).ok_or_else(|| bad(format!("unknown layer {layer:?}")))?;
            let (pattern, prefix) = match pattern.strip_suffix('*') {
                Some(p) => (p.to_string(), true),
                None => (pattern.to_string(), false),
            };
            rules.push(Rule {
                layer,
                pattern,
                prefix,
            });
        }
        Ok(LayerTable { rules })
    }

    /// The layer of one function, if a rule names it.
    pub fn layer_of(&self, function: &str) -> Option<Layer> {
        let name = base_name(function);
        self.rules.iter().find(|r| r.matches(name)).map(|r| r.layer)
    }

    /// The layer of a kernel stack (innermost frame first): that of the
    /// innermost frame a rule matches; `application` for a sample in user
    /// mode (no kernel frames); `other` when no frame matches.
    pub fn classify<'a>(
        &self,
        kernel: impl IntoIterator<Item = &'a str>,
    ) -> (Layer, Option<&'a str>) {
        let mut any = false;
        for f in kernel {
            any = true;
            if let Some(l) = self.layer_of(f) {
                return (l, Some(f));
            }
        }
        if any {
            (Layer::Other, None)
        } else {
            (Layer::Application, None)
        }
    }
}

/// A function name without the compiler's clone suffixes (`.isra.0`,
/// `.constprop.0`, `.part.0`, `.cold`).
pub fn base_name(function: &str) -> &str {
    function.split('.').next().unwrap_or(function)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_covers_every_layer_but_application() {
        let t = LayerTable::builtin();
        for l in Layer::ALL {
            if matches!(l, Layer::Application | Layer::Other) {
                continue;
            }
            assert!(t.rules.iter().any(|r| r.layer == l), "no rule for {l:?}");
        }
    }

    #[test]
    fn innermost_matching_frame_decides() {
        let t = LayerTable::builtin();
        // A copy inside tcp_sendmsg is copy time, not TCP time.
        let stack = [
            "rep_movs_alternative",
            "_copy_from_iter",
            "tcp_sendmsg_locked",
        ];
        assert_eq!(t.classify(stack).0, Layer::Copy);
        // An unknown leaf falls through to its caller.
        let stack = ["some_unlisted_helper", "tcp_ack", "tcp_rcv_established"];
        assert_eq!(t.classify(stack), (Layer::Tcp, Some("tcp_ack")));
        // The checksum rule comes before the tcp_* prefix.
        assert_eq!(t.layer_of("tcp_checksum_complete"), Some(Layer::Checksum));
        assert_eq!(t.layer_of("csum_partial"), Some(Layer::Checksum));
        assert_eq!(t.layer_of("ip_finish_output2"), Some(Layer::Ip));
        assert_eq!(t.layer_of("__dev_queue_xmit"), Some(Layer::Netdev));
        assert_eq!(t.layer_of("_raw_spin_lock_bh"), Some(Layer::Locks));
        assert_eq!(
            t.layer_of("kmem_cache_alloc_node_noprof"),
            Some(Layer::Memory)
        );
        assert_eq!(t.layer_of("native_safe_halt"), Some(Layer::Idle));
        assert_eq!(t.layer_of("__schedule"), Some(Layer::Scheduler));
        assert_eq!(
            t.layer_of("entry_SYSCALL_64_after_hwframe"),
            Some(Layer::Syscall)
        );
        assert_eq!(t.layer_of("net_rx_action"), Some(Layer::Softirq));
        // Clone suffixes are ignored.
        assert_eq!(t.layer_of("tcp_write_xmit.isra.0"), Some(Layer::Tcp));
    }

    #[test]
    fn user_mode_and_unknown_stacks() {
        let t = LayerTable::builtin();
        assert_eq!(t.classify(std::iter::empty::<&str>()).0, Layer::Application);
        assert_eq!(t.classify(["mystery_fn"]).0, Layer::Other);
    }

    #[test]
    fn bad_tables_name_their_line() {
        let e = LayerTable::parse("tcp tcp_*\nweird foo\n").unwrap_err();
        assert_eq!(
            e,
            LayerTableError::BadLine {
                line: 2,
                why: "unknown layer \"weird\"".into()
            }
        );
        assert!(LayerTable::parse("tcp\n").is_err());
    }
}
