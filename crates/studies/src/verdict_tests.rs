//! The verdict's rules, each in both directions: a TCP_INFO share needs
//! enough 4 ms ticks to be ranked, and a limit the experiment set on
//! itself is listed as imposed, not as the host's bottleneck.

use super::{
    closing_finding, rank_labels, score_text, verdict, Bottleneck, Standing, MIN_CPU_SAMPLES,
    MIN_TICKS,
};
use crate::data::{ExperimentRecord, StudyData, StudySettings};
use crate::fixtures::study_meta;
use record::{
    PointRecord, StoredRun, TestKind, TrialOutcome, TrialParams, TrialRecord, TrialStatus,
};
use std::collections::BTreeMap;

/// A run of one experiment with one tcp-stream point: three trials, each
/// busy 1 s with `rwnd_s` of it limited by the receive window; `details`
/// is each trial's details JSON.
fn window_run(p: TrialParams, rwnd_s: f64, details: serde_json::Value) -> StudyData {
    window_run_of(p, &[rwnd_s; 3], details)
}

/// [`window_run`] with one trial per value of `rwnd_s`, each its trial's
/// window-limited seconds of 1 s busy.
fn window_run_of(p: TrialParams, rwnd_s: &[f64], details: serde_json::Value) -> StudyData {
    let trials = rwnd_s
        .iter()
        .enumerate()
        .map(|(k, &rwnd_s)| {
            let k = k as i64;
            let mut o = TrialOutcome::default();
            o.metrics.insert("busy_s".into(), 1.0);
            o.metrics.insert("rwnd_limited_s".into(), rwnd_s);
            o.metrics.insert("throughput_bps".into(), 9.5e6);
            o.details = details.clone();
            TrialRecord {
                id: k + 1,
                point_id: 1,
                seq: k as u32,
                repetition: k as u32,
                started_at: String::new(),
                status: TrialStatus::Ok,
                error: None,
                outcome: o,
            }
        })
        .collect();
    let settings = StudySettings {
        study: "abrams91".into(),
        quick: true,
        experiments: vec![ExperimentRecord {
            id: "stream".into(),
            title: "stream".into(),
            command: String::new(),
            first_point: 0,
            points: 1,
        }],
        skipped: Vec::new(),
    };
    let run = StoredRun {
        meta: study_meta(settings, ""),
        points: vec![PointRecord {
            id: 1,
            index: 0,
            params: p,
            precision: None,
        }],
        trials,
    };
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}

/// Sets one limit on a point's parameters.
type SetLimit = fn(&mut TrialParams);

fn stream() -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.topology = "veth".into();
    p
}

fn candidate<'a>(v: &'a [Bottleneck], name: &str) -> &'a Bottleneck {
    v.iter().find(|b| b.name == name).unwrap()
}

#[test]
fn a_tcp_info_share_needs_enough_ticks_to_be_ranked() {
    // 3 × 20 ms = 60 ms of limited time: 15 ticks, under 25.
    let few = verdict(&window_run(stream(), 0.02, serde_json::Value::Null));
    let w = candidate(&few, "the receive window");
    assert_eq!(w.standing, Standing::TooFewTicks { ticks: 15 }, "{few:#?}");
    assert_eq!(w.score, None);
    assert!(
        w.evidence.starts_with("too few 4 ms ticks (15) to rank"),
        "{}",
        w.evidence
    );
    assert!(
        closing_finding(&few).contains("too few 4 ms ticks: 15"),
        "{}",
        closing_finding(&few)
    );
    // 3 × 40 ms = 120 ms: 30 ticks, ranked at the same kind of share.
    let enough = verdict(&window_run(stream(), 0.04, serde_json::Value::Null));
    let w = candidate(&enough, "the receive window");
    assert_eq!(w.standing, Standing::Ranked, "{enough:#?}");
    assert!((w.score.unwrap() - 0.04).abs() < 1e-9);
    assert!(
        w.evidence
            .contains("TCP_INFO: 30 ticks of 4 ms over 3 trials"),
        "{}",
        w.evidence
    );
    // Exactly the threshold counts.
    let edge = verdict(&window_run(
        stream(),
        MIN_TICKS as f64 * 0.004 / 3.0,
        serde_json::Value::Null,
    ));
    assert_eq!(
        candidate(&edge, "the receive window").standing,
        Standing::Ranked
    );
}

#[test]
fn a_window_the_experiment_set_is_imposed_not_the_hosts() {
    let host = verdict(&window_run(stream(), 0.6, serde_json::Value::Null));
    assert_eq!(host[0].name, "the receive window");
    assert_eq!(host[0].standing, Standing::Ranked);
    assert_eq!(host[0].imposed, None);
    assert!(closing_finding(&host)
        .starts_with("The first bottleneck in this run is the receive window, the only candidate ranked: 60.0 ± 0 %"));
    let limits: [(&str, SetLimit); 3] = [
        ("a 4 KB receive buffer (--rcvbuf)", |p| {
            p.rcvbuf = Some(4096)
        }),
        ("the sender paced to 10.0 Mbit/s (--send-rate)", |p| {
            p.send_rate_bps = Some(10_000_000)
        }),
        ("a receiver burning 20.0 µs per KB (--recv-work)", |p| {
            p.recv_work_ns_per_kb = Some(20_000)
        }),
    ];
    for (words, set) in limits {
        let mut p = stream();
        set(&mut p);
        let v = verdict(&window_run(p, 0.6, serde_json::Value::Null));
        let w = candidate(&v, "the receive window");
        assert_eq!(w.standing, Standing::Imposed, "{words}: {v:#?}");
        assert_eq!(w.score, None);
        assert!(
            w.evidence
                .starts_with("imposed by the experiment, not the host's bottleneck: 60.0 ± 0 %"),
            "{}",
            w.evidence
        );
        assert!(w.evidence.contains(words), "{}", w.evidence);
        let (share, text) = w.imposed.clone().unwrap();
        assert!((share - 0.6).abs() < 1e-9 && text.contains(words));
        let f = closing_finding(&v);
        assert!(
            f.starts_with("No candidate ranks as this host's bottleneck"),
            "{f}"
        );
        assert!(
            f.contains("only experiments that imposed them show the receive window"),
            "{f}"
        );
    }
}

#[test]
fn a_shaped_link_is_the_experiments_limit() {
    let on_link = serde_json::json!({"lab": {
        "place": {"link": {"rate_bps": 1e7}}
    }});
    let mut p = stream();
    p.topology = "ether10".into();
    let v = verdict(&window_run(p, 0.6, on_link));
    let link = candidate(&v, "the link");
    assert_eq!(link.standing, Standing::Imposed, "{v:#?}");
    assert!(
        link.evidence
            .contains("TCP reached 95.0 ± 0 % of the link's 10.0 Mbit/s line rate")
            && link.evidence.contains("a shaped link (ether10)"),
        "{}",
        link.evidence
    );
    // The window share on that link is the experiment's too.
    assert_eq!(
        candidate(&v, "the receive window").standing,
        Standing::Imposed
    );
    // Off a shaped link there is no link evidence at all, and the window
    // is the host's.
    let off = verdict(&window_run(stream(), 0.6, serde_json::Value::Null));
    assert_eq!(candidate(&off, "the link").standing, Standing::NotMeasured);
    assert_eq!(
        candidate(&off, "the receive window").standing,
        Standing::Ranked
    );
}

#[test]
fn a_small_first_score_is_not_named_the_bottleneck() {
    let v = verdict(&window_run(stream(), 0.04, serde_json::Value::Null));
    let f = closing_finding(&v);
    assert!(
        f.starts_with("No candidate accounts for 10% or more in this run, so none is named its bottleneck; the largest is the receive window at 4.00 ± 0 %"),
        "{f}"
    );
    // A share of zero is not "the largest" of anything: with every ranked
    // candidate at 0 the finding says so; with one above 0 it is named.
    let ranked = |name: &'static str, score: f64| Bottleneck {
        name,
        score: Some(score),
        ci: 0.0,
        trials: 5,
        standing: Standing::Ranked,
        evidence: format!("{name} measured {score}"),
        imposed: None,
    };
    let zero = closing_finding(&[
        ranked("the receive window", 0.0),
        ranked("the scheduler", 0.0),
    ]);
    assert_eq!(
        zero,
        "No candidate accounts for 10% or more in this run, so none is named its bottleneck; every candidate ranked measured 0 (the receive window, the scheduler). the receive window: the receive window measured 0."
    );
    let one = closing_finding(&[
        ranked("the receive window", 0.02),
        ranked("the scheduler", 0.0),
    ]);
    assert!(
        one.contains("; the largest is the receive window at 2.00 ± 0 %"),
        "{one}"
    );
    let big = verdict(&window_run(stream(), 0.25, serde_json::Value::Null));
    assert!(closing_finding(&big)
        .starts_with("The first bottleneck in this run is the receive window, the only candidate ranked: 25.0 ± 0 %"), "{}", closing_finding(&big));
    // The table ranks it only when it reaches the floor.
    let at = |v: &[Bottleneck]| {
        let i = v
            .iter()
            .position(|b| b.name == "the receive window")
            .unwrap();
        rank_labels(v)[i].clone()
    };
    assert_eq!(at(&v), "under 10%");
    assert_eq!(at(&big), "1");
}

/// A profile of trial `tid`'s sender: `samples` samples, all in a copy
/// routine.
fn copy_profile(samples: u64) -> record::CpuProfile {
    use record::{CpuProfile, ProfiledStack, ProfiledThread, ThreadRole};
    CpuProfile {
        version: 1,
        period_ns: 100_000,
        clock: "cpu-clock".into(),
        cpus: 2,
        duration_s: 1.0,
        symbols: vec!["rep_movs_alternative".into()],
        threads: vec![ProfiledThread {
            tid: 7,
            tgid: 7,
            comm: "tcplab-client".into(),
            role: ThreadRole::Sender,
        }],
        stacks: vec![ProfiledStack {
            tid: 7,
            unsampled: false,
            kernel: vec![0],
            user: vec![],
            samples,
            ns: samples * 100_000,
        }],
        busy_s: 1.0,
        idle_s: 0.0,
        lost_samples: 0,
        broken_stacks: 0,
    }
}

/// The verdict of a run of `p` whose sender was half busy for 1 s, every
/// trial's CPU profile holding `samples` samples, all of them in copy.
fn copy_run_verdict(p: TrialParams, samples: u64) -> Vec<Bottleneck> {
    let (run, _, profiles) = copy_run(p, samples);
    let summaries = analysis::summarize_run(&run);
    verdict(&StudyData::new(run, summaries, BTreeMap::new(), profiles).unwrap())
}

/// The run of [`copy_run_verdict`], its settings and its CPU profiles.
fn copy_run(
    p: TrialParams,
    samples: u64,
) -> (StoredRun, StudySettings, BTreeMap<i64, record::CpuProfile>) {
    let d = window_run(p, 0.0, serde_json::Value::Null);
    let mut run = d.run;
    for t in run.trials.iter_mut() {
        t.outcome.metrics.insert("cpu_sender_s".into(), 0.5);
        t.outcome.metrics.insert("sender_wall_s".into(), 1.0);
    }
    let profiles = run
        .trials
        .iter()
        .map(|t| (t.id, copy_profile(samples)))
        .collect();
    (run, d.settings, profiles)
}

#[test]
fn a_cpu_share_needs_enough_samples_in_its_trial_to_be_ranked() {
    let with = |samples: u64| copy_run_verdict(stream(), samples);
    let enough = with(MIN_CPU_SAMPLES);
    let copy = candidate(&enough, "data copy");
    assert!(
        (copy.score.unwrap() - 0.5).abs() < 1e-9,
        "all of a half-busy sender's samples in copy: {enough:#?}"
    );
    let few = with(MIN_CPU_SAMPLES - 1);
    assert!(
        candidate(&few, "data copy").score.is_none(),
        "999 samples state no share: {few:#?}"
    );
}

#[test]
fn a_tcplab_stack_ends_profile_is_not_the_hosts_bottleneck() {
    let with = |stack: record::StackImpl, server: record::StackImpl| {
        let mut p = stream();
        p.stack = stack;
        p.server_stack = server;
        copy_run_verdict(p, MIN_CPU_SAMPLES)
    };
    use record::StackImpl::{Kernel, Tcplab};
    let linux = with(Kernel, Kernel);
    assert!(
        candidate(&linux, "data copy").score.is_some(),
        "Linux at both ends is this host's TCP/IP: {linux:#?}"
    );
    for (c, s) in [(Tcplab, Kernel), (Kernel, Tcplab), (Tcplab, Tcplab)] {
        let v = with(c, s);
        assert!(
            candidate(&v, "data copy").score.is_none(),
            "{c:?} → {s:?}: a stack end's profile is left out: {v:#?}"
        );
    }
}

#[test]
fn a_score_under_the_floor_never_prints_as_the_floor() {
    // Three digits by the one number rule; a score under 10% that would
    // round up to it is cut, never shown as the floor beside "under 10%".
    assert_eq!(score_text(0.096, f64::NAN), "9.60 %");
    assert_eq!(score_text(0.09996, f64::NAN), "9.99 %");
    assert_eq!(score_text(0.10, f64::NAN), "10.0 %");
    assert_eq!(score_text(0.731, 0.02), "73.1 ± 2.0 %");
}

/// A run whose window share is 55, 60 and 65% over three trials and whose
/// sender spent all its samples copying, busy `cpu_s` of each 1 s trial:
/// the copy score is `cpu_s` per trial.
fn window_against_copy(cpu_s: [f64; 3]) -> Vec<Bottleneck> {
    let d = window_run_of(stream(), &[0.55, 0.6, 0.65], serde_json::Value::Null);
    let mut run = d.run;
    for (t, cpu) in run.trials.iter_mut().zip(cpu_s) {
        t.outcome.metrics.insert("cpu_sender_s".into(), cpu);
        t.outcome.metrics.insert("sender_wall_s".into(), 1.0);
    }
    let profiles = run
        .trials
        .iter()
        .map(|t| (t.id, copy_profile(MIN_CPU_SAMPLES)))
        .collect();
    let summaries = analysis::summarize_run(&run);
    verdict(&StudyData::new(run, summaries, BTreeMap::new(), profiles).unwrap())
}

#[test]
fn the_first_bottleneck_is_named_only_beyond_the_runner_ups_ci() {
    // Window 60 ± 12% against copy 30 ± 2.5%: the window, beyond the CIs.
    let v = window_against_copy([0.29, 0.30, 0.31]);
    let w = candidate(&v, "the receive window");
    assert!(
        (w.score.unwrap() - 0.6).abs() < 1e-9 && w.trials == 3,
        "{w:#?}"
    );
    assert!(w.ci > 0.1 && w.ci < 0.13, "{w:#?}");
    let f = closing_finding(&v);
    assert!(
        f.starts_with("The first bottleneck in this run is the receive window: 60.0 ± 12.4 %"),
        "{f}"
    );
    assert!(
        f.contains("beyond both 95% CIs (the receive window scores 60.0 ± 12.4 % against data copy's 30.0 ± 2.5 %)"),
        "{f}"
    );
    // The data flip: copy at 90% is the first, the window the runner-up.
    let flipped = window_against_copy([0.89, 0.90, 0.91]);
    let f = closing_finding(&flipped);
    assert!(f.starts_with("The first bottleneck in this run is data copy: 100 ± 0 % of the sender's CPU time, which was busy 90.0 ± 2.5 %"), "{f}");
    assert!(
        f.contains("against the receive window's 60.0 ± 12.4 %"),
        "{f}"
    );
    // Copy at 60 ± 25%: the top two within their CIs, neither named.
    let tied = window_against_copy([0.5, 0.7, 0.6]);
    let f = closing_finding(&tied);
    assert!(
        f.starts_with("The top two candidates are not distinguishable in this run, so neither is named the first bottleneck"),
        "{f}"
    );
    assert!(!f.contains("The first bottleneck in this run is"), "{f}");
    // The table ranks them level, as the finding says.
    let at = |v: &[Bottleneck], name: &str| {
        let i = v.iter().position(|b| b.name == name).unwrap();
        rank_labels(v)[i].clone()
    };
    assert_eq!(at(&tied, "data copy"), "1=");
    assert_eq!(at(&tied, "the receive window"), "1=");
    assert_eq!(at(&v, "the receive window"), "1");
    assert_eq!(at(&v, "data copy"), "2");
    // 12.4 + 24.8 points of CI: the intervals alone decide.
    assert!(
        f.contains("a difference smaller than 37.3 % could not have been seen"),
        "{f}"
    );
}

/// A ranked candidate with its score's mean, CI and trials.
fn ranked(name: &'static str, mean: f64, ci: f64, trials: u32) -> Bottleneck {
    Bottleneck {
        name,
        score: Some(mean),
        ci,
        trials,
        standing: Standing::Ranked,
        evidence: format!("{name}'s evidence"),
        imposed: None,
    }
}

#[test]
fn the_top_two_claim_follows_their_scores_and_trials() {
    let clear = [ranked("a", 0.5, 0.02, 5), ranked("b", 0.3, 0.02, 5)];
    assert!(
        closing_finding(&clear).starts_with("The first bottleneck in this run is a: a's evidence.")
    );
    let wide = [ranked("a", 0.5, 0.1, 5), ranked("b", 0.3, 0.15, 5)];
    let f = closing_finding(&wide);
    assert!(f.contains("a difference smaller than 25.0 % could not have been seen. a: a's evidence; b: b's evidence."), "{f}");
    // A score from one trial has no CI: no claim either way.
    let one = [ranked("a", 0.5, f64::NAN, 1), ranked("b", 0.3, 0.02, 5)];
    let f = closing_finding(&one);
    assert!(
        f.starts_with("The top two candidates are not told apart"),
        "{f}"
    );
    assert!(
        f.contains("a scores 50.0 % (one trial) against b's 30.0 ± 2.0 %"),
        "{f}"
    );
    // A lone ranked candidate is the first with nothing to beat.
    let lone = [ranked("a", 0.5, f64::NAN, 1)];
    assert!(closing_finding(&lone)
        .starts_with("The first bottleneck in this run is a, the only candidate ranked"));
}

/// [`window_run`] with each trial's sender blocked `blocked_s` of a 1 s
/// transfer (sched probe events), and no window-limited time.
fn blocked_run(blocked_s: f64) -> StudyData {
    blocked_run_probed(blocked_s, &["queues", "tcp", "sched"])
}

/// [`blocked_run`] whose trials ran with these probe groups.
fn blocked_run_probed(blocked_s: f64, groups: &[&str]) -> StudyData {
    use record::probe_event::{tcp_flags, ProbeEvent, ProbeId};
    let d = window_run(
        stream(),
        0.0,
        serde_json::json!({"probe": {"groups": groups}}),
    );
    let ev = |probe: ProbeId, ts: u64, x: [u32; 4], len: u32| ProbeEvent {
        ts_ns: ts,
        id: 0,
        len,
        seq: 0,
        ack: 0,
        ifindex: 1,
        x,
        sport: 1000,
        dport: 2000,
        win: 0,
        probe: probe as u8,
        flags: tcp_flags::ACK,
        cpu: 0,
        tid: 7,
    };
    let off = 100_000_000;
    let on = off + (blocked_s * 1e9) as u64;
    let events: Vec<ProbeEvent> = vec![
        ev(ProbeId::SendApp, 0, [0; 4], 1),
        ev(ProbeId::SchedSwitch, off, [7, 0, 1, 0], 0),
        ev(ProbeId::SchedSwitch, on, [0, 7, 0, 0], 0),
        ev(ProbeId::SendApp, 1_000_000_000, [0; 4], 1),
    ];
    let ids: Vec<i64> = d.run.trials.iter().map(|t| t.id).collect();
    let by_trial = ids.into_iter().map(|id| (id, events.clone())).collect();
    let summaries = analysis::summarize_run(&d.run);
    StudyData::new(d.run, summaries, by_trial, BTreeMap::new()).unwrap()
}

#[test]
fn a_blocked_sender_is_not_a_window_limited_one() {
    // Issue 30, rule 7: the sched probe's blocked share is its own
    // candidate; TCP_INFO's window-limited time is another.
    let v = verdict(&blocked_run(0.8));
    let b = candidate(&v, super::BLOCKED_SENDER);
    assert_eq!(b.standing, Standing::Ranked, "{v:#?}");
    assert!((b.score.unwrap() - 0.8).abs() < 1e-6, "{b:?}");
    assert!(b.evidence.contains("not window-limited"), "{}", b.evidence);
    let w = candidate(&v, super::RECEIVE_WINDOW);
    assert_ne!(w.score, Some(0.8), "{w:?}");
    // Less blocked, a smaller score: the data decide.
    let less = verdict(&blocked_run(0.2));
    let b2 = candidate(&less, super::BLOCKED_SENDER);
    assert!((b2.score.unwrap() - 0.2).abs() < 1e-6, "{b2:?}");
    // Without the sched probe nothing says how long the sender was
    // blocked: not measured, never 0 (openlink92's reviewers).
    let unwatched = verdict(&blocked_run_probed(0.8, &["queues", "tcp"]));
    let b3 = candidate(&unwatched, super::BLOCKED_SENDER);
    assert_eq!(b3.standing, Standing::NotMeasured, "{b3:?}");
}

/// Issue 30, rule 1: a CPU share from sampled trials names what the
/// sampling cost, measured on the experiment's unprobed twin, or that no
/// twin measured it.
#[test]
fn a_cpu_share_names_the_probe_effect_measured_on_its_trials() {
    let evidence = |twin: bool| {
        let (mut run, mut settings, profiles) = copy_run(stream(), MIN_CPU_SAMPLES);
        if twin {
            settings.experiments.push(ExperimentRecord {
                id: "unprobed-stream".into(),
                title: "twin".into(),
                command: String::new(),
                first_point: 1,
                points: 1,
            });
            run.points.push(PointRecord {
                id: 2,
                index: 1,
                params: stream(),
                precision: None,
            });
            for k in 0..3 {
                let mut o = TrialOutcome::default();
                o.metrics.insert("throughput_bps".into(), 19e6);
                run.trials
                    .push(crate::fixtures::ok_trial(&run.trials, 2, k, o));
            }
            run.meta.settings = serde_json::json!({ crate::data::SETTINGS_KEY: settings });
        }
        let summaries = analysis::summarize_run(&run);
        let v = verdict(&StudyData::new(run, summaries, BTreeMap::new(), profiles).unwrap());
        candidate(&v, "data copy").evidence.clone()
    };
    let with = evidence(true);
    assert!(
        with.contains("samples; the probes ran stream at 0.50× its unprobed twin's throughput"),
        "{with}"
    );
    let without = evidence(false);
    assert!(
        without.contains("; no unprobed twin measured what the sampling cost"),
        "{without}"
    );
}
