//! `stack-peers`: issue 18's performance peers, benchmark-only. Each
//! subcommand runs ONE measured transfer in namespaces of its own
//! (`tcplab-perf-…`, deleted on exit) and prints one JSON line:
//! - `tun-limit`: the TUN's per-packet write limit and read cost;
//! - `stream`: bulk TCP between a user-space stack (tcplab's or smoltcp's)
//!   on a TUN and a Linux socket, either way, or Linux to Linux over veth;
//! - `rr`: 1-byte request/response latency against the same ends.
//!
//! `scripts/bench-stack` runs them alternately and prints the ratios.

mod bracket_cost;
mod linux_end;
mod netns;
mod setup;
mod smoltcp_end;
mod tcplab_end;
mod tun_limit;
mod veth;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use netns::Netns;
use serde_json::json;
use setup::{Cc, Setup, PORT};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::mpsc;

#[derive(Parser)]
#[command(about = "One measured transfer of issue 18's stack benchmark, as one JSON line")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The TUN's write limit (1500-byte packets from one thread) and read
    /// rate (packets Linux queued, read back to back).
    TunLimit {
        /// Seconds of writing.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
    },
    /// Bulk TCP: a user-space stack on a TUN and Linux, or Linux over veth.
    Stream {
        #[arg(long = "impl", value_enum)]
        implementation: Impl,
        /// Which way the data flows (ignored for kernel-veth).
        #[arg(long, value_enum, default_value_t = Dir::ToLinux)]
        dir: Dir,
        /// Bytes to move.
        #[arg(long, default_value_t = 100_000_000)]
        bytes: u64,
        /// Send and receive buffers, both ends.
        #[arg(long, default_value_t = 1 << 20)]
        buffer: usize,
        /// tcplab on a TUN with virtio-net-header offloads.
        #[arg(long)]
        offload: bool,
        /// tcplab: ACK each second segment as it arrives instead of once
        /// per batch read (the stack's switch, for before/after figures).
        #[arg(long)]
        ack_each: bool,
        /// tcplab: frames held within a round and written back to back
        /// (the interface's `tx_batch`; 1: each written as it is built).
        #[arg(long, default_value_t = stack::iface::interface::DEFAULT_TX_BATCH)]
        tx_batch: usize,
        /// tcplab: frames with a payload read per round at most (the
        /// interface's `poll_budget`; a receiver answers each round with
        /// one ACK).
        #[arg(long, default_value_t = stack::iface::interface::DEFAULT_POLL_BUDGET)]
        poll_budget: usize,
        /// tcplab: block-cost accounting on the stack's thread: `off`,
        /// `on` (every bracket timed) or `sample:N` (one round, a poll
        /// and the work after it, in N).
        #[arg(long, default_value = "off", value_parser = parse_account)]
        account: Account,
        /// Both ends' threads at SCHED_FIFO 1 (root), against a busy host.
        #[arg(long)]
        fifo: bool,
        /// The user-space sender's congestion control, the same in tcplab
        /// and smoltcp (ignored for kernel-veth).
        #[arg(long, value_enum, default_value_t = Cc::Reno)]
        cc: Cc,
    },
    /// The accountant's bracket in a tight loop: ns per bracket with
    /// accounting off, on, and sampled one in 8 (release build).
    BracketCost {
        /// Brackets per measurement.
        #[arg(long, default_value_t = 20_000_000)]
        count: u64,
    },
    /// 1-byte request/response, Linux the client; p50/p90/p99 in µs.
    Rr {
        #[arg(long = "impl", value_enum)]
        implementation: Impl,
        /// Round trips measured (after 200 unmeasured).
        #[arg(long, default_value_t = 10_000)]
        count: u64,
        /// Send and receive buffers, both ends.
        #[arg(long, default_value_t = 1 << 20)]
        buffer: usize,
        /// tcplab on a TUN with virtio-net-header offloads.
        #[arg(long)]
        offload: bool,
    },
}

/// Which end faces Linux.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Impl {
    /// tcplab's `Stack` on a TUN.
    Tcplab,
    /// smoltcp 0.14 on a TUN.
    Smoltcp,
    /// Linux on both ends of a veth pair.
    KernelVeth,
}

/// Which way a stream flows.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum Dir {
    /// The user-space stack sends, Linux receives.
    ToLinux,
    /// Linux sends, the user-space stack receives.
    FromLinux,
}

fn name(i: Impl) -> &'static str {
    match i {
        Impl::Tcplab => "tcplab",
        Impl::Smoltcp => "smoltcp",
        Impl::KernelVeth => "kernel-veth",
    }
}

/// The offload switch: only tcplab has one. Asked of another end, it is
/// bad input: one line and exit status 2, as for `--account`.
fn check_offload(implementation: Impl, offload: bool) {
    if offload && implementation != Impl::Tcplab {
        eprintln!("stack-peers: --offload is for --impl tcplab only");
        std::process::exit(2);
    }
}

/// `--account`: off, or one round (a poll and the work after it) in N timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Account(Option<u32>);

fn parse_account(s: &str) -> Result<Account, String> {
    match s {
        "off" => Ok(Account(None)),
        "on" => Ok(Account(Some(1))),
        _ => match s.strip_prefix("sample:").map(str::parse::<u32>) {
            Some(Ok(n)) if n > 0 => Ok(Account(Some(n))),
            _ => Err(format!("{s:?}: want off, on or sample:N (N > 0)")),
        },
    }
}

fn user_setup(ns: &Netns, buffer: usize) -> Setup {
    Setup {
        ack_per_batch: true,
        tx_batch: stack::iface::interface::DEFAULT_TX_BATCH,
        poll_budget: stack::iface::interface::DEFAULT_POLL_BUDGET,
        offload: false,
        account: None,
        cc: Cc::Reno,
        ns: ns.name.clone(),
        linux: Ipv4Addr::new(10, 83, 0, 1),
        ours: Ipv4Addr::new(10, 83, 0, 2),
        buffer,
    }
}

fn join<T>(h: std::thread::JoinHandle<Result<T>>, what: &str) -> Result<T> {
    h.join()
        .map_err(|_| anyhow::anyhow!("{what} panicked"))?
        .with_context(|| what.to_string())
}

fn gbit(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 * 8.0 / seconds / 1e9
}

/// How the user-space end of a stream runs (ignored for kernel-veth).
struct EndOptions {
    ack_each: bool,
    tx_batch: usize,
    poll_budget: usize,
    offload: bool,
    account: Account,
    cc: Cc,
}

fn stream(
    implementation: Impl,
    dir: Dir,
    bytes: u64,
    buffer: usize,
    end: EndOptions,
) -> Result<serde_json::Value> {
    if implementation == Impl::KernelVeth {
        return stream_veth(bytes, buffer);
    }
    let ns = Netns::new("stream")?;
    let mut setup = user_setup(&ns, buffer);
    setup.ack_per_batch = !end.ack_each;
    setup.tx_batch = end.tx_batch;
    setup.poll_budget = end.poll_budget;
    setup.offload = end.offload;
    setup.account = end.account.0;
    setup.cc = end.cc;
    let (timed, linux_bytes, linux_seconds) = match dir {
        Dir::ToLinux => {
            let (tx, rx) = mpsc::channel();
            // Any address: the TUN (and Linux's address on it) comes
            // with the user-space end.
            let at = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT);
            let linux = ns.spawn(move || {
                let l = linux_end::listen(at, buffer)?;
                tx.send(()).ok();
                let (s, _) = l.accept()?;
                linux_end::receive_all(s)
            });
            rx.recv().context("Linux listens")?;
            let s = setup.clone();
            let user = ns.spawn(move || match implementation {
                Impl::Tcplab => tcplab_end::send(&s, bytes),
                _ => smoltcp_end::send(&s, bytes),
            });
            let timed = join(user, "the user-space end")?;
            let (got, secs) = join(linux, "Linux's end")?;
            (timed, got, secs)
        }
        Dir::FromLinux => {
            let (tx, rx) = mpsc::channel();
            let s = setup.clone();
            let user = ns.spawn(move || match implementation {
                Impl::Tcplab => tcplab_end::receive(&s, tx),
                _ => smoltcp_end::receive(&s, tx),
            });
            rx.recv().context("the user-space end listens")?;
            let to = SocketAddrV4::new(setup.ours, PORT);
            let linux =
                ns.spawn(move || linux_end::send_all(linux_end::connect(to, buffer)?, bytes));
            let linux_seconds = join(linux, "Linux's end")?;
            let (got, timed) = join(user, "the user-space end")?;
            (timed, got, linux_seconds)
        }
    };
    if linux_bytes != bytes {
        bail!("{linux_bytes} bytes arrived of {bytes}");
    }
    let pps = |n: u64| n as f64 / timed.seconds;
    Ok(json!({
        "test": "stream",
        "impl": name(implementation),
        "dir": match dir { Dir::ToLinux => "to-linux", Dir::FromLinux => "from-linux" },
        "bytes": bytes,
        "buffer": buffer,
        "mss": setup::MSS,
        "ack_per_batch": setup.ack_per_batch,
        "tx_batch": setup.tx_batch,
        "poll_budget": setup.poll_budget,
        "cc": setup.cc.name(),
        "offload": setup.offload,
        "seconds": timed.seconds,
        "gbit_s": gbit(bytes, timed.seconds),
        "pps_to_linux": pps(timed.packets.rx),
        "pps_from_linux": pps(timed.packets.tx),
        "tun_drops": timed.packets.tx_dropped,
        "cpu_seconds": timed.cpu_seconds,
        "cpu_share": timed.cpu_seconds / timed.seconds,
        "user_seconds": timed.usage[0],
        "system_seconds": timed.usage[1],
        "voluntary_switches": timed.usage[2],
        "involuntary_switches": timed.usage[3],
        "read_syscalls": timed.syscalls[0],
        "write_syscalls": timed.syscalls[1],
        "linux_seconds": linux_seconds,
        "linux_thread": linux_thread_usage(),
        "linux_tcp_ext": linux_end::LAST_TCP_EXT.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        "account": timed.account,
    }))
}

fn stream_veth(bytes: u64, buffer: usize) -> Result<serde_json::Value> {
    let pair = veth::VethPair::new()?;
    let at = SocketAddrV4::new(pair.server, PORT);
    let (tx, rx) = mpsc::channel();
    let before = pair.packets()?;
    let server = pair.a.spawn(move || {
        let l = linux_end::listen(at, buffer)?;
        tx.send(()).ok();
        let (s, _) = l.accept()?;
        let cpu = netns::thread_cpu_seconds();
        let (got, secs) = linux_end::receive_all(s)?;
        Ok((got, secs, netns::thread_cpu_seconds() - cpu))
    });
    rx.recv().context("the receiver listens")?;
    let client = pair.b.spawn(move || {
        let cpu = netns::thread_cpu_seconds();
        let secs = linux_end::send_all(linux_end::connect(at, buffer)?, bytes)?;
        Ok((secs, netns::thread_cpu_seconds() - cpu))
    });
    let (_, sender_cpu) = join(client, "the sender")?;
    let (got, seconds, receiver_cpu) = join(server, "the receiver")?;
    if got != bytes {
        bail!("{got} bytes arrived of {bytes}");
    }
    let packets = pair.packets()?.since(before);
    Ok(json!({
        "test": "stream",
        "impl": "kernel-veth",
        "dir": "veth",
        "bytes": bytes,
        "buffer": buffer,
        "seconds": seconds,
        "gbit_s": gbit(bytes, seconds),
        "pps_in": packets.rx as f64 / seconds,
        "pps_out": packets.tx as f64 / seconds,
        "cpu_seconds": receiver_cpu,
        "sender_cpu_seconds": sender_cpu,
    }))
}

fn rr(implementation: Impl, count: u64, buffer: usize, offload: bool) -> Result<serde_json::Value> {
    const WARMUP: u64 = 200;
    let (hist, server_cpu) = if implementation == Impl::KernelVeth {
        let pair = veth::VethPair::new()?;
        let at = SocketAddrV4::new(pair.server, PORT);
        let (tx, rx) = mpsc::channel();
        let server = pair.a.spawn(move || {
            let l = linux_end::listen(at, buffer)?;
            tx.send(()).ok();
            let (s, _) = l.accept()?;
            let cpu = netns::thread_cpu_seconds();
            linux_end::echo(s)?;
            Ok(netns::thread_cpu_seconds() - cpu)
        });
        rx.recv().context("the echo server listens")?;
        let client = pair
            .b
            .spawn(move || linux_end::rr_client(linux_end::connect(at, buffer)?, WARMUP, count));
        let hist = join(client, "the client")?;
        (hist, join(server, "the echo server")?)
    } else {
        let ns = Netns::new("rr")?;
        let mut setup = user_setup(&ns, buffer);
        setup.offload = offload;
        let (tx, rx) = mpsc::channel();
        let s = setup.clone();
        let server = ns.spawn(move || match implementation {
            Impl::Tcplab => tcplab_end::echo(&s, tx),
            _ => smoltcp_end::echo(&s, tx),
        });
        rx.recv().context("the echo end listens")?;
        let to = SocketAddrV4::new(setup.ours, PORT);
        let client =
            ns.spawn(move || linux_end::rr_client(linux_end::connect(to, buffer)?, WARMUP, count));
        let hist = join(client, "the client")?;
        (hist, join(server, "the echo end")?.cpu_seconds)
    };
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    Ok(json!({
        "test": "rr",
        "impl": name(implementation),
        "count": count,
        "offload": offload,
        "p50_us": us(0.50),
        "p90_us": us(0.90),
        "p99_us": us(0.99),
        "mean_us": hist.mean() / 1000.0,
        "server_cpu_seconds": server_cpu,
    }))
}

fn tun_limit(seconds: f64) -> Result<serde_json::Value> {
    let ns = Netns::new("tun")?;
    let setup = user_setup(&ns, 0);
    let s = setup.clone();
    let (write, read) = join(
        ns.spawn(move || {
            let mut dev = tun_limit::open(&s)?;
            let w = tun_limit::write_limit(&mut dev, &s, seconds)?;
            let r = tun_limit::read_cost(&mut dev, &s)?;
            Ok((w, r))
        }),
        "the TUN thread",
    )?;
    let wpps = write.packets as f64 / write.timed.seconds;
    let rpps = read.packets as f64 / read.timed.seconds;
    let bits = (tun_limit::PACKET * 8) as f64 / 1e9;
    Ok(json!({
        "test": "tun-limit",
        "packet_bytes": tun_limit::PACKET,
        "write_pps": wpps,
        "write_gbit_s": wpps * bits,
        "write_refused": write.refused,
        "write_cpu_us_per_packet": write.timed.cpu_seconds / write.packets.max(1) as f64 * 1e6,
        "linux_received": write.timed.packets.rx,
        "read_packets": read.packets,
        "read_pps": rpps,
        "read_gbit_s": rpps * bits,
        "read_cpu_us_per_packet": read.timed.cpu_seconds / read.packets.max(1) as f64 * 1e6,
        "read_cpu_share": read.timed.cpu_seconds / read.timed.seconds,
    }))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let line = match cli.command {
        Command::TunLimit { seconds } => tun_limit(seconds)?,
        Command::BracketCost { count } => bracket_cost::measure(count),
        Command::Stream {
            implementation,
            dir,
            bytes,
            buffer,
            offload,
            ack_each,
            tx_batch,
            poll_budget,
            account,
            fifo,
            cc,
        } => {
            netns::FIFO.store(fifo, std::sync::atomic::Ordering::Relaxed);
            check_offload(implementation, offload);
            if account.0.is_some() && implementation != Impl::Tcplab {
                eprintln!("stack-peers: --account is for --impl tcplab only");
                std::process::exit(2);
            }
            stream(
                implementation,
                dir,
                bytes,
                buffer,
                EndOptions {
                    ack_each,
                    tx_batch,
                    poll_budget,
                    offload,
                    account,
                    cc,
                },
            )?
        }
        Command::Rr {
            implementation,
            count,
            buffer,
            offload,
        } => {
            check_offload(implementation, offload);
            rr(implementation, count, buffer, offload)?
        }
    };
    println!("{line}");
    Ok(())
}

/// The Linux end's thread over the last transfer (its user and system
/// seconds, and how often it slept and was woken), as JSON.
fn linux_thread_usage() -> serde_json::Value {
    match *linux_end::LAST_USAGE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
    {
        Some([user, system, voluntary, involuntary]) => json!({
            "user_seconds": user,
            "system_seconds": system,
            "voluntary_switches": voluntary,
            "involuntary_switches": involuntary,
        }),
        None => serde_json::Value::Null,
    }
}
