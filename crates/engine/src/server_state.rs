//! What every client thread of one `tcplab server` shares: the limits, the
//! count of clients in total and per source address, and the load workers
//! running for all of them.

use crate::cancel::Canceller;
use crate::limits::Limits;
use crate::workloads::side_of;
use record::TrialParams;
use std::collections::HashMap;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What every client thread of one server shares.
pub(crate) struct Shared {
    pub(crate) limits: Limits,
    pub(crate) clients: AtomicUsize,
    pub(crate) per_address: Mutex<HashMap<IpAddr, usize>>,
    pub(crate) load_workers: AtomicU32,
    /// Every control connection, so stopping the server wakes them all.
    pub(crate) connections: Canceller,
    /// What each key (or address) and all trials hold (`key_usage`).
    pub(crate) usage: Arc<crate::key_usage::Usage>,
}

/// A client's place among the server's connections: counted in total and
/// per source address, released when the client's thread ends.
pub(crate) struct ClientSlot {
    pub(crate) shared: Arc<Shared>,
    ip: Option<IpAddr>,
}

impl ClientSlot {
    /// Takes a slot for `stream`, or says why there is none.
    pub(crate) fn take(shared: &Arc<Shared>, stream: &TcpStream) -> Result<ClientSlot, String> {
        let l = &shared.limits;
        let ip = stream.peer_addr().ok().map(|a| a.ip());
        let mut per = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        if shared.clients.load(Ordering::SeqCst) >= l.max_clients {
            return Err(format!(
                "server busy: {} clients already connected (--max-clients)",
                l.max_clients
            ));
        }
        if let Some(ip) = ip {
            let n = per.entry(ip).or_insert(0);
            if *n >= l.max_per_address {
                return Err(format!(
                    "server busy: {} connections from {ip} already (--max-per-address)",
                    l.max_per_address
                ));
            }
            *n += 1;
        }
        shared.clients.fetch_add(1, Ordering::SeqCst);
        Ok(ClientSlot {
            shared: shared.clone(),
            ip,
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
        if let Some(ip) = self.ip {
            if let Some(n) = per.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    per.remove(&ip);
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
