//! A TCP relay on loopback that holds every byte for a fixed time in each
//! direction: a long round trip without netem (this kernel has none).
//! Each connection to it is relayed on a connection of its own to the
//! target; bytes keep their order.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The relay: connect to `addr` to reach the target `one_way` later each way.
pub struct DelayRelay {
    /// Where to connect.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DelayRelay {
    /// A relay to `to` on an ephemeral loopback port, holding bytes for
    /// `one_way` each way.
    pub fn start(to: SocketAddr, one_way: Duration) -> DelayRelay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let stop = stop2.clone();
                        std::thread::spawn(move || open(client, to, one_way, &stop));
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2))
                    }
                    Err(_) => return,
                }
            }
        });
        DelayRelay {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for DelayRelay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Connects to `to` as the client's first bytes arrive there, `one_way`
/// after it sent them, and relays from then on. Over a real path the
/// server's accept and the client's first bytes come together (the
/// handshake's last ACK carries them or just precedes them), so the relay
/// does not connect before.
fn open(mut client: TcpStream, to: SocketAddr, one_way: Duration, stop: &Arc<AtomicBool>) {
    let _ = client.set_nonblocking(false);
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let mut first = vec![0u8; 64 << 10];
    let k = match client.read(&mut first) {
        Ok(k) if k > 0 => k,
        _ => return,
    };
    std::thread::sleep(one_way);
    let Ok(mut server) = TcpStream::connect(to) else {
        return;
    };
    if server.write_all(&first[..k]).is_err() {
        return;
    }
    relay_pair(client, server, one_way, stop);
}

/// Relays `a` ⇄ `b`, each direction delayed by `one_way`.
fn relay_pair(a: TcpStream, b: TcpStream, one_way: Duration, stop: &Arc<AtomicBool>) {
    let _ = a.set_nodelay(true);
    let _ = b.set_nodelay(true);
    for (from, to) in [(a.try_clone().unwrap(), b.try_clone().unwrap()), (b, a)] {
        let (tx, rx) = mpsc::channel::<(Instant, Option<Vec<u8>>)>();
        let stop = stop.clone();
        std::thread::spawn(move || read_side(from, tx, &stop));
        std::thread::spawn(move || write_side(to, rx, one_way));
    }
}

/// Reads what arrives, stamped with its arrival; `None` at the end.
fn read_side(mut from: TcpStream, tx: mpsc::Sender<(Instant, Option<Vec<u8>>)>, stop: &AtomicBool) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                if tx.send((Instant::now(), Some(buf[..k].to_vec()))).is_err() {
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    let _ = tx.send((Instant::now(), None));
}

/// Writes each chunk `one_way` after it arrived; closes its side at the end.
fn write_side(
    mut to: TcpStream,
    rx: mpsc::Receiver<(Instant, Option<Vec<u8>>)>,
    one_way: Duration,
) {
    while let Ok((at, chunk)) = rx.recv() {
        std::thread::sleep((at + one_way).saturating_duration_since(Instant::now()));
        match chunk {
            Some(bytes) => {
                if to.write_all(&bytes).is_err() {
                    return;
                }
            }
            None => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
