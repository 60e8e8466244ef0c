//! `--format html`: the page's structure on the analysis fixtures, checked against their
//! truth files (a bar per block planted, an outline per overlap and regression, a row per
//! finding), and that it is self-contained.

use serde_json::Value;

use crate::common::{pidshark, root};

fn page(pcap: &str) -> String {
    let out = pidshark()
        .args([pcap, "--format", "html"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

pub fn truth(name: &str) -> Value {
    let path = root().join(format!("fixtures/analysis/{name}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The analysis fixtures, each with a truth file of what it planted.
pub const FIXTURES: [&str; 6] = [
    "healthy",
    "overlap",
    "failover-regression",
    "gaps-irregular",
    "error-streak",
    "slow",
];

/// What the page must draw for a fixture, from its truth file.
#[derive(Debug, PartialEq, Eq)]
pub struct Expected {
    pub blocks: usize,
    pub overlaps: usize,
    pub regressions: usize,
    pub gaps: usize,
    /// Error responses and requests without an answer: marks on the time axis.
    pub failed: usize,
    pub findings: usize,
    /// Complete exchanges: a latency dot each.
    pub complete: usize,
}

pub fn expected(name: &str) -> Expected {
    let truth = truth(name);
    let findings = truth["expected_findings"].as_array().unwrap();
    let planted = |kind: &str| findings.iter().filter(|f| f["kind"] == kind).count();
    let exchanges = truth["exchanges"].as_array().unwrap();
    Expected {
        blocks: truth["blocks"].as_array().unwrap().len(),
        overlaps: planted("pid_block_overlap"),
        regressions: planted("pid_block_regression"),
        gaps: planted("pid_block_gap"),
        failed: exchanges
            .iter()
            .filter(|e| e["response"].is_null() || e["response"]["error_code"] != 0)
            .count(),
        findings: findings.len(),
        complete: exchanges
            .iter()
            .filter(|e| !e["response"].is_null())
            .count(),
    }
}

#[test]
fn the_page_draws_each_planted_block_and_fault_and_lists_each_finding() {
    for name in FIXTURES {
        let html = page(&format!("fixtures/analysis/{name}.pcap"));
        let count = |needle: &str| html.matches(needle).count();
        let drawn = Expected {
            blocks: count("<rect class=\"block\""),
            overlaps: count("<rect class=\"overlap\""),
            regressions: count("<rect class=\"regression\""),
            gaps: count("<rect class=\"gap\""),
            failed: count("<path class=\"failed\""),
            findings: count("<tr class=\"finding "),
            complete: count("<circle class=\"latency\""),
        };
        let expected = expected(name);
        assert_eq!(drawn, expected, "{name}");
        let binned: usize = html
            .split("<rect class=\"bin\"")
            .skip(1)
            .map(|b| {
                let title = b.split("<title>").nth(1).unwrap();
                title.split(' ').next().unwrap().parse::<usize>().unwrap()
            })
            .sum();
        assert_eq!(
            binned, expected.complete,
            "{name}: the bins count every latency"
        );
        assert_eq!(
            count("<line class=\"percentile\""),
            3,
            "{name}: p50, p90, p99"
        );
        // every mark says what it is
        assert_eq!(count("<title"), count("</title>"));
        // self-contained: no address but SVG's namespace, no script
        let svgs = count("<svg ");
        assert_eq!(
            count("xmlns=\"http://www.w3.org/2000/svg\""),
            svgs,
            "{name}"
        );
        assert_eq!(count("http"), svgs, "{name}: no URL but the SVG namespace");
        assert!(!html.contains("<script"), "{name}");
        assert!(!html.contains("<link"), "{name}");
    }
}

#[test]
fn the_verdict_and_filters_come_first() {
    let html = page("fixtures/analysis/overlap.pcap");
    let verdict = html.find("id=\"verdict\"").unwrap();
    let chart = html.find("id=\"timeline\"").unwrap();
    let brokers = html.find("id=\"brokers\"").unwrap();
    let findings = html.find("id=\"findings\"").unwrap();
    assert!(verdict < chart && chart < brokers && brokers < findings);
    assert!(html.contains("DUPLICATE PRODUCER IDS: ids 5500..=5999"));
    assert!(html.contains("<code>frame.number in {19 22}</code>"));
}
