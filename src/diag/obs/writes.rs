//! The writes analysis's findings: what the broker did with the batches producers wrote
//! (issue 42). Text is `T`, as in [`super::PidDuplicateGrant`]: borrowed where raised,
//! owned where a finding keeps it.

use std::fmt;
use std::net::SocketAddr;

use crate::diag::facts::facts;
use crate::diag::Facts;

/// A client, with its `client_id` when the request's header gave one.
fn who<T: AsRef<str>>(client: &SocketAddr, client_id: Option<&T>) -> String {
    match client_id.map(AsRef::as_ref) {
        Some(id) => format!("{client} (client id {id:?})"),
        None => client.to_string(),
    }
}

/// A batch the broker acknowledged with success at the offset of another batch with the
/// same producer id, epoch and sequences but other contents (another CRC): Kafka took it
/// for a retry of that batch and did not append it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteNotAppended<T> {
    /// The response that acknowledged it, and its request.
    pub frame: u64,
    pub request_frame: u64,
    /// The topic's name, or its id (32 hex digits) from Produce version 13.
    pub topic: T,
    pub partition: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub first_sequence: i32,
    pub last_sequence: i32,
    /// The base offset it was acknowledged at: the appended batch's.
    pub offset: i64,
    pub client: SocketAddr,
    pub client_id: Option<T>,
    /// The response that acknowledged the batch appended at that offset, and its writer.
    pub other_frame: u64,
    pub other_client: SocketAddr,
    pub other_client_id: Option<T>,
}

impl<T: AsRef<str>> WriteNotAppended<T> {
    /// The same values, owning their text.
    pub fn to_owned(&self) -> WriteNotAppended<String> {
        let owned = |t: Option<&T>| t.map(|t| t.as_ref().to_owned());
        WriteNotAppended {
            topic: self.topic.as_ref().to_owned(),
            client_id: owned(self.client_id.as_ref()),
            other_client_id: owned(self.other_client_id.as_ref()),
            frame: self.frame,
            request_frame: self.request_frame,
            partition: self.partition,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            first_sequence: self.first_sequence,
            last_sequence: self.last_sequence,
            offset: self.offset,
            client: self.client,
            other_frame: self.other_frame,
            other_client: self.other_client,
        }
    }

    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            request_frame,
            partition,
            producer_id,
            producer_epoch,
            first_sequence,
            last_sequence,
            offset,
            client,
            other_frame,
            other_client,
            ..
        } = self;
        let topic = self.topic.as_ref();
        let client_id = self.client_id.as_ref().map(AsRef::as_ref);
        let other_client_id = self.other_client_id.as_ref().map(AsRef::as_ref);
        facts![
            frame,
            request_frame,
            topic,
            partition,
            producer_id,
            producer_epoch,
            first_sequence,
            last_sequence,
            offset,
            client,
            client_id?,
            other_frame,
            other_client,
            other_client_id?,
        ]
    }
}

impl<T: AsRef<str>> fmt::Display for WriteNotAppended<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            partition,
            producer_id,
            producer_epoch,
            first_sequence,
            last_sequence,
            offset,
            other_frame,
            ..
        } = self;
        let sequences = match first_sequence == last_sequence {
            true => format!("sequence {first_sequence}"),
            false => format!("sequences {first_sequence}-{last_sequence}"),
        };
        write!(
            f,
            "a batch of producer id {producer_id} epoch {producer_epoch} ({sequences}) to {} partition {partition} from {} was acknowledged at offset {offset} (frame {frame}), where the batch {} wrote with the same producer id, epoch and sequences but other records was appended (frame {other_frame}): the broker took it for a retry and did not append it",
            self.topic.as_ref(),
            who(&self.client, self.client_id.as_ref()),
            who(&self.other_client, self.other_client_id.as_ref()),
        )
    }
}

/// Why two writers of one producer id and epoch are two producers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TwoWriters {
    /// Their requests carry different client ids.
    ClientIds,
    /// They write from different hosts.
    Hosts,
    /// Both wrote to one broker over two connections at once.
    Connections,
}

impl TwoWriters {
    fn as_str(self) -> &'static str {
        match self {
            Self::ClientIds => "client_ids",
            Self::Hosts => "hosts",
            Self::Connections => "connections",
        }
    }
}

/// Batches of one producer id and epoch written by two producers: the broker keeps one
/// sequence per producer id and partition, so it judges their batches as one producer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteSharedProducer<T> {
    /// The request of the second writer that showed it.
    pub frame: u64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub client: SocketAddr,
    pub client_id: Option<T>,
    /// The other writer's first request with that id and epoch.
    pub other_frame: u64,
    pub other_client: SocketAddr,
    pub other_client_id: Option<T>,
    pub why: TwoWriters,
}

impl<T: AsRef<str>> WriteSharedProducer<T> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            producer_id,
            producer_epoch,
            client,
            other_frame,
            other_client,
            why,
            ..
        } = self;
        let client_id = self.client_id.as_ref().map(AsRef::as_ref);
        let other_client_id = self.other_client_id.as_ref().map(AsRef::as_ref);
        let evidence = why.as_str();
        facts![
            frame,
            producer_id,
            producer_epoch,
            client,
            client_id?,
            other_frame,
            other_client,
            other_client_id?,
            evidence,
        ]
    }
}

impl<T: AsRef<str>> fmt::Display for WriteSharedProducer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            producer_id,
            producer_epoch,
            other_frame,
            why,
            ..
        } = self;
        let because = match why {
            TwoWriters::ClientIds => "their client ids differ",
            TwoWriters::Hosts => "they write from different hosts",
            TwoWriters::Connections => "both write to one broker over two connections at once",
        };
        write!(
            f,
            "producer id {producer_id} epoch {producer_epoch} writes from two producers, {} (frame {frame}) and {} (frame {other_frame}): {because}; the broker keeps one sequence per producer id and partition, so it judges their batches as one producer's",
            who(&self.client, self.client_id.as_ref()),
            who(&self.other_client, self.other_client_id.as_ref()),
        )
    }
}

/// Batches of one producer id and epoch the broker refused with one error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteRejected<'a> {
    /// The first and last responses with it.
    pub frame: u64,
    pub last_frame: u64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub error: crate::diag::NamedCode<'a>,
    pub batches: u64,
    pub partitions: u64,
    /// More partitions than `partitions` were refused (past what a group names).
    pub partitions_more: bool,
    /// The writer of the first.
    pub client: SocketAddr,
}

impl WriteRejected<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            frame,
            last_frame,
            producer_id,
            producer_epoch,
            error,
            batches,
            partitions,
            partitions_more,
            client,
        } = self;
        let error_code = error.code;
        let error = error.name;
        let partitions_at_least = partitions_more.then_some(true);
        facts![
            frame,
            last_frame,
            producer_id,
            producer_epoch,
            error_code,
            error,
            batches,
            partitions,
            partitions_at_least?,
            client,
        ]
    }
}

impl fmt::Display for WriteRejected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            frame,
            last_frame,
            producer_id,
            producer_epoch,
            error,
            batches,
            partitions,
            partitions_more,
            client,
        } = self;
        let counted = |n: u64, one: &str, many: &str| match n {
            1 => format!("1 {one}"),
            n => format!("{n} {many}"),
        };
        let at_least = if *partitions_more { "at least " } else { "" };
        let (batches, partitions) = (
            counted(*batches, "batch", "batches"),
            format!(
                "{at_least}{}",
                counted(*partitions, "partition", "partitions")
            ),
        );
        let frames = match frame == last_frame {
            true => format!("frame {frame}"),
            false => format!("frames {frame} to {last_frame}"),
        };
        write!(
            f,
            "{batches} of producer id {producer_id} epoch {producer_epoch} from {client} to {partitions} answered {} ({frames})",
            error.name
        )
    }
}
