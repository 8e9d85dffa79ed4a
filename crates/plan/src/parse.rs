//! Parsing of factor values: sizes, durations, rates, booleans, loads, and
//! comma-separated lists of each. Every error names the flag and the value.

use record::{Api, HostSide, HostSpeed, LoadSide, LoadSpec, Pin};
use std::time::Duration;
use thiserror::Error;

/// A factor value that could not be understood.
#[derive(Debug, Error, PartialEq)]
pub enum PlanError {
    /// One value of a flag is invalid.
    #[error("invalid value {value:?} for {flag}: {why}")]
    Invalid {
        /// The flag, e.g. `--write-size`.
        flag: String,
        /// The offending value.
        value: String,
        /// What was expected.
        why: String,
    },
    /// A combination of factors is not allowed.
    #[error("{0}")]
    Combination(String),
}

fn invalid(flag: &str, value: &str, why: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        flag: flag.to_string(),
        value: value.to_string(),
        why: why.into(),
    }
}

/// Splits a comma-separated list and parses each item; empty items are errors.
pub fn list<T>(
    flag: &str,
    s: &str,
    item: impl Fn(&str, &str) -> Result<T, PlanError>,
) -> Result<Vec<T>, PlanError> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(invalid(flag, s, "empty item in the comma-separated list"));
    }
    items.into_iter().map(|i| item(flag, i)).collect()
}

/// A byte size: `1460`, `64K`, `64KiB`, `1M`, `4MB`. K, M, G are powers of 1024
/// as in iperf3 and netperf.
pub fn size(flag: &str, s: &str) -> Result<u64, PlanError> {
    let cfg = parse_size::Config::new().with_binary();
    cfg.parse_size(s).map_err(|e| {
        invalid(
            flag,
            s,
            format!("expected a size like 1460, 64K or 4M ({e})"),
        )
    })
}

/// A positive byte size.
pub fn positive_size(flag: &str, s: &str) -> Result<u64, PlanError> {
    match size(flag, s)? {
        0 => Err(invalid(flag, s, "must be at least 1 byte")),
        n => Ok(n),
    }
}

/// A receive low-water mark: `auto` (None) or a positive byte size.
pub fn rcvlowat(flag: &str, s: &str) -> Result<Option<u64>, PlanError> {
    if s == "auto" {
        return Ok(None);
    }
    positive_size(flag, s).map(Some)
}

/// A duration: `10s`, `500ms`, `2m`, or a bare number of seconds.
pub fn duration(flag: &str, s: &str) -> Result<Duration, PlanError> {
    if let Ok(secs) = s.parse::<f64>() {
        return if secs.is_finite() && secs > 0.0 {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(invalid(flag, s, "must be a positive duration"))
        };
    }
    match humantime::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(invalid(flag, s, "must be a positive duration")),
        Err(e) => Err(invalid(
            flag,
            s,
            format!("expected a duration like 10s or 500ms ({e})"),
        )),
    }
}

/// A duration that may be zero (`0`, `0us`), for per-KB work where zero means none.
pub fn duration_or_zero(flag: &str, s: &str) -> Result<Duration, PlanError> {
    if s.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        == Ok(0.0)
    {
        return Ok(Duration::ZERO);
    }
    duration(flag, s)
}

/// A rate in bits per second: `10mbit`, `1.5gbit`, `100kbit`, `10M`, `1G`,
/// `500mbps` (decimal prefixes, as for links).
pub fn rate(flag: &str, s: &str) -> Result<u64, PlanError> {
    let lower = s.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| invalid(flag, s, "expected a rate like 10mbit or 1.5gbit"))?;
    let mult = match unit.trim() {
        "" | "bit" | "bps" => 1e0,
        "k" | "kbit" | "kbps" => 1e3,
        "m" | "mbit" | "mbps" => 1e6,
        "g" | "gbit" | "gbps" => 1e9,
        other => {
            return Err(invalid(
                flag,
                s,
                format!("unknown rate unit {other:?}; use bit, kbit, mbit or gbit"),
            ))
        }
    };
    let bps = value * mult;
    if !(1.0..1e15).contains(&bps) {
        return Err(invalid(
            flag,
            s,
            "rate must be between 1 bit/s and 1 Pbit/s",
        ));
    }
    Ok(bps.round() as u64)
}

/// A boolean factor level: on/off, yes/no, true/false, 1/0.
pub fn boolean(flag: &str, s: &str) -> Result<bool, PlanError> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(invalid(flag, s, "expected on or off")),
    }
}

/// A count in `lo..=hi`.
pub fn count(flag: &str, s: &str, lo: u32, hi: u32) -> Result<u32, PlanError> {
    match s.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(invalid(
            flag,
            s,
            format!("expected a whole number from {lo} to {hi}"),
        )),
    }
}

/// A send API name.
pub fn api(flag: &str, s: &str) -> Result<Api, PlanError> {
    Api::from_name(s)
        .ok_or_else(|| invalid(flag, s, "expected write, sendmsg, sendfile or zerocopy"))
}

/// A protocol layer of `layer-rate`: eth, ip, udp or tcp.
pub fn layer(flag: &str, s: &str) -> Result<record::Layer, PlanError> {
    record::Layer::ALL
        .into_iter()
        .find(|l| l.name() == s)
        .ok_or_else(|| invalid(flag, s, "expected eth, ip, udp or tcp"))
}

/// A load level: `sender:N`, `receiver:N`, or `none`.
pub fn load(flag: &str, s: &str) -> Result<Option<LoadSpec>, PlanError> {
    if s == "none" || s == "0" {
        return Ok(None);
    }
    let (side, n) = s
        .split_once(':')
        .ok_or_else(|| invalid(flag, s, "expected sender:N, receiver:N or none"))?;
    let side = match side {
        "sender" => LoadSide::Sender,
        "receiver" => LoadSide::Receiver,
        _ => return Err(invalid(flag, s, "the side must be sender or receiver")),
    };
    let workers = count(flag, n, 0, 64)?;
    Ok((workers > 0).then_some(LoadSpec { side, workers }))
}

/// A host-speed level: `sender=0.25`, `receiver=0.5`, `both=0.1`, or `none`
/// (fractions of one CPU).
pub fn host_speed(flag: &str, s: &str) -> Result<Option<HostSpeed>, PlanError> {
    if s == "none" {
        return Ok(None);
    }
    let (side, f) = s
        .split_once('=')
        .ok_or_else(|| invalid(flag, s, "expected sender=F, receiver=F, both=F or none"))?;
    let side = match side {
        "sender" => HostSide::Sender,
        "receiver" => HostSide::Receiver,
        "both" => HostSide::Both,
        _ => {
            return Err(invalid(
                flag,
                s,
                "the side must be sender, receiver or both",
            ))
        }
    };
    let fraction: f64 = f
        .parse()
        .ok()
        .filter(|x: &f64| *x > 0.0 && *x <= 64.0)
        .ok_or_else(|| {
            invalid(
                flag,
                s,
                "the speed is a fraction of one CPU above 0, e.g. 0.25",
            )
        })?;
    Ok(Some(HostSpeed { side, fraction }))
}

/// `--pin sender=0,receiver=1`: CPUs per side (one level; `cpus` is the host's count).
pub fn pin(flag: &str, s: &str, cpus: u32) -> Result<Pin, PlanError> {
    let mut pin = Pin {
        sender: None,
        receiver: None,
    };
    for item in s.split(',').map(str::trim) {
        let (side, cpu) = item
            .split_once('=')
            .ok_or_else(|| invalid(flag, s, "expected sender=CPU,receiver=CPU"))?;
        let cpu = count(flag, cpu, 0, cpus.saturating_sub(1))?;
        match side {
            "sender" if pin.sender.is_none() => pin.sender = Some(cpu),
            "receiver" if pin.receiver.is_none() => pin.receiver = Some(cpu),
            _ => {
                return Err(invalid(
                    flag,
                    s,
                    "name sender and receiver at most once each",
                ))
            }
        }
    }
    Ok(pin)
}

/// A congestion control name as the kernel knows it (`cubic`, `bbr`, `reno`).
pub fn cc_name(flag: &str, s: &str) -> Result<String, PlanError> {
    if s.len() <= 15 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(s.to_string())
    } else {
        Err(invalid(flag, s, "not a congestion control module name"))
    }
}

/// `--precision LEVEL,PCT`: confidence level and relative CI half-width, in percent.
pub fn precision(flag: &str, s: &str) -> Result<(f64, f64), PlanError> {
    let (level, pct) = s
        .split_once(',')
        .ok_or_else(|| invalid(flag, s, "expected LEVEL,PERCENT such as 95,5"))?;
    let level: f64 = level
        .trim()
        .parse()
        .map_err(|_| invalid(flag, s, "the confidence level must be a number such as 95"))?;
    let pct: f64 = pct
        .trim()
        .parse()
        .map_err(|_| invalid(flag, s, "the half-width must be a percentage such as 5"))?;
    if !(50.0..100.0).contains(&level) {
        return Err(invalid(
            flag,
            s,
            "the confidence level must be at least 50 and below 100",
        ));
    }
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(invalid(
            flag,
            s,
            "the half-width must be above 0 and at most 100 percent",
        ));
    }
    Ok((level / 100.0, pct / 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size("--write-size", "1460"), Ok(1460));
        assert_eq!(size("--write-size", "64K"), Ok(65536));
        assert_eq!(size("--write-size", "64KiB"), Ok(65536));
        assert_eq!(size("--write-size", "4M"), Ok(4 << 20));
        assert!(size("--write-size", "abc").is_err());
        assert!(positive_size("--write-size", "0").is_err());
        let e = list("--write-size", "10,,20", size)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--write-size"), "{e}");
    }

    #[test]
    fn rates_and_durations() {
        assert_eq!(rate("--send-rate", "10mbit"), Ok(10_000_000));
        assert_eq!(rate("--send-rate", "1.5gbit"), Ok(1_500_000_000));
        assert_eq!(rate("--send-rate", "100k"), Ok(100_000));
        assert!(rate("--send-rate", "10 parsecs").is_err());
        assert!(rate("--send-rate", "0").is_err());
        assert_eq!(
            duration("--duration", "500ms"),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(duration("--duration", "2"), Ok(Duration::from_secs(2)));
        assert!(duration("--duration", "0s").is_err());
        assert!(duration("--duration", "-1").is_err());
    }

    #[test]
    fn loads_and_precision() {
        assert_eq!(
            load("--load", "receiver:3"),
            Ok(Some(LoadSpec {
                side: LoadSide::Receiver,
                workers: 3
            }))
        );
        assert_eq!(load("--load", "none"), Ok(None));
        assert!(load("--load", "both:2").is_err());
        assert_eq!(precision("--precision", "95,5"), Ok((0.95, 0.05)));
        assert!(precision("--precision", "95").is_err());
        assert!(precision("--precision", "100,5").is_err());
    }
}
