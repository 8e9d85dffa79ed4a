//! Changes a trial makes to its place, and their undoing: extra routes in
//! the sender's routing table (Huang & Chen's routing-table cost),
//! checksum offload switched off on the veth ends (their checksum cost),
//! any offload switched off at both ends (`--offload`: segmentation
//! and receive offloads hide per-packet costs), and the `quickack` route
//! metric on the receiver's routes (`--quickack`: an ACK for every segment
//! received, their ACK cost). Each end's offload state, and the routing
//! trie's depth, can be read for the trial's record. With pinned
//! endpoints, each end's receive processing is steered (RPS) to its
//! endpoint's CPU.
//! Only inside tcplab's own namespaces, never the host's; undone when the
//! guard drops (after the trial, on error and on Ctrl-C), and gone with
//! the namespaces in any case (`tcplab lab clean`).

use crate::cmd;
use crate::error::LabError;
use crate::netns;
use crate::offload::{self, Offload};
use crate::rps;
use serde::Serialize;
use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// The routing protocol number that marks tcplab's routes (252: unassigned
/// in iproute2's rt_protos, so no daemon claims them).
pub const ROUTE_PROTO: &str = "252";

/// The most routes a trial can install: the RFC 2544 benchmarking block
/// 198.18.0.0/15, one /32 per address.
pub const MAX_ROUTES: u32 = 1 << 17;

/// The first benchmarking address.
const BENCH_NET: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 0);

/// One end of a place: its namespace and its veth device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The namespace (`tcplab-…`).
    pub ns: String,
    /// The device facing the other end.
    pub dev: String,
}

/// What a trial asks of its place.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wanted {
    /// Extra routes in the sender's table (0: none).
    pub routes: u32,
    /// Turn checksum offload off on both ends.
    pub checksum_off: bool,
    /// Offloads to turn off at both ends, by their place in [`Offload::ALL`].
    pub offloads_off: [bool; 5],
    /// Set the `quickack 1` metric on every IPv4 route in the receiver's
    /// main table, so the kernel acknowledges every segment it receives.
    pub quickack_route: bool,
    /// CPUs to steer each end's receive processing to (RPS): the sender's
    /// end (its ACKs) and the receiver's end (its data); None leaves that
    /// end's steering as it is.
    pub steer: [Option<u32>; 2],
}

/// The changes in force; undone on drop.
#[derive(Debug, Default)]
pub struct TrialChanges {
    routes_in: Option<String>,
    /// (endpoint, tx checksum was on, rx checksum was on).
    offloads: Vec<(Endpoint, bool, bool)>,
    /// (endpoint, offloads of [`Offload::ALL`] this trial switched off).
    switched_off: Vec<(Endpoint, [bool; 5])>,
    /// (receiver's namespace, its routes as `ip route show` printed them
    /// before `quickack 1` was added).
    quickack_in: Option<(String, Vec<String>)>,
    /// (endpoint, its `rps_cpus` mask before the trial).
    steered: Vec<(Endpoint, String)>,
    /// Routes present in the sender's table once installed.
    pub routes_installed: u32,
    /// Routes in the receiver's table that got the `quickack` metric.
    pub quickack_routes: u32,
    /// Seconds the installation took.
    pub install_s: f64,
}

impl TrialChanges {
    /// Applies `w`: routes in `sender`'s namespace, checksum offload off on
    /// `sender` (transmit) and `receiver` (receive), and the offloads
    /// `w.offloads_off` names off at both ends (only those that were on, so
    /// undoing never turns on what was off). On error, whatever was applied
    /// is undone before returning.
    pub fn apply(
        w: Wanted,
        sender: &Endpoint,
        receiver: &Endpoint,
    ) -> Result<TrialChanges, LabError> {
        let mut c = TrialChanges::default();
        let t0 = std::time::Instant::now();
        if w.routes > 0 {
            if w.routes > MAX_ROUTES {
                return Err(LabError::Spec(format!(
                    "--routes {} is more than the {MAX_ROUTES} addresses of 198.18.0.0/15",
                    w.routes
                )));
            }
            c.routes_in = Some(sender.ns.clone());
            install_routes(&sender.ns, &sender.dev, w.routes)?;
            c.routes_installed = count_routes(&sender.ns)?;
        }
        if w.checksum_off {
            for (e, tx) in [(sender, true), (receiver, false)] {
                let (t, r) = read_checksums(e)?;
                c.offloads.push((e.clone(), t, r));
                set_checksum(
                    e,
                    if tx {
                        Offload::TxChecksum
                    } else {
                        Offload::RxChecksum
                    },
                    false,
                )?;
            }
        }
        if w.quickack_route {
            let ns = receiver.ns.clone();
            c.quickack_in = Some((ns.clone(), Vec::new()));
            for line in main_routes(&ns)? {
                if line.split_whitespace().any(|w| w == "quickack") {
                    continue;
                }
                change_route(&ns, &line, true)?;
                if let Some((_, done)) = c.quickack_in.as_mut() {
                    done.push(line);
                }
            }
            c.quickack_routes = c.quickack_in.as_ref().map_or(0, |x| x.1.len() as u32);
        }
        if w.offloads_off.contains(&true) {
            // On an error the guard's drop switches back what the ends
            // before it switched.
            for e in [sender, receiver] {
                let off = switch_off(e, w.offloads_off)?;
                c.switched_off.push((e.clone(), off));
            }
        }
        for (e, cpu) in [(sender, w.steer[0]), (receiver, w.steer[1])] {
            if let Some(cpu) = cpu {
                let before = rps::read(&e.ns, &e.dev)?;
                rps::write(&e.ns, &e.dev, &rps::mask_of(cpu))?;
                c.steered.push((e.clone(), before));
            }
        }
        c.install_s = t0.elapsed().as_secs_f64();
        Ok(c)
    }

    /// Undoes the changes now, reporting the first failure.
    pub fn undo(mut self) -> Result<(), LabError> {
        self.undo_all()
    }

    fn undo_all(&mut self) -> Result<(), LabError> {
        let mut first = Ok(());
        if let Some(ns) = self.routes_in.take() {
            if let Err(e) = flush_routes(&ns) {
                first = first.and(Err(e));
            }
        }
        if let Some((ns, lines)) = self.quickack_in.take() {
            for line in lines {
                if let Err(e) = change_route(&ns, &line, false) {
                    first = first.and(Err(e));
                }
            }
        }
        for (e, mask) in self.steered.drain(..).rev() {
            if let Err(err) = rps::write(&e.ns, &e.dev, &mask) {
                first = first.and(Err(err));
            }
        }
        for (e, off) in self.switched_off.drain(..).rev() {
            if let Err(err) = switch_back(&e, off) {
                first = first.and(Err(err));
            }
        }
        for (e, tx, rx) in self.offloads.drain(..).rev() {
            for (o, on) in [(Offload::TxChecksum, tx), (Offload::RxChecksum, rx)] {
                if let Err(err) = set_checksum(&e, o, on) {
                    first = first.and(Err(err));
                }
            }
        }
        first
    }
}

impl Drop for TrialChanges {
    fn drop(&mut self) {
        let _ = self.undo_all();
    }
}

/// The i-th benchmarking address.
fn bench_addr(i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(BENCH_NET) + i)
}

/// Installs `n` /32 routes to 198.18.0.0 … via `dev` in namespace `ns`, in
/// one `ip -batch` (a few seconds for 100,000).
pub fn install_routes(ns: &str, dev: &str, n: u32) -> Result<(), LabError> {
    let mut script = String::with_capacity(n as usize * 48);
    for i in 0..n {
        script.push_str(&format!(
            "route add {}/32 dev {dev} proto {ROUTE_PROTO}\n",
            bench_addr(i)
        ));
    }
    let line = format!("ip -n {ns} -batch -");
    let mut child = Command::new("ip")
        .args(["-n", ns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| LabError::io(format!("running `{line}`"), e))?;
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(script.as_bytes())
        .map_err(|e| LabError::io(format!("feeding `{line}`"), e))?;
    let out = child
        .wait_with_output()
        .map_err(|e| LabError::io(format!("running `{line}`"), e))?;
    if !out.status.success() {
        let _ = flush_routes(ns);
        return Err(LabError::Command {
            command: line,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// The number of tcplab routes in namespace `ns`.
pub fn count_routes(ns: &str) -> Result<u32, LabError> {
    Ok(
        cmd::ip(Some(ns), &["-4", "route", "show", "proto", ROUTE_PROTO])?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count() as u32,
    )
}

/// Removes every tcplab route from namespace `ns`.
pub fn flush_routes(ns: &str) -> Result<(), LabError> {
    cmd::ip(Some(ns), &["-4", "route", "flush", "proto", ROUTE_PROTO])?;
    Ok(())
}

/// The IPv4 routes of namespace `ns`'s main table, one `ip route show`
/// line each.
fn main_routes(ns: &str) -> Result<Vec<String>, LabError> {
    Ok(
        cmd::ip(Some(ns), &["-4", "route", "show", "table", "main"])?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

/// Replaces the route `line` (as `ip route show` printed it) in `ns` by
/// itself with `quickack 1` added, or by itself as printed (which drops
/// the metric again).
fn change_route(ns: &str, line: &str, quickack: bool) -> Result<(), LabError> {
    let mut args = vec!["-4", "route", "change"];
    args.extend(line.split_whitespace());
    if quickack {
        args.extend(["quickack", "1"]);
    }
    cmd::ip(Some(ns), &args).map(|_| ())
}

/// The shape of a namespace's main routing table as the kernel stores it:
/// an LC-trie (`/proc/net/fib_triestat`, its "Main:" part).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FibTrieStats {
    /// Mean depth of the trie's leaves.
    pub avg_depth: f64,
    /// Depth of its deepest leaf.
    pub max_depth: u32,
    /// Leaves (distinct prefixes' keys).
    pub leaves: u64,
}

/// The main table's trie in namespace `ns`, read from the namespace's own
/// /proc/thread-self/net/fib_triestat.
pub fn fib_trie_stats(ns: &str) -> Result<FibTrieStats, LabError> {
    let text = netns::run_in_named(ns, || {
        std::fs::read_to_string("/proc/thread-self/net/fib_triestat")
            .map_err(|e| LabError::io("reading /proc/thread-self/net/fib_triestat", e))
    })??;
    parse_fib_triestat(&text)
        .ok_or_else(|| LabError::Spec("no \"Main:\" table with depths in fib_triestat".to_string()))
}

/// The "Main:" part of fib_triestat's text.
pub fn parse_fib_triestat(text: &str) -> Option<FibTrieStats> {
    let main = text.split("Main:").nth(1)?;
    let main = main.split("Local:").next()?;
    let field = |name: &str| {
        main.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(|v| v.trim().to_string())
    };
    Some(FibTrieStats {
        avg_depth: field("Aver depth:")?.parse().ok()?,
        max_depth: field("Max depth:")?.parse().ok()?,
        leaves: field("Leaves:")?.parse().ok()?,
    })
}

fn in_endpoint<T: Send + 'static>(
    e: &Endpoint,
    f: impl FnOnce(&str) -> Result<T, LabError> + Send + 'static,
) -> Result<T, LabError> {
    let dev = e.dev.clone();
    netns::run_in_named(&e.ns, move || f(&dev))?
}

/// Whether transmit and receive checksum offload are on at `e`.
pub fn read_checksums(e: &Endpoint) -> Result<(bool, bool), LabError> {
    in_endpoint(e, |dev| {
        Ok((
            offload::get(dev, Offload::TxChecksum)?,
            offload::get(dev, Offload::RxChecksum)?,
        ))
    })
}

fn set_checksum(e: &Endpoint, o: Offload, on: bool) -> Result<(), LabError> {
    in_endpoint(e, move |dev| offload::set(dev, o, on))
}

/// One end's offloads, as a trial records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct OffloadState {
    /// TCP segmentation offload.
    pub tso: bool,
    /// Generic segmentation offload.
    pub gso: bool,
    /// Generic receive offload.
    pub gro: bool,
    /// Transmit checksum offload.
    pub tx_checksum: bool,
    /// Receive checksum offload.
    pub rx_checksum: bool,
}

/// Every offload's state at `e` now.
pub fn read_offloads(e: &Endpoint) -> Result<OffloadState, LabError> {
    let [tso, gso, gro, tx_checksum, rx_checksum] = in_endpoint(e, offload::get_all)?;
    Ok(OffloadState {
        tso,
        gso,
        gro,
        tx_checksum,
        rx_checksum,
    })
}

/// Switches off at `e` the offloads `wanted` names that are on; returns
/// which it switched (on an error, those switched so far are switched back).
fn switch_off(e: &Endpoint, wanted: [bool; 5]) -> Result<[bool; 5], LabError> {
    in_endpoint(e, move |dev| {
        let was_on = offload::get_all(dev)?;
        let mut switched = [false; 5];
        for (i, o) in Offload::ALL.into_iter().enumerate() {
            if wanted[i] && was_on[i] {
                if let Err(err) = offload::set(dev, o, false) {
                    let _ = restore(dev, switched);
                    return Err(err);
                }
                switched[i] = true;
            }
        }
        Ok(switched)
    })
}

/// Switches back on at `e` the offloads `switched` names.
fn switch_back(e: &Endpoint, switched: [bool; 5]) -> Result<(), LabError> {
    in_endpoint(e, move |dev| restore(dev, switched))
}

/// Switches the named offloads back on, checksums first (reverse order).
fn restore(dev: &str, switched: [bool; 5]) -> Result<(), LabError> {
    let mut first = Ok(());
    for (i, o) in Offload::ALL.into_iter().enumerate().rev() {
        if switched[i] {
            first = first.and(offload::set(dev, o, true));
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::parse_fib_triestat;

    const TRIESTAT: &str = "Basic info: size of leaf: 48 bytes, size of tnode: 40 bytes.
Main:
\tAver depth:     2.42
\tMax depth:      3
\tLeaves:         7
\tPrefixes:       7
\tInternal nodes: 4
\t  1: 3  17: 1
\tPointers: 131082
Null ptrs: 131072
Total size: 1  kB
Local:
\tAver depth:     3.00
\tMax depth:      4
\tLeaves:         5
";

    #[test]
    fn the_main_tables_depth_is_read_not_the_local_tables() {
        let t = parse_fib_triestat(TRIESTAT).unwrap();
        assert_eq!((t.avg_depth, t.max_depth, t.leaves), (2.42, 3, 7));
        let local_only = TRIESTAT.replace("Main:", "Other:");
        assert!(parse_fib_triestat(&local_only).is_none());
    }
}
