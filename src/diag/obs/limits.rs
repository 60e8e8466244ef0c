//! Where a bound of pidshark was reached.

use std::fmt;

use crate::diag::facts::facts;
use crate::diag::observation::UNDECODED_KINDS;
use crate::diag::parts::{ConnectionEnds, GivenUp};
use crate::diag::{Facts, Kind, MAX_LISTED_PER_KIND};

/// More of `kind` than [`MAX_LISTED_PER_KIND`] were found
/// (of one API, for the kinds of messages not read: so that a flood of one API's does
/// not hide another's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiagnosticsLimited {
    pub kind: Kind,
    pub count: u64,
    pub listed: u64,
}

impl DiagnosticsLimited {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            kind,
            count,
            listed,
        } = self;
        facts![kind, count, listed]
    }
}

impl fmt::Display for DiagnosticsLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self {
                kind,
                count,
                listed,
            } if UNDECODED_KINDS.contains(kind) => write!(
                f,
                "{count} {} diagnostics were found; only {listed} are listed, the first {} of each API",
                kind.as_str(),
                MAX_LISTED_PER_KIND
            ),
            Self {
                kind,
                count,
                listed,
            } => write!(
                f,
                "{count} {} diagnostics were found; only the first {listed} are listed",
                kind.as_str()
            ),
        }
    }
}

/// What a [`Kind::ConnectionLimit`] diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectionLimit {
    /// Connections open at once.
    pub open: u64,
    pub max_connections: u64,
    /// The first connection no longer followed.
    pub first: ConnectionEnds,
}

impl ConnectionLimit {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            max_connections, ..
        } = self;
        facts![max_connections]
    }
}

impl fmt::Display for ConnectionLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            open,
            max_connections,
            first,
        } = self;
        write!(
            f,
            "more than {open} connections at once (--max-connections {max_connections}, or as many as the table's share of --max-memory holds): the least recently active are no longer followed (connection {first} first)"
        )
    }
}

/// What a [`Kind::MemoryLimit`] diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryLimit<'a> {
    pub connection: ConnectionEnds,
    pub given_up: GivenUp<'a>,
}

impl MemoryLimit<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { given_up, .. } = self;
        vec![given_up.fact()]
    }
}

impl fmt::Display for MemoryLimit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            connection,
            given_up,
        } = self;
        given_up.write(*connection, f)
    }
}

crate::names::closed_set! {
    /// A table of the analysis keyed by what the capture names: bounded, since a hostile
    /// capture may name a million broker ids.
    pub enum AnalysisTable {
        /// Per broker id asking for blocks: `summary.brokers`, error streaks, retries,
        /// epoch changes, and the requests whose answers may hold a grant.
        Brokers = "brokers",
        /// Per broker id granted blocks: where its grants lie among its blocks.
        BlockBrokers = "block_brokers",
        /// Per broker id asking for blocks: the distinct epochs its requests carried
        /// (`summary.brokers[].epochs_seen`).
        BrokerEpochs = "broker_epochs",
        /// Per broker id asking for blocks: its error responses by code
        /// (`summary.brokers[].errors`).
        BrokerErrors = "broker_errors",
        /// Per block length: the usual length, and the blocks of other lengths.
        BlockLengths = "block_lengths",
        /// Per block: the earlier blocks (or ranges of folded ones) sharing its ids, each
        /// a `pid_block_overlap`.
        BlockOverlaps = "block_overlaps",
        /// Per block: the earlier blocks kept whole whose ids it is compared with.
        BlockComparisons = "block_comparisons",
        /// The id ranges of the blocks no longer kept whole, merged where they touch.
        FoldedBlocks = "folded_blocks",
        /// Per granted producer id: the blocks kept that could hold it, searched for the
        /// latest that does.
        PlacementBlocks = "placement_blocks",
        /// Node ids seen and named in the cluster's messages: which brokers and
        /// controllers the capture shows.
        Coverage = "coverage",
        /// Per partition and producer id: the batches the broker appended, against
        /// which acknowledged ones are judged.
        Writes = "writes",
        /// Per producer id and epoch that wrote: its writers.
        WriteProducers = "write_producers",
        /// Topic names by id, from Metadata responses.
        TopicNames = "topic_names",
        /// Per producer id, epoch and error: the refusals grouped into findings.
        WriteRefusals = "write_refusals",
        /// Everything the writes analysis holds, against its share of `--max-memory`.
        WriteMemory = "write_memory",
        /// Per producer id: the frames of the answers that granted it.
        WriteGrants = "write_grants",
        /// Per producer id and epoch granted: its holders, against the granted ids' share
        /// of `--max-memory`.
        GrantMemory = "grant_memory",
        /// Broker addresses from registrations, Metadata and DescribeCluster responses
        /// (`brokers_by_address`).
        Addresses = "addresses",
        /// Per broker address: the broker ids claimed for it
        /// (`brokers_by_address[].conflicting_broker_ids`).
        AddressBrokerIds = "address_broker_ids",
        /// The controller timeline's epochs, and its runs of leaders' answers in no
        /// epoch shown (`controller_timeline`).
        ControllerSpans = "controller_spans",
    }
}

impl crate::diag::facts::IntoFact for AnalysisTable {
    fn fact(self) -> crate::diag::Fact {
        self.as_str().into()
    }
}

/// What a [`Kind::AnalysisLimit`] diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnalysisLimit {
    pub table: AnalysisTable,
    pub limit: u64,
    /// The first message past the limit.
    pub frame: u64,
}

impl AnalysisLimit {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            table,
            limit,
            frame,
        } = self;
        facts![table, limit, frame]
    }
}

impl fmt::Display for AnalysisLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            table,
            limit,
            frame,
        } = self;
        // a sentence of its own, not the shape most tables share
        macro_rules! whole {
            ($text:literal) => {
                return write!(f, $text)
            };
        }
        let (named, unfollowed) = match table {
            AnalysisTable::Brokers => (
                "broker ids asked for blocks",
                "have no row in summary.brokers, no error streak, retry or epoch change, no block compared with the metadata log, and a grant of theirs outside the blocks seen is placed unknown",
            ),
            AnalysisTable::BlockBrokers => (
                "broker ids were granted blocks",
                "have their grants placed unknown, never judged",
            ),
            AnalysisTable::BlockLengths => {
                ("block lengths were seen", "are not reported as irregular")
            }
            AnalysisTable::BlockOverlaps => whole!("a block shared ids with more than {limit} earlier blocks or ranges of folded blocks; from frame {frame} on, a block's overlaps past the first {limit} found are neither listed nor counted (pid_block_overlap counts at most {limit} a block)"),
            AnalysisTable::BlockComparisons => whole!("a block could share ids with more than {limit} earlier blocks kept whole; from frame {frame} on, such a block is compared with the first {limit} of them only (by first id), and an overlap with the others goes unfound"),
            AnalysisTable::PlacementBlocks => whole!("more than {limit} blocks kept whole could hold a granted producer id (they start within the longest one's length below it); from frame {frame} on, the latest block holding such an id is not searched for: its grant is placed unknown, never judged a fault"),
            AnalysisTable::FoldedBlocks => whole!("the blocks no longer kept whole folded into more than {limit} ranges of ids that do not touch; from frame {frame} on, the ranges of the lowest ids are forgotten, and an overlap with the blocks folded into them goes unfound"),
            AnalysisTable::BrokerEpochs => whole!("a broker's requests for blocks carried more than {limit} distinct broker epochs; from frame {frame} on, its epochs not seen before are not listed in summary.brokers[].epochs_seen (its epoch changes are still reported)"),
            AnalysisTable::BrokerErrors => whole!("a broker was answered with more than {limit} distinct error codes; from frame {frame} on, its error responses of codes not seen before are not counted in summary.brokers[].errors but in its errors_uncounted (and in its complete exchanges and summary.error_codes)"),
            AnalysisTable::Writes => whole!("more than {limit} partitions and producer ids were written to; from frame {frame} on, the batches of those not seen before are counted but not judged (no write_not_appended finding)"),
            AnalysisTable::WriteRefusals => whole!("more than {limit} producer ids, epochs and errors were refused writes; from frame {frame} on, the refusals of those not seen before are counted in writes.errors but not grouped into findings"),
            AnalysisTable::WriteMemory => whole!("the writes analysis held more than its share of --max-memory ({limit} bytes, a sixteenth) at frame {frame}; it forgot the partition-and-producer states written least recently (but those of a producer id written by two producers) and reported its oldest groups of refusals at once: a batch written to a forgotten state is judged as at the capture's start, so a batch never appended among them may go unfound (run again with a larger --max-memory)"),
            AnalysisTable::GrantMemory => whole!("the holders of granted producer ids took more than their share of --max-memory ({limit} bytes, a sixteenth) at frame {frame}; those of the lowest ids were forgotten until three quarters of it was held, and are again whenever it fills: a duplicate grant of a forgotten id goes unfound, and an overlap of blocks does not count its holders (producer_ids.summary.grants_forgotten counts them; run again with a larger --max-memory)"),
            AnalysisTable::WriteGrants => whole!("more than {limit} producer ids were granted while the writes analysis followed their grants; from frame {frame} on, the grants of those not seen before are not remembered, and writes.producers_of_interest[].grant_frames of such an id is empty"),
            AnalysisTable::TopicNames => whole!("more than {limit} topic ids were named in Metadata responses; from frame {frame} on, those not seen before are not remembered, and writes to them name the topic by its id"),
            AnalysisTable::WriteProducers => whole!("more than {limit} producer ids and epochs wrote; from frame {frame} on, the writers of those not seen before are not followed (no write_shared_producer finding)"),
            AnalysisTable::Addresses => whole!("more than {limit} broker addresses were named in the cluster's messages; from frame {frame} on, those not seen before are not remembered: not in brokers_by_address, and the broker on them is not known from them"),
            AnalysisTable::AddressBrokerIds => whole!("a broker address was claimed for more than {limit} broker ids; from frame {frame} on, the ids not seen before for it are not listed in its conflicting_broker_ids (it is conflicting all the same)"),
            AnalysisTable::ControllerSpans => whole!("more than {limit} quorum epochs, or runs of leaders' answers in no epoch shown, were seen; from frame {frame} on, the earliest are dropped: controller_timeline no longer shows who led before those kept"),
            AnalysisTable::Coverage => whole!("more than {limit} node ids were named in the cluster's messages; from frame {frame} on, those not seen before are not remembered, and no broker or controller is said missing from the capture"),
        };
        write!(
            f,
            "more than {limit} {named}; from frame {frame} on, those not seen before are counted and listed but {unfollowed}"
        )
    }
}
