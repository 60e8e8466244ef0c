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
//! in the middle) the framer resynchronises: it looks at every position of the bytes that
//! follow for one where the handler finds a plausible head, confirmed (if the handler
//! asks) by a plausible head where it ends. A candidate is carried by its head alone to
//! where it ends, the bytes between counted, not kept; only a frame to decode, a chain of
//! unanchored responses, or bytes that may be read again as the other side's are held, in
//! a window of at most [`MAX_RESYNC_WINDOW`] bytes that remembers which packet brought
//! each. Once a head is confirmed the framer frames from there, in place and with each
//! byte's own packet; a rejection resumes the search after the rejected head. Nothing
//! recurses and nothing is copied twice, so the work per byte is bounded.

use crate::kafka::MALLOC_OVERHEAD;
use crate::packet_ref::PacketRef;

mod chain;
mod search;

use search::Window;

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
/// Candidates held by their heads alone while the stream runs on to where they end
/// (about 64 bytes each); past it, the worst is let go ([`search::FarCandidate`]).
const MAX_FAR_CANDIDATES: usize = 256;

/// A message read as its bytes pass rather than held (a Produce request): the framer
/// hands it every byte of the message (the prefix first) and every gap, then the reader
/// itself with the frame.
pub trait Streamed {
    fn bytes(&mut self, data: &[u8]);
    /// `len` bytes of the message are not in the capture.
    fn gap(&mut self, len: u32);
    /// Heap it holds.
    fn held_bytes(&self) -> usize;
}

/// The reader of a handler that reads no message as it passes.
#[derive(Debug)]
pub enum NoStream {}

impl Streamed for NoStream {
    fn bytes(&mut self, _: &[u8]) {
        match *self {}
    }
    fn gap(&mut self, _: u32) {
        match *self {}
    }
    fn held_bytes(&self) -> usize {
        match *self {}
    }
}

/// What to do with a frame once its size and header prefix are known.
#[derive(Debug)]
pub enum Decision<R> {
    /// Buffer the message and hand it over whole.
    Keep,
    /// Give its bytes to this reader as they pass, holding none.
    Stream(Box<R>),
    /// Count it and step over its bytes without buffering them.
    Skip,
    /// The size or prefix cannot be a Kafka frame; framing is lost.
    Reject,
}

/// A frame that has been read to its end.
#[derive(Debug)]
pub struct Frame<'a, R> {
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
    /// A frame that was being kept, whose bytes were dropped to stay within the memory
    /// budget (`message` is `None`).
    pub shed: bool,
    /// The reader a streamed message's bytes went to; `None` for any other, and for one
    /// to stream whose bytes had passed when its head was found (a search carried it).
    pub streamed: Option<Box<R>>,
    /// Packet that carried the first byte of the size.
    pub first: PacketRef,
    /// Packet that carried the last byte.
    pub last: PacketRef,
}

/// Receives framing decisions and finished frames.
pub trait FrameHandler {
    /// What reads the messages it streams.
    type Reader: Streamed;
    /// Called once per frame when its size and prefix are known (`prefix` may be shorter
    /// than `prefix_len` when the whole message is shorter).
    fn decide(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> Decision<Self::Reader>;
    fn frame(&mut self, frame: Frame<'_, Self::Reader>);
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
    /// Whether a plausible head, while it is not judged yet, keeps a later candidate from
    /// being taken (the search then judges candidates in stream order, so that the frames
    /// found do not depend on where packets end). Only strong evidence should: a weak
    /// head, met often inside other data, would hold good frames back until its made-up
    /// end came, and hand them over late. By default: one that anchors.
    fn holds_back(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> bool {
        self.anchors(len, prefix, at)
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
    /// Whether the bytes a search holds may be read again as the other side's (see
    /// [`Framer::retarget`]): then every candidate is waited for with its bytes, as one
    /// to decode is, instead of being carried by its head, and no byte is passed over
    /// while the window has room (one that is no head of this side's may be the other's).
    fn rereads_held_bytes(&self) -> bool {
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

/// What [`Framer::in_place`] did with the start of the bytes it was given.
enum InPlace<'d> {
    /// Read a whole frame; the bytes after it.
    Done(&'d [u8]),
    /// The bytes do not start with a whole frame: left to the states.
    NotWhole,
    /// The head was rejected, and is in `head` as the states would have left it.
    Rejected { head_len: usize },
}

#[derive(Debug)]
enum State<R> {
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
    /// Stepping over a skipped message; `left` bytes still to come. `shed`: it was being
    /// kept (or streamed), and its bytes were dropped to stay within the memory budget.
    Skip { len: u32, left: u32, shed: bool },
    /// Giving a streamed message's bytes to its reader; `left` bytes still to come.
    Stream { len: u32, left: u32, reader: Box<R> },
    /// Looking for a frame head.
    Resync(Box<Window>),
}

/// Frame splitter for one direction of one connection, whose streamed messages (if
/// any) are read by `R`.
#[derive(Debug)]
pub struct Framer<R> {
    prefix_len: usize,
    head: [u8; MAX_HEAD_LEN],
    head_len: usize,
    first: Option<PacketRef>,
    state: State<R>,
    /// Unit tests turn [`Framer::in_place`] off, to hold it to what the states do.
    #[cfg(test)]
    in_place: bool,
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

impl<R: Streamed> Framer<R> {
    /// A framer whose head holds the size and `prefix_len` bytes of header (1 to
    /// [`MAX_PREFIX_LEN`]).
    pub fn new(prefix_len: usize) -> Self {
        Self {
            prefix_len: prefix_len.clamp(1, MAX_PREFIX_LEN),
            head: [0; MAX_HEAD_LEN],
            head_len: 0,
            first: None,
            state: State::Head,
            #[cfg(test)]
            in_place: true,
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

    /// While searching: the frames of at most `max_len` bytes its held bytes read as
    /// whole, for what a connection given up or ended holds unframed (see
    /// [`Window::whole_frames`](search::Window::whole_frames)). None otherwise: with
    /// framing known, every whole frame was handed over.
    pub fn held_whole_frames(&self, max_len: usize) -> Vec<&[u8]> {
        match &self.state {
            State::Resync(w) => w.whole_frames(max_len),
            _ => Vec::new(),
        }
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

    /// Bytes this framer holds: a kept message's buffer and the search's window, at their
    /// allocated sizes, and the heads of carried candidates.
    pub fn held_bytes(&self) -> usize {
        match &self.state {
            State::Keep { buf, .. } => buf.capacity() + MALLOC_OVERHEAD,
            State::Resync(w) => size_of::<Window>() + MALLOC_OVERHEAD + w.held_bytes(),
            State::Stream { reader, .. } => size_of::<R>() + MALLOC_OVERHEAD + reader.held_bytes(),
            State::Head | State::Skip { .. } => 0,
        }
    }

    /// Drops what this framer holds, to stay within the memory budget: a kept message
    /// goes on as a skipped one (handed over with [`Frame::shed`]), the search's window
    /// is passed over. Returns the bytes freed.
    pub fn shed(&mut self) -> usize {
        let before = self.held_bytes();
        match &mut self.state {
            State::Keep { len, seen, .. } => {
                let (len, left) = (*len, len.saturating_sub(*seen));
                self.state = State::Skip {
                    len,
                    left,
                    shed: true,
                };
            }
            State::Stream { len, left, .. } => {
                let (len, left) = (*len, *left);
                self.state = State::Skip {
                    len,
                    left,
                    shed: true,
                };
            }
            State::Resync(w) => {
                w.pass_over_all();
                // The carried heads go too: a search of many candidates holds more in
                // them than in its window.
                w.far = Vec::new();
            }
            State::Head | State::Skip { .. } => {}
        }
        before.saturating_sub(self.held_bytes())
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
    pub fn push(
        &mut self,
        data: &[u8],
        at: PacketRef,
        handler: &mut impl FrameHandler<Reader = R>,
    ) {
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
    fn run(
        &mut self,
        mut data: &[u8],
        at: PacketRef,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> Step {
        let total = data.len();
        while !data.is_empty() {
            if self.head_len == 0 && matches!(self.state, State::Head) && self.reads_in_place() {
                match self.in_place(data, at, handler) {
                    InPlace::Done(rest) => {
                        data = rest;
                        continue;
                    }
                    InPlace::NotWhole => {}
                    InPlace::Rejected { head_len } => {
                        return Step::Rejected {
                            end: total - data.len() + head_len,
                            head_len,
                        }
                    }
                }
            }
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
                State::Stream { left, reader, .. } => {
                    let take = (*left as usize).min(data.len());
                    let (now, rest) = data.split_at(take);
                    reader.bytes(now);
                    *left -= take as u32;
                    data = rest;
                    if *left == 0 {
                        self.finish_frame(at, handler);
                    }
                }
            }
        }
        Step::Consumed
    }

    /// Whether whole frames are read in place (always, but in some unit tests).
    fn reads_in_place(&self) -> bool {
        #[cfg(test)]
        return self.in_place;
        #[cfg(not(test))]
        true
    }

    /// A frame that `data` holds whole from its first byte (the common case for small
    /// messages): the handler reads it where it lies, with no buffer filled and no copy.
    /// What the states would do with it, done at once.
    fn in_place<'d>(
        &mut self,
        data: &'d [u8],
        at: PacketRef,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> InPlace<'d> {
        let Some(size) = data
            .get(..SIZE_LEN)
            .and_then(|b| <[u8; SIZE_LEN]>::try_from(b).ok())
            .map(i32::from_be_bytes)
        else {
            return InPlace::NotWhole;
        };
        let Some((len, body, rest)) =
            u32::try_from(size)
                .ok()
                .filter(|&len| len > 0)
                .and_then(|len| {
                    let (body, rest) = data.get(SIZE_LEN..)?.split_at_checked(len as usize)?;
                    Some((len, body, rest))
                })
        else {
            return InPlace::NotWhole;
        };
        let prefix = body
            .get(..body.len().min(self.prefix_len))
            .unwrap_or_default();
        let frame = |message, streamed| Frame {
            len,
            prefix,
            message,
            missing: 0,
            shed: false,
            streamed,
            first: at,
            last: at,
        };
        match handler.decide(size, prefix, at) {
            Decision::Keep => handler.frame(frame(Some(body), None)),
            Decision::Skip => handler.frame(frame(None, None)),
            Decision::Stream(mut reader) => {
                reader.bytes(prefix);
                reader.bytes(body.get(prefix.len()..).unwrap_or_default());
                handler.frame(frame(None, Some(reader)));
            }
            Decision::Reject => {
                // as the states leave a rejected head: in `head`, for the search
                let head_len = SIZE_LEN + prefix.len();
                if let (Some(dst), Some(src)) =
                    (self.head.get_mut(..head_len), data.get(..head_len))
                {
                    dst.copy_from_slice(src);
                }
                self.head_len = head_len;
                self.first = Some(at);
                return InPlace::Rejected { head_len };
            }
        }
        InPlace::Done(rest)
    }

    /// Called when the size and prefix are in: asks the handler what to do. `false`
    /// when the head is rejected.
    fn start_frame(&mut self, at: PacketRef, handler: &mut impl FrameHandler<Reader = R>) -> bool {
        let size = self.size().unwrap_or(-1);
        let prefix = self.head.get(SIZE_LEN..self.head_len).unwrap_or_default();
        let decision = handler.decide(size, prefix, at);
        let len = match u32::try_from(size) {
            Ok(len) if !matches!(decision, Decision::Reject) => len,
            _ => return false,
        };
        let got = prefix.len();
        self.state = match decision {
            Decision::Keep => {
                let mut buf = Vec::with_capacity((len as usize).min(INITIAL_KEEP_CAPACITY));
                buf.extend_from_slice(prefix);
                State::Keep {
                    len,
                    buf,
                    seen: got as u32,
                    missing: 0,
                }
            }
            Decision::Stream(mut reader) => {
                reader.bytes(prefix);
                State::Stream {
                    len,
                    left: len.saturating_sub(got as u32),
                    reader,
                }
            }
            Decision::Skip | Decision::Reject => State::Skip {
                len,
                left: len.saturating_sub(got as u32),
                shed: false,
            },
        };
        // A message no longer than its prefix is complete already.
        if got as u32 == len {
            self.finish_frame(at, handler);
        }
        true
    }

    fn finish_frame(&mut self, at: PacketRef, handler: &mut impl FrameHandler<Reader = R>) {
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
                shed: false,
                streamed: None,
                first,
                last: at,
            }),
            State::Skip { len, shed, .. } => handler.frame(Frame {
                len,
                prefix,
                message: None,
                missing: 0,
                shed,
                streamed: None,
                first,
                last: at,
            }),
            State::Stream { len, reader, .. } => handler.frame(Frame {
                len,
                prefix,
                message: None,
                missing: 0,
                shed: false,
                streamed: Some(reader),
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
    pub fn gap(
        &mut self,
        len: u64,
        at: PacketRef,
        handler: &mut impl FrameHandler<Reader = R>,
    ) -> GapEffect {
        // Bytes of the current frame still to come, where its size is known.
        let left = match &self.state {
            State::Skip { left, .. } | State::Stream { left, .. } => Some(*left),
            State::Keep { len, seen, .. } => Some(len.saturating_sub(*seen)),
            _ => None,
        };
        if let Some(left) = left {
            let inside = u32::try_from(len).map_or(left, |len| len.min(left));
            match &mut self.state {
                State::Skip { left, .. } => *left -= inside,
                State::Stream { left, reader, .. } => {
                    reader.gap(inside);
                    *left -= inside;
                }
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

    /// An unfinished frame at the end of the stream, if any: its bytes read, where it
    /// started, and its header prefix as far as it came (which names its API).
    pub fn unfinished(&self) -> Option<(u32, PacketRef, &[u8])> {
        let first = self.first?;
        let prefix = self.head.get(SIZE_LEN..self.head_len).unwrap_or_default();
        let read = match &self.state {
            State::Head if self.head_len > 0 => self.head_len as u32,
            State::Keep { seen, .. } => seen.saturating_add(SIZE_LEN as u32),
            State::Skip { len, left, .. } | State::Stream { len, left, .. } => {
                len.saturating_sub(*left).saturating_add(SIZE_LEN as u32)
            }
            _ => return None,
        };
        Some((read, first, prefix))
    }
}

#[cfg(test)]
mod tests;
