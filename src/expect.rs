//! `--expect FILE`: this run's exchanges against those of a report written before (a
//! golden file), so a CI job can pin what a captured fixture must decode to.
//!
//! Only `exchanges` are compared, so fields that legitimately vary between runs and
//! versions (the tool version, added sections) do not matter. Exchanges are matched by
//! connection, correlation id and request frame; each difference is one line naming the
//! exchange and the field, old → new.

use serde_json::Value;

use crate::report::model::Report;

/// Differences listed before the rest are only counted.
const MAX_LISTED: usize = 50;

/// A field by JSON pointer, `null` when absent (`Value`'s indexing never panics either,
/// but this keeps the crate free of indexing).
fn at<'a>(ex: &'a Value, pointer: &str) -> &'a Value {
    ex.pointer(pointer).unwrap_or(&Value::Null)
}

fn key(ex: &Value) -> (Value, Value, Value) {
    (
        at(ex, "/connection").clone(),
        at(ex, "/correlation_id").clone(),
        at(ex, "/request/frame").clone(),
    )
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

/// The differences between the exchanges of `expected` (a report read back) and
/// `actual`, one line each; empty when they agree.
pub fn compare(expected: &Value, actual: &Report) -> Result<Vec<String>, String> {
    let actual = serde_json::to_value(actual).map_err(|e| e.to_string())?;
    let old = at(expected, "/exchanges")
        .as_array()
        .ok_or("it has no \"exchanges\" array: not a pidshark report")?;
    let new = at(&actual, "/exchanges")
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut lines = Vec::new();
    for ex in old {
        match new.iter().find(|n| key(n) == key(ex)) {
            None => lines.push(format!("{} is missing", describe(ex))),
            Some(n) => {
                let mut fields = Vec::new();
                diff_values("", ex, n, &mut fields);
                lines.extend(fields.into_iter().map(|f| format!("{}: {f}", describe(ex))));
            }
        }
    }
    for ex in &new {
        if !old.iter().any(|o| key(o) == key(ex)) {
            lines.push(format!("{} is new", describe(ex)));
        }
    }
    if lines.len() > MAX_LISTED {
        let more = lines.len() - MAX_LISTED;
        lines.truncate(MAX_LISTED);
        lines.push(format!("... and {more} more differences"));
    }
    Ok(lines)
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
