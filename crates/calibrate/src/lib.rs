//! `calibrate`: measures the host for tcplab (`tcplab calibrate`), the
//! lmbench-style numbers the studies' models need: memory copy bandwidth in
//! cache and in DRAM, Internet checksum bandwidth (the RFC 1071 loop and a
//! fast one), null system call and context switch latency, and a CPU score
//! from a fixed integer workload (Markatos' SPECint stand-in).

pub mod checksum;
pub mod copy;
pub mod cpuscore;
pub mod ctxswitch;
pub mod syscall;

pub use checksum::{checksum_fast, checksum_rfc1071};

use record::{HostFacts, HostProfile, Measured, HOST_PROFILE_VERSION};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::time::{Duration, SystemTime};

/// Why calibration failed.
#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    /// A system call failed.
    #[error("{0} failed: {1}")]
    Os(&'static str, std::io::Error),
    /// A helper thread failed.
    #[error("{0}")]
    Thread(String),
    /// Ctrl-C.
    #[error("interrupted")]
    Interrupted,
}

/// How to calibrate.
#[derive(Debug, Clone, Default)]
pub struct CalibrateOptions {
    /// Fewer and shorter repetitions (a few seconds in all).
    pub quick: bool,
}

/// Summarizes repetitions: median, mean, 95% CI half-width.
pub fn measured(values: &[f64], unit: &str) -> Measured {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n.max(1) as f64;
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    let ci95 = if n >= 2 {
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
            .map(|d| d.inverse_cdf(0.975))
            .unwrap_or(f64::NAN);
        t * (var / n as f64).sqrt()
    } else {
        f64::NAN
    };
    Measured {
        median,
        mean,
        ci95,
        n: n as u32,
        unit: unit.to_string(),
    }
}

/// Measures this host: every measurement repeated 7 times (3 with
/// `quick`, each repetition shorter), summarized by [`measured`], about a
/// minute in all (a few seconds with `quick`). `progress` is told each
/// measurement as it starts; `interrupted` is polled before every
/// repetition and stops the calibration with [`CalibrateError::Interrupted`].
/// A profile is returned only when every measurement completed.
pub fn calibrate(
    opts: &CalibrateOptions,
    progress: &mut dyn FnMut(&str),
    interrupted: &dyn Fn() -> bool,
) -> Result<HostProfile, CalibrateError> {
    let (reps, unit) = if opts.quick {
        (3usize, Duration::from_millis(150))
    } else {
        (7usize, Duration::from_millis(500))
    };
    // Runs one measurement `reps` times; its values, in order.
    let mut run = |what: &str,
                   f: &mut dyn FnMut() -> Result<f64, CalibrateError>|
     -> Result<Vec<f64>, CalibrateError> {
        progress(what);
        let mut v = Vec::with_capacity(reps);
        for _ in 0..reps {
            if interrupted() {
                return Err(CalibrateError::Interrupted);
            }
            v.push(f()?);
        }
        Ok(v)
    };
    let dram = copy::dram_size();
    let copy_cache = run("memory copy in cache (32 KiB)", &mut || {
        Ok(copy::copy_bandwidth(32 << 10, unit))
    })?;
    let copy_cache_aliased = run(
        &format!(
            "memory copy in cache, destination {} B past a 4 KiB multiple",
            copy::ALIAS_SKEW
        ),
        &mut || {
            Ok(copy::copy_bandwidth_skewed(
                32 << 10,
                copy::ALIAS_SKEW,
                unit,
            ))
        },
    )?;
    let copy_dram = run(
        &format!("memory copy in DRAM ({} MiB)", dram >> 20),
        &mut || Ok(copy::copy_bandwidth(dram, unit * 2)),
    )?;
    let buf: Vec<u8> = (0..64 << 10).map(|i| (i * 13 + 1) as u8).collect();
    let ck = |f: fn(&[u8]) -> u16, buf: &[u8]| -> Result<f64, CalibrateError> {
        let t0 = std::time::Instant::now();
        let mut bytes = 0u64;
        while t0.elapsed() < unit {
            std::hint::black_box(f(std::hint::black_box(buf)));
            bytes += buf.len() as u64;
        }
        Ok(bytes as f64 / t0.elapsed().as_secs_f64())
    };
    let checksum_rfc1071 = run("checksum, RFC 1071 loop (64 KiB)", &mut || {
        ck(checksum_rfc1071, &buf)
    })?;
    let checksum_fast = run("checksum, fast (64 KiB)", &mut || ck(checksum_fast, &buf))?;
    let calls = if opts.quick { 200_000 } else { 1_000_000 };
    let null_syscall = run("null system call", &mut || Ok(syscall::null_syscall(calls)))?;
    // Each repetition measures the ping-pong, then the pipe alone right
    // after it, so their difference (the switch alone) is paired.
    let trips = if opts.quick { 5_000 } else { 20_000 };
    let mut pipe_overhead = Vec::with_capacity(reps);
    let context_switch = run(
        "context switch (pipe ping-pong) and the pipe alone",
        &mut || {
            let switch = ctxswitch::context_switch(trips)?;
            pipe_overhead.push(ctxswitch::pipe_overhead(trips)?);
            Ok(switch)
        },
    )?;
    let context_switch_net: Vec<f64> = context_switch
        .iter()
        .zip(&pipe_overhead)
        .map(|(s, p)| s - p)
        .collect();
    let cpu_score = run(
        &format!("CPU score (workload v{})", cpuscore::WORKLOAD_VERSION),
        &mut || Ok(cpuscore::cpu_score(unit * 2)),
    )?;
    let host = HostFacts::collect();
    Ok(HostProfile {
        version: HOST_PROFILE_VERSION,
        created_at: humantime_now(),
        hostname: host.hostname,
        cpu_model: host.cpu_model,
        cores: host.cores,
        kernel: host.kernel,
        quick: opts.quick,
        copy_cache: measured(&copy_cache, "B/s"),
        copy_cache_aliased: Some(measured(&copy_cache_aliased, "B/s")),
        copy_dram: measured(&copy_dram, "B/s"),
        checksum_rfc1071: measured(&checksum_rfc1071, "B/s"),
        checksum_fast: measured(&checksum_fast, "B/s"),
        null_syscall: measured(&null_syscall, "s"),
        context_switch: measured(&context_switch, "s"),
        pipe_overhead: measured(&pipe_overhead, "s"),
        context_switch_net: Some(measured(&context_switch_net, "s")),
        cpu_score: measured(&cpu_score, "1/s"),
    })
}

/// RFC 3339 UTC time, seconds precision.
fn humantime_now() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_of_known_values() {
        let m = measured(&[1.0, 2.0, 3.0, 4.0], "s");
        assert_eq!(m.median, 2.5);
        assert_eq!(m.mean, 2.5);
        // t(0.975, 3) = 3.182446, sd = 1.290994, / sqrt(4).
        assert!(
            (m.ci95 - 3.182446 * 1.290994 / 2.0).abs() < 1e-4,
            "{}",
            m.ci95
        );
        assert!(measured(&[5.0], "s").ci95.is_nan());
    }

    #[test]
    fn an_interrupted_calibration_returns_no_profile() {
        let mut seen = Vec::new();
        let r = calibrate(
            &CalibrateOptions { quick: true },
            &mut |what| seen.push(what.to_string()),
            &|| true,
        );
        assert!(matches!(r, Err(CalibrateError::Interrupted)), "{r:?}");
        assert_eq!(seen.len(), 1, "stopped at the first measurement: {seen:?}");
    }

    #[test]
    fn the_time_is_rfc3339() {
        let t = humantime_now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }
}
