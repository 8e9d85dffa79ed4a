//! Issue 18's interop matrix, the window rows, the stack against Linux over
//! TUN and TAP in a namespace of their own (`tcplab-win-<pid>-<n>`):
//! zero windows both ways (persist probes from each side), window scaling
//! up to 4 MiB buffers both ways, and MSS clamping both ways. Each row
//! checks every byte, the stack's own counters and segments (from the
//! segment log on its device), and Linux's view from `ss -tinH`.
//! Skipped, with a message, without root or TUN.

#[path = "support/interop_rows.rs"]
mod interop_rows;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/segment_log.rs"]
mod segment_log;

use interop_rows::*;
use segment_log::{Direction, DropPlan, Seen};
use stack::phy::tun::TunKind;
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::wire::TcpControl;
use std::net::SocketAddrV4;
use std::sync::mpsc;
use std::time::Duration;

/// The timestamps option's 12 bytes, which every data segment carries.
const TS_OPTION: usize = 12;

/// Linux connects and sends `bytes`; the stack receives with `pause`.
fn linux_to_stack(r: &mut Row, bytes: u64, pause: Option<ReadPause>) -> (StackSide, LinuxSide) {
    let stack = r.stack.take().unwrap();
    let clock = r.clock.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let stack_thread = std::thread::spawn(move || stack_receives(stack, clock, pause, ready_tx));
    ready_rx.recv().expect("the stack listens");
    let to = SocketAddrV4::new(r.ours, STACK_PORT);
    let ns = r.ns.name.clone();
    let linux = r.ns.run(move || linux_sends(ns, to, bytes)).join().unwrap();
    let (side, _) = stack_thread.join().expect("the stack thread");
    assert_eq!(side.error, None);
    assert_eq!(side.mismatch, None, "the first wrong byte the stack got");
    assert_eq!(side.bytes, bytes);
    assert_eq!(linux.error, None);
    (side, linux)
}

/// The stack connects and sends `bytes`; Linux receives as told.
fn stack_to_linux(
    r: &mut Row,
    bytes: u64,
    rcvbuf: Option<usize>,
    hold: Duration,
) -> (StackSide, LinuxSide) {
    let at = SocketAddrV4::new(r.linux, LINUX_PORT);
    let linux_thread = linux_receives(&r.ns, at, rcvbuf, hold);
    let stack = r.stack.take().unwrap();
    let (clock, ours) = (r.clock.clone(), r.ours);
    let stack_thread =
        std::thread::spawn(move || stack_sends(stack, clock, ours, at, bytes, |_, _, _| {}));
    let linux = linux_thread.join().expect("Linux's side");
    let (side, _) = stack_thread.join().expect("the stack thread");
    assert_eq!(side.error, None);
    assert_eq!(linux.error, None);
    assert_eq!(linux.mismatch, None, "the first wrong byte Linux got");
    assert_eq!(linux.bytes, bytes);
    assert_eq!(
        side.states.last(),
        Some(&State::TimeWait),
        "{:?}",
        side.states
    );
    (side, linux)
}

fn segments(r: &Row) -> Vec<Seen> {
    r.log.lock().unwrap().segments.clone()
}

/// 1(a): the stack's reader stops after 256 KiB for 1.5 s while Linux
/// sends 4 MB: the stack advertises a zero window, Linux probes it, the
/// window reopens when reading resumes, every byte arrives.
fn stack_zero_window(kind: TunKind, subnet: u8) {
    let Some(mut r) = row(
        "win",
        kind,
        subnet,
        TcpConfig::default(),
        DropPlan::default(),
    ) else {
        return;
    };
    let pause = ReadPause {
        after: 256 * 1024,
        hold: Duration::from_millis(1500),
    };
    let (side, linux) = linux_to_stack(&mut r, 4_000_000, Some(pause));
    let log = segments(&r);
    let zero = log
        .iter()
        .position(|s| {
            s.direction == Direction::Out && s.window == 0 && s.control == TcpControl::None
        })
        .expect("the stack advertised a zero window");
    let reopen = zero
        + log[zero..]
            .iter()
            .position(|s| s.direction == Direction::Out && s.window > 0)
            .expect("the window reopened");
    let probes = log[zero..reopen]
        .iter()
        .filter(|s| s.direction == Direction::In && s.len <= 1)
        .count();
    let data_into_zero = log[zero..reopen]
        .iter()
        .filter(|s| s.direction == Direction::In && s.len > 1)
        .count();
    eprintln!(
        "{kind:?} stack zero window: {} zero-window segments, {probes} Linux probes while closed, \
         {:.2} s; Linux: {}; {:?}",
        side.counters.zero_windows_sent,
        side.seconds,
        linux.ss.trim(),
        side.counters
    );
    assert!(side.counters.zero_windows_sent >= 1, "{:?}", side.counters);
    assert!(probes >= 1, "Linux probed the zero window");
    assert_eq!(
        data_into_zero, 0,
        "Linux sent no data into the closed window"
    );
    assert!(
        ss_field(&linux.ss, "rwnd_limited").is_some(),
        "Linux counts time limited by the stack's window: {}",
        linux.ss
    );
}

#[test]
fn the_stack_advertises_a_zero_window_that_linux_probes_over_tun() {
    stack_zero_window(TunKind::Tun, 1);
}

#[test]
fn the_stack_advertises_a_zero_window_that_linux_probes_over_tap() {
    stack_zero_window(TunKind::Tap, 2);
}

/// 1(b): Linux's receiver (SO_RCVBUF 4 KiB) does not read for 1.5 s while
/// the stack sends 1 MB: Linux closes its window, the stack's persist
/// timer (its floor lowered to 200 ms for the test) probes, and the
/// transfer completes once Linux reads.
fn linux_zero_window(kind: TunKind, subnet: u8) {
    let mut config = TcpConfig::default();
    config.timers.persist_min = Duration::from_millis(200);
    let Some(mut r) = row("win", kind, subnet, config, DropPlan::default()) else {
        return;
    };
    let (side, linux) = stack_to_linux(&mut r, 1_000_000, Some(4096), Duration::from_millis(1500));
    let log = segments(&r);
    let zero_windows = log
        .iter()
        .filter(|s| s.direction == Direction::In && s.window == 0 && s.control == TcpControl::None)
        .count();
    let first_zero = log
        .iter()
        .position(|s| s.direction == Direction::In && s.window == 0)
        .expect("Linux advertised a zero window");
    let probes_seen = log[first_zero..]
        .iter()
        .filter(|s| s.direction == Direction::Out && s.len == 1)
        .count();
    eprintln!(
        "{kind:?} Linux zero window: {zero_windows} zero windows from Linux, {} probes \
         ({probes_seen} one-byte segments after it), {:.2} s; Linux: {}; {:?}",
        side.counters.window_probes,
        side.seconds,
        linux.ss.trim(),
        side.counters
    );
    assert!(side.counters.window_probes >= 1, "{:?}", side.counters);
    assert!(probes_seen as u64 >= side.counters.window_probes);
}

#[test]
fn the_stack_probes_linuxs_zero_window_over_tun() {
    linux_zero_window(TunKind::Tun, 3);
}

#[test]
fn the_stack_probes_linuxs_zero_window_over_tap() {
    linux_zero_window(TunKind::Tap, 4);
}

/// A config with 4 MiB buffers both ways (window shift 7).
fn four_mib() -> TcpConfig {
    TcpConfig {
        recv_buffer: 4 * 1024 * 1024,
        send_buffer: 4 * 1024 * 1024,
        ..TcpConfig::default()
    }
}

/// 2, receiving: with a 4 MiB receive buffer the stack offers shift 7 in
/// its SYN-ACK and windows over 64 KB; Linux's `ss` shows the pair.
fn stack_scales_its_window(kind: TunKind, subnet: u8) {
    let Some(mut r) = row("win", kind, subnet, four_mib(), DropPlan::default()) else {
        return;
    };
    let (side, linux) = linux_to_stack(&mut r, 16_000_000, None);
    let log = segments(&r);
    let ours = log
        .iter()
        .find(|s| s.direction == Direction::Out && s.control == TcpControl::Syn);
    let theirs = log
        .iter()
        .find(|s| s.direction == Direction::In && s.control == TcpControl::Syn);
    let (ours, theirs) = (ours.expect("our SYN-ACK"), theirs.expect("Linux's SYN"));
    let max_window = log
        .iter()
        .filter(|s| s.direction == Direction::Out && s.control != TcpControl::Syn)
        .map(|s| (s.window as usize) << 7)
        .max()
        .unwrap_or(0);
    eprintln!(
        "{kind:?} stack receives with 4 MiB: shifts {:?}, largest window offered {max_window}, \
         {:.2} s; Linux: {}",
        side.shifts,
        side.seconds,
        linux.ss.trim()
    );
    assert_eq!(ours.window_scale, Some(7));
    let linux_shift = theirs.window_scale.expect("Linux offers window scaling");
    assert_eq!(side.shifts, (linux_shift, 7));
    // "Window scaling up to 4 MB windows": the whole 4 MiB buffer is
    // offered (in units of 128 bytes), not just something over 64 KB.
    assert!(
        max_window >= 4 * 1024 * 1024 - 128,
        "the largest window offered is {max_window}, not the 4 MiB buffer"
    );
    assert_eq!(
        ss_field(&linux.ss, "wscale"),
        Some(format!("7,{linux_shift}").as_str())
    );
    let snd_wnd = ss_number(&linux.ss, "snd_wnd").expect("snd_wnd in ss");
    assert!(
        snd_wnd > 65535,
        "Linux sees the stack's scaled window: {snd_wnd}"
    );
}

#[test]
fn the_stack_scales_a_4_mib_receive_window_for_linux_over_tun() {
    stack_scales_its_window(TunKind::Tun, 5);
}

#[test]
fn the_stack_scales_a_4_mib_receive_window_for_linux_over_tap() {
    stack_scales_its_window(TunKind::Tap, 6);
}

/// 2, sending: Linux with SO_RCVBUF 4 MiB; the stack, sending 64 MB from a
/// 4 MiB buffer, uses Linux's scaled window: Linux's window reaches 4 MiB
/// (its autotuning offers more than that here, about 5 MB) and more than
/// 256 KiB is in flight, four times what an unscaled window (64 KiB) allows.
/// How far above that the peak goes is set by the stack's cwnd and by how
/// fast Linux's reader drains beside it, not by the window: 0.88-2.0 MB on
/// this host (2026-11-28/29), so a 1 MiB bar failed one CI run in four.
fn stack_uses_a_scaled_window(kind: TunKind, subnet: u8) {
    let Some(first) = row("win", kind, subnet, four_mib(), DropPlan::default()) else {
        return;
    };
    // How much is in flight depends on how fast Linux's reader drains
    // beside the stack: a transfer on a quiet host (a fresh namespace for
    // each try).
    let mut first = Some(first);
    let q = testkit::until_quiet(
        "64 MB into a 4 MiB Linux buffer",
        testkit::QuietLimits::default(),
        &[],
        || {
            let mut r = first.take().unwrap_or_else(|| {
                row("win", kind, subnet, four_mib(), DropPlan::default())
                    .expect("the namespace's preconditions held for the first try")
            });
            stack_to_linux(&mut r, 64_000_000, Some(4 * 1024 * 1024), Duration::ZERO)
        },
    );
    eprintln!("64 MB into a 4 MiB Linux buffer: {}", q.describe());
    let (side, linux) = q.value;
    eprintln!(
        "{kind:?} stack sends into a 4 MiB Linux buffer: shifts {:?}, max in flight {}, \
         largest send window {}, {:.2} s; Linux: {}; {:?}",
        side.shifts,
        side.counters.max_in_flight,
        side.max_send_window,
        side.seconds,
        linux.ss.trim(),
        side.counters
    );
    let (snd_shift, rcv_shift) = side.shifts;
    assert!(snd_shift > 0, "Linux scales its window");
    assert_eq!(rcv_shift, 7);
    assert_eq!(
        ss_field(&linux.ss, "wscale"),
        Some(format!("{rcv_shift},{snd_shift}").as_str())
    );
    assert!(
        side.max_send_window >= 4 * 1024 * 1024,
        "Linux's window reached {}, not 4 MiB",
        side.max_send_window
    );
    assert!(
        side.counters.max_in_flight > 4 * 65_535,
        "no more in flight than four unscaled windows: {:?}",
        side.counters
    );
}

#[test]
fn the_stack_uses_linuxs_4_mib_window_with_over_256_kib_in_flight_over_tun() {
    stack_uses_a_scaled_window(TunKind::Tun, 7);
}

#[test]
fn the_stack_uses_linuxs_4_mib_window_with_over_256_kib_in_flight_over_tap() {
    stack_uses_a_scaled_window(TunKind::Tap, 8);
}

/// The largest payload one way, and the MSS each SYN carried.
fn mss_seen(r: &Row) -> (usize, usize, Option<u16>, Option<u16>) {
    let log = segments(r);
    let largest = |d| {
        log.iter()
            .filter(|s| s.direction == d)
            .map(|s| s.len)
            .max()
            .unwrap_or(0)
    };
    let syn_mss = |d| {
        log.iter()
            .find(|s: &&Seen| s.direction == d && s.control == TcpControl::Syn)
            .and_then(|s| s.mss)
    };
    (
        largest(Direction::Out),
        largest(Direction::In),
        syn_mss(Direction::Out),
        syn_mss(Direction::In),
    )
}

/// 3(a): the stack's MSS (536) below Linux's (1460): Linux sends no
/// segment over 536 bytes with its options, and says so in `ss`.
fn stack_mss_clamps_linux(kind: TunKind, subnet: u8) {
    let config = TcpConfig {
        mss: 536,
        ..TcpConfig::default()
    };
    let Some(mut r) = row("win", kind, subnet, config, DropPlan::default()) else {
        return;
    };
    let (side, linux) = linux_to_stack(&mut r, 2_000_000, None);
    let (largest_out, largest_in, our_mss, their_mss) = mss_seen(&r);
    eprintln!(
        "{kind:?} stack MSS 536: SYN MSS ours {our_mss:?} Linux's {their_mss:?}; largest payload \
         in {largest_in}, out {largest_out}; stack send MSS {}; Linux: {}",
        side.send_mss,
        linux.ss.trim()
    );
    assert_eq!(our_mss, Some(536));
    assert_eq!(their_mss, Some(1460));
    assert!(side.sack_ts.1, "timestamps, so 12 option bytes per segment");
    assert!(
        largest_in > 0 && largest_in + TS_OPTION <= 536,
        "{largest_in}"
    );
    assert_eq!(largest_out, 0, "the stack sent no data");
    let linux_mss = ss_number(&linux.ss, "mss").expect("mss in ss");
    assert_eq!(linux_mss as usize, 536 - TS_OPTION, "{}", linux.ss);
}

#[test]
fn the_stacks_mss_of_536_clamps_linuxs_segments_over_tun() {
    stack_mss_clamps_linux(TunKind::Tun, 9);
}

#[test]
fn the_stacks_mss_of_536_clamps_linuxs_segments_over_tap() {
    stack_mss_clamps_linux(TunKind::Tap, 10);
}

/// 3(b): Linux's MSS (advmss 1000 on the route to the stack) below the
/// stack's (1460): the stack sends no segment over 1000 bytes with its
/// options.
fn linux_mss_clamps_the_stack(kind: TunKind, subnet: u8) {
    let Some(mut r) = row(
        "win",
        kind,
        subnet,
        TcpConfig::default(),
        DropPlan::default(),
    ) else {
        return;
    };
    let host = format!("{}/32", r.ours);
    r.ns.ip(&["route", "add", &host, "dev", &r.dev, "advmss", "1000"]);
    let (side, linux) = stack_to_linux(&mut r, 2_000_000, None, Duration::ZERO);
    let (largest_out, largest_in, our_mss, their_mss) = mss_seen(&r);
    eprintln!(
        "{kind:?} Linux advmss 1000: SYN MSS ours {our_mss:?} Linux's {their_mss:?}; largest \
         payload out {largest_out}, in {largest_in}; stack send MSS {}; Linux: {}",
        side.send_mss,
        linux.ss.trim()
    );
    assert_eq!(their_mss, Some(1000));
    assert_eq!(our_mss, Some(1460));
    assert_eq!(side.send_mss, 1000);
    assert!(side.sack_ts.1, "timestamps, so 12 option bytes per segment");
    assert_eq!(largest_out + TS_OPTION, 1000, "full segments, none larger");
    assert_eq!(largest_in, 0, "Linux sent no data");
    // Linux prints its MSSes less the timestamps option.
    assert_eq!(
        ss_number(&linux.ss, "advmss"),
        Some(1000 - TS_OPTION as u64),
        "{}",
        linux.ss
    );
    let rcv_mss = ss_number(&linux.ss, "rcvmss").expect("rcvmss in ss");
    assert_eq!(rcv_mss as usize, 1000 - TS_OPTION, "{}", linux.ss);
}

#[test]
fn linuxs_mss_of_1000_clamps_the_stacks_segments_over_tun() {
    linux_mss_clamps_the_stack(TunKind::Tun, 11);
}

#[test]
fn linuxs_mss_of_1000_clamps_the_stacks_segments_over_tap() {
    linux_mss_clamps_the_stack(TunKind::Tap, 12);
}
