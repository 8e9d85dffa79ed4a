//! A slower CPU by exact time dilation (issue 29): after each timed
//! block, the thread spins for the block's exclusive time × (1/F − 1),
//! where F is the speed of the block's class, so the block takes as long
//! as it would on a CPU F times as fast as this one. The spin is its own
//! block ([`super::Block::Dilation`]), so a report shows time with and
//! without it, and nested blocks are not charged for it.
//!
//! What is owed is carried from block to block in counter units (a spin
//! ends a little past what was owed; the overshoot is credit for the next
//! one), so over a run the spins add to what the blocks owe within one
//! spin's last counter read. The classes scale apart: protocol
//! computation (with the application's bracketed work), data touching
//! (copies and checksums, bound by memory bandwidth, which Markatos keeps
//! fixed while the CPU speeds up) and the device's system calls.
//!
//! Busy time in no block (the loop between top-level brackets, the
//! brackets' own cost) is slowed as computation. Not dilated: what the
//! kernel does for the stack's frames after the system call returns (a
//! TUN write's receive path in the peer's softirq runs at this CPU's
//! speed). The spin comes at a block's exit, so a frame written inside
//! a block (a batch that fills mid-round, `tx_batch` ≤ 1) leaves before
//! that block's slower time has passed: totals and throughput are
//! dilated exactly, a single frame's departure time is not.

use super::block::Block;

/// The classes of work a slower CPU may scale apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Protocol computation, and the application's own bracketed work.
    Compute,
    /// Copies and checksums.
    Data,
    /// The device's system calls and the CPU of the wait for it.
    Device,
}

impl Class {
    /// Every class, in table order.
    pub const ALL: [Class; 3] = [Class::Compute, Class::Data, Class::Device];

    /// The class's name in tables and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Class::Compute => "compute",
            Class::Data => "data",
            Class::Device => "device",
        }
    }

    /// The class of `block`'s time (`None`: idle, and the spin itself).
    pub fn of(block: Block) -> Option<Class> {
        Some(match block {
            Block::DeviceReceive
            | Block::DeviceReceiveSyscall
            | Block::DeviceSend
            | Block::DeviceSendSyscall
            | Block::DeviceWait => Class::Device,
            Block::Checksum | Block::SocketCopyIn | Block::SocketCopyOut => Class::Data,
            Block::Idle | Block::Dilation => return None,
            _ => Class::Compute,
        })
    }
}

/// A slower CPU's speed per class, each a fraction of this CPU's
/// (0.0001 to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speeds {
    /// Protocol computation.
    pub compute: f64,
    /// Copies and checksums.
    pub data: f64,
    /// The device's system calls.
    pub device: f64,
}

impl Speeds {
    /// One speed for every class.
    pub fn all(f: f64) -> Speeds {
        Speeds {
            compute: f,
            data: f,
            device: f,
        }
    }

    /// The speed of `class`.
    pub fn of(self, class: Class) -> f64 {
        match class {
            Class::Compute => self.compute,
            Class::Data => self.data,
            Class::Device => self.device,
        }
    }

    /// Whether every class runs at this CPU's speed.
    pub fn is_full(self) -> bool {
        Class::ALL.iter().all(|&c| self.of(c) >= 1.0)
    }
}

/// What a thread owes its slower CPU, and what it has paid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dilation {
    /// 1/F − 1 per class: counts owed per count of the class's work.
    extra: [f64; 3],
    /// Counts owed and not yet spun (negative: the last spin's overshoot,
    /// credit for the next).
    owed: f64,
    /// Counts owed per class over the run: what the slower CPU adds to
    /// each class's time.
    pub(crate) added: [f64; 3],
    /// Counts owed over the run for busy time in no block: the stack's
    /// loop between top-level brackets and the brackets' own cost, at the
    /// compute class's factor.
    pub(crate) outside_added: f64,
    /// Counts spun over the run, with the bookkeeping that paid as well.
    pub(crate) spun: u64,
    /// Spins over the run.
    pub(crate) spins: u64,
}

impl Dilation {
    /// Nothing owed yet, at `speeds` (each clamped to 0.0001..1).
    pub fn new(speeds: Speeds) -> Dilation {
        let extra = Class::ALL.map(|c| 1.0 / speeds.of(c).clamp(1e-4, 1.0) - 1.0);
        Dilation {
            extra,
            owed: 0.0,
            added: [0.0; 3],
            outside_added: 0.0,
            spun: 0,
            spins: 0,
        }
    }

    /// Adds what `counts` of `block`'s exclusive time owe (nothing for a
    /// block without a class). A negative share (a bracket shorter than
    /// the mean bracket cost subtracted from it) owes less, as it counts
    /// less in the class's time: the class's added time stays its time ×
    /// (1/F − 1) exactly.
    pub fn owe(&mut self, block: Block, counts: i64) {
        let Some(class) = Class::of(block) else {
            return;
        };
        let add = counts as f64 * self.extra[class as usize];
        self.owed += add;
        self.added[class as usize] += add;
    }

    /// Adds what `counts` of busy time in no block owe (the stack's own
    /// code between brackets, the brackets' cost), slowed as computation.
    pub fn owe_outside(&mut self, counts: i64) {
        let add = counts as f64 * self.extra[Class::Compute as usize];
        self.owed += add;
        self.outside_added += add;
    }

    /// Whether a spin is due: at least one count is owed.
    pub fn is_due(&self) -> bool {
        self.owed >= 1.0
    }

    /// Spins on `now` (the counter) until what is owed has passed; returns
    /// the counter at the spin's start and end. The overshoot is carried.
    pub fn spin(&mut self, mut now: impl FnMut() -> u64) -> (u64, u64) {
        let start = now();
        self.spins += 1;
        (start, self.spin_from(start, now))
    }

    /// Spins until what is owed has passed since `from` (a counter value
    /// already read: the bookkeeping since then pays too); returns the
    /// counter at the end, read at least once. The overshoot is carried.
    pub fn spin_from(&mut self, from: u64, mut now: impl FnMut() -> u64) -> u64 {
        let mut end = now();
        while ((end.saturating_sub(from)) as f64) < self.owed {
            std::hint::spin_loop();
            end = now();
        }
        self.pay(end.saturating_sub(from));
        end
    }

    /// Counts spent for the slower CPU outside a spin (the bookkeeping
    /// after one) pay what is owed too.
    pub fn pay(&mut self, counts: u64) {
        self.owed -= counts as f64;
        self.spun += counts;
    }

    /// Counts owed and not yet spun (negative: credit).
    pub fn owed(&self) -> f64 {
        self.owed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter that advances `step` counts per read.
    fn clock(step: u64) -> impl FnMut() -> u64 {
        let mut t = 0;
        move || {
            t += step;
            t
        }
    }

    #[test]
    fn each_class_owes_its_own_factor_and_idle_owes_nothing() {
        let mut d = Dilation::new(Speeds {
            compute: 0.25,
            data: 1.0,
            device: 0.5,
        });
        d.owe(Block::TcpOutput, 100); // 3 × 100
        d.owe(Block::Checksum, 100); // 0
        d.owe(Block::DeviceSendSyscall, 100); // 1 × 100
        d.owe(Block::Idle, 1_000_000);
        d.owe(Block::Dilation, 1_000_000);
        d.owe(Block::Application, -50); // a negative share owes less: 3 × −50
        assert_eq!(d.added, [150.0, 0.0, 100.0]);
        assert_eq!(d.owed(), 250.0);
        assert!(d.is_due());
    }

    #[test]
    fn spins_pay_what_is_owed_and_carry_the_overshoot() {
        let mut d = Dilation::new(Speeds::all(0.5));
        let mut now = clock(7);
        let mut owed_total = 0.0;
        for counts in [10, 33, 1, 250, 0, 99] {
            d.owe(Block::IpInput, counts);
            owed_total += counts as f64;
            if d.is_due() {
                let (s, e) = d.spin(&mut now);
                assert!(e >= s);
            }
        }
        // Over the run the spins paid what was owed within one step.
        assert!(
            (d.spun as f64 - owed_total).abs() < 7.0,
            "{} {}",
            d.spun,
            owed_total
        );
        assert!(d.owed() > -7.0 && d.owed() < 1.0, "{}", d.owed());
    }

    #[test]
    fn a_spin_from_an_earlier_read_counts_the_time_since_and_pay_is_credit() {
        let mut d = Dilation::new(Speeds::all(0.5));
        d.owe(Block::IpInput, 100);
        // 30 counts of bookkeeping since the read at 1000 pay too: the
        // spin ends at the first read 100 counts past it.
        let mut t = 1030;
        let end = d.spin_from(1000, || {
            t += 10;
            t
        });
        assert_eq!(end, 1100);
        assert_eq!(d.owed(), 0.0);
        assert_eq!(d.spun, 100);
        // Nothing owed: one read, and the time since pays ahead (credit).
        let end = d.spin_from(2000, || 2040);
        assert_eq!(end, 2040);
        assert_eq!(d.owed(), -40.0);
        d.pay(5);
        assert_eq!(d.owed(), -45.0);
        d.owe(Block::IpInput, 45);
        assert!(!d.is_due());
    }

    #[test]
    fn full_speed_owes_nothing() {
        let mut d = Dilation::new(Speeds::all(1.0));
        d.owe(Block::TcpInputSlow, 1000);
        assert!(!d.is_due());
        assert!(Speeds::all(1.0).is_full());
        assert!(!Speeds::all(0.9).is_full());
    }

    #[test]
    fn every_busy_block_but_the_spin_has_a_class() {
        for b in Block::ALL {
            let has = Class::of(b).is_some();
            assert_eq!(has, b.is_busy() && b != Block::Dilation, "{b:?}");
        }
    }
}
