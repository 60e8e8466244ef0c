//! The producer-ID analysis on captures of a misbehaving fake controller
//! (`fixtures/analysis/`, made by `scripts/make-analysis-fixtures.py`): the blocks and
//! every finding its truth expects, none of the kinds it must not show, and the
//! exchanges, field by field.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::{pidshark, root};
use crate::truth::compare_with_truth;

fn fixtures() -> Vec<(String, Vec<String>, Value)> {
    let dir = root().join("fixtures/analysis");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".truth.json").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(format!("{name}.truth.json"))).unwrap();
            let truth: Value = serde_json::from_str(&text).unwrap();
            let files = truth["files"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| format!("fixtures/analysis/{}", f.as_str().unwrap()))
                .collect();
            (name, files, truth)
        })
        .collect()
}

fn report(files: &[String]) -> Value {
    let out = pidshark()
        .args(files)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// (kind, correlation ids) of each finding, the ids found through the frames it names.
fn findings_by_correlation(report: &Value) -> BTreeMap<(String, Vec<i64>), usize> {
    let mut frame_to_corr: BTreeMap<u64, BTreeSet<i64>> = BTreeMap::new();
    for ex in report["exchanges"].as_array().unwrap() {
        let corr = ex["correlation_id"].as_i64().unwrap();
        for frame in [&ex["request"]["frame"], &ex["response"]["frame"]] {
            if let Some(f) = frame.as_u64() {
                frame_to_corr.entry(f).or_default().insert(corr);
            }
        }
    }
    let mut out = BTreeMap::new();
    for f in report["producer_id_blocks"]["findings"].as_array().unwrap() {
        let corrs: BTreeSet<i64> = f["frames"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|fr| {
                frame_to_corr
                    .get(&fr.as_u64().unwrap())
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        *out.entry((
            f["kind"].as_str().unwrap().to_owned(),
            corrs.into_iter().collect(),
        ))
        .or_default() += 1;
    }
    out
}

#[test]
fn analysis_fixtures_show_exactly_their_findings() {
    let mut failures = Vec::new();
    for (name, files, truth) in fixtures() {
        let report = report(&files);
        let got = findings_by_correlation(&report);
        let mut want: BTreeMap<(String, Vec<i64>), usize> = BTreeMap::new();
        for f in truth["expected_findings"].as_array().unwrap() {
            let mut corrs: Vec<i64> = f["correlation_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_i64().unwrap())
                .collect();
            corrs.sort_unstable();
            *want
                .entry((f["kind"].as_str().unwrap().to_owned(), corrs))
                .or_default() += 1;
        }
        if got != want {
            failures.push(format!(
                "{name}: findings\n    got  {got:?}\n    want {want:?}"
            ));
        }
        let kinds: BTreeSet<&str> = report["producer_id_blocks"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        for clean in truth["expected_clean_kinds"].as_array().unwrap() {
            if kinds.contains(clean.as_str().unwrap()) {
                failures.push(format!("{name}: shows {clean}, which it must not"));
            }
        }
        // every finding is also a diagnostic
        let diag_kinds: BTreeSet<&str> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["kind"].as_str().unwrap())
            .collect();
        if !kinds.is_subset(&diag_kinds) {
            failures.push(format!("{name}: findings missing from diagnostics"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn analysis_fixtures_blocks_and_exchanges_match_their_truth() {
    let mut failures = Vec::new();
    for (name, files, truth) in fixtures() {
        let report = report(&files);
        if let Err(problem) = compare_with_truth(&report, &truth) {
            failures.push(format!("{name}: {problem}"));
        }
        let got: Vec<Value> = report["producer_id_blocks"]["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                serde_json::json!({
                    "start": b["start"], "end": b["end"], "len": b["len"],
                    "broker_id": b["broker_id"], "broker_epoch": b["broker_epoch"],
                    "client": b["client"], "server": b["server"], "correlation_id": b["correlation_id"],
                })
            })
            .collect();
        if got.as_slice() != truth["blocks"].as_array().unwrap().as_slice() {
            failures.push(format!(
                "{name}: blocks\n    got  {got:?}\n    want {}",
                truth["blocks"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn analysis_fixtures_match_their_golden_reports() {
    let mut failures = Vec::new();
    for (name, files, _) in fixtures() {
        let out = pidshark()
            .args(&files)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let golden = root().join(format!("fixtures/analysis/{name}.report.json"));
        match std::fs::read(&golden) {
            Ok(expected) if expected == out => {}
            Ok(_) => failures.push(format!("{name}: differs from {}", golden.display())),
            Err(_) => failures.push(format!(
                "{name}: no golden report; run scripts/bless-golden"
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn per_broker_table_on_the_failover() {
    let report = report(&["fixtures/analysis/failover-regression.pcap".to_owned()]);
    let brokers = &report["summary"]["brokers"];
    let one = &brokers["1"];
    assert_eq!(one["errors"]["NOT_CONTROLLER"], 2);
    assert_eq!(brokers["3"]["epochs_seen"], serde_json::json!([30, 31]));
    let granted: i64 = brokers
        .as_object()
        .unwrap()
        .values()
        .map(|b| b["ids_granted"].as_i64().unwrap())
        .sum();
    let blocks: i64 = report["producer_id_blocks"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["len"].as_i64().unwrap())
        .sum();
    assert_eq!(granted, blocks);
}

#[test]
fn fail_on_overlap_gates_the_bad_controller_but_not_the_healthy_one() {
    pidshark()
        .args([
            "fixtures/analysis/healthy.pcap",
            "--fail-on",
            "pid_block_overlap,pid_block_regression,warning",
        ])
        .assert()
        .code(0);
    pidshark()
        .args([
            "fixtures/analysis/overlap.pcap",
            "--fail-on",
            "pid_block_overlap",
        ])
        .assert()
        .code(1)
        .stderr("pidshark: --fail-on conditions hold: pid_block_overlap (1)\n");
}

/// The verdict the truth of a fixture calls for: its planted faults, most serious first.
fn verdict_from_truth(truth: &Value) -> String {
    use pidshark::diag::{Kind, Severity};
    let kinds: Vec<&str> = truth["expected_findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    let unanswered = truth["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["response"].is_null())
        .count();
    let warned = kinds
        .iter()
        .any(|k| Kind::from_name(k).unwrap().severity() == Severity::Warning);
    let blocks = truth["blocks"].as_array().unwrap();
    let brokers: BTreeSet<i64> = blocks
        .iter()
        .map(|b| b["broker_id"].as_i64().unwrap())
        .collect();
    if kinds.contains(&"pid_block_overlap") {
        "DUPLICATE PRODUCER IDS: ".to_owned()
    } else if kinds.contains(&"pid_block_regression") {
        "PRODUCER IDS WENT BACKWARDS: ".to_owned()
    } else if unanswered > 0 || kinds.contains(&"pid_block_gap") {
        // a gap's ids went to requests the capture does not show
        format!("CORRECT AS FAR AS CAPTURED: {} blocks", blocks.len())
    } else if warned {
        format!("CORRECT, WITH WARNINGS: {} blocks", blocks.len())
    } else {
        format!(
            "CORRECT: {} blocks granted to {} brokers without overlap or regression",
            blocks.len(),
            brokers.len()
        )
    }
}

#[test]
fn the_text_verdict_is_what_the_planted_faults_call_for() {
    let mut failures = Vec::new();
    for (name, files, truth) in fixtures() {
        let out = pidshark()
            .args(&files)
            .args(["--format", "text"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let out = String::from_utf8(out).unwrap();
        // the title, a blank line, the verdict
        let verdict = out.lines().nth(2).unwrap_or_default();
        let want = verdict_from_truth(&truth);
        if !verdict.starts_with(&want) {
            failures.push(format!("{name}: {verdict:?} does not start {want:?}"));
        }
        // each finding once after the verdict: not again among the diagnostics
        let after_verdict: String = out.lines().skip(3).collect::<Vec<_>>().join("\n");
        let findings = report(&files)["producer_id_blocks"]["findings"].clone();
        for f in findings.as_array().unwrap() {
            let message = f["message"].as_str().unwrap();
            if after_verdict.matches(message).count() != 1 {
                failures.push(format!("{name}: {message:?} is not listed once"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn text_goldens_of_the_analysis_fixtures() {
    for (name, files, _) in fixtures() {
        let out = pidshark()
            .args(&files)
            .args(["--format", "text"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let golden = root().join(format!("fixtures/analysis/{name}.text.txt"));
        let expected = std::fs::read(&golden)
            .unwrap_or_else(|_| panic!("{} missing: run scripts/bless-golden", golden.display()));
        assert!(
            out == expected,
            "{} differs from `pidshark {} --format text` (scripts/bless-golden rewrites it)",
            golden.display(),
            files.join(" ")
        );
    }
}

/// The facts a finding must carry, from the detail its truth file planted.
fn facts_from_truth(kind: &str, d: &Value) -> Vec<(&'static str, Value)> {
    use serde_json::json;
    match kind {
        "pid_block_overlap" => vec![
            ("ids_start", d["shared"][0].clone()),
            ("ids_end", d["shared"][1].clone()),
            ("other_broker_id", d["broker_ids"][0].clone()),
        ],
        "pid_block_regression" => vec![
            ("start", d["start"].clone()),
            ("other_end", d["previous_max_end"].clone()),
        ],
        "pid_block_gap" => vec![
            ("count", d["count"].clone()),
            ("ids_start", d["first_missing"].clone()),
            ("ids_end", d["last_missing"].clone()),
        ],
        "pid_block_irregular" if d["reason"] == "length" => vec![
            ("len", d["len"].clone()),
            ("usual_len", d["usual_len"].clone()),
        ],
        "pid_block_irregular" => vec![
            ("producer_id_len", d["len"].clone()),
            ("producer_id_start", d["start"].clone()),
        ],
        "pid_error_streak" => vec![
            ("count", d["count"].clone()),
            ("connections", d["connections"].clone()),
            ("error", d["error_name"].clone()),
        ],
        "pid_retry" if d["after"] == "error" => vec![("error", d["error_name"].clone())],
        "pid_retry" => vec![("error", Value::Null)],
        "pid_broker_epoch_change" => vec![
            ("old_epoch", d["old_epoch"].clone()),
            ("new_epoch", d["new_epoch"].clone()),
        ],
        "pid_slow_response" => vec![("latency_us", json!(d["latency_us"]))],
        other => panic!("no facts known for {other}"),
    }
}

#[test]
fn findings_carry_the_facts_their_truth_planted_and_their_time() {
    let mut failures = Vec::new();
    for (name, files, truth) in fixtures() {
        let report = report(&files);
        let mut frame_to_corr: BTreeMap<u64, i64> = BTreeMap::new();
        let mut frame_time: BTreeMap<u64, String> = BTreeMap::new();
        for ex in report["exchanges"].as_array().unwrap() {
            for m in [&ex["request"], &ex["response"]] {
                if let Some(f) = m["frame"].as_u64() {
                    frame_to_corr.insert(f, ex["correlation_id"].as_i64().unwrap());
                    frame_time.insert(f, m["timestamp"].as_str().unwrap().to_owned());
                }
            }
        }
        for f in report["producer_id_blocks"]["findings"].as_array().unwrap() {
            let kind = f["kind"].as_str().unwrap();
            let mut corrs: Vec<i64> = f["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|fr| frame_to_corr.get(&fr.as_u64().unwrap()).copied())
                .collect();
            corrs.sort_unstable();
            corrs.dedup();
            let planted = truth["expected_findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| {
                    let mut want: Vec<i64> = t["correlation_ids"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| c.as_i64().unwrap())
                        .collect();
                    want.sort_unstable();
                    t["kind"] == kind && want == corrs
                });
            let Some(planted) = planted else {
                failures.push(format!("{name}: {kind} {corrs:?} was not planted"));
                continue;
            };
            for (fact, want) in facts_from_truth(kind, &planted["detail"]) {
                let got = &f["facts"][fact];
                let same = match (got.as_f64(), want.as_f64()) {
                    (Some(a), Some(b)) if fact == "latency_us" => (a - b).abs() < 1.0,
                    _ => *got == want,
                };
                if !same {
                    failures.push(format!(
                        "{name}: {kind} {corrs:?}: {fact} is {got}, planted {want}"
                    ));
                }
            }
            // its time is the time of the frame it names as where it shows
            let frame = f["facts"]["frame"].as_u64().unwrap();
            if frame_time.get(&frame).map(String::as_str) != f["timestamp"].as_str() {
                failures.push(format!(
                    "{name}: {kind} {corrs:?}: timestamp is not frame {frame}'s"
                ));
            }
            let unix = f["unix_time"].as_f64().unwrap();
            if !(1.7e9..=2.0e9).contains(&unix) {
                failures.push(format!("{name}: {kind}: unix_time {unix}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
