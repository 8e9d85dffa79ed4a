//! Experiments that change a place (`--routes`, `--checksum-offload off`,
//! `--offload`)
//! leave the host as it was, after a normal run and after Ctrl-C: the
//! host's routes in every table, its qdiscs, its network sysctls and the
//! offloads of its own interfaces are unchanged, and no tcplab namespace
//! is left. Real namespaces, routes and ethtool settings; run as root.

mod common;

use common::{assert_success, json_of, tcplab, tcplab_command, temp_db, usage_error_line};
use lab::offload::{self, Offload};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every readable file under `dir` (recursively), by path.
fn sysctls(dir: &Path, out: &mut BTreeMap<String, String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            // Per-interface trees of the host's own interfaces only.
            sysctls(&p, out);
        } else if let Ok(v) = std::fs::read_to_string(&p) {
            out.insert(p.display().to_string(), v);
        }
    }
}

/// What tcplab must never change on the host.
#[derive(Debug, PartialEq)]
struct HostState {
    routes_v4: String,
    routes_v6: String,
    qdiscs: String,
    sysctls: BTreeMap<String, String>,
    offloads: BTreeMap<String, Vec<Option<bool>>>,
    namespaces: Vec<String>,
    lab: Vec<String>,
}

fn snapshot() -> HostState {
    let mut s = BTreeMap::new();
    for d in [
        "/proc/sys/net/core",
        "/proc/sys/net/ipv4",
        "/proc/sys/net/ipv6",
    ] {
        sysctls(Path::new(d), &mut s);
    }
    // Counters that move by themselves, not settings.
    s.retain(|k, _| !k.ends_with("/stable_secret") && !k.contains("/neigh/"));
    let mut offloads = BTreeMap::new();
    for e in std::fs::read_dir("/sys/class/net").unwrap().flatten() {
        let dev = e.file_name().to_string_lossy().into_owned();
        offloads.insert(
            dev.clone(),
            [
                Offload::TxChecksum,
                Offload::RxChecksum,
                Offload::Tso,
                Offload::Gso,
                Offload::Gro,
            ]
            .iter()
            .map(|o| offload::get(&dev, *o).ok())
            .collect(),
        );
    }
    HostState {
        routes_v4: run("ip", &["-4", "route", "show", "table", "all"]),
        routes_v6: run("ip", &["-6", "route", "show", "table", "all"]),
        qdiscs: run("tc", &["qdisc", "show"]),
        sysctls: s,
        offloads,
        namespaces: lab::netns::list("tcplab-"),
        lab: common::lab_resources(),
    }
}

fn assert_same(before: &HostState, after: &HostState, when: &str) {
    assert_eq!(before.routes_v4, after.routes_v4, "IPv4 routes {when}");
    assert_eq!(before.routes_v6, after.routes_v6, "IPv6 routes {when}");
    assert_eq!(before.qdiscs, after.qdiscs, "qdiscs {when}");
    for (k, v) in &before.sysctls {
        assert_eq!(Some(v), after.sysctls.get(k), "{k} {when}");
    }
    assert_eq!(before.offloads, after.offloads, "offloads {when}");
    assert_eq!(
        left_behind(before, after),
        Vec::<String>::new(),
        "namespaces {when}"
    );
}

/// What a run of this test left behind: lab resources (namespaces,
/// cgroups) named by a run's tag that appeared since `before` and whose
/// owner process is gone. Another tcplab run on the host (a second CI, a
/// user's study) owns live ones; other tests' namespaces are theirs.
fn left_behind(before: &HostState, _after: &HostState) -> Vec<String> {
    common::lab_left_behind(&before.lab)
}

const CHANGING: [&str; 10] = [
    "--routes",
    "1,100000",
    "--checksum-offload",
    "on,off",
    "--offload",
    "off",
    "--topology",
    "veth",
    "--write-size",
    "1024",
];

/// tcplab's routes in any tcplab namespace now.
fn tcplab_routes() -> usize {
    lab::netns::list("tcplab-")
        .iter()
        .map(|ns| lab::trial_changes::count_routes(ns).unwrap_or(0) as usize)
        .sum()
}

#[test]
fn changed_places_leave_the_host_as_it_was() {
    if !testkit::need_root("routes, offloads and namespaces need root") {
        return;
    }
    // The timing lock, held by every test that builds places (in every
    // test binary): its real transfers disturb no timed test, and this
    // test's snapshots of the host catch no namespace another test has up
    // (nor the lab's scratch namespace that looks for netem).
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let before = snapshot();

    // A normal run, each change at each level.
    let mut args = vec![
        "bench",
        "udp-stream",
        "--duration",
        "0.2s",
        "--repeat",
        "1",
        "-q",
    ];
    args.extend(CHANGING);
    let out = tcplab(&db, &args);
    assert_success(&out);
    assert_same(&before, &snapshot(), "after a normal run");

    // Ctrl-C while a trial with 100,000 routes and offload off runs.
    let child = tcplab_command(&db)
        .args([
            "bench",
            "tcp-stream",
            "--duration",
            "3s",
            "--repeat",
            "5",
            "-q",
        ])
        .args(CHANGING)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while tcplab_routes() < 100_000 {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "the routes never appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_same(&before, &snapshot(), "after Ctrl-C");
}

#[test]
fn changes_to_the_host_itself_are_refused() {
    let (_dir, db) = temp_db();
    for args in [
        vec!["bench", "udp-stream", "--routes", "10"],
        vec!["bench", "tcp-stream", "--checksum-offload", "off"],
        vec!["bench", "tcp-stream", "--offload", "off"],
        vec![
            "bench",
            "tcp-stream",
            "--offload",
            "tso+lro",
            "--topology",
            "veth",
        ],
        vec![
            "bench",
            "tcp-stream",
            "--routes",
            "200000",
            "--topology",
            "veth",
        ],
        vec![
            "bench",
            "tcp-stream",
            "--checksum-offload",
            "maybe",
            "--topology",
            "veth",
        ],
    ] {
        let out = tcplab(&db, &args);
        usage_error_line(&out, &format!("{args:?}"));
    }
}

#[test]
fn every_trial_in_a_place_records_its_ends_offloads() {
    if !testkit::need_root("namespaces and offloads need root") {
        return;
    }
    // Real transfers in places: the timing lock (see
    // changed_places_leave_the_host_as_it_was).
    let _timing = testkit::timing_lock();
    // The host staying as it was, --offload included, is
    // changed_places_leave_the_host_as_it_was's (its namespaces would show
    // in a snapshot taken here while it runs).
    let (_dir, db) = temp_db();
    let out = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--topology",
            "veth",
            "--offload",
            "default,off,tso+gso",
            "--duration",
            "0.2s",
            "--repeat",
            "1",
            "-q",
        ],
    );
    assert_success(&out);
    let run = json_of(&tcplab(&db, &["export", "latest", "--format", "json"]));
    let points = run["points"].as_array().unwrap();
    let trials = run["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3);
    for t in trials {
        let point = points
            .iter()
            .find(|p| p["point_id"] == t["point_id"])
            .expect("the trial's point");
        let level = point["params"]["offload"].as_str().unwrap_or("default");
        let offloads = &t["outcome"]["details"]["lab"]["offloads"];
        for side in ["sender", "receiver"] {
            let state = &offloads[side]["state"];
            let tso = state["tso"]
                .as_bool()
                .unwrap_or_else(|| panic!("{offloads}"));
            let tx = state["tx_checksum"].as_bool().unwrap();
            match level {
                // veth as built: segmentation and checksum offload on.
                "default" => assert!(tso && tx, "{level} {side}: {state}"),
                "off" => assert!(!tso && !tx && !state["gso"].as_bool().unwrap()),
                "tso+gso" => assert!(!tso && tx && !state["gso"].as_bool().unwrap()),
                other => panic!("unexpected level {other}"),
            }
        }
    }
}
