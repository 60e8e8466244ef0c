//! What a diagnostic says, as typed values: an [`Observation`] has a variant per
//! [`Kind`], holding a struct of that kind's values ([`super::obs`]: an enum of causes
//! inside it where the kind's sentence depends on the cause) beside which both its
//! sentence ([`Display`](fmt::Display)) and its facts are written from its fields, so the
//! two cannot disagree; a new kind is a struct the compiler asks a sentence and facts of,
//! and one line in `observations!`.
//!
//! Fields are the values themselves (numbers, addresses, names); the types of the stages
//! that raise them stay in those stages, which pass their names or descriptions here.
//! Text is borrowed, so an observation is built where it is raised without allocating,
//! and written (allocating) only if it is listed.

use std::fmt;

use super::obs;
use super::parts::{FragmentsDropped, FramingLost, Irregular, Overlap, Undecoded};
use super::{Facts, Kind, Severity};

/// Declares [`Observation`] with a variant per [`Kind`] of the same name, holding that
/// kind's values (a struct of [`super::obs`], or a part several kinds share), and
/// dispatches its kind, facts and sentence to them: a kind is added to the list once.
macro_rules! observations {
    ($($kind:ident($values:ty),)*) => {
        /// Something odd seen in the input, or a finding of the analysis, with its values.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub enum Observation<'a> {
            $($kind($values),)*
        }

        impl Observation<'_> {
            // Inlined where an observation is raised, the kind of the variant built there
            // is a constant when it is counted.
            #[inline]
            pub fn kind(&self) -> Kind {
                match self {
                    $(Self::$kind(_) => Kind::$kind,)*
                }
            }

            /// What the sentence states, as named fields of the report, in a fixed order.
            pub fn facts(&self) -> Facts {
                match self {
                    $(Self::$kind(values) => values.facts(),)*
                }
            }
        }

        impl fmt::Display for Observation<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(Self::$kind(values) => values.fmt(f),)*
                }
            }
        }
    };
}

observations! {
    CaptureTruncated(obs::CaptureTruncated<'a>),
    CaptureCorrupt(obs::CaptureCorrupt<'a>),
    PacketTruncated(obs::PacketTruncated),
    UnsupportedLinkType(obs::UnsupportedLinkType<'a>),
    PacketMalformed(obs::PacketMalformed<'a>),
    MidstreamStart(obs::MidstreamStart),
    TcpGap(obs::TcpGap),
    TcpOverlapConflict(obs::TcpOverlapConflict),
    TcpOverlapUnread(obs::TcpOverlapUnread),
    TcpRstOutOfWindow(obs::TcpRstOutOfWindow),
    KafkaFrameTooLarge(obs::KafkaFrameTooLarge),
    KafkaResync(obs::KafkaResync),
    KafkaFramingLost(FramingLost),
    KafkaFrameIncomplete(obs::KafkaFrameIncomplete<'a>),
    KafkaDecodeError(Undecoded<'a>),
    KafkaMessageTruncated(Undecoded<'a>),
    KafkaUnsupportedVersion(Undecoded<'a>),
    DuplicateCorrelationId(obs::DuplicateCorrelationId<'a>),
    PendingLimit(obs::PendingLimit),
    DiagnosticsLimited(obs::DiagnosticsLimited),
    ConnectionLimit(obs::ConnectionLimit),
    MemoryLimit(obs::MemoryLimit<'a>),
    AnalysisLimit(obs::AnalysisLimit),
    NotKafka(obs::NotKafka<'a>),
    TlsEncrypted(obs::TlsEncrypted<'a>),
    IpFragmentsDropped(FragmentsDropped<'a>),
    CaptureFilesOverlap(obs::CaptureFilesOverlap<'a>),
    DuplicateWindowFull(obs::DuplicateWindowFull),
    OneSidedConnection(obs::OneSidedConnection),
    PidBlockOverlap(Overlap),
    PidBlockRegression(obs::PidBlockRegression),
    PidBlockGap(obs::PidBlockGap),
    PidBlockIrregular(Irregular),
    PidErrorStreak(obs::PidErrorStreak<'a>),
    PidRetry(obs::PidRetry<'a>),
    PidBrokerEpochChange(obs::PidBrokerEpochChange),
    PidSlowResponse(obs::PidSlowResponse),
    PidDuplicateGrant(obs::PidDuplicateGrant<&'a str>),
    PidOutsideBlocks(obs::PidOutsideBlocks<&'a str>),
    PidStaleController(obs::PidStaleController),
    WriteNotAppended(obs::WriteNotAppended<&'a str>),
    WriteSharedProducer(obs::WriteSharedProducer<&'a str>),
    WriteOutOfSequence(obs::WriteRejected<'a>),
    WriteFenced(obs::WriteRejected<'a>),
    MetadataLogTruncated(obs::MetadataLogTruncated<'a>),
    MetadataLogCorrupt(obs::MetadataLogCorrupt<'a>),
    MetadataLogLimit(obs::MetadataLogLimit<'a>),
    MetadataLogDivergent(obs::MetadataLogDivergent<'a>),
    PidBlockNotCommitted(obs::PidBlockNotCommitted),
    PidBlockNotDelivered(obs::PidBlockNotDelivered<'a>),
    PidBlockMismatch(obs::PidBlockMismatch),
    PidCommittedOverlap(obs::PidCommittedOverlap),
    PidCommittedGap(obs::PidCommittedGap),
}

/// The kinds of a message not read, counted and listed per API.
pub const UNDECODED_KINDS: [Kind; 3] = [
    Kind::KafkaMessageTruncated,
    Kind::KafkaDecodeError,
    Kind::KafkaUnsupportedVersion,
];

/// Fetch's API key: its requests are read only for who fetches the quorum's log.
const FETCH_API_KEY: i16 = 1;

/// The producer ids a finding is about, first to last: what the timeline outlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdSpan {
    pub start: i64,
    pub end: i64,
}

impl Observation<'_> {
    /// The ids a block finding is about: those two blocks share (an overlap), those
    /// from a regressing block's start up to the end of the block it fell below, those
    /// no block holds (a gap).
    pub fn ids(&self) -> Option<IdSpan> {
        let (start, end) = match self {
            Self::PidBlockOverlap(
                Overlap::Block {
                    ids_start, ids_end, ..
                }
                | Overlap::Folded {
                    ids_start, ids_end, ..
                },
            ) => (*ids_start, *ids_end),
            Self::PidBlockRegression(r) => (r.start, r.other_end),
            Self::PidBlockGap(g) => (g.ids_start, g.ids_end),
            _ => return None,
        };
        Some(IdSpan { start, end })
    }

    /// How serious this one is: its kind's severity, except that a message of an API
    /// that carries no producer-id information (an inter-broker Fetch response cut by a
    /// restarting broker's RST, a Fetch request not read) is only info: it is listed,
    /// and never grades the verdict.
    pub fn severity(&self) -> Severity {
        match self {
            Self::KafkaFrameIncomplete(obs::KafkaFrameIncomplete {
                api: Some(_),
                carries_producer_ids: false,
                ..
            }) => Severity::Info,
            // a Fetch is read only for who follows the quorum: no producer id rides on it
            Self::KafkaDecodeError(u)
            | Self::KafkaMessageTruncated(u)
            | Self::KafkaUnsupportedVersion(u)
                if u.api.code == FETCH_API_KEY =>
            {
                Severity::Info
            }
            _ => self.kind().severity(),
        }
    }
}

#[cfg(test)]
mod tests;
