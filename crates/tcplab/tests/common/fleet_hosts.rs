//! Hosts for fleet tests: network namespaces, each with its own hostname
//! (a UTS namespace), its own link rate (tbf both ways), its own CPU quota
//! (a cgroup) and a real OpenSSH server; a controller namespace bridging
//! them, from which the fleet run is made. Keys (host and client) are made
//! for the test. Everything is named `tcplab-<tag>-…` and removed on drop,
//! on panic included; `tcplab lab clean` removes leftovers of a killed test.

#![allow(dead_code)]

use lab::names::Tag;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One host to build.
pub struct HostSpec {
    /// tbf rate both ways (`200mbit`), or none for an unshaped veth.
    pub rate: Option<&'static str>,
    /// Fraction of one CPU.
    pub cpu: f64,
}

/// A built host.
pub struct FleetHost {
    /// Its hostname (and inventory name).
    pub name: String,
    /// Its namespace.
    pub netns: String,
    /// Its address on the fleet's bridge.
    pub address: String,
    /// Its cgroup directory (the CPU quota).
    pub cgroup: PathBuf,
    sshd: Child,
}

/// The fleet's hosts and controller.
pub struct FleetHosts {
    tag: Tag,
    /// The controller's namespace, where `tcplab fleet run` runs.
    pub controller: String,
    /// The hosts.
    pub hosts: Vec<FleetHost>,
    /// Keys, configs and logs.
    pub dir: tempfile::TempDir,
    /// The hosts' working directories (/tmp/tcplab-fleet.*) there before.
    workdirs_before: Vec<PathBuf>,
}

/// The fleet working directories in /tmp now (the hosts share this
/// machine's /tmp).
fn workdirs() -> Vec<PathBuf> {
    std::fs::read_dir("/tmp")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("tcplab-fleet."))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this host can run the fleet test (root, sshd, unshare).
pub fn missing_parts() -> Option<String> {
    if !super::is_root() {
        return Some("namespaces, cgroups and sshd need root".into());
    }
    for p in [
        "/usr/sbin/sshd",
        "/usr/bin/ssh",
        "/usr/bin/ssh-keygen",
        "/usr/bin/unshare",
    ] {
        if !Path::new(p).exists() {
            return Some(format!(
                "{p} is missing (scripts/setup-debian installs openssh-server)"
            ));
        }
    }
    if cpu_cgroup_root().is_none() {
        return Some("no cgroup CPU controller (neither v1 cpu nor v2 cpu.max)".into());
    }
    None
}

/// Where CPU cgroups are made: v1's cpu hierarchy, or the v2 root.
fn cpu_cgroup_root() -> Option<(PathBuf, bool)> {
    let v1 = Path::new("/sys/fs/cgroup/cpu");
    if v1.join("cpu.cfs_quota_us").exists() {
        return Some((v1.into(), true));
    }
    let v2 = Path::new("/sys/fs/cgroup");
    let controllers = std::fs::read_to_string(v2.join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "cpu")
        .then(|| (v2.into(), false))
}

impl FleetHosts {
    /// Builds the hosts named `tcplab-fleet-h1…` with `specs`.
    pub fn build(specs: &[HostSpec]) -> FleetHosts {
        let tag = Tag::fresh();
        tag.claim().unwrap();
        let dir = tempfile::Builder::new()
            .prefix("tcplab-fleet-test")
            .tempdir()
            .unwrap();
        let mut f = FleetHosts {
            controller: tag.name("c"),
            tag,
            hosts: Vec::new(),
            dir,
            workdirs_before: workdirs(),
        };
        let d = f.dir.path().to_path_buf();
        // The client's key and the hosts' key.
        for key in ["id", "host"] {
            let path = d.join(key);
            sh(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                path.to_str().unwrap(),
            ]);
        }
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
        let host_pub = std::fs::read_to_string(d.join("host.pub")).unwrap();
        let _ = std::fs::create_dir_all("/run/sshd");

        // The controller: a bridge the hosts hang off.
        let c = f.controller.clone();
        sh(&["ip", "netns", "add", &c]);
        sh(&["ip", "-n", &c, "link", "set", "lo", "up"]);
        sh(&["ip", "-n", &c, "link", "add", "br0", "type", "bridge"]);
        sh(&[
            "ip",
            "-n",
            &c,
            "addr",
            "add",
            "198.18.0.254/24",
            "dev",
            "br0",
        ]);
        sh(&["ip", "-n", &c, "link", "set", "br0", "up"]);
        let mut known = String::new();
        let (cg_root, v1) = cpu_cgroup_root().expect("checked by missing_parts");
        for (i, spec) in specs.iter().enumerate() {
            let n = i + 1;
            let name = format!("tcplab-fleet-h{n}");
            let ns = f.tag.name(&format!("h{n}"));
            let address = format!("198.18.0.{n}");
            sh(&["ip", "netns", "add", &ns]);
            sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            let port = format!("p{n}");
            sh(&[
                "ip", "-n", &c, "link", "add", &port, "type", "veth", "peer", "name", "eth0",
                "netns", &ns,
            ]);
            sh(&["ip", "-n", &c, "link", "set", &port, "master", "br0", "up"]);
            sh(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{address}/24"),
                "dev",
                "eth0",
            ]);
            sh(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
            if let Some(rate) = spec.rate {
                for (where_, dev) in [(&ns, "eth0"), (&c, port.as_str())] {
                    sh(&[
                        "ip", "netns", "exec", where_, "tc", "qdisc", "add", "dev", dev, "root",
                        "tbf", "rate", rate, "burst", "64kb", "latency", "50ms",
                    ]);
                }
            }
            // The CPU quota.
            let cgroup = cg_root.join(f.tag.name(&format!("q{n}")));
            std::fs::create_dir(&cgroup).unwrap();
            let quota = ((spec.cpu * 100_000.0) as u64).max(1000);
            if v1 {
                std::fs::write(cgroup.join("cpu.cfs_period_us"), "100000").unwrap();
                std::fs::write(cgroup.join("cpu.cfs_quota_us"), quota.to_string()).unwrap();
            } else {
                std::fs::write(cgroup.join("cpu.max"), format!("{quota} 100000")).unwrap();
            }
            // sshd, in the quota, in its own UTS namespace with its own name.
            // nsenter, not `ip netns exec`: that remounts /sys for the
            // namespace, which hides /sys/fs/cgroup from the host's tcplab.
            let config = d.join(format!("sshd_config_{n}"));
            std::fs::write(
                &config,
                format!(
                    "Port 22\nListenAddress {address}\nHostKey {host}\nPidFile none\n\
                     AuthorizedKeysFile {keys}\nPermitRootLogin prohibit-password\n\
                     PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                     StrictModes no\nPrintMotd no\nLogLevel ERROR\nMaxSessions 64\nMaxStartups 64\n",
                    host = d.join("host").display(),
                    keys = d.join("authorized_keys").display()
                ),
            )
            .unwrap();
            let log = std::fs::File::create(d.join(format!("sshd_{n}.log"))).unwrap();
            let script = format!(
                "echo $$ > {procs} && exec unshare --uts sh -c 'hostname {name} && exec nsenter --net=/run/netns/{ns} /usr/sbin/sshd -D -e -f {config}'",
                procs = cgroup.join("cgroup.procs").display(),
                config = config.display()
            );
            let sshd = Command::new("sh")
                .args(["-c", &script])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap();
            known += &format!("{address} {host_pub}");
            f.hosts.push(FleetHost {
                name,
                netns: ns,
                address,
                cgroup,
                sshd,
            });
        }
        std::fs::write(d.join("known_hosts"), known).unwrap();
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host *\n  User root\n  IdentityFile {id}\n  IdentitiesOnly yes\n  \
                 UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                id = d.join("id").display(),
                known = d.join("known_hosts").display()
            ),
        )
        .unwrap();
        // Every sshd answers before the test goes on.
        for h in &f.hosts {
            let t0 = Instant::now();
            loop {
                let ok = Command::new("ip")
                    .args(["netns", "exec", &f.controller, "ssh", "-F"])
                    .arg(d.join("ssh_config"))
                    .args(["-o", "BatchMode=yes", &h.address, "hostname"])
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                if ok.status.success() {
                    assert_eq!(String::from_utf8_lossy(&ok.stdout).trim(), h.name);
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(15),
                    "sshd on {} never answered: {}",
                    h.name,
                    String::from_utf8_lossy(&ok.stderr)
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        f
    }

    /// Writes an inventory of every host (all roles) and returns its path.
    pub fn inventory(&self, roles: &str) -> PathBuf {
        let mut text = format!(
            "ssh_config = \"ssh_config\"\ntcplab = \"{}\"\n",
            env!("CARGO_BIN_EXE_tcplab")
        );
        for (i, h) in self.hosts.iter().enumerate() {
            text += &format!(
                "\n[[host]]\nname = \"{}\"\ndestination = \"{}\"\nroles = {roles}\nlabels = {{ slot = \"{}\" }}\n",
                h.name,
                h.address,
                i + 1
            );
        }
        let p = self.dir.path().join("hosts.toml");
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `tcplab --db DB ARGS…` run in the controller's namespace.
    pub fn tcplab(&self, db: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args([
            "netns",
            "exec",
            &self.controller,
            env!("CARGO_BIN_EXE_tcplab"),
        ])
        .arg("--db")
        .arg(db);
        c
    }

    /// Kills every process of host `i` (its sshd and all it started), as
    /// a host that crashes.
    pub fn kill_host(&self, i: usize) {
        kill_cgroup(&self.hosts[i].cgroup);
    }
}

/// SIGKILLs every process in `cgroup` (all started by this test's sshd)
/// until none is left.
fn kill_cgroup(cgroup: &Path) {
    let t0 = Instant::now();
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(cgroup.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.is_empty() || t0.elapsed() > Duration::from_secs(5) {
            return;
        }
        for pid in pids {
            // SAFETY: these processes were started by this test's sshd.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Drop for FleetHosts {
    fn drop(&mut self) {
        for h in &mut self.hosts {
            kill_cgroup(&h.cgroup);
            let _ = h.sshd.kill();
            let _ = h.sshd.wait();
            let _ = std::fs::remove_dir(&h.cgroup);
            let _ = Command::new("ip").args(["netns", "del", &h.netns]).status();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.controller])
            .status();
        self.tag.release();
        // A killed host cannot clean its working directory up; the fleet
        // leaves it, as it would on a real host. Here it is this machine's.
        for w in workdirs() {
            if !self.workdirs_before.contains(&w) {
                let _ = std::fs::remove_dir_all(w);
            }
        }
    }
}
