//! InitProducerId (API key 22), versions 0 to 6: request and response.
//!
//! Schema: Apache Kafka `InitProducerIdRequest.json` / `InitProducerIdResponse.json`,
//! flexible from version 2 (request header v2 and response header v1 from there, header
//! v1 and v0 before). Decoding is partial by design, as for AllocateProducerIds: every
//! field read before a failure is kept, the failure is reported, nothing is guessed.
//! Versions outside 0 to 6 are not decoded past the header.
//!
//! Version 6 (KIP-939) is newer than the Kafka JSON we could read (October 2024, 0-5);
//! its layout (request `Enable2Pc`, `KeepPreparedTxn` after `ProducerEpoch`; response
//! `OngoingTxnProducerId`, `OngoingTxnProducerEpoch` after `ProducerEpoch`, all 6+) was
//! confirmed from two code generators run on Kafka's own JSON: kafka-protocol-rs
//! (commit 5d10821, "Update to kafka 4.1.0", `src/messages/init_producer_id_*.rs`) and
//! ivanyu/kafka_wire_protocol (`rust/src/schema/init_producer_id_request/v6.rs`, tested
//! against Kafka's Java classes). In 4.1 the request's version 6 is still marked unstable.

use super::apis::{Api, GrantedBy, GrantsProducerIds};
pub use super::decoded::Problem;
use super::schema::{message, RequestHeader, ResponseHeader};
use super::tables::{ApiKey, ErrorCode};

message! {
    /// InitProducerIdRequest. `None` means "not read" (or not in this version).
    pub struct Request: RequestHeader {
        api: ApiKey::INIT_PRODUCER_ID, name: "InitProducerIdRequest", newest: 6,
        /// `TransactionalId` (nullable string, v0+): `Some(None)` is null, an idempotent
        /// producer.
        transactional_id: Option<String> = ("TransactionalId", 0.., "The transactional id, or null if the producer is not transactional."),
        /// `TransactionTimeoutMs` (int32, v0+).
        transaction_timeout_ms: i32 = ("TransactionTimeoutMs", 0.., "The time in ms to wait before aborting idle transactions sent by this producer. This is only relevant if a TransactionalId has been defined."),
        /// `ProducerId` (int64, v3+): the producer id the client already has, or -1.
        producer_id: i64 = ("ProducerId", 3.., "The producer id. This is used to disambiguate requests if a transactional id is reused following its expiration."),
        /// `ProducerEpoch` (int16, v3+): its epoch, or -1.
        producer_epoch: i16 = ("ProducerEpoch", 3.., "The producer's current epoch. This will be checked against the producer epoch on the broker, and the request will return an error if they do not match."),
        /// `Enable2Pc` (bool, v6+).
        enable_2pc: bool = ("Enable2Pc", 6.., "True if the client wants to enable two-phase commit (2PC) protocol for transactions."),
        /// `KeepPreparedTxn` (bool, v6+).
        keep_prepared_txn: bool = ("KeepPreparedTxn", 6.., "True if the client wants to keep the currently ongoing transaction instead of aborting it."),
    }
}

message! {
    /// InitProducerIdResponse. `None` means "not read" (or not in this version).
    pub struct Response: ResponseHeader {
        api: ApiKey::INIT_PRODUCER_ID, name: "InitProducerIdResponse", newest: 6,
        /// `ThrottleTimeMs` (int32, v0+).
        throttle_time_ms: i32 = ("ThrottleTimeMs", 0.., "The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota."),
        /// `ErrorCode` (int16, v0+).
        error_code: ErrorCode = ("ErrorCode", 0.., "The error code, or 0 if there was no error."),
        /// `ProducerId` (int64, v0+): the granted producer id, or -1 on error.
        producer_id: i64 = ("ProducerId", 0.., "The current producer id."),
        /// `ProducerEpoch` (int16, v0+).
        producer_epoch: i16 = ("ProducerEpoch", 0.., "The current epoch associated with the producer id."),
        /// `OngoingTxnProducerId` (int64, v6+).
        ongoing_txn_producer_id: i64 = ("OngoingTxnProducerId", 6.., "The producer id for ongoing transaction when KeepPreparedTxn is used, -1 if there is no transaction ongoing."),
        /// `OngoingTxnProducerEpoch` (int16, v6+). The double space in its documentation
        /// is Kafka's own.
        ongoing_txn_producer_epoch: i16 = ("OngoingTxnProducerEpoch", 6.., "The epoch associated with the  producer id for ongoing transaction when KeepPreparedTxn is used, -1 if there is no transaction ongoing."),
    }
}

/// InitProducerId (API key 22): a producer asks a broker for an id and epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerId;

impl Api for InitProducerId {
    type Request = Request;
    type Response = Response;
}

impl GrantsProducerIds for InitProducerId {
    const GRANTED_BY: GrantedBy = GrantedBy::InitProducerId;
    const BUMPS_EPOCH: bool = false;

    fn requested(request: &Request) -> (Option<i64>, Option<i16>) {
        (request.producer_id, request.producer_epoch)
    }

    fn transactional_id(request: &Request) -> Option<Option<&str>> {
        request.transactional_id.as_ref().map(Option::as_deref)
    }

    fn client_id(request: &Request) -> Option<Option<&str>> {
        request.header.client_id.as_ref().map(Option::as_deref)
    }

    fn granted(response: &Response) -> (Option<ErrorCode>, Option<i64>, Option<i16>) {
        (
            response.error_code,
            response.producer_id,
            response.producer_epoch,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::header::RequestPrefix;
    use crate::kafka::layout::Visitor;
    use crate::kafka::reader::TaggedField;
    use crate::kafka::schema::Message;

    fn decode_request(message: &[u8], prefix: &RequestPrefix) -> Request {
        Request::decode(message, prefix.api_version)
    }

    fn decode_request_with(message: &[u8], prefix: &RequestPrefix, v: &mut dyn Visitor) -> Request {
        Request::decode_with(message, prefix.api_version, v)
    }

    fn decode_response(message: &[u8], version: i16) -> Response {
        Response::decode(message, version)
    }

    fn decode_response_with(message: &[u8], version: i16, v: &mut dyn Visitor) -> Response {
        Response::decode_with(message, version, v)
    }

    fn decode_partial_response(message: &[u8], len: u32, missing: u32, version: i16) -> Response {
        Response::decode_partial(message, len, missing, version)
    }
    use crate::kafka::layout::{Node, Recorder};
    use crate::kafka::reader::DecodeError;

    const CLIENT: &str = "pidshark-load";

    /// Kafka wire bytes, written field by field the way Kafka's JSON schemas lay them out.
    #[derive(Default)]
    struct Wire(Vec<u8>);

    impl Wire {
        fn i16(mut self, x: i16) -> Self {
            self.0.extend(x.to_be_bytes());
            self
        }
        fn i32(mut self, x: i32) -> Self {
            self.0.extend(x.to_be_bytes());
            self
        }
        fn i64(mut self, x: i64) -> Self {
            self.0.extend(x.to_be_bytes());
            self
        }
        fn byte(mut self, b: u8) -> Self {
            self.0.push(b);
            self
        }
        fn bytes(mut self, b: &[u8]) -> Self {
            self.0.extend(b);
            self
        }
        /// int16 length (-1 = null), then the bytes.
        fn string(self, s: Option<&str>) -> Self {
            match s {
                None => self.i16(-1),
                Some(s) => self
                    .i16(i16::try_from(s.len()).unwrap())
                    .bytes(s.as_bytes()),
            }
        }
        /// uvarint length + 1 (0 = null), then the bytes; one varint byte is enough here.
        fn compact_string(self, s: Option<&str>) -> Self {
            match s {
                None => self.byte(0),
                Some(s) => self
                    .byte(u8::try_from(s.len() + 1).unwrap())
                    .bytes(s.as_bytes()),
            }
        }
        fn no_tags(self) -> Self {
            self.byte(0)
        }
        /// Request header v1 (`flexible` false) or v2, client id "pidshark-load".
        fn request_header(self, version: i16, correlation_id: i32, flexible: bool) -> Self {
            let w = self
                .i16(22)
                .i16(version)
                .i32(correlation_id)
                .string(Some(CLIENT));
            if flexible {
                w.no_tags()
            } else {
                w
            }
        }
        /// Response header v0 (`flexible` false) or v1.
        fn response_header(self, correlation_id: i32, flexible: bool) -> Self {
            let w = self.i32(correlation_id);
            if flexible {
                w.no_tags()
            } else {
                w
            }
        }
        /// Response fields every version has.
        fn response_common(self, error: i16, producer_id: i64, epoch: i16) -> Self {
            self.i32(0).i16(error).i64(producer_id).i16(epoch)
        }
    }

    fn request(message: &[u8]) -> Request {
        decode_request(message, &RequestPrefix::parse(message).unwrap())
    }

    fn client() -> Option<Option<crate::kafka::client_id::ClientId>> {
        Some(Some(CLIENT.into()))
    }

    fn txn(id: Option<&str>) -> Option<Option<String>> {
        Some(id.map(str::to_owned))
    }

    /// What `req_init_pid(1)` in scripts/kafka/rig sends (its output, size prefix dropped):
    /// InitProducerId v4, header v2, null transactional id.
    const RIG_LOAD_REQUEST: [u8; 40] = [
        0x00, 0x16, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, // key 22, v4, correlation id 1
        0x00, 0x0d, b'p', b'i', b'd', b's', b'h', b'a', b'r', b'k', b'-', b'l', b'o', b'a',
        b'd', // client id, int16 length 13
        0x00, // header tagged fields: 0
        0x00, // TransactionalId: null (uvarint 0)
        0x00, 0x00, 0xea, 0x60, // TransactionTimeoutMs 60000
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // ProducerId -1
        0xff, 0xff, // ProducerEpoch -1
        0x00, // tagged fields: 0
    ];

    #[test]
    fn decodes_what_the_rig_load_sends() {
        assert_eq!(
            request(&RIG_LOAD_REQUEST),
            Request {
                header: RequestHeader {
                    client_id: client(),
                    tagged_fields: Some(vec![]),
                },
                transactional_id: Some(None),
                transaction_timeout_ms: Some(60_000),
                producer_id: Some(-1),
                producer_epoch: Some(-1),
                tagged_fields: Some(vec![]),
                ..Request::default()
            }
        );
    }

    #[test]
    fn decodes_v0_and_v1_without_flexible_fields() {
        for version in [0, 1] {
            let message = Wire::default()
                .request_header(version, 3, false)
                .string(None)
                .i32(60_000);
            assert_eq!(
                request(&message.0),
                Request {
                    header: RequestHeader {
                        client_id: client(),
                        tagged_fields: None,
                    },
                    transactional_id: Some(None),
                    transaction_timeout_ms: Some(60_000),
                    ..Request::default()
                },
                "v{version}"
            );
            let message = Wire::default()
                .request_header(version, 3, false)
                .string(Some("tx-1"))
                .i32(0);
            assert_eq!(request(&message.0).transactional_id, txn(Some("tx-1")));
            let message = Wire::default()
                .response_header(3, false)
                .response_common(0, 7, 0);
            assert_eq!(
                decode_response(&message.0, version),
                Response {
                    throttle_time_ms: Some(0),
                    error_code: Some(ErrorCode::NONE),
                    producer_id: Some(7),
                    producer_epoch: Some(0),
                    ..Response::default()
                },
                "v{version}"
            );
        }
    }

    #[test]
    fn decodes_v2_the_first_flexible_version() {
        let message = Wire::default()
            .request_header(2, 5, true)
            .compact_string(Some("tx-1"))
            .i32(60_000)
            .no_tags();
        assert_eq!(
            request(&message.0),
            Request {
                header: RequestHeader {
                    client_id: client(),
                    tagged_fields: Some(vec![]),
                },
                transactional_id: txn(Some("tx-1")),
                transaction_timeout_ms: Some(60_000),
                tagged_fields: Some(vec![]),
                ..Request::default()
            }
        );
        let message = Wire::default()
            .response_header(5, true)
            .response_common(0, 1000, 0)
            .no_tags();
        assert_eq!(
            decode_response(&message.0, 2),
            Response {
                header: ResponseHeader {
                    tagged_fields: Some(vec![]),
                },
                throttle_time_ms: Some(0),
                error_code: Some(ErrorCode::NONE),
                producer_id: Some(1000),
                producer_epoch: Some(0),
                tagged_fields: Some(vec![]),
                ..Response::default()
            }
        );
    }

    #[test]
    fn decodes_v3_producer_id_and_epoch() {
        let message = Wire::default()
            .request_header(3, 6, true)
            .compact_string(Some("tx-1"))
            .i32(60_000)
            .i64(5000)
            .i16(3)
            .no_tags();
        let req = request(&message.0);
        assert_eq!(req.producer_id, Some(5000));
        assert_eq!(req.producer_epoch, Some(3));
        assert_eq!(req.enable_2pc, None);
        assert_eq!(req.problem, None);
    }

    /// v4 request with transactional id "tx-1", producer id 5000, epoch 3, correlation 2.
    fn v4_transactional_request() -> Vec<u8> {
        Wire::default()
            .request_header(4, 2, true)
            .compact_string(Some("tx-1"))
            .i32(60_000)
            .i64(5000)
            .i16(3)
            .no_tags()
            .0
    }

    /// v4 response granting producer id 1000, epoch 0.
    fn v4_granting_response() -> Vec<u8> {
        Wire::default()
            .response_header(1, true)
            .response_common(0, 1000, 0)
            .no_tags()
            .0
    }

    #[test]
    fn decodes_v4_idempotent_and_transactional() {
        let idempotent = request(&RIG_LOAD_REQUEST);
        assert_eq!(idempotent.transactional_id, Some(None));
        let transactional = request(&v4_transactional_request());
        assert_eq!(
            transactional,
            Request {
                header: RequestHeader {
                    client_id: client(),
                    tagged_fields: Some(vec![]),
                },
                transactional_id: txn(Some("tx-1")),
                transaction_timeout_ms: Some(60_000),
                producer_id: Some(5000),
                producer_epoch: Some(3),
                tagged_fields: Some(vec![]),
                ..Request::default()
            }
        );
        let granted = decode_response(&v4_granting_response(), 4);
        assert_eq!(granted.error_code, Some(ErrorCode::NONE));
        assert_eq!(granted.producer_id, Some(1000));
        assert_eq!(granted.producer_epoch, Some(0));
        assert_eq!(granted.tagged_fields, Some(vec![]));
        assert_eq!(granted.problem, None);
        let fenced = Wire::default()
            .response_header(2, true)
            .response_common(47, -1, -1)
            .no_tags();
        let fenced = decode_response(&fenced.0, 4);
        assert_eq!(fenced.error_code, Some(ErrorCode(47)));
        assert_eq!(fenced.producer_id, Some(-1));
        assert_eq!(fenced.producer_epoch, Some(-1));
        assert_eq!(fenced.ongoing_txn_producer_id, None);
    }

    #[test]
    fn decodes_v5() {
        let message = Wire::default()
            .request_header(5, 9, true)
            .compact_string(None)
            .i32(-1)
            .i64(42)
            .i16(7)
            .no_tags();
        let req = request(&message.0);
        assert_eq!(req.transaction_timeout_ms, Some(-1));
        assert_eq!((req.producer_id, req.producer_epoch), (Some(42), Some(7)));
        assert_eq!(req.problem, None);
        let message = Wire::default()
            .response_header(9, true)
            .response_common(90, -1, -1)
            .no_tags();
        let resp = decode_response(&message.0, 5);
        assert_eq!(resp.error_code, Some(ErrorCode(90)));
        assert_eq!(resp.ongoing_txn_producer_id, None);
        assert_eq!(resp.problem, None);
    }

    #[test]
    fn decodes_v6_two_phase_commit_fields() {
        let message = Wire::default()
            .request_header(6, 4, true)
            .compact_string(Some("tx-1"))
            .i32(60_000)
            .i64(-1)
            .i16(-1)
            .byte(1) // Enable2Pc
            .byte(0) // KeepPreparedTxn
            .no_tags();
        assert_eq!(
            request(&message.0),
            Request {
                header: RequestHeader {
                    client_id: client(),
                    tagged_fields: Some(vec![]),
                },
                transactional_id: txn(Some("tx-1")),
                transaction_timeout_ms: Some(60_000),
                producer_id: Some(-1),
                producer_epoch: Some(-1),
                enable_2pc: Some(true),
                keep_prepared_txn: Some(false),
                tagged_fields: Some(vec![]),
                ..Request::default()
            }
        );
        let message = Wire::default()
            .response_header(4, true)
            .response_common(0, 1000, 1)
            .i64(999)
            .i16(5)
            .no_tags();
        assert_eq!(
            decode_response(&message.0, 6),
            Response {
                header: ResponseHeader {
                    tagged_fields: Some(vec![]),
                },
                throttle_time_ms: Some(0),
                error_code: Some(ErrorCode::NONE),
                producer_id: Some(1000),
                producer_epoch: Some(1),
                ongoing_txn_producer_id: Some(999),
                ongoing_txn_producer_epoch: Some(5),
                tagged_fields: Some(vec![]),
                ..Response::default()
            }
        );
    }

    #[test]
    fn versions_we_have_no_schema_for_are_read_to_the_header_only() {
        let unsupported = |version| {
            Some(Problem::UnsupportedVersion {
                api: ApiKey::INIT_PRODUCER_ID,
                version,
                newest: Some(6),
            })
        };
        // A version 7 would be flexible: header v2 and v1, whatever its body holds.
        let message = Wire::default().request_header(7, 8, true).bytes(&[1, 2, 3]);
        let req = request(&message.0);
        assert_eq!(req.header.client_id, client());
        assert_eq!(req.header.tagged_fields, Some(vec![]));
        assert_eq!(req.transactional_id, None);
        assert_eq!(req.problem.as_deref(), unsupported(7).as_ref());
        let message = Wire::default().response_header(8, true).bytes(&[1, 2, 3]);
        let resp = decode_response(&message.0, 7);
        assert_eq!(resp.header.tagged_fields, Some(vec![]));
        assert_eq!(resp.throttle_time_ms, None);
        assert_eq!(resp.problem.as_deref(), unsupported(7).as_ref());
        // A negative version: the rigid headers.
        let message = Wire::default().request_header(-1, 8, false).byte(0);
        let req = request(&message.0);
        assert_eq!(
            (req.header.client_id, req.header.tagged_fields),
            (client(), None)
        );
        assert_eq!(req.problem.as_deref(), unsupported(-1).as_ref());
        let resp = decode_response(&Wire::default().response_header(8, false).0, -1);
        assert_eq!(resp.header.tagged_fields, None);
        assert_eq!(resp.problem.as_deref(), unsupported(-1).as_ref());
    }

    #[test]
    fn every_strict_prefix_of_v4_fails_without_panicking() {
        let whole = v4_transactional_request();
        let prefix = RequestPrefix::parse(&whole).unwrap();
        for cut in 0..whole.len() {
            let req = decode_request(&whole[..cut], &prefix);
            assert!(
                matches!(req.problem.as_deref(), Some(Problem::Decode(_))),
                "cut {cut}"
            );
        }
        let whole = v4_granting_response();
        for cut in 0..whole.len() {
            let resp = decode_response(&whole[..cut], 4);
            assert!(
                matches!(resp.problem.as_deref(), Some(Problem::Decode(_))),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn keeps_fields_read_before_a_failure() {
        let whole = v4_transactional_request();
        // Cut inside ProducerId: the header (24 bytes), "tx-1" (5) and the timeout (4)
        // are whole, 3 of ProducerId's 8 bytes are there. Offsets count the size prefix.
        let req = decode_request(&whole[..36], &RequestPrefix::parse(&whole).unwrap());
        assert_eq!(req.transactional_id, txn(Some("tx-1")));
        assert_eq!(req.transaction_timeout_ms, Some(60_000));
        assert_eq!(req.producer_id, None);
        assert_eq!(
            req.problem.unwrap().to_string(),
            "ProducerId at offset 37 needs 8 bytes but only 3 are left"
        );
        let resp = decode_partial_response(&v4_granting_response()[..13], 26, 13, 4);
        assert_eq!(resp.error_code, Some(ErrorCode::NONE));
        assert_eq!(resp.producer_id, None);
        assert_eq!(resp.bytes_not_captured, Some(13));
        assert_eq!(
            resp.problem.as_deref(),
            Some(&Problem::NotCaptured {
                len: 26,
                captured: 13,
                field: Some(("ProducerId", 15)),
            })
        );
    }

    #[test]
    fn trailing_bytes_are_a_decode_error() {
        let mut message = v4_transactional_request();
        message.push(0);
        let req = request(&message);
        assert_eq!(req.tagged_fields, Some(vec![]));
        assert!(matches!(
            req.problem.as_deref(),
            Some(Problem::Decode(DecodeError::Trailing { left: 1, .. }))
        ));
        let mut message = v4_granting_response();
        message.extend([0, 0]);
        let resp = decode_response(&message, 4);
        assert_eq!(resp.producer_id, Some(1000));
        assert!(matches!(
            resp.problem.as_deref(),
            Some(Problem::Decode(DecodeError::Trailing { left: 2, .. }))
        ));
    }

    #[test]
    fn keeps_tagged_fields_of_header_and_body() {
        let tags = [0x02, 0x00, 0x01, 0xaa, 0x05, 0x02, 0xbb, 0xcc]; // tag 0 = aa, tag 5 = bbcc
        let message = Wire::default()
            .i16(22)
            .i16(4)
            .i32(1)
            .string(None)
            .bytes(&tags)
            .compact_string(None)
            .i32(60_000)
            .i64(-1)
            .i16(-1)
            .bytes(&[0x01, 0x07, 0x01, 0xee]); // tag 7 = ee
        let req = request(&message.0);
        let expected_header = vec![
            TaggedField::new(0, &[0xaa]),
            TaggedField::new(5, &[0xbb, 0xcc]),
        ];
        assert_eq!(req.header.client_id, Some(None));
        assert_eq!(req.header.tagged_fields, Some(expected_header.clone()));
        assert_eq!(req.tagged_fields, Some(vec![TaggedField::new(7, &[0xee])]));
        assert_eq!(req.problem, None);
        let message = Wire::default()
            .i32(1)
            .bytes(&tags)
            .response_common(0, 1000, 0)
            .bytes(&[0x01, 0x07, 0x01, 0xee]);
        let resp = decode_response(&message.0, 4);
        assert_eq!(resp.header.tagged_fields, Some(expected_header));
        assert_eq!(resp.tagged_fields, Some(vec![TaggedField::new(7, &[0xee])]));
        assert_eq!(resp.producer_id, Some(1000));
        assert_eq!(resp.problem, None);
    }

    #[test]
    fn a_bool_byte_of_2_is_invalid() {
        let message = Wire::default()
            .request_header(6, 4, true)
            .compact_string(None)
            .i32(60_000)
            .i64(-1)
            .i16(-1)
            .byte(0)
            .byte(2)
            .no_tags();
        let req = request(&message.0);
        assert_eq!(req.enable_2pc, Some(false));
        assert_eq!(req.keep_prepared_txn, None);
        assert!(matches!(
            req.problem.as_deref(),
            Some(Problem::Decode(DecodeError::Invalid {
                field: "KeepPreparedTxn",
                ..
            }))
        ));
    }

    /// (name, wire type, value, offset in the frame, size) of each node under `node`.
    fn rows(node: &Node) -> Vec<(String, String, Option<String>, usize, usize)> {
        let row = |n: &Node| {
            (
                n.name.clone(),
                n.kind.clone(),
                n.value.clone(),
                n.offset,
                n.size,
            )
        };
        node.children.iter().map(row).collect()
    }

    #[test]
    fn tells_the_tree_every_field_with_its_wire_type() {
        let mut rec = Recorder::new(Node::default(), LENGTH_PREFIX);
        let prefix = RequestPrefix::parse(&RIG_LOAD_REQUEST).unwrap();
        decode_request_with(&RIG_LOAD_REQUEST, &prefix, &mut rec);
        assert_eq!(rec.error, None);
        let tree = rec.finish();
        let [header, body] = tree.children.as_slice() else {
            panic!("{tree:?}")
        };
        assert_eq!(
            (header.name.as_str(), header.kind.as_str()),
            ("RequestHeader", "v2")
        );
        assert_eq!(body.name, "InitProducerIdRequest");
        assert_eq!((body.offset, body.size), (28, 16));
        let s = |text: &str| Some(text.to_owned());
        let row = |name: &str, wire: &str, value, offset, size| {
            (name.to_owned(), wire.to_owned(), value, offset, size)
        };
        assert_eq!(
            rows(body),
            vec![
                row(
                    "TransactionalId",
                    "compact_nullable_string",
                    s("null (uvarint 0)"),
                    28,
                    1
                ),
                row("TransactionTimeoutMs", "int32", s("60000"), 29, 4),
                row("ProducerId", "int64", s("-1"), 33, 8),
                row("ProducerEpoch", "int16", s("-1"), 41, 2),
                row("tagged_fields", "uvarint", s("0"), 43, 1),
            ]
        );
        let mut rec = Recorder::new(Node::default(), LENGTH_PREFIX);
        let message = Wire::default()
            .response_header(0, false)
            .response_common(0, 7, 0);
        decode_response_with(&message.0, 0, &mut rec);
        let tree = rec.finish();
        let [_, body] = tree.children.as_slice() else {
            panic!("{tree:?}")
        };
        assert_eq!(
            rows(body),
            vec![
                row("ThrottleTimeMs", "int32", s("0"), 8, 4),
                row("ErrorCode", "int16", s("0 (NONE)"), 12, 2),
                row("ProducerId", "int64", s("7"), 14, 8),
                row("ProducerEpoch", "int16", s("0"), 22, 2),
            ]
        );
        assert_eq!(
            body.children[1].about,
            "The error code, or 0 if there was no error."
        );
    }

    const LENGTH_PREFIX: usize = crate::kafka::decoded::LENGTH_PREFIX_LEN;
}
