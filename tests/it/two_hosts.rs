//! Two hosts' captures of one real Kafka cluster given together (issue 25): broker 1's host
//! and the controllers' hosts, cut by address from one capture of everything by
//! `scripts/kafka/rig --scenario two-hosts`, the controllers' clock 2.5 ms ahead. Read
//! together they must be one capture merged by time as `mergecap` merges them: the blocks
//! the controllers' metadata log committed, no regression, the packets both hosts saw read
//! once, the same blocks and findings as the capture of everything, and Wireshark's frame
//! numbers on `mergecap -w merged.pcap <files as given>`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{have_program, report, root};
use crate::wireshark::{have_tshark, tshark_frames_on, Messages};

const DIR: &str = "fixtures/kafka-real";
const NAME: &str = "4.4.0-two-hosts";

fn truth() -> Value {
    let path = root().join(format!("{DIR}/{NAME}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("two-hosts truth")).unwrap()
}

/// The view files in the order to give them, as paths from the repository root.
fn view_files(truth: &Value) -> Vec<String> {
    let files: Vec<String> = truth["view_files"]
        .as_array()
        .expect("view_files")
        .iter()
        .map(|f| format!("{DIR}/{}", f.as_str().unwrap()))
        .collect();
    assert_eq!(files.len(), 2, "broker 1's host, the controllers' hosts");
    files
}

fn full_capture(truth: &Value) -> String {
    format!("{DIR}/{}", truth["fixture"].as_str().unwrap())
}

fn two_files_report(truth: &Value) -> Value {
    let files = view_files(truth);
    report(&files.iter().map(String::as_str).collect::<Vec<_>>())
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

fn reported_blocks(report: &Value) -> BTreeSet<BlockKey> {
    let blocks = report["producer_id_blocks"]["blocks"].as_array().unwrap();
    let set: BTreeSet<BlockKey> = blocks.iter().map(key).collect();
    assert_eq!(set.len(), blocks.len(), "a block reported twice");
    set
}

/// (kind, severity, broker) of each finding, counted: what a finding says, without the
/// frames and times that differ between the merged files and the capture of everything.
fn findings(report: &Value) -> BTreeMap<(String, String, i64), usize> {
    let mut counts = BTreeMap::new();
    for f in report["producer_id_blocks"]["findings"].as_array().unwrap() {
        let k = (
            f["kind"].as_str().unwrap().to_owned(),
            f["severity"].as_str().unwrap().to_owned(),
            f["broker_id"].as_i64().unwrap_or(-1),
        );
        *counts.entry(k).or_insert(0) += 1;
    }
    counts
}

/// The fixture shows what it is meant to: blocks granted by more than one controller (two
/// leaders killed), each view with its clock shift, and every committed block in a view.
#[test]
fn the_fixture_has_blocks_of_several_controllers_in_two_views() {
    let truth = truth();
    let granted_by: BTreeSet<i64> = truth["committed_blocks_granted_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            g["controller_id"]
                .as_i64()
                .expect("a leader for each block")
        })
        .collect();
    assert!(granted_by.len() >= 2, "granted by {granted_by:?}");
    let shifts: Vec<i64> = truth["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["clock_shift_us"].as_i64().unwrap())
        .collect();
    assert!(
        shifts.iter().any(|s| *s != 0),
        "one clock shifted: {shifts:?}"
    );
    let committed: BTreeSet<i64> = truth["committed_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["start"].as_i64().unwrap())
        .collect();
    let in_views: BTreeSet<i64> = truth["committed_blocks_in_views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    assert_eq!(
        in_views, committed,
        "every broker's controller connection is seen"
    );
    assert!(committed.len() >= 10, "{} blocks", committed.len());
}

/// The two hosts' files given together report the blocks the metadata log committed (those
/// the views hold), no pid_block_regression or pid_block_overlap, and the packets both
/// hosts saw (broker 1's connections to the controllers) once each.
#[test]
fn two_hosts_files_give_the_committed_blocks_without_regression() {
    let truth = truth();
    let report = two_files_report(&truth);
    let in_views: BTreeSet<i64> = truth["committed_blocks_in_views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    let want: BTreeSet<BlockKey> = truth["committed_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .filter(|b| in_views.contains(&b.2))
        .collect();
    assert_eq!(
        reported_blocks(&report),
        want,
        "blocks (broker, epoch, start, len)"
    );
    for (kind, _, broker) in findings(&report).keys() {
        assert!(
            kind != "pid_block_regression" && kind != "pid_block_overlap",
            "{kind} (broker {broker}) on a healthy cluster"
        );
    }
    let duplicates = report["summary"]["duplicate_packets"].as_u64();
    assert!(
        duplicates.is_some_and(|d| d > 0),
        "summary.duplicate_packets {duplicates:?}: broker 1's controller connections are in both"
    );
}

/// Every producer id the load client was given lies in exactly one block the two files
/// report, of the broker that gave it (the truth keeps them as runs of consecutive ids).
#[test]
fn every_producer_id_a_client_got_lies_in_one_block_of_its_broker() {
    let truth = truth();
    let blocks = reported_blocks(&two_files_report(&truth));
    let mut faults = Vec::new();
    let mut ids = 0;
    for run in truth["client_producer_id_runs"].as_array().unwrap() {
        let broker = run["broker_id"].as_i64().unwrap();
        for id in run["first"].as_i64().unwrap()..=run["last"].as_i64().unwrap() {
            ids += 1;
            let holding: Vec<&BlockKey> = blocks
                .iter()
                .filter(|b| (b.2..b.2 + b.3).contains(&id))
                .collect();
            if !matches!(holding.as_slice(), [one] if one.0 == broker) {
                faults.push(format!("id {id} from broker {broker}: in {holding:?}"));
            }
        }
    }
    assert!(ids > 1000, "{ids} client ids");
    assert!(
        faults.is_empty(),
        "{} ids\n{}",
        faults.len(),
        faults[..faults.len().min(10)].join("\n")
    );
}

/// Blocks and findings are those of the one capture of everything the views were cut from.
#[test]
fn two_hosts_files_say_what_the_capture_of_everything_says() {
    let truth = truth();
    let merged = two_files_report(&truth);
    let everything = report(&[full_capture(&truth).as_str()]);
    assert_eq!(
        reported_blocks(&merged),
        reported_blocks(&everything),
        "blocks"
    );
    assert_eq!(findings(&merged), findings(&everything), "findings");
}

/// `mergecap -w <dir>/merged.pcap <files as given>` (its default: merged by time).
fn mergecap(files: &[String], dir: &std::path::Path) -> PathBuf {
    let merged = dir.join("merged.pcap");
    let out = Command::new("mergecap")
        .arg("-w")
        .arg(&merged)
        .args(files)
        .current_dir(root())
        .output()
        .expect("mergecap runs");
    assert!(
        out.status.success(),
        "mergecap: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    merged
}

fn controller_ports(truth: &Value) -> Vec<u16> {
    truth["controller_ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap() as u16)
        .collect()
}

/// (frame, correlation id) of Wireshark's messages, without its connection numbers.
fn frames_and_ids(messages: &Messages) -> BTreeSet<(u64, i64)> {
    messages.iter().map(|m| (m.0, m.2)).collect()
}

/// (frame field, correlation id) of our requests and responses, for `field` one of
/// "frame" (in the merged capture) or "capture_frame" (in the file `capture_index` names,
/// when `file` is given).
fn our_frames(report: &Value, field: &str, file: Option<u64>) -> [BTreeSet<(u64, i64)>; 2] {
    let mut sides = [BTreeSet::new(), BTreeSet::new()];
    for ex in report["exchanges"].as_array().unwrap() {
        let corr = ex["correlation_id"].as_i64().unwrap();
        for (i, side) in ["request", "response"].iter().enumerate() {
            let message = &ex[*side];
            if message.is_null() || message["frame"].is_null() {
                continue;
            }
            if file.is_some_and(|f| message["capture_index"].as_u64() != Some(f)) {
                continue;
            }
            let frame = message[field]
                .as_u64()
                .unwrap_or_else(|| panic!("{side}.{field} of {ex}"));
            sides[i].insert((frame, corr));
        }
    }
    sides
}

fn have_mergecap() -> bool {
    have_tshark()
        && have_program(
            "mergecap",
            "the two-hosts tests against Wireshark's merge",
            "apt-get install wireshark-common (Debian, Ubuntu), brew install wireshark (macOS)",
        )
}

/// The requests' and responses' (frame, correlation id) in `report` are tshark's on `merged`.
fn assert_frames_are_tsharks(report: &Value, merged: &std::path::Path, ports: &[u16]) {
    // tshark reads a packet both hosts saw twice, and dissects its first copy only
    let (requests, responses) = tshark_frames_on(merged.to_str().unwrap(), ports);
    assert!(
        requests.len() >= 10,
        "tshark found {} requests",
        requests.len()
    );
    let [ours_req, ours_resp] = our_frames(report, "frame", None);
    assert_eq!(
        ours_req,
        frames_and_ids(&requests),
        "requests (frame, correlation id)"
    );
    assert_eq!(ours_resp, frames_and_ids(&responses), "responses");
}

/// The fixture checked with what reads it today: `mergecap`'s merge of the two files, read
/// as one capture, gives the committed blocks without regression and tshark's frames (the
/// copies both hosts saw are retransmissions to a reader of one capture).
#[test]
fn the_mergecap_of_the_files_reads_as_wireshark_reads_it() {
    if !have_mergecap() {
        return;
    }
    let truth = truth();
    let dir = tempfile::tempdir().unwrap();
    let merged = mergecap(&view_files(&truth), dir.path());
    let report = report(&[merged.to_str().unwrap()]);
    let want: BTreeSet<BlockKey> = truth["committed_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    assert_eq!(
        reported_blocks(&report),
        want,
        "blocks (broker, epoch, start, len)"
    );
    let everything = crate::common::report(&[full_capture(&truth).as_str()]);
    assert_eq!(findings(&report), findings(&everything), "findings");
    assert_frames_are_tsharks(&report, &merged, &controller_ports(&truth));
}

/// Each AllocateProducerIds request and response has the frame number tshark shows for it
/// on `mergecap -w merged.pcap <files as given>`, and, in the file it was read from
/// (`capture_index`), the frame number tshark shows there (`capture_frame`).
#[test]
fn frames_are_wiresharks_on_the_mergecap_of_the_files_as_given() {
    if !have_mergecap() {
        return;
    }
    let truth = truth();
    let dir = tempfile::tempdir().unwrap();
    let merged = mergecap(&view_files(&truth), dir.path());
    let ports = controller_ports(&truth);
    let report = two_files_report(&truth);

    assert_frames_are_tsharks(&report, &merged, &ports);
    let [ours_req, ours_resp] = our_frames(&report, "frame", None);

    let mut placed = 0;
    for (index, capture) in report["captures"].as_array().unwrap().iter().enumerate() {
        let file = capture["path"].as_str().unwrap();
        let path = root().join(file);
        let (requests, responses) = tshark_frames_on(path.to_str().unwrap(), &ports);
        let [ours_req, ours_resp] = our_frames(&report, "capture_frame", Some(index as u64));
        placed += ours_req.len() + ours_resp.len();
        // a message both hosts saw may be given for either file: tshark sees it in both
        let theirs_req = frames_and_ids(&requests);
        let theirs_resp = frames_and_ids(&responses);
        assert!(
            ours_req.is_subset(&theirs_req),
            "{file}: requests' capture_frame {:?} not tshark's",
            ours_req.difference(&theirs_req).collect::<Vec<_>>()
        );
        assert!(
            ours_resp.is_subset(&theirs_resp),
            "{file}: responses' capture_frame {:?} not tshark's",
            ours_resp.difference(&theirs_resp).collect::<Vec<_>>()
        );
    }
    assert_eq!(
        placed,
        ours_req.len() + ours_resp.len(),
        "every message has a capture_index and a capture_frame"
    );
}
