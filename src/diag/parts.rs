//! The parts of observations: the causes that choose a kind's sentence, and values
//! that several kinds name, each with the facts and the words it gives.

use std::fmt;
use std::net::IpAddr;

use super::facts::{facts, IntoFact};
use super::{Fact, Facts};

/// Which end of a Kafka connection sent the bytes: the client sends requests, the
/// server responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Server => "server",
        }
    }

    /// The messages this side sends.
    pub fn message(self) -> &'static str {
        match self {
            Self::Client => "request",
            Self::Server => "response",
        }
    }
}

/// How a capture file was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut<'a> {
    /// It ends inside the record that starts at `record_offset`.
    InsideRecord,
    /// Its decompressor's input ended before the compressed stream did.
    Stream { error: &'a str },
}

/// What was wrong at `record_offset` of a corrupt capture file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage<'a> {
    /// A record larger than is read; reading stopped there.
    RecordTooLarge { limit_mib: u64 },
    /// Bytes that are no record; reading stopped there.
    Unreadable { why: &'a str, packets: u64 },
    /// Reading the file failed.
    ReadFailed { error: &'a str, packets: u64 },
    /// A record longer than the file's snaplen and than any packet may be; skipped.
    OverSnaplen {
        len: u64,
        snaplen: u32,
        max_len: u64,
    },
    /// A pcapng section describing more interfaces than are kept.
    TooManyInterfaces { max: u64 },
    /// A pcapng packet block naming an interface not described; skipped.
    UnknownInterface { interface: u32, described: u64 },
}

/// How Kafka framing was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramingLost {
    /// A size prefix too small for a message.
    SizeTooSmall { side: Side, size: i32 },
    /// A gap in the stream, inside a message's head (dropped) or where the next one starts.
    Gap {
        side: Side,
        gap_bytes: u64,
        inside_head: bool,
    },
}

/// An AllocateProducerIds message not fully decoded; the variant holding it says why in
/// kind (a decode error, bytes not captured, a version not supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undecoded<'a> {
    /// The message's API: the request's own, or for a response the request's it answers.
    pub api: NamedCode<'a>,
    /// Whose message: the client's request or the server's response.
    pub side: Side,
    pub correlation_id: i32,
    /// What went wrong, as the decoder says it.
    pub problem: &'a str,
}

impl Undecoded<'_> {
    pub(super) fn facts(&self) -> Facts {
        facts![
            "api_key" => self.api,
            "message" => self.side.message(),
            "correlation_id" => self.correlation_id,
            "problem" => self.problem,
        ]
    }
}

impl fmt::Display for Undecoded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} with correlation id {}: {}",
            self.api.name,
            self.side.message(),
            self.correlation_id,
            self.problem
        )
    }
}

/// A code from the wire and its name (a Kafka API key): the number is the fact, the
/// name the sentence's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedCode<'a> {
    pub code: i16,
    pub name: &'a str,
}

/// What the memory budget made a connection give up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GivenUp<'a> {
    /// Holes declared lost so that the out-of-order bytes after them were delivered.
    OutOfOrder { bytes: u64 },
    /// The last bytes delivered, kept to compare retransmissions with.
    Recent { bytes: u64 },
    /// The whole connection, the least recently active, with nothing left to shed.
    Connection { max_memory: u64 },
    /// What the Kafka reader held, as it names it.
    Held { what: &'a str },
}

/// IP fragments dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentsDropped<'a> {
    /// The fragments of a datagram that could not be reassembled.
    Datagram {
        fragments: u64,
        /// Captured bytes they held.
        bytes: u64,
        first_frame: u64,
        datagram_id: u32,
        from: IpAddr,
        to: IpAddr,
        reason: &'a str,
    },
    /// A fragment of a kind that is not reassembled, as the decoder names it.
    NotReassembled { reason: &'a str },
}

/// Producer ids given twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// Shared with an earlier block still compared one by one.
    Block {
        frame: u64,
        broker_id: i32,
        ids_start: i64,
        ids_end: i64,
        other_broker_id: i32,
        other_frame: u64,
    },
    /// Shared with earlier blocks folded into one range of ids, granted between
    /// `other_first_frame` and `other_last_frame`.
    Folded {
        frame: u64,
        broker_id: i32,
        ids_start: i64,
        ids_end: i64,
        other_first_frame: u64,
        other_last_frame: u64,
    },
}

/// A block of producer ids out of the ordinary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Irregular {
    /// A NONE response whose start or length cannot be a block; not counted as one.
    Response {
        frame: u64,
        correlation_id: i32,
        broker_id: i32,
        producer_id_start: i64,
        producer_id_len: i32,
        why: BadGrant,
    },
    /// A block of another length than the capture's usual one.
    Length {
        frame: u64,
        broker_id: i32,
        len: i32,
        usual_len: i32,
    },
}

/// Why a NONE response's start and length are no block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadGrant {
    NegativeStart,
    NoIds,
    /// The block would end past the largest producer id.
    PastLargestId,
}

/// What came of the request a broker retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter<'a> {
    /// An error response, by the error's name.
    Error(&'a str),
    NoResponse,
}

impl FramingLost {
    pub(super) fn facts(self) -> Facts {
        match self {
            Self::SizeTooSmall { side, size } => facts![side, size],
            Self::Gap {
                side,
                gap_bytes,
                inside_head,
            } => facts![side, gap_bytes, inside_head],
        }
    }
}

impl fmt::Display for FramingLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SizeTooSmall { side, size } => write!(
                f,
                "a Kafka size prefix from the {} says {size} bytes, too small for a message; looking for the next frame",
                side.name()
            ),
            Self::Gap {
                side,
                gap_bytes,
                inside_head,
            } => write!(
                f,
                "a gap of {gap_bytes} bytes in the {}'s stream came {}; looking for the next frame",
                side.name(),
                if *inside_head {
                    "inside a Kafka message's head, which is dropped"
                } else {
                    "where the next Kafka message starts"
                }
            ),
        }
    }
}

impl GivenUp<'_> {
    pub(super) fn fact(&self) -> (&'static str, Fact) {
        match self {
            Self::OutOfOrder { bytes } => ("out_of_order_bytes", bytes.fact()),
            Self::Recent { bytes } => ("bytes_freed", bytes.fact()),
            Self::Connection { max_memory } => ("max_memory", max_memory.fact()),
            Self::Held { what } => ("given_up", what.fact()),
        }
    }

    pub(super) fn write(
        &self,
        connection: ConnectionEnds,
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        match self {
            Self::OutOfOrder { bytes } => write!(
                f,
                "over the memory budget (--max-memory), connection {connection} delivered its {bytes} out-of-order bytes after declaring the holes before them lost"
            ),
            Self::Recent { .. } => write!(
                f,
                "over the memory budget (--max-memory), connection {connection} forgot the last bytes it delivered: retransmissions of them are no longer compared"
            ),
            Self::Connection { .. } => write!(
                f,
                "over the memory budget (--max-memory) with nothing left to shed, connection {connection}, the least recently active, is no longer followed"
            ),
            Self::Held { what } => write!(
                f,
                "over the memory budget (--max-memory), connection {connection} gave up {what}"
            ),
        }
    }
}

impl FragmentsDropped<'_> {
    pub(super) fn facts(&self) -> Facts {
        match self {
            Self::Datagram {
                fragments,
                bytes,
                first_frame,
                datagram_id,
                from,
                to,
                reason,
            } => facts![fragments, bytes, first_frame, datagram_id, from, to, reason],
            Self::NotReassembled { reason } => facts![reason],
        }
    }
}

impl fmt::Display for FragmentsDropped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Datagram {
                fragments,
                bytes,
                first_frame,
                datagram_id,
                from,
                to,
                reason,
            } => write!(
                f,
                "{fragments} {} fragments ({bytes} captured bytes, first in frame {first_frame}) of datagram {datagram_id} from {from} to {to} were dropped: {reason}; the TCP segment they carried is lost",
                if from.is_ipv6() { "IPv6" } else { "IPv4" }
            ),
            Self::NotReassembled { reason } => write!(
                f,
                "{reason} was dropped: such fragments are not reassembled; the TCP segment it carried is lost"
            ),
        }
    }
}

/// Producer ids `.0..=.1` as a sentence names them.
pub(super) struct Ids(pub i64, pub i64);

impl Ids {
    /// `was` for one id, `were` for more.
    pub(super) fn were(&self) -> &'static str {
        if self.0 == self.1 {
            "was"
        } else {
            "were"
        }
    }
}

impl fmt::Display for Ids {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self(from, to) = *self;
        if from == to {
            write!(f, "id {from}")
        } else {
            write!(f, "ids {from}..={to}")
        }
    }
}

impl Overlap {
    pub(super) fn facts(self) -> Facts {
        match self {
            Self::Block {
                frame,
                ids_start,
                ids_end,
                other_broker_id,
                other_frame,
                ..
            } => facts![frame, ids_start, ids_end, other_broker_id, other_frame],
            Self::Folded {
                frame,
                ids_start,
                ids_end,
                other_first_frame,
                other_last_frame,
                ..
            } => facts![
                frame,
                ids_start,
                ids_end,
                other_first_frame,
                other_last_frame
            ],
        }
    }
}

impl fmt::Display for Overlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Block {
                frame,
                broker_id,
                ids_start,
                ids_end,
                other_broker_id,
                other_frame,
            } => {
                let ids = Ids(ids_start, ids_end);
                write!(
                    f,
                    "{ids} {} given twice: to broker {other_broker_id} (frame {other_frame}) and to broker {broker_id} (frame {frame})",
                    ids.were()
                )
            }
            Self::Folded {
                frame,
                broker_id,
                ids_start,
                ids_end,
                other_first_frame,
                other_last_frame,
            } => {
                let ids = Ids(ids_start, ids_end);
                write!(
                    f,
                    "{ids} given to broker {broker_id} (frame {frame}) {} already given in an earlier block, between frames {other_first_frame} and {other_last_frame}",
                    ids.were()
                )
            }
        }
    }
}

impl Irregular {
    pub(super) fn facts(self) -> Facts {
        match self {
            Self::Response {
                frame,
                correlation_id,
                producer_id_start,
                producer_id_len,
                ..
            } => facts![frame, correlation_id, producer_id_start, producer_id_len],
            Self::Length {
                frame,
                len,
                usual_len,
                ..
            } => facts![frame, len, usual_len],
        }
    }
}

impl fmt::Display for Irregular {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Response {
                correlation_id,
                broker_id,
                producer_id_start: start,
                producer_id_len: len,
                why,
                ..
            } => {
                write!(f, "a NONE response to broker {broker_id} gives ")?;
                match why {
                    BadGrant::NegativeStart => write!(f, "producer id start {start}")?,
                    BadGrant::NoIds => write!(f, "a block of {len} ids")?,
                    BadGrant::PastLargestId => write!(
                        f,
                        "a block starting at {start} of {len} ids, past the largest producer id"
                    )?,
                }
                write!(
                    f,
                    " (correlation id {correlation_id}); it is not counted as a block"
                )
            }
            Self::Length {
                frame,
                broker_id,
                len,
                usual_len,
            } => write!(
                f,
                "broker {broker_id} got a block of {len} ids (frame {frame}) where this capture's blocks are usually {usual_len}"
            ),
        }
    }
}

/// A connection named by its two ends, initiator first: the same whatever number a
/// thread gives it, and what a reader looks for in the capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionEnds(pub std::net::SocketAddr, pub std::net::SocketAddr);

impl fmt::Display for ConnectionEnds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} - {}", self.0, self.1)
    }
}
