//! Dispatches the parsed command line to the command modules.

use crate::cli::{Cli, Command, RunsCommand};
use crate::store_access::{interrupt_flag, open_store, open_store_read_only};
use std::process::ExitCode;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let db = cli.db.clone();
    match cli.command {
        Command::Bench(a) => crate::bench_cmd::bench(db, *a),
        Command::Server(a) => crate::lab_cmd::server(a),
        Command::Key(c) => crate::key_cmd::key(c),
        Command::Runs(a) => match a.command {
            None => crate::show_cmd::runs(db, a.json),
            Some(RunsCommand::Delete { runs, json }) => crate::runs_cmd::delete(db, &runs, json),
        },
        Command::Show(a) => crate::show_cmd::show(db, a),
        Command::Export(a) => crate::show_cmd::export(db, a),
        Command::Probes(a) => crate::probes_cmd::probes(open_store_read_only(db)?, a),
        Command::Lab(c) => crate::lab_cmd::lab_command(c),
        Command::Report(a) => crate::report_cmd::report(open_store_read_only(db)?, a),
        Command::Compare(a) => crate::compare_cmd::compare(open_store_read_only(db)?, a),
        Command::Study(a) => crate::study_cmd::study(db, a),
        Command::Fleet(crate::cli::FleetCommand::Run(a)) => crate::fleet_cmd::run(db, a),
        Command::Import(a) => crate::import_cmd::import(open_store(db)?, a),
        // --show only reads; measuring stores a profile.
        Command::Calibrate(a) if a.show.is_some() => {
            crate::calibrate_cmd::calibrate(open_store_read_only(db)?, a, interrupt_flag()?)
        }
        Command::Calibrate(a) => {
            crate::calibrate_cmd::calibrate(open_store(db)?, a, interrupt_flag()?)
        }
        Command::Completions(a) => crate::docs_cmd::completions(a),
        Command::Man(a) => crate::docs_cmd::man(a),
    }
}
