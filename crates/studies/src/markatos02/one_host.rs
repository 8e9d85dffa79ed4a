//! What one host can and cannot show of Markatos' cross-host figures
//! (§4.1–4.2), and how to make them from several hosts' stored runs. A
//! statement whose text follows the run: alone, or with other hosts'
//! imported runs beside it.

use crate::data::StudyData;
use report::Section;

/// The section's title.
pub(super) const TITLE: &str = "What one host can and cannot show (§4)";

/// The section: why a CPU quota is not a slower processor, and which
/// commands bring several hosts' runs together.
pub(super) fn one_host_section(d: &StudyData) -> Section {
    let mut s = Section::new(TITLE);
    s.paragraph(
        "The paper's §4 compares processor generations: MB per CPU-second against each \
         machine's SPEC rating (mileage, §4.1), and throughput against CPU speed with a memory \
         term and a CPU term (§4.2). Those are figures across hosts.",
    );
    s.paragraph(
        "One host can show its own bandwidth, its MB per CPU-second on each path, and how its \
         loopback throughput falls when the sender and receiver get a smaller CPU quota \
         (--host-speed). It cannot show a slower or faster processor: a quota gives a thread \
         fewer CPU-seconds per second, but each instruction still runs on the same core, with \
         the same caches, the same memory bandwidth and the same clock. The model's memory term \
         stays fixed under a quota while it changed from one processor generation to the next, \
         so the quota curve is not the paper's cross-generation curve.",
    );
    let mut hosts: Vec<String> = d
        .peers
        .iter()
        .map(|p| p.run.meta.host.hostname.clone())
        .collect();
    hosts.sort();
    hosts.dedup();
    if hosts.is_empty() {
        s.paragraph(
            "This database holds markatos02 runs from this host only, so the cross-host figures \
             are not drawn.",
        );
    } else {
        s.paragraph(format!(
            "This report sets {} other {} newest markatos02 run{} beside this one ({}): the \
             across-hosts section draws mileage and scaling from them. Each host's figures come \
             from its own processor, memory and kernel.",
            hosts.len(),
            if hosts.len() == 1 { "host's" } else { "hosts'" },
            if hosts.len() == 1 { "" } else { "s" },
            hosts.join(", ")
        ));
    }
    s.paragraph(
        "To make the cross-host figures: run tcplab study markatos02 (and tcplab calibrate, for \
         the CPU score and memory bandwidth) on each host; there, write the run out with tcplab \
         export RUN --format json, or copy the host's database; here, bring each file in with \
         tcplab import FILE… (runs already here are skipped); then write this report again with \
         tcplab report RUN. Each other host's newest completed markatos02 run joins the table \
         and the mileage and scaling plots. tcplab compare RUN RUN… sets the runs side by side \
         per matching point, with each run's ratio to the first.",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::StudySettings;
    use crate::fixtures::stored_study_run;
    use report::Block;
    use std::collections::BTreeMap;

    /// An empty markatos02 run made on `host`.
    fn run_on(host: &str) -> StudyData {
        let settings = StudySettings {
            study: super::super::NAME.into(),
            quick: true,
            experiments: Vec::new(),
            skipped: Vec::new(),
        };
        let mut run = stored_study_run(settings, "loopback", Vec::new(), Vec::new());
        run.meta.host.hostname = host.into();
        StudyData::new(run, Vec::new(), BTreeMap::new(), BTreeMap::new()).unwrap()
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
    fn the_section_says_what_one_host_shows_and_follows_the_imported_hosts() {
        let alone = run_on("here");
        let t = text(&one_host_section(&alone));
        assert!(t.contains("a quota gives a thread fewer CPU-seconds per second"));
        assert!(t.contains("the same memory bandwidth"));
        assert!(t.contains("from this host only, so the cross-host figures are not drawn"));
        assert!(t.contains("tcplab import FILE") && t.contains("tcplab compare RUN"));
        let mut joined = run_on("here");
        joined.peers = vec![run_on("far"), run_on("near"), run_on("far")];
        let t = text(&one_host_section(&joined));
        assert!(!t.contains("from this host only"), "{t}");
        assert!(
            t.contains("sets 2 other hosts' newest markatos02 runs beside this one (far, near)"),
            "{t}"
        );
        joined.peers.truncate(1);
        let t = text(&one_host_section(&joined));
        assert!(
            t.contains("sets 1 other host's newest markatos02 run beside this one (far)"),
            "{t}"
        );
    }

    #[test]
    fn the_report_has_the_section() {
        let titles: Vec<String> = super::super::report(&run_on("here"))
            .into_iter()
            .map(|s| s.title)
            .collect();
        assert!(titles.iter().any(|t| t == TITLE), "{titles:?}");
    }
}
