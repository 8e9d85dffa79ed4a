//! Names of everything a run creates: `tcplab-<tag>-<role>`, where the tag is
//! six hex digits unique to the run. Interface names stay within the
//! kernel's 15 characters. An owner file under /run/tcplab records the pid
//! that created a tag, so `lab clean` removes only what a dead run left.

use std::path::PathBuf;

/// The prefix of every name tcplab gives to what it creates.
pub const PREFIX: &str = "tcplab-";

/// Directory of owner files.
pub const OWNER_DIR: &str = "/run/tcplab";

/// A run's tag, e.g. `3fa2c1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag(String);

impl Tag {
    /// A fresh random tag.
    pub fn fresh() -> Tag {
        Tag(format!("{:06x}", rand::random::<u32>() & 0xff_ffff))
    }

    /// A tag from its text (for tests and `lab clean`).
    pub fn from_text(s: &str) -> Option<Tag> {
        (s.len() == 6 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Tag(s.to_string()))
    }

    /// The tag's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `tcplab-<tag>-<role>`: a namespace, interface or cgroup name.
    /// Interface roles must be at most one character so the name fits IFNAMSIZ.
    pub fn name(&self, role: &str) -> String {
        format!("{PREFIX}{}-{role}", self.0)
    }

    /// The owner file recording which pid created this tag's resources.
    pub fn owner_file(&self) -> PathBuf {
        PathBuf::from(OWNER_DIR).join(format!("{}.pid", self.0))
    }

    /// Writes the owner file with this process's pid.
    pub fn claim(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(OWNER_DIR)?;
        std::fs::write(self.owner_file(), std::process::id().to_string())
    }

    /// Removes the owner file.
    pub fn release(&self) {
        let _ = std::fs::remove_file(self.owner_file());
    }

    /// The tag within a tcplab name (`tcplab-3fa2c1-a` → `3fa2c1`).
    pub fn of_name(name: &str) -> Option<Tag> {
        let rest = name.strip_prefix(PREFIX)?;
        Tag::from_text(rest.get(..6)?)
    }

    /// The pid recorded in the owner file, and whether it is alive.
    pub fn owner(&self) -> Option<(u32, bool)> {
        let pid: u32 = std::fs::read_to_string(self.owner_file())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let alive = PathBuf::from(format!("/proc/{pid}")).exists();
        Some((pid, alive))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_interfaces() {
        let t = Tag::fresh();
        assert_eq!(t.name("a").len(), 15);
        assert_eq!(Tag::of_name(&t.name("ra")), Some(t.clone()));
        assert_eq!(Tag::of_name("tcplab-xyz"), None);
        assert_eq!(Tag::of_name("eth0"), None);
    }
}
