//! EndTxn (API key 26), versions 0 to 5: a transactional producer ends its transaction
//! at the transaction coordinator, committing or aborting it.
//!
//! Schema: Apache Kafka `EndTxnRequest.json` / `EndTxnResponse.json` (kafka-clients
//! 4.4.0, unchanged since 4.0), flexible from version 3. Version 5 (KIP-890 part 2,
//! transactions v2) answers with the producer id and epoch the producer goes on with:
//! the coordinator bumps the epoch at every transaction's end, and hands out a new id
//! when the epoch is used up. Decoding is partial as for the other APIs.

use super::apis::{Api, GrantedBy, GrantsProducerIds};
pub use super::decoded::Problem;
use super::schema::{message, RequestHeader, ResponseHeader};
use super::tables::{ApiKey, ErrorCode};

message! {
    /// EndTxnRequest. `None` means "not read".
    pub struct Request: RequestHeader {
        api: ApiKey::END_TXN, name: "EndTxnRequest", newest: 5,
        /// `TransactionalId` (string, v0+).
        transactional_id: String = ("TransactionalId", 0.., "The ID of the transaction to end."),
        /// `ProducerId` (int64, v0+): the id the producer holds.
        producer_id: i64 = ("ProducerId", 0.., "The producer ID."),
        /// `ProducerEpoch` (int16, v0+): its epoch.
        producer_epoch: i16 = ("ProducerEpoch", 0.., "The current epoch associated with the producer."),
        /// `Committed` (bool, v0+): commit, or abort.
        committed: bool = ("Committed", 0.., "True if the transaction was committed, false if it was aborted."),
    }
}

message! {
    /// EndTxnResponse. `None` means "not read" (or not in this version).
    pub struct Response: ResponseHeader {
        api: ApiKey::END_TXN, name: "EndTxnResponse", newest: 5,
        /// `ThrottleTimeMs` (int32, v0+).
        throttle_time_ms: i32 = ("ThrottleTimeMs", 0.., "The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota."),
        /// `ErrorCode` (int16, v0+).
        error_code: ErrorCode = ("ErrorCode", 0.., "The error code, or 0 if there was no error."),
        /// `ProducerId` (int64, v5+; -1 by default): the id the producer goes on with.
        producer_id: i64 = ("ProducerId", 5.., "The producer ID."),
        /// `ProducerEpoch` (int16, v5+; -1 by default): its epoch.
        producer_epoch: i16 = ("ProducerEpoch", 5.., "The current epoch associated with the producer."),
    }
}

/// EndTxn (API key 26): a transactional producer ends a transaction; from version 5 the
/// answer grants the producer id and epoch it goes on with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxn;

impl Api for EndTxn {
    type Request = Request;
    type Response = Response;
}

impl GrantsProducerIds for EndTxn {
    const GRANTED_BY: GrantedBy = GrantedBy::EndTxn;
    const BUMPS_EPOCH: bool = true;

    fn requested(request: &Request) -> (Option<i64>, Option<i16>) {
        (request.producer_id, request.producer_epoch)
    }

    /// Never null: only a transactional producer ends transactions.
    fn transactional_id(request: &Request) -> Option<Option<&str>> {
        request.transactional_id.as_deref().map(Some)
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
