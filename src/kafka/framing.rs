//! Kafka framing: splits one direction's reassembled bytes into length-prefixed frames.
//!
//! Each frame is an int32 size followed by that many bytes. Once the size and the header
//! prefix (`prefix_len` bytes: key, version, correlation id and client_id length for
//! requests, correlation id for responses) are in, the [`FrameHandler`] decides: keep the
//! frame (its bytes are buffered, for the few frames we decode), skip it (only a byte count
//! is kept, so a 100 MB Produce costs nothing), or reject it. A gap inside a skipped frame
//! costs nothing either: we know how many bytes to skip regardless.
//!
//! When framing is lost (a rejected size, a gap we cannot step over, or a stream picked up
//! in the middle) the framer resynchronises: it scans the bytes that follow, through a
//! window of at most [`MAX_RESYNC_WINDOW`] bytes, for a position where the handler finds a
//! plausible frame head, and reports how many bytes it passed over.

use crate::capture::PacketRef;

/// Bytes of the int32 size that starts every frame.
pub const SIZE_LEN: usize = 4;
/// Buffer reserved up front for a kept message.
const INITIAL_KEEP_CAPACITY: usize = 4096;
/// Longest header prefix a framer looks at.
pub const MAX_PREFIX_LEN: usize = 10;
/// Longest head: size plus prefix.
const MAX_HEAD_LEN: usize = SIZE_LEN + MAX_PREFIX_LEN;
/// Bytes kept while scanning for a frame head after framing was lost.
pub const MAX_RESYNC_WINDOW: usize = 64 * 1024;

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
    /// The whole message (without the size) for kept frames; `None` for skipped ones.
    pub message: Option<&'a [u8]>,
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
    /// While resynchronising: could a frame start here? Should be strict: a wrong yes
    /// misreads what follows.
    fn plausible(&mut self, len: i32, prefix: &[u8]) -> bool;
    /// Framing was found again after passing over `skipped` bytes.
    fn resynced(&mut self, skipped: u64, at: PacketRef);
    /// Whether a candidate head must be confirmed by the one after it.
    fn wants_confirmation(&self) -> bool {
        false
    }
}

#[derive(Debug)]
enum State {
    /// Collecting the size and header prefix into `head`.
    Head,
    /// Buffering a kept message; `buf` holds what has arrived so far.
    Keep { len: u32, buf: Vec<u8> },
    /// Stepping over a skipped message; `left` bytes still to come.
    Skip { len: u32, left: u32 },
    /// Scanning for a frame head. `window` holds bytes not yet ruled out, from offset
    /// `scanned` on not yet tried; `skipped` counts bytes passed over so far.
    Resync {
        window: Vec<u8>,
        scanned: usize,
        skipped: u64,
        /// Offset of a plausible candidate too large to confirm.
        fallback: Option<usize>,
    },
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

fn resync_state() -> State {
    State::Resync {
        window: Vec::new(),
        scanned: 0,
        skipped: 0,
        fallback: None,
    }
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
            state: resync_state(),
            ..Self::new(prefix_len)
        }
    }

    /// True while framing is being searched for.
    pub fn is_lost(&self) -> bool {
        matches!(self.state, State::Resync { .. })
    }

    /// Bytes looked at while searching, not yet ruled out.
    pub fn resync_window_len(&self) -> usize {
        match &self.state {
            State::Resync { window, .. } => window.len(),
            _ => 0,
        }
    }

    /// Bytes passed over in the current search, 0 when framing is not lost.
    pub fn resync_skipped(&self) -> u64 {
        match &self.state {
            State::Resync { skipped, .. } => *skipped,
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

    /// Head bytes wanted for a frame of size `size`: the size, then the prefix or the
    /// whole message if it is shorter.
    fn head_len_for(&self, size: i32) -> usize {
        SIZE_LEN + usize::try_from(size).unwrap_or(0).min(self.prefix_len)
    }

    fn head_wanted(&self) -> usize {
        self.size().map_or(SIZE_LEN, |size| self.head_len_for(size))
    }

    /// Feeds in-order stream bytes carried by packet `at`.
    pub fn push(&mut self, mut data: &[u8], at: PacketRef, handler: &mut impl FrameHandler) {
        while !data.is_empty() {
            match &mut self.state {
                State::Resync { .. } => {
                    self.scan(data, at, handler);
                    return;
                }
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
                    if self.head_len == self.head_wanted() && self.head_len > SIZE_LEN
                        || size.is_some_and(|s| s <= 0)
                    {
                        self.start_frame(at, handler);
                    }
                }
                State::Keep { len, buf } => {
                    let want = (*len as usize).saturating_sub(buf.len());
                    let take = want.min(data.len());
                    let (now, rest) = data.split_at(take);
                    buf.extend_from_slice(now);
                    data = rest;
                    if buf.len() == *len as usize {
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
    }

    /// The size and prefix of a candidate head at `offset` of `window`, once all its
    /// bytes are there.
    fn head_at(&self, window: &[u8], offset: usize) -> Option<(i32, std::ops::Range<usize>)> {
        let size_end = offset.checked_add(SIZE_LEN)?;
        let size = i32::from_be_bytes(window.get(offset..size_end)?.try_into().ok()?);
        let prefix_end = size_end + usize::try_from(size).unwrap_or(0).min(self.prefix_len);
        window.get(size_end..prefix_end)?;
        Some((size, size_end..prefix_end))
    }

    /// Resync: adds `data` to the window and looks for a frame head in it.
    ///
    /// A candidate must be plausible to the handler. If the handler asks for it, the
    /// candidate must also be confirmed: the next frame's head, right after it, is
    /// plausible too, or the candidate ends exactly where the bytes seen so far end. The
    /// first confirmed candidate wins, even past one still waiting for the bytes that
    /// would confirm it (those are looked at again as bytes arrive). A candidate too
    /// large to be confirmed within the window is kept as a fallback, taken only when
    /// the window is full and nothing better was found.
    fn scan(&mut self, data: &[u8], at: PacketRef, handler: &mut impl FrameHandler) {
        let confirm = handler.wants_confirmation();
        let State::Resync {
            mut window,
            mut scanned,
            mut skipped,
            mut fallback,
        } = std::mem::replace(&mut self.state, State::Head)
        else {
            return;
        };
        window.extend_from_slice(data);
        let mut found = None;
        // First candidate that still waits for bytes; scanning resumes there next time.
        let mut waiting = None;
        let mut offset = scanned;
        while let Some((size, prefix)) = self.head_at(&window, offset) {
            let candidate =
                size > 0 && handler.plausible(size, window.get(prefix).unwrap_or_default());
            if candidate {
                let next = offset + SIZE_LEN + usize::try_from(size).unwrap_or(usize::MAX);
                if !confirm || next == window.len() {
                    found = Some(offset);
                    break;
                }
                if next < window.len() {
                    match self.head_at(&window, next) {
                        None => {
                            waiting.get_or_insert(offset);
                        }
                        Some((next_size, next_prefix)) => {
                            let next_prefix = window.get(next_prefix).unwrap_or_default();
                            if next_size > 0 && handler.plausible(next_size, next_prefix) {
                                found = Some(offset);
                                break;
                            }
                        }
                    }
                } else if next - offset > MAX_RESYNC_WINDOW {
                    fallback.get_or_insert(offset);
                } else {
                    waiting.get_or_insert(offset);
                }
            }
            offset += 1;
        }
        scanned = waiting.unwrap_or(offset);
        let overflow = window.len().saturating_sub(MAX_RESYNC_WINDOW);
        if found.is_none() && overflow > 0 {
            match fallback {
                Some(offset) if offset < overflow => found = Some(offset),
                _ => {
                    window.drain(..overflow);
                    skipped += overflow as u64;
                    scanned = scanned.saturating_sub(overflow);
                    fallback = fallback.map(|f| f - overflow);
                }
            }
        }
        match found {
            Some(offset) => {
                let passed = skipped + offset as u64;
                let rest = window.split_off(offset);
                self.head_len = 0;
                self.first = None;
                if passed > 0 {
                    handler.resynced(passed, at);
                }
                self.push(&rest, at, handler);
            }
            None => {
                self.state = State::Resync {
                    window,
                    scanned,
                    skipped,
                    fallback,
                };
            }
        }
    }

    /// Looks again through the bytes held while resynchronising, from the start: the
    /// handler's idea of what is plausible has changed (a response side that now waits
    /// for more requests).
    pub fn rescan(&mut self, at: PacketRef, handler: &mut impl FrameHandler) {
        if let State::Resync { scanned, .. } = &mut self.state {
            *scanned = 0;
            self.scan(&[], at, handler);
        }
    }

    /// Called when the size and prefix are in: asks the handler what to do.
    fn start_frame(&mut self, at: PacketRef, handler: &mut impl FrameHandler) {
        let size = self.size().unwrap_or(-1);
        let prefix = self.head.get(SIZE_LEN..self.head_len).unwrap_or_default();
        let decision = handler.decide(size, prefix, at);
        let len = match u32::try_from(size) {
            Ok(len) if decision != Decision::Reject => len,
            _ => {
                // Framing is lost: look again from the byte after this bad size.
                let rest = self.head.get(1..self.head_len).unwrap_or_default().to_vec();
                self.state = State::Resync {
                    window: Vec::new(),
                    scanned: 0,
                    skipped: 1,
                    fallback: None,
                };
                self.head_len = 0;
                self.first = None;
                self.scan(&rest, at, handler);
                return;
            }
        };
        let got = prefix.len();
        self.state = if decision == Decision::Keep {
            let mut buf = Vec::with_capacity((len as usize).min(INITIAL_KEEP_CAPACITY));
            buf.extend_from_slice(prefix);
            State::Keep { len, buf }
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
    }

    fn finish_frame(&mut self, at: PacketRef, handler: &mut impl FrameHandler) {
        let state = std::mem::replace(&mut self.state, State::Head);
        let prefix = self.head.get(SIZE_LEN..self.head_len).unwrap_or_default();
        let first = self.first.unwrap_or(at);
        match state {
            State::Keep { len, buf } => handler.frame(Frame {
                len,
                prefix,
                message: Some(&buf),
                first,
                last: at,
            }),
            State::Skip { len, .. } => handler.frame(Frame {
                len,
                prefix,
                message: None,
                first,
                last: at,
            }),
            State::Head | State::Resync { .. } => {}
        }
        self.head_len = 0;
        self.first = None;
    }

    /// `len` bytes of the stream are missing at the current position.
    pub fn gap(&mut self, len: u64, at: PacketRef, handler: &mut impl FrameHandler) -> GapEffect {
        match &mut self.state {
            State::Skip { left, .. } if u64::from(*left) >= len => {
                *left -= len as u32;
                if *left == 0 {
                    self.finish_frame(at, handler);
                }
                GapEffect::Absorbed
            }
            State::Resync {
                window,
                scanned,
                skipped,
                fallback,
            } => {
                // No head spans a gap: what was waiting in the window is passed over.
                *skipped += window.len() as u64;
                window.clear();
                *scanned = 0;
                *fallback = None;
                GapEffect::AlreadyLost
            }
            State::Head if self.head_len == 0 => {
                self.state = resync_state();
                GapEffect::Lost { frame_lost: false }
            }
            _ => {
                self.state = resync_state();
                self.head_len = 0;
                self.first = None;
                GapEffect::Lost { frame_lost: true }
            }
        }
    }

    /// Bytes of an unfinished frame at the end of the stream, if any.
    pub fn unfinished(&self) -> Option<(u32, PacketRef)> {
        let first = self.first?;
        match &self.state {
            State::Head if self.head_len > 0 => Some((self.head_len as u32, first)),
            State::Keep { buf, .. } => Some((buf.len() as u32 + SIZE_LEN as u32, first)),
            State::Skip { len, left } => Some((len - left + SIZE_LEN as u32, first)),
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
        fn plausible(&mut self, len: i32, prefix: &[u8]) -> bool {
            len < 1000 && matches!(prefix.first(), Some(7 | 9))
        }
        fn resynced(&mut self, skipped: u64, _at: PacketRef) {
            self.resyncs.push(skipped);
        }
        fn wants_confirmation(&self) -> bool {
            self.confirm
        }
        fn frame(&mut self, f: Frame<'_>) {
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
    fn gap_in_kept_frame_drops_it_and_resyncs_on_the_next_head() {
        let mut framer = Framer::new(4);
        let mut rec = Recorder {
            keep_key: Some(7),
            ..Default::default()
        };
        framer.push(&frame_bytes(&[7, 1, 2, 3, 4, 5])[..8], at(1), &mut rec);
        assert_eq!(
            framer.gap(2, at(2), &mut rec),
            GapEffect::Lost { frame_lost: true }
        );
        assert!(framer.is_lost());
        // the rest of the dropped frame, then a good frame
        let mut data = vec![5];
        data.extend(frame_bytes(&[7, 0, 0, 0]));
        framer.push(&data, at(3), &mut rec);
        assert_eq!(rec.frames.len(), 1);
        assert_eq!(rec.frames[0].2.as_deref(), Some(&[7, 0, 0, 0][..]));
        assert_eq!(rec.resyncs, vec![1]);
        assert!(framer.is_idle());
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
}
