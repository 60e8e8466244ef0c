//! Which brokers the capture shows talking to the controllers, against those it knows of.
//!
//! A broker talks to the active controller all the time: a BrokerHeartbeat request every
//! two seconds by default, a BrokerRegistration when it starts, AllocateProducerIds when it
//! needs a block. A capture that holds none of these from a broker it knows of (from a
//! registration, a Metadata or DescribeCluster response, the metadata log, or a block the
//! log commits to it) did not see that broker's controller connection: its blocks, and
//! the overlaps they may have with the ones captured, are not in the capture.

use std::collections::BTreeSet;

use crate::kafka::apis::ClusterFact;
use crate::pairing::ClusterEvent;

/// Broker ids remembered: beyond any cluster we meet.
const MAX_BROKERS: usize = 65_536;

/// The brokers seen talking to the controllers, as the capture goes.
#[derive(Debug, Default)]
pub struct Tracker {
    seen: BTreeSet<i32>,
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

impl Tracker {
    /// A heartbeat, a registration or a request for a block: its broker was seen.
    pub fn cluster(&mut self, ev: &ClusterEvent) {
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

    /// The coverage, given every broker id known from elsewhere.
    pub fn finish(self, known: impl IntoIterator<Item = i32>) -> Coverage {
        let mut all: BTreeSet<i32> = known
            .into_iter()
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
