//! Per-trial changes in a real veth place: 10,000 routes in the sender's
//! namespace and checksum offload off, then everything as it was — routes
//! gone, offloads (TSO too) back — after undo and after a drop.

use lab::offload::{self, Offload};
use lab::trial_changes::{
    count_routes, read_checksums, read_offloads, Endpoint, OffloadState, TrialChanges, Wanted,
};
use lab::{Place, PlaceSpec};

fn offloads(place: &Place, e: &Endpoint, client: bool) -> (bool, bool, bool) {
    let dev = e.dev.clone();
    let f = move || {
        (
            offload::get(&dev, Offload::TxChecksum).unwrap(),
            offload::get(&dev, Offload::RxChecksum).unwrap(),
            offload::get(&dev, Offload::Tso).unwrap(),
        )
    };
    if client {
        place.in_client(f).unwrap()
    } else {
        place.in_server(f).unwrap()
    }
}

fn root_routes() -> String {
    let out = std::process::Command::new("ip")
        .args(["-4", "route", "show", "table", "all"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn routes_and_checksum_offload_are_applied_and_undone() {
    if !testkit::need_root("network namespaces and veth pairs") {
        return;
    }
    // A veth place is built and torn down by the kernel (its workers'
    // time counts as a timed test's own): one such test at a time.
    let _timing = testkit::timing_lock();
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    let host_routes = root_routes();
    let (s0, r0) = (offloads(&place, &s, true), offloads(&place, &r, false));
    assert!(
        s0.0 && r0.1,
        "veth starts with checksum offload on: {s0:?} {r0:?}"
    );
    let want = Wanted {
        routes: 10_000,
        checksum_off: true,
        ..Wanted::default()
    };
    let c = TrialChanges::apply(want, &s, &r).unwrap();
    assert_eq!(c.routes_installed, 10_000);
    assert_eq!(count_routes(&s.ns).unwrap(), 10_000);
    assert_eq!(count_routes(&r.ns).unwrap(), 0, "only the sender's table");
    assert!(
        !read_checksums(&s).unwrap().0,
        "sender transmit checksum off"
    );
    assert!(
        !read_checksums(&r).unwrap().1,
        "receiver receive checksum off"
    );
    assert_eq!(
        root_routes(),
        host_routes,
        "the host's routes are untouched"
    );
    c.undo().unwrap();
    assert_eq!(count_routes(&s.ns).unwrap(), 0);
    assert_eq!(
        offloads(&place, &s, true),
        s0,
        "sender offloads, TSO too, restored"
    );
    assert_eq!(offloads(&place, &r, false), r0);
    // Dropping the guard undoes as well (the path of a panic or an error).
    drop(TrialChanges::apply(want, &s, &r).unwrap());
    assert_eq!(count_routes(&s.ns).unwrap(), 0);
    assert_eq!(offloads(&place, &s, true), s0);
}

#[test]
fn more_routes_than_the_benchmark_block_are_refused() {
    if !testkit::need_root("network namespaces and veth pairs") {
        return;
    }
    // A veth place is built and torn down by the kernel (its workers'
    // time counts as a timed test's own): one such test at a time.
    let _timing = testkit::timing_lock();
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    let e = TrialChanges::apply(
        Wanted {
            routes: lab::trial_changes::MAX_ROUTES + 1,
            ..Wanted::default()
        },
        &s,
        &r,
    )
    .unwrap_err();
    assert!(e.to_string().contains("198.18.0.0/15"), "{e}");
    assert_eq!(count_routes(&s.ns).unwrap(), 0);
}

#[test]
fn offloads_are_switched_off_at_both_ends_and_back() {
    if !testkit::need_root("network namespaces and veth pairs") {
        return;
    }
    // A veth place is built and torn down by the kernel (its workers'
    // time counts as a timed test's own): one such test at a time.
    let _timing = testkit::timing_lock();
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    let (s0, r0) = (read_offloads(&s).unwrap(), read_offloads(&r).unwrap());
    // veth starts with segmentation and checksum offload on; its GRO is
    // off unless enabled (GSO segments cross the pair whole anyway).
    assert!(
        s0.tso && s0.gso && s0.tx_checksum && r0.rx_checksum,
        "veth starts with segmentation and checksum offload on: {s0:?} {r0:?}"
    );
    let none = OffloadState {
        tso: false,
        gso: false,
        gro: false,
        tx_checksum: false,
        rx_checksum: false,
    };
    // Everything off, at both ends.
    let all = Wanted {
        offloads_off: [true; 5],
        ..Wanted::default()
    };
    let c = TrialChanges::apply(all, &s, &r).unwrap();
    assert_eq!(read_offloads(&s).unwrap(), none);
    assert_eq!(read_offloads(&r).unwrap(), none);
    c.undo().unwrap();
    // Restored as they were: TSO back after transmit checksum, and an
    // offload that was off before (veth's GRO) stays off.
    assert_eq!(
        read_offloads(&s).unwrap(),
        s0,
        "sender restored, TSO after tx"
    );
    assert_eq!(read_offloads(&r).unwrap(), r0);
    // Only TSO and GRO (the order of lab::offload::Offload::ALL), undone by drop.
    let some = Wanted {
        offloads_off: [true, false, true, false, false],
        ..Wanted::default()
    };
    let c = TrialChanges::apply(some, &s, &r).unwrap();
    let now = read_offloads(&s).unwrap();
    assert!(
        !now.tso && !now.gro && now.gso && now.tx_checksum,
        "{now:?}"
    );
    assert!(
        read_offloads(&r).unwrap().rx_checksum,
        "receive checksum untouched"
    );
    drop(c);
    assert_eq!(read_offloads(&s).unwrap(), s0);
    assert_eq!(read_offloads(&r).unwrap(), r0);
}

fn quickack_lines(ns: &str) -> usize {
    let out = std::process::Command::new("ip")
        .args(["-n", ns, "-4", "route", "show", "table", "main"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("quickack 1"))
        .count()
}

#[test]
fn the_quickack_metric_goes_on_the_receivers_routes_and_off_again() {
    if !testkit::need_root("network namespaces and veth pairs") {
        return;
    }
    // A veth place is built and torn down by the kernel (its workers'
    // time counts as a timed test's own): one such test at a time.
    let _timing = testkit::timing_lock();
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    assert_eq!(quickack_lines(&r.ns), 0);
    let want = Wanted {
        quickack_route: true,
        ..Wanted::default()
    };
    let c = TrialChanges::apply(want, &s, &r).unwrap();
    assert!(c.quickack_routes >= 1, "{c:?}");
    assert_eq!(quickack_lines(&r.ns), c.quickack_routes as usize);
    assert_eq!(quickack_lines(&s.ns), 0, "only the receiver's table");
    c.undo().unwrap();
    assert_eq!(quickack_lines(&r.ns), 0, "the metric is gone after undo");
    drop(TrialChanges::apply(want, &s, &r).unwrap());
    assert_eq!(quickack_lines(&r.ns), 0, "and after a drop");
}

#[test]
fn the_senders_trie_reports_its_leaves_and_depth() {
    if !testkit::need_root("network namespaces and veth pairs") {
        return;
    }
    // A veth place is built and torn down by the kernel (its workers'
    // time counts as a timed test's own): one such test at a time.
    let _timing = testkit::timing_lock();
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    let before = lab::trial_changes::fib_trie_stats(&s.ns).unwrap();
    let c = TrialChanges::apply(
        Wanted {
            routes: 1000,
            ..Wanted::default()
        },
        &s,
        &r,
    )
    .unwrap();
    let after = lab::trial_changes::fib_trie_stats(&s.ns).unwrap();
    assert_eq!(after.leaves, before.leaves + 1000, "{before:?} {after:?}");
    assert!(after.max_depth >= 1, "{after:?}");
    c.undo().unwrap();
    assert_eq!(
        lab::trial_changes::fib_trie_stats(&s.ns).unwrap().leaves,
        before.leaves
    );
}

/// Pinned sides steer each end's receive processing to their own CPU: the
/// sender's end to CPU 0, the receiver's to CPU 1, and back as it was after
/// undo and after a drop; the host's loopback is untouched.
#[test]
fn receive_steering_is_applied_per_end_and_undone() {
    if !testkit::need_root("network namespaces and veth pairs") {
        return;
    }
    use lab::rps;
    if !testkit::need(
        lab::host::online_cpus() >= 2,
        "a second CPU (receive steering to two CPUs)",
    ) {
        return;
    }
    // A veth place is built and torn down by the kernel (its workers'
    // time counts as a timed test's own): one such test at a time.
    let _timing = testkit::timing_lock();
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    let host_lo = std::fs::read_to_string("/sys/class/net/lo/queues/rx-0/rps_cpus").ok();
    let (s0, r0) = (
        rps::read(&s.ns, &s.dev).unwrap(),
        rps::read(&r.ns, &r.dev).unwrap(),
    );
    let want = Wanted {
        steer: [Some(0), Some(1)],
        ..Wanted::default()
    };
    let c = TrialChanges::apply(want, &s, &r).unwrap();
    assert_eq!(rps::cpus_of(&rps::read(&s.ns, &s.dev).unwrap()), vec![0]);
    assert_eq!(rps::cpus_of(&rps::read(&r.ns, &r.dev).unwrap()), vec![1]);
    c.undo().unwrap();
    assert_eq!(rps::read(&s.ns, &s.dev).unwrap(), s0);
    assert_eq!(rps::read(&r.ns, &r.dev).unwrap(), r0);
    drop(TrialChanges::apply(want, &s, &r).unwrap());
    assert_eq!(rps::read(&r.ns, &r.dev).unwrap(), r0);
    assert_eq!(
        std::fs::read_to_string("/sys/class/net/lo/queues/rx-0/rps_cpus").ok(),
        host_lo
    );
}
