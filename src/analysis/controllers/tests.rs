//! The timeline's rules on hand-made quorum messages and AllocateProducerIds answers.

use super::*;
use crate::analysis::test_support::exchange;
use crate::diag::obs;
use crate::kafka::cluster::QuorumPartition;
use crate::kafka::tables::ApiKey;
use crate::pairing::Endpoints;
use crate::timestamp::Timestamp;

const LEADER_A: &str = "10.0.0.1:9093";
const LEADER_B: &str = "10.0.0.2:9093";

fn meta(frame: u64) -> MessageMeta {
    MessageMeta {
        frame,
        first_frame: frame,
        timestamp: Timestamp {
            secs: 1_700_000_000 + frame as i64,
            nanos: 0,
            nano: false,
        },
        size: 40,
        origin: None,
    }
}

fn partition(leader_id: i32, leader_epoch: i32) -> QuorumPartition {
    QuorumPartition {
        topic: METADATA_LOG.into(),
        partition: 0,
        leader_id: Some(leader_id),
        leader_epoch: Some(leader_epoch),
        candidate_id: None,
        candidate_epoch: None,
        pre_vote: None,
        vote_granted: None,
        error_code: None,
    }
}

fn endpoint(node_id: Option<i32>, address: &str) -> NodeEndpoint {
    let address: SocketAddr = address.parse().unwrap();
    NodeEndpoint {
        node_id,
        name: node_id.is_none().then(|| "CONTROLLER".to_owned()),
        host: address.ip().to_string(),
        port: address.port(),
    }
}

/// A quorum message in `frame`, on a connection to `server`.
fn event(frame: u64, server: &str, q: QuorumMessage) -> ClusterEvent {
    ClusterEvent {
        endpoints: Endpoints {
            connection: 100,
            client: "10.0.0.9:50000".parse().unwrap(),
            server: server.parse().unwrap(),
        },
        meta: meta(frame),
        is_request: q.is_request,
        kept: None,
        fact: ClusterFact::Quorum(q),
    }
}

fn message(api: ApiKey, is_request: bool, partitions: Vec<QuorumPartition>) -> QuorumMessage {
    QuorumMessage {
        api,
        version: 1,
        is_request,
        cluster_id: None,
        voter_id: None,
        error_code: (!is_request).then_some(ErrorCode::NONE),
        partitions,
        endpoints: Vec::new(),
    }
}

/// `leader` (listening on `address`) begins `epoch`, told to a voter in `frame`.
fn begin(frame: u64, leader: i32, epoch: i32, address: &str) -> ClusterEvent {
    let mut q = message(BEGIN_QUORUM_EPOCH, true, vec![partition(leader, epoch)]);
    q.endpoints = vec![endpoint(None, address)];
    event(frame, "10.0.0.3:9093", q)
}

/// A voter answering a `api` request: it takes `leader` for leader of `epoch`.
fn belief(frame: u64, api: ApiKey, leader: i32, epoch: i32) -> ClusterEvent {
    event(
        frame,
        "10.0.0.3:9093",
        message(api, false, vec![partition(leader, epoch)]),
    )
}

fn vote_request(frame: u64, candidate: i32, epoch: i32, pre_vote: bool) -> ClusterEvent {
    let mut p = partition(-1, -1);
    (p.leader_id, p.leader_epoch) = (None, None);
    (p.candidate_id, p.candidate_epoch, p.pre_vote) =
        (Some(candidate), Some(epoch), Some(pre_vote));
    event(frame, "10.0.0.3:9093", message(VOTE, true, vec![p]))
}

/// AllocateProducerIds answered in frame `n * 10 + 1` by the controller on `server`.
fn grant(n: u64, server: &str, error: i16, start: i64) -> Exchange {
    let mut ex = exchange(n, 1, 7, Some((error, start, 1000, 1)));
    ex.endpoints.server = server.parse().unwrap();
    ex
}

fn run(events: Vec<ClusterEvent>, grants: Vec<Exchange>) -> (Vec<Leadership>, Vec<Finding>) {
    let mut items: Vec<(u64, Result<ClusterEvent, Exchange>)> = events
        .into_iter()
        .map(|e| (e.meta.frame, Ok(e)))
        .chain(grants.into_iter().map(|g| (g.last_meta().frame, Err(g))))
        .collect();
    items.sort_by_key(|(frame, _)| *frame);
    let (mut t, mut found) = (Timeline::default(), Vec::new());
    for (_, item) in items {
        match item {
            Ok(ev) => t.cluster(&ev, &mut found),
            Err(ex) => t.allocate(&ex, &mut found),
        }
    }
    (t.finish().spans, found)
}

/// (leader, epoch, from frame, to frame, how) of each span.
fn spans(timeline: &[Leadership]) -> Vec<(i32, i32, u64, Option<u64>, &'static str)> {
    timeline
        .iter()
        .map(|l| {
            (
                l.leader_id,
                l.epoch,
                l.from.frame,
                l.to.map(|m| m.frame),
                l.how.as_str(),
            )
        })
        .collect()
}

#[test]
fn each_begin_quorum_epoch_starts_a_span_that_the_next_epoch_ends() {
    let (timeline, found) = run(
        vec![begin(4, 1, 4, LEADER_A), begin(18, 2, 5, LEADER_B)],
        vec![grant(1, LEADER_A, 0, 1000), grant(3, LEADER_B, 0, 2000)],
    );
    assert_eq!(
        spans(&timeline),
        vec![
            (1, 4, 4, Some(18), "begin_quorum_epoch"),
            (2, 5, 18, None, "begin_quorum_epoch"),
        ]
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_grant_from_the_leader_of_an_older_epoch_is_stale() {
    let (_, found) = run(
        vec![begin(4, 1, 4, LEADER_A), begin(18, 2, 5, LEADER_B)],
        vec![
            grant(1, LEADER_A, 0, 1000),
            grant(2, LEADER_A, 0, 2000), // frame 21: after 2 began epoch 5
            grant(3, LEADER_A, 41, -1),  // NOT_CONTROLLER: no block, no finding
        ],
    );
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!(f.kind, crate::diag::Kind::PidStaleController);
    assert_eq!(f.frames, vec![18, 20, 21]);
    let what = Observation::PidStaleController(obs::PidStaleController {
        frame: 21,
        request_frame: 20,
        controller: LEADER_A.parse().unwrap(),
        controller_id: 1,
        controller_led_epoch: Some(4),
        leader_seen: 2,
        leader_seen_epoch: 5,
        leader_seen_frame: 18,
        start: 2000,
        len: 1000,
    });
    assert_eq!(f.facts, what.facts());
}

/// [`grant`], its request seen in frame `asked`.
fn asked_at(asked: u64, mut ex: Exchange) -> Exchange {
    ex.request_meta = meta(asked);
    ex
}

#[test]
fn a_block_asked_for_before_a_takeover_and_answered_after_it_is_not_stale() {
    // committed before the election (KRaft answers NONE only then), its answer late
    let (timeline, found) = run(
        vec![begin(4, 1, 4, LEADER_A), begin(18, 2, 5, LEADER_B)],
        vec![asked_at(15, grant(2, LEADER_A, 0, 2000))],
    );
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(
        spans(&timeline),
        vec![
            (1, 4, 4, Some(18), "begin_quorum_epoch"),
            (2, 5, 18, None, "begin_quorum_epoch"),
        ]
    );
}

#[test]
fn a_request_from_another_file_is_after_a_takeover_only_by_more_than_the_clock_skew() {
    // the takeover in file 1 at second 18, the request in file 0: 2 ms or 2 s later
    let in_file = |capture: usize, mut m: MessageMeta| {
        m.origin = crate::packet_ref::Origin::new(capture, m.frame);
        m
    };
    for (late_ms, stale) in [(2, false), (2000, true)] {
        let mut takeover = begin(18, 2, 5, LEADER_B);
        takeover.meta = in_file(1, takeover.meta);
        let mut ex = asked_at(19, grant(2, LEADER_A, 0, 2000));
        ex.request_meta = in_file(0, meta(19));
        ex.request_meta.timestamp = takeover.meta.timestamp;
        ex.request_meta.timestamp.secs += i64::from(late_ms / 1000);
        ex.request_meta.timestamp.nanos = late_ms % 1000 * 1_000_000;
        let mut items = vec![begin(4, 1, 4, LEADER_A), takeover];
        let mut t = Timeline::default();
        t.set_clock_skew(5_000_000);
        let mut found = Vec::new();
        for ev in items.drain(..) {
            t.cluster(&ev, &mut found);
        }
        t.allocate(&ex, &mut found);
        assert_eq!(found.len(), usize::from(stale), "{late_ms} ms: {found:?}");
    }
}

#[test]
fn a_stale_grant_names_the_first_takeover_before_its_request() {
    let (_, found) = run(
        vec![
            begin(4, 1, 4, LEADER_A),
            begin(18, 2, 5, LEADER_B),
            begin(28, 3, 6, "10.0.0.3:9093"),
        ],
        vec![asked_at(20, grant(3, LEADER_A, 0, 2000))],
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].frames, vec![18, 20, 31]);
    let facts = &found[0].facts;
    let fact = |name: &str| {
        facts
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(fact("leader_seen"), Some(2.into()), "{facts:?}");
    assert_eq!(fact("leader_seen_epoch"), Some(5.into()), "{facts:?}");
}

#[test]
fn an_answer_asked_for_before_an_unwon_election_does_not_name_its_leader() {
    let (timeline, found) = run(
        vec![
            begin(2, 1, 3, LEADER_A),
            begin(12, 2, 4, LEADER_B),
            vote_request(16, 1, 5, false),
        ],
        // asked of epoch 3's leader before epoch 4 began: its answer is of epoch 3
        vec![asked_at(10, grant(2, LEADER_A, 0, 1000))],
    );
    assert_eq!(
        spans(&timeline),
        vec![
            (1, 3, 2, Some(12), "begin_quorum_epoch"),
            (2, 4, 12, Some(16), "begin_quorum_epoch"),
        ]
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_controller_at_an_unknown_address_or_one_two_claim_is_not_judged() {
    let mut claimed_twice = begin(18, 2, 5, LEADER_B);
    if let ClusterFact::Quorum(q) = &mut claimed_twice.fact {
        q.endpoints.push(endpoint(None, LEADER_A));
    }
    let (_, found) = run(
        vec![begin(4, 1, 4, LEADER_A), claimed_twice],
        vec![
            grant(2, LEADER_A, 0, 2000),
            grant(3, "10.0.0.7:9093", 0, 3000),
        ],
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn voters_beliefs_start_a_span_only_where_nothing_stronger_came_first() {
    let (timeline, _) = run(
        vec![
            belief(2, VOTE, 1, 3),               // the first sign of epoch 3
            begin(4, 1, 3, LEADER_A),            // the same leader: the span stays
            belief(5, BEGIN_QUORUM_EPOCH, 9, 3), // contradicts a leader's own word
            belief(6, END_QUORUM_EPOCH, -1, 4),  // epoch 4 began, no leader known
            belief(8, BEGIN_QUORUM_EPOCH, 2, 4),
        ],
        vec![],
    );
    assert_eq!(
        spans(&timeline),
        vec![
            (1, 3, 2, Some(6), "vote_response"),
            (2, 4, 8, None, "begin_quorum_epoch_response"),
        ]
    );
}

#[test]
fn a_leaders_own_request_corrects_a_wrong_belief() {
    let (timeline, found) = run(
        vec![belief(2, VOTE, 9, 3), begin(4, 1, 3, LEADER_A)],
        vec![grant(1, LEADER_A, 0, 0)],
    );
    assert_eq!(
        spans(&timeline),
        vec![(1, 3, 4, None, "begin_quorum_epoch")]
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn candidacies_end_a_span_but_start_none_and_pre_votes_do_neither() {
    let (timeline, _) = run(
        vec![
            begin(2, 1, 3, LEADER_A),
            vote_request(4, 2, 4, true),
            vote_request(6, 2, 4, false),
            belief(8, VOTE, 1, 3), // a late view of an epoch already over
        ],
        vec![],
    );
    assert_eq!(
        spans(&timeline),
        vec![(1, 3, 2, Some(6), "begin_quorum_epoch")]
    );
}

#[test]
fn a_controller_answering_after_an_election_it_was_not_seen_winning_leads_that_epoch() {
    let (timeline, found) = run(
        vec![
            begin(2, 1, 3, LEADER_A),
            begin(12, 2, 4, LEADER_B),
            vote_request(16, 1, 5, false),
        ],
        vec![grant(1, LEADER_A, 0, 0), grant(2, LEADER_A, 0, 1000)],
    );
    assert_eq!(
        spans(&timeline),
        vec![
            (1, 3, 2, Some(12), "begin_quorum_epoch"),
            (2, 4, 12, Some(16), "begin_quorum_epoch"),
            (1, 5, 21, None, "allocate_producer_ids"),
        ]
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn a_voter_named_by_a_request_is_known_by_the_requests_server() {
    let mut q = message(VOTE, true, vec![]);
    q.voter_id = Some(2);
    let told = event(1, LEADER_B, q);
    let (_, found) = run(
        vec![told, begin(3, 1, 4, LEADER_A)],
        vec![grant(1, LEADER_B, 0, 0)],
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].message.contains("it was not seen leading"),
        "{}",
        found[0].message
    );
}

#[test]
fn an_answer_asked_for_before_the_only_epoch_shown_is_placed_nowhere() {
    // B is known by a Vote request naming it; epoch 5 shown at 16 by a candidacy only
    let mut q = message(VOTE, true, vec![]);
    q.voter_id = Some(2);
    let mut t = Timeline::default();
    let mut found = Vec::new();
    t.cluster(&event(1, LEADER_B, q), &mut found);
    t.cluster(&vote_request(16, 1, 5, false), &mut found);
    // asked at 10, before epoch 5 began: of an earlier epoch, answered late
    t.allocate(&asked_at(10, grant(2, LEADER_B, 0, 1000)), &mut found);
    // asked at 25: 2 answered as the leader of epoch 5
    t.allocate(&asked_at(25, grant(3, LEADER_B, 0, 2000)), &mut found);
    let leaders = t.finish();
    assert!(leaders.unplaced.is_empty(), "{:?}", leaders.unplaced);
    assert_eq!(
        spans(&leaders.spans),
        vec![(2, 5, 31, None, "allocate_producer_ids")]
    );
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn the_earliest_spans_are_dropped_past_the_limit() {
    let mut t = Timeline::default();
    let over = MAX_SPANS as i32 + 10;
    let mut found = Vec::new();
    for epoch in 0..over {
        t.cluster(
            &begin(u64::from(epoch as u32), 1, epoch, LEADER_A),
            &mut found,
        );
    }
    assert_eq!(t.dropped, 10);
    // said once, at the message that dropped the first
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].frames, vec![MAX_SPANS as u64]);
    assert!(
        found[0]
            .facts
            .contains(&("table", "controller_spans".into())),
        "{:?}",
        found[0].facts
    );
    let timeline = t.finish().spans;
    assert_eq!(timeline.len(), MAX_SPANS);
    assert_eq!(timeline[0].epoch, 10);
}

/// (first, last) proving frames of each span.
fn proofs(timeline: &[Leadership]) -> Vec<Option<(u64, u64)>> {
    timeline
        .iter()
        .map(|l| l.proven.map(|p| (p.first.0.frame, p.last.0.frame)))
        .collect()
}

#[test]
fn the_leaders_own_messages_and_answers_prove_it_led_and_a_voters_word_does_not() {
    let (timeline, _) = run(
        vec![
            belief(0, VOTE, 1, 3), // a voter names 1 for epoch 3: no proof of when
            begin(1, 2, 4, LEADER_B),
            begin(3, 2, 4, LEADER_B),
        ],
        // frames 11 and 51 (1.001 s and 5.001 s): answers by 2 while it leads epoch 4
        vec![grant(1, LEADER_B, 0, 1000), grant(5, LEADER_B, 0, 2000)],
    );
    assert_eq!(proofs(&timeline), [None, Some((1, 51))]);
}

#[test]
fn answers_before_any_epoch_is_shown_are_kept_as_runs_of_one_controller() {
    let mut t = Timeline::default();
    let mut found = Vec::new();
    // answers by a server whose id no message has named yet, then by another
    for (n, server) in [(1, LEADER_A), (2, LEADER_A), (3, LEADER_B), (4, LEADER_A)] {
        t.allocate(&grant(n, server, 0, n as i64 * 1000), &mut found);
    }
    // later the quorum's messages name A's controller
    t.cluster(&begin(60, 7, 9, LEADER_A), &mut found);
    let leaders = t.finish();
    let runs: Vec<(SocketAddr, Option<i32>, u64, u64)> = leaders
        .unplaced
        .iter()
        .map(|r| {
            (
                r.server,
                r.controller_id,
                r.proven.first.0.frame,
                r.proven.last.0.frame,
            )
        })
        .collect();
    let (a, b): (SocketAddr, SocketAddr) = (LEADER_A.parse().unwrap(), LEADER_B.parse().unwrap());
    assert_eq!(
        runs,
        [
            (a, Some(7), 11, 21),
            (b, None, 31, 31),
            (a, Some(7), 41, 41)
        ]
    );
    assert!(found.is_empty(), "{found:?}");
}

/// A controller that answered NOT_CONTROLLER between two answers as leader did not lead
/// all along: its answers make two runs, not one that spans the moment it refused.
#[test]
fn a_not_controller_answer_ends_the_run_of_its_server() {
    let mut t = Timeline::default();
    let mut found = Vec::new();
    for (n, error) in [(1, 0), (2, 41), (3, 0), (4, 0)] {
        t.allocate(&grant(n, LEADER_A, error, n as i64 * 1000), &mut found);
    }
    // another server's refusal leaves A's run as it is
    t.allocate(&grant(5, LEADER_B, 41, 0), &mut found);
    t.allocate(&grant(6, LEADER_A, 0, 6000), &mut found);
    let runs: Vec<(u64, u64)> = t
        .finish()
        .unplaced
        .iter()
        .map(|r| (r.proven.first.0.frame, r.proven.last.0.frame))
        .collect();
    assert_eq!(runs, [(11, 11), (31, 61)]);
}
