//! A connection's cached route (`--route-cache on`, issue 29): BSD keeps
//! the route in the PCB (`inp_route`, its `ro_rt` and the destination it
//! was looked up for), so a TCP segment skips the table; here the cache is
//! revalidated by the table's generation, which every change to the table
//! advances (BSD checks `RTF_UP` on the cached entry instead, which a
//! deleted route clears).

use super::Route;
use std::net::Ipv4Addr;

/// A route as looked up for one destination, at one table generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedRoute {
    generation: u64,
    dst: Ipv4Addr,
    route: Route,
}

impl CachedRoute {
    /// `route`, found for `dst` when the table was at `generation`.
    pub fn new(generation: u64, dst: Ipv4Addr, route: Route) -> CachedRoute {
        CachedRoute {
            generation,
            dst,
            route,
        }
    }

    /// The route, if it was looked up for `dst` and the table is still at
    /// the generation it was looked up in.
    pub fn valid_for(&self, generation: u64, dst: Ipv4Addr) -> Option<Route> {
        (self.generation == generation && self.dst == dst).then_some(self.route)
    }
}
