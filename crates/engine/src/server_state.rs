//! What every client thread of one `tcplab server` shares: the limits, the
//! count of authenticated (or, without keys, greeted) clients in total and
//! per source address, the keys that authenticated recently, and the load
//! workers running for all of them.
//!
//! A share of `--max-clients` is kept for keys that authenticated recently:
//! a quarter of the slots (rounded down, so none below 4 clients) are taken
//! only by a client whose key had completed a handshake on this server in
//! the [`RECENT`] before (10 minutes), so that keys first seen while the
//! server is full cannot take the last slots from its regular users. A
//! server without keys keeps none.

use crate::cancel::Canceller;
use crate::limits::Limits;
use crate::workloads::side_of;
use record::TrialParams;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long after a key's handshake it counts as recent (may take the
/// slots kept for recent keys).
pub(crate) const RECENT: Duration = Duration::from_secs(600);

/// The slots of `max_clients` kept for recently authenticated keys.
pub(crate) fn reserved_slots(max_clients: usize) -> usize {
    max_clients / 4
}

/// What a source address is counted as: an IPv4 address (an IPv4-mapped
/// IPv6 one as IPv4), or the /64 an IPv6 address is in (its first address),
/// as one host usually holds a whole /64.
pub(crate) fn rate_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
    }
}

/// What every client thread of one server shares.
pub(crate) struct Shared {
    pub(crate) limits: Limits,
    pub(crate) clients: AtomicUsize,
    /// Clients per source address, each key's apart (`None`: no key).
    pub(crate) per_address: Mutex<HashMap<(IpAddr, Option<String>), usize>>,
    pub(crate) load_workers: AtomicU32,
    /// Every control connection, so stopping the server wakes them all.
    pub(crate) connections: Canceller,
    /// What each key (or address) and all trials hold (`key_usage`).
    pub(crate) usage: Arc<crate::key_usage::Usage>,
    /// When each key (by name) last completed a handshake.
    pub(crate) recent_keys: Mutex<HashMap<String, Instant>>,
    /// Each key's (or address's) control frames and handshakes, paced.
    pub(crate) pace: crate::control_pace::ControlPace<crate::key_usage::Owner>,
}

impl Shared {
    /// Notes that `key` authenticated now; whether it had in the
    /// [`RECENT`] before.
    pub(crate) fn note_key(&self, key: &str) -> bool {
        let now = Instant::now();
        let mut m = self.recent_keys.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() > 4096 {
            m.retain(|_, at| now.duration_since(*at) < RECENT);
        }
        let before = m.insert(key.to_string(), now);
        before.is_some_and(|at| now.duration_since(at) < RECENT)
    }
}

/// A client's place among the server's connections: counted in total and
/// per source address (each key's holders apart, so one key's clients
/// behind a NAT cannot take another key's places there), released when
/// the client's thread ends.
pub(crate) struct ClientSlot {
    pub(crate) shared: Arc<Shared>,
    at: Option<(IpAddr, Option<String>)>,
}

impl ClientSlot {
    /// Takes a slot for a client from `ip` that has authenticated with
    /// `key` (or been greeted); `recent`: its key authenticated in the
    /// [`RECENT`] before (it may take the slots kept for such keys). Or
    /// says why there is none.
    pub(crate) fn take(
        shared: &Arc<Shared>,
        ip: Option<IpAddr>,
        key: Option<&str>,
        recent: bool,
    ) -> Result<ClientSlot, String> {
        let l = &shared.limits;
        let mut per = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let n = shared.clients.load(Ordering::SeqCst);
        if n >= l.max_clients {
            return Err(format!(
                "server busy: {} clients already connected (--max-clients)",
                l.max_clients
            ));
        }
        let kept = reserved_slots(l.max_clients);
        if !recent && n >= l.max_clients - kept {
            return Err(format!(
                "server busy: {n} clients connected, and the last {kept} of --max-clients {} are kept for keys that authenticated in the last {} minutes",
                l.max_clients,
                RECENT.as_secs() / 60
            ));
        }
        let at = ip.map(|ip| (ip, key.map(str::to_string)));
        if let Some(at) = &at {
            let n = per.entry(at.clone()).or_insert(0);
            if *n >= l.max_per_address {
                let whose = key.map_or_else(String::new, |k| format!(" with key {k:?}"));
                return Err(format!(
                    "server busy: {} clients from {}{whose} already (--max-per-address)",
                    l.max_per_address, at.0
                ));
            }
            *n += 1;
        }
        shared.clients.fetch_add(1, Ordering::SeqCst);
        Ok(ClientSlot {
            shared: shared.clone(),
            at,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut per = self
            .shared
            .per_address
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(at) = self.at.take() {
            if let Some(n) = per.get_mut(&at) {
                *n -= 1;
                if *n == 0 {
                    per.remove(&at);
                }
            }
        }
        self.shared.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Load workers one trial runs on the server, counted against the
/// server's total until dropped.
pub(crate) struct LoadReservation<'a> {
    shared: &'a Shared,
    workers: u32,
}

impl<'a> LoadReservation<'a> {
    /// Reserves the server-side load workers of `p`, or says why not.
    pub(crate) fn take(shared: &'a Shared, p: &TrialParams) -> Result<LoadReservation<'a>, String> {
        let workers = p
            .load
            .filter(|l| l.side == side_of(p, false))
            .map_or(0, |l| l.workers);
        let max = shared.limits.max_total_load_workers;
        shared
            .load_workers
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                n.checked_add(workers).filter(|&t| t <= max)
            })
            .map_err(|n| {
                format!(
                    "server limit: --load with {workers} workers, but {n} of the server's {max} are running for other clients"
                )
            })?;
        Ok(LoadReservation { shared, workers })
    }
}

impl Drop for LoadReservation<'_> {
    fn drop(&mut self) {
        self.shared
            .load_workers
            .fetch_sub(self.workers, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(max_clients: usize) -> Arc<Shared> {
        shared_with(Limits {
            max_clients,
            max_per_address: 100,
            ..Limits::default()
        })
    }

    fn shared_with(limits: Limits) -> Arc<Shared> {
        Arc::new(Shared {
            usage: Arc::new(crate::key_usage::Usage::new(&limits, 0, 1024)),
            limits,
            clients: AtomicUsize::new(0),
            per_address: Mutex::new(HashMap::new()),
            load_workers: AtomicU32::new(0),
            connections: Canceller::new(),
            recent_keys: Mutex::new(HashMap::new()),
            pace: Default::default(),
        })
    }

    #[test]
    fn the_last_quarter_of_the_slots_is_kept_for_recent_keys() {
        let s = shared(8);
        let ip = Some("10.0.0.1".parse().unwrap());
        let held: Vec<_> = (0..6)
            .map(|_| ClientSlot::take(&s, ip, None, false).unwrap())
            .collect();
        let e = ClientSlot::take(&s, ip, None, false).err().unwrap();
        assert!(e.contains("kept for keys that authenticated"), "{e}");
        let a = ClientSlot::take(&s, ip, None, true).unwrap();
        let _b = ClientSlot::take(&s, ip, None, true).unwrap();
        let e = ClientSlot::take(&s, ip, None, true).err().unwrap();
        assert!(e.contains("(--max-clients)"), "{e}");
        drop(a);
        drop(held);
        assert_eq!(s.clients.load(Ordering::SeqCst), 1);
        assert!(!s.note_key("a"));
        assert!(s.note_key("a"));
    }

    #[test]
    fn an_ipv6_address_counts_as_its_slash_64() {
        let k = |s: &str| rate_key(s.parse().unwrap());
        assert_eq!(k("2001:db8:1:2:aa::1"), k("2001:db8:1:2::ffff"));
        assert_ne!(k("2001:db8:1:2::1"), k("2001:db8:1:3::1"));
        assert_eq!(k("::ffff:10.0.0.1"), k("10.0.0.1"));
        assert_eq!(k("10.0.0.1").to_string(), "10.0.0.1");
    }

    /// One key's idle clients behind an address (a NAT) take that key's
    /// places there, not another key's (before: 4 idle clients of one key
    /// left another key's holder behind the same address 0 of 10 tries).
    #[test]
    fn each_keys_clients_from_one_address_are_counted_apart() {
        let s = shared_with(Limits {
            max_per_address: 2,
            ..Limits::default()
        });
        let ip = Some("10.0.0.1".parse().unwrap());
        let held: Vec<_> = (0..2)
            .map(|_| ClientSlot::take(&s, ip, Some("atk"), true).unwrap())
            .collect();
        let e = ClientSlot::take(&s, ip, Some("atk"), true).err().unwrap();
        assert_eq!(
            e,
            "server busy: 2 clients from 10.0.0.1 with key \"atk\" already (--max-per-address)"
        );
        let victim = ClientSlot::take(&s, ip, Some("victim"), true).unwrap();
        let keyless = ClientSlot::take(&s, ip, None, true).unwrap();
        drop(held);
        assert!(ClientSlot::take(&s, ip, Some("atk"), true).is_ok());
        drop((victim, keyless));
        assert_eq!(s.per_address.lock().unwrap().len(), 0);
    }
}
