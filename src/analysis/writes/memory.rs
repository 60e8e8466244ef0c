//! What the writes analysis holds, charged against its share of `--max-memory`, and what
//! it gives up first when that share is full.
//!
//! The share is a sixteenth of `--max-memory` ([`share_of`]): half the analysis's eighth
//! ([`crate::analysis::share_of`]), the granted ids' table holding the other half; the
//! connections' budget is the rest. Each table is charged at its capacity (see
//! [`crate::heap`]) and each entry at what its text and kept batches take. The writers of
//! each producer id and epoch, the topic names and the batches listed for the report each
//! stop growing at a part of the share (new ones are then counted, not followed, with an
//! `analysis_limit`); past the whole share, the partition-and-producer states written
//! least recently are forgotten, then the oldest groups of refusals are reported at once,
//! until three quarters of it is held (`analysis_limit`, table `write_memory`). The states
//! of a producer id already found written by two producers are kept: they are what a
//! post-mortem looks for. A batch written to a forgotten state is judged against what is
//! known, as at the capture's start: a retry of one forgotten is taken as appended, and a
//! batch never appended among them goes unfound.

use std::collections::{BTreeMap, HashSet};

use super::{Appended, ListedBatch, ProducerState, Refused, StateKey, Topic, Tracker, Writer};
use crate::analysis::Finding;
use crate::diag::obs::AnalysisTable;
use crate::heap::{heap_cost, table_cost};
use crate::kafka::tables::ErrorCode;
use crate::timestamp::Timestamp;

/// The writes analysis's share of `--max-memory`: a sixteenth of it, half the analysis's.
pub const fn share_of(max_memory: usize) -> usize {
    max_memory / 16
}

/// What a B-tree entry of the refusal groups takes: its part of a node of 11 (at least
/// 5 full) with malloc's header.
fn refused_entry() -> usize {
    heap_cost(11 * size_of::<((i64, i16, ErrorCode), Refused)>() + 16) / 5
}

/// What the writes analysis is charged, and may be.
#[derive(Debug)]
pub(super) struct Charge {
    /// Its share of `--max-memory`.
    pub max_bytes: usize,
    /// What the states and refusal groups hold beyond their tables' slots.
    pub entries: usize,
    /// What the writers hold beyond their table's slots.
    pub writers: usize,
    /// What the topic names and the listed batches hold beyond their slots.
    pub names: usize,
    pub listed: usize,
    /// Batches judged: the clock of [`ProducerState::touched`].
    pub clock: u64,
    /// What was held after the last forgetting: the next waits until a quarter of the
    /// share more is held, so that its look at every state is paid for.
    pub left: usize,
}

impl Default for Charge {
    fn default() -> Self {
        Self {
            max_bytes: usize::MAX,
            entries: 0,
            writers: 0,
            names: 0,
            listed: 0,
            clock: 0,
            left: 0,
        }
    }
}

/// What a text takes on the heap.
fn text_heap(text: Option<&str>) -> usize {
    text.map_or(0, |t| heap_cost(t.len()))
}

fn topic_heap(topic: &Topic) -> usize {
    match topic {
        Topic::Name(name) => heap_cost(name.len()),
        Topic::Id(_) => 0,
    }
}

/// What a state holds beyond its slot: its topic's name, its kept batches.
pub(super) fn state_heap(key: &StateKey, state: &ProducerState) -> usize {
    let kept = heap_cost(state.recent.capacity() * size_of::<Appended>());
    let ids: usize = state
        .recent
        .iter()
        .map(|a| text_heap(a.client_id.as_deref()))
        .sum();
    topic_heap(&key.0) + kept + ids
}

/// What a group of refusals holds beyond its entry: the partitions named.
pub(super) fn refused_heap(group: &Refused) -> usize {
    let names: usize = group.partitions.iter().map(|(t, _)| topic_heap(t)).sum();
    heap_cost(group.partitions.capacity() * size_of::<(Topic, i32)>()) + names
}

/// What one producer id and epoch's writers hold beyond their slot.
pub(super) fn writers_heap(writers: &[Writer], capacity: usize) -> usize {
    let ids: usize = writers
        .iter()
        .map(|w| text_heap(w.client_id.as_deref()))
        .sum();
    heap_cost(capacity * size_of::<Writer>()) + ids
}

/// What a writer's spans hold: the partitions it wrote.
pub(super) fn writer_spans_heap(writer: &Writer) -> usize {
    let names: usize = writer.spans.iter().map(|s| topic_heap(s.topic())).sum();
    heap_cost(writer.spans.capacity() * size_of::<super::producers::Span>()) + names
}

/// What a batch listed for the report holds beyond its slot.
pub(super) fn listed_heap(batch: &ListedBatch) -> usize {
    text_heap(batch.client_id.as_deref())
        + text_heap(batch.transactional_id.as_deref())
        + text_heap(batch.topic.as_deref())
}

impl Tracker {
    /// Charges what the analysis holds against `max_bytes` (see [`share_of`]).
    pub fn set_max_bytes(&mut self, max_bytes: usize) {
        self.memory.max_bytes = max_bytes;
    }

    /// What the writes analysis holds now.
    pub fn held_bytes(&self) -> usize {
        self.states_bytes(self.states.capacity())
            + self.writers_bytes()
            + self.names_bytes()
            + self.listed_bytes()
    }

    /// The states and refusal groups, the states' table at `capacity`.
    fn states_bytes(&self, capacity: usize) -> usize {
        table_cost(capacity, size_of::<(StateKey, ProducerState)>())
            + self.refused.len() * refused_entry()
            + self.memory.entries
    }

    pub(super) fn writers_bytes(&self) -> usize {
        table_cost(
            self.writers.capacity(),
            size_of::<((i64, i16), Vec<Writer>)>(),
        ) + table_cost(self.shared.capacity(), size_of::<(i64, i16)>())
            + self.interest.heap()
            + self.memory.writers
    }

    pub(super) fn names_bytes(&self) -> usize {
        table_cost(self.names.capacity(), size_of::<([u8; 16], Box<str>)>()) + self.memory.names
    }

    pub(super) fn listed_bytes(&self) -> usize {
        heap_cost(self.listed.capacity() * size_of::<ListedBatch>()) + self.memory.listed
    }

    /// Whether a part of the share is full: a `1/parts` of it.
    pub(super) fn part_full(&self, held: usize, parts: usize) -> bool {
        held > self.memory.max_bytes / parts
    }

    /// After an exchange: forgets what was written least recently when the share is full,
    /// saying so as of `frame` and `at`.
    pub(super) fn keep_to_share(
        &mut self,
        frame: u64,
        at: (Option<i32>, Option<u64>, Timestamp),
        findings: &mut Vec<Finding>,
    ) {
        let held = self.held_bytes();
        let quarter = self.memory.max_bytes / 4;
        if held <= self.memory.max_bytes {
            self.memory.left = 0;
            return;
        }
        if held <= self.memory.left.saturating_add(quarter) {
            return;
        }
        let target = self.memory.max_bytes - quarter;
        self.forget_states(target);
        self.report_refusals_early(target, findings);
        self.memory.left = self.held_bytes();
        let limit = (AnalysisTable::WriteMemory, self.memory.max_bytes);
        findings.push(Finding::analysis_limit(limit, frame, at));
    }

    /// Forgets the states written least recently, except those of a producer id written
    /// by two producers, until `target` is held.
    fn forget_states(&mut self, target: usize) {
        let kept: HashSet<i64> = self.shared.keys().map(|(id, _)| *id).collect();
        let mut order: Vec<(u64, StateKey)> = self
            .states
            .iter()
            .filter(|(key, _)| !kept.contains(&key.2))
            .map(|(key, state)| (state.touched, key.clone()))
            .collect();
        order.sort_unstable_by_key(|(touched, _)| *touched);
        let others = self.held_bytes() - self.states_bytes(self.states.capacity());
        for (_, key) in order {
            if others + self.states_bytes(self.states.len()) <= target {
                break;
            }
            if let Some(state) = self.states.remove(&key) {
                self.memory.entries = self.memory.entries.saturating_sub(state_heap(&key, &state));
            }
        }
        self.states.shrink_to_fit();
    }

    /// Reports the oldest groups of refusals now, until `target` is held.
    fn report_refusals_early(&mut self, target: usize, findings: &mut Vec<Finding>) {
        if self.held_bytes() <= target {
            return;
        }
        let mut order: Vec<(u64, (i64, i16, ErrorCode))> =
            self.refused.iter().map(|(k, g)| (g.frame, *k)).collect();
        order.sort_unstable();
        let mut early = BTreeMap::new();
        for (_, key) in order {
            if self.held_bytes() <= target {
                break;
            }
            if let Some(group) = self.refused.remove(&key) {
                self.memory.entries = self.memory.entries.saturating_sub(refused_heap(&group));
                early.insert(key, group);
            }
        }
        super::report_refusals(early, findings);
    }
}
