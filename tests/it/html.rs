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

fn truth(name: &str) -> Value {
    let path = root().join(format!("fixtures/analysis/{name}.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_page_draws_each_planted_block_and_fault_and_lists_each_finding() {
    for name in [
        "healthy",
        "overlap",
        "failover-regression",
        "gaps-irregular",
        "error-streak",
        "slow",
    ] {
        let html = page(&format!("fixtures/analysis/{name}.pcap"));
        let truth = truth(name);
        let planted = |kind: &str| {
            truth["expected_findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["kind"] == kind)
                .count()
        };
        let count = |needle: &str| html.matches(needle).count();
        assert_eq!(
            count("<rect class=\"block\""),
            truth["blocks"].as_array().unwrap().len(),
            "{name}: blocks"
        );
        assert_eq!(
            count("<rect class=\"overlap\""),
            planted("pid_block_overlap"),
            "{name}: overlaps"
        );
        assert_eq!(
            count("<rect class=\"regression\""),
            planted("pid_block_regression"),
            "{name}: regressions"
        );
        assert_eq!(
            count("<rect class=\"gap\""),
            planted("pid_block_gap"),
            "{name}: gaps"
        );
        let findings = truth["expected_findings"].as_array().unwrap().len();
        assert_eq!(
            count("<tr class=\"finding "),
            findings,
            "{name}: finding rows"
        );
        let failed = truth["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["response"].is_null() || e["response"]["error_code"] != 0)
            .count();
        assert_eq!(
            count("<path class=\"failed\""),
            failed,
            "{name}: failed requests"
        );
        // a dot per complete exchange, and the bins count them all
        let complete = truth["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| !e["response"].is_null())
            .count();
        assert_eq!(
            count("<circle class=\"latency\""),
            complete,
            "{name}: latency dots"
        );
        let binned: usize = html
            .split("<rect class=\"bin\"")
            .skip(1)
            .map(|b| {
                let title = b.split("<title>").nth(1).unwrap();
                title.split(' ').next().unwrap().parse::<usize>().unwrap()
            })
            .sum();
        assert_eq!(binned, complete, "{name}: the bins count every latency");
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
