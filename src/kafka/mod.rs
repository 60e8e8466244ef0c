//! Kafka over TCP: recognises Kafka connections, frames both directions, decodes
//! AllocateProducerIds messages and hands every frame to [`crate::pairing`].
//!
//! In: ordered stream deliveries from [`crate::tcp`]. Out: counts, exchanges and
//! diagnostics in [`Dissector::pairing`]. A connection is Kafka when its server port was
//! given with `--port`, or when the first message of the side that speaks first is a
//! plausible request header (an API key Kafka defines, a version in that key's range, a
//! sane length); otherwise it is dropped and costs nothing more.

pub mod allocate_producer_ids;
pub mod framing;
pub mod header;
pub mod reader;
pub mod tables;

use framing::{Decision, Frame, FrameHandler, Framer, GapEffect};
use header::{RequestPrefix, MIN_REQUEST_LEN, REQUEST_PREFIX_LEN, RESPONSE_PREFIX_LEN};
use tables::ApiKey;

use crate::capture::PacketRef;
use crate::diag::{Diagnostics, Kind};
use crate::pairing::{Endpoints, MessageMeta, Pairing, PendingRequests};
use crate::tcp::assembler::Delivery;
use crate::tcp::{ConnInfo, Dir, StreamHandler};

/// Kafka's default `socket.request.max.bytes`: larger size prefixes are not Kafka.
pub const DEFAULT_MAX_FRAME_LEN: u32 = 100 * 1024 * 1024;
/// Largest AllocateProducerIds message we buffer to decode; real ones are under 100 bytes.
const MAX_DECODED_LEN: u32 = 1024 * 1024;

/// How Kafka is recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// Server ports that are Kafka without looking at the bytes.
    pub ports: Vec<u16>,
    pub max_frame_len: u32,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            ports: Vec::new(),
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
        }
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Nothing seen yet.
    #[default]
    Unknown,
    /// `client` sent first; its first header decides whether this is Kafka.
    Probing {
        client: Dir,
    },
    Kafka {
        client: Dir,
    },
}

/// Kafka state of one TCP connection.
#[derive(Debug)]
pub struct KafkaConn {
    role: Role,
    requests: Framer,
    responses: Framer,
    pending: PendingRequests,
}

impl Default for KafkaConn {
    fn default() -> Self {
        Self {
            role: Role::Unknown,
            requests: Framer::new(REQUEST_PREFIX_LEN),
            responses: Framer::new(RESPONSE_PREFIX_LEN),
            pending: PendingRequests::default(),
        }
    }
}

/// The Kafka stage over all connections.
#[derive(Debug, Default)]
pub struct Dissector {
    config: KafkaConfig,
    pub pairing: Pairing,
    pub kafka_connections: u64,
}

fn meta(frame: &Frame<'_>) -> MessageMeta {
    MessageMeta {
        frame: frame.last.frame,
        first_frame: frame.first.frame,
        timestamp: frame.last.timestamp,
        size: u64::from(frame.len) + framing::SIZE_LEN as u64,
    }
}

/// Frame handler for the client's direction.
struct RequestSide<'a> {
    config: &'a KafkaConfig,
    pairing: &'a mut Pairing,
    pending: &'a mut PendingRequests,
    ends: Endpoints,
    diags: &'a mut Diagnostics,
    /// Still deciding whether this is Kafka: the first header must be plausible.
    probing: bool,
    /// Set when probing found a plausible request.
    recognised: bool,
}

/// Why a size prefix cannot start a Kafka message: the kind and one sentence.
fn bad_size(len: i32, min: usize, max: u32, what: &str) -> Option<(Kind, String)> {
    if u32::try_from(len).is_ok_and(|l| l > max) {
        return Some((
            Kind::KafkaFrameTooLarge,
            format!(
                "{what} size prefix says {len} bytes, above the {max} byte limit; Kafka framing is lost for the rest of this direction"
            ),
        ));
    }
    if usize::try_from(len).map_or(true, |l| l < min) {
        return Some((
            Kind::KafkaFramingLost,
            format!(
                "{what} size prefix says {len} bytes, too small for a Kafka message; Kafka framing is lost for the rest of this direction"
            ),
        ));
    }
    None
}

impl FrameHandler for RequestSide<'_> {
    fn decide(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> Decision {
        if let Some((kind, message)) =
            bad_size(len, MIN_REQUEST_LEN, self.config.max_frame_len, "request")
        {
            // While probing, a bad size only means this is not Kafka.
            if !self.probing {
                self.diags
                    .push(kind, Some(self.ends.connection), Some(at.frame), message);
            }
            return Decision::Reject;
        }
        let Ok(prefix) = RequestPrefix::parse(prefix) else {
            return Decision::Reject;
        };
        if self.probing {
            if !prefix.is_plausible() {
                return Decision::Reject;
            }
            self.recognised = true;
            self.probing = false;
        }
        if prefix.api_key != ApiKey::ALLOCATE_PRODUCER_IDS {
            return Decision::Skip;
        }
        if u32::try_from(len).is_ok_and(|l| l > MAX_DECODED_LEN) {
            return Decision::Skip; // reported as an exchange with a decode error
        }
        Decision::Keep
    }

    fn frame(&mut self, frame: Frame<'_>) {
        let Ok(prefix) = RequestPrefix::parse(frame.prefix) else {
            return;
        };
        let meta = meta(&frame);
        let decoded = (prefix.api_key == ApiKey::ALLOCATE_PRODUCER_IDS).then(|| {
            let req = match frame.message {
                Some(message) => allocate_producer_ids::decode_request(message, &prefix),
                None => allocate_producer_ids::Request {
                    problem: Some(too_large(frame.len)),
                    ..Default::default()
                },
            };
            if let Some(problem) = &req.problem {
                report_problem(
                    self.diags,
                    self.ends,
                    meta,
                    "request",
                    prefix.correlation_id,
                    problem,
                );
            }
            req
        });
        self.pairing
            .request(self.pending, self.ends, prefix, meta, decoded, self.diags);
    }
}

fn too_large(len: u32) -> allocate_producer_ids::Problem {
    allocate_producer_ids::Problem::TooLarge {
        len,
        limit: MAX_DECODED_LEN,
    }
}

/// One diagnostic for an AllocateProducerIds message that did not fully decode.
fn report_problem(
    diags: &mut Diagnostics,
    ends: Endpoints,
    meta: MessageMeta,
    what: &str,
    correlation_id: i32,
    problem: &allocate_producer_ids::Problem,
) {
    let kind = match problem {
        allocate_producer_ids::Problem::UnsupportedVersion(_) => Kind::KafkaUnsupportedVersion,
        _ => Kind::KafkaDecodeError,
    };
    diags.push(
        kind,
        Some(ends.connection),
        Some(meta.frame),
        format!("AllocateProducerIds {what} with correlation id {correlation_id}: {problem}"),
    );
}

/// Frame handler for the server's direction.
struct ResponseSide<'a> {
    config: &'a KafkaConfig,
    pairing: &'a mut Pairing,
    pending: &'a mut PendingRequests,
    ends: Endpoints,
    diags: &'a mut Diagnostics,
}

impl FrameHandler for ResponseSide<'_> {
    fn decide(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> Decision {
        if let Some((kind, message)) = bad_size(
            len,
            RESPONSE_PREFIX_LEN,
            self.config.max_frame_len,
            "response",
        ) {
            self.diags
                .push(kind, Some(self.ends.connection), Some(at.frame), message);
            return Decision::Reject;
        }
        let Ok(correlation_id) = header::response_correlation_id(prefix) else {
            return Decision::Reject;
        };
        match Pairing::answered_request(self.pending, correlation_id) {
            Some((ApiKey::ALLOCATE_PRODUCER_IDS, _))
                if u32::try_from(len).is_ok_and(|l| l <= MAX_DECODED_LEN) =>
            {
                Decision::Keep
            }
            _ => Decision::Skip,
        }
    }

    fn frame(&mut self, frame: Frame<'_>) {
        let Ok(correlation_id) = header::response_correlation_id(frame.prefix) else {
            return;
        };
        let meta = meta(&frame);
        let decoded =
            match Pairing::answered_request(self.pending, correlation_id) {
                Some((ApiKey::ALLOCATE_PRODUCER_IDS, version)) => {
                    let resp = match frame.message {
                        Some(message) => allocate_producer_ids::decode_response(message, version),
                        None => allocate_producer_ids::Response {
                            problem: Some(too_large(frame.len)),
                            ..Default::default()
                        },
                    };
                    // An unsupported version was reported with the request already.
                    if let Some(problem) = resp.problem.as_ref().filter(|p| {
                        !matches!(p, allocate_producer_ids::Problem::UnsupportedVersion(_))
                    }) {
                        report_problem(
                            self.diags,
                            self.ends,
                            meta,
                            "response",
                            correlation_id,
                            problem,
                        );
                    }
                    Some(resp)
                }
                _ => None,
            };
        self.pairing
            .response(self.pending, self.ends, correlation_id, meta, decoded);
    }
}

impl Dissector {
    pub fn new(config: KafkaConfig) -> Self {
        Self {
            config,
            ..Self::default()
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

    fn report_unfinished(conn: &KafkaConn, ends: Endpoints, diags: &mut Diagnostics) {
        for (framer, what) in [(&conn.requests, "request"), (&conn.responses, "response")] {
            if let Some((len, first)) = framer.unfinished() {
                diags.push(
                    Kind::KafkaFrameIncomplete,
                    Some(ends.connection),
                    Some(first.frame),
                    format!(
                        "the stream from the {} ended inside a Kafka {what} after {len} of its bytes; the message is not reported",
                        if what == "request" { "client" } else { "server" }
                    ),
                );
            }
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
        if conn.role == Role::Unknown {
            conn.role = match (self.forced_client(info), &delivery) {
                // Nothing to go on yet; a connection counts as Kafka from its first byte.
                (_, Delivery::Gap { .. } | Delivery::Fin(_)) => return true,
                (Some(client), Delivery::Data(..)) => {
                    self.kafka_connections += 1;
                    Role::Kafka { client }
                }
                (None, Delivery::Data(..)) => Role::Probing { client: dir },
            };
        }
        let (client, probing) = match conn.role {
            Role::Kafka { client } => (client, false),
            Role::Probing { client } => (client, true),
            Role::Unknown => return true,
        };
        let ends = Self::endpoints(info, client);
        let from_client = dir == client;
        let framer = if from_client {
            &conn.requests
        } else {
            &conn.responses
        };
        let was_lost = framer.is_lost();
        let mut gap_effect = None;
        let mut recognised = false;
        if from_client {
            let mut handler = RequestSide {
                config: &self.config,
                pairing: &mut self.pairing,
                pending: &mut conn.pending,
                ends,
                diags,
                probing,
                recognised: false,
            };
            match delivery {
                Delivery::Data(bytes, at) => conn.requests.push(bytes, at, &mut handler),
                Delivery::Gap { len, at } => {
                    gap_effect = Some((conn.requests.gap(len, at, &mut handler), len, at));
                }
                Delivery::Fin(_) => {}
            }
            recognised = handler.recognised;
        } else {
            let mut handler = ResponseSide {
                config: &self.config,
                pairing: &mut self.pairing,
                pending: &mut conn.pending,
                ends,
                diags,
            };
            match delivery {
                Delivery::Data(bytes, at) => conn.responses.push(bytes, at, &mut handler),
                Delivery::Gap { len, at } => {
                    gap_effect = Some((conn.responses.gap(len, at, &mut handler), len, at));
                }
                Delivery::Fin(_) => {}
            }
        }
        if probing && from_client {
            if recognised {
                conn.role = Role::Kafka { client };
                self.kafka_connections += 1;
            } else if conn.requests.is_lost() || gap_effect.is_some() {
                return false; // the first bytes are not a Kafka request: stop following
            }
        }
        if let Some((GapEffect::Lost { frame_lost }, len, at)) = gap_effect {
            if !was_lost {
                let side = if from_client { "client" } else { "server" };
                diags.push(
                    Kind::KafkaFramingLost,
                    Some(info.index),
                    Some(at.frame),
                    format!(
                        "a gap of {len} bytes in the {side}'s stream fell inside a Kafka message{}; framing of this direction is lost",
                        if frame_lost { ", which is dropped" } else { "" }
                    ),
                );
            }
        }
        true
    }

    fn close(&mut self, conn: KafkaConn, info: &ConnInfo, _at: PacketRef, diags: &mut Diagnostics) {
        let Role::Kafka { client } = conn.role else {
            return;
        };
        let ends = Self::endpoints(info, client);
        Self::report_unfinished(&conn, ends, diags);
        self.pairing.close(conn.pending, ends);
    }
}
