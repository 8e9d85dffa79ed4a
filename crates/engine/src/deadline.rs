//! Reading a control message against the clock: the first byte must arrive
//! by one deadline and the whole frame within a limit of its first byte, so
//! a peer that trickles a byte at a time cannot hold a connection (the
//! socket's own timeout applies per read(2), which a trickle resets).

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A reader over a control stream whose reads fail with `TimedOut` once
/// the current deadline has passed.
pub struct DeadlineReader<'a> {
    stream: &'a TcpStream,
    first_byte_by: Instant,
    frame_within: Duration,
    frame_by: Option<Instant>,
    hard_by: Option<Instant>,
}

impl<'a> DeadlineReader<'a> {
    /// Reads from `stream`: the first byte by `first_byte_by`, everything
    /// after it within `frame_within` of the first byte.
    pub fn new(
        stream: &'a TcpStream,
        first_byte_by: Instant,
        frame_within: Duration,
    ) -> DeadlineReader<'a> {
        DeadlineReader {
            stream,
            first_byte_by,
            frame_within,
            frame_by: None,
            hard_by: None,
        }
    }

    /// Also ends every read at `by`, whatever the frame's progress (a
    /// handshake must complete by its deadline).
    pub fn no_later_than(mut self, by: Instant) -> DeadlineReader<'a> {
        self.hard_by = Some(by);
        self
    }
}

impl Read for DeadlineReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut by = self.frame_by.unwrap_or(self.first_byte_by);
        if let Some(hard) = self.hard_by {
            by = by.min(hard);
        }
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"));
        }
        self.stream.set_read_timeout(Some(left))?;
        let n = match (&mut &*self.stream).read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "deadline passed"))
            }
            other => other?,
        };
        if n > 0 && self.frame_by.is_none() {
            self.frame_by = Some(Instant::now() + self.frame_within);
        }
        Ok(n)
    }
}

/// True if `e` is a reader's deadline passing.
pub fn is_deadline(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{read_message, FrameError};
    use std::io::Write;
    use std::net::TcpListener;

    #[test]
    fn a_trickled_frame_times_out_as_a_whole() {
        // Burns CPU or bounds wall time: one such test at a time.
        let _timing = testkit::timing_lock();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let t = std::thread::spawn(move || {
            // One byte every 40 ms: each read succeeds within any per-read timeout.
            for b in b"TCPL\x00\x01\x00\x00\x00\x10{}" {
                if c.write_all(&[*b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(40));
            }
        });
        let t0 = Instant::now();
        let mut r = DeadlineReader::new(
            &s,
            Instant::now() + Duration::from_secs(5),
            Duration::from_millis(200),
        );
        match read_message(&mut r) {
            Err(FrameError::Io(e)) => assert!(is_deadline(&e), "{e}"),
            other => panic!("expected a timeout, got {other:?}"),
        }
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(2), "{took:?}");
        drop(s);
        t.join().unwrap();
    }
}
