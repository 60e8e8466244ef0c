//! Captures of a real Apache Kafka KRaft cluster (`fixtures/kafka-real`, made by
//! `scripts/kafka/rig`: three controllers and two brokers of each release, tcpdump on every
//! listener), checked against truth from Kafka itself: the `ProducerIdsRecord`s the
//! controllers committed to `__cluster_metadata` (decoded by Kafka's `DumpLogSegments`)
//! and the producer ids the brokers handed to the load client. Nothing here needs Java;
//! `scripts/kafka/check-live` reruns the rig and compares fresh captures.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::common::{report, root};
use crate::wireshark::{
    have_tshark, kafka_frames, ours, tshark_frames_of_keys, tshark_kafka_lines, Messages,
};

/// The releases and scenarios that must be committed.
const RELEASES: [&str; 2] = ["3.9.1", "4.4.0"];
const SCENARIOS: [&str; 4] = ["steady", "controller-kill", "broker-restart", "midstream"];

struct Fixture {
    name: String,
    capture: PathBuf,
    truth: Value,
    /// The report without `producer_ids.entries`, as its golden holds it.
    report: Value,
    /// Those entries, each with only the fields the tests read (some 45,000 a capture:
    /// whole, the eight captures' would take a gigabyte).
    producers: Vec<Value>,
}

/// The fields of a `producer_ids` entry the tests read.
const PRODUCER_FIELDS: [&str; 11] = [
    "connection",
    "client",
    "server",
    "correlation_id",
    "request_frame",
    "response_frame",
    "producer_id",
    "producer_epoch",
    "broker_id",
    "broker_source",
    "placement",
];

fn fixture(release: &str, scenario: &str) -> Fixture {
    let name = format!("{release}-{scenario}");
    let dir = root().join("fixtures/kafka-real");
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(format!("{name}.truth.json")))
            .unwrap_or_else(|e| panic!("{name}.truth.json: {e}")),
    )
    .unwrap();
    assert_eq!(truth["kafka_version"], release, "{name}");
    assert_eq!(truth["scenario"], scenario, "{name}");
    let file = truth["fixture"].as_str().expect("truth names its capture");
    let capture = dir.join(file);
    // the path as a user in the clone would give it: it is in the report
    let mut report = report(&[&format!("fixtures/kafka-real/{file}")]);
    let entries = report["producer_ids"]
        .as_object_mut()
        .and_then(|p| p.remove("entries"));
    let producers = match entries {
        Some(Value::Array(entries)) => entries.into_iter().map(slim).collect(),
        _ => panic!("{name}: no producer_ids.entries"),
    };
    Fixture {
        name,
        capture,
        truth,
        report,
        producers,
    }
}

/// An entry with only [`PRODUCER_FIELDS`], and its block's start as `block_start`.
fn slim(mut entry: Value) -> Value {
    let mut kept = serde_json::Map::new();
    for field in PRODUCER_FIELDS {
        if let Some(v) = entry.get_mut(field) {
            kept.insert(field.to_owned(), v.take());
        }
    }
    kept.insert("block_start".to_owned(), entry["block"]["start"].take());
    Value::Object(kept)
}

/// Every fixture and its report, read once for all the tests (each report lists some
/// 45,000 InitProducerId exchanges).
fn all() -> &'static [Fixture] {
    static ALL: std::sync::OnceLock<Vec<Fixture>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        RELEASES
            .iter()
            .flat_map(|r| SCENARIOS.iter().map(move |s| fixture(r, s)))
            .collect()
    })
}

/// (frame, connection, correlation id) of the InitProducerId requests and responses.
fn producer_messages(f: &Fixture) -> (Messages, Messages) {
    let mut requests = BTreeSet::new();
    let mut responses = BTreeSet::new();
    for e in &f.producers {
        let conn = e["connection"].as_u64().unwrap();
        let corr = e["correlation_id"].as_i64().unwrap();
        requests.insert((e["request_frame"].as_u64().unwrap(), conn, corr));
        if let Some(frame) = e["response_frame"].as_u64() {
            responses.insert((frame, conn, corr));
        }
    }
    (requests, responses)
}

/// (broker_id, broker_epoch, start, len) of a block.
type BlockKey = (i64, i64, i64, i64);

fn key(b: &Value) -> BlockKey {
    let n = |f: &str| {
        b[f].as_i64()
            .unwrap_or_else(|| panic!("block field {f}: {b}"))
    };
    (n("broker_id"), n("broker_epoch"), n("start"), n("len"))
}

/// The blocks the controllers committed (their metadata log's `ProducerIdsRecord`s).
fn committed_blocks(truth: &Value) -> Vec<BlockKey> {
    truth["committed_blocks"]
        .as_array()
        .expect("committed_blocks")
        .iter()
        .map(key)
        .collect()
}

/// Starts of the committed blocks the capture cannot hold, with the reason for each.
fn lost(truth: &Value) -> BTreeMap<i64, String> {
    truth["lost_in_capture"]
        .as_array()
        .expect("lost_in_capture")
        .iter()
        .map(|l| {
            let reason = l["reason"].as_str().expect("a reason for each lost block");
            (l["start"].as_i64().unwrap(), reason.to_owned())
        })
        .collect()
}

fn reported_blocks(f: &Fixture) -> Vec<BlockKey> {
    let mut blocks: Vec<BlockKey> = f.report["producer_id_blocks"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    blocks.sort_by_key(|b| b.2);
    blocks
}

fn finding_kinds(f: &Fixture) -> BTreeSet<String> {
    f.report["producer_id_blocks"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_release_and_scenario_is_committed_with_at_least_20_blocks_per_broker() {
    for f in all() {
        let committed = f.truth["committed_blocks"].as_array().unwrap();
        for broker in f.truth["broker_ids"].as_array().unwrap() {
            let n = committed
                .iter()
                .filter(|b| b["broker_id"] == *broker)
                .count();
            assert!(
                n >= 20,
                "{}: broker {broker} has {n} committed blocks",
                f.name
            );
        }
    }
}

#[test]
fn reported_blocks_are_the_committed_ones() {
    for f in all() {
        let lost = lost(&f.truth);
        let mut want: Vec<BlockKey> = f.truth["committed_blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(key)
            .filter(|b| !lost.contains_key(&b.2))
            .collect();
        want.sort_by_key(|b| b.2);
        assert_eq!(
            reported_blocks(f),
            want,
            "{}: blocks (broker, epoch, start, len)",
            f.name
        );
    }
}

#[test]
fn every_producer_id_a_client_got_lies_in_one_block_of_its_broker() {
    for f in all() {
        let lost = lost(&f.truth);
        let committed = committed_blocks(&f.truth);
        let blocks = reported_blocks(f);
        let mut faults = Vec::new();
        for given in f.truth["client_producer_ids"].as_array().unwrap() {
            let (broker, id) = (
                given["broker_id"].as_i64().unwrap(),
                given["producer_id"].as_i64().unwrap(),
            );
            let holding: Vec<&BlockKey> = blocks
                .iter()
                .filter(|b| (b.2..b.2 + b.3).contains(&id))
                .collect();
            let in_lost_block = committed.iter().any(|b| {
                lost.contains_key(&b.2) && b.0 == broker && (b.2..b.2 + b.3).contains(&id)
            });
            let ok = match holding.as_slice() {
                [one] => one.0 == broker,
                [] => in_lost_block,
                _ => false,
            };
            if !ok {
                faults.push(format!("id {id} from broker {broker}: in {holding:?}"));
            }
        }
        assert!(
            faults.is_empty(),
            "{}: {} ids\n{}",
            f.name,
            faults.len(),
            faults[..faults.len().min(10)].join("\n")
        );
    }
}

#[test]
fn findings_say_what_happened_and_nothing_else() {
    for f in all() {
        let kinds = finding_kinds(f);
        let name = &f.name;
        for wrong in [
            "pid_block_overlap",
            "pid_block_regression",
            "pid_block_gap",
            "pid_block_irregular",
        ] {
            assert!(!kinds.contains(wrong), "{name}: {wrong} in {kinds:?}");
        }
        let scenario = f.truth["scenario"].as_str().unwrap();
        assert_eq!(
            kinds.contains("pid_broker_epoch_change"),
            scenario == "broker-restart",
            "{name}: {kinds:?}"
        );
        // A request the failover left unanswered or answered with an error is asked again.
        let exchanges = f.report["exchanges"].as_array().unwrap();
        let failed = exchanges
            .iter()
            .filter(|e| e["status"] != "complete" || e["response"]["error_code"] != 0)
            .count();
        if failed > 0 {
            assert_eq!(
                scenario, "controller-kill",
                "{name}: {failed} failed exchanges"
            );
            assert!(kinds.contains("pid_retry"), "{name}: {kinds:?}");
        }
    }
}

#[test]
fn every_connection_of_the_cluster_is_read_as_kafka() {
    for f in all() {
        let s = &f.report["summary"];
        assert_eq!(
            s["not_kafka_connections"], 0,
            "{}: {:?}",
            f.name, f.report["diagnostics"]
        );
        let kinds: BTreeSet<&str> = s["diagnostics"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        // a frame cut by the end of the capture, and connections already open at its start
        let allowed: BTreeSet<&str> = [
            "kafka_frame_incomplete",
            "midstream_start",
            "pid_broker_epoch_change",
            "pid_retry",
        ]
        .into();
        let unexpected: Vec<&&str> = kinds.difference(&allowed).collect();
        assert!(unexpected.is_empty(), "{}: {unexpected:?}", f.name);
    }
}

/// The Kafka ports of a fixture: its controllers' and its brokers'.
pub fn ports(truth: &Value) -> Vec<u16> {
    let controllers = truth["controller_ports"].as_array().unwrap().iter();
    let brokers = truth["broker_ports"].as_object().unwrap().values();
    controllers
        .chain(brokers)
        .map(|p| p.as_u64().unwrap() as u16)
        .collect()
}

/// tshark finds every AllocateProducerIds and every InitProducerId request and response
/// where the report has it: the same frame, TCP stream and correlation id.
#[test]
fn wireshark_agrees_on_every_allocate_and_init_producer_id_message() {
    if !have_tshark() {
        return;
    }
    for f in all() {
        let capture = f.capture.to_str().unwrap();
        let mut theirs = tshark_frames_of_keys(capture, &ports(&f.truth), &["67", "22"]);
        let (their_req, their_resp) = theirs.remove(0);
        let (our_req, our_resp) = ours(&f.report);
        assert_eq!(
            our_req, their_req,
            "{}: requests (frame, tcp.stream, correlation id)",
            f.name
        );
        assert_eq!(our_resp, their_resp, "{}: responses", f.name);
        // and every InitProducerId message, some 45,000 a capture
        let (their_req, their_resp) = theirs.remove(0);
        let (our_req, our_resp) = producer_messages(f);
        assert!(our_req.len() > 20_000, "{}: {}", f.name, our_req.len());
        assert!(
            our_req == their_req,
            "{}: InitProducerId requests differ",
            f.name
        );
        assert!(
            our_resp == their_resp,
            "{}: InitProducerId responses differ",
            f.name
        );
    }
}

/// Requests per API key as tshark counts them on the fixture's Kafka ports.
fn tshark_request_counts(f: &Fixture) -> BTreeMap<i64, u64> {
    let lines = tshark_kafka_lines(f.capture.to_str().unwrap(), &ports(&f.truth));
    let mut counts = BTreeMap::new();
    for frame in kafka_frames(&lines) {
        for key in frame.keys.split(';') {
            if let Ok(key) = key.trim().parse::<i64>() {
                *counts.entry(key).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// Every Kafka API the cluster uses (Fetch and Vote of KRaft, heartbeats, registrations,
/// InitProducerId from clients...) is recognised and counted as Wireshark counts it.
#[test]
fn wireshark_counts_the_same_requests_of_every_api() {
    if !have_tshark() {
        return;
    }
    for f in all() {
        let ours: BTreeMap<i64, u64> = f.report["summary"]["api_keys"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| {
                (
                    v["api_key"].as_i64().unwrap(),
                    v["requests"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            ours,
            tshark_request_counts(f),
            "{}: requests per API key",
            f.name
        );
    }
}

/// The load client's grants, by its connection's port and correlation id: (broker,
/// producer id, epoch).
fn client_grants(truth: &Value) -> BTreeMap<(u64, i64), (i64, i64, i64)> {
    let mut grants = BTreeMap::new();
    for conn in truth["client_connections"]
        .as_array()
        .expect("client_connections")
    {
        let port = conn["client_port"].as_u64().unwrap();
        let broker = conn["broker_id"].as_i64().unwrap();
        for g in conn["grants"].as_array().unwrap() {
            let n = |i: usize| g[i].as_i64().unwrap();
            grants.insert((port, n(0)), (broker, n(1), n(2)));
        }
    }
    grants
}

/// The rig's load client recorded every producer id it was granted, with its connection
/// and correlation id: each is the `producer_ids` entry of that exchange, holding the same
/// id and epoch, placed in the committed block of its broker that holds the id; and the
/// client's address is the broker's listener the rig registered.
#[test]
fn every_producer_id_the_load_got_is_an_entry_in_its_brokers_block() {
    for f in all() {
        let committed = committed_blocks(&f.truth);
        let lost = lost(&f.truth);
        let grants = client_grants(&f.truth);
        assert!(
            grants.len() >= 40_000,
            "{}: {} grants",
            f.name,
            grants.len()
        );
        let mut entries = BTreeMap::new();
        for e in &f.producers {
            let client = e["client"].as_str().unwrap();
            let port: u64 = client.rsplit_once(':').unwrap().1.parse().unwrap();
            let corr = e["correlation_id"].as_i64().unwrap();
            entries.insert((port, corr), e);
        }
        // A capture begun mid-load misses each connection's first exchanges, and only those.
        let midstream = f.truth["scenario"] == "midstream";
        let mut first_entry: BTreeMap<u64, i64> = BTreeMap::new();
        for &(port, corr) in entries.keys() {
            first_entry.entry(port).or_insert(corr);
        }
        let mut faults = Vec::new();
        for (&(port, corr), &(broker, id, epoch)) in &grants {
            let Some(e) = entries.get(&(port, corr)) else {
                let before_capture = first_entry.get(&port).is_none_or(|&first| corr < first);
                if !(midstream && before_capture) {
                    faults.push(format!("port {port} corr {corr}: no entry"));
                }
                continue;
            };
            let listener = &f.truth["broker_listeners"][broker.to_string()];
            let block = committed
                .iter()
                .find(|b| b.0 == broker && (b.2..b.2 + b.3).contains(&id));
            // a broker keeps granting from its block after the next one arrives
            // (Kafka's prefetch): `previous_block`, never a fault
            let placement = e["placement"].as_str().unwrap_or("-");
            let placed_ok = match block {
                Some(b) if lost.contains_key(&b.2) => {
                    ["before_capture", "previous_block", "unknown"].contains(&placement)
                }
                Some(b) => {
                    ["in_block", "previous_block"].contains(&placement) && e["block_start"] == b.2
                }
                None => false,
            };
            // the registrations name each broker's listener, unless the capture began
            // after them: then the broker is unknown (both brokers share one host)
            let broker_ok = match midstream {
                false => e["broker_id"] == broker && e["broker_source"] == "broker_registration",
                true => e["broker_id"].is_null(),
            };
            if e["producer_id"] != id
                || e["producer_epoch"] != epoch
                || e["server"] != *listener
                || !placed_ok
                || !broker_ok
            {
                faults.push(format!(
                    "port {port} corr {corr}: {e} against {broker} {id} {epoch} in {block:?}"
                ));
            }
        }
        assert!(
            faults.is_empty(),
            "{}: {} faults, first {:?}",
            f.name,
            faults.len(),
            &faults[..faults.len().min(3)]
        );
        let summary = &f.report["producer_ids"]["summary"];
        assert_eq!(
            summary["duplicates"], 0,
            "{}: no duplicate on a healthy cluster",
            f.name
        );
        for fault in ["another_brokers_block", "older_block", "outside_blocks"] {
            assert_eq!(summary[fault], 0, "{}: {fault}", f.name);
        }
    }
}

/// Each fixture's report equals its committed golden (`scripts/bless-golden` writes them):
/// a golden, not a truth, but it shows in review what a change did to real captures.
#[test]
fn reports_equal_their_goldens() {
    for f in all() {
        let golden = root().join(format!("fixtures/kafka-real/{}.report.json", f.name));
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(&golden).expect("golden report; run scripts/bless-golden"),
        )
        .unwrap();
        assert!(
            f.report == expected,
            "{}: report differs from {}",
            f.name,
            golden.display()
        );
    }
}

/// A capture started after a broker asked for a block and before the controller answered
/// (the mid-stream start of an incident's capture): the answer matches no request read,
/// so its block is not known. Its bytes read as a block's grant, and the verdict says
/// that block was compared with no other instead of calling the capture correct. The
/// block is one the controllers committed (truth from their metadata log).
#[test]
fn a_capture_started_between_a_block_request_and_its_answer_doubts_that_block() {
    let dir = tempfile::tempdir().unwrap();
    for f in all().iter().filter(|f| f.name.ends_with("-steady")) {
        let blocks = f.report["producer_id_blocks"]["blocks"].as_array().unwrap();
        let cut_after = blocks[blocks.len() / 2]["request_frame"].as_u64().unwrap();
        let r = cut_after_a_block_request(f, cut_after, dir.path());
        assert_eq!(
            r["verdict"]["code"], "correct_as_far_as_captured",
            "{}",
            f.name
        );
        let cut_blocks = r["producer_id_blocks"]["blocks"].as_array().unwrap().len();
        let after = blocks
            .iter()
            .filter(|b| b["request_frame"].as_u64() > Some(cut_after));
        assert_eq!(cut_blocks, after.count(), "{}", f.name);
    }
}

/// A block's answer that is the last thing its connection carries, in a capture started
/// after its request (a broker that restarted asks again on a new connection): nothing
/// after it confirms its framing and the connection is never proven Kafka, so it was
/// counted nowhere and the verdict said `correct` with a committed block unread. Cut
/// after the request of the last block of every connection of the restart captures.
#[test]
fn a_block_answer_last_on_its_connection_after_the_capture_starts_is_doubted() {
    let dir = tempfile::tempdir().unwrap();
    for f in all().iter().filter(|f| f.name.ends_with("-broker-restart")) {
        let blocks = f.report["producer_id_blocks"]["blocks"].as_array().unwrap();
        let mut last_on_connection = BTreeMap::new();
        for b in blocks {
            last_on_connection.insert(b["connection"].as_u64().unwrap(), b);
        }
        assert!(last_on_connection.len() >= 3, "{}", f.name);
        for b in last_on_connection.values() {
            let cut_after = b["request_frame"].as_u64().unwrap();
            cut_after_a_block_request(f, cut_after, dir.path());
        }
    }
}

/// The report of `f`'s capture cut after frame `cut_after`, a block's request: the
/// blocks whose answers come after the cut are ones the controllers committed (their
/// metadata log), each is counted as a like-block, and the verdict says they were
/// compared with no other block.
fn cut_after_a_block_request(f: &Fixture, cut_after: u64, dir: &std::path::Path) -> Value {
    let blocks = f.report["producer_id_blocks"]["blocks"].as_array().unwrap();
    let frame = |b: &Value, side: &str| b[format!("{side}_frame")].as_u64().unwrap();
    let orphans: Vec<&Value> = blocks
        .iter()
        .filter(|b| frame(b, "request") <= cut_after && frame(b, "response") > cut_after)
        .collect();
    assert!(!orphans.is_empty(), "{}: cut after {cut_after}", f.name);
    let committed = committed_blocks(&f.truth);
    for b in &orphans {
        assert!(committed.contains(&key(b)), "{}: {b} committed", f.name);
    }
    let file = f.capture.to_str().unwrap();
    let whole = crate::common::gunzipped(file, dir, "whole.pcap");
    let cut = dir.join("cut.pcap");
    let skip = usize::try_from(cut_after).unwrap();
    std::fs::write(&cut, crate::cut_sweep::cut_at(&whole, skip)).unwrap();
    let r = report(&[
        cut.to_str().unwrap(),
        "--compact",
        "--quiet",
        "--no-producer-entries",
    ]);
    let (n, place) = (
        orphans.len() as u64,
        format!("{} cut after {cut_after}", f.name),
    );
    assert_eq!(r["summary"]["unmatched_like_blocks"], n, "{place}");
    assert_eq!(r["verdict"]["facts"]["unmatched_like_blocks"], n, "{place}");
    let headline = r["verdict"]["headline"].as_str().unwrap();
    assert_ne!(r["verdict"]["code"], "correct", "{place}: {headline}");
    assert!(
        headline.contains("not read has the bytes of an AllocateProducerIds answer granting a block, compared with no other block (unmatched_like_blocks)")
            || headline.contains("not read have the bytes of AllocateProducerIds answers granting blocks, compared with no other block (unmatched_like_blocks)"),
        "{place}: {headline}"
    );
    r
}
