//! The setting of the accounted tests against Linux (issue 29's lookup
//! costs): the stack on a TUN in a namespace of its own, Linux's TCP at
//! 10.<net>.<subnet>.1, the stack at .2; its thread at SCHED_FIFO so
//! builds beside the test do not preempt the timed blocks; a report's
//! block read as (entries, ns).

#![allow(dead_code)]

use crate::netns::Netns;
use stack::account::{Block, Report};
use stack::iface::InterfaceConfig;
use stack::phy::tun::{TunKind, TunTap};
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Duration;

/// Whether the host has what the tests need (else they are skipped
/// through testkit).
pub fn can_run() -> bool {
    testkit::need_root("network namespaces, TUN devices and SCHED_FIFO")
        && testkit::need_path("/dev/net/tun", "the TUN driver")
        && testkit::need_tool("ip")
}

/// The stack with `tcp` on a fresh TUN in a fresh namespace
/// `tcplab-<what>-…`: (namespace, stack, Linux's address, ours).
pub fn setting(
    what: &str,
    net: u8,
    subnet: u8,
    tcp: TcpConfig,
) -> Option<(Netns, Stack<TunTap>, Ipv4Addr, Ipv4Addr)> {
    let ns = Netns::new(what)?;
    let linux = Ipv4Addr::new(10, net, subnet, 1);
    let ours = Ipv4Addr::new(10, net, subnet, 2);
    let device = ns.device(TunKind::Tun, &format!("{linux}/24"));
    let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap();
    let iface = InterfaceConfig::new(Medium::Ip, cidr);
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).expect("an ISN secret");
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    Some((ns, Stack::new(device, iface, tcp, isn, clock), linux, ours))
}

/// A send and receive buffer of 1 MB each.
pub fn tcp_config() -> TcpConfig {
    TcpConfig {
        send_buffer: 1 << 20,
        recv_buffer: 1 << 20,
        ..TcpConfig::default()
    }
}

/// The calling thread at SCHED_FIFO 1.
pub fn realtime() {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: param is valid for the call; 0 names the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    assert_eq!(rc, 0, "SCHED_FIFO: {}", std::io::Error::last_os_error());
}

/// Runs the stack for up to 5 ms.
pub fn step(stack: &mut Stack<TunTap>) {
    let deadline = stack.now().after(Duration::from_millis(5));
    stack.run_until(deadline).expect("the stack loop");
}

/// The block's entries and exclusive ns in `report`.
pub fn block(report: &Report, b: Block) -> (f64, f64) {
    report
        .rows
        .iter()
        .find(|r| r.block == b)
        .map_or((0.0, 0.0), |r| (r.count, r.ns))
}

/// Least-squares line through `(x, y)`: (intercept, slope, R²).
pub fn linear_fit(points: &[(f64, f64)]) -> (f64, f64, f64) {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let slope = sxy / sxx;
    let r2 = if syy == 0.0 {
        1.0
    } else {
        sxy * sxy / (sxx * syy)
    };
    (my - slope * mx, slope, r2)
}
