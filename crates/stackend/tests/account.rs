//! `--account` (issue 19 part 2) on real trials: the stack end's blocks,
//! timed with the cycle counter, become the trial's CPU profile in the
//! schema the kernel's sampled breakdown uses, and the analysis crate's
//! tables put them in layers and Huang & Chen's blocks. TUN devices in a
//! namespace, Linux's TCP at the other end. Needs root and TUN.

use analysis::cpu::attribute;
use analysis::layers::{Block, CpuLayer};
use record::factor::Account;
use record::{StackImpl, TestKind, ThreadRole, TrialParams};
#[path = "support/stack_place.rs"]
mod stack_place;

use stack_place::place;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

fn stream(account: Option<Account>, reverse: bool) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = StackImpl::Tcplab;
    p.bytes = Some(16 << 20);
    p.duration_s = None;
    p.reverse = reverse;
    p.account = account;
    p
}

#[test]
fn an_accounted_stream_stores_the_stacks_blocks_as_its_cpu_profile_by_layer_and_block() {
    let Some(mut place) = place() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    // The counter's busy time is compared with the thread's CPU clock:
    // one timed test at a time, each trial on a quiet host.
    let _timing = testkit::timing_lock();
    for (account, reverse) in [
        (Account::On, false),
        (Account::On, true),
        (Account::Sample(8), false),
    ] {
        let what = format!("--account {account} reverse={reverse}");
        let q = testkit::until_quiet(&what, testkit::QuietLimits::no_steal(), &[], || {
            place
                .run(&stream(Some(account), reverse), &stop)
                .unwrap_or_else(|e| panic!("{e}"))
        });
        eprintln!("{what}: {}", q.describe());
        let o = q.value;
        assert_eq!(o.metrics["bytes"], (16 << 20) as f64);
        let profile = o.profile.as_ref().expect("an accounted trial's profile");
        assert!(profile.clock.starts_with("tsc"), "{}", profile.clock);
        // The stack end is the sender unless reversed.
        let role = if reverse {
            ThreadRole::Receiver
        } else {
            ThreadRole::Sender
        };
        assert_eq!(profile.threads.len(), 1);
        assert_eq!(profile.threads[0].role, role);
        // Its stacks add up to the accountant's busy time, or to the
        // blocks' and brackets' own time where that is more (preemption
        // inside brackets): no negative "unattributed" stack is stored.
        let busy = o.metrics["stack_client_account_busy_s"];
        let tid = profile.threads[0].tid;
        let stacks = profile.thread_s(tid);
        let frame = |s: &record::ProfiledStack| s.user.first().or(s.kernel.first()).copied();
        let named = profile
            .stacks
            .iter()
            .filter(|s| {
                s.tid == tid
                    && frame(s).map(|f| profile.symbol(f))
                        != Some(stackend::account_profile::UNATTRIBUTED_SYMBOL)
            })
            .map(|s| s.ns)
            .sum::<u64>() as f64
            * 1e-9;
        assert!(
            (stacks - busy.max(named)).abs() < 1e-6 + 1e-4 * busy,
            "{stacks} against busy {busy} and named blocks {named}"
        );
        // And on a quiet run the named blocks (exclusive times, and the
        // brackets' estimated cost) fit in the busy time: a parent that
        // kept its children's time would count them twice and overflow.
        let brackets = o.metrics["stack_client_account_bracket_cost_s"];
        eprintln!(
            "named blocks {:.2} ms, busy {:.2} ms, bracket cost {:.2} ms",
            named * 1e3,
            busy * 1e3,
            brackets * 1e3
        );
        assert!(
            named <= 1.02 * busy,
            "named blocks {named} s over busy {busy} s (bracket cost {brackets} s)"
        );
        assert_eq!(
            o.metrics["stack_client_account_sample_one_in"],
            f64::from(account.one_in().unwrap())
        );
        let err = o.metrics["stack_client_account_cpu_check_error"];
        let a = attribute(profile);
        let end = a.role(role).expect("the stack end's role");
        let share = |l: CpuLayer| end.layer_s(l) / end.cpu_s;
        eprintln!(
            "--account {account} reverse={reverse}: busy {:.1} ms (thread CPU {:.1} ms, error {:.3}); tcp {:.3}, ip {:.3}, checksum {:.3}, copy {:.3}, syscall {:.3}, netdev {:.3}, other {:.3}",
            busy * 1e3,
            o.metrics["stack_client_account_thread_cpu_s"] * 1e3,
            err,
            share(CpuLayer::Tcp),
            share(CpuLayer::Ip),
            share(CpuLayer::Checksum),
            share(CpuLayer::Copy),
            share(CpuLayer::Syscall),
            share(CpuLayer::Netdev),
            share(CpuLayer::Other),
        );
        // Every layer of the path has time, and the device's system calls
        // (Linux's own path inside them) hold the most of it, as the
        // stack's per-packet table shows.
        // (Sampled, a small block's estimate may come out at zero or
        // below, which is not stored: only timing every bracket sees all.)
        let layers: &[CpuLayer] = if account == Account::On {
            &[
                CpuLayer::Tcp,
                CpuLayer::Ip,
                CpuLayer::Checksum,
                CpuLayer::Copy,
                CpuLayer::Syscall,
            ]
        } else {
            &[CpuLayer::Tcp, CpuLayer::Syscall]
        };
        for &l in layers {
            assert!(end.layer_s(l) > 0.0, "no {} time: {end:?}", l.name());
        }
        assert!(share(CpuLayer::Syscall) > share(CpuLayer::Tcp), "{end:?}");
        // Huang & Chen's blocks on the stack's own path.
        let (out_block, in_block) = if reverse {
            (Block::ReadSocket, Block::TcpInput)
        } else {
            (Block::WriteSocket, Block::TcpOutput)
        };
        assert!(
            end.block_s(out_block) > 0.0 && end.block_s(in_block) > 0.0,
            "{end:?}"
        );
        // The stored self-check is the one its metrics give: the
        // counter's busy time against the thread's CPU clock.
        let cpu = o.metrics["stack_client_account_thread_cpu_s"];
        assert!(
            (err - (busy - cpu).abs() / cpu).abs() < 1e-9,
            "stored error {err} against busy {busy} s and thread CPU {cpu} s"
        );
        // On a quiet host (no steal) they agree, like with like: the
        // counter's busy time is the thread's CPU time, plus at most the
        // time the thread waited runnable for a CPU (here it is not
        // real-time and shares the CPUs with Linux's end; part of that
        // wait falls in idle instead), within 5% either side (the 5%
        // check at SCHED_FIFO is stack/tests/account_linux.rs).
        // The counter also runs through softirq work charged to
        // interrupts and through steal: host-wide, in 10 ms ticks, so an
        // upper bound on this thread's part of them.
        let waited = o.metrics["stack_client_account_run_delay_s"];
        let irq = o
            .metrics
            .get("stack_client_account_irq_s")
            .copied()
            .unwrap_or(0.0);
        let steal = o
            .metrics
            .get("stack_client_account_steal_s")
            .copied()
            .unwrap_or(0.0);
        assert!(
            busy >= 0.95 * cpu && busy <= 1.05 * cpu + waited + irq + steal,
            "busy {busy} s against thread CPU {cpu} s, {waited} s waiting for a CPU, \
             {irq} s of interrupts and {steal} s of steal"
        );
    }
    let plain = place.run(&stream(None, false), &stop).unwrap();
    assert!(plain.profile.is_none());
    assert!(!plain.metrics.contains_key("stack_client_account_busy_s"));
}
