//! A connection whose bytes look like Kafka but are not proven to be: the first message of
//! a ZooKeeper session reads as a Produce request and its answer as the response. Its
//! frames go to an outbox and diagnostics of its own, read strictly (every request head
//! plausible and counting up, every answer to a request of this connection), until enough
//! of them prove it ([`Trial::proven`]), which adds them to the report, or one refutes it
//! ([`Trial::refuted`]), or the connection ends first, either of which drops them with a
//! `not_kafka` diagnostic.

use super::given_up::NotKafka;
use super::message::{Outbox, Tally};
use crate::diag::Diagnostics;

/// Answers that prove a connection Kafka: a third of a ZooKeeper session's reads as
/// one only when its first three operations are numbered like Kafka's correlation ids.
pub const PROVING_ANSWERS: u64 = 3;
/// Requests in a chain (each plausible, correlation ids counting up) that prove it.
pub const PROVING_REQUESTS: u64 = 4;

/// What a connection on trial found, held out of the report.
#[derive(Debug, Default)]
pub struct Trial {
    pub out: Outbox,
    pub diags: Diagnostics,
}

/// What one delivery to a connection on trial showed against it.
#[derive(Debug, Clone, Copy)]
pub struct Signs {
    /// The trial's tally before the delivery and after it.
    pub tally: (Tally, Tally),
    /// A request head that is not a plausible one counting up.
    pub head_refused: bool,
    /// A size prefix from the server that Kafka cannot have.
    pub server_bad_size: bool,
}

impl Trial {
    pub fn new(list_every_message: bool) -> Box<Self> {
        Box::new(Self {
            out: Outbox::new(list_every_message),
            ..Self::default()
        })
    }

    /// What in the last delivery refutes the trial, if anything: a request head that is
    /// not a plausible one counting up, a size from the server Kafka cannot have, or an
    /// answer to nothing (mid-stream, answers to requests before the capture come first).
    pub fn refuted(signs: Signs, midstream: bool) -> Option<NotKafka> {
        let (before, after) = signs.tally;
        if signs.head_refused {
            Some(NotKafka::TrialHead)
        } else if signs.server_bad_size {
            Some(NotKafka::TrialAnswerSize)
        } else if after.unmatched > before.unmatched && (!midstream || before.answers > 0) {
            Some(NotKafka::TrialAnswer)
        } else {
            None
        }
    }

    /// Enough frames, or an AllocateProducerIds request: only brokers send those, and
    /// holding its exchange back would hand it to the analysis out of time order; or an
    /// answered ApiVersions request: every Kafka client opens with one, and the
    /// lookalikes' first messages cannot read as one (ZooKeeper's ConnectRequest starts
    /// with protocol version 0, read as Produce v0; PostgreSQL's StartupMessage with
    /// 3.0, read as Metadata v0); or an answered request of a flexible version, for the
    /// same reason (a connection picked up mid-stream that carries two heartbeats and
    /// ends, as a killed controller's do). So a short Kafka session (ApiVersions, a
    /// registration, close) is read, and a short ZooKeeper one is not.
    pub fn proven(&self) -> bool {
        let Tally {
            requests,
            allocate_requests,
            answers,
            api_versions_answers,
            flexible_answers,
            ..
        } = self.out.tally;
        allocate_requests > 0
            || api_versions_answers > 0
            || flexible_answers > 0
            || answers >= PROVING_ANSWERS
            || requests >= PROVING_REQUESTS
    }
}
