//! Fig. 4's claim at one write size: whether another sending interface
//! beats write() beyond the 95% CIs, and by how much; else that none does,
//! with the smallest difference the trials could have shown.

use analysis::findings::{differ, size_words, CurvePoint};
use report::{measure, Unit};

/// A throughput in Mbit/s (with its CI when there is one) in words.
fn mbit(p: &CurvePoint) -> String {
    measure(
        p.mean * 1e6,
        p.ci.is_finite().then_some(p.ci * 1e6),
        Unit::Si("bit/s"),
    )
}

/// The claim at write size `write_size` from write()'s throughput `write`
/// and the other interfaces' (`others`, name and throughput, Mbit/s).
pub(super) fn api_sentence(
    write_size: f64,
    write: &CurvePoint,
    others: &[(&str, CurvePoint)],
) -> String {
    let at = format!("At {} writes", size_words(write_size));
    let best_beating = others
        .iter()
        .filter(|(_, p)| p.mean > write.mean && differ(p, write))
        .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean));
    if let Some((name, p)) = best_beating {
        return format!(
            "{at} {name} beats write() beyond the 95% CIs: {}× ({} against {}).",
            measure(p.mean / write.mean, None, Unit::Plain),
            mbit(p),
            mbit(write)
        );
    }
    let closest = others.iter().max_by(|a, b| a.1.mean.total_cmp(&b.1.mean));
    match closest {
        Some((name, p)) => {
            let detectable = analysis::findings::resolution_of(p.mean, p.ci, write.mean, write.ci);
            format!(
                "{at} no interface beats write() ({}) beyond the 95% CIs: a difference smaller \
                 than {} from the nearest, {name} ({}), could not have been seen.",
                mbit(write),
                measure(detectable * 1e6, None, Unit::Si("bit/s")),
                mbit(p)
            )
        }
        None => format!("{at} only write() was measured ({}).", mbit(write)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(mean: f64, ci: f64) -> CurvePoint {
        CurvePoint {
            x: 8192.0,
            mean,
            ci,
        }
    }

    #[test]
    fn an_interface_beats_write_only_beyond_the_cis() {
        let s = api_sentence(
            8192.0,
            &p(1000.0, 20.0),
            &[("sendmsg", p(1010.0, 20.0)), ("sendfile", p(1500.0, 30.0))],
        );
        assert_eq!(
            s,
            "At 8 KB writes sendfile beats write() beyond the 95% CIs: 1.50× (1.50 ± 0.03 Gbit/s \
             against 1.00 ± 0.02 Gbit/s)."
        );
        // The same means, wide CIs: no claim, with what could be seen.
        let s = api_sentence(8192.0, &p(1000.0, 300.0), &[("sendfile", p(1500.0, 300.0))]);
        assert!(
            s.starts_with("At 8 KB writes no interface beats write() (1.00 ± 0.30 Gbit/s) beyond the 95% CIs: a difference smaller than 600 Mbit/s from the nearest, sendfile (1.50 ± 0.30 Gbit/s), could not have been seen."),
            "{s}"
        );
        // Slower than write() beyond CI is no beating either.
        let s = api_sentence(8192.0, &p(1000.0, 20.0), &[("zerocopy", p(500.0, 20.0))]);
        assert!(s.contains("no interface beats write()"), "{s}");
    }
}
