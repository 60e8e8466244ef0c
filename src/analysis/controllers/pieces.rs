//! The controller timeline as evidence with its bounds: who is proven to have led the
//! quorum from when to when, and where nothing tells, pieces said as unknown.
//!
//! A controller is proven to lead epoch E at a moment when it acted as E's leader then:
//! it sent a BeginQuorumEpoch or EndQuorumEpoch request (the capture), it answered
//! AllocateProducerIds as leader (the capture), or it appended a batch of E to the
//! metadata log (`--metadata-log`: the LeaderChange record that opens E, and the NoOp
//! records an active controller appends every half second). Raft has one leader an epoch
//! and a leader never leads its epoch again once it stops, so between two proofs of one
//! epoch its leader led throughout: a piece runs from the first proof to the last. Before
//! the first and after the last nothing is proven: a leader may have died right after its
//! last message, so a piece never outlives its evidence; the time to the next piece is
//! unknown. A voter's word (a Vote response naming a leader) names an epoch's leader but
//! proves nothing of when it led.
//!
//! Answers of AllocateProducerIds in no epoch the capture shows (no quorum message came
//! first) make a piece of their own, of epoch unknown, from a run of one controller's
//! answers with no other's between. Pieces never overlap: a later one starts where the
//! one before ends, where clocks of the log and the capture disagree a little.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use super::{Evidence, Leaders, Proven};
use crate::metadata_log::MetadataLog;
use crate::timestamp::Timestamp;

/// Where a bound of a piece comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A message of the capture: its frame and what it is (`begin_quorum_epoch`, ...).
    Capture {
        frame: u64,
        how: Evidence,
    },
    /// A batch of the metadata log: the LeaderChange record's (`leader_change`) or
    /// another of the epoch's (`batch`).
    MetadataLog {
        how: Evidence,
    },
    /// The capture's first or last packet: nothing before or after it is known.
    CaptureStart,
    CaptureEnd,
}

crate::names::closed_set! {
    /// The report's names of [`Source`]s.
    pub enum SourceName {
        Capture = "capture",
        MetadataLog = "metadata_log",
        CaptureStart = "capture_start",
        CaptureEnd = "capture_end",
    }
}

impl Source {
    /// The name in the report.
    pub fn name(self) -> SourceName {
        match self {
            Self::Capture { .. } => SourceName::Capture,
            Self::MetadataLog { .. } => SourceName::MetadataLog,
            Self::CaptureStart => SourceName::CaptureStart,
            Self::CaptureEnd => SourceName::CaptureEnd,
        }
    }
}

crate::names::closed_set! {
    /// Whether a piece of the timeline was led as proven, or who led is unknown.
    pub enum PieceState {
        Led = "led",
        Unknown = "unknown",
    }
}

/// One end of a piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub at: Timestamp,
    pub source: Source,
}

/// Who led in a piece: a controller's id, or its address where no message named it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Led {
    pub controller_id: Option<i32>,
    pub address: Option<SocketAddr>,
    pub epoch: Option<i32>,
}

/// A stretch of time: led by one controller as proven, or unknown (`led` `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub led: Option<Led>,
    pub from: Bound,
    pub to: Bound,
}

/// Pieces kept: as many as spans.
const MAX_PIECES: usize = 2 * super::MAX_SPANS + 1;

/// The pieces in time order: each led one, unknown between them, and unknown from the
/// capture's first packet to the first and from the last to its last packet (`range`;
/// `None` without a capture). Led pieces outside the range are kept: the metadata log
/// may prove who led before the capture began.
pub fn pieces(
    leaders: &Leaders,
    log: Option<&MetadataLog>,
    range: Option<(Timestamp, Timestamp)>,
) -> Vec<Piece> {
    let mut led = epoch_pieces(leaders, log);
    led.extend(leaders.unplaced.iter().map(|run| Piece {
        led: Some(Led {
            controller_id: run.controller_id,
            address: Some(run.server),
            epoch: None,
        }),
        from: capture_bound(run.proven.first),
        to: capture_bound(run.proven.last),
    }));
    led.sort_by_key(|p| (p.from.at, p.led.and_then(|l| l.epoch).is_none()));
    let mut out: Vec<Piece> = Vec::new();
    let start = range.map(|(start, _)| Bound {
        at: start,
        source: Source::CaptureStart,
    });
    // where the last piece ends: unknown from there to the next led one
    let mut cursor: Option<Bound> = None;
    for mut piece in led {
        match cursor {
            Some(c) if piece.to.at < c.at => continue, // two claims of one moment
            Some(c) if piece.from.at < c.at => piece.from = c,
            Some(c) if piece.from.at > c.at => out.push(unknown(c, piece.from)),
            Some(_) => {}
            None => {
                if let Some(s) = start.filter(|s| s.at < piece.from.at) {
                    out.push(unknown(s, piece.from));
                }
            }
        }
        cursor = Some(piece.to);
        out.push(piece);
    }
    let end = range.map(|(_, end)| Bound {
        at: end,
        source: Source::CaptureEnd,
    });
    match (cursor.or(start), end) {
        (Some(c), Some(end)) if c.at < end.at => out.push(unknown(c, end)),
        _ => {}
    }
    out.truncate(MAX_PIECES);
    out
}

fn unknown(from: Bound, to: Bound) -> Piece {
    Piece {
        led: None,
        from,
        to,
    }
}

fn capture_bound((meta, how): (crate::pairing::MessageMeta, Evidence)) -> Bound {
    Bound {
        at: meta.timestamp,
        source: Source::Capture {
            frame: meta.frame,
            how,
        },
    }
}

/// An epoch's leader, its earliest and latest proof, and the first message of a later epoch.
type EpochEvidence = (i32, Option<(Bound, Bound)>, Option<Timestamp>);

/// A piece per epoch whose leader is proven to have led at some moment: the capture's
/// proofs and the metadata log's batches together.
fn epoch_pieces(leaders: &Leaders, log: Option<&MetadataLog>) -> Vec<Piece> {
    let mut by_epoch: BTreeMap<i32, EpochEvidence> = BTreeMap::new();
    for span in &leaders.spans {
        let proven = span
            .proven
            .map(|Proven { first, last }| (capture_bound(first), capture_bound(last)));
        let ended = span.to.map(|m| m.timestamp);
        by_epoch.insert(span.epoch, (span.leader_id, proven, ended));
    }
    if let Some(log) = log {
        // each epoch's LeaderChange times, once: a log may hold a million records
        let mut change_times: BTreeMap<i32, BTreeSet<i64>> = BTreeMap::new();
        for change in &log.leader_changes {
            let epoch = change.place.leader_epoch;
            change_times
                .entry(epoch)
                .or_default()
                .insert(change.place.time_ms);
            let entry = by_epoch
                .entry(epoch)
                .or_insert((change.leader_id, None, None));
            // the leader's own record outweighs a voter's word
            entry.0 = change.leader_id;
        }
        for (epoch, batches) in &log.epochs {
            let Some(entry) = by_epoch.get_mut(epoch) else {
                continue; // an epoch whose leader the log does not name
            };
            let opens = change_times
                .get(epoch)
                .is_some_and(|times| times.contains(&batches.first_ms));
            let first = log_bound(
                batches.first_ms,
                if opens {
                    Evidence::LeaderChange
                } else {
                    Evidence::Batch
                },
            );
            let last = log_bound(batches.last_ms, Evidence::Batch);
            entry.1 = Some(match entry.1 {
                None => (first, last),
                Some((a, b)) => (
                    if first.at < a.at { first } else { a },
                    if last.at > b.at { last } else { b },
                ),
            });
        }
    }
    by_epoch
        .into_iter()
        .filter_map(|(epoch, (leader, proven, ended))| {
            let (from, mut to) = proven?;
            // never past the first message of a later epoch
            if let Some(ended) = ended.filter(|e| *e < to.at) {
                to = Bound {
                    at: ended.max(from.at),
                    ..to
                };
            }
            Some(Piece {
                led: Some(Led {
                    controller_id: Some(leader),
                    address: None,
                    epoch: Some(epoch),
                }),
                from,
                to,
            })
        })
        .collect()
}

fn log_bound(ms: i64, how: Evidence) -> Bound {
    Bound {
        at: Timestamp {
            secs: ms.div_euclid(1000),
            nanos: (ms.rem_euclid(1000) * 1_000_000) as u32,
            nano: false,
        },
        source: Source::MetadataLog { how },
    }
}

#[cfg(test)]
mod tests;
