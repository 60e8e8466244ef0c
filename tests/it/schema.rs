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

/// Issue 39: the schema is strict enough to catch a stray field and standard enough for
/// strict validators: every object with named fields sets `additionalProperties`, and no
/// `format` is outside JSON Schema 2020-12's (ajv's strict mode refuses `uint64`).
#[test]
fn the_schema_is_strict_and_standard() {
    const STANDARD: [&str; 19] = [
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];
    fn walk(v: &serde_json::Value, path: &str, objects: &mut usize) {
        match v {
            serde_json::Value::Object(map) => {
                if map.contains_key("properties") {
                    assert!(map.contains_key("additionalProperties"), "{path}");
                    *objects += 1;
                }
                if let Some(format) = map.get("format").and_then(|f| f.as_str()) {
                    assert!(STANDARD.contains(&format), "{path}: {format}");
                }
                for (key, value) in map {
                    walk(value, &format!("{path}/{key}"), objects);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    walk(item, path, objects);
                }
            }
            _ => {}
        }
    }
    let schema = committed_schema();
    let mut objects = 0;
    walk(&schema, "", &mut objects);
    assert!(objects >= 30, "{objects}");
    // closed sets are enums, from the names the code declares
    let defs = &schema["$defs"];
    let names = |def: &str, field: &str| -> Vec<String> {
        defs[def]["properties"][field]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{def}.{field} is no enum"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names("Exchange", "status"),
        ["complete", "unanswered", "response_unknown"]
    );
    assert_eq!(
        names("Diagnostic", "severity"),
        ["info", "warning", "error"]
    );
    assert!(names("Verdict", "code").contains(&"blocks_not_committed".to_owned()));
    assert_eq!(names("Verdict", "grade").len(), 5);
    let listed = pidshark().arg("--list-kinds").output().unwrap().stdout;
    let kinds = names("Diagnostic", "kind");
    assert_eq!(names("PidFinding", "kind"), kinds);
    for kind in &kinds {
        assert!(
            String::from_utf8_lossy(&listed).contains(kind.as_str()),
            "{kind}"
        );
    }
    assert!(kinds.len() >= 40, "{}", kinds.len());
    // a field the report does not declare is refused, and a kind it does not know
    let validator = jsonschema::validator_for(&schema).unwrap();
    let text = std::fs::read_to_string(root().join("fixtures/seed-v0.report.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut stray = report.clone();
    stray["summary"]["surprise"] = serde_json::json!(1);
    assert!(!validator.is_valid(&stray));
    report["exchanges"][0]["status"] = serde_json::json!("done");
    assert!(!validator.is_valid(&report));
}

/// Reports of every shape validate, not only the goldens: two hosts' captures with the
/// controllers' logs and time filters, the logs alone, broker and error filters, a frame.
#[test]
fn reports_of_every_shape_validate_against_the_schema() {
    let validator = jsonschema::validator_for(&committed_schema()).unwrap();
    let dir = "fixtures/kafka-real";
    let logs = [
        "--metadata-log",
        "fixtures/kafka-real/4.4.0-two-hosts.metadata/101",
        "--metadata-log",
        "fixtures/kafka-real/4.4.0-two-hosts.metadata/102",
    ];
    let hosts = [
        format!("{dir}/4.4.0-two-hosts.broker-1.pcap.gz"),
        format!("{dir}/4.4.0-two-hosts.controllers.pcap.gz"),
    ];
    let steady = format!("{dir}/4.4.0-steady.pcap.gz");
    let runs: Vec<Vec<&str>> = vec![
        [&hosts[0], &hosts[1]]
            .iter()
            .map(|s| s.as_str())
            .chain(logs)
            .chain(["--since", "1", "--until", "20"])
            .collect(),
        logs.to_vec(),
        vec![&steady, "--broker", "1", "--errors-only"],
        vec!["fixtures/controller-loopback.pcap", "--frame", "152"],
        vec!["fixtures/truncated.pcap", "--no-producer-entries"],
    ];
    for args in runs {
        let out = pidshark()
            .args(&args)
            .arg("--quiet")
            .current_dir(root())
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&report)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{args:?}: {}", errors.join("; "));
    }
}
