//! Synthetic captures for exact edge cases: segmentation, reordering, retransmission,
//! connection reuse, framing, versions, decode errors, detection.

use serde_json::Value;

use crate::common::*;

fn run_capture(build: impl FnOnce(&mut PcapWriter), extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("synthetic.pcap");
    let mut w = PcapWriter::create(&path);
    build(&mut w);
    w.finish();
    let path = path.to_str().unwrap().to_owned();
    let mut args = vec![path.as_str()];
    args.extend(extra);
    report(&args)
}

fn exchanges(report: &Value) -> &Vec<Value> {
    report["exchanges"].as_array().unwrap()
}

/// The correlation ids of the report's exchanges, in report order.
fn correlation_ids(report: &Value) -> Vec<i64> {
    exchanges(report)
        .iter()
        .map(|e| e["correlation_id"].as_i64().unwrap())
        .collect()
}

/// (correlation id, status) of the report's exchanges, in report order.
fn statuses(report: &Value) -> Vec<(i64, &str)> {
    exchanges(report)
        .iter()
        .map(|e| {
            (
                e["correlation_id"].as_i64().unwrap(),
                e["status"].as_str().unwrap(),
            )
        })
        .collect()
}

#[test]
fn frame_spanning_one_byte_segments_and_frames_sharing_a_segment() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
            c.handshake(w);
            let (req1, resp1) = apid_pair(1, 5, 0);
            let (req2, resp2) = apid_pair(2, 5, 1000);
            c.send(w, true, &req1, 1);
            c.send(w, false, &resp1, 1000);
            let mut both = req2;
            both.extend(request(
                12,
                3,
                3,
                false,
                &[0, 1, b'g', 0, 0, 0, 1, 0, 1, b'm', 0xff, 0xff],
            ));
            c.send(w, true, &both, 1000);
            let mut answers = resp2;
            answers.extend(response(3, false, &[0, 0, 0, 0, 0, 0]));
            c.send(w, false, &answers, 1000);
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 2);
    // 3 handshake-ish frames: SYN=1, SYN-ACK=2, first request byte in 3, last in 3+size-1.
    let size = ex[0]["request"]["size"].as_u64().unwrap();
    assert_eq!(ex[0]["request"]["first_frame"], 3);
    assert_eq!(ex[0]["request"]["frame"].as_u64().unwrap(), 3 + size - 1);
    assert_eq!(ex[1]["response"]["producer_id_start"], 1000);
    assert_eq!(report["summary"]["api_keys"]["Heartbeat"]["requests"], 1);
    assert_eq!(report["summary"]["api_keys"]["Heartbeat"]["responses"], 1);
    assert_eq!(report["summary"]["kafka_connections"], 1);
    assert!(kinds(&report).is_empty(), "{:?}", report["diagnostics"]);
}

#[test]
fn reordered_and_retransmitted_segments_give_the_clean_result() {
    let (req, resp) = apid_pair(9, 4, 4000);
    let clean = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40001", "10.0.0.2:29093");
            c.handshake(w);
            c.send(w, true, &req, 10);
            c.send(w, false, &resp, 10);
            c.close(w);
        },
        &[],
    );
    let messy = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40001", "10.0.0.2:29093");
            c.handshake(w);
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            let base = c.client_seq;
            let chunks: Vec<(u32, &[u8])> = req
                .chunks(10)
                .enumerate()
                .map(|(i, ch)| (base + (i * 10) as u32, ch))
                .collect();
            // last chunk first, then all in order with the second one sent twice
            let (seq, ch) = chunks[chunks.len() - 1];
            w.record(&c.packet(true, seq, ack, ch), 0);
            for (idx, (seq, ch)) in chunks.iter().enumerate() {
                w.record(&c.packet(true, *seq, ack, ch), 0);
                if idx == 1 {
                    w.record(&c.packet(true, *seq, ack, ch), 0);
                }
            }
            c.client_seq = base + req.len() as u32;
            c.send(w, false, &resp, 10);
            c.close(w);
        },
        &[],
    );
    let strip = |r: &Value| {
        let mut ex = r["exchanges"][0].clone();
        for side in ["request", "response"] {
            for f in ["frame", "first_frame", "timestamp", "unix_time"] {
                ex[side].as_object_mut().unwrap().remove(f);
            }
        }
        ex.as_object_mut().unwrap().remove("latency_us");
        ex
    };
    assert_eq!(exchanges(&messy).len(), 1);
    assert_eq!(strip(&messy), strip(&clean));
    assert_eq!(messy["exchanges"][0]["request"]["broker_id"], 4);
    assert!(kinds(&messy).is_empty(), "{:?}", messy["diagnostics"]);
}

/// Two connections on one address pair, the second opened with `second_isn`.
fn reused_pair(second_isn: u32, close_first: bool) -> Value {
    run_capture(
        |w| {
            for (idx, (corr, start)) in [(1, 0), (1, 1000)].into_iter().enumerate() {
                let mut c = Conn::new("10.0.0.1:40002", "10.0.0.2:29093");
                if idx == 1 {
                    c.client_seq = second_isn;
                }
                let (req, resp) = apid_pair(corr, 1, start);
                c.handshake(w);
                c.send(w, true, &req, 1000);
                c.send(w, false, &resp, 1000);
                if close_first || idx == 1 {
                    c.close(w);
                }
            }
        },
        &[],
    )
}

#[test]
fn new_syn_with_new_isn_is_a_new_connection() {
    for close_first in [true, false] {
        let report = reused_pair(3_000_000_000, close_first);
        assert_eq!(report["summary"]["tcp_connections"], 2);
        let ex = exchanges(&report);
        assert_eq!(ex.len(), 2, "close_first {close_first}");
        assert_eq!(ex[0]["connection"], 0);
        assert_eq!(ex[1]["connection"], 1);
        assert_eq!(ex[1]["response"]["producer_id_start"], 1000);
        assert!(kinds(&report).is_empty(), "{:?}", report["diagnostics"]);
    }
}

#[test]
fn syn_with_same_isn_after_close_is_a_retransmission() {
    // As in Wireshark: a capture on two interfaces repeats whole connections like this.
    let report = reused_pair(1000, true);
    assert_eq!(report["summary"]["tcp_connections"], 1);
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0]["response"]["producer_id_start"], 0);
}

#[test]
fn pair_reused_after_a_non_kafka_connection() {
    let report = run_capture(
        |w| {
            let mut http = Conn::new("10.0.0.1:40010", "10.0.0.2:29093");
            http.handshake(w);
            http.send(w, true, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1000);
            http.send(w, false, b"HTTP/1.1 200 OK\r\n\r\n", 1000);
            http.close(w);
            let mut c = Conn::new("10.0.0.1:40010", "10.0.0.2:29093");
            c.client_seq = 77_000;
            c.handshake(w);
            let (req, resp) = apid_pair(1, 1, 0);
            c.send(w, true, &req, 1000);
            c.send(w, false, &resp, 1000);
            c.close(w);
        },
        &[],
    );
    assert_eq!(report["summary"]["tcp_connections"], 2);
    assert_eq!(report["summary"]["kafka_connections"], 1);
    assert_eq!(exchanges(&report).len(), 1);
    assert_eq!(exchanges(&report)[0]["connection"], 1);
}

#[test]
fn connection_reset_leaves_request_unanswered() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40003", "10.0.0.2:29093");
            c.handshake(w);
            let (req, _) = apid_pair(4, 2, 0);
            c.send(w, true, &req, 1000);
            let rst = Flags {
                rst: true,
                ..Flags::default()
            };
            w.record(&c.packet(false, c.server_seq, rst, &[]), 0);
        },
        &[],
    );
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0]["status"], "unanswered");
    assert_eq!(report["summary"]["exchanges"]["unanswered"], 1);
}

#[test]
fn unsupported_version_is_flagged_not_guessed() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40004", "10.0.0.2:29093");
            c.handshake(w);
            c.send(
                w,
                true,
                &request(67, 1, 5, true, &apid_request_body(1, 1)),
                1000,
            );
            c.send(
                w,
                false,
                &response(5, true, &apid_response_body(0, 0, 10)),
                1000,
            );
            c.close(w);
        },
        &["--port", "29093"],
    );
    let ex = &exchanges(&report)[0];
    assert_eq!(ex["request"]["api_version"], 1);
    assert!(ex["request"].get("broker_id").is_none());
    assert!(ex["response"].get("producer_id_start").is_none());
    assert!(ex["request"]["decode_error"]
        .as_str()
        .unwrap()
        .contains("version 1"));
    assert!(kinds(&report).contains(&"kafka_unsupported_version".to_owned()));
}

#[test]
fn body_that_does_not_decode_keeps_what_was_read() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40005", "10.0.0.2:29093");
            c.handshake(w);
            // BrokerEpoch cut to 3 bytes
            let body = [0, 0, 0, 9, 0, 0, 0];
            c.send(w, true, &request(67, 0, 6, true, &body), 1000);
            c.close(w);
        },
        &[],
    );
    let ex = &exchanges(&report)[0];
    assert_eq!(ex["request"]["broker_id"], 9);
    assert!(ex["request"].get("broker_epoch").is_none());
    assert!(ex["request"]["decode_error"]
        .as_str()
        .unwrap()
        .contains("BrokerEpoch"));
    assert!(kinds(&report).contains(&"kafka_decode_error".to_owned()));
}

#[test]
fn duplicate_correlation_id_and_unmatched_response() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40006", "10.0.0.2:29093");
            c.handshake(w);
            let (req, resp) = apid_pair(8, 1, 0);
            c.send(w, true, &req, 1000);
            c.send(w, true, &req, 1000);
            c.send(w, false, &resp, 1000);
            c.send(w, false, &response(99, false, &[0, 0]), 1000);
            c.close(w);
        },
        &[],
    );
    assert!(kinds(&report).contains(&"duplicate_correlation_id".to_owned()));
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 2);
    // which of the two the answer was for cannot be told
    assert_eq!(ex[0]["status"], "response_unknown");
    assert_eq!(ex[1]["status"], "complete");
    assert_eq!(report["summary"]["unmatched_responses"], 1);
    assert_eq!(report["summary"]["kafka_responses"], 2);
}

#[test]
fn implausible_first_request_is_not_kafka_unless_port_forced() {
    // Produce v99 does not exist: not recognised as Kafka on an unknown port.
    let build = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40007", "10.0.0.2:29093");
        c.handshake(w);
        c.send(w, true, &request(0, 99, 1, true, &[0; 20]), 1000);
        let (req, resp) = apid_pair(2, 3, 0);
        c.send(w, true, &req, 1000);
        c.send(w, false, &response(1, true, &[0; 8]), 1000);
        c.send(w, false, &resp, 1000);
        c.close(w);
    };
    let detected = run_capture(build, &[]);
    assert_eq!(detected["summary"]["kafka_connections"], 0);
    assert_eq!(exchanges(&detected).len(), 0);
    let forced = run_capture(build, &["--port", "29093"]);
    assert_eq!(forced["summary"]["kafka_connections"], 1);
    assert_eq!(exchanges(&forced).len(), 1);
    assert_eq!(forced["summary"]["api_keys"]["Produce"]["requests"], 1);
}

#[test]
fn client_is_the_side_sending_requests_on_any_port() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("[2001:db8::1]:7777", "[2001:db8::2]:45000");
            c.handshake(w);
            let (req, resp) = apid_pair(1, 1, 0);
            c.send(w, true, &req, 1000);
            c.send(w, false, &resp, 1000);
            c.close(w);
        },
        &[],
    );
    let ex = &exchanges(&report)[0];
    assert_eq!(ex["client"], "[2001:db8::1]:7777");
    assert_eq!(ex["server"], "[2001:db8::2]:45000");
}

#[test]
fn snaplen_cut_request_is_reported_with_what_was_captured() {
    // The request's last 9 bytes (8 of BrokerEpoch, the tagged-field count) are cut; a
    // second exchange follows on the same connection.
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40008", "10.0.0.2:29093");
            c.handshake(w);
            let (req, resp) = apid_pair(1, 7, 0);
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            w.record(&c.packet(true, c.client_seq, ack, &req), 9);
            c.client_seq += req.len() as u32;
            c.send(w, false, &resp, 1000);
            let (req, resp) = apid_pair(2, 7, 1000);
            c.send(w, true, &req, 1000);
            c.send(w, false, &resp, 1000);
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 2, "{:?}", report["diagnostics"]);
    let cut = &ex[0]["request"];
    assert_eq!(ex[0]["status"], "complete");
    assert_eq!(cut["broker_id"], 7, "BrokerId's bytes were captured");
    assert!(cut.get("broker_epoch").is_none(), "BrokerEpoch's were not");
    assert!(cut.get("tagged_fields").is_none());
    assert_eq!(cut["bytes_not_captured"], 9);
    assert_eq!(
        cut["size"], 32,
        "the size prefix still says how long it was"
    );
    assert!(cut["decode_error"]
        .as_str()
        .unwrap()
        .contains("BrokerEpoch"));
    assert!(ex[1]["request"].get("bytes_not_captured").is_none());
    assert_eq!(ex[1]["request"]["broker_epoch"], 7);
    let k = kinds(&report);
    for kind in ["packet_truncated", "tcp_gap", "kafka_message_truncated"] {
        assert!(k.contains(&kind.to_owned()), "{k:?}");
    }
    for kind in ["kafka_decode_error", "kafka_framing_lost", "kafka_resync"] {
        assert!(!k.contains(&kind.to_owned()), "{k:?}");
    }
}

#[test]
fn unsupported_link_type_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weird.pcap");
    let mut w = PcapWriter::with_link_type(&path, 147);
    w.record(&[1, 2, 3, 4], 0);
    w.record(&[5, 6, 7, 8], 0);
    w.finish();
    let report = report(&[path.to_str().unwrap()]);
    assert_eq!(kinds(&report), vec!["unsupported_link_type".to_owned()]);
    assert_eq!(report["summary"]["packets"], 2);
    assert_eq!(
        report["captures"][0]["link_types"],
        serde_json::json!(["LINKTYPE_147"])
    );
}

#[test]
fn pure_ack_during_a_hole_does_not_block_the_data_behind_it() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40011", "10.0.0.2:29093");
            c.handshake(w);
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            let (r1, p1) = apid_pair(1, 1, 0);
            let (r2, p2) = apid_pair(2, 1, 1000);
            let base = c.client_seq;
            // r1 lost on the way, then a bare ACK and r2 beyond the hole, then r1 again
            w.record(&c.packet(true, base + r1.len() as u32, ack, &[]), 0);
            w.record(&c.packet(true, base + r1.len() as u32, ack, &r2), 0);
            w.record(&c.packet(true, base, ack, &r1), 0);
            c.client_seq = base + (r1.len() + r2.len()) as u32;
            c.send(w, false, &p1, 1000);
            c.send(w, false, &p2, 1000);
            c.close(w);
        },
        &[],
    );
    assert_eq!(exchanges(&report).len(), 2);
    assert!(kinds(&report).is_empty(), "{:?}", report["diagnostics"]);
}

#[test]
fn message_completed_by_a_late_segment_is_placed_at_that_segment() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40012", "10.0.0.2:29093");
            c.handshake(w); // frames 1, 2
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            let (req, resp) = apid_pair(1, 1, 0);
            let base = c.client_seq;
            w.record(&c.packet(true, base + 10, ack, &req[10..]), 0); // frame 3: the tail
            w.record(&c.packet(true, base, ack, &req[..10]), 0); // frame 4: the head
            c.client_seq = base + req.len() as u32;
            c.send(w, false, &resp, 1000);
            c.close(w);
        },
        &[],
    );
    let ex = &exchanges(&report)[0];
    assert_eq!(ex["request"]["first_frame"], 4);
    assert_eq!(ex["request"]["frame"], 4);
}

#[test]
fn keepalive_before_the_first_data_of_a_midstream_connection() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40013", "10.0.0.2:29093");
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            // no handshake: a keep-alive one below the next byte, then traffic
            w.record(&c.packet(true, c.client_seq - 1, ack, &[]), 0);
            let (req, resp) = apid_pair(1, 1, 0);
            c.send(w, true, &req, 1000);
            c.send(w, false, &resp, 1000);
            c.close(w);
        },
        &[],
    );
    assert_eq!(exchanges(&report).len(), 1);
    assert_eq!(kinds(&report), vec!["midstream_start".to_owned()]);
}

#[test]
fn oversized_allocate_producer_ids_request_is_an_exchange_with_a_decode_error() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40014", "10.0.0.2:29093");
            c.handshake(w);
            let mut body = apid_request_body(1, 1);
            body.resize(2 << 20, 0);
            c.send(w, true, &request(67, 0, 3, true, &body), 60_000);
            c.send(
                w,
                false,
                &response(3, true, &apid_response_body(0, 0, 10)),
                1000,
            );
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0]["status"], "complete");
    assert!(ex[0]["request"]["decode_error"]
        .as_str()
        .unwrap()
        .contains("above the"));
    assert!(ex[0]["request"].get("broker_id").is_none());
    assert_eq!(ex[0]["response"]["producer_id_len"], 10);
    assert!(kinds(&report).contains(&"kafka_decode_error".to_owned()));
}

/// A Produce v9 body with no topics: null transactional id, acks 1, timeout 0, null
/// topic array, no tagged fields.
const PRODUCE_ACKS_1: [u8; 9] = [0, 0, 1, 0, 0, 0, 0, 0, 0];
/// The same with acks 0: the broker answers nothing.
const PRODUCE_ACKS_0: [u8; 9] = [0, 0, 0, 0, 0, 0, 0, 0, 0];

#[test]
fn requests_never_answered_are_bounded_per_connection() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40015", "10.0.0.2:29093");
            c.handshake(w);
            let (req, _) = apid_pair(0, 1, 0);
            c.send(w, true, &req, 1000);
            // Produce requests (acks 1) the server never answers
            let mut batch = Vec::new();
            for corr in 1..=5000 {
                batch.extend(request(0, 9, corr, true, &PRODUCE_ACKS_1));
            }
            c.send(w, true, &batch, 60_000);
            c.close(w);
        },
        &[],
    );
    assert_eq!(report["summary"]["api_keys"]["Produce"]["requests"], 5000);
    assert!(kinds(&report).contains(&"pending_limit".to_owned()));
    // the AllocateProducerIds request given up is still reported; its answer may have
    // come after it was given up
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0]["status"], "response_unknown");
    // and the kind's documented meaning (--list-kinds prints it) says so
    let kinds = pidshark().arg("--list-kinds").assert().success();
    let kinds = String::from_utf8(kinds.get_output().stdout.clone()).unwrap();
    let row = kinds
        .lines()
        .find(|l| l.starts_with("pending_limit "))
        .unwrap();
    assert!(row.contains("response_unknown"), "{row}");
    assert!(!row.contains("unanswered"), "{row}");
}

#[test]
fn max_buffer_bounds_what_is_held_for_a_hole() {
    let build = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40016", "10.0.0.2:29093");
        c.handshake(w);
        let ack = Flags {
            ack: true,
            ..Flags::default()
        };
        let (first, first_resp) = apid_pair(0, 1, 0);
        let base = c.client_seq;
        // the first request is late: 100 requests (2.8 KB) arrive before it
        let mut later = Vec::new();
        let mut answers = first_resp;
        for corr in 1..=100 {
            let (req, resp) = apid_pair(corr, 1, i64::from(corr) * 1000);
            later.extend(req);
            answers.extend(resp);
        }
        let mut seq = base + first.len() as u32;
        for chunk in later.chunks(280) {
            w.record(&c.packet(true, seq, ack, chunk), 0);
            seq += chunk.len() as u32;
        }
        w.record(&c.packet(true, base, ack, &first), 0);
        c.client_seq = seq;
        c.send(w, false, &answers, 1400);
        c.close(w);
    };
    let roomy = run_capture(build, &[]);
    assert_eq!(exchanges(&roomy).len(), 101);
    assert!(kinds(&roomy).is_empty(), "{:?}", roomy["diagnostics"]);
    let tight = run_capture(build, &["--max-buffer", "1K"]);
    assert!(kinds(&tight).contains(&"tcp_gap".to_owned()));
    // the late request's bytes were given up for lost: it is not invented
    assert!(exchanges(&tight).iter().all(|ex| ex["correlation_id"] != 0));
}

#[test]
fn request_lost_between_frames_costs_only_its_own_exchange() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40017", "10.0.0.2:29093");
            c.handshake(w);
            let (r1, p1) = apid_pair(1, 1, 0);
            c.send(w, true, &r1, 1000);
            c.send(w, false, &p1, 1000);
            // a Metadata request the capture missed, and its response
            let lost = request(3, 9, 2, true, &[0, 0, 0, 0, 0]);
            c.client_seq += lost.len() as u32;
            c.send(w, false, &response(2, true, &[0; 20]), 1000);
            for corr in 3..=5 {
                let (req, resp) = apid_pair(corr, 1, i64::from(corr) * 1000);
                c.send(w, true, &req, 1000);
                c.send(w, false, &resp, 1000);
            }
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    let complete: Vec<i64> = ex
        .iter()
        .filter(|e| e["status"] == "complete")
        .map(|e| e["correlation_id"].as_i64().unwrap())
        .collect();
    assert_eq!(complete, vec![1, 3, 4, 5], "{:?}", report["diagnostics"]);
    assert_eq!(ex.len(), 4);
    assert_eq!(report["summary"]["unmatched_responses"], 1);
    assert!(kinds(&report).contains(&"tcp_gap".to_owned()));
}

#[test]
fn midstream_connection_whose_first_bytes_are_a_response() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40018", "10.0.0.2:9093");
            // capture starts as the server answers correlation id 3
            c.send(
                w,
                false,
                &response(3, true, &apid_response_body(0, 0, 10)),
                1000,
            );
            for corr in 4..=5 {
                let (req, resp) = apid_pair(corr, 1, i64::from(corr) * 1000);
                c.send(w, true, &req, 1000);
                c.send(w, false, &resp, 1000);
            }
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 2, "{:?}", report["diagnostics"]);
    assert!(ex.iter().all(|e| e["status"] == "complete"));
    assert_eq!(ex[0]["client"], "10.0.0.1:40018");
    assert!(kinds(&report).contains(&"midstream_start".to_owned()));
}

#[test]
fn garbage_size_prefix_is_followed_by_a_resync() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40019", "10.0.0.2:29093");
            c.handshake(w);
            let (r1, p1) = apid_pair(1, 1, 0);
            c.send(w, true, &r1, 1000);
            c.send(w, false, &p1, 1000);
            // a broken frame: size -5, then junk, then proper requests
            let mut junk = (-5i32).to_be_bytes().to_vec();
            junk.extend([0xee; 13]);
            c.send(w, true, &junk, 1000);
            let (r2, p2) = apid_pair(2, 1, 1000);
            c.send(w, true, &r2, 1000);
            c.send(w, false, &p2, 1000);
            c.close(w);
        },
        &["--port", "29093"],
    );
    assert_eq!(exchanges(&report).len(), 2);
    let k = kinds(&report);
    assert!(k.contains(&"kafka_framing_lost".to_owned()), "{k:?}");
    assert!(k.contains(&"kafka_resync".to_owned()), "{k:?}");
    let resync = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "kafka_resync")
        .unwrap();
    assert!(
        resync["message"]
            .as_str()
            .unwrap()
            .contains("passing over 17 bytes"),
        "{resync}"
    );
}

#[test]
fn capture_starting_inside_a_request_resyncs_on_the_next_one() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40020", "10.0.0.2:9093");
            // the capture starts 10 bytes into a request: its zero-filled tail looks
            // like the head of a 156 KB Produce v0 and of a 256-byte one
            let (r9, _) = apid_pair(9, 1, 0);
            c.send(w, true, &r9[10..], 1000);
            for corr in 10..=12 {
                let (req, resp) = apid_pair(corr, 1, i64::from(corr) * 1000);
                c.send(w, true, &req, 1000);
                c.send(w, false, &resp, 1000);
            }
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    let corrs = correlation_ids(&report);
    assert_eq!(corrs, vec![10, 11, 12], "{:?}", report["diagnostics"]);
    assert!(ex.iter().all(|e| e["status"] == "complete"));
    assert!(kinds(&report).contains(&"kafka_resync".to_owned()));
}

#[test]
fn connection_crossing_rotated_files_is_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a.pcap"), dir.path().join("b.pcap"));
    let mut c = Conn::new("10.0.0.1:40021", "10.0.0.2:29093");
    let mut w = PcapWriter::create(&first);
    c.handshake(&mut w);
    let (req, resp) = apid_pair(1, 1, 0);
    c.send(&mut w, true, &req[..10], 1000);
    w.finish();
    let mut w = PcapWriter::create(&second);
    w.set_time(1_700_000_001_000_000_000); // rotated a second later
    c.send(&mut w, true, &req[10..], 1000);
    c.send(&mut w, false, &resp, 1000);
    c.close(&mut w);
    w.finish();
    let report = report(&[first.to_str().unwrap(), second.to_str().unwrap()]);
    assert_eq!(report["summary"]["tcp_connections"], 1);
    let ex = exchanges(&report);
    assert_eq!(ex.len(), 1);
    assert_eq!(ex[0]["request"]["first_frame"], 3);
    assert_eq!(ex[0]["request"]["frame"], 4);
    assert_eq!(ex[0]["status"], "complete");
    assert_eq!(report["captures"][0]["packets"], 3);
    assert_eq!(report["captures"][1]["packets"], 4);
}

#[test]
fn every_pcap_byte_order_and_precision_gives_the_same_exchanges() {
    let dir = tempfile::tempdir().unwrap();
    let mut reports = Vec::new();
    for (big_endian, nano) in [(false, false), (true, false), (false, true), (true, true)] {
        let path = dir.path().join(format!("be{big_endian}-ns{nano}.pcap"));
        let mut w = PcapWriter::with_format(&path, 1, big_endian, nano);
        let mut c = Conn::new("10.0.0.1:40022", "10.0.0.2:29093");
        c.handshake(&mut w);
        let (req, resp) = apid_pair(1, 1, 0);
        c.send(&mut w, true, &req, 1000);
        c.send(&mut w, false, &resp, 1000);
        c.close(&mut w);
        w.finish();
        let report = report(&[path.to_str().unwrap()]);
        let ts = report["exchanges"][0]["request"]["timestamp"]
            .as_str()
            .unwrap()
            .to_owned();
        let digits = ts.trim_end_matches('Z').rsplit('.').next().unwrap().len();
        assert_eq!(digits, if nano { 9 } else { 6 }, "{ts}");
        let latency = report["exchanges"][0]["latency_us"].as_f64().unwrap();
        if nano {
            assert_eq!(latency, 100.123);
        } else {
            assert!(latency == 100.0 || latency == 101.0, "{latency}");
        }
        reports.push(report);
    }
    for r in &reports[1..] {
        assert_eq!(
            r["summary"]["exchanges"],
            reports[0]["summary"]["exchanges"]
        );
        assert_eq!(r["exchanges"][0]["request"]["broker_id"], 1);
    }
}

#[test]
fn zero_window_probe_byte_is_sent_again_with_the_rest() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40023", "10.0.0.2:29093");
            c.handshake(w);
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            let (req, resp) = apid_pair(1, 1, 0);
            // the receiver's window is closed: a one-byte probe, probed again, then
            // the whole request from the same sequence number once it opens
            w.record(&c.packet(true, c.client_seq, ack, &req[..1]), 0);
            w.record(&c.packet(true, c.client_seq, ack, &req[..1]), 0);
            w.record(&c.packet(true, c.client_seq, ack, &req), 0);
            c.client_seq += req.len() as u32;
            c.send(w, false, &resp, 1000);
            c.close(w);
        },
        &[],
    );
    assert_eq!(exchanges(&report).len(), 1);
    assert!(kinds(&report).is_empty(), "{:?}", report["diagnostics"]);
}

#[test]
fn max_pending_option_sets_the_per_connection_limit() {
    let build = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40024", "10.0.0.2:29093");
        c.handshake(w);
        let mut batch = Vec::new();
        for corr in 1..=100 {
            batch.extend(request(0, 9, corr, true, &PRODUCE_ACKS_1));
        }
        c.send(w, true, &batch, 60_000);
        c.close(w);
    };
    assert!(!kinds(&run_capture(build, &[])).contains(&"pending_limit".to_owned()));
    let tight = run_capture(build, &["--max-pending", "10"]);
    assert!(kinds(&tight).contains(&"pending_limit".to_owned()));
    // Requests sent with acks 0 wait for nothing: no limit is reached.
    let fire_and_forget = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40025", "10.0.0.2:29093");
        c.handshake(w);
        let batch: Vec<u8> = (1..=100)
            .flat_map(|corr| request(0, 9, corr, true, &PRODUCE_ACKS_0))
            .collect();
        c.send(w, true, &batch, 60_000);
        c.close(w);
    };
    let report = run_capture(fire_and_forget, &["--max-pending", "10"]);
    assert!(kinds(&report).is_empty(), "{:?}", report["diagnostics"]);
    assert_eq!(report["summary"]["api_keys"]["Produce"]["requests"], 100);
    assert!(tight["diagnostics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("more than 10 requests"));
}

/// The last `tail` bytes of a Produce v9 request of `len` bytes (its head is before the
/// capture), as a capture that starts inside it sees them.
fn tail_of_big_request(len: usize, tail: usize) -> Vec<u8> {
    let body: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
    let whole = request(0, 9, 41, true, &body);
    whole[whole.len() - tail..].to_vec()
}

#[test]
fn capture_starting_inside_a_big_request_keeps_the_exchanges_after_it() {
    // The first captured byte lies 300 KB before the end of a Produce request: more than
    // any window of bytes held while searching, and less than the largest frame.
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40019", "10.0.0.2:9093");
            c.send(w, true, &tail_of_big_request(400_000, 300_000), 1448);
            for corr in 42..=44 {
                let (req, resp) = apid_pair(corr, 2, i64::from(corr) * 1000);
                c.send(w, true, &req, 1448);
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    let corrs = correlation_ids(&report);
    assert_eq!(corrs, vec![42, 43, 44], "{:?}", report["diagnostics"]);
    assert!(ex.iter().all(|e| e["status"] == "complete"));
    assert_eq!(report["summary"]["kafka_connections"], 1);
    assert_eq!(report["summary"]["not_kafka_connections"], 0);
}

#[test]
fn capture_starting_inside_a_big_response_keeps_the_exchanges_after_it() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40020", "10.0.0.2:9093");
            // the last 168 KB of a Fetch response, then requests and their answers
            let body: Vec<u8> = (0..200_000usize)
                .map(|i| (i * 13 + i / 509) as u8)
                .collect();
            let fetch = response(40, true, &body);
            c.send(w, false, &fetch[fetch.len() - 168_000..], 1448);
            for corr in 41..=43 {
                let (req, resp) = apid_pair(corr, 2, i64::from(corr) * 1000);
                c.send(w, true, &req, 1448);
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let ex = exchanges(&report);
    let corrs = correlation_ids(&report);
    assert_eq!(corrs, vec![41, 42, 43], "{:?}", report["diagnostics"]);
    assert!(ex.iter().all(|e| e["status"] == "complete"), "{ex:?}");
}

#[test]
fn unanswered_only_where_the_capture_proves_it() {
    // Broker 3's first request: its answer is lost in a hole of the server's stream, whose
    // later bytes were captured, so nobody can tell whether it was answered. Its second,
    // on another connection: the server only acknowledges it and the connection closes, so
    // it provably was not.
    let report = run_capture(
        |w| {
            let ack = Flags {
                ack: true,
                ..Flags::default()
            };
            let mut a = Conn::new("10.0.0.1:40021", "10.0.0.2:29093");
            a.handshake(w);
            let (req1, resp1) = apid_pair(1, 3, 0);
            a.send(w, true, &req1, 1448);
            a.server_seq += resp1.len() as u32; // sent, not captured
            let (req9, resp9) = apid_pair(9, 4, 9000);
            a.send(w, true, &req9, 1448);
            a.send(w, false, &resp9, 1448);
            a.close(w);
            let mut b = Conn::new("10.0.0.1:40022", "10.0.0.2:29093");
            b.handshake(w);
            let (req2, _) = apid_pair(2, 3, 1000);
            b.send(w, true, &req2, 1448);
            w.record(&b.packet(false, b.server_seq, ack, &[]), 0);
            let (req3, resp3) = apid_pair(3, 3, 2000);
            b.send(w, true, &req3, 1448);
            b.send(w, false, &resp3, 1448);
            b.close(w);
        },
        &[],
    );
    let status = statuses(&report);
    assert_eq!(
        status,
        vec![
            (1, "response_unknown"),
            (9, "complete"),
            (2, "unanswered"),
            (3, "complete")
        ],
        "{:?}",
        report["diagnostics"]
    );
    let counts = &report["summary"]["exchanges"];
    assert_eq!(
        (
            counts["unanswered"].as_u64(),
            counts["response_unknown"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(report["summary"]["brokers"]["3"]["response_unknown"], 1);
    assert_eq!(report["summary"]["brokers"]["3"]["unanswered"], 1);
}

#[test]
fn a_request_on_a_connection_no_longer_followed_is_not_called_unanswered() {
    // With room for one connection, a second one pushes out the first while its request
    // waits: whatever the server sent it later is not read, so its outcome is unknown.
    let report = run_capture(
        |w| {
            let mut a = Conn::new("10.0.0.1:40023", "10.0.0.2:29093");
            a.handshake(w);
            let (req, _) = apid_pair(1, 5, 0);
            a.send(w, true, &req, 1448);
            let mut b = Conn::new("10.0.0.1:40024", "10.0.0.2:29093");
            b.handshake(w);
            let (req, resp) = apid_pair(2, 6, 1000);
            b.send(w, true, &req, 1448);
            b.send(w, false, &resp, 1448);
            b.close(w);
        },
        &["--max-connections", "1"],
    );
    let status: Vec<&str> = exchanges(&report)
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        status,
        vec!["response_unknown", "complete"],
        "{:?}",
        report["diagnostics"]
    );
    assert!(kinds(&report).contains(&"connection_limit".to_owned()));
}

#[test]
fn a_false_big_head_inside_a_frame_does_not_swallow_the_frames_after_it() {
    // A capture that starts inside a Produce whose record bytes hold, by chance, eight
    // bytes that read as a plausible request head of 200,000 bytes (size, Produce v0,
    // correlation id 5, empty client id): too large to be confirmed by what the search
    // holds. 100 KB later come real requests; taking the false head unconfirmed would
    // step over them.
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40025", "10.0.0.2:9093");
            let mut data = vec![0u8; 10];
            data.extend(200_000u32.to_be_bytes());
            data.extend([0, 0, 0, 0, 0, 0, 0, 5, 0, 0]);
            data.extend(vec![0u8; 100_000]);
            c.send(w, true, &data, 1448);
            for corr in 42..=44 {
                let (req, resp) = apid_pair(corr, 2, i64::from(corr) * 1000);
                c.send(w, true, &req, 1448);
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let corrs = correlation_ids(&report);
    assert_eq!(corrs, vec![42, 43, 44], "{:?}", report["diagnostics"]);
}

#[test]
fn big_frames_at_the_first_captured_byte_are_framed_and_counted() {
    // The capture starts exactly where a 300 KB Produce request begins, and the server's
    // stream where the 168 KB answer to a request sent before the capture begins: both
    // longer than any window of bytes held while searching. Each is held by its head and
    // confirmed where it says it ends.
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40026", "10.0.0.2:9093");
            let fetch_body: Vec<u8> = (0..168_000usize)
                .map(|i| (i * 13 + i / 509) as u8)
                .collect();
            c.send(w, false, &response(40, true, &fetch_body), 1448);
            let produce_body: Vec<u8> =
                (0..300_000usize).map(|i| (i * 7 + i / 251) as u8).collect();
            c.send(w, true, &request(0, 9, 41, true, &produce_body), 1448);
            c.send(w, false, &response(41, true, &[0; 40]), 1448);
            for corr in 42..=44 {
                let (req, resp) = apid_pair(corr, 2, i64::from(corr) * 1000);
                c.send(w, true, &req, 1448);
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let corrs = correlation_ids(&report);
    assert_eq!(corrs, vec![42, 43, 44], "{:?}", report["diagnostics"]);
    let produce = &report["summary"]["api_keys"]["Produce"];
    assert_eq!(
        (produce["requests"].as_u64(), produce["responses"].as_u64()),
        (Some(1), Some(1)),
        "{:?}",
        report["diagnostics"]
    );
    // the 168 KB answer to a request before the capture
    assert_eq!(
        report["summary"]["unmatched_responses"], 1,
        "{:?}",
        report["diagnostics"]
    );
    assert!(
        !kinds(&report).contains(&"kafka_resync".to_owned()),
        "{:?}",
        report["diagnostics"]
    );
}

#[test]
fn once_framing_is_confirmed_a_frame_is_a_frame() {
    // An unknown API key (a newer release's or a vendor's), correlation ids wrapping past
    // i32::MAX to negative ones as the Java client's do, and a 168 KB response: none of
    // them breaks the framing of a connection already known to be Kafka.
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40027", "10.0.0.2:9093");
            c.handshake(w);
            let (req, resp) = apid_pair(i32::MAX - 2, 1, 1000);
            c.send(w, true, &req, 1448);
            c.send(w, false, &resp, 1448);
            c.send(
                w,
                true,
                &request(1000, 0, i32::MAX - 1, false, &[1, 2, 3]),
                1448,
            );
            c.send(w, false, &response(i32::MAX - 1, false, &[0; 12]), 1448);
            c.send(w, true, &request(1, 17, i32::MAX, true, &[0; 60]), 1448);
            let fetch_body: Vec<u8> = (0..168_000usize)
                .map(|i| (i * 13 + i / 509) as u8)
                .collect();
            c.send(w, false, &response(i32::MAX, true, &fetch_body), 1448);
            for corr in [i32::MIN, i32::MIN + 1] {
                let (req, resp) = apid_pair(corr, 1, i64::from(corr) + 5000);
                c.send(w, true, &req, 1448);
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let corrs: Vec<i64> = exchanges(&report)
        .iter()
        .filter(|e| e["status"] == "complete")
        .map(|e| e["correlation_id"].as_i64().unwrap())
        .collect();
    assert_eq!(
        corrs,
        vec![
            i64::from(i32::MAX - 2),
            i64::from(i32::MIN),
            i64::from(i32::MIN + 1)
        ],
        "{:?}",
        report["diagnostics"]
    );
    let s = &report["summary"];
    assert_eq!(
        (s["kafka_requests"].as_u64(), s["kafka_responses"].as_u64()),
        (Some(5), Some(5)),
        "{s}"
    );
    assert_eq!(s["unmatched_responses"], 0, "{s}");
    assert_eq!(s["api_keys"]["Fetch"]["responses"], 1, "{s}");
    // the Fetch request's 60 zero bytes are no Fetch Kafka would read: said, as info
    let diags = report["diagnostics"].as_array().unwrap();
    let kafka: Vec<&Value> = diags
        .iter()
        .filter(|d| d["kind"].as_str().unwrap().starts_with("kafka_"))
        .collect();
    assert!(
        kafka
            .iter()
            .all(|d| d["kind"] == "kafka_decode_error" && d["severity"] == "info"),
        "{kafka:?}"
    );
}

#[test]
fn a_spoofed_rst_outside_the_window_changes_no_exchange() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40028", "10.0.0.2:9093");
            c.handshake(w);
            for corr in 1..=4 {
                let (req, resp) = apid_pair(corr, 1, i64::from(corr) * 1000);
                c.send(w, true, &req, 1448);
                if corr == 3 {
                    // an RST "from the server" a megabyte ahead of its stream: outside the
                    // client's 64 KiB receive window (RFC 5961), so not this connection's
                    let rst = Flags {
                        rst: true,
                        ..Flags::default()
                    };
                    let seq = c.server_seq.wrapping_add(1 << 20);
                    w.record(&c.packet(false, seq, rst, &[]), 0);
                }
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let statuses = statuses(&report);
    assert_eq!(
        statuses,
        vec![
            (1, "complete"),
            (2, "complete"),
            (3, "complete"),
            (4, "complete")
        ],
        "{:?}",
        report["diagnostics"]
    );
    assert_eq!(report["summary"]["tcp_connections"], 1);
    assert_eq!(kinds(&report), vec!["tcp_rst_out_of_window".to_owned()]);
}

#[test]
fn an_rst_inside_the_window_ends_the_connection() {
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40029", "10.0.0.2:9093");
            c.handshake(w);
            let (req, _) = apid_pair(1, 1, 0);
            c.send(w, true, &req, 1448);
            let rst = Flags {
                rst: true,
                ..Flags::default()
            };
            w.record(&c.packet(false, c.server_seq, rst, &[]), 0);
        },
        &[],
    );
    assert_eq!(exchanges(&report)[0]["status"], "unanswered");
    assert!(kinds(&report).is_empty(), "{:?}", report["diagnostics"]);
}

#[test]
fn requests_queued_before_the_first_api_versions_have_lower_correlation_ids() {
    // Kafka's NetworkClient numbers a request when it is queued, but on a new connection
    // sends ApiVersions first, numbered when it is sent: a KRaft voter's connection reads
    // ApiVersions 10, Fetch 9, then 12, 13, ... (seen with Kafka 3.9 and 4.4).
    let report = run_capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:40031", "10.0.0.2:19091");
            c.handshake(w);
            c.send(w, true, &request(18, 4, 10, true, &[0, 0]), 1448);
            c.send(w, false, &response(10, false, &[0; 20]), 1448);
            c.send(w, true, &request(1, 17, 9, true, &[0; 40]), 1448);
            c.send(w, false, &response(9, true, &[0; 30]), 1448);
            for corr in 12..=13 {
                let (req, resp) = apid_pair(corr, 1, i64::from(corr) * 1000);
                c.send(w, true, &req, 1448);
                c.send(w, false, &resp, 1448);
            }
            c.close(w);
        },
        &[],
    );
    let corrs = correlation_ids(&report);
    assert_eq!(corrs, vec![12, 13], "{:?}", report["diagnostics"]);
    assert_eq!(report["summary"]["kafka_connections"], 1);
    assert_eq!(report["summary"]["not_kafka_connections"], 0);
}

/// Short Kafka sessions that end while on trial (issue 25, point 4). One that opens with
/// an answered ApiVersions request (as every Java client does) is proven by it: no
/// lookalike's first message reads as one. One whose only exchange is a Metadata request
/// proves nothing a short ZooKeeper session does not, and is given up out loud with the
/// `--port` that reads it.
#[test]
fn short_kafka_sessions_are_read_when_their_bytes_prove_it() {
    // ApiVersions v3: client_software_name and _version (compact strings), no tags
    let mut api_versions = vec![18];
    api_versions.extend(b"apache-kafka-java");
    api_versions.push(6);
    api_versions.extend(b"3.9.1");
    api_versions.push(0);
    // error 0, 2 keys (Produce 0..11, ApiVersions 0..4), throttle 0, no tags (header v0)
    let mut versions = vec![0, 0, 3];
    for (key, max) in [(0i16, 11i16), (18, 4)] {
        versions.extend(key.to_be_bytes());
        versions.extend(0i16.to_be_bytes());
        versions.extend(max.to_be_bytes());
        versions.push(0);
    }
    versions.extend([0, 0, 0, 0, 0]);
    let apiv = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40300", "10.0.0.2:29092");
        c.handshake(w);
        c.send(w, true, &request(18, 3, 1, true, &api_versions), 1448);
        c.send(w, false, &response(1, false, &versions), 1448);
        c.close(w);
    };
    let report = run_capture(apiv, &[]);
    assert_eq!(report["summary"]["kafka_connections"], 1, "{report}");
    assert_eq!(report["summary"]["not_kafka_connections"], 0);
    assert_eq!(report["summary"]["api_keys"]["ApiVersions"]["responses"], 1);
    // Metadata v12 (no topics, no auto-creation, no authorized operations) and its
    // answer (throttle, no brokers, null cluster id, controller 1, no topics): a flexible
    // version answered, which no lookalike's messages read as
    let flexible = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40302", "10.0.0.2:29092");
        c.handshake(w);
        c.send(w, true, &request(3, 12, 1, true, &[0, 0, 0, 0]), 1448);
        let body = [0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0];
        c.send(w, false, &response(1, true, &body), 1448);
        c.close(w);
    };
    let report = run_capture(flexible, &[]);
    assert_eq!(report["summary"]["kafka_connections"], 1, "{report}");
    assert_eq!(report["summary"]["api_keys"]["Metadata"]["responses"], 1);
    // Metadata v0 (no topics) and its answer (no brokers, no topics): a rigid version,
    // as ZooKeeper's and PostgreSQL's first messages read; one exchange proves nothing
    let metadata = |w: &mut PcapWriter| {
        let mut c = Conn::new("10.0.0.1:40301", "10.0.0.2:29092");
        c.handshake(w);
        c.send(w, true, &request(3, 0, 1, false, &[0, 0, 0, 0]), 1448);
        c.send(w, false, &response(1, false, &[0; 8]), 1448);
        c.close(w);
    };
    let report = run_capture(metadata, &[]);
    assert_eq!(report["summary"]["kafka_connections"], 0);
    assert_eq!(report["summary"]["not_kafka_connections"], 1);
    assert_eq!(report["summary"]["api_keys"], serde_json::json!({}));
    let reason = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "not_kafka")
        .map(|d| d["facts"]["reason"].clone());
    assert_eq!(reason, Some("trial_unproven".into()));
    let forced = run_capture(metadata, &["--port", "29092"]);
    assert_eq!(forced["summary"]["kafka_connections"], 1);
    assert_eq!(forced["summary"]["api_keys"]["Metadata"]["responses"], 1);
}
