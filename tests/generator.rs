//! The capture generator (`examples/gen_capture.rs`, `scripts/gen-capture`) against pidshark:
//! small captures of both shapes, whose reports must match the generator's ground truth field
//! by field, with no sign of lost bytes or framing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Diagnostic kinds that mean pidshark lost or misread bytes of a clean capture.
const FORBIDDEN: &[&str] = &[
    "tcp_gap",
    "kafka_resync",
    "kafka_framing_lost",
    "kafka_decode_error",
    "kafka_frame_incomplete",
];

/// Runs the generator with `args`, writing `<name>.pcap` and `<name>.truth.json` in `dir`.
fn generate(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, PathBuf) {
    let pcap = dir.join(format!("{name}.pcap"));
    let truth = dir.join(format!("{name}.truth.json"));
    let out = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "gen_capture", "--"])
        .args(args)
        .arg("-o")
        .arg(&pcap)
        .arg("--truth")
        .arg(&truth)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "gen_capture {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (pcap, truth)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("readable");
    serde_json::from_str(&text).expect("JSON")
}

fn report(pcap: &Path) -> Value {
    let out = assert_cmd::Command::cargo_bin("pidshark")
        .expect("binary built")
        .arg(pcap)
        .arg("--compact")
        .output()
        .expect("pidshark runs");
    assert!(
        out.status.success(),
        "pidshark failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report is JSON")
}

/// Every difference between the report and the truth, in words.
fn differences(report: &Value, truth: &Value) -> Vec<String> {
    let mut diffs = Vec::new();
    let summary = &report["summary"];
    for (field, want) in [
        ("packets", &truth["packets"]),
        ("tcp_connections", &truth["connections"]),
        ("kafka_connections", &truth["connections"]),
    ] {
        if &summary[field] != want {
            diffs.push(format!("summary.{field}: {} != {want}", summary[field]));
        }
    }
    let (empty, want_frames) = (serde_json::Map::new(), &truth["api_frames"]);
    let got_frames = summary["api_keys"].as_object().unwrap_or(&empty);
    let want_frames = want_frames.as_object().unwrap_or(&empty);
    for (name, want) in want_frames {
        for field in ["api_key", "requests", "responses"] {
            let got = &got_frames.get(name).unwrap_or(&Value::Null)[field];
            if got != &want[field] {
                diffs.push(format!(
                    "summary.api_keys.{name}.{field}: {got} != {}",
                    want[field]
                ));
            }
        }
    }
    for name in got_frames.keys().filter(|n| !want_frames.contains_key(*n)) {
        diffs.push(format!("summary.api_keys.{name}: not in the capture"));
    }
    let kinds = summary["diagnostics"].as_object().unwrap_or(&empty);
    for kind in FORBIDDEN {
        if let Some(n) = kinds.get(*kind) {
            diffs.push(format!("{n} diagnostics of kind {kind}"));
        }
    }
    for kind in kinds.keys().filter(|k| !k.starts_with("pid_")) {
        if !FORBIDDEN.contains(&kind.as_str()) {
            diffs.push(format!(
                "unexpected diagnostics of kind {kind}: {}",
                kinds[kind]
            ));
        }
    }

    let want = truth["exchanges"].as_array().expect("truth exchanges");
    let got = report["exchanges"].as_array().expect("report exchanges");
    if got.len() != want.len() {
        diffs.push(format!("{} exchanges, truth has {}", got.len(), want.len()));
    }
    // Both lists are in the order the requests were sent.
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        let ctx = format!(
            "exchange {i} ({} -> {} correlation id {})",
            want["client"], want["server"], want["correlation_id"]
        );
        let pairs = [
            ("client", &got["client"], &want["client"]),
            ("server", &got["server"], &want["server"]),
            (
                "correlation_id",
                &got["correlation_id"],
                &want["correlation_id"],
            ),
            ("status", &got["status"], &Value::from("complete")),
            ("api_key", &got["request"]["api_key"], &Value::from(67)),
            (
                "api_version",
                &got["request"]["api_version"],
                &Value::from(0),
            ),
            (
                "client_id",
                &got["request"]["client_id"],
                &want["client_id"],
            ),
            (
                "broker_id",
                &got["request"]["broker_id"],
                &want["broker_id"],
            ),
            (
                "broker_epoch",
                &got["request"]["broker_epoch"],
                &want["broker_epoch"],
            ),
            (
                "error_code",
                &got["response"]["error_code"],
                &want["error_code"],
            ),
            (
                "producer_id_start",
                &got["response"]["producer_id_start"],
                &want["producer_id_start"],
            ),
            (
                "producer_id_len",
                &got["response"]["producer_id_len"],
                &want["producer_id_len"],
            ),
        ];
        for (field, got, want) in pairs {
            if got != want {
                diffs.push(format!("{ctx}: {field} {got} != {want}"));
            }
        }
        for side in ["request", "response"] {
            if let Some(e) = got[side].get("decode_error") {
                diffs.push(format!("{ctx}: {side}.decode_error {e}"));
            }
        }
    }
    diffs
}

fn check(name: &str, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().expect("temporary directory");
    let (pcap, truth) = generate(dir.path(), name, args);
    let (report, truth) = (report(&pcap), read_json(&truth));
    let diffs = differences(&report, &truth);
    assert!(
        diffs.is_empty(),
        "{name}: {} differences from the truth, the first ones:\n{}",
        diffs.len(),
        diffs[..diffs.len().min(20)].join("\n")
    );
    truth
}

#[test]
fn bulk_capture_matches_its_truth() {
    let truth = check("bulk", &["--shape", "bulk", "--size", "8M", "--seed", "3"]);
    assert!(
        truth["sequence_wraps"].as_u64() > Some(0),
        "a sequence number wraps"
    );
    let exchanges = truth["exchanges"].as_array().unwrap();
    assert!((24..=48).contains(&exchanges.len()));
    let errors = exchanges.iter().filter(|x| x["error_code"] != 0).count();
    assert_eq!(errors, 2, "two NOT_CONTROLLER answers");
    for api in ["Produce", "Fetch", "ApiVersions", "AllocateProducerIds"] {
        assert!(
            truth["api_frames"][api]["requests"].as_u64() > Some(0),
            "{api}"
        );
    }
}

#[test]
fn control_capture_matches_its_truth() {
    let truth = check(
        "control",
        &["--shape", "control", "--packets", "20000", "--seed", "3"],
    );
    let packets = truth["packets"].as_u64().unwrap();
    assert!((19_990..=20_010).contains(&packets), "{packets} packets");
    assert!(truth["connections"].as_u64() > Some(300));
    assert!(
        truth["sequence_wraps"].as_u64() > Some(0),
        "sequence numbers wrap"
    );
    assert!(truth["exchanges"].as_array().unwrap().len() > 3000);
    assert!(truth["api_frames"]["Heartbeat"]["requests"].as_u64() > Some(3000));
}

/// `--span-scale` holds each control connection open longer or shorter: as many packets,
/// connections and exchanges, more or fewer of the connections open at once, and pidshark
/// still reads every exchange as the truth has it.
#[test]
fn connections_held_open_longer_keep_the_traffic_and_its_truth() {
    let args = ["--shape", "control", "--packets", "20000", "--seed", "3"];
    let truths: Vec<Value> = ["0.1", "1", "10"]
        .iter()
        .map(|scale| {
            let mut all = args.to_vec();
            all.extend(["--span-scale", scale]);
            check(&format!("spans-{scale}"), &all)
        })
        .collect();
    let counts = |t: &Value| {
        (
            t["packets"].as_u64(),
            t["connections"].as_u64(),
            t["exchanges"].as_array().map(Vec::len),
        )
    };
    assert_eq!(counts(&truths[0]), counts(&truths[1]));
    assert_eq!(counts(&truths[2]), counts(&truths[1]));
    let open: Vec<u64> = truths
        .iter()
        .map(|t| t["open_at_most"].as_u64().unwrap())
        .collect();
    // 20 k packets make 380 connections, nearly all open at once from 1 on
    assert!(
        open[0] * 3 < open[1] * 2 && open[1] <= open[2],
        "connections open at once at 0.1, 1 and 10: {open:?}"
    );
}

#[test]
fn bulk_refuses_span_scale() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = Command::new(env!("CARGO"))
        .args(["run", "--quiet", "--example", "gen_capture", "--"])
        .args(["--shape", "bulk", "--size", "1M", "--span-scale", "2", "-o"])
        .arg(dir.path().join("bulk.pcap"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--span-scale"), "{stderr}");
}

#[test]
fn same_seed_same_bytes() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let args = ["--shape", "control", "--packets", "3000"];
    let run = |name: &str, seed: &str| {
        let mut all = args.to_vec();
        all.extend(["--seed", seed]);
        let (pcap, truth) = generate(dir.path(), name, &all);
        (std::fs::read(pcap).unwrap(), std::fs::read(truth).unwrap())
    };
    let (a, b, c) = (run("a", "5"), run("b", "5"), run("c", "6"));
    assert!(a == b, "the same seed gives the same capture and truth");
    assert!(a.0 != c.0, "another seed gives another capture");
}

/// pidshark's output on `pcap` with `args` at `threads`.
fn output(pcap: &Path, args: &[&str], threads: &str) -> Vec<u8> {
    let out = assert_cmd::Command::cargo_bin("pidshark")
        .expect("binary built")
        .arg(pcap)
        .args(args)
        .args(["--threads", threads])
        .output()
        .expect("pidshark runs");
    assert!(
        out.status.success(),
        "pidshark --threads {threads} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn connections_spread_over_workers_report_what_one_thread_reports() {
    // hundreds of connections, thousands of exchanges: every epoch has work for every
    // worker, and connections open, close and reuse ports while the others run
    let dir = tempfile::tempdir().expect("temporary directory");
    let args = ["--shape", "control", "--packets", "40000", "--seed", "11"];
    let (pcap, truth) = generate(dir.path(), "control", &args);
    let truth = read_json(&truth);
    assert!(truth["connections"].as_u64() > Some(500));
    for format in [
        &["--compact"][..],
        &["--format", "ndjson"],
        &["--format", "csv"],
    ] {
        let one = output(&pcap, format, "1");
        for threads in ["2", "3", "8"] {
            assert!(
                one == output(&pcap, format, threads),
                "{format:?} at --threads {threads} differs from --threads 1"
            );
        }
    }
}
