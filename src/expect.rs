//! `--expect FILE`: this run's exchanges and findings against those of a report written
//! before (a golden file: the JSON report, or the lines of `--format ndjson`), so a CI job
//! can pin what a captured fixture must decode to and what is found in it.
//!
//! Only `exchanges` and `producer_id_blocks.findings` are compared, so what legitimately
//! varies between runs and versions (the tool version, added sections) does not matter;
//! nor do fields added to them since format version 1 began ([`ADDED_FIELDS`]) when the
//! golden file lacks them. Exchanges are matched by their ends (client and server) and
//! correlation id, whatever their frame numbers, findings by kind and frames; each
//! difference is one line naming the exchange or finding and the field, old → new. Frame
//! and connection numbers that only moved (a packet dropped or added before them) are
//! said after the real changes, a line per shift ("frames shifted by -1 from frame 101:
//! 40 exchanges"). Numbers are compared by value (`40729` is `40729.0`), and a golden of
//! another `format_version` is refused.

use std::collections::{BTreeMap, VecDeque};
use std::io;

use serde_json::Value;

use crate::pairing::{ClusterEvent, ExchangeOrder};
use crate::report::model::{PidFinding, Report, FORMAT_VERSION};
use crate::report::sink::{Analysed, Needs, Sink};
use crate::report::spill::{Ordered, DEFAULT_RUN_BYTES};
use crate::report::{self, json::writer};

/// Differences listed before the rest are only counted.
const MAX_LISTED: usize = 50;

/// Fields added to exchanges and findings since format version 1 began: a golden file
/// written before them lacks them, which is no difference.
pub const ADDED_FIELDS: [&str; 3] = ["unix_time", "timestamp", "facts"];

/// What a golden file holds that is compared.
#[derive(Debug, Default)]
pub struct Golden {
    exchanges: Vec<Value>,
    /// `None` when the file has no findings to compare (a report without the section).
    findings: Option<Vec<Value>>,
}

impl Golden {
    /// The JSON report, or ndjson lines (exchanges, then the rest of the report); `Err`
    /// with the reason when it is neither.
    pub fn parse(text: &str) -> Result<Self, String> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(mut report)) => {
                check_version(report.get("format_version"))?;
                let Some(Value::Array(exchanges)) = report.remove("exchanges") else {
                    return Err("it has no \"exchanges\" array: not a pidshark report".into());
                };
                Ok(Self {
                    exchanges,
                    findings: findings_of(&Value::Object(report)),
                })
            }
            Ok(_) => Err("not a JSON object: not a pidshark report".into()),
            Err(whole) => Self::parse_lines(text).map_err(|lines| {
                format!("not JSON: neither a JSON report ({whole}) nor ndjson lines ({lines})")
            }),
        }
    }

    /// `--format ndjson` output: a line per exchange (`"type": "exchange"`, or without a
    /// type from before lines had one), per block and per finding, then the rest of the
    /// report.
    fn parse_lines(text: &str) -> Result<Self, String> {
        let mut golden = Self::default();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let mut value: Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            let is_report = value.get("format_version").is_some();
            check_version(value.get("format_version"))
                .map_err(|e| format!("line {}: {e}", n + 1))?;
            match value.get("type").and_then(Value::as_str) {
                Some("report") => golden.findings = findings_of(&value),
                None if is_report => golden.findings = findings_of(&value),
                // Each block is its exchange's; the findings are the report line's too;
                // InitProducerId entries are not compared.
                Some("block" | "finding" | "producer_id") => {}
                Some("exchange") | None => {
                    if let Some(line) = value.as_object_mut() {
                        line.shift_remove("type"); // the line's, not the exchange's
                    }
                    golden.exchanges.push(value);
                }
                Some(other) => return Err(format!("line {}: unknown type {other:?}", n + 1)),
            }
        }
        Ok(golden)
    }
}

fn findings_of(report: &Value) -> Option<Vec<Value>> {
    report
        .pointer("/producer_id_blocks/findings")
        .and_then(Value::as_array)
        .cloned()
}

/// A finding's place: its kind and frames.
type FindingKey = (String, Vec<Option<i64>>);

fn finding_key(f: &Value) -> FindingKey {
    let frames = at(f, "/frames").as_array().map_or(&[][..], Vec::as_slice);
    (
        at(f, "/kind").to_string(),
        frames.iter().map(integer).collect(),
    )
}

fn describe_finding(f: &Value) -> String {
    format!("finding {} (frames {})", at(f, "/kind"), at(f, "/frames"))
}

/// A field by JSON pointer, `null` when absent (`Value`'s indexing never panics either,
/// but this keeps the crate free of indexing).
fn at<'a>(ex: &'a Value, pointer: &str) -> &'a Value {
    ex.pointer(pointer).unwrap_or(&Value::Null)
}

fn describe(ex: &Value) -> String {
    format!(
        "exchange (connection {}, correlation id {}, request frame {})",
        at(ex, "/connection"),
        at(ex, "/correlation_id"),
        at(ex, "/request/frame")
    )
}

/// Field-by-field differences between two JSON values, as `path: old → new`.
fn diff_values(path: &str, old: &Value, new: &Value, out: &mut Vec<String>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff_values(&sub, x, y, out),
                    (Some(x), None) => out.push(format!("{sub}: {x} → (absent)")),
                    (None, Some(_)) if ADDED_FIELDS.contains(&k.as_str()) => {}
                    (None, Some(y)) => out.push(format!("{sub}: (absent) → {y}")),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (idx, (x, y)) in a.iter().zip(b).enumerate() {
                diff_values(&format!("{path}[{idx}]"), x, y, out);
            }
        }
        // 40729 and 40729.0 are one number (a golden rewritten by jq, say); two integers
        // are compared exactly, beyond what a float holds
        (Value::Number(a), Value::Number(b))
            if (a.is_f64() || b.is_f64()) && a.as_f64() == b.as_f64() => {}
        _ if old != new => out.push(format!("{path}: {old} → {new}")),
        _ => {}
    }
}

/// A golden of another format version is refused: its fields may mean other things.
fn check_version(format_version: Option<&Value>) -> Result<(), String> {
    match format_version {
        None => Ok(()),
        Some(v) if v.as_f64() == Some(f64::from(FORMAT_VERSION)) => Ok(()),
        Some(v) => Err(format!(
            "it is a report of format_version {v}; this pidshark writes and compares format_version {FORMAT_VERSION}: write the golden again with it"
        )),
    }
}

/// What an exchange is, whatever the numbering of frames and connections: its client,
/// its server and its correlation id.
type Key = (String, String, Option<i64>);

fn key(ex: &Value) -> Key {
    (
        at(ex, "/client").to_string(),
        at(ex, "/server").to_string(),
        integer(at(ex, "/correlation_id")),
    )
}

/// The fields that number packets and connections: they move when a packet is dropped or
/// added before them, so they are compared as shifts, not as changes.
const NUMBERINGS: [&str; 7] = [
    "/connection",
    "/request/frame",
    "/request/first_frame",
    "/request/capture_frame",
    "/response/frame",
    "/response/first_frame",
    "/response/capture_frame",
];

/// `ex` without its numberings, its request frame, and how far each frame numbering lies
/// from it (a response two frames after its request stays two after when frames shift).
fn unnumbered(ex: &Value) -> (Value, Option<i64>, Vec<Option<i64>>) {
    let frame = integer(at(ex, "/request/frame"));
    let offsets = NUMBERINGS
        .iter()
        .skip(2)
        .map(|p| integer(ex.pointer(p)?)?.checked_sub(frame?))
        .collect();
    let mut rest = ex.clone();
    for pointer in NUMBERINGS {
        let (parent, field) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let parent = if parent.is_empty() {
            Some(&mut rest)
        } else {
            rest.pointer_mut(parent)
        };
        if let Some(Value::Object(map)) = parent {
            map.shift_remove(field);
        }
    }
    (rest, frame, offsets)
}

/// Runs of exchanges whose request frame moved by one amount, in the golden's frame
/// order: `(from golden frame, shift, exchanges)`; runs that did not move left out.
fn shift_runs(mut moved: Vec<(i64, i64)>) -> Vec<(i64, i64, u64)> {
    moved.sort_unstable();
    let mut runs: Vec<(i64, i64, u64)> = Vec::new();
    for (old, new) in moved {
        // a golden file's frames are the user's: any i64
        let shift = new.saturating_sub(old);
        match runs.last_mut() {
            Some((_, s, n)) if *s == shift => *n += 1,
            _ => runs.push((old, shift, 1)),
        }
    }
    runs.retain(|(_, shift, _)| *shift != 0);
    runs
}

/// An integer, also when written as a float (`8.0`, as a tool that reads numbers as
/// doubles writes it back).
fn integer(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

/// Differences: the first [`MAX_LISTED`] kept, the rest counted.
#[derive(Default)]
struct Lines {
    listed: Vec<String>,
    more: u64,
}

impl Lines {
    fn push(&mut self, line: String) {
        if self.listed.len() < MAX_LISTED {
            self.listed.push(line);
        } else {
            self.more += 1;
        }
    }
}

impl Extend<String> for Lines {
    fn extend<I: IntoIterator<Item = String>>(&mut self, lines: I) {
        lines.into_iter().for_each(|line| self.push(line));
    }
}

/// `--expect FILE`: hands everything on to the format's sink, and keeps this run's
/// exchanges (compact JSON in report order, off the heap past a bound, see [`Ordered`])
/// to compare with the golden file's once the run is over. Memory grows with the golden
/// file, not with the capture.
pub struct Check {
    inner: Box<dyn Sink>,
    /// The golden file's exchanges by what they are, each matched once, in order.
    expected: BTreeMap<Key, VecDeque<Value>>,
    /// Its findings, if it has them.
    expected_findings: Option<Vec<Value>>,
    actual: Ordered<ExchangeOrder>,
    differences: Vec<String>,
}

impl Check {
    /// Checks the run against `golden`, handing everything on to `inner`.
    pub fn new(golden: Golden, inner: Box<dyn Sink>) -> Self {
        let mut expected: BTreeMap<Key, VecDeque<Value>> = BTreeMap::new();
        for ex in golden.exchanges {
            expected.entry(key(&ex)).or_default().push_back(ex);
        }
        Self {
            inner,
            expected,
            expected_findings: golden.findings,
            actual: Ordered::new(DEFAULT_RUN_BYTES),
            differences: Vec::new(),
        }
    }

    /// The differences found, one line each (at most 50 and a count of the
    /// rest); empty when the exchanges agree. Known once the run has finished the sink.
    pub fn differences(&self) -> &[String] {
        &self.differences
    }

    /// Matches this run's exchanges with the golden file's by what they are: each is in
    /// both (its fields compared, numberings apart), only in the golden file (missing)
    /// or only in this run (new). The real changes come first, then the shifts.
    fn compare(&mut self, findings: &[PidFinding]) -> io::Result<()> {
        let actual = std::mem::replace(&mut self.actual, Ordered::new(1));
        let mut expected = std::mem::take(&mut self.expected);
        let mut lines = Lines::default();
        let mut moved: Vec<(i64, i64)> = Vec::new();
        actual.write_each(|_, text| {
            let new: Value = serde_json::from_slice(text).map_err(io::Error::other)?;
            let Some(old) = expected.get_mut(&key(&new)).and_then(VecDeque::pop_front) else {
                lines.push(format!("{} is new", describe(&new)));
                return Ok(());
            };
            let (old_rest, old_frame, old_offsets) = unnumbered(&old);
            let (new_rest, new_frame, new_offsets) = unnumbered(&new);
            let mut fields = Vec::new();
            diff_values("", &old_rest, &new_rest, &mut fields);
            // not a shift: a frame that moved apart from its request (one on one side
            // only is said with its message)
            let apart = NUMBERINGS
                .iter()
                .skip(2)
                .zip(old_offsets.iter().zip(&new_offsets));
            for (pointer, (o, n)) in apart {
                if let (Some(o), Some(n), true) = (o, n, o != n) {
                    let (old_at, new_at) = (at(&old, pointer), at(&new, pointer));
                    fields.push(format!(
                        "{}: {old_at} → {new_at} ({o:+} → {n:+} from the request)",
                        &pointer[1..].replace('/', ".")
                    ));
                }
            }
            lines.extend(
                fields
                    .into_iter()
                    .map(|f| format!("{}: {f}", describe(&old))),
            );
            if let (Some(o), Some(n)) = (old_frame, new_frame) {
                moved.push((o, n));
            }
            Ok(())
        })?;
        for old in expected.into_values().flatten() {
            lines.push(format!("{} is missing", describe(&old)));
        }
        if let Some(old) = self.expected_findings.take() {
            let new: Vec<Value> = findings
                .iter()
                .filter_map(|f| serde_json::to_value(f).ok())
                .collect();
            compare_findings(&old, &new, &mut lines);
        }
        for (from, shift, n) in shift_runs(moved) {
            let exchanges = if n == 1 {
                "1 exchange".to_owned()
            } else {
                format!("{n} exchanges")
            };
            lines.push(format!(
                "frames shifted by {shift:+} from frame {from}: {exchanges} (their frame and connection numbers only)"
            ));
        }
        self.differences = lines.listed;
        if lines.more > 0 {
            let more = lines.more;
            self.differences
                .push(format!("... and {more} more differences"));
        }
        Ok(())
    }
}

/// The findings of the golden file against this run's: each in both (its fields
/// compared), only in the golden file (missing) or only in this run (new).
fn compare_findings(old: &[Value], new: &[Value], lines: &mut Lines) {
    // this run's findings by place, each matched once, in the order they came
    let mut by_key: BTreeMap<FindingKey, VecDeque<usize>> = BTreeMap::new();
    for (i, n) in new.iter().enumerate() {
        by_key.entry(finding_key(n)).or_default().push_back(i);
    }
    let mut matched = vec![false; new.len()];
    for o in old {
        let found = by_key
            .get_mut(&finding_key(o))
            .and_then(VecDeque::pop_front);
        match found.and_then(|i| Some((i, new.get(i)?))) {
            Some((i, n)) => {
                if let Some(m) = matched.get_mut(i) {
                    *m = true;
                }
                let mut fields = Vec::new();
                diff_values("", o, n, &mut fields);
                lines.extend(
                    fields
                        .into_iter()
                        .map(|f| format!("{}: {f}", describe_finding(o))),
                );
            }
            None => lines.push(format!("{} is missing", describe_finding(o))),
        }
    }
    let unmatched = new.iter().zip(matched).filter(|(_, m)| !m);
    lines.extend(unmatched.map(|(n, _)| format!("{} is new", describe_finding(n))));
}

impl Sink for Check {
    fn needs(&self) -> Needs {
        self.inner.needs()
    }

    /// AllocateProducerIds exchanges are compared; the others are not, but handed on to
    /// the output.
    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        if let Analysed::Allocate(ex, _) = &analysed {
            self.actual.push(ex.order(), |out| {
                writer::compact(out, &report::exchange(ex))
            })?;
        }
        self.inner.exchange(analysed)
    }

    /// Not compared either; handed on.
    fn cluster(&mut self, ev: &ClusterEvent) -> io::Result<()> {
        self.inner.cluster(ev)
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        self.inner.finish(report)?;
        self.compare(&report.producer_id_blocks.findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shifts_are_runs_of_one_amount_in_the_goldens_frame_order() {
        let moved = vec![(300, 298), (10, 10), (100, 99), (200, 199), (400, 398)];
        assert_eq!(shift_runs(moved), [(100, -1, 2), (300, -2, 2)]);
        assert!(shift_runs(vec![(5, 5)]).is_empty());
        // a golden's frames are anyone's numbers: no overflow
        assert_eq!(shift_runs(vec![(i64::MIN, i64::MAX)]).len(), 1);
    }

    #[test]
    fn an_exchange_is_known_by_its_ends_and_correlation_id_not_its_numbers() {
        let old = json!({"connection": 3, "client": "a:1", "server": "b:2", "correlation_id": 7,
            "request": {"frame": 10, "first_frame": 10}, "response": {"frame": 12, "first_frame": 12}});
        let new = json!({"connection": 2, "client": "a:1", "server": "b:2", "correlation_id": 7.0,
            "request": {"frame": 9, "first_frame": 9}, "response": {"frame": 11, "first_frame": 11}});
        assert_eq!(key(&old), key(&new));
        let (a, frame_a, offsets_a) = unnumbered(&old);
        let (b, frame_b, offsets_b) = unnumbered(&new);
        assert_eq!((frame_a, frame_b), (Some(10), Some(9)));
        assert_eq!(offsets_a, offsets_b);
        let mut fields = Vec::new();
        diff_values("", &a, &b, &mut fields);
        assert!(fields.is_empty(), "{fields:?}");
    }

    #[test]
    fn lists_field_changes_with_paths() {
        let mut out = Vec::new();
        diff_values(
            "",
            &json!({"status": "complete", "response": {"error_code": 0, "tagged_fields": []}}),
            &json!({"status": "complete", "response": {"error_code": 41, "tagged_fields": [], "x": 1}}),
            &mut out,
        );
        assert_eq!(
            out,
            vec!["response.error_code: 0 → 41", "response.x: (absent) → 1"]
        );
    }
}
