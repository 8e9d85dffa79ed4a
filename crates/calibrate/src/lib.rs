//! `calibrate`: measures the host for tcplab (`tcplab calibrate`), the
//! lmbench-style numbers the studies' models need: memory copy bandwidth in
//! cache and in DRAM, Internet checksum bandwidth (the RFC 1071 loop and a
//! fast one), null system call and context switch latency, and a CPU score
//! from a fixed integer workload (Markatos' SPECint stand-in).

#![warn(missing_docs)]

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

/// Runs every measurement `reps` times; `progress` is told what runs.
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
    let mut run = |what: &str,
                   unit_name: &str,
                   f: &mut dyn FnMut() -> Result<f64, CalibrateError>|
     -> Result<Measured, CalibrateError> {
        progress(what);
        let mut v = Vec::with_capacity(reps);
        for _ in 0..reps {
            if interrupted() {
                return Err(CalibrateError::Interrupted);
            }
            v.push(f()?);
        }
        Ok(measured(&v, unit_name))
    };
    let dram = copy::dram_size();
    let copy_cache = run("memory copy in cache (32 KiB)", "B/s", &mut || {
        Ok(copy::copy_bandwidth(32 << 10, unit))
    })?;
    let copy_dram = run(
        &format!("memory copy in DRAM ({} MiB)", dram >> 20),
        "B/s",
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
    let checksum_rfc1071 = run("checksum, RFC 1071 loop (64 KiB)", "B/s", &mut || {
        ck(checksum_rfc1071, &buf)
    })?;
    let checksum_fast = run("checksum, fast (64 KiB)", "B/s", &mut || {
        ck(checksum_fast, &buf)
    })?;
    let calls = if opts.quick { 200_000 } else { 1_000_000 };
    let null_syscall = run("null system call", "s", &mut || {
        Ok(syscall::null_syscall(calls))
    })?;
    let trips = if opts.quick { 5_000 } else { 20_000 };
    let context_switch = run("context switch (pipe ping-pong)", "s", &mut || {
        ctxswitch::context_switch(trips)
    })?;
    let pipe_overhead = run("pipe write + read", "s", &mut || {
        ctxswitch::pipe_overhead(trips)
    })?;
    let cpu_score = run(
        &format!("CPU score (workload v{})", cpuscore::WORKLOAD_VERSION),
        "1/s",
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
        copy_cache,
        copy_dram,
        checksum_rfc1071,
        checksum_fast,
        null_syscall,
        context_switch,
        pipe_overhead,
        cpu_score,
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
    fn the_time_is_rfc3339() {
        let t = humantime_now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }
}
