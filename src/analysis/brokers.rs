//! Per broker: error streaks, retries, epoch changes, and the summary table.

use std::collections::{BTreeMap, BTreeSet};

use super::{latency_us, Block, Finding};
use crate::diag::Kind;
use crate::kafka::tables::ErrorCode;
use crate::pairing::Exchange;
use crate::report::stats;

/// One broker's row of `summary.brokers`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerStats {
    pub requests: u64,
    pub complete: u64,
    pub unanswered: u64,
    /// Non-NONE error responses by Kafka error name.
    pub errors: BTreeMap<String, u64>,
    /// Ids in the blocks granted to this broker.
    pub ids_granted: i64,
    pub epochs_seen: Vec<i64>,
    /// Latency percentiles over complete exchanges, microseconds.
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
}

/// Exchanges per broker id, in request order.
fn by_broker(exchanges: &[Exchange]) -> BTreeMap<i32, Vec<&Exchange>> {
    let mut map: BTreeMap<i32, Vec<&Exchange>> = BTreeMap::new();
    for ex in exchanges {
        if let Some(broker) = ex.request.broker_id {
            map.entry(broker).or_default().push(ex);
        }
    }
    map
}

fn error_of(ex: &Exchange) -> Option<i16> {
    ex.response.as_ref().and_then(|(_, r)| r.error_code)
}

/// Where an exchange ends in the capture: its response, or its request when unanswered.
fn last_frame(ex: &Exchange) -> u64 {
    ex.response
        .as_ref()
        .map_or(ex.request_meta.frame, |(m, _)| m.frame)
}

fn finding(
    kind: Kind,
    broker: i32,
    ex: &Exchange,
    mut frames: Vec<u64>,
    message: String,
) -> Finding {
    frames.sort_unstable();
    frames.dedup();
    Finding {
        kind,
        broker_id: Some(broker),
        connection: Some(ex.endpoints.connection),
        frames,
        message,
    }
}

/// Error streaks, retries and epoch changes.
pub fn sequences(exchanges: &[Exchange], findings: &mut Vec<Finding>) {
    for (broker, list) in by_broker(exchanges) {
        // Streaks: consecutive answered requests with the same non-NONE error.
        let answered: Vec<&&Exchange> = list.iter().filter(|ex| error_of(ex).is_some()).collect();
        let mut run_start = 0;
        for idx in 1..=answered.len() {
            let same = |a: usize, b: usize| {
                let (Some(x), Some(y)) = (answered.get(a), answered.get(b)) else {
                    return false;
                };
                error_of(x) == error_of(y) && error_of(x) != Some(0)
            };
            if idx < answered.len() && same(run_start, idx) {
                continue;
            }
            let run = answered.get(run_start..idx).unwrap_or_default();
            if let (true, Some(first), Some(last)) = (run.len() >= 2, run.first(), run.last()) {
                let code = error_of(first).unwrap_or_default();
                let connections: BTreeSet<u64> =
                    run.iter().map(|ex| ex.endpoints.connection).collect();
                findings.push(finding(
                    Kind::PidErrorStreak,
                    broker,
                    last,
                    run.iter().map(|ex| last_frame(ex)).collect(),
                    format!(
                        "broker {broker} got {} {} responses in a row (frames {} to {}, over {} connection{})",
                        run.len(),
                        ErrorCode(code).name(),
                        last_frame(first),
                        last_frame(last),
                        connections.len(),
                        if connections.len() == 1 { "" } else { "s" }
                    ),
                ));
            }
            run_start = idx;
        }
        // Retries and epoch changes: each request against the one before.
        for pair in list.windows(2) {
            let [before, after] = pair else { continue };
            // A request pipelined before the error came back is no retry.
            let asked_after = after.request_meta.frame > last_frame(before);
            let failed = match error_of(before) {
                Some(0) => None,
                Some(code) if asked_after => Some(format!("a {} response", ErrorCode(code).name())),
                None if before.response.is_none() => Some("no response".to_owned()),
                _ => None,
            };
            if let Some(why) = failed {
                findings.push(finding(
                    Kind::PidRetry,
                    broker,
                    after,
                    vec![last_frame(before), after.request_meta.frame],
                    format!(
                        "broker {broker} asked again (frame {}) after {why} to its request in frame {}",
                        after.request_meta.frame, before.request_meta.frame
                    ),
                ));
            }
            if let (Some(old), Some(new)) =
                (before.request.broker_epoch, after.request.broker_epoch)
            {
                if old != new {
                    findings.push(finding(
                        Kind::PidBrokerEpochChange,
                        broker,
                        after,
                        vec![before.request_meta.frame, after.request_meta.frame],
                        format!(
                            "broker {broker} changed its epoch from {old} to {new} (frame {})",
                            after.request_meta.frame
                        ),
                    ));
                }
            }
        }
    }
}

/// The per-broker table of the summary.
pub fn table(exchanges: &[Exchange], blocks: &[Block]) -> BTreeMap<i32, BrokerStats> {
    let mut table = BTreeMap::new();
    for (broker, list) in by_broker(exchanges) {
        let mut row = BrokerStats {
            requests: list.len() as u64,
            ..BrokerStats::default()
        };
        let mut epochs = BTreeSet::new();
        let mut latencies = Vec::new();
        for ex in &list {
            match &ex.response {
                Some(_) => row.complete += 1,
                None => row.unanswered += 1,
            }
            if let Some(code) = error_of(ex).filter(|c| *c != 0) {
                *row.errors.entry(ErrorCode(code).name()).or_default() += 1;
            }
            epochs.extend(ex.request.broker_epoch);
            latencies.extend(latency_us(ex));
        }
        row.ids_granted = blocks
            .iter()
            .filter(|b| b.broker_id == broker)
            .map(|b| i64::from(b.len))
            .fold(0i64, i64::saturating_add);
        row.epochs_seen = epochs.into_iter().collect();
        if let Some(l) = stats::latency(&latencies) {
            row.latency_p50_us = Some(l.p50);
            row.latency_p99_us = Some(l.p99);
        }
        table.insert(broker, row);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::super::test_support::exchange;
    use super::*;

    fn run(ex: &[Exchange]) -> Vec<Finding> {
        let mut findings = Vec::new();
        sequences(ex, &mut findings);
        findings
    }

    fn kinds(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.kind.as_str()).collect()
    }

    #[test]
    fn error_streak_is_one_finding_per_run() {
        let f = run(&[
            exchange(1, 1, 5, Some((78, -1, 0, 1))),
            exchange(2, 1, 5, Some((78, -1, 0, 1))),
            exchange(3, 1, 5, Some((78, -1, 0, 1))),
            exchange(4, 1, 5, Some((0, 0, 1000, 1))),
            exchange(5, 2, 5, Some((41, -1, 0, 1))),
        ]);
        let streaks: Vec<&Finding> = f
            .iter()
            .filter(|f| f.kind == Kind::PidErrorStreak)
            .collect();
        assert_eq!(streaks.len(), 1);
        assert_eq!(streaks[0].frames, vec![11, 21, 31]);
        assert!(
            streaks[0]
                .message
                .contains("3 OFFSET_NOT_AVAILABLE responses in a row"),
            "{}",
            streaks[0].message
        );
    }

    #[test]
    fn retry_after_error_or_silence_and_epoch_change() {
        let f = run(&[
            exchange(1, 1, 5, Some((41, -1, 0, 1))),
            exchange(2, 1, 5, None),
            exchange(3, 1, 6, Some((0, 0, 1000, 1))),
            exchange(4, 1, 6, Some((0, 1000, 1000, 1))),
        ]);
        assert_eq!(
            kinds(&f),
            vec!["pid_retry", "pid_retry", "pid_broker_epoch_change"]
        );
        assert_eq!(f[1].frames, vec![20, 30]);
    }

    #[test]
    fn pipelined_request_is_no_retry() {
        // request 2 went out before the error response to request 1 (frame 11) came back
        let mut first = exchange(1, 1, 5, Some((41, -1, 0, 1)));
        if let Some((meta, _)) = first.response.as_mut() {
            meta.frame = 25;
        }
        let f = run(&[first, exchange(2, 1, 5, Some((0, 0, 1000, 1)))]);
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn table_counts_per_broker() {
        let ex = [
            exchange(1, 1, 5, Some((41, -1, 0, 2))),
            exchange(2, 1, 6, Some((0, 0, 1000, 4))),
            exchange(3, 1, 6, None),
            exchange(4, 2, 9, Some((0, 1000, 500, 6))),
        ];
        let mut findings = Vec::new();
        let (blocks, _) = super::super::blocks::find(&ex, &mut findings);
        let t = table(&ex, &blocks);
        let one = &t[&1];
        assert_eq!((one.requests, one.complete, one.unanswered), (3, 2, 1));
        assert_eq!(one.errors.get("NOT_CONTROLLER"), Some(&1));
        assert_eq!(one.ids_granted, 1000);
        assert_eq!(one.epochs_seen, vec![5, 6]);
        assert_eq!(one.latency_p50_us, Some(2000.0));
        assert_eq!(t[&2].ids_granted, 500);
    }
}
