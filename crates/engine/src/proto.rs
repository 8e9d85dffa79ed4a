//! The control protocol between `tcplab bench` and `tcplab server`.
//!
//! Every message is one frame: the magic `TCPL`, a big-endian u16 protocol
//! version, a big-endian u32 payload length (at most [`MAX_FRAME`]), and a
//! JSON payload tagged by `"type"`. A frame with a bad magic, version or
//! length loses the stream's sync and ends the connection; a well-framed
//! payload that does not parse gets an `error` reply and the connection
//! stays usable.

use crate::report::SideReport;
use record::TrialParams;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};

/// The protocol version this build speaks.
pub const VERSION: u16 = 1;
/// Frame magic.
pub const MAGIC: [u8; 4] = *b"TCPL";
/// Largest accepted payload.
pub const MAX_FRAME: u32 = 1 << 20;

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// Client → server, first message.
    Hello {
        /// Client software and version.
        client: String,
    },
    /// Server → client, answer to `hello`.
    Welcome {
        /// Server software and version.
        server: String,
    },
    /// Client → server: prepare a trial.
    Setup {
        /// The trial's factors.
        params: TrialParams,
    },
    /// Server → client: data sockets are listening on these ports.
    Ready {
        /// One port per flow for UDP, one listening port for TCP.
        ports: Vec<u16>,
    },
    /// Client → server: the client's side of the trial is done.
    ClientDone,
    /// Server → client: the server's side of the trial, measured.
    Report {
        /// The server's measurements.
        report: SideReport,
    },
    /// Either way: a request could not be served. The connection stays open.
    Error {
        /// What went wrong, for a human.
        message: String,
    },
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the connection between frames.
    #[error("connection closed")]
    Closed,
    /// Reading failed.
    #[error("reading control connection: {0}")]
    Io(#[from] std::io::Error),
    /// The frame did not start with the magic.
    #[error("not a tcplab control frame (bad magic {0:02x?})")]
    BadMagic([u8; 4]),
    /// The frame's version is not ours.
    #[error("unsupported protocol version {0}; this side speaks version {VERSION}")]
    BadVersion(u16),
    /// The frame is longer than allowed.
    #[error("control frame of {0} bytes exceeds the limit of {MAX_FRAME}")]
    TooLong(u32),
    /// The payload is not a known message.
    #[error("malformed control message: {0}")]
    Malformed(String),
}

impl FrameError {
    /// True if the stream is still in sync after this error (only the payload was bad).
    pub fn recoverable(&self) -> bool {
        matches!(self, FrameError::Malformed(_))
    }
}

/// Writes one message as a frame.
pub fn write_message<W: Write>(w: &mut W, m: &Message) -> std::io::Result<()> {
    let body = serde_json::to_vec(m).map_err(std::io::Error::other)?;
    write_frame(w, VERSION, &body)
}

/// Writes a raw frame (also used by tests to send malformed payloads).
pub fn write_frame<W: Write>(w: &mut W, version: u16, body: &[u8]) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(10 + body.len());
    buf.extend_from_slice(&MAGIC);
    buf.extend_from_slice(&version.to_be_bytes());
    buf.extend_from_slice(&(body.len() as u32).to_be_bytes());
    buf.extend_from_slice(body);
    w.write_all(&buf)?;
    w.flush()
}

/// Reads one frame and parses its message.
pub fn read_message<R: Read>(r: &mut R) -> Result<Message, FrameError> {
    let mut head = [0u8; 10];
    match r.read_exact(&mut head[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(FrameError::Closed),
        Err(e) => return Err(FrameError::Io(e)),
    }
    r.read_exact(&mut head[1..])?;
    let magic: [u8; 4] = head[0..4].try_into().expect("4 bytes");
    if magic != MAGIC {
        return Err(FrameError::BadMagic(magic));
    }
    let version = u16::from_be_bytes([head[4], head[5]]);
    let len = u32::from_be_bytes(head[6..10].try_into().expect("4 bytes"));
    if len > MAX_FRAME {
        return Err(FrameError::TooLong(len));
    }
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body)?;
    if version != VERSION {
        return Err(FrameError::BadVersion(version));
    }
    serde_json::from_slice(&body).map_err(|e| FrameError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut buf = Vec::new();
        let m = Message::Ready { ports: vec![1, 2] };
        write_message(&mut buf, &m).unwrap();
        assert_eq!(&buf[..4], b"TCPL");
        assert_eq!(read_message(&mut buf.as_slice()).unwrap(), m);
    }

    #[test]
    fn errors_are_classified() {
        let mut buf = Vec::new();
        write_frame(&mut buf, VERSION, b"{\"type\":\"nonsense\"}").unwrap();
        let e = read_message(&mut buf.as_slice()).unwrap_err();
        assert!(e.recoverable(), "{e}");
        buf.clear();
        write_frame(&mut buf, 9, b"{}").unwrap();
        assert!(matches!(
            read_message(&mut buf.as_slice()),
            Err(FrameError::BadVersion(9))
        ));
        assert!(matches!(
            read_message(&mut &b"GET / HTTP/1.1\r\n"[..]),
            Err(FrameError::BadMagic(_))
        ));
        assert!(matches!(
            read_message(&mut &b""[..]),
            Err(FrameError::Closed)
        ));
    }
}
