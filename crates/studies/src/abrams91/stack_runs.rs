//! The experiments of Abrams & Chen redone on tcplab's own stack: the
//! stack is the client (the sender) in a namespace of its own behind a
//! plain TUN device (every segment a packet), Linux the server; stack
//! trials take no `--topology`. Its block-cost accounting (`--account
//! on`) times every function block with the cycle counter, so the
//! sender's busy and idle time (Fig. 5) and its cost per segment (Table 6)
//! are exact; its rate-based flow control (`--flow-control rate:λ`) and
//! Linux's paced reader (`--recv-work`, μ) make the mismatched pair of
//! Figs 8–9.

use crate::spec::{levels, repeat, stack_duration, Experiment, PlanOptions};

/// Fig. 5: the accounted sender with the timeline experiment's 1 KB writes
/// and small buffers.
pub(super) const TIMELINE: &str = "stack-timeline";
/// Table 6: the accounted sender at each write size, default buffers.
pub(super) const SEGMENT_COST: &str = "stack-segment-cost";
/// λ: each flow control's send rate into a fast (unslowed) Linux receiver.
pub(super) const LAMBDA: &str = "stack-lambda";
/// μ: the slowed Linux receiver's rate behind an unpaced sender and
/// default (large) buffers.
pub(super) const MU: &str = "stack-mu";
/// Figs 8–9: each flow control into the slowed receiver with a small
/// receive buffer.
pub(super) const FLOW: &str = "stack-flow";

/// The slow receiver's work per KB read. On the development VM 20 µs/KB
/// held a Linux reader near 280 Mbit/s and 50 µs/KB near 110 Mbit/s;
/// 40 µs/KB puts μ near 100 Mbit/s, between the two paces below.
pub(super) const RECV_WORK: &str = "40us";

/// The receive buffer of the mismatch runs: about three 1,460-byte
/// segments, as the paper's 1–3 KB buffers held one to three 1 KB ones.
pub(super) const SMALL_RCVBUF: &str = "4K";

/// The flow controls compared: window flow control (the sender unpaced)
/// and rate-based at paces below and above μ. Paced at 50 and 300 Mbit/s
/// into a fast receiver the stack kept within 1% and 15% of its pace on
/// the development VM; above a few hundred Mbit/s its wake-ups on a loaded
/// host lose more.
fn flow_controls(o: &PlanOptions) -> &'static str {
    levels(
        o,
        "window,rate:50M,rate:300M",
        "window,rate:50M,rate:100M,rate:150M,rate:200M,rate:300M",
    )
}

/// The stack's experiments.
pub(super) fn experiments(o: &PlanOptions) -> Vec<Experiment> {
    let r = repeat(o);
    let dur = stack_duration(o);
    let base = format!("tcp-stream --stack tcplab --duration {dur} --repeat {r}");
    let fc = flow_controls(o);
    vec![
        Experiment::bench(
            TIMELINE,
            "§3.3, Fig. 5 on tcplab's stack: the accounted sender's busy and idle time, 1 KB writes, 4 KB buffers",
            format!("{base} --account on --write-size 1024 --rcvbuf 4K"),
        ),
        Experiment::bench(
            SEGMENT_COST,
            "Table 6 on tcplab's stack: the accounted sender's time per segment and per block",
            format!(
                "{base} --account on --write-size {}",
                levels(o, "1460,65536", "1024,1460,8192,65536")
            ),
        ),
        Experiment::bench(
            LAMBDA,
            "§3.5 on tcplab's stack: λ, the sender's rate under each flow control into a fast Linux receiver",
            format!("{base} --flow-control {fc}"),
        ),
        Experiment::bench(
            MU,
            "§3.5 on tcplab's stack: μ, the slowed Linux receiver's rate behind an unpaced sender, default buffers",
            format!("{base} --recv-work {RECV_WORK}"),
        ),
        Experiment::bench(
            FLOW,
            "§3.5, Figs 8–9 on tcplab's stack: window against rate-based flow control into the slowed receiver, 4 KB receive buffer",
            format!("{base} --flow-control {fc} --recv-work {RECV_WORK} --rcvbuf {SMALL_RCVBUF}"),
        ),
    ]
}

/// Points of an experiment: the product of its factor lists' lengths.
#[cfg(test)]
fn points(e: &Experiment) -> usize {
    e.args
        .windows(2)
        .filter(|w| w[0].starts_with("--") && w[0] != "--repeat")
        .map(|w| w[1].split(',').count())
        .product()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seconds the quick study's stack trials take: points × repetitions ×
    /// (duration + 0.3 s to build and tear down a stack trial; 0.2 s was
    /// measured on the development VM).
    fn trial_seconds(o: &PlanOptions) -> f64 {
        experiments(o)
            .iter()
            .map(|e| {
                let arg = |flag: &str| {
                    let at = e.args.iter().position(|a| a == flag).unwrap();
                    e.args[at + 1].clone()
                };
                let reps: f64 = arg("--repeat").parse().unwrap();
                let dur: f64 = arg("--duration").trim_end_matches('s').parse().unwrap();
                points(e) as f64 * reps * (dur + 0.3)
            })
            .sum()
    }

    #[test]
    fn the_quick_stack_trials_add_at_most_45_seconds() {
        let quick = PlanOptions {
            quick: true,
            topology: None,
        };
        let s = trial_seconds(&quick);
        assert!(s <= 45.0, "{s} s");
        // Ten points of five trials.
        assert_eq!(experiments(&quick).iter().map(points).sum::<usize>(), 10);
        // The full study is richer.
        assert!(trial_seconds(&PlanOptions::default()) > s);
    }

    #[test]
    fn stack_trials_take_no_topology_and_the_mismatch_pairs_share_flow_controls() {
        for o in [
            PlanOptions::default(),
            PlanOptions {
                quick: true,
                topology: Some("ether10".into()),
            },
        ] {
            let e = experiments(&o);
            for x in &e {
                assert!(x.command().contains("--stack tcplab"), "{}", x.command());
                assert!(!x.args.iter().any(|a| a == "--topology"), "{}", x.command());
            }
            let fc = |id: &str| {
                let x = e.iter().find(|x| x.id == id).unwrap();
                let at = x.args.iter().position(|a| a == "--flow-control").unwrap();
                x.args[at + 1].clone()
            };
            assert_eq!(fc(LAMBDA), fc(FLOW));
        }
    }
}
