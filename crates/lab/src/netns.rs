//! Network namespaces: created with iproute2 (so `ip netns` sees them),
//! entered per thread with setns(2), deleted on drop.

use crate::cmd;
use crate::error::LabError;
use std::fs::File;
use std::os::fd::AsRawFd;

/// A network namespace tcplab created; deleted when dropped.
#[derive(Debug)]
pub struct NetNs {
    name: String,
}

impl NetNs {
    /// Creates `name` (must start with `tcplab-`) with its loopback up.
    pub fn create(name: &str) -> Result<NetNs, LabError> {
        cmd::ip(None, &["netns", "add", name])?;
        let ns = NetNs {
            name: name.to_string(),
        };
        cmd::ip(Some(name), &["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves the calling thread into this namespace until the guard drops.
    /// Threads the caller spawns meanwhile stay in it for their lifetime.
    pub fn enter(&self) -> Result<NsGuard, LabError> {
        enter_path(&format!("/run/netns/{}", self.name))
    }

    /// Runs `f` on a fresh thread inside this namespace.
    pub fn run_in<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LabError> {
        run_in_named(&self.name, f)
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = cmd::ip(None, &["netns", "del", &self.name]);
    }
}

/// Restores the thread's previous network namespace when dropped.
#[derive(Debug)]
pub struct NsGuard {
    previous: File,
}

fn enter_path(path: &str) -> Result<NsGuard, LabError> {
    let previous = File::open("/proc/thread-self/ns/net")
        .map_err(|e| LabError::io("opening current netns", e))?;
    let target = File::open(path).map_err(|e| LabError::io(format!("opening {path}"), e))?;
    setns(&target).map_err(|e| LabError::io(format!("entering {path}"), e))?;
    Ok(NsGuard { previous })
}

fn setns(f: &File) -> std::io::Result<()> {
    // SAFETY: f is an open namespace file.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl Drop for NsGuard {
    fn drop(&mut self) {
        let _ = setns(&self.previous);
    }
}

/// Runs `f` on a fresh thread inside the namespace called `name` (one
/// `ip netns` knows), for code that holds a name rather than a [`NetNs`].
pub fn run_in_named<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, LabError> {
    let path = format!("/run/netns/{name}");
    std::thread::spawn(move || -> Result<T, LabError> {
        let _g = enter_path(&path)?;
        Ok(f())
    })
    .join()
    .map_err(|_| LabError::Unsupported("thread in namespace panicked".into()))?
}

/// Names of existing namespaces that start with `prefix`.
pub fn list(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}
