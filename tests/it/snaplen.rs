//! Snaplen sweep: every multi-exchange fixture, rewritten as `tcpdump -s N` would have
//! captured it, for every N from 64 to 256 bytes and a few larger ones. Each cut report is
//! checked against the whole one: no exchange is invented, every field given has the
//! whole capture's value, a body field is missing only where the message says its bytes
//! were not all captured, and from the snaplen where every Kafka head fits (80 bytes on
//! these Ethernet captures with TCP timestamps) every exchange is there with its frames,
//! correlation id, size and status, except those whose head lies beyond the snaplen
//! ([`HEAD_NOT_CAPTURED_BELOW`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{compact_report, pcap_records, root, MULTI_EXCHANGE_FIXTURES};

/// Smallest snaplen that keeps every Kafka head here: Ethernet 14 + IPv4 20 + TCP with
/// timestamps 32, then the 14-byte request head (size, key, version, correlation id,
/// client id length).
const ALL_HEADS_FIT: usize = 80;

/// The pcap file at `path` as captured with `snaplen`: each record cut to that length.
pub fn with_snaplen(path: &Path, snaplen: usize) -> Vec<u8> {
    let (mut out, records) = pcap_records(path);
    out[16..20].copy_from_slice(&(snaplen as u32).to_le_bytes());
    for (mut head, bytes) in records {
        let kept = bytes.len().min(snaplen);
        head[8..12].copy_from_slice(&(kept as u32).to_le_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(&bytes[..kept]);
    }
    out
}

/// Exchanges by (connection, correlation id, request frame).
fn by_key(report: &Value) -> BTreeMap<(u64, i64, u64), Value> {
    report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ex| {
            let key = (
                ex["connection"].as_u64().unwrap(),
                ex["correlation_id"].as_i64().unwrap(),
                ex["request"]["frame"].as_u64().unwrap(),
            );
            (key, ex.clone())
        })
        .collect()
}

/// What is wrong with `cut` (a message of the cut capture) against `whole`.
fn message_faults(what: &str, cut: &Value, whole: &Value, faults: &mut Vec<String>) {
    let partial = cut.get("bytes_not_captured").is_some();
    for (field, value) in whole.as_object().unwrap() {
        if field == "decode_error" {
            continue;
        }
        match cut.get(field) {
            Some(v) if v == value => {}
            Some(v) => faults.push(format!("{what}.{field}: {v} instead of {value}")),
            None if partial => {}
            None => faults.push(format!("{what}.{field} missing, not flagged")),
        }
    }
    if let Some(field) = cut.as_object().unwrap().keys().find(|f| {
        whole.get(f.as_str()).is_none()
            && !["bytes_not_captured", "decode_error"].contains(&f.as_str())
    }) {
        faults.push(format!("{what}.{field} given, not in the whole capture"));
    }
}

/// Exchanges of `controller-loopback` whose request head is not in the capture below a
/// snaplen: (connection, correlation id, request frame) and that snaplen. Frame 34 carries
/// requests 10 and 11, so 11's head is bytes 28..42 of its payload (Ethernet, IPv4 and TCP
/// with timestamps take 66 bytes before it: -s 108); request 30 is on the IPv6 connection,
/// whose headers take 86 bytes (-s 100).
const HEAD_NOT_CAPTURED_BELOW: [((u64, i64, u64), usize); 2] =
    [((1, 11, 34), 108), ((3, 30, 60), 100)];

fn head_captured(key: &(u64, i64, u64), snaplen: usize) -> bool {
    HEAD_NOT_CAPTURED_BELOW
        .iter()
        .all(|(k, below)| k != key || snaplen >= *below)
}

fn sweep_faults(fixture: &str, snaplens: impl Iterator<Item = usize>) -> Vec<String> {
    let whole = by_key(&compact_report(&root().join(fixture)));
    assert!(whole.len() > 1, "{fixture} has several exchanges");
    let dir = tempfile::tempdir().unwrap();
    let mut faults = Vec::new();
    for snaplen in snaplens {
        let path = dir.path().join(format!("s{snaplen}.pcap"));
        std::fs::write(&path, with_snaplen(&root().join(fixture), snaplen)).unwrap();
        let cut = by_key(&compact_report(&path));
        let mut here = Vec::new();
        for (key, ex) in &cut {
            let Some(full) = whole.get(key) else {
                here.push(format!("invented exchange {key:?}"));
                continue;
            };
            if ex["status"] != full["status"] {
                here.push(format!(
                    "{key:?}: status {} instead of {}",
                    ex["status"], full["status"]
                ));
            }
            message_faults("request", &ex["request"], &full["request"], &mut here);
            if let (Some(_), Some(_)) = (ex["response"].as_object(), full["response"].as_object()) {
                message_faults("response", &ex["response"], &full["response"], &mut here);
            }
        }
        if snaplen >= ALL_HEADS_FIT {
            let lost = whole
                .keys()
                .filter(|k| !cut.contains_key(k) && head_captured(k, snaplen));
            for key in lost {
                here.push(format!("exchange {key:?} lost"));
            }
        }
        faults.extend(
            here.into_iter()
                .map(|f| format!("{fixture} -s {snaplen}: {f}")),
        );
    }
    faults
}

fn snaplens() -> impl Iterator<Item = usize> {
    (64..=256).chain([300, 512, 1500])
}

#[test]
fn controller_loopback_at_every_snaplen() {
    let faults = sweep_faults(MULTI_EXCHANGE_FIXTURES[0], snaplens());
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn analysis_fixtures_at_every_snaplen() {
    let faults: Vec<String> = MULTI_EXCHANGE_FIXTURES[1..]
        .iter()
        .flat_map(|f| sweep_faults(f, snaplens()))
        .collect();
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn a_cut_body_is_flagged_and_its_fields_are_absent() {
    // At 88 bytes the 14-byte head and a few body bytes of each request are kept.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s88.pcap");
    std::fs::write(
        &path,
        with_snaplen(&root().join(MULTI_EXCHANGE_FIXTURES[0]), 88),
    )
    .unwrap();
    let report = compact_report(&path);
    let flagged: Vec<&Value> = report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|ex| ex["request"].get("bytes_not_captured").is_some())
        .collect();
    assert!(!flagged.is_empty(), "cut requests are flagged");
    for ex in flagged {
        assert!(ex["request"].get("broker_epoch").is_none(), "{ex}");
        assert!(ex["request"]["decode_error"]
            .as_str()
            .unwrap()
            .contains("not all in the capture"));
    }
    assert!(report["summary"]["diagnostics"]["kafka_message_truncated"].as_u64() > Some(0));
    assert!(report["summary"]["diagnostics"]
        .get("kafka_decode_error")
        .is_none());
}

/// A real capture cut at 128 bytes (issue 38: the headline counted every cut message as
/// AllocateProducerIds): each `kafka_message_truncated` names the API its message really
/// is, the one the whole capture's report reads at that frame and correlation id
/// (AllocateProducerIds as an exchange, InitProducerId as a producer entry; those agree
/// with tshark in `kafka_real`), and the headline counts the cut messages per API as the
/// diagnostics do.
#[test]
fn a_real_capture_cut_at_128_bytes_names_each_cut_message_by_its_api() {
    let dir = tempfile::tempdir().unwrap();
    let gz = "fixtures/kafka-real/4.4.0-controller-kill.pcap.gz";
    let whole = crate::common::gunzipped(gz, dir.path(), "whole.pcap");
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, with_snaplen(&whole, 128)).unwrap();
    let whole = compact_report(&whole);
    let cut = compact_report(&cut);
    // (connection, frame, correlation id) -> API, of the messages the whole capture
    // decodes: correlation ids count per connection, and the cut capture numbers its
    // connections as the whole one does
    let mut apis: BTreeMap<(u64, u64, i64), i64> = BTreeMap::new();
    for ex in whole["exchanges"].as_array().unwrap() {
        let conn = ex["connection"].as_u64().unwrap();
        for side in ["request", "response"] {
            if let Some(frame) = ex[side]["frame"].as_u64() {
                apis.insert((conn, frame, ex["correlation_id"].as_i64().unwrap()), 67);
            }
        }
    }
    for e in whole["producer_ids"]["entries"].as_array().unwrap() {
        let conn = e["connection"].as_u64().unwrap();
        let corr = e["correlation_id"].as_i64().unwrap();
        for frame in [&e["request_frame"], &e["response_frame"]] {
            if let Some(frame) = frame.as_u64() {
                apis.insert((conn, frame, corr), 22);
            }
        }
    }
    let mut per_api: BTreeMap<i64, u64> = BTreeMap::new();
    let mut faults = Vec::new();
    for d in cut["diagnostics"].as_array().unwrap() {
        if d["kind"] != "kafka_message_truncated" {
            continue;
        }
        let api = d["facts"]["api_key"].as_i64().unwrap();
        *per_api.entry(api).or_default() += 1;
        let key = (
            d["connection"].as_u64().unwrap(),
            d["frame"].as_u64().unwrap(),
            d["facts"]["correlation_id"].as_i64().unwrap(),
        );
        // a message is cut in the packet that completes it, or earlier: look for the
        // whole capture's message of that correlation id on its connection near the frame
        let near = (key.0, key.1.saturating_sub(50), i64::MIN)..=(key.0, key.1 + 50, i64::MAX);
        let whole_api = apis
            .range(near)
            .find(|((_, _, corr), _)| *corr == key.2)
            .map(|(_, api)| *api);
        let named_right = match whole_api {
            Some(whole_api) => whole_api == api,
            None => api != 67 && api != 22,
        };
        if !named_right {
            faults.push(format!("{key:?}: {} (whole: {whole_api:?})", d["message"]));
        }
    }
    assert!(
        faults.is_empty(),
        "{} misnamed, first {:?}",
        faults.len(),
        &faults[..faults.len().min(3)]
    );
    assert!(per_api.get(&22).copied().unwrap_or(0) > 100, "{per_api:?}");
    assert!(per_api.len() >= 3, "{per_api:?}");
    let headline = cut["verdict"]["headline"].as_str().unwrap();
    for api in [67, 22] {
        let name = if api == 67 {
            "AllocateProducerIds"
        } else {
            "InitProducerId"
        };
        let n = per_api.get(&api).copied().unwrap_or(0);
        assert!(
            headline.contains(&format!(" {n} {name}")),
            "{headline}: {per_api:?}"
        );
    }
    let total: u64 = per_api.values().sum();
    assert!(
        headline.contains(&format!(
            "({total} messages pidshark reads not fully captured: "
        )),
        "{headline}"
    );
}

/// Frames the snaplen cut in `capture`, by tshark: captured shorter than on the wire.
/// Only the frame's own fields are asked for: with Ethernet's dissector (and so all above
/// it) turned off, tshark reads a cut capture ten times faster, to the same frames.
fn tshark_cut_frames(capture: &Path) -> std::collections::BTreeSet<u64> {
    let out = std::process::Command::new("tshark")
        .args(["-r", capture.to_str().unwrap(), "-n"])
        .args(["--disable-protocol", "eth"])
        .args([
            "-Y",
            "frame.cap_len < frame.len",
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("tshark runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Issue 38, point 1: the snaplen headline's count of AllocateProducerIds messages not
/// fully captured is Wireshark's: of the messages tshark reads in the whole capture, those
/// whose packet tshark shows cut in the capture cut at 128 bytes (each release's
/// controller kill). (tshark pairs none of the cut capture's AllocateProducerIds answers,
/// though their packets are whole: its reassembly gives up on a stream after a cut
/// packet, so its own reading of the cut file is no measure.)
#[test]
fn the_headlines_allocate_producer_ids_count_is_the_messages_wireshark_shows_cut() {
    if !crate::wireshark::have_tshark() {
        return;
    }
    for release in ["3.9.1", "4.4.0"] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("{release}-controller-kill");
        let gz = format!("fixtures/kafka-real/{name}.pcap.gz");
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("fixtures/kafka-real/{name}.truth.json")))
                .unwrap(),
        )
        .unwrap();
        let ports = crate::kafka_real::ports(&truth);
        let whole = crate::common::gunzipped(&gz, dir.path(), "whole.pcap");
        let (requests, responses) =
            crate::wireshark::tshark_frames_of(whole.to_str().unwrap(), &ports, "67");
        assert!(requests.len() + responses.len() > 80, "{name}");
        // 128: every AllocateProducerIds message fits; 90: responses (24 bytes after 66
        // of headers) do not
        for snaplen in [128, 90] {
            let cut = dir.path().join(format!("cut-{snaplen}.pcap"));
            std::fs::write(&cut, with_snaplen(&whole, snaplen)).unwrap();
            let cut_frames = tshark_cut_frames(&cut);
            assert!(cut_frames.len() > 1000, "{name}: {}", cut_frames.len());
            let lost = requests
                .union(&responses)
                .filter(|(frame, _, _)| cut_frames.contains(frame))
                .count();
            let report = compact_report(&cut);
            let headline = report["verdict"]["headline"].as_str().unwrap();
            assert!(
                headline.contains(&format!(" not fully captured: {lost} AllocateProducerIds")),
                "{name} at {snaplen}: tshark shows {lost} cut: {headline}"
            );
        }
    }
}

/// The verdict's cost of `kind` in `report`: its count, and that the headline says it.
fn cost(report: &Value, kind: &str) -> Option<u64> {
    let costs = report["verdict"]["cost"].as_array()?;
    let c = costs.iter().find(|c| c["kind"] == kind)?;
    let headline = report["verdict"]["headline"].as_str().unwrap();
    assert!(headline.contains(c["text"].as_str().unwrap()), "{headline}");
    c["count"].as_u64()
}

/// Issue 38, point 1: the verdict says what the snaplen cost the answer. Each release's
/// controller kill, cut at 128 bytes as `tcpdump -s 128` would. The rig's load was granted
/// the truth's producer ids, all of which the whole capture reads; the cut one reads far
/// fewer, and the verdict says why: the requests of responses it could not pair (none in
/// the whole capture). The whole capture names the broker of every grant and the rig's
/// leaders by id and epoch; the cut one names neither, and the verdict counts what it
/// lost of each. The whole capture, with nothing lost, has no cost at all.
#[test]
fn the_verdict_says_what_the_snaplen_cost_the_answer() {
    for release in ["3.9.1", "4.4.0"] {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("{release}-controller-kill");
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("fixtures/kafka-real/{name}.truth.json")))
                .unwrap(),
        )
        .unwrap();
        let granted_by_truth = truth["client_producer_ids"].as_array().unwrap().len() as u64;
        let leaders: Vec<(i64, i64)> = truth["controller_leaders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["leader_id"].as_i64().unwrap(),
                    l["epoch"].as_i64().unwrap(),
                )
            })
            .collect();
        let whole = crate::common::gunzipped(
            &format!("fixtures/kafka-real/{name}.pcap.gz"),
            dir.path(),
            "whole.pcap",
        );
        let cut = dir.path().join("cut.pcap");
        std::fs::write(&cut, with_snaplen(&whole, 128)).unwrap();
        let (whole, cut) = (compact_report(&whole), compact_report(&cut));
        let led = |r: &Value| -> Vec<Value> {
            r["controller_timeline"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["state"] == "led")
                .cloned()
                .collect()
        };

        // what the whole capture shows, from the truth
        let p = &whole["producer_ids"]["summary"];
        assert_eq!(p["granted"], granted_by_truth, "{name}");
        assert_eq!(p["broker_unknown"], 0, "{name}");
        assert_eq!(whole["summary"]["unmatched_responses"], 0, "{name}");
        for piece in led(&whole) {
            let named = (
                piece["leader_id"].as_i64().unwrap(),
                piece["epoch"].as_i64().unwrap(),
            );
            assert!(leaders.contains(&named), "{name}: {piece}");
        }
        assert!(whole["verdict"].get("cost").is_none(), "{name}");

        // and what the cut one says it lost
        let p = &cut["producer_ids"]["summary"];
        assert!(
            p["granted"].as_u64().unwrap() < granted_by_truth / 2,
            "{name}: {p}"
        );
        let unmatched = cut["summary"]["unmatched_responses"].as_u64().unwrap();
        assert!(unmatched > 1000, "{name}");
        assert_eq!(cost(&cut, "requests_not_read"), Some(unmatched), "{name}");
        let unknown = p["broker_unknown"].as_u64().unwrap();
        assert_eq!(unknown, p["exchanges"].as_u64().unwrap(), "{name}");
        assert_eq!(cost(&cut, "brokers_unknown"), Some(unknown), "{name}");
        let unnamed = led(&cut)
            .iter()
            .filter(|p| p["leader_id"].is_null() || p["epoch"].is_null())
            .count() as u64;
        assert!(unnamed > 0, "{name}");
        assert_eq!(cost(&cut, "leaders_unnamed"), Some(unnamed), "{name}");
    }
}
