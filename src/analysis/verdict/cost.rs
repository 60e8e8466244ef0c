//! What a capture's damage, or pidshark's own limits, left the answer without: the
//! verdict's counts are of what was read, and these say what that reading could not
//! reach. Judged only where something was lost (a limit with `damage` or `own`): in a
//! whole capture, a leader not proven before its first message is the timeline's to say,
//! not a loss.

use super::{counted, Evidence};

crate::names::closed_set! {
    /// What the answer lacks.
    pub enum CostKind {
        RequestsNotRead = "requests_not_read",
        BrokersUnknown = "brokers_unknown",
        LeadersUnnamed = "leaders_unnamed",
        LeaderUnknown = "leader_unknown",
    }
}

/// One thing the answer lacks, with its count.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub kind: CostKind,
    pub count: u64,
    /// A phrase with the count, to follow "the answer lacks".
    pub text: String,
}

/// What the answer lacks, most telling first; empty when nothing was lost.
pub fn costs(e: &Evidence<'_>, lost: bool) -> Vec<Cost> {
    if !lost {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut add = |kind, count: u64, text: String| {
        if count > 0 {
            out.push(Cost { kind, count, text });
        }
    };
    // a response whose request was not read has no API: it may have been any
    let n = e.unmatched_responses;
    add(
        CostKind::RequestsNotRead,
        n,
        format!(
            "the requests of {} (their APIs unknown: any producer grants among them are not counted)",
            counted(n, "response")
        ),
    );
    let p = e.producers;
    add(
        CostKind::BrokersUnknown,
        p.broker_unknown,
        format!(
            "the broker of {} of {} read (no message read maps its address to a broker id, so a grant from another broker's block is not found)",
            p.broker_unknown,
            counted(p.exchanges, "InitProducerId exchange")
        ),
    );
    // only where quorum messages, which name the leader and its epoch, were not read
    let quorum_unread = quorum_messages_unread(e);
    let led: Vec<_> = e.controllers.iter().filter_map(|p| p.led).collect();
    let unnamed = led
        .iter()
        .filter(|l| l.controller_id.is_none() || l.epoch.is_none())
        .count() as u64;
    if !quorum_unread.is_empty() {
        add(
            CostKind::LeadersUnnamed,
            unnamed,
            format!(
                "the leader's id or epoch in {unnamed} of {} of controller leadership ({} messages not fully read)",
                counted(led.len() as u64, "span"),
                quorum_unread.join(" and ")
            ),
        );
    }
    let throughout = led.is_empty() && !e.controllers.is_empty();
    add(
        CostKind::LeaderUnknown,
        u64::from(throughout),
        "who led the controller quorum (no quorum message or AllocateProducerIds answer read shows it)".to_owned(),
    );
    out
}

/// `the answer lacks a, b and c`, or nothing.
pub fn sentence(costs: &[Cost]) -> Option<String> {
    let parts: Vec<&str> = costs.iter().map(|c| c.text.as_str()).collect();
    match parts.split_last() {
        None => None,
        Some((last, [])) => Some(format!("the answer lacks {last}")),
        Some((last, rest)) => Some(format!("the answer lacks {} and {last}", rest.join(", "))),
    }
}

/// The quorum messages not fully read, by API: `4 BeginQuorumEpoch`, `10 Vote`.
fn quorum_messages_unread(e: &Evidence<'_>) -> Vec<String> {
    use crate::diag::Kind;
    use crate::kafka::cluster::{BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, VOTE};
    const QUORUM: [crate::kafka::tables::ApiKey; 3] = [BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, VOTE];
    let unread = e.diagnostics.undecoded_by_api(&[
        Kind::KafkaMessageTruncated,
        Kind::KafkaDecodeError,
        Kind::KafkaUnsupportedVersion,
    ]);
    QUORUM
        .iter()
        .filter_map(|api| {
            let n = unread.get(&api.0).copied().unwrap_or(0);
            (n > 0).then(|| format!("{n} {}", api.name()))
        })
        .collect()
}
