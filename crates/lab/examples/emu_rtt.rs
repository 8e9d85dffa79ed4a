//! Prints the RTT distribution of 1-byte ping-pong across an emulated link.
use lab::{Place, PlaceSpec};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn main() {
    let link = std::env::args()
        .nth(1)
        .unwrap_or("delay=1ms,via=emulator".into());
    let spec = PlaceSpec::parse(Some("router"), Some(&link)).unwrap();
    let mut place = Place::build(&spec).unwrap();
    let ip = place.server_ip(false);
    let l = place
        .in_server(move || TcpListener::bind(SocketAddr::new(ip, 0)))
        .unwrap()
        .unwrap();
    let addr = l.local_addr().unwrap();
    let srv = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut b = [0u8; 1];
        while s.read_exact(&mut b).is_ok() {
            s.write_all(&b).unwrap();
        }
    });
    let mut c = place
        .in_client(move || TcpStream::connect(addr))
        .unwrap()
        .unwrap();
    c.set_nodelay(true).unwrap();
    let mut v = Vec::new();
    let mut b = [1u8; 1];
    for _ in 0..2000 {
        let t = Instant::now();
        c.write_all(&b).unwrap();
        c.read_exact(&mut b).unwrap();
        v.push(t.elapsed());
    }
    drop(c);
    srv.join().unwrap();
    v.sort();
    let q = |f: f64| v[((v.len() - 1) as f64 * f) as usize];
    println!(
        "min {:?} p50 {:?} p90 {:?} p99 {:?} max {:?}",
        v[0],
        q(0.5),
        q(0.9),
        q(0.99),
        v[v.len() - 1]
    );
    let slow = v.iter().filter(|d| **d > Duration::from_millis(5)).count();
    println!("over 5 ms: {slow}");
    for ns in &place.info().namespaces {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "nstat", "-az"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        for l in text.lines().filter(|l| {
            (l.contains("Retrans")
                || l.contains("TLP")
                || l.contains("Drop")
                || l.contains("Lost")
                || l.contains("InErrs")
                || l.contains("CsumErr"))
                && !l.contains(" 0 ")
        }) {
            println!("{ns}: {l}");
        }
    }
    println!("{:?}", place.stop_emulator());
}
