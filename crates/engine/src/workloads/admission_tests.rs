//! The gate's admission rules, each against real loopback connections.

use super::*;
use std::io::Write;
use std::net::{SocketAddr, TcpStream};

const TOKEN: [u8; KEY_BYTES] = [0x5a; KEY_BYTES];

/// Defers accept on `l` as every keyed trial's data listener does.
fn deferring(l: &Socket) {
    crate::sockopt::defer_accept(l, TOKEN_WAIT.as_secs() as u32).unwrap();
}

/// `count` flows, each taking one connection.
fn once(count: usize) -> Flows {
    Flows {
        count,
        repeat: false,
    }
}

/// A non-blocking loopback listener and the waits of a keyed trial.
fn door() -> (Socket, DataWaits, SocketAddr) {
    let l = Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    l.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    l.listen(1024).unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap().as_socket().unwrap();
    let waits = DataWaits {
        first: Duration::from_secs(5),
        stall: Duration::from_secs(5),
        from: Some(addr.ip()),
        token: Some(TOKEN),
        owner: None,
    };
    (l, waits, addr)
}

/// Connections the gate holds beside those it handed out.
fn held(gate: &Gate) -> usize {
    gate.pending.lock().unwrap().len()
}

/// A trial's owner opening far more connections with the token than
/// the trial has flows parks none of them beyond the waiting places
/// (before: each extra one with its token was kept, 158 of 160 here).
#[test]
fn whole_tokens_beyond_the_trials_flows_are_not_kept() {
    let (l, waits, addr) = door();
    let cancel = Canceller::new();
    let flows = once(2);
    let gate = Gate::new(&l, &waits, &cancel, flows);
    let owner: Vec<TcpStream> = (0..160)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(&TOKEN).unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..flows.count {
        gate.admit().unwrap();
    }
    eprintln!(
        "{} connections with the token for {} flows: {} held after the flows took theirs",
        owner.len(),
        flows.count,
        held(&gate),
    );
    assert!(
        held(&gate) <= MAX_PENDING,
        "{} connections held for a trial of {} flows",
        held(&gate),
        flows.count
    );
}

/// A wide trial's own connections whose tokens come a moment after
/// their handshakes (40 flows, tokens 50 ms late) are all admitted:
/// newcomers wait in the listen queue rather than close the oldest
/// (before: the 17th closed the first).
#[test]
fn a_wide_trials_late_tokens_are_all_admitted() {
    let (l, waits, addr) = door();
    deferring(&l);
    let cancel = Canceller::new();
    let flows = once(40);
    let gate = Gate::new(&l, &waits, &cancel, flows);
    let mut client: Vec<TcpStream> = (0..flows.count)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        for s in &mut client {
            s.write_all(&TOKEN).unwrap();
        }
        client
    });
    let admitted = (0..flows.count).filter(|_| gate.admit().is_ok()).count();
    let _client = sender.join().unwrap();
    assert_eq!(admitted, flows.count, "{} refused", gate.refused());
    assert_eq!(gate.refused(), 0);
}

/// With the data listener's TCP_DEFER_ACCEPT (as every keyed trial
/// has it), silent connections are not even accepted: the trial's own
/// connection is admitted at once, not after their [`GRACE`] (a flood
/// of them from the client's address cut a tcp-crr trial from 9,850
/// to 1,940 transactions/s).
#[test]
fn silent_connections_never_reach_a_deferring_listener() {
    let (took, refused) = own_behind_silent(3 * MAX_PENDING, true);
    assert!(took < GRACE / 2, "admitted after {took:?}");
    assert_eq!(refused, 0);
}

/// A flood of silent connections past the waiting places is drained
/// at [`PROBATION_MOST`] per [`PROBATION_AGE`], so the trial's own
/// connection queued behind 600 of them is admitted in about 160 ms
/// (before the drain: accepting stopped while the places were in their
/// grace, 80 a second, and took 7 s).
#[test]
fn a_silent_flood_past_the_places_is_drained() {
    let (took, refused) = own_behind_silent(600, false);
    assert!(took < drain_time(600) * 4, "admitted after {took:?}");
    assert!(refused >= (600 - HELD_MOST) as u64);
}

/// How long the gate takes to drain `n` silent connections queued past
/// its places.
fn drain_time(n: usize) -> Duration {
    PROBATION_AGE * (n.saturating_sub(HELD_MOST) / PROBATION_MOST + 1) as u32
}

/// Under a sustained flood of silent connections (a thread connecting
/// as fast as it can, past the places, as syncookies complete them), a
/// trial's own connection whose token comes 10 ms after its handshake
/// is admitted: a newcomer on probation keeps its place for
/// [`PROBATION_AGE`] and the flood waits in the listen queue (before:
/// the oldest on probation made room for each newcomer at once, and a
/// flood of 20,000 a second gave each 3 ms: tcp-crr aborted 3 of 3).
#[test]
fn under_a_sustained_flood_a_token_10_ms_late_is_admitted() {
    let (l, waits, addr) = door();
    let cancel = Canceller::new();
    let gate = Gate::new(&l, &waits, &cancel, once(1));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            // Each stays open and silent until the test ends.
            let mut silent = Vec::new();
            while !stop.load(Ordering::Relaxed) && silent.len() < 8_000 {
                if let Ok(s) = TcpStream::connect(addr) {
                    silent.push(s);
                }
            }
            silent.len()
        })
    };
    let own = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let mut own = TcpStream::connect(addr).unwrap();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(10));
        own.write_all(&TOKEN).unwrap();
        (own, t0)
    });
    let admitted = gate.admit();
    let done = Instant::now();
    stop.store(true, Ordering::Relaxed);
    let made = flood.join().unwrap();
    let (_own, t0) = own.join().unwrap();
    eprintln!(
        "a flood of {made} connections; the trial's own, its token 10 ms late: {:?} {:?} after its connect, {} refused",
        admitted.as_ref().map(|_| "admitted"),
        done.saturating_duration_since(t0),
        gate.refused()
    );
    assert!(admitted.is_ok(), "{:?}", admitted.err());
}

/// Past the SYN queue (the listen backlog), a deferring listener's
/// silent connections are completed by syncookies and go straight to
/// the accept queue: the gate drains them at [`PROBATION_MOST`] per
/// [`PROBATION_AGE`], and the trial's own connection after 3,000 of them
/// is admitted in time (237-241 ms here, 1,976 cookies sent).
#[test]
fn a_silent_flood_past_the_syn_queue_is_drained() {
    let (l, waits, addr) = door();
    deferring(&l);
    let cancel = Canceller::new();
    let flows = once(1);
    let gate = Gate::new(&l, &waits, &cancel, flows);
    let cookies_before = syncookies_sent();
    let flood = std::thread::spawn(move || {
        let silent: Vec<TcpStream> = (0..3000)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        let t0 = Instant::now();
        let mut own = TcpStream::connect(addr).unwrap();
        own.write_all(&TOKEN).unwrap();
        (silent, own, t0)
    });
    gate.admit().unwrap();
    let admitted = Instant::now();
    let (_silent, _own, t0) = flood.join().unwrap();
    let took = admitted.saturating_duration_since(t0);
    let cookies = syncookies_sent() - cookies_before;
    eprintln!(
        "3000 silent past the SYN queue: {cookies} syncookies sent, the trial's own admitted {took:?} after its connect, {} refused",
        gate.refused()
    );
    assert!(cookies > 0, "the flood did not pass the SYN queue");
    assert!(took < drain_time(3000) * 4, "admitted after {took:?}");
}

/// The host's count of SYN-ACKs sent with syncookies (TcpExt).
fn syncookies_sent() -> u64 {
    let t = std::fs::read_to_string("/proc/net/netstat").unwrap();
    let rows: Vec<Vec<&str>> = t
        .lines()
        .filter(|l| l.starts_with("TcpExt:"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let i = rows[0].iter().position(|k| *k == "SyncookiesSent").unwrap();
    rows[1][i].parse().unwrap()
}

/// Past the places (16 silent connections in their grace), the
/// trial's own connection accepted before its token (as one a
/// syncookie completed is, without the listener's deferral), whose
/// token comes 5 ms later, is admitted though 40 silent ones follow it
/// (before: it was looked at once and closed with its token unread,
/// and tcp-crr and http trials aborted, 6 of 6). Past
/// [`PROBATION_MOST`] newer ones it would be looked at a last time.
#[test]
fn a_newcomer_past_the_places_whose_token_is_a_moment_late_is_admitted() {
    let (l, waits, addr) = door();
    let cancel = Canceller::new();
    let flows = once(1);
    let gate = Gate::new(&l, &waits, &cancel, flows);
    let silent: Vec<TcpStream> = (0..MAX_PENDING)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let later = std::thread::spawn(move || {
        // After the gate has taken the places.
        std::thread::sleep(Duration::from_millis(30));
        let mut own = TcpStream::connect(addr).unwrap();
        let flood: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(addr).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(5));
        own.write_all(&TOKEN).unwrap();
        (own, flood)
    });
    let t0 = Instant::now();
    let admitted = gate.admit();
    let _kept = later.join().unwrap();
    eprintln!(
        "own behind {} silent, 40 more after it: {:?} after {:?}, {} refused",
        silent.len(),
        admitted.as_ref().map(|_| "admitted"),
        t0.elapsed(),
        gate.refused()
    );
    assert!(admitted.is_ok(), "{:?}", admitted.err());
    assert!(t0.elapsed() < GRACE, "{:?}", t0.elapsed());
}

/// How long a one-flow trial's own connection, queued behind
/// `silent` connections that send nothing (on a listener deferring
/// accept or not), takes to be admitted, and how many were refused.
fn own_behind_silent(silent: usize, defer: bool) -> (Duration, u64) {
    let (l, waits, addr) = door();
    if defer {
        deferring(&l);
    }
    let cancel = Canceller::new();
    let flows = once(1);
    let gate = Gate::new(&l, &waits, &cancel, flows);
    let silent: Vec<TcpStream> = (0..silent)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let mut own = TcpStream::connect(addr).unwrap();
    own.write_all(&TOKEN).unwrap();
    let t0 = Instant::now();
    gate.admit().unwrap();
    let took = t0.elapsed();
    eprintln!(
        "{} silent before the trial's own: admitted after {took:?}, {} refused",
        silent.len(),
        gate.refused()
    );
    (took, gate.refused())
}
