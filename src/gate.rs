//! CI gates: `--fail-on` conditions checked against a finished report.
//!
//! A condition is a diagnostic kind (`pid_block_overlap`), a severity (each diagnostic at
//! the one it was raised at; `warning` means any warning or error, `error` any error,
//! `info` anything), `error-response` (any
//! AllocateProducerIds response with a non-NONE error code), `unanswered` (any request
//! without a response), a verdict code (`incomplete_capture`: the verdict is that one) or
//! `not-correct` (the verdict is neither `correct` nor `correct_with_warnings`, nor for a
//! metadata log read alone `committed_blocks_consistent` or `committed_blocks_gap`). Counts
//! include diagnostics beyond the listing limit.

use std::fmt;

use crate::analysis::verdict::Code;
use crate::diag::{Kind, Severity};
use crate::kafka::tables::ErrorCode;
use crate::report::model::Report;

/// One `--fail-on` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Kind(Kind),
    Severity(Severity),
    ErrorResponse,
    Unanswered,
    Verdict(Code),
    NotCorrect,
}

impl Condition {
    /// Parses one condition name, with a message listing what is accepted.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "error-response" => Ok(Self::ErrorResponse),
            "unanswered" => Ok(Self::Unanswered),
            "not-correct" => Ok(Self::NotCorrect),
            _ => Severity::from_name(name)
                .map(Self::Severity)
                .or_else(|| Kind::from_name(name).map(Self::Kind))
                .or_else(|| Code::from_name(name).map(Self::Verdict))
                .ok_or_else(|| unknown(name)),
        }
    }

    /// Every name a condition may have: the severities, the two of exchanges, the
    /// verdict's, the kinds.
    pub fn names() -> impl Iterator<Item = &'static str> {
        let fixed = ["info", "warning", "error", "error-response", "unanswered"];
        fixed
            .into_iter()
            .chain(["not-correct"])
            .chain(Code::ALL.iter().map(|c| c.as_str()))
            .chain(Kind::ALL.iter().map(|k| k.as_str()))
    }

    /// How many times the condition holds in `report`.
    pub fn count(self, report: &Report) -> u64 {
        let diag_count = |pred: &dyn Fn(Kind) -> bool| -> u64 {
            report
                .summary
                .diagnostics
                .iter()
                .filter(|(name, _)| Kind::from_name(name).is_some_and(pred))
                .map(|(_, n)| *n)
                .sum()
        };
        match self {
            Self::Kind(kind) => diag_count(&|k| k == kind),
            // each diagnostic at its own severity: a kind's may be lowered to info
            Self::Severity(min) => report
                .summary
                .diagnostics_by_severity
                .iter()
                .filter(|(name, _)| Severity::from_name(name).is_some_and(|s| s >= min))
                .map(|(_, n)| *n)
                .sum(),
            // From the summary, which every format has (ndjson and the serialized JSON
            // path keep no exchanges): responses whose error code is not NONE.
            Self::ErrorResponse => {
                let none = ErrorCode::NONE.name();
                report
                    .summary
                    .error_codes
                    .iter()
                    .filter(|(name, _)| **name != none)
                    .map(|(_, n)| *n)
                    .sum()
            }
            Self::Unanswered => report.summary.exchanges.unanswered,
            Self::Verdict(code) => u64::from(report.verdict.code == code),
            Self::NotCorrect => u64::from(!matches!(
                report.verdict.code,
                Code::Correct
                    | Code::CorrectWithWarnings
                    | Code::CommittedBlocksConsistent
                    | Code::CommittedBlocksGap
            )),
        }
    }
}

/// Why `name` is no condition: the nearest name, when one is near, and every valid one.
fn unknown(name: &str) -> String {
    // Jaro-Winkler similarity, as clap suggests values (above 0.8: near)
    let nearest = Condition::names()
        .map(|valid| (strsim::jaro_winkler(name, valid), valid))
        .filter(|(similarity, _)| *similarity > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let hint = nearest.map_or(String::new(), |(_, valid)| {
        format!(" (did you mean {valid:?}?)")
    });
    let valid: Vec<&str> = Condition::names().collect();
    format!(
        "unknown condition {name:?}{hint}: use one of {} (diagnostic kinds: pidshark --list-kinds)",
        valid.join(", ")
    )
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Kind(kind) => f.write_str(kind.as_str()),
            Self::Severity(s) => f.write_str(s.as_str()),
            Self::ErrorResponse => f.write_str("error-response"),
            Self::Unanswered => f.write_str("unanswered"),
            Self::Verdict(code) => f.write_str(code.as_str()),
            Self::NotCorrect => f.write_str("not-correct"),
        }
    }
}

/// The conditions that hold, each with its count.
pub fn failing(conditions: &[Condition], report: &Report) -> Vec<(Condition, u64)> {
    conditions
        .iter()
        .map(|c| (*c, c.count(report)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_of_condition() {
        assert_eq!(Condition::parse("unanswered"), Ok(Condition::Unanswered));
        assert_eq!(
            Condition::parse("error-response"),
            Ok(Condition::ErrorResponse)
        );
        assert_eq!(
            Condition::parse("warning"),
            Ok(Condition::Severity(Severity::Warning))
        );
        assert_eq!(
            Condition::parse("pid_block_overlap"),
            Ok(Condition::Kind(Kind::PidBlockOverlap))
        );
        assert_eq!(
            Condition::parse("incomplete_capture"),
            Ok(Condition::Verdict(Code::IncompleteCapture))
        );
        assert_eq!(Condition::parse("not-correct"), Ok(Condition::NotCorrect));
        assert!(Condition::parse("pid_block_overlaps")
            .unwrap_err()
            .contains("unknown condition"));
    }
}
