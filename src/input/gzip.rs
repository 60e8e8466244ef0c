//! gzip-compressed input, recognised by its first bytes and inflated through flate2's
//! `MultiGzDecoder` (so the streams of a concatenated `.gz` are read one after another),
//! with a guard against decompression bombs.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;

use super::Counting;
use crate::error::Error;

/// gzip's magic bytes (RFC 1952): a compressed capture is recognised by content, not name.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Bytes read first, to look for [`GZIP_MAGIC`].
const HEAD_LEN: usize = 64 << 10;

/// Reads gzip-compressed input through a decoder, whatever its name.
pub(super) fn decompress(
    path: &str,
    raw: Box<dyn Read + Send>,
) -> Result<Box<dyn Read + Send>, Error> {
    decompress_flagged(path, raw).map(|(input, _)| input)
}

/// [`decompress`], and whether the bytes are inflated (not the file's own, offset for
/// offset).
pub(super) fn decompress_flagged(
    path: &str,
    mut raw: Box<dyn Read + Send>,
) -> Result<(Box<dyn Read + Send>, bool), Error> {
    // Peek at the start and put it back in front. A whole first block, not just the two
    // bytes needed: the file is then read on at page-aligned offsets (reads at odd
    // offsets copy out of the page cache at half the speed).
    let mut head = vec![0u8; HEAD_LEN];
    let mut filled = 0;
    let read_error = |source| Error::Read {
        path: path.to_owned(),
        source,
    };
    while filled < GZIP_MAGIC.len() {
        match raw.read(head.get_mut(filled..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(e)),
        }
    }
    head.truncate(filled);
    let is_gzip = head.starts_with(&GZIP_MAGIC);
    let whole = std::io::Cursor::new(head).chain(raw);
    if is_gzip {
        let compressed = Arc::new(AtomicU64::new(0));
        let counted = Counting::new(whole, Arc::clone(&compressed));
        let inflated = BombGuard {
            inner: MultiGzDecoder::new(counted),
            compressed,
            produced: 0,
        };
        Ok((Box::new(inflated), true))
    } else {
        Ok((Box::new(whole), false))
    }
}

/// Largest expansion believed of gzip input: real captures compress a few times to a
/// few dozen times; a "gzip bomb" of zeros expands a thousandfold.
pub const MAX_GZIP_RATIO: u64 = 1000;

/// Stops decompression that expands more than [`MAX_GZIP_RATIO`] times (after the first
/// MiB), as an error: what was read before is still reported.
struct BombGuard<R> {
    inner: R,
    compressed: Arc<AtomicU64>,
    produced: u64,
}

/// What the gzip decoder's "unexpected end of file" means: the compressed file was cut
/// short (`head -c`, a copy stopped midway), as a plain capture cut inside a record is.
/// Kept an `UnexpectedEof`, which the capture reader reports as `capture_truncated`.
const GZIP_ENDS_EARLY: &str = "the compressed file ends in the middle of its gzip stream";

impl<R: Read> Read for BombGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, GZIP_ENDS_EARLY)
            }
            // bad deflate data, a checksum that does not match: corruption
            _ => e,
        })?;
        self.produced = self.produced.saturating_add(n as u64);
        let allowed = self
            .compressed
            .load(Ordering::Relaxed)
            .saturating_mul(MAX_GZIP_RATIO)
            .max(1 << 20);
        if self.produced > allowed {
            return Err(std::io::Error::other(format!(
                "gzip data expands more than {MAX_GZIP_RATIO} times; not read further"
            )));
        }
        Ok(n)
    }
}
