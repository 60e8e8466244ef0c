//! A KRaft controller's `__cluster_metadata` log, read natively: segment files (and the
//! latest `.checkpoint` snapshot) -> record batches -> metadata records -> the producer-id
//! blocks the log commits, the brokers it registers, and counts of everything else.
//!
//! Its own input, beside the captures: it takes paths, not packets, and imports only the
//! leaves. What it could not read (a corrupt or cut batch, a limit hit) is a
//! [`LogProblem`] for the report, and reading that file stops there; only a path that
//! cannot be opened at all is an [`Error`].

mod batch;
mod codec;
mod dir;
mod file;
mod first_batch;
mod merge;
mod metadata;
mod record;

/// Why a piece of a log did not read: one sentence with the numbers, for a
/// [`LogProblem::Corrupt`]. The bytes are read by the Kafka stage's own reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason(String);

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for Reason {
    fn from(text: String) -> Self {
        Self(text)
    }
}

impl From<&str> for Reason {
    fn from(text: &str) -> Self {
        Self(text.to_owned())
    }
}

impl From<crate::kafka::reader::DecodeError> for Reason {
    fn from(e: crate::kafka::reader::DecodeError) -> Self {
        Self(e.to_string())
    }
}

pub use dir::METADATA_DIR;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::{BufReader, Seek};

use crate::error::Error;

/// Bounds on what one batch may make us hold; a batch over them is a [`LogProblem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest batch read from a file (its length field), in bytes.
    pub max_batch_len: usize,
    /// Largest batch after decompression, in bytes.
    pub max_inflated_len: usize,
    /// Committed blocks and registrations kept; past it they are counted, not kept.
    pub max_kept: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_batch_len: 16 << 20,
            max_inflated_len: 64 << 20,
            max_kept: 1 << 20,
        }
    }
}

/// What the log files given hold, merged by offset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataLog {
    /// Every file read, in the order read (per path: the snapshot, then segments by offset).
    pub files: Vec<LogFile>,
    /// Metadata records by record type (`ProducerIdsRecord`, ..., `Unknown(n)`), over
    /// every record read (a record several logs hold counts once).
    pub records_by_type: BTreeMap<String, u64>,
    /// Control records by type (`LeaderChange`, `SnapshotHeader`, ...).
    pub control_records: BTreeMap<String, u64>,
    /// ProducerIdsRecords in offset order.
    pub blocks: Vec<CommittedBlock>,
    /// RegisterBrokerRecords in offset order.
    pub registrations: Vec<Registration>,
    /// UnregisterBrokerRecords in offset order: (broker id, where).
    pub unregistrations: Vec<(i32, RecordPlace)>,
    /// LeaderChange control records in offset order.
    pub leader_changes: Vec<LeaderChange>,
    /// By leader epoch, the first and last batch the segments hold: the epoch's leader
    /// appended them, so it led at their times (an active controller appends a NoOp
    /// record every half second). At most [`MAX_EPOCHS`], the latest kept.
    pub epochs: BTreeMap<i32, EpochBatches>,
    /// Blocks and registrations past [`Limits::max_kept`] (and leader changes past as many
    /// again): counted, not kept.
    pub not_kept: u64,
    pub problems: Vec<LogProblem>,
}

impl MetadataLog {
    /// The controller the log says led from `from_ms` to `to_ms`: the leader of the
    /// latest LeaderChange record at or before both, where the log's batches reach
    /// `to_ms` (a log that ends before knows nothing of a later election).
    pub fn leader_between(&self, from_ms: i64, to_ms: i64) -> Option<i32> {
        let reaches = self.epochs.values().map(|e| e.last_ms).max()? >= to_ms;
        let leader_at = |t: i64| {
            self.leader_changes
                .iter()
                .rev()
                .find(|c| c.place.time_ms <= t)
        };
        let (from, to) = (leader_at(from_ms)?, leader_at(to_ms)?);
        (reaches && from == to).then_some(from.leader_id)
    }
}

crate::names::closed_set! {
    /// What a file of the log is.
    pub enum FileKind {
        Segment = "segment",
        Snapshot = "snapshot",
    }
}

/// One file read, and how far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub path: String,
    pub kind: FileKind,
    /// The file's size.
    pub len: u64,
    /// Bytes read as whole, valid batches. Less than `len` with `complete` true when the
    /// file ends in zero bytes (space preallocated, or a segment cut by a crash: Kafka's
    /// recovery truncates them).
    pub read_len: u64,
    pub batches: u64,
    pub records: u64,
    /// The first batch's base offset and the last's last offset (inside a snapshot: its own
    /// offsets, from 0; its records' places carry the log offset the snapshot is at).
    pub first_offset: Option<i64>,
    pub last_offset: Option<i64>,
    /// Batches' max timestamps, unix milliseconds.
    pub first_time_ms: Option<i64>,
    pub last_time_ms: Option<i64>,
    /// False when a problem stopped the reading of this file before its end.
    pub complete: bool,
}

/// Where a record sits: its offset, its batch's max timestamp and leader epoch, the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordPlace {
    pub offset: i64,
    /// The batch's max timestamp, unix milliseconds.
    pub time_ms: i64,
    /// The batch's partition leader epoch: the controller epoch that appended it.
    pub leader_epoch: i32,
    /// Index into [`MetadataLog::files`].
    pub file_idx: usize,
}

/// The ids of every block a KRaft controller commits: Kafka's
/// `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`. `ProducerIdControlManager.generateNextProducerId`
/// (3.x and 4.x) grants `[next, next + 1000)` and writes a `ProducerIdsRecord` holding
/// only the broker, its epoch and `NextProducerId = next + 1000`; `replay` takes it back
/// the same way. So a record's block is `[NextProducerId - 1000, NextProducerId)`, whatever
/// records the files read hold before it.
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// A ProducerIdsRecord (metadata record type 15): the block `[start, next_producer_id)`
/// granted to `broker_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedBlock {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The record's `NextProducerId`: one past the block's last id.
    pub next_producer_id: i64,
    /// The block's first id: `NextProducerId` less [`PRODUCER_ID_BLOCK_SIZE`]. None
    /// only for a record whose `NextProducerId` is below that size (no block of Kafka's).
    pub start: Option<i64>,
    pub place: RecordPlace,
    /// From a snapshot: the state at its offset, not a grant.
    pub from_snapshot: bool,
}

/// A listener a broker registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: i16,
}

/// A RegisterBrokerRecord (metadata record type 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub endpoints: Vec<Endpoint>,
    pub place: RecordPlace,
}

/// Leader epochs whose batches are remembered: beyond any quorum's history we meet.
pub const MAX_EPOCHS: usize = 4096;

/// One leader epoch's batches in the segments read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochBatches {
    /// The earliest and latest batch max timestamps, unix milliseconds.
    pub first_ms: i64,
    pub last_ms: i64,
    pub batches: u64,
}

/// A LeaderChange control record: `leader_id` leads from the batch's leader epoch, of
/// the quorum of `voters`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderChange {
    pub leader_id: i32,
    pub voters: Vec<i32>,
    pub place: RecordPlace,
}

/// Why reading a file stopped, or what in it was passed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogProblem {
    /// The file ends inside a batch: `len` bytes of a batch that needs `needed`.
    Truncated {
        path: String,
        at: u64,
        needed: u64,
        len: u64,
    },
    /// A batch that is not what Kafka writes: bad magic, CRC mismatch, bad record framing.
    Corrupt {
        path: String,
        at: u64,
        reason: String,
    },
    /// A batch over a [`Limits`] bound.
    Limit {
        path: String,
        at: u64,
        reason: String,
    },
    /// Two logs hold different records at one offset; the higher leader epoch's is kept.
    Divergent {
        offset: i64,
        kept: String,
        dropped: String,
    },
    /// A directory with neither a `.log` segment nor a `.checkpoint` snapshot in it.
    NoLogFiles { path: String },
}

/// Reads every path (a `__cluster_metadata-0` directory or a single segment or snapshot
/// file) and merges what they hold by offset.
///
/// A snapshot's records sit at the offset before its id (the last the snapshot holds).
/// With several paths every record's place and fingerprint is held until the end, to
/// count a record several logs hold once.
pub fn read(paths: &[String], limits: Limits) -> Result<MetadataLog, Error> {
    let mut log = MetadataLog::default();
    let mut merger = merge::Merger::new(paths.len() > 1, limits.max_kept);
    for path in paths {
        let files = match dir::files(path)? {
            Ok(files) => files,
            Err(problem) => {
                log.problems.push(problem);
                continue;
            }
        };
        for to_read in files {
            let name = to_read.path.display().to_string();
            let open = |source| Error::Open {
                path: name.clone(),
                source,
            };
            let mut f = std::fs::File::open(&to_read.path).map_err(open)?;
            let len = f.metadata().map_err(open)?.len();
            let read_fail = |source| Error::Read {
                path: name.clone(),
                source,
            };
            if let Err(reason) = first_batch::check(&mut f, len).map_err(read_fail)? {
                return Err(Error::NotACapture {
                    path: name.clone(),
                    reason,
                });
            }
            f.seek(std::io::SeekFrom::Start(0)).map_err(read_fail)?;
            let src = file::Source {
                path: &name,
                kind: to_read.kind,
                len,
                snapshot_end: to_read.snapshot_end,
            };
            let mut r = BufReader::new(f);
            let (read, problem) =
                file::read(&mut r, &src, &limits, &mut merger).map_err(|source| Error::Read {
                    path: name.clone(),
                    source,
                })?;
            log.files.push(read);
            log.problems.extend(problem);
        }
    }
    Ok(finish(log, merger))
}

/// One segment (or, named `*.checkpoint`, snapshot) file's bytes, read as [`read`] reads a
/// file: for fuzzing and tests, no file needed.
pub fn read_bytes(name: &str, bytes: &[u8], limits: Limits) -> MetadataLog {
    let mut log = MetadataLog::default();
    let mut merger = merge::Merger::new(false, limits.max_kept);
    let to_read = dir::one_file(std::path::Path::new(name));
    let src = file::Source {
        path: name,
        kind: to_read.kind,
        len: bytes.len() as u64,
        snapshot_end: to_read.snapshot_end,
    };
    let mut r = bytes;
    // a slice's reads do not fail
    if let Ok((read, problem)) = file::read(&mut r, &src, &limits, &mut merger) {
        log.files.push(read);
        log.problems.extend(problem);
    }
    finish(log, merger)
}

fn finish(mut log: MetadataLog, merger: merge::Merger) -> MetadataLog {
    merger.finish(&mut log);
    log
}
