//! The CPU section of a run report: where the sampled trials' CPU time
//! went, per layer and side (`--probe cpu`).

use crate::cpu_claims::{enough_samples, layer_finding, SideShares};
use crate::factor_text::point_label;
use crate::metrics::{capitalize, closest};
use analysis::cpu::{attribute, RoleAttribution};
use analysis::layers::CpuLayer;
use analysis::trial_cost::{role_samples, trial_cpu};
use analysis::PointSummary;
use record::{CpuProfile, StoredRun, ThreadRole, TrialRecord};
use report::{Section, StackedBars, Table};

/// The CPU section of a sampled run: per point, the trial closest to the
/// point's mean, each side's CPU time per layer (stacked bars, only from a
/// trial with [`analysis::trial_cost::MIN_CPU_SAMPLES`] of the side), the
/// layer that took the most over the point's trials (beyond the 95% CIs,
/// [`layer_finding`]), and each side's cost against the engine's figures.
pub fn cpu_section(
    run: &StoredRun,
    points: &[PointSummary],
    varying: &[String],
    profiled: &[(&TrialRecord, CpuProfile)],
    key: &str,
) -> Section {
    let mut s = Section::new("CPU: where the time went");
    s.paragraph(
        "From the CPU samples (--probe cpu): for each point, the trial closest to the point's mean; \
         the sender's and the receiver's CPU time split by layer (Cai et al.'s categories; a stack \
         counts in the layer of its innermost known function). `tcplab probes RUN` gives the \
         function blocks and top functions.",
    );
    let mut bars: Vec<(String, Vec<f64>)> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    let mut costs = Table::new([
        "point",
        "side",
        "engine CPU s",
        "sampled CPU s",
        "sampled/engine",
        "µs per segment",
        "µs per KB",
    ])
    .with_caption(
        "CPU cost per side: the engine's per-thread CPU time and what the samples account for",
    );
    for p in points {
        let trials: Vec<&TrialRecord> = profiled
            .iter()
            .filter(|(t, _)| t.point_id == p.point_id)
            .map(|(t, _)| *t)
            .collect();
        let Some(t) = closest(&trials, key, p.metrics.get(key).map(|x| x.mean)) else {
            continue;
        };
        let Some((_, prof)) = profiled.iter().find(|(x, _)| x.id == t.id) else {
            continue;
        };
        let tc = trial_cpu(t, &run.points, prof);
        let label = point_label(p, varying);
        for role in [ThreadRole::Sender, ThreadRole::Receiver] {
            let Some(r) = tc.attribution.role(role) else {
                continue;
            };
            if r.cpu_s <= 0.0 {
                continue;
            }
            let name = if label.is_empty() {
                role.name().to_string()
            } else {
                format!("{label} · {}", role.name())
            };
            let who = format!(
                "{}{}",
                capitalize(role.name()),
                if label.is_empty() {
                    String::new()
                } else {
                    format!(" at {label}")
                }
            );
            // Every sampled trial of the point gives its shares; the claim
            // rests on those with enough samples.
            let sides: Vec<SideShares> = trials
                .iter()
                .filter_map(|x| profiled.iter().find(|(y, _)| y.id == x.id))
                .filter_map(|(_, pr)| side_shares(pr, role))
                .collect();
            findings.push(layer_finding(&who, &sides));
            // The bar is the closest trial's, when it has samples enough.
            if enough_samples(role_samples(prof, role)) {
                bars.push((name, layer_percents(r)));
            }
        }
        for side in &tc.sides {
            costs.row([
                if label.is_empty() {
                    format!("trial {}", t.seq)
                } else {
                    format!("{label} (trial {})", t.seq)
                },
                side.role.name().to_string(),
                format!("{:.4}", side.engine_cpu_s),
                format!("{:.4}", side.attributed_cpu_s),
                format!("{:.2}", side.ratio),
                format!("{:.2}", side.us_per_segment),
                format!("{:.3}", side.us_per_kb),
            ]);
        }
    }
    // Keep the layers that hold time somewhere, in report order.
    let used: Vec<usize> = (0..CpuLayer::ALL.len())
        .filter(|&i| bars.iter().any(|b| b.1[i] > 0.05))
        .collect();
    if !bars.is_empty() {
        s.push(StackedBars {
            title: "CPU time per layer, sender and receiver".into(),
            caption: Some(
                "Each bar is one side's CPU time in one trial (100%), split by kernel layer."
                    .into(),
            ),
            value_label: "share of the side's CPU time (%)".into(),
            categories: used
                .iter()
                .map(|&i| CpuLayer::ALL[i].name().to_string())
                .collect(),
            bars: bars
                .into_iter()
                .map(|(n, v)| (n, used.iter().map(|&i| v[i]).collect()))
                .collect(),
        });
    }
    for f in findings {
        s.finding(f);
    }
    if !costs.rows.is_empty() {
        s.push(costs);
    }
    s
}

/// A side's CPU time per layer, % of its whole, in [`CpuLayer::ALL`] order.
fn layer_percents(r: &RoleAttribution) -> Vec<f64> {
    CpuLayer::ALL
        .iter()
        .map(|l| r.layer_s(*l) / r.cpu_s * 100.0)
        .collect()
}

/// One trial's shares of `role`'s CPU time per layer with its samples;
/// `None` when the side took no CPU time.
fn side_shares(prof: &CpuProfile, role: ThreadRole) -> Option<SideShares> {
    let a = attribute(prof);
    let r = a.role(role).filter(|r| r.cpu_s > 0.0)?;
    Some(SideShares {
        samples: role_samples(prof, role),
        shares: layer_percents(r).iter().map(|p| p / 100.0).collect(),
    })
}
