//! A tcpdump of one device inside a namespace (TCP headers, nanosecond
//! stamps, immediate mode), read back with pcap-file: the reference the
//! stack's own counters are checked against, and the wire times of its
//! segments. Shared by the stack's and stackend's tests.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running capture into a pcap file.
pub struct Capture {
    child: Child,
    stderr: std::thread::JoinHandle<String>,
    file: PathBuf,
}

impl Capture {
    /// Starts tcpdump on `device` in namespace `ns` (TCP only, headers
    /// only, nanosecond stamps, a 64 MB buffer and immediate mode so the
    /// capture drops nothing); returns once it listens.
    pub fn start(ns: &str, device: &str, file: &Path) -> Capture {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "tcpdump", "-i", device, "-nn"])
            .args(["-s", "96", "-B", "65536", "--immediate-mode", "-U"])
            .args(["--time-stamp-precision=nano", "-w"])
            .arg(file)
            .arg("tcp")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting tcpdump");
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut first = String::new();
        std::io::BufRead::read_line(&mut err, &mut first).unwrap();
        assert!(first.contains("listening on"), "tcpdump: {first}");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut s);
            s
        });
        Capture {
            child,
            stderr,
            file: file.to_path_buf(),
        }
    }

    /// Stops tcpdump (SIGINT to its pid, once the file has stopped
    /// growing) and returns the packets it wrote and its own report.
    pub fn stop(mut self) -> (Vec<Packet>, String) {
        let size = || std::fs::metadata(&self.file).map(|m| m.len()).unwrap_or(0);
        let mut last = size();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(200));
            let now = size();
            if now == last {
                break;
            }
            last = now;
        }
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let _ = self.child.wait();
        let report = self.stderr.join().unwrap();
        (read(&self.file), report)
    }
}

/// One captured IPv4/TCP packet.
#[derive(Debug, Clone, Copy)]
pub struct Packet {
    /// Capture time, ns.
    pub at_ns: u128,
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// TCP sequence number.
    pub seq: u32,
    /// TCP acknowledgment number.
    pub ack: u32,
    /// TCP payload octets (from the IP total length, not the snaplen).
    pub payload: usize,
}

/// The IPv4/TCP packets of a pcap file of a TUN device (raw IP frames).
pub fn read(file: &Path) -> Vec<Packet> {
    let bytes = std::fs::read(file).expect("reading the capture");
    let mut reader = pcap_file::pcap::PcapReader::new(&bytes[..]).expect("a pcap file");
    let frac_ns = match reader.header().ts_resolution {
        pcap_file::TsResolution::NanoSecond => 1,
        pcap_file::TsResolution::MicroSecond => 1000,
    };
    let mut out = Vec::new();
    // Raw packets: pcap-file 2.0's checked ones refuse a packet longer
    // on the wire than the snap length, which is every truncated one.
    while let Some(pkt) = reader.next_raw_packet() {
        let pkt = pkt.expect("a packet");
        let d = &pkt.data;
        if d.len() < 20 || d[0] >> 4 != 4 || d[9] != 6 {
            continue;
        }
        let ihl = usize::from(d[0] & 0x0f) * 4;
        let total = usize::from(u16::from_be_bytes([d[2], d[3]]));
        let t = &d[ihl..];
        let tcp_hl = usize::from(t[12] >> 4) * 4;
        out.push(Packet {
            at_ns: u128::from(pkt.ts_sec) * 1_000_000_000 + u128::from(pkt.ts_frac) * frac_ns,
            src: Ipv4Addr::new(d[12], d[13], d[14], d[15]),
            dst: Ipv4Addr::new(d[16], d[17], d[18], d[19]),
            seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
            ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
            payload: total - ihl - tcp_hl,
        });
    }
    out
}

/// The payload rate from `src`, bits per second: every data packet's
/// payload but the last's over the first to the last data packet.
pub fn payload_rate(packets: &[Packet], src: Ipv4Addr) -> Option<f64> {
    let data: Vec<&Packet> = packets
        .iter()
        .filter(|p| p.src == src && p.payload > 0)
        .collect();
    let (first, last) = (data.first()?, data.last()?);
    let bytes: usize = data[..data.len() - 1].iter().map(|p| p.payload).sum();
    let span = (last.at_ns - first.at_ns) as f64 / 1e9;
    (span > 0.0).then(|| bytes as f64 * 8.0 / span)
}

/// The packets tcpdump's closing report says the kernel dropped.
pub fn kernel_drops(report: &str) -> Option<u64> {
    report
        .lines()
        .find_map(|l| l.trim().strip_suffix(" packets dropped by kernel"))
        .and_then(|n| n.trim().parse().ok())
}
