//! One segment or snapshot file, streamed a batch at a time: bytes -> [`Item`]s handed to
//! the merger, and the file's [`LogFile`] summary. A batch's records are handed on only
//! when the whole batch reads; the first batch that does not (cut, corrupt, over a limit,
//! a record that does not decode) stops the file as a [`LogProblem`], keeping what came
//! before it.

use std::hash::{Hash, Hasher};
use std::io::{self, Read};

use super::batch::{self, Batch, Next};
use super::codec::{self, CodecError};
use super::merge::{Item, Key, Merger, What};
use super::{metadata, record, FileKind, Limits, LogFile, LogProblem, Reason, RecordPlace};

/// How one file is to be read.
pub struct Source<'a> {
    pub path: &'a str,
    pub kind: FileKind,
    /// The file's length.
    pub len: u64,
    /// A snapshot's id offset (from its name): its records reflect the log up to this - 1.
    pub snapshot_end: Option<i64>,
}

enum BatchError {
    Corrupt(String),
    Limit(String),
}

/// Reads `r` to its end or its first problem.
pub fn read(
    r: &mut dyn Read,
    src: &Source<'_>,
    limits: &Limits,
    merger: &mut Merger,
) -> io::Result<(LogFile, Option<LogProblem>)> {
    let file_idx = merger.add_file(src.path);
    let mut file = LogFile {
        path: src.path.to_string(),
        kind: src.kind,
        len: src.len,
        read_len: 0,
        batches: 0,
        records: 0,
        first_offset: None,
        last_offset: None,
        first_time_ms: None,
        last_time_ms: None,
        complete: false,
    };
    let path = src.path.to_string();
    let at = |file: &LogFile| file.read_len;
    let problem = loop {
        let left = src.len.saturating_sub(file.read_len);
        match batch::next(r, left, limits)? {
            Next::End | Next::ZeroTail => break None,
            Next::Truncated { needed, len } => {
                break Some(LogProblem::Truncated {
                    path,
                    at: at(&file),
                    needed,
                    len,
                })
            }
            Next::Corrupt(reason) => {
                break Some(LogProblem::Corrupt {
                    path,
                    at: at(&file),
                    reason,
                })
            }
            Next::Limit(reason) => {
                break Some(LogProblem::Limit {
                    path,
                    at: at(&file),
                    reason,
                })
            }
            Next::Batch(b) => match items(b, src, file_idx, limits) {
                Ok((header, size, items)) => {
                    file.read_len = file.read_len.saturating_add(size);
                    file.batches += 1;
                    file.records = file.records.saturating_add(items.len() as u64);
                    file.first_offset.get_or_insert(header.base_offset);
                    file.last_offset = Some(header.last_offset());
                    file.first_time_ms.get_or_insert(header.max_timestamp);
                    file.last_time_ms = Some(header.max_timestamp);
                    if src.kind == FileKind::Segment {
                        merger.batch(header.leader_epoch, header.max_timestamp);
                    }
                    for item in items {
                        merger.push(item);
                    }
                }
                Err(BatchError::Corrupt(reason)) => {
                    break Some(LogProblem::Corrupt {
                        path,
                        at: at(&file),
                        reason,
                    })
                }
                Err(BatchError::Limit(reason)) => {
                    break Some(LogProblem::Limit {
                        path,
                        at: at(&file),
                        reason,
                    })
                }
            },
        }
    };
    file.complete = problem.is_none();
    Ok((file, problem))
}

/// A whole batch's records as items, or why not.
fn items(
    b: Batch,
    src: &Source<'_>,
    file_idx: usize,
    limits: &Limits,
) -> Result<(batch::Header, u64, Vec<Item>), BatchError> {
    let h = b.header;
    let bytes = codec::decompress(h.compression(), b.records, limits.max_inflated_len).map_err(
        |e| match e {
            CodecError::Corrupt(r) => BatchError::Corrupt(r),
            CodecError::Limit(r) => BatchError::Limit(r),
        },
    )?;
    let corrupt = |offset: i64, r: Reason| BatchError::Corrupt(format!("offset {offset}: {r}"));
    let records = record::parse(&bytes, h.records_count).map_err(|r| corrupt(h.base_offset, r))?;
    let mut out = Vec::with_capacity(records.len());
    for rec in records {
        let offset = h.base_offset.saturating_add(i64::from(rec.offset_delta));
        let what = if h.is_control() {
            let (ty, leader) =
                metadata::control(rec.key, rec.value).map_err(|r| corrupt(offset, r))?;
            What::Control { ty, leader }
        } else {
            let value = rec
                .value
                .ok_or_else(|| corrupt(offset, "a metadata record with a null value".into()))?;
            let (api_key, decoded) = metadata::metadata(value).map_err(|r| corrupt(offset, r))?;
            What::Metadata { api_key, decoded }
        };
        let key = match (&src.kind, src.snapshot_end) {
            (FileKind::Snapshot, end) => Key {
                offset: end.map_or(offset, |e| e.saturating_sub(1)),
                in_snapshot: true,
                inner: offset,
            },
            (FileKind::Segment, _) => Key {
                offset,
                in_snapshot: false,
                inner: 0,
            },
        };
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (h.is_control(), rec.key, rec.value).hash(&mut hasher);
        out.push(Item {
            key,
            fingerprint: hasher.finish(),
            place: RecordPlace {
                offset: key.offset,
                time_ms: h.max_timestamp,
                leader_epoch: h.leader_epoch,
                file_idx,
            },
            what,
        });
    }
    Ok((h, b.size, out))
}
