//! The inventory: a TOML file naming the hosts of a fleet, how to reach each
//! one over SSH, what it does (client, server or both) and labels that
//! travel with its results.
//!
//! ```toml
//! ssh_config = "fleet_ssh_config"  # optional, passed to ssh -F (relative to this file)
//! tcplab = "/usr/local/bin/tcplab" # optional: tcplab on the hosts (default: tcplab on PATH)
//! port = 5301                      # optional: the servers' control port
//!
//! [[host]]
//! name = "ams-1"
//! destination = "root@ams-1.example.net"
//! roles = ["client", "server"]     # default: both
//! address = "192.0.2.10"           # optional: where clients reach its server
//! labels = { site = "ams", rack = "r12" }
//! ```

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What a host does in a fleet run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Runs the plan's client side (and studies, which run on one host).
    Client,
    /// Runs `tcplab server` for the clients' bench plans.
    Server,
}

/// One host of the fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    /// Its name in the inventory, reports and progress lines.
    pub name: String,
    /// What ssh connects to (`user@host`, or a `Host` of the ssh config).
    pub destination: String,
    /// Client, server or both.
    pub roles: BTreeSet<Role>,
    /// The address clients use to reach this host's server.
    pub address: String,
    /// The tcplab program on this host.
    pub tcplab: String,
    /// Free-form labels stored with this host's imported runs.
    pub labels: BTreeMap<String, String>,
}

impl Host {
    /// Whether the host has `role`.
    pub fn is(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
}

/// A parsed, checked inventory.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// The ssh config file to use (`ssh -F`), if any.
    pub ssh_config: Option<PathBuf>,
    /// The servers' control port.
    pub port: u16,
    /// The hosts, in file order.
    pub hosts: Vec<Host>,
}

/// Why an inventory was refused: one line naming the file, entry and field.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct InventoryError {
    /// The inventory file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    ssh_config: Option<PathBuf>,
    tcplab: Option<String>,
    port: Option<u16>,
    #[serde(default)]
    host: Vec<HostDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostDoc {
    name: String,
    destination: String,
    roles: Option<Vec<Role>>,
    address: Option<String>,
    tcplab: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

impl Inventory {
    /// Reads and checks the inventory at `path`.
    pub fn read(path: &Path) -> Result<Inventory, InventoryError> {
        let fail = |message: String| InventoryError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        let mut inv = Inventory::parse(&text).map_err(fail)?;
        if let Some(cfg) = &inv.ssh_config {
            let full = path.parent().unwrap_or(Path::new(".")).join(cfg);
            if !full.is_file() {
                return Err(fail(format!("ssh_config {}: no such file", full.display())));
            }
            inv.ssh_config = Some(full);
        }
        Ok(inv)
    }

    /// Parses and checks an inventory's text; the error names the entry
    /// and field.
    pub fn parse(text: &str) -> Result<Inventory, String> {
        let doc: FileDoc = toml::from_str(text).map_err(|e| one_line(&e.to_string()))?;
        if doc.host.is_empty() {
            return Err("no hosts: add at least one [[host]] entry".into());
        }
        let default_tcplab = doc.tcplab.unwrap_or_else(|| "tcplab".into());
        check_word("tcplab", &default_tcplab)?;
        let mut hosts = Vec::with_capacity(doc.host.len());
        let mut names = BTreeSet::new();
        for (i, h) in doc.host.into_iter().enumerate() {
            let at = format!("host {} ({})", i + 1, h.name);
            if h.name.is_empty()
                || !h
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            {
                return Err(format!(
                    "{at}: name must be letters, digits, '.', '_' or '-'"
                ));
            }
            if !names.insert(h.name.clone()) {
                return Err(format!("{at}: the name is used twice"));
            }
            check_word(&format!("{at}: destination"), &h.destination)?;
            let roles: BTreeSet<Role> = h
                .roles
                .unwrap_or_else(|| vec![Role::Client, Role::Server])
                .into_iter()
                .collect();
            if roles.is_empty() {
                return Err(format!("{at}: roles is empty (client, server or both)"));
            }
            let address = match h.address {
                Some(a) => a,
                None => host_of(&h.destination).to_string(),
            };
            check_word(&format!("{at}: address"), &address)?;
            let tcplab = h.tcplab.unwrap_or_else(|| default_tcplab.clone());
            check_word(&format!("{at}: tcplab"), &tcplab)?;
            hosts.push(Host {
                name: h.name,
                destination: h.destination,
                roles,
                address,
                tcplab,
                labels: h.labels,
            });
        }
        Ok(Inventory {
            ssh_config: doc.ssh_config,
            port: doc.port.unwrap_or(engine::server::DEFAULT_PORT),
            hosts,
        })
    }

    /// The hosts with `role`.
    pub fn with_role(&self, role: Role) -> impl Iterator<Item = (usize, &Host)> {
        self.hosts
            .iter()
            .enumerate()
            .filter(move |(_, h)| h.is(role))
    }
}

/// The host part of an ssh destination (`user@host:port` forms aside).
fn host_of(destination: &str) -> &str {
    destination.rsplit('@').next().unwrap_or(destination)
}

/// A value handed to ssh or a remote shell: not empty, no whitespace or
/// control characters, and never starting with '-' (it would be read as
/// an option).
fn check_word(what: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if value.starts_with('-') {
        return Err(format!("{what} {value:?} starts with '-'"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{what} {value:?} has spaces or control characters"));
    }
    Ok(())
}

/// TOML's multi-line messages as one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|') && !l.chars().all(|c| c == '^'))
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        port = 6000
        [[host]]
        name = "a"
        destination = "root@198.18.0.1"
        labels = { site = "x" }
        [[host]]
        name = "b"
        destination = "b.example"
        roles = ["server"]
        address = "192.0.2.7"
        tcplab = "/opt/tcplab"
    "#;

    #[test]
    fn a_good_inventory_reads_with_its_defaults() {
        let inv = Inventory::parse(GOOD).unwrap();
        assert_eq!(inv.port, 6000);
        let a = &inv.hosts[0];
        assert!(a.is(Role::Client) && a.is(Role::Server));
        assert_eq!(a.address, "198.18.0.1");
        assert_eq!(a.tcplab, "tcplab");
        assert_eq!(a.labels["site"], "x");
        let b = &inv.hosts[1];
        assert!(!b.is(Role::Client) && b.is(Role::Server));
        assert_eq!(
            (b.address.as_str(), b.tcplab.as_str()),
            ("192.0.2.7", "/opt/tcplab")
        );
        assert_eq!(inv.with_role(Role::Client).count(), 1);
    }

    #[test]
    fn bad_inventories_name_the_entry_and_field() {
        for (text, want) in [
            ("", "no hosts"),
            ("[[host]]\nname = \"a\"\n", "destination"),
            (
                "[[host]]\nname = \"a\"\ndestination = \"-oProxyCommand=x\"\n",
                "host 1 (a): destination \"-oProxyCommand=x\" starts with '-'",
            ),
            (
                "[[host]]\nname = \"a\"\ndestination = \"x\"\n[[host]]\nname = \"a\"\ndestination = \"y\"\n",
                "host 2 (a): the name is used twice",
            ),
            (
                "[[host]]\nname = \"a\"\ndestination = \"x\"\nroles = [\"router\"]\n",
                "unknown variant",
            ),
            (
                "[[host]]\nname = \"a\"\ndestination = \"x\"\nroles = []\n",
                "roles is empty",
            ),
            (
                "[[host]]\nname = \"a b\"\ndestination = \"x\"\n",
                "host 1 (a b): name must be",
            ),
            (
                "[[host]]\nname = \"a\"\ndestination = \"x\"\ncolour = 1\n",
                "unknown field `colour`",
            ),
        ] {
            let e = Inventory::parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
