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
pub mod framing;
pub mod header;
pub mod layout;
pub mod message;
pub mod reader;
mod sides;
pub mod tables;
pub mod tls;
pub mod waiting;

use framing::{FrameHandler, Framer, GapEffect, MAX_HEAD_LEN};
use header::{REQUEST_HEAD_PREFIX_LEN, RESPONSE_PREFIX_LEN};
use sides::{RequestSide, ResponseSide, Side};

use tables::ApiKey;

use crate::capture::PacketRef;
use crate::diag::{Diagnostics, Fact, Kind};
use crate::tcp::assembler::Delivery;
use crate::tcp::{ConnInfo, Dir, StreamHandler};
use message::{Endpoints, Outbox, Tally};
use waiting::Waiting;

pub use sides::MAX_DECODED_LEN;

/// Kafka's default `socket.request.max.bytes`: larger size prefixes are not Kafka.
pub const DEFAULT_MAX_FRAME_LEN: u32 = 100 * 1024 * 1024;
/// Bytes malloc (glibc, 64-bit) takes per allocation beyond what was asked: its header,
/// and the rounding up to 16 bytes (counted here at its mean).
pub const MALLOC_OVERHEAD: usize = 16;

/// Ports from here up are taken for clients' ephemeral ports when guessing sides.
const EPHEMERAL_PORTS_START: u16 = 32768;

/// How Kafka is recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// Server ports that are Kafka without looking at the bytes.
    pub ports: Vec<u16>,
    pub max_frame_len: u32,
    /// Keep the bytes of AllocateProducerIds messages (for `--format tree`).
    pub keep_raw: bool,
    /// Requests waiting for a response per connection.
    pub max_pending: usize,
    /// List every message, not only AllocateProducerIds's (for `--frame`).
    pub list_every_message: bool,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            ports: Vec::new(),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            keep_raw: false,
            max_pending: waiting::MAX_PENDING_PER_CONNECTION,
            list_every_message: false,
        }
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// No data seen yet.
    #[default]
    Unknown,
    /// Deciding whether this is Kafka. `client` is known (handshake seen, or guessed
    /// from the ports) or not (mid-stream: either direction may prove to be the client).
    Probing {
        client: Option<Dir>,
    },
    Kafka {
        client: Dir,
    },
    /// Given up as not Kafka (and said so); nothing more is read.
    NotKafka,
    /// Given up as TLS (and said so); nothing more is read.
    Encrypted,
}

/// Kafka state of one TCP connection.
#[derive(Debug, Default)]
pub struct KafkaConn {
    role: Role,
    /// Framers by direction (`Dir::idx`); set up when the role is first decided.
    framers: Option<Box<[Framer; 2]>>,
    pending: Waiting,
    /// API key and correlation id of the last request, to check candidates against.
    last_request: Option<(ApiKey, i32)>,
    /// `pending.registered()` when the server side was last searched again.
    rescanned_at: u64,
    /// Until its frames prove it Kafka, what they gave is held here, out of the report.
    trial: Option<Box<Trial>>,
    /// The last frame where bytes of the server's stream were lost or passed over.
    server_loss: Option<u64>,
}

/// How far the Kafka stage has got with a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Read as Kafka (counted in `kafka_connections`).
    Kafka,
    /// Given up as not Kafka, with a `not_kafka` diagnostic.
    NotKafka,
    /// Given up as TLS, with a `tls_encrypted` diagnostic.
    Encrypted,
    /// Still being looked at, or on trial.
    Undecided,
}

impl KafkaConn {
    pub fn reading(&self) -> Reading {
        match self.role {
            Role::Kafka { .. } if self.trial.is_none() => Reading::Kafka,
            Role::NotKafka => Reading::NotKafka,
            Role::Encrypted => Reading::Encrypted,
            _ => Reading::Undecided,
        }
    }
}

/// A connection whose bytes look like Kafka but are not proven to be: the first message of
/// a ZooKeeper session reads as a Produce request and its answer as the response. Its
/// frames go to an outbox and diagnostics of its own, read strictly (every
/// request head plausible and counting up, every answer to a request of this connection),
/// until enough of them prove it ([`Trial::proven`]), which adds them to the report, or one
/// refutes it, or the connection ends first, either of which drops them with a `not_kafka`
/// diagnostic.
#[derive(Debug, Default)]
struct Trial {
    out: Outbox,
    diags: Diagnostics,
}

/// Answers that prove a connection Kafka: a third of a ZooKeeper session's reads as
/// one only when its first three operations are numbered like Kafka's correlation ids.
const PROVING_ANSWERS: u64 = 3;
/// Requests in a chain (each plausible, correlation ids counting up) that prove it.
const PROVING_REQUESTS: u64 = 4;

impl Trial {
    fn new(list_every_message: bool) -> Box<Self> {
        Box::new(Self {
            out: Outbox::new(list_every_message),
            ..Self::default()
        })
    }

    /// What in the last delivery refutes the trial, if anything: a request head that is
    /// not a plausible one counting up, a size from the server Kafka cannot have, or an
    /// answer to nothing (mid-stream, answers to requests before the capture come first).
    fn refuted(
        &self,
        (before, after): (Tally, Tally),
        head_refused: bool,
        server_bad_size: bool,
        midstream: bool,
    ) -> Option<NotKafka> {
        if head_refused {
            Some(NotKafka::TrialHead)
        } else if server_bad_size {
            Some(NotKafka::TrialAnswerSize)
        } else if after.unmatched > before.unmatched && (!midstream || before.answers > 0) {
            Some(NotKafka::TrialAnswer)
        } else {
            None
        }
    }

    /// Enough frames, or an AllocateProducerIds request: only brokers send those, and
    /// holding its exchange back would hand it to the analysis out of time order; or an
    /// answered ApiVersions request: every Kafka client opens with one, and the
    /// lookalikes' first messages cannot read as one (ZooKeeper's ConnectRequest starts
    /// with protocol version 0, read as Produce v0; PostgreSQL's StartupMessage with
    /// 3.0, read as Metadata v0); or an answered request of a flexible version, for the
    /// same reason (a connection picked up mid-stream that carries two heartbeats and
    /// ends, as a killed controller's do). So a short Kafka session (ApiVersions, a
    /// registration, close) is read, and a short ZooKeeper one is not.
    fn proven(&self) -> bool {
        let Tally {
            requests,
            allocate_requests,
            answers,
            api_versions_answers,
            flexible_answers,
            ..
        } = self.out.tally;
        allocate_requests > 0
            || api_versions_answers > 0
            || flexible_answers > 0
            || answers >= PROVING_ANSWERS
            || requests >= PROVING_REQUESTS
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
    /// One connection whose reading is noted as it is decided (for `--frame`), and it.
    watched: Option<(u64, Reading)>,
}

fn framer_for(client: bool, resync: bool) -> Framer {
    let prefix_len = if client {
        REQUEST_HEAD_PREFIX_LEN
    } else {
        RESPONSE_PREFIX_LEN
    };
    if resync {
        Framer::resyncing(prefix_len)
    } else {
        Framer::new(prefix_len)
    }
}

/// Framers for a connection whose client is `client`.
fn framers(client: Dir, resync: bool) -> Box<[Framer; 2]> {
    let is_client = |dir: Dir| dir == client;
    Box::new([
        framer_for(is_client(Dir::FromInitiator), resync),
        framer_for(is_client(Dir::FromResponder), resync),
    ])
}

impl Dissector {
    pub fn new(config: KafkaConfig) -> Self {
        Self {
            out: Outbox::new(config.list_every_message),
            config,
            ..Self::default()
        }
    }

    /// Notes how connection `index`, now at `now`, ends up being read. A connection no
    /// longer followed shows as undecided: what was decided for it stands.
    pub fn watch(&mut self, index: u64, now: Reading) {
        let known = self.watched.is_some_and(|(watched, _)| watched == index);
        if !(known && now == Reading::Undecided) {
            self.watched = Some((index, now));
        }
    }

    /// How the watched connection was read, as far as is known.
    pub fn watched(&self) -> Option<(u64, Reading)> {
        self.watched
    }

    fn decided(&mut self, index: u64, reading: Reading) {
        if let Some((watched, now)) = &mut self.watched {
            if *watched == index {
                *now = reading;
            }
        }
    }

    fn endpoints(info: &ConnInfo, client: Dir) -> Endpoints {
        Endpoints {
            connection: info.index,
            client: info.source(client),
            server: info.destination(client),
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

    /// Decides the role from the first data. `false`: not Kafka.
    fn start(&mut self, conn: &mut KafkaConn, info: &ConnInfo, dir: Dir) -> bool {
        if let Some(client) = self.forced_client(info) {
            conn.role = Role::Kafka { client };
            conn.framers = Some(framers(client, info.midstream));
            self.kafka_connections += 1;
            self.decided(info.index, Reading::Kafka);
        } else if !info.midstream {
            if dir != Dir::FromInitiator {
                return false; // the server spoke first: not Kafka (reported by the caller)
            }
            conn.role = Role::Probing { client: Some(dir) };
            conn.framers = Some(framers(dir, false));
            conn.trial = Some(Trial::new(self.config.list_every_message));
        } else {
            let client = Self::guessed_client(info);
            conn.role = Role::Probing { client };
            conn.trial = Some(Trial::new(self.config.list_every_message));
            // Unknown client: both directions look for request heads.
            conn.framers = Some(match client {
                Some(client) => framers(client, true),
                None => Box::new([framer_for(true, true), framer_for(true, true)]),
            });
        }
        true
    }

    /// Over the memory budget: gives up the older half of a connection's waiting requests.
    fn shed_pending(
        out: &mut Outbox,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        client: Dir,
        what: &mut Vec<String>,
    ) {
        let ends = Self::endpoints(info, client);
        let out = match conn.trial.as_deref_mut() {
            Some(trial) => &mut trial.out,
            None => out,
        };
        let waiting = conn.pending.len();
        let given_up = conn.pending.shed(ends, out);
        if given_up > 0 {
            what.push(format!(
                "the oldest {given_up} of its {waiting} waiting requests (AllocateProducerIds ones reported response_unknown)"
            ));
        }
    }

    fn report_unfinished(
        framers: &[Framer; 2],
        client: Dir,
        ends: Endpoints,
        diags: &mut Diagnostics,
    ) {
        for dir in [client, client.reverse()] {
            let side = if dir == client {
                Side::Client
            } else {
                Side::Server
            };
            let what = if dir == client { "request" } else { "response" };
            if let Some((len, first)) = framers.get(dir.idx()).and_then(Framer::unfinished) {
                diags.push(
                    Kind::KafkaFrameIncomplete,
                    Some(ends.connection),
                    first,
                    format!(
                        "the {}'s stream ended inside a Kafka {what} after {len} of its bytes; the message is not reported",
                        side.name()
                    ),
                    vec![("side", side.name().into()), ("bytes", len.into())],
                );
            }
        }
    }
}

/// What the client side's handler found while probing, and the packet it looked at.
#[derive(Debug, Clone, Copy)]
struct Probe {
    recognised: bool,
    given_up: bool,
    at: PacketRef,
}

/// Why a connection's bytes were not read as Kafka.
#[derive(Debug, Clone, Copy)]
enum NotKafka {
    /// With the handshake captured, the server sent the first bytes; `response_head`:
    /// they start like a Kafka response (a size Kafka accepts).
    ServerSpokeFirst { response_head: bool },
    /// The client's first message is no Kafka request.
    FirstMessage,
    /// Picked up mid-stream, and no request head was found in a window of bytes.
    NoRequestHead,
    /// The connection ended before its bytes showed Kafka framing either way.
    Undecided,
    /// On trial, a later request head is not a plausible one counting up.
    TrialHead,
    /// On trial, the server sent a size prefix Kafka cannot have.
    TrialAnswerSize,
    /// On trial, the server answered a request this connection did not send.
    TrialAnswer,
    /// It ended (or the capture did) while on trial: its frames read as Kafka, but too
    /// few to prove it.
    TrialUnproven,
}

impl NotKafka {
    /// A short name of the reason, for the diagnostic's facts.
    fn name(self) -> &'static str {
        match self {
            Self::ServerSpokeFirst { .. } => "server_spoke_first",
            Self::FirstMessage => "first_message",
            Self::NoRequestHead => "no_request_head",
            Self::Undecided => "undecided",
            Self::TrialHead => "trial_head",
            Self::TrialAnswerSize => "trial_answer_size",
            Self::TrialAnswer => "trial_answer",
            Self::TrialUnproven => "trial_unproven",
        }
    }

    fn reason(self) -> String {
        match self {
            Self::ServerSpokeFirst { .. } => "with its handshake captured, the server sent the first bytes, which a Kafka server never does (or the capture holds only the server's direction)".into(),
            Self::FirstMessage => "the client's first message is not a Kafka request header (a known API key and version, a sane size and client id length)".into(),
            Self::NoRequestHead => "it was picked up mid-stream and no Kafka request head was found in more bytes of either direction than the largest frame (--max-frame)".into(),
            Self::Undecided => "it ended before its bytes showed a Kafka request head".into(),
            Self::TrialHead => format!("its first frames read as Kafka, but a later request head is not a Kafka one whose correlation id counts up (before {PROVING_REQUESTS} requests or {PROVING_ANSWERS} answers proved it), as in a ZooKeeper session"),
            Self::TrialAnswerSize => format!("its first frames read as Kafka, but the server then sent a size prefix Kafka cannot have (before {PROVING_ANSWERS} answers proved it)"),
            Self::TrialAnswer => format!("its first frames read as Kafka, but the server then answered a correlation id no request carried (before {PROVING_ANSWERS} answers proved it)"),
            Self::TrialUnproven => format!("its frames read as Kafka, but it ended (or the capture did) before {PROVING_ANSWERS} answers, {PROVING_REQUESTS} requests or an answered ApiVersions request proved it, as a short ZooKeeper session does; its frames are not counted"),
        }
    }

    /// What would have to be true for `--port` to read the connection as Kafka, when its
    /// bytes did look like Kafka frames; `None` when they did not, and `--port` would
    /// only misread them.
    fn port_would_help_if(self) -> Option<&'static str> {
        match self {
            Self::ServerSpokeFirst {
                response_head: true,
            } => Some("if the capture holds only the server's side of a Kafka connection (its first bytes start like a Kafka response)"),
            Self::TrialHead => Some("if it is Kafka from a client that does not number its requests in order"),
            Self::TrialAnswerSize => Some("if it is Kafka and that size prefix is damage in the capture"),
            Self::TrialAnswer => Some("if it is Kafka and that answer is to a request the capture lost"),
            Self::TrialUnproven => Some("if it is a short Kafka session"),
            Self::ServerSpokeFirst {
                response_head: false,
            }
            | Self::FirstMessage
            | Self::NoRequestHead
            | Self::Undecided => None,
        }
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
        if let (Role::Unknown | Role::Probing { .. }, Delivery::Data(bytes, at)) =
            (conn.role, &delivery)
        {
            if let Some(seen) = tls::recognise(bytes) {
                conn.role = Role::Encrypted;
                conn.trial = None; // what it seemed to hold was not Kafka
                conn.framers = None;
                self.encrypted(info, dir, *at, &seen, diags);
                return false;
            }
        }
        if conn.role == Role::Unknown {
            if let (Delivery::Gap { .. }, Dir::FromInitiator, false) =
                (&delivery, dir, info.midstream)
            {
                if self.forced_client(info).is_none() {
                    // The client's first bytes are lost: look for its next request head.
                    conn.role = Role::Probing {
                        client: Some(Dir::FromInitiator),
                    };
                    conn.framers = Some(framers(Dir::FromInitiator, true));
                    conn.trial = Some(Trial::new(self.config.list_every_message));
                    return true;
                }
            }
            match delivery {
                // Nothing to go on yet; a connection counts as Kafka from its first byte.
                Delivery::Gap { .. } | Delivery::Fin(_) | Delivery::Conflict { .. } => return true,
                Delivery::Data(bytes, at) => {
                    if !self.start(conn, info, dir) {
                        conn.role = Role::NotKafka;
                        let response_head = self.response_head(bytes);
                        self.not_kafka(
                            info,
                            at,
                            NotKafka::ServerSpokeFirst { response_head },
                            diags,
                        );
                        return false;
                    }
                }
            }
        }
        let (client, probing) = match conn.role {
            Role::Kafka { client } => (client, false),
            Role::Probing {
                client: Some(client),
            } => (client, true),
            // Mid-stream, client unknown: this direction is tried as the client.
            Role::Probing { client: None } => (dir, true),
            Role::Unknown => return true,
            Role::NotKafka | Role::Encrypted => return false,
        };
        let ends = Self::endpoints(info, client);
        let Some(framers) = conn.framers.as_deref_mut() else {
            return true;
        };
        // A connection on trial has an outbox and diagnostics of its own.
        let mut trial = conn.trial.take();
        let on_trial = trial.is_some();
        let (out, found): (&mut Outbox, &mut Diagnostics) = match trial.as_deref_mut() {
            Some(t) => (&mut t.out, &mut t.diags),
            None => (&mut self.out, &mut *diags),
        };
        let before = out.tally;
        let mut server_bad_size = false;
        let delivery_at = delivery.at();
        let [initiator_side, responder_side] = framers;
        let (framer, other) = match dir {
            Dir::FromInitiator => (initiator_side, responder_side),
            Dir::FromResponder => (responder_side, initiator_side),
        };
        let was_lost = framer.is_lost();
        let mut probe = None;
        let gap_effect = if dir == client {
            let mut handler = RequestSide {
                config: &self.config,
                waiting: &mut conn.pending,
                out: &mut *out,
                ends,
                diags: &mut *found,
                last_request: &mut conn.last_request,
                probing,
                recognised: false,
                given_up: false,
                role_unsure: conn.role == (Role::Probing { client: None }),
                strict: on_trial,
            };
            let effect = feed(framer, delivery, &mut handler);
            probe = Some(Probe {
                recognised: handler.recognised,
                given_up: handler.given_up,
                at: delivery_at,
            });
            // New requests may be what responses held while resynchronising wait for.
            let registered = conn.pending.registered();
            if other.is_lost()
                && conn.role != (Role::Probing { client: None })
                && registered != conn.rescanned_at
            {
                conn.rescanned_at = registered;
                let mut handler = ResponseSide {
                    config: &self.config,
                    waiting: &mut conn.pending,
                    out: &mut *out,
                    ends,
                    diags: &mut *found,
                    bad_size: false,
                    resynced_at: None,
                };
                other.rescan(&mut handler);
            }
            effect
        } else {
            let mut handler = ResponseSide {
                config: &self.config,
                waiting: &mut conn.pending,
                out: &mut *out,
                ends,
                diags: &mut *found,
                bad_size: false,
                resynced_at: None,
            };
            let (is_gap, is_data) = (
                matches!(delivery, Delivery::Gap { .. }),
                matches!(delivery, Delivery::Data(..)),
            );
            let effect = feed(framer, delivery, &mut handler);
            server_bad_size = handler.bad_size;
            // Server bytes lost here, or held unframed while framing is searched for: an
            // answer may be among them.
            let held_unframed = is_data && framer.is_lost();
            if is_gap || handler.bad_size || handler.resynced_at.is_some() || held_unframed {
                conn.server_loss = Some(delivery_at.frame);
            }
            effect
        };
        if let Some((GapEffect::Lost { frame_lost }, len, at)) = gap_effect {
            if !was_lost {
                let side = if dir == client {
                    Side::Client
                } else {
                    Side::Server
                };
                framing_lost(found, info, side, (len, at), frame_lost);
            }
        }
        if let (true, Some(probe)) = (probing, probe.as_ref()) {
            if probe.recognised {
                if conn.role == (Role::Probing { client: None }) {
                    // The other direction was tried as a client too; it carries responses,
                    // and the bytes it holds may answer the requests just found.
                    if let Some(other) = conn
                        .framers
                        .as_deref_mut()
                        .and_then(|f| f.get_mut(client.reverse().idx()))
                    {
                        let old = std::mem::replace(other, framer_for(false, true));
                        *other = old.retarget(RESPONSE_PREFIX_LEN);
                        let mut handler = ResponseSide {
                            config: &self.config,
                            waiting: &mut conn.pending,
                            out: &mut *out,
                            ends,
                            diags: &mut *found,
                            bad_size: false,
                            resynced_at: None,
                        };
                        other.rescan(&mut handler);
                    }
                }
                conn.role = Role::Kafka { client };
            } else if probe.given_up {
                conn.role = Role::NotKafka;
                self.not_kafka(info, probe.at, NotKafka::FirstMessage, diags);
                return false;
            } else if info.midstream && self.searched_too_long(conn) {
                conn.role = Role::NotKafka;
                self.not_kafka(info, probe.at, NotKafka::NoRequestHead, diags);
                return false;
            }
        }
        let Some(trial) = trial else {
            return true;
        };
        let Role::Kafka { .. } = conn.role else {
            conn.trial = Some(trial); // still probing
            return true;
        };
        let signs = (before, trial.out.tally);
        let head_refused = probe.as_ref().is_some_and(|p| p.given_up);
        if let Some(why) = trial.refuted(signs, head_refused, server_bad_size, info.midstream) {
            conn.role = Role::NotKafka;
            self.not_kafka(info, delivery_at, why, diags);
            return false;
        }
        if trial.proven() {
            self.admit(info, *trial, diags);
        } else {
            conn.trial = Some(trial);
        }
        true
    }

    fn output_bytes(&self) -> usize {
        self.out.held_bytes()
    }

    /// The connection's boxes (its framers, its trial) and what each holds.
    fn held_bytes(&self, conn: &KafkaConn) -> usize {
        let framers = conn.framers.as_deref().map_or(0, |f| {
            size_of::<[Framer; 2]>()
                + MALLOC_OVERHEAD
                + f.iter().map(Framer::held_bytes).sum::<usize>()
        });
        let trial = conn.trial.as_deref().map_or(0, |t| {
            size_of::<Trial>() + MALLOC_OVERHEAD + t.out.held_bytes()
        });
        framers + conn.pending.held_bytes() + trial
    }

    fn shed(
        &mut self,
        conn: &mut KafkaConn,
        info: &ConnInfo,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> usize {
        let client = match conn.role {
            Role::Kafka { client } => Some(client),
            Role::Probing { client } => client,
            Role::Unknown | Role::NotKafka | Role::Encrypted => return 0,
        };
        let before = self.held_bytes(conn);
        let mut what = Vec::new();
        if let Some(framers) = conn.framers.as_deref_mut() {
            for (framer, dir) in framers
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
                    conn.server_loss = Some(at.frame); // answers may be among them
                }
            }
        }
        if let Some(client) = client {
            Self::shed_pending(&mut self.out, conn, info, client, &mut what);
        }
        if what.is_empty() {
            return 0;
        }
        diags.push(
            Kind::MemoryLimit,
            Some(info.index),
            at,
            format!(
                "over the memory budget (--max-memory), connection {} gave up {}",
                info.index,
                what.join(" and ")
            ),
            vec![("given_up", what.join(" and ").into())],
        );
        before.saturating_sub(self.held_bytes(conn))
    }

    fn close(&mut self, conn: KafkaConn, info: &ConnInfo, at: PacketRef, diags: &mut Diagnostics) {
        if let Role::Probing { .. } = conn.role {
            self.not_kafka(info, at, NotKafka::Undecided, diags);
            return;
        }
        if let (Role::Kafka { .. }, Some(_)) = (conn.role, &conn.trial) {
            // Nothing refuted it, but a short ZooKeeper session reads as Kafka as well:
            // unproven is not Kafka, and what it gave is dropped with the trial.
            self.not_kafka(info, at, NotKafka::TrialUnproven, diags);
            return;
        }
        let (Role::Kafka { client }, Some(framers)) = (conn.role, &conn.framers) else {
            return;
        };
        let ends = Self::endpoints(info, client);
        Self::report_unfinished(framers, client, ends, diags);
        // Unanswered only when every server byte after the request was captured and read.
        let server = client.reverse();
        let server_unseen = !info.seen.get(server.idx()).copied().unwrap_or(false);
        if server_unseen {
            Self::one_sided(ends, conn.pending.len(), at, diags);
        }
        let (lost_since, evicted) = (conn.server_loss, info.evicted);
        let may_be_lost = |request_frame| {
            evicted || server_unseen || lost_since.is_some_and(|f| f >= request_frame)
        };
        conn.pending.close(ends, may_be_lost, &mut self.out);
    }
}

impl Dissector {
    /// A Kafka connection of which only the client's packets were captured: whatever the
    /// server answered is not in the capture (a capture point that sees one direction).
    fn one_sided(ends: Endpoints, waiting: usize, at: PacketRef, diags: &mut Diagnostics) {
        let Endpoints {
            connection,
            client,
            server,
        } = ends;
        diags.push_with(Kind::OneSidedConnection, Some(connection), at, || {
            let message = format!(
                "only the client's direction of connection {client} <-> {server} was captured (not one packet from the server, not even an ACK): its {waiting} waiting request(s) may have been answered"
            );
            let facts = vec![
                ("client", client.to_string().into()),
                ("server", server.to_string().into()),
                ("requests_waiting", (waiting as u64).into()),
            ];
            (message, facts)
        });
    }

    /// A connection on trial is Kafka: what it found joins the report.
    fn admit(&mut self, info: &ConnInfo, trial: Trial, diags: &mut Diagnostics) {
        self.out.absorb(trial.out);
        diags.absorb(trial.diags);
        self.kafka_connections += 1;
        self.decided(info.index, Reading::Kafka);
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

    /// Gives up on a connection whose bytes are TLS, out loud: what was seen, on which
    /// port, and the server name the client asked for when its ClientHello says.
    fn encrypted(
        &mut self,
        info: &ConnInfo,
        dir: Dir,
        at: PacketRef,
        seen: &tls::Seen,
        diags: &mut Diagnostics,
    ) {
        self.encrypted_connections += 1;
        self.decided(info.index, Reading::Encrypted);
        let client = match seen {
            tls::Seen::ClientHello { .. } => dir,
            tls::Seen::ServerHello => dir.reverse(),
            tls::Seen::ApplicationData => self
                .forced_client(info)
                .or_else(|| Self::guessed_client(info))
                .unwrap_or(Dir::FromInitiator),
        };
        let (client, server) = (info.source(client), info.destination(client));
        let port = server.port();
        let mut facts = vec![
            ("port", Fact::from(u64::from(port))),
            ("client", client.to_string().into()),
            ("server", server.to_string().into()),
            ("seen", seen.name().into()),
        ];
        let mut what = seen.describe().to_owned();
        if let tls::Seen::ClientHello {
            server_name: Some(name),
        } = seen
        {
            what.push_str(&format!(", server name {name}"));
            facts.push(("server_name", name.clone().into()));
        }
        diags.push(
            Kind::TlsEncrypted,
            Some(info.index),
            at,
            format!(
                "connection {client} -> {server} is TLS on port {port} ({what}): encrypted, cannot be read; pidshark reads Kafka only where it is not encrypted"
            ),
            facts,
        );
    }

    /// Gives up on a connection that is not Kafka, out loud: a diagnostic with the reason,
    /// and the `--port` that would read it anyway when its bytes did look like Kafka.
    fn not_kafka(
        &mut self,
        info: &ConnInfo,
        at: PacketRef,
        why: NotKafka,
        diags: &mut Diagnostics,
    ) {
        self.not_kafka_connections += 1;
        self.decided(info.index, Reading::NotKafka);
        let (a, b) = (info.initiator, info.responder);
        let server_port =
            Self::guessed_client(info).map_or(b.port(), |client| info.destination(client).port());
        let advice = why
            .port_would_help_if()
            .map(|condition| format!("; {condition}, run again with --port {server_port}"))
            .unwrap_or_default();
        diags.push(
            Kind::NotKafka,
            Some(info.index),
            at,
            format!(
                "connection {a} <-> {b} is not read as Kafka: {}{advice}",
                why.reason()
            ),
            vec![
                ("reason", why.name().into()),
                ("server_port", u64::from(server_port).into()),
            ],
        );
    }

    /// Mid-stream probing gives up once every direction tried as the client has passed
    /// over more bytes than the largest frame and a head: a capture that starts inside a
    /// frame meets the next head within that many bytes, however big the frame.
    fn searched_too_long(&self, conn: &KafkaConn) -> bool {
        let reach = u64::from(self.config.max_frame_len) + MAX_HEAD_LEN as u64;
        let Some(framers) = &conn.framers else {
            return true;
        };
        let tried: Vec<&Framer> = match conn.role {
            Role::Probing {
                client: Some(client),
            } => framers.get(client.idx()).into_iter().collect(),
            _ => framers.iter().collect(),
        };
        tried.iter().all(|f| f.resync_skipped() >= reach)
    }
}

/// A gap lost the framing of one side's stream.
fn framing_lost(
    diags: &mut Diagnostics,
    info: &ConnInfo,
    side: Side,
    (len, at): (u64, PacketRef),
    frame_lost: bool,
) {
    let place = if frame_lost {
        "inside a Kafka message's head, which is dropped"
    } else {
        "where the next Kafka message starts"
    };
    diags.push(
        Kind::KafkaFramingLost,
        Some(info.index),
        at,
        format!(
            "a gap of {len} bytes in the {}'s stream came {place}; looking for the next frame",
            side.name()
        ),
        vec![
            ("side", side.name().into()),
            ("gap_bytes", len.into()),
            ("inside_head", if frame_lost { "yes" } else { "no" }.into()),
        ],
    );
}

/// Passes one delivery to a framer; for a gap, returns what it did with its length and place.
fn feed(
    framer: &mut Framer,
    delivery: Delivery<'_>,
    handler: &mut impl FrameHandler,
) -> Option<(GapEffect, u64, PacketRef)> {
    match delivery {
        Delivery::Data(bytes, at) => {
            framer.push(bytes, at, handler);
            None
        }
        Delivery::Gap { len, at } => Some((framer.gap(len, at, handler), len, at)),
        Delivery::Fin(_) => {
            framer.end_of_stream(handler);
            None
        }
        // Reported by the TCP stage; the bytes kept are the first ones.
        Delivery::Conflict { .. } => None,
    }
}
