//! Cut sweep: every multi-exchange fixture, as if the capture had started at each of its
//! packets (a capture taken during an incident starts in the middle of connections that
//! live for days). Each cut report is checked against the whole capture's: every exchange
//! that lies wholly after the cut is reported with the same fields (frames renumbered) and
//! the same status, none is invented, and responses whose request lies before the cut are
//! counted in `unmatched_responses` (see [`unmatched_bounds`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{compact_report, pcap_records, report, root, MULTI_EXCHANGE_FIXTURES};

/// The pcap at `path` without its first `skip` packets.
pub fn cut_at(path: &Path, skip: usize) -> Vec<u8> {
    let (mut out, records) = pcap_records(path);
    for (head, bytes) in records.into_iter().skip(skip) {
        out.extend_from_slice(&head);
        out.extend_from_slice(&bytes);
    }
    out
}

/// An exchange keyed by (client, server, correlation id), with its frames shifted by
/// `shift` (to the whole capture's numbers) and its connection number left out.
fn keyed(report: &Value, shift: u64) -> BTreeMap<(String, String, i64), Value> {
    let mut out = BTreeMap::new();
    for ex in report["exchanges"].as_array().unwrap() {
        let mut ex = ex.clone();
        ex.as_object_mut().unwrap().remove("connection");
        for side in ["request", "response"] {
            if let Some(msg) = ex[side].as_object_mut() {
                for f in ["frame", "first_frame"] {
                    let v = msg[f].as_u64().unwrap() + shift;
                    msg.insert(f.into(), v.into());
                }
            }
        }
        let key = (
            ex["client"].as_str().unwrap().to_owned(),
            ex["server"].as_str().unwrap().to_owned(),
            ex["correlation_id"].as_i64().unwrap(),
        );
        out.insert(key, ex);
    }
    out
}

/// The AllocateProducerIds responses of the whole report: (client, server, request's
/// first frame, response's first frame, whether it grants a block: see [`grants`]).
fn responses(report: &Value) -> Vec<Answer> {
    responses_where(report, |_| true)
}

/// (client, server, request's first frame, response's first frame, whether it grants a
/// block): two answers in one frame are told apart by the last.
type Answer = (Value, Value, u64, u64, bool);

/// Whether a response grants a block whole: no error, a start of at least 0, ids in it.
fn grants_a_block(response: &Value) -> bool {
    response["error_code"] == 0
        && response["producer_id_start"].as_i64() >= Some(0)
        && response["producer_id_len"].as_i64() > Some(0)
}

/// [`responses`] of those that grant a block whole: no error, a start of at least 0, ids
/// in the block.
fn grants(report: &Value) -> Vec<Answer> {
    responses_where(report, grants_a_block)
}

/// [`responses`] of those whose response `keep` says yes to.
fn responses_where(report: &Value, keep: impl Fn(&Value) -> bool) -> Vec<Answer> {
    report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|ex| !ex["response"].is_null() && keep(&ex["response"]))
        .map(|ex| {
            (
                ex["client"].clone(),
                ex["server"].clone(),
                ex["request"]["first_frame"].as_u64().unwrap(),
                ex["response"]["first_frame"].as_u64().unwrap(),
                grants_a_block(&ex["response"]),
            )
        })
        .collect()
}

/// Bounds on `unmatched_responses` of the capture cut before frame `first` (equal unless
/// the capture carries other APIs than AllocateProducerIds, whose frames the whole
/// report does not place). An answer to a request before the cut is counted when its
/// connection is Kafka in the cut: always with `--port` (`ports_given`), where a lone
/// answer with nothing after it but the FIN is confirmed by the stream's end; without
/// it, when the connection carries an AllocateProducerIds request after the cut (that
/// proves it Kafka), or when it grants a block (its bytes read as one wherever they
/// stand, even on a connection given up), and never otherwise on one whose requests all
/// lie before the cut (the server's lone answers do not make it Kafka: a Thrift-framed
/// server looks the same; the connection is given up as `not_kafka`). On a connection
/// with other APIs, other requests after the cut may prove it or not, and other answers
/// may be orphans too.
fn unmatched_bounds(whole: &Value, first: u64, ports_given: bool) -> (u64, u64) {
    orphan_bounds(
        whole,
        responses(whole),
        (first, ports_given),
        "unmatched_responses",
    )
}

/// Bounds on `unmatched_like_blocks` of the capture cut before frame `first`: the answers
/// granting a block whose request lies before the cut, counted as [`unmatched_bounds`]
/// counts them (a block's answer always reads as one; another API's may too).
fn like_block_bounds(whole: &Value, first: u64, ports_given: bool) -> (u64, u64) {
    orphan_bounds(
        whole,
        grants(whole),
        (first, ports_given),
        "unmatched_like_blocks",
    )
}

/// Bounds on the summary's `field` of the capture cut before frame `first`: the whole
/// capture's, and the responses of `all` whose request lies before the cut.
fn orphan_bounds(
    whole: &Value,
    all: Vec<Answer>,
    (first, ports_given): (u64, bool),
    field: &str,
) -> (u64, u64) {
    let exchanges = whole["exchanges"].as_array().unwrap();
    let carries_request_after = |client: &Value, server: &Value| {
        exchanges.iter().any(|ex| {
            ex["client"] == *client
                && ex["server"] == *server
                && ex["request"]["first_frame"].as_u64() >= Some(first)
        })
    };
    let orphans: Vec<_> = all
        .iter()
        .filter(|(_, _, req, resp, _)| *req < first && *resp >= first)
        .collect();
    let sure = orphans
        .iter()
        .filter(|(c, s, _, _, grant)| ports_given || carries_request_after(c, s) || *grant)
        .count() as u64;
    let other_apis: u64 = whole["summary"]["api_keys"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| *name != "AllocateProducerIds")
        .map(|(_, counts)| counts["responses"].as_u64().unwrap())
        .sum();
    let unsure = if other_apis > 0 {
        orphans.len() as u64 - sure + other_apis
    } else {
        0
    };
    let base = whole["summary"][field].as_u64().unwrap_or(0);
    (base + sure, base + sure + unsure)
}

/// The server ports of the whole capture's exchanges, as `--port` arguments.
fn port_args(whole: &Value) -> Vec<String> {
    let ports: std::collections::BTreeSet<String> = whole["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ex| {
            let server = ex["server"].as_str().unwrap();
            server.rsplit(':').next().unwrap().to_owned()
        })
        .collect();
    ports
        .into_iter()
        .flat_map(|p| ["--port".to_owned(), p])
        .collect()
}

/// The compact report of `path`, with `args`.
fn report_with(path: &Path, args: &[String]) -> Value {
    let mut all = vec![path.to_str().expect("a UTF-8 path"), "--compact", "--quiet"];
    all.extend(args.iter().map(String::as_str));
    report(&all)
}

/// The APIs of which the cut report counts more requests or responses than the whole one.
fn api_counts_invented<'a>(whole: &'a Value, cut: &'a Value) -> impl Iterator<Item = String> + 'a {
    let counts = |r: &'a Value, api: &str, what: &str| {
        r["summary"]["api_keys"][api][what].as_u64().unwrap_or(0)
    };
    cut["summary"]["api_keys"]
        .as_object()
        .into_iter()
        .flat_map(|apis| apis.keys())
        .filter(move |api| {
            ["requests", "responses"]
                .iter()
                .any(|what| counts(cut, api, what) > counts(whole, api, what))
        })
        .cloned()
}

/// Faults of the capture cut before each of its packets, read as it comes and with
/// `--port` naming its servers.
pub fn sweep_faults(fixture: &str) -> Vec<String> {
    let path = root().join(fixture);
    let whole = compact_report(&path);
    let ports = port_args(&whole);
    let dir = tempfile::tempdir().unwrap();
    let mut faults = Vec::new();
    for skip in 1..pcap_records(&path).1.len() {
        let cut_path = dir.path().join("cut.pcap");
        std::fs::write(&cut_path, cut_at(&path, skip)).unwrap();
        let first = skip as u64 + 1; // first frame kept, in the whole capture's numbers
        for args in [&[][..], &ports[..]] {
            let cut = report_with(&cut_path, args);
            let place = format!("{fixture} from frame {first} {args:?}");
            let at = (first, None, !args.is_empty());
            faults.extend(cut_faults(&whole, &cut, skip as u64, at, &place));
        }
    }
    faults
}

/// What the report of a capture cut before frame `first` (its frames shifted by `shift`
/// from the whole capture's) gets wrong, against the whole capture's report.
///
/// With `cut_packet`, the capture starts inside that packet (`first` is the one after it):
/// an exchange whose request lies wholly after the cut byte may be kept. Each such one is
/// reported as it was, or not at all (and then its answer is unmatched). `ports_given`:
/// the cut was read with `--port` naming its servers.
fn cut_faults(
    whole_report: &Value,
    report: &Value,
    shift: u64,
    (first, cut_packet, ports_given): (u64, Option<u64>, bool),
    place: &str,
) -> Vec<String> {
    let whole = keyed(whole_report, 0);
    let cut = keyed(report, shift);
    let mut faults = Vec::new();
    let mut kept_from_cut_packet = 0;
    for (key, ex) in &whole {
        let request_frame = ex["request"]["first_frame"].as_u64();
        let wholly_after = request_frame >= Some(first);
        let in_cut_packet = cut_packet.is_some() && request_frame == cut_packet;
        match cut.get(key) {
            None if wholly_after => faults.push(format!("{place}: {key:?} lost")),
            Some(got) if (wholly_after || in_cut_packet) && got != ex => {
                faults.push(format!("{place}: {key:?} is {got}, not {ex}"))
            }
            Some(_) if in_cut_packet => kept_from_cut_packet += 1,
            _ => {}
        }
    }
    for key in cut.keys().filter(|k| !whole.contains_key(*k)) {
        faults.push(format!("{place}: {key:?} invented"));
    }
    faults.extend(
        api_counts_invented(whole_report, report)
            .map(|api| format!("{place}: more {api} messages than in the whole capture")),
    );
    let bounds = [
        (
            "unmatched_responses",
            unmatched_bounds(whole_report, first, ports_given),
        ),
        (
            "unmatched_like_blocks",
            like_block_bounds(whole_report, first, ports_given),
        ),
    ];
    for (field, (least, most)) in bounds {
        // an exchange kept from the cut packet has its answer matched, not an orphan (it
        // may not have granted a block)
        let least = least.saturating_sub(kept_from_cut_packet);
        let most = match field {
            "unmatched_responses" => most.saturating_sub(kept_from_cut_packet),
            _ => most,
        };
        let got = report["summary"][field].as_u64().unwrap_or(0);
        if !(least..=most).contains(&got) {
            faults.push(format!("{place}: {field} {got}, not in {least}..={most}"));
        }
    }
    // a block not compared keeps the verdict from saying all is well
    let like_blocks = report["summary"]["unmatched_like_blocks"].as_u64();
    if like_blocks.is_some() && report["verdict"]["code"] == "correct" {
        faults.push(format!(
            "{place}: correct, with {like_blocks:?} blocks not compared"
        ));
    }
    faults
}

/// The pcap at `path` as if the capture had started `k` bytes into the TCP payload of
/// packet `skip` (0-based): earlier packets dropped, that one's first `k` payload bytes
/// cut off (its sequence number and IP length moved on). Ethernet, IPv4 and TCP only.
fn cut_inside(path: &Path, skip: usize, k: usize) -> Vec<u8> {
    let (mut out, records) = pcap_records(path);
    for (i, (mut head, mut bytes)) in records.into_iter().enumerate().skip(skip) {
        if i == skip {
            let ihl = usize::from(bytes[14] & 0x0f) * 4;
            let tcp = 14 + ihl;
            let payload = tcp + usize::from(bytes[tcp + 12] >> 4) * 4;
            let total = u16::from_be_bytes([bytes[16], bytes[17]]) - k as u16;
            bytes[16..18].copy_from_slice(&total.to_be_bytes());
            let seq = u32::from_be_bytes(bytes[tcp + 4..tcp + 8].try_into().unwrap());
            bytes[tcp + 4..tcp + 8].copy_from_slice(&seq.wrapping_add(k as u32).to_be_bytes());
            bytes.drain(payload..payload + k);
            for field in [8..12, 12..16] {
                let len = u32::from_le_bytes(head[field.clone()].try_into().unwrap()) - k as u32;
                head[field].copy_from_slice(&len.to_le_bytes());
            }
        }
        out.extend_from_slice(&head);
        out.extend_from_slice(&bytes);
    }
    out
}

/// Bytes of TCP payload captured in `bytes`, if it is an Ethernet/IPv4 packet captured
/// whole.
fn payload_len(bytes: &[u8]) -> Option<usize> {
    if bytes.get(12..15)? != [0x08, 0x00, 0x45] {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    let payload = 14 + 20 + usize::from(bytes.get(14 + 20 + 12)? >> 4) * 4;
    (14 + total == bytes.len()).then(|| bytes.len().saturating_sub(payload))
}

/// Captures that start inside an AllocateProducerIds request or response: at several
/// bytes of every packet that carries the first byte of one. The exchange cut is lost (its
/// head is not captured); an answer whose request was cut counts as unmatched; every later
/// exchange is reported as in the whole capture.
#[test]
fn cut_inside_allocate_producer_ids_frames() {
    let mut faults = Vec::new();
    for fixture in MULTI_EXCHANGE_FIXTURES {
        let path = root().join(fixture);
        let whole = compact_report(&path);
        let records = pcap_records(&path).1;
        let starts: std::collections::BTreeSet<u64> = whole["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|ex| ["request", "response"].map(|side| ex[side]["first_frame"].as_u64()))
            .flatten()
            .collect();
        let dir = tempfile::tempdir().unwrap();
        for frame in starts {
            let skip = frame as usize - 1;
            let Some(len) = payload_len(&records[skip].1) else {
                continue;
            };
            for k in [1, 3, 4, 7, 12, len / 2, len - 1] {
                if k == 0 || k >= len {
                    continue;
                }
                let cut_path = dir.path().join("cut.pcap");
                std::fs::write(&cut_path, cut_inside(&path, skip, k)).unwrap();
                let cut = compact_report(&cut_path);
                let place = format!("{fixture} from byte {k} of frame {frame}");
                faults.extend(cut_faults(
                    &whole,
                    &cut,
                    skip as u64,
                    (frame + 1, Some(frame), false),
                    &place,
                ));
            }
        }
    }
    assert!(
        faults.is_empty(),
        "{} faults:\n{}",
        faults.len(),
        faults.join("\n")
    );
}

#[test]
fn every_exchange_after_the_cut_is_reported_as_it_was() {
    let faults: Vec<String> = MULTI_EXCHANGE_FIXTURES
        .iter()
        .flat_map(|f| sweep_faults(f))
        .collect();
    assert!(
        faults.is_empty(),
        "{} faults:\n{}",
        faults.len(),
        faults.join("\n")
    );
}

/// A capture taken with `tcpdump -s 256` of traffic with 168 KiB Fetch responses and
/// Produce requests of hundreds of KB: cut at every packet, so also inside those frames
/// and at their first packet, and inside AllocateProducerIds frames.
#[test]
fn cut_inside_frames_larger_than_the_search_window() {
    let faults = sweep_faults("fixtures/incident/incident-snaplen-256.pcap");
    assert!(
        faults.is_empty(),
        "{} faults:\n{}",
        faults.len(),
        faults.join("\n")
    );
}

/// A capture that starts before an answer to a request it does not hold (256 bytes, as
/// short as the answers read for a block's bytes), with a hole through that answer: the
/// framer's search carries it by its head past the hole, and it is counted as unmatched,
/// not passed over as resynchronised bytes (keeping such answers for their bytes once
/// made the search wait for bytes the hole lost).
#[test]
fn an_unmatched_answer_with_a_hole_through_it_is_still_counted() {
    use crate::common::{apid_pair, framed, Conn, PcapWriter};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hole.pcap");
    let mut w = PcapWriter::create(&path);
    let mut c = Conn::new("10.0.0.2:40000", "10.0.0.1:9092");
    let mut body = 4i32.to_be_bytes().to_vec();
    body.resize(252, 0);
    let orphan = framed(&body);
    assert_eq!(orphan.len(), 256);
    c.send(&mut w, false, &orphan[..24], 1500);
    c.server_seq = c.server_seq.wrapping_add(10); // lost
    let (request, response) = apid_pair(5, 2, 3000);
    c.send(&mut w, true, &request, 1500);
    c.send(
        &mut w,
        false,
        &[&orphan[34..], &response[..]].concat(),
        1500,
    );
    let (request, response) = apid_pair(6, 2, 4000);
    c.send(&mut w, true, &request, 1500);
    c.send(&mut w, false, &response, 1500);
    w.finish();
    let r = report(&[
        path.to_str().unwrap(),
        "--port",
        "9092",
        "--compact",
        "--quiet",
    ]);
    assert_eq!(r["summary"]["unmatched_responses"], 1, "{}", r["verdict"]);
    assert_eq!(r["exchanges"].as_array().unwrap().len(), 2);
}
