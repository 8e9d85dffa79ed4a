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
    for (proto, rate) in [(TestKind::TcpStream, 50e6), (TestKind::UdpStream, 20e6)] {
        let mut p = TrialParams::defaults(proto);
        p.duration_s = Some(1.0);
        p.send_rate_bps = Some(rate as u64);
        let m = run(&p);
        let got = m["throughput_bps"];
        assert!((got - rate).abs() < 0.1 * rate, "{proto}: {got} vs {rate}");
    }
}

#[test]
fn recv_work_slows_the_receiver_and_is_its_cpu() {
    let mut p = stream(Some(2 << 20), None);
    p.recv_work_ns_per_kb = Some(200_000); // 200 µs per KB: at most 5 MB/s
    let m = run(&p);
    assert!(m["cpu_receiver_s"] >= 0.38, "{m:?}");
    assert!(m["throughput_bps"] < 45e6, "{}", m["throughput_bps"]);
}

#[test]
fn load_workers_run_beside_but_are_not_transfer_cpu() {
    for side in [LoadSide::Sender, LoadSide::Receiver] {
        let mut p = stream(None, Some(0.6));
        p.load = Some(LoadSpec { side, workers: 2 });
        let before = process_cpu_s();
        let m = run(&p);
        let process = process_cpu_s() - before;
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
    let Ok(server) = Server::bind("[::1]:0".parse().unwrap(), Limits::default()) else {
        eprintln!("SKIP: this host has no IPv6 loopback");
        return;
    };
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
    let before = CpuTime::thread_now();
    let other = std::thread::spawn(|| engine::cpu::burn(Duration::from_millis(200)));
    other.join().unwrap();
    assert!(CpuTime::thread_now().since(before).total_s() < 0.1);
}
