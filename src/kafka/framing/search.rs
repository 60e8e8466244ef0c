//! The search for a frame head after framing was lost: the candidates judged at each
//! position, carried by their heads to where they say they end, and the window that holds
//! only the bytes still needed (a head not yet all there, a frame to decode, a chain of
//! unanchored responses, or bytes that may be read again as the other side's).

use super::chain::{Chains, Outcome};
use super::*;

/// Room a search window keeps between pushes, however little it holds.
pub(super) const MIN_WINDOW_ROOM: usize = 256;

/// A candidate frame longer than the window: only its head is held, and it is confirmed
/// (like any other) by what the stream holds where it says it ends, however far that is
/// and whatever gaps lie between. Offsets count the search's bytes, gaps included.
#[derive(Debug, Clone)]
pub(super) struct FarCandidate {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) size: i32,
    pub(super) prefix: [u8; MAX_PREFIX_LEN],
    pub(super) prefix_len: usize,
    pub(super) first: PacketRef,
    /// Bytes the search had passed over before it.
    pub(super) passed: u64,
    /// Whether a packet's payload starts with it: where frames most often start.
    pub(super) at_packet_start: bool,
}

impl FarCandidate {
    pub(super) fn prefix(&self) -> &[u8] {
        self.prefix.get(..self.prefix_len).unwrap_or_default()
    }

    /// Which of two candidates to let go first when too many are carried: one inside a
    /// packet before one at a packet's start, then the one that ends farther away (a
    /// false head's made-up size is most often large, and a near end is judged soon).
    fn worse_than(&self, other: &Self) -> bool {
        (!self.at_packet_start, self.end) > (!other.at_packet_start, other.end)
    }
}

/// The bytes held while looking for a head.
#[derive(Debug, Default)]
pub(super) struct Window {
    /// Search offset of `bytes[0]`: bytes compacted away and gaps count.
    pub(super) origin: u64,
    pub(super) bytes: Vec<u8>,
    /// Where each push's bytes start in `bytes`, and the packet that brought them.
    pub(super) arrivals: Vec<(usize, PacketRef)>,
    /// Bytes before this offset are done with (passed over or framed).
    pub(super) base: usize,
    /// First offset not yet looked at as a candidate.
    pub(super) scanned: usize,
    /// Candidates waiting for more bytes: (offset, length the window needs to decide).
    pub(super) waiting: Vec<(usize, usize)>,
    /// Bytes passed over before `base` in this search.
    pub(super) skipped: u64,
    /// Candidates too long for the window, in the order met.
    pub(super) far: Vec<FarCandidate>,
    /// Packet that revealed the gap before `bytes[0]`, if the window starts after one.
    pub(super) after_gap: Option<PacketRef>,
}

impl Window {
    pub(super) fn append(&mut self, data: &[u8], at: PacketRef) {
        if data.is_empty() {
            return;
        }
        self.arrivals.push((self.bytes.len(), at));
        self.bytes.extend_from_slice(data);
    }

    /// Search offset just past the bytes held.
    pub(super) fn end(&self) -> u64 {
        self.origin + self.bytes.len() as u64
    }

    /// Whether a packet's payload starts at `offset`: where a frame most often starts.
    pub(super) fn starts_packet(&self, offset: usize) -> bool {
        self.arrivals
            .binary_search_by_key(&offset, |(start, _)| *start)
            .is_ok()
    }

    /// The packet that carried the byte before `offset` (or revealed the gap before it).
    pub(super) fn packet_before(&self, offset: usize) -> PacketRef {
        match offset.checked_sub(1) {
            Some(last) => self.packet_at(last),
            None => self.after_gap.unwrap_or_else(|| self.packet_at(0)),
        }
    }

    /// Bytes held, at their allocated sizes.
    /// Bytes held, at their allocated sizes, each allocation with malloc's overhead.
    pub(super) fn held_bytes(&self) -> usize {
        let allocation = |capacity: usize, each: usize| match capacity {
            0 => 0,
            n => n * each + MALLOC_OVERHEAD,
        };
        allocation(self.bytes.capacity(), 1)
            + allocation(self.arrivals.capacity(), size_of::<(usize, PacketRef)>())
            + allocation(self.waiting.capacity(), size_of::<(usize, usize)>())
            + allocation(self.far.capacity(), size_of::<FarCandidate>())
    }

    /// Passes over every byte held (the carried candidates stay): the search goes on
    /// from the next byte, with the window's memory given back.
    pub(super) fn pass_over_all(&mut self) {
        self.skipped += (self.bytes.len() - self.base) as u64;
        let origin = self.end();
        let after_gap = self.arrivals.last().map(|(_, at)| *at).or(self.after_gap);
        *self = Self {
            origin,
            skipped: self.skipped,
            far: std::mem::take(&mut self.far),
            after_gap,
            ..Self::default()
        };
    }

    /// The packet that brought the byte at `offset`.
    pub(super) fn packet_at(&self, offset: usize) -> PacketRef {
        let idx = self.arrivals.partition_point(|(start, _)| *start <= offset);
        self.arrivals
            .get(idx.saturating_sub(1))
            .map(|(_, at)| *at)
            .unwrap_or_default()
    }

    /// The frames of at most `max_len` bytes that the bytes held from `base` read as
    /// whole, each followed by nothing or by a run of whole frames, each where the one
    /// before ends, to exactly where the bytes end: what the stream may have held whole
    /// had it ended here. Not one followed by a head that runs past the end: inside the
    /// zeros of a long message, heads of made-up sizes are met at every byte. In stream
    /// order, without their size prefixes. One walk back over the bytes: a hostile
    /// window costs its length, not its square.
    pub(super) fn whole_frames(&self, max_len: usize) -> Vec<&[u8]> {
        let (base, len) = (self.base, self.bytes.len());
        // to_end[i]: whole frames from `base + i` reach exactly the end
        let mut to_end = vec![false; len.saturating_sub(base)];
        let mut frames = Vec::new();
        for offset in (base..len).rev() {
            let Some((size, _)) = head_at(&self.bytes, offset, 0).filter(|(s, _)| *s > 0) else {
                continue;
            };
            let next = offset + SIZE_LEN + size as usize;
            let reaches = next == len || to_end.get(next - base).copied().unwrap_or(false);
            if reaches && size as usize <= max_len {
                frames.extend(self.bytes.get(offset + SIZE_LEN..next));
            }
            if let Some(slot) = to_end.get_mut(offset - base) {
                *slot = reaches;
            }
        }
        frames.reverse();
        frames
    }

    /// Forgets everything before `offset`.
    pub(super) fn compact(&mut self, offset: usize) {
        let offset = offset.min(self.bytes.len());
        self.bytes.drain(..offset);
        let keep_from = self
            .arrivals
            .partition_point(|(start, _)| *start <= offset)
            .saturating_sub(1);
        self.arrivals.drain(..keep_from);
        for (start, _) in &mut self.arrivals {
            *start = start.saturating_sub(offset);
        }
        self.origin += offset as u64;
        self.base = self.base.saturating_sub(offset);
        self.scanned = self.scanned.saturating_sub(offset);
        self.waiting.retain(|(c, _)| *c >= offset);
        for (c, need) in &mut self.waiting {
            *c -= offset;
            *need = need.saturating_sub(offset);
        }
        // A push grows the window for a moment; what stays is most often a head's worth
        // (or a frame to decode), so the room beyond twice that is given back.
        let room = self.bytes.len().max(MIN_WINDOW_ROOM);
        if self.bytes.capacity() > 2 * room {
            self.bytes.shrink_to(room);
        }
        let carried = self.far.len().max(8);
        if self.far.capacity() > 4 * carried {
            self.far.shrink_to(carried);
        }
    }
}

/// A candidate head at `offset`: its size and the range of its prefix, once all there.
pub(super) fn head_at(
    bytes: &[u8],
    offset: usize,
    prefix_len: usize,
) -> Option<(i32, std::ops::Range<usize>)> {
    let size_end = offset.checked_add(SIZE_LEN)?;
    let size = i32::from_be_bytes(bytes.get(offset..size_end)?.try_into().ok()?);
    let prefix_end = size_end + usize::try_from(size).unwrap_or(0).min(prefix_len);
    bytes.get(size_end..prefix_end)?;
    Some((size, size_end..prefix_end))
}

/// What is known about a candidate so far.
pub(super) enum Verdict {
    Yes,
    No,
    /// Decidable once the window holds this many bytes.
    Wait(usize),
    /// Plausible, but it ends beyond what the window can hold: to be carried by its head.
    Far,
}

/// A confirmed candidate: at an offset of the window, or one carried by its head.
pub(super) enum Found {
    Near(usize),
    Far(usize),
}

impl<R: Streamed> Framer<R> {
    /// Judges the candidate at `offset` of the window.
    pub(super) fn verdict(
        &self,
        w: &Window,
        offset: usize,
        handler: &mut impl FrameHandler<Reader = R>,
        chains: &mut Chains,
    ) -> Verdict {
        let bytes = &w.bytes;
        let Some((size, prefix)) = head_at(bytes, offset, self.prefix_len) else {
            return Verdict::Wait(offset + SIZE_LEN + self.prefix_len);
        };
        if size <= 0 {
            return Verdict::No; // before finding the packet: the most common way out
        }
        let prefix = bytes.get(prefix).unwrap_or_default();
        let at = w.packet_at(offset);
        if !handler.plausible(size, prefix, at) {
            return Verdict::No;
        }
        if !handler.wants_confirmation() {
            return Verdict::Yes;
        }
        let next = offset + SIZE_LEN + size as usize;
        if !handler.anchors(size, prefix, at) {
            return self.chain_verdict(w, offset, next, handler, chains);
        }
        if next == bytes.len() && handler.confirms_at_data_end() {
            return Verdict::Yes; // it ends where the data seen so far ends
        }
        // Only a frame that would be decoded is waited for with its bytes; any other is
        // carried by its head to where it ends, and the bytes between are counted, not
        // kept.
        let keep = handler.would_keep(size, prefix) || handler.rereads_held_bytes();
        if next > bytes.len() {
            // A candidate whose end lies beyond what the search holds is not taken on
            // trust: a false one inside a big frame would step over the frames after it.
            return if !keep || next - offset > MAX_RESYNC_WINDOW {
                Verdict::Far
            } else if handler.confirms_at_data_end() {
                Verdict::Wait(next) // looked at again when the data reaches its end
            } else {
                Verdict::Wait(next + SIZE_LEN)
            };
        }
        match head_at(bytes, next, self.prefix_len) {
            None if !keep => Verdict::Far,
            None => Verdict::Wait(next + SIZE_LEN + self.prefix_len),
            Some((next_size, next_prefix)) => {
                let next_prefix = bytes.get(next_prefix).unwrap_or_default();
                if next_size > 0
                    && handler.confirms((size, prefix), (next_size, next_prefix), w.packet_at(next))
                {
                    Verdict::Yes
                } else {
                    Verdict::No
                }
            }
        }
    }

    /// A candidate that does not anchor (see [`FrameHandler::anchors`]): the heads that
    /// follow it, each where the one before ends, must be plausible up to one that does,
    /// within [`MAX_CHAIN_LINKS`] heads and the window.
    pub(super) fn chain_verdict(
        &self,
        w: &Window,
        offset: usize,
        next: usize,
        handler: &mut impl FrameHandler<Reader = R>,
        chains: &mut Chains,
    ) -> Verdict {
        if next > w.bytes.len() && next - offset > MAX_RESYNC_WINDOW {
            // Carried by its head only where a packet starts: a size and a correlation id
            // are met at a few bytes in a hundred inside other data.
            return if w.starts_packet(offset) {
                Verdict::Far
            } else {
                Verdict::No
            };
        }
        let end = chains.end_from(w, next, self.prefix_len, handler);
        if end.links > MAX_CHAIN_LINKS || end.at - offset > MAX_RESYNC_WINDOW {
            return Verdict::No;
        }
        match end.outcome {
            Outcome::Anchor => Verdict::Yes,
            Outcome::Implausible => Verdict::No,
            Outcome::Incomplete => Verdict::Wait(end.at + SIZE_LEN + self.prefix_len),
        }
    }

    /// The first confirmed candidate in the window, if any. Candidates waiting for bytes
    /// are looked at again as bytes arrive; every other position is looked at once.
    pub(super) fn find(
        &self,
        w: &mut Window,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> Option<Found> {
        let len = w.bytes.len();
        // the window's bytes do not change in a pass, so neither do its chains
        let mut chains = Chains::default();
        let mut found: Option<usize> = None;
        let waiting = std::mem::take(&mut w.waiting);
        for (candidate, need) in waiting {
            if need > len {
                w.waiting.push((candidate, need));
                continue;
            }
            match self.verdict(w, candidate, handler, &mut chains) {
                Verdict::Yes => found = Some(found.map_or(candidate, |f| f.min(candidate))),
                Verdict::Wait(need) => w.waiting.push((candidate, need)),
                Verdict::Far => Self::carry(self.prefix_len, w, candidate, handler),
                Verdict::No => {}
            }
        }
        while found.is_none() && w.scanned + SIZE_LEN <= len {
            let offset = w.scanned;
            match self.verdict(w, offset, handler, &mut chains) {
                Verdict::Yes => found = Some(offset),
                Verdict::No => {}
                Verdict::Far => Self::carry(self.prefix_len, w, offset, handler),
                Verdict::Wait(need) => {
                    if head_at(&w.bytes, offset, self.prefix_len).is_none() {
                        break; // this position's own head is not all there yet
                    }
                    w.waiting.push((offset, need));
                }
            }
            w.scanned += 1;
        }
        let far = self.confirmed_far(w, handler, &mut chains);
        let chosen = match (found, far) {
            (Some(near), Some(idx))
                if w.far
                    .get(idx)
                    .is_some_and(|f| f.start < w.origin + near as u64) =>
            {
                Found::Far(idx)
            }
            (Some(near), _) => Found::Near(near),
            (None, Some(idx)) => Found::Far(idx),
            (None, None) => return None,
        };
        let start = match chosen {
            Found::Near(offset) => w.origin + offset as u64,
            Found::Far(idx) => w.far.get(idx).map_or(0, |f| f.start),
        };
        if self.undecided_before(w, start, handler) {
            // Looked at again as bytes arrive, after those before it are judged.
            if let Found::Near(offset) = chosen {
                w.waiting.push((offset, len + 1));
            }
            return None;
        }
        Some(chosen)
    }

    /// Whether a candidate before search offset `start` that holds others back (see
    /// [`FrameHandler::holds_back`]) is not judged yet: then the later one is not taken,
    /// whatever the packets the bytes came in (a head inside a frame may end where a
    /// packet does, and be confirmed by that end, before the frame's own end is in).
    /// One carried by its head holds back only when it ends within a window of where it
    /// starts: a longer frame's end is too far to wait for.
    fn undecided_before(
        &self,
        w: &Window,
        start: u64,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> bool {
        let waiting = w.waiting.iter().any(|(c, _)| {
            w.origin + (*c as u64) < start
                && head_at(&w.bytes, *c, self.prefix_len).is_some_and(|(size, prefix)| {
                    let prefix = w.bytes.get(prefix).unwrap_or_default();
                    handler.holds_back(size, prefix, w.packet_at(*c))
                })
        });
        let bounded = |f: &FarCandidate| f.end - f.start <= MAX_RESYNC_WINDOW as u64;
        waiting
            || w.far.iter().any(|f| {
                f.start < start && bounded(f) && handler.holds_back(f.size, f.prefix(), f.first)
            })
    }

    /// Holds the candidate at `offset` by its head, to be confirmed where it ends.
    pub(super) fn carry(
        prefix_len: usize,
        w: &mut Window,
        offset: usize,
        handler: &mut impl FrameHandler<Reader = R>,
    ) {
        let Some((size, prefix_range)) = head_at(&w.bytes, offset, prefix_len) else {
            return;
        };
        let start = w.origin + offset as u64;
        if w.far.iter().any(|f| f.start == start) {
            return;
        }
        let prefix_bytes = w.bytes.get(prefix_range).unwrap_or_default();
        if handler.would_keep(size, prefix_bytes) {
            return;
        }
        let mut prefix = [0; MAX_PREFIX_LEN];
        let prefix_len = prefix_bytes.len().min(MAX_PREFIX_LEN);
        if let (Some(dst), Some(src)) =
            (prefix.get_mut(..prefix_len), prefix_bytes.get(..prefix_len))
        {
            dst.copy_from_slice(src);
        }
        let candidate = FarCandidate {
            start,
            end: start + SIZE_LEN as u64 + u64::try_from(size).unwrap_or(0),
            size,
            prefix,
            prefix_len,
            first: w.packet_at(offset),
            passed: w.skipped + offset.saturating_sub(w.base) as u64,
            at_packet_start: w.starts_packet(offset),
        };
        if w.far.len() < MAX_FAR_CANDIDATES {
            w.far.push(candidate);
            return;
        }
        // Full: the worst of those carried and the new one is let go.
        let worst = w
            .far
            .iter_mut()
            .reduce(|worst, f| if f.worse_than(worst) { f } else { worst });
        if let Some(worst) = worst.filter(|worst| worst.worse_than(&candidate)) {
            *worst = candidate;
        }
    }

    /// Judges a carried candidate once the stream reaches its end: what stands there must
    /// confirm it as a head after a candidate in the window would be confirmed.
    pub(super) fn far_verdict(
        &self,
        w: &Window,
        f: &FarCandidate,
        handler: &mut impl FrameHandler<Reader = R>,
        chains: &mut Chains,
    ) -> Verdict {
        // An end that fell into a gap, or was passed in a slid window, cannot confirm it.
        let Some(e) = f
            .end
            .checked_sub(w.origin)
            .and_then(|e| usize::try_from(e).ok())
        else {
            return Verdict::No;
        };
        let anchors = handler.anchors(f.size, f.prefix(), f.first);
        if e >= w.bytes.len() {
            return if e == w.bytes.len() && anchors && handler.confirms_at_data_end() {
                Verdict::Yes
            } else {
                Verdict::Wait(e + SIZE_LEN + self.prefix_len)
            };
        }
        if !anchors {
            // A link of a chain: the heads from its end on must reach an answer.
            return match self.verdict(w, e, handler, chains) {
                Verdict::Far => Verdict::No,
                other => other,
            };
        }
        match head_at(&w.bytes, e, self.prefix_len) {
            None => Verdict::Wait(e + SIZE_LEN + self.prefix_len),
            Some((size, prefix)) => {
                let prefix = w.bytes.get(prefix).unwrap_or_default();
                let confirmed = size > 0
                    && handler.confirms((f.size, f.prefix()), (size, prefix), w.packet_at(e));
                if confirmed {
                    Verdict::Yes
                } else {
                    Verdict::No
                }
            }
        }
    }

    /// The earliest carried candidate the window now confirms; those it refutes are let go.
    pub(super) fn confirmed_far(
        &self,
        w: &mut Window,
        handler: &mut impl FrameHandler<Reader = R>,
        chains: &mut Chains,
    ) -> Option<usize> {
        if w.far.is_empty() {
            return None;
        }
        let end = w.end();
        let mut far = std::mem::take(&mut w.far);
        let mut found = None;
        far.retain(|f| {
            if f.end > end {
                return true; // the stream is not there yet
            }
            match self.far_verdict(w, f, handler, chains) {
                Verdict::No => false,
                Verdict::Yes => {
                    found = Some(found.map_or(f.start, |s: u64| s.min(f.start)));
                    true
                }
                _ => true,
            }
        });
        w.far = far;
        let start = found?;
        w.far.iter().position(|f| f.start == start)
    }

    /// Looks for a head and frames from there, as long as the window allows.
    pub(super) fn search(&mut self, handler: &mut impl FrameHandler<Reader = R>) {
        loop {
            let State::Resync(w) = &mut self.state else {
                return;
            };
            let mut w = std::mem::take(w);
            let found = self.find(&mut w, handler);
            let Some(found) = found else {
                // Keep at most a window's worth, from what may still start a head (or
                // stand where a carried candidate ends).
                let origin = w.origin;
                let far_ends = w
                    .far
                    .iter()
                    .filter_map(move |f| usize::try_from(f.end.checked_sub(origin)?).ok());
                // Bytes that may be read again as the other side's are all kept.
                let needed_from = if handler.rereads_held_bytes() {
                    w.base
                } else {
                    w.waiting
                        .iter()
                        .map(|(c, _)| *c)
                        .chain(far_ends.filter(|e| *e <= w.bytes.len()))
                        .chain([w.scanned])
                        .min()
                        .unwrap_or(w.scanned)
                };
                let keep_from = needed_from.max(w.bytes.len().saturating_sub(MAX_RESYNC_WINDOW));
                if keep_from > w.base {
                    w.skipped += (keep_from - w.base) as u64;
                    w.base = keep_from;
                    w.waiting.retain(|(c, _)| *c >= keep_from);
                    w.scanned = w.scanned.max(keep_from);
                }
                // Compacted once the bytes done with are as many as those still held,
                // so each byte is moved a bounded number of times.
                if w.base > 0 && w.base >= w.bytes.len() - w.base {
                    w.compact(w.base);
                }
                self.state = State::Resync(w);
                return;
            };
            let framed = match found {
                Found::Near(offset) => self.frame_window_from(w, offset, handler),
                Found::Far(idx) => self.frame_from_far(w, idx, handler),
            };
            if framed {
                return; // the window is framed; ordinary states go on
            }
        }
    }

    /// Hands over the carried candidate `idx` of the window as a skipped frame ending at
    /// `last`, after reporting the bytes passed over before it. `false` when the handler
    /// turns it down now.
    pub(super) fn take_far(
        w: &mut Window,
        idx: usize,
        last: PacketRef,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> bool {
        if idx >= w.far.len() {
            return false;
        }
        let f = w.far.remove(idx);
        let (size, prefix) = (f.size, f.prefix());
        if handler.would_keep(size, prefix) {
            return false;
        }
        if f.passed > 0 {
            handler.resynced(f.passed, f.first);
        }
        let Ok(len) = u32::try_from(size) else {
            return false;
        };
        // A message to stream whose bytes have passed goes over as skipped.
        if matches!(handler.decide(size, prefix, f.first), Decision::Reject) {
            return false;
        }
        handler.frame(Frame {
            len,
            prefix,
            message: None,
            missing: 0,
            shed: false,
            streamed: None,
            first: f.first,
            last,
        });
        true
    }

    /// Frames the window from where the carried candidate `idx` ends, after handing that
    /// one over. Returns as [`Framer::frame_window_from`] does.
    pub(super) fn frame_from_far(
        &mut self,
        mut w: Box<Window>,
        idx: usize,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> bool {
        let end = w.far.get(idx).map(|f| f.end.saturating_sub(w.origin));
        let e = end.and_then(|e| usize::try_from(e).ok()).unwrap_or(0);
        let last = w.packet_before(e);
        if !Self::take_far(&mut w, idx, last, handler) {
            self.state = State::Resync(w);
            return false;
        }
        w.base = e;
        w.scanned = e;
        w.skipped = 0;
        w.waiting.clear();
        w.far.clear();
        self.frame_window_from(w, e, handler)
    }

    /// Frames the window from `offset`, each byte with the packet that brought it, after
    /// reporting the bytes passed over. `true` when ordinary states go on; `false` when a
    /// head in the window was rejected and the search is to go on after it.
    pub(super) fn frame_window_from(
        &mut self,
        mut w: Box<Window>,
        offset: usize,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> bool {
        let passed = w.skipped + (offset - w.base) as u64;
        if passed > 0 {
            handler.resynced(passed, w.packet_at(offset));
        }
        self.state = State::Head;
        self.reset_head();
        let mut pos = offset;
        let chunks: Vec<(usize, usize, PacketRef)> = w
            .arrivals
            .iter()
            .enumerate()
            .map(|(i, (start, at))| {
                let end = w.arrivals.get(i + 1).map_or(w.bytes.len(), |(s, _)| *s);
                (*start, end, *at)
            })
            .filter(|(_, end, _)| *end > offset)
            .collect();
        for (start, end, at) in chunks {
            let from = start.max(pos);
            let slice = w.bytes.get(from..end).unwrap_or_default();
            match self.run(slice, at, handler) {
                Step::Consumed => pos = end,
                Step::Rejected { end: e, head_len } => {
                    let restart = (from + e).saturating_sub(head_len) + 1;
                    self.reset_head();
                    w.skipped = 1;
                    w.base = restart;
                    w.scanned = restart;
                    w.waiting.clear();
                    self.state = State::Resync(w);
                    return false;
                }
            }
        }
        true
    }

    /// While searching, a gap of `len` bytes follows the window: the first candidate
    /// whose frame ends exactly where the gap does (a segment the snaplen cut, whose
    /// length on the wire the IP header gave) is confirmed by that end, as by the end of
    /// the data.
    pub(super) fn candidate_ending_with_gap(
        prefix_len: usize,
        w: &Window,
        len: u64,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> Option<usize> {
        if !handler.confirms_at_data_end() {
            return None;
        }
        let gap_end = u64::try_from(w.bytes.len()).ok()?.checked_add(len)?;
        let mut ends_with_gap = |c: usize| {
            head_at(&w.bytes, c, prefix_len).is_some_and(|(size, prefix)| {
                let prefix = w.bytes.get(prefix).unwrap_or_default();
                let at = w.packet_at(c);
                let end = (c + SIZE_LEN) as u64 + u64::try_from(size).unwrap_or(0);
                end == gap_end
                    && handler.plausible(size, prefix, at)
                    && handler.anchors(size, prefix, at)
            })
        };
        w.waiting
            .iter()
            .filter(|(_, need)| u64::try_from(*need).is_ok_and(|n| n == gap_end))
            .map(|(c, _)| *c)
            .filter(|c| ends_with_gap(*c))
            .min()
    }

    /// A carried candidate that ends exactly where a gap does, and anchors: confirmed by
    /// that end as by the end of the data.
    pub(super) fn far_ending_at(
        w: &Window,
        end: u64,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> Option<usize> {
        if !handler.confirms_at_data_end() {
            return None;
        }
        w.far
            .iter()
            .position(|f| f.end == end && handler.anchors(f.size, f.prefix(), f.first))
    }

    /// No head in the window spans a gap; the candidates whose frames run on past the gap
    /// are carried by their heads, the rest of the window is passed over.
    pub(super) fn carry_over_gap(
        prefix_len: usize,
        w: &mut Window,
        gap_end: u64,
        at: PacketRef,
        handler: &mut impl FrameHandler<Reader = R>,
    ) {
        let waiting = std::mem::take(&mut w.waiting);
        for (c, _) in waiting {
            let runs_past = head_at(&w.bytes, c, prefix_len).is_some_and(|(size, _)| {
                w.origin + (c + SIZE_LEN) as u64 + u64::try_from(size).unwrap_or(0) > gap_end
            });
            if runs_past {
                Self::carry(prefix_len, w, c, handler);
            }
        }
        w.skipped += (w.bytes.len() - w.base) as u64;
        let mut far = std::mem::take(&mut w.far);
        far.retain(|f| f.end >= gap_end);
        *w = Window {
            origin: gap_end,
            skipped: w.skipped,
            far,
            after_gap: Some(at),
            ..Window::default()
        };
    }

    /// The stream ended (its FIN came, every byte before it delivered) while framing
    /// was searched for: a candidate whose frame, or chain of plausible heads, ends
    /// exactly where the stream does is confirmed by that end, as one that anchors is
    /// by the end of the data. So a lone answer to a request sent before the capture,
    /// with nothing after it but the FIN, is counted. Not while deciding what a
    /// connection is (see [`FrameHandler::confirms_at_data_end`]).
    pub fn end_of_stream(&mut self, handler: &mut impl FrameHandler<Reader = R>) {
        let State::Resync(w) = &mut self.state else {
            return;
        };
        if !handler.confirms_at_data_end() {
            return;
        }
        let end = w.bytes.len();
        let mut chains = Chains::default();
        let near = (w.base..end).find(|&offset| {
            let Some((size, prefix)) = head_at(&w.bytes, offset, self.prefix_len) else {
                return false;
            };
            let prefix = w.bytes.get(prefix).unwrap_or_default();
            if size <= 0 || !handler.plausible(size, prefix, w.packet_at(offset)) {
                return false;
            }
            let next = offset.saturating_add(SIZE_LEN + size as usize);
            let chain = chains.end_from(w, next, self.prefix_len, handler);
            next == end
                || (chain.at == end
                    && chain.outcome == Outcome::Incomplete
                    && chain.links <= MAX_CHAIN_LINKS)
        });
        let stream_end = w.end();
        let far = w.far.iter().position(|f| f.end == stream_end);
        let far_first = match (near, far.and_then(|idx| w.far.get(idx))) {
            (Some(offset), Some(f)) => f.start < w.origin + offset as u64,
            (None, Some(_)) => true,
            _ => false,
        };
        let mut w = std::mem::take(w);
        match (far, near) {
            (Some(idx), _) if far_first => {
                let last = w.packet_before(end);
                Self::take_far(&mut w, idx, last, handler);
                self.state = State::Head;
                self.reset_head();
            }
            (_, Some(offset)) => {
                self.frame_window_from(w, offset, handler);
            }
            _ => self.state = State::Resync(w),
        }
    }

    /// Looks through the held bytes again from where the search started: the handler's
    /// idea of what is plausible has changed (a response side that now waits for more
    /// requests).
    pub fn rescan(&mut self, handler: &mut impl FrameHandler<Reader = R>) {
        if let State::Resync(w) = &mut self.state {
            w.scanned = w.base;
            w.waiting.clear();
            self.search(handler);
        }
    }
}
