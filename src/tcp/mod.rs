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

use std::collections::HashMap;
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
    fn idx(self) -> usize {
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

#[derive(Debug)]
struct Connection<C> {
    info: ConnInfo,
    streams: [Assembler; 2],
    followed: bool,
    closed: bool,
    state: C,
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
    conns: HashMap<PairKey, Connection<C>>,
    next_index: u64,
    max_held_len: usize,
}

impl<C: Default> Tracker<C> {
    /// `max_held_len` caps out-of-order bytes held per direction.
    pub fn new(max_held_len: usize) -> Self {
        Self {
            conns: HashMap::new(),
            next_index: 0,
            max_held_len,
        }
    }

    /// Connections numbered so far.
    pub fn connections(&self) -> u64 {
        self.next_index
    }

    fn open(
        &mut self,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> Connection<C> {
        let index = self.next_index;
        self.next_index += 1;
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
            streams: [
                Assembler::new(self.max_held_len),
                Assembler::new(self.max_held_len),
            ],
            followed: true,
            closed: false,
            state: C::default(),
        }
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
        let reopen = self
            .conns
            .get(&key)
            .is_some_and(|c| c.closed && seg.syn && !seg.ack);
        if reopen || !self.conns.contains_key(&key) {
            let conn = self.open(seg, at, diags);
            if let Some(old) = self.conns.insert(key, conn) {
                if !old.closed {
                    handler.close(old.state, &old.info, at, diags);
                }
            }
        }
        let Some(conn) = self.conns.get_mut(&key) else {
            return;
        };
        if conn.closed || !conn.followed {
            return;
        }
        let dir = if seg.src == conn.info.initiator {
            Dir::FromInitiator
        } else {
            Dir::FromResponder
        };
        let Connection {
            info,
            streams,
            followed,
            state,
            ..
        } = conn;
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
        let mut deliver = |d: Delivery<'_>| {
            if !*followed {
                return;
            }
            if let Delivery::Gap { len, at } = d {
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
            *followed = handler.delivery(state, info, dir, d, diags);
        };
        let Some(stream) = streams.get_mut(dir.idx()) else {
            return;
        };
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
        if seg.rst {
            for stream in streams.iter_mut() {
                stream.flush(at, &mut deliver);
            }
        }
        let done = seg.rst || streams.iter().all(Assembler::is_finished);
        if done || !*followed {
            conn.closed = done;
            conn.streams = [Assembler::new(0), Assembler::new(0)];
            if done {
                let state = std::mem::take(&mut conn.state);
                handler.close(state, &conn.info, at, diags);
            }
        }
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
            .filter(|conn| !conn.closed)
            .collect();
        open.sort_by_key(|conn| conn.info.index);
        for mut conn in open {
            if conn.followed {
                let Connection {
                    info,
                    streams,
                    followed,
                    state,
                    ..
                } = &mut conn;
                for (idx, stream) in streams.iter_mut().enumerate() {
                    let dir = if idx == 0 {
                        Dir::FromInitiator
                    } else {
                        Dir::FromResponder
                    };
                    stream.flush(at, &mut |d: Delivery<'_>| {
                        if let Delivery::Gap { len, at } = d {
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
                        if *followed {
                            *followed = handler.delivery(state, info, dir, d, diags);
                        }
                    });
                }
            }
            handler.close(conn.state, &conn.info, at, diags);
        }
    }
}
