//! Fetch (key 1) requests, read only for who fetches the quorum's own log: in KRaft
//! every controller that follows the leader, and every broker, fetches
//! `__cluster_metadata` partition 0 from the active controller, all the time (Kafka's
//! `KafkaRaftClient.buildFetchRequest`: one topic, one partition, the fetcher's node id).
//! That a capture holds a node's fetches of that log shows its connection to the leader.
//!
//! Versions 0-18, flexible from 12 (`FetchRequest.json` of Kafka 4.4.0's jar). The
//! fetcher is `ReplicaId` (v0-14) or `ReplicaState.ReplicaId` in top-level tagged field 1
//! (v15+), which comes after every topic. The topic is named (v0-12) or given by id
//! (v13+): the metadata log's is `Uuid.METADATA_TOPIC_ID`, 0 then 1.

use super::{Wire, FETCH};
use crate::kafka::reader::DecodeError;

/// The metadata log's topic name, and its topic id (`Uuid.METADATA_TOPIC_ID`).
const METADATA_TOPIC: &str = "__cluster_metadata";
const METADATA_TOPIC_ID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

/// The raft client's fetch holds one partition; a larger request is a replica's or a
/// consumer's, never the metadata log's: [`super::super::apis`] leaves it undecoded.
pub const METADATA_FETCH_MAX_LEN: u32 = 512;

/// Who fetched, and whether what it fetched is the quorum's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaFetch {
    /// The fetching node, -1 for a consumer.
    pub replica_id: i32,
    /// Whether the only partition fetched is `__cluster_metadata` 0.
    pub metadata_log: bool,
}

/// A Fetch request (`message` starts at the request header); every byte read.
pub fn fetch_request(message: &[u8]) -> Result<ReplicaFetch, DecodeError> {
    let (mut w, _) = Wire::request(message, &[FETCH])?;
    let version = w.version;
    let mut replica_id = if version <= 14 {
        w.i32("ReplicaId")?
    } else {
        -1
    };
    w.i32("MaxWaitMs")?;
    w.i32("MinBytes")?;
    if version >= 3 {
        w.i32("MaxBytes")?;
    }
    if version >= 4 {
        w.i8("IsolationLevel")?;
    }
    if version >= 7 {
        w.i32("SessionId")?;
        w.i32("SessionEpoch")?;
    }
    let mut partitions = Vec::new();
    for _ in 0..w.array_len("Topics")? {
        let metadata = if version >= 13 {
            w.uuid("Topics.TopicId")? == METADATA_TOPIC_ID
        } else {
            w.string("Topics.Topic")? == METADATA_TOPIC
        };
        for _ in 0..w.array_len("Topics.Partitions")? {
            let index = partition(&mut w)?;
            if partitions.len() < 2 {
                partitions.push(metadata && index == 0);
            }
        }
        w.tags()?;
    }
    if version >= 7 {
        forgotten_topics(&mut w)?;
    }
    if version >= 11 {
        w.skip_string("RackId")?;
    }
    w.tags_with(|tag, inner| {
        if tag != 1 {
            return Ok(false);
        }
        replica_id = inner.i32("ReplicaState.ReplicaId")?;
        inner.i64("ReplicaState.ReplicaEpoch")?;
        inner.tags()?;
        Ok(true)
    })?;
    w.r.finish()?;
    Ok(ReplicaFetch {
        replica_id,
        metadata_log: partitions == [true],
    })
}

/// One `Topics.Partitions` entry; its index.
fn partition(w: &mut Wire<'_>) -> Result<i32, DecodeError> {
    let version = w.version;
    let index = w.i32("Partitions.Partition")?;
    if version >= 9 {
        w.i32("Partitions.CurrentLeaderEpoch")?;
    }
    w.i64("Partitions.FetchOffset")?;
    if version >= 12 {
        w.i32("Partitions.LastFetchedEpoch")?;
    }
    if version >= 5 {
        w.i64("Partitions.LogStartOffset")?;
    }
    w.i32("Partitions.PartitionMaxBytes")?;
    w.tags()?; // ReplicaDirectoryId (v17+), HighWatermark (v18+)
    Ok(index)
}

/// `ForgottenTopicsData` (v7+), passed over.
fn forgotten_topics(w: &mut Wire<'_>) -> Result<(), DecodeError> {
    for _ in 0..w.array_len("ForgottenTopicsData")? {
        if w.version >= 13 {
            w.uuid("ForgottenTopicsData.TopicId")?;
        } else {
            w.skip_string("ForgottenTopicsData.Topic")?;
        }
        for _ in 0..w.array_len("ForgottenTopicsData.Partitions")? {
            w.i32("ForgottenTopicsData.Partitions")?;
        }
        w.tags()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::cluster::wire::Msg;

    /// A fetch at `version` by node `id` of partition 0 of the metadata log, or of
    /// another topic when `metadata` is false, as each version writes it.
    fn fetch(version: i16, id: i32, metadata: bool) -> Vec<u8> {
        let mut m = Msg::request(FETCH, version);
        if version <= 14 {
            m = m.i32(id);
        }
        m = m.i32(500).i32(0);
        if version >= 3 {
            m = m.i32(8 << 20);
        }
        if version >= 4 {
            m = m.i8(0);
        }
        if version >= 7 {
            m = m.i32(0).i32(-1);
        }
        m = m.array(1);
        m = match (version >= 13, metadata) {
            (true, true) => m.raw(&METADATA_TOPIC_ID),
            (true, false) => m.uuid(9),
            (false, true) => m.string(METADATA_TOPIC),
            (false, false) => m.string("orders"),
        };
        m = m.array(1).i32(0);
        if version >= 9 {
            m = m.i32(3);
        }
        m = m.i64(1234);
        if version >= 12 {
            m = m.i32(3);
        }
        if version >= 5 {
            m = m.i64(0);
        }
        m = m.i32(8 << 20);
        m = if version >= 17 {
            m.tagged(&[(0, vec![7; 16])])
        } else {
            m.tags()
        };
        m = m.tags();
        if version >= 7 {
            m = m.array(0);
        }
        if version >= 11 {
            m = m.string("");
        }
        if version >= 15 {
            let mut state = id.to_be_bytes().to_vec();
            state.extend_from_slice(&42i64.to_be_bytes());
            state.push(0);
            m.tagged(&[(0, vec![0]), (1, state)]).bytes
        } else {
            m.tags().bytes
        }
    }

    #[test]
    fn reads_the_fetcher_and_its_topic_in_every_version() {
        for version in 0..=18 {
            for metadata_log in [true, false] {
                let read = fetch_request(&fetch(version, 102, metadata_log));
                let expected = ReplicaFetch {
                    replica_id: 102,
                    metadata_log,
                };
                assert_eq!(read, Ok(expected), "v{version}");
            }
        }
    }

    #[test]
    fn every_prefix_fails_short() {
        for version in [11, 16] {
            let whole = fetch(version, 2, true);
            for cut in 0..whole.len() {
                assert!(
                    matches!(fetch_request(&whole[..cut]), Err(DecodeError::Short { .. })),
                    "v{version} cut at {cut}"
                );
            }
        }
    }
}
