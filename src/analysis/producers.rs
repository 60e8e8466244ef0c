//! InitProducerId grants: each granted producer id placed among its broker's blocks as
//! Kafka's producer-id manager uses them (`analysis::placement`), the same id and epoch
//! granted to two producers, and the producers that hold ids a block overlap covers.
//!
//! In: the blocks the capture shows granted, then InitProducerId exchanges, in the order
//! they complete. Memory is bounded: [`MAX_TRACKED_BLOCKS`] blocks, past which the oldest
//! are forgotten and the report says so. The granted ids' holders are charged at what
//! they take against their share of `--max-memory` ([`share_of`]): past it, those of the
//! lowest ids are forgotten until three quarters of it is held (`analysis_limit`, table
//! `grant_memory`, said once; each forgotten counted in `grants_forgotten`). The share is
//! their only bound, so that no grant is forgotten without the report saying so.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use schemars::JsonSchema;
use serde::Serialize;

use super::kept_id::KeptId;
use super::placement::{
    BlockRef, Blocks, Grant, Placement, PlacementName, UnknownWhy, MAX_SEARCHED_PER_GRANT,
};
use super::{Block, Finding, MAX_TRACKED_BLOCKS};
use crate::diag::obs;
use crate::diag::Observation;
use crate::heap::heap_cost;
use crate::kafka::decoded::Undecoded;
use crate::kafka::tables::ErrorCode;
use crate::kafka::tables::{error_counts, error_counts_schema};
use crate::pairing::{ApiExchange, GrantedBy, GrantsProducerIds, Outcome, Status};
use crate::timestamp::Timestamp;

/// Holders remembered per id and epoch: the first, and the next few who also got it.
const MAX_HOLDERS: usize = 4;

/// The granted ids' table's share of `--max-memory`: a sixteenth, the half of the
/// analysis's eighth ([`super::share_of`]) that the writes analysis does not hold.
pub const fn share_of(max_memory: usize) -> usize {
    super::share_of(max_memory).saturating_sub(super::writes::share_of(max_memory))
}

/// What an id and epoch's entry takes in the table's B-tree: its part of a leaf of 11
/// entries (every leaf but the root at least 5 full) and of the inner nodes above (each
/// with at least 6 children: at most one for every 5 leaves, over all levels).
const GRANT_ENTRY: usize = {
    let leaf = 11 * size_of::<((i64, i16), Holders)>() + 16;
    let inner = leaf + 12 * size_of::<usize>();
    heap_cost(leaf) / 5 + heap_cost(inner) / 25
};

/// What a list of holders of `capacity` takes on the heap.
const fn holders_heap(capacity: usize) -> usize {
    heap_cost(capacity * size_of::<Holder>())
}

/// What the granted ids' table is charged, and may be.
#[derive(Debug)]
struct Charge {
    /// Its share of `--max-memory`.
    max_bytes: usize,
    /// What the lists of holders and their transactional ids take; the entries are
    /// charged [`GRANT_ENTRY`] each.
    holders: usize,
    /// Whether the share was found full: said once.
    said: bool,
}

/// What the analysis knows of an InitProducerId exchange.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placed {
    /// The broker that answered, when its address is known, and how it is known.
    pub broker: Option<(i32, super::AddressSource)>,
    /// Where the granted id lies; `None` when nothing was granted.
    pub placement: Option<Placement>,
    /// Why it lies there, in a sentence; none for `in_block`.
    pub reason: Option<String>,
    /// Response frame of the earlier grant of the same id and epoch to another producer.
    pub duplicate_of: Option<u64>,
}

/// One producer that was granted an id.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Holder {
    connection: u64,
    client: SocketAddr,
    /// `Some(None)` for an idempotent producer; `None` when its request was not read.
    transactional_id: Option<Option<KeptId>>,
    response_frame: u64,
}

impl Holder {
    /// Whether two grants surely went to different producers: other transactional ids,
    /// a transactional and an idempotent one, or idempotent ones on other connections.
    /// A holder whose request was not read may be anyone (a retried EndTxn is answered
    /// the same id and epoch again), so it is never surely another.
    fn surely_other(&self, other: &Self) -> bool {
        match (&self.transactional_id, &other.transactional_id) {
            (None, _) | (_, None) => false,
            (Some(Some(a)), Some(Some(b))) => a.differs(b),
            (Some(None), Some(None)) => self.connection != other.connection,
            _ => true,
        }
    }

    /// Whether two grants surely went to the same producer: the same transactional id,
    /// or the same connection of an idempotent producer.
    fn surely_same(&self, other: &Self) -> bool {
        match (&self.transactional_id, &other.transactional_id) {
            (Some(Some(a)), Some(Some(b))) => !a.differs(b),
            (Some(None), Some(None)) => self.connection == other.connection,
            _ => false,
        }
    }

    /// The holder's transactional id, when it has one and it was read.
    fn transactional_id(&self) -> Option<&KeptId> {
        self.transactional_id.as_ref().and_then(Option::as_ref)
    }
}

/// The producers granted one id at one epoch.
#[derive(Debug, Clone, Default)]
struct Holders {
    /// The first, and the next few who also got it, surely not one of those before.
    kept: Vec<Holder>,
    /// The hosts of the holders let go that may be producers other than those kept:
    /// one past [`MAX_HOLDERS`], one whose request was not read, with others there,
    /// or one kept so until a holder whose request was read came (either may have
    /// been the other). None (no room taken) unless one was.
    let_go: Option<Box<HostSet>>,
}

impl Holders {
    /// What they take on the heap: the list's room, and the hosts let go.
    fn heap(&self) -> usize {
        holders_heap(self.kept.capacity())
            + self.let_go.as_ref().map_or(0, |set| {
                heap_cost(size_of::<HostSet>()) + heap_cost(set.0.capacity() * size_of::<IpAddr>())
            })
    }
}

/// Whether an epoch-bumping grant (EndTxn) of `id` at `epoch` kept its producer's id.
/// Kafka (`TransactionMetadata.prepareAbortOrCommit` and `prepareComplete`) keeps the id
/// and bumps the epoch, or, the epoch used up, draws a new id at epoch 0; so when the
/// request's id was not read, a grant above epoch 0 kept it.
fn keeps_id(requested: Option<i64>, (id, epoch): (i64, i16)) -> bool {
    requested.map_or(epoch > 0, |requested| requested == id)
}

/// Distinct client hosts an overlap's finding names; the others are counted.
pub const HOSTS_LISTED: usize = 16;
/// Distinct client hosts counted exactly; past them, "at least" one more.
pub const HOSTS_COUNTED: usize = 64;

/// Producers holding ids of one overlap, for its finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affected {
    /// Producers holding an id of the overlap, and their distinct client hosts.
    pub producers: u64,
    /// Whether `producers` is a floor: some holders of an id were not told apart.
    pub producers_at_least: bool,
    pub hosts: Hosts,
    /// The lowest id of the overlap held, by how many producers (a floor when
    /// `holders_of_id_at_least`), and their distinct client hosts.
    pub producer_id: i64,
    pub holders_of_id: u64,
    pub holders_of_id_at_least: bool,
    pub id_hosts: Hosts,
}

impl Affected {
    /// What the overlap's message adds: `2 producers on 10.0.3.7 and 10.0.3.9 hold
    /// producer id 5000`, the holders of its lowest id held; and when the producers
    /// holding its other ids sit on other hosts too, the overlap's totals, so that the
    /// hosts named are those of the producers they are said to be.
    pub fn sentence(&self) -> String {
        let (s, verb) = plural(self.holders_of_id);
        let mut sentence = format!(
            "{}{} producer{s} on {} {verb} producer id {}",
            at_least(self.holders_of_id_at_least),
            self.holders_of_id,
            self.id_hosts.and_list(),
            self.producer_id
        );
        // the id's hosts are among the overlap's: told apart by their count, unless
        // both are past the count
        if self.hosts.count > self.id_hosts.count || self.hosts.at_least {
            let (s, verb) = plural(self.producers);
            sentence.push_str(&format!(
                "; {}{} producer{s} on {} {verb} ids of the overlap",
                at_least(self.producers_at_least),
                self.producers,
                self.hosts.and_list()
            ));
        }
        sentence
    }
}

/// `at least ` before a count that is a floor.
fn at_least(floor: bool) -> &'static str {
    if floor {
        "at least "
    } else {
        ""
    }
}

/// The noun's ending and the verb for `n` producers.
fn plural(n: u64) -> (&'static str, &'static str) {
    match n {
        1 => ("", "holds"),
        _ => ("s", "hold"),
    }
}

/// Distinct client hosts of some producers, as a finding names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosts {
    /// The lowest [`HOSTS_LISTED`] addresses, in the order of their text.
    pub listed: Vec<String>,
    /// How many there are: exact up to [`HOSTS_COUNTED`]; past it, one more and
    /// `at_least`.
    pub count: u64,
    pub at_least: bool,
}

impl Hosts {
    fn of(set: &HostSet) -> Self {
        let mut listed: Vec<String> = (set.0.iter().take(HOSTS_LISTED))
            .map(ToString::to_string)
            .collect();
        listed.sort();
        Self {
            listed,
            count: set.0.len() as u64,
            at_least: set.0.len() > HOSTS_COUNTED,
        }
    }

    /// `a`, `a and b`, `a, b and c`, and past those listed `a, b and 3 other hosts`.
    pub fn and_list(&self) -> String {
        match self.unlisted() {
            None => super::and_list(&self.listed),
            Some(more) => format!("{}{more}", self.listed.join(", ")),
        }
    }

    /// ` and 3 other hosts`, ` and at least 49 other hosts`: those not listed, if any.
    pub fn unlisted(&self) -> Option<String> {
        let more = self.count.saturating_sub(self.listed.len() as u64);
        let at_least = if self.at_least { "at least " } else { "" };
        let s = if more == 1 { "" } else { "s" };
        (more > 0).then(|| format!(" and {at_least}{more} other host{s}"))
    }
}

/// Distinct addresses, the lowest [`HOSTS_COUNTED`] and one more kept in order: a
/// union's are the lowest of the lowest of its parts, and a set holding one more than
/// [`HOSTS_COUNTED`] has at least that many.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct HostSet(Vec<IpAddr>);

impl HostSet {
    const KEPT: usize = HOSTS_COUNTED + 1;

    fn insert(&mut self, ip: IpAddr) {
        if let Err(at) = self.0.binary_search(&ip) {
            if at < Self::KEPT {
                self.0.insert(at, ip);
                self.0.truncate(Self::KEPT);
            }
        }
    }

    /// Adds `other`'s, merging the two orders: at most [`Self::KEPT`] steps.
    fn union(&mut self, other: &Self) {
        if other.0.is_empty() {
            return;
        }
        let mut merged = Vec::with_capacity(Self::KEPT);
        let (mut a, mut b) = (self.0.iter().peekable(), other.0.iter().peekable());
        while merged.len() < Self::KEPT {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x < y => a.next(),
                (Some(x), Some(y)) if y < x => b.next(),
                (Some(_), Some(_)) => {
                    b.next();
                    a.next()
                }
                (Some(_), None) => a.next(),
                (None, _) => b.next(),
            };
            let Some(ip) = next else { break };
            merged.push(*ip);
        }
        self.0 = merged;
    }
}

/// The producers holding ids of a stretch of ids that no overlap's bounds cut: the
/// holders of its lowest id apart.
#[derive(Debug, Clone, Default)]
struct Piece {
    /// How many hold its ids, a floor when `at_least`.
    producers: Count,
    hosts: HostSet,
    first: Option<(i64, Count, HostSet)>,
}

/// Producers counted, and whether that is a floor.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    n: u64,
    at_least: bool,
}

impl Count {
    fn add(&mut self, other: Self) {
        self.n += other.n;
        self.at_least |= other.at_least;
    }
}

impl Piece {
    /// A holder of `id`: its host counted.
    fn holder(&mut self, id: i64, h: &Holder) {
        self.hosts.insert(h.client.ip());
        let (first_id, _, hosts) = self.first_of(id);
        if first_id == id {
            hosts.insert(h.client.ip());
        }
    }

    /// Holders of `id` on `hosts`.
    fn hosts(&mut self, id: i64, hosts: &HostSet) {
        self.hosts.union(hosts);
        let (first_id, _, of_id) = self.first_of(id);
        if first_id == id {
            of_id.union(hosts);
        }
    }

    /// `n` producers hold `id`.
    fn producers(&mut self, id: i64, n: Count) {
        self.producers.add(n);
        let (first_id, count, _) = self.first_of(id);
        if first_id == id {
            count.add(n);
        }
    }

    fn first_of(&mut self, id: i64) -> (i64, &mut Count, &mut HostSet) {
        let (first_id, count, hosts) =
            (self.first).get_or_insert_with(|| (id, Count::default(), HostSet::default()));
        (*first_id, count, hosts)
    }
}

/// Producers told apart per id, at most (a hostile capture has more): past them, one
/// more surely other than each of them is counted, and the count is a floor.
const PRODUCERS_TOLD_APART: usize = 64;

/// The producers holding one id, over its epochs: a holder is another producer only
/// when it is surely other than each one counted, so a transactional producer whose
/// epoch is bumped at every transaction's end (transactions v2) counts once. A holder
/// whose request was not read may be any producer, counted or not: it makes the count
/// a floor (compared with the others, it would be surely other than none of them and
/// hide every one after it).
#[derive(Debug, Default)]
struct Distinct<'a> {
    id: Option<i64>,
    /// Which piece the id's ids fall in.
    piece: Option<usize>,
    told_apart: Vec<&'a Holder>,
    /// Whether a holder surely other than each of those told apart came past
    /// [`PRODUCERS_TOLD_APART`] of them: not kept, it could not be told from the
    /// next such, so neither is counted beyond it.
    more: bool,
    /// Whether a holder may be a producer not counted: its request was not read, or
    /// it was let go ([`Holders::let_go`]).
    untold: bool,
}

impl<'a> Distinct<'a> {
    /// The holders of the id at one epoch.
    fn add_all(&mut self, holders: &'a Holders) {
        self.untold |= holders.let_go.is_some();
        for h in &holders.kept {
            self.add(h);
        }
    }

    fn add(&mut self, h: &'a Holder) {
        if h.transactional_id.is_none() {
            self.untold = true;
            return;
        }
        if self.told_apart.iter().all(|other| h.surely_other(other)) {
            match self.told_apart.len() < PRODUCERS_TOLD_APART {
                true => self.told_apart.push(h),
                false => self.more = true,
            }
        }
    }

    /// How many producers hold the id: exact up to [`PRODUCERS_TOLD_APART`], past them
    /// one more, at least; at least one when none was told apart (every holder's
    /// request not read).
    fn count(&self) -> Count {
        let told = self.told_apart.len() as u64 + u64::from(self.more);
        Count {
            n: told.max(u64::from(self.untold)),
            at_least: self.more || self.untold,
        }
    }
}

/// Counts over every InitProducerId exchange of the capture (whatever the filters).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, JsonSchema)]
pub struct ProducerIdCounts {
    pub exchanges: u64,
    pub complete: u64,
    pub unanswered: u64,
    pub response_unknown: u64,
    /// Responses with error NONE and a producer id.
    pub granted: u64,
    /// Responses with an error.
    pub errors: u64,
    /// Responses read whole by error name, `NONE` included.
    #[serde(serialize_with = "error_counts")]
    #[schemars(schema_with = "error_counts_schema")]
    pub error_codes: BTreeMap<ErrorCode, u64>,
    /// Granted ids by `placement` (see `producer_ids.entries[].placement`).
    pub in_block: u64,
    pub previous_block: u64,
    pub before_capture: u64,
    pub kept_by_transactional_id: u64,
    pub epoch_bump: u64,
    pub another_brokers_block: u64,
    pub older_block: u64,
    pub outside_blocks: u64,
    pub unknown: u64,
    /// Grants of an id and epoch another producer was granted before
    /// (`pid_duplicate_grant`).
    pub duplicates: u64,
    /// Granted ids forgotten to bound memory: duplicates among them are not found.
    pub grants_forgotten: u64,
    /// Exchanges whose broker is not known: no message read maps its address to a broker
    /// id, so their grants are placed in any broker's block and none is judged a fault.
    pub broker_unknown: u64,
}

impl ProducerIdCounts {
    /// Granted ids placed as `name`.
    pub fn placed(&self, name: PlacementName) -> u64 {
        match name {
            PlacementName::InBlock => self.in_block,
            PlacementName::PreviousBlock => self.previous_block,
            PlacementName::BeforeCapture => self.before_capture,
            PlacementName::KeptByTransactionalId => self.kept_by_transactional_id,
            PlacementName::EpochBump => self.epoch_bump,
            PlacementName::AnotherBrokersBlock => self.another_brokers_block,
            PlacementName::OlderBlock => self.older_block,
            PlacementName::OutsideBlocks => self.outside_blocks,
            PlacementName::Unknown => self.unknown,
        }
    }

    fn placed_mut(&mut self, name: PlacementName) -> &mut u64 {
        match name {
            PlacementName::InBlock => &mut self.in_block,
            PlacementName::PreviousBlock => &mut self.previous_block,
            PlacementName::BeforeCapture => &mut self.before_capture,
            PlacementName::KeptByTransactionalId => &mut self.kept_by_transactional_id,
            PlacementName::EpochBump => &mut self.epoch_bump,
            PlacementName::AnotherBrokersBlock => &mut self.another_brokers_block,
            PlacementName::OlderBlock => &mut self.older_block,
            PlacementName::OutsideBlocks => &mut self.outside_blocks,
            PlacementName::Unknown => &mut self.unknown,
        }
    }

    /// A response read whole with `code`: an error unless `NONE`.
    fn count_error(&mut self, code: ErrorCode) {
        *self.error_codes.entry(code).or_default() += 1;
        self.errors += u64::from(code.is_error());
    }

    fn add_status(&mut self, status: Status) {
        let count = match status {
            Status::Complete => &mut self.complete,
            Status::Unanswered => &mut self.unanswered,
            Status::ResponseUnknown => &mut self.response_unknown,
        };
        *count += 1;
    }

    /// The placements other than `in_block` that hold ids, each with its count and what
    /// it means in a few words, for the text and HTML reports.
    pub fn other_placements(&self) -> Vec<(u64, &'static str)> {
        [
            (
                self.previous_block,
                "from the block their broker held before its newest (Kafka's prefetch)",
            ),
            (
                self.before_capture,
                "from blocks granted before the capture",
            ),
            (self.kept_by_transactional_id, "kept by a transactional id"),
            (self.epoch_bump, "epoch bumps at a transaction's end"),
            (self.another_brokers_block, "in another broker's block"),
            (self.older_block, "from an older block after a newer one"),
            (self.outside_blocks, "outside their broker's blocks"),
            (self.unknown, "not placed (broker or blocks not known)"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .collect()
    }

    /// Grants Kafka's producer-id manager cannot have made (`pid_outside_blocks`).
    pub fn faulty_placements(&self) -> u64 {
        self.another_brokers_block + self.older_block + self.outside_blocks
    }
}

/// The producer side of the analysis.
#[derive(Debug)]
pub struct Tracker {
    blocks: Blocks,
    grants: BTreeMap<(i64, i16), Holders>,
    memory: Charge,
    /// InitProducerId's counts, and EndTxn's.
    pub totals: ProducerIdCounts,
    pub end_txn_totals: ProducerIdCounts,
    /// Whether a grant was placed `unknown` for more blocks that could hold it than are
    /// searched (said once).
    search_cut: bool,
    /// The highest id of the grants forgotten (past the share, lowest first):
    /// the holders of an id up to it may be more than those kept.
    forgotten_to: Option<i64>,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::new(MAX_TRACKED_BLOCKS, crate::copies::DEFAULT_CLOCK_SKEW_NS)
    }
}

impl Tracker {
    /// A tracker that remembers the latest `max_blocks` blocks (at least one), judging
    /// the order of packets of two files only past `clock_skew_ns`.
    pub fn new(max_blocks: usize, clock_skew_ns: u64) -> Self {
        Self {
            blocks: Blocks::new(max_blocks, clock_skew_ns),
            grants: BTreeMap::new(),
            memory: Charge {
                max_bytes: usize::MAX,
                holders: 0,
                said: false,
            },
            totals: ProducerIdCounts::default(),
            end_txn_totals: ProducerIdCounts::default(),
            search_cut: false,
            forgotten_to: None,
        }
    }

    pub fn set_clock_skew(&mut self, clock_skew_ns: u64) {
        self.blocks.set_clock_skew(clock_skew_ns);
    }

    /// Charges the granted ids' holders against `max_bytes` (see [`share_of`]).
    pub fn set_max_bytes(&mut self, max_bytes: usize) {
        self.memory.max_bytes = max_bytes;
    }

    /// What the granted ids' table is charged now.
    pub fn held_bytes(&self) -> usize {
        self.grants.len() * GRANT_ENTRY + self.memory.holders
    }

    /// `broker` (`None`: not read) asked for a block in the request of `frame`.
    pub fn asked(&mut self, broker: Option<i32>, frame: u64) {
        self.blocks.asked(broker, frame);
    }

    /// An AllocateProducerIds exchange ended: its request waits no more, and an answer
    /// the capture may hold unread may have granted a block.
    pub fn answered(&mut self, ex: &crate::pairing::Exchange) {
        let read = match &ex.outcome {
            // a block granted to a request whose broker id or epoch was not read is kept
            // by no tracker: its ids are as unknown as an answer not read
            Outcome::Complete { response, .. } => {
                response.problem.is_none()
                    && response.error_code.is_some()
                    && (response.error_code != Some(ErrorCode::NONE)
                        || (ex.request.broker_id.is_some() && ex.request.broker_epoch.is_some()))
            }
            // none came on this connection; Kafka's broker sends the request again,
            // maybe to a controller the capture does not watch
            Outcome::Unanswered | Outcome::ResponseUnknown => false,
        };
        self.blocks
            .answered(ex.request.broker_id, ex.request_meta.frame, read);
    }

    /// A block granted in the capture.
    pub fn block(&mut self, b: &Block, findings: &mut Vec<Finding>) {
        let first_unfollowed = self.blocks.add(BlockRef {
            start: b.start,
            end: b.end,
            broker_id: b.broker_id,
            response_frame: b.response_frame,
        });
        if first_unfollowed {
            let table = (
                obs::AnalysisTable::BlockBrokers,
                super::brokers::MAX_BROKERS,
            );
            let at = (Some(b.broker_id), Some(b.connection), b.timestamp);
            findings.push(Finding::analysis_limit(table, b.response_frame, at));
        }
    }

    /// One exchange of an API that grants producer ids (InitProducerId, EndTxn);
    /// `broker`: who answered, when known.
    pub fn add<A: GrantsProducerIds>(
        &mut self,
        ex: &ApiExchange<A>,
        broker: Option<(i32, super::AddressSource)>,
        findings: &mut Vec<Finding>,
    ) -> Placed {
        let totals = self.totals_mut(A::GRANTED_BY);
        totals.exchanges += 1;
        totals.broker_unknown += u64::from(broker.is_none());
        totals.add_status(ex.outcome.status());
        let mut placed = Placed {
            broker,
            ..Placed::default()
        };
        let Outcome::Complete { meta, response } = &ex.outcome else {
            return placed;
        };
        let (Some(code), Some(id), Some(epoch)) = A::granted(response) else {
            // read whole, an answer of a version that grants nothing (EndTxn before 5);
            // a cut one is not counted
            if let (Some(code), None) = (A::granted(response).0, response.problem()) {
                totals.count_error(code);
            }
            return placed;
        };
        totals.count_error(code);
        if code != ErrorCode::NONE || id < 0 {
            return placed;
        }
        totals.granted += 1;
        let transactional_id = A::transactional_id(&ex.request);
        let grant = Grant {
            producer_id: id,
            epoch,
            transactional_id,
            request: &ex.request_meta,
            response: meta,
        };
        let broker_id = broker.map(|(b, _)| b);
        let placement = match A::BUMPS_EPOCH && keeps_id(A::requested(&ex.request).0, (id, epoch)) {
            true => self.blocks.bumped(&grant),
            false => self.blocks.place(&grant, broker_id),
        };
        let reason = placement.reason(broker_id);
        let not_searched = Placement::Unknown(UnknownWhy::BlocksNotSearched);
        if placement == not_searched && !std::mem::replace(&mut self.search_cut, true) {
            let table = (obs::AnalysisTable::PlacementBlocks, MAX_SEARCHED_PER_GRANT);
            let at = (broker_id, Some(ex.endpoints.connection), meta.timestamp);
            findings.push(Finding::analysis_limit(table, meta.frame, at));
        }
        if let (Some(broker_id), true) = (broker_id, placement.is_fault()) {
            findings.push(self.fault(&placement, reason.as_deref(), broker_id, id, meta));
        }
        *self.totals_mut(A::GRANTED_BY).placed_mut(placement.name()) += 1;
        placed.placement = Some(placement);
        placed.reason = reason;
        let holder = Holder {
            connection: ex.endpoints.connection,
            client: ex.endpoints.client,
            transactional_id: transactional_id.map(|t| t.map(|t| self.kept(t, id))),
            response_frame: meta.frame,
        };
        // a text new to the table is charged once, whatever holders share it later
        let text = holder.transactional_id().map_or(0, KeptId::heap_alone);
        placed.duplicate_of = self.hold(
            (id, epoch),
            (holder, text),
            (meta.timestamp, A::GRANTED_BY),
            findings,
        );
        let at = (meta.frame, ex.endpoints.connection, meta.timestamp);
        self.keep_to_share(A::GRANTED_BY, at, findings);
        placed
    }

    /// The counts of grants by `api`.
    fn totals_mut(&mut self, api: GrantedBy) -> &mut ProducerIdCounts {
        match api {
            GrantedBy::InitProducerId => &mut self.totals,
            GrantedBy::EndTxn => &mut self.end_txn_totals,
        }
    }

    /// The finding of a grant Kafka's manager cannot have made.
    fn fault(
        &self,
        placement: &Placement,
        reason: Option<&str>,
        broker_id: i32,
        producer_id: i64,
        response: &crate::pairing::MessageMeta,
    ) -> Finding {
        let (blocks, last) = self.blocks.seen(broker_id);
        let what = Observation::PidOutsideBlocks(obs::PidOutsideBlocks {
            frame: response.frame,
            broker_id,
            producer_id,
            placement: placement.as_str(),
            reason: reason.unwrap_or_default(),
            blocks,
            last_start: last.map_or(-1, |b| b.start),
            last_end: last.map_or(-1, |b| b.end),
            block: placement.block().map(|b| (b.start, b.end, b.broker_id)),
        });
        let mut frames = vec![response.frame];
        frames.extend(placement.block().map(|b| b.response_frame));
        if let Placement::OlderBlock { newer_grant, .. } = placement {
            frames.push(newer_grant.at.frame);
        }
        let at = (Some(broker_id), None, response.timestamp);
        Finding::new(what, at, frames)
    }

    /// Remembers who holds `id` at `epoch`, charging what that takes (`text`: its
    /// transactional id's, when new); the frame of an earlier grant of it to another
    /// producer, with its finding.
    fn hold(
        &mut self,
        (id, epoch): (i64, i16),
        (holder, text): (Holder, usize),
        (at, api): (Timestamp, GrantedBy),
        findings: &mut Vec<Finding>,
    ) -> Option<u64> {
        let holders = self.grants.entry((id, epoch)).or_default();
        let earlier = holders
            .kept
            .iter()
            .find(|h| h.surely_other(&holder))
            .cloned();
        let before = holders.heap();
        let Holders { kept, let_go } = &mut *holders;
        let mut let_go_host = |h: &Holder| let_go.get_or_insert_default().insert(h.client.ip());
        let keep = |kept: &mut Vec<Holder>| {
            // room for those held only: most ids have one holder, and a first push
            // makes room for four (352 bytes, where one takes 88)
            kept.reserve_exact(1);
            kept.push(holder.clone());
            text
        };
        let mut charged = 0;
        if holder.transactional_id.is_some() {
            // a holder whose request was not read may have been this one, or another
            kept.retain(|h| {
                let read = h.transactional_id.is_some();
                if !read {
                    let_go_host(h);
                }
                read
            });
            if !kept.iter().any(|h| h.surely_same(&holder)) {
                match kept.len() < MAX_HOLDERS {
                    true => charged = keep(kept),
                    // surely another producer than those kept
                    false => let_go_host(&holder),
                }
            }
        } else if kept.is_empty() {
            charged = keep(kept);
        } else {
            // one of those kept, or another
            let_go_host(&holder);
        }
        let grown = holders.heap().saturating_sub(before);
        self.memory.holders += charged + grown;
        let earlier = earlier?;
        self.totals_mut(api).duplicates += 1;
        let (this, other) = (holder.transactional_id(), earlier.transactional_id());
        let (text, other_text) = (this.map(KeptId::text), other.map(KeptId::text));
        let what = Observation::PidDuplicateGrant(obs::PidDuplicateGrant {
            frame: holder.response_frame,
            producer_id: id,
            producer_epoch: epoch,
            client: holder.client,
            transactional_id: text.as_deref(),
            transactional_id_len: this.and_then(KeptId::cut_from),
            other_frame: earlier.response_frame,
            other_client: earlier.client,
            other_transactional_id: other_text.as_deref(),
            other_transactional_id_len: other.and_then(KeptId::cut_from),
        });
        let frames = vec![earlier.response_frame, holder.response_frame];
        let where_ = (None, Some(holder.connection), at);
        findings.push(Finding::new(what, where_, frames));
        Some(earlier.response_frame)
    }

    /// After a grant at `at` (frame, connection, time): forgets the lowest ids and epochs
    /// held past the share until three quarters of it is held, saying so the first time.
    /// A few additions a grant until then.
    fn keep_to_share(
        &mut self,
        api: GrantedBy,
        (frame, connection, at): (u64, u64, Timestamp),
        findings: &mut Vec<Finding>,
    ) {
        let max = self.memory.max_bytes;
        if self.held_bytes() <= max {
            return;
        }
        while self.held_bytes() > max - max / 4 && self.forget_first(api) {}
        if !self.memory.said {
            self.memory.said = true;
            let limit = (obs::AnalysisTable::GrantMemory, max);
            findings.push(Finding::analysis_limit(
                limit,
                frame,
                (None, Some(connection), at),
            ));
        }
    }

    /// Forgets the holders of the lowest id and epoch held, giving back what they took;
    /// whether there were any.
    fn forget_first(&mut self, api: GrantedBy) -> bool {
        let Some(((id, _), holders)) = self.grants.pop_first() else {
            return false;
        };
        self.forgotten_to = self.forgotten_to.max(Some(id));
        let mut freed = holders.heap();
        // each dropped in turn: a text another holder still shares is not given back
        for h in holders.kept {
            freed += h.transactional_id().map_or(0, KeptId::heap_alone);
        }
        self.memory.holders = self.memory.holders.saturating_sub(freed);
        self.totals_mut(api).grants_forgotten += 1;
        true
    }

    /// `transactional_id` as kept for a holder of `id`, sharing the text of the same id
    /// held at the same producer id before (a transactional producer keeps its id as
    /// its epoch is bumped, at every transaction's end with transactions v2).
    fn kept(&self, transactional_id: &str, id: i64) -> KeptId {
        let known = (self.grants.range((id, i16::MIN)..=(id, i16::MAX)).rev())
            .take(2)
            .flat_map(|(_, holders)| holders.kept.iter().filter_map(Holder::transactional_id));
        KeptId::like(transactional_id, known)
    }

    /// The producers holding ids of each of `spans` (`start..=end`), `None` for a span
    /// whose ids none holds. One walk of the grants kept, whatever the spans' lengths,
    /// then, for each span, one step per stretch of ids the spans' bounds cut: the work
    /// is bounded by the grants kept and the square of the spans' count, never their
    /// lengths, and the hosts kept per stretch by [`HOSTS_COUNTED`].
    pub fn affected(&self, spans: &[(i64, i64)]) -> Vec<Option<Affected>> {
        // the stretches between the bounds lie each wholly in or out of every span
        let mut bounds: Vec<i64> = (spans.iter())
            .flat_map(|&(start, end)| [Some(start), end.checked_add(1)])
            .flatten()
            .collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut pieces = vec![Piece::default(); bounds.len()];
        let (Some(&low), Some(high)) = (bounds.first(), spans.iter().map(|s| s.1).max()) else {
            return Vec::new();
        };
        let mut of_id = Distinct::default();
        let counted = |of_id: &Distinct<'_>, pieces: &mut Vec<Piece>| {
            let at = of_id.piece.and_then(|at| pieces.get_mut(at));
            if let (Some(piece), Some(id)) = (at, of_id.id) {
                piece.producers(id, of_id.count());
            }
        };
        for ((id, _), holders) in self.grants.range((low, i16::MIN)..) {
            if *id > high {
                break;
            }
            if of_id.id != Some(*id) {
                counted(&of_id, &mut pieces);
                let piece = bounds.partition_point(|b| b <= id).checked_sub(1);
                of_id = Distinct {
                    id: Some(*id),
                    piece,
                    ..Distinct::default()
                };
            }
            if let Some(piece) = of_id.piece.and_then(|at| pieces.get_mut(at)) {
                for h in &holders.kept {
                    piece.holder(*id, h);
                }
                if let Some(hosts) = &holders.let_go {
                    piece.hosts(*id, hosts);
                }
            }
            of_id.add_all(holders);
        }
        counted(&of_id, &mut pieces);
        let of = |&(start, end): &(i64, i64)| {
            let from = bounds.partition_point(|b| *b < start);
            let to = end
                .checked_add(1)
                .map_or(bounds.len(), |after| bounds.partition_point(|b| *b < after));
            let mut producers = Count::default();
            let mut hosts = HostSet::default();
            let mut first = None;
            for piece in pieces.get(from..to).unwrap_or_default() {
                producers.add(piece.producers);
                hosts.union(&piece.hosts);
                first = first.or(piece.first.as_ref());
            }
            let (producer_id, holders_of_id, id_hosts) = first?;
            // grants of ids up to the highest forgotten may be gone
            let forgotten = |id: i64| self.forgotten_to.is_some_and(|to| id <= to);
            Some(Affected {
                producers: producers.n,
                producers_at_least: producers.at_least || forgotten(start),
                hosts: Hosts::of(&hosts),
                producer_id: *producer_id,
                holders_of_id: holders_of_id.n,
                holders_of_id_at_least: holders_of_id.at_least || forgotten(*producer_id),
                id_hosts: Hosts::of(id_hosts),
            })
        };
        spans.iter().map(of).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Detail;
    use crate::diag::Kind;
    use crate::kafka::init_producer_id as init;
    use crate::pairing::ProducerIdExchange;
    use crate::pairing::{Endpoints, MessageMeta};

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

    /// A grant of `id` at `epoch` on `connection`, requested in `request` and answered in
    /// `frame`.
    fn grant_at(
        connection: u64,
        txn: Option<&str>,
        id: i64,
        epoch: i16,
        (request, frame): (u64, u64),
    ) -> ProducerIdExchange {
        ProducerIdExchange {
            endpoints: Endpoints {
                connection,
                client: format!("10.0.3.{connection}:5000").parse().unwrap(),
                server: "10.0.0.2:9092".parse().unwrap(),
            },
            correlation_id: 1,
            api_version: 4,
            request_meta: meta(request),
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

    fn grant(
        connection: u64,
        txn: Option<&str>,
        id: i64,
        epoch: i16,
        frame: u64,
    ) -> ProducerIdExchange {
        grant_at(connection, txn, id, epoch, (frame - 1, frame))
    }

    /// The producers holding ids in `start..=end`.
    fn held_in(t: &Tracker, start: i64, end: i64) -> Option<Affected> {
        t.affected(&[(start, end)]).pop().flatten()
    }

    const BROKER1: Option<(i32, crate::analysis::AddressSource)> =
        Some((1, crate::analysis::AddressSource::Metadata));
    const BROKER2: Option<(i32, crate::analysis::AddressSource)> =
        Some((2, crate::analysis::AddressSource::Metadata));

    fn names(t: &Tracker, placed: &[Placed]) -> Vec<&'static str> {
        let _ = t;
        placed
            .iter()
            .map(|p| p.placement.map_or("-", |p| p.as_str()))
            .collect()
    }

    #[test]
    fn a_broker_keeps_granting_from_its_block_after_the_next_arrives() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let mut placed = vec![t.add(&grant(1, None, 5950, 0, 10), BROKER1, &mut found)];
        t.block(&block(1, 7000, 20), &mut Vec::new());
        // the tail of the block held before the capture, then the new block
        placed.push(t.add(&grant(1, None, 5999, 0, 30), BROKER1, &mut found));
        placed.push(t.add(&grant(1, None, 7000, 0, 40), BROKER1, &mut found));
        t.block(&block(1, 9000, 50), &mut Vec::new());
        placed.push(t.add(&grant(1, None, 7999, 0, 60), BROKER1, &mut found));
        placed.push(t.add(&grant(1, None, 9000, 0, 70), BROKER1, &mut found));
        // asked before 9000 was answered, answered after it: two handler threads
        placed.push(t.add(&grant_at(2, None, 7998, 0, (69, 71)), BROKER1, &mut found));
        assert_eq!(
            names(&t, &placed),
            [
                "before_capture",
                "previous_block",
                "in_block",
                "previous_block",
                "in_block",
                "previous_block"
            ]
        );
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(placed[1].placement.unwrap().block(), None);
        assert_eq!(placed[3].placement.unwrap().block().unwrap().start, 7000);
        let reason = placed[3].reason.as_deref().unwrap();
        assert!(
            reason.starts_with(
                "from 7000..=7999, the block broker 1 held before 9000..=9999 arrived (frame 50)"
            ),
            "{reason}"
        );
        assert_eq!(placed[2].reason, None);
        assert_eq!(
            (
                t.totals.placed(PlacementName::InBlock),
                t.totals.placed(PlacementName::PreviousBlock)
            ),
            (2, 3)
        );
    }

    #[test]
    fn an_id_from_an_older_block_requested_after_a_newer_grant_is_a_fault() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(1, 7000, 20), &mut Vec::new());
        t.add(&grant(1, None, 7000, 0, 30), BROKER1, &mut found);
        t.block(&block(1, 8000, 40), &mut Vec::new());
        t.add(&grant(1, None, 8000, 0, 50), BROKER1, &mut found);
        let older = t.add(&grant_at(2, None, 7999, 0, (51, 52)), BROKER1, &mut found);
        assert_eq!(older.placement.map(|p| p.as_str()), Some("older_block"));
        // the block held before the capture, after 7000..7999 was granted from
        let before = t.add(&grant_at(3, None, 6500, 0, (53, 54)), BROKER1, &mut found);
        assert_eq!(before.placement.map(|p| p.as_str()), Some("older_block"));
        let kinds: Vec<_> = found.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["pid_outside_blocks", "pid_outside_blocks"]);
        assert_eq!(found[0].frames, [20, 50, 52]);
        assert!(found[0]
            .facts
            .contains(&("placement", "older_block".into())));
        // a transactional id's grant is never judged by order: its id may be older
        let txn = t.add(
            &grant_at(4, Some("tx"), 7990, 0, (55, 56)),
            BROKER1,
            &mut found,
        );
        assert_eq!(txn.placement.map(|p| p.as_str()), Some("previous_block"));
        assert_eq!(found.len(), 2);
    }

    #[test]
    fn an_id_in_another_brokers_block_or_beyond_its_own_is_a_fault() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(2, 0, 20), &mut Vec::new());
        t.block(&block(1, 1000, 21), &mut Vec::new());
        let inside = t.add(&grant(2, None, 5, 0, 30), BROKER2, &mut found);
        assert!(matches!(inside.placement, Some(Placement::InBlock(b)) if b.start == 0));
        let other = t.add(&grant(3, None, 1500, 0, 40), BROKER2, &mut found);
        assert_eq!(
            other.placement.map(|p| p.as_str()),
            Some("another_brokers_block")
        );
        let beyond = t.add(&grant(4, None, 3000, 0, 50), BROKER2, &mut found);
        assert_eq!(beyond.placement.map(|p| p.as_str()), Some("outside_blocks"));
        let unknown = t.add(&grant(5, None, 9000, 0, 60), None, &mut found);
        assert_eq!(unknown.placement.map(|p| p.as_str()), Some("unknown"));
        // a transactional id back with a bumped epoch keeps an id from anywhere
        let kept = t.add(&grant(6, Some("tx"), 1500, 3, 70), BROKER2, &mut found);
        assert_eq!(
            kept.placement.map(|p| p.as_str()),
            Some("kept_by_transactional_id")
        );
        let kinds: Vec<_> = found.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["pid_outside_blocks", "pid_outside_blocks"]);
        assert_eq!(found[0].facts[1], ("producer_id", 1500i64.into()));
        assert!(found[0].facts.contains(&("block_broker_id", 1i64.into())));
        assert!(
            found[0].message.contains("the block broker 1 was granted"),
            "{}",
            found[0].message
        );
        assert_eq!(t.totals.placed(PlacementName::OutsideBlocks), 1);
    }

    /// What the capture did not hold is never the ground of a fault: a bumped epoch whose
    /// request was not read (a transactional id's kept id, since Kafka grants idempotent
    /// producers epoch 0), and a request for a block whose broker id was not read (it may
    /// be this broker's).
    #[test]
    fn bytes_not_read_never_make_a_fault() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(2, 0, 20), &mut Vec::new());
        t.block(&block(1, 1000, 21), &mut Vec::new());
        let mut unread = grant(3, None, 1500, 3, 30);
        unread.request.transactional_id = None;
        let kept = t.add(&unread, BROKER2, &mut found);
        assert_eq!(
            kept.placement.map(|p| p.as_str()),
            Some("kept_by_transactional_id")
        );
        t.asked(None, 35);
        let beyond = t.add(&grant(4, None, 3000, 0, 40), BROKER2, &mut found);
        assert_eq!(beyond.placement.map(|p| p.as_str()), Some("unknown"));
        assert!(beyond.reason.unwrap().contains("(frame 35)"));
        assert!(found.is_empty(), "{found:?}");
    }

    /// A block granted to a request whose epoch was cut (the snaplen) is kept by no
    /// tracker: a grant from its ids is unknown, as from an answer not read, never
    /// outside its broker's blocks.
    #[test]
    fn a_grant_from_a_block_whose_request_was_cut_is_unknown_not_outside() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(2, 0, 20), &mut Vec::new());
        let mut cut = crate::analysis::test_support::exchange(3, 2, 5, Some((0, 1000, 1000, 1)));
        cut.request.broker_epoch = None;
        t.asked(Some(2), cut.request_meta.frame);
        t.answered(&cut);
        let grant = t.add(&grant(4, None, 1500, 0, 40), BROKER2, &mut found);
        assert_eq!(grant.placement.map(|p| p.as_str()), Some("unknown"));
        assert!(found.is_empty(), "{found:?}");
    }

    /// Past [`MAX_BROKERS`](crate::analysis::brokers::MAX_BROKERS) brokers granted
    /// blocks, a new broker's blocks still hold ids, but a broker without a followed
    /// block is not said to hold one from before the capture: it may be one not followed.
    #[test]
    fn brokers_past_the_limit_are_unknown_not_before_the_capture() {
        use crate::analysis::brokers::MAX_BROKERS;
        let mut t = Tracker::default();
        let mut found = Vec::new();
        for broker in 0..MAX_BROKERS as i32 {
            t.block(&block(broker, i64::from(broker) * 1000, 10), &mut found);
        }
        assert!(found.is_empty(), "{found:?}");
        let past = MAX_BROKERS as i32;
        t.block(&block(past, i64::from(past) * 1000, 20), &mut found);
        t.block(&block(past + 1, i64::from(past + 1) * 1000, 21), &mut found);
        let kinds: Vec<_> = found.iter().map(|f| f.kind.as_str()).collect();
        assert_eq!(kinds, ["analysis_limit"]);
        assert_eq!(found[0].frames, [20]);
        let broker = |id| Some((id, crate::analysis::AddressSource::Metadata));
        let held = t.add(
            &grant(1, None, i64::from(past) * 1000 + 5, 0, 30),
            broker(past),
            &mut found,
        );
        assert!(matches!(held.placement, Some(Placement::InBlock(b)) if b.broker_id == past));
        let none = t.add(
            &grant(2, None, 9_000_000, 0, 40),
            broker(past + 2),
            &mut found,
        );
        assert_eq!(
            none.placement,
            Some(Placement::Unknown(UnknownWhy::NotFollowed))
        );
        let followed = t.add(&grant(3, None, 1_500, 0, 50), broker(1), &mut found);
        assert!(matches!(followed.placement, Some(Placement::InBlock(b)) if b.start == 1000));
        assert_eq!(found.len(), 1, "{found:?}");
    }

    /// Past [`MAX_BROKERS`](crate::analysis::brokers::MAX_BROKERS) brokers asking for
    /// blocks, a broker whose request was not followed may have asked for the block that
    /// holds its grant: the grant is unknown, never a fault.
    #[test]
    fn a_grant_of_a_broker_whose_asking_was_not_followed_is_unknown() {
        use crate::analysis::brokers::MAX_BROKERS;
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(2, 0, 10), &mut Vec::new());
        // MAX_BROKERS and one: the room for requests whose broker id was not read
        for broker in 10..11 + MAX_BROKERS as i32 {
            t.asked(Some(broker), 12);
        }
        // broker 2 asks now, not followed; its answer never read
        t.asked(Some(2), 13);
        let beyond = t.add(&grant(1, None, 3000, 0, 40), BROKER2, &mut found);
        assert_eq!(
            beyond.placement,
            Some(Placement::Unknown(UnknownWhy::NotFollowed))
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn an_id_in_a_forgotten_block_is_unknown_not_outside() {
        let mut t = Tracker::new(1, 0);
        let mut found = Vec::new();
        t.block(&block(2, 0, 20), &mut Vec::new());
        t.block(&block(2, 1000, 21), &mut Vec::new());
        let old = t.add(&grant(1, None, 5, 0, 30), BROKER2, &mut found);
        assert_eq!(old.placement.map(|p| p.as_str()), Some("unknown"));
        let new = t.add(&grant(1, None, 1005, 0, 31), BROKER2, &mut found);
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
        let affected = held_in(&t, 11, 11).unwrap();
        assert_eq!((affected.producers, affected.holders_of_id), (2, 2));
        assert_eq!(affected.hosts.listed, ["10.0.3.3", "10.0.3.4"]);
        assert_eq!(
            affected.sentence(),
            "2 producers on 10.0.3.3 and 10.0.3.4 hold producer id 11"
        );
    }

    /// The hosts the overlap's sentence names for the holders of its lowest id are
    /// theirs, not those of every producer of the overlap, whose totals it says apart.
    #[test]
    fn the_hosts_named_for_an_id_are_those_of_its_holders() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.add(&grant(1, None, 10, 0, 10), None, &mut found);
        t.add(&grant(2, None, 12, 0, 20), None, &mut found);
        t.add(&grant(3, None, 13, 0, 30), None, &mut found);
        let affected = held_in(&t, 10, 13).unwrap();
        assert_eq!((affected.producer_id, affected.holders_of_id), (10, 1));
        assert_eq!(affected.id_hosts.listed, ["10.0.3.1"]);
        assert_eq!(affected.hosts.listed, ["10.0.3.1", "10.0.3.2", "10.0.3.3"]);
        assert_eq!(
            affected.sentence(),
            "1 producer on 10.0.3.1 holds producer id 10; \
             3 producers on 10.0.3.1, 10.0.3.2 and 10.0.3.3 hold ids of the overlap"
        );
        // the range's other ids held on the same host: the sentence as before
        t.add(&grant(3, None, 14, 0, 40), None, &mut found);
        let same_host = held_in(&t, 13, 14).unwrap();
        assert_eq!(
            same_host.sentence(),
            "1 producer on 10.0.3.3 holds producer id 13"
        );
    }

    /// A grant of `id` at epoch 0 to a producer on `host`, on a connection of its own.
    fn grant_on(host: u32, id: i64, frame: u64) -> ProducerIdExchange {
        let mut g = grant(1, None, id, 0, frame);
        let ip = std::net::Ipv4Addr::from(0x0a00_0000 + host);
        g.endpoints.client = SocketAddr::new(ip.into(), 5000);
        g.endpoints.connection = frame;
        g
    }

    /// A transactional producer's epoch is bumped at every transaction's end
    /// (transactions v2): holding its id at many epochs, it is one producer, and an
    /// overlap counts it once beside another producer given the same id.
    #[test]
    fn a_producer_holding_its_id_at_many_epochs_counts_once() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        for epoch in 0..6i16 {
            let frame = 10 + 10 * epoch as u64;
            t.add(&grant(1, Some("tx-a"), 500, epoch, frame), None, &mut found);
        }
        t.add(&grant(2, Some("tx-b"), 500, 0, 200), None, &mut found);
        t.add(&grant(3, None, 501, 0, 210), None, &mut found);
        t.add(&grant(3, None, 501, 1, 220), None, &mut found);
        let held = held_in(&t, 500, 501).unwrap();
        assert_eq!((held.producers, held.holders_of_id), (3, 2));
        assert!(
            held.sentence().starts_with(
                "2 producers on 10.0.3.1 and 10.0.3.2 hold producer id 500; 3 producers on "
            ),
            "{}",
            held.sentence()
        );
    }

    /// 64 idempotent producers, each on a connection of its own, hold `id` at an epoch
    /// each, then one more holds it at `more` epochs.
    fn held_past_those_told_apart(more: i16) -> Tracker {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        for c in 0..PRODUCERS_TOLD_APART as u64 {
            t.add(&grant(c + 1, None, 7, c as i16, 10 + c), None, &mut found);
        }
        for e in 0..more {
            let (epoch, frame) = (64 + e, 200 + e as u64);
            t.add(&grant(200, None, 7, epoch, frame), None, &mut found);
        }
        assert!(found.is_empty(), "{found:?}");
        t
    }

    /// Past [`PRODUCERS_TOLD_APART`] producers of one id, a holder surely other than
    /// each of them is not kept, so it cannot be told from the next such: the count
    /// stops at one more and says "at least" (counted each time, one producer holding
    /// the id at 36 epochs made 36 producers).
    #[test]
    fn past_the_producers_told_apart_an_ids_count_is_a_floor() {
        let t = held_past_those_told_apart(36);
        let held = held_in(&t, 7, 7).unwrap();
        assert_eq!((held.producers, held.producers_at_least), (65, true));
        assert_eq!(
            (held.holders_of_id, held.holders_of_id_at_least),
            (65, true)
        );
        let sentence = held.sentence();
        assert!(
            sentence.starts_with("at least 65 producers on 10.0.3.1, 10.0.3.10, "),
            "{sentence}"
        );
        // as many as are told apart: counted exactly, said as before
        let t = held_past_those_told_apart(0);
        let held = held_in(&t, 7, 7).unwrap();
        assert_eq!((held.producers, held.producers_at_least), (64, false));
        assert_eq!(
            (held.holders_of_id, held.holders_of_id_at_least),
            (64, false)
        );
        let sentence = held.sentence();
        assert!(
            sentence.starts_with("64 producers on 10.0.3.1, 10.0.3.10, "),
            "{sentence}"
        );
    }

    /// An overlap whose count of producers is a floor says so in its message and its
    /// facts (`affected_producers_at_least`); one counted exactly has no such fact.
    #[test]
    fn an_overlaps_finding_says_its_count_of_producers_is_a_floor() {
        use crate::analysis::test_support::exchange;
        use crate::analysis::{Analyzer, SlowRule};
        use crate::diag::{Diagnostics, Kind};
        for (more, said, floor) in [
            (36, "; at least 65 producers on ", true),
            (0, "; 64 producers on ", false),
        ] {
            let mut a = Analyzer::new(SlowRule::Default, false, MAX_TRACKED_BLOCKS);
            a.add(&exchange(1, 1, 5, Some((0, 0, 1000, 2))));
            a.add(&exchange(2, 2, 5, Some((0, 0, 1000, 2))));
            a.producers = held_past_those_told_apart(more);
            let analysis = a.finish(&mut Diagnostics::default());
            let overlap = analysis
                .findings
                .iter()
                .find(|f| f.kind == Kind::PidBlockOverlap)
                .unwrap();
            assert!(overlap.message.contains(said), "{}", overlap.message);
            let fact = ("affected_producers_at_least", true.into());
            assert_eq!(overlap.facts.contains(&fact), floor, "{:?}", overlap.facts);
        }
    }

    /// A grant of `id` at `epoch` on `connection` whose request was not read.
    fn unread(connection: u64, id: i64, epoch: i16, frame: u64) -> ProducerIdExchange {
        let mut g = grant(connection, None, id, epoch, frame);
        g.request.transactional_id = None;
        g
    }

    /// The count of the producers holding `id` and whether it is a floor, as said.
    fn count_of(t: &Tracker, id: i64) -> (u64, bool, String) {
        let held = held_in(t, id, id).unwrap();
        assert_eq!(held.producers, held.holders_of_id);
        let said = held.sentence();
        (held.producers, held.producers_at_least, said)
    }

    /// A holder whose request was not read may be any producer: the count of the
    /// producers holding its id is a floor, said "at least". Taken for one counted, it
    /// hid every producer after it (one holder counted of three) or was taken for one
    /// before it (one of two).
    #[test]
    fn a_holder_whose_request_was_not_read_makes_the_count_a_floor() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        // first, then two transactional producers at later epochs
        t.add(&unread(1, 500, 0, 10), None, &mut found);
        t.add(&grant(2, Some("tx-a"), 500, 1, 20), None, &mut found);
        t.add(&grant(3, Some("tx-b"), 500, 2, 30), None, &mut found);
        assert_eq!(
            count_of(&t, 500),
            (
                2,
                true,
                "at least 2 producers on 10.0.3.1, 10.0.3.2 and 10.0.3.3 hold producer id 500"
                    .to_owned()
            )
        );
        // after a producer, at an epoch of its own
        t.add(&grant(2, Some("tx-a"), 501, 0, 40), None, &mut found);
        t.add(&unread(4, 501, 1, 50), None, &mut found);
        assert_eq!(
            count_of(&t, 501),
            (
                1,
                true,
                "at least 1 producer on 10.0.3.2 and 10.0.3.4 holds producer id 501".to_owned()
            )
        );
        // alone: still one producer, at least
        t.add(&unread(5, 502, 0, 60), None, &mut found);
        let (n, floor, _) = count_of(&t, 502);
        assert_eq!((n, floor), (1, true));
        // a producer read whole, none unread: exact
        t.add(&grant(2, Some("tx-a"), 503, 0, 70), None, &mut found);
        assert_eq!(
            count_of(&t, 503),
            (
                1,
                false,
                "1 producer on 10.0.3.2 holds producer id 503".to_owned()
            )
        );
        assert!(found.is_empty(), "{found:?}");
    }

    /// A holder whose request was not read, at the id and epoch of one read whole, is
    /// not kept beside it (either may have been the other), but the count it was let
    /// out of is a floor, and its host is named.
    #[test]
    fn a_holder_not_read_let_go_beside_one_read_makes_the_count_a_floor() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        // not read, then read: the first let go
        t.add(&unread(1, 600, 0, 10), None, &mut found);
        t.add(&grant(2, Some("tx-a"), 600, 0, 20), None, &mut found);
        // read, then not read: the second let go
        t.add(&grant(2, Some("tx-a"), 601, 0, 30), None, &mut found);
        t.add(&unread(3, 601, 0, 40), None, &mut found);
        for id in [600, 601] {
            assert_eq!(t.grants[&(id, 0)].kept.len(), 1);
            let (n, floor, said) = count_of(&t, id);
            assert_eq!((n, floor), (1, true), "{id}");
            let on = match id {
                600 => "at least 1 producer on 10.0.3.1 and 10.0.3.2 holds ",
                _ => "at least 1 producer on 10.0.3.2 and 10.0.3.3 holds ",
            };
            assert!(said.starts_with(on), "{said}");
        }
        assert!(found.is_empty(), "{found:?}");
    }

    /// More producers granted one id at one epoch than are kept ([`MAX_HOLDERS`]), as
    /// a controller granting one block to many brokers makes: the count of those
    /// holding it is a floor, said "at least", and every one's host is named (the
    /// count stopped at those kept, said as exact).
    #[test]
    fn more_holders_of_an_id_and_epoch_than_are_kept_make_the_count_a_floor() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        for c in 1..=MAX_HOLDERS as u64 + 2 {
            t.add(&grant(c, None, 800, 0, 10 * c), None, &mut found);
        }
        assert_eq!(t.grants[&(800, 0)].kept.len(), MAX_HOLDERS);
        assert_eq!(
            count_of(&t, 800),
            (
                4,
                true,
                "at least 4 producers on 10.0.3.1, 10.0.3.2, 10.0.3.3, 10.0.3.4, 10.0.3.5 \
                 and 10.0.3.6 hold producer id 800"
                    .to_owned()
            )
        );
        // each a duplicate of the first
        assert_eq!(found.len(), MAX_HOLDERS + 1);
    }

    /// Past [`HOSTS_LISTED`] hosts the lowest are named and the others counted, exactly
    /// up to [`HOSTS_COUNTED`], then as "at least".
    #[test]
    fn an_overlap_names_a_few_hosts_and_counts_the_others() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        // 40 hosts hold 100..=139; id 100 held on two of them
        for n in 0..40u32 {
            t.add(
                &grant_on(n, 100 + i64::from(n), u64::from(n) + 10),
                None,
                &mut found,
            );
        }
        t.add(&grant_on(39, 100, 99), None, &mut found);
        let forty = held_in(&t, 100, 139).unwrap();
        assert_eq!((forty.producers, forty.holders_of_id), (41, 2));
        assert_eq!((forty.hosts.count, forty.hosts.at_least), (40, false));
        let mut lowest: Vec<String> = (0..16).map(|n| format!("10.0.0.{n}")).collect();
        lowest.sort();
        assert_eq!(forty.hosts.listed, lowest);
        assert_eq!(forty.id_hosts.listed, ["10.0.0.0", "10.0.0.39"]);
        let sentence = forty.sentence();
        assert!(
            sentence.starts_with(
                "2 producers on 10.0.0.0 and 10.0.0.39 hold producer id 100; \
                 41 producers on 10.0.0.0, 10.0.0.1, 10.0.0.10"
            ),
            "{sentence}"
        );
        assert!(
            sentence.ends_with(", 10.0.0.9 and 24 other hosts hold ids of the overlap"),
            "{sentence}"
        );
        for n in 40..100u32 {
            t.add(
                &grant_on(n, 100 + i64::from(n), u64::from(n) + 10),
                None,
                &mut found,
            );
        }
        let hundred = held_in(&t, 100, 199).unwrap();
        assert_eq!((hundred.hosts.count, hundred.hosts.at_least), (65, true));
        assert_eq!(hundred.hosts.listed, lowest);
        assert!(
            hundred
                .sentence()
                .ends_with(" and at least 49 other hosts hold ids of the overlap"),
            "{}",
            hundred.sentence()
        );
    }

    /// Many overlaps of many producers, nested and crossing: each gets what a walk of
    /// its own ids finds, from one walk of them all.
    #[test]
    fn overlaps_crossing_each_other_each_get_their_own_holders() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % m
        };
        // every grant to a producer of its own (a connection each)
        let mut held: Vec<(i64, IpAddr)> = Vec::new();
        for frame in 0..3_000u64 {
            let (id, host) = (next(2_000) as i64, next(120) as u32);
            let g = grant_on(host, id, frame + 10);
            held.push((id, g.endpoints.client.ip()));
            t.add(&g, None, &mut found);
        }
        // some ids granted more often than their holders are kept
        let let_go = t.grants.values().filter(|h| h.let_go.is_some()).count();
        assert!(let_go > 0);
        let spans: Vec<(i64, i64)> = (0..200)
            .map(|_| {
                let a = next(2_100) as i64 - 50;
                (a, a + next(600) as i64)
            })
            .chain([(i64::MIN, i64::MAX), (5, 4), (3_000, 4_000)])
            .collect();
        let got = t.affected(&spans);
        for (&(start, end), got) in spans.iter().zip(got) {
            let within: Vec<&(i64, IpAddr)> = held
                .iter()
                .filter(|(id, _)| (start..=end).contains(id))
                .collect();
            let Some(&&(first, _)) = within.iter().min() else {
                assert_eq!(got, None, "{start}..={end}");
                continue;
            };
            let got = got.unwrap();
            let hosts = |of: &mut dyn Iterator<Item = &&(i64, IpAddr)>| {
                let all: std::collections::BTreeSet<IpAddr> = of.map(|(_, ip)| *ip).collect();
                let mut listed: Vec<String> = all
                    .iter()
                    .take(HOSTS_LISTED)
                    .map(|ip| ip.to_string())
                    .collect();
                listed.sort();
                Hosts {
                    listed,
                    count: all.len().min(HOSTS_COUNTED + 1) as u64,
                    at_least: all.len() > HOSTS_COUNTED,
                }
            };
            // the holders of an id counted up to those kept, a floor past them
            let counted = |of: &mut dyn Iterator<Item = &&(i64, IpAddr)>| {
                let mut per_id = BTreeMap::new();
                for (id, _) in of {
                    *per_id.entry(*id).or_insert(0u64) += 1;
                }
                let kept = per_id.values().map(|n| (*n).min(MAX_HOLDERS as u64)).sum();
                (kept, per_id.values().any(|n| *n > MAX_HOLDERS as u64))
            };
            let got_count = (got.producers, got.producers_at_least);
            assert_eq!(got_count, counted(&mut within.iter()));
            assert_eq!(got.hosts, hosts(&mut within.iter()));
            assert_eq!(got.producer_id, first);
            let of_first = || within.iter().filter(|(id, _)| *id == first);
            let got_count = (got.holders_of_id, got.holders_of_id_at_least);
            assert_eq!(got_count, counted(&mut of_first()));
            assert_eq!(got.id_hosts, hosts(&mut of_first()));
        }
    }

    /// A thousand overlaps of the same quarter of a million ids, each held by a producer
    /// on a host of its own: one walk of the grants, not one per overlap, and a few hosts
    /// named each (a walk per overlap naming every host took days and tens of GB).
    #[test]
    fn a_thousand_overlaps_of_many_hosts_are_named_in_one_walk() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let ids = 1 << 18;
        for n in 0..ids {
            t.add(
                &grant_on(n, i64::from(n), u64::from(n) + 10),
                None,
                &mut found,
            );
        }
        let spans = vec![(0, i64::from(ids)); 1000];
        let started = std::time::Instant::now();
        let got = t.affected(&spans);
        let took = started.elapsed();
        assert_eq!(got.len(), 1000);
        for a in got {
            let a = a.unwrap();
            assert_eq!(a.producers, u64::from(ids));
            assert_eq!((a.hosts.listed.len(), a.hosts.count), (HOSTS_LISTED, 65));
            assert_eq!(a.id_hosts.listed, ["10.0.0.0"]);
        }
        assert!(took < std::time::Duration::from_secs(60), "{took:?}");
    }

    /// Past the share the lowest granted ids are forgotten, and the report says so: a
    /// count of the producers holding ids up to the highest forgotten is a floor, said
    /// "at least" (a producer holding a forgotten id went uncounted without a word).
    #[test]
    fn a_count_over_grants_forgotten_is_a_floor() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.add(&grant(1, None, 0, 0, 10), None, &mut found);
        t.add(&grant(2, None, 0, 1, 20), None, &mut found);
        for n in 1..100 {
            t.add(&grant_on(n as u32, n as i64, n + 100), None, &mut found);
        }
        t.set_max_bytes(t.held_bytes());
        t.add(&grant_on(100, 100, 200), None, &mut found);
        assert!(
            t.totals.grants_forgotten >= 2,
            "{}",
            t.totals.grants_forgotten
        );
        let said = found.iter().filter(|f| f.kind == Kind::AnalysisLimit);
        assert_eq!(said.count(), 1, "the forgetting is said");
        let to = t.forgotten_to.expect("some forgotten");
        assert_eq!(held_in(&t, 0, to), None, "none left to name");
        let above = held_in(&t, to + 1, to + 2).unwrap();
        assert_eq!((above.producers, above.producers_at_least), (2, false));
        let across = held_in(&t, to, to + 2).unwrap();
        assert_eq!((across.producers, across.producers_at_least), (2, true));
        let (n, at_least, sentence) = count_of(&t, to + 1);
        assert_eq!((n, at_least), (1, false), "{sentence}");
    }

    /// An EndTxn version 5 answer on `connection`: `txn` ended its transaction with `id`
    /// at `epoch` and was granted `granted`.
    fn end_txn(
        connection: u64,
        txn: &str,
        (id, epoch): (i64, i16),
        granted: (i64, i16),
        frame: u64,
    ) -> crate::pairing::EndTxnExchange {
        use crate::kafka::end_txn::{Request, Response};
        crate::pairing::EndTxnExchange {
            endpoints: Endpoints {
                connection,
                client: format!("10.0.3.{connection}:5000").parse().unwrap(),
                server: "10.0.0.2:9092".parse().unwrap(),
            },
            correlation_id: 2,
            api_version: 5,
            request_meta: meta(frame - 1),
            request: Request {
                transactional_id: Some(txn.to_owned()),
                producer_id: Some(id),
                producer_epoch: Some(epoch),
                committed: Some(true),
                ..Default::default()
            },
            outcome: Outcome::Complete {
                meta: meta(frame),
                response: Box::new(Response {
                    error_code: Some(ErrorCode::NONE),
                    producer_id: Some(granted.0),
                    producer_epoch: Some(granted.1),
                    ..Default::default()
                }),
            },
        }
    }

    /// Transactions v2 (Kafka's `TransactionMetadata.prepareAbortOrCommit` and
    /// `prepareComplete`): every transaction's end bumps the epoch and keeps the id, never
    /// a duplicate of the producer's own grants, wherever the id lies; a used-up epoch
    /// brings a new id at epoch 0, placed in the coordinator's blocks; the same id and
    /// epoch granted to another transactional id is a duplicate.
    #[test]
    fn end_txn_grants_are_epoch_bumps_or_new_ids_placed_in_blocks() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(2, 0, 10), &mut Vec::new());
        t.add(&grant(1, Some("tx-1"), 5, 0, 20), BROKER2, &mut found);
        let bump = t.add(&end_txn(1, "tx-1", (5, 0), (5, 1), 30), BROKER2, &mut found);
        assert!(matches!(bump.placement, Some(Placement::EpochBump(Some(b))) if b.start == 0));
        // retried on another connection: the same answer, the same producer
        let again = t.add(&end_txn(2, "tx-1", (5, 0), (5, 1), 40), BROKER2, &mut found);
        assert_eq!(again.duplicate_of, None);
        // a newer block arrives; the bump still keeps the old block's id
        t.block(&block(2, 1000, 50), &mut Vec::new());
        let kept = t.add(&end_txn(1, "tx-1", (5, 1), (5, 2), 60), BROKER2, &mut found);
        assert_eq!(
            kept.placement.map(|p| p.name()),
            Some(PlacementName::EpochBump)
        );
        // the epoch used up: a new id at epoch 0 from the coordinator's newest block
        let rotated = t.add(
            &end_txn(1, "tx-1", (5, 32766), (1000, 0), 70),
            BROKER2,
            &mut found,
        );
        assert!(matches!(rotated.placement, Some(Placement::InBlock(b)) if b.start == 1000));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(t.end_txn_totals.granted, 4);
        assert_eq!(t.end_txn_totals.placed(PlacementName::EpochBump), 3);
        assert_eq!(t.totals.granted, 1);
        // another transactional id told the id and epoch tx-1 holds
        let dup = t.add(&end_txn(3, "tx-2", (5, 1), (5, 2), 80), BROKER2, &mut found);
        assert_eq!(dup.duplicate_of, Some(60));
        assert_eq!(found.len(), 1);
        assert_eq!(t.end_txn_totals.duplicates, 1);
    }

    /// An EndTxn whose request was not read: a grant above epoch 0 kept its producer's id
    /// (Kafka draws a new id only at epoch 0), and its holder may be any producer, so its
    /// grant, answered again to a retry on another connection, is never a duplicate; a
    /// producer known to be another still is one.
    #[test]
    fn an_end_txn_whose_request_was_not_read_is_judged_by_kafkas_rule() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.block(&block(2, 0, 10), &mut Vec::new());
        t.block(&block(2, 1000, 11), &mut Vec::new());
        let unread = |connection, granted, frame| {
            let mut ex = end_txn(connection, "tx-1", (0, 0), granted, frame);
            ex.request = crate::kafka::end_txn::Request::default();
            ex
        };
        let bump = t.add(&unread(1, (5, 3), 20), BROKER2, &mut found);
        assert!(matches!(bump.placement, Some(Placement::EpochBump(Some(b))) if b.start == 0));
        assert_eq!(
            bump.reason.as_deref().map(|r| r.contains("initialised")),
            Some(false)
        );
        let new_id = t.add(&unread(1, (1000, 0), 30), BROKER2, &mut found);
        assert!(matches!(new_id.placement, Some(Placement::InBlock(b)) if b.start == 1000));
        // retried on another connection, then a known producer: maybe the same
        let retry = t.add(&end_txn(2, "tx-1", (5, 2), (5, 3), 40), BROKER2, &mut found);
        assert_eq!(retry.duplicate_of, None);
        let again = t.add(&unread(3, (5, 3), 50), BROKER2, &mut found);
        assert_eq!(again.duplicate_of, None);
        assert!(found.is_empty(), "{found:?}");
        // another transactional id told the same pair: a duplicate of the known holder
        let dup = t.add(&end_txn(4, "tx-2", (5, 2), (5, 3), 60), BROKER2, &mut found);
        assert_eq!(dup.duplicate_of, Some(40));
        assert_eq!(found.len(), 1);
        assert_eq!(held_in(&t, 5, 5).map(|a| a.producers), Some(2));
    }

    /// A transactional id of a mebibyte is kept as its first bytes, its length and a
    /// hash: a duplicate's finding shows it cut, never as the whole id, and ids alike in
    /// their first bytes and length are still told apart.
    #[test]
    fn a_long_transactional_id_is_kept_cut_and_said_cut() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let base = "t".repeat(1 << 20);
        let (a, b) = (format!("{base}-a"), format!("{base}-b"));
        t.add(&grant(1, Some(&a), 11, 0, 10), None, &mut found);
        // the same producer back on another connection: the same id, not a duplicate
        t.add(&grant(2, Some(&a), 11, 0, 20), None, &mut found);
        assert!(found.is_empty(), "{found:?}");
        let kept: Vec<usize> = (t.grants.values().flat_map(|h| &h.kept))
            .filter_map(Holder::transactional_id)
            .map(KeptId::heap_bytes)
            .collect();
        assert_eq!(kept, [crate::analysis::kept_id::MAX_KEPT_LEN]);
        // another id of the same length and first mebibyte
        let dup = t.add(&grant(3, Some(&b), 11, 0, 30), None, &mut found);
        assert_eq!(dup.duplicate_of, Some(10));
        let [f] = &found[..] else {
            panic!("{found:?}");
        };
        let shown = format!("{}…", &base[..256]);
        assert!(f
            .facts
            .contains(&("transactional_id", shown.as_str().into())));
        assert!(f
            .facts
            .contains(&("transactional_id_len", (a.len() as u64).into())));
        assert!(f
            .facts
            .contains(&("other_transactional_id", shown.as_str().into())));
        assert!(f
            .facts
            .contains(&("other_transactional_id_len", (a.len() as u64).into())));
        assert!(
            f.message.contains(&format!(
                "(transactional id \"{shown}\" cut from {} bytes)",
                a.len()
            )),
            "{}",
            f.message
        );
        assert!(f.message.len() < 1000, "{}", f.message.len());
    }

    /// A transactional producer's id, bumped at every transaction's end, is one text
    /// shared by its grants, not a copy each.
    #[test]
    fn a_transactional_id_held_at_many_epochs_is_kept_once() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.add(&grant(1, Some("tx-1"), 5, 0, 20), None, &mut found);
        for epoch in 0..10 {
            let frame = 30 + u64::from(epoch as u16) * 10;
            t.add(
                &end_txn(1, "tx-1", (5, epoch), (5, epoch + 1), frame),
                None,
                &mut found,
            );
        }
        let ids: Vec<&KeptId> = (t.grants.values().flat_map(|h| &h.kept))
            .filter_map(Holder::transactional_id)
            .collect();
        assert_eq!(ids.len(), 11);
        assert!(ids.iter().all(|id| id.shares(ids[0])));
        assert!(found.is_empty(), "{found:?}");
    }

    /// An answer read whole of a version that grants nothing (EndTxn before 5) counts
    /// its error code; a cut answer, whatever its API, counts none (`error_codes` are of
    /// answers read whole).
    #[test]
    fn only_answers_read_whole_count_their_error() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        let mut v4 = end_txn(1, "tx-1", (5, 0), (-1, -1), 20);
        v4.api_version = 4;
        if let Outcome::Complete { response, .. } = &mut v4.outcome {
            (response.producer_id, response.producer_epoch) = (None, None);
        }
        t.add(&v4, BROKER2, &mut found);
        assert_eq!(t.end_txn_totals.error_codes.get(&ErrorCode::NONE), Some(&1));
        assert_eq!(t.end_txn_totals.granted, 0);
        let mut cut = grant(2, None, 7, 0, 30);
        if let Outcome::Complete { response, .. } = &mut cut.outcome {
            response.producer_id = None;
            response.problem = Some(Box::new(crate::kafka::decoded::Problem::NotCaptured {
                len: 30,
                captured: 15,
                field: None,
            }));
        }
        t.add(&cut, BROKER2, &mut found);
        assert!(
            t.totals.error_codes.is_empty(),
            "{:?}",
            t.totals.error_codes
        );
        assert_eq!((t.totals.exchanges, t.totals.errors), (1, 0));
    }

    /// The formats read a duplicate's and a fault's values from the finding's typed
    /// detail, the same values as its facts.
    #[test]
    fn a_grant_finding_keeps_its_values_typed() {
        let mut t = Tracker::default();
        let mut found = Vec::new();
        t.add(&grant(1, Some("tx-1"), 11, 0, 30), None, &mut found);
        t.add(&grant(2, None, 11, 0, 40), None, &mut found);
        let Some(Detail::DuplicateGrant(dup)) = &found[0].detail else {
            panic!("{:?}", found[0].detail);
        };
        assert_eq!((dup.producer_id, dup.frame, dup.other_frame), (11, 40, 30));
        assert_eq!(dup.other_transactional_id.as_deref(), Some("tx-1"));
        assert_eq!(dup.transactional_id, None);
        t.block(&block(2, 0, 50), &mut Vec::new());
        t.block(&block(1, 1000, 51), &mut Vec::new());
        t.add(&grant(3, None, 1500, 0, 60), BROKER2, &mut found);
        let Some(Detail::OutsideBlocks(outside)) = &found[1].detail else {
            panic!("{:?}", found[1].detail);
        };
        assert_eq!(outside.block, Some((1000, 1999, 1)));
        assert_eq!(outside.placement, "another_brokers_block");
    }

    /// What the table holds, counted again from its contents: its entries, its lists'
    /// allocations, and each text once, however many holders share it.
    fn recount(t: &Tracker) -> usize {
        let mut texts: Vec<&KeptId> = Vec::new();
        let mut held = t.grants.len() * GRANT_ENTRY;
        for holders in t.grants.values() {
            held += holders.heap();
            for id in holders.kept.iter().filter_map(Holder::transactional_id) {
                if !texts.iter().any(|known| known.shares(id)) {
                    texts.push(id);
                    held += heap_cost(16 + id.heap_bytes());
                }
            }
        }
        held
    }

    /// Past its share of `--max-memory`, the table forgets the holders of its lowest ids
    /// until three quarters of it is held, counts each forgotten, and says so once; a
    /// duplicate of an id still held is found, one of a forgotten id is not.
    #[test]
    fn past_its_share_the_lowest_granted_ids_are_forgotten_and_said_once() {
        let share = 64 << 10;
        let mut t = Tracker::default();
        t.set_max_bytes(share);
        let mut found = Vec::new();
        for i in 0..2_000u32 {
            // a transactional id of 256 bytes of its own, two producers an id
            let txn = format!("{i:08}{}", "t".repeat(248));
            let frame = 10 + u64::from(i);
            let id = i64::from(i / 2);
            t.add(
                &grant(u64::from(i % 200), Some(&txn), id, 0, frame),
                None,
                &mut found,
            );
            assert!(t.held_bytes() <= share, "{i}: {}", t.held_bytes());
            assert_eq!(t.held_bytes(), recount(&t), "{i}");
        }
        let held = t.grants.len() as u64;
        assert!(held > 10 && held < 100, "{held}");
        assert_eq!(t.totals.grants_forgotten, 1000 - held);
        assert_eq!(t.totals.duplicates, 1000);
        let limits: Vec<&Finding> = (found.iter())
            .filter(|f| f.kind == Kind::AnalysisLimit)
            .collect();
        let [limit] = &limits[..] else {
            panic!("{limits:?}");
        };
        assert!(limit.facts.contains(&("table", "grant_memory".into())));
        assert!(limit.facts.contains(&("limit", (share as u64).into())));
        assert!(limit.message.contains("(65536 bytes, a sixteenth)"));
        // the first id forgotten, the last still held
        let forgotten = t.add(&grant(1, Some("other"), 0, 0, 5000), None, &mut found);
        assert_eq!(forgotten.duplicate_of, None);
        let last = t.add(&grant(2, Some("other"), 999, 0, 5001), None, &mut found);
        assert_eq!(last.duplicate_of, Some(2008));
        assert_eq!(t.held_bytes(), recount(&t));
    }

    /// The charge follows what the table holds, each text once: a transactional
    /// producer's id held at many epochs, idempotent producers, holders whose request was
    /// not read, ids held by several producers, and the lowest forgotten at the share.
    #[test]
    fn the_charge_is_what_the_holders_take_counted_again() {
        let mut t = Tracker::default();
        t.set_max_bytes(16 << 10);
        let mut found = Vec::new();
        let long = "x".repeat(300);
        for round in 0..40u32 {
            let base = i64::from(round) * 10;
            let frame = 100 * u64::from(round);
            let txn = format!("tx-{round}{long}");
            for epoch in 0..6i16 {
                let f = frame + 10 + epoch as u64;
                t.add(&grant(1, Some(&txn), base, epoch, f), None, &mut found);
                assert_eq!(t.held_bytes(), recount(&t), "{round}/{epoch}");
            }
            let bumped = end_txn(1, &txn, (base, 5), (base, 6), frame + 20);
            t.add(&bumped, None, &mut found);
            t.add(&grant(2, None, base + 1, 0, frame + 30), None, &mut found);
            t.add(&grant(3, None, base + 1, 0, frame + 31), None, &mut found);
            let mut unread = grant(4, None, base + 1, 0, frame + 32);
            unread.request.transactional_id = None;
            t.add(&unread, None, &mut found);
            for n in 0..6u64 {
                let other = format!("other-{n}");
                t.add(
                    &grant(5 + n, Some(&other), base + 2, 0, frame + 40 + n),
                    None,
                    &mut found,
                );
                assert_eq!(t.held_bytes(), recount(&t), "{round}/{n}");
            }
        }
        assert!(t.totals.grants_forgotten > 0);
        assert!(t.held_bytes() <= 16 << 10);
    }
}
