//! Cut sweep: every multi-exchange fixture, as if the capture had started at each of its
//! packets (a capture taken during an incident starts in the middle of connections that
//! live for days). Each cut report is checked against the whole capture's: every exchange
//! that lies wholly after the cut is reported with the same fields (frames renumbered) and
//! the same status, none is invented, and responses whose request lies before the cut are
//! counted in `unmatched_responses` (see [`unmatched_bounds`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{compact_report, pcap_records, root, MULTI_EXCHANGE_FIXTURES};

/// The pcap at `path` without its first `skip` packets.
fn cut_at(path: &Path, skip: usize) -> Vec<u8> {
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
/// first frame, response's first frame).
fn responses(report: &Value) -> Vec<(Value, Value, u64, u64)> {
    report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|ex| !ex["response"].is_null())
        .map(|ex| {
            (
                ex["client"].clone(),
                ex["server"].clone(),
                ex["request"]["first_frame"].as_u64().unwrap(),
                ex["response"]["first_frame"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Bounds on `unmatched_responses` of the capture cut before frame `first`. An answer to
/// a request before the cut must be counted when its connection carries a request after
/// the cut (it is Kafka by then); on a connection whose last request is before the cut,
/// the server's lone answers do not make it Kafka (a Thrift-framed server looks the same),
/// so they may be counted or not; so may the answers of APIs the report does not list.
fn unmatched_bounds(whole: &Value, first: u64) -> (u64, u64) {
    let all = responses(whole);
    let carries_request_after = |client: &Value, server: &Value| {
        all.iter()
            .any(|(c, s, req, _)| c == client && s == server && *req >= first)
    };
    let orphans: Vec<_> = all
        .iter()
        .filter(|(_, _, req, resp)| *req < first && *resp >= first)
        .collect();
    let sure = orphans
        .iter()
        .filter(|(c, s, _, _)| carries_request_after(c, s))
        .count() as u64;
    let other_apis: u64 = whole["summary"]["api_keys"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| *name != "AllocateProducerIds")
        .map(|(_, counts)| counts["responses"].as_u64().unwrap())
        .sum();
    let base = whole["summary"]["unmatched_responses"].as_u64().unwrap();
    (base + sure, base + orphans.len() as u64 + other_apis)
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

pub fn sweep_faults(fixture: &str) -> Vec<String> {
    let path = root().join(fixture);
    let whole_report = compact_report(&path);
    let whole = keyed(&whole_report, 0);
    let dir = tempfile::tempdir().unwrap();
    let mut faults = Vec::new();
    for skip in 1..pcap_records(&path).1.len() {
        let cut_path = dir.path().join("cut.pcap");
        std::fs::write(&cut_path, cut_at(&path, skip)).unwrap();
        let report = compact_report(&cut_path);
        let cut = keyed(&report, skip as u64);
        let first = skip as u64 + 1; // first frame kept, in the whole capture's numbers
        for (key, ex) in &whole {
            let wholly_after = ex["request"]["first_frame"].as_u64() >= Some(first);
            match cut.get(key) {
                None if wholly_after => {
                    faults.push(format!("{fixture} from frame {first}: {key:?} lost"))
                }
                Some(got) if wholly_after && got != ex => faults.push(format!(
                    "{fixture} from frame {first}: {key:?} is {got}, not {ex}"
                )),
                _ => {}
            }
        }
        for key in cut.keys().filter(|k| !whole.contains_key(*k)) {
            faults.push(format!("{fixture} from frame {first}: {key:?} invented"));
        }
        faults.extend(api_counts_invented(&whole_report, &report).map(|api| {
            format!("{fixture} from frame {first}: more {api} messages than in the whole capture")
        }));
        let (least, most) = unmatched_bounds(&whole_report, first);
        let got = report["summary"]["unmatched_responses"].as_u64().unwrap();
        if !(least..=most).contains(&got) {
            faults.push(format!(
                "{fixture} from frame {first}: unmatched_responses {got}, not in {least}..={most}"
            ));
        }
    }
    faults
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
