//! A factor's level at one point, typed: the number plots put on an axis,
//! and the texts the CSV export, the terminal table and progress lines show
//! (numbers through [`crate::numbers`]).

use super::level_types::{
    Api, HostSpeed, LoadSpec, Pin, PlaceName, ProtocolLayer, StackImpl, TestKind,
};
use serde_json::Value;

/// The kind of value a factor takes, which decides its unit and how it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactorKind {
    /// A byte size (`64K`); reports write it as `64K` and plot a byte axis.
    Bytes,
    /// Seconds.
    Seconds,
    /// A whole number of things (connections, routes).
    Count,
    /// Bits per second.
    Rate,
    /// CPU nanoseconds per KB.
    NanosPerKb,
    /// On or off.
    Switch,
    /// A name (an API, a congestion control, a place, a link spec, a layer).
    Name,
    /// CPU-bound workers beside one side; unset means none.
    Load,
    /// A CPU quota on one side.
    HostSpeed,
    /// CPUs the endpoints are pinned to.
    Pin,
}

impl FactorKind {
    /// True for byte sizes.
    pub fn is_bytes(self) -> bool {
        self == FactorKind::Bytes
    }
}

/// A level as its field holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Level {
    /// The field is unset (`None`; loopback for the place).
    Unset,
    /// Unset, and the factor then picks this number itself (`--rcvlowat auto`).
    Auto(u64),
    /// A whole number.
    Int(u64),
    /// A real number.
    Float(f64),
    /// On or off.
    Switch(bool),
    /// A name.
    Name(String),
    /// A load.
    Load(LoadSpec),
    /// A host speed.
    HostSpeed(HostSpeed),
    /// CPU pinning.
    Pin(Pin),
}

/// One factor's level at one point, with the kind of value the factor takes.
#[derive(Debug, Clone, PartialEq)]
pub struct FactorValue {
    /// The factor's kind.
    pub kind: FactorKind,
    /// The level.
    pub level: Level,
}

impl FactorValue {
    /// The level as a number for a plot axis; `None` for levels that are not numbers.
    pub fn number(&self) -> Option<f64> {
        match self.level {
            Level::Int(n) => Some(n as f64),
            Level::Float(x) => Some(x),
            _ => None,
        }
    }

    /// The level as the stored run's JSON holds it (`null` when unset).
    pub fn json(&self) -> Value {
        match &self.level {
            Level::Unset | Level::Auto(_) => Value::Null,
            Level::Int(n) => Value::from(*n),
            Level::Float(x) => Value::from(*x),
            Level::Switch(b) => Value::Bool(*b),
            Level::Name(s) => Value::String(s.clone()),
            Level::Load(l) => to_json(l),
            Level::HostSpeed(h) => to_json(h),
            Level::Pin(p) => to_json(p),
        }
    }

    /// The level in a CSV cell: empty when unset, numbers and names plain,
    /// switches `true`/`false`, loads `sender:2`, speeds `sender=0.25`, pins
    /// `sender=0,receiver=1`.
    pub fn csv_text(&self) -> String {
        match &self.level {
            Level::Unset | Level::Auto(_) => String::new(),
            Level::Int(n) => n.to_string(),
            Level::Float(x) => crate::numbers::setting_text(*x),
            Level::Switch(b) => b.to_string(),
            Level::Name(s) => s.clone(),
            Level::Load(l) => l.to_string(),
            Level::HostSpeed(h) => h.to_string(),
            Level::Pin(p) => p.to_string(),
        }
    }

    /// The level in a cell of the terminal table and in progress lines,
    /// as its flag takes it: `—` when unset (`none`, as typed, for a load
    /// or a host speed), `auto (N)` for an automatic level, sizes `64K`,
    /// rates `100mbit`, work per KB `1ms`, switches `on`/`off`, names
    /// plain, loads `sender:2`, host speeds `both=0.1`, pins
    /// `sender=0,receiver=1`.
    pub fn table_text(&self) -> String {
        match &self.level {
            Level::Auto(n) => format!("auto ({n})"),
            Level::Unset if matches!(self.kind, FactorKind::Load | FactorKind::HostSpeed) => {
                "none".into()
            }
            Level::Unset => "—".into(),
            _ => self.typed_text(),
        }
    }

    /// A set level as its flag takes it (see [`FactorValue::table_text`]);
    /// `auto` for an automatic level and empty when unset.
    pub fn typed_text(&self) -> String {
        use crate::numbers::{nanos_text, rate_text, setting_text, size_text};
        match &self.level {
            Level::Unset => String::new(),
            Level::Auto(_) => "auto".into(),
            Level::Int(_) | Level::Float(_) => {
                let x = self.number().unwrap_or(f64::NAN);
                match self.kind {
                    FactorKind::Bytes => size_text(x),
                    FactorKind::Rate => rate_text(x),
                    FactorKind::NanosPerKb => nanos_text(x),
                    _ => setting_text(x),
                }
            }
            Level::Switch(b) => if *b { "on" } else { "off" }.into(),
            Level::Name(s) => s.clone(),
            Level::Load(l) => l.to_string(),
            Level::HostSpeed(h) => h.to_string(),
            Level::Pin(p) => p.to_string(),
        }
    }

    /// A compound level's fields as JSON values, in name order (as the
    /// stored JSON sorts them); `None` for other levels.
    pub fn fields(&self) -> Option<Vec<Value>> {
        match self.json() {
            Value::Object(o) => Some(o.into_iter().map(|(_, v)| v).collect()),
            _ => None,
        }
    }
}

/// A level type's JSON; serializing these plain structs cannot fail.
fn to_json(v: &impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A field type that gives a factor's [`Level`].
pub trait ToLevel {
    /// The level this field holds.
    fn to_level(&self) -> Level;
}

impl ToLevel for u64 {
    fn to_level(&self) -> Level {
        Level::Int(*self)
    }
}

impl ToLevel for u32 {
    fn to_level(&self) -> Level {
        Level::Int(u64::from(*self))
    }
}

impl ToLevel for f64 {
    fn to_level(&self) -> Level {
        Level::Float(*self)
    }
}

impl ToLevel for bool {
    fn to_level(&self) -> Level {
        Level::Switch(*self)
    }
}

impl ToLevel for String {
    fn to_level(&self) -> Level {
        Level::Name(self.clone())
    }
}

impl ToLevel for TestKind {
    fn to_level(&self) -> Level {
        Level::Name(self.name().to_string())
    }
}

impl ToLevel for Api {
    fn to_level(&self) -> Level {
        Level::Name(self.name().to_string())
    }
}

impl ToLevel for StackImpl {
    fn to_level(&self) -> Level {
        Level::Name(self.name().to_string())
    }
}

impl ToLevel for ProtocolLayer {
    fn to_level(&self) -> Level {
        Level::Name(self.name().to_string())
    }
}

impl ToLevel for PlaceName {
    /// Loopback is unset, as the stored JSON's `null`.
    fn to_level(&self) -> Level {
        self.built()
            .map_or(Level::Unset, |n| Level::Name(n.to_string()))
    }
}

impl ToLevel for LoadSpec {
    fn to_level(&self) -> Level {
        Level::Load(*self)
    }
}

impl ToLevel for HostSpeed {
    fn to_level(&self) -> Level {
        Level::HostSpeed(*self)
    }
}

impl ToLevel for Pin {
    fn to_level(&self) -> Level {
        Level::Pin(*self)
    }
}

impl ToLevel for super::offloads::OffloadsOff {
    fn to_level(&self) -> Level {
        Level::Name(self.to_string())
    }
}

impl<T: ToLevel> ToLevel for Option<T> {
    fn to_level(&self) -> Level {
        self.as_ref().map_or(Level::Unset, ToLevel::to_level)
    }
}
