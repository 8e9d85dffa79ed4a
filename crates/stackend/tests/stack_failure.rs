//! Issue 18: "a trial that breaks the stack fails with the stack's reason,
//! and the sweep goes on". A tcplab client streams to Linux; a moment in,
//! its TUN device is deleted under it (as a crashed or removed device
//! would be), so the stack's device calls fail. The trial must fail with
//! the stack's own reason, and the next trial on the same place (a fresh
//! stack on a fresh device) must succeed. Needs root and TUN.

use record::{StackImpl, TestKind, TrialParams};
#[path = "support/stack_place.rs"]
mod stack_place;

use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn stream(duration_s: f64) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = StackImpl::Tcplab;
    p.server_stack = StackImpl::Kernel;
    p.duration_s = Some(duration_s);
    p
}

/// The names of the TUN devices in namespace `ns` that serve a client
/// end (the place names them `…-c`).
fn client_devices(ns: &str) -> Vec<String> {
    let out = Command::new("ip")
        .args(["-n", ns, "-o", "link", "show"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .filter(|name| name.ends_with("-c"))
        .collect()
}

#[test]
fn a_trial_whose_device_is_deleted_fails_with_the_stacks_reason_and_the_next_one_runs() {
    let Some(mut place) = stack_place::place() else {
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let ns = place.namespace().to_string();
    // The breaker waits for the trial's client device, lets data flow,
    // then deletes the device from under the running stack.
    let breaker = {
        let ns = ns.clone();
        std::thread::spawn(move || {
            for _ in 0..200 {
                let devices = client_devices(&ns);
                if !devices.is_empty() {
                    std::thread::sleep(Duration::from_millis(500));
                    for d in &devices {
                        let s = Command::new("ip")
                            .args(["-n", &ns, "link", "del", d])
                            .status()
                            .expect("ip runs");
                        assert!(s.success(), "deleting {d}");
                    }
                    return devices;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("no client device appeared");
        })
    };
    let broken = place.run(&stream(3.0), &stop);
    let deleted = breaker.join().expect("the breaker ran");
    assert!(!deleted.is_empty());
    let err = match broken {
        Ok(o) => panic!("a trial whose device vanished succeeded: {:?}", o.metrics),
        Err(e) => e.to_string(),
    };
    eprintln!("the broken trial: {err}");
    assert!(
        err.contains("the tcplab stack failed"),
        "the failure carries the stack's reason: {err}"
    );

    // The sweep goes on: the next trial gets a fresh stack and device.
    let o = place
        .run(&stream(0.5), &stop)
        .unwrap_or_else(|e| panic!("the trial after the broken one: {e}"));
    assert!(o.metrics["bytes"] > 0.0, "{:?}", o.metrics);
    assert!(o.metrics["throughput_bps"] > 1e6, "{:?}", o.metrics);
}
