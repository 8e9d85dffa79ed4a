//! `tcplab`: the binary. Parses the command line, runs the command, and maps
//! errors to exit statuses: 2 for bad input, 1 for runtime failures, 130
//! for an interrupted run.

mod bench_cmd;
mod calibrate_cmd;
mod cli;
mod commands;
mod compare_cmd;
mod docs_cmd;
mod factor_flags;
mod fleet_cmd;
mod host_models;
mod import_cmd;
mod interval_lines;
mod key_cmd;
mod keys_file;
mod lab_cmd;
mod places;
mod plan_args;
mod probes;
mod probes_cmd;
mod report_cmd;
mod report_files;
mod runner;
mod runs_cmd;
mod server_flags;
mod session;
mod show_cmd;
mod store_access;
mod study_cmd;
mod study_report;
mod usage;

use clap::Parser;
use std::process::ExitCode;

/// The argument vector as clap read it (lossy where it is not UTF-8).
fn argv() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            // One line naming the problem, with clap's suggestion, without
            // its usage block.
            eprintln!("tcplab: {}", usage::clap_error_line(&e, &argv()));
            return ExitCode::from(2);
        }
    };
    if only_prints(&cli.command) {
        // `tcplab show … | head`: a closed pipe ends a command that only
        // prints, as it ends cat, instead of panicking in println!.
        // Commands that run sockets keep Rust's ignored SIGPIPE, so a peer
        // that goes away is an error of its trial, not the end of the run.
        // SAFETY: restores the default disposition of one signal before
        // any other thread exists.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            if e.downcast_ref::<usage::UsageError>().is_some() {
                eprintln!("tcplab: {e}");
                return ExitCode::from(2);
            }
            eprintln!("tcplab: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Whether `command` only reads and prints (no sockets, no places).
fn only_prints(command: &cli::Command) -> bool {
    use cli::Command as C;
    matches!(
        command,
        C::Runs(_)
            | C::Show(_)
            | C::Export(_)
            | C::Probes(_)
            | C::Compare(_)
            | C::Completions(_)
            | C::Man(_)
    )
}
