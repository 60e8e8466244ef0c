//! TCP connections: from segments to per-direction ordered byte streams.
//!
//! Connections are keyed by their address pair and numbered 0, 1, 2... in order of their
//! first packet, like Wireshark's `tcp.stream`; a SYN on an address pair whose connection
//! has closed (both FINs, or a RST) starts a new connection. The side that sent the first
//! SYN, or failing that the first packet, is the initiator; the Kafka stage decides which
//! side is the client. Each direction is reassembled by an [`assembler::Assembler`] and
//! its bytes go to a [`StreamHandler`], which keeps its own state per connection and can
//! stop following a connection (its packets are then dropped at the cost of one lookup).
//!
//! [`Tracker`] composes the jobs, a file each: `table` (open connections and the clock
//! of their activity), `connection` (what happens inside one), `closed` (records of
//! closed ones), `evict` (forgetting the least recently active) and `budget` (charging
//! what is held against `--max-memory`, and shedding).

pub mod assembler;
mod budget;
mod closed;
mod connection;
mod evict;
mod pair;
mod recent;
pub mod seq;
mod table;
mod window;

use std::net::SocketAddr;
use std::sync::Arc;

use assembler::Delivery;
use budget::Budget;
use closed::{Closed, ClosedRecords};
use connection::{starts_new, Connection};
use pair::PairKey;
use table::Table;

use crate::decode::TcpSegmentView;
use crate::diag::Diagnostics;
use crate::packet_ref::{NoRecall, PacketRef, Recall};

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

/// Which of `shards` a segment's connection belongs to: the same for both directions
/// and for every connection on its address pair, so that one tracker sees them all.
pub fn shard_of(seg: &TcpSegmentView<'_>, shards: usize) -> usize {
    use std::hash::BuildHasher;
    if shards <= 1 {
        return 0;
    }
    let hash =
        foldhash::fast::FixedState::with_seed(0x5a4d).hash_one(PairKey::new(seg.src, seg.dst));
    // the high bits: the low ones of a fast hash follow the ports too closely
    ((hash >> 32) % shards as u64) as usize
}

/// Where [`Tracker::finish`] is: about to close a connection, or done with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    Before(u64),
    After(u64),
}

/// What is known about a connection from its packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    pub index: u64,
    pub initiator: SocketAddr,
    pub responder: SocketAddr,
    /// The handshake was not captured.
    pub midstream: bool,
    /// Whether any packet of each direction (`Dir::idx`) was captured, even a bare ACK:
    /// a direction never seen may have carried anything.
    pub seen: [bool; 2],
    /// No longer followed (`--max-connections`): what came after is not known.
    pub evicted: bool,
}

impl ConnInfo {
    /// The direction `seg` travels in.
    pub fn dir_of(&self, seg: &TcpSegmentView<'_>) -> Dir {
        if seg.src == self.initiator {
            Dir::FromInitiator
        } else {
            Dir::FromResponder
        }
    }

    /// Source address of traffic in `dir`.
    pub fn source(&self, dir: Dir) -> SocketAddr {
        match dir {
            Dir::FromInitiator => self.initiator,
            Dir::FromResponder => self.responder,
        }
    }

    /// The connection named by its ends, in diagnostics: the same whatever number it
    /// has.
    pub fn ends(&self) -> crate::diag::ConnectionEnds {
        crate::diag::ConnectionEnds(self.initiator, self.responder)
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

    /// Heap held for this connection (buffers at their allocated sizes, waiting requests);
    /// charged against the memory budget. Must be cheap: it is asked after every packet.
    fn held_bytes(&self, conn: &Self::Conn) -> usize {
        let _ = conn;
        0
    }

    /// Heap of what the handler found and has not yet handed on: it leaves between
    /// packets, so a shedding step stops once it holds a step's worth.
    fn output_bytes(&self) -> usize {
        0
    }

    /// Over the memory budget: gives up what this connection holds, saying what in a
    /// `memory_limit` diagnostic. Returns the bytes freed.
    fn shed(
        &mut self,
        conn: &mut Self::Conn,
        info: &ConnInfo,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> usize {
        let _ = (conn, info, at, diags);
        0
    }
}

/// Tracks every TCP connection of the capture: finds each segment's connection (opening
/// one, or telling a closed one's late packet), and keeps the table of open connections,
/// the records of closed ones, the eviction policy and the memory budget together.
#[derive(Debug)]
pub struct Tracker<C> {
    /// Open connections.
    open: Table<C>,
    /// Closed connections, so that their late packets are not taken for new ones.
    closed: ClosedRecords,
    /// Budget for what the open connections hold ([`Connection::cost`]) and the tables.
    budget: Budget,
    next_index: u64,
    max_held_len: usize,
    /// Open connections tracked at once; past it the least recently active one is
    /// forgotten.
    max_connections: usize,
    /// Connections forgotten for `max_connections`.
    evicted: u64,
    /// Connections forgotten at any limit while still followed.
    forgotten: u64,
    /// Reads bytes kept by their spot in a capture file again.
    recall: Arc<dyn Recall>,
}

/// Memory budget by default (`--max-memory`).
pub const DEFAULT_MAX_MEMORY: usize = 256 << 20;

/// Share of the budget each address family's closed records may take.
const CLOSED_SHARE: usize = 16;

/// Open connections tracked at once by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 50_000;
/// Closed connections remembered (between half and all of this many times the open ones
/// allowed), so that their late packets are not taken for new connections.
pub const CLOSED_PER_CONNECTION: usize = 4;

impl<C: Default> Tracker<C> {
    /// `max_held_len` caps out-of-order bytes held per direction.
    pub fn new(max_held_len: usize) -> Self {
        Self::with_limits(max_held_len, DEFAULT_MAX_CONNECTIONS)
    }

    /// A tracker holding `max_held_len` out-of-order bytes per direction and at most
    /// `max_connections` connections.
    pub fn with_limits(max_held_len: usize, max_connections: usize) -> Self {
        let max_connections = max_connections.max(1);
        Self {
            open: Table::default(),
            closed: ClosedRecords::new(max_connections.saturating_mul(CLOSED_PER_CONNECTION)),
            budget: Budget::new(DEFAULT_MAX_MEMORY),
            next_index: 0,
            max_held_len,
            max_connections,
            evicted: 0,
            forgotten: 0,
            recall: Arc::new(NoRecall),
        }
    }

    /// Reads bytes kept by their spot (segments' [`TcpSegmentView::spot`]) again through
    /// `recall`, to compare retransmissions with: without it, every byte is copied.
    pub fn with_recall(mut self, recall: Arc<dyn Recall>) -> Self {
        self.recall = recall;
        self
    }

    /// Sets the memory budget for what the open connections hold.
    pub fn set_max_memory(&mut self, max_memory: usize) {
        self.set_max_memory_of(max_memory, max_memory);
    }

    /// Sets the memory budget for what the open connections hold, `max_memory`, as a
    /// share of `whole` (`--max-memory`) that the process's resident figure is judged by.
    pub fn set_max_memory_of(&mut self, max_memory: usize, whole: usize) {
        self.budget.set_max_memory(max_memory.max(1), whole);
        let max_closed = self.max_connections.saturating_mul(CLOSED_PER_CONNECTION);
        self.closed
            .limit(max_closed, self.budget.max_memory() / CLOSED_SHARE);
    }

    /// Reads the process's resident bytes with `probe` now and then, and sheds when they
    /// grow past the budget, whatever is charged: the program, the report's buffers and
    /// the allocator's free lists are not charged but count as well. Before it sheds,
    /// `give_back` hands the allocator's free pages back to the system.
    pub fn watch_resident(&mut self, probe: fn() -> Option<usize>, give_back: fn()) {
        self.budget.watch_resident(probe, give_back);
    }

    /// Bytes charged against the memory budget now: the tables and what the open
    /// connections hold.
    pub fn charged(&self) -> usize {
        self.budget.charged() + self.tables_cost()
    }

    /// What the table of open connections, its clock and the closed records take, at
    /// their allocated capacity.
    fn tables_cost(&self) -> usize {
        self.open.cost() + self.closed.cost()
    }

    /// Connections numbered so far (one forgotten and met again is numbered twice).
    pub fn connections(&self) -> u64 {
        self.next_index
    }

    /// Connections forgotten at `--max-memory` or `--max-connections` while followed.
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    /// The number of the open connection on `seg`'s address pair, and its handler's
    /// state while it is followed.
    pub fn connection_of(&self, seg: &TcpSegmentView<'_>) -> Option<(u64, Option<&C>)> {
        let conn = self.open.get(&PairKey::new(seg.src, seg.dst))?;
        Some((
            conn.info.index,
            conn.live.as_deref().map(|live| &live.state),
        ))
    }

    /// Takes one TCP segment. A packet of a known connection costs one lookup.
    pub fn segment<H: StreamHandler<Conn = C>>(
        &mut self,
        seg: &TcpSegmentView<'_>,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let key = PairKey::new(seg.src, seg.dst);
        if let Some(conn) = self.open.get_mut(&key) {
            if !starts_new(conn.isn, conn.syn_ack_ack, seg) {
                let closed = track_charged(
                    conn,
                    &mut self.budget,
                    seg,
                    (at, &*self.recall),
                    handler,
                    diags,
                );
                self.settle(&key, closed, at, handler, diags);
                return;
            }
        } else if self.closed.late_packet(&key, seg) {
            return;
        }
        self.make_room(&key, at, handler, diags);
        let index = self.next_index;
        self.next_index += 1;
        let conn = Connection::open(index, seg, at, self.max_held_len, diags);
        if let Some(old) = self.open.insert(key, conn, at.frame) {
            self.budget.uncharge(old.charged);
            old.end(at, handler, diags);
        }
        let Some(conn) = self.open.get_mut(&key) else {
            return;
        };
        let closed = track_charged(
            conn,
            &mut self.budget,
            seg,
            (at, &*self.recall),
            handler,
            diags,
        );
        self.settle(&key, closed, at, handler, diags);
    }

    /// After a segment of the connection on `key`: one that `closed` leaves a record in
    /// its place; one still open may be over the budget.
    fn settle<H: StreamHandler<Conn = C>>(
        &mut self,
        key: &PairKey,
        closed: bool,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        if closed {
            self.retire(key);
        } else {
            self.shed_if_over(key, at, handler, diags);
        }
    }

    /// Moves a connection that closed from the table of open ones to the records of
    /// closed ones.
    fn retire(&mut self, key: &PairKey) {
        let Some(conn) = self.open.remove(key) else {
            return;
        };
        self.budget.uncharge(conn.charged);
        self.closed
            .insert(key, Closed::new(conn.isn, conn.syn_ack_ack));
        self.open.compact_clock();
    }

    /// End of capture: held data is flushed and every open connection closed, in
    /// connection order. `around` is called with each connection's number before
    /// ([`Closing::Before`]) and after it is closed.
    pub fn finish<H: StreamHandler<Conn = C>>(
        mut self,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
        mut around: impl FnMut(Closing, &mut H, &mut Diagnostics),
    ) {
        for key in self.open.followed_in_order() {
            if let Some(conn) = self.open.remove(&key) {
                let index = conn.info.index;
                around(Closing::Before(index), handler, diags);
                conn.end(at, handler, diags);
                around(Closing::After(index), handler, diags);
            }
        }
    }
}

/// Runs `seg` through `conn` and, unless that closed it, charges it what it holds now.
/// Returns whether it closed.
fn track_charged<C, H: StreamHandler<Conn = C>>(
    conn: &mut Connection<C>,
    budget: &mut Budget,
    seg: &TcpSegmentView<'_>,
    (at, recall): (PacketRef, &dyn Recall),
    handler: &mut H,
    diags: &mut Diagnostics,
) -> bool {
    if conn.track(seg, at, recall, handler, diags) {
        return true;
    }
    let cost = conn.cost(handler);
    budget.charge(&mut conn.charged, cost);
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Kind;

    /// Counts what it is handed; follows every connection.
    #[derive(Default)]
    struct Opened {
        closed: Vec<u64>,
    }

    impl StreamHandler for Opened {
        type Conn = ();

        fn delivery(
            &mut self,
            _: &mut (),
            _: &ConnInfo,
            _: Dir,
            _: Delivery<'_>,
            _: &mut Diagnostics,
        ) -> bool {
            true
        }

        fn close(&mut self, _: (), info: &ConnInfo, _: PacketRef, _: &mut Diagnostics) {
            self.closed.push(info.index);
        }
    }

    fn addr(host: u8, port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, host], port))
    }

    struct Run {
        tracker: Tracker<()>,
        handler: Opened,
        diags: Diagnostics,
        frame: u64,
    }

    impl Run {
        fn new(max_connections: usize) -> Self {
            Self {
                tracker: Tracker::with_limits(1 << 16, max_connections),
                handler: Opened::default(),
                diags: Diagnostics::default(),
                frame: 0,
            }
        }

        /// A segment from `src` to `dst`: flags "S", "SA", "A", "FA", "R".
        fn send(&mut self, src: SocketAddr, dst: SocketAddr, seq: u32, flags: &str) {
            self.frame += 1;
            let seg = TcpSegmentView {
                src,
                dst,
                seq,
                ack_number: 0,
                syn: flags.contains('S'),
                ack: flags.contains('A'),
                fin: flags.contains('F'),
                rst: flags.contains('R'),
                window: 0,
                window_scale: None,
                payload: b"",
                missing_len: 0,
                spot: None,
            };
            let at = PacketRef {
                frame: self.frame,
                ..PacketRef::default()
            };
            self.tracker
                .segment(&seg, at, &mut self.handler, &mut self.diags);
        }

        /// A whole connection from client port `port`: handshake, then FINs both ways.
        fn connection(&mut self, port: u16) {
            let (c, s) = (addr(1, port), addr(2, 9093));
            self.send(c, s, 100, "S");
            self.send(s, c, 500, "SA");
            self.send(c, s, 101, "FA");
            self.send(s, c, 501, "FA");
        }
    }

    /// The tables' kept costs are what the tables take after every packet: connections
    /// opened (the table grows), closed (removals leave tombstones, which lower the
    /// capacity a table reports; the closed records grow) and met again (a new SYN
    /// forgets a closed record).
    #[test]
    fn the_kept_table_costs_follow_every_packet() {
        let mut run = Run::new(100_000);
        let check = |run: &Run| {
            assert_eq!(run.tracker.open.cost(), run.tracker.open.cost_now());
            assert_eq!(run.tracker.closed.cost(), run.tracker.closed.cost_now());
        };
        let s = addr(2, 9093);
        for round in 0..2u32 {
            for port in 1000..4000u16 {
                let c = addr(1, port);
                run.send(c, s, 100 + round * 1000, "S");
                check(&run);
            }
            for port in (1000..4000u16).step_by(3) {
                let c = addr(1, port);
                run.send(c, s, 101 + round * 1000, "R");
                check(&run);
            }
        }
        assert!(run.tracker.closed.lens().0 > 0, "closed records were kept");
    }

    /// Records which direction each delivery of data came as.
    #[derive(Default)]
    struct Directions {
        data: Vec<(Dir, Vec<u8>)>,
    }

    impl StreamHandler for Directions {
        type Conn = ();

        fn delivery(
            &mut self,
            _: &mut (),
            _: &ConnInfo,
            dir: Dir,
            delivery: Delivery<'_>,
            _: &mut Diagnostics,
        ) -> bool {
            if let Delivery::Data(bytes, _) = delivery {
                self.data.push((dir, bytes.to_vec()));
            }
            true
        }

        fn close(&mut self, _: (), _: &ConnInfo, _: PacketRef, _: &mut Diagnostics) {}
    }

    #[test]
    fn an_rst_delivers_what_each_direction_holds_as_its_own() {
        let (c, s) = (addr(1, 40000), addr(2, 9093));
        let mut tracker = Tracker::with_limits(1 << 16, 10);
        let (mut handler, mut diags) = (Directions::default(), Diagnostics::default());
        let mut send = |frame: u64, src, dst, seq: u32, flags: &str, payload: &'static [u8]| {
            let seg = TcpSegmentView {
                src,
                dst,
                seq,
                ack_number: 0,
                syn: flags.contains('S'),
                ack: flags.contains('A'),
                fin: false,
                rst: flags.contains('R'),
                window: 0,
                window_scale: None,
                payload,
                missing_len: 0,
                spot: None,
            };
            let at = PacketRef {
                frame,
                ..PacketRef::default()
            };
            tracker.segment(&seg, at, &mut handler, &mut diags);
        };
        send(1, c, s, 100, "S", b"");
        send(2, s, c, 500, "SA", b"");
        // The server's bytes after a hole are held; the client's are delivered at once.
        send(3, s, c, 511, "", b"server");
        send(4, c, s, 101, "", b"client");
        send(5, c, s, 107, "R", b"");
        assert_eq!(
            handler.data,
            vec![
                (Dir::FromInitiator, b"client".to_vec()),
                (Dir::FromResponder, b"server".to_vec()),
            ],
            "the server's held bytes come as the server's when the client resets"
        );
    }

    /// Reads a stream's bytes "again" from memory, as if it lay at offset 0 of capture 0,
    /// or fails every read.
    #[derive(Debug)]
    struct StreamFile(Option<Vec<u8>>);

    impl Recall for StreamFile {
        fn recall(&self, spot: crate::packet_ref::FileSpot, into: &mut [u8]) -> bool {
            let from = spot.offset() as usize;
            let Some(bytes) = self.0.as_ref().and_then(|b| b.get(from..from + into.len())) else {
                return false;
            };
            into.copy_from_slice(bytes);
            true
        }
    }

    /// A stream of 8 KiB in 1 KiB segments, each with its spot in capture 0 (offset =
    /// stream offset), then the same last segment again, through a tracker that reads
    /// its bytes again through `recall`: the diagnostics' kinds.
    fn resent_through(recall: StreamFile, stream: &[u8]) -> Vec<Kind> {
        let (c, s) = (addr(1, 40000), addr(2, 9093));
        let mut tracker: Tracker<()> =
            Tracker::with_limits(1 << 16, 10).with_recall(Arc::new(recall));
        let (mut handler, mut diags) = (Opened::default(), Diagnostics::default());
        let mut send = |frame: u64, seq: u32, syn: bool, from: usize, to: usize| {
            let seg = TcpSegmentView {
                src: c,
                dst: s,
                seq,
                ack_number: 0,
                syn,
                ack: false,
                fin: false,
                rst: false,
                window: 0,
                window_scale: None,
                payload: &stream[from..to],
                missing_len: 0,
                spot: crate::packet_ref::FileSpot::new(0, from as u64),
            };
            let at = PacketRef {
                frame,
                ..PacketRef::default()
            };
            tracker.segment(&seg, at, &mut handler, &mut diags);
        };
        send(1, 100, true, 0, 0);
        for (i, from) in (0..stream.len()).step_by(1024).enumerate() {
            send(2 + i as u64, 101 + from as u32, false, from, from + 1024);
        }
        let last = stream.len() - 1024;
        send(100, 101 + last as u32, false, last, stream.len());
        let kinds = [Kind::TcpOverlapConflict, Kind::TcpOverlapUnread];
        kinds.into_iter().filter(|k| diags.count(*k) > 0).collect()
    }

    #[test]
    fn a_retransmission_over_bytes_that_cannot_be_read_again_is_said_not_compared() {
        let stream: Vec<u8> = (0..8192u32).map(|i| (i % 253) as u8).collect();
        let read = resent_through(StreamFile(Some(stream.clone())), &stream);
        assert_eq!(read, vec![], "the same bytes, read again");
        let mut other = stream.clone();
        other[8000] ^= 1;
        let changed = resent_through(StreamFile(Some(other)), &stream);
        assert_eq!(
            changed,
            vec![Kind::TcpOverlapConflict],
            "the file says otherwise"
        );
        let unread = resent_through(StreamFile(None), &stream);
        assert_eq!(
            unread,
            vec![Kind::TcpOverlapUnread],
            "never taken for the same"
        );
    }

    #[test]
    fn a_late_packet_of_a_closed_connection_is_not_a_new_one() {
        let mut run = Run::new(10);
        run.connection(40000);
        assert_eq!(run.tracker.connections(), 1);
        assert_eq!(run.handler.closed, vec![0]);
        assert!(
            run.tracker.open.len() == 0,
            "a closed connection leaves the table"
        );
        run.send(addr(1, 40000), addr(2, 9093), 102, "A"); // the last ACK
        run.send(addr(1, 40000), addr(2, 9093), 100, "S"); // a retransmitted SYN
        assert_eq!(run.tracker.connections(), 1);
        // A SYN with another ISN is a new connection on the same pair.
        run.send(addr(1, 40000), addr(2, 9093), 7000, "S");
        assert_eq!(run.tracker.connections(), 2);
    }

    #[test]
    fn closed_records_and_the_clock_stay_bounded() {
        // 2 open connections allowed: 8 closed ones remembered, in generations of 4.
        let mut run = Run::new(2);
        for port in 0..5000 {
            run.connection(10000 + port);
        }
        assert_eq!(run.tracker.connections(), 5000);
        let remembered = run.tracker.closed.lens().0;
        assert!((4..=8).contains(&remembered), "{remembered} closed records");
        assert!(
            run.tracker.open.clock_len() <= 1024 + 2,
            "{} clock entries",
            run.tracker.open.clock_len()
        );
        // The newest closed connection is still known; the oldest was forgotten, so a late
        // packet of it opens a connection (as one already open when the capture started).
        run.send(addr(1, 14999), addr(2, 9093), 102, "A");
        assert_eq!(run.tracker.connections(), 5000);
        run.send(addr(1, 10000), addr(2, 9093), 102, "A");
        assert_eq!(run.tracker.connections(), 5001);
    }

    fn assert_clock_bounded(tracker: &Tracker<()>) {
        tracker.open.assert_clock_bounded();
    }

    #[test]
    fn syns_replacing_an_open_connection_do_not_grow_the_clock() {
        let mut run = Run::new(10);
        let (c, s) = (addr(1, 40000), addr(2, 9093));
        for isn in 0..5000u32 {
            run.send(c, s, isn * 1000, "S");
        }
        assert_eq!(run.tracker.connections(), 5000);
        assert_eq!(run.tracker.open.len(), 1);
        assert_clock_bounded(&run.tracker);
    }

    #[test]
    fn stale_entries_are_not_requeued_by_eviction() {
        // A pair replaced many times leaves stale entries; eviction passing them while
        // the pair is active must drop them, not queue them again as current.
        let mut run = Run::new(4);
        let (c, s) = (addr(1, 40000), addr(2, 9093));
        for isn in 0..3000u32 {
            run.send(c, s, isn * 1000, "S");
        }
        run.send(c, s, 1, "A");
        for port in 0..10 {
            run.send(addr(3, 20000 + port), s, 5, "S");
        }
        for port in 0..3000 {
            run.send(c, s, 1, "A");
            let fresh = addr(4, 30000 + port);
            run.send(fresh, s, 5, "S");
            run.send(fresh, s, 6, "R");
            // Compaction must bring the clock back down, or every close would scan it.
            assert!(run.tracker.open.clock_len() <= 2 * run.tracker.open.len() + 1025);
        }
        assert_clock_bounded(&run.tracker);
    }

    #[test]
    fn a_new_connection_is_never_the_one_evicted_for_it() {
        // With the cap reached, the newcomer must not be the one forgotten: its next
        // packet would then open yet another connection.
        let mut run = Run::new(2);
        let s = addr(2, 9093);
        let (k, a, b, d) = (addr(1, 1), addr(1, 2), addr(1, 3), addr(1, 4));
        run.send(k, s, 100, "S");
        run.send(a, s, 100, "S");
        run.send(k, s, 900, "S"); // replaces K's connection
        run.send(k, s, 901, "A");
        run.send(b, s, 100, "S");
        run.send(b, s, 101, "A");
        run.send(d, s, 100, "S");
        run.send(d, s, 101, "A");
        assert_eq!(run.tracker.connections(), 5, "D's ACK is D's, not a sixth");
        assert!(run.tracker.open.contains(&PairKey::new(d, s)));
        assert!(run.tracker.open.contains(&PairKey::new(b, s)));
        assert_clock_bounded(&run.tracker);
    }

    #[test]
    fn ipv6_pairs_have_closed_records_too() {
        let mut run = Run::new(10);
        let (c, s): (SocketAddr, SocketAddr) = (
            "[fd00::1]:40000".parse().unwrap(),
            "[fd00::2]:9093".parse().unwrap(),
        );
        run.send(c, s, 100, "S");
        run.send(s, c, 500, "SA");
        run.send(c, s, 101, "R");
        run.send(s, c, 501, "A");
        assert_eq!(run.tracker.connections(), 1);
        assert_eq!(run.tracker.closed.lens().1, 1);
        run.send(c, s, 9000, "S");
        assert_eq!(run.tracker.connections(), 2);
        assert_eq!(run.tracker.closed.lens().1, 0);
    }
}
