//! What fuzzing the control protocol found in the server's state machine,
//! each kept as the smallest sequence that showed it (server_fuzz.rs and
//! proto_fuzz.rs hold the campaigns).

use engine::proto::{read_message, write_message, Message};
use engine::{Client, Limits, Server};
use record::{TestKind, TrialParams};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

fn server(limits: Limits) -> SocketAddr {
    Server::bind("127.0.0.1:0".parse().unwrap(), limits)
        .unwrap()
        .spawn()
        .unwrap()
}

/// Greets `addr` and sets up `p`, returning the control connection once
/// the server is ready.
fn set_up(addr: SocketAddr, p: &TrialParams) -> TcpStream {
    let give_up = Instant::now() + Duration::from_secs(2);
    let mut s = loop {
        // The last client's slot may take a moment to be released.
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write_message(&mut s, &Message::Hello { client: "x".into() }).unwrap();
        match read_message(&mut s) {
            Ok(Message::Welcome { .. }) => break s,
            _ if Instant::now() < give_up => std::thread::sleep(Duration::from_millis(10)),
            other => panic!("no welcome: {other:?}"),
        }
    };
    write_message(&mut s, &Message::Setup { params: p.clone() }).unwrap();
    let ready = read_message(&mut s).unwrap();
    assert!(matches!(ready, Message::Ready { .. }), "{ready:?}");
    s
}

/// How long until a new client is welcomed (the server retries while busy).
fn time_to_welcome(addr: SocketAddr, give_up: Duration) -> Duration {
    let start = Instant::now();
    loop {
        match Client::connect(addr, Duration::from_secs(5)) {
            Ok(_) => return start.elapsed(),
            Err(e) if start.elapsed() < give_up && e.to_string().contains("busy") => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("after {:?}: {e}", start.elapsed()),
        }
    }
}

/// Found: `hello`, `setup` (tcp-stream or tcp-rr, the client sending),
/// `client_done` without ever connecting, then leaving. The server waited
/// for the data connection until the trial's cap (4000 s by default),
/// holding the client's slot: 2 such clients locked a 2-client server out.
#[test]
fn client_done_without_data_then_leaving_frees_the_slot() {
    // The wait for a welcome is timed (under 1 s): one timed test at a
    // time, each wait measured on a quiet host.
    let _timing = testkit::timing_lock();
    let addr = server(Limits {
        max_clients: 1,
        ..Limits::default()
    });
    for test in [TestKind::TcpStream, TestKind::TcpRr] {
        let mut p = TrialParams::defaults(test);
        p.duration_s = None;
        p.bytes = Some(1000);
        let what = format!("a welcome after a {test} client left");
        let q = testkit::until_quiet(&what, testkit::QuietLimits::default(), &[], || {
            let mut s = set_up(addr, &p);
            write_message(&mut s, &Message::ClientDone).unwrap();
            s.shutdown(Shutdown::Both).unwrap();
            drop(s);
            time_to_welcome(addr, Duration::from_secs(10))
        });
        eprintln!("{what}: {}", q.describe());
        let waited = q.value;
        assert!(
            waited < Duration::from_secs(1),
            "{test}: slot held {waited:?}"
        );
    }
}

/// CPU time this process has used.
fn cpu_time() -> Duration {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    let t = |v: libc::timeval| Duration::new(v.tv_sec as u64, v.tv_usec as u32 * 1000);
    t(u.ru_utime) + t(u.ru_stime)
}

/// Found: `hello`, `setup` of a reverse tcp-stream (the server sending),
/// then any frame while the server waits for the data connection. The
/// server's wait polled the control connection, which stayed readable, in
/// a loop without sleeping: one CPU spun until the trial's cap.
#[test]
fn a_message_during_a_reverse_trial_does_not_spin_a_cpu() {
    // The whole process's CPU time is the measure: a sibling test's work
    // would count, so one timed or loading test at a time. (A busy host
    // adds none of its own to it.)
    let _timing = testkit::timing_lock();
    let addr = server(Limits {
        max_trial_s: 3.0,
        ..Limits::default()
    });
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.reverse = true;
    p.duration_s = Some(2.0);
    let mut s = set_up(addr, &p);
    write_message(&mut s, &Message::ClientDone).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (cpu0, wall0) = (cpu_time(), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let (cpu, wall) = (cpu_time() - cpu0, wall0.elapsed());
    assert!(
        cpu < Duration::from_millis(150),
        "the server used {cpu:?} of CPU in {wall:?} while a message waited"
    );
}
