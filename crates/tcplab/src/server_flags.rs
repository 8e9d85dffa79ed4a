//! `tcplab server`'s limits as flags: what each client may take, printed
//! by `tcplab server --help` with their defaults (engine::Limits).

use clap::Args;
use record::factor::parse;
use std::time::Duration;

/// The per-client bounds of `tcplab server` ("Server limits" in the README).
#[derive(Debug, Args)]
pub struct ServerLimitArgs {
    /// Most control connections from one source address at once.
    #[arg(long, default_value = "4", value_name = "N")]
    pub max_per_address: usize,
    /// Most connections in their handshake at once, from everywhere (a new
    /// one beyond it closes an older one that has not proved its key; up to
    /// twice it, handshakes younger than 100 ms are spared; under a short
    /// open-file limit it is lowered to fit). Handshakes run on one thread and
    /// take no --max-clients slot: only a client that authenticated (or,
    /// without keys, said hello) does; a quarter of those slots are kept
    /// for keys that authenticated in the last 10 minutes.
    #[arg(long, default_value = "1024", value_name = "N")]
    pub max_pending: usize,
    /// Most connections in their handshake at once from one address (a new
    /// one beyond it closes that address's oldest that has not proved its
    /// key).
    #[arg(long, default_value = "8", value_name = "N")]
    pub max_pending_per_address: usize,
    /// Most connections in their handshake at once from one IPv6 /64 (a
    /// new one beyond it closes that prefix's oldest that has not proved
    /// its key).
    #[arg(long, default_value = "32", value_name = "N")]
    pub max_pending_per_prefix: usize,
    /// Time a new connection has to complete its hello (against slowloris).
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = duration)]
    pub handshake_timeout: Duration,
    /// Time a whole control message has once its first byte arrived, a
    /// set-up trial for its first data (connection, datagram, hello), and a
    /// trial's client_done once the server's side of it has ended.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = duration)]
    pub message_timeout: Duration,
    /// Time a greeted client may sit idle between trials, and a trial's data
    /// may pause (a --send-rate whose writes are further apart is refused).
    #[arg(long, default_value = "600s", value_name = "DURATION", value_parser = duration)]
    pub idle_timeout: Duration,
    /// Slowest --send-rate a client may ask for.
    #[arg(long, default_value = "64kbit", value_name = "RATE", value_parser = rate)]
    pub min_send_rate: u64,
    /// Most --recv-work (CPU per KB received) a client may ask for.
    #[arg(long, default_value = "10ms", value_name = "DURATION", value_parser = duration)]
    pub max_recv_work: Duration,
    /// Most --load workers one client's trial may run on the server.
    #[arg(long, default_value = "8", value_name = "N")]
    pub max_load_workers: u32,
    /// Most --load workers on the server for all clients together (each
    /// burns a CPU; with several keys, one key's trials run at most half).
    /// Default: the host's CPUs.
    #[arg(long, default_value_t = engine::limits::default_total_load_workers(), value_name = "N")]
    pub max_total_load_workers: u32,
    /// Most buffer memory one client's trial may take on the server (every
    /// buffer its test allocates: read, request and datagram buffers per
    /// connection, the pattern, per-flow trackers).
    #[arg(long, default_value = "256M", value_name = "SIZE", value_parser = size)]
    pub max_client_memory: u64,
    /// Most buffer memory all running trials together may take (one key,
    /// or one address of a keyless server, gets at most half).
    #[arg(long, default_value = "1G", value_name = "SIZE", value_parser = size)]
    pub max_total_memory: u64,
    /// Most descriptors (data sockets) one client's trial may hold.
    #[arg(long, default_value = "344", value_name = "N")]
    pub max_client_descriptors: u64,
    /// Most CPU one trial's server threads may use, in CPU-seconds per
    /// second over 2 s (default: half the host's CPUs, at least 1.5); a
    /// trial over it is ended with the reason.
    #[arg(long, value_name = "CPUS")]
    pub max_trial_cpu: Option<f64>,
    /// Control frames (check, setup, …) a key's clients together may send
    /// a second, past a burst of 400 or two seconds' worth; a client past
    /// it waits (its key's share of the server's own CPU).
    #[arg(long, default_value = "200", value_name = "N")]
    pub key_frame_rate: f64,
    /// Handshakes a key's holders together may complete a second, past a
    /// burst of 64 or two seconds' worth; past it a connection is refused
    /// with how long to wait.
    #[arg(long, default_value = "20", value_name = "N")]
    pub key_handshake_rate: f64,
}

impl ServerLimitArgs {
    /// The engine's limits with these bounds and `max_clients`.
    pub fn limits(&self, max_clients: usize) -> Result<engine::Limits, String> {
        if self.max_per_address == 0 {
            return Err("--max-per-address must be at least 1".into());
        }
        if let Some(c) = self.max_trial_cpu.filter(|c| c.is_nan() || *c <= 0.0) {
            return Err(format!("--max-trial-cpu must be over 0, got {c}"));
        }
        if self.max_client_descriptors == 0 {
            return Err("--max-client-descriptors must be at least 1".into());
        }
        for (r, flag) in [
            (self.key_frame_rate, "--key-frame-rate"),
            (self.key_handshake_rate, "--key-handshake-rate"),
        ] {
            if r.is_nan() || r <= 0.0 {
                return Err(format!("{flag} must be over 0, got {r}"));
            }
        }
        Ok(engine::Limits {
            max_total_memory: self.max_total_memory,
            max_client_descriptors: self.max_client_descriptors,
            max_trial_cpu: self
                .max_trial_cpu
                .unwrap_or_else(engine::limits::default_trial_cpu),
            max_clients,
            max_per_address: self.max_per_address,
            handshake_s: self.handshake_timeout.as_secs_f64(),
            message_s: self.message_timeout.as_secs_f64(),
            idle_s: self.idle_timeout.as_secs_f64(),
            min_send_rate_bps: self.min_send_rate,
            max_recv_work_ns_per_kb: self.max_recv_work.as_nanos().min(u128::from(u64::MAX)) as u64,
            max_load_workers: self.max_load_workers,
            max_total_load_workers: self.max_total_load_workers,
            max_client_memory: self.max_client_memory,
            key_frames_per_s: self.key_frame_rate,
            key_handshakes_per_s: self.key_handshake_rate,
            ..engine::Limits::default()
        })
    }
}

impl ServerLimitArgs {
    /// The bounds on connections in their handshake.
    pub fn pending(&self) -> Result<engine::PendingLimits, String> {
        for (n, flag) in [
            (self.max_pending, "--max-pending"),
            (self.max_pending_per_address, "--max-pending-per-address"),
            (self.max_pending_per_prefix, "--max-pending-per-prefix"),
        ] {
            if n == 0 {
                return Err(format!("{flag} must be at least 1"));
            }
        }
        Ok(engine::PendingLimits {
            total: self.max_pending,
            per_address: self.max_pending_per_address,
            per_prefix: self.max_pending_per_prefix,
        })
    }
}

fn duration(s: &str) -> Result<Duration, String> {
    parse::duration(s).map_err(|e| e.to_string())
}

fn rate(s: &str) -> Result<u64, String> {
    parse::rate(s).map_err(|e| e.to_string())
}

fn size(s: &str) -> Result<u64, String> {
    parse::positive_size(s).map_err(|e| e.to_string())
}
