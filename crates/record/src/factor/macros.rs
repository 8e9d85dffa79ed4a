//! `factor_table!`: expands the factor table (table.rs) into everything a
//! factor needs elsewhere, so adding a factor is one entry there.
//!
//! Each entry is a [`TrialParams`](super::TrialParams) field (its doc
//! comment and serde attributes pass through) followed by a block:
//!
//! ```text
//! /// The field's doc comment.
//! #[serde(default)]
//! field: FieldType {
//!     flag: "flag-name",              // --flag-name
//!     value_name: "SIZES",            // clap's value name
//!     help: "Help text",              // clap's help (no closing period)
//!     alone_means_on: true,           // optional: `--flag` alone is `on`
//!     one_level: true,                // optional: no comma-separated list
//!     conflicts_with: "other-flag",   // optional: never with --other-flag
//!     label: "field (unit)",          // axis and header text
//!     kind: Bytes,                    // a FactorKind
//!     level: LevelType,               // one parsed level
//!     parse: |s, host| parse::…(s),   // &str, &HostLimits -> Result<LevelType, LevelError>
//!     set: |p, v| …,                  // optional: applies a level (default: field = v.into())
//!     default: |test| …,              // the field without the flag, by test
//!     auto: |p| …,                    // optional: the number an unset level picks
//! }
//! ```
//!
//! From the entries it generates the `TrialParams` struct and its
//! `defaults` and `value`, the static `FACTORS` metadata, and `Factors`,
//! the levels of a sweep with `parse`, `expand` and `varying`.

/// Expands the factor table; see the module documentation.
macro_rules! factor_table {
    (@option) => { None };
    (@option $v:literal) => { Some($v) };
    (@set $p:ident $v:ident $field:ident $level:ty) => {
        $p.$field = $v.into()
    };
    (@set $p:ident $v:ident $field:ident $level:ty, $set:expr) => {{
        let set: fn(&mut TrialParams, $level) = $set;
        set($p, $v)
    }};
    (
        $(
            $(#[$attr:meta])*
            $field:ident: $ty:ty {
                flag: $flag:literal,
                value_name: $value_name:literal,
                help: $help:literal,
                $(alone_means_on: $alone:literal,)?
                $(one_level: $one:literal,)?
                $(conflicts_with: $conflict:literal,)?
                label: $label:literal,
                kind: $kind:ident,
                level: $level:ty,
                parse: $parse:expr,
                $(set: $set:expr,)?
                default: $default:expr,
                $(auto: $auto:expr,)?
            }
        )*
    ) => {
        /// One point of a sweep: the test and every factor, each named as its
        /// flag (with `_` for `-`, and a unit where the flag has none).
        ///
        /// At most one of `bytes` and `duration_s` is set.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct TrialParams {
            /// The test.
            pub test: $crate::factor::TestKind,
            $(
                $(#[$attr])*
                pub $field: $ty,
            )*
        }

        impl TrialParams {
            /// Every factor at its default for `test`.
            pub fn defaults(test: $crate::factor::TestKind) -> TrialParams {
                TrialParams {
                    test,
                    $(
                        $field: {
                            let default: fn($crate::factor::TestKind) -> $ty = $default;
                            default(test)
                        },
                    )*
                }
            }

            /// The level of the factor (or `test`) stored under `key`, typed;
            /// `None` for a key that is neither.
            pub fn value(&self, key: &str) -> Option<$crate::factor::FactorValue> {
                use $crate::factor::{FactorKind, FactorValue, Level, ToLevel};
                if key == $crate::factor::TEST_KEY {
                    return Some(FactorValue {
                        kind: FactorKind::Name,
                        level: self.test.to_level(),
                    });
                }
                match key {
                    $(
                        stringify!($field) => {
                            #[allow(unused_mut)]
                            let mut level = self.$field.to_level();
                            $(
                                if level == Level::Unset {
                                    let auto: fn(&TrialParams) -> u64 = $auto;
                                    level = Level::Auto(auto(self));
                                }
                            )?
                            Some(FactorValue {
                                kind: FactorKind::$kind,
                                level,
                            })
                        }
                    )*
                    _ => None,
                }
            }
        }

        /// Every factor, in table order (the order of sweeps, columns and flags).
        pub static FACTORS: &[$crate::factor::FactorInfo] = &[
            $(
                $crate::factor::FactorInfo {
                    key: stringify!($field),
                    flag: $flag,
                    value_name: $value_name,
                    help: $help,
                    alone_means_on: false $(|| $alone)?,
                    one_level: false $(|| $one)?,
                    conflicts_with: factor_table!(@option $($conflict)?),
                    label: $label,
                    kind: $crate::factor::FactorKind::$kind,
                },
            )*
        ];

        /// The levels of every factor in a sweep. An empty list means "the
        /// test's default".
        #[derive(Debug, Clone, Default)]
        pub struct Factors {
            $(
                #[doc = concat!("`--", $flag, "` levels.")]
                pub $field: Vec<$level>,
            )*
        }

        impl Factors {
            /// The levels of every flag `given` returns text for (the flag's
            /// text as typed), parsed with the host's `limits`.
            pub fn parse<'a>(
                given: impl Fn(&$crate::factor::FactorInfo) -> Option<&'a str>,
                limits: &$crate::factor::HostLimits,
            ) -> Result<Factors, $crate::factor::FactorError> {
                let mut infos = FACTORS.iter();
                Ok(Factors {
                    $(
                        $field: {
                            let info = infos.next().expect("one FactorInfo per field");
                            $crate::factor::parse_levels(info, given(info), limits, $parse)?
                        },
                    )*
                })
            }

            /// The number of levels of the factor with flag `flag` (0 for
            /// an unknown flag).
            pub fn level_count(&self, flag: &str) -> usize {
                match flag {
                    $($flag => self.$field.len(),)*
                    _ => 0,
                }
            }

            /// The cartesian product of all levels for `test`, in table
            /// order, the first factor slowest.
            pub fn expand(
                &self,
                test: $crate::factor::TestKind,
            ) -> Result<Vec<TrialParams>, $crate::factor::FactorError> {
                $crate::factor::check_conflicts(FACTORS, |flag| self.level_count(flag))?;
                let mut points = vec![TrialParams::defaults(test)];
                $(
                    points = $crate::factor::cross(points, &self.$field, |p, v| {
                        factor_table!(@set p v $field $level $(, $set)?)
                    });
                )*
                // A host model's mechanisms, where no flag set them.
                for p in &mut points {
                    if let Some(model) = p.host_model {
                        model.fill(p, |flag| self.level_count(flag) > 0);
                    }
                }
                Ok(points)
            }

            /// Keys (as in `TrialParams`) of the factors with more than one
            /// level, in table order: the columns that tell points apart.
            pub fn varying(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $(
                    if self.$field.len() > 1 {
                        keys.push(stringify!($field));
                    }
                )*
                keys
            }
        }
    };
}

/// Serde through a level's text (`#[serde(into = "String", try_from =
/// "String")]`): `Display` writes it, `parse` reads it back, so a stored
/// run reads as the command that made it.
macro_rules! serde_by_text {
    ($($t:ty),*) => {$(
        impl From<$t> for String {
            fn from(v: $t) -> String {
                v.to_string()
            }
        }

        impl TryFrom<String> for $t {
            type Error = String;
            fn try_from(s: String) -> Result<$t, String> {
                <$t>::parse(&s).map_err(|e| e.to_string())
            }
        }
    )*};
}

/// A level shown by its flag's text in tables and exports.
macro_rules! named_levels {
    ($($t:ty),*) => {$(
        impl super::value::ToLevel for $t {
            fn to_level(&self) -> super::value::Level {
                super::value::Level::Name(self.to_string())
            }
        }
    )*};
}
