//! Input: a capture's bytes, from a file or standard input, for the capture reader.
//!
//! In: a path (`-` for standard input) or a reader. Out: the bytes as [`Blocks`], gzip
//! inflated whatever the file is called, read ahead on a thread of their own
//! ([`readahead`]) or on the calling one. Refused, as a fatal [`Error`]: a path that cannot
//! be opened or is a directory. A gzip stream that expands past [`MAX_GZIP_RATIO`] fails
//! the read where it stands, like a read error: what came before is still reported.

mod gzip;
pub mod readahead;
mod reread;

use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Error;

pub use gzip::MAX_GZIP_RATIO;
pub use readahead::{Blocks, ReadAhead, ReadBlocks};
pub use reread::Reread;

/// The path that names standard input (as an input) or standard output (as `-o`), as
/// curl, tar and pandoc read it: never a file of that name.
pub const STANDARD_STREAM: &str = "-";

/// Opens `path` (`-`: standard input) and reads it, inflated if it is gzip, on a thread of
/// its own: reading and inflating go on beside the parsing. `bytes_read` counts the bytes
/// read from the file (before inflating), for a progress display; once `stop` is set the
/// input reads as ended. A regular file read as it is comes with a second handle to read
/// it again ([`Blocks::take_reread`]).
pub fn open(
    path: &str,
    bytes_read: Option<&Arc<AtomicU64>>,
    stop: Arc<AtomicBool>,
) -> Result<Box<dyn Blocks>, Error> {
    let mut again = None;
    let raw: Box<dyn Read + Send> = if path == STANDARD_STREAM {
        Box::new(std::io::stdin())
    } else {
        let file = File::open(path).map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        let metadata = file.metadata().ok();
        if metadata.as_ref().is_some_and(std::fs::Metadata::is_dir) {
            return Err(Error::IsDirectory {
                path: path.to_owned(),
            });
        }
        // only a regular file can be read again at an offset: not a named pipe, nor the
        // /dev/fd/N of a shell's process substitution
        if metadata.is_some_and(|m| m.is_file()) {
            again = file.try_clone().ok();
        }
        Box::new(file)
    };
    let raw: Box<dyn Read + Send> = match bytes_read {
        Some(count) => Box::new(Counting::new(raw, Arc::clone(count))),
        None => raw,
    };
    let (input, inflated) = gzip::decompress_flagged(path, raw)?;
    let again = again.filter(|_| !inflated);
    Ok(Box::new(
        ReadAhead::new(input).stop_when(stop).read_again_by(again),
    ))
}

/// `input` (named `name`), inflated if it is gzip, read on the calling thread: no thread
/// outlives the run (a detached read-ahead thread ending after it shows as a leak to the
/// fuzzers' sanitizer).
pub fn on_this_thread(name: &str, input: Box<dyn Read + Send>) -> Result<Box<dyn Blocks>, Error> {
    Ok(Box::new(ReadBlocks::new(gzip::decompress(name, input)?)))
}

/// `input` (named `path`), inflated if it is gzip, as a plain reader: for a look at the
/// start of a file before it is read in full.
pub fn inflated(path: &str, input: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>, Error> {
    gzip::decompress(path, input)
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Self { inner, count }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
