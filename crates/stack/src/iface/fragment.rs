//! IPv4 fragment reassembly (RFC 791 §3.2, RFC 815's idea of tracking what
//! has arrived rather than what is missing), bounded three ways so that a
//! flood of fragments cannot take the host's memory: at most
//! `max_datagrams` partial datagrams, at most `max_bytes` bytes held across
//! them, and each dropped `timeout` after its first fragment, on the
//! injected clock.

use crate::time::Instant;
use crate::wire::{IpProtocol, Ipv4Address, Ipv4Repr};
use std::time::Duration;

/// The largest IPv4 payload: 65535 bytes minus the minimal header.
const MAX_PAYLOAD: usize = 65535 - 20;

/// The reassembler's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentConfig {
    /// Partial datagrams held at once.
    pub max_datagrams: usize,
    /// Payload bytes held across all partial datagrams.
    pub max_bytes: usize,
    /// How long a partial datagram waits for its other fragments
    /// (RFC 791 suggests 15 s; Linux uses 30 s).
    pub timeout: Duration,
}

impl Default for FragmentConfig {
    fn default() -> FragmentConfig {
        FragmentConfig {
            max_datagrams: 16,
            max_bytes: 256 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Why a fragment was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FragmentError {
    /// The bounds are reached (datagrams or bytes).
    #[error("reassembly buffers full")]
    Limit,
    /// It contradicts the datagram (past its end, a second different end,
    /// a middle fragment whose length is not a multiple of 8, or a
    /// datagram over 65535 bytes); the partial datagram is dropped.
    #[error("fragment inconsistent with its datagram")]
    Invalid,
}

/// What identifies a datagram's fragments (RFC 791: source, destination,
/// protocol and identification).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DatagramKey {
    src: Ipv4Address,
    dst: Ipv4Address,
    protocol: IpProtocol,
    ident: u16,
}

impl DatagramKey {
    fn of(repr: &Ipv4Repr) -> DatagramKey {
        DatagramKey {
            src: repr.src_addr,
            dst: repr.dst_addr,
            protocol: repr.next_header,
            ident: repr.ident,
        }
    }
}

/// One datagram being put together.
#[derive(Debug)]
struct Partial {
    key: DatagramKey,
    /// The first fragment's header, once it arrived (offset 0).
    header: Option<Ipv4Repr>,
    /// The payload so far; grows to the furthest byte seen.
    data: Vec<u8>,
    /// Byte ranges received, sorted and merged.
    received: Vec<(usize, usize)>,
    /// The payload's length, once the last fragment (MF clear) arrived.
    total: Option<usize>,
    deadline: Instant,
}

impl Partial {
    fn mark(&mut self, start: usize, end: usize) {
        self.received.push((start, end));
        self.received.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(self.received.len());
        for &(s, e) in &self.received {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.received = merged;
    }

    fn complete(&self) -> bool {
        match (self.total, self.header) {
            (Some(total), Some(_)) => self.received == [(0, total)],
            _ => false,
        }
    }
}

/// The partial datagrams and their bounds.
#[derive(Debug)]
pub struct Reassembler {
    config: FragmentConfig,
    partials: Vec<Partial>,
    bytes_held: usize,
}

impl Reassembler {
    /// An empty reassembler with `config`'s bounds.
    pub fn new(config: FragmentConfig) -> Reassembler {
        Reassembler {
            config,
            partials: Vec::new(),
            bytes_held: 0,
        }
    }

    /// Partial datagrams held.
    pub fn partial_datagrams(&self) -> usize {
        self.partials.len()
    }

    /// Payload bytes held.
    pub fn bytes_held(&self) -> usize {
        self.bytes_held
    }

    /// Drops the partial datagrams whose time ran out; returns how many.
    pub fn expire(&mut self, now: Instant) -> usize {
        let before = self.partials.len();
        let mut freed = 0;
        self.partials.retain(|p| {
            let keep = now < p.deadline;
            if !keep {
                freed += p.data.len();
            }
            keep
        });
        self.bytes_held -= freed;
        before - self.partials.len()
    }

    /// Adds one fragment (`repr` its header, `payload` its data). Returns
    /// the whole datagram, its header's length and fragment fields set as
    /// for an unfragmented one, once every byte has arrived.
    pub fn add(
        &mut self,
        repr: &Ipv4Repr,
        payload: &[u8],
        now: Instant,
    ) -> Result<Option<(Ipv4Repr, Vec<u8>)>, FragmentError> {
        let start = usize::from(repr.frag_offset);
        let end = start + payload.len();
        if end > MAX_PAYLOAD || (repr.more_frags && payload.len() & 7 != 0) {
            self.drop_datagram(DatagramKey::of(repr));
            return Err(FragmentError::Invalid);
        }
        let key = DatagramKey::of(repr);
        let at = match self.partials.iter().position(|p| p.key == key) {
            Some(at) => at,
            None => {
                if self.partials.len() >= self.config.max_datagrams {
                    return Err(FragmentError::Limit);
                }
                self.partials.push(Partial {
                    key,
                    header: None,
                    data: Vec::new(),
                    received: Vec::new(),
                    total: None,
                    deadline: now.after(self.config.timeout),
                });
                self.partials.len() - 1
            }
        };
        let partial = &mut self.partials[at];
        let contradicts = match partial.total {
            Some(total) => end > total || (!repr.more_frags && end != total),
            None => !repr.more_frags && partial.received.last().is_some_and(|r| r.1 > end),
        };
        if contradicts {
            self.drop_datagram(key);
            return Err(FragmentError::Invalid);
        }
        let growth = end.saturating_sub(partial.data.len());
        if self.bytes_held + growth > self.config.max_bytes {
            if partial.received.is_empty() {
                self.partials.remove(at);
            }
            return Err(FragmentError::Limit);
        }
        let partial = &mut self.partials[at];
        if growth > 0 {
            partial.data.resize(end, 0);
        }
        self.bytes_held += growth;
        partial.data[start..end].copy_from_slice(payload);
        partial.mark(start, end);
        if !repr.more_frags {
            partial.total = Some(end);
        }
        if start == 0 {
            partial.header = Some(*repr);
        }
        if !partial.complete() {
            return Ok(None);
        }
        let partial = self.partials.swap_remove(at);
        self.bytes_held -= partial.data.len();
        let mut header = partial
            .header
            .expect("complete datagrams have a first fragment");
        header.more_frags = false;
        header.frag_offset = 0;
        header.payload_len = partial.data.len();
        Ok(Some((header, partial.data)))
    }

    fn drop_datagram(&mut self, key: DatagramKey) {
        if let Some(at) = self.partials.iter().position(|p| p.key == key) {
            let p = self.partials.swap_remove(at);
            self.bytes_held -= p.data.len();
        }
    }
}
