//! Guerrero & Frieder's numbers that the report prints, each with where
//! the paper prints it and a short excerpt of its text.

use crate::paper_quote::paper_quotes;

paper_quotes! {
    file: "guerrero-frieder-1992-tuning-commercial-tcp.txt";
    /// How often the RTT is computed, at least (§4), ms.
    RTT_EVERY_MS = (16.0, "16", "ms", "§4",
        "Our requirements mandate an RTT computation of at least every 16ms and must provide an accuracy within 30ms.");
    /// The RTT's accuracy (§4), ms.
    RTT_ACCURACY_MS = (30.0, "30", "ms", "§4",
        "Our requirements mandate an RTT computation of at least every 16ms and must provide an accuracy within 30ms.");
    /// Table 1's transfer, MB.
    TRANSFER_MB = (2.5, "2.5", "MB", "Table 1",
        "2.5 MByte file transferred in binary mode. Measurements are KBytes/Second.");
    /// Table 1's slowest and fastest, KB/s.
    SLOWEST = (5.0, "5", "KB/s", "Table 1", "ol/ccur r2-0 5 20 5 n/a 5 5 5 5");
    FASTEST = (250.0, "250", "KB/s", "Table 1", "sun 68 5 65 250 45 96 250 84");
    /// The untuned release against itself, KB/s (Table 1).
    UNTUNED_SELF = (20.0, "20", "KB/s", "Table 1", "ol/ccur r2-0 5 20 5 n/a 5 5 5 5");
    /// The tuned release against every peer but the untuned one, KB/s (Table 1).
    TUNED_LOW = (62.0, "62", "KB/s", "Table 1", "ol/ccur r2-1 62 5 65 n/a 68 68 70 70");
    TUNED_HIGH = (70.0, "70", "KB/s", "Table 1", "ol/ccur r2-1 62 5 65 n/a 68 68 70 70");
    /// The segments a UNIX receiver left the sender, bytes (§2–3).
    SWS_LOW = (32.0, "32", "B", "§3",
        "TCP eventually transmits only small datagrams (32-128 data bytes)");
    SWS_HIGH = (128.0, "128", "B", "§3",
        "TCP eventually transmits only small datagrams (32-128 data bytes)");
}
