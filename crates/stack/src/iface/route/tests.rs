use super::*;
use proptest::prelude::*;

const KINDS: [RouteTableKind; 3] = [
    RouteTableKind::Linear,
    RouteTableKind::Hash,
    RouteTableKind::Trie,
];

fn cidr(s: &str) -> Ipv4Cidr {
    let (a, l) = s.split_once('/').unwrap();
    Ipv4Cidr::new(a.parse().unwrap(), l.parse().unwrap()).unwrap()
}

fn gw(s: &str) -> NextHop {
    NextHop::Gateway(s.parse().unwrap())
}

fn route(c: &str, next_hop: NextHop) -> Route {
    Route {
        cidr: cidr(c),
        next_hop,
    }
}

fn hop(t: &dyn RouteTable, dst: &str) -> Option<NextHop> {
    t.lookup(dst.parse().unwrap()).map(|r| r.next_hop)
}

#[test]
fn a_prefix_clears_host_bits_and_rejects_lengths_over_32() {
    let c = cidr("10.1.2.3/16");
    assert_eq!(c.address(), Ipv4Addr::new(10, 1, 0, 0));
    assert!(c.contains(Ipv4Addr::new(10, 1, 255, 9)));
    assert!(!c.contains(Ipv4Addr::new(10, 2, 0, 0)));
    assert_eq!(
        Ipv4Cidr::new(Ipv4Addr::UNSPECIFIED, 33),
        Err(RouteError::PrefixTooLong(33))
    );
    assert_eq!(mask(0), 0);
    assert_eq!(mask(32), u32::MAX);
    assert_eq!(mask(20), 0xffff_f000);
}

#[test]
fn every_table_picks_the_longest_matching_prefix() {
    for kind in KINDS {
        let mut t = new_table(kind);
        assert_eq!(t.kind(), kind);
        assert_eq!(hop(&*t, "1.2.3.4"), None, "{kind:?}: empty table");
        // Added shortest-last, so a scan in order would stop too early.
        t.add(route("10.1.2.3/32", gw("192.168.0.4")));
        t.add(route("10.1.2.0/24", gw("192.168.0.3")));
        t.add(route("10.1.0.0/16", gw("192.168.0.2")));
        t.add(route("10.0.0.0/8", NextHop::Direct));
        t.add(route("0.0.0.0/0", gw("192.168.0.1")));
        assert_eq!(t.len(), 5);
        assert_eq!(hop(&*t, "10.1.2.3"), Some(gw("192.168.0.4")), "{kind:?}");
        assert_eq!(hop(&*t, "10.1.2.4"), Some(gw("192.168.0.3")), "{kind:?}");
        assert_eq!(hop(&*t, "10.1.3.4"), Some(gw("192.168.0.2")), "{kind:?}");
        assert_eq!(hop(&*t, "10.200.0.1"), Some(NextHop::Direct), "{kind:?}");
        assert_eq!(hop(&*t, "11.0.0.1"), Some(gw("192.168.0.1")), "{kind:?}");
        // Replacing a prefix returns the old route and keeps the count.
        let old = t.add(route("10.1.0.0/16", NextHop::Direct));
        assert_eq!(
            old,
            Some(route("10.1.0.0/16", gw("192.168.0.2"))),
            "{kind:?}"
        );
        assert_eq!(t.len(), 5);
        assert_eq!(hop(&*t, "10.1.3.4"), Some(NextHop::Direct), "{kind:?}");
        // Removing the /24 uncovers the /16; removing the default leaves
        // outside addresses unrouted.
        assert!(t.remove(cidr("10.1.2.0/24")).is_some(), "{kind:?}");
        assert_eq!(t.remove(cidr("10.1.2.0/24")), None, "{kind:?}");
        assert_eq!(hop(&*t, "10.1.2.4"), Some(NextHop::Direct), "{kind:?}");
        assert!(t.remove(cidr("0.0.0.0/0")).is_some(), "{kind:?}");
        assert_eq!(hop(&*t, "11.0.0.1"), None, "{kind:?}");
        assert_eq!(t.len(), 3);
    }
}

/// An address in 10–13.x.y.z with each of x, y, z one of four values, so
/// that random prefixes repeat, nest and diverge often.
fn arb_addr(nets: u8) -> impl Strategy<Value = Ipv4Addr> {
    (0..nets, 0u8..4, 0u8..4, 0u8..4, any::<bool>()).prop_map(|(net, x, y, z, odd)| {
        Ipv4Addr::new(10 + net, x * 64 + 1, y * 3, z * 80 + u8::from(odd))
    })
}

fn arb_route() -> impl Strategy<Value = Route> {
    (arb_addr(4), 0u8..=32, any::<Option<u32>>()).prop_map(|(addr, len, gateway)| Route {
        cidr: Ipv4Cidr::new(addr, len).unwrap(),
        next_hop: gateway.map_or(NextHop::Direct, |g| NextHop::Gateway(Ipv4Addr::from(g))),
    })
}

fn arb_dst() -> impl Strategy<Value = Ipv4Addr> {
    arb_addr(5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn the_three_tables_agree_on_random_tables_and_lookups(
        routes in proptest::collection::vec(arb_route(), 0..200),
        removals in proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
        dsts in proptest::collection::vec(arb_dst(), 1..100),
    ) {
        let mut tables: Vec<_> = KINDS.iter().map(|&k| new_table(k)).collect();
        for r in &routes {
            let olds: Vec<_> = tables.iter_mut().map(|t| t.add(*r)).collect();
            prop_assert!(olds.iter().all(|o| *o == olds[0]));
        }
        for i in &removals {
            if routes.is_empty() { break; }
            let c = routes[i.index(routes.len())].cidr;
            let olds: Vec<_> = tables.iter_mut().map(|t| t.remove(c)).collect();
            prop_assert!(olds.iter().all(|o| *o == olds[0]));
        }
        let lens: Vec<_> = tables.iter().map(|t| t.len()).collect();
        prop_assert!(lens.iter().all(|&l| l == lens[0]));
        // Every route's own network address finds a route at least as long.
        for r in &routes {
            let got = tables[0].lookup(r.cidr.address());
            if tables[0].len() == routes.len() {
                prop_assert!(got.is_some_and(|g| g.cidr.prefix_len() >= r.cidr.prefix_len()));
            }
        }
        for d in dsts.iter().copied().chain(routes.iter().map(|r| r.cidr.address())) {
            let found: Vec<_> = tables.iter().map(|t| t.lookup(d)).collect();
            prop_assert_eq!(found[0], found[1], "linear vs hash for {}", d);
            prop_assert_eq!(found[0], found[2], "linear vs trie for {}", d);
            if let Some(r) = found[0] {
                prop_assert!(r.cidr.contains(d));
            }
        }
    }
}

/// `--route-cache on`: a cached route serves its destination until the
/// table changes; adding (or removing) a route invalidates it, and the
/// next send looks the route up again and finds the new one.
#[test]
fn a_cached_route_is_looked_up_again_after_a_route_is_added() {
    use crate::iface::{Interface, InterfaceConfig};
    use crate::phy::Medium;
    let ours = crate::wire::Ipv4Cidr::new(crate::wire::Ipv4Address::new(10, 0, 0, 2), 24).unwrap();
    let mut iface = Interface::new(InterfaceConfig::new(Medium::Ip, ours));
    let dst: std::net::Ipv4Addr = "10.0.0.9".parse().unwrap();
    let mut slot = None;
    let first = iface
        .route_to(dst, Some(&mut slot))
        .expect("the connected route");
    assert_eq!(first.next_hop, NextHop::Direct);
    let cached = slot.expect("the lookup filled the slot");
    let generation = iface.route_generation();
    assert_eq!(cached.valid_for(generation, dst), Some(first));
    assert_eq!(
        cached.valid_for(generation, "10.0.0.8".parse().unwrap()),
        None,
        "another host"
    );
    // A more specific route to the host: the cache is stale.
    iface.add_route(route("10.0.0.9/32", gw("10.0.0.1")));
    assert_eq!(iface.route_generation(), generation + 1);
    assert_eq!(cached.valid_for(iface.route_generation(), dst), None);
    let second = iface.route_to(dst, Some(&mut slot)).unwrap();
    assert_eq!(
        second.next_hop,
        gw("10.0.0.1"),
        "looked up again, the new route"
    );
    assert_eq!(
        slot.unwrap().valid_for(iface.route_generation(), dst),
        Some(second)
    );
    iface.remove_route(cidr("10.0.0.9/32"));
    assert_eq!(slot.unwrap().valid_for(iface.route_generation(), dst), None);
    assert_eq!(
        iface.route_to(dst, Some(&mut slot)).unwrap().next_hop,
        NextHop::Direct
    );
}
