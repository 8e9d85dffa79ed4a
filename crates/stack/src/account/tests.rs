//! The accountant on synthetic work: spins of known length, sleeps inside
//! and outside the idle block, nesting, relabelling and sampling.

use super::*;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// One timing test at a time, on a thread at real-time priority
/// (SCHED_FIFO 1; tests run as root): builds beside it would otherwise
/// preempt the spins, and the counter would count their time.
fn quiet() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    let guard = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: param is valid for the call; 0 names the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    assert_eq!(rc, 0, "SCHED_FIFO: {}", std::io::Error::last_os_error());
    guard
}

fn spin(ns: u64) {
    let end = cycles::monotonic_ns() + ns;
    while cycles::monotonic_ns() < end {
        std::hint::spin_loop();
    }
}

fn with_timeline() -> Options {
    Options {
        timeline_capacity: 10_000,
        sample_one_in: 1,
    }
}

#[test]
fn off_by_default_and_stop_without_start_reports_nothing() {
    let _quiet = quiet();
    assert!(!is_on());
    {
        let _b = enter(Block::TcpOutput);
    }
    assert!(stop().is_none());
}

#[test]
fn a_child_is_taken_from_its_parent() {
    let _quiet = quiet();
    start(Options::default());
    {
        let _parent = enter(Block::IpInput);
        spin(2_000_000);
        {
            let _child = enter(Block::Checksum);
            spin(6_000_000);
        }
    }
    let r = stop().unwrap();
    let parent = r.row(Block::IpInput).ns;
    let child = r.row(Block::Checksum).ns;
    assert!((parent - 2e6).abs() < 0.2e6, "parent {parent} ns");
    assert!((child - 6e6).abs() < 0.2e6, "child {child} ns");
    assert_eq!(r.row(Block::IpInput).count, 1.0);
    assert_eq!(r.open_at_stop, 0);
}

#[test]
fn empty_brackets_cost_nothing_once_their_cost_is_subtracted() {
    let _quiet = quiet();
    start(Options::default());
    {
        let _outer = enter(Block::TcpOutput);
        for _ in 0..100_000 {
            let _b = enter(Block::Checksum);
        }
    }
    let r = stop().unwrap();
    // Without the subtraction each would keep the inner cost (tens of ns).
    let per_child = r.row(Block::Checksum).ns / 100_000.0;
    let per_parent_child = r.row(Block::TcpOutput).ns / 100_000.0;
    let inner_ns = r.inner_cost as f64 / r.counts_per_ns;
    assert!(inner_ns > 1.0, "an empty bracket measured {inner_ns} ns");
    assert!(
        per_child < inner_ns / 2.0,
        "{per_child} ns per empty bracket"
    );
    assert!(
        per_parent_child < inner_ns,
        "{per_parent_child} ns of each child left in the parent"
    );
}

#[test]
fn relabel_renames_the_open_bracket() {
    let _quiet = quiet();
    start(with_timeline());
    {
        let _b = enter(Block::TcpInputSlow);
        relabel(Block::TcpInputSlow, Block::TcpInputFast);
    }
    let r = stop().unwrap();
    assert_eq!(r.row(Block::TcpInputFast).count, 1.0);
    assert_eq!(r.row(Block::TcpInputSlow).count, 0.0);
    assert_eq!(r.timeline.split().mismatches, 0);
}

#[test]
fn sampling_times_about_one_round_in_n_and_scales() {
    let _quiet = quiet();
    start(Options {
        timeline_capacity: 0,
        sample_one_in: 4,
    });
    for _ in 0..4000 {
        round();
        let _b = enter(Block::TcpOutput);
        let _c = enter(Block::Checksum);
        frame_out(100);
    }
    // Idle is timed every time, in rounds left out too.
    for _ in 0..10 {
        round();
        let _idle = enter_wait();
    }
    let r = stop().unwrap();
    assert!(!is_on());
    // 1000 expected rounds of 4000: a binomial draw, sd about 27.
    let timed_pairs = (r.brackets - 10) / 2;
    assert!(
        (850..1150).contains(&timed_pairs),
        "{timed_pairs} of 4000 rounds timed"
    );
    let estimate = r.row(Block::TcpOutput).count;
    assert_eq!(estimate, timed_pairs as f64 * 4.0);
    assert_eq!(r.row(Block::Checksum).count, estimate);
    assert_eq!(r.row(Block::Idle).count, 10.0);
    // Frames are counted in rounds left out too.
    assert_eq!(r.frames_out, 4000);
}

#[test]
fn rounds_change_nothing_without_sampling_or_with_brackets_open() {
    let _quiet = quiet();
    start(Options::default());
    for _ in 0..100 {
        round();
        assert!(is_on());
    }
    assert!(stop().is_some());
    start(Options {
        timeline_capacity: 0,
        sample_one_in: 1_000_000,
    });
    let open = enter(Block::Timers);
    for _ in 0..100 {
        round();
        assert!(is_on(), "a round inside an open bracket");
    }
    drop(open);
    round();
    assert!(!is_on(), "a round left out");
    assert!(stop().is_some());
    assert!(!is_on());
    assert!(stop().is_none());
}

#[test]
fn busy_work_agrees_with_thread_cpu_and_a_sleep_outside_idle_does_not() {
    let _quiet = quiet();
    start(with_timeline());
    {
        let _b = enter(Block::TcpOutput);
        spin(20_000_000);
    }
    {
        let _idle = enter(Block::Idle);
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = stop().unwrap();
    let check = r.cpu_check(0.05);
    assert!(check.agrees, "{check:?}\n{}", r.table());
    assert!((r.idle_ns() - 20e6).abs() < 5e6, "idle {} ns", r.idle_ns());
    // The sleep's own CPU (the call, the switches) is busy, not idle.
    let wait = r.row(Block::DeviceWait);
    assert_eq!(wait.count, 1.0);
    assert!(
        wait.ns > 0.0 && wait.ns < 1e6,
        "{} ns of CPU in the wait",
        wait.ns
    );
    let wall = r.wall_check(0.01);
    assert!(wall.agrees, "{wall:?}");

    // The same sleep not marked idle: the counter calls it busy, the CPU
    // clock does not.
    start(with_timeline());
    {
        let _b = enter(Block::TcpOutput);
        spin(20_000_000);
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = stop().unwrap();
    assert!(!r.cpu_check(0.05).agrees, "{:?}", r.cpu_check(0.05));
}

#[test]
fn the_wall_check_fails_when_the_timeline_overflowed() {
    let _quiet = quiet();
    start(Options {
        timeline_capacity: 4,
        sample_one_in: 1,
    });
    for _ in 0..10 {
        let _b = enter(Block::Timers);
    }
    let r = stop().unwrap();
    assert_eq!(r.timeline.dropped, 16);
    assert!(!r.wall_check(0.01).agrees);
}

#[test]
fn frames_and_bytes_are_the_denominators() {
    let _quiet = quiet();
    start(Options::default());
    frame_in(1500);
    frame_out(52);
    payload(1000, 448);
    {
        let _b = enter(Block::TcpOutput);
        spin(1_000_000);
    }
    let r = stop().unwrap();
    assert_eq!(r.packets(), 2);
    assert_eq!(r.payload_bytes(), 1448);
    let row = r.row(Block::TcpOutput);
    assert!((row.cycles / r.counts_per_ns - row.ns).abs() < 1.0);
    let per_packet = r.ns_per_packet(Block::TcpOutput).unwrap();
    assert!((per_packet - 0.5e6).abs() < 0.1e6, "{per_packet}");
    assert!(r.ns_per_byte(Block::Arp) == Some(0.0));
    assert!(r.table().contains("tcp output"));
}
