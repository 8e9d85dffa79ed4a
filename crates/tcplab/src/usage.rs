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

/// A clap parse error as one line, without clap's usage block: its first
/// line, then what clap's context adds on later lines, folded in — the
/// suggestion of a mistyped flag, command or value (`unexpected argument
/// '--write-sise' (did you mean '--write-size'?)`) and the valid values of
/// an invalid one. `argv` is the argument vector clap parsed, so that a
/// negative value clap took for a flag (`--duration -1s`) is named with
/// its flag and quoted whole.
pub fn clap_error_line(e: &clap::Error, argv: &[String]) -> String {
    use clap::error::{ContextKind, ErrorKind};
    let text = e.render().to_string();
    let mut line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .to_string();
    let suggested: Vec<String> = [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedValue,
    ]
    .into_iter()
    .filter_map(|k| e.get(k))
    .flat_map(context_strings)
    .collect();
    if !suggested.is_empty() {
        if let Some(stem) = line.strip_suffix(" found") {
            line = stem.to_string();
        }
        line.push_str(&format!(" (did you mean {}?)", quoted_or(&suggested)));
    }
    // `--duration -1s`: clap reads `-1s` as short flags. Say what it was.
    if matches!(e.kind(), ErrorKind::UnknownArgument) && suggested.is_empty() {
        let arg = e.get(ContextKind::InvalidArg).map(context_strings);
        if let Some(a) = arg.iter().flatten().find(|a| is_negative(a)) {
            line = match negative_value(argv, a) {
                Some((flag, value)) => {
                    format!("invalid value '{value}' for '{flag}': amounts cannot be negative")
                }
                None => format!("{line} (a negative amount? amounts cannot be negative)"),
            };
        }
    }
    if matches!(e.kind(), ErrorKind::InvalidValue) {
        if let Some(valid) = e.get(ContextKind::ValidValue) {
            let valid = context_strings(valid);
            if !valid.is_empty() {
                line.push_str(&format!("; valid: {}", valid.join(", ")));
            }
        }
    }
    line
}

/// Whether an argument reads as a negative number (`-1`, `-1s`, `-0.5M`).
fn is_negative(a: &str) -> bool {
    a.len() > 1 && a.starts_with('-') && a[1..].starts_with(|c: char| c.is_ascii_digit())
}

/// The long flag and the whole word of a negative value clap reported as
/// the unknown argument `arg` (`-1` of `-1s`): the first word of `argv`
/// that starts with `arg` right after a `--flag` without its own `=value`.
fn negative_value<'a>(argv: &'a [String], arg: &str) -> Option<(&'a str, &'a str)> {
    argv.windows(2).find_map(|w| {
        let (flag, value) = (w[0].as_str(), w[1].as_str());
        (flag.starts_with("--") && flag.len() > 2 && !flag.contains('=') && value.starts_with(arg))
            .then_some((flag, value))
    })
}

/// The texts of one piece of a clap error's context.
fn context_strings(v: &clap::error::ContextValue) -> Vec<String> {
    use clap::error::ContextValue;
    match v {
        ContextValue::String(s) => vec![s.clone()],
        ContextValue::Strings(v) => v.clone(),
        ContextValue::StyledStr(s) => vec![s.to_string()],
        ContextValue::StyledStrs(v) => v.iter().map(|s| s.to_string()).collect(),
        _ => Vec::new(),
    }
}

/// `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`.
fn quoted_or(items: &[String]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("'{s}'")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_negative_value_is_found_after_its_flag_and_quoted_whole() {
        let argv = words("tcplab bench tcp-stream --repeat 2 --duration -1s");
        assert_eq!(negative_value(&argv, "-1"), Some(("--duration", "-1s")));
        let argv = words("tcplab bench tcp-stream --bytes=1M -1");
        assert_eq!(negative_value(&argv, "-1"), None);
        assert!(is_negative("-1s") && is_negative("-0.5M"));
        assert!(!is_negative("-v") && !is_negative("-"));
    }
}
