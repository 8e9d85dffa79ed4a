//! Rendering reports in headless Chromium (Debian's, installed by
//! scripts/setup-debian) and checking a page is self-contained.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Debian's Chromium.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Every value of `attr="…"` in the page.
pub fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let pat = format!("{attr}=\"");
    let mut v = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&pat) {
        let after = &rest[i + pat.len()..];
        let end = after.find('"').unwrap_or(after.len());
        v.push(after[..end].to_string());
        rest = &after[end..];
    }
    v
}

/// What makes the page self-contained: no scripts, no external URLs in
/// src/href, no url() in styles, UTF-8, inline SVG figures.
pub fn assert_self_contained(html: &str, min_svgs: usize) {
    let lower = html.to_lowercase();
    assert!(lower.starts_with("<!doctype html>"));
    assert!(html.contains("<meta charset=\"utf-8\">"));
    assert!(!lower.contains("<script"), "a <script> in the page");
    assert!(!lower.contains("url("), "url() in the page");
    assert!(!lower.contains("@import"), "@import in the page");
    assert!(!lower.contains("<link"), "a <link> in the page");
    for attr in ["src", "href", "xlink:href"] {
        for v in attr_values(&lower, attr) {
            assert!(
                v.starts_with('#') || !(v.contains(':') || v.starts_with("//") || v.contains('/')),
                "{attr}={v:?} is not a relative link beside the page"
            );
        }
    }
    let svgs = html.matches("<svg").count();
    assert!(
        svgs >= min_svgs,
        "{svgs} inline SVGs, expected ≥ {min_svgs}"
    );
}

/// Renders `page` with headless Chromium: the DOM, a PNG screenshot and a
/// PDF print. None when Chromium is not installed.
pub struct Rendered {
    pub dom: String,
    /// What the page wrote to the browser's console (errors, uncaught
    /// exceptions, failed loads): a report must write nothing.
    pub console: Vec<String>,
    pub png: PathBuf,
    pub pdf: PathBuf,
}

pub fn chromium(page: &Path, out_dir: &Path, extra: &[String]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = [
        "120",
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--user-data-dir={}", profile.path().display()));
    args.extend_from_slice(extra);
    args.push(format!("file://{}", page.display()));
    let out = Command::new("timeout")
        .args(&args)
        .current_dir(out_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium {extra:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn render(page: &Path, out_dir: &Path) -> Option<Rendered> {
    if !testkit::need_path(CHROMIUM, "Chromium to render the report") {
        return None;
    }
    let png = out_dir.join("page.png");
    let pdf = out_dir.join("page.pdf");
    let dom = chromium(
        page,
        out_dir,
        &[
            "--dump-dom".into(),
            "--enable-logging=stderr".into(),
            "--v=0".into(),
        ],
    );
    let console = String::from_utf8_lossy(&dom.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    chromium(
        page,
        out_dir,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1200,3000".into(),
        ],
    );
    chromium(
        page,
        out_dir,
        &[
            format!("--print-to-pdf={}", pdf.display()),
            "--no-pdf-header-footer".into(),
        ],
    );
    Some(Rendered {
        dom: String::from_utf8_lossy(&dom.stdout).into_owned(),
        console,
        png,
        pdf,
    })
}

pub fn assert_rendered(r: &Rendered, svgs: usize) {
    let dom_svgs = r.dom.matches("<svg").count();
    assert!(
        dom_svgs >= svgs,
        "the DOM holds {dom_svgs} SVGs, expected ≥ {svgs}"
    );
    assert!(r.dom.contains("Figure 1."), "figures in the DOM");
    assert!(r.console.is_empty(), "console output: {:?}", r.console);
    assert_figures_drawn_with_findings(&r.dom);
    let png = std::fs::read(&r.png).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    assert!(png.len() > 30_000, "screenshot of {} bytes", png.len());
    let pdf = std::fs::read(&r.pdf).unwrap();
    assert!(pdf.starts_with(b"%PDF"), "a PDF print");
    assert!(pdf.len() > 20_000, "PDF of {} bytes", pdf.len());
}

/// Every figure in the rendered DOM holds a drawn SVG (marks, not just
/// axes' frame), and every section with a figure has a computed finding
/// after its first figure.
pub fn assert_figures_drawn_with_findings(dom: &str) {
    let figures: Vec<&str> = dom.split("<figure").skip(1).collect();
    assert!(!figures.is_empty(), "no figure in the DOM");
    for (i, f) in figures.iter().enumerate() {
        let body = &f[..f.find("</figure>").expect("an unclosed figure")];
        assert!(body.contains("<svg"), "figure {} has no SVG", i + 1);
        let marks = ["<path", "<circle", "<rect", "<polyline", "<line"]
            .iter()
            .map(|m| body.matches(m).count())
            .sum::<usize>();
        assert!(marks >= 5, "figure {} draws only {marks} marks", i + 1);
    }
    for section in dom.split("<h2").skip(1) {
        if let Some(at) = section.find("<figure") {
            assert!(
                section[at..].contains("class=\"finding\""),
                "the section {:?} has a figure but no finding after it",
                section.split("</h2>").next().unwrap_or(section)
            );
        }
    }
}
