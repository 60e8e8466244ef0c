//! The wire against the controller's log. A KRaft controller answers AllocateProducerIds
//! only after the ProducerIdsRecord granting the block is committed, so each block
//! delivered on the wire has its record (same broker, broker epoch and end), appended no
//! later than the delivery; and each record committed while the capture watched its broker
//! was delivered, or its request's fate explains why not.
//!
//! In: the [`MetadataLog`], read before the capture; then the capture's AllocateProducerIds
//! exchanges one at a time ([`Compare::exchange`]), each checked as it comes, so that only
//! a few failed requests per broker are held. Out ([`Compare::finish`]): findings, and how
//! each committed block stands ([`Delivery`]). Records and deliveries are matched by the
//! block's end (the record's `NextProducerId`), the one value a record holds of its block.
//! Without a capture ([`Compare::finish`] with no exchange seen) only the log's own
//! findings remain: regressions and gaps among its records.

use std::collections::{BTreeMap, VecDeque};

use super::brokers::MAX_BROKERS;
use super::{Block, Finding};
use crate::diag::obs;
use crate::diag::{Diagnostics, Observation};
use crate::metadata_log::{CommittedBlock, LogProblem, MetadataLog, PRODUCER_ID_BLOCK_SIZE};
use crate::pairing::{Exchange, Outcome};
use crate::timestamp::Timestamp;

/// Failed requests kept per broker: for the fate of an undelivered block. Brokers are
/// kept as the brokers table keeps them (the same exchanges, in the same order), whose
/// `analysis_limit` says when one is not.
const MAX_FAILED_PER_BROKER: usize = 32;

/// How a committed block stands against the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A `NONE` response delivered it, in this frame.
    Delivered { frame: u64 },
    /// The capture should hold its delivery and does not (`pid_block_not_delivered`).
    NotDelivered,
    /// Committed outside the time the capture watched its broker: not expected in it.
    OutsideCapture,
    /// From a snapshot: the state at its offset, not a grant.
    Snapshot,
}

crate::names::closed_set! {
    /// The report's names of [`Delivery`]s.
    pub enum DeliveryName {
        Delivered = "delivered",
        NotDelivered = "not_delivered",
        OutsideCapture = "outside_capture",
        Snapshot = "snapshot",
    }
}

impl Delivery {
    /// The report's name for it.
    pub fn name(self) -> DeliveryName {
        match self {
            Self::Delivered { .. } => DeliveryName::Delivered,
            Self::NotDelivered => DeliveryName::NotDelivered,
            Self::OutsideCapture => DeliveryName::OutsideCapture,
            Self::Snapshot => DeliveryName::Snapshot,
        }
    }
}

/// Counts of the comparison, for the report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareCounts {
    /// Blocks delivered on the wire, and of them those whose record was found.
    pub wire_blocks: u64,
    pub matched: u64,
    pub not_committed: u64,
    pub mismatched: u64,
    /// Delivered at a time the log does not cover: neither found nor missed.
    pub outside_log: u64,
    pub not_delivered: u64,
    pub outside_capture: u64,
}

/// The log, compared; what the report shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAnalysis {
    pub log: MetadataLog,
    /// Per [`MetadataLog::blocks`], in the same order.
    pub deliveries: Vec<Delivery>,
    /// Per [`MetadataLog::blocks`]: the ids between the highest block before it and its
    /// own start that no record of the logs read commits (`first..=last`).
    pub missing_before: Vec<Option<(i64, i64)>>,
    pub counts: CompareCounts,
    pub clock_skew_ms: i64,
    /// Whether a capture was compared at all (without one, every block is
    /// [`Delivery::OutsideCapture`]).
    pub compared: bool,
}

/// A request of a broker that got no block: when, where, and how it ended.
#[derive(Debug, Clone)]
struct Failed {
    at_ms: i64,
    frame: u64,
    broker_epoch: Option<i64>,
    status: String,
}

/// When the capture shows a broker asking: its first and last request.
#[derive(Debug, Clone, Default)]
struct Watched {
    first_ms: i64,
    last_ms: i64,
    failed: VecDeque<Failed>,
}

/// The comparison as the capture is read.
#[derive(Debug)]
pub struct Compare {
    log: MetadataLog,
    skew_ms: i64,
    /// Indexes into `log.blocks` by the block's end, snapshot blocks left out.
    by_next: BTreeMap<i64, Vec<usize>>,
    deliveries: Vec<Option<u64>>,
    /// Times the log's segments cover, unix ms (batch max timestamps), widened by the skew.
    covered_ms: Option<(i64, i64)>,
    brokers: BTreeMap<i32, Watched>,
    counts: CompareCounts,
    exchanges: u64,
    /// The captures' first and last packet, unix ms: a block committed within the skew of
    /// either end may have been delivered outside them.
    capture_ms: Option<(i64, i64)>,
}

fn ms_of(t: Timestamp) -> i64 {
    i64::try_from(t.as_nanos().div_euclid(1_000_000)).unwrap_or(i64::MAX)
}

/// A time in unix milliseconds as a capture timestamp (milliseconds carried as micro).
pub fn timestamp_of_ms(ms: i64) -> Timestamp {
    Timestamp {
        secs: ms.div_euclid(1000),
        nanos: u32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
        nano: false,
    }
}

impl Compare {
    pub fn new(log: MetadataLog, clock_skew_ms: i64) -> Self {
        let mut by_next: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
        for (idx, b) in log.blocks.iter().enumerate() {
            if !b.from_snapshot {
                by_next.entry(b.next_producer_id).or_default().push(idx);
            }
        }
        let segments = log
            .files
            .iter()
            .filter(|f| f.kind == crate::metadata_log::FileKind::Segment);
        let first = segments.clone().filter_map(|f| f.first_time_ms).min();
        let last = segments.filter_map(|f| f.last_time_ms).max();
        let covered_ms = first.zip(last).map(|(first, last)| {
            (
                first.saturating_sub(clock_skew_ms),
                last.saturating_add(clock_skew_ms),
            )
        });
        Self {
            deliveries: vec![None; log.blocks.len()],
            log,
            skew_ms: clock_skew_ms,
            by_next,
            covered_ms,
            brokers: BTreeMap::new(),
            counts: CompareCounts::default(),
            exchanges: 0,
            capture_ms: None,
        }
    }

    /// The captures' first and last packet times.
    pub fn capture_span(&mut self, first: Timestamp, last: Timestamp) {
        self.capture_ms = Some((ms_of(first), ms_of(last)));
    }

    /// One exchange, and the block it granted if any.
    pub fn exchange(&mut self, ex: &Exchange, block: Option<&Block>, found: &mut Vec<Finding>) {
        self.exchanges += 1;
        let Some(broker_id) = ex.request.broker_id else {
            return;
        };
        let at_ms = ms_of(ex.request_meta.timestamp);
        if !self.brokers.contains_key(&broker_id) && self.brokers.len() >= MAX_BROKERS {
            return;
        }
        let watched = self.brokers.entry(broker_id).or_insert(Watched {
            first_ms: at_ms,
            last_ms: at_ms,
            failed: VecDeque::new(),
        });
        watched.first_ms = watched.first_ms.min(at_ms);
        watched.last_ms = watched.last_ms.max(at_ms);
        match block {
            Some(block) => self.grant(block, found),
            None => {
                let status = match &ex.outcome {
                    Outcome::Complete { response, .. } => match response.error_code {
                        Some(code) => code.name(),
                        None => "undecoded".to_owned(),
                    },
                    other => other.status().as_str().to_owned(),
                };
                if watched.failed.len() >= MAX_FAILED_PER_BROKER {
                    watched.failed.pop_front();
                }
                watched.failed.push_back(Failed {
                    at_ms,
                    frame: ex.request_meta.frame,
                    broker_epoch: ex.request.broker_epoch,
                    status,
                });
            }
        }
    }

    /// A block delivered on the wire, against the record with its end.
    fn grant(&mut self, block: &Block, found: &mut Vec<Finding>) {
        self.counts.wire_blocks += 1;
        let end = block.start.saturating_add(i64::from(block.len));
        let at_ms = ms_of(block.timestamp);
        let candidates = self
            .by_next
            .get(&end)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let same_broker = |b: &CommittedBlock| {
            (b.broker_id, b.broker_epoch) == (block.broker_id, block.broker_epoch)
        };
        let chosen = candidates
            .iter()
            .copied()
            .find(|&idx| self.log.blocks.get(idx).is_some_and(same_broker))
            .or_else(|| candidates.first().copied());
        let Some((idx, record)) = chosen.and_then(|idx| Some((idx, self.log.blocks.get(idx)?)))
        else {
            let covered = self
                .covered_ms
                .is_some_and(|(from, to)| (from..=to).contains(&at_ms));
            if !covered {
                self.counts.outside_log += 1;
                return;
            }
            self.counts.not_committed += 1;
            // the segments' offsets (a snapshot's count within the snapshot)
            let offsets = |f: fn(&crate::metadata_log::LogFile) -> Option<i64>| {
                self.log
                    .files
                    .iter()
                    .filter(|file| file.kind == crate::metadata_log::FileKind::Segment)
                    .filter_map(f)
            };
            let what = Observation::PidBlockNotCommitted(obs::PidBlockNotCommitted {
                frame: block.response_frame,
                broker_id: block.broker_id,
                broker_epoch: block.broker_epoch,
                start: block.start,
                len: block.len,
                log_first_offset: offsets(|f| f.first_offset).min().unwrap_or(0),
                log_last_offset: offsets(|f| f.last_offset).max().unwrap_or(0),
            });
            found.push(finding_at_block(what, block));
            return;
        };
        if let Some(slot) = self.deliveries.get_mut(idx) {
            slot.get_or_insert(block.response_frame);
        }
        let late = record.place.time_ms.saturating_sub(at_ms);
        let committed_late_ms = (late > self.skew_ms).then_some(late);
        if same_broker(record) && committed_late_ms.is_none() {
            self.counts.matched += 1;
            return;
        }
        self.counts.mismatched += 1;
        let what = Observation::PidBlockMismatch(obs::PidBlockMismatch {
            frame: block.response_frame,
            start: block.start,
            len: block.len,
            broker_id: block.broker_id,
            broker_epoch: block.broker_epoch,
            offset: record.place.offset,
            log_broker_id: record.broker_id,
            log_broker_epoch: record.broker_epoch,
            committed_late_ms,
        });
        found.push(finding_at_block(what, block));
    }

    /// Committed blocks never delivered, and the log's own regressions and gaps.
    pub fn finish(mut self, found: &mut Vec<Finding>) -> LogAnalysis {
        let compared = self.exchanges > 0;
        let mut deliveries = Vec::with_capacity(self.log.blocks.len());
        for (idx, b) in self.log.blocks.iter().enumerate() {
            let delivery = match self.deliveries.get(idx).copied().flatten() {
                _ if b.from_snapshot => Delivery::Snapshot,
                Some(frame) => Delivery::Delivered { frame },
                None if compared && self.expected(b) => {
                    found.push(self.not_delivered(b));
                    Delivery::NotDelivered
                }
                None => Delivery::OutsideCapture,
            };
            match delivery {
                Delivery::NotDelivered => self.counts.not_delivered += 1,
                Delivery::OutsideCapture => self.counts.outside_capture += 1,
                _ => {}
            }
            deliveries.push(delivery);
        }
        let missing_before = sequence_findings(&self.log.blocks, found);
        LogAnalysis {
            log: self.log,
            deliveries,
            missing_before,
            counts: self.counts,
            clock_skew_ms: self.skew_ms,
            compared,
        }
    }

    /// Whether the capture should hold the delivery of `b`: committed while it shows
    /// the broker asking (from its first request to its last, widened by the skew), and
    /// more than the skew inside the captures' time (a block committed just before the
    /// first packet was delivered before it too).
    fn expected(&self, b: &CommittedBlock) -> bool {
        let (capture_from, capture_to) = self.capture_ms.unwrap_or((i64::MIN, i64::MAX));
        self.brokers.get(&b.broker_id).is_some_and(|w| {
            let from = w
                .first_ms
                .saturating_sub(self.skew_ms)
                .max(capture_from.saturating_add(self.skew_ms));
            let to = w
                .last_ms
                .saturating_add(self.skew_ms)
                .min(capture_to.saturating_sub(self.skew_ms));
            (from..=to).contains(&b.place.time_ms)
        })
    }

    fn not_delivered(&self, b: &CommittedBlock) -> Finding {
        // the broker's last failed request (of this broker epoch, when it says) before
        // the commit, as the clocks allow
        let request = self.brokers.get(&b.broker_id).and_then(|w| {
            w.failed.iter().rev().find(|f| {
                f.at_ms <= b.place.time_ms.saturating_add(self.skew_ms)
                    && f.broker_epoch.is_none_or(|e| e == b.broker_epoch)
            })
        });
        let what = Observation::PidBlockNotDelivered(obs::PidBlockNotDelivered {
            offset: b.place.offset,
            time_ms: b.place.time_ms,
            broker_id: b.broker_id,
            broker_epoch: b.broker_epoch,
            start: b.start,
            next_producer_id: b.next_producer_id,
            request: request.map(|f| (f.frame, f.status.as_str())),
        });
        finding_at_record(what, b)
    }
}

/// A finding about a record: at its batch's time, in no packet.
fn finding_at_record(what: Observation<'_>, b: &CommittedBlock) -> Finding {
    let at = (Some(b.broker_id), None, timestamp_of_ms(b.place.time_ms));
    Finding::new(what, at, Vec::new())
}

fn finding_at_block(what: Observation<'_>, block: &Block) -> Finding {
    let at = (
        Some(block.broker_id),
        Some(block.connection),
        block.timestamp,
    );
    Finding::new(what, at, vec![block.request_frame, block.response_frame])
}

/// Overlaps and gaps among the committed records, in offset order, each against the
/// highest next producer id before it (a snapshot's record starts the sequence; it is no
/// grant of its own). Every block is [`PRODUCER_ID_BLOCK_SIZE`] ids: one that starts
/// below the highest end before it commits ids twice, one that starts above it leaves
/// the ids between without a record in the logs read. Returns, per block, those ids.
fn sequence_findings(
    blocks: &[CommittedBlock],
    found: &mut Vec<Finding>,
) -> Vec<Option<(i64, i64)>> {
    let mut missing = vec![None; blocks.len()];
    let mut high: Option<&CommittedBlock> = None;
    for (i, b) in blocks.iter().enumerate() {
        let Some(prev) = high else {
            high = Some(b);
            continue;
        };
        if b.next_producer_id > prev.next_producer_id {
            high = Some(b);
        }
        if b.from_snapshot {
            continue;
        }
        let start = b.next_producer_id.saturating_sub(PRODUCER_ID_BLOCK_SIZE);
        let what = if start < prev.next_producer_id {
            Observation::PidCommittedOverlap(obs::PidCommittedOverlap {
                offset: b.place.offset,
                broker_id: b.broker_id,
                start,
                next_producer_id: b.next_producer_id,
                previous_offset: prev.place.offset,
                previous_next_producer_id: prev.next_producer_id,
            })
        } else if start > prev.next_producer_id {
            let ids = (prev.next_producer_id, start - 1);
            if let Some(slot) = missing.get_mut(i) {
                *slot = Some(ids);
            }
            Observation::PidCommittedGap(obs::PidCommittedGap {
                offset: b.place.offset,
                broker_id: b.broker_id,
                next_producer_id: b.next_producer_id,
                previous_offset: prev.place.offset,
                previous_next_producer_id: prev.next_producer_id,
                usual_len: PRODUCER_ID_BLOCK_SIZE,
                missing_start: ids.0,
                missing_end: ids.1,
            })
        } else {
            continue;
        };
        found.push(finding_at_record(what, b));
    }
    missing
}

/// What the log reader could not read, as diagnostics.
pub fn log_problems(log: &MetadataLog, diags: &mut Diagnostics) {
    for problem in &log.problems {
        let what = match problem {
            // fatal before the analysis (see `crate::run`)
            LogProblem::NoLogFiles { .. } => continue,
            LogProblem::Truncated {
                path,
                at,
                needed,
                len,
            } => Observation::MetadataLogTruncated(obs::MetadataLogTruncated {
                path,
                at: *at,
                needed: *needed,
                len: *len,
            }),
            LogProblem::Corrupt { path, at, reason } => {
                Observation::MetadataLogCorrupt(obs::MetadataLogCorrupt {
                    path,
                    at: *at,
                    reason,
                })
            }
            LogProblem::Limit { path, at, reason } => {
                Observation::MetadataLogLimit(obs::MetadataLogLimit {
                    path,
                    at: *at,
                    reason,
                })
            }
            LogProblem::Divergent {
                offset,
                kept,
                dropped,
            } => Observation::MetadataLogDivergent(obs::MetadataLogDivergent {
                offset: *offset,
                kept,
                dropped,
            }),
        };
        diags.add(None, crate::diag::At::Nowhere, what);
    }
}

#[cfg(test)]
mod tests;
