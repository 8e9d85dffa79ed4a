//! The command line.

use crate::factor_flags::FactorFlags;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// What limits TCP/IP throughput and latency on this host, and where each
/// microsecond per segment goes.
#[derive(Debug, Parser)]
#[command(name = "tcplab", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// SQLite database that keeps every run [default: ~/.local/share/tcplab/tcplab.db].
    #[arg(long, global = true, env = "TCPLAB_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// tcplab's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure: run a test, or a sweep over comma-separated factor levels.
    Bench(Box<BenchArgs>),
    /// Serve tests to `tcplab bench --to` clients.
    Server(ServerArgs),
    /// Keys for the control channel: `key new` makes one (README: "Authentication").
    #[command(subcommand)]
    Key(KeyCommand),
    /// List stored runs, newest first; `runs delete ID…` deletes runs.
    Runs(RunsArgs),
    /// Print one stored run as a table (or JSON).
    Show(ShowArgs),
    /// Export one stored run as JSON or CSV.
    Export(ExportArgs),
    /// Bring runs made on other hosts into this database: every run of
    /// another tcplab database, or one run's JSON export. Studies set them
    /// beside this host's (markatos02's mileage and scaling plots).
    Import(ImportArgs),
    /// What the probes saw in a run's probed trials: hop delays, queue
    /// lengths, packet classes, idle time; or one trial as pcapng.
    Probes(ProbesArgs),
    /// Write one self-contained HTML report of a run: host, parameters,
    /// mean ± 95% CI tables, plots with CI error bars, probe figures, and
    /// the raw CSV/JSON beside it.
    Report(ReportArgs),
    /// Put runs side by side: each run's mean ± 95% CI per matching point
    /// and its ratio to the first run; --out writes an HTML report too.
    Compare(CompareArgs),
    /// The lab: what tcplab created on this host, and cleaning up after killed runs.
    #[command(subcommand)]
    Lab(LabCommand),
    /// Redo a classic study on this host (abrams91, markatos02, huang-chen,
    /// sunos-ipc, openlink92, or all):
    /// run its plan as one stored run and write its HTML report.
    Study(StudyArgs),
    /// Many hosts: run one study or bench plan across an inventory's hosts
    /// over SSH and gather every host's runs here (README: "Measuring many
    /// hosts").
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Measure this host: memory copy and checksum bandwidth, system call
    /// and context switch latency, a CPU score; stored as the host profile
    /// later runs reference.
    Calibrate(CalibrateArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell), e.g. `tcplab completions bash >
    /// /usr/share/bash-completion/completions/tcplab`.
    Completions(CompletionsArgs),
    /// Print the man page tcplab(1) (roff), or with --out-dir write it and
    /// one page per command (tcplab-bench.1, …) into a directory.
    Man(ManArgs),
}

/// `tcplab runs`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RunsArgs {
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
    /// Delete runs instead of listing them.
    #[command(subcommand)]
    pub command: Option<RunsCommand>,
}

/// `tcplab runs …`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Delete runs and everything stored with them (points, trials,
    /// metrics, probe records, CPU samples); refuses, deleting nothing,
    /// when any id is not a stored run.
    Delete {
        /// Run ids, or `latest`.
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<String>,
        /// Print what was deleted as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `tcplab completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `tcplab man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write tcplab.1 and one page per command (tcplab-bench.1, …) into
    /// this directory instead of printing tcplab.1.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// `tcplab fleet …`.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Run PLAN on the hosts of INVENTORY: `study NAME …` on every client
    /// host, or `bench TEST …` from every client to every other server host
    /// (servers started with a one-time key); each host's runs are stored
    /// here as it finishes. A host that fails is reported and skipped.
    Run(FleetRunArgs),
}

/// `tcplab fleet run`.
#[derive(Debug, Args)]
pub struct FleetRunArgs {
    /// The inventory: a TOML file of hosts (README: "Measuring many hosts").
    pub inventory: PathBuf,
    /// The plan, as you would type it after `tcplab`: `study NAME [FLAGS]`
    /// or `bench TEST [FLAGS]` (without --db, --to, --key or --out, which
    /// the fleet sets on each host).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PLAN"
    )]
    pub plan: Vec<String>,
    /// Most tasks at once [default: every host at once]; a host is in one
    /// task at a time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// How long ssh may take to connect to a host.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_connect_timeout)]
    pub connect_timeout: std::time::Duration,
    /// Keep each host's working directory (/tmp/tcplab-fleet.*: its store
    /// and key) instead of removing it.
    #[arg(long)]
    pub keep_remote: bool,
    /// For study plans: write each host's study report (with the other
    /// hosts beside it) into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Only failures and the outcome; no progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `tcplab lab …`.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// List the namespaces, links, qdiscs and cgroups tcplab created that exist now.
    Show {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove what runs that are no longer alive left behind.
    Clean {
        /// Also remove what live runs are using.
        #[arg(long)]
        all: bool,
    },
    /// List the link profiles.
    Profiles {
        /// Print JSON: each profile's name, what it emulates and its link.
        #[arg(long)]
        json: bool,
    },
}

/// The test a bench runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestArg {
    /// Bulk transfer over TCP.
    TcpStream,
    /// Sequenced, timestamped datagrams over UDP: loss, reordering, duplicates, jitter.
    UdpStream,
    /// Request/response transactions on one TCP connection.
    TcpRr,
    /// Connect, request, response, close, repeated.
    TcpCrr,
    /// A 10 KB page and 12 objects (40 KB) on one HTTP/1.1 connection, like lmbench lat_http.
    Http,
    /// Packets and bytes per second at one protocol layer (--layer eth, ip,
    /// udp, tcp) against frame size (--write-size, 60–1514 bytes), between
    /// two namespaces (--topology veth): Guerrero & Frieder Figs 1–4.
    LayerRate,
}

/// `tcplab bench`.
#[derive(Debug, Args)]
#[command(after_long_help = BENCH_HELP)]
pub struct BenchArgs {
    /// The test to run.
    #[arg(value_enum)]
    pub test: TestArg,
    /// Server to measure against, HOST[:PORT] (default port 5301). Without it,
    /// bench starts its own server on loopback.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub to: Option<String>,
    /// With --to: how long the server may take to accept the control
    /// connection and answer hello [default: 3s]. Checked once before the
    /// run is stored (an unreachable server stores nothing) and again on
    /// each reconnect.
    #[arg(long, value_name = "DURATION", value_parser = parse_connect_timeout)]
    pub connect_timeout: Option<std::time::Duration>,
    /// With --to: the pre-shared key file (`tcplab key new`, mode 0600) of
    /// a server started with --key. Client and server each prove they hold
    /// it before any trial; a server without it is refused.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Attach eBPF probes to each trial's data phase: queues, tcp, sched,
    /// cpu (comma-separated) or all. cpu samples every CPU at 10 kHz for CPU
    /// attribution per layer and function. Needs root and a kernel with BTF;
    /// records and samples are stored with each trial (see `tcplab probes`).
    #[arg(long, value_name = "GROUPS")]
    pub probe: Option<String>,
    /// Samples per second per CPU of `--probe cpu` (100..=100000, default
    /// 10000). On a virtual machine without a PMU every sample is a timer
    /// interrupt and a VM exit: 10 kHz cost a loopback or veth stream ~30% of
    /// its throughput on the development VM, 1 kHz ~7%.
    #[arg(long, value_name = "HZ")]
    pub sample_hz: Option<u32>,
    /// How far each probe program goes: full records (the default); filter
    /// finds the experiment's packets but records nothing; empty returns at
    /// once. For measuring what probing itself costs (bench/probe_overhead.py
    /// --depths): empty is the price of attaching, filter minus empty that of
    /// finding the flow, full minus filter that of recording. Trials at
    /// filter or empty store no records or samples.
    #[arg(long, value_name = "DEPTH", value_parser = parse_probe_depth)]
    pub probe_depth: Option<probe::ProbeDepth>,
    /// What each probed trial keeps on disk: all (the default: every probe
    /// record, which `probes --pcapng` and `export --records` need) or
    /// summary (the path analysis, histograms and series that `tcplab
    /// probes` and the reports show, and the CPU samples; the raw records
    /// are dropped). bench prints each point's records and bytes stored.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub probe_keep: Option<crate::probes::ProbeKeep>,
    /// The factors (`--bytes` … `--layer`), one flag per entry of
    /// record's factor table, each a comma-separated list of levels.
    #[command(flatten)]
    pub factors: FactorFlags,
    /// Trials per sweep point.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub repeat: u32,
    /// Repeat until the CI half-width at LEVEL% is within PCT% of the mean, e.g. 95,5.
    #[arg(long, value_name = "LEVEL,PCT")]
    pub precision: Option<String>,
    /// Cap on trials per point when --precision is set.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub max_repeat: u32,
    /// Seed of the randomized trial order (recorded with the run).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print the run as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// tcp-stream and udp-stream: print each connection's bytes and rate
    /// every DURATION while a trial runs (and, for a TCP sender,
    /// retransmits and congestion window from TCP_INFO), with a [SUM] line
    /// under --parallel, as iperf3 -i does; e.g. 1s, 0.1s. The series is
    /// stored with each trial (`export`, `show --json`). It replaces the
    /// progress bar; with --json it is stored but not printed.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Option<std::time::Duration>,
}

const BENCH_HELP: &str = "\
Every factor takes a comma-separated list; bench runs the cartesian product
of all lists as a sweep, --repeat trials per point, in a random order drawn
from a recorded seed. Sizes take K, M, G (powers of 1024); rates take kbit,
mbit, gbit (powers of 1000).

Examples:
  tcplab bench tcp-stream --write-size 10,100,512,1024,1460,2048,8192,65536
  tcplab bench udp-stream --write-size 1472 --send-rate 100mbit,1gbit
  tcplab bench tcp-rr --write-size 14 --precision 95,5
  tcplab bench tcp-stream --to 10.0.0.2 --parallel 1,4 --reverse on,off

Exit status: 0 when every trial succeeded, 1 when some trial failed or
tcplab hit a runtime error, 2 on bad input (nothing is stored), 130 when
interrupted (completed trials are kept and the run is marked interrupted).";

/// `tcplab server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0", value_name = "ADDR")]
    pub bind: String,
    /// Control port.
    #[arg(long, default_value_t = engine::DEFAULT_PORT, value_name = "N")]
    pub port: u16,
    /// Most clients served at once, each with a thread once it has
    /// authenticated (or, without keys, said hello); connections still in
    /// their handshake are bounded by --max-pending instead. One beyond is
    /// told "server busy" and closed. The server raises its open-file limit
    /// to the hard limit when this needs more, and warns if even that is
    /// too low.
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub max_clients: usize,
    /// Serve only clients that prove they hold this pre-shared key (a file
    /// from `tcplab key new`, mode 0600); the server proves it too.
    #[arg(long, value_name = "FILE", conflicts_with = "keys")]
    pub key: Option<PathBuf>,
    /// Serve only clients holding one of several keys, each with its own
    /// limits: a TOML file of [[key]] entries with `file` (a key file,
    /// relative to the TOML file) and optionally `name`, `max_rate` (the
    /// rate of all the key's running trials together, measured and
    /// enforced; the server paces its own unpaced sending to it),
    /// `max_duration`, `max_bytes`, `max_parallel`, `tests` (a list),
    /// `reverse` (true or false), `max_clients`, `max_trials` and `max_cpu`
    /// (CPU-seconds per second of one trial). A key only tightens
    /// the server's limits (README: "Keys with their own limits").
    #[arg(long, value_name = "FILE.toml")]
    pub keys: Option<PathBuf>,
    /// Serve on a non-loopback address without --key or --keys: anyone who
    /// can reach it may run trials (and make it send data).
    #[arg(long)]
    pub insecure: bool,
    /// Log each client and trial on stdout as one JSON object per line
    /// instead of text. (Whatever this says, stderr always gets one JSON
    /// line per accepted or refused client and per trial.)
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,
    /// Nothing on stdout: the log is only the JSON lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// What each client may take (README: "Server limits").
    #[command(flatten)]
    pub limits: crate::server_flags::ServerLimitArgs,
}

/// `tcplab key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Write a fresh 256-bit pre-shared key (from the OS's random source)
    /// as one line of hex: to a new file with mode 0600 (never
    /// overwritten), or to stdout.
    New {
        /// The key file to create.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// `tcplab show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, or `latest`.
    pub run: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `tcplab calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Fewer, shorter repetitions (a few seconds).
    #[arg(long)]
    pub quick: bool,
    /// Print the profile as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print a stored profile (an id, or latest for this host) instead of measuring.
    #[arg(long, value_name = "ID")]
    pub show: Option<String>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `tcplab study`.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The study: abrams91, markatos02, huang-chen, sunos-ipc, openlink92,
    /// or all (every study, with an index page).
    pub name: String,
    /// A first look: fewer repetitions and a coarser sweep, same figures.
    #[arg(long)]
    pub quick: bool,
    /// Run the study's remote experiments on this place instead of its own
    /// (a topology or link profile: veth, ether10, lan100, man, wan, …).
    #[arg(long, value_name = "PLACE", value_parser = parse_study_place)]
    pub topology: Option<String>,
    /// Directory for the reports (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the plan (one tcplab bench command per experiment) and stop.
    #[arg(long)]
    pub plan: bool,
    /// Seed of the randomized trial order.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print what ran and what was written (each study's run, status,
    /// report and data files) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar or progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `tcplab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run id, or `latest`.
    pub run: String,
    /// The HTML file to write; the raw data go beside it (FILE.csv,
    /// FILE.json) [default: tcplab-run-<id>.html].
    #[arg(long, short, value_name = "FILE.html")]
    pub out: Option<PathBuf>,
}

/// `tcplab import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// tcplab databases (their runs are copied with probe records, CPU
    /// samples and host profiles) or JSON exports (tcplab export RUN
    /// --format json); runs already here are skipped.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print what was imported and skipped as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `tcplab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Two or more run ids (or `latest`); the first is the baseline.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// The metric to compare [default: throughput_bps, or
    /// transactions_per_s for rr/crr/http].
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// Also write an HTML report with the table and an overlay figure.
    #[arg(long, short, value_name = "FILE.html")]
    pub out: Option<PathBuf>,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `tcplab probes`.
#[derive(Debug, Args)]
pub struct ProbesArgs {
    /// Run id, or `latest`.
    pub run: String,
    /// Only the trial with this execution number (`seq`, from 0).
    #[arg(long, value_name = "SEQ")]
    pub trial: Option<u32>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the trial's packets (first probed trial unless --trial) as
    /// pcapng, with headers synthesized from the probe records.
    #[arg(long, value_name = "FILE")]
    pub pcapng: Option<PathBuf>,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The run with per-point summaries and every trial.
    Json,
    /// One row per trial: parameters and metrics.
    Csv,
}

/// `tcplab export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Run id, or `latest`.
    pub run: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// Write to this file instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Export the probe records of the run's trials (one row per record,
    /// from `--probe`) instead of the trials.
    #[arg(long)]
    pub records: bool,
    /// With --records: only the trial with this execution number.
    #[arg(long, value_name = "SEQ", requires = "records")]
    pub trial: Option<u32>,
}

/// `--interval`: a duration of at least 10 ms.
fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let d = record::factor::parse::duration(s).map_err(|e| e.to_string())?;
    if d < std::time::Duration::from_millis(10) {
        return Err(format!("{s:?} is below the shortest interval, 10ms"));
    }
    Ok(d)
}

/// `--probe-depth`, parsed by the probe crate, which owns the names.
fn parse_connect_timeout(s: &str) -> Result<std::time::Duration, String> {
    record::factor::parse::duration(s).map_err(|e| e.to_string())
}

fn parse_probe_depth(s: &str) -> Result<probe::ProbeDepth, String> {
    probe::ProbeDepth::parse(s).map_err(|e| e.to_string())
}

/// `study --topology`: a place the lab knows, checked before any plan is
/// made, so a typo is one line about the place (and not a split argument
/// of the bench commands the plan is written as).
fn parse_study_place(s: &str) -> Result<String, String> {
    lab::PlaceSpec::parse(Some(s), None)
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}
