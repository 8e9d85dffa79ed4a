//! Combining the client's and the server's side reports into one trial's
//! metrics, and deciding whether the trial failed.

use crate::error::EngineError;
use crate::report::SideReport;
use crate::tcpinfo::TcpInfo;
use record::{TestKind, TrialOutcome, TrialParams};
use std::collections::BTreeMap;

/// The side that sends bulk data (or requests, for transaction tests).
pub fn sender_is_client(p: &TrialParams) -> bool {
    !(p.reverse && matches!(p.test, TestKind::TcpStream | TestKind::UdpStream))
}

/// Turns both sides' reports into a trial outcome, or the reason it failed.
pub fn combine(
    p: &TrialParams,
    client: &SideReport,
    server: &SideReport,
) -> Result<TrialOutcome, EngineError> {
    check_errors(client, server)?;
    let (snd, rcv) = if sender_is_client(p) {
        (client, server)
    } else {
        (server, client)
    };
    let mut m = BTreeMap::new();
    cpu_metrics(&mut m, snd, rcv);
    match p.test {
        TestKind::TcpStream => stream_metrics(&mut m, snd, rcv)?,
        TestKind::UdpStream => udp_metrics(&mut m, p, snd, rcv)?,
        TestKind::LayerRate => {
            return Err(EngineError::Protocol(
                "layer-rate is combined as its carrier test (workloads::layer::effective)".into(),
            ))
        }
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::Http => {
            transaction_metrics(&mut m, client)?;
            let t = client.transactions as f64;
            m.insert(
                "cpu_sender_us_per_transaction".into(),
                snd.cpu_s() * 1e6 / t,
            );
            m.insert(
                "cpu_receiver_us_per_transaction".into(),
                rcv.cpu_s() * 1e6 / t,
            );
        }
    }
    let bytes = m.get("bytes").copied().unwrap_or(0.0);
    let cpu = snd.cpu_s() + rcv.cpu_s();
    if cpu > 0.0 && bytes > 0.0 {
        m.insert("bytes_per_cpu_s".into(), bytes / cpu);
        let kb = bytes / 1024.0;
        m.insert(
            "service_demand_sender_us_per_kb".into(),
            snd.cpu_s() * 1e6 / kb,
        );
        m.insert(
            "service_demand_receiver_us_per_kb".into(),
            rcv.cpu_s() * 1e6 / kb,
        );
    }
    if let Some(l) = snd.load_cpu_s.or(rcv.load_cpu_s) {
        m.insert("load_cpu_s".into(), l);
    }
    let mut details = serde_json::json!({
        "client": client,
        "server": server,
        "tids": { "sender": snd.tids, "receiver": rcv.tids },
    });
    if let Some(streams) = stream_shares(p, client, rcv, m.get("throughput_bps").copied()) {
        details["streams"] = serde_json::to_value(streams).unwrap_or_default();
    }
    Ok(TrialOutcome {
        metrics: m,
        details,
        events: None,
        profile: None,
        path_summary: None,
    })
}

/// One connection's share of a stream trial (`--parallel`), as stored in
/// the trial's details under `streams`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StreamShare {
    /// The connection, from 1, in the client's order (the numbering of
    /// the `--interval` lines).
    pub stream: u32,
    /// Payload bytes it moved (received bytes for UDP).
    pub bytes: u64,
    /// Its share of the trial's throughput: the trial's rate times its
    /// share of the bytes, so the streams' rates add up to the trial's, as
    /// iperf3's per-stream rows add up to its `[SUM]`.
    pub throughput_bps: Option<f64>,
    /// Segments it retransmitted (TCP, when the client sends).
    pub retransmits: Option<u32>,
}

/// Each connection's share of a stream trial. TCP connections are counted
/// on the client (both ends of a connection count the same bytes, and the
/// client's order numbers the interval lines); UDP flows on the receiver,
/// whose flow i is the client's (one port per flow).
fn stream_shares(
    p: &TrialParams,
    client: &SideReport,
    rcv: &SideReport,
    throughput_bps: Option<f64>,
) -> Option<Vec<StreamShare>> {
    let side = match p.test {
        TestKind::TcpStream => client,
        TestKind::UdpStream => rcv,
        _ => return None,
    };
    let total: u64 = side.streams.iter().map(|s| s.bytes).sum();
    let client_sends = sender_is_client(p);
    let shares = side
        .streams
        .iter()
        .enumerate()
        .map(|(i, s)| StreamShare {
            stream: i as u32 + 1,
            bytes: s.bytes,
            throughput_bps: throughput_bps
                .filter(|_| total > 0)
                .map(|t| t * s.bytes as f64 / total as f64),
            retransmits: s
                .retransmits
                .filter(|_| client_sends && p.test == TestKind::TcpStream),
        })
        .collect();
    Some(shares)
}

fn check_errors(client: &SideReport, server: &SideReport) -> Result<(), EngineError> {
    let mut errs: Vec<String> = client
        .errors
        .iter()
        .map(|e| format!("client: {e}"))
        .collect();
    errs.extend(server.errors.iter().map(|e| format!("server: {e}")));
    if !errs.is_empty() {
        errs.dedup();
        return Err(EngineError::Endpoint(errs.join("; ")));
    }
    for (side, r) in [("client", client), ("server", server)] {
        if r.integrity_errors > 0 {
            return Err(EngineError::Integrity(format!(
                "{side} received {} reads or datagrams that differ from what was sent",
                r.integrity_errors
            )));
        }
    }
    Ok(())
}

fn cpu_metrics(m: &mut BTreeMap<String, f64>, snd: &SideReport, rcv: &SideReport) {
    m.insert("cpu_sender_s".into(), snd.cpu_s());
    m.insert("cpu_sender_user_s".into(), snd.cpu_user_s);
    m.insert("cpu_sender_sys_s".into(), snd.cpu_sys_s);
    m.insert("cpu_receiver_s".into(), rcv.cpu_s());
    m.insert("cpu_receiver_user_s".into(), rcv.cpu_user_s);
    m.insert("cpu_receiver_sys_s".into(), rcv.cpu_sys_s);
    m.insert("sender_wall_s".into(), snd.wall_s);
    m.insert("receiver_wall_s".into(), rcv.wall_s);
}

fn throughput(m: &mut BTreeMap<String, f64>, bytes: u64, delay: Option<f64>, fallback_s: f64) {
    m.insert("bytes".into(), bytes as f64);
    // A transfer that arrived in a single read has no first-to-last delay;
    // the sender's wall time is then the only honest duration.
    let d = delay.filter(|d| *d > 0.0).unwrap_or(fallback_s);
    m.insert("delay_s".into(), d);
    if d > 0.0 {
        m.insert("throughput_bps".into(), bytes as f64 * 8.0 / d);
    }
}

fn stream_metrics(
    m: &mut BTreeMap<String, f64>,
    snd: &SideReport,
    rcv: &SideReport,
) -> Result<(), EngineError> {
    if rcv.bytes != snd.bytes {
        return Err(EngineError::Integrity(format!(
            "receiver got {} of the {} bytes sent",
            rcv.bytes, snd.bytes
        )));
    }
    if rcv.bytes == 0 {
        return Err(EngineError::Endpoint("no data was transferred".into()));
    }
    throughput(m, rcv.bytes, rcv.delay_s, snd.wall_s);
    stream_receive_rate(m, rcv);
    if snd.calls > 0 && rcv.calls > 0 {
        m.insert("sender_calls".into(), snd.calls as f64);
        m.insert("receiver_calls".into(), rcv.calls as f64);
        m.insert(
            "receiver_bytes_per_read".into(),
            rcv.bytes as f64 / rcv.calls as f64,
        );
    }
    tcp_info_metrics(m, &snd.tcp_info, &rcv.tcp_info);
    if let Some(z) = &snd.zerocopy {
        m.insert("zerocopy_sends".into(), z.sends as f64);
        m.insert("zerocopy_copied".into(), z.copied as f64);
    }
    Ok(())
}

/// A stream receiver's rate over its first-to-last interval counts the
/// bytes that arrived inside it: the first read's bytes came before the
/// interval began. Counting them overstated short transfers whose receiver
/// woke late: 256 KB over lan100 in 1 KB writes measured 102.6 ± 2.2 Mbit/s
/// through a 99.2 Mbit/s line. A transfer that arrived in one read keeps the
/// sender's wall time (see [`throughput`]).
fn stream_receive_rate(m: &mut BTreeMap<String, f64>, rcv: &SideReport) {
    if let Some(d) = rcv.delay_s.filter(|d| *d > 0.0) {
        let inside = rcv.bytes.saturating_sub(rcv.first_read_bytes);
        if inside > 0 {
            m.insert("throughput_bps".into(), inside as f64 * 8.0 / d);
        }
    }
}

fn sum<F: Fn(&TcpInfo) -> Option<f64>>(infos: &[TcpInfo], f: F) -> Option<f64> {
    let v: Vec<f64> = infos.iter().filter_map(f).collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

fn tcp_info_metrics(m: &mut BTreeMap<String, f64>, snd: &[TcpInfo], rcv: &[TcpInfo]) {
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    };
    let n = snd.len().max(1) as f64;
    put("segs_out", sum(snd, |i| i.segs_out.map(f64::from)));
    put("segs_in", sum(snd, |i| i.segs_in.map(f64::from)));
    put(
        "data_segs_out",
        sum(snd, |i| i.data_segs_out.map(f64::from)),
    );
    put("receiver_segs_out", sum(rcv, |i| i.segs_out.map(f64::from)));
    put(
        "receiver_data_segs_in",
        sum(rcv, |i| i.data_segs_in.map(f64::from)),
    );
    put(
        "retransmits",
        sum(snd, |i| Some(f64::from(i.total_retrans))),
    );
    // Bytes beside segments: a retransmitted full segment and a resent
    // byte weigh differently against the bytes moved (issue 30, rule 2).
    put("bytes_sent", sum(snd, |i| i.bytes_sent.map(|b| b as f64)));
    put(
        "bytes_retrans",
        sum(snd, |i| i.bytes_retrans.map(|b| b as f64)),
    );
    put(
        "cwnd_segments",
        sum(snd, |i| Some(f64::from(i.snd_cwnd))).map(|s| s / n),
    );
    put(
        "snd_mss",
        sum(snd, |i| Some(f64::from(i.snd_mss))).map(|s| s / n),
    );
    put(
        "rtt_s",
        sum(snd, |i| Some(f64::from(i.rtt_us) * 1e-6)).map(|s| s / n),
    );
    put(
        "rttvar_s",
        sum(snd, |i| Some(f64::from(i.rttvar_us) * 1e-6)).map(|s| s / n),
    );
    put(
        "delivery_rate_bps",
        sum(snd, |i| i.delivery_rate.map(|r| r as f64 * 8.0)),
    );
    put(
        "busy_s",
        sum(snd, |i| i.busy_time_us.map(|t| t as f64 * 1e-6)).map(|s| s / n),
    );
    put(
        "rwnd_limited_s",
        sum(snd, |i| i.rwnd_limited_us.map(|t| t as f64 * 1e-6)).map(|s| s / n),
    );
    put(
        "sndbuf_limited_s",
        sum(snd, |i| i.sndbuf_limited_us.map(|t| t as f64 * 1e-6)).map(|s| s / n),
    );
}

fn udp_metrics(
    m: &mut BTreeMap<String, f64>,
    p: &TrialParams,
    snd: &SideReport,
    rcv: &SideReport,
) -> Result<(), EngineError> {
    let (Some(su), Some(ru)) = (&snd.udp, &rcv.udp) else {
        return Err(EngineError::Protocol(
            "UDP counters missing from a report".into(),
        ));
    };
    if su.sent == 0 {
        return Err(EngineError::Endpoint("no datagram was sent".into()));
    }
    throughput(m, rcv.bytes, rcv.delay_s, snd.wall_s);
    udp_receive_rate(m, p, ru.distinct, rcv.delay_s);
    let lost = su.sent.saturating_sub(ru.distinct);
    m.insert("datagrams_sent".into(), su.sent as f64);
    m.insert("datagrams_received".into(), ru.distinct as f64);
    m.insert("datagrams_lost".into(), lost as f64);
    m.insert("loss_rate".into(), lost as f64 / su.sent as f64);
    m.insert("duplicates".into(), ru.duplicates as f64);
    m.insert("reordered".into(), ru.reordered as f64);
    m.insert("jitter_s".into(), ru.jitter_s);
    m.insert("send_errors".into(), su.send_errors as f64);
    m.insert("socket_drops".into(), ru.socket_drops as f64);
    // Present only when it happened, so tables show the column only then.
    if ru.out_of_window > 0 {
        m.insert("out_of_window".into(), ru.out_of_window as f64);
    }
    m.insert("datagrams_rejected".into(), ru.rejected as f64);
    if let Some(k) = &rcv.kernel_udp {
        m.insert("kernel_rcvbuf_errors".into(), k.rcvbuf_errors as f64);
        m.insert("kernel_in_errors".into(), k.in_errors as f64);
        m.insert("kernel_backlog_drops".into(), k.backlog_drops as f64);
    }
    if snd.wall_s > 0.0 {
        m.insert("offered_bps".into(), snd.bytes as f64 * 8.0 / snd.wall_s);
    }
    Ok(())
}

/// The fewest datagrams a UDP receive rate is computed from. Below it the
/// first-to-last interval spans a handful of arrivals and the rate says
/// nothing: a trial on ether10 that lost 99.998% of its 8 KB datagrams
/// gave "5.8 ± 74.2 Mbit/s". The trial then has no `throughput_bps`
/// (tables show "—"); its loss and datagram counts stay.
pub const MIN_DATAGRAMS_FOR_RATE: u64 = 10;

/// A UDP receiver's rate over its first-to-last arrival interval counts the
/// datagrams after the first: n arrivals bound n − 1 gaps, so counting all
/// n overstates the rate by n/(n − 1). Without the interval (one arrival)
/// or with too few datagrams there is no rate.
fn udp_receive_rate(
    m: &mut BTreeMap<String, f64>,
    p: &TrialParams,
    distinct: u64,
    delay_s: Option<f64>,
) {
    match delay_s.filter(|d| *d > 0.0) {
        Some(d) if distinct >= MIN_DATAGRAMS_FOR_RATE => {
            let after_first = (distinct - 1) * p.write_size;
            m.insert("throughput_bps".into(), after_first as f64 * 8.0 / d);
        }
        _ => {
            m.remove("throughput_bps");
        }
    }
}

fn transaction_metrics(
    m: &mut BTreeMap<String, f64>,
    client: &SideReport,
) -> Result<(), EngineError> {
    if client.transactions == 0 {
        return Err(EngineError::Endpoint("no transaction completed".into()));
    }
    m.insert("transactions".into(), client.transactions as f64);
    m.insert("bytes".into(), client.bytes as f64);
    if client.wall_s > 0.0 {
        m.insert(
            "transactions_per_s".into(),
            client.transactions as f64 / client.wall_s,
        );
        m.insert(
            "throughput_bps".into(),
            client.bytes as f64 * 8.0 / client.wall_s,
        );
    }
    if let Some(l) = &client.latency {
        m.insert("latency_mean_s".into(), l.mean_s);
        m.insert("latency_min_s".into(), l.min_s);
        m.insert("latency_p50_s".into(), l.p50_s);
        m.insert("latency_p90_s".into(), l.p90_s);
        m.insert("latency_p99_s".into(), l.p99_s);
        m.insert("latency_p999_s".into(), l.p999_s);
        m.insert("latency_max_s".into(), l.max_s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::TestKind;

    fn rate(write_size: u64, distinct: u64, delay_s: Option<f64>) -> Option<f64> {
        let mut p = TrialParams::defaults(TestKind::UdpStream);
        p.write_size = write_size;
        let mut m = BTreeMap::new();
        // What `throughput` put there before: every byte over the interval.
        m.insert("throughput_bps".into(), 1e12);
        udp_receive_rate(&mut m, &p, distinct, delay_s);
        m.get("throughput_bps").copied()
    }

    #[test]
    fn a_udp_rate_counts_the_gaps_between_arrivals_and_needs_enough_of_them() {
        // 1001 datagrams of 1250 bytes 1 ms apart: 1000 gaps, 10 Mbit/s.
        let r = rate(1250, 1001, Some(1.0)).unwrap();
        assert!((r - 10e6).abs() < 1.0, "{r}");
        // Ten datagrams a second apart in all: nine gaps, not ten.
        let r = rate(1000, 10, Some(1.0)).unwrap();
        assert!((r - 9.0 * 8000.0).abs() < 1e-6, "{r}");
        // Below the minimum, and with no interval, there is no rate.
        assert_eq!(rate(8192, MIN_DATAGRAMS_FOR_RATE - 1, Some(0.001)), None);
        assert_eq!(rate(8192, 500, None), None);
        assert_eq!(rate(8192, 500, Some(0.0)), None);
    }

    #[test]
    fn a_stream_rate_leaves_out_the_bytes_of_the_first_read() {
        let rcv = |first_read_bytes: u64, delay_s: Option<f64>| SideReport {
            bytes: 262_144,
            first_read_bytes,
            delay_s,
            ..SideReport::default()
        };
        let rate = |r: SideReport| {
            let mut m = BTreeMap::new();
            throughput(&mut m, r.bytes, r.delay_s, 0.5);
            stream_receive_rate(&mut m, &r);
            m["throughput_bps"]
        };
        // 256 KB over 20 ms, 12 KB of it in the first read: the other
        // 250 KB arrived over the interval.
        let r = rate(rcv(12_288, Some(0.02)));
        assert!((r - 249_856.0 * 8.0 / 0.02).abs() < 1e-6, "{r}");
        // A first read of one segment barely matters; none at all, none.
        let r = rate(rcv(0, Some(0.02)));
        assert!((r - 262_144.0 * 8.0 / 0.02).abs() < 1e-6, "{r}");
        // One read and no interval: the sender's wall time, every byte.
        let r = rate(rcv(262_144, None));
        assert!((r - 262_144.0 * 8.0 / 0.5).abs() < 1e-6, "{r}");
    }
}
