//! Parsing of the plan's own settings (`--precision`); factor levels are
//! parsed by record's factor table. Every error names the flag and the value.

use record::factor::FactorError;
use thiserror::Error;

/// A plan setting or factor level that could not be understood.
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
    /// A factor's levels are invalid.
    #[error(transparent)]
    Factor(#[from] FactorError),
}

fn invalid(flag: &str, value: &str, why: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        flag: flag.to_string(),
        value: value.to_string(),
        why: why.into(),
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
    fn precision_levels() {
        assert_eq!(precision("--precision", "95,5"), Ok((0.95, 0.05)));
        assert!(precision("--precision", "95").is_err());
        assert!(precision("--precision", "100,5").is_err());
    }
}
