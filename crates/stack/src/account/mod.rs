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

pub mod block;
pub mod cycles;
mod ledger;
pub mod report;
pub mod timeline;

pub use block::Block;
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
