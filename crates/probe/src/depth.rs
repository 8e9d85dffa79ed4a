//! How far each probe program goes when it fires.
//!
//! Only [`ProbeDepth::Full`] records anything. The other depths exist to
//! measure what probing itself costs, split the way the overhead benchmark
//! reports it: attaching programs that return at once (`empty`), finding
//! the experiment's packets without recording them (`filter`), and
//! recording (`full`, the difference to `filter`).

use crate::error::ProbeError;
use serde::{Deserialize, Serialize};

/// How far each program runs (see `src/bpf/depth.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeDepth {
    /// Record every event (the normal mode).
    #[default]
    Full,
    /// Parse and filter each event, then return before writing a record;
    /// the sampler returns before its stack walk.
    Filter,
    /// Return at once: what attaching the programs costs.
    Empty,
}

impl ProbeDepth {
    /// Every depth, in `--probe-depth`'s order.
    pub const ALL: [ProbeDepth; 3] = [ProbeDepth::Full, ProbeDepth::Filter, ProbeDepth::Empty];

    /// The depth's name in `--probe-depth`.
    pub fn name(self) -> &'static str {
        match self {
            ProbeDepth::Full => "full",
            ProbeDepth::Filter => "filter",
            ProbeDepth::Empty => "empty",
        }
    }

    /// Parses `full`, `filter` or `empty`.
    pub fn parse(s: &str) -> Result<ProbeDepth, ProbeError> {
        ProbeDepth::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| ProbeError::UnknownDepth(s.to_string()))
    }

    /// The value the programs' read-only `depth` holds (`DEPTH_*`).
    pub(crate) fn code(self) -> u32 {
        match self {
            ProbeDepth::Full => 0,
            ProbeDepth::Filter => 1,
            ProbeDepth::Empty => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_codes_match_the_header() {
        for d in ProbeDepth::ALL {
            assert_eq!(ProbeDepth::parse(d.name()).unwrap(), d);
        }
        assert!(ProbeDepth::parse("half").is_err());
        let header = include_str!("bpf/depth.h");
        for (d, name) in [
            (ProbeDepth::Full, "DEPTH_FULL"),
            (ProbeDepth::Filter, "DEPTH_FILTER"),
            (ProbeDepth::Empty, "DEPTH_EMPTY"),
        ] {
            assert!(
                header.contains(&format!("#define {name} {}", d.code())),
                "{name}"
            );
        }
    }
}
