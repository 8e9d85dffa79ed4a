//! The validity rules in every report of a run: a measure left out (above
//! the line rate, too short an interval over a link, too few datagrams)
//! shows its reason in place of its number in the run report's table, the
//! terminal's and `compare`'s, is never plotted, and the section names it;
//! the same points with possible values are shown and plotted.

use super::*;

/// A point over lan1g (line rate 1 Gbit/s stored with each trial) whose
/// three trials ran at about `bps` from first byte to last in `interval_s`.
fn over_lan1g(write_size: u64, bps: f64, interval_s: f64) -> PointSpec {
    let details = serde_json::json!({"lab": {
        "calibration": {"goodput_bps": 0.94e9},
        "place": {"link": {"rate_bps": 1e9, "framing_bytes": 24}}
    }});
    PointSpec {
        write_size,
        trials: [0.999, 1.0, 1.001]
            .iter()
            .map(|k| {
                (
                    metrics(&[("throughput_bps", bps * k), ("delay_s", interval_s)]),
                    Extras {
                        details: Some(details.clone()),
                        ..Extras::default()
                    },
                )
            })
            .collect(),
    }
}

/// Four points over lan1g: 8 KB and 64 KB within the line rate over 200 ms;
/// 256 KB at `fast_bps` over 2.1 ms when `short`, else over 200 ms; 1 MB at
/// `fast_bps` over 50 ms.
fn lan1g_run(store: &mut Store, fast_bps: f64, short: bool) -> StoredRun {
    store_run(
        store,
        HOST,
        vec![
            over_lan1g(8192, 0.90e9, 0.2),
            over_lan1g(65536, 0.94e9, 0.2),
            over_lan1g(262144, fast_bps, if short { 0.0021 } else { 0.2 }),
            over_lan1g(1 << 20, fast_bps, 0.05),
        ],
    )
}

fn warnings(s: &Section) -> Vec<&str> {
    s.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Warning(w) => Some(w.as_str()),
            _ => None,
        })
        .collect()
}

/// The x values the run report's throughput figure plots.
fn plotted_sizes(r: &Report) -> Vec<f64> {
    let figs = section(r, "Figures").unwrap();
    let fig = figs
        .figures()
        .find(|f| f.title.starts_with("Throughput"))
        .expect("a throughput figure");
    fig.series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect()
}

#[test]
fn the_run_report_leaves_impossible_rates_out_of_its_table_and_figures() {
    let (_dir, mut store) = store();
    // 2.2 Gbit/s through a 1 Gbit/s link: 256 KB over 2.1 ms, 1 MB above
    // the line rate.
    let run = lan1g_run(&mut store, 2.2e9, true);
    let r = report_of(&store, &run);
    let results = section(&r, "Results").unwrap();
    let t = tables(results)[0];
    let col = t
        .header
        .iter()
        .position(|h| h.starts_with("throughput"))
        .unwrap();
    assert!(t.rows[1][col].starts_with("940"), "{:?}", t.rows[1]);
    assert_eq!(t.rows[2][col], "n/a: 2.1 ms interval");
    assert_eq!(t.rows[3][col], "invalid: above the 1.0 Gbit/s line rate");
    let w = warnings(results);
    assert!(
        w.iter().any(|w| w.starts_with(
            "Throughput of point 2 (write_size=256K) is left out: n/a: the rate would rest on \
             2.1 ms"
        )),
        "{w:?}"
    );
    assert_eq!(plotted_sizes(&r), [8192.0, 65536.0]);
    let w = warnings(section(&r, "Figures").unwrap());
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[0].starts_with("Not plotted: Throughput of point 2 (write_size=256K)"));
    assert!(
        w[1].contains(
            "point 3 (write_size=1M) is left out: invalid: 2.200 ± 0.005 Gbit/s: its mean exceeds"
        ),
        "{w:?}"
    );

    // The same sweep within the line rate, over long enough intervals:
    // every point is in the table and the figure, and nothing is named.
    let run = lan1g_run(&mut store, 0.95e9, false);
    let r = report_of(&store, &run);
    let t = tables(section(&r, "Results").unwrap())[0];
    assert!(t.rows.iter().all(|row| row[col].starts_with('9')), "{t:?}");
    assert_eq!(plotted_sizes(&r), [8192.0, 65536.0, 262144.0, 1048576.0]);
    assert!(warnings(section(&r, "Figures").unwrap()).is_empty());
    assert!(warnings(section(&r, "Results").unwrap()).is_empty());
}

#[test]
fn the_terminal_table_says_why_in_place_of_the_number() {
    let (_dir, mut store) = store();
    let run = lan1g_run(&mut store, 2.2e9, true);
    let points = summaries(&run);
    let varying = vec!["write_size".to_string()];
    let left_out = analysis::validity::left_out(&run.trials, &points);
    let text = crate::terminal::table(TestKind::TcpStream, &points, &varying, &left_out);
    assert!(text.contains("n/a: 2.1 ms interval"), "{text}");
    assert!(
        text.contains("invalid: above the 1.0 Gbit/s line rate"),
        "{text}"
    );
    assert!(!text.contains("2200") && !text.contains("2.20"), "{text}");
    let lines = crate::terminal::left_out_lines(&points, &varying, &left_out);
    assert_eq!(lines.len(), 2, "{lines:?}");

    let run = lan1g_run(&mut store, 0.95e9, false);
    let points = summaries(&run);
    let left_out = analysis::validity::left_out(&run.trials, &points);
    assert!(left_out.is_empty());
    let text = crate::terminal::table(TestKind::TcpStream, &points, &varying, &left_out);
    assert!(text.contains("950 ± 2"), "{text}");
    assert!(!text.contains("n/a") && !text.contains("invalid"), "{text}");
}

#[test]
fn compare_shows_no_ratio_and_plots_nothing_for_a_left_out_point() {
    let (_dir, mut store) = store();
    let good = lan1g_run(&mut store, 0.95e9, false);
    let bad = lan1g_run(&mut store, 2.2e9, true);
    let m = crate::metrics::known_metric("throughput_bps");
    let (runs, cmp) = compared(&store, &[&good, &bad]);
    let t = cmp.table(&runs, m);
    // Row 2 (256 KB): the second run's cell says why, no ratio.
    assert_eq!(t.rows[2][2], "n/a: 2.1 ms interval");
    assert_eq!(t.rows[2][3], "—");
    assert_eq!(t.rows[3][2], "invalid: above the 1.0 Gbit/s line rate");
    // Row 1 (64 KB): both shown, same rate.
    assert_eq!(t.rows[1][3], "1.00×");
    let csv = String::from_utf8(cmp.csv(&runs)).unwrap();
    assert!(csv.lines().next().unwrap().ends_with(",left_out"), "{csv}");
    let flagged: Vec<&str> = csv
        .lines()
        .filter(|l| l.contains("n/a: the rate"))
        .collect();
    assert_eq!(flagged.len(), 1, "{csv}");
    let text = compare_text(&runs, &cmp, &t);
    assert!(
        text.contains(&format!(
            "run {}: Throughput of point 2 (write_size=256K) is left out",
            bad.meta.id
        )),
        "{text}"
    );
    let html = crate::compare_html::compare_report(&runs, &cmp, t, m);
    let side = &html.sections[1];
    let fig = side.figures().next().unwrap();
    assert_eq!(fig.series[0].points.len(), 4, "the valid run: every point");
    assert_eq!(fig.series[1].points.len(), 2, "the other: two left out");
    assert_eq!(warnings(side).len(), 2);

    // Both runs within the line rate: every cell a number, every point drawn.
    let (runs, cmp) = compared(&store, &[&good, &good]);
    let t = cmp.table(&runs, m);
    assert!(t.rows.iter().all(|r| r[3] == "1.00×"), "{:?}", t.rows);
    let html = crate::compare_html::compare_report(&runs, &cmp, t, m);
    let side = &html.sections[1];
    assert!(side
        .figures()
        .next()
        .unwrap()
        .series
        .iter()
        .all(|s| s.points.len() == 4));
    assert!(warnings(side).is_empty());
}
