//! The factors of a trial: one declarative table (table.rs) from which
//! [`TrialParams`], its defaults, the flags' metadata ([`FACTORS`]), the
//! levels of a sweep ([`Factors`]) and typed access to a point's levels
//! ([`TrialParams::value`]) are generated. Adding a factor is one entry there.

#[macro_use]
mod macros;
pub mod cpu_speed;
pub mod defaults;
pub mod host_model;
pub mod level_types;
pub mod offloads;
pub mod parse;
pub mod stack_switches;
mod table;
#[cfg(test)]
mod tests;
mod trial_params;
pub mod value;

pub use cpu_speed::{ClassSpeeds, CpuSpeed, WorkClass};
pub use defaults::{AUTO_RCVLOWAT_MAX, AUTO_RCVLOWAT_MIN, DEFAULT_READ_SIZE};
pub use level_types::{
    Api, HostSide, HostSpeed, LoadSide, LoadSpec, Pin, PlaceName, ProtocolLayer, StackImpl,
    TestKind,
};
pub use offloads::{OffloadsOff, OFFLOAD_NAMES};
pub use parse::{FactorError, HostLimits, LevelError};
pub use stack_switches::{
    Account, Checksum, DelayedAck, FlowControl, HostModel, Layers, PcbLookup, RouteTable,
    RttEstimator, Sws, TimerClock,
};
pub use table::{Factors, TrialParams, FACTORS};
pub use value::{FactorKind, FactorValue, Level, ToLevel};

/// The key of the test in stored parameters and CSV columns; every other
/// key is a factor's.
pub const TEST_KEY: &str = "test";

/// What the table says about one factor, for flags, columns and labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FactorInfo {
    /// The `TrialParams` field: the key in stored JSON and the CSV column.
    pub key: &'static str,
    /// The flag without `--`, e.g. `write-size`.
    pub flag: &'static str,
    /// The flag's value name in help, e.g. `SIZES`.
    pub value_name: &'static str,
    /// The flag's help text.
    pub help: &'static str,
    /// `--flag` alone means `on` (switches).
    pub alone_means_on: bool,
    /// The flag takes one level: its value may contain commas.
    pub one_level: bool,
    /// A flag (without `--`) this one cannot be combined with.
    pub conflicts_with: Option<&'static str>,
    /// The factor's name with its unit, for axes and headers.
    pub label: &'static str,
    /// The kind of value it takes.
    pub kind: FactorKind,
}

impl FactorInfo {
    /// The key of the flag in a run's stored settings (`send_rate` for
    /// `--send-rate`).
    pub fn setting_key(&self) -> String {
        self.flag.replace('-', "_")
    }
}

/// The table's entry for the factor stored under `key`.
pub fn factor_info(key: &str) -> Option<&'static FactorInfo> {
    FACTORS.iter().find(|f| f.key == key)
}

/// Every key of stored parameters: the test, then the factors in table order.
pub fn param_keys() -> impl Iterator<Item = &'static str> {
    std::iter::once(TEST_KEY).chain(FACTORS.iter().map(|f| f.key))
}

/// Every key of stored parameters sorted by name, the order of the keys in
/// a stored point's JSON (and so of the tables that list them).
pub fn param_keys_by_name() -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = param_keys().collect();
    keys.sort_unstable();
    keys
}

/// The keys whose stored levels differ between `points`, sorted by name.
/// An unset level is one level however the point resolves it (`--rcvlowat
/// auto` stays one level while write sizes vary).
pub fn varying_keys<'a>(points: impl IntoIterator<Item = &'a TrialParams>) -> Vec<&'static str> {
    let points: Vec<&TrialParams> = points.into_iter().collect();
    let Some(first) = points.first() else {
        return Vec::new();
    };
    let stored = |p: &TrialParams, k: &str| p.value(k).map(|v| v.json());
    param_keys_by_name()
        .into_iter()
        .filter(|k| points.iter().any(|p| stored(p, k) != stored(first, k)))
        .collect()
}

/// The levels of one flag: none when not `given`, else its comma-separated
/// list (or its whole text for a one-level flag), each parsed by `parse`.
pub fn parse_levels<T>(
    info: &FactorInfo,
    given: Option<&str>,
    limits: &HostLimits,
    parse: impl Fn(&str, &HostLimits) -> Result<T, LevelError>,
) -> Result<Vec<T>, FactorError> {
    let Some(text) = given else {
        return Ok(Vec::new());
    };
    let levels = if info.one_level {
        parse(text, limits).map(|l| vec![l])
    } else {
        parse::list(text, |s| parse(s, limits))
    };
    levels.map_err(|e| e.for_flag(&format!("--{}", info.flag)))
}

/// An error for the first factor given together with the one it conflicts with.
pub fn check_conflicts(
    factors: &[FactorInfo],
    level_count: impl Fn(&str) -> usize,
) -> Result<(), FactorError> {
    for f in factors {
        if let Some(other) = f.conflicts_with {
            if level_count(f.flag) > 0 && level_count(other) > 0 {
                return Err(FactorError::Combination(format!(
                    "--{} and --{other} are mutually exclusive",
                    f.flag
                )));
            }
        }
    }
    Ok(())
}

/// Replaces every point by one copy per level, with `set` applying the level.
pub fn cross<T: Clone>(
    points: Vec<TrialParams>,
    levels: &[T],
    set: impl Fn(&mut TrialParams, T),
) -> Vec<TrialParams> {
    if levels.is_empty() {
        return points;
    }
    let mut out = Vec::with_capacity(points.len() * levels.len());
    for p in points {
        for l in levels {
            let mut q = p.clone();
            set(&mut q, l.clone());
            out.push(q);
        }
    }
    out
}
