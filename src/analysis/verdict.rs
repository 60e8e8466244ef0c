//! The verdict: did the controller hand out producer IDs correctly, as far as this
//! capture can show? Judged once, from the whole capture, most serious first; the text
//! and HTML reports print it, the JSON report carries it, `--fail-on` tests it. Filters
//! select what a report lists, never what is judged.
//!
//! In: the analysis's totals and findings, every diagnostic's count and what the capture
//! files say about themselves ([`Evidence`]). Out: a [`Verdict`]: a code, one complete
//! sentence, the facts it rests on and what the capture cannot show ([`Limit`]), each with
//! what to do about it. A capture that lost bytes is never judged correct.

use std::collections::BTreeMap;

use super::controllers::pieces::Piece;
use super::{BrokerStats, Finding, ProducerIdCounts, Totals};
use crate::capture::CaptureInfo;
use crate::diag::{obs, Diagnostics, Facts, Kind, Severity};
use crate::kafka::tables::ErrorCode;
use crate::pairing::Status;

mod cost;

pub use cost::{Cost, CostKind};

/// What the verdict says, most serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Code {
    DuplicateProducerIds,
    ProducerIdsWentBackwards,
    /// The wire and the controllers' log disagree on a delivered block.
    NotCommitted,
    IncompleteCapture,
    /// pidshark gave up part of the capture at its own limits.
    IncompleteReading,
    NoProducerIdsGranted,
    CorrectAsFarAsCaptured,
    CorrectWithWarnings,
    Correct,
    NoExchanges,
    /// A metadata log read alone: a block starts past the highest id committed before it.
    CommittedBlocksGap,
    /// A metadata log read alone: every block follows the one before it.
    CommittedBlocksConsistent,
}

impl Code {
    pub const ALL: [Self; 12] = [
        Self::DuplicateProducerIds,
        Self::ProducerIdsWentBackwards,
        Self::NotCommitted,
        Self::IncompleteCapture,
        Self::IncompleteReading,
        Self::NoProducerIdsGranted,
        Self::CorrectAsFarAsCaptured,
        Self::CorrectWithWarnings,
        Self::Correct,
        Self::NoExchanges,
        Self::CommittedBlocksGap,
        Self::CommittedBlocksConsistent,
    ];

    /// The name in the report (`verdict.code`) and for `--fail-on`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DuplicateProducerIds => "duplicate_producer_ids",
            Self::ProducerIdsWentBackwards => "producer_ids_went_backwards",
            Self::NotCommitted => "blocks_not_committed",
            Self::IncompleteCapture => "incomplete_capture",
            Self::IncompleteReading => "incomplete_reading",
            Self::NoProducerIdsGranted => "no_producer_ids_granted",
            Self::CorrectAsFarAsCaptured => "correct_as_far_as_captured",
            Self::CorrectWithWarnings => "correct_with_warnings",
            Self::Correct => "correct",
            Self::NoExchanges => "no_exchanges",
            Self::CommittedBlocksGap => "committed_blocks_gap",
            Self::CommittedBlocksConsistent => "committed_blocks_consistent",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The words the headline starts with.
    pub fn title(self) -> &'static str {
        match self {
            Self::DuplicateProducerIds => "DUPLICATE PRODUCER IDS",
            Self::ProducerIdsWentBackwards => "PRODUCER IDS WENT BACKWARDS",
            Self::NotCommitted => "BLOCKS NOT COMMITTED",
            Self::IncompleteCapture => "INCOMPLETE CAPTURE",
            Self::IncompleteReading => "INCOMPLETE READING",
            Self::NoProducerIdsGranted => "NO PRODUCER IDS GRANTED",
            Self::CorrectAsFarAsCaptured => "CORRECT AS FAR AS CAPTURED",
            Self::CorrectWithWarnings => "CORRECT, WITH WARNINGS",
            Self::Correct => "CORRECT",
            Self::NoExchanges => "NO ALLOCATEPRODUCERIDS EXCHANGES",
            Self::CommittedBlocksGap => "COMMITTED BLOCKS GAP",
            Self::CommittedBlocksConsistent => "COMMITTED BLOCKS CONSISTENT",
        }
    }

    pub fn grade(self) -> Grade {
        match self {
            Self::DuplicateProducerIds | Self::ProducerIdsWentBackwards | Self::NotCommitted => {
                Grade::Wrong
            }
            Self::IncompleteCapture
            | Self::IncompleteReading
            | Self::NoProducerIdsGranted
            | Self::CorrectAsFarAsCaptured => Grade::Unsure,
            Self::CorrectWithWarnings | Self::CommittedBlocksGap => Grade::Warned,
            Self::Correct | Self::CommittedBlocksConsistent => Grade::Right,
            Self::NoExchanges => Grade::Nothing,
        }
    }
}

/// Written as its name (`verdict.code`).
impl serde::Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Written as its name (`verdict.grade`).
impl serde::Serialize for Grade {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// How bad the verdict is: for colour, and for `--fail-on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    /// Ids were handed out wrongly.
    Wrong,
    /// The capture cannot show whether they were.
    Unsure,
    Warned,
    Right,
    /// Nothing to judge.
    Nothing,
}

impl Grade {
    pub const ALL: [Self; 5] = [
        Self::Wrong,
        Self::Unsure,
        Self::Warned,
        Self::Right,
        Self::Nothing,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Wrong => "wrong",
            Self::Unsure => "unsure",
            Self::Warned => "warned",
            Self::Right => "right",
            Self::Nothing => "nothing",
        }
    }
}

crate::names::closed_set! {
    /// What a verdict's limit is: see [`limits`], in the order it lists them.
    pub enum LimitKind {
        CaptureCorrupt = "capture_corrupt",
        CaptureTruncated = "capture_truncated",
        Snaplen = "snaplen",
        OneSided = "one_sided",
        OneSidedAfterForgetting = "one_sided_after_forgetting",
        LostBytes = "lost_bytes",
        MemoryLimit = "memory_limit",
        ConnectionLimit = "connection_limit",
        IpFragments = "ip_fragments",
        Encrypted = "encrypted",
        Coverage = "coverage",
        ControllerCoverage = "controller_coverage",
        IdsNotSeen = "ids_not_seen",
        Malformed = "malformed",
        LinkType = "link_type",
        MessagesUnread = "messages_unread",
        FramingLost = "framing_lost",
    }
}

impl LimitKind {
    /// Whether the limit is pidshark's own: a larger budget reads what it gave up.
    pub fn is_own(self) -> bool {
        matches!(
            self,
            Self::MemoryLimit | Self::ConnectionLimit | Self::OneSidedAfterForgetting
        )
    }
}

/// Something the capture cannot show, how often, and what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub kind: LimitKind,
    pub count: u64,
    /// Bytes are missing from the capture (rather than present but unreadable).
    pub damage: bool,
    /// pidshark's own limit gave them up, not the capture: a larger one reads them.
    pub own: bool,
    /// A phrase with the count: "118 packets cut at 96 bytes by the snaplen".
    pub text: String,
    pub advice: Option<&'static str>,
}

/// The verdict on a whole capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub code: Code,
    /// One complete sentence, starting with the code's title.
    pub headline: String,
    /// The numbers it rests on.
    pub facts: Facts,
    /// What the capture cannot show, bytes missing first.
    pub limits: Vec<Limit>,
    /// What the answer lacks for what was lost: empty when nothing was.
    pub cost: Vec<Cost>,
}

/// pidshark's own limits of a run, as given or defaulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_memory: u64,
    pub max_connections: u64,
    /// Connections forgotten at either while followed.
    pub forgotten_connections: u64,
}

/// What the verdict is judged from: the whole capture.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub packets: u64,
    pub totals: &'a Totals,
    pub brokers: &'a BTreeMap<i32, BrokerStats>,
    /// As listed (the first of each kind is enough to name it).
    pub findings: &'a [Finding],
    /// Every diagnostic counted, findings among them.
    pub diagnostics: &'a Diagnostics,
    pub captures: &'a [CaptureInfo],
    /// TCP connections given up as not Kafka.
    pub not_kafka_connections: u64,
    /// TCP connections that carried TLS: encrypted, not read.
    pub encrypted_connections: u64,
    /// The controllers' metadata log, when one was given.
    pub log: Option<&'a super::committed::LogAnalysis>,
    /// Which known brokers the capture shows talking to the controllers.
    pub coverage: &'a super::Coverage,
    pub budget: Budget,
    /// Counts over the InitProducerId exchanges.
    pub producers: &'a ProducerIdCounts,
    /// The controller timeline: who is proven to have led when, unknown between.
    pub controllers: &'a [Piece],
    /// Responses whose request was not read.
    pub unmatched_responses: u64,
    /// Of those, responses that read as an answer granting a block would.
    pub unmatched_like_blocks: u64,
    /// The producer ids and epochs of interest to the writes analysis.
    pub writes_producers: &'a [crate::analysis::writes::ProducerWrites],
}

/// `4M`, `64K`, `1500`: a byte count as `--max-memory` takes it.
fn size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(
            || bytes.to_string(),
            |(unit, name)| format!("{}{name}", bytes / unit),
        )
}

/// Kinds whose diagnostics are accounted for by a [`Limit`], and so not listed again as
/// warnings or errors of their own.
const LIMIT_KINDS: [Kind; 15] = [
    Kind::CaptureCorrupt,
    Kind::CaptureTruncated,
    Kind::PacketTruncated,
    Kind::OneSidedConnection,
    Kind::TcpGap,
    Kind::MemoryLimit,
    Kind::ConnectionLimit,
    Kind::IpFragmentsDropped,
    Kind::PacketMalformed,
    Kind::UnsupportedLinkType,
    Kind::KafkaDecodeError,
    Kind::KafkaUnsupportedVersion,
    Kind::KafkaMessageTruncated,
    Kind::KafkaFramingLost,
    Kind::TlsEncrypted,
];

crate::names::closed_set! {
    /// The counts a verdict rests on, besides the exchanges' by status.
    pub enum VerdictFact {
        Packets = "packets",
        Requests = "requests",
        Blocks = "blocks",
        /// Brokers granted at least one block.
        BrokersGranted = "brokers_granted",
        Overlaps = "overlaps",
        Regressions = "regressions",
        DuplicateGrants = "duplicate_grants",
        BrokersKnown = "brokers_known",
        BrokersSeenAtControllers = "brokers_seen_at_controllers",
        IdsNotSeen = "ids_not_seen",
        ControllersKnown = "controllers_known",
        ControllersSeen = "controllers_seen",
        /// Blocks granted to requests whose broker id or epoch was not read, compared
        /// with none: listed only when there are some.
        BlocksUncompared = "blocks_uncompared",
        /// Responses to requests not read whose bytes read as a block's grant: listed
        /// only when there are some.
        UnmatchedLikeBlocks = "unmatched_like_blocks",
    }
}

impl VerdictFact {
    /// Whether the fact is given only when it counts some: one that only a damaged
    /// capture has, so that a whole capture's facts stay as they were.
    pub fn only_when_some(self) -> bool {
        matches!(self, Self::BlocksUncompared | Self::UnmatchedLikeBlocks)
    }
}

/// Judges the capture.
pub fn judge(e: &Evidence<'_>) -> Verdict {
    let mut limits = limits(e);
    if e.captures.is_empty() && e.log.is_some() {
        // who talks to the controllers is the capture's to show: a log alone has none
        limits.retain(|l| {
            !matches!(
                l.kind,
                LimitKind::Coverage | LimitKind::ControllerCoverage | LimitKind::IdsNotSeen
            )
        });
    }
    let t = e.totals;
    let count = |kind| e.diagnostics.count(kind);
    let brokers_granted = e.brokers.values().filter(|b| b.ids_granted > 0).count();
    let counts = VerdictFact::ALL.iter().map(|&fact| {
        let n = match fact {
            VerdictFact::Packets => e.packets,
            VerdictFact::Requests => t.total,
            VerdictFact::Blocks => t.blocks,
            VerdictFact::BrokersGranted => brokers_granted as u64,
            VerdictFact::Overlaps => count(Kind::PidBlockOverlap),
            VerdictFact::Regressions => count(Kind::PidBlockRegression),
            VerdictFact::DuplicateGrants => count(Kind::PidDuplicateGrant),
            VerdictFact::BrokersKnown => e.coverage.known.len() as u64,
            VerdictFact::BrokersSeenAtControllers => e.coverage.seen.len() as u64,
            VerdictFact::IdsNotSeen => t.skipped_ids,
            VerdictFact::ControllersKnown => e.coverage.controllers_known.len() as u64,
            VerdictFact::ControllersSeen => e.coverage.controllers_seen.len() as u64,
            VerdictFact::BlocksUncompared => t.blocks_uncompared,
            VerdictFact::UnmatchedLikeBlocks => e.unmatched_like_blocks,
        };
        (fact, n)
    });
    let counts = counts
        .filter(|&(fact, n)| !fact.only_when_some() || n > 0)
        .map(|(fact, n)| (fact.as_str(), n.into()));
    let mut facts: Facts = counts.collect();
    facts.extend(Status::ALL.map(|status| (status.as_str(), t.statuses.of(status).into())));
    let lost = limits.iter().any(|l| l.damage || l.own);
    let cost = cost::costs(e, lost);
    let (code, headline) = decide(e, &limits, &cost, brokers_granted);
    Verdict {
        code,
        headline: format!("{}: {headline}", code.title()),
        facts,
        limits,
        cost,
    }
}

/// The code and the sentence after its title.
fn decide(
    e: &Evidence<'_>,
    limits: &[Limit],
    cost: &[Cost],
    brokers_granted: usize,
) -> (Code, String) {
    let t = e.totals;
    let damage: Vec<&Limit> = limits.iter().filter(|l| l.damage).collect();
    let own: Vec<&Limit> = limits.iter().filter(|l| l.own).collect();
    let unreadable: Vec<&Limit> = limits.iter().filter(|l| !l.damage && !l.own).collect();
    // ids the log commits twice are duplicates whatever the capture holds
    if let Some(text) = finding(e, Kind::PidCommittedOverlap) {
        return (Code::DuplicateProducerIds, text);
    }
    if let (true, Some(log)) = (e.captures.is_empty(), e.log) {
        return log_alone(e, log, limits);
    }
    if t.total == 0 {
        let mut none = format!("none in {}", counted(e.packets, "packet"));
        let not_kafka = e.not_kafka_connections;
        if not_kafka > 0 {
            let were = if not_kafka == 1 { "was" } else { "were" };
            none = format!(
                "{none}, where {} {were} not read as Kafka (each not_kafka diagnostic says why)",
                counted(not_kafka, "TCP connection")
            );
        }
        if let Some(like) = like_blocks(e) {
            none = format!("{none}; {like}");
        }
        if let Some(log) = e.log {
            none = format!("{none}; {}", log_sentence(log));
        }
        let mut none = but(none, limits.iter());
        if let Some(lacks) = cost::sentence(cost) {
            none = format!("{none}; {lacks}");
        }
        return (Code::NoExchanges, none);
    }
    // Two producers holding one id is the same wrong fact seen from the producers' side:
    // found even where the blocks that overlapped were granted before the capture.
    for (kind, code) in [
        (Kind::PidBlockOverlap, Code::DuplicateProducerIds),
        (Kind::PidDuplicateGrant, Code::DuplicateProducerIds),
        (Kind::PidBlockRegression, Code::ProducerIdsWentBackwards),
        (Kind::PidBlockNotCommitted, Code::NotCommitted),
        (Kind::PidBlockMismatch, Code::NotCommitted),
    ] {
        if let Some(text) = finding(e, kind) {
            let text = match (code, writes_cost(e)) {
                (Code::DuplicateProducerIds, Some(cost)) => {
                    format!("{text}; the writes show what it cost: {cost}")
                }
                _ => text,
            };
            let text = match (damage.first(), own.first()) {
                (Some(first), _) => {
                    format!("{text}; the capture is incomplete too: {}", first.text)
                }
                (None, Some(first)) => format!(
                    "{text}; pidshark's reading is incomplete too: {}",
                    first.text
                ),
                (None, None) => text,
            };
            return (code, text);
        }
    }
    let granted = granted(t, brokers_granted);
    // the capture's damage first, then what pidshark gave up at its own limits
    for (code, given) in [
        (Code::IncompleteCapture, &damage),
        (Code::IncompleteReading, &own),
    ] {
        if let Some(first) = given.first() {
            let mut text = list(given.iter().copied());
            if let Some(lacks) = cost::sentence(cost) {
                text = format!("{text}; {lacks}");
            }
            if let Some(advice) = first.advice {
                text = format!("{text}; {advice}");
            }
            return (code, format!("{text}; in what was read, {granted}"));
        }
    }
    if t.blocks == 0 && t.blocks_uncompared == 0 {
        let mut text = format!(
            "{}, none granted a block: answered {}",
            counted(t.total, "request"),
            answers(t)
        );
        if let Some(like) = like_blocks(e) {
            text = format!("{text}; {like}");
        }
        return (
            Code::NoProducerIdsGranted,
            match unreadable.is_empty() {
                true => text,
                false => format!("{text}; {}", list(unreadable.iter().copied())),
            },
        );
    }
    let doubts = doubts(e, &unreadable);
    if !doubts.is_empty() {
        return (
            Code::CorrectAsFarAsCaptured,
            format!("{granted}, but {}", doubts.join(", ")),
        );
    }
    if t.blocks_uncompared > 0 {
        // what was compared is right; the rest was not looked at
        return (Code::CorrectAsFarAsCaptured, granted);
    }
    let warnings = of_severity(e, Severity::Warning);
    if !warnings.is_empty() {
        return (
            Code::CorrectWithWarnings,
            format!("{granted}; {}", warnings.join(", ")),
        );
    }
    (Code::Correct, granted)
}

/// The verdict on a metadata log read without a capture: are the blocks it commits
/// consistent, each starting where the one before ended?
fn log_alone(
    e: &Evidence<'_>,
    log: &super::committed::LogAnalysis,
    limits: &[Limit],
) -> (Code, String) {
    let Some(blocks) = log_blocks(log) else {
        let none = but(
            "the metadata log commits no block".to_owned(),
            limits.iter(),
        );
        return (Code::CommittedBlocksConsistent, none);
    };
    match finding(e, Kind::PidCommittedGap) {
        Some(gap) => (
            Code::CommittedBlocksGap,
            but(format!("{gap}; {blocks}"), limits.iter()),
        ),
        None => {
            let partly = log.log.files.iter().filter(|f| !f.complete).count() as u64;
            let read = match partly {
                0 => String::new(),
                n => format!(
                    " as far as read ({} read only in part: see the diagnostics)",
                    counted(n, "file")
                ),
            };
            let text = format!("{blocks}, each block starting where the one before it ended{read}");
            (Code::CommittedBlocksConsistent, but(text, limits.iter()))
        }
    }
}

/// What the metadata log alone says: "the metadata log commits 42 blocks to 2 brokers
/// (offsets 27 to 310)".
fn log_sentence(log: &super::committed::LogAnalysis) -> String {
    match log_blocks(log) {
        Some(blocks) => format!("{blocks}{}", missing_ids(log)),
        None => "the metadata log commits no block".to_owned(),
    }
}

/// "the metadata log commits 42 blocks to 2 brokers (offsets 27 to 310)"; `None` when it
/// commits none.
fn log_blocks(log: &super::committed::LogAnalysis) -> Option<String> {
    let blocks = log.log.blocks.iter().filter(|b| !b.from_snapshot);
    let brokers: std::collections::BTreeSet<i32> = blocks.clone().map(|b| b.broker_id).collect();
    let offsets = blocks.clone().map(|b| b.place.offset);
    let (first, last) = (offsets.clone().min()?, offsets.max()?);
    Some(format!(
        "the metadata log commits {} to {} (offsets {first} to {last})",
        counted(blocks.count() as u64, "block"),
        counted(brokers.len() as u64, "broker"),
    ))
}

/// `; no record of the logs read commits ids 8000..=8999`, the first few ranges.
fn missing_ids(log: &super::committed::LogAnalysis) -> String {
    const LISTED: usize = 3;
    let ranges: Vec<String> = log
        .missing_before
        .iter()
        .flatten()
        .map(|(start, end)| format!("{start}..={end}"))
        .collect();
    match ranges.len() {
        0 => String::new(),
        n if n <= LISTED => format!(
            "; no record of the logs read commits ids {}",
            ranges.join(", ")
        ),
        n => format!(
            "; no record of the logs read commits ids {} and {}",
            ranges
                .iter()
                .take(LISTED)
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            counted((n - LISTED) as u64, "more range")
        ),
    }
}

/// The first listed finding of `kind` and how many there are in all.
fn finding(e: &Evidence<'_>, kind: Kind) -> Option<String> {
    let total = e.diagnostics.count(kind);
    if total == 0 {
        return None;
    }
    let first = e.findings.iter().find(|f| f.kind == kind);
    let message = first.map_or_else(|| counted(total, kind.as_str()), |f| f.message.clone());
    let message = match total {
        1 => message,
        n if counted_in_part(e, kind) => format!("{message} (at least {n} in all)"),
        n => format!("{message} ({n} in all)"),
    };
    Some(match first.map(|f| same_fault(e.findings, f)) {
        Some(others) if !others.is_empty() => {
            format!(
                "{message}; the same fault shows as {}",
                others.join(" and ")
            )
        }
        _ => message,
    })
}

/// Whether the findings of `kind` were counted only in part: overlaps past the first
/// found for a block are not (`analysis_limit` of table `block_overlaps`).
fn counted_in_part(e: &Evidence<'_>, kind: Kind) -> bool {
    let table = obs::AnalysisTable::BlockOverlaps.as_str();
    kind == Kind::PidBlockOverlap
        && e.findings
            .iter()
            .any(|f| f.kind == Kind::AnalysisLimit && f.facts.contains(&("table", table.into())))
}

/// The other listed findings linked to `finding`'s fault: `a pid_block_regression (frame
/// 59)`.
fn same_fault(findings: &[Finding], finding: &Finding) -> Vec<String> {
    let Some(of) = finding.fault else {
        return Vec::new();
    };
    findings
        .iter()
        .filter(|f| f.kind != finding.kind && f.fault == Some(of))
        .map(|f| {
            let frame = f
                .frames
                .last()
                .map_or(String::new(), |n| format!(" (frame {n})"));
            format!("a {}{frame}", f.kind.as_str())
        })
        .collect()
}

/// "9 blocks granted to 3 brokers without overlap or regression", or "no block was
/// granted to 11 requests"; then the blocks granted to requests whose broker id or epoch
/// was not read, which were compared with no other.
fn granted(t: &Totals, brokers: usize) -> String {
    let uncompared = t.blocks_uncompared;
    let compared = match t.blocks {
        0 if uncompared > 0 => None,
        0 => return format!("no block was granted to {}", counted(t.total, "request")),
        n => Some(format!(
            "{} granted to {} without overlap or regression",
            counted(n, "block"),
            counted(brokers as u64, "broker")
        )),
    };
    let (more, were) = match uncompared {
        0 => return compared.unwrap_or_default(),
        1 => ("", "was"),
        _ => ("s", "were"),
    };
    let not_read = format!(
        "granted to requests whose broker id or epoch was not read {were} compared with no other, so an overlap or a regression with them goes unfound"
    );
    match compared {
        Some(compared) => format!("{compared}, and {uncompared} more block{more} {not_read}"),
        None => format!("{uncompared} block{more} {not_read}"),
    }
}

/// How the requests were answered, adding up to all of them.
fn answers(t: &Totals) -> String {
    // by name, as the report lists them
    let mut codes: Vec<(String, ErrorCode, u64)> = t
        .error_codes
        .iter()
        .map(|(code, n)| (code.name(), *code, *n))
        .collect();
    codes.sort();
    let mut parts: Vec<String> = codes
        .into_iter()
        .map(|(name, code, n)| match code.is_error() {
            false => format!("{name} without a valid block {n}"),
            true => format!("{name} {n}"),
        })
        .collect();
    let s = t.statuses;
    let coded: u64 = t.error_codes.values().sum();
    let undecoded = s.complete.saturating_sub(coded);
    if undecoded > 0 {
        parts.push(format!("with an error code not read {undecoded}"));
    }
    if s.unanswered > 0 {
        parts.push(format!("not at all {}", s.unanswered));
    }
    if s.response_unknown > 0 {
        parts.push(format!("not in the capture {}", s.response_unknown));
    }
    parts.join(", ")
}

/// What keeps a capture without damage from showing every grant: requests without a
/// known answer, what could not be read, and errors no other part names.
fn doubts(e: &Evidence<'_>, unreadable: &[&Limit]) -> Vec<String> {
    let s = e.totals.statuses;
    let mut doubts = Vec::new();
    if s.response_unknown > 0 {
        doubts.push(format!(
            "{} whose response the capture may have lost",
            counted(s.response_unknown, "request")
        ));
    }
    if s.unanswered > 0 {
        doubts.push(format!("{} unanswered", counted(s.unanswered, "request")));
    }

    doubts.extend(like_blocks(e));
    doubts.extend(unreadable.iter().map(|l| l.text.clone()));
    doubts.extend(writes_cost(e));
    doubts.extend(of_severity(e, Severity::Error));
    doubts
}

/// "1 response to a request not read has the bytes of an AllocateProducerIds answer
/// granting a block ...": blocks a mid-stream start (or a lost request) may hide, which
/// were compared with no other.
fn like_blocks(e: &Evidence<'_>) -> Option<String> {
    let text = match e.unmatched_like_blocks {
        0 => return None,
        1 => "1 response to a request not read has the bytes of an AllocateProducerIds answer granting a block".to_owned(),
        n => format!("{n} responses to requests not read have the bytes of AllocateProducerIds answers granting blocks"),
    };
    Some(format!(
        "{text}, compared with no other block (unmatched_like_blocks)"
    ))
}

/// What the producers' writes show a producer id held twice cost: the producer ids and
/// epochs written by two producers, and the batches acknowledged and never appended.
fn writes_cost(e: &Evidence<'_>) -> Option<String> {
    let shared = e.diagnostics.graded(Kind::WriteSharedProducer);
    let lost = e.diagnostics.graded(Kind::WriteNotAppended);
    let mut parts = Vec::new();
    if shared > 0 {
        parts.push(shared_writes(e, shared));
    }
    if lost > 0 {
        let batches = match lost {
            1 => "1 batch was".to_owned(),
            n => format!("{n} batches were"),
        };
        parts.push(format!(
            "{batches} acknowledged with success at offsets another producer's batch holds, and never appended (write_not_appended)"
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The producer ids and epochs written by two producers (`shared` of them): each named
/// with the connections and partitions that wrote with it, when the listing holds them
/// (the first 3), else counted.
fn shared_writes(e: &Evidence<'_>, shared: u64) -> String {
    const NAMED: usize = 3;
    let listed: Vec<&crate::analysis::writes::ProducerWrites> =
        e.writes_producers.iter().filter(|p| p.shared).collect();
    if listed.is_empty() {
        let ids = match shared {
            1 => "1 producer id and epoch was".to_owned(),
            n => format!("{n} producer ids and epochs were"),
        };
        return format!("{ids} written by two producers (write_shared_producer)");
    }
    let named: Vec<String> = listed.iter().take(NAMED).map(|p| one_shared(p)).collect();
    let rest = shared.saturating_sub(named.len() as u64);
    let more = match rest {
        0 => String::new(),
        1 => " and 1 more producer id and epoch".to_owned(),
        n => format!(" and {n} more producer ids and epochs"),
    };
    format!("{}{more} (write_shared_producer)", named.join(", "))
}

/// "producer id 1000 epoch 0 was written by two producers over 4 connections to 4
/// partitions", with "at least" where the listing stops.
fn one_shared(p: &crate::analysis::writes::ProducerWrites) -> String {
    let partitions: std::collections::BTreeSet<(&str, i32)> = p
        .writers
        .iter()
        .flat_map(|w| w.partitions.iter().map(|s| (s.topic.as_str(), s.partition)))
        .collect();
    let partitions_more = p.writers.iter().any(|w| w.partitions_more);
    let at_least = |more: bool| if more { "at least " } else { "" };
    format!(
        "producer id {} epoch {} was written by two producers over {}{} to {}{}",
        p.producer_id,
        p.producer_epoch,
        at_least(p.writers.len() >= crate::analysis::writes::MAX_WRITERS),
        counted(p.writers.len() as u64, "connection"),
        at_least(partitions_more),
        counted(partitions.len() as u64, "partition"),
    )
}

/// Diagnostics of exactly `severity` that neither a finding rule above nor a limit
/// accounts for, by kind with their counts.
fn of_severity(e: &Evidence<'_>, severity: Severity) -> Vec<String> {
    Kind::ALL
        .into_iter()
        .filter(|k| k.severity() == severity && !LIMIT_KINDS.contains(k))
        .filter(|k| {
            !matches!(
                k,
                Kind::PidBlockOverlap
                    | Kind::PidBlockRegression
                    | Kind::PidDuplicateGrant
                    | Kind::WriteSharedProducer
                    | Kind::WriteNotAppended
            )
        })
        .filter_map(|k| match e.diagnostics.graded(k) {
            0 => None,
            n => Some(format!("{n} {}", k.as_str())),
        })
        .collect()
}

/// `text, but a, b and c`.
fn but<'a>(text: String, limits: impl Iterator<Item = &'a Limit>) -> String {
    let limits: Vec<&Limit> = limits.collect();
    match limits.is_empty() {
        true => text,
        false => format!("{text}, but {}", list(limits.into_iter())),
    }
}

/// The limits' phrases: the first three, then how many more.
fn list<'a>(limits: impl Iterator<Item = &'a Limit>) -> String {
    const SHOWN: usize = 3;
    let limits: Vec<&Limit> = limits.collect();
    let mut parts: Vec<String> = limits.iter().take(SHOWN).map(|l| l.text.clone()).collect();
    if limits.len() > SHOWN {
        parts.push(format!("and {} more", limits.len() - SHOWN));
    }
    parts.join(", ")
}

/// `broker 2`, `brokers 2 and 3`, `brokers 2, 3, 4 and 2 more`.
fn brokers_named(ids: &[i32]) -> String {
    nodes_named(ids, "broker")
}

/// `broker 2`, `controllers 101 and 103`, `brokers 1, 2, 3 and 4 more`.
fn nodes_named(ids: &[i32], noun: &str) -> String {
    const NAMED: usize = 3;
    let names: Vec<String> = ids.iter().take(NAMED).map(i32::to_string).collect();
    let more = ids.len().saturating_sub(NAMED);
    match (names.as_slice(), more) {
        ([one], 0) => format!("{noun} {one}"),
        (names, 0) => match names.split_last() {
            Some((last, rest)) => format!("{noun}s {} and {last}", rest.join(", ")),
            None => String::new(),
        },
        (names, more) => format!("{noun}s {} and {more} more", names.join(", ")),
    }
}

/// `1 packet`, `2 packets`.
fn counted(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}

/// `46 AllocateProducerIds, 612 InitProducerId, 300 Metadata, 12 BeginQuorumEpoch`:
/// messages by API, the producer-id ones first (AllocateProducerIds even at 0), then the
/// others by count.
fn by_api(by_api: &BTreeMap<i16, u64>, total: u64) -> String {
    use crate::kafka::tables::ApiKey;
    let named: u64 = by_api.values().sum();
    let unnamed = (total > named).then(|| format!("{} of an API not named", total - named));
    let first = [ApiKey::ALLOCATE_PRODUCER_IDS, ApiKey::INIT_PRODUCER_ID];
    let mut others: Vec<(i16, u64)> = by_api
        .iter()
        .filter(|(api, _)| !first.iter().any(|f| f.0 == **api))
        .map(|(api, n)| (*api, *n))
        .collect();
    others.sort_by_key(|&(api, n)| (std::cmp::Reverse(n), api));
    let name = |api: i16| match api {
        -1 => "responses to requests not captured".to_owned(),
        api => ApiKey(api).name(),
    };
    // AllocateProducerIds always, as the subject; InitProducerId when any was cut
    first
        .iter()
        .map(|api| (api.0, by_api.get(&api.0).copied().unwrap_or(0)))
        .filter(|&(api, n)| n > 0 || api == ApiKey::ALLOCATE_PRODUCER_IDS.0)
        .chain(others)
        .map(|(api, n)| format!("{n} {}", name(api)))
        .chain(unnamed)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The limits found, in the order they are added; a count of 0 adds none.
struct Found(Vec<Limit>);

impl Found {
    fn add(
        &mut self,
        kind: LimitKind,
        count: u64,
        damage: bool,
        text: String,
        advice: Option<&'static str>,
    ) {
        if count > 0 {
            self.0.push(Limit {
                kind,
                count,
                damage,
                own: kind.is_own(),
                text,
                advice,
            });
        }
    }
}

/// What the capture cannot show, bytes missing first, each with its count.
pub fn limits(e: &Evidence<'_>) -> Vec<Limit> {
    let mut found = Found(Vec::new());
    let snapped = damage_limits(e, &mut found);
    pidshark_limits(e, &mut found);
    unseen_limits(e, &mut found);
    unread_limits(e, snapped, &mut found);
    found.0
}

/// Packets the snaplen cut: the capture's own limit, counted by several kinds.
fn snapped(e: &Evidence<'_>) -> u64 {
    let cut: u64 = e.captures.iter().map(|c| c.packets_cut).sum();
    cut.max(e.diagnostics.count(Kind::PacketTruncated))
}

/// Holes in the streams beyond the snaplen's (each packet it cut leaves one too).
fn holes(e: &Evidence<'_>) -> u64 {
    let count = |kind| e.diagnostics.count(kind);
    count(Kind::TcpGap).saturating_sub(count(Kind::PacketTruncated))
}

/// The capture's damage: corrupt or cut files, the snaplen, one side missing, lost bytes.
/// Returns the packets the snaplen cut.
fn damage_limits(e: &Evidence<'_>, found: &mut Found) -> u64 {
    let count = |kind| e.diagnostics.count(kind);
    let cut_len = e.captures.iter().map(|c| c.cut_len).max().unwrap_or(0);
    let messages_cut = count(Kind::KafkaMessageTruncated);
    let snapped = snapped(e);
    let holes = holes(e);
    let mut add = |kind, count: u64, damage, text: String, advice| {
        found.add(kind, count, damage, text, advice);
    };
    let n = count(Kind::CaptureCorrupt);
    add(
        LimitKind::CaptureCorrupt,
        n,
        true,
        format!(
            "{} corrupt, where reading stopped or skipped",
            counted(n, "capture record")
        ),
        Some(
            "copy the capture again from where it was taken: what came before the damage was read",
        ),
    );
    let n = count(Kind::CaptureTruncated);
    add(
        LimitKind::CaptureTruncated,
        n,
        true,
        format!(
            "{} cut short, ending inside a record",
            counted(n, "capture file")
        ),
        Some("copy the whole file again: the packets before the cut were read"),
    );
    let what = match cut_len {
        0 => format!("{} cut by the snaplen", counted(snapped, "packet")),
        len => format!(
            "{} cut at {len} bytes by the snaplen",
            counted(snapped, "packet")
        ),
    };
    let what = match messages_cut {
        0 => what,
        n => format!(
            "{what} ({} pidshark reads not fully captured: {})",
            counted(n, "message"),
            by_api(
                &e.diagnostics
                    .undecoded_by_api(&[Kind::KafkaMessageTruncated]),
                n
            )
        ),
    };
    add(
        LimitKind::Snaplen,
        snapped,
        true,
        what,
        Some("capture again with -s 0 (tcpdump) to keep whole packets"),
    );
    // a connection forgotten at a limit and met again midway may show one side only:
    // then pidshark's doing as much as the capture's
    let forgot = e.budget.forgotten_connections > 0;
    let n = count(Kind::OneSidedConnection);
    match forgot {
        false => add(LimitKind::OneSided, n, true, format!("{} captured in one direction only, nothing from the server", counted(n, "Kafka connection")),
            Some("capture where both directions pass: on the controller's or the broker's host, or a mirror of both directions")),
        true => add(LimitKind::OneSidedAfterForgetting, n, false, format!("{} seen in one direction only after pidshark forgot connections at its limits (each may be one it met again midway)", counted(n, "Kafka connection")),
            Some("run again with a larger --max-memory")),
    }
    add(LimitKind::LostBytes, holes, true, format!("{} where the capture lost TCP bytes", counted(holes, "hole")),
        Some("capture with a larger buffer (tcpdump -B 65536) and a filter on the Kafka ports, so that nothing is dropped"));
    snapped
}

/// What pidshark itself gave up at its limits: held bytes, connections.
fn pidshark_limits(e: &Evidence<'_>, found: &mut Found) {
    let count = |kind| e.diagnostics.count(kind);
    let mut add = |kind, count: u64, damage, text: String, advice| {
        found.add(kind, count, damage, text, advice);
    };
    let n = count(Kind::MemoryLimit);
    add(
        LimitKind::MemoryLimit,
        n,
        false,
        format!(
            "pidshark gave up what it held {} at --max-memory {}{}",
            counted(n, "time"),
            size(e.budget.max_memory),
            match e.budget.forgotten_connections {
                0 => String::new(),
                f => format!(
                    ", forgetting {} (one met again is counted twice)",
                    counted(f, "connection")
                ),
            }
        ),
        Some("run again with a larger --max-memory"),
    );
    let n = count(Kind::ConnectionLimit);
    add(
        LimitKind::ConnectionLimit,
        n,
        false,
        format!(
            "pidshark forgot {} past --max-connections {} (one met again is counted twice)",
            counted(n, "connection"),
            e.budget.max_connections
        ),
        Some("run again with a larger --max-connections"),
    );
}

/// What the capture does not show: fragments, encrypted connections, brokers and
/// controllers not seen, ids between the blocks.
fn unseen_limits(e: &Evidence<'_>, found: &mut Found) {
    let count = |kind| e.diagnostics.count(kind);
    let mut add = |kind, count: u64, damage, text: String, advice| {
        found.add(kind, count, damage, text, advice);
    };
    let n = count(Kind::IpFragmentsDropped);
    add(
        LimitKind::IpFragments,
        n,
        true,
        format!("{} not reassembled", counted(n, "IP fragment")),
        None,
    );
    let n = e.encrypted_connections;
    // what TLS hid: the blocks when no AllocateProducerIds was read, else the grants
    let grants = match e.producers.exchanges {
        0 => "no InitProducerId exchange was read, so no grant to a producer is checked",
        _ => "grants to producers over them are not checked",
    };
    let advice = match e.totals.total {
        0 => "pidshark cannot decrypt TLS: capture where AllocateProducerIds travels in plaintext (often the controllers' listener), or check that it does not travel over these",
        _ => "pidshark cannot decrypt TLS: the AllocateProducerIds exchanges were read in plaintext; to check the grants to producers too, capture the clients of a plaintext listener",
    };
    add(
        LimitKind::Encrypted,
        n,
        false,
        format!(
            "{} encrypted (TLS), which cannot be read: {grants}",
            counted(n, "connection")
        ),
        Some(advice),
    );
    let unseen: Vec<i32> = e.coverage.not_seen().collect();
    let known = e.coverage.known.len() as u64;
    add(
        LimitKind::Coverage,
        unseen.len() as u64,
        false,
        format!(
            "{} of {known} known {} controller connections captured ({} not seen: no heartbeat, registration or AllocateProducerIds request)",
            known - unseen.len() as u64,
            if known == 1 { "broker's" } else { "brokers'" },
            brokers_named(&unseen),
        ),
        Some("capture on the controllers' hosts, or on every broker's, to see every broker's requests for blocks: a block granted to a broker not seen may overlap those seen"),
    );
    let unseen: Vec<i32> = e.coverage.controllers_not_seen().collect();
    let known = e.coverage.controllers_known.len() as u64;
    add(
        LimitKind::ControllerCoverage,
        unseen.len() as u64,
        false,
        format!(
            "{} of {known} known {} seen in the quorum ({} not seen: no fetch of the metadata log, vote, epoch begun or ended, or answer as leader)",
            known - unseen.len() as u64,
            if known == 1 { "controller" } else { "controllers" },
            nodes_named(&unseen, "controller"),
        ),
        Some("capture on the controllers' hosts to see the whole quorum; the controller timeline says who led where the capture (or the metadata log) shows it"),
    );
    let n = e.totals.skipped_ids;
    add(
        LimitKind::IdsNotSeen,
        n,
        false,
        format!(
            "{} between the blocks captured granted to no request the capture shows{} (pid_block_gap)",
            counted(n, "id"),
            match e.totals.skipped_ids_unsure {
                true => ", unless requests never answered or whose answers were not read whole got them",
                false => "",
            }
        ),
        Some("capture where every broker's AllocateProducerIds passes (the controllers' hosts): the blocks holding them may overlap"),
    );
}

/// What was captured but not read: malformed packets, unknown link types, messages not
/// decoded, framing lost (`snapped`: packets the snaplen cut, whose messages it names).
fn unread_limits(e: &Evidence<'_>, snapped: u64, found: &mut Found) {
    let count = |kind| e.diagnostics.count(kind);
    let mut add = |kind, count: u64, damage, text: String, advice| {
        found.add(kind, count, damage, text, advice);
    };
    let holes = holes(e);
    let n = count(Kind::PacketMalformed);
    add(
        LimitKind::Malformed,
        n,
        false,
        format!("{} could not be decoded", counted(n, "packet")),
        None,
    );
    let n = count(Kind::UnsupportedLinkType);
    add(
        LimitKind::LinkType,
        n,
        false,
        format!(
            "{} not supported, their packets skipped",
            counted(n, "link type")
        ),
        None,
    );
    // messages cut by the snaplen are named with it; the rest here
    let mut unread_kinds = vec![Kind::KafkaDecodeError, Kind::KafkaUnsupportedVersion];
    if snapped == 0 {
        unread_kinds.push(Kind::KafkaMessageTruncated);
    }
    let unread: u64 = unread_kinds.iter().map(|k| count(*k)).sum();
    add(
        LimitKind::MessagesUnread,
        unread,
        false,
        format!(
            "{} pidshark reads not fully read ({})",
            counted(unread, "message"),
            by_api(&e.diagnostics.undecoded_by_api(&unread_kinds), unread)
        ),
        None,
    );
    // framing lost at a hole is the hole's doing
    let n = if holes + snapped > 0 {
        0
    } else {
        count(Kind::KafkaFramingLost)
    };
    add(
        LimitKind::FramingLost,
        n,
        false,
        format!(
            "Kafka framing lost {}, the bytes up to the next frame passed over",
            counted(n, "time")
        ),
        None,
    );
}

#[cfg(test)]
mod tests;
