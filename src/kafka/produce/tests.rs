//! Produce requests and responses built as Kafka's schemas lay them out, read whole, in
//! every split, and with bytes missing.

use super::batch::tests::v2_header;
use super::request::{PartitionData, Request, RequestReader, TopicData};
use super::response::{PartitionResponse, Response};
use crate::kafka::decoded::Problem;
use crate::kafka::reader::DecodeError;
use crate::kafka::tables::ErrorCode;

/// Writes the fields of one version of a Produce message.
struct Writer {
    version: i16,
    bytes: Vec<u8>,
}

impl Writer {
    fn flexible(&self) -> bool {
        self.version >= 9
    }
    fn i16(&mut self, v: i16) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }
    fn len(&mut self, n: usize) {
        match self.flexible() {
            true => self.uvarint(n as u32 + 1),
            false => self.i32(n as i32),
        }
    }
    fn string(&mut self, s: Option<&str>) {
        match (s, self.flexible()) {
            (None, true) => self.uvarint(0),
            (None, false) => self.i16(-1),
            (Some(s), true) => {
                self.uvarint(s.len() as u32 + 1);
                self.bytes.extend_from_slice(s.as_bytes());
            }
            (Some(s), false) => {
                self.i16(s.len() as i16);
                self.bytes.extend_from_slice(s.as_bytes());
            }
        }
    }
    fn tags(&mut self) {
        if self.flexible() {
            self.uvarint(0);
        }
    }
}

/// A batch: a v2 header of `records` records and `body` bytes of made-up records.
fn batch(pid: i64, epoch: i16, seq: i32, records: i32, body: u32) -> Vec<u8> {
    let mut b = v2_header(pid, epoch, seq, records, body);
    b.extend((0..body).map(|i| (i % 251) as u8));
    b
}

type Topic<'a> = (&'a str, Vec<(i32, Option<Vec<Vec<u8>>>)>);

/// A Produce request of `version` (without its size prefix).
fn request(version: i16, topics: &[Topic<'_>]) -> Vec<u8> {
    let mut w = Writer {
        version,
        bytes: Vec::new(),
    };
    w.i16(0);
    w.i16(version);
    w.i32(77);
    w.bytes.extend_from_slice(&[0, 8]);
    w.bytes.extend_from_slice(b"producer");
    w.tags();
    if version >= 3 {
        w.string(Some("txn-a"));
    }
    w.i16(-1);
    w.i32(30_000);
    w.len(topics.len());
    for (name, partitions) in topics {
        if version >= 13 {
            w.bytes.extend_from_slice(&topic_id(name));
        } else {
            w.string(Some(name));
        }
        w.len(partitions.len());
        for (index, batches) in partitions {
            w.i32(*index);
            match batches {
                None if w.flexible() => w.uvarint(0),
                None => w.i32(-1),
                Some(batches) => {
                    let records: Vec<u8> = batches.concat();
                    w.len(records.len());
                    w.bytes.extend_from_slice(&records);
                }
            }
            w.tags();
        }
        w.tags();
    }
    w.tags();
    w.bytes
}

fn topic_id(name: &str) -> [u8; 16] {
    let mut id = [0; 16];
    for (i, b) in name.bytes().enumerate() {
        id[i % 16] ^= b;
    }
    id
}

fn two_topics() -> Vec<Topic<'static>> {
    vec![
        (
            "orders",
            vec![
                (
                    0,
                    Some(vec![batch(2999, 0, 0, 3, 40), batch(2999, 0, 3, 2, 30)]),
                ),
                (4, Some(vec![batch(2999, 0, 10, 1, 5)])),
            ],
        ),
        ("audit", vec![(1, None), (2, Some(vec![]))]),
    ]
}

fn read_in(message: &[u8], version: i16, chunks: &[usize]) -> Request {
    let mut reader = RequestReader::new(version, message.len() as u32);
    let mut rest = message;
    for &n in chunks {
        let (now, later) = rest.split_at(n.min(rest.len()));
        reader.bytes(now);
        rest = later;
    }
    reader.bytes(rest);
    reader.finish()
}

fn read_whole(message: &[u8], version: i16) -> Request {
    read_in(message, version, &[])
}

#[test]
fn every_version_gives_each_partitions_batch_headers() {
    for version in 0..=13 {
        let message = request(version, &two_topics());
        let req = read_whole(&message, version);
        assert_eq!(req.problem, None, "v{version}");
        assert_eq!(req.header.client_id, Some(Some("producer".into())));
        let txn = (version >= 3).then(|| Some("txn-a".to_owned()));
        assert_eq!(req.transactional_id, txn, "v{version}");
        assert_eq!((req.acks, req.timeout_ms), (Some(-1), Some(30_000)));
        assert_eq!(req.topics.len(), 2);
        let orders = &req.topics[0];
        match version >= 13 {
            true => assert_eq!(orders.topic_id, Some(topic_id("orders"))),
            false => assert_eq!(orders.name.as_deref(), Some("orders")),
        }
        let seqs: Vec<_> = req
            .batches()
            .map(|(_, p, b)| (p.index, b.producer_id, b.base_sequence, b.last_sequence()))
            .collect();
        assert_eq!(
            seqs,
            [
                (0, Some(2999), Some(0), Some(2)),
                (0, Some(2999), Some(3), Some(4)),
                (4, Some(2999), Some(10), Some(10)),
            ],
            "v{version}"
        );
        let audit = &req.topics[1].partitions;
        assert_eq!(
            audit,
            &[
                PartitionData {
                    index: 1,
                    records_len: None,
                    batches: vec![],
                    complete: true
                },
                PartitionData {
                    index: 2,
                    records_len: Some(0),
                    batches: vec![],
                    complete: true
                },
            ]
        );
        assert!(req.topics[0].partitions.iter().all(|p| p.complete));
    }
}

/// However the bytes are split between packets, the request reads the same.
#[test]
fn every_split_reads_the_same() {
    for version in [2, 8, 9, 13] {
        let message = request(version, &two_topics());
        let whole = read_whole(&message, version);
        for at in 0..=message.len() {
            assert_eq!(
                read_in(&message, version, &[at]),
                whole,
                "v{version} at {at}"
            );
        }
        let ones = vec![1; message.len()];
        assert_eq!(
            read_in(&message, version, &ones),
            whole,
            "v{version} by ones"
        );
        for step in [2, 3, 7, 13, 61] {
            let chunks = vec![step; message.len() / step + 1];
            assert_eq!(
                read_in(&message, version, &chunks),
                whole,
                "v{version} by {step}"
            );
        }
    }
}

/// A gap inside a batch's records costs nothing: the batch's length says where the next
/// starts. One in the structure stops the reading there, keeping what came before.
#[test]
fn a_gap_in_records_is_stepped_over_and_one_in_the_structure_stops_reading() {
    let version = 11;
    let message = request(version, &two_topics());
    let whole = read_whole(&message, version);
    // The first batch's records start 61 bytes into it.
    let first_batch = message
        .windows(8)
        .position(|w| w == 2999i64.to_be_bytes())
        .unwrap()
        - 43;
    let records_at = first_batch + 61;
    let mut reader = RequestReader::new(version, message.len() as u32);
    reader.bytes(&message[..records_at + 5]);
    reader.gap(20);
    reader.bytes(&message[records_at + 25..]);
    let req = reader.finish();
    assert_eq!(req.problem, None);
    assert_eq!(req.bytes_not_captured, Some(20));
    assert_eq!(req.topics, whole.topics);

    // A gap over the second batch's header.
    let second = first_batch + 101;
    let mut reader = RequestReader::new(version, message.len() as u32);
    reader.bytes(&message[..second + 10]);
    reader.gap(30);
    reader.bytes(&message[second + 40..]);
    let req = reader.finish();
    let Some(Problem::NotCaptured {
        captured, field, ..
    }) = req.problem.as_deref()
    else {
        panic!("{:?}", req.problem);
    };
    assert_eq!(*captured, second as u32 + 10);
    assert_eq!(field.map(|f| f.0), Some("Records"));
    assert_eq!(req.topics.len(), 1);
    let p0 = &req.topics[0].partitions[0];
    assert_eq!(p0.batches.len(), 1);
    assert!(
        !p0.complete,
        "a partition whose batches were not all read says so"
    );
}

#[test]
fn bytes_that_cannot_be_a_produce_request_are_a_decode_error() {
    let version = 9;
    // A batch whose length runs past its partition's records.
    let mut topics = two_topics();
    let mut long = batch(5, 0, 0, 1, 10);
    long.truncate(long.len() - 4);
    topics[1].1[1].1 = Some(vec![long]);
    let req = read_whole(&request(version, &topics), version);
    let Some(Problem::Decode(DecodeError::Invalid { field, .. })) = req.problem.as_deref() else {
        panic!("{:?}", req.problem);
    };
    assert_eq!(*field, "batchLength");
    assert_eq!(req.batches().count(), 3, "what came before is kept");

    // Bytes after the last field.
    let mut message = request(version, &two_topics());
    message.extend_from_slice(&[1, 2, 3]);
    let req = read_whole(&message, version);
    assert!(matches!(
        req.problem.as_deref(),
        Some(Problem::Decode(DecodeError::Trailing { left: 3, .. }))
    ));

    // A topic count the message cannot hold is refused before anything is reserved.
    let mut message = request(8, &[]);
    let n = message.len();
    message[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
    let req = read_whole(&message, 8);
    assert!(matches!(
        req.problem.as_deref(),
        Some(Problem::Decode(DecodeError::Invalid {
            field: "TopicData",
            ..
        }))
    ));

    // A message that ends inside a field.
    let message = request(8, &two_topics());
    let req = read_whole(&message[..message.len() - 3], 8);
    assert!(req.problem.is_some());
}

#[test]
fn a_version_without_a_schema_here_is_read_to_its_header() {
    let message = request(13, &two_topics());
    let mut bytes = message;
    bytes[2..4].copy_from_slice(&14i16.to_be_bytes());
    let req = read_whole(&bytes, 14);
    assert_eq!(req.header.client_id, Some(Some("producer".into())));
    assert!(req.topics.is_empty());
    assert!(matches!(
        req.problem.as_deref(),
        Some(Problem::UnsupportedVersion { version: 14, .. })
    ));
}

/// What a reader holds is what it read: a piece split between packets is held, the
/// records never are.
#[test]
fn a_reader_holds_its_headers_not_the_records() {
    let big = vec![(0, Some(vec![batch(7, 0, 0, 1000, 900_000)]))];
    let message = request(11, &[("bulk", big)]);
    let mut reader = RequestReader::new(11, message.len() as u32);
    let mut most = 0;
    for chunk in message.chunks(1448) {
        reader.bytes(chunk);
        most = most.max(reader.held_bytes());
    }
    assert!(most < 2048, "held {most} bytes");
    let req = reader.finish();
    assert_eq!(req.problem, None);
    assert_eq!(
        req.batches().next().map(|b| b.2.records_count),
        Some(Some(1000))
    );
}

#[test]
fn the_heap_of_thousands_of_partitions_is_summed_once_a_delivery_not_once_a_piece() {
    let partitions: Vec<_> = (0..3000)
        .map(|i| (i, Some(vec![batch(7, 0, i, 1, 8)])))
        .collect();
    let message = request(11, &[("many", partitions)]);
    let mut whole = RequestReader::new(11, message.len() as u32);
    whole.bytes(&message);
    assert_eq!(whole.sums, 1, "one delivery, one sum");
    let mut packets = RequestReader::new(11, message.len() as u32);
    let chunks = message.chunks(1448);
    let deliveries = chunks.len() as u32;
    for chunk in chunks {
        packets.bytes(chunk);
        let _ = packets.held_bytes(); // the kept figure is the sum (debug builds assert)
    }
    assert!(packets.sums <= deliveries, "{} sums", packets.sums);
    assert_eq!(whole.held_bytes(), packets.held_bytes());
    assert_eq!(whole.finish().batches().count(), 3000);
}

/// A topic's answers: per partition (index, error, base offset).
type TopicAnswers<'a> = (&'a str, Vec<(i32, i16, i64)>);

/// A Produce response of `version`.
fn response(version: i16, topics: &[TopicAnswers<'_>], leader: bool) -> Vec<u8> {
    let mut w = Writer {
        version,
        bytes: Vec::new(),
    };
    w.i32(77);
    w.tags();
    w.len(topics.len());
    for (name, partitions) in topics {
        if version >= 13 {
            w.bytes.extend_from_slice(&topic_id(name));
        } else {
            w.string(Some(name));
        }
        w.len(partitions.len());
        for &(index, error, offset) in partitions {
            w.i32(index);
            w.i16(error);
            w.i64(offset);
            if version >= 2 {
                w.i64(-1);
            }
            if version >= 5 {
                w.i64(0);
            }
            if version >= 8 {
                w.len(1);
                w.i32(0);
                w.string(Some("bad record"));
                w.tags();
                w.string(None);
            }
            if w.flexible() {
                if leader && version >= 10 {
                    w.uvarint(1);
                    w.uvarint(0);
                    w.uvarint(9);
                    w.i32(3);
                    w.i32(12);
                    w.uvarint(0);
                } else {
                    w.uvarint(0);
                }
            }
        }
        w.tags();
    }
    if version >= 1 {
        w.i32(5);
    }
    w.tags();
    w.bytes
}

#[test]
fn a_response_gives_each_partitions_error_and_base_offset() {
    let topics = [("orders", vec![(0, 0, 120), (4, 45, -1)])];
    for version in 0..=13 {
        let resp = Response::decode(&response(version, &topics, true), version);
        assert_eq!(resp.problem, None, "v{version}");
        let partitions = &resp.topics[0].partitions;
        let got: Vec<_> = partitions
            .iter()
            .map(|p| (p.index, p.error_code, p.base_offset))
            .collect();
        assert_eq!(
            got,
            [(0, ErrorCode(0), 120), (4, ErrorCode(45), -1)],
            "v{version}"
        );
        let PartitionResponse {
            log_append_time_ms,
            log_start_offset,
            record_errors,
            current_leader,
            ..
        } = &partitions[0];
        assert_eq!(log_append_time_ms.is_some(), version >= 2);
        assert_eq!(log_start_offset.is_some(), version >= 5);
        assert_eq!(record_errors.len(), usize::from(version >= 8));
        assert_eq!(*current_leader, (version >= 10).then_some((3, 12)));
        assert_eq!(resp.throttle_time_ms, (version >= 1).then_some(5));
    }
    let cut = response(11, &topics, false);
    let resp = Response::decode_partial(&cut[..cut.len() - 20], cut.len() as u32, 20, 11);
    assert_eq!(
        resp.topics[0].partitions.len(),
        1,
        "the partition read whole is kept"
    );
    assert!(matches!(
        resp.problem.as_deref(),
        Some(Problem::NotCaptured { .. })
    ));
}

#[test]
fn topic_data_is_named_or_identified_by_version() {
    let req = read_whole(&request(12, &two_topics()), 12);
    assert_eq!(
        req.topics[1],
        TopicData {
            name: Some("audit".into()),
            topic_id: None,
            partitions: req.topics[1].partitions.clone()
        }
    );
}
