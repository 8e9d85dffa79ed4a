//! Unit tests of the host model's arithmetic on synthetic data.

use super::*;
use record::cpu_profile::{CpuProfile, ThreadRole};

#[test]
fn the_386s_classes_at_1024_match_slopes_taken_by_hand_from_table_1() {
    // By hand, from the end columns (MSS 256 and 1280) of Table 1:
    // write_socket 3.41 s / 80,000 = 42.6 µs and 1.98 s / 16,000 =
    // 123.8 µs per packet, so (123.8 - 42.6) / 1024 = 0.079 µs/B;
    // tcp_output 268.4 and 816.9 µs: 0.536 µs/B; driver_out 328.1 and
    // 1274.4 µs: 0.924 µs/B. Data at 1024 is (0.079 + 0.536 + 0.924)
    // x 1024 = 1,576 µs; device is driver_out's 1,036.0 less its 946
    // of bus copy, plus driver_input's 77.5.
    let c = reference_costs(HostModel::I386At33);
    assert!((c.data / 1576.0 - 1.0).abs() < 0.02, "{c:?}");
    assert!(
        (c.device / (1036.0 - 946.0 + 77.5) - 1.0).abs() < 0.1,
        "{c:?}"
    );
    // Compute: the rest of write_socket (104.0 - 81) and tcp_output
    // (684.0 - 549), ip_output 76.0, ip_input 33.0, tcp_input 172.0.
    let compute = (104.0 - 81.0) + (684.0 - 549.0) + 76.0 + 33.0 + 172.0;
    assert!(
        (c.compute / compute - 1.0).abs() < 0.05,
        "{c:?} against {compute}"
    );
    // At MSS 256 the device class is driver_out's 328.1 less 236.5 of
    // bus copy, plus driver_input's 79.1: still about a packet's worth.
    let small = paper_costs(HostModel::I386At33, 0);
    assert!(
        (small.device / (328.1 - 236.5 + 79.1) - 1.0).abs() < 0.1,
        "{small:?}"
    );
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
fn host_costs_count_the_loop_as_computation_and_not_the_spins_or_brackets() {
    let mut m = BTreeMap::new();
    m.insert("stack_client_segments_out".to_string(), 1000.0);
    m.insert("stack_client_account_busy_s".to_string(), 0.010);
    m.insert("stack_client_account_data_s".to_string(), 0.002);
    m.insert("stack_client_account_device_s".to_string(), 0.005);
    m.insert("stack_client_account_bracket_cost_s".to_string(), 0.0);
    let c = host_costs(&m, "client").unwrap();
    assert!((c.compute - 3.0).abs() < 1e-9 && (c.data - 2.0).abs() < 1e-9);
    assert!((c.device - 5.0).abs() < 1e-9);
    assert!(matches!(
        host_costs(&m, "server"),
        Err(HostModelError::Missing(_))
    ));
    // On a slowed trial, the spins are not this host's work, nor is
    // what the brackets cost.
    m.insert("stack_client_account_busy_s".to_string(), 1.011);
    m.insert("stack_client_account_dilation_s".to_string(), 1.0);
    m.insert("stack_client_account_bracket_cost_s".to_string(), 0.001);
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
    // A tcp-rr point calibrates on a stream with the model's own ACK
    // policy (an ACK per segment from a Linux receiver).
    assert!(c.quickack);
    assert_eq!(c.rcvbuf, Some(65536));
}

#[test]
fn every_point_of_a_plan_calibrates_the_same_machine() {
    // A factor swept across the points (the checksum, the routes, the
    // write size) is not part of the calibration: its effect on the 386
    // shows in the trials instead of being calibrated away.
    let mut a = TrialParams::defaults(TestKind::TcpStream);
    a.stack = record::factor::StackImpl::Tcplab;
    let mut b = a.clone();
    b.checksum = Some(record::factor::Checksum::Rfc1071);
    b.routes = Some(10);
    b.write_size = 512;
    b.mss = Some(256);
    let m = HostModel::I386At33;
    assert_eq!(
        calibration_params(&a, m, None),
        calibration_params(&b, m, None)
    );
    assert_eq!(
        calibration_params(&b, m, None).checksum,
        Some(record::factor::Checksum::Bytewise)
    );
    // Which end is tcplab's and which sends does change it.
    let mut c = a.clone();
    c.stack = record::factor::StackImpl::TcplabTap;
    assert_ne!(
        calibration_params(&a, m, None),
        calibration_params(&c, m, None)
    );
}

fn costs(compute: f64, data: f64, device: f64) -> ClassCosts {
    ClassCosts {
        compute,
        data,
        device,
    }
}

#[test]
fn calibration_searches_in_log_log_until_the_model_is_met() {
    let mut c = Calibration::new(HostModel::I386At33);
    let m = c.model;
    // This host's own cost rises as it is slowed: c(F) = base × F^-0.5
    // per class, so the slowed cost c(F)/F = base × F^-1.5.
    let base = costs(m.compute / 2000.0, m.data / 5000.0, m.device / 500.0);
    let own = |at: ClassSpeeds| {
        let k = |c: WorkClass| base.of(c) * at.of(c).powf(-0.5);
        costs(
            k(WorkClass::Compute),
            k(WorkClass::Data),
            k(WorkClass::Device),
        )
    };
    assert_eq!(c.next(), Ok(Next::Run(None)));
    c.record(None, base);
    let mut runs = 0;
    let done = loop {
        match c.next().unwrap() {
            Next::Run(Some(at)) => {
                runs += 1;
                c.record(Some(at), own(at));
            }
            Next::Run(None) => panic!("undilated twice"),
            Next::Done(s) => break s,
        }
    };
    assert!(runs < CALIBRATION_ROUNDS, "{runs}");
    // At the final speeds this host takes the model's time.
    let got = own(done);
    for k in WorkClass::ALL {
        let slowed = got.of(k) / done.of(k);
        assert!(
            (slowed / m.of(k) - 1.0).abs() < 0.1,
            "{}: {slowed} against {}",
            k.name(),
            m.of(k)
        );
    }
    assert!(c.converged());
    // At least three slowed transfers are pooled.
    assert!(runs >= MIN_SLOWED, "{runs}");
}

#[test]
fn an_unconverged_calibration_says_so_and_ends_at_the_line() {
    let mut c = Calibration::new(HostModel::I386At33);
    let m = c.model;
    c.record(
        None,
        costs(m.compute / 100.0, m.data / 100.0, m.device / 100.0),
    );
    // Every slowed transfer lands 30% over the model, whatever the speed.
    while let Next::Run(Some(at)) = c.next().unwrap() {
        let k = |x: WorkClass| 1.3 * m.of(x) * at.of(x);
        c.record(
            Some(at),
            costs(
                k(WorkClass::Compute),
                k(WorkClass::Data),
                k(WorkClass::Device),
            ),
        );
    }
    assert_eq!(c.rounds.len(), CALIBRATION_ROUNDS);
    assert!(!c.converged());
    assert!(matches!(c.next(), Ok(Next::Done(_))));
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
    assert_eq!(r.brackets, 0.0);
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
