//! Two keys, "atk" and "victim", and their keys.toml, for the tests that
//! attack a keyed server with one key and check the other is served.

use engine::Key;
use std::path::PathBuf;
use tempfile::TempDir;

/// The keys and where they are written.
pub struct TwoKeys {
    /// The directory holding the key files and keys.toml.
    pub dir: TempDir,
    /// keys.toml, for `tcplab server --keys`.
    pub toml: PathBuf,
    /// The attacker's key.
    pub atk: Key,
    /// The other key.
    pub victim: Key,
}

/// New keys "atk" (with `atk_limits`, keys.toml lines such as
/// `max_cpu = 0.5`) and "victim".
pub fn two_keys(atk_limits: &str) -> TwoKeys {
    let dir = tempfile::tempdir().unwrap();
    for name in ["atk", "victim"] {
        Key::generate()
            .unwrap()
            .write_new(&dir.path().join(format!("{name}.key")))
            .unwrap();
    }
    let toml = dir.path().join("keys.toml");
    std::fs::write(
        &toml,
        format!("[[key]]\nfile = \"atk.key\"\n{atk_limits}\n[[key]]\nfile = \"victim.key\"\n"),
    )
    .unwrap();
    let read = |name: &str| Key::read_file(&dir.path().join(format!("{name}.key"))).unwrap();
    let (atk, victim) = (read("atk"), read("victim"));
    TwoKeys {
        dir,
        toml,
        atk,
        victim,
    }
}
