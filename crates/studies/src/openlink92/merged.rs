//! Figs 3–4 of the paper, the layers merged into one process: what was
//! measured, why this host's Linux cannot show it (its layers are not
//! separate processes to merge), and tcplab's stack's measurement of it
//! (`stack_layers`).

use super::CITE;
use crate::data::StudyData;
use report::Section;

/// The section's title.
pub(super) const TITLE: &str =
    "Layers merged into one process (Figs 3–4): not on Linux, measured on tcplab's stack";

/// The section: the paper's experiment, why Linux cannot repeat it, what
/// this run measured instead, and which issue adds it.
pub(super) fn layers_merged_section(d: &StudyData) -> Section {
    let mut s = Section::new(TITLE);
    s.paper_finding(
        format!("{CITE}, §2, Figs 3–4"),
        "OPEN-Link's Ethernet interface module, IP and TCP were three processes talking through \
         IPC. Combined into one process, IP's packet and byte rates rose to the Ethernet curve; \
         TCP's rose too but stayed nearly flat against packet size.",
    );
    s.paragraph(
        "What the paper measured: the packet and byte rate at each layer against packet size \
         (64 to 1512 bytes), once with each layer in its own process and once with the three \
         merged, so the difference between the two figures is the cost of the IPC between \
         layers.",
    );
    s.paragraph(
        "Why this host cannot show it: in Linux the driver, IP and TCP are not processes. They \
         are functions of one kernel, called one from the other in the context of the sending \
         thread or of the receive softirq, with no message passing between them. There is no \
         separated configuration to start from and nothing to merge: every layer curve this \
         run measured is already the merged case, and no setting of this kernel separates the \
         layers again.",
    );
    let mut measured: Vec<&str> = d
        .points_of("layer-rate")
        .iter()
        .filter(|p| p.trials_ok > 0)
        .filter_map(|p| p.params.layer.map(|l| l.name()))
        .collect();
    measured.sort_unstable();
    measured.dedup();
    let measured = measured.len();
    s.paragraph(format!(
        "What this run shows instead: the layer-rate curves of Figs 1–2 ({measured} of 4 layers \
         measured in this run), which correspond to the paper's merged Figs 3–4 more than to \
         its separated Figs 1–2."
    ));
    if !super::stack_layers::add_stack_measurement(&mut s, d) {
        s.paragraph(
            "Where it can be measured: tcplab's own TCP/IP stack (issue 18) runs its layers \
             either in one thread or as separate threads joined by queues (issue 19's \
             --layers); this run has no successful trial of that experiment.",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{ExperimentRecord, StudySettings};
    use crate::fixtures::{ok_trial, stored_study_run};
    use record::{PointRecord, ProtocolLayer, TestKind, TrialOutcome, TrialParams};
    use report::Block;
    use std::collections::BTreeMap;

    /// An openlink92 run whose layer-rate experiment measured `layers`.
    fn run_with(layers: &[ProtocolLayer]) -> StudyData {
        let mut points = Vec::new();
        let mut trials = Vec::new();
        for (i, l) in layers.iter().enumerate() {
            let mut params = TrialParams::defaults(TestKind::LayerRate);
            params.layer = Some(*l);
            points.push(PointRecord {
                id: i as i64 + 1,
                index: i as u32,
                params,
                precision: None,
            });
            let outcome = TrialOutcome {
                metrics: BTreeMap::from([
                    ("packets_per_s".to_string(), 1e5),
                    ("throughput_bps".to_string(), 1e8),
                ]),
                ..TrialOutcome::default()
            };
            trials.push(ok_trial(&trials, i as i64 + 1, 0, outcome));
        }
        let settings = StudySettings {
            study: super::super::NAME.into(),
            quick: true,
            experiments: vec![ExperimentRecord {
                id: "layer-rate".into(),
                title: String::new(),
                command: String::new(),
                first_point: 0,
                points: layers.len() as u32,
            }],
            skipped: Vec::new(),
        };
        let run = stored_study_run(settings, "veth", points, trials);
        let summaries = analysis::summarize_run(&run);
        StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
    }

    fn text(s: &Section) -> String {
        s.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Paragraph(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_report_says_why_figs_3_and_4_are_missing() {
        let d = run_with(&ProtocolLayer::ALL);
        let sections = super::super::report(&d);
        let s = sections
            .iter()
            .find(|s| s.title == TITLE)
            .expect("the layers-merged section");
        let t = text(s);
        assert!(t.contains("combined") || t.contains("merged"), "{t}");
        assert!(t.contains("not processes"), "{t}");
        assert!(t.contains("issue 18"), "{t}");
        assert!(t.contains("(4 of 4 layers measured in this run)"), "{t}");
        let t = text(&layers_merged_section(&run_with(&[ProtocolLayer::Eth])));
        assert!(t.contains("(1 of 4 layers measured in this run)"), "{t}");
    }

    /// The paper's figures a title names: "(Figs 1–2)" is 1 and 2, "(Figs
    /// 1, 3)" 1 and 3, "(Fig. 8)" 8.
    fn figures_named(title: &str) -> Vec<u32> {
        let Some(start) = title.find("(Fig") else {
            return Vec::new();
        };
        let inner = &title[start + 1..];
        let inner = &inner[..inner.find(')').unwrap_or(inner.len())];
        let list = inner.trim_start_matches("Figs").trim_start_matches("Fig.");
        let mut out = Vec::new();
        for part in list.split(',') {
            let ends: Vec<u32> = part
                .split('–')
                .filter_map(|n| n.trim().parse().ok())
                .collect();
            match ends[..] {
                [a, b] => out.extend(a..=b),
                [a] => out.push(a),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn the_layer_sections_name_the_figures_they_show() {
        assert_eq!(figures_named("Rates (Figs 1–4)"), [1, 2, 3, 4]);
        assert_eq!(figures_named("Packets (Figs 1, 3)"), [1, 3]);
        assert_eq!(figures_named("Trace (Fig. 8)"), [8]);
        assert!(figures_named("Smoothed RTT (§4)").is_empty());
        let sections = super::super::report(&run_with(&ProtocolLayer::ALL));
        let named = |s: &Section| figures_named(&s.title);
        let layers = sections
            .iter()
            .find(|s| {
                s.title
                    .starts_with("Packet and byte rate at each protocol layer")
            })
            .expect("the layer-rate section");
        let merged = sections.iter().find(|s| s.title == TITLE).unwrap();
        // The measured curves are Figs 1–2; the merged layers (Figs 3–4)
        // are a section of their own, and no two sections claim a figure.
        assert_eq!(named(layers), [1, 2]);
        assert_eq!(named(merged), [3, 4]);
        let figure_titles: Vec<Vec<u32>> =
            layers.figures().map(|f| figures_named(&f.title)).collect();
        assert_eq!(figure_titles, [vec![1], vec![2]]);
        let mut all: Vec<u32> = sections.iter().flat_map(named).collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a figure is claimed by two sections");
    }
}
