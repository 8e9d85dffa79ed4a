//! Network namespaces for one measured run (`tcplab-perf-<what>-<pid>`),
//! deleted on drop (so on a panic too), threads moved into them, and the
//! packet counters `ip -s` reads from a device in one.

use anyhow::{bail, Context, Result};
use std::process::Command;
use std::thread::JoinHandle;

/// A network namespace that lives as long as the value.
pub struct Netns {
    /// Its name under /var/run/netns.
    pub name: String,
}

impl Netns {
    /// A fresh namespace `tcplab-perf-<what>-<pid>` with `lo` up.
    pub fn new(what: &str) -> Result<Netns> {
        let name = format!("tcplab-perf-{what}-{}", std::process::id());
        run("ip", &["netns", "add", &name]).context("ip netns add (needs root)")?;
        let ns = Netns { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Runs `ip -n <ns> args…`.
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// Runs `f` on a new thread inside the namespace.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> JoinHandle<Result<T>> {
        spawn_in(&self.name, f)
    }

    /// The packets `dev` in the namespace has received and sent.
    pub fn packets(&self, dev: &str) -> Result<LinkPackets> {
        link_packets(&self.name, dev)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}

/// A device's packet counters from Linux's side.
#[derive(Debug, Clone, Copy, Default)]
pub struct LinkPackets {
    /// Packets Linux received on it.
    pub rx: u64,
    /// Packets Linux sent on it.
    pub tx: u64,
    /// Packets Linux meant to send on it but dropped (a TUN's queue full:
    /// the reader too slow).
    pub tx_dropped: u64,
}

impl LinkPackets {
    /// The counts since `before`.
    pub fn since(self, before: LinkPackets) -> LinkPackets {
        LinkPackets {
            rx: self.rx - before.rx,
            tx: self.tx - before.tx,
            tx_dropped: self.tx_dropped - before.tx_dropped,
        }
    }
}

/// The packets `dev` in namespace `ns` has received and sent, as Linux
/// counts them (`ip -s -j link show`).
pub fn link_packets(ns: &str, dev: &str) -> Result<LinkPackets> {
    let out = run("ip", &["-n", ns, "-s", "-j", "link", "show", "dev", dev])?;
    let json: serde_json::Value = serde_json::from_str(&out).context("ip -j output")?;
    let stats = &json[0]["stats64"];
    let count = |dir: &str| stats[dir]["packets"].as_u64().unwrap_or(0);
    Ok(LinkPackets {
        rx: count("rx"),
        tx: count("tx"),
        tx_dropped: stats["tx"]["dropped"].as_u64().unwrap_or(0),
    })
}

/// Whether threads spawned in namespaces run at SCHED_FIFO 1 (`--fifo`):
/// both ends of a transfer then keep their CPUs against other work on
/// the host, so an A/B comparison is not drowned by a busy machine.
pub static FIFO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Puts the calling thread at SCHED_FIFO 1.
fn realtime() -> Result<()> {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: param is valid for the call; 0 names the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(std::io::Error::last_os_error()).context("SCHED_FIFO");
    }
    Ok(())
}

/// Runs `f` on a new thread inside the namespace called `name` (at
/// SCHED_FIFO 1 when [`FIFO`] is set).
pub fn spawn_in<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> JoinHandle<Result<T>> {
    let path = format!("/var/run/netns/{name}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).context("opening the namespace")?;
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
        if FIFO.load(std::sync::atomic::Ordering::Relaxed) {
            realtime()?;
        }
        f()
    })
}

/// Runs a command, failing with its stderr.
pub fn run(cmd: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .with_context(|| format!("running {cmd}"))?;
    if !out.status.success() {
        bail!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The calling thread's user and system CPU seconds and its voluntary
/// (slept) and involuntary (preempted) context switches so far.
pub fn thread_usage() -> [f64; 4] {
    use nix::sys::resource::{getrusage, UsageWho};
    let Ok(u) = getrusage(UsageWho::RUSAGE_THREAD) else {
        return [f64::NAN; 4];
    };
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    [
        secs(u.user_time()),
        secs(u.system_time()),
        u.voluntary_context_switches() as f64,
        u.involuntary_context_switches() as f64,
    ]
}

/// The calling thread's CPU seconds so far (user + system).
pub fn thread_cpu_seconds() -> f64 {
    let [user, system, ..] = thread_usage();
    user + system
}

/// Linux's TCP extended counters (`TcpExt` in `/proc/net/netstat`) in
/// the calling thread's namespace: how Linux's end took our segments
/// (header-predicted or not, coalesced into the backlog, delayed ACKs…).
pub fn tcp_ext_counters() -> std::collections::BTreeMap<String, i64> {
    let text = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap_or_default();
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return Default::default();
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .skip(1)
        .filter_map(|(n, v)| Some((n.to_string(), v.parse().ok()?)))
        .collect()
}

/// The calling thread's read and write system calls so far (`syscr` and
/// `syscw` of `/proc/thread-self/io`; zeros where it cannot be read).
pub fn thread_syscalls() -> [u64; 2] {
    let text = std::fs::read_to_string("/proc/thread-self/io").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    };
    [field("syscr:"), field("syscw:")]
}
