//! AllocateProducerIds (API key 67), version 0: request and response.
//!
//! Schema: Apache Kafka `AllocateProducerIdsRequest.json` / `AllocateProducerIdsResponse.json`,
//! valid versions 0, flexible 0+, so requests use header v2 and responses header v1.
//! Decoding is partial by design: every field read before a failure is kept, the failure
//! is reported, nothing is guessed. Versions other than 0 are not decoded past the header.

use super::apis::Api;
pub use super::decoded::Problem;
use super::schema::{message, RequestHeader, ResponseHeader};
use super::tables::{ApiKey, ErrorCode};

message! {
    /// AllocateProducerIdsRequest. `None` means "not read".
    pub struct Request: RequestHeader {
        api: ApiKey::ALLOCATE_PRODUCER_IDS, name: "AllocateProducerIdsRequest", newest: 0,
        /// `BrokerId` (int32, v0+).
        broker_id: i32 = ("BrokerId", 0.., "The ID of the requesting broker."),
        /// `BrokerEpoch` (int64, v0+).
        broker_epoch: i64 = ("BrokerEpoch", 0.., "The epoch of the requesting broker."),
    }
}

message! {
    /// AllocateProducerIdsResponse. `None` means "not read".
    pub struct Response: ResponseHeader {
        api: ApiKey::ALLOCATE_PRODUCER_IDS, name: "AllocateProducerIdsResponse", newest: 0,
        /// `ThrottleTimeMs` (int32, v0+).
        throttle_time_ms: i32 = ("ThrottleTimeMs", 0.., "The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota."),
        /// `ErrorCode` (int16, v0+).
        error_code: ErrorCode = ("ErrorCode", 0.., "The top level response error code."),
        /// `ProducerIdStart` (int64, v0+): the first id of the block.
        producer_id_start: i64 = ("ProducerIdStart", 0.., "The first producer ID in this range, inclusive."),
        /// `ProducerIdLen` (int32, v0+): how many ids the block holds.
        producer_id_len: i32 = ("ProducerIdLen", 0.., "The number of producer IDs in this range."),
    }
}

/// AllocateProducerIds (API key 67): a broker asks the controller for a block of ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocateProducerIds;

impl Api for AllocateProducerIds {
    type Request = Request;
    type Response = Response;
}

/// The longest response frame [`reads_as_block`] is asked about: a version 0 answer is
/// 24 bytes, and tagged fields a newer Kafka adds would be few.
pub const LONGEST_BLOCK_ANSWER: u32 = 256;

/// Whether `message` (a response frame without its size prefix, of no known request)
/// reads whole as an AllocateProducerIds answer granting a block would: version 0, every
/// byte used, no error, a start of at least 0 and ids in the block. It says what the
/// bytes could be, never what they are: a response of another API can read so too.
pub fn reads_as_block(message: &[u8]) -> bool {
    use super::schema::Message;
    let r = Response::decode(message, 0);
    r.problem.is_none()
        && r.throttle_time_ms.is_some_and(|t| t >= 0)
        && r.error_code == Some(ErrorCode::NONE)
        && r.producer_id_start.is_some_and(|s| s >= 0)
        && r.producer_id_len.is_some_and(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::header::RequestPrefix;
    use crate::kafka::reader::TaggedField;
    use crate::kafka::schema::Message;

    fn decode_request(message: &[u8], prefix: &RequestPrefix) -> Request {
        Request::decode(message, prefix.api_version)
    }

    fn decode_response(message: &[u8], version: i16) -> Response {
        Response::decode(message, version)
    }

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
                header: RequestHeader {
                    client_id: Some(Some("".into())),
                    tagged_fields: Some(vec![]),
                },
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
    fn a_response_granting_a_block_reads_as_one_and_others_do_not() {
        let mut grant = SEED_RESPONSE;
        grant[21] = 0x03; // ProducerIdLen = 1000
        grant[22] = 0xe8;
        assert!(reads_as_block(&grant));
        assert!(!reads_as_block(&SEED_RESPONSE), "no ids in the block");
        let mut refused = grant;
        refused[10] = 41; // NOT_CONTROLLER
        assert!(!reads_as_block(&refused), "an error grants nothing");
        assert!(!reads_as_block(&grant[..23]), "cut short");
        let longer = [&grant[..], &[0]].concat();
        assert!(!reads_as_block(&longer), "a byte past its end");
        // a BrokerHeartbeat answer (version 1): throttle, error, three flags, tags
        let heartbeat = [0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        assert!(!reads_as_block(&heartbeat));
    }

    #[test]
    fn decodes_seed_response() {
        let resp = decode_response(&SEED_RESPONSE, 0);
        assert_eq!(
            resp,
            Response {
                header: ResponseHeader {
                    tagged_fields: Some(vec![]),
                },
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
        assert_eq!(req.header.client_id, Some(None));
        assert_eq!(req.broker_id, Some(2));
        assert_eq!(req.broker_epoch, Some(42));
        assert_eq!(
            req.header.tagged_fields,
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
            assert!(
                matches!(req.problem.as_deref(), Some(Problem::Decode(_))),
                "cut {cut}"
            );
        }
        for cut in 0..SEED_RESPONSE.len() {
            let resp = decode_response(&SEED_RESPONSE[..cut], 0);
            assert!(
                matches!(resp.problem.as_deref(), Some(Problem::Decode(_))),
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
        assert_eq!(req.header.client_id, Some(Some("".into())));
        assert_eq!(req.broker_id, None);
        assert_eq!(
            req.problem.as_deref(),
            Some(&Problem::UnsupportedVersion {
                api: ApiKey::ALLOCATE_PRODUCER_IDS,
                version: 1,
                newest: Some(0),
            })
        );
        let resp = decode_response(&SEED_RESPONSE, 1);
        assert_eq!(resp.error_code, None);
        assert_eq!(
            resp.problem.as_deref(),
            Some(&Problem::UnsupportedVersion {
                api: ApiKey::ALLOCATE_PRODUCER_IDS,
                version: 1,
                newest: Some(0),
            })
        );
    }
}
