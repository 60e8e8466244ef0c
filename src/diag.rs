//! Diagnostics: everything odd seen in the input, as data for the report.
//!
//! A diagnostic never stops the run. Each has a severity, a kind (a stable string from
//! the report contract), the connection and frame it concerns, and one sentence with the
//! numbers that matter. The report lists them in packet order.
//!
//! A stage says what it saw as an [`Observation`], whose variant is the kind and whose
//! fields give both the sentence and the facts.

pub mod facts;
mod kinds;
pub mod obs;
mod observation;
mod order;
mod parts;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use crate::packet_ref::{Origin, PacketRef};
use crate::timestamp::Timestamp;

pub use kinds::Kind;
pub use observation::{IdSpan, Observation};
pub use order::{Found, Place, Stage};
pub use parts::{
    BadGrant, ConnectionEnds, Cut, Damage, FragmentsDropped, FramingLost, GivenUp, Irregular,
    NamedCode, Overlap, RetryAfter, Side, Undecoded,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub const ALL: [Self; 3] = [Self::Info, Self::Warning, Self::Error];

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "info" => Some(Self::Info),
            "warning" => Some(Self::Warning),
            "error" => Some(Self::Error),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// Written as their names: the model holds them typed, the report as the contract's
/// strings.
impl serde::Serialize for Severity {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Kind {
    /// The kind with this contract name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// What the kind means, as plain text (its Markdown backticks dropped).
    pub fn meaning(self) -> String {
        self.meaning_markdown().replace('`', "")
    }
}

/// One fact of a finding: a number, a name, a yes or no, or a list of names, written as
/// JSON's number, string, boolean or array of strings.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Fact {
    Int(i64),
    Uint(u64),
    Float(f64),
    Text(String),
    Bool(bool),
    List(Vec<String>),
}

// Equal when written the same: floats by their bits (no NaN among the facts).
impl PartialEq for Fact {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => a == b,
            (Self::Uint(a), Self::Uint(b)) => a == b,
            (Self::Float(a), Self::Float(b)) => a.to_bits() == b.to_bits(),
            (Self::Text(a), Self::Text(b)) => a == b,
            (Self::Bool(a), Self::Bool(b)) => a == b,
            (Self::List(a), Self::List(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Fact {}

impl Fact {
    /// The number, when it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Self::Int(v) => Some(*v as f64),
            Self::Uint(v) => Some(*v as f64),
            Self::Float(v) => Some(*v),
            Self::Text(_) | Self::Bool(_) | Self::List(_) => None,
        }
    }
}

impl From<i64> for Fact {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<i32> for Fact {
    fn from(v: i32) -> Self {
        Self::Int(v.into())
    }
}

impl From<u32> for Fact {
    fn from(v: u32) -> Self {
        Self::Uint(v.into())
    }
}

impl From<u64> for Fact {
    fn from(v: u64) -> Self {
        Self::Uint(v)
    }
}

impl From<f64> for Fact {
    fn from(v: f64) -> Self {
        Self::Float(v)
    }
}

impl From<bool> for Fact {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl From<Vec<String>> for Fact {
    fn from(v: Vec<String>) -> Self {
        Self::List(v)
    }
}

impl From<String> for Fact {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

impl From<&str> for Fact {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}

/// The facts of a finding by name, in the order given (named as in the report's fields:
/// `ids_start`, `other_broker_id`, `frame`...).
pub type Facts = Vec<(&'static str, Fact)>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: Kind,
    pub connection: Option<u64>,
    pub frame: Option<u64>,
    /// Time of the packet, when the diagnostic is about one.
    pub timestamp: Option<Timestamp>,
    /// Where that packet lies in its own file, when several are merged.
    pub origin: Option<Origin>,
    pub message: String,
    /// What `message` says, as fields.
    pub facts: Facts,
}

/// Diagnostics of one kind listed in the report; further ones are only counted, so a
/// capture with a million cut packets cannot grow the report without bound.
pub const MAX_LISTED_PER_KIND: u64 = 1000;

/// Collects diagnostics as the pipeline finds them.
#[derive(Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
    counts: BTreeMap<Kind, u64>,
    /// Messages not read whole (`kafka_message_truncated`, `kafka_decode_error`,
    /// `kafka_unsupported_version`) by kind and API key: what the damage cost.
    undecoded_by_api: BTreeMap<(Kind, i16), u64>,
    /// Diagnostics raised at a lower severity than their kind's (see
    /// [`Observation::severity`]): listed, but neither gated on nor graded as their kind.
    lowered: BTreeMap<(Kind, Severity), u64>,
    /// Warnings about the wire of connections not yet read to their end, by connection
    /// and kind: (found, listed). Lowered to `info` if the connection carried no
    /// producer-id API ([`Diagnostics::connection_read`]).
    open_wire: BTreeMap<(u64, Kind), (u64, u64)>,
    /// Connections whose listed wire warnings are lowered to `info`.
    lowered_connections: BTreeSet<u64>,
    /// Per listed item: the API by whose count it was listed (messages not read).
    apis: Vec<Option<i16>>,
    /// When one part of the work is collected here (see [`order`]): where each listed
    /// diagnostic was found in the whole run's order.
    places: Option<Box<order::Places>>,
}

/// Warnings about a connection's wire, which concern producer ids only if the
/// connection carried them.
const WIRE_WARNINGS: [Kind; 8] = [
    Kind::TcpOverlapConflict,
    Kind::TcpOverlapUnread,
    Kind::TcpRstOutOfWindow,
    Kind::KafkaFrameTooLarge,
    Kind::KafkaResync,
    Kind::KafkaFrameIncomplete,
    Kind::DuplicateCorrelationId,
    Kind::PendingLimit,
];

/// Open connections whose wire warnings are held to be lowered: past it, a connection's
/// warnings stay warnings.
const MAX_OPEN_WIRE: usize = 4096;
/// Connections whose listed warnings are shown lowered: more than the wire warnings
/// listed can name.
const MAX_LOWERED_LISTED: usize = WIRE_WARNINGS.len() * MAX_LISTED_PER_KIND as usize;

/// Where a diagnostic is: a packet (its frame and time), a frame number alone, or no
/// frame at all (a fact about the files).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Packet(PacketRef),
    Frame(u64),
    Nowhere,
}

impl From<PacketRef> for At {
    fn from(at: PacketRef) -> Self {
        Self::Packet(at)
    }
}

impl From<Option<u64>> for At {
    fn from(frame: Option<u64>) -> Self {
        frame.map_or(Self::Nowhere, Self::Frame)
    }
}

impl At {
    pub fn frame(self) -> Option<u64> {
        match self {
            Self::Packet(at) => Some(at.frame),
            Self::Frame(frame) => Some(frame),
            Self::Nowhere => None,
        }
    }

    pub fn timestamp(self) -> Option<Timestamp> {
        match self {
            Self::Packet(at) => Some(at.timestamp),
            _ => None,
        }
    }

    pub fn origin(self) -> Option<Origin> {
        match self {
            Self::Packet(at) => at.origin,
            _ => None,
        }
    }
}

impl Diagnostics {
    /// A diagnostic about `connection` at `at`. Its sentence and facts are written only
    /// if it is listed: past [`MAX_LISTED_PER_KIND`] of its kind it is only counted (a
    /// capture can raise one per packet). An observation borrows its text, so building
    /// one allocates nothing either.
    // Inlined, with the listing out of line, one past the limit costs its count and the
    // few stores that build it.
    #[inline]
    pub fn add(&mut self, connection: Option<u64>, at: impl Into<At>, what: Observation<'_>) {
        let mut listed_of_api = None;
        let mut api = None;
        if let Observation::KafkaMessageTruncated(u)
        | Observation::KafkaDecodeError(u)
        | Observation::KafkaUnsupportedVersion(u) = &what
        {
            let key = (what.kind(), u.api.code);
            let of_api = self.undecoded_by_api.entry(key).or_default();
            *of_api += 1;
            listed_of_api = Some(*of_api <= MAX_LISTED_PER_KIND);
            api = Some(u.api.code);
        }
        let kind = what.kind();
        let severity = what.severity();
        if severity != kind.severity() {
            *self.lowered.entry((kind, severity)).or_default() += 1;
        }
        let listed = self.counted_listed(kind);
        let listed = listed_of_api.unwrap_or(listed);
        if severity == Severity::Warning {
            self.hold_wire(connection, kind, (1, u64::from(listed)));
        }
        if listed {
            self.list(connection, at.into(), what, api);
        }
    }

    /// Holds a wire warning of an open connection until it is known whether the
    /// connection carried producer ids.
    fn hold_wire(&mut self, connection: Option<u64>, kind: Kind, (found, shown): (u64, u64)) {
        let Some(connection) = connection.filter(|_| WIRE_WARNINGS.contains(&kind)) else {
            return;
        };
        let key = (connection, kind);
        if self.open_wire.len() >= MAX_OPEN_WIRE && !self.open_wire.contains_key(&key) {
            return;
        }
        let held = self.open_wire.entry(key).or_default();
        held.0 += found;
        held.1 += shown;
    }

    /// Connection `connection` was read to its end: when it carried no producer-id API
    /// (`about_producer_ids` false), its wire warnings are lowered to `info`, listed but
    /// not graded.
    pub fn connection_read(&mut self, connection: u64, about_producer_ids: bool) {
        for kind in WIRE_WARNINGS {
            let Some((found, shown)) = self.open_wire.remove(&(connection, kind)) else {
                continue;
            };
            if about_producer_ids {
                continue;
            }
            *self.lowered.entry((kind, Severity::Info)).or_default() += found;
            if shown > 0 && self.lowered_connections.len() < MAX_LOWERED_LISTED {
                self.lowered_connections.insert(connection);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn list(&mut self, connection: Option<u64>, at: At, what: Observation<'_>, api: Option<i16>) {
        let (kind, severity) = (what.kind(), what.severity());
        let written = (what.to_string(), what.facts());
        self.list_written((kind, severity), connection, at, written, api);
    }

    /// A diagnostic already written: its message, and the facts the message states as
    /// fields (one listed again from another collection, or a finding of the analysis).
    pub fn push(
        &mut self,
        kind: Kind,
        connection: Option<u64>,
        at: impl Into<At>,
        message: String,
        facts: Facts,
    ) {
        if self.counted_listed(kind) {
            let written = (message, facts);
            self.list_written(
                (kind, kind.severity()),
                connection,
                at.into(),
                written,
                None,
            );
        }
    }

    /// Counts one diagnostic of `kind`; whether it is to be listed.
    fn counted_listed(&mut self, kind: Kind) -> bool {
        let count = self.counts.entry(kind).or_default();
        *count += 1;
        *count <= MAX_LISTED_PER_KIND && !self.listed_elsewhere(kind)
    }

    /// Lists a diagnostic, written: `api` when it was listed by the count of its API's.
    fn list_written(
        &mut self,
        (kind, severity): (Kind, Severity),
        connection: Option<u64>,
        at: At,
        (message, facts): (String, Facts),
        api: Option<i16>,
    ) {
        self.items.push(Diagnostic {
            severity,
            kind,
            connection,
            frame: at.frame(),
            timestamp: at.timestamp(),
            origin: at.origin(),
            message,
            facts,
        });
        self.apis.push(api);
        self.placed();
    }

    /// Counts `n` more diagnostics of `kind` that are not listed.
    pub fn count_more(&mut self, kind: Kind, n: u64) {
        if n > 0 {
            *self.counts.entry(kind).or_default() += n;
        }
    }

    /// Adds the diagnostics another collection found (a connection's, held until it
    /// proved Kafka), within this one's limits.
    pub fn absorb(&mut self, other: Self) {
        for ((connection, kind), (found, shown)) in &other.open_wire {
            self.hold_wire(Some(*connection), *kind, (*found, *shown));
        }
        self.lowered_connections.extend(&other.lowered_connections);
        for (key, n) in &other.lowered {
            *self.lowered.entry(*key).or_default() += n;
        }
        // each listed one counted as if added here, then the rest
        let mut listed: BTreeMap<Kind, u64> = BTreeMap::new();
        let mut listed_of_api: BTreeMap<(Kind, i16), u64> = BTreeMap::new();
        for (d, api) in other.items.into_iter().zip(other.apis) {
            *listed.entry(d.kind).or_default() += 1;
            let at = match (d.frame, d.timestamp) {
                (Some(frame), Some(timestamp)) => At::Packet(PacketRef {
                    frame,
                    timestamp,
                    origin: d.origin,
                }),
                (frame, _) => At::from(frame),
            };
            let of_kind = self.counted_listed(d.kind);
            let is_listed = match api {
                Some(api) => {
                    *listed_of_api.entry((d.kind, api)).or_default() += 1;
                    let of_api = self.undecoded_by_api.entry((d.kind, api)).or_default();
                    *of_api += 1;
                    *of_api <= MAX_LISTED_PER_KIND
                }
                None => of_kind,
            };
            if is_listed {
                let (kind, severity) = (d.kind, d.severity);
                let written = (d.message, d.facts);
                self.list_written((kind, severity), d.connection, at, written, api);
            }
        }
        for (key, n) in other.undecoded_by_api {
            let counted = listed_of_api.get(&key).copied().unwrap_or(0);
            *self.undecoded_by_api.entry(key).or_default() += n.saturating_sub(counted);
        }
        for (kind, count) in other.counts {
            self.count_more(
                kind,
                count.saturating_sub(listed.get(&kind).copied().unwrap_or(0)),
            );
        }
    }

    /// All listed diagnostics in packet order; those without a frame (end of input)
    /// last, then one `diagnostics_limited` per kind that had more than were listed.
    /// The sort is stable, so equal frames keep the order they were found in.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        for d in &mut self.items {
            let lowered = d
                .connection
                .is_some_and(|c| self.lowered_connections.contains(&c));
            if lowered && d.severity == Severity::Warning && WIRE_WARNINGS.contains(&d.kind) {
                d.severity = Severity::Info;
            }
        }
        self.items.sort_by_key(|d| d.frame.unwrap_or(u64::MAX));
        let mut listed: HashMap<Kind, u64> = HashMap::new();
        for d in &self.items {
            *listed.entry(d.kind).or_default() += 1;
        }
        for (&kind, &count) in &self.counts {
            // past the limit, or, for messages not read, listed per API
            let listed = listed.get(&kind).copied().unwrap_or(0);
            let limited = if observation::UNDECODED_KINDS.contains(&kind) {
                count > listed
            } else {
                count > MAX_LISTED_PER_KIND
            };
            if limited {
                let what = Observation::DiagnosticsLimited(obs::DiagnosticsLimited {
                    kind,
                    count,
                    listed,
                });
                self.items.push(Diagnostic {
                    origin: None,
                    severity: Kind::DiagnosticsLimited.severity(),
                    kind: Kind::DiagnosticsLimited,
                    connection: None,
                    frame: None,
                    timestamp: None,
                    message: what.to_string(),
                    facts: what.facts(),
                });
            }
        }
        self.items
    }

    /// Diagnostics of `kind` found, including those not listed.
    /// Messages of `kinds` (among `kafka_message_truncated`, `kafka_decode_error`,
    /// `kafka_unsupported_version`), by API key.
    pub fn undecoded_by_api(&self, kinds: &[Kind]) -> BTreeMap<i16, u64> {
        let mut by_api = BTreeMap::new();
        for ((kind, api), n) in &self.undecoded_by_api {
            if kinds.contains(kind) {
                *by_api.entry(*api).or_default() += n;
            }
        }
        by_api
    }

    pub fn count(&self, kind: Kind) -> u64 {
        self.counts.get(&kind).copied().unwrap_or(0)
    }

    /// Diagnostics of `kind` at its own severity: those that grade the verdict.
    pub fn graded(&self, kind: Kind) -> u64 {
        let lowered: u64 = self
            .lowered
            .range((kind, Severity::Info)..=(kind, Severity::Error))
            .map(|(_, n)| n)
            .sum();
        self.count(kind).saturating_sub(lowered)
    }

    /// Diagnostics found by severity (each at its own, see [`Observation::severity`]),
    /// including those not listed; every severity, at 0 when none.
    pub fn by_severity(&self) -> BTreeMap<&'static str, u64> {
        let mut by: BTreeMap<&'static str, u64> =
            [Severity::Info, Severity::Warning, Severity::Error]
                .map(|s| (s.as_str(), 0))
                .into();
        for (&kind, &n) in &self.counts {
            *by.entry(kind.severity().as_str()).or_default() += n;
        }
        for (&(kind, severity), &n) in &self.lowered {
            if let Some(at_kind) = by.get_mut(kind.severity().as_str()) {
                *at_kind -= n.min(*at_kind);
            }
            *by.entry(severity.as_str()).or_default() += n;
        }
        by
    }

    /// Diagnostics found, by kind, including those not listed.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut counts: BTreeMap<&'static str, u64> = self
            .counts
            .iter()
            .map(|(kind, count)| (kind.as_str(), *count))
            .collect();
        let limited = self
            .counts
            .values()
            .filter(|count| **count > MAX_LISTED_PER_KIND)
            .count() as u64;
        if limited > 0 {
            counts.insert(Kind::DiagnosticsLimited.as_str(), limited);
        }
        counts
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_warnings_of_a_connection_without_producer_ids_are_lowered_when_it_is_read() {
        let conflict = || {
            Observation::TcpOverlapConflict(obs::TcpOverlapConflict {
                offset: 0,
                bytes: 1,
                from: "10.0.0.1:40000".parse().unwrap(),
            })
        };
        let mut diags = Diagnostics::default();
        for (connection, frame) in [(1, 10), (1, 11), (2, 12), (3, 13)] {
            diags.add(Some(connection), Some(frame), conflict());
        }
        // 1 carried no producer ids; 2 did; 3 is still open
        diags.connection_read(1, false);
        diags.connection_read(2, true);
        assert_eq!(diags.count(Kind::TcpOverlapConflict), 4);
        assert_eq!(diags.graded(Kind::TcpOverlapConflict), 2);
        let by = diags.by_severity();
        assert_eq!((by["info"], by["warning"]), (2, 2));
        let severities: Vec<(Option<u64>, Severity)> = diags
            .into_sorted()
            .iter()
            .map(|d| (d.connection, d.severity))
            .collect();
        assert_eq!(
            severities,
            [
                (Some(1), Severity::Info),
                (Some(1), Severity::Info),
                (Some(2), Severity::Warning),
                (Some(3), Severity::Warning)
            ]
        );
    }

    #[test]
    fn messages_not_read_are_listed_per_api_so_a_flood_of_one_hides_no_other() {
        let cut = |code, name| {
            Observation::KafkaMessageTruncated(Undecoded {
                api: NamedCode { code, name },
                side: Side::Client,
                correlation_id: 1,
                problem: "cut",
            })
        };
        let mut diags = Diagnostics::default();
        for frame in 0..1_500 {
            diags.add(Some(1), Some(frame), cut(1, "Fetch"));
        }
        for frame in 1_500..1_505 {
            diags.add(Some(2), Some(frame), cut(22, "InitProducerId"));
        }
        let listed = diags.into_sorted();
        let of_api = |conn| listed.iter().filter(|d| d.connection == Some(conn)).count();
        assert_eq!((of_api(1), of_api(2)), (1_000, 5));
        let limited: Vec<&str> = listed
            .iter()
            .filter(|d| d.kind == Kind::DiagnosticsLimited)
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(
            limited,
            ["1505 kafka_message_truncated diagnostics were found; only 1005 are listed, the first 1000 of each API"]
        );
    }

    #[test]
    fn every_kind_is_listed_once_and_parses_back() {
        let names: BTreeSet<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), Kind::ALL.len());
        for kind in Kind::ALL {
            assert_eq!(Kind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(Kind::from_name("nope"), None);
    }

    #[test]
    fn an_observation_is_listed_with_its_kind_sentence_and_facts_then_only_counted() {
        let gap = |bytes| {
            Observation::TcpGap(obs::TcpGap {
                bytes,
                from: "10.0.0.1:40000".parse().unwrap(),
                to: "10.0.0.2:9092".parse().unwrap(),
            })
        };
        let mut diags = Diagnostics::default();
        for frame in 1..=MAX_LISTED_PER_KIND + 2 {
            diags.add(Some(4), Some(frame), gap(frame));
        }
        assert_eq!(diags.count(Kind::TcpGap), MAX_LISTED_PER_KIND + 2);
        let items = diags.into_sorted();
        let first = items.first().unwrap();
        assert_eq!(
            (first.kind, first.severity, first.connection, first.frame),
            (Kind::TcpGap, Severity::Warning, Some(4), Some(1))
        );
        assert_eq!(first.message, gap(1).to_string());
        assert_eq!(first.facts, gap(1).facts());
        assert_eq!(items.len() as u64, MAX_LISTED_PER_KIND + 1);
        assert_eq!(items.last().unwrap().kind, Kind::DiagnosticsLimited);
    }

    #[test]
    fn lists_at_most_the_limit_per_kind_and_counts_all() {
        let mut diags = Diagnostics::default();
        for frame in 0..MAX_LISTED_PER_KIND + 5 {
            diags.push(
                Kind::PacketTruncated,
                None,
                Some(frame),
                "cut".into(),
                vec![],
            );
        }
        diags.push(
            Kind::TcpGap,
            None,
            Some(3),
            "gap".into(),
            vec![("bytes", 5u64.into())],
        );
        // Past the limit it is only counted: the item count below shows it unlisted.
        let past_limit = Observation::PacketTruncated(obs::PacketTruncated { bytes_missing: 1 });
        diags.add(None, Some(9), past_limit);
        let counts = diags.counts();
        assert_eq!(counts["packet_truncated"], MAX_LISTED_PER_KIND + 6);
        assert_eq!(counts["diagnostics_limited"], 1);
        let items = diags.into_sorted();
        assert_eq!(items.len() as u64, MAX_LISTED_PER_KIND + 2);
        let last = items.last().unwrap();
        assert_eq!(last.kind, Kind::DiagnosticsLimited);
        assert!(last.message.starts_with("1006 packet_truncated"));
        assert_eq!(items[4].kind, Kind::TcpGap); // frame order, stable
        assert_eq!(items[4].facts, vec![("bytes", Fact::Uint(5))]);
        assert_eq!(
            last.facts.first(),
            Some(&("kind", Fact::from("packet_truncated")))
        );
    }

    #[test]
    fn a_cut_message_of_an_api_without_producer_ids_is_info_and_does_not_grade() {
        let cut = |code, name| {
            Observation::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
                side: Side::Server,
                bytes: 73,
                api: Some(NamedCode { code, name }),
                correlation_id: Some(7),
                carries_producer_ids: code == 67,
            })
        };
        let mut diags = Diagnostics::default();
        diags.add(Some(1), Some(10), cut(1, "Fetch"));
        diags.add(Some(2), Some(11), cut(67, "AllocateProducerIds"));
        let unknown = Observation::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
            side: Side::Server,
            bytes: 9,
            api: None,
            correlation_id: None,
            carries_producer_ids: false,
        });
        diags.add(Some(3), Some(12), unknown);
        let mut inner = Diagnostics::default();
        inner.add(Some(4), Some(13), cut(3, "Metadata"));
        diags.absorb(inner);
        assert_eq!(diags.count(Kind::KafkaFrameIncomplete), 4);
        assert_eq!(diags.graded(Kind::KafkaFrameIncomplete), 2);
        let by = diags.by_severity();
        assert_eq!((by["info"], by["warning"]), (2, 2));
        let severities: Vec<Severity> = diags.into_sorted().iter().map(|d| d.severity).collect();
        use Severity::{Info, Warning};
        assert_eq!(severities, [Info, Warning, Warning, Info]);
    }
}
