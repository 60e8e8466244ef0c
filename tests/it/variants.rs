//! The capture variants of `fixtures/variants/` (made by `scripts/make-variant-fixtures.py`:
//! other link types and formats, mid-stream starts, losses, reordering, retransmissions,
//! conflicts, rotation, compression) against their ground truth, the diagnostics each is
//! expected to produce, and their golden reports.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::common::{pidshark, root};
use crate::truth::compare_with_truth;

/// Every variant: (name, capture paths relative to the repository, truth).
pub fn variants() -> Vec<(String, Vec<String>, Value)> {
    let dir = root().join("fixtures/variants");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".truth.json"))
        else {
            continue;
        };
        let truth: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let files = truth["files"]
            .as_array()
            .expect("variant truth lists its files")
            .iter()
            .map(|f| format!("fixtures/variants/{}", f.as_str().unwrap()))
            .collect();
        out.push((name.to_owned(), files, truth));
    }
    out
}

fn run(files: &[String]) -> (String, Value) {
    let out = pidshark()
        .args(files)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let report = serde_json::from_str(&text).unwrap();
    (text, report)
}

#[test]
fn variants_match_their_ground_truth() {
    let mut failures = Vec::new();
    for (name, files, truth) in variants() {
        let (_, report) = run(&files);
        if let Err(problem) = compare_with_truth(&report, &truth) {
            failures.push(format!("{name}: {problem}"));
        }
        // Only the client's packets: no exchange is known to be unanswered.
        if name == "one-sided" {
            let statuses: BTreeSet<&str> = report["exchanges"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["status"].as_str().unwrap())
                .collect();
            if statuses != BTreeSet::from(["response_unknown"]) {
                failures.push(format!("{name}: statuses {statuses:?}"));
            }
        }
        // Answers to requests sent before the capture (or the file) started are counted;
        // a connection that carries no request at all is not Kafka (see below).
        let unmatched = &report["summary"]["unmatched_responses"];
        if name != "one-sided-responses" && *unmatched != truth["unmatched_responses"] {
            failures.push(format!(
                "{name}: unmatched_responses {unmatched}, truth has {}",
                truth["unmatched_responses"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The diagnostic kinds a variant produces are those its truth expects. Kinds the truth
/// does not list but that follow from what it records are allowed, each for a reason:
/// `pid_*` findings are the analysis's (tested on `fixtures/analysis`);
/// `midstream_start` is informational; `kafka_framing_lost` accompanies a `tcp_gap` that
/// fell inside a frame; `kafka_frame_incomplete` is what a frame cut by the end of the
/// capture (a `partial_frames` entry with bytes present) gives.
///
/// A deliberate difference from the truth: a connection with no request at all (as in
/// `one-sided-responses`) is not recognised as Kafka (`not_kafka`), so its responses are
/// not in `unmatched_responses`: a server's lone length-prefixed answers look the same in
/// other protocols (Thrift's framed transport). With the `--port` its diagnostic names it
/// is read, and the count is the truth's (`a_server_only_capture_is_read_...`).
#[test]
fn variants_give_exactly_their_expected_diagnostics() {
    let mut failures = Vec::new();
    for (name, files, truth) in variants() {
        let (_, report) = run(&files);
        let want: BTreeSet<String> = truth["expected_diagnostics"]
            .as_array()
            .map(|a| a.iter().map(|k| k.as_str().unwrap().to_owned()).collect())
            .unwrap_or_default();
        let cut_frame = truth["partial_frames"]
            .as_array()
            .is_some_and(|p| p.iter().any(|f| f["bytes_present"].as_u64() > Some(0)));
        let allowed = |kind: &str| match kind {
            // findings about the blocks are tested on fixtures/analysis
            k if k.starts_with("pid_") => true,
            "midstream_start" => true,
            "kafka_framing_lost" => want.contains("tcp_gap"),
            "kafka_frame_incomplete" => cut_frame,
            // the deliberate difference above: a connection without requests is not Kafka
            "not_kafka" => name == "one-sided-responses",
            // the truth's decoder does not judge capture points (tests/it/verdict.rs does)
            "one_sided_connection" => name == "one-sided",
            _ => false,
        };
        let got: BTreeSet<String> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["kind"].as_str().unwrap().to_owned())
            .collect();
        let missing: Vec<&String> = want
            .iter()
            .filter(|k| !got.contains(*k) && *k != "midstream_start")
            .collect();
        let extra: Vec<&String> = got
            .iter()
            .filter(|k| !want.contains(*k) && !allowed(k))
            .collect();
        if !missing.is_empty() || !extra.is_empty() {
            failures.push(format!("{name}: missing {missing:?}, unexpected {extra:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn variants_match_their_golden_reports() {
    let mut failures = Vec::new();
    for (name, files, _) in variants() {
        let (text, _) = run(&files);
        let golden = root().join(format!("fixtures/variants/{name}.report.json"));
        match std::fs::read_to_string(&golden) {
            Ok(expected) if expected == text => {}
            Ok(_) => failures.push(format!("{name}: differs from {}", golden.display())),
            Err(_) => failures.push(format!(
                "{name}: no golden report; run scripts/bless-golden"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Link types and formats the contract names, each covered by some fixture.
#[test]
fn fixtures_cover_every_link_type_and_format() {
    let mut link_types = BTreeSet::new();
    let mut formats = BTreeSet::new();
    for (_, files, _) in variants() {
        let (_, report) = run(&files);
        for capture in report["captures"].as_array().unwrap() {
            formats.insert(capture["format"].as_str().unwrap().to_owned());
            for lt in capture["link_types"].as_array().unwrap() {
                link_types.insert(lt.as_str().unwrap().to_owned());
            }
        }
    }
    for lt in ["ETHERNET", "LINUX_SLL", "LINUX_SLL2", "RAW", "NULL", "LOOP"] {
        assert!(
            link_types.contains(lt),
            "no fixture has link type {lt}: {link_types:?}"
        );
    }
    for f in ["pcap", "pcapng"] {
        assert!(formats.contains(f), "no fixture in {f}");
    }
    assert!(Path::new(&root().join("fixtures/variants/capture.pcap.gz")).exists());
}

/// A capture of only the server's direction: by default each connection is given up out
/// loud with the `--port` that would read it, and with that option every answer is
/// counted in `unmatched_responses`, as the truth has it.
#[test]
fn a_server_only_capture_is_read_with_the_port_the_diagnostic_names() {
    let (_, files, truth) = variants()
        .into_iter()
        .find(|(name, _, _)| name == "one-sided-responses")
        .expect("the one-sided-responses variant");
    let port = truth["kafka_port"].to_string();
    let (_, default) = run(&files);
    let hints: Vec<&str> = default["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "not_kafka")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        hints.len() as u64,
        default["summary"]["tcp_connections"].as_u64().unwrap()
    );
    assert!(
        hints.iter().all(|m| m.ends_with(&format!("--port {port}"))),
        "{hints:?}"
    );
    let mut args = files;
    args.extend(["--port".to_owned(), port]);
    let (_, forced) = run(&args);
    assert_eq!(
        forced["summary"]["unmatched_responses"],
        truth["unmatched_responses"]
    );
    assert_eq!(forced["summary"]["not_kafka_connections"], 0);
}
