//! One connection: its handshake numbers, FINs and RST, its two streams' reassembly, and
//! what it hands its [`StreamHandler`]. The tracker finds the connection; everything
//! that happens inside one happens here.

use super::assembler::{Assembler, Delivery, Segment};
use super::window::Windows;
use super::{ConnInfo, Dir, StreamHandler};
use crate::decode::TcpSegmentView;
use crate::diag::obs;
use crate::diag::{Diagnostics, GivenUp, Observation};
use crate::heap::heap_cost;
use crate::packet_ref::{PacketRef, Recall};

/// Times a connection's handler is asked to shed in one pass: each gives up half of what
/// it holds.
const MAX_SHEDS_A_CONNECTION: usize = 16;

/// Reassembly and next-stage state of a connection we still follow.
#[derive(Debug)]
pub(super) struct Live<C> {
    streams: [Assembler; 2],
    pub(super) state: C,
}

/// An open connection, followed or not. Once closed it leaves the table and a
/// [`super::closed::Closed`] record stays in its place.
#[derive(Debug)]
pub(super) struct Connection<C> {
    pub(super) info: ConnInfo,
    /// Frame of its one current entry in the clock; other entries for its address pair
    /// are stale (an earlier connection's, or passed over since).
    pub(super) queued: u64,
    /// Sequence number of the initiator's SYN, when captured.
    pub(super) isn: Option<u32>,
    /// The acknowledgment number of a SYN+ACK that opened the connection: the SYN it
    /// answers, if captured later, belongs to this connection.
    pub(super) syn_ack_ack: Option<u32>,
    /// FIN seen from the initiator, from the responder.
    fins: [bool; 2],
    /// Receive windows, to tell which RSTs end the connection.
    windows: Windows,
    closed: bool,
    /// Frame of the latest packet.
    pub(super) last_frame: u64,
    /// What it was last charged against the memory budget.
    pub(super) charged: usize,
    pub(super) live: Option<Box<Live<C>>>,
}

/// Whether a segment on an address pair that has a connection (whose initiator's SYN
/// had `isn`, and whose opening SYN+ACK acknowledged `syn_ack_ack`) starts a new one.
/// As in Wireshark, a SYN without ACK whose sequence number is not the connection's
/// ISN does; a SYN with the same ISN is a retransmission, even after the connection
/// closed (a capture on two interfaces at once repeats whole connections so).
pub(super) fn starts_new(
    isn: Option<u32>,
    syn_ack_ack: Option<u32>,
    seg: &TcpSegmentView<'_>,
) -> bool {
    let answered_syn = isn.is_none() && syn_ack_ack == Some(seg.seq.wrapping_add(1));
    seg.syn && !seg.ack && isn != Some(seg.seq) && !answered_syn
}

impl<C: Default> Connection<C> {
    /// A fresh connection numbered `index`, starting with `seg`, each direction holding
    /// at most `max_held_len` out-of-order bytes.
    pub(super) fn open(
        index: u64,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        max_held_len: usize,
        diags: &mut Diagnostics,
    ) -> Self {
        // A SYN+ACK as first packet means the SYN was missed: its sender is the responder.
        let (initiator, responder) = if seg.syn && seg.ack {
            (seg.dst, seg.src)
        } else {
            (seg.src, seg.dst)
        };
        let midstream = !seg.syn;
        if midstream {
            let what = Observation::MidstreamStart(obs::MidstreamStart {
                from: seg.src,
                to: seg.dst,
            });
            diags.add(Some(index), at, what);
        }
        Self {
            info: ConnInfo {
                index,
                initiator,
                responder,
                midstream,
                seen: [false; 2],
                evicted: false,
            },
            queued: at.frame,
            isn: (seg.syn && !seg.ack).then_some(seg.seq),
            syn_ack_ack: (seg.syn && seg.ack).then_some(seg.ack_number),
            fins: [false; 2],
            windows: Windows::default(),
            closed: false,
            last_frame: at.frame,
            charged: 0,
            live: Some(Box::new(Live {
                streams: [Assembler::new(max_held_len), Assembler::new(max_held_len)],
                state: C::default(),
            })),
        }
    }
}

impl<C> Connection<C> {
    /// One segment of this connection: FINs, RST, reassembly and delivery to the
    /// handler. Returns whether the connection is now closed.
    /// Bytes delivered earlier are read again through `recall` where they were kept by
    /// their spot.
    pub(super) fn track<H: StreamHandler<Conn = C>>(
        &mut self,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        recall: &dyn Recall,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) -> bool {
        self.last_frame = at.frame;
        if seg.syn && !seg.ack && self.isn.is_none() {
            self.isn = Some(seg.seq); // the SYN of a connection first seen by its SYN+ACK
        }
        let dir = self.info.dir_of(seg);
        if seg.rst && !self.rst_in_window(dir, seg, at, diags) {
            return self.closed; // not this connection's, as far as its receiver could tell
        }
        self.windows.observe(dir, seg);
        if let Some(seen) = self.info.seen.get_mut(dir.idx()) {
            *seen = true;
        }
        if seg.fin {
            if let Some(fin) = self.fins.get_mut(dir.idx()) {
                *fin = true;
            }
        }
        if self.closed {
            return true;
        }
        let followed = match self.live.as_deref_mut() {
            Some(live) => live.segment((&self.info, dir), seg, at, recall, handler, diags),
            None => false,
        };
        self.close_if_over(seg.rst, followed, at, handler, diags)
    }

    /// After a segment: whether the connection is over, its handler told when it is or
    /// when the handler stopped following it.
    fn close_if_over<H: StreamHandler<Conn = C>>(
        &mut self,
        rst: bool,
        followed: bool,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) -> bool {
        // A followed connection closes when both streams reached their FIN in order (a late
        // retransmission may still fill a hole before that); one no longer followed closes on
        // seeing both FINs, so that its address pair can be reused.
        let finished = match &self.live {
            Some(live) => live.streams.iter().all(Assembler::is_finished),
            None => self.fins == [true; 2],
        };
        if rst || finished {
            self.closed = true;
        }
        if self.closed || !followed {
            if let Some(live) = self.live.take() {
                handler.close(live.state, &self.info, at, diags);
            }
        }
        self.closed
    }

    /// Whether an RST from `dir` is within its receiver's window; one that is not is reported.
    fn rst_in_window(
        &self,
        dir: Dir,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> bool {
        let next = self
            .live
            .as_deref()
            .and_then(|live| live.streams.get(dir.idx()))
            .and_then(Assembler::next_seq);
        if self.windows.rst_in_window(dir, seg.seq, next) {
            return true;
        }
        let info = &self.info;
        let what = Observation::TcpRstOutOfWindow(obs::TcpRstOutOfWindow {
            from: info.source(dir),
            seq: seg.seq,
        });
        diags.add(Some(info.index), at, what);
        false
    }

    /// Heap the connection costs beyond its slot in the tables: when followed, its boxed
    /// state, its streams' held segments and rings of recent bytes, and its handler's heap.
    pub(super) fn cost<H: StreamHandler<Conn = C>>(&self, handler: &H) -> usize {
        self.live.as_deref().map_or(0, |live| {
            heap_cost(size_of::<Live<C>>())
                + live.streams.iter().map(Assembler::heap_len).sum::<usize>()
                + handler.held_bytes(&live.state)
        })
    }

    /// Ends a connection that is being replaced, forgotten, or open at the end of the
    /// capture: what it holds is flushed first.
    pub(super) fn end<H: StreamHandler<Conn = C>>(
        mut self,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let Some(mut live) = self.live.take() else {
            return;
        };
        if !self.closed {
            live.flush(&self.info, at, handler, &mut true, diags);
        }
        handler.close(live.state, &self.info, at, diags);
    }

    /// Over the memory budget: gives up what the connection holds. Held segments are
    /// delivered after declaring their holes lost, then the handler sheds, then the
    /// rings of recent bytes go; each step says what it gave up.
    pub(super) fn shed<H: StreamHandler<Conn = C>>(
        &mut self,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let Some(live) = self.live.as_deref_mut() else {
            return;
        };
        let info = &self.info;
        let held: usize = live.streams.iter().map(Assembler::held_len).sum();
        let handler_held = handler.held_bytes(&live.state);
        if held > 0 {
            let what = Observation::MemoryLimit(obs::MemoryLimit {
                connection: info.ends(),
                given_up: GivenUp::OutOfOrder { bytes: held as u64 },
            });
            diags.add(Some(info.index), at, what);
        }
        let mut followed = true;
        live.flush(info, at, handler, &mut followed, diags);
        // The bytes flushed may have grown the handler's state (a hundred small
        // requests waiting for each kilobyte): it gives up until it holds at most
        // half of what it held before.
        for _ in 0..MAX_SHEDS_A_CONNECTION {
            if handler.shed(&mut live.state, info, at, diags) == 0
                || handler.held_bytes(&live.state) <= handler_held / 2
            {
                break;
            }
        }
        let forgotten: usize = live.streams.iter_mut().map(Assembler::release_recent).sum();
        if forgotten > 0 {
            let what = Observation::MemoryLimit(obs::MemoryLimit {
                connection: info.ends(),
                given_up: GivenUp::Recent {
                    bytes: forgotten as u64,
                },
            });
            diags.add(Some(info.index), at, what);
        }
        if !followed {
            if let Some(live) = self.live.take() {
                handler.close(live.state, &self.info, at, diags);
            }
        }
    }
}

impl<C> Live<C> {
    /// A segment's bytes in `dir`, and what its acknowledgment says of the other
    /// direction. Returns whether the handler still follows the connection.
    fn segment<H: StreamHandler<Conn = C>>(
        &mut self,
        (info, dir): (&ConnInfo, Dir),
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        recall: &dyn Recall,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) -> bool {
        let Self { streams, state } = self;
        let mut followed = true;
        if seg.missing_len > 0 {
            let what = Observation::PacketTruncated(obs::PacketTruncated {
                bytes_missing: u64::from(seg.missing_len),
            });
            diags.add(Some(info.index), at, what);
        }
        // What this packet acknowledges may show that the other direction lost bytes.
        if seg.ack {
            if let Some(stream) = streams.get_mut(dir.reverse().idx()) {
                let reverse = dir.reverse();
                let carries_data = !seg.payload.is_empty() || seg.missing_len > 0;
                stream.acked(seg.ack_number, carries_data, at, &mut |d: Delivery<'_>| {
                    forward(handler, state, info, reverse, &mut followed, d, diags);
                });
            }
        }
        let mut deliver =
            |d: Delivery<'_>| forward(handler, state, info, dir, &mut followed, d, diags);
        if let Some(stream) = streams.get_mut(dir.idx()) {
            stream.segment(
                Segment {
                    seq: seg.seq,
                    syn: seg.syn,
                    fin: seg.fin,
                    payload: seg.payload,
                    missing_len: seg.missing_len,
                    at,
                    spot: seg.spot,
                    recall,
                },
                &mut deliver,
            );
        }
        // An RST ends both directions: each delivers what it holds as its own.
        if seg.rst {
            self.flush(info, at, handler, &mut followed, diags);
        }
        followed
    }

    /// Delivers what both streams hold, after declaring the holes before it lost.
    fn flush<H: StreamHandler<Conn = C>>(
        &mut self,
        info: &ConnInfo,
        at: PacketRef,
        handler: &mut H,
        followed: &mut bool,
        diags: &mut Diagnostics,
    ) {
        let Self { streams, state } = self;
        for (stream, dir) in streams
            .iter_mut()
            .zip([Dir::FromInitiator, Dir::FromResponder])
        {
            stream.flush(at, &mut |d: Delivery<'_>| {
                forward(handler, state, info, dir, followed, d, diags);
            });
        }
    }
}

/// Runs one delivery through the handler unless the connection stopped being followed.
fn forward<H: StreamHandler>(
    handler: &mut H,
    state: &mut H::Conn,
    info: &ConnInfo,
    dir: Dir,
    followed: &mut bool,
    delivery: Delivery<'_>,
    diags: &mut Diagnostics,
) {
    if !*followed {
        return;
    }
    match delivery {
        Delivery::Gap { len, at } => gap_diagnostic(info, dir, len, at, diags),
        Delivery::Conflict { offset, len, at } => {
            let what = Observation::TcpOverlapConflict(obs::TcpOverlapConflict {
                offset,
                bytes: len,
                from: info.source(dir),
            });
            diags.add(Some(info.index), at, what);
            return;
        }
        Delivery::Unread { offset, len, at } => {
            let what = Observation::TcpOverlapUnread(obs::TcpOverlapUnread {
                offset,
                bytes: len,
                from: info.source(dir),
            });
            diags.add(Some(info.index), at, what);
            return;
        }
        _ => {}
    }
    *followed = handler.delivery(state, info, dir, delivery, diags);
}

fn gap_diagnostic(info: &ConnInfo, dir: Dir, len: u64, at: PacketRef, diags: &mut Diagnostics) {
    let what = Observation::TcpGap(obs::TcpGap {
        bytes: len,
        from: info.source(dir),
        to: info.destination(dir),
    });
    diags.add(Some(info.index), at, what);
}
