//! What `tcplab server` says about its clients: one event when a client
//! is accepted or refused, one per trial it runs or is refused, one when
//! it leaves; with a key, each names the client's key.

use crate::report::SideReport;
use record::{LoadSide, TrialParams};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// One line of the server's log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ServerEvent {
    /// A client said hello.
    Connected {
        /// The client's control address.
        peer: SocketAddr,
        /// The client's self-description (`tcplab 0.1.0`).
        client: String,
        /// The name of the key it proved (`None`: a server without keys).
        key: Option<String>,
    },
    /// A trial ended on this server, well or not.
    Trial {
        /// The client's control address.
        peer: SocketAddr,
        /// The client's key's name.
        key: Option<String>,
        /// The test (`tcp-stream`, …).
        test: String,
        /// Connections or flows.
        parallel: u32,
        /// What this server did: `sender` or `receiver`.
        role: String,
        /// Payload bytes this server moved.
        bytes: u64,
        /// Seconds from the server's first to last byte (receivers) or of
        /// its work (senders).
        seconds: f64,
        /// Bits per second over `seconds`, this server's view.
        throughput_bps: Option<f64>,
        /// `ok`, `failed`, or `refused` (its setup was turned down: the
        /// key's or the server's limits; nothing ran).
        result: String,
        /// Why it failed or was refused, as the client was told.
        error: Option<String>,
    },
    /// A connection was turned away before it was served.
    Refused {
        /// The connection's address.
        peer: SocketAddr,
        /// The client's key's name, once known (a refused pre-flight
        /// `check`).
        key: Option<String>,
        /// Why, as the client was told.
        reason: String,
    },
    /// Lines about connections were dropped: from one address (an IPv6
    /// /64) that wrote more than `burst` at once or more than `per_second`
    /// in the long run (key holders' lines have their own, larger
    /// bucket per address); or, with no address, from all
    /// addresses together past the server-wide limit (or from addresses
    /// the server stopped tracking before it could say so).
    Suppressed {
        /// The address (for IPv6, the /64's first address); none for the
        /// server-wide count.
        address: Option<std::net::IpAddr>,
        /// Whether the lines were about clients that proved a key (their
        /// own buckets) rather than before authentication.
        key_holders: bool,
        /// Lines dropped since its last line.
        dropped: u64,
        /// Lines it may write at once.
        burst: u32,
        /// Lines per second it may write in the long run.
        per_second: f64,
    },
    /// A client's control connection closed.
    Disconnected {
        /// The client's control address.
        peer: SocketAddr,
        /// Trials it ran.
        trials: u32,
    },
}

/// Receives the server's events (the binary prints them).
pub type ServerLog = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

/// How a trial ended on this server, for its event.
#[derive(Debug, Clone, Copy)]
pub enum TrialEnd<'a> {
    /// It ran; this side's report.
    Ran(&'a SideReport),
    /// It failed after its setup was accepted.
    Failed(&'a str),
    /// Its setup was refused; nothing ran.
    Refused(&'a str),
}

/// The event of a trial of the client holding `key` that ended as `end`.
pub fn trial_event(
    peer: SocketAddr,
    key: Option<&str>,
    p: &TrialParams,
    end: TrialEnd,
) -> ServerEvent {
    let role = match crate::workloads::side_of(p, false) {
        LoadSide::Sender => "sender",
        LoadSide::Receiver => "receiver",
    };
    let (bytes, seconds, error) = match end {
        TrialEnd::Ran(r) => {
            let seconds = r.delay_s.filter(|d| *d > 0.0).unwrap_or(r.wall_s);
            let error = (!r.errors.is_empty()).then(|| r.errors.join("; "));
            (r.bytes, seconds, error)
        }
        TrialEnd::Failed(e) | TrialEnd::Refused(e) => (0, 0.0, Some(e.to_string())),
    };
    let result = match (end, &error) {
        (TrialEnd::Refused(_), _) => "refused",
        (_, None) => "ok",
        (_, Some(_)) => "failed",
    };
    ServerEvent::Trial {
        peer,
        key: key.map(str::to_string),
        test: p.test.name().to_string(),
        parallel: p.parallel.max(1),
        role: role.to_string(),
        bytes,
        seconds,
        throughput_bps: (seconds > 0.0 && bytes > 0).then(|| bytes as f64 * 8.0 / seconds),
        result: result.to_string(),
        error,
    }
}

/// Longest peer-supplied string, in characters, a log line carries.
pub const MAX_PEER_TEXT: usize = 120;

/// `s`, safe for a one-line text log: control characters (newlines, ESC
/// and so ANSI sequences, C1 controls, DEL) and the invisible or
/// direction-changing formatting characters shown as `\u{..}`, a backslash
/// doubled, and cut at [`MAX_PEER_TEXT`] characters with how much was cut.
pub fn escape_peer_text(s: &str) -> String {
    escape_capped(s, MAX_PEER_TEXT)
}

/// [`escape_peer_text`] with a cap of `cap` characters of output (an
/// escape counts as the characters it takes, so a string of control
/// characters is no longer than a plain one).
fn escape_capped(s: &str, cap: usize) -> String {
    let mut out = String::with_capacity(s.len().min(cap) + 24);
    let (mut shown, mut width, mut total) = (0usize, 0usize, 0usize);
    for c in s.chars() {
        total += 1;
        if shown + 1 < total {
            continue;
        }
        let piece = match c {
            '\\' => "\\\\".to_string(),
            '\n' => "\\n".to_string(),
            '\r' => "\\r".to_string(),
            '\t' => "\\t".to_string(),
            c if c.is_control()
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}') =>
            {
                format!("\\u{{{:x}}}", c as u32)
            }
            c => c.to_string(),
        };
        let w = piece.chars().count();
        if width + w > cap {
            continue;
        }
        width += w;
        shown += 1;
        out.push_str(&piece);
    }
    if total > shown {
        out.push_str(&format!("…(+{} chars)", total - shown));
    }
    out
}

impl ServerEvent {
    /// The event with every string escaped by [`escape_peer_text`]: what
    /// a peer sent (its name, a key id, the text of a refusal that quotes
    /// it) reaches the log as one bounded line.
    pub fn escaped(&self) -> ServerEvent {
        let e = |s: &String| escape_peer_text(s);
        let o = |s: &Option<String>| s.as_deref().map(escape_peer_text);
        match self {
            ServerEvent::Connected { peer, client, key } => ServerEvent::Connected {
                peer: *peer,
                client: e(client),
                key: o(key),
            },
            ServerEvent::Trial {
                peer,
                key,
                test,
                parallel,
                role,
                bytes,
                seconds,
                throughput_bps,
                result,
                error,
            } => ServerEvent::Trial {
                peer: *peer,
                key: o(key),
                test: e(test),
                parallel: *parallel,
                role: e(role),
                bytes: *bytes,
                seconds: *seconds,
                throughput_bps: *throughput_bps,
                result: e(result),
                error: error.as_ref().map(|s| escape_long(s)),
            },
            ServerEvent::Refused { peer, key, reason } => ServerEvent::Refused {
                peer: *peer,
                key: o(key),
                reason: escape_long(reason),
            },
            ServerEvent::Disconnected { .. } | ServerEvent::Suppressed { .. } => self.clone(),
        }
    }
}

/// A refusal's or a failure's text: the server's own sentence (it names
/// flags and limits) with what it quotes of the peer; escaped, and cut at
/// four times a peer string.
fn escape_long(s: &str) -> String {
    escape_capped(s, MAX_PEER_TEXT * 4)
}

/// Log lines one address (an IPv6 /64) may write at once before its lines
/// are rate-limited.
pub const LOG_BURST: f64 = 20.0;
/// Log lines per second one address (an IPv6 /64) may write in the long run.
pub const LOG_PER_SECOND: f64 = 2.0;
/// Log lines all unauthenticated connections together may write at once
/// (many addresses each within their own limit still fill the log).
pub const LOG_ALL_BURST: f64 = 200.0;
/// Log lines per second all unauthenticated connections together may
/// write in the long run.
pub const LOG_ALL_PER_SECOND: f64 = 20.0;
/// Log lines one address may write at once about clients that proved a
/// key (their arrivals, departures and refusals): more than a stranger
/// gets, as a key holder's day of benches writes a few per run.
pub const LOG_KEY_HOLDER_BURST: f64 = 200.0;
/// Log lines per second one address may write about key holders in the
/// long run.
pub const LOG_KEY_HOLDER_PER_SECOND: f64 = 20.0;
/// Log lines all key holders together may write at once (one key's
/// holders from many addresses cannot fill the disk either).
pub const LOG_KEY_HOLDERS_ALL_BURST: f64 = 1000.0;
/// Log lines per second all key holders together may write in the long
/// run.
pub const LOG_KEY_HOLDERS_ALL_PER_SECOND: f64 = 50.0;
/// Addresses whose rate is tracked at once (the least recently seen are
/// forgotten first).
const LOG_TRACKED: usize = 4096;

/// A token bucket per source address (per /64 for IPv6), or for all.
struct Bucket {
    tokens: f64,
    at: std::time::Instant,
    dropped: u64,
}

impl Bucket {
    fn full(burst: f64, now: std::time::Instant) -> Bucket {
        Bucket {
            tokens: burst,
            at: now,
            dropped: 0,
        }
    }

    /// Adds what `per_second` earned since it was last seen, up to `burst`.
    fn refill(&mut self, now: std::time::Instant, burst: f64, per_second: f64) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * per_second).min(burst);
        self.at = now;
    }
}

/// Whose lines a bucket limits: each scope has a bucket per address and
/// one server-wide, so that neither can spend the other's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Scope {
    /// Connections not (yet) proven to hold a key.
    Anyone,
    /// Clients that proved a key, and trials that ran.
    KeyHolder,
}

impl Scope {
    /// (burst, per second) of one address's bucket.
    fn limits(self) -> (f64, f64) {
        match self {
            Scope::Anyone => (LOG_BURST, LOG_PER_SECOND),
            Scope::KeyHolder => (LOG_KEY_HOLDER_BURST, LOG_KEY_HOLDER_PER_SECOND),
        }
    }

    /// (burst, per second) of the scope's server-wide bucket.
    fn wide_limits(self) -> (f64, f64) {
        match self {
            Scope::Anyone => (LOG_ALL_BURST, LOG_ALL_PER_SECOND),
            Scope::KeyHolder => (LOG_KEY_HOLDERS_ALL_BURST, LOG_KEY_HOLDERS_ALL_PER_SECOND),
        }
    }

    /// (burst, per second) of one address's bucket, or with none the
    /// server-wide one.
    fn limits_of(self, address: Option<std::net::IpAddr>) -> (f64, f64) {
        match address {
            Some(_) => self.limits(),
            None => self.wide_limits(),
        }
    }
}

const SCOPES: [Scope; 2] = [Scope::Anyone, Scope::KeyHolder];

/// The per-address buckets and each scope's server-wide one.
struct Buckets {
    each: std::collections::HashMap<(Scope, std::net::IpAddr), Bucket>,
    /// Server-wide, by scope (in [`SCOPES`]' order).
    wide: [Bucket; 2],
}

impl Buckets {
    fn wide(&mut self, scope: Scope) -> &mut Bucket {
        &mut self.wide[scope as usize]
    }

    /// Forgets the least recently seen address; the lines it had dropped
    /// and not yet said join its scope's server-wide count, so none go
    /// unsaid.
    fn forget_oldest(&mut self) {
        let oldest = self.each.iter().min_by_key(|(_, v)| v.at).map(|(k, _)| *k);
        if let Some(((scope, _), b)) = oldest.and_then(|k| Some((k, self.each.remove(&k)?))) {
            self.wide(scope).dropped += b.dropped;
        }
    }
}

/// The server's log, every event escaped, and the events of clients that
/// have not authenticated rate-limited per address ([`LOG_BURST`] lines,
/// then [`LOG_PER_SECOND`]) and in total ([`LOG_ALL_BURST`], then
/// [`LOG_ALL_PER_SECOND`]): many addresses cannot fill the disk either.
/// Key holders' arrivals, departures and refusals, and the trials that
/// ran, are limited in buckets of their own, per address
/// ([`LOG_KEY_HOLDER_BURST`]) and in total ([`LOG_KEY_HOLDERS_ALL_BURST`]),
/// so a keyless flood cannot hide them and they cannot fill the disk.
/// The lines dropped are counted and said in one `suppressed` event when
/// the address (or all together) may write again, or at the next
/// [`LogGate::flush`].
pub(crate) struct LogGate {
    log: Option<ServerLog>,
    buckets: std::sync::Mutex<Buckets>,
}

impl LogGate {
    /// A gate in front of `log`.
    pub(crate) fn new(log: Option<ServerLog>) -> LogGate {
        LogGate {
            log,
            buckets: std::sync::Mutex::new(Buckets {
                each: Default::default(),
                wide: SCOPES.map(|s| Bucket::full(s.wide_limits().0, std::time::Instant::now())),
            }),
        }
    }

    fn suppressed(&self, scope: Scope, address: Option<std::net::IpAddr>, dropped: u64) {
        let (burst, per_second) = scope.limits_of(address);
        self.emit(&ServerEvent::Suppressed {
            address,
            key_holders: scope == Scope::KeyHolder,
            dropped,
            burst: burst as u32,
            per_second,
        });
    }

    /// Logs `e` (escaped).
    pub(crate) fn emit(&self, e: &ServerEvent) {
        if let Some(log) = &self.log {
            log(&e.escaped());
        }
    }

    /// Logs `e` (escaped) if `peer`'s address has tokens left, and the
    /// server-wide bucket too; counts it dropped otherwise.
    pub(crate) fn emit_limited(&self, peer: SocketAddr, e: &ServerEvent) {
        self.limited(peer, e, Scope::Anyone)
    }

    /// Logs `e` about a client that proved a key, or a trial that ran:
    /// limited in buckets of their own ([`LOG_KEY_HOLDER_BURST`] per
    /// address, then [`LOG_KEY_HOLDER_PER_SECOND`];
    /// [`LOG_KEY_HOLDERS_ALL_BURST`] in all), so a keyless flood from many
    /// addresses, which empties the server-wide bucket, cannot hide what
    /// key holders did.
    pub(crate) fn emit_key_holder(&self, peer: SocketAddr, e: &ServerEvent) {
        self.limited(peer, e, Scope::KeyHolder)
    }

    /// Logs `e` about `peer` if its bucket and its scope's server-wide one
    /// have a token.
    fn limited(&self, peer: SocketAddr, e: &ServerEvent, scope: Scope) {
        if self.log.is_none() {
            return;
        }
        let now = std::time::Instant::now();
        let (burst, per_second) = scope.limits();
        let (wide_burst, wide_per_second) = scope.wide_limits();
        let address = (scope, crate::server_state::rate_key(peer.ip()));
        let (pass, dropped, all_dropped) = {
            let mut guard = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
            let b = &mut *guard;
            if b.each.len() >= LOG_TRACKED && !b.each.contains_key(&address) {
                b.forget_oldest();
            }
            let wide = &mut b.wide[scope as usize];
            wide.refill(now, wide_burst, wide_per_second);
            let bucket = b
                .each
                .entry(address)
                .or_insert_with(|| Bucket::full(burst, now));
            bucket.refill(now, burst, per_second);
            let wide = &mut b.wide[scope as usize];
            if bucket.tokens < 1.0 {
                bucket.dropped += 1;
                (false, 0, 0)
            } else if wide.tokens < 1.0 {
                wide.dropped += 1;
                (false, 0, 0)
            } else {
                // The line goes out, after the summaries of the lines
                // dropped before it (they ride on its token).
                bucket.tokens -= 1.0;
                wide.tokens -= 1.0;
                let all = std::mem::take(&mut wide.dropped);
                (true, std::mem::take(&mut bucket.dropped), all)
            }
        };
        if all_dropped > 0 {
            self.suppressed(scope, None, all_dropped);
        }
        if dropped > 0 {
            self.suppressed(scope, Some(address.1), dropped);
        }
        if pass {
            self.emit(e);
        }
    }

    /// Says how many lines were dropped for each address that has gone
    /// quiet since (called now and then by the handshake loop).
    pub(crate) fn flush(&self) {
        let now = std::time::Instant::now();
        let mut said = Vec::new();
        {
            let mut guard = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
            let b = &mut *guard;
            for scope in SCOPES {
                let (burst, per_second) = scope.wide_limits();
                b.wide(scope).refill(now, burst, per_second);
            }
            let wide = &mut b.wide;
            b.each.retain(|&(scope, address), bucket| {
                let (burst, per_second) = scope.limits();
                bucket.refill(now, burst, per_second);
                // A summary is a line too: it waits for room in both.
                let all = &mut wide[scope as usize];
                if bucket.dropped > 0 && bucket.tokens >= 1.0 && all.tokens >= 1.0 {
                    all.tokens -= 1.0;
                    said.push((scope, Some(address), std::mem::take(&mut bucket.dropped)));
                }
                bucket.dropped > 0 || bucket.tokens < burst
            });
            for scope in SCOPES {
                let all = b.wide(scope);
                if all.dropped > 0 && all.tokens >= 1.0 {
                    all.tokens -= 1.0;
                    said.push((scope, None, std::mem::take(&mut all.dropped)));
                }
            }
        }
        for (scope, address, dropped) in said {
            self.suppressed(scope, address, dropped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_text_is_one_bounded_line() {
        let forged = "x\n2026-11-28T15:00:00.000Z 10.0.0.1:5 connected (tcplab 0.1.0) with key lab\x1b[2J\u{202e}";
        let e = escape_peer_text(forged);
        assert!(
            !e.contains('\n') && !e.contains('\x1b') && !e.contains('\u{202e}'),
            "{e}"
        );
        assert!(
            e.contains("\\n2026") && e.contains("\\u{1b}[2J") && e.contains("\\u{202e}"),
            "{e}"
        );
        let long = "a".repeat(1 << 20);
        let e = escape_peer_text(&long);
        assert!(e.len() < 200, "{}", e.len());
        assert!(
            e.ends_with(&format!("…(+{} chars)", (1 << 20) - MAX_PEER_TEXT)),
            "{e}"
        );
        assert_eq!(escape_peer_text("tcplab 0.1.0"), "tcplab 0.1.0");
        assert_eq!(escape_peer_text("a\\nb"), "a\\\\nb");
        // Escapes count as what they take: 120 ESCs show as 20 of
        // `\u{1b}` (6 characters each), the rest counted.
        let escs = "\x1b".repeat(MAX_PEER_TEXT);
        let e = escape_peer_text(&escs);
        assert_eq!(
            e,
            format!("{}…(+{} chars)", "\\u{1b}".repeat(20), MAX_PEER_TEXT - 20)
        );
    }

    /// A gate whose log keeps every event it writes.
    fn recording_gate() -> (LogGate, Arc<std::sync::Mutex<Vec<ServerEvent>>>) {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let gate = LogGate::new(Some(Arc::new(move |e: &ServerEvent| {
            s2.lock().unwrap().push(e.clone())
        })));
        (gate, seen)
    }

    #[test]
    fn lines_per_address_are_limited_and_the_drops_counted() {
        let (gate, seen) = recording_gate();
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        let b: SocketAddr = "10.0.0.2:1".parse().unwrap();
        let refused = |peer| ServerEvent::Refused {
            peer,
            key: None,
            reason: "r".into(),
        };
        for _ in 0..100 {
            gate.emit_limited(a, &refused(a));
        }
        gate.emit_limited(b, &refused(b));
        let n = seen.lock().unwrap().len();
        assert_eq!(n, LOG_BURST as usize + 1);
        // Six IPv6 addresses of one /64 share one bucket.
        for i in 0..(LOG_BURST as u16 + 6) {
            let p = SocketAddr::new(format!("2001:db8::{i:x}").parse().unwrap(), 1);
            gate.emit_limited(p, &refused(p));
        }
        assert_eq!(seen.lock().unwrap().len(), 2 * LOG_BURST as usize + 1);
        std::thread::sleep(std::time::Duration::from_millis(600));
        gate.flush();
        let v = seen.lock().unwrap();
        // One summary per bucket, in the map's order.
        let mut drops: Vec<u64> = v
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Suppressed { dropped, .. } => Some(*dropped),
                _ => None,
            })
            .collect();
        drops.sort_unstable();
        assert_eq!(drops, [6, 100 - LOG_BURST as u64], "{v:?}");
    }

    #[test]
    fn many_addresses_are_limited_together_and_no_drop_goes_unsaid() {
        let (gate, seen) = recording_gate();
        let refused = |peer| ServerEvent::Refused {
            peer,
            key: None,
            reason: "r".into(),
        };
        let t0 = std::time::Instant::now();
        // One address past its burst, then more addresses than are
        // tracked, one line each: the first is forgotten with 5 drops.
        let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
        for _ in 0..25 {
            gate.emit_limited(a, &refused(a));
        }
        let others = LOG_TRACKED as u32;
        for i in 0..others {
            let p = SocketAddr::new(std::net::Ipv4Addr::from(0x0b00_0000 + i).into(), 1);
            gate.emit_limited(p, &refused(p));
        }
        let took = t0.elapsed().as_secs_f64();
        std::thread::sleep(std::time::Duration::from_millis(100));
        gate.flush();
        let v = seen.lock().unwrap();
        let passed = v
            .iter()
            .filter(|e| matches!(e, ServerEvent::Refused { .. }))
            .count() as f64;
        let all: Vec<u64> = v
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Suppressed {
                    address: None,
                    dropped,
                    ..
                } => Some(*dropped),
                _ => None,
            })
            .collect();
        let said: u64 = v
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Suppressed { dropped, .. } => Some(*dropped),
                _ => None,
            })
            .sum();
        // The server-wide limit held while every address kept to its own.
        assert!(
            passed <= LOG_ALL_BURST + LOG_ALL_PER_SECOND * took + 1.0,
            "{passed} lines in {took} s"
        );
        // Every line sent was either written or counted in a summary, the
        // forgotten address's 5 in the server-wide one.
        assert_eq!(passed as u64 + said, 25 + u64::from(others));
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(all[0] >= 5 + u64::from(others) - 200, "{all:?}");
    }

    #[test]
    fn a_keyless_flood_that_empties_the_server_wide_bucket_cannot_hide_a_key_holder() {
        let (gate, seen) = recording_gate();
        let event = |peer| ServerEvent::Disconnected { peer, trials: 1 };
        // A flood from many addresses, one line each, empties the
        // server-wide bucket.
        for i in 0..(LOG_ALL_BURST as u32 + 100) {
            let p = SocketAddr::new(std::net::IpAddr::from((0x0a00_0000 + i).to_be_bytes()), 1);
            gate.emit_limited(p, &event(p));
        }
        let before = seen.lock().unwrap().len();
        let holder: SocketAddr = "192.0.2.7:9".parse().unwrap();
        // Without a key, its line is dropped with the flood's.
        gate.emit_limited(holder, &event(holder));
        assert_eq!(seen.lock().unwrap().len(), before);
        // A key holder's line goes out, and its own address still limits it.
        let other: SocketAddr = "192.0.2.8:9".parse().unwrap();
        for _ in 0..(LOG_KEY_HOLDER_BURST as usize + 5) {
            gate.emit_key_holder(other, &event(other));
        }
        let v = seen.lock().unwrap();
        let theirs = v[before..]
            .iter()
            .filter(|e| matches!(e, ServerEvent::Disconnected { peer, .. } if *peer == other))
            .count();
        assert_eq!(theirs, LOG_KEY_HOLDER_BURST as usize);
    }

    /// Key holders from many addresses (one key's fleet, or one holder
    /// with an IPv6 prefix) are limited together too, in their own
    /// server-wide bucket, and every drop is said (before: per address
    /// only, 200 lines each from every address).
    #[test]
    fn key_holders_from_many_addresses_are_limited_together() {
        let (gate, seen) = recording_gate();
        let event = |peer| ServerEvent::Disconnected { peer, trials: 1 };
        let sent = LOG_KEY_HOLDERS_ALL_BURST as u32 + 500;
        let t0 = std::time::Instant::now();
        for i in 0..sent {
            let p = SocketAddr::new(std::net::IpAddr::from((0x0a00_0000 + i).to_be_bytes()), 1);
            gate.emit_key_holder(p, &event(p));
        }
        let took = t0.elapsed().as_secs_f64();
        // A stranger still has the keyless bucket to itself.
        let stranger: SocketAddr = "192.0.2.1:1".parse().unwrap();
        gate.emit_limited(stranger, &event(stranger));
        std::thread::sleep(std::time::Duration::from_millis(100));
        gate.flush();
        let v = seen.lock().unwrap();
        let passed = v
            .iter()
            .filter(|e| matches!(e, ServerEvent::Disconnected { peer, .. } if *peer != stranger))
            .count() as f64;
        let said: u64 = v
            .iter()
            .filter_map(|e| match e {
                ServerEvent::Suppressed {
                    dropped,
                    key_holders: true,
                    address: None,
                    ..
                } => Some(*dropped),
                _ => None,
            })
            .sum();
        assert!(
            passed <= LOG_KEY_HOLDERS_ALL_BURST + LOG_KEY_HOLDERS_ALL_PER_SECOND * took + 1.0,
            "{passed} lines in {took} s"
        );
        assert_eq!(passed as u64 + said, u64::from(sent));
        assert!(v
            .iter()
            .any(|e| matches!(e, ServerEvent::Disconnected { peer, .. } if *peer == stranger)));
    }
}
