//! The stack's own counters as trial metrics, where TCP_INFO does not
//! exist: segments, retransmissions, cwnd, srtt, and the time limited by
//! the peer's window and by the send buffer, in nanoseconds (the stack
//! times them on its own clock, not in 4 ms jiffies).

use crate::account_profile::AccountedEnd;
use stack::phy::threaded::QueueStats;
use stack::socket::tcp::{TcpHandle, TcpSockets, TcpSocketsCounters};
use stack::tcp::pacing::SendSpan;
use stack::tcp::sws_counters::SwsCounters;
use std::collections::BTreeMap;

/// One end's connections summed (cwnd and srtt: the last connection's,
/// as TCP_INFO reports the last state).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackStats {
    /// Connections captured.
    pub connections: u64,
    /// Segments received.
    pub segments_in: u64,
    /// Segments sent.
    pub segments_out: u64,
    /// Segments sent again.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast retransmits.
    pub fast_retransmits: u64,
    /// Segments the header-prediction fast path took.
    pub header_prediction_hits: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// Segments whose checksum RFC 1624 patched instead of a full sum
    /// (`--checksum incremental`: pure ACKs from the ACK template).
    pub incremental_checksums: u64,
    /// Nanoseconds with data queued and the peer's window closed to it.
    pub rwnd_limited_ns: u64,
    /// Nanoseconds with the send buffer full.
    pub sndbuf_limited_ns: u64,
    /// The congestion window in bytes at the end.
    pub cwnd: Option<u64>,
    /// The smoothed RTT at the end, in nanoseconds.
    pub srtt_ns: Option<u64>,
    /// The MSS this end sent with.
    pub send_mss: Option<u64>,
    /// The retransmission timeout in force at the end, in nanoseconds.
    pub rto_ns: Option<u64>,
    /// Routes in the end's interface table (`--routes`, `--route-table`).
    pub routes: Option<u64>,
    /// Segments sent advertising a zero window.
    pub zero_windows_sent: u64,
    /// Output passes in which Nagle alone held data back.
    pub nagle_holds: u64,
    /// Window updates and data segments by size, the smallest over all
    /// connections (`--sws`).
    pub sws: SwsCounters,
    /// Payload the end sent in data segments and when (all connections):
    /// its achieved sending rate, which `--flow-control rate:RATE` sets.
    pub data_out: SendSpan,
    /// Nanoseconds of their schedules the pacers gave up (rate-based flow
    /// control): a bulk sender fell short of its rate by this much.
    pub pacing_dropped_ns: u64,
    /// The socket layer's counters: the PCB list's cache and walks
    /// (`--pcb-lookup list`), the route cache (`--route-cache on`).
    pub sockets: Option<TcpSocketsCounters>,
    /// What crossed the driver thread's queues (`--layers threaded`).
    pub driver_queues: Option<QueueStats>,
    /// The end's block-cost accounting (`--account`).
    pub account: Option<AccountedEnd>,
}

/// Adds `b`'s SWS counters to `a`'s (smallest: of both).
fn add_sws(a: &mut SwsCounters, b: &SwsCounters) {
    let least = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    a.window_updates += b.window_updates;
    a.small_window_updates += b.small_window_updates;
    a.min_window_update = least(a.min_window_update, b.min_window_update);
    a.small_segments_out += b.small_segments_out;
    a.min_segment_out = least(a.min_segment_out, b.min_segment_out);
    a.small_segments_in += b.small_segments_in;
    a.min_segment_in = least(a.min_segment_in, b.min_segment_in);
    a.data_segments_out += b.data_segments_out;
    a.data_segments_in += b.data_segments_in;
}

impl StackStats {
    /// Adds connection `h`'s counters (call before closing it).
    pub fn capture(&mut self, tcp: &TcpSockets, h: TcpHandle) {
        let Ok(c) = tcp.connection(h) else { return };
        let k = c.counters();
        self.connections += 1;
        self.segments_in += k.segments_in;
        self.segments_out += k.segments_out;
        self.retransmits += k.retransmits;
        self.timeouts += k.timeouts;
        self.fast_retransmits += k.fast_retransmits;
        self.header_prediction_hits += k.header_prediction_hits;
        self.window_probes += k.window_probes;
        self.incremental_checksums += k.incremental_checksums;
        self.rwnd_limited_ns += k.rwnd_limited_ns;
        self.sndbuf_limited_ns += k.sndbuf_limited_ns;
        self.zero_windows_sent += k.zero_windows_sent;
        self.nagle_holds += k.nagle_holds;
        add_sws(&mut self.sws, &k.sws);
        self.data_out = self.data_out.merge(k.data_out);
        self.pacing_dropped_ns += k.pacing_dropped_ns;
        self.cwnd = Some(c.cwnd() as u64);
        self.srtt_ns = c.srtt().map(|d| d.as_nanos() as u64);
        self.send_mss = Some(c.send_mss() as u64);
        self.rto_ns = Some(c.rto().as_nanos().min(u128::from(u64::MAX)) as u64);
    }

    /// Adds these counters to a trial's metrics as `stack_<end>_<name>`,
    /// `end` being `client` or `server`.
    pub fn add_to(&self, end: &str, m: &mut BTreeMap<String, f64>) {
        let mut put = |name: &str, v: f64| {
            m.insert(format!("stack_{end}_{name}"), v);
        };
        put("connections", self.connections as f64);
        put("segments_in", self.segments_in as f64);
        put("segments_out", self.segments_out as f64);
        put("retransmits", self.retransmits as f64);
        put("timeouts", self.timeouts as f64);
        put("fast_retransmits", self.fast_retransmits as f64);
        put("header_prediction_hits", self.header_prediction_hits as f64);
        if self.segments_in > 0 {
            put(
                "header_prediction_hit_rate",
                self.header_prediction_hits as f64 / self.segments_in as f64,
            );
            put(
                "header_prediction_misses",
                self.segments_in.saturating_sub(self.header_prediction_hits) as f64,
            );
        }
        put("window_probes", self.window_probes as f64);
        put("incremental_checksums", self.incremental_checksums as f64);
        put("rwnd_limited_s", self.rwnd_limited_ns as f64 / 1e9);
        put("sndbuf_limited_s", self.sndbuf_limited_ns as f64 / 1e9);
        if let Some(c) = self.cwnd {
            put("cwnd_bytes", c as f64);
        }
        if let Some(s) = self.srtt_ns {
            put("srtt_s", s as f64 / 1e9);
        }
        if let Some(s) = self.send_mss {
            put("snd_mss", s as f64);
        }
        if let Some(r) = self.rto_ns {
            put("rto_s", r as f64 / 1e9);
        }
        if let Some(r) = self.routes {
            put("routes", r as f64);
        }
        if let Some(k) = self.sockets {
            put("pcb_cache_hits", k.pcb_cache_hits as f64);
            put("pcb_cache_misses", k.pcb_cache_misses as f64);
            put("pcb_walked", k.pcb_walked as f64);
            put("route_cache_hits", k.route_cache_hits as f64);
            put("route_cache_misses", k.route_cache_misses as f64);
        }
        if let Some(q) = self.driver_queues {
            put("driver_frames_in", q.inbound_frames as f64);
            put("driver_frames_out", q.outbound_frames as f64);
            put("driver_queue_max_in", q.inbound_max_depth as f64);
            put("driver_queue_max_out", q.outbound_max_depth as f64);
            put("driver_wakeups", q.driver_wakeups as f64);
            put("driver_queue_full_out", q.outbound_full as f64);
        }
        put("zero_windows_sent", self.zero_windows_sent as f64);
        put("nagle_holds", self.nagle_holds as f64);
        let w = &self.sws;
        put("window_updates", w.window_updates as f64);
        put("small_window_updates", w.small_window_updates as f64);
        put("small_segments_out", w.small_segments_out as f64);
        put("small_segments_in", w.small_segments_in as f64);
        for (name, v) in [
            ("min_window_update_bytes", w.min_window_update),
            ("min_segment_out_bytes", w.min_segment_out),
            ("min_segment_in_bytes", w.min_segment_in),
        ] {
            if let Some(v) = v {
                put(name, v as f64);
            }
        }
        put("data_bytes_out", self.data_out.bytes as f64);
        if let Some(r) = self.data_out.rate_bps() {
            put("send_rate_bps", r);
        }
        put("pacing_dropped_s", self.pacing_dropped_ns as f64 / 1e9);
    }
}

impl StackStats {
    /// Fills the trial's generic TCP metrics (those a kernel end's TCP_INFO
    /// gives) from the stack's counters, for the end that sends: the same
    /// names, so tables and reports compare the two implementations.
    /// `rwnd_limited_s` and `sndbuf_limited_s` are per connection, as
    /// TCP_INFO's are.
    pub fn add_as_sender(&self, m: &mut BTreeMap<String, f64>) {
        let n = self.connections.max(1) as f64;
        let mut put = |name: &str, v: f64| {
            m.insert(name.to_string(), v);
        };
        put("segs_out", self.segments_out as f64);
        put("data_segs_out", self.sws.data_segments_out as f64);
        put("segs_in", self.segments_in as f64);
        put("retransmits", self.retransmits as f64);
        put("rwnd_limited_s", self.rwnd_limited_ns as f64 / 1e9 / n);
        put("sndbuf_limited_s", self.sndbuf_limited_ns as f64 / 1e9 / n);
        if let (Some(c), Some(mss)) = (self.cwnd, self.send_mss.filter(|m| *m > 0)) {
            put("cwnd_segments", c as f64 / mss as f64);
        }
        if let Some(mss) = self.send_mss {
            put("snd_mss", mss as f64);
        }
        if let Some(s) = self.srtt_ns {
            put("rtt_s", s as f64 / 1e9);
        }
    }

    /// Fills the receiver's generic metric (segments it sent: its ACKs).
    pub fn add_as_receiver(&self, m: &mut BTreeMap<String, f64>) {
        m.insert("receiver_segs_out".into(), self.segments_out as f64);
        m.insert(
            "receiver_data_segs_in".into(),
            self.sws.data_segments_in as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_sender_fills_the_kernel_senders_metric_names() {
        let s = StackStats {
            connections: 2,
            segments_out: 100,
            retransmits: 3,
            rwnd_limited_ns: 4_000_000,
            cwnd: Some(14600),
            send_mss: Some(1460),
            srtt_ns: Some(30_000),
            ..StackStats::default()
        };
        let mut m = BTreeMap::new();
        s.add_as_sender(&mut m);
        assert_eq!(m["retransmits"], 3.0);
        assert_eq!(m["segs_out"], 100.0);
        assert_eq!(m["rwnd_limited_s"], 0.002);
        assert_eq!(m["cwnd_segments"], 10.0);
        assert_eq!(m["rtt_s"], 30e-6);
        let mut r = BTreeMap::new();
        s.add_as_receiver(&mut r);
        assert_eq!(r["receiver_segs_out"], 100.0);
        assert!(!r.contains_key("retransmits"));
    }

    #[test]
    fn metrics_are_named_by_end_and_in_seconds() {
        let s = StackStats {
            connections: 1,
            segments_out: 10,
            rwnd_limited_ns: 2_000_000,
            srtt_ns: Some(50_000),
            rto_ns: Some(1_000_000_000),
            routes: Some(1002),
            incremental_checksums: 41,
            ..StackStats::default()
        };
        let mut m = BTreeMap::new();
        s.add_to("client", &mut m);
        assert_eq!(m["stack_client_rto_s"], 1.0);
        assert_eq!(m["stack_client_incremental_checksums"], 41.0);
        // No segment in: no hit rate to report.
        assert!(!m.contains_key("stack_client_header_prediction_hit_rate"));
        let s = StackStats {
            segments_in: 200,
            header_prediction_hits: 150,
            ..s
        };
        s.add_to("server", &mut m);
        assert_eq!(m["stack_server_header_prediction_hit_rate"], 0.75);
        assert_eq!(m["stack_client_routes"], 1002.0);
        assert_eq!(m["stack_client_segments_out"], 10.0);
        assert_eq!(m["stack_client_rwnd_limited_s"], 0.002);
        assert_eq!(m["stack_client_srtt_s"], 50e-6);
        assert!(!m.contains_key("stack_client_cwnd_bytes"));
        // Nothing sent: no smallest segment to report.
        assert!(!m.contains_key("stack_client_min_segment_out_bytes"));
        // One data segment spans no time: no sending rate.
        assert!(!m.contains_key("stack_client_send_rate_bps"));
    }

    #[test]
    fn sws_counters_add_up_and_keep_the_smallest() {
        let one = SwsCounters {
            window_updates: 10,
            small_window_updates: 4,
            min_window_update: Some(512),
            small_segments_out: 1,
            min_segment_out: Some(900),
            ..SwsCounters::default()
        };
        let two = SwsCounters {
            window_updates: 5,
            min_window_update: Some(1460),
            small_segments_in: 3,
            min_segment_in: Some(64),
            ..SwsCounters::default()
        };
        let mut s = StackStats::default();
        add_sws(&mut s.sws, &one);
        add_sws(&mut s.sws, &two);
        let mut m = BTreeMap::new();
        s.add_to("server", &mut m);
        assert_eq!(m["stack_server_window_updates"], 15.0);
        assert_eq!(m["stack_server_small_window_updates"], 4.0);
        assert_eq!(m["stack_server_min_window_update_bytes"], 512.0);
        assert_eq!(m["stack_server_min_segment_out_bytes"], 900.0);
        assert_eq!(m["stack_server_min_segment_in_bytes"], 64.0);
        assert_eq!(m["stack_server_small_segments_in"], 3.0);
    }

    #[test]
    fn the_sending_rate_is_every_octet_but_the_last_segments_over_first_to_last() {
        use stack::time::Instant;
        let mut s = StackStats::default();
        s.data_out.on_sent(1448, Instant(1_000_000));
        let mut m = BTreeMap::new();
        s.add_to("client", &mut m);
        assert!(!m.contains_key("stack_client_send_rate_bps"));
        s.data_out.on_sent(1448, Instant(1_231_680));
        s.data_out.on_sent(1000, Instant(1_463_360));
        s.add_to("client", &mut m);
        // 2 × 1448 octets in 463.36 µs: 50 Mbit/s.
        assert!((m["stack_client_send_rate_bps"] - 50e6).abs() < 1e-3);
        assert_eq!(m["stack_client_data_bytes_out"], 3896.0);
        assert_eq!(m["stack_client_pacing_dropped_s"], 0.0);
        s.pacing_dropped_ns = 1_500_000;
        s.add_to("client", &mut m);
        assert_eq!(m["stack_client_pacing_dropped_s"], 0.0015);
    }
}
