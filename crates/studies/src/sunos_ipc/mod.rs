//! The SunOS IPC study (Papadopoulos & Parulkar's probes in SunOS 4.0.3):
//! throughput against socket buffer size, local and remote (Experiment 1);
//! the four queues of the path and the delay of each hop in a 256 KB
//! transfer, then one packet at a time (Experiment 2, Table 1); the
//! receive socket queue and ACK generation in a 1 MB local transfer
//! (Experiment 3, Fig. 7); throughput and queues under CPU-bound load on
//! the receiver (Experiment 4, Figs 8–9); and local throughput as a share
//! of memory-copy bandwidth (the paper's 9 Mbit/s: 43% of its 21 Mbit/s
//! bound, 14% of its 63 Mbit/s copy rate).

use crate::spec::{
    has_link_profile, levels, no_link_profile, repeat, Experiment, PlanOptions, Skipped, StudyPlan,
};

mod ack_ratio;
mod acks;
pub(crate) mod change;
mod leaders;
mod load;
mod packet_queues;
pub(crate) mod paper;
mod probed;
mod report;
mod steps;
pub use report::report;

#[cfg(test)]
mod tests;

/// How the report cites the paper.
const CITE: &str = "SunOS IPC study";

/// The study's name on the command line.
pub const NAME: &str = "sunos-ipc";

/// Socket buffer sizes of Experiment 1, one experiment each (so `--quick`
/// keeps them all, with fewer repetitions and shorter trials).
const BUFS: &[&str] = &["4K", "8K", "16K", "32K", "64K", "256K", "1M", "4M"];

/// Socket buffer sizes on the delayed link: from below its 25 KB
/// bandwidth-delay product to above it.
const DELAY_BUFS: &[&str] = &["4K", "8K", "16K", "32K", "64K"];

/// How long each probed stream transfer runs: the shortest trial the
/// studies allow, since every segment leaves a record at each probe
/// (about 7 MB of records a trial on veth).
const PROBED_S: &str = "0.1s";

/// The one-way delay added to the slow link for the buffer experiment.
const DELAY: &str = "10ms";

/// The experiment id of one socket buffer size on the delayed link.
pub(crate) fn delayed_sockbuf_id(size: &str) -> String {
    format!("sockbuf-delay-{}", size.to_lowercase())
}

/// The experiment id of one socket buffer size.
pub(crate) fn sockbuf_id(size: &str) -> String {
    format!("sockbuf-{}", size.to_lowercase())
}

/// The study's plan. `--topology` replaces the remote places (veth and
/// ether10) with one.
pub fn plan(o: &PlanOptions) -> StudyPlan {
    let r = repeat(o);
    let dur = if o.quick { "0.5s" } else { "1s" };
    let (fast, slow) = match &o.topology {
        Some(t) => (t.clone(), t.clone()),
        None => ("veth".to_string(), "ether10".to_string()),
    };
    let places = if fast == slow {
        format!("loopback,{fast}")
    } else {
        format!("loopback,{fast},{slow}")
    };
    let mut e = Vec::new();
    // Send and receive buffers set together, as the paper did: one
    // experiment per size, each over the places.
    // The slow link only up to 256 KB: a 10 Mbit/s link's product is a
    // few hundred bytes, and a duration-bound sender's full 1 MB or 4 MB
    // buffer takes 0.8 or 3.4 s to drain through it after the trial's time.
    let local_places = if fast == slow {
        format!("loopback,{fast}")
    } else {
        places.replace(&format!(",{slow}"), "")
    };
    for size in BUFS {
        let here = if matches!(*size, "1M" | "4M") && o.topology.is_none() {
            &local_places
        } else {
            &places
        };
        e.push(Experiment::bench(
            sockbuf_id(size),
            format!("Experiment 1: throughput with {size} socket buffers, local and remote"),
            format!("tcp-stream --write-size 8192 --sndbuf {size} --rcvbuf {size} --topology {here} --duration {dur} --repeat {r}"),
        ));
    }
    // On ether10 the bandwidth-delay product is about 90 bytes, so no
    // buffer limits it. The paper's 4 → 16 KB step needs a product above
    // 4 KB: the same link with 10 ms each way (the lab's emulator; 20 ms
    // RTT, a 25 KB product), where a buffer of B bytes allows about B/RTT.
    // A place without a link profile (loopback, veth, router) has no
    // 10 Mbit/s link to delay: the experiment is left out, with why.
    let mut skipped = Vec::new();
    for size in DELAY_BUFS {
        let id = delayed_sockbuf_id(size);
        let title = format!(
            "Experiment 1: throughput with {size} socket buffers, 10 Mbit/s with a 20 ms RTT"
        );
        if has_link_profile(&slow) {
            e.push(Experiment::bench(
                id,
                title,
                format!("tcp-stream --write-size 8192 --sndbuf {size} --rcvbuf {size} --topology {slow} --link {slow},delay={DELAY} --duration {dur} --repeat {r}"),
            ));
        } else {
            skipped.push(Skipped {
                id,
                title,
                reason: no_link_profile(
                    &slow,
                    "adds 10 ms each way to the link so that its bandwidth-delay product exceeds 4 KB",
                ),
            });
        }
    }
    // Queue lengths in segments: with offloads off (tso, gso, gro and the
    // checksums) one skb is one segment, not a GSO or GRO aggregate. The
    // paper's 256 KB (Experiment 2) and 1 MB (Experiment 3) transfers
    // last about a millisecond here: the probed transfers run for
    // PROBED_S instead, tens of thousands of segments a trial.
    e.push(Experiment::bench(
        "queues",
        "Experiment 2, Figs 3–6: the four queues and each hop's delay in a 100 ms transfer",
        format!("tcp-stream --write-size 8192 --duration {PROBED_S} --topology {fast} --offload off --probe queues,tcp,sched --repeat {r}"),
    ));
    e.push(Experiment::bench(
        "stop-and-wait",
        "Experiment 2, Table 1: one 1 KB packet at a time, 1 KB buffers, NODELAY: delay per layer",
        format!("tcp-rr --write-size 1024 --sndbuf 1K --rcvbuf 1K --nodelay --topology {fast} --duration {PROBED_S} --probe queues,tcp,sched --repeat {r}"),
    ));
    e.push(Experiment::bench(
        "ack-local",
        "Experiment 3, Fig. 7: the receive socket queue and ACK generation, 100 ms locally",
        format!("tcp-stream --write-size 8192 --duration {PROBED_S} --probe queues,tcp,sched --repeat {r}"),
    ));
    e.push(Experiment::bench(
        "load",
        "Experiment 4, Fig. 8: throughput against CPU-bound workers on the receiver",
        format!(
            "tcp-stream --write-size 8192 --load {load} --topology {fast} --duration {dur} --repeat {r}",
            load = levels(o, "none,receiver:2,receiver:8", "none,receiver:1,receiver:2,receiver:4,receiver:8"),
        ),
    ));
    e.push(Experiment::bench(
        "load-queues",
        "Experiment 4, Fig. 9: the queues with 4 CPU-bound workers on the receiver, 100 ms",
        format!("tcp-stream --write-size 8192 --duration {PROBED_S} --load none,receiver:4 --topology {fast} --offload off --probe queues,tcp,sched --repeat {r}"),
    ));
    StudyPlan {
        study: NAME.into(),
        experiments: e,
        skipped,
    }
}
