//! Huang & Chen, "On performance measurements of TCP/IP and its device
//! driver": CPU time per function block of a 20 MB transfer at MSS 256 …
//! 1280 on sender and receiver (Table 1) and their shares (Figs 3–7); CPU
//! time against MSS and against packet count with the per-packet and
//! per-byte fit (Figs 8–9); stream size with and without NODELAY (Fig. 10);
//! the ACK cost with quick ACKs and delayed ACKs (Fig. 5); the checksum's CPU share with offload on and off; and the cost of a
//! larger routing table (Table 2).

use crate::spec::{levels, repeat, Experiment, PlanOptions, StudyPlan};

mod report;
pub use report::report;

/// The study's name on the command line.
pub const NAME: &str = "huang-chen";

/// The study's plan. `--topology` replaces `veth`.
pub fn plan(o: &PlanOptions) -> StudyPlan {
    let r = repeat(o, 2, 3);
    let place = o.topology.clone().unwrap_or_else(|| "veth".into());
    let dur = if o.quick { "0.5s" } else { "1s" };
    let e = vec![
        Experiment::new(
            "mss-blocks",
            "Table 1, Figs 3–9: CPU time per function block against MSS, sender and receiver (timed trials, scaled to 20 MB, so the sampler gets enough samples)",
            &[
                "tcp-stream",
                "--mss",
                levels(o, "256,512,1024,1280", "256,512,768,1024,1280"),
                "--write-size",
                "8192",
                "--duration",
                dur,
                "--topology",
                &place,
                "--probe",
                "cpu",
                "--repeat",
                &r,
            ],
        ),
        Experiment::new(
            "stream-size",
            "Fig. 10: sender CPU against stream (write) size, with and without NODELAY (PUSH)",
            &[
                "tcp-stream",
                "--write-size",
                levels(o, "64,256,1024", "64,128,256,512,1024"),
                "--nodelay",
                "on,off",
                "--mss",
                "1024",
                "--bytes",
                if o.quick { "1M" } else { "4M" },
                "--topology",
                &place,
                "--repeat",
                &r,
            ],
        ),
        Experiment::new(
            "ack",
            "§3, Fig. 5: ACK cost, TCP_QUICKACK after every read against delayed ACKs, MSS 1024",
            &[
                "tcp-stream",
                "--quickack",
                "on,off",
                "--rcvlowat",
                "1",
                "--mss",
                "1024",
                "--write-size",
                "8192",
                "--bytes",
                if o.quick { "4M" } else { "20M" },
                "--topology",
                &place,
                "--probe",
                "cpu",
                "--repeat",
                &r,
            ],
        ),
        Experiment::new(
            "checksum",
            "§3, Fig. 4: the checksum's CPU share with checksum offload on and off",
            &[
                "tcp-stream",
                "--checksum-offload",
                "on,off",
                "--write-size",
                "65536",
                "--duration",
                dur,
                "--topology",
                &place,
                "--probe",
                "cpu",
                "--repeat",
                &r,
            ],
        ),
        Experiment::new(
            "routes",
            "Table 2: small-datagram send cost against the number of routes in the sender's table",
            &[
                "udp-stream",
                "--write-size",
                "64",
                "--routes",
                levels(o, "1,1000,100000", "1,10,100,1000,10000,100000"),
                "--duration",
                dur,
                "--topology",
                &place,
                "--probe",
                "cpu",
                "--repeat",
                &r,
            ],
        ),
    ];
    StudyPlan {
        study: NAME.into(),
        experiments: e,
    }
}
