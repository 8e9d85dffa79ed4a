//! Huang & Chen's Tables 1 and 2 as data, copied from the paper: seconds
//! of a 386/33 sending 20 MB, per function block and MSS (Table 1), and
//! ip_output's seconds against the destination's place in a linearly
//! searched routing table at MSS 1024 (Table 2).

use analysis::layers::Block;

/// Table 1's maximum segment sizes, in its column order.
pub(super) const TABLE1_MSS: [u32; 5] = [256, 512, 768, 1024, 1280];

/// Table 1's "Packet Number" row: data packets in 20 MB at each MSS.
pub(super) const TABLE1_PACKETS: [f64; 5] = [80000.0, 40000.0, 26666.0, 20000.0, 16000.0];

/// Table 1's rows (A)–(N): the row's letter and name as printed, its
/// block, and its seconds at each MSS. Row (C) is printed `ip_input`; the
/// paper's text and Table 2 call it IP_output's time, and so it is filed.
pub(super) const TABLE1: [(&str, Block, [f64; 5]); 7] = [
    (
        "(A) write_socket",
        Block::WriteSocket,
        [3.41, 2.53, 2.20, 2.08, 1.98],
    ),
    (
        "(B) tcp_output",
        Block::TcpOutput,
        [21.47, 16.26, 14.51, 13.68, 13.07],
    ),
    (
        "(C) ip_output",
        Block::IpOutput,
        [6.12, 3.06, 2.05, 1.52, 1.29],
    ),
    (
        "(D) driver_out",
        Block::DriverOut,
        [26.25, 22.64, 21.30, 20.72, 20.39],
    ),
    (
        "(L) driver_input (ACK)",
        Block::DriverInput,
        [6.33, 3.13, 2.09, 1.55, 1.21],
    ),
    (
        "(M) ip_input (ACK)",
        Block::IpInput,
        [2.64, 1.32, 0.88, 0.66, 0.47],
    ),
    (
        "(N) tcp_input (ACK)",
        Block::TcpInput,
        [13.69, 6.97, 4.87, 3.44, 2.62],
    ),
];

/// Table 1's "Tx. Time (Sender)" row, seconds.
pub(super) const TABLE1_SENDER_TOTAL: [f64; 5] = [79.20, 55.37, 47.40, 43.39, 41.03];

/// Table 2: the destination's place in the routing table, and
/// ip_output's seconds for 20 MB at MSS 1024 (20,000 packets).
pub(super) const TABLE2: [(u32, f64); 4] = [(1, 1.52), (4, 1.99), (7, 2.47), (10, 2.92)];

/// Table 2's packets: 20 MB at MSS 1024.
pub(super) const TABLE2_PACKETS: f64 = 20000.0;

/// Table 1's column for `mss`, if the paper measured it.
pub(super) fn table1_column(mss: u32) -> Option<usize> {
    TABLE1_MSS.iter().position(|m| *m == mss)
}

/// The paper's µs per data packet of a row's seconds at column `i`.
pub(super) fn us_per_packet(seconds: f64, i: usize) -> f64 {
    seconds / TABLE1_PACKETS[i] * 1e6
}
