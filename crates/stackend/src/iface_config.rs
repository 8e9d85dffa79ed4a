//! The interface a stack end is built with for a trial: its checksum
//! method (`--checksum`), its routing-table structure (`--route-table`),
//! the extra routes in it (`--routes N`) and whether its device's driver
//! has a thread of its own (`--layers`). Unlike `TcpConfig`, these
//! are fixed when the interface is built, so an end whose setup differs
//! from the last trial's is rebuilt.

use crate::error::StackEndError;
use record::factor::{Checksum, Layers, RouteTable};
use record::{StackImpl, TrialParams};
use stack::iface::route::{Ipv4Cidr, NextHop, Route, RouteTableKind};
use stack::iface::Interface;
use stack::wire::ChecksumMethod;
use std::net::Ipv4Addr;

/// The first of the extra /32 routes: 198.18.0.0/15 (RFC 2544's
/// benchmarking range), as the lab's `--routes` uses in Linux's tables.
pub const EXTRA_ROUTES_BASE: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 0);

/// The most extra routes: the /15 holds 131,072 addresses.
pub const MAX_EXTRA_ROUTES: u32 = 1 << 17;

/// What an end's interface is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfaceSetup {
    /// How TCP and UDP checksums are computed.
    pub checksum: ChecksumMethod,
    /// The routing table's structure.
    pub route_table: RouteTableKind,
    /// Extra /32 routes from [`EXTRA_ROUTES_BASE`], each via the gateway.
    pub extra_routes: u32,
    /// Whether the device's driver runs on a thread of its own.
    pub layers: Layers,
}

impl Default for IfaceSetup {
    /// The stack's own defaults: RFC 1071, a trie, no extra routes.
    fn default() -> IfaceSetup {
        IfaceSetup {
            checksum: ChecksumMethod::default(),
            route_table: RouteTableKind::Trie,
            extra_routes: 0,
            layers: Layers::Merged,
        }
    }
}

/// The interface setup of trial `p`'s end on a device of `kind`, or why
/// that end cannot have it: `--checksum offload` needs the
/// `tcplab-offload` device (the kernel finishes the checksums, which a
/// plain TUN or TAP would drop), and that device always offloads, so it
/// takes no software method.
pub fn iface_setup(p: &TrialParams, kind: StackImpl) -> Result<IfaceSetup, StackEndError> {
    let offload_device = kind == StackImpl::TcplabOffload;
    let checksum = match (p.checksum, offload_device) {
        (None, _) => ChecksumMethod::default(),
        (Some(Checksum::Offload), true) => ChecksumMethod::Offload,
        (Some(Checksum::Offload), false) => {
            return Err(StackEndError::Unsupported(format!(
                "--checksum offload on a {} end (only tcplab-offload's device finishes checksums)",
                kind.name()
            )))
        }
        (Some(c), true) => {
            return Err(StackEndError::Unsupported(format!(
                "--checksum {} on a tcplab-offload end (its device always offloads checksums; use tcplab or tcplab-tap)",
                c.name()
            )))
        }
        (Some(Checksum::Bytewise), false) => ChecksumMethod::Bytewise,
        (Some(Checksum::Rfc1071), false) => ChecksumMethod::Rfc1071,
        (Some(Checksum::Incremental), false) => ChecksumMethod::Incremental,
    };
    let route_table = match p.route_table {
        None | Some(RouteTable::Trie) => RouteTableKind::Trie,
        Some(RouteTable::Linear) => RouteTableKind::Linear,
        Some(RouteTable::Hash) => RouteTableKind::Hash,
    };
    let extra_routes = p.routes.unwrap_or(0);
    if extra_routes > MAX_EXTRA_ROUTES {
        return Err(StackEndError::Unsupported(format!(
            "--routes {extra_routes} (a stack end takes at most {MAX_EXTRA_ROUTES}, the /32s of 198.18.0.0/15)"
        )));
    }
    Ok(IfaceSetup {
        checksum,
        route_table,
        extra_routes,
        layers: p.layers.unwrap_or(Layers::Merged),
    })
}

/// Adds `n` /32 routes from [`EXTRA_ROUTES_BASE`] via `gateway` to `iface`.
pub fn add_extra_routes(iface: &mut Interface, n: u32, gateway: Ipv4Addr) {
    let base = u32::from(EXTRA_ROUTES_BASE);
    for i in 0..n.min(MAX_EXTRA_ROUTES) {
        let cidr = Ipv4Cidr::new(Ipv4Addr::from(base + i), 32).expect("/32 is a valid prefix");
        iface.add_route(Route {
            cidr,
            next_hop: NextHop::Gateway(gateway),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::TestKind;
    use stack::iface::InterfaceConfig;
    use stack::phy::Medium;
    use stack::wire::Ipv4Address;

    #[test]
    fn unset_levels_keep_the_stacks_defaults() {
        let p = TrialParams::defaults(TestKind::TcpStream);
        for kind in [
            StackImpl::Tcplab,
            StackImpl::TcplabOffload,
            StackImpl::TcplabTap,
        ] {
            assert_eq!(iface_setup(&p, kind).unwrap(), IfaceSetup::default());
        }
    }

    #[test]
    fn levels_map_onto_the_interface() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.checksum = Some(Checksum::Bytewise);
        p.route_table = Some(RouteTable::Linear);
        p.routes = Some(1000);
        let s = iface_setup(&p, StackImpl::Tcplab).unwrap();
        assert_eq!(s.checksum, ChecksumMethod::Bytewise);
        assert_eq!(s.route_table, RouteTableKind::Linear);
        assert_eq!(s.extra_routes, 1000);
        p.checksum = Some(Checksum::Incremental);
        p.route_table = Some(RouteTable::Hash);
        let s = iface_setup(&p, StackImpl::TcplabTap).unwrap();
        assert_eq!(s.checksum, ChecksumMethod::Incremental);
        assert_eq!(s.route_table, RouteTableKind::Hash);
        p.checksum = Some(Checksum::Offload);
        let s = iface_setup(&p, StackImpl::TcplabOffload).unwrap();
        assert_eq!(s.checksum, ChecksumMethod::Offload);
    }

    #[test]
    fn checksums_the_device_cannot_have_are_refused() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.checksum = Some(Checksum::Offload);
        let e = iface_setup(&p, StackImpl::Tcplab).unwrap_err().to_string();
        assert!(e.contains("--checksum offload"), "{e}");
        p.checksum = Some(Checksum::Rfc1071);
        let e = iface_setup(&p, StackImpl::TcplabOffload)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--checksum rfc1071"), "{e}");
        p.checksum = None;
        p.routes = Some(MAX_EXTRA_ROUTES + 1);
        assert!(iface_setup(&p, StackImpl::Tcplab).is_err());
    }

    #[test]
    fn extra_routes_go_into_the_table_of_the_chosen_structure() {
        let cidr = stack::wire::Ipv4Cidr::new(Ipv4Address::new(10, 0, 0, 2), 24).unwrap();
        let mut config = InterfaceConfig::new(Medium::Ip, cidr);
        config.route_table = RouteTableKind::Hash;
        let mut iface = Interface::new(config);
        let before = iface.route_table().len();
        add_extra_routes(&mut iface, 1000, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(iface.route_table().len(), before + 1000);
        assert_eq!(iface.route_table().kind(), RouteTableKind::Hash);
        let hit = iface.route_table().lookup(Ipv4Addr::new(198, 18, 3, 231));
        assert_eq!(
            hit.map(|r| r.next_hop),
            Some(NextHop::Gateway(Ipv4Addr::new(10, 0, 0, 1)))
        );
    }
}
