//! The HTML page's producers part: what InitProducerId granted (counts, and where the ids
//! lie), then the producers worth a look first ([`FlaggedProducers`]); each row links to
//! the block that holds its id on the timeline.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::esc;
use crate::analysis::kept_id::KeptId;
use crate::report::flagged::{FlaggedProducers, Row, MAX_FLAGGED};
use crate::report::model::{ProducerIdCounts, Report};

/// Rows of the table; past them the page says how many more.
pub const MAX_ROWS: usize = 50;

/// The producers part, when the capture has InitProducerId exchanges; `drawn`:
/// whether the timeline has a bar of its own for the block of a response frame, which
/// a row links to. Returns the blocks the rows link to, which the timeline gives an id.
pub fn html(
    flagged: &FlaggedProducers,
    page: &mut String,
    report: &Report,
    drawn: impl Fn(u64) -> bool,
) -> BTreeSet<u64> {
    let mut targets = BTreeSet::new();
    let s = &report.producer_ids.summary;
    let end_txn = report.producer_ids.end_txn.as_ref();
    if s.exchanges == 0 && end_txn.is_none() {
        return targets;
    }
    let apis = match end_txn {
        Some(_) => "InitProducerId and EndTxn",
        None => "InitProducerId",
    };
    let _ = writeln!(page, "<h2>Producers ({apis})</h2>");
    let _ = writeln!(
        page,
        "<p id=\"producer-counts\">{}</p>",
        esc(&counts("InitProducerId", s))
    );
    if s.granted > 0 {
        let _ = writeln!(page, "<p id=\"placements\">{}</p>", esc(&placements(s)));
    }
    if let Some(e) = end_txn {
        let _ = writeln!(
            page,
            "<p id=\"end-txn-counts\">{}</p>",
            esc(&counts("EndTxn", e))
        );
        if e.granted > 0 {
            let _ = writeln!(
                page,
                "<p id=\"end-txn-placements\">{}</p>",
                esc(&placements(e))
            );
        }
    }
    let (rows, not_kept) = flagged.rows(&report.producer_id_blocks.findings);
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

fn row_html(row: &Row<'_>, linked: bool, listed: &BTreeSet<u64>) -> String {
    let g = row.grant;
    let text = |v: &Option<KeptId>| v.as_ref().map_or("-".to_owned(), |v| esc(&v.plain()));
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

/// `9 InitProducerId exchanges: 9 complete, 0 unanswered, 0 response unknown; 9 granted, 0 errors.`
fn counts(api: &str, s: &ProducerIdCounts) -> String {
    format!(
        "{} {api} exchanges: {} complete, {} unanswered, {} response unknown; {} granted an id, {} answered with an error.",
        s.exchanges, s.complete, s.unanswered, s.response_unknown, s.granted, s.errors
    )
}

/// Where the granted ids lie, and how many were granted twice.
fn placements(s: &ProducerIdCounts) -> String {
    let others = s.other_placements();
    // `0 in a block` is said only when no other placement is
    let in_block = (s.in_block > 0 || others.is_empty())
        .then(|| format!("{} in a block of the capture", s.in_block));
    let mut parts: Vec<String> = in_block.into_iter().collect();
    parts.extend(others.into_iter().map(|(n, words)| format!("{n} {words}")));
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
