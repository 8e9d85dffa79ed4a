//! What the wire tests share: a StackPlace (or a skip where this host lacks
//! none), and a trial run with tcpdump listening on one of its devices.

#![allow(dead_code)]

pub mod capture;
pub mod stack_place;

use capture::{Capture, Captured};
use record::{StackImpl, TrialParams};
use stackend::StackPlace;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A place for the stack's trials, or None (a skip through testkit)
/// where this host lacks what one needs or has no tcpdump.
pub fn wire_place() -> Option<StackPlace> {
    if !testkit::need_tool("tcpdump") {
        return None;
    }
    stack_place::place()
}

/// Which end's device to listen on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    Client,
    Server,
}

/// Runs `p` with tcpdump on the `on` end's device: the trial's metrics
/// and what the wire carried, from a run on a quiet host (testkit: the
/// wire tests' ratios depend on how fast each end runs, and tcpdump must
/// keep up).
pub fn run_captured(
    place: &mut StackPlace,
    p: &TrialParams,
    on: On,
) -> (BTreeMap<String, f64>, Captured) {
    let what = format!("{:?} captured", p.test);
    let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
        run_captured_once(place, p, on)
    });
    eprintln!("{what}: {}", q.describe());
    q.value
}

/// One run of [`run_captured`].
fn run_captured_once(
    place: &mut StackPlace,
    p: &TrialParams,
    on: On,
) -> (BTreeMap<String, f64>, Captured) {
    let [client, server] = place
        .devices_for(p)
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let device = match on {
        On::Client => client,
        On::Server => server,
    }
    .expect("the end listened on is a tcplab end");
    // An offload device carries super-packets of up to 64 KB; the others
    // MTU-sized packets (with an Ethernet header on TAP).
    let offload = [p.stack, p.server_stack].contains(&StackImpl::TcplabOffload);
    let snaplen = if offload { 65_600 } else { 1_600 };
    let capture = Capture::start(place.namespace(), &device, snaplen);
    let stop = Arc::new(AtomicBool::new(false));
    let outcome = place.run(p, &stop);
    let captured = capture.stop();
    let o = outcome.unwrap_or_else(|e| panic!("{p:?}: {e}"));
    (o.metrics, captured)
}
