//! Filters: each shows exactly the exchanges it names, in every format, counted from the
//! fixture's truth file; the summary and findings stay those of the whole capture.

use serde_json::Value;

use crate::common::{pidshark, root};

const FIXTURE: &str = "fixtures/analysis/failover-regression.pcap";

fn truth() -> Value {
    let path = root().join("fixtures/analysis/failover-regression.truth.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn json(args: &[&str]) -> Value {
    let out = pidshark()
        .arg(FIXTURE)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// (broker, correlation id) of each exchange of a report.
fn exchanges(report: &Value) -> Vec<(i64, i64)> {
    report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["request"]["broker_id"].as_i64().unwrap(),
                e["correlation_id"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// (broker, correlation id) of the truth's exchanges that `keep` keeps.
fn planted(keep: impl Fn(&Value) -> bool) -> Vec<(i64, i64)> {
    let mut want: Vec<(i64, i64)> = truth()["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| keep(e))
        .map(|e| {
            (
                e["request"]["broker_id"].as_i64().unwrap(),
                e["correlation_id"].as_i64().unwrap(),
            )
        })
        .collect();
    want.sort_unstable();
    want
}

fn sorted(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    v
}

#[test]
fn broker_keeps_its_exchanges_and_blocks_and_the_whole_capture_summary() {
    let whole = json(&[]);
    let report = json(&["--broker", "2"]);
    assert_eq!(
        sorted(exchanges(&report)),
        planted(|e| e["request"]["broker_id"] == 2)
    );
    let blocks = report["producer_id_blocks"]["blocks"].as_array().unwrap();
    assert!(!blocks.is_empty() && blocks.iter().all(|b| b["broker_id"] == 2));
    assert_eq!(
        report["summary"], whole["summary"],
        "the summary is of the whole capture"
    );
    assert_eq!(
        report["producer_id_blocks"]["findings"],
        whole["producer_id_blocks"]["findings"]
    );
    assert_eq!(report["filters"]["broker"], 2);
    assert!(whole.get("filters").is_none(), "no filters, no field");
}

#[test]
fn connection_errors_only_and_frame_pick_what_they_name() {
    let report = json(&["--connection", "0"]);
    let clients: Vec<&Value> = report["exchanges"].as_array().unwrap().iter().collect();
    assert!(!clients.is_empty() && clients.iter().all(|e| e["connection"] == 0));
    let first_client = clients[0]["client"].clone();
    assert_eq!(
        sorted(exchanges(&report)),
        planted(|e| e["client"] == first_client)
    );
    let errors = json(&["--errors-only"]);
    assert_eq!(
        sorted(exchanges(&errors)),
        planted(|e| e["response"]["error_code"] != 0)
    );
    assert!(errors["producer_id_blocks"]["blocks"]
        .as_array()
        .unwrap()
        .is_empty());
    let one = json(&["--frame", "50"]);
    let list = one["exchanges"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert!(list[0]["request"]["frame"] == 50 || list[0]["response"]["frame"] == 50);
}

#[test]
fn since_and_until_take_rfc3339_or_seconds_after_the_first_packet() {
    use time::format_description::well_known::Rfc3339;
    use time::OffsetDateTime;
    let whole = json(&[]);
    let times: Vec<f64> = whole["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["request"]["unix_time"].as_f64().unwrap())
        .collect();
    let rfc = |unix: f64| {
        let micros = (unix * 1e6).round() as i128;
        let t = OffsetDateTime::from_unix_timestamp_nanos(micros * 1000).unwrap();
        t.format(&Rfc3339).unwrap()
    };
    // absolute bounds on exchanges 3 and 6: both included
    let cut = json(&["--since", &rfc(times[3]), "--until", &rfc(times[6])]);
    assert_eq!(exchanges(&cut).len(), 4, "exchanges 3 to 6");
    assert_eq!(
        cut["filters"]["since"].as_str().unwrap()[..26],
        rfc(times[3])[..26]
    );
    // relative: seconds after the first packet
    let start = whole["captures"][0]["first_timestamp"].as_str().unwrap();
    let start = OffsetDateTime::parse(start, &Rfc3339).unwrap();
    let start = start.unix_timestamp_nanos() as f64 / 1e9;
    let after = format!("{:.6}", times[3] - start);
    let cut = json(&["--since", &after]);
    assert_eq!(exchanges(&cut).len(), times.len() - 3, "from exchange 3 on");
    let cut = json(&["--until", "0"]);
    assert!(
        exchanges(&cut).is_empty(),
        "nothing is requested with the first packet"
    );
    pidshark()
        .args([FIXTURE, "--since", "yesterday"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("RFC 3339"));
}

#[test]
fn every_format_shows_the_filtered_exchanges() {
    let run = |format: &str, extra: &[&str]| {
        let out = pidshark()
            .args([FIXTURE, "--format", format, "--broker", "3"])
            .args(extra)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let ndjson = run("ndjson", &[]);
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (last, lines) = lines.split_last().unwrap();
    let ex: Vec<&Value> = lines.iter().filter(|l| l["type"] == "exchange").collect();
    assert_eq!(ex.len(), planted(|e| e["request"]["broker_id"] == 3).len());
    assert!(ex.iter().all(|e| e["request"]["broker_id"] == 3));
    assert_eq!(last["filters"]["broker"], 3);
    let text = run("text", &["--all"]);
    assert!(text.contains("Filtered (broker 3): 2 of "), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("  corr ")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines.iter().all(|l| l.contains("broker 3/")), "{text}");
    let tree = run("tree", &[]);
    assert_eq!(
        tree.matches("== AllocateProducerIds request").count(),
        2,
        "{tree}"
    );
    let one = pidshark()
        .args([FIXTURE, "--format", "tree", "--frame", "50"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let one = String::from_utf8(one).unwrap();
    assert_eq!(
        one.matches("\n== ").count() + usize::from(one.starts_with("== ")),
        1,
        "{one}"
    );
    assert!(one.contains("frame 50"), "{one}");
}

/// The text report's counts beside a filtered list are the whole capture's, and it says
/// so: it once gave "the 2 shown of 9 (9 complete, ...)" and "over 9" as if of the 2.
#[test]
fn the_text_reports_whole_capture_counts_beside_a_filtered_list_say_so() {
    let text = crate::common::stdout_text(&[FIXTURE, "--format", "text", "--all", "--broker", "3"]);
    assert!(
        text.contains("the 2 shown of 9 (of all, 9 complete,"),
        "{text}"
    );
    assert!(
        text.contains("over 9 (all the capture's complete exchanges)"),
        "{text}"
    );
}
