//! `tcplab completions SHELL` and `tcplab man`: shell completion scripts
//! (clap_complete) and man pages (clap_mangen), both built from the same
//! clap definition as the parser, so they never drift from it.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use anyhow::Context;
use clap::CommandFactory;
use std::process::ExitCode;

/// Runs `tcplab completions`: the script on stdout.
pub fn completions(a: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "tcplab", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// Runs `tcplab man`: tcplab(1) on stdout, or every page into `--out-dir`.
pub fn man(a: ManArgs) -> anyhow::Result<ExitCode> {
    let cmd = Cli::command();
    match a.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| {
                crate::usage::usage(format!("cannot create {}: {e}", dir.display()))
            })?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("writing man pages to {}", dir.display()))?;
            eprintln!("tcplab: man pages written to {}", dir.display());
        }
        None => clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?,
    }
    Ok(ExitCode::SUCCESS)
}
