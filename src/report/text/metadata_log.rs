//! The text report's "Metadata log" part, shown with `--metadata-log`: what the files
//! hold, how their committed blocks stand against the capture, and the blocks in trouble
//! first (not delivered), then the others, a few dozen lines at most.

use std::io::{self, Write};

use super::{counted, heading, RED};
use crate::analysis::committed::{Delivery, DeliveryName};
use crate::report::model::{CommittedBlock, MetadataLog, Report};

/// Committed blocks listed; the JSON report lists every one.
const MAX_LISTED: usize = 40;

pub(super) fn write(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let Some(log) = &report.metadata_log else {
        return Ok(());
    };
    heading(w, "Metadata log")?;
    writeln!(w, "  {}", coverage(log))?;
    if !log.records_by_type.is_empty() {
        let types: Vec<String> = log
            .records_by_type
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        writeln!(w, "  records: {}", types.join(", "))?;
    }
    if let Some(c) = &log.comparison {
        writeln!(
            w,
            "  against the capture: {} delivered on the wire, {} matched by their record, {} not committed, {} mismatched, {} outside the log's time",
            c.wire_blocks, c.matched, c.not_committed, c.mismatched, c.outside_log
        )?;
        writeln!(
            w,
            "  of the blocks committed: {} not delivered, {} outside the time the capture watched their broker",
            c.not_delivered, c.outside_capture
        )?;
    }
    let listed = log.blocks_to_list(MAX_LISTED);
    if !listed.is_empty() {
        let columns = match log.comparison {
            Some(_) => "offset, broker and epoch, ids, time, delivery",
            None => "offset, broker and epoch, ids, time",
        };
        writeln!(w, "  committed blocks ({columns}):")?;
    }
    for b in &listed {
        let line = block_line(b, log.comparison.is_some());
        match b.delivery {
            Delivery::NotDelivered => writeln!(w, "    {RED}{line}{RED:#}")?,
            _ => writeln!(w, "    {line}")?,
        }
    }
    if log.blocks.len() > listed.len() {
        writeln!(
            w,
            "    and {} more (the JSON report lists every one)",
            log.blocks.len() - listed.len()
        )?;
    }
    Ok(())
}

/// `3 files, offsets 0 to 310 from 2026-... to 2026-..., 42 committed blocks`.
fn coverage(log: &MetadataLog) -> String {
    let span = match (log.first_offset, log.last_offset) {
        (Some(first), Some(last)) => format!(", offsets {first} to {last}"),
        _ => String::new(),
    };
    let times = match (&log.first_timestamp, &log.last_timestamp) {
        (Some(first), Some(last)) => format!(" from {first} to {last}"),
        _ => String::new(),
    };
    let incomplete = log.files.iter().filter(|f| !f.complete).count() as u64;
    let stopped = match incomplete {
        0 => String::new(),
        n => format!(
            " ({} read only in part: see the diagnostics)",
            counted(n, "file")
        ),
    };
    format!(
        "{}{span}{times}{stopped}; {}",
        counted(log.files.len() as u64, "file"),
        counted(log.blocks.len() as u64, "committed block")
    )
}

fn block_line(b: &CommittedBlock, compared: bool) -> String {
    let ids = b.ids();
    let delivery = match b.delivery {
        Delivery::Delivered { frame } => format!("delivered in frame {frame}"),
        Delivery::NotDelivered => "NOT DELIVERED".to_owned(),
        Delivery::OutsideCapture if compared => "not in the capture's time".to_owned(),
        Delivery::OutsideCapture => String::new(),
        Delivery::Snapshot => DeliveryName::Snapshot.as_str().to_owned(),
    };
    let line = format!(
        "{:>8}  broker {} epoch {}  {ids}  {}  {delivery}",
        b.offset, b.broker_id, b.broker_epoch, b.timestamp
    );
    line.trim_end().to_owned()
}
