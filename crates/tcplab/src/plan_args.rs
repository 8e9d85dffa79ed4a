//! From `bench` flags to a validated plan: factor lists, sweep points, stop rule.

use crate::cli::{BenchArgs, TestArg};
use crate::usage::usage;
use plan::parse;
use plan::{Factors, Precision, StopRule};
use record::factor::HostLimits;
use record::{TestKind, TrialParams};
use serde_json::json;

/// A bench request turned into points and rules, before anything runs.
#[derive(Debug)]
pub struct BenchPlan {
    /// The test.
    pub test: TestKind,
    /// Sweep points in cartesian order.
    pub points: Vec<TrialParams>,
    /// Factors that vary across points (table columns).
    pub varying: Vec<&'static str>,
    /// Repetitions and precision.
    pub rule: StopRule,
    /// The settings as given, for the record.
    pub settings: serde_json::Value,
    /// `--interval`: sample each stream trial this often.
    pub interval: Option<std::time::Duration>,
    /// Print each trial's intervals as they end (`--interval` without `--json`).
    pub print_intervals: bool,
}

/// The test named on the command line.
pub fn test_kind(t: TestArg) -> TestKind {
    match t {
        TestArg::TcpStream => TestKind::TcpStream,
        TestArg::UdpStream => TestKind::UdpStream,
        TestArg::TcpRr => TestKind::TcpRr,
        TestArg::TcpCrr => TestKind::TcpCrr,
        TestArg::Http => TestKind::Http,
        TestArg::LayerRate => TestKind::LayerRate,
    }
}

/// What the factor parsers need to know about this host.
fn host_limits() -> HostLimits {
    HostLimits {
        online_cpus: lab::host::online_cpus() as u32,
        max_routes: lab::trial_changes::MAX_ROUTES,
    }
}

/// Parses and validates every flag; any problem is a usage error.
pub fn bench_plan(a: &BenchArgs) -> anyhow::Result<BenchPlan> {
    let test = test_kind(a.test);
    let f = Factors::parse(|info| a.factors.text(info), &host_limits()).map_err(usage)?;
    let points = f.expand(test).map_err(usage)?;
    const MAX_POINTS: usize = 10_000;
    if points.len() > MAX_POINTS {
        return Err(usage(format!(
            "the sweep has {} points; at most {MAX_POINTS} are allowed",
            points.len()
        )));
    }
    if a.to.is_some() && test == TestKind::LayerRate {
        return Err(usage(
            "layer-rate runs only between namespaces on this host (--topology), not with --to",
        ));
    }
    if a.to.is_none() {
        check_cc_available(&kernel_cc_levels(&points))?;
    } else if !(f.topology.is_empty()
        && f.link.is_empty()
        && f.host_speed.is_empty()
        && f.pin.is_empty())
    {
        return Err(usage(
            "--topology, --link, --host-speed and --pin build places on this host; they cannot be combined with --to",
        ));
    }
    check_places(&points)?;
    let limits = engine::Limits::default();
    for p in &points {
        engine::validate(p, &limits).map_err(usage)?;
    }
    if a.repeat == 0 || a.repeat > 1000 {
        return Err(usage(format!(
            "--repeat must be 1..=1000, got {}",
            a.repeat
        )));
    }
    let precision = match &a.precision {
        None => None,
        Some(s) => {
            let (confidence, rel_half_width) = parse::precision("--precision", s).map_err(usage)?;
            Some(Precision {
                confidence,
                rel_half_width,
            })
        }
    };
    if precision.is_some() && (a.max_repeat < 2 || a.max_repeat > 1000) {
        return Err(usage(format!(
            "--max-repeat must be 2..=1000, got {}",
            a.max_repeat
        )));
    }
    if precision.is_some() && a.max_repeat < a.repeat {
        return Err(usage("--max-repeat must not be below --repeat"));
    }
    if a.interval.is_some() && !matches!(test, TestKind::TcpStream | TestKind::UdpStream) {
        return Err(usage(format!(
            "--interval applies to tcp-stream and udp-stream, not {}",
            test.name()
        )));
    }
    let rule = StopRule {
        repeat: a.repeat,
        precision,
        max_repeat: a.max_repeat,
    };
    let mut settings = json!({
        "test": test.name(),
        "repeat": a.repeat,
        "precision": precision,
        "max_repeat": a.max_repeat,
        "to": a.to,
        "factors": a.factors.settings(),
    });
    if let Some(d) = a.interval {
        settings["interval_s"] = d.as_secs_f64().into();
    }
    Ok(BenchPlan {
        test,
        points,
        varying: f.varying(),
        rule,
        settings,
        interval: a.interval,
        print_intervals: a.interval.is_some() && !a.json,
    })
}

/// Congestion controls only tcplab's stack has (Linux has no module of
/// these names).
const STACK_ONLY_CC: [&str; 3] = ["tahoe", "reno90", "none"];

/// The `--cc` levels some Linux end of these points would set: a point
/// whose both ends are tcplab's stack takes the stack's own names
/// (`tahoe`, `reno90`, `none`, …), which no kernel has.
fn kernel_cc_levels(points: &[TrialParams]) -> Vec<String> {
    let mut levels: Vec<String> = points
        .iter()
        .filter(|p| !(p.stack.is_tcplab() && p.server_stack.is_tcplab()))
        .filter_map(|p| p.cc.clone())
        .collect();
    levels.sort();
    levels.dedup();
    levels
}

/// With the embedded server both ends are this host: a congestion control
/// the kernel does not offer is bad input, not a failed trial.
fn check_cc_available(levels: &[String]) -> anyhow::Result<()> {
    if levels.is_empty() {
        return Ok(());
    }
    let path = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let available: Vec<&str> = text.split_whitespace().collect();
    for cc in levels {
        // Root may load a module on demand; try the ones that are not loaded yet.
        if !available.contains(&cc.as_str()) && !module_loads(cc) {
            let hint = if STACK_ONLY_CC.contains(&cc.as_str()) {
                "; it is tcplab's own stack's: give both --stack tcplab and --server-stack tcplab"
            } else {
                ""
            };
            return Err(usage(format!(
                "--cc {cc} is not available on this host (available: {}){hint}",
                available.join(", ")
            )));
        }
    }
    Ok(())
}

/// True if setting TCP_CONGESTION to `cc` on a fresh socket works (the kernel
/// autoloads tcp_<cc> for privileged users).
fn module_loads(cc: &str) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(sock) = std::net::TcpListener::bind("127.0.0.1:0") else {
        return false;
    };
    // SAFETY: passes a valid buffer and its length for TCP_CONGESTION.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    rc == 0
}

/// The flags of `p` set that only tcplab's own stack has, as one text
/// (`--delack and --sws`), or None.
fn stack_only_flags(p: &TrialParams) -> Option<String> {
    let set = [
        ("--delack", p.delack.is_some()),
        ("--sws", p.sws.is_some()),
        ("--nagle", p.nagle.is_some()),
        ("--header-prediction", p.header_prediction.is_some()),
        ("--checksum", p.checksum.is_some()),
        ("--rtt-estimator", p.rtt_estimator.is_some()),
        ("--timers", p.timers.is_some()),
        ("--route-table", p.route_table.is_some()),
        ("--pcb-lookup", p.pcb_lookup.is_some()),
        ("--route-cache", p.route_cache.is_some()),
        ("--layers", p.layers.is_some()),
        ("--flow-control", p.flow_control.is_some()),
        ("--account", p.account.is_some()),
        ("--cpu-speed", p.cpu_speed.is_some()),
        ("--initial-window", p.initial_window.is_some()),
        ("--host-model", p.host_model.is_some()),
    ];
    let flags: Vec<&str> = set.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect();
    match flags.as_slice() {
        [] => None,
        [one] => Some((*one).to_string()),
        [init @ .., last] => Some(format!("{} and {last}", init.join(", "))),
    }
}

/// Why a kernel end cannot take `--flow-control`, given whether this
/// kernel has the fq qdisc (None: its config is unreadable).
fn linux_pacing_hint(fq: Option<bool>) -> String {
    let fq = match fq {
        Some(false) => "the fq qdisc, which this kernel lacks (CONFIG_NET_SCH_FQ is not set),",
        Some(true) | None => "the fq qdisc, which tcplab does not set up,",
    };
    format!("; Linux paces a socket only with {fq} or with SO_MAX_PACING_RATE, which tcplab does not set")
}

/// Every place the sweep uses must be buildable here; host speeds need a
/// cgroup CPU controller.
fn check_places(points: &[TrialParams]) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for p in points {
        if seen.insert(crate::session::place_key(p)) {
            crate::session::place_spec(p)?.check().map_err(usage)?;
        }
        if p.test == TestKind::LayerRate && p.topology.is_loopback() {
            return Err(usage(
                "layer-rate sends raw frames between two namespaces: give --topology veth (or another place), never the host's own loopback",
            ));
        }
        let stack = crate::session::uses_stack(p);
        if let Some(model) = p.host_model {
            let sender = if engine::metrics::sender_is_client(p) {
                p.stack
            } else {
                p.server_stack
            };
            if !sender.is_tcplab() {
                return Err(usage(format!(
                    "--host-model {model} rebuilds the paper's sender on tcplab's own stack (its speeds come from the sender's costs): give the sending end tcplab's stack (--stack tcplab, or --server-stack tcplab with --reverse)"
                )));
            }
            // The model sets the sender's speeds: what cannot play them is
            // refused before its calibration runs.
            let clash = if p.cpu_speed.is_some() {
                Some("--cpu-speed (the model sets the sender's speeds itself)")
            } else if matches!(p.account, Some(record::factor::Account::Sample(_))) {
                Some("--account sample:N (a slowed end times every block: give --account on)")
            } else if p.layers == Some(record::factor::Layers::Threaded) {
                Some("--layers threaded (the device thread's work is not timed, so it cannot be slowed)")
            } else {
                None
            };
            if let Some(clash) = clash {
                return Err(usage(format!(
                    "--host-model {model} cannot be combined with {clash}"
                )));
            }
        }
        if let Some(flags) = stack_only_flags(p).filter(|_| !stack) {
            let hint = if p.nagle.is_some() {
                " (Linux's Nagle is --nodelay)".to_string()
            } else if p.flow_control.is_some() {
                linux_pacing_hint(record::host::kernel_has("NET_SCH_FQ"))
            } else {
                String::new()
            };
            return Err(usage(format!(
                "{flags}: Linux has no such switch, only tcplab's own stack: give --stack tcplab or --server-stack tcplab{hint}"
            )));
        }
        // A tcplab end's --routes go into its own interface's table.
        if ((p.routes.is_some() && !stack) || !p.checksum_offload || p.offload.is_some())
            && p.topology.is_loopback()
        {
            return Err(usage(
                "--routes, --checksum-offload off and --offload change a place's namespaces; give --topology veth (or another place), never the host's own loopback",
            ));
        }
        if p.host_speed.is_some() && lab::host::cgroup_version().is_none() {
            return Err(usage(
                "--host-speed needs a cgroup CPU controller (v1 cpu or v2 cpu.max), which this host does not offer",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::linux_pacing_hint;

    #[test]
    fn the_pacing_hint_says_the_kernel_lacks_fq_only_when_its_config_says_so() {
        let lacking = linux_pacing_hint(Some(false));
        assert!(lacking.contains("this kernel lacks"), "{lacking}");
        assert!(lacking.contains("SO_MAX_PACING_RATE"), "{lacking}");
        for fq in [Some(true), None] {
            let hint = linux_pacing_hint(fq);
            assert!(!hint.contains("lacks"), "{hint}");
            assert!(hint.contains("does not set up"), "{hint}");
        }
    }
}
