//! Versioned tables that map kernel functions to what they do: layers of
//! the network stack (`data/kernel-layers.txt`) and Huang & Chen's function
//! blocks (`data/function-blocks.txt`), and the attribution of one sampled
//! stack by such a table.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Version of `data/kernel-layers.txt`; stored with every attribution.
pub const LAYER_TABLE_VERSION: u32 = 2;

/// Version of `data/function-blocks.txt`; stored with every attribution.
pub const BLOCK_TABLE_VERSION: u32 = 2;

const LAYERS: &str = include_str!("../data/kernel-layers.txt");
const BLOCKS: &str = include_str!("../data/function-blocks.txt");

/// Where a CPU sample's time went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuLayer {
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

impl CpuLayer {
    /// Every layer, in report order (the path from the application down).
    pub const ALL: [CpuLayer; 13] = [
        CpuLayer::Application,
        CpuLayer::Syscall,
        CpuLayer::Tcp,
        CpuLayer::Ip,
        CpuLayer::Netdev,
        CpuLayer::Copy,
        CpuLayer::Checksum,
        CpuLayer::Memory,
        CpuLayer::Locks,
        CpuLayer::Softirq,
        CpuLayer::Scheduler,
        CpuLayer::Idle,
        CpuLayer::Other,
    ];

    /// The layer's name in the table and in reports.
    pub fn name(self) -> &'static str {
        match self {
            CpuLayer::Application => "application",
            CpuLayer::Syscall => "syscall",
            CpuLayer::Tcp => "tcp",
            CpuLayer::Ip => "ip",
            CpuLayer::Netdev => "netdev",
            CpuLayer::Copy => "copy",
            CpuLayer::Checksum => "checksum",
            CpuLayer::Memory => "memory",
            CpuLayer::Locks => "locks",
            CpuLayer::Softirq => "softirq",
            CpuLayer::Scheduler => "scheduler",
            CpuLayer::Idle => "idle",
            CpuLayer::Other => "other",
        }
    }
}

/// Huang & Chen's function blocks (Table 1), plus the application and
/// everything outside the blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// User-space code.
    Application,
    /// The send system call down to TCP (the copy from user space included).
    WriteSocket,
    /// TCP output: segmentation, headers, ACKs sent.
    TcpOutput,
    /// IP output and routing.
    IpOutput,
    /// The device layer and driver on the way out.
    DriverOut,
    /// The device layer and driver on the way in.
    DriverInput,
    /// IP input.
    IpInput,
    /// TCP input: segment processing, ACKs received.
    TcpInput,
    /// The receive system call (the copy to user space included).
    ReadSocket,
    /// Anything else (system call entry, scheduler, idle, timers).
    Other,
}

impl Block {
    /// Every block, in the order of the path.
    pub const ALL: [Block; 10] = [
        Block::Application,
        Block::WriteSocket,
        Block::TcpOutput,
        Block::IpOutput,
        Block::DriverOut,
        Block::DriverInput,
        Block::IpInput,
        Block::TcpInput,
        Block::ReadSocket,
        Block::Other,
    ];

    /// The block's name, as Huang & Chen wrote it.
    pub fn name(self) -> &'static str {
        match self {
            Block::Application => "application",
            Block::WriteSocket => "write_socket",
            Block::TcpOutput => "tcp_output",
            Block::IpOutput => "ip_output",
            Block::DriverOut => "driver_out",
            Block::DriverInput => "driver_input",
            Block::IpInput => "ip_input",
            Block::TcpInput => "tcp_input",
            Block::ReadSocket => "read_socket",
            Block::Other => "other",
        }
    }
}

/// What a function table maps names to.
pub trait Category: Copy + 'static {
    /// The category of user-mode samples.
    const USER: Self;
    /// The category of kernel samples no rule matches.
    const UNMATCHED: Self;
    /// The category a table line names.
    fn from_name(s: &str) -> Option<Self>;
}

impl Category for CpuLayer {
    const USER: CpuLayer = CpuLayer::Application;
    const UNMATCHED: CpuLayer = CpuLayer::Other;
    fn from_name(s: &str) -> Option<CpuLayer> {
        CpuLayer::ALL.into_iter().find(|l| l.name() == s)
    }
}

impl Category for Block {
    const USER: Block = Block::Application;
    const UNMATCHED: Block = Block::Other;
    fn from_name(s: &str) -> Option<Block> {
        Block::ALL.into_iter().find(|b| b.name() == s)
    }
}

/// One rule of a table.
#[derive(Debug, Clone)]
struct Rule<K> {
    category: K,
    pattern: String,
    prefix: bool,
}

impl<K> Rule<K> {
    fn matches(&self, name: &str) -> bool {
        if self.prefix {
            name.starts_with(&self.pattern)
        } else {
            name == self.pattern
        }
    }
}

/// A parsed table: rules tried in order.
#[derive(Debug)]
pub struct FunctionTable<K> {
    rules: Vec<Rule<K>>,
}

/// The layer table.
pub type LayerTable = FunctionTable<CpuLayer>;

/// The function-block table.
pub type BlockTable = FunctionTable<Block>;

/// Why a table could not be parsed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LayerTableError {
    /// A line is not `category pattern`, or names no known category.
    #[error("layer table line {line}: {why}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        why: String,
    },
}

impl LayerTable {
    /// The built-in layer table, version [`LAYER_TABLE_VERSION`].
    pub fn builtin() -> &'static LayerTable {
        static T: OnceLock<LayerTable> = OnceLock::new();
        T.get_or_init(|| LayerTable::parse(LAYERS).expect("the built-in layer table parses"))
    }
}

impl BlockTable {
    /// The built-in block table, version [`BLOCK_TABLE_VERSION`].
    pub fn builtin() -> &'static BlockTable {
        static T: OnceLock<BlockTable> = OnceLock::new();
        T.get_or_init(|| BlockTable::parse(BLOCKS).expect("the built-in block table parses"))
    }
}

impl<K: Category> FunctionTable<K> {
    /// Parses a table: `category pattern` per line, `#` comments.
    pub fn parse(text: &str) -> Result<FunctionTable<K>, LayerTableError> {
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
            let category =
                K::from_name(layer).ok_or_else(|| bad(format!("unknown category {layer:?}")))?;
            let (pattern, prefix) = match pattern.strip_suffix('*') {
                Some(p) => (p.to_string(), true),
                None => (pattern.to_string(), false),
            };
            rules.push(Rule {
                category,
                pattern,
                prefix,
            });
        }
        Ok(FunctionTable { rules })
    }

    /// The category of one function, if a rule names it.
    pub fn layer_of(&self, function: &str) -> Option<K> {
        let name = base_name(function);
        self.rules
            .iter()
            .find(|r| r.matches(name))
            .map(|r| r.category)
    }

    /// The category of a kernel stack (innermost frame first): that of the
    /// innermost frame a rule matches, with that frame; the user category
    /// for a sample in user mode (no kernel frames); the unmatched category
    /// when no frame matches.
    pub fn classify<'a>(&self, kernel: impl IntoIterator<Item = &'a str>) -> (K, Option<&'a str>) {
        let mut any = false;
        for f in kernel {
            any = true;
            if let Some(l) = self.layer_of(f) {
                return (l, Some(f));
            }
        }
        if any {
            (K::UNMATCHED, None)
        } else {
            (K::USER, None)
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
        for l in CpuLayer::ALL {
            if matches!(l, CpuLayer::Application | CpuLayer::Other) {
                continue;
            }
            assert!(t.rules.iter().any(|r| r.category == l), "no rule for {l:?}");
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
        assert_eq!(t.classify(stack).0, CpuLayer::Copy);
        // An unknown leaf falls through to its caller.
        let stack = ["some_unlisted_helper", "tcp_ack", "tcp_rcv_established"];
        assert_eq!(t.classify(stack), (CpuLayer::Tcp, Some("tcp_ack")));
        // The checksum rule comes before the tcp_* prefix.
        assert_eq!(
            t.layer_of("tcp_checksum_complete"),
            Some(CpuLayer::Checksum)
        );
        assert_eq!(t.layer_of("csum_partial"), Some(CpuLayer::Checksum));
        assert_eq!(t.layer_of("ip_finish_output2"), Some(CpuLayer::Ip));
        assert_eq!(t.layer_of("__dev_queue_xmit"), Some(CpuLayer::Netdev));
        assert_eq!(t.layer_of("_raw_spin_lock_bh"), Some(CpuLayer::Locks));
        assert_eq!(
            t.layer_of("kmem_cache_alloc_node_noprof"),
            Some(CpuLayer::Memory)
        );
        assert_eq!(t.layer_of("native_safe_halt"), Some(CpuLayer::Idle));
        assert_eq!(t.layer_of("__schedule"), Some(CpuLayer::Scheduler));
        assert_eq!(
            t.layer_of("entry_SYSCALL_64_after_hwframe"),
            Some(CpuLayer::Syscall)
        );
        assert_eq!(t.layer_of("net_rx_action"), Some(CpuLayer::Softirq));
        // Clone suffixes are ignored.
        assert_eq!(t.layer_of("tcp_write_xmit.isra.0"), Some(CpuLayer::Tcp));
    }

    #[test]
    fn user_mode_and_unknown_stacks() {
        let t = LayerTable::builtin();
        assert_eq!(
            t.classify(std::iter::empty::<&str>()).0,
            CpuLayer::Application
        );
        assert_eq!(t.classify(["mystery_fn"]).0, CpuLayer::Other);
    }

    #[test]
    fn blocks_take_the_innermost_block_on_the_path() {
        let t = BlockTable::builtin();
        // A copy in tcp_sendmsg is write_socket time (Huang & Chen's copy
        // from user space belongs to the socket layer).
        let s = [
            "rep_movs_alternative",
            "_copy_from_iter",
            "tcp_sendmsg_locked",
            "tcp_sendmsg",
        ];
        assert_eq!(t.classify(s).0, Block::WriteSocket);
        // Loopback receive processing runs inside the sender's transmit.
        let s = [
            "csum_partial",
            "tcp_v4_rcv",
            "ip_local_deliver_finish",
            "ip_rcv",
            "__netif_receive_skb_one_core",
            "process_backlog",
            "net_rx_action",
            "ip_finish_output2",
            "__tcp_transmit_skb",
            "tcp_write_xmit",
            "tcp_sendmsg_locked",
        ];
        assert_eq!(t.classify(s).0, Block::TcpInput);
        let s = [
            "__dev_queue_xmit",
            "ip_finish_output2",
            "ip_output",
            "__ip_queue_xmit",
        ];
        assert_eq!(t.classify(s).0, Block::DriverOut);
        let s = [
            "__tcp_transmit_skb",
            "tcp_send_ack",
            "tcp_cleanup_rbuf",
            "tcp_recvmsg",
        ];
        assert_eq!(t.classify(s).0, Block::TcpOutput);
        assert_eq!(t.classify(["__schedule", "schedule"]).0, Block::Other);
        assert_eq!(t.classify(std::iter::empty::<&str>()).0, Block::Application);
    }

    #[test]
    fn bad_tables_name_their_line() {
        let e = LayerTable::parse("tcp tcp_*\nweird foo\n").unwrap_err();
        assert!(BlockTable::parse("tcp_input tcp_v4_rcv\n").is_ok());
        assert_eq!(
            e,
            LayerTableError::BadLine {
                line: 2,
                why: "unknown category \"weird\"".into()
            }
        );
        assert!(LayerTable::parse("tcp\n").is_err());
    }
}
