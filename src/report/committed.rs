//! The report's `metadata_log` section, from the log as the analysis compared it.

use super::model::{self, UnixTime};
use crate::analysis::committed::{timestamp_of_ms, LogAnalysis};
use crate::metadata_log::{FileKind, LogFile};

fn time(ms: i64) -> String {
    timestamp_of_ms(ms).to_rfc3339()
}

fn unix(ms: i64) -> UnixTime {
    UnixTime(timestamp_of_ms(ms))
}

fn file(f: &LogFile) -> model::MetadataLogFile {
    model::MetadataLogFile {
        path: f.path.clone(),
        kind: f.kind,
        size: f.len,
        read_size: f.read_len,
        batches: f.batches,
        records: f.records,
        first_offset: f.first_offset,
        last_offset: f.last_offset,
        first_timestamp: f.first_time_ms.map(time),
        last_timestamp: f.last_time_ms.map(time),
        first_unix_time: f.first_time_ms.map(unix),
        last_unix_time: f.last_time_ms.map(unix),
        complete: f.complete,
    }
}

pub fn section(a: &LogAnalysis) -> model::MetadataLog {
    let log = &a.log;
    let path_of = |idx: usize| {
        log.files
            .get(idx)
            .map_or_else(String::new, |f| f.path.clone())
    };
    let blocks = log
        .blocks
        .iter()
        .zip(&a.deliveries)
        .zip(&a.missing_before)
        .map(|((b, d), missing)| model::CommittedBlock {
            broker_id: b.broker_id,
            broker_epoch: b.broker_epoch,
            producer_id_start: b.start,
            producer_id_len: b.start.map(|s| b.next_producer_id.saturating_sub(s)),
            next_producer_id: b.next_producer_id,
            missing_before: missing.map(|(start, end)| model::IdRange { start, end }),
            offset: b.place.offset,
            timestamp: time(b.place.time_ms),
            unix_time: UnixTime(timestamp_of_ms(b.place.time_ms)),
            leader_epoch: b.place.leader_epoch,
            delivery: *d,
            file: path_of(b.place.file_idx),
        })
        .collect();
    let c = a.counts;
    // a snapshot's offsets count within the snapshot: the log's are its segments'
    let segments = || log.files.iter().filter(|f| f.kind == FileKind::Segment);
    model::MetadataLog {
        files: log.files.iter().map(file).collect(),
        first_offset: segments().filter_map(|f| f.first_offset).min(),
        last_offset: segments().filter_map(|f| f.last_offset).max(),
        first_timestamp: segments().filter_map(|f| f.first_time_ms).min().map(time),
        last_timestamp: segments().filter_map(|f| f.last_time_ms).max().map(time),
        first_unix_time: segments().filter_map(|f| f.first_time_ms).min().map(unix),
        last_unix_time: segments().filter_map(|f| f.last_time_ms).max().map(unix),
        records_by_type: log.records_by_type.clone(),
        control_records: log.control_records.clone(),
        clock_skew_ms: a.clock_skew_ms,
        comparison: a.compared.then_some(model::LogComparison {
            wire_blocks: c.wire_blocks,
            matched: c.matched,
            not_committed: c.not_committed,
            mismatched: c.mismatched,
            outside_log: c.outside_log,
            not_delivered: c.not_delivered,
            outside_capture: c.outside_capture,
        }),
        blocks,
        registrations: log
            .registrations
            .iter()
            .map(|r| model::LogRegistration {
                broker_id: r.broker_id,
                broker_epoch: r.broker_epoch,
                endpoints: r
                    .endpoints
                    .iter()
                    .map(|e| format!("{} {}:{}", e.name, e.host, e.port))
                    .collect(),
                offset: r.place.offset,
                timestamp: time(r.place.time_ms),
                unix_time: unix(r.place.time_ms),
            })
            .collect(),
        leader_changes: log
            .leader_changes
            .iter()
            .map(|l| model::LogLeaderChange {
                leader_id: l.leader_id,
                epoch: l.place.leader_epoch,
                offset: l.place.offset,
                timestamp: time(l.place.time_ms),
                unix_time: unix(l.place.time_ms),
            })
            .collect(),
        not_kept: log.not_kept,
    }
}
