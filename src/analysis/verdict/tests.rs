use super::*;
use crate::analysis::test_support::exchange;
use crate::analysis::{analyse, SlowRule};
use crate::packet_ref::PacketRef;

const BUDGET: Budget = Budget {
    max_memory: 256 << 20,
    max_connections: 50_000,
    forgotten_connections: 0,
};

/// The verdict on `exchanges` with these extra diagnostics counted.
fn judged(exchanges: &[crate::pairing::Exchange], extra: &[(Kind, u64)]) -> Verdict {
    judged_seeing(exchanges, extra, None)
}

/// [`judged`], with these brokers known and seen at the controllers instead of the
/// analysis's own.
fn judged_seeing(
    exchanges: &[crate::pairing::Exchange],
    extra: &[(Kind, u64)],
    coverage: Option<crate::analysis::Coverage>,
) -> Verdict {
    judged_unmatched(exchanges, extra, coverage, [0, 0])
}

/// [`judged_seeing`], with `unmatched` responses whose request was not read, and how
/// many of them read as blocks.
fn judged_unmatched(
    exchanges: &[crate::pairing::Exchange],
    extra: &[(Kind, u64)],
    coverage: Option<crate::analysis::Coverage>,
    [unmatched, like_blocks]: [u64; 2],
) -> Verdict {
    let mut diags = Diagnostics::default();
    let analysis = analyse(exchanges, SlowRule::Default, &mut diags);
    for (kind, n) in extra {
        for _ in 0..*n {
            diags.push(*kind, None, PacketRef::default(), String::new(), vec![]);
        }
    }
    let timeline = crate::analysis::controllers::pieces::pieces(&analysis.controllers, None, None);
    judge(&Evidence {
        packets: 100,
        producers: &analysis.producers,
        controllers: &timeline,
        unmatched_responses: unmatched,
        unmatched_like_blocks: like_blocks,
        writes_producers: &[],
        totals: &analysis.totals,
        brokers: &analysis.brokers,
        findings: &analysis.findings,
        diagnostics: &diags,
        captures: &[],
        not_kafka_connections: 0,
        log: None,
        coverage: coverage.as_ref().unwrap_or(&analysis.coverage),
        budget: BUDGET,
        // one per tls_encrypted diagnostic, as the Kafka stage counts them
        encrypted_connections: extra
            .iter()
            .filter(|(k, _)| *k == Kind::TlsEncrypted)
            .map(|(_, n)| n)
            .sum(),
    })
}

fn healthy() -> Vec<crate::pairing::Exchange> {
    vec![
        exchange(1, 1, 5, Some((0, 0, 1000, 2))),
        exchange(2, 2, 5, Some((0, 1000, 1000, 3))),
        exchange(3, 1, 5, Some((0, 2000, 1000, 2))),
    ]
}

#[test]
fn a_healthy_allocation_is_correct() {
    let v = judged(&healthy(), &[]);
    assert_eq!(v.code, Code::Correct);
    assert_eq!(
        v.headline,
        "CORRECT: 3 blocks granted to 2 brokers without overlap or regression"
    );
}

#[test]
fn no_diagnostic_of_error_severity_leaves_the_verdict_correct() {
    for kind in Kind::ALL
        .into_iter()
        .filter(|k| k.severity() == Severity::Error)
    {
        let v = judged(&healthy(), &[(kind, 1)]);
        assert!(
            !matches!(v.code, Code::Correct | Code::CorrectWithWarnings),
            "{kind:?}: {}",
            v.headline
        );
    }
}

#[test]
fn every_warning_is_named_or_limits_the_verdict() {
    for kind in Kind::ALL
        .into_iter()
        .filter(|k| k.severity() == Severity::Warning)
    {
        let v = judged(&healthy(), &[(kind, 2)]);
        assert_ne!(v.code, Code::Correct, "{kind:?}");
        let named = v.headline.contains(kind.as_str()) || !v.limits.is_empty();
        assert!(named, "{kind:?}: {}", v.headline);
    }
}

#[test]
fn damage_makes_the_capture_incomplete_with_what_to_do() {
    let v = judged(&healthy(), &[(Kind::CaptureTruncated, 1)]);
    assert_eq!(v.code, Code::IncompleteCapture);
    assert_eq!(
        v.headline,
        "INCOMPLETE CAPTURE: 1 capture file cut short, ending inside a record; copy the whole file again: the packets before the cut were read; in what was read, 3 blocks granted to 2 brokers without overlap or regression"
    );
    let v = judged(&healthy(), &[(Kind::OneSidedConnection, 2)]);
    assert_eq!(v.code, Code::IncompleteCapture);
    assert!(v
        .headline
        .contains("2 Kafka connections captured in one direction only"));
}

#[test]
fn memory_budget_sheds_are_pidsharks_own_limit_not_the_captures() {
    let v = judged(&healthy(), &[(Kind::MemoryLimit, 2)]);
    assert_eq!(v.code, Code::IncompleteReading);
    assert_eq!(
        v.headline,
        "INCOMPLETE READING: pidshark gave up what it held 2 times at --max-memory 256M; run again with a larger --max-memory; in what was read, 3 blocks granted to 2 brokers without overlap or regression"
    );
    let limit = &v.limits[0];
    assert!(limit.own && !limit.damage, "{limit:?}");
    // damage to the capture comes first: it is the capture's, whatever the budget
    let v = judged(
        &healthy(),
        &[(Kind::MemoryLimit, 2), (Kind::CaptureTruncated, 1)],
    );
    assert_eq!(v.code, Code::IncompleteCapture);
    assert_eq!(size(64 << 10), "64K");
    assert_eq!(size(1500), "1500");
}

#[test]
fn requests_without_a_block_say_how_each_was_answered() {
    let ex = vec![
        exchange(1, 1, 5, Some((41, -1, 0, 2))),
        exchange(2, 1, 5, Some((41, -1, 0, 2))),
        exchange(3, 2, 5, None),
    ];
    let v = judged(&ex, &[]);
    assert_eq!(v.code, Code::NoProducerIdsGranted);
    assert_eq!(
        v.headline,
        "NO PRODUCER IDS GRANTED: 3 requests, none granted a block: answered NOT_CONTROLLER 2, not at all 1"
    );
}

#[test]
fn an_overlap_is_named_even_in_a_damaged_capture() {
    let ex = vec![
        exchange(1, 1, 5, Some((0, 0, 1000, 2))),
        exchange(2, 2, 5, Some((0, 500, 1000, 3))),
    ];
    let v = judged(&ex, &[(Kind::CaptureTruncated, 1)]);
    assert_eq!(v.code, Code::DuplicateProducerIds);
    assert!(v.headline.ends_with(
        "; the capture is incomplete too: 1 capture file cut short, ending inside a record"
    ));
}

#[test]
fn nothing_to_judge_says_what_could_not_be_read() {
    let v = judged(&[], &[]);
    assert_eq!(
        v.headline,
        "NO ALLOCATEPRODUCERIDS EXCHANGES: none in 100 packets"
    );
    let v = judged(&[], &[(Kind::PacketMalformed, 3)]);
    assert_eq!(
        v.headline,
        "NO ALLOCATEPRODUCERIDS EXCHANGES: none in 100 packets, but 3 packets could not be decoded"
    );
}

#[test]
fn codes_round_trip_by_name() {
    for code in Code::ALL {
        assert_eq!(Code::from_name(code.as_str()), Some(code));
    }
}

#[test]
fn a_capture_that_misses_known_brokers_says_which_and_is_correct_only_as_far_as_captured() {
    let coverage = crate::analysis::Coverage {
        known: [1, 2, 3, 4].into(),
        seen: [1].into(),
        ..crate::analysis::Coverage::default()
    };
    let v = judged_seeing(&healthy(), &[], Some(coverage));
    assert_eq!(v.code, Code::CorrectAsFarAsCaptured);
    let limit = v
        .limits
        .iter()
        .find(|l| l.kind == LimitKind::Coverage)
        .expect("a limit");
    assert_eq!((limit.count, limit.damage), (3, false));
    assert_eq!(
        limit.text,
        "1 of 4 known brokers' controller connections captured (brokers 2, 3 and 4 not seen: no heartbeat, registration or AllocateProducerIds request)"
    );
    assert!(v.headline.contains(&limit.text), "{}", v.headline);
}

#[test]
fn a_capture_that_misses_known_controllers_names_them() {
    let coverage = crate::analysis::Coverage {
        controllers_known: [101, 102, 103].into(),
        controllers_seen: [102].into(),
        ..crate::analysis::Coverage::default()
    };
    let v = judged_seeing(&healthy(), &[], Some(coverage));
    assert_eq!(v.code, Code::CorrectAsFarAsCaptured);
    let limit = v
        .limits
        .iter()
        .find(|l| l.kind == LimitKind::ControllerCoverage)
        .expect("a limit");
    assert_eq!((limit.count, limit.damage), (2, false));
    assert_eq!(
        limit.text,
        "1 of 3 known controllers seen in the quorum (controllers 101 and 103 not seen: no fetch of the metadata log, vote, epoch begun or ended, or answer as leader)"
    );
}

#[test]
fn what_was_lost_is_said_as_what_the_answer_lacks_and_only_then() {
    let whole = judged_unmatched(&healthy(), &[], None, [7, 0]);
    assert!(whole.cost.is_empty(), "{:?}", whole.cost);
    let cut = judged_unmatched(&healthy(), &[(Kind::PacketTruncated, 3)], None, [7, 0]);
    assert_eq!(cut.code, Code::IncompleteCapture);
    let kinds: Vec<(&str, u64)> = cut
        .cost
        .iter()
        .map(|c| (c.kind.as_str(), c.count))
        .collect();
    assert_eq!(kinds, [("requests_not_read", 7)]);
    assert!(
        cut.headline.contains(
            "; the answer lacks the requests of 7 responses (their APIs unknown: any producer grants among them are not counted); capture again with -s 0"
        ),
        "{}",
        cut.headline
    );
    // leaders named by address only are a loss only where quorum messages were cut
    assert!(!cut.cost.iter().any(|c| c.kind == CostKind::LeadersUnnamed));
}

/// Issue 42: what a producer id held twice cost is said with the verdict: the producer
/// ids written by two producers and the batches acknowledged and never appended.
#[test]
fn the_writes_tell_what_a_producer_id_held_twice_cost() {
    let v = judged(
        &healthy(),
        &[(Kind::WriteSharedProducer, 1), (Kind::WriteNotAppended, 3)],
    );
    assert_eq!(v.code, Code::CorrectAsFarAsCaptured);
    assert_eq!(
        v.headline,
        "CORRECT AS FAR AS CAPTURED: 3 blocks granted to 2 brokers without overlap or regression, but 1 producer id and epoch was written by two producers (write_shared_producer); 3 batches were acknowledged with success at offsets another producer's batch holds, and never appended (write_not_appended)"
    );
    let v = judged(
        &healthy(),
        &[(Kind::PidDuplicateGrant, 1), (Kind::WriteNotAppended, 1)],
    );
    assert_eq!(v.code, Code::DuplicateProducerIds);
    assert!(
        v.headline.ends_with("; the writes show what it cost: 1 batch was acknowledged with success at offsets another producer's batch holds, and never appended (write_not_appended)"),
        "{}",
        v.headline
    );
}

/// A block granted to a request whose broker id was not read keeps a whole capture's
/// verdict from `correct`: it was compared with no other, and the headline says so.
#[test]
fn a_block_granted_to_a_request_not_read_is_said_compared_with_none() {
    let mut cut = exchange(2, 2, 5, Some((0, 1000, 1000, 1)));
    cut.request.broker_id = None;
    let v = judged(&[exchange(1, 1, 5, Some((0, 0, 1000, 1))), cut], &[]);
    assert_eq!(v.code, Code::CorrectAsFarAsCaptured, "{}", v.headline);
    assert!(
        v.headline.ends_with(
            "1 block granted to 1 broker without overlap or regression, and 1 more block granted to requests whose broker id or epoch was not read was compared with no other, so an overlap or a regression with them goes unfound"
        ),
        "{}",
        v.headline
    );
    assert!(
        v.facts.contains(&("blocks_uncompared", 1u64.into())),
        "{:?}",
        v.facts
    );
}

#[test]
fn an_answer_read_as_a_block_without_its_request_keeps_the_verdict_from_correct() {
    let v = judged_unmatched(&healthy(), &[], None, [4, 1]);
    assert_eq!(v.code, Code::CorrectAsFarAsCaptured, "{}", v.headline);
    assert_eq!(
        v.headline,
        "CORRECT AS FAR AS CAPTURED: 3 blocks granted to 2 brokers without overlap or regression, but 1 response to a request not read has the bytes of an AllocateProducerIds answer granting a block, compared with no other block (unmatched_like_blocks)"
    );
    assert!(v.facts.contains(&("unmatched_like_blocks", 1u64.into())));
    let none = judged_unmatched(&[], &[], None, [2, 2]);
    assert_eq!(none.code, Code::NoExchanges);
    assert!(
        none.headline.ends_with(
            "none in 100 packets; 2 responses to requests not read have the bytes of AllocateProducerIds answers granting blocks, compared with no other block (unmatched_like_blocks)"
        ),
        "{}",
        none.headline
    );
    // a response of another API, as most unmatched ones are, changes nothing
    let other = judged_unmatched(&healthy(), &[], None, [4, 0]);
    assert_eq!(other.code, Code::Correct);
    assert!(!other
        .facts
        .iter()
        .any(|(f, _)| *f == "unmatched_like_blocks"));
}
