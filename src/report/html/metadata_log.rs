//! The HTML page's metadata-log part, shown with `--metadata-log`: what the files hold,
//! how the committed blocks stand against the capture, and a table of them, those not
//! delivered first.

use std::fmt::Write as _;

use super::esc;
use crate::analysis::committed::Delivery;
use crate::report::model::Report;

/// Rows of the table; past them the page says how many more.
pub const MAX_ROWS: usize = 100;

pub fn html(page: &mut String, report: &Report) {
    let Some(log) = &report.metadata_log else {
        return;
    };
    page.push_str("<h2>Metadata log</h2>\n");
    let offsets = match (log.first_offset, log.last_offset) {
        (Some(first), Some(last)) => format!(", offsets {first} to {last}"),
        _ => String::new(),
    };
    let times = match (&log.first_timestamp, &log.last_timestamp) {
        (Some(first), Some(last)) => format!(" from {first} to {last}"),
        _ => String::new(),
    };
    let _ = writeln!(
        page,
        "<p id=\"log-files\">{} file(s){}{}; {} committed block(s); records: {}.</p>",
        log.files.len(),
        esc(&offsets),
        esc(&times),
        log.blocks.len(),
        esc(&log
            .records_by_type
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", "))
    );
    if let Some(c) = &log.comparison {
        let _ = writeln!(
            page,
            "<p id=\"log-comparison\">Against the capture: {} block(s) delivered on the wire, {} matched by their record, {} not committed, {} mismatched, {} outside the log's time; of those committed, {} not delivered, {} outside the time the capture watched their broker.</p>",
            c.wire_blocks, c.matched, c.not_committed, c.mismatched, c.outside_log, c.not_delivered, c.outside_capture
        );
    }
    if log.blocks.is_empty() {
        return;
    }
    let rows = log.blocks_to_list(MAX_ROWS);
    page.push_str("<div class=\"wide\"><table id=\"committed-blocks\">\n<tr><th>offset</th><th>broker</th><th>broker epoch</th><th>ids</th><th>time</th><th>leader epoch</th><th>delivery</th></tr>\n");
    for b in &rows {
        let ids = b.ids();
        let delivery = match b.delivery {
            Delivery::Delivered { frame } => format!("delivered (frame {frame})"),
            other => other.name().words(),
        };
        let class = match b.delivery {
            Delivery::NotDelivered => " class=\"bad\"",
            _ => "",
        };
        let _ = writeln!(
            page,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            b.offset,
            b.broker_id,
            b.broker_epoch,
            esc(&ids),
            esc(&b.timestamp),
            b.leader_epoch,
            esc(&delivery)
        );
    }
    page.push_str("</table></div>\n");
    if log.blocks.len() > rows.len() {
        let _ = writeln!(
            page,
            "<p id=\"committed-more\">and {} more (the JSON report lists every one).</p>",
            log.blocks.len() - rows.len()
        );
    }
}
