//! Fatal errors: the run cannot produce a report. Findings about the input are not
//! errors: they are diagnostics in the report, and the run goes on.
//!
//! A leaf: every module may use it, and it uses none of the crate's.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: is a directory, not a capture file")]
    IsDirectory { path: String },
    #[error("{path}: {reason}")]
    NotACapture { path: String, reason: String },
    #[error("{path}: read failed: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot use as --expect: {reason}", path.display())]
    Expect { path: PathBuf, reason: String },
    #[error("cannot start a thread: {source}")]
    Thread {
        #[source]
        source: std::io::Error,
    },
    /// The report's sink failed; the binary names its destination ([`Error::Write`]).
    #[error("cannot write the report: {source}")]
    Output {
        #[source]
        source: std::io::Error,
    },
    #[error("{}: cannot write the report: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
