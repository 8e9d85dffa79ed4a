//! Where a bench's trials run: against its own embedded server on loopback,
//! or against `tcplab server` on another host (`--to`). Keeps one control
//! connection per address family and reconnects after a broken one.

use crate::usage::usage;
use engine::{Client, EngineError, Limits, Server, DEFAULT_PORT};
use record::{TrialOutcome, TrialParams};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The control addresses trials use, per address family.
pub struct Session {
    place: String,
    v4: Option<SocketAddr>,
    v6: Option<SocketAddr>,
    clients: [Option<Client>; 2],
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
    /// Resolves `--to` (a usage error if it does not resolve to a needed
    /// family) or starts embedded servers for the families the plan uses.
    pub fn new(to: Option<&str>, needs_v4: bool, needs_v6: bool) -> anyhow::Result<Session> {
        match to {
            None => {
                let start = |ip: IpAddr| -> anyhow::Result<SocketAddr> {
                    let server = Server::bind(SocketAddr::new(ip, 0), Limits::default())?;
                    Ok(server.spawn()?)
                };
                let v4 = needs_v4
                    .then(|| start(Ipv4Addr::LOCALHOST.into()))
                    .transpose()?;
                let v6 = needs_v6
                    .then(|| start(Ipv6Addr::LOCALHOST.into()))
                    .transpose()
                    .map_err(|e| e.context("IPv6 loopback is not available on this host"))?;
                Ok(Session {
                    place: "loopback (embedded server)".into(),
                    v4,
                    v6,
                    clients: [None, None],
                })
            }
            Some(spec) => {
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
                Ok(Session {
                    place: format!("remote {spec}"),
                    v4,
                    v6,
                    clients: [None, None],
                })
            }
        }
    }

    /// A description of where trials run, for the record.
    pub fn place(&self) -> &str {
        &self.place
    }

    /// Runs one trial, (re)connecting the control connection if needed.
    pub fn run(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, EngineError> {
        let (slot, addr) = if p.ipv6 { (1, self.v6) } else { (0, self.v4) };
        let addr =
            addr.ok_or_else(|| EngineError::Protocol("no server address for this family".into()))?;
        let client = &mut self.clients[slot];
        if !client.as_ref().is_some_and(Client::usable) {
            *client = None;
            *client = Some(Client::connect(addr, CONNECT_TIMEOUT)?);
        }
        client.as_mut().expect("connected").run_trial(p, interrupt)
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
