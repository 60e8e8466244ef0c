//! Issue 38, point 2: the controller timeline is evidence with its bounds. On every capture
//! of the real-Kafka rig (each release and scenario, each file of a ring, with and without
//! the controllers' metadata logs), every piece said led is a leader of the controllers'
//! own logs in its epoch (`controller_leaders`, which `scripts/kafka/rig` checks against
//! the `quorum-state` files), within the time it led: never before its election, never
//! after it was killed or resigned. Pieces follow each other without overlap and cover
//! the capture, unknown where nothing proves who led; with the metadata log an epoch starts
//! at its LeaderChange record. The text and the HTML draw the same pieces.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{pidshark, report, root};

/// Slack for the clocks of one host read to the millisecond.
const SLACK_MS: f64 = 1.0;

fn truths() -> Vec<(String, Value)> {
    let dir = root().join("fixtures/kafka-real");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if let Some(stem) = name.strip_suffix(".truth.json") {
            let truth: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            out.push((stem.to_owned(), truth));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 15, "{} rig captures", out.len());
    out
}

/// The capture files of a rig capture, each read on its own: a ring's three, else one.
fn captures(name: &str, truth: &Value) -> Vec<String> {
    let ring: Vec<String> = (0..3)
        .map(|i| format!("fixtures/kafka-real/{name}.{i}.pcap.gz"))
        .filter(|f| root().join(f).exists())
        .collect();
    match ring.is_empty() {
        true => vec![format!(
            "fixtures/kafka-real/{}",
            truth["fixture"].as_str().unwrap()
        )],
        false => ring,
    }
}

fn rfc3339_ms(v: &Value) -> f64 {
    use time::format_description::well_known::Rfc3339;
    let t = time::OffsetDateTime::parse(v.as_str().expect("a time"), &Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1000) as f64 / 1000.0
}

fn ms(v: &Value) -> f64 {
    v.as_f64().expect("a unix time") * 1000.0
}

/// When each (leader, epoch) led by the truth: from its election (the earlier of the
/// controller's log line and its LeaderChange record) to its resignation, its kill, or the
/// controllers' stop.
fn tenures(truth: &Value) -> BTreeMap<(i64, i64), (f64, f64)> {
    let events = truth["events"].as_array().unwrap();
    let at = |e: &Value| e["unix_ms"].as_f64().unwrap();
    let stopped = events
        .iter()
        .find(|e| e["event"] == "controllers stopped")
        .map(at)
        .expect("the rig stops the controllers");
    let mut out = BTreeMap::new();
    for l in truth["controller_leaders"].as_array().unwrap() {
        let (id, epoch) = (
            l["leader_id"].as_i64().unwrap(),
            l["epoch"].as_i64().unwrap(),
        );
        let killed = events
            .iter()
            .filter(|e| e["event"].as_str().unwrap().starts_with("kill"))
            .find(|e| e["leader"] == serde_json::json!([id, epoch]))
            .map(at);
        let start = l["from_ms"]
            .as_f64()
            .unwrap()
            .min(l["leader_change_record_ms"].as_f64().unwrap());
        let end = [killed, l["resigned_ms"].as_f64(), Some(stopped)]
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, f64::min);
        out.insert((id, epoch), (start, end));
    }
    out
}

/// The controller id of a controller's listener port, by the truth.
fn controller_of_port(truth: &Value, port: u16) -> Option<i64> {
    let ids = truth["controller_ids"].as_array().unwrap();
    let ports = truth["controller_ports"].as_array().unwrap();
    ids.iter()
        .zip(ports)
        .find(|(_, p)| p.as_u64() == Some(u64::from(port)))
        .and_then(|(id, _)| id.as_i64())
}

fn check(name: &str, truth: &Value, r: &Value, with_log: bool) -> usize {
    let pieces = r["controller_timeline"]
        .as_array()
        .expect("controller_timeline");
    assert!(!pieces.is_empty(), "{name}: no piece");
    // contiguous, and over the capture
    for pair in pieces.windows(2) {
        assert_eq!(pair[0]["to_unix_time"], pair[1]["from_unix_time"], "{name}");
        if pair[0]["state"] == "unknown" {
            assert_eq!(pair[1]["state"], "led", "{name}: two unknown pieces");
        }
    }
    let first = rfc3339_ms(&r["captures"][0]["first_timestamp"]);
    let last = rfc3339_ms(&r["captures"][0]["last_timestamp"]);
    // (unix times are floats: equal to a few nanoseconds)
    assert!(ms(&pieces[0]["from_unix_time"]) <= first + 1e-3, "{name}");
    assert!(
        ms(&pieces[pieces.len() - 1]["to_unix_time"]) >= last - 1e-3,
        "{name}"
    );
    let tenures = tenures(truth);
    let changes: BTreeMap<i64, f64> = truth["controller_leaders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["epoch"].as_i64().unwrap(),
                l["leader_change_record_ms"].as_f64().unwrap(),
            )
        })
        .collect();
    let mut led = 0;
    for p in pieces.iter().filter(|p| p["state"] == "led") {
        led += 1;
        let id = p["leader_id"].as_i64().or_else(|| {
            let address = p["leader_address"].as_str()?;
            let port = address.rsplit(':').next()?.parse().ok()?;
            controller_of_port(truth, port)
        });
        let id = id.unwrap_or_else(|| panic!("{name}: a leader not of the cluster: {p}"));
        let (from, to) = (ms(&p["from_unix_time"]), ms(&p["to_unix_time"]));
        let within = |(start, end): &(f64, f64)| from >= start - SLACK_MS && to <= end + SLACK_MS;
        match p["epoch"].as_i64() {
            Some(epoch) => {
                let tenure = tenures
                    .get(&(id, epoch))
                    .unwrap_or_else(|| panic!("{name}: {id} did not lead epoch {epoch}: {p}"));
                assert!(within(tenure), "{name}: {p} outside {tenure:?}");
                if with_log {
                    assert_eq!(p["from_source"], "metadata_log", "{name}: {p}");
                    let change = changes[&epoch];
                    assert!((from - change).abs() <= SLACK_MS, "{name}: {p} vs {change}");
                }
            }
            // an epoch the capture did not show: one of the controller's tenures
            None => assert!(
                tenures
                    .iter()
                    .any(|((leader, _), tenure)| *leader == id && within(tenure)),
                "{name}: {p}"
            ),
        }
    }
    led
}

fn log_args(truth: &Value) -> Vec<String> {
    truth["metadata_log_dirs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| {
            [
                "--metadata-log".to_owned(),
                format!("fixtures/kafka-real/{}", d.as_str().unwrap()),
            ]
        })
        .collect()
}

#[test]
fn every_piece_led_is_a_leader_of_the_controllers_logs_while_it_led() {
    let mut led = 0;
    for (name, truth) in truths() {
        for capture in captures(&name, &truth) {
            for with_log in [false, true] {
                let mut args = vec![
                    capture.clone(),
                    "--quiet".to_owned(),
                    "--no-producer-entries".to_owned(),
                ];
                if with_log {
                    args.extend(log_args(&truth));
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let r = report(&args);
                let n = check(&format!("{capture} log={with_log}"), &truth, &r, with_log);
                assert!(n > 0, "{capture}: every rig capture shows a leader");
                led += n;
            }
        }
    }
    assert!(led >= 50, "{led} pieces checked");
}

/// The leader killed in the controller-kill scenarios: its piece ends before the kill,
/// and the time until its successor is proven is unknown.
#[test]
fn a_killed_leader_is_never_drawn_past_its_death() {
    for release in ["3.9.1", "4.4.0"] {
        let name = format!("{release}-controller-kill");
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("fixtures/kafka-real/{name}.truth.json")))
                .unwrap(),
        )
        .unwrap();
        let kill = truth["events"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["event"] == "kill -9 active controller")
            .expect("a kill");
        let (killed, epoch) = (kill["leader"][0].as_i64(), kill["leader"][1].as_i64());
        let r = report(&[
            &format!("fixtures/kafka-real/{name}.pcap.gz"),
            "--quiet",
            "--no-producer-entries",
        ]);
        let pieces = r["controller_timeline"].as_array().unwrap();
        let at = pieces
            .iter()
            .position(|p| p["leader_id"].as_i64() == killed && p["epoch"].as_i64() == epoch)
            .unwrap_or_else(|| panic!("{name}: no piece of the killed leader"));
        assert!(ms(&pieces[at]["to_unix_time"]) < kill["unix_ms"].as_f64().unwrap());
        assert_eq!(pieces[at + 1]["state"], "unknown", "{name}");
        assert_eq!(pieces[at + 2]["state"], "led", "{name}");
        assert_ne!(pieces[at + 2]["leader_id"].as_i64(), killed, "{name}");
    }
}

/// The text line and the HTML lane draw the pieces of the report, unknown ones as such.
#[test]
fn text_and_html_draw_the_same_pieces() {
    let capture = "fixtures/kafka-real/4.4.0-controller-kill.pcap.gz";
    let r = report(&[capture, "--quiet", "--no-producer-entries"]);
    let pieces = r["controller_timeline"].as_array().unwrap();
    let count = |state: &str| pieces.iter().filter(|p| p["state"] == state).count();
    let (led, unknown) = (count("led"), count("unknown"));
    assert!(led >= 2 && unknown >= 2, "{pieces:?}");
    let text = pidshark()
        .args([capture, "--format", "text", "--quiet"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("controllers"))
        .expect("a controllers line");
    assert_eq!(line.matches(" led ").count(), led, "{line}");
    assert_eq!(line.matches("unknown ").count(), unknown, "{line}");
    for p in pieces.iter().filter(|p| p["state"] == "led") {
        let day = &p["from_timestamp"].as_str().unwrap()[11..23];
        let who = format!("{} (epoch {}) led {day}", p["leader_id"], p["epoch"]);
        assert!(line.contains(&who), "{who} in {line}");
    }
    let html = pidshark()
        .args([capture, "--format", "html", "--quiet"])
        .output()
        .unwrap();
    let html = String::from_utf8(html.stdout).unwrap();
    assert_eq!(html.matches("<g class=\"controller led\">").count(), led);
    assert_eq!(
        html.matches("<g class=\"controller unknown\">").count(),
        unknown
    );
}
