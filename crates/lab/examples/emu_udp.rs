//! Sends paced UDP across an emulated link and shows where frames went.
use lab::{Place, PlaceSpec};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

fn main() {
    let link = std::env::args().nth(1).unwrap_or("via=emulator".into());
    let spec = PlaceSpec::parse(Some("router"), Some(&link)).unwrap();
    let place = Place::build(&spec).unwrap();
    let ip = place.server_ip(false);
    let rx = place
        .in_server(move || UdpSocket::bind(SocketAddr::new(ip, 9000)))
        .unwrap()
        .unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let counter = std::thread::spawn(move || {
        let mut b = [0u8; 2000];
        let mut n = 0u64;
        while rx.recv(&mut b).is_ok() {
            n += 1;
        }
        n
    });
    let tx = place
        .in_client(|| UdpSocket::bind("0.0.0.0:0"))
        .unwrap()
        .unwrap();
    tx.connect(SocketAddr::new(ip, 9000)).unwrap();
    let payload = [7u8; 1000];
    let t0 = Instant::now();
    let n = 100_000u64;
    for i in 0..n {
        tx.send(&payload).unwrap();
        let due = Duration::from_secs_f64(i as f64 * 1042.0 * 8.0 / 100e6);
        let el = t0.elapsed();
        if due > el {
            std::thread::sleep(due - el);
        }
    }
    let got = counter.join().unwrap();
    println!("sent {n} received {got} missing {}", n - got);
    println!("{:?}", place.emulator_stats());
    for ns in &place.info().namespaces {
        let out = std::process::Command::new("ip")
            .args(["-n", ns, "-s", "link"])
            .output()
            .unwrap();
        println!("== {ns}\n{}", String::from_utf8_lossy(&out.stdout));
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "nstat", "-a"])
            .output()
            .unwrap();
        let t = String::from_utf8_lossy(&out.stdout);
        for l in t.lines().filter(|l| l.contains("Udp") || l.contains("Ip")) {
            println!("   {l}");
        }
    }
}
