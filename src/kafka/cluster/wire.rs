//! Builds Kafka messages byte by byte for the tests, from the schemas as the tests read
//! them; flexible or not comes from the shared API table, not from the decoders.

use crate::kafka::tables::ApiKey;

/// A message being written: header first, then the fields in the order they are added.
pub struct Msg {
    pub bytes: Vec<u8>,
    pub flexible: bool,
}

impl Msg {
    /// A request header (v2 when flexible, else v1): correlation id 7, client id "c".
    pub fn request(api: ApiKey, version: i16) -> Self {
        let flexible = api.is_flexible_version(version);
        let msg = Self {
            bytes: Vec::new(),
            flexible,
        };
        let msg = msg.i16(api.0).i16(version).i32(7);
        // The client id stays an int16 string in header v2.
        let msg = Self {
            flexible: false,
            ..msg
        }
        .string("c");
        Self { flexible, ..msg }.tags()
    }

    /// A response header (v1 when flexible, else v0): correlation id 7.
    pub fn response(api: ApiKey, version: i16) -> Self {
        let flexible = api.is_flexible_version(version);
        Self {
            bytes: Vec::new(),
            flexible,
        }
        .i32(7)
        .tags()
    }

    pub fn raw(mut self, bytes: &[u8]) -> Self {
        self.bytes.extend_from_slice(bytes);
        self
    }

    pub fn i8(self, v: i8) -> Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn i16(self, v: i16) -> Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn u16(self, v: u16) -> Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn i32(self, v: i32) -> Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn i64(self, v: i64) -> Self {
        self.raw(&v.to_be_bytes())
    }

    pub fn bool(self, v: bool) -> Self {
        self.raw(&[u8::from(v)])
    }

    pub fn uuid(self, fill: u8) -> Self {
        self.raw(&[fill; 16])
    }

    pub fn uvarint(mut self, mut v: u32) -> Self {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
        self
    }

    pub fn string(self, s: &str) -> Self {
        self.nullable_string(Some(s))
    }

    pub fn nullable_string(self, s: Option<&str>) -> Self {
        match (s, self.flexible) {
            (None, true) => self.uvarint(0),
            (None, false) => self.i16(-1),
            (Some(s), true) => self.uvarint(s.len() as u32 + 1).raw(s.as_bytes()),
            (Some(s), false) => self.i16(s.len() as i16).raw(s.as_bytes()),
        }
    }

    /// An array's length; its elements follow.
    pub fn array(self, len: usize) -> Self {
        if self.flexible {
            self.uvarint(len as u32 + 1)
        } else {
            self.i32(len as i32)
        }
    }

    /// An empty tagged-field section (nothing in rigid versions).
    pub fn tags(self) -> Self {
        self.tagged(&[])
    }

    /// A tagged-field section with these fields (nothing in rigid versions).
    pub fn tagged(self, fields: &[(u32, Vec<u8>)]) -> Self {
        if !self.flexible {
            return self;
        }
        let mut msg = self.uvarint(fields.len() as u32);
        for (tag, data) in fields {
            msg = msg.uvarint(*tag).uvarint(data.len() as u32).raw(data);
        }
        msg
    }

    /// Bytes written with the same encoding, to put in a tagged field.
    pub fn part(flexible: bool) -> Self {
        Self {
            bytes: Vec::new(),
            flexible,
        }
    }
}
