//! Compact JSON for the two records a report holds hundreds of thousands of: an exchange
//! and a block. The bytes are exactly those of `serde_json::to_writer` on the same values
//! (a property test compares the two on arbitrary values), written without serde's call
//! per token: keys go out as literals, integers through itoa, strings as they are unless
//! they need escaping, floats and escaped strings through serde_json itself. Each writer
//! names every field of its type, so that a field added to the model does not compile
//! until it is written here too.

use super::model::{Exchange, PidBlock, Request, Response, TaggedField};

/// Appends `ex` as compact JSON.
pub fn exchange(out: &mut Vec<u8>, ex: &Exchange) {
    let Exchange {
        connection,
        client,
        server,
        correlation_id,
        status,
        request: req,
        response: resp,
        latency_us,
    } = ex;
    out.extend_from_slice(b"{\"connection\":");
    int(out, *connection);
    out.extend_from_slice(b",\"client\":");
    string(out, client);
    out.extend_from_slice(b",\"server\":");
    string(out, server);
    out.extend_from_slice(b",\"correlation_id\":");
    int(out, *correlation_id);
    out.extend_from_slice(b",\"status\":");
    string(out, status);
    out.extend_from_slice(b",\"request\":");
    request(out, req);
    out.extend_from_slice(b",\"response\":");
    match resp {
        Some(r) => response(out, r),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"latency_us\":");
    match latency_us {
        Some(us) => float(out, *us),
        None => out.extend_from_slice(b"null"),
    }
    out.push(b'}');
}

fn request(out: &mut Vec<u8>, r: &Request) {
    let Request {
        frame,
        first_frame,
        timestamp,
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
        raw: _, // not in the JSON
    } = r;
    message_head(out, *frame, *first_frame, timestamp, *size);
    out.extend_from_slice(b",\"api_key\":");
    int(out, *api_key);
    out.extend_from_slice(b",\"api_version\":");
    int(out, *api_version);
    optional(
        out,
        b",\"client_id\":",
        client_id.as_ref(),
        |out, id| match id {
            Some(s) => string(out, s),
            None => out.extend_from_slice(b"null"),
        },
    );
    optional(
        out,
        b",\"header_tagged_fields\":",
        header_tagged_fields.as_deref(),
        tagged,
    );
    optional(out, b",\"broker_id\":", *broker_id, int);
    optional(out, b",\"broker_epoch\":", *broker_epoch, int);
    optional(
        out,
        b",\"tagged_fields\":",
        tagged_fields.as_deref(),
        tagged,
    );
    optional(out, b",\"bytes_not_captured\":", *bytes_not_captured, int);
    optional(out, b",\"decode_error\":", decode_error.as_deref(), string);
    out.push(b'}');
}

fn response(out: &mut Vec<u8>, r: &Response) {
    let Response {
        frame,
        first_frame,
        timestamp,
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
        raw: _, // not in the JSON
    } = r;
    message_head(out, *frame, *first_frame, timestamp, *size);
    optional(
        out,
        b",\"header_tagged_fields\":",
        header_tagged_fields.as_deref(),
        tagged,
    );
    optional(out, b",\"throttle_time_ms\":", *throttle_time_ms, int);
    optional(out, b",\"error_code\":", *error_code, int);
    optional(out, b",\"error\":", error.as_deref(), string);
    optional(out, b",\"producer_id_start\":", *producer_id_start, int);
    optional(out, b",\"producer_id_len\":", *producer_id_len, int);
    optional(
        out,
        b",\"tagged_fields\":",
        tagged_fields.as_deref(),
        tagged,
    );
    optional(out, b",\"bytes_not_captured\":", *bytes_not_captured, int);
    optional(out, b",\"decode_error\":", decode_error.as_deref(), string);
    out.push(b'}');
}

/// The opening fields every request and response has.
fn message_head(out: &mut Vec<u8>, frame: u64, first_frame: u64, timestamp: &str, size: u64) {
    out.extend_from_slice(b"{\"frame\":");
    int(out, frame);
    out.extend_from_slice(b",\"first_frame\":");
    int(out, first_frame);
    out.extend_from_slice(b",\"timestamp\":");
    string(out, timestamp);
    out.extend_from_slice(b",\"size\":");
    int(out, size);
}

/// `key` and the value when there is one; nothing otherwise (serde's
/// `skip_serializing_if = "Option::is_none"`).
fn optional<T>(
    out: &mut Vec<u8>,
    key: &[u8],
    value: Option<T>,
    write: impl FnOnce(&mut Vec<u8>, T),
) {
    if let Some(value) = value {
        out.extend_from_slice(key);
        write(out, value);
    }
}

fn tagged(out: &mut Vec<u8>, fields: &[TaggedField]) {
    out.push(b'[');
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let TaggedField {
            tag,
            data,
            data_len,
            data_crc32,
        } = field;
        out.extend_from_slice(b"{\"tag\":");
        int(out, *tag);
        out.extend_from_slice(b",\"data\":");
        string(out, data);
        if let Some(len) = data_len {
            out.extend_from_slice(b",\"data_len\":");
            int(out, *len);
        }
        if let Some(crc) = data_crc32 {
            out.extend_from_slice(b",\"data_crc32\":");
            string(out, crc);
        }
        out.push(b'}');
    }
    out.push(b']');
}

/// Appends `b` as compact JSON.
pub fn pid_block(out: &mut Vec<u8>, b: &PidBlock) {
    let PidBlock {
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
    } = b;
    out.extend_from_slice(b"{\"start\":");
    int(out, *start);
    out.extend_from_slice(b",\"end\":");
    int(out, *end);
    out.extend_from_slice(b",\"len\":");
    int(out, *len);
    out.extend_from_slice(b",\"broker_id\":");
    int(out, *broker_id);
    out.extend_from_slice(b",\"broker_epoch\":");
    int(out, *broker_epoch);
    out.extend_from_slice(b",\"connection\":");
    int(out, *connection);
    out.extend_from_slice(b",\"client\":");
    string(out, client);
    out.extend_from_slice(b",\"server\":");
    string(out, server);
    out.extend_from_slice(b",\"correlation_id\":");
    int(out, *correlation_id);
    out.extend_from_slice(b",\"request_frame\":");
    int(out, *request_frame);
    out.extend_from_slice(b",\"response_frame\":");
    int(out, *response_frame);
    out.extend_from_slice(b",\"timestamp\":");
    string(out, timestamp);
    out.push(b'}');
}

fn int(out: &mut Vec<u8>, value: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

fn float(out: &mut Vec<u8>, value: f64) {
    // serde_json's own float format (and `null` for NaN and infinities); writing to a
    // Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &value);
}

/// A JSON string: as it is when nothing in it needs escaping (addresses, timestamps,
/// names: nearly always), otherwise escaped by serde_json.
fn string(out: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        let _ = serde_json::to_writer(&mut *out, s);
        return;
    }
    out.push(b'"');
    out.extend_from_slice(s.as_bytes());
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

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

    fn request() -> impl Strategy<Value = Request> {
        (
            (any::<u64>(), any::<u64>(), text(), any::<u64>()),
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
                    (frame, first_frame, timestamp, size),
                    (api_key, api_version),
                    client_id,
                    header_tagged_fields,
                    (broker_id, broker_epoch),
                    tagged_fields,
                    (bytes_not_captured, decode_error),
                )| Request {
                    frame,
                    first_frame,
                    timestamp,
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
            (any::<u64>(), any::<u64>(), text(), any::<u64>()),
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
                    (frame, first_frame, timestamp, size),
                    header_tagged_fields,
                    (throttle_time_ms, error_code, error),
                    (producer_id_start, producer_id_len),
                    tagged_fields,
                    (bytes_not_captured, decode_error),
                )| Response {
                    frame,
                    first_frame,
                    timestamp,
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
            status in prop_oneof![Just("complete"), Just("unanswered"), Just("response_unknown")],
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
            exchange(&mut mine, &ex);
            prop_assert_eq!(
                String::from_utf8(mine).unwrap(),
                serde_json::to_string(&ex).unwrap()
            );
        }

        #[test]
        fn blocks_are_written_as_serde_json_writes_them(
            (start, end, len, broker_id, broker_epoch) in
                (any::<i64>(), any::<i64>(), any::<i32>(), any::<i32>(), any::<i64>()),
            (connection, client, server, correlation_id) in (any::<u64>(), text(), text(), any::<i32>()),
            (request_frame, response_frame, timestamp) in (any::<u64>(), any::<u64>(), text()),
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
            };
            let mut mine = Vec::new();
            pid_block(&mut mine, &block);
            prop_assert_eq!(
                String::from_utf8(mine).unwrap(),
                serde_json::to_string(&block).unwrap()
            );
        }
    }
}
