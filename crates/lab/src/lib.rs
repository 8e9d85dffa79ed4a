//! `lab`: the places where tcplab's trials run. Loopback; two network
//! namespaces joined by a veth pair; two namespaces joined through a middle
//! namespace that imposes a link (rate, delay, jitter, loss, reordering)
//! with the kernel's qdiscs or tcplab's own AF_PACKET emulator; and slower
//! hosts through CPU quotas and pinning. Everything created is named
//! `tcplab-<tag>-…` and removed on drop; `clean` removes what a killed run
//! left behind.

pub mod clean;
pub mod cmd;
pub mod emulator;
pub mod error;
pub mod host;
pub mod link;
pub mod names;
pub mod netns;
pub mod offload;
pub mod ring;
pub mod rps;
pub mod shaper;
pub mod topology;
pub mod trial_changes;

pub use error::LabError;
pub use link::{LinkSpec, Mechanism};
pub use topology::{Place, PlaceInfo, PlaceSpec, Topology};
