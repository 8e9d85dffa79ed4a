//! A greeted client's control connection on the server: the stream, its
//! framing (tagged after a keyed handshake, see [`crate::session`]), and
//! any bytes the client sent before its thread started.

use crate::deadline::DeadlineReader;
use crate::proto::{FrameError, Message};
use crate::session::Framing;
use std::io::{Cursor, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// A greeted client's control connection.
pub(crate) struct ControlConn {
    /// The connection.
    pub(crate) stream: TcpStream,
    framing: Framing,
    early: Vec<u8>,
}

impl ControlConn {
    /// The connection of a client whose handshake left it `early` bytes
    /// read and `unsent` reply bytes not yet written.
    pub(crate) fn new(
        mut stream: TcpStream,
        framing: Framing,
        early: Vec<u8>,
        unsent: &[u8],
    ) -> std::io::Result<ControlConn> {
        if !unsent.is_empty() {
            stream.write_all(unsent)?;
        }
        Ok(ControlConn {
            stream,
            framing,
            early,
        })
    }

    /// Writes one message.
    pub(crate) fn send(&mut self, m: &Message) -> std::io::Result<()> {
        self.framing.write(&mut &self.stream, m)
    }

    /// Reads one message: its first byte by `first_by`, the rest within
    /// `within` of it, and all of it by `hard_by` if given.
    pub(crate) fn read(
        &mut self,
        first_by: Instant,
        within: Duration,
        hard_by: Option<Instant>,
    ) -> Result<Message, FrameError> {
        let mut r = DeadlineReader::new(&self.stream, first_by, within);
        if let Some(by) = hard_by {
            r = r.no_later_than(by);
        }
        if self.early.is_empty() {
            return self.framing.read(&mut r);
        }
        let mut chained = Cursor::new(std::mem::take(&mut self.early)).chain(r);
        let m = self.framing.read(&mut chained);
        let (cur, _) = chained.into_inner();
        let at = cur.position() as usize;
        let mut left = cur.into_inner();
        left.drain(..at.min(left.len()));
        self.early = left;
        m
    }
}
