//! The controllers' `__cluster_metadata` logs, read natively and compared with the wire,
//! against truth from Kafka itself: the rig keeps each controller's log beside its capture
//! (`fixtures/kafka-real/<name>.metadata/<node>/`) with what Kafka's own DumpLogSegments
//! printed of it, and `scripts/make-metadata-log-fixtures` writes edited, cut and
//! recompressed copies of one (`fixtures/metadata-log/`), each read back by DumpLogSegments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pidshark::diag::Kind;
use pidshark::metadata_log::{self, Limits, LogProblem, MetadataLog};
use pidshark::report::model::Report;
use serde_json::Value;

use crate::common::{pidshark, root};

const REAL: [&str; 15] = [
    "3.9.1-steady",
    "3.9.1-controller-kill",
    "3.9.1-broker-restart",
    "3.9.1-midstream",
    "3.9.1-busy-start",
    "3.9.1-ring",
    "3.9.1-transactions",
    "4.4.0-steady",
    "4.4.0-controller-kill",
    "4.4.0-broker-restart",
    "4.4.0-midstream",
    "4.4.0-busy-start",
    "4.4.0-ring",
    "4.4.0-transactions",
    "4.4.0-two-hosts",
];

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn truth(name: &str) -> Value {
    json(&root().join(format!("fixtures/kafka-real/{name}.truth.json")))
}

/// The truth's `metadata_log_dirs`, as paths.
fn log_dirs(name: &str, truth: &Value) -> Vec<String> {
    let dirs = truth["metadata_log_dirs"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: truth has no metadata_log_dirs"));
    dirs.iter()
        .map(|d| {
            root()
                .join("fixtures/kafka-real")
                .join(d.as_str().unwrap())
                .display()
                .to_string()
        })
        .collect()
}

fn read(paths: &[String]) -> MetadataLog {
    metadata_log::read(paths, Limits::default()).unwrap_or_else(|e| panic!("{paths:?}: {e}"))
}

/// `ProducerIdsRecord` as Kafka's `MetadataRecordType` names it: `PRODUCER_IDS_RECORD`.
fn kafka_name(ours: &str) -> String {
    let mut out = String::new();
    for (i, c) in ours.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    // ControlRecordType's names where the camel case does not split as they do
    out.replace("K_RAFT", "KRAFT")
}

fn counts_in_kafka_names(counts: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    counts.iter().map(|(k, v)| (kafka_name(k), *v)).collect()
}

fn counts_of(value: &Value) -> BTreeMap<String, u64> {
    value
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

/// (offset, broker, broker epoch, next producer id, leader epoch) of each record.
type RecordKey = (i64, i64, i64, i64, i64);

fn our_blocks(log: &MetadataLog) -> Vec<RecordKey> {
    log.blocks
        .iter()
        .filter(|b| !b.from_snapshot)
        .map(|b| {
            (
                b.place.offset,
                i64::from(b.broker_id),
                b.broker_epoch,
                b.next_producer_id,
                i64::from(b.place.leader_epoch),
            )
        })
        .collect()
}

/// Each controller's own directory, read alone, holds what DumpLogSegments printed of it:
/// its records by type, its control records, its ProducerIdsRecords one by one.
#[test]
fn each_controllers_log_reads_as_dump_log_segments_printed_it() {
    for name in REAL {
        let truth = truth(name);
        for dir in log_dirs(name, &truth) {
            let node = Path::new(&dir)
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let log = read(std::slice::from_ref(&dir));
            assert!(log.problems.is_empty(), "{name}/{node}: {:?}", log.problems);
            // the segments' records, and the snapshots' (dumped apart)
            let mut records = counts_of(&truth["metadata_records_by_type"][&node]);
            let mut control = counts_of(&truth["metadata_control_records_by_type"][&node]);
            for snap in truth["metadata_snapshot_records_by_type"][&node]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(_, v)| v)
            {
                for (k, v) in counts_of(&snap["records"]) {
                    *records.entry(k).or_default() += v;
                }
                for (k, v) in counts_of(&snap["control_records"]) {
                    *control.entry(k).or_default() += v;
                }
            }
            assert_eq!(
                counts_in_kafka_names(&log.records_by_type),
                records,
                "{name}/{node}: records by type"
            );
            assert_eq!(
                counts_in_kafka_names(&log.control_records),
                control,
                "{name}/{node}: control records by type"
            );
            let expected: Vec<RecordKey> = truth["metadata_producer_ids_records"][&node]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let n = |f: &str| r[f].as_i64().unwrap();
                    (
                        n("offset"),
                        n("broker_id"),
                        n("broker_epoch"),
                        n("next_producer_id"),
                        n("leader_epoch"),
                    )
                })
                .collect();
            assert_eq!(
                our_blocks(&log),
                expected,
                "{name}/{node}: ProducerIdsRecords"
            );
        }
    }
}

/// Every controller's log together: the blocks committed (on a majority of them, as the
/// rig decides from Kafka's dumps) are the blocks pidshark reads, with their starts.
#[test]
fn the_controllers_logs_together_hold_the_committed_blocks() {
    for name in REAL {
        let truth = truth(name);
        let log = read(&log_dirs(name, &truth));
        let ours: Vec<(i64, i64, i64, Option<i64>, i64)> = log
            .blocks
            .iter()
            .filter(|b| !b.from_snapshot)
            .map(|b| {
                (
                    i64::from(b.broker_id),
                    b.broker_epoch,
                    b.next_producer_id,
                    b.start,
                    b.place.offset,
                )
            })
            .collect();
        let committed: Vec<(i64, i64, i64, Option<i64>, i64)> = truth["committed_blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let n = |f: &str| b[f].as_i64().unwrap();
                (
                    n("broker_id"),
                    n("broker_epoch"),
                    n("next_producer_id"),
                    Some(n("start")),
                    n("metadata_offset"),
                )
            })
            .collect();
        assert_eq!(ours, committed, "{name}");
        assert!(!committed.is_empty(), "{name}: no committed block");
    }
}

/// pidshark on a capture with its controllers' logs: every delivered block has its
/// record, every committed block the capture watched was delivered; nothing is reported.
fn compare(capture: &str, logs: &[String]) -> Report {
    compare_files(&[capture.to_owned()], logs)
}

/// As [`compare`], the captures read together.
fn compare_files(captures: &[String], logs: &[String]) -> Report {
    let capture = captures.join(" ");
    let mut config = pidshark::Config::for_inputs(captures.to_vec());
    config.metadata_logs = logs.to_vec();
    pidshark::run(
        &config,
        &mut pidshark::report::sink::Each(|_: &pidshark::report::model::Exchange| Ok(())),
    )
    .unwrap_or_else(|e| panic!("{capture}: {e}"))
}

fn finding_kinds(report: &Report) -> Vec<&'static str> {
    report
        .producer_id_blocks
        .findings
        .iter()
        .map(|f| f.kind.as_str())
        .filter(|k| k.contains("committed") || k.contains("deliver") || k.contains("mismatch"))
        .collect()
}

#[test]
fn on_every_real_capture_the_wire_and_the_log_agree() {
    for name in REAL {
        let truth = truth(name);
        // a ring's files are read together; every other run is one file
        let files: Vec<String> = match truth["capture_files"].as_array() {
            Some(files) => files
                .iter()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect(),
            None => vec![truth["fixture"].as_str().unwrap().to_owned()],
        };
        let captures: Vec<String> = files
            .iter()
            .map(|f| {
                root()
                    .join("fixtures/kafka-real")
                    .join(f)
                    .display()
                    .to_string()
            })
            .collect();
        let report = compare_files(&captures, &log_dirs(name, &truth));
        let log = report
            .metadata_log
            .as_ref()
            .expect("a metadata_log section");
        let c = log.comparison.expect("compared with the capture");
        assert_eq!(finding_kinds(&report), Vec::<&str>::new(), "{name}: {c:?}");
        assert_eq!(
            (c.not_committed, c.mismatched, c.not_delivered),
            (0, 0, 0),
            "{name}"
        );
        assert!(c.matched > 0, "{name}: {c:?}");
        assert_eq!(
            c.matched, c.wire_blocks,
            "{name}: every block on the wire matched"
        );
        // each block the capture delivered is one the rig saw committed
        let lost = truth["lost_in_capture"].as_array().unwrap().len() as u64;
        let committed = truth["committed_blocks"].as_array().unwrap().len() as u64;
        assert!(c.matched + lost <= committed, "{name}: {c:?}");
        // a killed leader's uncommitted tail is replaced by its successor's records: the
        // logs diverge there, and where the rig's shutdown (controllers stopped one after
        // the other) made a new leader, whose LeaderChange replaces the old one's last
        // NoOp; nowhere else
        for d in &report.diagnostics {
            if d.kind == Kind::MetadataLogDivergent {
                let election = d.message.contains(": LeaderChange in ");
                assert!(
                    name.ends_with("controller-kill") || election,
                    "{name}: {}",
                    d.message
                );
                assert!(d.message.contains("is kept (the higher leader epoch)"));
            } else {
                assert!(
                    !d.kind.as_str().starts_with("metadata_log"),
                    "{name}: {}",
                    d.message
                );
            }
        }
    }
}

fn made(name: &str) -> PathBuf {
    root().join("fixtures/metadata-log").join(name)
}

/// The edited copies were made from the log kept now (a rerun of the rig would change it).
fn source_is_current(truth: &Value) {
    let source = root().join(truth["source"].as_str().unwrap());
    assert!(source.exists(), "{}", source.display());
}

#[test]
fn a_log_without_one_producer_ids_record_gives_exactly_one_not_committed() {
    let truth = json(&made("removed-one.truth.json"));
    source_is_current(&truth);
    let steady = self::truth("4.4.0-steady");
    let capture = root()
        .join("fixtures/kafka-real")
        .join(steady["fixture"].as_str().unwrap());
    let report = compare(
        &capture.display().to_string(),
        &[made("removed-one").display().to_string()],
    );
    let not_committed: Vec<_> = report
        .producer_id_blocks
        .findings
        .iter()
        .filter(|f| f.kind == Kind::PidBlockNotCommitted)
        .collect();
    assert_eq!(not_committed.len(), 1, "{:?}", finding_kinds(&report));
    let f = not_committed[0];
    let removed = &truth["removed"];
    let fact = |name: &str| f.facts[name].as_f64().unwrap() as i64;
    assert_eq!(
        fact("start") + fact("len"),
        removed["next_producer_id"].as_i64().unwrap()
    );
    assert_eq!(fact("broker_id"), removed["broker_id"].as_i64().unwrap());
    assert_eq!(
        fact("broker_epoch"),
        removed["broker_epoch"].as_i64().unwrap()
    );
    assert_eq!(report.verdict.code.as_str(), "blocks_not_committed");
}

#[test]
fn a_log_cut_inside_a_batch_keeps_the_batches_before_it_and_says_where() {
    let truth = json(&made("cut-mid-batch.truth.json"));
    source_is_current(&truth);
    let path = made("cut-mid-batch.log").display().to_string();
    let log = read(std::slice::from_ref(&path));
    let cut = &truth["cut_batch"];
    match log.problems.as_slice() {
        [LogProblem::Truncated { at, .. }] => {
            assert_eq!(*at, cut["position"].as_u64().unwrap());
        }
        other => panic!("one Truncated problem, not {other:?}"),
    }
    let file = &log.files[0];
    assert!(!file.complete);
    assert_eq!(file.batches, truth["whole_batches"].as_u64().unwrap());
    assert_eq!(file.last_offset, truth["last_whole_offset"].as_i64());
    assert_eq!(file.read_len, cut["position"].as_u64().unwrap());
    let expected = records_by_type(&truth);
    assert_eq!(counts_in_kafka_names(&log.records_by_type), expected);
    // and the CLI says so
    let out = pidshark()
        .args(["--metadata-log", &path, "--compact"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["summary"]["diagnostics"]["metadata_log_truncated"],
        1
    );
}

/// Records by type, as a truth file's `records` list them.
fn records_by_type(truth: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in truth["records"].as_array().unwrap() {
        *out.entry(r["type"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    out
}

#[test]
fn every_codec_decodes_to_the_records_kafka_reads_from_it() {
    let mut seen = Vec::new();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let truth = json(&made(&format!("codecs/{codec}.truth.json")));
        source_is_current(&truth);
        let log = read(&[made(&format!("codecs/{codec}.log")).display().to_string()]);
        assert!(log.problems.is_empty(), "{codec}: {:?}", log.problems);
        assert_eq!(
            counts_in_kafka_names(&log.records_by_type),
            records_by_type(&truth),
            "{codec}"
        );
        let blocks: Vec<(i64, i64, i64, i64)> = truth["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["type"] == "PRODUCER_IDS_RECORD")
            .map(|r| {
                let d = &r["data"];
                (
                    r["offset"].as_i64().unwrap(),
                    d["brokerId"].as_i64().unwrap(),
                    d["brokerEpoch"].as_i64().unwrap(),
                    d["nextProducerId"].as_i64().unwrap(),
                )
            })
            .collect();
        let ours: Vec<(i64, i64, i64, i64)> = our_blocks(&log)
            .into_iter()
            .map(|(o, b, e, n, _)| (o, b, e, n))
            .collect();
        assert_eq!(ours, blocks, "{codec}: ProducerIdsRecords");
        let registrations: Vec<(i64, i64, i64, Vec<String>)> = truth["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["type"] == "REGISTER_BROKER_RECORD")
            .map(|r| {
                let d = &r["data"];
                let endpoints = d["endPoints"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| {
                        format!(
                            "{} {}:{}",
                            e["name"].as_str().unwrap(),
                            e["host"].as_str().unwrap(),
                            e["port"]
                        )
                    })
                    .collect();
                (
                    r["offset"].as_i64().unwrap(),
                    d["brokerId"].as_i64().unwrap(),
                    d["brokerEpoch"].as_i64().unwrap(),
                    endpoints,
                )
            })
            .collect();
        let our_registrations: Vec<(i64, i64, i64, Vec<String>)> = log
            .registrations
            .iter()
            .map(|r| {
                (
                    r.place.offset,
                    i64::from(r.broker_id),
                    r.broker_epoch,
                    r.endpoints
                        .iter()
                        .map(|e| format!("{} {}:{}", e.name, e.host, e.port))
                        .collect(),
                )
            })
            .collect();
        assert_eq!(our_registrations, registrations, "{codec}: registrations");
        assert!(!registrations.is_empty());
        let control = truth["control_records"].as_array().unwrap().len() as u64;
        assert_eq!(
            log.control_records.values().sum::<u64>(),
            control,
            "{codec}"
        );
        let blocks = our_blocks(&log);
        seen.push((log.records_by_type, blocks, log.registrations.len()));
    }
    // and all five the same
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
}

/// `pidshark --metadata-log DIR` alone reports the committed blocks in every format.
#[test]
fn a_log_alone_is_reported_in_every_format() {
    let truth = truth("4.4.0-steady");
    let dir = log_dirs("4.4.0-steady", &truth).remove(0);
    let committed = truth["committed_blocks"].as_array().unwrap().len();
    let run = |format: &str| -> String {
        let out = pidshark()
            .args(["--metadata-log", &dir, "--format", format])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let report: Value = serde_json::from_str(&run("json")).unwrap();
    let log = &report["metadata_log"];
    assert_eq!(log["blocks"].as_array().unwrap().len(), committed);
    assert!(log["comparison"].is_null());
    assert_eq!(report["verdict"]["code"], "committed_blocks_consistent");
    assert!(report["verdict"]["headline"]
        .as_str()
        .unwrap()
        .contains(&format!(
            "the metadata log commits {committed} blocks to 2 brokers"
        )));
    let last = run("ndjson");
    let last: Value = serde_json::from_str(last.lines().last().unwrap()).unwrap();
    assert_eq!(last["metadata_log"]["blocks"], log["blocks"]);
    let text = run("text");
    assert!(text.contains("Metadata log"), "{text}");
    assert!(
        text.contains(&format!("{committed} committed blocks")),
        "{text}"
    );
    let tree = run("tree");
    assert_eq!(
        tree.matches("ProducerIdsRecord  offset ").count(),
        committed,
        "{tree}"
    );
    assert_eq!(
        tree.matches("+-- NextProducerId    int64  = ").count(),
        committed
    );
    let csv = run("csv-committed");
    assert_eq!(csv.lines().count(), committed + 1, "{csv}");
    assert!(csv.starts_with("offset,broker_id,broker_epoch,"));
    let html = run("html");
    assert!(html.contains("<table id=\"committed-blocks\">"));
    assert_eq!(html.matches("<tr><td>").count(), committed.min(100));
}

/// A ProducerIdsRecord holds only the end of its block; Kafka's controller always commits
/// 1000 ids (`ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`). The log alone, one record short,
/// lists only 1000-id blocks in every format, and names the ids the removed record
/// committed (its `NextProducerId` less 1000, up to it) as missing, never as part of the
/// next block.
#[test]
fn a_log_alone_without_one_record_lists_only_whole_blocks_and_names_the_missing_one() {
    let truth = json(&made("removed-one.truth.json"));
    let next = truth["removed"]["next_producer_id"].as_i64().unwrap();
    let (missing_start, missing_end) = (next - 1000, next - 1);
    let dir = made("removed-one").display().to_string();
    let run = |format: &str| -> String {
        let out = pidshark()
            .args(["--metadata-log", &dir, "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}");
        String::from_utf8(out.stdout).unwrap()
    };
    let report: Value = serde_json::from_str(&run("json")).unwrap();
    let blocks = report["metadata_log"]["blocks"].as_array().unwrap();
    assert_eq!(
        blocks.len() as u64,
        truth["producer_ids_records_after"].as_u64().unwrap()
    );
    for b in blocks {
        assert_eq!(b["producer_id_len"], 1000, "{b}");
        assert_eq!(
            b["producer_id_start"].as_i64().unwrap() + 1000,
            b["next_producer_id"].as_i64().unwrap()
        );
    }
    let missing: Vec<&Value> = blocks
        .iter()
        .filter(|b| b.get("missing_before").is_some())
        .collect();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert_eq!(missing[0]["missing_before"]["start"], missing_start);
    assert_eq!(missing[0]["missing_before"]["end"], missing_end);
    let gaps: Vec<&Value> = report["producer_id_blocks"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "pid_committed_gap")
        .collect();
    assert_eq!(gaps.len(), 1);
    assert_eq!(gaps[0]["facts"]["missing_start"], missing_start);
    assert_eq!(gaps[0]["facts"]["missing_end"], missing_end);
    let named = format!("{missing_start}..={missing_end}");
    assert!(report["verdict"]["headline"]
        .as_str()
        .unwrap()
        .contains(&named));
    let text = run("text");
    assert!(
        text.contains(&format!("no record commits {named} before it")),
        "{text}"
    );
    let html = run("html");
    assert!(html.contains(&format!("no record commits {named} before it")));
    let csv = run("csv-committed");
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert!(rows.iter().all(|r| r[col("producer_id_len")] == "1000"));
    let flagged: Vec<_> = rows
        .iter()
        .filter(|r| !r[col("missing_before_start")].is_empty())
        .collect();
    assert_eq!(flagged.len(), 1);
    assert_eq!(
        flagged[0][col("missing_before_start")],
        missing_start.to_string()
    );
    assert_eq!(
        flagged[0][col("missing_before_end")],
        missing_end.to_string()
    );
}

#[test]
fn a_missing_log_is_an_error_naming_it() {
    let out = pidshark()
        .args(["--metadata-log", "no/such/__cluster_metadata-0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no/such/__cluster_metadata-0"), "{stderr}");
}

/// The log's RegisterBrokerRecords name the brokers' addresses, where the capture does not.
#[test]
fn a_logs_registrations_name_the_brokers_addresses() {
    let truth = truth("4.4.0-steady");
    let dir = log_dirs("4.4.0-steady", &truth).remove(0);
    let report = crate::common::report(&["fixtures/seed-v0.pcap", "--metadata-log", &dir]);
    let ours: BTreeMap<String, String> = report["brokers_by_address"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            assert_eq!(a["source"], "metadata_log", "{a}");
            assert!(
                a["metadata_log_offset"].is_i64() && a.get("frame").is_none(),
                "{a}"
            );
            (
                a["broker_id"].to_string(),
                a["address"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let listeners: BTreeMap<String, String> = truth["broker_listeners"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(id, addr)| (id.clone(), addr.as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(ours, listeners);
}

/// Issue 40: `--metadata-log` checks what it is given as a capture is checked: a file
/// whose first batch is no Kafka record batch (a text file, a capture, a gzip file) exits
/// 2 with the reason; a controller's data directory is read through its
/// `__cluster_metadata-0` folder, and a folder with no log in it names that folder.
#[test]
fn a_metadata_log_is_checked_by_content_and_found_in_a_data_directory() {
    for not_a_log in [
        "README.md",
        "fixtures/seed-v0.pcap",
        "fixtures/kafka-real/4.4.0-steady.pcap.gz",
    ] {
        let out = pidshark()
            .args(["--metadata-log", not_a_log, "--quiet"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{not_a_log}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("not a metadata log"),
            "{not_a_log}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{not_a_log}: no report");
    }
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("__cluster_metadata-0");
    std::fs::create_dir(&log).unwrap();
    let node = root().join("fixtures/kafka-real/4.4.0-steady.metadata/101");
    for entry in std::fs::read_dir(&node).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), log.join(entry.file_name())).unwrap();
    }
    let read = |path: &Path| {
        let out = pidshark()
            .args(["--metadata-log", path.to_str().unwrap(), "--quiet"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        // the blocks, without the path of the file each was read from
        let blocks: Vec<Value> = report["metadata_log"]["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let mut b = b.clone();
                b.as_object_mut().unwrap().remove("file");
                b
            })
            .collect();
        blocks
    };
    let blocks = read(data.path());
    assert!(blocks.len() > 10);
    assert!(
        blocks == read(&node),
        "the same blocks through the data directory"
    );
    let empty = tempfile::tempdir().unwrap();
    let out = pidshark()
        .args(["--metadata-log", empty.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("__cluster_metadata-0 folder"));
}

/// Issue 40: a metadata log read alone has its own verdict, on what a log can show: its
/// blocks consistent (a real controller's log), or a gap where a record is missing (the
/// copy of that log with one ProducerIdsRecord removed by
/// `scripts/make-metadata-log-fixtures`); the text has no capture's sections, csv-committed
/// no delivery columns, and `--fail-on` takes the new codes.
#[test]
fn a_log_alone_has_its_own_verdict_and_only_its_own_sections() {
    let verdict = |log: &str| {
        let out = pidshark()
            .args(["--metadata-log", log, "--quiet"])
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let v = &report["verdict"];
        (
            v["code"].as_str().unwrap().to_owned(),
            v["grade"].as_str().unwrap().to_owned(),
            v["limits"].as_array().unwrap().len(),
        )
    };
    let whole = "fixtures/kafka-real/4.4.0-steady.metadata/101";
    assert_eq!(
        verdict(whole),
        ("committed_blocks_consistent".into(), "right".into(), 0)
    );
    let removed = "fixtures/metadata-log/removed-one";
    assert_eq!(
        verdict(removed),
        ("committed_blocks_gap".into(), "warned".into(), 0)
    );
    let text = pidshark()
        .args([
            "--metadata-log",
            removed,
            "--format",
            "text",
            "--color",
            "never",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.contains("a metadata log read alone (1 file), no capture"),
        "{text}"
    );
    assert!(text.contains("\nCOMMITTED BLOCKS GAP: "), "{text}");
    assert!(text.contains("22000..=22999"), "{text}");
    for heading in [
        "\nCaptures",
        "\nKafka APIs",
        "\nExchanges worth a look",
        "packets",
    ] {
        assert!(!text.contains(heading), "{heading}: {text}");
    }
    // the page too: the log's verdict, the log and the findings, no capture's parts
    let page = pidshark()
        .args(["--metadata-log", removed, "--format", "html"])
        .output()
        .unwrap();
    let page = String::from_utf8(page.stdout).unwrap();
    assert!(
        page.contains(": a metadata log read alone (1 file)</h1>"),
        "{page}"
    );
    assert!(page.contains("<h2>Metadata log</h2>"));
    assert!(page.contains("<h2>Findings ("));
    for part in [
        "id=\"facts\"",
        "<h2>Producer-ID blocks over time</h2>",
        "<h2>Latency</h2>",
        "<h2>Brokers</h2>",
        "<h2>Exchanges worth a look</h2>",
    ] {
        assert!(!page.contains(part), "{part}");
    }
    let csv = pidshark()
        .args(["--metadata-log", whole, "--format", "csv-committed"])
        .output()
        .unwrap();
    let header = String::from_utf8(csv.stdout).unwrap();
    let header = header.lines().next().unwrap().to_owned();
    assert!(header.starts_with("offset,broker_id"), "{header}");
    assert!(!header.contains("delivery"), "{header}");
    pidshark()
        .args([
            "--metadata-log",
            removed,
            "--fail-on",
            "committed_blocks_gap",
            "-o",
        ])
        .arg(std::env::temp_dir().join("pidshark-log-alone.json"))
        .assert()
        .code(1);
    pidshark()
        .args(["--metadata-log", whole, "--fail-on", "not-correct", "-o"])
        .arg(std::env::temp_dir().join("pidshark-log-alone-whole.json"))
        .assert()
        .code(0);
}
