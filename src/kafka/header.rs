//! Kafka request and response headers.
//!
//! Every request header version starts with `request_api_key` (int16),
//! `request_api_version` (int16) and `correlation_id` (int32), so those are read from
//! every request; every response header starts with `correlation_id`. The rest of the
//! header (client_id, tagged fields) is read only where we decode the message.

use super::reader::{DecodeError, Reader};
use super::tables::ApiKey;

/// Bytes of a request header that every version shares.
pub const REQUEST_PREFIX_LEN: usize = 8;
/// Request head looked at by the framer: the shared prefix and the int16 client_id
/// length that request headers v1 and v2 (all but a few ancient APIs) carry next.
pub const REQUEST_HEAD_PREFIX_LEN: usize = REQUEST_PREFIX_LEN + 2;
/// Bytes of a response header that every version shares.
pub const RESPONSE_PREFIX_LEN: usize = 4;
/// Smallest legal request after the length prefix: the shared prefix plus an int16 client_id length.
pub const MIN_REQUEST_LEN: usize = REQUEST_PREFIX_LEN + 2;

/// `request_api_key`, `request_api_version`, `correlation_id` (Kafka RequestHeader, all versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestPrefix {
    pub api_key: ApiKey,
    pub api_version: i16,
    pub correlation_id: i32,
}

impl RequestPrefix {
    /// Reads the prefix from the first [`REQUEST_PREFIX_LEN`] bytes after the length.
    pub fn parse(message: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(message);
        Ok(Self {
            api_key: ApiKey(r.i16("request_api_key")?),
            api_version: r.i16("request_api_version")?,
            correlation_id: r.i32("correlation_id")?,
        })
    }

    /// True when this looks like a real Kafka request: a key Kafka defines and a version
    /// that some release may send (its range, or a few above for newer releases). Any
    /// correlation id: Kafka's Java client counts on past `i32::MAX` into negative ids.
    /// Used to recognise Kafka on unknown ports; whether we can decode is another matter.
    pub fn is_plausible(&self) -> bool {
        self.api_key.may_be_request_version(self.api_version)
    }
}

/// The int16 `client_id` length right after the shared prefix, when present.
pub fn client_id_len(prefix: &[u8]) -> Option<i16> {
    let bytes: [u8; 2] = prefix
        .get(REQUEST_PREFIX_LEN..REQUEST_HEAD_PREFIX_LEN)?
        .try_into()
        .ok()?;
    Some(i16::from_be_bytes(bytes))
}

/// Reads the `correlation_id` that starts every response header.
pub fn response_correlation_id(message: &[u8]) -> Result<i32, DecodeError> {
    Reader::new(message).i32("correlation_id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_request_prefix() {
        let prefix =
            RequestPrefix::parse(&[0x00, 0x43, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02]).unwrap();
        assert_eq!(prefix.api_key, ApiKey(67));
        assert_eq!(prefix.api_version, 0);
        assert_eq!(prefix.correlation_id, 0x102);
        assert!(prefix.is_plausible());
    }

    #[test]
    fn http_and_tls_are_not_plausible_requests() {
        // "GET / HTTP/1.1": length 0x47455420, then "/ HTTP/1" as key and version
        let http = RequestPrefix::parse(b"/ HTTP/1.1\r\n").unwrap();
        assert!(!http.is_plausible());
        // TLS record header 16 03 01 .. then a ClientHello
        let tls = RequestPrefix::parse(&[0x01, 0x00, 0x01, 0xfc, 0x03, 0x03, 0xaa, 0xbb]).unwrap();
        assert!(!tls.is_plausible());
    }

    #[test]
    fn version_far_out_of_range_is_not_plausible() {
        let prefix = RequestPrefix::parse(&[0x00, 0x43, 0x00, 0x05, 0, 0, 0, 1]).unwrap();
        assert!(!prefix.is_plausible());
    }

    #[test]
    fn newer_versions_and_negative_correlation_ids_are_plausible() {
        // AllocateProducerIds v1, correlation id -2147483647
        let prefix = RequestPrefix::parse(&[0x00, 0x43, 0x00, 0x01, 0x80, 0, 0, 1]).unwrap();
        assert!(prefix.is_plausible());
    }
}
