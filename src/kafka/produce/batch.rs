//! The head of a record batch as a Produce request carries it: what the broker's producer
//! state judges a write by (producer id, epoch, base sequence, how many records), read
//! from its uncompressed header. The records after it are never read.
//!
//! Layout: Apache Kafka `DefaultRecordBatch` (magic 2, from 0.11) and the legacy message
//! sets of `LegacyRecord` (magic 0 and 1), which share the first 17 bytes: base offset
//! (int64), a length (int32) counting every byte after it, and the magic byte at 16.

use crate::kafka::reader::{DecodeError, Reader};

/// Bytes before the length's count starts: base offset and length (`LOG_OVERHEAD`).
pub const LOG_OVERHEAD: u32 = 12;
/// Bytes up to and with the magic byte, which every format has.
pub const MAGIC_END: usize = 17;
/// A magic-2 batch's header, to its records (`RECORD_BATCH_OVERHEAD`).
pub const HEADER_LEN: usize = 61;
/// The magic of the batches idempotent producers write.
pub const MAGIC_V2: i8 = 2;

/// Attribute bit: the batch is part of a transaction.
const TRANSACTIONAL: i16 = 0x10;
/// Attribute bit: the batch holds a transaction marker, not records.
const CONTROL: i16 = 0x20;

/// A record batch's header. A legacy (magic 0 or 1) entry has no producer fields:
/// they are `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchHeader {
    /// `baseOffset`: 0 from a client; the broker assigns offsets.
    pub base_offset: i64,
    /// The batch's bytes on the wire, `baseOffset` and length included.
    pub size: u32,
    pub magic: i8,
    /// `crc` (CRC-32C of the bytes after it): tells two batches of one sequence apart.
    pub crc: Option<u32>,
    pub attributes: Option<i16>,
    /// `lastOffsetDelta`: records in the batch less one, as the broker counts its offsets.
    pub last_offset_delta: Option<i32>,
    pub max_timestamp: Option<i64>,
    /// `producerId`: -1 for a producer that is not idempotent.
    pub producer_id: Option<i64>,
    pub producer_epoch: Option<i16>,
    /// `baseSequence`: -1 without a producer id.
    pub base_sequence: Option<i32>,
    /// `recordsCount`.
    pub records_count: Option<i32>,
}

impl BatchHeader {
    /// Whether the transactional attribute is set.
    pub fn is_transactional(&self) -> bool {
        self.attributes.is_some_and(|a| a & TRANSACTIONAL != 0)
    }

    /// Whether the batch is a control batch (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes.is_some_and(|a| a & CONTROL != 0)
    }

    /// The last sequence the batch takes (`baseSequence + lastOffsetDelta`, wrapping at
    /// `i32::MAX` as Kafka's `DefaultRecordBatch.incrementSequence` does), when it has
    /// a producer id. None for a negative `lastOffsetDelta`, which no batch of records
    /// has: its last sequence is no fact to judge by.
    pub fn last_sequence(&self) -> Option<i32> {
        let (base, delta) = (self.base_sequence?, self.last_offset_delta?);
        if base < 0 || delta < 0 {
            return None;
        }
        let gap = i32::MAX - delta;
        Some(if base > gap {
            base - gap - 1
        } else {
            base + delta
        })
    }
}

/// What the first bytes of a batch say: its size on the wire and how many bytes of it
/// make its header (61 for magic 2, 17 for the legacy formats, whose heads carry nothing
/// more that matters here). `Invalid` when the length or magic cannot be a batch's.
pub fn size_and_head(first: &[u8]) -> Result<(u32, usize), DecodeError> {
    let mut r = Reader::new(first);
    r.i64("baseOffset")?;
    let length_at = r.position();
    let length = r.i32("batchLength")?;
    r.i32("partitionLeaderEpoch")?;
    let magic_at = r.position();
    let magic = r.i8("magic")?;
    let head = match magic {
        MAGIC_V2 => HEADER_LEN,
        0 | 1 => MAGIC_END,
        other => {
            return Err(invalid(
                "magic",
                magic_at,
                format!("magic {other} is not 0, 1 or 2"),
            ));
        }
    };
    let min = head as i64 - i64::from(LOG_OVERHEAD);
    if i64::from(length) < min {
        let reason = format!("{length} bytes cannot hold a magic-{magic} batch's header");
        return Err(invalid("batchLength", length_at, reason));
    }
    let size = u32::try_from(length)
        .ok()
        .and_then(|l| l.checked_add(LOG_OVERHEAD))
        .ok_or_else(|| invalid("batchLength", length_at, format!("{length} is too long")))?;
    Ok((size, head))
}

/// Reads a batch's header from its first bytes ([`size_and_head`]'s `head` of them).
pub fn read_header(bytes: &[u8]) -> Result<BatchHeader, DecodeError> {
    let (size, head) = size_and_head(bytes)?;
    let mut r = Reader::new(bytes);
    let base_offset = r.i64("baseOffset")?;
    r.i32("batchLength")?;
    r.i32("partitionLeaderEpoch")?;
    let magic = r.i8("magic")?;
    let mut batch = BatchHeader {
        base_offset,
        size,
        magic,
        ..BatchHeader::default()
    };
    if head == HEADER_LEN {
        batch.crc = Some(r.i32("crc")?.cast_unsigned());
        batch.attributes = Some(r.i16("attributes")?);
        batch.last_offset_delta = Some(r.i32("lastOffsetDelta")?);
        r.i64("baseTimestamp")?;
        batch.max_timestamp = Some(r.i64("maxTimestamp")?);
        batch.producer_id = Some(r.i64("producerId")?);
        batch.producer_epoch = Some(r.i16("producerEpoch")?);
        batch.base_sequence = Some(r.i32("baseSequence")?);
        batch.records_count = Some(r.i32("recordsCount")?);
    }
    Ok(batch)
}

fn invalid(field: &'static str, offset: usize, reason: String) -> DecodeError {
    DecodeError::Invalid {
        field,
        offset,
        reason,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A magic-2 batch header as Kafka's `DefaultRecordBatch` lays it out.
    pub fn v2_header(pid: i64, epoch: i16, seq: i32, records: i32, body: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0i64.to_be_bytes()); // baseOffset
        let length = (HEADER_LEN as u32 - LOG_OVERHEAD + body) as i32;
        b.extend_from_slice(&length.to_be_bytes());
        b.extend_from_slice(&(-1i32).to_be_bytes()); // partitionLeaderEpoch
        b.push(2); // magic
        b.extend_from_slice(&0x1234_5678u32.to_be_bytes()); // crc
        b.extend_from_slice(&0x0010i16.to_be_bytes()); // attributes: transactional
        b.extend_from_slice(&(records - 1).to_be_bytes()); // lastOffsetDelta
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_005i64.to_be_bytes());
        b.extend_from_slice(&pid.to_be_bytes());
        b.extend_from_slice(&epoch.to_be_bytes());
        b.extend_from_slice(&seq.to_be_bytes());
        b.extend_from_slice(&records.to_be_bytes());
        b
    }

    #[test]
    fn a_v2_header_gives_the_producer_fields_and_the_batch_size() {
        let bytes = v2_header(2999, 3, 40, 5, 100);
        let batch = read_header(&bytes).unwrap();
        assert_eq!(batch.size, 161);
        assert_eq!(batch.producer_id, Some(2999));
        assert_eq!(batch.producer_epoch, Some(3));
        assert_eq!(batch.base_sequence, Some(40));
        assert_eq!(batch.records_count, Some(5));
        assert_eq!(batch.last_sequence(), Some(44));
        assert_eq!(batch.crc, Some(0x1234_5678));
        assert!(batch.is_transactional());
        assert!(!batch.is_control());
    }

    /// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap to 0 past `i32::MAX`.
    #[test]
    fn the_last_sequence_wraps_as_kafkas_does() {
        let batch = read_header(&v2_header(1, 0, i32::MAX - 1, 4, 0)).unwrap();
        assert_eq!(batch.last_sequence(), Some(1));
        let none = read_header(&v2_header(-1, -1, -1, 4, 0)).unwrap();
        assert_eq!(none.last_sequence(), None);
    }

    /// A hostile batch's negative `lastOffsetDelta` gives no last sequence, where the
    /// wrapping sum overflowed (a panic in a debug build, a wrong sequence in release).
    #[test]
    fn a_negative_last_offset_delta_gives_no_last_sequence() {
        for (base, records) in [(5, 0), (i32::MAX, 0), (0, -100), (i32::MAX, i32::MIN + 1)] {
            let batch = read_header(&v2_header(1, 0, base, records, 0)).unwrap();
            assert_eq!(batch.last_sequence(), None, "{base} {records}");
        }
    }

    #[test]
    fn a_legacy_entry_has_a_size_and_no_producer_fields() {
        let mut b = vec![0; 17];
        b[8..12].copy_from_slice(&30i32.to_be_bytes());
        b[16] = 1;
        assert_eq!(size_and_head(&b).unwrap(), (42, MAGIC_END));
        let batch = read_header(&b).unwrap();
        assert_eq!((batch.magic, batch.producer_id), (1, None));
    }

    #[test]
    fn a_length_or_magic_no_batch_can_have_is_invalid() {
        let mut b = v2_header(1, 0, 0, 1, 0);
        b[16] = 3;
        let err = size_and_head(&b).unwrap_err().to_string();
        assert!(err.contains("magic 3"), "{err}");
        let mut b = v2_header(1, 0, 0, 1, 0);
        b[8..12].copy_from_slice(&48i32.to_be_bytes());
        assert!(size_and_head(&b).is_err());
        b[8..12].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(size_and_head(&b).is_err());
    }
}
