//! Filters (`--broker`, `--connection`, `--since`, `--until`, `--errors-only`, `--frame`):
//! which exchanges, and the blocks they granted, the output shows. They sit between the
//! analysis and the format's sink, so every format shows the same exchanges; the summary,
//! the findings and the diagnostics still describe the whole capture, and the report
//! names the filters applied (`filters`).

use std::collections::HashSet;
use std::io;
use std::sync::OnceLock;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::model::{self, Report};
use super::sink::{Analysed, Needs, Sink};
use crate::analysis::writes::WriteJudged;
use crate::analysis::{Placed, Placement};
use crate::kafka::decoded::Undecoded;
use crate::kafka::tables::ErrorCode;
use crate::pairing::{
    ApiExchange, ClusterEvent, Exchange, Granting, GrantsProducerIds, Outcome, WriteExchange,
};
use crate::timestamp::Timestamp;

/// A bound of `--since` or `--until`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeBound {
    /// A time of day (RFC 3339).
    At(Timestamp),
    /// Seconds after the capture's first packet.
    AfterStart(f64),
}

impl TimeBound {
    /// `2026-11-29T13:54:58.2Z` (RFC 3339, any offset) or seconds after the first packet
    /// (`12`, `0.5`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(secs) = text.parse::<f64>() {
            return match secs.is_finite() && secs >= 0.0 {
                true => Ok(Self::AfterStart(secs)),
                false => Err(format!(
                    "{text:?}: seconds after the first packet are 0 or more"
                )),
            };
        }
        let at = OffsetDateTime::parse(text, &Rfc3339).map_err(|e| {
            format!("{text:?} is neither an RFC 3339 time (2026-11-29T13:54:58Z) nor seconds after the first packet ({e})")
        })?;
        let nanos = at.unix_timestamp_nanos();
        Ok(Self::At(Timestamp {
            secs: i64::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(i64::MAX),
            nanos: u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0),
            nano: true,
        }))
    }

    /// The bound as a time, once the first packet's is known.
    fn resolve(self, first: Option<Timestamp>) -> Option<i128> {
        match self {
            Self::At(at) => Some(at.as_nanos()),
            // saturating: `--since 1e300` is far in the future, not an overflow
            Self::AfterStart(secs) => {
                first.map(|f| f.as_nanos().saturating_add((secs * 1e9) as i128))
            }
        }
    }
}

/// The filters of a run; none by default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub broker: Option<i32>,
    pub connection: Option<u64>,
    pub since: Option<TimeBound>,
    pub until: Option<TimeBound>,
    /// Only exchanges without a NONE answer read whole: error responses, no answer,
    /// undecoded messages.
    pub errors_only: bool,
    /// Only the exchange with a message in this frame.
    pub frame: Option<u64>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether the output shows `ex`; `first`: the capture's first packet's time.
    pub fn passes(&self, ex: &Exchange, first: Option<Timestamp>) -> bool {
        let at = ex.request_meta.timestamp.as_nanos();
        let bound = |b: Option<TimeBound>| b.and_then(|b| b.resolve(first));
        let in_frames = |f: u64| {
            let within = |first: u64, last: u64| (first..=last).contains(&f);
            within(ex.request_meta.first_frame, ex.request_meta.frame)
                || ex
                    .outcome
                    .response()
                    .is_some_and(|(m, _)| within(m.first_frame, m.frame))
        };
        self.broker.is_none_or(|b| ex.request.broker_id == Some(b))
            && self.connection.is_none_or(|c| ex.endpoints.connection == c)
            && bound(self.since).is_none_or(|since| at >= since)
            && bound(self.until).is_none_or(|until| at <= until)
            && (!self.errors_only || is_error(ex))
            && self.frame.is_none_or(in_frames)
    }

    /// Whether an exchange that may grant a producer id passes: by its broker (the one
    /// that answered, else the block holding its id), connection, request time, error
    /// and frames.
    pub fn passes_producer(
        &self,
        granting: &Granting,
        placed: &Placed,
        first: Option<Timestamp>,
    ) -> bool {
        match granting {
            Granting::InitProducerId(ex) => self.passes_granting(ex, placed, first),
            Granting::EndTxn(ex) => self.passes_granting(ex, placed, first),
        }
    }

    fn passes_granting<A: GrantsProducerIds>(
        &self,
        px: &ApiExchange<A>,
        placed: &Placed,
        first: Option<Timestamp>,
    ) -> bool {
        let at = px.request_meta.timestamp.as_nanos();
        let bound = |b: Option<TimeBound>| b.and_then(|b| b.resolve(first));
        let in_frames = |f: u64| {
            let within = |first: u64, last: u64| (first..=last).contains(&f);
            within(px.request_meta.first_frame, px.request_meta.frame)
                || px
                    .outcome
                    .response()
                    .is_some_and(|(m, _)| within(m.first_frame, m.frame))
        };
        // with no broker known by address, the block of its broker's that holds the id
        let broker = placed.broker.map(|(id, _)| id).or(match placed.placement {
            Some(p @ (Placement::InBlock(_) | Placement::PreviousBlock { .. })) => {
                p.block().map(|b| b.broker_id)
            }
            _ => None,
        });
        let failed = match &px.outcome {
            Outcome::Complete { response, .. } => {
                A::granted(response).0 != Some(ErrorCode::NONE) || response.problem().is_some()
            }
            Outcome::Unanswered | Outcome::ResponseUnknown => true,
        };
        self.broker.is_none_or(|b| broker == Some(b))
            && self.connection.is_none_or(|c| px.endpoints.connection == c)
            && bound(self.since).is_none_or(|since| at >= since)
            && bound(self.until).is_none_or(|until| at <= until)
            && (!self.errors_only || failed)
            && self.frame.is_none_or(in_frames)
    }

    /// Whether the output shows a cluster message: it has no broker of its own to match
    /// and answers nothing, so `--broker` and `--errors-only` pass none.
    pub fn passes_cluster(&self, ev: &ClusterEvent, first: Option<Timestamp>) -> bool {
        let at = ev.meta.timestamp.as_nanos();
        let bound = |b: Option<TimeBound>| b.and_then(|b| b.resolve(first));
        self.broker.is_none()
            && !self.errors_only
            && self.connection.is_none_or(|c| ev.endpoints.connection == c)
            && bound(self.since).is_none_or(|since| at >= since)
            && bound(self.until).is_none_or(|until| at <= until)
            && self
                .frame
                .is_none_or(|f| (ev.meta.first_frame..=ev.meta.frame).contains(&f))
    }

    /// The filters as the report names them, the time bounds as times; `shown`:
    /// exchanges they let through.
    fn describe(
        &self,
        first: Option<Timestamp>,
        frame_holds: Option<String>,
        shown: u64,
    ) -> model::Filters {
        let at = |b: Option<TimeBound>| {
            b.and_then(|b| b.resolve(first)).map(|nanos| {
                let sub_second = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
                Timestamp {
                    secs: i64::try_from(nanos.div_euclid(1_000_000_000)).unwrap_or(i64::MAX),
                    nanos: sub_second,
                    // nine digits only where the time needs them, as the capture writes
                    nano: sub_second % 1000 != 0,
                }
            })
        };
        let time = |b| at(b).map(|t| t.to_rfc3339());
        let unix = |b| at(b).map(model::UnixTime);
        model::Filters {
            broker: self.broker,
            connection: self.connection,
            since: time(self.since),
            until: time(self.until),
            since_unix_time: unix(self.since),
            until_unix_time: unix(self.until),
            errors_only: self.errors_only,
            frame: self.frame,
            frame_holds,
            exchanges_shown: shown,
        }
    }
}

/// The filters of a report as a person says them: `broker 1, requested from
/// 2026-11-29T13:54:58Z, errors only`.
pub fn describe(f: &model::Filters) -> String {
    let mut parts = Vec::new();
    if let Some(b) = f.broker {
        parts.push(format!("broker {b}"));
    }
    if let Some(c) = f.connection {
        parts.push(format!("connection {c}"));
    }
    if let Some(t) = &f.since {
        parts.push(format!("requested from {t}"));
    }
    if let Some(t) = &f.until {
        parts.push(format!("requested until {t}"));
    }
    if f.errors_only {
        parts.push("errors only".to_owned());
    }
    if let Some(n) = f.frame {
        parts.push(format!("frame {n}"));
    }
    parts.join(", ")
}

/// Not a complete NONE answer read whole.
fn is_error(ex: &Exchange) -> bool {
    match &ex.outcome {
        Outcome::Complete { response, .. } => {
            response.error_code != Some(ErrorCode::NONE) || response.problem.is_some()
        }
        Outcome::Unanswered | Outcome::ResponseUnknown => true,
    }
}

/// A sink that hands on only the exchanges (and blocks) a [`Filter`] passes.
pub struct Filtered<'a> {
    filter: &'a Filter,
    first_packet: &'a OnceLock<Timestamp>,
    /// What the `--frame` frame held, once the captures are read.
    frame_holds: &'a OnceLock<String>,
    inner: &'a mut dyn Sink,
    /// Exchanges passed, when the report lists its blocks itself (to keep theirs only).
    passed: Option<HashSet<(u64, i32, u64)>>,
    shown: u64,
}

impl<'a> Filtered<'a> {
    pub fn new(
        filter: &'a Filter,
        first_packet: &'a OnceLock<Timestamp>,
        frame_holds: &'a OnceLock<String>,
        inner: &'a mut dyn Sink,
    ) -> Self {
        let passed = inner.needs().blocks_in_report.then(HashSet::new);
        Self {
            filter,
            first_packet,
            frame_holds,
            inner,
            passed,
            shown: 0,
        }
    }
}

impl Sink for Filtered<'_> {
    fn needs(&self) -> Needs {
        self.inner.needs()
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        let first_packet = self.first_packet.get().copied();
        match &analysed {
            Analysed::Allocate(ex, _) => {
                if !self.filter.passes(ex, first_packet) {
                    return Ok(());
                }
                self.shown += 1;
                if let Some(passed) = &mut self.passed {
                    passed.insert((
                        ex.endpoints.connection,
                        ex.correlation_id,
                        ex.request_meta.frame,
                    ));
                }
            }
            Analysed::Producer(px, placed) => {
                if !self.filter.passes_producer(px, placed, first_packet) {
                    return Ok(());
                }
            }
        }
        self.inner.exchange(analysed)
    }

    /// Writes are kept to the connection `--connection` names; the other filters are
    /// about the controller's exchanges.
    fn write(&mut self, ex: &WriteExchange, judged: &WriteJudged) -> io::Result<()> {
        match self.filter.connection {
            Some(c) if c != ex.endpoints.connection => Ok(()),
            _ => self.inner.write(ex, judged),
        }
    }

    fn cluster(&mut self, ev: &ClusterEvent) -> io::Result<()> {
        match self
            .filter
            .passes_cluster(ev, self.first_packet.get().copied())
        {
            true => self.inner.cluster(ev),
            false => Ok(()),
        }
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        report.filters = Some(self.filter.describe(
            self.first_packet.get().copied(),
            self.frame_holds.get().cloned(),
            self.shown,
        ));
        if let Some(passed) = &self.passed {
            report
                .producer_id_blocks
                .blocks
                .retain(|b| passed.contains(&(b.connection, b.correlation_id, b.request_frame)));
        }
        self.inner.finish(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_or_seconds_after_the_first_packet() {
        assert_eq!(TimeBound::parse("12.5"), Ok(TimeBound::AfterStart(12.5)));
        let Ok(TimeBound::At(at)) = TimeBound::parse("2026-11-29T13:54:58.25+01:00") else {
            panic!("an RFC 3339 time");
        };
        assert_eq!((at.secs, at.nanos), (1_795_956_898, 250_000_000));
        assert!(TimeBound::parse("-3").is_err());
        let first = Some(Timestamp {
            secs: 1,
            nanos: 0,
            nano: false,
        });
        assert_eq!(
            TimeBound::parse("1e300").unwrap().resolve(first),
            Some(i128::MAX)
        );
        assert!(TimeBound::parse("yesterday")
            .unwrap_err()
            .contains("RFC 3339"));
    }
}
