//! pidshark's Produce rows against Wireshark's own decoding, batch header by batch header.
//! Wireshark 4.0 decodes Produce only up to v8, and the rig's 3.9.1 and 4.4.0 clients speak
//! v11 and up, so the rig's `old-client` scenario (scripts/kafka/rig,
//! scripts/kafka/OldClient.java) writes to a real 3.9.1 cluster with kafka-clients 2.4.1,
//! which speaks Produce v8: two idempotent producers (one lz4-compressed) and a
//! transactional one, a few hundred batches of 1 to 5 records over seven partitions of two
//! topics, and one batch refused MESSAGE_TOO_LARGE. tshark's record batch headers (producer
//! id, epoch, base sequence, last offset delta, records, CRC, transactional bit) and its
//! per-partition answers (error, base offset) must equal pidshark's `--format csv-writes`
//! rows, both ways; and every record the clients were told about is in pidshark's rows
//! with the offset or the error the client was told, in a batch the leader's log holds.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::common::root;

const NAME: &str = "3.9.1-old-client";
const DIR: &str = "fixtures/kafka-real";
/// The newest Produce version Wireshark 4.0 decodes.
const WIRESHARK_MAX_PRODUCE: i64 = 8;

fn truth() -> Value {
    let path = root().join(format!("{DIR}/{NAME}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn capture() -> String {
    format!("{DIR}/{NAME}.pcap.gz")
}

fn broker_ports(truth: &Value) -> Vec<u16> {
    truth["broker_ports"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| p.as_u64().unwrap() as u16)
        .collect()
}

/// pidshark's rows of `--format csv-writes`, by column name.
fn rows() -> Vec<BTreeMap<String, String>> {
    crate::writes_real::rows_of(&capture())
}

/// One record batch's header as both tools show it: (request frame, topic, partition,
/// index of the batch in its partition, producer id, producer epoch, base sequence, last
/// offset delta, records, CRC, transactional).
type Batch = (u64, String, i64, usize, i64, i64, i64, i64, i64, u32, bool);

/// One partition's answer: (request frame, topic, partition) to (response frame, error
/// code, base offset).
type Answers = BTreeMap<(u64, String, i64), (u64, i64, i64)>;

/// What tshark decoded of the capture's Produce messages.
#[derive(Default)]
struct Theirs {
    batches: Vec<Batch>,
    answers: Answers,
    /// (frame, api version) of every Produce request, and of every response.
    request_versions: Vec<(u64, i64)>,
    response_versions: Vec<(u64, i64)>,
    /// Batches whose records are compressed (the batch header is not).
    compressed: usize,
}

/// A value of tshark's JSON: a string, or (a field shown more than once at one level, with
/// `--no-duplicate-keys`) an array of them.
fn each(v: &Value) -> Vec<&Value> {
    match v {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        other => vec![other],
    }
}

fn int(v: &Value, what: &str) -> i64 {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("{what}: not one value: {v}"));
    s.parse()
        .unwrap_or_else(|_| panic!("{what}: not a number: {s:?}"))
}

fn field<'a>(node: &'a Value, name: &str) -> &'a Value {
    node.get(name)
        .unwrap_or_else(|| panic!("no {name} in {node}"))
}

/// Every object in the tree under `node` (itself included) that has the field `key`, in
/// the order shown, with the nearest `kafka.topic_name` at or above it.
fn objects_with<'a>(
    node: &'a Value,
    key: &str,
    topic: Option<&'a str>,
    out: &mut Vec<(&'a Value, Option<&'a str>)>,
) {
    match node {
        Value::Object(map) => {
            let topic = map
                .get("kafka.topic_name")
                .and_then(Value::as_str)
                .or(topic);
            if map.contains_key(key) {
                out.push((node, topic));
                return;
            }
            for v in map.values() {
                objects_with(v, key, topic, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                objects_with(v, key, topic, out);
            }
        }
        _ => {}
    }
}

/// tshark's Produce requests and responses, from its JSON tree of each message (so that
/// each batch header stays with its partition and topic).
fn tshark_produce(path: &str, ports: &[u16]) -> Theirs {
    let out = Command::new("tshark")
        .args(["-r", path, "-n"])
        .args(crate::wireshark::decode_as(ports))
        .args(["-o", "tcp.reassemble_out_of_order:TRUE"])
        .args([
            "-Y",
            "kafka.api_key == 0",
            "-T",
            "json",
            "--no-duplicate-keys",
        ])
        .args(["-J", "frame kafka"])
        .output()
        .expect("tshark runs (have_tshark checked it)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let packets: Value = serde_json::from_slice(&out.stdout).expect("tshark's JSON");
    let mut theirs = Theirs::default();
    for packet in packets.as_array().unwrap() {
        let layers = &packet["_source"]["layers"];
        let frame = int(&layers["frame"]["frame.number"], "frame.number") as u64;
        // one Kafka message a segment here; more would make `kafka` an array
        for kafka in each(&layers["kafka"]) {
            let what = format!("frame {frame}");
            assert_eq!(int(field(kafka, "kafka.api_key"), &what), 0, "{what}");
            if kafka.get("kafka.request_key").is_some() {
                let version = int(field(kafka, "kafka.api_version"), &what);
                theirs.request_versions.push((frame, version));
                let mut partitions = Vec::new();
                objects_with(kafka, "kafka.partition_id", None, &mut partitions);
                for (partition, topic) in partitions {
                    let topic = topic
                        .unwrap_or_else(|| panic!("{what}: no topic"))
                        .to_owned();
                    let id = int(field(partition, "kafka.partition_id"), &what);
                    let what = format!("{what} {topic}-{id}");
                    let mut batches = Vec::new();
                    objects_with(partition, "kafka.batch_crc", None, &mut batches);
                    assert!(!batches.is_empty(), "{what}: no record batch");
                    for (index, (b, _)) in batches.into_iter().enumerate() {
                        let n = |f: &str| int(field(b, f), &format!("{what} {f}"));
                        if n("kafka.batch_codec") != 0 {
                            theirs.compressed += 1;
                        }
                        let crc = field(b, "kafka.batch_crc").as_str().unwrap();
                        let crc = u32::from_str_radix(crc.trim_start_matches("0x"), 16)
                            .unwrap_or_else(|_| panic!("{what}: CRC {crc:?}"));
                        theirs.batches.push((
                            frame,
                            topic.clone(),
                            id,
                            index,
                            n("kafka.producer_id"),
                            n("kafka.producer_epoch"),
                            n("kafka.batch_base_sequence"),
                            n("kafka.batch_last_offset_delta"),
                            // "Size": the batch's recordsCount
                            n("kafka.batch_size"),
                            crc,
                            n("kafka.batch_transactional") != 0,
                        ));
                    }
                }
            } else {
                let request = int(field(kafka, "kafka.request_frame"), &what) as u64;
                let version = int(field(kafka, "kafka.response.version"), &what);
                theirs.response_versions.push((frame, version));
                let mut partitions = Vec::new();
                objects_with(kafka, "kafka.partition_id", None, &mut partitions);
                assert!(!partitions.is_empty(), "{what}: no partition");
                for (partition, topic) in partitions {
                    let topic = topic
                        .unwrap_or_else(|| panic!("{what}: no topic"))
                        .to_owned();
                    let id = int(field(partition, "kafka.partition_id"), &what);
                    let answer = (
                        frame,
                        int(field(partition, "kafka.error"), &what),
                        int(field(partition, "kafka.offset"), &what),
                    );
                    let old = theirs.answers.insert((request, topic, id), answer);
                    assert!(old.is_none(), "{what}: a partition answered twice");
                }
            }
        }
    }
    theirs
}

fn num<T: std::str::FromStr>(row: &BTreeMap<String, String>, column: &str) -> T {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column} {:?} in {row:?}", row[column]))
}

/// pidshark's row as a [`Batch`].
fn our_batch(row: &BTreeMap<String, String>) -> Batch {
    let first: i64 = num(row, "first_sequence");
    let last: i64 = num(row, "last_sequence");
    // lastOffsetDelta from the sequences (baseSequence + lastOffsetDelta, wrapping at
    // i32::MAX as Kafka's sequences do)
    let delta = (last - first).rem_euclid(1 << 31);
    (
        num(row, "request_frame"),
        row["topic"].clone(),
        num(row, "partition"),
        num(row, "batch"),
        num(row, "producer_id"),
        num(row, "producer_epoch"),
        first,
        delta,
        num(row, "records"),
        num(row, "crc"),
        num(row, "transactional"),
    )
}

/// pidshark's answers: per partition of a request, the response frame, the error code
/// (an empty cell is NONE) and the offset of the partition's first batch (an empty cell,
/// for a refused batch, is the -1 the broker sends).
fn our_answers(rows: &[BTreeMap<String, String>]) -> Answers {
    let mut answers = Answers::new();
    for row in rows.iter().filter(|r| r["batch"] == "0") {
        let or = |column: &str, none: i64| {
            if row[column].is_empty() {
                none
            } else {
                num(row, column)
            }
        };
        let key = (
            num(row, "request_frame"),
            row["topic"].clone(),
            num(row, "partition"),
        );
        let answer = (
            num(row, "response_frame"),
            or("error_code", 0),
            or("offset", -1),
        );
        assert!(answers.insert(key, answer).is_none(), "{row:?}");
    }
    answers
}

/// Every record batch header tshark decodes in a Produce request is a row of pidshark's
/// with the same request frame, topic, partition, producer id, epoch, base sequence, last
/// offset delta, record count, CRC and transactional bit, and every row is one of tshark's
/// batches; every partition's answer (error code, base offset, response frame) is the
/// same. Every Produce message is v8 or older, so that Wireshark 4.0 decodes it all.
#[test]
fn wireshark_decodes_every_batch_header_and_answer_as_pidshark_does() {
    if !crate::wireshark::have_tshark() {
        return;
    }
    let truth = truth();
    let path = root().join(capture());
    let theirs = tshark_produce(path.to_str().unwrap(), &broker_ports(&truth));
    let rows = rows();

    // not vacuous: Wireshark decodes these versions, and there are many batches
    assert!(
        theirs.request_versions.len() >= 100,
        "{} Produce requests",
        theirs.request_versions.len()
    );
    for (frame, version) in theirs
        .request_versions
        .iter()
        .chain(&theirs.response_versions)
    {
        assert!(
            (0..=WIRESHARK_MAX_PRODUCE).contains(version),
            "frame {frame}: Produce v{version}"
        );
    }
    for row in &rows {
        let version: i64 = num(row, "api_version");
        assert!(version <= WIRESHARK_MAX_PRODUCE, "{row:?}");
        assert!(
            row["request_decode_error"].is_empty() && row["response_decode_error"].is_empty(),
            "{row:?}"
        );
    }

    let mut ours: Vec<Batch> = rows.iter().map(our_batch).collect();
    let mut their_batches = theirs.batches.clone();
    ours.sort();
    their_batches.sort();
    let only_ours: Vec<&Batch> = ours
        .iter()
        .filter(|b| their_batches.binary_search(b).is_err())
        .collect();
    let only_theirs: Vec<&Batch> = their_batches
        .iter()
        .filter(|b| ours.binary_search(b).is_err())
        .collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "batch headers: {} only pidshark's {only_ours:#?}, {} only tshark's {only_theirs:#?}",
        only_ours.len(),
        only_theirs.len()
    );
    assert_eq!(ours, their_batches, "the same batches, as many times");
    let several = ours.iter().filter(|b| b.8 > 1).count();
    let transactional = ours.iter().filter(|b| b.10).count();
    assert!(ours.len() > 100, "{} batches", ours.len());
    assert!(several > 50, "{several} batches of several records");
    assert!(transactional > 10, "{transactional} transactional batches");
    let compressed = theirs.compressed;
    assert!(compressed > 50, "{compressed} compressed batches");

    let our_answers = our_answers(&rows);
    assert_eq!(
        our_answers.len(),
        theirs.answers.len(),
        "partitions answered"
    );
    for (key, theirs) in &theirs.answers {
        assert_eq!(our_answers.get(key), Some(theirs), "answer to {key:?}");
    }
    let refused = our_answers.values().filter(|a| a.1 != 0).count();
    assert!(refused >= 1, "no refused batch");
    let requests: std::collections::BTreeSet<u64> = ours.iter().map(|b| b.0).collect();
    println!(
        "{NAME}: tshark and pidshark agree on {} record batch headers ({several} \
         of several records, {compressed} compressed, {transactional} transactional) in {} Produce requests \
         (versions {:?}) and on {} partition answers ({refused} refused)",
        ours.len(),
        requests.len(),
        theirs
            .request_versions
            .iter()
            .map(|v| v.1)
            .collect::<std::collections::BTreeSet<_>>(),
        our_answers.len(),
    );
}

/// The error code of a Produce response by the exception the Java client made of it.
fn error_of_exception(class: &str) -> &'static str {
    match class.rsplit('.').next().unwrap() {
        "RecordTooLargeException" => "MESSAGE_TOO_LARGE",
        "InvalidProducerEpochException" => "INVALID_PRODUCER_EPOCH",
        "OutOfOrderSequenceException" => "OUT_OF_ORDER_SEQUENCE_NUMBER",
        "ProducerFencedException" => "PRODUCER_FENCED",
        other => panic!("no error code known for {other}"),
    }
}

/// Every record a client sent is in pidshark's rows as what the client was told: a
/// record told an offset lies in a batch of its client, topic and partition answered at
/// the offset less the record's place in the batch, with the producer id and epoch the
/// client held, and the leader's log (Kafka's DumpLogSegments) holds that batch with the
/// same CRC, producer id, epoch and sequences; a record told an error is in a batch
/// refused with that error. Every appended row is a batch of told records.
#[test]
fn every_send_is_in_a_row_with_what_the_client_was_told() {
    let truth = truth();
    let rows = rows();
    let sends = truth["client_sends"].as_array().unwrap();
    let n = |v: &Value| v.as_i64().unwrap();
    let mut used: BTreeMap<usize, usize> = BTreeMap::new(); // row to records told
    let (mut told_offsets, mut told_errors) = (0, 0);
    for send in sends {
        let what = format!("send {}", send["serial"]);
        let partition = n(&send["partition"]).to_string();
        let of_send = |r: &&BTreeMap<String, String>| {
            r["client_id"] == send["client_id"].as_str().unwrap()
                && r["topic"] == send["topic"].as_str().unwrap()
                && r["partition"] == partition
        };
        let candidates: Vec<(usize, &BTreeMap<String, String>)> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| of_send(r))
            .collect();
        if send["offset"].is_null() {
            told_errors += 1;
            let error = error_of_exception(send["error"].as_str().unwrap());
            let refused: Vec<_> = candidates
                .iter()
                .filter(|(_, r)| r["outcome"] == "rejected" && r["error"] == error)
                .collect();
            assert_eq!(refused.len(), 1, "{what}: {error}: {refused:?}");
            *used.entry(refused[0].0).or_default() += 1;
            continue;
        }
        told_offsets += 1;
        let offset = n(&send["offset"]);
        let index = n(&send["index_in_batch"]);
        let (i, row) = candidates
            .iter()
            .find(|(_, r)| r["offset"] == (offset - index).to_string())
            .unwrap_or_else(|| {
                panic!(
                    "{what}: no batch of its client answered at {}",
                    offset - index
                )
            });
        assert_eq!(row["outcome"], "appended", "{what}");
        let records: i64 = num(row, "records");
        assert!(index < records, "{what}: record {index} of {records}");
        assert_eq!(
            row["producer_id"],
            send["producer_id"].to_string(),
            "{what}"
        );
        assert_eq!(row["producer_epoch"], send["epoch"].to_string(), "{what}");
        let transactional = !send["transactional_id"].is_null();
        assert_eq!(row["transactional"], transactional.to_string(), "{what}");
        assert_eq!(
            row["transactional_id"],
            send["transactional_id"].as_str().unwrap_or(""),
            "{what}"
        );
        // the batch the leader's log holds at that offset
        let log = &truth["appended_batches"]
            [format!("{}-{}", send["topic"].as_str().unwrap(), send["partition"])];
        let batch = log
            .as_array()
            .unwrap()
            .iter()
            .find(|b| n(&b["base_offset"]) == offset - index)
            .unwrap_or_else(|| panic!("{what}: no batch at {} in the log", offset - index));
        assert_eq!(
            row["crc"],
            batch["crc"].to_string(),
            "{what}: CRC in the log"
        );
        for (ours, theirs) in [
            ("producer_id", "producer_id"),
            ("producer_epoch", "producer_epoch"),
            ("first_sequence", "base_sequence"),
            ("last_sequence", "last_sequence"),
            ("records", "count"),
        ] {
            assert_eq!(
                row[ours],
                batch[theirs].to_string(),
                "{what}: {ours} in the log"
            );
        }
        *used.entry(*i).or_default() += 1;
    }
    // every row is a batch of records the clients sent, all of them
    for (i, row) in rows.iter().enumerate() {
        let told = used.get(&i).copied().unwrap_or(0);
        assert_eq!(
            told.to_string(),
            row["records"],
            "row {row:?}: records told"
        );
    }
    assert_eq!(used.len(), rows.len(), "rows with sends");
    assert!(
        told_offsets > 500 && told_errors == 1,
        "{told_offsets} {told_errors}"
    );
    println!(
        "{NAME}: {told_offsets} records told an offset and {told_errors} told an error, in \
         {} rows of pidshark's",
        rows.len()
    );
}
