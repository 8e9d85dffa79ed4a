//! The probed parts of the Guerrero & Frieder report: the traced transfer
//! with its packet classes (Fig. 8) and silly window syndrome on a healthy
//! and a pathological flow. Packets are counted once each, at the sender's
//! egress, in wire segments at the sender's MSS (see
//! [`analysis::path::analyse_with_mss`]).

use super::paper::{SWS_HIGH, SWS_LOW};
use super::CITE;
use crate::data::StudyData;
use analysis::findings::{differ, CurvePoint};
use analysis::path::{analyse_with_mss, silly_limit, PacketClasses, PathAnalysis, SILLY_DIVISOR};
use record::TrialRecord;
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, Unit};
use sections::path::{packet_table, trial_mss, PacketTable};

/// A trial's records analysed with its sender's MSS.
fn analysed(d: &StudyData, t: &TrialRecord) -> Option<PathAnalysis> {
    d.events
        .get(&t.id)
        .map(|ev| analyse_with_mss(ev, trial_mss(t)))
}

/// The probed trial of experiment `id` with the most records, analysed.
fn richest<'a>(d: &'a StudyData, id: &str) -> Option<(&'a TrialRecord, PathAnalysis)> {
    let (t, _) = d
        .trials_of(id)
        .into_iter()
        .filter(|(t, _)| d.events.contains_key(&t.id))
        .max_by_key(|(t, _)| d.events.get(&t.id).map_or(0, Vec::len))?;
    analysed(d, t).map(|a| (t, a))
}

/// The warning of a section whose experiment has no probed trial.
pub(super) fn no_probes(s: &mut Section, what: &str) {
    s.warning(format!(
        "No probed trial of the {what} experiment: it needs root and BPF (see tcplab probes)."
    ));
}

/// The traced transfer: its time–sequence plot, packet classes and what
/// they say about ACKs and window updates.
pub(super) fn time_sequence_section(d: &StudyData) -> Section {
    let mut s = Section::new("A traced transfer: data, ACKs and window updates (Fig. 8)");
    s.paper_finding(
        format!("{CITE}, §3, Figs 5–8"),
        "Traced with a LAN analyzer, each packet is data, an ACK, or an ACK that also opens \
         the window; a receiver that sends a separate window update after each ACK doubles the \
         packets the sender must process.",
    );
    let Some((t, a)) = richest(d, "time-sequence") else {
        no_probes(&mut s, "time-sequence");
        return s;
    };
    let seq = t.seq;
    if let Some(ts) = a.time_sequence.iter().max_by_key(|x| x.data.len()) {
        let base = ts.data.first().map_or(0.0, |p| p.1);
        let pts = |v: &[(f64, f64)]| -> Vec<Point> {
            v.iter()
                .map(|&(t, y)| Point::new(t * 1e3, (y - base) / 1024.0))
                .collect()
        };
        let f = Figure::new(
            format!("Time–sequence of trial {seq} ({})", ts.flow),
            "time (ms)",
            "stream position (KB)",
        )
        .with_series(Series::new("data sent", pts(&ts.data)).with_style(SeriesStyle::Points))
        .with_series(Series::new("acknowledged", pts(&ts.acked)).with_style(SeriesStyle::Path))
        .with_series(
            Series::new("offered window edge", pts(&ts.window_edge)).with_style(SeriesStyle::Path),
        );
        s.push(f);
    }
    s.push(packet_table(&a, PacketTable::Classes { seq }));
    if let Some(f) = packet_finding(&a.packets, t.outcome.metrics.get("data_segs_out").copied()) {
        s.finding(f);
    }
    s
}

/// The sentence on a traced transfer's packets: wire data segments of
/// the data direction (each counted once, at the sender's egress), the
/// ACKs and window updates the other direction sent back, and TCP_INFO's own count of data segments sent (`tcp_info_segs`)
/// as a check.
pub(super) fn packet_finding(
    packets: &[PacketClasses],
    tcp_info_segs: Option<f64>,
) -> Option<String> {
    // The data direction is the flow with the most data bytes; the ACKs
    // and window updates it drew come back the other way.
    let sender = packets.iter().max_by_key(|p| p.data_bytes)?;
    let (data, skbs, bytes) = (sender.data, sender.data_skbs, sender.data_bytes);
    let back = packets.iter().filter(|p| p.flow != sender.flow);
    let (acks, updates) = back.fold((0, 0), |(a, u), p| (a + p.acks, u + p.window_updates));
    if data == 0 {
        return None;
    }
    let mss = sender.mss;
    let counted = match mss {
        Some(m) => format!(
            "{data} data segments on the wire ({skbs} skbs split at the {m}-byte MSS, {:.0} bytes per segment)",
            bytes as f64 / data as f64
        ),
        None => format!(
            "{data} data skbs ({:.0} bytes each; the MSS is unknown, so a GSO aggregate counts as one)",
            bytes as f64 / data as f64
        ),
    };
    let check = tcp_info_segs.map_or(String::new(), |n| {
        format!("; TCP_INFO counted {n:.0} data segments sent")
    });
    Some(format!(
        "Counted once each at the sender's egress, {counted} drew {acks} pure ACKs (one per \
         {:.1} data segments) and {updates} separate window updates{check}{}.",
        data as f64 / acks.max(1) as f64,
        if updates * 10 < acks.max(1) {
            ": the window rides on the ACKs, as the paper's tuned TCP did"
        } else {
            ": window updates add packets of their own, the pitfall the paper fixed"
        }
    ))
}

/// One flow's silly-window counts over every probed trial of an
/// experiment: the data direction of each trial, summed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct SwsCounts {
    /// Wire data segments.
    pub segments: u64,
    /// Data bytes.
    pub bytes: u64,
    /// Silly segments: below MSS / [`SILLY_DIVISOR`] with more data queued.
    pub silly: u64,
    /// The receiver's window samples at data arrivals.
    pub window_samples: u64,
    /// Of them, below one MSS.
    pub windows_below_mss: u64,
    /// The largest window the receiver offered, bytes.
    pub largest_window: u32,
    /// The MSS of each trial (distinct, ascending); empty when unknown.
    pub mss: Vec<u32>,
    /// Trials without an MSS: their segments could not be judged.
    pub trials_without_mss: u32,
}

impl SwsCounts {
    /// Adds the data direction (the flow with the most data bytes) of one
    /// trial's analysis.
    pub fn add(&mut self, packets: &[PacketClasses]) {
        let Some(p) = packets.iter().max_by_key(|p| p.data_bytes) else {
            return;
        };
        self.segments += p.data;
        self.bytes += p.data_bytes;
        self.silly += p.silly;
        self.window_samples += p.window_samples;
        self.windows_below_mss += p.windows_below_mss;
        self.largest_window = self.largest_window.max(p.largest_window);
        match p.mss {
            Some(m) if !self.mss.contains(&m) => {
                self.mss.push(m);
                self.mss.sort_unstable();
            }
            Some(_) => {}
            None => self.trials_without_mss += 1,
        }
    }

    fn mss_text(&self) -> String {
        match self.mss.as_slice() {
            [] => "unknown".into(),
            [m] => format!("{m} B"),
            v => format!("{}–{} B", v[0], v[v.len() - 1]),
        }
    }

    /// The sentence on one flow (`name`, capitalized by the caller).
    pub fn finding(&self, name: &str) -> String {
        if self.mss.is_empty() {
            return format!(
                "{name}: the trials carry no MSS (TCP_INFO snd_mss), so silly segments cannot \
                 be told from full ones: no claim."
            );
        }
        let mss = self.mss[self.mss.len() - 1];
        let share = self.silly as f64 / self.segments.max(1) as f64;
        let below = self.windows_below_mss as f64 / self.window_samples.max(1) as f64;
        let windows = if self.window_samples > 0 {
            format!(
                " and {} of {} windows the receiver offered ({:.0}%) were below one MSS (the \
                 largest was {} B)",
                self.windows_below_mss,
                self.window_samples,
                below * 100.0,
                self.largest_window
            )
        } else {
            " (no receiver window samples: tcp_probe saw no data arrive)".into()
        };
        let verdict = if share >= 0.5 {
            ": silly window syndrome, most segments are tiny".to_string()
        } else if self.silly > 0 {
            format!(
                ": some silly segments ({:.0}%), not the paper's syndrome of nothing else",
                share * 100.0
            )
        } else {
            let halved = self.largest_window > 0
                && (2 * mss).abs_diff(self.largest_window) * 100 <= self.largest_window;
            if halved {
                format!(
                    ": no silly window syndrome. The sender's {mss}-byte MSS is half the largest \
                     window offered: Linux cuts its segments to half the peer's largest window, \
                     RFC 1122's sender-side avoidance, instead of sending tiny ones"
                )
            } else {
                ": no silly window syndrome".into()
            }
        };
        format!(
            "{name}: {} of {} wire data segments ({:.1}%) were silly (under {} B, a quarter of \
             the {mss}-byte MSS, with more data queued){windows}{verdict}.",
            self.silly,
            self.segments,
            share * 100.0,
            silly_limit(mss)
        )
    }
}

/// The SWS counts of experiment `id`, over its probed trials; `None` when
/// none was probed.
fn sws_counts(d: &StudyData, id: &str) -> Option<SwsCounts> {
    let mut c = SwsCounts::default();
    let mut any = false;
    for (t, _) in d.trials_of(id) {
        if let Some(a) = analysed(d, t) {
            any = true;
            c.add(&a.packets);
        }
    }
    any.then_some(c)
}

/// Silly window syndrome on the healthy and the pathological flow.
pub(super) fn sws_section(d: &StudyData) -> Section {
    let mut s = Section::new("Silly window syndrome: healthy and pathological (§3)");
    s.paper_finding(
        format!("{CITE}, §2–3"),
        format!("Against a UNIX receiver, their TCP ended up sending only {SWS_LOW}–{SWS_HIGH}-byte \
         segments whatever the write size: silly window syndrome, fixed by the sender and receiver avoidance \
         algorithms (RFC 1122 §4.2.3.3–4)."),
    );
    let mut t = Table::new([
        "flow",
        "MSS (snd_mss)",
        "data segments (wire)",
        "silly segments",
        "silly share",
        "windows below one MSS",
        "largest window",
        "avg bytes per segment",
        "throughput",
    ])
    .with_caption(format!(
        "Over every probed trial, each packet once at the sender's egress, GSO aggregates split at \
         the MSS. Silly: under MSS/{SILLY_DIVISOR} bytes while more data was queued (the paper's \
         were 32–128 B at an MSS of 1460). Windows: the receiver's offer as each segment arrived \
         (tcp_probe rcv_wnd)."
    ))
    .key();
    let mut rows: Vec<(&str, CurvePoint)> = Vec::new();
    for (id, name) in [
        ("sws-healthy", "healthy: 8 KB writes, reads of up to 512 KB"),
        (
            "sws-pathological",
            "pathological: 2 KB receive buffer, 7-byte reads",
        ),
    ] {
        let Some(c) = sws_counts(d, id) else {
            continue;
        };
        let thr = d
            .points_of(id)
            .first()
            .and_then(|p| p.metrics.get("throughput_bps"))
            .map(|m| CurvePoint {
                x: 0.0,
                mean: m.mean,
                ci: m.ci95,
            });
        t.row([
            name.to_string(),
            c.mss_text(),
            c.segments.to_string(),
            c.silly.to_string(),
            format!("{:.1}%", c.silly as f64 / c.segments.max(1) as f64 * 100.0),
            format!("{} of {}", c.windows_below_mss, c.window_samples),
            format!("{} B", c.largest_window),
            format!("{:.0}", c.bytes as f64 / c.segments.max(1) as f64),
            thr.map_or("—".into(), |m| {
                measure(m.mean, Some(m.ci), Unit::Si("bit/s"))
            }),
        ]);
        let flow = name.split(':').next().unwrap_or(name);
        s.finding(c.finding(&capitalize(flow)));
        if let Some(m) = thr {
            rows.push((flow, m));
        }
    }
    if t.rows.is_empty() {
        no_probes(&mut s, "SWS");
        return s;
    }
    s.push(t);
    if let [(_, h), (_, p)] = rows.as_slice() {
        s.finding(throughput_finding(h, p));
    }
    s
}

/// The pathological flow's throughput `p` against the healthy flow's `h`,
/// claimed different only beyond their 95% CIs.
pub(super) fn throughput_finding(h: &CurvePoint, p: &CurvePoint) -> String {
    let bits = |m: &CurvePoint| measure(m.mean, Some(m.ci), Unit::Si("bit/s"));
    let ci = |m: &CurvePoint| m.ci.is_finite();
    if !(ci(h) && ci(p)) {
        return format!(
            "The pathological flow moved {} against the healthy flow's {}; without a CI on both \
             (one trial) no difference is claimed.",
            bits(p),
            bits(h)
        );
    }
    if differ(h, p) && p.mean > 0.0 {
        format!(
            "The pathological flow moved {} against the healthy flow's {}: {:.0}× {}, beyond \
             the 95% CIs.",
            bits(p),
            bits(h),
            (h.mean / p.mean).max(p.mean / h.mean),
            if p.mean < h.mean { "less" } else { "more" }
        )
    } else {
        format!(
            "The pathological flow moved {} against the healthy flow's {}: no difference beyond \
             the 95% CIs (a difference under {} could not have been seen).",
            bits(p),
            bits(h),
            measure(h.ci + p.ci, None, Unit::Si("bit/s"))
        )
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
