//! Imposing a link with the kernel's qdiscs: tbf or htb for rate, netem for
//! delay, jitter, loss and reordering (where the kernel has it).

use crate::cmd;
use crate::error::LabError;
use crate::link::{LinkSpec, Mechanism};

/// True if this kernel offers the netem qdisc (tried on a dummy device in a
/// scratch namespace, so nothing of the host is touched).
pub fn netem_available() -> bool {
    static CACHE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CACHE.get_or_init(|| {
        let ns = format!("tcplab-probe{:06x}", rand::random::<u32>() & 0xff_ffff);
        if cmd::ip(None, &["netns", "add", &ns]).is_err() {
            return false;
        }
        let ok = cmd::ip(Some(&ns), &["link", "add", "tcplab-p", "type", "dummy"]).is_ok()
            && cmd::tc(
                &ns,
                &[
                    "qdisc", "add", "dev", "tcplab-p", "root", "netem", "delay", "1ms",
                ],
            )
            .is_ok();
        let _ = cmd::ip(None, &["netns", "del", &ns]);
        ok
    })
}

/// Bytes a token bucket may send at once: two frames, or 1 ms at the rate.
/// Tokens beyond the burst are lost while the qdisc's timer is late, so a
/// bucket of only a frame or two runs below its rate on a host whose timers
/// fire late (a busy or virtual machine). A full bucket also lets a
/// transfer's first burst leave at the speed of the host: at 5 ms, a 256 KB
/// transfer over lan100 measured 122 Mbit/s. 1 ms bounds that to 12.5 KB at
/// 100 Mbit/s and still kept the long-run rate within 1% on the development
/// VM (tests/lab.rs holds every mechanism to 5%).
fn burst_bytes(spec: &LinkSpec, rate: u64) -> u64 {
    (2 * u64::from(spec.mtu + 14)).max(rate / 8 / 1000)
}

/// The rate and token-bucket burst a rate-only qdisc needs.
fn rate_and_burst(spec: &LinkSpec, qdisc: &str) -> Result<(u64, String), LabError> {
    let rate = spec
        .rate_bps
        .ok_or_else(|| LabError::Spec(format!("{qdisc} needs a rate")))?;
    Ok((rate, burst_bytes(spec, rate).to_string()))
}

/// The size table that makes a rate qdisc charge each frame what it takes
/// of an Ethernet line (`stab overhead 24 mpu 84`: preamble, FCS and gap,
/// and the 60-byte minimum frame); nothing when the link has no framing.
fn size_table(spec: &LinkSpec) -> Vec<String> {
    if spec.framing_bytes == 0 {
        return Vec::new();
    }
    vec![
        "stab".into(),
        "overhead".into(),
        spec.framing_bytes.to_string(),
        "mpu".into(),
        spec.wire_bytes(0).to_string(),
    ]
}

/// `tc qdisc add dev DEV root handle 1: [stab …] KIND ARGS…`.
fn add_root(ns: &str, dev: &str, spec: &LinkSpec, kind_and_args: &[&str]) -> Result<(), LabError> {
    let stab = size_table(spec);
    let mut args: Vec<&str> = vec!["qdisc", "add", "dev", dev, "root", "handle", "1:"];
    args.extend(stab.iter().map(String::as_str));
    args.extend_from_slice(kind_and_args);
    cmd::tc(ns, &args)?;
    Ok(())
}

/// Applies `spec` with `mech` as the root qdisc on `dev`'s egress in `ns`.
pub fn apply(ns: &str, dev: &str, spec: &LinkSpec, mech: Mechanism) -> Result<(), LabError> {
    let limit_bytes = (u64::from(spec.queue_frames) * u64::from(spec.mtu + 14)).to_string();
    match mech {
        Mechanism::Tbf => {
            let (rate, burst) = rate_and_burst(spec, "tbf")?;
            add_root(
                ns,
                dev,
                spec,
                &[
                    "tbf",
                    "rate",
                    &format!("{rate}bit"),
                    "burst",
                    &burst,
                    "limit",
                    &limit_bytes,
                ],
            )?;
        }
        Mechanism::Htb => {
            let (rate, burst) = rate_and_burst(spec, "htb")?;
            let r = format!("{rate}bit");
            add_root(ns, dev, spec, &["htb", "default", "1"])?;
            cmd::tc(
                ns,
                &[
                    "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate",
                    &r, "ceil", &r, "burst", &burst, "cburst", &burst,
                ],
            )?;
            cmd::tc(
                ns,
                &[
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "parent",
                    "1:1",
                    "handle",
                    "10:",
                    "pfifo",
                    "limit",
                    &spec.queue_frames.to_string(),
                ],
            )?;
        }
        Mechanism::Netem => {
            let mut args: Vec<String> = vec!["netem".into(), "limit".into()];
            args.push(spec.queue_frames.to_string());
            args.extend([
                "delay".into(),
                format!("{}us", (spec.delay_s * 1e6).round()),
            ]);
            if spec.jitter_s > 0.0 {
                args.push(format!("{}us", (spec.jitter_s * 1e6).round()));
            }
            if spec.loss > 0.0 {
                args.extend(["loss".into(), format!("{}%", spec.loss * 100.0)]);
            }
            if spec.reorder > 0.0 {
                args.extend(["reorder".into(), format!("{}%", spec.reorder * 100.0)]);
            }
            if let Some(rate) = spec.rate_bps {
                args.extend(["rate".into(), format!("{rate}bit")]);
            }
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            add_root(ns, dev, spec, &refs)?;
        }
        Mechanism::Emulator | Mechanism::None | Mechanism::Auto => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_qdiscs_charge_each_frame_its_framing() {
        let e = LinkSpec::parse("ether10").unwrap();
        assert_eq!(size_table(&e), ["stab", "overhead", "24", "mpu", "84"]);
        let plain = LinkSpec::parse("ether10,overhead=0").unwrap();
        assert!(size_table(&plain).is_empty());
    }
}
