//! TCP_INFO, read by offset from the kernel's `struct tcp_info` (linux/tcp.h)
//! so older kernels that return a shorter struct yield `None` for the fields
//! they lack instead of garbage.

use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, BorrowedFd};

/// The TCP_INFO fields tcplab reports for one connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpInfo {
    /// Sender maximum segment size (bytes).
    pub snd_mss: u32,
    /// Receiver MSS estimate (bytes).
    pub rcv_mss: u32,
    /// Smoothed RTT (µs).
    pub rtt_us: u32,
    /// RTT variance (µs).
    pub rttvar_us: u32,
    /// Congestion window (segments).
    pub snd_cwnd: u32,
    /// Slow-start threshold (segments).
    pub snd_ssthresh: u32,
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u32,
    /// Segments sent, including pure ACKs.
    pub segs_out: Option<u32>,
    /// Segments received, including pure ACKs.
    pub segs_in: Option<u32>,
    /// Segments sent carrying data.
    pub data_segs_out: Option<u32>,
    /// Segments received carrying data.
    pub data_segs_in: Option<u32>,
    /// Most recent delivery-rate sample (bytes/s).
    pub delivery_rate: Option<u64>,
    /// Bytes acknowledged by the peer.
    pub bytes_acked: Option<u64>,
    /// Bytes received in order.
    pub bytes_received: Option<u64>,
    /// Time busy sending data (µs).
    pub busy_time_us: Option<u64>,
    /// Time limited by the receive window (µs).
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer (µs).
    pub sndbuf_limited_us: Option<u64>,
    /// Data bytes sent, including retransmissions.
    pub bytes_sent: Option<u64>,
    /// Bytes retransmitted.
    pub bytes_retrans: Option<u64>,
    /// Peer's advertised window (bytes).
    pub snd_wnd: Option<u32>,
    /// Our advertised window (bytes).
    pub rcv_wnd: Option<u32>,
}

const TCP_INFO_MAX: usize = 256;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
}

impl TcpInfo {
    /// Reads TCP_INFO from a connected TCP socket.
    pub fn read(fd: BorrowedFd<'_>) -> std::io::Result<TcpInfo> {
        let mut buf = [0u8; TCP_INFO_MAX];
        let mut len = buf.len() as libc::socklen_t;
        // SAFETY: buf is writable for len bytes; the kernel writes at most len.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_INFO,
                buf.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(TcpInfo::parse(&buf[..len as usize]))
    }

    /// Parses the kernel struct from its raw bytes (offsets of linux/tcp.h).
    pub fn parse(b: &[u8]) -> TcpInfo {
        TcpInfo {
            snd_mss: u32_at(b, 16).unwrap_or(0),
            rcv_mss: u32_at(b, 20).unwrap_or(0),
            rtt_us: u32_at(b, 68).unwrap_or(0),
            rttvar_us: u32_at(b, 72).unwrap_or(0),
            snd_ssthresh: u32_at(b, 76).unwrap_or(0),
            snd_cwnd: u32_at(b, 80).unwrap_or(0),
            total_retrans: u32_at(b, 100).unwrap_or(0),
            bytes_acked: u64_at(b, 120),
            bytes_received: u64_at(b, 128),
            segs_out: u32_at(b, 136),
            segs_in: u32_at(b, 140),
            data_segs_in: u32_at(b, 152),
            data_segs_out: u32_at(b, 156),
            delivery_rate: u64_at(b, 160),
            busy_time_us: u64_at(b, 168),
            rwnd_limited_us: u64_at(b, 176),
            sndbuf_limited_us: u64_at(b, 184),
            bytes_sent: u64_at(b, 200),
            bytes_retrans: u64_at(b, 208),
            snd_wnd: u32_at(b, 228),
            rcv_wnd: u32_at(b, 232),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    #[test]
    fn counts_segments_of_a_real_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = vec![0u8; 100_000];
            let mut n = 0;
            while n < buf.len() {
                n += s.read(&mut buf[n..]).unwrap();
            }
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(&vec![7u8; 100_000]).unwrap();
        t.join().unwrap();
        let info = TcpInfo::read(c.as_fd()).unwrap();
        assert!(info.snd_mss > 0);
        assert!(info.data_segs_out.unwrap() >= 2);
        assert!(info.bytes_acked.unwrap() >= 100_000);
    }
}
