//! Reading the study's probed trials: the richest trial of an experiment,
//! all of them analysed, and their queues drawn over time.

use crate::data::StudyData;
use analysis::path::{analyse, PathAnalysis};
use record::TrialParams;
use report::{Figure, Point, Section, Series, SeriesStyle};

/// The probed trial of experiment `id` (among points `keep` accepts) with
/// the most records, analysed, with its sequence number.
pub(super) fn richest(
    d: &StudyData,
    id: &str,
    keep: impl Fn(&TrialParams) -> bool,
) -> Option<(u32, PathAnalysis)> {
    d.trials_of(id)
        .into_iter()
        .filter(|(_, p)| keep(p))
        .filter_map(|(t, _)| d.events.get(&t.id).map(|ev| (t.seq, ev)))
        .max_by_key(|(_, ev)| ev.len())
        .map(|(seq, ev)| (seq, analyse(ev)))
}

/// Every probed trial of experiment `id` (among points `keep` accepts),
/// analysed.
pub(super) fn all_probed(
    d: &StudyData,
    id: &str,
    keep: impl Fn(&TrialParams) -> bool,
) -> Vec<PathAnalysis> {
    d.trials_of(id)
        .into_iter()
        .filter(|(_, p)| keep(p))
        .filter_map(|(t, _)| d.events.get(&t.id))
        .map(|ev| analyse(ev))
        .collect()
}

/// Warns that the `what` experiment has no probed trial.
pub(super) fn no_probes(s: &mut Section, what: &str) {
    s.warning(format!(
        "No probed trial of the {what} experiment: it needs root and BPF (see tcplab probes)."
    ));
}

/// The queues of `a` measured in `unit` (bytes or packets) over time.
pub(super) fn queue_figure(title: String, a: &PathAnalysis, unit: &str) -> Option<Figure> {
    let qs: Vec<_> = a
        .queues
        .iter()
        .filter(|q| q.queue.contains(unit) && !q.series.is_empty())
        .collect();
    if qs.is_empty() {
        return None;
    }
    let bytes = unit == "bytes";
    let mut f = Figure::new(
        title,
        "time since the first record (ms)",
        if bytes {
            "queue length (KB)"
        } else {
            "queue length (packets)"
        },
    );
    for q in qs {
        f.series.push(
            Series::new(
                q.queue.clone(),
                q.series
                    .iter()
                    .map(|&(t, v)| Point::new(t * 1e3, if bytes { v / 1024.0 } else { v }))
                    .collect(),
            )
            .with_style(SeriesStyle::Path),
        );
    }
    Some(f)
}
