use proptest::prelude::*;

use super::*;
use crate::diag::obs;
use crate::diag::{NamedCode, Observation, Side, Undecoded};

/// One diagnostic raised: by which part, and what.
#[derive(Debug, Clone, Copy)]
enum Raised {
    /// Listed by its kind's count.
    Gap,
    /// A message not read, listed by its API's count.
    Cut(i16),
    /// A connection's held diagnostics taken in: listed by the kind's count.
    Absorbed(i16),
    /// Already written (a finding, say).
    Pushed,
}

fn raise(diags: &mut Diagnostics, connection: u64, frame: u64, raised: Raised) {
    let cut = |code| {
        Observation::KafkaMessageTruncated(Undecoded {
            api: NamedCode { code, name: "API" },
            side: Side::Client,
            correlation_id: 1,
            problem: "cut",
        })
    };
    match raised {
        Raised::Gap => {
            let gap = Observation::TcpGap(obs::TcpGap {
                bytes: frame,
                from: "10.0.0.1:40000".parse().unwrap(),
                to: "10.0.0.2:9092".parse().unwrap(),
            });
            diags.add(Some(connection), Some(frame), gap);
        }
        Raised::Cut(code) => diags.add(Some(connection), Some(frame), cut(code)),
        Raised::Absorbed(code) => {
            let mut held = Diagnostics::default();
            held.add(Some(connection), Some(frame), cut(code));
            diags.absorb(held);
        }
        Raised::Pushed => {
            let message = format!("finding at {frame}");
            diags.push(Kind::PacketTruncated, None, Some(frame), message, vec![]);
        }
    }
}

fn raised() -> impl Strategy<Value = Raised> {
    prop_oneof![
        Just(Raised::Gap),
        (1i16..3).prop_map(Raised::Cut),
        (1i16..3).prop_map(Raised::Absorbed),
        Just(Raised::Pushed),
    ]
}

/// Runs of one kind of diagnostic on one part: long enough to pass the limit.
fn runs() -> impl Strategy<Value = Vec<(usize, Raised, usize)>> {
    prop::collection::vec((0usize..3, raised(), 1usize..900), 1..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Parts each collecting what they found, then merged, list and count what one
    /// collection finding it all in order lists and counts.
    #[test]
    fn parts_merged_in_order_are_one_collection(
        runs in runs(),
        interleave in 1usize..5,
        publish_every in 1u64..300,
    ) {
        let mut one = Diagnostics::default();
        // part 0 as the capture thread's, 1 and 2 as workers telling each other what
        // they found now and then (as a worker does at the end of each epoch)
        let found = Found::new(2);
        let mut parts: Vec<Diagnostics> = vec![
            Diagnostics::placed_part(),
            Diagnostics::placed_part_sharing(Arc::clone(&found), 0),
            Diagnostics::placed_part_sharing(Arc::clone(&found), 1),
        ];
        let mut packet = 0u64;
        // runs interleaved a few at a time, so that parts alternate within kinds
        let mut cursors: Vec<(usize, Raised, usize)> = runs;
        while cursors.iter().any(|c| c.2 > 0) {
            for (part, raised, left) in cursors.iter_mut() {
                for _ in 0..interleave.min(*left) {
                    packet += 1;
                    // the connection is the part's own: numbered as the part numbers it
                    let connection = *part as u64;
                    raise(&mut one, connection, packet, *raised);
                    let stage = if *part == 0 { Stage::Capture } else { Stage::Connection };
                    let diags = &mut parts[*part];
                    diags.place_at(Place { packet, stage, connection: 0 });
                    raise(diags, connection, packet, *raised);
                    if packet.is_multiple_of(publish_every) {
                        diags.publish_found(packet + 1);
                    }
                    *left -= 1;
                }
            }
        }
        let merged = Diagnostics::merge_in_order(parts);
        prop_assert_eq!(merged.counts(), one.counts());
        prop_assert_eq!(merged.by_severity(), one.by_severity());
        prop_assert_eq!(merged.into_sorted(), one.into_sorted());
    }
}

#[test]
fn a_part_renumbered_names_the_connections_of_the_run() {
    let mut part = Diagnostics::placed_part();
    part.place_at(Place {
        packet: Place::END,
        stage: Stage::Connection,
        connection: 1,
    });
    raise(&mut part, 1, 7, Raised::Gap);
    part.renumber(|local| local * 10 + 3);
    assert_eq!(part.places.as_ref().unwrap().listed[0].connection, 13);
    assert_eq!(part.into_sorted()[0].connection, Some(13));
}

#[test]
fn the_end_lists_connections_in_their_order_whichever_part_closed_them() {
    let mut parts = vec![Diagnostics::placed_part(), Diagnostics::placed_part()];
    for (part, connection) in [(0, 4), (1, 2), (0, 9), (1, 5)] {
        let diags: &mut Diagnostics = &mut parts[part];
        diags.place_at(Place {
            packet: Place::END,
            stage: Stage::Connection,
            connection,
        });
        raise(diags, connection, 100, Raised::Gap);
    }
    let order: Vec<Option<u64>> = Diagnostics::merge_in_order(parts)
        .into_sorted()
        .iter()
        .map(|d| d.connection)
        .collect();
    assert_eq!(order, [Some(2), Some(4), Some(5), Some(9)]);
}

#[test]
fn a_part_lists_nothing_that_a_thousand_found_elsewhere_come_before() {
    let found = Found::new(2);
    let mut early = Diagnostics::placed_part_sharing(Arc::clone(&found), 0);
    let mut late = Diagnostics::placed_part_sharing(Arc::clone(&found), 1);
    let at = |diags: &mut Diagnostics, packet| {
        diags.place_at(Place {
            packet,
            stage: Stage::Connection,
            connection: 0,
        });
    };
    for packet in 1..=MAX_LISTED_PER_KIND {
        at(&mut early, packet);
        raise(&mut early, 0, packet, Raised::Gap);
    }
    early.publish_found(MAX_LISTED_PER_KIND + 1);
    // before the thousandth: still listed; after it: counted only
    at(&mut late, 500);
    raise(&mut late, 1, 500, Raised::Gap);
    at(&mut late, 2000);
    raise(&mut late, 1, 2000, Raised::Gap);
    assert_eq!(late.items.len(), 1);
    assert_eq!(late.counts.get(&Kind::TcpGap), Some(&2));
    let merged = Diagnostics::merge_in_order(vec![early, late]);
    assert_eq!(merged.counts.get(&Kind::TcpGap), Some(&1002));
    let frames: Vec<Option<u64>> = merged.into_sorted().iter().map(|d| d.frame).collect();
    assert_eq!(frames.len(), 1001, "the thousand, then diagnostics_limited");
    assert!(frames.contains(&Some(500)) && !frames.contains(&Some(1000)));
}
