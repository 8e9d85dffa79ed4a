//! `--offload`: which device offloads a trial switches off at both ends of
//! its place. Segmentation offloads (TSO, GSO) hand the stack 64 KB
//! segments whatever the MSS, and GRO merges arriving segments: both hide
//! the per-packet costs that Huang & Chen and Abrams & Chen measured, and
//! checksum offload hides the checksum's. A trial can switch any of them
//! off to let the per-packet work show.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The offloads `--offload` names, in the order the lab applies them.
pub const OFFLOAD_NAMES: [&str; 5] = ["tso", "gso", "gro", "tx", "rx"];

/// The offloads a trial switches off, by their place in [`OFFLOAD_NAMES`]
/// (the order of `lab::offload::Offload::ALL`). Never empty: "as the
/// devices have them" is no level at all (`None` in the params).
///
/// Stored as its text: `off` for all five, else the names joined by `+`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OffloadsOff([bool; 5]);

impl OffloadsOff {
    /// Every offload off.
    pub const ALL: OffloadsOff = OffloadsOff([true; 5]);

    /// A level's text: `default` (None), `off` (all five), or a `+`-joined
    /// list of `tso`, `gso`, `gro`, `tx`, `rx`.
    pub fn parse(s: &str) -> Result<Option<OffloadsOff>, String> {
        match s {
            "default" => return Ok(None),
            "off" => return Ok(Some(OffloadsOff::ALL)),
            _ => {}
        }
        let mut off = [false; 5];
        for name in s.split('+') {
            let i = OFFLOAD_NAMES
                .iter()
                .position(|n| *n == name)
                .ok_or_else(|| {
                    format!(
                        "unknown offload {name:?}: expected default, off, or a +-joined list of {}",
                        OFFLOAD_NAMES.join(", ")
                    )
                })?;
            off[i] = true;
        }
        Ok(Some(OffloadsOff(off)))
    }

    /// Which offloads are off, by their place in [`OFFLOAD_NAMES`].
    pub fn as_array(self) -> [bool; 5] {
        self.0
    }
}

impl fmt::Display for OffloadsOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == OffloadsOff::ALL {
            return f.write_str("off");
        }
        let names: Vec<&str> = OFFLOAD_NAMES
            .iter()
            .zip(self.0)
            .filter_map(|(n, off)| off.then_some(*n))
            .collect();
        f.write_str(&names.join("+"))
    }
}

impl Serialize for OffloadsOff {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for OffloadsOff {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OffloadsOff, D::Error> {
        let s = String::deserialize(d)?;
        OffloadsOff::parse(&s)
            .map_err(serde::de::Error::custom)?
            .ok_or_else(|| serde::de::Error::custom("a stored offload level is never `default`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_show_and_store_as_typed() {
        assert_eq!(OffloadsOff::parse("default"), Ok(None));
        assert_eq!(OffloadsOff::parse("off"), Ok(Some(OffloadsOff::ALL)));
        let tso_gro = OffloadsOff::parse("gro+tso").unwrap().unwrap();
        assert_eq!(tso_gro.as_array(), [true, false, true, false, false]);
        // Shown (and stored) in the canonical order, all five as `off`.
        assert_eq!(tso_gro.to_string(), "tso+gro");
        assert_eq!(
            OffloadsOff::parse("tso+gso+gro+tx+rx")
                .unwrap()
                .unwrap()
                .to_string(),
            "off"
        );
        let json = serde_json::to_string(&tso_gro).unwrap();
        assert_eq!(json, "\"tso+gro\"");
        assert_eq!(serde_json::from_str::<OffloadsOff>(&json).unwrap(), tso_gro);
        assert!(serde_json::from_str::<OffloadsOff>("\"default\"").is_err());
        let bad = OffloadsOff::parse("tso+lro").unwrap_err();
        assert!(
            bad.contains("\"lro\"") && bad.contains("tso, gso, gro, tx, rx"),
            "{bad}"
        );
        assert!(OffloadsOff::parse("").is_err());
    }
}
