//! The model's sender in Table 1's rows: a slowed trial's stack blocks,
//! each slowed by its class, filed under the paper's rows.

use record::cpu_profile::{CpuProfile, ThreadRole};
use record::factor::{ClassSpeeds, WorkClass};

/// Where a stack block's time goes in the model's Table 1: the row (an
/// index into [`super::TABLE1`], `None` for work the paper's rows do not hold)
/// and the class whose speed slows it. The checksum is tcp_output's, as
/// in the paper; the copy into the send buffer is write_socket's. Mirrors
/// the stack's own `account::Class::of`.
const STACK_ROWS: [(&str, Option<usize>, WorkClass); 22] = [
    ("socket_copy_in", Some(0), WorkClass::Data),
    ("tcp_output", Some(1), WorkClass::Compute),
    ("ack_generation", Some(1), WorkClass::Compute),
    ("checksum", Some(1), WorkClass::Data),
    ("ip_output", Some(2), WorkClass::Compute),
    ("route_lookup", Some(2), WorkClass::Compute),
    ("device_send", Some(3), WorkClass::Device),
    ("device_send_write", Some(3), WorkClass::Device),
    ("device_receive", Some(4), WorkClass::Device),
    ("device_receive_read", Some(4), WorkClass::Device),
    ("ip_input", Some(5), WorkClass::Compute),
    ("tcp_input_fast", Some(6), WorkClass::Compute),
    ("tcp_input_slow", Some(6), WorkClass::Compute),
    ("pcb_lookup", Some(6), WorkClass::Compute),
    ("reassembly", Some(6), WorkClass::Compute),
    ("device_wait", None, WorkClass::Device),
    ("timers", None, WorkClass::Compute),
    ("buffer_management", None, WorkClass::Compute),
    ("ethernet", None, WorkClass::Compute),
    ("arp", None, WorkClass::Compute),
    ("application", None, WorkClass::Compute),
    ("socket_copy_out", None, WorkClass::Data),
];

/// The model's sender in Table 1's rows: µs per data segment in each row
/// on the slowed stack, and what fell outside the rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRows {
    /// µs per segment in each of [`super::TABLE1`]'s rows.
    pub rows: [f64; 7],
    /// µs per segment in blocks the paper's rows do not hold (the wait's
    /// CPU, timers, buffers) and in no block (the stack's loop), slowed as
    /// their classes are.
    pub outside: f64,
    /// µs per segment the accounting's brackets cost, slowed as
    /// computation: the instrument's, not the 386's.
    pub brackets: f64,
}

/// The sender's stack blocks of an accounted, slowed trial's `profile`
/// in Table 1's rows, each block's own time ÷ its class's speed in
/// `speeds`, per data segment (`segments`). The dilation's spin is not a
/// row: it is the difference between this host's time and the model's.
pub fn model_rows(profile: &CpuProfile, speeds: ClassSpeeds, segments: f64) -> ModelRows {
    let senders: Vec<u32> = profile
        .threads
        .iter()
        .filter(|t| t.role == ThreadRole::Sender)
        .map(|t| t.tid)
        .collect();
    let mut out = ModelRows {
        rows: [0.0; 7],
        outside: 0.0,
        brackets: 0.0,
    };
    for st in profile.stacks.iter().filter(|s| senders.contains(&s.tid)) {
        let Some(&frame) = st.kernel.first().or(st.user.first()) else {
            continue;
        };
        let name = profile
            .symbols
            .get(frame as usize)
            .map_or("", String::as_str);
        let Some(block) = name.strip_prefix(crate::cpu::STACK_BLOCK_PREFIX) else {
            continue;
        };
        if block == "dilation" || block == "idle" {
            continue;
        }
        let (row, class) = STACK_ROWS
            .iter()
            .find(|r| r.0 == block)
            .map_or((None, WorkClass::Compute), |r| (r.1, r.2));
        let us = st.ns as f64 / speeds.of(class) / segments / 1e3;
        match row {
            Some(i) => out.rows[i] += us,
            None if block == "accounting_brackets" => out.brackets += us,
            None => out.outside += us,
        }
    }
    out
}
