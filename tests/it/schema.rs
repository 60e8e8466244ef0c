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
    // every other string is free text: an address, a time, a sentence, a path, a name the
    // capture gives (a client id, a listener); a field of names not listed here, such as a
    // new `kind` or `source`, must be an enum
    const FREE_TEXT: [&str; 33] = [
        "address",
        "advice",
        "client",
        "client_id",
        "data",
        "data_crc32",
        "decode_error",
        "endpoints",
        "file",
        "first_timestamp",
        "frame_holds",
        "from_timestamp",
        "headline",
        "last_timestamp",
        "leader_address",
        "led_from_timestamp",
        "led_to_timestamp",
        "listener",
        "message",
        "path",
        "placement_reason",
        "request_timestamp",
        "response_timestamp",
        "server",
        "since",
        "text",
        "timestamp",
        "to_timestamp",
        "topic",
        "transactional_id",
        "until",
        "version",
        "link_types",
    ];
    fn free_string(p: &serde_json::Value) -> bool {
        let closed = ["enum", "const", "pattern", "anyOf", "$ref"]
            .iter()
            .any(|k| p.get(k).is_some());
        match &p["type"] {
            t if t == "string" || *t == serde_json::json!(["string", "null"]) => !closed,
            t if t == "array" => free_string(&p["items"]),
            _ => false,
        }
    }
    let mut free = Vec::new();
    let objects_of = std::iter::once(&schema).chain(defs.as_object().unwrap().values());
    for object in objects_of {
        for (field, p) in object["properties"].as_object().into_iter().flatten() {
            if free_string(p) && !FREE_TEXT.contains(&field.as_str()) {
                free.push(field.clone());
            }
        }
    }
    assert!(free.is_empty(), "free strings: {free:?}");
    // the diagnostics' facts are described for each kind
    let rules = defs["Diagnostic"]["allOf"]
        .as_array()
        .expect("facts by kind");
    assert_eq!(rules.len(), kinds.len());
    // a field the report does not declare is refused, and a kind it does not know
    let validator = jsonschema::validator_for(&schema).unwrap();
    let text = std::fs::read_to_string(root().join("fixtures/seed-v0.report.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut stray = report.clone();
    stray["summary"]["surprise"] = serde_json::json!(1);
    assert!(!validator.is_valid(&stray));
    report["exchanges"][0]["status"] = serde_json::json!("done");
    assert!(!validator.is_valid(&report));
    // nor a fact its kind does not have, nor a fact of the wrong type
    let text = std::fs::read_to_string(root().join("fixtures/truncated.report.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(validator.is_valid(&report));
    let kind = report["diagnostics"][0]["kind"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut extra = report.clone();
    extra["diagnostics"][0]["facts"]["producer_id"] = serde_json::json!(1);
    assert!(!validator.is_valid(&extra), "{kind}");
    let mut retyped = report.clone();
    let (name, _) = pidshark::diag::Kind::from_name(&kind)
        .unwrap()
        .declared_facts()
        .iter()
        .find(|(name, _)| report["diagnostics"][0]["facts"].get(name).is_some())
        .unwrap();
    retyped["diagnostics"][0]["facts"][name] = serde_json::json!([true]);
    assert!(!validator.is_valid(&retyped), "{kind}.{name}");
    let mut unfacted = report;
    unfacted["verdict"]["facts"]
        .as_object_mut()
        .unwrap()
        .remove("packets");
    assert!(!validator.is_valid(&unfacted));
}

/// Reports of every shape validate, not only the goldens, and so does each ndjson line: two hosts' captures with the
/// controllers' logs and time filters, the logs alone, broker and error filters, a frame.
#[test]
fn reports_of_every_shape_validate_against_the_schema() {
    let validator = jsonschema::validator_for(&committed_schema()).unwrap();
    let lines = jsonschema::validator_for(&committed_ndjson_schema()).unwrap();
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
        let out = pidshark()
            .args(&args)
            .args(["--quiet", "--format", "ndjson"])
            .current_dir(root())
            .output()
            .unwrap();
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = lines
                .iter_errors(&value)
                .take(3)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{args:?} ndjson: {}", errors.join("; "));
        }
    }
}

fn committed_ndjson_schema() -> serde_json::Value {
    let text = std::fs::read_to_string(root().join("schema/ndjson-v1.schema.json"))
        .expect("committed ndjson schema");
    serde_json::from_str(&text).expect("schema is JSON")
}

#[test]
fn committed_ndjson_schema_is_current() {
    let printed = pidshark()
        .args(["--schema", "ndjson"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let committed = std::fs::read(root().join("schema/ndjson-v1.schema.json")).unwrap();
    assert!(
        printed == committed,
        "schema/ndjson-v1.schema.json is stale: run `cargo run -- --schema ndjson > schema/ndjson-v1.schema.json`"
    );
}

/// Every capture under `fixtures/`, however broken, and every metadata log on its own,
/// gives a JSON report that meets the report's schema and ndjson lines that each meet
/// the line schema: whatever the input, the output keeps the contract.
#[test]
fn every_fixture_gives_output_that_meets_the_schemas() {
    let report_schema = jsonschema::validator_for(&committed_schema()).unwrap();
    let line_schema = jsonschema::validator_for(&committed_ndjson_schema()).unwrap();
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut dirs = vec![root().join("fixtures")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.to_string_lossy().into_owned();
            if name.ends_with(".metadata") {
                // the controllers' logs alone
                let mut args = Vec::new();
                for node in std::fs::read_dir(&path).unwrap() {
                    args.push("--metadata-log".to_owned());
                    args.push(node.unwrap().path().to_string_lossy().into_owned());
                }
                args.sort();
                runs.push(args);
            } else if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".pcap") || name.ends_with(".pcapng") || name.ends_with(".gz")
            {
                runs.push(vec![name]);
            }
        }
    }
    runs.sort();
    assert!(runs.len() > 100, "{} runs", runs.len());
    let mut lines = 0;
    let errors_of = |v: &jsonschema::Validator, value: &serde_json::Value| -> Vec<String> {
        v.iter_errors(value)
            .take(3)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect()
    };
    for args in &runs {
        let run = |format: &str| {
            pidshark()
                .args(args)
                .args(["--quiet", "--compact", "--format", format])
                .output()
                .unwrap()
        };
        let out = run("json");
        // a file that is no capture has no report (exit 2), and nothing to check
        if out.status.code() == Some(2) {
            continue;
        }
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let errors = errors_of(&report_schema, &report);
        assert!(errors.is_empty(), "{args:?}: {}", errors.join("; "));
        let out = run("ndjson");
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let errors = errors_of(&line_schema, &value);
            assert!(
                errors.is_empty(),
                "{args:?}: {line:.200}: {}",
                errors.join("; ")
            );
            lines += 1;
        }
    }
    assert!(lines > 10_000, "{lines} ndjson lines");
}

/// The line schema tells the lines apart: a report line is no exchange line, and a line
/// without its `type` is none.
#[test]
fn the_ndjson_schema_refuses_a_line_of_the_wrong_type() {
    let validator = jsonschema::validator_for(&committed_ndjson_schema()).unwrap();
    let out = pidshark()
        .args(["fixtures/seed-v0.pcap", "--format", "ndjson", "--quiet"])
        .current_dir(root())
        .output()
        .unwrap();
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let exchange = lines.iter().find(|l| l["type"] == "exchange").unwrap();
    assert!(validator.is_valid(exchange));
    let mut mistyped = exchange.clone();
    mistyped["type"] = serde_json::json!("report");
    assert!(!validator.is_valid(&mistyped));
    let mut untyped = exchange.clone();
    untyped.as_object_mut().unwrap().remove("type");
    assert!(!validator.is_valid(&untyped));
    let report = lines.last().unwrap();
    assert_eq!(report["type"], "report");
    assert!(validator.is_valid(report));
    let mut with_entries = report.clone();
    with_entries["producer_ids"]["entries"] = serde_json::json!([]);
    assert!(!validator.is_valid(&with_entries));
}
