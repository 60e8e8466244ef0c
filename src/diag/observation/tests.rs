//! Each observation's sentence and facts, written out for a sample of every variant and
//! cause: a change to a sentence or a fact shows here, and not only in the goldens, which
//! raise some kinds only.

use std::net::SocketAddr;

use super::*;
use crate::diag::{
    BadGrant, ConnectionEnds, Cut, Damage, Fact, GivenUp, NamedCode, RetryAfter, Side,
};

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn client() -> SocketAddr {
    addr("10.0.0.1:40000")
}

fn server() -> SocketAddr {
    addr("10.0.0.2:9092")
}

fn text(s: &str) -> Fact {
    Fact::from(s)
}

/// An observation, the sentence it must write and the facts it must give.
type Sample = (Observation<'static>, &'static str, Facts);

fn capture_samples() -> Vec<Sample> {
    let corrupt = |damage| {
        Observation::CaptureCorrupt(obs::CaptureCorrupt {
            path: "a.pcap",
            record_offset: 24,
            damage,
        })
    };
    let corrupt_facts = || vec![("path", text("a.pcap")), ("record_offset", Fact::Uint(24))];
    let truncated = |cut| {
        Observation::CaptureTruncated(obs::CaptureTruncated {
            path: "a.pcap",
            record_offset: 80,
            packets: 3,
            cut,
        })
    };
    let truncated_facts = || {
        vec![
            ("path", text("a.pcap")),
            ("record_offset", Fact::Uint(80)),
            ("packets", Fact::Uint(3)),
        ]
    };
    vec![
        (
            truncated(Cut::InsideRecord),
            "a.pcap ends inside a record that starts at byte 80; the 3 packets before it were read",
            truncated_facts(),
        ),
        (
            truncated(Cut::Stream {
                error: "gzip stream ends early",
            }),
            "a.pcap is cut short: gzip stream ends early; the 3 packets before the cut were read",
            truncated_facts(),
        ),
        (
            corrupt(Damage::RecordTooLarge { limit_mib: 16 }),
            "a.pcap: the record at byte 24 is larger than 16 MiB; reading stopped there",
            corrupt_facts(),
        ),
        (
            corrupt(Damage::Unreadable {
                why: "bad block",
                packets: 2,
            }),
            "a.pcap is corrupt at byte 24 (bad block); the 2 packets before it were read",
            corrupt_facts(),
        ),
        (
            corrupt(Damage::ReadFailed {
                error: "disk gone",
                packets: 2,
            }),
            "a.pcap: reading failed after 2 packets (disk gone); what came before is reported",
            corrupt_facts(),
        ),
        (
            corrupt(Damage::OverSnaplen {
                len: 300_000,
                snaplen: 65535,
                max_len: 262_144,
            }),
            "a.pcap: the record at byte 24 holds 300000 bytes, more than the capture's snaplen of 65535 and the 262144 any packet may have; it was skipped",
            corrupt_facts(),
        ),
        (
            corrupt(Damage::TooManyInterfaces { max: 256 }),
            "a.pcap: the section at byte 24 describes more than 256 interfaces; the rest are not kept, and their packets are skipped",
            corrupt_facts(),
        ),
        (
            corrupt(Damage::UnknownInterface {
                interface: 7,
                described: 2,
            }),
            "a.pcap: packet block at byte 24 names interface 7 but only 2 are described; the packet was skipped",
            corrupt_facts(),
        ),
        (
            Observation::CaptureFilesOverlap(obs::CaptureFilesOverlap {
                path: "a.pcap",
                other_path: "b.pcap",
            }),
            "a.pcap and b.pcap overlap in time: their packets were merged by timestamp, as mergecap merges them",
            vec![("path", text("a.pcap")), ("other_path", text("b.pcap"))],
        ),
        (
            Observation::DuplicateWindowFull(obs::DuplicateWindowFull { remembered: 65536 }),
            "more than 65536 packets fall within the clock skew allowed: copies of one packet in two files are recognised only among the last 65536; others are read as retransmissions, their bytes still read once",
            vec![("remembered", Fact::Uint(65536))],
        ),
        (
            Observation::DiagnosticsLimited(obs::DiagnosticsLimited {
                kind: Kind::TcpGap,
                count: 1006,
                listed: 1000,
            }),
            "1006 tcp_gap diagnostics were found; only the first 1000 are listed",
            vec![
                ("kind", text("tcp_gap")),
                ("count", Fact::Uint(1006)),
                ("listed", Fact::Uint(1000)),
            ],
        ),
    ]
}

fn packet_samples() -> Vec<Sample> {
    vec![
        (
            Observation::PacketTruncated(obs::PacketTruncated { bytes_missing: 40 }),
            "packet was captured 40 bytes short of its length on the wire (snaplen); those stream bytes are missing",
            vec![("bytes_missing", Fact::Uint(40))],
        ),
        (
            Observation::UnsupportedLinkType(obs::UnsupportedLinkType {
                link_type: "IEEE802_11",
                link_type_number: 105,
            }),
            "link type IEEE802_11 is not supported; its packets are skipped",
            vec![
                ("link_type", text("IEEE802_11")),
                ("link_type_number", Fact::Int(105)),
            ],
        ),
        (
            Observation::PacketMalformed(obs::PacketMalformed {
                fragments: None,
                reason: "TCP header: too short",
            }),
            "packet could not be decoded: TCP header: too short",
            vec![("reason", text("TCP header: too short"))],
        ),
        (
            Observation::PacketMalformed(obs::PacketMalformed {
                fragments: Some(3),
                reason: "IP header: bad",
            }),
            "the IP datagram reassembled from 3 fragments could not be decoded: IP header: bad",
            vec![
                ("fragments", Fact::Uint(3)),
                ("reason", text("IP header: bad")),
            ],
        ),
        (
            Observation::IpFragmentsDropped(FragmentsDropped::Datagram {
                fragments: 2,
                bytes: 2960,
                first_frame: 4,
                datagram_id: 77,
                from: "fd00::1".parse().unwrap(),
                to: "fd00::2".parse().unwrap(),
                reason: "the capture ended before it was complete",
            }),
            "2 IPv6 fragments (2960 captured bytes, first in frame 4) of datagram 77 from fd00::1 to fd00::2 were dropped: the capture ended before it was complete; the TCP segment they carried is lost",
            vec![
                ("fragments", Fact::Uint(2)),
                ("bytes", Fact::Uint(2960)),
                ("first_frame", Fact::Uint(4)),
                ("datagram_id", Fact::Uint(77)),
                ("from", text("fd00::1")),
                ("to", text("fd00::2")),
                ("reason", text("the capture ended before it was complete")),
            ],
        ),
        (
            Observation::IpFragmentsDropped(FragmentsDropped::Datagram {
                fragments: 1,
                bytes: 8,
                first_frame: 9,
                datagram_id: 5,
                from: "10.0.0.1".parse().unwrap(),
                to: "10.0.0.2".parse().unwrap(),
                reason: "fragments held reached 64 MiB",
            }),
            "1 IPv4 fragments (8 captured bytes, first in frame 9) of datagram 5 from 10.0.0.1 to 10.0.0.2 were dropped: fragments held reached 64 MiB; the TCP segment they carried is lost",
            vec![
                ("fragments", Fact::Uint(1)),
                ("bytes", Fact::Uint(8)),
                ("first_frame", Fact::Uint(9)),
                ("datagram_id", Fact::Uint(5)),
                ("from", text("10.0.0.1")),
                ("to", text("10.0.0.2")),
                ("reason", text("fragments held reached 64 MiB")),
            ],
        ),
        (
            Observation::IpFragmentsDropped(FragmentsDropped::NotReassembled {
                reason: "IPv6 fragment with extension headers after its Fragment header",
            }),
            "IPv6 fragment with extension headers after its Fragment header was dropped: such fragments are not reassembled; the TCP segment it carried is lost",
            vec![(
                "reason",
                text("IPv6 fragment with extension headers after its Fragment header"),
            )],
        ),
    ]
}

fn tcp_samples() -> Vec<Sample> {
    let given_up = |given_up| {
        Observation::MemoryLimit(obs::MemoryLimit {
            connection: ConnectionEnds(client(), server()),
            given_up,
        })
    };
    vec![
        (
            Observation::MidstreamStart(obs::MidstreamStart {
                from: client(),
                to: addr("[fd00::2]:9092"),
            }),
            "connection 10.0.0.1:40000 - [fd00::2]:9092 was already open when the capture started; its streams are read from the first captured byte",
            vec![
                ("from", text("10.0.0.1:40000")),
                ("to", text("[fd00::2]:9092")),
            ],
        ),
        (
            Observation::TcpGap(obs::TcpGap {
                bytes: 1448,
                from: client(),
                to: server(),
            }),
            "1448 bytes from 10.0.0.1:40000 to 10.0.0.2:9092 are missing from the capture",
            vec![
                ("bytes", Fact::Uint(1448)),
                ("from", text("10.0.0.1:40000")),
                ("to", text("10.0.0.2:9092")),
            ],
        ),
        (
            Observation::TcpOverlapConflict(obs::TcpOverlapConflict {
                offset: 100,
                bytes: 12,
                from: server(),
            }),
            "a retransmission from 10.0.0.2:9092 differs from the first copy within the 12 bytes at stream offset 100; the first copy was kept",
            vec![
                ("offset", Fact::Uint(100)),
                ("bytes", Fact::Uint(12)),
                ("from", text("10.0.0.2:9092")),
            ],
        ),
        (
            Observation::TcpOverlapUnread(obs::TcpOverlapUnread {
                offset: 8192,
                bytes: 1448,
                from: server(),
            }),
            "a retransmission from 10.0.0.2:9092 was not compared with the first copy of the 1448 bytes at stream offset 8192: the capture file could not be read there again; the first copy was kept",
            vec![
                ("offset", Fact::Uint(8192)),
                ("bytes", Fact::Uint(1448)),
                ("from", text("10.0.0.2:9092")),
            ],
        ),
        (
            Observation::TcpRstOutOfWindow(obs::TcpRstOutOfWindow {
                from: client(),
                seq: 4_000_000_000,
            }),
            "an RST from 10.0.0.1:40000 with sequence number 4000000000 lies outside the receive window; the connection goes on (RFC 5961)",
            vec![
                ("from", text("10.0.0.1:40000")),
                ("seq", Fact::Uint(4_000_000_000)),
            ],
        ),
        (
            Observation::ConnectionLimit(obs::ConnectionLimit {
                open: 50_000,
                max_connections: 50_000,
                first: ConnectionEnds(client(), server()),
            }),
            "more than 50000 connections at once (--max-connections 50000, or as many as the table's share of --max-memory holds): the least recently active are no longer followed (connection 10.0.0.1:40000 - 10.0.0.2:9092 first)",
            vec![("max_connections", Fact::Uint(50_000))],
        ),
        (
            given_up(GivenUp::OutOfOrder { bytes: 900 }),
            "over the memory budget (--max-memory), connection 10.0.0.1:40000 - 10.0.0.2:9092 delivered its 900 out-of-order bytes after declaring the holes before them lost",
            vec![("out_of_order_bytes", Fact::Uint(900))],
        ),
        (
            given_up(GivenUp::Recent { bytes: 4096 }),
            "over the memory budget (--max-memory), connection 10.0.0.1:40000 - 10.0.0.2:9092 forgot the last bytes it delivered: retransmissions of them are no longer compared",
            vec![("bytes_freed", Fact::Uint(4096))],
        ),
        (
            given_up(GivenUp::Connection {
                max_memory: 1 << 20,
            }),
            "over the memory budget (--max-memory) with nothing left to shed, connection 10.0.0.1:40000 - 10.0.0.2:9092, the least recently active, is no longer followed",
            vec![("max_memory", Fact::Uint(1 << 20))],
        ),
        (
            given_up(GivenUp::Held {
                what: "3 requests waiting and 100 bytes of the server's stream being read",
            }),
            "over the memory budget (--max-memory), connection 10.0.0.1:40000 - 10.0.0.2:9092 gave up 3 requests waiting and 100 bytes of the server's stream being read",
            vec![(
                "given_up",
                text("3 requests waiting and 100 bytes of the server's stream being read"),
            )],
        ),
    ]
}

fn kafka_samples() -> Vec<Sample> {
    vec![
        (
            Observation::KafkaFrameTooLarge(obs::KafkaFrameTooLarge {
                side: Side::Server,
                size: 200_000_000,
                limit: 104_857_600,
            }),
            "a Kafka size prefix from the server says 200000000 bytes, above the 104857600 byte limit; looking for the next frame",
            vec![
                ("side", text("server")),
                ("size", Fact::Int(200_000_000)),
                ("limit", Fact::Uint(104_857_600)),
            ],
        ),
        (
            Observation::KafkaFramingLost(FramingLost::SizeTooSmall {
                side: Side::Client,
                size: -3,
            }),
            "a Kafka size prefix from the client says -3 bytes, too small for a message; looking for the next frame",
            vec![("side", text("client")), ("size", Fact::Int(-3))],
        ),
        (
            Observation::KafkaFramingLost(FramingLost::Gap {
                side: Side::Server,
                gap_bytes: 500,
                inside_head: true,
            }),
            "a gap of 500 bytes in the server's stream came inside a Kafka message's head, which is dropped; looking for the next frame",
            vec![
                ("side", text("server")),
                ("gap_bytes", Fact::Uint(500)),
                ("inside_head", Fact::Bool(true)),
            ],
        ),
        (
            Observation::KafkaFramingLost(FramingLost::Gap {
                side: Side::Client,
                gap_bytes: 7,
                inside_head: false,
            }),
            "a gap of 7 bytes in the client's stream came where the next Kafka message starts; looking for the next frame",
            vec![
                ("side", text("client")),
                ("gap_bytes", Fact::Uint(7)),
                ("inside_head", Fact::Bool(false)),
            ],
        ),
        (
            Observation::KafkaResync(obs::KafkaResync {
                side: Side::Client,
                skipped_bytes: 321,
            }),
            "Kafka framing of the client's stream was found after passing over 321 bytes",
            vec![("side", text("client")), ("skipped_bytes", Fact::Uint(321))],
        ),
        (
            Observation::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
                side: Side::Server,
                bytes: 9,
                api: None,
                correlation_id: None,
                carries_producer_ids: false,
            }),
            "the server's stream ended inside a Kafka response after 9 of its bytes; the message is not reported",
            vec![("side", text("server")), ("bytes", Fact::Uint(9))],
        ),
        (
            Observation::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
                side: Side::Server,
                bytes: 73,
                api: Some(NamedCode {
                    code: 1,
                    name: "Fetch",
                }),
                correlation_id: Some(110),
                carries_producer_ids: false,
            }),
            "the server's stream ended inside a Kafka Fetch response after 73 of its bytes; the message is not reported",
            vec![
                ("side", text("server")),
                ("bytes", Fact::Uint(73)),
                ("api_key", Fact::Int(1)),
                ("correlation_id", Fact::Int(110)),
            ],
        ),
    ]
}

fn kafka_message_samples() -> Vec<Sample> {
    let undecoded = |side, problem: &'static str| Undecoded {
        api: NamedCode {
            code: 67,
            name: "AllocateProducerIds",
        },
        side,
        correlation_id: 12,
        problem,
    };
    let undecoded_facts = |message, problem| {
        vec![
            ("api_key", Fact::Int(67)),
            ("message", text(message)),
            ("correlation_id", Fact::Int(12)),
            ("problem", text(problem)),
        ]
    };
    let cut = "the message's 40 bytes are not all in the capture: only the first 20 are decoded; every field was read before them";
    let version = "AllocateProducerIds version 9 is not supported (only version 0 is); the body was not decoded";
    vec![
        (
            Observation::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
                side: Side::Client,
                bytes: 2,
                api: None,
                correlation_id: None,
                carries_producer_ids: false,
            }),
            "the client's stream ended inside a Kafka request after 2 of its bytes; the message is not reported",
            vec![("side", text("client")), ("bytes", Fact::Uint(2))],
        ),
        (
            Observation::KafkaDecodeError(undecoded(Side::Server, "bad length")),
            "AllocateProducerIds response with correlation id 12: bad length",
            undecoded_facts("response", "bad length"),
        ),
        (
            Observation::KafkaMessageTruncated(undecoded(Side::Client, cut)),
            "AllocateProducerIds request with correlation id 12: the message's 40 bytes are not all in the capture: only the first 20 are decoded; every field was read before them",
            undecoded_facts("request", cut),
        ),
        (
            Observation::KafkaUnsupportedVersion(undecoded(Side::Client, version)),
            "AllocateProducerIds request with correlation id 12: AllocateProducerIds version 9 is not supported (only version 0 is); the body was not decoded",
            undecoded_facts("request", version),
        ),
        (
            Observation::DuplicateCorrelationId(obs::DuplicateCorrelationId {
                correlation_id: 5,
                api_key: NamedCode {
                    code: 67,
                    name: "AllocateProducerIds",
                },
                earlier_api_key: NamedCode {
                    code: 18,
                    name: "ApiVersions",
                },
                earlier_frame: 3,
            }),
            "AllocateProducerIds request reuses correlation id 5 while an earlier ApiVersions request with that id is still waiting; the earlier one is reported as response_unknown (which of the two a later answer is for cannot be told)",
            vec![
                ("correlation_id", Fact::Int(5)),
                ("api_key", Fact::Int(67)),
                ("earlier_api_key", Fact::Int(18)),
                ("earlier_frame", Fact::Uint(3)),
            ],
        ),
        (
            Observation::AnalysisLimit(obs::AnalysisLimit {
                table: obs::AnalysisTable::Brokers,
                limit: 1024,
                frame: 77,
            }),
            "more than 1024 broker ids asked for blocks; from frame 77 on, those not seen before are counted and listed but have no row in summary.brokers, no error streak, retry or epoch change, no block compared with the metadata log, and a grant of theirs outside the blocks seen is placed unknown",
            vec![
                ("table", text("brokers")),
                ("limit", Fact::Uint(1024)),
                ("frame", Fact::Uint(77)),
            ],
        ),
        (
            Observation::PendingLimit(obs::PendingLimit { max_pending: 10 }),
            "more than 10 requests are waiting for a response on this connection; the oldest are given up (AllocateProducerIds ones are reported as response_unknown)",
            vec![("max_pending", Fact::Uint(10))],
        ),
        (
            Observation::OneSidedConnection(obs::OneSidedConnection {
                client: client(),
                server: server(),
                requests_waiting: 2,
            }),
            "only the client's direction of connection 10.0.0.1:40000 <-> 10.0.0.2:9092 was captured (not one packet from the server, not even an ACK): its 2 waiting request(s) may have been answered",
            vec![
                ("client", text("10.0.0.1:40000")),
                ("server", text("10.0.0.2:9092")),
                ("requests_waiting", Fact::Uint(2)),
            ],
        ),
    ]
}

fn connection_samples() -> Vec<Sample> {
    vec![
        (
            Observation::NotKafka(obs::NotKafka {
                initiator: client(),
                responder: server(),
                reason: "undecided",
                explanation: "it ended before its bytes showed a Kafka request head",
                port_would_help_if: None,
                server_port: 9092,
            }),
            "connection 10.0.0.1:40000 <-> 10.0.0.2:9092 is not read as Kafka: it ended before its bytes showed a Kafka request head",
            vec![("reason", text("undecided")), ("server_port", Fact::Uint(9092))],
        ),
        (
            Observation::NotKafka(obs::NotKafka {
                initiator: client(),
                responder: server(),
                reason: "trial_unproven",
                explanation: "its frames read as Kafka",
                port_would_help_if: Some("if it is a short Kafka session"),
                server_port: 9092,
            }),
            "connection 10.0.0.1:40000 <-> 10.0.0.2:9092 is not read as Kafka: its frames read as Kafka; if it is a short Kafka session, run again with --port 9092",
            vec![
                ("reason", text("trial_unproven")),
                ("server_port", Fact::Uint(9092)),
            ],
        ),
        (
            Observation::TlsEncrypted(obs::TlsEncrypted {
                client: client(),
                server: addr("10.0.0.2:9093"),
                seen: "client_hello",
                seen_described: "ClientHello seen",
                server_name: Some("kafka-1.example"),
            }),
            "connection 10.0.0.1:40000 -> 10.0.0.2:9093 is TLS on port 9093 (ClientHello seen, server name kafka-1.example): encrypted, cannot be read; pidshark reads Kafka only where it is not encrypted",
            vec![
                ("port", Fact::Uint(9093)),
                ("client", text("10.0.0.1:40000")),
                ("server", text("10.0.0.2:9093")),
                ("seen", text("client_hello")),
                ("server_name", text("kafka-1.example")),
            ],
        ),
        (
            Observation::TlsEncrypted(obs::TlsEncrypted {
                client: client(),
                server: addr("10.0.0.2:9093"),
                seen: "application_data",
                seen_described: "application data records seen",
                server_name: None,
            }),
            "connection 10.0.0.1:40000 -> 10.0.0.2:9093 is TLS on port 9093 (application data records seen): encrypted, cannot be read; pidshark reads Kafka only where it is not encrypted",
            vec![
                ("port", Fact::Uint(9093)),
                ("client", text("10.0.0.1:40000")),
                ("server", text("10.0.0.2:9093")),
                ("seen", text("application_data")),
            ],
        ),
    ]
}

fn block_samples() -> Vec<Sample> {
    vec![
        (
            Observation::PidBlockOverlap(Overlap::Block {
                frame: 31,
                broker_id: 2,
                ids_start: 1000,
                ids_end: 1999,
                other_broker_id: 1,
                other_frame: 21,
            }),
            "ids 1000..=1999 were given twice: to broker 1 (frame 21) and to broker 2 (frame 31)",
            vec![
                ("frame", Fact::Uint(31)),
                ("ids_start", Fact::Int(1000)),
                ("ids_end", Fact::Int(1999)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(21)),
            ],
        ),
        (
            Observation::PidBlockOverlap(Overlap::Folded {
                frame: 31,
                broker_id: 2,
                ids_start: 5,
                ids_end: 5,
                other_first_frame: 3,
                other_last_frame: 9,
            }),
            "id 5 given to broker 2 (frame 31) was already given in an earlier block, between frames 3 and 9",
            vec![
                ("frame", Fact::Uint(31)),
                ("ids_start", Fact::Int(5)),
                ("ids_end", Fact::Int(5)),
                ("other_first_frame", Fact::Uint(3)),
                ("other_last_frame", Fact::Uint(9)),
            ],
        ),
        (
            Observation::PidBlockRegression(obs::PidBlockRegression {
                frame: 41,
                broker_id: 3,
                start: 500,
                other_end: 1999,
                other_broker_id: 1,
                other_frame: 21,
            }),
            "the block starting at 500 for broker 3 (frame 41) starts below the end 1999 of an earlier block for broker 1 (frame 21)",
            vec![
                ("frame", Fact::Uint(41)),
                ("start", Fact::Int(500)),
                ("other_end", Fact::Int(1999)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(21)),
            ],
        ),
        (
            Observation::PidBlockGap(obs::PidBlockGap {
                frame: 51,
                broker_id: 2,
                ids_start: 2000,
                ids_end: 2999,
                other_broker_id: 1,
                other_frame: 21,
                answers_not_read: 0,
                requests_unanswered: 0,
            }),
            "1000 ids (2000..=2999) were skipped between the block for broker 1 (frame 21) and the next, for broker 2 (frame 51)",
            vec![
                ("frame", Fact::Uint(51)),
                ("ids_start", Fact::Int(2000)),
                ("ids_end", Fact::Int(2999)),
                ("count", Fact::Int(1000)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(21)),
            ],
        ),
        // one id, and a block starting at the last id of another (KAFKA-20031's shape)
        (
            Observation::PidBlockOverlap(Overlap::Block {
                frame: 59,
                broker_id: 1,
                ids_start: 1999,
                ids_end: 1999,
                other_broker_id: 1,
                other_frame: 19,
            }),
            "id 1999 was given twice: to broker 1 (frame 19) and to broker 1 (frame 59)",
            vec![
                ("frame", Fact::Uint(59)),
                ("ids_start", Fact::Int(1999)),
                ("ids_end", Fact::Int(1999)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(19)),
            ],
        ),
    ]
}

fn block_finding_samples() -> Vec<Sample> {
    let response = |producer_id_start, producer_id_len, why| {
        Observation::PidBlockIrregular(Irregular::Response {
            frame: 11,
            correlation_id: 4,
            broker_id: 2,
            producer_id_start,
            producer_id_len,
            why,
        })
    };
    let response_facts = |start: i64, len: i32| {
        vec![
            ("frame", Fact::Uint(11)),
            ("correlation_id", Fact::Int(4)),
            ("producer_id_start", Fact::Int(start)),
            ("producer_id_len", Fact::Int(len.into())),
        ]
    };
    vec![
        (
            Observation::PidBlockRegression(obs::PidBlockRegression {
                frame: 59,
                broker_id: 1,
                start: 1999,
                other_end: 1999,
                other_broker_id: 1,
                other_frame: 19,
            }),
            "the block starting at 1999 for broker 1 (frame 59) starts at the last id of an earlier block for broker 1 (frame 19)",
            vec![
                ("frame", Fact::Uint(59)),
                ("start", Fact::Int(1999)),
                ("other_end", Fact::Int(1999)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(19)),
            ],
        ),
        (
            Observation::PidBlockGap(obs::PidBlockGap {
                frame: 71,
                broker_id: 2,
                ids_start: 3999,
                ids_end: 3999,
                other_broker_id: 1,
                other_frame: 59,
                answers_not_read: 3,
                requests_unanswered: 0,
            }),
            "id 3999 was skipped between the block for broker 1 (frame 59) and the next, for broker 2 (frame 71), unless one of the 3 answers not read whole (lost, given up at a limit, or cut) granted them",
            vec![
                ("frame", Fact::Uint(71)),
                ("ids_start", Fact::Int(3999)),
                ("ids_end", Fact::Int(3999)),
                ("count", Fact::Int(1)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(59)),
                ("answers_not_read", Fact::Uint(3)),
            ],
        ),
        (
            Observation::PidBlockGap(obs::PidBlockGap {
                frame: 71,
                broker_id: 2,
                ids_start: 3000,
                ids_end: 3999,
                other_broker_id: 1,
                other_frame: 59,
                answers_not_read: 0,
                requests_unanswered: 2,
            }),
            "1000 ids (3000..=3999) were skipped between the block for broker 1 (frame 59) and the next, for broker 2 (frame 71), unless one of the 2 requests never answered got them (a controller can grant a block and fail before answering)",
            vec![
                ("frame", Fact::Uint(71)),
                ("ids_start", Fact::Int(3000)),
                ("ids_end", Fact::Int(3999)),
                ("count", Fact::Int(1000)),
                ("other_broker_id", Fact::Int(1)),
                ("other_frame", Fact::Uint(59)),
                ("requests_unanswered", Fact::Uint(2)),
            ],
        ),
        (
            response(-1, 1000, BadGrant::NegativeStart),
            "a NONE response to broker 2 gives producer id start -1 (correlation id 4); it is not counted as a block",
            response_facts(-1, 1000),
        ),
        (
            response(0, 0, BadGrant::NoIds),
            "a NONE response to broker 2 gives a block of 0 ids (correlation id 4); it is not counted as a block",
            response_facts(0, 0),
        ),
        (
            response(i64::MAX, 10, BadGrant::PastLargestId),
            "a NONE response to broker 2 gives a block starting at 9223372036854775807 of 10 ids, past the largest producer id (correlation id 4); it is not counted as a block",
            response_facts(i64::MAX, 10),
        ),
        (
            Observation::PidBlockIrregular(Irregular::Length {
                frame: 61,
                broker_id: 2,
                len: 10,
                usual_len: 1000,
            }),
            "broker 2 got a block of 10 ids (frame 61) where this capture's blocks are usually 1000",
            vec![
                ("frame", Fact::Uint(61)),
                ("len", Fact::Int(10)),
                ("usual_len", Fact::Int(1000)),
            ],
        ),
    ]
}

fn broker_samples() -> Vec<Sample> {
    vec![
        (
            Observation::PidErrorStreak(obs::PidErrorStreak {
                broker_id: 1,
                error: "NOT_CONTROLLER",
                count: 3,
                first_frame: 10,
                last_frame: 30,
                connections: 1,
                connections_more: false,
            }),
            "broker 1 got 3 NOT_CONTROLLER responses in a row (frames 10 to 30, over 1 connection)",
            vec![
                ("frame", Fact::Uint(30)),
                ("error", text("NOT_CONTROLLER")),
                ("count", Fact::Uint(3)),
                ("first_frame", Fact::Uint(10)),
                ("last_frame", Fact::Uint(30)),
                ("connections", Fact::Uint(1)),
            ],
        ),
        (
            Observation::PidErrorStreak(obs::PidErrorStreak {
                broker_id: 1,
                error: "UNKNOWN(-7)",
                count: 2,
                first_frame: 10,
                last_frame: 20,
                connections: 2,
                connections_more: false,
            }),
            "broker 1 got 2 UNKNOWN(-7) responses in a row (frames 10 to 20, over 2 connections)",
            vec![
                ("frame", Fact::Uint(20)),
                ("error", text("UNKNOWN(-7)")),
                ("count", Fact::Uint(2)),
                ("first_frame", Fact::Uint(10)),
                ("last_frame", Fact::Uint(20)),
                ("connections", Fact::Uint(2)),
            ],
        ),
        (
            Observation::PidErrorStreak(obs::PidErrorStreak {
                broker_id: 1,
                error: "NOT_CONTROLLER",
                count: 5000,
                first_frame: 10,
                last_frame: 50000,
                connections: 1024,
                connections_more: true,
            }),
            "broker 1 got 5000 NOT_CONTROLLER responses in a row (frames 10 to 50000, over more than 1024 connections)",
            vec![
                ("frame", Fact::Uint(50000)),
                ("error", text("NOT_CONTROLLER")),
                ("count", Fact::Uint(5000)),
                ("first_frame", Fact::Uint(10)),
                ("last_frame", Fact::Uint(50000)),
                ("connections", Fact::Uint(1024)),
                ("connections_at_least", Fact::Bool(true)),
            ],
        ),
        (
            Observation::PidRetry(obs::PidRetry {
                frame: 20,
                broker_id: 1,
                earlier_frame: 10,
                after: RetryAfter::Error("NOT_CONTROLLER"),
            }),
            "broker 1 asked again (frame 20) after a NOT_CONTROLLER response to its request in frame 10",
            vec![
                ("frame", Fact::Uint(20)),
                ("earlier_frame", Fact::Uint(10)),
                ("error", text("NOT_CONTROLLER")),
            ],
        ),
        (
            Observation::PidRetry(obs::PidRetry {
                frame: 20,
                broker_id: 1,
                earlier_frame: 10,
                after: RetryAfter::NoResponse,
            }),
            "broker 1 asked again (frame 20) after no response to its request in frame 10",
            vec![("frame", Fact::Uint(20)), ("earlier_frame", Fact::Uint(10))],
        ),
        (
            Observation::PidBrokerEpochChange(obs::PidBrokerEpochChange {
                frame: 20,
                broker_id: 1,
                old_epoch: 5,
                new_epoch: 6,
                earlier_frame: 10,
            }),
            "broker 1 changed its epoch from 5 to 6 (frame 20)",
            vec![
                ("frame", Fact::Uint(20)),
                ("old_epoch", Fact::Int(5)),
                ("new_epoch", Fact::Int(6)),
                ("earlier_frame", Fact::Uint(10)),
            ],
        ),
        (
            Observation::PidSlowResponse(obs::PidSlowResponse {
                frame: 21,
                correlation_id: 9,
                latency_ns: 1_234_567_891,
                threshold_us: 100_000.0,
            }),
            "the response to correlation id 9 took 1234.6 ms, above the 100.0 ms threshold",
            vec![
                ("frame", Fact::Uint(21)),
                ("correlation_id", Fact::Int(9)),
                ("latency_us", Fact::Float(1_234_567.891)),
                ("threshold_us", Fact::Float(100_000.0)),
            ],
        ),
    ]
}

fn producer_samples() -> Vec<Sample> {
    let mut samples = duplicate_grant_samples();
    samples.extend(outside_block_samples());
    samples
}

fn duplicate_grant_samples() -> Vec<Sample> {
    let client = |port| SocketAddr::from(([10, 0, 3, 7], port));
    vec![
        (
            Observation::PidDuplicateGrant(obs::PidDuplicateGrant {
                frame: 30,
                producer_id: 1999,
                producer_epoch: 0,
                client: client(40002),
                transactional_id: None,
                transactional_id_len: None,
                other_frame: 20,
                other_client: client(40001),
                other_transactional_id: Some("tx-1"),
                other_transactional_id_len: None,
            }),
            "producer id 1999 epoch 0 was granted to 10.0.3.7:40002 (frame 30) after 10.0.3.7:40001 (transactional id \"tx-1\") got it (frame 20): two producers hold the same id and epoch",
            vec![
                ("frame", Fact::Uint(30)),
                ("producer_id", Fact::Int(1999)),
                ("producer_epoch", Fact::Int(0)),
                ("client", text("10.0.3.7:40002")),
                ("other_frame", Fact::Uint(20)),
                ("other_client", text("10.0.3.7:40001")),
                ("other_transactional_id", text("tx-1")),
            ],
        ),
        (
            Observation::PidDuplicateGrant(obs::PidDuplicateGrant {
                frame: 31,
                producer_id: 1999,
                producer_epoch: 0,
                client: client(40003),
                transactional_id: Some("tx-2"),
                transactional_id_len: None,
                other_frame: 20,
                other_client: client(40001),
                other_transactional_id: None,
                other_transactional_id_len: None,
            }),
            "producer id 1999 epoch 0 was granted to 10.0.3.7:40003 (transactional id \"tx-2\") (frame 31) after 10.0.3.7:40001 got it (frame 20): two producers hold the same id and epoch",
            vec![
                ("frame", Fact::Uint(31)),
                ("producer_id", Fact::Int(1999)),
                ("producer_epoch", Fact::Int(0)),
                ("client", text("10.0.3.7:40003")),
                ("other_frame", Fact::Uint(20)),
                ("other_client", text("10.0.3.7:40001")),
                ("transactional_id", text("tx-2")),
            ],
        ),
        (
            Observation::PidDuplicateGrant(obs::PidDuplicateGrant {
                frame: 32,
                producer_id: 1999,
                producer_epoch: 0,
                client: client(40004),
                transactional_id: Some("tx-a…"),
                transactional_id_len: Some(1_048_576),
                other_frame: 20,
                other_client: client(40001),
                other_transactional_id: Some("tx-b…"),
                other_transactional_id_len: Some(300),
            }),
            "producer id 1999 epoch 0 was granted to 10.0.3.7:40004 (transactional id \"tx-a…\" cut from 1048576 bytes) (frame 32) after 10.0.3.7:40001 (transactional id \"tx-b…\" cut from 300 bytes) got it (frame 20): two producers hold the same id and epoch",
            vec![
                ("frame", Fact::Uint(32)),
                ("producer_id", Fact::Int(1999)),
                ("producer_epoch", Fact::Int(0)),
                ("client", text("10.0.3.7:40004")),
                ("other_frame", Fact::Uint(20)),
                ("other_client", text("10.0.3.7:40001")),
                ("transactional_id", text("tx-a…")),
                ("transactional_id_len", Fact::Uint(1_048_576)),
                ("other_transactional_id", text("tx-b…")),
                ("other_transactional_id_len", Fact::Uint(300)),
            ],
        ),
    ]
}

fn outside_block_samples() -> Vec<Sample> {
    vec![
        (
            Observation::PidOutsideBlocks(obs::PidOutsideBlocks {
                frame: 40,
                broker_id: 2,
                producer_id: 7000,
                placement: "another_brokers_block",
                reason: "in 7000..=7999, the block broker 1 was granted (frame 20), and in none of broker 2's: Kafka brokers grant only from their own blocks",
                blocks: 1,
                last_start: 0,
                last_end: 999,
                block: Some((7000, 7999, 1)),
            }),
            "broker 2 granted producer id 7000 (frame 40) in 7000..=7999, the block broker 1 was granted (frame 20), and in none of broker 2's: Kafka brokers grant only from their own blocks",
            vec![
                ("frame", Fact::Uint(40)),
                ("producer_id", Fact::Int(7000)),
                ("placement", text("another_brokers_block")),
                ("blocks", Fact::Uint(1)),
                ("last_start", Fact::Int(0)),
                ("last_end", Fact::Int(999)),
                ("block_start", Fact::Int(7000)),
                ("block_end", Fact::Int(7999)),
                ("block_broker_id", Fact::Int(1)),
            ],
        ),
        (
            Observation::PidStaleController(obs::PidStaleController {
                frame: 23,
                request_frame: 22,
                controller: addr("127.0.0.1:19093"),
                controller_id: 3001,
                controller_led_epoch: Some(4),
                leader_seen: 3002,
                leader_seen_epoch: 5,
                leader_seen_frame: 18,
                start: 2000,
                len: 1000,
            }),
            "controller 3001 (127.0.0.1:19093) granted 1000 producer ids from 2000 (frame 23) asked for in frame 22, after controller 3002 was seen leading epoch 5 (frame 18); the last epoch it was seen leading is 4: a stale controller handed out a block",
            vec![
                ("frame", Fact::Uint(23)),
                ("request_frame", Fact::Uint(22)),
                ("controller", text("127.0.0.1:19093")),
                ("controller_id", Fact::Int(3001)),
                ("controller_led_epoch", Fact::Int(4)),
                ("leader_seen", Fact::Int(3002)),
                ("leader_seen_epoch", Fact::Int(5)),
                ("leader_seen_frame", Fact::Uint(18)),
                ("start", Fact::Int(2000)),
                ("len", Fact::Int(1000)),
            ],
        ),
    ]
}

fn metadata_log_samples() -> Vec<Sample> {
    let seg = "data/__cluster_metadata-0/00000000000000000000.log";
    vec![
        (
            Observation::MetadataLogTruncated(obs::MetadataLogTruncated {
                path: seg,
                at: 4096,
                needed: 120,
                len: 60,
            }),
            "data/__cluster_metadata-0/00000000000000000000.log: the metadata log ends inside a record batch at byte 4096 (60 of its 120 bytes are there); the batches before it were read",
            vec![
                ("path", text(seg)),
                ("at", Fact::Uint(4096)),
                ("needed", Fact::Uint(120)),
                ("len", Fact::Uint(60)),
            ],
        ),
        (
            Observation::MetadataLogCorrupt(obs::MetadataLogCorrupt {
                path: seg,
                at: 61,
                reason: "CRC-32C 0x1 where the batch holds 0x2",
            }),
            "data/__cluster_metadata-0/00000000000000000000.log: the record batch at byte 61 is corrupt (CRC-32C 0x1 where the batch holds 0x2); the file is read no further",
            vec![
                ("path", text(seg)),
                ("at", Fact::Uint(61)),
                ("reason", text("CRC-32C 0x1 where the batch holds 0x2")),
            ],
        ),
        (
            Observation::MetadataLogLimit(obs::MetadataLogLimit {
                path: seg,
                at: 0,
                reason: "batch of 20971520 bytes, over 16777216",
            }),
            "data/__cluster_metadata-0/00000000000000000000.log: the record batch at byte 0 is over a limit (batch of 20971520 bytes, over 16777216); the file is read no further",
            vec![
                ("path", text(seg)),
                ("at", Fact::Uint(0)),
                ("reason", text("batch of 20971520 bytes, over 16777216")),
            ],
        ),
        (
            Observation::MetadataLogDivergent(obs::MetadataLogDivergent {
                offset: 42,
                kept: "ProducerIdsRecord of epoch 3",
                dropped: "NoOpRecord of epoch 2",
            }),
            "the metadata logs hold different records at offset 42: ProducerIdsRecord of epoch 3 is kept (the higher leader epoch), NoOpRecord of epoch 2 is not",
            vec![
                ("offset", Fact::Int(42)),
                ("kept", text("ProducerIdsRecord of epoch 3")),
                ("dropped", text("NoOpRecord of epoch 2")),
            ],
        ),
    ]
}

fn committed_samples() -> Vec<Sample> {
    vec![
        (
            Observation::PidBlockNotCommitted(obs::PidBlockNotCommitted {
                frame: 31,
                broker_id: 2,
                broker_epoch: 13,
                start: 5000,
                len: 1000,
                log_first_offset: 0,
                log_last_offset: 310,
            }),
            "broker 2 (epoch 13) was delivered 1000 producer ids from 5000 (frame 31), but no ProducerIdsRecord of the metadata log (offsets 0 to 310, which cover that time) commits them: a controller answered from state it had not committed",
            vec![
                ("frame", Fact::Uint(31)),
                ("broker_id", Fact::Int(2)),
                ("broker_epoch", Fact::Int(13)),
                ("start", Fact::Int(5000)),
                ("len", Fact::Int(1000)),
                ("log_first_offset", Fact::Int(0)),
                ("log_last_offset", Fact::Int(310)),
            ],
        ),
        (
            Observation::PidBlockNotDelivered(obs::PidBlockNotDelivered {
                offset: 77,
                time_ms: 1_796_231_640_000,
                broker_id: 1,
                broker_epoch: 21,
                start: Some(6000),
                next_producer_id: 7000,
                request: Some((40, "unanswered")),
            }),
            "the metadata log commits producer ids 6000 to 6999 to broker 1 (epoch 21) at offset 77 (unix ms 1796231640000), but no response in the capture delivers them; the broker's last request before it (frame 40) ended unanswered",
            vec![
                ("offset", Fact::Int(77)),
                ("time_ms", Fact::Int(1_796_231_640_000)),
                ("broker_id", Fact::Int(1)),
                ("broker_epoch", Fact::Int(21)),
                ("start", Fact::Int(6000)),
                ("next_producer_id", Fact::Int(7000)),
                ("request_frame", Fact::Uint(40)),
                ("request_status", text("unanswered")),
            ],
        ),
        (
            Observation::PidBlockMismatch(obs::PidBlockMismatch {
                frame: 50,
                start: 2000,
                len: 1000,
                broker_id: 1,
                broker_epoch: 21,
                offset: 30,
                log_broker_id: 2,
                log_broker_epoch: 13,
                committed_late_ms: Some(2500),
            }),
            "1000 producer ids from 2000 were delivered to broker 1 (epoch 21) at frame 50, but the record at offset 30 commits them to broker 2 (epoch 13) 2500 ms after they were delivered (beyond the clock skew allowed)",
            vec![
                ("frame", Fact::Uint(50)),
                ("start", Fact::Int(2000)),
                ("len", Fact::Int(1000)),
                ("broker_id", Fact::Int(1)),
                ("broker_epoch", Fact::Int(21)),
                ("offset", Fact::Int(30)),
                ("log_broker_id", Fact::Int(2)),
                ("log_broker_epoch", Fact::Int(13)),
                ("committed_late_ms", Fact::Int(2500)),
            ],
        ),
        (
            Observation::PidCommittedOverlap(obs::PidCommittedOverlap {
                offset: 90,
                broker_id: 2,
                start: 3000,
                next_producer_id: 4000,
                previous_offset: 88,
                previous_next_producer_id: 5000,
            }),
            "the ProducerIdsRecord at offset 90 commits producer ids 3000..=3999 to broker 2, below the 5000 the record at offset 88 reached: ids committed twice",
            vec![
                ("offset", Fact::Int(90)),
                ("broker_id", Fact::Int(2)),
                ("start", Fact::Int(3000)),
                ("next_producer_id", Fact::Int(4000)),
                ("previous_offset", Fact::Int(88)),
                ("previous_next_producer_id", Fact::Int(5000)),
            ],
        ),
        (
            Observation::PidCommittedGap(obs::PidCommittedGap {
                offset: 91,
                broker_id: 1,
                next_producer_id: 8000,
                previous_offset: 88,
                previous_next_producer_id: 6000,
                usual_len: 1000,
                missing_start: 6000,
                missing_end: 6999,
            }),
            "no ProducerIdsRecord of the logs read commits producer ids 6000..=6999: the record at offset 91 (broker 1) moves the next producer id from 6000 (offset 88) to 8000, not by Kafka's block of 1000 (records missing from the logs read, or ids skipped)",
            vec![
                ("offset", Fact::Int(91)),
                ("broker_id", Fact::Int(1)),
                ("next_producer_id", Fact::Int(8000)),
                ("previous_offset", Fact::Int(88)),
                ("previous_next_producer_id", Fact::Int(6000)),
                ("usual_len", Fact::Int(1000)),
                ("missing_start", Fact::Int(6000)),
                ("missing_end", Fact::Int(6999)),
            ],
        ),
    ]
}

fn write_rejected_samples() -> Vec<Sample> {
    let client = |host, port| SocketAddr::from(([10, 0, 3, host], port));
    let rejected = obs::WriteRejected {
        frame: 50,
        last_frame: 58,
        producer_id: 2999,
        producer_epoch: 0,
        error: NamedCode {
            code: 45,
            name: "OUT_OF_ORDER_SEQUENCE_NUMBER",
        },
        batches: 3,
        partitions: 2,
        partitions_more: false,
        client: client(1, 40001),
    };
    let rejected_facts = |code: i64, name: &str| {
        vec![
            ("frame", Fact::Uint(50)),
            ("last_frame", Fact::Uint(58)),
            ("producer_id", Fact::Int(2999)),
            ("producer_epoch", Fact::Int(0)),
            ("error_code", Fact::Int(code)),
            ("error", text(name)),
            ("batches", Fact::Uint(3)),
            ("partitions", Fact::Uint(2)),
            ("client", text("10.0.3.1:40001")),
        ]
    };
    vec![
        (
            Observation::WriteOutOfSequence(rejected),
            "3 batches of producer id 2999 epoch 0 from 10.0.3.1:40001 to 2 partitions answered OUT_OF_ORDER_SEQUENCE_NUMBER (frames 50 to 58)",
            rejected_facts(45, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        ),
        (
            Observation::WriteFenced(obs::WriteRejected {
                error: NamedCode {
                    code: 47,
                    name: "INVALID_PRODUCER_EPOCH",
                },
                ..rejected
            }),
            "3 batches of producer id 2999 epoch 0 from 10.0.3.1:40001 to 2 partitions answered INVALID_PRODUCER_EPOCH (frames 50 to 58)",
            rejected_facts(47, "INVALID_PRODUCER_EPOCH"),
        ),
        (
            Observation::WriteFenced(obs::WriteRejected {
                error: NamedCode {
                    code: 90,
                    name: "PRODUCER_FENCED",
                },
                partitions: 1024,
                partitions_more: true,
                ..rejected
            }),
            "3 batches of producer id 2999 epoch 0 from 10.0.3.1:40001 to at least 1024 partitions answered PRODUCER_FENCED (frames 50 to 58)",
            vec![
                ("frame", Fact::Uint(50)),
                ("last_frame", Fact::Uint(58)),
                ("producer_id", Fact::Int(2999)),
                ("producer_epoch", Fact::Int(0)),
                ("error_code", Fact::Int(90)),
                ("error", text("PRODUCER_FENCED")),
                ("batches", Fact::Uint(3)),
                ("partitions", Fact::Uint(1024)),
                ("partitions_at_least", Fact::Bool(true)),
                ("client", text("10.0.3.1:40001")),
            ],
        ),
        (
            Observation::WriteOutOfSequence(obs::WriteRejected {
                batches: 2000,
                partitions: 1024,
                partitions_more: true,
                ..rejected
            }),
            "2000 batches of producer id 2999 epoch 0 from 10.0.3.1:40001 to at least 1024 partitions answered OUT_OF_ORDER_SEQUENCE_NUMBER (frames 50 to 58)",
            vec![
                ("frame", Fact::Uint(50)),
                ("last_frame", Fact::Uint(58)),
                ("producer_id", Fact::Int(2999)),
                ("producer_epoch", Fact::Int(0)),
                ("error_code", Fact::Int(45)),
                ("error", text("OUT_OF_ORDER_SEQUENCE_NUMBER")),
                ("batches", Fact::Uint(2000)),
                ("partitions", Fact::Uint(1024)),
                ("partitions_at_least", Fact::Bool(true)),
                ("client", text("10.0.3.1:40001")),
            ],
        ),
    ]
}

fn write_samples() -> Vec<Sample> {
    let client = |host, port| SocketAddr::from(([10, 0, 3, host], port));
    vec![
        (
            Observation::WriteNotAppended(obs::WriteNotAppended {
                frame: 41,
                request_frame: 40,
                topic: "orders",
                partition: 3,
                producer_id: 2999,
                producer_epoch: 0,
                first_sequence: 0,
                last_sequence: 4,
                offset: 120,
                client: client(2, 40002),
                client_id: Some("shared-b"),
                other_frame: 21,
                other_client: client(1, 40001),
                other_client_id: None,
            }),
            "a batch of producer id 2999 epoch 0 (sequences 0-4) to orders partition 3 from 10.0.3.2:40002 (client id \"shared-b\") was acknowledged at offset 120 (frame 41), where the batch 10.0.3.1:40001 wrote with the same producer id, epoch and sequences but other records was appended (frame 21): the broker took it for a retry and did not append it",
            vec![
                ("frame", Fact::Uint(41)),
                ("request_frame", Fact::Uint(40)),
                ("topic", text("orders")),
                ("partition", Fact::Int(3)),
                ("producer_id", Fact::Int(2999)),
                ("producer_epoch", Fact::Int(0)),
                ("first_sequence", Fact::Int(0)),
                ("last_sequence", Fact::Int(4)),
                ("offset", Fact::Int(120)),
                ("client", text("10.0.3.2:40002")),
                ("client_id", text("shared-b")),
                ("other_frame", Fact::Uint(21)),
                ("other_client", text("10.0.3.1:40001")),
            ],
        ),
        (
            Observation::WriteNotAppended(obs::WriteNotAppended {
                frame: 45,
                request_frame: 44,
                topic: "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
                partition: 0,
                producer_id: 7,
                producer_epoch: 2,
                first_sequence: 9,
                last_sequence: 9,
                offset: 33,
                client: client(2, 40002),
                client_id: None,
                other_frame: 30,
                other_client: client(1, 40001),
                other_client_id: Some("shared-a"),
            }),
            "a batch of producer id 7 epoch 2 (sequence 9) to 0a1b2c3d4e5f60718293a4b5c6d7e8f9 partition 0 from 10.0.3.2:40002 was acknowledged at offset 33 (frame 45), where the batch 10.0.3.1:40001 (client id \"shared-a\") wrote with the same producer id, epoch and sequences but other records was appended (frame 30): the broker took it for a retry and did not append it",
            vec![
                ("frame", Fact::Uint(45)),
                ("request_frame", Fact::Uint(44)),
                ("topic", text("0a1b2c3d4e5f60718293a4b5c6d7e8f9")),
                ("partition", Fact::Int(0)),
                ("producer_id", Fact::Int(7)),
                ("producer_epoch", Fact::Int(2)),
                ("first_sequence", Fact::Int(9)),
                ("last_sequence", Fact::Int(9)),
                ("offset", Fact::Int(33)),
                ("client", text("10.0.3.2:40002")),
                ("other_frame", Fact::Uint(30)),
                ("other_client", text("10.0.3.1:40001")),
                ("other_client_id", text("shared-a")),
            ],
        ),
        (
            Observation::WriteSharedProducer(obs::WriteSharedProducer {
                frame: 40,
                producer_id: 2999,
                producer_epoch: 0,
                client: client(2, 40002),
                client_id: Some("shared-b"),
                other_frame: 20,
                other_client: client(1, 40001),
                other_client_id: Some("shared-a"),
                why: obs::TwoWriters::ClientIds,
            }),
            "producer id 2999 epoch 0 writes from two producers, 10.0.3.2:40002 (client id \"shared-b\") (frame 40) and 10.0.3.1:40001 (client id \"shared-a\") (frame 20): their client ids differ; the broker keeps one sequence per producer id and partition, so it judges their batches as one producer's",
            vec![
                ("frame", Fact::Uint(40)),
                ("producer_id", Fact::Int(2999)),
                ("producer_epoch", Fact::Int(0)),
                ("client", text("10.0.3.2:40002")),
                ("client_id", text("shared-b")),
                ("other_frame", Fact::Uint(20)),
                ("other_client", text("10.0.3.1:40001")),
                ("other_client_id", text("shared-a")),
                ("evidence", text("client_ids")),
            ],
        ),
    ]
}

fn samples() -> Vec<Sample> {
    [
        write_samples(),
        write_rejected_samples(),
        metadata_log_samples(),
        committed_samples(),
        producer_samples(),
        capture_samples(),
        packet_samples(),
        tcp_samples(),
        kafka_samples(),
        kafka_message_samples(),
        connection_samples(),
        block_samples(),
        block_finding_samples(),
        broker_samples(),
    ]
    .concat()
}

#[test]
fn every_variant_writes_its_sample_sentence_and_facts() {
    for (what, sentence, facts) in samples() {
        assert_eq!(what.to_string(), sentence, "{what:?}");
        assert_eq!(what.facts(), facts, "{what:?}");
    }
}

#[test]
fn every_kind_has_an_observation() {
    let samples = samples();
    for kind in Kind::ALL {
        assert!(
            samples.iter().any(|(what, _, _)| what.kind() == kind),
            "no observation of kind {}",
            kind.as_str()
        );
    }
}

/// Every fact an observation gives is declared for its kind with its type, and every
/// declared fact is given by some sample, but those the analysis adds to findings.
#[test]
fn every_fact_is_declared_for_its_kind() {
    use crate::diag::facts::FactType;
    const ADDED_BY_ANALYSIS: [&str; 6] = [
        "fault_frame",
        "affected_producers",
        "affected_producers_at_least",
        "affected_hosts",
        "affected_host_count",
        "affected_host_count_at_least",
    ];
    let samples = samples();
    for (what, _, facts) in &samples {
        let kind = what.kind();
        for (name, fact) in facts {
            assert!(
                kind.declared_facts().contains(&(*name, FactType::of(fact))),
                "{}: {name} {:?} is not declared",
                kind.as_str(),
                FactType::of(fact)
            );
        }
    }
    for kind in Kind::ALL {
        for (name, _) in kind.declared_facts() {
            let given = samples
                .iter()
                .filter(|(what, _, _)| what.kind() == kind)
                .any(|(_, _, facts)| facts.iter().any(|(n, _)| n == name));
            assert!(
                given || ADDED_BY_ANALYSIS.contains(name),
                "{}: {name} is declared, and no sample gives it",
                kind.as_str()
            );
        }
    }
}
