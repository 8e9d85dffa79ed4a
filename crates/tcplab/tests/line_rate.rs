//! No throughput a report would plot exceeds its place's line rate: every
//! link profile (`lab::link::profiles`) is driven with TCP (256 KB
//! transfers, the size whose bucket burst once gave 122 Mbit/s through
//! lan100) and UDP (200 ms streams) at write sizes up to 64 KB, and every
//! point's mean either stays within its link's line rate (whatever its
//! CI) or is left out by the studies' validity rules for a stated reason (too few
//! datagrams, too short an interval) — never for being above the rate.
//! Then `tcplab report` on these plain bench runs: its throughput figures
//! plot exactly the points the rules keep (each within its line rate), and
//! the page names every point it leaves out.
//! Real namespaces and links; run as root.

mod common;

use analysis::validity::{above_line_rate, too_few_datagrams, too_short_interval};
use analysis::PointSummary;
use common::{stdout_of, tcplab, temp_db};
use record::{Store, TestKind};
use std::path::Path;

/// Why a point is not plotted, per the validity rules other than the line
/// rate itself; None when it is plotted (and so must be within the rate).
fn left_out(p: &PointSummary) -> Option<&'static str> {
    if p.params.test == TestKind::UdpStream
        && too_few_datagrams(p.metrics.get("datagrams_received").map_or(0.0, |s| s.mean))
    {
        return Some("too few datagrams");
    }
    if too_short_interval(p.metrics.get("delay_s").map_or(f64::NAN, |s| s.mean)) {
        return Some("too short an interval");
    }
    None
}

#[test]
fn no_plotted_throughput_exceeds_the_line_rate_on_any_profile() {
    if !testkit::need_root("namespaces and links need root") {
        return;
    }
    // The rates are held to each place's link's line rate, and a busy host
    // measures rates wrong: one timed test at a time, and the
    // two runs (in a fresh database each attempt: runs 1 and 2) count when
    // they ran quietly.
    let _timing = testkit::timing_lock();
    let profiles: Vec<&str> = lab::link::profiles().iter().map(|p| p.name).collect();
    let places = profiles.join(",");
    let q = testkit::until_quiet("line rates", testkit::QuietLimits::default(), &[], || {
        let (dir, db) = temp_db();
        for args in [
            ["tcp-stream", "--write-size", "1K,8K,64K", "--bytes", "256K"],
            [
                "udp-stream",
                "--write-size",
                "1K,8K,65507",
                "--duration",
                "200ms",
            ],
        ] {
            let mut all = vec!["bench"];
            all.extend_from_slice(&args);
            all.extend_from_slice(&["--topology", &places, "--repeat", "3"]);
            stdout_of(&tcplab(&db, &all));
        }
        (dir, db)
    });
    eprintln!("line rates: {}", q.describe());
    let (_dir, db) = q.value;
    let store = Store::open(&db).unwrap();
    let mut checked = Vec::new();
    let mut violations = Vec::new();
    for run_id in [1, 2] {
        let run = store.load_run(run_id).unwrap();
        for p in analysis::summarize_run(&run) {
            let place = p.params.topology.name().to_string();
            let label = format!(
                "{} {} B on {place}",
                p.params.test.name(),
                p.params.write_size
            );
            let Some(thr) = p.metrics.get("throughput_bps") else {
                eprintln!("{label}: no rate (n/a)");
                continue;
            };
            let line = analysis::validity::line_rate_bps(&run.trials, &p)
                .unwrap_or_else(|| panic!("{label}: no line rate stored with its link"));
            let seen = format!(
                "{label}: {:.1} ± {:.1} Mbit/s, line rate {:.1} Mbit/s",
                thr.mean / 1e6,
                if thr.ci95.is_finite() { thr.ci95 } else { 0.0 } / 1e6,
                line / 1e6
            );
            match left_out(&p) {
                Some(why) => eprintln!("{seen}: not plotted ({why})"),
                None => {
                    eprintln!("{seen}");
                    checked.push(place);
                    if above_line_rate(thr.mean, line) {
                        violations.push(seen);
                    }
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "above the line rate: {violations:#?}"
    );
    // Every profile had points held to its rate: the rules did not simply
    // leave everything out.
    for name in &profiles {
        assert!(
            checked.iter().filter(|c| c == name).count() >= 2,
            "{name}: fewer than two plotted points were checked ({checked:?})"
        );
    }
    for run_id in [1, 2] {
        check_report_plots(&store, &db, run_id);
    }
}

/// A rate unit's size in bit/s.
fn unit_bps(unit: &str) -> f64 {
    match unit {
        "bit/s" => 1.0,
        "kbit/s" => 1e3,
        "Mbit/s" => 1e6,
        "Gbit/s" => 1e9,
        u => panic!("unknown rate unit {u:?}"),
    }
}

/// `tcplab report RUN` of a bench run over every profile (write size ×
/// topology): its throughput-against-write-size figure plots each point
/// the validity rules keep, within its line rate, and no other; the page
/// names each point left out with its reason.
fn check_report_plots(store: &Store, db: &Path, run_id: i64) {
    let dir = db.parent().unwrap();
    let html = dir.join(format!("run{run_id}.html"));
    stdout_of(&tcplab(
        db,
        &[
            "report",
            &run_id.to_string(),
            "--out",
            html.to_str().unwrap(),
        ],
    ));
    let page = std::fs::read_to_string(&html).unwrap();
    let run = store.load_run(run_id).unwrap();
    let points = analysis::summarize_run(&run);
    let left_out = analysis::validity::left_out(&run.trials, &points);
    // The figure of throughput against write size, one series per place.
    let csv = (1..)
        .map(|n| dir.join(format!("run{run_id}.fig{n}.csv")))
        .take_while(|p| p.exists())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .find(|c| {
            let h = c.lines().next().unwrap_or("");
            h.starts_with("series,write size") && h.contains(",throughput (")
        })
        .unwrap_or_else(|| panic!("run {run_id}: no throughput figure against write size"));
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let unit = header[2]
        .trim_start_matches("throughput (")
        .trim_end_matches(')');
    let scale = unit_bps(unit);
    let mut plotted = Vec::new();
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let place = cells[0].trim_start_matches("topology=");
        let x: f64 = cells[1].parse().unwrap();
        let y = cells[2].parse::<f64>().unwrap() * scale;
        let (i, p) = points
            .iter()
            .enumerate()
            .find(|(_, p)| p.params.topology.name() == place && p.params.write_size as f64 == x)
            .unwrap_or_else(|| panic!("run {run_id}: plotted {line:?} is no point"));
        assert!(
            analysis::validity::why_left_out(&left_out, i, "throughput_bps").is_none(),
            "run {run_id}: {line:?} is plotted though left out"
        );
        let line_rate = analysis::validity::line_rate_bps(&run.trials, p).unwrap();
        assert!(
            !above_line_rate(y, line_rate),
            "run {run_id}: {line:?} plotted above the {line_rate} bit/s line rate"
        );
        plotted.push(i);
    }
    let kept: Vec<usize> = (0..points.len())
        .filter(|&i| {
            points[i].metrics.contains_key("throughput_bps")
                && analysis::validity::why_left_out(&left_out, i, "throughput_bps").is_none()
        })
        .collect();
    plotted.sort_unstable();
    assert_eq!(plotted, kept, "run {run_id}: plotted points ≠ kept points");
    for l in left_out.iter().filter(|l| l.metric == "throughput_bps") {
        let named = format!("Throughput of point {} (", points[l.point].index);
        assert!(
            page.contains(&named),
            "run {run_id}: the page does not name {named:?} ({})",
            l.why.reason()
        );
    }
    eprintln!(
        "run {run_id}: the report plots {} points and names {} left out",
        kept.len(),
        left_out.len()
    );
}
