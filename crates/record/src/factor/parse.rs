//! Parsing of factor levels: sizes, durations, rates, counts, booleans,
//! loads, host speeds, pinning, congestion control and layer names, and
//! comma-separated lists of each. A parser sees one level; the flag it
//! came from is added by [`FactorError`].

use super::level_types::{
    Api, HostSide, HostSpeed, LoadSide, LoadSpec, Pin, ProtocolLayer, StackImpl,
};
use std::time::Duration;
use thiserror::Error;

/// One level that could not be understood, before its flag is known.
#[derive(Debug, Error, PartialEq)]
#[error("invalid value {value:?}: {why}")]
pub struct LevelError {
    /// The offending text.
    pub value: String,
    /// What was expected.
    pub why: String,
}

impl LevelError {
    /// The error for `value`, saying what was expected.
    pub fn new(value: &str, why: impl Into<String>) -> LevelError {
        LevelError {
            value: value.to_string(),
            why: why.into(),
        }
    }

    /// The same error, naming the flag (`--write-size`) it was given to.
    pub fn for_flag(self, flag: &str) -> FactorError {
        FactorError::Invalid {
            flag: flag.to_string(),
            value: self.value,
            why: self.why,
        }
    }
}

/// Factor levels that cannot make a sweep.
#[derive(Debug, Error, PartialEq)]
pub enum FactorError {
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

/// What a few parsers need to know about the host the sweep runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    /// Online CPUs: `--pin` takes CPUs below this.
    pub online_cpus: u32,
    /// The most `--routes` the lab can install.
    pub max_routes: u32,
}

/// Splits a comma-separated list and parses each item; empty items are errors.
pub fn list<T>(
    s: &str,
    item: impl Fn(&str) -> Result<T, LevelError>,
) -> Result<Vec<T>, LevelError> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(LevelError::new(s, "empty item in the comma-separated list"));
    }
    items.into_iter().map(item).collect()
}

/// A byte size: `1460`, `64K`, `64KiB`, `1M`, `4MB`. K, M, G are powers of 1024
/// as in iperf3 and netperf.
pub fn size(s: &str) -> Result<u64, LevelError> {
    let cfg = parse_size::Config::new().with_binary();
    cfg.parse_size(s)
        .map_err(|e| LevelError::new(s, format!("expected a size like 1460, 64K or 4M ({e})")))
}

/// A positive byte size.
pub fn positive_size(s: &str) -> Result<u64, LevelError> {
    match size(s)? {
        0 => Err(LevelError::new(s, "must be at least 1 byte")),
        n => Ok(n),
    }
}

/// A receive low-water mark: `auto` (None) or a positive byte size.
pub fn rcvlowat(s: &str) -> Result<Option<u64>, LevelError> {
    if s == "auto" {
        return Ok(None);
    }
    positive_size(s).map(Some)
}

/// A duration: `10s`, `500ms`, `2m`, or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, LevelError> {
    if s.trim_start().starts_with('-') {
        return Err(LevelError::new(s, "a duration cannot be negative"));
    }
    if let Ok(secs) = s.parse::<f64>() {
        return if secs.is_finite() && secs > 0.0 {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(LevelError::new(s, "must be a positive duration"))
        };
    }
    match humantime::parse_duration(s) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(LevelError::new(s, "must be a positive duration")),
        Err(e) => Err(LevelError::new(
            s,
            format!("expected a duration like 10s or 500ms ({e})"),
        )),
    }
}

/// A duration that may be zero (`0`, `0us`), for per-KB work where zero means none.
pub fn duration_or_zero(s: &str) -> Result<Duration, LevelError> {
    if s.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        == Ok(0.0)
    {
        return Ok(Duration::ZERO);
    }
    duration(s)
}

/// A rate in bits per second: `10mbit`, `1.5gbit`, `100kbit`, `10M`, `1G`,
/// `500mbps` (decimal prefixes, as for links).
pub fn rate(s: &str) -> Result<u64, LevelError> {
    let lower = s.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| LevelError::new(s, "expected a rate like 10mbit or 1.5gbit"))?;
    let mult = match unit.trim() {
        "" | "bit" | "bps" => 1e0,
        "k" | "kbit" | "kbps" => 1e3,
        "m" | "mbit" | "mbps" => 1e6,
        "g" | "gbit" | "gbps" => 1e9,
        other => {
            return Err(LevelError::new(
                s,
                format!("unknown rate unit {other:?}; use bit, kbit, mbit or gbit"),
            ))
        }
    };
    let bps = value * mult;
    if !(1.0..1e15).contains(&bps) {
        return Err(LevelError::new(
            s,
            "rate must be between 1 bit/s and 1 Pbit/s",
        ));
    }
    Ok(bps.round() as u64)
}

/// A boolean factor level: on/off, yes/no, true/false, 1/0.
pub fn boolean(s: &str) -> Result<bool, LevelError> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(LevelError::new(s, "expected on or off")),
    }
}

/// A count in `lo..=hi`.
pub fn count(s: &str, lo: u32, hi: u32) -> Result<u32, LevelError> {
    match s.parse::<u32>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(LevelError::new(
            s,
            format!("expected a whole number from {lo} to {hi}"),
        )),
    }
}

/// An initial window in segments: 1, 2, 4 or 10 (the windows of 4.3BSD,
/// RFC 2581, RFC 3390 and RFC 6928).
pub fn initial_window(s: &str) -> Result<u32, LevelError> {
    match s.parse::<u32>() {
        Ok(n) if [1, 2, 4, 10].contains(&n) => Ok(n),
        _ => Err(LevelError::new(s, "expected 1, 2, 4 or 10 segments")),
    }
}

/// A send API name.
pub fn api(s: &str) -> Result<Api, LevelError> {
    Api::from_name(s)
        .ok_or_else(|| LevelError::new(s, "expected write, sendmsg, sendfile or zerocopy"))
}

/// A TCP/IP implementation name: kernel, tcplab, tcplab-offload or tcplab-tap.
pub fn stack(s: &str) -> Result<StackImpl, LevelError> {
    StackImpl::from_name(s)
        .ok_or_else(|| LevelError::new(s, "expected kernel, tcplab, tcplab-offload or tcplab-tap"))
}

/// A protocol layer of `layer-rate`: eth, ip, udp or tcp.
pub fn layer(s: &str) -> Result<ProtocolLayer, LevelError> {
    ProtocolLayer::ALL
        .into_iter()
        .find(|l| l.name() == s)
        .ok_or_else(|| LevelError::new(s, "expected eth, ip, udp or tcp"))
}

/// An `--offload` level: `default` (None), `off`, or `tso+gso`-style lists.
pub fn offloads(s: &str) -> Result<Option<super::offloads::OffloadsOff>, LevelError> {
    super::offloads::OffloadsOff::parse(s).map_err(|why| LevelError::new(s, why))
}

/// A load level: `sender:N`, `receiver:N`, or `none`.
pub fn load(s: &str) -> Result<Option<LoadSpec>, LevelError> {
    if s == "none" || s == "0" {
        return Ok(None);
    }
    let (side, n) = s
        .split_once(':')
        .ok_or_else(|| LevelError::new(s, "expected sender:N, receiver:N or none"))?;
    let side = match side {
        "sender" => LoadSide::Sender,
        "receiver" => LoadSide::Receiver,
        _ => return Err(LevelError::new(s, "the side must be sender or receiver")),
    };
    let workers = count(n, 0, 64)?;
    Ok((workers > 0).then_some(LoadSpec { side, workers }))
}

/// A host-speed level: `sender=0.25`, `receiver=0.5`, `both=0.1`, or `none`
/// (fractions of one CPU).
pub fn host_speed(s: &str) -> Result<Option<HostSpeed>, LevelError> {
    if s == "none" {
        return Ok(None);
    }
    let (side, f) = s
        .split_once('=')
        .ok_or_else(|| LevelError::new(s, "expected sender=F, receiver=F, both=F or none"))?;
    let side = match side {
        "sender" => HostSide::Sender,
        "receiver" => HostSide::Receiver,
        "both" => HostSide::Both,
        _ => {
            return Err(LevelError::new(
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
            LevelError::new(s, "the speed is a fraction of one CPU above 0, e.g. 0.25")
        })?;
    Ok(Some(HostSpeed { side, fraction }))
}

/// `sender=0,receiver=1`: CPUs per side (one level; `cpus` is the host's count).
pub fn pin(s: &str, cpus: u32) -> Result<Pin, LevelError> {
    let mut pin = Pin {
        sender: None,
        receiver: None,
    };
    for item in s.split(',').map(str::trim) {
        let (side, cpu) = item
            .split_once('=')
            .ok_or_else(|| LevelError::new(s, "expected sender=CPU,receiver=CPU"))?;
        let cpu = count(cpu, 0, cpus.saturating_sub(1))?;
        match side {
            "sender" if pin.sender.is_none() => pin.sender = Some(cpu),
            "receiver" if pin.receiver.is_none() => pin.receiver = Some(cpu),
            _ => {
                return Err(LevelError::new(
                    s,
                    "name sender and receiver at most once each",
                ))
            }
        }
    }
    Ok(pin)
}

/// A congestion control name as the kernel knows it (`cubic`, `bbr`, `reno`).
pub fn cc_name(s: &str) -> Result<String, LevelError> {
    if s.len() <= 15 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        Ok(s.to_string())
    } else {
        Err(LevelError::new(s, "not a congestion control module name"))
    }
}

/// A name taken as given (a place name, a link spec), checked later by the
/// crate that builds it.
pub fn any_text(s: &str) -> Result<String, LevelError> {
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size("1460"), Ok(1460));
        assert_eq!(size("64K"), Ok(65536));
        assert_eq!(size("64KiB"), Ok(65536));
        assert_eq!(size("4M"), Ok(4 << 20));
        assert!(size("abc").is_err());
        assert!(positive_size("0").is_err());
        let e = list("10,,20", size).unwrap_err();
        assert_eq!(e.value, "10,,20");
        let e = e.for_flag("--write-size").to_string();
        assert!(e.contains("--write-size"), "{e}");
    }

    #[test]
    fn rates_and_durations() {
        assert_eq!(rate("10mbit"), Ok(10_000_000));
        assert_eq!(rate("1.5gbit"), Ok(1_500_000_000));
        assert_eq!(rate("100k"), Ok(100_000));
        assert!(rate("10 parsecs").is_err());
        assert!(rate("0").is_err());
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2"), Ok(Duration::from_secs(2)));
        assert!(duration("0s").is_err());
        for negative in ["-1", "-1s", "-0.5"] {
            let e = duration(negative).unwrap_err();
            assert!(
                e.to_string().contains("a duration cannot be negative"),
                "{e}"
            );
        }
        assert_eq!(duration_or_zero("0us"), Ok(Duration::ZERO));
    }

    #[test]
    fn loads_speeds_and_pins() {
        assert_eq!(
            load("receiver:3"),
            Ok(Some(LoadSpec {
                side: LoadSide::Receiver,
                workers: 3
            }))
        );
        assert_eq!(load("none"), Ok(None));
        assert!(load("both:2").is_err());
        assert_eq!(
            host_speed("both=0.5"),
            Ok(Some(HostSpeed {
                side: HostSide::Both,
                fraction: 0.5
            }))
        );
        assert!(host_speed("sender=0").is_err());
        assert_eq!(
            pin("sender=0,receiver=1", 2),
            Ok(Pin {
                sender: Some(0),
                receiver: Some(1)
            })
        );
        // The CPU beyond the host's count is the offending value.
        assert_eq!(pin("sender=2", 2).unwrap_err().value, "2");
        assert!(pin("sender=0,sender=1", 2).is_err());
    }

    #[test]
    fn names() {
        assert_eq!(api("sendfile"), Ok(Api::Sendfile));
        assert_eq!(layer("eth"), Ok(ProtocolLayer::Eth));
        assert!(layer("ppp").is_err());
        assert_eq!(cc_name("bbr"), Ok("bbr".to_string()));
        assert_eq!(initial_window("10"), Ok(10));
        assert!(initial_window("3").is_err());
        assert!(initial_window("0").is_err());
        assert!(cc_name("no spaces").is_err());
        assert_eq!(boolean("ON"), Ok(true));
        assert!(boolean("maybe").is_err());
        assert_eq!(count("7", 1, 7), Ok(7));
        assert!(count("8", 1, 7).is_err());
    }
}
