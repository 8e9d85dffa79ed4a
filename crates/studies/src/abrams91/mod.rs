//! Abrams & Chen 1991, "What limits TCP throughput": application-level
//! throughput against write size for TCP and UDP (Figs 1–3, Table 2), delay
//! against host load (Tables 3–5), the API comparison (Fig 4), the sender's
//! timeline and idle time with a small receive buffer (§3.3, Fig 5), the
//! per-segment cost (Table 6, Figs 6–7) and the speed-mismatch experiment
//! (§3.5, Figs 8–9). On tcplab's own stack (its client end behind a plain
//! TUN device, Linux the server): the sender's busy and idle time by exact
//! accounting (Fig. 5), its time per segment and per block (Table 6), and
//! window against rate-based flow control on a mismatched pair against
//! min(λ, μ) (Figs 8–9).

use crate::spec::{
    has_link_profile, levels, no_link_profile, repeat, Experiment, PlanOptions, Skipped, StudyPlan,
};

mod api_claim;
mod comparison;
mod idle;
mod load_claim;
mod loss;
pub(crate) mod paper;
mod report;
mod speeds;
mod stack_account;
mod stack_flow;
mod stack_runs;
mod stack_segment;
#[cfg(test)]
mod stack_tests;
mod stack_timeline;
#[cfg(test)]
mod tests;
pub use report::report;

/// The study's name on the command line.
pub const NAME: &str = "abrams91";

/// Write sizes of Figs 1–3 (plus 8 KB and 64 KB; 65507 is the largest
/// UDP datagram, used for both protocols so the curves share levels). The
/// paper's smallest, 10 bytes, is [`UDP_MIN_WRITE`] for both: UDP's
/// smallest datagram.
const SIZES_FULL: &str = "16,100,512,1024,1460,2048,8192,65507";
const SIZES_QUICK: &str = "16,512,1460,8192,65507";

/// The smallest UDP write tcplab sends: a datagram's header (sequence
/// number, send time and the trial's 8-byte tag; engine's
/// `workloads::udp::HEADER`). The paper's 10-byte UDP writes become this.
const UDP_MIN_WRITE: u64 = 16;

/// A size list for UDP: no write smaller than [`UDP_MIN_WRITE`] (the load
/// tables keep TCP's 10-byte writes).
fn udp_sizes(sizes: &str) -> String {
    let mut v: Vec<u64> = sizes
        .split(',')
        .filter_map(|x| x.parse().ok())
        .map(|x: u64| x.max(UDP_MIN_WRITE))
        .collect();
    v.dedup();
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// Tables 3–4's file, bytes: four times the paper's 40 KB, so that a
/// transfer on 10 Mbit/s lasts over 100 ms (the paper's write sizes kept).
const LOAD_FILE: u64 = 163_840;

/// The UDP load experiment's trial length.
const LOAD_UDP_S: &str = "0.3s";

/// The timeline experiments' trial length.
const TIMELINE_S: &str = "1s";

/// The remote place: the paper's single Ethernet is `ether10`; the fast
/// modern path is `veth`.
fn places(o: &PlanOptions) -> (String, String) {
    match &o.topology {
        Some(t) => (t.clone(), t.clone()),
        None => ("veth".into(), "ether10".into()),
    }
}

/// `--pin sender=0,receiver=1` where the host has two CPUs (pinned sides
/// also steer their receive processing to their own CPU); nothing on a
/// one-CPU host, whose report then says the sides were not steered.
fn pin_sides() -> &'static str {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        "--pin sender=0,receiver=1"
    } else {
        ""
    }
}

/// The study's plan.
pub fn plan(o: &PlanOptions) -> StudyPlan {
    let (fast, slow) = places(o);
    let r = repeat(o);
    let sizes = levels(o, SIZES_QUICK, SIZES_FULL);
    let dur = if o.quick { "0.3s" } else { "1s" };
    let mut e = Vec::new();
    for (test, proto) in [("tcp-stream", "TCP"), ("udp-stream", "UDP")] {
        let p = proto.to_lowercase();
        e.push(Experiment::bench(
            format!("write-size-{p}-fast"),
            format!("Figs 1–3: {proto} throughput against write size ({fast})"),
            format!("{test} --write-size {sizes} --topology {fast} --duration {dur} --repeat {r}"),
        ));
        // TCP moves the paper's 512,000-byte file (0.4 s at 10 Mbit/s);
        // an unpaced UDP sender loses most of a file in the link's queue
        // and would finish in tens of ms, so UDP runs for a duration.
        let amount = if p == "tcp" {
            "--bytes 512000".to_string()
        } else {
            format!("--duration {dur}")
        };
        e.push(Experiment::bench(
            format!("write-size-{p}-slow"),
            format!("Figs 1–3: {proto} throughput against write size ({slow})"),
            format!("{test} --write-size {sizes} --topology {slow} {amount} --repeat {r}"),
        ));
    }
    // Table 2: the paper's loss came from a receiver slower than its
    // sender. The sender is paced below the link's rate (so the link's
    // queue never overflows) and the receiver is slowed by work per KB:
    // 1 ms/KB removes about 8 Mbit/s, the send rate; 2 ms/KB about half.
    e.push(Experiment::bench(
        "udp-loss",
        format!("Table 2: UDP loss against the receiver's speed, sender paced at 8 Mbit/s ({slow})"),
        format!(
            "udp-stream --write-size {ls} --send-rate 8mbit --recv-work 0,1ms,2ms --topology {slow} --duration {ld} --repeat {r}",
            ls = levels(o, "512,1460", "512,1024,1460"),
            ld = levels(o, "0.5s", "1s"),
        ),
    ));
    let load_sizes = levels(o, "10,512", "10,100,512,1024");
    let loads = "--load none,sender:1,sender:3";
    e.push(Experiment::bench(
        "load-tcp",
        "Tables 3–4: TCP delay for a 160 KB file (the paper's 40 KB lasts 33 ms at 10 Mbit/s) against sender load 0, 1, 3",
        format!("tcp-stream --write-size {load_sizes} --bytes {LOAD_FILE} {loads} --topology {slow} --repeat {r}"),
    ));
    // An unpaced UDP sender outruns the link whatever its load, and a
    // file's receiver delay would time the link's queue (tens of ms): UDP
    // runs for a duration and the report compares the sender's rate.
    e.push(Experiment::bench(
        "load-udp",
        "Tables 3–4: UDP sender rate against sender load 0, 1, 3",
        format!(
            "udp-stream --write-size {} --duration {LOAD_UDP_S} {loads} --topology {slow} --repeat {r}",
            udp_sizes(load_sizes)
        ),
    ));
    e.push(Experiment::bench(
        "load-file-tcp",
        "Table 5: TCP delay for a 512,000-byte file in 512-byte writes against sender load",
        format!(
            "tcp-stream --write-size 512 --bytes 512000 {loads} --topology {slow} --repeat {r}"
        ),
    ));
    e.push(Experiment::bench(
        "api",
        "Fig 4: throughput by application programming interface",
        format!(
            "tcp-stream --api write,sendmsg,sendfile,zerocopy --write-size {api_sizes} --topology {fast} --duration {dur} --repeat {r}",
            api_sizes = levels(o, "100,1460,65536", "100,512,1460,8192,65536"),
        ),
    ));
    // §3.3: 1 KB writes, small buffers, for a second (250 ticks of
    // TCP_INFO's 4 ms chrono counters) over the emulator's link, which
    // holds each frame for its time on the wire (a token bucket lets a
    // burst through at once, so data in flight would say nothing of the
    // link). Unpaced, the link and the window set the pace; paced at
    // 8 Mbit/s, the sender is the bottleneck for part of its time.
    let link = format!("--link {slow},via=emulator");
    let probes = "--probe queues,tcp,sched";
    let timelines = [
        (
            "timeline",
            "§3.3, Fig 5: the sender's timeline and where its time went, 1 KB writes, 4 KB buffers",
            "",
        ),
        (
            "timeline-paced",
            "§3.3: the same with the sender paced at 8 Mbit/s, the bottleneck for part of its time",
            "--send-rate 8mbit ",
        ),
    ];
    // A place without a link profile (loopback, veth, router) has no link
    // for the emulator to carry: the timelines are left out, with why.
    let mut skipped = Vec::new();
    for (id, title, pace) in timelines {
        if has_link_profile(&slow) {
            e.push(Experiment::bench(
                id,
                title,
                format!(
                    "tcp-stream --write-size 1024 --rcvbuf 4K --sndbuf 4K {pace}--duration {TIMELINE_S} --topology {slow} {link} {probes} --repeat {r}"
                ),
            ));
        } else {
            skipped.push(Skipped {
                id: id.into(),
                title: title.into(),
                reason: no_link_profile(
                    &slow,
                    "runs over the emulator's link, which holds each frame for its time on the wire",
                ),
            });
        }
    }
    // Each side on a CPU of its own, with its receive processing steered
    // there (RPS): its CPU time then includes its protocol work in
    // softirq, and a quota on the sender charges the sender's. CPU quotas
    // are enforced per 100 ms period: trials of a second or more (ten
    // periods) keep the quota's granularity out of the rates. Table 6 runs
    // with offloads off: with TSO and GRO a "segment" the CPU handles is up
    // to 64 KB whatever the MSS, and the per-segment cost would be a
    // per-aggregate one.
    let pin = pin_sides();
    let qdur = if o.quick { "1s" } else { "2s" };
    e.push(Experiment::bench(
        "segment-cost",
        "Table 6, Figs 6–7: CPU time per segment on send and receive, offloads off (every segment handled one by one, as on the paper's hosts)",
        format!("tcp-stream --write-size 1460,65536 --topology {fast} {pin} --offload off --duration {qdur} --probe cpu --repeat {r}"),
    ));
    // §3.5: slower senders (a CPU quota on the sender) and a slower
    // receiver (work per KB read). λ: each sender's UDP rate into a fast
    // receiver; μ: the rate an overwhelmed receiver still removes
    // datagrams at; then TCP for each pair and small receive buffers.
    // λ and μ are measured pinned and steered like the mismatch runs. The
    // sender's shares step by 1.5× from 0.02 to 0.5 of a CPU: ρ = λ/μ then
    // spans about 25× and some step falls within a quarter of ρ = 1
    // wherever μ lands (the band 0.75–1.25 is wider than one step). On the
    // quiet development VM a 1 KB-write TCP sender moved about 2.6 Gbit/s
    // per CPU and the receiver's 20 µs per KB held μ near 0.4 Gbit/s
    // (ρ ≈ 1 near 0.15); with other load on the host both fall.
    // `--quick` keeps six of the shares: the far ends and the three
    // around ρ = 1 on this VM (0.1, 0.15, 0.23 of a CPU); where μ or λ
    // lands elsewhere on another host, a point within a quarter of ρ = 1
    // is not guaranteed, and the report says when none is.
    let speeds = levels(
        o,
        "sender=0.02,sender=0.045,sender=0.1,sender=0.15,sender=0.23,none",
        "sender=0.02,sender=0.03,sender=0.045,sender=0.07,sender=0.1,sender=0.15,sender=0.23,sender=0.35,sender=0.5,none",
    );
    // UDP λ (the paper's definition) is shown beside TCP's, at fewer speeds.
    let udp_speeds = levels(o, "sender=0.045,sender=0.1,none", speeds);
    let work = "20us";
    e.push(Experiment::bench(
        "lambda",
        "§3.5: λ, the send rate of each emulated sender (UDP, 1 KB datagrams, fast receiver)",
        format!("udp-stream --write-size 1024 --host-speed {udp_speeds} --topology {fast} {pin} --duration {qdur} --repeat {r}"),
    ));
    e.push(Experiment::bench(
        "mu",
        "§3.5: μ, the rate the emulated receiver removes datagrams at (UDP, fast sender)",
        format!("udp-stream --write-size 1024 --recv-work {work} --topology {fast} {pin} --duration {qdur} --repeat {r}"),
    ));
    // The same rates measured with TCP itself: a modern TCP sender
    // coalesces 1 KB writes into large segments, so its capacity is not
    // the UDP sender's; the bound uses these when present.
    e.push(Experiment::bench(
        "lambda-tcp",
        "§3.5: λ measured with TCP: each emulated sender into a fast receiver",
        format!("tcp-stream --write-size 1024 --host-speed {speeds} --topology {fast} {pin} --duration {qdur} --repeat {r}"),
    ));
    e.push(Experiment::bench(
        "mu-tcp",
        "§3.5: μ measured with TCP: a fast sender into the emulated receiver, large buffers",
        format!("tcp-stream --write-size 1024 --recv-work {work} --topology {fast} {pin} --duration {qdur} --repeat {r}"),
    ));
    e.push(Experiment::bench(
        "mismatch",
        "§3.5, Figs 8–9: TCP throughput against min(λ, μ) for small receive buffers",
        format!(
            "tcp-stream --write-size 1024 --host-speed {speeds} --recv-work {work} --rcvbuf {bufs} --topology {fast} {pin} --duration {qdur} --repeat {r}",
            bufs = levels(o, "4K", "4K,8K,16K"),
        ),
    ));
    e.extend(stack_runs::experiments(o));
    StudyPlan {
        study: NAME.into(),
        experiments: e,
        skipped,
    }
}
