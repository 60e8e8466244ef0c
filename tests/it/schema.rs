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
    for dir in ["fixtures", "fixtures/variants", "fixtures/analysis"] {
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
    assert!(checked >= 30, "only {checked} golden reports found");
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
