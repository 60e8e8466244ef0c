//! The APIs whose messages the Kafka stage decodes, and what decoding one gives: the
//! only place that says which API key goes to which decoder.

use super::decoded::Problem;
use super::header::RequestPrefix;
use super::reader::TaggedField;
use super::tables::ApiKey;
use super::{allocate_producer_ids as allocate, init_producer_id as init, MALLOC_OVERHEAD};

/// Whether requests of `api` (and the responses to them) are decoded, not only counted.
pub fn decodes(api: ApiKey) -> bool {
    matches!(
        api,
        ApiKey::ALLOCATE_PRODUCER_IDS | ApiKey::INIT_PRODUCER_ID
    )
}

/// A decoded request of an API that [`decodes`] says is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedRequest {
    Allocate(Box<allocate::Request>),
    InitProducerId(Box<init::Request>),
}

/// A decoded response, decoded as the answer to its request's API and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodedResponse {
    Allocate(Box<allocate::Response>),
    InitProducerId(Box<init::Response>),
}

/// A message's bytes as the framer gave them.
#[derive(Debug, Clone, Copy)]
pub struct Captured<'a> {
    /// The message before its first gap, or `None` when its bytes were not kept
    /// (`not_read` says why).
    pub message: Option<&'a [u8]>,
    pub len: u32,
    pub missing: u32,
    pub keep_raw: bool,
}

impl DecodedRequest {
    /// Decodes a request of an API [`decodes`] names; `None` for any other API.
    pub fn decode(head: &RequestPrefix, bytes: Captured<'_>, not_read: Problem) -> Option<Self> {
        let raw = |message: &[u8]| {
            if bytes.keep_raw {
                message.to_vec()
            } else {
                Vec::new()
            }
        };
        Some(match head.api_key {
            ApiKey::ALLOCATE_PRODUCER_IDS => Self::Allocate(Box::new(match bytes.message {
                Some(m) => allocate::Request {
                    raw: raw(m),
                    ..allocate::decode_partial_request(m, bytes.len, bytes.missing, head)
                },
                None => allocate::Request {
                    problem: Some(not_read),
                    ..Default::default()
                },
            })),
            ApiKey::INIT_PRODUCER_ID => Self::InitProducerId(Box::new(match bytes.message {
                Some(m) => init::Request {
                    raw: raw(m),
                    ..init::decode_partial_request(m, bytes.len, bytes.missing, head)
                },
                None => init::Request {
                    problem: Some(not_read),
                    ..Default::default()
                },
            })),
            _ => return None,
        })
    }

    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Allocate(r) => r.problem.as_ref(),
            Self::InitProducerId(r) => r.problem.as_ref(),
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
        let raw = |message: &[u8]| {
            if bytes.keep_raw {
                message.to_vec()
            } else {
                Vec::new()
            }
        };
        Some(match api {
            ApiKey::ALLOCATE_PRODUCER_IDS => Self::Allocate(Box::new(match bytes.message {
                Some(m) => allocate::Response {
                    raw: raw(m),
                    ..allocate::decode_partial_response(m, bytes.len, bytes.missing, version)
                },
                None => allocate::Response {
                    problem: Some(not_read),
                    ..Default::default()
                },
            })),
            ApiKey::INIT_PRODUCER_ID => Self::InitProducerId(Box::new(match bytes.message {
                Some(m) => init::Response {
                    raw: raw(m),
                    ..init::decode_partial_response(m, bytes.len, bytes.missing, version)
                },
                None => init::Response {
                    problem: Some(not_read),
                    ..Default::default()
                },
            })),
            _ => return None,
        })
    }

    pub fn problem(&self) -> Option<&Problem> {
        match self {
            Self::Allocate(r) => r.problem.as_ref(),
            Self::InitProducerId(r) => r.problem.as_ref(),
        }
    }
}

/// Heap a tagged-field section holds.
fn tagged_bytes(fields: &Option<Vec<TaggedField>>) -> usize {
    fields.as_ref().map_or(0, |f| {
        f.capacity() * size_of::<TaggedField>() + f.iter().map(|t| t.data.capacity()).sum::<usize>()
    })
}
