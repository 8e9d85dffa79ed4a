//! Per-trial changes in a real veth place: 10,000 routes in the sender's
//! namespace and checksum offload off, then everything as it was — routes
//! gone, offloads (TSO too) back — after undo and after a drop.

use lab::offload::{self, Offload};
use lab::trial_changes::{count_routes, read_checksums, Endpoint, TrialChanges, Wanted};
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
    let place = Place::build(&PlaceSpec::parse(Some("veth"), None).unwrap()).unwrap();
    let (s, r) = (
        place.endpoint(true).unwrap(),
        place.endpoint(false).unwrap(),
    );
    let e = TrialChanges::apply(
        Wanted {
            routes: lab::trial_changes::MAX_ROUTES + 1,
            checksum_off: false,
        },
        &s,
        &r,
    )
    .unwrap_err();
    assert!(e.to_string().contains("198.18.0.0/15"), "{e}");
    assert_eq!(count_routes(&s.ns).unwrap(), 0);
}
