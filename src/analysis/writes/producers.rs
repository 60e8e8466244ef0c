//! The writes of each producer id and epoch a post-mortem looks at (issue 42, point 3):
//! one written by two producers, one with a batch never appended, one refused for its
//! sequence or epoch. Per writer (a connection), the partitions it wrote, the sequence
//! range on each and what the broker answered; and the grants of the capture that handed
//! the id out (InitProducerId, EndTxn), by response frame.

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::Serialize;

use super::{judged, memory, Judged, Topic, Tracker, WriteOutcome};
use crate::heap::{heap_cost, table_cost};
use crate::pairing::WriteExchange;

/// Partitions followed per writer of a producer id and epoch; past them it says so.
const MAX_SPANS: usize = 64;
/// Producer ids and epochs listed in the report.
pub const MAX_LISTED_PRODUCERS: usize = 100;
/// Grants remembered per producer id.
const MAX_GRANTS: usize = 8;

/// What one writer wrote to one partition with a producer id and epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Span {
    topic: Topic,
    partition: i32,
    first_sequence: i32,
    last_sequence: i32,
    counts: [u32; 6],
}

impl Span {
    pub(super) fn topic(&self) -> &Topic {
        &self.topic
    }
}

/// Where an outcome is counted in [`Span::counts`].
fn slot(outcome: WriteOutcome) -> usize {
    match outcome {
        WriteOutcome::Appended => 0,
        WriteOutcome::Retry => 1,
        WriteOutcome::NotAppended => 2,
        WriteOutcome::Rejected => 3,
        WriteOutcome::Acknowledged => 4,
        WriteOutcome::Unanswered | WriteOutcome::ResponseUnknown | WriteOutcome::NotInResponse => 5,
    }
}

/// A producer id and epoch worth a look, and what it wrote.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct ProducerWrites {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Written by two producers (`write_shared_producer`).
    pub shared: bool,
    /// Its batches never appended (`write_not_appended`), and refused for their sequence
    /// or epoch (`write_out_of_sequence`, `write_fenced`).
    pub not_appended: u64,
    pub refused: u64,
    /// The response frames of the capture's InitProducerId and EndTxn exchanges that
    /// granted this producer id (any epoch), in frame order; at most 8.
    pub grant_frames: Vec<u64>,
    /// Each connection that wrote with it (at most 8), in the order they first did.
    pub writers: Vec<WriterWrites>,
}

/// One connection's writes with a producer id and epoch.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct WriterWrites {
    pub connection: u64,
    pub client: String,
    pub server: String,
    /// The requests' `client_id` (absent when null).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Its first and last Produce request with this producer id and epoch.
    pub first_frame: u64,
    pub last_frame: u64,
    /// The partitions it wrote (at most 64, in the order it first wrote them);
    /// `partitions_more` when it wrote more.
    pub partitions: Vec<PartitionWrites>,
    pub partitions_more: bool,
}

/// What a writer wrote to one partition, and what became of it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct PartitionWrites {
    /// The topic's name, or its id (32 hex digits) from Produce version 13.
    pub topic: String,
    pub partition: i32,
    /// The lowest first sequence and highest last sequence of its batches.
    pub first_sequence: i32,
    pub last_sequence: i32,
    /// Its batches by outcome (see `writes.of_interest[].outcome`); `other` counts the
    /// acknowledged ones not judged and those without an answer.
    pub batches: u64,
    pub appended: u64,
    pub retries: u64,
    pub not_appended: u64,
    pub rejected: u64,
    pub other: u64,
}

/// What the tracker keeps for the listing: grants by producer id, and the producer ids
/// and epochs of interest (besides those two producers wrote).
#[derive(Debug, Default)]
pub(super) struct Interest {
    grants: HashMap<i64, Vec<u64>>,
    /// What the grants' lists of frames take on the heap.
    grants_heap: usize,
    grants_full: bool,
    /// By producer id and epoch: batches never appended, and refused.
    marked: HashMap<(i64, i16), (u64, u64)>,
}

impl Interest {
    /// What it holds on the heap.
    pub(super) fn heap(&self) -> usize {
        table_cost(self.grants.capacity(), size_of::<(i64, Vec<u64>)>())
            + self.grants_heap
            + table_cost(
                self.marked.capacity(),
                size_of::<((i64, i16), (u64, u64))>(),
            )
    }
}

impl Tracker {
    /// A grant of `producer_id` in the response at `frame`. When the first is refused,
    /// past [`super::MAX_PRODUCERS`] ids or the writers' part of the share, how many ids
    /// are remembered (said once).
    pub fn granted(&mut self, producer_id: i64, frame: u64) -> Option<usize> {
        let known = self.interest.grants.contains_key(&producer_id);
        let full = self.interest.grants.len() >= super::MAX_PRODUCERS
            || self.part_full(self.writers_bytes(), 4);
        if !known && (self.interest.grants_full || full) {
            let first = !self.interest.grants_full;
            self.interest.grants_full = true;
            return first.then_some(self.interest.grants.len());
        }
        let frames = self.interest.grants.entry(producer_id).or_default();
        if frames.len() < MAX_GRANTS && !frames.contains(&frame) {
            // room for the frames kept only: most ids are granted once, and room for
            // all would take 80 bytes an id where one takes 32
            let capacity = frames.capacity();
            frames.reserve_exact(1);
            frames.push(frame);
            let grown = heap_cost(frames.capacity() * 8).saturating_sub(heap_cost(capacity * 8));
            self.interest.grants_heap += grown;
        }
        None
    }

    /// Counts each batch of `ex` in its writer's span of its partition.
    pub(super) fn note_spans(&mut self, ex: &WriteExchange, outcomes: &[Judged]) {
        let batches = ex.request.topics.iter().flat_map(|t| {
            let topic = Topic::of(t.name.as_deref(), t.topic_id);
            t.partitions.iter().flat_map(move |p| {
                let topic = topic.clone();
                p.batches.iter().map(move |b| (topic.clone(), p.index, b))
            })
        });
        for ((topic, partition, batch), judgement) in batches.zip(outcomes) {
            let (Some(key), Some(topic)) = (judged(batch), topic) else {
                continue;
            };
            // bounded as the writers are: one past them is counted in the totals only
            let room = self.interest.marked.len() < super::MAX_PRODUCERS
                || self.interest.marked.contains_key(&key);
            match judgement.outcome {
                WriteOutcome::NotAppended if room => {
                    self.interest.marked.entry(key).or_default().0 += 1;
                }
                WriteOutcome::Rejected if room && super::is_of_interest(judgement) => {
                    self.interest.marked.entry(key).or_default().1 += 1;
                }
                _ => {}
            }
            let Some(writers) = self.writers.get_mut(&key) else {
                continue;
            };
            let Some(writer) = writers
                .iter_mut()
                .find(|w| w.connection == ex.endpoints.connection)
            else {
                continue;
            };
            let before = memory::writer_spans_heap(writer);
            let (first, last) = (batch.base_sequence, batch.last_sequence());
            let (first, last) = (first.unwrap_or(-1), last.unwrap_or(-1));
            let span = match writer
                .spans
                .iter_mut()
                .position(|s| s.partition == partition && s.topic == topic)
            {
                Some(i) => writer.spans.get_mut(i),
                None if writer.spans.len() < MAX_SPANS => {
                    if writer.spans.len() == writer.spans.capacity() {
                        // most write one partition an epoch (a transaction's few): room
                        // for four would take 240 bytes where one takes 72; it doubles
                        writer.spans.reserve_exact(writer.spans.len().max(1));
                    }
                    writer.spans.push(Span {
                        topic,
                        partition,
                        first_sequence: first,
                        last_sequence: last,
                        counts: [0; 6],
                    });
                    writer.spans.last_mut()
                }
                None => {
                    writer.spans_more = true;
                    None
                }
            };
            if let Some(span) = span {
                span.first_sequence = span.first_sequence.min(first);
                span.last_sequence = span.last_sequence.max(last);
                if let Some(n) = span.counts.get_mut(slot(judgement.outcome)) {
                    *n = n.saturating_add(1);
                }
            }
            let after = memory::writer_spans_heap(writer);
            self.memory.writers = self.memory.writers.saturating_sub(before) + after;
        }
    }

    /// The producer ids and epochs of interest, by id and epoch (at most
    /// [`MAX_LISTED_PRODUCERS`]), and how many more there were.
    pub fn producers_of_interest(&self) -> (Vec<ProducerWrites>, u64) {
        let keys: BTreeSet<(i64, i16)> = self
            .shared
            .keys()
            .chain(self.interest.marked.keys())
            .copied()
            .collect();
        let more = keys.len().saturating_sub(MAX_LISTED_PRODUCERS) as u64;
        let listed = keys
            .into_iter()
            .take(MAX_LISTED_PRODUCERS)
            .map(|key| self.producer_writes(key))
            .collect();
        (listed, more)
    }

    fn producer_writes(&self, (producer_id, producer_epoch): (i64, i16)) -> ProducerWrites {
        let (not_appended, refused) = self
            .interest
            .marked
            .get(&(producer_id, producer_epoch))
            .copied()
            .unwrap_or_default();
        let mut grant_frames = self
            .interest
            .grants
            .get(&producer_id)
            .cloned()
            .unwrap_or_default();
        grant_frames.sort_unstable();
        let writers = self
            .writers
            .get(&(producer_id, producer_epoch))
            .map(|writers| {
                writers
                    .iter()
                    .map(|w| WriterWrites {
                        connection: w.connection,
                        client: w.client.to_string(),
                        server: w.server.to_string(),
                        client_id: w.client_id.clone(),
                        first_frame: w.first_frame,
                        last_frame: w.last_frame,
                        partitions: w.spans.iter().map(|s| self.partition_writes(s)).collect(),
                        partitions_more: w.spans_more,
                    })
                    .collect()
            })
            .unwrap_or_default();
        ProducerWrites {
            producer_id,
            producer_epoch,
            shared: self.shared.contains_key(&(producer_id, producer_epoch)),
            not_appended,
            refused,
            grant_frames,
            writers,
        }
    }

    fn partition_writes(&self, span: &Span) -> PartitionWrites {
        let [appended, retries, not_appended, rejected, acknowledged, unanswered] =
            span.counts.map(u64::from);
        PartitionWrites {
            topic: span.topic.shown(&self.names),
            partition: span.partition,
            first_sequence: span.first_sequence,
            last_sequence: span.last_sequence,
            batches: span.counts.iter().map(|n| u64::from(*n)).sum(),
            appended,
            retries,
            not_appended,
            rejected,
            other: acknowledged + unanswered,
        }
    }
}
