//! What the Kafka stage shows of framing, messages and connections.

use std::fmt;
use std::net::SocketAddr;

use crate::diag::facts::facts;
use crate::diag::parts::{NamedCode, Side};
use crate::diag::Facts;

/// What a [`Kind::KafkaFrameTooLarge`](crate::diag::Kind::KafkaFrameTooLarge) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KafkaFrameTooLarge {
    pub side: Side,
    pub size: i32,
    pub limit: u32,
}

impl KafkaFrameTooLarge {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { side, size, limit } = self;
        facts![side, size, limit]
    }
}

impl fmt::Display for KafkaFrameTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { side, size, limit } = self;
        write!(
            f,
            "a Kafka size prefix from the {} says {size} bytes, above the {limit} byte limit; looking for the next frame",
            side.name()
        )
    }
}

/// What a [`Kind::KafkaResync`](crate::diag::Kind::KafkaResync) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KafkaResync {
    pub side: Side,
    pub skipped_bytes: u64,
}

impl KafkaResync {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            side,
            skipped_bytes,
        } = self;
        facts![side, skipped_bytes]
    }
}

impl fmt::Display for KafkaResync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            side,
            skipped_bytes,
        } = self;
        write!(
            f,
            "Kafka framing of the {}'s stream was found after passing over {skipped_bytes} bytes",
            side.name()
        )
    }
}

/// What a [`Kind::KafkaFrameIncomplete`](crate::diag::Kind::KafkaFrameIncomplete) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KafkaFrameIncomplete<'a> {
    pub side: Side,
    /// Bytes of the message read before the stream ended.
    pub bytes: u64,
    /// The message's API, when its head was read (a response's: the request's it
    /// answers, when that request was captured).
    pub api: Option<NamedCode<'a>>,
    /// Its correlation id, when its head was read.
    pub correlation_id: Option<i32>,
    /// Its API is one producer ids travel in (AllocateProducerIds, InitProducerId, EndTxn);
    /// false also when the API is not known.
    pub carries_producer_ids: bool,
}

impl KafkaFrameIncomplete<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            side,
            bytes,
            api,
            correlation_id,
            ..
        } = self;
        let api_key = api.map(|api| api.code);
        facts![side, bytes, api_key?, correlation_id?]
    }
}

impl fmt::Display for KafkaFrameIncomplete<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            side, bytes, api, ..
        } = self;
        write!(
            f,
            "the {}'s stream ended inside a Kafka {}{} after {bytes} of its bytes; the message is not reported",
            side.name(),
            api.map_or(String::new(), |api| format!("{} ", api.name)),
            side.message()
        )
    }
}

/// What a [`Kind::DuplicateCorrelationId`](crate::diag::Kind::DuplicateCorrelationId) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuplicateCorrelationId<'a> {
    pub correlation_id: i32,
    pub api_key: NamedCode<'a>,
    pub earlier_api_key: NamedCode<'a>,
    pub earlier_frame: u64,
}

impl DuplicateCorrelationId<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            correlation_id,
            api_key,
            earlier_api_key,
            earlier_frame,
        } = self;
        facts![correlation_id, api_key, earlier_api_key, earlier_frame]
    }
}

impl fmt::Display for DuplicateCorrelationId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            correlation_id,
            api_key,
            earlier_api_key,
            ..
        } = self;
        write!(
            f,
            "{} request reuses correlation id {correlation_id} while an earlier {} request with that id is still waiting; the earlier one is reported as response_unknown (which of the two a later answer is for cannot be told)",
            api_key.name, earlier_api_key.name
        )
    }
}

/// What a [`Kind::PendingLimit`](crate::diag::Kind::PendingLimit) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PendingLimit {
    pub max_pending: u64,
}

impl PendingLimit {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { max_pending } = self;
        facts![max_pending]
    }
}

impl fmt::Display for PendingLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { max_pending } = self;
        write!(
            f,
            "more than {max_pending} requests are waiting for a response on this connection; the oldest are given up (AllocateProducerIds ones are reported as response_unknown)"
        )
    }
}

/// What a [`Kind::NotKafka`](crate::diag::Kind::NotKafka) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NotKafka<'a> {
    pub initiator: SocketAddr,
    pub responder: SocketAddr,
    /// The reason's short name.
    pub reason: &'static str,
    /// The reason as a clause.
    pub explanation: &'a str,
    /// What would have to be true for `--port` to read it as Kafka, when that could.
    pub port_would_help_if: Option<&'static str>,
    pub server_port: u16,
}

impl NotKafka<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            reason,
            server_port,
            ..
        } = self;
        facts![reason, server_port]
    }
}

impl fmt::Display for NotKafka<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            initiator,
            responder,
            explanation,
            port_would_help_if,
            server_port,
            ..
        } = self;
        write!(
            f,
            "connection {initiator} <-> {responder} is not read as Kafka: {explanation}"
        )?;
        match port_would_help_if {
            Some(condition) => {
                write!(f, "; {condition}, run again with --port {server_port}")
            }
            None => Ok(()),
        }
    }
}

/// What a [`Kind::TlsEncrypted`](crate::diag::Kind::TlsEncrypted) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TlsEncrypted<'a> {
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// Short name of what was seen (`client_hello`...).
    pub seen: &'static str,
    /// What was seen, as a person says it.
    pub seen_described: &'static str,
    /// The server name a ClientHello asked for.
    pub server_name: Option<&'a str>,
}

impl TlsEncrypted<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            client,
            server,
            seen,
            server_name,
            ..
        } = self;
        facts!["port" => server.port(), client, server, seen, server_name?]
    }
}

impl fmt::Display for TlsEncrypted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            client,
            server,
            seen_described,
            server_name,
            ..
        } = self;
        let port = server.port();
        write!(
            f,
            "connection {client} -> {server} is TLS on port {port} ({seen_described}"
        )?;
        if let Some(name) = server_name {
            write!(f, ", server name {name}")?;
        }
        write!(
            f,
            "): encrypted, cannot be read; pidshark reads Kafka only where it is not encrypted"
        )
    }
}

/// What a [`Kind::OneSidedConnection`](crate::diag::Kind::OneSidedConnection) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OneSidedConnection {
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub requests_waiting: u64,
}

impl OneSidedConnection {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            client,
            server,
            requests_waiting,
        } = self;
        facts![client, server, requests_waiting]
    }
}

impl fmt::Display for OneSidedConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            client,
            server,
            requests_waiting,
        } = self;
        write!(
            f,
            "only the client's direction of connection {client} <-> {server} was captured (not one packet from the server, not even an ACK): its {requests_waiting} waiting request(s) may have been answered"
        )
    }
}
