//! Analysis of producer-ID allocation: from paired exchanges to the answer a post-mortem
//! needs: which blocks of producer IDs the controller handed out, to whom and when, and
//! what was wrong with them.
//!
//! In: the AllocateProducerIds exchanges, sorted. Out: [`Analysis`]: the blocks in time
//! order, the findings (each also a diagnostic, with the frames involved) and a table per
//! broker. Only decoded values are used: an exchange missing a field takes no part in
//! the rules that need it.

mod blocks;
mod brokers;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::capture::Timestamp;
use crate::diag::{Diagnostics, Kind};
use crate::pairing::Exchange;

pub use brokers::BrokerStats;

/// Default floor for a slow response, in microseconds.
pub const SLOW_FLOOR_US: f64 = 100_000.0;
/// Default: slow means this many times the capture's median latency (and above the floor).
pub const SLOW_MEDIAN_FACTOR: f64 = 10.0;

/// What counts as a slow response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlowRule {
    /// `max(100 ms, 10 × median latency)`.
    Default,
    /// Above this many milliseconds.
    Millis(f64),
}

/// A block of producer IDs granted by a successful response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub start: i64,
    /// Last id of the block, inclusive.
    pub end: i64,
    pub len: i32,
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub connection: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub correlation_id: i32,
    pub request_frame: u64,
    pub response_frame: u64,
    /// Time of the response.
    pub timestamp: Timestamp,
}

/// Something wrong, or worth knowing, about the allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: Kind,
    pub broker_id: Option<i32>,
    pub connection: Option<u64>,
    /// Frames involved, in packet order; the last is where the finding shows.
    pub frames: Vec<u64>,
    pub message: String,
}

/// Everything the analysis found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analysis {
    pub blocks: Vec<Block>,
    /// The most common block length, if there are blocks.
    pub usual_len: Option<i32>,
    pub findings: Vec<Finding>,
    pub brokers: BTreeMap<i32, BrokerStats>,
    /// Latency above which a response is slow, in microseconds, when there are latencies.
    pub slow_threshold_us: Option<f64>,
}

/// Latency of a complete exchange in microseconds.
pub(crate) fn latency_us(ex: &Exchange) -> Option<f64> {
    let (meta, _) = ex.response.as_ref()?;
    let nanos = meta.timestamp.as_nanos() - ex.request_meta.timestamp.as_nanos();
    Some(nanos as f64 / 1000.0)
}

/// The median of `values` (the lower middle for an even count); `None` when empty.
fn median(values: &mut [f64]) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let idx = values.len().checked_sub(1)? / 2;
    values.get(idx).copied()
}

fn slow_responses(
    exchanges: &[Exchange],
    rule: SlowRule,
    findings: &mut Vec<Finding>,
) -> Option<f64> {
    let mut latencies: Vec<f64> = exchanges.iter().filter_map(latency_us).collect();
    let threshold = match rule {
        SlowRule::Millis(ms) => ms * 1000.0,
        SlowRule::Default => (median(&mut latencies)? * SLOW_MEDIAN_FACTOR).max(SLOW_FLOOR_US),
    };
    for ex in exchanges {
        let (Some(latency), Some((meta, _))) = (latency_us(ex), &ex.response) else {
            continue;
        };
        if latency > threshold {
            findings.push(Finding {
                kind: Kind::PidSlowResponse,
                broker_id: ex.request.broker_id,
                connection: Some(ex.endpoints.connection),
                frames: vec![ex.request_meta.frame, meta.frame],
                message: format!(
                    "the response to correlation id {} took {:.1} ms, above the {:.1} ms threshold",
                    ex.correlation_id,
                    latency / 1000.0,
                    threshold / 1000.0
                ),
            });
        }
    }
    Some(threshold)
}

/// Runs every rule over `exchanges` (sorted by request frame). Findings are also pushed
/// to `diags`.
pub fn analyse(exchanges: &[Exchange], slow: SlowRule, diags: &mut Diagnostics) -> Analysis {
    let mut findings = Vec::new();
    let (blocks, usual_len) = blocks::find(exchanges, &mut findings);
    brokers::sequences(exchanges, &mut findings);
    let slow_threshold_us = slow_responses(exchanges, slow, &mut findings);
    findings.sort_by(|a, b| {
        a.frames
            .last()
            .cmp(&b.frames.last())
            .then(a.kind.cmp(&b.kind))
    });
    for f in &findings {
        diags.push(
            f.kind,
            f.connection,
            f.frames.last().copied(),
            f.message.clone(),
        );
    }
    Analysis {
        brokers: brokers::table(exchanges, &blocks),
        blocks,
        usual_len,
        findings,
        slow_threshold_us,
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Builds exchanges for the analysis tests without a capture.

    use crate::capture::Timestamp;
    use crate::kafka::allocate_producer_ids::{Request, Response};
    use crate::pairing::{Endpoints, Exchange, MessageMeta};

    /// Exchange number `n` (its frames and times grow with `n`); `response` is
    /// `(error, start, len, latency_ms)`.
    pub fn exchange(
        n: u64,
        broker: i32,
        epoch: i64,
        response: Option<(i16, i64, i32, u64)>,
    ) -> Exchange {
        let meta = |frame: u64, millis: u64| MessageMeta {
            frame,
            first_frame: frame,
            timestamp: Timestamp {
                secs: 1_700_000_000 + (millis / 1000) as i64,
                nanos: ((millis % 1000) * 1_000_000) as u32,
                nano: false,
            },
            size: 28,
        };
        Exchange {
            endpoints: Endpoints {
                connection: u64::from(broker as u32),
                client: format!("10.0.0.{broker}:40000").parse().unwrap(),
                server: "10.0.0.100:9093".parse().unwrap(),
            },
            correlation_id: n as i32,
            api_version: 0,
            request_meta: meta(n * 10, n * 1000),
            request: Request {
                client_id: Some(None),
                header_tagged_fields: Some(vec![]),
                broker_id: Some(broker),
                broker_epoch: Some(epoch),
                tagged_fields: Some(vec![]),
                problem: None,
                raw: vec![],
            },
            response: response.map(|(error, start, len, latency_ms)| {
                (
                    meta(n * 10 + 1, n * 1000 + latency_ms),
                    Response {
                        header_tagged_fields: Some(vec![]),
                        throttle_time_ms: Some(0),
                        error_code: Some(error),
                        producer_id_start: Some(start),
                        producer_id_len: Some(len),
                        tagged_fields: Some(vec![]),
                        problem: None,
                        raw: vec![],
                    },
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::exchange;
    use super::*;

    fn kinds(a: &Analysis) -> Vec<&'static str> {
        a.findings.iter().map(|f| f.kind.as_str()).collect()
    }

    #[test]
    fn healthy_allocation_has_no_findings() {
        let ex = vec![
            exchange(1, 1, 5, Some((0, 0, 1000, 2))),
            exchange(2, 2, 5, Some((0, 1000, 1000, 3))),
            exchange(3, 1, 5, Some((0, 2000, 1000, 2))),
        ];
        let mut diags = Diagnostics::default();
        let a = analyse(&ex, SlowRule::Default, &mut diags);
        assert_eq!(kinds(&a), Vec::<&str>::new());
        assert_eq!(a.blocks.len(), 3);
        assert_eq!(a.blocks[2].end, 2999);
        assert_eq!(a.usual_len, Some(1000));
        assert!(diags.is_empty());
    }

    #[test]
    fn slow_response_by_default_rule_and_by_threshold() {
        let mut ex: Vec<Exchange> = (1..=5)
            .map(|n| exchange(n, 1, 5, Some((0, (n as i64) * 1000, 1000, 2))))
            .collect();
        ex.push(exchange(6, 1, 5, Some((0, 6000, 1000, 400))));
        let mut diags = Diagnostics::default();
        let a = analyse(&ex, SlowRule::Default, &mut diags);
        assert_eq!(kinds(&a), vec!["pid_slow_response"]);
        assert_eq!(a.findings[0].frames, vec![60, 61]);
        assert_eq!(a.slow_threshold_us, Some(100_000.0));
        let a = analyse(&ex, SlowRule::Millis(1.0), &mut Diagnostics::default());
        assert_eq!(a.findings.len(), 6);
    }
}
