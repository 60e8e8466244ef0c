//! Messages described as data: an API's request or response is declared once with
//! [`message!`], each field with Kafka's name, the versions it is in and Kafka's
//! documentation of it, as Kafka's JSON schemas give them. One decoder, [`Message::decode_with`],
//! reads any such message the same way: partially when the capture cut it (every field
//! read before the cut is kept, nothing is guessed), telling a [`Visitor`] the offset
//! and size of every field for the tree view.

use super::client_id::{self, ClientId};
use super::decoded::{partial, request_header, response_header, show_string, Undecoded};
use super::decoded::{traced, Problem};
use super::layout::{Ignore, Visitor};
use super::reader::{DecodeError, Reader, TaggedField};
use super::tables::{ApiKey, ErrorCode};
use super::MALLOC_OVERHEAD;

/// A value of a field's wire type: how it is read, named and shown. Strings are read
/// compact in flexible versions.
pub trait Wire: Sized {
    /// Kafka's name of the wire type, as the tree shows it.
    fn wire_type(flexible: bool) -> &'static str;
    fn read(r: &mut Reader<'_>, field: &'static str, flexible: bool) -> Result<Self, DecodeError>;
    /// The value as the tree shows it.
    fn show(&self, flexible: bool) -> String;
    /// Heap it holds: more than 0 whenever it owns a block, which the output thread
    /// relies on to know what to free where (`worker::Item::hand_back`).
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// A fixed-size integer or boolean, read by the reader method of its name.
macro_rules! fixed_wire {
    ($($ty:ty => $name:literal, $read:ident;)*) => {$(
        impl Wire for $ty {
            fn wire_type(_: bool) -> &'static str {
                $name
            }
            fn read(r: &mut Reader<'_>, field: &'static str, _: bool) -> Result<Self, DecodeError> {
                r.$read(field)
            }
            fn show(&self, _: bool) -> String {
                self.to_string()
            }
        }
    )*};
}

fixed_wire! {
    i8 => "int8", i8;
    i16 => "int16", i16;
    i32 => "int32", i32;
    i64 => "int64", i64;
    bool => "bool", bool;
}

impl Wire for ErrorCode {
    fn wire_type(_: bool) -> &'static str {
        "int16"
    }
    fn read(r: &mut Reader<'_>, field: &'static str, _: bool) -> Result<Self, DecodeError> {
        r.i16(field).map(Self)
    }
    fn show(&self, _: bool) -> String {
        format!("{} ({})", self.0, self.name())
    }
}

/// A nullable string: `None` is null on the wire.
impl Wire for Option<String> {
    fn wire_type(flexible: bool) -> &'static str {
        match flexible {
            true => "compact_nullable_string",
            false => "nullable_string",
        }
    }
    fn read(r: &mut Reader<'_>, field: &'static str, flexible: bool) -> Result<Self, DecodeError> {
        match flexible {
            true => r.compact_nullable_string(field),
            false => r.nullable_string(field),
        }
    }
    fn show(&self, flexible: bool) -> String {
        show_string(self, flexible)
    }
    fn heap_bytes(&self) -> usize {
        self.as_ref().map_or(0, String::capacity)
    }
}

/// A string that must not be null.
impl Wire for String {
    fn wire_type(flexible: bool) -> &'static str {
        match flexible {
            true => "compact_string",
            false => "string",
        }
    }
    fn read(r: &mut Reader<'_>, field: &'static str, flexible: bool) -> Result<Self, DecodeError> {
        match flexible {
            true => r.compact_string(field),
            false => r.string(field),
        }
    }
    fn show(&self, flexible: bool) -> String {
        show_string(&Some(self.clone()), flexible)
    }
    fn heap_bytes(&self) -> usize {
        self.capacity()
    }
}

/// One field as Kafka's schema gives it: its name and documentation.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub about: &'static str,
}

/// Reads one field of wire type `T` and tells the visitor where it was.
pub fn read_field<T: Wire, V: Visitor + ?Sized>(
    r: &mut Reader<'_>,
    v: &mut V,
    flexible: bool,
    field: Field,
) -> Result<T, DecodeError> {
    let doc = (field.name, T::wire_type(flexible), field.about);
    traced(
        r,
        v,
        doc,
        |r| T::read(r, field.name, flexible),
        |value| value.show(flexible),
    )
}

/// The header a message starts with, and the fields of it a message keeps.
pub trait Header: Default {
    fn read<V: Visitor + ?Sized>(
        &mut self,
        r: &mut Reader<'_>,
        v: &mut V,
        flexible: bool,
    ) -> Result<(), DecodeError>;
    fn heap_bytes(&self) -> usize;
}

/// Request header v1, or v2 in a flexible version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHeader {
    /// `client_id`: `Some(None)` is a null string on the wire.
    pub client_id: Option<Option<ClientId>>,
    /// Header v2's tagged fields (flexible versions).
    pub tagged_fields: Option<Vec<TaggedField>>,
}

impl Header for RequestHeader {
    fn read<V: Visitor + ?Sized>(
        &mut self,
        r: &mut Reader<'_>,
        v: &mut V,
        flexible: bool,
    ) -> Result<(), DecodeError> {
        request_header(
            r,
            v,
            flexible,
            (&mut self.client_id, &mut self.tagged_fields),
        )
    }
    fn heap_bytes(&self) -> usize {
        let client_id = self
            .client_id
            .as_ref()
            .and_then(Option::as_ref)
            .map_or(0, client_id::heap_bytes);
        client_id + tagged_bytes(self.tagged_fields.as_ref())
    }
}

/// Response header v0, or v1 in a flexible version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseHeader {
    /// Header v1's tagged fields (flexible versions).
    pub tagged_fields: Option<Vec<TaggedField>>,
}

impl Header for ResponseHeader {
    fn read<V: Visitor + ?Sized>(
        &mut self,
        r: &mut Reader<'_>,
        v: &mut V,
        flexible: bool,
    ) -> Result<(), DecodeError> {
        response_header(r, v, flexible, &mut self.tagged_fields)
    }
    fn heap_bytes(&self) -> usize {
        tagged_bytes(self.tagged_fields.as_ref())
    }
}

/// Heap a tagged-field section holds.
pub fn tagged_bytes(fields: Option<&Vec<TaggedField>>) -> usize {
    fields.map_or(0, |f| {
        f.capacity() * size_of::<TaggedField>() + f.iter().map(|t| t.data.capacity()).sum::<usize>()
    })
}

/// A request or response of one API, declared with [`message!`].
pub trait Message: Undecoded + Sized {
    const API: ApiKey;
    /// Kafka's name of the message (`AllocateProducerIdsRequest`).
    const NAME: &'static str;
    /// The newest version whose schema the declaration follows (every one from 0).
    const NEWEST: i16;

    /// Reads the header into the message.
    fn read_header<V: Visitor + ?Sized>(
        &mut self,
        r: &mut Reader<'_>,
        v: &mut V,
        flexible: bool,
    ) -> Result<(), DecodeError>;

    /// Reads the body of a `version` the declaration follows, field by field.
    fn read_body<V: Visitor + ?Sized>(
        &mut self,
        r: &mut Reader<'_>,
        v: &mut V,
        version: i16,
        flexible: bool,
    ) -> Result<(), DecodeError>;

    /// Heap its strings, tagged fields and kept bytes hold.
    fn fields_heap_bytes(&self) -> usize;

    /// Heap it holds when boxed: the box (with malloc's overhead) and what it points to.
    fn boxed_heap_bytes(&self) -> usize {
        size_of::<Self>() + MALLOC_OVERHEAD + self.fields_heap_bytes()
    }

    /// Decodes a message (the frame without its size prefix) of `version`.
    fn decode(message: &[u8], version: i16) -> Self {
        Self::decode_with(message, version, &mut Ignore)
    }

    /// Decodes a message of `len` bytes of which `missing` are not in the capture and
    /// `message` holds those before the first gap: the fields whose bytes are all there,
    /// and nothing from the gap on.
    fn decode_partial(message: &[u8], len: u32, missing: u32, version: i16) -> Self {
        partial(Self::decode(message, version), message.len(), len, missing)
    }

    /// [`Self::decode`], telling `v` the structure it reads. A version newer than
    /// [`Self::NEWEST`] is read to the end of its header.
    fn decode_with<V: Visitor + ?Sized>(message: &[u8], version: i16, v: &mut V) -> Self {
        let flexible = Self::API
            .flexible_from()
            .is_some_and(|from| version >= from);
        let supported = (0..=Self::NEWEST).contains(&version);
        let mut out = Self::default();
        let mut r = Reader::new(message);
        let result = (|| -> Result<(), DecodeError> {
            out.read_header(&mut r, v, flexible)?;
            if !supported {
                return Ok(());
            }
            v.open(Self::NAME, "struct", body_about(version), r.position());
            out.read_body(&mut r, v, version, flexible)?;
            v.close(r.position());
            r.finish()
        })();
        if let Err(err) = &result {
            v.failed(err);
        }
        *out.problem_mut() =
            Problem::of_result(result, Self::API, version, Self::NEWEST).map(Box::new);
        out
    }
}

/// The tree's note on the body node.
fn body_about(version: i16) -> &'static str {
    const ABOUT: [&str; 21] = [
        "message body, version 0",
        "message body, version 1",
        "message body, version 2",
        "message body, version 3",
        "message body, version 4",
        "message body, version 5",
        "message body, version 6",
        "message body, version 7",
        "message body, version 8",
        "message body, version 9",
        "message body, version 10",
        "message body, version 11",
        "message body, version 12",
        "message body, version 13",
        "message body, version 14",
        "message body, version 15",
        "message body, version 16",
        "message body, version 17",
        "message body, version 18",
        "message body, version 19",
        "message body, version 20",
    ];
    usize::try_from(version)
        .ok()
        .and_then(|v| ABOUT.get(v))
        .copied()
        .unwrap_or("message body")
}

/// Declares a request or response of one API as Kafka's JSON schema gives it: the
/// struct (every field `None` until read), its [`Message`] and [`Undecoded`] impls.
///
/// ```ignore
/// message! {
///     /// What it is.
///     pub struct Request: RequestHeader {
///         api: ApiKey::ALLOCATE_PRODUCER_IDS, name: "AllocateProducerIdsRequest", newest: 0,
///         /// `BrokerId` (int32, v0+): the ID of the requesting broker.
///         broker_id: i32 = ("BrokerId", 0.., "The ID of the requesting broker."),
///     }
/// }
/// ```
macro_rules! message {
    (
        $(#[$meta:meta])*
        pub struct $name:ident: $header:ty {
            api: $api:expr, name: $kafka_name:literal, newest: $newest:literal,
            $(
                $(#[$field_meta:meta])*
                $field:ident: $ty:ty = ($wire_name:literal, $versions:expr, $about:literal),
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct $name {
            /// The header's fields this message keeps.
            pub header: $header,
            $(
                $(#[$field_meta])*
                pub $field: Option<$ty>,
            )*
            /// The body's tagged fields (flexible versions).
            pub tagged_fields: Option<Vec<$crate::kafka::reader::TaggedField>>,
            pub problem: Option<Box<$crate::kafka::decoded::Problem>>,
            /// Bytes of the message that are not in the capture; `None` when it is whole.
            pub bytes_not_captured: Option<u32>,
            /// The message as captured (without its size prefix), kept for the tree view
            /// only; the decoder leaves it empty.
            pub raw: Vec<u8>,
        }

        $crate::kafka::decoded::undecoded_fields!($name);

        impl $crate::kafka::schema::Message for $name {
            const API: $crate::kafka::tables::ApiKey = $api;
            const NAME: &'static str = $kafka_name;
            const NEWEST: i16 = $newest;

            fn read_header<V: $crate::kafka::layout::Visitor + ?Sized>(
                &mut self,
                r: &mut $crate::kafka::reader::Reader<'_>,
                v: &mut V,
                flexible: bool,
            ) -> Result<(), $crate::kafka::reader::DecodeError> {
                $crate::kafka::schema::Header::read(&mut self.header, r, v, flexible)
            }

            fn read_body<V: $crate::kafka::layout::Visitor + ?Sized>(
                &mut self,
                r: &mut $crate::kafka::reader::Reader<'_>,
                v: &mut V,
                version: i16,
                flexible: bool,
            ) -> Result<(), $crate::kafka::reader::DecodeError> {
                $(
                    if ($versions).contains(&version) {
                        let field = $crate::kafka::schema::Field {
                            name: $wire_name,
                            about: $about,
                        };
                        self.$field = Some($crate::kafka::schema::read_field(r, v, flexible, field)?);
                    }
                )*
                if flexible {
                    let about = "number of tagged fields in this struct";
                    self.tagged_fields = Some($crate::kafka::decoded::tagged_section(r, v, about)?);
                }
                Ok(())
            }

            fn fields_heap_bytes(&self) -> usize {
                let fields = 0 $(+ self.$field.as_ref().map_or(0, $crate::kafka::schema::Wire::heap_bytes))*;
                $crate::kafka::schema::Header::heap_bytes(&self.header)
                    + fields
                    + $crate::kafka::schema::tagged_bytes(self.tagged_fields.as_ref())
                    + self.raw.capacity()
                    + $crate::kafka::decoded::Problem::heap_bytes(self.problem.as_deref())
            }
        }
    };
}
pub(crate) use message;

#[cfg(test)]
mod tests;
