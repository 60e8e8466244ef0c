//! Every kind of diagnostic, declared once: its contract name, severity, meaning and the
//! facts it may carry. [`Kind`], its names, `--list-kinds`, the report schema's enum and
//! facts, and `docs/report-format.md`'s two tables of kinds all come from this table (a
//! test fails when the document is out of step: `PIDSHARK_BLESS=1 cargo test` rewrites
//! its tables).
//!
//! To add a kind: a row here, a variant of [`super::Observation`] that the compiler then
//! asks a sentence and facts of, and a sample in `observation/tests.rs`.

use super::facts::FactType::{self, Boolean, Integer, Number, Text, Texts};
use super::Severity::{self, Error, Info, Warning};

/// Declares [`Kind`] from rows of `Variant "name" Severity { meaning, facts, facts_doc }`.
/// `meaning` and `facts_doc` are Markdown, as the document shows them; `facts_doc` is
/// absent for the producer-id findings, whose facts the document gives with the findings.
macro_rules! kinds {
    ($(
        $variant:ident $name:literal $severity:ident {
            meaning: $meaning:literal,
            facts: [$($fact:literal: $fact_type:ident),* $(,)?],
            $(facts_doc: $facts_doc:literal,)?
        }
    )*) => {
        /// Kinds of diagnostic, with the contract's names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind {
            $(#[doc = $meaning] $variant,)*
        }

        impl Kind {
            /// Every kind, in the report's order, for listing and for parsing names.
            pub const ALL: [Self; [$($name),*].len()] = [$(Self::$variant),*];

            /// The contract's name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            pub fn severity(self) -> Severity {
                match self {
                    $(Self::$variant => $severity,)*
                }
            }

            /// What the kind means, in Markdown.
            pub fn meaning_markdown(self) -> &'static str {
                match self {
                    $(Self::$variant => $meaning,)*
                }
            }

            /// The facts a diagnostic of this kind may carry, by name and JSON type
            /// (besides `frame`, which every finding of the producer-id analysis has).
            pub fn declared_facts(self) -> &'static [(&'static str, FactType)] {
                match self {
                    $(Self::$variant => &[$(($fact, $fact_type)),*],)*
                }
            }

            /// Its facts as the document describes them, in Markdown; `None` for the
            /// findings, described with `producer_id_blocks.findings[]`.
            pub fn facts_markdown(self) -> Option<&'static str> {
                match self {
                    $(Self::$variant => kinds!(@maybe $($facts_doc)?),)*
                }
            }
        }
    };
    (@maybe) => { None };
    (@maybe $doc:literal) => { Some($doc) };
}

kinds! {
    CaptureTruncated "capture_truncated" Warning {
        meaning: "the file ends inside a record or block, or a gzip-compressed file ends \
            inside its compressed stream; everything before is reported",
        facts: ["packets": Integer, "path": Text, "record_offset": Integer],
        facts_doc: "`path`, `record_offset` (where the cut record starts, in the \
            decompressed bytes of a gzip file), `packets` (read before it)",
    }
    CaptureCorrupt "capture_corrupt" Error {
        meaning: "bytes that cannot be a record or block (or gzip data that does not \
            inflate, fails its checksum or expands too far); reading stops or skips \
            the record",
        facts: ["path": Text, "record_offset": Integer],
        facts_doc: "`path`, `record_offset`",
    }
    PacketTruncated "packet_truncated" Warning {
        meaning: "a packet was captured shorter than it was on the wire (snaplen): stream \
            bytes are missing",
        facts: ["bytes_missing": Integer],
        facts_doc: "`bytes_missing`",
    }
    UnsupportedLinkType "unsupported_link_type" Info {
        meaning: "a link-layer type pidshark does not decode; reported once per type",
        facts: ["link_type": Text, "link_type_number": Integer],
        facts_doc: "`link_type` (its name), `link_type_number`",
    }
    PacketMalformed "packet_malformed" Warning {
        meaning: "a packet whose link, IP or TCP header cannot be read",
        facts: ["fragments": Integer, "reason": Text],
        facts_doc: "`reason`; `fragments` for a datagram reassembled from fragments",
    }
    MidstreamStart "midstream_start" Info {
        meaning: "a connection whose handshake is not in the capture; it is read from its \
            first segment",
        facts: ["from": Text, "to": Text],
        facts_doc: "`from`, `to`",
    }
    TcpGap "tcp_gap" Warning {
        meaning: "bytes of a stream are missing from the capture",
        facts: ["bytes": Integer, "from": Text, "to": Text],
        facts_doc: "`bytes`, `from`, `to`",
    }
    TcpOverlapConflict "tcp_overlap_conflict" Warning {
        meaning: "a retransmission carried other bytes than the first copy of the same \
            sequence numbers; the first copy is kept",
        facts: ["bytes": Integer, "from": Text, "offset": Integer],
        facts_doc: "`offset` (in the stream), `bytes`, `from`",
    }
    TcpOverlapUnread "tcp_overlap_unread" Warning {
        meaning: "a retransmission over bytes remembered by their place in the capture \
            file, which could not be read there again (the file was cut short or changed \
            while being read): those bytes were not compared; the first copy is kept",
        facts: ["bytes": Integer, "from": Text, "offset": Integer],
        facts_doc: "`offset` (in the stream), `bytes`, `from`",
    }
    TcpRstOutOfWindow "tcp_rst_out_of_window" Warning {
        meaning: "an RST whose sequence number lies outside its receiver's window (RFC \
            5961): not taken as the connection's end, which goes on",
        facts: ["from": Text, "seq": Integer],
        facts_doc: "`from`, `seq`",
    }
    KafkaFrameTooLarge "kafka_frame_too_large" Warning {
        meaning: "a Kafka size prefix above `--max-frame` (100 MiB)",
        facts: ["limit": Integer, "side": Text, "size": Integer],
        facts_doc: "`side` (`client` or `server`), `size`, `limit`",
    }
    KafkaResync "kafka_resync" Warning {
        meaning: "Kafka framing was found again after bytes were passed over; says how \
            many",
        facts: ["side": Text, "skipped_bytes": Integer],
        facts_doc: "`side`, `skipped_bytes`",
    }
    KafkaFramingLost "kafka_framing_lost" Warning {
        meaning: "Kafka framing was lost (a size prefix that cannot be Kafka, or a gap \
            inside a frame being decoded); a search for the next frame follows",
        facts: ["gap_bytes": Integer, "inside_head": Boolean, "side": Text, "size": Integer],
        facts_doc: "`side` with `size` (a size prefix too small), or with `gap_bytes` and \
            `inside_head` (a boolean: whether the gap is inside a message's head)",
    }
    KafkaFrameIncomplete "kafka_frame_incomplete" Warning {
        meaning: "a Kafka frame was still incomplete when its stream ended; `info` when \
            its API is known and carries no producer ids (not AllocateProducerIds, \
            InitProducerId or EndTxn): listed, never grading",
        facts: ["api_key": Integer, "bytes": Integer, "correlation_id": Integer, "side": Text],
        facts_doc: "`side`, `bytes` (read of the unfinished message), `api_key` (its API, \
            when its head was read: a response's is the request's it answers, \
            absent when that request was not captured), `correlation_id` (when \
            its head was read)",
    }
    KafkaDecodeError "kafka_decode_error" Error {
        meaning: "a message pidshark decodes (AllocateProducerIds, InitProducerId, EndTxn, \
            or a cluster message: BrokerRegistration, BrokerHeartbeat, Metadata, \
            DescribeCluster, Vote, BeginQuorumEpoch, EndQuorumEpoch) that does not \
            decode; its `decode_error` says where",
        facts: ["api_key": Integer, "correlation_id": Integer, "message": Text, "problem": Text],
        facts_doc: "`api_key` (the request's, or for a response the request's it answers; \
            -1 for a response to a request not captured), `message` (`request` or \
            `response`), `correlation_id`, `problem`",
    }
    KafkaMessageTruncated "kafka_message_truncated" Warning {
        meaning: "a message pidshark decodes (as `kafka_decode_error`) not all of whose \
            bytes are in the capture (snaplen, a lost segment); its fields up to \
            the missing bytes are reported, the others are absent, and it has \
            `bytes_not_captured`",
        facts: ["api_key": Integer, "correlation_id": Integer, "message": Text, "problem": Text],
        facts_doc: "`api_key`, `message`, `correlation_id`, `problem`",
    }
    KafkaUnsupportedVersion "kafka_unsupported_version" Warning {
        meaning: "a version of a message pidshark decodes that it does not decode past \
            the header",
        facts: ["api_key": Integer, "correlation_id": Integer, "message": Text, "problem": Text],
        facts_doc: "`api_key`, `message`, `correlation_id`, `problem`",
    }
    DuplicateCorrelationId "duplicate_correlation_id" Warning {
        meaning: "a request reuses a correlation id still waiting for its response",
        facts: [
            "api_key": Integer,
            "correlation_id": Integer,
            "earlier_api_key": Integer,
            "earlier_frame": Integer,
        ],
        facts_doc: "`correlation_id`, `api_key`, `earlier_api_key`, `earlier_frame`",
    }
    PendingLimit "pending_limit" Warning {
        meaning: "more requests waiting for a response on one connection than \
            `--max-pending`; the oldest were given up (AllocateProducerIds ones \
            reported `response_unknown`: their answers may still come)",
        facts: ["max_pending": Integer],
        facts_doc: "`max_pending`",
    }
    DiagnosticsLimited "diagnostics_limited" Info {
        meaning: "more diagnostics of one kind than are listed; says how many were left \
            out",
        facts: ["count": Integer, "kind": Text, "listed": Integer],
        facts_doc: "`kind`, `count` (found), `listed`",
    }
    ConnectionLimit "connection_limit" Warning {
        meaning: "more connections open at once than `--max-connections`; the least \
            recently active was forgotten",
        facts: ["max_connections": Integer],
        facts_doc: "`max_connections`",
    }
    AnalysisLimit "analysis_limit" Warning {
        meaning: "more distinct broker ids, block lengths or node ids than one of the \
            analysis's tables follows (1,024 broker ids or block lengths, 65,536 node \
            ids), or a bound of the comparison of blocks reached: from the frame \
            named, what is new is counted in the totals and listed, but not followed in \
            that table: `brokers` (no row in \
            `summary.brokers`, no error streak, retry or epoch change of that broker, its \
            grants outside the blocks seen placed `unknown`, and its blocks not compared \
            with the metadata log), \
            `block_brokers` (its grants are placed `unknown`, never judged), \
            `broker_epochs` (64 distinct epochs a broker: later ones are not listed in \
            its `epochs_seen`; its epoch changes are still reported), \
            `broker_errors` (256 distinct error codes a broker: later ones are not counted \
            in its `errors`, only in its complete exchanges and `summary.error_codes`), \
            `block_lengths` (its blocks are not reported irregular), `coverage` (no \
            broker or controller is said missing from the capture), `addresses` (65,536 \
            broker addresses: later ones are not in `brokers_by_address`, nor is the \
            broker on them known from them), `address_broker_ids` (64 broker ids an \
            address: later ones are not listed in its `conflicting_broker_ids`), \
            `controller_spans` (4,096 quorum epochs, or runs of answers in no epoch \
            shown: the earliest are dropped, and `controller_timeline` no longer shows \
            who led before those kept); the comparison of \
            blocks, from the frame named: `block_overlaps` (16 overlaps a block: those past the \
            first 16 found are neither listed nor counted), `block_comparisons` (1,024 \
            earlier blocks kept whole compared with one block, the first by their first \
            id: an overlap with the others goes unfound), `folded_blocks` (65,536 ranges \
            of ids of the blocks no longer kept whole, past 65,536 blocks: the lowest \
            are forgotten, and an overlap with them goes unfound), `placement_blocks` \
            (1,024 blocks kept whole that could hold a granted producer id, those \
            starting within the longest one's length below it: the latest holding it \
            is not searched for, and the grant is placed `unknown`, never judged a \
            fault); and the writes \
            analysis's tables: `writes` (65,536 partition-and-producer states: a batch of \
            a new one is counted, not judged), `write_producers` (65,536 producer ids and \
            epochs, or a quarter of the writes' share of `--max-memory`: their writers \
            are not followed, nor counted in `writes.producers`), `topic_names` (65,536 \
            topic ids, or an eighth of the share: a write names the topic by its id), \
            `write_refusals` (65,536 groups: counted in `writes.errors` only), \
            `write_grants` (65,536 producer ids, or the writers' part of the share: \
            their grants are not remembered, and `grant_frames` of such an id is \
            empty), and \
            `write_memory`, said each time the writes analysis held more than its share \
            (a sixteenth of `--max-memory`, the `limit` in bytes): it forgot the \
            partition-and-producer states written least recently (but those of a \
            producer id two producers wrote) and reported its oldest groups of refusals \
            at once, so a batch never appended among the forgotten may go unfound; and \
            `grant_memory`, said once, when the holders of granted producer ids (4 \
            holders an id and epoch) first took more than their share (a \
            sixteenth of `--max-memory`, the `limit` in bytes): those of the lowest ids \
            are forgotten until three quarters of it is held, each time it fills, and \
            counted in `producer_ids.summary.grants_forgotten`: a duplicate grant of a \
            forgotten id goes unfound, and an overlap of blocks does not count its holders",
        facts: ["frame": Integer, "limit": Integer, "table": Text],
        facts_doc: "`table` (`brokers`, `block_brokers`, `broker_epochs`, `broker_errors`, \
            `block_lengths`, `block_overlaps`, `block_comparisons`, `folded_blocks`, \
            `placement_blocks`, `coverage`, `addresses`, `address_broker_ids`, `controller_spans`, \
            `writes`, `write_producers`, `topic_names`, `write_refusals`, \
            `write_grants`, `write_memory` or `grant_memory`), `limit` (entries, or bytes \
            for `write_memory` and `grant_memory`), \
            `frame` (the first message past it)",
    }
    MemoryLimit "memory_limit" Warning {
        meaning: "the input's held bytes went over `--max-memory`: what the connections \
            holding most held was given up (out-of-order bytes declared lost, a \
            message being read dropped, the search for framing passed over, the \
            oldest waiting requests given up, the last bytes delivered forgotten so \
            that retransmissions of them are not compared), each named; when the \
            connections' own entries fill the budget, the least recently active are \
            no longer followed",
        facts: [
            "bytes_freed": Integer,
            "given_up": Text,
            "max_memory": Integer,
            "out_of_order_bytes": Integer,
        ],
        facts_doc: "`out_of_order_bytes` (held bytes delivered after their holes were \
            declared lost), `given_up` (what a connection gave up, as a phrase), \
            `bytes_freed` (the last bytes delivered, forgotten), or `max_memory` \
            (a connection no longer followed)",
    }
    NotKafka "not_kafka" Info {
        meaning: "a TCP connection whose bytes are not read as Kafka: the server spoke \
            first, the client's first message is no Kafka request, no request head \
            was found mid-stream, it ended undecided, its first frames read as \
            Kafka but a later one refuted it before it was proven, or it ended (or \
            the capture did) while its frames were still on trial, their reading \
            not proven (see README, \"Finding Kafka\"); a connection given up on \
            trial has none of its frames counted; names the `--port` that would \
            read it anyway only where its bytes did look like Kafka frames (first \
            frames read as Kafka, or a server's first bytes that start like a Kafka \
            response), with what would have to be true",
        facts: ["reason": Text, "server_port": Integer],
        facts_doc: "`reason` (`server_spoke_first`, `first_message`, `no_request_head`, \
            `undecided`, `trial_head`, `trial_answer_size`, `trial_answer`, \
            `trial_unproven`), `server_port` (for `--port`)",
    }
    TlsEncrypted "tls_encrypted" Warning {
        meaning: "a TCP connection whose bytes are TLS: a ClientHello, a ServerHello, or \
            application data records (picked up mid-stream); encrypted, so it \
            cannot be read, whatever its port and even with `--port`; one per \
            connection, counted in `summary.encrypted_connections`",
        facts: ["client": Text, "port": Integer, "seen": Text, "server": Text, "server_name": Text],
        facts_doc: "`port` (the server's), `client`, `server`, `seen` (`client_hello`, \
            `server_hello`, `application_data`), `server_name` (the ClientHello's \
            SNI host name, when it has one within the bytes read)",
    }
    IpFragmentsDropped "ip_fragments_dropped" Warning {
        meaning: "IPv4 or IPv6 fragments of a TCP datagram that were not reassembled \
            (incomplete at the end of the capture or after 30 s, more than 64 \
            fragments, more than 4 MiB held, overlapping fragments that disagree); \
            says why; the TCP segment is lost",
        facts: [
            "bytes": Integer,
            "datagram_id": Integer,
            "first_frame": Integer,
            "fragments": Integer,
            "from": Text,
            "reason": Text,
            "to": Text,
        ],
        facts_doc: "`reason`; `fragments`, `bytes`, `first_frame`, `datagram_id`, `from`, \
            `to` for a datagram given up",
    }
    CaptureFilesOverlap "capture_files_overlap" Info {
        meaning: "two capture files overlap in time: their packets were merged by \
            timestamp, as mergecap merges them (files that follow one another, as a \
            rotated capture's, do not overlap); names both files",
        facts: ["other_path": Text, "path": Text],
        facts_doc: "`path`, `other_path`",
    }
    DuplicateWindowFull "duplicate_window_full" Info {
        meaning: "more than 65,536 packets fall within `--clock-skew` of each other: \
            copies of one packet in two files are recognised only among the last \
            65,536, and others are read as TCP retransmissions (their bytes still \
            read once, but not counted in `duplicate_packets`)",
        facts: ["remembered": Integer],
        facts_doc: "`remembered`",
    }
    OneSidedConnection "one_sided_connection" Warning {
        meaning: "a Kafka connection of which only the client's direction was captured, \
            not one packet from the server (not even an ACK): its waiting requests \
            are `response_unknown`; the capture point saw one direction",
        facts: ["client": Text, "requests_waiting": Integer, "server": Text],
        facts_doc: "`client`, `server`, `requests_waiting` (of any API, when the \
            connection ended)",
    }
    PidBlockOverlap "pid_block_overlap" Error {
        meaning: "two blocks share producer ids: duplicate producer ids were handed out",
        facts: [
            "affected_host_count": Integer,
            "affected_host_count_at_least": Boolean,
            "affected_hosts": Texts,
            "affected_producers": Integer,
            "affected_producers_at_least": Boolean,
            "fault_frame": Integer,
            "frame": Integer,
            "ids_end": Integer,
            "ids_start": Integer,
            "other_broker_id": Integer,
            "other_first_frame": Integer,
            "other_frame": Integer,
            "other_last_frame": Integer,
        ],
    }
    PidBlockRegression "pid_block_regression" Error {
        meaning: "a block starts below the end of an earlier one that was granted before \
            this one was asked for, as after a controller failover that lost state",
        facts: [
            "fault_frame": Integer,
            "frame": Integer,
            "other_broker_id": Integer,
            "other_end": Integer,
            "other_frame": Integer,
            "start": Integer,
        ],
    }
    PidBlockGap "pid_block_gap" Info {
        meaning: "producer ids that no block in the capture holds, between two blocks \
            (not filled by the next 64 blocks); says how many, and how many answers \
            not read whole and requests never answered may have granted them",
        facts: [
            "answers_not_read": Integer,
            "count": Integer,
            "frame": Integer,
            "ids_end": Integer,
            "ids_start": Integer,
            "other_broker_id": Integer,
            "other_frame": Integer,
            "requests_unanswered": Integer,
        ],
    }
    PidBlockIrregular "pid_block_irregular" Warning {
        meaning: "a block whose length differs from the usual one, or a `NONE` response \
            without a usable block",
        facts: [
            "correlation_id": Integer,
            "frame": Integer,
            "len": Integer,
            "producer_id_len": Integer,
            "producer_id_start": Integer,
            "usual_len": Integer,
        ],
    }
    PidErrorStreak "pid_error_streak" Warning {
        meaning: "two or more consecutive error responses with the same error to one \
            broker, across connections; one finding per run",
        facts: [
            "connections": Integer,
            "connections_at_least": Boolean,
            "count": Integer,
            "error": Text,
            "first_frame": Integer,
            "frame": Integer,
            "last_frame": Integer,
        ],
    }
    PidRetry "pid_retry" Info {
        meaning: "a broker asked again after an error response or an unanswered request",
        facts: ["earlier_frame": Integer, "error": Text, "frame": Integer],
    }
    PidBrokerEpochChange "pid_broker_epoch_change" Info {
        meaning: "a broker's requests carry a new broker epoch (it restarted or \
            re-registered)",
        facts: [
            "earlier_frame": Integer,
            "frame": Integer,
            "new_epoch": Integer,
            "old_epoch": Integer,
        ],
    }
    PidSlowResponse "pid_slow_response" Warning {
        meaning: "a response slower than `producer_id_blocks.slow_threshold_us`",
        facts: [
            "correlation_id": Integer,
            "frame": Integer,
            "latency_us": Number,
            "threshold_us": Number,
        ],
    }
    PidDuplicateGrant "pid_duplicate_grant" Error {
        meaning: "an InitProducerId (or EndTxn version 5) response granted a producer id \
            and epoch that another producer (another connection, or another transactional \
            id) was granted earlier: two producers hold the same id",
        facts: [
            "client": Text,
            "fault_frame": Integer,
            "frame": Integer,
            "other_client": Text,
            "other_frame": Integer,
            "other_transactional_id": Text,
            "other_transactional_id_len": Integer,
            "producer_epoch": Integer,
            "producer_id": Integer,
            "transactional_id": Text,
            "transactional_id_len": Integer,
        ],
    }
    PidOutsideBlocks "pid_outside_blocks" Error {
        meaning: "a broker granted a producer id its producer-id manager cannot have \
            drawn: from another broker's block (`another_brokers_block`), from an \
            older block after it granted from a newer one (`older_block`), or \
            outside every block it was granted in the capture, above the first \
            (`outside_blocks`)",
        facts: [
            "block_broker_id": Integer,
            "block_end": Integer,
            "block_start": Integer,
            "blocks": Integer,
            "frame": Integer,
            "last_end": Integer,
            "last_start": Integer,
            "placement": Text,
            "producer_id": Integer,
        ],
    }
    PidStaleController "pid_stale_controller" Error {
        meaning: "a controller granted a block (an AllocateProducerIds response with \
            `NONE`) asked for after the capture showed another controller leading a later \
            epoch than any it was seen leading (see `controllers[]`): a stale \
            controller handed out producer ids the leader may hand out too. A block asked \
            for before that and answered after it is not one: KRaft answers `NONE` only \
            once the block is committed. When the request and the message that showed the \
            other leader come from different files, the request must come later by more \
            than `--clock-skew`",
        facts: [
            "controller": Text,
            "controller_id": Integer,
            "controller_led_epoch": Integer,
            "frame": Integer,
            "leader_seen": Integer,
            "leader_seen_epoch": Integer,
            "leader_seen_frame": Integer,
            "len": Integer,
            "request_frame": Integer,
            "start": Integer,
        ],
    }
    WriteNotAppended "write_not_appended" Error {
        meaning: "a Produce response acknowledged a batch with success at the offset of \
            another batch of the same producer id, epoch, partition and sequences with other \
            records (another CRC): the broker took it for a retry of that batch and did \
            not append it. Data loss the wire proves",
        facts: [
            "client": Text,
            "client_id": Text,
            "first_sequence": Integer,
            "frame": Integer,
            "last_sequence": Integer,
            "offset": Integer,
            "other_client": Text,
            "other_client_id": Text,
            "other_frame": Integer,
            "partition": Integer,
            "producer_epoch": Integer,
            "producer_id": Integer,
            "request_frame": Integer,
            "topic": Text,
        ],
        facts_doc: "`topic` (its name, or its id as 32 hex digits from Produce version 13), \
            `partition`, `producer_id`, `producer_epoch`, `first_sequence`, \
            `last_sequence`, `offset` (the base offset it was acknowledged at), `client`, \
            `client_id`, `request_frame`; the appended batch's `other_frame` (its \
            response), `other_client`, `other_client_id`",
    }
    WriteSharedProducer "write_shared_producer" Error {
        meaning: "two producers wrote batches with one producer id and epoch \
            (`evidence`: their client ids differ, they write from different hosts, or \
            both wrote to one broker over two connections at once): the broker keeps \
            one sequence per producer id and partition, so it judges their batches as \
            one producer's",
        facts: [
            "client": Text,
            "client_id": Text,
            "evidence": Text,
            "frame": Integer,
            "other_client": Text,
            "other_client_id": Text,
            "other_frame": Integer,
            "producer_epoch": Integer,
            "producer_id": Integer,
        ],
        facts_doc: "`producer_id`, `producer_epoch`, `client`, `client_id` (the second \
            writer, at `frame`), `other_client`, `other_client_id`, `other_frame` (the \
            other's first request), `evidence` (`client_ids`, `hosts` or `connections`)",
    }
    WriteOutOfSequence "write_out_of_sequence" Warning {
        meaning: "batches of one producer id and epoch that the broker refused for their \
            sequence (`OUT_OF_ORDER_SEQUENCE_NUMBER`, `DUPLICATE_SEQUENCE_NUMBER`) or \
            because it did not know the producer (`UNKNOWN_PRODUCER_ID`), one per \
            producer id, epoch and error",
        facts: [
            "batches": Integer,
            "client": Text,
            "error": Text,
            "error_code": Integer,
            "frame": Integer,
            "last_frame": Integer,
            "partitions": Integer,
            "partitions_at_least": Boolean,
            "producer_epoch": Integer,
            "producer_id": Integer,
        ],
        facts_doc: "`producer_id`, `producer_epoch`, `error`, `error_code`, `batches`, \
            `partitions` (with `partitions_at_least` true past 1,024), `client` (the writer \
            of the first), `frame` and `last_frame` (the first and last answers)",
    }
    WriteFenced "write_fenced" Info {
        meaning: "batches of one producer id and epoch that the broker refused because a \
            newer epoch of the producer exists (`INVALID_PRODUCER_EPOCH`, \
            `PRODUCER_FENCED`): a producer fenced by a newer instance, as transactions \
            mean to",
        facts: [
            "batches": Integer,
            "client": Text,
            "error": Text,
            "error_code": Integer,
            "frame": Integer,
            "last_frame": Integer,
            "partitions": Integer,
            "partitions_at_least": Boolean,
            "producer_epoch": Integer,
            "producer_id": Integer,
        ],
        facts_doc: "`producer_id`, `producer_epoch`, `error`, `error_code`, `batches`, \
            `partitions` (with `partitions_at_least` true past 1,024), `client` (the writer \
            of the first), `frame` and `last_frame` (the first and last answers), as \
            `write_out_of_sequence`",
    }
    MetadataLogTruncated "metadata_log_truncated" Warning {
        meaning: "a metadata log file (`--metadata-log`) ends inside a record batch; the \
            batches before it were read",
        facts: ["at": Integer, "len": Integer, "needed": Integer, "path": Text],
        facts_doc: "`path`, `at` (the batch's byte position), `needed` (its length), \
            `len` (bytes of it in the file)",
    }
    MetadataLogCorrupt "metadata_log_corrupt" Error {
        meaning: "a metadata log batch that is not what Kafka writes (magic, CRC-32C, \
            compression, record framing); that file is read no further",
        facts: ["at": Integer, "path": Text, "reason": Text],
        facts_doc: "`path`, `at`, `reason`",
    }
    MetadataLogLimit "metadata_log_limit" Warning {
        meaning: "a metadata log batch over a bound of the reader (16 MiB read, 64 MiB \
            inflated); that file is read no further",
        facts: ["at": Integer, "path": Text, "reason": Text],
        facts_doc: "`path`, `at`, `reason`",
    }
    MetadataLogDivergent "metadata_log_divergent" Info {
        meaning: "two metadata logs hold different records at one offset; the one of the \
            higher leader epoch is kept, as Raft keeps it: what a leader appended \
            but never committed before it lost its place (killed, say) is replaced \
            by its successor's records",
        facts: ["dropped": Text, "kept": Text, "offset": Integer],
        facts_doc: "`offset`, `kept`, `dropped` (each record's type and leader epoch)",
    }
    PidBlockNotCommitted "pid_block_not_committed" Error {
        meaning: "a block delivered on the wire (a `NONE` response) that no \
            ProducerIdsRecord of the metadata log commits, though the log covers \
            its time: a controller answered from state it had not committed",
        facts: [
            "broker_epoch": Integer,
            "broker_id": Integer,
            "frame": Integer,
            "len": Integer,
            "log_first_offset": Integer,
            "log_last_offset": Integer,
            "start": Integer,
        ],
    }
    PidBlockNotDelivered "pid_block_not_delivered" Warning {
        meaning: "a block the metadata log commits while the capture shows its broker \
            asking, whose delivery the capture does not hold; names the broker's \
            last request that got no block, and how it ended",
        facts: [
            "broker_epoch": Integer,
            "broker_id": Integer,
            "next_producer_id": Integer,
            "offset": Integer,
            "request_frame": Integer,
            "request_status": Text,
            "start": Integer,
            "time_ms": Integer,
        ],
    }
    PidBlockMismatch "pid_block_mismatch" Error {
        meaning: "a block delivered on the wire whose record commits it to another broker \
            or broker epoch, or more than `--log-clock-skew` after it was delivered",
        facts: [
            "broker_epoch": Integer,
            "broker_id": Integer,
            "committed_late_ms": Integer,
            "frame": Integer,
            "len": Integer,
            "log_broker_epoch": Integer,
            "log_broker_id": Integer,
            "offset": Integer,
            "start": Integer,
        ],
    }
    PidCommittedOverlap "pid_committed_overlap" Error {
        meaning: "a ProducerIdsRecord whose block (`NextProducerId - 1000` up to it) \
            starts below the highest id committed before it: the log commits ids \
            twice",
        facts: [
            "broker_id": Integer,
            "next_producer_id": Integer,
            "offset": Integer,
            "previous_next_producer_id": Integer,
            "previous_offset": Integer,
            "start": Integer,
        ],
    }
    PidCommittedGap "pid_committed_gap" Warning {
        meaning: "a ProducerIdsRecord whose block starts past the highest id committed \
            before it: the ids between have no record in the logs read (a record \
            missing, or ids skipped)",
        facts: [
            "broker_id": Integer,
            "missing_end": Integer,
            "missing_start": Integer,
            "next_producer_id": Integer,
            "offset": Integer,
            "previous_next_producer_id": Integer,
            "previous_offset": Integer,
            "usual_len": Integer,
        ],
    }
}
