//! `--host-model` before a plan's trials (issue 29): calibration transfers
//! on this host (undilated, then slowed in a search), then each point's
//! sender set to the speeds at which the stack's classes take the model's
//! time (the arithmetic is `analysis::host_model`'s). The calibration is
//! stored with the run (`settings.host_model_calibration`).

use crate::session::Session;
use analysis::host_model::{apply, calibration_params, host_costs, Calibration, Next};
use indicatif::ProgressBar;
use record::factor::{ClassSpeeds, HostModel, WorkClass};
use record::TrialParams;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Why the points could not be given their speeds.
#[derive(Debug)]
pub enum ResolveError {
    /// Ctrl-C during a calibration transfer.
    Interrupted,
    /// A calibration transfer failed, or its speeds cannot be played.
    Failed(anyhow::Error),
}

/// `points` with each host model's speeds set on the sender, and the
/// calibrations that gave them (as stored).
pub fn resolve(
    points: &[TrialParams],
    session: &mut Session,
    interrupt: &Arc<AtomicBool>,
    pb: &ProgressBar,
) -> Result<(Vec<TrialParams>, Vec<serde_json::Value>), ResolveError> {
    let mut calibrated: BTreeMap<String, ClassSpeeds> = BTreeMap::new();
    let mut stored = Vec::new();
    let mut out = Vec::with_capacity(points.len());
    for p in points {
        let mut p = p.clone();
        if let Some(model) = p.host_model {
            let key = serde_json::to_string(&calibration_params(&p, model, None))
                .map_err(|e| ResolveError::Failed(e.into()))?;
            let s = match calibrated.get(&key) {
                Some(s) => *s,
                None => {
                    let (s, record) = calibrate(&p, model, session, interrupt, pb)?;
                    calibrated.insert(key, s);
                    stored.push(record);
                    s
                }
            };
            apply(&mut p, s);
        }
        out.push(p);
    }
    Ok((out, stored))
}

fn say(pb: &ProgressBar, line: String) {
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

fn class_text(c: &analysis::host_model::ClassCosts, f: impl Fn(WorkClass) -> f64) -> String {
    WorkClass::ALL
        .into_iter()
        .map(|k| format!("{} {:.3}", k.name(), c.of(k) / f(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn calibrate(
    p: &TrialParams,
    model: HostModel,
    session: &mut Session,
    interrupt: &Arc<AtomicBool>,
    pb: &ProgressBar,
) -> Result<(ClassSpeeds, serde_json::Value), ResolveError> {
    let fail = |e: String| ResolveError::Failed(anyhow::anyhow!("--host-model {model}: {e}"));
    let mss = model.reference_mss();
    let mut cal = Calibration::new(model);
    say(
        pb,
        format!(
            "tcplab: --host-model {model}: calibrating on this host; {} per {mss}-byte segment (µs): {}",
            model.describe(),
            class_text(&cal.model, |_| 1.0)
        ),
    );
    let end = if engine::metrics::sender_is_client(p) {
        "client"
    } else {
        "server"
    };
    let last = loop {
        let at = match cal.next().map_err(|e| fail(e.to_string()))? {
            Next::Done(s) => break s,
            Next::Run(at) => at,
        };
        let round = cal.rounds.len() + 1;
        let o = session
            .run(&calibration_params(p, model, at), interrupt)
            .map_err(|e| {
                if interrupt.load(Ordering::Relaxed) {
                    ResolveError::Interrupted
                } else {
                    fail(format!("calibration transfer {round} failed: {e}"))
                }
            })?;
        if interrupt.load(Ordering::Relaxed) {
            return Err(ResolveError::Interrupted);
        }
        let host = host_costs(&o.metrics, end).map_err(|e| fail(e.to_string()))?;
        cal.record(at, host);
        let speed = |c: WorkClass| at.map_or(1.0, |s| s.of(c));
        say(
            pb,
            format!(
                "tcplab: --host-model {model}: transfer {round} at --cpu-speed {}: this host's own µs per segment {}; slowed {}",
                at.map_or("1".to_string(), |s| s.to_string()),
                class_text(&host, |_| 1.0),
                class_text(&host, speed),
            ),
        );
    };
    let converged = cal.converged();
    let ratio = cal.last_ratio();
    say(
        pb,
        format!(
            "tcplab: --host-model {model}: {} after {} transfers (the last took {} of its time); --cpu-speed sender={last}, from the line through every slowed transfer",
            if converged {
                "within the model".to_string()
            } else {
                format!(
                    "not within {:.0}% of the model in every class",
                    analysis::host_model::CONVERGED * 100.0
                )
            },
            cal.rounds.len(),
            ratio.map_or("—".into(), |r| class_text(&r, |_| 1.0))
        ),
    );
    let record = serde_json::json!({
        "model": model.to_string(),
        "reference_mss": mss,
        "calibration": cal,
        "last_over_model": ratio,
        "converged": converged,
        "speeds": format!("sender={last}"),
    });
    Ok((last, record))
}
