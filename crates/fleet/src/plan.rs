//! What a fleet run does on its hosts: a study on every client host, or a
//! bench plan on every client against every other server host (on its own
//! when the inventory has no other server), as tasks that each occupy the
//! hosts they use.

use crate::inventory::{Inventory, Role};

/// The plan: the words of a `tcplab study …` or `tcplab bench …` command.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetPlan {
    /// `study` or `bench`, then its arguments.
    pub words: Vec<String>,
}

/// One piece of a fleet run: the plan on `client`, against `server`'s
/// tcplab server when given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// The client host (inventory index).
    pub client: usize,
    /// The server host, for bench plans between hosts.
    pub server: Option<usize>,
}

impl Task {
    /// The hosts the task occupies.
    pub fn hosts(&self) -> impl Iterator<Item = usize> {
        std::iter::once(self.client).chain(self.server)
    }

    /// `client` or `client → server`, by name.
    pub fn label(&self, inv: &Inventory) -> String {
        match self.server {
            Some(s) => format!("{} → {}", inv.hosts[self.client].name, inv.hosts[s].name),
            None => inv.hosts[self.client].name.clone(),
        }
    }
}

/// Flags a fleet sets itself on the hosts, refused in a plan.
pub const RESERVED: &[&str] = &["--db", "--to", "--key", "--out", "--connect-timeout"];

impl FleetPlan {
    /// A plan from its words; the error says what is wrong in one line.
    pub fn new(words: Vec<String>) -> Result<FleetPlan, String> {
        match words.first().map(String::as_str) {
            Some("study") | Some("bench") => {}
            Some(other) => {
                return Err(format!(
                    "a fleet plan is a study or bench command (study NAME … or bench TEST …), not {other:?}"
                ))
            }
            None => return Err("no plan: give study NAME … or bench TEST …".into()),
        }
        if let Some(w) = words.iter().find(|w| {
            RESERVED
                .iter()
                .any(|r| w.as_str() == *r || w.starts_with(&format!("{r}=")))
        }) {
            return Err(format!(
                "{w} is set by the fleet on each host; leave it out of the plan"
            ));
        }
        Ok(FleetPlan { words })
    }

    /// Whether the plan is a study.
    pub fn is_study(&self) -> bool {
        self.words[0] == "study"
    }

    /// The tasks of this plan on `inv`'s hosts, in inventory order.
    pub fn tasks(&self, inv: &Inventory) -> Vec<Task> {
        let clients: Vec<usize> = inv.with_role(Role::Client).map(|(i, _)| i).collect();
        if !self.is_study() {
            let pairs: Vec<Task> = clients
                .iter()
                .flat_map(|&c| {
                    inv.with_role(Role::Server)
                        .filter(move |(s, _)| *s != c)
                        .map(move |(s, _)| Task {
                            client: c,
                            server: Some(s),
                        })
                })
                .collect();
            if !pairs.is_empty() {
                return pairs;
            }
        }
        clients
            .into_iter()
            .map(|client| Task {
                client,
                server: None,
            })
            .collect()
    }
}

/// The next task to start: the first pending one whose hosts are all free
/// and alive.
pub fn next_startable(pending: &[Task], busy: &[bool], alive: &[bool]) -> Option<usize> {
    pending
        .iter()
        .position(|t| t.hosts().all(|h| !busy[h] && alive[h]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inv(roles: &[&str]) -> Inventory {
        let mut text = String::new();
        for (i, r) in roles.iter().enumerate() {
            text += &format!("[[host]]\nname = \"h{i}\"\ndestination = \"d{i}\"\nroles = {r}\n");
        }
        Inventory::parse(&text).unwrap()
    }

    fn words(w: &str) -> Vec<String> {
        w.split(' ').map(String::from).collect()
    }

    #[test]
    fn studies_run_on_every_client_and_bench_pairs_clients_with_other_servers() {
        let i = inv(&["[\"client\", \"server\"]", "[\"server\"]", "[\"client\"]"]);
        let study = FleetPlan::new(words("study markatos02 --quick")).unwrap();
        let t: Vec<String> = study.tasks(&i).iter().map(|t| t.label(&i)).collect();
        assert_eq!(t, ["h0", "h2"]);
        let bench = FleetPlan::new(words("bench tcp-stream")).unwrap();
        let t: Vec<String> = bench.tasks(&i).iter().map(|t| t.label(&i)).collect();
        assert_eq!(t, ["h0 → h1", "h2 → h0", "h2 → h1"]);
        // No server but itself: the client benches on its own.
        let alone = inv(&["[\"client\", \"server\"]"]);
        let t: Vec<String> = bench
            .tasks(&alone)
            .iter()
            .map(|t| t.label(&alone))
            .collect();
        assert_eq!(t, ["h0"]);
    }

    #[test]
    fn plans_that_are_not_study_or_bench_or_set_fleet_flags_are_refused() {
        for (w, want) in [
            ("show 1", "not \"show\""),
            ("bench tcp-stream --to 1.2.3.4", "--to is set by the fleet"),
            ("study abrams91 --out=/x", "--out=/x is set by the fleet"),
            ("bench tcp-rr --db x", "--db is set"),
        ] {
            let e = FleetPlan::new(words(w)).unwrap_err();
            assert!(e.contains(want), "{w}: {e}");
        }
        assert!(FleetPlan::new(vec![]).unwrap_err().contains("no plan"));
    }

    #[test]
    fn a_task_waits_for_its_hosts_to_be_free_and_skips_dead_ones() {
        let pending = [
            Task {
                client: 0,
                server: Some(1),
            },
            Task {
                client: 2,
                server: Some(1),
            },
            Task {
                client: 2,
                server: None,
            },
        ];
        assert_eq!(next_startable(&pending, &[false; 3], &[true; 3]), Some(0));
        assert_eq!(
            next_startable(&pending, &[false, true, false], &[true; 3]),
            Some(2)
        );
        assert_eq!(
            next_startable(&pending, &[false; 3], &[false, true, true]),
            Some(1)
        );
        assert_eq!(
            next_startable(&pending, &[false, false, true], &[true; 3]),
            Some(0)
        );
        assert_eq!(
            next_startable(&pending, &[true, true, true], &[true; 3]),
            None
        );
    }
}
