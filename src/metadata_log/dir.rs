//! What a path names: a `__cluster_metadata-0` directory -> its latest `.checkpoint`
//! snapshot, then its `.log` segments by base offset; the data directory above it -> the
//! same; a single file -> itself, a snapshot if its name ends in `.checkpoint`. A directory with neither is a
//! [`LogProblem::NoLogFiles`]; a path that cannot be opened or listed is an [`Error`].
//! Partial (`.checkpoint.part`) and deleted (`.deleted`) files are passed over.

use std::path::{Path, PathBuf};

use super::{FileKind, LogProblem};
use crate::error::Error;

/// A file to read, and (for a snapshot named as Kafka names them) its id offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToRead {
    pub path: PathBuf,
    pub kind: FileKind,
    pub snapshot_end: Option<i64>,
}

/// A snapshot's `<20-digit offset>-<10-digit epoch>`, or a segment's `<20-digit offset>`.
fn parse_stem(stem: &str) -> Option<(i64, i64)> {
    match stem.split_once('-') {
        Some((o, e)) => Some((o.parse().ok()?, e.parse().ok()?)),
        None => Some((stem.parse().ok()?, 0)),
    }
}

pub fn one_file(path: &Path) -> ToRead {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match name.strip_suffix(".checkpoint") {
        Some(stem) => ToRead {
            path: path.to_path_buf(),
            kind: FileKind::Snapshot,
            snapshot_end: parse_stem(stem).map(|(o, _)| o),
        },
        None => ToRead {
            path: path.to_path_buf(),
            kind: FileKind::Segment,
            snapshot_end: None,
        },
    }
}

/// The files `path` names, in the order to read them.
pub fn files(path: &str) -> Result<Result<Vec<ToRead>, LogProblem>, Error> {
    let open = |source| Error::Open {
        path: path.to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(open)?;
    if !meta.is_dir() {
        return Ok(Ok(vec![one_file(Path::new(path))]));
    }
    let mut segments = Vec::new();
    let mut snapshots = Vec::new();
    for entry in std::fs::read_dir(path).map_err(open)? {
        let entry = entry.map_err(open)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".log") {
            let order = parse_stem(stem).map(|(o, _)| o);
            segments.push((order, name, entry.path()));
        } else if let Some(stem) = name.strip_suffix(".checkpoint") {
            snapshots.push((parse_stem(stem), name, entry.path()));
        }
    }
    // By offset where the name is Kafka's, by name otherwise (after those).
    segments.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
    snapshots.sort_by(|a, b| (a.0.is_some(), a.0, &a.1).cmp(&(b.0.is_some(), b.0, &b.1)));
    let mut out = Vec::new();
    if let Some((id, _, p)) = snapshots.pop() {
        out.push(ToRead {
            path: p,
            kind: FileKind::Snapshot,
            snapshot_end: id.map(|(o, _)| o),
        });
    }
    out.extend(segments.into_iter().map(|(_, _, p)| ToRead {
        path: p,
        kind: FileKind::Segment,
        snapshot_end: None,
    }));
    if out.is_empty() {
        // a controller's data directory: its log is the folder inside
        let inside = Path::new(path).join(METADATA_DIR);
        if inside.is_dir() {
            return files(&inside.to_string_lossy());
        }
        return Ok(Err(LogProblem::NoLogFiles {
            path: path.to_string(),
        }));
    }
    Ok(Ok(out))
}

/// The folder of a KRaft node's data directory that holds the metadata log.
pub const METADATA_DIR: &str = "__cluster_metadata-0";
