//! What the Kafka stage hands on: every request and response frame it read, in the order
//! it read them, and the waiting requests of decoded APIs it gave up. Pairing consumes
//! them; nothing flows back.

use std::net::SocketAddr;

use super::apis::{decodes_request, decodes_response, DecodedRequest, DecodedResponse};
use super::conn::Reading;
use super::tables::ApiKey;
use crate::heap::heap_cost;
use crate::packet_ref::Origin;
use crate::timestamp::Timestamp;

/// Where a Kafka message sat in the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageMeta {
    /// Packet that completed the message.
    pub frame: u64,
    /// Packet that carried its first byte.
    pub first_frame: u64,
    pub timestamp: Timestamp,
    /// Bytes on the wire, size prefix included.
    pub size: u64,
    /// Where `frame` lies in its own file, when several are merged.
    pub origin: Option<Origin>,
}

impl MessageMeta {
    /// The packet that completed the message, and its time.
    pub fn at(&self) -> crate::packet_ref::PacketRef {
        crate::packet_ref::PacketRef {
            frame: self.frame,
            timestamp: self.timestamp,
            origin: self.origin,
        }
    }
}

/// The two ends of a Kafka connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoints {
    pub connection: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
}

/// A decoded request of a paired API, where it was and its version: held by the Kafka
/// stage while it waits, then handed on with its answer, or given up.
pub type HeldRequest = Box<(MessageMeta, i16, DecodedRequest)>;

/// One thing the Kafka stage found.
#[derive(Debug)]
pub enum Message {
    /// A request frame; `decoded`: the fact a cluster message states (see
    /// [`super::apis::decodes_request`]), and an AllocateProducerIds request's block asked
    /// for. A paired API's decoded request waits in the Kafka stage and comes with its
    /// answer.
    Request {
        ends: Endpoints,
        api_key: ApiKey,
        api_version: i16,
        correlation_id: i32,
        meta: MessageMeta,
        decoded: Option<DecodedRequest>,
    },
    /// A response frame. `answers`: the API key and version of the waiting request with
    /// its correlation id, if one waited (or was given up at the memory budget: then no
    /// exchange waits for it); `decoded`: the decoded response when that request's API is
    /// decoded; `request`: the decoded request it answers, of a paired API.
    Response {
        ends: Endpoints,
        correlation_id: i32,
        meta: MessageMeta,
        answers: Option<(ApiKey, i16)>,
        decoded: Option<DecodedResponse>,
        request: Option<HeldRequest>,
    },
    /// A waiting request of a decoded API that no response will be matched to: its
    /// connection ended, its id was reused, or it was given up for a limit. `unknown`:
    /// whether its response may be in bytes the capture lost (or may still come).
    GivenUp {
        ends: Endpoints,
        correlation_id: i32,
        unknown: bool,
        request: HeldRequest,
    },
}

/// What one delivery's frames prove about a connection on trial (see `Trial`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub requests: u64,
    pub allocate_requests: u64,
    /// Responses that answered a waiting request.
    pub answers: u64,
    /// Responses that answered none.
    pub unmatched: u64,
    /// Responses that answered an ApiVersions request.
    pub api_versions_answers: u64,
    /// Responses that answered a request of a flexible version (see
    /// [`ApiKey::is_flexible_version`]).
    pub flexible_answers: u64,
}

/// Messages in the order they were found, and their tally.
#[derive(Debug, Default)]
pub struct Outbox {
    pub messages: Vec<Message>,
    pub tally: Tally,
    /// Requests and responses of other APIs, counted rather than listed: downstream they
    /// are only counted, and a flush of held bytes can bring a hundred thousand small ones
    /// at once, ten times their bytes as messages.
    pub counted: Counted,
    /// List every message (for `--frame`, which tells which message spans a frame).
    pub list_every_message: bool,
    /// When listing every message: how each connection came to be read, as decided
    /// (`--frame` says how its connection was read).
    pub readings: Vec<(u64, Reading)>,
}

/// What an API's entry in [`Counted`] takes: its key and counts.
const COUNTED_ENTRY: usize = size_of::<(ApiKey, [u64; 2])>();

/// Requests and answered responses by API, and responses that answered no waiting request.
///
/// A list searched from its start, not a tree: a connection sees a handful of APIs, each
/// message counts one, and only keys Kafka's table names are framed (fewer than a hundred
/// and fifty), so the search stays short. The report sorts them (see `Pairing::counted`).
#[derive(Debug, Default)]
pub struct Counted {
    by_api: Vec<(ApiKey, [u64; 2])>,
    pub unmatched: u64,
    /// Responses that answered no request read and read whole as an AllocateProducerIds
    /// answer granting a block would (see
    /// [`reads_as_block`](super::allocate_producer_ids::reads_as_block)): counted whether
    /// or not every message is listed.
    pub unmatched_like_blocks: u64,
}

impl Counted {
    /// Adds `requests` and `responses` to `api`'s counts.
    fn add(&mut self, api: ApiKey, [requests, responses]: [u64; 2]) {
        match self.by_api.iter_mut().find(|(key, _)| *key == api) {
            Some((_, counts)) => {
                counts[0] += requests;
                counts[1] += responses;
            }
            None => self.by_api.push((api, [requests, responses])),
        }
    }

    /// Requests and responses of `api` counted so far.
    #[cfg(test)]
    pub fn get(&self, api: ApiKey) -> Option<[u64; 2]> {
        self.by_api
            .iter()
            .find_map(|(key, counts)| (*key == api).then_some(*counts))
    }

    /// Every API counted, with its requests and responses, in the order first seen.
    pub fn by_api(&self) -> impl Iterator<Item = (ApiKey, [u64; 2])> + '_ {
        self.by_api.iter().copied()
    }

    fn absorb(&mut self, other: Self) {
        for (key, counts) in other.by_api {
            self.add(key, counts);
        }
        self.unmatched += other.unmatched;
        self.unmatched_like_blocks += other.unmatched_like_blocks;
    }
}

impl Outbox {
    /// An outbox that lists every message when `list_every_message`.
    pub fn new(list_every_message: bool) -> Self {
        Self {
            list_every_message,
            ..Self::default()
        }
    }

    /// Notes how connection `index` is read from now on, when listing every message.
    pub fn decided(&mut self, index: u64, reading: Reading) {
        if self.list_every_message {
            self.readings.push((index, reading));
        }
    }

    pub fn push(&mut self, message: Message) {
        match &message {
            Message::Request { api_key, .. } => {
                self.tally.requests += 1;
                if *api_key == ApiKey::ALLOCATE_PRODUCER_IDS {
                    self.tally.allocate_requests += 1;
                }
            }
            Message::Response {
                answers: Some((key, version)),
                ..
            } => {
                self.tally.answers += 1;
                if *key == ApiKey::API_VERSIONS {
                    self.tally.api_versions_answers += 1;
                }
                if key.is_flexible_version(*version) {
                    self.tally.flexible_answers += 1;
                }
            }
            Message::Response { answers: None, .. } => self.tally.unmatched += 1,
            Message::GivenUp { .. } => {}
        }
        if !self.list_every_message && self.count_only(&message) {
            return;
        }
        self.messages.push(message);
    }

    /// Counts a request or response of an API that is not decoded; whether it did.
    fn count_only(&mut self, message: &Message) -> bool {
        match message {
            Message::Request {
                api_key,
                decoded: None,
                ..
            } if !decodes_request(*api_key, u32::MAX) => self.counted.add(*api_key, [1, 0]),
            Message::Response {
                answers: Some((api_key, _)),
                decoded: None,
                ..
            } if !decodes_response(*api_key) => self.counted.add(*api_key, [0, 1]),
            Message::Response {
                answers: None,
                decoded: None,
                ..
            } => self.counted.unmatched += 1,
            _ => return false,
        }
        true
    }

    /// Adds what another outbox (a connection's, held until it proved Kafka) found.
    pub fn absorb(&mut self, other: Self) {
        self.messages.extend(other.messages);
        self.readings.extend(other.readings);
        self.counted.absorb(other.counted);
        let (ours, theirs) = (&mut self.tally, other.tally);
        ours.requests += theirs.requests;
        ours.allocate_requests += theirs.allocate_requests;
        ours.answers += theirs.answers;
        ours.unmatched += theirs.unmatched;
        ours.api_versions_answers += theirs.api_versions_answers;
        ours.flexible_answers += theirs.flexible_answers;
    }

    /// Heap held for the messages' list (their decoded fields are charged while their
    /// requests wait, see `Waiting::held_bytes`).
    pub fn held_bytes(&self) -> usize {
        self.messages.capacity() * size_of::<Message>()
            + heap_cost(self.counted.by_api.capacity() * COUNTED_ENTRY)
    }
}
