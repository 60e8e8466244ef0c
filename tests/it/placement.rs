//! Where a granted producer id lies (issue 37), on the loopback captures
//! `scripts/make-producer-fixtures.py` makes for it: a Kafka broker grants from its
//! current block, prefetches the next at 90% and keeps granting from the current one until
//! it is used up (`previous_block`, legal), never going back. Each fixture's truth lists
//! every grant with the placement the script meant (and checked against its own reading of
//! the model) and the block it names; the `pid_outside_blocks` findings are the faults it
//! planted, and only those. One test per placement.

use serde_json::Value;

use crate::producers::{
    brokers_known_by_address, entries_are_what_was_sent, entry_for, findings, report_of, truth,
    wireshark_agrees_on_init_producer_id,
};

const FIXTURES: [&str; 4] = [
    "prefetch-tail",
    "another-brokers-block",
    "older-block",
    "unknown-placement",
];

/// Every placement the report counts, in the summary's order.
const PLACEMENTS: [&str; 8] = [
    "in_block",
    "previous_block",
    "before_capture",
    "kept_by_transactional_id",
    "another_brokers_block",
    "older_block",
    "outside_blocks",
    "unknown",
];

const FAULTS: [&str; 3] = ["another_brokers_block", "older_block", "outside_blocks"];

/// The truth's grants of `name` placed `placement`.
fn grants_placed(truth: &Value, placement: &str) -> Vec<Value> {
    truth["producer_ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["granted"] == true && g["placement"] == placement)
        .cloned()
        .collect()
}

/// The truth's grant that `sent` (a pair's or a finding's excerpt of it) names: the same
/// client and correlation id.
fn grant_of<'a>(truth: &'a Value, sent: &Value) -> &'a Value {
    let found: Vec<&Value> = truth["producer_ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["client"] == sent["client"] && g["correlation_id"] == sent["correlation_id"])
        .collect();
    assert_eq!(found.len(), 1, "one grant for {sent}");
    found[0]
}

/// The report's entry for grant `g` is placed as the truth says: the placement, the block
/// it names (start, end, broker and response frame; none where the truth has none), the
/// broker that answered as far as the capture names it, and a reason for every placement
/// but `in_block`. Returns the entry.
fn placed_as_the_truth_says<'a>(name: &str, report: &'a Value, g: &Value) -> &'a Value {
    let e = entry_for(report, g);
    let pid = &g["producer_id"];
    assert_eq!(
        e["placement"], g["placement"],
        "{name}: producer id {pid}: {e}"
    );
    let block = e.get("block").unwrap_or(&Value::Null);
    match &g["placement_block"] {
        Value::Null => assert_eq!(*block, Value::Null, "{name}: producer id {pid}: {e}"),
        want => {
            for field in ["start", "end", "broker_id", "response_frame"] {
                assert_eq!(
                    block[field], want[field],
                    "{name}: producer id {pid}: block {field}: {e}"
                );
            }
        }
    }
    assert_eq!(
        e["broker_id"], g["known_broker_id"],
        "{name}: producer id {pid}: {e}"
    );
    let reason = e.get("placement_reason").unwrap_or(&Value::Null);
    if g["placement"] == "in_block" {
        assert_eq!(*reason, Value::Null, "{name}: producer id {pid}: {e}");
    } else {
        let text = reason
            .as_str()
            .unwrap_or_else(|| panic!("{name}: producer id {pid} has no placement_reason: {e}"));
        assert!(
            text.split_whitespace().count() >= 4,
            "{name}: producer id {pid}: not a sentence: {text:?}"
        );
    }
    e
}

/// Every grant of every placement fixture is placed as its truth says, and the summary
/// counts each placement as the truth does.
#[test]
fn every_grant_is_placed_as_the_script_meant() {
    for name in FIXTURES {
        let truth = truth(name);
        let report = report_of(name);
        for g in truth["producer_ids"].as_array().unwrap() {
            if g["granted"] == true {
                placed_as_the_truth_says(name, &report, g);
            } else {
                assert_eq!(entry_for(&report, g)["placement"], Value::Null, "{name}");
            }
        }
        let summary = &report["producer_ids"]["summary"];
        for p in PLACEMENTS {
            assert_eq!(
                summary[p], truth["expected"]["placements"][p],
                "{name}: summary.{p}: {summary}"
            );
        }
    }
}

/// `in_block`: an id in the newest block its broker had been granted before the grant.
#[test]
fn an_id_of_the_brokers_newest_block_is_in_block() {
    let mut seen = 0;
    for name in FIXTURES {
        let truth = truth(name);
        let report = report_of(name);
        for g in grants_placed(&truth, "in_block") {
            let e = placed_as_the_truth_says(name, &report, &g);
            assert_eq!(e["block"]["broker_id"], g["broker_id"], "{name}: {e}");
            seen += 1;
        }
    }
    assert!(seen >= 30, "{seen} in_block grants");
}

/// `previous_block`: after its next block arrives a broker keeps granting the tail of the
/// block it held: a known one (the block named), or, below its first block of the capture,
/// the one it held before the capture (no block). Kafka's prefetch; no finding at all.
#[test]
fn the_prefetch_tail_is_previous_block_and_no_fault() {
    let truth = truth("prefetch-tail");
    let report = report_of("prefetch-tail");
    let tail = grants_placed(&truth, "previous_block");
    for g in &tail {
        placed_as_the_truth_says("prefetch-tail", &report, g);
    }
    let with_block: Vec<_> = tail
        .iter()
        .filter(|g| !g["placement_block"].is_null())
        .map(|g| g["placement_block"]["start"].as_i64().unwrap())
        .collect();
    let without = tail.len() - with_block.len();
    assert!(
        with_block.contains(&7000) && with_block.contains(&8000),
        "{with_block:?}"
    );
    assert!(
        without >= 10,
        "{without} grants from the blocks held before the capture"
    );
    for g in tail.iter().filter(|g| g["placement_block"].is_null()) {
        // below the broker's first block of the capture
        let first = truth["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["broker_id"] == g["broker_id"])
            .map(|b| b["start"].as_i64().unwrap())
            .min()
            .unwrap();
        assert!(g["producer_id"].as_i64().unwrap() < first, "{g}");
    }
    let pid_findings: Vec<&Value> = report["producer_id_blocks"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"].as_str().unwrap().starts_with("pid_"))
        .collect();
    assert!(pid_findings.is_empty(), "{pid_findings:?}");
    assert!(!gate_fails("prefetch-tail"));
}

/// Two request-handler threads: the grant of the old block's last id is asked before the
/// first grant of the new block is answered, and answered after it. Kafka does that; it is
/// `previous_block`, not `older_block` (on broker 2 below its first block, on broker 1 from
/// a known one).
#[test]
fn an_old_blocks_grant_asked_before_a_new_blocks_answer_is_not_older_block() {
    let truth = truth("prefetch-tail");
    let report = report_of("prefetch-tail");
    let pairs = truth["expected"]["concurrent_grants"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    for pair in pairs {
        let old = grant_of(&truth, &pair["old"]);
        let new = grant_of(&truth, &pair["new"]);
        assert_eq!(old["placement_block"], pair["old"]["placement_block"]);
        let old = placed_as_the_truth_says("prefetch-tail", &report, old);
        let new = placed_as_the_truth_says("prefetch-tail", &report, new);
        let frame = |e: &Value, f: &str| e[f].as_u64().unwrap();
        assert!(frame(old, "request_frame") < frame(new, "response_frame"));
        assert!(frame(new, "response_frame") < frame(old, "response_frame"));
        assert_eq!(old["placement"], "previous_block", "{old}");
        assert_eq!(new["placement"], "in_block", "{new}");
    }
    assert!(findings(&report, "pid_outside_blocks").is_empty());
}

/// `before_capture`: the broker had no block in the capture yet.
#[test]
fn a_grant_before_the_brokers_first_block_is_before_capture() {
    let truth = truth("prefetch-tail");
    let report = report_of("prefetch-tail");
    let early = grants_placed(&truth, "before_capture");
    assert_eq!(early.len(), 10);
    for g in &early {
        placed_as_the_truth_says("prefetch-tail", &report, g);
        let first_block = truth["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["broker_id"] == g["broker_id"])
            .map(|b| b["response_frame"].as_u64().unwrap())
            .min()
            .unwrap();
        assert!(g["response_frame"].as_u64().unwrap() < first_block, "{g}");
    }
}

/// `kept_by_transactional_id`: a transactional id initialised again on another broker
/// (its coordinator moved) keeps its producer id with a bumped epoch: an id of the first
/// broker's block, and no fault, no duplicate.
#[test]
fn a_transactional_id_keeps_its_id_on_another_broker() {
    let truth = truth("another-brokers-block");
    let report = report_of("another-brokers-block");
    let kept = grants_placed(&truth, "kept_by_transactional_id");
    assert_eq!(kept.len(), 1);
    let e = placed_as_the_truth_says("another-brokers-block", &report, &kept[0]);
    assert_eq!(e["transactional_id"], "tx-move");
    assert_eq!(e["producer_epoch"], 1);
    assert_eq!(
        (e["broker_id"].as_i64(), e["block"]["broker_id"].as_i64()),
        (Some(2), Some(1))
    );
    assert!(e.get("duplicate_of_frame").is_none(), "{e}");
    let pid = &kept[0]["producer_id"];
    assert!(
        findings(&report, "pid_outside_blocks")
            .iter()
            .all(|f| f["facts"]["producer_id"] != *pid),
        "a finding for the kept id {pid}"
    );
}

/// The `pid_outside_blocks` findings of `name` are the faults its truth planted, in the
/// order of their responses: the placement and id named, the answering broker, the grant's
/// response among the frames, severity error; and no other `pid_` finding.
fn faults_found_as_planted(name: &str) -> (Value, Vec<Value>) {
    let truth = truth(name);
    let report = report_of(name);
    let planted = truth["expected"]["pid_outside_blocks"]
        .as_array()
        .unwrap()
        .clone();
    let found = findings(&report, "pid_outside_blocks");
    assert_eq!(found.len(), planted.len(), "{name}: {found:?}");
    for (f, p) in found.iter().zip(&planted) {
        assert_eq!(f["severity"], "error", "{name}: {f}");
        assert_eq!(f["facts"]["placement"], p["placement"], "{name}: {f}");
        assert!(FAULTS.contains(&p["placement"].as_str().unwrap()));
        assert_eq!(f["facts"]["producer_id"], p["producer_id"], "{name}: {f}");
        assert_eq!(f["broker_id"], p["broker_id"], "{name}: {f}");
        assert!(
            f["frames"]
                .as_array()
                .unwrap()
                .contains(&p["response_frame"]),
            "{name}: {f}"
        );
        let g = grant_of(&truth, p);
        assert_eq!(g["placement_block"], p["block"], "{name}");
        let e = placed_as_the_truth_says(name, &report, g);
        assert_eq!(e["placement"], p["placement"]);
    }
    let mut kinds: Vec<&str> = report["producer_id_blocks"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["kind"].as_str())
        .filter(|k| k.starts_with("pid_"))
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let want: Vec<&str> = if planted.is_empty() {
        vec![]
    } else {
        vec!["pid_outside_blocks"]
    };
    assert_eq!(kinds, want, "{name}");
    (report, planted)
}

/// Whether `--fail-on pid_outside_blocks` fails on `name`.
fn gate_fails(name: &str) -> bool {
    let ports: Vec<String> = truth(name)["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("--port={p}"))
        .collect();
    let out = crate::common::pidshark()
        .args([&format!("fixtures/producers/{name}.pcap"), "--quiet"])
        .args(&ports)
        .args(["--fail-on", "pid_outside_blocks"])
        .output()
        .expect("pidshark runs");
    match out.status.code() {
        Some(0) => false,
        Some(1) => true,
        other => panic!("{name}: exit {other:?}"),
    }
}

/// `another_brokers_block`: an idempotent grant (epoch 0) of broker 2 from broker 1's
/// block, in none of its own: one error, naming broker 1's block.
#[test]
fn an_id_of_another_brokers_block_is_an_error() {
    let (_, planted) = faults_found_as_planted("another-brokers-block");
    assert_eq!(planted.len(), 1);
    let p = &planted[0];
    assert_eq!(p["placement"], "another_brokers_block");
    assert_eq!(
        (p["broker_id"].as_i64(), p["producer_epoch"].as_i64()),
        (Some(2), Some(0))
    );
    assert_eq!(p["transactional_id"], Value::Null);
    assert_eq!(p["block"]["broker_id"], 1);
    assert!(gate_fails("another-brokers-block"));
}

/// `older_block`: a request that arrives after the broker answered a grant from its newest
/// block is granted an id of an older one: Kafka's manager never goes back. One error.
#[test]
fn a_grant_from_an_older_block_asked_after_a_newer_blocks_answer_is_older_block() {
    let (report, planted) = faults_found_as_planted("older-block");
    assert_eq!(planted.len(), 1);
    let p = &planted[0];
    assert_eq!(
        (p["placement"].as_str(), p["producer_id"].as_i64()),
        (Some("older_block"), Some(7999))
    );
    assert!(p["request_frame"].as_u64() > p["newer_grant_response_frame"].as_u64());
    let e = entry_for(&report, p);
    assert_eq!(
        (e["block"]["start"].as_i64(), e["block"]["end"].as_i64()),
        (Some(7000), Some(7999))
    );
    // the tail granted before the newer block's first grant was answered is legal
    let truth = truth("older-block");
    let tail = grants_placed(&truth, "previous_block");
    assert_eq!(tail.len(), 3);
    for g in &tail {
        placed_as_the_truth_says("older-block", &report, g);
    }
    assert!(gate_fails("older-block"));
}

/// `outside_blocks`: an id in none of the broker's blocks and above its first, every
/// answer it asked for read, in no other broker's block. One error.
#[test]
fn an_id_beyond_every_block_with_every_answer_read_is_outside_blocks() {
    let (report, planted) = faults_found_as_planted("unknown-placement");
    assert_eq!(planted.len(), 1);
    let p = &planted[0];
    assert_eq!(
        (p["placement"].as_str(), p["producer_id"].as_i64()),
        (Some("outside_blocks"), Some(12000))
    );
    let found = findings(&report, "pid_outside_blocks");
    let f = found[0];
    assert_eq!(
        (
            f["facts"]["last_start"].as_i64(),
            f["facts"]["last_end"].as_i64()
        ),
        (Some(7000), Some(7999))
    );
    assert!(gate_fails("unknown-placement"));
}

/// `unknown`, broker not known: a client of an address no message of the capture names
/// (broker 3, registered before the capture) granted ids no block holds. Not an error.
#[test]
fn a_grant_from_a_broker_the_capture_does_not_name_is_unknown() {
    let truth = truth("unknown-placement");
    let report = report_of("unknown-placement");
    let unknown: Vec<Value> = grants_placed(&truth, "unknown")
        .into_iter()
        .filter(|g| g["known_broker_id"].is_null())
        .collect();
    assert_eq!(unknown.len(), 2);
    for g in &unknown {
        let e = placed_as_the_truth_says("unknown-placement", &report, g);
        assert_eq!(e["server"], "127.0.0.1:19203");
        assert_eq!(e["broker_id"], Value::Null);
    }
    let named: Vec<&Value> = findings(&report, "pid_outside_blocks")
        .into_iter()
        .filter(|f| {
            unknown
                .iter()
                .any(|g| g["producer_id"] == f["facts"]["producer_id"])
        })
        .collect();
    assert!(named.is_empty(), "{named:?}");
}

/// `unknown`, an answer not read: broker 2's AllocateProducerIds is never answered on the
/// captured connection; the ids it grants later above all its blocks may come from a block
/// that answer held. Not an error; the ids of its known block are still `in_block`.
#[test]
fn an_id_above_the_blocks_after_an_unanswered_request_is_unknown() {
    let truth = truth("unknown-placement");
    let report = report_of("unknown-placement");
    let unanswered: Vec<&Value> = report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["request"]["broker_id"] == 2 && x["status"] == "unanswered")
        .collect();
    assert_eq!(
        unanswered.len(),
        1,
        "broker 2's unanswered AllocateProducerIds"
    );
    let asked = unanswered[0]["request"]["frame"].as_u64().unwrap();
    let later: Vec<Value> = grants_placed(&truth, "unknown")
        .into_iter()
        .filter(|g| g["known_broker_id"] == 2)
        .collect();
    assert_eq!(later.len(), 2);
    for g in &later {
        let e = placed_as_the_truth_says("unknown-placement", &report, g);
        assert!(e["response_frame"].as_u64().unwrap() > asked);
        assert_eq!(e["broker_id"], 2);
    }
    for g in grants_placed(&truth, "in_block")
        .iter()
        .filter(|g| g["broker_id"] == 2 && g["response_frame"].as_u64().unwrap() > asked)
    {
        placed_as_the_truth_says("unknown-placement", &report, g);
    }
    let named: Vec<&Value> = findings(&report, "pid_outside_blocks")
        .into_iter()
        .filter(|f| f["broker_id"] == 2)
        .collect();
    assert!(named.is_empty(), "{named:?}");
}

/// The fixtures' other facts, as for the earlier producer fixtures: every exchange an entry
/// with the values sent, the brokers known by address, and tshark's reading of every
/// InitProducerId message.
#[test]
fn the_placement_captures_are_read_as_sent() {
    let tshark = crate::wireshark::have_tshark();
    for name in FIXTURES {
        entries_are_what_was_sent(name);
        brokers_known_by_address(name);
        if tshark {
            wireshark_agrees_on_init_producer_id(name);
        }
    }
}
