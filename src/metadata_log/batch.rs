//! Record-batch framing (magic 2, `DefaultRecordBatch`): a reader's bytes -> one whole
//! batch at a time, its header parsed and its CRC-32C checked. Refuses another magic, a
//! CRC mismatch, a length under the header's (corrupt); a length over
//! [`Limits::max_batch_len`] (limit); a batch the input ends inside (truncated). A tail of
//! zero bytes (a preallocated or killed segment: Kafka's recovery truncates it) ends the
//! data. Nothing is allocated by a length field before it is checked against the bytes
//! left.

use std::io::{self, Read};

use super::Limits;
use super::Reason;
use crate::kafka::reader::Reader;

/// baseOffset + batchLength: what precedes the length's count.
pub const LOG_OVERHEAD: u64 = 12;
/// The whole header, up to the first record.
pub const HEADER_LEN: u64 = 61;
/// The header's bytes counted by batchLength (from partitionLeaderEpoch on).
const HEADER_AFTER_LENGTH: u64 = HEADER_LEN - LOG_OVERHEAD;

/// A batch's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub base_offset: i64,
    pub leader_epoch: i32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub records_count: i32,
}

impl Header {
    /// Bits 0-2: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
    pub fn compression(&self) -> u8 {
        (self.attributes & 0x7) as u8
    }

    pub fn is_control(&self) -> bool {
        self.attributes & 0x20 != 0
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }
}

/// One batch: its header and its records' bytes (still compressed if it is).
#[derive(Debug)]
pub struct Batch {
    pub header: Header,
    pub records: Vec<u8>,
    /// The batch's whole size in the file.
    pub size: u64,
}

/// What the input holds next.
#[derive(Debug)]
pub enum Next {
    /// The input's end, between batches.
    End,
    /// Only zero bytes are left.
    ZeroTail,
    Batch(Batch),
    Truncated {
        needed: u64,
        len: u64,
    },
    Corrupt(String),
    Limit(String),
}

/// Reads up to `buf.len()` bytes, fewer only at the input's end.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..) {
        if rest.is_empty() {
            break;
        }
        match r.read(rest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads the rest of the input: whether every byte of it is zero.
fn rest_is_zero(r: &mut dyn Read) -> io::Result<bool> {
    let mut buf = [0u8; 8192];
    loop {
        let n = read_full(r, &mut buf)?;
        let chunk = buf.get(..n).unwrap_or_default();
        if chunk.iter().any(|&b| b != 0) {
            return Ok(false);
        }
        if n < buf.len() {
            return Ok(true);
        }
    }
}

/// Reads the next batch from `r`, which has `left` bytes before its end.
pub fn next(r: &mut dyn Read, left: u64, limits: &Limits) -> io::Result<Next> {
    let mut prefix = [0u8; LOG_OVERHEAD as usize];
    let n = read_full(r, &mut prefix)?;
    if n == 0 {
        return Ok(Next::End);
    }
    if n == prefix.len() && prefix.iter().all(|&b| b == 0) {
        // baseOffset 0, length 0: Kafka's reader calls it corrupt and recovery truncates
        // there; a run of zeros to the end is space preallocated and never written (a
        // segment left by kill -9), not damage. Fewer than 12 zeros are a cut header.
        if rest_is_zero(r)? {
            return Ok(Next::ZeroTail);
        }
    }
    if n < prefix.len() {
        return Ok(Next::Truncated {
            needed: HEADER_LEN,
            len: n as u64,
        });
    }
    let mut c = Reader::new(&prefix);
    let base_offset = c.i64("baseOffset").unwrap_or_default();
    let length = c.i32("batchLength").unwrap_or_default();
    let length = match u64::try_from(length) {
        Ok(l) if l >= HEADER_AFTER_LENGTH => l,
        _ => {
            return Ok(Next::Corrupt(format!(
                "batch length {length} is under a batch header's {HEADER_AFTER_LENGTH}"
            )))
        }
    };
    let size = LOG_OVERHEAD.saturating_add(length);
    if size > left {
        return Ok(Next::Truncated {
            needed: size,
            len: left,
        });
    }
    if length > limits.max_batch_len as u64 {
        return Ok(Next::Limit(format!(
            "batch of {length} bytes is over the limit of {}",
            limits.max_batch_len
        )));
    }
    // bounded by max_batch_len and by the bytes the input has left
    let mut body = Vec::with_capacity(length as usize);
    r.take(length).read_to_end(&mut body)?;
    if (body.len() as u64) < length {
        return Ok(Next::Truncated {
            needed: size,
            len: LOG_OVERHEAD.saturating_add(body.len() as u64),
        });
    }
    parse(base_offset, body, size)
        .map(Next::Batch)
        .or_else(|reason| Ok(Next::Corrupt(reason.to_string())))
}

/// The header after batchLength, checked: magic, CRC-32C over attributes to the end.
fn parse(base_offset: i64, mut body: Vec<u8>, size: u64) -> Result<Batch, Reason> {
    let mut c = Reader::new(&body);
    let leader_epoch = c.i32("partitionLeaderEpoch")?;
    let magic = c.i8("magic")?;
    if magic != 2 {
        return Err(format!("magic {magic}, not 2").into());
    }
    let crc = c.i32("crc")?.cast_unsigned();
    let covered = body.get(9..).unwrap_or_default();
    let computed = crc32c::crc32c(covered);
    if computed != crc {
        return Err(format!(
            "CRC-32C mismatch: header says {crc:#010x}, bytes give {computed:#010x}"
        )
        .into());
    }
    let attributes = c.i16("attributes")?;
    let last_offset_delta = c.i32("lastOffsetDelta")?;
    let base_timestamp = c.i64("baseTimestamp")?;
    let max_timestamp = c.i64("maxTimestamp")?;
    let _producer_id = c.i64("producerId")?;
    let _producer_epoch = c.i16("producerEpoch")?;
    let _base_sequence = c.i32("baseSequence")?;
    let records_count = c.i32("recordsCount")?;
    if records_count < 0 {
        return Err(format!("record count {records_count}").into());
    }
    let header = Header {
        base_offset,
        leader_epoch,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        records_count,
    };
    let header_rest = (HEADER_AFTER_LENGTH) as usize;
    body.drain(..header_rest.min(body.len()));
    Ok(Batch {
        header,
        records: body,
        size,
    })
}
