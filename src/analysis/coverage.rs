//! Which brokers and controllers the capture shows talking to the controller quorum,
//! against those it knows of.
//!
//! A broker talks to the active controller all the time: a BrokerHeartbeat request every
//! two seconds by default, a BrokerRegistration when it starts, AllocateProducerIds when it
//! needs a block. A capture that holds none of these from a broker it knows of (from a
//! registration, a Metadata or DescribeCluster response, the metadata log, or a block the
//! log commits to it) did not see that broker's controller connection: its blocks, and
//! the overlaps they may have with the ones captured, are not in the capture. A broker the
//! log unregistered before the capture had left the cluster: it is not expected.
//!
//! A controller is seen by its own quorum messages: a follower fetches the quorum's log
//! from the leader all the time (a Fetch of `__cluster_metadata` naming it; brokers fetch
//! it too, so a fetcher known as a broker is not taken for a controller), a candidate asks
//! for votes, a leader begins and ends its epochs and answers AllocateProducerIds (the
//! controller timeline's proofs). Controllers are known from those, from the ids quorum
//! messages name (a vote's or an epoch's recipient, a leader named), from DescribeCluster
//! listing controllers, and from the metadata log's LeaderChange records and their voters.

use std::collections::{BTreeMap, BTreeSet};

use super::controllers::Leaders;
use crate::kafka::apis::ClusterFact;
use crate::kafka::cluster::{self, QuorumMessage};
use crate::pairing::ClusterEvent;

/// Broker ids remembered: beyond any cluster we meet.
pub const MAX_NODES: usize = 65_536;

/// The brokers seen talking to the controllers, as the capture goes.
#[derive(Debug, Default)]
pub struct Tracker {
    seen: BTreeSet<i32>,
    /// Nodes that fetched the quorum's log: followers and brokers.
    fetchers: BTreeSet<i32>,
    /// Controllers that sent quorum messages of their own.
    controllers_seen: BTreeSet<i32>,
    /// Controllers quorum messages name.
    controllers_named: BTreeSet<i32>,
    /// The first controller message's time, unix milliseconds: a broker the metadata log
    /// unregistered before it had left the cluster before the capture.
    first_ms: Option<i64>,
    /// Whether a set refused an id, and the message where one first did.
    refused: bool,
    first_refused: Option<(u64, crate::timestamp::Timestamp)>,
}

/// Brokers known of and brokers seen talking to the controllers; controllers known of
/// and controllers seen in the quorum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub known: BTreeSet<i32>,
    pub seen: BTreeSet<i32>,
    pub controllers_known: BTreeSet<i32>,
    pub controllers_seen: BTreeSet<i32>,
    /// Whether node ids past [`MAX_NODES`] were not remembered: then no node is said
    /// unseen, since it may be one of them.
    pub ids_not_remembered: bool,
}

impl Coverage {
    /// Known brokers whose controller connection the capture does not show.
    pub fn not_seen(&self) -> impl Iterator<Item = i32> + '_ {
        let judged = !self.ids_not_remembered;
        self.known
            .difference(&self.seen)
            .copied()
            .filter(move |_| judged)
    }

    /// Known controllers no quorum message of their own shows.
    pub fn controllers_not_seen(&self) -> impl Iterator<Item = i32> + '_ {
        let judged = !self.ids_not_remembered;
        self.controllers_known
            .difference(&self.controllers_seen)
            .copied()
            .filter(move |_| judged)
    }
}

/// A moment in unix milliseconds.
fn millis(at: crate::timestamp::Timestamp) -> Option<i64> {
    i64::try_from(at.as_nanos() / 1_000_000).ok()
}

/// Adds `id` to `set` unless it is no node's id or the set is full; whether it was
/// refused for a full set.
fn remember(set: &mut BTreeSet<i32>, id: i32) -> bool {
    if id < 0 || set.contains(&id) {
        return false;
    }
    if set.len() >= MAX_NODES {
        return true;
    }
    set.insert(id);
    false
}

/// Brokers whose latest record in `log` is an UnregisterBrokerRecord older than
/// `before_ms` (none without it).
fn gone_before(log: &crate::metadata_log::MetadataLog, before_ms: Option<i64>) -> BTreeSet<i32> {
    let Some(before_ms) = before_ms else {
        return BTreeSet::new();
    };
    // each broker's latest registration, once: a log may hold many of both
    let mut registered_at: BTreeMap<i32, i64> = BTreeMap::new();
    for r in &log.registrations {
        let at = registered_at.entry(r.broker_id).or_insert(r.place.offset);
        *at = (*at).max(r.place.offset);
    }
    log.unregistrations
        .iter()
        .filter(|(id, place)| {
            place.time_ms < before_ms && registered_at.get(id).is_none_or(|at| *at < place.offset)
        })
        .map(|(id, _)| *id)
        .collect()
}

impl Tracker {
    /// A heartbeat, a registration or a request for a block: its broker was seen.
    pub fn cluster(&mut self, ev: &ClusterEvent) {
        if self.first_ms.is_none() {
            self.first_ms = millis(ev.meta.timestamp);
        }
        let broker = match &ev.fact {
            ClusterFact::Heartbeat(hb) => Some(hb.broker_id),
            ClusterFact::Listeners(reg) => Some(reg.broker_id),
            ClusterFact::BlockAsked { broker_id } => *broker_id,
            ClusterFact::Fetch(fetch) if fetch.metadata_log => {
                self.refused |= remember(&mut self.fetchers, fetch.replica_id);
                None
            }
            ClusterFact::Quorum(q) => {
                self.quorum(q);
                None
            }
            ClusterFact::Brokers { seen, .. } if seen.endpoint_type == Some(2) => {
                for c in &seen.brokers {
                    self.refused |= remember(&mut self.controllers_named, c.node_id);
                }
                None
            }
            _ => None,
        };
        if let Some(id) = broker {
            self.refused |= remember(&mut self.seen, id);
        }
        if self.refused && self.first_refused.is_none() {
            self.first_refused = Some((ev.meta.frame, ev.meta.timestamp));
        }
    }

    /// The message where node ids first went past [`MAX_NODES`], if they did.
    pub fn first_refused(&self) -> Option<(u64, crate::timestamp::Timestamp)> {
        self.first_refused
    }

    /// A Vote, BeginQuorumEpoch or EndQuorumEpoch message: its sender is seen (a
    /// request's candidate or leader), the ids it names are known.
    fn quorum(&mut self, q: &QuorumMessage) {
        if let Some(voter) = q.voter_id {
            self.refused |= remember(&mut self.controllers_named, voter);
        }
        for p in &q.partitions {
            let sender = if q.api == cluster::VOTE {
                p.candidate_id
            } else {
                p.leader_id
            };
            if let Some(id) = sender {
                let set = if q.is_request {
                    &mut self.controllers_seen
                } else {
                    &mut self.controllers_named
                };
                self.refused |= remember(set, id);
            }
            if let (Some(id), false) = (p.leader_id, q.is_request) {
                self.refused |= remember(&mut self.controllers_named, id);
            }
        }
        for e in &q.endpoints {
            if let Some(id) = e.node_id {
                self.refused |= remember(&mut self.controllers_named, id);
            }
        }
    }

    /// The coverage, given every broker id known from the capture and from the metadata
    /// log (`log`): a broker the log last unregistered before the capture's first
    /// controller message is not expected in it (`kafka-cluster unregister`, after a
    /// decommission).
    pub fn finish(
        self,
        known: impl IntoIterator<Item = i32>,
        log: Option<&crate::metadata_log::MetadataLog>,
        leaders: &Leaders,
    ) -> Coverage {
        let gone = log
            .map(|l| gone_before(l, self.first_ms))
            .unwrap_or_default();
        let from_log = log.into_iter().flat_map(|l| {
            let registered = l.registrations.iter().map(|r| r.broker_id);
            registered.chain(l.blocks.iter().map(|b| b.broker_id))
        });
        let mut known = known
            .into_iter()
            .chain(from_log.filter(|id| !gone.contains(id)))
            .filter(|id| *id >= 0);
        let mut all: BTreeSet<i32> = known.by_ref().take(MAX_NODES).collect();
        let truncated = known.next().is_some();
        all.extend(&self.seen);
        let (controllers_known, controllers_seen) = controllers(
            self.controllers_named,
            self.controllers_seen,
            self.fetchers.difference(&all).copied(),
            log,
            leaders,
        );
        Coverage {
            known: all,
            seen: self.seen,
            controllers_known,
            controllers_seen,
            ids_not_remembered: self.refused || truncated,
        }
    }
}

/// The controllers known and seen: those `named` and `seen` by quorum messages, the
/// `followers` (fetchers of the quorum's log not known as brokers), the leaders the
/// timeline shows (seen when it proves them leading), and the log's leaders and voters.
fn controllers(
    named: BTreeSet<i32>,
    mut seen: BTreeSet<i32>,
    followers: impl Iterator<Item = i32>,
    log: Option<&crate::metadata_log::MetadataLog>,
    leaders: &Leaders,
) -> (BTreeSet<i32>, BTreeSet<i32>) {
    for id in followers {
        remember(&mut seen, id);
    }
    let mut known = named;
    for span in &leaders.spans {
        remember(&mut known, span.leader_id);
        if span.proven.is_some() {
            remember(&mut seen, span.leader_id);
        }
    }
    for run in &leaders.unplaced {
        let first = millis(run.proven.first.0.timestamp);
        let last = millis(run.proven.last.0.timestamp);
        if let Some(id) = run
            .controller_id
            .or_else(|| log?.leader_between(first?, last?))
        {
            remember(&mut seen, id);
        }
    }
    for change in log.iter().flat_map(|l| &l.leader_changes) {
        remember(&mut known, change.leader_id);
        for voter in &change.voters {
            remember(&mut known, *voter);
        }
    }
    known.extend(&seen);
    (known, seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata_log::{MetadataLog, RecordPlace, Registration};

    fn place(offset: i64, time_ms: i64) -> RecordPlace {
        RecordPlace {
            offset,
            time_ms,
            leader_epoch: 1,
            file_idx: 0,
        }
    }

    /// Brokers 1 and 2 registered; 2 unregistered at offset 20, 2 s in.
    fn log() -> MetadataLog {
        let registration = |broker_id, offset| Registration {
            broker_id,
            broker_epoch: 10,
            endpoints: Vec::new(),
            place: place(offset, 1_000),
        };
        MetadataLog {
            registrations: vec![registration(1, 10), registration(2, 11)],
            unregistrations: vec![(2, place(20, 2_000))],
            ..MetadataLog::default()
        }
    }

    fn known(first_ms: Option<i64>, log: &MetadataLog) -> Vec<i32> {
        let tracker = Tracker {
            first_ms,
            ..Tracker::default()
        };
        tracker
            .finish([], Some(log), &Leaders::default())
            .known
            .into_iter()
            .collect()
    }

    fn event(is_request: bool, fact: ClusterFact) -> ClusterEvent {
        ClusterEvent {
            endpoints: crate::pairing::Endpoints {
                connection: 1,
                client: "10.0.0.9:50000".parse().expect("an address"),
                server: "10.0.0.1:9093".parse().expect("an address"),
            },
            meta: crate::kafka::message::MessageMeta {
                frame: 1,
                first_frame: 1,
                timestamp: crate::timestamp::Timestamp {
                    secs: 1_700_000_000,
                    nanos: 0,
                    nano: false,
                },
                size: 40,
                origin: None,
            },
            is_request,
            kept: None,
            fact,
        }
    }

    fn fetch(replica_id: i32, metadata_log: bool) -> ClusterEvent {
        let fetch = cluster::ReplicaFetch {
            replica_id,
            metadata_log,
        };
        event(true, ClusterFact::Fetch(fetch))
    }

    /// Candidate `candidate` asks `voter` for its vote.
    fn vote(candidate: i32, voter: i32) -> ClusterEvent {
        let partition = cluster::QuorumPartition {
            topic: "__cluster_metadata".into(),
            partition: 0,
            leader_id: None,
            leader_epoch: None,
            candidate_id: Some(candidate),
            candidate_epoch: Some(2),
            pre_vote: Some(false),
            vote_granted: None,
            error_code: None,
        };
        let q = QuorumMessage {
            api: cluster::VOTE,
            version: 1,
            is_request: true,
            cluster_id: None,
            voter_id: Some(voter),
            error_code: None,
            partitions: vec![partition],
            endpoints: Vec::new(),
        };
        event(true, ClusterFact::Quorum(q))
    }

    #[test]
    fn controllers_are_seen_by_their_own_quorum_messages_and_known_by_others() {
        let mut tracker = Tracker::default();
        for ev in [
            fetch(102, true),
            fetch(1, true),  // a broker, known as one
            fetch(7, false), // a consumer's or a replica's fetch
            vote(103, 101),  // 103 asks, 101 is named
            fetch(-1, true), // no node
        ] {
            tracker.cluster(&ev);
        }
        let log = MetadataLog {
            leader_changes: vec![crate::metadata_log::LeaderChange {
                leader_id: 101,
                voters: vec![101, 102, 103, 104],
                place: place(1, 1_000),
            }],
            ..MetadataLog::default()
        };
        let c = tracker.finish([1], Some(&log), &Leaders::default());
        assert_eq!(
            c.controllers_seen.iter().copied().collect::<Vec<_>>(),
            [102, 103]
        );
        assert_eq!(c.controllers_known.len(), 4);
        assert_eq!(c.controllers_not_seen().collect::<Vec<_>>(), [101, 104]);
        assert_eq!(
            c.known.iter().copied().collect::<Vec<_>>(),
            [1],
            "no controller taken for a broker"
        );
    }

    /// Past [`MAX_NODES`] ids, those not seen before are not remembered: the message
    /// where that began is kept for its `analysis_limit`, and no broker is said unseen
    /// (it may be one of them).
    #[test]
    fn node_ids_past_the_limit_are_not_remembered_and_no_broker_is_said_unseen() {
        let mut tracker = Tracker::default();
        for id in 0..MAX_NODES as i32 {
            tracker.cluster(&event(
                true,
                ClusterFact::BlockAsked {
                    broker_id: Some(id),
                },
            ));
        }
        assert_eq!(tracker.first_refused(), None);
        let mut past = event(
            true,
            ClusterFact::BlockAsked {
                broker_id: Some(-7),
            },
        );
        tracker.cluster(&past);
        assert_eq!(tracker.first_refused(), None, "no node's id");
        past = event(
            true,
            ClusterFact::BlockAsked {
                broker_id: Some(1 << 20),
            },
        );
        past.meta.frame = 99;
        tracker.cluster(&past);
        assert_eq!(tracker.first_refused().map(|(frame, _)| frame), Some(99));
        let coverage = tracker.finish([1 << 21], None, &Leaders::default());
        assert!(coverage.ids_not_remembered);
        assert!(coverage.known.contains(&(1 << 21)));
        assert_eq!(coverage.not_seen().count(), 0);
    }

    #[test]
    fn a_broker_unregistered_before_the_capture_is_not_expected_in_it() {
        assert_eq!(known(Some(5_000), &log()), [1]);
        // unregistered while the capture ran: it may have talked before
        assert_eq!(known(Some(1_500), &log()), [1, 2]);
        // no controller message: nothing to place the unregistration against
        assert_eq!(known(None, &log()), [1, 2]);
        // registered again after it
        let mut again = log();
        again.registrations.push(Registration {
            broker_id: 2,
            broker_epoch: 30,
            endpoints: Vec::new(),
            place: place(30, 3_000),
        });
        assert_eq!(known(Some(5_000), &again), [1, 2]);
    }
}
