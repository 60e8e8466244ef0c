//! The APIs whose messages the Kafka stage decodes, and what decoding one gives: the
//! only place that says which API key goes to which decoder.

use super::cluster::{self, BrokerListeners, BrokersSeen, QuorumMessage};
use super::decoded::{Problem, LENGTH_PREFIX_LEN};
use super::header::RequestPrefix;
use super::layout::Visitor;
use super::produce;
use super::reader::DecodeError;
use super::schema::Message;
use super::tables::{ApiKey, ErrorCode};
use super::KeepRaw;

/// Whether a request of `api`, `len` bytes long, is decoded, not only counted: the paired
/// APIs, the cluster's messages that say where brokers listen and who leads, and Fetch
/// requests small enough to be of the quorum's log (who follows the leader).
pub fn decodes_request(api: ApiKey, len: u32) -> bool {
    if api == ApiKey::PRODUCE {
        return true; // streamed, whatever its length
    }
    if api == cluster::FETCH {
        return len <= cluster::METADATA_FETCH_MAX_LEN;
    }
    pairs(api)
        || matches!(
            api,
            cluster::BROKER_REGISTRATION
                | cluster::BROKER_HEARTBEAT
                | cluster::VOTE
                | cluster::BEGIN_QUORUM_EPOCH
                | cluster::END_QUORUM_EPOCH
        )
}

/// Whether responses to requests of `api` are decoded, not only counted.
pub fn decodes_response(api: ApiKey) -> bool {
    pairs(api)
        || api == ApiKey::PRODUCE
        || matches!(
            api,
            cluster::METADATA
                | cluster::CREATE_TOPICS
                | cluster::DESCRIBE_CLUSTER
                | cluster::VOTE
                | cluster::BEGIN_QUORUM_EPOCH
                | cluster::END_QUORUM_EPOCH
        )
}

/// An API whose requests are paired with their responses into exchanges: its request
/// and response, each declared with [`message!`](super::schema::message).
pub trait Api {
    type Request: Message + std::fmt::Debug + Clone + PartialEq + Eq;
    type Response: Message + std::fmt::Debug + Clone + PartialEq + Eq;
}

/// A paired API whose answer may grant a producer id and epoch: what the producer-id
/// analysis reads of its exchanges, whatever the API.
pub trait GrantsProducerIds: Api {
    /// The report's name for the API that granted.
    const GRANTED_BY: GrantedBy;
    /// Whether an answer that keeps the producer id the request named bumps its epoch
    /// as a matter of course (EndTxn), rather than as a transactional id initialised
    /// again (InitProducerId).
    const BUMPS_EPOCH: bool;

    /// The producer id and epoch the request names (`None` when not read or not in its
    /// version).
    fn requested(request: &Self::Request) -> (Option<i64>, Option<i16>);

    /// The request's transactional id: `Some(None)` for an idempotent producer, `None`
    /// when not read.
    fn transactional_id(request: &Self::Request) -> Option<Option<&str>>;

    /// The request's `client_id` from its header: `Some(None)` for null.
    fn client_id(request: &Self::Request) -> Option<Option<&str>>;

    /// The response's error code, producer id and epoch, each `None` when not read or
    /// not in its version.
    fn granted(response: &Self::Response) -> (Option<ErrorCode>, Option<i64>, Option<i16>);
}

crate::names::closed_set! {
    /// The APIs that grant producer ids and epochs to producers.
    pub enum GrantedBy {
        InitProducerId = "init_producer_id",
        /// Version 5 (transactions v2): the epoch bumped at a transaction's end, or a
        /// new id when it is used up.
        EndTxn = "end_txn",
    }
}

/// Calls `$then!` with the paired APIs, `Variant => marker`: the one list of them. Each
/// marker is an [`Api`] in its own file; everything that names each paired API (its
/// decoding here, its exchanges in pairing) is an expansion of this list.
macro_rules! for_each_paired_api {
    ($then:ident) => {
        $then! {
            Allocate => $crate::kafka::allocate_producer_ids::AllocateProducerIds,
            InitProducerId => $crate::kafka::init_producer_id::InitProducerId,
            EndTxn => $crate::kafka::end_txn::EndTxn,
        }
    };
}
pub(crate) use for_each_paired_api;

/// Which requests are paired and the decoded messages of each: [`DecodedRequest`] and
/// [`DecodedResponse`] have a variant per paired API.
macro_rules! paired_apis {
    ($($variant:ident => $api:path,)*) => {
        /// Whether requests of `api` are paired with their responses into exchanges.
        pub fn pairs(api: ApiKey) -> bool {
            false $(|| api == <<$api as Api>::Request as Message>::API)*
        }

        /// A decoded request of an API that [`decodes_request`] names.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum DecodedRequest {
            $($variant(Box<<$api as Api>::Request>),)*
            Cluster(Box<ClusterFact>, Option<Box<Kept>>),
            /// An AllocateProducerIds request's ask, handed on at once as
            /// [`ClusterFact::BlockAsked`] while the request waits for its answer: not
            /// boxed, as every such request makes one.
            BlockAsked { broker_id: Option<i32> },
            /// A Produce request, read as it passed: its batches' headers.
            Produce(Box<produce::Request>),
        }

        /// A decoded response, decoded as the answer to its request's API and version.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum DecodedResponse {
            $($variant(Box<<$api as Api>::Response>),)*
            Cluster(Box<ClusterFact>, Option<Box<Kept>>),
            Produce(Box<produce::Response>),
        }

        impl DecodedRequest {
            /// A request of a paired API; `None` for any other.
            fn paired(api: ApiKey, version: i16, bytes: Captured<'_>, not_read: Problem) -> Option<Self> {
                $(if api == <<$api as Api>::Request as Message>::API {
                    return Some(Self::$variant(read(bytes, not_read, version)));
                })*
                None
            }

            pub fn problem(&self) -> Option<&Problem> {
                match self {
                    $(Self::$variant(r) => r.problem.as_deref(),)*
                    Self::Cluster(fact, _) => fact.problem(),
                    Self::BlockAsked { .. } => None,
                    Self::Produce(r) => r.problem.as_deref(),
                }
            }

            /// Heap it holds beyond its own size: its box (with malloc's overhead),
            /// strings, tagged fields and raw bytes at their allocated sizes.
            pub fn heap_bytes(&self) -> usize {
                match self {
                    $(Self::$variant(r) => r.boxed_heap_bytes(),)*
                    // Not held while it waits: pairing hands it on at once.
                    Self::Cluster(_, _) | Self::BlockAsked { .. } => 0,
                    Self::Produce(r) => r.boxed_heap_bytes(),
                }
            }
        }

        impl DecodedResponse {
            /// The answer to a request of a paired API; `None` for any other.
            fn paired(api: ApiKey, version: i16, bytes: Captured<'_>, not_read: Problem) -> Option<Self> {
                $(if api == <<$api as Api>::Response as Message>::API {
                    return Some(Self::$variant(read(bytes, not_read, version)));
                })*
                None
            }

            pub fn problem(&self) -> Option<&Problem> {
                match self {
                    $(Self::$variant(r) => r.problem.as_deref(),)*
                    Self::Cluster(fact, _) => fact.problem(),
                    Self::Produce(r) => r.problem.as_deref(),
                }
            }
        }

        /// Decodes a message of a paired API again, telling `v` its structure (the tree
        /// view); nothing for an API that is not paired.
        pub fn decode_paired_with(
            (api, version): (ApiKey, i16),
            is_request: bool,
            message: &[u8],
            v: &mut dyn Visitor,
        ) {
            $(if api == <<$api as Api>::Request as Message>::API {
                match is_request {
                    true => drop(<<$api as Api>::Request as Message>::decode_with(message, version, v)),
                    false => drop(<<$api as Api>::Response as Message>::decode_with(message, version, v)),
                }
            })*
        }
    };
}

for_each_paired_api!(paired_apis);

/// A cluster message's bytes as captured (without the size prefix), kept when a sink asks
/// for them (`--format tree`), with the API and version they were decoded as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub api: ApiKey,
    pub version: i16,
    pub is_request: bool,
    pub bytes: Vec<u8>,
}

impl Kept {
    fn of(
        bytes: Captured<'_>,
        (api, version): (ApiKey, i16),
        is_request: bool,
    ) -> Option<Box<Self>> {
        let message = bytes.message.filter(|_| bytes.keep_raw == KeepRaw::Every)?;
        Some(Box::new(Self {
            api,
            version,
            is_request,
            bytes: message.to_vec(),
        }))
    }

    /// Decodes the message again, as it was first (for the tree, recording its reads).
    pub fn decode_again(&self) -> Result<ClusterFact, DecodeError> {
        ClusterFact::decode_again(self.is_request, (self.api, self.version), &self.bytes)
    }
}

/// What a cluster message says, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClusterFact {
    /// A BrokerRegistration request: the broker's listeners.
    Listeners(BrokerListeners),
    /// A Metadata or DescribeCluster response: brokers (or controllers) and addresses.
    Brokers {
        api: ApiKey,
        seen: BrokersSeen,
    },
    /// A CreateTopics response (version 7+): the id of each topic created, with its name.
    TopicsCreated(Vec<([u8; 16], String)>),
    /// A BrokerHeartbeat request: this broker talks to the active controller.
    Heartbeat(cluster::Heartbeat),
    /// A small Fetch request: who fetches, and whether it is the quorum's log.
    Fetch(cluster::ReplicaFetch),
    /// A Vote, BeginQuorumEpoch or EndQuorumEpoch request or response.
    Quorum(QuorumMessage),
    /// An AllocateProducerIds request: this broker asked for a block. Its answer comes
    /// later as an exchange; told as soon as the request is read, so that a grant placed
    /// meanwhile knows a block may be on its way.
    /// `broker_id` is `None` when the request's bytes holding it were not read.
    BlockAsked {
        broker_id: Option<i32>,
    },
    Undecoded(Problem),
}

impl ClusterFact {
    /// Whether it holds anything on the heap. Cautious: `true` but for the fact every
    /// AllocateProducerIds request states.
    pub fn holds_heap(&self) -> bool {
        !matches!(self, Self::BlockAsked { .. })
    }

    fn of_request(head: &RequestPrefix, bytes: Captured<'_>, not_read: Problem) -> Self {
        let Some(message) = bytes.message else {
            return Self::Undecoded(not_read);
        };
        if !cluster::decodes(head.api_key, head.api_version) {
            return Self::Undecoded(Problem::UnsupportedVersion {
                api: head.api_key,
                version: head.api_version,
                newest: cluster::newest_decoded(head.api_key),
            });
        }
        Self::of_result(Self::request_of(head.api_key, message), bytes)
    }

    /// A cluster message's fact, decoded again from its bytes (without the size prefix)
    /// as the Kafka stage decoded it.
    pub fn decode_again(
        is_request: bool,
        (api, version): (ApiKey, i16),
        message: &[u8],
    ) -> Result<Self, DecodeError> {
        match is_request {
            true => Self::request_of(api, message),
            false => Self::response_of((api, version), message),
        }
    }

    /// The fact of a request of `api` (one this module decodes).
    fn request_of(api: ApiKey, message: &[u8]) -> Result<Self, DecodeError> {
        match api {
            cluster::BROKER_REGISTRATION => {
                cluster::broker_registration_request(message).map(Self::Listeners)
            }
            cluster::BROKER_HEARTBEAT => {
                cluster::broker_heartbeat_request(message).map(Self::Heartbeat)
            }
            cluster::FETCH => cluster::fetch_request(message).map(Self::Fetch),
            _ => cluster::quorum_request(message).map(Self::Quorum),
        }
    }

    fn of_response((api, version): (ApiKey, i16), bytes: Captured<'_>, not_read: Problem) -> Self {
        let Some(message) = bytes.message else {
            return Self::Undecoded(not_read);
        };
        if !cluster::decodes(api, version) {
            let newest = cluster::newest_decoded(api);
            return Self::Undecoded(Problem::UnsupportedVersion {
                api,
                version,
                newest,
            });
        }
        Self::of_result(Self::response_of((api, version), message), bytes)
    }

    /// The fact of a response to a request of `api` at `version`.
    fn response_of((api, version): (ApiKey, i16), message: &[u8]) -> Result<Self, DecodeError> {
        match api {
            cluster::METADATA => {
                cluster::metadata_response(message, version).map(|seen| Self::Brokers { api, seen })
            }
            cluster::DESCRIBE_CLUSTER => cluster::describe_cluster_response(message, version)
                .map(|seen| Self::Brokers { api, seen }),
            cluster::CREATE_TOPICS => {
                cluster::create_topics_response(message, version).map(Self::TopicsCreated)
            }
            _ => cluster::quorum_response(message, api, version).map(Self::Quorum),
        }
    }

    /// A fact (read from the bytes before a gap, when they hold it), or the problem of
    /// a decode that failed: running out of bytes the capture lost is the capture's doing.
    fn of_result(decoded: Result<Self, DecodeError>, bytes: Captured<'_>) -> Self {
        decoded.unwrap_or_else(|err| {
            let problem = Problem::Decode(err.shifted(LENGTH_PREFIX_LEN));
            let captured = bytes.message.map_or(0, <[u8]>::len);
            Self::Undecoded(match bytes.missing {
                0 => problem,
                _ => Problem::of_partial(Some(problem.clone()), captured, bytes.len)
                    .unwrap_or(problem),
            })
        })
    }

    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Undecoded(p) => Some(p),
            _ => None,
        }
    }
}

/// A message's bytes as the framer gave them.
#[derive(Debug, Clone, Copy)]
pub struct Captured<'a> {
    /// The message before its first gap, or `None` when its bytes were not kept
    /// (`not_read` says why).
    pub message: Option<&'a [u8]>,
    pub len: u32,
    pub missing: u32,
    pub keep_raw: KeepRaw,
}

impl DecodedRequest {
    /// Decodes a request [`decodes_request`] names; `None` for any other.
    pub fn decode(head: &RequestPrefix, bytes: Captured<'_>, not_read: Problem) -> Option<Self> {
        let (api, version) = (head.api_key, head.api_version);
        if pairs(api) {
            return Self::paired(api, version, bytes, not_read);
        }
        if api == ApiKey::PRODUCE {
            // Streamed when read: here only one whose bytes were not.
            let request = produce::Request {
                problem: Some(Box::new(not_read)),
                ..produce::Request::default()
            };
            return Some(Self::Produce(Box::new(request)));
        }
        decodes_request(api, bytes.len).then(|| {
            Self::Cluster(
                Box::new(ClusterFact::of_request(head, bytes, not_read)),
                Kept::of(bytes, (api, version), true),
            )
        })
    }
}

impl DecodedResponse {
    /// Decodes the answer to a request of `api` at `version`; `None` for an API that
    /// is not decoded.
    pub fn decode(
        (api, version): (ApiKey, i16),
        bytes: Captured<'_>,
        not_read: Problem,
    ) -> Option<Self> {
        if pairs(api) {
            return Self::paired(api, version, bytes, not_read);
        }
        if api == ApiKey::PRODUCE {
            let response = match bytes.message {
                Some(message) => {
                    produce::Response::decode_partial(message, bytes.len, bytes.missing, version)
                }
                None => produce::Response {
                    problem: Some(Box::new(not_read)),
                    ..produce::Response::default()
                },
            };
            return Some(Self::Produce(Box::new(response)));
        }
        decodes_response(api).then(|| {
            Self::Cluster(
                Box::new(ClusterFact::of_response((api, version), bytes, not_read)),
                Kept::of(bytes, (api, version), false),
            )
        })
    }
}

/// A message of `version` decoded from the bytes captured (kept too when the tree view
/// wants them), or with the problem `not_read` when its bytes were not kept.
fn read<T: Message>(bytes: Captured<'_>, not_read: Problem, version: i16) -> Box<T> {
    let mut decoded = match bytes.message {
        Some(message) => T::decode_partial(message, bytes.len, bytes.missing, version),
        None => T::default(),
    };
    match bytes.message {
        Some(message) if bytes.keep_raw >= KeepRaw::ProducerIds => {
            *decoded.raw_mut() = message.to_vec();
        }
        Some(_) => {}
        None => *decoded.problem_mut() = Some(Box::new(not_read)),
    }
    Box::new(decoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(message: &[u8]) -> Captured<'_> {
        Captured {
            message: Some(message),
            len: u32::try_from(message.len()).unwrap(),
            missing: 0,
            keep_raw: KeepRaw::Nothing,
        }
    }

    fn not_read() -> Problem {
        Problem::Shed { len: 0 }
    }

    /// A response is decoded as its request's API: the two messages of each paired API
    /// must be declared with one key.
    #[test]
    fn each_paired_apis_request_and_response_have_one_key() {
        macro_rules! one_key {
            ($($variant:ident => $api:path,)*) => {$(
                let request = <<$api as Api>::Request as Message>::API;
                assert_eq!(request, <<$api as Api>::Response as Message>::API, stringify!($variant));
                assert!(pairs(request), stringify!($variant));
            )*};
        }
        for_each_paired_api!(one_key);
    }

    /// The sentence names the versions we decode of that API, a cluster message's too
    /// (it once said "none is" of every API but the two paired ones).
    #[test]
    fn a_version_we_do_not_decode_is_told_with_those_we_do() {
        let header = [0, 0, 0, 7];
        let metadata = DecodedResponse::decode((cluster::METADATA, 14), whole(&header), not_read());
        let problem = metadata
            .as_ref()
            .and_then(DecodedResponse::problem)
            .unwrap();
        assert_eq!(
            problem.to_string(),
            "Metadata version 14 is not supported (versions 0 to 13 are); the body was not decoded"
        );
        let allocate = [0, 0, 0, 7, 0];
        let answer = (ApiKey::ALLOCATE_PRODUCER_IDS, 1);
        let allocate = DecodedResponse::decode(answer, whole(&allocate), not_read());
        let problem = allocate
            .as_ref()
            .and_then(DecodedResponse::problem)
            .unwrap();
        assert_eq!(
            problem.to_string(),
            "AllocateProducerIds version 1 is not supported (only version 0 is); the body was not decoded"
        );
        let init = [0, 0, 0, 7, 0];
        let answer = (ApiKey::INIT_PRODUCER_ID, 7);
        let init = DecodedResponse::decode(answer, whole(&init), not_read());
        let problem = init.as_ref().and_then(DecodedResponse::problem).unwrap();
        assert_eq!(
            problem.to_string(),
            "InitProducerId version 7 is not supported (versions 0 to 6 are); the body was not decoded"
        );
    }
}
