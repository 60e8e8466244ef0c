//! The first line of `--format text`: did the controller hand out producer IDs correctly?
//! Read from the findings of the analysis and the exchanges' counts, most serious first.

use crate::report::model::{PidFinding, Report};

/// How bad the verdict is, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grade {
    Wrong,
    Unsure,
    Warned,
    Right,
    Nothing,
}

/// The verdict line, and how bad it is. `blocks`: blocks granted in the capture.
pub fn verdict(report: &Report, blocks: u64) -> (Grade, String) {
    let findings = &report.producer_id_blocks.findings;
    let first = |kind: &str| findings.iter().find(|f| f.kind == kind);
    let count = |kind: &str| findings.iter().filter(|f| f.kind == kind).count();
    let more = |kind: &str| match count(kind) {
        0 | 1 => String::new(),
        n => format!(" ({n} in all)"),
    };
    let exchanges = &report.summary.exchanges;
    if exchanges.total == 0 {
        return (
            Grade::Nothing,
            format!(
                "NO ALLOCATEPRODUCERIDS EXCHANGES: nothing to judge in {} packets",
                report.summary.packets
            ),
        );
    }
    if let Some(f) = first("pid_block_overlap") {
        let text = format!("DUPLICATE PRODUCER IDS: {}{}", f.message, more(f.kind));
        return (Grade::Wrong, text);
    }
    if let Some(f) = first("pid_block_regression") {
        let text = format!("PRODUCER IDS WENT BACKWARDS: {}{}", f.message, more(f.kind));
        return (Grade::Wrong, text);
    }
    if blocks == 0 {
        return (Grade::Unsure, no_grant(report));
    }
    let brokers = report.summary.brokers.len();
    let granted = format!(
        "{blocks} block{} granted to {brokers} broker{} without overlap or regression",
        plural(blocks as usize),
        plural(brokers)
    );
    let doubts = doubts(report);
    if !doubts.is_empty() {
        let text = format!(
            "CORRECT AS FAR AS CAPTURED: {granted}, but {}",
            doubts.join(", ")
        );
        return (Grade::Unsure, text);
    }
    let warnings = warnings(findings);
    if !warnings.is_empty() {
        let text = format!("CORRECT, WITH WARNINGS: {granted}; {}", warnings.join(", "));
        return (Grade::Warned, text);
    }
    (Grade::Right, format!("CORRECT: {granted}"))
}

/// Requests, and not one block granted: how they were answered.
fn no_grant(report: &Report) -> String {
    let s = &report.summary;
    let mut answers: Vec<String> = s
        .error_codes
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    if s.exchanges.unanswered + s.exchanges.response_unknown > 0 {
        answers.push(format!(
            "no answer {}",
            s.exchanges.unanswered + s.exchanges.response_unknown
        ));
    }
    format!(
        "NO PRODUCER IDS GRANTED: {} request{}, answered {}",
        s.exchanges.total,
        plural(s.exchanges.total as usize),
        answers.join(", ")
    )
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// What keeps the capture from showing every grant: exchanges without a known answer,
/// and AllocateProducerIds messages that could not be read.
fn doubts(report: &Report) -> Vec<String> {
    let s = &report.summary;
    let diag = |kind: &str| s.diagnostics.get(kind).copied().unwrap_or(0);
    let mut doubts = Vec::new();
    if s.exchanges.response_unknown > 0 {
        doubts.push(format!(
            "{} request{} whose response the capture may have lost",
            s.exchanges.response_unknown,
            plural(s.exchanges.response_unknown as usize)
        ));
    }
    if s.exchanges.unanswered > 0 {
        doubts.push(format!(
            "{} request{} unanswered",
            s.exchanges.unanswered,
            plural(s.exchanges.unanswered as usize)
        ));
    }
    let unread = diag("kafka_decode_error") + diag("kafka_message_truncated");
    if unread > 0 {
        doubts.push(format!(
            "{unread} AllocateProducerIds message{} not fully read",
            plural(unread as usize)
        ));
    }
    doubts
}

/// The warnings among the findings, by kind with their counts.
fn warnings(findings: &[PidFinding]) -> Vec<String> {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for f in findings.iter().filter(|f| f.severity == "warning") {
        match kinds.iter_mut().find(|(k, _)| *k == f.kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((f.kind, 1)),
        }
    }
    kinds.iter().map(|(k, n)| format!("{n} {k}")).collect()
}
