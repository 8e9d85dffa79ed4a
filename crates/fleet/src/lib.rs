//! Fleet runs: one tcplab plan (a study, or a bench plan between hosts)
//! across the hosts of an inventory, over the system's OpenSSH, with each
//! host's results brought back into one local store.
//!
//! tcplab uses the transport administrators already have for running
//! things on many hosts, instead of daemons of its own: `ssh` with
//! BatchMode (never a prompt) and ControlMaster (one connection per host).
//! Servers get a one-time key for the run; every remote command is tied to
//! its connection, so nothing outlives the fleet run that started it.

pub mod inventory;
pub mod plan;
pub mod remote;
pub mod run;
pub mod ssh;

pub use inventory::{Host, Inventory, InventoryError, Role};
pub use plan::{FleetPlan, Task};
pub use run::{run, Event, FleetError, Options, Summary, TaskOutcome};
