//! The text report's "Writes" part, shown when the capture has Produce requests: what
//! the batches came to in a line or two, then the batches a post-mortem looks for (never
//! appended, refused for their sequence or epoch), a few lines at most, each with its
//! topic and partition, the producer by address, `client_id`, id, epoch and sequences,
//! and its frames. Before them, each producer id written by two producers (the first
//! two), with what each of its connections wrote to which partitions.

use std::io::{self, Write};

use super::{counted, heading, RED};
use crate::analysis::writes::WriteOutcome;
use crate::analysis::writes::{PartitionWrites, ProducerWrites, WriterWrites};
use crate::report::model::{Report, WriteBatch, Writes};

/// Batches of interest listed before the rest are only counted.
const MAX_LISTED: usize = 10;
/// Producer ids written by two producers shown, their writers and each one's partitions.
const MAX_SHARED: usize = 2;
const MAX_WRITERS: usize = 4;
const MAX_PARTITIONS: usize = 4;

pub(super) fn write(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let Some(writes) = &report.writes else {
        return Ok(());
    };
    heading(w, "Writes (Produce)")?;
    writeln!(w, "  {}", totals(writes))?;
    if writes.not_appended > 0 {
        let batches = match writes.not_appended {
            1 => "1 batch".to_owned(),
            n => format!("{n} batches"),
        };
        writeln!(
            w,
            "  {RED}{batches} acknowledged with success and never appended{RED:#} (write_not_appended: another batch with the same producer id, epoch and sequences holds its offset)"
        )?;
    }
    shared(
        w,
        &writes.producers_of_interest,
        writes.producers_of_interest_not_listed,
    )?;
    let listed = writes.of_interest.len() as u64 + writes.of_interest_not_listed;
    for b in writes.of_interest.iter().take(MAX_LISTED) {
        writeln!(w, "  {}", batch_line(b))?;
    }
    let shown = writes.of_interest.len().min(MAX_LISTED) as u64;
    if listed > shown {
        writeln!(
            w,
            "  and {} more (--format csv-writes lists every batch)",
            listed - shown
        )?;
    }
    Ok(())
}

/// The first producer ids written by two producers, a line each, then a line per
/// connection that wrote with it. `listed` is `writes.producers_of_interest`, past whose
/// end `not_listed` more ids of interest were not looked at.
fn shared(w: &mut dyn Write, listed: &[ProducerWrites], not_listed: u64) -> io::Result<()> {
    let shared: Vec<&ProducerWrites> = listed.iter().filter(|p| p.shared).collect();
    for p in shared.iter().take(MAX_SHARED) {
        let grants = match p.grant_frames.as_slice() {
            [] => "no grant of the id followed in the capture".to_owned(),
            frames => {
                let frames: Vec<String> = frames.iter().map(u64::to_string).collect();
                format!("the id granted at frame {}", frames.join(", "))
            }
        };
        writeln!(
            w,
            "  {RED}producer id {} epoch {} written by two producers{RED:#} (write_shared_producer; {grants}):",
            p.producer_id, p.producer_epoch
        )?;
        for writer in p.writers.iter().take(MAX_WRITERS) {
            writeln!(w, "    {}", writer_line(writer))?;
        }
        if p.writers.len() > MAX_WRITERS {
            writeln!(
                w,
                "    and {} more connections",
                p.writers.len() - MAX_WRITERS
            )?;
        }
    }
    let more = shared.len().saturating_sub(MAX_SHARED);
    match (more, not_listed) {
        (0, 0) => {}
        // the ids past the listing's end may be shared too: not said to be none
        (0, n) if !shared.is_empty() => writeln!(
            w,
            "  {n} more producer ids and epochs of interest are not listed; any of them written by two producers is a write_shared_producer finding"
        )?,
        (0, _) => {}
        (m, 0) => writeln!(
            w,
            "  and {m} more producer ids and epochs written by two producers (writes.producers_of_interest in the JSON report)"
        )?,
        (m, _) => writeln!(
            w,
            "  and at least {m} more producer ids and epochs written by two producers (writes.producers_of_interest in the JSON report)"
        )?,
    }
    Ok(())
}

/// `127.0.0.1:45620 client_id "shared-a" to 127.0.0.1:19101 (frames 1399-1750):
/// pidshark-shared 0 sequences 0-3 (3 appended, 1 refused); ...`.
fn writer_line(writer: &WriterWrites) -> String {
    let client_id = writer
        .client_id
        .as_ref()
        .map(|id| format!(" client_id {id:?}"))
        .unwrap_or_default();
    let mut partitions: Vec<String> = writer
        .partitions
        .iter()
        .take(MAX_PARTITIONS)
        .map(partition_text)
        .collect();
    let more = writer.partitions.len().saturating_sub(MAX_PARTITIONS);
    match (more, writer.partitions_more) {
        (0, false) => {}
        (n, false) => partitions.push(format!("and {n} more partitions")),
        (n, true) => partitions.push(format!("and at least {} more partitions", n + 1)),
    }
    format!(
        "{}{client_id} to {} (frames {}-{}): {}",
        writer.client,
        writer.server,
        writer.first_frame,
        writer.last_frame,
        partitions.join("; ")
    )
}

/// `pidshark-shared 0 sequences 0-3 (3 appended, 1 never appended)`.
fn partition_text(p: &PartitionWrites) -> String {
    let counts: Vec<String> = [
        (p.appended, "appended"),
        (p.retries, "retries"),
        (p.not_appended, "never appended"),
        (p.rejected, "refused"),
        (p.other, "other"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    let sequences = match (p.first_sequence, p.last_sequence) {
        (first, last) if first == last => format!("sequence {first}"),
        (first, last) => format!("sequences {first}-{last}"),
    };
    format!(
        "{} {} {sequences} ({})",
        p.topic,
        p.partition,
        counts.join(", ")
    )
}

/// `2049 batches in 2049 Produce requests, 2049 with a producer id: 2006 acknowledged,
/// 43 refused (43 CONCURRENT_TRANSACTIONS); 2006 producer ids and epochs`.
pub(in crate::report) fn totals(s: &Writes) -> String {
    let not_read = match s.requests_not_read {
        0 => String::new(),
        n => format!(" ({n} of them not read whole, see the kafka_ diagnostics)"),
    };
    let mut text = format!(
        "{} in {}{not_read}, {} with a producer id: {} acknowledged",
        batches(s.batches),
        counted(s.requests, "Produce request"),
        s.idempotent_batches,
        s.acknowledged
    );
    if s.rejected > 0 {
        let errors: Vec<String> = s.errors.iter().map(|(e, n)| format!("{n} {e}")).collect();
        text.push_str(&format!(", {} refused ({})", s.rejected, errors.join(", ")));
    }
    if s.unanswered > 0 {
        text.push_str(&format!(", {} unanswered", s.unanswered));
    }
    if s.response_unknown > 0 {
        text.push_str(&format!(
            ", {} whose answer the capture may have lost",
            s.response_unknown
        ));
    }
    if s.retries_deduplicated > s.not_appended {
        let retries = s.retries_deduplicated - s.not_appended;
        text.push_str(&format!(", {retries} retries answered as duplicates"));
    }
    let producers = match s.producers {
        1 => "1 producer id and epoch".to_owned(),
        n => format!("{n} producer ids and epochs"),
    };
    format!("{text}; {producers}")
}

fn batches(n: u64) -> String {
    match n {
        1 => "1 batch".to_owned(),
        n => format!("{n} batches"),
    }
}

/// `orders partition 3: 10.0.3.2:40002 client_id "shared-b" producer id 2999 epoch 0
/// sequence 0 acknowledged at offset 120 and never appended (frames 40, 41)`.
fn batch_line(b: &WriteBatch) -> String {
    let topic = b.topic.as_deref().unwrap_or("(topic not read)");
    let client_id = b
        .client_id
        .as_ref()
        .map(|id| format!(" client_id {id:?}"))
        .unwrap_or_default();
    let number = |v: Option<i64>| v.map_or("?".to_owned(), |v| v.to_string());
    let sequences = match (b.first_sequence, b.last_sequence) {
        (Some(first), Some(last)) if first == last => format!("sequence {first}"),
        (first, last) => format!(
            "sequences {}-{}",
            number(first.map(i64::from)),
            number(last.map(i64::from))
        ),
    };
    let what = match (b.outcome, &b.error) {
        (WriteOutcome::NotAppended, _) => format!(
            "acknowledged at offset {} and never appended",
            number(b.offset)
        ),
        (_, Some(error)) => format!("refused {error}"),
        (outcome, None) => outcome.as_str().to_owned(),
    };
    let frames = match b.response_frame {
        Some(response) => format!("frames {}, {response}", b.request_frame),
        None => format!("frame {}", b.request_frame),
    };
    format!(
        "{topic} partition {}: {}{client_id} producer id {} epoch {} {sequences} {what} ({frames})",
        b.partition,
        b.client,
        number(b.producer_id),
        number(b.producer_epoch.map(i64::from)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn producer(producer_id: i64, shared: bool) -> ProducerWrites {
        ProducerWrites {
            producer_id,
            producer_epoch: 0,
            shared,
            not_appended: u64::from(!shared),
            refused: 0,
            grant_frames: vec![],
            writers: vec![],
        }
    }

    fn text(listed: &[ProducerWrites], not_listed: u64) -> String {
        let mut out = Vec::new();
        shared(&mut out, listed, not_listed).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// What follows the shared ids shown never says there are no more when the listing
    /// stopped before every id of interest.
    #[test]
    fn the_shared_ids_past_those_shown_are_counted_or_said_unknown() {
        let three: Vec<_> = (1..=3).map(|id| producer(id, true)).collect();
        let all_listed = text(&three, 0);
        assert!(
            all_listed.contains("  and 1 more producer ids and epochs written by two producers (")
        );
        assert!(!all_listed.contains("at least"));
        assert!(text(&three, 5).contains("  and at least 1 more producer ids"));
        let one = [producer(1, true), producer(2, false)];
        assert!(!text(&one, 0).contains("more"));
        assert!(text(&one, 5).contains("5 more producer ids and epochs of interest are not listed"));
        assert_eq!(text(&[producer(2, false)], 5), "");
    }
}
