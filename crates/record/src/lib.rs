//! `record`: the plain data types every tcplab stage reads and writes (trial
//! parameters, trial outcomes, runs, host facts) and the SQLite store that
//! keeps them. It depends on no other tcplab crate.

pub mod cpu_profile;
pub mod export;
pub mod factor;
pub mod host;
pub mod host_profile;
pub mod import;
pub mod numbers;
pub mod owner;
pub mod params;
pub mod pcap;
pub mod probe_event;
pub mod run;
pub mod store;
pub mod stored_events;

pub use cpu_profile::{CpuProfile, ProfiledStack, ProfiledThread, ThreadRole};
pub use factor::{FactorInfo, FactorKind, FactorValue, Factors, FACTORS};
pub use host::HostFacts;
pub use host_profile::{HostProfile, Measured, HOST_PROFILE_VERSION};
pub use import::{ForeignRun, ImportOutcome};
pub use owner::RunOwner;
pub use params::{
    Api, HostSide, HostSpeed, LoadSide, LoadSpec, Pin, PlaceName, ProtocolLayer, StackImpl,
    TestKind, TrialParams,
};
pub use run::{
    EventBlob, PointRecord, PrecisionOutcome, RunMeta, RunStatus, TrialOutcome, TrialRecord,
    TrialStatus,
};
pub use store::{DeletedRun, RunSummary, Store, StoreError, StoredRun};
pub use stored_events::StoredEventsError;
