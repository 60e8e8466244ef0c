//! What the capture, link, IP and TCP layers show.

use std::fmt;
use std::net::SocketAddr;

use crate::diag::facts::facts;
use crate::diag::parts::{Cut, Damage};
use crate::diag::Facts;

/// The file ends, or its decompressed stream breaks off, inside a record.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureTruncated<'a> {
    pub path: &'a str,
    pub record_offset: u64,
    /// Packets read before it.
    pub packets: u64,
    pub cut: Cut<'a>,
}

impl CaptureTruncated<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            path,
            record_offset,
            packets,
            cut: _,
        } = self;
        facts![path, record_offset, packets]
    }
}

impl fmt::Display for CaptureTruncated<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            path,
            record_offset,
            packets,
            cut,
        } = self;
        match cut {
            Cut::InsideRecord => write!(
                f,
                "{path} ends inside a record that starts at byte {record_offset}; the {packets} packets before it were read"
            ),
            Cut::Stream { error } => write!(
                f,
                "{path} is cut short: {error}; the {packets} packets before the cut were read"
            ),
        }
    }
}

/// What a [`Kind::CaptureCorrupt`](crate::diag::Kind::CaptureCorrupt) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureCorrupt<'a> {
    pub path: &'a str,
    pub record_offset: u64,
    pub damage: Damage<'a>,
}

impl CaptureCorrupt<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            path,
            record_offset,
            damage: _,
        } = self;
        facts![path, record_offset]
    }
}

impl fmt::Display for CaptureCorrupt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            path,
            record_offset: offset,
            damage,
        } = self;
        match damage {
            Damage::RecordTooLarge { limit_mib } => write!(
                f,
                "{path}: the record at byte {offset} is larger than {limit_mib} MiB; reading stopped there"
            ),
            Damage::Unreadable { why, packets } => write!(
                f,
                "{path} is corrupt at byte {offset} ({why}); the {packets} packets before it were read"
            ),
            Damage::ReadFailed { error, packets } => write!(
                f,
                "{path}: reading failed after {packets} packets ({error}); what came before is reported"
            ),
            Damage::OverSnaplen {
                len,
                snaplen,
                max_len,
            } => write!(
                f,
                "{path}: the record at byte {offset} holds {len} bytes, more than the capture's snaplen of {snaplen} and the {max_len} any packet may have; it was skipped"
            ),
            Damage::TooManyInterfaces { max } => write!(
                f,
                "{path}: the section at byte {offset} describes more than {max} interfaces; the rest are not kept, and their packets are skipped"
            ),
            Damage::UnknownInterface {
                interface,
                described,
            } => write!(
                f,
                "{path}: packet block at byte {offset} names interface {interface} but only {described} are described; the packet was skipped"
            ),
        }
    }
}

/// A packet captured shorter than it was on the wire (snaplen).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketTruncated {
    pub bytes_missing: u64,
}

impl PacketTruncated {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { bytes_missing } = self;
        facts![bytes_missing]
    }
}

impl fmt::Display for PacketTruncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { bytes_missing } = self;
        write!(
            f,
            "packet was captured {bytes_missing} bytes short of its length on the wire (snaplen); those stream bytes are missing"
        )
    }
}

/// What a [`Kind::UnsupportedLinkType`](crate::diag::Kind::UnsupportedLinkType) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnsupportedLinkType<'a> {
    /// The link type's name.
    pub link_type: &'a str,
    pub link_type_number: i32,
}

impl UnsupportedLinkType<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            link_type,
            link_type_number,
        } = self;
        facts![link_type, link_type_number]
    }
}

impl fmt::Display for UnsupportedLinkType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { link_type, .. } = self;
        write!(
            f,
            "link type {link_type} is not supported; its packets are skipped"
        )
    }
}

/// What a [`Kind::PacketMalformed`](crate::diag::Kind::PacketMalformed) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketMalformed<'a> {
    /// Fragments the IP datagram was reassembled from, when it was.
    pub fragments: Option<u64>,
    /// What the decoder could not read.
    pub reason: &'a str,
}

impl PacketMalformed<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { fragments, reason } = self;
        facts![fragments?, reason]
    }
}

impl fmt::Display for PacketMalformed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self {
                fragments: Some(fragments),
                reason,
            } => write!(
                f,
                "the IP datagram reassembled from {fragments} fragments could not be decoded: {reason}"
            ),
            Self {
                fragments: None,
                reason,
            } => write!(f, "packet could not be decoded: {reason}"),
        }
    }
}

/// What a [`Kind::MidstreamStart`](crate::diag::Kind::MidstreamStart) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MidstreamStart {
    pub from: SocketAddr,
    pub to: SocketAddr,
}

impl MidstreamStart {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { from, to, .. } = self;
        facts![from, to]
    }
}

impl fmt::Display for MidstreamStart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { from, to } = self;
        write!(
            f,
            "connection {from} - {to} was already open when the capture started; its streams are read from the first captured byte"
        )
    }
}

/// What a [`Kind::TcpGap`](crate::diag::Kind::TcpGap) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpGap {
    pub bytes: u64,
    pub from: SocketAddr,
    pub to: SocketAddr,
}

impl TcpGap {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { bytes, from, to } = self;
        facts![bytes, from, to]
    }
}

impl fmt::Display for TcpGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { bytes, from, to } = self;
        write!(
            f,
            "{bytes} bytes from {from} to {to} are missing from the capture"
        )
    }
}

/// What a [`Kind::TcpOverlapConflict`](crate::diag::Kind::TcpOverlapConflict) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpOverlapConflict {
    /// Stream offset of the bytes that differ.
    pub offset: u64,
    pub bytes: u64,
    pub from: SocketAddr,
}

impl TcpOverlapConflict {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            offset,
            bytes,
            from,
        } = self;
        facts![offset, bytes, from]
    }
}

impl fmt::Display for TcpOverlapConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            offset,
            bytes,
            from,
        } = self;
        write!(
            f,
            "a retransmission from {from} differs from the first copy within the {bytes} bytes at stream offset {offset}; the first copy was kept"
        )
    }
}

/// What a [`Kind::TcpOverlapUnread`](crate::diag::Kind::TcpOverlapUnread) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpOverlapUnread {
    /// Stream offset of the bytes not compared.
    pub offset: u64,
    pub bytes: u64,
    pub from: SocketAddr,
}

impl TcpOverlapUnread {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            offset,
            bytes,
            from,
        } = self;
        facts![offset, bytes, from]
    }
}

impl fmt::Display for TcpOverlapUnread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            offset,
            bytes,
            from,
        } = self;
        write!(
            f,
            "a retransmission from {from} was not compared with the first copy of the {bytes} bytes at stream offset {offset}: the capture file could not be read there again; the first copy was kept"
        )
    }
}

/// What a [`Kind::TcpRstOutOfWindow`](crate::diag::Kind::TcpRstOutOfWindow) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TcpRstOutOfWindow {
    pub from: SocketAddr,
    pub seq: u32,
}

impl TcpRstOutOfWindow {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { from, seq } = self;
        facts![from, seq]
    }
}

impl fmt::Display for TcpRstOutOfWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { from, seq } = self;
        write!(
            f,
            "an RST from {from} with sequence number {seq} lies outside the receive window; the connection goes on (RFC 5961)"
        )
    }
}

/// What a [`Kind::CaptureFilesOverlap`](crate::diag::Kind::CaptureFilesOverlap) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaptureFilesOverlap<'a> {
    pub path: &'a str,
    pub other_path: &'a str,
}

impl CaptureFilesOverlap<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { path, other_path } = self;
        facts![path, other_path]
    }
}

impl fmt::Display for CaptureFilesOverlap<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { path, other_path } = self;
        write!(
            f,
            "{path} and {other_path} overlap in time: their packets were merged by timestamp, as mergecap merges them"
        )
    }
}

/// What a [`Kind::DuplicateWindowFull`](crate::diag::Kind::DuplicateWindowFull) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DuplicateWindowFull {
    /// Packets among which copies are recognised.
    pub remembered: u64,
}

impl DuplicateWindowFull {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { remembered } = self;
        facts![remembered]
    }
}

impl fmt::Display for DuplicateWindowFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { remembered } = self;
        write!(
            f,
            "more than {remembered} packets fall within the clock skew allowed: copies of one packet in two files are recognised only among the last {remembered}; others are read as retransmissions, their bytes still read once"
        )
    }
}
