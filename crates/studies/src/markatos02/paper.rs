//! Markatos's numbers that the report prints, each with where the paper
//! prints it and a short excerpt of its text.

use crate::paper_quote::paper_quotes;

paper_quotes! {
    file: "markatos-2002-faster-processors-not-enough.txt";
    /// Kernel entry-exit's improvement against the processor's, low and high (§3.3), %.
    SYSCALL_LOW = (12.0, "12", "%", "§3.3",
        "kernel entry/exit performance has relatively improved only 12%-28% compared to the processor's speed");
    SYSCALL_HIGH = (28.0, "28", "%", "§3.3",
        "kernel entry/exit performance has relatively improved only 12%-28% compared to the processor's speed");
    /// The old and the new processor's clocks (§3.3), MHz, and the entry-exit's cycles.
    OLD_MHZ = (40.0, "40", "MHz", "§3.3",
        "the kernel entry-exit overhead in a 40 MHz SPARC 10 was 150 cycles");
    OLD_CYCLES = (150.0, "150", "cycles", "§3.3",
        "the kernel entry-exit overhead in a 40 MHz SPARC 10 was 150 cycles");
    NEW_MHZ = (600.0, "600", "MHz", "§3.3",
        "while in a recent 600 MHz Sun-Blade-1000 it is 780 cycles.");
    NEW_CYCLES = (780.0, "780", "cycles", "§3.3",
        "while in a recent 600 MHz Sun-Blade-1000 it is 780 cycles.");
    /// The loopback message (§3.4), KB.
    MESSAGE_KB = (64.0, "64", "KB", "§3.4",
        "data are given for transfer to the socket layer in chunks 64 Kbytes large.");
    /// Loopback throughput's growth, Alphas and Pentiums, against the processors' (§3.4), ×.
    LOOPBACK_LOW = (5.0, "5", "×", "§3.4",
        "TCP/IP throughput has improved only by a factor of 5 for Alphas, and by a factor of 12 for Pentiums.");
    LOOPBACK_HIGH = (12.0, "12", "×", "§3.4",
        "TCP/IP throughput has improved only by a factor of 5 for Alphas, and by a factor of 12 for Pentiums.");
    PROCESSORS = (35.0, "35", "×", "§3.4",
        "although processor speed has improved by more than a factor of 35 in both cases");
    /// TCP/IP's scaling against the processors' in all networks (§3.5–3.7), %.
    NETWORK_LOW = (60.0, "60", "%", "§3.5–3.7",
        "TCP/IP execution in all kinds of networks scales between 60% and 80% as fast as processors do.");
    NETWORK_HIGH = (80.0, "80", "%", "§3.5–3.7",
        "TCP/IP execution in all kinds of networks scales between 60% and 80% as fast as processors do.");
    /// Mileage, MB per SPECmark-second (§4.1).
    PENTIUM_EARLY = (5.0, "5", "MB/SPEC-s", "§4.1",
        "although early PENTIUM processors had a mileage of 5, recent PENTIUM processors have a mileage of 2.5.");
    PENTIUM_RECENT = (2.5, "2.5", "MB/SPEC-s", "§4.1",
        "although early PENTIUM processors had a mileage of 5, recent PENTIUM processors have a mileage of 2.5.");
    SPARC_MP_EARLY = (13.0, "13", "MB/SPEC-s", "§4.1",
        "although early SPARC multiprocessors had a mileage of 13 (Mbytes/sec/SPECmark), recent SPARC multiprocessors have a mileage of 7.");
    SPARC_MP_RECENT = (7.0, "7", "MB/SPEC-s", "§4.1",
        "although early SPARC multiprocessors had a mileage of 13 (Mbytes/sec/SPECmark), recent SPARC multiprocessors have a mileage of 7.");
    /// lat_http's scaling against the processors' (§3.9), %.
    HTTP_SCALING = (30.0, "30", "%", "§3.9",
        "Figure 8 suggests that HTTP performance scales about 30% as fast as processor speeds.");
    /// Const for SPARC uniprocessors (§4.2, equation 2).
    SPARC_CONST = (0.105, "0.105", "", "§4.2",
        "\\frac{1}{\\frac{1}{mem_band} + \\frac{0.105}{SPEC_rating}} \\quad (2)");
}
