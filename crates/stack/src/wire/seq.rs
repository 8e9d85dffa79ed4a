//! TCP sequence numbers: 32-bit values compared modulo 2³² (RFC 9293
//! §3.4), so `a < b` means "b is at most 2³¹ − 1 after a", across the wrap.

use std::cmp::Ordering;
use std::ops::{Add, Sub};

/// A TCP sequence (or acknowledgment) number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// Whether `self` lies in `[start, end)` modulo 2³².
    pub fn in_range(self, start: SeqNumber, end: SeqNumber) -> bool {
        self.0.wrapping_sub(start.0) < end.0.wrapping_sub(start.0)
    }

    /// The larger of two (modulo 2³²).
    pub fn max(self, other: SeqNumber) -> SeqNumber {
        if self >= other {
            self
        } else {
            other
        }
    }

    /// The smaller of two (modulo 2³²).
    pub fn min(self, other: SeqNumber) -> SeqNumber {
        if self <= other {
            self
        } else {
            other
        }
    }
}

impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &SeqNumber) -> Option<Ordering> {
        Some((self.0.wrapping_sub(other.0) as i32).cmp(&0))
    }
}

impl Add<usize> for SeqNumber {
    type Output = SeqNumber;
    fn add(self, n: usize) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n as u32))
    }
}

impl Sub<usize> for SeqNumber {
    type Output = SeqNumber;
    fn sub(self, n: usize) -> SeqNumber {
        SeqNumber(self.0.wrapping_sub(n as u32))
    }
}

impl Sub for SeqNumber {
    type Output = usize;
    /// The distance from `rhs` forward to `self` (`self` must not be before `rhs`).
    fn sub(self, rhs: SeqNumber) -> usize {
        debug_assert!(self >= rhs, "sequence {} before {}", self.0, rhs.0);
        self.0.wrapping_sub(rhs.0) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_and_distance_hold_across_the_wrap() {
        let a = SeqNumber(u32::MAX - 10);
        let b = a + 20;
        assert_eq!(b, SeqNumber(9));
        assert!(a < b);
        assert!(b > a);
        assert_eq!(b - a, 20);
        assert_eq!(b - 20, a);
        assert!(SeqNumber(5).in_range(a, b));
        assert!(!b.in_range(a, b));
        assert!(a.in_range(a, b));
        assert_eq!(a.max(b), b);
        assert_eq!(a.min(b), a);
    }
}
