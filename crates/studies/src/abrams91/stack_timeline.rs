//! Abrams & Chen §3.3, Fig. 5 on tcplab's stack: the sender's busy and
//! idle time measured exactly by its accounting (busy + idle = wall), the
//! split of its time into modules, between modules and idle, and its
//! largest busy block, beside the paper's 45.3% idle and Linux's sending
//! thread in the kernel timeline experiment.

use super::paper::{DELAY_CI_MS, DELAY_MS, FILE_KB, IDLE_CI_MS, IDLE_MS, IDLE_PCT, WRITE_KB};
use super::stack_account::{accounted, impossible, Accounted, BRACKETS, UNATTRIBUTED};
use super::stack_runs::TIMELINE;
use crate::data::StudyData;
use analysis::findings::{largest, size_words, CurvePoint, Largest};
use analysis::Summary;
use report::{measure, Section, Table, Unit};

const CITE: &str = "Abrams & Chen 1991";

/// The paper's sender's idle share (156.491 ms of 345.452 ms).
pub(super) const PAPER_IDLE: f64 = IDLE_PCT.value / 100.0;

/// A part of the sender's time, seconds, from its accounting.
type Part = dyn Fn(&Accounted) -> f64;

/// Mean ± 95% CI of per-trial values (CI 0 for one trial).
fn point(v: &[f64]) -> Option<CurvePoint> {
    CurvePoint::of_values(0.0, v)
}

fn pct(p: &CurvePoint) -> String {
    measure(p.mean, (p.ci > 0.0).then_some(p.ci), Unit::Percent)
}

/// The idle claim: the stack sender's busy and idle shares of its wall
/// time over `n` trials, against the paper's 45.3% (more or less idle only
/// beyond the stack's CI, with a 1-point floor) and Linux's sending
/// thread's blocked share when measured.
pub(super) fn idle_finding(
    setup: &str,
    busy: &CurvePoint,
    idle: &CurvePoint,
    wall_s: &CurvePoint,
    n: usize,
    worst_error: f64,
    linux_blocked: Option<(&Summary, &str)>,
) -> String {
    let diff = idle.mean - PAPER_IDLE;
    let against = if n < 2 {
        format!(
            "from one trial there is no CI, so nothing is claimed against the paper's {IDLE_PCT}%"
        )
    } else if diff.abs() <= idle.ci + 0.01 {
        format!(
            "within its 95% CI of the paper's {IDLE_PCT}% (a difference under {} could not have been \
             seen)",
            measure(idle.ci + 0.01, None, Unit::Percent)
        )
    } else if diff > 0.0 {
        format!(
            "more idle than the paper's 80386 sender ({IDLE_PCT}%) by {:.1} points beyond the 95% CI",
            diff * 100.0
        )
    } else {
        format!(
            "less idle than the paper's 80386 sender ({IDLE_PCT}%) by {:.1} points beyond the 95% CI",
            -diff * 100.0
        )
    };
    let linux = linux_blocked.map_or(
        " Linux's sending thread was not measured in this run (the kernel timeline experiment's \
         sched probe)."
            .to_string(),
        |(b, place)| {
            format!(
                " Linux's sending thread in the kernel timeline experiment (on {place}) was \
                 blocked {} of its time (sched probe, {} trials).",
                measure(b.mean, b.ci95.is_finite().then_some(b.ci95), Unit::Percent),
                b.n
            )
        },
    );
    format!(
        "tcplab's stack sender ({setup}, {n} trials of {} wall time) was busy \
         {} and idle {} of its wall time by exact cycle-counter accounting (busy + idle within \
         {:.2}% of the wall time in every trial): {against}.{linux}",
        measure(
            wall_s.mean,
            (wall_s.ci > 0.0).then_some(wall_s.ci),
            Unit::Si("s")
        ),
        pct(busy),
        pct(idle),
        worst_error * 100.0,
    )
}

/// The largest busy block by its share of the busy time: named beyond the
/// next one's CI, else the blocks within CI of each other with the
/// smallest difference that could have been seen.
pub(super) fn largest_block_finding(shares: &[(String, CurvePoint)]) -> Option<String> {
    let items: Vec<(&str, CurvePoint)> = shares.iter().map(|(b, p)| (b.as_str(), *p)).collect();
    let share = |name: &str| items.iter().find(|(b, _)| *b == name).map(|(_, p)| pct(p));
    Some(match largest(&items)? {
        Largest::Clear { first, second } => format!(
            "The stack sender's largest busy block is {first}, {} of its busy time{}.",
            share(first).unwrap_or_default(),
            second.map_or(String::new(), |s| format!(
                ", beyond the 95% CIs of the next, {s} ({})",
                share(s).unwrap_or_default()
            ))
        ),
        Largest::Within { tied, resolution } => format!(
            "No one block is the stack sender's largest: {} are within the 95% CIs of each other \
             (a difference under {} of the busy time could not have been seen).",
            tied.iter()
                .map(|b| format!("{b} ({})", share(b).unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" and "),
            measure(resolution, None, Unit::Percent)
        ),
    })
}

/// Each block's share of the busy time over the trials, largest first.
fn block_shares(rows: &[&Accounted]) -> Vec<(String, CurvePoint)> {
    let mut names: Vec<&String> = rows.iter().flat_map(|a| a.blocks.keys()).collect();
    names.sort();
    names.dedup();
    let mut v: Vec<(String, CurvePoint)> = names
        .into_iter()
        .filter(|b| *b != BRACKETS && *b != UNATTRIBUTED)
        .filter_map(|b| {
            let v: Vec<f64> = rows
                .iter()
                .map(|a| a.blocks.get(b).copied().unwrap_or(0.0) / a.busy_s)
                .collect();
            Some((b.clone(), point(&v)?))
        })
        .collect();
    v.sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean));
    v
}

/// The section.
pub(super) fn stack_timeline_section(d: &StudyData) -> Section {
    let mut s = Section::new("On tcplab's stack: the sender's busy and idle time (Fig. 5)");
    s.paper_finding(
        format!("{CITE}, §3.3"),
        format!(
            "Instrumented to timestamp transitions between idle and busy, the 80386 sender of a \
             {FILE_KB} KB file in {WRITE_KB} KB writes was idle {IDLE_MS} ± {IDLE_CI_MS} ms of \
             {DELAY_MS} ± {DELAY_CI_MS} ms: {IDLE_PCT}%, blocked because the receiver had no \
             buffer space."
        ),
    );
    let rows = accounted(d, TIMELINE);
    if rows.is_empty() {
        s.warning(format!(
            "{TIMELINE} has no trial with the stack's accounting in this run: no stack timeline."
        ));
        return s;
    }
    for w in impossible(TIMELINE, &rows) {
        s.warning(w);
    }
    s.paragraph(crate::stack_accounting::METHOD);
    let ok: Vec<&Accounted> = rows.iter().map(|r| &r.2).filter(|a| a.adds_up()).collect();
    let share = |f: &dyn Fn(&Accounted) -> f64| {
        point(&ok.iter().map(|a| f(a) / a.wall_s).collect::<Vec<_>>())
    };
    let (Some(busy), Some(idle), Some(wall)) = (
        share(&|a| a.busy_s),
        share(&|a| a.idle_s),
        point(&ok.iter().map(|a| a.wall_s).collect::<Vec<_>>()),
    ) else {
        s.warning("No trial's accounting adds up to its wall time: no stack timeline.");
        return s;
    };
    let mut t = Table::new(["where the sender's time went", "share of wall time"])
        .with_caption(format!(
            "{TIMELINE}: exact cycle-counter accounting, mean ± 95% CI over {} trials; in modules \
             is every block's exclusive time, between modules the busy time no block covered, the \
             brackets the accounting's own cost",
            ok.len()
        ))
        .key();
    let parts: [(&str, &Part); 4] = [
        ("in modules", &|a| a.in_modules_s()),
        ("between modules", &|a| {
            a.blocks.get(UNATTRIBUTED).copied().unwrap_or(0.0)
        }),
        ("the accounting's brackets", &|a| {
            a.blocks.get(BRACKETS).copied().unwrap_or(0.0)
        }),
        ("idle (blocked in poll)", &|a| a.idle_s),
    ];
    for (name, f) in parts {
        t.row([name.to_string(), share(f).map_or("—".into(), |p| pct(&p))]);
    }
    t.row(["busy".to_string(), pct(&busy)]);
    t.row([
        "paper's 80386 sender, idle".to_string(),
        format!("{IDLE_PCT} %"),
    ]);
    s.push(t);
    let worst = ok.iter().map(|a| a.wall_error()).fold(0.0, f64::max);
    let linux = super::idle::blocked_share(d, "timeline");
    let place = d
        .points_of("timeline")
        .first()
        .map_or(String::new(), |p| p.params.topology.name().to_string());
    let p = &rows[0].1;
    let setup = format!(
        "{} writes, {} buffers",
        size_words(p.write_size as f64),
        p.rcvbuf.map_or("default".into(), |b| size_words(b as f64))
    );
    s.finding(idle_finding(
        &setup,
        &busy,
        &idle,
        &wall,
        ok.len(),
        worst,
        linux.as_ref().map(|b| (b, place.as_str())),
    ));
    if let Some(f) = largest_block_finding(&block_shares(&ok)) {
        s.finding(f);
    }
    s
}
