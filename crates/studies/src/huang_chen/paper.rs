//! Huang & Chen's numbers as data, copied from the paper: Tables 1 and 2
//! (seconds of a 386/33 sending 20 MB, per function block and MSS; and
//! ip_output's seconds against the destination's place in a linearly
//! searched routing table at MSS 1024), and the shares its text states,
//! each with where the paper prints it and a short excerpt of its text.

use crate::paper_quote::paper_quotes;
// Table 1 lives with the host model that is built from it.
pub(super) use analysis::host_model::{
    table1_column, us_per_packet, TABLE1, TABLE1_MSS, TABLE1_SENDER_TOTAL,
};

/// Table 2: the destination's place in the routing table, and
/// ip_output's seconds for 20 MB at MSS 1024 (20,000 packets).
pub(super) const TABLE2: [(u32, f64); 4] = [(1, 1.52), (4, 1.99), (7, 2.47), (10, 2.92)];

/// Table 2's packets: 20 MB at MSS 1024.
pub(super) const TABLE2_PACKETS: f64 = 20000.0;

paper_quotes! {
    file: "huang-chen-tcp-ip-device-driver-costs.txt";
    /// Every measurement's transfer (§2, §3), MB.
    TRANSFER_MB = (20.0, "20", "MB", "§2",
        "Each transaction contains 20 Mbytes of data in all measurements");
    /// The ACKs' share of all the processing (§3, Fig. 5), %.
    ACK_SHARE = (10.0, "10", "%", "§3, Fig. 5",
        "acknowledgement process consumes roughly 10% of the overall overhead");
    /// What an ACK for every two packets would save (§3, Fig. 5), %.
    ACK_SAVING = (5.0, "5", "%", "§3, Fig. 5",
        "This will induce a 5% save in processing overhead.");
    /// The checksum's share of all the time (§3, Fig. 4), %.
    CHECKSUM_SHARE = (25.0, "25", "%", "§3, Fig. 4",
        "Notice that the TCP checksum computation takes up almost 25% of the overall time.");
    /// The checksum's share of TCP/IP's own processing (§3, Fig. 4).
    CHECKSUM_TCPIP_SHARE = (0.5, "half", "", "§3, Fig. 4",
        "the TCP checksum computation consumes half of the overall processing overhead of TCP/IP.");
}

/// Excerpts of the paper's tables, for the test against its text: Table
/// 1's rows as printed (row (C) is printed `ip_input`) and Table 2.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn table_rows() -> [(&'static str, &'static str); 11] {
    [
        ("Table 1 MSS", "Max Segment Size 256 512 768 1024 1280"),
        (
            "Table 1 packets",
            "Packet Number 80000 40000 26666 20000 16000",
        ),
        ("Table 1 (A)", "(A) write_socket 3.41 2.53 2.20 2.08 1.98"),
        (
            "Table 1 (B)",
            "(B) tcp_output 21.47 16.26 14.51 13.68 13.07",
        ),
        ("Table 1 (C)", "(C) ip_input 6.12 3.06 2.05 1.52 1.29"),
        (
            "Table 1 (D)",
            "(D) driver_out 26.25 22.64 21.30 20.72 20.39",
        ),
        (
            "Table 1 (L)",
            "(L) driver_input(Ack) 6.33 3.13 2.09 1.55 1.21",
        ),
        ("Table 1 (M)", "(M) ip_input(Ack) 2.64 1.32 0.88 0.66 0.47"),
        (
            "Table 1 (N)",
            "(N) tcp_input(ack) 13.69 6.97 4.87 3.44 2.62",
        ),
        (
            "Table 1 sender",
            "Tx. Time(Sender) 79.20 55.37 47.40 43.39 41.03",
        ),
        (
            "Table 2",
            "IP_output CPU time (C) 1 1.52 4 1.99 7 2.47 10 2.92 Table 2.",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use analysis::host_model::TABLE1_PACKETS;

    /// The excerpt of `row`.
    fn row(name: &str) -> &'static str {
        table_rows().iter().find(|r| r.0 == name).unwrap().1
    }

    /// `values` as the paper prints them, after `label`, in order.
    fn printed(label: &str, values: impl IntoIterator<Item = String>) -> String {
        std::iter::once(label.to_string())
            .chain(values)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The tables' data (Table 1 in `analysis::host_model`, Table 2 here)
    /// is what the paper's rows print, number for number.
    #[test]
    fn the_tables_are_the_papers_rows() {
        let two = |v: &[f64]| v.iter().map(|x| format!("{x:.2}")).collect::<Vec<_>>();
        let mss = TABLE1_MSS.iter().map(u32::to_string);
        assert!(row("Table 1 MSS").ends_with(&printed("Size", mss)));
        let packets = TABLE1_PACKETS.iter().map(|p| format!("{p:.0}"));
        assert_eq!(row("Table 1 packets"), printed("Packet Number", packets));
        for (name, _, seconds) in TABLE1 {
            let letter = &name[..3];
            let excerpt = row(&format!("Table 1 {letter}"));
            let numbers = excerpt.split_whitespace().rev().take(5).collect::<Vec<_>>();
            let numbers: Vec<_> = numbers.into_iter().rev().collect();
            assert_eq!(numbers, two(&seconds), "{name}");
        }
        let total = row("Table 1 sender");
        assert!(
            total.ends_with(&two(&TABLE1_SENDER_TOTAL).join(" ")),
            "{total}"
        );
        let table2 = TABLE2.iter().map(|(n, s)| format!("{n} {s:.2}"));
        assert!(row("Table 2").contains(&printed("(C)", table2)));
        assert_eq!(TABLE2_PACKETS, TABLE1_PACKETS[table1_column(1024).unwrap()]);
    }
}
