//! Kafka's primitive encodings over a byte slice: big-endian integers, zigzag and
//! unsigned varints, UUIDs, compact strings and arrays. In: bytes; out: values and the
//! rest of the slice. Refuses (with a reason) anything that runs past the end or
//! overflows its type; never reads a length without checking it against what is left.

/// A reason a read failed, for a [`super::LogProblem::Corrupt`].
pub type Reason = String;

pub struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Reason> {
        match self.rest.split_at_checked(n) {
            Some((head, tail)) => {
                self.rest = tail;
                Ok(head)
            }
            None => Err(format!("{what}: needs {n} bytes, {} left", self.rest.len())),
        }
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Reason> {
        let bytes = self.take(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    pub fn i8(&mut self, what: &str) -> Result<i8, Reason> {
        Ok(i8::from_be_bytes(self.array(what)?))
    }

    pub fn i16(&mut self, what: &str) -> Result<i16, Reason> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    pub fn u16(&mut self, what: &str) -> Result<u16, Reason> {
        Ok(u16::from_be_bytes(self.array(what)?))
    }

    pub fn i32(&mut self, what: &str) -> Result<i32, Reason> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    pub fn i64(&mut self, what: &str) -> Result<i64, Reason> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    pub fn uuid(&mut self, what: &str) -> Result<[u8; 16], Reason> {
        self.array(what)
    }

    /// An unsigned LEB128 varint of at most `max_bytes` bytes (5 for an int, 10 for a long).
    fn uvarint_raw(&mut self, max_bytes: u32, what: &str) -> Result<u64, Reason> {
        let mut value: u64 = 0;
        for i in 0..max_bytes {
            let [b] = self.array::<1>(what)?;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("{what}: varint longer than {max_bytes} bytes"))
    }

    /// Kafka's unsigned varint (`ByteUtils.readUnsignedVarint`): 32 bits at most.
    pub fn uvarint(&mut self, what: &str) -> Result<u32, Reason> {
        let v = self.uvarint_raw(5, what)?;
        u32::try_from(v).map_err(|_| format!("{what}: unsigned varint over 32 bits"))
    }

    /// Kafka's zigzag varint (`ByteUtils.readVarint`).
    pub fn varint(&mut self, what: &str) -> Result<i32, Reason> {
        let v = self.uvarint(what)?;
        Ok(((v >> 1) as i32) ^ -((v & 1) as i32))
    }

    /// Kafka's zigzag varlong (`ByteUtils.readVarlong`).
    pub fn varlong(&mut self, what: &str) -> Result<i64, Reason> {
        let v = self.uvarint_raw(10, what)?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A zigzag-varint length followed by that many bytes; -1 is null.
    pub fn varint_bytes(&mut self, what: &str) -> Result<Option<&'a [u8]>, Reason> {
        let len = self.varint(what)?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| format!("{what}: length {len}"))?;
        self.take(len, what).map(Some)
    }

    /// A compact (flexible-version) string: unsigned varint length + 1, 0 for null.
    pub fn compact_string(&mut self, what: &str) -> Result<Option<String>, Reason> {
        let n = self.uvarint(what)?;
        let Some(len) = n.checked_sub(1) else {
            return Ok(None);
        };
        let bytes = self.take(len as usize, what)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| format!("{what}: not UTF-8"))
    }

    /// A compact array's element count: unsigned varint count + 1, 0 for null.
    pub fn compact_len(&mut self, what: &str) -> Result<Option<usize>, Reason> {
        let n = self.uvarint(what)?;
        Ok(n.checked_sub(1).map(|n| n as usize))
    }

    /// A flexible version's tagged fields, skipped.
    pub fn skip_tagged_fields(&mut self, what: &str) -> Result<(), Reason> {
        let count = self.uvarint(what)?;
        for _ in 0..count {
            let _tag = self.uvarint(what)?;
            let size = self.uvarint(what)?;
            self.take(size as usize, what)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_varints_read_as_kafka_writes_them() {
        // 0 -> 00, -1 -> 01, 1 -> 02, 300 -> d8 04, i32::MIN -> ff ff ff ff 0f
        let bytes = [0x00, 0x01, 0x02, 0xd8, 0x04, 0xff, 0xff, 0xff, 0xff, 0x0f];
        let mut c = Cursor::new(&bytes);
        let got: Vec<i32> = (0..5).map(|_| c.varint("v").unwrap()).collect();
        assert_eq!(got, [0, -1, 1, 300, i32::MIN]);
        assert_eq!(c.remaining(), 0);
    }

    #[test]
    fn a_varint_running_past_the_end_is_refused() {
        assert!(Cursor::new(&[0x80, 0x80]).varint("v").is_err());
        assert!(Cursor::new(&[0xff; 6]).uvarint("v").is_err());
    }

    #[test]
    fn a_length_over_what_is_left_is_refused_not_allocated() {
        // a compact string claiming u32::MAX - 1 bytes, with none behind it
        let mut c = Cursor::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert!(c.compact_string("s").is_err());
    }
}
