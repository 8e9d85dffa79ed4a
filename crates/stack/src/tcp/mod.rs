//! TCP's building blocks, each behind a small interface so the state
//! machine (input, output, recovery) can be assembled from them and issue 19
//! can switch each one at construction:
//! - [`rtt`]: RTT estimators (RFC 6298 in nanoseconds, 4.3BSD-Reno's
//!   integer EWMA in ticks) and Karn's rule;
//! - [`cc`]: congestion control (Reno, CUBIC, none);
//! - [`reassembly`]: the receiver's out-of-order queue and the SACK blocks
//!   it reports;
//! - [`sack`]: the sender's RFC 6675 scoreboard (`IsLost`, `NextSeg`, pipe);
//! - [`isn`]: initial sequence numbers per RFC 6528;
//! - [`timers`]: the connection's timers on the injected clock, exact or
//!   on [`bsd_clock`]'s slow and fast ticks (`--timers bsd`);
//! - [`window`]: SWS avoidance, Nagle and the delayed-ACK policy as pure
//!   decisions;
//! - [`pacing`]: rate-based flow control (a pacer on the clock) and the
//!   achieved sending rate.
//!
//! They use only the shared wire meaning (`SeqNumber`, `SackBlocks`) and
//! the clock, never packet bytes.
//!
//! The connection (RFC 9293) is assembled from them, split by concern:
//! - [`tcb`]: the TCB, its switches ([`tcb::TcpConfig`]), buffers,
//!   counters and the application's calls; [`state`]: the eleven states;
//! - [`input`]: segment arrival in CLOSED, LISTEN and SYN-SENT;
//!   [`input_sync`]: in the synchronized states, with RFC 5961;
//!   [`header_prediction`]: Van Jacobson's fast path in front of it;
//! - [`output`]: what to send now, and the timers;
//! - [`options`]: MSS, window scale, SACK and timestamps: what a SYN
//!   offers, what the handshake negotiates, what each segment carries,
//!   and PAWS;
//! - [`recovery`]: ACK processing, fast retransmit, NewReno and SACK recovery;
//! - [`cc_events`]: what the congestion controller hears beside losses
//!   (ACKs with SRTT, whether cwnd was used, the restart after idle);
//! - [`rtt_sampling`]: when an ACK gives an RTT sample (timestamps, Karn's
//!   rule) and RFC 6298 §5.7's 3 s after a SYN timeout;
//! - [`super_segment`]: super-segments for a device that cuts them (TSO);
//! - [`sws_counters`]: window updates and segments by size, what SWS
//!   avoidance changes.

pub mod bsd_clock;
pub mod cc;
pub mod cc_events;
pub mod cwnd_trace;
pub mod header_prediction;
pub mod icmp;
pub mod input;
pub mod input_sync;
pub mod isn;
pub mod loss;
pub mod memory;
pub mod options;
pub mod output;
pub mod pacing;
pub mod reassembly;
pub mod recovery;
pub mod rtt;
pub mod rtt_sampling;
pub mod sack;
pub mod send_in_place;
pub mod state;
pub mod super_segment;
pub mod sws_counters;
pub mod tcb;
pub mod timers;
pub mod window;
