//! Turns the sampler's addresses into function names: kernel addresses
//! through /proc/kallsyms, user addresses of the experiment's process
//! through its mapped ELF files' symbols (both by blazesym), and labels each
//! sampled thread with a first role (the caller refines sender/receiver).

use crate::raw_profile::RawProfile;
use blazesym::symbolize::source::{Kernel, Process, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};
use record::cpu_profile::PROFILE_VERSION;
use record::{CpuProfile, ProfiledStack, ProfiledThread, ThreadRole};
use std::collections::{BTreeMap, HashMap};

/// Name given to addresses no symbol covers.
const UNKNOWN: &str = "[unknown]";

/// User frames kept per sample: the innermost only. Release builds carry no
/// frame pointers, so the frames past the first are not trustworthy.
const USER_FRAMES: usize = 1;

/// (thread, unsampled, kernel frames, user frames).
type StackKey = (u32, bool, Vec<u32>, Vec<u32>);

/// Symbolizes a raw profile.
pub fn symbolize(raw: &RawProfile) -> CpuProfile {
    let symbolizer = Symbolizer::builder().enable_code_info(false).build();
    let mut kernel_addrs: Vec<u64> = raw
        .samples
        .iter()
        .flat_map(|s| s.kernel.iter().copied())
        .collect();
    kernel_addrs.sort_unstable();
    kernel_addrs.dedup();
    let kernel_src = Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Default,
        vmlinux: MaybeDefault::None,
        debug_syms: false,
        ..Kernel::default()
    });
    let kernel_names = names(&symbolizer, &kernel_src, &kernel_addrs);

    let mut user_addrs: Vec<u64> = raw
        .samples
        .iter()
        .filter(|s| s.tgid == raw.tgid)
        .flat_map(|s| s.user.iter().take(USER_FRAMES).copied())
        .collect();
    user_addrs.sort_unstable();
    user_addrs.dedup();
    let mut process = Process::new(Pid::from(raw.tgid));
    process.debug_syms = false;
    process.perf_map = false;
    let user_names = names(&symbolizer, &Source::Process(process), &user_addrs);
    // Stripped libraries (libc) have no symbol for their internal
    // functions: name those frames by their file.
    let mut user_names = user_names;
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", raw.tgid)).unwrap_or_default();
    for a in &user_addrs {
        if !user_names.contains_key(a) {
            if let Some(file) = mapped_file(&maps, *a) {
                user_names.insert(*a, format!("[{file}]"));
            }
        }
    }

    let mut interner = Interner::default();
    let mut stacks: BTreeMap<StackKey, (u64, u64)> = BTreeMap::new();
    for s in &raw.samples {
        let kernel: Vec<u32> = s
            .kernel
            .iter()
            .map(|a| interner.id(kernel_names.get(a).map_or(UNKNOWN, String::as_str)))
            .collect();
        let user: Vec<u32> = if s.tgid == raw.tgid {
            s.user
                .iter()
                .take(USER_FRAMES)
                .map(|a| interner.id(user_names.get(a).map_or(UNKNOWN, String::as_str)))
                .collect()
        } else {
            Vec::new()
        };
        let e = stacks
            .entry((s.tid, s.unsampled, kernel, user))
            .or_default();
        e.0 += s.count;
        e.1 += (s.ns as f64 * charged_share(raw, s.tid)).round() as u64;
    }
    let mut threads: BTreeMap<u32, ProfiledThread> = BTreeMap::new();
    for s in &raw.samples {
        threads.entry(s.tid).or_insert_with(|| {
            let comm = if s.tid == 0 {
                "swapper".to_string()
            } else {
                raw.comms.get(&s.tid).cloned().unwrap_or_default()
            };
            ProfiledThread {
                tid: s.tid,
                tgid: s.tgid,
                role: first_role(s.tid, s.tgid, raw.tgid, &comm),
                comm,
            }
        });
    }
    CpuProfile {
        version: PROFILE_VERSION,
        period_ns: raw.period_ns,
        clock: raw.clock.clone(),
        cpus: raw.cpus,
        duration_s: raw.duration_s,
        symbols: interner.names,
        threads: threads.into_values().collect(),
        stacks: stacks
            .into_iter()
            .map(
                |((tid, unsampled, kernel, user), (samples, ns))| ProfiledStack {
                    tid,
                    unsampled,
                    kernel,
                    user,
                    samples,
                    ns,
                },
            )
            .collect(),
        busy_s: raw.busy_s,
        idle_s: raw.idle_s,
        lost_samples: raw.lost,
        broken_stacks: raw.broken,
    }
}

/// Most a thread's sampled weights are scaled up by (see [`charged_share`]).
const MAX_UPSCALE: f64 = 1.5;

/// The scheduler's runtime for a thread's observed stints over their wall
/// time between `sched_switch` hooks; 1 when unknown.
///
/// Below 1 when the hypervisor stole time. Above 1 because the scheduler
/// charges a woken thread from the moment it is picked, a little before the
/// `sched_switch` hook runs, and that piece does not come back at its
/// switch-out: on the development VM about 1.4 µs per wake-up, 5-20% of a
/// receiver woken ~15,000 times a second (the shortfall grew with the
/// wake-up rate and vanished at ~1,000 wake-ups a second). Scaling by the
/// ratio makes the thread's weights add up to what the scheduler charged,
/// spread in proportion over its sampled stacks.
fn charged_share(raw: &RawProfile, tid: u32) -> f64 {
    match raw.stints.get(&tid) {
        Some(&(wall, exec)) if tid != 0 && wall > 0 && exec > 0 => {
            (exec as f64 / wall as f64).min(MAX_UPSCALE)
        }
        _ => 1.0,
    }
}

/// The role a thread has before the engine says which threads sent and
/// received.
fn first_role(tid: u32, tgid: u32, experiment: u32, comm: &str) -> ThreadRole {
    if tid == 0 {
        ThreadRole::Idle
    } else if tgid == experiment && experiment != 0 {
        ThreadRole::Tcplab
    } else if comm.starts_with("ksoftirqd") {
        ThreadRole::Softirqd
    } else {
        ThreadRole::Other
    }
}

/// Address → function name for one source ("[unknown]" left out).
fn names(symbolizer: &Symbolizer, src: &Source, addrs: &[u64]) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    if addrs.is_empty() {
        return out;
    }
    let Ok(syms) = symbolizer.symbolize(src, Input::AbsAddr(addrs)) else {
        return out;
    };
    for (a, s) in addrs.iter().zip(syms) {
        if let Symbolized::Sym(sym) = s {
            out.insert(*a, short_name(&sym.name));
        }
    }
    out
}

/// The file name of the mapping that holds `addr`, from /proc/PID/maps.
fn mapped_file(maps: &str, addr: u64) -> Option<String> {
    maps.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (lo, hi) = f.next()?.split_once('-')?;
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).ok()?,
            u64::from_str_radix(hi, 16).ok()?,
        );
        if addr < lo || addr >= hi {
            return None;
        }
        let path = f.nth(4)?;
        Some(path.rsplit('/').next().unwrap_or(path).to_string())
    })
}

/// A demangled Rust name without its hash suffix (`::h0123…`).
fn short_name(name: &str) -> String {
    match name.rfind("::h") {
        Some(i) if name.len() - i == 19 && name[i + 3..].bytes().all(|b| b.is_ascii_hexdigit()) => {
            name[..i].to_string()
        }
        _ => name.to_string(),
    }
}

/// Interns function names.
#[derive(Default)]
struct Interner {
    names: Vec<String>,
    ids: HashMap<String, u32>,
}

impl Interner {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(i) = self.ids.get(name) {
            return *i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.ids.insert(name.to_string(), i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_hashes_are_dropped() {
        assert_eq!(
            short_name("engine::pattern::fill::h0123456789abcdef"),
            "engine::pattern::fill"
        );
        assert_eq!(short_name("tcp_sendmsg"), "tcp_sendmsg");
    }

    #[test]
    fn unresolved_user_frames_are_named_by_their_file() {
        let maps = "7fb95d290000-7fb95d3e6000 r-xp 00026000 fe:00 326269   /usr/lib/x86_64-linux-gnu/libc.so.6\n\
                    7ffd1000-7ffd2000 rw-p 00000000 00:00 0\n";
        assert_eq!(
            mapped_file(maps, 0x7fb95d3738d9).as_deref(),
            Some("libc.so.6")
        );
        assert_eq!(mapped_file(maps, 0x7ffd1500), None);
        assert_eq!(mapped_file(maps, 0x10), None);
    }

    #[test]
    fn roles_before_the_engine_speaks() {
        assert_eq!(first_role(0, 0, 7, "swapper"), ThreadRole::Idle);
        assert_eq!(first_role(9, 7, 7, "tcplab"), ThreadRole::Tcplab);
        assert_eq!(first_role(12, 12, 7, "ksoftirqd/1"), ThreadRole::Softirqd);
        assert_eq!(first_role(13, 13, 7, "sshd"), ThreadRole::Other);
    }
}
