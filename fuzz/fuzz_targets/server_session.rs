//! A real server (in process, on a loopback port, with tight limits) fed
//! one connection's byte stream. The server must close the connection
//! within a few seconds of the client leaving, whatever the bytes did,
//! send only well-formed frames, and keep serving: every 256 inputs a
//! normal client must be greeted.

#![no_main]

use engine::proto::{read_message, FrameError, Message};
use engine::{Client, Limits, Server};
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let limits = Limits {
            max_parallel: 2,
            max_duration_s: 0.3,
            max_bytes: 1 << 20,
            max_io_size: 1 << 16,
            max_trial_s: 4.0,
            max_clients: 4,
            ..Limits::default()
        };
        Server::bind("127.0.0.1:0".parse().unwrap(), limits)
            .unwrap()
            .spawn()
            .unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let addr = server();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    // The server may close (and reset) after a frame that loses sync.
    let _ = s.write_all(data);
    let _ = s.shutdown(Shutdown::Write);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        assert!(
            Instant::now() < deadline,
            "the server kept a departed client"
        );
        match read_message(&mut s) {
            Ok(Message::Welcome { .. } | Message::Ready { .. })
            | Ok(Message::Report { .. } | Message::Error { .. }) => {}
            Ok(other) => panic!("the server sent {other:?}"),
            Err(FrameError::Closed) => break,
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("the server sent a bad frame: {e}"),
        }
    }
    if RUNS.fetch_add(1, Ordering::Relaxed) % 256 == 0 {
        let give_up = Instant::now() + Duration::from_secs(3);
        while let Err(e) = Client::connect(addr, Duration::from_secs(5)) {
            assert!(Instant::now() < give_up, "a normal client: {e}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
});
