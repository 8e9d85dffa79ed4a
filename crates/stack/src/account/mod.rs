//! Cost accounting per function block (issue 19 part 2): the stack's code
//! paths are bracketed with the CPU's cycle counter, each bracket charging
//! its block the time between entry and exit less its nested brackets'
//! (exclusive time, so the blocks add up to the total without counting
//! twice) and less the bracket's own measured cost.
//!
//! Off by default: a bracket then costs one branch on a thread-local flag.
//! [`start`] turns it on for the calling thread (the stack's loop runs on
//! one), [`stop`] turns it off and returns the [`Report`]. The counter's
//! rate is calibrated against `CLOCK_MONOTONIC` once per process; the
//! report converts counts to ns per packet (frames in and out) and per
//! application byte, and checks itself: the blocks against the thread's
//! CPU time ([`Report::cpu_check`]) and the entry/exit timeline against
//! wall time ([`Report::wall_check`]).
//!
//! What the counter can and cannot tell (each stated in the reports'
//! methods text too, `studies::stack_accounting::METHOD`):
//! - **The read is serialised**: `lfence; rdtsc; lfence` ([`cycles::now`]),
//!   so neither the instructions before a bracket's edge nor those after
//!   it are counted on the wrong side.
//! - **The bracket's own cost** is measured at [`start`] twice: hot,
//!   brackets back to back (the cost subtracted from every bracket, and
//!   [`Report::bracket_cost_ns`]), and cold, one bracket at a time after
//!   2 MB were written to flush the core's caches (reported as
//!   [`Report::cold_inner_cost`]/[`Report::cold_outer_cost`], not
//!   subtracted). The stack's brackets lie between the two; a block may
//!   hold up to [`Report::cold_excess_ns`] more than its own work.
//! - **Time off the CPU is charged to the open block**: the counter runs
//!   while the thread is preempted or its vCPU stolen, and no bracket can
//!   see that cheaply (the thread's CPU clock is a system call). It is not
//!   removed per block; it is bounded by the run-queue wait and steal each
//!   report records ([`Report::run_delay_ns`], [`Report::steal_ns`]) and
//!   shows in [`Report::cpu_check`]. Runs under `SCHED_FIFO` (the
//!   scripts' `--fifo`) keep it small.
//! - **The TSC must be invariant** to count time: [`cycles::tsc_check`]
//!   reads CPUID's invariant-TSC bit and the kernel's `constant_tsc` and
//!   `nonstop_tsc`; [`Report::tsc_invariant`] records the verdict and the
//!   table warns when it fails. Accounting is not refused then, as a guest
//!   may lack the bit on a stable TSC, and the calibration and the CPU
//!   check still bound the error.

pub mod block;
pub mod cycles;
pub mod dilation;
mod ledger;
pub mod report;
pub mod timeline;

pub use block::Block;
pub use dilation::{Class, Speeds};
pub use ledger::{
    enter, enter_wait, frame_in, frame_out, is_on, payload, relabel, round, start, Bracket, Options,
};
pub use report::{BlockRow, CpuCheck, Report, WallCheck};

/// Stops accounting on the calling thread and reports what it counted
/// (`None` when it was not accounting).
pub fn stop() -> Option<Report> {
    ledger::stop_ledger().map(Report::from_closed)
}

#[cfg(test)]
mod tests;
