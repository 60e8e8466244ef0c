//! A TCP segment on its way to a worker: the fields of its view, its payload copied into
//! the bytes of the epoch it goes in.

use std::net::SocketAddr;

use crate::decode::TcpSegmentView;
use crate::packet_ref::{FileSpot, PacketRef};

/// The segments of one worker's share of an epoch, their payloads one after another.
#[derive(Debug, Default)]
pub(super) struct Epoch {
    segments: Vec<Segment>,
    bytes: Vec<u8>,
    /// The packet after the epoch's last: a worker done with it has reached it.
    pub end: u64,
}

/// A segment's view, owned but for its payload, which is `len` bytes from `start` of its
/// epoch's bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Segment {
    /// How many packets were taken before this one.
    pub packet: u64,
    pub at: PacketRef,
    src: SocketAddr,
    dst: SocketAddr,
    seq: u32,
    ack_number: u32,
    flags: u8,
    window: u16,
    window_scale: Option<u8>,
    missing_len: u32,
    spot: Option<FileSpot>,
    start: usize,
    len: usize,
}

const SYN: u8 = 1;
const ACK: u8 = 2;
const FIN: u8 = 4;
const RST: u8 = 8;

impl Segment {
    /// `view` of packet `packet`, its payload to be placed by [`Epoch::push`].
    pub(super) fn new(packet: u64, view: &TcpSegmentView<'_>, at: PacketRef) -> Self {
        let flag = |set: bool, bit: u8| if set { bit } else { 0 };
        Self {
            packet,
            at,
            src: view.src,
            dst: view.dst,
            seq: view.seq,
            ack_number: view.ack_number,
            flags: flag(view.syn, SYN)
                | flag(view.ack, ACK)
                | flag(view.fin, FIN)
                | flag(view.rst, RST),
            window: view.window,
            window_scale: view.window_scale,
            missing_len: view.missing_len,
            spot: view.spot,
            start: 0,
            len: 0,
        }
    }

    /// The view again, over its payload.
    pub(super) fn view<'a>(&self, payload: &'a [u8]) -> TcpSegmentView<'a> {
        TcpSegmentView {
            src: self.src,
            dst: self.dst,
            seq: self.seq,
            ack_number: self.ack_number,
            syn: self.flags & SYN != 0,
            ack: self.flags & ACK != 0,
            fin: self.flags & FIN != 0,
            rst: self.flags & RST != 0,
            window: self.window,
            window_scale: self.window_scale,
            payload,
            missing_len: self.missing_len,
            spot: self.spot,
        }
    }
}

impl Epoch {
    /// Adds `segment`, copying `payload` after the others'.
    pub(super) fn push(&mut self, mut segment: Segment, payload: &[u8]) {
        segment.start = self.bytes.len();
        segment.len = payload.len();
        self.bytes.extend_from_slice(payload);
        self.segments.push(segment);
    }

    /// The segments in the order pushed, each with its payload.
    pub(super) fn segments(&self) -> impl Iterator<Item = (&Segment, &[u8])> {
        self.segments.iter().map(|s| {
            // our own ranges, within the bytes pushed with them
            let payload = self.bytes.get(s.start..s.start + s.len).unwrap_or_default();
            (s, payload)
        })
    }

    /// Empties it, keeping its room up to twice `share` (segments, bytes): a worker's
    /// epochs grow while its connections are the busy ones, and would otherwise hold
    /// that room for the rest of the run, every epoch in flight of every worker.
    pub(super) fn clear(&mut self, share: (usize, usize)) {
        self.segments.clear();
        self.bytes.clear();
        if self.segments.capacity() > 2 * share.0 {
            self.segments.shrink_to(share.0);
        }
        if self.bytes.capacity() > 2 * share.1 {
            self.bytes.shrink_to(share.1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_comes_out_as_it_went_in() {
        let view = TcpSegmentView {
            src: "10.0.0.1:40000".parse().unwrap(),
            dst: "[fd00::2]:9092".parse().unwrap(),
            seq: 7,
            ack_number: 9,
            syn: true,
            ack: false,
            fin: true,
            rst: false,
            window: 512,
            window_scale: Some(7),
            payload: b"kafka",
            missing_len: 3,
            spot: FileSpot::new(2, 1 << 40),
        };
        let other = TcpSegmentView {
            payload: b"more",
            rst: true,
            ack: true,
            ..view.clone()
        };
        let mut epoch = Epoch::default();
        epoch.push(Segment::new(1, &view, PacketRef::default()), view.payload);
        epoch.push(Segment::new(2, &other, PacketRef::default()), other.payload);
        let back: Vec<TcpSegmentView<'_>> = epoch.segments().map(|(s, p)| s.view(p)).collect();
        assert_eq!(back, [view, other]);
    }
}
