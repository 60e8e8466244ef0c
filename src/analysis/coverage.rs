//! Which brokers the capture shows talking to the controllers, against those it knows of.
//!
//! A broker talks to the active controller all the time: a BrokerHeartbeat request every
//! two seconds by default, a BrokerRegistration when it starts, AllocateProducerIds when it
//! needs a block. A capture that holds none of these from a broker it knows of (from a
//! registration, a Metadata or DescribeCluster response, the metadata log, or a block the
//! log commits to it) did not see that broker's controller connection: its blocks, and
//! the overlaps they may have with the ones captured, are not in the capture. A broker the
//! log unregistered before the capture had left the cluster: it is not expected.

use std::collections::{BTreeMap, BTreeSet};

use crate::kafka::apis::ClusterFact;
use crate::pairing::ClusterEvent;

/// Broker ids remembered: beyond any cluster we meet.
const MAX_BROKERS: usize = 65_536;

/// The brokers seen talking to the controllers, as the capture goes.
#[derive(Debug, Default)]
pub struct Tracker {
    seen: BTreeSet<i32>,
    /// The first controller message's time, unix milliseconds: a broker the metadata log
    /// unregistered before it had left the cluster before the capture.
    first_ms: Option<i64>,
}

/// Brokers known of and brokers seen talking to the controllers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub known: BTreeSet<i32>,
    pub seen: BTreeSet<i32>,
}

impl Coverage {
    /// Known brokers whose controller connection the capture does not show.
    pub fn not_seen(&self) -> impl Iterator<Item = i32> + '_ {
        self.known.difference(&self.seen).copied()
    }
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
            self.first_ms = i64::try_from(ev.meta.timestamp.as_nanos() / 1_000_000).ok();
        }
        let broker = match &*ev.fact {
            ClusterFact::Heartbeat(hb) => Some(hb.broker_id),
            ClusterFact::Listeners(reg) => Some(reg.broker_id),
            ClusterFact::BlockAsked { broker_id } => *broker_id,
            _ => None,
        };
        if let Some(id) = broker.filter(|id| *id >= 0) {
            if self.seen.len() < MAX_BROKERS {
                self.seen.insert(id);
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
    ) -> Coverage {
        let gone = log
            .map(|l| gone_before(l, self.first_ms))
            .unwrap_or_default();
        let from_log = log.into_iter().flat_map(|l| {
            let registered = l.registrations.iter().map(|r| r.broker_id);
            registered.chain(l.blocks.iter().map(|b| b.broker_id))
        });
        let mut all: BTreeSet<i32> = known
            .into_iter()
            .chain(from_log.filter(|id| !gone.contains(id)))
            .filter(|id| *id >= 0)
            .take(MAX_BROKERS)
            .collect();
        all.extend(&self.seen);
        Coverage {
            known: all,
            seen: self.seen,
        }
    }
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
        tracker.finish([], Some(log)).known.into_iter().collect()
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
