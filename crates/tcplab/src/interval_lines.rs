//! `bench --interval`: the lines printed while a stream trial runs, as
//! iperf3 prints them — one per connection per interval, a `[SUM]` line
//! with `--parallel`, and a closing total per trial.

use engine::interval::{IntervalSample, IntervalSink, StreamInterval};
use record::{TrialOutcome, TrialParams};
use report::format::{number, Unit};
use std::sync::Arc;

/// The column header printed above each trial's interval lines; `tcp_sender`
/// adds the retransmit and congestion window columns.
pub fn column_header(tcp_sender: bool) -> String {
    let (retr, cwnd) = if tcp_sender {
        ("Retr", "Cwnd")
    } else {
        ("", "")
    };
    format!(
        "[ ID] {:<20}{:>10}  {:>13}{retr:>6}{cwnd:>10}",
        "Interval", "Transfer", "Bitrate"
    )
    .trim_end()
    .to_string()
}

/// The sink that prints each interval on stdout as it ends.
pub fn printing_sink() -> IntervalSink {
    Arc::new(|s: &IntervalSample| {
        for l in sample_lines(s) {
            println!("{l}");
        }
    })
}

/// The lines of one interval: one per connection, and a `[SUM]` line when
/// there are several.
pub fn sample_lines(s: &IntervalSample) -> Vec<String> {
    let seconds = s.end_s - s.start_s;
    let mut lines: Vec<String> = s
        .streams
        .iter()
        .map(|c| line(&stream_id(c), s.start_s, s.end_s, c.bytes, seconds, c))
        .collect();
    if s.streams.len() > 1 {
        let sum = StreamInterval {
            stream: 0,
            bytes: s.bytes,
            retransmits: s.retransmits,
            cwnd_bytes: None,
        };
        lines.push(line("SUM", s.start_s, s.end_s, s.bytes, seconds, &sum));
    }
    lines
}

fn stream_id(c: &StreamInterval) -> String {
    format!("{:>3}", c.stream)
}

fn line(
    id: &str,
    start_s: f64,
    end_s: f64,
    bytes: u64,
    seconds: f64,
    c: &StreamInterval,
) -> String {
    let rate = if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        f64::NAN
    };
    let mut l = format!(
        "[{id}] {:>6.2}-{:<8.2}sec  {:>10}  {:>13}",
        start_s,
        end_s,
        number(bytes as f64, Unit::Si("B")),
        number(rate, Unit::Si("bit/s")),
    );
    if let Some(r) = c.retransmits {
        l.push_str(&format!("{r:>6}"));
        if let Some(w) = c.cwnd_bytes {
            l.push_str(&format!("{:>10}", number(w as f64, Unit::Si("B"))));
        }
    }
    l
}

/// The heading of a trial's interval lines: which trial, of which point.
pub fn trial_heading(seq: u32, label: &str, p: &TrialParams) -> Vec<String> {
    let tcp_sender = p.test == record::TestKind::TcpStream && engine::metrics::sender_is_client(p);
    let what = if label.is_empty() {
        String::new()
    } else {
        format!(" ({label})")
    };
    vec![
        format!("trial {}{what}", seq + 1),
        column_header(tcp_sender),
    ]
}

/// The closing lines of a trial, as iperf3's: each connection's total
/// over the whole trial and their sum, from the stored intervals, said
/// to be the client's side (sender, or receiver with --reverse); then the
/// trial's measured throughput.
pub fn trial_summary(p: &TrialParams, o: &TrialOutcome) -> Vec<String> {
    let Some(series) = o
        .details
        .get("intervals")
        .and_then(|v| serde_json::from_value::<Vec<IntervalSample>>(v.clone()).ok())
    else {
        return Vec::new();
    };
    let end_s = series.last().map_or(0.0, |s| s.end_s);
    let mut totals: Vec<StreamInterval> = Vec::new();
    for s in &series {
        for c in &s.streams {
            match totals.iter_mut().find(|t| t.stream == c.stream) {
                Some(t) => {
                    t.bytes += c.bytes;
                    t.retransmits = match (t.retransmits, c.retransmits) {
                        (Some(a), Some(b)) => Some(a + b),
                        (a, b) => a.or(b),
                    };
                }
                None => totals.push(StreamInterval {
                    cwnd_bytes: None,
                    ..c.clone()
                }),
            }
        }
    }
    let whole = IntervalSample {
        start_s: 0.0,
        end_s,
        bytes: totals.iter().map(|t| t.bytes).sum(),
        throughput_bps: 0.0,
        retransmits: totals
            .iter()
            .any(|t| t.retransmits.is_some())
            .then(|| totals.iter().filter_map(|t| t.retransmits).sum()),
        streams: totals,
    };
    let side = if engine::metrics::sender_is_client(p) {
        "sender"
    } else {
        "receiver"
    };
    let mut lines = vec!["- - - - - - - - - - - - - - - - - - - - - - - - -".to_string()];
    lines.extend(
        sample_lines(&whole)
            .into_iter()
            .map(|l| format!("{l}  {side}")),
    );
    if let Some(t) = o.metrics.get("throughput_bps") {
        lines.push(format!(
            "trial throughput {} (received, first to last byte)",
            number(*t, Unit::Si("bit/s"))
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(stream: u32, bytes: u64) -> StreamInterval {
        StreamInterval {
            stream,
            bytes,
            retransmits: Some(1),
            cwnd_bytes: Some(524_288),
        }
    }

    #[test]
    fn an_interval_prints_like_iperf3_with_a_sum_line_for_several_streams() {
        let s = IntervalSample {
            start_s: 0.0,
            end_s: 1.0,
            bytes: 2_000_000_000,
            throughput_bps: 16e9,
            retransmits: Some(2),
            streams: vec![stream(1, 1_000_000_000), stream(2, 1_000_000_000)],
        };
        let l = sample_lines(&s);
        assert_eq!(l.len(), 3, "{l:?}");
        assert_eq!(
            l[0],
            "[  1]   0.00-1.00    sec     1.00 GB    8.00 Gbit/s     1    524 kB"
        );
        assert!(l[2].starts_with("[SUM]   0.00-1.00    sec     2.00 GB    16.0 Gbit/s     2"));
        let one = IntervalSample {
            streams: vec![stream(1, 5)],
            ..s
        };
        assert_eq!(sample_lines(&one).len(), 1);
    }
}
