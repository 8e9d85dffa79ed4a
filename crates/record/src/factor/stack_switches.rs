//! The levels of the switches only tcplab's own stack has (issue 19):
//! `--flow-control`, `--delack`, `--sws`, `--checksum`, `--rtt-estimator`,
//! `--timers` and `--route-table` (`--nagle` and `--header-prediction` are plain
//! switches). Each is stored as the text its flag takes, so a stored run
//! reads as the command that made it.

use super::parse::LevelError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A switch whose levels are words: its `ALL`, `name` (the flag's text)
/// and `parse`, whose error lists the words ("expected a, b or c").
macro_rules! keyword_levels {
    ($t:ident { $($v:ident => $n:literal),+ $(,)? }) => {
        impl $t {
            /// Every level, in the order the flag lists them.
            pub const ALL: &'static [$t] = &[$($t::$v),+];

            /// The flag's name.
            pub fn name(self) -> &'static str {
                match self {
                    $($t::$v => $n),+
                }
            }

            /// Parses a level.
            pub fn parse(s: &str) -> Result<$t, LevelError> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|l| l.name() == s)
                    .ok_or_else(|| LevelError::new(s, expected(&[$($n),+])))
            }
        }
    };
}

/// "expected a, b or c" for a switch's words.
fn expected(words: &[&str]) -> String {
    match words.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("expected {} or {last}", rest.join(", "))
        }
        _ => format!("expected {}", words.join("")),
    }
}

/// How the stack's sender decides when data leaves (`--flow-control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum FlowControl {
    /// Window flow control: what min(cwnd, the peer's window) allows
    /// leaves at once.
    Window,
    /// Rate-based (Abrams & Chen 1991 §3.5): the sender paces its data
    /// segments at this many payload bits per second; the window only
    /// bounds what is outstanding.
    Rate(u64),
}

impl FlowControl {
    /// Parses `window` or `rate:RATE` (RATE as `--send-rate` takes it:
    /// `50M`, `200mbit`, `1G`, bits per second).
    pub fn parse(s: &str) -> Result<FlowControl, LevelError> {
        if s == "window" {
            return Ok(FlowControl::Window);
        }
        match s.strip_prefix("rate:") {
            Some(r) => super::parse::rate(r)
                .map(FlowControl::Rate)
                .map_err(|e| LevelError::new(s, format!("rate:RATE needs a rate: {}", e.why))),
            None => Err(LevelError::new(
                s,
                "expected window or rate:RATE (e.g. rate:50M, rate:1gbit)",
            )),
        }
    }

    /// The pacing rate in bits per second, if rate-based.
    pub fn rate_bps(self) -> Option<u64> {
        match self {
            FlowControl::Window => None,
            FlowControl::Rate(bps) => Some(bps),
        }
    }
}

impl fmt::Display for FlowControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowControl::Window => f.write_str("window"),
            FlowControl::Rate(bps) => {
                write!(f, "rate:{}", crate::numbers::rate_text(*bps as f64))
            }
        }
    }
}

/// When the stack's receiver acknowledges data (`--delack`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum DelayedAck {
    /// An ACK for every data segment.
    Off,
    /// RFC 1122: every second full-sized segment, or the stack's delayed-ACK
    /// timer (40 ms, Linux's `TCP_DELACK_MIN`).
    Every2,
    /// The timer alone, of this many nanoseconds (BSD's 200 ms fast timeout).
    Timer(u64),
    /// An ACK when the application empties the receive queue (the SunOS
    /// study's Fig. 7).
    Drain,
}

impl DelayedAck {
    /// Parses `off`, `every2`, `timer:DUR` or `drain`.
    pub fn parse(s: &str) -> Result<DelayedAck, LevelError> {
        match s {
            "off" => Ok(DelayedAck::Off),
            "every2" => Ok(DelayedAck::Every2),
            "drain" => Ok(DelayedAck::Drain),
            _ => match s.strip_prefix("timer:") {
                Some(d) => super::parse::duration(d)
                    .map(|d| DelayedAck::Timer(d.as_nanos().min(u128::from(u64::MAX)) as u64))
                    .map_err(|e| {
                        LevelError::new(s, format!("timer:DUR needs a duration: {}", e.why))
                    }),
                None => Err(LevelError::new(
                    s,
                    "expected off, every2, timer:DUR (e.g. timer:200ms) or drain",
                )),
            },
        }
    }
}

impl fmt::Display for DelayedAck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DelayedAck::Off => f.write_str("off"),
            DelayedAck::Every2 => f.write_str("every2"),
            DelayedAck::Drain => f.write_str("drain"),
            DelayedAck::Timer(ns) => write!(f, "timer:{}", crate::numbers::nanos_text(*ns as f64)),
        }
    }
}

/// Silly-window-syndrome avoidance at the receiver (RFC 1122 §4.2.3.3)
/// and the sender (§4.2.3.4), switched together or apart (`--sws`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sws {
    /// Both on.
    On,
    /// Both off.
    Off,
    /// The receiver advertises every free byte; the sender still avoids SWS.
    ReceiverOff,
    /// The sender sends whatever the window allows; the receiver still avoids SWS.
    SenderOff,
}

impl Sws {
    /// Whether the receiver avoids SWS.
    pub fn receiver(self) -> bool {
        matches!(self, Sws::On | Sws::SenderOff)
    }

    /// Whether the sender avoids SWS.
    pub fn sender(self) -> bool {
        matches!(self, Sws::On | Sws::ReceiverOff)
    }
}

keyword_levels!(Sws {
    On => "on",
    Off => "off",
    ReceiverOff => "receiver-off",
    SenderOff => "sender-off",
});

/// How the stack computes TCP and UDP checksums (`--checksum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Checksum {
    /// One 16-bit word at a time.
    Bytewise,
    /// RFC 1071 over 64-bit words.
    Rfc1071,
    /// RFC 1071, with rewritten fields patched by RFC 1624.
    Incremental,
    /// Left to the device (the `tcplab-offload` device's kernel).
    Offload,
}

keyword_levels!(Checksum {
    Bytewise => "bytewise",
    Rfc1071 => "rfc1071",
    Incremental => "incremental",
    Offload => "offload",
});

/// The stack's RTT estimator (`--rtt-estimator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RttEstimator {
    /// 4.3BSD-Reno's integer EWMA in 500 ms ticks.
    Bsd,
    /// RFC 6298 in nanoseconds.
    Rfc6298,
}

keyword_levels!(RttEstimator {
    Bsd => "bsd",
    Rfc6298 => "rfc6298",
});

/// The clock the stack's TCP timers run on (`--timers`, issue 29).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimerClock {
    /// Each timer exactly where its interval ends.
    Exact,
    /// 4.3BSD's 500 ms slow and 200 ms fast timeouts: timers, RTT samples
    /// and the RTO in whole ticks, delayed ACKs at the next fast tick.
    Bsd,
}

keyword_levels!(TimerClock {
    Exact => "exact",
    Bsd => "bsd",
});

/// The structure of the stack's routing table (`--route-table`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteTable {
    /// A list searched from end to end.
    Linear,
    /// A hash table per prefix length.
    Hash,
    /// A binary trie.
    Trie,
}

keyword_levels!(RouteTable {
    Linear => "linear",
    Hash => "hash",
    Trie => "trie",
});

/// How a tcplab stack end finds an incoming segment's connection
/// (`--pcb-lookup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PcbLookup {
    /// A hash map by 4-tuple.
    Hash,
    /// BSD's linear PCB list behind its one-entry cache.
    List,
}

keyword_levels!(PcbLookup {
    Hash => "hash",
    List => "list",
});

/// How a tcplab stack end's layers share threads (`--layers`; Guerrero &
/// Frieder 1992, Figs 3–4, merged the interface module, IP and TCP from
/// three processes into one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layers {
    /// The device's system calls, IP and TCP on the end's one thread.
    Merged,
    /// The device driver on a thread of its own, joined to IP and TCP by
    /// frame queues.
    Threaded,
}

keyword_levels!(Layers {
    Merged => "merged",
    Threaded => "threaded",
});

/// A paper's machine rebuilt on tcplab stack ends (`--host-model`, issue
/// 29): its mechanisms and its per-class CPU speeds
/// ([`super::host_model`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HostModel {
    /// Huang & Chen's IBM PC-386 at 33 MHz (64 KB cache, AT bus), whose
    /// sender they timed block by block (Table 1).
    #[serde(rename = "386-33")]
    I386At33,
}

keyword_levels!(HostModel {
    I386At33 => "386-33",
});

/// Block-cost accounting on tcplab stack ends (`--account`, issue 19
/// part 2): the stack's code paths timed with the cycle counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Account {
    /// Nothing timed (a bracket costs one branch).
    Off,
    /// Every bracket timed.
    On,
    /// One poll round in N timed, the counts scaled up by N.
    Sample(u32),
}

impl Account {
    /// One round in how many is timed (None: off).
    pub fn one_in(self) -> Option<u32> {
        match self {
            Account::Off => None,
            Account::On => Some(1),
            Account::Sample(n) => Some(n),
        }
    }

    /// Parses a level: `off`, `on` or `sample:N` (N from 2 to 1,000,000).
    pub fn parse(s: &str) -> Result<Account, LevelError> {
        match s {
            "off" => Ok(Account::Off),
            "on" => Ok(Account::On),
            _ => s
                .strip_prefix("sample:")
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| (2..=1_000_000).contains(n))
                .map(Account::Sample)
                .ok_or_else(|| {
                    LevelError::new(s, "expected off, on or sample:N (N from 2 to 1000000)")
                }),
        }
    }
}

impl fmt::Display for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Account::Off => f.write_str("off"),
            Account::On => f.write_str("on"),
            Account::Sample(n) => write!(f, "sample:{n}"),
        }
    }
}

serde_by_text!(FlowControl, DelayedAck);

// Each switch's level is its flag's text in tables and exports.
named_levels!(
    FlowControl,
    DelayedAck,
    Sws,
    Checksum,
    RttEstimator,
    TimerClock,
    RouteTable,
    PcbLookup,
    Layers,
    Account,
    HostModel
);

macro_rules! display_by_name {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}
display_by_name!(
    Sws,
    Checksum,
    RttEstimator,
    TimerClock,
    RouteTable,
    PcbLookup,
    Layers,
    HostModel
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_control_levels_parse_with_the_rate_parser_and_read_back() {
        assert_eq!(FlowControl::parse("window"), Ok(FlowControl::Window));
        assert_eq!(FlowControl::Window.rate_bps(), None);
        for (typed, bps, text) in [
            ("rate:50M", 50_000_000, "rate:50mbit"),
            ("rate:200mbit", 200_000_000, "rate:200mbit"),
            ("rate:1G", 1_000_000_000, "rate:1gbit"),
            ("rate:1.5gbit", 1_500_000_000, "rate:1.5gbit"),
            ("rate:64k", 64_000, "rate:64kbit"),
        ] {
            let level = FlowControl::parse(typed).unwrap();
            assert_eq!(level, FlowControl::Rate(bps), "{typed}");
            assert_eq!(level.rate_bps(), Some(bps));
            assert_eq!(level.to_string(), text);
            assert_eq!(FlowControl::parse(text), Ok(level));
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(json, format!("\"{text}\""));
            assert_eq!(serde_json::from_str::<FlowControl>(&json).unwrap(), level);
        }
        for bad in [
            "",
            "rate",
            "rate:",
            "rate:fast",
            "rate:0",
            "rate:10 parsecs",
            "Window",
        ] {
            assert!(FlowControl::parse(bad).is_err(), "{bad}");
        }
        assert!(FlowControl::parse("rate:0")
            .unwrap_err()
            .to_string()
            .contains("rate:RATE needs a rate"));
        assert!(serde_json::from_str::<FlowControl>("\"credit\"").is_err());
    }

    #[test]
    fn levels_parse_and_read_back_as_typed() {
        assert_eq!(DelayedAck::parse("off"), Ok(DelayedAck::Off));
        let t = DelayedAck::parse("timer:200ms").unwrap();
        assert_eq!(t, DelayedAck::Timer(200_000_000));
        assert_eq!(DelayedAck::parse(&t.to_string()), Ok(t));
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<DelayedAck>(&json).unwrap(), t);
        assert!(DelayedAck::parse("timer:").is_err());
        assert!(DelayedAck::parse("every3").is_err());
        assert_eq!(Sws::parse("receiver-off"), Ok(Sws::ReceiverOff));
        assert!(!Sws::ReceiverOff.receiver() && Sws::ReceiverOff.sender());
        assert!(Sws::SenderOff.receiver() && !Sws::SenderOff.sender());
        assert!(!Sws::Off.receiver() && !Sws::Off.sender());
        assert!(Sws::parse("both").is_err());
        assert_eq!(Checksum::parse("rfc1071"), Ok(Checksum::Rfc1071));
        assert!(Checksum::parse("crc32").is_err());
        assert_eq!(RttEstimator::parse("bsd"), Ok(RttEstimator::Bsd));
        assert!(RttEstimator::parse("jacobson").is_err());
        assert_eq!(TimerClock::parse("bsd"), Ok(TimerClock::Bsd));
        assert_eq!(TimerClock::Exact.to_string(), "exact");
        assert!(TimerClock::parse("fast").is_err());
        assert_eq!(RouteTable::parse("hash"), Ok(RouteTable::Hash));
        assert!(RouteTable::parse("btree").is_err());
        assert_eq!(PcbLookup::parse("list"), Ok(PcbLookup::List));
        assert!(PcbLookup::parse("tree").is_err());
        assert_eq!(Layers::parse("threaded"), Ok(Layers::Threaded));
        assert_eq!(Layers::Merged.to_string(), "merged");
        assert!(Layers::parse("processes").is_err());
        assert_eq!(Account::parse("sample:64"), Ok(Account::Sample(64)));
        assert_eq!(Account::Sample(64).to_string(), "sample:64");
        assert_eq!(Account::On.one_in(), Some(1));
        assert_eq!(Account::Off.one_in(), None);
        for bad in ["sample:1", "sample:0", "sample:x", "sample:", "yes"] {
            assert!(Account::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::to_string(&Sws::SenderOff).unwrap(),
            "\"sender-off\""
        );
    }
}
