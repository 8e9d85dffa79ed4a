//! The Abrams & Chen report: each figure from this run's data, the paper's
//! finding beside it, and a finding sentence computed from the data.

use super::api_claim::api_sentence;
use super::comparison::tcp_udp_sentence;
use super::load_claim::{load_claim, LoadRow};
use super::paper::{
    API_TCP_LOWER, API_TCP_WRITE, API_UDP_HIGHER, API_UDP_WRITE, DEC_FLAT_FROM, DEC_MBIT,
    ETHERNET_MBIT, FILE_KB, LOAD_FILE, LOAD_NEGLIGIBLE_FROM, LOAD_WRITE,
};
use super::speeds::{mismatch_section, segment_cost_section};
use crate::data::StudyData;
use crate::figures::{at, auto_log_y, load_workers, place, series, throughput_y, write_size};
use crate::validity::{throughput_validity, valid_curve, Invalid};
use analysis::findings::{shape_finding, size_words, CurvePoint};
use record::Api;
use report::format::number;
use report::{measure, Figure, Point, Section, Series, Table, TickFormat, Unit};

const CITE: &str = "Abrams & Chen 1991";

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        write_size_section(d),
        load_section(d),
        api_section(d),
        super::loss::loss_section(d),
        super::idle::timeline_section(d),
        segment_cost_section(d),
        mismatch_section(d),
        super::stack_timeline::stack_timeline_section(d),
        super::stack_segment::stack_segment_section(d),
        super::stack_flow::stack_flow_section(d),
    ]
}

fn write_size_figure(title: &str) -> Figure {
    // The y axis is labelled with its prefix once the series are in
    // (`figures::throughput_y`).
    let mut f = Figure::new(title, "write size (bytes)", "throughput");
    f.log_x = true;
    f.x_ticks = TickFormat::Bytes;
    f
}

/// Abrams & Chen Fig. 1: the DECstation 5000 pair's TCP throughput,
/// Mbit/s, flat from 1024-byte writes on 10 Mbit/s Ethernet.
const PAPER_DEC_MBIT: f64 = DEC_MBIT.value;
/// The write size, bytes, from which that pair was flat.
const PAPER_FLAT_FROM: f64 = DEC_FLAT_FROM.value;

fn write_size_section(d: &StudyData) -> Section {
    let mut s = Section::new("Throughput against write size (Figs 1–3, Table 2)");
    s.paper_finding(
        format!("{CITE}, Fig. 1"),
        format!(
            "Larger writes give higher throughput, but only below 1 KB; the fastest host \
             flattened at {DEC_MBIT} Mbit/s from {DEC_FLAT_FROM}-byte writes, limited by the \
             {ETHERNET_MBIT} Mbit/s Ethernet."
        ),
    );
    s.paper_finding(
        format!("{CITE}, Fig. 4 and §2.4"),
        "TCP yields higher throughput than UDP at small write sizes, UDP does better at large ones.",
    );
    for (suffix, which) in [
        ("fast", "the fast path"),
        ("slow", "the 10 Mbit/s Ethernet"),
    ] {
        let tcp_id = format!("write-size-tcp-{suffix}");
        let udp_id = format!("write-size-udp-{suffix}");
        let (tcp, tcp_invalid) =
            valid_curve(d, &tcp_id, "throughput_bps", 1e-6, write_size, |_| true);
        let (udp, udp_invalid) =
            valid_curve(d, &udp_id, "throughput_bps", 1e-6, write_size, |_| true);
        if d.points_of(&tcp_id).is_empty() && d.points_of(&udp_id).is_empty() {
            continue;
        }
        let tcp_points = d.points_of(&tcp_id);
        let udp_points = d.points_of(&udp_id);
        let where_ = d
            .points_of(&tcp_id)
            .first()
            .map(|p| place(&p.params))
            .unwrap_or_default();
        let mut f = write_size_figure(&format!("TCP and UDP throughput on {where_} ({which})"))
            .with_series(series("TCP", &tcp))
            .with_series(series("UDP (received)", &udp));
        // The paper's number where it compares: its fastest pair on the
        // same 10 Mbit/s Ethernet, flat at 8.4 Mbit/s from 1 KB writes.
        let ten_mbit = suffix == "slow" && where_ == "ether10";
        if ten_mbit {
            f.reference = Some(Series::new(
                format!("paper: DECstation 5000 pair, {DEC_MBIT} Mbit/s from 1 KB writes (Fig. 1)"),
                vec![
                    Point::new(PAPER_FLAT_FROM, PAPER_DEC_MBIT),
                    Point::new(65536.0, PAPER_DEC_MBIT),
                ],
            ));
        }
        auto_log_y(&mut f);
        throughput_y(&mut f, "throughput");
        s.push(f);
        let left_out: Vec<String> = [("TCP", &tcp_invalid), ("UDP", &udp_invalid)]
            .iter()
            .flat_map(|(proto, inv)| {
                inv.iter().map(move |(p, why)| {
                    format!(
                        "{proto} at {}: {}",
                        size_words(p.write_size as f64),
                        why.reason()
                    )
                })
            })
            .collect();
        if !left_out.is_empty() {
            s.warning(format!(
                "Left out of the figure, Table 2's rates and the findings on {where_}: {}.",
                left_out.join("; ")
            ));
        }
        if ten_mbit {
            let big: Vec<&CurvePoint> = tcp.iter().filter(|p| p.x >= PAPER_FLAT_FROM).collect();
            if let Some(best) = big.iter().max_by(|a, b| a.mean.total_cmp(&b.mean)) {
                // Loss travels with the figure (issue 30, rule 2).
                let loss = tcp_points
                    .iter()
                    .find(|p| write_size(&p.params) == Some(best.x))
                    .and_then(|p| crate::lossy::loss_words(p))
                    .map(|l| format!("; {l}"))
                    .unwrap_or_default();
                s.finding(format!(
                    "On {where_}, TCP with writes of 1 KB and more reaches up to {} ({} \
                     writes{loss}), {:.2}× the paper's DECstation pair ({DEC_MBIT} Mbit/s) on the \
                     same {ETHERNET_MBIT} Mbit/s medium.",
                    measure(best.mean * 1e6, Some(best.ci * 1e6), Unit::Si("bit/s")),
                    size_words(best.x),
                    best.mean / PAPER_DEC_MBIT
                ));
            }
        }
        // A comparison of throughputs says when loss may explain it.
        let caveat =
            |text: String, pts: &[&analysis::PointSummary]| match crate::lossy::loss_caveat(pts) {
                Some(c) => format!("{text} {c}"),
                None => text,
            };
        s.finding(caveat(
            shape_finding(
                &format!("On {where_}, TCP throughput"),
                "write size",
                &tcp,
                &size_words,
                &|r| number(r * 1e6, Unit::Si("bit/s")),
            ),
            &tcp_points,
        ));
        if let Some(c) = tcp_udp_sentence(&where_, &tcp, &udp) {
            let both: Vec<&analysis::PointSummary> =
                tcp_points.iter().chain(&udp_points).copied().collect();
            s.finding(caveat(c, &both));
        }
        if let Some((t, finding)) = super::loss::unpaced_loss(d, &udp_id, &where_) {
            s.push(t);
            s.finding(finding);
        }
    }
    if let Some(l) = crate::verdict::link_share_of_run(d) {
        s.finding(format!(
            "The share of its link's line rate this run's TCP points support best (the point \
             whose 95% CI reaches highest at its low end, so that a noisy high mean does not \
             outrank a precise one; the verdict's figure): {}.",
            l.evidence()
        ));
    }
    s
}

/// A load experiment's file in words; a duration-bound UDP run has none.
fn file_words(file: u64) -> String {
    if file == 0 {
        "0.3 s run".into()
    } else {
        size_words(file as f64)
    }
}

fn load_section(d: &StudyData) -> Section {
    let mut s = Section::new("Delay against host load (Tables 3–5)");
    s.paper_finding(
        format!("{CITE}, Tables 3–5"),
        format!(
            "On the slowest host shown, the MacII, a load of one and three doubled and \
             quadrupled TCP delay at {LOAD_WRITE}-byte writes; from {} KB writes the increase \
             was negligible. A {FILE_KB} KB file was insensitive to load, a {LOAD_FILE}-byte \
             file's delay more than doubled at load three.",
            LOAD_NEGLIGIBLE_FROM.value / 1024.0
        ),
    );
    let mut t = Table::new([
        "protocol",
        "file",
        "write size",
        "delay (TCP) or sender rate (UDP), load 0",
        "load 1",
        "load 3",
        "slowdown at load 3",
    ])
    .with_caption(
        "TCP: receiver delay, first byte to last; UDP (unpaced, 0.3 s): the sender's rate, which \
         load slows; mean ± 95% CI. The slowdown is delay at load 3 over load 0 (TCP), rate at \
         load 0 over load 3 (UDP)",
    )
    .key();
    let mut rows: Vec<LoadRow> = Vec::new();
    let mut left_out = Vec::new();
    for id in ["load-tcp", "load-udp", "load-file-tcp"] {
        let points = d.points_of(id);
        // UDP runs for a duration: its sender's rate is what load changes.
        let udp_rate = id.ends_with("udp") && points.iter().all(|p| p.params.bytes.is_none());
        let (metric, unit) = if udp_rate {
            ("offered_bps", Unit::Si("bit/s"))
        } else {
            ("delay_s", Unit::Si("s"))
        };
        let mut sizes: Vec<(u64, u64)> = points
            .iter()
            .map(|p| (p.params.bytes.unwrap_or(0), p.params.write_size))
            .collect();
        sizes.sort();
        sizes.dedup();
        for (file, ws) in sizes {
            let point = |load: u32| {
                points.iter().find(|p| {
                    p.params.write_size == ws
                        && p.params.bytes.unwrap_or(0) == file
                        && load_workers(&p.params) == load
                })
            };
            // A delay shorter than the link allows (throughput above its
            // line rate) is not a measurement of the host.
            let above = |load: u32| {
                point(load).and_then(|p| match throughput_validity(d, p) {
                    Err(e @ Invalid::AboveLineRate { .. }) => Some(e),
                    _ => None,
                })
            };
            let delay = |load: u32| {
                point(load)
                    .filter(|_| above(load).is_none())
                    .and_then(|p| p.metrics.get(metric))
            };
            let proto = if id.ends_with("tcp") { "TCP" } else { "UDP" };
            for load in [0, 1, 3] {
                if let Some(e) = above(load) {
                    left_out.push(format!(
                        "{proto}, {} file in {} writes at load {load}: {}",
                        file_words(file),
                        size_words(ws as f64),
                        e.reason()
                    ));
                }
            }
            let cell = |load| match (delay(load), above(load)) {
                (Some(m), _) => measure(m.mean, Some(m.ci95), unit),
                (None, Some(_)) => "invalid".into(),
                (None, None) => "—".into(),
            };
            let ratio = if udp_rate {
                delay(0).zip(delay(3)).map(|(a, b)| a.mean / b.mean)
            } else {
                delay(3).zip(delay(0)).map(|(a, b)| a.mean / b.mean)
            };
            if let (Some(a), Some(b)) = (delay(0), delay(3)) {
                rows.push(LoadRow {
                    what: format!(
                        "{proto}, {} in {} writes",
                        if file == 0 {
                            file_words(file)
                        } else {
                            format!("{} file", file_words(file))
                        },
                        size_words(ws as f64)
                    ),
                    unloaded: (a.mean, a.ci95),
                    loaded: (b.mean, b.ci95),
                    higher_is_slower: !udp_rate,
                });
            }
            t.row([
                proto.to_string(),
                file_words(file),
                size_words(ws as f64),
                cell(0),
                cell(1),
                cell(3),
                ratio.map_or("—".into(), |r| format!("{r:.2}×")),
            ]);
        }
    }
    if t.rows.is_empty() {
        s.warning("The load experiments have no successful trials in this run.");
        return s;
    }
    s.push(t);
    if !left_out.is_empty() {
        s.warning(format!(
            "Marked invalid and left out of the ratios and the finding (a delay shorter than the \
             link allows): {}.",
            left_out.join("; ")
        ));
    }
    if let Some(f) = load_claim(&rows) {
        s.finding(f);
    }
    s
}

fn api_name(a: Api) -> &'static str {
    match a {
        Api::Write => "write",
        Api::Sendmsg => "sendmsg",
        Api::Sendfile => "sendfile",
        Api::Zerocopy => "zerocopy",
    }
}

fn api_section(d: &StudyData) -> Section {
    let mut s = Section::new("Application programming interface (Fig. 4)");
    s.paper_finding(
        format!("{CITE}, Fig. 4"),
        format!(
            "The choice of interface mattered: with TCP at {API_TCP_WRITE}-byte writes the socket \
             delay was {API_TCP_LOWER}% lower than TLI's; with UDP at {API_UDP_WRITE} bytes it \
             was {API_UDP_HIGHER}% higher."
        ),
    );
    let apis = [Api::Write, Api::Sendmsg, Api::Sendfile, Api::Zerocopy];
    let curves: Vec<(Api, Vec<CurvePoint>)> = apis
        .iter()
        .map(|&a| {
            (
                a,
                d.curve("api", "throughput_bps", 1e-6, write_size, |p| p.api == a),
            )
        })
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if curves.is_empty() {
        s.warning("The API experiment has no successful trials in this run.");
        return s;
    }
    let mut f = write_size_figure("TCP throughput by sending interface");
    for (a, c) in &curves {
        f.series.push(series(api_name(*a), c));
    }
    auto_log_y(&mut f);
    throughput_y(&mut f, "throughput");
    s.push(f);
    let Some((_, base)) = curves.iter().find(|(a, _)| *a == Api::Write) else {
        return s;
    };
    for b in base {
        let others: Vec<(&str, CurvePoint)> = curves
            .iter()
            .filter(|(a, _)| *a != Api::Write)
            .filter_map(|(a, c)| at(c, b.x).map(|p| (api_name(*a), p)))
            .collect();
        s.finding(api_sentence(b.x, b, &others));
    }
    s
}
