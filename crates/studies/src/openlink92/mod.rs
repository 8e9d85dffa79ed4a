//! Guerrero & Frieder 1992, "Tuning the performance of a commercial TCP
//! implementation" (OPEN-Link): the packet and byte rate a host sustains at
//! each protocol layer against packet size (Figs 1–2; Figs 3–4, the layers
//! merged into one process, as a statement of why Linux cannot show them);
//! time–sequence traces with packets classified as data, ACK and window
//! update (Fig. 8); silly window syndrome on a healthy flow and a
//! pathological one; the kernel's smoothed RTT against the RTT an
//! application measures; and a performance matrix between the TCP
//! implementations this host offers (Table 1), tcplab's own stack among
//! them. On tcplab's stack: the paper's tuning changes applied in turn
//! (the tuning table) and the layers merged or threaded (Figs 3–4).

use crate::spec::{repeat, stack_duration, Experiment, PlanOptions, StudyPlan};

mod merged;
pub(crate) mod paper;
mod report;
mod stack_layers;
mod trace;
mod tuning;
pub use report::report;

#[cfg(test)]
mod findings_tests;
#[cfg(test)]
mod stack_tests;

/// The paper, as the report cites it.
const CITE: &str = "Guerrero & Frieder 1992";

/// The study's name on the command line.
pub const NAME: &str = "openlink92";

/// Frame sizes from 64 to 1512 bytes in steps of `step`.
fn frame_sizes(step: usize) -> String {
    let mut v: Vec<String> = (64..=1512).step_by(step).map(|s| s.to_string()).collect();
    if v.last().is_none_or(|s| s != "1512") {
        v.push("1512".into());
    }
    v.join(",")
}

/// The congestion-control modules this kernel offers, as `--cc` levels:
/// every TCP implementation the host has, as senders.
fn congestion_controls() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(","))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "cubic,reno".into())
}

/// Places as one `--topology` list, each once.
fn distinct(places: &[&str]) -> String {
    let mut v: Vec<&str> = Vec::new();
    for p in places {
        if !v.contains(p) {
            v.push(p);
        }
    }
    v.join(",")
}

/// The study's plan. `--topology` replaces `veth` and the shaped link.
pub fn plan(o: &PlanOptions) -> StudyPlan {
    let r = repeat(o);
    let dur = if o.quick { "0.3s" } else { "1s" };
    let (fast, slow) = match &o.topology {
        Some(t) => (t.clone(), t.clone()),
        None => ("veth".to_string(), "lan100".to_string()),
    };
    // The paper's 10-byte steps (146 sizes) in the full study, 11 sizes in
    // `--quick`; each trial sends for 0.2 s (hundreds of thousands of
    // frames, twice the 100 ms floor), so the full sweep's 5,840 trials
    // take 20 minutes, not 50.
    let sizes = frame_sizes(if o.quick { 160 } else { 10 });
    let e = vec![
        Experiment::bench(
            "layer-rate",
            "Figs 1–2: packet and byte rate at the Ethernet, IP, UDP and TCP layers against packet size",
            format!(
                "layer-rate --layer eth,ip,udp,tcp --write-size {sizes} --topology {fast} --duration 0.2s --repeat {r}",
            ),
        ),
        Experiment::bench(
            "time-sequence",
            "Fig. 8: a 1.25 MB transfer traced (100 ms at 100 Mbit/s), packets classified as data, ACK and window update",
            format!("tcp-stream --write-size 1460 --bytes 1280K --topology {slow} --probe queues,tcp --repeat {r}"),
        ),
        Experiment::bench(
            "sws-healthy",
            "SWS: a healthy flow, 8 KB writes, reads of up to 512 KB (the default), default buffers",
            format!("tcp-stream --write-size 8192 --duration 0.1s --topology {fast} --probe queues,tcp --repeat {r}"),
        ),
        Experiment::bench(
            "sws-pathological",
            "SWS: a pathological flow, a tiny receive buffer and a receiver reading 7 bytes at a time",
            format!("tcp-stream --write-size 8192 --read-size 7 --rcvbuf 2K --duration 0.1s --topology {fast} --probe queues,tcp --repeat {r}"),
        ),
        Experiment::bench(
            "rtt",
            "§4: the kernel's smoothed RTT (tcp_probe) against the RTT request/response measures",
            format!(
                "tcp-rr --write-size 1 --topology {places} --duration {dur} --probe tcp --repeat {r}",
                places = distinct(&[&fast, if o.topology.is_some() { &slow } else { "man" }]),
            ),
        ),
        Experiment::bench(
            "implementations",
            "Table 1: a transfer from each congestion-control module of this host's TCP to the default receiver (the paper's 2.5 MB lasts 2 ms on veth: trials are timed)",
            format!(
                "tcp-stream --cc {cc} --duration {dur} --topology {places} --repeat {r}",
                cc = congestion_controls(),
                places = distinct(&[&fast, &slow]),
            ),
        ),
    ];
    let mut e = e;
    e.extend(tuning::experiments(o));
    e.extend(stack_experiments(o));
    StudyPlan {
        study: NAME.into(),
        experiments: e,
        skipped: Vec::new(),
    }
}

/// The experiments of tcplab's own stack besides the tuning steps: its row
/// of Table 1 (a stack sender with each of its congestion controls to
/// Linux, over the plain TUN device in the stack's own namespace: stack
/// trials take no `--topology`) and the layers merged or threaded (Figs
/// 3–4) on a stream and on request/response.
fn stack_experiments(o: &PlanOptions) -> Vec<Experiment> {
    let r = repeat(o);
    let dur = stack_duration(o);
    vec![
        Experiment::bench(
            IMPLEMENTATIONS_STACK,
            "Table 1: tcplab's own stack as a second implementation, sending to Linux over a plain TUN (no offloads) with each of its congestion controls",
            format!("tcp-stream --stack tcplab --cc reno,cubic --duration {dur} --repeat {r}"),
        ),
        Experiment::bench(
            stack_layers::STREAM,
            "Figs 3–4 on tcplab's stack: a stream to Linux with the device driver on the stack's thread (merged) or a thread of its own joined by queues (threaded)",
            format!("tcp-stream --stack tcplab --layers merged,threaded --duration {dur} --repeat {r}"),
        ),
        Experiment::bench(
            stack_layers::RR,
            "Figs 3–4 on tcplab's stack: 1-byte request/response to Linux, layers merged or threaded",
            format!("tcp-rr --stack tcplab --write-size 1 --layers merged,threaded --duration {dur} --repeat {r}"),
        ),
    ]
}

/// The id of Table 1's stack experiment.
pub(crate) const IMPLEMENTATIONS_STACK: &str = "implementations-stack";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stack_experiments_run_on_the_plain_tun_without_a_topology() {
        for o in [
            PlanOptions::default(),
            PlanOptions {
                quick: true,
                topology: Some("ether10".into()),
            },
        ] {
            let p = plan(&o);
            let stack: Vec<&Experiment> = p
                .experiments
                .iter()
                .filter(|e| e.args.windows(2).any(|w| w[0] == "--stack"))
                .collect();
            // Six tuning steps, Table 1's row, two layers experiments.
            assert_eq!(stack.len(), 9, "{stack:?}");
            for e in stack {
                let at = e.args.iter().position(|a| a == "--stack").unwrap();
                assert_eq!(e.args[at + 1], "tcplab", "{}", e.command());
                assert!(!e.args.iter().any(|a| a == "--topology"), "{}", e.command());
                assert!(!e.is_probed(), "{}", e.command());
            }
        }
    }

    #[test]
    fn frame_sizes_run_from_64_to_1512() {
        let full = frame_sizes(10);
        assert!(full.starts_with("64,74,84,"));
        assert!(full.ends_with(",1504,1512"));
        assert_eq!(full.split(',').count(), 146);
        assert_eq!(frame_sizes(160).split(',').count(), 11);
    }
}
