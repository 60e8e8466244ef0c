//! Golden reports: each fixture's report must equal, byte for byte, the committed
//! `fixtures/<name>.report.json` (rewrite them with `scripts/bless-golden` after review).

use crate::common::{fixture, pidshark};

fn check_golden(name: &str) {
    let capture = format!("fixtures/{name}.pcap");
    let expected = std::fs::read_to_string(fixture(&format!("{name}.report.json")))
        .expect("golden report exists; run scripts/bless-golden");
    let out = pidshark()
        .arg(&capture)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let actual = String::from_utf8(out).expect("report is UTF-8");
    if actual != expected {
        let first_diff = actual
            .lines()
            .zip(expected.lines())
            .enumerate()
            .find(|(_, (a, e))| a != e)
            .map(|(idx, (a, e))| format!("line {}: got {a:?}, expected {e:?}", idx + 1))
            .unwrap_or_else(|| "lengths differ".into());
        panic!("{capture}: report differs from its golden file: {first_diff}");
    }
}

#[test]
fn golden_seed_v0() {
    check_golden("seed-v0");
}

#[test]
fn golden_controller_loopback() {
    check_golden("controller-loopback");
}

#[test]
fn golden_noise() {
    check_golden("noise");
}

#[test]
fn golden_truncated() {
    check_golden("truncated");
}

#[test]
fn same_input_gives_byte_identical_output() {
    let run = || {
        pidshark()
            .args([
                "fixtures/controller-loopback.pcap",
                "fixtures/seed-v0.pcap",
                "--compact",
            ])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone()
    };
    assert_eq!(run(), run());
}
