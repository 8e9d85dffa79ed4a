//! What one key's holder may ask of a server (`tcplab server --keys`):
//! the tests, reverse mode, and caps on rate, duration, bytes and flows,
//! each only tighter than the server's own [`Limits`].
//!
//! The rate cap (`max_rate`) is on a stream trial's total pacing rate,
//! `--send-rate × --parallel`, whichever side sends: a setup asking for
//! more is refused; a reverse trial (the server sends) without
//! `--send-rate` is paced by the server at `max_rate` shared over its
//! flows; a forward trial (the client sends) without `--send-rate` is
//! refused, as the server cannot pace a client, and so is `layer-rate`,
//! whose client sends unpaced. The cap holds over all the key's running
//! trials together ([`crate::key_usage`]), and the server measures what
//! each trial moves and ends one over its grant (`server_budget`):
//! request/response tests (`tcp-rr`, `tcp-crr`, `http`) get what is left
//! of the key's rate, enforced by that measurement.

use crate::auth::Key;
use crate::limits::Limits;
use crate::workloads::side_of;
use record::numbers::{rate_text, size_text};
use record::{LoadSide, TestKind, TrialParams};

/// One key's limits; `None` leaves the server's own limit.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPolicy {
    /// The key's name in refusals and the server's log.
    pub name: String,
    /// Most total pacing rate of a stream trial, bit/s (see the module).
    pub max_rate_bps: Option<u64>,
    /// Longest `--duration`, in seconds; a byte-bound trial is cancelled
    /// after 3 × this + 30 s.
    pub max_duration_s: Option<f64>,
    /// Largest `--bytes`.
    pub max_bytes: Option<u64>,
    /// Largest `--parallel`.
    pub max_parallel: Option<u32>,
    /// The tests allowed (`None`: all).
    pub tests: Option<Vec<TestKind>>,
    /// Whether `--reverse` (the server sends) is allowed.
    pub reverse: bool,
    /// Most clients holding this key at once (`None`: half the server's
    /// `--max-clients` when it has several keys; see [`crate::key_usage`]).
    pub max_clients: Option<usize>,
    /// Most trials of this key running at once (`None`: as `max_clients`).
    pub max_trials: Option<usize>,
    /// Most CPU one trial of this key may use on the server, in
    /// CPU-seconds per wall second (`None`: the server's `--max-trial-cpu`).
    pub max_cpu: Option<f64>,
}

/// The keys a server serves, each with its limits.
pub type KeyRing = Vec<(Key, KeyPolicy)>;

impl KeyPolicy {
    /// A key with only the server's own limits (`server --key FILE`).
    pub fn unlimited(name: &str) -> KeyPolicy {
        KeyPolicy {
            name: name.to_string(),
            max_rate_bps: None,
            max_duration_s: None,
            max_bytes: None,
            max_parallel: None,
            tests: None,
            reverse: true,
            max_clients: None,
            max_trials: None,
            max_cpu: None,
        }
    }

    /// Checks that every cap is at most the server's own limit and lets
    /// some trial through; the message names the field.
    pub fn within(&self, l: &Limits) -> Result<(), String> {
        if let Some(n) = self.max_parallel.filter(|&n| n == 0 || n > l.max_parallel) {
            return Err(format!(
                "max_parallel {n} must be 1..={} (the server's limit)",
                l.max_parallel
            ));
        }
        if let Some(d) = self
            .max_duration_s
            .filter(|&d| d.is_nan() || d <= 0.0 || d > l.max_duration_s)
        {
            return Err(format!(
                "max_duration {d} s must be over 0 and at most the server's {} s",
                l.max_duration_s
            ));
        }
        if let Some(b) = self.max_bytes.filter(|&b| b == 0 || b > l.max_bytes) {
            return Err(format!(
                "max_bytes {} must be over 0 and at most the server's {}",
                size_text(b as f64),
                size_text(l.max_bytes as f64)
            ));
        }
        if let Some(r) = self.max_rate_bps.filter(|&r| r < l.min_send_rate_bps) {
            return Err(format!(
                "max_rate {} is below the server's slowest --send-rate ({})",
                rate_text(r as f64),
                rate_text(l.min_send_rate_bps as f64)
            ));
        }
        for (field, n) in [
            ("max_clients", self.max_clients),
            ("max_trials", self.max_trials),
        ] {
            if let Some(n) = n.filter(|&n| n == 0 || n > l.max_clients) {
                return Err(format!(
                    "{field} {n} must be 1..={} (the server's --max-clients)",
                    l.max_clients
                ));
            }
        }
        if let Some(c) = self
            .max_cpu
            .filter(|&c| c.is_nan() || c <= 0.0 || c > l.max_trial_cpu)
        {
            return Err(format!(
                "max_cpu {c} must be over 0 and at most the server's {} CPU-seconds per second (--max-trial-cpu)",
                l.max_trial_cpu
            ));
        }
        if self.tests.as_ref().is_some_and(Vec::is_empty) {
            return Err("tests is empty: the key could run nothing".into());
        }
        Ok(())
    }

    /// Whether this key's holder may run trial `p`; the refusal is one line
    /// naming the key, its limit and what was asked.
    pub fn check(&self, p: &TrialParams) -> Result<(), String> {
        let key = format!("key {:?}", self.name);
        if let Some(tests) = self.tests.as_ref().filter(|t| !t.contains(&p.test)) {
            let names: Vec<&str> = tests.iter().map(|t| t.name()).collect();
            return Err(format!(
                "{key} does not allow {} (it allows {})",
                p.test,
                names.join(", ")
            ));
        }
        if p.reverse && !self.reverse {
            return Err(format!("{key} does not allow --reverse"));
        }
        if let Some(max) = self.max_parallel.filter(|&m| p.parallel > m) {
            return Err(format!(
                "{key} allows at most {max} parallel flows (asked {})",
                p.parallel
            ));
        }
        if let (Some(max), Some(d)) = (self.max_duration_s, p.duration_s) {
            if d > max {
                return Err(format!(
                    "{key} allows at most {max} s per trial (asked --duration {d} s)"
                ));
            }
        }
        if let (Some(max), Some(b)) = (self.max_bytes, p.bytes) {
            if b > max {
                return Err(format!(
                    "{key} allows at most {} per trial (asked --bytes {})",
                    size_text(max as f64),
                    size_text(b as f64)
                ));
            }
        }
        match self.max_rate_bps {
            Some(max) => rate_check(&key, max, p),
            None => Ok(()),
        }
    }

    /// The trial as this server runs it: a reverse stream without
    /// `--send-rate` under a key with `max_rate` is paced at `max_rate`
    /// shared over its flows; anything else is unchanged.
    pub fn paced(&self, p: &TrialParams) -> TrialParams {
        let mut q = p.clone();
        if let Some(max) = self.max_rate_bps {
            if is_stream(p.test) && server_sends(p) && p.send_rate_bps.is_none() {
                q.send_rate_bps = Some((max / u64::from(p.parallel.max(1))).max(1));
            }
        }
        q
    }

    /// The server's limits for this key's trials: the wall-clock cap of a
    /// byte-bound trial follows `max_duration` (3 × it + 30 s); its CPU
    /// budget is `max_cpu`.
    pub fn limits(&self, l: &Limits) -> Limits {
        let mut k = l.clone();
        if let Some(c) = self.max_cpu {
            k.max_trial_cpu = k.max_trial_cpu.min(c);
        }
        if let Some(d) = self.max_duration_s {
            k.max_trial_s = k.max_trial_s.min(d * 3.0 + 30.0);
        }
        k
    }
}

fn is_stream(t: TestKind) -> bool {
    matches!(t, TestKind::TcpStream | TestKind::UdpStream)
}

fn server_sends(p: &TrialParams) -> bool {
    side_of(p, false) == LoadSide::Sender
}

fn rate_check(key: &str, max: u64, p: &TrialParams) -> Result<(), String> {
    let cap = rate_text(max as f64);
    if p.test == TestKind::LayerRate {
        return Err(format!(
            "{key} allows at most {cap} per trial, and layer-rate sends unpaced"
        ));
    }
    if !is_stream(p.test) {
        return Ok(());
    }
    match p.send_rate_bps {
        Some(r) => {
            let n = u64::from(p.parallel.max(1));
            let total = r.saturating_mul(n);
            if total <= max {
                return Ok(());
            }
            let asked = if n == 1 {
                rate_text(r as f64)
            } else {
                format!("{n} × {} = {}", rate_text(r as f64), rate_text(total as f64))
            };
            Err(format!(
                "{key} allows at most {cap} per trial (asked --send-rate {asked})"
            ))
        }
        None if server_sends(p) => Ok(()),
        None => Err(format!(
            "{key} allows at most {cap} per trial: give --send-rate (the server cannot pace a client that sends)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> KeyPolicy {
        KeyPolicy {
            max_rate_bps: Some(100_000_000),
            max_duration_s: Some(5.0),
            max_bytes: Some(1 << 20),
            max_parallel: Some(4),
            tests: Some(vec![TestKind::TcpStream, TestKind::TcpRr]),
            reverse: false,
            ..KeyPolicy::unlimited("client-a")
        }
    }

    fn stream(parallel: u32, rate: Option<u64>) -> TrialParams {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.parallel = parallel;
        p.send_rate_bps = rate;
        p.duration_s = Some(1.0);
        p
    }

    #[test]
    fn each_cap_refuses_in_one_line_and_just_under_passes() {
        let k = policy();
        assert_eq!(
            k.check(&stream(5, Some(1_000_000))).unwrap_err(),
            "key \"client-a\" allows at most 4 parallel flows (asked 5)"
        );
        assert!(k.check(&stream(4, Some(25_000_000))).is_ok());
        assert_eq!(
            k.check(&stream(4, Some(26_000_000))).unwrap_err(),
            "key \"client-a\" allows at most 100mbit per trial (asked --send-rate 4 × 26mbit = 104mbit)"
        );
        assert_eq!(
            k.check(&stream(1, None)).unwrap_err(),
            "key \"client-a\" allows at most 100mbit per trial: give --send-rate (the server cannot pace a client that sends)"
        );
        let mut p = stream(1, Some(1_000_000));
        p.duration_s = Some(6.0);
        assert_eq!(
            k.check(&p).unwrap_err(),
            "key \"client-a\" allows at most 5 s per trial (asked --duration 6 s)"
        );
        p.duration_s = None;
        p.bytes = Some(2 << 20);
        assert_eq!(
            k.check(&p).unwrap_err(),
            "key \"client-a\" allows at most 1M per trial (asked --bytes 2M)"
        );
        p.bytes = Some(1 << 20);
        assert!(k.check(&p).is_ok());
        p.reverse = true;
        assert_eq!(
            k.check(&p).unwrap_err(),
            "key \"client-a\" does not allow --reverse"
        );
        let rr = TrialParams::defaults(TestKind::UdpStream);
        assert_eq!(
            k.check(&rr).unwrap_err(),
            "key \"client-a\" does not allow udp-stream (it allows tcp-stream, tcp-rr)"
        );
        assert!(k.check(&TrialParams::defaults(TestKind::TcpRr)).is_ok());
    }

    #[test]
    fn an_unpaced_reverse_stream_is_paced_by_the_server() {
        let k = KeyPolicy {
            reverse: true,
            ..policy()
        };
        let mut p = stream(4, None);
        p.reverse = true;
        assert!(k.check(&p).is_ok());
        assert_eq!(k.paced(&p).send_rate_bps, Some(25_000_000));
        p.send_rate_bps = Some(1_000_000);
        assert_eq!(k.paced(&p).send_rate_bps, Some(1_000_000));
        let fwd = stream(2, Some(1_000_000));
        assert_eq!(k.paced(&fwd), fwd);
        assert_eq!(
            KeyPolicy::unlimited("x").paced(&stream(1, None)),
            stream(1, None)
        );
    }

    #[test]
    fn a_key_only_tightens_the_servers_limits() {
        let l = Limits::default();
        assert!(policy().within(&l).is_ok());
        let wide = KeyPolicy {
            max_parallel: Some(200),
            ..policy()
        };
        assert_eq!(
            wide.within(&l).unwrap_err(),
            "max_parallel 200 must be 1..=128 (the server's limit)"
        );
        let slow = KeyPolicy {
            max_rate_bps: Some(1000),
            ..policy()
        };
        assert_eq!(
            slow.within(&l).unwrap_err(),
            "max_rate 1kbit is below the server's slowest --send-rate (64kbit)"
        );
        assert_eq!(policy().limits(&l).max_trial_s, 45.0);
    }
}
