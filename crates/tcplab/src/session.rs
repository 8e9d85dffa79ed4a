//! Where a bench's trials run: against its own embedded server on loopback,
//! or against `tcplab server` on another host (`--to`). Keeps one control
//! connection per address family and reconnects after a broken one.

use crate::places::{connected, observed, HostPlacer, LivePlace};
use crate::probes::{ProbeObserver, ProbeSet};
use crate::usage::usage;
use engine::interval::IntervalSpec;
use engine::{Client, EngineError, Key, TrialObserver, DEFAULT_PORT};
use lab::PlaceSpec;
use record::{TrialOutcome, TrialParams};
use std::collections::BTreeMap;
use std::net::{Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// Where a run's trials go.
pub enum Session {
    /// Embedded servers in places built on this host.
    Local {
        /// Places by key (topology and link as given).
        places: BTreeMap<String, LivePlace>,
        /// CPU quotas and pinning for the endpoints.
        placer: Arc<HostPlacer>,
        /// `--probe` groups, if any.
        probes: Option<ProbeSet>,
        /// The user-space stack's place, for points with a tcplab end
        /// (boxed: it holds two stacks).
        stack_place: Option<Box<stackend::StackPlace>>,
    },
    /// A `tcplab server` elsewhere.
    Remote {
        /// `--to` as given.
        spec: String,
        /// Control addresses per family.
        v4: Option<SocketAddr>,
        /// IPv6 control address.
        v6: Option<SocketAddr>,
        /// Control connections per family (boxed: a client is large).
        clients: Box<[Option<Client>; 2]>,
        /// `--connect-timeout`: for each (re)connection.
        connect_timeout: Duration,
        /// `--key`: the server must prove it holds it, and so does bench.
        key: Option<Key>,
        /// `--probe` groups, if any (this host's kernel only).
        probes: Option<ProbeSet>,
        /// `--interval`, if given.
        interval: Option<IntervalSpec>,
    },
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Session::Local {
            places,
            placer,
            stack_place,
            ..
        } = self
        {
            // Servers and namespaces first, then the CPU quotas their threads used.
            *stack_place = None;
            places.clear();
            placer.clear();
        }
    }
}

/// A fresh observer for one trial, if probes are on.
fn observer_for(probes: &Option<ProbeSet>) -> Option<Box<dyn TrialObserver>> {
    probes
        .as_ref()
        .map(|g| Box::new(ProbeObserver::new(g.clone())) as Box<dyn TrialObserver>)
}

/// The key of a point's place: its topology name and link.
pub fn place_key(p: &TrialParams) -> String {
    format!("{}|{}", p.topology, p.link.as_deref().unwrap_or(""))
}

/// The place spec of a point (bad input if it does not parse). Loopback
/// names no place to build: with a `--link` the lab builds its default
/// place for a link, the router, as it always has.
pub fn place_spec(p: &TrialParams) -> anyhow::Result<PlaceSpec> {
    PlaceSpec::parse(p.topology.built(), p.link.as_deref()).map_err(usage)
}

/// Whether either end of the point is tcplab's own stack.
pub fn uses_stack(p: &TrialParams) -> bool {
    p.stack.is_tcplab() || p.server_stack.is_tcplab()
}

/// A point with a tcplab end must fit the stack's place and the stack:
/// bad input (one line, nothing stored) otherwise.
pub fn check_stack_point(p: &TrialParams) -> anyhow::Result<()> {
    if p.topology.built().is_some() || p.link.is_some() {
        return Err(usage(
            "--stack/--server-stack tcplab run in the stack's own place (a namespace and TUN devices): drop --topology and --link",
        ));
    }
    stackend::config::tcp_config(p).map_err(usage)?;
    for kind in [p.stack, p.server_stack] {
        if kind.is_tcplab() {
            stackend::iface_config::iface_setup(p, kind).map_err(usage)?;
        }
    }
    Ok(())
}

/// Splits HOST[:PORT], accepting `[v6]:port` and bare IPv6 addresses.
pub fn split_host_port(s: &str) -> anyhow::Result<(String, u16)> {
    let bad = || usage(format!("invalid --to {s:?}: expected HOST or HOST:PORT"));
    if s.is_empty() {
        return Err(bad());
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None if after.is_empty() => DEFAULT_PORT,
            None => return Err(bad()),
        };
        return Ok((host.to_string(), port));
    }
    if s.parse::<Ipv6Addr>().is_ok() {
        return Ok((s.to_string(), DEFAULT_PORT));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => {
            let port: u16 = p.parse().map_err(|_| bad())?;
            if port == 0 {
                return Err(bad());
            }
            Ok((h.to_string(), port))
        }
        Some(_) => Err(bad()),
        None => Ok((s.to_string(), DEFAULT_PORT)),
    }
}

impl Session {
    /// Builds every place the points need (and calibrates the ones with a
    /// link), reporting progress through `status`.
    pub fn local(
        points: &[TrialParams],
        interrupt: &Arc<AtomicBool>,
        status: &dyn Fn(&str),
    ) -> anyhow::Result<Session> {
        let placer = HostPlacer::new();
        let mut places = BTreeMap::new();
        let mut stack_place = None;
        for p in points.iter().filter(|p| uses_stack(p)) {
            check_stack_point(p)?;
            if stack_place.is_none() {
                status("building the tcplab stack's place");
                let built = stackend::StackPlace::build()
                    .map_err(|e| anyhow::anyhow!("building the tcplab stack's place: {e}"))?;
                stack_place = Some(Box::new(built));
            }
        }
        for p in points.iter().filter(|p| !uses_stack(p)) {
            let key = place_key(p);
            if places.contains_key(&key) {
                continue;
            }
            let spec = place_spec(p)?;
            if spec.topology != lab::Topology::Loopback {
                status(&format!("building {}", spec.label));
            }
            let mut live = LivePlace::build(&spec, placer.hook())
                .map_err(|e| e.context(format!("building the {} place", spec.label)))?;
            if spec.topology != lab::Topology::Loopback {
                status(&format!("calibrating {}", spec.label));
                let c = live
                    .calibrate(interrupt)
                    .map_err(|e| anyhow::anyhow!("calibrating the {} place: {e}", spec.label))?
                    .clone();
                status(&format!(
                    "{}: {} — calibrated goodput {}, RTT {}",
                    spec.label,
                    live.place().info().mechanism,
                    report::format::number(c.goodput_bps, report::format::Unit::Si("bit/s")),
                    report::format::number(c.rtt_s, report::format::Unit::Si("s"))
                ));
            }
            places.insert(key, live);
        }
        Ok(Session::Local {
            places,
            placer,
            probes: None,
            stack_place,
        })
    }

    /// Resolves `--to` and greets the server on each needed family within
    /// `connect_timeout`, before anything is stored. A name that does not
    /// resolve to a needed family, an unreachable address, something that is
    /// not a tcplab server, or one that speaks another protocol version is
    /// bad input: one line, nothing stored.
    pub fn remote(
        spec: &str,
        needs_v4: bool,
        needs_v6: bool,
        connect_timeout: Duration,
        key: Option<Key>,
    ) -> anyhow::Result<Session> {
        let (host, port) = split_host_port(spec)?;
        let addrs: Vec<SocketAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| usage(format!("cannot resolve --to {host:?}: {e}")))?
            .collect();
        let v4 = addrs.iter().copied().find(SocketAddr::is_ipv4);
        let v6 = addrs.iter().copied().find(SocketAddr::is_ipv6);
        if needs_v4 && v4.is_none() {
            return Err(usage(format!(
                "--to {host:?} has no IPv4 address (add --ipv6)"
            )));
        }
        if needs_v6 && v6.is_none() {
            return Err(usage(format!("--to {host:?} has no IPv6 address")));
        }
        let mut clients = [None, None];
        for (slot, addr, needed) in [(0, v4, needs_v4), (1, v6, needs_v6)] {
            if let (true, Some(addr)) = (needed, addr) {
                let c =
                    Client::connect_with_key(addr, connect_timeout, key.as_ref()).map_err(|e| {
                        match e {
                            EngineError::Rejected(why) => {
                                usage(format!("{addr} refused the client: {why}"))
                            }
                            other => usage(other),
                        }
                    })?;
                clients[slot] = Some(c);
            }
        }
        Ok(Session::Remote {
            spec: spec.to_string(),
            v4,
            v6,
            clients: Box::new(clients),
            connect_timeout,
            key,
            probes: None,
            interval: None,
        })
    }

    /// Asks a remote server, before anything is stored, whether it would
    /// serve every point (its limits and the key's): the first refusal is
    /// bad input, one line (`server refused the trial: …`). Local
    /// sessions check nothing here.
    pub fn preflight(&mut self, points: &[TrialParams]) -> anyhow::Result<()> {
        let Session::Remote { clients, .. } = self else {
            return Ok(());
        };
        for p in points {
            if let Some(client) = clients[usize::from(p.ipv6)].as_mut() {
                client.check(p).map_err(usage)?;
            }
        }
        Ok(())
    }

    /// Attaches `--probe` groups to every following trial (`None`: no probes).
    pub fn set_probes(&mut self, groups: Option<ProbeSet>) {
        match self {
            Session::Local { probes, .. } | Session::Remote { probes, .. } => *probes = groups,
        }
    }

    /// Samples every following stream trial at `--interval` and passes
    /// each interval to the spec's sink (`None`: no sampling).
    pub fn set_interval(&mut self, spec: Option<IntervalSpec>) {
        match self {
            Session::Local { places, .. } => {
                for live in places.values_mut() {
                    live.set_interval(spec.clone());
                }
            }
            Session::Remote { interval, .. } => *interval = spec,
        }
    }

    /// A description of where trials run, for the record.
    pub fn place(&self) -> String {
        match self {
            Session::Local {
                places,
                stack_place,
                ..
            } => {
                let labels: Vec<String> = places
                    .values()
                    .map(|p| p.place().info().label.clone())
                    .chain(stack_place.as_ref().map(|s| s.label()))
                    .collect();
                format!("local: {}", labels.join(", "))
            }
            Session::Remote { spec, .. } => format!("remote {spec}"),
        }
    }

    /// Runs one trial; local trials record their place and its calibration.
    pub fn run(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, EngineError> {
        match self {
            Session::Local {
                stack_place: Some(sp),
                ..
            } if uses_stack(p) => sp.run(p, interrupt).map_err(|e| match e {
                stackend::StackEndError::Interrupted => EngineError::Interrupted,
                stackend::StackEndError::Engine(e) => e,
                other => EngineError::Protocol(other.to_string()),
            }),
            Session::Local { places, probes, .. } => {
                let live = places.get_mut(&place_key(p)).ok_or_else(|| {
                    EngineError::Protocol("no place was built for this point".into())
                })?;
                live.run_recorded(p, interrupt, observer_for(probes))
            }
            Session::Remote {
                v4,
                v6,
                clients,
                connect_timeout,
                key,
                probes,
                interval,
                ..
            } => {
                let (slot, addr) = if p.ipv6 { (1, *v6) } else { (0, *v4) };
                let addr = addr.ok_or_else(|| {
                    EngineError::Protocol("no server address for this family".into())
                })?;
                let client = connected(
                    &mut clients[slot],
                    addr,
                    None,
                    *connect_timeout,
                    key.as_ref(),
                )?;
                client.set_interval(interval.clone());
                observed(client, p, interrupt, observer_for(probes))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(
            split_host_port("10.0.0.2").unwrap(),
            ("10.0.0.2".into(), 5301)
        );
        assert_eq!(split_host_port("h:99").unwrap(), ("h".into(), 99));
        assert_eq!(split_host_port("[::1]:7").unwrap(), ("::1".into(), 7));
        assert_eq!(split_host_port("::1").unwrap(), ("::1".into(), 5301));
        assert!(split_host_port("h:x").is_err());
        assert!(split_host_port(":5").is_err());
        assert!(split_host_port("h:0").is_err());
    }
}
