//! Huang & Chen, "On performance measurements of TCP/IP and its device
//! driver": CPU time per function block of a 20 MB transfer at MSS 256 …
//! 1280 on sender and receiver (Table 1) and their shares (Figs 3–7); CPU
//! time against MSS and against packet count with the per-packet and
//! per-byte fit (Figs 8–9); stream size with and without NODELAY (Fig. 10);
//! the ACK cost with quick ACKs and delayed ACKs (Fig. 5); the checksum's
//! CPU share with offload on and off; and the cost of a larger routing
//! table (Table 2).
//!
//! On tcplab's own stack (sender or receiver beside Linux over a plain
//! TUN, every block timed by the cycle counter with `--account on`):
//! Table 1 in exact µs per packet beside the paper's column and Linux's
//! sampled one, the per-packet and per-byte fit per checksum variant with
//! the checksum's share (offload among them), the ACK cost with delayed
//! ACKs off and every2 on a stack receiver, and Table 2 for each routing
//! table structure (linear, hash, trie) against its size.
//!
//! Segmentation and receive offloads (TSO, GSO, GRO) hide per-packet costs:
//! every per-packet experiment runs with them off (the MSS and checksum
//! experiments also with them as the devices have them, to show what they
//! hide), and each trial records its offload state.

use crate::spec::{levels, repeat, Experiment, PlanOptions, StudyPlan};

mod acks;
mod claims;
#[cfg(test)]
mod control_tests;
mod fit_claims;
mod offloads;
pub(crate) mod paper;
mod report;
mod routes;
mod samples;
mod stack;
mod stack_ack_checksum;
mod stack_claims;
mod stack_costs;
mod stack_table1;
#[cfg(test)]
mod stack_tests;
#[cfg(test)]
mod tests;
pub use report::report;

/// The study's name on the command line.
pub const NAME: &str = "huang-chen";

/// The study's plan. `--topology` replaces `veth`.
pub fn plan(o: &PlanOptions) -> StudyPlan {
    let r = repeat(o);
    let place = o.topology.clone().unwrap_or_else(|| "veth".into());
    let dur = if o.quick { "0.5s" } else { "1s" };
    // Trials bound by time, long enough for 1,000 CPU samples of each
    // endpoint at 10 kHz in every trial a share is stated from.
    let long = if o.quick { "1s" } else { "2s" };
    let e = vec![
        Experiment::bench(
            "mss-blocks",
            "Table 1, Figs 3–9: CPU time per function block against MSS, sender and receiver, with offloads off (every segment handled one by one) and as the devices have them (timed trials, scaled to 20 MB)",
            format!(
                "tcp-stream --mss {mss} --offload off,default --write-size 8192 --duration {long} --topology {place} --probe cpu --repeat {r}",
                mss = levels(o, "256,512,1024,1280", "256,512,768,1024,1280"),
            ),
        ),
        Experiment::bench(
            "stream-size",
            "Fig. 10: sender CPU against stream (write) size, with and without NODELAY (PUSH), offloads off (timed trials: on veth a few MB would pass in milliseconds)",
            format!(
                "tcp-stream --write-size {sizes} --nodelay on,off --mss 1024 --offload off --duration {dur} --topology {place} --repeat {r}",
                sizes = levels(o, "64,256,1024", "64,128,256,512,1024"),
            ),
        ),
        Experiment::bench(
            "ack",
            "§3, Fig. 5: ACK cost, quick ACKs (the receiver's routes carry quickack 1, and TCP_QUICKACK after every read) against delayed ACKs, MSS 1024, offloads off",
            format!(
                "tcp-stream --quickack on,off --rcvlowat 1 --mss 1024 --offload off --write-size 8192 --duration {long} --topology {place} --probe cpu --repeat {r}"
            ),
        ),
        Experiment::bench(
            "checksum",
            "§3, Fig. 4: the checksum's CPU share with checksum offload on and off, with TSO, GSO and GRO held off in both arms (and as the devices have them, where losing checksum offload also loses TSO)",
            format!("tcp-stream --checksum-offload on,off --offload tso+gso+gro,default --write-size 65536 --duration {long} --topology {place} --probe cpu --repeat {r}"),
        ),
        Experiment::bench(
            "routes",
            "Table 2: small-datagram send cost against the number of routes in the sender's table, from a connected socket (route cached) and with sendto() (a lookup per datagram), offloads off",
            format!(
                "udp-stream --write-size 64 --routes {routes} --connect off,on --offload off --duration {dur} --topology {place} --probe cpu --repeat {r}",
                routes = levels(o, "1,1000,10000", "1,10,100,1000,10000,100000"),
            ),
        ),
    ];
    let mut e = e;
    e.extend(stack::experiments(o));
    StudyPlan {
        study: NAME.into(),
        experiments: e,
        skipped: Vec::new(),
    }
}
