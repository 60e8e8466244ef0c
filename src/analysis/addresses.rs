//! Which broker serves on which address, from what the capture shows: the listeners of
//! BrokerRegistration requests, and the brokers of Metadata and DescribeCluster
//! responses; and from the RegisterBrokerRecords of a metadata log, when one is given. Each mapping says where it came from; an address two sources disagree on,
//! or a listener given by host name (there is no DNS here), is left unknown.
//!
//! The host a broker's controller connection comes from is not used: that a host runs
//! one broker is never proven by a capture (another broker on it may not have asked for
//! a block yet), and a grant taken for the wrong broker's would be a false finding.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

use crate::kafka::apis::ClusterFact;
use crate::kafka::cluster;
use crate::pairing::ClusterEvent;

/// Addresses remembered: beyond these a cluster is larger than any we meet.
const MAX_ADDRESSES: usize = 65_536;

crate::names::closed_set! {
    /// What said an address is a broker's.
    pub enum AddressSource {
        BrokerRegistration = "broker_registration",
        Metadata = "metadata",
        DescribeCluster = "describe_cluster",
        MetadataLog = "metadata_log",
    }
}

/// How an address is known to be a broker's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub broker_id: i32,
    pub source: AddressSource,
    pub said: Said,
}

/// Where a claim was said first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Said {
    /// A message of the capture: its frame and connection.
    Message { frame: u64, connection: u64 },
    /// A RegisterBrokerRecord of the metadata log, at this offset.
    Log { offset: i64 },
}

/// One address and what is known of it, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub address: SocketAddr,
    /// The broker, when every source agrees on one.
    pub claim: Option<Claim>,
    /// The first claim, agreed or not.
    pub first: Option<Claim>,
    /// Broker ids claimed for it, when sources disagree.
    pub conflicting: Vec<i32>,
    pub listener: Option<String>,
}

#[derive(Debug, Default)]
pub struct Addresses {
    by_address: BTreeMap<SocketAddr, (Claim, Option<String>, BTreeSet<i32>)>,
    /// Listener host names that are not IP addresses: not resolved.
    pub unresolved: u64,
}

impl Addresses {
    /// A cluster message: listeners and broker lists.
    pub fn cluster(&mut self, ev: &ClusterEvent) {
        let said = Said::Message {
            frame: ev.meta.frame,
            connection: ev.endpoints.connection,
        };
        match &ev.fact {
            ClusterFact::Listeners(reg) => {
                for l in &reg.listeners {
                    let claim = Claim {
                        broker_id: reg.broker_id,
                        source: AddressSource::BrokerRegistration,
                        said,
                    };
                    self.claim(&l.host, i32::from(l.port), claim, Some(&l.name));
                }
            }
            ClusterFact::Brokers { api, seen } => {
                // DescribeCluster of endpoint type 2 lists controllers, not brokers.
                if seen.endpoint_type == Some(2) {
                    return;
                }
                let source = match *api {
                    cluster::METADATA => AddressSource::Metadata,
                    _ => AddressSource::DescribeCluster,
                };
                for b in &seen.brokers {
                    let claim = Claim {
                        broker_id: b.node_id,
                        source,
                        said,
                    };
                    self.claim(&b.host, b.port, claim, None);
                }
            }
            ClusterFact::Quorum(_)
            | ClusterFact::TopicsCreated(_)
            | ClusterFact::Heartbeat(_)
            | ClusterFact::Fetch(_)
            | ClusterFact::BlockAsked { .. }
            | ClusterFact::Undecoded(_) => {}
        }
    }

    /// The listeners a metadata log's RegisterBrokerRecords give (read before the capture).
    pub fn log_registrations(&mut self, registrations: &[crate::metadata_log::Registration]) {
        for r in registrations {
            for e in &r.endpoints {
                let claim = Claim {
                    broker_id: r.broker_id,
                    source: AddressSource::MetadataLog,
                    said: Said::Log {
                        offset: r.place.offset,
                    },
                };
                self.claim(&e.host, i32::from(e.port), claim, Some(&e.name));
            }
        }
    }

    fn claim(&mut self, host: &str, port: i32, claim: Claim, listener: Option<&str>) {
        let (Ok(ip), Ok(port)) = (host.parse::<IpAddr>(), u16::try_from(port)) else {
            self.unresolved += 1;
            return;
        };
        let address = SocketAddr::new(ip, port);
        if let Some((_, _, ids)) = self.by_address.get_mut(&address) {
            ids.insert(claim.broker_id);
            return;
        }
        if self.by_address.len() < MAX_ADDRESSES {
            let ids = BTreeSet::from([claim.broker_id]);
            self.by_address
                .insert(address, (claim, listener.map(str::to_owned), ids));
        }
    }

    /// The broker serving on `server`, and how that is known.
    pub fn broker_of(&self, server: SocketAddr) -> Option<Claim> {
        let (claim, _, ids) = self.by_address.get(&server)?;
        (ids.len() == 1).then_some(*claim)
    }

    /// Every address known, in address order.
    pub fn table(&self) -> Vec<BrokerAddress> {
        self.by_address
            .iter()
            .map(|(address, (claim, listener, ids))| BrokerAddress {
                address: *address,
                claim: (ids.len() == 1).then_some(*claim),
                first: Some(*claim),
                conflicting: if ids.len() > 1 {
                    ids.iter().copied().collect()
                } else {
                    Vec::new()
                },
                listener: listener.clone(),
            })
            .collect()
    }
}
