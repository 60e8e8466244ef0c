//! Capture time: a packet's timestamp as the capture file gives it, and the form the report
//! writes it in (RFC 3339 in UTC, `2023-11-14T22:13:20.123456Z`).
//!
//! A leaf: every stage may use it, and it uses no other module of the crate.

use std::cell::RefCell;
use std::fmt;

use time::format_description::FormatItem;
use time::macros::format_description;
use time::OffsetDateTime;

/// A capture timestamp in UTC; `nano` tells whether the capture carries nanoseconds
/// (9 fractional digits in the report) or microseconds (6).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    pub secs: i64,
    pub nanos: u32,
    pub nano: bool,
}

/// Bytes of the longest RFC 3339 form: a year of five characters (`-9999`), nanoseconds.
const RFC3339_MAX_LEN: usize = 31;

impl Timestamp {
    /// Nanoseconds since the Unix epoch.
    pub fn as_nanos(&self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }

    /// Microseconds from `earlier` to this time, as `(self.as_nanos() -
    /// earlier.as_nanos()) as f64 / 1000.0` gives them, the same bits: in 64-bit
    /// arithmetic when it fits (every latency between two packets does), not through
    /// `i128`'s conversion to `f64`, a call of tens of instructions, three an exchange.
    pub fn micros_since(&self, earlier: &Self) -> f64 {
        let nanos = self
            .secs
            .checked_sub(earlier.secs)
            .and_then(|secs| secs.checked_mul(1_000_000_000))
            .and_then(|whole| whole.checked_add(i64::from(self.nanos) - i64::from(earlier.nanos)));
        match nanos {
            // both round the exact integer to the nearest f64
            Some(nanos) => nanos as f64 / 1000.0,
            None => (self.as_nanos() - earlier.as_nanos()) as f64 / 1000.0,
        }
    }

    /// The report's form of this time (what [`Display`](fmt::Display) writes), in one
    /// allocation: the report writes one per message, block and diagnostic.
    pub fn to_rfc3339(&self) -> String {
        let mut out = String::with_capacity(RFC3339_MAX_LEN);
        // Writing to a String cannot fail.
        let _ = self.write_rfc3339(&mut out);
        out
    }

    /// RFC 3339 in UTC with 6 or 9 fractional digits, as the capture carries. A time past
    /// the year 9999 is written `out-of-range:SECS.NANOS` rather than as an invented date.
    pub fn write_rfc3339(&self, out: &mut impl fmt::Write) -> fmt::Result {
        match with_seconds_text(self.secs, |text| out.write_str(text)) {
            Some(written) => written?,
            None => return write!(out, "out-of-range:{}.{:09}", self.secs, self.nanos),
        }
        self.with_fraction(|text| write_fraction(out, text))
    }

    /// Hands `write` the end of the text: `.`, 6 or 9 digits as the capture carries, and
    /// `Z`, to be written at once.
    fn with_fraction<T>(&self, write: impl FnOnce(&[u8]) -> T) -> T {
        let nanos = self.nanos.min(999_999_999);
        if self.nano {
            write(&fraction::<11>(nanos))
        } else {
            write(&fraction::<8>(nanos / 1000))
        }
    }

    /// [`write_rfc3339`](Self::write_rfc3339)'s text appended to bytes, as the JSON
    /// writer holds its output: no `str` check or formatter per timestamp.
    pub fn push_rfc3339(&self, out: &mut Vec<u8>) {
        if with_seconds_text(self.secs, |text| out.extend_from_slice(text.as_bytes())).is_none() {
            out.extend_from_slice(self.to_rfc3339().as_bytes()); // rare: no cache to miss
            return;
        }
        self.with_fraction(|text| out.extend_from_slice(text));
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_rfc3339(f)
    }
}

/// Hands `write` the time down to the second of `secs` (`2023-11-14T22:13:20`); `None`
/// when the `time` crate cannot represent it. Consecutive packets share their second, so
/// the last one formatted is kept per thread and reused.
fn with_seconds_text<T>(secs: i64, write: impl FnOnce(&str) -> T) -> Option<T> {
    thread_local! {
        static LAST: RefCell<Option<(i64, String)>> = const { RefCell::new(None) };
    }
    LAST.with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else {
            // `write` itself formats a timestamp: this one goes without the cache.
            return Some(write(&seconds_text(secs)?));
        };
        if let Some((cached, text)) = last.as_ref() {
            if *cached == secs {
                return Some(write(text));
            }
        }
        let (_, text) = last.insert((secs, seconds_text(secs)?));
        Some(write(text))
    })
}

/// [`with_seconds_text`]'s text as the 19 bytes it takes in the years 0 to 9999; `None`
/// for any other.
pub(crate) fn seconds_text_19(secs: i64) -> Option<[u8; 19]> {
    with_seconds_text(secs, |text| text.as_bytes().try_into().ok()).flatten()
}

/// `secs` after the epoch as `YYYY-MM-DDTHH:MM:SS`, by the `time` crate.
fn seconds_text(secs: i64) -> Option<String> {
    const SECONDS: &[FormatItem<'_>] =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|dt| dt.format(SECONDS).ok())
}

/// `.`, `value` in `N - 2` digits with leading zeros, and `Z`.
fn fraction<const N: usize>(value: u32) -> [u8; N] {
    let mut text = [b'0'; N];
    if let Some((dot, rest)) = text.split_first_mut() {
        *dot = b'.';
        if let Some((zulu, digits)) = rest.split_last_mut() {
            *zulu = b'Z';
            zero_padded(digits, value);
        }
    }
    text
}

/// `text`, ASCII from [`fraction`].
fn write_fraction(out: &mut impl fmt::Write, text: &[u8]) -> fmt::Result {
    out.write_str(std::str::from_utf8(text).map_err(|_| fmt::Error)?)
}

/// `value`'s last `digits.len()` decimal digits into `digits`, with leading zeros: two
/// at a time, from a table (half the divisions: every exchange's times pass here).
pub(crate) fn zero_padded(digits: &mut [u8], mut value: u32) {
    let mut rest = digits;
    while rest.len() >= 2 {
        let Some((left, pair)) = std::mem::take(&mut rest).split_last_chunk_mut::<2>() else {
            break;
        };
        let from = 2 * (value % 100) as usize;
        if let Some(src) = PAIRS.get(from..from + 2) {
            pair.copy_from_slice(src);
        }
        value /= 100;
        rest = left;
    }
    if let Some(digit) = rest.last_mut() {
        *digit = b'0' + (value % 10) as u8;
    }
}

/// The two digits of every number below 100.
pub(crate) const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849\
5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    /// The i128 formula `micros_since` stands for.
    fn micros_by_i128(later: &Timestamp, earlier: &Timestamp) -> f64 {
        (later.as_nanos() - earlier.as_nanos()) as f64 / 1000.0
    }

    fn at(secs: i64, nanos: u32) -> Timestamp {
        Timestamp {
            secs,
            nanos,
            nano: true,
        }
    }

    /// The same bits as the i128 formula at the edges of `i64` nanoseconds, of `f64`'s
    /// exact integers, and past them, where rounding decides.
    #[test]
    fn micros_since_gives_the_i128_formulas_bits() {
        let max_secs = i64::MAX / 1_000_000_000;
        let pairs = [
            (at(0, 0), at(0, 0)),
            (at(1_700_000_000, 1), at(1_700_000_000, 999_999_999)),
            (at(1_700_000_001, 0), at(1_700_000_000, 999_999_999)),
            (at(9_007_199, 254_740_993), at(0, 0)),
            (at(max_secs, 854_775_807), at(0, 0)),
            (at(max_secs, 854_775_808), at(0, 0)),
            (at(0, 0), at(max_secs, 854_775_809)),
            (at(i64::MAX, 999_999_999), at(i64::MIN, 0)),
            (at(i64::MIN, 0), at(i64::MAX, 999_999_999)),
        ];
        for (later, earlier) in pairs {
            assert_eq!(
                later.micros_since(&earlier).to_bits(),
                micros_by_i128(&later, &earlier).to_bits(),
                "{later:?} since {earlier:?}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_two_times_give_the_i128_formulas_bits(
            secs: (i64, i64),
            nanos in (0u32..1_000_000_000, 0u32..1_000_000_000),
        ) {
            let (later, earlier) = (at(secs.0, nanos.0), at(secs.1, nanos.1));
            proptest::prop_assert_eq!(
                later.micros_since(&earlier).to_bits(),
                micros_by_i128(&later, &earlier).to_bits()
            );
        }

        #[test]
        fn any_latency_gives_the_i128_formulas_bits(
            secs in 0i64..4_000_000_000,
            nanos in 0u32..1_000_000_000,
            gap in 0i64..1_000_000_000_000_000,
        ) {
            let earlier = at(secs, nanos);
            let later_nanos = earlier.as_nanos() + i128::from(gap);
            let later_secs = i64::try_from(later_nanos.div_euclid(1_000_000_000)).unwrap();
            let later = at(later_secs, u32::try_from(later_nanos.rem_euclid(1_000_000_000)).unwrap());
            proptest::prop_assert_eq!(
                later.micros_since(&earlier).to_bits(),
                micros_by_i128(&later, &earlier).to_bits()
            );
        }
    }

    #[test]
    fn zero_padded_gives_the_last_digits_of_any_width() {
        for value in [0, 7, 42, 305, 999_999, 123_456_789, u32::MAX] {
            for width in 0..=11 {
                let mut digits = vec![b'x'; width];
                zero_padded(&mut digits, value);
                let text = format!("{value:0width$}");
                let want = &text[text.len() - width..];
                assert_eq!(digits, want.as_bytes(), "{value} in {width}");
            }
        }
    }

    #[test]
    fn timestamps_carry_the_capture_precision() {
        let micro = Timestamp {
            secs: 1_700_000_000,
            nanos: 123_456_000,
            nano: false,
        };
        assert_eq!(micro.to_rfc3339(), "2023-11-14T22:13:20.123456Z");
        let nano = Timestamp {
            nanos: 123_456_789,
            nano: true,
            ..micro
        };
        assert_eq!(nano.to_rfc3339(), "2023-11-14T22:13:20.123456789Z");
        assert_eq!(
            Timestamp::default().to_rfc3339(),
            "1970-01-01T00:00:00.000000Z"
        );
        let small = Timestamp {
            nanos: 7_000,
            ..micro
        };
        assert_eq!(small.to_rfc3339(), "2023-11-14T22:13:20.000007Z");
        let tiny = Timestamp { nanos: 7, ..nano };
        assert_eq!(tiny.to_rfc3339(), "2023-11-14T22:13:20.000000007Z");
        let far = Timestamp {
            secs: i64::MAX,
            ..micro
        };
        assert!(far.to_rfc3339().starts_with("out-of-range:"));
    }

    #[test]
    fn bytes_pushed_are_the_written_form() {
        let times = [
            (1_700_000_000, 123_456_000, false),
            (1_700_000_000, 123_456_789, true),
            (0, 7, true),
            (-1, 999_999_999, false),
            (i64::MAX, 5, false),
        ];
        for (secs, nanos, nano) in times {
            let at = Timestamp { secs, nanos, nano };
            let mut pushed = b"[".to_vec();
            at.push_rfc3339(&mut pushed);
            assert_eq!(pushed, format!("[{}", at.to_rfc3339()).into_bytes());
        }
    }

    #[test]
    fn display_writes_the_report_form() {
        let at = Timestamp {
            secs: 1_700_000_001,
            nanos: 5,
            nano: true,
        };
        assert_eq!(at.to_string(), at.to_rfc3339());
        assert_eq!(format!("[{at}]"), "[2023-11-14T22:13:21.000000005Z]");
    }

    /// A writer that formats another timestamp while it is written to: the cache is in
    /// use then, and the inner one is formatted without it.
    struct Nested(String);

    impl fmt::Write for Nested {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let inner = Timestamp {
                secs: 86_400,
                ..Timestamp::default()
            };
            self.0.push_str(&inner.to_rfc3339());
            self.0.push_str(s);
            Ok(())
        }
    }

    #[test]
    fn a_timestamp_written_while_another_is_formatted() {
        let mut out = Nested(String::new());
        write!(out, "{}", Timestamp::default()).unwrap();
        assert!(out
            .0
            .starts_with("1970-01-02T00:00:00.000000Z1970-01-01T00:00:00"));
    }
}
