//! Property tests over generated Kafka conversations: whatever TCP does to the bytes
//! (re-segmentation, reordering within the buffer, duplication, overlapping
//! retransmission) the exchanges are those of the clean stream; random losses give a
//! subset of them, never an altered or invented one, and say so with gap diagnostics.

use proptest::prelude::*;
use serde_json::Value;

use crate::common::*;

/// One request/response pair of the conversation.
#[derive(Debug, Clone)]
enum Msg {
    Allocate {
        broker: i32,
        epoch: i64,
        error: i16,
        start: i64,
        len: i32,
    },
    Heartbeat,
}

fn msg() -> impl Strategy<Value = Msg> {
    prop_oneof![
        3 => (0..5i32, 0..100i64, prop::sample::select(vec![0i16, 41, 77]), 0..1_000_000i64, 1..5000i32)
            .prop_map(|(broker, epoch, error, start, len)| Msg::Allocate { broker, epoch, error, start, len }),
        1 => Just(Msg::Heartbeat),
    ]
}

fn encode(msgs: &[Msg]) -> Vec<(Vec<u8>, Vec<u8>)> {
    msgs.iter()
        .enumerate()
        .map(|(idx, m)| {
            let corr = idx as i32 + 1;
            match m {
                Msg::Allocate {
                    broker,
                    epoch,
                    error,
                    start,
                    len,
                } => (
                    request(67, 0, corr, true, &apid_request_body(*broker, *epoch)),
                    response(corr, true, &apid_response_body(*error, *start, *len)),
                ),
                Msg::Heartbeat => (
                    request(
                        12,
                        3,
                        corr,
                        false,
                        &[0, 1, b'g', 0, 0, 0, 1, 0, 1, b'm', 0xff, 0xff],
                    ),
                    response(corr, false, &[0, 0, 0, 0, 0, 0]),
                ),
            }
        })
        .collect()
}

/// What TCP may do to one message's segments.
#[derive(Debug, Clone)]
struct Mangling {
    /// Cut points, as fractions of the message (sorted, deduplicated when applied).
    cuts: Vec<u16>,
    /// Send the segments in reverse order.
    reverse: bool,
    /// Send this segment twice.
    duplicate: Option<usize>,
    /// Retransmit the whole message again at the end, as one overlapping segment.
    retransmit: bool,
    /// Lose this segment (only in the loss property).
    lose: Option<usize>,
}

fn mangling() -> impl Strategy<Value = Mangling> {
    (
        prop::collection::vec(1..1000u16, 0..4),
        any::<bool>(),
        prop::option::of(0..5usize),
        any::<bool>(),
        prop::option::weighted(0.2, 0..5usize),
    )
        .prop_map(|(cuts, reverse, duplicate, retransmit, lose)| Mangling {
            cuts,
            reverse,
            duplicate,
            retransmit,
            lose,
        })
}

fn segments(len: usize, cuts: &[u16]) -> Vec<(usize, usize)> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| (*c as usize * len) / 1000)
        .filter(|p| *p > 0 && *p < len)
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut bounds = vec![0];
    bounds.extend(points);
    bounds.push(len);
    bounds.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Writes the conversation with each request mangled, and returns the report.
fn run_conversation(msgs: &[Msg], manglings: &[Mangling], with_losses: bool) -> (Value, bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prop.pcap");
    let mut w = PcapWriter::create(&path);
    let mut c = Conn::new("10.0.0.1:40100", "10.0.0.2:29093");
    c.handshake(&mut w);
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    let mut lost_any = false;
    for ((req, resp), m) in encode(msgs).iter().zip(manglings.iter().cycle()) {
        // the same mangling for the request and for its response
        for (from_client, message) in [(true, req), (false, resp)] {
            let base = if from_client {
                c.client_seq
            } else {
                c.server_seq
            };
            let mut order = segments(message.len(), &m.cuts);
            if m.reverse {
                order.reverse();
            }
            let mut sends: Vec<(usize, usize)> = Vec::new();
            for (idx, seg) in order.iter().enumerate() {
                if with_losses && m.lose == Some(idx) {
                    lost_any = true;
                    continue;
                }
                sends.push(*seg);
                if m.duplicate == Some(idx) {
                    sends.push(*seg);
                }
            }
            if m.retransmit && !(with_losses && m.lose.is_some()) {
                sends.push((0, message.len()));
            }
            for (from, to) in sends {
                w.record(
                    &c.packet(from_client, base + from as u32, ack, &message[from..to]),
                    0,
                );
            }
            let end = base + message.len() as u32;
            if from_client {
                c.client_seq = end;
            } else {
                c.server_seq = end;
            }
        }
    }
    c.close(&mut w);
    w.finish();
    // --port: a conversation of a few requests other than AllocateProducerIds would end
    // on trial, unproven, and not be read as Kafka; what is tested here is the transport
    let args = [path.to_str().unwrap(), "--compact", "--port", "29093"];
    (report(&args), lost_any)
}

/// An exchange without what depends on packet placement.
fn content(ex: &Value) -> Value {
    let mut ex = ex.clone();
    for side in ["request", "response"] {
        if let Some(obj) = ex[side].as_object_mut() {
            for f in ["frame", "first_frame", "timestamp", "unix_time"] {
                obj.remove(f);
            }
        }
    }
    ex.as_object_mut().unwrap().remove("latency_us");
    ex
}

/// Whether a message read from a lossy capture says what the clean one does: the same
/// when all its bytes were captured; otherwise every field it gives has the clean value
/// (those in the lost bytes are absent) and it says how many bytes it lacks.
fn agrees(lossy: &Value, clean: &Value) -> bool {
    if lossy.get("bytes_not_captured").is_none() {
        return lossy == clean;
    }
    lossy.as_object().unwrap().iter().all(|(field, value)| {
        ["bytes_not_captured", "decode_error"].contains(&field.as_str())
            || clean.get(field) == Some(value)
    })
}

fn clean_manglings() -> Vec<Mangling> {
    vec![Mangling {
        cuts: vec![],
        reverse: false,
        duplicate: None,
        retransmit: false,
        lose: None,
    }]
}

proptest! {
    // 48 cases by default; PROPTEST_CASES=5000 for a longer search.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn tcp_mangling_does_not_change_the_exchanges(
        msgs in prop::collection::vec(msg(), 1..8),
        manglings in prop::collection::vec(mangling(), 1..8),
    ) {
        let (clean, _) = run_conversation(&msgs, &clean_manglings(), false);
        let (mangled, _) = run_conversation(&msgs, &manglings, false);
        let clean_ex: Vec<Value> = clean["exchanges"].as_array().unwrap().iter().map(content).collect();
        let mangled_ex: Vec<Value> = mangled["exchanges"].as_array().unwrap().iter().map(content).collect();
        prop_assert_eq!(&mangled_ex, &clean_ex);
        prop_assert_eq!(&mangled["summary"]["api_keys"], &clean["summary"]["api_keys"]);
        // The same findings about the blocks, and nothing about the transport.
        prop_assert_eq!(&mangled["summary"]["diagnostics"], &clean["summary"]["diagnostics"]);
        let transport: Vec<&Value> = mangled["diagnostics"].as_array().unwrap().iter()
            .filter(|d| !d["kind"].as_str().unwrap().starts_with("pid_")).collect();
        prop_assert!(transport.is_empty(), "{:?}", transport);
    }

    #[test]
    fn losses_give_a_subset_never_an_invention(
        msgs in prop::collection::vec(msg(), 1..8),
        manglings in prop::collection::vec(mangling(), 1..8),
    ) {
        let (clean, _) = run_conversation(&msgs, &clean_manglings(), false);
        let (lossy, lost_any) = run_conversation(&msgs, &manglings, true);
        let clean_ex: Vec<Value> = clean["exchanges"].as_array().unwrap().iter().map(content).collect();
        for ex in lossy["exchanges"].as_array().unwrap().iter().map(content) {
            let twin = clean_ex.iter().find(|c| c["correlation_id"] == ex["correlation_id"]);
            prop_assert!(twin.is_some(), "invented exchange {}", ex);
            let twin = twin.unwrap();
            prop_assert!(agrees(&ex["request"], &twin["request"]), "{} against {}", ex, twin);
            if !ex["response"].is_null() {
                prop_assert!(agrees(&ex["response"], &twin["response"]), "{} against {}", ex, twin);
            }
        }
        let kinds: Vec<&str> = lossy["diagnostics"].as_array().unwrap().iter()
            .map(|d| d["kind"].as_str().unwrap())
            .filter(|k| !k.starts_with("pid_"))
            .collect();
        if lost_any {
            prop_assert!(kinds.contains(&"tcp_gap"), "{:?}", kinds);
        } else {
            prop_assert!(kinds.is_empty(), "{:?}", kinds);
        }
    }
}
