//! `tcplab fleet run` against real hosts: three network namespaces, each
//! with its own hostname, link rate and CPU quota and a real sshd, driven
//! from a fourth over the system's ssh. One study across them lands in one
//! store and draws markatos02's cross-host figures; a bench plan between
//! them runs over each host's link with a one-time key; a host killed
//! mid-run loses no other host's results. Root and openssh-server needed.

mod common;

use common::fleet_hosts::{missing_parts, FleetHosts, HostSpec};
use common::{json_of, temp_db, usage_error_line};
use rusqlite::Connection;
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Whether this host lacks what real sshd hosts need (a skip through
/// testkit, naming it).
fn skip() -> bool {
    match missing_parts() {
        Some(why) => {
            testkit::skip(format_args!("real sshd hosts: {why}"));
            true
        }
        None => false,
    }
}

/// Makes this test process the reaper of its orphaned descendants
/// (`PR_SET_CHILD_SUBREAPER`), for the rest of its life: the ssh sessions
/// of a host whose sshd was killed, and the fleet's backgrounded ssh
/// masters, then stay in its process tree instead of going to init. The
/// contention of a timed fleet run counts this tree as the test's own; an
/// orphaned session that init reaps takes the CPU time of the tcplab runs
/// it reaped with it (measured: 5–6 CPU-seconds of a killed host's bench,
/// read as others' 10% of the CPUs over the run). Orphans left as zombies
/// of the test process go when it ends.
fn adopt_orphans() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes a plain integer and
    // changes only this process's attribute.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(r, 0, "prctl: {}", std::io::Error::last_os_error());
}

/// (kind, fleet host, fleet server, hostname, status) of every run stored.
fn stored_runs(db: &std::path::Path) -> Vec<(String, String, Option<String>, String, String)> {
    let conn = Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT kind, settings_json, host_json, status FROM runs ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| {
        let settings: Value = serde_json::from_str(&r.get::<_, String>(1)?).unwrap();
        let host: Value = serde_json::from_str(&r.get::<_, String>(2)?).unwrap();
        let fleet = &settings["imported"]["fleet"];
        Ok((
            r.get::<_, String>(0)?,
            fleet["host"].as_str().unwrap_or("").to_string(),
            fleet["server"].as_str().map(String::from),
            host["hostname"].as_str().unwrap_or("").to_string(),
            r.get::<_, String>(3)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn a_study_across_three_hosts_lands_in_one_store_with_the_cross_host_figures() {
    if skip() {
        return;
    }
    // One fleet at a time, and no timed test beside it: each is several
    // tcplab runs on a 2-CPU machine.
    let _timing = testkit::timing_lock();
    let hosts = FleetHosts::build(&[
        HostSpec {
            rate: None,
            cpu: 1.0,
        },
        HostSpec {
            rate: Some("500mbit"),
            cpu: 0.6,
        },
        HostSpec {
            rate: Some("100mbit"),
            cpu: 0.35,
        },
    ]);
    let inventory = hosts.inventory("[\"client\"]");
    let (dir, db) = temp_db();
    let out = dir.path().join("reports");
    std::fs::create_dir(&out).unwrap();
    let t0 = Instant::now();
    let run = hosts
        .tcplab(&db)
        .args(["fleet", "run", "--json", "--out"])
        .arg(&out)
        .arg(&inventory)
        .args(["study", "markatos02", "--quick"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    eprintln!("fleet study markatos02 --quick on 3 hosts took {took:?}");
    let doc: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(doc["missing"], serde_json::json!([]), "{doc}");
    // Progress per host on stderr.
    for h in &hosts.hosts {
        assert!(
            stderr.contains(&format!("fleet: [{}] ready", h.name)),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("fleet: [{}] done in", h.name)),
            "{stderr}"
        );
    }
    // One store: each host's study run, with its own hostname, its fleet
    // name and labels, and its own host profile (CPU score).
    let runs = stored_runs(&db);
    let studies: Vec<_> = runs.iter().filter(|r| r.0 == "study:markatos02").collect();
    assert_eq!(studies.len(), 3, "{runs:?}");
    // Each host's run, in whatever order the hosts finished and were
    // imported.
    for h in &hosts.hosts {
        let mine: Vec<_> = studies.iter().filter(|r| r.1 == h.name).collect();
        assert_eq!(mine.len(), 1, "{} in {studies:?}", h.name);
        assert_eq!((&mine[0].3, mine[0].4.as_str()), (&h.name, "completed"));
    }
    let conn = Connection::open(&db).unwrap();
    let profiles: i64 = conn
        .query_row(
            "SELECT COUNT(DISTINCT host_profile_id) FROM runs WHERE kind = 'study:markatos02'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(profiles, 3, "each host keeps its own profile");
    let mut stmt = conn
        .prepare("SELECT hostname, json FROM host_profiles ORDER BY hostname")
        .unwrap();
    for row in stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
    {
        let (host, json) = row.unwrap();
        let p: Value = serde_json::from_str(&json).unwrap();
        eprintln!("{host}: CPU score {}", p["cpu_score"]["median"]);
    }
    // Each host's report sets the other two beside it: the across-hosts
    // table names all three, and the cross-host figures are drawn.
    let reports = doc["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 3, "{doc}");
    let html = std::fs::read_to_string(reports[0]["html"].as_str().unwrap()).unwrap();
    assert!(html.contains("Across hosts"), "no across-hosts section");
    for h in &hosts.hosts {
        assert!(html.contains(&h.name), "{} missing from the report", h.name);
    }
    assert!(
        !html.contains("from this host only"),
        "the report says it has one host"
    );
}

#[test]
fn a_bench_plan_between_hosts_uses_their_links_and_a_killed_host_loses_no_one_elses_results() {
    if skip() {
        return;
    }
    // One fleet at a time, and no timed test beside it; and each pair's
    // rate, on hosts under CPU quotas, is timed: it counts from a run that
    // others left the CPUs to (hosts, run and kill redone each attempt;
    // the hosts' sshd and all it starts are this test's descendants). The
    // hosts are returned, not dropped, so that they are still up when the
    // run's contention is read: tearing them down kills their ssh
    // sessions, whose CPU time (the hosts' tcplab runs, reaped by them)
    // then leaves this test's process tree and would read as others'.
    // For the same reason the test adopts what a killed host's sshd
    // orphans.
    let _timing = testkit::timing_lock();
    adopt_orphans();
    let q = testkit::until_quiet(
        "a fleet bench between hosts",
        testkit::QuietLimits::default(),
        &[],
        || {
            let hosts = FleetHosts::build(&[
                HostSpec {
                    rate: None,
                    cpu: 1.0,
                },
                HostSpec {
                    rate: Some("200mbit"),
                    cpu: 0.6,
                },
                HostSpec {
                    rate: Some("50mbit"),
                    cpu: 0.35,
                },
            ]);
            let inventory = hosts.inventory("[\"client\", \"server\"]");
            let (dir, db) = temp_db();
            let t0 = Instant::now();
            let mut child = hosts
                .tcplab(&db)
                .args(["fleet", "run", "--json"])
                .arg(&inventory)
                .args([
                    "bench",
                    "tcp-stream",
                    "--duration",
                    "1s",
                    "--repeat",
                    "2",
                    "--cc",
                    "cubic",
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // h1 → h2 runs first (each host is in one task at a time); once its
            // run is stored here, h3 dies, in the middle of h1 → h3.
            let bench_runs = || {
                Connection::open(&db)
                    .and_then(|c| {
                        c.query_row(
                            "SELECT COUNT(*) FROM runs WHERE kind = 'tcp-stream'",
                            [],
                            |r| r.get::<_, i64>(0),
                        )
                    })
                    .unwrap_or(0)
            };
            while bench_runs() == 0 {
                if t0.elapsed() > Duration::from_secs(120) {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    panic!("no run stored: {}", String::from_utf8_lossy(&out.stderr));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_millis(1500));
            hosts.kill_host(2);
            let out = child.wait_with_output().unwrap();
            (hosts, dir, db, out, t0.elapsed())
        },
    );
    eprintln!("a fleet bench between hosts: {}", q.describe());
    let (_hosts, _dir, db, out, took) = q.value;
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("fleet bench with a host killed took {took:?}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let missing: Vec<&str> = doc["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["host"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["tcplab-fleet-h3"], "{doc}");
    assert!(
        stderr.contains("fleet: [tcplab-fleet-h3] FAILED"),
        "{stderr}"
    );
    // The pairs without h3 both ran and are stored, each with its server.
    let runs = stored_runs(&db);
    let pair = |c: &str, s: &str| {
        runs.iter().any(|r| {
            r.0 == "tcp-stream" && r.1 == c && r.2.as_deref() == Some(s) && r.4 == "completed"
        })
    };
    assert!(pair("tcplab-fleet-h1", "tcplab-fleet-h2"), "{runs:?}");
    assert!(pair("tcplab-fleet-h2", "tcplab-fleet-h1"), "{runs:?}");
    assert!(runs.iter().all(|r| r.1 != "tcplab-fleet-h3"), "{runs:?}");
    // Each pair ran over the slower of its two links: h2's 200 Mbit/s, or
    // h3's 50 (h1 → h3 may be stored too, with the trial h3's death cut
    // short marked failed).
    let conn = Connection::open(&db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT r.settings_json, AVG(m.value) FROM runs r
             JOIN trials t ON t.run_id = r.id JOIN metrics m ON m.trial_id = t.id
             WHERE m.name = 'throughput_bps' AND t.status = 'ok' GROUP BY r.id",
        )
        .unwrap();
    let rates: Vec<(Value, f64)> = stmt
        .query_map([], |r| {
            Ok((
                serde_json::from_str(&r.get::<_, String>(0)?).unwrap(),
                r.get(1)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(rates.len() >= 2, "{rates:?}");
    for (settings, rate) in &rates {
        let fleet = &settings["imported"]["fleet"];
        let pair = [
            fleet["host"].as_str().unwrap(),
            fleet["server"].as_str().unwrap(),
        ];
        let link = if pair.contains(&"tcplab-fleet-h3") {
            50e6
        } else {
            200e6
        };
        assert!(
            *rate > 0.5 * link && *rate < 1.05 * link,
            "{pair:?}: {rate} bit/s through a {link} bit/s link"
        );
    }
    eprintln!(
        "pair throughputs: {:?}",
        rates.iter().map(|r| r.1).collect::<Vec<_>>()
    );
}

#[test]
fn bad_inventories_and_plans_are_refused_before_any_host_is_contacted() {
    let (dir, db) = temp_db();
    let inv = dir.path().join("hosts.toml");
    std::fs::write(
        &inv,
        "[[host]]\nname = \"a\"\ndestination = \"-oProxyCommand=x\"\n",
    )
    .unwrap();
    let run = |args: &[&str]| common::tcplab(&db, &[&["fleet", "run"][..], args].concat());
    let i = inv.to_str().unwrap();
    usage_error_line(&run(&[i, "study", "markatos02"]), "destination");
    std::fs::write(
        &inv,
        "[[host]]\nname = \"a\"\ndestination = \"127.0.0.1\"\n",
    )
    .unwrap();
    usage_error_line(
        &run(&[i, "show", "1"]),
        "a fleet plan is a study or bench command",
    );
    usage_error_line(
        &run(&[i, "bench", "tcp-stream", "--to", "x:1"]),
        "--to is set by the fleet",
    );
    usage_error_line(
        &run(&[i, "bench", "tcp-stream", "--write-size", "huge"]),
        "plan:",
    );
    usage_error_line(&run(&[i, "study", "nosuch"]), "plan:");
    usage_error_line(
        &run(&["/nonexistent.toml", "study", "markatos02"]),
        "cannot read",
    );
    assert!(
        !db.exists() || json_of(&common::tcplab(&db, &["runs", "--json"])) == serde_json::json!([])
    );
}

#[test]
fn an_unreachable_host_is_reported_and_skipped_quickly() {
    // A fleet run (ssh refused at once) against a wall-clock bound: not
    // beside a timed test.
    let _timing = testkit::timing_lock();
    let (dir, db) = temp_db();
    let inv = dir.path().join("hosts.toml");
    // Nothing listens on port 1 of loopback: ssh is refused at once.
    std::fs::write(
        &inv,
        "[[host]]\nname = \"gone\"\ndestination = \"ssh://root@127.0.0.1:1\"\naddress = \"127.0.0.1\"\n",
    )
    .unwrap();
    let t0 = Instant::now();
    let out = common::tcplab(
        &db,
        &[
            "fleet",
            "run",
            "--json",
            inv.to_str().unwrap(),
            "study",
            "markatos02",
            "--quick",
        ],
    );
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["missing"][0]["host"], "gone", "{doc}");
    assert!(
        doc["missing"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("ssh"),
        "{doc}"
    );
    assert_eq!(doc["tasks"][0]["status"], "skipped", "{doc}");
}

#[test]
fn an_interrupted_fleet_run_leaves_nothing_running_on_its_hosts() {
    if skip() {
        return;
    }
    // One fleet at a time, and no timed test beside it: each is several
    // tcplab runs on a 2-CPU machine.
    let _timing = testkit::timing_lock();
    let hosts = FleetHosts::build(&[
        HostSpec {
            rate: None,
            cpu: 1.0,
        },
        HostSpec {
            rate: None,
            cpu: 0.5,
        },
    ]);
    let inventory = hosts.inventory("[\"client\"]");
    let (_dir, db) = temp_db();
    let child = hosts
        .tcplab(&db)
        .args(["fleet", "run", "--json"])
        .arg(&inventory)
        .args([
            "bench",
            "tcp-stream",
            "--duration",
            "2s",
            "--repeat",
            "10",
            "--topology",
            "veth",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both hosts busy with their runs (a tcplab bench process in each
    // host's cgroup, beside its sshd).
    let benches = |i: usize| -> usize {
        std::fs::read_to_string(hosts.hosts[i].cgroup.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{}/cmdline", pid.trim()))
                    .is_ok_and(|c| c.contains("bench"))
            })
            .count()
    };
    let t0 = Instant::now();
    while benches(0) == 0 || benches(1) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the runs never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: signalling our own child (ip netns exec has exec'd tcplab).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(t1.elapsed() < Duration::from_secs(20), "{:?}", t1.elapsed());
    // The hosts' runs were stopped through their connections: no tcplab
    // left on either host, and none of their namespaces.
    let t2 = Instant::now();
    while benches(0) + benches(1) > 0 {
        assert!(
            t2.elapsed() < Duration::from_secs(10),
            "remote runs outlived the fleet"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["interrupted"], true, "{doc}");
    assert_eq!(doc["missing"].as_array().unwrap().len(), 2, "{doc}");
}
