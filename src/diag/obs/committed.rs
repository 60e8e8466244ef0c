//! What the metadata logs say, alone and beside the wire.

use std::fmt;

use crate::diag::facts::facts;
use crate::diag::Facts;

/// A metadata log file ends inside a record batch: `len` bytes of one that needs
/// `needed`, at byte `at`; the batches before it were read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetadataLogTruncated<'a> {
    pub path: &'a str,
    pub at: u64,
    pub needed: u64,
    pub len: u64,
}

impl MetadataLogTruncated<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            path,
            at,
            needed,
            len,
        } = self;
        facts![path, at, needed, len]
    }
}

impl fmt::Display for MetadataLogTruncated<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            path,
            at,
            needed,
            len,
        } = self;
        write!(
            f,
            "{path}: the metadata log ends inside a record batch at byte {at} ({len} of its {needed} bytes are there); the batches before it were read"
        )
    }
}

/// A metadata log batch that is not what Kafka writes; the file is read no further.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetadataLogCorrupt<'a> {
    pub path: &'a str,
    pub at: u64,
    pub reason: &'a str,
}

impl MetadataLogCorrupt<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { path, at, reason } = self;
        facts![path, at, reason]
    }
}

impl fmt::Display for MetadataLogCorrupt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { path, at, reason } = self;
        write!(
            f,
            "{path}: the record batch at byte {at} is corrupt ({reason}); the file is read no further"
        )
    }
}

/// A metadata log batch over a bound of the reader; the file is read no further.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetadataLogLimit<'a> {
    pub path: &'a str,
    pub at: u64,
    pub reason: &'a str,
}

impl MetadataLogLimit<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { path, at, reason } = self;
        facts![path, at, reason]
    }
}

impl fmt::Display for MetadataLogLimit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { path, at, reason } = self;
        write!(
            f,
            "{path}: the record batch at byte {at} is over a limit ({reason}); the file is read no further"
        )
    }
}

/// Two metadata logs hold different records at one offset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetadataLogDivergent<'a> {
    pub offset: i64,
    pub kept: &'a str,
    pub dropped: &'a str,
}

impl MetadataLogDivergent<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            offset,
            kept,
            dropped,
        } = self;
        facts![offset, kept, dropped]
    }
}

impl fmt::Display for MetadataLogDivergent<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            offset,
            kept,
            dropped,
        } = self;
        write!(
            f,
            "the metadata logs hold different records at offset {offset}: {kept} is kept (the higher leader epoch), {dropped} is not"
        )
    }
}

/// A block delivered on the wire (a `NONE` response) that no ProducerIdsRecord of the
/// metadata log commits, though the log covers its time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidBlockNotCommitted {
    /// The response.
    pub frame: u64,
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub start: i64,
    pub len: i32,
    /// The log's records: offsets and batch times covered.
    pub log_first_offset: i64,
    pub log_last_offset: i64,
}

impl PidBlockNotCommitted {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            broker_id,
            broker_epoch,
            start,
            len,
            log_first_offset,
            log_last_offset,
        } = self;
        facts![
            frame,
            broker_id,
            broker_epoch,
            start,
            len,
            log_first_offset,
            log_last_offset,
        ]
    }
}

impl fmt::Display for PidBlockNotCommitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            broker_id,
            broker_epoch,
            start,
            len,
            log_first_offset,
            log_last_offset,
        } = self;
        write!(
            f,
            "broker {broker_id} (epoch {broker_epoch}) was delivered {len} producer ids from {start} (frame {frame}), but no ProducerIdsRecord of the metadata log (offsets {log_first_offset} to {log_last_offset}, which cover that time) commits them: a controller answered from state it had not committed"
        )
    }
}

/// A block the metadata log commits whose delivery the capture should hold (it was
/// committed inside the capture's time, to a broker whose requests the capture holds)
/// but does not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidBlockNotDelivered<'a> {
    pub offset: i64,
    /// The record batch's max timestamp, unix milliseconds.
    pub time_ms: i64,
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The block's first id, when the record before it was read.
    pub start: Option<i64>,
    pub next_producer_id: i64,
    /// The broker's last request before the commit that got no block: its frame and
    /// how it ended (`unanswered`, `response_unknown`, or the error's name).
    pub request: Option<(u64, &'a str)>,
}

impl PidBlockNotDelivered<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            offset,
            time_ms,
            broker_id,
            broker_epoch,
            start,
            next_producer_id,
            request,
        } = self;
        let request_frame = request.map(|(frame, _)| frame);
        let request_status = request.map(|(_, status)| status);
        facts![
            offset,
            time_ms,
            broker_id,
            broker_epoch,
            start?,
            next_producer_id,
            request_frame?,
            request_status?,
        ]
    }
}

impl fmt::Display for PidBlockNotDelivered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            offset,
            time_ms,
            broker_id,
            broker_epoch,
            start,
            next_producer_id,
            request,
        } = self;
        let ids = match start {
            Some(start) => format!(
                "producer ids {start} to {}",
                next_producer_id.saturating_sub(1)
            ),
            None => format!("producer ids up to {}", next_producer_id.saturating_sub(1)),
        };
        let asked = match request {
            Some((frame, status)) => {
                format!("the broker's last request before it (frame {frame}) ended {status}")
            }
            None => "no request for it is in the capture".to_owned(),
        };
        write!(
            f,
            "the metadata log commits {ids} to broker {broker_id} (epoch {broker_epoch}) at offset {offset} (unix ms {time_ms}), but no response in the capture delivers them; {asked}"
        )
    }
}

/// A block delivered on the wire that the log commits with other values: to another
/// broker or broker epoch, or only after it was delivered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidBlockMismatch {
    /// The response.
    pub frame: u64,
    pub start: i64,
    pub len: i32,
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub offset: i64,
    pub log_broker_id: i32,
    pub log_broker_epoch: i64,
    /// How long after the response the record's batch was appended, beyond the
    /// clock skew allowed, when it was.
    pub committed_late_ms: Option<i64>,
}

impl PidBlockMismatch {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            start,
            len,
            broker_id,
            broker_epoch,
            offset,
            log_broker_id,
            log_broker_epoch,
            committed_late_ms,
        } = self;
        facts![
            frame,
            start,
            len,
            broker_id,
            broker_epoch,
            offset,
            log_broker_id,
            log_broker_epoch,
            committed_late_ms?,
        ]
    }
}

impl fmt::Display for PidBlockMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            start,
            len,
            broker_id,
            broker_epoch,
            offset,
            log_broker_id,
            log_broker_epoch,
            committed_late_ms,
        } = self;
        write!(
            f,
            "{len} producer ids from {start} were delivered to broker {broker_id} (epoch {broker_epoch}) at frame {frame}, but the record at offset {offset} commits them"
        )?;
        if (broker_id, broker_epoch) != (log_broker_id, log_broker_epoch) {
            write!(f, " to broker {log_broker_id} (epoch {log_broker_epoch})")?;
        }
        if let Some(late) = committed_late_ms {
            write!(
                f,
                " {late} ms after they were delivered (beyond the clock skew allowed)"
            )?;
        }
        Ok(())
    }
}

/// A ProducerIdsRecord whose next producer id is not above the one before it: ids
/// committed twice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidCommittedOverlap {
    pub offset: i64,
    pub broker_id: i32,
    /// Its block: `start..next_producer_id`.
    pub start: i64,
    pub next_producer_id: i64,
    pub previous_offset: i64,
    pub previous_next_producer_id: i64,
}

impl PidCommittedOverlap {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            offset,
            broker_id,
            start,
            next_producer_id,
            previous_offset,
            previous_next_producer_id,
        } = self;
        facts![
            offset,
            broker_id,
            start,
            next_producer_id,
            previous_offset,
            previous_next_producer_id,
        ]
    }
}

impl fmt::Display for PidCommittedOverlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            offset,
            broker_id,
            start,
            next_producer_id,
            previous_offset,
            previous_next_producer_id,
        } = self;
        write!(
            f,
            "the ProducerIdsRecord at offset {offset} commits producer ids {start}..={} to broker {broker_id}, below the {previous_next_producer_id} the record at offset {previous_offset} reached: ids committed twice",
            next_producer_id.saturating_sub(1)
        )
    }
}

/// A ProducerIdsRecord whose block starts past the highest id committed before it:
/// the ids between have no record in the logs read (records missing, or ids
/// skipped).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidCommittedGap {
    pub offset: i64,
    pub broker_id: i32,
    pub next_producer_id: i64,
    pub previous_offset: i64,
    pub previous_next_producer_id: i64,
    /// Kafka's block size.
    pub usual_len: i64,
    /// The ids no record commits.
    pub missing_start: i64,
    pub missing_end: i64,
}

impl PidCommittedGap {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            offset,
            broker_id,
            next_producer_id,
            previous_offset,
            previous_next_producer_id,
            usual_len,
            missing_start,
            missing_end,
        } = self;
        facts![
            offset,
            broker_id,
            next_producer_id,
            previous_offset,
            previous_next_producer_id,
            usual_len,
            missing_start,
            missing_end,
        ]
    }
}

impl fmt::Display for PidCommittedGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            offset,
            broker_id,
            next_producer_id,
            previous_offset,
            previous_next_producer_id,
            usual_len,
            missing_start,
            missing_end,
        } = self;
        write!(
            f,
            "no ProducerIdsRecord of the logs read commits producer ids {missing_start}..={missing_end}: the record at offset {offset} (broker {broker_id}) moves the next producer id from {previous_next_producer_id} (offset {previous_offset}) to {next_producer_id}, not by Kafka's block of {usual_len} (records missing from the logs read, or ids skipped)"
        )
    }
}
