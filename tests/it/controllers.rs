//! The controller timeline (issue 28, point 4) against truth pidshark did not write: what
//! `scripts/make-producer-fixtures.py` sent in `stale-controller.pcap` (a leader of epoch 4
//! granting a block after the leader of epoch 5 began it), and who led the real Kafka
//! clusters of `fixtures/kafka-real` when, as the controllers' own logs say
//! (`controller_leaders`, read by `scripts/kafka/rig`).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{fixture, report, root};

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// A planted-fault capture's truth and report, read with the truth's ports as Kafka's.
fn producers_fixture(name: &str) -> (Value, Value) {
    let truth = read_json(&fixture(&format!("producers/{name}.truth.json")));
    let path = format!("fixtures/producers/{name}.pcap");
    let ports: Vec<String> = truth["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| format!("--port={p}"))
        .collect();
    let mut args = vec![path.as_str(), "--quiet", "--no-producer-entries"];
    args.extend(ports.iter().map(String::as_str));
    let report = report(&args);
    (truth, report)
}

fn stale_findings(report: &Value) -> Vec<&Value> {
    report["producer_id_blocks"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == "pid_stale_controller")
        .collect()
}

/// Microseconds since the Unix epoch of a report time in seconds.
fn micros(unix_time: &Value) -> i64 {
    (unix_time.as_f64().expect("a time") * 1e6).round() as i64
}

#[test]
fn stale_controller_spans_are_the_leaders_the_script_made() {
    let (truth, report) = producers_fixture("stale-controller");
    let expected: Vec<Value> = truth["expected"]["controllers"]
        .as_array()
        .expect("expected controllers")
        .iter()
        .map(|c| {
            serde_json::json!([
                c["leader"],
                c["epoch"],
                c["from_frame"],
                c["to_frame"],
                c["how"],
                c["from_timestamp_us"]
            ])
        })
        .collect();
    let reported: Vec<Value> = report["controllers"]
        .as_array()
        .expect("controllers")
        .iter()
        .map(|c| {
            serde_json::json!([
                c["leader_id"],
                c["epoch"],
                c["from_frame"],
                c["to_frame"],
                c["how"],
                micros(&c["from_unix_time"])
            ])
        })
        .collect();
    assert_eq!(reported, expected);
    assert!(expected.len() >= 2, "the fixture changes leader");
}

#[test]
fn stale_controller_grant_is_the_one_planted_with_its_facts() {
    let (truth, report) = producers_fixture("stale-controller");
    let planted = truth["expected"]["stale_controller_grants"]
        .as_array()
        .expect("stale_controller_grants");
    let found = stale_findings(&report);
    assert_eq!(found.len(), planted.len(), "{found:#?}");
    assert_eq!(planted.len(), 1, "the fixture plants one");
    let addresses = truth["expected"]["controller_addresses"]
        .as_array()
        .expect("controller_addresses");
    for (f, p) in found.iter().zip(planted) {
        let facts = &f["facts"];
        assert_eq!(facts["frame"], p["response_frame"], "{f}");
        assert_eq!(facts["request_frame"], p["request_frame"], "{f}");
        assert_eq!(facts["controller"], p["server"], "{f}");
        assert_eq!(facts["controller_id"], p["controller_id"], "{f}");
        let by_address = addresses.iter().find(|a| a["address"] == p["server"]);
        assert_eq!(
            facts["controller_id"],
            by_address.expect("the server's controller")["controller_id"]
        );
        for fact in ["leader_seen", "leader_seen_epoch", "leader_seen_frame"] {
            assert_eq!(facts[fact], p[fact], "{fact}: {f}");
        }
        assert_eq!(facts["start"], p["start"], "{f}");
        assert_eq!(facts["len"], p["len"], "{f}");
        assert_eq!(f["broker_id"], p["broker_id"], "{f}");
        assert_eq!(f["connection"], p["connection"], "{f}");
        assert_eq!(f["severity"], "error");
        let frames = f["frames"].as_array().expect("frames");
        assert_eq!(frames.last(), Some(&p["response_frame"]), "{f}");
        assert!(frames.contains(&p["leader_seen_frame"]), "{f}");
    }
}

#[test]
fn captures_without_a_stale_grant_have_no_stale_controller_finding() {
    for name in ["kafka-20031", "txn-bump", "metadata-only"] {
        let (truth, report) = producers_fixture(name);
        let planted = truth["expected"]["stale_controller_grants"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(planted, 0, "{name}");
        assert!(stale_findings(&report).is_empty(), "{name}");
    }
}

/// The spans' start may lag the controller's log line "Completed transition to Leader"
/// (`from_ms`): the new leader sends its BeginQuorumEpoch requests after that
/// transition. Measured on the committed captures (pidshark's `from` minus `from_ms`):
/// 3.9.1 +89, +59, +37, +146 ms; 4.4.0 +97, +68, +236, +99 ms; two-hosts +86, +36,
/// +60 ms. The log's milliseconds are truncated and two-hosts' controllers' clock runs
/// 2.5 ms ahead, so a span may start a little before the line too.
const LAG_MS: std::ops::RangeInclusive<i64> = -50..=1000;

/// (epoch, leader) of a report's spans, checked against the truth of `name`; `full`:
/// the capture is the truth's whole capture, whose first and last packet it gives.
fn check_leaders(name: &str, truth: &Value, report: &Value, full: bool) -> usize {
    let leaders = truth["controller_leaders"].as_array().expect("leaders");
    let truth_has: BTreeSet<(i64, i64)> = leaders
        .iter()
        .map(|l| {
            (
                l["epoch"].as_i64().unwrap(),
                l["leader_id"].as_i64().unwrap(),
            )
        })
        .collect();
    let spans = report["controllers"].as_array().expect("controllers");
    for s in spans {
        let key = (
            s["epoch"].as_i64().unwrap(),
            s["leader_id"].as_i64().unwrap(),
        );
        assert!(
            truth_has.contains(&key),
            "{name}: {s} is no leader of the logs"
        );
    }
    assert!(
        stale_findings(report).is_empty(),
        "{name}: a healthy cluster"
    );
    if !full {
        return 0;
    }
    let first = truth["capture_first_packet_ms"].as_i64().expect("first");
    let last = truth["capture_last_packet_ms"].as_i64().expect("last");
    let mut checked = 0;
    for l in leaders {
        let from_ms = l["from_ms"].as_i64().expect("from_ms");
        if !(first..=last).contains(&from_ms) {
            continue;
        }
        let same = |s: &&Value| s["epoch"] == l["epoch"] && s["leader_id"] == l["leader_id"];
        let span = spans
            .iter()
            .find(same)
            .unwrap_or_else(|| panic!("{name}: no span for {l}"));
        let lag = micros(&span["from_unix_time"]) / 1000 - from_ms;
        assert!(
            LAG_MS.contains(&lag),
            "{name}: {span} starts {lag} ms after {l}"
        );
        checked += 1;
    }
    checked
}

#[test]
fn real_leaders_are_the_ones_the_controllers_logged_and_none_is_stale() {
    let dir = root().join("fixtures/kafka-real");
    let mut checked = 0;
    for release in ["3.9.1", "4.4.0"] {
        for scenario in ["steady", "controller-kill", "broker-restart", "midstream"] {
            let name = format!("{release}-{scenario}");
            let truth = read_json(&dir.join(format!("{name}.truth.json")));
            assert_eq!(truth["controller_leaders_check"], "ok", "{name}");
            let file = truth["fixture"].as_str().expect("capture");
            let report = report(&[
                &format!("fixtures/kafka-real/{file}"),
                "--quiet",
                "--no-producer-entries",
            ]);
            let n = check_leaders(&name, &truth, &report, true);
            if scenario == "controller-kill" {
                // the killed leader's successor, in the capture
                assert_eq!(n, 2, "{name}");
            }
            checked += n;
        }
    }
    assert!(checked >= 8, "{checked} leaders checked");
}

#[test]
fn two_hosts_leaders_are_the_ones_the_controllers_logged() {
    let dir = "fixtures/kafka-real";
    let truth = read_json(&root().join(format!("{dir}/4.4.0-two-hosts.truth.json")));
    let full = format!("{dir}/{}", truth["fixture"].as_str().expect("capture"));
    let report_full = report(&[&full, "--quiet", "--no-producer-entries"]);
    // both controllers killed in turn: three leaders, all in the capture
    assert_eq!(check_leaders("two-hosts", &truth, &report_full, true), 3);
    // the hosts' own captures merged: the controllers' starts after epoch 1 began, so
    // only which leaders, not when
    let views: Vec<String> = truth["view_files"]
        .as_array()
        .expect("view_files")
        .iter()
        .map(|f| format!("{dir}/{}", f.as_str().unwrap()))
        .collect();
    let mut args: Vec<&str> = views.iter().map(String::as_str).collect();
    args.push("--quiet");
    let report_views = report(&args);
    check_leaders("two-hosts views", &truth, &report_views, false);
    let epochs = |r: &Value| -> Vec<Value> {
        r["controllers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["epoch"].clone())
            .collect()
    };
    assert_eq!(epochs(&report_views), epochs(&report_full));
}

/// `scripts/kafka/rig --scenario paused-controller`, both releases: the active controller's
/// way to broker 1 goes dark before broker 1 asks for its next block, the controller is
/// paused once the block is committed, the others elect a new leader, and the kernel's
/// retransmission puts the answer on the wire after the new leader's BeginQuorumEpoch. A
/// KRaft controller answers NONE only once the block's record is committed: the block is in
/// the metadata log, in the paused leader's epoch, and the new leader granted past it. Late,
/// not stale.
#[test]
fn a_committed_block_answered_after_a_takeover_is_not_stale() {
    let dir = root().join("fixtures/kafka-real");
    for release in ["3.9.1", "4.4.0"] {
        let name = format!("{release}-paused-controller");
        let truth = read_json(&dir.join(format!("{name}.truth.json")));
        assert_eq!(truth["controller_leaders_check"], "ok", "{name}");
        let paused = truth["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["event"] == "active controller paused")
            .map(|e| e["leader"][0].as_i64().unwrap())
            .expect("a paused controller");
        let file = truth["fixture"].as_str().expect("capture");
        let report = report(&[
            &format!("fixtures/kafka-real/{file}"),
            "--quiet",
            "--no-producer-entries",
        ]);
        // the spans are the logged leaders', and no grant is called stale
        assert_eq!(check_leaders(&name, &truth, &report, true), 2, "{name}");
        let taken_at = report["controllers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["leader_id"] != paused)
            .map(|s| s["from_frame"].as_u64().unwrap())
            .expect("the new leader's span");
        let address = truth["host_addresses"][paused.to_string()]
            .as_str()
            .unwrap();
        let late: Vec<i64> = report["producer_id_blocks"]["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| {
                b["server"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{address}:"))
            })
            .filter(|b| b["response_frame"].as_u64().unwrap() > taken_at)
            .map(|b| b["start"].as_i64().unwrap())
            .collect();
        assert!(!late.is_empty(), "{name}: no answer after the takeover");
        let committed_by = |start: i64| {
            truth["committed_blocks_granted_by"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["start"] == start)
                .map(|b| b["controller_id"].as_i64().unwrap())
        };
        for start in late {
            assert_eq!(committed_by(start), Some(paused), "{name}: block {start}");
        }
        assert_eq!(report["verdict"]["facts"]["overlaps"], 0, "{name}");
    }
}
