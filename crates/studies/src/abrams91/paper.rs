//! Abrams & Chen's numbers that the report prints, each with where the
//! paper prints it and a short excerpt of its text.

use crate::paper_quote::paper_quotes;

paper_quotes! {
    file: "abrams-chen-1991-what-limits-tcp-throughput.txt";
    /// The DECstation 5000 pair's flat TCP throughput (Fig. 1), Mbit/s.
    DEC_MBIT = (8.4, "8.4", "Mbit/s", "Fig. 1",
        "The DECstation throughput flattens out at 8.4 Mbps with a 1024 byte write size");
    /// The write size from which that pair was flat (Fig. 1), bytes.
    DEC_FLAT_FROM = (1024.0, "1024", "B", "Fig. 1",
        "The DECstation throughput flattens out at 8.4 Mbps with a 1024 byte write size");
    /// The Ethernet's rate (Fig. 1), Mbit/s.
    ETHERNET_MBIT = (10.0, "10", "Mbit/s", "Fig. 1",
        "its performance appears to be limited by the 10Mbps physical media data rate");
    /// The highest loss rate but PS/2 → D310's (Table 2, §3.1), %.
    LOSS_ELSEWHERE = (4.0, "4", "%", "Table 2",
        "In contrast the loss rates on other hosts never exceed 4%.");
    /// PS/2 → D310's UDP loss at 1024-byte writes (Table 2), %.
    LOSS_1024 = (20.7, "20.70", "%", "Table 2", "1024 20.70% 0.00% 0.00% 1.50% 0.00% 0.56%");
    /// PS/2 → D310's UDP loss at 1460-byte writes (Table 2), %.
    LOSS_1460 = (57.0, "57.00", "%", "Table 2", "1460 57.00% 0.10% 0.00% 0.17% 0.00% 0.07%");
    /// The write size of the smallest-write load result (Tables 3–4), bytes.
    LOAD_WRITE = (10.0, "10", "B", "Tables 3–4",
        "shows a doubling and quadrupling of delay with write sizes of 10 bytes with loads of one and three.");
    /// Delay at load one and three, 10-byte writes, on the MacII (Table 3).
    MACII_LOAD_ONE = (2.0, "doubling", "×", "Table 3",
        "the 16 MHz based 68020 MacII case shows a doubling and quadrupling of delay with write sizes of 10 bytes");
    MACII_LOAD_THREE = (4.0, "quadrupling", "×", "Table 3",
        "the 16 MHz based 68020 MacII case shows a doubling and quadrupling of delay with write sizes of 10 bytes");
    /// The write size from which load's effect was negligible (Table 3), bytes.
    LOAD_NEGLIGIBLE_FROM = (1024.0, "1024", "B", "Table 3",
        "For 1024 bytes and above, the delay increases by a negligible amount.");
    /// The file whose delay more than doubled at load three (Table 5), bytes.
    LOAD_FILE = (512000.0, "512,000", "B", "Table 5",
        "for the 512,000 byte file, the delay more than doubles with a load of three.");
    /// The TCP write size of the interface comparison (Fig. 4), bytes.
    API_TCP_WRITE = (100.0, "100", "B", "Fig. 4",
        "for TCP and a write size of 100 bytes, the socket delay is 24% lower than the TLI delay");
    /// How much lower TCP's socket delay was than TLI's (Fig. 4), %.
    API_TCP_LOWER = (24.0, "24", "%", "Fig. 4",
        "for TCP and a write size of 100 bytes, the socket delay is 24% lower than the TLI delay");
    /// The UDP write size of the interface comparison (Fig. 4), bytes.
    API_UDP_WRITE = (512.0, "512", "B", "Fig. 4",
        "for UDP and a write size of 512 bytes, the socket delay is 21% greater than TLI.");
    /// How much higher UDP's socket delay was than TLI's (Fig. 4), %.
    API_UDP_HIGHER = (21.0, "21", "%", "Fig. 4",
        "for UDP and a write size of 512 bytes, the socket delay is 21% greater than TLI.");
    /// The D310 receiver's time per data segment (§3.5), ms.
    D310_DATA_MS = (3.469, "3.469", "ms", "Table 6 and §3.5",
        "The receiver requires 3.469 milliseconds to process one data segment");
    /// The D310 receiver's time per ACK it sends (§3.5), ms.
    D310_ACK_MS = (0.477, "0.477", "ms", "Table 6 and §3.5",
        "and 0.477 milliseconds to generate and copy to the network adapter an acknowledgment segment.");
    /// The D310 receiver's time per packet, an ACK for every two (§3.5), ms.
    D310_PACKET_MS = (3.71, "3.71", "ms", "§3.5",
        "the time required to process a 1024 byte packet is at least 3.71 milliseconds");
    /// The D310's bound μ (§3.5), Mbit/s.
    D310_BOUND_MBIT = (2.209, "2.209", "Mbit/s", "§3.5",
        "which corresponds to a maximum throughput of 2.209 Mbps.");
    /// Table 6, sender, send data: TCP's µs.
    T6_TCP_SEND = (523.0, "523", "µs", "Table 6", "TCP 523±0.61 297±0.67 493±5.20 153±0.39");
    /// Table 6, sender, processing an ACK: TCP's µs.
    T6_TCP_ACK = (297.0, "297", "µs", "Table 6", "TCP 523±0.61 297±0.67 493±5.20 153±0.39");
    /// Table 6, sender, send data: IP's µs.
    T6_IP_SEND = (124.0, "124", "µs", "Table 6", "IP 124±0.53 112±0.46 106±0.32 118±1.25");
    /// Table 6, sender, processing an ACK: IP's µs.
    T6_IP_ACK = (112.0, "112", "µs", "Table 6", "IP 124±0.53 112±0.46 106±0.32 118±1.25");
    /// Table 6, sender, send data: the total µs.
    T6_SEND_TOTAL = (647.0, "647", "µs", "Table 6", "Total 647 409 599 271");
    /// Table 6, sender, processing an ACK: the total µs.
    T6_ACK_TOTAL = (409.0, "409", "µs", "Table 6", "Total 647 409 599 271");
    /// The sender's µs per 1 KB segment, an ACK for every two (§3.5).
    SENDER_US = (851.5, "851.5", "µs", "§3.5",
        "Therefore it takes 851.5 microseconds ( $647 + 0.5 \\times 409$ ) at the sender");
    /// The 80386 sender's idle share of a 40 KB transfer (§3.3), %.
    IDLE_PCT = (45.3, "45.3", "%", "§3.3", "This yields a remarkably high 45.3% idle time");
    /// Its idle time (§3.3), ms, and the 95% CI's half-width.
    IDLE_MS = (156.491, "156.491", "ms", "§3.3",
        "the sending host is idle for $156.491 \\pm 8.65$ milliseconds");
    IDLE_CI_MS = (8.65, "8.65", "ms", "§3.3",
        "the sending host is idle for $156.491 \\pm 8.65$ milliseconds");
    /// The transfer's delay (§3.3), ms, and the 95% CI's half-width.
    DELAY_MS = (345.452, "345.452", "ms", "§3.3",
        "the sample mean of delay is $345.452 \\pm 16.00$ milliseconds");
    DELAY_CI_MS = (16.0, "16.00", "ms", "§3.3",
        "the sample mean of delay is $345.452 \\pm 16.00$ milliseconds");
    /// The file of the timeline and of the load tables (§3.3), KB.
    FILE_KB = (40.0, "40", "KB", "§3.3",
        "thirty observations of the 40K byte file transfer application with a 1K write size");
    /// The timeline's write size (§3.3), KB.
    WRITE_KB = (1.0, "1", "KB", "§3.3",
        "thirty observations of the 40K byte file transfer application with a 1K write size");
    /// The timeline's receive buffer (§3.3), KB.
    RECEIVE_BUFFER_KB = (2.0, "2", "KB", "§3.3",
        "as well as the TCP receive buffer size are 2K.");
}
