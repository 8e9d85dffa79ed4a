//! The methods of a run, as a reader needs them to judge its results: what
//! was controlled and what was left as the host had it. Every line is read
//! from the run's own record (its host facts, its points and each trial's
//! details), and says "not recorded" where an older run lacks it.
//!
//! What can hide an effect is named: segmentation and receive offloads hide
//! per-packet costs, the kernel's tick sets the resolution of TCP_INFO's
//! busy and limited times, mitigations make the network path's indirect
//! calls dearer, hypervisor steal takes CPU time unseen, probes perturb
//! what they observe.

use analysis::PointSummary;
use record::{StoredRun, TrialRecord, TrialStatus};
use report::{Block, Section};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a caller that knows more of the run than its trials says in place
/// of a methods line (a study knows its experiments: which ran after which,
/// and which is a probed experiment's unprobed twin).
#[derive(Debug, Clone, Default)]
pub struct MethodsOverrides {
    /// In place of the "trial order" line.
    pub trial_order: Option<String>,
    /// In place of the "probes" line.
    pub probes: Option<String>,
}

/// The "Methods" section of a run's report, with `overrides` in place of
/// the lines they give.
pub fn methods_section_with(
    run: &StoredRun,
    points: &[PointSummary],
    overrides: &MethodsOverrides,
) -> Section {
    let mut s = methods_section(run, points);
    for b in s.blocks.iter_mut() {
        if let Block::KeyValues(kv) = b {
            for (k, v) in kv.iter_mut() {
                let by = match k.as_str() {
                    "trial order" => overrides.trial_order.as_ref(),
                    "probes" => overrides.probes.as_ref(),
                    _ => None,
                };
                if let Some(text) = by {
                    *v = text.clone();
                }
            }
        }
    }
    s
}

/// The "Methods" section of a run's report.
pub fn methods_section(run: &StoredRun, points: &[PointSummary]) -> Section {
    let mut s = Section::new("Methods");
    let trials: Vec<&TrialRecord> = run
        .trials
        .iter()
        .filter(|t| t.status == TrialStatus::Ok)
        .collect();
    let mut kv = vec![("trials per point".to_string(), trials_per_point(points))];
    let varying = crate::terminal::varying_factors(points);
    if let Some(t) = crate::precision::methods_text(points, &varying) {
        kv.push(("precision target".to_string(), t));
    }
    kv.extend([
        (
            "congestion control".to_string(),
            congestion_control(run, points),
        ),
        ("pinning".to_string(), pinning(points)),
        ("receive steering (RPS)".to_string(), steering(&trials)),
        ("places and links".to_string(), places(&trials)),
        ("offloads".to_string(), offloads(&trials)),
        ("kernel tick".to_string(), kernel_tick(run)),
        ("CPU mitigations".to_string(), mitigations(run)),
        ("hypervisor steal".to_string(), steal(&trials)),
        ("probes".to_string(), probes(run, &trials)),
    ]);
    s.push(Block::KeyValues(kv));
    for b in crate::methods_rerun::rerun_blocks(run, points, &trials) {
        s.push(b);
    }
    s
}

/// `3–5 measured trials per point (61 in all), 2 failed`.
fn trials_per_point(points: &[PointSummary]) -> String {
    let ok: Vec<u32> = points.iter().map(|p| p.trials_ok).collect();
    let (Some(lo), Some(hi)) = (ok.iter().min(), ok.iter().max()) else {
        return "no points".into();
    };
    let range = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    };
    let failed: u32 = points.iter().map(|p| p.trials_failed).sum();
    let mut t = format!(
        "{range} measured trials per point ({} in all, {} points)",
        ok.iter().sum::<u32>(),
        points.len()
    );
    if failed > 0 {
        t += &format!(", {failed} failed");
    }
    t
}

/// The modules the TCP points asked for, else the host's default (UDP and
/// layer-rate points have none).
fn congestion_control(run: &StoredRun, points: &[PointSummary]) -> String {
    use record::TestKind;
    let tcp: Vec<&PointSummary> = points
        .iter()
        .filter(|p| {
            matches!(
                p.params.test,
                TestKind::TcpStream | TestKind::TcpRr | TestKind::TcpCrr | TestKind::Http
            )
        })
        .collect();
    if tcp.is_empty() {
        return "none: no point ran over TCP".into();
    }
    let asked = distinct(tcp.iter().filter_map(|p| p.params.cc.clone()));
    let host = &run.meta.host.congestion_control;
    match (asked.is_empty(), tcp.iter().any(|p| p.params.cc.is_none())) {
        (true, _) => format!("the host's default, {host}"),
        (false, false) => asked.join(", "),
        (false, true) => format!("{} (and the host's default, {host})", asked.join(", ")),
    }
}

/// The CPUs the endpoints were pinned to, or that they were not.
fn pinning(points: &[PointSummary]) -> String {
    let pins = distinct(
        points
            .iter()
            .filter_map(|p| p.params.pin.map(|x| x.to_string())),
    );
    let unpinned = points.iter().filter(|p| p.params.pin.is_none()).count();
    if pins.is_empty() {
        "not pinned: the scheduler placed the endpoints (on loopback and veth the receiver's \
         softirq work runs on whichever CPU sent)"
            .into()
    } else {
        let pinned = format!(
            "sender and receiver pinned: {} ({} of {} points)",
            pins.join("; "),
            points.len() - unpinned,
            points.len()
        );
        if unpinned == 0 {
            pinned
        } else {
            format!(
                "{pinned}; the other {unpinned} points not pinned (the scheduler placed their \
                 endpoints)"
            )
        }
    }
}

/// Where each side's protocol work ran: whether the trials steered each
/// end's receive processing (RPS) to its endpoint's CPU, and the median
/// softirq time each pinned side's CPU measured per trial.
fn steering(trials: &[&TrialRecord]) -> String {
    let recorded: Vec<&TrialRecord> = trials
        .iter()
        .copied()
        .filter(|t| !t.outcome.details["lab"]["steering"].is_null())
        .collect();
    if recorded.is_empty() {
        return "not recorded: softirq work (the receiver's protocol work on loopback and veth)                 was charged to whichever CPU ran it"
            .into();
    }
    let steered = |t: &TrialRecord| {
        let st = &t.outcome.details["lab"]["steering"];
        st["sender_cpu"].is_u64() || st["receiver_cpu"].is_u64()
    };
    let n = recorded.iter().filter(|t| steered(t)).count();
    let mut parts = Vec::new();
    if n > 0 {
        let targets = distinct(recorded.iter().filter(|t| steered(t)).map(|t| {
            let st = &t.outcome.details["lab"]["steering"];
            let cpu = |k: &str| {
                st[k]
                    .as_u64()
                    .map_or("not steered".into(), |c| format!("CPU {c}"))
            };
            format!(
                "sender's end → {}, receiver's end → {}",
                cpu("sender_cpu"),
                cpu("receiver_cpu")
            )
        }));
        parts.push(format!(
            "{} steered each pinned side's receive processing to its own CPU ({})",
            trials_word(n),
            targets.join("; ")
        ));
    }
    if n < recorded.len() {
        parts.push(format!(
            "{} not steered (sides not pinned, or on loopback, whose one device serves both \
             directions): softirq work was charged to whichever CPU ran it",
            trials_word(recorded.len() - n)
        ));
    }
    for side in ["sender", "receiver"] {
        let mut v: Vec<f64> = trials
            .iter()
            .filter_map(|t| {
                t.outcome
                    .metrics
                    .get(&format!("core_{side}_softirq_s"))
                    .copied()
            })
            .collect();
        if v.is_empty() {
            continue;
        }
        v.sort_by(f64::total_cmp);
        parts.push(format!(
            "the {side}'s CPU spent a median {:.2} s per trial in softirq",
            v[v.len() / 2]
        ));
    }
    parts.join("; ")
}

/// Each place with its mechanism and link, as the trials recorded them.
fn places(trials: &[&TrialRecord]) -> String {
    let seen = distinct(trials.iter().map(|t| {
        let lab = &t.outcome.details["lab"];
        let place = &lab["place"];
        if place.is_null() {
            return "loopback (the host's own)".to_string();
        }
        let mut text = place["label"].as_str().unwrap_or("?").to_string();
        let mechanism = place["mechanism"].as_str();
        if let Some(m) = mechanism {
            text += &format!(" via {m}");
        }
        let link = &place["link"];
        if !link.is_null() {
            text += &format!(": {}", link_settings(link, mechanism));
        }
        // The line rate is the link's set rate (in `link_settings`); the
        // calibration is a measurement beside it, never a second rate.
        if let Some(r) = lab["calibration"]["goodput_bps"].as_f64() {
            text += &format!(
                ", calibrated goodput {} (a 2-3 s cubic bulk transfer when the place was set up)",
                report::format::number(r, report::Unit::Si("bit/s"))
            );
        }
        text
    }));
    join_or(seen, "not recorded")
}

/// A link's settings as the trial recorded them (`lab::link::LinkSpec`):
/// rate, one-way delay, jitter, loss, reordering, MTU, queue and framing,
/// and for a token-bucket qdisc (tbf, htb) the burst it was given.
pub fn link_settings(link: &serde_json::Value, mechanism: Option<&str>) -> String {
    use report::format::number;
    use report::Unit;
    let f = |k: &str| link[k].as_f64().unwrap_or(0.0);
    let mut parts = Vec::new();
    let rate = link["rate_bps"].as_f64();
    parts.push(match rate {
        Some(r) => format!("rate {}", number(r, Unit::Si("bit/s"))),
        None => "no rate limit".into(),
    });
    parts.push(if f("delay_s") > 0.0 {
        format!("one-way delay {}", number(f("delay_s"), Unit::Si("s")))
    } else {
        "no added delay".into()
    });
    let mut noise = Vec::new();
    if f("jitter_s") > 0.0 {
        noise.push(format!("jitter ±{}", number(f("jitter_s"), Unit::Si("s"))));
    }
    if f("loss") > 0.0 {
        noise.push(format!("loss {}", number(f("loss"), Unit::Percent)));
    }
    if f("reorder") > 0.0 {
        noise.push(format!(
            "reordering {}",
            number(f("reorder"), Unit::Percent)
        ));
    }
    parts.push(if noise.is_empty() {
        "no jitter, loss or reordering".into()
    } else {
        noise.join(", ")
    });
    if let Some(m) = link["mtu"].as_u64() {
        parts.push(format!("MTU {m}"));
    }
    if rate.is_some() {
        if let Some(q) = link["queue_frames"].as_u64() {
            parts.push(format!("queue {q} frames"));
        }
        if let Some(fr) = link["framing_bytes"].as_u64() {
            parts.push(format!("{fr} B framing per frame"));
        }
    }
    if let (Some(r), Some(m), Some("tbf" | "htb")) = (rate, link["mtu"].as_u64(), mechanism) {
        parts.push(format!(
            "token-bucket burst {} B (two frames or 1 ms at the rate, the larger)",
            token_bucket_burst(r, m)
        ));
    }
    parts.join(", ")
}

/// The burst the lab gives a rate qdisc, bytes: two frames of `mtu`, or
/// 1 ms at `rate_bps`, whichever is larger (`lab`'s `shaper::burst_bytes`,
/// which the run does not store).
fn token_bucket_burst(rate_bps: f64, mtu: u64) -> u64 {
    (2 * (mtu + 14)).max((rate_bps / 8.0 / 1000.0) as u64)
}

/// Each end's offload states across the trials, with how many trials ran with each.
fn offloads(trials: &[&TrialRecord]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut unrecorded = 0;
    for t in trials {
        let o = &t.outcome.details["lab"]["offloads"];
        if o.is_null() {
            unrecorded += 1;
            continue;
        }
        let ends: Vec<String> = ["sender", "receiver"]
            .iter()
            .map(|side| format!("{side} {}", offload_state(&o[*side]["state"])))
            .collect();
        *counts.entry(ends.join("; ")).or_default() += 1;
    }
    let mut parts: Vec<String> = counts
        .into_iter()
        .map(|(state, n)| format!("{state} ({})", trials_word(n)))
        .collect();
    if unrecorded > 0 {
        parts.push(format!(
            "{} as the host had them, not recorded (loopback, or a run stored before offloads \
             were recorded)",
            trials_word(unrecorded)
        ));
    }
    join_or(parts, "no trial")
}

/// `TSO off, GSO off, GRO off, tx csum on, rx csum on`.
fn offload_state(state: &Value) -> String {
    if !state.is_object() {
        return "unreadable".into();
    }
    [
        ("tso", "TSO"),
        ("gso", "GSO"),
        ("gro", "GRO"),
        ("tx_checksum", "tx csum"),
        ("rx_checksum", "rx csum"),
    ]
    .iter()
    .map(|(k, name)| {
        let on = state[*k].as_bool().unwrap_or(false);
        format!("{name} {}", if on { "on" } else { "off" })
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// HZ and what it means for TCP_INFO's time counters.
fn kernel_tick(run: &StoredRun) -> String {
    match run.meta.host.kernel_hz {
        Some(hz) if hz > 0 => format!(
            "HZ {hz}: TCP_INFO's busy and limited times tick in {:.0} ms jiffies, so shares \
             computed from them need many ticks",
            1000.0 / f64::from(hz)
        ),
        _ => "not recorded (the kernel did not say, or the run is older)".into(),
    }
}

/// The mitigations in force, or that none are.
fn mitigations(run: &StoredRun) -> String {
    let h = &run.meta.host;
    if h.cpu_vulnerabilities.is_empty() {
        return "not recorded".into();
    }
    let m = h.mitigations();
    if m.is_empty() {
        "none in force (every listed vulnerability: not affected)".into()
    } else {
        m.join("; ")
    }
}

/// The largest share of CPU time the hypervisor took during a trial.
fn steal(trials: &[&TrialRecord]) -> String {
    let worst = trials
        .iter()
        .filter_map(|t| t.outcome.metrics.get("host_steal_fraction"))
        .copied()
        .filter(|x| x.is_finite())
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    match worst {
        Some(w) => format!("at most {:.1}% of CPU time in any trial", w * 100.0),
        None => "not recorded".into(),
    }
}

/// Which trials were probed, and what their unprobed twins say the
/// probes cost.
fn probes(run: &StoredRun, trials: &[&TrialRecord]) -> String {
    let probed = trials.iter().filter(|t| is_probed(t)).count();
    if probed == 0 {
        return "none: no trial was observed".into();
    }
    let mut head = format!("{probed} of {} trials probed", trials.len());
    let summarized = trials
        .iter()
        .filter(|t| crate::path_source::kept_summary_only(t))
        .count();
    if summarized > 0 {
        head += &format!(
            " ({summarized} keeping only their path analysis and CPU samples: {})",
            crate::path_source::RAW_NOT_KEPT
        );
    }
    let ratios = probe_ratios(run, trials);
    if ratios.is_empty() {
        return format!(
            "{head}; probes perturb what they observe, and this run has no unprobed twin trials \
             (the same parameters without probes) to measure by how much"
        );
    }
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    format!(
        "{head}; beside their unprobed twins (the same parameters without probes) they ran at \
         {median:.2}× the twins' throughput or transaction rate (median over {} points, \
         {:.2}–{:.2}): the observation's cost, which every probed figure carries",
        sorted.len(),
        sorted[0],
        sorted[sorted.len() - 1]
    )
}

/// Whether a trial ran with probes attached.
fn is_probed(t: &TrialRecord) -> bool {
    !t.outcome.details["probe"].is_null()
}

/// For every set of parameters measured both with and without probes, the
/// probed trials' mean primary metric over the unprobed ones'.
fn probe_ratios(run: &StoredRun, trials: &[&TrialRecord]) -> Vec<f64> {
    // (probed values, unprobed values) by the point's parameters.
    let mut by_params: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for t in trials {
        let Some(p) = run.points.iter().find(|p| p.id == t.point_id) else {
            continue;
        };
        let key = serde_json::to_string(&p.params).unwrap_or_default();
        let Some(v) = t.outcome.metrics.get(p.params.test.primary_metric()) else {
            continue;
        };
        let e = by_params.entry(key).or_default();
        if is_probed(t) {
            e.0.push(*v);
        } else {
            e.1.push(*v);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    by_params
        .values()
        .filter(|(a, b)| !a.is_empty() && !b.is_empty())
        .map(|(a, b)| mean(a) / mean(b))
        .filter(|r| r.is_finite())
        .collect()
}

/// `1 trial`, `3 trials`.
fn trials_word(n: usize) -> String {
    if n == 1 {
        "1 trial".into()
    } else {
        format!("{n} trials")
    }
}

/// Distinct values in first-seen order.
fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn join_or(parts: Vec<String>, none: &str) -> String {
    if parts.is_empty() {
        none.into()
    } else {
        parts.join("; ")
    }
}
