//! The KRaft quorum's own messages, for who led the metadata log in which epoch: Vote
//! (key 52, versions 0-2, all flexible), BeginQuorumEpoch (53) and EndQuorumEpoch (54)
//! (versions 0-1, flexible from 1 only: v0 has int16 strings, int32 arrays, request
//! header v1 and response header v0). Every byte of a message is read.
//!
//! Requests (fields before `Topics`: ClusterId nullable string; VoterId int32 v1+, not in
//! EndQuorumEpoch), partitions under `Topics [{TopicName, Partitions [...]}]`:
//! - Vote: PartitionIndex, CandidateEpoch, CandidateId, CandidateDirectoryId uuid (v1+),
//!   VoterDirectoryId uuid (v1+), LastOffsetEpoch int32, LastOffset int64, PreVote bool (v2+).
//! - BeginQuorumEpoch: PartitionIndex, VoterDirectoryId uuid (v1+), LeaderId, LeaderEpoch;
//!   after Topics, LeaderEndpoints [{Name, Host, Port uint16}] (v1+).
//! - EndQuorumEpoch: PartitionIndex, LeaderId, LeaderEpoch, PreferredSuccessors \[int32\]
//!   (v0 only), PreferredCandidates [{CandidateId int32, CandidateDirectoryId uuid}] (v1+);
//!   after Topics, LeaderEndpoints as BeginQuorumEpoch's.
//!
//! Responses: ErrorCode int16; Topics [{TopicName, Partitions [{PartitionIndex, ErrorCode,
//! LeaderId, LeaderEpoch, VoteGranted bool (Vote only)}]}]; NodeEndpoints [{NodeId int32,
//! Host, Port uint16}] in the top-level tagged field 0 (v1+).

use super::{Wire, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, VOTE};
use crate::kafka::reader::DecodeError;
use crate::kafka::tables::{ApiKey, ErrorCode};

/// One Vote, BeginQuorumEpoch or EndQuorumEpoch message, as claims about the quorum.
///
/// What a partition's fields claim depends on the message:
/// - BeginQuorumEpoch request: the sender, `leader_id`, leads from `leader_epoch` on
///   (sent by a new leader to each voter: the strongest evidence);
/// - EndQuorumEpoch request: `leader_id` resigns `leader_epoch` (a graceful shutdown; a
///   killed leader sends none);
/// - Vote request: `candidate_id` asks for votes in `candidate_epoch`; not a leader yet,
///   and with `pre_vote` (v2+) the epoch is not even bumped;
/// - responses: what the responding voter believes: `leader_id` (-1: unknown) and
///   `leader_epoch`, which may be older than the sender's; `vote_granted` for Vote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumMessage {
    pub api: ApiKey,
    pub version: i16,
    pub is_request: bool,
    /// Requests' `ClusterId` (nullable).
    pub cluster_id: Option<String>,
    /// Vote and BeginQuorumEpoch requests v1+: `VoterId`, the replica sent to.
    pub voter_id: Option<i32>,
    /// Responses' top-level `ErrorCode`.
    pub error_code: Option<ErrorCode>,
    pub partitions: Vec<QuorumPartition>,
    /// Requests' `LeaderEndpoints` (BeginQuorumEpoch and EndQuorumEpoch v1+: the sending
    /// leader's listeners, named, without node id) or responses' `NodeEndpoints` (v1+:
    /// the leaders named in `partitions`, by node id, without name).
    pub endpoints: Vec<NodeEndpoint>,
}

/// One partition of the quorum's log (in practice `__cluster_metadata` 0). A field is
/// `None` when the message has no such field (see [`QuorumMessage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumPartition {
    pub topic: String,
    pub partition: i32,
    pub leader_id: Option<i32>,
    pub leader_epoch: Option<i32>,
    pub candidate_id: Option<i32>,
    pub candidate_epoch: Option<i32>,
    pub pre_vote: Option<bool>,
    pub vote_granted: Option<bool>,
    pub error_code: Option<ErrorCode>,
}

impl QuorumPartition {
    fn new(topic: &str, partition: i32) -> Self {
        Self {
            topic: topic.to_owned(),
            partition,
            leader_id: None,
            leader_epoch: None,
            candidate_id: None,
            candidate_epoch: None,
            pre_vote: None,
            vote_granted: None,
            error_code: None,
        }
    }
}

/// An address a quorum member listens on (`host` may be a name, not an address).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeEndpoint {
    /// Responses' NodeEndpoints: the node the address is of.
    pub node_id: Option<i32>,
    /// Requests' LeaderEndpoints: the listener's name.
    pub name: Option<String>,
    pub host: String,
    pub port: u16,
}

const QUORUM_APIS: [ApiKey; 3] = [VOTE, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH];

/// A Vote, BeginQuorumEpoch or EndQuorumEpoch request (`message` starts at the request
/// header, which names the API and version).
pub fn quorum_request(message: &[u8]) -> Result<QuorumMessage, DecodeError> {
    let (mut w, api) = Wire::request(message, &QUORUM_APIS)?;
    let version = w.version;
    let cluster_id = w.nullable_string("ClusterId")?;
    let voter_id = match (api, version) {
        (END_QUORUM_EPOCH, _) | (_, 0) => None,
        _ => Some(w.i32("VoterId")?),
    };
    let partitions = topics(&mut w, |w, p| request_partition(w, api, p))?;
    let mut endpoints = Vec::new();
    if api != VOTE && version >= 1 {
        for _ in 0..w.array_len("LeaderEndpoints")? {
            endpoints.push(NodeEndpoint {
                node_id: None,
                name: Some(w.string("LeaderEndpoints.Name")?),
                host: w.string("LeaderEndpoints.Host")?,
                port: w.u16("LeaderEndpoints.Port")?,
            });
            w.tags()?;
        }
    }
    w.tags()?;
    w.r.finish()?;
    Ok(QuorumMessage {
        api,
        version,
        is_request: true,
        cluster_id,
        voter_id,
        error_code: None,
        partitions,
        endpoints,
    })
}

/// One partition of a request, from its `PartitionIndex` on.
fn request_partition(
    w: &mut Wire<'_>,
    api: ApiKey,
    p: &mut QuorumPartition,
) -> Result<(), DecodeError> {
    let version = w.version;
    if api == VOTE {
        p.candidate_epoch = Some(w.i32("Partitions.CandidateEpoch")?);
        p.candidate_id = Some(w.i32("Partitions.CandidateId")?);
        if version >= 1 {
            w.uuid("Partitions.CandidateDirectoryId")?;
            w.uuid("Partitions.VoterDirectoryId")?;
        }
        w.i32("Partitions.LastOffsetEpoch")?;
        w.i64("Partitions.LastOffset")?;
        if version >= 2 {
            p.pre_vote = Some(w.bool("Partitions.PreVote")?);
        }
        return Ok(());
    }
    if api == BEGIN_QUORUM_EPOCH && version >= 1 {
        w.uuid("Partitions.VoterDirectoryId")?;
    }
    p.leader_id = Some(w.i32("Partitions.LeaderId")?);
    p.leader_epoch = Some(w.i32("Partitions.LeaderEpoch")?);
    if api == END_QUORUM_EPOCH {
        if version == 0 {
            for _ in 0..w.array_len("Partitions.PreferredSuccessors")? {
                w.i32("Partitions.PreferredSuccessors")?;
            }
        } else {
            for _ in 0..w.array_len("Partitions.PreferredCandidates")? {
                w.i32("PreferredCandidates.CandidateId")?;
                w.uuid("PreferredCandidates.CandidateDirectoryId")?;
                w.tags()?;
            }
        }
    }
    Ok(())
}

/// A response to a Vote, BeginQuorumEpoch or EndQuorumEpoch request of `version`
/// (`message` starts at the response header).
pub fn quorum_response(
    message: &[u8],
    api: ApiKey,
    version: i16,
) -> Result<QuorumMessage, DecodeError> {
    if !QUORUM_APIS.contains(&api) {
        return Err(DecodeError::Invalid {
            field: "api_key (of the request)",
            offset: 0,
            reason: format!("{} ({}) is not a quorum message", api.0, api.name()),
        });
    }
    let mut w = Wire::response(message, api, version)?;
    let error_code = ErrorCode(w.i16("ErrorCode")?);
    let partitions = topics(&mut w, |w, p| {
        p.error_code = Some(ErrorCode(w.i16("Partitions.ErrorCode")?));
        p.leader_id = Some(w.i32("Partitions.LeaderId")?);
        p.leader_epoch = Some(w.i32("Partitions.LeaderEpoch")?);
        if api == VOTE {
            p.vote_granted = Some(w.bool("Partitions.VoteGranted")?);
        }
        Ok(())
    })?;
    let mut endpoints = Vec::new();
    w.tags_with(|tag, data| {
        if tag != 0 || version < 1 {
            return Ok(false);
        }
        endpoints = node_endpoints(data)?;
        Ok(true)
    })?;
    w.r.finish()?;
    Ok(QuorumMessage {
        api,
        version,
        is_request: false,
        cluster_id: None,
        voter_id: None,
        error_code: Some(error_code),
        partitions,
        endpoints,
    })
}

/// The `NodeEndpoints` of tagged field 0.
fn node_endpoints(w: &mut Wire<'_>) -> Result<Vec<NodeEndpoint>, DecodeError> {
    let mut endpoints = Vec::new();
    for _ in 0..w.array_len("NodeEndpoints")? {
        endpoints.push(NodeEndpoint {
            node_id: Some(w.i32("NodeEndpoints.NodeId")?),
            name: None,
            host: w.string("NodeEndpoints.Host")?,
            port: w.u16("NodeEndpoints.Port")?,
        });
        w.tags()?;
    }
    Ok(endpoints)
}

/// Every partition of `Topics`: `rest` reads a partition's fields after its index.
fn topics(
    w: &mut Wire<'_>,
    mut rest: impl FnMut(&mut Wire<'_>, &mut QuorumPartition) -> Result<(), DecodeError>,
) -> Result<Vec<QuorumPartition>, DecodeError> {
    let mut partitions = Vec::new(); // grows with what is read, not with the counts
    for _ in 0..w.array_len("Topics")? {
        let topic = w.string("Topics.TopicName")?;
        for _ in 0..w.array_len("Topics.Partitions")? {
            let mut p = QuorumPartition::new(&topic, w.i32("Partitions.PartitionIndex")?);
            rest(w, &mut p)?;
            w.tags()?;
            partitions.push(p);
        }
        w.tags()?;
    }
    Ok(partitions)
}

#[cfg(test)]
mod tests {
    use super::super::wire::Msg;
    use super::*;

    const LOG: &str = "__cluster_metadata";

    fn partition() -> QuorumPartition {
        QuorumPartition::new(LOG, 0)
    }

    fn vote_request(version: i16) -> Vec<u8> {
        let mut m = Msg::request(VOTE, version).nullable_string(Some("cid"));
        if version >= 1 {
            m = m.i32(3002);
        }
        m = m.array(1).string(LOG).array(1).i32(0).i32(7).i32(3001);
        if version >= 1 {
            m = m.uuid(1).uuid(2);
        }
        m = m.i32(6).i64(1234);
        if version >= 2 {
            m = m.bool(true);
        }
        m.tags().tags().tags().bytes
    }

    /// The reads a decoder makes can be recorded for the tree: each field once, in wire
    /// order, one after the other, every byte of the message covered.
    #[test]
    fn a_vote_request_s_reads_are_recorded_field_by_field() {
        use crate::kafka::trace;
        let bytes = vote_request(2);
        let (decoded, reads) = trace::recording(|| quorum_request(&bytes));
        assert!(decoded.is_ok());
        let base = bytes.as_ptr() as usize;
        let spans: Vec<(&str, usize, usize)> = reads
            .iter()
            .map(|r| (r.field, r.at - base, r.len))
            .collect();
        assert_eq!(spans[0], ("request_api_key", 0, 2), "{spans:?}");
        assert_eq!(spans[1], ("request_api_version", 2, 2), "{spans:?}");
        let mut end = 0;
        for (field, at, len) in &spans {
            assert_eq!(*at, end, "{field} follows the field before it: {spans:?}");
            end = at + len;
        }
        assert_eq!(end, bytes.len(), "every byte read: {spans:?}");
        assert!(
            reads
                .iter()
                .any(|r| r.value == "Some(3001)" || r.value == "3001"),
            "{reads:?}"
        );
        // off, nothing is recorded
        let (_, none) = trace::recording(|| ());
        assert!(none.is_empty());
    }

    #[test]
    fn reads_vote_requests() {
        for version in 0..=2 {
            let msg = quorum_request(&vote_request(version)).unwrap();
            let p = QuorumPartition {
                candidate_id: Some(3001),
                candidate_epoch: Some(7),
                pre_vote: (version >= 2).then_some(true),
                ..partition()
            };
            let expected = QuorumMessage {
                api: VOTE,
                version,
                is_request: true,
                cluster_id: Some("cid".into()),
                voter_id: (version >= 1).then_some(3002),
                error_code: None,
                partitions: vec![p],
                endpoints: vec![],
            };
            assert_eq!(msg, expected, "v{version}");
        }
    }

    /// NodeEndpoints as tagged field 0 holds them: a compact array of structs.
    fn node_endpoints_tag() -> (u32, Vec<u8>) {
        let data = Msg::part(true)
            .array(2)
            .i32(3001)
            .string("10.0.0.11")
            .u16(19091)
            .tags()
            .i32(3002)
            .string("c2.example")
            .u16(19092)
            .tags()
            .bytes;
        (0, data)
    }

    fn node_endpoints() -> Vec<NodeEndpoint> {
        let node = |id, host: &str, port| NodeEndpoint {
            node_id: Some(id),
            name: None,
            host: host.into(),
            port,
        };
        vec![
            node(3001, "10.0.0.11", 19091),
            node(3002, "c2.example", 19092),
        ]
    }

    /// A response of `api` with one partition (leader 3001 in epoch 7), NodeEndpoints
    /// and an unknown tag 9.
    fn response(api: ApiKey, version: i16) -> Vec<u8> {
        let mut m = Msg::response(api, version)
            .i16(0)
            .array(1)
            .string(LOG)
            .array(1)
            .i32(0)
            .i16(0)
            .i32(3001)
            .i32(7);
        if api == VOTE {
            m = m.bool(false);
        }
        m = m.tags().tags();
        m.tagged(&[node_endpoints_tag(), (9, vec![0xee])]).bytes
    }

    fn expected_response(api: ApiKey, version: i16) -> QuorumMessage {
        let p = QuorumPartition {
            error_code: Some(ErrorCode::NONE),
            leader_id: Some(3001),
            leader_epoch: Some(7),
            vote_granted: (api == VOTE).then_some(false),
            ..partition()
        };
        QuorumMessage {
            api,
            version,
            is_request: false,
            cluster_id: None,
            voter_id: None,
            error_code: Some(ErrorCode::NONE),
            partitions: vec![p],
            // Tag 0 is NodeEndpoints from v1 on; rigid v0 has no tags at all.
            endpoints: if version >= 1 {
                node_endpoints()
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn reads_responses_with_their_node_endpoints() {
        for (api, newest) in [(VOTE, 2), (BEGIN_QUORUM_EPOCH, 1), (END_QUORUM_EPOCH, 1)] {
            for version in 0..=newest {
                let msg = quorum_response(&response(api, version), api, version);
                assert_eq!(msg, Ok(expected_response(api, version)), "{api} v{version}");
            }
        }
    }

    #[test]
    fn begin_quorum_epoch_v0_is_rigid_and_v1_flexible() {
        let v0 = response(BEGIN_QUORUM_EPOCH, 0);
        let v1 = response(BEGIN_QUORUM_EPOCH, 1);
        // Header v0 then ErrorCode and an int32 Topics count; header v1 has a tag count.
        assert_eq!(&v0[4..10], &[0, 0, 0, 0, 0, 1]);
        assert_eq!(&v1[4..8], &[0, 0, 0, 2]);
        assert!(quorum_response(&v0, BEGIN_QUORUM_EPOCH, 1).is_err());
        assert!(quorum_response(&v1, BEGIN_QUORUM_EPOCH, 0).is_err());
        let r0 = begin_request(0);
        // Request header v1 ends at the client id "c": no tags, then an int16 ClusterId.
        assert_eq!(&r0[8..15], &[0, 1, b'c', 0, 3, b'c', b'i']);
    }

    fn begin_request(version: i16) -> Vec<u8> {
        let mut m = Msg::request(BEGIN_QUORUM_EPOCH, version).nullable_string(Some("cid"));
        if version >= 1 {
            m = m.i32(3002);
        }
        m = m.array(1).string(LOG).array(1).i32(0);
        if version >= 1 {
            m = m.uuid(3);
        }
        m = m.i32(3001).i32(8).tags().tags();
        if version >= 1 {
            m = m
                .array(1)
                .string("CONTROLLER")
                .string("10.0.0.11")
                .u16(19091)
                .tags();
        }
        m.tags().bytes
    }

    fn end_request(version: i16) -> Vec<u8> {
        let mut m = Msg::request(END_QUORUM_EPOCH, version)
            .nullable_string(None)
            .array(1)
            .string(LOG)
            .array(1)
            .i32(0)
            .i32(3001)
            .i32(8);
        m = if version == 0 {
            m.array(2).i32(3002).i32(3003)
        } else {
            m.array(1).i32(3002).uuid(4).tags()
        };
        m = m.tags().tags();
        if version >= 1 {
            m = m
                .array(1)
                .string("CONTROLLER")
                .string("10.0.0.11")
                .u16(19091)
                .tags();
        }
        m.tags().bytes
    }

    #[test]
    fn reads_leaders_beginning_and_ending_epochs() {
        let leader = vec![NodeEndpoint {
            node_id: None,
            name: Some("CONTROLLER".into()),
            host: "10.0.0.11".into(),
            port: 19091,
        }];
        for version in 0..=1 {
            let p = QuorumPartition {
                leader_id: Some(3001),
                leader_epoch: Some(8),
                ..partition()
            };
            let endpoints = if version >= 1 { leader.clone() } else { vec![] };
            let begin = QuorumMessage {
                api: BEGIN_QUORUM_EPOCH,
                version,
                is_request: true,
                cluster_id: Some("cid".into()),
                voter_id: (version >= 1).then_some(3002),
                error_code: None,
                partitions: vec![p],
                endpoints,
            };
            assert_eq!(quorum_request(&begin_request(version)), Ok(begin.clone()));
            let end = QuorumMessage {
                api: END_QUORUM_EPOCH,
                cluster_id: None,
                voter_id: None,
                ..begin
            };
            assert_eq!(quorum_request(&end_request(version)), Ok(end));
        }
    }

    #[test]
    fn every_prefix_of_a_quorum_message_fails_short() {
        let mut requests = vec![];
        for version in 0..=2 {
            requests.push(vote_request(version));
        }
        for version in 0..=1 {
            requests.push(begin_request(version));
            requests.push(end_request(version));
        }
        for whole in &requests {
            for cut in 0..whole.len() {
                let err = quorum_request(&whole[..cut]).unwrap_err();
                assert!(matches!(err, DecodeError::Short { .. }), "cut {cut}: {err}");
            }
        }
        for (api, version) in [
            (VOTE, 0),
            (VOTE, 2),
            (BEGIN_QUORUM_EPOCH, 0),
            (END_QUORUM_EPOCH, 1),
        ] {
            let whole = response(api, version);
            for cut in 0..whole.len() {
                let err = quorum_response(&whole[..cut], api, version).unwrap_err();
                assert!(
                    matches!(err, DecodeError::Short { .. }),
                    "{api} cut {cut}: {err}"
                );
            }
        }
    }

    #[test]
    fn lying_counts_are_refused_before_allocating() {
        let topics = Msg::response(VOTE, 1).i16(0).uvarint(u32::MAX).bytes;
        assert!(matches!(
            quorum_response(&topics, VOTE, 1),
            Err(DecodeError::Short {
                field: "Topics",
                offset: 7,
                ..
            })
        ));
        let rigid = Msg::request(BEGIN_QUORUM_EPOCH, 0)
            .nullable_string(None)
            .i32(0x7fff_ffff)
            .bytes;
        assert!(matches!(
            quorum_request(&rigid),
            Err(DecodeError::Short {
                field: "Topics",
                ..
            })
        ));
        // Inside tagged field 0, counted against the tag's own data.
        let lying = Msg::part(true).uvarint(100).i32(1).bytes;
        let bytes = Msg::response(BEGIN_QUORUM_EPOCH, 1)
            .i16(0)
            .array(0)
            .tagged(&[(0, lying)])
            .bytes;
        let err = quorum_response(&bytes, BEGIN_QUORUM_EPOCH, 1).unwrap_err();
        // 4 correlation id, 1 header tags, 2 error code, 1 topics, 3 count/tag/size
        assert!(
            matches!(
                err,
                DecodeError::Short {
                    field: "NodeEndpoints",
                    offset: 11,
                    needed: 99,
                    left: 4
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn node_endpoints_must_fill_their_tag_and_other_apis_are_refused() {
        let (tag, mut data) = node_endpoints_tag();
        data.push(0);
        let bytes = Msg::response(END_QUORUM_EPOCH, 1)
            .i16(0)
            .array(0)
            .tagged(&[(tag, data)])
            .bytes;
        assert!(matches!(
            quorum_response(&bytes, END_QUORUM_EPOCH, 1),
            Err(DecodeError::Trailing { left: 1, .. })
        ));
        let err = quorum_response(&response(VOTE, 1), ApiKey(62), 1).unwrap_err();
        assert!(err.to_string().contains("BrokerRegistration"), "{err}");
        let err = quorum_request(&vote_request(3)).unwrap_err();
        assert!(err.to_string().contains("Vote version 3"), "{err}");
        let mut end_v2 = end_request(1);
        end_v2[3] = 2;
        assert!(quorum_request(&end_v2).is_err());
    }
}
