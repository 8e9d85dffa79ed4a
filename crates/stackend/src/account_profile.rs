//! A stack end's block-cost accounting (`--account`, issue 19 part 2) as
//! the trial's CPU profile: the schema the kernel's sampled per-layer
//! breakdown uses, so both print in one table. Each block is one "stack"
//! of the end's thread whose time is the block's exclusive time; its frame
//! is a symbol `tcplab_stack::<block>` that the analysis crate's layer and
//! function-block tables map (a kernel frame for the system-call blocks,
//! whose time is the kernel's, a user frame for the rest). Time the
//! brackets themselves cost and the busy time no bracket covered are
//! stacks of their own, so the thread's stacks add up to its busy time
//! (or to more, when preemption inside brackets made them exceed it).

use record::cpu_profile::{CpuProfile, ProfiledStack, ProfiledThread, ThreadRole, PROFILE_VERSION};
use stack::account::{Block, Report};
use std::collections::BTreeMap;

/// One end's accounting run and the thread it ran on.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountedEnd {
    /// The stack thread's id.
    pub tid: u32,
    /// Its process.
    pub tgid: u32,
    /// Whether it sent the trial's data (else it received).
    pub sender: bool,
    /// What the accountant found.
    pub report: Report,
}

/// The symbol a block's time is filed under.
pub fn block_symbol(b: Block) -> &'static str {
    match b {
        Block::DeviceReceive => "tcplab_stack::device_receive",
        Block::DeviceReceiveSyscall => "tcplab_stack::device_receive_read",
        Block::DeviceSend => "tcplab_stack::device_send",
        Block::DeviceSendSyscall => "tcplab_stack::device_send_write",
        Block::Ethernet => "tcplab_stack::ethernet",
        Block::Arp => "tcplab_stack::arp",
        Block::IpInput => "tcplab_stack::ip_input",
        Block::IpOutput => "tcplab_stack::ip_output",
        Block::RouteLookup => "tcplab_stack::route_lookup",
        Block::PcbLookup => "tcplab_stack::pcb_lookup",
        Block::Checksum => "tcplab_stack::checksum",
        Block::TcpInputFast => "tcplab_stack::tcp_input_fast",
        Block::TcpInputSlow => "tcplab_stack::tcp_input_slow",
        Block::TcpOutput => "tcplab_stack::tcp_output",
        Block::AckGeneration => "tcplab_stack::ack_generation",
        Block::Timers => "tcplab_stack::timers",
        Block::Reassembly => "tcplab_stack::reassembly",
        Block::BufferManagement => "tcplab_stack::buffer_management",
        Block::SocketCopyIn => "tcplab_stack::socket_copy_in",
        Block::SocketCopyOut => "tcplab_stack::socket_copy_out",
        Block::Application => "tcplab_stack::application",
        Block::DeviceWait => "tcplab_stack::device_wait",
        Block::Dilation => "tcplab_stack::dilation",
        Block::Idle => "tcplab_stack::idle",
    }
}

/// What the brackets themselves cost.
pub const BRACKETS_SYMBOL: &str = "tcplab_stack::accounting_brackets";
/// Busy time no bracket covered.
pub const UNATTRIBUTED_SYMBOL: &str = "tcplab_stack::unattributed";

/// The ends' accounting as one CPU profile (None when no end accounted).
pub fn profile_of(ends: &[AccountedEnd]) -> Option<CpuProfile> {
    if ends.is_empty() {
        return None;
    }
    let mut symbols: Vec<String> = Vec::new();
    let mut index: BTreeMap<&'static str, u32> = BTreeMap::new();
    let mut intern = |s: &'static str| -> u32 {
        *index.entry(s).or_insert_with(|| {
            symbols.push(s.to_string());
            (symbols.len() - 1) as u32
        })
    };
    let mut stacks = Vec::new();
    let mut threads = Vec::new();
    let (mut busy_s, mut idle_s, mut duration_s) = (0.0, 0.0, 0.0f64);
    let mut one_in = 1;
    for end in ends {
        let r = &end.report;
        one_in = one_in.max(r.sample_one_in);
        threads.push(ProfiledThread {
            tid: end.tid,
            tgid: end.tgid,
            comm: "tcplab-stack".into(),
            role: if end.sender {
                ThreadRole::Sender
            } else {
                ThreadRole::Receiver
            },
        });
        let mut push = |symbol: &'static str, kernel: bool, count: f64, ns: f64| {
            // A sampled block's scaled estimate can come out below zero
            // (its brackets' cost subtracted); no stack holds negative time.
            if ns <= 0.0 {
                return;
            }
            let frame = intern(symbol);
            let (kernel, user) = if kernel {
                (vec![frame], Vec::new())
            } else {
                (Vec::new(), vec![frame])
            };
            stacks.push(ProfiledStack {
                tid: end.tid,
                unsampled: false,
                kernel,
                user,
                samples: count.round().max(1.0) as u64,
                ns: ns.round() as u64,
            });
        };
        for row in r.rows.iter().filter(|row| row.block.is_busy()) {
            push(
                block_symbol(row.block),
                row.block.is_syscall(),
                row.count,
                row.ns,
            );
        }
        push(
            BRACKETS_SYMBOL,
            false,
            r.brackets as f64,
            r.bracket_cost_ns(),
        );
        // The busy time the stored stacks leave uncovered (none when they
        // cover more: preemption inside brackets).
        let stored_ns: f64 = r
            .rows
            .iter()
            .filter(|row| row.block.is_busy())
            .map(|row| row.ns.max(0.0))
            .sum::<f64>()
            + r.bracket_cost_ns().max(0.0);
        let rest = r.busy_ns() - stored_ns;
        push(UNATTRIBUTED_SYMBOL, false, 1.0, rest);
        busy_s += r.busy_ns() * 1e-9;
        idle_s += r.idle_ns() * 1e-9;
        duration_s = duration_s.max(r.wall_ns * 1e-9);
    }
    Some(CpuProfile {
        version: PROFILE_VERSION,
        // Exact times, not samples: a "sample" is one block entry.
        period_ns: 1,
        clock: if one_in > 1 {
            format!("tsc, one round in {one_in}")
        } else {
            "tsc".into()
        },
        cpus: ends.len() as u32,
        duration_s,
        symbols,
        threads,
        stacks,
        busy_s,
        idle_s,
        lost_samples: 0,
        broken_stacks: 0,
    })
}

/// Each end's self-checks and sampling as trial metrics,
/// `stack_<end>_account_*`.
pub fn add_metrics(end: &str, r: &Report, m: &mut BTreeMap<String, f64>) {
    let mut put = |name: &str, v: f64| {
        m.insert(format!("stack_{end}_account_{name}"), v);
    };
    put("sample_one_in", f64::from(r.sample_one_in));
    put("busy_s", r.busy_ns() * 1e-9);
    put("thread_cpu_s", r.thread_cpu_ns * 1e-9);
    put("cpu_check_error", r.cpu_check(0.05).error);
    // What the counter counts and the CPU clock does not: the time the
    // thread waited runnable for a CPU (schedstat; absent without it).
    if let Some(ns) = r.run_delay_ns {
        put("run_delay_s", ns * 1e-9);
    }
    // What else the counter counts and the thread's CPU clock does not,
    // host-wide over the trial, in /proc/stat's 10 ms ticks: the
    // hypervisor's steal, and interrupt and softirq time (Linux's receive
    // path run at the end of the thread's TUN writes). Absent without
    // /proc/stat's columns.
    if let Some(ns) = r.steal_ns {
        put("steal_s", ns * 1e-9);
    }
    if let Some(ns) = r.irq_ns {
        put("irq_s", ns * 1e-9);
    }
    // Each class's time (`--cpu-speed` scales them apart); on a slower
    // CPU also its speed, its time there, and what the spins took (their
    // sum's check).
    for class in stack::account::Class::ALL {
        put(&format!("{}_s", class.name()), r.class_ns(class) * 1e-9);
    }
    if let Some(d) = r.dilation {
        put("dilation_s", d.spun_ns * 1e-9);
        put("dilation_owed_at_stop_s", d.owed_at_stop_ns * 1e-9);
        put("dilation_outside_added_s", d.outside_added_ns * 1e-9);
        for class in stack::account::Class::ALL {
            let name = class.name();
            put(&format!("{name}_speed"), d.speeds.of(class));
            put(
                &format!("{name}_dilated_s"),
                r.dilated_class_ns(class) * 1e-9,
            );
        }
    }
    put("bracket_cost_s", r.bracket_cost_ns() * 1e-9);
    // The brackets' cost is measured hot and subtracted; measured cold it
    // is more, and the blocks may hold up to this much of the difference.
    put("bracket_cold_excess_s", r.cold_excess_ns() * 1e-9);
    // Whether the counter is an invariant TSC (1) or not (0): without it
    // counts may not be time. Absent where the counter is not a TSC.
    if let Some(invariant) = r.tsc_invariant {
        put("tsc_invariant", f64::from(u8::from(invariant)));
    }
    // Negative when the brackets' times add up to more than the busy
    // time (preemption inside a bracket): the profile then holds no
    // unattributed stack.
    put("unattributed_s", r.unattributed_ns() * 1e-9);
    put("packets", r.packets() as f64);
    if let Some(ns) = (r.packets() > 0).then(|| r.busy_ns() / r.packets() as f64) {
        put("busy_ns_per_packet", ns);
    }
}
