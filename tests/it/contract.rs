//! The report read back through types written from `shared/design/report-v1.md`, with
//! `deny_unknown_fields`: a renamed, missing or mistyped field fails here. (A field added
//! on purpose must be added here too.)

#![allow(dead_code)] // fields exist to be checked by serde, not read

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::common::report;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Report {
    format_version: u32,
    tool: Tool,
    /// Added: the verdict, judged from the whole capture.
    verdict: Verdict,
    captures: Vec<Capture>,
    summary: Summary,
    exchanges: Vec<Exchange>,
    producer_id_blocks: ProducerIdBlocks,
    /// Added (issue 28): InitProducerId exchanges and the blocks their ids lie in.
    producer_ids: ProducerIds,
    /// Added (issue 28): brokers by the addresses they serve on, and who led the quorum.
    brokers_by_address: Vec<BrokerAddress>,
    controllers: Vec<ControllerSpan>,
    /// Added (issue 38): who is proven to have led when, unknown between.
    controller_timeline: Vec<ControllerPiece>,
    /// Added (issue 29): the controllers' metadata log, only with `--metadata-log`.
    #[serde(default)]
    metadata_log: Option<MetadataLog>,
    /// Added (issue 42): what the producers' batches came to, only with Produce traffic.
    #[serde(default)]
    writes: Option<Writes>,
    diagnostics: Vec<Diagnostic>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Writes {
    requests: u64,
    requests_not_read: u64,
    batches: u64,
    idempotent_batches: u64,
    acknowledged: u64,
    rejected: u64,
    unanswered: u64,
    response_unknown: u64,
    retries_deduplicated: u64,
    not_appended: u64,
    producers: u64,
    errors: BTreeMap<String, u64>,
    #[serde(default)]
    of_interest: Vec<WriteBatch>,
    of_interest_not_listed: u64,
    #[serde(default)]
    producers_of_interest: Vec<ProducerWrites>,
    producers_of_interest_not_listed: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerWrites {
    producer_id: i64,
    producer_epoch: i16,
    shared: bool,
    not_appended: u64,
    refused: u64,
    grant_frames: Vec<u64>,
    writers: Vec<WriterWrites>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriterWrites {
    connection: u64,
    client: String,
    server: String,
    client_id: Option<String>,
    first_frame: u64,
    last_frame: u64,
    partitions: Vec<PartitionWrites>,
    partitions_more: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionWrites {
    topic: String,
    partition: i32,
    first_sequence: i32,
    last_sequence: i32,
    batches: u64,
    appended: u64,
    retries: u64,
    not_appended: u64,
    rejected: u64,
    other: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteBatch {
    connection: u64,
    client: String,
    server: String,
    client_id: Option<String>,
    transactional_id: Option<String>,
    correlation_id: i32,
    api_version: i16,
    request_frame: u64,
    response_frame: Option<u64>,
    timestamp: String,
    unix_time: f64,
    topic: Option<String>,
    partition: i32,
    producer_id: Option<i64>,
    producer_epoch: Option<i16>,
    first_sequence: Option<i32>,
    last_sequence: Option<i32>,
    records: Option<i32>,
    crc: Option<u32>,
    outcome: String,
    offset: Option<i64>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct MetadataLog {
    files: Vec<MetadataLogFile>,
    first_offset: Option<i64>,
    last_offset: Option<i64>,
    first_timestamp: Option<String>,
    last_timestamp: Option<String>,
    /// Added (issue 39): every time has its unix twin.
    first_unix_time: Option<f64>,
    last_unix_time: Option<f64>,
    records_by_type: BTreeMap<String, u64>,
    control_records: BTreeMap<String, u64>,
    clock_skew_ms: i64,
    comparison: Option<LogComparison>,
    blocks: Vec<CommittedBlock>,
    registrations: Vec<LogRegistration>,
    leader_changes: Vec<LogLeaderChange>,
    not_kept: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct MetadataLogFile {
    path: String,
    kind: String,
    size: u64,
    read_size: u64,
    batches: u64,
    records: u64,
    first_offset: Option<i64>,
    last_offset: Option<i64>,
    first_timestamp: Option<String>,
    last_timestamp: Option<String>,
    /// Added (issue 39): every time has its unix twin.
    first_unix_time: Option<f64>,
    last_unix_time: Option<f64>,
    complete: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LogComparison {
    wire_blocks: u64,
    matched: u64,
    not_committed: u64,
    mismatched: u64,
    outside_log: u64,
    not_delivered: u64,
    outside_capture: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct CommittedBlock {
    broker_id: i32,
    broker_epoch: i64,
    producer_id_start: Option<i64>,
    producer_id_len: Option<i64>,
    next_producer_id: i64,
    missing_before: Option<IdRange>,
    offset: i64,
    timestamp: String,
    unix_time: f64,
    leader_epoch: i32,
    delivery: String,
    delivered_frame: Option<u64>,
    file: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct IdRange {
    start: i64,
    end: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LogRegistration {
    broker_id: i32,
    broker_epoch: i64,
    endpoints: Vec<String>,
    offset: i64,
    timestamp: String,
    /// Added (issue 39): every time has its unix twin.
    unix_time: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct LogLeaderChange {
    leader_id: i32,
    epoch: i32,
    offset: i64,
    timestamp: String,
    /// Added (issue 39): every time has its unix twin.
    unix_time: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerIds {
    summary: ProducerIdCounts,
    end_txn: Option<ProducerIdCounts>,
    entries: Vec<ProducerIdEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerIdCounts {
    exchanges: u64,
    complete: u64,
    unanswered: u64,
    response_unknown: u64,
    granted: u64,
    errors: u64,
    error_codes: BTreeMap<String, u64>,
    in_block: u64,
    previous_block: u64,
    before_capture: u64,
    kept_by_transactional_id: u64,
    epoch_bump: u64,
    another_brokers_block: u64,
    older_block: u64,
    outside_blocks: u64,
    unknown: u64,
    duplicates: u64,
    grants_forgotten: u64,
    broker_unknown: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerIdEntry {
    api: String,
    connection: u64,
    client: String,
    server: String,
    correlation_id: i32,
    api_version: i16,
    status: String,
    broker_id: Option<i32>,
    broker_source: Option<String>,
    client_id: Option<Option<String>>,
    transactional_id: Option<Option<String>>,
    transaction_timeout_ms: Option<i32>,
    requested_producer_id: Option<i64>,
    requested_producer_epoch: Option<i16>,
    committed: Option<bool>,
    error_code: Option<i16>,
    error: Option<String>,
    producer_id: Option<i64>,
    producer_epoch: Option<i16>,
    ongoing_txn_producer_id: Option<i64>,
    ongoing_txn_producer_epoch: Option<i16>,
    placement: Option<String>,
    placement_reason: Option<String>,
    block: Option<BlockRef>,
    duplicate_of_frame: Option<u64>,
    request_frame: u64,
    request_timestamp: String,
    /// Added (issue 39): every time has its unix twin.
    request_unix_time: f64,
    response_frame: Option<u64>,
    response_timestamp: Option<String>,
    unix_time: Option<f64>,
    latency_us: Option<f64>,
    decode_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockRef {
    start: i64,
    end: i64,
    broker_id: i32,
    response_frame: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BrokerAddress {
    address: String,
    broker_id: Option<i32>,
    source: String,
    #[serde(default)]
    frame: Option<u64>,
    #[serde(default)]
    connection: Option<u64>,
    /// Added (issue 29): the source is a metadata log's record.
    #[serde(default)]
    metadata_log_offset: Option<i64>,
    listener: Option<String>,
    #[serde(default)]
    conflicting_broker_ids: Vec<i32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControllerSpan {
    leader_id: i32,
    epoch: i32,
    from_frame: u64,
    from_timestamp: String,
    from_unix_time: f64,
    to_frame: Option<u64>,
    to_timestamp: Option<String>,
    /// Added (issue 39): every time has its unix twin.
    to_unix_time: Option<f64>,
    how: String,
    /// Added (issue 38): the first and last messages proving the leader led.
    led_from_frame: Option<u64>,
    led_from_timestamp: Option<String>,
    /// Added (issue 39): every time has its unix twin.
    led_from_unix_time: Option<f64>,
    led_to_frame: Option<u64>,
    led_to_timestamp: Option<String>,
    /// Added (issue 39): every time has its unix twin.
    led_to_unix_time: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ControllerPiece {
    state: String,
    leader_id: Option<i32>,
    leader_address: Option<String>,
    epoch: Option<i32>,
    from_timestamp: String,
    from_unix_time: f64,
    from_source: String,
    from_frame: Option<u64>,
    from_how: Option<String>,
    to_timestamp: String,
    to_unix_time: f64,
    to_source: String,
    to_frame: Option<u64>,
    to_how: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProducerIdBlocks {
    usual_len: Option<i32>,
    slow_threshold_us: Option<f64>,
    blocks: Vec<PidBlock>,
    findings: Vec<PidFinding>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PidBlock {
    start: i64,
    end: i64,
    len: i32,
    broker_id: i32,
    broker_epoch: i64,
    connection: u64,
    client: String,
    server: String,
    correlation_id: i32,
    request_frame: u64,
    response_frame: u64,
    timestamp: String,
    /// Added: the same time as seconds since the Unix epoch.
    unix_time: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PidFinding {
    severity: String,
    kind: String,
    broker_id: Option<i32>,
    connection: Option<u64>,
    frames: Vec<u64>,
    /// Added: the time of the frame where it shows, and what it says as fields.
    timestamp: String,
    unix_time: f64,
    facts: BTreeMap<String, serde_json::Value>,
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Broker {
    requests: u64,
    complete: u64,
    unanswered: u64,
    response_unknown: u64,
    errors: BTreeMap<String, u64>,
    ids_granted: i64,
    epochs_seen: Vec<i64>,
    epochs_unlisted_from_frame: Option<u64>,
    errors_uncounted: Option<u64>,
    errors_unlisted_from_frame: Option<u64>,
    latency_us: Option<BrokerLatency>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BrokerLatency {
    p50: f64,
    p99: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tool {
    name: String,
    version: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Capture {
    path: String,
    format: String,
    link_types: Vec<String>,
    packets: u64,
    bytes: u64,
    first_timestamp: Option<String>,
    last_timestamp: Option<String>,
    /// Added (issue 39): every time has its unix twin.
    first_unix_time: Option<f64>,
    last_unix_time: Option<f64>,
    /// Added: packets the snaplen cut, and the length they were cut to.
    packets_cut: u64,
    cut_len: Option<u32>,
    /// Added: packets read once as copies of another file's.
    duplicate_packets: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Verdict {
    code: String,
    grade: String,
    headline: String,
    facts: BTreeMap<String, serde_json::Value>,
    limits: Vec<VerdictLimit>,
    /// Added (issue 38): what the answer lacks for what was lost; absent when nothing was.
    #[serde(default)]
    cost: Vec<VerdictCost>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictCost {
    kind: String,
    count: u64,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictLimit {
    kind: String,
    count: u64,
    damage: bool,
    /// Added (issue 38): pidshark's own limit, not the capture's.
    own: bool,
    text: String,
    advice: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Summary {
    packets: u64,
    /// Added: copies of packets another file holds, read once.
    duplicate_packets: u64,
    tcp_connections: u64,
    kafka_connections: u64,
    not_kafka_connections: u64,
    encrypted_connections: u64,
    kafka_requests: u64,
    kafka_responses: u64,
    api_keys: BTreeMap<String, ApiKeyCount>,
    exchanges: ExchangeCounts,
    unmatched_responses: u64,
    error_codes: BTreeMap<String, u64>,
    latency_us: Option<Latency>,
    diagnostics: BTreeMap<String, u64>,
    /// Added: the same, by the severity each was raised at.
    diagnostics_by_severity: BTreeMap<String, u64>,
    /// Added (issue 38): connections forgotten at pidshark's limits.
    forgotten_connections: u64,
    brokers: BTreeMap<String, Broker>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ApiKeyCount {
    api_key: i16,
    requests: u64,
    responses: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExchangeCounts {
    total: u64,
    complete: u64,
    unanswered: u64,
    response_unknown: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Latency {
    count: u64,
    min: f64,
    mean: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    percentiles_exact: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Exchange {
    connection: u64,
    client: String,
    server: String,
    correlation_id: i32,
    status: String,
    request: Request,
    response: Option<Response>,
    latency_us: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Tagged {
    tag: u32,
    data: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    frame: u64,
    first_frame: u64,
    timestamp: String,
    /// Added: the same time as seconds since the Unix epoch.
    unix_time: f64,
    size: u64,
    api_key: i16,
    api_version: i16,
    client_id: Option<String>,
    header_tagged_fields: Vec<Tagged>,
    broker_id: i32,
    broker_epoch: i64,
    tagged_fields: Vec<Tagged>,
    bytes_not_captured: Option<u32>,
    decode_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Response {
    frame: u64,
    first_frame: u64,
    timestamp: String,
    /// Added: the same time as seconds since the Unix epoch.
    unix_time: f64,
    size: u64,
    header_tagged_fields: Vec<Tagged>,
    throttle_time_ms: i32,
    error_code: i16,
    error: String,
    producer_id_start: i64,
    producer_id_len: i32,
    tagged_fields: Vec<Tagged>,
    bytes_not_captured: Option<u32>,
    decode_error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Diagnostic {
    severity: String,
    kind: String,
    connection: Option<u64>,
    frame: Option<u64>,
    /// Added: the time of `frame`, as in `exchanges[].request`, and the facts.
    timestamp: Option<String>,
    unix_time: Option<f64>,
    facts: BTreeMap<String, serde_json::Value>,
    message: String,
}

fn is_rfc3339_utc(ts: &str, digits: usize) -> bool {
    let Some((_, frac)) = ts.strip_suffix('Z').and_then(|t| t.split_once('.')) else {
        return false;
    };
    ts.len() == 20 + digits + 1 && frac.len() == digits && frac.bytes().all(|b| b.is_ascii_digit())
}

/// A report with a metadata log, compared with a capture it does not belong to.
#[test]
fn a_report_with_a_metadata_log_follows_the_contract() {
    let log = "fixtures/kafka-real/4.4.0-steady.metadata/101";
    let value = report(&["fixtures/seed-v0.pcap", "--metadata-log", log]);
    let parsed: Report = serde_json::from_value(value).expect("the contract");
    let section = parsed
        .metadata_log
        .expect("metadata_log with --metadata-log");
    assert!(section.comparison.is_some());
    assert!(!section.blocks.is_empty());
    assert!(section
        .blocks
        .iter()
        .all(|b| b.delivery == "outside_capture"));
    assert!(section
        .blocks
        .iter()
        .all(|b| is_rfc3339_utc(&b.timestamp, 6)));
    assert!(!section.registrations.is_empty());
}

#[test]
fn reports_follow_the_contract() {
    for name in [
        "seed-v0",
        "controller-loopback",
        "noise",
        "truncated",
        "producers/kafka-20031",
        "producers/stale-controller",
    ] {
        let value = report(&[&format!("fixtures/{name}.pcap")]);
        let parsed: Report = serde_json::from_value(value)
            .unwrap_or_else(|e| panic!("{name}: report does not match the contract: {e}"));
        assert_eq!(parsed.format_version, 1);
        for ex in &parsed.exchanges {
            assert_eq!(ex.request.api_key, 67);
            assert!(
                is_rfc3339_utc(&ex.request.timestamp, 6),
                "{}",
                ex.request.timestamp
            );
            assert!(matches!(ex.status.as_str(), "complete" | "unanswered"));
            assert_eq!(ex.status == "complete", ex.response.is_some());
        }
        for d in &parsed.diagnostics {
            assert!(matches!(d.severity.as_str(), "info" | "warning" | "error"));
        }
        // exchanges ordered by request frame, then connection
        let keys: Vec<(u64, u64)> = parsed
            .exchanges
            .iter()
            .map(|e| (e.request.frame, e.connection))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "{name}: exchange order");
        // diagnostics in packet order
        let frames: Vec<u64> = parsed
            .diagnostics
            .iter()
            .map(|d| d.frame.unwrap_or(u64::MAX))
            .collect();
        assert!(
            frames.windows(2).all(|w| w[0] <= w[1]),
            "{name}: diagnostic order"
        );
        for d in &parsed.diagnostics {
            assert!(parsed
                .summary
                .diagnostics
                .get(&d.kind)
                .is_some_and(|n| *n > 0));
        }
        for b in &parsed.producer_id_blocks.blocks {
            assert_eq!(
                b.end - b.start + 1,
                i64::from(b.len),
                "{name}: block bounds"
            );
        }
        let counted: u64 = parsed.summary.diagnostics.values().sum();
        assert!(counted >= parsed.diagnostics.len() as u64);
    }
}

/// Issue 39: every time in the report has its unix twin beside it (`timestamp` and
/// `unix_time`, `X_timestamp` and `X_unix_time`; an InitProducerId entry's
/// `response_timestamp` and `unix_time`), and both say the same moment.
#[test]
fn every_timestamp_has_its_unix_twin() {
    fn twin(key: &str) -> String {
        match key {
            "timestamp" | "response_timestamp" => "unix_time".to_owned(),
            _ => key.replace("timestamp", "unix_time"),
        }
    }
    fn walk(v: &serde_json::Value, path: &str, checked: &mut usize) {
        match v {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    let here = format!("{path}.{key}");
                    if let (true, Some(ts)) = (key.ends_with("timestamp"), value.as_str()) {
                        let unix = map.get(&twin(key)).and_then(|u| u.as_f64());
                        let unix = unix.unwrap_or_else(|| panic!("{here} has no twin"));
                        let at = time::OffsetDateTime::parse(
                            ts,
                            &time::format_description::well_known::Rfc3339,
                        )
                        .unwrap();
                        let seconds = at.unix_timestamp_nanos() as f64 / 1e9;
                        assert!((seconds - unix).abs() < 1e-6, "{here}: {ts} against {unix}");
                        *checked += 1;
                    }
                    walk(value, &here, checked);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{path}[{i}]"), checked);
                }
            }
            _ => {}
        }
    }
    let dir = "fixtures/kafka-real";
    let mut args = vec![
        format!("{dir}/4.4.0-two-hosts.broker-1.pcap.gz"),
        format!("{dir}/4.4.0-two-hosts.controllers.pcap.gz"),
        "--quiet".to_owned(),
        "--since".to_owned(),
        "1".to_owned(),
        "--until".to_owned(),
        "20".to_owned(),
    ];
    for c in [101, 102, 103] {
        args.push("--metadata-log".to_owned());
        args.push(format!("{dir}/4.4.0-two-hosts.metadata/{c}"));
    }
    let r = report(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let mut checked = 0;
    walk(&r, "", &mut checked);
    // captures, entries, spans, pieces, the log's files, blocks, registrations...
    for section in [
        "captures",
        "controllers",
        "filters",
        "metadata_log",
        "producer_ids",
    ] {
        assert!(r.get(section).is_some(), "{section}");
    }
    assert!(checked > 1000, "{checked}");
}
