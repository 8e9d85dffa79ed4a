//! The part of a run's methods a reader needs to run it again (issue 30,
//! rule 8): the tool and its seed, the trial order as the run's own
//! sequence numbers show it, the quota and load mechanisms where points
//! used them, the CPU sampler's rate and what it lost, and for every place
//! the literal commands that built it with the qdisc each device ended
//! with. Each line is read from the run's record; what an older run did not
//! record is said to be so.

use analysis::PointSummary;
use record::{StoredRun, TrialRecord};
use report::Block;
use serde_json::Value;
use std::collections::BTreeMap;

/// The rerun facts as key–value pairs, then per place its commands and
/// qdiscs.
pub fn rerun_blocks(
    run: &StoredRun,
    points: &[PointSummary],
    trials: &[&TrialRecord],
) -> Vec<Block> {
    let m = &run.meta;
    let mut kv = vec![
        (
            "tcplab".to_string(),
            format!(
                "version {}, run seed {}",
                or_unrecorded(&m.tool_version),
                m.seed
            ),
        ),
        ("trial order".to_string(), trial_order(run)),
    ];
    if let Some(q) = quota(points, trials) {
        kv.push(("CPU quota (--host-speed)".to_string(), q));
    }
    if points.iter().any(|p| p.params.load.is_some()) {
        kv.push((
            "load workers (--load)".to_string(),
            "threads each multiplying 64 × 64 matrices of f64 for the whole trial, started \
             from the loaded side's process, so they share its CPU set and cgroup; their CPU \
             is not counted as the transfer's"
                .to_string(),
        ));
    }
    if let Some(s) = sampler(trials) {
        kv.push(("CPU sampler".to_string(), s));
    }
    let mut out = vec![Block::KeyValues(kv)];
    out.extend(place_commands(trials));
    out.extend(stack_commands(trials));
    out
}

/// For tcplab's stack places: the commands that set up their namespace
/// and TUN devices, once per distinct set.
fn stack_commands(trials: &[&TrialRecord]) -> Vec<Block> {
    let mut seen: Vec<Vec<String>> = Vec::new();
    let mut out = Vec::new();
    for t in trials {
        let stack = &t.outcome.details["stack"];
        let commands: Vec<String> = stack["commands"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        // Each place has a fresh tag; compare the commands with it dropped.
        let shape: Vec<String> = commands.iter().map(|c| untagged(c)).collect();
        if commands.is_empty() || seen.contains(&shape) {
            continue;
        }
        seen.push(shape);
        out.push(Block::Heading(format!(
            "tcplab's stack ({} → {}): the commands that set up its namespace and TUN devices",
            stack["client"].as_str().unwrap_or("?"),
            stack["server"].as_str().unwrap_or("?")
        )));
        out.extend(commands.into_iter().map(|line| Block::Command {
            label: String::new(),
            line,
        }));
    }
    out
}

/// A command with every `tcplab-<tag>-` name's tag dropped.
fn untagged(c: &str) -> String {
    c.split(' ')
        .map(|w| match w.strip_prefix("tcplab-") {
            Some(rest) => match rest.split_once('-') {
                Some((_, role)) => format!("tcplab-*-{role}"),
                None => w.to_string(),
            },
            None => w.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn or_unrecorded(s: &str) -> &str {
    if s.is_empty() {
        "not recorded"
    } else {
        s
    }
}

/// How the run ordered its trials, from their stored sequence: rounds of
/// one trial per point, and whether the points' order changed between
/// rounds (the runner shuffles it with the run's seed).
pub(crate) fn trial_order(run: &StoredRun) -> String {
    let mut by_round: BTreeMap<u32, Vec<(u32, i64)>> = BTreeMap::new();
    for t in &run.trials {
        by_round
            .entry(t.repetition)
            .or_default()
            .push((t.seq, t.point_id));
    }
    if by_round.is_empty() {
        return "no trials".into();
    }
    let orders: Vec<Vec<i64>> = by_round
        .into_values()
        .map(|mut v| {
            v.sort();
            v.into_iter().map(|(_, p)| p).collect()
        })
        .collect();
    let rounds = orders.len();
    // Two rounds are comparable over the points both ran.
    let changed = orders.windows(2).any(|w| {
        let a: Vec<i64> = w[0].iter().copied().filter(|p| w[1].contains(p)).collect();
        let b: Vec<i64> = w[1].iter().copied().filter(|p| w[0].contains(p)).collect();
        a != b
    });
    let how = if rounds < 2 {
        "one round".to_string()
    } else if changed {
        format!(
            "{rounds} rounds of one trial per point; the points' order changed between rounds \
             (shuffled with the run's seed), so slow drifts of the host fall on every point"
        )
    } else {
        format!(
            "{rounds} rounds of one trial per point, the points in the same order every round \
             (a drift of the host would fall on the points in order)"
        )
    };
    format!(
        "{how}; {} trials in all, in the order of their sequence numbers",
        run.trials.len()
    )
}

/// The CPU quota's mechanism and period where points used `--host-speed`.
fn quota(points: &[PointSummary], trials: &[&TrialRecord]) -> Option<String> {
    if !points.iter().any(|p| p.params.host_speed.is_some()) {
        return None;
    }
    let period = trials
        .iter()
        .find_map(|t| t.outcome.details["lab"]["cpu_quota_period_us"].as_u64());
    Some(match period {
        Some(us) => format!(
            "a cgroup CPU quota on the side's threads (cpu.max, or cpu.cfs_quota_us on cgroup \
             v1): speed F allows F × {} ms of CPU in every {} ms period",
            us as f64 / 1e3,
            us as f64 / 1e3
        ),
        None => "a cgroup CPU quota on the side's threads; its period was not recorded".into(),
    })
}

/// The sampler's rate and what it missed, over the CPU-sampled trials.
fn sampler(trials: &[&TrialRecord]) -> Option<String> {
    let cpu: Vec<&Value> = trials
        .iter()
        .map(|t| &t.outcome.details["probe"]["cpu"])
        .filter(|c| !c.is_null())
        .collect();
    if cpu.is_empty() {
        return None;
    }
    let nums = |k: &str| -> Vec<f64> { cpu.iter().filter_map(|c| c[k].as_f64()).collect() };
    let range = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo == hi {
            format!("{lo:.0}")
        } else {
            format!("{lo:.0}–{hi:.0}")
        }
    };
    let periods = nums("period_ns");
    let rate = if periods.is_empty() {
        "rate not recorded".to_string()
    } else {
        let hz: Vec<f64> = periods.iter().map(|p| 1e9 / p).collect();
        format!("the cpu-clock timer at {} Hz on every CPU", range(&hz))
    };
    Some(format!(
        "{rate} (perf_event BPF, kernel and user stacks), {} sampled trials; samples per trial \
         {}, broken stacks per trial {}, lost samples per trial {}; kernel symbols map to \
         layers and to Huang & Chen's blocks by tcplab's tables (layer table v{}, block table \
         v{})",
        cpu.len(),
        range(&nums("samples")),
        range(&nums("broken_stacks")),
        range(&nums("lost_samples")),
        analysis::layers::LAYER_TABLE_VERSION,
        analysis::layers::BLOCK_TABLE_VERSION
    ))
}

/// For every place with recorded commands: a heading, its commands, and
/// the qdisc each device ended with.
fn place_commands(trials: &[&TrialRecord]) -> Vec<Block> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for t in trials {
        let place = &t.outcome.details["lab"]["place"];
        let Some(label) = place["label"].as_str() else {
            continue;
        };
        let commands: Vec<&str> = place["commands"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if commands.is_empty() || seen.iter().any(|s| s == label) {
            continue;
        }
        seen.push(label.to_string());
        out.push(Block::Heading(format!(
            "{label}: the commands that built it, in order"
        )));
        for c in commands {
            out.push(Block::Command {
                label: String::new(),
                line: c.to_string(),
            });
        }
        let qdiscs: Vec<&str> = place["qdiscs"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        out.push(Block::Paragraph(if qdiscs.is_empty() {
            format!("{label}: its devices' qdiscs were not recorded.")
        } else {
            format!(
                "{label}: each device's root qdisc once built: {}.",
                qdiscs.join("; ")
            )
        }));
    }
    out
}
