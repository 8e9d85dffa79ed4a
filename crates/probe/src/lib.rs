//! tcplab's eBPF probes on the kernel's TCP/IP path.
//!
//! The programs in `src/bpf/path.bpf.c` sit on raw tracepoints at every
//! queue of the path the SunOS IPC study instrumented (send socket,
//! interface, IP input, receive socket), on TCP's per-segment `tcp_probe`,
//! on retransmissions and on the scheduler. They are CO-RE (built by
//! libbpf-cargo, relocated by libbpf against the kernel's BTF), keep only
//! the experiment's flows (ports and thread group set in read-only data
//! before load) and write fixed 64-byte records to a ring buffer whose
//! losses are counted per probe.
//!
//! This kernel refuses kprobes and fentry/fexit, so function durations are
//! never measured directly: time between tracepoints is what the records give.

pub mod buffer;
pub mod depth;
pub mod error;
pub use record::probe_event as event;
pub mod groups;
pub mod raw_profile;
pub mod sampler;
pub mod session;
mod symbols;

mod skel {
    #![allow(clippy::all, missing_docs, unused_imports, dead_code)]
    pub mod path {
        include!(concat!(env!("OUT_DIR"), "/path.skel.rs"));
    }
    pub mod profile {
        include!(concat!(env!("OUT_DIR"), "/profile.skel.rs"));
    }
}

pub use depth::ProbeDepth;
pub use error::ProbeError;
pub use event::{decode_all, ProbeEvent, ProbeId, EVENT_SIZE, EVENT_VERSION};
pub use groups::{parse_groups, ProbeGroup};
pub use raw_profile::{RawProfile, RawSample};
pub use sampler::{CpuSampler, SampleClock, SamplerConfig, DEFAULT_PERIOD_NS};
pub use session::{Capture, ProbeConfig, ProbeSession, DEFAULT_RING_BYTES};
