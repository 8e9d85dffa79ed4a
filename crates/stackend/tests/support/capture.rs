//! The wire's view of a trial: tcpdump on a stack end's TUN/TAP device
//! inside the StackPlace namespace, started (and listening) before the
//! trial and stopped by pid after, and its pcap parsed here into the TCP
//! segments of the trial's data connection, each with its checksum
//! verified by an RFC 1071 sum written for this test (not the stack's).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A tcpdump running on one device.
pub struct Capture {
    /// Taken by `stop`; a capture dropped unstopped (a test failing
    /// mid-trial) kills its tcpdump and removes its file.
    child: Option<Child>,
    stderr: Option<std::thread::JoinHandle<String>>,
    file: Option<PathBuf>,
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(file) = self.file.take() {
            let _ = std::fs::remove_file(file);
        }
    }
}

impl Capture {
    /// Starts tcpdump on `device` in namespace `ns` and returns once it is
    /// listening (its "listening on" line), so it sees every packet of
    /// what follows. Packets of up to `snaplen` bytes are kept whole (for
    /// the checksums); tcpdump's ring holds 64 MB of slots of that size,
    /// so a snap length no larger than the device's packets keeps it from
    /// dropping at full speed.
    pub fn start(ns: &str, device: &str, snaplen: usize) -> Capture {
        let file =
            std::env::temp_dir().join(format!("tcplab-wire-{}-{device}.pcap", std::process::id()));
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "tcpdump", "-i", device, "-nn", "-s"])
            .arg(snaplen.to_string())
            .args(["-B", "65536", "--immediate-mode", "-U", "-w"])
            .arg(&file)
            .arg("tcp")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting tcpdump");
        let mut err = BufReader::new(child.stderr.take().expect("piped"));
        let mut first = String::new();
        err.read_line(&mut first).expect("reading tcpdump's stderr");
        assert!(first.contains("listening on"), "tcpdump: {first}");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Capture {
            child: Some(child),
            stderr: Some(stderr),
            file: Some(file),
        }
    }

    /// Stops tcpdump (once its file stopped growing), checks it dropped
    /// nothing, and returns what it captured.
    pub fn stop(mut self) -> Captured {
        let file = self.file.clone().expect("not yet stopped");
        let size = || std::fs::metadata(&file).map_or(0, |m| m.len());
        let mut last = size();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(200));
            let now = size();
            if now == last {
                break;
            }
            last = now;
        }
        let mut child = self.child.take().expect("not yet stopped");
        // SAFETY: signalling the child this test started, by its pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let _ = child.wait();
        let stderr = self.stderr.take().expect("not yet stopped");
        let report = stderr.join().expect("tcpdump's stderr");
        let dropped = report
            .lines()
            .find(|l| l.contains("dropped by kernel"))
            .and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok());
        assert_eq!(dropped, Some(0), "tcpdump dropped packets: {report}");
        let bytes = std::fs::read(&file).expect("reading the capture");
        let flow = Flow::busiest(parse_pcap(&bytes));
        self.file = None;
        Captured { flow, file }
    }
}

/// A stopped capture: its file (removed on drop) and the segments of the
/// connection that carried the most payload.
pub struct Captured {
    pub flow: Flow,
    file: PathBuf,
}

impl Captured {
    /// tshark's own verdict on the TCP checksums of the flow under test
    /// (a check independent of this parser), in both directions:
    /// (good, bad) among the flow's segments, and the bad ones of any
    /// other connection the capture holds (described, one a line); None
    /// without tshark (a skip through testkit: the test checked less).
    pub fn tshark_checksums(&self) -> Option<TsharkChecksums> {
        if !testkit::need_tool("tshark") {
            return None;
        }
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&self.file)
            .args(["-o", "tcp.check_checksum:TRUE", "-T", "fields"])
            // TCP segments themselves, not the headers ICMP errors quote.
            .args(["-Y", "tcp && !icmp"])
            .args(["-e", "frame.number", "-e", "ip.src", "-e", "tcp.srcport"])
            .args(["-e", "ip.dst", "-e", "tcp.dstport", "-e", "tcp.flags.str"])
            .args(["-e", "tcp.len", "-e", "tcp.checksum.status"])
            .output()
            .expect("running tshark");
        assert!(
            out.status.success(),
            "tshark: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let ends = self
            .flow
            .segs
            .first()
            .map(|s| (s.src, s.dst))
            .expect("the flow has segments");
        let in_flow = |src: Endpoint, dst: Endpoint| (src, dst) == ends || (dst, src) == ends;
        let mut sums = TsharkChecksums::default();
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let [_, src, sport, dst, dport, _, _, status] = f[..] else {
                continue;
            };
            let endpoint =
                |a: &str, p: &str| -> Option<Endpoint> { Some((a.parse().ok()?, p.parse().ok()?)) };
            let (Some(src), Some(dst)) = (endpoint(src, sport), endpoint(dst, dport)) else {
                continue;
            };
            match (in_flow(src, dst), status.trim()) {
                (true, "1") => sums.good += 1,
                (true, "0") => {
                    sums.bad += 1;
                    sums.bad_in_flow.push(line.to_string());
                }
                (false, "0") => sums.bad_elsewhere.push(line.to_string()),
                _ => {}
            }
        }
        Some(sums)
    }
}

/// tshark's checksum verdicts over a capture.
#[derive(Debug, Default)]
pub struct TsharkChecksums {
    /// Segments of the flow under test with a correct checksum.
    pub good: usize,
    /// Segments of the flow under test with a wrong one.
    pub bad: usize,
    /// Those wrong ones as tshark's fields (frame, addresses, ports, flags,
    /// length, status), so a failure says which side sent them.
    pub bad_in_flow: Vec<String>,
    /// Other connections' segments with a wrong checksum, as tshark's
    /// fields (frame, addresses, ports, flags, length, status).
    pub bad_elsewhere: Vec<String>,
}

impl Drop for Captured {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// An address and port.
pub type Endpoint = (Ipv4Addr, u16);

/// One TCP segment as captured.
#[derive(Debug, Clone)]
pub struct Seg {
    /// Source address and port.
    pub src: (Ipv4Addr, u16),
    /// Destination address and port.
    pub dst: (Ipv4Addr, u16),
    pub seq: u32,
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// The window field as sent (unscaled).
    pub window: u16,
    /// The window-scale option (SYNs only).
    pub wscale: Option<u8>,
    pub payload: usize,
    /// The whole segment's one's-complement sum over the pseudo-header
    /// folds to 0xffff: a correct checksum.
    pub checksum_ok: bool,
    /// The checksum field equals the pseudo-header's sum alone: a partial
    /// checksum left for the device (checksum offload).
    pub checksum_partial: bool,
}

/// The segments of one connection, both directions, in capture order.
#[derive(Debug)]
pub struct Flow {
    pub segs: Vec<Seg>,
    /// The endpoint that sent the most payload.
    pub sender: (Ipv4Addr, u16),
}

impl Flow {
    /// The connection with the most payload among `segs`.
    fn busiest(segs: Vec<Seg>) -> Flow {
        use std::collections::HashMap;
        let mut by_sender: HashMap<(Endpoint, Endpoint), usize> = HashMap::new();
        for s in &segs {
            *by_sender.entry((s.src, s.dst)).or_default() += s.payload;
        }
        let (&(sender, receiver), _) = by_sender
            .iter()
            .max_by_key(|(_, b)| **b)
            .expect("the capture holds TCP segments");
        let segs = segs
            .into_iter()
            .filter(|s| {
                (s.src, s.dst) == (sender, receiver) || (s.src, s.dst) == (receiver, sender)
            })
            .collect();
        Flow { segs, sender }
    }

    /// The endpoint that opened the connection (sent the SYN without ACK).
    pub fn client(&self) -> Option<Endpoint> {
        self.segs
            .iter()
            .find(|s| s.syn && s.ack.is_none())
            .map(|s| s.src)
    }

    /// Segments sent by `from`.
    pub fn sent_by(&self, from: Endpoint) -> impl Iterator<Item = &Seg> {
        self.segs.iter().filter(move |s| s.src == from)
    }

    /// Segments from the data sender carrying payload.
    pub fn data(&self) -> impl Iterator<Item = &Seg> {
        self.segs
            .iter()
            .filter(|s| s.src == self.sender && s.payload > 0)
    }

    /// Segments from the receiver (its ACKs and window updates).
    pub fn receiver_segs(&self) -> impl Iterator<Item = &Seg> {
        self.segs.iter().filter(|s| s.src != self.sender && !s.syn)
    }

    /// The receiver's window-scale shift, from its SYN (0 without one).
    fn receiver_shift(&self) -> u8 {
        self.segs
            .iter()
            .find(|s| s.src != self.sender && s.syn)
            .and_then(|s| s.wscale)
            .unwrap_or(0)
    }

    /// The windows the receiver advertised after its SYN, in bytes.
    pub fn receiver_windows(&self) -> Vec<u64> {
        let shift = self.receiver_shift();
        self.receiver_segs()
            .filter(|s| !s.rst)
            .map(|s| u64::from(s.window) << shift)
            .collect()
    }

    /// How far each of the receiver's segments moved the right edge of
    /// its offered window (ACK + window) to the right, bytes: one entry
    /// per segment that moved it, the first being its first window (the
    /// edge starts at its first ACK, as the stack's counter does), up to
    /// the sender's FIN (whose ACK moves the edge by one, opening nothing).
    pub fn right_edge_moves(&self) -> Vec<u64> {
        let shift = self.receiver_shift();
        let fin = self
            .segs
            .iter()
            .find(|s| s.src == self.sender && s.fin)
            .map(|s| s.seq.wrapping_add(s.payload as u32));
        let mut edge: Option<u32> = None;
        let mut moves = Vec::new();
        let receiver = self.segs.iter().filter(|s| s.src != self.sender && !s.rst);
        for s in receiver {
            let Some(ack) = s.ack else { continue };
            if fin.is_some_and(|f| (ack.wrapping_sub(f) as i32) > 0) {
                break;
            }
            // A SYN's window is never scaled (RFC 7323 §2.2).
            let wnd = u32::from(s.window) << if s.syn { 0 } else { shift };
            let e = ack.wrapping_add(wnd);
            let prev = *edge.get_or_insert(ack);
            let d = e.wrapping_sub(prev);
            if d > 0 && d < 1 << 31 {
                moves.push(u64::from(d));
                edge = Some(e);
            }
        }
        moves
    }

    /// Pure ACKs (no payload, no SYN/FIN/RST) from the receiver.
    pub fn pure_acks(&self) -> usize {
        self.receiver_segs()
            .filter(|s| s.payload == 0 && !s.fin && !s.rst && s.ack.is_some())
            .count()
    }
}

/// The TCP/IPv4 segments of a pcap file (raw IP or Ethernet link type).
pub fn parse_pcap(bytes: &[u8]) -> Vec<Seg> {
    let mut reader = pcap_file::pcap::PcapReader::new(bytes).expect("a pcap file");
    let link = reader.header().datalink;
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet() {
        let p = p.expect("a pcap record");
        assert_eq!(
            p.data.len() as u32,
            p.orig_len,
            "a packet cut short: the capture's snap length"
        );
        let ip = match link {
            pcap_file::DataLink::ETHERNET => {
                if p.data.len() < 14 || p.data[12..14] != [0x08, 0x00] {
                    continue;
                }
                &p.data[14..]
            }
            _ => &p.data[..],
        };
        if let Some(s) = parse_ipv4_tcp(ip) {
            out.push(s);
        }
    }
    out
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The 16-bit one's-complement sum of `data` added to `sum`, not folded.
fn add_words(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fn parse_ipv4_tcp(ip: &[u8]) -> Option<Seg> {
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[9] != 6 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(be16(ip, 2));
    let tcp = ip.get(ihl..total)?;
    let doff = usize::from(tcp[12] >> 4) * 4;
    let flags = tcp[13];
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let mut pseudo = add_words(0, &ip[12..20]);
    pseudo += 6 + tcp.len() as u32;
    let checksum_ok = fold(add_words(pseudo, tcp)) == 0xffff;
    let checksum_partial = be16(tcp, 16) == fold(pseudo);
    let mut wscale = None;
    let mut i = 20;
    while i < doff {
        match tcp[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = usize::from(*tcp.get(i + 1)?).max(2);
                if kind == 3 {
                    wscale = tcp.get(i + 2).copied();
                }
                i += len;
            }
        }
    }
    Some(Seg {
        src: (src, be16(tcp, 0)),
        dst: (dst, be16(tcp, 2)),
        seq: be32(tcp, 4),
        ack: (flags & 0x10 != 0).then(|| be32(tcp, 8)),
        syn: flags & 0x02 != 0,
        fin: flags & 0x01 != 0,
        rst: flags & 0x04 != 0,
        window: be16(tcp, 14),
        wscale,
        payload: tcp.len() - doff,
        checksum_ok,
        checksum_partial,
    })
}
