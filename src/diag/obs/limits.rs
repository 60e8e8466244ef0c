//! Where a bound of pidshark was reached.

use std::fmt;

use crate::diag::facts::facts;
use crate::diag::observation::UNDECODED_KINDS;
use crate::diag::parts::GivenUp;
use crate::diag::{Facts, Kind, MAX_LISTED_PER_KIND};

/// More of `kind` than [`MAX_LISTED_PER_KIND`](MAX_LISTED_PER_KIND) were found
/// (of one API, for the kinds of messages not read: so that a flood of one API's does
/// not hide another's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiagnosticsLimited {
    pub kind: Kind,
    pub count: u64,
    pub listed: u64,
}

impl DiagnosticsLimited {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            kind,
            count,
            listed,
        } = self;
        facts![kind, count, listed]
    }
}

impl fmt::Display for DiagnosticsLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self {
                kind,
                count,
                listed,
            } if UNDECODED_KINDS.contains(kind) => write!(
                f,
                "{count} {} diagnostics were found; only {listed} are listed, the first {} of each API",
                kind.as_str(),
                MAX_LISTED_PER_KIND
            ),
            Self {
                kind,
                count,
                listed,
            } => write!(
                f,
                "{count} {} diagnostics were found; only the first {listed} are listed",
                kind.as_str()
            ),
        }
    }
}

/// What a [`Kind::ConnectionLimit`](crate::diag::Kind::ConnectionLimit) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConnectionLimit {
    /// Connections open at once.
    pub open: u64,
    pub max_connections: u64,
    /// The first connection no longer followed.
    pub first: u64,
}

impl ConnectionLimit {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self {
            max_connections, ..
        } = self;
        facts![max_connections]
    }
}

impl fmt::Display for ConnectionLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            open,
            max_connections,
            first,
        } = self;
        write!(
            f,
            "more than {open} connections at once (--max-connections {max_connections}, or as many as the table's share of --max-memory holds): the least recently active are no longer followed (connection {first} first)"
        )
    }
}

/// What a [`Kind::MemoryLimit`](crate::diag::Kind::MemoryLimit) diagnostic says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryLimit<'a> {
    pub connection: u64,
    pub given_up: GivenUp<'a>,
}

impl MemoryLimit<'_> {
    /// What the sentence states, as named fields of the report.
    pub fn facts(&self) -> Facts {
        let Self { given_up, .. } = self;
        vec![given_up.fact()]
    }
}

impl fmt::Display for MemoryLimit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            connection,
            given_up,
        } = self;
        given_up.write(*connection, f)
    }
}
