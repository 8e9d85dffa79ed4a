//! The function blocks the accountant times (issue 19 part 2), as an enum
//! so a bracket costs an index, not a string.

/// One function block of the stack. Time in a block is exclusive: what
/// nested blocks took is charged to them, not to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Block {
    /// Taking a frame from the device, less the `read(2)` itself.
    DeviceReceive,
    /// The `read(2)` system call on the device.
    DeviceReceiveSyscall,
    /// Handing a frame to the device, less the `write(2)` itself.
    DeviceSend,
    /// The `write(2)` system call on the device.
    DeviceSendSyscall,
    /// Ethernet header parse, check and write (TAP only).
    Ethernet,
    /// ARP input and the ARP cache on output (TAP only).
    Arp,
    /// IPv4 input: header checks, fragments, demultiplexing by protocol.
    IpInput,
    /// IPv4 output: header, frame assembly, offload header.
    IpOutput,
    /// The routing table's lookup.
    RouteLookup,
    /// Demultiplexing a TCP segment to its connection: the 4-tuple's
    /// lookup (`--pcb-lookup hash|list`).
    PcbLookup,
    /// One's-complement sums (IPv4 header, TCP and UDP with pseudo-header);
    /// on the send path fused with the payload's copy into the frame.
    Checksum,
    /// TCP input that header prediction handled.
    TcpInputFast,
    /// TCP input on the full RFC 9293 path (and parsing, demultiplexing).
    TcpInputSlow,
    /// TCP output: deciding what to send, building and writing segments.
    TcpOutput,
    /// The delayed-ACK decision and pure ACKs built.
    AckGeneration,
    /// The TCP timers: expiry scan and their handlers.
    Timers,
    /// The out-of-order reassembly queue.
    Reassembly,
    /// Receive and send buffers: in-order data appended, acknowledged data
    /// released, payload buffers lent and returned.
    BufferManagement,
    /// The application's `send`: data copied into the send buffer.
    SocketCopyIn,
    /// The application's `recv`: data copied out of the receive buffer.
    SocketCopyOut,
    /// The caller's own work between stack calls, where it brackets it.
    Application,
    /// The CPU time inside the wait for the device (`poll(2)` in, out and
    /// its context switches), read from the thread's CPU clock around
    /// each wait: busy, and taken out of [`Block::Idle`].
    DeviceWait,
    /// The spin of a slower CPU by time dilation (`--cpu-speed`,
    /// [`super::dilation`]): what the timed blocks would have taken longer.
    Dilation,
    /// Blocked waiting for the device (poll): the wait's time less its
    /// CPU time ([`Block::DeviceWait`]).
    Idle,
}

impl Block {
    /// Every block, in table order.
    pub const ALL: [Block; 24] = [
        Block::DeviceReceive,
        Block::DeviceReceiveSyscall,
        Block::DeviceSend,
        Block::DeviceSendSyscall,
        Block::Ethernet,
        Block::Arp,
        Block::IpInput,
        Block::IpOutput,
        Block::RouteLookup,
        Block::PcbLookup,
        Block::Checksum,
        Block::TcpInputFast,
        Block::TcpInputSlow,
        Block::TcpOutput,
        Block::AckGeneration,
        Block::Timers,
        Block::Reassembly,
        Block::BufferManagement,
        Block::SocketCopyIn,
        Block::SocketCopyOut,
        Block::Application,
        Block::DeviceWait,
        Block::Dilation,
        Block::Idle,
    ];

    /// How many blocks there are (the ledger's array size).
    pub const COUNT: usize = Block::ALL.len();

    /// The block's index in [`Block::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The block's name in tables and stored results.
    pub fn name(self) -> &'static str {
        match self {
            Block::DeviceReceive => "device receive",
            Block::DeviceReceiveSyscall => "device receive: read(2)",
            Block::DeviceSend => "device send",
            Block::DeviceSendSyscall => "device send: write(2)",
            Block::Ethernet => "ethernet",
            Block::Arp => "arp",
            Block::IpInput => "ip input",
            Block::IpOutput => "ip output",
            Block::RouteLookup => "route lookup",
            Block::PcbLookup => "pcb lookup",
            Block::Checksum => "checksum",
            Block::TcpInputFast => "tcp input: fast path",
            Block::TcpInputSlow => "tcp input: slow path",
            Block::TcpOutput => "tcp output",
            Block::AckGeneration => "ack generation",
            Block::Timers => "timers",
            Block::Reassembly => "reassembly",
            Block::BufferManagement => "buffer management",
            Block::SocketCopyIn => "socket copy in",
            Block::SocketCopyOut => "socket copy out",
            Block::Application => "application",
            Block::DeviceWait => "device wait: poll(2) cpu",
            Block::Dilation => "dilation (slower cpu)",
            Block::Idle => "idle (poll)",
        }
    }

    /// Whether time in the block is CPU time (all but [`Block::Idle`]).
    pub fn is_busy(self) -> bool {
        self != Block::Idle
    }

    /// Whether the block is a system call (its time is the kernel's).
    pub fn is_syscall(self) -> bool {
        matches!(
            self,
            Block::DeviceReceiveSyscall
                | Block::DeviceSendSyscall
                | Block::DeviceWait
                | Block::Idle
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_the_table_order() {
        for (i, b) in Block::ALL.iter().enumerate() {
            assert_eq!(b.index(), i, "{b:?}");
        }
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<_> = Block::ALL.iter().map(|b| b.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Block::COUNT);
    }

    #[test]
    fn the_pcb_lookup_is_protocol_computation() {
        use super::super::dilation::Class;
        assert_eq!(Class::of(Block::PcbLookup), Some(Class::Compute));
        assert_eq!(Class::of(Block::RouteLookup), Some(Class::Compute));
    }

    #[test]
    fn only_idle_is_not_busy() {
        let idle: Vec<_> = Block::ALL.iter().filter(|b| !b.is_busy()).collect();
        assert_eq!(idle, [&Block::Idle]);
    }
}
