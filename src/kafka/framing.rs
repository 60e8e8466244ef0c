//! Kafka framing: splits one direction's reassembled bytes into length-prefixed frames.
//!
//! Each frame is an int32 size followed by that many bytes. Once the size and the header
//! prefix (`prefix_len` bytes: key, version, correlation id and client_id length for
//! requests, correlation id for responses) are in, the [`FrameHandler`] decides: keep the
//! frame (its bytes are buffered, for the few frames we decode), skip it (only a byte count
//! is kept, so a 100 MB Produce costs nothing), or reject it. A gap inside a frame whose
//! head was read costs nothing either: its size says where the next frame starts. A kept
//! frame that a gap went through is handed over with the bytes captured before the gap
//! and the count of those that were not ([`Frame::missing`]); nothing after the gap is
//! guessed at.
//!
//! When framing is lost (a rejected size, a gap we cannot step over, or a stream picked up
//! in the middle) the framer resynchronises: it keeps the bytes that follow in a window of
//! at most [`MAX_RESYNC_WINDOW`] bytes, remembering which packet brought each, and looks
//! for a position where the handler finds a plausible head, confirmed (if the handler
//! asks) by a plausible head right after it. It then frames the window from there, in
//! place and with each byte's own packet; a rejection inside the window resumes the
//! search after the rejected head. Nothing recurses and nothing is copied twice, so the
//! work per byte is bounded.

use crate::capture::PacketRef;

/// Bytes of the int32 size that starts every frame.
pub const SIZE_LEN: usize = 4;
/// Buffer reserved up front for a kept message.
const INITIAL_KEEP_CAPACITY: usize = 4096;
/// Longest header prefix a framer looks at.
pub const MAX_PREFIX_LEN: usize = 10;
/// Longest head: size plus prefix.
pub const MAX_HEAD_LEN: usize = SIZE_LEN + MAX_PREFIX_LEN;
/// Bytes kept while looking for a frame head after framing was lost.
pub const MAX_RESYNC_WINDOW: usize = 64 * 1024;
/// Heads followed from a candidate that does not anchor, looking for one that does.
const MAX_CHAIN_LINKS: usize = 64;
/// Candidates too long for the window, held by their heads alone while the stream runs
/// on to where they end: the first ones met are kept, later ones passed over.
const MAX_FAR_CANDIDATES: usize = 32;

/// What to do with a frame once its size and header prefix are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Buffer the message and hand it over whole.
    Keep,
    /// Count it and step over its bytes without buffering them.
    Skip,
    /// The size or prefix cannot be a Kafka frame; framing is lost.
    Reject,
}

/// A frame that has been read to its end.
#[derive(Debug)]
pub struct Frame<'a> {
    /// The size field: bytes after the 4-byte size.
    pub len: u32,
    /// The first bytes of the message (header prefix), at most the framer's `prefix_len`.
    pub prefix: &'a [u8],
    /// The message (without the size) for kept frames; `None` for skipped ones. When
    /// bytes of it were not captured, only those before the first gap.
    pub message: Option<&'a [u8]>,
    /// Bytes of the message that are not in the capture (0 when it is whole); those
    /// captured after the first gap are counted as present but not in `message`.
    pub missing: u32,
    /// Packet that carried the first byte of the size.
    pub first: PacketRef,
    /// Packet that carried the last byte.
    pub last: PacketRef,
}

/// Receives framing decisions and finished frames.
pub trait FrameHandler {
    /// Called once per frame when its size and prefix are known (`prefix` may be shorter
    /// than `prefix_len` when the whole message is shorter).
    fn decide(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> Decision;
    fn frame(&mut self, frame: Frame<'_>);
    /// While resynchronising: could a frame start here, in a byte that packet `at`
    /// brought? Should be strict and cheap: it is asked at every position.
    fn plausible(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> bool;
    /// Whether `next` (the head right after `first`) confirms `first`. By default: it
    /// is plausible too.
    fn confirms(&mut self, first: (i32, &[u8]), next: (i32, &[u8]), at: PacketRef) -> bool {
        let _ = first;
        self.plausible(next.0, next.1, at)
    }
    /// Whether a candidate head must be confirmed by the one after it.
    fn wants_confirmation(&self) -> bool {
        false
    }
    /// Whether a plausible head is known to be a frame by what it says (a response that
    /// answers a request we wait for). One that is not is believed only as a link of a
    /// chain of plausible heads, each where the one before ends, that reaches one that is:
    /// so the responses to requests sent before the capture started are framed too.
    fn anchors(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> bool {
        let _ = (len, prefix, at);
        true
    }
    /// Whether a candidate that ends exactly where the bytes seen so far end counts as
    /// confirmed (a message alone in its segments). Not while deciding what a
    /// connection is: a response misread as a request ends there just as well.
    fn confirms_at_data_end(&self) -> bool {
        true
    }
    /// Whether [`FrameHandler::decide`] would keep this frame (must agree with it). A
    /// candidate too long for the search window is held by its head alone, so one that
    /// would be kept is not carried: its bytes are gone by the time it is confirmed.
    fn would_keep(&mut self, len: i32, prefix: &[u8]) -> bool {
        let _ = (len, prefix);
        false
    }
    /// Framing was found again after passing over `skipped` bytes.
    fn resynced(&mut self, skipped: u64, at: PacketRef);
}

/// What a run of the ordinary states did with a slice.
enum Step {
    Consumed,
    /// A head was rejected; it ended just before index `end` of the slice and was
    /// `head_len` bytes long.
    Rejected {
        end: usize,
        head_len: usize,
    },
}

/// A candidate frame longer than the window: only its head is held, and it is confirmed
/// (like any other) by what the stream holds where it says it ends, however far that is
/// and whatever gaps lie between. Offsets count the search's bytes, gaps included.
#[derive(Debug, Clone)]
struct FarCandidate {
    start: u64,
    end: u64,
    size: i32,
    prefix: [u8; MAX_PREFIX_LEN],
    prefix_len: usize,
    first: PacketRef,
    /// Bytes the search had passed over before it.
    passed: u64,
}

impl FarCandidate {
    fn prefix(&self) -> &[u8] {
        self.prefix.get(..self.prefix_len).unwrap_or_default()
    }
}

/// The bytes held while looking for a head.
#[derive(Debug, Default)]
struct Window {
    /// Search offset of `bytes[0]`: bytes compacted away and gaps count.
    origin: u64,
    bytes: Vec<u8>,
    /// Where each push's bytes start in `bytes`, and the packet that brought them.
    arrivals: Vec<(usize, PacketRef)>,
    /// Bytes before this offset are done with (passed over or framed).
    base: usize,
    /// First offset not yet looked at as a candidate.
    scanned: usize,
    /// Candidates waiting for more bytes: (offset, length the window needs to decide).
    waiting: Vec<(usize, usize)>,
    /// Bytes passed over before `base` in this search.
    skipped: u64,
    /// Candidates too long for the window, in the order met.
    far: Vec<FarCandidate>,
    /// Packet that revealed the gap before `bytes[0]`, if the window starts after one.
    after_gap: Option<PacketRef>,
}

impl Window {
    fn append(&mut self, data: &[u8], at: PacketRef) {
        if data.is_empty() {
            return;
        }
        self.arrivals.push((self.bytes.len(), at));
        self.bytes.extend_from_slice(data);
    }

    /// Search offset just past the bytes held.
    fn end(&self) -> u64 {
        self.origin + self.bytes.len() as u64
    }

    /// Whether a packet's payload starts at `offset`: where a frame most often starts.
    fn starts_packet(&self, offset: usize) -> bool {
        self.arrivals
            .binary_search_by_key(&offset, |(start, _)| *start)
            .is_ok()
    }

    /// The packet that carried the byte before `offset` (or revealed the gap before it).
    fn packet_before(&self, offset: usize) -> PacketRef {
        match offset.checked_sub(1) {
            Some(last) => self.packet_at(last),
            None => self.after_gap.unwrap_or_else(|| self.packet_at(0)),
        }
    }

    /// The packet that brought the byte at `offset`.
    fn packet_at(&self, offset: usize) -> PacketRef {
        let idx = self.arrivals.partition_point(|(start, _)| *start <= offset);
        self.arrivals
            .get(idx.saturating_sub(1))
            .map(|(_, at)| *at)
            .unwrap_or_default()
    }

    /// Forgets everything before `offset`.
    fn compact(&mut self, offset: usize) {
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
    }
}

#[derive(Debug)]
enum State {
    /// Collecting the size and header prefix into `head`.
    Head,
    /// Buffering a kept message: `seen` of its `len` bytes have gone by, `missing` of
    /// them in gaps; `buf` holds those before the first gap (all while there is none).
    Keep {
        len: u32,
        buf: Vec<u8>,
        seen: u32,
        missing: u32,
    },
    /// Stepping over a skipped message; `left` bytes still to come.
    Skip { len: u32, left: u32 },
    /// Looking for a frame head.
    Resync(Box<Window>),
}

/// Frame splitter for one direction of one connection.
#[derive(Debug)]
pub struct Framer {
    prefix_len: usize,
    head: [u8; MAX_HEAD_LEN],
    head_len: usize,
    first: Option<PacketRef>,
    state: State,
}

/// What a gap did to the framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapEffect {
    /// The gap fell inside a skipped frame; framing continues.
    Absorbed,
    /// Framing is lost and a resync starts; `frame_lost` tells whether a started frame
    /// went with it.
    Lost { frame_lost: bool },
    /// Framing was already being searched for.
    AlreadyLost,
}

/// A candidate head at `offset`: its size and the range of its prefix, once all there.
fn head_at(
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
enum Verdict {
    Yes,
    No,
    /// Decidable once the window holds this many bytes.
    Wait(usize),
    /// Plausible, but it ends beyond what the window can hold: to be carried by its head.
    Far,
}

/// A confirmed candidate: at an offset of the window, or one carried by its head.
enum Found {
    Near(usize),
    Far(usize),
}

impl Framer {
    /// A framer whose head holds the size and `prefix_len` bytes of header (1 to
    /// [`MAX_PREFIX_LEN`]).
    pub fn new(prefix_len: usize) -> Self {
        Self {
            prefix_len: prefix_len.clamp(1, MAX_PREFIX_LEN),
            head: [0; MAX_HEAD_LEN],
            head_len: 0,
            first: None,
            state: State::Head,
        }
    }

    /// A framer that starts by looking for a frame head: for a stream picked up midway.
    pub fn resyncing(prefix_len: usize) -> Self {
        Self {
            state: State::Resync(Box::default()),
            ..Self::new(prefix_len)
        }
    }

    /// The same stream read as the other side's: a framer with `prefix_len` that starts
    /// by searching the bytes this one still holds (while it was searching too).
    pub fn retarget(self, prefix_len: usize) -> Self {
        let mut next = Self::resyncing(prefix_len);
        if let State::Resync(mut w) = self.state {
            w.scanned = w.base;
            w.waiting.clear();
            w.far.clear();
            next.state = State::Resync(w);
        }
        next
    }

    /// True while framing is being searched for.
    pub fn is_lost(&self) -> bool {
        matches!(self.state, State::Resync(_))
    }

    /// Bytes held while searching.
    pub fn resync_window_len(&self) -> usize {
        match &self.state {
            State::Resync(w) => w.bytes.len() - w.base,
            _ => 0,
        }
    }

    /// Bytes passed over in the current search, 0 when framing is not lost.
    pub fn resync_skipped(&self) -> u64 {
        match &self.state {
            State::Resync(w) => w.skipped + w.scanned.saturating_sub(w.base) as u64,
            _ => 0,
        }
    }

    /// True when the framer sits between frames, holding nothing.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Head) && self.head_len == 0
    }

    /// The size field once its 4 bytes are in.
    fn size(&self) -> Option<i32> {
        let bytes: [u8; SIZE_LEN] = self.head.get(..SIZE_LEN)?.try_into().ok()?;
        (self.head_len >= SIZE_LEN).then(|| i32::from_be_bytes(bytes))
    }

    fn head_wanted(&self) -> usize {
        self.size().map_or(SIZE_LEN, |size| {
            SIZE_LEN + usize::try_from(size).unwrap_or(0).min(self.prefix_len)
        })
    }

    /// Feeds in-order stream bytes carried by packet `at`.
    pub fn push(&mut self, data: &[u8], at: PacketRef, handler: &mut impl FrameHandler) {
        if let State::Resync(w) = &mut self.state {
            w.append(data, at);
            self.search(handler);
            return;
        }
        if let Step::Rejected { end, head_len } = self.run(data, at, handler) {
            // Look again from the byte after the rejected head's first one. The head's
            // last `in_data` bytes came with this push, the rest with earlier ones.
            let mut w = Box::<Window>::default();
            let in_data = head_len.min(end);
            let from_before = head_len - in_data;
            if from_before > 1 {
                w.append(
                    self.head.get(1..from_before).unwrap_or_default(),
                    self.first.unwrap_or(at),
                );
            }
            let data_from = end - in_data + usize::from(from_before == 0);
            w.append(data.get(data_from..).unwrap_or_default(), at);
            w.skipped = 1;
            self.reset_head();
            self.state = State::Resync(w);
            self.search(handler);
        }
    }

    fn reset_head(&mut self) {
        self.head_len = 0;
        self.first = None;
    }

    /// The ordinary states over `data`, until it is used up or a head is rejected.
    fn run(&mut self, mut data: &[u8], at: PacketRef, handler: &mut impl FrameHandler) -> Step {
        let total = data.len();
        while !data.is_empty() {
            match &mut self.state {
                State::Resync(_) => return Step::Consumed,
                State::Head => {
                    if self.head_len == 0 {
                        self.first = Some(at);
                    }
                    let wanted = self.head_wanted();
                    let take = wanted.saturating_sub(self.head_len).min(data.len());
                    let (now, rest) = data.split_at(take);
                    if let Some(dst) = self.head.get_mut(self.head_len..self.head_len + take) {
                        dst.copy_from_slice(now);
                    }
                    self.head_len += take;
                    data = rest;
                    let size = self.size();
                    if (self.head_len == self.head_wanted() && self.head_len > SIZE_LEN)
                        || size.is_some_and(|s| s <= 0)
                    {
                        let head_len = self.head_len;
                        if !self.start_frame(at, handler) {
                            return Step::Rejected {
                                end: total - data.len(),
                                head_len,
                            };
                        }
                    }
                }
                State::Keep { len, buf, seen, .. } => {
                    let want = len.saturating_sub(*seen) as usize;
                    let take = want.min(data.len());
                    let (now, rest) = data.split_at(take);
                    if buf.len() == *seen as usize {
                        buf.extend_from_slice(now); // no gap yet: the bytes run on
                    }
                    *seen += take as u32;
                    data = rest;
                    if seen == len {
                        self.finish_frame(at, handler);
                    }
                }
                State::Skip { left, .. } => {
                    let take = (*left as usize).min(data.len());
                    *left -= take as u32;
                    data = data.get(take..).unwrap_or_default();
                    if *left == 0 {
                        self.finish_frame(at, handler);
                    }
                }
            }
        }
        Step::Consumed
    }

    /// Judges the candidate at `offset` of the window.
    fn verdict(&self, w: &Window, offset: usize, handler: &mut impl FrameHandler) -> Verdict {
        let bytes = &w.bytes;
        let Some((size, prefix)) = head_at(bytes, offset, self.prefix_len) else {
            return Verdict::Wait(offset + SIZE_LEN + self.prefix_len);
        };
        let prefix = bytes.get(prefix).unwrap_or_default();
        let at = w.packet_at(offset);
        if size <= 0 || !handler.plausible(size, prefix, at) {
            return Verdict::No;
        }
        if !handler.wants_confirmation() {
            return Verdict::Yes;
        }
        let next = offset + SIZE_LEN + size as usize;
        if !handler.anchors(size, prefix, at) {
            return self.chain_verdict(w, offset, next, handler);
        }
        if next == bytes.len() && handler.confirms_at_data_end() {
            return Verdict::Yes; // it ends where the data seen so far ends
        }
        if next > bytes.len() {
            // A candidate whose end lies beyond what the search holds is not taken on
            // trust: a false one inside a big frame would step over the frames after it.
            return if next - offset > MAX_RESYNC_WINDOW {
                Verdict::Far
            } else if handler.confirms_at_data_end() {
                Verdict::Wait(next) // looked at again when the data reaches its end
            } else {
                Verdict::Wait(next + SIZE_LEN)
            };
        }
        match head_at(bytes, next, self.prefix_len) {
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
    /// follow it, each where the one before ends, must be plausible up to one that does.
    fn chain_verdict(
        &self,
        w: &Window,
        offset: usize,
        mut next: usize,
        handler: &mut impl FrameHandler,
    ) -> Verdict {
        let bytes = &w.bytes;
        if next > bytes.len() && next - offset > MAX_RESYNC_WINDOW {
            // Carried by its head only where a packet starts: a size and a correlation id
            // are met at a few bytes in a hundred inside other data.
            return if w.starts_packet(offset) {
                Verdict::Far
            } else {
                Verdict::No
            };
        }
        for _ in 0..MAX_CHAIN_LINKS {
            if next - offset > MAX_RESYNC_WINDOW {
                return Verdict::No;
            }
            let Some((size, prefix)) = head_at(bytes, next, self.prefix_len) else {
                return Verdict::Wait(next + SIZE_LEN + self.prefix_len);
            };
            let prefix = bytes.get(prefix).unwrap_or_default();
            let at = w.packet_at(next);
            if size <= 0 || !handler.plausible(size, prefix, at) {
                return Verdict::No;
            }
            if handler.anchors(size, prefix, at) {
                return Verdict::Yes;
            }
            next += SIZE_LEN + size as usize;
        }
        Verdict::No
    }

    /// The first confirmed candidate in the window, if any. Candidates waiting for bytes
    /// are looked at again as bytes arrive; every other position is looked at once.
    fn find(&self, w: &mut Window, handler: &mut impl FrameHandler) -> Option<Found> {
        let len = w.bytes.len();
        let mut found: Option<usize> = None;
        let waiting = std::mem::take(&mut w.waiting);
        for (candidate, need) in waiting {
            if need > len {
                w.waiting.push((candidate, need));
                continue;
            }
            match self.verdict(w, candidate, handler) {
                Verdict::Yes => found = Some(found.map_or(candidate, |f| f.min(candidate))),
                Verdict::Wait(need) => w.waiting.push((candidate, need)),
                Verdict::Far => Self::carry(self.prefix_len, w, candidate, handler),
                Verdict::No => {}
            }
        }
        while found.is_none() && w.scanned + SIZE_LEN <= len {
            let offset = w.scanned;
            match self.verdict(w, offset, handler) {
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
        let far = self.confirmed_far(w, handler);
        match (found, far) {
            (Some(near), Some(idx))
                if w.far
                    .get(idx)
                    .is_some_and(|f| f.start < w.origin + near as u64) =>
            {
                Some(Found::Far(idx))
            }
            (Some(near), _) => Some(Found::Near(near)),
            (None, Some(idx)) => Some(Found::Far(idx)),
            (None, None) => None,
        }
    }

    /// Holds the candidate at `offset` by its head, to be confirmed where it ends.
    fn carry(prefix_len: usize, w: &mut Window, offset: usize, handler: &mut impl FrameHandler) {
        let Some((size, prefix_range)) = head_at(&w.bytes, offset, prefix_len) else {
            return;
        };
        let start = w.origin + offset as u64;
        if w.far.len() >= MAX_FAR_CANDIDATES || w.far.iter().any(|f| f.start == start) {
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
        w.far.push(FarCandidate {
            start,
            end: start + SIZE_LEN as u64 + u64::try_from(size).unwrap_or(0),
            size,
            prefix,
            prefix_len,
            first: w.packet_at(offset),
            passed: w.skipped + offset.saturating_sub(w.base) as u64,
        });
    }

    /// Judges a carried candidate once the stream reaches its end: what stands there must
    /// confirm it as a head after a candidate in the window would be confirmed.
    fn far_verdict(
        &self,
        w: &Window,
        f: &FarCandidate,
        handler: &mut impl FrameHandler,
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
            return match self.verdict(w, e, handler) {
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
    fn confirmed_far(&self, w: &mut Window, handler: &mut impl FrameHandler) -> Option<usize> {
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
            match self.far_verdict(w, f, handler) {
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
    fn search(&mut self, handler: &mut impl FrameHandler) {
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
                let keep_from = w
                    .waiting
                    .iter()
                    .map(|(c, _)| *c)
                    .chain(far_ends.filter(|e| *e <= w.bytes.len()))
                    .chain([w.scanned])
                    .min()
                    .unwrap_or(w.scanned)
                    .max(w.bytes.len().saturating_sub(MAX_RESYNC_WINDOW));
                if keep_from > w.base {
                    w.skipped += (keep_from - w.base) as u64;
                    w.base = keep_from;
                    w.waiting.retain(|(c, _)| *c >= keep_from);
                    w.scanned = w.scanned.max(keep_from);
                }
                if w.base > MAX_RESYNC_WINDOW {
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
    fn take_far(
        w: &mut Window,
        idx: usize,
        last: PacketRef,
        handler: &mut impl FrameHandler,
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
        if handler.decide(size, prefix, f.first) == Decision::Reject {
            return false;
        }
        handler.frame(Frame {
            len,
            prefix,
            message: None,
            missing: 0,
            first: f.first,
            last,
        });
        true
    }

    /// Frames the window from where the carried candidate `idx` ends, after handing that
    /// one over. Returns as [`Framer::frame_window_from`] does.
    fn frame_from_far(
        &mut self,
        mut w: Box<Window>,
        idx: usize,
        handler: &mut impl FrameHandler,
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
    fn frame_window_from(
        &mut self,
        mut w: Box<Window>,
        offset: usize,
        handler: &mut impl FrameHandler,
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
    fn candidate_ending_with_gap(
        prefix_len: usize,
        w: &Window,
        len: u64,
        handler: &mut impl FrameHandler,
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
    fn far_ending_at(w: &Window, end: u64, handler: &mut impl FrameHandler) -> Option<usize> {
        if !handler.confirms_at_data_end() {
            return None;
        }
        w.far
            .iter()
            .position(|f| f.end == end && handler.anchors(f.size, f.prefix(), f.first))
    }

    /// No head in the window spans a gap; the candidates whose frames run on past the gap
    /// are carried by their heads, the rest of the window is passed over.
    fn carry_over_gap(
        prefix_len: usize,
        w: &mut Window,
        gap_end: u64,
        at: PacketRef,
        handler: &mut impl FrameHandler,
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

    /// Looks through the held bytes again from where the search started: the handler's
    /// idea of what is plausible has changed (a response side that now waits for more
    /// requests).
    pub fn rescan(&mut self, handler: &mut impl FrameHandler) {
        if let State::Resync(w) = &mut self.state {
            w.scanned = w.base;
            w.waiting.clear();
            self.search(handler);
        }
    }

    /// Called when the size and prefix are in: asks the handler what to do. `false`
    /// when the head is rejected.
    fn start_frame(&mut self, at: PacketRef, handler: &mut impl FrameHandler) -> bool {
        let size = self.size().unwrap_or(-1);
        let prefix = self.head.get(SIZE_LEN..self.head_len).unwrap_or_default();
        let decision = handler.decide(size, prefix, at);
        let len = match u32::try_from(size) {
            Ok(len) if decision != Decision::Reject => len,
            _ => return false,
        };
        let got = prefix.len();
        self.state = if decision == Decision::Keep {
            let mut buf = Vec::with_capacity((len as usize).min(INITIAL_KEEP_CAPACITY));
            buf.extend_from_slice(prefix);
            State::Keep {
                len,
                buf,
                seen: got as u32,
                missing: 0,
            }
        } else {
            State::Skip {
                len,
                left: len.saturating_sub(got as u32),
            }
        };
        // A message no longer than its prefix is complete already.
        if got as u32 == len {
            self.finish_frame(at, handler);
        }
        true
    }

    fn finish_frame(&mut self, at: PacketRef, handler: &mut impl FrameHandler) {
        let state = std::mem::replace(&mut self.state, State::Head);
        let prefix = self.head.get(SIZE_LEN..self.head_len).unwrap_or_default();
        let first = self.first.unwrap_or(at);
        match state {
            State::Keep {
                len, buf, missing, ..
            } => handler.frame(Frame {
                len,
                prefix,
                message: Some(&buf),
                missing,
                first,
                last: at,
            }),
            State::Skip { len, .. } => handler.frame(Frame {
                len,
                prefix,
                message: None,
                missing: 0,
                first,
                last: at,
            }),
            State::Head | State::Resync(_) => {}
        }
        self.reset_head();
    }

    /// `len` bytes of the stream are missing at the current position. Inside a frame whose
    /// size is known they are stepped over; a gap that runs past the frame's end finishes
    /// it and loses the framing after it.
    pub fn gap(&mut self, len: u64, at: PacketRef, handler: &mut impl FrameHandler) -> GapEffect {
        // Bytes of the current frame still to come, where its size is known.
        let left = match &self.state {
            State::Skip { left, .. } => Some(*left),
            State::Keep { len, seen, .. } => Some(len.saturating_sub(*seen)),
            _ => None,
        };
        if let Some(left) = left {
            let inside = u32::try_from(len).map_or(left, |len| len.min(left));
            match &mut self.state {
                State::Skip { left, .. } => *left -= inside,
                State::Keep { seen, missing, .. } => {
                    *seen += inside;
                    *missing += inside;
                }
                _ => {}
            }
            if inside == left {
                self.finish_frame(at, handler);
            }
            if len <= u64::from(left) {
                return GapEffect::Absorbed;
            }
            // The gap runs on past the frame's end: the next frame's head is lost.
            self.state = State::Resync(Box::default());
            self.reset_head();
            return GapEffect::Lost { frame_lost: false };
        }
        match &mut self.state {
            State::Resync(w) => {
                let gap_end = w.end().saturating_add(len);
                let near = Self::candidate_ending_with_gap(self.prefix_len, w, len, handler);
                let far = Self::far_ending_at(w, gap_end, handler);
                let near_first = match (near, far.and_then(|idx| w.far.get(idx))) {
                    (Some(offset), Some(f)) => w.origin + (offset as u64) < f.start,
                    (near, _) => near.is_some(),
                };
                if let (Some(offset), true) = (near, near_first) {
                    let w = std::mem::take(w);
                    if self.frame_window_from(w, offset, handler) {
                        return self.gap(len, at, handler); // inside the frame just found
                    }
                } else if let Some(idx) = far {
                    if Self::take_far(w, idx, at, handler) {
                        // The gap ran to that frame's end: the next head follows it.
                        self.state = State::Head;
                        self.reset_head();
                        return GapEffect::Absorbed;
                    }
                }
                let State::Resync(w) = &mut self.state else {
                    return GapEffect::AlreadyLost;
                };
                Self::carry_over_gap(self.prefix_len, w, gap_end, at, handler);
                GapEffect::AlreadyLost
            }
            State::Head if self.head_len == 0 => {
                self.state = State::Resync(Box::default());
                GapEffect::Lost { frame_lost: false }
            }
            _ => {
                self.state = State::Resync(Box::default());
                self.reset_head();
                GapEffect::Lost { frame_lost: true }
            }
        }
    }

    /// Bytes of an unfinished frame at the end of the stream, if any.
    pub fn unfinished(&self) -> Option<(u32, PacketRef)> {
        let first = self.first?;
        match &self.state {
            State::Head if self.head_len > 0 => Some((self.head_len as u32, first)),
            State::Keep { seen, .. } => Some((seen.saturating_add(SIZE_LEN as u32), first)),
            State::Skip { len, left } => Some((
                len.saturating_sub(*left).saturating_add(SIZE_LEN as u32),
                first,
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Timestamp;

    /// len, prefix, message, first frame, last frame
    type Seen = (u32, Vec<u8>, Option<Vec<u8>>, u64, u64);

    #[derive(Default)]
    struct Recorder {
        frames: Vec<Seen>,
        decisions: Vec<(i32, Vec<u8>)>,
        keep_key: Option<u8>,
        resyncs: Vec<u64>,
        confirm: bool,
        /// `Frame::missing` of each frame.
        missing: Vec<u32>,
        /// Heads up to this size are plausible (1000 when 0).
        max_len: i32,
    }

    impl FrameHandler for Recorder {
        fn decide(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> Decision {
            self.decisions.push((len, prefix.to_vec()));
            if len < 0 {
                Decision::Reject
            } else if prefix.first().copied() == self.keep_key {
                Decision::Keep
            } else {
                Decision::Skip
            }
        }
        /// Test heads start with 7 or 9 and are short.
        fn plausible(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
            let max_len = if self.max_len == 0 {
                1000
            } else {
                self.max_len
            };
            len < max_len && matches!(prefix.first(), Some(7 | 9))
        }
        fn resynced(&mut self, skipped: u64, _at: PacketRef) {
            self.resyncs.push(skipped);
        }
        fn wants_confirmation(&self) -> bool {
            self.confirm
        }
        fn frame(&mut self, f: Frame<'_>) {
            self.missing.push(f.missing);
            self.frames.push((
                f.len,
                f.prefix.to_vec(),
                f.message.map(<[u8]>::to_vec),
                f.first.frame,
                f.last.frame,
            ));
        }
    }

    fn at(frame: u64) -> PacketRef {
        PacketRef {
            frame,
            timestamp: Timestamp::default(),
        }
    }

    fn frame_bytes(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn splits_many_frames_in_one_segment() {
        let mut data = frame_bytes(&[7, 1, 2, 3]);
        data.extend(frame_bytes(&[9, 9]));
        let mut framer = Framer::new(4);
        let mut rec = Recorder {
            keep_key: Some(7),
            ..Default::default()
        };
        framer.push(&data, at(1), &mut rec);
        assert_eq!(rec.frames.len(), 2);
        assert_eq!(rec.frames[0].2.as_deref(), Some(&[7, 1, 2, 3][..]));
        assert_eq!(rec.frames[1].2, None);
        assert_eq!(rec.frames[1].1, vec![9, 9]);
        assert!(framer.is_idle());
    }

    #[test]
    fn frame_spanning_segments_byte_by_byte() {
        let data = frame_bytes(&[7, 1, 2, 3, 4, 5]);
        let mut framer = Framer::new(4);
        let mut rec = Recorder {
            keep_key: Some(7),
            ..Default::default()
        };
        for (idx, byte) in data.iter().enumerate() {
            framer.push(&[*byte], at(idx as u64 + 1), &mut rec);
        }
        assert_eq!(rec.frames.len(), 1);
        let (len, _, message, first, last) = &rec.frames[0];
        assert_eq!(*len, 6);
        assert_eq!(message.as_deref(), Some(&[7, 1, 2, 3, 4, 5][..]));
        assert_eq!((*first, *last), (1, 10));
    }

    #[test]
    fn skipped_frame_is_not_buffered_and_absorbs_gaps() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder::default();
        // Announce a 100 MB frame, deliver 1 MB, lose 50 MB, deliver the rest.
        let len: u32 = 100 << 20;
        let mut head = len.to_be_bytes().to_vec();
        head.extend([0, 0, 0, 1]);
        framer.push(&head, at(1), &mut rec);
        let chunk = vec![0u8; 1 << 20];
        framer.push(&chunk, at(2), &mut rec);
        assert!(matches!(framer.state, State::Skip { .. }));
        assert_eq!(framer.gap(50 << 20, at(3), &mut rec), GapEffect::Absorbed);
        let rest = (len as usize) - 4 - (1 << 20) - (50 << 20);
        let mut sent = 0;
        while sent < rest {
            let n = chunk.len().min(rest - sent);
            framer.push(&chunk[..n], at(4), &mut rec);
            sent += n;
        }
        assert_eq!(rec.frames.len(), 1);
        assert_eq!(rec.frames[0].0, len);
        assert!(framer.is_idle());
    }

    #[test]
    fn gap_in_kept_frame_is_stepped_over_and_the_frame_handed_over_cut() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder {
            keep_key: Some(7),
            ..Default::default()
        };
        // 8 of a 10-byte frame's bytes, 1 lost, the last one, then a whole frame.
        framer.push(&frame_bytes(&[7, 1, 2, 3, 4, 5])[..8], at(1), &mut rec);
        assert_eq!(framer.gap(1, at(2), &mut rec), GapEffect::Absorbed);
        let mut data = vec![5];
        data.extend(frame_bytes(&[7, 0, 0, 0]));
        framer.push(&data, at(3), &mut rec);
        assert_eq!(rec.frames.len(), 2);
        // The captured bytes before the gap only: not the one after it.
        assert_eq!(rec.frames[0].0, 6);
        assert_eq!(rec.frames[0].2.as_deref(), Some(&[7, 1, 2, 3][..]));
        assert_eq!((rec.frames[0].3, rec.frames[0].4), (1, 3));
        assert_eq!(
            rec.missing,
            vec![1, 0],
            "one byte lost; the one after it was captured"
        );
        assert_eq!(rec.frames[1].2.as_deref(), Some(&[7, 0, 0, 0][..]));
        assert!(rec.resyncs.is_empty());
        assert!(framer.is_idle());
    }

    #[test]
    fn gap_past_a_frames_end_finishes_it_and_loses_the_framing_after() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder {
            keep_key: Some(7),
            ..Default::default()
        };
        framer.push(&frame_bytes(&[7, 1, 2, 3, 4, 5])[..8], at(1), &mut rec);
        // 2 bytes of the frame and 3 of what came next are lost.
        assert_eq!(
            framer.gap(5, at(2), &mut rec),
            GapEffect::Lost { frame_lost: false }
        );
        assert_eq!(rec.frames.len(), 1);
        assert_eq!(rec.frames[0].2.as_deref(), Some(&[7, 1, 2, 3][..]));
        assert!(framer.is_lost());
        // A skipped frame ends inside a gap too, and is counted.
        let mut framer = Framer::new(4);
        let mut rec = Recorder::default();
        framer.push(&frame_bytes(&[8, 1, 2, 3, 4, 5])[..8], at(1), &mut rec);
        assert_eq!(
            framer.gap(5, at(2), &mut rec),
            GapEffect::Lost { frame_lost: false }
        );
        assert_eq!(rec.frames.len(), 1);
        assert_eq!(rec.frames[0].2, None);
    }

    #[test]
    fn a_candidate_is_confirmed_when_a_later_push_ends_where_it_ends() {
        // Mid-stream: garbage, then a frame whose last bytes come in a second segment.
        // It is confirmed by that segment's end, not held until more bytes arrive.
        let mut framer = Framer::resyncing(4);
        let mut rec = Recorder {
            keep_key: Some(9),
            confirm: true,
            ..Default::default()
        };
        let mut data = vec![0xaa; 3];
        data.extend(frame_bytes(&[9, 1, 2, 3, 4, 5, 6, 7]));
        // The head (size and 4-byte prefix) and a byte more, then the rest.
        framer.push(&data[..12], at(1), &mut rec);
        assert!(rec.frames.is_empty());
        framer.push(&data[12..], at(2), &mut rec);
        assert_eq!(rec.frames.len(), 1, "confirmed by the end of the data");
        assert_eq!(
            rec.frames[0].2.as_deref(),
            Some(&[9, 1, 2, 3, 4, 5, 6, 7][..])
        );
        assert_eq!(rec.resyncs, vec![3]);
        assert!(framer.is_idle());
    }

    #[test]
    fn a_candidate_is_confirmed_when_a_gap_ends_where_it_ends() {
        // While searching: a segment whose snaplen kept a frame's head and 2 more bytes;
        // the gap after it ends exactly where the frame does (its wire length), so the
        // frame is taken, cut, and the next one is read in step.
        let mut framer = Framer::resyncing(4);
        let mut rec = Recorder {
            keep_key: Some(9),
            confirm: true,
            ..Default::default()
        };
        let mut data = vec![0xaa; 3];
        data.extend(&frame_bytes(&[9, 1, 2, 3, 4, 5, 6, 7])[..10]);
        framer.push(&data, at(1), &mut rec);
        assert!(rec.frames.is_empty());
        assert_eq!(framer.gap(2, at(1), &mut rec), GapEffect::Absorbed);
        assert_eq!(rec.frames.len(), 1);
        assert_eq!(rec.frames[0].2.as_deref(), Some(&[9, 1, 2, 3, 4, 5][..]));
        assert_eq!(rec.missing, vec![2]);
        framer.push(&frame_bytes(&[9, 0]), at(2), &mut rec);
        assert_eq!(rec.frames.len(), 2, "in step after it");
        // A gap that ends elsewhere confirms nothing.
        let mut framer = Framer::resyncing(4);
        let mut rec = Recorder {
            confirm: true,
            ..Default::default()
        };
        framer.push(&data, at(1), &mut rec);
        assert_eq!(framer.gap(3, at(1), &mut rec), GapEffect::AlreadyLost);
        assert!(rec.frames.is_empty());
    }

    #[test]
    fn resync_finds_a_head_split_across_pushes_after_garbage() {
        let mut framer = Framer::resyncing(4);
        let mut rec = Recorder {
            keep_key: Some(9),
            ..Default::default()
        };
        let mut data = vec![0xaa; 10];
        data.extend(frame_bytes(&[9, 1, 2]));
        framer.push(&data[..12], at(1), &mut rec);
        assert!(framer.is_lost());
        framer.push(&data[12..], at(2), &mut rec);
        assert_eq!(rec.resyncs, vec![10]);
        assert_eq!(rec.frames.len(), 1);
        assert_eq!(rec.frames[0].2.as_deref(), Some(&[9, 1, 2][..]));
    }

    #[test]
    fn resync_window_stays_bounded() {
        let mut framer = Framer::resyncing(4);
        let mut rec = Recorder::default();
        let junk = vec![0xaa; 4096];
        for _ in 0..100 {
            framer.push(&junk, at(1), &mut rec);
        }
        assert!(framer.resync_window_len() <= MAX_RESYNC_WINDOW);
        assert!(framer.resync_skipped() >= 400_000 - MAX_RESYNC_WINDOW as u64);
        assert!(rec.frames.is_empty());
    }

    #[test]
    fn gap_between_frames_resyncs_without_skipping() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder::default();
        framer.push(&frame_bytes(&[9, 9]), at(1), &mut rec);
        assert_eq!(
            framer.gap(6, at(2), &mut rec),
            GapEffect::Lost { frame_lost: false }
        );
        framer.push(&frame_bytes(&[9, 8]), at(3), &mut rec);
        assert_eq!(rec.frames.len(), 2);
        assert!(rec.resyncs.is_empty(), "found at once: nothing skipped");
    }

    #[test]
    fn negative_size_is_rejected() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder::default();
        framer.push(&[0xff, 0xff, 0xff, 0xff, 1, 2], at(1), &mut rec);
        assert_eq!(rec.decisions, vec![(-1, vec![])]);
        assert!(framer.is_lost());
    }

    #[test]
    fn message_shorter_than_prefix_and_empty_message() {
        let mut framer = Framer::new(8);
        let mut rec = Recorder::default();
        let mut data = frame_bytes(&[1, 2]);
        data.extend(frame_bytes(&[]));
        framer.push(&data, at(1), &mut rec);
        assert_eq!(rec.decisions, vec![(2, vec![1, 2]), (0, vec![])]);
        assert_eq!(rec.frames.len(), 2);
        assert!(framer.is_idle());
    }

    #[test]
    fn reports_unfinished_frame() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder::default();
        framer.push(&frame_bytes(&[1, 2, 3, 4, 5, 6])[..7], at(5), &mut rec);
        assert_eq!(framer.unfinished().map(|(n, p)| (n, p.frame)), Some((7, 5)));
    }

    /// A 200 KB frame's head, then `rest` of its other bytes, as one push.
    fn big_head(rest: usize) -> Vec<u8> {
        let mut v = 200_000u32.to_be_bytes().to_vec();
        v.extend([9, 0, 0, 1]);
        v.extend(vec![0u8; rest]);
        v
    }

    fn two_frames() -> Vec<u8> {
        let mut v = frame_bytes(&[7, 1, 2, 3]);
        v.extend(frame_bytes(&[9, 9]));
        v
    }

    fn big_recorder() -> Recorder {
        Recorder {
            confirm: true,
            max_len: 1 << 20,
            ..Default::default()
        }
    }

    #[test]
    fn a_frame_longer_than_the_window_is_confirmed_where_it_ends_across_a_gap() {
        let mut framer = Framer::resyncing(4);
        let mut rec = big_recorder();
        framer.push(&big_head(996), at(1), &mut rec); // 1004 of its 200,004 bytes
        assert_eq!(framer.gap(150_000, at(2), &mut rec), GapEffect::AlreadyLost);
        framer.push(&vec![0u8; 200_004 - 1004 - 150_000 - 10], at(3), &mut rec);
        assert!(rec.frames.is_empty(), "not confirmed before its end");
        let mut end = vec![0u8; 10];
        end.extend(two_frames());
        framer.push(&end, at(3), &mut rec);
        let lens: Vec<u32> = rec.frames.iter().map(|f| f.0).collect();
        assert_eq!(lens, vec![200_000, 4, 2]);
        assert_eq!((rec.frames[0].3, rec.frames[0].4), (1, 3));
        assert_eq!(rec.frames[0].2, None, "held by its head alone");
        assert!(rec.resyncs.is_empty(), "nothing was passed over");
        assert!(!framer.is_lost());
    }

    #[test]
    fn a_frame_longer_than_the_window_is_confirmed_by_a_gap_that_ends_with_it() {
        let mut framer = Framer::resyncing(4);
        let mut rec = big_recorder();
        framer.push(&big_head(96), at(1), &mut rec);
        // a snaplen-cut segment: the rest of the frame is missing, to its last byte
        assert_eq!(
            framer.gap(200_004 - 104, at(1), &mut rec),
            GapEffect::Absorbed
        );
        framer.push(&two_frames(), at(2), &mut rec);
        let lens: Vec<u32> = rec.frames.iter().map(|f| f.0).collect();
        assert_eq!(lens, vec![200_000, 4, 2]);
    }

    #[test]
    fn a_long_candidate_with_no_head_where_it_ends_is_let_go() {
        let mut framer = Framer::resyncing(4);
        let mut rec = big_recorder();
        framer.push(&big_head(996), at(1), &mut rec);
        // zeros past its end: nothing plausible there; then real frames
        framer.push(&vec![0u8; 250_000], at(2), &mut rec);
        framer.push(&two_frames(), at(3), &mut rec);
        framer.push(&two_frames(), at(4), &mut rec);
        let lens: Vec<u32> = rec.frames.iter().map(|f| f.0).collect();
        assert_eq!(lens, vec![4, 2, 4, 2]);
        assert_eq!(rec.resyncs, vec![1004 + 250_000]);
    }

    #[test]
    fn long_candidates_held_by_their_heads_are_bounded() {
        let mut framer = Framer::resyncing(4);
        let mut rec = big_recorder();
        let mut heads = Vec::new();
        for _ in 0..1000 {
            heads.extend(big_head(0));
        }
        framer.push(&heads, at(1), &mut rec);
        let State::Resync(w) = &framer.state else {
            panic!("still searching");
        };
        assert_eq!(w.far.len(), MAX_FAR_CANDIDATES);
        assert!(rec.frames.is_empty());
    }
}
