use super::*;

/// A study's name, paper file and quotes.
type StudyQuotes = (
    &'static str,
    &'static str,
    &'static [(&'static str, PaperQuote)],
);

/// Every study's paper file and quotes.
fn studies() -> [StudyQuotes; 5] {
    [
        (
            "abrams91",
            crate::abrams91::paper::PAPER_FILE,
            crate::abrams91::paper::QUOTES,
        ),
        (
            "markatos02",
            crate::markatos02::paper::PAPER_FILE,
            crate::markatos02::paper::QUOTES,
        ),
        (
            "huang_chen",
            crate::huang_chen::paper::PAPER_FILE,
            crate::huang_chen::paper::QUOTES,
        ),
        (
            "sunos_ipc",
            crate::sunos_ipc::paper::PAPER_FILE,
            crate::sunos_ipc::paper::QUOTES,
        ),
        (
            "openlink92",
            crate::openlink92::paper::PAPER_FILE,
            crate::openlink92::paper::QUOTES,
        ),
    ]
}

const GOOD: PaperQuote = PaperQuote {
    value: 512000.0,
    written: "512,000",
    unit: "B",
    source: "Table 5",
    excerpt: "a file of 512,000 bytes",
};

#[test]
fn the_checker_takes_a_good_quote_and_refuses_bad_ones() {
    assert_eq!(check_vendored("good", &GOOD), Ok(()));
    let bad = [
        PaperQuote {
            source: " ",
            ..GOOD
        },
        PaperQuote {
            excerpt: "",
            ..GOOD
        },
        // The value is not what is written.
        PaperQuote {
            value: 51200.0,
            ..GOOD
        },
        // Written as the paper does not write it.
        PaperQuote {
            written: "512000",
            ..GOOD
        },
        // The excerpt holds the number only inside a longer one.
        PaperQuote {
            value: 12.0,
            written: "12",
            ..GOOD
        },
        PaperQuote {
            value: 0.105,
            written: "0.105",
            excerpt: "Const was 0.1055",
            ..GOOD
        },
        PaperQuote {
            value: 105.0,
            written: "105",
            excerpt: "Const was 0.105",
            ..GOOD
        },
        PaperQuote {
            value: 43.0,
            written: "43",
            excerpt: "about 34% of the bandwidth",
            ..GOOD
        },
    ];
    for (i, q) in bad.iter().enumerate() {
        assert!(
            check_vendored("bad", q).is_err(),
            "bad quote {i} passed: {q:?}"
        );
    }
    let pct = PaperQuote {
        value: 43.0,
        written: "43",
        excerpt: "about43%of the",
        ..GOOD
    };
    assert_eq!(check_vendored("pct", &pct), Ok(()));
}

#[test]
fn the_paper_search_ignores_whitespace_and_line_end_hyphens_but_not_case() {
    let paper = "The IPC performancemeasured\nwascloseto 9 Mbps which is about43% of the memory\n\
                 bandwidth. Copying 1 kilo-\nbyte takes about 130 micro-\nseconds, memory-\nto-memory.";
    assert_eq!(
        find_in_paper(
            paper,
            "was close to 9 Mbps which is about 43% of the memory bandwidth"
        ),
        Ok(())
    );
    assert_eq!(
        find_in_paper(paper, "Copying 1 kilobyte takes about 130 microseconds"),
        Ok(())
    );
    assert_eq!(find_in_paper(paper, "memory-to-memory"), Ok(()));
    let miss = find_in_paper(paper, "was close to 9 Mbps which is about 34%").unwrap_err();
    assert!(miss.contains("about43%"), "{miss}");
    assert!(find_in_paper(paper, "the ipc performance").is_err());
}

#[test]
fn every_quote_holds_its_number_and_names_its_source() {
    let mut bad = vec![];
    for (study, _, quotes) in studies() {
        assert!(!quotes.is_empty(), "{study} quotes nothing");
        for (name, q) in quotes {
            if let Err(e) = check_vendored(name, q) {
                bad.push(format!("{study}: {e}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Each excerpt against the paper's text, when the papers are here.
#[test]
fn every_excerpt_is_in_its_paper() {
    let Some(dir) = papers_dir() else {
        eprintln!(
            "paper quotes: no papers at $TCPLAB_PAPERS or ../shared/papers beside the workspace: \
             only the vendored excerpts were checked, not against the papers' text"
        );
        return;
    };
    let mut bad = vec![];
    for (study, file, quotes) in studies() {
        let path = dir.join(file);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let extra = if study == "huang_chen" {
            crate::huang_chen::paper::table_rows().to_vec()
        } else {
            vec![]
        };
        let excerpts = quotes.iter().map(|(n, q)| (*n, q.excerpt)).chain(extra);
        for (name, excerpt) in excerpts {
            if let Err(near) = find_in_paper(&text, excerpt) {
                bad.push(format!(
                    "{study}::{name}: {excerpt:?} is not in {}; {near}",
                    path.display()
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
