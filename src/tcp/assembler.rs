//! Reassembly of one direction of a TCP connection into an ordered byte stream.
//!
//! Policy (see README "Reassembly"):
//! - bytes are delivered once, in order, each tagged with the packet that carried it;
//! - in-order segments are delivered straight from the packet, never copied;
//! - a segment ahead of the next expected byte is held (copied) until the hole fills;
//!   held bytes are kept as merged runs, capped in bytes (at what they cost) and in
//!   number, and past either cap the hole is declared lost (a gap);
//! - retransmitted bytes already delivered are dropped: the first copy seen wins;
//! - bytes cut by snaplen are a gap of known length;
//! - at the end of the capture, held data is delivered after declaring the holes lost.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use super::recent::{Compared, Recent};
use super::seq::SeqSpace;
use crate::heap::heap_cost;
use crate::packet_ref::{FileSpot, PacketRef, Recall};

pub use super::recent::RECENT_LEN;

/// What the assembler hands to the next stage.
#[derive(Debug, PartialEq, Eq)]
pub enum Delivery<'a> {
    /// The next bytes of the stream, carried by packet `at`.
    Data(&'a [u8], PacketRef),
    /// `len` bytes of the stream are missing before the next delivery.
    Gap { len: u64, at: PacketRef },
    /// The sender closed its side (FIN reached in order).
    Fin(PacketRef),
    /// A retransmission carried bytes different from those first seen for the same
    /// sequence numbers; the first ones were kept. `offset` is in the stream.
    Conflict {
        offset: u64,
        len: u64,
        at: PacketRef,
    },
    /// A retransmission re-sent bytes that were kept by their spot in the capture file,
    /// and the file could not be read there again: these `len` bytes from `offset` were
    /// not compared. The first ones were kept.
    Unread {
        offset: u64,
        len: u64,
        at: PacketRef,
    },
}

impl Delivery<'_> {
    /// The packet that brought this delivery.
    pub fn at(&self) -> PacketRef {
        match self {
            Self::Data(_, at)
            | Self::Gap { at, .. }
            | Self::Fin(at)
            | Self::Conflict { at, .. }
            | Self::Unread { at, .. } => *at,
        }
    }
}

/// Runs of held bytes per direction at most (past it, as past the byte cap, the hole
/// before the first is declared lost). Runs merge as holes fill, so only a sender that
/// leaves thousands of holes open reaches it.
pub const MAX_HELD_RUNS: usize = 4096;
/// What one held run costs beyond its two allocations' capacity, counted against the
/// cap (x86-64, glibc malloc): its share of the `BTreeMap<u64, Run>`'s nodes (an 8-byte
/// key and a 72-byte [`Run`] an entry, nodes as little as half full: about 214 bytes),
/// and the malloc headers and rounding of its ring and its marks (about 39 bytes).
/// `tests/memory_tcp_costs.rs` holds the charge to what a counting allocator measures.
const RUN_OVERHEAD: usize = 264;
/// What a map of held runs costs before its runs' shares ([`RUN_OVERHEAD`]): its first
/// leaf node, allocated whole (11 entries) for one run (measured: a connection holding one
/// lone byte took 600 bytes more than it was charged without it).
const FIRST_LEAF: usize = heap_cost(16 + 11 * (size_of::<u64>() + size_of::<Run>()));
/// What each mark (where a packet's bytes begin in a run) costs: its place in the
/// run's ring of marks (40 bytes: an offset and a [`PacketRef`]), counted at the ring's
/// capacity.
const MARK_SIZE: usize = size_of::<Mark>();
/// An acknowledgment further ahead than this is not believed (a stray packet from an
/// earlier use of the address pair, or garbage).
const MAX_ACK_JUMP: u64 = 64 << 20;

/// Where one packet's bytes begin in a run (a stream offset), and that packet.
type Mark = (u64, PacketRef);

/// Held bytes that arrived ahead of a hole: the stream bytes from the run's key (its
/// start) on, then `missing_len` bytes the capture cut off (snaplen). Runs never overlap
/// and merge as soon as their bytes touch, unless cut-off bytes lie between them.
#[derive(Debug)]
struct Run {
    /// A ring, so that bytes join a run at either end at the cost of the bytes moved.
    data: VecDeque<u8>,
    /// Bytes after `data` that the segments carried but the capture cut off.
    missing_len: u64,
    /// The packet that brought each stretch of the run, in stream order: the first at
    /// the run's start, each until the next. Never empty.
    marks: VecDeque<Mark>,
}

impl Run {
    fn new(bytes: &[u8], missing_len: u64, mark: Mark) -> Self {
        Self {
            data: VecDeque::from(bytes.to_vec()),
            missing_len,
            marks: VecDeque::from(vec![mark]),
        }
    }

    /// What the run costs, counted against the cap: its allocations at their capacity,
    /// and a share of the map that holds it.
    fn cost(&self) -> usize {
        RUN_OVERHEAD + self.data.capacity() + self.marks.capacity() * MARK_SIZE
    }

    fn data_end(&self, start: u64) -> u64 {
        start + self.data.len() as u64
    }

    fn claimed_end(&self, start: u64) -> u64 {
        self.data_end(start) + self.missing_len
    }

    /// The held bytes from `from` to `to` (run-relative), as the ring's two slices.
    fn slices(&self, from: usize, to: usize) -> (&[u8], &[u8]) {
        let (a, b) = self.data.as_slices();
        let split = a.len();
        (
            a.get(from.min(split)..to.min(split)).unwrap_or_default(),
            b.get(from.saturating_sub(split)..to.saturating_sub(split))
                .unwrap_or_default(),
        )
    }

    /// Whether the held bytes from `from` (run-relative) equal `new`.
    fn matches(&self, from: usize, new: &[u8]) -> bool {
        let (a, b) = self.slices(from, from + new.len());
        let (new_a, new_b) = new.split_at(a.len().min(new.len()));
        a == new_a && b == new_b
    }

    /// Adds bytes at the end, the first of them brought by the packet of `marks`' first.
    fn append(&mut self, bytes: &[u8], marks: impl IntoIterator<Item = Mark>) {
        grow(&mut self.data, bytes.len());
        self.data.extend(bytes);
        for mark in marks {
            if self.marks.back().is_none_or(|last| last.1 != mark.1) {
                grow(&mut self.marks, 1);
                self.marks.push_back(mark);
            }
        }
    }

    /// Adds bytes at the start (copying them once, not the run), with their marks.
    fn prepend(&mut self, bytes: &[u8], marks: impl DoubleEndedIterator<Item = Mark>) {
        grow(&mut self.data, bytes.len());
        self.data.extend(bytes);
        self.data.rotate_right(bytes.len());
        for mark in marks.rev() {
            match self.marks.front_mut() {
                Some(first) if first.1 == mark.1 => first.0 = mark.0,
                _ => {
                    grow(&mut self.marks, 1);
                    self.marks.push_front(mark);
                }
            }
        }
    }

    /// Takes another run's bytes and marks, whole, at one end.
    fn absorb(&mut self, mut other: Self, at_end: bool) {
        let bytes = other.data.make_contiguous();
        if at_end {
            self.append(bytes, other.marks);
        } else {
            self.prepend(bytes, other.marks.into_iter());
        }
    }
}

/// Makes room for `more` in a ring, growing it by half its length at least: still a
/// constant amortised cost a byte, and the spare capacity, which the cap counts, stays
/// under a third of it (doubling would let one run of half the cap fill all of it).
fn grow<T>(ring: &mut VecDeque<T>, more: usize) {
    if ring.capacity() - ring.len() < more {
        ring.reserve_exact(more.max(ring.len() / 2));
    }
}

/// Where a packet's bytes differ from the copy first held or delivered: the span from
/// the first differing stretch to the end of the last, reported once per packet.
#[derive(Debug, Default)]
struct ConflictSpan(Option<(u64, u64)>);

impl ConflictSpan {
    fn add(&mut self, from: u64, to: u64) {
        self.0 = Some(match self.0 {
            Some((start, end)) => (start.min(from), end.max(to)),
            None => (from, to),
        });
    }

    fn report(self, at: PacketRef, out: &mut impl FnMut(Delivery<'_>)) {
        if let Some((offset, end)) = self.0 {
            out(Delivery::Conflict {
                offset,
                len: end - offset,
                at,
            });
        }
    }
}

/// Assembler for one direction.
///
/// Invariants: every key of `held` is above `next`, except transiently inside `drain`;
/// `held_cost` is the sum of `Run::cost` over `held`.
#[derive(Debug)]
pub struct Assembler {
    life: Life,
    /// Offset of the next byte to deliver.
    next: u64,
    /// Runs of held bytes by their start.
    held: BTreeMap<u64, Run>,
    held_cost: usize,
    max_held_len: usize,
    /// The last bytes delivered (at most [`RECENT_LEN`]), ending at `next`; a gap
    /// clears them.
    recent: Recent,
}

/// Where a direction's stream is in its life.
#[derive(Debug, Clone, Copy)]
enum Life {
    /// No segment has fixed where the stream starts.
    Unstarted,
    /// Its bytes are read; `fin_at`: the offset of the FIN, once seen.
    Open {
        space: SeqSpace,
        fin_at: Option<u64>,
    },
    /// Every byte up to the FIN delivered, then the FIN: nothing more is read.
    Finished { space: SeqSpace, fin_at: u64 },
}

impl Life {
    fn space(self) -> Option<SeqSpace> {
        match self {
            Self::Unstarted => None,
            Self::Open { space, .. } | Self::Finished { space, .. } => Some(space),
        }
    }

    fn fin_at(self) -> Option<u64> {
        match self {
            Self::Unstarted => None,
            Self::Open { fin_at, .. } => fin_at,
            Self::Finished { fin_at, .. } => Some(fin_at),
        }
    }
}

/// A segment as the assembler sees it.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub payload: &'a [u8],
    pub missing_len: u32,
    pub at: PacketRef,
    /// Where the payload lies in its capture file, if it can be read again there.
    pub spot: Option<FileSpot>,
    /// Reads bytes delivered earlier again from their spot, to compare a
    /// retransmission with.
    pub recall: &'a dyn Recall,
}

impl Assembler {
    pub fn new(max_held_len: usize) -> Self {
        Self {
            life: Life::Unstarted,
            next: 0,
            held: BTreeMap::new(),
            held_cost: 0,
            max_held_len,
            recent: Recent::default(),
        }
    }

    /// Sequence number of the next byte to deliver, once the stream has started.
    pub fn next_seq(&self) -> Option<u32> {
        self.life.space().map(|space| space.seq(self.next))
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.life, Life::Finished { .. })
    }

    /// What the bytes held out of order cost, as counted against the cap: their
    /// allocations and `RUN_OVERHEAD` per run.
    pub fn held_len(&self) -> usize {
        self.held_cost
    }

    /// All the heap this direction holds: the bytes held out of order, as
    /// [`Self::held_len`], and the ring of the last bytes delivered.
    pub fn heap_len(&self) -> usize {
        let first_leaf = if self.held.is_empty() { 0 } else { FIRST_LEAF };
        self.held_cost + first_leaf + self.recent.cost()
    }

    /// Over the memory budget: gives back the ring of the last bytes delivered (after
    /// [`Self::flush`]); returns the bytes freed.
    pub fn release_recent(&mut self) -> usize {
        self.recent.release()
    }

    /// Runs of bytes held out of order (at most [`MAX_HELD_RUNS`] between segments).
    pub fn held_runs(&self) -> usize {
        self.held.len()
    }

    /// Takes one segment; deliveries go to `out` in stream order.
    pub fn segment(&mut self, seg: Segment<'_>, out: &mut impl FnMut(Delivery<'_>)) {
        if self.is_finished() {
            return;
        }
        let claimed = seg.payload.len() as u64 + u64::from(seg.missing_len);
        // Data on a SYN starts one after the SYN's own sequence number.
        let data_seq = if seg.syn {
            seg.seq.wrapping_add(1)
        } else {
            seg.seq
        };
        if let Life::Unstarted = self.life {
            // Without a SYN, only a segment that carries data or a FIN fixes where the
            // stream starts: a bare ACK or a keep-alive (seq one below the next byte)
            // would put the origin one byte early.
            if !seg.syn && claimed == 0 && !seg.fin {
                return;
            }
            let space = SeqSpace::new(data_seq);
            self.life = Life::Open {
                space,
                fin_at: None,
            };
        }
        let Some(space) = self.life.space() else {
            return;
        };
        let Some(start) = space.offset(data_seq, self.next) else {
            return; // before the stream began: an old retransmission
        };
        let end = start.saturating_add(claimed);
        if let Life::Open {
            fin_at: None,
            space,
        } = self.life
        {
            if seg.fin {
                self.life = Life::Open {
                    space,
                    fin_at: Some(end),
                };
            }
        }
        if start < self.next {
            self.check_overlap(start, &seg, out);
        }
        if end > self.next {
            if start <= self.next {
                let missing_len = u64::from(seg.missing_len);
                self.deliver(start, seg.payload, missing_len, seg.at, seg.spot, out);
                self.drain(Some(seg.at), out);
            } else if claimed > 0 {
                self.hold(start, seg, out);
            }
        }
        self.check_fin(seg.at, out);
    }

    /// Delivers the part of a segment at `start` that lies at or after `next`.
    fn deliver(
        &mut self,
        start: u64,
        payload: &[u8],
        missing_len: u64,
        at: PacketRef,
        spot: Option<FileSpot>,
        out: &mut impl FnMut(Delivery<'_>),
    ) {
        let skip = usize::try_from(self.next - start).unwrap_or(usize::MAX);
        if let Some(fresh) = payload.get(skip..) {
            if !fresh.is_empty() {
                out(Delivery::Data(fresh, at));
                let spot = spot.and_then(|s| s.advanced(skip as u64));
                self.recent.push(self.next, fresh, spot);
            }
            self.next += fresh.len() as u64;
        }
        let end = start + payload.len() as u64 + missing_len;
        if end > self.next {
            out(Delivery::Gap {
                len: end - self.next,
                at,
            });
            self.next = end;
            self.recent.clear();
        }
    }

    /// A segment at `start` re-sends bytes already delivered: compares the part we still
    /// remember and reports a conflict if they differ (the first bytes stand).
    fn check_overlap(&self, start: u64, seg: &Segment<'_>, out: &mut impl FnMut(Delivery<'_>)) {
        let remembered_from = self.next - self.recent.len() as u64;
        let from = start.max(remembered_from);
        let to = (start + seg.payload.len() as u64).min(self.next);
        if from >= to {
            return;
        }
        let (Ok(new_at), Ok(len)) = (usize::try_from(from - start), usize::try_from(to - from))
        else {
            return;
        };
        let Some(new) = seg.payload.get(new_at..new_at + len) else {
            return;
        };
        let len = len as u64;
        let at = seg.at;
        match self.recent.compare(from, new, seg.recall) {
            Compared::Same => {}
            Compared::Different => out(Delivery::Conflict {
                offset: from,
                len,
                at,
            }),
            Compared::Unread => out(Delivery::Unread {
                offset: from,
                len,
                at,
            }),
        }
    }

    /// Takes a run out of `held`, uncounting its cost.
    fn take(&mut self, start: u64) -> Option<Run> {
        let run = self.held.remove(&start)?;
        self.held_cost = self.held_cost.saturating_sub(run.cost());
        Some(run)
    }

    /// Puts a run into `held`, counting its cost.
    fn put(&mut self, start: u64, run: Run) {
        self.held_cost += run.cost();
        if let Some(old) = self.held.insert(start, run) {
            self.held_cost = self.held_cost.saturating_sub(old.cost());
        }
    }

    /// Delivers held runs that the stream has reached. Their bytes became readable
    /// with packet `filled_by` (the one that closed the hole), or, at the end of the
    /// capture or past a hole declared lost, with the packets that carried them.
    fn drain(&mut self, filled_by: Option<PacketRef>, out: &mut impl FnMut(Delivery<'_>)) {
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > self.next {
                break;
            }
            let start = *entry.key();
            let mut run = entry.remove();
            self.held_cost = self.held_cost.saturating_sub(run.cost());
            if run.claimed_end(start) <= self.next {
                continue;
            }
            let data_end = run.data_end(start);
            let missing_len = run.missing_len;
            let data: &[u8] = run.data.make_contiguous();
            if let Some(at) = filled_by {
                self.deliver(start, data, missing_len, at, None, out);
                continue;
            }
            let mut marks = run.marks.iter().peekable();
            while let Some(&(from, at)) = marks.next() {
                let (to, missing) = match marks.peek() {
                    Some(next) => (next.0, 0),
                    None => (data_end, missing_len),
                };
                let piece = data
                    .get((from - start) as usize..(to - start) as usize)
                    .unwrap_or_default();
                self.deliver(from, piece, missing, at, None, out);
            }
        }
    }

    /// Holds a segment that arrived ahead of a hole. Bytes already held stay as first
    /// seen: only the parts of the new segment no held run covers are kept, and a copy
    /// that differs where they overlap is reported, once for the packet, as a conflict.
    /// The work is in the bytes the segment carries and those of the smaller runs it
    /// joins (never the larger), not in the number of runs held.
    fn hold(&mut self, start: u64, seg: Segment<'_>, out: &mut impl FnMut(Delivery<'_>)) {
        let data_end = start + seg.payload.len() as u64;
        if !seg.payload.is_empty() {
            let mut conflict = ConflictSpan::default();
            self.hold_data(start, seg.payload, seg.at, &mut conflict);
            conflict.report(seg.at, out);
        }
        if seg.missing_len > 0 {
            self.hold_missing(data_end, u64::from(seg.missing_len), seg.at);
        }
        while (self.held_cost > self.max_held_len || self.held.len() > MAX_HELD_RUNS)
            && !self.held.is_empty()
        {
            self.skip_hole(None, out);
        }
    }

    /// Holds the bytes `payload` from stream offset `start` (above `next`): they join
    /// the runs they overlap or touch into one.
    fn hold_data(
        &mut self,
        start: u64,
        payload: &[u8],
        at: PacketRef,
        conflict: &mut ConflictSpan,
    ) {
        let end = start + payload.len() as u64;
        // The runs that join: the one at or before `start` if its bytes reach it, and
        // all that start inside the new bytes or right after them.
        let mut joining: Vec<u64> = Vec::new();
        let mut tail_claim = 0; // where bytes the capture cut off end, past `end`
        if let Some((&key, run)) = self.held.range(..=start).next_back() {
            let (held_end, claimed_end) = (run.data_end(key), run.claimed_end(key));
            if held_end >= start {
                joining.push(key);
            } else if claimed_end > start {
                // Real bytes where that run had only cut-off ones: its cut tail ends
                // here, and what it claimed past the new bytes stays claimed.
                tail_claim = claimed_end;
                if let Some(run) = self.held.get_mut(&key) {
                    run.missing_len = start - held_end;
                }
            }
        }
        joining.extend(
            self.held
                .range((Bound::Excluded(start), Bound::Included(end)))
                .map(|(key, _)| *key),
        );
        let mut runs: Vec<(u64, Run)> = Vec::with_capacity(joining.len());
        for key in joining {
            if let Some(run) = self.take(key) {
                // the bytes both copies carry
                let from = key.max(start);
                let to = run.data_end(key).min(end);
                if from < to {
                    let new = payload
                        .get((from - start) as usize..(to - start) as usize)
                        .unwrap_or_default();
                    if !run.matches((from - key) as usize, new) {
                        conflict.add(from, to);
                    }
                }
                runs.push((key, run));
            }
        }
        // New bytes from `from` to `to`, with their packet.
        let fill = |from: u64, to: u64| {
            payload
                .get((from - start) as usize..(to - start) as usize)
                .unwrap_or_default()
        };
        let merged_start = runs.first().map_or(start, |(key, _)| (*key).min(start));
        if let Some((last_key, last)) = runs.last() {
            let last_end = last.data_end(*last_key).max(end);
            tail_claim = tail_claim.max(last.claimed_end(*last_key));
            tail_claim = tail_claim.max(last_end);
            let missing_len = tail_claim - last_end;
            // The largest run takes the others' bytes: each byte moved lands in a run
            // at least twice the one it left.
            let biggest = runs
                .iter()
                .enumerate()
                .max_by_key(|(_, (_, run))| run.data.len())
                .map_or(0, |(idx, _)| idx);
            let after = runs.split_off(biggest + 1);
            let Some((base_key, mut base)) = runs.pop() else {
                return;
            };
            let mut back = base.data_end(base_key);
            // before the base, from the nearest run back
            let mut front = base_key;
            for (key, run) in runs.into_iter().rev() {
                let run_end = run.data_end(key);
                if front > run_end {
                    base.prepend(fill(run_end, front), [(run_end, at)].into_iter());
                }
                base.absorb(run, false);
                front = key;
            }
            if front > start {
                base.prepend(fill(start, front), [(start, at)].into_iter());
            }
            // after it
            for (key, run) in after {
                if key > back {
                    base.append(fill(back, key), [(back, at)]);
                }
                back = run.data_end(key);
                base.absorb(run, true);
            }
            if end > back {
                base.append(fill(back, end), [(back, at)]);
            }
            base.missing_len = missing_len;
            self.put(merged_start, base);
        } else {
            let missing_len = tail_claim.saturating_sub(end);
            self.put(start, Run::new(payload, missing_len, (start, at)));
        }
    }

    /// Bytes from `from` for `len` were cut off by the capture: those past the held
    /// bytes there (real bytes win) become the cut tail of the run that reaches `from`,
    /// or a run of their own, up to the next run.
    fn hold_missing(&mut self, from: u64, len: u64, at: PacketRef) {
        let next_start = self
            .held
            .range((Bound::Excluded(from), Bound::Unbounded))
            .next()
            .map_or(u64::MAX, |(key, _)| *key);
        let claim_end = from.saturating_add(len).min(next_start);
        if let Some((&key, run)) = self.held.range_mut(..=from).next_back() {
            if run.claimed_end(key) >= from {
                // what is claimed past the run's real bytes joins its cut tail
                let held_end = run.data_end(key);
                run.missing_len = run.missing_len.max(claim_end.saturating_sub(held_end));
                return;
            }
        }
        if claim_end > from {
            self.put(from, Run::new(&[], claim_end - from, (from, at)));
        }
    }

    /// Declares the hole before the first held run lost and delivers what follows.
    /// The gap is placed at the first packet after the hole.
    fn skip_hole(&mut self, filled_by: Option<PacketRef>, out: &mut impl FnMut(Delivery<'_>)) {
        let Some((&first, run)) = self.held.iter().next() else {
            return;
        };
        if first > self.next {
            let at = run.marks.front().map(|mark| mark.1).unwrap_or_default();
            out(Delivery::Gap {
                len: first - self.next,
                at,
            });
            self.next = first;
        }
        self.drain(filled_by, out);
    }

    fn check_fin(&mut self, at: PacketRef, out: &mut impl FnMut(Delivery<'_>)) {
        let Life::Open {
            space,
            fin_at: Some(fin_at),
        } = self.life
        else {
            return;
        };
        if self.next >= fin_at && self.held.is_empty() {
            self.life = Life::Finished { space, fin_at };
            out(Delivery::Fin(at));
        }
    }

    /// The peer acknowledged everything before sequence number `ack`. A hole that lies
    /// before the end of the first held packet's bytes the peer has acknowledged will
    /// never be filled: its bytes reached the peer but not the capture. It is declared
    /// lost now, so that what follows is not held back while the other direction goes
    /// on. When the acknowledging segment `carries_data` (the peer answered), bytes
    /// acknowledged beyond all we saw are declared lost as well: a peer does not answer
    /// data it has not received, so they are not merely late in the capture.
    pub fn acked(
        &mut self,
        ack: u32,
        carries_data: bool,
        at: PacketRef,
        out: &mut impl FnMut(Delivery<'_>),
    ) {
        let Some(space) = self.life.space() else {
            return;
        };
        let Some(mut acked_to) = space.offset(ack, self.next) else {
            return;
        };
        // Only an answer proves the peer had the bytes: a bare ACK may overtake the
        // data it covers in a capture (two CPUs, two queues).
        if !carries_data || acked_to.saturating_sub(self.next) > MAX_ACK_JUMP {
            return;
        }
        while let Some((&first, run)) = self.held.iter().next() {
            // the end of the first packet's bytes in the run
            let first_end = run
                .marks
                .get(1)
                .map_or_else(|| run.claimed_end(first), |mark| mark.0);
            if first <= self.next || acked_to < first_end {
                break;
            }
            self.skip_hole(None, out);
        }
        if let Some(fin) = self.life.fin_at() {
            acked_to = acked_to.min(fin); // the FIN's own sequence number is no data
        }
        if self.held.is_empty() && !self.is_finished() && acked_to > self.next {
            out(Delivery::Gap {
                len: acked_to - self.next,
                at,
            });
            self.next = acked_to;
            self.recent.clear();
        }
        self.check_fin(at, out);
    }

    /// Panics unless the invariants of `held` hold (for tests).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut cost = 0;
        let mut prev_claimed_end = None;
        for (&key, run) in &self.held {
            cost += run.cost();
            assert!(key > self.next, "a held run at {key}, next {}", self.next);
            if let Some((end, cut)) = prev_claimed_end {
                assert!(key >= end, "runs overlap at {key}");
                assert!(key > end || cut, "runs touching at {key} are not merged");
            }
            prev_claimed_end = Some((run.claimed_end(key), run.missing_len > 0));
            assert_eq!(run.marks.front().map(|m| m.0), Some(key), "first mark");
            let mut last = key;
            for mark in &run.marks {
                assert!(mark.0 >= last && mark.0 <= run.data_end(key), "marks");
                last = mark.0;
            }
            assert!(!run.data.is_empty() || run.missing_len > 0, "empty run");
        }
        assert_eq!(cost, self.held_cost, "cost");
        assert!(self.held.len() <= MAX_HELD_RUNS);
        assert!(self.held_cost <= self.max_held_len || self.held.is_empty());
    }

    /// End of capture: what is held is delivered after declaring the holes lost.
    pub fn flush(&mut self, at: PacketRef, out: &mut impl FnMut(Delivery<'_>)) {
        while !self.held.is_empty() {
            self.skip_hole(None, out);
        }
        if let Some(fin) = self.life.fin_at() {
            if fin > self.next && !self.is_finished() {
                out(Delivery::Gap {
                    len: fin - self.next,
                    at,
                });
                self.next = fin;
            }
        }
        self.check_fin(at, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet_ref::NoRecall;

    fn at(frame: u64) -> PacketRef {
        PacketRef {
            frame,
            ..PacketRef::default()
        }
    }

    /// Runs segments through an assembler and records the stream as text:
    /// data as-is, gaps as `<gap N>`, FIN as `<fin>`.
    fn run(max_held: usize, segments: &[(u32, &[u8], bool, bool)]) -> String {
        let mut asm = Assembler::new(max_held);
        let mut out = String::new();
        let mut record = |d: Delivery<'_>| match d {
            Delivery::Data(bytes, _) => out.push_str(std::str::from_utf8(bytes).unwrap()),
            Delivery::Gap { len, .. } => out.push_str(&format!("<gap {len}>")),
            Delivery::Fin(_) => out.push_str("<fin>"),
            Delivery::Conflict { len, .. } => out.push_str(&format!("<conflict {len}>")),
            Delivery::Unread { len, .. } => out.push_str(&format!("<unread {len}>")),
        };
        for (idx, (seq, payload, syn, fin)) in segments.iter().enumerate() {
            asm.segment(
                Segment {
                    seq: *seq,
                    syn: *syn,
                    fin: *fin,
                    payload,
                    missing_len: 0,
                    at: at(idx as u64 + 1),
                    spot: None,
                    recall: &NoRecall,
                },
                &mut record,
            );
        }
        asm.flush(at(99), &mut record);
        out
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn run_sizes_are_those_charged_for() {
        // RUN_OVERHEAD's figures assume these sizes
        assert_eq!(size_of::<Run>(), 72);
        assert_eq!(MARK_SIZE, 40);
    }

    #[test]
    fn in_order_with_syn_and_fin() {
        let s = run(
            1024,
            &[
                (100, b"", true, false),
                (101, b"abc", false, false),
                (104, b"", false, true),
            ],
        );
        assert_eq!(s, "abc<fin>");
    }

    #[test]
    fn out_of_order_held_until_hole_fills() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (4, b"def", false, false),
                (1, b"abc", false, false),
            ],
        );
        assert_eq!(s, "abcdef");
    }

    #[test]
    fn retransmissions_delivered_once() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (1, b"abc", false, false),
                (1, b"abc", false, false),
                (2, b"bcde", false, false),
                (7, b"g", false, false),
                (7, b"X", false, false),
                (6, b"f", false, false),
            ],
        );
        assert_eq!(s, "abcde<conflict 1>fg");
    }

    #[test]
    fn overlap_first_seen_wins() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (1, b"abc", false, false),
                (3, b"XYZ", false, false),
            ],
        );
        assert_eq!(s, "abc<conflict 1>YZ");
        let same = run(
            1024,
            &[
                (0, b"", true, false),
                (1, b"abc", false, false),
                (3, b"cYZ", false, false),
            ],
        );
        assert_eq!(same, "abcYZ");
    }

    #[test]
    fn hole_past_cap_becomes_gap() {
        let s = run(
            4,
            &[
                (0, b"", true, false),
                (1, b"ab", false, false),
                (5, b"efg", false, false),
                (8, b"hi", false, false),
            ],
        );
        assert_eq!(s, "ab<gap 2>efghi");
    }

    #[test]
    fn flush_declares_remaining_holes() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (1, b"ab", false, false),
                (6, b"fg", false, true),
            ],
        );
        assert_eq!(s, "ab<gap 3>fg<fin>");
    }

    #[test]
    fn stream_across_sequence_wrap() {
        let isn = u32::MAX - 2;
        let s = run(
            1024,
            &[
                (isn, b"", true, false),
                (isn.wrapping_add(1), b"ab", false, false),
                (isn.wrapping_add(3), b"cd", false, false),
                (isn.wrapping_add(5), b"ef", false, false),
            ],
        );
        assert_eq!(s, "abcdef");
    }

    #[test]
    fn midstream_start_takes_first_segment_as_origin() {
        let s = run(
            1024,
            &[(5000, b"xy", false, false), (5002, b"z", false, false)],
        );
        assert_eq!(s, "xyz");
    }

    #[test]
    fn snaplen_cut_is_gap_of_known_length() {
        let mut asm = Assembler::new(1024);
        let mut seen = Vec::new();
        asm.segment(
            Segment {
                seq: 0,
                syn: true,
                fin: false,
                payload: b"",
                missing_len: 0,
                at: at(1),
                spot: None,
                recall: &NoRecall,
            },
            &mut |_| {},
        );
        asm.segment(
            Segment {
                seq: 1,
                syn: false,
                fin: false,
                payload: b"ab",
                missing_len: 5,
                at: at(2),
                spot: None,
                recall: &NoRecall,
            },
            &mut |d| seen.push(format!("{d:?}")),
        );
        assert_eq!(seen.len(), 2);
        assert!(seen[1].contains("Gap { len: 5"), "{seen:?}");
    }

    #[test]
    fn conflicting_copies_of_held_data_are_reported() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (3, b"cd", false, false),
                (3, b"Cd", false, false),
                (1, b"ab", false, false),
            ],
        );
        assert_eq!(s, "<conflict 2>abcd");
    }

    #[test]
    fn data_on_syn_is_delivered() {
        let s = run(1024, &[(100, b"hi", true, false), (103, b"!", false, true)]);
        assert_eq!(s, "hi!<fin>");
    }

    #[test]
    fn peer_answer_acknowledging_unseen_bytes_is_a_gap() {
        let mut asm = Assembler::new(1024);
        let mut seen = Vec::new();
        let seg = Segment {
            seq: 0,
            syn: true,
            fin: false,
            payload: b"",
            missing_len: 0,
            at: at(1),
            spot: None,
            recall: &NoRecall,
        };
        asm.segment(seg, &mut |_| {});
        // a bare ACK for unseen bytes proves nothing yet (the data may come later)
        asm.acked(11, false, at(2), &mut |d| seen.push(format!("{d:?}")));
        assert!(seen.is_empty());
        // an answer does: the peer received 10 bytes we never saw
        asm.acked(11, true, at(3), &mut |d| seen.push(format!("{d:?}")));
        assert_eq!(seen.len(), 1);
        assert!(seen[0].starts_with("Gap { len: 10"), "{seen:?}");
    }

    #[test]
    fn bare_ack_ahead_of_a_hole_does_not_block_data() {
        // pure ACK at offset 4 (no payload), then data at 4, then the hole fills
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (5, b"", false, false),
                (5, b"efg", false, false),
                (1, b"abcd", false, false),
            ],
        );
        assert_eq!(s, "abcdefg");
    }

    #[test]
    fn keepalive_before_data_does_not_shift_the_origin() {
        // capture starts mid-stream with a keep-alive one below the next byte
        let s = run(
            1024,
            &[(4999, b"", false, false), (5000, b"abc", false, false)],
        );
        assert_eq!(s, "abc");
    }

    #[test]
    fn ack_after_fin_is_not_a_gap() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (1, b"ab", false, false),
                (3, b"", false, true),
                (4, b"", false, false),
            ],
        );
        assert_eq!(s, "ab<fin>");
    }

    #[test]
    fn longer_retransmission_at_same_offset_extends_held_data() {
        let s = run(
            1024,
            &[
                (0, b"", true, false),
                (4, b"de", false, false),
                (4, b"XYfg", false, false),
                (1, b"abc", false, false),
            ],
        );
        assert_eq!(s, "<conflict 2>abcdefg");
    }

    #[test]
    fn held_bytes_are_tagged_with_the_packet_that_filled_the_hole() {
        let mut asm = Assembler::new(1024);
        let mut frames = Vec::new();
        let seg = |seq, payload, frame| Segment {
            seq,
            syn: seq == 0,
            fin: false,
            payload,
            missing_len: 0,
            at: at(frame),
            spot: None,
            recall: &NoRecall,
        };
        asm.segment(seg(0, b"", 1), &mut |_| {});
        asm.segment(seg(3, b"cd", 2), &mut |_| {});
        asm.segment(seg(1, b"ab", 3), &mut |d| {
            if let Delivery::Data(bytes, at) = d {
                frames.push((bytes.to_vec(), at.frame));
            }
        });
        assert_eq!(frames, vec![(b"ab".to_vec(), 3), (b"cd".to_vec(), 3)]);
    }

    fn seg_at(seq: u32, payload: &[u8], frame: u64) -> Segment<'_> {
        Segment {
            seq,
            syn: seq == 0,
            fin: false,
            payload,
            missing_len: 0,
            at: at(frame),
            spot: None,
            recall: &NoRecall,
        }
    }

    #[test]
    fn a_retransmission_over_many_runs_merges_them_with_one_conflict() {
        let mut asm = Assembler::new(1 << 20);
        asm.segment(seg_at(0, b"", 1), &mut |_| {});
        // one-byte runs at offsets 2, 4, ..., 200 behind a hole at offset 0
        for i in 1..=100u32 {
            asm.segment(seg_at(1 + 2 * i, b"a", u64::from(i) + 1), &mut |_| {});
        }
        assert_eq!(asm.held_runs(), 100);
        asm.check_invariants();
        let mut seen = Vec::new();
        let over = vec![b'b'; 300];
        asm.segment(seg_at(2, &over, 200), &mut |d| seen.push(format!("{d:?}")));
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].starts_with("Conflict { offset: 2, len: 199"),
            "{seen:?}"
        );
        assert_eq!(asm.held_runs(), 1, "the holes filled: one run");
        asm.check_invariants();
        // the first copies stand, each from its packet once the hole is declared lost
        let mut frames = Vec::new();
        let mut stream = Vec::new();
        asm.flush(at(300), &mut |d| {
            if let Delivery::Data(bytes, at) = d {
                stream.extend_from_slice(bytes);
                frames.push((bytes.len(), at.frame));
            }
        });
        assert_eq!(stream.len(), 300);
        assert_eq!(&stream[..4], b"baba");
        assert_eq!(stream[199..].iter().filter(|b| **b == b'a').count(), 1);
        assert_eq!(frames[..3], [(1, 200), (1, 2), (1, 200)]);
        assert_eq!(frames.last(), Some(&(100, 200)));
    }

    #[test]
    fn held_runs_are_capped_in_number() {
        let mut asm = Assembler::new(usize::MAX);
        let mut gaps = 0;
        asm.segment(seg_at(0, b"", 1), &mut |_| {});
        for i in 1..=(MAX_HELD_RUNS as u32 + 10) {
            asm.segment(seg_at(1 + 2 * i, b"a", u64::from(i)), &mut |d| {
                gaps += u64::from(matches!(d, Delivery::Gap { .. }));
            });
            assert!(asm.held_runs() <= MAX_HELD_RUNS);
        }
        assert_eq!(asm.held_runs(), MAX_HELD_RUNS);
        assert_eq!(
            gaps, 10,
            "each run past the cap declares the first hole lost"
        );
        asm.check_invariants();
    }

    #[test]
    fn runs_are_charged_what_they_cost() {
        let mut asm = Assembler::new(usize::MAX);
        asm.segment(seg_at(0, b"", 1), &mut |_| {});
        asm.segment(seg_at(10, b"abc", 2), &mut |_| {});
        assert_eq!(asm.held_len(), RUN_OVERHEAD + 3 + MARK_SIZE);
        // touching bytes from another packet join the run and add a mark
        asm.segment(seg_at(13, b"d", 3), &mut |_| {});
        assert_eq!(asm.held_runs(), 1);
        asm.check_invariants();
        assert!(asm.held_len() >= RUN_OVERHEAD + 4 + 2 * MARK_SIZE);
        // a hole far off: a second run
        asm.segment(seg_at(100, b"z", 4), &mut |_| {});
        assert_eq!(asm.held_runs(), 2);
        asm.check_invariants();
        let mut out = String::new();
        asm.segment(seg_at(1, b"012345678", 5), &mut |d| {
            if let Delivery::Data(bytes, _) = d {
                out.push_str(std::str::from_utf8(bytes).unwrap());
            }
        });
        assert_eq!(out, "012345678abcd");
        assert_eq!(asm.held_runs(), 1);
        asm.check_invariants();
    }

    #[test]
    fn real_bytes_replace_a_cut_tail_and_keep_what_it_claimed_beyond() {
        let mut asm = Assembler::new(1024);
        let mut s = String::new();
        let mut record = |d: Delivery<'_>| match d {
            Delivery::Data(bytes, _) => s.push_str(std::str::from_utf8(bytes).unwrap()),
            Delivery::Gap { len, .. } => s.push_str(&format!("<gap {len}>")),
            _ => {}
        };
        asm.segment(seg_at(0, b"", 1), &mut record);
        // "d" at offset 3, then 4 bytes cut off (offsets 4..8)
        let mut cut = seg_at(4, b"d", 2);
        cut.missing_len = 4;
        asm.segment(cut, &mut record);
        // a copy of offsets 4 and 5 arrives whole
        asm.segment(seg_at(5, b"ef", 3), &mut record);
        asm.check_invariants();
        asm.segment(seg_at(1, b"abc", 4), &mut record);
        asm.segment(seg_at(9, b"ij", 5), &mut record);
        asm.flush(at(6), &mut record);
        assert_eq!(s, "abcdef<gap 2>ij");
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        #[derive(Debug, Clone)]
        enum Event {
            Segment(u32, Vec<u8>, u32),
            Ack(u32),
        }

        fn event() -> impl Strategy<Value = Event> {
            prop_oneof![
                8 => (
                    1u32..48,
                    prop::collection::vec(prop::sample::select(vec![b'a', b'b']), 0..10),
                    0u32..3,
                )
                    .prop_map(|(seq, payload, missing)| Event::Segment(seq, payload, missing)),
                1 => (0u32..60).prop_map(Event::Ack),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            /// Held runs stay disjoint, merged where they touch, marked from their start
            /// and counted at their cost under the cap; each packet raises at most one
            /// conflict; the stream is delivered once, in order, and whole by the end.
            #[test]
            fn held_runs_keep_their_invariants(
                cap in 0usize..3000,
                events in prop::collection::vec(event(), 0..60),
            ) {
                let mut asm = Assembler::new(cap);
                let mut delivered = 0u64;
                let mut conflicts = Vec::new();
                let mut frame = 0;
                let mut record = |d: Delivery<'_>| match d {
                    Delivery::Data(bytes, _) => delivered += bytes.len() as u64,
                    Delivery::Gap { len, .. } => delivered += len,
                    Delivery::Conflict { at, .. } => conflicts.push(at.frame),
                    Delivery::Fin(_) | Delivery::Unread { .. } => {}
                };
                asm.segment(seg_at(0, b"", 0), &mut record);
                let mut end = 0u64;
                for event in &events {
                    frame += 1;
                    match event {
                        Event::Segment(seq, payload, missing) => {
                            let mut seg = seg_at(*seq, payload, frame);
                            seg.missing_len = *missing;
                            let claimed = payload.len() as u64 + u64::from(*missing);
                            if claimed > 0 {
                                end = end.max(u64::from(*seq) - 1 + claimed);
                            }
                            asm.segment(seg, &mut record);
                        }
                        Event::Ack(ack) => asm.acked(*ack, true, at(frame), &mut record),
                    }
                    asm.check_invariants();
                }
                asm.flush(at(frame + 1), &mut record);
                let mut deduped = conflicts.clone();
                deduped.dedup();
                prop_assert_eq!(deduped, conflicts, "one conflict a packet");
                prop_assert!(delivered >= end, "{} of {}", delivered, end);
                prop_assert_eq!(asm.held_runs(), 0);
            }
        }
    }
}
