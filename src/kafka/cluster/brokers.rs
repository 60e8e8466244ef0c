//! The brokers a Metadata (key 3) or DescribeCluster (key 60) response lists, with the
//! addresses they serve clients on.
//!
//! Metadata response, versions 0-13, flexible 9+: ThrottleTimeMs int32 (v3+); Brokers
//! [{NodeId int32, Host string, Port int32, Rack nullable string (v1+)}]; ClusterId
//! nullable string (v2+); ControllerId int32 (v1+); then Topics, which can be huge and
//! are not read (nor v8-10's ClusterAuthorizedOperations and v13's ErrorCode after them).
//!
//! DescribeCluster response, versions 0-2, all flexible: ThrottleTimeMs int32; ErrorCode
//! int16; ErrorMessage nullable string; EndpointType int8 (v1+); ClusterId string;
//! ControllerId int32; Brokers [{BrokerId int32, Host string, Port int32, Rack nullable
//! string, IsFenced bool (v2+)}]; ClusterAuthorizedOperations int32.

use super::{Wire, DESCRIBE_CLUSTER, METADATA};
use crate::kafka::reader::DecodeError;
use crate::kafka::tables::ErrorCode;

/// What a Metadata or DescribeCluster response says about the cluster's nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokersSeen {
    /// Brokers, or controllers when `endpoint_type` is `Some(2)`.
    pub brokers: Vec<BrokerEndpoint>,
    /// `ClusterId`; `None` when null (Metadata v2+) or not in the version (Metadata v0-1).
    pub cluster_id: Option<String>,
    /// `ControllerId` (Metadata v1+, DescribeCluster). In a KRaft cluster's Metadata this
    /// is a live broker picked for clients, not the active controller: it says nothing
    /// about leadership.
    pub controller_id: Option<i32>,
    /// DescribeCluster v1+ `EndpointType`: 1 brokers, 2 controllers. `None` in Metadata and
    /// DescribeCluster v0, whose lists are brokers.
    pub endpoint_type: Option<i8>,
    /// DescribeCluster's top-level `ErrorCode`; `None` for Metadata.
    pub error_code: Option<ErrorCode>,
    /// Metadata v10+: each topic's id and name (those with both), so that a Produce
    /// request of version 13, which names topics by id, can be told by name.
    pub topics: Vec<([u8; 16], String)>,
}

/// One node of the list, with its address as the cluster advertises it (`host` may be a
/// name, not an address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// DescribeCluster v2+ `IsFenced`; `None` where the version has no such field.
    pub is_fenced: Option<bool>,
}

/// The brokers, cluster id and controller id of a Metadata response of `version`
/// (`message` starts at the response header, and may be only the first bytes of a large
/// response: the topics after the controller id are not read).
pub fn metadata_response(message: &[u8], version: i16) -> Result<BrokersSeen, DecodeError> {
    let mut w = Wire::response(message, METADATA, version)?;
    if version >= 3 {
        w.i32("ThrottleTimeMs")?;
    }
    let count = w.array_len("Brokers")?;
    let mut brokers = Vec::new(); // grows with what is read, not with the count
    for _ in 0..count {
        brokers.push(BrokerEndpoint {
            node_id: w.i32("Brokers.NodeId")?,
            host: w.string("Brokers.Host")?,
            port: w.i32("Brokers.Port")?,
            rack: match version {
                0 => None,
                _ => w.nullable_string("Brokers.Rack")?,
            },
            is_fenced: None,
        });
        w.tags()?;
    }
    let cluster_id = match version {
        0 | 1 => None,
        _ => w.nullable_string("ClusterId")?,
    };
    let controller_id = match version {
        0 => None,
        _ => Some(w.i32("ControllerId")?),
    };
    // The brokers are what the capture needs most: a message cut among the topics (a
    // snaplen) still gives them, with the topics read whole before the cut.
    let mut topics = Vec::new();
    match metadata_rest(&mut w, &mut topics) {
        Ok(()) | Err(DecodeError::Short { .. }) => {}
        Err(err) => return Err(err),
    }
    Ok(BrokersSeen {
        brokers,
        cluster_id,
        controller_id,
        endpoint_type: None,
        error_code: None,
        topics,
    })
}

/// A Metadata response after `ControllerId`: its topics (the id and name of each that has
/// both, v10+, into `topics` as they are read) and the fields after them, to its end.
fn metadata_rest(
    w: &mut Wire<'_>,
    topics: &mut Vec<([u8; 16], String)>,
) -> Result<(), DecodeError> {
    let version = w.version;
    let count = w.array_len("Topics")?;
    for _ in 0..count {
        w.i16("Topics.ErrorCode")?;
        let name = match version {
            12.. => w.nullable_string("Topics.Name")?,
            _ => Some(w.string("Topics.Name")?),
        };
        let id = (version >= 10)
            .then(|| w.uuid("Topics.TopicId"))
            .transpose()?;
        if version >= 1 {
            w.bool("Topics.IsInternal")?;
        }
        let partitions = w.array_len("Topics.Partitions")?;
        for _ in 0..partitions {
            w.i16("Partitions.ErrorCode")?;
            w.i32("Partitions.PartitionIndex")?;
            w.i32("Partitions.LeaderId")?;
            if version >= 7 {
                w.i32("Partitions.LeaderEpoch")?;
            }
            let lists: &[&'static str] = match version {
                5.. => &[
                    "Partitions.ReplicaNodes",
                    "Partitions.IsrNodes",
                    "Partitions.OfflineReplicas",
                ],
                _ => &["Partitions.ReplicaNodes", "Partitions.IsrNodes"],
            };
            for list in lists {
                for _ in 0..w.array_len(list)? {
                    w.i32(list)?;
                }
            }
            w.tags()?;
        }
        if version >= 8 {
            w.i32("Topics.TopicAuthorizedOperations")?;
        }
        w.tags()?;
        // the all-zero id is Kafka's "none"
        if let (Some(id), Some(name)) = (id.filter(|id| *id != [0; 16]), name) {
            topics.push((id, name));
        }
    }
    if (8..=10).contains(&version) {
        w.i32("ClusterAuthorizedOperations")?;
    }
    if version >= 13 {
        w.i16("ErrorCode")?;
    }
    w.tags()?;
    w.r.finish()
}

/// The nodes of a DescribeCluster response of `version` (`message` starts at the
/// response header); every byte must be read.
pub fn describe_cluster_response(message: &[u8], version: i16) -> Result<BrokersSeen, DecodeError> {
    let mut w = Wire::response(message, DESCRIBE_CLUSTER, version)?;
    w.i32("ThrottleTimeMs")?;
    let error_code = ErrorCode(w.i16("ErrorCode")?);
    w.skip_string("ErrorMessage")?;
    let endpoint_type = match version {
        0 => None,
        _ => Some(w.i8("EndpointType")?),
    };
    let cluster_id = w.string("ClusterId")?;
    let controller_id = w.i32("ControllerId")?;
    let count = w.array_len("Brokers")?;
    let mut brokers = Vec::new(); // grows with what is read, not with the count
    for _ in 0..count {
        brokers.push(BrokerEndpoint {
            node_id: w.i32("Brokers.BrokerId")?,
            host: w.string("Brokers.Host")?,
            port: w.i32("Brokers.Port")?,
            rack: w.nullable_string("Brokers.Rack")?,
            is_fenced: match version {
                0 | 1 => None,
                _ => Some(w.bool("Brokers.IsFenced")?),
            },
        });
        w.tags()?;
    }
    w.i32("ClusterAuthorizedOperations")?;
    w.tags()?;
    w.r.finish()?;
    Ok(BrokersSeen {
        brokers,
        cluster_id: Some(cluster_id),
        controller_id: Some(controller_id),
        endpoint_type,
        error_code: Some(error_code),
        topics: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::wire::Msg;
    use super::*;

    /// Metadata response of `version` with two brokers, one of them in a rack, and a topic.
    fn metadata(version: i16) -> Vec<u8> {
        let mut m = Msg::response(METADATA, version);
        if version >= 3 {
            m = m.i32(0);
        }
        m = m.array(2).i32(101).string("127.0.0.1").i32(19101);
        if version >= 1 {
            m = m.nullable_string(Some("r1"));
        }
        m = m.tags().i32(102).string("b2.example").i32(19102);
        if version >= 1 {
            m = m.nullable_string(None);
        }
        m = m.tags();
        if version >= 2 {
            m = m.nullable_string(Some("cid"));
        }
        if version >= 1 {
            m = m.i32(102);
        }
        // Topics: one with a name the decoder must not need.
        m.array(1).i16(0).string("t").bytes
    }

    fn metadata_seen(version: i16) -> BrokersSeen {
        let broker = |node_id, host: &str, port, rack: Option<&str>| BrokerEndpoint {
            node_id,
            host: host.into(),
            port,
            rack: rack.filter(|_| version >= 1).map(Into::into),
            is_fenced: None,
        };
        BrokersSeen {
            brokers: vec![
                broker(101, "127.0.0.1", 19101, Some("r1")),
                broker(102, "b2.example", 19102, None),
            ],
            cluster_id: (version >= 2).then(|| "cid".into()),
            controller_id: (version >= 1).then_some(102),
            endpoint_type: None,
            error_code: None,
            topics: Vec::new(),
        }
    }

    #[test]
    fn reads_the_brokers_of_every_metadata_version() {
        for version in 0..=13 {
            let seen = metadata_response(&metadata(version), version);
            assert_eq!(seen, Ok(metadata_seen(version)), "v{version}");
        }
        assert!(metadata_response(&metadata(14), 14).is_err());
    }

    /// A Metadata response read to its end: each topic's id and name (v10+, so that a
    /// Produce v13 naming topics by id can be told by name), past its partitions.
    #[test]
    fn reads_the_topic_ids_and_names_of_a_whole_metadata_response() {
        for version in [9, 10, 12, 13] {
            let mut m = Msg::response(METADATA, version).i32(0).array(0);
            m = m.nullable_string(Some("cid")).i32(1).array(2);
            for (name, fill) in [(Some("orders"), 7u8), (None, 9)] {
                m = m.i16(0);
                m = match (version, name) {
                    (12.., name) => m.nullable_string(name),
                    (_, name) => m.string(name.unwrap_or("audit")),
                };
                if version >= 10 {
                    m = m.uuid(fill);
                }
                m = m.bool(false).array(1).i16(0).i32(0).i32(1).i32(5);
                m = m.array(2).i32(1).i32(2).array(1).i32(1).array(0).tags();
                m = m.i32(0).tags();
            }
            if (8..=10).contains(&version) {
                m = m.i32(0);
            }
            if version >= 13 {
                m = m.i16(0);
            }
            let bytes = m.tags().bytes;
            let seen = metadata_response(&bytes, version).unwrap();
            let expected = match version {
                12.. => vec![([7u8; 16], "orders".to_owned())],
                10 | 11 => vec![
                    ([7; 16], "orders".to_owned()),
                    ([9; 16], "audit".to_owned()),
                ],
                _ => vec![],
            };
            assert_eq!(seen.topics, expected, "v{version}");
            let mut trailing = bytes.clone();
            trailing.push(0);
            assert!(metadata_response(&trailing, version).is_err(), "v{version}");
        }
    }

    #[test]
    fn metadata_v8_is_rigid_and_v9_flexible() {
        let v8 = metadata(8);
        let v9 = metadata(9);
        // v9 adds the header's and each broker's tags; its lengths are one-byte varints.
        assert_eq!(&v8[4..12], &[0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(&v9[4..10], &[0, 0, 0, 0, 0, 3]);
        assert!(metadata_response(&v8, 9).is_err());
        assert!(metadata_response(&v9, 8).is_err());
    }

    #[test]
    fn a_metadata_prefix_ending_among_the_brokers_fails_short() {
        for version in [0, 8, 9, 13] {
            let whole = metadata(version);
            let topics = 2 + if version >= 9 { 1 + 2 } else { 4 + 3 }; // ErrorCode, Name, count
            let controller_end = whole.len() - topics;
            let full = metadata_response(&whole[..controller_end], version);
            assert_eq!(full, Ok(metadata_seen(version)), "v{version}");
            for cut in 0..controller_end {
                let err = metadata_response(&whole[..cut], version).unwrap_err();
                assert!(
                    matches!(err, DecodeError::Short { .. }),
                    "v{version} cut {cut}: {err}"
                );
            }
        }
    }

    #[test]
    fn a_lying_broker_count_is_refused_before_allocating() {
        let rigid = Msg::response(METADATA, 8).i32(0).i32(i32::MAX).bytes;
        assert!(matches!(
            metadata_response(&rigid, 8),
            Err(DecodeError::Short {
                field: "Brokers",
                offset: 8,
                ..
            })
        ));
        let negative = Msg::response(METADATA, 0).i32(-2).bytes;
        assert!(matches!(
            metadata_response(&negative, 0),
            Err(DecodeError::Invalid {
                field: "Brokers",
                ..
            })
        ));
        let null = Msg::response(METADATA, 9).i32(0).uvarint(0).bytes;
        assert!(matches!(
            metadata_response(&null, 9),
            Err(DecodeError::Invalid {
                field: "Brokers",
                ..
            })
        ));
    }

    /// DescribeCluster response of `version` listing two controllers (v1+: endpoint type 2).
    fn describe(version: i16) -> Vec<u8> {
        let mut m = Msg::response(DESCRIBE_CLUSTER, version)
            .i32(0)
            .i16(0)
            .nullable_string(None);
        if version >= 1 {
            m = m.i8(2);
        }
        m = m.string("cid").i32(3002).array(2);
        for (id, port, rack) in [(3001, 19091, None), (3002, 19092, Some("r2"))] {
            m = m.i32(id).string("10.0.0.1").i32(port).nullable_string(rack);
            if version >= 2 {
                m = m.bool(id == 3001);
            }
            m = m.tags();
        }
        m.i32(i32::MIN).tags().bytes
    }

    fn describe_seen(version: i16) -> BrokersSeen {
        let node = |node_id, port, rack: Option<&str>| BrokerEndpoint {
            node_id,
            host: "10.0.0.1".into(),
            port,
            rack: rack.map(Into::into),
            is_fenced: (version >= 2).then_some(node_id == 3001),
        };
        BrokersSeen {
            brokers: vec![node(3001, 19091, None), node(3002, 19092, Some("r2"))],
            cluster_id: Some("cid".into()),
            controller_id: Some(3002),
            endpoint_type: (version >= 1).then_some(2),
            error_code: Some(ErrorCode::NONE),
            topics: Vec::new(),
        }
    }

    #[test]
    fn reads_the_nodes_of_every_describe_cluster_version() {
        for version in 0..=2 {
            let seen = describe_cluster_response(&describe(version), version);
            assert_eq!(seen, Ok(describe_seen(version)), "v{version}");
            let whole = describe(version);
            for cut in 0..whole.len() {
                let err = describe_cluster_response(&whole[..cut], version).unwrap_err();
                assert!(
                    matches!(err, DecodeError::Short { .. }),
                    "v{version} cut {cut}: {err}"
                );
            }
        }
        assert!(describe_cluster_response(&describe(3), 3).is_err());
    }

    #[test]
    fn describe_cluster_refuses_a_null_cluster_id_and_a_lying_count() {
        let null_id = Msg::response(DESCRIBE_CLUSTER, 0)
            .i32(0)
            .i16(0)
            .nullable_string(None)
            .nullable_string(None)
            .bytes;
        assert!(matches!(
            describe_cluster_response(&null_id, 0),
            Err(DecodeError::Invalid {
                field: "ClusterId",
                ..
            })
        ));
        let lying = Msg::response(DESCRIBE_CLUSTER, 1)
            .i32(0)
            .i16(0)
            .nullable_string(None)
            .i8(1)
            .string("c")
            .i32(1)
            .uvarint(1 << 28)
            .bytes;
        assert!(matches!(
            describe_cluster_response(&lying, 1),
            Err(DecodeError::Short {
                field: "Brokers",
                ..
            })
        ));
    }
}
