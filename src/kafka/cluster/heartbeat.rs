//! BrokerHeartbeat (key 63), versions 0-2, all flexible: every broker tells the active
//! controller it is alive, every two seconds by default. That a capture holds a broker's
//! heartbeats shows its controller connection was captured.
//!
//! Request: BrokerId int32, BrokerEpoch int64, CurrentMetadataOffset int64, WantFence bool,
//! WantShutDown bool; OfflineLogDirs \[uuid\] in tagged field 0 (v1+) and CordonedLogDirs
//! \[uuid\] in tagged field 1 (v2+, Kafka 4.4.0's `BrokerHeartbeatRequest.json`), passed over.

use super::{Wire, BROKER_HEARTBEAT};
use crate::kafka::reader::DecodeError;

/// Who a BrokerHeartbeat request is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    pub broker_id: i32,
    pub broker_epoch: i64,
}

/// A BrokerHeartbeat request (`message` starts at the request header); every byte read.
pub fn broker_heartbeat_request(message: &[u8]) -> Result<Heartbeat, DecodeError> {
    let (mut w, _) = Wire::request(message, &[BROKER_HEARTBEAT])?;
    let broker_id = w.i32("BrokerId")?;
    let broker_epoch = w.i64("BrokerEpoch")?;
    w.i64("CurrentMetadataOffset")?;
    w.bool("WantFence")?;
    w.bool("WantShutDown")?;
    w.tags()?;
    w.r.finish()?;
    Ok(Heartbeat {
        broker_id,
        broker_epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::cluster::wire::Msg;

    #[test]
    fn reads_the_broker_and_its_epoch_and_refuses_a_short_one() {
        let m = Msg::request(BROKER_HEARTBEAT, 1)
            .i32(2)
            .i64(19)
            .i64(4242)
            .bool(false)
            .bool(false)
            .tags();
        let hb = broker_heartbeat_request(&m.bytes).expect("decodes");
        assert_eq!(
            hb,
            Heartbeat {
                broker_id: 2,
                broker_epoch: 19
            }
        );
        let short = &m.bytes[..m.bytes.len() - 2];
        assert!(matches!(
            broker_heartbeat_request(short),
            Err(DecodeError::Short { .. })
        ));
    }
}
