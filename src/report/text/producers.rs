//! The text report's "Producers" part, shown when the capture has InitProducerId
//! exchanges: what they granted, in a line or two, then the producers in trouble first
//! (an id and epoch two producers hold, producers holding ids of an overlap, an id outside
//! its broker's blocks), a few lines at most, each producer named by its client address
//! and port, `client_id` and transactional id (from [`FlaggedProducers`]).

use std::io::{self, Write};

use super::{counted, heading, RED};
use crate::diag::{Fact, Kind};
use crate::report::flagged::{int, FlaggedProducers};
use crate::report::model::{PidFinding, ProducerIdCounts, Report};

/// Producers in trouble listed before the rest are only counted.
const MAX_LISTED: usize = 5;
/// Holders of an overlap's ids named under it before the rest are only counted.
const MAX_HOLDERS: usize = 3;

pub(super) fn write(
    w: &mut dyn Write,
    report: &Report,
    flagged: &FlaggedProducers,
) -> io::Result<()> {
    let s = &report.producer_ids.summary;
    if s.exchanges == 0 {
        return Ok(());
    }
    heading(w, &title(s))?;
    if s.granted > 0 {
        writeln!(w, "  {}", placements(s))?;
    }
    if s.grants_forgotten > 0 {
        writeln!(
            w,
            "  ({} granted ids forgotten to bound memory: duplicates among them are not found)",
            s.grants_forgotten
        )?;
    }
    let findings = &report.producer_id_blocks.findings;
    let of_kind = |kind: Kind| findings.iter().filter(move |f| f.kind == kind);
    let overlaps =
        of_kind(Kind::PidBlockOverlap).filter(|f| f.facts.contains_key("affected_producers"));
    let troubled: Vec<String> = of_kind(Kind::PidDuplicateGrant)
        .map(|f| duplicate_line(f, flagged))
        .chain(overlaps.clone().map(|f| overlap_lines(f, flagged)))
        .chain(of_kind(Kind::PidOutsideBlocks).map(|f| outside_line(f, flagged)))
        .collect();
    for line in troubled.iter().take(MAX_LISTED) {
        writeln!(w, "  {RED}{line}{RED:#}")?;
    }
    // the report lists at most 1,000 findings of a kind; its summary counts them all
    let counted_of = |kind: Kind| report.summary.diagnostics.get(kind.as_str()).copied();
    let total = counted_of(Kind::PidDuplicateGrant).unwrap_or(0)
        + counted_of(Kind::PidOutsideBlocks).unwrap_or(0)
        + overlaps.count() as u64;
    let listed = troubled.len().min(MAX_LISTED) as u64;
    if total > listed {
        writeln!(
            w,
            "  and {} more (--format csv-producers lists every grant, a duplicate with its duplicate_of_frame)",
            total - listed
        )?;
    }
    Ok(())
}

/// `Producers (InitProducerId): 9 exchanges, 9 granted, 0 errors`, and those without an
/// answer when there are any.
fn title(s: &ProducerIdCounts) -> String {
    let mut title = format!(
        "Producers (InitProducerId): {}, {} granted, {}",
        counted(s.exchanges, "exchange"),
        s.granted,
        counted(s.errors, "error")
    );
    // each error by name, most frequent first: `(COORDINATOR_LOAD_IN_PROGRESS 388)`
    let mut errors: Vec<(String, u64)> = (s.error_codes.iter())
        .filter(|(code, _)| code.is_error())
        .map(|(code, n)| (code.name(), *n))
        .collect();
    errors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if !errors.is_empty() {
        let named: Vec<String> = errors
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        title.push_str(&format!(" ({})", named.join(", ")));
    }
    if s.unanswered > 0 {
        title.push_str(&format!(", {} unanswered", s.unanswered));
    }
    if s.response_unknown > 0 {
        title.push_str(&format!(", {} response unknown", s.response_unknown));
    }
    title
}

/// Where the granted ids lie (the placements seen) and how many were duplicates.
fn placements(s: &ProducerIdCounts) -> String {
    let mut parts = vec![format!("{} in a block of the capture", s.in_block)];
    parts.extend(
        s.other_placements()
            .into_iter()
            .map(|(n, words)| format!("{n} {words}")),
    );
    let duplicates = match s.duplicates {
        0 => "no duplicate".to_owned(),
        n => counted(n, "duplicate"),
    };
    format!("ids granted: {}; {duplicates}", parts.join(", "))
}

/// A fact of a finding as written in JSON (text without quotes, a list's names joined by
/// commas); `?` when missing.
fn fact(f: &PidFinding, name: &str) -> String {
    match f.facts.get(name) {
        Some(Fact::Int(v)) => v.to_string(),
        Some(Fact::Uint(v)) => v.to_string(),
        Some(Fact::Float(v)) => v.to_string(),
        Some(Fact::Text(v)) => v.clone(),
        Some(Fact::Bool(v)) => v.to_string(),
        Some(Fact::List(names)) => names.join(", "),
        None => "?".to_owned(),
    }
}

/// `127.0.0.1:40178 client_id "app" (frame 57)`: the grant of the finding's `frame` fact
/// as kept, else the finding's own facts (client and transactional id).
fn holder(
    f: &PidFinding,
    flagged: &FlaggedProducers,
    [client, transactional_id, frame]: [&str; 3],
) -> String {
    let kept = match (int(f, "producer_id"), f.facts.get(frame)) {
        (Some(id), Some(Fact::Uint(at))) => flagged.grant(id, *at),
        _ => None,
    };
    let who = match kept {
        Some(grant) => grant.who(),
        None => match f.facts.get(transactional_id) {
            Some(Fact::Text(id)) => format!("{} transactional id {id:?}", fact(f, client)),
            _ => fact(f, client),
        },
    };
    format!("{who} (frame {})", fact(f, frame))
}

fn duplicate_line(f: &PidFinding, flagged: &FlaggedProducers) -> String {
    format!(
        "duplicate: producer id {} epoch {} to {}, then to {}",
        fact(f, "producer_id"),
        fact(f, "producer_epoch"),
        holder(
            f,
            flagged,
            ["other_client", "other_transactional_id", "other_frame"]
        ),
        holder(f, flagged, ["client", "transactional_id", "frame"]),
    )
}

/// A count among a finding's facts; 0 when missing.
fn number(f: &PidFinding, name: &str) -> u64 {
    match f.facts.get(name) {
        Some(Fact::Uint(n)) => *n,
        Some(Fact::Int(n)) => u64::try_from(*n).unwrap_or(0),
        _ => 0,
    }
}

/// The overlap, then under it the first holders of its ids, each on a line of its own.
fn overlap_lines(f: &PidFinding, flagged: &FlaggedProducers) -> String {
    let mut lines = overlap_line(f);
    let Some(ids) = f.ids else {
        return lines;
    };
    let holders = flagged.holders(ids.start, ids.end);
    for g in holders.iter().take(MAX_HOLDERS) {
        lines += &format!(
            "\n    {}: producer id {} epoch {} (frame {})",
            g.who(),
            g.producer_id,
            g.epoch,
            g.response_frame
        );
    }
    let affected = number(f, "affected_producers");
    let named = holders.len().min(MAX_HOLDERS) as u64;
    if affected > named {
        lines += &format!("\n    and {} more", affected - named);
    }
    lines
}

fn overlap_line(f: &PidFinding) -> String {
    let (start, end) = (fact(f, "ids_start"), fact(f, "ids_end"));
    let ids = match start == end {
        true => format!("id {start}"),
        false => format!("ids {start}..{end}"),
    };
    let producers = number(f, "affected_producers");
    let frames: Vec<String> = f.frames.iter().map(u64::to_string).collect();
    format!(
        "overlap: {} on {} hold{} {ids}, given twice (frames {})",
        counted(producers, "producer"),
        fact(f, "affected_hosts"),
        if producers == 1 { "s" } else { "" },
        frames.join(", ")
    )
}

fn outside_line(f: &PidFinding, flagged: &FlaggedProducers) -> String {
    let broker = f
        .broker_id
        .map_or("a broker".to_owned(), |id| format!("broker {id}"));
    let placement = fact(f, "placement").replace('_', " ");
    let held = match (f.facts.get("block_start"), f.facts.get("block_broker_id")) {
        (Some(_), Some(_)) => format!(
            ", in {}..{} of broker {}",
            fact(f, "block_start"),
            fact(f, "block_end"),
            fact(f, "block_broker_id")
        ),
        _ => String::new(),
    };
    let to = match (int(f, "producer_id"), f.facts.get("frame")) {
        (Some(id), Some(Fact::Uint(at))) => flagged
            .grant(id, *at)
            .map(|g| format!(" to {}", g.who()))
            .unwrap_or_default(),
        _ => String::new(),
    };
    format!(
        "{placement}: producer id {} from {broker}{to} (frame {}){held}; its {} (the last {}..{})",
        fact(f, "producer_id"),
        fact(f, "frame"),
        counted(number(f, "blocks"), "block"),
        fact(f, "last_start"),
        fact(f, "last_end"),
    )
}
