//! Issue 28's lockout attacks, shared by the attack and load tests: a
//! network namespace of the test's own, and a flood of silent connections
//! from chosen source addresses, reopened as the server closes them.

use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A network namespace of the test's own, deleted when dropped.
pub struct Netns(pub String);

impl Netns {
    /// A new namespace `tcplab-<tag>-<pid>` with its loopback up.
    pub fn create(tag: &str) -> Netns {
        let name = format!("tcplab-{tag}-{}", std::process::id());
        let _ = Command::new("ip")
            .args(["netns", "del", &name])
            .stderr(std::process::Stdio::null())
            .status();
        ip(&["netns", "add", &name]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs `ip` with `args`; panics if it fails.
pub fn ip(args: &[&str]) {
    let st = Command::new("ip").args(args).status().unwrap();
    assert!(st.success(), "ip {args:?}: {st}");
}

/// Moves the calling thread into namespace `name`.
pub fn enter_netns(name: &str) {
    let f = std::fs::File::open(format!("/run/netns/{name}")).unwrap();
    // SAFETY: f is an open namespace file; setns changes only this thread.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
}

/// A silent connection from `from` to `to` (non-blocking).
pub fn silent(from: IpAddr, to: SocketAddr) -> Option<Socket> {
    let domain = if to.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let s = Socket::new(domain, Type::STREAM, None).ok()?;
    s.bind(&SocketAddr::new(from, 0).into()).ok()?;
    s.connect_timeout(&to.into(), Duration::from_secs(2)).ok()?;
    s.set_nonblocking(true).ok()?;
    Some(s)
}

/// Silent connections from `sources` (one each), each reopened from its
/// address as soon as the server closes it, until dropped.
pub struct Flood {
    stop: Arc<AtomicBool>,
    reopened: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Flood {
    /// The flood from `sources` to `to`, from namespace `netns`.
    pub fn start(sources: Vec<IpAddr>, to: SocketAddr, netns: Option<String>) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let reopened = Arc::new(AtomicUsize::new(0));
        let (stop2, reopened2) = (stop.clone(), reopened.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            if let Some(ns) = &netns {
                enter_netns(ns);
            }
            let mut conns: Vec<(IpAddr, Option<Socket>)> =
                sources.iter().map(|ip| (*ip, silent(*ip, to))).collect();
            assert!(conns.iter().all(|c| c.1.is_some()), "attackers connect");
            tx.send(()).unwrap();
            let mut buf = [0u8; 4096];
            while !stop2.load(Ordering::SeqCst) {
                for (from, c) in conns.iter_mut() {
                    let gone = match c {
                        None => true,
                        Some(s) => match (&*s).read(&mut buf) {
                            Ok(0) => true,
                            Ok(_) => false,
                            Err(e) if e.kind() == ErrorKind::WouldBlock => false,
                            Err(_) => true,
                        },
                    };
                    if gone {
                        *c = silent(*from, to);
                        reopened2.fetch_add(1, Ordering::SeqCst);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("the attackers connected");
        Flood {
            stop,
            reopened,
            thread: Some(thread),
        }
    }

    /// Connections the server closed and the flood reopened.
    pub fn reopened(&self) -> usize {
        self.reopened.load(Ordering::SeqCst)
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
