//! A routing table as a list, scanned whole on each lookup for the longest
//! matching prefix: the cost grows with the number of routes, as in
//! 4.3BSD's chained `rtalloc` (Huang & Chen's baseline).

use super::{Ipv4Cidr, Route, RouteTable, RouteTableKind};
use std::net::Ipv4Addr;

/// Routes in the order they were added.
#[derive(Debug, Clone, Default)]
pub struct LinearTable {
    routes: Vec<Route>,
}

impl RouteTable for LinearTable {
    fn add(&mut self, route: Route) -> Option<Route> {
        match self.routes.iter_mut().find(|r| r.cidr == route.cidr) {
            Some(r) => Some(std::mem::replace(r, route)),
            None => {
                self.routes.push(route);
                None
            }
        }
    }

    fn remove(&mut self, cidr: Ipv4Cidr) -> Option<Route> {
        let at = self.routes.iter().position(|r| r.cidr == cidr)?;
        Some(self.routes.remove(at))
    }

    fn lookup(&self, dst: Ipv4Addr) -> Option<Route> {
        let mut best: Option<&Route> = None;
        for r in &self.routes {
            if r.cidr.contains(dst)
                && best.is_none_or(|b| r.cidr.prefix_len() > b.cidr.prefix_len())
            {
                best = Some(r);
            }
        }
        best.copied()
    }

    fn len(&self) -> usize {
        self.routes.len()
    }

    fn kind(&self) -> RouteTableKind {
        RouteTableKind::Linear
    }
}
