//! TCP connections: from segments to per-direction ordered byte streams.
//!
//! Connections are keyed by their address pair and numbered 0, 1, 2... in order of their
//! first packet, like Wireshark's `tcp.stream`; a SYN on an address pair whose connection
//! has closed (both FINs, or a RST) starts a new connection. The side that sent the first
//! SYN, or failing that the first packet, is the initiator; the Kafka stage decides which
//! side is the client. Each direction is reassembled by an [`assembler::Assembler`] and
//! its bytes go to a [`StreamHandler`], which keeps its own state per connection and can
//! stop following a connection (its packets are then dropped at the cost of one lookup).

pub mod assembler;
pub mod seq;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use assembler::{Assembler, Delivery, Segment};

use crate::capture::PacketRef;
use crate::decode::TcpSegmentView;
use crate::diag::{Diagnostics, Kind};

/// Direction of a segment relative to the connection's initiator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    FromInitiator,
    FromResponder,
}

impl Dir {
    /// The other direction.
    pub fn reverse(self) -> Self {
        match self {
            Self::FromInitiator => Self::FromResponder,
            Self::FromResponder => Self::FromInitiator,
        }
    }

    /// 0 for the initiator's direction, 1 for the responder's.
    pub fn idx(self) -> usize {
        match self {
            Self::FromInitiator => 0,
            Self::FromResponder => 1,
        }
    }
}

/// What is known about a connection from its packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    pub index: u64,
    pub initiator: SocketAddr,
    pub responder: SocketAddr,
    /// The handshake was not captured.
    pub midstream: bool,
}

impl ConnInfo {
    /// Source address of traffic in `dir`.
    pub fn source(&self, dir: Dir) -> SocketAddr {
        match dir {
            Dir::FromInitiator => self.initiator,
            Dir::FromResponder => self.responder,
        }
    }

    /// Destination address of traffic in `dir`.
    pub fn destination(&self, dir: Dir) -> SocketAddr {
        match dir {
            Dir::FromInitiator => self.responder,
            Dir::FromResponder => self.initiator,
        }
    }
}

/// The next stage: consumes ordered stream bytes, with a state of its own per connection.
pub trait StreamHandler {
    type Conn: Default;

    /// Bytes, a gap or a FIN in direction `dir`. Returning `false` stops following the
    /// connection: nothing more is delivered or held for it.
    fn delivery(
        &mut self,
        conn: &mut Self::Conn,
        info: &ConnInfo,
        dir: Dir,
        delivery: Delivery<'_>,
        diags: &mut Diagnostics,
    ) -> bool;

    /// The connection is over (both FINs, RST, replaced by a new SYN, or end of capture).
    fn close(&mut self, conn: Self::Conn, info: &ConnInfo, at: PacketRef, diags: &mut Diagnostics);
}

/// Reassembly and next-stage state of a connection we still follow.
#[derive(Debug)]
struct Live<C> {
    streams: [Assembler; 2],
    state: C,
}

/// A connection. Once it is closed or no longer followed only this small record stays,
/// so that later packets of it are recognised instead of opening a new connection.
#[derive(Debug)]
struct Connection<C> {
    info: ConnInfo,
    /// Sequence number of the initiator's SYN, when captured.
    isn: Option<u32>,
    /// The acknowledgment number of a SYN+ACK that opened the connection: the SYN it
    /// answers, if captured later, belongs to this connection.
    syn_ack_ack: Option<u32>,
    /// FIN seen from the initiator, from the responder.
    fins: [bool; 2],
    closed: bool,
    /// Frame of the latest packet.
    last_frame: u64,
    live: Option<Box<Live<C>>>,
}

/// Key of an address pair, the same for both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PairKey(SocketAddr, SocketAddr);

impl PairKey {
    fn new(a: SocketAddr, b: SocketAddr) -> Self {
        if a <= b {
            Self(a, b)
        } else {
            Self(b, a)
        }
    }
}

/// Tracks every TCP connection of the capture.
#[derive(Debug)]
pub struct Tracker<C> {
    conns: HashMap<PairKey, Connection<C>, foldhash::fast::RandomState>,
    next_index: u64,
    max_held_len: usize,
    /// Connections (open or closed) tracked at once; past it the least recently active
    /// one is forgotten.
    max_connections: usize,
    /// Address pairs in the order they were (re)queued, with the frame then: a clock
    /// that finds the least recently active connection in amortised constant time.
    clock: VecDeque<(PairKey, u64)>,
    evicted: u64,
}

/// Connections tracked at once by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 50_000;

fn gap_diagnostic(info: &ConnInfo, dir: Dir, len: u64, at: PacketRef, diags: &mut Diagnostics) {
    diags.push(
        Kind::TcpGap,
        Some(info.index),
        Some(at.frame),
        format!(
            "{len} bytes from {} to {} are missing from the capture",
            info.source(dir),
            info.destination(dir)
        ),
    );
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
            diags.push(
                Kind::TcpOverlapConflict,
                Some(info.index),
                Some(at.frame),
                format!(
                    "a retransmission from {} differs from the first copy within the {len} bytes at stream offset {offset}; the first copy was kept",
                    info.source(dir)
                ),
            );
            return;
        }
        _ => {}
    }
    *followed = handler.delivery(state, info, dir, delivery, diags);
}

impl<C: Default> Tracker<C> {
    /// `max_held_len` caps out-of-order bytes held per direction.
    pub fn new(max_held_len: usize) -> Self {
        Self::with_limits(max_held_len, DEFAULT_MAX_CONNECTIONS)
    }

    /// A tracker holding `max_held_len` out-of-order bytes per direction and at most
    /// `max_connections` connections.
    pub fn with_limits(max_held_len: usize, max_connections: usize) -> Self {
        Self {
            conns: HashMap::default(),
            next_index: 0,
            max_held_len,
            max_connections: max_connections.max(1),
            clock: VecDeque::new(),
            evicted: 0,
        }
    }

    /// Forgets the least recently active connection: one that saw a packet since it was
    /// queued goes round again. An open one is ended as at the end of the capture.
    fn evict_one<H: StreamHandler<Conn = C>>(
        &mut self,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        while let Some((key, queued)) = self.clock.pop_front() {
            let Some(conn) = self.conns.get(&key) else {
                continue; // already gone
            };
            if conn.last_frame > queued {
                let last = conn.last_frame;
                self.clock.push_back((key, last));
                continue;
            }
            let Some(conn) = self.conns.remove(&key) else {
                continue;
            };
            if conn.live.is_some() {
                if self.evicted == 0 {
                    diags.push(
                        Kind::ConnectionLimit,
                        Some(conn.info.index),
                        Some(at.frame),
                        format!(
                            "more than {} connections at once: the least recently active are no longer followed (connection {} first)",
                            self.max_connections, conn.info.index
                        ),
                    );
                } else {
                    diags.count_more(Kind::ConnectionLimit, 1);
                }
                self.evicted += 1;
                Self::end(conn, at, handler, diags);
            }
            return;
        }
    }

    /// Connections numbered so far.
    pub fn connections(&self) -> u64 {
        self.next_index
    }

    /// A fresh connection numbered `index`, starting with `seg`.
    fn open(
        &self,
        index: u64,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> Connection<C> {
        // A SYN+ACK as first packet means the SYN was missed: its sender is the responder.
        let (initiator, responder) = if seg.syn && seg.ack {
            (seg.dst, seg.src)
        } else {
            (seg.src, seg.dst)
        };
        let midstream = !seg.syn;
        if midstream {
            diags.push(
                Kind::MidstreamStart,
                Some(index),
                Some(at.frame),
                format!(
                    "connection {index} ({} - {}) was already open when the capture started; its streams are read from the first captured byte",
                    seg.src, seg.dst
                ),
            );
        }
        Connection {
            info: ConnInfo {
                index,
                initiator,
                responder,
                midstream,
            },
            isn: (seg.syn && !seg.ack).then_some(seg.seq),
            syn_ack_ack: (seg.syn && seg.ack).then_some(seg.ack_number),
            fins: [false; 2],
            closed: false,
            last_frame: at.frame,
            live: Some(Box::new(Live {
                streams: [
                    Assembler::new(self.max_held_len),
                    Assembler::new(self.max_held_len),
                ],
                state: C::default(),
            })),
        }
    }

    /// Whether a segment on an address pair that has a connection starts a new one. As
    /// in Wireshark, a SYN without ACK whose sequence number is not the connection's ISN
    /// does; a SYN with the same ISN is a retransmission, even after the connection
    /// closed (a capture on two interfaces at once repeats whole connections so).
    fn starts_new(conn: &Connection<C>, seg: &TcpSegmentView<'_>) -> bool {
        let answered_syn = conn.isn.is_none() && conn.syn_ack_ack == Some(seg.seq.wrapping_add(1));
        seg.syn && !seg.ack && conn.isn != Some(seg.seq) && !answered_syn
    }

    /// Takes one TCP segment.
    pub fn segment<H: StreamHandler<Conn = C>>(
        &mut self,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let key = PairKey::new(seg.src, seg.dst);
        let known = self
            .conns
            .get(&key)
            .is_some_and(|conn| !Self::starts_new(conn, seg));
        if !known {
            let index = self.next_index;
            self.next_index += 1;
            let conn = self.open(index, seg, at, diags);
            if let Some(old) = self.conns.insert(key, conn) {
                Self::end(old, at, handler, diags);
            }
            self.clock.push_back((key, at.frame));
            while self.conns.len() > self.max_connections {
                self.evict_one(at, handler, diags);
            }
        }
        let Some(conn) = self.conns.get_mut(&key) else {
            return;
        };
        conn.last_frame = at.frame;
        if seg.syn && !seg.ack && conn.isn.is_none() {
            conn.isn = Some(seg.seq); // the SYN of a connection first seen by its SYN+ACK
        }
        let dir = if seg.src == conn.info.initiator {
            Dir::FromInitiator
        } else {
            Dir::FromResponder
        };
        if seg.fin {
            if let Some(fin) = conn.fins.get_mut(dir.idx()) {
                *fin = true;
            }
        }
        if conn.closed {
            return;
        }
        let mut followed = conn.live.is_some();
        if let Some(live) = conn.live.as_deref_mut() {
            let Live { streams, state } = live;
            let info = &conn.info;
            if seg.missing_len > 0 {
                diags.push(
                    Kind::PacketTruncated,
                    Some(info.index),
                    Some(at.frame),
                    format!(
                        "packet was captured {} bytes short of its length on the wire (snaplen); those stream bytes are missing",
                        seg.missing_len
                    ),
                );
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
                    },
                    &mut deliver,
                );
            }
            if seg.rst {
                for stream in streams.iter_mut() {
                    stream.flush(at, &mut deliver);
                }
            }
        }
        // A followed connection closes when both streams reached their FIN in order (a
        // late retransmission may still fill a hole before that); one no longer followed
        // closes on seeing both FINs, so that its address pair can be reused.
        let finished = match &conn.live {
            Some(live) => live.streams.iter().all(Assembler::is_finished),
            None => conn.fins == [true; 2],
        };
        if seg.rst || finished {
            conn.closed = true;
        }
        if conn.closed || !followed {
            if let Some(live) = conn.live.take() {
                handler.close(live.state, &conn.info, at, diags);
            }
        }
    }

    /// Ends a connection that is being replaced: what it holds is flushed first.
    fn end<H: StreamHandler<Conn = C>>(
        mut conn: Connection<C>,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let Some(mut live) = conn.live.take() else {
            return;
        };
        if !conn.closed {
            let mut followed = true;
            let Live { streams, state } = &mut *live;
            for (stream, dir) in streams
                .iter_mut()
                .zip([Dir::FromInitiator, Dir::FromResponder])
            {
                stream.flush(at, &mut |d: Delivery<'_>| {
                    forward(handler, state, &conn.info, dir, &mut followed, d, diags);
                });
            }
        }
        handler.close(live.state, &conn.info, at, diags);
    }

    /// End of capture: held data is flushed and every open connection closed, in
    /// connection order.
    pub fn finish<H: StreamHandler<Conn = C>>(
        mut self,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let mut open: Vec<Connection<C>> = self
            .conns
            .drain()
            .map(|(_, conn)| conn)
            .filter(|conn| conn.live.is_some())
            .collect();
        open.sort_by_key(|conn| conn.info.index);
        for conn in open {
            Self::end(conn, at, handler, diags);
        }
    }
}
