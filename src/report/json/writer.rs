//! The one JSON writer: a serde `Serializer` that lays values out exactly as serde_json
//! does, compact or pretty (two spaces an indent, `"key": value`, an empty object or
//! array as `{}` or `[]`), from any depth. An item of a long list is serialized on its
//! own at the depth it will sit at, held as text (`report::spill`), and written in its
//! place at the end as [`Raw`] text: the report streams its lists through the same
//! writer that wrote them, with no second pass over their bytes.
//!
//! It is faster than serde_json on the report's records because it does less: struct
//! field names go out as they are (they are Rust names: nothing to escape), integers
//! through itoa, strings as they are unless they need escaping; floats and escaped
//! strings go through serde_json itself. Property tests hold it to serde_json's bytes.

use std::fmt::{self, Display};
use std::io::{self, Write};

use serde::ser::{self, Serialize};

/// Serializes `value` as compact JSON, appended to `out`.
pub fn compact(out: &mut Vec<u8>, value: &impl Serialize) -> io::Result<()> {
    value.serialize(&mut Writer::new(out, false, 0))?;
    Ok(())
}

/// Serializes `value` as pretty JSON for a place `depth` deep (its first line not
/// indented, the lines after it as deep as that place makes them), appended to `out`.
pub fn pretty_at(out: &mut Vec<u8>, value: &impl Serialize, depth: usize) -> io::Result<()> {
    value.serialize(&mut Writer::new(out, true, depth))?;
    Ok(())
}

/// Serializes `value` as a list item for a place `depth` deep: pretty (see
/// [`pretty_at`]) or compact, appended to `out`.
pub fn item(
    out: &mut Vec<u8>,
    value: &impl Serialize,
    pretty: bool,
    depth: usize,
) -> io::Result<()> {
    value.serialize(&mut Writer::new(out, pretty, depth))?;
    Ok(())
}

/// What goes between two elements of a list whose elements sit `depth` deep, compact or
/// pretty: what the writer writes before each element but the first.
pub fn between_items(pretty: bool, depth: usize) -> Vec<u8> {
    let mut between = Vec::new();
    let mut writer = Writer::new(&mut between, pretty, depth);
    writer.first = false;
    // into a vector: cannot fail
    let _ = writer.item();
    between
}

/// Serializes the object `value` as compact JSON with `"type":"<kind>"` as its first
/// field (an ndjson line's object), appended to `out`.
pub fn compact_typed(
    out: &mut Vec<u8>,
    kind: &'static str,
    value: &impl Serialize,
) -> io::Result<()> {
    let mut writer = Writer::new(out, false, 0);
    writer.lead = Some(("type", kind));
    value.serialize(&mut writer)?;
    Ok(())
}

/// Serializes `value` at depth 0 to `out`, compact or pretty.
pub fn write(out: impl Write, value: &impl Serialize, pretty: bool) -> io::Result<()> {
    value.serialize(&mut Writer::new(out, pretty, 0))?;
    Ok(())
}

/// JSON text a [`Writer`] wrote earlier for the place it is now written at: it goes out
/// as it is. Only this module's writer knows it; serde_json would write its bytes as
/// numbers.
pub struct Raw<'a>(pub &'a [u8]);

/// The newtype name that tells the writer the bytes that follow are [`Raw`].
const RAW: &str = "pidshark::report::json::Raw";

impl Serialize for Raw<'_> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        struct Bytes<'a>(&'a [u8]);
        impl Serialize for Bytes<'_> {
            fn serialize<S: ser::Serializer>(
                &self,
                serializer: S,
            ) -> std::result::Result<S::Ok, S::Error> {
                serializer.serialize_bytes(self.0)
            }
        }
        serializer.serialize_newtype_struct(RAW, &Bytes(self.0))
    }
}

/// Why writing stopped: the output failed, or a value cannot be JSON (a map key that is
/// not a string or number, or a list serialized twice).
#[derive(Debug)]
pub enum Error {
    Io(io::Error),
    Value(String),
}

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => e.fmt(f),
            Self::Value(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Self {
        Self::Value(msg.to_string())
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Io(e) => e,
            Error::Value(why) => Self::new(io::ErrorKind::InvalidData, why),
        }
    }
}

type Result<T = ()> = std::result::Result<T, Error>;

/// The serializer: where it writes, how, and where it is in the value.
pub struct Writer<W> {
    out: W,
    pretty: bool,
    /// Open objects and arrays, counting the depth it started at.
    depth: usize,
    /// Nothing written yet in the innermost open object or array.
    first: bool,
    /// The bytes serialized next are [`Raw`] text.
    raw_next: bool,
    /// A string field written first in the first object opened.
    lead: Option<(&'static str, &'static str)>,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W, pretty: bool, depth: usize) -> Self {
        Self {
            out,
            pretty,
            depth,
            first: true,
            raw_next: false,
            lead: None,
        }
    }

    fn bytes(&mut self, bytes: &[u8]) -> Result {
        Ok(self.out.write_all(bytes)?)
    }

    fn open(&mut self, bracket: u8) -> Result {
        self.depth += 1;
        self.first = true;
        self.bytes(&[bracket])
    }

    fn close(&mut self, bracket: u8) -> Result {
        self.depth = self.depth.saturating_sub(1);
        if self.pretty && !self.first {
            self.new_line()?;
        }
        self.first = false;
        self.bytes(&[bracket])
    }

    fn new_line(&mut self) -> Result {
        Ok(new_line(&mut self.out, self.depth)?)
    }

    /// Before an array element or an object key.
    fn item(&mut self) -> Result {
        if !self.first {
            self.bytes(b",")?;
        }
        self.first = false;
        if self.pretty {
            self.new_line()?;
        }
        Ok(())
    }

    /// `"name":` (and a space when pretty) for a struct's field: a Rust name, or a name
    /// given with `rename`, none of which needs escaping.
    fn field_key(&mut self, name: &str) -> Result {
        self.item()?;
        self.bytes(b"\"")?;
        self.bytes(name.as_bytes())?;
        self.bytes(if self.pretty { b"\": " } else { b"\":" })
    }

    /// After a map's key.
    fn colon(&mut self) -> Result {
        self.bytes(if self.pretty { b": " } else { b":" })
    }

    fn int(&mut self, value: impl itoa::Integer) -> Result {
        self.bytes(itoa::Buffer::new().format(value).as_bytes())
    }

    /// A JSON string: as it is when nothing in it needs escaping (addresses, timestamps,
    /// names: nearly always), otherwise escaped by serde_json.
    fn string(&mut self, s: &str) -> Result {
        if needs_escape(s.as_bytes()) {
            return Ok(serde_json::to_writer(&mut self.out, s).map_err(io::Error::from)?);
        }
        self.bytes(b"\"")?;
        self.bytes(s.as_bytes())?;
        self.bytes(b"\"")
    }

    /// serde_json's own float format (and `null` for NaN and the infinities).
    fn float(&mut self, value: impl Serialize) -> Result {
        Ok(serde_json::to_writer(&mut self.out, &value).map_err(io::Error::from)?)
    }
}

/// A pretty layout's newline and the indentation of a line `depth` deep.
pub(super) fn new_line(out: &mut impl Write, depth: usize) -> io::Result<()> {
    /// A newline and the indentation of the deepest lines a report has, and more.
    const LINE: &[u8; 33] = b"\n                                ";
    match LINE.get(..1 + 2 * depth) {
        Some(line) => out.write_all(line),
        None => {
            out.write_all(b"\n")?;
            for _ in 0..depth {
                out.write_all(b"  ")?;
            }
            Ok(())
        }
    }
}

/// Whether serde_json escapes something in `s`: a control character, `"` or `\`.
/// Eight bytes at a time, since every string of every record goes through here.
pub(super) fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    /// A high bit in each byte of `x` below `n` (n <= 0x80), none in the others when
    /// none is below.
    fn below(x: u64, n: u8) -> u64 {
        x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH
    }
    let escaped = |bytes: [u8; 8]| {
        let x = u64::from_le_bytes(bytes);
        let quote = x ^ (ONES * u64::from(b'"'));
        let backslash = x ^ (ONES * u64::from(b'\\'));
        below(x, 0x20) | below(quote, 1) | below(backslash, 1) != 0
    };
    let mut words = s.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0; 8];
        bytes.copy_from_slice(word);
        if escaped(bytes) {
            return true;
        }
    }
    // The last few bytes as one more word, filled out with spaces (never escaped).
    let rest = words.remainder();
    let mut bytes = [b' '; 8];
    if let Some(head) = bytes.get_mut(..rest.len()) {
        head.copy_from_slice(rest);
    }
    escaped(bytes)
}

/// An open object or array; `variant`: inside the object that names an enum variant.
pub struct Compound<'a, W> {
    writer: &'a mut Writer<W>,
    variant: bool,
}

impl<W: Write> Compound<'_, W> {
    fn end(self, bracket: u8) -> Result {
        self.writer.close(bracket)?;
        if self.variant {
            self.writer.close(b'}')?;
        }
        Ok(())
    }
}

impl<'a, W: Write> ser::Serializer for &'a mut Writer<W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a, W>;
    type SerializeTuple = Compound<'a, W>;
    type SerializeTupleStruct = Compound<'a, W>;
    type SerializeTupleVariant = Compound<'a, W>;
    type SerializeMap = Compound<'a, W>;
    type SerializeStruct = Compound<'a, W>;
    type SerializeStructVariant = Compound<'a, W>;

    fn serialize_bool(self, v: bool) -> Result {
        self.bytes(if v { b"true" } else { b"false" })
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.int(v)
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.int(v)
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.int(v)
    }
    fn serialize_i64(self, v: i64) -> Result {
        self.int(v)
    }
    fn serialize_i128(self, v: i128) -> Result {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.int(v)
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.int(v)
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.int(v)
    }
    fn serialize_u64(self, v: u64) -> Result {
        self.int(v)
    }
    fn serialize_u128(self, v: u128) -> Result {
        self.int(v)
    }
    fn serialize_f32(self, v: f32) -> Result {
        self.float(v)
    }
    fn serialize_f64(self, v: f64) -> Result {
        self.float(v)
    }
    fn serialize_char(self, v: char) -> Result {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result {
        if std::mem::take(&mut self.raw_next) {
            return self.bytes(v);
        }
        let mut seq = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for byte in v {
            ser::SerializeSeq::serialize_element(&mut seq, byte)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result {
        self.bytes(b"null")
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result {
        self.bytes(b"null")
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.bytes(b"null")
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result {
        if name == RAW {
            self.raw_next = true;
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result {
        self.open(b'{')?;
        self.field_key(variant)?;
        value.serialize(&mut *self)?;
        self.close(b'}')
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        self.open(b'[')?;
        Ok(Compound {
            writer: self,
            variant: false,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        self.open(b'{')?;
        self.field_key(variant)?;
        self.open(b'[')?;
        Ok(Compound {
            writer: self,
            variant: true,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        self.open(b'{')?;
        if let Some((key, value)) = self.lead.take() {
            self.field_key(key)?;
            self.string(value)?;
        }
        Ok(Compound {
            writer: self,
            variant: false,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Self::SerializeStruct> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        self.open(b'{')?;
        self.field_key(variant)?;
        self.open(b'{')?;
        Ok(Compound {
            writer: self,
            variant: true,
        })
    }
}

impl<W: Write> ser::SerializeSeq for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        self.writer.item()?;
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> Result {
        Compound::end(self, b']')
    }
}

/// The other array-like compounds write as a sequence does.
macro_rules! like_a_seq {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<W: Write> ser::$trait for Compound<'_, W> {
            type Ok = ();
            type Error = Error;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
                ser::SerializeSeq::serialize_element(self, value)
            }
            fn end(self) -> Result {
                Compound::end(self, b']')
            }
        }
    )*};
}

like_a_seq!(
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl<W: Write> ser::SerializeMap for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result {
        self.writer.item()?;
        key.serialize(MapKey(&mut *self.writer))?;
        self.writer.colon()
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result {
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> Result {
        Compound::end(self, b'}')
    }
}

impl<W: Write> ser::SerializeStruct for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result {
        self.writer.field_key(key)?;
        value.serialize(&mut *self.writer)
    }
    fn end(self) -> Result {
        Compound::end(self, b'}')
    }
}

impl<W: Write> ser::SerializeStructVariant for Compound<'_, W> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: ?Sized + Serialize>(&mut self, key: &'static str, value: &T) -> Result {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result {
        Compound::end(self, b'}')
    }
}

/// A map's key: a string, or a number or bool written as one (as serde_json writes them).
struct MapKey<'a, W>(&'a mut Writer<W>);

impl<W: Write> MapKey<'_, W> {
    fn quoted(self, text: &str) -> Result {
        self.0.bytes(b"\"")?;
        self.0.bytes(text.as_bytes())?;
        self.0.bytes(b"\"")
    }

    fn int(self, value: impl itoa::Integer) -> Result {
        self.quoted(itoa::Buffer::new().format(value))
    }
}

fn key_must_be_a_string() -> Error {
    Error::Value("a map key must be a string or a number".to_owned())
}

impl<W: Write> ser::Serializer for MapKey<'_, W> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result {
        self.quoted(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result {
        self.int(v)
    }
    fn serialize_i16(self, v: i16) -> Result {
        self.int(v)
    }
    fn serialize_i32(self, v: i32) -> Result {
        self.int(v)
    }
    fn serialize_i64(self, v: i64) -> Result {
        self.int(v)
    }
    fn serialize_i128(self, v: i128) -> Result {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Result {
        self.int(v)
    }
    fn serialize_u16(self, v: u16) -> Result {
        self.int(v)
    }
    fn serialize_u32(self, v: u32) -> Result {
        self.int(v)
    }
    fn serialize_u64(self, v: u64) -> Result {
        self.int(v)
    }
    fn serialize_u128(self, v: u128) -> Result {
        self.int(v)
    }
    fn serialize_f32(self, _: f32) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_f64(self, _: f64) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_char(self, v: char) -> Result {
        self.0.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result {
        self.0.string(v)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_unit(self) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result {
        self.0.string(variant)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _: &'static str, value: &T) -> Result {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests;
