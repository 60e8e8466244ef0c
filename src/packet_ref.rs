//! Where a packet sits: its frame number, its time and, when several capture files are
//! read as one, the file it came from. Copied freely down the pipeline: every message,
//! exchange and diagnostic says which packet it came from.
//!
//! A leaf: every stage may use it; it uses only [`crate::timestamp`].

use crate::timestamp::Timestamp;

/// Where a packet sits: its frame number and time. Copied freely down the pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketRef {
    /// Wireshark's `frame.number`: of the merged capture when several files are read.
    pub frame: u64,
    pub timestamp: Timestamp,
    /// With several capture files: which one the packet came from, and its number there.
    pub origin: Option<Origin>,
}

impl PacketRef {
    /// Whether this packet surely came after `earlier`: later in the merged order, and in
    /// the same file or later in time by more than `clock_skew_ns`. Merged files' clocks
    /// may be that far apart, so their packets' order is known only past it.
    pub fn surely_after(&self, earlier: &Self, clock_skew_ns: i128) -> bool {
        let file = |p: &Self| p.origin.map(Origin::capture);
        let by = self.timestamp.as_nanos() - earlier.timestamp.as_nanos();
        earlier.frame < self.frame && (file(earlier) == file(self) || by > clock_skew_ns)
    }
}

/// A packet's place in the capture file it came from, when several are merged: the file's
/// index in `captures[]` (the order given) and the packet's 1-based number inside it,
/// packed in 8 bytes (16 and 48 bits), for every held segment keeps a [`PacketRef`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin(std::num::NonZeroU64);

impl Origin {
    /// Files past the 65,536th, or packets past 2^48 in one file, have no origin.
    pub fn new(capture: usize, frame: u64) -> Option<Self> {
        pack(capture, frame).map(Self)
    }

    /// Index of the file in `captures[]`.
    pub fn capture(self) -> u32 {
        (self.0.get() >> 48) as u32
    }

    /// 1-based packet number inside that file.
    pub fn frame(self) -> u64 {
        self.0.get() & LOW_48
    }
}

/// The low 48 bits of a [`pack`]ed number.
const LOW_48: u64 = (1 << 48) - 1;

/// A file's index in `captures[]` (at most 65,535) in the high 16 bits and `low` (below
/// 2^48) in the others; `None` out of those ranges, or for zero.
fn pack(capture: usize, low: u64) -> Option<std::num::NonZeroU64> {
    let capture = u64::try_from(capture).ok().filter(|c| *c <= 0xffff)?;
    if low > LOW_48 {
        return None;
    }
    std::num::NonZeroU64::new(capture << 48 | low)
}

/// Where bytes lie in a capture file that can be read again (a regular file, not inflated
/// from gzip): the file's index in `captures[]` and the byte offset, packed in 8 bytes
/// (16 and 48 bits; `Option<FileSpot>` too). Bytes that have one need not be copied to be
/// looked at again: TCP reassembly keeps the spot of what it delivered, not the bytes, to
/// compare a retransmission with ([`Recall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSpot(std::num::NonZeroU64);

impl FileSpot {
    /// Files past the 65,536th, offsets past 2^48, and the first byte of the first file
    /// (a file header, never a packet's) have no spot.
    pub fn new(capture: usize, offset: u64) -> Option<Self> {
        pack(capture, offset).map(Self)
    }

    /// Index of the file in `captures[]`.
    pub fn capture(self) -> usize {
        (self.0.get() >> 48) as usize
    }

    /// Byte offset in that file.
    pub fn offset(self) -> u64 {
        self.0.get() & LOW_48
    }

    /// The spot `by` bytes further on in the same file.
    #[inline]
    pub fn advanced(self, by: u64) -> Option<Self> {
        Self::new(self.capture(), self.offset().checked_add(by)?)
    }
}

/// Bytes a payload needs to be given a spot: a shorter one is copied where it must be
/// kept (it is read anyway, and a copy of it costs less than keeping and reading again
/// its spot).
pub const SPOT_FROM: usize = 512;

/// Reads bytes of a capture file again at a [`FileSpot`]: how a stage that kept a spot
/// instead of the bytes gets them back (the input implements it; a stage only asks).
pub trait Recall: Send + Sync + std::fmt::Debug {
    /// Fills `into` with the bytes at `spot`; `false` when they cannot be read.
    fn recall(&self, spot: FileSpot, into: &mut [u8]) -> bool;
}

/// Recalls nothing: for inputs read once (standard input, gzip, readers given in
/// memory), whose bytes never have a spot.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRecall;

impl Recall for NoRecall {
    fn recall(&self, _spot: FileSpot, _into: &mut [u8]) -> bool {
        false
    }
}
