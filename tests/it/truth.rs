//! Reports compared field by field with the ground truth that
//! `scripts/make-loopback-fixtures.py` recorded while it played controller and brokers.

use serde_json::Value;

use crate::common::{fixture, report};

fn truth(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("{name}.truth.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn error_name(code: i64) -> String {
    let tsv = include_str!("../../src/kafka/data/errors.tsv");
    tsv.lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(c, _)| c.parse::<i64>().ok() == Some(code))
        .map(|(_, n)| n.to_owned())
        .unwrap_or_else(|| format!("UNKNOWN({code})"))
}

/// Every exchange the script sent is in the report with the same values, and no other.
fn check_against_truth(name: &str) -> Value {
    let report = report(&[&format!("fixtures/{name}.pcap")]);
    if let Err(problem) = compare_with_truth(&report, &truth(name)) {
        panic!("{name}: {problem}");
    }
    report
}

/// The report against a ground truth: the same exchanges field by field, the same
/// frames per API and connections. The first difference, in words.
/// A message the truth says was not all captured (`bytes_not_captured`, its absent fields
/// left out) is reported so, with a `decode_error`; any other has neither.
fn partial_agrees(got: &Value, want: &Value, ctx: &str) -> Result<(), String> {
    if got.get("bytes_not_captured") != want.get("bytes_not_captured") {
        return Err(format!(
            "{ctx}: bytes_not_captured {:?} != {:?}",
            got.get("bytes_not_captured"),
            want.get("bytes_not_captured")
        ));
    }
    if got.get("decode_error").is_some() != want.get("bytes_not_captured").is_some() {
        return Err(format!("{ctx}: decode_error {:?}", got.get("decode_error")));
    }
    Ok(())
}

pub fn compare_with_truth(report: &Value, truth: &Value) -> Result<(), String> {
    let expected = truth["exchanges"]
        .as_array()
        .ok_or("truth has no exchanges")?;
    let actual = report["exchanges"]
        .as_array()
        .ok_or("report has no exchanges")?;
    let check = |ok: bool, what: String| if ok { Ok(()) } else { Err(what) };
    check(
        actual.len() == expected.len(),
        format!("{} exchanges, truth has {}", actual.len(), expected.len()),
    )?;
    for want in expected {
        let got = actual
            .iter()
            .find(|ex| {
                ex["client"] == want["client"]
                    && ex["server"] == want["server"]
                    && ex["correlation_id"] == want["correlation_id"]
            })
            .ok_or_else(|| format!("exchange {want} missing from the report"))?;
        let ctx = format!("correlation id {}", want["correlation_id"]);
        for field in [
            "api_version",
            "client_id",
            "header_tagged_fields",
            "broker_id",
            "broker_epoch",
            "tagged_fields",
        ] {
            check(
                got["request"][field] == want["request"][field],
                format!(
                    "{ctx}: request.{field} {} != {}",
                    got["request"][field], want["request"][field]
                ),
            )?;
        }
        check(got["request"]["api_key"] == 67, format!("{ctx}: api_key"))?;
        partial_agrees(
            &got["request"],
            &want["request"],
            &format!("{ctx}: request"),
        )?;
        if want["response"].is_null() {
            // Whether the capture proves there was no answer is the tool's to tell
            // (tests/it/variants.rs checks it where the truth knows).
            check(
                got["status"] == "unanswered" || got["status"] == "response_unknown",
                format!("{ctx}: should have no response"),
            )?;
            check(
                got["response"].is_null() && got["latency_us"].is_null(),
                format!("{ctx}: response"),
            )?;
            continue;
        }
        check(
            got["status"] == "complete",
            format!("{ctx}: should be complete"),
        )?;
        for field in [
            "header_tagged_fields",
            "throttle_time_ms",
            "error_code",
            "producer_id_start",
            "producer_id_len",
            "tagged_fields",
        ] {
            check(
                got["response"][field] == want["response"][field],
                format!(
                    "{ctx}: response.{field} {} != {}",
                    got["response"][field], want["response"][field]
                ),
            )?;
        }
        partial_agrees(
            &got["response"],
            &want["response"],
            &format!("{ctx}: response"),
        )?;
        let name = want["response"]["error_code"]
            .as_i64()
            .map(|code| Value::from(error_name(code)));
        check(
            got["response"]["error"] == name.unwrap_or(Value::Null),
            format!("{ctx}: error name"),
        )?;
        check(
            got["latency_us"].as_f64().is_some_and(|l| l >= 0.0),
            format!("{ctx}: latency"),
        )?;
        check(
            got["response"]["frame"].as_u64() > got["request"]["frame"].as_u64(),
            format!("{ctx}: response before request"),
        )?;
    }
    check(
        report["summary"]["api_keys"] == truth["other_api_frames"],
        format!(
            "frames per API {} != {}",
            report["summary"]["api_keys"], truth["other_api_frames"]
        ),
    )?;
    check(
        report["summary"]["tcp_connections"] == truth["connections"],
        format!(
            "{} TCP connections, truth has {}",
            report["summary"]["tcp_connections"], truth["connections"]
        ),
    )
}

#[test]
fn seed_v0_matches_truth_and_seed_values() {
    let report = check_against_truth("seed-v0");
    let ex = &report["exchanges"][0];
    assert_eq!(ex["status"], "complete");
    assert_eq!(ex["request"]["size"], 28);
    assert_eq!(ex["response"]["size"], 28);
    assert_eq!(ex["request"]["client_id"], "");
    assert_eq!(ex["request"]["broker_id"], 0);
    assert_eq!(ex["request"]["broker_epoch"], 0);
    assert_eq!(ex["response"]["producer_id_start"], 0);
    assert_eq!(ex["response"]["producer_id_len"], 0);
    assert_eq!(ex["response"]["error"], "NONE");
    // A NONE response granting no ids is flagged, and is no block.
    let kinds: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["pid_block_irregular"]);
    assert_eq!(
        report["producer_id_blocks"]["blocks"],
        serde_json::json!([])
    );
}

#[test]
fn controller_loopback_matches_truth() {
    let report = check_against_truth("controller-loopback");
    let summary = &report["summary"];
    assert_eq!(summary["kafka_connections"], 4);
    assert_eq!(summary["exchanges"]["unanswered"], 1);
    assert_eq!(summary["unmatched_responses"], 0);
    assert_eq!(summary["error_codes"]["NOT_CONTROLLER"], 1);
    assert_eq!(summary["error_codes"]["STALE_BROKER_EPOCH"], 1);
    assert_eq!(summary["latency_us"]["count"], 8);
    // The IPv6 connection and the non-default port are reported as such.
    assert!(report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .any(|ex| ex["server"] == "[::1]:19093"));
}

#[test]
fn pipelined_requests_answered_out_of_order_pair_by_correlation_id() {
    let report = report(&["fixtures/controller-loopback.pcap"]);
    let by_corr = |corr: i64| {
        report["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|ex| ex["correlation_id"] == corr)
            .unwrap()
            .clone()
    };
    // 12 was answered first, then 10 and 11 together.
    let (r10, r11, r12) = (by_corr(10), by_corr(11), by_corr(12));
    assert!(r12["response"]["frame"].as_u64() < r10["response"]["frame"].as_u64());
    assert_eq!(r10["response"]["frame"], r11["response"]["frame"]);
    assert_eq!(r10["request"]["frame"], r11["request"]["frame"]);
}

#[test]
fn noise_gives_no_exchange_and_no_kafka() {
    let report = check_against_truth("noise");
    assert_eq!(report["summary"]["kafka_connections"], 0);
    assert_eq!(report["summary"]["kafka_requests"], 0);
    assert_eq!(report["summary"]["tcp_connections"], 3);
}

#[test]
fn truncated_capture_keeps_what_came_before() {
    let report = check_against_truth("truncated");
    let diags = report["diagnostics"].as_array().unwrap();
    assert!(diags.iter().any(|d| d["kind"] == "capture_truncated"));
    let truth = truth("truncated");
    let partial = &truth["partial_frames"][0];
    assert!(
        diags.iter().any(|d| d["kind"] == "kafka_frame_incomplete"
            && d["message"]
                .as_str()
                .unwrap()
                .contains(&format!("after {} of its bytes", partial["bytes_present"]))),
        "{diags:?}"
    );
    let truncation = &truth["truncation"];
    assert_eq!(report["summary"]["packets"], truncation["complete_records"]);
}

/// The seed capture's TCP payloads are exactly the seed document's 28-byte request and
/// response (shared/seed/allocate-producer-ids-v0.txt), read back through our own
/// capture and decode stages.
#[test]
fn seed_capture_carries_the_seed_bytes() {
    use pidshark::capture::read_capture;
    use pidshark::decode::{decode, Decoded};
    use pidshark::diag::Diagnostics;

    #[rustfmt::skip]
    const REQUEST: [u8; 28] = [
        0x00, 0x00, 0x00, 0x18, // size 24
        0x00, 0x43,             // request_api_key 67
        0x00, 0x00,             // request_api_version 0
        0x00, 0x00, 0x00, 0x00, // correlation_id 0
        0x00, 0x00,             // client_id "" (int16 length 0)
        0x00,                   // header tagged fields: 0
        0x00, 0x00, 0x00, 0x00, // BrokerId 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // BrokerEpoch 0
        0x00,                   // tagged fields: 0
    ];
    #[rustfmt::skip]
    const RESPONSE: [u8; 28] = [
        0x00, 0x00, 0x00, 0x18, // size 24
        0x00, 0x00, 0x00, 0x00, // correlation_id 0
        0x00,                   // header tagged fields: 0
        0x00, 0x00, 0x00, 0x00, // ThrottleTimeMs 0
        0x00, 0x00,             // ErrorCode 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // ProducerIdStart 0
        0x00, 0x00, 0x00, 0x00, // ProducerIdLen 0
        0x00,                   // tagged fields: 0
    ];
    let file = std::fs::File::open(fixture("seed-v0.pcap")).unwrap();
    let mut payloads = Vec::new();
    let mut frame = 1;
    let mut diags = Diagnostics::default();
    read_capture(file, "seed-v0.pcap", &mut frame, &mut diags, |packet, _| {
        if let Decoded::Tcp(seg) = decode(packet) {
            if !seg.payload.is_empty() {
                payloads.push(seg.payload.to_vec());
            }
        }
    })
    .unwrap();
    assert_eq!(payloads, vec![REQUEST.to_vec(), RESPONSE.to_vec()]);
    assert!(diags.is_empty());
}
