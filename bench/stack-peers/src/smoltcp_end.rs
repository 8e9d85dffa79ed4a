//! smoltcp's end (0.14, benchmark-only): its `Interface` and one
//! `tcp::Socket` over its own `TunTapInterface` on a plain TUN in the
//! namespace, the loop its examples use (`poll`, serve the socket,
//! `phy::wait` for `poll_delay`). Same MSS (the device's MTU less 40) and
//! buffer sizes as tcplab's end.

use crate::setup::{Cc, Setup, Stopwatch, Timed, LIMIT, PORT, TUN_NAME};
use anyhow::{bail, Context, Result};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{wait as phy_wait, Medium, TunTapInterface};
use smoltcp::socket::tcp;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr, Ipv4Address};
use std::os::fd::AsRawFd;

/// The longest one wait may sleep before the loop looks again.
const TICK: Duration = Duration::from_millis(5);

struct End {
    device: TunTapInterface,
    iface: Interface,
    sockets: SocketSet<'static>,
    handle: SocketHandle,
}

impl End {
    fn open(setup: &Setup) -> Result<End> {
        let mut device = TunTapInterface::new(TUN_NAME, Medium::Ip).context("opening the TUN")?;
        setup.configure_tun()?;
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = u64::from(std::process::id());
        let mut iface = Interface::new(config, &mut device, Instant::now());
        let o = setup.ours.octets();
        iface.update_ip_addrs(|addrs| {
            addrs
                .push(IpCidr::new(
                    IpAddress::Ipv4(Ipv4Address::new(o[0], o[1], o[2], o[3])),
                    24,
                ))
                .expect("one address");
        });
        let rx = tcp::SocketBuffer::new(vec![0; setup.buffer]);
        let tx = tcp::SocketBuffer::new(vec![0; setup.buffer]);
        let mut sockets = SocketSet::new(vec![]);
        let mut socket = tcp::Socket::new(rx, tx);
        // TCP timestamps (RFC 7323) as tcplab's stack and Linux use them:
        // without them smoltcp's segments carry 1460 octets to tcplab's
        // 1448, and Linux acknowledges them differently, which is no part
        // of what the two stacks' code costs.
        socket.set_tsval_generator(Some(tsval_ms));
        socket.set_congestion_control(match setup.cc {
            Cc::Reno => tcp::CongestionControl::Reno,
            Cc::Cubic => tcp::CongestionControl::Cubic,
            Cc::None => tcp::CongestionControl::None,
        });
        let handle = sockets.add(socket);
        Ok(End {
            device,
            iface,
            sockets,
            handle,
        })
    }

    fn socket(&mut self) -> &mut tcp::Socket<'static> {
        self.sockets.get_mut::<tcp::Socket>(self.handle)
    }

    /// One round: poll, then sleep until the interface wants polling
    /// again (at most a tick) unless it did something.
    fn step(&mut self) -> Result<()> {
        let now = Instant::now();
        let changed = self.iface.poll(now, &mut self.device, &mut self.sockets);
        if changed == smoltcp::iface::PollResult::SocketStateChanged {
            return Ok(());
        }
        let delay = self
            .iface
            .poll_delay(Instant::now(), &self.sockets)
            .map_or(TICK, |d| d.min(TICK));
        phy_wait(self.device.as_raw_fd(), Some(delay)).context("waiting on the TUN")?;
        Ok(())
    }
}

/// Connects to Linux, sends `bytes`, closes, and runs until Linux has
/// acknowledged the FIN. Timed from ESTABLISHED.
pub fn send(setup: &Setup, bytes: u64) -> Result<Timed> {
    let mut end = End::open(setup)?;
    let l = setup.linux.octets();
    let remote = (
        IpAddress::Ipv4(Ipv4Address::new(l[0], l[1], l[2], l[3])),
        PORT,
    );
    let handle = end.handle;
    let cx = end.iface.context();
    end.sockets
        .get_mut::<tcp::Socket>(handle)
        .connect(cx, remote, 49152)
        .context("connect")?;
    let limit = std::time::Instant::now() + LIMIT;
    while end.socket().state() != tcp::State::Established {
        end.step()?;
        if std::time::Instant::now() > limit || end.socket().state() == tcp::State::Closed {
            bail!("no handshake");
        }
    }
    let watch = Stopwatch::start(setup);
    let chunk = vec![0xa5u8; 64 * 1024];
    let mut sent = 0u64;
    let mut shut = false;
    loop {
        let socket = end.socket();
        while sent < bytes && socket.can_send() {
            let n = chunk.len().min((bytes - sent) as usize);
            let took = socket.send_slice(&chunk[..n]).context("send")?;
            if took == 0 {
                break;
            }
            sent += took as u64;
        }
        if sent == bytes && !shut {
            socket.close();
            shut = true;
        }
        if matches!(
            socket.state(),
            tcp::State::FinWait2 | tcp::State::TimeWait | tcp::State::Closed
        ) {
            return Ok(watch.stop());
        }
        end.step()?;
        if std::time::Instant::now() > limit {
            bail!("the transfer took longer than {LIMIT:?}");
        }
    }
}

/// Listens and accepts one connection (the socket itself).
fn accept(end: &mut End, ready: std::sync::mpsc::Sender<()>) -> Result<()> {
    end.socket().listen(PORT).context("listen")?;
    ready.send(()).ok();
    let limit = std::time::Instant::now() + LIMIT;
    while !end.socket().is_active() || end.socket().state() == tcp::State::SynReceived {
        end.step()?;
        if std::time::Instant::now() > limit {
            bail!("no connection");
        }
    }
    Ok(())
}

/// Listens, accepts one connection, reads until Linux's FIN. Timed from
/// the accept to the last byte. Returns the bytes read too.
pub fn receive(setup: &Setup, ready: std::sync::mpsc::Sender<()>) -> Result<(u64, Timed)> {
    let mut end = End::open(setup)?;
    accept(&mut end, ready)?;
    let watch = Stopwatch::start(setup);
    let limit = std::time::Instant::now() + LIMIT;
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    loop {
        let socket = end.socket();
        loop {
            match socket.recv_slice(&mut buf) {
                Ok(0) => break,
                Ok(n) => got += n as u64,
                Err(tcp::RecvError::Finished) => {
                    let timed = watch.stop();
                    socket.close();
                    for _ in 0..100 {
                        end.step()?;
                        if end.socket().state() == tcp::State::Closed {
                            break;
                        }
                    }
                    return Ok((got, timed));
                }
                Err(e) => bail!("recv: {e}"),
            }
        }
        end.step()?;
        if std::time::Instant::now() > limit {
            bail!("the transfer took longer than {LIMIT:?}");
        }
    }
}

/// Listens, accepts one connection and echoes every byte until Linux's
/// FIN. Returns the CPU time of the whole echo.
pub fn echo(setup: &Setup, ready: std::sync::mpsc::Sender<()>) -> Result<Timed> {
    let mut end = End::open(setup)?;
    accept(&mut end, ready)?;
    end.socket().set_nagle_enabled(false);
    let watch = Stopwatch::start(setup);
    let limit = std::time::Instant::now() + LIMIT;
    let mut buf = [0u8; 64];
    loop {
        let socket = end.socket();
        match socket.recv_slice(&mut buf) {
            Ok(0) => {}
            Ok(n) => {
                if socket.send_slice(&buf[..n]).context("send")? != n {
                    bail!("the send buffer is full in an echo");
                }
            }
            Err(tcp::RecvError::Finished) => {
                socket.close();
                let timed = watch.stop();
                for _ in 0..100 {
                    end.step()?;
                }
                return Ok(timed);
            }
            Err(e) => bail!("recv: {e}"),
        }
        end.step()?;
        if std::time::Instant::now() > limit {
            bail!("the echo took longer than {LIMIT:?}");
        }
    }
}

/// A TCP timestamp clock for smoltcp: milliseconds since its first call.
fn tsval_ms() -> u32 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u32
}
