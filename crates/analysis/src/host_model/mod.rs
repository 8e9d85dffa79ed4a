//! A paper's machine on tcplab's stack (`--host-model`, issue 29): the
//! paper's cost per segment in each of the stack's work classes, this
//! host's from calibration transfers, and the speeds (paper's ÷ host's)
//! that time dilation plays so the stack's classes take the paper's time.
//!
//! For the 386-33 the paper is Huang & Chen's Table 1 (a 386/33 sending
//! 20 MB, seconds per function block at five segment sizes). Its rows
//! fall into the stack's classes so:
//! - **data** (copies and checksums: work on every byte): the per-byte
//!   parts of write_socket (the copy into the socket buffer, 0.079 µs/B),
//!   tcp_output (the checksum, 0.537 µs/B: the paper puts it at almost 25%
//!   of the sender's time) and driver_out (moving the frame over the AT
//!   bus, 0.923 µs/B: §3 finds more than 90% of the driver's time there),
//!   each the slope of the row's µs per packet against the MSS over
//!   Table 1's five columns (ordinary least squares), × the MSS;
//! - **device**: the rest of driver_out, and driver_input of the ACK (on
//!   this host the TUN system calls, a cost per packet);
//! - **compute**: the rest of write_socket and tcp_output, ip_output, and
//!   ip_input and tcp_input of the ACK.
//!
//! The speeds are set at one segment size (the model's reference, 1024).
//! The paper's other columns then test only whether this host's classes
//! grow with the segment as the 386's did (data per byte, the rest per
//! packet); the slopes come from all five columns, so those columns are
//! not independent of the model, and a model that only scales the
//! reference column's classes so does about as well.
//!
//! A slow sender works differently from a fast one, so this host's own
//! cost per segment depends on the speed it is slowed to: here, at MSS
//! 1024, its computation cost 0.6 µs per segment at full speed, 1.4–3.8
//! µs at a compute speed of 0.03 and 13 µs at 0.0013. The calibration
//! ([`Calibration`]) therefore searches: an undilated transfer gives
//! first speeds (host ÷ model); each slowed transfer after it adds a
//! point (speed, slowed cost) per class, and the next speeds solve a
//! straight line through those points in log–log space for the model's
//! cost (least squares over every slowed transfer, which also pools this
//! host's drift from trial to trial). It stops with the line's speeds
//! once at least [`MIN_SLOWED`] slowed transfers have run and the last
//! took the model's time within [`CONVERGED`] in every class, or after
//! [`CALIBRATION_ROUNDS`] transfers.

use crate::layers::Block;
use crate::models::linear_fit;
use record::factor::{ClassSpeeds, HostModel, TestKind, WorkClass};
use record::TrialParams;
use serde::Serialize;
use std::collections::BTreeMap;

mod calibration;
mod rows;
#[cfg(test)]
mod tests;

pub use calibration::{Calibration, Next, Round};
pub use rows::{model_rows, ModelRows};

/// Table 1's maximum segment sizes, in its column order.
pub const TABLE1_MSS: [u32; 5] = [256, 512, 768, 1024, 1280];

/// Table 1's "Packet Number" row: data packets in 20 MB at each MSS.
pub const TABLE1_PACKETS: [f64; 5] = [80000.0, 40000.0, 26666.0, 20000.0, 16000.0];

/// Table 1's rows (A)–(N): the row's letter and name as printed, its
/// block, and its seconds at each MSS. Row (C) is printed `ip_input`; the
/// paper's text and Table 2 call it IP_output's time, and so it is filed.
pub const TABLE1: [(&str, Block, [f64; 5]); 7] = [
    (
        "(A) write_socket",
        Block::WriteSocket,
        [3.41, 2.53, 2.20, 2.08, 1.98],
    ),
    (
        "(B) tcp_output",
        Block::TcpOutput,
        [21.47, 16.26, 14.51, 13.68, 13.07],
    ),
    (
        "(C) ip_output",
        Block::IpOutput,
        [6.12, 3.06, 2.05, 1.52, 1.29],
    ),
    (
        "(D) driver_out",
        Block::DriverOut,
        [26.25, 22.64, 21.30, 20.72, 20.39],
    ),
    (
        "(L) driver_input (ACK)",
        Block::DriverInput,
        [6.33, 3.13, 2.09, 1.55, 1.21],
    ),
    (
        "(M) ip_input (ACK)",
        Block::IpInput,
        [2.64, 1.32, 0.88, 0.66, 0.47],
    ),
    (
        "(N) tcp_input (ACK)",
        Block::TcpInput,
        [13.69, 6.97, 4.87, 3.44, 2.62],
    ),
];

/// Table 1's "Tx. Time (Sender)" row, seconds.
pub const TABLE1_SENDER_TOTAL: [f64; 5] = [79.20, 55.37, 47.40, 43.39, 41.03];

/// Table 1's column for `mss`, if the paper measured it.
pub fn table1_column(mss: u32) -> Option<usize> {
    TABLE1_MSS.iter().position(|m| *m == mss)
}

/// The paper's µs per data packet of a row's seconds at column `i`.
pub fn us_per_packet(seconds: f64, i: usize) -> f64 {
    seconds / TABLE1_PACKETS[i] * 1e6
}

/// Bytes the first calibration transfer sends at the reference MSS,
/// undilated.
pub const CALIBRATION_BYTES: u64 = 8 << 20;

/// Bytes each later, slowed calibration transfer sends (1,024 segments
/// of 1024 bytes: about two seconds on the 386).
pub const DILATED_CALIBRATION_BYTES: u64 = 1 << 20;

/// Calibration transfers at most, the undilated one included.
pub const CALIBRATION_ROUNDS: usize = 6;

/// Slowed calibration transfers at least: the line through them pools
/// this host's drift (its own computation per segment ranged 2.4–8.0 µs
/// between transfers at compute speeds 0.0085–0.0097).
pub const MIN_SLOWED: usize = 3;

/// How close the last transfer's slowed cost must come to the model's,
/// in every class, for the calibration to stop (a fraction of the
/// model's).
pub const CONVERGED: f64 = 0.10;

/// Why a model's speeds cannot be set.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HostModelError {
    /// The calibration trial lacks a metric the speeds need.
    #[error("the host model's calibration trial has no {0} (was the sender a tcplab stack end with --account on?)")]
    Missing(String),
    /// This host is as slow as the model, or slower, in a class: time
    /// dilation can slow a class, not speed it up.
    #[error("this host's {class} work costs {host_us:.3} µs per segment, no less than the model's {model_us:.3}: dilation cannot make it faster")]
    Faster {
        /// The class.
        class: &'static str,
        /// This host's µs per segment.
        host_us: f64,
        /// The model's.
        model_us: f64,
    },
    /// The model is more than 10,000 times as slow as this host in a
    /// class: slower than `--cpu-speed` goes.
    #[error(
        "the model's {class} work is {ratio:.0} times this host's, beyond --cpu-speed's 10,000"
    )]
    TooSlow {
        /// The class.
        class: &'static str,
        /// The model's cost over this host's.
        ratio: f64,
    },
}

/// Cost per data segment in each class, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ClassCosts {
    /// Protocol computation.
    pub compute: f64,
    /// Copies and checksums.
    pub data: f64,
    /// The device (driver).
    pub device: f64,
}

impl ClassCosts {
    /// The cost of `class`.
    pub fn of(&self, class: WorkClass) -> f64 {
        match class {
            WorkClass::Compute => self.compute,
            WorkClass::Data => self.data,
            WorkClass::Device => self.device,
        }
    }

    /// All three classes.
    pub fn total(&self) -> f64 {
        self.compute + self.data + self.device
    }
}

/// A Table 1 row's per-byte cost: the slope of its µs per packet against
/// the MSS over the five columns (µs per byte).
pub fn per_byte_us(row: &[f64; 5]) -> f64 {
    let points: Vec<(f64, f64)> = (0..5)
        .map(|i| (f64::from(TABLE1_MSS[i]), us_per_packet(row[i], i)))
        .collect();
    linear_fit(&points).map_or(0.0, |f| f.slope.max(0.0))
}

/// The model's cost per segment in each class at Table 1's column `i`.
pub fn paper_costs(model: HostModel, i: usize) -> ClassCosts {
    match model {
        HostModel::I386At33 => {
            let us = |b: Block| {
                TABLE1
                    .iter()
                    .find(|r| r.1 == b)
                    .map_or(0.0, |r| us_per_packet(r.2[i], i))
            };
            let per_byte = |b: Block| {
                TABLE1
                    .iter()
                    .find(|r| r.1 == b)
                    .map_or(0.0, |r| per_byte_us(&r.2))
            };
            let mss = f64::from(TABLE1_MSS[i]);
            let copy = per_byte(Block::WriteSocket) * mss;
            let checksum = per_byte(Block::TcpOutput) * mss;
            let bus = per_byte(Block::DriverOut) * mss;
            ClassCosts {
                compute: us(Block::WriteSocket) - copy + us(Block::TcpOutput) - checksum
                    + us(Block::IpOutput)
                    + us(Block::IpInput)
                    + us(Block::TcpInput),
                data: copy + checksum + bus,
                device: us(Block::DriverOut) - bus + us(Block::DriverInput),
            }
        }
    }
}

/// The model's costs at its reference segment size.
pub fn reference_costs(model: HostModel) -> ClassCosts {
    let i = table1_column(model.reference_mss()).expect("the reference MSS is a Table 1 column");
    paper_costs(model, i)
}

/// The trial that calibrates `p`'s model on this host: a stream at the
/// reference MSS between `p`'s ends (which is tcplab's, which sends),
/// with the model's own mechanisms and nothing else of `p`'s, every block
/// timed: [`CALIBRATION_BYTES`] undilated, or, at `at` (a later round's
/// speeds), [`DILATED_CALIBRATION_BYTES`] with the sender so slowed. So
/// every point of a plan runs the same machine, and a factor swept across
/// them (the checksum, the routes) shows its effect on it.
pub fn calibration_params(
    p: &TrialParams,
    model: HostModel,
    at: Option<ClassSpeeds>,
) -> TrialParams {
    let mut c = TrialParams::defaults(TestKind::TcpStream);
    c.stack = p.stack;
    c.server_stack = p.server_stack;
    c.reverse = p.reverse && matches!(p.test, TestKind::TcpStream | TestKind::UdpStream);
    c.host_model = Some(model);
    model.fill(&mut c, |_| false);
    c.mss = Some(model.reference_mss());
    c.bytes = Some(CALIBRATION_BYTES);
    c.duration_s = None;
    c.account = Some(record::factor::Account::On);
    if let Some(s) = at {
        c.bytes = Some(DILATED_CALIBRATION_BYTES);
        c.cpu_speed = Some(record::factor::CpuSpeed {
            sender: s,
            receiver: ClassSpeeds::FULL,
        });
    }
    c
}

/// This host's µs per data segment in each class, from a calibration
/// trial's metrics, for the stack end `end` (`client` or `server`) that
/// sent: its own time, without what dilation added or what the
/// accounting's brackets cost (the 386 had no instrument: slowed with
/// the rest, they would take about a quarter of its compute budget). Busy time in
/// no block (the stack's loop) counts as computation, as dilation slows
/// it.
pub fn host_costs(
    metrics: &BTreeMap<String, f64>,
    end: &str,
) -> Result<ClassCosts, HostModelError> {
    let get = |name: String| {
        metrics
            .get(&name)
            .copied()
            .filter(|v| v.is_finite())
            .ok_or(HostModelError::Missing(name))
    };
    let segments = get(format!("stack_{end}_segments_out"))?;
    if segments < 1.0 {
        return Err(HostModelError::Missing(format!(
            "stack_{end}_segments_out above 0"
        )));
    }
    let busy = get(format!("stack_{end}_account_busy_s"))?;
    let data = get(format!("stack_{end}_account_data_s"))?;
    let device = get(format!("stack_{end}_account_device_s"))?;
    let spun = metrics
        .get(&format!("stack_{end}_account_dilation_s"))
        .copied()
        .unwrap_or(0.0);
    let brackets = get(format!("stack_{end}_account_bracket_cost_s"))?;
    let per = |s: f64| s * 1e6 / segments;
    Ok(ClassCosts {
        compute: per(busy - spun - brackets - data - device),
        data: per(data),
        device: per(device),
    })
}

/// The speeds at which this host's classes (`host`) take the model's
/// time (`model`): model ÷ host per class.
pub fn speeds(host: ClassCosts, model: ClassCosts) -> Result<ClassSpeeds, HostModelError> {
    let mut f = [1.0; 3];
    for (slot, class) in f.iter_mut().zip(WorkClass::ALL) {
        let (h, m) = (host.of(class), model.of(class));
        if h.is_nan() || h <= 0.0 || h >= m {
            return Err(HostModelError::Faster {
                class: class.name(),
                host_us: h,
                model_us: m,
            });
        }
        *slot = h / m;
    }
    ClassSpeeds::from_fractions(f).ok_or_else(|| {
        let (class, ratio) = WorkClass::ALL
            .into_iter()
            .map(|c| (c, model.of(c) / host.of(c)))
            .fold(
                (WorkClass::Compute, 0.0),
                |a, b| if b.1 > a.1 { b } else { a },
            );
        HostModelError::TooSlow {
            class: class.name(),
            ratio,
        }
    })
}

/// Sets `speeds` on the sending end of `p`, which must be tcplab's stack
/// (the plan refuses a model otherwise): the model is the paper's sender,
/// as calibrated; the receiver keeps this CPU.
pub fn apply(p: &mut TrialParams, speeds: ClassSpeeds) {
    p.cpu_speed = Some(record::factor::CpuSpeed {
        sender: speeds,
        receiver: ClassSpeeds::FULL,
    });
}
