//! The CPU sampler against the real kernel: a thread that burns a known
//! amount of CPU in a named function is found, by name, with that much
//! sampled time; a thread in a system call is sampled in the kernel.
//! Needs root (CI runs as root).

use probe::{CpuSampler, ProbeDepth, SamplerConfig, DEFAULT_PERIOD_NS};
use record::ThreadRole;
use std::time::{Duration, Instant};

/// CPU time of the calling thread, seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Spins in user space for `ms` of wall time; a distinctive, unmangled name.
#[inline(never)]
#[no_mangle]
pub extern "C" fn tcplab_test_spin_user(ms: u64) -> u64 {
    let end = Instant::now() + Duration::from_millis(ms);
    let mut x = 1u64;
    while Instant::now() < end {
        // Plain shifts and xors: no calls, even in a debug build.
        let mut i = 0u32;
        while i < 200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            i += 1;
        }
        std::hint::black_box(x);
    }
    x
}

#[test]
fn a_busy_thread_is_sampled_for_its_cpu_time_in_its_function() {
    if !testkit::need_root("a perf_event BPF sampler") {
        return;
    }
    // Sampled time (a timer on the wall clock) against the thread's CPU
    // clock: one timed test at a time, on a run with no steal (which the
    // timer samples and the CPU clock does not count).
    let _timing = testkit::timing_lock();
    let q = testkit::until_quiet(
        "a sampled spin",
        testkit::QuietLimits::no_steal(),
        &[],
        || {
            let sampler = CpuSampler::start(SamplerConfig {
                tgid: std::process::id(),
                period_ns: DEFAULT_PERIOD_NS,
                depth: ProbeDepth::Full,
            })
            .expect("the sampler starts (needs root)");
            let (tid, cpu_s) = std::thread::spawn(|| {
                let c0 = thread_cpu_s();
                tcplab_test_spin_user(800);
                // SAFETY: gettid has no preconditions.
                (unsafe { libc::gettid() } as u32, thread_cpu_s() - c0)
            })
            .join()
            .unwrap();
            (sampler.stop().unwrap().0, tid, cpu_s)
        },
    );
    eprintln!("a sampled spin: {}", q.describe());
    let (p, tid, cpu_s) = q.value;
    assert!(p.total_samples() > 0, "no samples at all");
    let got = p.thread_s(tid);
    assert!(
        (got - cpu_s).abs() <= 0.05 * cpu_s + 0.01,
        "sampled {got:.3} s of the thread, it used {cpu_s:.3} s of CPU"
    );
    let in_spin: u64 = p
        .stacks
        .iter()
        .filter(|s| {
            s.tid == tid && s.user.first().map(|f| p.symbol(*f)) == Some("tcplab_test_spin_user")
        })
        .map(|s| s.samples)
        .sum();
    let all: u64 = p
        .stacks
        .iter()
        .filter(|s| s.tid == tid)
        .map(|s| s.samples)
        .sum();
    let mut leaves: std::collections::BTreeMap<String, u64> = Default::default();
    for s in p.stacks.iter().filter(|s| s.tid == tid) {
        let leaf = s.user.first().map_or("[kernel]", |f| p.symbol(*f));
        *leaves.entry(leaf.to_string()).or_default() += s.samples;
    }
    assert!(
        in_spin as f64 >= 0.8 * all as f64,
        "only {in_spin} of {all} samples in tcplab_test_spin_user: {leaves:?}"
    );
    assert_eq!(p.role_of(tid), ThreadRole::Tcplab);
    // A thread that never sleeps is sampled at the full rate: the kernel
    // did not throttle the sampler.
    let rate = all as f64 / cpu_s;
    let want = 1e9 / DEFAULT_PERIOD_NS as f64;
    eprintln!("{} clock: {rate:.0} samples per CPU-second", p.clock);
    assert!(
        rate >= 0.9 * want,
        "{rate:.0} samples per CPU-second of the busy thread, want about {want:.0} (throttled?)"
    );
}

#[test]
fn time_in_a_system_call_is_sampled_with_its_kernel_stack() {
    if !testkit::need_root("a perf_event BPF sampler") {
        return;
    }
    let _timing = testkit::timing_lock();
    let sampler = CpuSampler::start(SamplerConfig {
        tgid: std::process::id(),
        period_ns: DEFAULT_PERIOD_NS,
        depth: ProbeDepth::Full,
    })
    .expect("the sampler starts (needs root)");
    let tid = std::thread::spawn(|| {
        // getppid in a loop: almost all time in the kernel's syscall path.
        let end = Instant::now() + Duration::from_millis(500);
        while Instant::now() < end {
            for _ in 0..1000 {
                // SAFETY: no preconditions.
                unsafe { libc::syscall(libc::SYS_getppid) };
            }
        }
        // SAFETY: gettid has no preconditions.
        (unsafe { libc::gettid() }) as u32
    })
    .join()
    .unwrap();
    let (p, _) = sampler.stop().unwrap();
    let kernel: u64 = p
        .stacks
        .iter()
        .filter(|s| s.tid == tid && !s.kernel.is_empty())
        .map(|s| s.samples)
        .sum();
    let syscall_frames = p.stacks.iter().filter(|s| s.tid == tid).any(|s| {
        s.kernel
            .iter()
            .any(|f| p.symbol(*f).contains("getppid") || p.symbol(*f).contains("do_syscall_64"))
    });
    assert!(kernel > 0, "no kernel samples for a syscall-bound thread");
    assert!(
        syscall_frames,
        "no syscall frame symbolized in its kernel stacks"
    );
}
