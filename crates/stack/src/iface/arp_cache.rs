//! The ARP cache (RFC 826, with RFC 1122 §2.3.2.1's flood limit): IPv4
//! addresses to Ethernet addresses, each entry expiring on the injected
//! clock; an address being resolved is remembered as pending, so requests
//! for it go out at most once per `request_interval`; the cache holds at
//! most `capacity` entries, evicting pending entries first and then the one
//! closest to expiry.

use crate::time::Instant;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::Duration;

/// An Ethernet (MAC) address.
pub type HardwareAddr = [u8; 6];

/// How long entries live, how often to ask, how many to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpConfig {
    /// How long a resolved entry is used before it must be resolved again.
    pub entry_lifetime: Duration,
    /// The least time between two requests for one address (RFC 1122: at
    /// most one per second).
    pub request_interval: Duration,
    /// The most entries kept, resolved and pending together.
    pub capacity: usize,
}

impl Default for ArpConfig {
    /// 60 s entries (Linux's base reachable time is 30 s, BSD's 20 min),
    /// one request a second, 1024 entries.
    fn default() -> ArpConfig {
        ArpConfig {
            entry_lifetime: Duration::from_secs(60),
            request_interval: Duration::from_secs(1),
            capacity: 1024,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Resolved { hw: HardwareAddr, expires: Instant },
    Pending { last_request: Instant },
}

/// What to do for a packet to an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Send it to this hardware address.
    Found(HardwareAddr),
    /// Unknown: send an ARP request now (the address is now pending).
    SendRequest,
    /// A request went out less than `request_interval` ago: wait.
    RateLimited,
}

/// Counters, for the per-block accounting of issue 19.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArpStats {
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that asked for a request.
    pub requests: u64,
    /// Lookups held back by the rate limit.
    pub rate_limited: u64,
    /// Entries evicted because the cache was full.
    pub evictions: u64,
}

/// The cache.
#[derive(Debug, Clone)]
pub struct ArpCache {
    config: ArpConfig,
    entries: HashMap<Ipv4Addr, Entry>,
    stats: ArpStats,
}

impl ArpCache {
    /// An empty cache.
    pub fn new(config: ArpConfig) -> ArpCache {
        ArpCache {
            config,
            entries: HashMap::new(),
            stats: ArpStats::default(),
        }
    }

    /// Where to send a packet for `ip` at `now`, and whether to ask.
    pub fn lookup(&mut self, ip: Ipv4Addr, now: Instant) -> Lookup {
        match self.entries.get_mut(&ip) {
            Some(Entry::Resolved { hw, expires }) if now < *expires => {
                self.stats.hits += 1;
                Lookup::Found(*hw)
            }
            Some(Entry::Pending { last_request })
                if now.since(*last_request) < self.config.request_interval =>
            {
                self.stats.rate_limited += 1;
                Lookup::RateLimited
            }
            Some(e) => {
                // Expired, or pending long enough to ask again.
                *e = Entry::Pending { last_request: now };
                self.stats.requests += 1;
                Lookup::SendRequest
            }
            None => {
                self.make_room(now);
                self.entries
                    .insert(ip, Entry::Pending { last_request: now });
                self.stats.requests += 1;
                Lookup::SendRequest
            }
        }
    }

    /// Records that `ip` is at `hw` (from a reply, or a request naming us),
    /// valid for the entry lifetime from `now`.
    pub fn fill(&mut self, ip: Ipv4Addr, hw: HardwareAddr, now: Instant) {
        if !self.entries.contains_key(&ip) {
            self.make_room(now);
        }
        let expires = now.after(self.config.entry_lifetime);
        self.entries.insert(ip, Entry::Resolved { hw, expires });
    }

    /// The hardware address of `ip` if known and fresh, without asking.
    pub fn peek(&self, ip: Ipv4Addr, now: Instant) -> Option<HardwareAddr> {
        match self.entries.get(&ip)? {
            Entry::Resolved { hw, expires } if now < *expires => Some(*hw),
            _ => None,
        }
    }

    /// Drops resolved entries that have expired, and pending ones whose
    /// last request is over an entry lifetime old.
    pub fn expire(&mut self, now: Instant) {
        let lifetime = self.config.entry_lifetime;
        self.entries.retain(|_, e| match *e {
            Entry::Resolved { expires, .. } => now < expires,
            Entry::Pending { last_request } => now.since(last_request) < lifetime,
        });
    }

    /// How many entries are held (resolved and pending).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The counters so far.
    pub fn stats(&self) -> ArpStats {
        self.stats
    }

    /// Makes room for one more entry: drops expired ones, then the oldest
    /// pending one, then the resolved one nearest expiry.
    fn make_room(&mut self, now: Instant) {
        if self.entries.len() < self.config.capacity {
            return;
        }
        self.expire(now);
        while self.entries.len() >= self.config.capacity.max(1) {
            let victim = self
                .entries
                .iter()
                .min_by_key(|(_, e)| match **e {
                    Entry::Pending { last_request } => (0, last_request),
                    Entry::Resolved { expires, .. } => (1, expires),
                })
                .map(|(ip, _)| *ip);
            let Some(ip) = victim else { break };
            self.entries.remove(&ip);
            self.stats.evictions += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Clock, ManualClock};

    const HW: HardwareAddr = [2, 0, 0, 0, 0, 1];

    fn ip(last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, 0, last)
    }

    #[test]
    fn an_entry_answers_until_it_expires_then_asks_again() {
        let clock = ManualClock::new(Instant::ZERO);
        let mut c = ArpCache::new(ArpConfig::default());
        assert_eq!(c.lookup(ip(1), clock.now()), Lookup::SendRequest);
        c.fill(ip(1), HW, clock.now());
        clock.advance(Duration::from_secs(59));
        assert_eq!(c.lookup(ip(1), clock.now()), Lookup::Found(HW));
        assert_eq!(c.peek(ip(1), clock.now()), Some(HW));
        clock.advance(Duration::from_secs(1));
        assert_eq!(c.peek(ip(1), clock.now()), None);
        assert_eq!(c.lookup(ip(1), clock.now()), Lookup::SendRequest);
        assert_eq!(c.stats().hits, 1);
        assert_eq!(c.stats().requests, 2);
    }

    #[test]
    fn requests_for_a_pending_address_go_out_at_most_once_a_second() {
        let clock = ManualClock::new(Instant(1_000));
        let mut c = ArpCache::new(ArpConfig::default());
        let mut sent = 0;
        // 3.5 s of lookups every 10 ms: requests at 0, 1, 2 and 3 s.
        for _ in 0..350 {
            if c.lookup(ip(2), clock.now()) == Lookup::SendRequest {
                sent += 1;
            }
            clock.advance(Duration::from_millis(10));
        }
        assert_eq!(sent, 4);
        assert_eq!(c.stats().rate_limited, 346);
        // A reply ends the wait at once.
        c.fill(ip(2), HW, clock.now());
        assert_eq!(c.lookup(ip(2), clock.now()), Lookup::Found(HW));
    }

    #[test]
    fn a_full_cache_evicts_pending_entries_first_then_the_nearest_expiry() {
        let clock = ManualClock::new(Instant::ZERO);
        let config = ArpConfig {
            capacity: 3,
            ..ArpConfig::default()
        };
        let mut c = ArpCache::new(config);
        c.fill(ip(1), HW, clock.now());
        clock.advance(Duration::from_secs(1));
        c.fill(ip(2), HW, clock.now());
        assert_eq!(c.lookup(ip(3), clock.now()), Lookup::SendRequest);
        assert_eq!(c.len(), 3);
        c.fill(ip(4), HW, clock.now());
        assert_eq!(c.len(), 3);
        assert_eq!(c.peek(ip(1), clock.now()), Some(HW), "resolved kept");
        assert_eq!(
            c.lookup(ip(3), clock.now()),
            Lookup::SendRequest,
            "pending went first"
        );
        // Full with 1, 2 and 4 resolved: 3 pending again pushed out 1.
        assert_eq!(c.len(), 3);
        assert_eq!(
            c.peek(ip(1), clock.now()),
            None,
            "the nearest expiry went next"
        );
        assert_eq!(c.peek(ip(2), clock.now()), Some(HW));
        assert_eq!(c.stats().evictions, 2);
    }

    #[test]
    fn expire_drops_stale_entries() {
        let clock = ManualClock::new(Instant::ZERO);
        let mut c = ArpCache::new(ArpConfig::default());
        c.fill(ip(1), HW, clock.now());
        c.lookup(ip(2), clock.now());
        clock.advance(Duration::from_secs(30));
        c.fill(ip(3), HW, clock.now());
        clock.advance(Duration::from_secs(30));
        c.expire(clock.now());
        assert_eq!(c.len(), 1);
        assert_eq!(c.peek(ip(3), clock.now()), Some(HW));
    }
}
