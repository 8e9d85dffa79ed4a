//! What the per-packet experiments controlled and whether they showed the
//! paper's effect, in both directions: the offloads the trials recorded,
//! the samples under named kernel functions, the route lookup per datagram
//! and the routing trie's depth.

use super::claims::TrialShares;
use super::offloads::{controlled_sentence, differing, recorded};
use super::routes::{growth_sentence, per_datagram_sentence, trie_sentence};
use super::samples::{count_stacks, role_samples};
use analysis::findings::CurvePoint;
use record::{CpuProfile, ProfiledStack, ProfiledThread, ThreadRole};

fn details(tso: bool, tx: bool) -> serde_json::Value {
    let end = |tso: bool, tx: bool| {
        serde_json::json!({"device": "d", "state": {
            "tso": tso, "gso": false, "gro": false, "tx_checksum": tx, "rx_checksum": true}})
    };
    serde_json::json!({"lab": {"offloads": {"sender": end(tso, tx), "receiver": end(false, true)}}})
}

#[test]
fn arms_that_differ_in_the_checksum_alone_are_told_from_arms_that_lost_tso() {
    let on = vec![recorded(&details(false, true)).unwrap()];
    let off = vec![recorded(&details(false, false)).unwrap()];
    assert_eq!(differing(&on, &off), ["sender tx checksum"]);
    let tso_on = vec![recorded(&details(true, true)).unwrap()];
    assert_eq!(
        differing(&tso_on, &off),
        ["sender tso", "sender tx checksum"]
    );
    assert!(recorded(&serde_json::json!({"lab": {"offloads": {"sender": null}}})).is_none());
    let s = controlled_sentence(&[("checksum offload off".into(), off.clone())]);
    assert!(
        s.contains("checksum offload off: sender tso off, gso off, gro off, tx checksum off, rx checksum on; receiver tso off"),
        "{s}"
    );
    let varied = controlled_sentence(&[("both".into(), vec![on[0].clone(), off[0].clone()])]);
    assert!(varied.contains("tx checksum varied"), "{varied}");
    let none = controlled_sentence(&[("loopback".into(), vec![])]);
    assert!(none.contains("loopback: not recorded"), "{none}");
}

fn profile(stacks: &[(u32, &[&str], u64)]) -> CpuProfile {
    let mut symbols: Vec<String> = Vec::new();
    let mut index = |name: &str| -> u32 {
        if let Some(i) = symbols.iter().position(|s| s == name) {
            return i as u32;
        }
        symbols.push(name.to_string());
        (symbols.len() - 1) as u32
    };
    let stacks: Vec<ProfiledStack> = stacks
        .iter()
        .map(|(tid, frames, samples)| ProfiledStack {
            tid: *tid,
            unsampled: false,
            kernel: frames.iter().map(|f| index(f)).collect(),
            user: vec![],
            samples: *samples,
            ns: samples * 100_000,
        })
        .collect();
    CpuProfile {
        version: 1,
        period_ns: 100_000,
        clock: "cpu-clock".into(),
        cpus: 2,
        duration_s: 1.0,
        symbols,
        threads: vec![
            ProfiledThread {
                tid: 1,
                tgid: 1,
                comm: "tcplab-client".into(),
                role: ThreadRole::Sender,
            },
            ProfiledThread {
                tid: 2,
                tgid: 1,
                comm: "tcplab-srv".into(),
                role: ThreadRole::Receiver,
            },
        ],
        stacks,
        busy_s: 1.0,
        idle_s: 0.0,
        lost_samples: 0,
        broken_stacks: 0,
    }
}

#[test]
fn samples_count_under_a_function_only_with_the_caller_asked_for() {
    let p = profile(&[
        (
            1,
            &[
                "fib_table_lookup",
                "ip_route_output_key_hash_rcu",
                "udp_sendmsg",
            ],
            30,
        ),
        (
            1,
            &["fib_table_lookup", "ip_route_input_slow", "net_rx_action"],
            50,
        ),
        (1, &["copy_user", "udp_sendmsg"], 920),
        (2, &["__tcp_send_ack.part.0", "tcp_rcv_established"], 7),
        (
            2,
            &["fib_table_lookup", "ip_route_output_key_hash_rcu"],
            500,
        ),
    ]);
    let out = count_stacks(
        &p,
        &[ThreadRole::Sender],
        &["fib_table_lookup"],
        &["ip_route_output_key_hash_rcu"],
    );
    assert_eq!((out.hit, out.total), (30, 1000));
    let any = count_stacks(&p, &[ThreadRole::Sender], &["fib_table_lookup"], &[]);
    assert_eq!(any.hit, 80);
    // The compiler's ".part.0" suffix does not hide a function.
    let acks = count_stacks(&p, &[ThreadRole::Receiver], &["__tcp_send_ack"], &[]);
    assert_eq!((acks.hit, acks.total), (7, 507));
    assert_eq!(role_samples(&p, ThreadRole::Sender), 1000);
}

fn ts(x: f64, mean: f64, ci: f64, fewest: u64) -> TrialShares {
    TrialShares {
        point: CurvePoint { x, mean, ci },
        fewest,
    }
}

#[test]
fn a_lookup_per_datagram_is_claimed_only_when_sendto_shows_more_of_it() {
    // This host: 0.0% connected, about 3.5% with sendto().
    let connected = ts(0.0, 0.0002, 0.0003, 3200);
    let sendto = ts(0.0, 0.035, 0.008, 3500);
    let s = per_datagram_sentence(Some(&connected), Some(&sendto));
    assert!(
        s.starts_with("Only the unconnected sender looks its route up per datagram")
            && s.contains(
                "took 3.50 ± 0.80 % of the sender's CPU with sendto() and 0.0200 ± 0.0300 %"
            ),
        "{s}"
    );
    let same = ts(0.0, 0.034, 0.008, 3500);
    let t = per_datagram_sentence(Some(&same), Some(&sendto));
    assert!(
        t.starts_with("The samples do not show a route lookup per datagram"),
        "{t}"
    );
    let old_run = per_datagram_sentence(Some(&connected), None);
    assert!(
        old_run.starts_with("The run lacks sendto() trials (--connect off)"),
        "{old_run}"
    );
    let thin = ts(0.0, 0.035, 0.008, 400);
    let u = per_datagram_sentence(Some(&connected), Some(&thin));
    assert!(
        u.starts_with("Too few samples to compare") && u.contains("n/a (400 samples)"),
        "{u}"
    );
}

#[test]
fn the_lookups_growth_with_the_table_follows_the_data() {
    let small = ts(1.0, 0.035, 0.004, 3000);
    let flat = growth_sentence(&small, &ts(100000.0, 0.033, 0.005, 3000));
    assert!(
        flat.contains("at 1 routes and 3.30 ± 0.50 % at 100000: no change beyond the 95% CIs")
            && flat.contains("smaller than 0.90 percentage points could not have been seen"),
        "{flat}"
    );
    let grew = growth_sentence(&small, &ts(100000.0, 0.08, 0.005, 3000));
    assert!(grew.contains("it grew beyond the 95% CIs"), "{grew}");
    let fell = growth_sentence(&small, &ts(100000.0, 0.01, 0.005, 3000));
    assert!(fell.contains("it fell beyond"), "{fell}");
    let thin = growth_sentence(&small, &ts(100000.0, 0.08, 0.005, 10));
    assert!(thin.contains("too few samples to say"), "{thin}");
}

#[test]
fn the_trie_is_called_deeper_only_when_its_depth_grew() {
    // This host: 7 leaves at depth 2.42 / 3, 100006 leaves at 2.00 / 3.
    let s = trie_sentence((1.0, 2.42, 3.0, 7.0), (100000.0, 2.0, 3.0, 100006.0));
    assert!(
        s.contains("did not get deeper from 1 to 100000 routes: 7 → 100006 leaves, mean leaf depth 2.42 → 2.00, deepest leaf 3 → 3"),
        "{s}"
    );
    let t = trie_sentence((1.0, 2.42, 3.0, 7.0), (100000.0, 4.1, 6.0, 100006.0));
    assert!(t.contains("got deeper") && !t.contains("did not"), "{t}");
}
