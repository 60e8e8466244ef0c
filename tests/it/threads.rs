//! `--threads`: the connections' work spread over workers and put back in packet order
//! gives the report one thread gives, byte for byte, in every format: on every committed
//! capture, and on the variants' captures read as one.

use std::path::{Path, PathBuf};

use crate::common::{pidshark, root};

/// Thread counts compared with one: two workers, and more workers than connections in
/// most fixtures (some have none to do).
const THREADS: [&str; 2] = ["2", "8"];

/// Every capture under `fixtures/`, by path from the repository root.
fn captures() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("fixtures readable")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.to_string_lossy().into_owned();
            if path.is_dir() {
                walk(&path, found);
            } else if [".pcap", ".pcapng", ".pcap.gz"]
                .iter()
                .any(|e| name.ends_with(e))
            {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join("fixtures"), &mut found);
    found
}

/// pidshark's output and exit code on `args` at `threads`.
fn run(args: &[&str], threads: &str) -> (Vec<u8>, Option<i32>) {
    let out = pidshark()
        .args(args)
        .args(["--threads", threads])
        .output()
        .expect("pidshark runs");
    (out.stdout, out.status.code())
}

fn assert_same_at_every_count(args: &[&str]) {
    let one = run(args, "1");
    assert!(!one.0.is_empty(), "{args:?} wrote nothing");
    for threads in THREADS {
        let many = run(args, threads);
        assert!(
            one == many,
            "{args:?} at --threads {threads} differs from --threads 1 (exit {:?} and {:?})",
            one.1,
            many.1
        );
    }
}

#[test]
fn every_capture_reports_the_same_at_one_two_and_eight_threads() {
    let captures = captures();
    assert!(captures.len() > 50, "{} captures found", captures.len());
    for capture in captures {
        assert_same_at_every_count(&[&capture.to_string_lossy()]);
    }
}

#[test]
fn every_format_is_the_same_at_one_two_and_eight_threads() {
    let captures = [
        "fixtures/controller-loopback.pcap",
        "fixtures/noise.pcap",
        "fixtures/analysis/failover-regression.pcap",
        "fixtures/incident/incident-midstream.pcap.gz",
        "fixtures/producers/kafka-20031.pcap",
        "fixtures/kafka-real/4.4.0-midstream.pcap.gz",
    ];
    for capture in captures {
        assert!(root().join(capture).exists(), "{capture}");
        for format in ["ndjson", "text", "tree", "csv", "csv-blocks", "html"] {
            assert_same_at_every_count(&[capture, "--format", format]);
        }
    }
}

#[test]
fn captures_read_as_one_report_the_same_at_every_thread_count() {
    let dir = root().join("fixtures/variants");
    let mut truths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("variants readable")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".truth.json"))
        .collect();
    truths.sort();
    let mut merged = 0;
    for truth in truths {
        let truth: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&truth).expect("truth")).expect("JSON");
        let files: Vec<String> = truth["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| format!("fixtures/variants/{}", f.as_str().expect("file name")))
            .collect();
        if files.len() > 1 {
            merged += 1;
        }
        let args: Vec<&str> = files.iter().map(String::as_str).collect();
        assert_same_at_every_count(&args);
    }
    assert!(merged > 0, "no variant reads several captures as one");
}

#[test]
fn threads_one_per_core_report_the_same_and_a_count_is_a_number() {
    let capture = "fixtures/controller-loopback.pcap";
    assert!(
        run(&[capture], "1") == run(&[capture], "0"),
        "one per core differs"
    );
    pidshark()
        .args([capture, "--threads", "many"])
        .assert()
        .code(2);
}

/// A count past 256 is refused (it would start that many threads, each charged part of
/// the budget) rather than run out of memory starting them.
#[test]
fn threads_past_256_are_refused() {
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--threads", "20000"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("256"));
}
