//! How many ACKs the receiver sent per data segment it received
//! ([`crate::ratio::ACKS_PER_DATA_SEGMENT_RECEIVED`]) with the smallest
//! buffers against the largest (Experiment 1): more or fewer only beyond
//! both 95% CIs over the trials, else the same within them with the
//! smallest difference the trials could have detected; one trial claims
//! nothing.

use super::change::{compare, Change, Estimate};
use super::paper::{ACKS_4K, DEFAULT_BUFFERS};
use analysis::findings::size_words;
use report::{number, Unit};

/// The paper's observation, set beside every claim.
fn paper() -> String {
    format!(
        "the paper: about {}× as many with {DEFAULT_BUFFERS} KB buffers",
        ACKS_4K.value
    )
}

/// The claim on ACKs per data segment on `place`: `small` with buffers of
/// `small_size` bytes against `large` with `large_size`.
pub(super) fn ack_ratio_sentence(
    place: &str,
    (small_size, small): (f64, Estimate),
    (large_size, large): (f64, Estimate),
) -> String {
    let ratio = |r: f64| format!("{}×", number(r, Unit::Plain));
    let paper = paper();
    let head = format!(
        "On {place}, the receiver sent {} ACKs per data segment it received with {} buffers and {} with {}",
        small.words(Unit::Plain),
        size_words(small_size),
        large.words(Unit::Plain),
        size_words(large_size)
    );
    match compare(&large, &small) {
        Change::Raised { ratio: r } => format!(
            "{head}: {} as many with the smaller buffers, beyond the 95% CIs ({paper}).",
            ratio(r)
        ),
        Change::Lowered { ratio: r } => format!(
            "{head}: {} as many with the smaller buffers, fewer beyond the 95% CIs, unlike {paper}.",
            ratio(r)
        ),
        Change::Unchanged { detectable } => format!(
            "{head}: the same within the 95% CIs; a difference smaller than {} ACKs per segment \
             could not have been seen ({paper}).",
            number(detectable, Unit::Plain)
        ),
        Change::TooFewTrials => format!(
            "{head}: with one trial on a side there is no CI, so no difference is claimed \
             ({paper})."
        ),
    }
}
