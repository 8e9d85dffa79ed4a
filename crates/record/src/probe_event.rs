//! The probe record as user space sees it: a mirror of `struct probe_event`
//! in `crates/probe/src/bpf/events.h`, decoded from the ring buffer's bytes.

use serde::{Deserialize, Serialize};

/// Size of one record in bytes (`sizeof(struct probe_event)`).
pub const EVENT_SIZE: usize = 64;

/// Version of the record layout, stored with every capture.
pub const EVENT_VERSION: u32 = 1;

/// Where on the path a record was taken. The numbers are stable: they are
/// stored with every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum ProbeId {
    /// `sock_send_length`: the application handed data to the socket
    /// (`seq` write_seq after the call, `x[0]` return value, `x[1]` bytes in
    /// the send queue, `x[2]` SO_SNDBUF).
    SendApp = 1,
    /// `tcp_sendmsg_locked`: TCP began filling a segment with the
    /// application's data, recorded once per segment, not per chunk copied
    /// (`seq` write_seq, `len` tail skb length, `x[0]` size goal, `x[1]`
    /// send-queue bytes, `x[2]` the segment's first sequence number).
    TcpSendmsg = 2,
    /// `net_dev_queue`: IP handed a packet to the device layer.
    DevQueue = 3,
    /// `qdisc_enqueue`: the packet entered the interface queue
    /// (`x[0]` queue length in packets, `x[1]` backlog bytes).
    QdiscEnqueue = 4,
    /// `qdisc_dequeue`: the packet left the interface queue (same extras).
    QdiscDequeue = 5,
    /// `net_dev_start_xmit`: the driver got the packet.
    DevStartXmit = 6,
    /// `net_dev_xmit`: the driver returned (`x[0]` return code, `x[1]` skb length).
    DevXmit = 7,
    /// `netif_receive_skb`: IP input began.
    NetifReceive = 8,
    /// `tcp_probe`: TCP processed an arriving segment
    /// (`x[0]` cwnd, `x[1]` srtt µs, `x[2]` send window, `x[3]` receive window).
    TcpProbe = 9,
    /// `sk_data_ready`: the reader was signalled (`x[0]` bytes queued to read).
    SkDataReady = 10,
    /// `sock_recv_length`: the application read (`seq` copied_seq after the
    /// call, `x[0]` return value, `x[1]` bytes still queued, `x[2]` SO_RCVBUF).
    RecvApp = 11,
    /// `tcp_rcv_space_adjust`: receive-buffer autotuning, recorded only when
    /// SO_RCVBUF or the window clamp changed since the socket's last record
    /// (`x[0]` SO_RCVBUF, `x[1]` window clamp, `x[2]` receive window).
    RcvSpace = 12,
    /// `tcp_retransmit_skb` (`seq`, `len` of the segment, `x[0]` error).
    Retransmit = 13,
    /// `sched_switch` of an experiment thread
    /// (`x[0]` thread switched out, `x[1]` thread switched in, `x[2]` prev state, `x[3]` preempted).
    SchedSwitch = 14,
}

impl ProbeId {
    /// Every probe, in id order.
    pub const ALL: [ProbeId; 14] = [
        ProbeId::SendApp,
        ProbeId::TcpSendmsg,
        ProbeId::DevQueue,
        ProbeId::QdiscEnqueue,
        ProbeId::QdiscDequeue,
        ProbeId::DevStartXmit,
        ProbeId::DevXmit,
        ProbeId::NetifReceive,
        ProbeId::TcpProbe,
        ProbeId::SkDataReady,
        ProbeId::RecvApp,
        ProbeId::RcvSpace,
        ProbeId::Retransmit,
        ProbeId::SchedSwitch,
    ];

    /// The probe with this stored id.
    pub fn from_u8(v: u8) -> Option<ProbeId> {
        ProbeId::ALL.get((v as usize).wrapping_sub(1)).copied()
    }

    /// The kernel tracepoint behind the probe (also its name in reports).
    pub fn tracepoint(self) -> &'static str {
        match self {
            ProbeId::SendApp => "sock_send_length",
            ProbeId::TcpSendmsg => "tcp_sendmsg_locked",
            ProbeId::DevQueue => "net_dev_queue",
            ProbeId::QdiscEnqueue => "qdisc_enqueue",
            ProbeId::QdiscDequeue => "qdisc_dequeue",
            ProbeId::DevStartXmit => "net_dev_start_xmit",
            ProbeId::DevXmit => "net_dev_xmit",
            ProbeId::NetifReceive => "netif_receive_skb",
            ProbeId::TcpProbe => "tcp_probe",
            ProbeId::SkDataReady => "sk_data_ready",
            ProbeId::RecvApp => "sock_recv_length",
            ProbeId::RcvSpace => "tcp_rcv_space_adjust",
            ProbeId::Retransmit => "tcp_retransmit_skb",
            ProbeId::SchedSwitch => "sched_switch",
        }
    }

    /// What the record's four per-probe values (`x[0]`…`x[3]`) hold, by
    /// name, `None` where unused: the column names of `tcplab export
    /// --records` (see each variant). A `return_value` is signed.
    pub fn extra_names(self) -> [Option<&'static str>; 4] {
        match self {
            ProbeId::SendApp => [
                Some("return_value"),
                Some("send_queue_bytes"),
                Some("sndbuf_bytes"),
                None,
            ],
            ProbeId::TcpSendmsg => [
                Some("size_goal_bytes"),
                Some("send_queue_bytes"),
                Some("segment_first_seq"),
                None,
            ],
            ProbeId::QdiscEnqueue | ProbeId::QdiscDequeue => [
                Some("qdisc_packets"),
                Some("qdisc_backlog_bytes"),
                None,
                None,
            ],
            ProbeId::DevXmit => [Some("return_value"), Some("skb_len_bytes"), None, None],
            ProbeId::TcpProbe => [
                Some("cwnd_segments"),
                Some("srtt_us"),
                Some("snd_wnd_bytes"),
                Some("rcv_wnd_bytes"),
            ],
            ProbeId::SkDataReady => [Some("recv_queue_bytes"), None, None, None],
            ProbeId::RecvApp => [
                Some("return_value"),
                Some("recv_queue_bytes"),
                Some("rcvbuf_bytes"),
                None,
            ],
            ProbeId::RcvSpace => [
                Some("rcvbuf_bytes"),
                Some("window_clamp_bytes"),
                Some("rcv_wnd_bytes"),
                None,
            ],
            ProbeId::Retransmit => [Some("return_value"), None, None, None],
            ProbeId::SchedSwitch => [
                Some("prev_tid"),
                Some("next_tid"),
                Some("prev_state"),
                Some("preempted"),
            ],
            ProbeId::DevQueue | ProbeId::DevStartXmit | ProbeId::NetifReceive => [None; 4],
        }
    }

    /// True for probes on packets at the device layer (they carry headers).
    pub fn is_packet(self) -> bool {
        matches!(
            self,
            ProbeId::DevQueue
                | ProbeId::QdiscEnqueue
                | ProbeId::QdiscDequeue
                | ProbeId::DevStartXmit
                | ProbeId::DevXmit
                | ProbeId::NetifReceive
        )
    }
}

/// TCP flag bits as in the header.
pub mod tcp_flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
}

/// One probe record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeEvent {
    /// CLOCK_MONOTONIC nanoseconds.
    pub ts_ns: u64,
    /// skb address (packet probes) or socket address (socket probes): the
    /// identity that follows one packet across queues.
    pub id: u64,
    /// Payload bytes, or the call's byte count.
    pub len: u32,
    /// TCP sequence number.
    pub seq: u32,
    /// TCP acknowledgment number.
    pub ack: u32,
    /// Device index, where known.
    pub ifindex: u32,
    /// Per-probe values; see [`ProbeId`].
    pub x: [u32; 4],
    /// Source port (packets) or local port (sockets).
    pub sport: u16,
    /// Destination port (packets) or remote port (sockets).
    pub dport: u16,
    /// Raw TCP window field.
    pub win: u16,
    /// The probe.
    pub probe: u8,
    /// TCP flags.
    pub flags: u8,
    /// CPU the record was taken on.
    pub cpu: u16,
    /// Thread id current when the record was taken.
    pub tid: u32,
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes([b[o], b[o + 1]])
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_ne_bytes(a)
}

impl ProbeEvent {
    /// Decodes one record (native byte order, as the kernel wrote it).
    pub fn decode(b: &[u8]) -> Option<ProbeEvent> {
        if b.len() < EVENT_SIZE {
            return None;
        }
        let e = ProbeEvent {
            ts_ns: u64_at(b, 0),
            id: u64_at(b, 8),
            len: u32_at(b, 16),
            seq: u32_at(b, 20),
            ack: u32_at(b, 24),
            ifindex: u32_at(b, 28),
            x: [u32_at(b, 32), u32_at(b, 36), u32_at(b, 40), u32_at(b, 44)],
            sport: u16_at(b, 48),
            dport: u16_at(b, 50),
            win: u16_at(b, 52),
            probe: b[54],
            flags: b[55],
            cpu: u16_at(b, 56),
            tid: u32_at(b, 60),
        };
        ProbeId::from_u8(e.probe).map(|_| e)
    }

    /// Lays the record out as `struct probe_event` in `events.h`, as the
    /// kernel writes it: the inverse of [`ProbeEvent::decode`], for records
    /// made in user space (tests, synthetic captures).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let e = self;
        out.extend_from_slice(&e.ts_ns.to_ne_bytes());
        out.extend_from_slice(&e.id.to_ne_bytes());
        for v in [e.len, e.seq, e.ack, e.ifindex] {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        for v in e.x {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [e.sport, e.dport, e.win] {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        out.push(e.probe);
        out.push(e.flags);
        out.extend_from_slice(&e.cpu.to_ne_bytes());
        out.extend_from_slice(&0u16.to_ne_bytes());
        out.extend_from_slice(&e.tid.to_ne_bytes());
    }

    /// The probe that took the record.
    pub fn probe_id(&self) -> ProbeId {
        ProbeId::from_u8(self.probe).expect("decoded records have a known probe")
    }
}

/// Encodes records as the kernel writes them: the inverse of [`decode_all`].
pub fn encode_all(events: &[ProbeEvent]) -> Vec<u8> {
    let mut out = Vec::with_capacity(events.len() * EVENT_SIZE);
    for e in events {
        e.encode_into(&mut out);
    }
    out
}

/// Decodes a blob of records as the kernel wrote them (see [`EVENT_SIZE`]).
pub fn decode_all(blob: &[u8]) -> Vec<ProbeEvent> {
    blob.chunks_exact(EVENT_SIZE)
        .filter_map(ProbeEvent::decode)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let e = ProbeEvent {
            ts_ns: 123456789012,
            id: 0xffff_8880_1234_5678,
            len: 1448,
            seq: 7,
            ack: 9,
            ifindex: 3,
            x: [1, 2, 3, 4],
            sport: 5201,
            dport: 40000,
            win: 512,
            probe: ProbeId::DevQueue as u8,
            flags: tcp_flags::ACK | tcp_flags::PSH,
            cpu: 1,
            tid: 4242,
        };
        let mut b = Vec::new();
        e.encode_into(&mut b);
        assert_eq!(b.len(), EVENT_SIZE);
        assert_eq!(ProbeEvent::decode(&b), Some(e));
        b[54] = 99;
        assert_eq!(ProbeEvent::decode(&b), None);
    }

    #[test]
    fn ids_are_dense_and_named() {
        for (i, p) in ProbeId::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i + 1);
            assert_eq!(ProbeId::from_u8(*p as u8), Some(*p));
            assert!(!p.tracepoint().is_empty());
        }
        assert_eq!(ProbeId::from_u8(0), None);
    }
}
