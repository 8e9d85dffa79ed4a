//! `tcplab calibrate`: measures this host (memory copy, checksum, system
//! call and context switch latency, a CPU score), stores the profile that
//! later runs reference, and prints it; `--show` prints a stored one.

use crate::cli::CalibrateArgs;
use crate::usage::usage;
use record::{HostProfile, Store, StoreError};
use sections::host::{aliasing_note, profile_table};
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
    let (id, p) = match measure_and_store(&mut store, a.quick, &interrupt, a.json || a.quiet) {
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
