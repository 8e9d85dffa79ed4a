//! Linux's end of each transfer: ordinary sockets with the same buffer
//! sizes as the user-space end (`SO_SNDBUF`/`SO_RCVBUF` set before the
//! handshake, so the window scale matches), run on a thread inside the
//! namespace.

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A socket with both buffers at `buffer` bytes.
fn tcp_socket(buffer: usize) -> Result<Socket> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    s.set_send_buffer_size(buffer)?;
    s.set_recv_buffer_size(buffer)?;
    Ok(s)
}

/// Listens on `at` with both buffers at `buffer` bytes (accepted sockets
/// inherit them).
pub fn listen(at: SocketAddrV4, buffer: usize) -> Result<TcpListener> {
    let s = tcp_socket(buffer)?;
    s.set_reuse_address(true)?;
    s.bind(&SocketAddr::from(at).into())
        .with_context(|| format!("bind {at}"))?;
    s.listen(8)?;
    Ok(s.into())
}

/// Connects to `to` with both buffers at `buffer` bytes, retrying for a
/// second while the peer comes up.
pub fn connect(to: SocketAddrV4, buffer: usize) -> Result<TcpStream> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let s = tcp_socket(buffer)?;
        match s.connect_timeout(&SocketAddr::from(to).into(), Duration::from_secs(2)) {
            Ok(()) => return Ok(s.into()),
            Err(e) if Instant::now() > until => return Err(e).context("connect"),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The last transfer's Linux thread: user seconds, system seconds,
/// voluntary (slept, so woken again) and involuntary context switches.
pub static LAST_USAGE: std::sync::Mutex<Option<[f64; 4]>> = std::sync::Mutex::new(None);

/// The last transfer's changes in Linux's `TcpExt` counters, those that
/// moved: how Linux took the user-space end's segments.
pub static LAST_TCP_EXT: std::sync::Mutex<Option<std::collections::BTreeMap<String, i64>>> =
    std::sync::Mutex::new(None);

/// What the calling thread has used and what Linux's TCP has counted,
/// at the start of a transfer.
struct Before {
    usage: [f64; 4],
    tcp_ext: std::collections::BTreeMap<String, i64>,
}

impl Before {
    fn now() -> Before {
        Before {
            usage: crate::netns::thread_usage(),
            tcp_ext: crate::netns::tcp_ext_counters(),
        }
    }
}

/// Keeps the calling thread's usage since `before` as [`LAST_USAGE`],
/// and the counters that moved as [`LAST_TCP_EXT`].
fn keep_usage(before: Before) {
    let now = crate::netns::thread_usage();
    *LAST_USAGE.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(std::array::from_fn(|i| now[i] - before.usage[i]));
    let moved = crate::netns::tcp_ext_counters()
        .into_iter()
        .map(|(k, v)| {
            let d = v - before.tcp_ext.get(&k).copied().unwrap_or(0);
            (k, d)
        })
        .filter(|&(_, d)| d != 0)
        .collect();
    *LAST_TCP_EXT.lock().unwrap_or_else(|e| e.into_inner()) = Some(moved);
}

/// Writes `bytes` then shuts down writing and waits for the peer's FIN.
/// Returns the seconds from first write to the peer's FIN.
pub fn send_all(mut s: TcpStream, bytes: u64) -> Result<f64> {
    let usage = Before::now();
    let start = Instant::now();
    let chunk = vec![0x5au8; 64 * 1024];
    let mut sent = 0u64;
    while sent < bytes {
        let n = chunk.len().min((bytes - sent) as usize);
        s.write_all(&chunk[..n]).context("write")?;
        sent += n as u64;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    let mut rest = [0u8; 64];
    while s.read(&mut rest)? > 0 {}
    keep_usage(usage);
    Ok(start.elapsed().as_secs_f64())
}

/// Reads to EOF; returns the bytes read and the seconds from the first
/// byte to EOF.
pub fn receive_all(mut s: TcpStream) -> Result<(u64, f64)> {
    let usage = Before::now();
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    let mut start = None;
    loop {
        let n = s.read(&mut buf).context("read")?;
        if n == 0 {
            break;
        }
        start.get_or_insert_with(Instant::now);
        got += n as u64;
    }
    let seconds = start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    keep_usage(usage);
    Ok((got, seconds))
}

/// Sends one byte and waits for one back, `warmup + count` times; the
/// last `count` round trips in ns.
pub fn rr_client(mut s: TcpStream, warmup: u64, count: u64) -> Result<Histogram<u64>> {
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 10_000_000_000, 3)?;
    let mut byte = [0u8; 1];
    for i in 0..warmup + count {
        let t = Instant::now();
        s.write_all(&[i as u8])?;
        s.read_exact(&mut byte).context("the response")?;
        if byte[0] != i as u8 {
            bail!("response {} to request {}", byte[0], i as u8);
        }
        if i >= warmup {
            hist.record(t.elapsed().as_nanos() as u64)?;
        }
    }
    Ok(hist)
}

/// Echoes every byte back until EOF.
pub fn echo(mut s: TcpStream) -> Result<()> {
    s.set_nodelay(true)?;
    let mut buf = [0u8; 64];
    loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        s.write_all(&buf[..n])?;
    }
}
