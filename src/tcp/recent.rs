//! The last bytes a direction delivered, kept to compare a retransmission with.
//!
//! A ring of [`RECENT_LEN`] bytes, indexed by stream offset. Each delivery's tail is
//! copied into it once, nothing is moved; the ring grows with the first bytes of the
//! stream, so that the many short connections of a busy listener cost what they carried,
//! not a full ring. Once the ring is full, a delivery of [`SPOT_FROM`] bytes or more
//! whose bytes lie in a capture file that can be read again is not copied: its stretch
//! of the ring keeps the file's spot instead (a *stretch*), and a retransmission over it
//! reads those bytes again ([`Recall`]). Bulk traffic (Produce and Fetch payloads) is
//! then never copied at all; retransmissions are rare, and reading a few KiB again for
//! one costs less than copying every byte delivered.

use std::collections::VecDeque;

use crate::heap::heap_cost;
use crate::packet_ref::{FileSpot, Recall};

/// Most recent delivered bytes kept per direction to check retransmissions against.
pub const RECENT_LEN: usize = 4096;

/// Deliveries at least this long are kept by their spot, when they have one; shorter ones
/// are copied (a Kafka control message is read by the decoder anyway, so its bytes are
/// at hand, and a stretch for it would cost more than the copy).
pub use crate::packet_ref::SPOT_FROM;

/// Stretches that can lie in the ring at once: each is at least [`SPOT_FROM`] long, and
/// the oldest may reach before the ring's start.
const MAX_STRETCHES: usize = RECENT_LEN / SPOT_FROM + 2;

/// A run of remembered bytes kept by where they lie in a capture file.
#[derive(Debug, Clone, Copy)]
struct Stretch {
    /// Stream offset of its first byte.
    start: u64,
    len: u64,
    spot: FileSpot,
}

impl Stretch {
    fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Whether a retransmission's bytes equal those remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compared {
    Same,
    Different,
    /// A stretch's bytes could not be read again from the capture file (it was cut
    /// short or went away while being read): the bytes before it were the same.
    Unread,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Recent {
    /// While shorter than [`RECENT_LEN`], written at its end (`head == buf.len()`).
    buf: Vec<u8>,
    /// Bytes held, at most [`RECENT_LEN`].
    len: usize,
    /// Where the next byte goes.
    head: usize,
    /// Stream offset just past the last byte remembered.
    end: u64,
    /// The ring's stretches kept by their spot, in stream order; allocated only once
    /// one is, and boxed: most rings keep none, and every byte of a ring's fields is a
    /// byte more of the connection's state that each packet's first touch brings in.
    #[allow(clippy::box_collection)] // 8 bytes in the ring, not the deque's 32
    stretches: Option<Box<VecDeque<Stretch>>>,
    /// [`Self::cost`], kept: the budget asks after every packet, and the allocations
    /// change only while the ring grows and when a stretch is first kept.
    cost: usize,
}

impl Recent {
    /// Remembers `data`, delivered from stream offset `start` (where the last delivery
    /// ended, unless a gap cleared the ring), its bytes at `spot` in its capture file if
    /// they can be read again there.
    pub fn push(&mut self, start: u64, data: &[u8], spot: Option<FileSpot>) {
        let skipped = data.len().saturating_sub(RECENT_LEN);
        let tail = data.get(skipped..).unwrap_or(data);
        self.end = start + data.len() as u64;
        let kept = match spot {
            Some(spot) if data.len() >= SPOT_FROM && self.buf.len() == RECENT_LEN => {
                spot.advanced(skipped as u64)
            }
            _ => None,
        };
        match kept {
            Some(spot) => self.keep_spot(tail.len(), spot),
            None => self.copy(tail),
        }
        self.len = (self.len + tail.len()).min(RECENT_LEN);
        if let Some(stretches) = self.stretches.as_deref_mut() {
            let oldest = self.end - self.len as u64;
            while stretches.front().is_some_and(|s| s.end() <= oldest) {
                stretches.pop_front();
            }
        }
    }

    fn copy(&mut self, tail: &[u8]) {
        if self.buf.len() < RECENT_LEN {
            let room = self.buf.capacity();
            self.grow(tail);
            if self.buf.capacity() != room {
                self.cost = self.allocated();
            }
            return;
        }
        self.overwrite(tail);
    }

    /// Appends `tail` while the ring is shorter than [`RECENT_LEN`]; one that would go
    /// past it fills the ring and goes round.
    fn grow(&mut self, tail: &[u8]) {
        if self.buf.capacity() == 0 {
            // A quarter ring first: a short connection fits, a longer one grows twice.
            self.buf.reserve_exact(RECENT_LEN / 4);
        }
        if self.buf.len() + tail.len() <= RECENT_LEN {
            self.buf.extend_from_slice(tail);
            self.head = self.buf.len() % RECENT_LEN;
            return;
        }
        self.buf.resize(RECENT_LEN, 0);
        self.overwrite(tail);
    }

    /// Writes `tail` over the full ring's oldest bytes.
    fn overwrite(&mut self, tail: &[u8]) {
        let first = tail.len().min(RECENT_LEN - self.head);
        let (a, b) = tail.split_at(first);
        if let Some(dst) = self.buf.get_mut(self.head..self.head + a.len()) {
            dst.copy_from_slice(a);
        }
        if let Some(dst) = self.buf.get_mut(..b.len()) {
            dst.copy_from_slice(b);
        }
        self.head = (self.head + tail.len()) % RECENT_LEN;
    }

    /// The ring moves on over `len` bytes (at most [`RECENT_LEN`]) that lie at `spot`.
    fn keep_spot(&mut self, len: usize, spot: FileSpot) {
        self.head = (self.head + len) % RECENT_LEN;
        let stretch = Stretch {
            start: self.end - len as u64,
            len: len as u64,
            spot,
        };
        let stretches = self
            .stretches
            .get_or_insert_with(|| Box::new(VecDeque::with_capacity(MAX_STRETCHES)));
        if let Some(last) = stretches.back_mut() {
            // the next bytes of the same file (a segment split in two deliveries)
            if last.end() == stretch.start && last.spot.advanced(last.len) == Some(spot) {
                last.len += stretch.len;
                return;
            }
        }
        stretches.push_back(stretch);
        self.cost = self.allocated();
    }

    /// Bytes remembered, ending where the last delivery ended.
    pub fn len(&self) -> usize {
        self.len
    }

    /// What the ring costs: its allocations, as malloc hands them out.
    pub fn cost(&self) -> usize {
        debug_assert_eq!(self.cost, self.allocated(), "the kept cost is the ring's");
        self.cost
    }

    /// [`Self::cost`] worked out from the allocations.
    fn allocated(&self) -> usize {
        let stretches = self.stretches.as_deref().map_or(0, |s| {
            heap_cost(size_of::<VecDeque<Stretch>>())
                + heap_cost(s.capacity() * size_of::<Stretch>())
        });
        heap_cost(self.buf.capacity()) + stretches
    }

    /// Gives the ring back: retransmissions of what it held are no longer compared.
    pub fn release(&mut self) -> usize {
        let freed = self.cost();
        *self = Self::default();
        freed
    }

    /// Forgets what it holds (a gap: what comes next does not follow it).
    pub fn clear(&mut self) {
        self.len = 0;
        if let Some(stretches) = self.stretches.as_deref_mut() {
            stretches.clear();
        }
    }

    /// Whether `data` equals the remembered bytes from stream offset `from` on (all of
    /// them remembered: `from` at least `end - len`, `data` ending by `end`).
    pub fn compare(&self, from: u64, data: &[u8], recall: &dyn Recall) -> Compared {
        let mut at = from;
        let mut rest = data;
        // (the splits below cannot fail: each stretch met lies partly within `rest`)
        for stretch in self.stretches.iter().flat_map(|s| s.iter()) {
            let rest_end = at + rest.len() as u64;
            if stretch.end() <= at {
                continue;
            }
            if stretch.start >= rest_end {
                break;
            }
            if stretch.start > at {
                let Some((before, after)) = rest.split_at_checked(span(at, stretch.start)) else {
                    return Compared::Unread;
                };
                if !self.ring_matches(at, before) {
                    return Compared::Different;
                }
                at = stretch.start;
                rest = after;
            }
            let Some((inside, after)) =
                rest.split_at_checked(span(at, stretch.end().min(rest_end)))
            else {
                return Compared::Unread;
            };
            let Some(spot) = stretch.spot.advanced(at - stretch.start) else {
                return Compared::Unread;
            };
            let mut again = [0u8; RECENT_LEN];
            let Some(again) = again.get_mut(..inside.len()) else {
                return Compared::Unread;
            };
            if !recall.recall(spot, again) {
                return Compared::Unread;
            }
            if again != inside {
                return Compared::Different;
            }
            at += inside.len() as u64;
            rest = after;
        }
        match self.ring_matches(at, rest) {
            true => Compared::Same,
            false => Compared::Different,
        }
    }

    /// Whether the ring's copied bytes from stream offset `from` equal `data`.
    fn ring_matches(&self, from: u64, data: &[u8]) -> bool {
        if data.is_empty() {
            return true;
        }
        let Ok(back) = usize::try_from(self.end - from) else {
            return false;
        };
        if back > self.len || data.len() > back {
            return false;
        }
        let start = (self.head + RECENT_LEN - back) % RECENT_LEN;
        let first = data.len().min(RECENT_LEN - start);
        let (a, b) = data.split_at(first);
        self.buf.get(start..start + a.len()) == Some(a) && self.buf.get(..b.len()) == Some(b)
    }
}

/// `to - from` as a length (both offsets within one comparison of at most a ring).
fn span(from: u64, to: u64) -> usize {
    usize::try_from(to.saturating_sub(from)).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet_ref::NoRecall;

    /// The ring's stretches and their room.
    fn stretches(r: &Recent) -> (usize, usize) {
        r.stretches
            .as_deref()
            .map_or((0, 0), |s| (s.len(), s.capacity()))
    }

    /// Recalls from a file's bytes in memory (capture 0).
    #[derive(Debug)]
    struct InMemory(Vec<u8>);

    impl Recall for InMemory {
        fn recall(&self, spot: FileSpot, into: &mut [u8]) -> bool {
            let Ok(from) = usize::try_from(spot.offset()) else {
                return false;
            };
            match self.0.get(from..from + into.len()) {
                Some(bytes) if spot.capture() == 0 => {
                    into.copy_from_slice(bytes);
                    true
                }
                _ => false,
            }
        }
    }

    fn same(r: &Recent, from: u64, data: &[u8]) -> bool {
        r.compare(from, data, &NoRecall) == Compared::Same
    }

    #[test]
    fn recent_ring_compares_across_its_wrap() {
        let mut r = Recent::default();
        let data: Vec<u8> = (0..=255u8).cycle().take(RECENT_LEN + 1000).collect();
        r.push(0, &data[..3000], None);
        r.push(3000, &data[3000..], None);
        assert_eq!(r.len(), RECENT_LEN);
        let oldest = (data.len() - RECENT_LEN) as u64;
        let held = &data[data.len() - RECENT_LEN..];
        assert!(same(&r, oldest, held));
        assert!(same(&r, oldest + 100, &held[100..2000]));
        let mut wrong = held[3000..3500].to_vec();
        wrong[7] ^= 1;
        assert_eq!(
            r.compare(oldest + 3000, &wrong, &NoRecall),
            Compared::Different
        );
    }

    #[test]
    fn recent_ring_grows_only_with_what_it_holds() {
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * RECENT_LEN).collect();
        let mut r = Recent::default();
        r.push(0, &data[..50], None);
        assert!(
            r.buf.capacity() < RECENT_LEN,
            "a short stream needs no full ring"
        );
        assert!(same(&r, 10, &data[10..50]));
        r.clear();
        r.push(50, &data[50..90], None);
        assert_eq!(r.len(), 40);
        assert!(same(&r, 50, &data[50..90]));
        // Small pushes across the point where the ring fills and wraps.
        let mut end = 90;
        for step in [1000, 1500, 2000, 700, 3000, 33] {
            r.push(end as u64, &data[end..end + step], None);
            end += step;
            let held = r.len();
            assert!(
                same(&r, (end - held) as u64, &data[end - held..end]),
                "after {end} bytes"
            );
        }
        assert_eq!(r.len(), RECENT_LEN);
        assert_eq!(r.buf.len(), RECENT_LEN);
    }

    /// Deliveries pushed in turn, from stream offset 0, each with its spot in `file`
    /// (the stream's bytes lie in the file at `base + offset`) when `spotted`.
    fn pushed(stream: &[u8], sizes: &[(usize, bool)], base: u64) -> (Recent, usize) {
        let mut r = Recent::default();
        let mut end = 0;
        for &(size, spotted) in sizes {
            let spot = FileSpot::new(0, base + end as u64).filter(|_| spotted);
            r.push(end as u64, &stream[end..end + size], spot);
            end += size;
        }
        (r, end)
    }

    #[test]
    fn long_deliveries_with_a_spot_are_read_again_not_copied() {
        let stream: Vec<u8> = (0..=250u8).cycle().take(6 * RECENT_LEN).collect();
        let mut file = vec![0xee; 100];
        file.extend_from_slice(&stream);
        let recall = InMemory(file);
        // the first ring's worth is copied whatever the spot; then short ones are copied
        // and long ones kept by their spot
        let sizes = [
            (RECENT_LEN, true),
            (1448, true),
            (100, true),
            (1448, true),
            (600, false),
            (1448, true),
        ];
        let (r, end) = pushed(&stream, &sizes, 100);
        assert_eq!(stretches(&r).0, 3, "{:?}", r.stretches);
        let oldest = end - RECENT_LEN;
        // every window of the remembered bytes, across stretches and copies
        for (from, to) in [(oldest, end), (oldest + 3, end - 5), (end - 1448, end)] {
            let got = r.compare(from as u64, &stream[from..to], &recall);
            assert_eq!(got, Compared::Same, "{from}..{to}");
        }
        // one byte changed, in a stretch and in a copy
        for changed in [end - 700, end - 1448 - 300] {
            let mut wrong = stream[oldest..end].to_vec();
            wrong[changed - oldest] ^= 0x40;
            let got = r.compare(oldest as u64, &wrong, &recall);
            assert_eq!(got, Compared::Different, "byte {changed}");
        }
        // the file cannot be read again: said, never taken for the same bytes
        let got = r.compare(oldest as u64, &stream[oldest..end], &NoRecall);
        assert_eq!(got, Compared::Unread);
        // the copied bytes before a stretch are still compared first
        let copied = end - 1448 - 600 - 1448 - 100;
        let mut wrong = stream[copied..end].to_vec();
        wrong[0] ^= 1;
        let got = r.compare(copied as u64, &wrong, &NoRecall);
        assert_eq!(got, Compared::Different);
    }

    #[test]
    fn stretches_leave_as_the_ring_moves_past_them_and_with_a_gap() {
        let stream: Vec<u8> = (0..=255u8).cycle().take(40 * RECENT_LEN).collect();
        let mut sizes = vec![(RECENT_LEN, true)];
        sizes.extend(std::iter::repeat_n((SPOT_FROM, true), 60));
        sizes.extend(std::iter::repeat_n((SPOT_FROM + 1, false), 3));
        let (mut r, end) = pushed(&stream, &sizes, 0);
        let (len, capacity) = stretches(&r);
        assert!(len > 0 && len <= MAX_STRETCHES);
        assert!(capacity <= MAX_STRETCHES + 1, "never grown");
        let recall = InMemory(stream.clone());
        let from = end - RECENT_LEN;
        assert_eq!(
            r.compare(from as u64, &stream[from..end], &recall),
            Compared::Same
        );
        r.clear();
        assert_eq!(stretches(&r).0, 0);
        assert_eq!(r.len(), 0);
    }

    /// The kept cost is the allocations' after every push: while the ring grows from a
    /// quarter to full, as it goes round, once a stretch is kept, and after a clear and
    /// a release.
    #[test]
    fn the_kept_cost_follows_the_allocations() {
        let stream: Vec<u8> = (0..=255u8).cycle().take(8 * RECENT_LEN).collect();
        let mut r = Recent::default();
        let mut end = 0;
        let steps = [
            (10, false),
            (900, false),
            (300, false),
            (2000, false),
            (1500, true),
        ];
        let steps = steps
            .into_iter()
            .chain([(SPOT_FROM, true), (3000, false), (40, true)]);
        // the first stretch kept brings the box of stretches and their room, each as
        // malloc hands it out
        let first_stretch = heap_cost(size_of::<VecDeque<Stretch>>())
            + heap_cost(MAX_STRETCHES * size_of::<Stretch>());
        for (size, spotted) in steps.chain([(SPOT_FROM + 1, true); 20]) {
            let spot = FileSpot::new(0, end as u64).filter(|_| spotted);
            let (before, had_stretches) = (r.allocated(), r.stretches.is_some());
            r.push(end as u64, &stream[end..end + size], spot);
            end += size;
            assert_eq!(r.cost, r.allocated(), "after {end} bytes");
            if !had_stretches && r.stretches.is_some() {
                assert_eq!(r.allocated(), before + first_stretch, "after {end} bytes");
            }
        }
        assert!(stretches(&r).0 > 0, "a stretch was kept");
        let kept = r.cost;
        r.clear();
        assert_eq!(r.cost, r.allocated());
        assert_eq!(r.cost, kept, "a clear keeps the room");
        let held = r.allocated();
        assert_eq!(r.release(), held);
        assert_eq!((r.cost, r.allocated()), (0, 0));
    }

    #[test]
    fn contiguous_spots_make_one_stretch() {
        let stream: Vec<u8> = (0..=255u8).cycle().take(3 * RECENT_LEN).collect();
        let sizes = [(RECENT_LEN, true), (SPOT_FROM, true), (SPOT_FROM, true)];
        let (r, end) = pushed(&stream, &sizes, 7);
        assert_eq!(stretches(&r).0, 1);
        let recall = {
            let mut file = vec![0; 7];
            file.extend_from_slice(&stream);
            InMemory(file)
        };
        let from = end - 2 * SPOT_FROM - 10;
        assert_eq!(
            r.compare(from as u64, &stream[from..end], &recall),
            Compared::Same
        );
    }

    /// Every connection holds two rings from its first packet, most of which never keep
    /// a stretch by its spot: those stay out of the ring, in a box of their own.
    #[test]
    fn a_ring_without_stretches_stays_small() {
        let size = size_of::<Recent>();
        assert!(size <= 64, "a ring takes {size} bytes");
    }
}
