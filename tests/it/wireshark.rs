//! Agreement with Wireshark: for every fixture, each Kafka AllocateProducerIds frame that
//! both tools see has the same frame number, connection number (`tcp.stream`) and
//! correlation id. Needs `tshark` (`.ci/run` installs it from Debian's packages).
//!
//! Wireshark 4.0 (Debian 12) decodes Kafka headers up to the correlation id for every API
//! key, even the ones it does not know (67 shows as "Unknown 67"), which is all we compare.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::common::{fixture, have_program, report, root};

/// Whether tshark is here; without it (and without `CI`) each test here skips.
pub fn have_tshark() -> bool {
    have_program(
        "tshark",
        "the Wireshark agreement tests",
        "apt-get install tshark (Debian, Ubuntu), brew install wireshark (macOS)",
    )
}

/// (frame, tcp.stream, correlation id) of each message.
pub type Messages = BTreeSet<(u64, u64, i64)>;

/// (frame, tcp.stream, correlation id) of Wireshark's Kafka frames, split into requests
/// with API key 67 and responses whose request frame is one of those.
fn tshark_frames(capture: &str, port: u16) -> (Messages, Messages) {
    tshark_frames_on(capture, &[port])
}

/// [`tshark_frames`] with Kafka decoded on each of `ports`.
pub fn tshark_frames_on(capture: &str, ports: &[u16]) -> (Messages, Messages) {
    tshark_frames_of(capture, ports, "67")
}

/// [`tshark_frames_on`] for requests of API key `key` and their responses.
pub fn tshark_frames_of(capture: &str, ports: &[u16], key: &str) -> (Messages, Messages) {
    tshark_frames_of_keys(capture, ports, &[key]).remove(0)
}

/// tshark's arguments that read `ports` as Kafka.
pub fn decode_as(ports: &[u16]) -> Vec<String> {
    ports
        .iter()
        .flat_map(|port| ["-d".to_owned(), format!("tcp.port=={port},kafka")])
        .collect()
}

/// [`tshark_frames_of`] for each of `keys`, from one run of tshark.
pub fn tshark_frames_of_keys(
    capture: &str,
    ports: &[u16],
    keys: &[&str],
) -> Vec<(Messages, Messages)> {
    let text = tshark_kafka_lines(capture, ports);
    keys.iter().map(|key| of_key(&text, key)).collect()
}

/// tshark's line for each of `capture`'s frames that holds Kafka on `ports`: frame number,
/// `tcp.stream`, then each message's request API key (empty in a response), correlation id
/// and, in a response, its request's frame, `;` between a frame's messages. One run of
/// tshark a capture and set of ports for the whole test run: several tests ask the same of
/// the real captures, a few seconds of tshark each. A file rewritten at the same path
/// (its length or time changed) is read again.
pub fn tshark_kafka_lines(capture: &str, ports: &[u16]) -> Arc<String> {
    type Key = (String, u64, Option<std::time::SystemTime>, Vec<u16>);
    static RUNS: Mutex<BTreeMap<Key, Arc<OnceLock<Arc<String>>>>> = Mutex::new(BTreeMap::new());
    let file = std::fs::metadata(capture).unwrap_or_else(|e| panic!("{capture}: {e}"));
    let run = RUNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry((
            capture.to_owned(),
            file.len(),
            file.modified().ok(),
            ports.to_vec(),
        ))
        .or_default()
        .clone();
    // tests asking for the same capture at once wait for the first one's run
    run.get_or_init(|| Arc::new(run_tshark_kafka_lines(capture, ports)))
        .clone()
}

fn run_tshark_kafka_lines(capture: &str, ports: &[u16]) -> String {
    let out = Command::new("tshark")
        .args(["-r", capture, "-n"])
        .args(decode_as(ports))
        .args(["-o", "tcp.reassemble_out_of_order:TRUE"])
        .args([
            "-Y",
            "kafka",
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "aggregator=;",
        ])
        .args([
            "-e",
            "frame.number",
            "-e",
            "tcp.stream",
            "-e",
            "kafka.request_key",
        ])
        .args(["-e", "kafka.correlation_id", "-e", "kafka.request_frame"])
        .output()
        .expect("tshark runs (have_tshark checked it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // tshark exits 2 on a file cut inside a packet, after printing what it read.
    assert!(
        out.status.success() || stderr.contains("cut short"),
        "tshark failed: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One of [`tshark_kafka_lines`]'s lines: a frame's Kafka messages.
pub struct KafkaFrame<'a> {
    pub frame: u64,
    pub stream: u64,
    /// Its requests' API keys, `;` between them; empty in a frame of responses.
    pub keys: &'a str,
    /// Each message's correlation id.
    pub correlation_ids: Vec<i64>,
    /// In a frame of responses, each one's request frame, `;` between them.
    pub request_frames: &'a str,
}

impl KafkaFrame<'_> {
    /// (API key, correlation id) of each request of the frame.
    pub fn requests(&self) -> impl Iterator<Item = (&str, i64)> + '_ {
        let keys = self.keys.split(';').filter(|_| !self.keys.is_empty());
        keys.zip(self.correlation_ids.iter().copied())
    }
}

/// [`tshark_kafka_lines`]'s lines, read.
pub fn kafka_frames(text: &str) -> impl Iterator<Item = KafkaFrame<'_>> {
    text.lines().map(|line| {
        let cols: Vec<&str> = line.split('\t').collect();
        let [frame, stream, keys, corrs, request_frames] = cols[..] else {
            panic!("unexpected tshark line {line:?}");
        };
        KafkaFrame {
            frame: frame.parse().unwrap(),
            stream: stream.parse().unwrap(),
            keys,
            correlation_ids: corrs
                .split(';')
                .filter(|c| !c.is_empty())
                .map(|c| c.parse().unwrap())
                .collect(),
            request_frames,
        }
    })
}

/// Requests of API key `key` in tshark's lines, and the responses to them.
fn of_key(text: &str, key: &str) -> (Messages, Messages) {
    let mut requests = BTreeSet::new();
    let mut responses = Vec::new();
    for f in kafka_frames(text) {
        if !f.keys.is_empty() {
            for (their_key, corr) in f.requests() {
                if their_key == key {
                    requests.insert((f.frame, f.stream, corr));
                }
            }
        } else {
            for (req_frame, corr) in f.request_frames.split(';').zip(&f.correlation_ids) {
                if let Ok(req_frame) = req_frame.parse::<u64>() {
                    responses.push((f.frame, f.stream, *corr, req_frame));
                }
            }
        }
    }
    let responses = responses
        .into_iter()
        .filter(|(_, stream, corr, req_frame)| requests.contains(&(*req_frame, *stream, *corr)))
        .map(|(frame, stream, corr, _)| (frame, stream, corr))
        .collect();
    (requests, responses)
}

pub fn ours(report: &Value) -> (Messages, Messages) {
    let mut requests = BTreeSet::new();
    let mut responses = BTreeSet::new();
    for ex in report["exchanges"].as_array().unwrap() {
        let conn = ex["connection"].as_u64().unwrap();
        let corr = ex["correlation_id"].as_i64().unwrap();
        requests.insert((ex["request"]["frame"].as_u64().unwrap(), conn, corr));
        if let Some(frame) = ex["response"]["frame"].as_u64() {
            responses.insert((frame, conn, corr));
        }
    }
    (requests, responses)
}

fn check(name: &str, port: u16) {
    if !have_tshark() {
        return;
    }
    let path = fixture(&format!("{name}.pcap"));
    let (their_req, their_resp) = tshark_frames(path.to_str().unwrap(), port);
    let (our_req, our_resp) = ours(&report(&[&format!("fixtures/{name}.pcap")]));
    assert_eq!(
        our_req, their_req,
        "{name}: AllocateProducerIds requests (frame, tcp.stream, correlation id)"
    );
    assert_eq!(our_resp, their_resp, "{name}: their responses");
}

#[test]
fn seed_agrees_with_wireshark() {
    check("seed-v0", 9093);
}

#[test]
fn controller_loopback_agrees_with_wireshark() {
    check("controller-loopback", 19093);
}

#[test]
fn truncated_agrees_with_wireshark() {
    check("truncated", 19093);
}

fn triples(value: &Value) -> Messages {
    value
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| Some((r[0].as_u64()?, r[1].as_u64()?, r[2].as_i64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Every single-file capture variant: our frames equal Wireshark's, except where its truth
/// records a difference on purpose. Those are of two kinds: exchanges pidshark recovers
/// and Wireshark 4.0 loses after a gap or a mid-stream start (`*_only_in_truth`), and
/// messages only Wireshark finds (`*_only_in_wireshark`; none at present: a message cut
/// by snaplen is reported with what was captured, as Wireshark dissects it).
#[test]
fn capture_variants_agree_with_wireshark() {
    if !have_tshark() {
        return;
    }
    let mut failures = Vec::new();
    for (name, files, truth) in crate::variants::variants() {
        let [file] = files.as_slice() else {
            continue; // tshark reads one file at a time
        };
        let port = truth["kafka_port"].as_u64().unwrap_or(9092) as u16;
        let path = root().join(file);
        let (their_req, their_resp) = tshark_frames(path.to_str().unwrap(), port);
        let (our_req, our_resp) = ours(&report(&[file.as_str()]));
        let diff = &truth["wireshark"]["differences"];
        let expect = |theirs: Messages, ours_only: &str, theirs_only: &str| -> Messages {
            let mut want: Messages = theirs
                .difference(&triples(&diff[theirs_only]))
                .copied()
                .collect();
            want.extend(triples(&diff[ours_only]));
            want
        };
        let want_req = expect(
            their_req,
            "requests_only_in_truth",
            "requests_only_in_wireshark",
        );
        let want_resp = expect(
            their_resp,
            "responses_only_in_truth",
            "responses_only_in_wireshark",
        );
        if our_req != want_req {
            failures.push(format!(
                "{name}: requests {our_req:?}, expected {want_req:?}"
            ));
        }
        if our_resp != want_resp {
            failures.push(format!(
                "{name}: responses {our_resp:?}, expected {want_resp:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every time the report gives (exchanges' messages, blocks, findings, diagnostics) is
/// Wireshark's `frame.time_epoch` of the frame it is given for, to the microsecond.
#[test]
fn every_time_in_the_report_is_wiresharks_time_of_its_frame() {
    if !have_tshark() {
        return;
    }
    for capture in [
        "fixtures/truncated.pcap",
        "fixtures/controller-loopback.pcap",
        "fixtures/analysis/failover-regression.pcap",
    ] {
        let out = Command::new("tshark")
            .args([
                "-r",
                capture,
                "-T",
                "fields",
                "-e",
                "frame.number",
                "-e",
                "frame.time_epoch",
            ])
            .current_dir(root())
            .output()
            .expect("tshark runs");
        let epoch: BTreeMap<u64, f64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (n, t) = l.split_once('\t')?;
                Some((n.parse().ok()?, t.parse().ok()?))
            })
            .collect();
        assert!(!epoch.is_empty(), "{capture}: tshark read no frames");
        let report = report(&[capture]);
        let mut times: Vec<(String, u64, f64)> = Vec::new();
        let mut take = |what: &str, frame: &Value, time: &Value| {
            if let (Some(frame), Some(time)) = (frame.as_u64(), time.as_f64()) {
                times.push((what.to_owned(), frame, time));
            }
        };
        for ex in report["exchanges"].as_array().unwrap() {
            take(
                "request",
                &ex["request"]["frame"],
                &ex["request"]["unix_time"],
            );
            take(
                "response",
                &ex["response"]["frame"],
                &ex["response"]["unix_time"],
            );
        }
        for b in report["producer_id_blocks"]["blocks"].as_array().unwrap() {
            take("block", &b["response_frame"], &b["unix_time"]);
        }
        for f in report["producer_id_blocks"]["findings"].as_array().unwrap() {
            take("finding", &f["facts"]["frame"], &f["unix_time"]);
        }
        for d in report["diagnostics"].as_array().unwrap() {
            take(d["kind"].as_str().unwrap(), &d["frame"], &d["unix_time"]);
        }
        assert!(times.len() > 3, "{capture}: times to check");
        for (what, frame, time) in times {
            let theirs = epoch[&frame];
            assert!(
                (time - theirs).abs() < 1e-6,
                "{capture}: {what} at frame {frame}: {time} vs Wireshark's {theirs}"
            );
        }
    }
}

/// The frames a `frame.number in {...}` filter names: its members and ranges.
fn named_frames(filter: &str) -> BTreeSet<u64> {
    let set = filter
        .strip_prefix("frame.number in {")
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a frame filter: {filter}"));
    let mut frames = BTreeSet::new();
    for member in set.split(", ") {
        match member.split_once("..") {
            Some((a, b)) => frames.extend(a.parse::<u64>().unwrap()..=b.parse::<u64>().unwrap()),
            None => {
                frames.insert(member.parse::<u64>().unwrap_or_else(|_| {
                    panic!("{filter}: member {member:?} (members are separated by \", \")")
                }));
            }
        }
    }
    frames
}

/// The frames tshark selects with `filter`; it must take the filter.
fn tshark_selects(capture: &str, filter: &str) -> BTreeSet<u64> {
    let out = Command::new("tshark")
        .args([
            "-r",
            capture,
            "-n",
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tshark refuses {filter:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Issue 40: every Wireshark filter the HTML page prints (a finding's, an exchange's) is
/// taken by tshark and selects exactly the frames it names, on the fixtures with findings
/// of every kind of fault and those with exchanges worth a look.
#[test]
fn every_filter_the_page_prints_selects_the_frames_it_names() {
    if !have_tshark() {
        return;
    }
    let mut captures: Vec<String> = std::fs::read_dir(root().join("fixtures/analysis"))
        .unwrap()
        .map(|e| e.unwrap().path().to_string_lossy().into_owned())
        .filter(|p| p.ends_with(".pcap"))
        .collect();
    captures.sort();
    for name in ["controller-loopback.pcap", "seed-v0.pcap", "truncated.pcap"] {
        captures.push(fixture(name).to_string_lossy().into_owned());
    }
    let mut checked = 0;
    for capture in &captures {
        let out = crate::common::pidshark()
            .args([capture.as_str(), "--format", "html", "--quiet"])
            .output()
            .unwrap();
        let page = String::from_utf8(out.stdout).unwrap();
        let filters: BTreeSet<&str> = page
            .split("<code class=\"f\">")
            .skip(1)
            .filter_map(|rest| rest.split_once("</code>").map(|(f, _)| f))
            .collect();
        for filter in filters {
            assert_eq!(
                tshark_selects(capture, filter),
                named_frames(filter),
                "{capture}: {filter}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} filters checked");
}

/// The filters the README, the walkthrough and the report's format document show are
/// taken by tshark and select the frames they name (on the walkthrough's capture).
#[test]
fn every_filter_the_documents_show_selects_the_frames_it_names() {
    if !have_tshark() {
        return;
    }
    let capture = fixture("analysis/failover-regression.pcap")
        .to_string_lossy()
        .into_owned();
    let mut checked = 0;
    for doc in ["README.md", "docs/walkthrough.md", "docs/report-format.md"] {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        for (at, _) in text.match_indices("frame.number in {") {
            let filter = &text[at..];
            let Some(end) = filter.find('}') else {
                continue;
            };
            let filter = &filter[..=end];
            if filter.contains('\\') {
                continue; // a jq program that writes filters, not a filter
            }
            assert_eq!(
                tshark_selects(&capture, filter),
                named_frames(filter),
                "{doc}: {filter}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "{checked} filters checked");
}

/// Issue 40: InitProducerId responses counted by error name (`producer_ids.summary.
/// error_codes`) are those tshark reads, response by response, on a real restart capture
/// whose producers met COORDINATOR_LOAD_IN_PROGRESS; the text names each error.
#[test]
fn init_producer_id_errors_by_name_are_wiresharks() {
    if !have_tshark() {
        return;
    }
    let capture = fixture("kafka-real/4.4.0-broker-restart.pcap.gz")
        .to_string_lossy()
        .into_owned();
    let out = Command::new("tshark")
        .args(["-r", &capture, "-n"])
        .args(decode_as(&[19101, 19102]))
        .args([
            "-o",
            "tcp.reassemble_out_of_order:TRUE",
            "-Y",
            "kafka.request_frame",
        ])
        .args(["-T", "fields", "-e", "kafka.api_key", "-e", "kafka.error"])
        .args(["-E", "occurrence=a"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut wireshark: BTreeMap<String, u64> = Default::default();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let (keys, errors) = line.split_once('\t').unwrap_or((line, ""));
        let errors: Vec<&str> = errors.split(',').collect();
        let keys: Vec<&str> = keys.split(',').collect();
        assert_eq!(keys.len(), errors.len(), "one error per response: {line}");
        for (key, error) in keys.iter().zip(errors) {
            if *key == "22" {
                let code = pidshark::kafka::tables::ErrorCode(error.parse().unwrap());
                *wireshark.entry(code.name()).or_default() += 1;
            }
        }
    }
    assert!(wireshark.len() >= 2, "{wireshark:?}");
    let report = crate::common::pidshark()
        .args([
            capture.as_str(),
            "--quiet",
            "--compact",
            "--no-producer-entries",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let ours: BTreeMap<String, u64> =
        serde_json::from_value(report["producer_ids"]["summary"]["error_codes"].clone()).unwrap();
    assert_eq!(ours, wireshark);
    let text = crate::common::pidshark()
        .args([
            capture.as_str(),
            "--quiet",
            "--format",
            "text",
            "--color",
            "never",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    let errors = wireshark["COORDINATOR_LOAD_IN_PROGRESS"];
    assert!(
        text.contains(&format!("errors (COORDINATOR_LOAD_IN_PROGRESS {errors})")),
        "{text}"
    );
}

/// Wireshark's name for each field the tree draws of an InitProducerId or
/// AllocateProducerIds message, where Wireshark 4.0 decodes it.
const TREE_FIELDS_IN_WIRESHARK: &[(&str, &str)] = &[
    ("size", "kafka.len"),
    ("request_api_key", "kafka.api_key"),
    ("request_api_version", "kafka.api_version"),
    ("correlation_id", "kafka.correlation_id"),
    ("client_id", "kafka.client_id"),
    ("TransactionalId", "kafka.transactional_id"),
    ("TransactionTimeoutMs", "kafka.transaction_timeout"),
    ("ProducerId", "kafka.producer_id"),
    ("ProducerEpoch", "kafka.producer_epoch"),
    ("ThrottleTimeMs", "kafka.throttle_time"),
    ("ErrorCode", "kafka.error"),
];

/// Per frame, Wireshark's Kafka fields: name → (offset from the frame's size prefix,
/// size, shown value), from `tshark -T pdml`.
fn wireshark_kafka_fields(
    capture: &str,
    ports: &[u16],
    filter: &str,
) -> BTreeMap<u64, BTreeMap<String, (i64, i64, String)>> {
    let out = Command::new("tshark")
        .args(["-r", capture, "-n"])
        .args(decode_as(ports))
        .args(["-Y", filter, "-T", "pdml"])
        .output()
        .expect("tshark runs");
    let pdml = String::from_utf8_lossy(&out.stdout);
    let attr = |line: &str, name: &str| -> Option<String> {
        let start = line.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = line[start..].find('"')?;
        Some(line[start..start + len].to_owned())
    };
    let mut frames = BTreeMap::new();
    for packet in pdml.split("<packet>").skip(1) {
        let mut fields = BTreeMap::new();
        let mut frame = 0;
        for line in packet.lines().map(str::trim) {
            let Some(name) = attr(line, "name") else {
                continue;
            };
            let num = |a: &str| attr(line, a).and_then(|v| v.parse::<i64>().ok());
            if name == "frame.number" {
                frame = attr(line, "show").and_then(|v| v.parse().ok()).unwrap_or(0);
            }
            let (Some(pos), Some(size)) = (num("pos"), num("size")) else {
                continue;
            };
            // a response's api key and version are Wireshark's inference (size 0)
            if name.starts_with("kafka.") && size > 0 {
                let show = attr(line, "show").unwrap_or_default();
                fields.entry(name).or_insert((pos, size, show));
            }
        }
        if let Some(&(base, _, _)) = fields.get("kafka.len") {
            for v in fields.values_mut() {
                v.0 -= base;
            }
            frames.insert(frame, fields);
        }
    }
    frames
}

/// `--format tree` draws each message it draws (InitProducerId and AllocateProducerIds,
/// requests and responses) with the offsets, sizes and values Wireshark gives the same
/// fields: InitProducerId versions 0, 4 and 6, a transactional id and none, an error
/// answer; of AllocateProducerIds, which Wireshark 4.0 does not know, the headers.
#[test]
fn the_tree_of_each_message_has_wiresharks_offsets_sizes_and_values() {
    if !have_tshark() {
        return;
    }
    let capture = "fixtures/producers/txn-bump.pcap";
    let path = root().join(capture);
    let filter = "kafka.api_key == 22 || kafka.api_key == 67";
    let wireshark = wireshark_kafka_fields(path.to_str().unwrap(), &[19093, 19201], filter);
    // the v0 exchange's short connection is Kafka only when told, as Wireshark is told
    let ports = ["--port", "19093", "--port", "19201"];
    let run = crate::common::pidshark()
        .args([capture, "--format", "tree", "-q"])
        .args(ports)
        .assert()
        .success();
    let tree = String::from_utf8(run.get_output().stdout.clone()).unwrap();
    let mut compared = 0;
    let mut frames_drawn = BTreeSet::new();
    for message in tree.split("== ").skip(1) {
        let head = message.lines().next().unwrap();
        if !head.starts_with("InitProducerId ") && !head.starts_with("AllocateProducerIds ") {
            continue;
        }
        let frame: u64 = head
            .split(" · ")
            .find_map(|p| p.strip_prefix("frame "))
            .and_then(|f| f.parse().ok())
            .unwrap_or_else(|| panic!("a frame in {head}"));
        frames_drawn.insert(frame);
        let theirs = wireshark
            .get(&frame)
            .unwrap_or_else(|| panic!("Wireshark has no such message in frame {frame}"));
        for line in message.lines().skip(1).take_while(|l| !l.is_empty()) {
            let name = line
                .trim_start_matches(['+', '-', '|', ' '])
                .split(' ')
                .next()
                .unwrap();
            let Some((_, field)) = TREE_FIELDS_IN_WIRESHARK.iter().find(|(n, _)| *n == name) else {
                continue;
            };
            let Some((pos, size, show)) = theirs.get(*field) else {
                continue;
            };
            let span = line
                .split('[')
                .nth(1)
                .and_then(|s| s.split(']').next())
                .unwrap();
            let (off, len) = span.split_once(", ").unwrap();
            let off = i64::from_str_radix(off.trim_start_matches("0x"), 16).unwrap();
            let len: i64 = len.trim_end_matches('B').parse().unwrap();
            assert_eq!((off, len), (*pos, *size), "frame {frame} {name}: {line}");
            let value = line.split("= ").nth(1).unwrap_or_default();
            let value = value.split("  ").next().unwrap();
            let ours = match value.strip_prefix('"') {
                Some(quoted) => quoted.split('"').next().unwrap(),
                None => value.split(' ').next().unwrap(),
            };
            // Wireshark shows a null string as `[ Null ]`
            let theirs = if show == "[ Null ]" {
                "null"
            } else {
                show.as_str()
            };
            assert_eq!(ours, theirs, "frame {frame} {name}: {line}");
            compared += 1;
        }
    }
    assert_eq!(
        frames_drawn,
        wireshark.keys().copied().collect(),
        "every InitProducerId and AllocateProducerIds message Wireshark sees is drawn"
    );
    assert!(compared > 60, "{compared} fields compared");
}

/// The tree's lines of one message: (name, offset, size, value).
fn tree_fields(message: &str) -> Vec<(String, i64, i64, String)> {
    message
        .lines()
        .skip(2) // the heading and the root
        .take_while(|l| !l.is_empty())
        .filter_map(|line| {
            let name = line.trim_start_matches(['+', '-', '|', ' ']);
            let name = name.split("  ").next()?.to_owned();
            let span = line.rsplit('[').next()?.split(']').next()?;
            let (off, len) = span.split_once(", ")?;
            let off = i64::from_str_radix(off.trim_start_matches("0x"), 16).ok()?;
            let len: i64 = len.trim_end_matches('B').parse().ok()?;
            let value = line.split("= ").nth(1).unwrap_or_default();
            let value = value.split("  ").next().unwrap_or_default().to_owned();
            Some((name, off, len, value))
        })
        .collect()
}

/// `--format tree --frame N` on the cluster's own messages (Vote, BeginQuorumEpoch,
/// BrokerHeartbeat, a small Fetch, requests and responses) of a real Kafka 4.4.0 capture:
/// their fields follow one another from the header to the last byte (or to a "not read"
/// part the decoder passes over), and the header's fields have Wireshark's offsets, sizes
/// and values.
#[test]
fn the_tree_of_a_cluster_message_covers_its_bytes_with_wiresharks_header() {
    if !have_tshark() {
        return;
    }
    let capture = "fixtures/kafka-real/4.4.0-controller-kill.pcap.gz";
    let path = root().join(capture);
    // Vote, BeginQuorumEpoch, BrokerHeartbeat, Fetch and BrokerRegistration: the cluster
    // messages this capture holds (no Metadata, DescribeCluster or EndQuorumEpoch)
    let filter = "kafka.api_key in {52, 53, 63, 1, 62}";
    let wireshark = wireshark_kafka_fields(path.to_str().unwrap(), &[19091, 19092, 19093], filter);
    // the first few of each API and side Wireshark shows
    let mut chosen: Vec<u64> = Vec::new();
    let mut seen = BTreeMap::new();
    for (frame, fields) in &wireshark {
        let key = fields.get("kafka.api_key").map(|f| f.2.clone());
        let request = fields.contains_key("kafka.client_id");
        let n = seen.entry((key, request)).or_insert(0);
        if *n < 2 {
            *n += 1;
            chosen.push(*frame);
        }
    }
    let mut drawn = 0;
    for frame in chosen {
        let run = crate::common::pidshark()
            .args([
                capture,
                "--format",
                "tree",
                "-q",
                "--frame",
                &frame.to_string(),
            ])
            .assert()
            .success();
        let tree = String::from_utf8(run.get_output().stdout.clone()).unwrap();
        let Some(message) = tree.split("== ").nth(1) else {
            continue; // not a message pidshark reads (a large Fetch, say)
        };
        drawn += 1;
        let fields = tree_fields(message);
        let theirs = &wireshark[&frame];
        // from the size prefix, each field where the one before it ended
        let mut end = 0;
        for (name, off, len, _) in &fields {
            if name == "Frame" {
                continue;
            }
            assert_eq!(*off, end, "frame {frame} {name}:\n{message}");
            end = off + len;
        }
        let total = theirs["kafka.len"].2.parse::<i64>().unwrap() + 4;
        assert_eq!(end, total, "frame {frame}: every byte drawn\n{message}");
        for (ours, field) in [
            ("size", "kafka.len"),
            ("request_api_key", "kafka.api_key"),
            ("request_api_version", "kafka.api_version"),
            ("correlation_id", "kafka.correlation_id"),
            ("client_id", "kafka.client_id"),
        ] {
            let (Some(mine), Some((pos, size, show))) =
                (fields.iter().find(|f| f.0 == ours), theirs.get(field))
            else {
                continue;
            };
            assert_eq!((mine.1, mine.2), (*pos, *size), "frame {frame} {ours}");
            if ours != "client_id" {
                assert_eq!(
                    mine.3.split(' ').next().unwrap(),
                    show,
                    "frame {frame} {ours}"
                );
            }
        }
    }
    assert!(drawn >= 6, "{drawn} cluster messages drawn");
}
