//! The load tables' claim (Tables 3–5): which row, if any, three workers
//! beside the sender slowed beyond the 95% confidence intervals.

use super::paper::{LOAD_WRITE, MACII_LOAD_ONE, MACII_LOAD_THREE};
use analysis::findings::{differ, CurvePoint};

/// One row of the load table: its unloaded and loaded measure.
pub(super) struct LoadRow {
    /// "TCP, 160 KB file in 10 B writes".
    pub what: String,
    /// The measure at load 0 (mean, CI half-width).
    pub unloaded: (f64, f64),
    /// The measure at load 3.
    pub loaded: (f64, f64),
    /// Whether a higher value is slower (a delay) rather than faster (a
    /// sender's rate).
    pub higher_is_slower: bool,
}

impl LoadRow {
    /// The slowdown at load 3: loaded over unloaded delay, or unloaded
    /// over loaded rate.
    fn slowdown(&self) -> f64 {
        if self.higher_is_slower {
            self.loaded.0 / self.unloaded.0
        } else {
            self.unloaded.0 / self.loaded.0
        }
    }

    /// Whether load 3 is slower than load 0 beyond both CIs.
    fn slowed(&self) -> bool {
        let p = |(mean, ci): (f64, f64)| CurvePoint {
            x: 0.0,
            mean,
            ci: if ci.is_finite() { ci } else { 0.0 },
        };
        differ(&p(self.unloaded), &p(self.loaded)) && self.slowdown() > 1.0
    }

    /// The smallest change, as a share of the unloaded value, that this
    /// row's trials could have shown (the two CI half-widths).
    fn detectable(&self) -> f64 {
        let ci = |c: f64| if c.is_finite() { c } else { 0.0 };
        (ci(self.unloaded.1) + ci(self.loaded.1)) / self.unloaded.0.abs()
    }
}

/// The sentence: the row slowed most beyond CI, or, if none was, that
/// load changed nothing the trials could see and the smallest change
/// they could have.
pub(super) fn load_claim(rows: &[LoadRow]) -> Option<String> {
    let slowed = rows
        .iter()
        .filter(|r| r.slowed())
        .max_by(|a, b| a.slowdown().total_cmp(&b.slowdown()));
    if let Some(r) = slowed {
        let others = rows.iter().filter(|x| x.slowed()).count() - 1;
        return Some(format!(
            "Three CPU-bound workers beside the sender slowed {} most, beyond the 95% CIs: \
             {:.2}× (delay at load 3 over load 0 for TCP, rate at load 0 over load 3 for \
             UDP); {others} other row{} also slowed beyond CI.",
            r.what,
            r.slowdown(),
            if others == 1 { "" } else { "s" }
        ));
    }
    let widest = rows
        .iter()
        .max_by(|a, b| a.detectable().total_cmp(&b.detectable()))?;
    let tightest = rows
        .iter()
        .min_by(|a, b| a.detectable().total_cmp(&b.detectable()))?;
    Some(format!(
        "Three CPU-bound workers beside the sender slowed no row beyond the 95% CIs (the \
         paper's slowest host shown, the MacII: {}–{}× at {LOAD_WRITE}-byte writes); the \
         smallest change the trials could have shown ranges from {:.0}% ({}) to {:.0}% ({}).",
        MACII_LOAD_ONE.value,
        MACII_LOAD_THREE.value,
        100.0 * tightest.detectable(),
        tightest.what,
        100.0 * widest.detectable(),
        widest.what
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(what: &str, unloaded: (f64, f64), loaded: (f64, f64), delay: bool) -> LoadRow {
        LoadRow {
            what: what.into(),
            unloaded,
            loaded,
            higher_is_slower: delay,
        }
    }

    #[test]
    fn a_slowdown_is_claimed_only_beyond_the_intervals() {
        // 137 ms → 182 ± 134 ms: 1.32× but within CI (this VM's real run).
        let within = [row(
            "TCP, 160 KB file in 512 B writes",
            (0.137, 0.0002),
            (0.182, 0.134),
            true,
        )];
        let s = load_claim(&within).unwrap();
        assert!(s.contains("slowed no row beyond the 95% CIs"), "{s}");
        assert!(s.contains("98%"), "{s}");
        // The same ratio with tight intervals is a slowdown.
        let beyond = [row(
            "TCP, 160 KB file in 512 B writes",
            (0.137, 0.0002),
            (0.182, 0.004),
            true,
        )];
        let s = load_claim(&beyond).unwrap();
        assert!(
            s.contains("slowed TCP, 160 KB file in 512 B writes most, beyond the 95% CIs: 1.33×"),
            "{s}"
        );
    }

    #[test]
    fn a_rate_that_fell_is_a_slowdown_and_one_that_rose_is_not() {
        let fell = [row(
            "UDP, 0.3 s run in 10 B writes",
            (2.0e6, 0.1e6),
            (1.0e6, 0.1e6),
            false,
        )];
        assert!(load_claim(&fell).unwrap().contains("2.00×"));
        let rose = [row(
            "UDP, 0.3 s run in 10 B writes",
            (1.0e6, 0.1e6),
            (2.0e6, 0.1e6),
            false,
        )];
        assert!(load_claim(&rose).unwrap().contains("slowed no row"));
        assert!(load_claim(&[]).is_none());
    }
}
