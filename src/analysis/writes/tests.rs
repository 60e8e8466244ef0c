//! The writes analysis on hand-made Produce exchanges: Kafka's duplicate rule replayed,
//! two producers of one id told apart from one producer's reconnection, refusals grouped.

use super::*;
use crate::diag::Kind;
use crate::kafka::produce::request::Request;
use crate::kafka::produce::response::{Response, TopicResponse};
use crate::kafka::schema::{RequestHeader, ResponseHeader};
use crate::pairing::{Endpoints, MessageMeta};

/// A writer: its connection, client address and client id.
#[derive(Clone, Copy)]
struct Client {
    connection: u64,
    client: &'static str,
    client_id: &'static str,
}

const A: Client = Client {
    connection: 1,
    client: "10.0.0.1:40001",
    client_id: "shared-a",
};
const B: Client = Client {
    connection: 2,
    client: "10.0.0.2:40002",
    client_id: "shared-b",
};
const BROKER: &str = "10.0.0.9:9092";

fn meta(frame: u64) -> MessageMeta {
    MessageMeta {
        frame,
        first_frame: frame,
        timestamp: Timestamp {
            secs: frame as i64,
            nanos: 0,
            nano: false,
        },
        size: 100,
        origin: None,
    }
}

/// One batch of one record: producer id, epoch, sequence, CRC.
fn batch(pid: i64, epoch: i16, seq: i32, crc: u32) -> BatchHeader {
    BatchHeader {
        base_offset: 0,
        size: 70,
        magic: 2,
        crc: Some(crc),
        attributes: Some(0),
        last_offset_delta: Some(0),
        max_timestamp: Some(0),
        producer_id: Some(pid),
        producer_epoch: Some(epoch),
        base_sequence: Some(seq),
        records_count: Some(1),
    }
}

/// A write of `batch` to partition `partition` of topic `t` by `who`, sent at `frame`
/// and answered at `frame + 1` with `error` and `offset`.
fn write(
    who: Client,
    frame: u64,
    partition: i32,
    batch: BatchHeader,
    answer: (i16, i64),
) -> WriteExchange {
    let request = Request {
        header: RequestHeader {
            client_id: Some(Some(who.client_id.into())),
            tagged_fields: None,
        },
        transactional_id: Some(None),
        acks: Some(-1),
        timeout_ms: Some(30_000),
        topics: vec![TopicData {
            name: Some("t".into()),
            topic_id: None,
            partitions: vec![PartitionData {
                index: partition,
                records_len: Some(batch.size),
                batches: vec![batch],
                complete: true,
            }],
        }],
        problem: None,
        bytes_not_captured: None,
    };
    let response = Response {
        header: ResponseHeader::default(),
        topics: vec![TopicResponse {
            name: Some("t".into()),
            topic_id: None,
            partitions: vec![PartitionResponse {
                index: partition,
                error_code: ErrorCode(answer.0),
                base_offset: answer.1,
                log_append_time_ms: Some(-1),
                log_start_offset: Some(0),
                record_errors: Vec::new(),
                error_message: Some(None),
                current_leader: None,
            }],
        }],
        throttle_time_ms: Some(0),
        problem: None,
        bytes_not_captured: None,
        raw: Vec::new(),
    };
    WriteExchange {
        endpoints: Endpoints {
            connection: who.connection,
            client: who.client.parse().unwrap(),
            server: BROKER.parse().unwrap(),
        },
        correlation_id: frame as i32,
        api_version: 11,
        request_meta: meta(frame),
        request: Box::new(request),
        outcome: Outcome::Complete {
            meta: meta(frame + 1),
            response: Box::new(response),
        },
    }
}

fn run(writes: &[WriteExchange]) -> (Tracker, Vec<Finding>) {
    let mut tracker = Tracker::default();
    let mut findings = Vec::new();
    for w in writes {
        tracker.add(w, &mut findings);
    }
    tracker.finish(&mut findings);
    (tracker, findings)
}

fn kinds(findings: &[Finding]) -> Vec<Kind> {
    findings.iter().map(|f| f.kind).collect()
}

/// KAFKA-20031's outcome: B holds A's producer id and epoch; its first batch repeats the
/// sequence of A's first, so the broker answers it with A's offset and appends nothing.
#[test]
fn a_batch_acknowledged_at_another_batchs_offset_was_not_appended() {
    let writes = [
        write(A, 10, 0, batch(2999, 0, 0, 0xa0), (0, 100)),
        write(A, 12, 0, batch(2999, 0, 1, 0xa1), (0, 101)),
        write(B, 20, 0, batch(2999, 0, 0, 0xb0), (0, 100)),
    ];
    let (tracker, findings) = run(&writes);
    assert_eq!(
        kinds(&findings),
        [Kind::WriteSharedProducer, Kind::WriteNotAppended]
    );
    let lost = &findings[1];
    assert_eq!(lost.frames, [11, 20, 21]);
    assert!(
        lost.message
            .contains("acknowledged at offset 100 (frame 21)"),
        "{}",
        lost.message
    );
    assert!(
        lost.message
            .contains("10.0.0.1:40001 (client id \"shared-a\")"),
        "{}",
        lost.message
    );
    let shared = &findings[0];
    assert!(
        shared.message.contains("their client ids differ"),
        "{}",
        shared.message
    );
    let totals = tracker.totals();
    assert_eq!((totals.not_appended, totals.retries_deduplicated), (1, 1));
    assert_eq!((totals.acknowledged, totals.producers), (3, 1));
}

/// A producer's own retry resends the same bytes: taken for a retry, as it is.
#[test]
fn a_real_retry_is_counted_not_found() {
    let writes = [
        write(A, 10, 0, batch(7, 0, 0, 0xa0), (0, 100)),
        write(A, 14, 0, batch(7, 0, 0, 0xa0), (0, 100)),
    ];
    let (tracker, findings) = run(&writes);
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(tracker.totals().retries_deduplicated, 1);
    assert_eq!(tracker.totals().not_appended, 0);
}

/// The broker keeps the last 5 batches per producer id and partition, and forgets them
/// when the epoch changes: a range it no longer holds is not judged against.
#[test]
fn only_the_last_five_batches_of_the_epoch_are_judged_against() {
    let mut writes: Vec<WriteExchange> = (0..6)
        .map(|seq| {
            write(
                A,
                10 + 2 * seq as u64,
                0,
                batch(7, 0, seq, 0xa0 + seq as u32),
                (0, 100 + i64::from(seq)),
            )
        })
        .collect();
    // sequence 0 at offset 100 left the cache when sequence 5 came
    writes.push(write(B, 40, 0, batch(7, 0, 0, 0xb0), (0, 100)));
    // a new epoch clears the cache: sequence 1 of epoch 0 is not known there
    writes.push(write(A, 42, 1, batch(7, 1, 0, 0xc0), (0, 500)));
    writes.push(write(A, 44, 1, batch(7, 0, 0, 0xc1), (0, 500)));
    let (tracker, findings) = run(&writes);
    assert!(
        !kinds(&findings).contains(&Kind::WriteNotAppended),
        "{findings:?}"
    );
    assert_eq!(tracker.totals().not_appended, 0);
}

/// One producer that reconnects to a broker writes over two connections one after the
/// other: one producer. Two connections to one broker at once are two producers.
#[test]
fn a_reconnection_is_one_producer_and_interleaved_connections_are_two() {
    let again = Client {
        connection: 3,
        client: "10.0.0.1:40009",
        ..A
    };
    let writes = [
        write(A, 10, 0, batch(7, 0, 0, 1), (0, 100)),
        write(again, 20, 0, batch(7, 0, 1, 2), (0, 101)),
    ];
    let (_, findings) = run(&writes);
    assert!(findings.is_empty(), "{findings:?}");

    let writes = [
        write(A, 10, 0, batch(7, 0, 0, 1), (0, 100)),
        write(again, 20, 1, batch(7, 0, 0, 2), (0, 200)),
        write(A, 30, 0, batch(7, 0, 1, 3), (0, 101)),
    ];
    let (_, findings) = run(&writes);
    assert_eq!(kinds(&findings), [Kind::WriteSharedProducer]);
    assert!(
        findings[0].message.contains("two connections at once"),
        "{}",
        findings[0].message
    );
}

/// Refusals are grouped per producer id, epoch and error: sequence errors warn, a fenced
/// producer is told, other errors are only counted.
#[test]
fn refused_batches_are_grouped_by_producer_and_error() {
    let writes = [
        write(A, 10, 0, batch(7, 0, 5, 1), (45, -1)),
        write(A, 12, 1, batch(7, 0, 9, 2), (45, -1)),
        write(A, 14, 0, batch(8, 2, 0, 3), (47, -1)),
        write(A, 16, 0, batch(9, 0, 0, 4), (51, -1)),
    ];
    let (tracker, findings) = run(&writes);
    assert_eq!(
        kinds(&findings),
        [Kind::WriteOutOfSequence, Kind::WriteFenced]
    );
    assert!(
        findings[0].message.starts_with("2 batches of producer id 7 epoch 0 from 10.0.0.1:40001 to 2 partitions answered OUT_OF_ORDER_SEQUENCE_NUMBER (frames 11 to 13)"),
        "{}",
        findings[0].message
    );
    let totals = tracker.totals();
    assert_eq!(totals.rejected, 4);
    assert_eq!(totals.errors.get(&ErrorCode(51)), Some(&1));
}

/// Batches without a producer id are counted, never judged.
#[test]
fn batches_without_a_producer_id_are_only_counted() {
    let writes = [
        write(A, 10, 0, batch(-1, -1, -1, 1), (0, 100)),
        write(B, 12, 0, batch(-1, -1, -1, 2), (0, 100)),
    ];
    let (tracker, findings) = run(&writes);
    assert!(findings.is_empty());
    assert_eq!(
        (
            tracker.totals().batches,
            tracker.totals().idempotent_batches
        ),
        (2, 0)
    );
    assert_eq!(tracker.totals().producers, 0);
}

/// From Produce version 13 a request names its topics by id: a Metadata response's name
/// for that id names it in the findings and the rows; without one, the id does.
#[test]
fn a_topic_named_by_id_takes_the_name_a_metadata_response_gave() {
    let by_id = |mut w: WriteExchange| {
        let topic = &mut w.request.topics[0];
        (topic.name, topic.topic_id) = (None, Some([7; 16]));
        let Outcome::Complete { response, .. } = &mut w.outcome else {
            unreachable!("answered");
        };
        let answer = &mut response.topics[0];
        (answer.name, answer.topic_id) = (None, Some([7; 16]));
        w
    };
    let writes = [
        by_id(write(A, 10, 0, batch(7, 0, 0, 1), (0, 100))),
        by_id(write(B, 12, 0, batch(7, 0, 0, 2), (0, 100))),
    ];
    let (_, findings) = run(&writes);
    let lost = findings
        .iter()
        .find(|f| f.kind == Kind::WriteNotAppended)
        .unwrap();
    assert!(
        lost.message
            .contains(&format!("to {} partition 0", "07".repeat(16))),
        "{}",
        lost.message
    );

    let mut tracker = Tracker::default();
    assert_eq!(tracker.topic_names(&[([7; 16], "orders".to_owned())]), None);
    let mut findings = Vec::new();
    let judged = tracker.add(&writes[0], &mut findings);
    assert_eq!(judged.topic_names, [Some("orders".to_owned())]);
    tracker.add(&writes[1], &mut findings);
    let lost = findings
        .iter()
        .find(|f| f.kind == Kind::WriteNotAppended)
        .unwrap();
    assert!(
        lost.message.contains("to orders partition 0"),
        "{}",
        lost.message
    );
}

/// The states are bounded: past [`MAX_STATES`] partitions and producer ids, what is new
/// is counted, not judged, and an `analysis_limit` says so once.
#[test]
fn partition_states_past_the_limit_are_counted_not_judged() {
    let mut tracker = Tracker::default();
    let mut findings = Vec::new();
    let n = MAX_STATES as i32 + 2;
    for partition in 0..n {
        let ex = write(A, 10, partition, batch(7, 0, 0, 1), (0, 100));
        tracker.add(&ex, &mut findings);
    }
    let limits: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.kind == Kind::AnalysisLimit)
        .collect();
    assert_eq!(limits.len(), 1, "said once");
    assert!(limits[0]
        .message
        .contains("more than 65536 partitions and producer ids"));
    // a write to a partition not followed is acknowledged, not judged
    let judged = tracker.add(
        &write(B, 20, n - 1, batch(7, 0, 0, 2), (0, 100)),
        &mut findings,
    );
    assert_eq!(judged.batches[0].outcome, WriteOutcome::Acknowledged);
    assert_eq!(tracker.totals().acknowledged, n as u64 + 1);
}

/// Past its share of `--max-memory`, the writes analysis forgets the states written
/// least recently, keeps those of a producer id two producers wrote, and says so.
#[test]
fn past_its_share_the_least_recently_written_states_are_forgotten() {
    let share = 256 << 10;
    let mut tracker = Tracker::default();
    tracker.set_max_bytes(share);
    let mut findings = Vec::new();
    // A and B share producer id 2999 on partition 0
    tracker.add(
        &write(A, 10, 0, batch(2999, 0, 0, 0xa0), (0, 100)),
        &mut findings,
    );
    tracker.add(
        &write(B, 12, 0, batch(2999, 0, 1, 0xb1), (0, 101)),
        &mut findings,
    );
    assert_eq!(kinds(&findings), [Kind::WriteSharedProducer]);
    // then 4,000 other producer ids, each on a partition of its own
    for i in 0..4000u16 {
        let frame = 20 + 2 * u64::from(i);
        let pid = 10_000 + i64::from(i);
        let ex = write(A, frame, 1 + i32::from(i), batch(pid, 0, 0, 1), (0, 7));
        tracker.add(&ex, &mut findings);
        assert!(tracker.held_bytes() <= share + share / 4, "{i}");
    }
    let forgot: Vec<&Finding> = findings
        .iter()
        .filter(|f| {
            f.message
                .contains("held more than its share of --max-memory")
        })
        .collect();
    assert!(!forgot.is_empty(), "{:?}", kinds(&findings));
    assert!(forgot.iter().all(|f| f.kind == Kind::AnalysisLimit));
    assert!(forgot[0].message.contains("(262144 bytes, a sixteenth)"));
    // the shared producer's state was kept: B's batch at A's offset is found
    let late = write(B, 9000, 0, batch(2999, 0, 0, 0xb0), (0, 100));
    let judged = tracker.add(&late, &mut findings);
    assert_eq!(judged.batches[0].outcome, WriteOutcome::NotAppended);
    // the first other producer's state was forgotten: judged as at the capture's start
    let again = write(B, 9002, 1, batch(10_000, 0, 0, 2), (0, 7));
    let judged = tracker.add(&again, &mut findings);
    assert_eq!(judged.batches[0].outcome, WriteOutcome::Appended);
    // the last one's was not
    let last = write(B, 9004, 4000, batch(13_999, 0, 0, 2), (0, 7));
    let judged = tracker.add(&last, &mut findings);
    assert_eq!(judged.batches[0].outcome, WriteOutcome::NotAppended);
}

/// The writers of producer ids, the topic names and the listed batches each stop growing
/// at their part of the share, and say so.
#[test]
fn writers_past_their_part_of_the_share_are_not_followed() {
    let share = 64 << 10;
    let mut tracker = Tracker::default();
    tracker.set_max_bytes(share);
    let mut findings = Vec::new();
    for i in 0..2000u16 {
        let frame = 20 + 2 * u64::from(i);
        let ex = write(A, frame, 0, batch(10_000 + i64::from(i), 0, 0, 1), (0, 7));
        tracker.add(&ex, &mut findings);
    }
    let limit = findings
        .iter()
        .find(|f| f.message.contains("producer ids and epochs wrote"))
        .expect("the writers' limit is said");
    assert!(tracker.writers_bytes() <= share / 4 + 1024);
    let followed = tracker.totals().producers;
    assert!(followed < 2000 && followed > 10, "{followed}");
    assert!(
        limit
            .message
            .contains(&format!("more than {followed} producer ids")),
        "{}",
        limit.message
    );
}

/// A producer id two producers wrote is listed with each writer's partitions (at most
/// 64, then `partitions_more`), its sequence ranges and outcomes, and the grants of the
/// id; one no one shared, never appended or refused is not listed.
#[test]
fn producers_of_interest_list_their_writers_partitions_and_grants() {
    let mut tracker = Tracker::default();
    let mut findings = Vec::new();
    tracker.granted(2999, 3);
    tracker.granted(2999, 3);
    tracker.granted(7, 5);
    for partition in 0..70 {
        let frame = 10 + 2 * partition as u64;
        let ex = write(
            A,
            frame,
            partition,
            batch(2999, 0, partition, 0xa0),
            (0, 100),
        );
        tracker.add(&ex, &mut findings);
    }
    tracker.add(
        &write(A, 200, 0, batch(2999, 0, 1, 0xa1), (0, 101)),
        &mut findings,
    );
    tracker.add(
        &write(B, 202, 0, batch(2999, 0, 0, 0xb0), (0, 100)),
        &mut findings,
    );
    tracker.add(
        &write(A, 204, 1, batch(7, 0, 0, 0xa0), (0, 5)),
        &mut findings,
    );
    let (listed, more) = tracker.producers_of_interest();
    assert_eq!(more, 0);
    assert_eq!(listed.len(), 1, "{listed:?}");
    let p = &listed[0];
    assert_eq!((p.producer_id, p.producer_epoch), (2999, 0));
    assert_eq!((p.shared, p.not_appended, p.refused), (true, 1, 0));
    assert_eq!(p.grant_frames, [3]);
    assert_eq!(p.writers.len(), 2);
    let a = &p.writers[0];
    assert_eq!(a.client_id.as_deref(), Some("shared-a"));
    assert_eq!((a.partitions.len(), a.partitions_more), (64, true));
    let zero = &a.partitions[0];
    assert_eq!((zero.topic.as_str(), zero.partition), ("t", 0));
    assert_eq!((zero.first_sequence, zero.last_sequence), (0, 1));
    assert_eq!((zero.batches, zero.appended), (2, 2));
    let b = &p.writers[1];
    assert_eq!((b.first_frame, b.last_frame), (202, 202));
    assert_eq!(b.partitions.len(), 1);
    assert_eq!(
        (b.partitions[0].batches, b.partitions[0].not_appended),
        (1, 1)
    );
}

/// At the default `--max-memory` (256 MiB), the writers' part of the share holds the
/// grants of the busiest real capture's producer ids (3.9.1-steady: 42,000, each granted
/// once).
#[test]
fn the_grants_of_a_busy_cluster_fit_the_writers_part_of_the_default_share() {
    let mut tracker = Tracker::default();
    tracker.set_max_bytes(share_of(256 << 20));
    for id in 0..42_000i64 {
        assert_eq!(tracker.granted(id, 10 + id as u64), None, "{id}");
    }
    assert!(tracker.writers_bytes() <= share_of(256 << 20) / 4);
}

/// Grants are remembered for at most [`MAX_PRODUCERS`] producer ids: the first refused
/// says how many are held, once; grants of ids already held still count.
#[test]
fn grants_past_the_limit_are_said_once() {
    let mut tracker = Tracker::default();
    for id in 0..MAX_PRODUCERS as i64 {
        assert_eq!(tracker.granted(id, 10), None);
    }
    assert_eq!(tracker.granted(-5, 11), Some(MAX_PRODUCERS));
    assert_eq!(tracker.granted(-6, 12), None);
    assert_eq!(tracker.granted(7, 13), None);
}
