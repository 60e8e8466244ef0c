//! The report's JSON Schema: the committed `schema/report-v1.schema.json` must be what
//! `pidshark --schema` prints (regenerate it with `pidshark --schema > schema/...` after a
//! reviewed change to the report types), and every golden report must validate against it.

use crate::common::{pidshark, root};

fn committed_schema() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("schema/report-v1.schema.json"))
        .expect("committed schema");
    serde_json::from_str(&text).expect("schema is JSON")
}

#[test]
fn committed_schema_is_current() {
    let printed = pidshark()
        .arg("--schema")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let committed = std::fs::read(root().join("schema/report-v1.schema.json")).unwrap();
    assert!(
        printed == committed,
        "schema/report-v1.schema.json is stale: run `cargo run -- --schema > schema/report-v1.schema.json`"
    );
}

#[test]
fn every_golden_report_validates_against_the_schema() {
    let validator = jsonschema::validator_for(&committed_schema()).expect("schema compiles");
    let mut checked = 0;
    for dir in [
        "fixtures",
        "fixtures/variants",
        "fixtures/analysis",
        "fixtures/kafka-real",
    ] {
        let Ok(entries) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".report.json") {
                continue;
            }
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&report)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{}: {}",
                path.display(),
                errors.join("; ")
            );
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} golden reports found");
}

#[test]
fn schema_rejects_a_report_with_a_mistyped_field() {
    let validator = jsonschema::validator_for(&committed_schema()).unwrap();
    let text = std::fs::read_to_string(root().join("fixtures/seed-v0.report.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(validator.is_valid(&report));
    report["exchanges"][0]["correlation_id"] = serde_json::json!("zero");
    assert!(!validator.is_valid(&report));
}

/// Issue 39: `--no-producer-entries` leaves `producer_ids.entries` out of JSON (and the
/// `producer_id` lines out of ndjson) and nothing else; the report still meets the
/// schema, and a format that has no entries to leave out refuses the option.
#[test]
fn no_producer_entries_leaves_out_the_entries_and_nothing_else() {
    let capture = "fixtures/kafka-real/4.4.0-steady.pcap.gz";
    let run = |args: &[&str]| {
        let out = pidshark()
            .arg(capture)
            .args(["--quiet", "--compact"])
            .args(args)
            .current_dir(root())
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        out.stdout
    };
    let whole: serde_json::Value = serde_json::from_slice(&run(&[])).unwrap();
    let short_bytes = run(&["--no-producer-entries"]);
    let short: serde_json::Value = serde_json::from_slice(&short_bytes).unwrap();
    let entries = whole["producer_ids"]["entries"].as_array().unwrap().len() as u64;
    assert!(entries > 1000, "{entries}");
    assert_eq!(short["producer_ids"]["summary"]["exchanges"], entries);
    assert!(short["producer_ids"].get("entries").is_none());
    let mut without = whole.clone();
    without["producer_ids"]
        .as_object_mut()
        .unwrap()
        .remove("entries");
    assert_eq!(short, without);
    assert!(short_bytes.len() * 100 < serde_json::to_vec(&whole).unwrap().len());
    let validator = jsonschema::validator_for(&committed_schema()).unwrap();
    assert!(validator.is_valid(&short));
    // ndjson: no producer_id line, the same report line
    let lines = |bytes: Vec<u8>| -> Vec<String> {
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let all = lines(run(&["--format", "ndjson"]));
    let fewer = lines(run(&["--format", "ndjson", "--no-producer-entries"]));
    let producer_line = |l: &String| l.starts_with("{\"type\":\"producer_id\",");
    assert_eq!(
        all.iter().filter(|l| producer_line(l)).count() as u64,
        entries
    );
    let kept: Vec<&String> = all.iter().filter(|l| !producer_line(l)).collect();
    assert_eq!(fewer.iter().collect::<Vec<_>>(), kept);
    pidshark()
        .args([capture, "--format", "text", "--no-producer-entries"])
        .current_dir(root())
        .assert()
        .code(2);
}
