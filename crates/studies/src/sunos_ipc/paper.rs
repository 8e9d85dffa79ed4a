//! The SunOS IPC paper's numbers that the report prints, each with where
//! the paper prints it and a short excerpt of its text.

use crate::paper_quote::paper_quotes;

paper_quotes! {
    file: "sunos-ipc-tcp-ip-probes.txt";
    /// The best throughput over the Ethernet (§4.1), Mbit/s.
    ETHERNET_BEST = (7.5, "7.5", "Mbit/s", "§4.1",
        "throughput increases as socket buffers are increased, with rates up to 7.5 Mbps achievable");
    /// The largest socket buffers (§4.1), KB.
    LARGEST_BUFFERS = (51.0, "51", "KB", "§4.1",
        "when the buffers are set to their maximum size (approximately 51 kilobytes)");
    /// The default socket buffers (§4.1), KB.
    DEFAULT_BUFFERS = (4.0, "4", "KB", "§4.1",
        "increase the default socket buffer size (which is 4 kilobytes)");
    /// The buffers that gave the largest gain (§4.1), KB.
    QUADRUPLED_BUFFERS = (16.0, "16", "KB", "§4.1",
        "The largest increase in throughput was achieved by quadrupling the socket buffers (to 16 kilobytes)");
    /// ACKs with 4 KB buffers against the largest (§4.1): roughly double.
    ACKS_4K = (2.0, "double", "×", "§4.1",
        "The number of acknowledgments generated with 4K buffers was measured using the probes, and was found to be roughly double the number with maximum size buffers.");
    /// The best local IPC throughput (§4.1, §5), Mbit/s.
    LOCAL_IPC = (9.0, "9", "Mbit/s", "§5",
        "The IPC performance measured was close to 9 Mbps which is about 43% of the memory bandwidth.");
    /// Local IPC's share of the bound the paper calls memory bandwidth (§5), %.
    LOCAL_SHARE = (43.0, "43", "%", "§5",
        "The IPC performance measured was close to 9 Mbps which is about 43% of the memory bandwidth.");
    /// The memory-to-memory copy rate (§5), Mbit/s.
    COPY_RATE = (63.0, "63", "Mbit/s", "§5",
        "meaning that memory-to-memory copy is about 63 Mbps.");
    /// Local IPC's bound: two copies and two checksums (§5), Mbit/s.
    LOCAL_BOUND = (21.0, "21", "Mbit/s", "§5",
        "the maximum theoretical limit of local IPC is 63/3 = 21 Mbps.");
    /// The bound's divisor: two copies and two checksums, each checksum
    /// half a copy (§5).
    BOUND_DIVISOR = (3.0, "3", "", "§5",
        "the maximum theoretical limit of local IPC is 63/3 = 21 Mbps.");
    /// A checksum's cycles against a copy's (§5).
    CHECKSUM_PER_COPY = (0.5, "half", "", "§5",
        "Assuming that the checksum takes about half the cycles as memory copy");
    /// The delayed-ACK timer's period (§4.3), ms.
    DELACK_TIMER = (200.0, "200", "ms", "§4.3",
        "Every 200 mS a timer process runs checking these flags for all connections.");
    /// Experiment 3's local transfer (§4.3), MB.
    EXPERIMENT3_MB = (1.0, "1", "MB", "§4.3",
        "The data size sent was set to 1 Mbyte, and the probes were used to monitor the receive socket queue");
    /// Table 1, stop-and-wait column, µs: the send socket with its copy.
    T1_SEND_SOCKET = (280.0, "280", "µs", "Table 1", "Send socket (with copy) 280");
    /// Table 1: the sending protocol.
    T1_SEND_PROTOCOL = (443.0, "443", "µs", "Table 1", "Protocol - sending side 443 370");
    /// Table 1: the interface queue.
    T1_INTERFACE_QUEUE = (40.0, "40", "µs", "Table 1", "Interface queue 40");
    /// Table 1: the IP queue.
    T1_IP_QUEUE = (113.0, "113", "µs", "Table 1", "IP queue 113 124");
    /// Table 1: the receiving protocol.
    T1_RECEIVE_PROTOCOL = (253.0, "253", "µs", "Table 1", "Protocol - receiving side 253 260");
    /// Table 1: the receive socket queue with its copy.
    T1_RECEIVE_SOCKET = (412.0, "412", "µs", "Table 1", "Receive socket queue (with copy) 412");
}
