//! Facts about the measuring host, read from `/proc`, `/sys` and `/etc`
//! without shelling out.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The sysctls recorded with every run, by dotted name.
pub const SYSCTLS: &[&str] = &[
    "net.core.rmem_default",
    "net.core.rmem_max",
    "net.core.wmem_default",
    "net.core.wmem_max",
    "net.core.netdev_max_backlog",
    "net.core.optmem_max",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.default_qdisc",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_available_congestion_control",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_autocorking",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.udp_mem",
    "net.ipv4.udp_rmem_min",
    "net.ipv4.udp_wmem_min",
    "net.ipv4.ip_local_port_range",
];

/// Facts about the host at the start of a run.
///
/// Every field is best effort: what cannot be read is left empty (or 0).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostFacts {
    /// The host name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// The CPU model name (first `model name` of `/proc/cpuinfo`).
    pub cpu_model: String,
    /// Number of online CPUs.
    pub cores: u32,
    /// Kernel release and version, like `uname -r` and `uname -v` joined by a space.
    pub kernel: String,
    /// `PRETTY_NAME` from `/etc/os-release`.
    pub os: String,
    /// The default TCP congestion control (`net.ipv4.tcp_congestion_control`).
    pub congestion_control: String,
    /// The sysctls of [`SYSCTLS`] that exist on this host, by dotted name,
    /// with whitespace runs collapsed to single spaces.
    pub sysctls: BTreeMap<String, String>,
    /// The kernel's timer frequency (`CONFIG_HZ` from /proc/config.gz or
    /// /boot/config-RELEASE), if the kernel says: TCP_INFO's busy and
    /// limited times tick once per 1/HZ. Absent in runs stored before it.
    #[serde(default)]
    pub kernel_hz: Option<u32>,
    /// CPU vulnerability mitigations in force, by name
    /// (/sys/devices/system/cpu/vulnerabilities): retpolines and return
    /// thunks make every indirect call and return of the network path
    /// dearer. Absent in runs stored before it.
    #[serde(default)]
    pub cpu_vulnerabilities: BTreeMap<String, String>,
    /// The CPU clock the kernel reports (first `cpu MHz` of
    /// /proc/cpuinfo), MHz. Absent in runs stored before it.
    #[serde(default)]
    pub cpu_mhz: Option<f64>,
    /// Simultaneous multithreading: /sys/devices/system/cpu/smt/control
    /// (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`), empty
    /// when unreadable.
    #[serde(default)]
    pub smt: String,
    /// Whether the CPU reports running under a hypervisor (its
    /// `hypervisor` flag), with the DMI vendor and product when the
    /// machine has them: guests lose time to steal and run their timers
    /// late. Empty when /proc/cpuinfo is unreadable.
    #[serde(default)]
    pub hypervisor: String,
}

impl HostFacts {
    /// Reads the facts of the running host.
    pub fn collect() -> HostFacts {
        HostFacts::collect_under(Path::new("/"))
    }

    /// Reads the facts from a file system tree rooted at `root` (`/` for the
    /// running host; a fake tree in tests).
    pub(crate) fn collect_under(root: &Path) -> HostFacts {
        let fs = Root(root.to_path_buf());
        let sysctls = read_sysctls(&fs);
        HostFacts {
            hostname: fs.read("proc/sys/kernel/hostname").unwrap_or_default(),
            cpu_model: cpu_model(&fs),
            cores: online_cores(&fs),
            kernel: kernel(&fs),
            os: os_pretty_name(&fs),
            congestion_control: sysctls
                .get("net.ipv4.tcp_congestion_control")
                .cloned()
                .unwrap_or_default(),
            sysctls,
            kernel_hz: kernel_hz(&fs),
            cpu_vulnerabilities: vulnerabilities(&fs),
            cpu_mhz: cpuinfo(&fs, "cpu MHz").and_then(|v| v.parse().ok()),
            smt: fs
                .read("sys/devices/system/cpu/smt/control")
                .unwrap_or_default(),
            hypervisor: hypervisor(&fs),
        }
    }

    /// The mitigations in force: the vulnerabilities whose state is not
    /// "Not affected", as `name: state`.
    pub fn mitigations(&self) -> Vec<String> {
        self.cpu_vulnerabilities
            .iter()
            .filter(|(_, v)| !v.starts_with("Not affected"))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }
}

/// The kernel's own config (/proc/config.gz), else /boot/config-RELEASE.
fn kernel_config(fs: &Root) -> Option<String> {
    let from_proc = fs::File::open(fs.0.join("proc/config.gz"))
        .ok()
        .and_then(|f| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text).ok()?;
            Some(text)
        });
    let release = fs.read("proc/sys/kernel/osrelease").unwrap_or_default();
    from_proc.or_else(|| fs.read_raw(&format!("boot/config-{release}")))
}

/// `CONFIG_HZ` from the kernel's config.
fn kernel_hz(fs: &Root) -> Option<u32> {
    kernel_config(fs)?
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

/// Whether the running kernel was built with `CONFIG_<option>`, in or as
/// a module (e.g. `NET_SCH_FQ`, the fq qdisc); None when its config
/// cannot be read, so nothing is claimed.
pub fn kernel_has(option: &str) -> Option<bool> {
    kernel_has_under(&Root(PathBuf::from("/")), option)
}

fn kernel_has_under(fs: &Root, option: &str) -> Option<bool> {
    let key = format!("CONFIG_{option}=");
    let config = kernel_config(fs)?;
    Some(
        config
            .lines()
            .filter_map(|l| l.strip_prefix(&key))
            .any(|v| matches!(v.trim(), "y" | "m")),
    )
}

/// Every file of /sys/devices/system/cpu/vulnerabilities, by name.
fn vulnerabilities(fs: &Root) -> BTreeMap<String, String> {
    let Ok(rd) = fs::read_dir(fs.0.join("sys/devices/system/cpu/vulnerabilities")) else {
        return BTreeMap::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let v = fs.read(&format!("sys/devices/system/cpu/vulnerabilities/{name}"))?;
            Some((name, v))
        })
        .collect()
}

/// The first value of `key` in /proc/cpuinfo.
fn cpuinfo(fs: &Root, key: &str) -> Option<String> {
    cpuinfo_field(&fs.read_raw("proc/cpuinfo")?, key)
}

/// "yes (…DMI vendor and product…)", "yes", "none reported", or empty
/// when /proc/cpuinfo cannot be read.
fn hypervisor(fs: &Root) -> String {
    let Some(flags) = cpuinfo(fs, "flags") else {
        return String::new();
    };
    if !flags.split_whitespace().any(|f| f == "hypervisor") {
        return "none reported (the CPU has no hypervisor flag)".into();
    }
    let dmi: Vec<String> = [
        "sys/class/dmi/id/sys_vendor",
        "sys/class/dmi/id/product_name",
    ]
    .iter()
    .filter_map(|r| fs.read(r))
    .filter(|v| !v.is_empty())
    .collect();
    if dmi.is_empty() {
        "yes (the CPU's hypervisor flag; no DMI vendor to name it)".into()
    } else {
        format!("yes (the CPU's hypervisor flag; DMI: {})", dmi.join(", "))
    }
}

/// A file system root that facts are read under.
struct Root(PathBuf);

impl Root {
    /// The normalized contents of `rel` under the root, if readable.
    fn read(&self, rel: &str) -> Option<String> {
        self.read_raw(rel).map(|s| normalize(&s))
    }

    /// The raw contents of `rel` under the root, if readable.
    fn read_raw(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.0.join(rel)).ok()
    }
}

/// Trims `s` and collapses every whitespace run to one space.
fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads every sysctl of [`SYSCTLS`] that exists.
fn read_sysctls(fs: &Root) -> BTreeMap<String, String> {
    SYSCTLS
        .iter()
        .filter_map(|name| {
            let rel = format!("proc/sys/{}", name.replace('.', "/"));
            fs.read(&rel).map(|v| (name.to_string(), v))
        })
        .collect()
}

/// The CPU model from `/proc/cpuinfo` (x86 `model name`, or the ARM fallbacks).
fn cpu_model(fs: &Root) -> String {
    let Some(info) = fs.read_raw("proc/cpuinfo") else {
        return String::new();
    };
    let name = ["model name", "Processor", "cpu model", "Hardware"]
        .iter()
        .find_map(|key| cpuinfo_field(&info, key))
        .unwrap_or_default();
    // A hypervisor may hide the model's number in its name ("AMD EPYC");
    // x86's family, model and stepping still tell the part apart.
    match (
        cpuinfo_field(&info, "cpu family"),
        cpuinfo_field(&info, "model"),
        cpuinfo_field(&info, "stepping"),
    ) {
        (Some(f), Some(m), Some(st)) if !name.is_empty() => {
            format!("{name} (x86 family {f}, model {m}, stepping {st})")
        }
        _ => name,
    }
}

/// The first value of `key` in cpuinfo text.
fn cpuinfo_field(info: &str, key: &str) -> Option<String> {
    info.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key && !v.trim().is_empty()).then(|| normalize(v))
    })
}

/// Online CPUs from `/sys/devices/system/cpu/online`, else the available parallelism.
fn online_cores(fs: &Root) -> u32 {
    fs.read("sys/devices/system/cpu/online")
        .and_then(|s| count_cpu_list(&s))
        .filter(|&n| n > 0)
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
        })
}

/// Counts the CPUs of a kernel CPU list such as `0-3,6,8-9`.
fn count_cpu_list(list: &str) -> Option<u32> {
    list.split(',')
        .filter(|part| !part.trim().is_empty())
        .map(|part| match part.trim().split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?);
                hi.checked_sub(lo).map(|d| d + 1)
            }
            None => part.trim().parse::<u32>().ok().map(|_| 1),
        })
        .sum()
}

/// Kernel release and version (`uname -r` and `uname -v`), falling back to
/// `/proc/version` for whatever `/proc/sys/kernel` lacks.
fn kernel(fs: &Root) -> String {
    let proc_version = fs.read("proc/version").unwrap_or_default();
    let release = fs
        .read("proc/sys/kernel/osrelease")
        .or_else(|| release_from_proc_version(&proc_version));
    let version = fs
        .read("proc/sys/kernel/version")
        .or_else(|| version_from_proc_version(&proc_version));
    match (release, version) {
        (Some(r), Some(v)) => format!("{r} {v}"),
        (Some(r), None) => r,
        (None, Some(v)) => v,
        (None, None) => proc_version,
    }
}

/// The release of `Linux version RELEASE (...) ...`.
fn release_from_proc_version(text: &str) -> Option<String> {
    let rest = text.strip_prefix("Linux version ")?;
    rest.split_whitespace().next().map(str::to_string)
}

/// The `#1 SMP ...` tail of `/proc/version`.
fn version_from_proc_version(text: &str) -> Option<String> {
    text.find(" #").map(|i| text[i + 1..].to_string())
}

/// `PRETTY_NAME` from `/etc/os-release` (or `/usr/lib/os-release`), unquoted.
fn os_pretty_name(fs: &Root) -> String {
    ["etc/os-release", "usr/lib/os-release"]
        .iter()
        .filter_map(|rel| fs.read_raw(rel))
        .find_map(|text| os_release_field(&text, "PRETTY_NAME"))
        .unwrap_or_default()
}

/// The value of `key` in os-release text, with surrounding quotes removed.
fn os_release_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.trim().split_once('=')?;
        (k == key).then(|| unquote(v.trim()))
    })
}

/// Removes one pair of matching surrounding quotes.
fn unquote(v: &str) -> String {
    for q in ['"', '\''] {
        if let Some(inner) = v.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner.to_string();
        }
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn collects_the_running_host() {
        let facts = HostFacts::collect();
        assert!(!facts.kernel.is_empty());
        assert!(facts.cores > 0);
        if Path::new("/proc/sys/net/ipv4/tcp_congestion_control").exists() {
            let cc = &facts.sysctls["net.ipv4.tcp_congestion_control"];
            assert!(!cc.is_empty());
            assert_eq!(&facts.congestion_control, cc);
        }
        for value in facts.sysctls.values() {
            assert_eq!(value, &normalize(value));
        }
    }

    #[test]
    fn reads_the_kernels_hz_and_mitigations() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/sys/kernel/osrelease", "6.1.0-test\n");
        write(
            root,
            "boot/config-6.1.0-test",
            "CONFIG_NO_HZ=y\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n",
        );
        write(
            root,
            "sys/devices/system/cpu/vulnerabilities/spectre_v2",
            "Mitigation: Retpolines\n",
        );
        write(
            root,
            "sys/devices/system/cpu/vulnerabilities/meltdown",
            "Not affected\n",
        );
        let f = HostFacts::collect_under(root);
        assert_eq!(f.kernel_hz, Some(250));
        assert_eq!(f.cpu_vulnerabilities.len(), 2);
        assert_eq!(f.mitigations(), ["spectre_v2: Mitigation: Retpolines"]);
        // A gzipped /proc/config.gz wins over /boot.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"CONFIG_HZ=1000\n").unwrap();
        fs::write(root.join("proc/config.gz"), gz.finish().unwrap()).unwrap();
        assert_eq!(HostFacts::collect_under(root).kernel_hz, Some(1000));
        let fs = Root(root.to_path_buf());
        assert_eq!(kernel_has_under(&fs, "NET_SCH_FQ"), Some(false));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"CONFIG_NET_SCH_FQ_CODEL=y\nCONFIG_NET_SCH_FQ=m\n")
            .unwrap();
        fs::write(root.join("proc/config.gz"), gz.finish().unwrap()).unwrap();
        assert_eq!(kernel_has_under(&fs, "NET_SCH_FQ"), Some(true));
        assert_eq!(kernel_has_under(&fs, "NET_SCH_FQ_PIE"), Some(false));
        // Clock, SMT and hypervisor, both ways.
        write(
            root,
            "proc/cpuinfo",
            "model name\t: Test CPU\ncpu MHz\t\t: 2596.144\nflags\t\t: fpu tsc hypervisor\n",
        );
        write(root, "sys/devices/system/cpu/smt/control", "notsupported\n");
        let f = HostFacts::collect_under(root);
        assert_eq!(f.cpu_mhz, Some(2596.144));
        assert_eq!(f.cpu_model, "Test CPU");
        write(
            root,
            "proc/cpuinfo",
            "cpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\ncpu MHz\t\t: 2596.144\nflags\t\t: fpu tsc hypervisor\n",
        );
        let f = HostFacts::collect_under(root);
        assert_eq!(
            f.cpu_model,
            "AMD EPYC (x86 family 25, model 17, stepping 1)"
        );
        assert_eq!(f.smt, "notsupported");
        assert_eq!(
            f.hypervisor,
            "yes (the CPU's hypervisor flag; no DMI vendor to name it)"
        );
        write(root, "sys/class/dmi/id/sys_vendor", "QEMU\n");
        assert_eq!(
            HostFacts::collect_under(root).hypervisor,
            "yes (the CPU's hypervisor flag; DMI: QEMU)"
        );
        write(
            root,
            "proc/cpuinfo",
            "model name\t: Test CPU\nflags\t\t: fpu tsc\n",
        );
        let f = HostFacts::collect_under(root);
        assert_eq!(
            f.hypervisor,
            "none reported (the CPU has no hypervisor flag)"
        );
        assert_eq!(f.cpu_mhz, None);
        // Nothing to read: nothing claimed.
        let empty = tempfile::tempdir().unwrap();
        let f = HostFacts::collect_under(empty.path());
        assert_eq!((f.kernel_hz, f.mitigations().len()), (None, 0));
        assert_eq!((f.smt.as_str(), f.hypervisor.as_str()), ("", ""));
        assert_eq!(
            kernel_has_under(&Root(empty.path().into()), "NET_SCH_FQ"),
            None
        );
    }

    #[test]
    fn collects_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/sys/kernel/hostname", "box\n");
        write(root, "proc/sys/kernel/osrelease", "6.1.0-test\n");
        write(root, "proc/sys/kernel/version", "#1 SMP PREEMPT\n");
        write(
            root,
            "proc/sys/net/ipv4/tcp_rmem",
            "4096\t131072\t6291456\n",
        );
        write(root, "proc/sys/net/ipv4/tcp_congestion_control", "bbr\n");
        write(root, "sys/devices/system/cpu/online", "0-3,6,8-9\n");
        write(
            root,
            "proc/cpuinfo",
            "processor\t: 0\nmodel name\t: Fake  CPU @ 3GHz\n",
        );
        write(
            root,
            "etc/os-release",
            "NAME=X\nPRETTY_NAME=\"Fake OS 1\"\n",
        );

        let facts = HostFacts::collect_under(root);
        assert_eq!(facts.hostname, "box");
        assert_eq!(facts.kernel, "6.1.0-test #1 SMP PREEMPT");
        assert_eq!(facts.cores, 7);
        assert_eq!(facts.cpu_model, "Fake CPU @ 3GHz");
        assert_eq!(facts.os, "Fake OS 1");
        assert_eq!(facts.congestion_control, "bbr");
        assert_eq!(facts.sysctls["net.ipv4.tcp_rmem"], "4096 131072 6291456");
        assert_eq!(facts.sysctls.len(), 2);
    }

    #[test]
    fn kernel_falls_back_to_proc_version() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "proc/version",
            "Linux version 5.10.0 (b@h) (gcc 12) #2 SMP Debian\n",
        );
        let facts = HostFacts::collect_under(dir.path());
        assert_eq!(facts.kernel, "5.10.0 #2 SMP Debian");
        assert!(facts.cores > 0);
        assert!(facts.sysctls.is_empty());
    }

    #[test]
    fn counts_cpu_lists() {
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-1"), Some(2));
        assert_eq!(count_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpu_list("x"), None);
    }
}
