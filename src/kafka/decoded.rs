//! What every decoded message shares: why one did not fully decode ([`Problem`]), the
//! request and response headers, and the helpers that read a field while telling a
//! [`Visitor`] where it was (the tree view). The API decoders build on these.

use std::fmt;

use super::client_id::ClientId;
use super::layout::Visitor;
use super::reader::{DecodeError, Reader, TaggedField};
use super::tables::ApiKey;

/// Offset of the message inside the frame: the int32 length prefix.
pub const LENGTH_PREFIX_LEN: usize = 4;

/// Why a message was not fully decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A version we have no schema for; the body is left alone. We decode versions 0
    /// to `newest` (`None`: no version of this API).
    UnsupportedVersion {
        api: ApiKey,
        version: i16,
        newest: Option<i16>,
    },
    Decode(DecodeError),
    /// Larger than we buffer to decode: counted, not read.
    TooLarge {
        len: u32,
        limit: u32,
    },
    /// Its bytes were dropped while it was being read, to stay within the memory budget.
    Shed {
        len: u32,
    },
    /// Its head was found by a search for framing after its bytes had gone by.
    PassedOver {
        len: u32,
    },
    /// The message's first gap in the capture (snaplen, a lost segment) comes after
    /// `captured` of its `len` bytes: decoding stopped at `field`, at `offset` in the
    /// frame, or read every field before the gap (`None`).
    NotCaptured {
        len: u32,
        captured: u32,
        field: Option<(&'static str, usize)>,
    },
}

impl Problem {
    /// Heap a message's boxed problem holds: boxed, as most messages have none.
    pub fn heap_bytes(problem: Option<&Self>) -> usize {
        problem.map_or(0, |p| {
            let reason = match p {
                Self::Decode(DecodeError::Invalid { reason, .. }) => reason.capacity(),
                _ => 0,
            };
            size_of::<Self>() + super::MALLOC_OVERHEAD + reason
        })
    }

    /// The problem of a message of `len` bytes of which only the first `captured` were
    /// decoded: running out of bytes there is the capture's doing, not the message's.
    /// A value that cannot be right, or a version we do not decode, stays what it is.
    pub fn of_partial(problem: Option<Self>, captured: usize, len: u32) -> Option<Self> {
        let captured = u32::try_from(captured).unwrap_or(u32::MAX);
        match problem {
            Some(Self::Decode(DecodeError::Short { field, offset, .. })) => {
                Some(Self::NotCaptured {
                    len,
                    captured,
                    field: Some((field, offset)),
                })
            }
            None => Some(Self::NotCaptured {
                len,
                captured,
                field: None,
            }),
            other => other,
        }
    }

    /// The problem of a decode that ended with `result`, of `version` of an API whose
    /// versions 0 to `newest` we have the schema of.
    pub fn of_result(
        result: Result<(), DecodeError>,
        api: ApiKey,
        version: i16,
        newest: i16,
    ) -> Option<Self> {
        match result {
            Err(err) => Some(Self::Decode(err.shifted(LENGTH_PREFIX_LEN))),
            Ok(()) if !(0..=newest).contains(&version) => Some(Self::UnsupportedVersion {
                api,
                version,
                newest: Some(newest),
            }),
            Ok(()) => None,
        }
    }
}

/// The versions we decode, 0 to `newest`, as the end of a sentence.
fn supported_versions(newest: Option<i16>) -> String {
    match newest {
        Some(0) => "only version 0 is".to_owned(),
        Some(newest) => format!("versions 0 to {newest} are"),
        None => "none is".to_owned(),
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnsupportedVersion {
                api,
                version,
                newest,
            } => write!(
                f,
                "{} version {version} is not supported ({}); the body was not decoded",
                api.name(),
                supported_versions(*newest)
            ),
            Self::Decode(err) => err.fmt(f),
            Self::TooLarge { len, limit } => write!(
                f,
                "the message is {len} bytes, above the {limit} bytes we decode; it was not read"
            ),
            Self::PassedOver { len } => write!(
                f,
                "the message's {len} bytes had gone by when framing was found again at its head; it was not read"
            ),
            Self::Shed { len } => write!(
                f,
                "the message's {len} bytes were dropped while it was read, to stay within the memory budget (--max-memory); it was not decoded"
            ),
            Self::NotCaptured {
                len,
                captured,
                field,
            } => {
                write!(
                    f,
                    "the message's {len} bytes are not all in the capture: only the first {captured} are decoded"
                )?;
                match field {
                    Some((field, offset)) => write!(
                        f,
                        "; `{field}` at offset {offset} of the frame and the fields after it are not known"
                    ),
                    None => write!(f, "; every field was read before them"),
                }
            }
        }
    }
}

/// The fields every decoded message has besides its own: why it did not fully decode,
/// the bytes the capture lost and the bytes kept for the tree view.
pub trait Undecoded: Default {
    /// Why it did not decode whole, when it did not.
    fn problem(&self) -> Option<&Problem>;
    fn problem_mut(&mut self) -> &mut Option<Box<Problem>>;
    /// The message's bytes, when kept for the tree view (else empty).
    fn raw(&self) -> &[u8];
    fn bytes_not_captured_mut(&mut self) -> &mut Option<u32>;
    fn raw_mut(&mut self) -> &mut Vec<u8>;
}

/// `decoded`, read from the first `captured` bytes of a message of `len` of which
/// `missing` are not in the capture: running out of bytes there is the capture's doing.
pub fn partial<T: Undecoded>(mut decoded: T, captured: usize, len: u32, missing: u32) -> T {
    if missing > 0 {
        let problem = decoded.problem_mut();
        *problem = Problem::of_partial(problem.take().map(|p| *p), captured, len).map(Box::new);
        *decoded.bytes_not_captured_mut() = Some(missing);
    }
    decoded
}

/// Implements [`Undecoded`] for message types with the fields of that name.
macro_rules! undecoded_fields {
    ($($message:ty),*) => {$(
        impl $crate::kafka::decoded::Undecoded for $message {
            fn problem(&self) -> Option<&$crate::kafka::decoded::Problem> {
                self.problem.as_deref()
            }
            fn problem_mut(&mut self) -> &mut Option<Box<$crate::kafka::decoded::Problem>> {
                &mut self.problem
            }
            fn bytes_not_captured_mut(&mut self) -> &mut Option<u32> {
                &mut self.bytes_not_captured
            }
            fn raw(&self) -> &[u8] {
                &self.raw
            }
            fn raw_mut(&mut self) -> &mut Vec<u8> {
                &mut self.raw
            }
        }
    )*};
}
pub(crate) use undecoded_fields;

/// A field's name, wire type and what it means, for the tree view.
pub type FieldDoc = (&'static str, &'static str, &'static str);

/// Reads one field with `read` and tells the visitor where it was.
pub fn traced<T, V: Visitor + ?Sized>(
    r: &mut Reader<'_>,
    v: &mut V,
    (name, wire, about): FieldDoc,
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, DecodeError>,
    show: impl Fn(&T) -> String,
) -> Result<T, DecodeError> {
    let at = r.position();
    let value = read(r)?;
    v.field(name, wire, &|| show(&value), (at, r.position() - at), about);
    Ok(value)
}

/// A tagged-field section, as one node with the count and a child per field.
pub fn tagged_section<V: Visitor + ?Sized>(
    r: &mut Reader<'_>,
    v: &mut V,
    about: &'static str,
) -> Result<Vec<TaggedField>, DecodeError> {
    v.open("tagged_fields", "uvarint", about, r.position());
    let fields = r.tagged_fields_with(|field, span| v.tagged(field, span))?;
    v.value(&|| fields.len().to_string());
    v.close(r.position());
    Ok(fields)
}

/// A nullable string as the tree shows it, with its wire length (`int16` or compact).
pub fn show_string<T: AsRef<str>>(s: &Option<T>, compact: bool) -> String {
    match (s.as_ref().map(AsRef::as_ref), compact) {
        (None, false) => "null (int16 len=-1)".to_owned(),
        (None, true) => "null (uvarint 0)".to_owned(),
        (Some(text), false) => format!("{text:?} (int16 len={})", text.len()),
        (Some(text), true) => format!("{text:?} (uvarint {})", text.len() + 1),
    }
}

/// Request header v1, or v2 (KIP-482) for a flexible version: `client_id` stays an
/// int16 string in both. Writes `client_id` (`Some(None)`: null on the wire) and
/// header v2's tagged fields as it reads them.
pub fn request_header<V: Visitor + ?Sized>(
    r: &mut Reader<'_>,
    v: &mut V,
    flexible: bool,
    (client_id, tagged): (&mut Option<Option<ClientId>>, &mut Option<Vec<TaggedField>>),
) -> Result<(), DecodeError> {
    let version = if flexible { "v2" } else { "v1" };
    v.open(
        "RequestHeader",
        version,
        "common request header",
        r.position(),
    );
    traced(
        r,
        v,
        (
            "request_api_key",
            "int16",
            "numeric id of the API being invoked",
        ),
        |r| r.i16("request_api_key"),
        |k| format!("{k} ({})", ApiKey(*k).name()),
    )?;
    traced(
        r,
        v,
        (
            "request_api_version",
            "int16",
            "version of the API being invoked",
        ),
        |r| r.i16("request_api_version"),
        ToString::to_string,
    )?;
    traced(
        r,
        v,
        (
            "correlation_id",
            "int32",
            "echoed back by the broker in the response",
        ),
        |r| r.i32("correlation_id"),
        ToString::to_string,
    )?;
    *client_id = Some(traced(
        r,
        v,
        (
            "client_id",
            "nullable_string",
            "always a non-flexible int16-prefixed string",
        ),
        |r| r.nullable_client_id("client_id"),
        |s| show_string(s, false),
    )?);
    if flexible {
        *tagged = Some(tagged_section(
            r,
            v,
            "number of tagged fields in the header",
        )?);
    }
    v.close(r.position());
    Ok(())
}

/// Response header v0, or v1 (tagged fields after the correlation id) for a flexible
/// version. Writes the tagged fields to `tagged` when it reads them.
pub fn response_header<V: Visitor + ?Sized>(
    r: &mut Reader<'_>,
    v: &mut V,
    flexible: bool,
    tagged: &mut Option<Vec<TaggedField>>,
) -> Result<(), DecodeError> {
    let version = if flexible { "v1" } else { "v0" };
    v.open(
        "ResponseHeader",
        version,
        "common response header",
        r.position(),
    );
    traced(
        r,
        v,
        (
            "correlation_id",
            "int32",
            "matches the correlation_id of the request",
        ),
        |r| r.i32("correlation_id"),
        ToString::to_string,
    )?;
    if flexible {
        *tagged = Some(tagged_section(
            r,
            v,
            "number of tagged fields in the header",
        )?);
    }
    v.close(r.position());
    Ok(())
}
