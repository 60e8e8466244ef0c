//! Captures that reproduced review findings (`fixtures/regression/README.md`), each held
//! to its correct outcome.

use serde_json::Value;

use crate::common::report;

fn run(name: &str) -> Value {
    report(&[&format!("fixtures/regression/{name}.pcap")])
}

fn kinds(r: &Value) -> Vec<String> {
    r["summary"]["diagnostics"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// (correlation id, status, producer_id_start) of every exchange.
fn brief(r: &Value) -> Vec<(i64, String, Option<i64>)> {
    r["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["correlation_id"].as_i64().unwrap(),
                e["status"].as_str().unwrap().to_owned(),
                e["response"]["producer_id_start"].as_i64(),
            )
        })
        .collect()
}

#[test]
fn no_response_is_invented_from_bytes_inside_another() {
    for name in ["fake_resp", "fake_resp2"] {
        let r = run(name);
        assert_eq!(
            brief(&r),
            vec![(5, "complete".to_owned(), Some(1000))],
            "{name}"
        );
    }
}

#[test]
fn midstream_sides_are_not_swapped() {
    for name in ["mid_swap_low", "mid_swap_high"] {
        let r = run(name);
        let ex = r["exchanges"].as_array().unwrap();
        assert_eq!(ex.len(), 2, "{name}");
        assert!(
            ex.iter().all(|e| e["status"] == "complete"
                && e["client"].as_str().unwrap().starts_with("10.0.0.1:")),
            "{name}"
        );
        assert!(
            !kinds(&r).contains(&"duplicate_correlation_id".to_owned()),
            "{name}"
        );
    }
    // one request alone, ports on the same side: nothing is believed, nothing invented
    let r = run("mid_swap_both_high");
    assert!(!kinds(&r).contains(&"duplicate_correlation_id".to_owned()));
    assert!(r["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["client"] == "10.0.0.1:40000"));
}

#[test]
fn repeated_fake_heads_do_not_recurse() {
    for name in ["deep_65000", "deep2_4090"] {
        let r = run(name); // a debug build overflowed its stack here
        assert!(r["summary"]["packets"].as_u64().unwrap() > 0, "{name}");
    }
}

#[test]
fn bare_ack_overtaking_its_data_loses_nothing() {
    let a = run("ack_reorder_a");
    assert_eq!(brief(&a), vec![(7, "complete".to_owned(), Some(5000))]);
    assert!(!kinds(&a).contains(&"tcp_gap".to_owned()));
    let c = run("ack_reorder_c");
    assert_eq!(brief(&c).len(), 2);
    assert!(!kinds(&c).contains(&"tcp_gap".to_owned()));
}

#[test]
fn messages_keep_the_packet_that_carried_them() {
    let r = run("held_frame");
    assert_eq!(r["exchanges"][0]["request"]["frame"], 4);
    let r = run("resync_frame");
    assert_eq!(r["exchanges"][0]["request"]["frame"], 1);
}

#[test]
fn syn_ack_before_syn_is_one_connection() {
    assert_eq!(run("synack_first")["summary"]["tcp_connections"], 1);
}

#[test]
fn held_bytes_first_seen_win_and_conflicts_are_reported() {
    let r = run("held_conflict");
    assert_eq!(r["exchanges"][0]["request"]["broker_epoch"], 42);
    assert!(kinds(&r).contains(&"tcp_overlap_conflict".to_owned()));
}

#[test]
fn an_acknowledgment_far_ahead_is_not_believed() {
    let r = run("ack_jump");
    assert_eq!(brief(&r).len(), 5);
    assert!(
        !kinds(&r).contains(&"tcp_gap".to_owned()),
        "{:?}",
        kinds(&r)
    );
}

/// Issue 25, point 2: a mid-stream connection whose server's first captured bytes are an
/// answer. In small segments, a head inside the answer (its producer_id_start reads as
/// a frame answering the next request) ended where a segment did and was taken: the
/// first answer was passed over and the second invented from its bytes. With the sides
/// learnt from the bytes, the first answer came before the request that showed the
/// client, and its bytes were passed over while that side was tried as a client. Each
/// answer is read where Wireshark reads it.
#[test]
fn the_first_answer_mid_stream_is_read_whatever_its_segments() {
    let cases = [
        (
            "split_first_response",
            9093,
            vec![
                (7, "complete".to_owned(), Some(0x0000_0004_0000_0008)),
                (8, "complete".to_owned(), Some(9000)),
            ],
        ),
        (
            "unsure_sides_first_response",
            50000,
            vec![
                (42, "complete".to_owned(), Some(42_000)),
                (43, "complete".to_owned(), Some(43_000)),
                (44, "complete".to_owned(), Some(44_000)),
            ],
        ),
    ];
    for (name, port, expected) in cases {
        let r = run(name);
        assert_eq!(brief(&r), expected, "{name}");
        assert_eq!(r["summary"]["unmatched_responses"], 0, "{name}");
        assert!(!kinds(&r).contains(&"kafka_resync".to_owned()), "{name}");
        if crate::wireshark::have_tshark() {
            let path = format!("fixtures/regression/{name}.pcap");
            let theirs = crate::wireshark::tshark_frames_on(
                crate::common::root().join(&path).to_str().unwrap(),
                &[port],
            );
            assert_eq!(
                crate::wireshark::ours(&r),
                theirs,
                "{name}: Wireshark's frames"
            );
        }
    }
}
