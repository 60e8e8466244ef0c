use super::*;
use crate::analysis::test_support::exchange;
use crate::analysis::{Analyzer, SlowRule, MAX_TRACKED_BLOCKS};
use crate::metadata_log::{FileKind, LogFile, RecordPlace};

const T0_MS: i64 = 1_700_000_000_000;

/// A log of records `(broker, epoch, next, time_ms after T0)` at offsets 10, 11, ...
fn log(records: &[(i32, i64, i64, i64)]) -> MetadataLog {
    let blocks: Vec<CommittedBlock> = records
        .iter()
        .enumerate()
        .map(|(i, &(broker_id, broker_epoch, next, ms))| CommittedBlock {
            broker_id,
            broker_epoch,
            next_producer_id: next,
            start: Some(next - 1000),
            place: RecordPlace {
                offset: 10 + i as i64,
                time_ms: T0_MS + ms,
                leader_epoch: 1,
                file_idx: 0,
            },
            from_snapshot: false,
        })
        .collect();
    MetadataLog {
        files: vec![LogFile {
            path: "00000000000000000000.log".into(),
            kind: FileKind::Segment,
            len: 1,
            read_len: 1,
            batches: 1,
            records: blocks.len() as u64,
            first_offset: Some(0),
            last_offset: Some(100),
            first_time_ms: Some(T0_MS),
            last_time_ms: Some(T0_MS + 60_000),
            complete: true,
        }],
        blocks,
        ..MetadataLog::default()
    }
}

/// Runs exchanges through an analyzer comparing with `log`.
fn compare(log: MetadataLog, exchanges: &[Exchange]) -> (Vec<Finding>, LogAnalysis) {
    let mut a = Analyzer::new(SlowRule::Millis(1e9), false, MAX_TRACKED_BLOCKS);
    a.compare_with(log, 1000);
    for ex in exchanges {
        a.add(ex);
    }
    let analysis = a.finish(&mut Diagnostics::default());
    let log = analysis.metadata_log.expect("a log was given");
    (analysis.findings, log)
}

/// The kinds of this comparison's findings (the wire's own, as `pid_block_gap`, left out).
fn kinds(found: &[Finding]) -> Vec<&'static str> {
    found
        .iter()
        .map(|f| f.kind.as_str())
        .filter(|k| {
            k.starts_with("pid_committed")
                || k.contains("committed")
                || k.contains("deliver")
                || *k == "pid_block_mismatch"
        })
        .collect()
}

#[test]
fn every_delivered_block_matched_by_its_record_reports_nothing() {
    // exchange n is answered at n s + 2 ms; each record is appended 1 ms before
    let wire = [
        exchange(1, 1, 5, Some((0, 0, 1000, 2))),
        exchange(2, 2, 7, Some((0, 1000, 1000, 2))),
    ];
    let (found, log) = compare(log(&[(1, 5, 1000, 1001), (2, 7, 2000, 2001)]), &wire);
    assert_eq!(kinds(&found), Vec::<&str>::new());
    assert_eq!(log.counts.matched, 2);
    assert_eq!(
        log.deliveries,
        vec![
            Delivery::Delivered { frame: 11 },
            Delivery::Delivered { frame: 21 }
        ]
    );
}

#[test]
fn a_delivered_block_without_its_record_is_not_committed() {
    let wire = [
        exchange(1, 1, 5, Some((0, 0, 1000, 2))),
        exchange(2, 2, 7, Some((0, 1000, 1000, 2))),
        exchange(3, 1, 5, Some((0, 2000, 1000, 2))),
    ];
    // the record of the second block is missing
    let (found, log) = compare(log(&[(1, 5, 1000, 1001), (1, 5, 3000, 3001)]), &wire);
    assert_eq!(
        kinds(&found),
        vec!["pid_committed_gap", "pid_block_not_committed"]
    );
    let f = &found[1];
    assert_eq!(f.frames, vec![20, 21]);
    assert_eq!(f.broker_id, Some(2));
    assert!(
        f.message.contains("1000 producer ids from 1000"),
        "{}",
        f.message
    );
    assert_eq!(log.counts.not_committed, 1);
}

#[test]
fn a_block_delivered_outside_the_logs_time_is_not_judged() {
    // answered 100 s after T0: the log covers 60 s (and the skew)
    let wire = [exchange(100, 1, 5, Some((0, 5000, 1000, 2)))];
    let (found, log) = compare(log(&[(1, 5, 1000, 1001)]), &wire);
    assert_eq!(kinds(&found), Vec::<&str>::new());
    assert_eq!(log.counts.outside_log, 1);
    assert_eq!(log.counts.outside_capture, 1);
    assert_eq!(log.counts.not_committed, 0);
}

#[test]
fn a_record_for_another_broker_or_appended_late_is_a_mismatch() {
    let wire = [
        exchange(1, 1, 5, Some((0, 0, 1000, 2))),
        exchange(2, 2, 7, Some((0, 1000, 1000, 2))),
    ];
    // the first commits to broker 3; the second 5 s after its delivery
    let (found, _) = compare(log(&[(3, 5, 1000, 1001), (2, 7, 2000, 7002)]), &wire);
    assert_eq!(
        kinds(&found),
        vec!["pid_block_mismatch", "pid_block_mismatch"]
    );
    assert!(
        found[0].message.contains("to broker 3 (epoch 5)"),
        "{}",
        found[0].message
    );
    assert!(
        found[1].message.contains("5000 ms after"),
        "{}",
        found[1].message
    );
}

#[test]
fn a_committed_block_never_delivered_names_the_request_that_failed() {
    let wire = [
        exchange(1, 1, 5, Some((0, 0, 1000, 2))),
        // broker 2 asks at 2 s; no answer
        exchange(2, 2, 7, None),
        exchange(3, 1, 5, Some((0, 2000, 1000, 2))),
    ];
    let records = [(1, 5, 1000, 1001), (2, 7, 2000, 2001), (1, 5, 3000, 3001)];
    let (found, log) = compare(log(&records), &wire);
    assert_eq!(kinds(&found), vec!["pid_block_not_delivered"]);
    let f = &found[0];
    assert!(
        f.message.contains("frame 20) ended unanswered"),
        "{}",
        f.message
    );
    assert_eq!(log.deliveries[1], Delivery::NotDelivered);
}

#[test]
fn blocks_committed_while_the_capture_did_not_watch_their_broker_are_not_expected() {
    // broker 1 asks only at 1 s; broker 2 never: their other records are outside
    let wire = [exchange(1, 1, 5, Some((0, 0, 1000, 2)))];
    let records = [(1, 5, 1000, 1001), (2, 7, 2000, 1500), (1, 5, 3000, 30_000)];
    let (found, log) = compare(log(&records), &wire);
    assert_eq!(kinds(&found), Vec::<&str>::new());
    assert_eq!(log.counts.outside_capture, 2);
}

#[test]
fn without_a_capture_only_the_records_among_themselves_are_judged() {
    let records = [
        (1, 5, 1000, 1),
        (2, 7, 2000, 2),
        (1, 5, 5000, 3),
        (2, 7, 4000, 4),
        (1, 5, 6000, 5),
    ];
    let (found, log) = compare(log(&records), &[]);
    // frameless findings in kind order; 6000 follows the highest before it, 5000
    assert_eq!(
        kinds(&found),
        vec!["pid_committed_overlap", "pid_committed_gap"]
    );
    assert!(!log.compared);
    assert!(log
        .deliveries
        .iter()
        .all(|d| *d == Delivery::OutsideCapture));
    assert!(found[1]
        .message
        .contains("commits producer ids 2000..=3999: the record at offset 12 (broker 1) moves the next producer id from 2000 (offset 11) to 5000"));
    assert!(found[0]
        .message
        .contains("commits producer ids 3000..=3999 to broker 2, below the 5000 the record at offset 12 reached"));
}
