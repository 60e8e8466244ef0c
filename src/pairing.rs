//! Pairing: the Kafka stage's messages in, [`PairedExchange`]s and per-API counts out.
//!
//! The Kafka stage matches each response to the waiting request with its correlation id
//! (it must, to know which API's response to decode) and says which API it answered, or
//! that it answered none; it holds each decoded request until then, and hands it on
//! with its answer or its giving up. Pairing counts them, and makes each decoded request
//! an exchange with its [`Outcome`], decided here where the evidence is: an [`ApiExchange`] of its API (an
//! [`Exchange`] for AllocateProducerIds, a [`ProducerIdExchange`] for InitProducerId).

use std::collections::BTreeMap;

pub use crate::kafka::allocate_producer_ids::AllocateProducerIds;
use crate::kafka::allocate_producer_ids::Response;
use crate::kafka::apis::{for_each_paired_api, ClusterFact, DecodedRequest, DecodedResponse, Kept};
pub use crate::kafka::apis::{Api, GrantedBy, GrantsProducerIds};
pub use crate::kafka::end_txn::EndTxn;
pub use crate::kafka::init_producer_id::InitProducerId;
use crate::kafka::message::{Counted, Message};
pub use crate::kafka::message::{Endpoints, MessageMeta};
use crate::kafka::produce;
use crate::kafka::tables::ApiKey;

/// One request of API `A` and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiExchange<A: Api> {
    pub endpoints: Endpoints,
    pub correlation_id: i32,
    pub api_version: i16,
    pub request_meta: MessageMeta,
    pub request: A::Request,
    pub outcome: Outcome<A::Response>,
}

/// One AllocateProducerIds request and how it ended.
pub type Exchange = ApiExchange<AllocateProducerIds>;

/// One InitProducerId request and how it ended.
pub type ProducerIdExchange = ApiExchange<InitProducerId>;

/// One EndTxn request and how it ended.
pub type EndTxnExchange = ApiExchange<EndTxn>;

/// One Produce request and how it ended: the writes of its batches, and what the broker
/// answered for each partition. A request with `acks` 0 is never answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteExchange {
    pub endpoints: Endpoints,
    pub correlation_id: i32,
    pub api_version: i16,
    pub request_meta: MessageMeta,
    pub request: Box<produce::Request>,
    pub outcome: Outcome<produce::Response>,
}

/// An exchange of an API that grants producer ids and epochs ([`GrantsProducerIds`]):
/// what the producer-id analysis and the report's `producer_ids` take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Granting {
    InitProducerId(ProducerIdExchange),
    EndTxn(EndTxnExchange),
}

impl Granting {
    pub fn order(&self) -> ExchangeOrder {
        match self {
            Self::InitProducerId(ex) => ex.order(),
            Self::EndTxn(ex) => ex.order(),
        }
    }

    pub fn granted_by(&self) -> GrantedBy {
        match self {
            Self::InitProducerId(_) => GrantedBy::InitProducerId,
            Self::EndTxn(_) => GrantedBy::EndTxn,
        }
    }
}

/// The request, version and place of an exchange: what [`ApiExchange::of`] needs besides
/// the request and its outcome.
type Head = (Endpoints, i32, i16, MessageMeta);

/// An exchange of any paired API, with a variant per API of
/// [`for_each_paired_api`](crate::kafka::apis): what pairing hands on.
macro_rules! paired_exchange {
    ($($variant:ident => $api:path,)*) => {
        /// An exchange of any paired API.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum PairedExchange {
            $($variant(ApiExchange<$api>),)*
        }

        impl PairedExchange {
            /// Where it stands among the exchanges one packet completes: those of one
            /// API before those of the next, then in [`ApiExchange::order`].
            pub fn sort_key(&self) -> (u8, ExchangeOrder) {
                let mut rank = 0;
                $(
                    if let Self::$variant(ex) = self {
                        return (rank, ex.order());
                    }
                    rank += 1;
                )*
                unreachable!("every variant returned, rank {rank}")
            }

            /// Its connection's ends (and number).
            pub fn endpoints_mut(&mut self) -> &mut Endpoints {
                match self {
                    $(Self::$variant(ex) => &mut ex.endpoints,)*
                }
            }

            /// The exchange of a request and its response, or the request back when the
            /// response is of another API.
            fn answered(
                head: Head,
                request: DecodedRequest,
                meta: MessageMeta,
                response: DecodedResponse,
            ) -> Result<Self, DecodedRequest> {
                match (request, response) {
                    $((DecodedRequest::$variant(request), DecodedResponse::$variant(response)) => {
                        let outcome = Outcome::Complete { meta, response };
                        Ok(Self::$variant(ApiExchange::of(head, *request, outcome)))
                    })*
                    (request, _) => Err(request),
                }
            }

            /// The exchange of a request without a response: of unknown outcome when the
            /// capture may have lost it. `None` for a cluster message (never held).
            fn without_response(head: Head, request: DecodedRequest, unknown: bool) -> Option<Self> {
                match request {
                    $(DecodedRequest::$variant(request) => {
                        let outcome = Outcome::without_response(unknown);
                        Some(Self::$variant(ApiExchange::of(head, *request, outcome)))
                    })*
                    DecodedRequest::Cluster(..)
                    | DecodedRequest::BlockAsked { .. }
                    | DecodedRequest::Produce(_) => None,
                }
            }
        }
    };
}

for_each_paired_api!(paired_exchange);

/// What a cluster message said (where brokers listen, who leads), handed on as it comes:
/// its facts need no answer to mean something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterEvent {
    pub endpoints: Endpoints,
    pub meta: MessageMeta,
    pub is_request: bool,
    /// Held in the event, not boxed: freed with the box the Kafka stage read it into,
    /// while that is still in the cache, rather than when the spent batch comes back.
    pub fact: ClusterFact,
    /// Its bytes, when a sink asked for them.
    pub kept: Option<Box<Kept>>,
}

/// How an exchange ended. The response stays in the box the Kafka stage decoded it
/// into: an exchange is held per exchange in bounded batches, and most of them are
/// answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<R = Response> {
    /// The response came, decoded with the request's version.
    Complete { meta: MessageMeta, response: Box<R> },
    /// No response, where the capture holds every byte it could have come in.
    Unanswered,
    /// No response seen, but the capture may have lost it (bytes missing, or the request
    /// given up before it could come): not known to be unanswered.
    ResponseUnknown,
}

/// An [`Outcome`] without its response: what the report's `status` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    Complete,
    Unanswered,
    ResponseUnknown,
}

impl Status {
    pub const ALL: [Self; 3] = [Self::Complete, Self::Unanswered, Self::ResponseUnknown];

    /// The report's name for it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::Unanswered => "unanswered",
            Self::ResponseUnknown => "response_unknown",
        }
    }
}

impl<R> Outcome<R> {
    pub fn status(&self) -> Status {
        match self {
            Self::Complete { .. } => Status::Complete,
            Self::Unanswered => Status::Unanswered,
            Self::ResponseUnknown => Status::ResponseUnknown,
        }
    }

    /// No response: [`Self::ResponseUnknown`] when the capture may have lost it.
    pub fn without_response(unknown: bool) -> Self {
        match unknown {
            true => Self::ResponseUnknown,
            false => Self::Unanswered,
        }
    }

    /// The response and where it came, when there is one.
    pub fn response(&self) -> Option<(&MessageMeta, &R)> {
        match self {
            Self::Complete { meta, response } => Some((meta, response)),
            Self::Unanswered | Self::ResponseUnknown => None,
        }
    }
}

/// Where an exchange stands in the report and in every output: by request frame, then
/// connection, then correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExchangeOrder {
    pub request_frame: u64,
    pub connection: u64,
    pub correlation_id: i32,
}

impl<A: Api> ApiExchange<A> {
    /// The exchange of `request`, sent with `head` (its ends, correlation id, version and
    /// where it was), ended by `outcome`.
    fn of(
        (endpoints, correlation_id, api_version, request_meta): Head,
        request: A::Request,
        outcome: Outcome<A::Response>,
    ) -> Self {
        Self {
            endpoints,
            correlation_id,
            api_version,
            request_meta,
            request,
            outcome,
        }
    }

    pub fn order(&self) -> ExchangeOrder {
        ExchangeOrder {
            request_frame: self.request_meta.frame,
            connection: self.endpoints.connection,
            correlation_id: self.correlation_id,
        }
    }

    /// Where the exchange ends in the capture: its response, or its request without one.
    pub fn last_meta(&self) -> &MessageMeta {
        self.outcome
            .response()
            .map_or(&self.request_meta, |(meta, _)| meta)
    }

    /// Microseconds from the request to its response, when there is one.
    pub fn latency_us(&self) -> Option<f64> {
        latency_us(&self.request_meta, &self.outcome)
    }
}

fn latency_us<R>(request: &MessageMeta, outcome: &Outcome<R>) -> Option<f64> {
    let (meta, _) = outcome.response()?;
    Some(meta.timestamp.micros_since(&request.timestamp))
}

/// Per-API frame counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ApiCounts {
    pub requests: u64,
    pub responses: u64,
}

/// A decoded request the Kafka stage held for its response: where it was, its version
/// and fields.
type WaitingRequest = (MessageMeta, i16, DecodedRequest);

/// Everything pairing learns over the whole capture.
#[derive(Debug, Default)]
pub struct Pairing {
    /// Exchanges made since they were last taken.
    pub exchanges: Vec<PairedExchange>,
    /// Produce exchanges made since they were last taken.
    pub writes: Vec<WriteExchange>,
    pub cluster_events: Vec<ClusterEvent>,
    pub api_counts: BTreeMap<ApiKey, ApiCounts>,
    pub unmatched_responses: u64,
    /// Of those, responses that read as an answer granting a block would.
    pub unmatched_like_blocks: u64,
}

impl Pairing {
    /// What another thread's pairing counted, added to this one's (its exchanges went
    /// on as they were made).
    pub fn add(&mut self, other: Self) {
        for (key, counts) in other.api_counts {
            let ours = self.api_counts.entry(key).or_default();
            ours.requests += counts.requests;
            ours.responses += counts.responses;
        }
        self.unmatched_responses += other.unmatched_responses;
        self.unmatched_like_blocks += other.unmatched_like_blocks;
    }

    /// Puts exchanges in report order: by request frame, then connection, then
    /// correlation id.
    pub fn sort_exchanges(&mut self) {
        self.exchanges.sort_by_key(PairedExchange::sort_key);
    }

    /// Adds what the Kafka stage counted rather than listed: once, at the end (the
    /// counts are only reported).
    pub fn counted(&mut self, counted: &mut Counted) {
        let counted = std::mem::take(counted);
        for (key, [requests, responses]) in counted.by_api() {
            let ours = self.api_counts.entry(key).or_default();
            ours.requests += requests;
            ours.responses += responses;
        }
        self.unmatched_responses += counted.unmatched;
        self.unmatched_like_blocks += counted.unmatched_like_blocks;
    }

    /// Takes one message of the Kafka stage.
    pub fn message(&mut self, message: Message) {
        match message {
            Message::Request {
                ends,
                api_key,
                api_version,
                correlation_id,
                meta,
                decoded,
            } => {
                self.api_counts.entry(api_key).or_default().requests += 1;
                match decoded {
                    Some(DecodedRequest::Cluster(fact, kept)) => {
                        self.cluster(ends, meta, true, (*fact, kept));
                    }
                    Some(DecodedRequest::BlockAsked { broker_id }) => {
                        let fact = ClusterFact::BlockAsked { broker_id };
                        self.cluster(ends, meta, true, (fact, None));
                    }
                    // Sent with acks 0: the broker answers nothing.
                    Some(DecodedRequest::Produce(request)) => {
                        let head = (ends, correlation_id, api_version, meta);
                        self.write(head, request, Outcome::Unanswered);
                    }
                    _ => {}
                }
            }
            Message::Response {
                ends,
                correlation_id,
                meta,
                answers,
                decoded,
                request,
            } => {
                let Some((api_key, _)) = answers else {
                    self.unmatched_responses += 1;
                    return;
                };
                self.api_counts.entry(api_key).or_default().responses += 1;
                match (decoded, request) {
                    (Some(DecodedResponse::Cluster(fact, kept)), _) => {
                        self.cluster(ends, meta, false, (*fact, kept));
                    }
                    (Some(response), Some(request)) => {
                        self.answered(ends, correlation_id, *request, meta, response);
                    }
                    // a paired API's answer is always decoded, if only in part
                    (None, Some(request)) => {
                        self.without_response(ends, correlation_id, *request, true);
                    }
                    (_, None) => {}
                }
            }
            Message::GivenUp {
                ends,
                correlation_id,
                unknown,
                request,
            } => self.without_response(ends, correlation_id, *request, unknown),
        }
    }

    /// A cluster message's fact, when it was read (a problem was reported already).
    fn cluster(
        &mut self,
        ends: Endpoints,
        meta: MessageMeta,
        is_request: bool,
        (fact, kept): (ClusterFact, Option<Box<Kept>>),
    ) {
        if fact.problem().is_none() {
            self.cluster_events.push(ClusterEvent {
                endpoints: ends,
                meta,
                is_request,
                fact,
                kept,
            });
        }
    }

    fn write(
        &mut self,
        (endpoints, correlation_id, api_version, request_meta): Head,
        request: Box<produce::Request>,
        outcome: Outcome<produce::Response>,
    ) {
        self.writes.push(WriteExchange {
            endpoints,
            correlation_id,
            api_version,
            request_meta,
            request,
            outcome,
        });
    }

    /// A waiting request and its response, decoded as the answer to that request's API.
    fn answered(
        &mut self,
        ends: Endpoints,
        correlation_id: i32,
        (request_meta, api_version, request): WaitingRequest,
        meta: MessageMeta,
        response: DecodedResponse,
    ) {
        let head = (ends, correlation_id, api_version, request_meta);
        let (request, response) = match (request, response) {
            (DecodedRequest::Produce(request), DecodedResponse::Produce(response)) => {
                return self.write(head, request, Outcome::Complete { meta, response });
            }
            other => other,
        };
        match PairedExchange::answered(head, request, meta, response) {
            Ok(exchange) => self.exchanges.push(exchange),
            // The Kafka stage decodes a response as its request's API: never apart.
            Err(request) => {
                let request = (request_meta, api_version, request);
                self.without_response(ends, correlation_id, request, true);
            }
        }
    }

    /// An exchange without a response: of unknown outcome when the capture may have
    /// lost it, unanswered otherwise.
    fn without_response(
        &mut self,
        ends: Endpoints,
        correlation_id: i32,
        (request_meta, api_version, request): WaitingRequest,
        unknown: bool,
    ) {
        let head = (ends, correlation_id, api_version, request_meta);
        if let DecodedRequest::Produce(request) = request {
            return self.write(head, request, Outcome::without_response(unknown));
        }
        if let Some(exchange) = PairedExchange::without_response(head, request, unknown) {
            self.exchanges.push(exchange);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timestamp::Timestamp;

    fn ends(connection: u64) -> Endpoints {
        Endpoints {
            connection,
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:9093".parse().unwrap(),
        }
    }

    fn meta(frame: u64) -> MessageMeta {
        MessageMeta {
            frame,
            first_frame: frame,
            timestamp: Timestamp::default(),
            size: 28,
            origin: None,
        }
    }

    fn request(connection: u64, api_key: ApiKey, correlation_id: i32, frame: u64) -> Message {
        Message::Request {
            ends: ends(connection),
            api_key,
            api_version: 1,
            correlation_id,
            meta: meta(frame),
            decoded: None,
        }
    }

    /// An AllocateProducerIds request of `frame`, as the Kafka stage held it.
    fn held(frame: u64) -> crate::kafka::message::HeldRequest {
        Box::new((meta(frame), 1, DecodedRequest::Allocate(Box::default())))
    }

    /// A response; an AllocateProducerIds one answers the request of `request_frame`.
    fn response(
        connection: u64,
        correlation_id: i32,
        (request_frame, frame): (u64, u64),
        answers: Option<ApiKey>,
    ) -> Message {
        let allocate = answers == Some(ApiKey::ALLOCATE_PRODUCER_IDS);
        Message::Response {
            ends: ends(connection),
            correlation_id,
            meta: meta(frame),
            answers: answers.map(|key| (key, 1)),
            decoded: allocate.then(|| DecodedResponse::Allocate(Box::default())),
            request: allocate.then(|| held(request_frame)),
        }
    }

    #[test]
    fn a_request_and_its_response_become_one_exchange_per_connection() {
        let mut pairing = Pairing::default();
        let allocate = ApiKey::ALLOCATE_PRODUCER_IDS;
        for m in [
            request(1, allocate, 5, 10),
            request(2, allocate, 5, 11), // the same id on another connection
            request(1, ApiKey::API_VERSIONS, 6, 12),
            response(2, 5, (11, 13), Some(allocate)),
            response(1, 6, (12, 14), Some(ApiKey::API_VERSIONS)),
            response(1, 99, (0, 15), None),
        ] {
            pairing.message(m);
        }
        let [PairedExchange::Allocate(ex)] = &pairing.exchanges[..] else {
            panic!("one AllocateProducerIds exchange: {:?}", pairing.exchanges);
        };
        assert_eq!((ex.endpoints.connection, ex.correlation_id), (2, 5));
        assert_eq!((ex.request_meta.frame, ex.api_version), (11, 1));
        assert_eq!(ex.outcome.response().map(|(m, _)| m.frame), Some(13));
        assert_eq!(pairing.unmatched_responses, 1);
        let counts = |key| pairing.api_counts.get(&key).copied().unwrap_or_default();
        assert_eq!(
            counts(allocate),
            ApiCounts {
                requests: 2,
                responses: 1
            }
        );
        assert_eq!(
            counts(ApiKey::API_VERSIONS),
            ApiCounts {
                requests: 1,
                responses: 1
            }
        );
    }

    #[test]
    fn a_given_up_request_is_an_exchange_without_response_with_its_outcome() {
        let mut pairing = Pairing::default();
        pairing.message(request(1, ApiKey::ALLOCATE_PRODUCER_IDS, 5, 10));
        pairing.message(request(1, ApiKey::ALLOCATE_PRODUCER_IDS, 6, 11));
        for (correlation_id, unknown) in [(5, true), (6, false)] {
            pairing.message(Message::GivenUp {
                ends: ends(1),
                correlation_id,
                unknown,
                request: held(10 + u64::from(correlation_id.unsigned_abs()) - 5),
            });
        }
        let outcomes: Vec<_> = pairing
            .exchanges
            .iter()
            .map(|paired| match paired {
                PairedExchange::Allocate(ex) => (ex.correlation_id, ex.outcome.status()),
                other => panic!("not AllocateProducerIds: {other:?}"),
            })
            .collect();
        assert_eq!(
            outcomes,
            [(5, Status::ResponseUnknown), (6, Status::Unanswered)]
        );
    }
}
