//! A record's value as the controller writes it: metadata records in
//! `AbstractApiMessageSerde`'s frame (unsigned varints frame version 1, apiKey, version,
//! then the message in that version's flexible encoding), and control records (key:
//! version i16, type i16; value: the control message). In: a record's key and value;
//! out: its type and, for the few read here (ProducerIdsRecord, RegisterBrokerRecord,
//! UnregisterBrokerRecord, LeaderChange), its fields. Refuses another frame version and a body too short for its
//! fields; other types, and versions newer than the schemas read, are counted undecoded.

use super::Endpoint;
use super::Reason;
use crate::kafka::reader::Reader;

/// Metadata record names by apiKey, as metadata/src/main/resources/common/metadata/*.json
/// name them (6, 13 and 16 were used by pre-release schemas and are gone).
pub fn record_name(api_key: u32) -> String {
    let name = match api_key {
        0 => "RegisterBrokerRecord",
        1 => "UnregisterBrokerRecord",
        2 => "TopicRecord",
        3 => "PartitionRecord",
        4 => "ConfigRecord",
        5 => "PartitionChangeRecord",
        7 => "FenceBrokerRecord",
        8 => "UnfenceBrokerRecord",
        9 => "RemoveTopicRecord",
        10 => "DelegationTokenRecord",
        11 => "UserScramCredentialRecord",
        12 => "FeatureLevelRecord",
        14 => "ClientQuotaRecord",
        15 => "ProducerIdsRecord",
        17 => "BrokerRegistrationChangeRecord",
        18 => "AccessControlEntryRecord",
        19 => "RemoveAccessControlEntryRecord",
        20 => "NoOpRecord",
        21 => "ZkMigrationStateRecord",
        22 => "RemoveUserScramCredentialRecord",
        23 => "BeginTransactionRecord",
        24 => "EndTransactionRecord",
        25 => "AbortTransactionRecord",
        26 => "RemoveDelegationTokenRecord",
        27 => "RegisterControllerRecord",
        28 => "ClearElrRecord",
        29 => "UnregisterControllerRecord",
        n => return format!("Unknown({n})"),
    };
    name.to_string()
}

/// Control record names by type (`ControlRecordType`), in the form the report counts them.
pub fn control_name(ty: i16) -> String {
    let name = match ty {
        0 => "Abort",
        1 => "Commit",
        2 => "LeaderChange",
        3 => "SnapshotHeader",
        4 => "SnapshotFooter",
        5 => "KRaftVersion",
        6 => "KRaftVoters",
        n => return format!("Unknown({n})"),
    };
    name.to_string()
}

pub const PRODUCER_IDS: u32 = 15;
pub const REGISTER_BROKER: u32 = 0;
pub const UNREGISTER_BROKER: u32 = 1;
pub const LEADER_CHANGE: i16 = 2;

/// What a metadata record says, as far as it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Counted, not decoded.
    Other,
    Block {
        broker_id: i32,
        broker_epoch: i64,
        next_producer_id: i64,
    },
    Registration {
        broker_id: i32,
        broker_epoch: i64,
        endpoints: Vec<Endpoint>,
    },
    /// An UnregisterBrokerRecord: the broker left the cluster (`kafka-cluster unregister`).
    Unregistration { broker_id: i32, broker_epoch: i64 },
}

/// A metadata record's value: its apiKey and what it says.
pub fn metadata(value: &[u8]) -> Result<(u32, Decoded), Reason> {
    let mut c = Reader::new(value);
    let frame = c.uvarint("frame version")?;
    if frame != 1 {
        return Err(format!("metadata record frame version {frame}, not 1").into());
    }
    let api_key = c.uvarint("record type")?;
    let version = c.uvarint("record version")?;
    let decoded = match (api_key, version) {
        (PRODUCER_IDS, 0) => Decoded::Block {
            broker_id: c.i32("BrokerId")?,
            broker_epoch: c.i64("BrokerEpoch")?,
            next_producer_id: c.i64("NextProducerId")?,
        },
        (REGISTER_BROKER, 0..=4) => register_broker(&mut c, version)?,
        (UNREGISTER_BROKER, 0) => Decoded::Unregistration {
            broker_id: c.i32("BrokerId")?,
            broker_epoch: c.i64("BrokerEpoch")?,
        },
        _ => Decoded::Other,
    };
    Ok((api_key, decoded))
}

/// RegisterBrokerRecord versions 0-4 (all flexible) up to its endpoints. Version 4, which
/// Kafka 4.4 writes, starts as 3 does (its fields are added after the endpoints): its
/// endpoints read here are those Kafka's DumpLogSegments prints (`tests/it/metadata_log.rs`).
fn register_broker(c: &mut Reader<'_>, version: u32) -> Result<Decoded, Reason> {
    let broker_id = c.i32("BrokerId")?;
    if version >= 2 {
        c.i8("IsMigratingZkBroker")?;
    }
    c.uuid("IncarnationId")?;
    let broker_epoch = c.i64("BrokerEpoch")?;
    let count = c.compact_array_len("EndPoints")?.unwrap_or(0);
    // an endpoint takes at least 6 bytes: no capacity past what is left
    let mut endpoints = Vec::with_capacity(count.min(c.remaining() / 6));
    for _ in 0..count {
        let name = c
            .compact_nullable_string("EndPoints.Name")?
            .unwrap_or_default();
        let host = c
            .compact_nullable_string("EndPoints.Host")?
            .unwrap_or_default();
        let port = c.u16("EndPoints.Port")?;
        let security_protocol = c.i16("EndPoints.SecurityProtocol")?;
        c.tagged_slices(|_, _, _| Ok(()))?;
        endpoints.push(Endpoint {
            name,
            host,
            port,
            security_protocol,
        });
    }
    Ok(Decoded::Registration {
        broker_id,
        broker_epoch,
        endpoints,
    })
}

/// A LeaderChange's leader id and voters.
pub type LeaderAndVoters = (i32, Vec<i32>);

/// Voters of a LeaderChange kept: more than any quorum has.
const MAX_VOTERS: usize = 64;

/// A LeaderChangeMessage's `Voters`, from their array on.
fn voters(v: &mut Reader<'_>, message_version: i16) -> Result<Vec<i32>, Reason> {
    let n = v.compact_array_len("LeaderChange Voters")?.unwrap_or(0);
    let mut ids = Vec::new();
    for _ in 0..n {
        let id = v.i32("LeaderChange VoterId")?;
        if message_version >= 1 {
            v.uuid("LeaderChange VoterDirectoryId")?;
        }
        v.tagged_slices(|_, _, _| Ok(()))?;
        if ids.len() < MAX_VOTERS {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// A control record's type (from its key) and, for a LeaderChange, the leader's id and
/// the quorum's voters (empty when their bytes cannot be read: the leader is still known).
pub fn control(
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<(i16, Option<LeaderAndVoters>), Reason> {
    let mut c = Reader::new(key.unwrap_or_default());
    let version = c.i16("control record key version")?;
    if version < 0 {
        return Err(format!("control record key version {version}").into());
    }
    let ty = c.i16("control record type")?;
    let leader = if ty == LEADER_CHANGE {
        // LeaderChangeMessage (flexible): Version i16, LeaderId i32, Voters [VoterId i32,
        // VoterDirectoryId uuid (v1+), tags], ...
        let mut v = Reader::new(value.unwrap_or_default());
        let message_version = v.i16("LeaderChange Version")?;
        let leader = v.i32("LeaderChange LeaderId")?;
        Some((leader, voters(&mut v, message_version).unwrap_or_default()))
    } else {
        None
    };
    Ok((ty, leader))
}
