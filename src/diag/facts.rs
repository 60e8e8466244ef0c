//! The facts each kind of diagnostic may carry, by name and JSON type: what the report's
//! schema describes for `facts` of each kind. A test holds every observation's facts
//! to this table (`observation/tests.rs`), and the schema test every report's.

use super::{Fact, Kind};

/// The JSON type a fact is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactType {
    /// A whole number (`Fact::Int`, `Fact::Uint`).
    Integer,
    /// A number with a fraction (`Fact::Float`).
    Number,
    Text,
    Boolean,
    /// An array of strings (`Fact::List`).
    Texts,
}

impl FactType {
    /// The type of a fact as written.
    pub fn of(fact: &Fact) -> Self {
        match fact {
            Fact::Int(_) | Fact::Uint(_) => Self::Integer,
            Fact::Float(_) => Self::Number,
            Fact::Text(_) => Self::Text,
            Fact::Bool(_) => Self::Boolean,
            Fact::List(_) => Self::Texts,
        }
    }

    /// Its JSON Schema.
    pub fn schema(self) -> serde_json::Value {
        match self {
            Self::Integer => serde_json::json!({ "type": "integer" }),
            Self::Number => serde_json::json!({ "type": "number" }),
            Self::Text => serde_json::json!({ "type": "string" }),
            Self::Boolean => serde_json::json!({ "type": "boolean" }),
            Self::Texts => serde_json::json!({ "type": "array", "items": { "type": "string" } }),
        }
    }
}

/// The facts a diagnostic of `kind` may carry (besides `frame`, which every finding of
/// the producer-id analysis has).
pub fn declared(kind: Kind) -> &'static [(&'static str, FactType)] {
    use FactType::{Boolean, Integer, Number, Text, Texts};
    match kind {
        Kind::CaptureCorrupt => &[("path", Text), ("record_offset", Integer)],
        Kind::CaptureFilesOverlap => &[("other_path", Text), ("path", Text)],
        Kind::CaptureTruncated => &[
            ("packets", Integer),
            ("path", Text),
            ("record_offset", Integer),
        ],
        Kind::ConnectionLimit => &[("max_connections", Integer)],
        Kind::DiagnosticsLimited => &[("count", Integer), ("kind", Text), ("listed", Integer)],
        Kind::DuplicateCorrelationId => &[
            ("api_key", Integer),
            ("correlation_id", Integer),
            ("earlier_api_key", Integer),
            ("earlier_frame", Integer),
        ],
        Kind::DuplicateWindowFull => &[("remembered", Integer)],
        Kind::IpFragmentsDropped => &[
            ("bytes", Integer),
            ("datagram_id", Integer),
            ("first_frame", Integer),
            ("fragments", Integer),
            ("from", Text),
            ("reason", Text),
            ("to", Text),
        ],
        Kind::KafkaDecodeError => &[
            ("api_key", Integer),
            ("correlation_id", Integer),
            ("message", Text),
            ("problem", Text),
        ],
        Kind::KafkaFrameIncomplete => &[
            ("api_key", Integer),
            ("bytes", Integer),
            ("correlation_id", Integer),
            ("side", Text),
        ],
        Kind::KafkaFrameTooLarge => &[("limit", Integer), ("side", Text), ("size", Integer)],
        Kind::KafkaFramingLost => &[
            ("gap_bytes", Integer),
            ("inside_head", Boolean),
            ("side", Text),
            ("size", Integer),
        ],
        Kind::KafkaMessageTruncated => &[
            ("api_key", Integer),
            ("correlation_id", Integer),
            ("message", Text),
            ("problem", Text),
        ],
        Kind::KafkaResync => &[("side", Text), ("skipped_bytes", Integer)],
        Kind::KafkaUnsupportedVersion => &[
            ("api_key", Integer),
            ("correlation_id", Integer),
            ("message", Text),
            ("problem", Text),
        ],
        Kind::MemoryLimit => &[
            ("bytes_freed", Integer),
            ("given_up", Text),
            ("max_memory", Integer),
            ("out_of_order_bytes", Integer),
        ],
        Kind::MetadataLogCorrupt => &[("at", Integer), ("path", Text), ("reason", Text)],
        Kind::MetadataLogDivergent => &[("dropped", Text), ("kept", Text), ("offset", Integer)],
        Kind::MetadataLogLimit => &[("at", Integer), ("path", Text), ("reason", Text)],
        Kind::MetadataLogTruncated => &[
            ("at", Integer),
            ("len", Integer),
            ("needed", Integer),
            ("path", Text),
        ],
        Kind::MidstreamStart => &[("from", Text), ("to", Text)],
        Kind::NotKafka => &[("reason", Text), ("server_port", Integer)],
        Kind::OneSidedConnection => &[
            ("client", Text),
            ("requests_waiting", Integer),
            ("server", Text),
        ],
        Kind::PacketMalformed => &[("fragments", Integer), ("reason", Text)],
        Kind::PacketTruncated => &[("bytes_missing", Integer)],
        Kind::PendingLimit => &[("max_pending", Integer)],
        Kind::PidBlockGap => &[
            ("answers_not_read", Integer),
            ("count", Integer),
            ("frame", Integer),
            ("ids_end", Integer),
            ("ids_start", Integer),
            ("other_broker_id", Integer),
            ("other_frame", Integer),
        ],
        Kind::PidBlockIrregular => &[
            ("correlation_id", Integer),
            ("frame", Integer),
            ("len", Integer),
            ("producer_id_len", Integer),
            ("producer_id_start", Integer),
            ("usual_len", Integer),
        ],
        Kind::PidBlockMismatch => &[
            ("broker_epoch", Integer),
            ("broker_id", Integer),
            ("committed_late_ms", Integer),
            ("frame", Integer),
            ("len", Integer),
            ("log_broker_epoch", Integer),
            ("log_broker_id", Integer),
            ("offset", Integer),
            ("start", Integer),
        ],
        Kind::PidBlockNotCommitted => &[
            ("broker_epoch", Integer),
            ("broker_id", Integer),
            ("frame", Integer),
            ("len", Integer),
            ("log_first_offset", Integer),
            ("log_last_offset", Integer),
            ("start", Integer),
        ],
        Kind::PidBlockNotDelivered => &[
            ("broker_epoch", Integer),
            ("broker_id", Integer),
            ("next_producer_id", Integer),
            ("offset", Integer),
            ("request_frame", Integer),
            ("request_status", Text),
            ("start", Integer),
            ("time_ms", Integer),
        ],
        Kind::PidBlockOverlap => &[
            ("affected_hosts", Texts),
            ("affected_producers", Integer),
            ("fault_frame", Integer),
            ("frame", Integer),
            ("ids_end", Integer),
            ("ids_start", Integer),
            ("other_broker_id", Integer),
            ("other_first_frame", Integer),
            ("other_frame", Integer),
            ("other_last_frame", Integer),
        ],
        Kind::PidBlockRegression => &[
            ("fault_frame", Integer),
            ("frame", Integer),
            ("other_broker_id", Integer),
            ("other_end", Integer),
            ("other_frame", Integer),
            ("start", Integer),
        ],
        Kind::PidBrokerEpochChange => &[
            ("earlier_frame", Integer),
            ("frame", Integer),
            ("new_epoch", Integer),
            ("old_epoch", Integer),
        ],
        Kind::PidCommittedGap => &[
            ("broker_id", Integer),
            ("missing_end", Integer),
            ("missing_start", Integer),
            ("next_producer_id", Integer),
            ("offset", Integer),
            ("previous_next_producer_id", Integer),
            ("previous_offset", Integer),
            ("usual_len", Integer),
        ],
        Kind::PidCommittedOverlap => &[
            ("broker_id", Integer),
            ("next_producer_id", Integer),
            ("offset", Integer),
            ("previous_next_producer_id", Integer),
            ("previous_offset", Integer),
            ("start", Integer),
        ],
        Kind::PidDuplicateGrant => &[
            ("client", Text),
            ("fault_frame", Integer),
            ("frame", Integer),
            ("other_client", Text),
            ("other_frame", Integer),
            ("other_transactional_id", Text),
            ("producer_epoch", Integer),
            ("producer_id", Integer),
            ("transactional_id", Text),
        ],
        Kind::PidErrorStreak => &[
            ("connections", Integer),
            ("count", Integer),
            ("error", Text),
            ("first_frame", Integer),
            ("frame", Integer),
            ("last_frame", Integer),
        ],
        Kind::PidOutsideBlocks => &[
            ("block_broker_id", Integer),
            ("block_end", Integer),
            ("block_start", Integer),
            ("blocks", Integer),
            ("frame", Integer),
            ("last_end", Integer),
            ("last_start", Integer),
            ("placement", Text),
            ("producer_id", Integer),
        ],
        Kind::PidRetry => &[
            ("earlier_frame", Integer),
            ("error", Text),
            ("frame", Integer),
        ],
        Kind::PidSlowResponse => &[
            ("correlation_id", Integer),
            ("frame", Integer),
            ("latency_us", Number),
            ("threshold_us", Number),
        ],
        Kind::PidStaleController => &[
            ("controller", Text),
            ("controller_id", Integer),
            ("controller_led_epoch", Integer),
            ("frame", Integer),
            ("leader_seen", Integer),
            ("leader_seen_epoch", Integer),
            ("leader_seen_frame", Integer),
            ("len", Integer),
            ("start", Integer),
        ],
        Kind::TcpGap => &[("bytes", Integer), ("from", Text), ("to", Text)],
        Kind::TcpOverlapConflict => &[("bytes", Integer), ("from", Text), ("offset", Integer)],
        Kind::TcpRstOutOfWindow => &[("from", Text), ("seq", Integer)],
        Kind::TlsEncrypted => &[
            ("client", Text),
            ("port", Integer),
            ("seen", Text),
            ("server", Text),
            ("server_name", Text),
        ],
        Kind::UnsupportedLinkType => &[("link_type", Text), ("link_type_number", Integer)],
    }
}
