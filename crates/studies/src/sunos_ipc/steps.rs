//! Experiment 1's largest step: of the steps between adjacent socket
//! buffer sizes, those that raised throughput beyond the 95% CIs, and the
//! largest of them against the paper's 4 KB → 16 KB; or, when none did,
//! the rise the trials could have missed.

use super::paper::{DEFAULT_BUFFERS, QUADRUPLED_BUFFERS};
use super::report::BufPoint;
use analysis::findings::{differ, size_words};
use report::{measure, Unit};

/// The largest-step finding on `place` over its points in buffer order
/// (throughput in Mbit/s); `None` with fewer than two points.
pub(super) fn largest_step_sentence(place: &str, v: &[&BufPoint]) -> Option<String> {
    if v.len() < 2 {
        return None;
    }
    let rose = v
        .windows(2)
        .filter(|w| {
            w[1].throughput.mean > w[0].throughput.mean
                && differ(&w[0].throughput, &w[1].throughput)
        })
        .map(|w| {
            (
                w[0].size,
                w[1].size,
                w[1].throughput.mean / w[0].throughput.mean,
            )
        })
        .max_by(|x, y| x.2.total_cmp(&y.2));
    Some(match rose {
        Some((a, b, gain)) => format!(
            "On {place}, the largest step is from {} to {} buffers ({}×, beyond the 95% CIs){}.",
            size_words(a),
            size_words(b),
            measure(gain, None, Unit::Plain),
            if a == DEFAULT_BUFFERS.value * 1024.0 && b == QUADRUPLED_BUFFERS.value * 1024.0 {
                ", where the paper found it".to_string()
            } else if a == DEFAULT_BUFFERS.value * 1024.0 && b < QUADRUPLED_BUFFERS.value * 1024.0 {
                // The sweep has sizes between: its step is a part of the paper's.
                format!(
                    ", the first part of the paper's step from {DEFAULT_BUFFERS} KB to \
                     {QUADRUPLED_BUFFERS} KB"
                )
            } else {
                format!("; the paper's was from {DEFAULT_BUFFERS} KB to {QUADRUPLED_BUFFERS} KB")
            }
        ),
        None => {
            let missed = v
                .windows(2)
                .map(|w| {
                    let (x, y) = (w[0].throughput, w[1].throughput);
                    analysis::findings::resolution_of(x.mean, x.ci, y.mean, y.ci)
                })
                .fold(0.0, f64::max);
            format!(
                "On {place}, no step to a larger buffer raised throughput beyond the 95% CIs (a \
                 rise smaller than {} could have gone unseen at a step), where the paper found \
                 its largest from 4 KB to 16 KB.",
                measure(missed * 1e6, None, Unit::Si("bit/s"))
            )
        }
    })
}
