//! TCP sequence numbers (RFC 9293 §3.4): 32-bit values compared modulo 2^32, turned into
//! 64-bit stream offsets at once so nothing later has to think about wrap-around.

/// Maps sequence numbers of one direction to stream offsets (0 = first payload byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqSpace {
    /// Sequence number of stream offset 0.
    base: u32,
}

impl SeqSpace {
    /// Offset 0 is sequence number `base`.
    pub fn new(base: u32) -> Self {
        Self { base }
    }

    /// The sequence number of stream offset `offset` (modulo 2^32).
    pub fn seq(&self, offset: u64) -> u32 {
        self.base.wrapping_add(offset as u32)
    }

    /// The stream offset of `seq` nearest to `near` (within ±2^31), or `None` when that
    /// would fall before the start of the stream.
    pub fn offset(&self, seq: u32, near: u64) -> Option<u64> {
        let rel = seq.wrapping_sub(self.base);
        let delta = rel.wrapping_sub(near as u32) as i32;
        near.checked_add_signed(i64::from(delta))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_from_base() {
        let space = SeqSpace::new(1000);
        assert_eq!(space.offset(1000, 0), Some(0));
        assert_eq!(space.offset(1100, 0), Some(100));
        assert_eq!(space.offset(999, 0), None);
    }

    #[test]
    fn crosses_wrap_around() {
        let space = SeqSpace::new(u32::MAX - 10);
        assert_eq!(space.offset(u32::MAX, 0), Some(10));
        assert_eq!(space.offset(5, 10), Some(16));
        // far into the stream: the 64-bit offset keeps growing past 2^32
        let near = (1u64 << 32) + 100;
        let seq = (space.base as u64 + near + 50) as u32;
        assert_eq!(space.offset(seq, near), Some(near + 50));
        let seq_back = (space.base as u64 + near - 50) as u32;
        assert_eq!(space.offset(seq_back, near), Some(near - 50));
    }
}
