//! Bad input: an error the user caused, reported in one line with exit status 2.

use std::fmt;

/// An error in what the user asked for (flags, values, combinations, hosts).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Wraps any displayable error as bad input.
pub fn usage(e: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UsageError(e.to_string()))
}
