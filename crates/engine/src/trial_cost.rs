//! What one trial takes from the server: every buffer its side of the test
//! allocates, and the descriptors it holds, computed from the trial's
//! factors before anything runs (so `admit` can refuse it in one line).
//!
//! The server side of each test, per connection or flow (n = `--parallel`):
//! - every test: the trial's pattern (one, shared: 16,064 bytes + the
//!   largest of `--write-size`, `--read-size` and http's 10 KB page), and a
//!   thread per connection plus the trial's own ([`THREAD_BYTES`] each);
//! - tcp-stream, client sends: a read buffer of `--read-size` per connection;
//!   the server sends: nothing per connection with `--api write|sendmsg|zerocopy`
//!   (it writes from the pattern), a memfd copy of the pattern with sendfile;
//! - tcp-rr and tcp-crr: a request buffer of `--write-size` per connection
//!   (rr) or per accepting thread (crr), filled by every request;
//! - http: the prebuilt responses (shared) and a 64 KiB request buffer per
//!   accepting thread;
//! - udp-stream and layer-rate's udp/ip/eth: a datagram buffer of
//!   `--write-size` + 64 per flow and its sequence tracker
//!   ([`SEQ_TRACKER_BYTES`]).
//!
//! Kernel socket buffers are not counted: the kernel bounds them
//! (net.core.rmem_max, tcp_rmem) and `--sndbuf`/`--rcvbuf` are validated.

use crate::pattern::PERIOD;
use crate::workloads::seq_window;
use crate::workloads::{http, layer, udp};
use record::{Api, TestKind, TrialParams};

/// Resident memory counted per thread a trial starts (its stack's touched
/// pages and its share of malloc's per-thread bookkeeping).
pub const THREAD_BYTES: u64 = 64 << 10;

/// Most memory one flow's sequence tracker holds: its sliding bitmap of
/// [`seq_window::WINDOW`] sequence numbers, one bit each, and the
/// tracker's own fields (see `udp::SeqTracker`).
pub const SEQ_TRACKER_BYTES: u64 = (seq_window::WINDOW / 8) as u64 + 256;

/// Request buffer of one http server connection.
const HTTP_REQUEST_BUF: u64 = 64 << 10;

/// One trial's take from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TrialCost {
    /// Bytes of buffers the server's side allocates (at their largest).
    pub memory: u64,
    /// Descriptors the server's side holds at once (sockets, memfds).
    pub descriptors: u64,
}

fn page(b: u64) -> u64 {
    b.div_ceil(crate::buffer::PAGE as u64)
        .saturating_mul(crate::buffer::PAGE as u64)
}

/// What trial `p` takes on the server (its side of the test).
pub fn server_cost(p: &TrialParams) -> TrialCost {
    let q = layer::effective(p);
    let n = u64::from(q.parallel.max(1));
    let biggest = q.write_size.max(q.read_size).max(http::PAGE_BYTES as u64);
    let pattern = page(PERIOD as u64 + biggest);
    let threads = (n + 2).saturating_mul(THREAD_BYTES);
    let client_sends = crate::metrics::sender_is_client(&q);
    let (per_conn, per_conn_fds, shared, listener) = match q.test {
        TestKind::TcpStream if client_sends => (page(q.read_size), 1, 0, 1),
        TestKind::TcpStream => match q.api {
            // The pattern copied into a memfd per connection.
            Api::Sendfile => (pattern, 2, 0, 1),
            _ => (0, 1, 0, 1),
        },
        TestKind::TcpRr => (page(q.write_size), 1, 0, 1),
        // Each flow's connection, and one more with its token that may
        // wait for the flow's thread (crr and http take them again and
        // again).
        TestKind::TcpCrr => (page(q.write_size), 2, 0, 1),
        TestKind::Http => {
            let responses: u64 = http::resources()
                .iter()
                .map(|(_, len)| *len as u64 + 256)
                .sum();
            (HTTP_REQUEST_BUF, 2, responses + 256, 1)
        }
        TestKind::UdpStream | TestKind::LayerRate => {
            let buf = page(q.write_size.max(udp::HEADER as u64) + 64);
            (buf + SEQ_TRACKER_BYTES, 1, 0, 0)
        }
    };
    TrialCost {
        memory: pattern
            .saturating_add(shared)
            .saturating_add(threads)
            .saturating_add(n.saturating_mul(per_conn)),
        // A data listener also holds up to HELD_MOST connections waiting
        // for their token (in places or on probation).
        descriptors: listener * (1 + crate::workloads::admission::HELD_MOST as u64)
            + n.saturating_mul(per_conn_fds),
    }
}

/// The factors that size a trial's buffers, for a refusal:
/// `tcp-rr --parallel 128 --write-size 16M --read-size 1`.
pub fn sizing_flags(p: &TrialParams) -> String {
    let size = |b: u64| record::numbers::size_text(b as f64);
    let mut s = format!("{} --parallel {}", p.test, p.parallel);
    if p.test != TestKind::Http {
        s += &format!(" --write-size {}", size(p.write_size));
    }
    if p.test == TestKind::TcpStream {
        s += &format!(" --read-size {}", size(p.read_size));
    }
    if p.test == TestKind::TcpStream && p.api == Api::Sendfile {
        s += " --api sendfile";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rr_attack_counts_its_request_buffers() {
        let mut p = TrialParams::defaults(TestKind::TcpRr);
        p.parallel = 128;
        p.write_size = 16 << 20;
        p.read_size = 1;
        let c = server_cost(&p);
        assert!(c.memory >= 128 * (16 << 20), "{c:?}");
        assert!(c.memory < 129 * (16 << 20) + (16 << 20), "{c:?}");
        assert_eq!(c.descriptors, 1 + 80 + 128);
        assert_eq!(sizing_flags(&p), "tcp-rr --parallel 128 --write-size 16M");
    }

    #[test]
    fn each_test_counts_its_own_buffers() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.parallel = 4;
        p.read_size = 1 << 20;
        p.write_size = 1 << 10;
        let fwd = server_cost(&p);
        p.reverse = true;
        let rev = server_cost(&p);
        assert!(
            fwd.memory >= 4 << 20 && rev.memory < 2 << 20,
            "{fwd:?} {rev:?}"
        );
        p.api = Api::Sendfile;
        assert_eq!(server_cost(&p).descriptors, 1 + 80 + 8);
        let mut u = TrialParams::defaults(TestKind::UdpStream);
        u.parallel = 100;
        assert_eq!(server_cost(&u).descriptors, 100);
        assert!(server_cost(&u).memory >= 100 * SEQ_TRACKER_BYTES);
        let h = server_cost(&TrialParams::defaults(TestKind::Http));
        assert!(h.memory >= HTTP_REQUEST_BUF + 50 * 1024, "{h:?}");
    }
}
