//! `--expect FILE`: this run's exchanges against those of a report written before (a
//! golden file), so a CI job can pin what a captured fixture must decode to.
//!
//! Only `exchanges` are compared, so fields that legitimately vary between runs and
//! versions (the tool version, added sections) do not matter. Exchanges are matched by
//! connection, correlation id and request frame; each difference is one line naming the
//! exchange and the field, old → new.

use std::io;

use serde_json::Value;

use crate::analysis::Block;
use crate::pairing::{Exchange, ExchangeOrder};
use crate::report::model::Report;
use crate::report::sink::{Needs, Sink};
use crate::report::spill::{Ordered, DEFAULT_RUN_BYTES};
use crate::report::{self, compact};

/// Differences listed before the rest are only counted.
const MAX_LISTED: usize = 50;

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
        _ if old != new => out.push(format!("{path}: {old} → {new}")),
        _ => {}
    }
}

/// Where an exchange of either report stands: report order (request frame, connection,
/// correlation id), absent fields first.
type Place = (Option<u64>, Option<u64>, Option<i64>);

fn place(ex: &Value) -> Place {
    (
        at(ex, "/request/frame").as_u64(),
        at(ex, "/connection").as_u64(),
        at(ex, "/correlation_id").as_i64(),
    )
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
    /// The golden file's exchanges, in report order.
    expected: Vec<(Place, Value)>,
    actual: Ordered<ExchangeOrder>,
    differences: Vec<String>,
}

impl Check {
    /// `Err` with the reason when `golden` is not a pidshark report.
    pub fn new(golden: Value, inner: Box<dyn Sink>) -> Result<Self, String> {
        let Value::Object(mut golden) = golden else {
            return Err("not a JSON object: not a pidshark report".into());
        };
        let Some(Value::Array(exchanges)) = golden.remove("exchanges") else {
            return Err("it has no \"exchanges\" array: not a pidshark report".into());
        };
        let mut expected: Vec<(Place, Value)> =
            exchanges.into_iter().map(|ex| (place(&ex), ex)).collect();
        expected.sort_by_key(|(place, _)| *place);
        Ok(Self {
            inner,
            expected,
            actual: Ordered::new(DEFAULT_RUN_BYTES),
            differences: Vec::new(),
        })
    }

    /// The differences found, one line each (at most [`MAX_LISTED`] and a count of the
    /// rest); empty when the exchanges agree. Known once the run has finished the sink.
    pub fn differences(&self) -> &[String] {
        &self.differences
    }

    /// Walks both lists in report order: each exchange is in both (its fields compared),
    /// only in the golden file (missing) or only in this run (new).
    fn compare(&mut self) -> io::Result<()> {
        let actual = std::mem::replace(&mut self.actual, Ordered::new(1));
        let mut expected = std::mem::take(&mut self.expected).into_iter().peekable();
        let mut lines = Lines::default();
        actual.write_each(|_, text| {
            let new: Value = serde_json::from_slice(text).map_err(io::Error::other)?;
            let here = place(&new);
            while let Some((_, old)) = expected.next_if(|(p, _)| *p < here) {
                lines.push(format!("{} is missing", describe(&old)));
            }
            match expected.next_if(|(p, _)| *p == here) {
                Some((_, old)) => {
                    let mut fields = Vec::new();
                    diff_values("", &old, &new, &mut fields);
                    lines.extend(
                        fields
                            .into_iter()
                            .map(|f| format!("{}: {f}", describe(&old))),
                    );
                }
                None => lines.push(format!("{} is new", describe(&new))),
            }
            Ok(())
        })?;
        lines.extend(expected.map(|(_, old)| format!("{} is missing", describe(&old))));
        self.differences = lines.listed;
        if lines.more > 0 {
            let more = lines.more;
            self.differences
                .push(format!("... and {more} more differences"));
        }
        Ok(())
    }
}

impl Sink for Check {
    fn needs(&self) -> Needs {
        self.inner.needs()
    }

    fn exchange(&mut self, ex: Exchange, block: Option<&Block>) -> io::Result<()> {
        self.actual.push(ex.order(), |out| {
            compact::exchange(out, &report::exchange(&ex));
            Ok(())
        })?;
        self.inner.exchange(ex, block)
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        self.inner.finish(report)?;
        self.compare()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
