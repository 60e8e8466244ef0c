//! InitProducerId (issue 28) on the planted-fault loopback captures of
//! `scripts/make-producer-fixtures.py`: every exchange the script sent is a
//! `producer_ids` entry with the values it sent, each granted id lies in the block the
//! script granted it from, and the faults it planted are found (and only those). The
//! truth is what the script sent, not what pidshark said.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{fixture, pidshark, report};

const FIXTURES: [&str; 4] = [
    "kafka-20031",
    "txn-bump",
    "metadata-only",
    "stale-controller",
];

pub(crate) fn truth(name: &str) -> Value {
    let path = fixture(&format!("producers/{name}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("truth readable"))
        .expect("truth is JSON")
}

/// The report, with the truth's server ports given as Kafka's: one connection of
/// `txn-bump` holds a single InitProducerId v0 exchange, too little to prove Kafka by
/// its bytes alone (pidshark says so, and that `--port` reads it).
pub(crate) fn report_of(name: &str) -> Value {
    let path = format!("fixtures/producers/{name}.pcap");
    let ports: Vec<String> = truth(name)["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| format!("--port={p}"))
        .collect();
    let mut args = vec![path.as_str(), "--quiet"];
    args.extend(ports.iter().map(String::as_str));
    report(&args)
}

/// The report's entry for the exchange the truth describes: the same client and
/// correlation id (and server, where the truth names it).
pub(crate) fn entry_for<'a>(report: &'a Value, sent: &Value) -> &'a Value {
    let entries = report["producer_ids"]["entries"]
        .as_array()
        .expect("entries");
    let same = |e: &&Value| {
        e["client"] == sent["client"]
            && (sent["server"].is_null() || e["server"] == sent["server"])
            && e["correlation_id"] == sent["correlation_id"]
    };
    let found: Vec<&Value> = entries.iter().filter(same).collect();
    assert_eq!(found.len(), 1, "one entry for {sent}");
    found[0]
}

pub(crate) fn findings<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["producer_id_blocks"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

#[test]
fn every_init_producer_id_sent_is_an_entry_with_the_values_sent() {
    for name in FIXTURES {
        entries_are_what_was_sent(name);
    }
}

/// Every InitProducerId exchange of `name`'s truth is an entry of the report with the
/// values sent.
pub(crate) fn entries_are_what_was_sent(name: &str) {
    let truth = truth(name);
    let report = report_of(name);
    let sent = truth["producer_ids"].as_array().expect("producer_ids");
    let entries = report["producer_ids"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), sent.len(), "{name}");
    assert_eq!(report["producer_ids"]["summary"]["exchanges"], sent.len());
    for s in sent {
        let e = entry_for(&report, s);
        for field in [
            "api_version",
            "transactional_id",
            "transaction_timeout_ms",
            "error_code",
            "producer_id",
            "producer_epoch",
            "request_frame",
            "response_frame",
        ] {
            assert_eq!(e[field], s[field], "{name}: {field} of {s}");
        }
        // fields a version does not have are absent, not null or guessed
        for field in [
            "requested_producer_id",
            "requested_producer_epoch",
            "ongoing_txn_producer_id",
            "ongoing_txn_producer_epoch",
        ] {
            let expected = match &s[field] {
                Value::Null => None,
                v => Some(v),
            };
            assert_eq!(e.get(field), expected, "{name}: {field} of {s}");
        }
        assert_eq!(e["status"], "complete");
        assert!(e.get("decode_error").is_none(), "{name}: {e}");
    }
}

#[test]
fn each_granted_id_lies_in_the_block_it_was_handed_out_from() {
    for name in FIXTURES {
        let truth = truth(name);
        let report = report_of(name);
        for s in truth["producer_ids"].as_array().unwrap() {
            let e = entry_for(&report, s);
            if s["granted"] != true {
                assert_eq!(e["placement"], Value::Null, "{name}: {s}");
                continue;
            }
            assert_eq!(e["placement"], "in_block", "{name}: {s}");
            assert_eq!(e["block"]["start"], s["block_start"], "{name}: {s}");
            assert_eq!(e["block"]["broker_id"], s["broker_id"], "{name}: {s}");
        }
    }
}

/// KAFKA-20031: a block starting at the last id of its predecessor, and two idempotent
/// producers granted that id and epoch.
#[test]
fn two_producers_granted_the_same_id_and_epoch_are_a_duplicate_grant() {
    let truth = truth("kafka-20031");
    let report = report_of("kafka-20031");
    let planted = truth["expected"]["pid_duplicate_grants"]
        .as_array()
        .unwrap();
    let found = findings(&report, "pid_duplicate_grant");
    assert_eq!(found.len(), planted.len(), "{found:?}");
    for (f, p) in found.iter().zip(planted) {
        let holders = p["holders"].as_array().unwrap();
        let [earlier, later] = [&holders[0], &holders[1]];
        let facts = &f["facts"];
        assert_eq!(facts["producer_id"], p["producer_id"]);
        assert_eq!(facts["producer_epoch"], p["producer_epoch"]);
        assert_eq!(facts["client"], later["client"]);
        assert_eq!(facts["other_client"], earlier["client"]);
        assert_eq!(facts["frame"], later["response_frame"]);
        assert_eq!(facts["other_frame"], earlier["response_frame"]);
        assert_eq!(f["severity"], "error");
        let second = entry_for(&report, later);
        assert_eq!(second["duplicate_of_frame"], earlier["response_frame"]);
    }
    assert_eq!(
        report["producer_ids"]["summary"]["duplicates"],
        planted.len()
    );
    assert_eq!(report["verdict"]["grade"], "wrong");
}

/// The overlap's finding names the producers that hold its ids.
#[test]
fn an_overlap_names_the_producers_holding_its_ids() {
    let truth = truth("kafka-20031");
    let report = report_of("kafka-20031");
    let planted: Vec<&Value> = truth["expected"]["allocate_findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "pid_block_overlap")
        .collect();
    let found = findings(&report, "pid_block_overlap");
    assert_eq!(found.len(), planted.len());
    for (f, p) in found.iter().zip(planted) {
        let affected = p["affected_producers"].as_array().unwrap();
        assert_eq!(f["facts"]["affected_producers"], affected.len());
        let mut hosts: Vec<String> = affected
            .iter()
            .map(|a| {
                let client = a["client"].as_str().unwrap();
                client.rsplit_once(':').unwrap().0.to_owned()
            })
            .collect();
        hosts.sort();
        hosts.dedup();
        assert_eq!(f["facts"]["affected_hosts"], serde_json::json!(hosts));
        let id = &affected[0]["producer_id"];
        let message = f["message"].as_str().unwrap();
        assert!(
            message.ends_with(&format!(
                "{} producers on {} hold producer id {id}",
                affected.len(),
                hosts.join(" and ")
            )),
            "{message}"
        );
    }
}

/// A transactional id initialised again gets its own id back with a bumped epoch: not
/// two producers.
#[test]
fn a_transactional_id_back_with_a_bumped_epoch_is_not_a_duplicate() {
    for name in FIXTURES {
        let truth = truth(name);
        let report = report_of(name);
        let planted = truth["expected"]["pid_duplicate_grants"]
            .as_array()
            .unwrap()
            .len();
        assert_eq!(
            findings(&report, "pid_duplicate_grant").len(),
            planted,
            "{name}"
        );
        assert!(findings(&report, "pid_outside_blocks").is_empty(), "{name}");
    }
    let truth = truth("txn-bump");
    let report = report_of("txn-bump");
    let reinit = &truth["expected"]["not_duplicates"][0];
    let grants = reinit["grants"].as_array().unwrap();
    assert_eq!(grants.len(), 2);
    for g in grants {
        let e = entry_for(&report, g);
        assert_eq!(e["transactional_id"], reinit["transactional_id"]);
        assert_eq!(e["producer_id"], reinit["producer_id"]);
        assert_eq!(e["producer_epoch"], g["producer_epoch"]);
        assert!(e.get("duplicate_of_frame").is_none());
    }
}

/// tshark's reading of every InitProducerId message, by frame: (tcp.stream, correlation
/// id, transactional id, producer id, producer epoch, error code), the empty string where
/// tshark shows no such field.
fn tshark_init_producer_id(name: &str) -> BTreeMap<u64, [String; 6]> {
    let ports = truth(name)["ports"].as_array().unwrap().clone();
    let decode_as: Vec<String> = ports
        .iter()
        .flat_map(|p| ["-d".to_owned(), format!("tcp.port=={p},kafka")])
        .collect();
    let out = std::process::Command::new("tshark")
        .args(["-r", &format!("fixtures/producers/{name}.pcap"), "-n"])
        .current_dir(crate::common::root())
        .args(&decode_as)
        .args(["-Y", "kafka.request_key == 22 || kafka.response_key == 22"])
        .args(["-T", "fields", "-E", "separator=/t"])
        .args([
            "-e",
            "frame.number",
            "-e",
            "tcp.stream",
            "-e",
            "kafka.correlation_id",
        ])
        .args(["-e", "kafka.transactional_id", "-e", "kafka.producer_id"])
        .args(["-e", "kafka.producer_epoch", "-e", "kafka.error"])
        .output()
        .expect("tshark runs");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let cols: Vec<String> = line.split('\t').map(str::to_owned).collect();
            let frame = cols[0].parse().expect("frame number");
            let fields: [String; 6] = cols[1..].to_vec().try_into().expect("six fields");
            (frame, fields)
        })
        .collect()
}

/// tshark (4.x knows InitProducerId to version 3 and reads 4 to 6 with that layout, whose
/// fields they keep) finds every request and response where the report has it, and reads
/// the same transactional id, producer ids, epochs and errors.
#[test]
fn wireshark_agrees_on_every_init_producer_id_message_and_its_fields() {
    if !crate::wireshark::have_tshark() {
        return;
    }
    for name in FIXTURES {
        wireshark_agrees_on_init_producer_id(name);
    }
}

/// tshark reads every InitProducerId message of `name` where the report has it, with the
/// same fields (the caller checks that tshark is there).
pub(crate) fn wireshark_agrees_on_init_producer_id(name: &str) {
    let text = |v: &Value| match v {
        Value::Null => "[ Null ]".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let report = report_of(name);
    let mut theirs = tshark_init_producer_id(name);
    for e in report["producer_ids"]["entries"].as_array().unwrap() {
        let (conn, corr) = (e["connection"].to_string(), e["correlation_id"].to_string());
        let request = theirs
            .remove(&e["request_frame"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("{name}: tshark has no request in {e}"));
        let [stream, their_corr, txn, pid, epoch, _] = &request;
        assert_eq!((stream, their_corr), (&conn, &corr), "{name}: {e}");
        assert_eq!(*txn, text(&e["transactional_id"]), "{name}: {e}");
        let requested = |f: &str| e.get(f).map(text).unwrap_or_default();
        assert_eq!(*pid, requested("requested_producer_id"), "{name}: {e}");
        assert_eq!(*epoch, requested("requested_producer_epoch"), "{name}: {e}");
        let response = theirs
            .remove(&e["response_frame"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("{name}: tshark has no response in {e}"));
        let [stream, their_corr, _, pid, epoch, error] = &response;
        assert_eq!((stream, their_corr), (&conn, &corr), "{name}: {e}");
        assert_eq!(*pid, text(&e["producer_id"]), "{name}: {e}");
        assert_eq!(*epoch, text(&e["producer_epoch"]), "{name}: {e}");
        assert_eq!(*error, text(&e["error_code"]), "{name}: {e}");
    }
    assert!(theirs.is_empty(), "{name}: only tshark has {theirs:?}");
}

/// Brokers are known by the addresses the capture shows them serving on: the listeners of
/// their registrations, and the brokers a Metadata response lists; each entry names the
/// broker that answered it when its address is known, and no other.
#[test]
fn brokers_are_known_by_the_addresses_their_messages_give() {
    for name in FIXTURES {
        brokers_known_by_address(name);
    }
}

/// The brokers `name`'s report knows by address are those of its truth, and each entry
/// names the broker that answered it when its address is known, and no other.
pub(crate) fn brokers_known_by_address(name: &str) {
    let truth = truth(name);
    let report = report_of(name);
    let key = |a: &Value| {
        (
            a["address"].as_str().unwrap().to_owned(),
            a["broker_id"].as_i64(),
            a["source"].as_str().unwrap().to_owned(),
            a["frame"].as_u64().unwrap(),
        )
    };
    let expected: Vec<_> = truth["expected"]["brokers_by_address"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    let mut ours: Vec<_> = report["brokers_by_address"]
        .as_array()
        .unwrap()
        .iter()
        .map(key)
        .collect();
    let mut expected = expected;
    expected.sort();
    ours.sort();
    assert_eq!(ours, expected, "{name}");
    for s in truth["producer_ids"].as_array().unwrap() {
        let e = entry_for(&report, s);
        let known = expected
            .iter()
            .find(|a| Some(a.0.as_str()) == s["server"].as_str());
        match known {
            Some((_, broker, source, _)) => {
                assert_eq!(e["broker_id"].as_i64(), *broker, "{name}: {e}");
                assert_eq!(e["broker_source"], source.as_str(), "{name}: {e}");
            }
            None => assert_eq!(e["broker_id"], Value::Null, "{name}: {e}"),
        }
    }
}

/// `--fail-on` takes the new finding kinds: the planted fault fails the gate, a capture
/// without it passes.
#[test]
fn fail_on_takes_the_new_finding_kinds() {
    let gate = |capture: &str, kind: &str| {
        pidshark()
            .args([&format!("fixtures/producers/{capture}.pcap"), "--quiet"])
            .args(["--fail-on", kind])
            .output()
            .expect("pidshark runs")
            .status
            .code()
    };
    assert_eq!(gate("kafka-20031", "pid_duplicate_grant"), Some(1));
    assert_eq!(gate("txn-bump", "pid_duplicate_grant"), Some(0));
    assert_eq!(gate("stale-controller", "pid_stale_controller"), Some(1));
    assert_eq!(gate("kafka-20031", "pid_stale_controller"), Some(0));
    assert_eq!(gate("kafka-20031", "pid_outside_blocks"), Some(0));
}

/// Two producers granted one id is a wrong fact even when the capture does not hold the
/// overlapping block behind it: the capture without the second block's exchange (its
/// request and response packets dropped) still gets `duplicate_producer_ids`.
#[test]
fn a_duplicate_grant_alone_makes_the_verdict_duplicate_producer_ids() {
    let truth = truth("kafka-20031");
    let second = truth["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["start"] == 1999)
        .expect("the block starting at the last id of its predecessor");
    let dropped =
        [&second["request_frame"], &second["response_frame"]].map(|f| f.as_u64().unwrap());
    let (head, records) = crate::common::pcap_records(&fixture("producers/kafka-20031.pcap"));
    let mut bytes = head;
    for (frame, (record_head, data)) in (1u64..).zip(records) {
        if !dropped.contains(&frame) {
            bytes.extend_from_slice(&record_head);
            bytes.extend_from_slice(&data);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("without-second-block.pcap");
    std::fs::write(&path, bytes).unwrap();
    let report = report(&[
        path.to_str().unwrap(),
        "--quiet",
        "--port=19093",
        "--port=19201",
    ]);
    assert!(findings(&report, "pid_block_overlap").is_empty());
    assert_eq!(findings(&report, "pid_duplicate_grant").len(), 1);
    let verdict = &report["verdict"];
    assert_eq!(verdict["code"], "duplicate_producer_ids", "{verdict}");
    assert_eq!(verdict["facts"]["duplicate_grants"], 1);
    let headline = verdict["headline"].as_str().unwrap();
    assert!(headline.contains("producer id 1999 epoch 0"), "{headline}");
}

/// A run checked against a golden file (`--expect`) writes the same report as one that
/// is not, producer entries and all.
#[test]
fn expect_hands_every_producer_entry_on_to_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden.json");
    let capture = "fixtures/producers/kafka-20031.pcap";
    let plain = report(&[capture, "--quiet"]);
    std::fs::write(&golden, plain.to_string()).unwrap();
    let checked = report(&[capture, "--quiet", "--expect", golden.to_str().unwrap()]);
    let entries = |r: &Value| r["producer_ids"]["entries"].as_array().unwrap().len();
    assert_eq!(
        entries(&checked),
        truth("kafka-20031")["producer_ids"]
            .as_array()
            .unwrap()
            .len()
    );
    assert_eq!(checked["producer_ids"], plain["producer_ids"]);
}

/// KAFKA-20031's shape, a block starting at the last id of its broker's previous one, said
/// as it is: one id given twice ("was", not "were"), and a block that starts at the last id
/// of the earlier one, not "below the end 1999" of it.
#[test]
fn a_block_starting_at_the_last_id_of_the_previous_is_worded_as_such() {
    let out = pidshark()
        .args([
            "fixtures/producers/kafka-20031.pcap",
            "--format",
            "text",
            "--color",
            "never",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("id 1999 was given twice: to broker 1"),
        "{text}"
    );
    assert!(
        text.contains("starts at the last id of an earlier block for broker 1"),
        "{text}"
    );
    assert!(!text.contains("id 1999 were"), "{text}");
    assert!(!text.contains("below the end 1999"), "{text}");
}
