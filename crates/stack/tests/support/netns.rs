//! A network namespace for tests against Linux (`tcplab-<what>-<pid>-<n>`,
//! deleted on drop, so on panic too), with a TUN or TAP device in it and
//! threads and commands run inside it. Shared by every test of the stack
//! against Linux.

#![allow(dead_code)]

use stack::phy::tun::{TunConfig, TunKind, TunTap};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;

/// A network namespace that lives as long as the value.
pub struct Netns {
    /// Its name under /var/run/netns.
    pub name: String,
}

impl Netns {
    /// A fresh namespace `tcplab-<what>-<pid>-<n>`, or `None` when this
    /// host lacks what one needs (root, the TUN driver, iproute2's `ip`):
    /// the test is then skipped through testkit, and a failure under
    /// `TCPLAB_REQUIRE_ALL=1`. With all of them here, a namespace that
    /// cannot be made fails the test with `ip`'s message.
    pub fn new(what: &str) -> Option<Netns> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        if !(testkit::need_root("network namespaces and TUN devices")
            && testkit::need_path("/dev/net/tun", "the TUN driver")
            && testkit::need_tool("ip"))
        {
            return None;
        }
        // A namespace carries a test's traffic: the test is serialized with
        // every timed test of the workspace until it ends.
        testkit::hold_for_this_test();
        let name = format!(
            "tcplab-{what}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        );
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("running ip netns add");
        assert!(
            out.status.success(),
            "ip netns add {name}: {} ({})",
            String::from_utf8_lossy(&out.stderr).trim(),
            out.status
        );
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"]);
        Some(ns)
    }

    /// Runs `ip -n <ns> args…`, panicking on failure.
    pub fn ip(&self, args: &[&str]) {
        let out = Command::new("ip")
            .args(["-n", &self.name])
            .args(args)
            .output()
            .expect("running ip");
        assert!(
            out.status.success(),
            "ip {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `f` on a thread inside the namespace.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
        let path = format!("/var/run/netns/{}", self.name);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).expect("opening the namespace");
            nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
            f()
        })
    }

    /// A device of `kind` in the namespace, Linux's side `linux_cidr`, up.
    pub fn device(&self, kind: TunKind, linux_cidr: &str) -> TunTap {
        let dev = self
            .run(move || TunTap::open(&TunConfig::new("", kind)))
            .join()
            .unwrap()
            .expect("opening the device");
        self.ip(&["addr", "add", linux_cidr, "dev", dev.name()]);
        self.ip(&["link", "set", dev.name(), "up"]);
        dev
    }

    /// Runs a command inside the namespace: (success, stdout).
    pub fn exec(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .output()
            .expect("running ip netns exec");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}
