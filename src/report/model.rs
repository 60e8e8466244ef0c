//! Serde types of the JSON report, field for field as the contract (format version 1)
//! names them; `docs/report-format.md` describes each, kept in step by a test. Fields
//! that may not have been read are `Option`s left out of the output when absent; nothing
//! here is computed. The JSON Schema of the report is derived from these types
//! ([`schema`]) and committed as `schema/report-v1.schema.json`.

/// The JSON Schema of [`Report`], pretty-printed, as `pidshark --schema` prints it.
pub fn schema() -> String {
    pretty(&report_schema())
}

/// The JSON Schema of a line of `--format ndjson`, pretty-printed, as `pidshark --schema
/// ndjson` prints it: each line is one of five objects, told apart by `type`.
pub fn ndjson_schema() -> String {
    pretty(&ndjson_lines(report_schema()))
}

fn pretty(schema: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).unwrap_or_default();
    text.push('\n');
    text
}

/// The ndjson lines' schema from the report's: an `exchange`, `block`, `finding` or
/// `producer_id` line is the report's object of that kind with its `type`; the `report`
/// line is the report without the lists the other lines hold (`exchanges`,
/// `producer_id_blocks.blocks`, `producer_ids.entries`).
fn ndjson_lines(report: serde_json::Value) -> serde_json::Value {
    use serde_json::{json, Value};
    let Value::Object(mut root) = report else {
        return Value::Null;
    };
    let mut defs = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => serde_json::Map::new(),
    };
    root.remove("$schema");
    root.remove("title");
    let without = |def: Option<&Value>, field: &str| {
        let mut def = def.cloned().unwrap_or(Value::Null);
        if let Some(p) = def.get_mut("properties").and_then(Value::as_object_mut) {
            p.remove(field);
        }
        if let Some(r) = def.get_mut("required").and_then(Value::as_array_mut) {
            r.retain(|f| f != field);
        }
        def
    };
    let blocks_line = without(defs.get("ProducerIdBlocks"), "blocks");
    let ids_line = without(defs.get("ProducerIds"), "entries");
    defs.insert("ProducerIdBlocksLine".to_owned(), blocks_line);
    defs.insert("ProducerIdsLine".to_owned(), ids_line);
    let mut report_line = without(Some(&Value::Object(root)), "exchanges");
    if let Some(p) = report_line.get_mut("properties") {
        p["producer_id_blocks"] = json!({ "$ref": "#/$defs/ProducerIdBlocksLine" });
        p["producer_ids"] = json!({ "$ref": "#/$defs/ProducerIdsLine" });
    }
    let lines = [
        ("exchange", defs.get("Exchange").cloned()),
        ("block", defs.get("PidBlock").cloned()),
        ("finding", defs.get("PidFinding").cloned()),
        ("producer_id", defs.get("ProducerIdEntry").cloned()),
        ("write", defs.get("WriteBatch").cloned()),
        ("report", Some(report_line)),
    ];
    let mut one_of = Vec::new();
    for (kind, def) in lines {
        let mut def = def.unwrap_or(Value::Null);
        if let Some(p) = def.get_mut("properties").and_then(Value::as_object_mut) {
            p.insert("type".to_owned(), json!({ "const": kind }));
        }
        if let Some(r) = def.get_mut("required").and_then(Value::as_array_mut) {
            r.insert(0, "type".into());
        }
        let name = format!("{}Line", kind_title(kind));
        one_of.push(json!({ "$ref": format!("#/$defs/{name}") }));
        defs.insert(name, def);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "NdjsonLine",
        "description": "A line of pidshark's --format ndjson: one object per line, its `type` first.",
        "oneOf": one_of,
        "$defs": defs,
    })
}

/// `producer_id` → `ProducerId`.
fn kind_title(kind: &str) -> String {
    kind.split('_')
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// The report's schema as a value: derived from the types, then made strict.
fn report_schema() -> serde_json::Value {
    // the contract of what is written: a field is required unless it may be left out
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Report>();
    let mut value = serde_json::to_value(&schema).unwrap_or_default();
    strict(&mut value);
    if let Some(defs) = value.get_mut("$defs") {
        facts_by_kind(defs);
    }
    value
}

/// A string that is one of `names`: a closed set's schema, from the one place that
/// declares its names.
fn one_of(names: impl IntoIterator<Item = &'static str>) -> schemars::Schema {
    let names: Vec<&str> = names.into_iter().collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

fn severity_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    one_of(Severity::ALL.map(Severity::as_str))
}

fn kind_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    one_of(Kind::ALL.map(Kind::as_str))
}

fn status_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    one_of(Status::ALL.map(Status::as_str))
}

/// Counts by diagnostic kind.
fn kind_counts_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    counts_by(Kind::ALL.map(Kind::as_str))
}

/// Counts by severity.
fn severity_counts_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    counts_by(Severity::ALL.map(Severity::as_str))
}

/// An object counting something by a closed set of names.
fn counts_by(names: impl IntoIterator<Item = &'static str>) -> schemars::Schema {
    let names: Vec<&str> = names.into_iter().collect();
    schemars::json_schema!({
        "type": "object",
        "propertyNames": { "enum": names },
        "additionalProperties": { "type": "integer", "minimum": 0 }
    })
}

fn error_name_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = serde_json::Map::new();
    if let serde_json::Value::Object(map) = error_name() {
        schema = map;
    }
    schemars::Schema::from(schema)
}

/// The verdict's facts: each count it rests on, all of them but those given only when
/// there are some.
fn verdict_facts_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use crate::analysis::verdict::VerdictFact;
    let names: Vec<&str> = VerdictFact::ALL
        .iter()
        .map(|f| f.as_str())
        .chain(Status::ALL.map(Status::as_str))
        .collect();
    let required: Vec<&str> = VerdictFact::ALL
        .iter()
        .filter(|f| !f.only_when_some())
        .map(|f| f.as_str())
        .chain(Status::ALL.map(Status::as_str))
        .collect();
    let count = serde_json::json!({ "type": "integer", "minimum": 0 });
    let properties: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .map(|n| ((*n).to_owned(), count.clone()))
        .collect();
    schemars::json_schema!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// Link types by name: those pidshark names, or `LINKTYPE_<number>`.
fn link_types_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = crate::capture::LINK_TYPE_NAMES.map(|(_, name)| name).into();
    schemars::json_schema!({
        "type": "array",
        "items": {
            "anyOf": [
                { "type": "string", "enum": names },
                { "type": "string", "pattern": "^LINKTYPE_-?[0-9]+$" }
            ]
        }
    })
}

/// The tool's name.
fn tool_name_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "const": "pidshark" })
}

/// Describes the `facts` of a diagnostic and of a finding for each kind (see
/// [`crate::diag::Kind::declared_facts`]): `if` the kind is this one, `then` its facts are
/// these and no others.
fn facts_by_kind(defs: &mut serde_json::Value) {
    use crate::diag::Kind;
    for (def, pid_only) in [("Diagnostic", false), ("PidFinding", true)] {
        let rules: Vec<serde_json::Value> = Kind::ALL
            .into_iter()
            .filter(|k| !pid_only || k.as_str().starts_with("pid_"))
            .map(|kind| {
                let facts: serde_json::Map<String, serde_json::Value> = kind
                    .declared_facts()
                    .iter()
                    .map(|(name, ty)| ((*name).to_owned(), ty.schema()))
                    .collect();
                serde_json::json!({
                    "if": {
                        "properties": { "kind": { "const": kind.as_str() } },
                        "required": ["kind"],
                        "additionalProperties": true
                    },
                    "then": {
                        "properties": {
                            "facts": {
                                "type": "object",
                                "properties": facts,
                                "additionalProperties": false
                            }
                        },
                        "additionalProperties": true
                    }
                })
            })
            .collect();
        if let Some(serde_json::Value::Object(schema)) = defs.get_mut(def) {
            schema.insert("allOf".to_owned(), rules.into());
        }
    }
}

fn code_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use crate::analysis::verdict::Code;
    one_of(Code::ALL.map(Code::as_str))
}

fn grade_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    use crate::analysis::verdict::Grade;
    one_of(Grade::ALL.map(Grade::as_str))
}

/// The `format` values of JSON Schema 2020-12: strict validators (ajv's default mode)
/// refuse a schema with any other, such as the `uint64` or `double` schemars writes
/// beside the bounds it also writes.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Makes the schema a contract a standard validator holds the report to: every object
/// with named fields allows no other (`additionalProperties: false`; the maps, such as
/// `facts`, keep their schema of values), and no `format` outside the standard's.
fn strict(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            let nonstandard = map
                .get("format")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f));
            if nonstandard {
                map.remove("format");
            }
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".to_owned(), false.into());
            }
            map.values_mut().for_each(strict);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strict),
        _ => {}
    }
}

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::committed::{Delivery, DeliveryName};
use crate::analysis::controllers::pieces::{PieceState, SourceName};
use crate::analysis::controllers::Evidence;
pub use crate::analysis::ProducerIdCounts;
use crate::diag::{Fact, IdSpan, Kind, Severity};
use crate::kafka::tables::{error_counts_schema, error_name};
use crate::latency;
use crate::pairing::Status;
use crate::timestamp::Timestamp;

/// The report's format version: what `--expect` compares against (field names fixed,
/// fields added freely).
pub const FORMAT_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct Report {
    pub format_version: u32,
    pub tool: Tool,
    /// The filters applied to `exchanges` and `producer_id_blocks.blocks`; absent without
    /// any. The summary, findings and diagnostics describe the whole capture.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filters: Option<Filters>,
    pub verdict: Verdict,
    pub captures: Vec<Capture>,
    pub summary: Summary,
    pub exchanges: Vec<Exchange>,
    pub producer_id_blocks: ProducerIdBlocks,
    pub producer_ids: ProducerIds,
    pub brokers_by_address: Vec<BrokerAddress>,
    pub controllers: Vec<ControllerSpan>,
    /// Who is proven to have led the quorum from when to when, and the stretches where
    /// nothing tells, in time order over the capture (and before it, where the metadata
    /// log proves a leader): what the text and HTML timelines draw.
    pub controller_timeline: Vec<ControllerPiece>,
    /// The controllers' metadata log (`--metadata-log`), compared with the capture;
    /// absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_log: Option<MetadataLog>,
    /// What the producers' writes came to; absent when the capture holds no Produce
    /// request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<Writes>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// The findings' true counts by severity (errors, warnings, info): the report lists
    /// at most 1,000 of a kind, and the summary counts them all.
    pub fn finding_totals(&self) -> [u64; 3] {
        let findings = &self.producer_id_blocks.findings;
        let kinds: std::collections::BTreeSet<Kind> = findings.iter().map(|f| f.kind).collect();
        [Severity::Error, Severity::Warning, Severity::Info].map(|sev| {
            kinds
                .iter()
                .filter(|k| k.severity() == sev)
                .map(|k| {
                    self.summary
                        .diagnostics
                        .get(k.as_str())
                        .copied()
                        .unwrap_or(0)
                })
                .sum()
        })
    }

    /// The findings listed, errors first, then warnings, then info, each in packet order.
    pub fn findings_by_severity(&self) -> Vec<&PidFinding> {
        let mut sorted: Vec<&PidFinding> = self.producer_id_blocks.findings.iter().collect();
        sorted.sort_by_key(|f| std::cmp::Reverse(f.severity)); // stable
        sorted
    }
}

/// What the metadata logs given hold, and how their committed blocks stand against the
/// capture.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct MetadataLog {
    pub files: Vec<MetadataLogFile>,
    /// Offsets and batch times covered, over every file.
    pub first_offset: Option<i64>,
    pub last_offset: Option<i64>,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub first_unix_time: Option<UnixTime>,
    #[schemars(with = "Option<f64>")]
    pub last_unix_time: Option<UnixTime>,
    /// Metadata records by type (`ProducerIdsRecord`, `RegisterBrokerRecord`, ...,
    /// `Unknown(n)`); a record several logs hold counts once.
    pub records_by_type: BTreeMap<String, u64>,
    /// Control records by type (`LeaderChange`, `SnapshotHeader`, ...).
    pub control_records: BTreeMap<String, u64>,
    /// `--log-clock-skew`: how far apart the log's clock and the capture's may be.
    pub clock_skew_ms: i64,
    /// The comparison with the capture; null without a capture.
    pub comparison: Option<LogComparison>,
    /// Every ProducerIdsRecord, in offset order.
    pub blocks: Vec<CommittedBlock>,
    /// Every RegisterBrokerRecord, in offset order.
    pub registrations: Vec<LogRegistration>,
    /// Every LeaderChange control record, in offset order.
    pub leader_changes: Vec<LogLeaderChange>,
    /// Blocks and registrations past the reader's limit: counted, not listed.
    pub not_kept: u64,
}

impl MetadataLog {
    /// At most `max` blocks for a person to read: those not delivered first, then the
    /// others, shown in offset order.
    pub fn blocks_to_list(&self, max: usize) -> Vec<&CommittedBlock> {
        let undelivered = |b: &&CommittedBlock| b.delivery == Delivery::NotDelivered;
        let mut listed: Vec<&CommittedBlock> = self
            .blocks
            .iter()
            .filter(undelivered)
            .chain(self.blocks.iter().filter(|b| !undelivered(b)))
            .take(max)
            .collect();
        listed.sort_by_key(|b| b.offset);
        listed
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct MetadataLogFile {
    pub path: String,
    /// `segment` or `snapshot`.
    pub kind: crate::metadata_log::FileKind,
    pub size: u64,
    /// Bytes read as whole, valid batches.
    pub read_size: u64,
    pub batches: u64,
    pub records: u64,
    pub first_offset: Option<i64>,
    pub last_offset: Option<i64>,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub first_unix_time: Option<UnixTime>,
    #[schemars(with = "Option<f64>")]
    pub last_unix_time: Option<UnixTime>,
    /// False when a diagnostic stopped the reading before the file's end.
    pub complete: bool,
}

/// Counts of the comparison of the log with the capture.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub struct LogComparison {
    /// Blocks delivered on the wire (`NONE` responses).
    pub wire_blocks: u64,
    /// ... whose record the log holds, with the same values.
    pub matched: u64,
    pub not_committed: u64,
    pub mismatched: u64,
    /// ... delivered at a time the log does not cover.
    pub outside_log: u64,
    /// Committed blocks the capture should hold the delivery of, and does not.
    pub not_delivered: u64,
    /// Committed blocks outside the time the capture shows their broker asking.
    pub outside_capture: u64,
}

impl CommittedBlock {
    /// Its ids, and those missing before it: `9000..=9999 (no record commits
    /// 8000..=8999 before it)`.
    pub fn ids(&self) -> String {
        let last = self.next_producer_id.saturating_sub(1);
        let mut ids = match self.producer_id_start {
            Some(start) => format!("{start}..={last}"),
            None => format!("..={last}"),
        };
        if let Some(m) = self.missing_before {
            ids.push_str(&format!(
                " (no record commits {}..={} before it)",
                m.start, m.end
            ));
        }
        ids
    }
}

/// Producer ids `start..=end`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub struct IdRange {
    pub start: i64,
    pub end: i64,
}

/// A ProducerIdsRecord: the block `producer_id_start` to `next_producer_id - 1` granted.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct CommittedBlock {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// `NextProducerId - 1000`: Kafka's controller commits blocks of 1000 ids and the
    /// record holds only their end; absent for a `NextProducerId` below 1000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_id_start: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_id_len: Option<i64>,
    pub next_producer_id: i64,
    /// The ids between the highest block committed before it and its start that no
    /// record of the logs read commits (`pid_committed_gap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_before: Option<IdRange>,
    pub offset: i64,
    /// The batch's max timestamp.
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
    /// The batch's partition leader epoch: the controller epoch that appended it.
    pub leader_epoch: i32,
    /// How it stands against the capture: `delivery`, and `delivered_frame` when a
    /// response delivered it.
    #[serde(flatten)]
    pub delivery: Delivery,
    /// The file it was read from (`files[].path`).
    pub file: String,
}

/// A [`Delivery`] as the report writes it: its name, and the frame of a delivery.
#[derive(Serialize, JsonSchema)]
struct DeliveryFields {
    /// `delivered`, `not_delivered`, `outside_capture` or `snapshot` (see
    /// docs/report-format.md).
    delivery: DeliveryName,
    /// The response that delivered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    delivered_frame: Option<u64>,
}

impl DeliveryFields {
    fn of(d: Delivery) -> Self {
        Self {
            delivery: d.name(),
            delivered_frame: match d {
                Delivery::Delivered { frame } => Some(frame),
                _ => None,
            },
        }
    }
}

impl Serialize for Delivery {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        DeliveryFields::of(*self).serialize(s)
    }
}

impl JsonSchema for Delivery {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        DeliveryFields::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        DeliveryFields::json_schema(generator)
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct LogRegistration {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// `name host:port` per listener.
    pub endpoints: Vec<String>,
    pub offset: i64,
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
}

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct LogLeaderChange {
    pub leader_id: i32,
    pub epoch: i32,
    pub offset: i64,
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
}

/// An address the capture shows a broker serving on, and how it is known.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct BrokerAddress {
    pub address: String,
    /// Null when sources disagree (see `conflicting_broker_ids`).
    pub broker_id: Option<i32>,
    /// `broker_registration`, `metadata`, `describe_cluster` or `metadata_log`.
    pub source: crate::analysis::AddressSource,
    /// The first message that said so; absent when it was the metadata log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection: Option<u64>,
    /// The RegisterBrokerRecord that said so, when it was the metadata log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_log_offset: Option<i64>,
    /// The listener's name, from a registration.
    pub listener: Option<String>,
    /// Broker ids claimed for the address by different messages, when they disagree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicting_broker_ids: Vec<i32>,
}

/// A controller's time as the quorum's leader, as far as the capture shows.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct ControllerSpan {
    pub leader_id: i32,
    pub epoch: i32,
    /// The first message that shows this leader in this epoch.
    pub from_frame: u64,
    pub from_timestamp: String,
    #[schemars(with = "f64")]
    pub from_unix_time: UnixTime,
    /// The first message that shows a later epoch; null for the last span.
    pub to_frame: Option<u64>,
    pub to_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub to_unix_time: Option<UnixTime>,
    /// What `from_frame` is: `begin_quorum_epoch`, `end_quorum_epoch`,
    /// `begin_quorum_epoch_response`, `end_quorum_epoch_response`, `vote_response` or
    /// `allocate_producer_ids`.
    pub how: Evidence,
    /// The first and last messages that prove the leader led in this epoch (its own
    /// BeginQuorumEpoch or EndQuorumEpoch request, its AllocateProducerIds answers);
    /// null when only a voter named it.
    pub led_from_frame: Option<u64>,
    pub led_from_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub led_from_unix_time: Option<UnixTime>,
    pub led_to_frame: Option<u64>,
    pub led_to_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub led_to_unix_time: Option<UnixTime>,
}

#[cfg(test)]
impl ControllerPiece {
    /// A piece for renderers' tests: led by `leader_id` in `epoch` (unknown without a
    /// leader) from `from` to `to` seconds, its bounds a BeginQuorumEpoch request in frame
    /// 4 and an AllocateProducerIds answer in frame 18.
    pub fn sample(leader_id: Option<i32>, epoch: i32, (from, to): (i64, i64)) -> Self {
        let at = |secs| Timestamp {
            secs,
            nanos: 0,
            nano: false,
        };
        Self {
            state: if leader_id.is_some() {
                PieceState::Led
            } else {
                PieceState::Unknown
            },
            leader_id,
            leader_address: None,
            epoch: leader_id.map(|_| epoch),
            from_timestamp: at(from).to_rfc3339(),
            from_unix_time: UnixTime(at(from)),
            from_source: SourceName::Capture,
            from_frame: Some(4),
            from_how: Some(Evidence::BeginQuorumEpoch),
            to_timestamp: at(to).to_rfc3339(),
            to_unix_time: UnixTime(at(to)),
            to_source: SourceName::Capture,
            to_frame: Some(18),
            to_how: Some(Evidence::AllocateProducerIds),
        }
    }
}

/// A stretch of the controller timeline: led as proven, or unknown.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct ControllerPiece {
    /// `led` or `unknown`.
    pub state: PieceState,
    /// The leader's node id; null when unknown, or when only its address is known.
    pub leader_id: Option<i32>,
    /// The leader's address, for a piece known from its AllocateProducerIds answers.
    pub leader_address: Option<String>,
    /// The quorum epoch; null when unknown or not shown by the capture.
    pub epoch: Option<i32>,
    pub from_timestamp: String,
    #[schemars(with = "f64")]
    pub from_unix_time: UnixTime,
    /// What the bound rests on: `capture` (`from_frame`), `metadata_log`, or
    /// `capture_start` (nothing earlier is known).
    pub from_source: SourceName,
    pub from_frame: Option<u64>,
    /// The message or record: `begin_quorum_epoch`, `allocate_producer_ids`,
    /// `leader_change`, `batch`, ...; null for the capture's start or end.
    pub from_how: Option<Evidence>,
    pub to_timestamp: String,
    #[schemars(with = "f64")]
    pub to_unix_time: UnixTime,
    /// As `from_source`, with `capture_end`.
    pub to_source: SourceName,
    pub to_frame: Option<u64>,
    pub to_how: Option<Evidence>,
}

/// The filters of a run (`--broker`, `--connection`, `--since`, `--until`,
/// `--errors-only`, `--frame`), the time bounds as times.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Filters {
    pub broker: Option<i32>,
    pub connection: Option<u64>,
    pub since: Option<String>,
    pub until: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub since_unix_time: Option<UnixTime>,
    #[schemars(with = "Option<f64>")]
    pub until_unix_time: Option<UnixTime>,
    pub errors_only: bool,
    pub frame: Option<u64>,
    /// With `frame`: what that frame held, as one sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_holds: Option<String>,
    /// AllocateProducerIds exchanges the filters let through, of `summary.exchanges.total`.
    pub exchanges_shown: u64,
}

/// The answer to "did the controller hand out producer IDs correctly?", judged once from
/// the whole capture whatever the filters: the text and HTML reports print `headline`,
/// `--fail-on` tests `code` and `grade`.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct Verdict {
    /// `duplicate_producer_ids`, `producer_ids_went_backwards`, `incomplete_capture`,
    /// `no_producer_ids_granted`, `correct_as_far_as_captured`, `correct_with_warnings`,
    /// `correct` or `no_exchanges`.
    #[schemars(schema_with = "code_schema")]
    pub code: crate::analysis::verdict::Code,
    /// `wrong`, `unsure`, `warned`, `right` or `nothing`.
    #[schemars(schema_with = "grade_schema")]
    pub grade: crate::analysis::verdict::Grade,
    /// One complete sentence, starting with the code in capitals.
    pub headline: String,
    /// The counts it rests on.
    #[schemars(schema_with = "verdict_facts_schema")]
    pub facts: BTreeMap<&'static str, Fact>,
    /// What the capture cannot show, bytes missing from it first.
    pub limits: Vec<VerdictLimit>,
    /// What the answer lacks for what was lost (a limit with `damage` or `own`); absent
    /// when nothing was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cost: Vec<VerdictCost>,
}

/// Something the answer lacks because bytes were lost or given up.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct VerdictCost {
    /// `requests_not_read`, `brokers_unknown`, `leaders_unnamed` or `leader_unknown`.
    pub kind: crate::analysis::verdict::CostKind,
    pub count: u64,
    /// What it is, with its count, as the headline says it after "the answer lacks".
    pub text: String,
}

/// Something the capture cannot show.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct VerdictLimit {
    /// What the capture cannot show: one of the names in the schema's `LimitKind`.
    pub kind: crate::analysis::verdict::LimitKind,
    pub count: u64,
    /// True when bytes are missing from the capture, false when they are there but
    /// could not be read.
    pub damage: bool,
    /// True when the limit is pidshark's own (`--max-memory`, `--max-connections`), not
    /// the capture's: a larger one reads more.
    pub own: bool,
    /// What it is, with its count.
    pub text: String,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Tool {
    #[schemars(schema_with = "tool_name_schema")]
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Capture {
    pub path: String,
    pub format: crate::capture::FileFormat,
    #[schemars(schema_with = "link_types_schema")]
    pub link_types: Vec<String>,
    pub packets: u64,
    pub bytes: u64,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub first_unix_time: Option<UnixTime>,
    #[schemars(with = "Option<f64>")]
    pub last_unix_time: Option<UnixTime>,
    /// Packets captured shorter than they were on the wire (cut by the snaplen).
    pub packets_cut: u64,
    /// The longest captured length among the packets cut: the snap length in effect;
    /// null when none was cut.
    pub cut_len: Option<u32>,
    /// Packets that were copies of packets another file holds (the same packet captured on
    /// two hosts), read once.
    pub duplicate_packets: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct Summary {
    pub packets: u64,
    /// Packets read once as copies of another file's (see `captures[].duplicate_packets`).
    pub duplicate_packets: u64,
    pub tcp_connections: u64,
    /// Connections pidshark forgot at `--max-memory` or `--max-connections` while it
    /// followed them: one met again is counted twice in `tcp_connections`, which is then
    /// at most this many too high.
    pub forgotten_connections: u64,
    pub kafka_connections: u64,
    /// TCP connections that carried bytes not read as Kafka (each has a `not_kafka`
    /// diagnostic saying why).
    pub not_kafka_connections: u64,
    /// TCP connections whose bytes are TLS, given up as encrypted (each has a
    /// `tls_encrypted` diagnostic); not counted in `not_kafka_connections`.
    pub encrypted_connections: u64,
    pub kafka_requests: u64,
    pub kafka_responses: u64,
    pub api_keys: BTreeMap<String, ApiKeyCount>,
    pub exchanges: ExchangeCounts,
    pub unmatched_responses: u64,
    /// Of `unmatched_responses`, those whose bytes read whole as an AllocateProducerIds
    /// answer granting a block would: blocks perhaps granted whose requests were not
    /// read. Absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmatched_like_blocks: Option<u64>,
    #[schemars(schema_with = "error_counts_schema")]
    pub error_codes: BTreeMap<String, u64>,
    pub latency_us: Option<Latency>,
    #[schemars(schema_with = "kind_counts_schema")]
    pub diagnostics: BTreeMap<&'static str, u64>,
    /// The same diagnostics by the severity each was raised at (a kind's message about
    /// an API that carries no producer ids is `info`); what `--fail-on warning` counts.
    #[schemars(schema_with = "severity_counts_schema")]
    pub diagnostics_by_severity: BTreeMap<&'static str, u64>,
    /// AllocateProducerIds per broker id (as found in requests).
    pub brokers: BTreeMap<i32, Broker>,
}

/// One broker's AllocateProducerIds traffic.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct Broker {
    pub requests: u64,
    pub complete: u64,
    pub unanswered: u64,
    /// Without a response, where the capture may have lost it.
    pub response_unknown: u64,
    /// Non-NONE error responses by Kafka error name.
    pub errors: BTreeMap<String, u64>,
    /// Producer ids in the blocks this broker was granted.
    pub ids_granted: i64,
    /// The distinct epochs its requests carried, ascending: the first 64 seen.
    pub epochs_seen: Vec<i64>,
    /// Where a request first carried an epoch past those listed; absent when every
    /// epoch is listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs_unlisted_from_frame: Option<u64>,
    /// Error responses of codes past the 256 counted in `errors`, and where the first
    /// was asked for; both absent when every code is counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_uncounted: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_unlisted_from_frame: Option<u64>,
    /// Over its complete exchanges, microseconds; null when there are none.
    pub latency_us: Option<BrokerLatency>,
}

impl Broker {
    /// What the text formats add after the epochs listed: that more came, and where.
    pub fn more_epochs(&self) -> String {
        self.epochs_unlisted_from_frame
            .map_or_else(String::new, |f| format!(" and more from frame {f}"))
    }

    /// What the text formats add after the errors counted: how many responses of
    /// other codes were not, and from where.
    pub fn more_errors(&self) -> String {
        match (self.errors_uncounted, self.errors_unlisted_from_frame) {
            (Some(n), Some(f)) => format!(" and {n} more of other codes from frame {f}"),
            _ => String::new(),
        }
    }

    /// Its error responses, those whose code was not counted included.
    pub fn error_responses(&self) -> u64 {
        self.errors.values().sum::<u64>() + self.errors_uncounted.unwrap_or(0)
    }
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, JsonSchema)]
pub struct BrokerLatency {
    pub p50: f64,
    pub p99: f64,
    /// `false` when the broker's latencies went to a temporary file that could not be
    /// made, written or read back, and these come from a histogram within 10%; absent
    /// when exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentiles_exact: Option<bool>,
}

/// Every block of producer ids granted, and what is wrong with them.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct ProducerIdBlocks {
    /// The most common block length; null without blocks.
    pub usual_len: Option<i32>,
    /// Latency above which a response is reported slow, microseconds; null without latencies.
    pub slow_threshold_us: Option<f64>,
    /// In time order of their responses.
    pub blocks: Vec<PidBlock>,
    /// In packet order; each is also in `diagnostics`.
    pub findings: Vec<PidFinding>,
}

/// Produce (API key 0): what the producers' batches came to, judged by the broker's
/// producer state (see `write_*` diagnostics). Absent when the capture holds no Produce
/// request.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Writes {
    /// Produce requests, and those not read whole (their `kafka_*` diagnostics say why).
    pub requests: u64,
    pub requests_not_read: u64,
    /// Record batches read, and those with a producer id (idempotent or transactional).
    pub batches: u64,
    pub idempotent_batches: u64,
    /// Batches answered with success, and refused with an error.
    pub acknowledged: u64,
    pub rejected: u64,
    /// Batches of requests without an answer: sent with acks 0, or never answered.
    pub unanswered: u64,
    /// Batches whose answer the capture may have lost.
    pub response_unknown: u64,
    /// Acknowledged batches the broker took for retries of a batch it had appended
    /// (same producer id, epoch, partition and sequences, at that batch's offset).
    pub retries_deduplicated: u64,
    /// Of those, batches with other records than the appended one (another CRC):
    /// acknowledged and never appended (`write_not_appended`).
    pub not_appended: u64,
    /// Producer ids and epochs that wrote.
    pub producers: u64,
    /// Refused batches by error name.
    #[schemars(schema_with = "error_counts_schema")]
    pub errors: BTreeMap<String, u64>,
    /// The batches a post-mortem looks for, in the order their exchanges completed: those
    /// never appended, and those refused for their sequence or epoch; at most 1,000
    /// (`of_interest_not_listed` counts the rest). Absent when there is none, and from
    /// the ndjson `report` line, whose `write` lines hold them.
    #[schemars(skip_serializing_if = "Vec::is_empty")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub of_interest: Vec<WriteBatch>,
    pub of_interest_not_listed: u64,
    /// The producer ids and epochs a post-mortem looks at: written by two producers, or
    /// with a batch never appended or refused for its sequence or epoch; by id and epoch,
    /// at most 100 (`producers_of_interest_not_listed` counts the rest). Each with the
    /// grants of the id in the capture and, per connection that wrote with it, the
    /// partitions, sequence ranges and outcomes. Absent when there is none.
    #[schemars(skip_serializing_if = "Vec::is_empty")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub producers_of_interest: Vec<crate::analysis::writes::ProducerWrites>,
    pub producers_of_interest_not_listed: u64,
}

/// One record batch of a Produce request, and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct WriteBatch {
    pub connection: u64,
    pub client: String,
    pub server: String,
    /// The request header's `client_id` (absent when null).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Absent for a producer that is not transactional.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    pub correlation_id: i32,
    pub api_version: i16,
    pub request_frame: u64,
    /// Absent without an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_frame: Option<u64>,
    /// The request's time.
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
    /// The topic's name, or its id (32 hex digits) from Produce version 13.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub partition: i32,
    pub producer_id: Option<i64>,
    pub producer_epoch: Option<i16>,
    pub first_sequence: Option<i32>,
    pub last_sequence: Option<i32>,
    pub records: Option<i32>,
    pub crc: Option<u32>,
    /// What became of it: `not_appended` or `rejected` here (see `--format csv-writes`
    /// for every outcome).
    pub outcome: crate::analysis::writes::WriteOutcome,
    /// The offset it was acknowledged at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// The error it was refused with, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "error_name_schema")]
    pub error: Option<String>,
}

/// InitProducerId (API key 22): which client was granted which producer id, and where
/// that id lies among the blocks.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct ProducerIds {
    /// Counts over the InitProducerId exchanges.
    pub summary: ProducerIdCounts,
    /// The same counts over the EndTxn exchanges (version 5 grants the epoch a
    /// transactional producer goes on with); absent when the capture has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_txn: Option<ProducerIdCounts>,
    /// Every InitProducerId and EndTxn exchange, by request frame, then connection,
    /// then correlation id (as `exchanges`); the filters apply to them as to
    /// `exchanges`. Absent with `--no-producer-entries`.
    #[schemars(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<ProducerIdEntry>,
}

/// One exchange that may grant a producer id: InitProducerId, or EndTxn (version 5
/// grants). Fields not read from the capture, or not in its API and version, are absent.
#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct ProducerIdEntry {
    /// The API of the exchange: how the id was granted (`init_producer_id`, or `end_txn`,
    /// where transactions v2 bump the epoch at a transaction's end).
    pub api: crate::pairing::GrantedBy,
    pub connection: u64,
    pub client: String,
    pub server: String,
    pub correlation_id: i32,
    pub api_version: i16,
    #[schemars(schema_with = "status_schema")]
    pub status: Status,
    /// The broker that answered, and how its address is known; null when not known.
    pub broker_id: Option<i32>,
    pub broker_source: Option<crate::analysis::AddressSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<Option<String>>,
    /// Null for an idempotent producer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_timeout_ms: Option<i32>,
    /// The producer id and epoch the client asked to keep (InitProducerId version 3+; -1
    /// for none), or the ones it ends its transaction with (EndTxn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_producer_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_producer_epoch: Option<i16>,
    /// EndTxn: whether the transaction was committed (false: aborted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub committed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "error_name_schema")]
    pub error: Option<String>,
    /// The producer id and epoch of the response (-1 with an error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_epoch: Option<i16>,
    /// Version 6+: the producer id and epoch of a transaction still prepared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ongoing_txn_producer_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ongoing_txn_producer_epoch: Option<i16>,
    /// Where a granted id lies among its broker's blocks, as Kafka's producer-id manager
    /// uses them: `in_block`, `previous_block`, `before_capture`,
    /// `kept_by_transactional_id`, `epoch_bump`, `another_brokers_block`, `older_block`,
    /// `outside_blocks` or `unknown`; null when no id was granted.
    pub placement: Option<crate::analysis::PlacementName>,
    /// Why it lies there, in a sentence; absent with `in_block` and when nothing was
    /// granted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_reason: Option<String>,
    /// The block of the capture holding the id (the latest granted before it), when one
    /// does.
    pub block: Option<BlockRef>,
    /// Response frame of an earlier grant of the same id and epoch to another producer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicate_of_frame: Option<u64>,
    pub request_frame: u64,
    pub request_timestamp: String,
    #[schemars(with = "f64")]
    pub request_unix_time: UnixTime,
    pub response_frame: Option<u64>,
    pub response_timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub unix_time: Option<UnixTime>,
    pub latency_us: Option<f64>,
    /// Why the request or response did not fully decode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_error: Option<String>,
}

/// A block of `producer_id_blocks.blocks`, as a producer id refers to it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub struct BlockRef {
    pub start: i64,
    pub end: i64,
    pub broker_id: i32,
    pub response_frame: u64,
}

/// A time as seconds since the Unix epoch: a JSON number beside each RFC 3339 `timestamp`,
/// for arithmetic (jq's `fromdateiso8601` rejects fractional seconds). Exact to the
/// microsecond; nanoseconds are rounded to what a 64-bit float holds (about 0.2 µs now).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnixTime(pub Timestamp);

impl UnixTime {
    pub fn seconds(self) -> f64 {
        let Timestamp { secs, nanos, nano } = self.0;
        match (nano, secs.checked_mul(1_000_000)) {
            // an integer of microseconds is exact in a float below 2^53 (year 2255): the
            // quotient is then the float nearest the decimal time, written as that decimal
            (false, Some(micros)) if micros.unsigned_abs() < 1 << 53 => {
                (micros + i64::from(nanos / 1000)) as f64 / 1e6
            }
            _ => secs as f64 + f64::from(nanos) / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_time_is_the_decimal_time_to_the_microsecond() {
        let t = |secs, nanos, nano| UnixTime(Timestamp { secs, nanos, nano });
        let json = |u: UnixTime| serde_json::to_string(&u).unwrap();
        assert_eq!(
            json(t(1_764_422_316, 827_541_000, false)),
            "1764422316.827541"
        );
        assert_eq!(json(t(1_764_422_316, 1_000, false)), "1764422316.000001");
        assert_eq!(json(t(1_764_422_316, 0, false)), "1764422316.0");
        assert_eq!(json(t(-2, 500_000_000, false)), "-1.5");
        // nanoseconds: within a quarter of a microsecond at this magnitude
        let ns = t(1_764_422_316, 827_541_123, true).seconds();
        let off = (ns - 1_764_422_316.0) - 0.827_541_123;
        assert!(off.abs() < 2.5e-7, "{ns}");
    }

    /// A committed block's delivery is one typed value, written as the contract's two
    /// fields: `delivered_frame` only when a response delivered it.
    #[test]
    fn a_delivery_is_written_as_its_name_and_frame() {
        let json = |d: Delivery| serde_json::to_string(&d).unwrap();
        assert_eq!(
            json(Delivery::Delivered { frame: 57 }),
            r#"{"delivery":"delivered","delivered_frame":57}"#
        );
        assert_eq!(
            json(Delivery::NotDelivered),
            r#"{"delivery":"not_delivered"}"#
        );
    }
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl From<latency::Summary> for Latency {
    fn from(s: latency::Summary) -> Self {
        Self {
            count: s.count,
            min: s.min,
            mean: s.mean,
            p50: s.p50,
            p90: s.p90,
            p99: s.p99,
            max: s.max,
            percentiles_exact: s.percentiles_exact,
        }
    }
}

impl Serialize for UnixTime {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.seconds())
    }
}

/// A block granted by a successful (NONE) response.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct PidBlock {
    pub start: i64,
    /// Inclusive.
    pub end: i64,
    pub len: i32,
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub connection: u64,
    pub client: String,
    pub server: String,
    pub correlation_id: i32,
    pub request_frame: u64,
    pub response_frame: u64,
    /// Time of the response.
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct PidFinding {
    #[schemars(schema_with = "severity_schema")]
    pub severity: Severity,
    #[schemars(schema_with = "kind_schema")]
    pub kind: Kind,
    pub broker_id: Option<i32>,
    pub connection: Option<u64>,
    /// Frames involved, in packet order.
    pub frames: Vec<u64>,
    /// Time of the packet where the finding shows (the last of `frames`, or `facts.frame`).
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
    /// What `message` says, as fields: `frame` (where it shows) and the kind's own (see
    /// docs/report-format.md).
    pub facts: BTreeMap<&'static str, Fact>,
    pub message: String,
    /// The ids it is about (an overlap, regression or gap), typed for the formats that
    /// draw them; in the JSON, its facts say so.
    #[serde(skip)]
    #[schemars(skip)]
    pub ids: Option<IdSpan>,
    /// The fault it restates with other findings (`facts.fault_frame`), typed likewise.
    #[serde(skip)]
    #[schemars(skip)]
    pub fault: Option<u64>,
    /// What the formats draw of it beside its sentence, typed likewise.
    #[serde(skip)]
    #[schemars(skip)]
    pub detail: Option<crate::analysis::Detail>,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub struct ApiKeyCount {
    pub api_key: i16,
    pub requests: u64,
    pub responses: u64,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub struct ExchangeCounts {
    pub total: u64,
    pub complete: u64,
    pub unanswered: u64,
    /// Without a response, where the capture may have lost it (`status` `response_unknown`).
    pub response_unknown: u64,
}

/// Latency over complete exchanges, in microseconds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, JsonSchema)]
pub struct Latency {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// False when percentiles come from a histogram (within 0.1%), as in `--format ndjson`.
    pub percentiles_exact: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, JsonSchema)]
pub struct Exchange {
    pub connection: u64,
    pub client: String,
    pub server: String,
    pub correlation_id: i32,
    #[schemars(schema_with = "status_schema")]
    pub status: Status,
    pub request: Request,
    pub response: Option<Response>,
    pub latency_us: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct TaggedField {
    pub tag: u32,
    /// Lowercase hex: the whole data, or its first 1 KiB when `data_len` is present.
    pub data: String,
    /// Present when `data` holds only the first 1 KiB: the whole data's length in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_len: Option<u64>,
    /// Present with `data_len`: the CRC-32 (IEEE) of the whole data, as 8 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_crc32: Option<String>,
}

/// Where a packet lies in its own capture file, when several files are merged (`frame`
/// numbers the merged capture).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, JsonSchema)]
pub struct InCapture {
    /// Index of the file in `captures[]`.
    pub capture_index: u32,
    /// Its packet number inside that file.
    pub capture_frame: u64,
}

impl From<crate::packet_ref::Origin> for InCapture {
    fn from(origin: crate::packet_ref::Origin) -> Self {
        Self {
            capture_index: origin.capture(),
            capture_frame: origin.frame(),
        }
    }
}

/// A request as read: where it is, its header, and its decoded fields.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Request {
    pub frame: u64,
    /// Index of the file in `captures[]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub capture_index: Option<u32>,
    /// Its packet number inside that file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub capture_frame: Option<u64>,
    pub first_frame: u64,
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
    pub size: u64,
    pub api_key: i16,
    pub api_version: i16,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_id: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_epoch: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tagged_fields: Option<Vec<TaggedField>>,
    /// Bytes of the message that are not in the capture (snaplen, lost segments); the
    /// fields in them are absent. Left out when the message was captured whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_not_captured: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_error: Option<String>,
    /// The message as captured (without its size prefix); only for the tree view.
    #[serde(skip)]
    #[schemars(skip)]
    pub raw: Vec<u8>,
}

/// A response as read: where it is, its header, and its decoded fields.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Response {
    pub frame: u64,
    /// Index of the file in `captures[]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32")]
    pub capture_index: Option<u32>,
    /// Its packet number inside that file.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub capture_frame: Option<u64>,
    pub first_frame: u64,
    pub timestamp: String,
    #[schemars(with = "f64")]
    pub unix_time: UnixTime,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_tagged_fields: Option<Vec<TaggedField>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throttle_time_ms: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "error_name_schema")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_id_start: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_id_len: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tagged_fields: Option<Vec<TaggedField>>,
    /// Bytes of the message that are not in the capture (snaplen, lost segments); the
    /// fields in them are absent. Left out when the message was captured whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_not_captured: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_error: Option<String>,
    /// The message as captured (without its size prefix); only for the tree view.
    #[serde(skip)]
    #[schemars(skip)]
    pub raw: Vec<u8>,
}

/// Something pidshark noticed about the input or its own limits, with where it happened.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct Diagnostic {
    #[schemars(schema_with = "severity_schema")]
    pub severity: Severity,
    #[schemars(schema_with = "kind_schema")]
    pub kind: Kind,
    pub connection: Option<u64>,
    pub frame: Option<u64>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub in_capture: Option<InCapture>,
    /// Time of `frame`; null without one (or when the diagnostic is not about a packet
    /// that was read: the end of a file, a connection's end).
    pub timestamp: Option<String>,
    #[schemars(with = "Option<f64>")]
    pub unix_time: Option<UnixTime>,
    /// What `message` says, as fields (see docs/report-format.md).
    pub facts: BTreeMap<&'static str, Fact>,
    pub message: String,
}
