//! The event timeline: every module entry and exit with its counter
//! reading, as Abrams & Chen's §3.3 instrumented their TCP, and what it
//! says: time inside modules, between them, and idle (blocked in poll).

use super::block::Block;

/// One module entry or exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The counter at the event.
    pub at: u64,
    /// The module.
    pub block: Block,
    /// Entry (true) or exit.
    pub enter: bool,
}

/// The events of one accounting run, with its start and stop readings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Entries and exits in order.
    pub events: Vec<Event>,
    /// Events past the timeline's capacity, not kept.
    pub dropped: u64,
    /// The counter when accounting started.
    pub start: u64,
    /// The counter when it stopped.
    pub end: u64,
}

/// A timeline's reading: busy and idle time, in counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineSplit {
    /// Inside top-level modules other than idle (module entry to exit).
    pub in_modules: u64,
    /// Between top-level modules: busy, but in no module.
    pub between_modules: u64,
    /// Inside idle (the whole poll: the timeline has its entry and exit,
    /// not the CPU part the ledger takes out into its own block).
    pub idle: u64,
    /// Exits that did not match the innermost open entry, and entries
    /// never exited: 0 for a well-formed timeline.
    pub mismatches: u64,
}

impl TimelineSplit {
    /// Busy time: in modules and between them.
    pub fn busy(&self) -> u64 {
        self.in_modules + self.between_modules
    }
}

impl Timeline {
    /// Splits the run from start to stop into time in modules, between
    /// them and idle, walking the entries and exits; checks that they nest.
    pub fn split(&self) -> TimelineSplit {
        let mut open: Vec<Event> = Vec::new();
        let mut split = TimelineSplit {
            in_modules: 0,
            between_modules: 0,
            idle: 0,
            mismatches: 0,
        };
        let mut last_top_exit = self.start;
        for e in &self.events {
            if e.enter {
                if open.is_empty() {
                    split.between_modules += e.at.saturating_sub(last_top_exit);
                }
                open.push(*e);
                continue;
            }
            match open.pop() {
                Some(entry) if entry.block == e.block => {
                    if open.is_empty() {
                        let spent = e.at.saturating_sub(entry.at);
                        if e.block == Block::Idle {
                            split.idle += spent;
                        } else {
                            split.in_modules += spent;
                        }
                        last_top_exit = e.at;
                    }
                }
                _ => split.mismatches += 1,
            }
        }
        split.mismatches += open.len() as u64;
        if open.is_empty() {
            split.between_modules += self.end.saturating_sub(last_top_exit);
        }
        split
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(at: u64, block: Block, enter: bool) -> Event {
        Event { at, block, enter }
    }

    #[test]
    fn nested_modules_count_once_and_gaps_are_between() {
        let t = Timeline {
            events: vec![
                ev(10, Block::IpInput, true),
                ev(12, Block::Checksum, true),
                ev(15, Block::Checksum, false),
                ev(20, Block::IpInput, false),
                ev(25, Block::Idle, true),
                ev(75, Block::Idle, false),
            ],
            dropped: 0,
            start: 0,
            end: 100,
        };
        let s = t.split();
        assert_eq!(s.in_modules, 10);
        assert_eq!(s.idle, 50);
        assert_eq!(s.between_modules, 10 + 5 + 25);
        assert_eq!(s.busy() + s.idle, 100);
        assert_eq!(s.mismatches, 0);
    }

    #[test]
    fn a_crossed_exit_and_an_unclosed_entry_are_mismatches() {
        let t = Timeline {
            events: vec![
                ev(1, Block::IpInput, true),
                ev(2, Block::Checksum, true),
                ev(3, Block::IpInput, false),
                ev(4, Block::TcpOutput, true),
            ],
            dropped: 0,
            start: 0,
            end: 10,
        };
        assert_eq!(t.split().mismatches, 3);
    }
}
