//! Blocks of producer IDs and what is wrong with them: overlaps, regressions, gaps and
//! irregular lengths.

use std::collections::{BTreeMap, VecDeque};

use super::nearly_sorted::NearlySorted;
use super::{Block, Finding};
use crate::diag::obs;
use crate::diag::{BadGrant, Irregular, Observation, Overlap};
use crate::kafka::tables::ErrorCode;
use crate::pairing::Exchange;

/// The block a successful response grants, or why a NONE response grants none.
enum Granted {
    Block(Block),
    /// A NONE response whose start or length cannot be a block.
    Irregular(Irregular),
    /// A NONE response granting ids `start..=end` to a request whose broker id or epoch
    /// was not read (cut by the snaplen, lost): a block of no known broker, which fills
    /// gaps but is not compared.
    Uncompared {
        start: i64,
        end: i64,
    },
    /// An error response, an unanswered request, or fields we could not read.
    Nothing,
}

fn granted(ex: &Exchange) -> Granted {
    let Some((meta, resp)) = ex.outcome.response() else {
        return Granted::Nothing;
    };
    let (Some(ErrorCode::NONE), Some(start), Some(len)) = (
        resp.error_code,
        resp.producer_id_start,
        resp.producer_id_len,
    ) else {
        return Granted::Nothing;
    };
    let (Some(broker_id), Some(broker_epoch)) = (ex.request.broker_id, ex.request.broker_epoch)
    else {
        let end = i64::from(len)
            .checked_sub(1)
            .and_then(|n| start.checked_add(n));
        return match end {
            Some(end) if start >= 0 && len > 0 => Granted::Uncompared { start, end },
            _ => Granted::Nothing,
        };
    };
    let irregular = |why| {
        Granted::Irregular(Irregular::Response {
            frame: meta.frame,
            correlation_id: ex.correlation_id,
            broker_id,
            producer_id_start: start,
            producer_id_len: len,
            why,
        })
    };
    if start < 0 {
        return irregular(BadGrant::NegativeStart);
    }
    if len <= 0 {
        return irregular(BadGrant::NoIds);
    }
    let Some(end) = start.checked_add(i64::from(len) - 1) else {
        return irregular(BadGrant::PastLargestId);
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

/// Blocks compared one by one before they are folded into ranges.
pub const MAX_TRACKED_BLOCKS: usize = 65_536;
/// Ranges of folded blocks kept: blocks granted in order fold into one, so a capture
/// leaving more apart is hostile or broken, and each costs a map entry; past them the
/// lowest are forgotten (`analysis_limit`).
const MAX_FOLDED_RANGES: usize = 65_536;
/// Overlaps found for one block: a controller that lost its state grants ids again, each
/// new block sharing them with one earlier block or a few, so a block sharing ids with
/// more is of a hostile or broken capture, where finding them all costs a finding per
/// pair of blocks (`analysis_limit`).
const MAX_OVERLAPS_PER_BLOCK: usize = 16;
/// Earlier blocks kept whole compared with one block: those starting within the longest
/// kept block's length below it, a few in a real capture, all of them in a hostile one
/// (`analysis_limit`).
const MAX_COMPARED_PER_BLOCK: usize = 1024;
/// Blocks of one unusual length listed as irregular; more are only counted.
const MAX_LEN_SAMPLES: usize = 1000;
/// Samples kept over all lengths past each length's first: a block is some hundred bytes.
const MAX_SAMPLES: usize = 8 * MAX_LEN_SAMPLES;
/// Block lengths followed: Kafka's controller grants one length (1,000), so a capture
/// of more is hostile or broken, and each costs up to its samples.
const MAX_LENS: usize = 1024;
/// Blocks that may still arrive after a gap opened and fill it: answers on different
/// connections reach the capture in another order than the controller committed them
/// (two brokers' blocks granted together, answered on two sockets).
const MAX_BLOCKS_TO_FILL_A_GAP: u64 = 64;

/// Ids not (yet) granted between two blocks: `from..=to`, opened when `after` arrived
/// beyond the furthest block `before`, when `seen` blocks had been taken.
#[derive(Debug, Clone)]
struct OpenGap {
    to: i64,
    before: Block,
    after: Block,
    seen: u64,
}

/// A finding about `block`, shown where it was granted.
fn finding(block: &Block, frames: Vec<u64>, what: Observation<'_>) -> Finding {
    let at = (
        Some(block.broker_id),
        Some(block.connection),
        block.timestamp,
    );
    Finding::new(what, at, frames)
}

/// Blocks of one length: how many, when first seen, and the first few.
#[derive(Debug, Default)]
struct LenStats {
    count: u64,
    first_seen: u64,
    samples: Vec<Block>,
}

/// Blocks seen so far, compared with each new one.
///
/// The most recent [`MAX_TRACKED_BLOCKS`] are kept whole; older ones are folded into
/// merged id ranges that remember the frames of their first and last block, at most
/// [`MAX_FOLDED_RANGES`] of them, so memory stays bounded however many blocks a capture
/// holds. A block is compared with at most [`MAX_COMPARED_PER_BLOCK`] kept blocks, and
/// at most [`MAX_OVERLAPS_PER_BLOCK`] of its overlaps are found, so the work a block
/// costs is bounded too; each bound reached is said once (`analysis_limit`).
#[derive(Debug)]
pub struct Tracker {
    /// Blocks kept whole before folding.
    max_recent: usize,
    /// Recent blocks by (start, response frame): what the comparisons read of them, not
    /// the whole block, since the tree holds tens of thousands (half-full nodes, as
    /// blocks come in order, made it 300 bytes a whole block).
    recent: NearlySorted<(i64, u64), Recent>,
    /// Keys of `recent` in arrival order, for folding the oldest.
    arrival: VecDeque<(i64, u64)>,
    /// Folded ranges: start -> (end, first response frame, last response frame).
    folded: BTreeMap<i64, (i64, u64, u64)>,
    /// Blocks of `recent` by length (how many of each), to bound searches by start by
    /// the longest of them: a long block no longer widens them once folded.
    kept_lens: BTreeMap<i64, u32>,
    /// Whether a block had more overlaps than are found, more kept blocks to compare
    /// with than are, or the folded ranges more than are kept (each said once).
    cut: Cut,
    /// The block reaching highest so far.
    furthest: Option<Block>,
    lens: BTreeMap<i32, LenStats>,
    /// Whether a length past [`MAX_LENS`] was seen.
    lens_unfollowed: bool,
    /// Blocks kept as samples of their length, over all lengths.
    samples: usize,
    seen: u64,
    /// Gaps that a later block may still fill, by their first id.
    open_gaps: BTreeMap<i64, OpenGap>,
    /// Answers the capture does not show whole (lost, given up at a limit, cut): any may
    /// have granted the ids of a gap.
    answers_not_read: u64,
    /// Requests never answered: a controller can grant a block and fail before its
    /// answer goes out, so any may hold the ids of a gap.
    requests_unanswered: u64,
    /// Blocks granted to requests whose broker id or epoch was not read.
    uncompared: u64,
    /// A gap was reported with answers not read or requests never answered, any of which
    /// may hold its ids.
    gaps_unsure: bool,
}

/// Which of the tracker's bounds were reached.
#[derive(Debug, Clone, Copy, Default)]
struct Cut {
    overlaps: bool,
    comparisons: bool,
    folded: bool,
}

/// What an earlier block is compared by, beside its key's start and response frame.
#[derive(Debug, Clone, Copy)]
struct Recent {
    end: i64,
    broker_id: i32,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::new(MAX_TRACKED_BLOCKS)
    }
}

impl Tracker {
    /// A tracker comparing up to `max_recent` blocks one by one.
    pub fn new(max_recent: usize) -> Self {
        Self {
            max_recent: max_recent.max(1),
            recent: NearlySorted::default(),
            arrival: VecDeque::new(),
            folded: BTreeMap::new(),
            kept_lens: BTreeMap::new(),
            cut: Cut::default(),
            furthest: None,
            lens: BTreeMap::new(),
            lens_unfollowed: false,
            samples: 0,
            seen: 0,
            open_gaps: BTreeMap::new(),
            answers_not_read: 0,
            requests_unanswered: 0,
            uncompared: 0,
            gaps_unsure: false,
        }
    }

    /// Blocks granted to requests whose broker id or epoch was not read: their ids fill
    /// gaps, but they are compared with no block, so an overlap or a regression among
    /// them goes unfound.
    pub fn uncompared(&self) -> u64 {
        self.uncompared
    }

    /// Whether a gap was reported that answers not read or requests never answered may
    /// have filled.
    pub fn gaps_unsure(&self) -> bool {
        self.gaps_unsure
    }

    /// Takes one exchange; returns its block if it granted one.
    pub fn add(&mut self, ex: &Exchange, findings: &mut Vec<Finding>) -> Option<Block> {
        let not_read = match &ex.outcome {
            crate::pairing::Outcome::ResponseUnknown => true,
            crate::pairing::Outcome::Complete { response, .. } => response.problem.is_some(),
            crate::pairing::Outcome::Unanswered => false,
        };
        self.answers_not_read += u64::from(not_read);
        let unanswered = matches!(ex.outcome, crate::pairing::Outcome::Unanswered);
        self.requests_unanswered += u64::from(unanswered);
        let block = match granted(ex) {
            Granted::Block(block) => block,
            Granted::Irregular(irregular) => {
                let last = ex.last_meta();
                let (frame, at) = (last.frame, last.timestamp);
                let what = Observation::PidBlockIrregular(irregular);
                let at = (ex.request.broker_id, Some(ex.endpoints.connection), at);
                findings.push(Finding::new(what, at, vec![ex.request_meta.frame, frame]));
                return None;
            }
            Granted::Uncompared { start, end } => {
                self.uncompared += 1;
                self.fill_gaps(start, end);
                return None;
            }
            Granted::Nothing => return None,
        };
        self.overlaps(&block, findings);
        self.order(&block, findings);
        self.seen += 1;
        self.close_gaps(self.seen.saturating_sub(MAX_BLOCKS_TO_FILL_A_GAP), findings);
        self.count_len(&block, findings);
        let key = (block.start, block.response_frame);
        let recent = Recent {
            end: block.end,
            broker_id: block.broker_id,
        };
        if let Some(replaced) = self.recent.insert(key, recent) {
            self.unkeep_len(block.start, replaced.end);
        }
        *self.kept_lens.entry(i64::from(block.len)).or_default() += 1;
        self.arrival.push_back(key);
        while self.recent.len() > self.max_recent {
            self.fold_oldest(&block, findings);
        }
        Some(block)
    }

    /// The longest block of `recent`: none starts further below an id it holds.
    fn longest_kept(&self) -> i64 {
        self.kept_lens.last_key_value().map_or(0, |(len, _)| *len)
    }

    /// A block `start..=end` is no longer in `recent`.
    fn unkeep_len(&mut self, start: i64, end: i64) {
        let len = end.saturating_sub(start).saturating_add(1);
        if let Some(count) = self.kept_lens.get_mut(&len) {
            *count -= 1;
            if *count == 0 {
                self.kept_lens.remove(&len);
            }
        }
    }

    /// Says, the first time, that `b` reached one of the tracker's bounds.
    fn say_cut(&mut self, cut: Cut, b: &Block, findings: &mut Vec<Finding>) {
        let at = (Some(b.broker_id), Some(b.connection), b.timestamp);
        let bounds = [
            (
                cut.overlaps,
                &mut self.cut.overlaps,
                obs::AnalysisTable::BlockOverlaps,
                MAX_OVERLAPS_PER_BLOCK,
            ),
            (
                cut.comparisons,
                &mut self.cut.comparisons,
                obs::AnalysisTable::BlockComparisons,
                MAX_COMPARED_PER_BLOCK,
            ),
            (
                cut.folded,
                &mut self.cut.folded,
                obs::AnalysisTable::FoldedBlocks,
                MAX_FOLDED_RANGES,
            ),
        ];
        for (now, said, table, limit) in bounds {
            if now && !std::mem::replace(said, true) {
                findings.push(Finding::analysis_limit(
                    (table, limit),
                    b.response_frame,
                    at,
                ));
            }
        }
    }

    /// Every earlier block sharing ids with `b`, and every range of folded ones: one
    /// finding per pair, up to [`MAX_OVERLAPS_PER_BLOCK`] of them, among the first
    /// [`MAX_COMPARED_PER_BLOCK`] blocks kept that may share ids with it (by first id).
    fn overlaps(&mut self, b: &Block, findings: &mut Vec<Finding>) {
        // Above every earlier block, as a healthy controller grants: none to search.
        if self.furthest.as_ref().is_none_or(|f| b.start > f.end) {
            return;
        }
        let mut cut = Cut::default();
        let mut found = 0;
        let lowest_start = b.start.saturating_sub(self.longest_kept());
        let earlier_blocks = self.recent.range((lowest_start, 0), (b.end, u64::MAX));
        for (compared, (&(earlier_start, earlier_frame), earlier)) in earlier_blocks.enumerate() {
            if compared == MAX_COMPARED_PER_BLOCK {
                cut.comparisons = true;
                break;
            }
            if earlier.end < b.start {
                continue;
            }
            if found == MAX_OVERLAPS_PER_BLOCK {
                cut.overlaps = true;
                break;
            }
            found += 1;
            let (from, to) = (b.start.max(earlier_start), b.end.min(earlier.end));
            let overlap = Overlap::Block {
                frame: b.response_frame,
                broker_id: b.broker_id,
                ids_start: from,
                ids_end: to,
                other_broker_id: earlier.broker_id,
                other_frame: earlier_frame,
            };
            findings.push(finding(
                b,
                vec![earlier_frame, b.response_frame],
                Observation::PidBlockOverlap(overlap),
            ));
        }
        // Folded ranges neither overlap nor touch, so their ends rise with their starts:
        // those sharing ids with `b` are the last starting at most at its end, down to
        // the first ending below its start. Listed lowest first.
        let room = MAX_OVERLAPS_PER_BLOCK.saturating_sub(found);
        let mut folded: Vec<_> = self
            .folded
            .range(..=b.end)
            .rev()
            .take_while(|(_, (end, _, _))| *end >= b.start)
            .take(room.saturating_add(1))
            .collect();
        if cut.overlaps || folded.len() > room {
            cut.overlaps = true;
            folded.truncate(room);
        }
        folded.reverse();
        for (start, (end, first, last)) in folded {
            let (from, to) = (b.start.max(*start), b.end.min(*end));
            let overlap = Overlap::Folded {
                frame: b.response_frame,
                broker_id: b.broker_id,
                ids_start: from,
                ids_end: to,
                other_first_frame: *first,
                other_last_frame: *last,
            };
            findings.push(finding(
                b,
                vec![*last, b.response_frame],
                Observation::PidBlockOverlap(overlap),
            ));
        }
        self.say_cut(cut, b, findings);
    }

    /// Regressions and gaps against the block reaching highest so far. A block below it
    /// is a regression only when it was asked for after that one was granted; answered
    /// together, they may reach the capture in either order, and the lower one fills
    /// the gap that the higher one seemed to open.
    fn order(&mut self, b: &Block, findings: &mut Vec<Finding>) {
        self.fill_gaps(b.start, b.end);
        if let Some(f) = &self.furthest {
            if b.start <= f.end && b.request_frame > f.response_frame {
                let what = Observation::PidBlockRegression(obs::PidBlockRegression {
                    frame: b.response_frame,
                    broker_id: b.broker_id,
                    start: b.start,
                    other_end: f.end,
                    other_broker_id: f.broker_id,
                    other_frame: f.response_frame,
                });
                findings.push(finding(b, vec![f.response_frame, b.response_frame], what));
            } else if b.start > f.end.saturating_add(1) {
                let gap = OpenGap {
                    to: b.start - 1,
                    before: f.clone(),
                    after: b.clone(),
                    seen: self.seen,
                };
                self.open_gaps.insert(f.end + 1, gap);
            }
        }
        if self.furthest.as_ref().is_none_or(|f| b.end > f.end) {
            self.furthest = Some(b.clone());
        }
    }

    /// Takes the ids `start..=end` out of the open gaps.
    fn fill_gaps(&mut self, start: i64, end: i64) {
        let touched: Vec<i64> = self
            .open_gaps
            .range(..=end)
            .filter(|(_, gap)| gap.to >= start)
            .map(|(from, _)| *from)
            .collect();
        for from in touched {
            let Some(gap) = self.open_gaps.remove(&from) else {
                continue;
            };
            if from < start {
                let below = OpenGap {
                    to: start - 1,
                    ..gap.clone()
                };
                self.open_gaps.insert(from, below);
            }
            if gap.to > end {
                self.open_gaps.insert(end + 1, gap);
            }
        }
    }

    /// Reports the open gaps opened before `seen` blocks had been taken: no later block
    /// can fill them any more.
    fn close_gaps(&mut self, seen: u64, findings: &mut Vec<Finding>) {
        let closed: Vec<i64> = self
            .open_gaps
            .iter()
            .filter(|(_, gap)| gap.seen < seen)
            .map(|(from, _)| *from)
            .collect();
        for from in closed {
            let Some(gap) = self.open_gaps.remove(&from) else {
                continue;
            };
            self.gaps_unsure |= self.answers_not_read + self.requests_unanswered > 0;
            let (f, b) = (&gap.before, &gap.after);
            let what = Observation::PidBlockGap(obs::PidBlockGap {
                frame: b.response_frame,
                broker_id: b.broker_id,
                ids_start: from,
                ids_end: gap.to,
                other_broker_id: f.broker_id,
                other_frame: f.response_frame,
                answers_not_read: self.answers_not_read,
                requests_unanswered: self.requests_unanswered,
            });
            findings.push(finding(b, vec![f.response_frame, b.response_frame], what));
        }
    }

    /// Folds the oldest recent block into the merged ranges, as `new` arrives; past
    /// [`MAX_FOLDED_RANGES`], forgets the lowest range.
    fn fold_oldest(&mut self, new: &Block, findings: &mut Vec<Finding>) {
        let Some(key) = self.arrival.pop_front() else {
            return;
        };
        let Some(b) = self.recent.remove(&key) else {
            return;
        };
        let (block_start, frame) = key;
        self.unkeep_len(block_start, b.end);
        let (mut start, mut end, mut first, mut last) = (block_start, b.end, frame, frame);
        // Absorb every folded range touching this one. Folded ranges neither overlap nor
        // touch, so those are the last ones starting at most one past its end, taken from
        // the highest down (no list of them built, once a block at long captures).
        let reach = end.saturating_add(1);
        while let Some((&s, &(e, f, l))) = self
            .folded
            .range(..=reach)
            .next_back()
            .filter(|(_, (e, _, _))| e.saturating_add(1) >= block_start)
        {
            self.folded.remove(&s);
            start = start.min(s);
            end = end.max(e);
            first = first.min(f);
            last = last.max(l);
        }
        self.folded.insert(start, (end, first, last));
        if self.folded.len() > MAX_FOLDED_RANGES {
            self.folded.pop_first();
            let cut = Cut {
                folded: true,
                ..Cut::default()
            };
            self.say_cut(cut, new, findings);
        }
    }

    /// Counts `block` under its length, with a sample of each length's blocks; a length
    /// past [`MAX_LENS`] is not followed (said once).
    fn count_len(&mut self, block: &Block, findings: &mut Vec<Finding>) {
        if self.lens.len() >= MAX_LENS && !self.lens.contains_key(&block.len) {
            if !std::mem::replace(&mut self.lens_unfollowed, true) {
                let table = (obs::AnalysisTable::BlockLengths, MAX_LENS);
                let at = (
                    Some(block.broker_id),
                    Some(block.connection),
                    block.timestamp,
                );
                findings.push(Finding::analysis_limit(table, block.response_frame, at));
            }
            return;
        }
        let stats = self.lens.entry(block.len).or_insert_with(|| LenStats {
            first_seen: self.seen,
            ..LenStats::default()
        });
        stats.count += 1;
        // every length keeps one, so that each irregular length is reported
        let room = stats.samples.len() < MAX_LEN_SAMPLES && self.samples < MAX_SAMPLES;
        if stats.samples.is_empty() || room {
            stats.samples.push(block.clone());
            self.samples += 1;
        }
    }

    /// Ends the analysis: blocks whose length is not the usual one are irregular.
    /// Returns the usual length (the most common; on a tie, the one seen first).
    pub fn finish(&mut self, findings: &mut Vec<Finding>) -> Option<i32> {
        self.close_gaps(u64::MAX, findings);
        let usual = self
            .lens
            .iter()
            .max_by(|(_, a), (_, b)| a.count.cmp(&b.count).then(b.first_seen.cmp(&a.first_seen)))
            .map(|(len, _)| *len)?;
        for (len, stats) in &self.lens {
            if *len == usual {
                continue;
            }
            for b in &stats.samples {
                let irregular = Irregular::Length {
                    frame: b.response_frame,
                    broker_id: b.broker_id,
                    len: b.len,
                    usual_len: usual,
                };
                findings.push(finding(
                    b,
                    vec![b.request_frame, b.response_frame],
                    Observation::PidBlockIrregular(irregular),
                ));
            }
        }
        Some(usual)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::exchange;
    use super::*;
    use crate::diag::Kind;

    fn run(ex: &[Exchange]) -> (Vec<Block>, Vec<Finding>) {
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        let blocks = ex
            .iter()
            .filter_map(|e| tracker.add(e, &mut findings))
            .collect();
        tracker.finish(&mut findings);
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
    fn a_block_sharing_only_the_highest_id_so_far_overlaps() {
        let (_, f) = run(&[
            exchange(1, 1, 5, Some((0, 5000, 1000, 1))),
            exchange(2, 2, 5, Some((0, 5999, 1000, 1))),
        ]);
        assert_eq!(kinds(&f), vec!["pid_block_overlap", "pid_block_regression"]);
        assert!(
            f[0].message.starts_with("id 5999 was given twice"),
            "{}",
            f[0].message
        );
        let (_, f) = run(&[
            exchange(1, 1, 5, Some((0, 5000, 1000, 1))),
            exchange(2, 2, 5, Some((0, 6000, 1000, 1))),
        ]);
        assert_eq!(kinds(&f), Vec::<&str>::new());
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
            f[0].message.starts_with("500 ids (1000..=1499)"),
            "{}",
            f[0].message
        );
    }

    /// A block granted to a request whose broker id was not read (cut by the snaplen) is
    /// compared with none, but its ids are granted: they fill the gap they lie in.
    #[test]
    fn a_block_of_a_request_not_read_fills_a_gap_and_is_counted_uncompared() {
        let mut cut = exchange(2, 2, 5, Some((0, 1000, 1000, 1)));
        cut.request.broker_id = None;
        let ex = [
            exchange(1, 1, 5, Some((0, 0, 1000, 1))),
            exchange(3, 1, 5, Some((0, 2000, 1000, 1))),
            cut,
        ];
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        let blocks = ex.iter().filter_map(|e| tracker.add(e, &mut findings));
        assert_eq!(blocks.count(), 2);
        assert_eq!(tracker.uncompared(), 1);
        tracker.finish(&mut findings);
        assert_eq!(kinds(&findings), Vec::<&str>::new());
    }

    #[test]
    fn blocks_answered_together_may_arrive_in_either_order() {
        // The controller granted 0..=999 to broker 2 and then 1000..=1999 to broker 1,
        // both asked for before either answer; the answers reached the capture the other
        // way round: neither a gap nor a regression.
        let first = exchange(1, 1, 5, Some((0, 1000, 1000, 1)));
        let mut second = exchange(2, 2, 5, Some((0, 0, 1000, 1)));
        second.request_meta.frame = first.request_meta.frame - 1;
        let (blocks, f) = run(&[first, second]);
        assert_eq!(blocks.len(), 2);
        assert_eq!(kinds(&f), Vec::<&str>::new());
    }

    #[test]
    fn a_gap_left_unfilled_is_reported_when_no_block_can_fill_it_any_more() {
        let mut ex = vec![
            exchange(1, 1, 5, Some((0, 0, 1000, 1))),
            exchange(2, 2, 5, Some((0, 2000, 1000, 1))),
        ];
        // later blocks, each asked for after the one before was granted
        for n in 3..3 + MAX_BLOCKS_TO_FILL_A_GAP + 1 {
            ex.push(exchange(n, 1, 5, Some((0, (n as i64) * 1000, 1000, 1))));
        }
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        for e in &ex {
            tracker.add(e, &mut findings);
        }
        assert_eq!(
            kinds(&findings),
            vec!["pid_block_gap"],
            "closed before the end"
        );
        assert!(findings[0].message.starts_with("1000 ids (1000..=1999)"));
    }

    /// A gap with an answer the capture does not show whole (given up at the memory
    /// budget, lost) says that answer may hold its ids, and so may a request never
    /// answered (its controller may have granted the block and failed).
    #[test]
    fn a_gap_with_answers_not_read_says_they_may_hold_its_ids() {
        let mut lost = exchange(2, 1, 5, None);
        lost.outcome = crate::pairing::Outcome::ResponseUnknown;
        let (_, f) = run(&[
            exchange(1, 1, 5, Some((0, 0, 1000, 1))),
            lost,
            exchange(3, 2, 5, None),
            exchange(4, 1, 5, Some((0, 2000, 1000, 1))),
        ]);
        assert_eq!(kinds(&f), vec!["pid_block_gap"]);
        assert!(
            f[0].message.ends_with(
                "unless one of 1 answer not read whole (lost, given up at a limit, or cut) or 1 request never answered got them (a controller can grant a block and fail before answering)"
            ),
            "{}",
            f[0].message
        );
        assert!(f[0].facts.contains(&("answers_not_read", 1u64.into())));
        assert!(f[0].facts.contains(&("requests_unanswered", 1u64.into())));
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

    /// A capture of more block lengths than Kafka grants follows the first
    /// [`MAX_LENS`], each reported irregular, says once that it stopped, and keeps a
    /// bounded number of samples.
    #[test]
    fn block_lengths_past_the_limit_are_said_not_followed() {
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        let mut start = 0i64;
        let mut add = |n: u64, len: i32, tracker: &mut Tracker, found: &mut Vec<Finding>| {
            tracker.add(&exchange(n, 1, 5, Some((0, start, len, 1))), found);
            start += i64::from(len);
        };
        for n in 1..=2000 {
            add(n, 1000, &mut tracker, &mut findings);
        }
        for len in 1..=MAX_LENS as i32 + 5 {
            add(3000 + len as u64, len, &mut tracker, &mut findings);
        }
        assert_eq!(tracker.lens.len(), MAX_LENS);
        assert!(tracker.samples <= MAX_SAMPLES + MAX_LENS);
        let limits: Vec<_> = findings
            .iter()
            .filter(|f| f.kind.as_str() == "analysis_limit")
            .collect();
        assert_eq!(limits.len(), 1, "{findings:?}");
        // 1,000 is among the lengths counted up: the first past is MAX_LENS + 1
        assert_eq!(limits[0].frames, [(3000 + MAX_LENS as u64 + 1) * 10 + 1]);
        let before = findings.len();
        tracker.finish(&mut findings);
        // every followed length but the usual one is reported
        assert_eq!(findings.len() - before, MAX_LENS - 1);
    }

    #[test]
    fn overlap_with_a_block_folded_long_ago_is_still_found() {
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        let n = MAX_TRACKED_BLOCKS as u64 + 10;
        for i in 0..n {
            tracker.add(
                &exchange(i + 1, 1, 5, Some((0, (i as i64) * 10, 10, 1))),
                &mut findings,
            );
        }
        assert!(findings.is_empty());
        assert_eq!(tracker.recent.len(), MAX_TRACKED_BLOCKS);
        assert_eq!(
            tracker.folded.len(),
            1,
            "contiguous old blocks fold into one range"
        );
        tracker.add(&exchange(n + 1, 2, 5, Some((0, 55, 10, 1))), &mut findings);
        let overlaps: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.kind == Kind::PidBlockOverlap)
            .collect();
        assert_eq!(overlaps.len(), 1);
        assert!(
            overlaps[0]
                .message
                .starts_with("ids 55..=64 given to broker 2"),
            "{}",
            overlaps[0].message
        );
    }

    /// The `analysis_limit` findings, by table and frame.
    fn limits(findings: &[Finding]) -> Vec<(String, Vec<u64>)> {
        findings
            .iter()
            .filter(|f| f.kind == Kind::AnalysisLimit)
            .filter_map(|f| match f.facts.first() {
                Some(("table", crate::diag::Fact::Text(table))) => {
                    Some((table.clone(), f.frames.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// The response frame of exchange `n` of [`exchange`].
    fn frame(n: u64) -> u64 {
        n * 10 + 1
    }

    /// Blocks granting the same ids again and again: each overlaps at most
    /// [`MAX_OVERLAPS_PER_BLOCK`] earlier ones (a finding built per pair made a capture
    /// of 65,536 such blocks cost two billion findings), and the first block with more
    /// says so, once.
    #[test]
    fn a_block_overlapping_more_blocks_than_are_found_says_so_once() {
        let ex: Vec<Exchange> = (1..=40)
            .map(|n| exchange(n, 1, 5, Some((0, 0, 1000, 1))))
            .collect();
        let (_, f) = run(&ex);
        let overlaps: Vec<&Finding> = f
            .iter()
            .filter(|f| f.kind == Kind::PidBlockOverlap)
            .collect();
        // block n overlaps the n - 1 before it, up to 16
        let expected: usize = (0..40).map(|n: usize| n.min(MAX_OVERLAPS_PER_BLOCK)).sum();
        assert_eq!(overlaps.len(), expected);
        for n in 1..=40u64 {
            let of_n = overlaps
                .iter()
                .filter(|o| o.frames.last() == Some(&frame(n)));
            assert!(of_n.count() <= MAX_OVERLAPS_PER_BLOCK);
        }
        // the first block with 17 before it
        let limit = MAX_OVERLAPS_PER_BLOCK as u64 + 2;
        assert_eq!(
            limits(&f),
            vec![("block_overlaps".to_owned(), vec![frame(limit)])]
        );
        let said = f
            .iter()
            .find(|f| f.kind == Kind::AnalysisLimit)
            .map(|f| f.message.as_str());
        assert_eq!(
            said,
            Some("a block shared ids with more than 16 earlier blocks or ranges of folded blocks; from frame 181 on, a block's overlaps past the first 16 found are neither listed nor counted (pid_block_overlap counts at most 16 a block)")
        );
    }

    /// A block that may share ids with more kept blocks than are compared with it (a
    /// long block kept brings every block starting within its length below it in
    /// reach) is compared with the first of them only, and says that an overlap may go
    /// unfound.
    #[test]
    fn a_block_compared_with_fewer_blocks_than_may_overlap_it_says_so() {
        let mut ex = vec![
            // the highest, so that every block after is searched
            exchange(1, 1, 5, Some((0, 1 << 40, 1000, 1))),
            exchange(2, 1, 5, Some((0, 0, 100_000, 1))),
        ];
        let past = MAX_COMPARED_PER_BLOCK as u64 + 10;
        for n in 3..3 + past {
            ex.push(exchange(n, 1, 5, Some((0, 100_000 + n as i64 * 10, 10, 1))));
        }
        let (_, f) = run(&ex);
        assert!(f.iter().all(|f| f.kind != Kind::PidBlockOverlap));
        // the first block with 1,025 small ones in reach below it
        let n = 4 + MAX_COMPARED_PER_BLOCK as u64;
        assert_eq!(
            limits(&f),
            vec![("block_comparisons".to_owned(), vec![frame(n)])]
        );
    }

    /// A long block, once folded, no longer widens the search of every later block
    /// through every block kept: blocks given again overlap the blocks they repeat, all
    /// found, with no limit reached.
    #[test]
    fn a_long_block_folded_no_longer_widens_the_search() {
        let kept = MAX_COMPARED_PER_BLOCK as u64 * 2;
        let mut findings = Vec::new();
        let mut tracker = Tracker::new(kept as usize);
        tracker.add(&exchange(1, 1, 5, Some((0, 1, i32::MAX, 1))), &mut findings);
        let above = 1i64 << 31;
        let start = |k: u64| above + k as i64 * 1000;
        for k in 0..kept {
            tracker.add(
                &exchange(2 + k, 1, 5, Some((0, start(k), 1000, 1))),
                &mut findings,
            );
        }
        assert!(findings.is_empty(), "{findings:?}");
        // the same blocks again, each overlapping the one it repeats, still kept
        for k in 0..kept {
            let n = 2 + kept + k;
            tracker.add(
                &exchange(n, 2, 5, Some((0, start(k), 1000, 1))),
                &mut findings,
            );
        }
        let overlaps = findings.iter().filter(|f| f.kind == Kind::PidBlockOverlap);
        assert_eq!(overlaps.count() as u64, kept);
        assert_eq!(limits(&findings), vec![]);
        assert_eq!(tracker.longest_kept(), 1000);
    }

    /// A block over several folded ranges overlaps each of them, lowest first.
    #[test]
    fn a_block_over_several_folded_ranges_overlaps_each() {
        let mut findings = Vec::new();
        let mut tracker = Tracker::new(1);
        for (n, start) in [(1, 0), (2, 20), (3, 40), (4, 100)] {
            tracker.add(&exchange(n, 1, 5, Some((0, start, 10, 1))), &mut findings);
        }
        assert_eq!(tracker.folded.len(), 3);
        findings.clear();
        tracker.add(&exchange(5, 2, 5, Some((0, 5, 41, 1))), &mut findings);
        let ids: Vec<(i64, i64)> = findings
            .iter()
            .filter(|f| f.kind == Kind::PidBlockOverlap)
            .filter_map(|f| f.ids.map(|ids| (ids.start, ids.end)))
            .collect();
        assert_eq!(ids, [(5, 9), (20, 29), (40, 45)]);
    }

    /// Blocks one id apart fold into ranges that do not touch: past
    /// [`MAX_FOLDED_RANGES`] the lowest are forgotten, said once, and never merged
    /// with a range they do not touch (that would make ids never granted overlap).
    #[test]
    fn folded_ranges_past_the_limit_forget_the_lowest_and_say_so() {
        let mut findings = Vec::new();
        let mut tracker = Tracker::new(1);
        let blocks = MAX_FOLDED_RANGES as u64 + 10;
        for k in 0..blocks {
            let start = k as i64 * 1001;
            tracker.add(
                &exchange(k + 1, 1, 5, Some((0, start, 1000, 1))),
                &mut findings,
            );
        }
        assert_eq!(tracker.folded.len(), MAX_FOLDED_RANGES);
        // the ranges left are the highest folded, whole
        let lowest = (blocks - 1 - MAX_FOLDED_RANGES as u64) as i64 * 1001;
        assert_eq!(
            tracker.folded.first_key_value(),
            Some((
                &lowest,
                &(
                    lowest + 999,
                    frame(blocks - MAX_FOLDED_RANGES as u64),
                    frame(blocks - MAX_FOLDED_RANGES as u64)
                )
            ))
        );
        // the block whose arrival folded one range too many
        let n = MAX_FOLDED_RANGES as u64 + 2;
        assert_eq!(
            limits(&findings),
            vec![("folded_blocks".to_owned(), vec![frame(n)])]
        );
    }

    proptest::proptest! {
        /// Blocks in any order and overlap, folded after the last two: the folded ranges
        /// never overlap or touch, and cover every id of every folded block and no other,
        /// each range with the first and last response frames of its blocks.
        #[test]
        fn folded_ranges_are_the_folded_blocks_merged(
            blocks in proptest::collection::vec((0i64..200, 1i32..30), 1..60)
        ) {
            let mut tracker = Tracker::new(2);
            let mut findings = Vec::new();
            for (i, &(start, len)) in blocks.iter().enumerate() {
                let n = i as u64 + 1;
                tracker.add(&exchange(n, 1, 5, Some((0, start, len, 1))), &mut findings);
            }
            let folded_blocks = blocks.len().saturating_sub(2);
            let mut ids = BTreeMap::new();
            for (i, &(start, len)) in blocks.iter().take(folded_blocks).enumerate() {
                let frame = (i as u64 + 1) * 10 + 1;
                for id in start..start + i64::from(len) {
                    let (first, last) = ids.entry(id).or_insert((frame, frame));
                    *first = (*first).min(frame);
                    *last = (*last).max(frame);
                }
            }
            let mut covered = std::collections::BTreeSet::new();
            let mut previous_end = None;
            for (&start, &(end, first, last)) in &tracker.folded {
                proptest::prop_assert!(previous_end.is_none_or(|e: i64| e + 1 < start));
                previous_end = Some(end);
                let frames = (start..=end).filter_map(|id| ids.get(&id));
                let first_seen = frames.clone().map(|&(f, _)| f).min();
                let last_seen = frames.map(|&(_, l)| l).max();
                proptest::prop_assert_eq!((first_seen, last_seen), (Some(first), Some(last)));
                covered.extend(start..=end);
            }
            let expected: std::collections::BTreeSet<i64> = ids.keys().copied().collect();
            proptest::prop_assert_eq!(covered, expected);
        }
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
