//! The CPU part of `tcplab probes` as text: each sampled trial's time per
//! layer, block and function for its sender and receiver, checked against
//! the engine's CPU time; and over the run's trials, Huang & Chen's
//! function block table with the per-packet / per-byte fit.

use analysis::layers::Block;
use analysis::trial_cost::{per, SideFit, TrialCpu};
use record::ThreadRole;

/// Text for one sampled trial.
pub fn trial_text(t: &TrialCpu) -> String {
    let a = &t.attribution;
    let mut s = format!(
        "  CPU samples ({}, layer table v{}, block table v{}): {} samples, {:.0}% of busy time hit directly\n",
        a.clock,
        a.layer_table_version,
        a.block_table_version,
        a.samples,
        a.coverage * 100.0
    );
    for side in &t.sides {
        s += &format!(
            "  {}: {:.3} CPU-s attributed, engine measured {:.3} ({:+.1}%); {:.2} µs per segment, {:.3} µs per KB\n",
            side.role.name(),
            side.attributed_cpu_s,
            side.engine_cpu_s,
            (side.ratio - 1.0) * 100.0,
            side.us_per_segment,
            side.us_per_kb
        );
    }
    for r in &a.roles {
        if matches!(
            r.role,
            ThreadRole::Idle | ThreadRole::Other | ThreadRole::Tcplab
        ) && r.cpu_s < 0.01
        {
            continue;
        }
        s += &format!("  {:<9} {:>7.3} s  layers:", r.role.name(), r.cpu_s);
        for l in &r.layers {
            if l.share >= 0.005 {
                s += &format!(" {} {:.1}%", l.name, l.share * 100.0);
            }
        }
        s += "\n";
        if matches!(r.role, ThreadRole::Sender | ThreadRole::Receiver) {
            s += &format!("  {:<9} {:>9}  blocks:", "", "");
            for b in &r.blocks {
                if b.share >= 0.005 {
                    s += &format!(" {} {:.1}%", b.name, b.share * 100.0);
                }
            }
            s += "\n";
            s += &format!("  {:<9} {:>9}  top:", "", "");
            for f in r.functions.iter().take(6) {
                s += &format!(
                    " {} ({}) {:.1}%",
                    f.function,
                    f.layer.name(),
                    f.share * 100.0
                );
            }
            s += "\n";
        }
    }
    s
}

/// The function block table over the run's sampled trials (µs per data
/// segment per block, Huang & Chen Table 1) and the fits.
pub fn run_text(trials: &[TrialCpu], fits: &[SideFit]) -> String {
    let mut s = String::new();
    for role in [ThreadRole::Sender, ThreadRole::Receiver] {
        let blocks: Vec<Block> = Block::ALL
            .into_iter()
            .filter(|b| {
                trials
                    .iter()
                    .filter_map(|t| t.attribution.role(role))
                    .any(|a| a.block_s(*b) > 0.0)
            })
            .collect();
        if blocks.is_empty() {
            continue;
        }
        s += &format!("function blocks, {} (µs per data segment):\n", role.name());
        s += &format!("  {:<6} {:<28}", "trial", "point");
        for b in &blocks {
            s += &format!(" {:>12}", b.name());
        }
        s += &format!(" {:>12}\n", "total");
        for t in trials {
            let (Some(a), Some(side)) = (
                t.attribution.role(role),
                t.sides.iter().find(|x| x.role == role),
            ) else {
                continue;
            };
            s += &format!("  {:<6} {:<28}", t.seq, t.point);
            for b in &blocks {
                s += &format!(" {:>12.3}", per(a.block_s(*b) * 1e6, side.segments));
            }
            s += &format!(" {:>12.3}\n", side.us_per_segment);
        }
    }
    for f in fits {
        match &f.total {
            Ok(fit) => {
                s += &format!(
                    "{} CPU = {} + {} (R² {:.3}, rms error {:.1}%, {} trials)\n",
                    f.role.name(),
                    report::measure(
                        fit.per_packet_us,
                        Some(fit.per_packet_se_us),
                        report::Unit::Fixed("µs per packet")
                    ),
                    report::measure(
                        fit.per_byte_ns,
                        Some(fit.per_byte_se_ns),
                        report::Unit::Fixed("ns per byte")
                    ),
                    fit.r2,
                    fit.rms_rel_error * 100.0,
                    fit.n
                );
                for (b, r) in &f.blocks {
                    if let Ok(bf) = r {
                        s += &format!(
                            "  {:<13} {:>8.3} µs/packet {:>9.4} ns/byte (R² {:.3})\n",
                            b, bf.per_packet_us, bf.per_byte_ns, bf.r2
                        );
                    }
                }
            }
            Err(e) => s += &format!("{}: no per-packet/per-byte fit: {e}\n", f.role.name()),
        }
    }
    s
}
