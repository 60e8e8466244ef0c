//! InitProducerId (API key 22), versions 0 to 6: request and response.
//!
//! Schema: Apache Kafka `InitProducerIdRequest.json` / `InitProducerIdResponse.json`,
//! flexible from version 2 (request header v2 and response header v1 from there, header
//! v1 and v0 before). Decoding is partial by design, as for AllocateProducerIds: every
//! field read before a failure is kept, the failure is reported, nothing is guessed.

pub use super::decoded::Problem;
use super::header::RequestPrefix;
use super::layout::{Ignore, Visitor};
use super::reader::TaggedField;
use super::tables::ErrorCode;

/// Highest version we have the schema of.
pub const MAX_VERSION: i16 = 6;

/// InitProducerIdRequest. `None` means "not read" (or not in this version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Header `client_id`: `Some(None)` is a null string on the wire.
    pub client_id: Option<Option<String>>,
    /// Header v2's tagged fields (versions 2+).
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    /// `TransactionalId` (nullable string, v0+): `Some(None)` is null, an idempotent
    /// producer.
    pub transactional_id: Option<Option<String>>,
    /// `TransactionTimeoutMs` (int32, v0+).
    pub transaction_timeout_ms: Option<i32>,
    /// `ProducerId` (int64, v3+): the producer id the client already has, or -1.
    pub producer_id: Option<i64>,
    /// `ProducerEpoch` (int16, v3+): its epoch, or -1.
    pub producer_epoch: Option<i16>,
    /// `Enable2Pc` (bool, v6+).
    pub enable_2pc: Option<bool>,
    /// `KeepPreparedTxn` (bool, v6+).
    pub keep_prepared_txn: Option<bool>,
    /// The body's tagged fields (versions 2+).
    pub tagged_fields: Option<Vec<TaggedField>>,
    pub problem: Option<Problem>,
    /// Bytes of the message that are not in the capture; `None` when it is whole.
    pub bytes_not_captured: Option<u32>,
    /// The message as captured (without its size prefix), kept for the tree view only;
    /// the decoder leaves it empty.
    pub raw: Vec<u8>,
}

/// InitProducerIdResponse. `None` means "not read" (or not in this version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    /// Response header v1's tagged fields (versions 2+).
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    /// `ThrottleTimeMs` (int32, v0+).
    pub throttle_time_ms: Option<i32>,
    /// `ErrorCode` (int16, v0+).
    pub error_code: Option<ErrorCode>,
    /// `ProducerId` (int64, v0+): the granted producer id, or -1 on error.
    pub producer_id: Option<i64>,
    /// `ProducerEpoch` (int16, v0+).
    pub producer_epoch: Option<i16>,
    /// `OngoingTxnProducerId` (int64, v6+).
    pub ongoing_txn_producer_id: Option<i64>,
    /// `OngoingTxnProducerEpoch` (int16, v6+).
    pub ongoing_txn_producer_epoch: Option<i16>,
    /// The body's tagged fields (versions 2+).
    pub tagged_fields: Option<Vec<TaggedField>>,
    pub problem: Option<Problem>,
    /// Bytes of the message that are not in the capture; `None` when it is whole.
    pub bytes_not_captured: Option<u32>,
    /// The message as captured (without its size prefix), kept for the tree view only.
    pub raw: Vec<u8>,
}

/// Decodes a request message (the frame without its length prefix) whose prefix says key 22.
pub fn decode_request(message: &[u8], prefix: &RequestPrefix) -> Request {
    decode_request_with(message, prefix, &mut Ignore)
}

/// Decodes a request of `len` bytes of which `missing` are not in the capture and
/// `message` holds those before the first gap.
pub fn decode_partial_request(
    message: &[u8],
    len: u32,
    missing: u32,
    prefix: &RequestPrefix,
) -> Request {
    let mut req = decode_request(message, prefix);
    if missing > 0 {
        req.problem = Problem::of_partial(req.problem.take(), message.len(), len);
        req.bytes_not_captured = Some(missing);
    }
    req
}

/// [`decode_request`], telling `v` the structure it reads.
pub fn decode_request_with(
    _message: &[u8],
    _prefix: &RequestPrefix,
    _v: &mut dyn Visitor,
) -> Request {
    Request::default() // TODO(issue 28): the decoder
}

/// Decodes a response message (the frame without its length prefix) to a key-22
/// request of `api_version`.
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
    let mut resp = decode_response(message, api_version);
    if missing > 0 {
        resp.problem = Problem::of_partial(resp.problem.take(), message.len(), len);
        resp.bytes_not_captured = Some(missing);
    }
    resp
}

/// [`decode_response`], telling `v` the structure it reads.
pub fn decode_response_with(_message: &[u8], _api_version: i16, _v: &mut dyn Visitor) -> Response {
    Response::default() // TODO(issue 28): the decoder
}
