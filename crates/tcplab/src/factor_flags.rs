//! `bench`'s factor flags, one per entry of record's factor table, built
//! from the table instead of written out: a new factor gets its flag, help
//! and place in `--help` from its table entry.

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use record::factor::FactorInfo;
use record::FACTORS;
use std::collections::BTreeMap;

/// The factor flags given, each as typed (`--nodelay` alone is `on`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactorFlags {
    /// The text of each given flag, by flag name.
    given: BTreeMap<&'static str, String>,
}

impl FactorFlags {
    /// The text given to the factor's flag, if it was given.
    pub fn text(&self, info: &FactorInfo) -> Option<&str> {
        self.given.get(info.flag).map(String::as_str)
    }

    /// The flags as a run's settings record them: every factor's setting
    /// key (`send_rate`) with its text, `null` where not given.
    pub fn settings(&self) -> serde_json::Value {
        FACTORS
            .iter()
            .map(|f| (f.setting_key(), self.text(f).into()))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }
}

/// The clap argument of one factor. A flag that needs a value takes a
/// negative number (`--duration -1`), so that the factor's own parser
/// says what is wrong with it; a value that is no number (`-1s`) would be
/// taken for a flag, as would a forgotten value.
fn arg(info: &FactorInfo) -> Arg {
    let mut a = Arg::new(info.flag)
        .long(info.flag)
        .value_name(info.value_name)
        .help(info.help)
        .action(ArgAction::Set)
        .value_parser(clap::value_parser!(String));
    if info.alone_means_on {
        a = a.num_args(0..=1).default_missing_value("on");
    } else {
        a = a.allow_negative_numbers(true);
    }
    if let Some(other) = info.conflicts_with {
        a = a.conflicts_with(other);
    }
    a
}

impl FromArgMatches for FactorFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = FactorFlags::default();
        flags.update_from_arg_matches(m)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for f in FACTORS {
            if let Some(text) = m.get_one::<String>(f.flag) {
                self.given.insert(f.flag, text.clone());
            }
        }
        Ok(())
    }
}

impl Args for FactorFlags {
    fn augment_args(cmd: Command) -> Command {
        FACTORS.iter().fold(cmd, |cmd, f| cmd.arg(arg(f)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Bench {
        #[command(flatten)]
        factors: FactorFlags,
    }

    fn parse(args: &[&str]) -> Result<FactorFlags, clap::Error> {
        Bench::try_parse_from(std::iter::once("bench").chain(args.iter().copied()))
            .map(|b| b.factors)
    }

    fn info(flag: &str) -> &'static FactorInfo {
        FACTORS.iter().find(|f| f.flag == flag).unwrap()
    }

    #[test]
    fn every_factor_has_its_flag_and_switches_alone_mean_on() {
        let f = parse(&["--write-size", "1K,4K", "--nodelay", "--send-rate", "1mbit"]).unwrap();
        assert_eq!(f.text(info("write-size")), Some("1K,4K"));
        assert_eq!(f.text(info("nodelay")), Some("on"));
        assert_eq!(f.text(info("cork")), None);
        let s = f.settings();
        assert_eq!(s["send_rate"], "1mbit");
        assert_eq!(s["duration"], serde_json::Value::Null);
        assert_eq!(s.as_object().unwrap().len(), FACTORS.len());
        // --checksum-offload is a switch that needs its level.
        assert!(parse(&["--checksum-offload"]).is_err());
    }

    #[test]
    fn a_negative_number_reaches_the_factor_parser() {
        let f = parse(&["--duration", "-1"]).unwrap();
        assert_eq!(f.text(info("duration")), Some("-1"));
        let f = parse(&["--write-size", "-0.5"]).unwrap();
        assert_eq!(f.text(info("write-size")), Some("-0.5"));
        // A forgotten value is still one, and a switch still ends at the
        // next flag.
        assert!(parse(&["--duration", "--bytes", "1M"]).is_err());
        let f = parse(&["--nodelay", "--cork", "on"]).unwrap();
        assert_eq!(f.text(info("nodelay")), Some("on"));
        assert_eq!(f.text(info("cork")), Some("on"));
    }

    #[test]
    fn bytes_conflict_with_duration() {
        assert!(parse(&["--bytes", "1M", "--duration", "1s"]).is_err());
    }
}
