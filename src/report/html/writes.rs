//! The HTML page's writes part, when the capture has Produce requests: what the batches
//! came to, then a table of the batches a post-mortem looks for (never appended, refused
//! for their sequence or epoch), by topic, partition and client: which partitions each
//! producer's lost or refused writes went to.

use std::fmt::Write as _;

use super::esc;
use crate::analysis::writes::WriteOutcome;
use crate::report::model::{Report, WriteBatch};
use crate::report::text::writes::totals;

/// Rows of the table; past them the page says how many more.
pub const MAX_ROWS: usize = 50;

pub fn html(page: &mut String, report: &Report) {
    let Some(writes) = &report.writes else {
        return;
    };
    page.push_str("<h2>Writes (Produce)</h2>\n");
    let _ = writeln!(page, "<p id=\"write-counts\">{}</p>", esc(&totals(writes)));
    if writes.of_interest.is_empty() {
        page.push_str("<p>No batch never appended, none refused for its sequence or epoch.</p>\n");
        return;
    }
    if writes.not_appended > 0 {
        let _ = writeln!(
            page,
            "<p>{} acknowledged with success and never appended: another batch with the same producer id, epoch and sequences holds each one's offset (write_not_appended).</p>",
            match writes.not_appended {
                1 => "1 batch was".to_owned(),
                n => format!("{n} batches were"),
            }
        );
    }
    let mut rows: Vec<&WriteBatch> = writes.of_interest.iter().collect();
    rows.sort_by(|a, b| {
        (&a.topic, a.partition, &a.client, a.request_frame).cmp(&(
            &b.topic,
            b.partition,
            &b.client,
            b.request_frame,
        ))
    });
    page.push_str("<table id=\"writes\">\n<tr><th>topic</th><th>partition</th><th>client</th><th>client_id</th><th>producer id</th><th>epoch</th><th>sequences</th><th>what became of it</th><th>frames</th></tr>\n");
    for b in rows.iter().take(MAX_ROWS) {
        let _ = writeln!(page, "{}", row(b));
    }
    page.push_str("</table>\n");
    let more =
        writes.of_interest.len().saturating_sub(MAX_ROWS) as u64 + writes.of_interest_not_listed;
    if more > 0 {
        let _ = writeln!(
            page,
            "<p>and {more} more (--format csv-writes lists every batch)</p>"
        );
    }
}

fn row(b: &WriteBatch) -> String {
    let text = |v: Option<String>| esc(&v.unwrap_or_default());
    let sequences = match (b.first_sequence, b.last_sequence) {
        (Some(first), Some(last)) if first == last => first.to_string(),
        (Some(first), Some(last)) => format!("{first}-{last}"),
        _ => String::new(),
    };
    let what = match (b.outcome, &b.error) {
        (WriteOutcome::NotAppended, _) => format!(
            "acknowledged at offset {}, never appended",
            b.offset.map_or("?".to_owned(), |o| o.to_string())
        ),
        (_, Some(error)) => format!("refused {error}"),
        (outcome, None) => outcome.as_str().to_owned(),
    };
    let frames = match b.response_frame {
        Some(response) => format!("{}, {response}", b.request_frame),
        None => b.request_frame.to_string(),
    };
    let class = match b.outcome {
        WriteOutcome::NotAppended => " class=\"bad\"",
        _ => "",
    };
    format!(
        "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{sequences}</td><td>{}</td><td>{frames}</td></tr>",
        text(b.topic.clone()),
        b.partition,
        esc(&b.client),
        text(b.client_id.clone()),
        text(b.producer_id.map(|v| v.to_string())),
        text(b.producer_epoch.map(|v| v.to_string())),
        esc(&what),
    )
}
