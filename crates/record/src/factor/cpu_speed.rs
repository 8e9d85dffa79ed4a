//! The speed of a slower CPU on tcplab stack ends (`--cpu-speed`, issue
//! 29): each of the stack's work classes runs F times as fast as this CPU,
//! by time dilation (the end spins after each timed block for what the
//! slower CPU would have taken longer). Classes scale apart, so Markatos'
//! question can be asked: a faster CPU (compute) with the same memory
//! (data) and device.
//!
//! A level is `[SIDE=]SPEEDS`, sides joined with `+`: SIDE is `sender` or
//! `receiver` (none: both ends), SPEEDS is one fraction for every class
//! (`0.25`) or `CLASS:F` joined with `/` (`compute:0.25/data:1`; a class
//! not named runs at full speed). Commas separate levels of a sweep, as
//! for every factor: `--cpu-speed 1,0.5,0.25`.

use super::parse::LevelError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Speeds are kept in millionths of this CPU's, so levels compare, hash
/// and read back exactly.
const FULL: u32 = 1_000_000;
/// The slowest speed taken: a ten-thousandth (a host model's 386 is
/// several hundred times slower than this CPU in some classes; a spin of
/// 9,999× every block's time makes a trial ten thousand times as long).
const SLOWEST: u32 = FULL / 10_000;

/// The stack's work, in the classes a slower host may scale apart: the
/// level's names for `stack::account::Class`, which assigns each block its
/// class (the stack crate stands alone, without `record`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WorkClass {
    /// Protocol computation: IP, TCP, timers, ACKs, buffer bookkeeping,
    /// and the application's own bracketed work (`--recv-work` included).
    Compute,
    /// Data touching: copies and checksums, bound by memory bandwidth.
    Data,
    /// Device I/O: the TUN/TAP system calls and the wait's CPU.
    Device,
}

impl WorkClass {
    /// Every class, in the order levels name them.
    pub const ALL: [WorkClass; 3] = [WorkClass::Compute, WorkClass::Data, WorkClass::Device];

    /// The class's name in levels and tables.
    pub fn name(self) -> &'static str {
        match self {
            WorkClass::Compute => "compute",
            WorkClass::Data => "data",
            WorkClass::Device => "device",
        }
    }
}

/// One end's speed per class, in millionths of this CPU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassSpeeds([u32; 3]);

impl ClassSpeeds {
    /// Full speed in every class.
    pub const FULL: ClassSpeeds = ClassSpeeds([FULL; 3]);

    /// The class's speed as a fraction of this CPU's (0.0001 to 1).
    pub fn of(self, class: WorkClass) -> f64 {
        f64::from(self.0[class as usize]) / f64::from(FULL)
    }

    /// Speeds from fractions of this CPU's, in [`WorkClass::ALL`]'s order
    /// (compute, data, device), each rounded to millionths; `None` when
    /// one is outside 0.0001..=1.
    pub fn from_fractions(f: [f64; 3]) -> Option<ClassSpeeds> {
        let mut m = [FULL; 3];
        for (slot, f) in m.iter_mut().zip(f) {
            let v = (f * f64::from(FULL)).round();
            if !(f64::from(SLOWEST)..=f64::from(FULL)).contains(&v) {
                return None;
            }
            *slot = v as u32;
        }
        Some(ClassSpeeds(m))
    }

    /// Whether every class runs at full speed (nothing is dilated).
    pub fn is_full(self) -> bool {
        self == ClassSpeeds::FULL
    }

    fn parse(s: &str) -> Result<ClassSpeeds, LevelError> {
        if !s.contains(':') {
            return Ok(ClassSpeeds([fraction(s)?; 3]));
        }
        let mut speeds = ClassSpeeds::FULL;
        let mut named = [false; 3];
        for part in s.split('/') {
            let (name, f) = part.split_once(':').ok_or_else(|| {
                LevelError::new(
                    s,
                    "expected CLASS:F joined with / (e.g. compute:0.25/data:1)",
                )
            })?;
            let class = WorkClass::ALL
                .into_iter()
                .find(|c| c.name() == name)
                .ok_or_else(|| {
                    LevelError::new(
                        s,
                        format!("no class {name:?}: expected compute, data or device"),
                    )
                })?;
            if std::mem::replace(&mut named[class as usize], true) {
                return Err(LevelError::new(s, format!("{name} is given twice")));
            }
            speeds.0[class as usize] = fraction(f)?;
        }
        Ok(speeds)
    }
}

impl fmt::Display for ClassSpeeds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.iter().all(|&s| s == self.0[0]) {
            return f.write_str(&millionths(self.0[0]));
        }
        let parts: Vec<String> = WorkClass::ALL
            .into_iter()
            .filter(|&c| self.0[c as usize] != FULL)
            .map(|c| format!("{}:{}", c.name(), millionths(self.0[c as usize])))
            .collect();
        f.write_str(&parts.join("/"))
    }
}

/// `s` as a speed: a decimal fraction from 0.0001 to 1.
fn fraction(s: &str) -> Result<u32, LevelError> {
    let f: f64 = s
        .parse()
        .map_err(|_| LevelError::new(s, "expected a speed from 0.0001 to 1, e.g. 0.25"))?;
    let m = (f * f64::from(FULL)).round();
    if !(f64::from(SLOWEST)..=f64::from(FULL)).contains(&m) {
        return Err(LevelError::new(
            s,
            "a speed is a fraction of this CPU's, from 0.0001 to 1",
        ));
    }
    Ok(m as u32)
}

/// Millionths as the shortest decimal that reads back the same.
fn millionths(m: u32) -> String {
    let s = format!("{:.6}", f64::from(m) / f64::from(FULL));
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A slower CPU on tcplab stack ends (`--cpu-speed`): the sender's and
/// the receiver's speeds per class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSpeed {
    /// The end that sends the trial's data.
    pub sender: ClassSpeeds,
    /// The end that receives it.
    pub receiver: ClassSpeeds,
}

impl CpuSpeed {
    /// Parses a level (see the module's doc).
    pub fn parse(s: &str) -> Result<CpuSpeed, LevelError> {
        let mut level = CpuSpeed {
            sender: ClassSpeeds::FULL,
            receiver: ClassSpeeds::FULL,
        };
        let mut given = [false; 2];
        for part in s.split('+') {
            let (sides, speeds) = match part.split_once('=') {
                Some(("sender", v)) => ([true, false], v),
                Some(("receiver", v)) => ([false, true], v),
                Some((side, _)) => {
                    return Err(LevelError::new(
                        s,
                        format!(
                            "no side {side:?}: expected sender= or receiver= (none: both ends)"
                        ),
                    ))
                }
                None => ([true, true], part),
            };
            let speeds = ClassSpeeds::parse(speeds).map_err(|e| LevelError::new(s, e.why))?;
            for (i, on) in sides.into_iter().enumerate() {
                if on {
                    if std::mem::replace(&mut given[i], true) {
                        return Err(LevelError::new(s, "a side is given twice"));
                    }
                    if i == 0 {
                        level.sender = speeds;
                    } else {
                        level.receiver = speeds;
                    }
                }
            }
        }
        Ok(level)
    }

    /// The speeds of the end that sends (`true`) or receives.
    pub fn of_side(self, sends: bool) -> ClassSpeeds {
        if sends {
            self.sender
        } else {
            self.receiver
        }
    }

    /// Whether both ends run at full speed.
    pub fn is_full(self) -> bool {
        self.sender.is_full() && self.receiver.is_full()
    }
}

impl fmt::Display for CpuSpeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sender == self.receiver {
            return write!(f, "{}", self.sender);
        }
        let sides: Vec<String> = [("sender", self.sender), ("receiver", self.receiver)]
            .into_iter()
            .filter(|(_, s)| !s.is_full())
            .map(|(side, s)| format!("{side}={s}"))
            .collect();
        f.write_str(&sides.join("+"))
    }
}

serde_by_text!(CpuSpeed);
named_levels!(CpuSpeed);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_per_side_and_class_and_read_back() {
        let all = CpuSpeed::parse("0.25").unwrap();
        assert_eq!(all.sender, all.receiver);
        assert_eq!(all.sender.of(WorkClass::Data), 0.25);
        assert_eq!(all.to_string(), "0.25");
        let one = CpuSpeed::parse("receiver=compute:0.125/device:0.5").unwrap();
        assert!(one.sender.is_full());
        assert_eq!(one.receiver.of(WorkClass::Compute), 0.125);
        assert_eq!(one.receiver.of(WorkClass::Data), 1.0);
        assert_eq!(one.receiver.of(WorkClass::Device), 0.5);
        assert_eq!(one.to_string(), "receiver=compute:0.125/device:0.5");
        let two = CpuSpeed::parse("sender=0.5+receiver=data:0.2").unwrap();
        assert_eq!(two.of_side(true).of(WorkClass::Device), 0.5);
        assert_eq!(two.of_side(false).of(WorkClass::Data), 0.2);
        for level in [all, one, two] {
            assert_eq!(CpuSpeed::parse(&level.to_string()), Ok(level));
            let json = serde_json::to_string(&level).unwrap();
            assert_eq!(serde_json::from_str::<CpuSpeed>(&json).unwrap(), level);
        }
        assert!(CpuSpeed::parse("1").unwrap().is_full());
        assert!(!two.is_full());
    }

    #[test]
    fn bad_levels_say_what_is_wrong() {
        for (bad, why) in [
            ("0", "from 0.0001 to 1"),
            ("1.5", "from 0.0001 to 1"),
            ("fast", "expected a speed"),
            ("cpu:0.5", "no class \"cpu\""),
            ("compute:0.5/compute:0.2", "given twice"),
            ("client=0.5", "no side \"client\""),
            ("sender=0.5+sender=0.2", "a side is given twice"),
            ("0.5+receiver=0.2", "a side is given twice"),
            ("compute=0.5", "no side \"compute\""),
        ] {
            let e = CpuSpeed::parse(bad).unwrap_err();
            assert!(e.why.contains(why), "{bad}: {}", e.why);
        }
    }
}
