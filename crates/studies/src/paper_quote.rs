//! A number quoted from a paper, with where it is printed and a short
//! excerpt of the paper's text that holds it (issue 30, rule 6: "Quote the
//! paper exactly"). Each study's `paper.rs` declares its quotes with
//! [`paper_quotes!`]; the report's sentences take the numbers from there,
//! and a test checks every excerpt holds its number and appears in the
//! paper's text.

use std::fmt;

/// One number of a paper, as the paper prints it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperQuote {
    /// The number.
    pub value: f64,
    /// The number as the paper writes it: "7.5", "512,000", "0.105", or
    /// one of a few words ("double", "half").
    pub written: &'static str,
    /// Its unit as the paper means it ("Mbit/s", "%", "µs"; "" for none).
    pub unit: &'static str,
    /// Where the paper prints it: "Table 2", "§3.4", "Fig. 5".
    pub source: &'static str,
    /// A short excerpt of the paper's text that holds the number, copied
    /// verbatim (whitespace aside: the papers' text runs words together).
    pub excerpt: &'static str,
}

impl fmt::Display for PaperQuote {
    /// The number as the paper writes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.written)
    }
}

/// Declares a study's paper file and its quotes: one `pub(crate) const`
/// per quote, and `QUOTES`, every one of them, for the test.
macro_rules! paper_quotes {
    (file: $file:literal; $($(#[$m:meta])* $name:ident = ($value:expr, $written:literal, $unit:literal, $source:literal, $excerpt:literal);)*) => {
        /// The paper's text, a file of `shared/papers`.
        #[cfg_attr(not(test), allow(dead_code))]
        pub(crate) const PAPER_FILE: &str = $file;
        $(
            $(#[$m])*
            pub(crate) const $name: $crate::paper_quote::PaperQuote = $crate::paper_quote::PaperQuote {
                value: $value,
                written: $written,
                unit: $unit,
                source: $source,
                excerpt: $excerpt,
            };
        )*
        /// Every quote above, for the test against the paper.
        #[cfg_attr(not(test), allow(dead_code))]
        pub(crate) const QUOTES: &[(&str, $crate::paper_quote::PaperQuote)] = &[$((stringify!($name), $name)),*];
    };
}
pub(crate) use paper_quotes;

/// Whether `written` is how the paper writes `value`: the digits, with
/// thousands commas dropped, parse to the value.
fn written_is(written: &str, value: f64) -> bool {
    let digits: String = written.chars().filter(|c| *c != ',').collect();
    let word = WORDS.iter().find(|w| w.0 == written).map(|w| w.1);
    word.or(digits.parse::<f64>().ok())
        .is_some_and(|v| (v - value).abs() <= 1e-9 * value.abs().max(1.0))
}

/// Numbers the papers write as words.
const WORDS: [(&str, f64); 7] = [
    ("double", 2.0),
    ("doubling", 2.0),
    ("quadrupling", 4.0),
    ("twice", 2.0),
    ("half", 0.5),
    ("three", 3.0),
    ("eight", 8.0),
];

/// Whether `needle` occurs in `hay` as a whole number: no digit, decimal
/// point or comma-joined digit right before or after it (a word: no
/// letter right before or after it).
fn holds_number(hay: &str, needle: &str) -> bool {
    let letter = |c: Option<char>| c.is_some_and(char::is_alphabetic);
    if needle.chars().all(char::is_alphabetic) {
        return hay.match_indices(needle).any(|(i, _)| {
            !letter(hay[..i].chars().next_back()) && !letter(hay[i + needle.len()..].chars().next())
        });
    }
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    let joins = |c: Option<char>| c.is_some_and(|c| c == '.' || c == ',');
    hay.match_indices(needle).any(|(i, _)| {
        let mut before = hay[..i].chars().rev();
        let mut after = hay[i + needle.len()..].chars();
        let (b1, b2) = (before.next(), before.next());
        let (a1, a2) = (after.next(), after.next());
        let number_before = digit(b1) || (joins(b1) && digit(b2));
        let number_after = digit(a1) || (joins(a1) && digit(a2));
        !(number_before || number_after)
    })
}

/// What is wrong with a quote on its own: an empty source or excerpt, a
/// `written` that is not its value, or an excerpt without the number.
pub fn check_vendored(name: &str, q: &PaperQuote) -> Result<(), String> {
    if q.source.trim().is_empty() {
        return Err(format!("{name}: no source (table, figure or section)"));
    }
    if q.excerpt.trim().is_empty() {
        return Err(format!("{name}: no excerpt"));
    }
    if !written_is(q.written, q.value) {
        return Err(format!(
            "{name}: {:?} is not how the paper writes {}",
            q.written, q.value
        ));
    }
    if !holds_number(q.excerpt, q.written) {
        return Err(format!(
            "{name}: the excerpt does not hold {:?}: {:?}",
            q.written, q.excerpt
        ));
    }
    Ok(())
}

/// A paper's text with the whitespace dropped, each character marked
/// optional when it is a hyphen that ends a line (the PDF's hyphenation).
fn squeeze_paper(text: &str) -> Vec<(char, bool)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        if c.is_whitespace() {
            continue;
        }
        let line_end = c == '-'
            && chars[i + 1..]
                .iter()
                .take_while(|n| n.is_whitespace())
                .any(|n| *n == '\n');
        out.push((c, line_end));
    }
    out
}

/// How many characters of `want` match the paper from `start`.
fn match_len(paper: &[(char, bool)], start: usize, want: &[char]) -> usize {
    let (mut p, mut w) = (start, 0);
    while w < want.len() && p < paper.len() {
        let (c, optional) = paper[p];
        if c == want[w] {
            p += 1;
            w += 1;
        } else if optional {
            p += 1;
        } else {
            break;
        }
    }
    w
}

/// Whether the excerpt appears in the paper's text (whitespace dropped,
/// line-end hyphens optional, case kept); if not, the paper's text
/// nearest to it: where the longest start of the excerpt matches.
pub fn find_in_paper(paper: &str, excerpt: &str) -> Result<(), String> {
    let squeezed = squeeze_paper(paper);
    let want: Vec<char> = excerpt.chars().filter(|c| !c.is_whitespace()).collect();
    let (mut best, mut at) = (0, 0);
    for start in 0..squeezed.len() {
        let n = match_len(&squeezed, start, &want);
        if n == want.len() {
            return Ok(());
        }
        if n > best {
            (best, at) = (n, start);
        }
    }
    let near: String = squeezed[at..(at + want.len() + 20).min(squeezed.len())]
        .iter()
        .map(|c| c.0)
        .collect();
    Err(format!(
        "nearest (whitespace dropped, first {best} of {} characters match): {near:?}",
        want.len()
    ))
}

/// The papers' directory: `$TCPLAB_PAPERS`, else `shared/papers` beside
/// the workspace; `None` when neither exists (a clean clone).
pub fn papers_dir() -> Option<std::path::PathBuf> {
    let env = std::env::var_os("TCPLAB_PAPERS").map(std::path::PathBuf::from);
    let beside = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/papers");
    env.into_iter().chain([beside]).find(|d| d.is_dir())
}

#[cfg(test)]
#[path = "paper_quote_tests.rs"]
mod tests;
