//! What each key (or, on a keyless server, each source address) holds on
//! the server right now, and what all of them hold together: client slots,
//! running trials, granted rate, buffer memory and descriptors. A key's
//! caps hold across all its connections, not per trial.
//!
//! A key without its own `max_clients`, `max_trials` gets half the
//! server's `--max-clients` (when the server has more than one key), so one
//! key never takes every slot; every owner gets at most half the server's
//! total memory and descriptor budgets, so one owner's trials never take
//! what another's need. The descriptor budget is the open-file limit less
//! the control connections and the process's own.

use crate::fd_limit::split;
use crate::key_policy::KeyPolicy;
use crate::limits::{binary_bytes, Limits};
use crate::owner_cpu::{Meter, OwnerCpu};
use crate::trial_cost::{server_cost, TrialCost};
use crate::workloads::side_of;
use record::numbers::rate_text;
use record::{LoadSide, TestKind, TrialParams};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// Whose budget a client or trial counts against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// A key's holder (by key name), from any address.
    Key(String),
    /// A client of a keyless server, by source address.
    Address(IpAddr),
}

/// What one owner (or the whole server) holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Authenticated control connections.
    pub clients: usize,
    /// Running trials.
    pub trials: usize,
    /// Sum of the rates granted to running trials, bit/s.
    pub rate_bps: u64,
    /// Buffer memory of running trials.
    pub memory: u64,
    /// Descriptors of running trials.
    pub descriptors: u64,
    /// `--load` workers running trials hold on the server.
    pub load_workers: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.clients += o.clients;
        self.trials += o.trials;
        self.rate_bps = self.rate_bps.saturating_add(o.rate_bps);
        self.memory = self.memory.saturating_add(o.memory);
        self.descriptors = self.descriptors.saturating_add(o.descriptors);
        self.load_workers = self.load_workers.saturating_add(o.load_workers);
    }

    fn sub(&mut self, o: &Tally) {
        self.clients -= o.clients;
        self.trials -= o.trials;
        self.rate_bps -= o.rate_bps;
        self.memory -= o.memory;
        self.descriptors -= o.descriptors;
        self.load_workers -= o.load_workers;
    }
}

/// The server's budgets and what is held of them.
#[derive(Debug)]
pub struct Usage {
    limits: Limits,
    /// Descriptors all trials together may hold.
    total_descriptors: u64,
    /// Whether keys get only a share of the server by default (several keys).
    shared: bool,
    /// What owners took beyond their trials' grants, for their next ones.
    debts: crate::overuse::Debts<Owner>,
    /// Keys the server knows (0: keyless).
    keys: usize,
    /// What each owner's running trials use of the CPU together.
    cpu: Arc<OwnerCpu<Owner>>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    total: Tally,
    owners: HashMap<Owner, Tally>,
}

impl Usage {
    /// Budgets for a server with `limits`, `keys` keys (0: keyless) and
    /// `pending` handshakes under way at most (`--max-pending`), under
    /// this process's open-file limit as it is now.
    pub fn new(limits: &Limits, keys: usize, pending: usize) -> Usage {
        Usage::with_descriptors(
            limits,
            keys,
            split(limits, pending, crate::fd_limit::soft_limit()).trials,
        )
    }

    /// Budgets with `total_descriptors` for all trials together.
    pub fn with_descriptors(limits: &Limits, keys: usize, total_descriptors: u64) -> Usage {
        Usage {
            limits: limits.clone(),
            total_descriptors,
            shared: keys != 1,
            debts: Default::default(),
            keys,
            cpu: Arc::default(),
            state: Mutex::default(),
        }
    }

    fn share<T: Copy + Into<u128> + TryFrom<u128>>(&self, whole: T) -> T {
        if !self.shared {
            return whole;
        }
        let half = (whole.into() / 2).max(1);
        T::try_from(half).unwrap_or(whole)
    }

    /// Most clients the key may hold at once.
    fn max_clients(&self, k: &KeyPolicy) -> usize {
        k.max_clients
            .unwrap_or_else(|| self.share(self.limits.max_clients as u64) as usize)
    }

    /// Counts a client that proved `key` against the key's slots; released
    /// when the returned hold drops.
    pub fn client(self: &Arc<Self>, key: &KeyPolicy) -> Result<Hold, String> {
        let max = self.max_clients(key);
        let owner = Owner::Key(key.name.clone());
        let take = Tally {
            clients: 1,
            ..Tally::default()
        };
        let slots = self.limits.max_clients;
        self.take(owner.clone(), |held, st| {
            if held.clients >= max {
                return Err(format!(
                    "key {:?} allows at most {max} clients at once (max_clients), and {} are connected",
                    key.name, held.clients
                ));
            }
            // One slot is kept for each other key with no client connected:
            // keys together cannot fill --max-clients and lock one out.
            if held.clients > 0 {
                let busy_others = st
                    .owners
                    .iter()
                    .filter(|(o, t)| **o != owner && matches!(o, Owner::Key(_)) && t.clients > 0)
                    .count();
                let idle_others = self.keys.saturating_sub(1 + busy_others);
                let free = slots.saturating_sub(st.total.clients);
                if free <= idle_others {
                    return Err(format!(
                        "key {:?} holds {} clients, and the {free} of --max-clients {slots} left are kept one for each of the {idle_others} other keys with none connected",
                        key.name, held.clients
                    ));
                }
            }
            Ok(take)
        })
    }

    /// Counts trial `p` of `owner` (holding `key`, if any), with `workers`
    /// `--load` workers on the server, against every budget; the grant
    /// holds its share until dropped. The refusal is one line naming the
    /// key or server limit and what was asked.
    pub fn trial(
        self: &Arc<Self>,
        owner: Owner,
        key: Option<&KeyPolicy>,
        p: &TrialParams,
        workers: u32,
    ) -> Result<TrialGrant, String> {
        let cost = server_cost(p);
        let l = &self.limits;
        let named = match (&owner, key) {
            (_, Some(k)) => format!("key {:?}", k.name),
            (Owner::Address(ip), None) => format!("the clients from {ip}"),
            (Owner::Key(n), None) => format!("key {n:?}"),
        };
        if let Some(why) = self.debts.refusal(&owner, &named) {
            return Err(why);
        }
        let min_rate = l.min_send_rate_bps;
        let declared = declared_rate(p);
        let mut rate = 0u64;
        let hold = self.take(owner.clone(), |held, st| {
            let total = &st.total;
            let who = &named;
            if let Some(k) = key {
                let max = k
                    .max_trials
                    .unwrap_or_else(|| self.share(l.max_clients as u64) as usize);
                if held.trials >= max {
                    return Err(format!(
                        "{who} allows at most {max} trials at once (max_trials), and {} are running",
                        held.trials
                    ));
                }
                if let Some(m) = k.max_rate_bps {
                    let left = m.saturating_sub(held.rate_bps);
                    let want = declared.unwrap_or(left);
                    if want > left || left < min_rate {
                        let asked = declared
                            .map_or_else(|| "any rate".to_string(), |d| rate_text(d as f64));
                        return Err(format!(
                            "{who} allows at most {} in total (max_rate), and its running trials hold {} (asked {asked})",
                            rate_text(m as f64),
                            rate_text(held.rate_bps as f64)
                        ));
                    }
                    rate = want;
                }
                // Several keys: one key's trials run at most half of the
                // server's load workers.
                let most = self.share(u64::from(l.max_total_load_workers));
                if workers > 0 && self.keys > 1 && held.load_workers + u64::from(workers) > most {
                    return Err(format!(
                        "{who} may run at most {most} of the server's {} --load workers (half, as other keys share the server), and its running trials hold {}",
                        l.max_total_load_workers, held.load_workers
                    ));
                }
            }
            if key.is_none_or(|k| k.max_rate_bps.is_none()) {
                rate = declared.unwrap_or(0);
            }
            let owner_mem = self.share(l.max_total_memory);
            if total.memory.saturating_add(cost.memory) > l.max_total_memory
                || held.memory.saturating_add(cost.memory) > owner_mem
            {
                return Err(format!(
                    "server limit: the trial needs {} of buffers, and running trials hold {} of the server's {} ({} for {who}) (--max-total-memory)",
                    binary_bytes(cost.memory),
                    binary_bytes(total.memory),
                    binary_bytes(l.max_total_memory),
                    binary_bytes(held.memory),
                ));
            }
            let owner_fds = self.share(self.total_descriptors);
            if total.descriptors.saturating_add(cost.descriptors) > self.total_descriptors
                || held.descriptors.saturating_add(cost.descriptors) > owner_fds
            {
                return Err(format!(
                    "server limit: the trial needs {} descriptors, and running trials hold {} of the {} the open-file limit leaves for trials ({} for {who}, at most {owner_fds})",
                    cost.descriptors, total.descriptors, self.total_descriptors, held.descriptors
                ));
            }
            Ok(Tally {
                trials: 1,
                rate_bps: rate,
                memory: cost.memory,
                descriptors: cost.descriptors,
                load_workers: u64::from(workers),
                ..Tally::default()
            })
        })?;
        Ok(TrialGrant {
            hold,
            rate_bps: (rate > 0).then_some(rate),
            cost,
        })
    }

    /// Under one lock: `check(owner's tally, total)` says what to add
    /// (or why not), and it is added.
    fn take(
        self: &Arc<Self>,
        owner: Owner,
        check: impl FnOnce(&Tally, &State) -> Result<Tally, String>,
    ) -> Result<Hold, String> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let held = st.owners.get(&owner).copied().unwrap_or_default();
        let take = check(&held, &st)?;
        st.total.add(&take);
        st.owners.entry(owner.clone()).or_default().add(&take);
        Ok(Hold {
            usage: self.clone(),
            owner,
            held: take,
        })
    }

    /// What `owner` holds now.
    pub fn held(&self, owner: &Owner) -> Tally {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.owners.get(owner).copied().unwrap_or_default()
    }

    /// Whether the server has several keys (each gets a share of it).
    pub fn several_keys(&self) -> bool {
        self.keys > 1
    }

    /// Counts a trial of `owner` among its running trials' CPU, held to
    /// `base` CPU-seconds per second together plus `extra` while it runs.
    pub fn cpu_meter(&self, owner: Owner, base: f64, extra: f64) -> Meter<Owner> {
        self.cpu.join(owner, base, extra)
    }

    /// What `owner`'s running trials use of the CPU together, and what
    /// their `--load` workers add to its budget (CPU-seconds per second).
    pub fn cpu_used(&self, owner: &Owner) -> (f64, f64) {
        self.cpu.used(owner)
    }

    /// What all owners hold now.
    pub fn total(&self) -> Tally {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).total
    }
}

/// The rate a trial declares it moves: `--send-rate × --parallel` of a
/// stream, or none.
pub fn declared_rate(p: &TrialParams) -> Option<u64> {
    let stream = matches!(p.test, TestKind::TcpStream | TestKind::UdpStream);
    p.send_rate_bps
        .filter(|_| stream)
        .map(|r| r.saturating_mul(u64::from(p.parallel.max(1))))
}

/// A share of the budgets, given back when dropped.
#[derive(Debug)]
pub struct Hold {
    usage: Arc<Usage>,
    owner: Owner,
    held: Tally,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut st = self.usage.state.lock().unwrap_or_else(|e| e.into_inner());
        st.total.sub(&self.held);
        if let Some(t) = st.owners.get_mut(&self.owner) {
            t.sub(&self.held);
            if *t == Tally::default() {
                st.owners.remove(&self.owner);
            }
        }
    }
}

/// A running trial's share: its granted rate (if any) and its cost.
#[derive(Debug)]
pub struct TrialGrant {
    hold: Hold,
    /// The rate the server granted (and enforces), bit/s: the declared
    /// `--send-rate × --parallel`, or what is left of the key's `max_rate`.
    pub rate_bps: Option<u64>,
    /// The trial's buffers and descriptors.
    pub cost: TrialCost,
}

impl TrialGrant {
    /// Counts what the trial took beyond its grant and CPU budget against
    /// its owner's next trials ([`crate::overuse`]).
    pub(crate) fn charge(&self, took: crate::overuse::Overuse) {
        self.hold.usage.debts.charge(&self.hold.owner, took);
    }

    /// The trial as the server runs it: a reverse stream without
    /// `--send-rate` under a granted rate is paced at that rate shared
    /// over its flows.
    pub fn paced(&self, p: &TrialParams) -> TrialParams {
        let mut q = p.clone();
        let stream = matches!(p.test, TestKind::TcpStream | TestKind::UdpStream);
        if let Some(r) = self.rate_bps {
            if stream && side_of(p, false) == LoadSide::Sender && p.send_rate_bps.is_none() {
                q.send_rate_bps = Some((r / u64::from(p.parallel.max(1))).max(1));
            }
        }
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rate: &str) -> KeyPolicy {
        KeyPolicy {
            max_rate_bps: Some(record::factor::parse::rate(rate).unwrap()),
            ..KeyPolicy::unlimited("b")
        }
    }

    fn stream(rate: u64, n: u32) -> TrialParams {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.send_rate_bps = Some(rate);
        p.parallel = n;
        p.duration_s = Some(1.0);
        p
    }

    #[test]
    fn a_keys_rate_holds_across_its_trials() {
        let u = Arc::new(Usage::with_descriptors(&Limits::default(), 2, 1000));
        let k = key("20mbit");
        let o = Owner::Key("b".into());
        let first = u
            .trial(o.clone(), Some(&k), &stream(15_000_000, 1), 0)
            .unwrap();
        assert_eq!(first.rate_bps, Some(15_000_000));
        assert_eq!(
            u.trial(o.clone(), Some(&k), &stream(10_000_000, 1), 0).unwrap_err(),
            "key \"b\" allows at most 20mbit in total (max_rate), and its running trials hold 15mbit (asked 10mbit)"
        );
        // An rr trial gets what is left, enforced by measurement.
        let rr = TrialParams::defaults(TestKind::TcpRr);
        let g = u.trial(o.clone(), Some(&k), &rr, 0).unwrap();
        assert_eq!(g.rate_bps, Some(5_000_000));
        drop((first, g));
        assert_eq!(u.total(), Tally::default());
        let mut rev = stream(0, 4);
        rev.send_rate_bps = None;
        rev.reverse = true;
        let g = u.trial(o, Some(&k), &rev, 0).unwrap();
        assert_eq!(g.paced(&rev).send_rate_bps, Some(5_000_000));
    }

    #[test]
    fn one_key_takes_at_most_half_the_slots_and_descriptors() {
        let u = Arc::new(Usage::with_descriptors(&Limits::default(), 2, 1000));
        let k = KeyPolicy::unlimited("a");
        let holds: Vec<_> = (0..16).map(|_| u.client(&k).unwrap()).collect();
        assert_eq!(
            u.client(&k).unwrap_err(),
            "key \"a\" allows at most 16 clients at once (max_clients), and 16 are connected"
        );
        drop(holds);
        let mut p = TrialParams::defaults(TestKind::UdpStream);
        p.parallel = 128;
        let o = Owner::Key("a".into());
        let a: Vec<_> = (0..3)
            .map(|_| u.trial(o.clone(), Some(&k), &p, 0).unwrap())
            .collect();
        let e = u.trial(o, Some(&k), &p, 0).unwrap_err();
        assert!(
            e.contains("needs 128 descriptors") && e.contains("at most 500"),
            "{e}"
        );
        // Another key still gets its own half.
        let other = u.trial(Owner::Key("v".into()), None, &p, 0).unwrap();
        assert_eq!(u.total().descriptors, 4 * 128);
        drop((a, other));
        assert_eq!(u.total(), Tally::default());
    }

    #[test]
    fn keys_together_leave_a_slot_for_each_key_with_none_connected() {
        let limits = Limits {
            max_clients: 4,
            ..Limits::default()
        };
        let u = Arc::new(Usage::with_descriptors(&limits, 3, 1000));
        let (a, b, c) = (
            KeyPolicy::unlimited("a"),
            KeyPolicy::unlimited("b"),
            KeyPolicy::unlimited("c"),
        );
        // a takes its half (2): two slots stay, one for each other key.
        let held_a: Vec<_> = (0..2).map(|_| u.client(&a).unwrap()).collect();
        let first_b = u.client(&b).unwrap();
        // b's second would take the slot kept for c.
        assert_eq!(
            u.client(&b).unwrap_err(),
            "key \"b\" holds 1 clients, and the 1 of --max-clients 4 left are kept one for each of the 1 other keys with none connected"
        );
        let first_c = u.client(&c).unwrap();
        // With c connected, nothing is kept: the server is full.
        drop(held_a);
        let second_b = u.client(&b).unwrap();
        drop((first_b, first_c, second_b));
    }
}
