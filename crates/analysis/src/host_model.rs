//! A paper's machine on tcplab's stack (`--host-model`, issue 29): the
//! paper's cost per segment in each of the stack's work classes, this
//! host's from a calibration transfer, and the speeds (paper's ÷ host's)
//! that time dilation plays so the stack's classes take the paper's time.
//!
//! For the 386-33 the paper is Huang & Chen's Table 1 (a 386/33 sending
//! 20 MB, seconds per function block at five segment sizes). Its rows
//! fall into the stack's classes so:
//! - **data** (copies and checksums): the per-byte parts of write_socket
//!   (the copy into the socket buffer) and of tcp_output (the checksum,
//!   which the paper puts at almost 25% of the sender's time), each the
//!   slope of the row's µs per packet against the MSS over Table 1's five
//!   columns (ordinary least squares);
//! - **device** (the driver): driver_out (>90% of it moving the frame over
//!   the AT bus, §4) and driver_input of the ACK;
//! - **compute**: the rest of write_socket and tcp_output, ip_output, and
//!   ip_input and tcp_input of the ACK.
//!
//! The speeds are set at one segment size (the model's reference, 1024);
//! the paper's other columns, and each block's share within its class,
//! are then predictions that can fail.
//!
//! A slow sender works differently from a fast one: each poll round takes
//! in one ACK and sends one segment instead of a batch, so this host's
//! own (undilated) cost per segment is higher at the model's speed than
//! at full speed (2.6–3.6× per class for the 386 here). The calibration
//! therefore iterates: an undilated transfer gives first speeds, then
//! dilated transfers at the last speeds measure this host's cost in the
//! slow regime, until each class's dilated cost lands within
//! [`CONVERGED`] of the model's ([`next_speeds`], which damps the
//! speeds' swing from round to round).

use crate::layers::Block;
use crate::models::linear_fit;
use record::cpu_profile::{CpuProfile, ThreadRole};
use record::factor::{ClassSpeeds, HostModel, TestKind, WorkClass};
use record::TrialParams;
use std::collections::BTreeMap;

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

/// Bytes each later, dilated calibration transfer sends (1,024 segments
/// of 1024 bytes: about two seconds on the 386).
pub const DILATED_CALIBRATION_BYTES: u64 = 1 << 20;

/// How close each class's dilated cost must come to the model's for the
/// calibration to stop (a fraction of the model's).
pub const CONVERGED: f64 = 0.10;

/// Calibration transfers at most, the undilated one included.
pub const CALIBRATION_ROUNDS: usize = 6;

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
#[derive(Debug, Clone, Copy, PartialEq)]
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
            let data = (per_byte(Block::WriteSocket) + per_byte(Block::TcpOutput)) * mss;
            ClassCosts {
                compute: us(Block::WriteSocket) + us(Block::TcpOutput) - data
                    + us(Block::IpOutput)
                    + us(Block::IpInput)
                    + us(Block::TcpInput),
                data,
                device: us(Block::DriverOut) + us(Block::DriverInput),
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
/// reference MSS with `p`'s ends, place and mechanisms and every block
/// timed: [`CALIBRATION_BYTES`] undilated, or, at `at` (a later round's
/// speeds), [`DILATED_CALIBRATION_BYTES`] with the sender so slowed.
pub fn calibration_params(
    p: &TrialParams,
    model: HostModel,
    at: Option<ClassSpeeds>,
) -> TrialParams {
    let mut c = p.clone();
    if c.test != TestKind::TcpStream {
        c.test = TestKind::TcpStream;
        c.write_size = TrialParams::defaults(TestKind::TcpStream).write_size;
    }
    c.mss = Some(model.reference_mss());
    c.bytes = Some(CALIBRATION_BYTES);
    c.duration_s = None;
    c.parallel = 1;
    c.cpu_speed = None;
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

/// What a calibration round at `at` (None: undilated) found, given this
/// host's undilated cost per segment in it (`host`): `Ok(None)` when
/// every class's dilated cost (`host` ÷ speed) is within [`CONVERGED`]
/// of the model's, so `at` stands; else the next round's speeds: host ÷
/// model after the undilated round, then the geometric mean of that and
/// `at`.
pub fn next_speeds(
    host: ClassCosts,
    model: ClassCosts,
    at: Option<ClassSpeeds>,
) -> Result<Option<ClassSpeeds>, HostModelError> {
    if let Some(s) = at {
        let within = WorkClass::ALL.into_iter().all(|c| {
            let dilated = host.of(c) / s.of(c);
            (dilated - model.of(c)).abs() <= CONVERGED * model.of(c)
        });
        if within {
            return Ok(None);
        }
    }
    let target = speeds(host, model)?;
    let Some(last) = at else {
        return Ok(Some(target));
    };
    // This host's own cost rises as the sender slows, so host ÷ model
    // overshoots each way in turn; the geometric mean of the last speeds
    // and it damps the swing.
    let damped = WorkClass::ALL.map(|c| (last.of(c) * target.of(c)).sqrt());
    Ok(Some(ClassSpeeds::from_fractions(damped).unwrap_or(target)))
}

/// This host's µs per data segment in each class, from a calibration
/// trial's metrics, for the stack end `end` (`client` or `server`) that
/// sent: its own time, without what dilation added. Busy time in no
/// block (the loop, the brackets) counts as computation, as dilation
/// slows it.
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
    let per = |s: f64| s * 1e6 / segments;
    Ok(ClassCosts {
        compute: per(busy - spun - data - device),
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

/// Sets `speeds` on the ends of `p` that are tcplab's stack (a Linux end
/// keeps this CPU: its work is the kernel's). `sender_is_client` says
/// which end sends the trial's data.
pub fn apply(p: &mut TrialParams, speeds: ClassSpeeds, sender_is_client: bool) {
    let (sender, receiver) = if sender_is_client {
        (p.stack, p.server_stack)
    } else {
        (p.server_stack, p.stack)
    };
    let side = |tcplab: bool| if tcplab { speeds } else { ClassSpeeds::FULL };
    p.cpu_speed = Some(record::factor::CpuSpeed {
        sender: side(sender.is_tcplab()),
        receiver: side(receiver.is_tcplab()),
    });
}

/// Where a stack block's time goes in the model's Table 1: the row (an
/// index into [`TABLE1`], `None` for work the paper's rows do not hold)
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
    /// µs per segment in each of [`TABLE1`]'s rows.
    pub rows: [f64; 7],
    /// µs per segment in blocks the paper's rows do not hold (the wait's
    /// CPU, timers, buffers) and outside every block (the loop, the
    /// brackets), slowed as their classes are.
    pub outside: f64,
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
            None => out.outside += us,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_386s_classes_add_up_to_table_1s_rows() {
        for i in 0..5 {
            let c = paper_costs(HostModel::I386At33, i);
            let rows: f64 = TABLE1.iter().map(|r| us_per_packet(r.2[i], i)).sum();
            assert!(
                (c.total() - rows).abs() < 1e-9,
                "column {i}: {c:?} against {rows}"
            );
            assert!(c.compute > 0.0 && c.data > 0.0 && c.device > 0.0, "{c:?}");
        }
    }

    #[test]
    fn the_checksum_slope_is_about_a_quarter_of_the_sender_at_1024() {
        // The paper: "the TCP checksum computation takes up almost 25% of
        // the overall time". tcp_output's per-byte slope at MSS 1024
        // against the sender's total per packet.
        let i = table1_column(1024).unwrap();
        let checksum = per_byte_us(&TABLE1[1].2) * 1024.0;
        let share = checksum / us_per_packet(TABLE1_SENDER_TOTAL[i], i);
        assert!((0.22..0.28).contains(&share), "{share}");
        // Data grows with the MSS, per-packet compute falls.
        let (small, large) = (
            paper_costs(HostModel::I386At33, 0),
            paper_costs(HostModel::I386At33, 4),
        );
        assert!(large.data > 4.0 * small.data);
        assert!(large.compute < small.compute);
    }

    #[test]
    fn a_faster_host_gets_a_slower_speed_and_the_other_way_round() {
        let model = ClassCosts {
            compute: 1000.0,
            data: 500.0,
            device: 1000.0,
        };
        let host = ClassCosts {
            compute: 2.0,
            data: 1.0,
            device: 5.0,
        };
        let s = speeds(host, model).unwrap();
        assert!((s.of(WorkClass::Compute) - 0.002).abs() < 1e-6);
        assert!((s.of(WorkClass::Data) - 0.002).abs() < 1e-6);
        assert!((s.of(WorkClass::Device) - 0.005).abs() < 1e-6);
        let twice = ClassCosts {
            compute: 4.0,
            ..host
        };
        let s2 = speeds(twice, model).unwrap();
        assert!(s2.of(WorkClass::Compute) > s.of(WorkClass::Compute));
        // A host slower than the model in a class cannot be dilated to it.
        let slow = ClassCosts {
            device: 2000.0,
            ..host
        };
        assert!(matches!(
            speeds(slow, model),
            Err(HostModelError::Faster {
                class: "device",
                ..
            })
        ));
        // Nor one 10,000 times as fast.
        let fast = ClassCosts { data: 0.01, ..host };
        assert!(matches!(
            speeds(fast, model),
            Err(HostModelError::TooSlow { class: "data", .. })
        ));
    }

    #[test]
    fn host_costs_count_busy_time_outside_blocks_as_computation() {
        let mut m = BTreeMap::new();
        m.insert("stack_client_segments_out".to_string(), 1000.0);
        m.insert("stack_client_account_busy_s".to_string(), 0.010);
        m.insert("stack_client_account_data_s".to_string(), 0.002);
        m.insert("stack_client_account_device_s".to_string(), 0.005);
        let c = host_costs(&m, "client").unwrap();
        assert!((c.compute - 3.0).abs() < 1e-9 && (c.data - 2.0).abs() < 1e-9);
        assert!((c.device - 5.0).abs() < 1e-9);
        assert!(matches!(
            host_costs(&m, "server"),
            Err(HostModelError::Missing(_))
        ));
        // On a slowed trial, the spins are not this host's work.
        m.insert("stack_client_account_busy_s".to_string(), 1.010);
        m.insert("stack_client_account_dilation_s".to_string(), 1.0);
        assert!((host_costs(&m, "client").unwrap().compute - 3.0).abs() < 1e-9);
    }

    #[test]
    fn calibration_is_an_undilated_accounted_stream_at_the_reference_mss() {
        let mut p = TrialParams::defaults(TestKind::TcpRr);
        p.mss = Some(256);
        p.cpu_speed = record::factor::CpuSpeed::parse("0.5").ok();
        let c = calibration_params(&p, HostModel::I386At33, None);
        assert_eq!(c.test, TestKind::TcpStream);
        assert_eq!(c.mss, Some(1024));
        assert_eq!(c.cpu_speed, None);
        assert_eq!(c.account, Some(record::factor::Account::On));
        assert_eq!(c.bytes, Some(CALIBRATION_BYTES));
        let at = ClassSpeeds::from_fractions([0.004, 0.001, 0.008]).unwrap();
        let d = calibration_params(&p, HostModel::I386At33, Some(at));
        assert_eq!(
            d.cpu_speed.map(|c| (c.sender, c.receiver)),
            Some((at, ClassSpeeds::FULL))
        );
        assert_eq!(d.bytes, Some(DILATED_CALIBRATION_BYTES));
    }

    #[test]
    fn calibration_stops_when_every_class_lands_on_the_model() {
        let model = ClassCosts {
            compute: 400.0,
            data: 600.0,
            device: 1100.0,
        };
        let fast = ClassCosts {
            compute: 2.0,
            data: 0.6,
            device: 11.0,
        };
        // Undilated: first speeds, host ÷ model.
        let first = next_speeds(fast, model, None).unwrap().unwrap();
        assert!((first.of(WorkClass::Compute) - 0.005).abs() < 1e-6);
        // Slowed, this host's own cost per segment rose: another round,
        // at speeds from the slow regime's costs.
        let slow = ClassCosts {
            compute: 6.0,
            data: 1.2,
            device: 22.0,
        };
        let second = next_speeds(slow, model, Some(first)).unwrap().unwrap();
        // Halfway (geometrically) from 0.01 to host ÷ model = 0.02.
        let device = (0.01f64 * 0.02).sqrt();
        assert!((second.of(WorkClass::Device) - device).abs() < 1e-6);
        // At the speeds where the same costs land on the model: done.
        let exact = ClassSpeeds::from_fractions([0.015, 0.002, 0.02]).unwrap();
        assert_eq!(next_speeds(slow, model, Some(exact)), Ok(None));
        // One class 11% off is not done.
        let off = ClassCosts {
            data: 1.2 * 1.11,
            ..slow
        };
        assert!(next_speeds(off, model, Some(exact)).unwrap().is_some());
    }

    fn profile(stacks: &[(u32, &str, bool, u64)]) -> CpuProfile {
        use record::cpu_profile::{ProfiledStack, ProfiledThread};
        let mut symbols: Vec<String> = Vec::new();
        let stacks = stacks
            .iter()
            .map(|(tid, sym, kernel, ns)| {
                symbols.push(format!("tcplab_stack::{sym}"));
                let f = vec![(symbols.len() - 1) as u32];
                let (k, u) = if *kernel { (f, vec![]) } else { (vec![], f) };
                ProfiledStack {
                    tid: *tid,
                    unsampled: false,
                    kernel: k,
                    user: u,
                    samples: 1,
                    ns: *ns,
                }
            })
            .collect();
        let thread = |tid, role| ProfiledThread {
            tid,
            tgid: 1,
            comm: "tcplab-stack".into(),
            role,
        };
        CpuProfile {
            version: record::cpu_profile::PROFILE_VERSION,
            period_ns: 1,
            clock: "tsc".into(),
            cpus: 1,
            duration_s: 1.0,
            symbols,
            threads: vec![
                thread(1, ThreadRole::Sender),
                thread(2, ThreadRole::Receiver),
            ],
            stacks,
            busy_s: 0.0,
            idle_s: 0.0,
            lost_samples: 0,
            broken_stacks: 0,
        }
    }

    #[test]
    fn model_rows_slow_each_block_by_its_class_into_the_papers_rows() {
        let speeds = ClassSpeeds::from_fractions([0.01, 0.001, 0.1]).unwrap();
        let p = profile(&[
            (1, "tcp_output", false, 1_000),
            (1, "checksum", false, 1_000),
            (1, "device_send_write", true, 10_000),
            (1, "timers", false, 500),
            (1, "dilation", false, 1_000_000),
            (2, "tcp_input_slow", false, 9_000),
        ]);
        let r = model_rows(&p, speeds, 10.0);
        // tcp_output: 1 µs of compute at 0.01 and 1 µs of checksum at
        // 0.001, over 10 segments.
        assert!((r.rows[1] - (100.0 + 1000.0) / 10.0).abs() < 1e-9, "{r:?}");
        assert!((r.rows[3] - 100.0 / 10.0).abs() < 1e-9, "{r:?}");
        assert!((r.outside - 50.0 / 10.0).abs() < 1e-9, "{r:?}");
        // The receiver's thread and the spin are not the sender's rows.
        assert_eq!(r.rows[6], 0.0);
        // More checksum time, more tcp_output.
        let q = profile(&[
            (1, "tcp_output", false, 1_000),
            (1, "checksum", false, 2_000),
        ]);
        assert!(model_rows(&q, speeds, 10.0).rows[1] > r.rows[1]);
    }
}
