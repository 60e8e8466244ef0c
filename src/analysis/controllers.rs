//! Who led the KRaft controller quorum when, as far as the capture shows.
//! (Being written: see issue 28 point 4.)

use super::Finding;
use crate::pairing::{ClusterEvent, Exchange, MessageMeta};

/// One leader's span of the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    pub leader_id: i32,
    pub epoch: i32,
    /// The first message that shows it, and the first that shows a later epoch.
    pub from: MessageMeta,
    pub to: Option<MessageMeta>,
    /// How it is known: the kind of message `from` is.
    pub how: &'static str,
}

#[derive(Debug, Default)]
pub struct Timeline {}

impl Timeline {
    /// A Vote, BeginQuorumEpoch or EndQuorumEpoch message (others are ignored).
    pub fn cluster(&mut self, _ev: &ClusterEvent, _findings: &mut Vec<Finding>) {}

    /// An AllocateProducerIds exchange: its answer tells which controller acted as leader.
    pub fn allocate(&mut self, _ex: &Exchange, _findings: &mut Vec<Finding>) {}

    pub fn finish(self) -> Vec<Leadership> {
        Vec::new()
    }
}
