//! Who led the KRaft controller quorum when, as far as the capture shows, and blocks
//! granted by a controller asked after it no longer led.
//!
//! Evidence, strongest first: a BeginQuorumEpoch request (sent by the new leader to each
//! voter as its epoch starts) or an EndQuorumEpoch request (a leader resigning its epoch)
//! names its sender as leader of its epoch; a response to either, or to a Vote, names whom
//! the answering voter takes for leader (-1: nobody yet); a controller answering
//! AllocateProducerIds with NONE acted as leader, of an epoch whose leader the quorum's
//! messages did not name, when it was asked in that epoch (it answers once the block is
//! committed: late on the wire, that may be an epoch before). Weaker evidence starts a span
//! only where no stronger evidence for its epoch came first. Vote requests are candidacies,
//! not leadership: they only show that an epoch began (a PreVote does not even do that).
//!
//! A span lasts from the first message that shows its leader in its epoch to the first
//! that shows a later epoch. A message about an epoch older than one already shown starts
//! no span: it would end before it began. Only the metadata log's partition is read.
//!
//! Which controller served a connection is known from the quorum's own addresses: the
//! leader's listeners in BeginQuorumEpoch and EndQuorumEpoch requests, the responses'
//! node endpoints, and the server of a request that names its voter. Host names are not
//! resolved; an address two controllers claim is nobody's.

use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

use super::Finding;
use crate::diag::obs;
use crate::diag::Observation;
use crate::kafka::apis::ClusterFact;
use crate::kafka::cluster::{
    NodeEndpoint, QuorumMessage, BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, VOTE,
};
use crate::kafka::tables::ErrorCode;
use crate::pairing::{ClusterEvent, Exchange, MessageMeta};

/// Spans kept: past these the earliest are dropped (a leader a second for over an hour).
pub const MAX_SPANS: usize = 4096;
/// Controller addresses and leaders remembered: beyond any quorum we meet.
const MAX_CONTROLLERS: usize = 4096;
/// The quorum's log: the only partition the quorum messages are about.
const METADATA_LOG: &str = "__cluster_metadata";

crate::names::closed_set! {
    /// What a bound of a leader's time rests on: a message of the capture, or a batch of
    /// the metadata log.
    pub enum Evidence {
        BeginQuorumEpoch = "begin_quorum_epoch",
        EndQuorumEpoch = "end_quorum_epoch",
        BeginQuorumEpochResponse = "begin_quorum_epoch_response",
        EndQuorumEpochResponse = "end_quorum_epoch_response",
        VoteResponse = "vote_response",
        AllocateProducerIds = "allocate_producer_ids",
        /// The log's LeaderChange record.
        LeaderChange = "leader_change",
        /// Another batch of the log that the epoch's leader appended.
        Batch = "batch",
    }
}

/// One leader's span of the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership {
    pub leader_id: i32,
    pub epoch: i32,
    /// The first message that shows it, and the first that shows a later epoch.
    pub from: MessageMeta,
    pub to: Option<MessageMeta>,
    /// How it is known: the kind of message `from` is.
    pub how: Evidence,
    /// The first and last moments the capture proves the leader led: messages it sent as
    /// leader of this epoch. A voter's word names the leader but proves nothing of when.
    pub proven: Option<Proven>,
}

/// The first and last messages that prove a controller led, and what each is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proven {
    pub first: (MessageMeta, Evidence),
    pub last: (MessageMeta, Evidence),
}

impl Proven {
    fn at(meta: &MessageMeta, how: Evidence) -> Self {
        Self {
            first: (*meta, how),
            last: (*meta, how),
        }
    }

    fn extend(&mut self, meta: &MessageMeta, how: Evidence) {
        if meta.timestamp < self.first.0.timestamp {
            self.first = (*meta, how);
        }
        if meta.timestamp >= self.last.0.timestamp {
            self.last = (*meta, how);
        }
    }
}

/// Answers of AllocateProducerIds given as leader by one controller address, one after
/// another with no other controller's between and no epoch change shown, in no epoch the
/// capture names (no quorum message came first, or the controller's id was not known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerRun {
    pub server: SocketAddr,
    /// The controller's id, when the quorum's messages named the address by the end.
    pub controller_id: Option<i32>,
    /// The latest epoch the capture had shown when the run began.
    pub after_epoch: Option<i32>,
    pub proven: Proven,
}

/// What the capture shows of the quorum's leaders: a span per epoch, and runs of answers
/// in no epoch shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leaders {
    pub spans: Vec<Leadership>,
    pub unplaced: Vec<AnswerRun>,
}

/// How strongly a message shows who leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// A controller answered AllocateProducerIds as leader; the epoch is inferred.
    Answer,
    /// A voter's response: whom it takes for leader.
    Belief,
    /// The leader's own BeginQuorumEpoch or EndQuorumEpoch request.
    Own,
}

#[derive(Debug)]
struct Span {
    lead: Leadership,
    strength: Strength,
}

/// A controller address and who serves on it.
#[derive(Debug, Clone, Copy)]
struct Serving {
    /// None once two controllers claimed it.
    id: Option<i32>,
}

#[derive(Debug, Default)]
pub struct Timeline {
    /// By epoch: Raft has at most one leader per epoch.
    spans: BTreeMap<i32, Span>,
    /// The highest epoch any message showed, and the first message that showed it.
    latest: Option<i32>,
    latest_from: Option<MessageMeta>,
    /// The highest epoch each controller is known to have led.
    led: BTreeMap<i32, i32>,
    by_address: BTreeMap<SocketAddr, Serving>,
    /// Answers in no epoch shown, oldest first, at most [`MAX_SPANS`].
    unplaced: VecDeque<AnswerRun>,
    /// The last run's server answered NOT_CONTROLLER since: its next answer as leader
    /// starts a run of its own, so that no run spans a moment it did not lead.
    unplaced_ended: bool,
    /// Spans dropped past [`MAX_SPANS`].
    pub dropped: u64,
    /// How far apart two files' clocks may be (`--clock-skew`).
    clock_skew_ns: i128,
}

impl Timeline {
    /// A Vote, BeginQuorumEpoch or EndQuorumEpoch message (others are ignored).
    pub fn cluster(&mut self, ev: &ClusterEvent, findings: &mut Vec<Finding>) {
        let before = self.dropped;
        self.quorum(ev);
        if self.dropped != before {
            let at = (None, Some(ev.endpoints.connection), ev.meta.timestamp);
            self.say_dropped(before, ev.meta.frame, at, findings);
        }
    }

    /// An AllocateProducerIds exchange: its answer tells which controller acted as leader.
    pub fn allocate(&mut self, ex: &Exchange, findings: &mut Vec<Finding>) {
        let before = self.dropped;
        self.answer(ex, findings);
        if self.dropped != before {
            let meta = ex.last_meta();
            let at = (
                ex.request.broker_id,
                Some(ex.endpoints.connection),
                meta.timestamp,
            );
            self.say_dropped(before, meta.frame, at, findings);
        }
    }

    /// `analysis_limit` at the first span dropped (`before` the message, none were).
    fn say_dropped(
        &self,
        before: u64,
        frame: u64,
        at: (Option<i32>, Option<u64>, crate::timestamp::Timestamp),
        findings: &mut Vec<Finding>,
    ) {
        if before == 0 && self.dropped > 0 {
            let table = (obs::AnalysisTable::ControllerSpans, MAX_SPANS);
            findings.push(Finding::analysis_limit(table, frame, at));
        }
    }

    fn quorum(&mut self, ev: &ClusterEvent) {
        let ClusterFact::Quorum(q) = &ev.fact else {
            return;
        };
        self.learn_addresses(ev, q);
        let how = match (q.api, q.is_request) {
            (BEGIN_QUORUM_EPOCH, true) => (Evidence::BeginQuorumEpoch, Strength::Own),
            (END_QUORUM_EPOCH, true) => (Evidence::EndQuorumEpoch, Strength::Own),
            (BEGIN_QUORUM_EPOCH, false) => (Evidence::BeginQuorumEpochResponse, Strength::Belief),
            (END_QUORUM_EPOCH, false) => (Evidence::EndQuorumEpochResponse, Strength::Belief),
            (VOTE, false) => (Evidence::VoteResponse, Strength::Belief),
            (VOTE, true) => {
                for p in q.partitions.iter().filter(|p| p.topic == METADATA_LOG) {
                    if let (Some(epoch), Some(false) | None) = (p.candidate_epoch, p.pre_vote) {
                        self.shows_epoch(epoch, &ev.meta);
                    }
                }
                return;
            }
            _ => return,
        };
        for p in q.partitions.iter().filter(|p| p.topic == METADATA_LOG) {
            let Some(epoch) = p.leader_epoch else {
                continue;
            };
            self.shows_epoch(epoch, &ev.meta);
            if let Some(leader) = p.leader_id.filter(|id| *id >= 0) {
                self.leader(epoch, leader, &ev.meta, how);
            }
        }
    }

    fn answer(&mut self, ex: &Exchange, findings: &mut Vec<Finding>) {
        let Some((meta, response)) = ex.outcome.response() else {
            return;
        };
        let server = ex.endpoints.server;
        if response.error_code == Some(ErrorCode::NOT_CONTROLLER) {
            self.unplaced_ended |= self.unplaced.back().is_some_and(|r| r.server == server);
        }
        if response.error_code != Some(ErrorCode::NONE) {
            return;
        }
        let Some(controller) = self.by_address.get(&server).and_then(|s| s.id) else {
            self.unplaced_answer(server, meta);
            return;
        };
        let asked = &ex.request_meta;
        let Some((&top_epoch, top)) = self.spans.last_key_value() else {
            match self.latest {
                // asked before the latest epoch was shown: of an earlier one, not placed
                Some(_) if !self.asked_in_latest(asked) => {}
                Some(_) => self.answered_as_leader(controller, meta),
                None => self.unplaced_answer(server, meta),
            }
            return;
        };
        if top.lead.leader_id == controller {
            if self.latest == Some(top_epoch) {
                self.prove(top_epoch, meta, Evidence::AllocateProducerIds);
            }
            return;
        }
        if self.latest > Some(top_epoch) {
            // an epoch whose leader the quorum's messages did not name: this one
            if self.asked_in_latest(asked) {
                self.answered_as_leader(controller, meta);
            }
            return;
        }
        let (Some(start), Some(len)) = (response.producer_id_start, response.producer_id_len)
        else {
            return;
        };
        if start < 0 || len <= 0 {
            return;
        }
        // A KRaft controller answers NONE only once the block's record is committed, and a
        // majority that elected another leader replicates from it no more: a block asked
        // for after that cannot be committed. One asked for before may be, its answer sent
        // late (a pause, a slow path): not stale.
        let Some(lead) = self.took_over_before(controller, asked) else {
            return;
        };
        let what = Observation::PidStaleController(obs::PidStaleController {
            frame: meta.frame,
            request_frame: asked.frame,
            controller: server,
            controller_id: controller,
            controller_led_epoch: self.led.get(&controller).copied(),
            leader_seen: lead.leader_id,
            leader_seen_epoch: lead.epoch,
            leader_seen_frame: lead.from.frame,
            start,
            len,
        });
        let frames = vec![asked.frame, lead.from.frame, meta.frame];
        let at = (
            ex.request.broker_id,
            Some(ex.endpoints.connection),
            meta.timestamp,
        );
        findings.push(Finding::new(what, at, frames));
    }

    pub fn set_clock_skew(&mut self, clock_skew_ns: u64) {
        self.clock_skew_ns = i128::from(clock_skew_ns);
    }

    /// Whether `later` provably came after `earlier`: a later frame of the same file, or
    /// of another file by more than the clock skew.
    fn came_after(&self, earlier: &MessageMeta, later: &MessageMeta) -> bool {
        later.at().surely_after(&earlier.at(), self.clock_skew_ns)
    }

    /// Whether a request `asked` came after the latest epoch was shown: only then does its
    /// answer as leader show who led that epoch (an answer sent late may be of an earlier
    /// one).
    fn asked_in_latest(&self, asked: &MessageMeta) -> bool {
        self.latest_from
            .is_some_and(|from| self.came_after(&from, asked))
    }

    /// The first span shown before the request `asked` of a leader other than
    /// `controller` in an epoch later than any `controller` was seen leading.
    fn took_over_before(&self, controller: i32, asked: &MessageMeta) -> Option<&Leadership> {
        let after = self
            .led
            .get(&controller)
            .map_or(i32::MIN, |led| led.saturating_add(1));
        self.spans
            .range(after..)
            .map(|(_, span)| &span.lead)
            .filter(|lead| lead.leader_id != controller && self.came_after(&lead.from, asked))
            .min_by_key(|lead| lead.from.frame)
    }

    /// A message that `epoch`'s leader sent as leader.
    fn prove(&mut self, epoch: i32, meta: &MessageMeta, how: Evidence) {
        if let Some(span) = self.spans.get_mut(&epoch) {
            match &mut span.lead.proven {
                Some(proven) => proven.extend(meta, how),
                None => span.lead.proven = Some(Proven::at(meta, how)),
            }
        }
    }

    /// An answer as leader by `server` in no epoch shown: it joins the last run when that
    /// is the same address's, no epoch was shown since, and it answered NOT_CONTROLLER
    /// in none of them.
    fn unplaced_answer(&mut self, server: SocketAddr, meta: &MessageMeta) {
        let how = Evidence::AllocateProducerIds;
        if let Some(run) = self.unplaced.back_mut().filter(|_| !self.unplaced_ended) {
            if run.server == server && run.after_epoch == self.latest {
                run.proven.extend(meta, how);
                return;
            }
        }
        self.unplaced_ended = false;
        self.unplaced.push_back(AnswerRun {
            server,
            controller_id: None,
            after_epoch: self.latest,
            proven: Proven::at(meta, how),
        });
        if self.unplaced.len() > MAX_SPANS {
            self.unplaced.pop_front();
            self.dropped += 1;
        }
    }

    /// `controller` answered as leader in the latest epoch shown, whose leader is unknown.
    fn answered_as_leader(&mut self, controller: i32, meta: &MessageMeta) {
        if let Some(epoch) = self.latest {
            self.leader(
                epoch,
                controller,
                meta,
                (Evidence::AllocateProducerIds, Strength::Answer),
            );
        }
    }

    /// A message shows that `epoch` began: every span before it ends here.
    fn shows_epoch(&mut self, epoch: i32, meta: &MessageMeta) {
        if epoch < 0 || self.latest >= Some(epoch) {
            return;
        }
        self.latest = Some(epoch);
        self.latest_from = Some(*meta);
        for span in self.spans.range_mut(..epoch).rev() {
            if span.1.lead.to.is_some() {
                break;
            }
            span.1.lead.to = Some(*meta);
        }
    }

    /// A message shows `leader` leading `epoch`, as strongly as `how` says.
    fn leader(
        &mut self,
        epoch: i32,
        leader: i32,
        meta: &MessageMeta,
        (how, strength): (Evidence, Strength),
    ) {
        if epoch < 0 || self.latest > Some(epoch) {
            return;
        }
        let proves = strength != Strength::Belief;
        let lead = Leadership {
            leader_id: leader,
            epoch,
            from: *meta,
            to: None,
            how,
            proven: proves.then(|| Proven::at(meta, how)),
        };
        match self.spans.get_mut(&epoch) {
            Some(span) if span.lead.leader_id == leader => {
                if proves {
                    self.prove(epoch, meta, how);
                }
                return;
            }
            Some(span) if span.strength >= strength => return,
            // a stronger message names another leader: a voter's belief was wrong
            Some(span) => {
                let wrong = span.lead.leader_id;
                *span = Span { lead, strength };
                self.relearn_led(wrong);
            }
            None => {
                self.spans.insert(epoch, Span { lead, strength });
                if self.spans.len() > MAX_SPANS {
                    self.spans.pop_first();
                    self.dropped += 1;
                }
            }
        }
        if self.led.len() < MAX_CONTROLLERS || self.led.contains_key(&leader) {
            let led = self.led.entry(leader).or_insert(epoch);
            *led = (*led).max(epoch);
        }
    }

    /// The highest epoch `controller` led, after a span it was wrongly given was retaken.
    fn relearn_led(&mut self, controller: i32) {
        let led = self
            .spans
            .iter()
            .rev()
            .find(|(_, s)| s.lead.leader_id == controller)
            .map(|(epoch, _)| *epoch);
        match led {
            Some(epoch) => self.led.insert(controller, epoch),
            None => self.led.remove(&controller),
        };
    }

    /// Controller addresses: the leader's listeners in its requests, the node endpoints
    /// of responses, and a request's server when the request names its voter.
    fn learn_addresses(&mut self, ev: &ClusterEvent, q: &QuorumMessage) {
        if q.is_request {
            let leader = q
                .partitions
                .iter()
                .filter(|p| p.topic == METADATA_LOG)
                .find_map(|p| p.leader_id.filter(|id| *id >= 0));
            if let (Some(leader), true) = (leader, q.api != VOTE) {
                for e in &q.endpoints {
                    self.serves(e, leader);
                }
            }
            if let Some(voter) = q.voter_id.filter(|id| *id >= 0) {
                self.claim(ev.endpoints.server, voter);
            }
        } else {
            for e in &q.endpoints {
                if let Some(id) = e.node_id.filter(|id| *id >= 0) {
                    self.serves(e, id);
                }
            }
        }
    }

    fn serves(&mut self, endpoint: &NodeEndpoint, id: i32) {
        if let Ok(ip) = endpoint.host.parse::<IpAddr>() {
            self.claim(SocketAddr::new(ip, endpoint.port), id);
        }
    }

    fn claim(&mut self, address: SocketAddr, id: i32) {
        let full = self.by_address.len() >= MAX_CONTROLLERS;
        match self.by_address.get_mut(&address) {
            Some(serving) if serving.id != Some(id) => serving.id = None,
            Some(_) => {}
            None if !full => {
                self.by_address.insert(address, Serving { id: Some(id) });
            }
            None => {}
        }
    }

    /// The spans in epoch order, and the answers in no epoch shown with the ids their
    /// addresses proved to have by the end.
    pub fn finish(self) -> Leaders {
        let by_address = self.by_address;
        let unplaced = self
            .unplaced
            .into_iter()
            .map(|mut run| {
                run.controller_id = by_address.get(&run.server).and_then(|s| s.id);
                run
            })
            .collect();
        Leaders {
            spans: self.spans.into_values().map(|s| s.lead).collect(),
            unplaced,
        }
    }
}

pub mod pieces;

#[cfg(test)]
mod tests;
