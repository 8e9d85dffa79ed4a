//! Link specifications (`--link rate=10mbit,delay=2ms,…`), the named
//! profiles after the papers' settings, and the choice of mechanism.

use crate::error::LabError;
use serde::{Deserialize, Serialize};

/// How a link's properties are imposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mechanism {
    /// Pick the best available: tbf for rate alone, netem when delay, jitter,
    /// loss or reordering are asked for, else tcplab's emulator.
    #[default]
    Auto,
    /// The kernel's token bucket filter (rate only).
    Tbf,
    /// The kernel's hierarchical token bucket (rate only).
    Htb,
    /// The kernel's network emulator qdisc.
    Netem,
    /// tcplab's own link emulator: an AF_PACKET bridge in the middle namespace.
    Emulator,
    /// Nothing to impose: a plain wire.
    None,
}

impl Mechanism {
    /// The name used in specs and records.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Auto => "auto",
            Mechanism::Tbf => "tbf",
            Mechanism::Htb => "htb",
            Mechanism::Netem => "netem",
            Mechanism::Emulator => "emulator",
            Mechanism::None => "none",
        }
    }

    fn parse(s: &str) -> Option<Mechanism> {
        [
            Mechanism::Auto,
            Mechanism::Tbf,
            Mechanism::Htb,
            Mechanism::Netem,
            Mechanism::Emulator,
        ]
        .into_iter()
        .find(|m| m.name() == s)
    }
}

/// A link's properties, each applied in both directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Line rate in bits per second, counting Ethernet frames (headers included).
    pub rate_bps: Option<u64>,
    /// One-way delay in seconds (the round trip is twice this).
    pub delay_s: f64,
    /// Uniform jitter in seconds added to or taken from the delay.
    pub jitter_s: f64,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame skips the delay line and overtakes others.
    pub reorder: f64,
    /// MTU of every interface on the path.
    pub mtu: u32,
    /// Queue length in frames before the link (drop-tail).
    pub queue_frames: u32,
    /// Bytes each frame takes on the wire beyond what the device sends:
    /// Ethernet's preamble and start delimiter (8), frame check sequence
    /// (4) and inter-frame gap (12), 24 in all ([`ETHERNET_FRAMING`]); frames
    /// shorter than Ethernet's 60-byte minimum count as 60. A 10 Mbit/s
    /// Ethernet carries 1500-byte packets at 9.75 Mbit/s of frames, not 10.
    /// `overhead=0` turns this off.
    #[serde(default = "ethernet_framing")]
    pub framing_bytes: u32,
    /// Mechanism to use.
    pub via: Mechanism,
}

/// Ethernet's bytes per frame on the wire beyond the frame the device sends
/// (preamble and SFD 8, FCS 4, inter-frame gap 12).
pub const ETHERNET_FRAMING: u32 = 24;

/// Ethernet's smallest frame without its FCS, in bytes.
pub const ETHERNET_MIN_FRAME: u32 = 60;

fn ethernet_framing() -> u32 {
    ETHERNET_FRAMING
}

/// Bytes a frame of `len` bytes (as the device sends it) takes of a line
/// with `framing` bytes of framing per frame: at least Ethernet's minimum
/// frame, plus the framing; without framing, its own length.
pub fn wire_bytes(framing: u32, len: u64) -> u64 {
    if framing == 0 {
        return len;
    }
    len.max(u64::from(ETHERNET_MIN_FRAME)) + u64::from(framing)
}

impl Default for LinkSpec {
    fn default() -> LinkSpec {
        LinkSpec {
            rate_bps: None,
            delay_s: 0.0,
            jitter_s: 0.0,
            loss: 0.0,
            reorder: 0.0,
            mtu: 1500,
            queue_frames: 1000,
            framing_bytes: ETHERNET_FRAMING,
            via: Mechanism::Auto,
        }
    }
}

/// A named profile: its spec and what it stands for.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The name, e.g. `ether10`.
    pub name: &'static str,
    /// The spec.
    pub spec: LinkSpec,
    /// What it emulates.
    pub about: &'static str,
}

/// The profiles after the papers' settings.
pub fn profiles() -> Vec<Profile> {
    let l = |rate: u64, delay_ms: f64, queue: u32| LinkSpec {
        rate_bps: Some(rate),
        delay_s: delay_ms / 1000.0,
        queue_frames: queue,
        ..LinkSpec::default()
    };
    vec![
        Profile {
            name: "ether10",
            spec: l(10_000_000, 0.0, 32),
            about: "10 Mbit/s Ethernet, MTU 1500, a short queue (Abrams & Chen, Huang & Chen, SunOS IPC study)",
        },
        Profile {
            name: "lan100",
            spec: l(100_000_000, 0.0, 100),
            about: "100 Mbit/s LAN, MTU 1500",
        },
        Profile {
            name: "lan1g",
            spec: l(1_000_000_000, 0.0, 1000),
            about: "1 Gbit/s LAN, MTU 1500",
        },
        Profile {
            name: "man",
            spec: l(10_000_000, 1.0, 100),
            about: "metropolitan network: 10 Mbit/s, about 2 ms RTT (Markatos §3.6)",
        },
        Profile {
            name: "wan",
            spec: l(6_000_000, 30.0, 100),
            about: "wide-area path: 6 Mbit/s, about 60 ms RTT (Markatos §3.7)",
        },
    ]
}

/// The profile called `name`.
pub fn profile(name: &str) -> Option<LinkSpec> {
    profiles()
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.spec)
}

fn spec_err(item: &str, why: &str) -> LabError {
    LabError::Spec(format!("invalid --link item {item:?}: {why}"))
}

fn seconds(item: &str, v: &str) -> Result<f64, LabError> {
    if v.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        == Ok(0.0)
    {
        return Ok(0.0);
    }
    humantime::parse_duration(v)
        .map(|d| d.as_secs_f64())
        .map_err(|_| spec_err(item, "expected a duration like 2ms"))
}

fn percent(item: &str, v: &str) -> Result<f64, LabError> {
    let x: f64 = v
        .strip_suffix('%')
        .ok_or_else(|| spec_err(item, "expected a percentage like 0.1%"))?
        .parse()
        .map_err(|_| spec_err(item, "expected a percentage like 0.1%"))?;
    if !(0.0..=100.0).contains(&x) {
        return Err(spec_err(item, "must be between 0% and 100%"));
    }
    Ok(x / 100.0)
}

fn rate(item: &str, v: &str) -> Result<u64, LabError> {
    let lower = v.to_ascii_lowercase();
    let split = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| spec_err(item, "expected a rate like 10mbit"))?;
    let mult = match unit {
        "bit" | "" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        _ => return Err(spec_err(item, "use bit, kbit, mbit or gbit")),
    };
    let bps = n * mult;
    if !(1000.0..=100e9).contains(&bps) {
        return Err(spec_err(item, "rate must be between 1kbit and 100gbit"));
    }
    Ok(bps as u64)
}

impl LinkSpec {
    /// Parses `rate=10mbit,delay=2ms,jitter=…,loss=0.1%,reorder=…,mtu=1500,queue=…,overhead=24,via=…`,
    /// starting from a profile's values when the first item is a profile name.
    pub fn parse(s: &str) -> Result<LinkSpec, LabError> {
        let mut spec = LinkSpec::default();
        for (i, item) in s.split(',').map(str::trim).enumerate() {
            if i == 0 {
                if let Some(p) = profile(item) {
                    spec = p;
                    continue;
                }
            }
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| spec_err(item, "expected KEY=VALUE"))?;
            match k {
                "rate" => spec.rate_bps = Some(rate(item, v)?),
                "delay" => spec.delay_s = seconds(item, v)?,
                "jitter" => spec.jitter_s = seconds(item, v)?,
                "loss" => spec.loss = percent(item, v)?,
                "reorder" => spec.reorder = percent(item, v)?,
                "mtu" => {
                    spec.mtu = v
                        .parse()
                        .ok()
                        .filter(|m| (576..=65_535).contains(m))
                        .ok_or_else(|| spec_err(item, "MTU must be 576..=65535"))?
                }
                "queue" => {
                    spec.queue_frames = v
                        .trim_end_matches('p')
                        .parse()
                        .ok()
                        .filter(|q| (1..=100_000).contains(q))
                        .ok_or_else(|| {
                            spec_err(item, "queue is a frame count 1..=100000, e.g. 64 or 64p")
                        })?
                }
                "overhead" => {
                    spec.framing_bytes = v
                        .trim_end_matches('B')
                        .parse()
                        .ok()
                        .filter(|o| *o <= 256)
                        .ok_or_else(|| {
                            spec_err(item, "overhead is bytes per frame 0..=256 (Ethernet: 24)")
                        })?
                }
                "via" => {
                    spec.via = Mechanism::parse(v)
                        .ok_or_else(|| spec_err(item, "via is auto, tbf, htb, netem or emulator"))?
                }
                _ => {
                    return Err(spec_err(
                        item,
                        "unknown key; use rate, delay, jitter, loss, reorder, mtu, queue, overhead or via",
                    ))
                }
            }
        }
        if spec.jitter_s > spec.delay_s {
            return Err(LabError::Spec("--link jitter must not exceed delay".into()));
        }
        if spec.delay_s > 10.0 {
            return Err(LabError::Spec("--link delay must be at most 10s".into()));
        }
        Ok(spec)
    }

    /// Bytes a frame of `len` bytes (as the device sends it) takes of this
    /// link's line (see [`wire_bytes`]).
    pub fn wire_bytes(&self, len: u64) -> u64 {
        wire_bytes(self.framing_bytes, len)
    }

    /// True if anything beyond rate is asked for.
    pub fn needs_delay_line(&self) -> bool {
        self.delay_s > 0.0 || self.jitter_s > 0.0 || self.loss > 0.0 || self.reorder > 0.0
    }

    /// The mechanism that will impose this link, given whether netem exists.
    pub fn resolve(&self, netem_available: bool) -> Result<Mechanism, LabError> {
        let needs_line = self.needs_delay_line();
        match self.via {
            Mechanism::Auto if needs_line && netem_available => Ok(Mechanism::Netem),
            Mechanism::Auto if needs_line => Ok(Mechanism::Emulator),
            Mechanism::Auto if self.rate_bps.is_some() => Ok(Mechanism::Tbf),
            Mechanism::Auto | Mechanism::None => Ok(Mechanism::None),
            Mechanism::Tbf | Mechanism::Htb if needs_line => Err(LabError::Spec(format!(
                "via={} shapes rate only; delay, jitter, loss and reorder need netem or the emulator",
                self.via.name()
            ))),
            Mechanism::Tbf | Mechanism::Htb if self.rate_bps.is_none() => {
                Err(LabError::Spec(format!("via={} needs a rate", self.via.name())))
            }
            Mechanism::Netem if !netem_available => Err(LabError::Unsupported(
                "this kernel has no netem qdisc (sch_netem); use via=emulator, tcplab's own link emulator".into(),
            )),
            m => Ok(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items_and_profiles() {
        let s = LinkSpec::parse("rate=10mbit,delay=2ms,jitter=500us,loss=0.1%,mtu=9000,queue=64p")
            .unwrap();
        assert_eq!(s.rate_bps, Some(10_000_000));
        assert!((s.delay_s - 0.002).abs() < 1e-12);
        assert!((s.loss - 0.001).abs() < 1e-12);
        assert_eq!((s.mtu, s.queue_frames), (9000, 64));
        let w = LinkSpec::parse("wan,loss=1%").unwrap();
        assert_eq!(w.rate_bps, Some(6_000_000));
        assert!((w.delay_s - 0.03).abs() < 1e-12);
        for bad in [
            "rate=fast",
            "delay",
            "loss=5",
            "mtu=10",
            "colour=blue",
            "delay=1ms,jitter=2ms",
            "via=carrier",
        ] {
            assert!(LinkSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn frames_take_their_ethernet_framing_of_the_line() {
        let e = LinkSpec::parse("ether10").unwrap();
        assert_eq!(e.framing_bytes, ETHERNET_FRAMING);
        // A full frame: 1514 + preamble, FCS and gap.
        assert_eq!(e.wire_bytes(1514), 1538);
        // A runt is padded to 60 bytes first: a bare ACK takes 84.
        assert_eq!(e.wire_bytes(54), 84);
        // So 1448-byte segments fill 10 Mbit/s at 9.41 Mbit/s of payload.
        let goodput = 10e6 * 1448.0 / e.wire_bytes(1514) as f64;
        assert!((goodput - 9.41e6).abs() < 0.01e6, "{goodput}");
        let plain = LinkSpec::parse("ether10,overhead=0").unwrap();
        assert_eq!((plain.wire_bytes(1514), plain.wire_bytes(54)), (1514, 54));
        for bad in ["overhead=-1", "overhead=1000", "overhead=lots"] {
            assert!(LinkSpec::parse(bad).is_err(), "{bad}");
        }
        // Specs stored before framing existed read back with Ethernet's.
        let mut old = serde_json::to_value(&e).unwrap();
        old.as_object_mut().unwrap().remove("framing_bytes");
        let back: LinkSpec = serde_json::from_value(old).unwrap();
        assert_eq!(back.framing_bytes, ETHERNET_FRAMING);
    }

    #[test]
    fn mechanism_choice() {
        let rate = LinkSpec::parse("rate=10mbit").unwrap();
        assert_eq!(rate.resolve(false).unwrap(), Mechanism::Tbf);
        let delay = LinkSpec::parse("man").unwrap();
        assert_eq!(delay.resolve(false).unwrap(), Mechanism::Emulator);
        assert_eq!(delay.resolve(true).unwrap(), Mechanism::Netem);
        assert!(LinkSpec::parse("man,via=netem")
            .unwrap()
            .resolve(false)
            .is_err());
        assert!(LinkSpec::parse("man,via=tbf")
            .unwrap()
            .resolve(true)
            .is_err());
        assert_eq!(
            LinkSpec::parse("ether10,via=htb")
                .unwrap()
                .resolve(false)
                .unwrap(),
            Mechanism::Htb
        );
    }
}
