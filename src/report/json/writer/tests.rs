//! The writer against serde_json: the same bytes for the report's records and for any
//! JSON value, compact and pretty, at any depth, and for items written earlier as text.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::pairing::Status;
use crate::report::model::{Exchange, PidBlock, Request, Response, TaggedField, UnixTime};

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9.:\\[\\]a-f]{0,24}",
        any::<String>(),
        "[\"\\\\\\x00-\\x1f\\x7f]{0,4}",
    ]
}

fn tagged_fields() -> impl Strategy<Value = Option<Vec<TaggedField>>> {
    proptest::option::of(proptest::collection::vec(
        (any::<u32>(), text(), any::<Option<(u64, u32)>>()).prop_map(|(tag, data, cut)| {
            TaggedField {
                tag,
                data,
                data_len: cut.map(|(len, _)| len),
                data_crc32: cut.map(|(_, crc)| format!("{crc:08x}")),
            }
        }),
        0..3,
    ))
}

/// Any time a capture can hold, to the micro- or nanosecond.
fn unix_time() -> impl Strategy<Value = UnixTime> {
    (any::<i64>(), 0u32..1_000_000_000, any::<bool>()).prop_map(|(secs, nanos, nano)| {
        let nanos = if nano { nanos } else { nanos / 1000 * 1000 };
        UnixTime(crate::timestamp::Timestamp { secs, nanos, nano })
    })
}

/// Where a message lies in its own file, when several are merged.
fn in_capture() -> impl Strategy<Value = Option<(u32, u64)>> {
    proptest::option::of((any::<u32>(), any::<u64>()))
}

fn request() -> impl Strategy<Value = Request> {
    (
        (
            (any::<u64>(), in_capture()),
            any::<u64>(),
            (text(), unix_time()),
            any::<u64>(),
        ),
        (any::<i16>(), any::<i16>()),
        proptest::option::of(proptest::option::of(text())),
        tagged_fields(),
        (
            proptest::option::of(any::<i32>()),
            proptest::option::of(any::<i64>()),
        ),
        tagged_fields(),
        (
            proptest::option::of(any::<u32>()),
            proptest::option::of(text()),
        ),
    )
        .prop_map(
            |(
                ((frame, in_capture), first_frame, (timestamp, unix_time), size),
                (api_key, api_version),
                client_id,
                header_tagged_fields,
                (broker_id, broker_epoch),
                tagged_fields,
                (bytes_not_captured, decode_error),
            )| Request {
                frame,
                capture_index: in_capture.map(|(index, _)| index),
                capture_frame: in_capture.map(|(_, frame)| frame),
                first_frame,
                timestamp,
                unix_time,
                size,
                api_key,
                api_version,
                client_id,
                header_tagged_fields,
                broker_id,
                broker_epoch,
                tagged_fields,
                bytes_not_captured,
                decode_error,
                raw: vec![1, 2, 3],
            },
        )
}

fn response() -> impl Strategy<Value = Response> {
    (
        (
            (any::<u64>(), in_capture()),
            any::<u64>(),
            (text(), unix_time()),
            any::<u64>(),
        ),
        tagged_fields(),
        (
            proptest::option::of(any::<i32>()),
            proptest::option::of(any::<i16>()),
            proptest::option::of(text()),
        ),
        (
            proptest::option::of(any::<i64>()),
            proptest::option::of(any::<i32>()),
        ),
        tagged_fields(),
        (
            proptest::option::of(any::<u32>()),
            proptest::option::of(text()),
        ),
    )
        .prop_map(
            |(
                ((frame, in_capture), first_frame, (timestamp, unix_time), size),
                header_tagged_fields,
                (throttle_time_ms, error_code, error),
                (producer_id_start, producer_id_len),
                tagged_fields,
                (bytes_not_captured, decode_error),
            )| Response {
                frame,
                capture_index: in_capture.map(|(index, _)| index),
                capture_frame: in_capture.map(|(_, frame)| frame),
                first_frame,
                timestamp,
                unix_time,
                size,
                header_tagged_fields,
                throttle_time_ms,
                error_code,
                error,
                producer_id_start,
                producer_id_len,
                tagged_fields,
                bytes_not_captured,
                decode_error,
                raw: Vec::new(),
            },
        )
}

fn latency() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of(prop_oneof![
        any::<f64>(),
        (0u64..10_000_000).prop_map(|ns| ns as f64 / 1000.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-0.0),
    ])
}

proptest! {
    #[test]
    fn exchanges_are_written_as_serde_json_writes_them(
        (connection, client, server, correlation_id) in (any::<u64>(), text(), text(), any::<i32>()),
        status in proptest::sample::select(Status::ALL.to_vec()),
        request in request(),
        response in proptest::option::of(response()),
        latency_us in latency(),
    ) {
        let ex = Exchange {
            connection,
            client,
            server,
            correlation_id,
            status,
            request,
            response,
            latency_us,
        };
        let mut mine = Vec::new();
        compact(&mut mine, &ex).unwrap();
        prop_assert_eq!(
            String::from_utf8(mine).unwrap(),
            serde_json::to_string(&ex).unwrap()
        );
        let mut pretty = Vec::new();
        pretty_at(&mut pretty, &ex, 0).unwrap();
        prop_assert_eq!(
            String::from_utf8(pretty).unwrap(),
            serde_json::to_string_pretty(&ex).unwrap()
        );
    }

    #[test]
    fn blocks_are_written_as_serde_json_writes_them(
        (start, end, len, broker_id, broker_epoch) in
            (any::<i64>(), any::<i64>(), any::<i32>(), any::<i32>(), any::<i64>()),
        (connection, client, server, correlation_id) in (any::<u64>(), text(), text(), any::<i32>()),
        (request_frame, response_frame, timestamp, unix_time) in
            (any::<u64>(), any::<u64>(), text(), unix_time()),
    ) {
        let block = PidBlock {
            start,
            end,
            len,
            broker_id,
            broker_epoch,
            connection,
            client,
            server,
            correlation_id,
            request_frame,
            response_frame,
            timestamp,
            unix_time,
        };
        let mut mine = Vec::new();
        compact(&mut mine, &block).unwrap();
        prop_assert_eq!(
            String::from_utf8(mine).unwrap(),
            serde_json::to_string(&block).unwrap()
        );
        let mut pretty = Vec::new();
        pretty_at(&mut pretty, &block, 0).unwrap();
        prop_assert_eq!(
            String::from_utf8(pretty).unwrap(),
            serde_json::to_string_pretty(&block).unwrap()
        );
    }
}

/// Any JSON value a few levels deep: every shape the writer lays out.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((text(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// `v` pretty for a place `depth` deep, as serde_json lays it out there: the element of
/// arrays nested `depth` deep, cut out of the whole.
fn serde_json_at(v: &Value, depth: usize) -> String {
    let mut whole = v.clone();
    for _ in 0..depth {
        whole = Value::Array(vec![whole]);
    }
    let text = serde_json::to_string_pretty(&whole).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.drain(..depth);
    lines.truncate(lines.len() - depth);
    let mut inner = lines.join("\n");
    inner.replace_range(..depth * 2, "");
    inner
}

proptest! {
    #[test]
    fn any_value_is_written_as_serde_json_writes_it(v in value(), depth in 0usize..20) {
        let mut mine = Vec::new();
        compact(&mut mine, &v).unwrap();
        prop_assert_eq!(String::from_utf8(mine).unwrap(), serde_json::to_string(&v).unwrap());
        let mut pretty = Vec::new();
        pretty_at(&mut pretty, &v, depth).unwrap();
        prop_assert_eq!(String::from_utf8(pretty).unwrap(), serde_json_at(&v, depth));
    }

    #[test]
    fn raw_items_written_earlier_go_out_in_place(items in proptest::collection::vec(value(), 0..5)) {
        // items written on their own for depth 2, then written as raw text in a
        // list inside an object: the bytes of the whole written at once
        let texts: Vec<Vec<u8>> = items
            .iter()
            .map(|v| {
                let mut text = Vec::new();
                pretty_at(&mut text, v, 2).unwrap();
                text
            })
            .collect();
        let raws: Vec<Raw<'_>> = texts.iter().map(|t| Raw(t)).collect();
        let mut mine = Vec::new();
        write(&mut mine, &std::collections::BTreeMap::from([("list", &raws)]), true).unwrap();
        prop_assert_eq!(
            String::from_utf8(mine).unwrap(),
            serde_json::to_string_pretty(&json!({ "list": items })).unwrap()
        );
    }
}

#[test]
fn strings_are_escaped_where_serde_json_escapes_them() {
    for s in [
        "",
        "plain",
        "0123456789abcdef",
        "tab\there",
        "a\"quote",
        "back\\slash",
        "sixteen bytes ok\u{1f}",
        "\u{7f}\u{80}é\u{2028}",
        "1234567\"",
        "12345678\\",
        "ab\"",
        "0123456789\u{1}",
        "01234567 ",
    ] {
        assert_eq!(
            needs_escape(s.as_bytes()),
            serde_json::to_string(s).unwrap() != format!("\"{s}\""),
            "{s:?}"
        );
    }
}

proptest! {
    /// Any string, the bytes that need escaping anywhere in it (the last few bytes are
    /// looked at apart from the words before them).
    #[test]
    fn a_string_needs_escaping_when_serde_json_escapes_it(
        s in proptest::string::string_regex("[ -~\\x00-\\x1f\"\\\\é]{0,40}").unwrap()
    ) {
        prop_assert_eq!(
            needs_escape(s.as_bytes()),
            serde_json::to_string(&s).unwrap() != format!("\"{s}\"")
        );
    }
}

#[test]
fn a_map_key_that_is_not_a_string_or_number_is_an_error() {
    let map = std::collections::BTreeMap::from([(vec![1], 2)]);
    let mut out = Vec::new();
    let err = compact(&mut out, &map).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
}

#[test]
fn a_typed_line_has_its_type_first() {
    let mut out = Vec::new();
    compact_typed(&mut out, "block", &json!({"start": 1, "inner": {"a": []}})).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"type":"block","start":1,"inner":{"a":[]}}"#
    );
}
