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

use crate::diag::obs::AnalysisTable;
use crate::kafka::apis::ClusterFact;
use crate::kafka::cluster;
use crate::pairing::ClusterEvent;

/// Addresses remembered: beyond these a cluster is larger than any we meet.
pub const MAX_ADDRESSES: usize = 65_536;
/// Broker ids remembered per address: two already make it conflicting, a broker that
/// moves claims one more, so a capture with more is hostile or broken.
pub const MAX_IDS_PER_ADDRESS: usize = 64;
/// Bytes of a listener's name kept: Kafka's are a word (`PLAINTEXT`, `CONTROLLER`); a
/// longer one is cut, marked with a last `…`.
pub const MAX_LISTENER_NAME: usize = 256;

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
    /// The limits a claim went past, each said once.
    said: BTreeSet<AnalysisTable>,
}

impl Addresses {
    /// A cluster message: listeners and broker lists. Returns the limits it was the
    /// first to go past (`analysis_limit`).
    pub fn cluster(&mut self, ev: &ClusterEvent) -> Vec<(AnalysisTable, usize)> {
        let mut reached = Vec::new();
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
                    let name = Some(l.name.as_str());
                    reached.extend(self.claim(&l.host, i32::from(l.port), claim, name));
                }
            }
            ClusterFact::Brokers { api, seen } => {
                // DescribeCluster of endpoint type 2 lists controllers, not brokers.
                if seen.endpoint_type == Some(2) {
                    return reached;
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
                    reached.extend(self.claim(&b.host, b.port, claim, None));
                }
            }
            ClusterFact::Quorum(_)
            | ClusterFact::TopicsCreated(_)
            | ClusterFact::Heartbeat(_)
            | ClusterFact::Fetch(_)
            | ClusterFact::BlockAsked { .. }
            | ClusterFact::Undecoded(_) => {}
        }
        reached
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
                // a limit the log goes past is said by the capture's first claim past it
                let _ = self.claim(&e.host, i32::from(e.port), claim, Some(&e.name));
            }
        }
    }

    /// Remembers that `claim` names the broker on `host:port`; the limit it is the first
    /// to go past, if any.
    fn claim(
        &mut self,
        host: &str,
        port: i32,
        claim: Claim,
        listener: Option<&str>,
    ) -> Option<(AnalysisTable, usize)> {
        let (Ok(ip), Ok(port)) = (host.parse::<IpAddr>(), u16::try_from(port)) else {
            self.unresolved += 1;
            return None;
        };
        let address = SocketAddr::new(ip, port);
        let room = self.by_address.len() < MAX_ADDRESSES;
        let refused = match self.by_address.get_mut(&address) {
            Some((_, _, ids))
                if ids.len() < MAX_IDS_PER_ADDRESS || ids.contains(&claim.broker_id) =>
            {
                ids.insert(claim.broker_id);
                return None;
            }
            Some(_) => (AnalysisTable::AddressBrokerIds, MAX_IDS_PER_ADDRESS),
            None if room => {
                let ids = BTreeSet::from([claim.broker_id]);
                let listener = listener.map(kept_name);
                self.by_address.insert(address, (claim, listener, ids));
                return None;
            }
            None => (AnalysisTable::Addresses, MAX_ADDRESSES),
        };
        self.said.insert(refused.0).then_some(refused)
    }

    /// The broker serving on `server`, and how that is known (never for an address past
    /// [`MAX_ADDRESSES`], which is not remembered).
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

/// A listener's name as kept: whole up to [`MAX_LISTENER_NAME`] bytes, cut at a
/// character's boundary before it and marked with `…` past it.
fn kept_name(name: &str) -> String {
    if name.len() <= MAX_LISTENER_NAME {
        return name.to_owned();
    }
    let end = (0..=MAX_LISTENER_NAME)
        .rev()
        .find(|at| name.is_char_boundary(*at))
        .unwrap_or(0);
    format!("{}…", name.get(..end).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim_of(broker_id: i32, frame: u64) -> Claim {
        Claim {
            broker_id,
            source: AddressSource::Metadata,
            said: Said::Message {
                frame,
                connection: 0,
            },
        }
    }

    /// An address claimed for a new broker id by every message (hostile) lists the
    /// first [`MAX_IDS_PER_ADDRESS`] and says so once, where the set grew with the capture.
    #[test]
    fn an_address_lists_so_many_broker_ids_and_says_so_once() {
        let mut a = Addresses::default();
        let n = MAX_IDS_PER_ADDRESS as i32 + 10;
        let said: Vec<(i32, (AnalysisTable, usize))> = (0..n)
            .chain([3])
            .filter_map(|id| Some((id, a.claim("10.0.0.1", 9092, claim_of(id, 1), None)?)))
            .collect();
        let limit = (AnalysisTable::AddressBrokerIds, MAX_IDS_PER_ADDRESS);
        assert_eq!(said, vec![(MAX_IDS_PER_ADDRESS as i32, limit)]);
        let table = a.table();
        let expected: Vec<i32> = (0..MAX_IDS_PER_ADDRESS as i32).collect();
        assert_eq!(table.len(), 1);
        assert_eq!(table[0].conflicting, expected);
        assert_eq!(table[0].claim, None);
    }

    /// Addresses past [`MAX_ADDRESSES`] are not remembered, and the first says so.
    #[test]
    fn addresses_past_the_limit_are_said_once() {
        let mut a = Addresses::default();
        let hosts = MAX_ADDRESSES as u32 + 5;
        let said: Vec<u32> = (0..hosts)
            .filter(|n| {
                let host = std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string();
                a.claim(&host, 9092, claim_of(1, 1), None).is_some()
            })
            .collect();
        assert_eq!(said, vec![MAX_ADDRESSES as u32]);
        assert_eq!(a.table().len(), MAX_ADDRESSES);
    }

    /// A listener's name past [`MAX_LISTENER_NAME`] bytes is kept cut, at a character's
    /// boundary, and marked; a usual one whole.
    #[test]
    fn a_long_listener_name_is_kept_cut_and_marked() {
        assert_eq!(kept_name("PLAINTEXT"), "PLAINTEXT");
        let exact = "x".repeat(MAX_LISTENER_NAME);
        assert_eq!(kept_name(&exact), exact);
        let long = "é".repeat(MAX_LISTENER_NAME);
        let kept = kept_name(&long);
        let cut = kept.strip_suffix('…').expect("marked as cut");
        assert!(cut.len() <= MAX_LISTENER_NAME && cut.len() > MAX_LISTENER_NAME - 2);
        assert!(long.starts_with(cut));
        let mut a = Addresses::default();
        let _ = a.claim("10.0.0.1", 9092, claim_of(1, 1), Some(&long));
        assert_eq!(a.table()[0].listener.as_deref(), Some(kept.as_str()));
    }
}
