//! The producers worth a look, gathered for the text and the HTML page alike: both
//! holders of an id and epoch granted twice, the producers holding ids of a block overlap,
//! and ids outside their broker's blocks, each with its client, `client_id` and
//! transactional id, which the findings alone do not all carry.
//!
//! Bounded: what is worth a look at once (a duplicate, an id outside the blocks) is kept
//! as it comes, up to [`MAX_FLAGGED`]; the first holder of each id and epoch is kept, up
//! to [`MAX_HELD`] (the lowest ids forgotten first), to find at the end the earlier holder
//! of a duplicate and the holders of an overlap's ids, which the findings name.

use std::collections::{BTreeMap, BTreeSet};

use crate::analysis::kept_id::KeptId;
use crate::analysis::{Affected, Detail, PlacementName};
use crate::diag::Kind;
use crate::report::model::{BlockRef, PidFinding, ProducerIdEntry};

/// Grants worth a look kept as they come.
pub const MAX_FLAGGED: usize = 100;
/// First holders of an id and epoch kept, to be found again at the end.
const MAX_HELD: usize = 1 << 14;

/// A granted producer id, as a row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    pub producer_id: i64,
    pub epoch: i16,
    pub client: String,
    /// The names its request gave, kept to a few hundred bytes (`analysis::kept_id`):
    /// up to [`MAX_HELD`] grants are kept, and a request may name itself with a
    /// mebibyte.
    pub client_id: Option<KeptId>,
    pub transactional_id: Option<KeptId>,
    pub broker: Option<i32>,
    pub request_frame: u64,
    pub response_frame: u64,
    pub placement: PlacementName,
    pub block: Option<BlockRef>,
    pub duplicate_of: Option<u64>,
}

impl Grant {
    /// The grant of an exchange; `None` when it granted no id.
    pub fn of(e: &ProducerIdEntry) -> Option<Self> {
        Some(Self {
            producer_id: e.producer_id?,
            epoch: e.producer_epoch?,
            client: e.client.clone(),
            client_id: kept(e.client_id.as_ref()),
            transactional_id: kept(e.transactional_id.as_ref()),
            broker: e.broker_id,
            request_frame: e.request_frame,
            response_frame: e.response_frame?,
            placement: e.placement?,
            block: e.block,
            duplicate_of: e.duplicate_of_frame,
        })
    }

    fn flagged(&self) -> bool {
        self.duplicate_of.is_some() || self.faulty()
    }

    /// Placed where Kafka's producer-id manager cannot have drawn it.
    fn faulty(&self) -> bool {
        self.placement.is_fault()
    }

    /// Who got it: `127.0.0.1:40178 client_id "app" transactional id "t1"`, each name
    /// only when the request gave one.
    pub fn who(&self) -> String {
        let mut who = self.client.clone();
        if let Some(id) = &self.client_id {
            who += &format!(" client_id {}", id.quoted());
        }
        if let Some(id) = &self.transactional_id {
            who += &format!(" transactional id {}", id.quoted());
        }
        who
    }
}

/// A name an entry gives, as kept.
fn kept(name: Option<&Option<String>>) -> Option<KeptId> {
    name.and_then(Option::as_deref).map(KeptId::new)
}

/// The grants the table may list, gathered as exchanges complete.
#[derive(Debug, Default)]
pub struct FlaggedProducers {
    flagged: Vec<Grant>,
    /// Flagged grants past [`MAX_FLAGGED`].
    flagged_more: u64,
    /// The first holder of each id and epoch.
    held: BTreeMap<(i64, i16), Grant>,
}

/// A row of the table and why it is there.
pub struct Row<'a> {
    pub grant: &'a Grant,
    pub why: String,
    /// The response frame of the other holder of its id, which the row links to.
    pub other: Option<u64>,
}

impl FlaggedProducers {
    pub fn add(&mut self, grant: Grant) {
        if grant.flagged() {
            if self.flagged.len() < MAX_FLAGGED {
                self.flagged.push(grant.clone());
            } else {
                self.flagged_more += 1;
            }
        }
        if grant.duplicate_of.is_none() {
            self.held
                .entry((grant.producer_id, grant.epoch))
                .or_insert(grant);
            if self.held.len() > MAX_HELD {
                self.held.pop_first();
            }
        }
    }

    /// The kept holders of ids in `start..=end`, each once, in response-frame order.
    pub fn holders(&self, start: i64, end: i64) -> Vec<&Grant> {
        let mut holders: Vec<&Grant> = self
            .held
            .range((start, i16::MIN)..=(end, i16::MAX))
            .map(|(_, g)| g)
            .chain(
                self.flagged
                    .iter()
                    .filter(|g| (start..=end).contains(&g.producer_id)),
            )
            .collect();
        holders.sort_by_key(|g| g.response_frame);
        holders.dedup_by_key(|g| g.response_frame);
        holders
    }

    /// The kept grant of `producer_id` answered in `response_frame`.
    pub fn grant(&self, producer_id: i64, response_frame: u64) -> Option<&Grant> {
        self.holders(producer_id, producer_id)
            .into_iter()
            .find(|g| g.response_frame == response_frame)
    }

    /// The rows worth a look, in order (duplicates with their earlier holders, then the
    /// holders of overlapping ids, then ids outside the blocks), each once; and how many
    /// more there are that were not kept.
    pub fn rows<'a>(&'a self, findings: &[PidFinding]) -> (Vec<Row<'a>>, u64) {
        let mut rows: Vec<Row<'a>> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut push = |row: Row<'a>, rows: &mut Vec<Row<'a>>| {
            if seen.insert(row.grant.response_frame) {
                rows.push(row);
            }
        };
        let mut not_kept = self.flagged_more;
        for dup in self.flagged.iter().filter(|g| g.duplicate_of.is_some()) {
            let earlier = self
                .held
                .get(&(dup.producer_id, dup.epoch))
                .filter(|h| Some(h.response_frame) == dup.duplicate_of);
            match earlier {
                Some(grant) => {
                    let why = format!("granted again in frame {}", dup.response_frame);
                    let other = Some(dup.response_frame);
                    push(Row { grant, why, other }, &mut rows);
                }
                None => not_kept += 1,
            }
            let of = dup.duplicate_of.unwrap_or_default();
            let why = format!("duplicate of frame {of}");
            let other = dup.duplicate_of;
            push(
                Row {
                    grant: dup,
                    why,
                    other,
                },
                &mut rows,
            );
        }
        for f in findings.iter().filter(|f| overlap_with_holders(f)) {
            let Some(ids) = f.ids else {
                continue;
            };
            let frames: Vec<String> = f.frames.iter().map(u64::to_string).collect();
            let why = format!(
                "holds an id of an overlap (blocks of frames {})",
                frames.join(" and ")
            );
            let holders = self.holders(ids.start, ids.end);
            let affected = affected(f).map_or(0, |a| a.producers);
            not_kept += affected.saturating_sub(holders.len() as u64);
            for grant in holders {
                let why = why.clone();
                push(
                    Row {
                        grant,
                        why,
                        other: None,
                    },
                    &mut rows,
                );
            }
        }
        for grant in self.flagged.iter().filter(|g| g.faulty()) {
            let why = grant.placement.words();
            push(
                Row {
                    grant,
                    why,
                    other: None,
                },
                &mut rows,
            );
        }
        (rows, not_kept)
    }
}

/// An overlap whose finding names the producers holding its ids.
fn overlap_with_holders(f: &PidFinding) -> bool {
    f.kind == Kind::PidBlockOverlap && affected(f).is_some()
}

/// The producers holding ids of an overlap, as its finding names them.
pub fn affected(f: &PidFinding) -> Option<&Affected> {
    match &f.detail {
        Some(Detail::Holders(affected)) => Some(affected),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Hosts;
    use crate::diag::{IdSpan, Severity};
    use crate::report::model::UnixTime;
    use crate::timestamp::Timestamp;

    fn grant(producer_id: i64, response_frame: u64, duplicate_of: Option<u64>) -> Grant {
        Grant {
            producer_id,
            epoch: 0,
            client: format!("10.0.0.1:{}", 40000 + response_frame),
            client_id: None,
            transactional_id: None,
            broker: Some(1),
            request_frame: response_frame - 1,
            response_frame,
            placement: PlacementName::InBlock,
            block: None,
            duplicate_of,
        }
    }

    fn host() -> Hosts {
        Hosts {
            listed: vec!["10.0.0.1".to_owned()],
            count: 1,
            at_least: false,
        }
    }

    fn overlap(start: i64, end: i64, affected: u64) -> PidFinding {
        PidFinding {
            severity: Severity::Error,
            kind: Kind::PidBlockOverlap,
            broker_id: Some(1),
            connection: None,
            frames: vec![19, 59],
            timestamp: String::new(),
            unix_time: UnixTime(Timestamp::default()),
            facts: BTreeMap::new(),
            message: String::new(),
            ids: Some(IdSpan { start, end }),
            fault: None,
            detail: Some(Detail::Holders(Affected {
                producers: affected,
                producers_at_least: false,
                hosts: host(),
                producer_id: start,
                holders_of_id: 1,
                holders_of_id_at_least: false,
                id_hosts: host(),
            })),
        }
    }

    fn frames(rows: &[Row<'_>]) -> Vec<u64> {
        rows.iter().map(|r| r.grant.response_frame).collect()
    }

    #[test]
    fn duplicates_with_their_earlier_holder_first_then_holders_of_an_overlap() {
        let mut p = FlaggedProducers::default();
        for g in [
            grant(1998, 50, None),
            grant(1999, 57, None),
            grant(2500, 60, None),
            grant(1999, 70, Some(57)),
        ] {
            p.add(g);
        }
        let (rows, not_kept) = p.rows(&[overlap(1998, 1999, 3)]);
        assert_eq!(frames(&rows), [57, 70, 50]);
        assert_eq!(rows[0].why, "granted again in frame 70");
        assert_eq!(rows[1].why, "duplicate of frame 57");
        assert!(rows[2].why.starts_with("holds an id of an overlap"));
        assert_eq!(not_kept, 0);
        // the finding counts a holder the page did not keep
        let (_, not_kept) = p.rows(&[overlap(1998, 1999, 5)]);
        assert_eq!(not_kept, 2);
    }

    #[test]
    fn memory_is_bounded_and_what_is_forgotten_is_counted() {
        let mut p = FlaggedProducers::default();
        for i in 0..(MAX_HELD as u64 * 2) {
            p.add(grant(i as i64, 10 + i, None));
        }
        assert_eq!(p.held.len(), MAX_HELD);
        // duplicates of forgotten holders: kept up to a bound, the rest counted
        for i in 0..300u64 {
            p.add(grant(i as i64, 1_000_000 + i, Some(10 + i)));
        }
        assert_eq!(p.flagged.len(), MAX_FLAGGED);
        let (rows, not_kept) = p.rows(&[]);
        assert_eq!(rows.len(), MAX_FLAGGED);
        // 200 past the bound, and the earlier holder of each kept duplicate
        assert_eq!(not_kept, 200 + MAX_FLAGGED as u64);
    }

    #[test]
    fn a_producer_is_named_by_address_and_port_then_the_names_its_request_gave() {
        let mut g = grant(1999, 57, None);
        assert_eq!(g.who(), "10.0.0.1:40057");
        g.client_id = Some(KeptId::new("app \"one\""));
        g.transactional_id = Some(KeptId::new("tx-1"));
        assert_eq!(
            g.who(),
            r#"10.0.0.1:40057 client_id "app \"one\"" transactional id "tx-1""#
        );
    }

    /// The names an entry gives are kept to a few hundred bytes, said cut when they
    /// are: thousands of grants are held to the end, each request's names up to a
    /// mebibyte.
    #[test]
    fn a_long_name_is_held_cut_and_named_cut() {
        use crate::analysis::kept_id::MAX_KEPT_LEN;
        let long = "n".repeat(1 << 20);
        let mut g = grant(1999, 57, None);
        g.client_id = kept(Some(&Some(long.clone())));
        g.transactional_id = kept(Some(&Some(format!("tx-{long}"))));
        let (client_id, txn) = (
            g.client_id.as_ref().unwrap(),
            g.transactional_id.as_ref().unwrap(),
        );
        assert!(client_id.heap_bytes() <= MAX_KEPT_LEN);
        assert!(txn.heap_bytes() <= MAX_KEPT_LEN);
        let kept = &long[..MAX_KEPT_LEN];
        assert_eq!(
            g.who(),
            format!(
                "10.0.0.1:40057 client_id \"{kept}…\" cut from {} bytes transactional id \"tx-{}…\" cut from {} bytes",
                long.len(),
                &long[..MAX_KEPT_LEN - 3],
                long.len() + 3
            )
        );
    }

    #[test]
    fn holders_are_listed_once_in_frame_order_and_a_grant_is_found_by_its_frame() {
        let mut p = FlaggedProducers::default();
        let mut outside = grant(2000, 40, None);
        outside.placement = PlacementName::OutsideBlocks;
        for g in [grant(1999, 57, None), outside, grant(1999, 70, Some(57))] {
            p.add(g);
        }
        let frames: Vec<u64> = p
            .holders(1999, 2000)
            .iter()
            .map(|g| g.response_frame)
            .collect();
        assert_eq!(
            frames,
            [40, 57, 70],
            "the faulty grant, held and flagged, once"
        );
        assert_eq!(p.grant(1999, 70).map(|g| g.duplicate_of), Some(Some(57)));
        assert!(p.grant(1999, 40).is_none());
    }
}
