//! Diagnostics: everything odd seen in the input, as data for the report.
//!
//! A diagnostic never stops the run. Each has a severity, a kind (a stable string from
//! the report contract), the connection and frame it concerns, and one sentence with the
//! numbers that matter. The report lists them in packet order.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// Kinds of diagnostic, with the contract's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    CaptureTruncated,
    /// Corrupt bytes after valid data (bad block, impossible record).
    CaptureCorrupt,
    PacketTruncated,
    UnsupportedLinkType,
    /// A packet the link/IP/TCP decoder could not read.
    PacketMalformed,
    MidstreamStart,
    TcpGap,
    KafkaFrameTooLarge,
    /// Kafka framing was lost (bad length prefix or a gap inside a needed frame).
    KafkaFramingLost,
    /// A Kafka frame was still incomplete when its stream ended.
    KafkaFrameIncomplete,
    KafkaDecodeError,
    KafkaUnsupportedVersion,
    DuplicateCorrelationId,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CaptureTruncated => "capture_truncated",
            Self::CaptureCorrupt => "capture_corrupt",
            Self::PacketTruncated => "packet_truncated",
            Self::UnsupportedLinkType => "unsupported_link_type",
            Self::PacketMalformed => "packet_malformed",
            Self::MidstreamStart => "midstream_start",
            Self::TcpGap => "tcp_gap",
            Self::KafkaFrameTooLarge => "kafka_frame_too_large",
            Self::KafkaFramingLost => "kafka_framing_lost",
            Self::KafkaFrameIncomplete => "kafka_frame_incomplete",
            Self::KafkaDecodeError => "kafka_decode_error",
            Self::KafkaUnsupportedVersion => "kafka_unsupported_version",
            Self::DuplicateCorrelationId => "duplicate_correlation_id",
        }
    }

    pub fn severity(self) -> Severity {
        match self {
            Self::MidstreamStart | Self::UnsupportedLinkType => Severity::Info,
            Self::CaptureCorrupt | Self::KafkaDecodeError => Severity::Error,
            _ => Severity::Warning,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: Kind,
    pub connection: Option<u64>,
    pub frame: Option<u64>,
    pub message: String,
}

/// Collects diagnostics as the pipeline finds them.
#[derive(Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(
        &mut self,
        kind: Kind,
        connection: Option<u64>,
        frame: Option<u64>,
        message: String,
    ) {
        self.items.push(Diagnostic {
            severity: kind.severity(),
            kind,
            connection,
            frame,
            message,
        });
    }

    /// All diagnostics in packet order; those without a frame (end of input) last.
    /// The sort is stable, so equal frames keep the order they were found in.
    pub fn into_sorted(mut self) -> Vec<Diagnostic> {
        self.items.sort_by_key(|d| d.frame.unwrap_or(u64::MAX));
        self.items
    }

    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        let mut counts = BTreeMap::new();
        for item in &self.items {
            *counts.entry(item.kind.as_str()).or_default() += 1;
        }
        counts
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}
