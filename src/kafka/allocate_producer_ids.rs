//! AllocateProducerIds (API key 67), version 0: request and response.
//!
//! Schema: Apache Kafka `AllocateProducerIdsRequest.json` / `AllocateProducerIdsResponse.json`,
//! valid versions 0, flexible 0+, so requests use header v2 and responses header v1.
//! Decoding is partial by design: every field read before a failure is kept, the failure
//! is reported, nothing is guessed. Versions other than 0 are not decoded past the header.

use std::fmt;

use super::header::RequestPrefix;
use super::reader::{DecodeError, Reader, TaggedField};

/// Offset of the message inside the frame: the int32 length prefix.
const LENGTH_PREFIX_LEN: usize = 4;

/// Why a message was not fully decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A version we have no schema for; the body is left alone.
    UnsupportedVersion(i16),
    Decode(DecodeError),
    /// Larger than we buffer to decode: counted, not read.
    TooLarge {
        len: u32,
        limit: u32,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedVersion(v) => write!(
                f,
                "AllocateProducerIds version {v} is not supported (only version 0 is); the body was not decoded"
            ),
            Self::Decode(err) => err.fmt(f),
            Self::TooLarge { len, limit } => write!(
                f,
                "the message is {len} bytes, above the {limit} bytes we decode; it was not read"
            ),
        }
    }
}

/// AllocateProducerIdsRequest with request header v2. `None` means "not read".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Header `client_id`: `Some(None)` is a null string on the wire.
    pub client_id: Option<Option<String>>,
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    /// `BrokerId` (int32, v0+): the ID of the requesting broker.
    pub broker_id: Option<i32>,
    /// `BrokerEpoch` (int64, v0+): the epoch of the requesting broker.
    pub broker_epoch: Option<i64>,
    pub tagged_fields: Option<Vec<TaggedField>>,
    pub problem: Option<Problem>,
}

/// AllocateProducerIdsResponse with response header v1. `None` means "not read".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    /// `ThrottleTimeMs` (int32, v0+).
    pub throttle_time_ms: Option<i32>,
    /// `ErrorCode` (int16, v0+): the top level response error code.
    pub error_code: Option<i16>,
    /// `ProducerIdStart` (int64, v0+): the first producer ID in this range, inclusive.
    pub producer_id_start: Option<i64>,
    /// `ProducerIdLen` (int32, v0+): the number of producer IDs in this range.
    pub producer_id_len: Option<i32>,
    pub tagged_fields: Option<Vec<TaggedField>>,
    pub problem: Option<Problem>,
}

/// Decodes a request message (the frame without its length prefix) whose prefix says key 67.
pub fn decode_request(message: &[u8], prefix: &RequestPrefix) -> Request {
    let mut out = Request::default();
    let mut r = Reader::new(message);
    let result = (|| -> Result<(), DecodeError> {
        // Prefix fields were read already by the framer; step over them.
        r.i16("request_api_key")?;
        r.i16("request_api_version")?;
        r.i32("correlation_id")?;
        out.client_id = Some(r.nullable_string("client_id")?);
        out.header_tagged_fields = Some(r.tagged_fields()?);
        if prefix.api_version != 0 {
            return Ok(());
        }
        out.broker_id = Some(r.i32("BrokerId")?);
        out.broker_epoch = Some(r.i64("BrokerEpoch")?);
        out.tagged_fields = Some(r.tagged_fields()?);
        r.finish()
    })();
    out.problem = problem(result, prefix.api_version);
    out
}

/// Decodes a response message (the frame without its length prefix) to a key-67 request
/// of `api_version`.
pub fn decode_response(message: &[u8], api_version: i16) -> Response {
    let mut out = Response::default();
    let mut r = Reader::new(message);
    let result = (|| -> Result<(), DecodeError> {
        r.i32("correlation_id")?;
        out.header_tagged_fields = Some(r.tagged_fields()?);
        if api_version != 0 {
            return Ok(());
        }
        out.throttle_time_ms = Some(r.i32("ThrottleTimeMs")?);
        out.error_code = Some(r.i16("ErrorCode")?);
        out.producer_id_start = Some(r.i64("ProducerIdStart")?);
        out.producer_id_len = Some(r.i32("ProducerIdLen")?);
        out.tagged_fields = Some(r.tagged_fields()?);
        r.finish()
    })();
    out.problem = problem(result, api_version);
    out
}

fn problem(result: Result<(), DecodeError>, api_version: i16) -> Option<Problem> {
    match result {
        Err(err) => Some(Problem::Decode(err.shifted(LENGTH_PREFIX_LEN))),
        Ok(()) if api_version != 0 => Some(Problem::UnsupportedVersion(api_version)),
        Ok(()) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's smallest request, without its 4-byte size prefix (00 00 00 18).
    const SEED_REQUEST: [u8; 24] = [
        0x00, 0x43, // request_api_key = 67
        0x00, 0x00, // request_api_version = 0
        0x00, 0x00, 0x00, 0x00, // correlation_id = 0
        0x00, 0x00, // client_id: int16 length 0
        0x00, // header tagged fields: 0
        0x00, 0x00, 0x00, 0x00, // BrokerId = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // BrokerEpoch = 0
        0x00, // tagged fields: 0
    ];

    /// The seed's smallest response, without its size prefix.
    const SEED_RESPONSE: [u8; 24] = [
        0x00, 0x00, 0x00, 0x00, // correlation_id = 0
        0x00, // header tagged fields: 0
        0x00, 0x00, 0x00, 0x00, // ThrottleTimeMs = 0
        0x00, 0x00, // ErrorCode = 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // ProducerIdStart = 0
        0x00, 0x00, 0x00, 0x00, // ProducerIdLen = 0
        0x00, // tagged fields: 0
    ];

    fn prefix(message: &[u8]) -> RequestPrefix {
        RequestPrefix::parse(message).unwrap()
    }

    #[test]
    fn decodes_seed_request() {
        let req = decode_request(&SEED_REQUEST, &prefix(&SEED_REQUEST));
        assert_eq!(
            req,
            Request {
                client_id: Some(Some(String::new())),
                header_tagged_fields: Some(vec![]),
                broker_id: Some(0),
                broker_epoch: Some(0),
                tagged_fields: Some(vec![]),
                problem: None,
            }
        );
    }

    #[test]
    fn decodes_seed_response() {
        let resp = decode_response(&SEED_RESPONSE, 0);
        assert_eq!(
            resp,
            Response {
                header_tagged_fields: Some(vec![]),
                throttle_time_ms: Some(0),
                error_code: Some(0),
                producer_id_start: Some(0),
                producer_id_len: Some(0),
                tagged_fields: Some(vec![]),
                problem: None,
            }
        );
    }

    #[test]
    fn decodes_values_null_client_id_and_tags() {
        let message = [
            0x00, 0x43, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, // key 67, v0, corr 7
            0xff, 0xff, // client_id null
            0x01, 0x00, 0x02, 0xab, 0xcd, // header tags: tag 0 = abcd
            0x00, 0x00, 0x00, 0x02, // BrokerId 2
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, // BrokerEpoch 42
            0x01, 0x03, 0x01, 0xee, // tags: tag 3 = ee
        ];
        let req = decode_request(&message, &prefix(&message));
        assert_eq!(req.client_id, Some(None));
        assert_eq!(req.broker_id, Some(2));
        assert_eq!(req.broker_epoch, Some(42));
        assert_eq!(
            req.header_tagged_fields,
            Some(vec![TaggedField {
                tag: 0,
                data: vec![0xab, 0xcd]
            }])
        );
        assert_eq!(
            req.tagged_fields,
            Some(vec![TaggedField {
                tag: 3,
                data: vec![0xee]
            }])
        );
        assert_eq!(req.problem, None);
    }

    #[test]
    fn every_strict_prefix_of_the_seed_fails_without_panicking() {
        for cut in 0..SEED_REQUEST.len() {
            let part = &SEED_REQUEST[..cut];
            let p = RequestPrefix::parse(&SEED_REQUEST).unwrap();
            let req = decode_request(part, &p);
            assert!(matches!(req.problem, Some(Problem::Decode(_))), "cut {cut}");
        }
        for cut in 0..SEED_RESPONSE.len() {
            let resp = decode_response(&SEED_RESPONSE[..cut], 0);
            assert!(
                matches!(resp.problem, Some(Problem::Decode(_))),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn keeps_fields_read_before_a_failure() {
        let resp = decode_response(&SEED_RESPONSE[..10], 0);
        assert_eq!(resp.throttle_time_ms, Some(0));
        assert_eq!(resp.error_code, None);
        assert_eq!(
            resp.problem.unwrap().to_string(),
            "ErrorCode at offset 13 needs 2 bytes but only 1 are left"
        );
    }

    #[test]
    fn trailing_bytes_are_a_decode_error() {
        let mut message = SEED_RESPONSE.to_vec();
        message.push(0);
        let resp = decode_response(&message, 0);
        assert_eq!(resp.producer_id_len, Some(0));
        assert!(resp.problem.is_some());
    }

    #[test]
    fn other_versions_are_not_guessed() {
        let mut message = SEED_REQUEST;
        message[3] = 1; // request_api_version = 1
        let req = decode_request(&message, &prefix(&message));
        assert_eq!(req.client_id, Some(Some(String::new())));
        assert_eq!(req.broker_id, None);
        assert_eq!(req.problem, Some(Problem::UnsupportedVersion(1)));
        let resp = decode_response(&SEED_RESPONSE, 1);
        assert_eq!(resp.error_code, None);
        assert_eq!(resp.problem, Some(Problem::UnsupportedVersion(1)));
    }
}
