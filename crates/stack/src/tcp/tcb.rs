//! The transmission control block: a connection's sequence variables,
//! negotiated options, buffers, the building blocks it was built from, and
//! its counters. Every mechanism is picked at construction from
//! [`TcpConfig`], so issue 19 only turns switches.
//!
//! The segment-arrival rules live in `input`/`input_sync`, what to send in
//! `output`, loss recovery in `recovery`; the application's calls are here.

use std::collections::VecDeque;
use std::time::Duration;

use super::cc::{CongestionControl, CongestionControlKind, InitialWindow};
use super::isn::{FourTuple, IsnGenerator};
use super::pacing::{FlowControl, Pacer, SendSpan};
use super::reassembly::Reassembly;
use super::rtt::{Rfc6298Config, RttEstimator, RttEstimatorKind, RttTimer};
use super::sack::Scoreboard;
use super::state::State;
use super::timers::{TimerConfig, TimerKind, Timers};
use super::window::{DelayedAck, DelayedAckPolicy, ReceiverSws, SenderPolicy};
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::{TcpControl, TcpRepr};

/// The largest window-scale shift (RFC 7323 §2.3).
pub const MAX_WINDOW_SHIFT: u8 = 14;
/// The MSS assumed when the peer sends none (RFC 9293 §3.7.1).
pub const DEFAULT_MSS: usize = 536;
/// The largest super-segment payload: what fits an IPv4 packet (65535
/// bytes) after a 20-byte IP header and a TCP header of 60.
pub const MAX_SUPER_SEGMENT: usize = 65535 - 20 - 60;

/// How losses found by duplicate ACKs are recovered: the `--recovery` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecoveryKind {
    /// RFC 6582's NewReno: one hole per round trip, cwnd inflated by dup ACKs.
    #[default]
    NewReno,
    /// RFC 6675's SACK-based recovery on the scoreboard (NewReno when the
    /// peer did not permit SACK).
    Sack,
}

/// Every switch a connection is built with.
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// The RTT estimator.
    pub rtt: RttEstimatorKind,
    /// The congestion controller.
    pub congestion: CongestionControlKind,
    /// The initial window (`--initial-window`).
    pub initial_window: InitialWindow,
    /// When received data is acknowledged.
    pub delayed_ack: DelayedAckPolicy,
    /// The receiver's SWS avoidance.
    pub receiver_sws: ReceiverSws,
    /// The sender's SWS avoidance and Nagle.
    pub sender: SenderPolicy,
    /// Fast retransmit's recovery algorithm.
    pub recovery: RecoveryKind,
    /// The header-prediction fast path.
    pub header_prediction: bool,
    /// Window or rate-based flow control (the pacer, [`super::pacing`]).
    pub flow_control: FlowControl,
    /// The MSS this end advertises (what it can receive).
    pub mss: u16,
    /// The send buffer's byte bound.
    pub send_buffer: usize,
    /// The receive buffer's byte bound (RCV.BUFF).
    pub recv_buffer: usize,
    /// Offer window scaling (RFC 7323).
    pub window_scaling: bool,
    /// Offer SACK (RFC 2018).
    pub sack: bool,
    /// Offer timestamps (RFC 7323).
    pub timestamps: bool,
    /// Timer settings.
    pub timers: TimerConfig,
    /// Retransmission timeouts in a row before the connection is dropped
    /// (RFC 9293 §3.8.3's R2; BSD's `TCP_MAXRXTSHIFT` is 12).
    pub max_retransmits: u32,
    /// Probe an idle peer (RFC 1122 §4.2.3.6), off by default as there.
    pub keepalive: bool,
    /// RFC 5961 §7: at most this many challenge ACKs per second (Linux's
    /// `tcp_challenge_ack_limit` is 1000); None sends every one.
    pub challenge_ack_limit: Option<u32>,
    /// The largest segment payload handed to a device that cuts it into
    /// MSS-sized segments (TSO), bytes. It takes effect only where the
    /// device can cut ([`Connection::allow_super_segments`], which the
    /// socket layer calls on an offload device); elsewhere every segment
    /// is at most one MSS.
    pub max_super_segment: usize,
    /// RFC 8985's tail loss probe (see [`super::loss`]).
    pub tail_loss_probe: bool,
    /// Detect a lost retransmission in recovery from SACKs of data sent
    /// after it (see [`super::loss`]).
    pub lost_retransmit_detection: bool,
    /// An active open may take over the 4-tuple of a connection of ours
    /// in TIME-WAIT that used timestamps and entered it at least a second
    /// ago (Linux's `tcp_tw_reuse`; RFC 6191's argument: timestamps keep
    /// the old incarnation's segments apart). Off by default, as RFC 9293
    /// has it; a crr client needs it, or 16,384 ephemeral ports last
    /// 2·MSL / 16,384 of a second per connection.
    pub time_wait_reuse: bool,
}

impl Default for TcpConfig {
    fn default() -> TcpConfig {
        TcpConfig {
            rtt: RttEstimatorKind::Rfc6298(Rfc6298Config::default()),
            congestion: CongestionControlKind::Reno,
            initial_window: InitialWindow::Rfc5681,
            delayed_ack: DelayedAckPolicy::default(),
            receiver_sws: ReceiverSws::default(),
            sender: SenderPolicy::default(),
            recovery: RecoveryKind::default(),
            header_prediction: true,
            flow_control: FlowControl::Window,
            mss: 1460,
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            window_scaling: true,
            sack: true,
            timestamps: true,
            timers: TimerConfig::default(),
            max_retransmits: 12,
            keepalive: false,
            challenge_ack_limit: Some(1000),
            max_super_segment: MAX_SUPER_SEGMENT,
            tail_loss_probe: true,
            lost_retransmit_detection: true,
            time_wait_reuse: false,
        }
    }
}

/// Why a connection ended other than by an orderly close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// The peer answered our SYN with a RST.
    #[error("connection refused")]
    Refused,
    /// The peer reset the connection.
    #[error("connection reset by peer")]
    Reset,
    /// The application aborted it.
    #[error("connection aborted")]
    Aborted,
    /// Too many retransmission timeouts without an ACK, unanswered
    /// keepalives, or a released connection's FIN-WAIT-2 bound ran out.
    #[error("connection timed out")]
    TimedOut,
    /// The interface refused to send to the peer's address: one of its
    /// networks' broadcasts (RFC 1122 §4.2.3.10).
    #[error("the peer's address is not unicast")]
    NotUnicast,
}

/// An outgoing segment: the header meaning plus its own copy of the
/// payload, or (for a socket set that copies it at flush time, see
/// [`Connection::leave_payloads_in_send_buffer`]) the length of the
/// payload still in the connection's send buffer at the header's sequence
/// number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The header (its `payload` field is empty; see [`Segment::repr`]).
    pub header: TcpRepr<'static>,
    /// The payload bytes (empty when they are left in the send buffer).
    pub payload: Vec<u8>,
    /// Payload octets left in the send buffer (0: `payload` holds them).
    pub(crate) in_send_buffer: usize,
}

impl Segment {
    /// A segment that carries its own copy of `payload`.
    pub fn new(header: TcpRepr<'static>, payload: Vec<u8>) -> Segment {
        Segment {
            header,
            payload,
            in_send_buffer: 0,
        }
    }

    /// The payload's length, wherever the bytes are.
    pub fn payload_len(&self) -> usize {
        self.payload.len() + self.in_send_buffer
    }

    /// The segment as the wire layer takes it (its own payload: a
    /// segment whose bytes are in the send buffer shows none).
    pub fn repr(&self) -> TcpRepr<'_> {
        TcpRepr {
            payload: &self.payload,
            ..self.header.clone()
        }
    }
}

/// What a connection counts (issue 18's stack-side metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Segments received.
    pub segments_in: u64,
    /// Segments sent, as on the wire: a super-segment counts as the
    /// segments the device cuts it into.
    pub segments_out: u64,
    /// Super-segments sent (each more than one MSS, for the device to cut).
    pub super_segments_out: u64,
    /// Segments sent again (timeout, fast retransmit, recovery).
    pub retransmits: u64,
    /// Retransmission-timer expiries.
    pub timeouts: u64,
    /// Fast retransmits (recovery entered).
    pub fast_retransmits: u64,
    /// Duplicate ACKs received.
    pub dup_acks: u64,
    /// Segments handled by the header-prediction fast path.
    pub header_prediction_hits: u64,
    /// Challenge ACKs sent (RFC 5961).
    pub challenge_acks: u64,
    /// Challenge ACKs withheld by the rate limit (RFC 5961 §7).
    pub challenge_acks_suppressed: u64,
    /// Segments dropped by the PAWS check (RFC 7323 §5).
    pub paws_drops: u64,
    /// Segments other than RSTs dropped for lacking the timestamps option
    /// once timestamps were negotiated (RFC 7323 §3.2).
    pub timestamp_missing_drops: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
    /// Keepalive probes sent.
    pub keepalive_probes: u64,
    /// Tail loss probes sent (RFC 8985 §7).
    pub loss_probes: u64,
    /// Retransmissions found lost and sent again without a timeout.
    pub lost_retransmits: u64,
    /// Nanoseconds with data queued but the peer's window closed to it.
    pub rwnd_limited_ns: u64,
    /// Nanoseconds with the send buffer full.
    pub sndbuf_limited_ns: u64,
    /// Payload octets sent again (the bytes behind `retransmits`).
    pub retransmitted_bytes: u64,
    /// The most octets ever in flight (SND.MAX − SND.UNA after a send):
    /// shows whether a window above 64 KB was used.
    pub max_in_flight: u64,
    /// Segments sent advertising a zero receive window.
    pub zero_windows_sent: u64,
    /// Output passes in which Nagle alone held queued data back (the
    /// window allowed it, with `--nagle off` it would have gone).
    pub nagle_holds: u64,
    /// Window updates and data segments by size (`--sws`).
    pub sws: super::sws_counters::SwsCounters,
    /// Payload octets sent in data segments and when the first and last
    /// left: the achieved sending rate ([`SendSpan::rate_bps`]).
    pub data_out: SendSpan,
    /// Nanoseconds of its schedule the pacer gave up ([`Pacer::dropped_ns`]).
    pub pacing_dropped_ns: u64,
    /// Out-of-order bytes the reassembly queue's piece cap dropped
    /// (`reassembly::max_pieces`): a peer's flood of tiny segments.
    pub ooo_pruned_bytes: u64,
    /// SACKed ranges the scoreboard's range cap dropped
    /// (`Scoreboard::max_ranges`): a peer SACKing tiny ranges.
    pub sack_ranges_pruned: u64,
    /// Segments whose checksum was patched by RFC 1624 from the last one
    /// summed instead of summed whole (`--checksum incremental`: a pure
    /// ACK written from the connection's ACK template).
    pub incremental_checksums: u64,
}

/// Accumulates the time a condition holds, sampled at each event.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LimitClock {
    since: Option<Instant>,
}

impl LimitClock {
    /// The condition is `holds` at `now`; returns nanoseconds to add.
    pub(crate) fn update(&mut self, holds: bool, now: Instant) -> u64 {
        let mut add = 0;
        if let Some(since) = self.since {
            add = now.since(since).as_nanos() as u64;
        }
        self.since = holds.then_some(now);
        add
    }
}

/// Loss-recovery state (RFC 6582 / RFC 6675).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Recovery {
    /// In recovery until SND.UNA passes this ("recover" / RecoveryPoint).
    pub(crate) point: Option<SeqNumber>,
    /// NewReno's cwnd inflation by duplicate ACKs, bytes.
    pub(crate) inflation: usize,
    /// Consecutive duplicate ACKs.
    pub(crate) dup_acks: usize,
    /// RFC 6582's "recover": the highest sequence sent at the last loss,
    /// pulled up to SND.UNA once passed, so it never falls 2^31 behind.
    pub(crate) recover: SeqNumber,
    /// Retransmission timeouts since SND.UNA last advanced.
    pub(crate) consecutive_timeouts: u32,
}

/// One TCP connection (RFC 9293's TCB and the machinery around it).
#[derive(Debug)]
pub struct Connection {
    pub(crate) config: TcpConfig,
    pub(crate) tuple: FourTuple,
    pub(crate) state: State,
    pub(crate) error: Option<ConnectionError>,
    // Send sequence variables.
    pub(crate) iss: SeqNumber,
    pub(crate) snd_una: SeqNumber,
    pub(crate) snd_nxt: SeqNumber,
    /// The highest SND.NXT so far: below it, a send is a retransmission
    /// (except the octet of `window_probe`).
    pub(crate) snd_max: SeqNumber,
    /// The octet a zero-window probe carried past all data sent before
    /// (SND.MAX is one past it, so an ACK of it is acceptable): its first
    /// send as data is not a retransmission.
    pub(crate) window_probe: Option<SeqNumber>,
    pub(crate) snd_wnd: usize,
    pub(crate) max_snd_wnd: usize,
    pub(crate) snd_wl1: SeqNumber,
    pub(crate) snd_wl2: SeqNumber,
    // Receive sequence variables.
    pub(crate) irs: SeqNumber,
    pub(crate) rcv_nxt: SeqNumber,
    /// RCV.NXT + RCV.WND as last advertised (never moved left).
    pub(crate) rcv_adv: SeqNumber,
    /// RCV.NXT as last acknowledged (RFC 7323's Last.ACK.sent).
    pub(crate) last_ack_sent: SeqNumber,
    // Options.
    pub(crate) snd_mss: usize,
    pub(crate) snd_shift: u8,
    pub(crate) rcv_shift: u8,
    pub(crate) sack_ok: bool,
    pub(crate) ts_ok: bool,
    pub(crate) ts_recent: Option<u32>,
    /// When TS.Recent was last set (it expires 24 days on, RFC 7323 §5.5).
    pub(crate) ts_recent_at: Instant,
    /// The TSecr of the segment being processed (with an ACK), for
    /// `rtt_sampling`.
    pub(crate) seg_tsecr: Option<u32>,
    // Buffers: `send_buf[0]` is the octet at SND.UNA once the SYN is acked.
    pub(crate) send_buf: VecDeque<u8>,
    pub(crate) recv_buf: VecDeque<u8>,
    /// Spare payload buffers a data segment is copied into instead of a
    /// new allocation: lent by the socket set for one call
    /// ([`Connection::lend_payloads`]), empty otherwise.
    pub(crate) payload_pool: Vec<Vec<u8>>,
    /// Data segments name their payload in `send_buf` instead of copying
    /// it ([`Connection::leave_payloads_in_send_buffer`]).
    pub(crate) payload_in_place: bool,
    pub(crate) reassembly: Reassembly,
    /// A FIN received ahead of RCV.NXT, applied when the data reaches it.
    pub(crate) peer_fin_at: Option<SeqNumber>,
    pub(crate) fin_queued: bool,
    /// Our FIN has been acknowledged.
    pub(crate) fin_acked: bool,
    /// The application released the connection ([`Connection::release`]).
    pub(crate) released: bool,
    /// The peer permitted window scaling and we offered it.
    pub(crate) ws_ok: bool,
    // Building blocks.
    pub(crate) rtt: Box<dyn RttEstimator>,
    pub(crate) rtt_timer: RttTimer,
    pub(crate) cc: Box<dyn CongestionControl>,
    /// How much of cwnd the sender used lately (`cc_events`).
    pub(crate) cwnd_use: super::cc_events::CwndUse,
    /// cwnd at the first loss events (`cwnd_trace`).
    pub(crate) cwnd_trace: Vec<super::cwnd_trace::CwndEvent>,
    pub(crate) scoreboard: Scoreboard,
    pub(crate) recovery: Recovery,
    pub(crate) loss: super::loss::LossState,
    pub(crate) delack: DelayedAck,
    pub(crate) timers: Timers,
    /// An ACK must go out with the next output pass.
    pub(crate) ack_now: bool,
    pub(crate) counters: Counters,
    /// (start of the current second, challenge ACKs sent in it).
    pub(crate) challenge_window: (Instant, u32),
    pub(crate) rwnd_clock: LimitClock,
    pub(crate) sndbuf_clock: LimitClock,
    /// The largest segment payload output may build (0: one MSS).
    pub(crate) super_segment_limit: usize,
    /// When the next data segment may leave under rate-based flow control.
    pub(crate) pacer: Pacer,
}

impl Connection {
    fn new(config: TcpConfig, tuple: FourTuple, iss: SeqNumber, state: State) -> Connection {
        let mss = DEFAULT_MSS;
        let rcv_shift = if config.window_scaling {
            window_shift_for(config.recv_buffer)
        } else {
            0
        };
        Connection {
            tuple,
            state,
            error: None,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_max: iss,
            window_probe: None,
            snd_wnd: 0,
            max_snd_wnd: 0,
            snd_wl1: SeqNumber(0),
            snd_wl2: iss,
            irs: SeqNumber(0),
            rcv_nxt: SeqNumber(0),
            rcv_adv: SeqNumber(0),
            last_ack_sent: SeqNumber(0),
            snd_mss: mss,
            snd_shift: 0,
            rcv_shift,
            sack_ok: false,
            ts_ok: false,
            ts_recent: None,
            ts_recent_at: Instant::ZERO,
            seg_tsecr: None,
            send_buf: VecDeque::new(),
            recv_buf: VecDeque::new(),
            payload_pool: Vec::new(),
            payload_in_place: false,
            reassembly: Reassembly::new(SeqNumber(0), config.recv_buffer),
            peer_fin_at: None,
            fin_queued: false,
            fin_acked: false,
            released: false,
            ws_ok: false,
            rtt: config.rtt.build(),
            rtt_timer: RttTimer::default(),
            cc: config.congestion.build_with(mss, config.initial_window),
            cwnd_use: Default::default(),
            cwnd_trace: Vec::new(),
            scoreboard: Scoreboard::new(iss, mss),
            recovery: Recovery {
                recover: iss,
                ..Recovery::default()
            },
            loss: super::loss::LossState::default(),
            delack: DelayedAck::new(config.delayed_ack),
            timers: Timers::new(config.timers),
            ack_now: false,
            counters: Counters::default(),
            challenge_window: (Instant::ZERO, 0),
            rwnd_clock: LimitClock::default(),
            sndbuf_clock: LimitClock::default(),
            super_segment_limit: 0,
            pacer: Pacer::new(config.flow_control),
            config,
        }
    }

    /// An active open: the connection is in SYN-SENT and `poll_output`
    /// (or any event) emits the SYN. The ISN comes from `isn` (RFC 6528).
    pub fn open_active(
        config: TcpConfig,
        tuple: FourTuple,
        isn: &IsnGenerator,
        now: Instant,
    ) -> Connection {
        Connection::new(config, tuple, isn.isn(&tuple, now), State::SynSent)
    }

    /// A passive open on `tuple` (the socket layer makes one per arriving
    /// SYN's 4-tuple): the connection waits in LISTEN. It serves one
    /// handshake: a RST in SYN-RECEIVED closes it (the embryonic
    /// connection is dropped; the listener that made it stays).
    pub fn listen(
        config: TcpConfig,
        tuple: FourTuple,
        isn: &IsnGenerator,
        now: Instant,
    ) -> Connection {
        Connection::new(config, tuple, isn.isn(&tuple, now), State::Listen)
    }

    /// A passive open that takes over the 4-tuple of a connection of ours
    /// ended in TIME-WAIT by the SYN it answers (RFC 6191; RFC 9293
    /// §3.6.1's MAY-2): its ISN must lie above every sequence number the
    /// old incarnation used, `old_snd_max`, so an old duplicate of the
    /// old data cannot land in the new window. As Linux
    /// (`tw_snd_nxt + 65535 + 2`): a window's worth above it.
    pub fn listen_after_time_wait(
        config: TcpConfig,
        tuple: FourTuple,
        old_snd_max: SeqNumber,
    ) -> Connection {
        Connection::new(config, tuple, old_snd_max + 65537usize, State::Listen)
    }

    /// Queues as much of `data` as the send buffer holds; returns how much.
    pub fn send(&mut self, data: &[u8]) -> usize {
        if !self.state.sends_data() || self.fin_queued {
            return 0;
        }
        let _b = crate::account::enter(crate::account::Block::SocketCopyIn);
        let room = self.config.send_buffer.saturating_sub(self.send_buf.len());
        let n = room.min(data.len());
        self.send_buf.extend(&data[..n]);
        crate::account::payload(n, 0);
        n
    }

    /// Bytes that `send` would accept now.
    pub fn send_capacity(&self) -> usize {
        self.config.send_buffer.saturating_sub(self.send_buf.len())
    }

    /// Reads received in-order data into `out`; returns how much.
    pub fn recv(&mut self, out: &mut [u8]) -> usize {
        let _b = crate::account::enter(crate::account::Block::SocketCopyOut);
        let n = out.len().min(self.recv_buf.len());
        crate::account::payload(0, n);
        // Two slice copies (the ring's halves), not a byte at a time.
        let (front, back) = self.recv_buf.as_slices();
        let first = n.min(front.len());
        out[..first].copy_from_slice(&front[..first]);
        out[first..n].copy_from_slice(&back[..n - first]);
        self.recv_buf.drain(..n);
        if n > 0 {
            if self.recv_buf.is_empty()
                && self.delack.on_application_drained() == super::window::AckDecision::Now
            {
                self.ack_now = true;
            }
            // A window update when reading at least doubled the window the
            // peer sees (Linux's `tcp_cleanup_rbuf` rule; a zero window
            // always qualifies), so reads do not defeat delayed ACKs.
            let wnd = self.receive_window();
            let advertised = self.rcv_adv.max(self.rcv_nxt) - self.rcv_nxt;
            if wnd > advertised && advertised * 2 <= wnd {
                self.ack_now = true;
            }
        }
        n
    }

    /// Bytes ready for `recv`.
    pub fn recv_queued(&self) -> usize {
        self.recv_buf.len()
    }

    /// The application is done sending: a FIN follows the queued data.
    pub fn close(&mut self) {
        match self.state {
            // §3.10.4: "delete the TCB": no timer may outlive it (the
            // SYN's retransmission timer did, and fired in CLOSED).
            State::Listen | State::SynSent => self.enter_closed(None),
            // In SYN-RECEIVED the FIN waits until our SYN is acknowledged
            // (§3.10.4's "queue for processing after entering
            // ESTABLISHED"): we do not take the diagram's direct arc to
            // FIN-WAIT-1 even with nothing queued, as a FIN before the
            // SYN is acknowledged would need its sequence number ahead of
            // an unacknowledged SYN. The FIN goes with the ACK that moves
            // the connection to FIN-WAIT-1 (`input_sync`).
            State::SynReceived => self.fin_queued = true,
            State::Established => {
                self.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// The application let go of the connection: it closed the socket,
    /// not only its sending half, and will read nothing more. As
    /// [`Connection::close`], and a released connection waits in
    /// FIN-WAIT-2 at most [`TimerConfig::fin_wait_2`] (from when it entered
    /// FIN-WAIT-2 released, or was released in it) for the peer's FIN, as
    /// Linux bounds an orphaned socket's; a half-closed one waits as long
    /// as the peer likes.
    pub fn release(&mut self) {
        self.close();
        self.released = true;
    }

    /// Drops the connection at once; returns the RST to send, if the peer
    /// knows of the connection (RFC 9293 §3.10.5).
    pub fn abort(&mut self) -> Option<Segment> {
        self.drop_with_reset(ConnectionError::Aborted)
    }

    /// Ends the connection with `error`; returns the RST that tells the
    /// peer, if it knows of the connection.
    fn drop_with_reset(&mut self, error: ConnectionError) -> Option<Segment> {
        let rst = match self.state {
            State::SynReceived
            | State::Established
            | State::FinWait1
            | State::FinWait2
            | State::CloseWait => {
                // SND.MAX as for an ACK ([`Connection::ack_seq`]): after a
                // timeout took SND.NXT back, a RST there is left of a
                // peer's window that holds everything sent, and RFC 9293
                // §3.10.7.4 / RFC 5961 §3 have it dropped unheard.
                let mut h = TcpRepr::bare(self.local_port(), self.remote_port(), self.ack_seq());
                h.control = TcpControl::Rst;
                Some(Segment::new(h, Vec::new()))
            }
            _ => None,
        };
        self.enter_closed(Some(error));
        if rst.is_some() {
            self.counters.segments_out += 1;
        }
        rst
    }

    /// In an output pass: a released connection in FIN-WAIT-2 has its
    /// bound running.
    pub(crate) fn arm_fin_wait_2_if_released(&mut self, now: Instant) {
        if self.released
            && self.state == State::FinWait2
            && self.timers.deadline(TimerKind::FinWait2).is_none()
        {
            let bound = self.timers.config().fin_wait_2;
            self.timers.arm_after(TimerKind::FinWait2, now, bound);
        }
    }

    /// FIN-WAIT-2's bound ran out without the peer's FIN: the connection
    /// ends, and a RST tells the peer (as Linux's `tcp_fin_timeout` does;
    /// BSD drops it silently).
    pub(crate) fn on_fin_wait_2_timeout(&mut self, out: &mut Vec<Segment>) {
        if self.state == State::FinWait2 {
            out.extend(self.drop_with_reset(ConnectionError::TimedOut));
        }
    }

    /// Swaps `pool` (spare, empty payload buffers) with the connection's
    /// own: a socket set lends its pool before a call that may send data
    /// and takes what is left back after it, so segments reuse the
    /// buffers of segments already sent rather than allocate.
    pub fn lend_payloads(&mut self, pool: &mut Vec<Vec<u8>>) {
        std::mem::swap(&mut self.payload_pool, pool);
    }

    /// When `on_timer` must next be called, if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    /// When TIME-WAIT began, if the connection is in it (on BSD's clocks,
    /// whose 2·MSL ends at a slow tick up to one tick early, the latest it
    /// can have: never longer ago than it was).
    pub fn time_wait_since(&self) -> Option<Instant> {
        if self.state != State::TimeWait {
            return None;
        }
        let end = self.timers.deadline(TimerKind::TimeWait)?;
        let mut span = self.timers.config().msl * 2;
        if let super::timers::TimerClock::Bsd(c) = self.timers.config().clock {
            span = span.saturating_sub(c.slow);
        }
        Some(Instant(end.nanos().saturating_sub(span.as_nanos() as u64)))
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Why the connection ended abnormally, if it did.
    pub fn error(&self) -> Option<ConnectionError> {
        self.error
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The congestion window, bytes.
    pub fn cwnd(&self) -> usize {
        self.cc.cwnd()
    }

    /// The smoothed RTT, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// The retransmission timeout now in force (in whole slow ticks on
    /// BSD's clocks).
    pub fn rto(&self) -> Duration {
        self.rto_in_force()
    }

    /// The peer's MSS as negotiated (Eff.snd.MSS before options).
    pub fn send_mss(&self) -> usize {
        self.snd_mss
    }

    /// (send shift, receive shift) of window scaling; zeros when off.
    pub fn window_shifts(&self) -> (u8, u8) {
        (self.snd_shift, self.rcv_shift)
    }

    /// Whether SACK and timestamps were negotiated.
    pub fn sack_and_timestamps(&self) -> (bool, bool) {
        (self.sack_ok, self.ts_ok)
    }

    /// SND.UNA, SND.NXT and RCV.NXT.
    pub fn sequence_points(&self) -> (SeqNumber, SeqNumber, SeqNumber) {
        (self.snd_una, self.snd_nxt, self.rcv_nxt)
    }

    /// The peer's window (scaled), bytes.
    pub fn send_window(&self) -> usize {
        self.snd_wnd
    }

    /// The 4-tuple.
    pub fn tuple(&self) -> FourTuple {
        self.tuple
    }

    pub(crate) fn local_port(&self) -> u16 {
        self.tuple.local.port()
    }

    pub(crate) fn remote_port(&self) -> u16 {
        self.tuple.remote.port()
    }

    /// The window to offer now (RCV.WND), per the receiver-SWS switch.
    pub(crate) fn receive_window(&self) -> usize {
        let current = if self.rcv_adv > self.rcv_nxt {
            self.rcv_adv - self.rcv_nxt
        } else {
            0
        };
        let max = (u16::MAX as usize) << self.rcv_shift;
        self.config
            .receiver_sws
            .window(
                self.config.recv_buffer,
                self.recv_buf.len(),
                current,
                self.snd_mss,
            )
            .min(max)
    }

    /// Moves to CLOSED, stopping every timer.
    pub(crate) fn enter_closed(&mut self, error: Option<ConnectionError>) {
        self.state = State::Closed;
        if error.is_some() {
            self.error = error;
        }
        self.timers = Timers::new(self.config.timers);
        self.send_buf.clear();
    }
}

/// The smallest shift that lets `buffer` bytes be advertised (RFC 7323 §2.3,
/// at most 14).
pub fn window_shift_for(buffer: usize) -> u8 {
    let mut shift = 0u8;
    while shift < MAX_WINDOW_SHIFT && (u16::MAX as usize) << shift < buffer {
        shift += 1;
    }
    shift
}

#[cfg(test)]
#[path = "tcb_tests.rs"]
mod tests;
