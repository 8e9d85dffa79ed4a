//! How tcplab's stack times its blocks (`--account`), said once for
//! every report section that prints the accounted stack's times.

/// The accounting's method and its limits, for the first accounted
/// section of a report (the stack's `account` module doc says the same).
pub const METHOD: &str = "How the stack's accounting times (crates/stack/src/account): each \
     bracket reads the TSC serialised (lfence; rdtsc; lfence), and a block is charged its \
     exclusive time less an empty bracket's cost measured hot, brackets back to back at the \
     start of each trial; the same cost measured cold (the caches flushed between brackets) is \
     larger and not subtracted, so a block may hold up to the difference per bracket \
     (stack_*_account_bracket_cold_excess_s). Time the thread spends off its CPU inside a \
     bracket (preempted, or its vCPU stolen) is charged to the open block, as the counter runs \
     on: it is not removed per block, only bounded by the run-queue wait and steal each trial \
     records (stack_*_account_run_delay_s, and the CPU check against the thread's CPU clock). \
     The TSC is checked to be invariant (CPUID, or the kernel's constant_tsc and nonstop_tsc); \
     a trial on one that is not records stack_*_account_tsc_invariant = 0.";
