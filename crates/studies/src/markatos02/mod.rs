//! Markatos 2002, "Speeding up TCP/IP: faster processors are not enough":
//! null system call latency, loopback bandwidth with 64 KB messages, MB per
//! CPU-second on loopback and emulated LAN, MAN and WAN paths (§3.4–3.7),
//! TCP and HTTP latency (§3.8–3.9), mileage (§4.1), and the model
//! throughput = 1 / (1/mem_bw + C/cpu_score) predicted from measured values
//! across CPU speeds.

use crate::spec::{levels, repeat, Experiment, PlanOptions, StudyPlan};

mod claims;
mod host_claims;
mod hosts;
mod one_host;
pub(crate) mod paper;
mod prediction;
mod report;
#[cfg(test)]
mod tests;
pub use report::report;

/// The study's name on the command line.
pub const NAME: &str = "markatos02";

/// The study's plan. The null system call latency and the CPU score come
/// from the host profile (`tcplab calibrate`), not from a sweep.
pub fn plan(o: &PlanOptions) -> StudyPlan {
    let r = repeat(o);
    let dur = if o.quick { "1s" } else { "3s" };
    let networks = match &o.topology {
        Some(t) => format!("loopback,{t}"),
        None => "loopback,lan100,man,wan".into(),
    };
    let e = vec![
        Experiment::bench(
            "mb-per-cpu",
            "§3.4–3.7: bandwidth and MB per CPU-second, 64 KB messages, loopback and emulated networks",
            format!("tcp-stream --write-size 65536 --topology {networks} --pin sender=0,receiver=1 --duration {dur} --repeat {r}"),
        ),
        Experiment::bench(
            "latency-tcp",
            "§3.8: TCP latency, 1-byte request/response",
            format!("tcp-rr --write-size 1 --topology loopback,lan100 --duration {dur} --repeat {r}"),
        ),
        Experiment::bench(
            "latency-http",
            "§3.9: HTTP latency, lat_http's page of 10 KB and 12 objects of 40 KB",
            format!("http --topology loopback,lan100 --duration {dur} --repeat {r}"),
        ),
        Experiment::bench(
            "cpu-attribution",
            "Where the CPU goes at 64 KB on loopback (sampled, kept apart from the MB per CPU-second trials; \
             sides pinned, but loopback's one device cannot steer receive processing per side, so the \
             receiver's softirq work is sampled on the CPU that sent: the sampler's softirq context tells it apart)",
            format!("tcp-stream --write-size 65536 --pin sender=0,receiver=1 --duration {dur} --probe cpu --repeat {r}"),
        ),
        Experiment::bench(
            "cpu-speed",
            "§4: loopback bandwidth against CPU speed (both hosts under a CPU quota), for the model",
            format!(
                "tcp-stream --write-size 65536 --host-speed {speeds} --pin sender=0,receiver=1 --duration {dur} --repeat {r}",
                speeds = levels(o, "both=0.1,both=0.3,none", "both=0.1,both=0.2,both=0.4,both=0.7,none"),
            ),
        ),
    ];
    StudyPlan {
        study: NAME.into(),
        experiments: e,
        skipped: Vec::new(),
    }
}
