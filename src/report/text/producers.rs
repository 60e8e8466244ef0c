//! The text report's "Producers" part, shown when the capture has InitProducerId
//! exchanges: what they granted, in a line or two, then the producers in trouble first
//! (an id and epoch two producers hold, producers holding ids of an overlap, an id outside
//! its broker's blocks), a few lines at most, each producer named by its client address
//! and port, `client_id` and transactional id (from [`FlaggedProducers`]).

use std::io::{self, Write};

use super::{counted, heading, RED};
use crate::analysis::{Affected, Detail};
use crate::diag::{obs, Kind};
use crate::report::flagged::{affected, FlaggedProducers};
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
    let end_txn = report.producer_ids.end_txn.as_ref();
    if s.exchanges == 0 && end_txn.is_none() {
        return Ok(());
    }
    heading(w, &title("Producers (InitProducerId)", s))?;
    // EndTxn's counts follow InitProducerId's placements, on a line of their own
    if s.granted > 0 {
        writeln!(w, "  {}", placements(s))?;
    }
    if let Some(e) = end_txn {
        writeln!(w, "  {}", title("EndTxn", e))?;
        if e.granted > 0 {
            writeln!(w, "    {}", placements(e))?;
        }
    }
    if s.grants_forgotten > 0 {
        writeln!(
            w,
            "  ({} granted ids forgotten to bound memory: duplicates among them are not found)",
            s.grants_forgotten
        )?;
    }
    let findings = &report.producer_id_blocks.findings;
    let overlaps = findings
        .iter()
        .filter_map(|f| affected(f).map(|affected| (f, affected)));
    let duplicates = findings.iter().filter_map(|f| match &f.detail {
        Some(Detail::DuplicateGrant(grant)) => Some(duplicate_line(grant, flagged)),
        _ => None,
    });
    let outside = findings.iter().filter_map(|f| match &f.detail {
        Some(Detail::OutsideBlocks(grant)) => Some(outside_line(grant, flagged)),
        _ => None,
    });
    let troubled: Vec<String> = duplicates
        .chain(overlaps.clone().map(|(f, a)| overlap_lines(f, a, flagged)))
        .chain(outside)
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
fn title(label: &str, s: &ProducerIdCounts) -> String {
    let mut title = format!(
        "{label}: {}, {} granted, {}",
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
    let others = s.other_placements();
    // `0 in a block` is said only when no other placement is
    let in_block = (s.in_block > 0 || others.is_empty())
        .then(|| format!("{} in a block of the capture", s.in_block));
    let mut parts: Vec<String> = in_block.into_iter().collect();
    parts.extend(others.into_iter().map(|(n, words)| format!("{n} {words}")));
    let duplicates = match s.duplicates {
        0 => "no duplicate".to_owned(),
        n => counted(n, "duplicate"),
    };
    format!("ids granted: {}; {duplicates}", parts.join(", "))
}

/// `127.0.0.1:40178 client_id "app" (frame 57)`: the grant of `producer_id` answered in
/// `frame` as kept, else the finding's own client and transactional id (quoted).
fn holder(
    producer_id: i64,
    flagged: &FlaggedProducers,
    (client, transactional_id, frame): (std::net::SocketAddr, Option<String>, u64),
) -> String {
    let who = match (flagged.grant(producer_id, frame), transactional_id) {
        (Some(grant), _) => grant.who(),
        (None, Some(id)) => format!("{client} transactional id {id}"),
        (None, None) => client.to_string(),
    };
    format!("{who} (frame {frame})")
}

fn duplicate_line(g: &obs::PidDuplicateGrant<String>, flagged: &FlaggedProducers) -> String {
    let earlier = (g.other_client, g.other_quoted(), g.other_frame);
    let later = (g.client, g.quoted(), g.frame);
    format!(
        "duplicate: producer id {} epoch {} to {}, then to {}",
        g.producer_id,
        g.producer_epoch,
        holder(g.producer_id, flagged, earlier),
        holder(g.producer_id, flagged, later),
    )
}

/// The overlap, then under it the first holders of its ids, each on a line of its own.
fn overlap_lines(f: &PidFinding, affected: &Affected, flagged: &FlaggedProducers) -> String {
    let mut lines = overlap_line(f, affected);
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
    let named = holders.len().min(MAX_HOLDERS) as u64;
    let at_least = if affected.producers_at_least {
        "at least "
    } else {
        ""
    };
    if affected.producers > named {
        lines += &format!("\n    and {at_least}{} more", affected.producers - named);
    } else if affected.producers_at_least {
        // the count is a floor: others may hold them
        lines += "\n    and maybe more";
    }
    lines
}

fn overlap_line(f: &PidFinding, affected: &Affected) -> String {
    let ids = match f.ids {
        Some(ids) if ids.start == ids.end => format!("id {}", ids.start),
        Some(ids) => format!("ids {}..{}", ids.start, ids.end),
        None => "ids ?".to_owned(),
    };
    let producers = affected.producers;
    let at_least = if affected.producers_at_least {
        "at least "
    } else {
        ""
    };
    let frames: Vec<String> = f.frames.iter().map(u64::to_string).collect();
    format!(
        "overlap: {at_least}{} on {}{} hold{} {ids}, given twice (frames {})",
        counted(producers, "producer"),
        affected.hosts.listed.join(", "),
        affected.hosts.unlisted().unwrap_or_default(),
        if producers == 1 { "s" } else { "" },
        frames.join(", ")
    )
}

fn outside_line(g: &obs::PidOutsideBlocks<String>, flagged: &FlaggedProducers) -> String {
    let placement = g.placement.replace('_', " ");
    let held = match g.block {
        Some((start, end, broker)) => format!(", in {start}..{end} of broker {broker}"),
        None => String::new(),
    };
    let to = flagged
        .grant(g.producer_id, g.frame)
        .map(|grant| format!(" to {}", grant.who()))
        .unwrap_or_default();
    format!(
        "{placement}: producer id {} from broker {}{to} (frame {}){held}; its {} (the last {}..{})",
        g.producer_id,
        g.broker_id,
        g.frame,
        counted(g.blocks, "block"),
        g.last_start,
        g.last_end,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::analysis::Hosts;
    use crate::diag::{IdSpan, Severity};
    use crate::report::model::UnixTime;
    use crate::timestamp::Timestamp;

    /// An overlap of ids 5..=9 held by `producers`, a floor when `at_least`.
    fn overlap(producers: u64, at_least: bool) -> (PidFinding, Affected) {
        let hosts = Hosts {
            listed: vec!["10.0.0.1".to_owned()],
            count: 1,
            at_least: false,
        };
        let affected = Affected {
            producers,
            producers_at_least: at_least,
            hosts: hosts.clone(),
            producer_id: 5,
            holders_of_id: 1,
            holders_of_id_at_least: false,
            id_hosts: hosts,
        };
        let finding = PidFinding {
            severity: Severity::Error,
            kind: Kind::PidBlockOverlap,
            broker_id: Some(1),
            connection: None,
            frames: vec![19, 59],
            timestamp: String::new(),
            unix_time: UnixTime(Timestamp::default()),
            facts: BTreeMap::new(),
            message: String::new(),
            ids: Some(IdSpan { start: 5, end: 9 }),
            fault: None,
            detail: Some(Detail::Holders(affected.clone())),
        };
        (finding, affected)
    }

    /// A count of producers that is a floor is said "at least", above and under the
    /// overlap; an exact one as before.
    #[test]
    fn an_overlaps_count_of_producers_that_is_a_floor_says_at_least() {
        let flagged = FlaggedProducers::default();
        let (f, affected) = overlap(65, true);
        assert_eq!(
            overlap_lines(&f, &affected, &flagged),
            "overlap: at least 65 producers on 10.0.0.1 hold ids 5..9, given twice (frames 19, 59)\n    and at least 65 more"
        );
        // as many as are named: others may hold them
        let mut one = FlaggedProducers::default();
        one.add(crate::report::flagged::Grant {
            producer_id: 5,
            epoch: 0,
            client: "10.0.0.1:40000".to_owned(),
            client_id: None,
            transactional_id: None,
            broker: Some(1),
            request_frame: 29,
            response_frame: 30,
            placement: crate::analysis::PlacementName::InBlock,
            block: None,
            duplicate_of: None,
        });
        let (f, affected) = overlap(1, true);
        let lines = overlap_lines(&f, &affected, &one);
        assert!(lines.ends_with("(frame 30)\n    and maybe more"), "{lines}");
        let (f, affected) = overlap(65, false);
        assert_eq!(
            overlap_lines(&f, &affected, &flagged),
            "overlap: 65 producers on 10.0.0.1 hold ids 5..9, given twice (frames 19, 59)\n    and 65 more"
        );
    }
}
