//! `tcplab calibrate`: measures this host (memory copy, checksum, system
//! call and context switch latency, a CPU score), stores the profile that
//! later runs reference, and prints it; `--show` prints a stored one.

use crate::cli::CalibrateArgs;
use crate::usage::usage;
use record::{HostProfile, Measured, Store, StoreError};
use report::{measure, Table, Unit};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Runs `tcplab calibrate`.
pub fn calibrate(
    mut store: Store,
    a: CalibrateArgs,
    interrupt: Arc<AtomicBool>,
) -> anyhow::Result<ExitCode> {
    if let Some(which) = &a.show {
        let (id, p) = load(&store, which)?;
        print(id, &p, a.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (id, p) = match measure_and_store(&mut store, a.quick, &interrupt, a.json) {
        Ok(r) => r,
        Err(e)
            if matches!(
                e.downcast_ref(),
                Some(calibrate::CalibrateError::Interrupted)
            ) =>
        {
            eprintln!("tcplab: calibration interrupted; nothing stored");
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(e),
    };
    print(id, &p, a.json)?;
    Ok(ExitCode::SUCCESS)
}

/// Calibrates and stores the profile; progress on stderr unless `quiet`.
pub fn measure_and_store(
    store: &mut Store,
    quick: bool,
    interrupt: &Arc<AtomicBool>,
    quiet: bool,
) -> anyhow::Result<(i64, HostProfile)> {
    let mut progress = |what: &str| {
        if !quiet {
            eprintln!("tcplab: calibrating: {what}");
        }
    };
    let stop = || interrupt.load(Ordering::SeqCst);
    let p = calibrate::calibrate(&calibrate::CalibrateOptions { quick }, &mut progress, &stop)?;
    // Stored only once every measurement is in: nothing partial.
    let id = store.add_host_profile(&p)?;
    Ok((id, p))
}

fn load(store: &Store, which: &str) -> anyhow::Result<(i64, HostProfile)> {
    if which == "latest" {
        let host = record::HostFacts::collect().hostname;
        return store.latest_host_profile(&host)?.ok_or_else(|| {
            usage(format!(
                "no host profile of {host} stored yet (run tcplab calibrate)"
            ))
        });
    }
    let id: i64 = which
        .parse()
        .map_err(|_| usage(format!("{which:?} is not a profile id or latest")))?;
    match store.load_host_profile(id) {
        Ok(p) => Ok((id, p)),
        Err(StoreError::NoSuchProfile(_)) => Err(usage(format!("no host profile with id {id}"))),
        Err(e) => Err(e.into()),
    }
}

/// The profile as a table: one row per measurement.
pub fn profile_table(p: &HostProfile) -> Table {
    let mut t = Table::new(["measurement", "median", "mean ± 95% CI", "n"]);
    for (name, m, unit) in rows(p) {
        t.row([
            name.to_string(),
            measure(m.median, None, unit),
            measure(m.mean, Some(m.ci95), unit),
            m.n.to_string(),
        ]);
    }
    t
}

fn rows(p: &HostProfile) -> Vec<(&'static str, &Measured, Unit)> {
    let mut rows = vec![
        ("memory copy, in cache", &p.copy_cache, Unit::Si("B/s")),
        ("memory copy, DRAM", &p.copy_dram, Unit::Si("B/s")),
        (
            "checksum, RFC 1071 loop",
            &p.checksum_rfc1071,
            Unit::Si("B/s"),
        ),
        ("checksum, fast", &p.checksum_fast, Unit::Si("B/s")),
        ("null system call", &p.null_syscall, Unit::Si("s")),
        (
            "context switch (pipe ping-pong)",
            &p.context_switch,
            Unit::Si("s"),
        ),
        ("pipe write + read alone", &p.pipe_overhead, Unit::Si("s")),
        ("CPU score (iterations/s)", &p.cpu_score, Unit::Plain),
    ];
    if let Some(net) = &p.context_switch_net {
        rows.insert(7, ("context switch, pipe subtracted", net, Unit::Si("s")));
    }
    if let Some(aliased) = &p.copy_cache_aliased {
        rows.insert(
            1,
            (
                "memory copy, in cache, 4K-aliased",
                aliased,
                Unit::Si("B/s"),
            ),
        );
    }
    rows
}

fn print(id: i64, p: &HostProfile, json: bool) -> anyhow::Result<()> {
    if json {
        let mut v = serde_json::to_value(p)?;
        v["id"] = id.into();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "host profile {id}: {} · {} × {} · {}{}",
        p.hostname,
        p.cores,
        p.cpu_model,
        p.created_at,
        if p.quick { " (--quick)" } else { "" }
    );
    println!("{}", report::text::table_text(&profile_table(p)));
    println!(
        "fast checksum {:.1}× the RFC 1071 loop; copy in cache {:.1}× DRAM",
        p.checksum_fast.median / p.checksum_rfc1071.median,
        p.copy_cache.median / p.copy_dram.median
    );
    if let Some(note) = aliasing_note(p) {
        println!("note: {note}");
    }
    Ok(())
}

/// A line when this CPU copies much slower with the destination just past a
/// 4 KiB multiple from the source: such copies happen inside the kernel's
/// socket reads and writes, so throughput then depends on buffer placement.
pub fn aliasing_note(p: &HostProfile) -> Option<String> {
    let aliased = p.copy_cache_aliased.as_ref()?;
    let slowdown = p.copy_cache.median / aliased.median;
    (slowdown >= 2.0).then(|| {
        format!(
            "Copies whose destination lies {} bytes past a 4 KiB multiple from the source \
             run {slowdown:.0}× slower on this CPU; socket throughput can then depend on where \
             buffers sit",
            calibrate::copy::ALIAS_SKEW
        )
    })
}
