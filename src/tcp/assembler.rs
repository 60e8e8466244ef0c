//! Reassembly of one direction of a TCP connection into an ordered byte stream.
//!
//! Policy (see README "Reassembly"):
//! - bytes are delivered once, in order, each tagged with the packet that carried it;
//! - in-order segments are delivered straight from the packet, never copied;
//! - a segment ahead of the next expected byte is held (copied) until the hole fills;
//!   held bytes are capped, and past the cap the hole is declared lost (a gap);
//! - retransmitted bytes already delivered are dropped: the first copy seen wins;
//! - bytes cut by snaplen are a gap of known length;
//! - at the end of the capture, held data is delivered after declaring the holes lost.

use std::collections::BTreeMap;

use super::seq::SeqSpace;
use crate::capture::PacketRef;

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
}

impl Delivery<'_> {
    /// The packet that brought this delivery.
    pub fn at(&self) -> PacketRef {
        match self {
            Self::Data(_, at)
            | Self::Gap { at, .. }
            | Self::Fin(at)
            | Self::Conflict { at, .. } => *at,
        }
    }
}

/// Most recent delivered bytes kept per direction to check retransmissions against.
pub const RECENT_LEN: usize = 4096;
/// What one held segment costs beyond its bytes, counted against the cap so that
/// segments with few or no captured bytes cannot pile up unbounded.
const HELD_OVERHEAD: usize = 64;
/// An acknowledgment further ahead than this is not believed (a stray packet from an
/// earlier use of the address pair, or garbage).
const MAX_ACK_JUMP: u64 = 64 << 20;

/// The last bytes delivered, in a ring of [`RECENT_LEN`]: each delivery copies its tail
/// once, nothing is moved. The ring grows with the first bytes of the stream, so that the
/// many short connections of a busy listener cost what they carried, not a full ring.
#[derive(Debug, Default)]
struct Recent {
    /// While shorter than [`RECENT_LEN`], written at its end (`head == buf.len()`).
    buf: Vec<u8>,
    /// Bytes held, at most [`RECENT_LEN`].
    len: usize,
    /// Where the next byte goes.
    head: usize,
}

impl Recent {
    fn push(&mut self, data: &[u8]) {
        let tail = data
            .get(data.len().saturating_sub(RECENT_LEN)..)
            .unwrap_or(data);
        if self.buf.len() < RECENT_LEN {
            if self.buf.capacity() == 0 {
                // A quarter ring first: a short connection fits, a longer one grows twice.
                self.buf.reserve_exact(RECENT_LEN / 4);
            }
            if self.buf.len() + tail.len() <= RECENT_LEN {
                self.buf.extend_from_slice(tail);
                self.head = self.buf.len() % RECENT_LEN;
                self.len = (self.len + tail.len()).min(RECENT_LEN);
                return;
            }
            self.buf.resize(RECENT_LEN, 0);
        }
        let first = tail.len().min(RECENT_LEN - self.head);
        let (a, b) = tail.split_at(first);
        if let Some(dst) = self.buf.get_mut(self.head..self.head + a.len()) {
            dst.copy_from_slice(a);
        }
        if let Some(dst) = self.buf.get_mut(..b.len()) {
            dst.copy_from_slice(b);
        }
        self.head = (self.head + tail.len()) % RECENT_LEN;
        self.len = (self.len + tail.len()).min(RECENT_LEN);
    }

    fn len(&self) -> usize {
        self.len
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    /// Whether the held bytes from `offset` (0 = the oldest held) equal `data`.
    fn matches(&self, offset: usize, data: &[u8]) -> bool {
        let oldest = (self.head + RECENT_LEN - self.len) % RECENT_LEN;
        let start = (oldest + offset) % RECENT_LEN;
        let first = data.len().min(RECENT_LEN - start);
        let (a, b) = data.split_at(first);
        self.buf.get(start..start + a.len()) == Some(a) && self.buf.get(..b.len()) == Some(b)
    }
}

/// A segment held because it arrived ahead of a hole.
#[derive(Debug)]
struct Held {
    data: Vec<u8>,
    /// Bytes after `data` that the segment carried but the capture cut off.
    missing_len: u32,
    at: PacketRef,
}

/// Assembler for one direction.
///
/// Invariants: every key of `held` is above `next`, except transiently inside `drain`;
/// `held_len` is the sum of `data.len()` over `held`.
#[derive(Debug)]
pub struct Assembler {
    space: Option<SeqSpace>,
    /// Offset of the next byte to deliver.
    next: u64,
    /// Offset of the FIN, once seen.
    fin_at: Option<u64>,
    finished: bool,
    held: BTreeMap<u64, Held>,
    held_len: usize,
    max_held_len: usize,
    /// The last bytes delivered (at most [`RECENT_LEN`]), ending at `next`; a gap
    /// clears them.
    recent: Recent,
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
}

impl Assembler {
    pub fn new(max_held_len: usize) -> Self {
        Self {
            space: None,
            next: 0,
            fin_at: None,
            finished: false,
            held: BTreeMap::new(),
            held_len: 0,
            max_held_len,
            recent: Recent::default(),
        }
    }

    /// True once a SYN or the first segment fixed where the stream starts.
    pub fn is_started(&self) -> bool {
        self.space.is_some()
    }

    /// Sequence number of the next byte to deliver, once the stream has started.
    pub fn next_seq(&self) -> Option<u32> {
        self.space.map(|space| space.seq(self.next))
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Bytes held out of order.
    pub fn held_len(&self) -> usize {
        self.held_len
    }

    /// Takes one segment; deliveries go to `out` in stream order.
    pub fn segment(&mut self, seg: Segment<'_>, out: &mut impl FnMut(Delivery<'_>)) {
        if self.finished {
            return;
        }
        let claimed = seg.payload.len() as u64 + u64::from(seg.missing_len);
        // Data on a SYN starts one after the SYN's own sequence number.
        let data_seq = if seg.syn {
            seg.seq.wrapping_add(1)
        } else {
            seg.seq
        };
        if self.space.is_none() {
            // Without a SYN, only a segment that carries data or a FIN fixes where the
            // stream starts: a bare ACK or a keep-alive (seq one below the next byte)
            // would put the origin one byte early.
            if !seg.syn && claimed == 0 && !seg.fin {
                return;
            }
            self.space = Some(SeqSpace::new(data_seq));
        }
        let Some(space) = self.space else {
            return;
        };
        let Some(start) = space.offset(data_seq, self.next) else {
            return; // before the stream began: an old retransmission
        };
        let end = start.saturating_add(claimed);
        if seg.fin && self.fin_at.is_none() {
            self.fin_at = Some(end);
        }
        if start < self.next {
            self.check_overlap(start, seg.payload, seg.at, out);
        }
        if end > self.next {
            if start <= self.next {
                self.deliver(start, seg.payload, seg.missing_len, seg.at, out);
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
        missing_len: u32,
        at: PacketRef,
        out: &mut impl FnMut(Delivery<'_>),
    ) {
        let skip = usize::try_from(self.next - start).unwrap_or(usize::MAX);
        if let Some(fresh) = payload.get(skip..) {
            if !fresh.is_empty() {
                out(Delivery::Data(fresh, at));
                self.remember(fresh);
            }
            self.next += fresh.len() as u64;
        }
        let end = start + payload.len() as u64 + u64::from(missing_len);
        if end > self.next {
            out(Delivery::Gap {
                len: end - self.next,
                at,
            });
            self.next = end;
            self.recent.clear();
        }
    }

    /// Keeps the tail of what was just delivered for [`Self::check_overlap`].
    fn remember(&mut self, fresh: &[u8]) {
        self.recent.push(fresh);
    }

    /// A segment at `start` re-sends bytes already delivered: compares the part we still
    /// remember and reports a conflict if they differ (the first bytes stand).
    fn check_overlap(
        &self,
        start: u64,
        payload: &[u8],
        at: PacketRef,
        out: &mut impl FnMut(Delivery<'_>),
    ) {
        let remembered_from = self.next - self.recent.len() as u64;
        let from = start.max(remembered_from);
        let to = (start + payload.len() as u64).min(self.next);
        if from >= to {
            return;
        }
        let (Ok(new_at), Ok(old_at), Ok(len)) = (
            usize::try_from(from - start),
            usize::try_from(from - remembered_from),
            usize::try_from(to - from),
        ) else {
            return;
        };
        let new = payload.get(new_at..new_at + len);
        if let Some(new) = new {
            if !self.recent.matches(old_at, new) {
                out(Delivery::Conflict {
                    offset: from,
                    len: len as u64,
                    at,
                });
            }
        }
    }

    /// Delivers held segments that the stream has reached. Their bytes became readable
    /// with packet `filled_by` (the one that closed the hole), or, at the end of the
    /// capture, with the packet that carried them.
    fn drain(&mut self, filled_by: Option<PacketRef>, out: &mut impl FnMut(Delivery<'_>)) {
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > self.next {
                break;
            }
            let start = *entry.key();
            let held = entry.remove();
            self.held_len = self
                .held_len
                .saturating_sub(held.data.len() + HELD_OVERHEAD);
            if start + held.data.len() as u64 + u64::from(held.missing_len) > self.next {
                let at = filled_by.unwrap_or(held.at);
                self.deliver(start, &held.data, held.missing_len, at, out);
            }
        }
    }

    /// Holds a segment that arrived ahead of a hole. Bytes already held stay as first
    /// seen: only the parts of the new segment no held segment covers are kept, and a
    /// copy that differs where they overlap is reported as a conflict.
    fn hold(&mut self, start: u64, seg: Segment<'_>, out: &mut impl FnMut(Delivery<'_>)) {
        let data_end = start + seg.payload.len() as u64;
        let mut cursor = start;
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        // Held segments never overlap one another, so only the one before `start` and
        // those starting inside the new segment can overlap it.
        let before = self
            .held
            .range(..start)
            .next_back()
            .filter(|(s, h)| **s + h.data.len() as u64 + u64::from(h.missing_len) > start)
            .map(|(s, _)| *s);
        let overlapping: Vec<u64> = before
            .into_iter()
            .chain(
                self.held
                    .range(start..data_end.max(start + 1))
                    .map(|(s, _)| *s),
            )
            .collect();
        for held_start in overlapping {
            let Some(held) = self.held.get_mut(&held_start) else {
                continue;
            };
            let held_data_end = held_start + held.data.len() as u64;
            // compare the bytes both copies carry
            let from = held_start.max(start);
            let to = held_data_end.min(data_end);
            if from < to {
                let old = held
                    .data
                    .get((from - held_start) as usize..(to - held_start) as usize);
                let new = seg
                    .payload
                    .get((from - start) as usize..(to - start) as usize);
                if old != new {
                    out(Delivery::Conflict {
                        offset: from,
                        len: to - from,
                        at: seg.at,
                    });
                }
            }
            // real bytes where the held copy had only a snaplen-cut tail
            if held.missing_len > 0 && data_end > held_data_end {
                let claimed_end = held_data_end + u64::from(held.missing_len);
                held.missing_len = u32::try_from(claimed_end.saturating_sub(data_end)).unwrap_or(0);
            }
            if held_start > cursor {
                pieces.push((cursor, held_start.min(data_end)));
            }
            cursor = cursor.max(held_data_end);
        }
        if cursor < data_end {
            pieces.push((cursor, data_end));
        }
        let last_piece_end = pieces.last().map(|p| p.1);
        for (from, to) in pieces {
            let Some(bytes) = seg
                .payload
                .get((from - start) as usize..(to - start) as usize)
            else {
                continue;
            };
            // the segment's cut tail goes with its last piece
            let missing_len = if Some(to) == last_piece_end && to == data_end {
                seg.missing_len
            } else {
                0
            };
            self.held_len += bytes.len() + HELD_OVERHEAD;
            self.held.insert(
                from,
                Held {
                    data: bytes.to_vec(),
                    missing_len,
                    at: seg.at,
                },
            );
        }
        if seg.payload.is_empty() && seg.missing_len > 0 && !self.held.contains_key(&start) {
            // a segment captured with none of its payload: a known gap, held as such
            self.held_len += HELD_OVERHEAD;
            self.held.insert(
                start,
                Held {
                    data: Vec::new(),
                    missing_len: seg.missing_len,
                    at: seg.at,
                },
            );
        }
        while self.held_len > self.max_held_len && !self.held.is_empty() {
            self.skip_hole(None, out);
        }
    }

    /// Declares the hole before the first held segment lost and delivers what follows.
    /// The gap is placed at the first packet after the hole.
    fn skip_hole(&mut self, filled_by: Option<PacketRef>, out: &mut impl FnMut(Delivery<'_>)) {
        let Some((&first, held)) = self.held.iter().next() else {
            return;
        };
        if first > self.next {
            out(Delivery::Gap {
                len: first - self.next,
                at: held.at,
            });
            self.next = first;
        }
        self.drain(filled_by, out);
    }

    fn check_fin(&mut self, at: PacketRef, out: &mut impl FnMut(Delivery<'_>)) {
        if !self.finished && self.fin_at.is_some_and(|fin| self.next >= fin) && self.held.is_empty()
        {
            self.finished = true;
            out(Delivery::Fin(at));
        }
    }

    /// The peer acknowledged everything before sequence number `ack`. A hole that lies
    /// before the end of a held segment the peer has acknowledged will never be filled:
    /// its bytes reached the peer but not the capture. It is declared lost now, so that
    /// what follows is not held back while the other direction goes on. When the
    /// acknowledging segment `carries_data` (the peer answered), bytes acknowledged
    /// beyond all we saw are declared lost as well: a peer does not answer data it has
    /// not received, so they are not merely late in the capture.
    pub fn acked(
        &mut self,
        ack: u32,
        carries_data: bool,
        at: PacketRef,
        out: &mut impl FnMut(Delivery<'_>),
    ) {
        let Some(space) = self.space else {
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
        while let Some((&first, held)) = self.held.iter().next() {
            let held_end = first + held.data.len() as u64 + u64::from(held.missing_len);
            if first <= self.next || acked_to < held_end {
                break;
            }
            self.skip_hole(None, out);
        }
        if let Some(fin) = self.fin_at {
            acked_to = acked_to.min(fin); // the FIN's own sequence number is no data
        }
        if self.held.is_empty() && !self.finished && acked_to > self.next {
            out(Delivery::Gap {
                len: acked_to - self.next,
                at,
            });
            self.next = acked_to;
            self.recent.clear();
        }
        self.check_fin(at, out);
    }

    /// End of capture: what is held is delivered after declaring the holes lost.
    pub fn flush(&mut self, at: PacketRef, out: &mut impl FnMut(Delivery<'_>)) {
        while !self.held.is_empty() {
            self.skip_hole(None, out);
        }
        if let Some(fin) = self.fin_at {
            if fin > self.next && !self.finished {
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
                },
                &mut record,
            );
        }
        asm.flush(at(99), &mut record);
        out
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
    fn recent_ring_compares_across_its_wrap() {
        let mut r = Recent::default();
        let data: Vec<u8> = (0..=255u8).cycle().take(RECENT_LEN + 1000).collect();
        r.push(&data[..3000]);
        r.push(&data[3000..]);
        assert_eq!(r.len(), RECENT_LEN);
        let held = &data[data.len() - RECENT_LEN..];
        assert!(r.matches(0, held));
        assert!(r.matches(100, &held[100..2000]));
        let mut wrong = held[3000..3500].to_vec();
        wrong[7] ^= 1;
        assert!(!r.matches(3000, &wrong));
    }

    #[test]
    fn recent_ring_grows_only_with_what_it_holds() {
        let data: Vec<u8> = (0..=255u8).cycle().take(3 * RECENT_LEN).collect();
        let mut r = Recent::default();
        r.push(&data[..50]);
        assert!(
            r.buf.capacity() < RECENT_LEN,
            "a short stream needs no full ring"
        );
        assert!(r.matches(10, &data[10..50]));
        r.clear();
        r.push(&data[50..90]);
        assert_eq!(r.len(), 40);
        assert!(r.matches(0, &data[50..90]));
        // Small pushes across the point where the ring fills and wraps.
        let mut end = 90;
        for step in [1000, 1500, 2000, 700, 3000, 33] {
            r.push(&data[end..end + step]);
            end += step;
            let held = r.len();
            assert!(r.matches(0, &data[end - held..end]), "after {end} bytes");
        }
        assert_eq!(r.len(), RECENT_LEN);
        assert_eq!(r.buf.len(), RECENT_LEN);
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
}
