//! Each factor changes what it claims to: pacing, receiver work, load
//! workers (not counted as transfer CPU), MSS, congestion control, IPv6.

use engine::cpu::CpuTime;
use engine::{Client, Limits, Server};
use record::{LoadSide, LoadSpec, TestKind, TrialParams};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn client(addr: &str) -> Client {
    let server = Server::bind(addr.parse().unwrap(), Limits::default()).unwrap();
    Client::connect(server.spawn().unwrap(), Duration::from_secs(5)).unwrap()
}

fn run(p: &TrialParams) -> BTreeMap<String, f64> {
    let mut c = client("127.0.0.1:0");
    c.run_trial(p, &Arc::new(AtomicBool::new(false)))
        .unwrap_or_else(|e| panic!("{e}"))
        .metrics
}

/// A trial whose asserted values depend on the host's speed (a paced
/// rate, a delay, CPU shares, datagrams delivered): run until it ran on a
/// quiet host (testkit), and the caller holds the timing lock.
fn quiet(what: &str, p: &TrialParams) -> BTreeMap<String, f64> {
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || run(p));
    eprintln!("{what}: {}", q.describe());
    q.value
}

fn stream(bytes: Option<u64>, secs: Option<f64>) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.bytes = bytes;
    p.duration_s = secs;
    p
}

fn process_cpu_s() -> f64 {
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[test]
fn send_rate_paces_the_sender() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    for (proto, rate) in [(TestKind::TcpStream, 50e6), (TestKind::UdpStream, 20e6)] {
        let mut p = TrialParams::defaults(proto);
        p.duration_s = Some(1.0);
        p.send_rate_bps = Some(rate as u64);
        let m = quiet(&format!("{proto} paced at {rate}"), &p);
        let got = m["throughput_bps"];
        assert!((got - rate).abs() < 0.1 * rate, "{proto}: {got} vs {rate}");
    }
}

#[test]
fn recv_work_slows_the_receiver_and_is_its_cpu() {
    // Real loopback transfers: one timed or loading test at a time. The
    // work is burnt on the thread's CPU clock, and a busy host only slows
    // the transfer further: nothing here waits for a quiet host.
    let _timing = testkit::timing_lock();
    let mut p = stream(Some(2 << 20), None);
    p.recv_work_ns_per_kb = Some(200_000); // 200 µs per KB: at most 5 MB/s
    let m = run(&p);
    assert!(m["cpu_receiver_s"] >= 0.38, "{m:?}");
    assert!(m["throughput_bps"] < 45e6, "{}", m["throughput_bps"]);
}

#[test]
fn load_workers_run_beside_but_are_not_transfer_cpu() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    for side in [LoadSide::Sender, LoadSide::Receiver] {
        let mut p = stream(None, Some(0.6));
        p.load = Some(LoadSpec { side, workers: 2 });
        let what = format!("load workers on the {side:?}");
        let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
            let before = process_cpu_s();
            let m = run(&p);
            (m, process_cpu_s() - before)
        });
        eprintln!("{what}: {}", q.describe());
        let (m, process) = q.value;
        let transfer = m["cpu_sender_s"] + m["cpu_receiver_s"];
        // Two busy workers for ~0.6 s on two cores get well over 0.3 s of
        // CPU, all of it outside the transfer threads' accounts.
        let load = m["load_cpu_s"];
        assert!(load > 0.3, "{side:?}: load got {load} s");
        assert!(
            transfer + load <= process + 0.05,
            "{side:?}: process {process} transfer {transfer} load {load}"
        );
    }
}

#[test]
fn mss_caps_the_segment_size() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut p = stream(Some(1 << 20), None);
    p.mss = Some(536);
    let m = run(&p);
    assert!(
        m["snd_mss"] <= 536.0 && m["snd_mss"] > 400.0,
        "{}",
        m["snd_mss"]
    );
    assert!(
        m["data_segs_out"] >= (1 << 20) as f64 / 536.0 * 0.9,
        "{}",
        m["data_segs_out"]
    );
}

#[test]
fn congestion_control_and_nodelay_and_buffers_apply() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let mut p = stream(Some(1 << 20), None);
    p.cc = Some("reno".into());
    p.nodelay = true;
    p.sndbuf = Some(64 << 10);
    p.rcvbuf = Some(64 << 10);
    run(&p);
    p.cc = Some("no_such_cc".into());
    let mut c = client("127.0.0.1:0");
    let err = c
        .run_trial(&p, &Arc::new(AtomicBool::new(false)))
        .unwrap_err();
    assert!(err.to_string().contains("congestion control"), "{err}");
}

#[test]
fn ipv6_loopback() {
    // ::1 on lo, as the kernel lists its IPv6 addresses.
    let has_v6_loopback = std::fs::read_to_string("/proc/net/if_inet6").is_ok_and(|t| {
        t.lines()
            .any(|l| l.starts_with("00000000000000000000000000000001"))
    });
    if !testkit::need(has_v6_loopback, "IPv6 on loopback (::1)") {
        return;
    }
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let server = Server::bind("[::1]:0".parse().unwrap(), Limits::default()).expect("binding ::1");
    let mut c = Client::connect(server.spawn().unwrap(), Duration::from_secs(5)).unwrap();
    for test in [TestKind::TcpStream, TestKind::UdpStream, TestKind::TcpRr] {
        let mut p = TrialParams::defaults(test);
        p.ipv6 = true;
        p.duration_s = Some(0.2);
        let m = c
            .run_trial(&p, &Arc::new(AtomicBool::new(false)))
            .unwrap()
            .metrics;
        assert!(m["bytes"] > 0.0);
    }
}

#[test]
fn cpu_time_is_per_thread() {
    // A thread burns a CPU for 0.2 s: a load a timed sibling would not see
    // as others', so one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    let before = CpuTime::thread_now();
    let other = std::thread::spawn(|| engine::cpu::burn(Duration::from_millis(200), || false));
    other.join().unwrap();
    assert!(CpuTime::thread_now().since(before).total_s() < 0.1);
}

#[test]
fn rcvlowat_batches_reads_but_keeps_first_and_last_byte_times() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    // A paced sender (2 Mbit/s, 1460-byte writes, 120 KB): the kernel's
    // default wakes the receiver for nearly every write; a 32 KiB low-water
    // mark wakes it about every 32 KiB. The first-to-last-byte delay must be
    // the pacing time either way (the first read is never batched and FIN
    // wakes the last one).
    let bytes = 120_000u64;
    let rate = 2e6;
    let expected_delay = (bytes - 1460) as f64 * 8.0 / rate;
    let mut calls = Vec::new();
    for lowat in [1u64, 32 * 1024] {
        let mut p = stream(Some(bytes), None);
        p.write_size = 1460;
        p.send_rate_bps = Some(rate as u64);
        p.rcvlowat = Some(lowat);
        let m = quiet(&format!("a paced stream read with lowat {lowat}"), &p);
        assert_eq!(m["bytes"], bytes as f64);
        let d = m["delay_s"];
        assert!(
            (d - expected_delay).abs() < 0.1 * expected_delay,
            "lowat {lowat}: delay {d} s, expected {expected_delay} s"
        );
        calls.push(m["receiver_calls"]);
    }
    let batched_max = (bytes / (32 * 1024)) as f64 + 3.0;
    assert!(calls[1] <= batched_max, "32K lowat made {} reads", calls[1]);
    assert!(
        calls[0] >= 5.0 * calls[1],
        "lowat 1 made {} reads, 32K {}",
        calls[0],
        calls[1]
    );
}

#[test]
fn rcvlowat_larger_than_the_transfer_still_ends() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    // 1000 bytes under a 1 MiB low-water mark: FIN must wake the reader.
    let mut p = stream(Some(1000), None);
    p.write_size = 100;
    p.rcvlowat = Some(1 << 20);
    let m = run(&p);
    assert_eq!(m["bytes"], 1000.0);
}

#[test]
fn auto_rcvlowat_follows_write_size_within_bounds_and_respects_read_size_and_rcvbuf() {
    let mut p = stream(Some(1), None);
    p.write_size = 1460;
    assert_eq!(p.effective_rcvlowat(), 32 * 1024);
    p.write_size = 64 * 1024;
    assert_eq!(p.effective_rcvlowat(), 128 * 1024);
    p.write_size = 128 * 1024;
    assert_eq!(p.effective_rcvlowat(), 256 * 1024);
    p.write_size = 16 << 20;
    assert_eq!(p.effective_rcvlowat(), 256 * 1024);
    p.read_size = 1460;
    assert_eq!(p.effective_rcvlowat(), 1460);
    p.read_size = 128 * 1024;
    p.rcvbuf = Some(16 * 1024);
    assert_eq!(p.effective_rcvlowat(), 4096);
    p.rcvbuf = Some(2);
    assert_eq!(p.effective_rcvlowat(), 1);
    p.rcvlowat = Some(7);
    assert_eq!(p.effective_rcvlowat(), 7);
}

#[test]
fn quickack_stream_delivers_and_acknowledges_each_read() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    // A paced sender and a reader woken per segment, TCP_QUICKACK re-armed
    // after each read: every byte arrives and every read that found data
    // draws an ACK. (Not one ACK per data segment: on a busy 2-CPU host a
    // read may find two segments, and Linux acknowledges the read. Nor is
    // this different from the default on loopback, where Linux already
    // acknowledges each read of a unidirectional stream; the README says
    // so under --quickack.)
    let mut p = stream(Some(256 << 10), None);
    p.write_size = 1460;
    p.nodelay = true;
    p.send_rate_bps = Some(20_000_000);
    p.rcvlowat = Some(1);
    p.quickack = true;
    let m = quiet("a paced stream with quickack", &p);
    let (acks, reads) = (m["receiver_segs_out"], m["receiver_calls"]);
    assert_eq!(m["bytes"], (256 << 10) as f64);
    assert!(
        reads >= 20.0,
        "{reads} reads: the reader was not woken per segment"
    );
    assert!(acks >= 0.9 * (reads - 1.0), "{acks} ACKs for {reads} reads");
}

#[test]
fn an_unconnected_udp_sender_names_the_address_in_every_datagram() {
    // Real loopback transfers: one timed or loading test at a time.
    let _timing = testkit::timing_lock();
    // --connect off: sendto() with the address each time; the datagrams
    // arrive as from a connected sender.
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.bytes = Some(64 * 1000);
    p.duration_s = None;
    p.write_size = 64;
    p.send_rate_bps = Some(20_000_000);
    p.connect = false;
    let m = quiet("an unconnected paced UDP sender", &p);
    assert_eq!(m["datagrams_sent"], 1000.0);
    assert!(m["datagrams_received"] >= 900.0, "{m:?}");
    // The option is refused where there is no client sender to unconnect.
    p.reverse = true;
    assert!(engine::limits::validate(&p, &Limits::default()).is_err());
}
