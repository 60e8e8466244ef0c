//! The direct writer against the writer on the model, byte for byte, over exchanges and
//! blocks that take every branch: each optional field present and absent, escapes,
//! IPv6, unknown error codes, cut tagged fields, nanosecond times, merged captures, and
//! every layout (compact, pretty at any depth, an ndjson line's lead).

use proptest::prelude::*;

use super::*;
use crate::analysis::test_support;
use crate::kafka::tables::ErrorCode;
use crate::packet_ref::Origin;
use crate::pairing::Outcome;
use crate::report::json::writer::{self, Writer};
use crate::timestamp::Timestamp;
use serde::Serialize;

/// The writer's bytes for `value` at `depth`, with `lead` as its first field.
fn by_writer(
    value: &impl Serialize,
    pretty: bool,
    depth: usize,
    lead: Option<&'static str>,
) -> Vec<u8> {
    let mut out = Vec::new();
    match lead {
        Some(kind) => writer::compact_typed(&mut out, kind, value).unwrap(),
        None => value
            .serialize(&mut Writer::new(&mut out, pretty, depth))
            .unwrap(),
    }
    out
}

fn tagged_fields() -> impl Strategy<Value = Option<Vec<TaggedField>>> {
    let field = (
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..6),
        any::<bool>(),
    )
        .prop_map(|(tag, data, cut)| {
            let mut f = TaggedField::new(tag, &data);
            if cut {
                f.cut = Some((5000, 0x0012_abcd));
            }
            f
        });
    proptest::option::of(proptest::collection::vec(field, 0..3))
}

fn time() -> impl Strategy<Value = Timestamp> {
    (0i64..4_000_000_000, 0u32..1_000_000_000, any::<bool>())
        .prop_map(|(secs, nanos, nano)| Timestamp { secs, nanos, nano })
}

fn address() -> impl Strategy<Value = std::net::SocketAddr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| (ip, port).into()),
        (any::<[u16; 8]>(), any::<u16>()).prop_map(|(ip, port)| (ip, port).into()),
    ]
}

fn meta() -> impl Strategy<Value = MessageMeta> {
    (
        any::<u32>(),
        time(),
        any::<u32>(),
        proptest::option::of(1u64..1000),
    )
        .prop_map(|(frame, timestamp, size, origin)| MessageMeta {
            frame: u64::from(frame),
            first_frame: u64::from(frame / 2),
            timestamp,
            size: u64::from(size),
            origin: origin.and_then(|f| Origin::new(2, f)),
        })
}

fn client_id() -> impl Strategy<Value = Option<Option<String>>> {
    proptest::option::of(proptest::option::of("[a-z\"\\\\\u{1}é-]{0,12}"))
}

prop_compose! {
    fn exchange()(
        base in (any::<u16>(), any::<u8>(), any::<i64>()),
        endpoints in (address(), address()),
        request_meta in meta(),
        response_meta in meta(),
        id in client_id(),
        tags in (tagged_fields(), tagged_fields(), tagged_fields(), tagged_fields()),
        fields in (proptest::option::of(any::<i32>()), proptest::option::of(any::<i16>()),
                   proptest::option::of(any::<i64>()), proptest::option::of(1u32..90)),
        outcome in 0..3u8,
        problem in any::<bool>(),
    ) -> Exchange {
        let (n, broker, epoch) = base;
        let mut ex = test_support::exchange(u64::from(n), i32::from(broker), epoch, Some((0, 0, 1000, 2)));
        (ex.endpoints.client, ex.endpoints.server) = endpoints;
        ex.request_meta = request_meta;
        ex.request.header.client_id = id.map(|id| id.map(Into::into));
        (ex.request.header.tagged_fields, ex.request.tagged_fields) = (tags.0, tags.1);
        ex.request.broker_id = fields.0;
        ex.request.bytes_not_captured = fields.3;
        if problem {
            ex.request.problem = Some(Box::new(Problem::Shed { len: 7 }));
        }
        ex.outcome = match outcome {
            0 => Outcome::Unanswered,
            1 => Outcome::ResponseUnknown,
            _ => {
                let Outcome::Complete { mut response, .. } = ex.outcome else { unreachable!() };
                (response.header.tagged_fields, response.tagged_fields) = (tags.2, tags.3);
                response.error_code = fields.1.map(ErrorCode);
                response.producer_id_start = fields.2;
                response.throttle_time_ms = fields.0;
                response.bytes_not_captured = fields.3;
                if problem {
                    response.problem = Some(Box::new(Problem::TooLarge { len: 9, limit: 8 }));
                }
                Outcome::Complete { meta: response_meta, response }
            }
        };
        ex
    }
}

fn block() -> impl Strategy<Value = Block> {
    (
        any::<(i64, i32, i32, i64, u64, i32)>(),
        address(),
        address(),
        time(),
    )
        .prop_map(
            |(
                (start, len, broker_id, broker_epoch, connection, correlation_id),
                client,
                server,
                timestamp,
            )| Block {
                start,
                end: start.wrapping_add(i64::from(len)),
                len,
                broker_id,
                broker_epoch,
                connection,
                client,
                server,
                correlation_id,
                request_frame: connection / 3,
                response_frame: connection / 2,
                timestamp,
            },
        )
}

/// The layouts the report writes items in: compact and pretty at the depths of its lists
/// and past the writer's ready-made indentation, and ndjson's lines.
const LAYOUTS: [(bool, usize, Option<&str>); 6] = [
    (false, 0, None),
    (false, 2, None),
    (true, 0, None),
    (true, 2, None),
    (true, 20, None),
    (false, 0, Some("exchange")),
];

proptest! {
    #[test]
    fn exchanges_are_written_as_the_model_serializes(ex in exchange()) {
        let model = crate::report::exchange(&ex);
        for (pretty, depth, lead) in LAYOUTS {
            let mut direct = Vec::new();
            super::exchange(&mut direct, &ex, pretty, depth, lead);
            let expected = by_writer(&model, pretty, depth, lead);
            prop_assert_eq!(
                String::from_utf8_lossy(&direct),
                String::from_utf8_lossy(&expected),
                "pretty {} depth {} lead {:?}", pretty, depth, lead
            );
        }
    }

    #[test]
    fn blocks_are_written_as_the_model_serializes(b in block()) {
        let model = crate::report::pid_block(&b);
        for (pretty, depth, lead) in LAYOUTS {
            let mut direct = Vec::new();
            super::block(&mut direct, &b, pretty, depth, lead);
            prop_assert_eq!(direct, by_writer(&model, pretty, depth, lead));
        }
    }
}

#[test]
fn a_compact_exchange_is_serde_jsons_own() {
    let ex = test_support::exchange(3, 4, 91_869, Some((0, 4_191_000, 1000, 2)));
    let mut direct = Vec::new();
    super::exchange(&mut direct, &ex, false, 0, None);
    let expected = serde_json::to_vec(&crate::report::exchange(&ex)).unwrap();
    assert_eq!(
        String::from_utf8(direct).unwrap(),
        String::from_utf8(expected).unwrap()
    );
}

/// What `push` appends for `value` is serde_json's text of it.
fn pushed_as_serde_json<T: Serialize + fmt::Debug + Copy>(
    push: impl Fn(&mut Vec<u8>, T),
    value: T,
) {
    let mut pushed = Vec::new();
    push(&mut pushed, value);
    assert_eq!(
        String::from_utf8(pushed).unwrap(),
        serde_json::to_string(&value).unwrap(),
        "{value:?}"
    );
}

/// The decimal written without a float is byte for byte what serde_json writes.
#[test]
fn unix_time_pushed_as_json_is_what_serde_json_writes_at_the_edges() {
    let t = |secs, nanos, nano| UnixTime(Timestamp { secs, nanos, nano });
    let same = |u: UnixTime| pushed_as_serde_json(push_unix_time, u);
    let edges = [
        0,
        1,
        9,
        10,
        999_999,
        1_000_000,
        4_294_967_295,
        4_294_967_296,
    ];
    for secs in edges.into_iter().chain([-1, 1_764_422_316, 1 << 40]) {
        for micros in [0, 1, 10, 100_000, 120_000, 999_999, 500_000, 827_541] {
            same(t(secs, micros * 1000, false));
            same(t(secs, micros * 1000 + 999, false));
            same(t(secs, micros * 1000 + 7, true));
        }
    }
}

proptest! {
    #[test]
    fn unix_time_pushed_as_json_is_what_serde_json_writes(
        secs in 0i64..1 << 33,
        nanos in 0u32..1_000_000_000,
        nano: bool,
    ) {
        let u = UnixTime(Timestamp { secs, nanos, nano });
        let mut pushed = Vec::new();
        push_unix_time(&mut pushed, u);
        prop_assert_eq!(String::from_utf8(pushed).unwrap(), serde_json::to_string(&u).unwrap());
    }
}

/// A float written without the shortest-float search is byte for byte serde_json's.
#[test]
fn floats_pushed_are_what_serde_json_writes_at_the_edges() {
    let mut values = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        505.0,
        0.5,
        505.25,
        1e15,
        -1e15,
        1e15 - 1.0,
        1e16,
        1e17,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        9_007_199_254_740_993.0,
        123_456_789_012.0,
    ];
    values.extend((0..16).map(|e| 10f64.powi(e)));
    values.extend((0..16).map(|e| -(10f64.powi(e)) + 1.0));
    for value in values {
        pushed_as_serde_json(push_float, value);
    }
}

proptest! {
    #[test]
    fn floats_pushed_are_what_serde_json_writes(
        whole in -2_000_000_000_000_000i64..2_000_000_000_000_000,
        any: f64,
    ) {
        #[allow(clippy::cast_precision_loss)]
        for value in [whole as f64, any] {
            let mut pushed = Vec::new();
            push_float(&mut pushed, value);
            prop_assert_eq!(String::from_utf8(pushed).unwrap(), serde_json::to_string(&value).unwrap());
        }
    }
}

/// A time's two fields, written from the second's kept texts, are serde_json's for the
/// model's, whether the second before was the same or another.
#[test]
fn times_written_are_the_models_whatever_came_before() {
    let secs = [
        1,
        1,
        1_795_953_600,
        1_795_953_600,
        1_795_953_601,
        1,
        4_294_967_295,
        0,
    ];
    let micros = [0, 999_999, 33_973, 100_000, 5, 120_000, 1, 7];
    for (i, (&secs, &micros)) in secs.iter().zip(&micros).enumerate() {
        for nano in [false, true] {
            let at = Timestamp {
                secs,
                nanos: micros * 1000 + u32::from(nano),
                nano,
            };
            let mut direct = Vec::new();
            let mut o = Object::open(&mut direct, false, 0);
            o.time(key!("timestamp"), key!("unix_time"), at);
            o.close();
            let expected = format!(
                "{{\"timestamp\":\"{}\",\"unix_time\":{}}}",
                at.to_rfc3339(),
                serde_json::to_string(&UnixTime(at)).unwrap()
            );
            assert_eq!(
                String::from_utf8(direct).unwrap(),
                expected,
                "time {i} {at:?}"
            );
        }
    }
}

/// What [`Object::plain`] writes unescaped: every status and every error name of the
/// project's table.
#[test]
fn the_names_written_as_they_are_need_no_escaping() {
    let statuses = crate::pairing::Status::ALL.map(crate::pairing::Status::as_str);
    let names = ErrorCode::names();
    assert!(names.len() > 100, "{}", names.len());
    for name in statuses.iter().chain(&names) {
        assert!(!writer::needs_escape(name.as_bytes()), "{name}");
    }
}

/// Every integer type the writer takes, at its edges and where a digit is added.
#[test]
fn integers_pushed_are_what_itoa_writes_at_the_edges() {
    fn check(value: impl Decimal + itoa::Integer) {
        let mut out = b"x".to_vec();
        push_decimal(&mut out, value);
        let want = format!("x{}", itoa::Buffer::new().format(value));
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }
    let mut powers = vec![0u64, u64::MAX];
    for exp in 0..20 {
        let p = 10u64.pow(exp);
        powers.extend([p - 1, p, p + 1]);
    }
    for &v in &powers {
        check(v);
        check(v as u32);
        check(v as u16);
        check(v as i64);
        check(-(v as i64));
        check(v as i32);
        check(-(v as i32));
        check(v as i16);
    }
    check(i64::MIN);
    check(i32::MIN);
    check(i16::MIN);
}

proptest! {
    #[test]
    fn integers_pushed_are_what_itoa_writes(v in any::<i64>(), u in any::<u64>()) {
        let mut out = Vec::new();
        push_decimal(&mut out, v);
        push_decimal(&mut out, u);
        let want = format!("{v}{u}");
        prop_assert_eq!(String::from_utf8(out).unwrap(), want);
    }
}
