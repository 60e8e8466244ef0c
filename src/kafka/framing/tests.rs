//! The framer's unit tests: ordinary framing, gaps, and the search.

use super::*;
use crate::timestamp::Timestamp;

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
    /// When set, only heads starting with this byte anchor; the others must chain to one.
    anchor_key: Option<u8>,
    /// Heads judged plausible or not: the search's work.
    plausible_calls: usize,
    /// Heads starting with this byte are rejected.
    reject_key: Option<u8>,
}

impl FrameHandler for Recorder {
    type Reader = NoStream;

    fn decide(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> Decision<NoStream> {
        self.decisions.push((len, prefix.to_vec()));
        if len < 0 || (!prefix.is_empty() && prefix.first().copied() == self.reject_key) {
            Decision::Reject
        } else if prefix.first().copied() == self.keep_key {
            Decision::Keep
        } else {
            Decision::Skip
        }
    }
    /// Test heads start with 7 or 9 and are short.
    fn plausible(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        self.plausible_calls += 1;
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
    fn anchors(&mut self, _len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        self.anchor_key
            .is_none_or(|key| prefix.first() == Some(&key))
    }
    fn wants_confirmation(&self) -> bool {
        self.confirm
    }
    fn would_keep(&mut self, len: i32, prefix: &[u8]) -> bool {
        len >= 0 && prefix.first().copied() == self.keep_key
    }
    fn frame(&mut self, f: Frame<'_, NoStream>) {
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
        origin: None,
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
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
    let mut rec = Recorder::default();
    let junk = vec![0xaa; 4096];
    for _ in 0..100 {
        framer.push(&junk, at(1), &mut rec);
    }
    // Only the bytes of a head not yet all there stay.
    assert!(framer.resync_window_len() < MAX_HEAD_LEN);
    assert!(framer.resync_skipped() >= 409_600 - MAX_HEAD_LEN as u64);
    assert!(rec.frames.is_empty());
}

/// Garbage, then 200 heads that do not anchor, then two that do (responses to requests
/// from before the capture, then answers): the search frames from the first head within
/// [`MAX_CHAIN_LINKS`] of an anchor, and reads each head about once, not once per chain
/// that runs through it (each of the 200 chains is the tail of the one before).
#[test]
fn a_chain_of_unanchored_heads_is_walked_once() {
    let mut framer = Framer::<NoStream>::resyncing(1);
    let mut rec = Recorder {
        confirm: true,
        anchor_key: Some(9),
        ..Default::default()
    };
    let mut data = vec![1, 2, 3];
    for _ in 0..200 {
        data.extend(frame_bytes(&[7, 0, 0, 0, 0]));
    }
    data.extend(frame_bytes(&[9, 0, 0, 0, 0]));
    data.extend(frame_bytes(&[9, 0, 0, 0, 0]));
    framer.push(&data, at(1), &mut rec);
    let first_framed = 200 - MAX_CHAIN_LINKS;
    assert_eq!(rec.resyncs, vec![3 + 9 * first_framed as u64]);
    assert_eq!(rec.frames.len(), 200 - first_framed + 2);
    // Walked afresh from each head, the chains would read ~64 heads a head (12,800).
    assert!(
        rec.plausible_calls < 2 * data.len(),
        "{} heads read for {} bytes",
        rec.plausible_calls,
        data.len()
    );
}

/// Noise with a plausible head every 100 bytes, each claiming 5,000 bytes: the heads are
/// carried, the bytes between them are counted and let go.
#[test]
fn the_search_holds_heads_not_the_bytes_between_them() {
    let mut framer = Framer::<NoStream>::resyncing(4);
    let mut rec = Recorder {
        confirm: true,
        max_len: 1 << 20,
        ..Default::default()
    };
    let mut packet = Vec::new();
    for _ in 0..15 {
        packet.extend(5_000u32.to_be_bytes());
        packet.extend([9, 0, 0, 1]);
        packet.extend([0xaa; 92]);
    }
    for n in 0..1000 {
        framer.push(&packet, at(n), &mut rec);
        assert!(framer.resync_window_len() < MAX_HEAD_LEN, "packet {n}");
    }
    let State::Resync(w) = &framer.state else {
        panic!("still searching");
    };
    assert!(!w.far.is_empty(), "heads are carried");
    let bound =
        2 * search::MIN_WINDOW_ROOM + MAX_FAR_CANDIDATES * size_of::<search::FarCandidate>();
    assert!(
        framer.held_bytes() <= bound,
        "{} bytes held",
        framer.held_bytes()
    );
    assert!(framer.resync_skipped() > 1_500_000 - MAX_HEAD_LEN as u64);
}

/// A frame to decode is the one candidate waited for with its bytes.
#[test]
fn a_candidate_to_decode_is_held_with_its_bytes_and_handed_over_whole() {
    let mut framer = Framer::<NoStream>::resyncing(4);
    let mut rec = Recorder {
        keep_key: Some(9),
        confirm: true,
        ..Default::default()
    };
    let mut body = vec![9, 0, 0, 1];
    body.extend((0..600).map(|i| i as u8));
    let mut data = vec![0xaa; 5];
    data.extend(frame_bytes(&body));
    data.extend(frame_bytes(&[7, 1, 2, 3]));
    for (n, chunk) in data.chunks(100).enumerate() {
        framer.push(chunk, at(n as u64), &mut rec);
    }
    assert_eq!(rec.frames.len(), 2);
    assert_eq!(rec.frames[0].2.as_deref(), Some(&body[..]));
    assert_eq!(rec.resyncs, vec![5]);
}

#[test]
fn the_search_window_gives_back_the_room_of_a_big_push() {
    let mut framer = Framer::<NoStream>::resyncing(4);
    let mut rec = Recorder::default();
    framer.push(&vec![0xaa; 4 << 20], at(1), &mut rec); // one 4 MiB segment of noise
    framer.push(&[0xaa; 16], at(2), &mut rec);
    // The window's box and the room of its buffers, each with malloc's overhead.
    let room = size_of::<Window>() + 2 * search::MIN_WINDOW_ROOM + 128;
    assert!(
        framer.held_bytes() <= room,
        "{} bytes held",
        framer.held_bytes()
    );
}

#[test]
fn gap_between_frames_resyncs_without_skipping() {
    let mut framer = Framer::<NoStream>::new(4);
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
    let mut framer = Framer::<NoStream>::new(4);
    let mut rec = Recorder::default();
    framer.push(&[0xff, 0xff, 0xff, 0xff, 1, 2], at(1), &mut rec);
    assert_eq!(rec.decisions, vec![(-1, vec![])]);
    assert!(framer.is_lost());
}

#[test]
fn message_shorter_than_prefix_and_empty_message() {
    let mut framer = Framer::<NoStream>::new(8);
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
    let mut framer = Framer::<NoStream>::new(4);
    let mut rec = Recorder::default();
    framer.push(&frame_bytes(&[1, 2, 3, 4, 5, 6])[..7], at(5), &mut rec);
    assert_eq!(
        framer.unfinished().map(|(n, p, _)| (n, p.frame)),
        Some((7, 5))
    );
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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
    let mut framer = Framer::<NoStream>::resyncing(4);
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

/// What a search found in `data` fed in segments of the lengths `cuts` (the rest in one
/// more): each frame's size, prefix and message, and the bytes passed over.
fn search_in_segments(data: &[u8], cuts: &[usize], rec: Recorder) -> (Vec<Seen>, Vec<u64>) {
    in_segments(Framer::<NoStream>::resyncing(4), data, cuts, rec)
}

/// What `framer` finds in `data` pushed in segments of `cuts` bytes (the rest in one).
fn in_segments(
    mut framer: Framer<NoStream>,
    data: &[u8],
    cuts: &[usize],
    mut rec: Recorder,
) -> (Vec<Seen>, Vec<u64>) {
    let mut pos = 0;
    let mut packet = 0;
    for &cut in cuts.iter().chain([&data.len()]) {
        let end = (pos + cut).min(data.len());
        if end > pos {
            packet += 1;
            framer.push(&data[pos..end], at(packet), &mut rec);
        }
        pos = end;
    }
    // packets differ with the cuts; what the frames are must not
    let frames = rec
        .frames
        .into_iter()
        .map(|f| (f.0, f.1, f.2, 0, 0))
        .collect();
    (frames, rec.resyncs)
}

/// A 34-byte frame at the first byte with a 4-byte head inside it from byte `inside`
/// (13 at most), then a second frame.
fn frame_with_a_head_inside(inside: usize) -> Vec<u8> {
    let mut body = vec![8; 30];
    body[0] = 7;
    body[inside - 4..inside + 4].copy_from_slice(&[0, 0, 0, 4, 9, 1, 1, 1]);
    let mut data = frame_bytes(&body);
    data.extend(frame_bytes(&[9, 0, 0, 5]));
    data
}

/// The case: the first frame's bytes come in segments of 1, 4, 1, 4, 5, 6 and 8
/// bytes; a head inside it ends where the sixth segment does. The frame is found as
/// when it comes whole, not passed over for the head that a segment's end confirmed.
#[test]
fn a_first_frame_in_small_segments_is_found_as_when_whole() {
    let data = frame_with_a_head_inside(13);
    let rec = || Recorder {
        confirm: true,
        ..Default::default()
    };
    let whole = search_in_segments(&data, &[], rec());
    assert_eq!(whole.0.len(), 2);
    assert_eq!(whole.0[0].0, 30);
    assert!(whole.1.is_empty(), "nothing passed over");
    let split = search_in_segments(&data, &[1, 4, 1, 4, 5, 6, 8], rec());
    assert_eq!(split, whole);
}

/// Every way of cutting the first 16 bytes into segments of 1 to 8 bytes (the rest in
/// one), with a head inside the first frame ending at byte 13, and the first frame
/// anchoring or not and kept or not.
#[test]
fn every_split_of_the_first_bytes_finds_the_frames_found_whole() {
    fn compositions(n: usize, out: &mut Vec<Vec<usize>>, cur: &mut Vec<usize>) {
        if n == 0 {
            out.push(cur.clone());
        }
        for part in 1..=n.min(8) {
            cur.push(part);
            compositions(n - part, out, cur);
            cur.pop();
        }
    }
    let mut splits = Vec::new();
    compositions(16, &mut splits, &mut Vec::new());
    assert_eq!(splits.len(), 32_192);
    let data = frame_with_a_head_inside(5);
    for (anchor_key, keep_key) in [(None, None), (Some(7), None), (None, Some(7))] {
        let rec = || Recorder {
            confirm: true,
            anchor_key,
            keep_key,
            ..Default::default()
        };
        let whole = search_in_segments(&data, &[], rec());
        assert_eq!(whole.0.len(), 2);
        for cuts in &splits {
            let split = search_in_segments(&data, cuts, rec());
            assert_eq!(split, whole, "{cuts:?} {anchor_key:?} {keep_key:?}");
        }
    }
}

mod split_properties {
    use proptest::prelude::*;

    use super::*;

    /// Bytes that make false heads likely: sizes' zeros and small values, and the keys.
    fn byte() -> impl Strategy<Value = u8> {
        prop::sample::select(vec![0u8, 1, 4, 7, 8, 9])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// Frames from the first captured byte (the first one an answer, the rest anything)
        /// fed in segments of 1 to 8 bytes are the frames found when fed whole.
        #[test]
        fn frames_from_the_first_byte_are_found_whatever_the_segments(
            bodies in prop::collection::vec(
                (prop::sample::select(vec![7u8, 9]), prop::collection::vec(byte(), 3..24)),
                1..4,
            ),
            cuts in prop::collection::vec(1usize..=8, 0..16),
            confirm in any::<bool>(),
            anchor_key in prop::option::of(prop::sample::select(vec![7u8, 9])),
            keep_key in prop::option::of(prop::sample::select(vec![7u8, 9])),
        ) {
            let mut data = Vec::new();
            for (i, (key, rest)) in bodies.iter().enumerate() {
                // the first frame anchors: it answers a request the capture holds
                let key = if i == 0 { anchor_key.unwrap_or(*key) } else { *key };
                let mut body = vec![key];
                body.extend(rest);
                data.extend(frame_bytes(&body));
            }
            let rec = || Recorder { confirm, anchor_key, keep_key, ..Default::default() };
            let whole = search_in_segments(&data, &[], rec());
            let split = search_in_segments(&data, &cuts, rec());
            prop_assert_eq!(split, whole);
        }

        /// A framer from a stream's start finds the same frames, and rejects the same
        /// heads (then searches on from the same bytes), when it reads the whole frames
        /// of a segment in place as when every byte goes through its states.
        #[test]
        fn whole_frames_read_in_place_are_the_frames_read_in_pieces(
            bodies in prop::collection::vec(
                (prop::sample::select(vec![5u8, 7, 9]), prop::collection::vec(byte(), 0..24)),
                1..5,
            ),
            cuts in prop::collection::vec(1usize..=40, 0..6),
            keep_key in prop::option::of(prop::sample::select(vec![7u8, 9])),
            reject in any::<bool>(),
        ) {
            let mut data = Vec::new();
            for (key, rest) in &bodies {
                let mut body = vec![*key];
                body.extend(rest);
                data.extend(frame_bytes(&body));
            }
            let reject_key = reject.then_some(5);
            let rec = || Recorder { confirm: true, keep_key, reject_key, ..Default::default() };
            let mut states = Framer::new(4);
            states.in_place = false;
            let by_states = in_segments(states, &data, &cuts, rec());
            prop_assert_eq!(in_segments(Framer::new(4), &data, &cuts, rec()), by_states);
        }
    }
}

/// A lone answer to a request from before the capture (a head that does not anchor),
/// with nothing after it but the FIN: confirmed by the stream's end, as a chain of such
/// heads is; bytes that end elsewhere are not.
#[test]
fn the_end_of_the_stream_confirms_what_ends_with_it() {
    let rec = || Recorder {
        confirm: true,
        anchor_key: Some(9),
        ..Default::default()
    };
    for lone in [1, 3] {
        let mut data = vec![0xaa; 2];
        for _ in 0..lone {
            data.extend(frame_bytes(&[7, 0, 0, 1, 2]));
        }
        let mut framer = Framer::<NoStream>::resyncing(4);
        let mut rec = rec();
        framer.push(&data, at(1), &mut rec);
        assert!(rec.frames.is_empty(), "not before the stream ends");
        framer.end_of_stream(&mut rec);
        assert_eq!(rec.frames.len(), lone);
        assert_eq!(rec.resyncs, vec![2]);
        assert!(framer.is_idle());
    }
    let mut framer = Framer::<NoStream>::resyncing(4);
    let mut rec = rec();
    let mut data = frame_bytes(&[7, 0, 0, 1, 2]);
    data.push(0);
    framer.push(&data, at(1), &mut rec);
    framer.end_of_stream(&mut rec);
    assert!(
        rec.frames.is_empty(),
        "a byte after it: it does not end with the stream"
    );
}

/// What a search holds unframed when its connection is given up or ends without a FIN:
/// the whole frames of its bytes followed by a run of whole frames to exactly their end,
/// for the Kafka stage to tell whether one is a block's answer.
#[test]
fn the_frames_a_search_holds_whole_are_those_run_to_its_end() {
    let rec = || Recorder {
        confirm: true,
        anchor_key: Some(9),
        ..Default::default()
    };
    let held = |data: &[u8], max_len: usize| -> Vec<Vec<u8>> {
        let mut framer = Framer::<NoStream>::resyncing(4);
        framer.push(data, at(1), &mut rec());
        framer
            .held_whole_frames(max_len)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (a, b) = (vec![7, 0, 0, 1, 2], vec![7, 0, 0, 2, 3, 4]);
    let mut data = vec![0xaa; 2];
    data.extend(frame_bytes(&a));
    assert_eq!(held(&data, 256), vec![a.clone()], "a lone frame at the end");
    data.extend(frame_bytes(&b));
    assert_eq!(
        held(&data, 256),
        vec![a.clone(), b.clone()],
        "two, one after the other"
    );
    assert_eq!(held(&data, 5), vec![a.clone()], "longer than asked for");
    let mut cut = frame_bytes(&a);
    cut.extend(&frame_bytes(&b)[..7]);
    assert!(
        held(&cut, 256).is_empty(),
        "followed by a head that runs past the end: met at every byte of a long message's zeros"
    );
    let mut refuted = frame_bytes(&a);
    refuted.extend([0, 0, 0, 0, 1]);
    assert!(held(&refuted, 256).is_empty(), "followed by a size of 0");
    let mut framer = Framer::<NoStream>::new(4);
    framer.push(&frame_bytes(&a)[..6], at(1), &mut rec());
    assert!(
        framer.held_whole_frames(256).is_empty(),
        "framing known: nothing held"
    );
}

/// A streamed message's reader: what it was given.
#[derive(Debug, Default)]
struct Tape {
    bytes: Vec<u8>,
    gaps: Vec<u32>,
}

impl Streamed for Tape {
    fn bytes(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
    }
    fn gap(&mut self, len: u32) {
        self.gaps.push(len);
    }
    fn held_bytes(&self) -> usize {
        self.bytes.capacity()
    }
}

/// Streams every frame, and keeps the tapes it got back.
#[derive(Default)]
struct Streaming {
    tapes: Vec<(u32, Option<Tape>, bool)>,
}

impl FrameHandler for Streaming {
    type Reader = Tape;

    fn decide(&mut self, _len: i32, _prefix: &[u8], _at: PacketRef) -> Decision<Tape> {
        Decision::Stream(Box::default())
    }
    fn frame(&mut self, f: Frame<'_, Tape>) {
        assert!(f.message.is_none(), "a streamed frame is not held");
        self.tapes.push((f.len, f.streamed.map(|t| *t), f.shed));
    }
    fn plausible(&mut self, _len: i32, _prefix: &[u8], _at: PacketRef) -> bool {
        true
    }
    fn resynced(&mut self, _skipped: u64, _at: PacketRef) {}
}

/// A streamed message's reader gets every byte (the prefix first) and every gap inside
/// it, in order, and comes back with the frame; the framer holds none of the bytes.
#[test]
fn a_streamed_frame_gives_its_reader_every_byte_and_gap() {
    let body: Vec<u8> = (0..40).collect();
    let data = frame_bytes(&body);
    let mut framer = Framer::<Tape>::new(4);
    let mut handler = Streaming::default();
    framer.push(&data[..10], at(1), &mut handler);
    framer.push(&data[10..20], at(2), &mut handler);
    assert_eq!(framer.gap(5, at(3), &mut handler), GapEffect::Absorbed);
    framer.push(&data[25..], at(4), &mut handler);
    let [(len, Some(tape), false)] = &handler.tapes[..] else {
        panic!("{:?}", handler.tapes.len());
    };
    assert_eq!(*len, 40);
    let mut expected = body[..16].to_vec();
    expected.extend_from_slice(&body[21..]);
    assert_eq!(tape.bytes, expected);
    assert_eq!(tape.gaps, [5]);
    assert!(framer.is_idle());
}

/// Shedding a streamed message drops its reader: the frame ends as one shed.
#[test]
fn shedding_a_streamed_frame_drops_its_reader() {
    let data = frame_bytes(&[1; 30]);
    let mut framer = Framer::<Tape>::new(4);
    let mut handler = Streaming::default();
    framer.push(&data[..12], at(1), &mut handler);
    assert!(framer.held_bytes() > 0);
    assert!(framer.shed() > 0);
    assert_eq!(framer.held_bytes(), 0);
    framer.push(&data[12..], at(2), &mut handler);
    assert!(matches!(handler.tapes[..], [(30, None, true)]));
}
