//! The Abrams & Chen report: each figure from this run's data, the paper's
//! finding beside it, and a finding sentence computed from the data.

use super::comparison::tcp_udp_sentence;
use super::speeds::{mismatch_section, segment_cost_section};
use crate::data::StudyData;
use crate::figures::{at, auto_log_y, load_workers, place, series, write_size};
use crate::validity::{throughput_validity, valid_curve, Invalid};
use analysis::findings::{shape, shape_sentence, size_words, CurvePoint};
use analysis::path::analyse;
use record::{Api, TrialParams};
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, TickFormat, Unit};

const CITE: &str = "Abrams & Chen 1991";

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        write_size_section(d),
        load_section(d),
        api_section(d),
        timeline_section(d),
        segment_cost_section(d),
        mismatch_section(d),
    ]
}

fn write_size_figure(title: &str) -> Figure {
    let mut f = Figure::new(title, "write size (bytes)", "throughput (Mbit/s)");
    f.log_x = true;
    f.x_ticks = TickFormat::Bytes;
    f
}

/// Abrams & Chen Fig. 1: the DECstation 5000 pair's TCP throughput,
/// Mbit/s, flat from 1024-byte writes on 10 Mbit/s Ethernet.
const PAPER_DEC_MBIT: f64 = 8.4;
/// The write size, bytes, from which that pair was flat.
const PAPER_FLAT_FROM: f64 = 1024.0;

fn write_size_section(d: &StudyData) -> Section {
    let mut s = Section::new("Throughput against write size (Figs 1–3, Table 2)");
    s.paper_finding(
        format!("{CITE}, Fig. 1"),
        "Larger writes give higher throughput, but only below 1 KB; the fastest host flattened \
         at 8.4 Mbit/s from 1024-byte writes, limited by the 10 Mbit/s Ethernet.",
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
                "paper: DECstation 5000 pair, 8.4 Mbit/s from 1 KB writes (Fig. 1)",
                vec![
                    Point::new(PAPER_FLAT_FROM, PAPER_DEC_MBIT),
                    Point::new(65536.0, PAPER_DEC_MBIT),
                ],
            ));
        }
        auto_log_y(&mut f);
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
                s.finding(format!(
                    "On {where_}, TCP with writes of 1 KB and more reaches up to {:.2} Mbit/s \
                     ({} writes), {:.2}× the paper's DECstation pair (8.4 Mbit/s) on the same \
                     10 Mbit/s medium.",
                    best.mean,
                    size_words(best.x),
                    best.mean / PAPER_DEC_MBIT
                ));
            }
        }
        s.finding(shape_sentence(
            &format!("On {where_}, TCP throughput"),
            "write size",
            &shape(&tcp),
            &size_words,
        ));
        if let Some(c) = tcp_udp_sentence(&where_, &tcp, &udp) {
            s.finding(c);
        }
        let loss = d.curve(&udp_id, "loss_rate", 1.0, write_size, |_| true);
        if !loss.is_empty() {
            let mut t = Table::new(["write size", "UDP loss rate", "UDP received", "TCP"])
                .with_caption(format!("Table 2 on {where_}: UDP loss against write size"));
            for l in &loss {
                t.row([
                    size_words(l.x),
                    measure(l.mean, Some(l.ci), Unit::Percent),
                    rate_cell(&udp, &udp_invalid, l.x),
                    rate_cell(&tcp, &tcp_invalid, l.x),
                ]);
            }
            s.push(t);
            let worst = loss.iter().fold(None::<CurvePoint>, |m, p| match m {
                Some(q) if q.mean >= p.mean => Some(q),
                _ => Some(*p),
            });
            if let Some(w) = worst {
                s.finding(format!(
                    "On {where_}, UDP lost up to {:.1}% of its datagrams (at {} writes); the paper's \
                     hosts lost at most 4%, except a fast sender into a slow receiver (57%).",
                    w.mean * 100.0,
                    size_words(w.x)
                ));
            }
        }
    }
    if let Some(l) = crate::verdict::link_share_of_run(d) {
        s.finding(format!(
            "The closest a TCP point came to its link's line rate in this run (the verdict's \
             figure): {}.",
            l.evidence()
        ));
    }
    s
}

/// A rate cell of Table 2: the valid point's mean, the left-out point's
/// short reason ("invalid"/"n/a"), or a dash.
fn rate_cell(c: &[CurvePoint], invalid: &[(TrialParams, Invalid)], x: f64) -> String {
    if let Some(p) = at(c, x) {
        return format!("{:.1} ± {:.1} Mbit/s", p.mean, p.ci);
    }
    match invalid.iter().find(|(p, _)| p.write_size as f64 == x) {
        Some((_, Invalid::AboveLineRate { .. })) => "invalid (above line rate)".into(),
        Some((_, Invalid::TooFewDatagrams { received })) => {
            format!("n/a ({received:.0} datagrams)")
        }
        None => "—".into(),
    }
}

fn load_section(d: &StudyData) -> Section {
    let mut s = Section::new("Delay against host load (Tables 3–5)");
    s.paper_finding(
        format!("{CITE}, Tables 3–5"),
        "On the slowest hosts a load of one and three doubled and quadrupled TCP delay at \
         10-byte writes; from 1 KB writes the increase was negligible. A 40 KB file was \
         insensitive to load, a 512,000-byte file's delay more than doubled at load three.",
    );
    let mut t = Table::new([
        "protocol",
        "file",
        "write size",
        "delay, load 0",
        "load 1",
        "load 3",
        "load 3 / load 0",
    ])
    .with_caption("Receiver delay, first byte to last, mean ± 95% CI")
    .key();
    let mut worst: Option<(f64, String)> = None;
    let mut left_out = Vec::new();
    for id in ["load-tcp", "load-udp", "load-file-tcp", "load-file-udp"] {
        let points = d.points_of(id);
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
                        && p.params.bytes == Some(file)
                        && load_workers(&p.params) == load
                })
            };
            // A delay shorter than the link allows (throughput above its
            // line rate beyond CI) is not a measurement of the host.
            let above = |load: u32| {
                point(load).and_then(|p| match throughput_validity(d, p) {
                    Err(e @ Invalid::AboveLineRate { .. }) => Some(e),
                    _ => None,
                })
            };
            let delay = |load: u32| {
                point(load)
                    .filter(|_| above(load).is_none())
                    .and_then(|p| p.metrics.get("delay_s"))
            };
            let proto = if id.ends_with("tcp") { "TCP" } else { "UDP" };
            for load in [0, 1, 3] {
                if let Some(e) = above(load) {
                    left_out.push(format!(
                        "{proto}, {} file in {} writes at load {load}: {}",
                        size_words(file as f64),
                        size_words(ws as f64),
                        e.reason()
                    ));
                }
            }
            let cell = |load| match (delay(load), above(load)) {
                (Some(m), _) => measure(m.mean, Some(m.ci95), Unit::Si("s")),
                (None, Some(_)) => "invalid".into(),
                (None, None) => "—".into(),
            };
            let ratio = delay(3).zip(delay(0)).map(|(a, b)| a.mean / b.mean);
            if let Some(r) = ratio {
                let what = format!(
                    "{proto}, {} file in {} writes",
                    size_words(file as f64),
                    size_words(ws as f64)
                );
                if worst.as_ref().is_none_or(|w| r > w.0) {
                    worst = Some((r, what));
                }
            }
            t.row([
                proto.to_string(),
                size_words(file as f64),
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
    if let Some((r, what)) = worst {
        s.finding(if r >= 1.2 {
            format!("Three CPU-bound workers beside the sender raised delay most for {what}: {r:.2}× the unloaded delay.")
        } else {
            format!("Host load barely changes delay on this host: at most {r:.2}× with three workers ({what}).")
        });
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
        "The choice of interface mattered: with TCP at 100-byte writes the socket delay was 24% \
         lower than TLI's; with UDP at 512 bytes it was 21% higher.",
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
    s.push(f);
    let Some((_, base)) = curves.iter().find(|(a, _)| *a == Api::Write) else {
        return s;
    };
    for b in base {
        let best = curves
            .iter()
            .filter_map(|(a, c)| at(c, b.x).map(|p| (*a, p)))
            .max_by(|x, y| x.1.mean.total_cmp(&y.1.mean));
        if let Some((a, p)) = best {
            let differs = analysis::findings::differ(&p, b);
            s.finding(if a == Api::Write || !differs {
                format!(
                    "At {} writes no interface beats write() beyond CI.",
                    size_words(b.x)
                )
            } else {
                format!(
                    "At {} writes {} is fastest, {:.2}× write().",
                    size_words(b.x),
                    api_name(a),
                    p.mean / b.mean
                )
            });
        }
    }
    s
}

fn timeline_section(d: &StudyData) -> Section {
    let mut s = Section::new("The sender's timeline and idle time (§3.3, Fig. 5)");
    s.paper_finding(
        format!("{CITE}, §3.3"),
        "Sending 40 KB in 1 KB writes with a 2 KB receive buffer, the sender was idle 45.3% of \
         the transfer, blocked because no receive buffer space was available.",
    );
    let trials = d.trials_of("timeline");
    let mut idle = Vec::new();
    let mut shown = false;
    for (t, _) in &trials {
        let Some(ev) = d.events.get(&t.id) else {
            continue;
        };
        let a = analyse(ev);
        if let Some(th) = a.threads.iter().find(|x| x.role == "sender") {
            idle.push(th.idle_fraction);
        }
        if !shown {
            if let Some(ts) = a.time_sequence.iter().max_by_key(|x| x.data.len()) {
                let pts = |v: &[(f64, f64)]| -> Vec<Point> {
                    let base = v.first().map_or(0.0, |p| p.1);
                    v.iter()
                        .map(|&(t, y)| Point::new(t * 1e3, (y - base) / 1024.0))
                        .collect()
                };
                let base = ts.data.first().map_or(0.0, |p| p.1);
                let rebase = |v: &[(f64, f64)]| -> Vec<Point> {
                    v.iter()
                        .map(|&(t, y)| Point::new(t * 1e3, (y - base) / 1024.0))
                        .collect()
                };
                let mut f = Figure::new(
                    format!("Time–sequence of trial {} ({})", t.seq, ts.flow),
                    "time (ms)",
                    "stream position (KB)",
                )
                .with_series(
                    Series::new("data sent", pts(&ts.data)).with_style(SeriesStyle::Points),
                )
                .with_series(Series::new("acknowledged", rebase(&ts.acked)))
                .with_series(Series::new("window edge", rebase(&ts.window_edge)));
                f.caption = Some(
                    "Data segments at the interface queue, the ACKs as the sender's TCP took them, \
                     and the right edge of the offered window (Guerrero & Frieder Fig. 8's view)."
                        .into(),
                );
                s.push(f);
                shown = true;
            }
        }
    }
    if idle.is_empty() {
        s.warning(
            "No probed trial of the timeline experiment: it needs root and BPF (see tcplab probes).",
        );
        return s;
    }
    let sum = analysis::summarize(&idle);
    if let Some(m) = sum {
        s.finding(format!(
            "With a {} receive buffer, the sender was blocked (idle) {} of the transfer over {} trials \
             (the paper's 80386 sender: 45.3%).",
            d.points_of("timeline")
                .first()
                .and_then(|p| p.params.rcvbuf)
                .map_or("small".into(), |b| size_words(b as f64)),
            measure(m.mean, Some(m.ci95), Unit::Percent),
            m.n
        ));
    }
    let rwnd = d.curve("timeline", "rwnd_limited_s", 1.0, |_| Some(0.0), |_| true);
    let delay = d.curve("timeline", "delay_s", 1.0, |_| Some(0.0), |_| true);
    if let (Some(r), Some(dl)) = (rwnd.first(), delay.first()) {
        if dl.mean > 0.0 {
            s.finding(format!(
                "TCP_INFO counts {:.0}% of the delay as limited by the receive window.",
                100.0 * r.mean / dl.mean
            ));
        }
    }
    s
}
