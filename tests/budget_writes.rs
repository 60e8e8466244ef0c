//! The writes analysis's state against `--max-memory` (issue 42): what it holds is charged
//! at least what it takes on the heap, and a capture of many producer ids writing with long
//! client ids, beside connections whose requests are never answered, stays within the
//! promise (README "Hostile input") at 16, 64 and 256 MiB, forgetting what was written
//! least recently and saying so.

#[path = "it/common.rs"]
mod common;
#[path = "support/counting.rs"]
mod counting;

use common::*;
use counting::held_now;
use std::path::Path;

use pidshark::analysis::writes::Tracker;
use pidshark::kafka::produce::batch::BatchHeader;
use pidshark::kafka::produce::request::{PartitionData, Request, TopicData};
use pidshark::kafka::produce::response::{PartitionResponse, Response, TopicResponse};
use pidshark::kafka::schema::{RequestHeader, ResponseHeader};
use pidshark::kafka::tables::ErrorCode;
use pidshark::pairing::{Endpoints, MessageMeta, Outcome, WriteExchange};
use pidshark::timestamp::Timestamp;

/// What pidshark holds beyond the budget: README "Hostile input".
const BEYOND_BUDGET_MIB: u64 = 32;

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

/// A write by client `client` (its id `client_id`) of one batch of producer id `pid` to
/// each of `partitions` of `topic`, answered with success.
fn write(
    client: u32,
    client_id: &str,
    topic: &str,
    partitions: std::ops::Range<i32>,
    pid: i64,
) -> WriteExchange {
    let batch = |seq| BatchHeader {
        base_offset: 0,
        size: 70,
        magic: 2,
        crc: Some(seq as u32),
        attributes: Some(0),
        last_offset_delta: Some(0),
        max_timestamp: Some(0),
        producer_id: Some(pid),
        producer_epoch: Some(0),
        base_sequence: Some(seq),
        records_count: Some(1),
    };
    let request = Request {
        header: RequestHeader {
            client_id: Some(Some(client_id.into())),
            tagged_fields: None,
        },
        transactional_id: Some(None),
        acks: Some(-1),
        timeout_ms: Some(30_000),
        topics: vec![TopicData {
            name: Some(topic.to_owned()),
            topic_id: None,
            partitions: partitions
                .clone()
                .map(|index| PartitionData {
                    index,
                    records_len: Some(70),
                    batches: vec![batch(index)],
                    complete: true,
                })
                .collect(),
        }],
        problem: None,
        bytes_not_captured: None,
    };
    let response = Response {
        header: ResponseHeader::default(),
        topics: vec![TopicResponse {
            name: Some(topic.to_owned()),
            topic_id: None,
            partitions: partitions
                .map(|index| PartitionResponse {
                    index,
                    error_code: ErrorCode(0),
                    base_offset: 40,
                    log_append_time_ms: Some(-1),
                    log_start_offset: Some(0),
                    record_errors: Vec::new(),
                    error_message: Some(None),
                    current_leader: None,
                })
                .collect(),
        }],
        throttle_time_ms: Some(0),
        problem: None,
        bytes_not_captured: None,
        raw: Vec::new(),
    };
    WriteExchange {
        endpoints: Endpoints {
            connection: u64::from(client),
            client: format!("10.9.{}.{}:40000", client / 256, client % 256)
                .parse()
                .unwrap(),
            server: "10.0.0.2:9092".parse().unwrap(),
        },
        correlation_id: 1,
        api_version: 9,
        request_meta: meta(2 * u64::from(client)),
        request: Box::new(request),
        outcome: Outcome::Complete {
            meta: meta(2 * u64::from(client) + 1),
            response: Box::new(response),
        },
    }
}

/// What the writes analysis is charged is at least what it takes on the heap, and not
/// far past it: producers with short and long client ids and topic names, on one
/// partition and on many.
#[test]
fn the_writes_analysis_is_charged_what_it_holds() {
    for (id_len, name_len, partitions, producers) in [
        (8, 5, 1, 3000),
        (300, 40, 1, 1000),
        (8, 5, 20, 300),
        (2000, 200, 3, 200),
    ] {
        let client_id = "c".repeat(id_len);
        let topic = "t".repeat(name_len);
        let writes: Vec<WriteExchange> = (0..producers)
            .map(|i| write(i, &client_id, &topic, 0..partitions, 1000 + i64::from(i)))
            .collect();
        let mut findings = Vec::with_capacity(1000);
        let before = held_now();
        let mut tracker = Tracker::default();
        for i in 0..producers {
            // each producer id granted as it is in a capture, before it writes
            assert_eq!(tracker.granted(1000 + i64::from(i), u64::from(i)), None);
        }
        for w in &writes {
            drop(tracker.add(w, &mut findings));
        }
        let taken = (held_now() - before) as usize;
        let charged = tracker.held_bytes();
        eprintln!("{id_len}/{name_len}/{partitions}/{producers}: taken {taken}, charged {charged}");
        assert!(findings.is_empty(), "{findings:?}");
        assert!(charged >= taken, "charged {charged} < taken {taken}");
        assert!(
            charged <= taken + taken / 2,
            "charged {charged}, taken {taken}"
        );
    }
}

/// A Produce v3 request of producer id `pid`: one batch header (61 bytes, one record,
/// the record not written) to each of `partitions` of `topic`.
fn produce_request(corr: i32, client_id: &str, topic: &str, partitions: i32, pid: i64) -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend(0i16.to_be_bytes());
    msg.extend(3i16.to_be_bytes());
    msg.extend(corr.to_be_bytes());
    msg.extend((client_id.len() as i16).to_be_bytes());
    msg.extend(client_id.as_bytes());
    msg.extend((-1i16).to_be_bytes()); // no transactional id
    msg.extend((-1i16).to_be_bytes()); // acks all
    msg.extend(30_000i32.to_be_bytes());
    msg.extend(1i32.to_be_bytes());
    msg.extend((topic.len() as i16).to_be_bytes());
    msg.extend(topic.as_bytes());
    msg.extend(partitions.to_be_bytes());
    for index in 0..partitions {
        msg.extend(index.to_be_bytes());
        msg.extend(61i32.to_be_bytes());
        msg.extend(0i64.to_be_bytes()); // base offset
        msg.extend(49i32.to_be_bytes()); // batch length
        msg.extend((-1i32).to_be_bytes());
        msg.push(2); // magic
        msg.extend((index as u32).to_be_bytes()); // crc
        msg.extend(0i16.to_be_bytes()); // attributes
        msg.extend(0i32.to_be_bytes()); // last offset delta
        msg.extend(1_700_000_000_000i64.to_be_bytes());
        msg.extend(1_700_000_000_000i64.to_be_bytes());
        msg.extend(pid.to_be_bytes());
        msg.extend(0i16.to_be_bytes()); // epoch
        msg.extend(index.to_be_bytes()); // base sequence
        msg.extend(1i32.to_be_bytes()); // records
    }
    framed(&msg)
}

/// Its Produce v3 response: success at offset 40 on every partition.
fn produce_response(corr: i32, topic: &str, partitions: i32) -> Vec<u8> {
    let mut body = 1i32.to_be_bytes().to_vec();
    body.extend((topic.len() as i16).to_be_bytes());
    body.extend(topic.as_bytes());
    body.extend(partitions.to_be_bytes());
    for index in 0..partitions {
        body.extend(index.to_be_bytes());
        body.extend(0i16.to_be_bytes());
        body.extend(40i64.to_be_bytes());
        body.extend((-1i64).to_be_bytes());
    }
    body.extend(0i32.to_be_bytes()); // throttle time
    response(corr, false, &body)
}

/// Requests of ApiVersions v0 never answered, correlation ids from 1: they wait.
fn unanswered(count: i32) -> Vec<u8> {
    let mut out = Vec::new();
    for corr in 1..=count {
        let mut msg = 18i16.to_be_bytes().to_vec();
        msg.extend(0i16.to_be_bytes());
        msg.extend(corr.to_be_bytes());
        msg.extend((-1i16).to_be_bytes());
        out.extend(framed(&msg));
    }
    out
}

/// Shape (f): 600 producer ids, each with a client id of 2,000 bytes, writing a batch to
/// each of 100 partitions (60,000 partition-and-producer states, some 300 MB to hold
/// them all with their writers), then 4,000 connections whose requests are never
/// answered, then the clean exchange.
fn writes_capture(dir: &Path, budget_mib: u64) -> std::path::PathBuf {
    let path = dir.join("writes.pcap");
    let mut w = PcapWriter::create(&path);
    let topic = "orders";
    for i in 0..600u32 {
        let client_id = format!("{i:04}{}", "p".repeat(1996));
        let client = format!("10.8.{}.{}:40000", i / 256, i % 256);
        let mut c = Conn::new(&client, "10.0.0.2:9092");
        c.handshake(&mut w);
        let pid = 100_000 + i64::from(i);
        c.send(
            &mut w,
            true,
            &produce_request(1, &client_id, topic, 100, pid),
            1448,
        );
        c.send(&mut w, false, &produce_response(1, topic, 100), 1448);
        c.close(&mut w);
    }
    let waiting = unanswered((budget_mib as i32 * 4).max(64));
    for i in 0..4000u32 {
        let client = format!("10.7.{}.{}:40000", i / 256, i % 256);
        let mut c = Conn::new(&client, "10.0.0.2:9093");
        c.handshake(&mut w);
        c.send(&mut w, true, &waiting, 1448);
    }
    clean_exchange(&mut w);
    w.finish();
    path
}

/// Runs pidshark on shape (f) at `budget_mib`: its own peak stays within the promise, the
/// writes analysis says it forgot at its share, the connections say what they gave up,
/// every batch is counted, and the clean exchange is read whole.
fn writes_over_budget(budget_mib: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = writes_capture(dir.path(), budget_mib);
    let budget = format!("{budget_mib}M");
    // one exchange is too short a session to prove Kafka on a port not declared
    let args = ["--max-memory", &budget, "--broker", "7", "--port", "9092"];
    let (report, peak, took) = run_measured(&path, &args);
    eprintln!("writes, budget {budget_mib} MiB: peak {peak} MiB in {took:?}");
    assert!(
        peak <= budget_mib + BEYOND_BUDGET_MIB,
        "peak {peak} MiB at a budget of {budget_mib} MiB"
    );
    assert!(took < HANG_GUARD, "{took:?}");
    let diagnostics = report["diagnostics"].as_array().unwrap();
    let forgot = diagnostics
        .iter()
        .filter(|d| d["kind"] == "analysis_limit" && d["facts"]["table"] == "write_memory")
        .count();
    let nk: Vec<_> = diagnostics
        .iter()
        .filter(|d| d["kind"] == "not_kafka")
        .take(2)
        .collect();
    assert!(forgot > 0, "{:?} {nk:?}", report["summary"]["diagnostics"]);
    let share = (budget_mib << 20) / 16;
    assert!(diagnostics
        .iter()
        .any(|d| d["facts"]["table"] == "write_memory" && d["facts"]["limit"] == share));
    assert!(kinds(&report).contains(&"memory_limit".to_owned()));
    assert_eq!(report["writes"]["batches"], 60_000);
    assert_eq!(report["writes"]["acknowledged"], 60_000);
    let listed = report["exchanges"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "complete");
    assert_eq!(listed[0]["response"]["producer_id_start"], 5000);
}

#[test]
fn many_producer_ids_with_long_client_ids_16m() {
    writes_over_budget(16);
}

#[test]
fn many_producer_ids_with_long_client_ids_64m() {
    writes_over_budget(64);
}

#[test]
fn many_producer_ids_with_long_client_ids_256m() {
    writes_over_budget(256);
}
