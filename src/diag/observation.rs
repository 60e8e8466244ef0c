//! What a diagnostic says, as typed values: an [`Observation`] has a variant per
//! [`Kind`] (an enum of causes inside it where the kind's sentence depends on the cause),
//! and both the sentence ([`Display`](fmt::Display)) and the facts
//! ([`Observation::facts`]) are written from its fields, so the two cannot disagree and
//! a new kind is a new variant that the compiler asks a sentence and facts of.
//!
//! Fields are the values themselves (numbers, addresses, names); the types of the stages
//! that raise them stay in those stages, which pass their names or descriptions here.
//! Text is borrowed, so an observation is built where it is raised without allocating,
//! and written (allocating) only if it is listed.

use std::fmt;
use std::net::SocketAddr;

use super::facts::facts;
use super::parts::{
    Cut, Damage, FragmentsDropped, FramingLost, GivenUp, Irregular, NamedCode, Overlap, RetryAfter,
    Side, Undecoded,
};
use super::{Facts, Kind, Severity};

/// Something odd seen in the input, or a finding of the analysis, with its values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observation<'a> {
    /// The file ends, or its decompressed stream breaks off, inside a record.
    CaptureTruncated {
        path: &'a str,
        record_offset: u64,
        /// Packets read before it.
        packets: u64,
        cut: Cut<'a>,
    },
    CaptureCorrupt {
        path: &'a str,
        record_offset: u64,
        damage: Damage<'a>,
    },
    /// A packet captured shorter than it was on the wire (snaplen).
    PacketTruncated {
        bytes_missing: u64,
    },
    UnsupportedLinkType {
        /// The link type's name.
        link_type: &'a str,
        link_type_number: i32,
    },
    PacketMalformed {
        /// Fragments the IP datagram was reassembled from, when it was.
        fragments: Option<u64>,
        /// What the decoder could not read.
        reason: &'a str,
    },
    MidstreamStart {
        connection: u64,
        from: SocketAddr,
        to: SocketAddr,
    },
    TcpGap {
        bytes: u64,
        from: SocketAddr,
        to: SocketAddr,
    },
    TcpOverlapConflict {
        /// Stream offset of the bytes that differ.
        offset: u64,
        bytes: u64,
        from: SocketAddr,
    },
    TcpRstOutOfWindow {
        from: SocketAddr,
        seq: u32,
    },
    KafkaFrameTooLarge {
        side: Side,
        size: i32,
        limit: u32,
    },
    KafkaResync {
        side: Side,
        skipped_bytes: u64,
    },
    KafkaFramingLost(FramingLost),
    KafkaFrameIncomplete {
        side: Side,
        /// Bytes of the message read before the stream ended.
        bytes: u64,
        /// The message's API, when its head was read (a response's: the request's it
        /// answers, when that request was captured).
        api: Option<NamedCode<'a>>,
        /// Its correlation id, when its head was read.
        correlation_id: Option<i32>,
        /// Its API is one producer ids travel in (AllocateProducerIds, InitProducerId);
        /// false also when the API is not known.
        carries_producer_ids: bool,
    },
    KafkaDecodeError(Undecoded<'a>),
    KafkaMessageTruncated(Undecoded<'a>),
    KafkaUnsupportedVersion(Undecoded<'a>),
    DuplicateCorrelationId {
        correlation_id: i32,
        api_key: NamedCode<'a>,
        earlier_api_key: NamedCode<'a>,
        earlier_frame: u64,
    },
    PendingLimit {
        max_pending: u64,
    },
    /// More of `kind` than [`MAX_LISTED_PER_KIND`](super::MAX_LISTED_PER_KIND) were found
    /// (of one API, for the kinds of messages not read: so that a flood of one API's does
    /// not hide another's).
    DiagnosticsLimited {
        kind: Kind,
        count: u64,
        listed: u64,
    },
    ConnectionLimit {
        /// Connections open at once.
        open: u64,
        max_connections: u64,
        /// The first connection no longer followed.
        first: u64,
    },
    MemoryLimit {
        connection: u64,
        given_up: GivenUp<'a>,
    },
    NotKafka {
        initiator: SocketAddr,
        responder: SocketAddr,
        /// The reason's short name.
        reason: &'static str,
        /// The reason as a clause.
        explanation: &'a str,
        /// What would have to be true for `--port` to read it as Kafka, when that could.
        port_would_help_if: Option<&'static str>,
        server_port: u16,
    },
    TlsEncrypted {
        client: SocketAddr,
        server: SocketAddr,
        /// Short name of what was seen (`client_hello`...).
        seen: &'static str,
        /// What was seen, as a person says it.
        seen_described: &'static str,
        /// The server name a ClientHello asked for.
        server_name: Option<&'a str>,
    },
    IpFragmentsDropped(FragmentsDropped<'a>),
    CaptureFilesOverlap {
        path: &'a str,
        other_path: &'a str,
    },
    DuplicateWindowFull {
        /// Packets among which copies are recognised.
        remembered: u64,
    },
    OneSidedConnection {
        client: SocketAddr,
        server: SocketAddr,
        requests_waiting: u64,
    },
    PidBlockOverlap(Overlap),
    PidBlockRegression {
        /// Response frame of the block starting below.
        frame: u64,
        broker_id: i32,
        start: i64,
        /// End of the earlier block reaching highest, its broker and response frame.
        other_end: i64,
        other_broker_id: i32,
        other_frame: u64,
    },
    PidBlockGap {
        /// Response frame of the block after the gap.
        frame: u64,
        broker_id: i32,
        /// The ids skipped, `ids_start..=ids_end`.
        ids_start: i64,
        ids_end: i64,
        /// The block before the gap: its broker and response frame.
        other_broker_id: i32,
        other_frame: u64,
        /// AllocateProducerIds answers the capture does not show whole: any may have
        /// granted the ids.
        answers_not_read: u64,
    },
    PidBlockIrregular(Irregular),
    PidErrorStreak {
        broker_id: i32,
        /// The error's name.
        error: &'a str,
        count: u64,
        first_frame: u64,
        /// Frame of the last response, where the streak shows.
        last_frame: u64,
        connections: u64,
    },
    PidRetry {
        /// The request asking again.
        frame: u64,
        broker_id: i32,
        /// The request retried.
        earlier_frame: u64,
        after: RetryAfter<'a>,
    },
    PidBrokerEpochChange {
        /// The request with the new epoch.
        frame: u64,
        broker_id: i32,
        old_epoch: i64,
        new_epoch: i64,
        /// The request with the old epoch.
        earlier_frame: u64,
    },
    PidSlowResponse {
        /// The response's frame.
        frame: u64,
        correlation_id: i32,
        latency_ns: i128,
        threshold_us: f64,
    },
    /// An InitProducerId response granted a producer id and epoch already granted to
    /// another producer (another connection, or another transactional id).
    PidDuplicateGrant {
        /// The later grant's response frame, client and transactional id.
        frame: u64,
        producer_id: i64,
        producer_epoch: i16,
        client: SocketAddr,
        transactional_id: Option<&'a str>,
        /// The earlier grant's.
        other_frame: u64,
        other_client: SocketAddr,
        other_transactional_id: Option<&'a str>,
    },
    /// An InitProducerId response granted a producer id that Kafka's producer-id manager
    /// cannot have drawn (see `analysis::placement`): from another broker's block, from
    /// an older block after a newer one, or outside every block its broker was granted
    /// in the capture, above the first.
    PidOutsideBlocks {
        frame: u64,
        broker_id: i32,
        producer_id: i64,
        /// `another_brokers_block`, `older_block` or `outside_blocks`.
        placement: &'static str,
        /// Why, in a sentence (the entry's `placement_reason`).
        reason: &'a str,
        /// The broker's blocks seen so far, and the last of them: `start..=end`.
        blocks: u64,
        last_start: i64,
        last_end: i64,
        /// The block that holds the id, when the capture shows it.
        block: Option<(i64, i64, i32)>,
    },
    /// An AllocateProducerIds response granted a block from a controller after the
    /// capture showed another controller leading a later epoch than any it led.
    PidStaleController {
        /// The response granting the block.
        frame: u64,
        /// The connection's server, and the controller serving there.
        controller: SocketAddr,
        controller_id: i32,
        /// The highest epoch it is known to have led.
        controller_led_epoch: Option<i32>,
        /// The leader of the latest epoch, and the first message that showed it.
        leader_seen: i32,
        leader_seen_epoch: i32,
        leader_seen_frame: u64,
        start: i64,
        len: i32,
    },
    /// A metadata log file ends inside a record batch: `len` bytes of one that needs
    /// `needed`, at byte `at`; the batches before it were read.
    MetadataLogTruncated {
        path: &'a str,
        at: u64,
        needed: u64,
        len: u64,
    },
    /// A metadata log batch that is not what Kafka writes; the file is read no further.
    MetadataLogCorrupt {
        path: &'a str,
        at: u64,
        reason: &'a str,
    },
    /// A metadata log batch over a bound of the reader; the file is read no further.
    MetadataLogLimit {
        path: &'a str,
        at: u64,
        reason: &'a str,
    },
    /// Two metadata logs hold different records at one offset.
    MetadataLogDivergent {
        offset: i64,
        kept: &'a str,
        dropped: &'a str,
    },
    /// A block delivered on the wire (a `NONE` response) that no ProducerIdsRecord of the
    /// metadata log commits, though the log covers its time.
    PidBlockNotCommitted {
        /// The response.
        frame: u64,
        broker_id: i32,
        broker_epoch: i64,
        start: i64,
        len: i32,
        /// The log's records: offsets and batch times covered.
        log_first_offset: i64,
        log_last_offset: i64,
    },
    /// A block the metadata log commits whose delivery the capture should hold (it was
    /// committed inside the capture's time, to a broker whose requests the capture holds)
    /// but does not.
    PidBlockNotDelivered {
        offset: i64,
        /// The record batch's max timestamp, unix milliseconds.
        time_ms: i64,
        broker_id: i32,
        broker_epoch: i64,
        /// The block's first id, when the record before it was read.
        start: Option<i64>,
        next_producer_id: i64,
        /// The broker's last request before the commit that got no block: its frame and
        /// how it ended (`unanswered`, `response_unknown`, or the error's name).
        request: Option<(u64, &'a str)>,
    },
    /// A block delivered on the wire that the log commits with other values: to another
    /// broker or broker epoch, or only after it was delivered.
    PidBlockMismatch {
        /// The response.
        frame: u64,
        start: i64,
        len: i32,
        broker_id: i32,
        broker_epoch: i64,
        offset: i64,
        log_broker_id: i32,
        log_broker_epoch: i64,
        /// How long after the response the record's batch was appended, beyond the
        /// clock skew allowed, when it was.
        committed_late_ms: Option<i64>,
    },
    /// A ProducerIdsRecord whose next producer id is not above the one before it: ids
    /// committed twice.
    PidCommittedOverlap {
        offset: i64,
        broker_id: i32,
        /// Its block: `start..next_producer_id`.
        start: i64,
        next_producer_id: i64,
        previous_offset: i64,
        previous_next_producer_id: i64,
    },
    /// A ProducerIdsRecord whose block starts past the highest id committed before it:
    /// the ids between have no record in the logs read (records missing, or ids
    /// skipped).
    PidCommittedGap {
        offset: i64,
        broker_id: i32,
        next_producer_id: i64,
        previous_offset: i64,
        previous_next_producer_id: i64,
        /// Kafka's block size.
        usual_len: i64,
        /// The ids no record commits.
        missing_start: i64,
        missing_end: i64,
    },
}

/// The kinds of a message not read, counted and listed per API.
pub const UNDECODED_KINDS: [Kind; 3] = [
    Kind::KafkaMessageTruncated,
    Kind::KafkaDecodeError,
    Kind::KafkaUnsupportedVersion,
];

/// Fetch's API key: its requests are read only for who fetches the quorum's log.
const FETCH_API_KEY: i16 = 1;

impl Observation<'_> {
    /// How serious this one is: its kind's severity, except that a message of an API
    /// that carries no producer-id information (an inter-broker Fetch response cut by a
    /// restarting broker's RST, a Fetch request not read) is only info: it is listed,
    /// and never grades the verdict.
    pub fn severity(&self) -> Severity {
        match self {
            Self::KafkaFrameIncomplete {
                api: Some(_),
                carries_producer_ids: false,
                ..
            } => Severity::Info,
            // a Fetch is read only for who follows the quorum: no producer id rides on it
            Self::KafkaDecodeError(u)
            | Self::KafkaMessageTruncated(u)
            | Self::KafkaUnsupportedVersion(u)
                if u.api.code == FETCH_API_KEY =>
            {
                Severity::Info
            }
            _ => self.kind().severity(),
        }
    }

    // Inlined where an observation is raised, the kind of the variant built there is a
    // constant when it is counted.
    #[inline]
    pub fn kind(&self) -> Kind {
        match self {
            Self::CaptureTruncated { .. } => Kind::CaptureTruncated,
            Self::CaptureCorrupt { .. } => Kind::CaptureCorrupt,
            Self::PacketTruncated { .. } => Kind::PacketTruncated,
            Self::UnsupportedLinkType { .. } => Kind::UnsupportedLinkType,
            Self::PacketMalformed { .. } => Kind::PacketMalformed,
            Self::MidstreamStart { .. } => Kind::MidstreamStart,
            Self::TcpGap { .. } => Kind::TcpGap,
            Self::TcpOverlapConflict { .. } => Kind::TcpOverlapConflict,
            Self::TcpRstOutOfWindow { .. } => Kind::TcpRstOutOfWindow,
            Self::KafkaFrameTooLarge { .. } => Kind::KafkaFrameTooLarge,
            Self::KafkaResync { .. } => Kind::KafkaResync,
            Self::KafkaFramingLost(_) => Kind::KafkaFramingLost,
            Self::KafkaFrameIncomplete { .. } => Kind::KafkaFrameIncomplete,
            Self::KafkaDecodeError(_) => Kind::KafkaDecodeError,
            Self::KafkaMessageTruncated(_) => Kind::KafkaMessageTruncated,
            Self::KafkaUnsupportedVersion(_) => Kind::KafkaUnsupportedVersion,
            Self::DuplicateCorrelationId { .. } => Kind::DuplicateCorrelationId,
            Self::PendingLimit { .. } => Kind::PendingLimit,
            Self::DiagnosticsLimited { .. } => Kind::DiagnosticsLimited,
            Self::ConnectionLimit { .. } => Kind::ConnectionLimit,
            Self::MemoryLimit { .. } => Kind::MemoryLimit,
            Self::NotKafka { .. } => Kind::NotKafka,
            Self::TlsEncrypted { .. } => Kind::TlsEncrypted,
            Self::IpFragmentsDropped(_) => Kind::IpFragmentsDropped,
            Self::CaptureFilesOverlap { .. } => Kind::CaptureFilesOverlap,
            Self::DuplicateWindowFull { .. } => Kind::DuplicateWindowFull,
            Self::OneSidedConnection { .. } => Kind::OneSidedConnection,
            Self::PidBlockOverlap(_) => Kind::PidBlockOverlap,
            Self::PidBlockRegression { .. } => Kind::PidBlockRegression,
            Self::PidBlockGap { .. } => Kind::PidBlockGap,
            Self::PidBlockIrregular(_) => Kind::PidBlockIrregular,
            Self::PidErrorStreak { .. } => Kind::PidErrorStreak,
            Self::PidRetry { .. } => Kind::PidRetry,
            Self::PidBrokerEpochChange { .. } => Kind::PidBrokerEpochChange,
            Self::PidSlowResponse { .. } => Kind::PidSlowResponse,
            Self::PidDuplicateGrant { .. } => Kind::PidDuplicateGrant,
            Self::PidOutsideBlocks { .. } => Kind::PidOutsideBlocks,
            Self::PidStaleController { .. } => Kind::PidStaleController,
            Self::MetadataLogTruncated { .. } => Kind::MetadataLogTruncated,
            Self::MetadataLogCorrupt { .. } => Kind::MetadataLogCorrupt,
            Self::MetadataLogLimit { .. } => Kind::MetadataLogLimit,
            Self::MetadataLogDivergent { .. } => Kind::MetadataLogDivergent,
            Self::PidBlockNotCommitted { .. } => Kind::PidBlockNotCommitted,
            Self::PidBlockNotDelivered { .. } => Kind::PidBlockNotDelivered,
            Self::PidBlockMismatch { .. } => Kind::PidBlockMismatch,
            Self::PidCommittedOverlap { .. } => Kind::PidCommittedOverlap,
            Self::PidCommittedGap { .. } => Kind::PidCommittedGap,
        }
    }

    /// What the sentence states, as named fields of the report, in a fixed order: each
    /// named as the field it comes from, unless said otherwise.
    #[expect(
        clippy::too_many_lines,
        reason = "an arm per kind, until each kind's facts sit beside its fields (issue 41)"
    )]
    pub fn facts(&self) -> Facts {
        match self {
            Self::CaptureTruncated {
                path,
                record_offset,
                packets,
                cut: _,
            } => facts![path, record_offset, packets],
            Self::CaptureCorrupt {
                path,
                record_offset,
                damage: _,
            } => facts![path, record_offset],
            Self::PacketTruncated { bytes_missing } => facts![bytes_missing],
            Self::UnsupportedLinkType {
                link_type,
                link_type_number,
            } => facts![link_type, link_type_number],
            Self::PacketMalformed { fragments, reason } => facts![fragments?, reason],
            Self::MidstreamStart { from, to, .. } => facts![from, to],
            Self::TcpGap { bytes, from, to } => facts![bytes, from, to],
            Self::TcpOverlapConflict {
                offset,
                bytes,
                from,
            } => facts![offset, bytes, from],
            Self::TcpRstOutOfWindow { from, seq } => facts![from, seq],
            Self::KafkaFrameTooLarge { side, size, limit } => facts![side, size, limit],
            Self::KafkaResync {
                side,
                skipped_bytes,
            } => facts![side, skipped_bytes],
            Self::KafkaFramingLost(lost) => lost.facts(),
            Self::KafkaFrameIncomplete {
                side,
                bytes,
                api,
                correlation_id,
                ..
            } => {
                let api_key = api.map(|api| api.code);
                facts![side, bytes, api_key?, correlation_id?]
            }
            Self::KafkaDecodeError(u)
            | Self::KafkaMessageTruncated(u)
            | Self::KafkaUnsupportedVersion(u) => facts![
                "api_key" => u.api,
                "message" => u.side.message(),
                "correlation_id" => u.correlation_id,
                "problem" => u.problem,
            ],
            Self::DuplicateCorrelationId {
                correlation_id,
                api_key,
                earlier_api_key,
                earlier_frame,
            } => facts![correlation_id, api_key, earlier_api_key, earlier_frame],
            Self::PendingLimit { max_pending } => facts![max_pending],
            Self::DiagnosticsLimited {
                kind,
                count,
                listed,
            } => facts![kind, count, listed],
            Self::ConnectionLimit {
                max_connections, ..
            } => facts![max_connections],
            Self::MemoryLimit { given_up, .. } => vec![given_up.fact()],
            Self::NotKafka {
                reason,
                server_port,
                ..
            } => facts![reason, server_port],
            Self::TlsEncrypted {
                client,
                server,
                seen,
                server_name,
                ..
            } => facts!["port" => server.port(), client, server, seen, server_name?],
            Self::IpFragmentsDropped(dropped) => dropped.facts(),
            Self::CaptureFilesOverlap { path, other_path } => facts![path, other_path],
            Self::DuplicateWindowFull { remembered } => facts![remembered],
            Self::OneSidedConnection {
                client,
                server,
                requests_waiting,
            } => facts![client, server, requests_waiting],
            Self::PidBlockOverlap(overlap) => overlap.facts(),
            Self::PidBlockRegression {
                frame,
                start,
                other_end,
                other_broker_id,
                other_frame,
                ..
            } => facts![frame, start, other_end, other_broker_id, other_frame],
            Self::PidBlockGap {
                frame,
                ids_start,
                ids_end,
                other_broker_id,
                other_frame,
                answers_not_read,
                ..
            } => {
                let answers_not_read = Some(answers_not_read).filter(|n| **n > 0);
                facts![
                    frame,
                    ids_start,
                    ids_end,
                    "count" => ids_end - ids_start + 1,
                    other_broker_id,
                    other_frame,
                    answers_not_read?,
                ]
            }
            Self::PidBlockIrregular(irregular) => irregular.facts(),
            Self::PidErrorStreak {
                error,
                count,
                first_frame,
                last_frame,
                connections,
                ..
            } => facts![
                "frame" => last_frame,
                error,
                count,
                first_frame,
                last_frame,
                connections,
            ],
            Self::PidRetry {
                frame,
                earlier_frame,
                after,
                ..
            } => {
                let error = match after {
                    RetryAfter::Error(error) => Some(error),
                    _ => None,
                };
                facts![frame, earlier_frame, error?]
            }
            Self::PidBrokerEpochChange {
                frame,
                old_epoch,
                new_epoch,
                earlier_frame,
                ..
            } => facts![frame, old_epoch, new_epoch, earlier_frame],
            Self::PidSlowResponse {
                frame,
                correlation_id,
                latency_ns,
                threshold_us,
            } => facts![
                frame,
                correlation_id,
                "latency_us" => *latency_ns as f64 / 1000.0,
                threshold_us,
            ],
            Self::PidDuplicateGrant {
                frame,
                producer_id,
                producer_epoch,
                client,
                transactional_id,
                other_frame,
                other_client,
                other_transactional_id,
            } => facts![
                frame,
                producer_id,
                producer_epoch,
                client,
                other_frame,
                other_client,
                transactional_id?,
                other_transactional_id?,
            ],
            Self::PidOutsideBlocks {
                frame,
                producer_id,
                placement,
                blocks,
                last_start,
                last_end,
                block,
                ..
            } => {
                let mut facts = facts![frame, producer_id, placement, blocks, last_start, last_end];
                if let Some((block_start, block_end, block_broker_id)) = block {
                    facts.extend(facts![block_start, block_end, block_broker_id]);
                }
                facts
            }
            Self::PidStaleController {
                frame,
                controller,
                controller_id,
                controller_led_epoch,
                leader_seen,
                leader_seen_epoch,
                leader_seen_frame,
                start,
                len,
            } => facts![
                frame,
                controller,
                controller_id,
                controller_led_epoch?,
                leader_seen,
                leader_seen_epoch,
                leader_seen_frame,
                start,
                len,
            ],
            Self::MetadataLogTruncated {
                path,
                at,
                needed,
                len,
            } => facts![path, at, needed, len],
            Self::MetadataLogCorrupt { path, at, reason }
            | Self::MetadataLogLimit { path, at, reason } => facts![path, at, reason],
            Self::MetadataLogDivergent {
                offset,
                kept,
                dropped,
            } => facts![offset, kept, dropped],
            Self::PidBlockNotCommitted {
                frame,
                broker_id,
                broker_epoch,
                start,
                len,
                log_first_offset,
                log_last_offset,
            } => facts![
                frame,
                broker_id,
                broker_epoch,
                start,
                len,
                log_first_offset,
                log_last_offset,
            ],
            Self::PidBlockNotDelivered {
                offset,
                time_ms,
                broker_id,
                broker_epoch,
                start,
                next_producer_id,
                request,
            } => {
                let request_frame = request.map(|(frame, _)| frame);
                let request_status = request.map(|(_, status)| status);
                facts![
                    offset,
                    time_ms,
                    broker_id,
                    broker_epoch,
                    start?,
                    next_producer_id,
                    request_frame?,
                    request_status?,
                ]
            }
            Self::PidBlockMismatch {
                frame,
                start,
                len,
                broker_id,
                broker_epoch,
                offset,
                log_broker_id,
                log_broker_epoch,
                committed_late_ms,
            } => facts![
                frame,
                start,
                len,
                broker_id,
                broker_epoch,
                offset,
                log_broker_id,
                log_broker_epoch,
                committed_late_ms?,
            ],
            Self::PidCommittedOverlap {
                offset,
                broker_id,
                start,
                next_producer_id,
                previous_offset,
                previous_next_producer_id,
            } => facts![
                offset,
                broker_id,
                start,
                next_producer_id,
                previous_offset,
                previous_next_producer_id,
            ],
            Self::PidCommittedGap {
                offset,
                broker_id,
                next_producer_id,
                previous_offset,
                previous_next_producer_id,
                usual_len,
                missing_start,
                missing_end,
            } => facts![
                offset,
                broker_id,
                next_producer_id,
                previous_offset,
                previous_next_producer_id,
                usual_len,
                missing_start,
                missing_end,
            ],
        }
    }
}

impl fmt::Display for Observation<'_> {
    #[expect(
        clippy::too_many_lines,
        reason = "an arm per kind, until each kind's sentence sits beside its fields (issue 41)"
    )]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CaptureTruncated {
                path,
                record_offset,
                packets,
                cut,
            } => match cut {
                Cut::InsideRecord => write!(
                    f,
                    "{path} ends inside a record that starts at byte {record_offset}; the {packets} packets before it were read"
                ),
                Cut::Stream { error } => write!(
                    f,
                    "{path} is cut short: {error}; the {packets} packets before the cut were read"
                ),
            },
            Self::CaptureCorrupt {
                path,
                record_offset: offset,
                damage,
            } => match damage {
                Damage::RecordTooLarge { limit_mib } => write!(
                    f,
                    "{path}: the record at byte {offset} is larger than {limit_mib} MiB; reading stopped there"
                ),
                Damage::Unreadable { why, packets } => write!(
                    f,
                    "{path} is corrupt at byte {offset} ({why}); the {packets} packets before it were read"
                ),
                Damage::ReadFailed { error, packets } => write!(
                    f,
                    "{path}: reading failed after {packets} packets ({error}); what came before is reported"
                ),
                Damage::OverSnaplen {
                    len,
                    snaplen,
                    max_len,
                } => write!(
                    f,
                    "{path}: the record at byte {offset} holds {len} bytes, more than the capture's snaplen of {snaplen} and the {max_len} any packet may have; it was skipped"
                ),
                Damage::TooManyInterfaces { max } => write!(
                    f,
                    "{path}: the section at byte {offset} describes more than {max} interfaces; the rest are not kept, and their packets are skipped"
                ),
                Damage::UnknownInterface {
                    interface,
                    described,
                } => write!(
                    f,
                    "{path}: packet block at byte {offset} names interface {interface} but only {described} are described; the packet was skipped"
                ),
            },
            Self::PacketTruncated { bytes_missing } => write!(
                f,
                "packet was captured {bytes_missing} bytes short of its length on the wire (snaplen); those stream bytes are missing"
            ),
            Self::UnsupportedLinkType { link_type, .. } => write!(
                f,
                "link type {link_type} is not supported; its packets are skipped"
            ),
            Self::PacketMalformed {
                fragments: Some(fragments),
                reason,
            } => write!(
                f,
                "the IP datagram reassembled from {fragments} fragments could not be decoded: {reason}"
            ),
            Self::PacketMalformed {
                fragments: None,
                reason,
            } => write!(f, "packet could not be decoded: {reason}"),
            Self::MidstreamStart {
                connection,
                from,
                to,
            } => write!(
                f,
                "connection {connection} ({from} - {to}) was already open when the capture started; its streams are read from the first captured byte"
            ),
            Self::TcpGap { bytes, from, to } => write!(
                f,
                "{bytes} bytes from {from} to {to} are missing from the capture"
            ),
            Self::TcpOverlapConflict {
                offset,
                bytes,
                from,
            } => write!(
                f,
                "a retransmission from {from} differs from the first copy within the {bytes} bytes at stream offset {offset}; the first copy was kept"
            ),
            Self::TcpRstOutOfWindow { from, seq } => write!(
                f,
                "an RST from {from} with sequence number {seq} lies outside the receive window; the connection goes on (RFC 5961)"
            ),
            Self::KafkaFrameTooLarge { side, size, limit } => write!(
                f,
                "a Kafka size prefix from the {} says {size} bytes, above the {limit} byte limit; looking for the next frame",
                side.name()
            ),
            Self::KafkaResync {
                side,
                skipped_bytes,
            } => write!(
                f,
                "Kafka framing of the {}'s stream was found after passing over {skipped_bytes} bytes",
                side.name()
            ),
            Self::KafkaFramingLost(lost) => lost.fmt(f),
            Self::KafkaFrameIncomplete {
                side, bytes, api, ..
            } => write!(
                f,
                "the {}'s stream ended inside a Kafka {}{} after {bytes} of its bytes; the message is not reported",
                side.name(),
                api.map_or(String::new(), |api| format!("{} ", api.name)),
                side.message()
            ),
            Self::KafkaDecodeError(u)
            | Self::KafkaMessageTruncated(u)
            | Self::KafkaUnsupportedVersion(u) => write!(
                f,
                "{} {} with correlation id {}: {}",
                u.api.name,
                u.side.message(),
                u.correlation_id,
                u.problem
            ),
            Self::DuplicateCorrelationId {
                correlation_id,
                api_key,
                earlier_api_key,
                ..
            } => write!(
                f,
                "{} request reuses correlation id {correlation_id} while an earlier {} request with that id is still waiting; the earlier one is reported as response_unknown (which of the two a later answer is for cannot be told)",
                api_key.name, earlier_api_key.name
            ),
            Self::PendingLimit { max_pending } => write!(
                f,
                "more than {max_pending} requests are waiting for a response on this connection; the oldest are given up (AllocateProducerIds ones are reported as response_unknown)"
            ),
            Self::DiagnosticsLimited {
                kind,
                count,
                listed,
            } if UNDECODED_KINDS.contains(kind) => write!(
                f,
                "{count} {} diagnostics were found; only {listed} are listed, the first {} of each API",
                kind.as_str(),
                super::MAX_LISTED_PER_KIND
            ),
            Self::DiagnosticsLimited {
                kind,
                count,
                listed,
            } => write!(
                f,
                "{count} {} diagnostics were found; only the first {listed} are listed",
                kind.as_str()
            ),
            Self::ConnectionLimit {
                open,
                max_connections,
                first,
            } => write!(
                f,
                "more than {open} connections at once (--max-connections {max_connections}, or as many as the table's share of --max-memory holds): the least recently active are no longer followed (connection {first} first)"
            ),
            Self::MemoryLimit {
                connection,
                given_up,
            } => given_up.write(*connection, f),
            Self::NotKafka {
                initiator,
                responder,
                explanation,
                port_would_help_if,
                server_port,
                ..
            } => {
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
            Self::TlsEncrypted {
                client,
                server,
                seen_described,
                server_name,
                ..
            } => {
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
            Self::IpFragmentsDropped(dropped) => dropped.fmt(f),
            Self::CaptureFilesOverlap { path, other_path } => write!(
                f,
                "{path} and {other_path} overlap in time: their packets were merged by timestamp, as mergecap merges them"
            ),
            Self::DuplicateWindowFull { remembered } => write!(
                f,
                "more than {remembered} packets fall within the clock skew allowed: copies of one packet in two files are recognised only among the last {remembered}; others are read as retransmissions, their bytes still read once"
            ),
            Self::OneSidedConnection {
                client,
                server,
                requests_waiting,
            } => write!(
                f,
                "only the client's direction of connection {client} <-> {server} was captured (not one packet from the server, not even an ACK): its {requests_waiting} waiting request(s) may have been answered"
            ),
            Self::PidBlockOverlap(overlap) => overlap.fmt(f),
            Self::PidBlockRegression {
                frame,
                broker_id,
                start,
                other_end,
                other_broker_id,
                other_frame,
            } if start == other_end => write!(
                f,
                "the block starting at {start} for broker {broker_id} (frame {frame}) starts at the last id of an earlier block for broker {other_broker_id} (frame {other_frame})"
            ),
            Self::PidBlockRegression {
                frame,
                broker_id,
                start,
                other_end,
                other_broker_id,
                other_frame,
            } => write!(
                f,
                "the block starting at {start} for broker {broker_id} (frame {frame}) starts below the end {other_end} of an earlier block for broker {other_broker_id} (frame {other_frame})"
            ),
            Self::PidBlockGap {
                frame,
                broker_id,
                ids_start,
                ids_end,
                other_broker_id,
                other_frame,
                answers_not_read,
            } => write!(
                f,
                "{} skipped between the block for broker {other_broker_id} (frame {other_frame}) and the next, for broker {broker_id} (frame {frame}){}",
                match ids_end - ids_start + 1 {
                    1 => format!("id {ids_start} was"),
                    n => format!("{n} ids ({ids_start}..={ids_end}) were"),
                },
                match answers_not_read {
                    0 => String::new(),
                    1 => ", unless the one answer not read whole (lost, given up at a limit, or cut) granted them".to_owned(),
                    n => format!(", unless one of the {n} answers not read whole (lost, given up at a limit, or cut) granted them"),
                },
            ),
            Self::PidBlockIrregular(irregular) => irregular.fmt(f),
            Self::PidErrorStreak {
                broker_id,
                error,
                count,
                first_frame,
                last_frame,
                connections,
            } => write!(
                f,
                "broker {broker_id} got {count} {error} responses in a row (frames {first_frame} to {last_frame}, over {connections} connection{})",
                if *connections == 1 { "" } else { "s" }
            ),
            Self::PidRetry {
                frame,
                broker_id,
                earlier_frame,
                after,
            } => {
                write!(f, "broker {broker_id} asked again (frame {frame}) after ")?;
                match after {
                    RetryAfter::Error(error) => write!(f, "a {error} response")?,
                    RetryAfter::NoResponse => f.write_str("no response")?,
                }
                write!(f, " to its request in frame {earlier_frame}")
            }
            Self::PidBrokerEpochChange {
                frame,
                broker_id,
                old_epoch,
                new_epoch,
                ..
            } => write!(
                f,
                "broker {broker_id} changed its epoch from {old_epoch} to {new_epoch} (frame {frame})"
            ),
            Self::PidSlowResponse {
                correlation_id,
                latency_ns,
                threshold_us,
                ..
            } => write!(
                f,
                "the response to correlation id {correlation_id} took {:.1} ms, above the {:.1} ms threshold",
                *latency_ns as f64 / 1_000_000.0,
                threshold_us / 1000.0
            ),
            Self::PidDuplicateGrant {
                frame,
                producer_id,
                producer_epoch,
                client,
                transactional_id,
                other_frame,
                other_client,
                other_transactional_id,
            } => {
                let who = |client: &SocketAddr, id: &Option<&str>| match id {
                    Some(id) => format!("{client} (transactional id {id:?})"),
                    None => client.to_string(),
                };
                write!(
                    f,
                    "producer id {producer_id} epoch {producer_epoch} was granted to {} (frame {frame}) after {} got it (frame {other_frame}): two producers hold the same id and epoch",
                    who(client, transactional_id),
                    who(other_client, other_transactional_id)
                )
            }
            Self::PidOutsideBlocks {
                frame,
                broker_id,
                producer_id,
                reason,
                ..
            } => write!(
                f,
                "broker {broker_id} granted producer id {producer_id} (frame {frame}) {reason}"
            ),
            Self::PidStaleController {
                frame,
                controller,
                controller_id,
                controller_led_epoch,
                leader_seen,
                leader_seen_epoch,
                leader_seen_frame,
                start,
                len,
            } => {
                let led = match controller_led_epoch {
                    Some(epoch) => format!("the last epoch it was seen leading is {epoch}"),
                    None => "it was not seen leading".to_owned(),
                };
                write!(
                    f,
                    "controller {controller_id} ({controller}) granted {len} producer ids from {start} (frame {frame}) after controller {leader_seen} was seen leading epoch {leader_seen_epoch} (frame {leader_seen_frame}); {led}: a stale controller handed out a block"
                )
            }
            Self::MetadataLogTruncated {
                path,
                at,
                needed,
                len,
            } => write!(
                f,
                "{path}: the metadata log ends inside a record batch at byte {at} ({len} of its {needed} bytes are there); the batches before it were read"
            ),
            Self::MetadataLogCorrupt { path, at, reason } => write!(
                f,
                "{path}: the record batch at byte {at} is corrupt ({reason}); the file is read no further"
            ),
            Self::MetadataLogLimit { path, at, reason } => write!(
                f,
                "{path}: the record batch at byte {at} is over a limit ({reason}); the file is read no further"
            ),
            Self::MetadataLogDivergent {
                offset,
                kept,
                dropped,
            } => write!(
                f,
                "the metadata logs hold different records at offset {offset}: {kept} is kept (the higher leader epoch), {dropped} is not"
            ),
            Self::PidBlockNotCommitted {
                frame,
                broker_id,
                broker_epoch,
                start,
                len,
                log_first_offset,
                log_last_offset,
            } => write!(
                f,
                "broker {broker_id} (epoch {broker_epoch}) was delivered {len} producer ids from {start} (frame {frame}), but no ProducerIdsRecord of the metadata log (offsets {log_first_offset} to {log_last_offset}, which cover that time) commits them: a controller answered from state it had not committed"
            ),
            Self::PidBlockNotDelivered {
                offset,
                time_ms,
                broker_id,
                broker_epoch,
                start,
                next_producer_id,
                request,
            } => {
                let ids = match start {
                    Some(start) => format!("producer ids {start} to {}", next_producer_id.saturating_sub(1)),
                    None => format!("producer ids up to {}", next_producer_id.saturating_sub(1)),
                };
                let asked = match request {
                    Some((frame, status)) => {
                        format!("the broker's last request before it (frame {frame}) ended {status}")
                    }
                    None => "no request for it is in the capture".to_owned(),
                };
                write!(
                    f,
                    "the metadata log commits {ids} to broker {broker_id} (epoch {broker_epoch}) at offset {offset} (unix ms {time_ms}), but no response in the capture delivers them; {asked}"
                )
            }
            Self::PidBlockMismatch {
                frame,
                start,
                len,
                broker_id,
                broker_epoch,
                offset,
                log_broker_id,
                log_broker_epoch,
                committed_late_ms,
            } => {
                write!(
                    f,
                    "{len} producer ids from {start} were delivered to broker {broker_id} (epoch {broker_epoch}) at frame {frame}, but the record at offset {offset} commits them"
                )?;
                if (broker_id, broker_epoch) != (log_broker_id, log_broker_epoch) {
                    write!(f, " to broker {log_broker_id} (epoch {log_broker_epoch})")?;
                }
                if let Some(late) = committed_late_ms {
                    write!(f, " {late} ms after they were delivered (beyond the clock skew allowed)")?;
                }
                Ok(())
            }
            Self::PidCommittedOverlap {
                offset,
                broker_id,
                start,
                next_producer_id,
                previous_offset,
                previous_next_producer_id,
            } => write!(
                f,
                "the ProducerIdsRecord at offset {offset} commits producer ids {start}..={} to broker {broker_id}, below the {previous_next_producer_id} the record at offset {previous_offset} reached: ids committed twice",
                next_producer_id.saturating_sub(1)
            ),
            Self::PidCommittedGap {
                offset,
                broker_id,
                next_producer_id,
                previous_offset,
                previous_next_producer_id,
                usual_len,
                missing_start,
                missing_end,
            } => write!(
                f,
                "no ProducerIdsRecord of the logs read commits producer ids {missing_start}..={missing_end}: the record at offset {offset} (broker {broker_id}) moves the next producer id from {previous_next_producer_id} (offset {previous_offset}) to {next_producer_id}, not by Kafka's block of {usual_len} (records missing from the logs read, or ids skipped)"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
