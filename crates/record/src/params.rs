//! Trial parameters: one point of a sweep, every factor by its CLI flag
//! name. The struct and its level types are generated from the factor
//! table (see [`crate::factor`]); this module keeps their old paths.

pub use crate::factor::{
    Api, HostSide, HostSpeed, LoadSide, LoadSpec, Pin, PlaceName, ProtocolLayer, StackImpl,
    TestKind, TrialParams, AUTO_RCVLOWAT_MAX, AUTO_RCVLOWAT_MIN, DEFAULT_READ_SIZE,
};
