//! The reader against batches built here: by hand in hex (one ProducerIdsRecord), and by
//! a small writer that lays batches out as `DefaultRecordBatch` does, compressed with each
//! codec's encoder.

use std::io::Write;

use super::*;

// ---------------------------------------------------------------- a batch writer

fn uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint(out: &mut Vec<u8>, v: i64) {
    uvarint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn varint_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => varint(out, -1),
        Some(b) => {
            varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// One record as `DefaultRecord.writeTo` lays it out, no headers.
fn record(offset_delta: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Vec<u8> {
    let mut body = vec![0u8]; // attributes
    varint(&mut body, 0); // timestampDelta
    varint(&mut body, offset_delta);
    varint_bytes(&mut body, key);
    varint_bytes(&mut body, value);
    varint(&mut body, 0); // headers
    let mut out = Vec::new();
    varint(&mut out, body.len() as i64);
    out.extend(body);
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Codec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

fn compress(codec: Codec, raw: &[u8]) -> Vec<u8> {
    match codec {
        Codec::None => raw.to_vec(),
        Codec::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Codec::Snappy => {
            // xerial's SnappyOutputStream: header, then [BE length][raw snappy] blocks
            let mut out = codec::XERIAL_MAGIC.to_vec();
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            for chunk in raw.chunks(16) {
                let block = snap::raw::Encoder::new().compress_vec(chunk).unwrap();
                out.extend_from_slice(&(block.len() as i32).to_be_bytes());
                out.extend(block);
            }
            out
        }
        Codec::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(Vec::new());
            e.write_all(raw).unwrap();
            e.finish().unwrap()
        }
        Codec::Zstd => {
            ruzstd::encoding::compress_to_vec(raw, ruzstd::encoding::CompressionLevel::Fastest)
        }
    }
}

const TIME: i64 = 0x0000_018f_0a1b_2c3d;

/// A whole batch: header, CRC-32C over attributes to the end, records compressed whole.
fn batch(base: i64, epoch: i32, control: bool, codec: Codec, records: &[Vec<u8>]) -> Vec<u8> {
    let raw: Vec<u8> = records.concat();
    let body = compress(codec, &raw);
    let attributes = codec as i16 | if control { 0x20 } else { 0 };
    let mut after_crc = Vec::new();
    after_crc.extend_from_slice(&attributes.to_be_bytes());
    after_crc.extend_from_slice(&(records.len() as i32 - 1).to_be_bytes()); // lastOffsetDelta
    after_crc.extend_from_slice(&TIME.to_be_bytes()); // baseTimestamp
    after_crc.extend_from_slice(&TIME.to_be_bytes()); // maxTimestamp
    after_crc.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    after_crc.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    after_crc.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    after_crc.extend_from_slice(&(records.len() as i32).to_be_bytes());
    after_crc.extend(body);
    let mut out = Vec::new();
    out.extend_from_slice(&base.to_be_bytes());
    out.extend_from_slice(&((4 + 1 + 4 + after_crc.len()) as i32).to_be_bytes());
    out.extend_from_slice(&epoch.to_be_bytes());
    out.push(2);
    out.extend_from_slice(&crc32c::crc32c(&after_crc).to_be_bytes());
    out.extend(after_crc);
    out
}

/// A ProducerIdsRecord v0 in its metadata frame.
fn producer_ids(broker: i32, broker_epoch: i64, next: i64) -> Vec<u8> {
    let mut v = vec![0x01, 0x0f, 0x00]; // frame 1, apiKey 15, version 0
    v.extend_from_slice(&broker.to_be_bytes());
    v.extend_from_slice(&broker_epoch.to_be_bytes());
    v.extend_from_slice(&next.to_be_bytes());
    v.push(0); // no tagged fields
    v
}

fn compact_string(v: &mut Vec<u8>, s: &str) {
    uvarint(v, s.len() as u64 + 1);
    v.extend_from_slice(s.as_bytes());
}

/// A RegisterBrokerRecord v3 with one endpoint, as Kafka 3.7+ writes it.
fn register_broker(broker: i32, broker_epoch: i64, host: &str, port: u16) -> Vec<u8> {
    let mut v = vec![0x01, 0x00, 0x03]; // frame 1, apiKey 0, version 3
    v.extend_from_slice(&broker.to_be_bytes());
    v.push(0); // IsMigratingZkBroker
    v.extend_from_slice(&[0xab; 16]); // IncarnationId
    v.extend_from_slice(&broker_epoch.to_be_bytes());
    uvarint(&mut v, 2); // one endpoint
    compact_string(&mut v, "PLAINTEXT");
    compact_string(&mut v, host);
    v.extend_from_slice(&port.to_be_bytes());
    v.extend_from_slice(&0i16.to_be_bytes());
    v.push(0); // endpoint's tagged fields
    uvarint(&mut v, 1); // no features
    v.push(0); // Rack: null
    v.push(1); // Fenced
    v.push(0); // InControlledShutdown
    v.push(0); // tagged fields
    v
}

fn other_record(api_key: u8) -> Vec<u8> {
    vec![0x01, api_key, 0x00, 0x00]
}

/// A LeaderChange control record: key (version 0, type 2), LeaderChangeMessage v0 value.
fn leader_change(leader: i32) -> Vec<u8> {
    let mut v = 0i16.to_be_bytes().to_vec(); // Version
    v.extend_from_slice(&leader.to_be_bytes());
    v.extend_from_slice(&[0x01, 0x01, 0x00]); // no Voters, no GrantingVoters, no tags
    record(0, Some(&[0, 0, 0, 2]), Some(&v))
}

/// A LeaderChange of message `version` whose voters are `voters`, all granting.
fn leader_change_of(version: i16, leader: i32, voters: &[i32]) -> Vec<u8> {
    let mut v = version.to_be_bytes().to_vec();
    v.extend_from_slice(&leader.to_be_bytes());
    for _ in 0..2 {
        v.push(voters.len() as u8 + 1);
        for id in voters {
            v.extend_from_slice(&id.to_be_bytes());
            if version >= 1 {
                v.extend_from_slice(&[9; 16]); // VoterDirectoryId
            }
            v.push(0);
        }
    }
    v.push(0);
    record(0, Some(&[0, 0, 0, 2]), Some(&v))
}

#[test]
fn a_leader_change_names_its_voters_in_either_version() {
    for version in [0, 1] {
        let bytes = batch(
            0,
            1,
            true,
            Codec::None,
            &[leader_change_of(version, 102, &[101, 102, 103])],
        );
        let log = read_bytes("x.log", &bytes, limits());
        assert_eq!(log.leader_changes.len(), 1, "v{version}");
        assert_eq!(log.leader_changes[0].leader_id, 102);
        assert_eq!(log.leader_changes[0].voters, [101, 102, 103], "v{version}");
    }
}

#[test]
fn the_leader_between_two_moments_is_the_one_elected_before_both() {
    let change = |leader_id, time_ms| LeaderChange {
        leader_id,
        voters: Vec::new(),
        place: RecordPlace {
            offset: time_ms,
            time_ms,
            leader_epoch: 1,
            file_idx: 0,
        },
    };
    let log = MetadataLog {
        leader_changes: vec![change(101, 1_000), change(103, 5_000)],
        epochs: [(
            1,
            EpochBatches {
                first_ms: 1_000,
                last_ms: 9_000,
                batches: 10,
            },
        )]
        .into(),
        ..MetadataLog::default()
    };
    assert_eq!(log.leader_between(2_000, 4_000), Some(101));
    assert_eq!(log.leader_between(5_000, 8_000), Some(103));
    // an election between, before the first, or past the log's end: nobody said
    assert_eq!(log.leader_between(4_000, 6_000), None);
    assert_eq!(log.leader_between(500, 2_000), None);
    assert_eq!(log.leader_between(6_000, 9_500), None);
}

fn limits() -> Limits {
    Limits::default()
}

/// Three batches: a leader change, two blocks and a registration, one more block.
fn segment(codec: Codec) -> (Vec<u8>, Vec<usize>) {
    let batches = [
        batch(0, 1, true, Codec::None, &[leader_change(3000)]),
        batch(
            1,
            1,
            false,
            codec,
            &[
                record(0, None, Some(&producer_ids(1, 10, 1000))),
                record(1, None, Some(&register_broker(2, 12, "b2", 9092))),
                record(2, None, Some(&producer_ids(2, 12, 2000))),
            ],
        ),
        batch(
            4,
            1,
            false,
            codec,
            &[record(0, None, Some(&producer_ids(1, 10, 3000)))],
        ),
    ];
    let ends = batches
        .iter()
        .scan(0, |end, b| {
            *end += b.len();
            Some(*end)
        })
        .collect();
    (batches.concat(), ends)
}

// ------------------------------------------------------------------------ the tests

/// One ProducerIdsRecord, field by field.
const HAND_BUILT: &str = concat!(
    "0000000000000000", // baseOffset 0
    "00000050",         // batchLength 80: 49 of header after it + 31 of records
    "00000001",         // partitionLeaderEpoch 1
    "02",               // magic 2
    "CRC32C__",         // crc (filled in below)
    "0000",             // attributes: no compression, not transactional, not control
    "00000000",         // lastOffsetDelta 0
    "0000018f0a1b2c3d", // baseTimestamp
    "0000018f0a1b2c3d", // maxTimestamp
    "ffffffffffffffff", // producerId -1
    "ffff",             // producerEpoch -1
    "ffffffff",         // baseSequence -1
    "00000001",         // recordsCount 1
    "3c",               // record length 30 (zigzag)
    "00",               // attributes
    "00",               // timestampDelta 0
    "00",               // offsetDelta 0
    "01",               // key length -1: null
    "30",               // value length 24
    "01",               // frame version 1
    "0f",               // apiKey 15: ProducerIdsRecord
    "00",               // version 0
    "00000001",         // BrokerId 1
    "0000000000000005", // BrokerEpoch 5
    "00000000000003e8", // NextProducerId 1000
    "00",               // tagged fields: none
    "00",               // headers: none
);

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn hand_built() -> Vec<u8> {
    let mut b = hex(&HAND_BUILT.replace("CRC32C__", "00000000"));
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

#[test]
fn a_hand_built_producer_ids_batch_decodes_to_its_block() {
    let bytes = hand_built();
    let log = read_bytes("00000000000000000000.log", &bytes, limits());
    assert_eq!(log.problems, []);
    assert_eq!(
        log.blocks,
        [CommittedBlock {
            broker_id: 1,
            broker_epoch: 5,
            next_producer_id: 1000,
            start: Some(0), // the log's first record, at offset 0
            place: RecordPlace {
                offset: 0,
                time_ms: TIME,
                leader_epoch: 1,
                file_idx: 0
            },
            from_snapshot: false,
        }]
    );
    assert_eq!(log.records_by_type["ProducerIdsRecord"], 1);
    let f = &log.files[0];
    assert!(f.complete);
    assert_eq!((f.len, f.read_len, f.batches, f.records), (92, 92, 1, 1));
    assert_eq!((f.first_offset, f.last_offset), (Some(0), Some(0)));
}

#[test]
fn the_test_writer_lays_out_the_hand_built_bytes() {
    let built = batch(
        0,
        1,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(1, 5, 1000)))],
    );
    assert_eq!(built, hand_built());
}

#[test]
fn a_segment_reads_to_blocks_registrations_and_leader_changes_in_offset_order() {
    let (bytes, _) = segment(Codec::None);
    let log = read_bytes("x.log", &bytes, limits());
    assert_eq!(log.problems, []);
    let blocks: Vec<_> = log
        .blocks
        .iter()
        .map(|b| (b.place.offset, b.broker_id, b.start, b.next_producer_id))
        .collect();
    assert_eq!(
        blocks,
        [
            (1, 1, Some(0), 1000), // nothing before it in a log from offset 0
            (3, 2, Some(1000), 2000),
            (4, 1, Some(2000), 3000)
        ]
    );
    assert_eq!(log.registrations.len(), 1);
    let r = &log.registrations[0];
    assert_eq!((r.broker_id, r.broker_epoch, r.place.offset), (2, 12, 2));
    assert_eq!(
        r.endpoints,
        [Endpoint {
            name: "PLAINTEXT".into(),
            host: "b2".into(),
            port: 9092,
            security_protocol: 0
        }]
    );
    assert_eq!(log.leader_changes.len(), 1);
    assert_eq!(log.leader_changes[0].leader_id, 3000);
    assert_eq!(log.control_records["LeaderChange"], 1);
    assert_eq!(log.records_by_type["ProducerIdsRecord"], 3);
    assert_eq!(log.records_by_type["RegisterBrokerRecord"], 1);
    assert_eq!(log.files[0].records, 5);
}

#[test]
fn every_codec_reads_to_the_records_the_uncompressed_batch_holds() {
    let (plain, _) = segment(Codec::None);
    let want = read_bytes("x.log", &plain, limits());
    for codec in [Codec::Gzip, Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let (bytes, _) = segment(codec);
        assert_ne!(bytes, plain);
        let mut got = read_bytes("x.log", &bytes, limits());
        assert_eq!(got.problems, [], "{codec:?}");
        got.files = want.files.clone();
        assert_eq!(got, want, "{codec:?}");
    }
}

#[test]
fn unframed_snappy_is_read_as_one_raw_block_as_xerial_does() {
    let raw = record(0, None, Some(&producer_ids(1, 5, 77)));
    let block = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
    let out = codec::decompress(2, block, 1 << 20).unwrap();
    assert_eq!(out, raw);
}

#[test]
fn a_crc_mismatch_is_corrupt_and_keeps_the_batches_before_it() {
    let (mut bytes, ends) = segment(Codec::None);
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01; // inside the third batch
    let log = read_bytes("x.log", &bytes, limits());
    assert!(
        matches!(&log.problems[..], [LogProblem::Corrupt { at, reason, .. }]
            if *at == ends[1] as u64 && reason.contains("CRC")),
        "{:?}",
        log.problems
    );
    assert_eq!(log.blocks.len(), 2);
    assert!(!log.files[0].complete);
    assert_eq!(log.files[0].read_len, ends[1] as u64);
}

#[test]
fn another_magic_is_corrupt() {
    let mut bytes = hand_built();
    bytes[16] = 1;
    let log = read_bytes("x.log", &bytes, limits());
    assert!(
        matches!(&log.problems[..], [LogProblem::Corrupt { reason, .. }] if reason.contains("magic"))
    );
    assert_eq!(log.blocks, []);
}

#[test]
fn every_strict_prefix_is_truncated_with_the_whole_batches_before_it() {
    for codec in [Codec::None, Codec::Gzip] {
        let (bytes, ends) = segment(codec);
        let blocks_by_end = [0usize, 0, 2, 3]; // by whole batches read
        for cut in 0..bytes.len() {
            let log = read_bytes("x.log", &bytes[..cut], limits());
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            let boundary = cut == 0 || ends.contains(&cut);
            assert_eq!(log.blocks.len(), blocks_by_end[whole], "cut {cut}");
            let f = &log.files[0];
            assert_eq!(
                f.read_len,
                if whole == 0 {
                    0
                } else {
                    ends[whole - 1] as u64
                }
            );
            if boundary {
                assert_eq!(log.problems, [], "cut {cut}");
                assert!(f.complete);
            } else {
                assert!(
                    matches!(&log.problems[..], [LogProblem::Truncated { at, len, .. }]
                        if *at == f.read_len && *len == (cut as u64 - f.read_len)),
                    "cut {cut}: {:?}",
                    log.problems
                );
                assert!(!f.complete);
            }
        }
    }
}

#[test]
fn a_two_gib_length_on_a_short_file_is_truncated_without_allocating_it() {
    let mut bytes = hand_built();
    bytes[8..12].copy_from_slice(&0x7fff_fff0i32.to_be_bytes());
    let log = read_bytes(
        "x.log",
        &bytes,
        Limits {
            max_batch_len: usize::MAX,
            ..limits()
        },
    );
    assert_eq!(
        log.problems,
        [LogProblem::Truncated {
            path: "x.log".into(),
            at: 0,
            needed: 0x7fff_fff0 + 12,
            len: 92
        }]
    );
}

#[test]
fn a_negative_or_short_length_is_corrupt() {
    for length in [-1i32, 0, 48] {
        let mut bytes = hand_built();
        bytes[8..12].copy_from_slice(&length.to_be_bytes());
        let log = read_bytes("x.log", &bytes, limits());
        assert!(
            matches!(&log.problems[..], [LogProblem::Corrupt { .. }]),
            "{length}"
        );
    }
}

#[test]
fn limits_hit_are_limit_problems() {
    let (bytes, ends) = segment(Codec::Gzip);
    // the second batch is over max_batch_len
    let small = Limits {
        max_batch_len: ends[0] - 12,
        ..limits()
    };
    let log = read_bytes("x.log", &bytes, small);
    assert!(matches!(&log.problems[..], [LogProblem::Limit { at, .. }] if *at == ends[0] as u64));
    assert_eq!(log.leader_changes.len(), 1);
    // its records inflate past max_inflated_len
    let small = Limits {
        max_inflated_len: 20,
        ..limits()
    };
    let log = read_bytes("x.log", &bytes, small);
    assert!(
        matches!(&log.problems[..], [LogProblem::Limit { reason, .. }] if reason.contains("inflate")),
        "{:?}",
        log.problems
    );
    for codec in [Codec::Snappy, Codec::Lz4, Codec::Zstd] {
        let (bytes, _) = segment(codec);
        let log = read_bytes("x.log", &bytes, small);
        assert!(
            matches!(&log.problems[..], [LogProblem::Limit { .. }]),
            "{codec:?}: {:?}",
            log.problems
        );
    }
}

#[test]
fn past_max_kept_blocks_and_registrations_are_counted_not_kept() {
    let (bytes, _) = segment(Codec::None);
    let log = read_bytes(
        "x.log",
        &bytes,
        Limits {
            max_kept: 2,
            ..limits()
        },
    );
    assert_eq!(log.blocks.len() + log.registrations.len(), 2);
    assert_eq!(log.not_kept, 2);
    assert_eq!(log.records_by_type["ProducerIdsRecord"], 3);
}

#[test]
fn a_tail_of_zeros_ends_the_data_as_kafka_recovery_truncates_it() {
    let (mut bytes, _) = segment(Codec::None);
    let data = bytes.len() as u64;
    bytes.resize(bytes.len() + 10_000, 0);
    let log = read_bytes("x.log", &bytes, limits());
    assert_eq!(log.problems, []);
    assert!(log.files[0].complete);
    assert_eq!(log.files[0].read_len, data);
    assert_eq!(log.blocks.len(), 3);
    // zeros followed by anything else are not a tail
    bytes.push(1);
    let log = read_bytes("x.log", &bytes, limits());
    assert!(matches!(&log.problems[..], [LogProblem::Corrupt { .. }]));
}

#[test]
fn unknown_record_types_are_counted_by_number() {
    let bytes = batch(
        0,
        1,
        false,
        Codec::None,
        &[
            record(0, None, Some(&other_record(2))),
            record(1, None, Some(&other_record(99))),
        ],
    );
    let log = read_bytes("x.log", &bytes, limits());
    assert_eq!(log.problems, []);
    assert_eq!(log.records_by_type["TopicRecord"], 1);
    assert_eq!(log.records_by_type["Unknown(99)"], 1);
}

#[test]
fn a_bad_metadata_frame_is_corrupt() {
    let bytes = batch(
        0,
        1,
        false,
        Codec::None,
        &[record(0, None, Some(&[0x00, 0x0f, 0x00]))],
    );
    let log = read_bytes("x.log", &bytes, limits());
    assert!(
        matches!(&log.problems[..], [LogProblem::Corrupt { reason, .. }] if reason.contains("frame version"))
    );
    let bytes = batch(
        0,
        1,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(1, 1, 1)[..10]))],
    );
    let log = read_bytes("x.log", &bytes, limits());
    assert!(matches!(&log.problems[..], [LogProblem::Corrupt { .. }]));
}

// ------------------------------------------------------------ directories and merging

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn a_directory_reads_its_latest_snapshot_then_its_segments_by_offset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // snapshot at id offset 5: its records from offset 0, reflecting the log to offset 4
    let snapshot = batch(
        0,
        1,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(1, 10, 3000)))],
    );
    write(d, "00000000000000000005-0000000001.checkpoint", &snapshot);
    write(
        d,
        "00000000000000000002-0000000001.checkpoint",
        b"an older one, not read",
    );
    write(
        d,
        "00000000000000000009-0000000001.checkpoint.part",
        b"partial, not read",
    );
    let seg5 = batch(
        5,
        2,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(2, 11, 4000)))],
    );
    let seg7 = batch(
        7,
        2,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(1, 10, 5000)))],
    );
    write(d, "00000000000000000007.log", &seg7);
    write(d, "00000000000000000005.log", &seg5);
    write(d, "00000000000000000005.index", b"not a log");
    let log = read(&[d.display().to_string()], limits()).unwrap();
    assert_eq!(log.problems, []);
    let kinds: Vec<_> = log.files.iter().map(|f| (f.kind, f.first_offset)).collect();
    assert_eq!(
        kinds,
        [
            (FileKind::Snapshot, Some(0)),
            (FileKind::Segment, Some(5)),
            (FileKind::Segment, Some(7))
        ]
    );
    let blocks: Vec<_> = log
        .blocks
        .iter()
        .map(|b| (b.place.offset, b.from_snapshot, b.start, b.next_producer_id))
        .collect();
    assert_eq!(
        blocks,
        [
            (4, true, Some(2000), 3000),
            (5, false, Some(3000), 4000),
            (7, false, Some(4000), 5000)
        ]
    );
}

#[test]
fn a_directory_without_logs_is_a_problem_and_a_missing_path_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().display().to_string();
    let log = read(std::slice::from_ref(&path), limits()).unwrap();
    assert_eq!(log.problems, [LogProblem::NoLogFiles { path }]);
    let missing = dir.path().join("nope").display().to_string();
    assert!(matches!(
        read(&[missing], limits()),
        Err(Error::Open { .. })
    ));
}

#[test]
fn two_logs_merge_by_offset_counting_shared_records_once_and_keeping_the_higher_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let shared = batch(
        0,
        1,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(1, 10, 1000)))],
    );
    // offset 1: a holds epoch 1's record, b epoch 2's (a's was never committed)
    let a1 = batch(
        1,
        1,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(1, 10, 2000)))],
    );
    let b1 = batch(
        1,
        2,
        false,
        Codec::None,
        &[record(0, None, Some(&producer_ids(2, 11, 2000)))],
    );
    let b2 = batch(
        2,
        2,
        false,
        Codec::Lz4,
        &[record(0, None, Some(&producer_ids(1, 10, 3000)))],
    );
    write(
        &a,
        "00000000000000000000.log",
        &[shared.clone(), a1].concat(),
    );
    write(&b, "00000000000000000000.log", &[shared, b1, b2].concat());
    let paths = [a.display().to_string(), b.display().to_string()];
    let log = read(&paths, limits()).unwrap();
    assert_eq!(log.records_by_type["ProducerIdsRecord"], 3);
    let blocks: Vec<_> = log
        .blocks
        .iter()
        .map(|b| {
            (
                b.place.offset,
                b.broker_id,
                b.place.leader_epoch,
                b.start,
                b.place.file_idx,
            )
        })
        .collect();
    assert_eq!(
        blocks,
        [
            (0, 1, 1, Some(0), 0),
            (1, 2, 2, Some(1000), 1),
            (2, 1, 2, Some(2000), 1)
        ]
    );
    assert!(
        matches!(&log.problems[..], [LogProblem::Divergent { offset: 1, kept, dropped }]
            if kept.contains("leader epoch 2") && dropped.contains("leader epoch 1")),
        "{:?}",
        log.problems
    );
}

// -------------------------------------------------------------------------- proptest

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let log = read_bytes("x.log", &bytes, Limits { max_batch_len: 4096, max_inflated_len: 1 << 16, max_kept: 8 });
            prop_assert!(log.files[0].read_len <= bytes.len() as u64);
        }

        #[test]
        fn a_valid_segment_with_bytes_changed_never_panics(
            codec in prop_oneof![Just(Codec::None), Just(Codec::Gzip), Just(Codec::Snappy), Just(Codec::Lz4), Just(Codec::Zstd)],
            edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
        ) {
            let (mut bytes, _) = segment(codec);
            for (at, b) in edits {
                let i = at.index(bytes.len());
                bytes[i] = b;
            }
            let _ = read_bytes("x.log", &bytes, limits());
            let _ = read_bytes("0-1.checkpoint", &bytes, limits());
        }
    }
}

/// An UnregisterBrokerRecord as Kafka 3.9.1's `MetadataRecordSerde` writes it (broker 3,
/// epoch 4242), printed by a Java program on the release's jars.
#[test]
fn an_unregister_broker_record_as_kafka_writes_it() {
    let bytes = [
        0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x92,
        0x00,
    ];
    assert_eq!(
        metadata::metadata(&bytes),
        Ok((
            1,
            metadata::Decoded::Unregistration {
                broker_id: 3,
                broker_epoch: 4242
            }
        ))
    );
}
