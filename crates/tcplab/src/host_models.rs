//! `--host-model` before a plan's trials (issue 29): calibration transfers
//! on this host (undilated, then slowed until each class lands on the
//! model), then each point's `--cpu-speed` set so the stack's classes take
//! the model's time (the arithmetic is `analysis::host_model`'s).

use crate::session::Session;
use analysis::host_model::{
    apply, calibration_params, host_costs, next_speeds, reference_costs, CALIBRATION_ROUNDS,
};
use indicatif::ProgressBar;
use record::factor::{ClassSpeeds, HostModel};
use record::TrialParams;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// `points` with each host model's speeds set, where `--cpu-speed` was not
/// given; a calibration that fails is an error (no trial runs without
/// its speeds).
pub fn resolve(
    points: &[TrialParams],
    session: &mut Session,
    interrupt: &Arc<AtomicBool>,
    pb: &ProgressBar,
) -> anyhow::Result<Vec<TrialParams>> {
    let mut calibrated: BTreeMap<String, ClassSpeeds> = BTreeMap::new();
    let mut out = Vec::with_capacity(points.len());
    for p in points {
        let mut p = p.clone();
        if let (Some(model), None) = (p.host_model, p.cpu_speed) {
            let key = serde_json::to_string(&calibration_params(&p, model, None))?;
            let s = match calibrated.get(&key) {
                Some(s) => *s,
                None => {
                    let s = calibrate(&p, model, session, interrupt, pb)?;
                    calibrated.insert(key, s);
                    s
                }
            };
            let client_sends = engine::metrics::sender_is_client(&p);
            apply(&mut p, s, client_sends);
        }
        out.push(p);
    }
    Ok(out)
}

fn say(pb: &ProgressBar, line: String) {
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

fn calibrate(
    p: &TrialParams,
    model: HostModel,
    session: &mut Session,
    interrupt: &Arc<AtomicBool>,
    pb: &ProgressBar,
) -> anyhow::Result<ClassSpeeds> {
    let mss = model.reference_mss();
    let paper = reference_costs(model);
    say(
        pb,
        format!(
            "tcplab: --host-model {model}: calibrating on this host; {} per {mss}-byte segment: compute {:.1} µs, data {:.1} µs, device {:.1} µs",
            model.describe(),
            paper.compute,
            paper.data,
            paper.device
        ),
    );
    let end = if engine::metrics::sender_is_client(p) {
        "client"
    } else {
        "server"
    };
    let mut at: Option<ClassSpeeds> = None;
    for round in 1..=CALIBRATION_ROUNDS {
        let cal = calibration_params(p, model, at);
        let o = session.run(&cal, interrupt).map_err(|e| {
            anyhow::anyhow!("--host-model {model}: calibration transfer {round} failed: {e}")
        })?;
        let host = host_costs(&o.metrics, end)?;
        let speed = |c: record::factor::WorkClass| at.map_or(1.0, |s| s.of(c));
        use record::factor::WorkClass::{Compute, Data, Device};
        say(
            pb,
            format!(
                "tcplab: --host-model {model}: transfer {round} at --cpu-speed {}: this host's own µs per segment compute {:.3}, data {:.3}, device {:.3}; slowed: {:.1}, {:.1}, {:.1}",
                at.map_or("1".to_string(), |s| s.to_string()),
                host.compute,
                host.data,
                host.device,
                host.compute / speed(Compute),
                host.data / speed(Data),
                host.device / speed(Device),
            ),
        );
        match next_speeds(host, paper, at)
            .map_err(|e| anyhow::anyhow!("--host-model {model}: {e}"))?
        {
            None => {
                let s = at.expect("an undilated round always gives speeds");
                say(
                    pb,
                    format!("tcplab: --host-model {model}: --cpu-speed sender={s}"),
                );
                return Ok(s);
            }
            Some(next) => at = Some(next),
        }
    }
    let s = at.expect("a round ran");
    say(
        pb,
        format!(
            "tcplab: --host-model {model}: not within {:.0}% after {CALIBRATION_ROUNDS} transfers; using the last speeds, --cpu-speed sender={s}",
            analysis::host_model::CONVERGED * 100.0
        ),
    );
    Ok(s)
}
