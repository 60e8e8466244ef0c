//! AllocateProducerIds (API key 67), version 0: request and response.
//!
//! Schema: Apache Kafka `AllocateProducerIdsRequest.json` / `AllocateProducerIdsResponse.json`,
//! valid versions 0, flexible 0+, so requests use header v2 and responses header v1.
//! Decoding is partial by design: every field read before a failure is kept, the failure
//! is reported, nothing is guessed. Versions other than 0 are not decoded past the header.

pub use super::decoded::Problem;
use super::decoded::{partial, undecoded_fields};
use super::decoded::{request_header, response_header, tagged_section, traced};
use super::header::RequestPrefix;
use super::layout::{Ignore, Visitor};
use super::reader::{DecodeError, Reader, TaggedField};
use super::tables::{ApiKey, ErrorCode};

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
    /// Bytes of the message that are not in the capture; `None` when it is whole.
    pub bytes_not_captured: Option<u32>,
    /// The message as captured (without its size prefix), kept for the tree view only;
    /// the decoder leaves it empty.
    pub raw: Vec<u8>,
}

/// AllocateProducerIdsResponse with response header v1. `None` means "not read".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    /// `ThrottleTimeMs` (int32, v0+).
    pub throttle_time_ms: Option<i32>,
    /// `ErrorCode` (int16, v0+): the top level response error code.
    pub error_code: Option<ErrorCode>,
    /// `ProducerIdStart` (int64, v0+): the first producer ID in this range, inclusive.
    pub producer_id_start: Option<i64>,
    /// `ProducerIdLen` (int32, v0+): the number of producer IDs in this range.
    pub producer_id_len: Option<i32>,
    pub tagged_fields: Option<Vec<TaggedField>>,
    pub problem: Option<Problem>,
    /// Bytes of the message that are not in the capture; `None` when it is whole.
    pub bytes_not_captured: Option<u32>,
    /// The message as captured (without its size prefix), kept for the tree view only;
    /// the decoder leaves it empty.
    pub raw: Vec<u8>,
}

undecoded_fields!(Request, Response);

/// Decodes a request message (the frame without its length prefix) whose prefix says key 67.
pub fn decode_request(message: &[u8], prefix: &RequestPrefix) -> Request {
    decode_request_with(message, prefix, &mut Ignore)
}

/// Decodes a request of `len` bytes of which `missing` are not in the capture and
/// `message` holds those before the first gap: the fields whose bytes are all there, and
/// nothing from the gap on.
pub fn decode_partial_request(
    message: &[u8],
    len: u32,
    missing: u32,
    prefix: &RequestPrefix,
) -> Request {
    partial(decode_request(message, prefix), message.len(), len, missing)
}

/// [`decode_request`], telling `v` the structure it reads.
pub fn decode_request_with(message: &[u8], prefix: &RequestPrefix, v: &mut dyn Visitor) -> Request {
    let mut out = Request::default();
    let mut r = Reader::new(message);
    let result = (|| -> Result<(), DecodeError> {
        let head = (&mut out.client_id, &mut out.header_tagged_fields);
        request_header(&mut r, v, true, head)?;
        if prefix.api_version != 0 {
            return Ok(());
        }
        v.open(
            "AllocateProducerIdsRequest",
            "struct",
            "message body, version 0",
            r.position(),
        );
        out.broker_id = Some(traced(
            &mut r,
            v,
            ("BrokerId", "int32", "The ID of the requesting broker."),
            |r| r.i32("BrokerId"),
            ToString::to_string,
        )?);
        out.broker_epoch = Some(traced(
            &mut r,
            v,
            (
                "BrokerEpoch",
                "int64",
                "The epoch of the requesting broker.",
            ),
            |r| r.i64("BrokerEpoch"),
            ToString::to_string,
        )?);
        out.tagged_fields = Some(tagged_section(
            &mut r,
            v,
            "number of tagged fields in this struct",
        )?);
        v.close(r.position());
        r.finish()
    })();
    if let Err(err) = &result {
        v.failed(err);
    }
    out.problem = problem(result, prefix.api_version);
    out
}

/// Decodes a response message (the frame without its length prefix) to a key-67 request
/// of `api_version`.
pub fn decode_response(message: &[u8], api_version: i16) -> Response {
    decode_response_with(message, api_version, &mut Ignore)
}

/// [`decode_partial_request`] for a response.
pub fn decode_partial_response(
    message: &[u8],
    len: u32,
    missing: u32,
    api_version: i16,
) -> Response {
    partial(
        decode_response(message, api_version),
        message.len(),
        len,
        missing,
    )
}

/// [`decode_response`], telling `v` the structure it reads.
pub fn decode_response_with(message: &[u8], api_version: i16, v: &mut dyn Visitor) -> Response {
    let mut out = Response::default();
    let mut r = Reader::new(message);
    let result = (|| -> Result<(), DecodeError> {
        response_header(&mut r, v, true, &mut out.header_tagged_fields)?;
        if api_version != 0 {
            return Ok(());
        }
        v.open(
            "AllocateProducerIdsResponse",
            "struct",
            "message body, version 0",
            r.position(),
        );
        out.throttle_time_ms = Some(traced(&mut r, v, ("ThrottleTimeMs", "int32", "The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota."), |r| r.i32("ThrottleTimeMs"), ToString::to_string)?);
        out.error_code = Some(traced(
            &mut r,
            v,
            ("ErrorCode", "int16", "The top level response error code."),
            |r| r.i16("ErrorCode").map(ErrorCode),
            |c| format!("{} ({})", c.0, c.name()),
        )?);
        out.producer_id_start = Some(traced(
            &mut r,
            v,
            (
                "ProducerIdStart",
                "int64",
                "The first producer ID in this range, inclusive.",
            ),
            |r| r.i64("ProducerIdStart"),
            ToString::to_string,
        )?);
        out.producer_id_len = Some(traced(
            &mut r,
            v,
            (
                "ProducerIdLen",
                "int32",
                "The number of producer IDs in this range.",
            ),
            |r| r.i32("ProducerIdLen"),
            ToString::to_string,
        )?);
        out.tagged_fields = Some(tagged_section(
            &mut r,
            v,
            "number of tagged fields in this struct",
        )?);
        v.close(r.position());
        r.finish()
    })();
    if let Err(err) = &result {
        v.failed(err);
    }
    out.problem = problem(result, api_version);
    out
}

fn problem(result: Result<(), DecodeError>, api_version: i16) -> Option<Problem> {
    let api = ApiKey::ALLOCATE_PRODUCER_IDS;
    Problem::of_result(result, api, api_version, api_version == 0)
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
                bytes_not_captured: None,
                raw: vec![],
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
                error_code: Some(ErrorCode::NONE),
                producer_id_start: Some(0),
                producer_id_len: Some(0),
                tagged_fields: Some(vec![]),
                problem: None,
                bytes_not_captured: None,
                raw: vec![],
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
            Some(vec![TaggedField::new(0, &[0xab, 0xcd])])
        );
        assert_eq!(req.tagged_fields, Some(vec![TaggedField::new(3, &[0xee])]));
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
        assert_eq!(
            req.problem,
            Some(Problem::UnsupportedVersion {
                api: ApiKey::ALLOCATE_PRODUCER_IDS,
                version: 1
            })
        );
        let resp = decode_response(&SEED_RESPONSE, 1);
        assert_eq!(resp.error_code, None);
        assert_eq!(
            resp.problem,
            Some(Problem::UnsupportedVersion {
                api: ApiKey::ALLOCATE_PRODUCER_IDS,
                version: 1
            })
        );
    }
}
