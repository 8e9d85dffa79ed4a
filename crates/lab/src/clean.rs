//! `lab show` and `lab clean`: what tcplab has created on this host now,
//! and removing what runs that no longer exist left behind (a run killed
//! with SIGKILL cannot tear down its namespaces and cgroups itself).

use crate::cmd;
use crate::host;
use crate::names::{Tag, OWNER_DIR, PREFIX};
use crate::netns;
use serde::Serialize;
use std::path::PathBuf;

/// One thing tcplab created.
#[derive(Debug, Clone, Serialize)]
pub struct Resource {
    /// `namespace`, `cgroup` or `owner-file`.
    pub kind: &'static str,
    /// Its name or path.
    pub name: String,
    /// The pid of the run that created it, if recorded.
    pub owner: Option<u32>,
    /// Whether that run is still alive.
    pub owner_alive: bool,
    /// Interfaces and qdiscs inside a namespace, for `lab show`.
    pub contents: Vec<String>,
}

fn owner_of(name: &str) -> (Option<u32>, bool) {
    match Tag::of_name(name).and_then(|t| t.owner()) {
        Some((pid, alive)) => (Some(pid), alive),
        None => (None, false),
    }
}

/// Everything named `tcplab-…` that exists now.
pub fn inventory() -> Vec<Resource> {
    let mut out = Vec::new();
    for ns in netns::list(PREFIX) {
        let (owner, owner_alive) = owner_of(&ns);
        let mut contents: Vec<String> = cmd::ip(Some(&ns), &["-o", "link", "show"])
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split(':').nth(1).map(|s| format!("link {}", s.trim())))
            .collect();
        contents.extend(
            cmd::tc(&ns, &["qdisc", "show"])
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.contains("noqueue"))
                .map(|l| l.trim().to_string()),
        );
        out.push(Resource {
            kind: "namespace",
            name: ns,
            owner,
            owner_alive,
            contents,
        });
    }
    for cg in host::list_cgroups() {
        let name = cg
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (owner, owner_alive) = owner_of(&name);
        out.push(Resource {
            kind: "cgroup",
            name: cg.display().to_string(),
            owner,
            owner_alive,
            contents: Vec::new(),
        });
    }
    if let Ok(d) = std::fs::read_dir(OWNER_DIR) {
        for e in d.flatten() {
            let file = e.file_name().to_string_lossy().into_owned();
            let tag = file.strip_suffix(".pid").and_then(Tag::from_text);
            let (owner, owner_alive) = tag
                .and_then(|t| t.owner())
                .map_or((None, false), |(p, a)| (Some(p), a));
            out.push(Resource {
                kind: "owner-file",
                name: e.path().display().to_string(),
                owner,
                owner_alive,
                contents: Vec::new(),
            });
        }
    }
    out
}

/// What `clean` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CleanReport {
    /// Removed resources.
    pub removed: Vec<String>,
    /// Resources kept because their run is alive.
    pub kept: Vec<String>,
    /// Resources that could not be removed, with the reason.
    pub failed: Vec<String>,
}

/// Removes every tcplab resource whose run is gone (or, with `all`, every one).
pub fn clean(all: bool) -> CleanReport {
    let mut r = CleanReport::default();
    for res in inventory() {
        if res.owner_alive && !all {
            r.kept.push(res.name);
            continue;
        }
        let result = match res.kind {
            "namespace" => cmd::ip(None, &["netns", "del", &res.name]).map(|_| ()),
            "cgroup" => host::remove_cgroup(&PathBuf::from(&res.name)),
            _ => std::fs::remove_file(&res.name)
                .map_err(|e| crate::error::LabError::io("removing owner file", e)),
        };
        match result {
            Ok(()) => r.removed.push(res.name),
            Err(e) => r.failed.push(format!("{}: {e}", res.name)),
        }
    }
    r
}
