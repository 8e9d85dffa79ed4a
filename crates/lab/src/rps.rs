//! Receive packet steering (RPS) on an endpoint's device: which CPU runs
//! the receive processing (backlog, IP and TCP input) of the frames that
//! arrive there. On veth a frame is otherwise processed in softirq on the
//! CPU that *sent* it, so the receiver's protocol work is done — and its
//! time charged — on the sender's CPU. Steering each end's receive queue to
//! the CPU its endpoint is pinned to puts each side's protocol work on its
//! own CPU.
//!
//! sysfs shows the network devices of the namespace it was mounted in, so
//! the mask is read and written through `ip netns exec`, which mounts a
//! fresh sysfs for the namespace. Loopback has one device shared by both
//! sides, so it cannot steer the two directions apart.

use crate::cmd;
use crate::error::LabError;

/// The hexadecimal CPU mask of the single CPU `cpu` (as `rps_cpus` takes it).
pub fn mask_of(cpu: u32) -> String {
    // Groups of 32 CPUs, comma-separated, most significant first.
    let word = cpu / 32;
    let mut groups: Vec<String> = (0..=word).map(|_| "00000000".to_string()).collect();
    groups[0] = format!("{:08x}", 1u32 << (cpu % 32));
    groups.join(",")
}

/// The CPUs a `rps_cpus` mask names (empty: no steering).
pub fn cpus_of(mask: &str) -> Vec<u32> {
    let mut cpus = Vec::new();
    for (i, group) in mask.trim().rsplit(',').enumerate() {
        let Ok(bits) = u32::from_str_radix(group.trim(), 16) else {
            continue;
        };
        for b in 0..32 {
            if bits & (1 << b) != 0 {
                cpus.push(i as u32 * 32 + b);
            }
        }
    }
    cpus
}

fn path(dev: &str) -> String {
    format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus")
}

/// The `rps_cpus` mask of `dev`'s first receive queue in namespace `ns`.
pub fn read(ns: &str, dev: &str) -> Result<String, LabError> {
    Ok(cmd::in_ns(ns, "cat", &[&path(dev)])?.trim().to_string())
}

/// Sets the `rps_cpus` mask of `dev`'s first receive queue in namespace `ns`.
pub fn write(ns: &str, dev: &str, mask: &str) -> Result<(), LabError> {
    if !mask.chars().all(|c| c.is_ascii_hexdigit() || c == ',') {
        return Err(LabError::Spec(format!("not a CPU mask: {mask:?}")));
    }
    let script = format!("echo {mask} > {}", path(dev));
    cmd::in_ns(ns, "sh", &["-c", &script]).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_name_one_cpu_and_read_back() {
        assert_eq!(mask_of(0), "00000001");
        assert_eq!(mask_of(1), "00000002");
        assert_eq!(mask_of(33), "00000002,00000000");
        for cpu in [0, 1, 5, 31, 32, 33, 70] {
            assert_eq!(cpus_of(&mask_of(cpu)), vec![cpu]);
        }
        assert!(cpus_of("0").is_empty());
        assert!(cpus_of("00000000").is_empty());
        assert_eq!(cpus_of("3"), vec![0, 1]);
    }
}
