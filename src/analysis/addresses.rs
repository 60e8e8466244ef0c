//! Which broker serves on which address, from what the capture shows: the listeners of
//! BrokerRegistration requests, and the brokers of Metadata and DescribeCluster
//! responses. Each mapping says where it came from; an address two sources disagree on,
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

/// How an address is known to be a broker's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub broker_id: i32,
    /// `broker_registration`, `metadata` or `describe_cluster`.
    pub source: &'static str,
    /// Frame of the message that said so first.
    pub frame: u64,
    pub connection: u64,
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
        let (frame, connection) = (ev.meta.frame, ev.endpoints.connection);
        match &*ev.fact {
            ClusterFact::Listeners(reg) => {
                for l in &reg.listeners {
                    let claim = Claim {
                        broker_id: reg.broker_id,
                        source: "broker_registration",
                        frame,
                        connection,
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
                    cluster::METADATA => "metadata",
                    _ => "describe_cluster",
                };
                for b in &seen.brokers {
                    let claim = Claim {
                        broker_id: b.node_id,
                        source,
                        frame,
                        connection,
                    };
                    self.claim(&b.host, b.port, claim, None);
                }
            }
            ClusterFact::Quorum(_) | ClusterFact::Undecoded(_) => {}
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
