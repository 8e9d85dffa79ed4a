//! What an accounting run found: per block, count and exclusive time, in
//! counts, ns, ns per packet and ns per byte; the run's busy, idle and
//! CPU time; and the two self-checks (the blocks against the thread's CPU
//! time, the timeline against wall time).

use super::block::Block;
use super::cycles;
use super::dilation::{Class, Speeds};
use super::ledger::{self, Closed};
use super::timeline::{Timeline, TimelineSplit};

fn ms_or_unknown(ns: Option<f64>) -> String {
    ns.map_or_else(|| "unknown".into(), |ns| format!("{:.1} ms", ns / 1e6))
}

fn delta(start: Option<u64>, end: Option<u64>) -> Option<f64> {
    Some(end?.saturating_sub(start?) as f64)
}

/// One block's line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockRow {
    /// The block.
    pub block: Block,
    /// Times it was entered (estimated, scaled by the sampling).
    pub count: f64,
    /// Exclusive time, counter counts (TSC cycles on x86_64; estimated,
    /// scaled by the sampling).
    pub cycles: f64,
    /// Exclusive time, ns (estimated, scaled by the sampling).
    pub ns: f64,
}

/// An accounting run's results.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// One row per block, in [`Block::ALL`] order.
    pub rows: Vec<BlockRow>,
    /// Counter counts per ns (calibrated against `CLOCK_MONOTONIC`).
    pub counts_per_ns: f64,
    /// Counts inside an empty bracket, measured hot (brackets back to
    /// back), subtracted from each bracket.
    pub inner_cost: u64,
    /// Counts an empty bracket costs its surroundings, measured hot: the
    /// brackets' cost ([`Report::bracket_cost_ns`]).
    pub outer_cost: u64,
    /// [`Report::inner_cost`] with cold caches (one bracket after 2 MB
    /// were written): reported, not subtracted. The stack's brackets sit
    /// between the two; each keeps up to the difference in its block
    /// ([`Report::cold_excess_ns`]).
    pub cold_inner_cost: u64,
    /// [`Report::outer_cost`] with cold caches: reported, not subtracted.
    pub cold_outer_cost: u64,
    /// Whether the counter is an invariant TSC (`None`: not a TSC); when
    /// not, counts may not be time, and [`Report::table`] says so.
    pub tsc_invariant: Option<bool>,
    /// Brackets timed.
    pub brackets: u64,
    /// Brackets deeper than the ledger holds (left untimed).
    pub too_deep: u64,
    /// One round in this many was timed.
    pub sample_one_in: u32,
    /// Frames read from the device.
    pub frames_in: u64,
    /// Frames given to the device.
    pub frames_out: u64,
    /// Bytes of the frames read.
    pub frame_bytes_in: u64,
    /// Bytes of the frames given.
    pub frame_bytes_out: u64,
    /// Application bytes taken by `send`.
    pub payload_in: u64,
    /// Application bytes given by `recv`.
    pub payload_out: u64,
    /// The run by the counter, ns.
    pub span_ns: f64,
    /// The run by `CLOCK_MONOTONIC`, ns.
    pub wall_ns: f64,
    /// The thread's CPU time over the run (`CLOCK_THREAD_CPUTIME_ID`), ns.
    pub thread_cpu_ns: f64,
    /// ns the thread waited runnable for a CPU over the run (schedstat;
    /// `None` without it): counted busy by the counter, not CPU time.
    pub run_delay_ns: Option<f64>,
    /// ns of steal on all vCPUs over the run (`/proc/stat`; `None`
    /// without it): the hypervisor's, not the thread's.
    pub steal_ns: Option<f64>,
    /// ns of hard and soft interrupts on all CPUs over the run
    /// (`/proc/stat`; `None` without it): the part run at the end of this
    /// thread's system calls is in the counter's blocks, not its CPU clock.
    pub irq_ns: Option<f64>,
    /// Brackets still open at stop (0 when every scope closed).
    pub open_at_stop: usize,
    /// The module entries and exits, when a timeline was asked for.
    pub timeline: Timeline,
    /// What a slower CPU by time dilation added (`None`: this CPU's
    /// speed).
    pub dilation: Option<DilationReport>,
}

/// What time dilation (`--cpu-speed`) did over a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DilationReport {
    /// The slower CPU's speeds.
    pub speeds: Speeds,
    /// What the slower CPU adds to each class's time, ns ([`Class::ALL`]
    /// order): the class's time × (1/F − 1).
    pub added_ns: [f64; 3],
    /// What the slower CPU adds to the busy time in no block (the stack's
    /// loop between top-level brackets and the brackets' own cost, slowed
    /// as computation), ns.
    pub outside_added_ns: f64,
    /// What the spins took, ns (the [`Block::Dilation`] row).
    pub spun_ns: f64,
    /// Spins.
    pub spins: u64,
    /// Owed and not spun at stop, ns (negative: the last spin's
    /// overshoot).
    pub owed_at_stop_ns: f64,
}

/// The blocks against the thread's CPU time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuCheck {
    /// Blocks, bracket cost and the unattributed rest: the counter's busy
    /// time, ns.
    pub accounted_ns: f64,
    /// The thread's run-queue delay over the run (0 when unknown), ns:
    /// what preemption may have added to the counter's side.
    pub run_delay_ns: f64,
    /// `CLOCK_THREAD_CPUTIME_ID` over the run, ns.
    pub thread_cpu_ns: f64,
    /// |accounted − CPU| / CPU.
    pub error: f64,
    /// Whether the error is within the tolerance asked.
    pub agrees: bool,
}

/// The timeline against wall time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WallCheck {
    /// The timeline's split, counts.
    pub split: TimelineSplit,
    /// Busy plus idle from the timeline, ns.
    pub timeline_ns: f64,
    /// `CLOCK_MONOTONIC` over the run, ns.
    pub wall_ns: f64,
    /// |timeline − wall| / wall.
    pub error: f64,
    /// Within the tolerance, every event kept, and well nested.
    pub agrees: bool,
}

impl Report {
    pub(crate) fn from_closed(c: Closed) -> Report {
        let rate = cycles::counts_per_ns();
        let l = &c.ledger;
        let scale = f64::from(l.options.sample_one_in.max(1));
        let rows = Block::ALL
            .iter()
            .map(|&block| {
                // The wait is timed every time, sampling or not.
                let s = if matches!(block, Block::Idle | Block::DeviceWait) {
                    1.0
                } else {
                    scale
                };
                BlockRow {
                    block,
                    count: l.counts[block.index()] as f64 * s,
                    cycles: l.cycles[block.index()] as f64 * s,
                    ns: l.cycles[block.index()] as f64 * s / rate,
                }
            })
            .collect();
        Report {
            rows,
            counts_per_ns: rate,
            inner_cost: l.inner_cost,
            outer_cost: l.outer_cost,
            cold_inner_cost: l.cold_inner_cost,
            cold_outer_cost: l.cold_outer_cost,
            tsc_invariant: cycles::tsc_check().map(|c| c.invariant()),
            brackets: l.brackets,
            too_deep: l.too_deep,
            sample_one_in: l.options.sample_one_in.max(1),
            frames_in: l.frames_in,
            frames_out: l.frames_out,
            frame_bytes_in: l.frame_bytes_in,
            frame_bytes_out: l.frame_bytes_out,
            payload_in: l.payload_in,
            payload_out: l.payload_out,
            span_ns: c.end_count.saturating_sub(l.start_count) as f64 / rate,
            wall_ns: c.end_wall_ns.saturating_sub(l.start_wall_ns) as f64,
            thread_cpu_ns: c.end_cpu_ns.saturating_sub(l.start_cpu_ns) as f64,
            run_delay_ns: delta(l.start_run_delay_ns, c.end_run_delay_ns),
            steal_ns: delta(l.start_steal_ns, c.end_steal_ns),
            irq_ns: delta(l.start_irq_ns, c.end_irq_ns),
            open_at_stop: l.open_depth(),
            timeline: ledger::timeline_of(&c),
            dilation: l.dilation.map(|d| DilationReport {
                speeds: l.options.dilation.unwrap_or(Speeds::all(1.0)),
                added_ns: d.added.map(|a| a / rate),
                outside_added_ns: d.outside_added / rate,
                spun_ns: d.spun as f64 / rate,
                spins: d.spins,
                owed_at_stop_ns: d.owed() / rate,
            }),
        }
    }

    /// The exclusive time of `class`'s blocks, ns (without dilation).
    pub fn class_ns(&self, class: Class) -> f64 {
        self.rows
            .iter()
            .filter(|r| Class::of(r.block) == Some(class))
            .map(|r| r.ns)
            .sum()
    }

    /// `class`'s time on the slower CPU, ns: its blocks' time and what the
    /// dilation added for them (without dilation, [`Report::class_ns`]).
    pub fn dilated_class_ns(&self, class: Class) -> f64 {
        let added = self.dilation.map_or(0.0, |d| d.added_ns[class as usize]);
        self.class_ns(class) + added
    }

    /// One block's row.
    pub fn row(&self, block: Block) -> BlockRow {
        self.rows[block.index()]
    }

    /// Idle (blocked in poll), ns.
    pub fn idle_ns(&self) -> f64 {
        self.row(Block::Idle).ns
    }

    /// The counter's span less idle: the time the thread was busy, ns.
    pub fn busy_ns(&self) -> f64 {
        self.span_ns - self.idle_ns()
    }

    /// The busy blocks' exclusive time summed, ns.
    pub fn attributed_ns(&self) -> f64 {
        self.rows
            .iter()
            .filter(|r| r.block.is_busy())
            .map(|r| r.ns)
            .sum()
    }

    /// The brackets' own cost (each timed bracket's outer cost), ns.
    pub fn bracket_cost_ns(&self) -> f64 {
        (self.brackets as f64 * self.outer_cost as f64) / self.counts_per_ns
    }

    /// The most the blocks may hold of their brackets' own cost beyond
    /// what was subtracted, ns: each timed bracket's cold inner cost less
    /// its hot one (a bracket the caches had left is charged that much
    /// more than an empty one measured back to back).
    pub fn cold_excess_ns(&self) -> f64 {
        let excess = self.cold_inner_cost.saturating_sub(self.inner_cost);
        self.brackets as f64 * excess as f64 / self.counts_per_ns
    }

    /// Busy time in no block and not the brackets' cost, ns: code between
    /// brackets, and whatever the sampling did not see.
    pub fn unattributed_ns(&self) -> f64 {
        self.busy_ns() - self.attributed_ns() - self.bracket_cost_ns()
    }

    /// Frames in and out: the packets "per packet" divides by.
    pub fn packets(&self) -> u64 {
        self.frames_in + self.frames_out
    }

    /// Application bytes moved either way: the bytes "per byte" divides by.
    pub fn payload_bytes(&self) -> u64 {
        self.payload_in + self.payload_out
    }

    /// A block's ns per packet (`None` without packets).
    pub fn ns_per_packet(&self, block: Block) -> Option<f64> {
        (self.packets() > 0).then(|| self.row(block).ns / self.packets() as f64)
    }

    /// A block's ns per application byte (`None` without bytes).
    pub fn ns_per_byte(&self, block: Block) -> Option<f64> {
        (self.payload_bytes() > 0).then(|| self.row(block).ns / self.payload_bytes() as f64)
    }

    /// The blocks' sum with the bracket cost and the unattributed rest
    /// (the counter's busy time) against the thread's CPU time
    /// (`CLOCK_THREAD_CPUTIME_ID`), within `tolerance` (0.05 for 5%).
    /// The counter also runs while the thread is preempted (run-queue
    /// delay) or its vCPU stolen by the hypervisor, and the CPU clock does
    /// not: both show up as disagreement, and both are reported beside it
    /// (`run_delay_ns`, [`Report::steal_ns`]) rather than subtracted, as
    /// the run-queue delay also falls in idle (the wake-up after poll).
    /// So does softirq work the kernel runs at the end of the thread's
    /// system calls ([`Report::irq_ns`], host-wide).
    pub fn cpu_check(&self, tolerance: f64) -> CpuCheck {
        let accounted_ns = self.attributed_ns() + self.bracket_cost_ns() + self.unattributed_ns();
        let run_delay_ns = self.run_delay_ns.unwrap_or(0.0);
        let error = if self.thread_cpu_ns > 0.0 {
            (accounted_ns - self.thread_cpu_ns).abs() / self.thread_cpu_ns
        } else {
            f64::INFINITY
        };
        CpuCheck {
            accounted_ns,
            run_delay_ns,
            thread_cpu_ns: self.thread_cpu_ns,
            error,
            agrees: error <= tolerance,
        }
    }

    /// The timeline's busy plus idle against `CLOCK_MONOTONIC`, within
    /// `tolerance` (0.01 for 1%); fails when events were dropped or do
    /// not nest.
    pub fn wall_check(&self, tolerance: f64) -> WallCheck {
        let split = self.timeline.split();
        let timeline_ns = (split.busy() + split.idle) as f64 / self.counts_per_ns;
        let error = if self.wall_ns > 0.0 {
            (timeline_ns - self.wall_ns).abs() / self.wall_ns
        } else {
            f64::INFINITY
        };
        WallCheck {
            split,
            timeline_ns,
            wall_ns: self.wall_ns,
            error,
            agrees: error <= tolerance
                && split.mismatches == 0
                && self.timeline.dropped == 0
                && !self.timeline.events.is_empty(),
        }
    }

    /// The table: per block, count, total µs, ns per packet, ns per byte
    /// and share of busy time; then idle, the bracket cost and the rest.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<26} {:>10} {:>11} {:>9} {:>9} {:>7}\n",
            "block", "count", "total µs", "ns/pkt", "ns/byte", "busy %"
        );
        let busy = self.busy_ns();
        let per = |ns: f64, n: u64| {
            if n > 0 {
                format!("{:.1}", ns / n as f64)
            } else {
                "-".into()
            }
        };
        let per_byte = |ns: f64, n: u64| {
            if n > 0 {
                format!("{:.3}", ns / n as f64)
            } else {
                "-".into()
            }
        };
        let mut line = |name: &str, count: String, ns: f64| {
            out.push_str(&format!(
                "{:<26} {:>10} {:>11.1} {:>9} {:>9} {:>7.1}\n",
                name,
                count,
                ns / 1000.0,
                per(ns, self.packets()),
                per_byte(ns, self.payload_bytes()),
                if busy > 0.0 { 100.0 * ns / busy } else { 0.0 }
            ));
        };
        for r in self
            .rows
            .iter()
            .filter(|r| r.block.is_busy() && r.count > 0.0)
        {
            line(r.block.name(), format!("{:.0}", r.count), r.ns);
        }
        line(
            "(bracket cost)",
            self.brackets.to_string(),
            self.bracket_cost_ns(),
        );
        line("(unattributed)", "-".into(), self.unattributed_ns());
        out.push_str(&format!(
            "{} packets, {} application bytes; busy {:.1} ms, idle {:.1} ms, \
             thread CPU {:.1} ms, run-queue wait {}, steal {}, host irq+softirq {}, \
             wall {:.1} ms; \
             one round in {} timed\n",
            self.packets(),
            self.payload_bytes(),
            busy / 1e6,
            self.idle_ns() / 1e6,
            self.thread_cpu_ns / 1e6,
            ms_or_unknown(self.run_delay_ns),
            ms_or_unknown(self.steal_ns),
            ms_or_unknown(self.irq_ns),
            self.wall_ns / 1e6,
            self.sample_one_in
        ));
        out.push_str(&format!(
            "bracket cost (counts, inside/around): hot {}/{} subtracted, cold {}/{} not; \
             the blocks may hold up to {:.1} ms of it more\n",
            self.inner_cost,
            self.outer_cost,
            self.cold_inner_cost,
            self.cold_outer_cost,
            self.cold_excess_ns() / 1e6
        ));
        if self.tsc_invariant == Some(false) {
            out.push_str(
                "WARNING: the TSC is not invariant (no CPUID bit, no constant_tsc and \
                 nonstop_tsc): its rate follows the CPU's frequency, so counts may not be time\n",
            );
        }
        out
    }
}
