//! `tcplab compare`: stored runs side by side on one metric, in the terminal
//! and, with `--out`, as an HTML report with its data (built by the
//! `sections` crate).

use crate::cli::CompareArgs;
use crate::report_files::{check_out, write};
use crate::store_access::resolve;
use crate::usage::usage;
use record::Store;
use report::DataFile;
use sections::compare::{compare_text, Comparison, RunPoints};
use sections::compare_html::compare_report;
use sections::metrics::{known_metric, test_of};
use std::process::ExitCode;

/// Runs `tcplab compare`.
pub fn compare(store: Store, a: CompareArgs) -> anyhow::Result<ExitCode> {
    if a.runs.len() < 2 {
        return Err(usage(format!(
            "compare needs at least two runs, got {}",
            a.runs.len()
        )));
    }
    if let Some(out) = &a.out {
        check_out(out)?;
    }
    let mut runs: Vec<RunPoints> = Vec::new();
    for spec in &a.runs {
        let id = resolve(&store, spec)?;
        let run = store.load_run(id)?;
        let points = analysis::summarize_run(&run);
        runs.push((run, points));
    }
    let test = test_of(&runs[0].1);
    let key = a
        .metric
        .clone()
        .unwrap_or_else(|| test.primary_metric().to_string());
    if !runs
        .iter()
        .any(|(_, p)| p.iter().any(|x| x.metrics.contains_key(&key)))
    {
        return Err(usage(format!("no run has the metric {key:?}")));
    }
    let m = known_metric(&key);
    let varying: Vec<Vec<String>> = runs
        .iter()
        .map(|(_, p)| sections::terminal::varying_factors(p))
        .collect();
    let cmp = Comparison::new(&runs, &varying, &key);
    let table = cmp.table(&runs, m);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cmp.json(&runs))?);
    } else {
        print!("{}", compare_text(&runs, &cmp, &table));
    }

    if let Some(out) = &a.out {
        let rep = compare_report(&runs, &cmp, table, m);
        let mut json = serde_json::to_vec_pretty(
            &runs
                .iter()
                .map(|(r, p)| sections::run_json::run_json(r, p, false))
                .collect::<Vec<_>>(),
        )?;
        json.push(b'\n');
        let data = vec![
            DataFile::new(
                "csv",
                "the comparison: one row per point and run",
                cmp.csv(&runs),
            ),
            DataFile::new("json", "each run with its per-point summaries", json),
        ];
        let w = write(&rep, out, data)?;
        // With --json, stdout stays one JSON document: the files go to stderr.
        let say = |l: String| {
            if a.json {
                eprintln!("tcplab: {l}");
            } else {
                println!("{l}");
            }
        };
        if !a.json {
            println!();
        }
        say(format!("report: {}", w.html.display()));
        for d in &w.data {
            say(format!("data:   {}", d.display()));
        }
    }
    Ok(ExitCode::SUCCESS)
}
