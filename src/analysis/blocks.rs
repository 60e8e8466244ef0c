//! Blocks of producer IDs and what is wrong with them: overlaps, regressions, gaps and
//! irregular lengths.

use std::collections::BTreeMap;

use super::{Block, Finding};
use crate::diag::Kind;
use crate::pairing::Exchange;

/// The block a successful response grants, or why a NONE response grants none.
enum Granted {
    Block(Block),
    /// A NONE response whose start or length cannot be a block.
    Irregular(String),
    /// An error response, an unanswered request, or fields we could not read.
    Nothing,
}

fn granted(ex: &Exchange) -> Granted {
    let Some((meta, resp)) = &ex.response else {
        return Granted::Nothing;
    };
    let (Some(0), Some(start), Some(len), Some(broker_id), Some(broker_epoch)) = (
        resp.error_code,
        resp.producer_id_start,
        resp.producer_id_len,
        ex.request.broker_id,
        ex.request.broker_epoch,
    ) else {
        return Granted::Nothing;
    };
    if start < 0 {
        return Granted::Irregular(format!(
            "a NONE response to broker {broker_id} gives producer id start {start}"
        ));
    }
    if len <= 0 {
        return Granted::Irregular(format!(
            "a NONE response to broker {broker_id} gives a block of {len} ids"
        ));
    }
    let Some(end) = start.checked_add(i64::from(len) - 1) else {
        return Granted::Irregular(format!(
            "a NONE response to broker {broker_id} gives a block starting at {start} of {len} ids, past the largest producer id"
        ));
    };
    Granted::Block(Block {
        start,
        end,
        len,
        broker_id,
        broker_epoch,
        connection: ex.endpoints.connection,
        client: ex.endpoints.client,
        server: ex.endpoints.server,
        correlation_id: ex.correlation_id,
        request_frame: ex.request_meta.frame,
        response_frame: meta.frame,
        timestamp: meta.timestamp,
    })
}

/// The most common length; on a tie, the one seen first.
fn usual_len(blocks: &[Block]) -> Option<i32> {
    let mut counts: BTreeMap<i32, (usize, usize)> = BTreeMap::new();
    for (idx, b) in blocks.iter().enumerate() {
        counts.entry(b.len).or_insert((0, idx)).0 += 1;
    }
    counts
        .into_iter()
        .max_by(|(_, (n1, first1)), (_, (n2, first2))| n1.cmp(n2).then(first2.cmp(first1)))
        .map(|(len, _)| len)
}

fn ids(from: i64, to: i64) -> String {
    if from == to {
        format!("id {from}")
    } else {
        format!("ids {from}..={to}")
    }
}

fn finding(kind: Kind, block: &Block, frames: Vec<u64>, message: String) -> Finding {
    let mut frames = frames;
    frames.sort_unstable();
    frames.dedup();
    Finding {
        kind,
        broker_id: Some(block.broker_id),
        connection: Some(block.connection),
        frames,
        message,
    }
}

/// Blocks in time order of their responses, the usual length, and findings about them.
pub fn find(exchanges: &[Exchange], findings: &mut Vec<Finding>) -> (Vec<Block>, Option<i32>) {
    let mut blocks = Vec::new();
    for ex in exchanges {
        match granted(ex) {
            Granted::Block(block) => blocks.push(block),
            Granted::Irregular(message) => {
                let frame = ex
                    .response
                    .as_ref()
                    .map_or(ex.request_meta.frame, |(m, _)| m.frame);
                findings.push(Finding {
                    kind: Kind::PidBlockIrregular,
                    broker_id: ex.request.broker_id,
                    connection: Some(ex.endpoints.connection),
                    frames: vec![ex.request_meta.frame, frame],
                    message: format!(
                        "{message} (correlation id {}); it is not counted as a block",
                        ex.correlation_id
                    ),
                });
            }
            Granted::Nothing => {}
        }
    }
    blocks.sort_by_key(|b| (b.timestamp, b.response_frame));
    let usual = usual_len(&blocks);

    // Overlaps: sweep by start, against the block reaching furthest so far.
    let mut by_start: Vec<&Block> = blocks.iter().collect();
    by_start.sort_by_key(|b| (b.start, b.response_frame));
    let mut reach: Option<&Block> = None;
    for b in by_start {
        if let Some(r) = reach {
            if b.start <= r.end {
                let shared_to = b.end.min(r.end);
                findings.push(finding(
                    Kind::PidBlockOverlap,
                    b,
                    vec![r.response_frame, b.response_frame],
                    format!(
                        "{} were given twice: to broker {} (frame {}) and to broker {} (frame {})",
                        ids(b.start, shared_to),
                        r.broker_id,
                        r.response_frame,
                        b.broker_id,
                        b.response_frame
                    ),
                ));
            }
        }
        if reach.is_none_or(|r| b.end > r.end) {
            reach = Some(b);
        }
    }

    // Regressions and gaps: in time order, against what was handed out before.
    let mut furthest: Option<&Block> = None;
    for b in &blocks {
        if let Some(f) = furthest {
            if b.start <= f.end {
                findings.push(finding(
                    Kind::PidBlockRegression,
                    b,
                    vec![f.response_frame, b.response_frame],
                    format!(
                        "the block starting at {} for broker {} (frame {}) starts below the end {} of an earlier block for broker {} (frame {})",
                        b.start, b.broker_id, b.response_frame, f.end, f.broker_id, f.response_frame
                    ),
                ));
            }
        }
        // Ids never handed out between the furthest block so far and this one.
        if let Some(f) = furthest.filter(|f| b.start > f.end.saturating_add(1)) {
            let skipped = b.start - f.end - 1;
            findings.push(finding(
                Kind::PidBlockGap,
                b,
                vec![f.response_frame, b.response_frame],
                format!(
                    "{skipped} ids ({}) were skipped between the block for broker {} (frame {}) and the next, for broker {} (frame {})",
                    ids(f.end + 1, b.start - 1),
                    f.broker_id,
                    f.response_frame,
                    b.broker_id,
                    b.response_frame
                ),
            ));
        }
        if furthest.is_none_or(|f| b.end > f.end) {
            furthest = Some(b);
        }
        if let Some(usual) = usual.filter(|u| *u != b.len) {
            findings.push(finding(
                Kind::PidBlockIrregular,
                b,
                vec![b.request_frame, b.response_frame],
                format!(
                    "broker {} got a block of {} ids (frame {}) where this capture's blocks are usually {usual}",
                    b.broker_id, b.len, b.response_frame
                ),
            ));
        }
    }
    (blocks, usual)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::exchange;
    use super::*;

    fn run(ex: &[Exchange]) -> (Vec<Block>, Vec<Finding>) {
        let mut findings = Vec::new();
        let (blocks, _) = find(ex, &mut findings);
        (blocks, findings)
    }

    fn kinds(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.kind.as_str()).collect()
    }

    #[test]
    fn overlapping_blocks_to_two_brokers() {
        let (_, f) = run(&[
            exchange(1, 1, 5, Some((0, 5000, 1000, 1))),
            exchange(2, 2, 5, Some((0, 5500, 1000, 1))),
        ]);
        assert_eq!(kinds(&f), vec!["pid_block_overlap", "pid_block_regression"]);
        assert!(
            f[0].message.starts_with("ids 5500..=5999 were given twice"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].frames, vec![11, 21]);
    }

    #[test]
    fn regression_without_overlap_after_failover() {
        let (_, f) = run(&[
            exchange(1, 1, 5, Some((0, 1000, 1000, 1))),
            exchange(2, 2, 5, Some((0, 0, 1000, 1))),
        ]);
        assert_eq!(kinds(&f), vec!["pid_block_regression"]);
    }

    #[test]
    fn gap_between_consecutive_blocks() {
        let (_, f) = run(&[
            exchange(1, 1, 5, Some((0, 0, 1000, 1))),
            exchange(2, 2, 5, Some((0, 1500, 1000, 1))),
        ]);
        assert_eq!(kinds(&f), vec!["pid_block_gap"]);
        assert!(
            f[0].message.starts_with("500 ids (ids 1000..=1499)"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn irregular_lengths_and_impossible_none_responses() {
        let (blocks, f) = run(&[
            exchange(1, 1, 5, Some((0, 0, 1000, 1))),
            exchange(2, 1, 5, Some((0, 1000, 1000, 1))),
            exchange(3, 2, 5, Some((0, 2000, 10, 1))),
            exchange(4, 2, 5, Some((0, 2010, 0, 1))),
            exchange(5, 2, 5, Some((0, -1, 1000, 1))),
        ]);
        assert_eq!(blocks.len(), 3);
        assert_eq!(kinds(&f), vec!["pid_block_irregular"; 3]);
    }

    #[test]
    fn errors_and_unanswered_requests_are_never_blocks() {
        let (blocks, f) = run(&[
            exchange(1, 1, 5, Some((41, -1, 0, 1))),
            exchange(2, 1, 5, None),
            exchange(3, 1, 5, Some((0, i64::MAX, 1000, 1))),
        ]);
        assert!(blocks.is_empty());
        assert_eq!(kinds(&f), vec!["pid_block_irregular"]);
    }
}
