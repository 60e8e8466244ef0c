//! The pieces' rules on hand-made spans, answer runs and metadata logs.

use super::*;
use crate::analysis::controllers::{AnswerRun, Leadership};
use crate::metadata_log::{EpochBatches, LeaderChange, RecordPlace};
use crate::pairing::MessageMeta;

fn at(ms: i64) -> Timestamp {
    Timestamp {
        secs: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as u32,
        nano: false,
    }
}

fn meta(frame: u64, ms: i64) -> MessageMeta {
    MessageMeta {
        frame,
        first_frame: frame,
        timestamp: at(ms),
        size: 40,
        origin: None,
    }
}

fn proven(first: (u64, i64), last: (u64, i64)) -> Proven {
    Proven {
        first: (meta(first.0, first.1), Evidence::AllocateProducerIds),
        last: (meta(last.0, last.1), Evidence::AllocateProducerIds),
    }
}

fn span(leader_id: i32, epoch: i32, from: (u64, i64), proof: Option<Proven>) -> Leadership {
    Leadership {
        leader_id,
        epoch,
        from: meta(from.0, from.1),
        to: None,
        how: Evidence::VoteResponse,
        proven: proof,
    }
}

/// (leader or None, epoch, from ms, to ms) of each piece.
fn shape(pieces: &[Piece]) -> Vec<(Option<i32>, Option<i32>, i64, i64)> {
    let ms = |t: Timestamp| t.secs * 1000 + i64::from(t.nanos / 1_000_000);
    pieces
        .iter()
        .map(|p| {
            (
                p.led.and_then(|l| l.controller_id),
                p.led.and_then(|l| l.epoch),
                ms(p.from.at),
                ms(p.to.at),
            )
        })
        .collect()
}

#[test]
fn a_leader_named_only_by_a_voter_after_its_death_is_never_drawn_leading() {
    // 101 led epoch 1 before the capture and died; a Vote response named it later
    let mut first = span(101, 1, (50, 6_000), None);
    first.to = Some(meta(60, 6_100));
    let second = span(103, 2, (60, 6_100), Some(proven((70, 7_000), (90, 9_000))));
    let leaders = Leaders {
        spans: vec![first, second],
        unplaced: Vec::new(),
    };
    let pieces = pieces(&leaders, None, Some((at(0), at(10_000))));
    assert_eq!(
        shape(&pieces),
        [
            (None, None, 0, 7_000),
            (Some(103), Some(2), 7_000, 9_000),
            (None, None, 9_000, 10_000),
        ]
    );
    assert_eq!(pieces[0].from.source, Source::CaptureStart);
    assert_eq!(pieces[2].to.source, Source::CaptureEnd);
}

#[test]
fn answers_before_any_epoch_is_shown_are_a_piece_of_epoch_unknown() {
    let leaders = Leaders {
        spans: vec![span(
            102,
            3,
            (40, 5_000),
            Some(proven((40, 5_000), (45, 5_500))),
        )],
        unplaced: vec![AnswerRun {
            server: "10.0.0.1:9093".parse().unwrap(),
            controller_id: Some(101),
            after_epoch: None,
            proven: proven((3, 1_000), (9, 2_000)),
        }],
    };
    let pieces = pieces(&leaders, None, Some((at(500), at(6_000))));
    assert_eq!(
        shape(&pieces),
        [
            (None, None, 500, 1_000),
            (Some(101), None, 1_000, 2_000),
            (None, None, 2_000, 5_000),
            (Some(102), Some(3), 5_000, 5_500),
            (None, None, 5_500, 6_000),
        ]
    );
}

fn log(changes: &[(i32, i32, i64)], epochs: &[(i32, i64, i64)]) -> MetadataLog {
    MetadataLog {
        leader_changes: changes
            .iter()
            .map(|&(leader_id, epoch, ms)| LeaderChange {
                leader_id,
                voters: Vec::new(),
                place: RecordPlace {
                    offset: 0,
                    time_ms: ms,
                    leader_epoch: epoch,
                    file_idx: 0,
                },
            })
            .collect(),
        epochs: epochs
            .iter()
            .map(|&(epoch, first_ms, last_ms)| {
                (
                    epoch,
                    EpochBatches {
                        first_ms,
                        last_ms,
                        batches: 2,
                    },
                )
            })
            .collect(),
        ..MetadataLog::default()
    }
}

#[test]
fn the_metadata_log_bounds_an_epoch_from_its_leader_change_and_names_its_leader() {
    // the capture only heard a voter name 101 for epoch 1; the log knows 102 led it
    let mut first = span(101, 1, (50, 6_000), None);
    first.to = Some(meta(60, 8_100));
    let second = span(103, 2, (60, 8_100), Some(proven((70, 8_200), (90, 9_000))));
    let leaders = Leaders {
        spans: vec![first, second],
        unplaced: Vec::new(),
    };
    let log = log(
        &[(102, 1, 500), (103, 2, 8_150)],
        &[(1, 500, 7_900), (2, 8_150, 9_500)],
    );
    let pieces = pieces(&leaders, Some(&log), Some((at(1_000), at(10_000))));
    assert_eq!(
        shape(&pieces),
        [
            (Some(102), Some(1), 500, 7_900),
            (None, None, 7_900, 8_150),
            (Some(103), Some(2), 8_150, 9_500),
            (None, None, 9_500, 10_000),
        ]
    );
    assert_eq!(
        pieces[0].from.source,
        Source::MetadataLog {
            how: Evidence::LeaderChange
        }
    );
    assert_eq!(
        pieces[2].to.source,
        Source::MetadataLog {
            how: Evidence::Batch
        }
    );
}

#[test]
fn a_proof_past_the_first_message_of_a_later_epoch_is_cut_there() {
    let mut first = span(101, 1, (1, 1_000), None);
    first.to = Some(meta(20, 3_000));
    let leaders = Leaders {
        spans: vec![first],
        unplaced: Vec::new(),
    };
    // a log clock a little ahead: its last batch of epoch 1 after the capture's next epoch
    let log = log(&[(101, 1, 900)], &[(1, 900, 3_200)]);
    let pieces = pieces(&leaders, Some(&log), None);
    assert_eq!(shape(&pieces), [(Some(101), Some(1), 900, 3_000)]);
}
