//! Analysis of producer-ID allocation: from paired exchanges to the answer a post-mortem
//! needs: which blocks of producer IDs the controller handed out, to whom and when, and
//! what was wrong with them.
//!
//! In: AllocateProducerIds exchanges one at a time, as they complete ([`Analyzer`]). Out:
//! [`Analysis`]: the blocks in time order, the findings (each also a diagnostic, with the
//! frames involved), a table per broker and the totals of the summary. Memory is bounded
//! (recent blocks, per-broker state, the slowest responses) unless the blocks are listed. Only decoded values are used: an exchange missing a field takes no part in
//! the rules that need it.

mod addresses;
mod blocks;
mod brokers;
pub mod committed;
pub mod controllers;
mod coverage;
pub mod kept_id;
pub mod look;
mod nearly_sorted;
mod placement;
pub mod producers;
pub mod verdict;
pub mod writes;

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::SocketAddr;

use crate::diag::obs;
use crate::diag::{At, Diagnostics, Facts, IdSpan, Kind, Observation, MAX_LISTED_PER_KIND};
use crate::kafka::tables::ErrorCode;
use crate::latency::Latencies;
use crate::packet_ref::PacketRef;
use crate::pairing::{
    ApiExchange, ClusterEvent, Exchange, GrantsProducerIds, MessageMeta, Outcome, Status,
    WriteExchange,
};
use crate::timestamp::Timestamp;

pub use addresses::{AddressSource, BrokerAddress, Claim, Said};
pub use blocks::MAX_TRACKED_BLOCKS;
pub use brokers::{BrokerStats, MAX_BROKERS};
pub use controllers::Leadership;
pub use coverage::Coverage;
pub use placement::{BlockRef, Placement, PlacementName};
pub use producers::{Affected, Hosts, Placed, ProducerIdCounts};

/// The analysis's share of `--max-memory`: an eighth of it (the connections' budget is the
/// rest), half for the writes analysis ([`writes::share_of`]), half for the granted ids'
/// table ([`producers::share_of`]).
pub const fn share_of(max_memory: usize) -> usize {
    max_memory / 8
}

/// Broker ids the capture knows from elsewhere than their controller connections: the
/// addresses' claims (conflicting ones too).
fn known_brokers(addresses: &[BrokerAddress]) -> Vec<i32> {
    addresses
        .iter()
        .flat_map(|a| {
            a.claim
                .map(|c| c.broker_id)
                .into_iter()
                .chain(a.conflicting.iter().copied())
        })
        .collect()
}

/// Default floor for a slow response, in microseconds.
pub const SLOW_FLOOR_US: f64 = 100_000.0;
/// Default: slow means this many times the capture's median latency (and above the floor).
pub const SLOW_MEDIAN_FACTOR: f64 = 10.0;

/// What counts as a slow response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlowRule {
    /// `max(100 ms, 10 × median latency)`.
    Default,
    /// Above this many milliseconds.
    Millis(f64),
}

/// A block of producer IDs granted by a successful response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub start: i64,
    /// Last id of the block, inclusive.
    pub end: i64,
    pub len: i32,
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub connection: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub correlation_id: i32,
    pub request_frame: u64,
    pub response_frame: u64,
    /// Time of the response.
    pub timestamp: Timestamp,
}

/// Where a block stands in the report: by the time of its response, then its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BlockOrder {
    pub timestamp: Timestamp,
    pub response_frame: u64,
}

impl Block {
    pub fn order(&self) -> BlockOrder {
        BlockOrder {
            timestamp: self.timestamp,
            response_frame: self.response_frame,
        }
    }
}

/// Something wrong, or worth knowing, about the allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: Kind,
    pub broker_id: Option<i32>,
    pub connection: Option<u64>,
    /// Frames involved, in packet order; the last is where the finding shows.
    pub frames: Vec<u64>,
    /// Time of the packet where it shows.
    pub at: Timestamp,
    /// What the message says, as numbers and names.
    pub facts: Facts,
    pub message: String,
    /// The ids it is about, for a block's overlap, regression or gap.
    pub ids: Option<IdSpan>,
    /// The response frame of the fault it restates with other findings (its
    /// `fault_frame` fact), set once every finding is known.
    pub fault: Option<u64>,
    /// What the formats draw of it beside its sentence, typed.
    pub detail: Option<Detail>,
}

/// What the formats draw of a finding beside its sentence: the values its `facts` give
/// the JSON by name, typed, so that no format reads a fact back by its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// A producer id and epoch granted to a second producer.
    DuplicateGrant(obs::PidDuplicateGrant<String>),
    /// A producer id Kafka's producer-id manager cannot have drawn.
    OutsideBlocks(obs::PidOutsideBlocks<String>),
    /// The producers holding ids of an overlap, when the capture shows them.
    Holders(Affected),
    /// A committed block's record in the metadata log, at this offset.
    Record { offset: i64 },
}

impl Detail {
    /// The detail of a finding that says `what`.
    fn of(what: Observation<'_>) -> Option<Self> {
        Some(match what {
            Observation::PidDuplicateGrant(grant) => Self::DuplicateGrant(grant.to_owned()),
            Observation::PidOutsideBlocks(grant) => Self::OutsideBlocks(grant.to_owned()),
            Observation::PidBlockNotDelivered(obs::PidBlockNotDelivered { offset, .. })
            | Observation::PidBlockMismatch(obs::PidBlockMismatch { offset, .. })
            | Observation::PidCommittedOverlap(obs::PidCommittedOverlap { offset, .. })
            | Observation::PidCommittedGap(obs::PidCommittedGap { offset, .. }) => {
                Self::Record { offset }
            }
            _ => return None,
        })
    }
}

impl Finding {
    /// A finding that says `what`, about a broker or a connection, shown at `at`; the
    /// frames involved are put in packet order.
    pub fn new(
        what: Observation<'_>,
        (broker_id, connection, at): (Option<i32>, Option<u64>, Timestamp),
        mut frames: Vec<u64>,
    ) -> Self {
        frames.sort_unstable();
        frames.dedup();
        Self {
            kind: what.kind(),
            broker_id,
            connection,
            frames,
            at,
            facts: what.facts(),
            message: what.to_string(),
            ids: what.ids(),
            fault: None,
            detail: Detail::of(what),
        }
    }

    /// `analysis_limit`: `table` stopped following what is new at the message of `frame`,
    /// past `limit`; about a broker or a connection, shown at `at`.
    pub fn analysis_limit(
        (table, limit): (obs::AnalysisTable, usize),
        frame: u64,
        at: (Option<i32>, Option<u64>, Timestamp),
    ) -> Self {
        let what = Observation::AnalysisLimit(obs::AnalysisLimit {
            table,
            limit: limit as u64,
            frame,
        });
        Self::new(what, at, vec![frame])
    }
}

/// Slowest responses kept as candidates for `pid_slow_response` (the threshold is known
/// only at the end).
const MAX_SLOW_CANDIDATES: usize = 1000;

/// A slow-response candidate: latency in nanoseconds first, so the heap orders by it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SlowCandidate {
    latency_ns: i128,
    request_frame: u64,
    response_frame: u64,
    broker_id: Option<i32>,
    connection: u64,
    correlation_id: i32,
    /// Time of the response.
    at: Timestamp,
}

/// Exchanges counted by their outcome's [`Status`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusCounts {
    pub complete: u64,
    pub unanswered: u64,
    /// Without a response, but the capture may have lost it.
    pub response_unknown: u64,
}

impl StatusCounts {
    pub fn add(&mut self, status: Status) {
        *self.of_mut(status) += 1;
    }

    pub fn of(self, status: Status) -> u64 {
        match status {
            Status::Complete => self.complete,
            Status::Unanswered => self.unanswered,
            Status::ResponseUnknown => self.response_unknown,
        }
    }

    fn of_mut(&mut self, status: Status) -> &mut u64 {
        match status {
            Status::Complete => &mut self.complete,
            Status::Unanswered => &mut self.unanswered,
            Status::ResponseUnknown => &mut self.response_unknown,
        }
    }
}

/// Counts over all AllocateProducerIds exchanges, for the summary.
#[derive(Debug)]
pub struct Totals {
    pub total: u64,
    pub statuses: StatusCounts,
    /// Responses by error code (NONE too).
    pub error_codes: BTreeMap<ErrorCode, u64>,
    pub latencies: Latencies,
    /// Blocks granted.
    pub blocks: u64,
    /// Blocks granted to requests whose broker id or epoch was not read: not compared
    /// (see [`blocks::Tracker::uncompared`]).
    pub blocks_uncompared: u64,
    /// Ids between blocks granted that no block of the capture holds (`pid_block_gap`):
    /// granted to requests the capture does not show.
    pub skipped_ids: u64,
    /// Whether a gap had answers not read whole or requests never answered, any of
    /// which may hold its ids.
    pub skipped_ids_unsure: bool,
}

/// Everything the analysis found.
#[derive(Debug)]
pub struct Analysis {
    /// Every block in time order (kept only when the report lists them).
    pub blocks: Vec<Block>,
    /// The most common block length, if there are blocks.
    pub usual_len: Option<i32>,
    /// In packet order; at most [`MAX_LISTED_PER_KIND`] of each kind (they are all
    /// diagnostics too, where all are counted).
    pub findings: Vec<Finding>,
    pub brokers: BTreeMap<i32, BrokerStats>,
    /// Latency above which a response is slow, in microseconds, when there are latencies.
    pub slow_threshold_us: Option<f64>,
    pub totals: Totals,
    /// Counts over the InitProducerId exchanges, and over the EndTxn ones.
    pub producers: ProducerIdCounts,
    pub end_txn: ProducerIdCounts,
    /// Addresses known to be brokers', and how.
    pub broker_addresses: Vec<BrokerAddress>,
    /// Who led the controller quorum when, as far as the capture shows.
    pub controllers: controllers::Leaders,
    /// Which brokers the capture shows talking to the controllers, of those known.
    pub coverage: Coverage,
    /// The controllers' metadata log, compared with the wire, when one was given.
    pub metadata_log: Option<committed::LogAnalysis>,
    /// What the producers' writes came to.
    pub writes: writes::WriteTotals,
    /// The batches of interest (never appended, refused for their sequence or epoch), and
    /// how many more there were.
    pub writes_listed: (Vec<writes::ListedBatch>, u64),
    /// The producer ids and epochs of interest (written by two producers, with a batch
    /// never appended or refused for its sequence or epoch), and how many more there were.
    pub writes_producers: (Vec<writes::ProducerWrites>, u64),
}

/// The analysis, fed one exchange at a time as exchanges complete, in bounded memory
/// unless blocks are to be listed.
#[derive(Debug)]
pub struct Analyzer {
    slow: SlowRule,
    list_blocks: bool,
    listed: Vec<Block>,
    blocks: blocks::Tracker,
    brokers: brokers::Tracker,
    slow_candidates: BinaryHeap<Reverse<SlowCandidate>>,
    findings: Vec<Finding>,
    finding_counts: BTreeMap<Kind, u64>,
    totals: Totals,
    producers: producers::Tracker,
    addresses: addresses::Addresses,
    controllers: controllers::Timeline,
    coverage: coverage::Tracker,
    committed: Option<committed::Compare>,
    writes: writes::Tracker,
}

impl Analyzer {
    /// `list_blocks`: keep every block for the report (the JSON report lists them);
    /// `max_recent_blocks`: blocks compared one by one before they are folded into id
    /// ranges. Latencies are kept exact whatever the format (spilled to a file past a
    /// bound), so that a threshold, a percentile and a gate are the same in every one.
    pub fn new(slow: SlowRule, list_blocks: bool, max_recent_blocks: usize) -> Self {
        Self {
            slow,
            list_blocks,
            listed: Vec::new(),
            blocks: blocks::Tracker::new(max_recent_blocks),
            brokers: brokers::Tracker::default(),
            slow_candidates: BinaryHeap::new(),
            findings: Vec::new(),
            finding_counts: BTreeMap::new(),
            totals: Totals {
                total: 0,
                statuses: StatusCounts::default(),
                error_codes: BTreeMap::new(),
                latencies: Latencies::new(true),
                blocks: 0,
                blocks_uncompared: 0,
                skipped_ids: 0,
                skipped_ids_unsure: false,
            },
            producers: producers::Tracker::new(
                max_recent_blocks,
                crate::copies::DEFAULT_CLOCK_SKEW_NS,
            ),
            addresses: addresses::Addresses::default(),
            controllers: controllers::Timeline::default(),
            coverage: coverage::Tracker::default(),
            committed: None,
            writes: writes::Tracker::default(),
        }
    }

    /// How far apart two capture files' clocks may be (`--clock-skew`): the order of two
    /// packets of different files is judged only past it.
    pub fn with_clock_skew(mut self, clock_skew_ns: u64) -> Self {
        self.producers.set_clock_skew(clock_skew_ns);
        self.controllers.set_clock_skew(clock_skew_ns);
        self
    }

    /// What the analysis may hold of `max_memory` (`--max-memory`): its share
    /// ([`share_of`]), half for the writes analysis, half for the granted ids' table.
    pub fn with_share_of(mut self, max_memory: usize) -> Self {
        self.writes.set_max_bytes(writes::share_of(max_memory));
        self.producers
            .set_max_bytes(producers::share_of(max_memory));
        self
    }

    /// The captures' first and last packet times, for the comparison with the log.
    pub fn capture_span(&mut self, first: Timestamp, last: Timestamp) {
        if let Some(compare) = &mut self.committed {
            compare.capture_span(first, last);
        }
    }

    /// Compares every block delivered with the records of `log` (see [`committed`]),
    /// allowing `clock_skew_ms` between the capture's clock and the log's.
    pub fn compare_with(&mut self, log: crate::metadata_log::MetadataLog, clock_skew_ms: i64) {
        self.addresses.log_registrations(&log.registrations);
        self.committed = Some(committed::Compare::new(log, clock_skew_ms));
    }

    fn note(&mut self, finding: Finding) {
        if let (Kind::PidBlockGap, Some(ids)) = (finding.kind, finding.ids) {
            let skipped = i128::from(ids.end) - i128::from(ids.start) + 1;
            let skipped = u64::try_from(skipped.max(0)).unwrap_or(u64::MAX);
            self.totals.skipped_ids = self.totals.skipped_ids.saturating_add(skipped);
        }
        let count = self.finding_counts.entry(finding.kind).or_default();
        *count += 1;
        if *count <= MAX_LISTED_PER_KIND {
            self.findings.push(finding);
        }
    }

    /// Counts the latency of a complete exchange and keeps it if among the slowest.
    fn latency(&mut self, ex: &Exchange, response: &MessageMeta) {
        let latency_ns = response.timestamp.as_nanos() - ex.request_meta.timestamp.as_nanos();
        let micros = response.timestamp.micros_since(&ex.request_meta.timestamp);
        self.totals.latencies.add(micros);
        let candidate = SlowCandidate {
            latency_ns,
            request_frame: ex.request_meta.frame,
            response_frame: response.frame,
            broker_id: ex.request.broker_id,
            connection: ex.endpoints.connection,
            correlation_id: ex.correlation_id,
            at: response.timestamp,
        };
        if self.slow_candidates.len() < MAX_SLOW_CANDIDATES {
            self.slow_candidates.push(Reverse(candidate));
            return;
        }
        // Full: the new one replaces the fastest kept if it is slower (what a push and a
        // pop would keep, with one sift instead of two, and none for most exchanges).
        if let Some(mut fastest) = self.slow_candidates.peek_mut() {
            if candidate > fastest.0 {
                *fastest = Reverse(candidate);
            }
        }
    }

    /// One exchange, whatever its outcome. Returns the block it granted.
    pub fn add(&mut self, ex: &Exchange) -> Option<Block> {
        self.totals.total += 1;
        self.totals.statuses.add(ex.outcome.status());
        if let Outcome::Complete { meta, response } = &ex.outcome {
            if let Some(code) = response.error_code {
                *self.totals.error_codes.entry(code).or_default() += 1;
            }
            self.latency(ex, meta);
        }
        let mut found = Vec::new();
        self.controllers.allocate(ex, &mut found);
        let block = self.blocks.add(ex, &mut found);
        self.totals.blocks += u64::from(block.is_some());
        if let Some(block) = &block {
            self.producers.block(block, &mut found);
        }
        self.producers.answered(ex);
        if let (Some(block), true) = (&block, self.list_blocks) {
            self.listed.push(block.clone());
        }
        self.brokers.add(ex, &mut found);
        if let Some(compare) = &mut self.committed {
            compare.exchange(ex, block.as_ref(), &mut found);
        }
        for f in found {
            self.note(f);
        }
        block
    }

    /// What a cluster message said: where brokers listen, who leads.
    pub fn add_cluster(&mut self, ev: &ClusterEvent) {
        use crate::kafka::apis::ClusterFact;
        use crate::kafka::cluster::BrokersSeen;
        match &ev.fact {
            ClusterFact::BlockAsked { broker_id } => {
                self.producers.asked(*broker_id, ev.meta.frame);
            }
            ClusterFact::Brokers {
                seen: BrokersSeen { topics, .. },
                ..
            }
            | ClusterFact::TopicsCreated(topics) => {
                if let Some(held) = self.writes.topic_names(topics) {
                    let table = (obs::AnalysisTable::TopicNames, held);
                    let at = (None, Some(ev.endpoints.connection), ev.meta.timestamp);
                    self.note(Finding::analysis_limit(table, ev.meta.frame, at));
                }
            }
            _ => {}
        }
        for table in self.addresses.cluster(ev) {
            let at = (None, Some(ev.endpoints.connection), ev.meta.timestamp);
            self.note(Finding::analysis_limit(table, ev.meta.frame, at));
        }
        self.coverage.cluster(ev);
        let mut found = Vec::new();
        self.controllers.cluster(ev, &mut found);
        for f in found {
            self.note(f);
        }
    }

    /// One Produce exchange: what became of each of its batches, in the request's order.
    pub fn add_write(&mut self, ex: &WriteExchange) -> writes::WriteJudged {
        let mut found = Vec::new();
        let judged = self.writes.add(ex, &mut found);
        for f in found {
            self.note(f);
        }
        judged
    }

    /// One exchange of an API that grants producer ids (InitProducerId, EndTxn): where
    /// the id it granted lies.
    /// [`Self::add_producer`] for either API that grants producer ids.
    pub fn add_granting(&mut self, px: &crate::pairing::Granting) -> Placed {
        match px {
            crate::pairing::Granting::InitProducerId(ex) => self.add_producer(ex),
            crate::pairing::Granting::EndTxn(ex) => self.add_producer(ex),
        }
    }

    pub fn add_producer<A: GrantsProducerIds>(&mut self, px: &ApiExchange<A>) -> Placed {
        let mut found = Vec::new();
        let broker = self
            .addresses
            .broker_of(px.endpoints.server)
            .map(|claim| (claim.broker_id, claim.source));
        let placed = self.producers.add(px, broker, &mut found);
        if let Outcome::Complete { meta, response } = &px.outcome {
            if let (None | Some(ErrorCode(0)), Some(id), _) = A::granted(response) {
                if let Some(held) = self.writes.granted(id, meta.frame) {
                    let table = (obs::AnalysisTable::WriteGrants, held);
                    let at = (None, Some(px.endpoints.connection), meta.timestamp);
                    found.push(Finding::analysis_limit(table, meta.frame, at));
                }
            }
        }
        for f in found {
            self.note(f);
        }
        placed
    }

    /// Links the listed findings that restate one fault: an overlap and a regression of
    /// one block (the later block's response frame is the fault), and a duplicate grant
    /// of an id an overlap gave twice. Each gets a `fault_frame` fact.
    fn link_faults(&mut self) {
        // the ids each overlap gave twice, and its block's frame
        let overlaps: Vec<(IdSpan, u64)> = self
            .findings
            .iter()
            .filter(|f| f.kind == Kind::PidBlockOverlap)
            .filter_map(|f| Some((f.ids?, *f.frames.last()?)))
            .collect();
        for f in &mut self.findings {
            let fault = match f.kind {
                Kind::PidBlockOverlap | Kind::PidBlockRegression => f.frames.last().copied(),
                Kind::PidDuplicateGrant => producer_id_of(f).and_then(|id| {
                    overlaps
                        .iter()
                        .find(|(ids, _)| (ids.start..=ids.end).contains(&id))
                        .map(|(_, frame)| *frame)
                }),
                _ => None,
            };
            if let Some(frame) = fault {
                f.facts.push(("fault_frame", frame.into()));
                f.fault = Some(frame);
            }
        }
    }

    /// Names, in each listed overlap's finding, the producers holding its ids.
    fn name_affected_producers(&mut self) {
        let overlaps: Vec<(usize, (i64, i64))> = (self.findings.iter().enumerate())
            .filter(|(_, f)| f.kind == Kind::PidBlockOverlap)
            .filter_map(|(at, f)| Some((at, (f.ids?.start, f.ids?.end))))
            .collect();
        let spans: Vec<(i64, i64)> = overlaps.iter().map(|(_, span)| *span).collect();
        let affected = self.producers.affected(&spans);
        for ((at, _), affected) in overlaps.into_iter().zip(affected) {
            let (Some(f), Some(affected)) = (self.findings.get_mut(at), affected) else {
                continue;
            };
            f.facts
                .push(("affected_producers", affected.producers.into()));
            if affected.producers_at_least {
                f.facts.push(("affected_producers_at_least", true.into()));
            }
            f.facts
                .push(("affected_hosts", affected.hosts.listed.clone().into()));
            if affected.hosts.unlisted().is_some() {
                f.facts
                    .push(("affected_host_count", affected.hosts.count.into()));
            }
            if affected.hosts.at_least {
                f.facts.push(("affected_host_count_at_least", true.into()));
            }
            f.message.push_str("; ");
            f.message.push_str(&affected.sentence());
            f.detail = Some(Detail::Holders(affected));
        }
    }

    /// Ends the analysis; findings are also pushed to `diags`.
    pub fn finish(mut self, diags: &mut Diagnostics) -> Analysis {
        let mut found = Vec::new();
        let mut blocks = std::mem::take(&mut self.blocks);
        let usual_len = blocks.finish(&mut found);
        self.totals.blocks_uncompared = blocks.uncompared();
        self.totals.skipped_ids_unsure = blocks.gaps_unsure();
        drop(blocks);
        self.brokers.finish(&mut found);
        let (slow_threshold_us, slow_unlisted) = self.slow_findings(&mut found);
        let metadata_log = self.committed.take().map(|c| c.finish(&mut found));
        if let Some((frame, at)) = self.coverage.first_refused() {
            let table = (obs::AnalysisTable::Coverage, coverage::MAX_NODES);
            found.push(Finding::analysis_limit(table, frame, (None, None, at)));
        }
        self.writes.finish(&mut found);
        for f in found {
            self.note(f);
        }
        *self
            .finding_counts
            .entry(Kind::PidSlowResponse)
            .or_default() += slow_unlisted;
        self.name_affected_producers();
        self.link_faults();
        self.findings.sort_by(|a, b| {
            a.frames
                .last()
                .cmp(&b.frames.last())
                .then(a.kind.cmp(&b.kind))
        });
        for f in &self.findings {
            diags.push(
                f.kind,
                f.connection,
                f.frames.last().map_or(At::Nowhere, |&frame| {
                    At::Packet(PacketRef {
                        frame,
                        timestamp: f.at,
                        origin: None,
                    })
                }),
                f.message.clone(),
                f.facts.clone(),
            );
        }
        // findings beyond the listing limit are still counted as diagnostics
        for (kind, count) in &self.finding_counts {
            diags.count_more(*kind, count.saturating_sub(MAX_LISTED_PER_KIND));
        }
        self.listed.sort_by_key(Block::order);
        let broker_addresses = self.addresses.table();
        let controllers = self.controllers.finish();
        Analysis {
            blocks: self.listed,
            usual_len,
            findings: self.findings,
            brokers: self.brokers.table(),
            slow_threshold_us,
            totals: self.totals,
            producers: self.producers.totals,
            end_txn: self.producers.end_txn_totals,
            coverage: self.coverage.finish(
                known_brokers(&broker_addresses),
                metadata_log.as_ref().map(|l| &l.log),
                &controllers,
            ),
            broker_addresses,
            controllers,
            metadata_log,
            writes: self.writes.totals().clone(),
            writes_listed: self.writes.listed(),
            writes_producers: self.writes.producers_of_interest(),
        }
    }

    /// The slow responses among the slowest kept, as findings; the threshold, and how
    /// many slow responses there are besides those (counted over every latency).
    fn slow_findings(&mut self, found: &mut Vec<Finding>) -> (Option<f64>, u64) {
        let threshold = match self.slow {
            SlowRule::Millis(ms) => ms * 1000.0,
            SlowRule::Default => match self.totals.latencies.median() {
                Some(median) => (median * SLOW_MEDIAN_FACTOR).max(SLOW_FLOOR_US),
                None => return (None, 0),
            },
        };
        let mut slow: Vec<SlowCandidate> = std::mem::take(&mut self.slow_candidates)
            .into_iter()
            .map(|Reverse(c)| c)
            .filter(|c| c.latency_ns as f64 / 1000.0 > threshold)
            .collect();
        slow.sort_by_key(|c| c.response_frame);
        let listed = slow.len() as u64;
        // only the slowest are kept: the others above the threshold are counted
        let unlisted = self
            .totals
            .latencies
            .count_above(threshold)
            .map_or(0, |all| all.saturating_sub(listed));
        for c in slow {
            let what = Observation::PidSlowResponse(obs::PidSlowResponse {
                frame: c.response_frame,
                correlation_id: c.correlation_id,
                latency_ns: c.latency_ns,
                threshold_us: threshold,
            });
            let at = (c.broker_id, Some(c.connection), c.at);
            found.push(Finding::new(
                what,
                at,
                vec![c.request_frame, c.response_frame],
            ));
        }
        (Some(threshold), unlisted)
    }
}

/// The producer id a duplicate grant's finding names.
fn producer_id_of(f: &Finding) -> Option<i64> {
    match &f.detail {
        Some(Detail::DuplicateGrant(grant)) => Some(grant.producer_id),
        _ => None,
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// Runs every rule over `exchanges` in order; findings are also pushed to `diags`.
pub fn analyse(exchanges: &[Exchange], slow: SlowRule, diags: &mut Diagnostics) -> Analysis {
    let mut analyzer = Analyzer::new(slow, true, MAX_TRACKED_BLOCKS);
    for ex in exchanges {
        analyzer.add(ex);
    }
    analyzer.finish(diags)
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builds exchanges for the analysis tests without a capture.

    use crate::kafka::allocate_producer_ids::{Request, Response};
    use crate::kafka::schema::{RequestHeader, ResponseHeader};
    use crate::kafka::tables::ErrorCode;
    use crate::pairing::{Endpoints, Exchange, MessageMeta, Outcome};
    use crate::timestamp::Timestamp;

    /// Exchange number `n` (its frames and times grow with `n`); `response` is
    /// `(error, start, len, latency_ms)`.
    pub fn exchange(
        n: u64,
        broker: i32,
        epoch: i64,
        response: Option<(i16, i64, i32, u64)>,
    ) -> Exchange {
        let meta = |frame: u64, millis: u64| MessageMeta {
            frame,
            first_frame: frame,
            timestamp: Timestamp {
                secs: 1_700_000_000 + (millis / 1000) as i64,
                nanos: ((millis % 1000) * 1_000_000) as u32,
                nano: false,
            },
            size: 28,
            origin: None,
        };
        Exchange {
            endpoints: Endpoints {
                connection: u64::from(broker as u32),
                client: format!("10.0.0.{broker}:40000").parse().unwrap(),
                server: "10.0.0.100:9093".parse().unwrap(),
            },
            correlation_id: n as i32,
            api_version: 0,
            request_meta: meta(n * 10, n * 1000),
            request: Request {
                header: RequestHeader {
                    client_id: Some(None),
                    tagged_fields: Some(vec![]),
                },
                broker_id: Some(broker),
                broker_epoch: Some(epoch),
                tagged_fields: Some(vec![]),
                problem: None,
                bytes_not_captured: None,
                raw: vec![],
            },
            outcome: match response {
                Some((error, start, len, latency_ms)) => Outcome::Complete {
                    meta: meta(n * 10 + 1, n * 1000 + latency_ms),
                    response: Box::new(Response {
                        header: ResponseHeader {
                            tagged_fields: Some(vec![]),
                        },
                        throttle_time_ms: Some(0),
                        error_code: Some(ErrorCode(error)),
                        producer_id_start: Some(start),
                        producer_id_len: Some(len),
                        tagged_fields: Some(vec![]),
                        problem: None,
                        bytes_not_captured: None,
                        raw: vec![],
                    }),
                },
                None => Outcome::Unanswered,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::exchange;
    use super::*;

    fn kinds(a: &Analysis) -> Vec<&'static str> {
        a.findings.iter().map(|f| f.kind.as_str()).collect()
    }

    #[test]
    fn healthy_allocation_has_no_findings() {
        let ex = vec![
            exchange(1, 1, 5, Some((0, 0, 1000, 2))),
            exchange(2, 2, 5, Some((0, 1000, 1000, 3))),
            exchange(3, 1, 5, Some((0, 2000, 1000, 2))),
        ];
        let mut diags = Diagnostics::default();
        let a = analyse(&ex, SlowRule::Default, &mut diags);
        assert_eq!(kinds(&a), Vec::<&str>::new());
        assert_eq!(a.blocks.len(), 3);
        assert_eq!(a.blocks[2].end, 2999);
        assert_eq!(a.usual_len, Some(1000));
        assert!(diags.is_empty());
    }

    #[test]
    fn slow_response_by_default_rule_and_by_threshold() {
        let mut ex: Vec<Exchange> = (1..=5)
            .map(|n| exchange(n, 1, 5, Some((0, (n as i64) * 1000, 1000, 2))))
            .collect();
        ex.push(exchange(6, 1, 5, Some((0, 6000, 1000, 400))));
        let mut diags = Diagnostics::default();
        let a = analyse(&ex, SlowRule::Default, &mut diags);
        assert_eq!(kinds(&a), vec!["pid_slow_response"]);
        assert_eq!(a.findings[0].frames, vec![60, 61]);
        assert_eq!(a.slow_threshold_us, Some(100_000.0));
        let a = analyse(&ex, SlowRule::Millis(1.0), &mut Diagnostics::default());
        assert_eq!(a.findings.len(), 6);
    }

    #[test]
    fn every_slow_response_is_counted_past_those_listed() {
        // 1,500 responses, each slower than the threshold: the 1,000 slowest listed,
        // every one counted
        let ex: Vec<Exchange> = (1..=1500)
            .map(|n| exchange(n, 1, 5, Some((0, n as i64 * 1000, 1000, 2))))
            .collect();
        let mut diags = Diagnostics::default();
        let a = analyse(&ex, SlowRule::Millis(0.5), &mut diags);
        assert_eq!(kinds(&a).len(), 1000);
        assert_eq!(diags.count(Kind::PidSlowResponse), 1500);
        // the slowest are those listed
        let first_listed = a.findings.first().and_then(|f| f.frames.first().copied());
        assert_eq!(first_listed, Some(5010));
    }

    #[test]
    fn the_slowest_are_listed_whatever_order_they_come_in() {
        // latencies 1..=1500 ms in a scrambled order: those above 500 ms are listed
        let latency = |n: u64| n * 7919 % 1500 + 1;
        let ex: Vec<Exchange> = (1..=1500)
            .map(|n| exchange(n, 1, 5, Some((0, n as i64 * 1000, 1000, latency(n)))))
            .collect();
        let a = analyse(&ex, SlowRule::Millis(0.5), &mut Diagnostics::default());
        let mut listed: Vec<u64> = a
            .findings
            .iter()
            .filter_map(|f| f.frames.first().copied())
            .collect();
        listed.sort_unstable();
        let slowest: Vec<u64> = (1..=1500)
            .filter(|&n| latency(n) > 500)
            .map(|n| n * 10)
            .collect();
        assert_eq!(listed, slowest);
    }
}
