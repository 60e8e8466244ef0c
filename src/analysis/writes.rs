//! The writes of each producer id (issue 42): Produce exchanges in, in the order they
//! complete; the broker's producer state replayed per partition; findings out.
//!
//! Kafka's rule (`ProducerStateEntry.findDuplicateBatch`, the same in 3.9, 4.0 and 4.1;
//! see docs/kafka-produce.md): per partition and producer id the broker keeps the epoch
//! and the last 5 batches appended (first and last sequence, offsets); a batch of that
//! epoch whose sequence range equals one of them is a retry, answered with success and
//! that batch's base offset, and not appended. A retry resends the same bytes; a batch
//! answered so whose CRC differs from the appended one's holds other records: it was
//! acknowledged and never appended (`write_not_appended`). Only what the capture shows
//! is judged: a batch appended before the capture started is not known.
//!
//! Two producers with one producer id and epoch (`write_shared_producer`): writers whose
//! client ids differ, who write from different hosts, or who write to one broker over two
//! connections at once (a Kafka client keeps one connection to each broker).
//!
//! Bounded: at most [`MAX_STATES`] partition-and-producer states and [`MAX_PRODUCERS`]
//! producer ids and epochs followed, past which what is new is counted, not judged, with
//! an `analysis_limit` diagnostic; and what it all holds is charged against the writes'
//! share of `--max-memory` ([`memory`]), past which what was written least recently is
//! forgotten, with an `analysis_limit` diagnostic of table `write_memory`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;

use super::Finding;
use crate::diag::obs::{self, AnalysisTable, TwoWriters};
use crate::diag::{NamedCode, Observation};
use crate::heap::{heap_cost, ChargedTableHasher};
use crate::kafka::produce::request::{PartitionData, TopicData};
use crate::kafka::produce::response::PartitionResponse;
use crate::kafka::produce::BatchHeader;
use crate::kafka::tables::ErrorCode;
use crate::pairing::{Outcome, WriteExchange};
use crate::timestamp::Timestamp;

/// Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`.
const BATCHES_RETAINED: usize = 5;
/// Partition-and-producer states followed.
pub const MAX_STATES: usize = 65_536;
/// Producer ids and epochs whose writers are followed.
pub const MAX_PRODUCERS: usize = 65_536;
/// Writers remembered per producer id and epoch.
pub const MAX_WRITERS: usize = 8;
/// Partitions a group of refusals names; past them it says "at least".
const MAX_GROUP_PARTITIONS: usize = 1024;
/// Batches of interest listed in the report (those past it are counted).
pub const MAX_LISTED: usize = 1000;
/// Topic ids whose names are remembered from Metadata responses.
pub const MAX_TOPIC_NAMES: usize = 65_536;

const OUT_OF_ORDER_SEQUENCE_NUMBER: ErrorCode = ErrorCode(45);
const DUPLICATE_SEQUENCE_NUMBER: ErrorCode = ErrorCode(46);
const INVALID_PRODUCER_EPOCH: ErrorCode = ErrorCode(47);
const UNKNOWN_PRODUCER_ID: ErrorCode = ErrorCode(59);
const PRODUCER_FENCED: ErrorCode = ErrorCode(90);

/// What the writes came to, over the capture.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteTotals {
    /// Produce requests, and those not read whole.
    pub requests: u64,
    pub requests_not_read: u64,
    /// Record batches read, and those with a producer id.
    pub batches: u64,
    pub idempotent_batches: u64,
    /// Batches answered with success, and refused.
    pub acknowledged: u64,
    pub rejected: u64,
    /// Batches of requests without an answer: sent with acks 0, or not answered.
    pub unanswered: u64,
    /// Batches whose answer the capture may have lost.
    pub response_unknown: u64,
    /// Acknowledged batches the broker took for retries: with the same CRC (a real
    /// retry), and with another (not appended).
    pub retries_deduplicated: u64,
    pub not_appended: u64,
    /// Refused batches by error.
    pub errors: BTreeMap<ErrorCode, u64>,
    /// Producer ids and epochs that wrote.
    pub producers: u64,
}

crate::names::closed_set! {
    /// What became of one record batch, as far as the capture shows.
    pub enum WriteOutcome {
        /// Answered with success, at a new offset: appended.
        Appended = "appended",
        /// Answered with success at the offset of the same bytes appended before: a
        /// retry the broker did not append again.
        Retry = "retry",
        /// Answered with success at the offset of another batch with the same producer
        /// id, epoch and sequences: never appended.
        NotAppended = "not_appended",
        /// Answered with success, and not judged: no producer id or last sequence, or not
        /// followed.
        Acknowledged = "acknowledged",
        /// Refused with an error.
        Rejected = "rejected",
        /// Its request has no answer: sent with acks 0, or never answered.
        Unanswered = "unanswered",
        /// Its answer may be in bytes the capture lost.
        ResponseUnknown = "response_unknown",
        /// The answer does not name its partition (or was not read that far).
        NotInResponse = "not_in_response",
    }
}

/// What became of a Produce exchange's batches, in the request's order, and the name of
/// each of its topics (in its order): from the request itself (versions 0 to 12) or, for
/// a topic named by id (version 13), from a Metadata or CreateTopics response of the capture that gave
/// that id's name, when one did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteJudged {
    pub batches: Vec<Judged>,
    pub topic_names: Vec<Option<String>>,
}

/// One batch's outcome: what became of it, and the offset it was answered at when it was
/// answered with success (the first batch's base offset, and the next ones' after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged {
    pub outcome: WriteOutcome,
    pub offset: Option<i64>,
    /// The error it was refused with.
    pub error: Option<ErrorCode>,
}

/// A batch of interest, as the report lists it: one never appended, or one refused for
/// its sequence or epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedBatch {
    pub connection: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub client_id: Option<String>,
    pub transactional_id: Option<String>,
    pub correlation_id: i32,
    pub api_version: i16,
    pub request_frame: u64,
    pub response_frame: Option<u64>,
    pub timestamp: Timestamp,
    /// The topic's name, or its id as 32 hex digits.
    pub topic: Option<String>,
    pub partition: i32,
    pub batch: BatchHeader,
    pub judged: Judged,
}

/// A topic as a request names it: by name, or by id from Produce version 13.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Topic {
    Name(Box<str>),
    Id([u8; 16]),
}

impl Topic {
    fn of(name: Option<&str>, id: Option<[u8; 16]>) -> Option<Self> {
        match (name, id) {
            (Some(name), _) => Some(Self::Name(name.into())),
            (None, Some(id)) => Some(Self::Id(id)),
            (None, None) => None,
        }
    }

    /// Its name, or for an id the name a Metadata response gave it, else the id as
    /// 32 hex digits.
    fn shown(&self, names: &HashMap<[u8; 16], Box<str>>) -> String {
        match self {
            Self::Name(name) => name.to_string(),
            Self::Id(id) => match names.get(id) {
                Some(name) => name.to_string(),
                None => id.iter().map(|b| format!("{b:02x}")).collect(),
            },
        }
    }
}

/// Who wrote a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Writer {
    connection: u64,
    client: SocketAddr,
    server: SocketAddr,
    client_id: Option<String>,
    first_frame: u64,
    last_frame: u64,
    /// What it wrote to each partition, and whether it wrote to more.
    spans: Vec<producers::Span>,
    spans_more: bool,
}

/// A batch the broker appended, as its producer state remembers it.
#[derive(Debug, Clone)]
struct Appended {
    first_sequence: i32,
    last_sequence: i32,
    base_offset: i64,
    crc: Option<u32>,
    client: SocketAddr,
    client_id: Option<Box<str>>,
    response_frame: u64,
}

/// Kafka's `ProducerStateEntry` of one producer id on one partition.
#[derive(Debug, Default)]
struct ProducerState {
    epoch: i16,
    recent: VecDeque<Appended>,
    /// When it was last written: the count of batches judged then (the least recently
    /// written is forgotten first).
    touched: u64,
}

/// A partition-and-producer state's key: topic, partition, producer id.
type StateKey = (Topic, i32, i64);

/// Batches of one producer id and epoch refused with one error.
#[derive(Debug, Clone)]
struct Refused {
    batches: u64,
    partitions: Vec<(Topic, i32)>,
    partitions_more: bool,
    frame: u64,
    last_frame: u64,
    at: Timestamp,
    connection: u64,
    client: SocketAddr,
}

/// The writes analysis's state.
#[derive(Debug, Default)]
pub struct Tracker {
    states: HashMap<StateKey, ProducerState, ChargedTableHasher>,
    writers: HashMap<(i64, i16), Vec<Writer>, ChargedTableHasher>,
    /// Producer ids and epochs already found written by two producers.
    shared: HashMap<(i64, i16), ()>,
    refused: BTreeMap<(i64, i16, ErrorCode), Refused>,
    totals: WriteTotals,
    states_full: bool,
    producers_full: bool,
    refused_full: bool,
    listed: Vec<ListedBatch>,
    listed_more: u64,
    /// Topic names by id, from Metadata responses.
    names: HashMap<[u8; 16], Box<str>>,
    names_full: bool,
    /// What it holds and may hold: see [`memory`].
    memory: memory::Charge,
    /// Grants and producers of interest, for the listing (see [`producers`]).
    interest: producers::Interest,
}

/// One exchange's place, for the findings it raises.
#[derive(Debug, Clone, Copy)]
struct Place<'a> {
    ex: &'a WriteExchange,
    response_frame: u64,
    at: Timestamp,
}

impl Tracker {
    pub fn totals(&self) -> &WriteTotals {
        &self.totals
    }

    /// Topic ids and names a Metadata or CreateTopics response gave. When the first is refused, past
    /// [`MAX_TOPIC_NAMES`] or the names' part of the share, how many are remembered
    /// (said once).
    pub fn topic_names(&mut self, topics: &[([u8; 16], String)]) -> Option<usize> {
        let mut refused = None;
        for (id, name) in topics {
            let full = self.names.len() >= MAX_TOPIC_NAMES || self.part_full(self.names_bytes(), 8);
            if full && !self.names.contains_key(id) {
                if !self.names_full {
                    refused = Some(self.names.len());
                }
                self.names_full = true;
                continue;
            }
            if self.names.get(id).is_none_or(|known| **known != **name) {
                self.memory.names += heap_cost(name.len());
                if let Some(old) = self.names.insert(*id, name.as_str().into()) {
                    self.memory.names = self.memory.names.saturating_sub(heap_cost(old.len()));
                }
            }
        }
        refused
    }

    /// The name of each of a request's topics, in its order.
    fn names_of(&self, topics: &[TopicData]) -> Vec<Option<String>> {
        topics
            .iter()
            .map(|t| match (&t.name, &t.topic_id) {
                (Some(name), _) => Some(name.clone()),
                (None, Some(id)) => self.names.get(id).map(|name| name.to_string()),
                (None, None) => None,
            })
            .collect()
    }

    /// The batches of interest listed, and how many more there were.
    pub fn listed(&mut self) -> (Vec<ListedBatch>, u64) {
        (std::mem::take(&mut self.listed), self.listed_more)
    }

    /// Lists the batches of an exchange whose outcome a post-mortem looks for.
    fn list(&mut self, ex: &WriteExchange, judged: &[Judged]) {
        let of_interest = is_of_interest;
        if !judged.iter().any(of_interest) {
            return;
        }
        let batches = ex.request.topics.iter().flat_map(|t| {
            t.partitions
                .iter()
                .flat_map(move |p| p.batches.iter().map(move |b| (t, p, b)))
        });
        for ((topic, partition, batch), j) in batches.zip(judged) {
            if !of_interest(j) {
                continue;
            }
            if self.listed.len() >= MAX_LISTED || self.part_full(self.listed_bytes(), 8) {
                self.listed_more += 1;
                continue;
            }
            let topic =
                Topic::of(topic.name.as_deref(), topic.topic_id).map(|t| t.shown(&self.names));
            let listed = ListedBatch {
                connection: ex.endpoints.connection,
                client: ex.endpoints.client,
                server: ex.endpoints.server,
                client_id: ex
                    .request
                    .header
                    .client_id
                    .as_ref()
                    .and_then(Option::as_deref)
                    .map(str::to_owned),
                transactional_id: ex.request.transactional_id.clone().flatten(),
                correlation_id: ex.correlation_id,
                api_version: ex.api_version,
                request_frame: ex.request_meta.frame,
                response_frame: ex.outcome.response().map(|(meta, _)| meta.frame),
                timestamp: ex.request_meta.timestamp,
                topic,
                partition: partition.index,
                batch: *batch,
                judged: *j,
            };
            self.memory.listed += memory::listed_heap(&listed);
            self.listed.push(listed);
        }
    }

    /// One Produce exchange: what became of each of its batches, in the request's order.
    pub fn add(&mut self, ex: &WriteExchange, findings: &mut Vec<Finding>) -> WriteJudged {
        let mut judged = Vec::new();
        self.totals.requests += 1;
        if ex.request.problem.is_some() {
            self.totals.requests_not_read += 1;
        }
        let client_id = ex.request.header.client_id.clone().flatten();
        for (topic, partition) in ex
            .request
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t, p)))
        {
            self.count_batches(&partition.batches);
            self.note_writers(ex, &partition.batches, client_id.as_deref(), findings);
            match &ex.outcome {
                Outcome::Complete { meta, response } => {
                    let place = Place {
                        ex,
                        response_frame: meta.frame,
                        at: meta.timestamp,
                    };
                    match answer_of(response, topic, partition.index) {
                        Some(answer) => {
                            self.answered((topic, partition), answer, place, findings, &mut judged);
                        }
                        None => judged.extend(partition.batches.iter().map(|_| Judged {
                            outcome: WriteOutcome::NotInResponse,
                            offset: None,
                            error: None,
                        })),
                    }
                }
                Outcome::Unanswered => {
                    self.totals.unanswered += partition.batches.len() as u64;
                    judged.extend(
                        partition
                            .batches
                            .iter()
                            .map(|_| Judged::not_answered(WriteOutcome::Unanswered)),
                    );
                }
                Outcome::ResponseUnknown => {
                    self.totals.response_unknown += partition.batches.len() as u64;
                    judged.extend(
                        partition
                            .batches
                            .iter()
                            .map(|_| Judged::not_answered(WriteOutcome::ResponseUnknown)),
                    );
                }
            }
        }
        self.list(ex, &judged);
        self.note_spans(ex, &judged);
        let frame = match &ex.outcome {
            Outcome::Complete { meta, .. } => meta.frame,
            _ => ex.request_meta.frame,
        };
        let at = (
            None,
            Some(ex.endpoints.connection),
            ex.request_meta.timestamp,
        );
        self.keep_to_share(frame, at, findings);
        WriteJudged {
            batches: judged,
            topic_names: self.names_of(&ex.request.topics),
        }
    }

    fn count_batches(&mut self, batches: &[BatchHeader]) {
        self.totals.batches += batches.len() as u64;
        let idempotent = batches.iter().filter(|b| judged(b).is_some()).count();
        self.totals.idempotent_batches += idempotent as u64;
    }

    /// A partition's batches and its answer.
    fn answered(
        &mut self,
        (topic, partition): (&TopicData, &PartitionData),
        answer: &PartitionResponse,
        place: Place<'_>,
        findings: &mut Vec<Finding>,
        out: &mut Vec<Judged>,
    ) {
        let batches = &partition.batches;
        let topic = Topic::of(topic.name.as_deref(), topic.topic_id);
        if answer.error_code.is_error() {
            self.totals.rejected += batches.len() as u64;
            *self.totals.errors.entry(answer.error_code).or_default() += batches.len() as u64;
            for batch in batches {
                if let (Some((id, epoch)), Some(topic)) = (judged(batch), &topic) {
                    let key = (id, epoch, answer.error_code);
                    self.refuse(key, (topic, partition.index), place, findings);
                }
                out.push(Judged {
                    outcome: WriteOutcome::Rejected,
                    offset: None,
                    error: Some(answer.error_code),
                });
            }
            return;
        }
        self.totals.acknowledged += batches.len() as u64;
        // Offsets follow one another from the first batch's, as the broker assigns them.
        let mut offset = answer.base_offset;
        for batch in batches {
            let outcome = match (judged(batch), &topic) {
                (Some((id, _)), Some(topic)) => {
                    let key = (topic.clone(), partition.index, id);
                    self.judge(key, batch, offset, place, findings)
                }
                _ => WriteOutcome::Acknowledged,
            };
            out.push(Judged {
                outcome,
                offset: Some(offset),
                error: None,
            });
            let records = batch.last_offset_delta.map_or(1, |d| i64::from(d) + 1);
            offset = offset.saturating_add(records);
        }
    }

    /// An acknowledged batch of a producer id, at `offset`, against the broker's state.
    fn judge(
        &mut self,
        key: (Topic, i32, i64),
        batch: &BatchHeader,
        offset: i64,
        place: Place<'_>,
        findings: &mut Vec<Finding>,
    ) -> WriteOutcome {
        let (Some(epoch), Some(first), Some(last)) = (
            batch.producer_epoch,
            batch.base_sequence,
            batch.last_sequence(),
        ) else {
            return WriteOutcome::Acknowledged;
        };
        if !self.states.contains_key(&key) && self.states.len() >= MAX_STATES {
            if !self.states_full {
                self.states_full = true;
                let at = (None, Some(place.ex.endpoints.connection), place.at);
                let limit = (AnalysisTable::Writes, MAX_STATES);
                findings.push(Finding::analysis_limit(limit, place.response_frame, at));
            }
            return WriteOutcome::Acknowledged;
        }
        let (topic, partition, producer_id) = key.clone();
        self.memory.clock += 1;
        let state = match self.states.get_mut(&key) {
            Some(state) => state,
            None => {
                let state = ProducerState {
                    recent: VecDeque::with_capacity(BATCHES_RETAINED),
                    ..ProducerState::default()
                };
                self.memory.entries += memory::state_heap(&key, &state);
                self.states.entry(key.clone()).or_insert(state)
            }
        };
        let before = memory::state_heap(&key, state);
        state.touched = self.memory.clock;
        let outcome = Self::judge_in(
            state,
            batch,
            (epoch, first, last),
            offset,
            place,
            &mut self.totals,
        );
        self.memory.entries =
            self.memory.entries.saturating_sub(before) + memory::state_heap(&key, state);
        if let Judgement::NotAppended(earlier) = &outcome {
            let batch = (topic.shown(&self.names), partition, producer_id);
            findings.push(not_appended(
                place,
                batch,
                (epoch, first, last),
                offset,
                earlier,
            ));
            return WriteOutcome::NotAppended;
        }
        outcome.outcome()
    }

    /// Kafka's judgement of an acknowledged batch against its producer state.
    fn judge_in(
        state: &mut ProducerState,
        batch: &BatchHeader,
        (epoch, first, last): (i16, i32, i32),
        offset: i64,
        place: Place<'_>,
        totals: &mut WriteTotals,
    ) -> Judgement {
        if state.epoch != epoch {
            // Kafka clears the batches it keeps when the epoch changes.
            state.epoch = epoch;
            state.recent.clear();
        }
        let same = |a: &&Appended| a.first_sequence == first && a.last_sequence == last;
        if let Some(earlier) = state.recent.iter().find(same) {
            if earlier.base_offset == offset {
                totals.retries_deduplicated += 1;
                if earlier.crc == batch.crc {
                    return Judgement::Retry;
                }
                totals.not_appended += 1;
                return Judgement::NotAppended(Box::new(earlier.clone()));
            }
        }
        if state.recent.len() == BATCHES_RETAINED {
            state.recent.pop_front();
        }
        state.recent.push_back(Appended {
            first_sequence: first,
            last_sequence: last,
            base_offset: offset,
            crc: batch.crc,
            client: place.ex.endpoints.client,
            client_id: place
                .ex
                .request
                .header
                .client_id
                .as_ref()
                .and_then(|id| id.as_deref())
                .map(Into::into),
            response_frame: place.response_frame,
        });
        Judgement::Appended
    }

    /// A refused batch, counted in its producer's group.
    fn refuse(
        &mut self,
        key: (i64, i16, ErrorCode),
        (topic, partition): (&Topic, i32),
        place: Place<'_>,
        findings: &mut Vec<Finding>,
    ) {
        if !self.refused.contains_key(&key) && self.refused.len() >= MAX_PRODUCERS {
            // counted in the totals' errors, not grouped
            if !self.refused_full {
                self.refused_full = true;
                let at = (None, Some(place.ex.endpoints.connection), place.at);
                let limit = (AnalysisTable::WriteRefusals, MAX_PRODUCERS);
                findings.push(Finding::analysis_limit(limit, place.response_frame, at));
            }
            return;
        }
        let before = self.refused.get(&key).map_or(0, memory::refused_heap);
        let group = self.refused.entry(key).or_insert_with(|| Refused {
            batches: 0,
            partitions: Vec::new(),
            partitions_more: false,
            frame: place.response_frame,
            last_frame: place.response_frame,
            at: place.at,
            connection: place.ex.endpoints.connection,
            client: place.ex.endpoints.client,
        });
        group.batches += 1;
        group.last_frame = place.response_frame;
        let this = (topic.clone(), partition);
        if !group.partitions.contains(&this) {
            match group.partitions.len() < MAX_GROUP_PARTITIONS {
                true => group.partitions.push(this),
                false => group.partitions_more = true,
            }
        }
        self.memory.entries =
            self.memory.entries.saturating_sub(before) + memory::refused_heap(group);
    }

    /// The writers of a partition's batches: a second producer of one id and epoch is a
    /// finding, once per id and epoch.
    fn note_writers(
        &mut self,
        ex: &WriteExchange,
        batches: &[BatchHeader],
        client_id: Option<&str>,
        findings: &mut Vec<Finding>,
    ) {
        for key in batches.iter().filter_map(judged) {
            if !self.writers.contains_key(&key) {
                let full = self.writers.len() >= MAX_PRODUCERS;
                if full || self.part_full(self.writers_bytes(), 4) {
                    if !self.producers_full {
                        self.producers_full = true;
                        let at = (
                            None,
                            Some(ex.endpoints.connection),
                            ex.request_meta.timestamp,
                        );
                        let limit = (AnalysisTable::WriteProducers, self.writers.len());
                        findings.push(Finding::analysis_limit(limit, ex.request_meta.frame, at));
                    }
                    continue;
                }
                self.totals.producers += 1;
            }
            let frame = ex.request_meta.frame;
            let writers = self.writers.entry(key).or_default();
            let before = memory::writers_heap(writers, writers.capacity());
            let index = match writers
                .iter()
                .position(|w| w.connection == ex.endpoints.connection)
            {
                Some(i) => i,
                None if writers.len() < MAX_WRITERS => {
                    if writers.len() == writers.capacity() {
                        // one is the usual (a transactional producer has one an epoch,
                        // thousands of them); a second, what is looked for, is rare: room
                        // doubles from one (a Vec's own growth would jump to four)
                        writers.reserve_exact(writers.len().max(1));
                    }
                    writers.push(Writer {
                        connection: ex.endpoints.connection,
                        client: ex.endpoints.client,
                        server: ex.endpoints.server,
                        client_id: client_id.map(str::to_owned),
                        first_frame: frame,
                        last_frame: frame,
                        spans: Vec::new(),
                        spans_more: false,
                    });
                    writers.len() - 1
                }
                None => continue,
            };
            if let Some(w) = writers.get_mut(index) {
                w.last_frame = w.last_frame.max(frame);
            }
            let after = memory::writers_heap(writers, writers.capacity());
            self.memory.writers = self.memory.writers.saturating_sub(before) + after;
            if self.shared.contains_key(&key) {
                continue;
            }
            let Some(this) = writers.get(index) else {
                continue;
            };
            let other = writers
                .iter()
                .filter(|w| w.connection != this.connection)
                .find_map(|w| two_producers(w, this).map(|why| (w, why)));
            if let Some((other, why)) = other {
                let what = Observation::WriteSharedProducer(obs::WriteSharedProducer {
                    frame,
                    producer_id: key.0,
                    producer_epoch: key.1,
                    client: this.client,
                    client_id: this.client_id.as_deref(),
                    other_frame: other.first_frame,
                    other_client: other.client,
                    other_client_id: other.client_id.as_deref(),
                    why,
                });
                let at = (
                    None,
                    Some(ex.endpoints.connection),
                    ex.request_meta.timestamp,
                );
                findings.push(Finding::new(what, at, vec![other.first_frame, frame]));
                self.shared.insert(key, ());
            }
        }
    }

    /// The groups of refused batches, each a finding.
    pub fn finish(&mut self, findings: &mut Vec<Finding>) {
        report_refusals(std::mem::take(&mut self.refused), findings);
    }
}

/// Groups of refused batches, each a finding.
fn report_refusals(groups: BTreeMap<(i64, i16, ErrorCode), Refused>, findings: &mut Vec<Finding>) {
    for ((producer_id, producer_epoch, code), group) in groups {
        let name = code.name();
        let rejected = obs::WriteRejected {
            frame: group.frame,
            last_frame: group.last_frame,
            producer_id,
            producer_epoch,
            error: NamedCode {
                code: code.0,
                name: &name,
            },
            batches: group.batches,
            partitions: group.partitions.len() as u64,
            partitions_more: group.partitions_more,
            client: group.client,
        };
        let what = match code {
            OUT_OF_ORDER_SEQUENCE_NUMBER | DUPLICATE_SEQUENCE_NUMBER | UNKNOWN_PRODUCER_ID => {
                Observation::WriteOutOfSequence(rejected)
            }
            INVALID_PRODUCER_EPOCH | PRODUCER_FENCED => Observation::WriteFenced(rejected),
            _ => continue,
        };
        let at = (None, Some(group.connection), group.at);
        findings.push(Finding::new(what, at, vec![group.frame, group.last_frame]));
    }
}

/// `write_not_appended`: a batch (its topic, partition, producer id, epoch and sequences)
/// acknowledged at `offset`, where `earlier` was appended.
fn not_appended(
    place: Place<'_>,
    (topic, partition, producer_id): (String, i32, i64),
    (producer_epoch, first_sequence, last_sequence): (i16, i32, i32),
    offset: i64,
    earlier: &Appended,
) -> Finding {
    let client_id = place.ex.request.header.client_id.clone().flatten();
    let what = Observation::WriteNotAppended(obs::WriteNotAppended {
        frame: place.response_frame,
        request_frame: place.ex.request_meta.frame,
        topic: topic.as_str(),
        partition,
        producer_id,
        producer_epoch,
        first_sequence,
        last_sequence,
        offset,
        client: place.ex.endpoints.client,
        client_id: client_id.as_deref(),
        other_frame: earlier.response_frame,
        other_client: earlier.client,
        other_client_id: earlier.client_id.as_deref(),
    });
    let frames = vec![
        earlier.response_frame,
        place.ex.request_meta.frame,
        place.response_frame,
    ];
    let at = (None, Some(place.ex.endpoints.connection), place.at);
    Finding::new(what, at, frames)
}

impl Judged {
    fn not_answered(outcome: WriteOutcome) -> Self {
        Self {
            outcome,
            offset: None,
            error: None,
        }
    }
}

/// Whether a batch is one a post-mortem looks for: never appended, or refused for its
/// sequence or epoch.
fn is_of_interest(j: &Judged) -> bool {
    match j.outcome {
        WriteOutcome::NotAppended => true,
        WriteOutcome::Rejected => matches!(
            j.error,
            Some(
                OUT_OF_ORDER_SEQUENCE_NUMBER
                    | DUPLICATE_SEQUENCE_NUMBER
                    | INVALID_PRODUCER_EPOCH
                    | UNKNOWN_PRODUCER_ID
                    | PRODUCER_FENCED
            )
        ),
        _ => false,
    }
}

/// The producer id and epoch of a batch the broker's producer state judges: magic 2,
/// with a producer id, not a transaction marker.
fn judged(batch: &BatchHeader) -> Option<(i64, i16)> {
    let id = batch.producer_id.filter(|id| *id >= 0)?;
    (!batch.is_control()).then_some((id, batch.producer_epoch?))
}

/// Whether two writers of one producer id and epoch are two producers, and why.
fn two_producers(a: &Writer, b: &Writer) -> Option<TwoWriters> {
    if let (Some(x), Some(y)) = (&a.client_id, &b.client_id) {
        if x != y {
            return Some(TwoWriters::ClientIds);
        }
    }
    if a.client.ip() != b.client.ip() {
        return Some(TwoWriters::Hosts);
    }
    // Frames of two connections' requests differ: intervals that meet interleave.
    let overlap = a.first_frame.max(b.first_frame) <= a.last_frame.min(b.last_frame);
    (a.server == b.server && overlap).then_some(TwoWriters::Connections)
}

/// The answer for one partition of a topic, matched by name or id.
fn answer_of<'a>(
    response: &'a crate::kafka::produce::Response,
    topic: &TopicData,
    partition: i32,
) -> Option<&'a PartitionResponse> {
    response
        .topics
        .iter()
        .filter(|t| match (&topic.name, &topic.topic_id) {
            (Some(name), _) => t.name.as_ref() == Some(name),
            (None, Some(id)) => t.topic_id.as_ref() == Some(id),
            (None, None) => false,
        })
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.index == partition)
}

/// What Kafka's producer state makes of an acknowledged batch.
enum Judgement {
    Appended,
    Retry,
    /// Taken for a retry of `earlier`, whose CRC differs: never appended.
    NotAppended(Box<Appended>),
}

impl Judgement {
    fn outcome(&self) -> WriteOutcome {
        match self {
            Self::Appended => WriteOutcome::Appended,
            Self::Retry => WriteOutcome::Retry,
            Self::NotAppended(_) => WriteOutcome::NotAppended,
        }
    }
}

mod memory;
mod producers;
pub use memory::share_of;
pub use producers::{PartitionWrites, ProducerWrites, WriterWrites, MAX_LISTED_PRODUCERS};

#[cfg(test)]
mod tests;
