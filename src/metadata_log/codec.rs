//! A batch's records section, decompressed as Kafka's producers and controllers compress
//! it: gzip, snappy (xerial's framing, as `SnappyOutputStream` writes it), LZ4 frames
//! (`Lz4BlockOutputStream`), zstd frames. In: the compression id and bytes; out: the
//! inflated bytes. Refuses more than `max` bytes of output (a limit), a zstd window over
//! `max`, and anything its decoder calls malformed (corrupt). Every decoder is read through
//! `take`, so output past the bound is never held.

use std::io::Read;

use crate::kafka::reader::Reader;

#[derive(Debug, PartialEq, Eq)]
pub enum CodecError {
    Corrupt(String),
    Limit(String),
}

fn over(max: usize) -> CodecError {
    CodecError::Limit(format!("records inflate past the limit of {max} bytes"))
}

/// Reads `r` to its end, refusing more than `max` bytes.
fn bounded(r: impl Read, max: usize, what: &str) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    r.take((max as u64).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| CodecError::Corrupt(format!("{what}: {e}")))?;
    if out.len() > max {
        return Err(over(max));
    }
    Ok(out)
}

/// The records bytes of a batch compressed with `id`.
pub fn decompress(id: u8, bytes: Vec<u8>, max: usize) -> Result<Vec<u8>, CodecError> {
    match id {
        0 => Ok(bytes),
        // Java's GZIPInputStream reads concatenated members, so do we.
        1 => bounded(flate2::read::MultiGzDecoder::new(&bytes[..]), max, "gzip"),
        2 => snappy_xerial(&bytes, max),
        3 => bounded(lz4_flex::frame::FrameDecoder::new(&bytes[..]), max, "lz4"),
        4 => zstd(&bytes, max),
        n => Err(CodecError::Corrupt(format!("compression type {n}"))),
    }
}

/// xerial's header: magic, then version and compatible version (both 1), big-endian.
pub const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";

/// xerial-snappy's stream: its header, then blocks of a 4-byte big-endian length and raw
/// snappy. Without the header `SnappyInputStream` reads the whole as one raw block; so do we.
fn snappy_xerial(bytes: &[u8], max: usize) -> Result<Vec<u8>, CodecError> {
    let corrupt = |e: &dyn std::fmt::Display| CodecError::Corrupt(format!("snappy: {e}"));
    let Some(mut rest) = bytes.strip_prefix(XERIAL_MAGIC.as_slice()) else {
        return raw_snappy(bytes, max, 0).map_err(|e| match e {
            CodecError::Corrupt(r) => corrupt(&r),
            l => l,
        });
    };
    let mut c = Reader::new(rest);
    let _version = c.i32("xerial version").map_err(|e| corrupt(&e))?;
    let _compatible = c
        .i32("xerial compatible version")
        .map_err(|e| corrupt(&e))?;
    rest = rest.get(8..).unwrap_or_default();
    let mut out = Vec::new();
    let mut c = Reader::new(rest);
    while c.remaining() > 0 {
        let len = c.i32("xerial block length").map_err(|e| corrupt(&e))?;
        let len = usize::try_from(len).map_err(|_| corrupt(&format!("block length {len}")))?;
        let block = c.slice("xerial block", len).map_err(|e| corrupt(&e))?;
        let inflated = raw_snappy(block, max, out.len())?;
        out.extend_from_slice(&inflated);
    }
    Ok(out)
}

/// One raw snappy block, whose declared length is checked against what `max` leaves.
fn raw_snappy(block: &[u8], max: usize, have: usize) -> Result<Vec<u8>, CodecError> {
    let len = snap::raw::decompress_len(block).map_err(|e| CodecError::Corrupt(e.to_string()))?;
    if have.saturating_add(len) > max {
        return Err(over(max));
    }
    snap::raw::Decoder::new()
        .decompress_vec(block)
        .map_err(|e| CodecError::Corrupt(e.to_string()))
}

/// zstd frames, one after another (zstd-jni's stream writes one per batch), each with a
/// window of at most `max` (the decoder reserves its window up front).
fn zstd(bytes: &[u8], max: usize) -> Result<Vec<u8>, CodecError> {
    use ruzstd::decoding::{FrameDecoder, StreamingDecoder};
    let corrupt = |e: String| CodecError::Corrupt(format!("zstd: {e}"));
    let mut input = bytes;
    let mut out = Vec::new();
    while !input.is_empty() {
        let window = (max as u64).max(1 << 10);
        let mut decoder = FrameDecoder::new();
        decoder.set_max_window_size(window);
        let stream = match StreamingDecoder::new_with_decoder(&mut input, decoder) {
            Ok(s) => s,
            Err(e) => {
                let text = e.to_string();
                return Err(if text.contains("window") {
                    CodecError::Limit(format!("zstd: {text}"))
                } else {
                    corrupt(text)
                });
            }
        };
        let left = max.saturating_sub(out.len());
        let mut frame = Vec::new();
        stream
            .take((left as u64).saturating_add(1))
            .read_to_end(&mut frame)
            .map_err(|e| corrupt(e.to_string()))?;
        if frame.len() > left {
            return Err(over(max));
        }
        out.extend_from_slice(&frame);
    }
    Ok(out)
}
