//! The APIs whose messages the Kafka stage decodes, and what decoding one gives: the
//! only place that says which API key goes to which decoder.

use super::cluster::{self, BrokerListeners, BrokersSeen, QuorumMessage};
use super::decoded::{Problem, Undecoded, LENGTH_PREFIX_LEN};
use super::header::RequestPrefix;
use super::reader::{DecodeError, TaggedField};
use super::tables::ApiKey;
use super::{
    allocate_producer_ids as allocate, init_producer_id as init, KeepRaw, MALLOC_OVERHEAD,
};

/// Whether requests of `api` are paired with their responses into exchanges: their
/// decoded requests wait in pairing.
pub fn pairs(api: ApiKey) -> bool {
    matches!(
        api,
        ApiKey::ALLOCATE_PRODUCER_IDS | ApiKey::INIT_PRODUCER_ID
    )
}

/// Whether a request of `api`, `len` bytes long, is decoded, not only counted: the paired
/// APIs, the cluster's messages that say where brokers listen and who leads, and Fetch
/// requests small enough to be of the quorum's log (who follows the leader).
pub fn decodes_request(api: ApiKey, len: u32) -> bool {
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
        || matches!(
            api,
            cluster::METADATA
                | cluster::DESCRIBE_CLUSTER
                | cluster::VOTE
                | cluster::BEGIN_QUORUM_EPOCH
                | cluster::END_QUORUM_EPOCH
        )
}

/// A decoded request of an API that [`decodes_request`] names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedRequest {
    Allocate(Box<allocate::Request>),
    InitProducerId(Box<init::Request>),
    Cluster(Box<ClusterFact>, Option<Box<Kept>>),
}

/// A decoded response, decoded as the answer to its request's API and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedResponse {
    Allocate(Box<allocate::Response>),
    InitProducerId(Box<init::Response>),
    Cluster(Box<ClusterFact>, Option<Box<Kept>>),
}

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
    fn of_request(head: &RequestPrefix, bytes: Captured<'_>, not_read: Problem) -> Self {
        let Some(message) = bytes.message else {
            return Self::Undecoded(not_read);
        };
        if !cluster::decodes(head.api_key, head.api_version) {
            return Self::Undecoded(Problem::UnsupportedVersion {
                api: head.api_key,
                version: head.api_version,
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
            return Self::Undecoded(Problem::UnsupportedVersion { api, version });
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
        let (len, missing) = (bytes.len, bytes.missing);
        Some(match head.api_key {
            ApiKey::ALLOCATE_PRODUCER_IDS => Self::Allocate(read(bytes, not_read, |m| {
                allocate::decode_partial_request(m, len, missing, head)
            })),
            ApiKey::INIT_PRODUCER_ID => Self::InitProducerId(read(bytes, not_read, |m| {
                init::decode_partial_request(m, len, missing, head)
            })),
            api if decodes_request(api, len) => Self::Cluster(
                Box::new(ClusterFact::of_request(head, bytes, not_read)),
                Kept::of(bytes, (api, head.api_version), true),
            ),
            _ => return None,
        })
    }

    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Allocate(r) => r.problem.as_ref(),
            Self::InitProducerId(r) => r.problem.as_ref(),
            Self::Cluster(fact, _) => fact.problem(),
        }
    }

    /// Heap it holds beyond its own size: its box (with malloc's overhead), strings,
    /// tagged fields and raw bytes at their allocated sizes.
    pub fn heap_bytes(&self) -> usize {
        let string = |s: &Option<Option<String>>| {
            s.as_ref()
                .and_then(Option::as_ref)
                .map_or(0, String::capacity)
        };
        match self {
            Self::Allocate(r) => {
                size_of::<allocate::Request>()
                    + MALLOC_OVERHEAD
                    + string(&r.client_id)
                    + tagged_bytes(&r.header_tagged_fields)
                    + tagged_bytes(&r.tagged_fields)
                    + r.raw.capacity()
            }
            Self::InitProducerId(r) => {
                size_of::<init::Request>()
                    + MALLOC_OVERHEAD
                    + string(&r.client_id)
                    + string(&r.transactional_id)
                    + tagged_bytes(&r.header_tagged_fields)
                    + tagged_bytes(&r.tagged_fields)
                    + r.raw.capacity()
            }
            // Not held while it waits: pairing hands it on at once.
            Self::Cluster(_, _) => 0,
        }
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
        let (len, missing) = (bytes.len, bytes.missing);
        Some(match api {
            ApiKey::ALLOCATE_PRODUCER_IDS => Self::Allocate(read(bytes, not_read, |m| {
                allocate::decode_partial_response(m, len, missing, version)
            })),
            ApiKey::INIT_PRODUCER_ID => Self::InitProducerId(read(bytes, not_read, |m| {
                init::decode_partial_response(m, len, missing, version)
            })),
            api if decodes_response(api) => Self::Cluster(
                Box::new(ClusterFact::of_response((api, version), bytes, not_read)),
                Kept::of(bytes, (api, version), false),
            ),
            _ => return None,
        })
    }

    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Allocate(r) => r.problem.as_ref(),
            Self::InitProducerId(r) => r.problem.as_ref(),
            Self::Cluster(fact, _) => fact.problem(),
        }
    }
}

/// A message decoded with `decode` from the bytes captured (kept too when the tree view
/// wants them), or with the problem `not_read` when its bytes were not kept.
fn read<T: Undecoded>(
    bytes: Captured<'_>,
    not_read: Problem,
    decode: impl FnOnce(&[u8]) -> T,
) -> Box<T> {
    let mut decoded = match bytes.message {
        Some(message) => decode(message),
        None => T::default(),
    };
    match bytes.message {
        Some(message) if bytes.keep_raw >= KeepRaw::ProducerIds => {
            *decoded.raw_mut() = message.to_vec();
        }
        Some(_) => {}
        None => *decoded.problem_mut() = Some(not_read),
    }
    Box::new(decoded)
}

/// Heap a tagged-field section holds.
fn tagged_bytes(fields: &Option<Vec<TaggedField>>) -> usize {
    fields.as_ref().map_or(0, |f| {
        f.capacity() * size_of::<TaggedField>() + f.iter().map(|t| t.data.capacity()).sum::<usize>()
    })
}
