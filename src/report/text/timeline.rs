//! The timeline of `--format text`: the blocks granted to each broker, counted in a fixed
//! number of columns over the time the blocks span. When a block falls outside the
//! columns, they double in width (neighbours merge) until it fits, so the timeline holds
//! one row of counts per broker however many blocks the capture has.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::analysis::controllers::pieces::{PieceState, SourceName};
use crate::report::model::ControllerPiece;
use crate::timestamp::Timestamp;

/// Columns of the timeline.
pub const COLUMNS: usize = 60;

/// Brokers with a row of their own: as many as the analysis follows
/// ([`MAX_BROKERS`](crate::analysis::MAX_BROKERS)); the blocks of brokers past
/// them share one more row, so that a capture naming a broker id in every block does not
/// grow the timeline with it.
const MAX_ROWS: usize = crate::analysis::MAX_BROKERS;

/// Blocks per broker and column.
#[derive(Debug, Default)]
pub struct Timeline {
    /// Start of the first column, nanoseconds since the epoch, and every column's width.
    origin: i128,
    width: i128,
    rows: BTreeMap<i32, [u32; COLUMNS]>,
    /// The blocks of brokers past [`MAX_ROWS`], once one came.
    beyond: Option<[u32; COLUMNS]>,
    blocks: u64,
    /// The first and the last block's time, nanoseconds since the epoch.
    first: i128,
    last: i128,
    /// Whether the capture's times have nanoseconds (written to the precision it has).
    nano: bool,
}

impl Timeline {
    /// A block granted to `broker` at `at`.
    pub fn add(&mut self, broker: i32, at: Timestamp) {
        self.nano |= at.nano;
        let at = at.as_nanos();
        if self.blocks == 0 {
            (self.origin, self.width) = (at, 1);
            (self.first, self.last) = (at, at);
        }
        (self.first, self.last) = (self.first.min(at), self.last.max(at));
        while at < self.origin {
            self.widen(true);
        }
        while at >= self.end() {
            self.widen(false);
        }
        let column = usize::try_from((at - self.origin) / self.width).unwrap_or(0);
        let row = if self.rows.len() < MAX_ROWS || self.rows.contains_key(&broker) {
            self.rows.entry(broker).or_insert([0; COLUMNS])
        } else {
            self.beyond.get_or_insert([0; COLUMNS])
        };
        if let Some(count) = row.get_mut(column) {
            *count = count.saturating_add(1);
        }
        self.blocks += 1;
    }

    fn end(&self) -> i128 {
        self.origin + self.width * COLUMNS as i128
    }

    /// Doubles the columns' width; `leftwards`: the time before the first column is
    /// taken in (the old columns become the right half), otherwise the time after.
    fn widen(&mut self, leftwards: bool) {
        let shift = if leftwards { COLUMNS / 2 } else { 0 };
        if leftwards {
            self.origin -= self.width * COLUMNS as i128;
        }
        self.width *= 2;
        for row in self.rows.values_mut().chain(&mut self.beyond) {
            let mut wider = [0u32; COLUMNS];
            for (i, count) in row.iter().enumerate() {
                if let Some(merged) = wider.get_mut(shift + i / 2) {
                    *merged = merged.saturating_add(*count);
                }
            }
            *row = wider;
        }
    }

    /// The timeline, a heading and a row per broker of `chosen` (in that order), the
    /// others' blocks summed in one more row; nothing without blocks. Only the columns
    /// from the first block's to the last one's are drawn.
    pub fn write(&self, w: &mut dyn Write, chosen: &[i32]) -> io::Result<()> {
        if self.blocks == 0 {
            return Ok(());
        }
        let at = |nanos: i128| {
            let secs = i64::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(0);
            let nanos = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
            let nano = self.nano;
            let nanos = if nano { nanos } else { nanos / 1000 * 1000 };
            Timestamp { secs, nanos, nano }.to_rfc3339()
        };
        let column = |t: i128| usize::try_from((t - self.origin) / self.width).unwrap_or(0);
        let used = column(self.first)..=column(self.last).min(COLUMNS - 1);
        writeln!(
            w,
            "  from {} to {} (the first and last block), {} a column; a digit counts the blocks granted in it (+: more than 9)",
            at(self.first),
            at(self.last),
            duration(self.width)
        )?;
        let draw = |w: &mut dyn Write, label: String, row: &[u32; COLUMNS]| {
            let cells: String = row
                .get(used.clone())
                .unwrap_or_default()
                .iter()
                .map(|n| cell(*n))
                .collect();
            writeln!(w, "  {label:<13} |{cells}|")
        };
        for broker in chosen {
            if let Some(row) = self.rows.get(broker) {
                draw(w, format!("broker {broker}"), row)?;
            }
        }
        let others: Vec<&[u32; COLUMNS]> = self
            .rows
            .iter()
            .filter(|(b, _)| !chosen.contains(b))
            .map(|(_, row)| row)
            .collect();
        if !others.is_empty() || self.beyond.is_some() {
            let mut sum = [0u32; COLUMNS];
            for row in others.iter().copied().chain(&self.beyond) {
                for (total, n) in sum.iter_mut().zip(row.iter()) {
                    *total = total.saturating_add(*n);
                }
            }
            // past the rows kept, how many more brokers is not known: at least one
            let more = if self.beyond.is_some() { "+" } else { "" };
            draw(w, format!("{}{more} others", others.len()), &sum)?;
        }
        Ok(())
    }
}

/// Pieces on the controller line: the latest, with how many came before.
const MAX_PIECES_SHOWN: usize = 7;

/// One line under the timeline: who is proven to have led the controller quorum from when
/// to when, and where who led is unknown (the latest [`MAX_PIECES_SHOWN`] pieces, in UTC;
/// a time from the metadata log marked `log`); nothing without pieces.
pub fn write_controllers(w: &mut dyn Write, pieces: &[ControllerPiece]) -> io::Result<()> {
    let Some(last) = pieces.len().checked_sub(1) else {
        return Ok(());
    };
    if pieces.iter().all(|p| p.state != PieceState::Led) {
        return writeln!(
            w,
            "  {:<13} who led is unknown throughout: no quorum message, AllocateProducerIds answer or metadata log shows it",
            "controllers"
        );
    }
    let shown = pieces
        .get(last.saturating_sub(MAX_PIECES_SHOWN - 1)..)
        .unwrap_or_default();
    let earlier = pieces.len() - shown.len();
    let parts: Vec<String> = shown.iter().map(piece).collect();
    let earlier = match earlier {
        0 => String::new(),
        n => format!("{n} earlier, then "),
    };
    writeln!(
        w,
        "  {:<13} {earlier}{} UTC",
        "controllers",
        parts.join("; ")
    )
}

/// `102 (epoch 1) led 00:02:20.413–00:02:28.248`, `unknown 00:02:28.248–00:02:30.802`.
fn piece(p: &ControllerPiece) -> String {
    // the time of day of an RFC 3339 timestamp, to the millisecond
    let time = |t: &str, source: SourceName| {
        let day = t.get(11..23).unwrap_or(t).to_owned();
        match source {
            SourceName::MetadataLog => format!("{day} (log)"),
            _ => day,
        }
    };
    let span = format!(
        "{}–{}",
        time(&p.from_timestamp, p.from_source),
        time(&p.to_timestamp, p.to_source)
    );
    if p.state != PieceState::Led {
        return format!("unknown {span}");
    }
    let who = match (p.leader_id, &p.leader_address) {
        (Some(id), _) => id.to_string(),
        (None, Some(address)) => format!("the controller at {address}"),
        (None, None) => "?".to_owned(),
    };
    match p.epoch {
        Some(epoch) => format!("{who} (epoch {epoch}) led {span}"),
        None => format!("{who} (epoch not seen) led {span}"),
    }
}

fn cell(count: u32) -> char {
    match count {
        0 => '.',
        1..=9 => char::from_digit(count, 10).unwrap_or('+'),
        _ => '+',
    }
}

/// A width in nanoseconds, in the unit that suits it.
fn duration(nanos: i128) -> String {
    let nanos = nanos as f64;
    if nanos < 1e3 {
        format!("{nanos} ns")
    } else if nanos < 1e6 {
        format!("{:.1} µs", nanos / 1e3)
    } else if nanos < 1e9 {
        format!("{:.1} ms", nanos / 1e6)
    } else if nanos < 600e9 {
        format!("{:.1} s", nanos / 1e9)
    } else {
        format!("{:.1} min", nanos / 60e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: i64) -> Timestamp {
        Timestamp {
            secs: 1_700_000_000 + millis.div_euclid(1000),
            nanos: (millis.rem_euclid(1000) * 1_000_000) as u32,
            nano: false,
        }
    }

    #[test]
    fn columns_widen_both_ways_and_keep_every_block() {
        let mut t = Timeline::default();
        t.add(1, at(1000));
        t.add(2, at(5000));
        t.add(1, at(0)); // before the first column
        t.add(1, at(59_999));
        let total: u32 = t.rows.values().flatten().sum();
        assert_eq!(total, 4);
        assert!(t.origin <= at(0).as_nanos() && t.end() > at(59_999).as_nanos());
        // ordered in time: broker 1's blocks at 0 s and 1 s come before its last one
        let row = t.rows[&1];
        let columns: Vec<usize> = (0..COLUMNS).filter(|c| row[*c] > 0).collect();
        assert!(columns.len() >= 2 && columns.first() < columns.last());
        let mut out = Vec::new();
        t.write(&mut out, &[1, 2]).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(out.contains("broker 2      |"), "{out}");
        // the heading's times are the first and the last block's
        assert!(
            out.contains("to 2023-11-14T22:14:19.999000Z (the first"),
            "{out}"
        );
    }

    /// A capture naming a new broker id in every block (hostile) gets a row per broker
    /// up to [`MAX_ROWS`]; the blocks of the rest share one, counted among the others.
    #[test]
    fn brokers_past_the_rows_kept_share_one_and_every_block_counts() {
        let mut t = Timeline::default();
        let brokers = MAX_ROWS as i32 + 500;
        for broker in 0..brokers {
            t.add(broker, at(i64::from(broker)));
        }
        t.add(brokers - 1, at(0));
        assert_eq!(t.rows.len(), MAX_ROWS);
        let total: u32 = t.rows.values().chain(&t.beyond).flatten().sum();
        assert_eq!(total, brokers as u32 + 1);
        let mut out = Vec::new();
        t.write(&mut out, &[0]).unwrap();
        let out = String::from_utf8(out).unwrap();
        let others = out.lines().last().unwrap_or_default();
        assert!(
            others.starts_with(&format!("  {}+ others", MAX_ROWS - 1)),
            "{out}"
        );
        let drawn: u32 = others.chars().filter_map(|c| c.to_digit(10)).sum();
        assert!(others.contains('+') && drawn > 0, "{others}");
    }

    fn piece_at(leader_id: Option<i32>, n: i32, source: SourceName) -> ControllerPiece {
        let stamp = |n: i32| format!("2026-12-02T17:21:{n:02}.352886Z");
        ControllerPiece {
            from_timestamp: stamp(n),
            from_source: source,
            to_timestamp: stamp(n + 1),
            ..ControllerPiece::sample(leader_id, n, (0, 0))
        }
    }

    #[test]
    fn the_controller_line_names_the_latest_pieces_and_counts_the_rest() {
        let mut out = Vec::new();
        write_controllers(&mut out, &[]).unwrap();
        assert!(out.is_empty());
        write_controllers(&mut out, &[piece_at(None, 0, SourceName::MetadataLog)]).unwrap();
        let pieces: Vec<ControllerPiece> = (1..=9)
            .map(|e| match e % 2 {
                1 => piece_at(Some(100 + e), e, SourceName::Capture),
                _ => piece_at(None, e, SourceName::Capture),
            })
            .collect();
        write_controllers(&mut out, &pieces[..3]).unwrap();
        let mut logged = pieces[..1].to_vec();
        logged[0].from_source = SourceName::MetadataLog;
        logged[0].leader_id = None;
        logged[0].leader_address = Some("10.0.0.1:9093".into());
        logged[0].epoch = None;
        write_controllers(&mut out, &logged).unwrap();
        write_controllers(&mut out, &pieces).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                "  controllers   who led is unknown throughout: no quorum message, AllocateProducerIds answer or metadata log shows it",
                "  controllers   101 (epoch 1) led 17:21:01.352–17:21:02.352; unknown 17:21:02.352–17:21:03.352; 103 (epoch 3) led 17:21:03.352–17:21:04.352 UTC",
                "  controllers   the controller at 10.0.0.1:9093 (epoch not seen) led 17:21:01.352 (log)–17:21:02.352 UTC",
                "  controllers   2 earlier, then 103 (epoch 3) led 17:21:03.352–17:21:04.352; unknown 17:21:04.352–17:21:05.352; 105 (epoch 5) led 17:21:05.352–17:21:06.352; unknown 17:21:06.352–17:21:07.352; 107 (epoch 7) led 17:21:07.352–17:21:08.352; unknown 17:21:08.352–17:21:09.352; 109 (epoch 9) led 17:21:09.352–17:21:10.352 UTC",
            ]
        );
    }

    #[test]
    fn many_blocks_in_one_column_show_a_plus() {
        let mut t = Timeline::default();
        for i in 0..12 {
            t.add(7, at(i));
        }
        t.add(7, at(60_000));
        let mut out = Vec::new();
        t.write(&mut out, &[7]).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("|+"), "{out}");
    }

    #[test]
    fn brokers_not_chosen_share_one_row_and_no_column_runs_past_the_last_block() {
        let mut t = Timeline::default();
        for broker in 0..100 {
            t.add(broker, at(i64::from(broker) * 10));
        }
        t.add(5, at(12_345));
        let mut out = Vec::new();
        t.write(&mut out, &[5, 7]).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert!(lines[1].starts_with("  broker 5 "), "{out}");
        assert!(lines[3].starts_with("  98 others "), "{out}");
        // the row ends with the column of the last block
        assert!(lines[1].ends_with("1|"), "{out}");
        let drawn: u32 = lines[1..]
            .iter()
            .flat_map(|l| l.chars().filter_map(|c| c.to_digit(10)))
            .sum();
        assert!(drawn >= 4, "{out}");
    }
}
