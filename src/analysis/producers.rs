//! InitProducerId grants: each granted producer id placed in the block that holds it,
//! the same id and epoch granted to two producers, ids outside their broker's blocks, and
//! the producers that hold ids a block overlap covers.
//!
//! In: the blocks the capture shows granted, then InitProducerId exchanges, in the order
//! they complete. A broker cannot hand out an id before it holds the block, so a grant is
//! placed among the blocks seen before it. Memory is bounded: [`MAX_TRACKED_BLOCKS`]
//! blocks and [`MAX_TRACKED_GRANTS`] granted ids; past those the oldest are forgotten and
//! the report says so.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use super::{Block, Finding, StatusCounts, MAX_TRACKED_BLOCKS};
use crate::diag::Observation;
use crate::kafka::tables::ErrorCode;
use crate::pairing::{MessageMeta, Outcome, ProducerIdExchange};
use crate::timestamp::Timestamp;

/// Granted ids whose holders are remembered, to find an id granted twice.
pub const MAX_TRACKED_GRANTS: usize = 1 << 18;
/// Holders remembered per id and epoch: the first, and the next few who also got it.
const MAX_HOLDERS: usize = 4;

/// A block, as a grant refers to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRef {
    pub start: i64,
    pub end: i64,
    pub broker_id: i32,
    pub response_frame: u64,
}

/// Where a granted producer id stands among the blocks of the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In this block, the latest granted before the id that holds it.
    InBlock(BlockRef),
    /// No block seen holds it, and its broker had none yet: its block was granted
    /// before the capture began.
    BeforeCapture,
    /// Outside every block its broker was granted in the capture, after the first.
    OutsideBlocks,
    /// No block seen holds it, and which broker granted it is not known (or its broker's
    /// blocks that could hold it were forgotten, past the blocks remembered).
    Unknown,
}

impl Placement {
    /// The report's name for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::InBlock(_) => "in_block",
            Self::BeforeCapture => "before_capture",
            Self::OutsideBlocks => "outside_blocks",
            Self::Unknown => "unknown",
        }
    }
}

/// What the analysis knows of an InitProducerId exchange.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placed {
    /// The broker that answered, when its address is known, and how it is known.
    pub broker: Option<(i32, &'static str)>,
    /// Where the granted id lies; `None` when nothing was granted.
    pub placement: Option<Placement>,
    /// Response frame of the earlier grant of the same id and epoch to another producer.
    pub duplicate_of: Option<u64>,
}

/// One producer that was granted an id.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holder {
    connection: u64,
    client: SocketAddr,
    transactional_id: Option<String>,
    response_frame: u64,
}

impl Holder {
    /// Whether two grants went to the same producer: the same transactional id, or the
    /// same connection of an idempotent producer.
    fn same_producer(&self, other: &Self) -> bool {
        match (&self.transactional_id, &other.transactional_id) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.connection == other.connection,
            _ => false,
        }
    }
}

/// Producers holding ids of one overlap, for its finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affected {
    /// Producers holding an id of the overlap, and their distinct client hosts.
    pub producers: u64,
    pub hosts: Vec<String>,
    /// The lowest id of the overlap held, and by how many producers.
    pub producer_id: i64,
    pub holders_of_id: u64,
}

/// Counts over every InitProducerId exchange, for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerTotals {
    pub exchanges: u64,
    pub statuses: StatusCounts,
    pub granted: u64,
    pub errors: u64,
    pub in_block: u64,
    pub before_capture: u64,
    pub outside_blocks: u64,
    pub unknown: u64,
    pub duplicates: u64,
    /// Granted ids forgotten to stay within [`MAX_TRACKED_GRANTS`]: duplicates among them
    /// and later grants are not found.
    pub grants_forgotten: u64,
}

/// The producer side of the analysis.
#[derive(Debug)]
pub struct Tracker {
    /// Blocks by (start, response frame): the latest `max_blocks`.
    blocks: BTreeMap<(i64, u64), BlockRef>,
    /// Their keys, oldest first.
    order: VecDeque<(i64, u64)>,
    max_blocks: usize,
    /// Per broker, the ids of the blocks forgotten to stay within `max_blocks`: a grant
    /// there lies in a block no longer known, not outside every block.
    forgotten: BTreeMap<i32, (i64, i64)>,
    longest: i64,
    /// Per broker: blocks seen, and the last.
    by_broker: BTreeMap<i32, (u64, BlockRef)>,
    grants: BTreeMap<(i64, i16), Vec<Holder>>,
    pub totals: ProducerTotals,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::new(MAX_TRACKED_BLOCKS)
    }
}

impl Tracker {
    /// A tracker that remembers the latest `max_blocks` blocks (at least one).
    pub fn new(max_blocks: usize) -> Self {
        Self {
            blocks: BTreeMap::new(),
            order: VecDeque::new(),
            max_blocks: max_blocks.max(1),
            forgotten: BTreeMap::new(),
            longest: 0,
            by_broker: BTreeMap::new(),
            grants: BTreeMap::new(),
            totals: ProducerTotals::default(),
        }
    }

    /// A block granted in the capture.
    pub fn block(&mut self, b: &Block) {
        let r = BlockRef {
            start: b.start,
            end: b.end,
            broker_id: b.broker_id,
            response_frame: b.response_frame,
        };
        self.longest = self.longest.max(b.end.saturating_sub(b.start));
        let key = (b.start, b.response_frame);
        if self.blocks.insert(key, r).is_none() {
            self.order.push_back(key);
        }
        if self.blocks.len() > self.max_blocks {
            let oldest = self.order.pop_front();
            if let Some(old) = oldest.and_then(|key| self.blocks.remove(&key)) {
                let range = self
                    .forgotten
                    .entry(old.broker_id)
                    .or_insert((old.start, old.end));
                *range = (range.0.min(old.start), range.1.max(old.end));
            }
        }
        let seen = self.by_broker.entry(b.broker_id).or_insert((0, r));
        *seen = (seen.0 + 1, r);
    }

    /// The latest block granted before `frame` holding `id`, of `broker` when known.
    fn holding(&self, id: i64, frame: u64, broker: Option<i32>) -> Option<BlockRef> {
        let lowest = id.saturating_sub(self.longest);
        self.blocks
            .range((lowest, 0)..=(id, u64::MAX))
            .map(|(_, b)| *b)
            .filter(|b| b.end >= id && b.response_frame < frame)
            .filter(|b| broker.is_none_or(|broker| broker == b.broker_id))
            .max_by_key(|b| b.response_frame)
    }

    /// One InitProducerId exchange; `broker`: who answered, when known.
    pub fn add(
        &mut self,
        px: &ProducerIdExchange,
        broker: Option<(i32, &'static str)>,
        findings: &mut Vec<Finding>,
    ) -> Placed {
        self.totals.exchanges += 1;
        self.totals.statuses.add(px.outcome.status());
        let mut placed = Placed {
            broker,
            ..Placed::default()
        };
        let Outcome::Complete { meta, response } = &px.outcome else {
            return placed;
        };
        let (Some(code), Some(id), Some(epoch)) = (
            response.error_code,
            response.producer_id,
            response.producer_epoch,
        ) else {
            return placed;
        };
        if code != ErrorCode::NONE || id < 0 {
            self.totals.errors += u64::from(code.is_error());
            return placed;
        }
        self.totals.granted += 1;
        let placement = self.place(id, meta, broker.map(|(b, _)| b), findings);
        placed.placement = Some(placement);
        let holder = Holder {
            connection: px.endpoints.connection,
            client: px.endpoints.client,
            transactional_id: px.request.transactional_id.clone().flatten(),
            response_frame: meta.frame,
        };
        placed.duplicate_of = self.hold(id, epoch, holder, meta.timestamp, findings);
        placed
    }

    fn place(
        &mut self,
        id: i64,
        response: &MessageMeta,
        broker: Option<i32>,
        findings: &mut Vec<Finding>,
    ) -> Placement {
        let frame = response.frame;
        let placement = match (self.holding(id, frame, broker), broker) {
            (Some(block), _) => Placement::InBlock(block),
            (None, None) => Placement::Unknown,
            (None, Some(broker_id))
                if self
                    .forgotten
                    .get(&broker_id)
                    .is_some_and(|(start, end)| (*start..=*end).contains(&id)) =>
            {
                Placement::Unknown
            }
            (None, Some(broker_id)) => match self.by_broker.get(&broker_id) {
                Some((blocks, last)) if last.response_frame < frame => {
                    let what = Observation::PidOutsideBlocks {
                        frame,
                        broker_id,
                        producer_id: id,
                        blocks: *blocks,
                        last_start: last.start,
                        last_end: last.end,
                    };
                    let at = (Some(broker_id), None, response.timestamp);
                    findings.push(super::finding_of(what, at, vec![frame]));
                    Placement::OutsideBlocks
                }
                _ => Placement::BeforeCapture,
            },
        };
        let count = match placement {
            Placement::InBlock(_) => &mut self.totals.in_block,
            Placement::BeforeCapture => &mut self.totals.before_capture,
            Placement::OutsideBlocks => &mut self.totals.outside_blocks,
            Placement::Unknown => &mut self.totals.unknown,
        };
        *count += 1;
        placement
    }

    /// Remembers who holds `id` at `epoch`; the frame of an earlier grant of it to
    /// another producer, with its finding.
    fn hold(
        &mut self,
        id: i64,
        epoch: i16,
        holder: Holder,
        at: Timestamp,
        findings: &mut Vec<Finding>,
    ) -> Option<u64> {
        let holders = self.grants.entry((id, epoch)).or_default();
        let earlier = holders.iter().find(|h| !h.same_producer(&holder)).cloned();
        if holders.len() < MAX_HOLDERS && !holders.iter().any(|h| h.same_producer(&holder)) {
            holders.push(holder.clone());
        }
        if self.grants.len() > MAX_TRACKED_GRANTS {
            self.grants.pop_first();
            self.totals.grants_forgotten += 1;
        }
        let earlier = earlier?;
        self.totals.duplicates += 1;
        let what = Observation::PidDuplicateGrant {
            frame: holder.response_frame,
            producer_id: id,
            producer_epoch: epoch,
            client: holder.client,
            transactional_id: holder.transactional_id.as_deref(),
            other_frame: earlier.response_frame,
            other_client: earlier.client,
            other_transactional_id: earlier.transactional_id.as_deref(),
        };
        let frames = vec![earlier.response_frame, holder.response_frame];
        let where_ = (None, Some(holder.connection), at);
        findings.push(super::finding_of(what, where_, frames));
        Some(earlier.response_frame)
    }

    /// The producers holding ids in `ids_start..=ids_end`.
    pub fn affected(&self, ids_start: i64, ids_end: i64) -> Option<Affected> {
        let mut producers = 0;
        let mut hosts: Vec<String> = Vec::new();
        let mut first: Option<(i64, u64)> = None;
        for ((id, _), holders) in self
            .grants
            .range((ids_start, i16::MIN)..=(ids_end, i16::MAX))
        {
            producers += holders.len() as u64;
            for h in holders {
                let host = h.client.ip().to_string();
                if !hosts.contains(&host) {
                    hosts.push(host);
                }
            }
            match &mut first {
                Some((first_id, count)) if first_id == id => *count += holders.len() as u64,
                None => first = Some((*id, holders.len() as u64)),
                Some(_) => {}
            }
        }
        let (producer_id, holders_of_id) = first?;
        hosts.sort();
        Some(Affected {
            producers,
            hosts,
            producer_id,
            holders_of_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::init_producer_id as init;
    use crate::pairing::Endpoints;

    fn meta(frame: u64) -> MessageMeta {
        MessageMeta {
            frame,
            first_frame: frame,
            timestamp: Timestamp::default(),
            size: 40,
            origin: None,
        }
    }

    fn block(broker_id: i32, start: i64, frame: u64) -> Block {
        Block {
            start,
            end: start + 999,
            len: 1000,
            broker_id,
            broker_epoch: 1,
            connection: 0,
            client: "10.0.0.9:40000".parse().unwrap(),
            server: "10.0.0.1:9093".parse().unwrap(),
            correlation_id: 1,
            request_frame: frame - 1,
            response_frame: frame,
            timestamp: Timestamp::default(),
        }
    }

    /// A grant of `id` at `epoch` on `connection`, answered in `frame`.
    fn grant(
        connection: u64,
        txn: Option<&str>,
        id: i64,
        epoch: i16,
        frame: u64,
    ) -> ProducerIdExchange {
        ProducerIdExchange {
            endpoints: Endpoints {
                connection,
                client: format!("10.0.3.{connection}:5000").parse().unwrap(),
                server: "10.0.0.2:9092".parse().unwrap(),
            },
            correlation_id: 1,
            api_version: 4,
            request_meta: meta(frame - 1),
            request: init::Request {
                transactional_id: Some(txn.map(str::to_owned)),
                ..Default::default()
            },
            outcome: Outcome::Complete {
                meta: meta(frame),
                response: Box::new(init::Response {
                    error_code: Some(ErrorCode::NONE),
                    producer_id: Some(id),
                    producer_epoch: Some(epoch),
                    ..Default::default()
                }),
            },
        }
    }

    #[test]
    fn an_id_is_placed_among_its_brokers_blocks_or_said_to_be_outside_them() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let broker2 = Some((2, "metadata"));
        // before broker 2's first block: granted before the capture began
        let early = t.add(&grant(1, None, 7000, 0, 10), broker2, &mut found);
        assert_eq!(early.placement, Some(Placement::BeforeCapture));
        t.block(&block(2, 0, 20));
        t.block(&block(1, 1000, 21));
        let inside = t.add(&grant(2, None, 5, 0, 30), broker2, &mut found);
        assert!(matches!(inside.placement, Some(Placement::InBlock(b)) if b.start == 0));
        // broker 1's block holds 1500, but broker 2 answered: outside broker 2's blocks
        let outside = t.add(&grant(3, None, 1500, 0, 40), broker2, &mut found);
        assert_eq!(outside.placement, Some(Placement::OutsideBlocks));
        let unknown = t.add(&grant(4, None, 9000, 0, 50), None, &mut found);
        assert_eq!(unknown.placement, Some(Placement::Unknown));
        let kinds: Vec<_> = found.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["pid_outside_blocks"]);
        assert_eq!(found[0].facts[1], ("producer_id", 1500i64.into()));
        assert_eq!((t.totals.in_block, t.totals.outside_blocks), (1, 1));
    }

    #[test]
    fn an_id_in_a_forgotten_block_is_unknown_not_outside() {
        let mut t = Tracker::new(1);
        let mut found = Vec::new();
        t.block(&block(2, 0, 20));
        t.block(&block(2, 1000, 21));
        let old = t.add(&grant(1, None, 5, 0, 30), Some((2, "metadata")), &mut found);
        assert_eq!(old.placement, Some(Placement::Unknown));
        let new = t.add(
            &grant(1, None, 1005, 0, 31),
            Some((2, "metadata")),
            &mut found,
        );
        assert!(matches!(new.placement, Some(Placement::InBlock(b)) if b.start == 1000));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn only_another_producer_granted_the_same_id_and_epoch_is_a_duplicate() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let tx = Some("tx-1");
        t.add(&grant(1, tx, 10, 0, 10), None, &mut found);
        // the same transactional id back on another connection with a bumped epoch
        t.add(&grant(2, tx, 10, 1, 20), None, &mut found);
        // the same idempotent producer's connection told the same id again
        t.add(&grant(3, None, 11, 0, 30), None, &mut found);
        t.add(&grant(3, None, 11, 0, 31), None, &mut found);
        assert!(found.is_empty(), "{found:?}");
        // another connection granted 11 at epoch 0
        let dup = t.add(&grant(4, None, 11, 0, 40), None, &mut found);
        assert_eq!(dup.duplicate_of, Some(30));
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].frames, [30, 40]);
        let affected = t.affected(11, 11).unwrap();
        assert_eq!((affected.producers, affected.holders_of_id), (2, 2));
        assert_eq!(affected.hosts, ["10.0.3.3", "10.0.3.4"]);
    }
}
