//! A message declared once is a decoder: EndTxn (API key 26), declared in its own file
//! (`kafka/end_txn.rs`) from Kafka's `EndTxnRequest.json` and `EndTxnResponse.json`
//! (versions 0-5, flexible 3+), read at a rigid and a flexible version, cut, and drawn.

use super::*;
use crate::kafka::end_txn::{Request as EndTxnRequest, Response as EndTxnResponse};
use crate::kafka::layout::{Node, Recorder};

/// A version 3 request (the first flexible one): header v2 with client_id "c", then a
/// compact TransactionalId "tx-1", producer id 2999, epoch 7, committed, no tags.
fn request_v3() -> Vec<u8> {
    let mut m = vec![0, 26, 0, 3, 0, 0, 0, 9, 0, 1, b'c', 0];
    m.extend([5, b't', b'x', b'-', b'1']);
    m.extend(2999_i64.to_be_bytes());
    m.extend(7_i16.to_be_bytes());
    m.extend([1, 0]);
    m
}

/// A version 5 response: header v1, throttle 0, error NONE, producer id 2999, epoch 8.
fn response_v5() -> Vec<u8> {
    let mut m = vec![0, 0, 0, 9, 0];
    m.extend(0_i32.to_be_bytes());
    m.extend(0_i16.to_be_bytes());
    m.extend(2999_i64.to_be_bytes());
    m.extend(8_i16.to_be_bytes());
    m.push(0);
    m
}

/// `name kind value offset size` of every node, depth first.
fn rows(node: &Node, out: &mut Vec<String>) {
    for child in &node.children {
        let value = child.value.as_deref().unwrap_or("");
        let (name, kind, at, size) = (&child.name, &child.kind, child.offset, child.size);
        out.push(format!("{name} {kind} {value} {at} {size}"));
        rows(child, out);
    }
}

#[test]
fn a_declared_message_reads_each_field_of_its_version() {
    let request = EndTxnRequest::decode(&request_v3(), 3);
    assert_eq!(request.header.client_id, Some(Some("c".into())));
    assert_eq!(request.transactional_id.as_deref(), Some("tx-1"));
    assert_eq!(
        (
            request.producer_id,
            request.producer_epoch,
            request.committed
        ),
        (Some(2999), Some(7), Some(true))
    );
    assert_eq!(
        (request.tagged_fields, request.problem),
        (Some(vec![]), None)
    );

    let response = EndTxnResponse::decode(&response_v5(), 5);
    assert_eq!(response.error_code, Some(ErrorCode::NONE));
    assert_eq!(
        (response.producer_id, response.producer_epoch),
        (Some(2999), Some(8))
    );
    assert_eq!(response.problem, None);

    // version 2 is rigid (header v0, no tags) and has no producer id: what follows the
    // error code is trailing bytes, not a field
    let mut rigid = vec![0, 0, 0, 9];
    rigid.extend([0, 0, 0, 0, 0, 47]);
    let response = EndTxnResponse::decode(&rigid, 2);
    assert_eq!(
        response.error_code.map(ErrorCode::name).as_deref(),
        Some("INVALID_PRODUCER_EPOCH")
    );
    assert_eq!(
        (response.producer_id, response.header.tagged_fields),
        (None, None)
    );
    assert_eq!(response.problem, None);
    rigid.extend(2999_i64.to_be_bytes());
    assert!(matches!(
        EndTxnResponse::decode(&rigid, 2).problem.as_deref(),
        Some(Problem::Decode(_))
    ));
}

#[test]
fn a_declared_message_cut_keeps_the_fields_before_the_cut() {
    let whole = response_v5();
    // cut inside ProducerId: 4 of its 8 bytes are there
    let cut = &whole[..15];
    let len = u32::try_from(whole.len()).unwrap();
    let missing = len - 15;
    let response = EndTxnResponse::decode_partial(cut, len, missing, 5);
    assert_eq!(response.error_code, Some(ErrorCode::NONE));
    assert_eq!(
        (response.producer_id, response.producer_epoch),
        (None, None)
    );
    assert_eq!(response.bytes_not_captured, Some(missing));
    // offsets in the frame: the size prefix, then the header's 5 bytes, throttle, error
    assert_eq!(
        response.problem.as_deref(),
        Some(&Problem::NotCaptured {
            len,
            captured: 15,
            field: Some(("ProducerId", 4 + 11)),
        })
    );
}

#[test]
fn a_declared_message_is_drawn_field_by_field() {
    let mut rec = Recorder::new(Node::default(), 4);
    EndTxnRequest::decode_with(&request_v3(), 3, &mut rec);
    let mut drawn = Vec::new();
    rows(&rec.finish(), &mut drawn);
    let body: Vec<&str> = drawn
        .iter()
        .map(String::as_str)
        .skip_while(|row| !row.starts_with("EndTxnRequest"))
        .collect();
    assert_eq!(
        body,
        [
            "EndTxnRequest struct  16 17",
            "TransactionalId compact_string \"tx-1\" (uvarint 5) 16 5",
            "ProducerId int64 2999 21 8",
            "ProducerEpoch int16 7 29 2",
            "Committed bool true 31 1",
            "tagged_fields uvarint 0 32 1",
        ]
    );
    // a version newer than the declaration is read to its header, and said so
    let mut newer = request_v3();
    newer[3] = 6;
    let request = EndTxnRequest::decode(&newer, 6);
    assert_eq!(request.transactional_id, None);
    assert_eq!(
        request.problem.map(|p| p.to_string()).as_deref(),
        Some("EndTxn version 6 is not supported (versions 0 to 5 are); the body was not decoded")
    );
}
