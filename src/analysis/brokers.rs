//! Per broker: error streaks, retries, epoch changes, and the summary table, kept as
//! running state per broker id while exchanges arrive.

use std::collections::{BTreeMap, BTreeSet};

use super::{latency_us, Finding};
use crate::capture::Timestamp;
use crate::diag::{Observation, RetryAfter};
use crate::kafka::tables::ErrorCode;
use crate::pairing::Exchange;
use crate::report::stats::Latencies;

/// One broker's row of `summary.brokers`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerStats {
    pub requests: u64,
    pub complete: u64,
    pub unanswered: u64,
    /// Without a response that the capture may have lost.
    pub response_unknown: u64,
    /// Non-NONE error responses by Kafka error name.
    pub errors: BTreeMap<String, u64>,
    /// Ids in the blocks granted to this broker.
    pub ids_granted: i64,
    pub epochs_seen: Vec<i64>,
    /// Latency percentiles over complete exchanges, microseconds.
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
}

/// What the previous exchange of a broker left behind.
#[derive(Debug, Clone)]
struct Previous {
    request_frame: u64,
    last_frame: u64,
    /// `Some(code)` for a decoded response, `None` when unanswered or undecoded.
    error: Option<i16>,
    answered: bool,
    /// Without a response that the capture may have lost: no ground for a retry.
    response_unknown: bool,
    epoch: Option<i64>,
}

/// A run of the same error to one broker.
#[derive(Debug, Clone)]
struct Streak {
    code: i16,
    frames: Vec<u64>,
    connections: BTreeSet<u64>,
    last_connection: u64,
    /// Where and when its last response came (its frames stop at [`MAX_STREAK_FRAMES`]).
    last: (u64, Timestamp),
}

/// Frames of a streak listed in its finding; a longer streak is counted.
const MAX_STREAK_FRAMES: usize = 1000;

#[derive(Debug)]
struct Broker {
    stats: BrokerStats,
    epochs: BTreeSet<i64>,
    latencies: Latencies,
    previous: Option<Previous>,
    streak: Option<Streak>,
    streak_len: u64,
}

/// Running state of every broker.
#[derive(Debug)]
pub struct Tracker {
    exact_latency: bool,
    brokers: BTreeMap<i32, Broker>,
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

/// When it ends there.
fn last_at(ex: &Exchange) -> Timestamp {
    ex.response
        .as_ref()
        .map_or(ex.request_meta.timestamp, |(m, _)| m.timestamp)
}

/// A finding about a broker, shown at time `at` (of the frame it names).
fn finding(
    (broker, connection): (i32, u64),
    mut frames: Vec<u64>,
    at: Timestamp,
    what: Observation<'_>,
) -> Finding {
    frames.sort_unstable();
    frames.dedup();
    Finding {
        kind: what.kind(),
        broker_id: Some(broker),
        connection: Some(connection),
        frames,
        at: (at),
        facts: what.facts(),
        message: what.to_string(),
    }
}

fn close_streak(broker: i32, streak: Option<Streak>, len: u64, findings: &mut Vec<Finding>) {
    let Some(streak) = streak else { return };
    if len < 2 {
        return;
    }
    let error = ErrorCode(streak.code).name();
    let what = Observation::PidErrorStreak {
        broker_id: broker,
        error: &error,
        count: len,
        first_frame: streak.frames.first().copied().unwrap_or_default(),
        last_frame: streak.last.0,
        connections: streak.connections.len() as u64,
    };
    findings.push(finding(
        (broker, streak.last_connection),
        streak.frames,
        streak.last.1,
        what,
    ));
}

impl Tracker {
    pub fn new(exact_latency: bool) -> Self {
        Self {
            exact_latency,
            brokers: BTreeMap::new(),
        }
    }

    /// One exchange of a broker, in the order exchanges complete.
    pub fn add(&mut self, ex: &Exchange, findings: &mut Vec<Finding>) {
        let Some(id) = ex.request.broker_id else {
            return;
        };
        let exact = self.exact_latency;
        let b = self.brokers.entry(id).or_insert_with(|| Broker {
            stats: BrokerStats::default(),
            epochs: BTreeSet::new(),
            // per broker within 1%: a broker's p50/p99 need no more, and there may be many
            latencies: Latencies::with_digits(exact, 2),
            previous: None,
            streak: None,
            streak_len: 0,
        });
        let connection = ex.endpoints.connection;
        // the table
        b.stats.requests += 1;
        match &ex.response {
            Some(_) => b.stats.complete += 1,
            None if ex.response_unknown => b.stats.response_unknown += 1,
            None => b.stats.unanswered += 1,
        }
        let error = error_of(ex);
        if let Some(code) = error.filter(|c| *c != 0) {
            *b.stats.errors.entry(ErrorCode(code).name()).or_default() += 1;
        }
        b.epochs.extend(ex.request.broker_epoch);
        if let Some(l) = latency_us(ex) {
            b.latencies.add(l);
        }
        if let (Some(0), Some((_, resp))) = (error, &ex.response) {
            if let (Some(start), Some(len)) = (resp.producer_id_start, resp.producer_id_len) {
                if start >= 0 && len > 0 {
                    b.stats.ids_granted = b.stats.ids_granted.saturating_add(i64::from(len));
                }
            }
        }
        // retries and epoch changes, against the previous exchange
        if let Some(before) = &b.previous {
            // a request pipelined before the error came back is no retry
            let asked_after = ex.request_meta.frame > before.last_frame;
            let error;
            let failed = match before.error {
                Some(0) => None,
                Some(code) if asked_after => {
                    error = ErrorCode(code).name();
                    Some(RetryAfter::Error(&error))
                }
                None if !before.answered && !before.response_unknown => {
                    Some(RetryAfter::NoResponse)
                }
                _ => None,
            };
            if let Some(after) = failed {
                let what = Observation::PidRetry {
                    frame: ex.request_meta.frame,
                    broker_id: id,
                    earlier_frame: before.request_frame,
                    after,
                };
                findings.push(finding(
                    (id, connection),
                    vec![before.last_frame, ex.request_meta.frame],
                    ex.request_meta.timestamp,
                    what,
                ));
            }
            if let (Some(old), Some(new)) = (before.epoch, ex.request.broker_epoch) {
                if old != new {
                    let what = Observation::PidBrokerEpochChange {
                        frame: ex.request_meta.frame,
                        broker_id: id,
                        old_epoch: old,
                        new_epoch: new,
                        earlier_frame: before.request_frame,
                    };
                    findings.push(finding(
                        (id, connection),
                        vec![before.request_frame, ex.request_meta.frame],
                        ex.request_meta.timestamp,
                        what,
                    ));
                }
            }
        }
        b.previous = Some(Previous {
            request_frame: ex.request_meta.frame,
            last_frame: last_frame(ex),
            error,
            answered: ex.response.is_some(),
            response_unknown: ex.response_unknown,
            epoch: ex.request.broker_epoch,
        });
        // streaks: answered exchanges only
        if let Some(code) = error {
            let continues = code != 0 && b.streak.as_ref().is_some_and(|s| s.code == code);
            if continues {
                b.streak_len += 1;
                if let Some(s) = b.streak.as_mut() {
                    if s.frames.len() < MAX_STREAK_FRAMES {
                        s.frames.push(last_frame(ex));
                    }
                    s.connections.insert(connection);
                    s.last_connection = connection;
                    s.last = (last_frame(ex), last_at(ex));
                }
            } else {
                close_streak(id, b.streak.take(), b.streak_len, findings);
                b.streak_len = 0;
                if code != 0 {
                    b.streak = Some(Streak {
                        code,
                        frames: vec![last_frame(ex)],
                        connections: BTreeSet::from([connection]),
                        last_connection: connection,
                        last: (last_frame(ex), last_at(ex)),
                    });
                    b.streak_len = 1;
                }
            }
        }
    }

    /// Closes the streaks still running at the end.
    pub fn finish(&mut self, findings: &mut Vec<Finding>) {
        for (id, b) in &mut self.brokers {
            close_streak(*id, b.streak.take(), b.streak_len, findings);
        }
    }

    /// The per-broker table of the summary.
    pub fn table(&self) -> BTreeMap<i32, BrokerStats> {
        self.brokers
            .iter()
            .map(|(id, b)| {
                let mut stats = b.stats.clone();
                stats.epochs_seen = b.epochs.iter().copied().collect();
                if let Some(l) = b.latencies.summary() {
                    stats.latency_p50_us = Some(l.p50);
                    stats.latency_p99_us = Some(l.p99);
                }
                (*id, stats)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::exchange;
    use super::*;
    use crate::diag::Kind;

    fn run(ex: &[Exchange]) -> Vec<Finding> {
        let mut findings = Vec::new();
        let mut tracker = Tracker::new(true);
        for e in ex {
            tracker.add(e, &mut findings);
        }
        tracker.finish(&mut findings);
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
        let mut tracker = Tracker::new(true);
        for e in &ex {
            tracker.add(e, &mut findings);
        }
        let t = tracker.table();
        let one = &t[&1];
        assert_eq!((one.requests, one.complete, one.unanswered), (3, 2, 1));
        assert_eq!(one.errors.get("NOT_CONTROLLER"), Some(&1));
        assert_eq!(one.ids_granted, 1000);
        assert_eq!(one.epochs_seen, vec![5, 6]);
        assert_eq!(one.latency_p50_us, Some(2000.0));
        assert_eq!(t[&2].ids_granted, 500);
    }
}
