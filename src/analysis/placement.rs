//! Where a granted producer id comes from, as a Kafka broker's producer-id manager hands
//! ids out.
//!
//! Kafka's `RPCProducerIdManager` (3.x and 4.x alike) grants ids from its current block;
//! when 90% of it is handed out it asks the controller for the next block
//! (AllocateProducerIds) and keeps granting from the current one until it is used up,
//! only then switching to the next, and never back. It holds at most one block ahead. So
//! after a broker's new block arrives on the wire, the tail of its previous block is still
//! granted: that is `previous_block`, not an error.
//!
//! A grant is wrong only where that manager cannot produce it: an id in a block the
//! capture shows granted to another broker and in none of its own, an id from an older
//! block in a grant whose request arrived after the broker had already answered a grant
//! from a newer block (causal: the manager claims an id while it handles the request), and
//! an id in none of the broker's blocks above the first the capture shows. Everything the
//! capture cannot decide is `unknown`.
//!
//! Only fresh ids are held to the manager's order: an idempotent producer's (Kafka's
//! `TransactionCoordinator.handleInitProducerId` draws a new id for every one). A
//! transactional id keeps its producer id when initialised again, with a bumped epoch,
//! and may be answered an id its coordinator drew on an earlier request, so its grants
//! are placed by the blocks that hold them and never judged by order.

use std::collections::{BTreeMap, VecDeque};

use super::brokers::MAX_BROKERS;
use super::nearly_sorted::NearlySorted;
use crate::packet_ref::PacketRef;
use crate::pairing::MessageMeta;

/// Blocks whose first grant is remembered per broker, for the order of grants.
const MAX_FIRST_GRANTS: usize = 4096;
/// Requests for a block remembered per broker while their answer is awaited (Kafka's
/// broker has one in flight at a time).
const MAX_AWAITED: usize = 64;
/// A broker's latest blocks kept in arrival order, to find the newest before a grant
/// answered in the same packet as a block, or before it.
const RECENT_PER_BROKER: usize = 4;
/// Newer blocks looked at for a first grant that proves a broker left an older one: the
/// next few above it (a broker switches to them in order), so that a grant from an old
/// block costs the same however many blocks came after it.
const NEWER_CHECKED: usize = 8;
/// Kept blocks looked at for the one holding a granted id: those starting within the
/// longest kept block's length below it, one or two in a real capture (a controller's
/// blocks do not overlap), every block in a hostile one granting the same ids again and
/// again, where a million grants each going through 65,536 blocks took hours. Past them
/// the grant is `unknown` (`analysis_limit`). The bound of a block's comparisons with
/// earlier ones (`blocks::MAX_COMPARED_PER_BLOCK`), for the same reason.
pub const MAX_SEARCHED_PER_GRANT: usize = 1024;

/// A broker's requests for a block whose answers the capture has not shown.
#[derive(Debug, Default, Clone)]
struct Asking {
    awaited: Awaited,
    /// The first request whose answer was not read.
    not_read: Option<u64>,
}

/// The frames of a broker's requests awaiting their answer, in order: at most
/// [`MAX_AWAITED`] + 1, and one at a time from a healthy broker, so a sorted deque, where
/// a request comes after the others and its answer takes out the oldest. (A B-tree set
/// spent about 500 instructions on each of an exchange's two events.)
#[derive(Debug, Default, Clone)]
struct Awaited(VecDeque<u64>);

impl Awaited {
    fn insert(&mut self, frame: u64) {
        if self.0.back().is_none_or(|&last| last < frame) {
            self.0.push_back(frame);
        } else if let Err(at) = self.0.binary_search(&frame) {
            self.0.insert(at, frame);
        }
    }

    fn remove(&mut self, frame: u64) {
        if self.0.front() == Some(&frame) {
            self.0.pop_front();
        } else if let Ok(at) = self.0.binary_search(&frame) {
            self.0.remove(at);
        }
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn pop_first(&mut self) -> Option<u64> {
        self.0.pop_front()
    }

    /// The first frame awaited before `frame`.
    fn first_before(&self, frame: u64) -> Option<u64> {
        self.0.front().copied().filter(|&first| first < frame)
    }
}

/// A block, as a grant refers to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRef {
    pub start: i64,
    pub end: i64,
    pub broker_id: i32,
    pub response_frame: u64,
}

impl BlockRef {
    fn holds(&self, id: i64) -> bool {
        (self.start..=self.end).contains(&id)
    }
}

/// The first grant a broker answered from one of its blocks: from then on it has left
/// every older block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FirstGrant {
    /// The response that made it.
    pub at: PacketRef,
    pub producer_id: i64,
}

/// Why a grant could not be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownWhy {
    /// No message of the capture says which broker listens where the grant came from,
    /// and no block seen holds the id.
    BrokerUnknown,
    /// The broker's blocks that could hold it were forgotten to bound memory.
    Forgotten,
    /// More broker ids were granted blocks, or asked for them, than are followed
    /// ([`MAX_BROKERS`]), and this one is not.
    NotFollowed,
    /// The broker had asked for a block (the request of this frame) and no answer to it
    /// had been seen: the block holding the id may be in it.
    AnswerAwaited(u64),
    /// No answer to the broker's request of this frame was read (lost, cut, not decoded,
    /// or none came on that connection, when Kafka's broker retries the request
    /// elsewhere): the block holding the id may be in it.
    AnswerNotRead(u64),
    /// More kept blocks could hold the id than are searched
    /// ([`MAX_SEARCHED_PER_GRANT`]): the latest holding it, its broker's or another's,
    /// may be among those not looked at.
    BlocksNotSearched,
}

/// Where a granted producer id stands among the blocks of the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// In the newest block its broker had been granted before the grant.
    InBlock(BlockRef),
    /// From a block its broker held before `newer` arrived: `held`, or, below its first
    /// block in the capture, the block it held before the capture (`None`). Kafka brokers
    /// keep granting from a block until it is used up.
    PreviousBlock {
        held: Option<BlockRef>,
        newer: BlockRef,
    },
    /// Its broker had no block in the capture yet: granted from one granted before it.
    BeforeCapture,
    /// A transactional id initialised again keeps its producer id: from `held` when a
    /// block of the capture holds it, else from a block granted earlier.
    KeptByTransactionalId(Option<BlockRef>),
    /// An EndTxn answer (transactions v2) that bumped the epoch of the id the producer
    /// ended its transaction with: the id is kept, from `held` when a block of the
    /// capture holds it, else from a block granted earlier.
    EpochBump(Option<BlockRef>),
    /// In `other`, a block another broker was granted, and in none of its broker's.
    AnotherBrokersBlock {
        other: BlockRef,
    },
    /// From an older block (`held`, or the one held before the capture) in a grant
    /// requested after its broker answered `newer_grant` from the newer block `newer`.
    OlderBlock {
        held: Option<BlockRef>,
        newer: BlockRef,
        newer_grant: FirstGrant,
    },
    /// In none of its broker's `blocks` blocks and above the first of them (`last`: the
    /// newest).
    OutsideBlocks {
        blocks: u64,
        last: BlockRef,
    },
    Unknown(UnknownWhy),
}

crate::names::closed_set! {
    /// The report's names of [`Placement`]s.
    pub enum PlacementName {
        InBlock = "in_block",
        PreviousBlock = "previous_block",
        BeforeCapture = "before_capture",
        KeptByTransactionalId = "kept_by_transactional_id",
        EpochBump = "epoch_bump",
        AnotherBrokersBlock = "another_brokers_block",
        OlderBlock = "older_block",
        OutsideBlocks = "outside_blocks",
        Unknown = "unknown",
    }
}

impl PlacementName {
    /// Whether Kafka's producer-id manager cannot produce a placement of this name.
    pub fn is_fault(self) -> bool {
        matches!(
            self,
            Self::AnotherBrokersBlock | Self::OlderBlock | Self::OutsideBlocks
        )
    }
}

impl Placement {
    /// The report's name for it.
    pub fn name(&self) -> PlacementName {
        match self {
            Self::InBlock(_) => PlacementName::InBlock,
            Self::PreviousBlock { .. } => PlacementName::PreviousBlock,
            Self::BeforeCapture => PlacementName::BeforeCapture,
            Self::KeptByTransactionalId(_) => PlacementName::KeptByTransactionalId,
            Self::EpochBump(_) => PlacementName::EpochBump,
            Self::AnotherBrokersBlock { .. } => PlacementName::AnotherBrokersBlock,
            Self::OlderBlock { .. } => PlacementName::OlderBlock,
            Self::OutsideBlocks { .. } => PlacementName::OutsideBlocks,
            Self::Unknown(_) => PlacementName::Unknown,
        }
    }

    /// The report's name for it, as text.
    pub fn as_str(&self) -> &'static str {
        self.name().as_str()
    }

    /// Whether Kafka's producer-id manager cannot have made this grant.
    pub fn is_fault(&self) -> bool {
        self.name().is_fault()
    }

    /// The block that holds the id, when the capture shows it.
    pub fn block(&self) -> Option<BlockRef> {
        match *self {
            Self::InBlock(b) => Some(b),
            Self::PreviousBlock { held, .. }
            | Self::KeptByTransactionalId(held)
            | Self::EpochBump(held)
            | Self::OlderBlock { held, .. } => held,
            Self::AnotherBrokersBlock { other } => Some(other),
            Self::BeforeCapture | Self::OutsideBlocks { .. } | Self::Unknown(_) => None,
        }
    }

    /// Why the id was placed there, in a sentence; none for `in_block`.
    pub fn reason(&self, broker: Option<i32>) -> Option<String> {
        let who = broker.map_or_else(|| "its broker".to_owned(), |b| format!("broker {b}"));
        let range = |b: &BlockRef| format!("{}..={}", b.start, b.end);
        Some(match self {
            Self::InBlock(_) => return None,
            Self::PreviousBlock { held, newer } => format!(
                "from {}, the block {who} held before {} arrived (frame {}); Kafka brokers keep granting from a block until it is used up",
                held.map_or_else(|| "the block granted before the capture".to_owned(), |b| range(&b)),
                range(newer),
                newer.response_frame
            ),
            Self::BeforeCapture => format!(
                "{who} had not been granted a block in the capture yet: the id is from one granted before the capture began"
            ),
            Self::KeptByTransactionalId(held) => format!(
                "a transactional id initialised again keeps its producer id with a bumped epoch: the id was drawn {}",
                held.map_or_else(
                    || "from a block granted before".to_owned(),
                    |b| format!("from {} (broker {}, frame {})", range(&b), b.broker_id, b.response_frame)
                )
            ),
            Self::EpochBump(held) => format!(
                "a transaction's end (EndTxn, transactions v2) bumps the epoch and keeps the producer id: the id was drawn {}",
                held.map_or_else(
                    || "from a block granted before".to_owned(),
                    |b| format!("from {} (broker {}, frame {})", range(&b), b.broker_id, b.response_frame)
                )
            ),
            Self::AnotherBrokersBlock { other } => format!(
                "in {}, the block broker {} was granted (frame {}), and in none of {who}'s: Kafka brokers grant only from their own blocks",
                range(other),
                other.broker_id,
                other.response_frame
            ),
            Self::OlderBlock { held, newer, newer_grant } => format!(
                "from {} after {who} had granted producer id {} from the newer block {} (frame {}): Kafka brokers never go back to an older block",
                held.map_or_else(|| "the block held before the capture".to_owned(), |b| range(&b)),
                newer_grant.producer_id,
                range(newer),
                newer_grant.at.frame
            ),
            Self::OutsideBlocks { blocks, last } => format!(
                "in none of the {blocks} block{} {who} was granted in the capture (the last {}), and above the first of them",
                if *blocks == 1 { "" } else { "s" },
                range(last)
            ),
            Self::Unknown(UnknownWhy::BrokerUnknown) => {
                "no message of the capture says which broker answered, and no block seen holds the id".to_owned()
            }
            Self::Unknown(UnknownWhy::Forgotten) => format!(
                "the blocks of {who} that could hold it were forgotten past the blocks remembered"
            ),
            Self::Unknown(UnknownWhy::NotFollowed) => format!(
                "{who} is past the brokers whose blocks, or requests for them, are followed (analysis_limit)"
            ),
            Self::Unknown(UnknownWhy::AnswerAwaited(frame)) => format!(
                "in none of {who}'s blocks seen, but {who} had asked for a block (frame {frame}) whose answer had not been seen: it may hold the id"
            ),
            Self::Unknown(UnknownWhy::AnswerNotRead(frame)) => format!(
                "in none of {who}'s blocks seen, but its request for a block (frame {frame}) got no answer the capture shows whole (Kafka's broker retries it, maybe on a connection not captured): that block may hold the id"
            ),
            Self::Unknown(UnknownWhy::BlocksNotSearched) => format!(
                "more blocks of the capture could hold the id than the {MAX_SEARCHED_PER_GRANT} searched for a grant (analysis_limit): the latest holding it, {who}'s or another broker's, is not known"
            ),
        })
    }
}

/// What a broker's blocks in the capture say of its producer-id manager.
#[derive(Debug, Clone)]
struct Broker {
    blocks: u64,
    first: BlockRef,
    /// The latest [`RECENT_PER_BROKER`] blocks, oldest first: never empty.
    recent: VecDeque<BlockRef>,
    /// By block start: the first grant answered from that block.
    first_grants: BTreeMap<i64, FirstGrant>,
}

impl Broker {
    fn newest(&self) -> Option<BlockRef> {
        self.recent.back().copied()
    }
}

/// A grant to place: what the analysis knows of it.
#[derive(Debug, Clone, Copy)]
pub struct Grant<'a> {
    pub producer_id: i64,
    pub epoch: i16,
    /// `Some(None)` for an idempotent producer; `None` when the request was not read
    /// (then a grant at a bumped epoch may be a transactional id's kept one).
    pub transactional_id: Option<Option<&'a str>>,
    pub request: &'a MessageMeta,
    pub response: &'a MessageMeta,
}

impl Grant<'_> {
    /// An idempotent producer's grant: a fresh id its broker's manager drew while it
    /// handled this very request.
    fn idempotent(&self) -> bool {
        self.transactional_id == Some(None)
    }

    /// A transactional id back with a bumped epoch: an id it held before. Kafka grants
    /// an idempotent producer epoch 0 always, so a bumped epoch whose request was not
    /// read is one too.
    fn kept(&self) -> bool {
        self.epoch > 0 && !self.idempotent()
    }
}

/// The blocks of the capture, per broker, and where grants lie among them.
#[derive(Debug)]
pub struct Blocks {
    /// Blocks by (start, response frame): the latest `max_blocks`.
    blocks: NearlySorted<(i64, u64), BlockRef>,
    /// Their keys, oldest first.
    order: VecDeque<(i64, u64)>,
    max_blocks: usize,
    /// Per broker, the ids of the blocks forgotten to stay within `max_blocks`.
    forgotten: BTreeMap<i32, (i64, i64)>,
    /// The blocks of `blocks` by their last id's distance from their first (how many
    /// of each), to bound searches by start by the longest of them: a long block no
    /// longer widens them once forgotten.
    spans: BTreeMap<i64, u32>,
    brokers: BTreeMap<i32, Broker>,
    /// Whether a broker past [`MAX_BROKERS`] was granted a block: a broker without blocks
    /// may then be one, not one whose blocks came before the capture.
    unfollowed: bool,
    /// By the broker asking; `None`: a request whose broker id was not read, which may
    /// be any broker's.
    asking: BTreeMap<Option<i32>, Asking>,
    /// Whether a broker past [`MAX_BROKERS`] asked: one not in `asking` may then have
    /// asked for the block that holds its grant.
    asking_full: bool,
    /// How far apart two files' clocks may be (`--clock-skew`).
    clock_skew_ns: i128,
    /// Kept blocks looked at by [`Self::holding`], for the tests of its bound.
    #[cfg(test)]
    searched: std::cell::Cell<usize>,
}

/// The latest blocks granted before a grant that hold its id: of any broker, and of the
/// broker asked about.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    any: Option<BlockRef>,
    own: Option<BlockRef>,
}

/// More kept blocks could hold an id than [`MAX_SEARCHED_PER_GRANT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NotSearched;

impl Blocks {
    pub fn new(max_blocks: usize, clock_skew_ns: u64) -> Self {
        Self {
            blocks: NearlySorted::default(),
            order: VecDeque::new(),
            max_blocks: max_blocks.max(1),
            forgotten: BTreeMap::new(),
            unfollowed: false,
            spans: BTreeMap::new(),
            brokers: BTreeMap::new(),
            asking: BTreeMap::new(),
            asking_full: false,
            clock_skew_ns: i128::from(clock_skew_ns),
            #[cfg(test)]
            searched: std::cell::Cell::new(0),
        }
    }

    pub fn set_clock_skew(&mut self, clock_skew_ns: u64) {
        self.clock_skew_ns = i128::from(clock_skew_ns);
    }

    /// `broker` asked for a block in the request of `frame`.
    pub fn asked(&mut self, broker: Option<i32>, frame: u64) {
        // room for the requests whose broker id was not read, beside the brokers
        if self.asking.len() > MAX_BROKERS && !self.asking.contains_key(&broker) {
            self.asking_full = true;
            return;
        }
        let asking = self.asking.entry(broker).or_default();
        asking.awaited.insert(frame);
        if asking.awaited.len() > MAX_AWAITED {
            // the oldest: an answer that long awaited was lost, as far as grants go
            let oldest = asking.awaited.pop_first();
            asking.not_read = asking.not_read.or(oldest);
        }
    }

    /// The request of `frame` by `broker` ended (`read`: its answer read whole).
    pub fn answered(&mut self, broker: Option<i32>, frame: u64, read: bool) {
        let Some(asking) = self.asking.get_mut(&broker) else {
            return;
        };
        asking.awaited.remove(frame);
        if !read {
            asking.not_read = Some(asking.not_read.map_or(frame, |f| f.min(frame)));
        }
    }

    /// Why a block of `broker` the capture does not show may hold a grant answered in
    /// `frame`.
    fn unseen_block(&self, broker: i32, frame: u64) -> Option<UnknownWhy> {
        if self.asking_full && !self.asking.contains_key(&Some(broker)) {
            // what it asked for was not followed
            return Some(UnknownWhy::NotFollowed);
        }
        [Some(broker), None].iter().find_map(|key| {
            let asking = self.asking.get(key)?;
            if let Some(asked) = asking.awaited.first_before(frame) {
                return Some(UnknownWhy::AnswerAwaited(asked));
            }
            asking
                .not_read
                .filter(|f| *f < frame)
                .map(UnknownWhy::AnswerNotRead)
        })
    }

    /// A block granted in the capture. Returns whether its broker is the first past
    /// [`MAX_BROKERS`], whose blocks are not followed per broker (but still hold ids).
    pub fn add(&mut self, r: BlockRef) -> bool {
        let key = (r.start, r.response_frame);
        match self.blocks.insert(key, r) {
            Some(replaced) => self.unspan(replaced),
            None => self.order.push_back(key),
        }
        *self.spans.entry(r.end.saturating_sub(r.start)).or_default() += 1;
        if self.blocks.len() > self.max_blocks {
            let oldest = self.order.pop_front();
            if let Some(old) = oldest.and_then(|key| self.blocks.remove(&key)) {
                self.unspan(old);
                self.forget(old);
            }
        }
        if self.brokers.len() >= MAX_BROKERS && !self.brokers.contains_key(&r.broker_id) {
            return !std::mem::replace(&mut self.unfollowed, true);
        }
        let broker = self.brokers.entry(r.broker_id).or_insert(Broker {
            blocks: 0,
            first: r,
            recent: VecDeque::new(),
            first_grants: BTreeMap::new(),
        });
        broker.blocks += 1;
        broker.recent.push_back(r);
        if broker.recent.len() > RECENT_PER_BROKER {
            broker.recent.pop_front();
        }
        broker.first = if r.start < broker.first.start {
            r
        } else {
            broker.first
        };
        false
    }

    /// `old` is no longer in `blocks`.
    fn unspan(&mut self, old: BlockRef) {
        let span = old.end.saturating_sub(old.start);
        if let Some(count) = self.spans.get_mut(&span) {
            *count -= 1;
            if *count == 0 {
                self.spans.remove(&span);
            }
        }
    }

    /// The longest block's last id's distance from its first, of those remembered: none
    /// starts further below an id it holds.
    fn longest(&self) -> i64 {
        self.spans.last_key_value().map_or(0, |(span, _)| *span)
    }

    /// A block no longer remembered whole: its broker remembers the ids it spanned, and
    /// forgets its first grant (only a remembered block is compared with it).
    fn forget(&mut self, old: BlockRef) {
        let Some(broker) = self.brokers.get_mut(&old.broker_id) else {
            return; // not followed: its grants are unknown anyway
        };
        broker.first_grants.remove(&old.start);
        let range = self
            .forgotten
            .entry(old.broker_id)
            .or_insert((old.start, old.end));
        *range = (range.0.min(old.start), range.1.max(old.end));
    }

    /// How many blocks `broker` was granted in the capture so far, and the newest.
    pub fn seen(&self, broker: i32) -> (u64, Option<BlockRef>) {
        self.brokers
            .get(&broker)
            .map_or((0, None), |b| (b.blocks, b.newest()))
    }

    /// The latest block granted before `frame` holding `id`, of any broker and of
    /// `broker`, in one walk of the kept blocks that may hold it; `Err` when there are
    /// more than [`MAX_SEARCHED_PER_GRANT`]: whichever order they are walked in, one not
    /// looked at may hold it and be the latest.
    fn holding(&self, id: i64, frame: u64, broker: Option<i32>) -> Result<Held, NotSearched> {
        let lowest = id.saturating_sub(self.longest());
        let mut held = Held::default();
        let candidates = self.blocks.range((lowest, 0), (id, u64::MAX));
        for (searched, (_, b)) in candidates.enumerate() {
            if searched == MAX_SEARCHED_PER_GRANT {
                return Err(NotSearched);
            }
            #[cfg(test)]
            self.searched.set(self.searched.get() + 1);
            if !b.holds(id) || b.response_frame >= frame {
                continue;
            }
            // the last of equal frames, in key order, as `max_by_key` keeps it
            let later =
                |kept: Option<BlockRef>| kept.is_none_or(|k| b.response_frame >= k.response_frame);
            if later(held.any) {
                held.any = Some(*b);
            }
            if broker == Some(b.broker_id) && later(held.own) {
                held.own = Some(*b);
            }
        }
        Ok(held)
    }

    /// Where a grant lies that kept the producer id its request named, bumping the
    /// epoch (EndTxn): never judged, Kafka keeps the id wherever it was drawn. With the
    /// search cut short `unknown`: an `epoch_bump` without a block says none of the
    /// capture holds the id.
    pub fn bumped(&self, grant: &Grant<'_>) -> Placement {
        match self.holding(grant.producer_id, grant.response.frame, None) {
            Ok(held) => Placement::EpochBump(held.any),
            Err(NotSearched) => Placement::Unknown(UnknownWhy::BlocksNotSearched),
        }
    }

    /// Where `grant` lies, answered by `broker` when known.
    pub fn place(&mut self, grant: &Grant<'_>, broker: Option<i32>) -> Placement {
        let (id, frame) = (grant.producer_id, grant.response.frame);
        // Every answer below rests on the latest blocks holding the id: with some not
        // looked at, an own block among them would make any of them wrong (a fault
        // above all, `another_brokers_block`).
        let Ok(held) = self.holding(id, frame, broker) else {
            return Placement::Unknown(UnknownWhy::BlocksNotSearched);
        };
        let Some(broker_id) = broker else {
            // the block that holds it names a broker that may have granted it; no fault
            // is judged on a guess
            return match held.any {
                Some(held) => self.among_own(grant, held, false),
                None => Placement::Unknown(UnknownWhy::BrokerUnknown),
            };
        };
        if let Some(own) = held.own {
            return self.among_own(grant, own, true);
        }
        if grant.kept() {
            return Placement::KeptByTransactionalId(held.any);
        }
        if let Some(other) = held.any {
            return Placement::AnotherBrokersBlock { other };
        }
        if self
            .forgotten
            .get(&broker_id)
            .is_some_and(|(start, end)| (*start..=*end).contains(&id))
        {
            return Placement::Unknown(UnknownWhy::Forgotten);
        }
        if self.unfollowed && !self.brokers.contains_key(&broker_id) {
            return Placement::Unknown(UnknownWhy::NotFollowed);
        }
        let Some(b) = self
            .brokers
            .get(&broker_id)
            .filter(|b| b.first.response_frame < frame)
        else {
            return Placement::BeforeCapture;
        };
        if id > b.first.start {
            if let Some(why) = self.unseen_block(broker_id, frame) {
                return Placement::Unknown(why);
            }
            return Placement::OutsideBlocks {
                blocks: b.blocks,
                last: b.newest().unwrap_or(b.first),
            };
        }
        // below its first block: the block it held before the capture
        let first = b.first;
        let left = match grant.idempotent() {
            true => self.left_for_newer(grant, broker_id, i64::MIN),
            false => None,
        };
        match left {
            Some((newer, newer_grant)) => Placement::OlderBlock {
                held: None,
                newer,
                newer_grant,
            },
            None => Placement::PreviousBlock {
                held: None,
                newer: first,
            },
        }
    }

    /// A grant from `held`, a block of its broker's (`known`: the broker answered, not
    /// guessed from the block).
    fn among_own(&mut self, grant: &Grant<'_>, held: BlockRef, known: bool) -> Placement {
        let frame = grant.response.frame;
        let Some(newest) = self.newest_before(held.broker_id, frame) else {
            return Placement::InBlock(held);
        };
        if newest.start <= held.start {
            if grant.idempotent() {
                self.note_first_grant(held, grant);
            }
            return Placement::InBlock(held);
        }
        if grant.kept() {
            return Placement::KeptByTransactionalId(Some(held));
        }
        if known && grant.idempotent() {
            if let Some((newer, newer_grant)) =
                self.left_for_newer(grant, held.broker_id, held.start)
            {
                return Placement::OlderBlock {
                    held: Some(held),
                    newer,
                    newer_grant,
                };
            }
        }
        Placement::PreviousBlock {
            held: Some(held),
            newer: newest,
        }
    }

    /// The newest block of `broker` granted before `frame`.
    fn newest_before(&self, broker: i32, frame: u64) -> Option<BlockRef> {
        // blocks arrive in the order of their responses: the latest before `frame` is
        // among the last few (none found: the grant is taken as from its own block)
        let b = self.brokers.get(&broker)?;
        b.recent
            .iter()
            .rev()
            .find(|r| r.response_frame < frame)
            .copied()
    }

    fn note_first_grant(&mut self, held: BlockRef, grant: &Grant<'_>) {
        let Some(b) = self.brokers.get_mut(&held.broker_id) else {
            return;
        };
        let first = FirstGrant {
            at: grant.response.at(),
            producer_id: grant.producer_id,
        };
        let entry = b.first_grants.entry(held.start).or_insert(first);
        if first.at.frame < entry.at.frame {
            *entry = first;
        }
        if b.first_grants.len() > MAX_FIRST_GRANTS {
            b.first_grants.pop_first();
        }
    }

    /// A block of `broker` newer than the one starting at `held_start` that the broker
    /// had provably granted from before `grant` was requested: its first grant was
    /// answered before the request arrived (by more than the clock skew when the two
    /// packets come from different files).
    fn left_for_newer(
        &self,
        grant: &Grant<'_>,
        broker: i32,
        held_start: i64,
    ) -> Option<(BlockRef, FirstGrant)> {
        let b = self.brokers.get(&broker)?;
        let request = grant.request.at();
        let (&start, &first) = b
            .first_grants
            .range(held_start.saturating_add(1)..)
            .take(NEWER_CHECKED)
            .filter(|(_, g)| request.surely_after(&g.at, self.clock_skew_ns))
            .min_by_key(|(_, g)| g.at.frame)?;
        let newer = self
            .blocks
            .range((start, 0), (start, u64::MAX))
            .map(|(_, r)| *r)
            .find(|r| r.broker_id == broker)?;
        Some((newer, first))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{Awaited, BlockRef, Blocks, Grant, Placement, UnknownWhy, MAX_SEARCHED_PER_GRANT};
    use crate::pairing::MessageMeta;

    /// A block of broker 1 granted in the response of `frame`.
    fn block(start: i64, end: i64, frame: u64) -> BlockRef {
        BlockRef {
            start,
            end,
            broker_id: 1,
            response_frame: frame,
        }
    }

    /// A block as long as a block can be, once forgotten, no longer widens the search
    /// for the block holding an id: every later grant would go through every block
    /// remembered.
    #[test]
    fn a_long_block_forgotten_no_longer_widens_the_search() {
        let mut blocks = Blocks::new(4, 0);
        let long = block(0, i64::from(i32::MAX) - 1, 1);
        blocks.add(long);
        assert_eq!(blocks.holding(7, 2, None).map(|h| h.any), Ok(Some(long)));
        assert_eq!(blocks.longest(), i64::from(i32::MAX) - 1);
        let above = 1i64 << 40;
        for k in 0..4u64 {
            let start = above + k as i64 * 1000;
            blocks.add(block(start, start + 999, 10 + k));
        }
        assert_eq!(
            blocks.holding(7, 100, None).map(|h| h.any),
            Ok(None),
            "forgotten"
        );
        assert_eq!(blocks.longest(), 999);
        assert_eq!(
            blocks.holding(above + 3500, 100, Some(1)).map(|h| h.own),
            Ok(Some(block(above + 3000, above + 3999, 13)))
        );
        // a block in the place of another (same first id and frame) counts once
        blocks.add(block(above + 3000, above + 3009, 13));
        assert_eq!(blocks.longest(), 999);
        for k in 0..3u64 {
            blocks.add(block(
                above + 10_000 + k as i64,
                above + 10_000 + k as i64,
                20 + k,
            ));
        }
        assert_eq!(blocks.longest(), 9, "{:?}", blocks.spans);
    }

    fn meta(frame: u64) -> MessageMeta {
        MessageMeta {
            frame,
            first_frame: frame,
            timestamp: crate::timestamp::Timestamp::default(),
            size: 40,
            origin: None,
        }
    }

    /// `blocks` blocks all granting ids 0..=999, answered in frames 10 on: broker 2's,
    /// but for the one in the middle, broker 1's (so that a walk by first id cut short
    /// meets it from neither end, past twice the blocks searched).
    fn the_same_ids_granted(blocks: usize) -> Blocks {
        let mut kept = Blocks::new(blocks + 1, 0);
        for k in 0..blocks {
            let broker_id = if k == blocks / 2 { 1 } else { 2 };
            kept.add(BlockRef {
                broker_id,
                ..block(0, 999, 10 + k as u64)
            });
        }
        kept
    }

    /// A hostile capture granting the same ids in more blocks than a grant's search
    /// looks at: each grant holding one of them looks at [`MAX_SEARCHED_PER_GRANT`]
    /// blocks at most (every kept block, three times, took hours over a million
    /// grants), and is placed `unknown`, never guessed: not `another_brokers_block`,
    /// which its broker's own block among those not looked at would make false.
    #[test]
    fn a_grant_in_more_blocks_than_are_searched_is_unknown_after_a_bounded_search() {
        let blocks = the_same_ids_granted(2 * MAX_SEARCHED_PER_GRANT + 100);
        let (request, response) = (meta(99_999), meta(100_000));
        let fresh = Grant {
            producer_id: 500,
            epoch: 0,
            transactional_id: Some(None),
            request: &request,
            response: &response,
        };
        let kept = Grant {
            epoch: 3,
            transactional_id: Some(Some("t")),
            ..fresh
        };
        let not_searched = Placement::Unknown(UnknownWhy::BlocksNotSearched);
        let mut blocks = blocks;
        for (grant, broker) in [
            (&fresh, Some(1)),
            (&fresh, Some(3)),
            (&fresh, None),
            (&kept, Some(1)),
            (&kept, Some(3)),
        ] {
            blocks.searched.set(0);
            assert_eq!(blocks.place(grant, broker), not_searched, "{broker:?}");
            assert!(blocks.searched.get() <= MAX_SEARCHED_PER_GRANT);
        }
        blocks.searched.set(0);
        assert_eq!(blocks.bumped(&kept), not_searched);
        assert!(blocks.searched.get() <= MAX_SEARCHED_PER_GRANT);
        let reason = not_searched.reason(Some(1)).unwrap_or_default();
        assert_eq!(
            reason,
            "more blocks of the capture could hold the id than the 1024 searched for a grant (analysis_limit): the latest holding it, broker 1's or another broker's, is not known"
        );
        // as many as are searched: each looked at, the grant placed
        let mut blocks = the_same_ids_granted(MAX_SEARCHED_PER_GRANT);
        let last = 10 + MAX_SEARCHED_PER_GRANT as u64 - 1;
        let own = block(0, 999, 10 + MAX_SEARCHED_PER_GRANT as u64 / 2);
        assert_eq!(blocks.place(&fresh, Some(1)), Placement::InBlock(own));
        let other = BlockRef {
            broker_id: 2,
            ..block(0, 999, last)
        };
        assert_eq!(
            blocks.place(&fresh, Some(3)),
            Placement::AnotherBrokersBlock { other }
        );
        assert_eq!(blocks.bumped(&kept), Placement::EpochBump(Some(other)));
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// A request this many frames past the last (0 and below: one before it).
        Ask(i8),
        /// The answer to the awaited request at this place, taken modulo their number.
        Answer(u8),
        /// The answer to a frame never asked about.
        AnswerUnknown(u16),
        DropOldest,
        FirstBefore(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<i8>().prop_map(Op::Ask),
            3 => any::<u8>().prop_map(Op::Answer),
            1 => any::<u16>().prop_map(Op::AnswerUnknown),
            1 => Just(Op::DropOldest),
            2 => any::<u16>().prop_map(Op::FirstBefore),
        ]
    }

    proptest! {
        /// Requests mostly in order but not always, answered in any order: the deque
        /// holds what a B-tree set would, and answers as it would.
        #[test]
        fn awaited_requests_are_kept_as_a_set_keeps_them(ops in proptest::collection::vec(op(), 0..200)) {
            let (mut awaited, mut set) = (Awaited::default(), BTreeSet::new());
            let mut last = 1_000u64;
            for op in ops {
                match op {
                    Op::Ask(step) => {
                        last = last.saturating_add_signed(i64::from(step)).max(1);
                        awaited.insert(last);
                        set.insert(last);
                    }
                    Op::Answer(at) => {
                        let frame = set.iter().nth(usize::from(at) % set.len().max(1)).copied();
                        if let Some(frame) = frame {
                            awaited.remove(frame);
                            set.remove(&frame);
                        }
                    }
                    Op::AnswerUnknown(frame) => {
                        let frame = u64::from(frame);
                        awaited.remove(frame);
                        set.remove(&frame);
                    }
                    Op::DropOldest => prop_assert_eq!(awaited.pop_first(), set.pop_first()),
                    Op::FirstBefore(frame) => {
                        let frame = 900 + u64::from(frame) % 400;
                        prop_assert_eq!(awaited.first_before(frame), set.range(..frame).next().copied());
                    }
                }
                prop_assert_eq!(awaited.len(), set.len());
                prop_assert!(awaited.0.iter().eq(set.iter()));
            }
        }
    }
}
