//! InitProducerId in the outputs people and pipelines read: `--format csv-producers` (a
//! row per exchange, checked against what the fixture script sent and against the JSON
//! report's `producer_ids.entries`) and the text report's "Producers" part.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::*;

const KAFKA_20031: &str = "fixtures/producers/kafka-20031.pcap";
/// The producer-id fixtures with InitProducerId exchanges.
const PRODUCER_FIXTURES: [&str; 3] = ["kafka-20031", "txn-bump", "metadata-only"];

fn truth(name: &str) -> Value {
    let path = root().join(format!("fixtures/producers/{name}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn stdout(args: &[&str]) -> Vec<u8> {
    pidshark()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// The header and rows of a CSV output, read back by the `csv` crate as RFC 4180.
fn csv(args: &[&str]) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let out = stdout(args);
    assert!(out.ends_with(b"\r\n"), "CRLF line ends");
    let mut reader = csv::Reader::from_reader(out.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            assert_eq!(r.len(), header.len(), "a cell per column: {r:?}");
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_owned))
                .collect()
        })
        .collect();
    (header, rows)
}

/// A truth value as a CSV cell: null is empty.
fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

#[test]
fn csv_producers_has_a_row_per_init_producer_id_request_the_script_sent() {
    let truth = truth("kafka-20031");
    let sent = truth["producer_ids"].as_array().unwrap();
    assert!(sent.len() > 2, "the truth lists InitProducerId requests");
    let (_, rows) = csv(&[KAFKA_20031, "--format", "csv-producers"]);
    assert_eq!(rows.len(), sent.len(), "a row per request: {rows:#?}");
    for s in sent {
        let row = rows
            .iter()
            .find(|r| {
                r["client"] == cell(&s["client"])
                    && r["correlation_id"] == cell(&s["correlation_id"])
            })
            .unwrap_or_else(|| panic!("no row for {s}"));
        for column in [
            "server",
            "connection",
            "api_version",
            "client_id",
            "transactional_id",
            "requested_producer_id",
            "requested_producer_epoch",
            "error_code",
            "producer_id",
            "producer_epoch",
            "request_frame",
            "response_frame",
        ] {
            assert_eq!(row[column], cell(&s[column]), "{column} of {s}: {row:?}");
        }
        // the block the script's model says holds the id: the latest granted before it
        assert_eq!(row["status"], "complete", "{row:?}");
        assert_eq!(row["placement"], "in_block", "{row:?}");
        assert_eq!(row["block_start"], cell(&s["block_start"]), "{s}: {row:?}");
        assert_eq!(
            row["block_broker_id"],
            cell(&s["broker_id"]),
            "{s}: {row:?}"
        );
    }
}

#[test]
fn csv_producers_duplicate_points_at_the_earlier_grant_of_another_client() {
    let truth = truth("kafka-20031");
    let sent = truth["producer_ids"].as_array().unwrap();
    let (_, rows) = csv(&[KAFKA_20031, "--format", "csv-producers"]);
    let duplicates: Vec<&BTreeMap<String, String>> = rows
        .iter()
        .filter(|r| !r["duplicate_of_frame"].is_empty())
        .collect();
    let (id, holders) = duplicate_in_truth(sent);
    assert_eq!(duplicates.len(), holders.len() - 1, "{rows:#?}");
    for dup in duplicates {
        assert_eq!(dup["producer_id"], id.to_string());
        let earlier = rows
            .iter()
            .find(|r| r["response_frame"] == dup["duplicate_of_frame"])
            .expect("the earlier grant is a row");
        assert_eq!(earlier["producer_id"], dup["producer_id"]);
        assert_eq!(earlier["producer_epoch"], dup["producer_epoch"]);
        assert_ne!(earlier["client"], dup["client"]);
    }
}

/// The producer id and epoch the truth says two clients were granted, and those clients.
fn duplicate_in_truth(sent: &[Value]) -> (i64, BTreeSet<String>) {
    let mut holders: BTreeMap<(i64, i64), BTreeSet<String>> = BTreeMap::new();
    for s in sent.iter().filter(|s| s["granted"] == true) {
        let key = (
            s["producer_id"].as_i64().unwrap(),
            s["producer_epoch"].as_i64().unwrap(),
        );
        holders.entry(key).or_default().insert(cell(&s["client"]));
    }
    let mut shared = holders.into_iter().filter(|(_, clients)| clients.len() > 1);
    let ((id, _), clients) = shared.next().expect("the truth has a duplicate grant");
    assert!(shared.next().is_none(), "one duplicate planted");
    (id, clients)
}

/// The fields of `producer_ids.entries[]` as docs/report-format.md lists them, in order.
fn documented_entry_fields() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/report-format.md")).unwrap();
    let section = doc
        .split("\n## `producer_ids.entries[]`\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a producer_ids.entries[] section");
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// A JSON value is what a cell says: null or absent is empty, a number the same number.
fn same(cell: &str, v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => cell.is_empty(),
        Some(Value::String(s)) => cell == s,
        Some(Value::Number(n)) => cell.parse::<f64>().ok() == n.as_f64(),
        // no field of an entry is a boolean, an array or (but `block`) an object
        Some(_) => false,
    }
}

#[test]
fn csv_producers_columns_are_the_entries_fields_in_their_order_with_their_values() {
    let mut want = Vec::new();
    for field in documented_entry_fields() {
        match field.as_str() {
            "block" => want.extend(
                ["start", "end", "broker_id", "response_frame"].map(|f| format!("block_{f}")),
            ),
            _ => want.push(field),
        }
    }
    for name in PRODUCER_FIXTURES {
        let pcap = format!("fixtures/producers/{name}.pcap");
        // --port: txn-bump's short sessions are read as Kafka only when told
        let args = [pcap.as_str(), "--port", "19201", "--port", "19202"];
        let (header, rows) = csv(&[&args[..], &["--format", "csv-producers"]].concat());
        assert_eq!(header, want, "{name}: the columns");
        let report: Value = serde_json::from_slice(&stdout(&args)).unwrap();
        let entries = report["producer_ids"]["entries"].as_array().unwrap();
        assert!(!entries.is_empty(), "{name} has InitProducerId exchanges");
        assert_eq!(rows.len(), entries.len(), "{name}: a row per entry");
        for (row, entry) in rows.iter().zip(entries) {
            for (column, cell) in row {
                let value = match column.strip_prefix("block_") {
                    Some(field) => entry["block"].get(field),
                    None => entry.get(column),
                };
                assert!(
                    same(cell, value),
                    "{name}: {column} is {cell:?}, the JSON's {value:?}"
                );
            }
        }
    }
}

#[test]
fn csv_producers_rows_follow_the_filters() {
    let truth = truth("kafka-20031");
    let sent = truth["producer_ids"].as_array().unwrap();
    let connection = cell(&sent[0]["connection"]);
    let (_, rows) = csv(&[
        KAFKA_20031,
        "--format",
        "csv-producers",
        "--connection",
        &connection,
    ]);
    let want = sent
        .iter()
        .filter(|s| cell(&s["connection"]) == connection)
        .count();
    assert_eq!(rows.len(), want, "{rows:#?}");
    assert!(rows.iter().all(|r| r["connection"] == connection));
}

/// The text report's "Producers" part: its heading to the blank line after it.
fn producers_part(text: &str) -> Option<Vec<&str>> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("Producers (InitProducerId)"));
    let heading = lines.next()?;
    Some(
        std::iter::once(heading)
            .chain(lines.take_while(|l| !l.is_empty()))
            .collect(),
    )
}

fn text_report(args: &[&str]) -> String {
    String::from_utf8(stdout(
        &[args, &["--format", "text", "--color", "never"]].concat(),
    ))
    .unwrap()
}

#[test]
fn the_text_report_names_the_duplicate_id_and_both_clients_in_a_few_lines() {
    let truth = truth("kafka-20031");
    let sent = truth["producer_ids"].as_array().unwrap();
    let text = text_report(&[KAFKA_20031]);
    let part = producers_part(&text).unwrap_or_else(|| panic!("no Producers part:\n{text}"));
    assert!(part.len() <= 10, "a few lines:\n{}", part.join("\n"));
    let granted = sent.iter().filter(|s| s["granted"] == true).count();
    assert_eq!(
        part[0],
        format!(
            "Producers (InitProducerId): {} exchanges, {granted} granted, {} errors",
            sent.len(),
            sent.len() - granted
        )
    );
    let (id, clients) = duplicate_in_truth(sent);
    // right after the counts: the producers in trouble come first
    let duplicate = part
        .iter()
        .skip(1)
        .find(|l| l.trim_start().starts_with("duplicate:"))
        .unwrap_or_else(|| panic!("no duplicate line:\n{}", part.join("\n")));
    assert!(
        duplicate.contains(&format!("producer id {id} ")),
        "{duplicate}"
    );
    for client in &clients {
        assert!(duplicate.contains(client.as_str()), "{client}: {duplicate}");
    }
    let overlap = part
        .iter()
        .find(|l| l.trim_start().starts_with("overlap:"))
        .unwrap_or_else(|| panic!("no overlap line:\n{}", part.join("\n")));
    assert!(
        overlap.contains(&format!(
            "{} producers on 127.0.0.1 hold id {id}",
            clients.len()
        )),
        "{overlap}"
    );
    // under the overlap, each holder by address and port, client_id and frame, as the
    // producers that sent them (the truth) say
    let at = part.iter().position(|l| l == overlap).unwrap();
    for s in sent
        .iter()
        .filter(|s| s["granted"] == true && s["producer_id"] == id)
    {
        let want = format!(
            "    {} client_id {:?}: producer id {id} epoch {} (frame {})",
            cell(&s["client"]),
            cell(&s["client_id"]),
            s["producer_epoch"],
            s["response_frame"]
        );
        assert!(
            part[at + 1..].contains(&want.as_str()),
            "{want}:\n{}",
            part.join("\n")
        );
        assert!(
            duplicate.contains(&format!(
                "{} client_id {:?}",
                cell(&s["client"]),
                cell(&s["client_id"])
            )),
            "{duplicate}"
        );
    }
}

#[test]
fn the_text_report_has_no_producers_part_without_init_producer_id() {
    for pcap in ["fixtures/seed-v0.pcap", "fixtures/analysis/overlap.pcap"] {
        let text = text_report(&[pcap]);
        assert!(producers_part(&text).is_none(), "{pcap}:\n{text}");
        assert!(
            text.contains("AllocateProducerIds (67)"),
            "{pcap}: the report is there"
        );
    }
}

#[test]
fn on_real_kafka_the_producers_part_counts_the_grants_the_clients_got_and_no_duplicate() {
    for release in ["3.9.1", "4.4.0"] {
        let name = format!("fixtures/kafka-real/{release}-steady");
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("{name}.truth.json"))).unwrap(),
        )
        .unwrap();
        let got = truth["client_producer_ids"].as_array().unwrap().len();
        let text = text_report(&[&format!("{name}.pcap.gz")]);
        let part =
            producers_part(&text).unwrap_or_else(|| panic!("{name}: no Producers part:\n{text}"));
        assert!(
            part[0].contains(&format!(", {got} granted, ")),
            "{name}: {}",
            part[0]
        );
        // every id in a block of the capture: the broker's newest, or the one it held
        // before that (Kafka's prefetch), and nothing else
        let report: Value = serde_json::from_slice(&stdout(&[&format!("{name}.pcap.gz")])).unwrap();
        let summary = &report["producer_ids"]["summary"];
        let (in_block, previous) = (
            summary["in_block"].as_u64().unwrap(),
            summary["previous_block"].as_u64().unwrap(),
        );
        assert_eq!(in_block + previous, got as u64, "{name}");
        let expected = match previous {
            0 => format!("ids granted: {got} in a block of the capture; no duplicate"),
            n => format!("ids granted: {in_block} in a block of the capture, {n} from the block their broker held before its newest (Kafka's prefetch); no duplicate"),
        };
        assert_eq!(
            part.get(1).map(|l| l.trim()),
            Some(expected.as_str()),
            "{name}"
        );
        assert_eq!(
            part.len(),
            2,
            "{name}: nothing in trouble:\n{}",
            part.join("\n")
        );
    }
}
