//! Which measured points a report may show as data. A point whose mean
//! throughput exceeds its link's line rate is impossible (the
//! link cannot carry more than its rate, and the rate counts headers and
//! framing the goodput does not), and a UDP receive rate computed from a handful of datagrams says
//! more about the first datagram's timing than about the path: both are
//! flagged with their reason and kept out of figures, findings and
//! verdicts. So is a rate over a shaped link measured across too short an
//! interval: a token bucket lets its burst through at the host's speed, and
//! a late emulator wake-up delivers the frames that were due at once, so
//! over a few milliseconds the receiver sees more than the line rate. A UDP
//! loss rate from fewer than a hundred datagrams sent is not given either.
//!
//! The line rate is the rate the place's link is set to, stored with each
//! trial in `details.lab.place.link.rate_bps` ([`LinkRates`] names it
//! beside the payload ceiling and the calibrated goodput); it is a physical
//! cap only on a place with an emulated link that sets a rate, so only
//! there is a point checked against it.
//!
//! The studies apply these rules to their experiments; the run report,
//! `tcplab compare` and the terminal table of `tcplab show` / `bench` apply
//! them to every run ([`left_out`]).

use crate::PointSummary;
use record::{TestKind, TrialRecord, TrialStatus};

/// The fewest received datagrams a UDP receive rate is computed from. The
/// rate is the bytes received over the time from the first datagram to the
/// last: the first datagram's bytes are counted but not its time on the
/// wire, so n datagrams overstate the rate by about 1/(n − 1); from 100
/// datagrams on that error is about 1% or less.
pub const MIN_DATAGRAMS_FOR_RATE: f64 = 100.0;

/// The fewest datagrams sent (mean per trial) a UDP loss rate is given
/// for: below 100 one lost datagram moves the rate by more than 1%, and a
/// few datagrams that fit in the queues say nothing of the path.
pub const MIN_DATAGRAMS_FOR_LOSS: f64 = 100.0;

/// Whether a UDP loss rate rests on too few datagrams sent (fewer than
/// [`MIN_DATAGRAMS_FOR_LOSS`] per trial) to be given.
pub fn too_few_for_loss(sent: f64) -> bool {
    sent.is_nan() || sent < MIN_DATAGRAMS_FOR_LOSS
}

/// The shortest first-to-last interval, s, a rate over an emulated link is
/// computed from. The kernel's token buckets hold 1 ms at the rate, and the
/// emulator's wake-ups come up to about a millisecond late on a loaded
/// virtual machine; over 20 ms either moves a rate by at most about 5%,
/// less than the headers and framing that separate TCP's goodput from the
/// line rate (6% at a 1448-byte MSS). Over a 2 ms transfer (256 KB at
/// 1 Gbit/s) the bucket alone doubled the rate: 2.2 Gbit/s through lan1g.
pub const MIN_RATE_INTERVAL_S: f64 = 0.02;

/// Whether a rate's first-to-last interval (mean per trial, s) is too short
/// ([`MIN_RATE_INTERVAL_S`]) for a rate over an emulated link.
pub fn too_short_interval(interval_s: f64) -> bool {
    interval_s.is_nan() || interval_s < MIN_RATE_INTERVAL_S
}

/// Whether a mean throughput exceeds the line rate, i.e. is impossible on
/// that link, whatever its CI. The line rate counts every byte on the wire
/// (Ethernet, IP and TCP or UDP headers and the 24 bytes of framing a
/// frame), the throughput only the payload, so a correct measurement stays
/// below it by those headers: 6% for TCP at a 1448-byte MSS, 4% for UDP in
/// full frames. That margin is larger than the calibration's own error (a
/// transfer of about a second, timed to microseconds), so no tolerance is
/// given: a mean above the line rate is an artifact of its measurement
/// (a burst, a late timer, too short an interval), not a rate the link
/// carried.
pub fn above_line_rate(mean_bps: f64, line_rate_bps: f64) -> bool {
    line_rate_bps > 0.0 && mean_bps > line_rate_bps
}

/// Whether a UDP receive rate rests on too few received datagrams (fewer
/// than [`MIN_DATAGRAMS_FOR_RATE`]) to be given as a rate.
pub fn too_few_datagrams(received: f64) -> bool {
    received.is_nan() || received < MIN_DATAGRAMS_FOR_RATE
}

/// Why a point's measure is not shown as data.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// The mean exceeds the link's line rate.
    AboveLineRate {
        /// Mean throughput, bit/s.
        mean_bps: f64,
        /// Its 95% CI half-width, bit/s.
        ci_bps: f64,
        /// The link's line rate, bit/s.
        line_rate_bps: f64,
    },
    /// A UDP receive rate from fewer than [`MIN_DATAGRAMS_FOR_RATE`]
    /// datagrams received (mean per trial).
    TooFewDatagrams {
        /// Datagrams received, mean per trial.
        received: f64,
    },
    /// A rate over an emulated link from a first-to-last interval shorter
    /// than [`MIN_RATE_INTERVAL_S`] (mean per trial).
    TooShortInterval {
        /// The interval, s.
        interval_s: f64,
    },
    /// A UDP loss rate from fewer than [`MIN_DATAGRAMS_FOR_LOSS`]
    /// datagrams sent (mean per trial).
    TooFewForLoss {
        /// Datagrams sent, mean per trial.
        sent: f64,
    },
}

/// A rate in words with the unit that fits it: "1.0 Gbit/s", "10.0 Mbit/s".
fn rate_words(bps: f64) -> String {
    let (div, unit) = if bps >= 1e9 {
        (1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (1e6, "Mbit/s")
    } else {
        (1e3, "kbit/s")
    };
    format!("{:.1} {unit}", bps / div)
}

impl Invalid {
    /// The reason, in words, for a report.
    pub fn reason(&self) -> String {
        match self {
            Invalid::AboveLineRate {
                mean_bps,
                ci_bps,
                line_rate_bps,
            } => format!(
                "invalid: {}: its mean exceeds the link's line rate of {}, which goodput \
                 cannot reach (the line rate counts its headers and framing too)",
                // The one number rule of bench and show (`report::format`).
                report::measure(*mean_bps, Some(*ci_bps), report::Unit::Si("bit/s")),
                rate_words(*line_rate_bps)
            ),
            Invalid::TooFewDatagrams { received } => format!(
                "n/a: the receive rate would rest on {received:.0} datagrams received per trial, \
                 fewer than the {MIN_DATAGRAMS_FOR_RATE:.0} a rate needs"
            ),
            Invalid::TooShortInterval { interval_s } => format!(
                "n/a: the rate would rest on {:.1} ms from first byte to last, shorter than the \
                 {:.0} ms a rate over a shaped link needs (its bucket and timers let a short \
                 transfer through faster than the line rate)",
                interval_s * 1e3,
                MIN_RATE_INTERVAL_S * 1e3
            ),
            Invalid::TooFewForLoss { sent } => format!(
                "n/a: the loss rate would rest on {sent:.0} datagrams sent per trial, fewer than \
                 the {MIN_DATAGRAMS_FOR_LOSS:.0} a loss rate needs"
            ),
        }
    }

    /// The reason in a table cell, in place of the number: "invalid: above
    /// the 1.0 Gbit/s line rate", "n/a: 8 datagrams", "n/a: 2.1 ms
    /// interval", "n/a: 40 datagrams sent".
    pub fn cell(&self) -> String {
        match self {
            Invalid::AboveLineRate { line_rate_bps, .. } => {
                format!(
                    "invalid: above the {} line rate",
                    rate_words(*line_rate_bps)
                )
            }
            Invalid::TooFewDatagrams { received } => format!("n/a: {received:.0} datagrams"),
            Invalid::TooShortInterval { interval_s } => {
                format!("n/a: {:.1} ms interval", interval_s * 1e3)
            }
            Invalid::TooFewForLoss { sent } => format!("n/a: {sent:.0} datagrams sent"),
        }
    }
}

/// Wire bytes per full-sized TCP segment beyond its payload, before the
/// link's framing: Ethernet 14, IPv4 20, TCP 20, timestamps option 12.
pub const TCP_HEADER_BYTES: f64 = 66.0;

/// A shaped or emulated link's rates, each named once so that every
/// report means the same by each word:
/// - the **line rate**: what the link's shaper or emulator is set to
///   (`details.lab.place.link.rate_bps`), counting every byte on the wire,
///   headers and framing included; the physical cap every validity rule
///   and every link share uses;
/// - the **payload ceiling** at an MSS: the most TCP payload the line rate
///   carries in full frames, line rate × MSS / (MSS + 66 + framing);
/// - the **calibrated goodput**: what the place's own calibration transfer
///   (a short cubic bulk transfer when the place was set up) delivered, a
///   measurement, never a cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkRates {
    /// The line rate, bit/s.
    pub line_rate_bps: f64,
    /// Framing bytes per frame beyond the frame (Ethernet's 24, or 0).
    pub framing_bytes: f64,
    /// The calibration transfer's goodput, bit/s (NaN if not stored).
    pub calibrated_goodput_bps: f64,
}

impl LinkRates {
    /// The payload ceiling at `mss`, bit/s.
    pub fn payload_ceiling_bps(&self, mss: f64) -> f64 {
        self.line_rate_bps * mss / (mss + TCP_HEADER_BYTES + self.framing_bytes)
    }
}

/// The rates of the link of the place a point ran in, read from the point's
/// first successful trial of `trials` (all trials of a point share their
/// place): `None` on a place without an emulated link, or with a link
/// that sets no rate (delay or loss only), which caps nothing.
pub fn link_rates(trials: &[TrialRecord], point: &PointSummary) -> Option<LinkRates> {
    let t = trials
        .iter()
        .find(|t| t.point_id == point.point_id && t.status == TrialStatus::Ok)?;
    let lab = &t.outcome.details["lab"];
    let link = &lab["place"]["link"];
    let line_rate_bps = link["rate_bps"].as_f64().filter(|l| *l > 0.0)?;
    Some(LinkRates {
        line_rate_bps,
        framing_bytes: link["framing_bytes"].as_f64().unwrap_or(0.0),
        calibrated_goodput_bps: lab["calibration"]["goodput_bps"]
            .as_f64()
            .unwrap_or(f64::NAN),
    })
}

/// The line rate of the place a point ran in, bit/s ([`LinkRates`]).
pub fn line_rate_bps(trials: &[TrialRecord], point: &PointSummary) -> Option<f64> {
    link_rates(trials, point).map(|r| r.line_rate_bps)
}

/// Whether a point's `throughput_bps` may be shown, given its place's line
/// rate (`None`: no emulated link): `Err` with the reason when its mean
/// exceeds the line rate, when it was measured over an emulated link
/// across too short an interval, or when it is a UDP receive rate from too
/// few datagrams. A point without the metric is `Ok` (there is nothing to
/// show).
pub fn throughput_validity(
    point: &PointSummary,
    line_rate_bps: Option<f64>,
) -> Result<(), Invalid> {
    if let (Some(thr), Some(line)) = (point.metrics.get("throughput_bps"), line_rate_bps) {
        if let Some(interval) = point.metrics.get("delay_s") {
            if too_short_interval(interval.mean) {
                return Err(Invalid::TooShortInterval {
                    interval_s: interval.mean,
                });
            }
        }
        if above_line_rate(thr.mean, line) {
            return Err(Invalid::AboveLineRate {
                mean_bps: thr.mean,
                ci_bps: thr.ci95,
                line_rate_bps: line,
            });
        }
    }
    if point.params.test == TestKind::UdpStream {
        let received = point
            .metrics
            .get("datagrams_received")
            .map_or(0.0, |s| s.mean);
        if too_few_datagrams(received) {
            return Err(Invalid::TooFewDatagrams { received });
        }
    }
    Ok(())
}

/// Whether a UDP point's `loss_rate` may be shown: `Err` when it rests on
/// fewer than [`MIN_DATAGRAMS_FOR_LOSS`] datagrams sent per trial. Points of
/// other tests, or without the metric, are `Ok`.
pub fn loss_validity(point: &PointSummary) -> Result<(), Invalid> {
    if point.params.test != TestKind::UdpStream || !point.metrics.contains_key("loss_rate") {
        return Ok(());
    }
    let sent = point
        .metrics
        .get("datagrams_sent")
        .map_or(f64::NAN, |s| s.mean);
    if too_few_for_loss(sent) {
        return Err(Invalid::TooFewForLoss { sent });
    }
    Ok(())
}

/// How far a side's CPU time read from 10 ms /proc/stat ticks may stray
/// from a time its threads' own clocks give, s: a tick counted or missed at
/// each end of the trial.
pub const TICK_SLACK_S: f64 = 0.02;

/// Why a trial's CPU times for `side` ("sender" or "receiver") cannot be
/// true, if they cannot: the side's whole CPU (its threads plus its CPU's
/// softirq and interrupt time, from 10 ms ticks) below its threads' own CPU
/// time, or above the side's wall time, by more than [`TICK_SLACK_S`]. The
/// tick counts then covered another span than the trial's, and neither the
/// whole figure nor anything divided by it may be shown. `None` when the
/// figures agree or are not there.
pub fn cpu_impossible(
    metrics: &std::collections::BTreeMap<String, f64>,
    side: &str,
) -> Option<String> {
    let get = |k: String| metrics.get(&k).copied().filter(|v| v.is_finite());
    let whole = get(format!("cpu_{side}_whole_s"))?;
    if let Some(threads) = get(format!("cpu_{side}_s")) {
        if whole + TICK_SLACK_S < threads {
            return Some(format!(
                "the {side}'s whole CPU ({whole:.3} s, threads plus softirq from 10 ms ticks) is \
                 below its threads' own {threads:.3} s"
            ));
        }
    }
    if let Some(wall) = get(format!("{side}_wall_s")) {
        if whole > wall + TICK_SLACK_S {
            return Some(format!(
                "the {side}'s whole CPU ({whole:.3} s, from 10 ms ticks) exceeds its {wall:.3} s \
                 of wall time"
            ));
        }
    }
    None
}

/// One measure a report leaves out: the point (index into the points it
/// was computed over), the metric and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    /// Index of the point in the slice given to [`left_out`].
    pub point: usize,
    /// The metric's key (`throughput_bps`, `loss_rate`).
    pub metric: &'static str,
    /// Why it is not shown.
    pub why: Invalid,
}

/// Every measure of a run's points that a report must not show as data,
/// by the rules above, with the line rate each point's place stored in
/// `trials`: the points' `throughput_bps` ([`throughput_validity`]) and
/// `loss_rate` ([`loss_validity`]).
pub fn left_out(trials: &[TrialRecord], points: &[PointSummary]) -> Vec<LeftOut> {
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        if p.metrics.contains_key("throughput_bps") {
            if let Err(why) = throughput_validity(p, line_rate_bps(trials, p)) {
                out.push(LeftOut {
                    point: i,
                    metric: "throughput_bps",
                    why,
                });
            }
        }
        if let Err(why) = loss_validity(p) {
            out.push(LeftOut {
                point: i,
                metric: "loss_rate",
                why,
            });
        }
    }
    out
}

/// Why point `point`'s `metric` is left out, if it is (a lookup in the
/// list [`left_out`] returned).
pub fn why_left_out<'a>(list: &'a [LeftOut], point: usize, metric: &str) -> Option<&'a Invalid> {
    list.iter()
        .find(|l| l.point == point && l.metric == metric)
        .map(|l| &l.why)
}

#[cfg(test)]
mod tests;
