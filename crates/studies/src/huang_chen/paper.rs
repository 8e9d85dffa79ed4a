//! Huang & Chen's Tables 1 and 2 as data, copied from the paper: seconds
//! of a 386/33 sending 20 MB, per function block and MSS (Table 1), and
//! ip_output's seconds against the destination's place in a linearly
//! searched routing table at MSS 1024 (Table 2).

// Table 1 lives with the host model that is built from it.
pub(super) use analysis::host_model::{table1_column, us_per_packet, TABLE1, TABLE1_SENDER_TOTAL};

/// Table 2: the destination's place in the routing table, and
/// ip_output's seconds for 20 MB at MSS 1024 (20,000 packets).
pub(super) const TABLE2: [(u32, f64); 4] = [(1, 1.52), (4, 1.99), (7, 2.47), (10, 2.92)];

/// Table 2's packets: 20 MB at MSS 1024.
pub(super) const TABLE2_PACKETS: f64 = 20000.0;
