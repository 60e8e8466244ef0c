//! Per broker: error streaks, retries, epoch changes, and the summary table, kept as
//! running state per broker id while exchanges arrive.

use std::collections::{BTreeMap, BTreeSet};

use super::{Finding, StatusCounts};
use crate::diag::obs::{self, AnalysisTable};
use crate::diag::{Observation, RetryAfter};
use crate::kafka::tables::ErrorCode;
use crate::latency::Latencies;
use crate::pairing::{Exchange, Outcome, Status};
use crate::timestamp::Timestamp;

/// One broker's row of `summary.brokers`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerStats {
    pub requests: u64,
    pub statuses: StatusCounts,
    /// Error responses (not NONE) by code.
    pub errors: BTreeMap<ErrorCode, u64>,
    /// Ids in the blocks granted to this broker.
    pub ids_granted: i64,
    pub epochs_seen: Vec<i64>,
    /// The frame of the first request whose epoch was not listed, past
    /// [`MAX_EPOCHS_LISTED`].
    pub epochs_unlisted_from_frame: Option<u64>,
    /// Error responses of codes past the [`MAX_ERRORS_LISTED`] counted in `errors`, and
    /// the request frame of the first.
    pub errors_uncounted: u64,
    pub errors_unlisted_from_frame: Option<u64>,
    /// Latency percentiles over complete exchanges, microseconds.
    pub latency_p50_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    /// False when those come from the fallback histogram (see
    /// [`crate::latency::Summary::percentiles_exact`]).
    pub latency_exact: bool,
}

/// What the previous exchange of a broker left behind.
#[derive(Debug, Clone)]
struct Previous {
    request_frame: u64,
    last_frame: u64,
    status: Status,
    /// The response's error code, when it was read.
    error: Option<ErrorCode>,
    epoch: Option<i64>,
}

impl Previous {
    fn of(ex: &Exchange) -> Self {
        Self {
            request_frame: ex.request_meta.frame,
            last_frame: ex.last_meta().frame,
            status: ex.outcome.status(),
            error: error_of(ex),
            epoch: ex.request.broker_epoch,
        }
    }
}

/// A run of responses with the same error to one broker.
#[derive(Debug, Clone)]
struct Streak {
    code: ErrorCode,
    /// Responses in the run, also those past the frames listed.
    len: u64,
    /// The first [`MAX_STREAK_FRAMES`] responses' frames.
    frames: Vec<u64>,
    /// At most [`MAX_STREAK_CONNECTIONS`].
    connections: BTreeSet<u64>,
    /// A connection past them answered in the run.
    connections_more: bool,
    last_connection: u64,
    /// Where and when its last response came.
    last: (u64, Timestamp),
}

/// Frames of a streak listed in its finding; a longer streak is counted.
const MAX_STREAK_FRAMES: usize = 1000;

/// Distinct connections of a streak counted: a broker opens a handful while it fails, so
/// a capture with more is hostile or broken, and the set must not grow with it (its
/// finding says "more than").
const MAX_STREAK_CONNECTIONS: usize = 1024;

#[derive(Debug)]
struct Broker {
    stats: BrokerStats,
    /// At most [`MAX_EPOCHS_LISTED`].
    epochs: BTreeSet<i64>,
    /// The frame at which an epoch past them came.
    epochs_unlisted_from: Option<u64>,
    latencies: Latencies,
    previous: Option<Previous>,
    /// The run of error responses going on, if any.
    streak: Option<Streak>,
}

/// Broker ids followed, by each table of the analysis keyed by broker id: a cluster has
/// far fewer brokers, and each costs a row (up to 14 KiB of latencies here), so a
/// capture naming more is hostile or broken (`analysis_limit`).
pub const MAX_BROKERS: usize = 1024;

/// Distinct epochs listed per broker: its epoch changes each time it registers again, a
/// handful of times in a capture, so a capture with more is hostile or broken, and the
/// list must not grow with it (`analysis_limit`).
pub const MAX_EPOCHS_LISTED: usize = 64;

/// Distinct error codes counted per broker: Kafka has about 130, so a capture with
/// more is hostile or broken (each of 65,536 codes a row, for each of 1,024 brokers).
pub const MAX_ERRORS_LISTED: usize = 256;

/// Running state of every broker.
#[derive(Debug, Default)]
pub struct Tracker {
    brokers: BTreeMap<i32, Broker>,
    /// Exchanges of brokers past [`MAX_BROKERS`]: counted in the totals, not here.
    unfollowed: u64,
}

fn error_of(ex: &Exchange) -> Option<ErrorCode> {
    ex.outcome.response().and_then(|(_, r)| r.error_code)
}

/// A finding about a broker, shown at time `at` (of the frame it names).
fn finding(
    (broker, connection): (i32, u64),
    frames: Vec<u64>,
    at: Timestamp,
    what: Observation<'_>,
) -> Finding {
    Finding::new(what, (Some(broker), Some(connection), at), frames)
}

impl Streak {
    /// A run begun by `ex`'s response with the error `code`.
    fn start(code: ErrorCode, ex: &Exchange) -> Self {
        let last = ex.last_meta();
        Self {
            code,
            len: 1,
            frames: vec![last.frame],
            connections: BTreeSet::from([ex.endpoints.connection]),
            connections_more: false,
            last_connection: ex.endpoints.connection,
            last: (last.frame, last.timestamp),
        }
    }

    /// `ex`'s response, with the same error, goes on with the run.
    fn extend(&mut self, ex: &Exchange) {
        let last = ex.last_meta();
        self.len += 1;
        if self.frames.len() < MAX_STREAK_FRAMES {
            self.frames.push(last.frame);
        }
        let connection = ex.endpoints.connection;
        if self.connections.len() < MAX_STREAK_CONNECTIONS {
            self.connections.insert(connection);
        } else if !self.connections.contains(&connection) {
            self.connections_more = true;
        }
        self.last_connection = ex.endpoints.connection;
        self.last = (last.frame, last.timestamp);
    }

    /// The `pid_error_streak` finding of a run of two or more.
    fn finding(self, broker: i32) -> Option<Finding> {
        if self.len < 2 {
            return None;
        }
        let error = self.code.name();
        let what = Observation::PidErrorStreak(obs::PidErrorStreak {
            broker_id: broker,
            error: &error,
            count: self.len,
            first_frame: self.frames.first().copied().unwrap_or_default(),
            last_frame: self.last.0,
            connections: self.connections.len() as u64,
            connections_more: self.connections_more,
        });
        Some(finding(
            (broker, self.last_connection),
            self.frames,
            self.last.1,
            what,
        ))
    }
}

impl Broker {
    fn new() -> Self {
        Self {
            stats: BrokerStats::default(),
            epochs: BTreeSet::new(),
            epochs_unlisted_from: None,
            // exact in every format, as the summary's
            latencies: Latencies::in_a_row(),
            previous: None,
            streak: None,
        }
    }

    /// Counts `ex` in the broker's row of the table.
    fn count(&mut self, id: i32, ex: &Exchange, findings: &mut Vec<Finding>) {
        self.stats.requests += 1;
        self.stats.statuses.add(ex.outcome.status());
        let Outcome::Complete { response: r, .. } = &ex.outcome else {
            return;
        };
        if let Some(l) = ex.latency_us() {
            self.latencies.add(l);
        }
        match (r.error_code, r.producer_id_start, r.producer_id_len) {
            (Some(ErrorCode::NONE), Some(start), Some(len)) if start >= 0 && len > 0 => {
                self.stats.ids_granted = self.stats.ids_granted.saturating_add(i64::from(len));
            }
            (Some(code), _, _) if code.is_error() => self.error(id, code, ex, findings),
            _ => {}
        }
    }

    /// Counts an error response by its code while fewer than [`MAX_ERRORS_LISTED`]
    /// codes are; says so at the first code past them.
    fn error(&mut self, id: i32, code: ErrorCode, ex: &Exchange, findings: &mut Vec<Finding>) {
        let stats = &mut self.stats;
        if stats.errors.len() < MAX_ERRORS_LISTED || stats.errors.contains_key(&code) {
            *stats.errors.entry(code).or_default() += 1;
            return;
        }
        stats.errors_uncounted += 1;
        if stats.errors_unlisted_from_frame.is_none() {
            stats.errors_unlisted_from_frame = Some(ex.request_meta.frame);
            let table = (AnalysisTable::BrokerErrors, MAX_ERRORS_LISTED);
            findings.push(limit_reached(table, id, ex));
        }
    }

    /// Lists the epoch `ex`'s request carried, if new, while fewer than
    /// [`MAX_EPOCHS_LISTED`] are; says so at the first one past them.
    fn epoch(&mut self, id: i32, ex: &Exchange, findings: &mut Vec<Finding>) {
        let Some(epoch) = ex.request.broker_epoch else {
            return;
        };
        if self.epochs.len() < MAX_EPOCHS_LISTED {
            self.epochs.insert(epoch);
        } else if self.epochs_unlisted_from.is_none() && !self.epochs.contains(&epoch) {
            self.epochs_unlisted_from = Some(ex.request_meta.frame);
            let table = (AnalysisTable::BrokerEpochs, MAX_EPOCHS_LISTED);
            findings.push(limit_reached(table, id, ex));
        }
    }

    /// Ends or goes on with the run of errors by `ex`'s response, if it was read.
    fn streak(&mut self, id: i32, ex: &Exchange, findings: &mut Vec<Finding>) {
        let Some(code) = error_of(ex) else {
            return;
        };
        match &mut self.streak {
            Some(streak) if code.is_error() && streak.code == code => streak.extend(ex),
            _ => {
                findings.extend(self.streak.take().and_then(|s| s.finding(id)));
                self.streak = code.is_error().then(|| Streak::start(code, ex));
            }
        }
    }
}

/// `pid_retry`: the broker asked again after an error response or none, not pipelined
/// before that answer came.
fn retry(id: i32, before: &Previous, ex: &Exchange, findings: &mut Vec<Finding>) {
    let asked_after = ex.request_meta.frame > before.last_frame;
    let error;
    let after = match (before.status, before.error) {
        (Status::Complete, Some(code)) if code.is_error() && asked_after => {
            error = code.name();
            RetryAfter::Error(&error)
        }
        (Status::Unanswered, _) => RetryAfter::NoResponse,
        (Status::Complete | Status::ResponseUnknown, _) => return,
    };
    let what = Observation::PidRetry(obs::PidRetry {
        frame: ex.request_meta.frame,
        broker_id: id,
        earlier_frame: before.request_frame,
        after,
    });
    findings.push(finding(
        (id, ex.endpoints.connection),
        vec![before.last_frame, ex.request_meta.frame],
        ex.request_meta.timestamp,
        what,
    ));
}

/// `pid_broker_epoch_change`: the broker's epoch differs from its previous request's.
fn epoch_change(id: i32, before: &Previous, ex: &Exchange, findings: &mut Vec<Finding>) {
    let (Some(old), Some(new)) = (before.epoch, ex.request.broker_epoch) else {
        return;
    };
    if old == new {
        return;
    }
    let what = Observation::PidBrokerEpochChange(obs::PidBrokerEpochChange {
        frame: ex.request_meta.frame,
        broker_id: id,
        old_epoch: old,
        new_epoch: new,
        earlier_frame: before.request_frame,
    });
    findings.push(finding(
        (id, ex.endpoints.connection),
        vec![before.request_frame, ex.request_meta.frame],
        ex.request_meta.timestamp,
        what,
    ));
}

/// `analysis_limit`: `table` follows nothing new from broker `id`'s request in `ex` on.
fn limit_reached(table: (AnalysisTable, usize), id: i32, ex: &Exchange) -> Finding {
    let at = (
        Some(id),
        Some(ex.endpoints.connection),
        ex.request_meta.timestamp,
    );
    Finding::analysis_limit(table, ex.request_meta.frame, at)
}

impl Tracker {
    /// One exchange of a broker, in the order exchanges complete: counted in the table,
    /// compared with the broker's previous exchange (retries, epoch changes), and added
    /// to its run of errors.
    pub fn add(&mut self, ex: &Exchange, findings: &mut Vec<Finding>) {
        let Some(id) = ex.request.broker_id else {
            return;
        };
        if self.brokers.len() >= MAX_BROKERS && !self.brokers.contains_key(&id) {
            if self.unfollowed == 0 {
                findings.push(limit_reached((AnalysisTable::Brokers, MAX_BROKERS), id, ex));
            }
            self.unfollowed += 1;
            return;
        }
        let b = self.brokers.entry(id).or_insert_with(Broker::new);
        b.epoch(id, ex, findings);
        b.count(id, ex, findings);
        if let Some(before) = &b.previous {
            retry(id, before, ex, findings);
            epoch_change(id, before, ex, findings);
        }
        b.previous = Some(Previous::of(ex));
        b.streak(id, ex, findings);
    }

    /// Closes the streaks still running at the end.
    pub fn finish(&mut self, findings: &mut Vec<Finding>) {
        for (id, b) in &mut self.brokers {
            findings.extend(b.streak.take().and_then(|s| s.finding(*id)));
        }
    }

    /// The per-broker table of the summary.
    pub fn table(&self) -> BTreeMap<i32, BrokerStats> {
        self.brokers
            .iter()
            .map(|(id, b)| {
                let mut stats = b.stats.clone();
                stats.epochs_seen = b.epochs.iter().copied().collect();
                stats.epochs_unlisted_from_frame = b.epochs_unlisted_from;
                if let Some(l) = b.latencies.summary() {
                    stats.latency_p50_us = Some(l.p50);
                    stats.latency_p99_us = Some(l.p99);
                    stats.latency_exact = l.percentiles_exact;
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
        let mut tracker = Tracker::default();
        for e in ex {
            tracker.add(e, &mut findings);
        }
        tracker.finish(&mut findings);
        findings
    }

    fn kinds(f: &[Finding]) -> Vec<&'static str> {
        f.iter().map(|f| f.kind.as_str()).collect()
    }

    /// The tracker after `ex`, and its `analysis_limit` findings.
    fn limits_after(ex: &[Exchange]) -> (Tracker, Vec<Finding>) {
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        for e in ex {
            tracker.add(e, &mut findings);
        }
        findings.retain(|f| f.kind == Kind::AnalysisLimit);
        (tracker, findings)
    }

    /// A capture naming more broker ids than a cluster has keeps a row for the first
    /// [`MAX_BROKERS`], follows those on, and says once from which frame it stopped.
    #[test]
    fn broker_ids_past_the_limit_are_said_not_followed() {
        let mut findings = Vec::new();
        let mut tracker = Tracker::default();
        let n = MAX_BROKERS as u64 + 10;
        for i in 0..n {
            let mut ex = exchange(i + 1, 1, 7, None);
            ex.request.broker_id = Some(i as i32);
            tracker.add(&ex, &mut findings);
        }
        // a followed broker goes on being followed
        let mut again = exchange(n + 1, 1, 7, None);
        again.request.broker_id = Some(0);
        tracker.add(&again, &mut findings);
        let table = tracker.table();
        assert_eq!(table.len(), MAX_BROKERS);
        assert_eq!(table[&0].requests, 2);
        assert!(!table.contains_key(&(MAX_BROKERS as i32)));
        assert_eq!(tracker.unfollowed, 10);
        let limits: Vec<_> = findings
            .iter()
            .filter(|f| f.kind.as_str() == "analysis_limit")
            .collect();
        assert_eq!(limits.len(), 1, "{findings:?}");
        let first_past = (MAX_BROKERS as u64 + 1) * 10;
        assert_eq!(limits[0].frames, [first_past]);
        assert!(limits[0].facts.contains(&("table", "brokers".into())));
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

    /// A run of errors over a new connection each time (a hostile capture) counts its
    /// first [`MAX_STREAK_CONNECTIONS`] and says there were more.
    #[test]
    fn an_error_streak_counts_its_connections_up_to_a_limit() {
        let streak = |connections: u64| {
            let ex: Vec<Exchange> = (1..=connections + 1)
                .map(|n| {
                    let mut e = exchange(n, 1, 5, Some((78, -1, 0, 1)));
                    e.endpoints.connection = n.min(connections);
                    e
                })
                .collect();
            let f = run(&ex);
            let mut streaks = f.into_iter().filter(|f| f.kind == Kind::PidErrorStreak);
            let streak = streaks.next().expect("one streak");
            assert!(streaks.next().is_none());
            streak
        };
        let limit = MAX_STREAK_CONNECTIONS as u64;
        let within = streak(limit);
        assert!(within.facts.contains(&("connections", limit.into())));
        assert!(!within
            .facts
            .iter()
            .any(|(name, _)| *name == "connections_at_least"));
        assert!(within
            .message
            .contains(&format!("over {limit} connections")));
        let past = streak(limit + 1);
        assert!(past.facts.contains(&("connections", limit.into())));
        assert!(past.facts.contains(&("connections_at_least", true.into())));
        let said = format!("over more than {limit} connections");
        assert!(past.message.contains(&said), "{}", past.message);
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
        if let Outcome::Complete { meta, .. } = &mut first.outcome {
            meta.frame = 25;
        }
        let f = run(&[first, exchange(2, 1, 5, Some((0, 0, 1000, 1)))]);
        assert!(f.is_empty(), "{f:?}");
    }

    /// A broker whose requests carry a new epoch each time (a hostile capture) has the
    /// first [`MAX_EPOCHS_LISTED`] listed, and one `analysis_limit` at the first past them;
    /// epochs already listed come back without one.
    #[test]
    fn a_broker_lists_so_many_epochs_and_says_so_once() {
        let n = MAX_EPOCHS_LISTED as u64 + 10;
        let mut ex: Vec<Exchange> = (1..=n)
            .map(|i| exchange(i, 1, i as i64, Some((0, (i as i64) * 1000, 1000, 1))))
            .collect();
        ex.push(exchange(
            n + 1,
            1,
            3,
            Some((0, (n as i64 + 1) * 1000, 1000, 1)),
        ));
        let (tracker, limits) = limits_after(&ex);
        assert_eq!(limits.len(), 1, "{limits:?}");
        let past = MAX_EPOCHS_LISTED as u64 + 1;
        assert_eq!(limits[0].frames, vec![past * 10]);
        assert!(
            limits[0]
                .message
                .contains("more than 64 distinct broker epochs"),
            "{}",
            limits[0].message
        );
        let row = &tracker.table()[&1];
        let expected: Vec<i64> = (1..=MAX_EPOCHS_LISTED as i64).collect();
        assert_eq!(row.epochs_seen, expected);
        assert_eq!(row.epochs_unlisted_from_frame, Some(past * 10));
    }

    /// A broker answered with a new error code each time (a hostile capture) has the
    /// first [`MAX_ERRORS_LISTED`] codes counted, and one `analysis_limit` at the first
    /// past them; codes already counted go on being counted.
    #[test]
    fn a_broker_counts_so_many_error_codes_and_says_so_once() {
        let n = MAX_ERRORS_LISTED as u64 + 10;
        let mut ex: Vec<Exchange> = (1..=n)
            .map(|i| exchange(i, 1, 5, Some((1000 + i as i16, -1, 0, 1))))
            .collect();
        ex.push(exchange(n + 1, 1, 5, Some((1001, -1, 0, 1))));
        let (tracker, limits) = limits_after(&ex);
        assert_eq!(limits.len(), 1, "{limits:?}");
        assert_eq!(limits[0].frames, vec![(MAX_ERRORS_LISTED as u64 + 1) * 10]);
        assert!(limits[0].facts.contains(&("table", "broker_errors".into())));
        let errors = &tracker.table()[&1].errors;
        assert_eq!(errors.len(), MAX_ERRORS_LISTED);
        assert_eq!(errors[&ErrorCode(1001)], 2);
        let row = &tracker.table()[&1];
        assert_eq!(row.errors_uncounted, 10);
        assert_eq!(
            row.errors_unlisted_from_frame,
            limits[0].frames.first().copied()
        );
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
        let mut tracker = Tracker::default();
        for e in &ex {
            tracker.add(e, &mut findings);
        }
        let t = tracker.table();
        let one = &t[&1];
        let statuses = one.statuses;
        assert_eq!(
            (one.requests, statuses.complete, statuses.unanswered),
            (3, 2, 1)
        );
        assert_eq!(one.errors.get(&ErrorCode(41)), Some(&1));
        assert_eq!(one.ids_granted, 1000);
        assert_eq!(one.epochs_seen, vec![5, 6]);
        assert_eq!(one.latency_p50_us, Some(2000.0));
        assert_eq!(t[&2].ids_granted, 500);
    }
}
