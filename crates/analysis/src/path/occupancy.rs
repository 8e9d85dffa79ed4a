//! Queue lengths in packets from each packet's time in a queue: a queue no
//! probe reports the length of (the IP input backlog, a device without a
//! qdisc) still has one, the number of packets that entered it and had not
//! yet left, seen by each packet as it enters.

/// The queue's length, in packets, as each packet entered it (itself
/// included), from each packet's (entry, exit) times in ns: one sample
/// per packet, at its entry time, in time order.
pub(super) fn lengths_at_entry(intervals: &[(u64, u64)]) -> Vec<(u64, f64)> {
    let mut entries: Vec<u64> = intervals.iter().map(|&(a, _)| a).collect();
    let mut exits: Vec<u64> = intervals.iter().map(|&(_, b)| b).collect();
    entries.sort_unstable();
    exits.sort_unstable();
    // Packets that left at or before an entry are gone when it enters.
    let mut left = 0;
    entries
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            while left < exits.len() && exits[left] <= t {
                left += 1;
            }
            (t, (i + 1 - left.min(i + 1)) as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_that_left_before_the_next_came_leaves_an_empty_queue() {
        // One after the other: each finds only itself.
        let apart = lengths_at_entry(&[(0, 10), (20, 30), (40, 50)]);
        assert_eq!(apart, vec![(0, 1.0), (20, 1.0), (40, 1.0)]);
        // A burst: each finds those before it still waiting.
        let burst = lengths_at_entry(&[(0, 100), (1, 101), (2, 102), (200, 210)]);
        assert_eq!(burst, vec![(0, 1.0), (1, 2.0), (2, 3.0), (200, 1.0)]);
    }

    #[test]
    fn no_packets_no_samples() {
        assert!(lengths_at_entry(&[]).is_empty());
    }
}
