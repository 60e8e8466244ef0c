//! Kafka over TCP: recognises Kafka connections, frames both directions, decodes
//! AllocateProducerIds messages and puts every frame in an outbox for [`crate::pairing`].
//!
//! In: ordered stream deliveries from [`crate::tcp`]. Out: [`message::Message`]s in
//! [`Dissector::out`], in the order they were found, and diagnostics.
//!
//! Which side is the client, and whether a connection is Kafka at all:
//! - a server port given with `--port` decides both;
//! - with the handshake captured, the initiator is the client, and its first message
//!   must be a plausible request header (an API key Kafka defines, a version in that
//!   key's range, a sane size and client_id length); a server that speaks first, or an
//!   implausible first message, means not Kafka;
//! - picked up mid-stream, both directions are searched for a plausible request head;
//!   when exactly one port is below the ephemeral range (32768) that side is taken as
//!   the server, otherwise the first direction to show a request head is the client.
//!
//! A connection found not to be Kafka is dropped and costs nothing more. One whose
//! bytes are TLS (a ClientHello, a ServerHello, or application data records mid-stream)
//! is given up as encrypted, whatever its port and even when `--port` names it.

pub mod allocate_producer_ids;
pub mod apis;
pub mod client_id;
pub mod cluster;
mod conn;
pub mod decoded;
pub mod end_txn;
pub mod framing;
mod given_up;
pub mod header;
pub mod init_producer_id;
pub mod layout;
pub mod message;
pub mod produce;
mod read;
pub mod reader;
pub mod schema;
mod sides;
pub mod tables;
pub mod tls;
pub mod trace;
mod trial;
pub mod waiting;

use std::num::NonZeroU64;
use std::ops::ControlFlow;

use conn::{Holding, State, Streams};
use given_up::NotKafka;
use header::RESPONSE_PREFIX_LEN;
use message::{Endpoints, Outbox};
use read::{endpoints, Found};
use trial::{Signs, Trial};

use crate::diag::obs;
use crate::diag::{Diagnostics, GivenUp, Observation};
use crate::packet_ref::PacketRef;
use crate::tcp::assembler::Delivery;
use crate::tcp::{ConnInfo, Dir, StreamHandler};

pub use conn::{KafkaConn, Reading};

/// The framer of either direction of a Kafka connection: requests to Produce are
/// streamed (the same type both ways, since a direction may be read again as the other).
pub(crate) type KafkaFramer = framing::Framer<produce::RequestReader>;
pub use sides::MAX_DECODED_LEN;

/// Kafka's default `socket.request.max.bytes`: larger size prefixes are not Kafka.
pub const DEFAULT_MAX_FRAME_LEN: u32 = 100 * 1024 * 1024;
/// Bytes malloc (glibc, 64-bit) takes per allocation beyond what was asked: its header,
/// and the rounding up to 16 bytes (counted here at its mean).
pub const MALLOC_OVERHEAD: usize = 16;

/// Ports from here up are taken for clients' ephemeral ports when guessing sides.
const EPHEMERAL_PORTS_START: u16 = 32768;

/// How Kafka is recognised.
/// Which decoded messages keep their bytes as captured, for a sink that draws them: none,
/// those that carry producer ids, or every one (the cluster's too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum KeepRaw {
    #[default]
    Nothing,
    ProducerIds,
    Every,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// Server ports that are Kafka without looking at the bytes.
    pub ports: Vec<u16>,
    pub max_frame_len: u32,
    /// Which decoded messages keep their bytes (for `--format tree`).
    pub keep_raw: KeepRaw,
    /// Requests waiting for a response per connection.
    pub max_pending: usize,
    /// List every message, not only those decoded (the pipeline sets it for `--frame`).
    pub list_every_message: bool,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            ports: Vec::new(),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            keep_raw: KeepRaw::Nothing,
            max_pending: waiting::MAX_PENDING_PER_CONNECTION,
            list_every_message: false,
        }
    }
}

/// The Kafka stage over all connections.
#[derive(Debug, Default)]
pub struct Dissector {
    config: KafkaConfig,
    /// What the connections found, for pairing to take after each packet.
    pub out: Outbox,
    pub kafka_connections: u64,
    /// Connections whose bytes were looked at and not read as Kafka (TLS ones aside).
    pub not_kafka_connections: u64,
    /// Connections whose bytes are TLS, given up as encrypted.
    pub encrypted_connections: u64,
}

impl Dissector {
    pub fn new(config: KafkaConfig) -> Self {
        Self {
            out: Outbox::new(config.list_every_message),
            config,
            ..Self::default()
        }
    }

    /// Client direction forced by `--port`, if either end is a listed server port.
    fn forced_client(&self, info: &ConnInfo) -> Option<Dir> {
        if self.config.ports.contains(&info.responder.port()) {
            Some(Dir::FromInitiator)
        } else if self.config.ports.contains(&info.initiator.port()) {
            Some(Dir::FromResponder)
        } else {
            None
        }
    }

    /// For a connection picked up mid-stream: the client is the side on an ephemeral
    /// port when the other side's port is below that range.
    fn guessed_client(info: &ConnInfo) -> Option<Dir> {
        let low = |port: u16| port < EPHEMERAL_PORTS_START;
        match (low(info.initiator.port()), low(info.responder.port())) {
            (false, true) => Some(Dir::FromInitiator),
            (true, false) => Some(Dir::FromResponder),
            _ => None,
        }
    }

    /// The first delivery of a connection decides how it is read: as Kafka when `--port`
    /// names a side; with the handshake seen, by probing from the initiator's first bytes
    /// (a server that speaks first is not Kafka); mid-stream, by probing from the side the
    /// ports say is the client, or by searching both. `Break(followed)`: this delivery is
    /// done with.
    fn begin(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        dir: Dir,
        delivery: &Delivery<'_>,
        diags: &mut Diagnostics,
    ) -> ControlFlow<bool> {
        let forced = self.forced_client(info);
        let &Delivery::Data(bytes, at) = delivery else {
            if let (Delivery::Gap { .. }, Dir::FromInitiator, false, None) =
                (delivery, dir, info.midstream, forced)
            {
                // The client's first bytes are lost: look for its next request head.
                conn.move_to_probing(Dir::FromInitiator, true, self.trial());
            }
            // Otherwise nothing to go on yet; a connection counts as Kafka from its first byte.
            return ControlFlow::Break(true);
        };
        if let Some(client) = forced {
            self.kafka_connections += 1;
            self.out.decided(info.index, Reading::Kafka);
            conn.move_to_kafka(client, info.midstream);
        } else if !info.midstream {
            if dir != Dir::FromInitiator {
                let response_head = self.response_head(bytes);
                let why = NotKafka::ServerSpokeFirst { response_head };
                return ControlFlow::Break(self.give_up(conn, info, at, why, diags));
            }
            conn.move_to_probing(dir, false, self.trial());
        } else if let Some(client) = Self::guessed_client(info) {
            conn.move_to_probing(client, true, self.trial());
        } else {
            conn.move_to_searching(self.trial());
        }
        ControlFlow::Continue(())
    }

    fn trial(&self) -> Box<Trial> {
        Trial::new(self.config.list_every_message)
    }

    /// TLS bytes before the connection is read as Kafka give it up as encrypted.
    fn found_tls(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        dir: Dir,
        delivery: &Delivery<'_>,
        diags: &mut Diagnostics,
    ) -> bool {
        let Delivery::Data(bytes, at) = delivery else {
            return false;
        };
        if !conn.undecided() {
            return false;
        }
        let Some(seen) = tls::recognise(bytes) else {
            return false;
        };
        conn.move_to_encrypted();
        self.encrypted(info, dir, *at, &seen, diags);
        true
    }

    /// While probing, the client's delivery decides: a request head puts the connection
    /// on trial; a head that cannot be Kafka, or mid-stream too long a search, gives it
    /// up. False: given up.
    fn settle_probe(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        found: &Found,
        diags: &mut Diagnostics,
    ) -> bool {
        let (Some(probe), State::Searching { .. } | State::Probing { .. }) =
            (found.probe, conn.state())
        else {
            return true;
        };
        if probe.recognised {
            let (config, ends) = (&self.config, endpoints(info, found.client));
            conn.put_on_trial(found.client, |other, waiting, trial| {
                read::reread_as_responses(config, ends, other, waiting, trial);
            });
            return true;
        }
        let why = if probe.given_up {
            NotKafka::FirstMessage
        } else if info.midstream && conn.searched_too_long(self.config.max_frame_len) {
            NotKafka::NoRequestHead
        } else {
            return true;
        };
        self.give_up(conn, info, found.at, why, diags)
    }

    /// On trial, each delivery may refute the connection, which gives it up, or prove it,
    /// which admits what it found to the report. False: given up.
    fn settle_trial(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        found: &Found,
        diags: &mut Diagnostics,
    ) -> bool {
        let State::OnTrial { trial, .. } = conn.state() else {
            return true;
        };
        let signs = Signs {
            tally: (found.before, trial.out.tally),
            head_refused: found.probe.is_some_and(|p| p.given_up),
            server_bad_size: found.server_bad_size,
        };
        if let Some(why) = Trial::refuted(signs, info.midstream) {
            return self.give_up(conn, info, found.at, why, diags);
        }
        if trial.proven() {
            if let Some(trial) = conn.prove() {
                self.admit(info, *trial, diags);
            }
        }
        true
    }

    /// A connection on trial is Kafka: what it found joins the report.
    fn admit(&mut self, info: &ConnInfo, trial: Trial, diags: &mut Diagnostics) {
        self.out.absorb(trial.out);
        diags.absorb(trial.diags);
        self.kafka_connections += 1;
        self.out.decided(info.index, Reading::Kafka);
    }

    /// Gives up on a connection as not Kafka. Returns false: it is no longer followed.
    fn give_up(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        at: PacketRef,
        why: NotKafka,
        diags: &mut Diagnostics,
    ) -> bool {
        self.keep_like_blocks(conn);
        conn.move_to_not_kafka();
        self.not_kafka(info, at, why, diags);
        false
    }

    /// Before a connection's state goes, given up or at its end: the answers it holds
    /// that read as a block's grant are counted as unmatched ones (see
    /// [`KafkaConn::like_blocks_held`]), not dropped with it unsaid.
    fn keep_like_blocks(&mut self, conn: &KafkaConn) {
        let held = conn.like_blocks_held();
        self.out.counted.unmatched += held;
        self.out.counted.unmatched_like_blocks += held;
    }

    /// Says why a connection is not Kafka, with the `--port` that would read it anyway
    /// when its bytes did look like Kafka.
    fn not_kafka(
        &mut self,
        info: &ConnInfo,
        at: PacketRef,
        why: NotKafka,
        diags: &mut Diagnostics,
    ) {
        self.not_kafka_connections += 1;
        self.out.decided(info.index, Reading::NotKafka);
        let server_port = Self::guessed_client(info).map_or(info.responder.port(), |client| {
            info.destination(client).port()
        });
        given_up::report_not_kafka(info, at, why, server_port, diags);
    }

    /// Says that a connection is TLS, `dir` the direction of the bytes that showed it.
    fn encrypted(
        &mut self,
        info: &ConnInfo,
        dir: Dir,
        at: PacketRef,
        seen: &tls::Seen,
        diags: &mut Diagnostics,
    ) {
        self.encrypted_connections += 1;
        self.out.decided(info.index, Reading::Encrypted);
        let client = match seen {
            tls::Seen::ClientHello { .. } => dir,
            tls::Seen::ServerHello => dir.reverse(),
            tls::Seen::ApplicationData => self
                .forced_client(info)
                .or_else(|| Self::guessed_client(info))
                .unwrap_or(Dir::FromInitiator),
        };
        given_up::report_encrypted(info, client, at, seen, diags);
    }

    /// Whether a server's first bytes start like a Kafka response: a size Kafka accepts.
    fn response_head(&self, bytes: &[u8]) -> bool {
        let size = bytes
            .get(..framing::SIZE_LEN)
            .and_then(|b| <[u8; framing::SIZE_LEN]>::try_from(b).ok())
            .map(i32::from_be_bytes);
        size.and_then(|s| u32::try_from(s).ok())
            .is_some_and(|s| (RESPONSE_PREFIX_LEN as u32..=self.config.max_frame_len).contains(&s))
    }

    /// The end of a connection read as Kafka: what its streams ended inside of, and its
    /// requests still waiting, of unknown outcome where the capture may have lost their
    /// answer.
    fn finish(
        &mut self,
        info: &ConnInfo,
        client: Dir,
        streams: Streams,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) {
        let ends = endpoints(info, client);
        read::report_unfinished(&streams.framers, &streams.pending, client, ends, diags);
        // Unanswered only when every server byte after the request was captured and read.
        let server = client.reverse();
        let server_unseen = !info.seen.get(server.idx()).copied().unwrap_or(false);
        if server_unseen {
            one_sided(ends, streams.pending.len(), at, diags);
        }
        let (lost_since, evicted) = (streams.server_loss.map(NonZeroU64::get), info.evicted);
        let may_be_lost = |request_frame| {
            evicted || server_unseen || lost_since.is_some_and(|f| f >= request_frame)
        };
        streams.pending.close(ends, may_be_lost, &mut self.out);
    }
}

impl StreamHandler for Dissector {
    type Conn = KafkaConn;

    fn delivery(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        dir: Dir,
        delivery: Delivery<'_>,
        diags: &mut Diagnostics,
    ) -> bool {
        if self.found_tls(conn, info, dir, &delivery, diags) {
            return false;
        }
        if let State::Unknown = conn.state() {
            if let ControlFlow::Break(followed) = self.begin(conn, info, dir, &delivery, diags) {
                return followed;
            }
        }
        // Given up: nothing more is read.
        let Some(parts) = conn.parts(dir, &mut self.out, diags) else {
            return false;
        };
        let found = read::read(&self.config, parts, info, dir, delivery);
        self.settle_probe(conn, info, &found, diags) && self.settle_trial(conn, info, &found, diags)
    }

    fn close(&mut self, conn: KafkaConn, info: &ConnInfo, at: PacketRef, diags: &mut Diagnostics) {
        // what is said of its wire concerns producer ids only if it carried them
        let about_producer_ids = match conn.state() {
            State::Kafka { apis, .. } => !apis.carried_no_producer_ids(),
            _ => true,
        };
        self.keep_like_blocks(&conn);
        match conn.into_state() {
            State::Searching { .. } | State::Probing { .. } => {
                self.not_kafka(info, at, NotKafka::Undecided, diags);
            }
            // Nothing refuted it, but a short ZooKeeper session reads as Kafka as well:
            // unproven is not Kafka, and what it gave is dropped with the trial.
            State::OnTrial { .. } => self.not_kafka(info, at, NotKafka::TrialUnproven, diags),
            State::Kafka {
                client, streams, ..
            } => self.finish(info, client, streams, at, diags),
            State::Unknown | State::NotKafka | State::Encrypted => {}
        }
        diags.connection_read(info.index, about_producer_ids);
    }

    fn output_bytes(&self) -> usize {
        self.out.held_bytes()
    }

    fn held_bytes(&self, conn: &KafkaConn) -> usize {
        conn.held_bytes()
    }

    fn shed(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> usize {
        let before = conn.held_bytes();
        // With the client known, the older half of the waiting requests is given up to
        // where its frames go.
        let Some(Holding { streams, client }) = conn.holding() else {
            return 0;
        };
        let given_up_to = client.map(|(client, trial)| (client, trial.unwrap_or(&mut self.out)));
        let client = given_up_to.as_ref().map(|(client, _)| *client);
        let mut what = shed_framers(streams, client, at);
        if let Some((client, out)) = given_up_to {
            let ends = endpoints(info, client);
            let max_pending = self.config.max_pending;
            what.extend(shed_pending(&mut streams.pending, ends, max_pending, out));
        }
        if what.is_empty() {
            return 0;
        }
        let what = Observation::MemoryLimit(obs::MemoryLimit {
            connection: info.ends(),
            given_up: GivenUp::Held {
                what: &what.join(" and "),
            },
        });
        diags.add(Some(info.index), at, what);
        before.saturating_sub(conn.held_bytes())
    }
}

/// Over the memory budget: the framers drop what they hold. Says what each gave up.
fn shed_framers(streams: &mut Streams, client: Option<Dir>, at: PacketRef) -> Vec<String> {
    let mut what = Vec::new();
    for (framer, dir) in streams
        .framers
        .iter_mut()
        .zip([Dir::FromInitiator, Dir::FromResponder])
    {
        let freed = framer.shed();
        if freed == 0 {
            continue;
        }
        let side = match client {
            Some(c) if c == dir => "client",
            Some(_) => "server",
            None => "one side",
        };
        what.push(format!("{freed} bytes of the {side}'s stream being read"));
        if client.is_some_and(|c| c != dir) {
            streams.server_loss = Some(conn::loss_at(at.frame)); // answers may be among them
        }
    }
    what
}

/// Over the memory budget: gives up the older half of a connection's waiting requests
/// (AllocateProducerIds ones to `out`). Says how many.
fn shed_pending(
    pending: &mut waiting::Waiting,
    ends: Endpoints,
    max_pending: usize,
    out: &mut Outbox,
) -> Option<String> {
    let waiting = pending.len();
    let given_up = pending.shed(ends, max_pending, out);
    (given_up > 0).then(|| {
        format!(
            "the oldest {given_up} of its {waiting} waiting requests (AllocateProducerIds ones reported response_unknown)"
        )
    })
}

/// A Kafka connection of which only the client's packets were captured: whatever the
/// server answered is not in the capture (a capture point that sees one direction).
fn one_sided(ends: Endpoints, waiting: usize, at: PacketRef, diags: &mut Diagnostics) {
    let Endpoints {
        connection,
        client,
        server,
    } = ends;
    let what = Observation::OneSidedConnection(obs::OneSidedConnection {
        client,
        server,
        requests_waiting: waiting as u64,
    });
    diags.add(Some(connection), at, what);
}
