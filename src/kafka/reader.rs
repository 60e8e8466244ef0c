//! A bounded cursor over one Kafka message.
//!
//! Every read checks what remains first and fails with a [`DecodeError`] that names the
//! field, the bytes needed and left, and the offset in the message. Lengths read from the
//! input are checked against the bytes left before anything is allocated; unsigned
//! varints longer than five bytes are rejected (Kafka's `ByteUtils.readUnsignedVarint`).

use std::fmt;

use super::trace;

/// Why a Kafka message did not decode. `Display` is one sentence with the numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The message ended inside `field`.
    Short {
        field: &'static str,
        offset: usize,
        needed: usize,
        left: usize,
    },
    /// A value that cannot be right (negative length, over-long varint, bad UTF-8).
    Invalid {
        field: &'static str,
        offset: usize,
        reason: String,
    },
    /// Bytes left over after the last field of the message.
    Trailing { offset: usize, left: usize },
}

impl DecodeError {
    /// The same error seen from a message that starts `by` bytes earlier.
    pub fn shifted(self, by: usize) -> Self {
        match self {
            Self::Short {
                field,
                offset,
                needed,
                left,
            } => Self::Short {
                field,
                offset: offset.saturating_add(by),
                needed,
                left,
            },
            Self::Invalid {
                field,
                offset,
                reason,
            } => Self::Invalid {
                field,
                offset: offset.saturating_add(by),
                reason,
            },
            Self::Trailing { offset, left } => Self::Trailing {
                offset: offset.saturating_add(by),
                left,
            },
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Short {
                field,
                offset,
                needed,
                left,
            } => write!(
                f,
                "{field} at offset {offset} needs {needed} bytes but only {left} are left"
            ),
            Self::Invalid {
                field,
                offset,
                reason,
            } => write!(f, "{field} at offset {offset} is invalid: {reason}"),
            Self::Trailing { offset, left } => write!(
                f,
                "{left} unexpected bytes remain after the last field, at offset {offset}"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Bytes of a tagged field's data that are kept; the rest is summed up by its length and
/// CRC-32, so a message of a megabyte of tagged data costs a kilobyte while it waits.
pub const MAX_TAGGED_DATA_KEPT: usize = 1024;

/// One tagged field, kept as raw bytes because we do not know any tags of API 67 v0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedField {
    pub tag: u32,
    /// Its data, or the first [`MAX_TAGGED_DATA_KEPT`] bytes of it.
    pub data: Vec<u8>,
    /// When `data` was cut: the whole data's length and CRC-32.
    pub cut: Option<(u64, u32)>,
}

impl TaggedField {
    /// A field with `data`, kept up to [`MAX_TAGGED_DATA_KEPT`] bytes.
    pub fn new(tag: u32, data: &[u8]) -> Self {
        let kept = data.get(..MAX_TAGGED_DATA_KEPT).unwrap_or(data);
        let cut = (kept.len() < data.len()).then(|| (data.len() as u64, crc32fast::hash(data)));
        Self {
            tag,
            data: kept.to_vec(),
            cut,
        }
    }
}

/// Cursor over a byte slice; `pos` never exceeds `bytes.len()`.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// The address of the next byte, which places a read of a part of a message (a
    /// tagged field's data) in the message ([`super::trace`]).
    pub fn address(&self) -> usize {
        (self.bytes.as_ptr() as usize).saturating_add(self.pos)
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn take(&mut self, field: &'static str, len: usize) -> Result<&'a [u8], DecodeError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        match rest.get(..len) {
            Some(taken) => {
                self.pos = self.pos.saturating_add(len);
                Ok(taken)
            }
            None => Err(DecodeError::Short {
                field,
                offset: self.pos,
                needed: len,
                left: rest.len(),
            }),
        }
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let bytes = self.take(field, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.array(field).map(i16::from_be_bytes)
    }

    pub fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.array(field).map(i32::from_be_bytes)
    }

    pub fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.array(field).map(i64::from_be_bytes)
    }

    fn invalid(&self, field: &'static str, offset: usize, reason: String) -> DecodeError {
        DecodeError::Invalid {
            field,
            offset,
            reason,
        }
    }

    /// Unsigned LEB128 varint of at most 5 bytes holding a u32.
    pub fn uvarint(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        let start = self.pos;
        let mut value: u32 = 0;
        for idx in 0..5u32 {
            let [byte] = self.array::<1>(field)?;
            let bits = u32::from(byte & 0x7f);
            if idx == 4 && bits > 0x0f {
                return Err(self.invalid(field, start, "varint overflows 32 bits".into()));
            }
            value |= bits << (7 * idx);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.invalid(field, start, "varint is longer than 5 bytes".into()))
    }

    /// Kafka's zigzag varint (`ByteUtils.readVarint`): an unsigned varint of 32 bits at
    /// most, zigzag-decoded. Record batches use it (lengths, deltas, header counts).
    pub fn varint(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        let v = self.uvarint(field)?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// Kafka's zigzag varlong (`ByteUtils.readVarlong`): at most 10 bytes, 64 bits.
    pub fn varlong(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for idx in 0..10u32 {
            let [byte] = self.array::<1>(field)?;
            let bits = u64::from(byte & 0x7f);
            if idx == 9 && bits > 0x01 {
                return Err(self.invalid(field, start, "varlong overflows 64 bits".into()));
            }
            value |= bits << (7 * idx);
            if byte & 0x80 == 0 {
                return Ok(((value >> 1) as i64) ^ -((value & 1) as i64));
            }
        }
        Err(self.invalid(field, start, "varlong is longer than 10 bytes".into()))
    }

    /// A zigzag-varint length, then that many bytes, unread; -1 is null (a record's key,
    /// value and headers).
    pub fn varint_bytes(&mut self, field: &'static str) -> Result<Option<&'a [u8]>, DecodeError> {
        let start = self.pos;
        let len = self.varint(field)?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len)
            .map_err(|_| self.invalid(field, start, format!("negative length {len}")))?;
        self.take(field, len).map(Some)
    }

    /// Non-compact nullable string: int16 length (-1 = null), then UTF-8 bytes.
    pub fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>, DecodeError> {
        self.nullable_text(field, |bytes| std::str::from_utf8(bytes).map(str::to_owned))
    }

    /// A nullable string shared with earlier reads of the same bytes (see
    /// [`super::client_id`]): a request header's `client_id`.
    pub fn nullable_client_id(
        &mut self,
        field: &'static str,
    ) -> Result<Option<super::client_id::ClientId>, DecodeError> {
        self.nullable_text(field, super::client_id::shared)
    }

    /// A non-compact nullable string's bytes, made text by `text`.
    fn nullable_text<T>(
        &mut self,
        field: &'static str,
        text: impl FnOnce(&[u8]) -> Result<T, std::str::Utf8Error>,
    ) -> Result<Option<T>, DecodeError> {
        let start = self.pos;
        let len = self.i16(field)?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len)
            .map_err(|_| self.invalid(field, start, format!("negative length {len}")))?;
        let bytes = self.take(field, len)?;
        text(bytes)
            .map(Some)
            .map_err(|e| self.invalid(field, start, format!("not UTF-8 ({e})")))
    }

    /// Compact nullable string (flexible versions): uvarint length + 1 (0 = null), then
    /// UTF-8 bytes.
    pub fn compact_nullable_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, DecodeError> {
        let start = self.pos;
        let Some(len) = self.uvarint(field)?.checked_sub(1) else {
            return Ok(None);
        };
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let bytes = self.take(field, len)?;
        let text = std::str::from_utf8(bytes)
            .map_err(|e| self.invalid(field, start, format!("not UTF-8 ({e})")))?;
        Ok(Some(text.to_owned()))
    }

    /// Boolean: one byte, 0 or 1 (Kafka's reader takes any non-zero as true; a byte
    /// above 1 is written by no Kafka and is more likely a misread).
    pub fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        let start = self.pos;
        match self.array::<1>(field)? {
            [0] => Ok(false),
            [1] => Ok(true),
            [other] => Err(self.invalid(field, start, format!("{other} is neither 0 nor 1"))),
        }
    }

    /// A tagged-field section (KIP-482): uvarint count, then per field uvarint tag,
    /// uvarint size and the data. Tags must be strictly increasing, as Kafka requires.
    pub fn tagged_fields(&mut self) -> Result<Vec<TaggedField>, DecodeError> {
        self.tagged_fields_with(|_, _| {})
    }

    /// Reads a tagged-field section holding no field, the usual one: its one zero byte,
    /// not through the general path (four sections an exchange). Nothing is read, and
    /// `false` returned, for any other section, or while the tree's reads are recorded
    /// (they take the general path, which records the count).
    fn empty_section(&mut self) -> bool {
        let empty = self.bytes.get(self.pos) == Some(&0) && !trace::is_recording();
        if empty {
            self.pos += 1;
        }
        empty
    }

    /// [`Self::tagged_fields`], telling `each` where every field sat: `(offset, size)` of
    /// its tag, size and data.
    pub fn tagged_fields_with(
        &mut self,
        mut each: impl FnMut(&TaggedField, (usize, usize)),
    ) -> Result<Vec<TaggedField>, DecodeError> {
        if self.empty_section() {
            return Ok(Vec::new());
        }
        let count_at = self.pos;
        let uvarint = ("tagged field count", "uvarint");
        let count = trace::read(self, uvarint, |r| r.uvarint(uvarint.0))?;
        // Each field takes at least two bytes, so a count above that is a lie we can
        // refuse before reserving anything.
        if usize::try_from(count).map_or(true, |n| n > self.remaining() / 2) {
            return Err(self.invalid(
                "tagged field count",
                count_at,
                format!("{count} fields cannot fit in {} bytes", self.remaining()),
            ));
        }
        let mut fields = Vec::new();
        let mut last_tag: Option<u32> = None;
        for _ in 0..count {
            let tag_at = self.pos;
            let uvarint = ("tagged field tag", "uvarint");
            let tag = trace::read(self, uvarint, |r| r.uvarint(uvarint.0))?;
            if last_tag.is_some_and(|last| tag <= last) {
                return Err(self.invalid(
                    "tagged field tag",
                    tag_at,
                    format!("tag {tag} is not above the previous tag"),
                ));
            }
            last_tag = Some(tag);
            let uvarint = ("tagged field size", "uvarint");
            let size = trace::read(self, uvarint, |r| r.uvarint(uvarint.0))?;
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            let data = self.take("tagged field data", size)?;
            let field = TaggedField::new(tag, data);
            each(&field, (tag_at, self.pos - tag_at));
            fields.push(field);
        }
        Ok(fields)
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            left => Err(DecodeError::Trailing {
                offset: self.pos,
                left,
            }),
        }
    }

    pub fn i8(&mut self, field: &'static str) -> Result<i8, DecodeError> {
        self.array(field).map(i8::from_be_bytes)
    }

    pub fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.array(field).map(u16::from_be_bytes)
    }

    /// A UUID: 16 bytes, as on the wire.
    pub fn uuid(&mut self, field: &'static str) -> Result<[u8; 16], DecodeError> {
        self.array(field)
    }

    /// The next `len` bytes, unread and unallocated.
    pub fn slice(&mut self, field: &'static str, len: usize) -> Result<&'a [u8], DecodeError> {
        self.take(field, len)
    }

    /// Non-compact string that must not be null: int16 length, then UTF-8 bytes.
    pub fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        let start = self.pos;
        self.nullable_string(field)?
            .ok_or_else(|| self.invalid(field, start, "null where a string is required".into()))
    }

    /// Compact string that must not be null: uvarint length + 1, then UTF-8 bytes.
    pub fn compact_string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        let start = self.pos;
        self.compact_nullable_string(field)?
            .ok_or_else(|| self.invalid(field, start, "null where a string is required".into()))
    }

    /// Passes over a non-compact nullable string without allocating or checking its UTF-8.
    pub fn skip_string(&mut self, field: &'static str) -> Result<(), DecodeError> {
        let start = self.pos;
        let len = self.i16(field)?;
        if len == -1 {
            return Ok(());
        }
        let len = usize::try_from(len)
            .map_err(|_| self.invalid(field, start, format!("negative length {len}")))?;
        self.take(field, len).map(drop)
    }

    /// Passes over a compact nullable string without allocating or checking its UTF-8.
    pub fn skip_compact_string(&mut self, field: &'static str) -> Result<(), DecodeError> {
        let Some(len) = self.uvarint(field)?.checked_sub(1) else {
            return Ok(());
        };
        self.take(field, usize::try_from(len).unwrap_or(usize::MAX))
            .map(drop)
    }

    /// Non-compact array length: int32 count, -1 = null (`None`). A count above the
    /// bytes left is refused as [`DecodeError::Short`] (every element takes at least one
    /// byte), so the caller may allocate for what it returns.
    pub fn array_len(&mut self, field: &'static str) -> Result<Option<usize>, DecodeError> {
        let start = self.pos;
        let count = self.i32(field)?;
        if count == -1 {
            return Ok(None);
        }
        let count = usize::try_from(count)
            .map_err(|_| self.invalid(field, start, format!("negative count {count}")))?;
        self.fitting(field, start, count).map(Some)
    }

    /// Compact array length (flexible versions): uvarint count + 1, 0 = null (`None`).
    /// Checked against the bytes left like [`Self::array_len`].
    pub fn compact_array_len(&mut self, field: &'static str) -> Result<Option<usize>, DecodeError> {
        let start = self.pos;
        let Some(count) = self.uvarint(field)?.checked_sub(1) else {
            return Ok(None);
        };
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        self.fitting(field, start, count).map(Some)
    }

    /// `count` elements of at least one byte each, if the bytes left can hold them.
    fn fitting(
        &self,
        field: &'static str,
        start: usize,
        count: usize,
    ) -> Result<usize, DecodeError> {
        // Short, not Invalid: in a message cut by the capture the count may be right.
        if count > self.remaining() {
            return Err(DecodeError::Short {
                field,
                offset: start,
                needed: count,
                left: self.remaining(),
            });
        }
        Ok(count)
    }

    /// A tagged-field section read in place, for decoders that know some tags: `each`
    /// gets every field's tag, its data and the data's offset; nothing is copied. The
    /// count and the tags' order are checked as in [`Self::tagged_fields`], except that a
    /// count the bytes left cannot hold is [`DecodeError::Short`].
    pub fn tagged_slices(
        &mut self,
        mut each: impl FnMut(u32, &'a [u8], usize) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        if self.empty_section() {
            return Ok(());
        }
        let count_at = self.pos;
        let uvarint = ("tagged field count", "uvarint");
        let count = trace::read(self, uvarint, |r| r.uvarint(uvarint.0))?;
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        // Each field takes at least two bytes (tag and size).
        if count > self.remaining() / 2 {
            return Err(DecodeError::Short {
                field: "tagged field count",
                offset: count_at,
                needed: count.saturating_mul(2),
                left: self.remaining(),
            });
        }
        let mut last_tag: Option<u32> = None;
        for _ in 0..count {
            let tag_at = self.pos;
            let uvarint = ("tagged field tag", "uvarint");
            let tag = trace::read(self, uvarint, |r| r.uvarint(uvarint.0))?;
            if last_tag.is_some_and(|last| tag <= last) {
                return Err(self.invalid(
                    "tagged field tag",
                    tag_at,
                    format!("tag {tag} is not above the previous tag"),
                ));
            }
            last_tag = Some(tag);
            let uvarint = ("tagged field size", "uvarint");
            let size = trace::read(self, uvarint, |r| r.uvarint(uvarint.0))?;
            let data_at = self.pos;
            let data = self.take(
                "tagged field data",
                usize::try_from(size).unwrap_or(usize::MAX),
            )?;
            each(tag, data, data_at)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The empty section's short path reads what the general path reads, and the tree's
    /// recording still sees its count.
    #[test]
    fn an_empty_tagged_section_reads_the_same_recorded_or_not() {
        let bytes = [0x00, 0x2a];
        let mut quick = Reader::new(&bytes);
        assert_eq!(quick.tagged_fields_with(|_, _| {}), Ok(vec![]));
        assert_eq!(quick.position(), 1);
        let (read, reads) = trace::recording(|| {
            let mut r = Reader::new(&bytes);
            (r.tagged_fields_with(|_, _| {}), r.position())
        });
        assert_eq!(read, (Ok(vec![]), 1));
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].field, "tagged field count");
        let mut slices = Reader::new(&bytes);
        assert_eq!(slices.tagged_slices(|_, _, _| Ok(())), Ok(()));
        assert_eq!(slices.position(), 1);
    }

    #[test]
    fn compact_strings_count_one_more_than_their_length() {
        let mut r = Reader::new(&[0x00, 0x03, b'h', b'i', 0x01]);
        assert_eq!(r.compact_nullable_string("a"), Ok(None));
        assert_eq!(r.compact_nullable_string("b"), Ok(Some("hi".to_owned())));
        assert_eq!(r.compact_nullable_string("c"), Ok(Some(String::new())));
        let mut r = Reader::new(&[0x05, b'h']);
        assert!(matches!(
            r.compact_nullable_string("d"),
            Err(DecodeError::Short {
                needed: 4,
                left: 1,
                ..
            })
        ));
    }

    #[test]
    fn booleans_are_zero_or_one() {
        let mut r = Reader::new(&[0, 1, 2]);
        assert_eq!(r.bool("a"), Ok(false));
        assert_eq!(r.bool("b"), Ok(true));
        assert!(matches!(
            r.bool("c"),
            Err(DecodeError::Invalid { offset: 2, .. })
        ));
    }

    #[test]
    fn reads_big_endian_integers() {
        let mut r = Reader::new(&[0x00, 0x43, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0, 0, 0, 0, 9]);
        assert_eq!(r.i16("a"), Ok(67));
        assert_eq!(r.i32("b"), Ok(-2));
        assert_eq!(r.i64("c"), Ok(9));
        assert_eq!(r.finish(), Ok(()));
    }

    #[test]
    fn short_read_names_field_and_counts() {
        let mut r = Reader::new(&[0, 0, 1]);
        let err = r.i32("BrokerId").unwrap_err();
        assert_eq!(
            err.to_string(),
            "BrokerId at offset 0 needs 4 bytes but only 3 are left"
        );
        assert_eq!(r.position(), 0);
    }

    #[test]
    fn reads_uvarints() {
        assert_eq!(Reader::new(&[0x00]).uvarint("v"), Ok(0));
        assert_eq!(Reader::new(&[0x96, 0x01]).uvarint("v"), Ok(150));
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]).uvarint("v"),
            Ok(u32::MAX)
        );
    }

    #[test]
    fn rejects_varint_longer_than_five_bytes() {
        let err = Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01])
            .uvarint("v")
            .unwrap_err();
        assert!(matches!(err, DecodeError::Invalid { .. }), "{err}");
        let err = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x1f])
            .uvarint("v")
            .unwrap_err();
        assert!(err.to_string().contains("overflows"), "{err}");
    }

    #[test]
    fn reads_nullable_strings() {
        assert_eq!(Reader::new(&[0xff, 0xff]).nullable_string("s"), Ok(None));
        assert_eq!(
            Reader::new(&[0, 0]).nullable_string("s"),
            Ok(Some(String::new()))
        );
        assert_eq!(
            Reader::new(&[0, 2, b'h', b'i']).nullable_string("s"),
            Ok(Some("hi".into()))
        );
        assert!(Reader::new(&[0xff, 0xfe]).nullable_string("s").is_err());
        assert!(Reader::new(&[0, 5, b'h']).nullable_string("s").is_err());
        assert!(Reader::new(&[0, 1, 0xff]).nullable_string("s").is_err());
    }

    #[test]
    fn long_tagged_data_is_kept_to_a_kilobyte_with_its_length_and_crc() {
        let data: Vec<u8> = (0..2000u32).map(|i| i as u8).collect();
        let mut bytes = vec![1, 7, 0xd0, 0x0f]; // one field, tag 7, size 2000
        bytes.extend(&data);
        let fields = Reader::new(&bytes).tagged_fields().unwrap();
        assert_eq!(fields[0].data, data[..MAX_TAGGED_DATA_KEPT]);
        assert_eq!(fields[0].cut, Some((2000, crc32fast::hash(&data))));
        assert_eq!(TaggedField::new(7, &data[..10]).cut, None);
    }

    #[test]
    fn keeps_unknown_tagged_fields() {
        // count 2; tag 0 size 3 aabbcc; tag 5 size 1 dd
        let bytes = [2, 0, 3, 0xaa, 0xbb, 0xcc, 5, 1, 0xdd];
        let fields = Reader::new(&bytes).tagged_fields().unwrap();
        assert_eq!(
            fields,
            vec![
                TaggedField::new(0, &[0xaa, 0xbb, 0xcc]),
                TaggedField::new(5, &[0xdd]),
            ]
        );
    }

    #[test]
    fn rejects_tagged_field_count_that_cannot_fit() {
        let err = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x07])
            .tagged_fields()
            .unwrap_err();
        assert!(err.to_string().contains("cannot fit"), "{err}");
    }

    #[test]
    fn rejects_unordered_tags_and_oversized_data() {
        assert!(Reader::new(&[2, 5, 0, 1, 0]).tagged_fields().is_err());
        assert!(Reader::new(&[1, 0, 9, 1]).tagged_fields().is_err());
    }

    #[test]
    fn reads_i8_u16_and_uuids() {
        let mut bytes = vec![0xfe, 0xff, 0xfe];
        bytes.extend(1..=16u8);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.i8("a"), Ok(-2));
        assert_eq!(r.u16("b"), Ok(65534));
        let uuid: Vec<u8> = (1..=16).collect();
        assert_eq!(r.uuid("c").map(Vec::from), Ok(uuid));
        assert!(matches!(
            r.u16("d"),
            Err(DecodeError::Short {
                needed: 2,
                left: 0,
                ..
            })
        ));
        assert!(Reader::new(&[0; 15]).uuid("e").is_err());
    }

    #[test]
    fn slice_takes_exactly_what_is_asked() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.slice("a", 2), Ok(&[1u8, 2][..]));
        assert!(r.slice("b", 2).is_err());
        assert_eq!(r.position(), 2);
    }

    #[test]
    fn required_strings_refuse_null() {
        assert_eq!(
            Reader::new(&[0, 2, b'h', b'i']).string("s"),
            Ok("hi".into())
        );
        let err = Reader::new(&[0xff, 0xff]).string("s").unwrap_err();
        assert!(err.to_string().contains("null where"), "{err}");
        assert_eq!(
            Reader::new(&[3, b'h', b'i']).compact_string("s"),
            Ok("hi".into())
        );
        assert!(matches!(
            Reader::new(&[0]).compact_string("s"),
            Err(DecodeError::Invalid { offset: 0, .. })
        ));
    }

    #[test]
    fn skips_strings_of_both_encodings() {
        let mut r = Reader::new(&[0, 2, b'h', b'i', 0xff, 0xff, 3, b'h', b'i', 0, 9]);
        assert_eq!(r.skip_string("a"), Ok(()));
        assert_eq!(r.skip_string("b"), Ok(()));
        assert_eq!(r.skip_compact_string("c"), Ok(()));
        assert_eq!(r.skip_compact_string("d"), Ok(()));
        assert_eq!(r.position(), 10);
        assert!(r.skip_compact_string("e").is_err());
        assert!(Reader::new(&[0xff, 0xfe]).skip_string("f").is_err());
        assert!(Reader::new(&[0, 3, 1]).skip_string("g").is_err());
    }

    #[test]
    fn reads_array_lengths_with_null() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 2, 0, 3, 7, 7]);
        assert_eq!(r.array_len("a"), Ok(None));
        assert_eq!(r.array_len("b"), Ok(Some(2)));
        assert_eq!(r.compact_array_len("c"), Ok(None));
        assert_eq!(r.compact_array_len("d"), Ok(Some(2)));
        assert!(Reader::new(&[0xff, 0xff, 0xff, 0xfe])
            .array_len("e")
            .is_err());
    }

    #[test]
    fn refuses_array_counts_larger_than_the_bytes_left() {
        let err = Reader::new(&[0x7f, 0xff, 0xff, 0xff, 1])
            .array_len("a")
            .unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::Short {
                    offset: 0,
                    needed: 0x7fff_ffff,
                    left: 1,
                    ..
                }
            ),
            "{err}"
        );
        let err = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f])
            .compact_array_len("b")
            .unwrap_err();
        assert!(matches!(err, DecodeError::Short { offset: 0, .. }), "{err}");
        assert_eq!(Reader::new(&[3, 1, 2]).compact_array_len("c"), Ok(Some(2)));
        assert!(Reader::new(&[4, 1, 2]).compact_array_len("d").is_err());
    }

    #[test]
    fn tagged_slices_lend_each_field_in_place() {
        // count 2; tag 0 size 2 aabb; tag 3 size 0
        let bytes = [2, 0, 2, 0xaa, 0xbb, 3, 0, 9];
        let mut r = Reader::new(&bytes);
        let mut seen = Vec::new();
        let result = r.tagged_slices(|tag, data, at| {
            seen.push((tag, data.to_vec(), at));
            Ok(())
        });
        assert_eq!(result, Ok(()));
        assert_eq!(seen, vec![(0, vec![0xaa, 0xbb], 3), (3, vec![], 7)]);
        assert_eq!(r.position(), 7);
    }

    #[test]
    fn tagged_slices_refuse_lying_counts_unordered_tags_and_pass_errors_on() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x07, 0]);
        let err = r.tagged_slices(|_, _, _| Ok(())).unwrap_err();
        assert!(matches!(err, DecodeError::Short { left: 1, .. }), "{err}");
        let mut r = Reader::new(&[2, 5, 0, 1, 0]);
        assert!(matches!(
            r.tagged_slices(|_, _, _| Ok(())),
            Err(DecodeError::Invalid { offset: 3, .. })
        ));
        let mut r = Reader::new(&[1, 0, 0]);
        let refused = r.tagged_slices(|_, _, at| {
            Err(DecodeError::Trailing {
                offset: at,
                left: 0,
            })
        });
        assert_eq!(refused, Err(DecodeError::Trailing { offset: 3, left: 0 }));
    }

    #[test]
    fn finish_reports_trailing_bytes() {
        let r = Reader::new(&[1, 2]);
        assert_eq!(
            r.finish(),
            Err(DecodeError::Trailing { offset: 0, left: 2 })
        );
    }

    #[test]
    fn zigzag_varints_read_as_kafka_writes_them() {
        // 0 -> 00, -1 -> 01, 1 -> 02, 300 -> d8 04, i32::MIN -> ff ff ff ff 0f
        let bytes = [0x00, 0x01, 0x02, 0xd8, 0x04, 0xff, 0xff, 0xff, 0xff, 0x0f];
        let mut r = Reader::new(&bytes);
        let got: Vec<i32> = (0..5).map(|_| r.varint("v").unwrap()).collect();
        assert_eq!(got, [0, -1, 1, 300, i32::MIN]);
        assert_eq!(r.remaining(), 0);
        // i64::MIN -> ff x9 01; i64::MAX -> fe ff x8 01
        let mut long = vec![0xff; 9];
        long.push(0x01);
        long.push(0xfe);
        long.extend([0xff; 8]);
        long.push(0x01);
        let mut r = Reader::new(&long);
        assert_eq!(r.varlong("l").unwrap(), i64::MIN);
        assert_eq!(r.varlong("l").unwrap(), i64::MAX);
    }

    #[test]
    fn a_varint_running_past_the_end_or_its_width_is_refused() {
        assert!(Reader::new(&[0x80, 0x80]).varint("v").is_err());
        assert!(Reader::new(&[0xff; 6]).varint("v").is_err());
        assert!(Reader::new(&[0xff; 11]).varlong("l").is_err());
        // a tenth byte with more than the 64th bit
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(Reader::new(&over).varlong("l").is_err());
    }

    #[test]
    fn varint_bytes_are_null_empty_or_refused_past_what_is_left() {
        let mut r = Reader::new(&[0x01, 0x00, 0x04, b'a', b'b', 0x08, b'c']);
        assert_eq!(r.varint_bytes("k").unwrap(), None);
        assert_eq!(r.varint_bytes("k").unwrap(), Some(&b""[..]));
        assert_eq!(r.varint_bytes("k").unwrap(), Some(&b"ab"[..]));
        // 4 bytes claimed, 1 left; and a negative length other than -1
        assert!(matches!(
            r.varint_bytes("k"),
            Err(DecodeError::Short { .. })
        ));
        assert!(matches!(
            Reader::new(&[0x03]).varint_bytes("k"),
            Err(DecodeError::Invalid { .. })
        ));
    }
}
