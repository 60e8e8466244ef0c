//! The producer-id analysis's findings on the wire.

use std::fmt;
use std::net::SocketAddr;

use crate::diag::facts::facts;
use crate::diag::parts::RetryAfter;
use crate::diag::Facts;

/// What a [`Kind::PidBlockRegression`](crate::diag::Kind::PidBlockRegression) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidBlockRegression {
    /// Response frame of the block starting below.
    pub frame: u64,
    pub broker_id: i32,
    pub start: i64,
    /// End of the earlier block reaching highest, its broker and response frame.
    pub other_end: i64,
    pub other_broker_id: i32,
    pub other_frame: u64,
}

impl PidBlockRegression {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            start,
            other_end,
            other_broker_id,
            other_frame,
            ..
        } = self;
        facts![frame, start, other_end, other_broker_id, other_frame]
    }
}

impl fmt::Display for PidBlockRegression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self {
                frame,
                broker_id,
                start,
                other_end,
                other_broker_id,
                other_frame,
            } if start == other_end => write!(
                f,
                "the block starting at {start} for broker {broker_id} (frame {frame}) starts at the last id of an earlier block for broker {other_broker_id} (frame {other_frame})"
            ),
            Self {
                frame,
                broker_id,
                start,
                other_end,
                other_broker_id,
                other_frame,
            } => write!(
                f,
                "the block starting at {start} for broker {broker_id} (frame {frame}) starts below the end {other_end} of an earlier block for broker {other_broker_id} (frame {other_frame})"
            ),
        }
    }
}

/// What a [`Kind::PidBlockGap`](crate::diag::Kind::PidBlockGap) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidBlockGap {
    /// Response frame of the block after the gap.
    pub frame: u64,
    pub broker_id: i32,
    /// The ids skipped, `ids_start..=ids_end`.
    pub ids_start: i64,
    pub ids_end: i64,
    /// The block before the gap: its broker and response frame.
    pub other_broker_id: i32,
    pub other_frame: u64,
    /// AllocateProducerIds answers the capture does not show whole: any may have
    /// granted the ids.
    pub answers_not_read: u64,
    /// AllocateProducerIds requests never answered in the capture: a controller can
    /// commit a block and fail, or lose its connection, before its answer goes out.
    pub requests_unanswered: u64,
}

impl PidBlockGap {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            ids_start,
            ids_end,
            other_broker_id,
            other_frame,
            answers_not_read,
            requests_unanswered,
            ..
        } = self;
        let answers_not_read = Some(answers_not_read).filter(|n| **n > 0);
        let requests_unanswered = Some(requests_unanswered).filter(|n| **n > 0);
        facts![
            frame,
            ids_start,
            ids_end,
            "count" => ids_end - ids_start + 1,
            other_broker_id,
            other_frame,
            answers_not_read?,
            requests_unanswered?,
        ]
    }
}

impl fmt::Display for PidBlockGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            broker_id,
            ids_start,
            ids_end,
            other_broker_id,
            other_frame,
            answers_not_read,
            requests_unanswered,
        } = self;
        let why = "(lost, given up at a limit, or cut)";
        let never = "(a controller can grant a block and fail before answering)";
        write!(
            f,
            "{} skipped between the block for broker {other_broker_id} (frame {other_frame}) and the next, for broker {broker_id} (frame {frame}){}",
            match ids_end - ids_start + 1 {
                1 => format!("id {ids_start} was"),
                n => format!("{n} ids ({ids_start}..={ids_end}) were"),
            },
            match (answers_not_read, requests_unanswered) {
                (0, 0) => String::new(),
                (1, 0) => format!(", unless the one answer not read whole {why} granted them"),
                (n, 0) => format!(", unless one of the {n} answers not read whole {why} granted them"),
                (0, 1) => format!(", unless the one request never answered got them {never}"),
                (0, m) => format!(", unless one of the {m} requests never answered got them {never}"),
                (n, m) => format!(
                    ", unless one of {} not read whole {why} or {} never answered got them {never}",
                    plural(*n, "answer"),
                    plural(*m, "request"),
                ),
            },
        )
    }
}

/// What a [`Kind::PidErrorStreak`](crate::diag::Kind::PidErrorStreak) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidErrorStreak<'a> {
    pub broker_id: i32,
    /// The error's name.
    pub error: &'a str,
    pub count: u64,
    pub first_frame: u64,
    /// Frame of the last response, where the streak shows.
    pub last_frame: u64,
    /// Distinct connections of the run, counted up to a limit.
    pub connections: u64,
    /// The run went over more connections than `connections`, its limit.
    pub connections_more: bool,
}

impl PidErrorStreak<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            error,
            count,
            first_frame,
            last_frame,
            connections,
            connections_more,
            ..
        } = self;
        let connections_at_least = connections_more.then_some(true);
        facts![
            "frame" => last_frame,
            error,
            count,
            first_frame,
            last_frame,
            connections,
            connections_at_least?,
        ]
    }
}

impl fmt::Display for PidErrorStreak<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            broker_id,
            error,
            count,
            first_frame,
            last_frame,
            connections,
            connections_more,
        } = self;
        let more = if *connections_more { "more than " } else { "" };
        write!(
            f,
            "broker {broker_id} got {count} {error} responses in a row (frames {first_frame} to {last_frame}, over {more}{connections} connection{})",
            if *connections == 1 { "" } else { "s" }
        )
    }
}

/// What a [`Kind::PidRetry`](crate::diag::Kind::PidRetry) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidRetry<'a> {
    /// The request asking again.
    pub frame: u64,
    pub broker_id: i32,
    /// The request retried.
    pub earlier_frame: u64,
    pub after: RetryAfter<'a>,
}

impl PidRetry<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            earlier_frame,
            after,
            ..
        } = self;
        let error = match after {
            RetryAfter::Error(error) => Some(error),
            _ => None,
        };
        facts![frame, earlier_frame, error?]
    }
}

impl fmt::Display for PidRetry<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            broker_id,
            earlier_frame,
            after,
        } = self;
        write!(f, "broker {broker_id} asked again (frame {frame}) after ")?;
        match after {
            RetryAfter::Error(error) => write!(f, "a {error} response")?,
            RetryAfter::NoResponse => f.write_str("no response")?,
        }
        write!(f, " to its request in frame {earlier_frame}")
    }
}

/// What a [`Kind::PidBrokerEpochChange`](crate::diag::Kind::PidBrokerEpochChange) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidBrokerEpochChange {
    /// The request with the new epoch.
    pub frame: u64,
    pub broker_id: i32,
    pub old_epoch: i64,
    pub new_epoch: i64,
    /// The request with the old epoch.
    pub earlier_frame: u64,
}

impl PidBrokerEpochChange {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            old_epoch,
            new_epoch,
            earlier_frame,
            ..
        } = self;
        facts![frame, old_epoch, new_epoch, earlier_frame]
    }
}

impl fmt::Display for PidBrokerEpochChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            broker_id,
            old_epoch,
            new_epoch,
            ..
        } = self;
        write!(
            f,
            "broker {broker_id} changed its epoch from {old_epoch} to {new_epoch} (frame {frame})"
        )
    }
}

/// What a [`Kind::PidSlowResponse`](crate::diag::Kind::PidSlowResponse) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidSlowResponse {
    /// The response's frame.
    pub frame: u64,
    pub correlation_id: i32,
    pub latency_ns: i128,
    pub threshold_us: f64,
}

impl PidSlowResponse {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            correlation_id,
            latency_ns,
            threshold_us,
        } = self;
        facts![
            frame,
            correlation_id,
            "latency_us" => *latency_ns as f64 / 1000.0,
            threshold_us,
        ]
    }
}

impl fmt::Display for PidSlowResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            correlation_id,
            latency_ns,
            threshold_us,
            ..
        } = self;
        write!(
            f,
            "the response to correlation id {correlation_id} took {:.1} ms, above the {:.1} ms threshold",
            *latency_ns as f64 / 1_000_000.0,
            threshold_us / 1000.0
        )
    }
}

/// An InitProducerId (or EndTxn version 5) response granted a producer id and epoch
/// already granted to another producer (another connection, or another transactional
/// id). Its text is `T`: borrowed where it is raised (`&str`, so that an observation
/// stays `Copy`, with no drop on the hot paths that raise others), owned (`String`) where
/// a finding keeps it for the formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidDuplicateGrant<T> {
    /// The later grant's response frame, client and transactional id.
    pub frame: u64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub client: SocketAddr,
    pub transactional_id: Option<T>,
    /// The whole transactional id's length in bytes when `transactional_id` is only its
    /// first bytes followed by `…` (see `analysis::kept_id`).
    pub transactional_id_len: Option<u64>,
    /// The earlier grant's.
    pub other_frame: u64,
    pub other_client: SocketAddr,
    pub other_transactional_id: Option<T>,
    pub other_transactional_id_len: Option<u64>,
}

impl PidDuplicateGrant<&str> {
    /// The same values, owning their text.
    pub fn to_owned(&self) -> PidDuplicateGrant<String> {
        let owned = |t: Option<&str>| t.map(str::to_owned);
        PidDuplicateGrant {
            transactional_id: owned(self.transactional_id),
            other_transactional_id: owned(self.other_transactional_id),
            frame: self.frame,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            client: self.client,
            transactional_id_len: self.transactional_id_len,
            other_frame: self.other_frame,
            other_client: self.other_client,
            other_transactional_id_len: self.other_transactional_id_len,
        }
    }
}

impl<T: AsRef<str>> PidDuplicateGrant<T> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            producer_id,
            producer_epoch,
            client,
            transactional_id,
            transactional_id_len,
            other_frame,
            other_client,
            other_transactional_id,
            other_transactional_id_len,
        } = self;
        let (transactional_id, other_transactional_id) = (
            transactional_id.as_ref().map(AsRef::as_ref),
            other_transactional_id.as_ref().map(AsRef::as_ref),
        );
        facts![
            frame,
            producer_id,
            producer_epoch,
            client,
            other_frame,
            other_client,
            transactional_id?,
            transactional_id_len?,
            other_transactional_id?,
            other_transactional_id_len?,
        ]
    }

    /// The later grant's transactional id in quotes, said cut when it is.
    pub fn quoted(&self) -> Option<String> {
        let id = self.transactional_id.as_ref()?;
        Some(quoted(id.as_ref(), self.transactional_id_len))
    }

    /// The earlier grant's.
    pub fn other_quoted(&self) -> Option<String> {
        let id = self.other_transactional_id.as_ref()?;
        Some(quoted(id.as_ref(), self.other_transactional_id_len))
    }
}

/// `"tx-1"`, or a cut id's first bytes (followed by `…`) and its whole length: `"tx-…"
/// cut from 1048576 bytes`.
pub fn quoted(text: &str, cut_from: Option<u64>) -> String {
    match cut_from {
        Some(len) => format!("{text:?} cut from {len} bytes"),
        None => format!("{text:?}"),
    }
}

impl<T: AsRef<str>> fmt::Display for PidDuplicateGrant<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            producer_id,
            producer_epoch,
            client,
            other_frame,
            other_client,
            ..
        } = self;
        let who = |client: &SocketAddr, id: Option<String>| match id {
            Some(id) => format!("{client} (transactional id {id})"),
            None => client.to_string(),
        };
        write!(
            f,
            "producer id {producer_id} epoch {producer_epoch} was granted to {} (frame {frame}) after {} got it (frame {other_frame}): two producers hold the same id and epoch",
            who(client, self.quoted()),
            who(other_client, self.other_quoted())
        )
    }
}

/// An InitProducerId response granted a producer id that Kafka's producer-id manager
/// cannot have drawn (see `analysis::placement`): from another broker's block, from
/// an older block after a newer one, or outside every block its broker was granted
/// in the capture, above the first. Its text is `T`, as [`PidDuplicateGrant`]'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidOutsideBlocks<T> {
    pub frame: u64,
    pub broker_id: i32,
    pub producer_id: i64,
    /// `another_brokers_block`, `older_block` or `outside_blocks`.
    pub placement: &'static str,
    /// Why, in a sentence (the entry's `placement_reason`).
    pub reason: T,
    /// The broker's blocks seen so far, and the last of them: `start..=end`.
    pub blocks: u64,
    pub last_start: i64,
    pub last_end: i64,
    /// The block that holds the id, when the capture shows it.
    pub block: Option<(i64, i64, i32)>,
}

impl PidOutsideBlocks<&str> {
    /// The same values, owning their text.
    pub fn to_owned(&self) -> PidOutsideBlocks<String> {
        PidOutsideBlocks {
            reason: self.reason.to_owned(),
            frame: self.frame,
            broker_id: self.broker_id,
            producer_id: self.producer_id,
            placement: self.placement,
            blocks: self.blocks,
            last_start: self.last_start,
            last_end: self.last_end,
            block: self.block,
        }
    }
}

impl<T: AsRef<str>> PidOutsideBlocks<T> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            producer_id,
            placement,
            blocks,
            last_start,
            last_end,
            block,
            ..
        } = self;
        let mut facts = facts![frame, producer_id, placement, blocks, last_start, last_end];
        if let Some((block_start, block_end, block_broker_id)) = block {
            facts.extend(facts![block_start, block_end, block_broker_id]);
        }
        facts
    }
}

impl<T: AsRef<str>> fmt::Display for PidOutsideBlocks<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            broker_id,
            producer_id,
            reason,
            ..
        } = self;
        let reason = reason.as_ref();
        write!(
            f,
            "broker {broker_id} granted producer id {producer_id} (frame {frame}) {reason}"
        )
    }
}

/// An AllocateProducerIds response granted a block from a controller asked for after the
/// capture showed another controller leading a later epoch than any it led.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PidStaleController {
    /// The response granting the block, and the request that asked for it.
    pub frame: u64,
    pub request_frame: u64,
    /// The connection's server, and the controller serving there.
    pub controller: SocketAddr,
    pub controller_id: i32,
    /// The highest epoch it is known to have led.
    pub controller_led_epoch: Option<i32>,
    /// The first leader of a later epoch shown before the request, and the first message
    /// that showed it.
    pub leader_seen: i32,
    pub leader_seen_epoch: i32,
    pub leader_seen_frame: u64,
    pub start: i64,
    pub len: i32,
}

impl PidStaleController {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            request_frame,
            controller,
            controller_id,
            controller_led_epoch,
            leader_seen,
            leader_seen_epoch,
            leader_seen_frame,
            start,
            len,
        } = self;
        facts![
            frame,
            request_frame,
            controller,
            controller_id,
            controller_led_epoch?,
            leader_seen,
            leader_seen_epoch,
            leader_seen_frame,
            start,
            len,
        ]
    }
}

impl fmt::Display for PidStaleController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            request_frame,
            controller,
            controller_id,
            controller_led_epoch,
            leader_seen,
            leader_seen_epoch,
            leader_seen_frame,
            start,
            len,
        } = self;
        let led = match controller_led_epoch {
            Some(epoch) => format!("the last epoch it was seen leading is {epoch}"),
            None => "it was not seen leading".to_owned(),
        };
        write!(
            f,
            "controller {controller_id} ({controller}) granted {len} producer ids from {start} (frame {frame}) asked for in frame {request_frame}, after controller {leader_seen} was seen leading epoch {leader_seen_epoch} (frame {leader_seen_frame}); {led}: a stale controller handed out a block"
        )
    }
}

/// `1 answer`, `2 answers`.
fn plural(n: u64, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        _ => format!("{n} {noun}s"),
    }
}
