//! Real Kafka messages from the committed captures, and the values Kafka's own classes
//! read from them: these expectations come from Kafka, not from the decoders.
//!
//! Bytes: each message sits alone in one TCP segment (`tcp.len` is `kafka.len` + 4);
//! its payload without the 4-byte size prefix, from
//! `tshark -r <(zcat fixtures/kafka-real/F.pcap.gz) -d tcp.port==19091,kafka` (and
//! 19092, 19093, 19101, 19102) `-Y frame.number==N -T fields -e tcp.payload`.
//! tshark 4.0 gives each frame's API key, version and correlation id but decodes none of
//! these bodies ("Unknown 52 API key"), so the values were read with kafka-clients'
//! generated classes of the capture's release (the 4.4.0 or 3.9.1 jar), in Java:
//! `new RequestHeaderData(acc, ApiKeys.forId(key).requestHeaderVersion(v))` (or
//! `ResponseHeaderData`/`responseHeaderVersion`), then
//! `ApiMessageType.fromApiKey(key).newRequest()` (`newResponse()`) `.read(acc, v)`
//! printed with `toString()`, every byte consumed. Kafka 4.4 names Vote v2's
//! CandidateEpoch/CandidateId `replicaEpoch`/`replicaId`; same place on the wire.
//!
//! Kinds in the captures (tshark, every kafka-real fixture): BrokerRegistration v4
//! (3.9.1 and 4.4.0), Vote v1 (3.9.1) and v2 (4.4.0), BeginQuorumEpoch v1 (both),
//! EndQuorumEpoch v1 (4.4.0-two-hosts only), BrokerHeartbeat v1 (3.9.1) and v2 (4.4.0).
//! No Metadata, DescribeCluster or BeginQuorumEpoch v0 message is in any of them.

use super::*;
use crate::kafka::tables::ErrorCode;

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

fn log_partition(leader: Option<(i32, i32)>) -> QuorumPartition {
    QuorumPartition {
        topic: "__cluster_metadata".into(),
        partition: 0,
        leader_id: leader.map(|(id, _)| id),
        leader_epoch: leader.map(|(_, epoch)| epoch),
        candidate_id: None,
        candidate_epoch: None,
        pre_vote: None,
        vote_granted: None,
        error_code: None,
    }
}

fn endpoint(node_id: Option<i32>, name: Option<&str>, host: &str, port: u16) -> NodeEndpoint {
    NodeEndpoint {
        node_id,
        name: name.map(Into::into),
        host: host.into(),
        port,
    }
}

/// 4.4.0-steady frame 1050: 273 bytes.
const REGISTRATION_440_REQ: &str = concat!(
    "003e00040000000000013100000000011766496f542d775a32537961713469575a674d6f716c517ae0f5469c",
    "e14da094a8c9cad94aeb30020a504c41494e544558540a3132372e302e302e314a9d000000080e67726f7570",
    "2e76657273696f6e00000001000e6b726166742e76657273696f6e00000001000e73686172652e7665727369",
    "6f6e0000000200116d657461646174612e76657273696f6e000700210021656c696769626c652e6c65616465",
    "722e7265706c696361732e76657273696f6e0000000100147472616e73616374696f6e2e76657273696f6e00",
    "000002001073747265616d732e76657273696f6e00000001000000023e5c68b0e4f9b258d8ea19acbac9ed2b",
    "ffffffffffffffff00",
);

/// 4.4.0-steady frame 1117: 20 bytes.
const REGISTRATION_440_RESP: &str = "0000000000000000000000000000000000000a00";

/// 4.4.0-steady frame 1034: 20 bytes.
const REGISTRATION_440_REFUSED: &str = "0000000000000000000029ffffffffffffffff00";

/// 4.4.0-steady frame 881: 134 bytes.
const VOTE_440_REQ: &str = concat!(
    "00340002000000a4000f726166742d636c69656e742d313031001766496f542d775a32537961713469575a67",
    "4d6f716c510000006702135f5f636c75737465725f6d6574616461746102000000000000000000000065d814",
    "666b688b8ecff474932e6269c20c000000000000000000000000000000000000000000000000000000000100",
    "0000",
);

/// 4.4.0-steady frame 886: 46 bytes.
const VOTE_440_RESP: &str = concat!(
    "000000a400000002135f5f636c75737465725f6d6574616461746102000000000000ffffffff000000000100",
    "0000",
);

/// 4.4.0-steady frame 991: 130 bytes.
const BEGIN_440_REQ: &str = concat!(
    "0035000100000053000f726166742d636c69656e742d313032001766496f542d775a32537961713469575a67",
    "4d6f716c510000006502135f5f636c75737465725f6d65746164617461020000000000000000000000000000",
    "00000000000000000066000000010000020b434f4e54524f4c4c45520a3132372e302e302e314a940000",
);

/// 4.4.0-steady frame 997: 65 bytes.
const BEGIN_440_RESP: &str = concat!(
    "0000005300000002135f5f636c75737465725f6d657461646174610200000000000000000066000000010000",
    "01001202000000660a3132372e302e302e314a9400",
);

/// 3.9.1-steady frame 409: 151 bytes.
const REGISTRATION_391_REQ: &str = concat!(
    "003e0004000000000001310000000001175f475a3359387a6a534b696578694b6131646c425177a4a684ba1d",
    "ee4ea4b97721f8e97f4a4b020a504c41494e544558540a3132372e302e302e314a9d000000030e6b72616674",
    "2e76657273696f6e0000000100116d657461646174612e76657273696f6e000100150000000244dadb23c84e",
    "aece23fe55730337052dffffffffffffffff00",
);

/// 3.9.1-steady frame 440: 20 bytes.
const REGISTRATION_391_RESP: &str = "0000000000000000000000000000000000000800";

/// 3.9.1-steady frame 227: 133 bytes.
const VOTE_391_REQ: &str = concat!(
    "0034000100000031000f726166742d636c69656e742d31303300175f475a3359387a6a534b696578694b6131",
    "646c4251770000006502135f5f636c75737465725f6d6574616461746102000000000000000100000067c3f6",
    "27fd4095db21cbb8e74726e25b92000000000000000000000000000000000000000000000000000000000000",
    "00",
);

/// 3.9.1-steady frame 228: 46 bytes.
const VOTE_391_RESP: &str = concat!(
    "0000003100000002135f5f636c75737465725f6d6574616461746102000000000000ffffffff000000010100",
    "0000",
);

/// 3.9.1-steady frame 254: 130 bytes.
const BEGIN_391_REQ: &str = concat!(
    "0035000100000034000f726166742d636c69656e742d31303300175f475a3359387a6a534b696578694b6131",
    "646c4251770000006502135f5f636c75737465725f6d65746164617461020000000000000000000000000000",
    "00000000000000000067000000010000020b434f4e54524f4c4c45520a3132372e302e302e314a950000",
);

/// 3.9.1-steady frame 255: 65 bytes.
const BEGIN_391_RESP: &str = concat!(
    "0000003400000002135f5f636c75737465725f6d657461646174610200000000000000000067000000010000",
    "01001202000000670a3132372e302e302e314a9500",
);

/// 4.4.0-two-hosts frame 9175: 87 bytes.
const END_2H_REQ: &str = concat!(
    "0036000100000001000f726166742d636c69656e742d3130330017377748444e5f63795332794b6d322d4130",
    "6e4f77424102135f5f636c75737465725f6d65746164617461020000000000000067000000010100000100",
);

/// 4.4.0-two-hosts frame 9176: 66 bytes.
const END_2H_RESP: &str = concat!(
    "0000000100000002135f5f636c75737465725f6d657461646174610200000000004a00000066000000030000",
    "01001302000000660b31302e36372e302e31324a9400",
);

#[test]
fn broker_registrations_of_both_releases() {
    let plaintext = |port| Listener {
        name: "PLAINTEXT".into(),
        host: "127.0.0.1".into(),
        port,
        security_protocol: 0,
    };
    for request in [REGISTRATION_440_REQ, REGISTRATION_391_REQ] {
        // BrokerRegistrationRequestData(brokerId=1, ..., listeners=[Listener(
        // name='PLAINTEXT', host='127.0.0.1', port=19101, securityProtocol=0)], ...)
        let expected = BrokerListeners {
            broker_id: 1,
            listeners: vec![plaintext(19101)],
        };
        assert_eq!(broker_registration_request(&bytes(request)), Ok(expected));
    }
    for (response, error_code, broker_epoch) in [
        (REGISTRATION_440_RESP, 0, 10),
        (REGISTRATION_440_REFUSED, 41, -1), // NOT_CONTROLLER
        (REGISTRATION_391_RESP, 0, 8),
    ] {
        let reply = RegistrationReply {
            error_code: ErrorCode(error_code),
            broker_epoch,
        };
        assert_eq!(broker_registration_response(&bytes(response), 4), Ok(reply));
    }
}

#[test]
fn vote_requests_and_answers_of_both_releases() {
    // 4.4.0: VoteRequestData(clusterId='fIoT-wZ2Syaq4iWZgMoqlQ', voterId=103, ...
    // PartitionData(partitionIndex=0, replicaEpoch=0, replicaId=101, ..., preVote=true))
    let pre_vote = QuorumPartition {
        candidate_id: Some(101),
        candidate_epoch: Some(0),
        pre_vote: Some(true),
        ..log_partition(None)
    };
    let msg = quorum_request(&bytes(VOTE_440_REQ)).unwrap();
    assert_eq!((msg.api, msg.version, msg.is_request), (VOTE, 2, true));
    assert_eq!(msg.cluster_id.as_deref(), Some("fIoT-wZ2Syaq4iWZgMoqlQ"));
    assert_eq!(msg.voter_id, Some(103));
    assert_eq!(msg.partitions, vec![pre_vote]);
    assert_eq!(msg.endpoints, vec![]);
    // 3.9.1: VoteRequestData(clusterId='_GZ3Y8zjSKiexiKa1dlBQw', voterId=101, ...
    // PartitionData(partitionIndex=0, candidateEpoch=1, candidateId=103, ...))
    let vote = QuorumPartition {
        candidate_id: Some(103),
        candidate_epoch: Some(1),
        ..log_partition(None)
    };
    let msg = quorum_request(&bytes(VOTE_391_REQ)).unwrap();
    assert_eq!((msg.api, msg.version), (VOTE, 1));
    assert_eq!(msg.cluster_id.as_deref(), Some("_GZ3Y8zjSKiexiKa1dlBQw"));
    assert_eq!(msg.voter_id, Some(101));
    assert_eq!(msg.partitions, vec![vote]);
    // VoteResponseData(errorCode=0, ... PartitionData(partitionIndex=0, errorCode=0,
    // leaderId=-1, leaderEpoch=0 (4.4.0) / 1 (3.9.1), voteGranted=true)], nodeEndpoints=[])
    for (response, version, epoch) in [(VOTE_440_RESP, 2, 0), (VOTE_391_RESP, 1, 1)] {
        let granted = QuorumPartition {
            error_code: Some(ErrorCode::NONE),
            vote_granted: Some(true),
            ..log_partition(Some((-1, epoch)))
        };
        let msg = quorum_response(&bytes(response), VOTE, version).unwrap();
        assert_eq!(msg.error_code, Some(ErrorCode::NONE));
        assert_eq!(msg.partitions, vec![granted], "v{version}");
        assert_eq!(msg.endpoints, vec![]);
    }
}

#[test]
fn leaders_beginning_epochs_in_both_releases() {
    // BeginQuorumEpochRequestData(clusterId=..., voterId=101, ... PartitionData(
    // partitionIndex=0, ..., leaderId=102 / 103, leaderEpoch=1)], leaderEndpoints=[
    // LeaderEndpoint(name='CONTROLLER', host='127.0.0.1', port=19092 / 19093)])
    for (request, response, leader, port) in [
        (BEGIN_440_REQ, BEGIN_440_RESP, 102, 19092),
        (BEGIN_391_REQ, BEGIN_391_RESP, 103, 19093),
    ] {
        let msg = quorum_request(&bytes(request)).unwrap();
        assert_eq!((msg.api, msg.version), (BEGIN_QUORUM_EPOCH, 1));
        assert_eq!(msg.voter_id, Some(101));
        assert_eq!(msg.partitions, vec![log_partition(Some((leader, 1)))]);
        let named = endpoint(None, Some("CONTROLLER"), "127.0.0.1", port);
        assert_eq!(msg.endpoints, vec![named]);
        // BeginQuorumEpochResponseData(errorCode=0, ... errorCode=0, leaderId=102 / 103,
        // leaderEpoch=1)], nodeEndpoints=[NodeEndpoint(nodeId=102 / 103,
        // host='127.0.0.1', port=19092 / 19093)])
        let msg = quorum_response(&bytes(response), BEGIN_QUORUM_EPOCH, 1).unwrap();
        let believed = QuorumPartition {
            error_code: Some(ErrorCode::NONE),
            ..log_partition(Some((leader, 1)))
        };
        assert_eq!(msg.error_code, Some(ErrorCode::NONE));
        assert_eq!(msg.partitions, vec![believed]);
        assert_eq!(
            msg.endpoints,
            vec![endpoint(Some(leader), None, "127.0.0.1", port)]
        );
    }
}

#[test]
fn a_leader_ending_its_epoch() {
    // EndQuorumEpochRequestData(clusterId='7wHDN_cyS2yKm2-A0nOwBA', ... PartitionData(
    // partitionIndex=0, leaderId=103, leaderEpoch=1, preferredSuccessors=[],
    // preferredCandidates=[])], leaderEndpoints=[])
    let msg = quorum_request(&bytes(END_2H_REQ)).unwrap();
    assert_eq!((msg.api, msg.version), (END_QUORUM_EPOCH, 1));
    assert_eq!(msg.cluster_id.as_deref(), Some("7wHDN_cyS2yKm2-A0nOwBA"));
    assert_eq!(msg.partitions, vec![log_partition(Some((103, 1)))]);
    assert_eq!(msg.endpoints, vec![]);
    // EndQuorumEpochResponseData(errorCode=0, ... PartitionData(partitionIndex=0,
    // errorCode=74, leaderId=102, leaderEpoch=3)], nodeEndpoints=[NodeEndpoint(
    // nodeId=102, host='10.67.0.12', port=19092)])
    let msg = quorum_response(&bytes(END_2H_RESP), END_QUORUM_EPOCH, 1).unwrap();
    let fenced = QuorumPartition {
        error_code: Some(ErrorCode(74)), // FENCED_LEADER_EPOCH
        ..log_partition(Some((102, 3)))
    };
    assert_eq!(msg.partitions, vec![fenced]);
    assert_eq!(
        msg.endpoints,
        vec![endpoint(Some(102), None, "10.67.0.12", 19092)]
    );
}

#[test]
fn every_prefix_of_a_real_quorum_message_fails_short() {
    for request in [VOTE_440_REQ, BEGIN_391_REQ, END_2H_REQ] {
        let whole = bytes(request);
        for cut in 0..whole.len() {
            let err = quorum_request(&whole[..cut]).unwrap_err();
            assert!(matches!(err, DecodeError::Short { .. }), "cut {cut}: {err}");
        }
    }
    let whole = bytes(BEGIN_440_RESP);
    for cut in 0..whole.len() {
        let err = quorum_response(&whole[..cut], BEGIN_QUORUM_EPOCH, 1).unwrap_err();
        assert!(matches!(err, DecodeError::Short { .. }), "cut {cut}: {err}");
    }
}

/// 4.4.0-steady frame 578 and 3.9.1-steady frame 302, the first heartbeats: Kafka reads
/// `BrokerHeartbeatRequestData(brokerId=1, brokerEpoch=14, currentMetadataOffset=13,
/// wantFence=true, wantShutDown=false, offlineLogDirs=[], cordonedLogDirs=null)` (v2) and
/// `(brokerId=2, brokerEpoch=5, currentMetadataOffset=-1, wantFence=true,
/// wantShutDown=false, offlineLogDirs=[])` (v1), every byte consumed.
#[test]
fn broker_heartbeats_of_both_releases() {
    let v2 = bytes("003f0002000000020001310000000001000000000000000e000000000000000d010000");
    assert_eq!(
        broker_heartbeat_request(&v2).expect("4.4.0 v2"),
        Heartbeat {
            broker_id: 1,
            broker_epoch: 14
        }
    );
    let v1 = bytes("003f00010000000500013200000000020000000000000005ffffffffffffffff010000");
    assert_eq!(
        broker_heartbeat_request(&v1).expect("3.9.1 v1"),
        Heartbeat {
            broker_id: 2,
            broker_epoch: 5
        }
    );
}
