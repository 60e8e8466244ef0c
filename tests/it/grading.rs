//! Issue 38, point 4: the grade is decided by what concerns producer ids. A message of an
//! API that carries none (the inter-broker Fetch response a restarting broker's RST cut) is
//! listed as `info`, names its API, and neither lowers the verdict nor fails a
//! `--fail-on warning` gate. The API each names is Wireshark's: the request with its
//! correlation id on its TCP stream.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{pidshark, report, root};
use crate::wireshark::have_tshark;

/// Real captures whose streams end inside an inter-broker message: two restarts, a ring
/// file that ends mid-Fetch, and a transactional run stopped mid-Fetch.
const CUT_ELSEWHERE: [(&str, &str); 4] = [
    ("3.9.1-broker-restart.pcap.gz", "3.9.1-broker-restart"),
    ("4.4.0-broker-restart.pcap.gz", "4.4.0-broker-restart"),
    ("3.9.1-ring.2.pcap.gz", "3.9.1-ring"),
    ("3.9.1-transactions.pcap.gz", "3.9.1-transactions"),
];

fn incomplete(report: &Value) -> Vec<&Value> {
    report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["kind"] == "kafka_frame_incomplete")
        .collect()
}

#[test]
fn a_message_cut_that_carries_no_producer_ids_does_not_grade_the_verdict() {
    for (file, _) in CUT_ELSEWHERE {
        let path = format!("fixtures/kafka-real/{file}");
        let r = report(&[&path]);
        let cut = incomplete(&r);
        assert!(!cut.is_empty(), "{file}: the fixture ends inside a message");
        for d in &cut {
            let api = d["facts"]["api_key"].as_i64();
            assert_eq!(api, Some(1), "{file}: a Fetch, named: {d}");
            assert_eq!(d["severity"], "info", "{file}: {d}");
            assert!(d["message"].as_str().unwrap().contains("Fetch response"));
        }
        assert_eq!(r["verdict"]["code"], "correct", "{file}: {}", r["verdict"]);
        let by_severity = &r["summary"]["diagnostics_by_severity"];
        assert_eq!(by_severity["warning"], 0, "{file}: {by_severity}");
        assert_eq!(by_severity["error"], 0, "{file}: {by_severity}");
        let (kinds, severities) = (
            r["summary"]["diagnostics"].as_object().unwrap(),
            by_severity.as_object().unwrap(),
        );
        let sum = |m: &serde_json::Map<String, Value>| -> u64 {
            m.values().map(|n| n.as_u64().unwrap()).sum()
        };
        assert_eq!(sum(kinds), sum(severities), "{file}: each counted once");
        pidshark()
            .args([path.as_str(), "--fail-on", "warning", "--format", "text"])
            .assert()
            .success();
    }
}

/// One cut where the API is not known (a request whose head was not read) still warns:
/// it may have been AllocateProducerIds.
#[test]
fn a_message_cut_of_an_api_not_known_still_grades() {
    let r = report(&["fixtures/variants/rotated-1.pcap"]);
    let cut = incomplete(&r);
    assert_eq!(cut.len(), 1, "{cut:?}");
    assert_eq!(cut[0]["severity"], "warning");
    assert!(cut[0]["facts"].get("api_key").is_none());
    assert_eq!(r["verdict"]["code"], "correct_with_warnings");
    pidshark()
        .args([
            "fixtures/variants/rotated-1.pcap",
            "--fail-on",
            "warning",
            "--format",
            "text",
        ])
        .assert()
        .code(1);
}

/// The request tshark sees on `stream` with `correlation_id`: its API key (from the
/// capture's one tshark run, [`crate::wireshark::tshark_kafka_lines`]).
fn tshark_request_key(capture: &str, ports: &[u16], stream: u64, correlation_id: i64) -> i64 {
    let lines = crate::wireshark::tshark_kafka_lines(capture, ports);
    let keys: Vec<i64> = crate::wireshark::kafka_frames(&lines)
        .filter(|f| f.stream == stream)
        .flat_map(|f| {
            f.requests()
                .filter(|(_, corr)| *corr == correlation_id)
                .map(|(key, _)| key.parse::<i64>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        keys.len(),
        1,
        "{capture}: stream {stream}, correlation id {correlation_id}: {keys:?}"
    );
    keys[0]
}

#[test]
fn wireshark_names_the_same_api_for_each_message_cut() {
    if !have_tshark() {
        return;
    }
    for (file, truth) in CUT_ELSEWHERE {
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(
                root().join(format!("fixtures/kafka-real/{truth}.truth.json")),
            )
            .unwrap(),
        )
        .unwrap();
        let ports = crate::kafka_real::ports(&truth);
        // tshark reads the gzipped file as it is
        let path = format!("fixtures/kafka-real/{file}");
        let capture = root().join(&path);
        let r = report(&[&path]);
        for d in incomplete(&r) {
            let stream = d["connection"].as_u64().unwrap();
            let corr = d["facts"]["correlation_id"]
                .as_i64()
                .expect("correlation id");
            let theirs = tshark_request_key(capture.to_str().unwrap(), &ports, stream, corr);
            assert_eq!(Some(theirs), d["facts"]["api_key"].as_i64(), "{file}: {d}");
        }
    }
}

/// Per TCP stream of `capture`, by tshark: the API keys of its requests and its first
/// request's frame.
fn tshark_streams(capture: &str, ports: &[u16]) -> BTreeMap<u64, (BTreeSet<i64>, u64)> {
    let out = Command::new("tshark")
        .args(["-r", capture, "-n"])
        .args(crate::wireshark::decode_as(ports))
        .args([
            "-Y",
            "kafka.request_key",
            "-T",
            "fields",
            "-E",
            "aggregator=;",
        ])
        .args([
            "-e",
            "frame.number",
            "-e",
            "tcp.stream",
            "-e",
            "kafka.request_key",
        ])
        .output()
        .expect("tshark runs");
    let mut streams: BTreeMap<u64, (BTreeSet<i64>, u64)> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let (Ok(frame), Ok(stream)) = (f[0].parse::<u64>(), f[1].parse::<u64>()) else {
            continue;
        };
        let entry = streams.entry(stream).or_insert((BTreeSet::new(), frame));
        entry
            .0
            .extend(f[2].split(';').filter_map(|k| k.parse::<i64>().ok()));
    }
    streams
}

/// `whole` (a pcap) with a copy of record `frame` (1-based) put right after it, its last
/// TCP payload byte changed: a retransmission whose bytes conflict with the first.
fn with_conflict(whole: &Path, frame: u64) -> Vec<u8> {
    let (mut out, records) = crate::common::pcap_records(whole);
    for (i, (head, bytes)) in records.into_iter().enumerate() {
        out.extend_from_slice(&head);
        out.extend_from_slice(&bytes);
        if i as u64 + 1 == frame {
            // Ethernet, then IPv4's total length says where the TCP payload ends
            let ip_len = u16::from_be_bytes([bytes[16], bytes[17]]) as usize;
            let mut copy = bytes.clone();
            copy[14 + ip_len - 1] ^= 0xff;
            out.extend_from_slice(&head);
            out.extend_from_slice(&copy);
        }
    }
    out
}

/// Issue 38, point 4, for warnings about a connection's wire: a retransmission whose
/// bytes conflict with the first copy's, planted on a real capture's inter-broker Fetch
/// connection (only ApiVersions and Fetch requests, by tshark), is listed as `info` and the verdict stays
/// `correct`, `--fail-on warning` passing; planted on the connection that carries
/// AllocateProducerIds, it warns.
#[test]
fn a_wire_warning_grades_only_on_a_connection_that_carries_producer_ids() {
    if !have_tshark() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let name = "4.4.0-steady";
    let whole = crate::common::gunzipped(
        &format!("fixtures/kafka-real/{name}.pcap.gz"),
        dir.path(),
        "whole.pcap",
    );
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("fixtures/kafka-real/{name}.truth.json")))
            .unwrap(),
    )
    .unwrap();
    let ports = crate::kafka_real::ports(&truth);
    let streams = tshark_streams(whole.to_str().unwrap(), &ports);
    let fetch_only = streams
        .values()
        .find(|(keys, _)| keys.contains(&1) && keys.iter().all(|k| [1, 18].contains(k)))
        .expect("an inter-broker Fetch connection");
    let allocating = streams
        .values()
        .find(|(keys, _)| keys.contains(&67))
        .expect("a connection with AllocateProducerIds");
    for ((_, frame), severity, code) in [
        (fetch_only, "info", "correct"),
        (allocating, "warning", "correct_with_warnings"),
    ] {
        let planted = dir.path().join(format!("conflict-{frame}.pcap"));
        std::fs::write(&planted, with_conflict(&whole, *frame)).unwrap();
        let path = planted.to_str().unwrap();
        let r = report(&[path]);
        let conflicts: Vec<&Value> = r["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "tcp_overlap_conflict")
            .collect();
        assert_eq!(conflicts.len(), 1, "frame {frame}: {}", r["diagnostics"]);
        assert_eq!(conflicts[0]["frame"], frame + 1, "{}", conflicts[0]);
        assert_eq!(conflicts[0]["severity"], severity, "{}", conflicts[0]);
        assert_eq!(r["verdict"]["code"], code, "{}", r["verdict"]);
        let warnings = &r["summary"]["diagnostics_by_severity"]["warning"];
        assert_eq!(warnings, u64::from(severity == "warning"), "frame {frame}");
        let gate = pidshark()
            .args([path, "--fail-on", "warning", "--quiet"])
            .assert();
        match severity {
            "info" => gate.success(),
            _ => gate.code(1),
        };
    }
}
