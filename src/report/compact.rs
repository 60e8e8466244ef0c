//! JSON for the two records a report holds hundreds of thousands of: an exchange and a
//! block, compact or pretty at the depth they sit at in the report. The bytes are exactly
//! those of `serde_json::to_writer` (or `to_writer_pretty`) on the same values (property
//! tests compare them on arbitrary values), written without serde's call per token: keys
//! go out as they are, integers through itoa, strings as they are unless they need
//! escaping, floats and escaped strings through serde_json itself. Each writer names
//! every field of its type, so that a field added to the model does not compile until it
//! is written here too.

use super::model::{Exchange, InCapture, PidBlock, Request, Response, TaggedField, UnixTime};

/// Appends `ex` as compact JSON.
pub fn exchange(out: &mut Vec<u8>, ex: &Exchange) {
    write_exchange(&mut Json::compact(out), ex);
}

/// Appends `ex` as pretty JSON for a place `depth` deep (its first line not indented).
pub fn exchange_at(out: &mut Vec<u8>, ex: &Exchange, depth: usize) {
    write_exchange(&mut Json::pretty(out, depth), ex);
}

/// Appends `b` as compact JSON.
pub fn pid_block(out: &mut Vec<u8>, b: &PidBlock) {
    write_pid_block(&mut Json::compact(out), b);
}

/// Appends `b` as pretty JSON for a place `depth` deep (its first line not indented).
pub fn pid_block_at(out: &mut Vec<u8>, b: &PidBlock, depth: usize) {
    write_pid_block(&mut Json::pretty(out, depth), b);
}

/// Writes objects and arrays laid out as serde_json does: compact, or pretty (two spaces
/// an indent, `"key": value`, an empty object or array as `{}` or `[]`).
struct Json<'a> {
    out: &'a mut Vec<u8>,
    pretty: bool,
    depth: usize,
    /// Nothing written yet in the innermost open object or array.
    first: bool,
}

impl<'a> Json<'a> {
    fn compact(out: &'a mut Vec<u8>) -> Self {
        Self {
            out,
            pretty: false,
            depth: 0,
            first: true,
        }
    }

    fn pretty(out: &'a mut Vec<u8>, depth: usize) -> Self {
        Self {
            out,
            pretty: true,
            depth,
            first: true,
        }
    }

    fn open(&mut self, bracket: u8) {
        self.out.push(bracket);
        self.depth += 1;
        self.first = true;
    }

    fn close(&mut self, bracket: u8) {
        self.depth = self.depth.saturating_sub(1);
        if self.pretty && !self.first {
            self.new_line();
        }
        self.out.push(bracket);
        self.first = false;
    }

    fn new_line(&mut self) {
        /// A newline and the indentation of the deepest lines a report has, and more.
        const LINE: &[u8; 33] = b"\n                                ";
        match LINE.get(..1 + 2 * self.depth) {
            Some(line) => self.out.extend_from_slice(line),
            None => {
                self.out.push(b'\n');
                for _ in 0..self.depth {
                    self.out.extend_from_slice(b"  ");
                }
            }
        }
    }

    /// Before an array element or an object key.
    fn item(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        if self.pretty {
            self.new_line();
        }
    }

    /// `"name":` (and a space when pretty); field names need no escaping.
    fn key(&mut self, name: &str) {
        self.item();
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out
            .extend_from_slice(if self.pretty { b"\": " } else { b"\":" });
    }

    fn int(&mut self, value: impl itoa::Integer) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
    }

    fn float(&mut self, value: f64) {
        // serde_json's own float format (and `null` for NaN and infinities); writing to a
        // Vec cannot fail.
        let _ = serde_json::to_writer(&mut *self.out, &value);
    }

    /// A JSON string: as it is when nothing in it needs escaping (addresses, timestamps,
    /// names: nearly always), otherwise escaped by serde_json.
    fn string(&mut self, s: &str) {
        if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
            let _ = serde_json::to_writer(&mut *self.out, s);
            return;
        }
        self.out.push(b'"');
        self.out.extend_from_slice(s.as_bytes());
        self.out.push(b'"');
    }

    fn null(&mut self) {
        self.out.extend_from_slice(b"null");
    }

    /// `key` and the value when there is one; nothing otherwise (serde's
    /// `skip_serializing_if = "Option::is_none"`).
    fn optional<T>(&mut self, key: &str, value: Option<T>, write: impl FnOnce(&mut Self, T)) {
        if let Some(value) = value {
            self.key(key);
            write(self, value);
        }
    }
}

fn write_exchange(w: &mut Json<'_>, ex: &Exchange) {
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
    w.open(b'{');
    w.key("connection");
    w.int(*connection);
    w.key("client");
    w.string(client);
    w.key("server");
    w.string(server);
    w.key("correlation_id");
    w.int(*correlation_id);
    w.key("status");
    w.string(status.as_str());
    w.key("request");
    request(w, req);
    w.key("response");
    match resp {
        Some(r) => response(w, r),
        None => w.null(),
    }
    w.key("latency_us");
    match latency_us {
        Some(us) => w.float(*us),
        None => w.null(),
    }
    w.close(b'}');
}

fn request(w: &mut Json<'_>, r: &Request) {
    let Request {
        frame,
        in_capture,
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
        raw: _, // not in the JSON
    } = r;
    message_head(
        w,
        (*frame, *in_capture, *first_frame),
        (timestamp, *unix_time),
        *size,
    );
    w.key("api_key");
    w.int(*api_key);
    w.key("api_version");
    w.int(*api_version);
    w.optional("client_id", client_id.as_ref(), |w, id| match id {
        Some(s) => w.string(s),
        None => w.null(),
    });
    w.optional(
        "header_tagged_fields",
        header_tagged_fields.as_deref(),
        tagged,
    );
    w.optional("broker_id", *broker_id, |w, v| w.int(v));
    w.optional("broker_epoch", *broker_epoch, |w, v| w.int(v));
    message_tail(w, tagged_fields, *bytes_not_captured, decode_error);
}

fn response(w: &mut Json<'_>, r: &Response) {
    let Response {
        frame,
        in_capture,
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
        raw: _, // not in the JSON
    } = r;
    message_head(
        w,
        (*frame, *in_capture, *first_frame),
        (timestamp, *unix_time),
        *size,
    );
    w.optional(
        "header_tagged_fields",
        header_tagged_fields.as_deref(),
        tagged,
    );
    w.optional("throttle_time_ms", *throttle_time_ms, |w, v| w.int(v));
    w.optional("error_code", *error_code, |w, v| w.int(v));
    w.optional("error", error.as_deref(), |w, s| w.string(s));
    w.optional("producer_id_start", *producer_id_start, |w, v| w.int(v));
    w.optional("producer_id_len", *producer_id_len, |w, v| w.int(v));
    message_tail(w, tagged_fields, *bytes_not_captured, decode_error);
}

/// Opens a request or response with the fields every one has.
fn message_head(
    w: &mut Json<'_>,
    (frame, in_capture, first_frame): (u64, Option<InCapture>, u64),
    (timestamp, unix_time): (&str, UnixTime),
    size: u64,
) {
    w.open(b'{');
    w.key("frame");
    w.int(frame);
    if let Some(InCapture {
        capture_index,
        capture_frame,
    }) = in_capture
    {
        w.key("capture_index");
        w.int(capture_index);
        w.key("capture_frame");
        w.int(capture_frame);
    }
    w.key("first_frame");
    w.int(first_frame);
    w.key("timestamp");
    w.string(timestamp);
    w.key("unix_time");
    w.float(unix_time.seconds());
    w.key("size");
    w.int(size);
}

/// Closes a request or response with the fields both end with.
fn message_tail(
    w: &mut Json<'_>,
    tagged_fields: &Option<Vec<TaggedField>>,
    bytes_not_captured: Option<u32>,
    decode_error: &Option<String>,
) {
    w.optional("tagged_fields", tagged_fields.as_deref(), tagged);
    w.optional("bytes_not_captured", bytes_not_captured, |w, v| w.int(v));
    w.optional("decode_error", decode_error.as_deref(), |w, s| w.string(s));
    w.close(b'}');
}

fn tagged(w: &mut Json<'_>, fields: &[TaggedField]) {
    w.open(b'[');
    for field in fields {
        let TaggedField {
            tag,
            data,
            data_len,
            data_crc32,
        } = field;
        w.item();
        w.open(b'{');
        w.key("tag");
        w.int(*tag);
        w.key("data");
        w.string(data);
        w.optional("data_len", *data_len, |w, v| w.int(v));
        w.optional("data_crc32", data_crc32.as_deref(), |w, s| w.string(s));
        w.close(b'}');
    }
    w.close(b']');
}

fn write_pid_block(w: &mut Json<'_>, b: &PidBlock) {
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
        unix_time,
    } = b;
    w.open(b'{');
    w.key("start");
    w.int(*start);
    w.key("end");
    w.int(*end);
    w.key("len");
    w.int(*len);
    w.key("broker_id");
    w.int(*broker_id);
    w.key("broker_epoch");
    w.int(*broker_epoch);
    w.key("connection");
    w.int(*connection);
    w.key("client");
    w.string(client);
    w.key("server");
    w.string(server);
    w.key("correlation_id");
    w.int(*correlation_id);
    w.key("request_frame");
    w.int(*request_frame);
    w.key("response_frame");
    w.int(*response_frame);
    w.key("timestamp");
    w.string(timestamp);
    w.key("unix_time");
    w.float(unix_time.seconds());
    w.close(b'}');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::pairing::Status;

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

    fn in_capture() -> impl Strategy<Value = Option<InCapture>> {
        proptest::option::of((any::<u32>(), any::<u64>()).prop_map(
            |(capture_index, capture_frame)| InCapture {
                capture_index,
                capture_frame,
            },
        ))
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
                    in_capture,
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
                    in_capture,
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
            exchange(&mut mine, &ex);
            prop_assert_eq!(
                String::from_utf8(mine).unwrap(),
                serde_json::to_string(&ex).unwrap()
            );
            let mut pretty = Vec::new();
            exchange_at(&mut pretty, &ex, 0);
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
            pid_block(&mut mine, &block);
            prop_assert_eq!(
                String::from_utf8(mine).unwrap(),
                serde_json::to_string(&block).unwrap()
            );
            let mut pretty = Vec::new();
            pid_block_at(&mut pretty, &block, 0);
            prop_assert_eq!(
                String::from_utf8(pretty).unwrap(),
                serde_json::to_string_pretty(&block).unwrap()
            );
        }
    }
}
