//! The two records every control-plane capture is full of, an AllocateProducerIds
//! exchange and the block it granted, written as JSON straight from the values that hold
//! them: no report model built and dropped per exchange, no `String` per address or
//! time, and each field's `"name":` copied as one constant. The bytes are those of
//! [`writer`](super::writer) on the model ([`report::exchange`](crate::report::exchange),
//! [`report::pid_block`](crate::report::pid_block)), compact or pretty, at any depth: the
//! model stays the one declaration of the fields (and of the schema); the tests here and
//! `tests/it/serialized.rs` hold the two to the same bytes.

use std::cell::Cell;
use std::fmt::{self, Write as _};

use crate::analysis::Block;
use crate::kafka::allocate_producer_ids::Response;
use crate::kafka::decoded::Problem;
use crate::kafka::reader::TaggedField;
use crate::kafka::tables::ApiKey;
use crate::pairing::{Exchange, MessageMeta};
use crate::report::model::UnixTime;
use crate::timestamp::{Timestamp, PAIRS};

/// `"name":`, the form [`Object::key`] takes.
macro_rules! key {
    ($name:literal) => {
        concat!("\"", $name, "\":").as_bytes()
    };
}

/// One exchange, as the model's `Exchange` serializes, at `depth`; with `lead`, a first
/// field `"type":"<lead>"` (an ndjson line).
pub fn exchange(
    out: &mut Vec<u8>,
    ex: &Exchange,
    pretty: bool,
    depth: usize,
    lead: Option<&'static str>,
) {
    let mut o = Object::open(out, pretty, depth);
    if let Some(kind) = lead {
        o.plain(key!("type"), kind);
    }
    o.int(key!("connection"), ex.endpoints.connection);
    o.address(key!("client"), ex.endpoints.client);
    o.address(key!("server"), ex.endpoints.server);
    o.int(key!("correlation_id"), ex.correlation_id);
    o.plain(key!("status"), ex.outcome.status().as_str());
    o.key(key!("request"));
    request(&mut o.nested(), ex);
    o.key(key!("response"));
    match ex.outcome.response() {
        Some((meta, resp)) => response(&mut o.nested(), meta, resp),
        None => o.raw(b"null"),
    }
    o.key(key!("latency_us"));
    o.float_or_null(ex.latency_us());
    o.close();
}

fn request(o: &mut Object<'_>, ex: &Exchange) {
    let req = &ex.request;
    meta(o, &ex.request_meta);
    o.int(key!("api_key"), ApiKey::ALLOCATE_PRODUCER_IDS.0);
    o.int(key!("api_version"), ex.api_version);
    match &req.header.client_id {
        None => {}
        Some(None) => {
            o.key(key!("client_id"));
            o.raw(b"null");
        }
        Some(Some(id)) => o.text(key!("client_id"), id),
    }
    tagged(o, key!("header_tagged_fields"), &req.header.tagged_fields);
    o.some_int(key!("broker_id"), req.broker_id);
    o.some_int(key!("broker_epoch"), req.broker_epoch);
    end(
        o,
        &req.tagged_fields,
        req.bytes_not_captured,
        req.problem.as_deref(),
    );
}

fn response(o: &mut Object<'_>, meta_of: &MessageMeta, resp: &Response) {
    meta(o, meta_of);
    tagged(o, key!("header_tagged_fields"), &resp.header.tagged_fields);
    o.some_int(key!("throttle_time_ms"), resp.throttle_time_ms);
    if let Some(code) = resp.error_code {
        o.int(key!("error_code"), code.0);
        match code.known_name() {
            Some(name) => o.plain(key!("error"), name),
            None => o.text(key!("error"), &code.name()),
        }
    }
    o.some_int(key!("producer_id_start"), resp.producer_id_start);
    o.some_int(key!("producer_id_len"), resp.producer_id_len);
    end(
        o,
        &resp.tagged_fields,
        resp.bytes_not_captured,
        resp.problem.as_deref(),
    );
}

/// The fields a request and a response both end with, and the object's end.
fn end(
    o: &mut Object<'_>,
    tagged_fields: &Option<Vec<TaggedField>>,
    bytes_not_captured: Option<u32>,
    problem: Option<&Problem>,
) {
    tagged(o, key!("tagged_fields"), tagged_fields);
    o.some_int(key!("bytes_not_captured"), bytes_not_captured);
    if let Some(problem) = problem {
        o.text(key!("decode_error"), &problem.to_string());
    }
    o.close();
}

/// Where a message is: the fields a request and a response both start with.
fn meta(o: &mut Object<'_>, meta: &MessageMeta) {
    o.int(key!("frame"), meta.frame);
    if let Some(origin) = meta.origin {
        o.int(key!("capture_index"), origin.capture());
        o.int(key!("capture_frame"), origin.frame());
    }
    o.int(key!("first_frame"), meta.first_frame);
    o.time(key!("timestamp"), key!("unix_time"), meta.timestamp);
    o.int(key!("size"), meta.size);
}

/// A list of tagged fields, left out when the message has none to read. Inlined, so
/// that the usual empty list is its name and `[]` copied as constants.
#[inline(always)]
fn tagged(o: &mut Object<'_>, name: &'static [u8], fields: &Option<Vec<TaggedField>>) {
    let Some(fields) = fields else {
        return;
    };
    o.key(name);
    if fields.is_empty() {
        o.raw(b"[]");
    } else {
        tagged_list(o, fields);
    }
}

/// A non-empty list of tagged fields, as the value of the key just written.
fn tagged_list(o: &mut Object<'_>, fields: &[TaggedField]) {
    o.open_list();
    for field in fields {
        o.list_item();
        let mut f = o.nested();
        f.int(key!("tag"), field.tag);
        f.text(key!("data"), &crate::report::hex(&field.data));
        if let Some((len, crc)) = field.cut {
            f.int(key!("data_len"), len);
            f.key(key!("data_crc32"));
            let _ = write!(Text(&mut *f.out), "\"{crc:08x}\"");
        }
        f.close();
    }
    o.close_list();
}

/// One block, as the model's `PidBlock` serializes, at `depth`; with `lead`, a first
/// field `"type":"<lead>"`.
pub fn block(out: &mut Vec<u8>, b: &Block, pretty: bool, depth: usize, lead: Option<&'static str>) {
    let mut o = Object::open(out, pretty, depth);
    if let Some(kind) = lead {
        o.plain(key!("type"), kind);
    }
    o.int(key!("start"), b.start);
    o.int(key!("end"), b.end);
    o.int(key!("len"), b.len);
    o.int(key!("broker_id"), b.broker_id);
    o.int(key!("broker_epoch"), b.broker_epoch);
    o.int(key!("connection"), b.connection);
    o.address(key!("client"), b.client);
    o.address(key!("server"), b.server);
    o.int(key!("correlation_id"), b.correlation_id);
    o.int(key!("request_frame"), b.request_frame);
    o.int(key!("response_frame"), b.response_frame);
    o.time(key!("timestamp"), key!("unix_time"), b.timestamp);
    o.close();
}

/// An open JSON object being written into `out`, laid out as the writer lays it out.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    pretty: bool,
    /// Depth of the object's fields.
    depth: usize,
    /// No field written yet.
    first: bool,
}

impl<'a> Object<'a> {
    fn open(out: &'a mut Vec<u8>, pretty: bool, depth: usize) -> Self {
        out.push(b'{');
        Self {
            out,
            pretty,
            depth: depth + 1,
            first: true,
        }
    }

    /// An object as the value of the key just written (or of a list item).
    fn nested(&mut self) -> Object<'_> {
        Object::open(self.out, self.pretty, self.depth)
    }

    fn close(&mut self) {
        self.depth -= 1;
        if self.pretty && !self.first {
            self.new_line();
        }
        self.out.push(b'}');
    }

    fn new_line(&mut self) {
        // into a Vec, writing cannot fail
        let _ = super::writer::new_line(self.out, self.depth);
    }

    /// `"name":` (and a space when pretty) after the field before, if any. Inlined, so
    /// that each name is copied as a constant.
    #[inline(always)]
    fn key(&mut self, name: &'static [u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        if self.pretty {
            self.new_line();
            self.out.extend_from_slice(name);
            self.out.push(b' ');
        } else {
            self.out.extend_from_slice(name);
        }
    }

    #[inline(always)]
    fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    #[inline(always)]
    fn int(&mut self, name: &'static [u8], value: impl Decimal) {
        self.key(name);
        push_decimal(self.out, value);
    }

    #[inline(always)]
    fn some_int(&mut self, name: &'static [u8], value: Option<impl Decimal>) {
        if let Some(value) = value {
            self.int(name, value);
        }
    }

    /// A string field: as it is, unless something in it needs escaping.
    #[inline(always)]
    fn text(&mut self, name: &'static [u8], value: &str) {
        self.key(name);
        self.string(value);
    }

    /// A string field of one of our own names (a status, a Kafka error's name from the
    /// project's table, an ndjson line's type), which never needs escaping: tests check
    /// the tables, and debug builds every name written.
    #[inline(always)]
    fn plain(&mut self, name: &'static [u8], value: &'static str) {
        debug_assert!(!super::writer::needs_escape(value.as_bytes()), "{value}");
        self.key(name);
        self.out.push(b'"');
        self.out.extend_from_slice(value.as_bytes());
        self.out.push(b'"');
    }

    fn string(&mut self, value: &str) {
        if super::writer::needs_escape(value.as_bytes()) {
            // serde_json's own escaping, as the writer does; into a Vec it cannot fail
            let _ = serde_json::to_writer(&mut *self.out, value);
            return;
        }
        self.out.push(b'"');
        self.out.extend_from_slice(value.as_bytes());
        self.out.push(b'"');
    }

    /// A capture time as `timestamp` (RFC 3339) and `unix_time` (seconds) fields.
    fn time(&mut self, text_name: &'static [u8], seconds_name: &'static [u8], at: Timestamp) {
        self.key(text_name);
        let micro = MicroTime::of(at);
        match &micro {
            Some(micro) => self.out.extend_from_slice(&micro.quoted),
            None => {
                self.out.push(b'"');
                at.push_rfc3339(self.out);
                self.out.push(b'"');
            }
        }
        self.key(seconds_name);
        push_seconds(self.out, micro.as_ref(), UnixTime(at));
    }

    fn address(&mut self, name: &'static [u8], addr: std::net::SocketAddr) {
        self.key(name);
        self.out.push(b'"');
        crate::report::push_address(self.out, addr);
        self.out.push(b'"');
    }

    /// serde_json's float, as the writer writes it (`null` for NaN and the infinities).
    fn float(&mut self, value: f64) {
        push_float(self.out, value);
    }

    fn float_or_null(&mut self, value: Option<f64>) {
        match value {
            Some(value) => self.float(value),
            None => self.out.extend_from_slice(b"null"),
        }
    }

    /// A non-empty list as a field's value: its items at one depth more.
    fn open_list(&mut self) {
        self.out.push(b'[');
        self.depth += 1;
        self.first = true;
    }

    fn list_item(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        if self.pretty {
            self.new_line();
        }
    }

    fn close_list(&mut self) {
        self.depth -= 1;
        if self.pretty {
            self.new_line();
        }
        self.out.push(b']');
        self.first = false;
    }
}

/// `fmt::Write` into the bytes being written (only ever given UTF-8).
struct Text<'a>(&'a mut Vec<u8>);

impl fmt::Write for Text<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A time to the microsecond, from 1 s to 2^32 s, as its two fields' values: the RFC
/// 3339 text in quotes, and the seconds as `push_unix_time` writes them (`len` bytes
/// of `seconds`). The six digits after the point are worked out once for both, and
/// the texts of the whole second are kept from the last time (consecutive times share
/// their second).
struct MicroTime {
    /// `"YYYY-MM-DDTHH:MM:SS.ffffffZ"`
    quoted: [u8; 29],
    /// Ten digits at most, a point, six.
    seconds: [u8; 17],
    len: usize,
}

/// A second's two texts but for their digits after the point: the second, RFC 3339 in
/// quotes, and the seconds' digits and point with their count.
type Second = (u64, [u8; 29], [u8; 17], usize);

impl MicroTime {
    /// `None` for a time to the nanosecond, or one outside the range.
    fn of(at: Timestamp) -> Option<Self> {
        thread_local! {
            static LAST: Cell<Second> = const { Cell::new((0, [0; 29], [0; 17], 0)) };
        }
        let Timestamp { secs, nanos, nano } = at;
        let (false, true, Ok(secs @ 1..=0xffff_ffff)) =
            (nano, nanos < 1_000_000_000, u64::try_from(secs))
        else {
            return None;
        };
        let (_, mut quoted, mut seconds, whole) = match LAST.get() {
            last @ (cached, ..) if cached == secs => last,
            _ => {
                let second = Self::second(secs)?;
                LAST.set(second);
                second
            }
        };
        let digits = micro_digits(nanos / 1000);
        if let Some(room) = quoted.get_mut(21..27) {
            room.copy_from_slice(&digits);
        }
        if let Some(room) = seconds.get_mut(whole + 1..whole + 7) {
            room.copy_from_slice(&digits);
        }
        Some(Self {
            quoted,
            seconds,
            len: trimmed_len(&seconds, whole),
        })
    }

    /// The texts of second `secs`, but for their digits after the point.
    fn second(secs: u64) -> Option<Second> {
        let text = crate::timestamp::seconds_text_19(i64::try_from(secs).ok()?)?;
        let mut quoted = *b"\"YYYY-MM-DDTHH:MM:SS.ffffffZ\"";
        if let Some(room) = quoted.get_mut(1..20) {
            room.copy_from_slice(&text);
        }
        let (seconds, whole) = whole_seconds(secs);
        Some((secs, quoted, seconds, whole))
    }
}

/// `secs` (below 2^32) as the start of its seconds text: its digits and a point, in the
/// 17 bytes that room for six more digits makes, with the count of its digits.
fn whole_seconds(secs: u64) -> ([u8; 17], usize) {
    let mut text = [b'0'; 17]; // ten digits, a point, six
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(secs).as_bytes();
    let whole = digits.len();
    if let Some(room) = text.get_mut(..whole) {
        room.copy_from_slice(digits);
    }
    if let Some(point) = text.get_mut(whole) {
        *point = b'.';
    }
    (text, whole)
}

/// `micros` (below a million) in six digits, with leading zeros.
fn micro_digits(micros: u32) -> [u8; 6] {
    let mut digits = [b'0'; 6];
    crate::timestamp::zero_padded(&mut digits, micros);
    digits
}

/// The length of seconds text `text` (`whole` digits, a point, six) with its trailing
/// zeros trimmed, one digit after the point kept.
fn trimmed_len(text: &[u8; 17], whole: usize) -> usize {
    let mut len = whole + 7;
    while len > whole + 2 && text.get(len - 1) == Some(&b'0') {
        len -= 1;
    }
    len
}

/// Appends the number serde_json writes for [`UnixTime::seconds`].
#[cfg(test)]
fn push_unix_time(out: &mut Vec<u8>, at: UnixTime) {
    push_seconds(out, MicroTime::of(at.0).as_ref(), at);
}

/// Appends `at`'s seconds as serde_json writes [`UnixTime::seconds`], without formatting
/// a float where the decimal is known (`micro`, the time's [`MicroTime`]): a time to the
/// microsecond from 1 s to 2^32 s (2106) is written as its decimal, trailing zeros
/// trimmed (`.0` when whole). The float is the one nearest that decimal, and below 2^32
/// floats lie less than a microsecond apart, so no shorter decimal comes as near: the
/// shortest that reads back as the float, which is what serde_json writes, is that
/// decimal. Other times are written by serde_json.
fn push_seconds(out: &mut Vec<u8>, micro: Option<&MicroTime>, at: UnixTime) {
    let Some(MicroTime { seconds, len, .. }) = micro else {
        let _ = serde_json::to_writer(&mut *out, &at.seconds());
        return;
    };
    // appended whole, then cut to length: a copy of known size, not a call to
    // `memcpy` for a few bytes
    let start = out.len();
    out.extend_from_slice(seconds);
    out.truncate(start + len);
}

/// serde_json's text of `value`. A whole number of magnitude below 10^15 (a latency in
/// whole microseconds, as every microsecond capture gives) is its integer's digits and
/// `.0`, without the shortest-float search; anything else goes to serde_json.
fn push_float(out: &mut Vec<u8>, value: f64) {
    // `-0.0` keeps its sign in serde_json's text and loses it as an integer
    if value.fract() == 0.0 && value.abs() < 1e15 && !(value == 0.0 && value.is_sign_negative()) {
        // exact: a whole number below 2^53
        #[allow(clippy::cast_possible_truncation)]
        let whole = value as i64;
        push_decimal(out, whole);
        out.extend_from_slice(b".0");
        return;
    }
    let _ = serde_json::to_writer(&mut *out, &value);
}

/// An integer as its sign and magnitude, for [`push_decimal`].
pub trait Decimal: Copy {
    fn sign_and_magnitude(self) -> (bool, u64);
}

macro_rules! decimal {
    ($($t:ty),*) => {$(
        impl Decimal for $t {
            #[inline(always)]
            fn sign_and_magnitude(self) -> (bool, u64) {
                (self < 0, u64::from(self.unsigned_abs()))
            }
        }
    )*};
}
decimal!(i16, i32, i64);

macro_rules! unsigned_decimal {
    ($($t:ty),*) => {$(
        impl Decimal for $t {
            #[inline(always)]
            fn sign_and_magnitude(self) -> (bool, u64) {
                (false, u64::from(self))
            }
        }
    )*};
}
unsigned_decimal!(u16, u32, u64);

/// Appends `value` in decimal, as itoa and serde_json write it. The digits are put
/// together at the end of the first half of an array, and the 20 bytes that end with them
/// are appended, then cut to length: a copy of known size, where itoa's text of variable
/// length cost a call to `memcpy` (a dozen numbers an exchange).
#[inline(always)]
fn push_decimal(out: &mut Vec<u8>, value: impl Decimal) {
    const END: usize = 20; // u64::MAX has 20 digits; a negative i64 at most 19 and its sign
    let (negative, mut rest) = value.sign_and_magnitude();
    let mut text = [0u8; 2 * END];
    let mut start = END;
    while rest >= 100 {
        let from = 2 * (rest % 100) as usize;
        rest /= 100;
        start -= 2;
        put_pair(&mut text, start, from);
    }
    if rest >= 10 {
        start -= 2;
        put_pair(&mut text, start, 2 * rest as usize);
    } else {
        start -= 1;
        if let Some(digit) = text.get_mut(start) {
            *digit = b'0' + rest as u8;
        }
    }
    if negative {
        start -= 1;
        if let Some(sign) = text.get_mut(start) {
            *sign = b'-';
        }
    }
    let Some(Ok(digits)) = text.get(start..start + END).map(<&[u8; END]>::try_from) else {
        return;
    };
    let at = out.len();
    out.extend_from_slice(digits);
    out.truncate(at + END - start);
}

/// The two digits of `from / 2` (below 100) into `text` at `at`.
#[inline(always)]
fn put_pair(text: &mut [u8], at: usize, from: usize) {
    if let (Some(to), Some(pair)) = (text.get_mut(at..at + 2), PAIRS.get(from..from + 2)) {
        to.copy_from_slice(pair);
    }
}

#[cfg(test)]
mod tests;
