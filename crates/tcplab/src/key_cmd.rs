//! `tcplab key new`, and reading the key files of `server --key` and
//! `bench --key` (README: "Authentication").

use crate::cli::KeyCommand;
use crate::usage::usage;
use engine::auth::KeyError;
use engine::Key;
use std::path::Path;
use std::process::ExitCode;

/// Runs `tcplab key …`.
pub fn key(c: KeyCommand) -> anyhow::Result<ExitCode> {
    match c {
        KeyCommand::New { out } => {
            let key = Key::generate()?;
            match out {
                Some(path) => {
                    key.write_new(&path).map_err(|e| match e {
                        KeyError::Exists(_) => usage(e),
                        other => anyhow::Error::new(other),
                    })?;
                    eprintln!("tcplab: wrote a new key to {} (mode 0600)", path.display());
                }
                None => print!("{}", key.to_line()),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The key in `path`; a missing, unreadable, exposed (group or others may
/// read it) or malformed file is bad input.
pub fn read_key(path: &Path) -> anyhow::Result<Key> {
    Key::read_file(path).map_err(|e| usage(format!("--key {e}")))
}
