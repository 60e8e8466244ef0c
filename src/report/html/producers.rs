//! The HTML page's producers part: what InitProducerId granted (counts, and where the ids
//! lie), then the producers worth a look first: both holders of an id and epoch granted
//! twice, the producers holding ids of a block overlap, and ids outside their broker's
//! blocks; each row links to the block that holds its id on the timeline.
//!
//! Bounded: what is worth a look at once (a duplicate, an id outside the blocks) is kept
//! as it comes, up to [`MAX_FLAGGED`]; the first holder of each id and epoch is kept, up
//! to [`MAX_HELD`] (the lowest ids forgotten first), to find at the end the earlier holder
//! of a duplicate and the holders of an overlap's ids, which the findings name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::esc;
use crate::analysis::PlacementName;
use crate::diag::{Fact, Kind};
use crate::report::model::{BlockRef, PidFinding, ProducerIdCounts, ProducerIdEntry, Report};

/// Rows of the table; past them the page says how many more.
pub const MAX_ROWS: usize = 50;
/// Grants worth a look kept as they come.
const MAX_FLAGGED: usize = 2 * MAX_ROWS;
/// First holders of an id and epoch kept, to be found again at the end.
const MAX_HELD: usize = 1 << 14;

/// A granted producer id, as a row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    producer_id: i64,
    epoch: i16,
    client: String,
    client_id: Option<String>,
    transactional_id: Option<String>,
    broker: Option<i32>,
    request_frame: u64,
    response_frame: u64,
    placement: PlacementName,
    block: Option<BlockRef>,
    duplicate_of: Option<u64>,
}

impl Grant {
    /// The grant of an exchange; `None` when it granted no id.
    pub fn of(e: &ProducerIdEntry) -> Option<Self> {
        Some(Self {
            producer_id: e.producer_id?,
            epoch: e.producer_epoch?,
            client: e.client.clone(),
            client_id: e.client_id.clone().flatten(),
            transactional_id: e.transactional_id.clone().flatten(),
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
}

/// The grants the table may list, gathered as exchanges complete.
#[derive(Debug, Default)]
pub struct Producers {
    flagged: Vec<Grant>,
    /// Flagged grants past [`MAX_FLAGGED`].
    flagged_more: u64,
    /// The first holder of each id and epoch.
    held: BTreeMap<(i64, i16), Grant>,
}

/// A row of the table and why it is there.
struct Row<'a> {
    grant: &'a Grant,
    why: String,
    /// The response frame of the other holder of its id, which the row links to.
    other: Option<u64>,
}

impl Producers {
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

    /// The rows worth a look, in order (duplicates with their earlier holders, then the
    /// holders of overlapping ids, then ids outside the blocks), each once; and how many
    /// more there are that were not kept.
    fn rows<'a>(&'a self, findings: &[PidFinding]) -> (Vec<Row<'a>>, u64) {
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
            let (Some(start), Some(end)) = (int(f, "ids_start"), int(f, "ids_end")) else {
                continue;
            };
            let frames: Vec<String> = f.frames.iter().map(u64::to_string).collect();
            let why = format!(
                "holds an id of an overlap (blocks of frames {})",
                frames.join(" and ")
            );
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
            let affected = int(f, "affected_producers").unwrap_or(0);
            not_kept += u64::try_from(affected)
                .unwrap_or(0)
                .saturating_sub(holders.len() as u64);
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

    /// The producers part, when the capture has InitProducerId exchanges; `drawn`:
    /// whether the timeline has a bar of its own for the block of a response frame, which
    /// a row links to. Returns the blocks the rows link to, which the timeline gives an id.
    pub fn html(
        &self,
        page: &mut String,
        report: &Report,
        drawn: impl Fn(u64) -> bool,
    ) -> BTreeSet<u64> {
        let mut targets = BTreeSet::new();
        let s = &report.producer_ids.summary;
        if s.exchanges == 0 {
            return targets;
        }
        page.push_str("<h2>Producers (InitProducerId)</h2>\n");
        let _ = writeln!(page, "<p id=\"producer-counts\">{}</p>", esc(&counts(s)));
        if s.granted > 0 {
            let _ = writeln!(page, "<p id=\"placements\">{}</p>", esc(&placements(s)));
        }
        let (rows, not_kept) = self.rows(&report.producer_id_blocks.findings);
        if rows.is_empty() && not_kept == 0 {
            page.push_str("<p>No producer worth a look: no id and epoch granted twice, none in an overlap, none outside its broker's blocks.</p>\n");
            return targets;
        }
        let listed: BTreeSet<u64> = rows
            .iter()
            .take(MAX_ROWS)
            .map(|r| r.grant.response_frame)
            .collect();
        page.push_str("<div class=\"wide\"><table id=\"producers\">\n<tr><th>producer id</th><th>epoch</th><th>client</th><th>client id</th><th>transactional id</th><th>broker</th><th>block</th><th>frames</th><th>why</th></tr>\n");
        for row in rows.iter().take(MAX_ROWS) {
            let linked = row.grant.block.filter(|b| drawn(b.response_frame));
            targets.extend(linked.map(|b| b.response_frame));
            page.push_str(&row_html(row, linked.is_some(), &listed));
        }
        page.push_str("</table></div>\n");
        let more = rows.len().saturating_sub(MAX_ROWS) as u64 + not_kept;
        if more > 0 {
            let _ = writeln!(
                page,
                "<p id=\"producers-more\">and at least {more} more worth a look (past {MAX_FLAGGED} flagged grants, each counts once without the earlier holder it names; --format csv-producers lists every grant, a duplicate with its duplicate_of_frame).</p>"
            );
        }
        targets
    }
}

fn row_html(row: &Row<'_>, linked: bool, listed: &BTreeSet<u64>) -> String {
    let g = row.grant;
    let text = |v: &Option<String>| v.as_deref().map_or("-".to_owned(), esc);
    let block = match g.block {
        Some(b) if linked => format!(
            "<a href=\"#block-{0}\">{1}..{2} (frame {0})</a>",
            b.response_frame, b.start, b.end
        ),
        Some(b) => format!("{}..{} (frame {})", b.start, b.end, b.response_frame),
        None => g.placement.words(),
    };
    let why = match row.other {
        Some(other) if listed.contains(&other) => {
            format!("<a href=\"#producer-{other}\">{}</a>", esc(&row.why))
        }
        _ => esc(&row.why),
    };
    format!(
        "<tr class=\"producer\" id=\"producer-{}\"><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"t\">{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"t\">{block}</td><td class=\"t\">{} and {}</td><td>{why}</td></tr>\n",
        g.response_frame,
        g.producer_id,
        g.epoch,
        esc(&g.client),
        text(&g.client_id),
        text(&g.transactional_id),
        g.broker.map_or("?".to_owned(), |b| b.to_string()),
        g.request_frame,
        g.response_frame,
    )
}

/// An overlap whose finding names the producers holding its ids.
fn overlap_with_holders(f: &PidFinding) -> bool {
    f.kind == Kind::PidBlockOverlap.as_str() && f.facts.contains_key("affected_producers")
}

fn int(f: &PidFinding, name: &str) -> Option<i64> {
    match f.facts.get(name)? {
        Fact::Int(v) => Some(*v),
        Fact::Uint(v) => i64::try_from(*v).ok(),
        _ => None,
    }
}

/// `9 InitProducerId exchanges: 9 complete, 0 unanswered, 0 response unknown; 9 granted, 0 errors.`
fn counts(s: &ProducerIdCounts) -> String {
    format!(
        "{} InitProducerId exchanges: {} complete, {} unanswered, {} response unknown; {} granted an id, {} answered with an error.",
        s.exchanges, s.complete, s.unanswered, s.response_unknown, s.granted, s.errors
    )
}

/// Where the granted ids lie, and how many were granted twice.
fn placements(s: &ProducerIdCounts) -> String {
    let mut parts = vec![format!("{} in a block of the capture", s.in_block)];
    parts.extend(
        s.other_placements()
            .into_iter()
            .map(|(n, words)| format!("{n} {words}")),
    );
    let mut line = format!(
        "Ids granted: {}; {} granted twice (an id and epoch another producer holds).",
        parts.join(", "),
        s.duplicates
    );
    if s.grants_forgotten > 0 {
        line += &format!(
            " {} granted ids were forgotten to bound memory: duplicates among them are not found.",
            s.grants_forgotten
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
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

    fn overlap(start: i64, end: i64, affected: u64) -> PidFinding {
        PidFinding {
            severity: "error",
            kind: "pid_block_overlap",
            broker_id: Some(1),
            connection: None,
            frames: vec![19, 59],
            timestamp: String::new(),
            unix_time: UnixTime(Timestamp::default()),
            facts: [
                ("ids_start", Fact::Int(start)),
                ("ids_end", Fact::Int(end)),
                ("affected_producers", Fact::Uint(affected)),
            ]
            .into(),
            message: String::new(),
        }
    }

    fn frames(rows: &[Row<'_>]) -> Vec<u64> {
        rows.iter().map(|r| r.grant.response_frame).collect()
    }

    #[test]
    fn duplicates_with_their_earlier_holder_first_then_holders_of_an_overlap() {
        let mut p = Producers::default();
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
        let mut p = Producers::default();
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
}
