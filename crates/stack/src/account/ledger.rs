//! The per-thread ledger behind the brackets: the open brackets (a small
//! stack, so a child's time is taken from its parent), exclusive counts
//! per block, frame and byte counts, the bracket's own cost measured at
//! start, and the event timeline.

use super::block::Block;
use super::cycles;
use super::dilation::{Dilation, Speeds};
use super::timeline::{Event, Timeline};
use std::cell::{Cell, RefCell};

/// Deepest nesting recorded; deeper brackets are counted in
/// [`Ledger::too_deep`] and left untimed.
pub const MAX_DEPTH: usize = 24;
/// Empty brackets per round when the bracket's cost is measured.
const COST_BRACKETS: u64 = 2000;
/// Rounds of [`COST_BRACKETS`]; the median round is taken.
const COST_ROUNDS: usize = 7;
/// Single brackets timed cold, each after [`EVICT_BYTES`] were written;
/// the median is taken.
const COLD_BRACKETS: usize = 15;
/// Written between two cold brackets: more than a core's L1 and L2, so
/// the bracket's thread-local flag, ledger and code come from further out.
const EVICT_BYTES: usize = 2 << 20;

/// How a thread's accounting runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Module entries and exits kept in the timeline (0: no timeline);
    /// later ones are counted as dropped.
    pub timeline_capacity: usize,
    /// Time one round in this many, a round being everything from one
    /// [`round`] call to the next (the stack calls it at each poll, so a
    /// round is a poll and the application's work after it); 1 times
    /// every one. Idle is always timed.
    pub sample_one_in: u32,
    /// A slower CPU by time dilation ([`super::dilation`]): `None` keeps
    /// this CPU's speed. Needs every round timed (`sample_one_in` 1).
    pub dilation: Option<Speeds>,
}

impl Default for Options {
    /// Every bracket timed, no timeline, this CPU's speed.
    fn default() -> Options {
        Options {
            timeline_capacity: 0,
            sample_one_in: 1,
            dilation: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Open {
    block: Block,
    start: u64,
    child: u64,
    event: Option<usize>,
    /// The thread's CPU clock at entry (ns), read for [`Block::Idle`] only.
    cpu_ns: u64,
}

const CLOSED: Open = Open {
    block: Block::Application,
    start: 0,
    child: 0,
    event: None,
    cpu_ns: 0,
};

/// What one thread has counted since `start`.
#[derive(Debug)]
pub(crate) struct Ledger {
    open: [Open; MAX_DEPTH],
    depth: usize,
    /// Depth of brackets inside one too deep to time (not timed either).
    skipping: usize,
    /// xorshift64 state for the sampling draws.
    draw: u64,
    pub(crate) options: Options,
    /// What a slower CPU owes and has spun (`None`: this CPU's speed).
    pub(crate) dilation: Option<Dilation>,
    /// [`Block::DeviceWait`]'s counts already owed for.
    wait_cpu_seen: i64,
    /// Exclusive counts per block: signed, as each bracket's share is its
    /// interval less the mean bracket cost, which single brackets may fall
    /// below (clipping them at zero would bias the sum upwards).
    pub(crate) cycles: [i64; Block::COUNT],
    pub(crate) counts: [u64; Block::COUNT],
    pub(crate) brackets: u64,
    pub(crate) too_deep: u64,
    /// Counts between a bracket's two counter reads when it holds nothing.
    pub(crate) inner_cost: u64,
    /// Counts one empty bracket costs the code around it.
    pub(crate) outer_cost: u64,
    /// [`Ledger::inner_cost`] with cold caches (reported, not subtracted).
    pub(crate) cold_inner_cost: u64,
    /// [`Ledger::outer_cost`] with cold caches (reported, not subtracted).
    pub(crate) cold_outer_cost: u64,
    /// With a slower CPU: counts an empty bracket costs the code around it
    /// outside its first read and its exit's last (after the dilation's
    /// bookkeeping), which is all the enclosing bracket is not told of.
    pub(crate) dilated_outside_cost: u64,
    /// With a slower CPU: the last read of the latest top-level bracket's
    /// exit, from which the busy time outside every block is owed.
    last_top_exit: Option<u64>,
    pub(crate) frames_in: u64,
    pub(crate) frames_out: u64,
    pub(crate) frame_bytes_in: u64,
    pub(crate) frame_bytes_out: u64,
    pub(crate) payload_in: u64,
    pub(crate) payload_out: u64,
    pub(crate) timeline: Vec<Event>,
    pub(crate) timeline_dropped: u64,
    pub(crate) start_count: u64,
    pub(crate) start_wall_ns: u64,
    pub(crate) start_cpu_ns: u64,
    pub(crate) start_run_delay_ns: Option<u64>,
    pub(crate) start_steal_ns: Option<u64>,
    pub(crate) start_irq_ns: Option<u64>,
}

impl Ledger {
    const EMPTY: Ledger = Ledger {
        open: [CLOSED; MAX_DEPTH],
        depth: 0,
        skipping: 0,
        draw: 0x9e37_79b9_7f4a_7c15,
        options: Options {
            timeline_capacity: 0,
            sample_one_in: 1,
            dilation: None,
        },
        dilation: None,
        wait_cpu_seen: 0,
        cycles: [0; Block::COUNT],
        counts: [0; Block::COUNT],
        brackets: 0,
        too_deep: 0,
        inner_cost: 0,
        outer_cost: 0,
        cold_inner_cost: 0,
        cold_outer_cost: 0,
        dilated_outside_cost: 0,
        last_top_exit: None,
        frames_in: 0,
        frames_out: 0,
        frame_bytes_in: 0,
        frame_bytes_out: 0,
        payload_in: 0,
        payload_out: 0,
        timeline: Vec::new(),
        timeline_dropped: 0,
        start_count: 0,
        start_wall_ns: 0,
        start_cpu_ns: 0,
        start_run_delay_ns: None,
        start_steal_ns: None,
        start_irq_ns: None,
    };

    /// How many brackets are open now.
    pub(crate) fn open_depth(&self) -> usize {
        self.depth
    }

    fn record(&mut self, at: u64, block: Block, enter: bool) -> Option<usize> {
        if self.timeline.len() < self.options.timeline_capacity {
            self.timeline.push(Event { at, block, enter });
            Some(self.timeline.len() - 1)
        } else {
            if self.options.timeline_capacity > 0 {
                self.timeline_dropped += 1;
            }
            None
        }
    }

    /// Whether the next round is timed: a pseudo-random draw with
    /// probability 1/N (not every N-th, which could fall in step with a
    /// periodic pattern of rounds, such as polls that alternate between
    /// reading frames and timing out).
    fn sampled(&mut self) -> bool {
        let mut x = self.draw;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.draw = x;
        x.is_multiple_of(u64::from(self.options.sample_one_in))
    }

    /// Opens a bracket: timed (its exit must call [`Ledger::exit`]) or
    /// skipped as too deep ([`Ledger::exit_skipped`]).
    fn enter(&mut self, block: Block) -> u8 {
        if self.skipping > 0 {
            self.skipping += 1;
            return SKIPPED;
        }
        if self.depth == MAX_DEPTH {
            self.too_deep += 1;
            self.skipping = 1;
            return SKIPPED;
        }
        let start = cycles::now();
        if self.depth == 0 {
            self.owe_outside(start);
        }
        let event = self.record(start, block, true);
        // Inside the interval, so the CPU the wait takes is within it.
        let cpu_ns = if block == Block::Idle {
            cycles::thread_cpu_ns()
        } else {
            0
        };
        self.open[self.depth] = Open {
            block,
            start,
            child: 0,
            event,
            cpu_ns,
        };
        self.depth += 1;
        TIMED
    }

    fn exit(&mut self) {
        let top = self.depth - 1;
        let cpu_end_ns = if self.open[top].block == Block::Idle {
            cycles::thread_cpu_ns()
        } else {
            0
        };
        let end = cycles::now();
        self.depth -= 1;
        let o = self.open[self.depth];
        let raw = end.saturating_sub(o.start);
        let mut exclusive = raw as i64 - (o.child + self.inner_cost) as i64;
        if o.block == Block::Idle {
            // The wait's CPU (the poll call and its context switches) is
            // busy time: charged to its own block, out of idle.
            let cpu = cpu_end_ns.saturating_sub(o.cpu_ns) as f64 * cycles::counts_per_ns();
            let cpu = (cpu as i64).min(exclusive.max(0));
            self.cycles[Block::DeviceWait.index()] += cpu;
            self.counts[Block::DeviceWait.index()] += 1;
            exclusive -= cpu;
        }
        let b = o.block.index();
        self.cycles[b] += exclusive;
        self.counts[b] += 1;
        self.brackets += 1;
        self.record(end, o.block, false);
        let seen = match self.dilate(o.block, exclusive, end) {
            // The dilation's last read: all since `end` was the slower
            // CPU's, and the rest of the exit is the calibrated outside.
            Some(after) => after - o.start + self.dilated_outside_cost,
            None => raw + self.outer_cost.saturating_sub(self.inner_cost),
        };
        if self.depth > 0 {
            self.open[self.depth - 1].child += seen;
        } else if self.dilation.is_some() {
            self.last_top_exit = Some(o.start + seen - self.dilated_outside_cost);
        }
    }

    /// With a slower CPU, owes for the busy time between the latest
    /// top-level exit and a top-level bracket opening at `start`: the
    /// stack's own code outside every block, less the part of the
    /// brackets' own cost outside their spans (owed with each bracket's
    /// whole cost at its exit). The idle wait is a block of its own.
    fn owe_outside(&mut self, start: u64) {
        let (Some(d), Some(from)) = (self.dilation.as_mut(), self.last_top_exit) else {
            return;
        };
        let gap = start.saturating_sub(from) as i64 - self.dilated_outside_cost as i64;
        d.owe_outside(gap);
    }

    /// Adds what `exclusive` counts of `block` owe a slower CPU and spins
    /// what is due from `closed` (the block's closing read), charged to
    /// [`Block::Dilation`] with the bookkeeping around the spin, which
    /// pays what is owed too. Returns the last counter read (`None` at
    /// this CPU's speed).
    fn dilate(&mut self, block: Block, exclusive: i64, closed: u64) -> Option<u64> {
        let d = self.dilation.as_mut()?;
        if block == Block::Idle {
            // Only the wait's CPU (charged to DeviceWait above) is work.
            let cpu = self.cycles[Block::DeviceWait.index()] - self.wait_cpu_seen;
            self.wait_cpu_seen = self.cycles[Block::DeviceWait.index()];
            d.owe(Block::DeviceWait, cpu);
        } else {
            d.owe(block, exclusive);
        }
        // The bracket's own cost is the slower CPU's code too (the
        // accountant runs at both speeds): slowed as computation. The
        // exit's work after its closing read is in that cost and, as the
        // spin counts from that read, pays as well: busy time reads high
        // by that much over its own / F (up to 0.8% at 1/8), which keeps
        // the dilation's own bookkeeping, dearer, out of what is slowed.
        d.owe_outside(self.outer_cost as i64);
        let due = d.is_due();
        let mut after = d.spin_from(closed, cycles::now);
        let i = Block::Dilation.index();
        if due {
            self.counts[i] += 1;
            if let Some(d) = self.dilation.as_mut() {
                d.spins += 1;
            }
            self.record(closed, Block::Dilation, true);
            self.record(after, Block::Dilation, false);
            // The records' own time is the slower CPU's as well.
            let last = cycles::now();
            if let Some(d) = self.dilation.as_mut() {
                d.pay(last - after);
            }
            after = last;
        }
        self.cycles[i] += (after - closed) as i64;
        Some(after)
    }

    fn exit_skipped(&mut self) {
        self.skipping -= 1;
    }

    /// Renames the innermost open bracket of block `from` to `to` (the
    /// fast path is known only once header prediction has run).
    fn relabel(&mut self, from: Block, to: Block) {
        if self.skipping > 0 {
            return;
        }
        if let Some(o) = self.open[..self.depth]
            .iter_mut()
            .rev()
            .find(|o| o.block == from)
        {
            o.block = to;
            if let Some(e) = o.event {
                self.timeline[e].block = to;
            }
        }
    }
}

thread_local! {
    /// Whether brackets on this thread time: the one branch a bracket
    /// costs when accounting is off, or in a round the sampling left out.
    static ON: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread accounts (frames and bytes are counted even
    /// inside unsampled brackets).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static LEDGER: RefCell<Ledger> = const { RefCell::new(Ledger::EMPTY) };
}

/// Whether brackets on the calling thread time now.
#[inline(always)]
pub fn is_on() -> bool {
    ON.with(Cell::get)
}

/// Whether the calling thread is accounting.
#[inline(always)]
fn is_counting() -> bool {
    COUNTING.with(Cell::get)
}

/// An open bracket: its block's time runs until it is dropped. Brackets
/// must close in reverse order of opening (as scopes do).
#[must_use = "a bracket times its scope: bind it (`let _b = ...`)"]
#[derive(Debug)]
pub struct Bracket {
    state: u8,
}

const OFF: u8 = 0;
const TIMED: u8 = 1;
const SKIPPED: u8 = 2;

/// Opens a bracket for `block` on the calling thread: a branch on a
/// thread-local flag when accounting is off.
#[inline(always)]
pub fn enter(block: Block) -> Bracket {
    if is_on() {
        open(block)
    } else {
        Bracket { state: OFF }
    }
}

/// [`enter`] for the wait for the device: timed whenever the thread
/// accounts, in sampled-out rounds too (idle is never sampled).
#[inline(always)]
pub fn enter_wait() -> Bracket {
    if is_counting() {
        open(Block::Idle)
    } else {
        Bracket { state: OFF }
    }
}

#[inline(never)]
fn open(block: Block) -> Bracket {
    let state = LEDGER.with(|l| l.borrow_mut().enter(block));
    Bracket { state }
}

/// Marks the start of a round (the stack calls it at each poll): when
/// sampling, draws whether brackets time until the next round, so a
/// round left out costs its brackets one branch each. Nothing when not
/// accounting or not sampling, or with brackets open.
#[inline(always)]
pub fn round() {
    if is_counting() {
        next_round();
    }
}

#[inline(never)]
fn next_round() {
    let timed = LEDGER.with(|l| {
        let mut l = l.borrow_mut();
        if l.options.sample_one_in <= 1 || l.depth > 0 {
            return None;
        }
        Some(l.sampled())
    });
    if let Some(timed) = timed {
        ON.with(|on| on.set(timed));
    }
}

impl Drop for Bracket {
    #[inline(always)]
    fn drop(&mut self) {
        if self.state != OFF {
            close(self.state);
        }
    }
}

#[inline(never)]
fn close(state: u8) {
    LEDGER.with(|l| {
        let mut l = l.borrow_mut();
        if state == TIMED {
            l.exit();
        } else {
            l.exit_skipped();
        }
    });
}

/// Renames the innermost open `from` bracket to `to`, when accounting.
#[inline(always)]
pub fn relabel(from: Block, to: Block) {
    if is_on() {
        relabel_open(from, to);
    }
}

#[inline(never)]
fn relabel_open(from: Block, to: Block) {
    LEDGER.with(|l| l.borrow_mut().relabel(from, to));
}

/// Counts a frame of `len` bytes read from the device.
#[inline(always)]
pub fn frame_in(len: usize) {
    if is_counting() {
        count(Count::FrameIn, len);
    }
}

/// Counts a frame of `len` bytes given to the device.
#[inline(always)]
pub fn frame_out(len: usize) {
    if is_counting() {
        count(Count::FrameOut, len);
    }
}

/// Counts application bytes the stack took in (`send`) or gave out
/// (`recv`): the denominators of ns per byte.
#[inline(always)]
pub fn payload(sent: usize, received: usize) {
    if is_counting() {
        count(Count::PayloadIn, sent);
        count(Count::PayloadOut, received);
    }
}

/// What [`count`] adds to.
#[derive(Clone, Copy)]
enum Count {
    FrameIn,
    FrameOut,
    PayloadIn,
    PayloadOut,
}

/// Adds to a count, out of line: the hot paths keep only the branch.
#[inline(never)]
fn count(what: Count, bytes: usize) {
    LEDGER.with(|l| {
        let mut l = l.borrow_mut();
        let bytes = bytes as u64;
        match what {
            Count::FrameIn => {
                l.frames_in += 1;
                l.frame_bytes_in += bytes;
            }
            Count::FrameOut => {
                l.frames_out += 1;
                l.frame_bytes_out += bytes;
            }
            Count::PayloadIn => l.payload_in += bytes,
            Count::PayloadOut => l.payload_out += bytes,
        }
    });
}

/// The median of `v`.
fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// An empty bracket's cost with cold caches, (inner, outer) in counts:
/// one bracket at a time, after [`EVICT_BYTES`] were written, the outer
/// cost less that of the two counter reads around it (measured as cold).
fn measure_cold_bracket_cost() -> (u64, u64) {
    let block = Block::Application;
    let mut evict = vec![0u8; EVICT_BYTES];
    let mut stamp = 0u8;
    let mut flush = |evict: &mut Vec<u8>| {
        stamp = stamp.wrapping_add(1);
        for line in evict.chunks_mut(64) {
            line[0] = stamp;
        }
        std::hint::black_box(&*evict);
    };
    let (mut inner, mut outer, mut reads) = (vec![], vec![], vec![]);
    for _ in 0..COLD_BRACKETS {
        flush(&mut evict);
        let t0 = cycles::now();
        let t1 = cycles::now();
        reads.push(t1 - t0);
        flush(&mut evict);
        LEDGER.with(|l| {
            let mut l = l.borrow_mut();
            l.cycles[block.index()] = 0;
            l.timeline.clear();
        });
        let t0 = cycles::now();
        {
            let _b = enter(block);
        }
        let t1 = cycles::now();
        outer.push(t1 - t0);
        inner.push(LEDGER.with(|l| l.borrow().cycles[block.index()]).max(0) as u64);
    }
    let (inner, outer, reads) = (median(inner), median(outer), median(reads));
    (inner, outer.saturating_sub(reads))
}

/// With the dilation's path on (at this CPU's speed, so nothing is owed
/// and only its bookkeeping runs): the median counts an empty bracket
/// costs the code around it less its interval from the first read to the
/// exit's last, back to back (hot caches).
fn measure_dilated_outside_cost() -> u64 {
    LEDGER.with(|l| l.borrow_mut().dilation = Some(Dilation::new(Speeds::all(1.0))));
    let block = Block::Application;
    let mut outside = Vec::with_capacity(COST_ROUNDS);
    for _ in 0..COST_ROUNDS {
        LEDGER.with(|l| {
            let mut l = l.borrow_mut();
            l.cycles[block.index()] = 0;
            l.cycles[Block::Dilation.index()] = 0;
            l.timeline.clear();
        });
        let t0 = cycles::now();
        for _ in 0..COST_BRACKETS {
            let _b = enter(block);
        }
        let t1 = cycles::now();
        let seen = LEDGER.with(|l| {
            let l = l.borrow();
            l.cycles[block.index()] + l.cycles[Block::Dilation.index()]
        });
        outside.push((t1 - t0).saturating_sub(seen.max(0) as u64) / COST_BRACKETS);
    }
    LEDGER.with(|l| l.borrow_mut().dilation = None);
    median(outside)
}

/// Median of empty-bracket costs, back to back (hot caches): (inner,
/// outer) in counts.
fn measure_bracket_cost() -> (u64, u64) {
    let mut inner = Vec::with_capacity(COST_ROUNDS);
    let mut outer = Vec::with_capacity(COST_ROUNDS);
    let block = Block::Application;
    for _ in 0..COST_ROUNDS {
        LEDGER.with(|l| {
            let mut l = l.borrow_mut();
            l.cycles[block.index()] = 0;
            l.timeline.clear();
        });
        let t0 = cycles::now();
        for _ in 0..COST_BRACKETS {
            let _b = enter(block);
        }
        let t1 = cycles::now();
        let between = LEDGER.with(|l| l.borrow().cycles[block.index()]);
        inner.push(between.max(0) as u64 / COST_BRACKETS);
        outer.push((t1 - t0) / COST_BRACKETS);
    }
    inner.sort_unstable();
    outer.sort_unstable();
    (inner[COST_ROUNDS / 2], outer[COST_ROUNDS / 2])
}

/// Starts accounting on the calling thread: calibrates the counter (once
/// per process), measures the bracket's cost hot (the one subtracted) and
/// cold, and zeroes the ledger.
pub fn start(options: Options) {
    cycles::counts_per_ns();
    ON.with(|on| on.set(false));
    LEDGER.with(|l| {
        let mut l = l.borrow_mut();
        *l = Ledger::EMPTY;
        // The cost is measured with the timeline recording, as it will.
        l.options = Options {
            timeline_capacity: options
                .timeline_capacity
                .max(usize::from(options.timeline_capacity > 0) * 2 * COST_BRACKETS as usize),
            sample_one_in: 1,
            dilation: None,
        };
        l.timeline = Vec::with_capacity(l.options.timeline_capacity);
    });
    ON.with(|on| on.set(true));
    COUNTING.with(|c| c.set(true));
    let (inner, outer) = measure_bracket_cost();
    let (cold_inner, cold_outer) = measure_cold_bracket_cost();
    let dilated_outside = match options.dilation {
        Some(s) if !s.is_full() => measure_dilated_outside_cost(),
        _ => 0,
    };
    LEDGER.with(|l| {
        let mut l = l.borrow_mut();
        let timeline = std::mem::take(&mut l.timeline);
        *l = Ledger::EMPTY;
        l.timeline = timeline;
        l.timeline.clear();
        l.options = Options {
            timeline_capacity: options.timeline_capacity,
            sample_one_in: options.sample_one_in.max(1),
            dilation: options.dilation,
        };
        // A slower CPU owes for every block, so every round is timed.
        l.dilation = options
            .dilation
            .filter(|s| !s.is_full() && options.sample_one_in <= 1)
            .map(Dilation::new);
        l.inner_cost = inner;
        l.outer_cost = outer;
        l.cold_inner_cost = cold_inner;
        l.cold_outer_cost = cold_outer;
        l.dilated_outside_cost = dilated_outside;
        l.start_run_delay_ns = cycles::thread_run_delay_ns();
        l.start_steal_ns = cycles::steal_ns();
        l.start_irq_ns = cycles::irq_ns();
        l.start_wall_ns = cycles::monotonic_ns();
        l.start_cpu_ns = cycles::thread_cpu_ns();
        l.start_count = cycles::now();
    });
}

/// What [`stop`] hands over: the ledger and the stop stamps.
#[derive(Debug)]
pub(crate) struct Closed {
    pub(crate) ledger: Ledger,
    pub(crate) end_count: u64,
    pub(crate) end_wall_ns: u64,
    pub(crate) end_cpu_ns: u64,
    pub(crate) end_run_delay_ns: Option<u64>,
    pub(crate) end_steal_ns: Option<u64>,
    pub(crate) end_irq_ns: Option<u64>,
}

/// Stops accounting on the calling thread and takes its ledger (`None`
/// when it was not accounting).
pub(crate) fn stop_ledger() -> Option<Closed> {
    if !is_counting() {
        return None;
    }
    let end_count = cycles::now();
    let end_cpu_ns = cycles::thread_cpu_ns();
    let end_wall_ns = cycles::monotonic_ns();
    ON.with(|on| on.set(false));
    COUNTING.with(|c| c.set(false));
    let end_run_delay_ns = cycles::thread_run_delay_ns();
    let end_steal_ns = cycles::steal_ns();
    let end_irq_ns = cycles::irq_ns();
    let ledger = LEDGER.with(|l| std::mem::replace(&mut *l.borrow_mut(), Ledger::EMPTY));
    Some(Closed {
        ledger,
        end_count,
        end_wall_ns,
        end_cpu_ns,
        end_run_delay_ns,
        end_steal_ns,
        end_irq_ns,
    })
}

/// The closed ledger's event timeline.
pub(crate) fn timeline_of(closed: &Closed) -> Timeline {
    Timeline {
        events: closed.ledger.timeline.clone(),
        dropped: closed.ledger.timeline_dropped,
        start: closed.ledger.start_count,
        end: closed.end_count,
    }
}
