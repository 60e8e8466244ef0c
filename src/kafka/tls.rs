//! TLS records, recognised at the start of a connection's bytes so that an encrypted
//! connection is named for what it is instead of being misread as Kafka (a TLS record
//! header read as a Kafka size prefix says about 370 MB) or given up with advice that
//! cannot work.
//!
//! Only a record header and the start of its handshake message are looked at (RFC 8446
//! section 5.1, RFC 5246 section 6.2): what one delivery of a stream holds, never more.
//! The recogniser works on partial bytes, where a TLS parser wants whole records.

/// Largest TLS record length: 2^14 bytes of plaintext plus the 2048 a TLS 1.2
/// ciphertext may add (RFC 5246 section 6.2.3).
pub const MAX_RECORD_LEN: usize = (1 << 14) + 2048;
const RECORD_HEADER_LEN: usize = 5;
/// Longest server name kept from the SNI extension (a DNS name is at most 253 bytes).
const MAX_SERVER_NAME_LEN: usize = 255;

const CHANGE_CIPHER_SPEC: u8 = 0x14;
const HANDSHAKE: u8 = 0x16;
const APPLICATION_DATA: u8 = 0x17;
const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
const SERVER_NAME_EXTENSION: u16 = 0;
const HOST_NAME: u8 = 0;

/// What showed a connection's bytes to be TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// A ClientHello, with the server name it asks for (SNI) when it was readable.
    ClientHello {
        server_name: Option<String>,
    },
    ServerHello,
    /// Application data records: a connection picked up after its handshake.
    ApplicationData,
}

impl Seen {
    /// The name of what was seen, for the diagnostic's facts.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ClientHello { .. } => "client_hello",
            Self::ServerHello => "server_hello",
            Self::ApplicationData => "application_data",
        }
    }

    /// As a person says it.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::ClientHello { .. } => "ClientHello seen",
            Self::ServerHello => "ServerHello seen",
            Self::ApplicationData => "application data records seen",
        }
    }
}

/// A record header: content type, a legacy version 3.1 to 3.4 (TLS 1.0 to 1.3's
/// 0x0301..0x0304), a length TLS allows. Returns the content type and length.
fn record_header(bytes: &[u8]) -> Option<(u8, usize)> {
    let header: &[u8; RECORD_HEADER_LEN] = bytes.get(..RECORD_HEADER_LEN)?.try_into().ok()?;
    let [content_type, major, minor, len_hi, len_lo] = *header;
    let len = usize::from(u16::from_be_bytes([len_hi, len_lo]));
    let known_type = (CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(&content_type);
    let version = major == 3 && (1..=4).contains(&minor);
    (known_type && version && len > 0 && len <= MAX_RECORD_LEN).then_some((content_type, len))
}

/// Whether what follows the first record, as far as `bytes` holds it, can be the next
/// record: a stream of records has a header wherever one ends.
fn next_record_fits(bytes: &[u8], first_len: usize) -> bool {
    let Some(next) = bytes.get(RECORD_HEADER_LEN + first_len..) else {
        return true; // the delivery ends inside the first record
    };
    match next.len() {
        0 => true,
        n if n < RECORD_HEADER_LEN => {
            // Only the start of a header: its content type and major version.
            next.first()
                .is_some_and(|t| (CHANGE_CIPHER_SPEC..=APPLICATION_DATA).contains(t))
                && next.get(1).is_none_or(|major| *major == 3)
        }
        _ => record_header(next).is_some(),
    }
}

/// Whether `bytes`, the first bytes of one direction of a connection (or of a delivery
/// where a record may start), are TLS: a ClientHello or ServerHello record, or an
/// application data record, each followed by another record where the bytes go on.
pub fn recognise(bytes: &[u8]) -> Option<Seen> {
    let (content_type, len) = record_header(bytes)?;
    if !next_record_fits(bytes, len) {
        return None;
    }
    let body = bytes.get(RECORD_HEADER_LEN..)?;
    match content_type {
        HANDSHAKE => hello(body),
        // TLS 1.2 and 1.3 label every application data record 3.3 (RFC 8446 5.1).
        APPLICATION_DATA if bytes.get(2) == Some(&3) => Some(Seen::ApplicationData),
        _ => None,
    }
}

/// A ClientHello or ServerHello message at the start of a handshake record's body: its
/// type, a length, then a legacy version 3.1 to 3.3 (a hello never says 3.4).
fn hello(body: &[u8]) -> Option<Seen> {
    let head: &[u8; 6] = body.get(..6)?.try_into().ok()?;
    let [kind, _, _, _, major, minor] = *head;
    if major != 3 || !(1..=3).contains(&minor) {
        return None;
    }
    match kind {
        CLIENT_HELLO => Some(Seen::ClientHello {
            server_name: body.get(4..).and_then(server_name),
        }),
        SERVER_HELLO => Some(Seen::ServerHello),
        _ => None,
    }
}

/// A bounded cursor: every read checks what is left and gives `None` past the end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }

    fn u16(&mut self) -> Option<u16> {
        let pair: [u8; 2] = self.take(2)?.try_into().ok()?;
        Some(u16::from_be_bytes(pair))
    }

    /// A vector with a one- or two-byte length (`len_bytes`).
    fn vector(&mut self, len_bytes: usize) -> Option<&'a [u8]> {
        let len = match len_bytes {
            1 => usize::from(self.u8()?),
            _ => usize::from(self.u16()?),
        };
        self.take(len)
    }
}

/// The host name of a ClientHello's server_name extension (RFC 6066 section 3), from
/// the hello's body (after its type and length); `None` when it has none or the bytes
/// at hand end first.
fn server_name(hello: &[u8]) -> Option<String> {
    let mut c = Cursor(hello);
    c.take(2 + 32)?; // legacy_version, random
    c.vector(1)?; // legacy_session_id
    c.vector(2)?; // cipher_suites
    c.vector(1)?; // legacy_compression_methods
    let mut extensions = Cursor(c.vector(2)?);
    while let Some(kind) = extensions.u16() {
        let data = extensions.vector(2)?;
        if kind != SERVER_NAME_EXTENSION {
            continue;
        }
        let mut names = Cursor(Cursor(data).vector(2)?);
        while let Some(name_type) = names.u8() {
            let name = names.vector(2)?;
            if name_type == HOST_NAME && name.len() <= MAX_SERVER_NAME_LEN {
                return std::str::from_utf8(name)
                    .ok()
                    .filter(|n| n.bytes().all(|b| b.is_ascii_graphic()))
                    .map(str::to_owned);
            }
        }
        return None;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello record: legacy version 3.3, a session id, two suites, and `sni`
    /// as its only extension when given.
    fn client_hello(record_version: u8, sni: Option<&str>) -> Vec<u8> {
        let mut hello = vec![0x03, 0x03];
        hello.extend([0x5a; 32]);
        hello.push(32);
        hello.extend([0x11; 32]);
        hello.extend([0x00, 0x04, 0x13, 0x01, 0x13, 0x02, 0x01, 0x00]);
        let mut extensions = Vec::new();
        // a supported_versions extension first, to be passed over
        extensions.extend([0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04]);
        if let Some(name) = sni {
            let n = name.len() as u16;
            extensions.extend([0x00, 0x00]);
            extensions.extend((n + 5).to_be_bytes());
            extensions.extend((n + 3).to_be_bytes());
            extensions.push(0);
            extensions.extend(n.to_be_bytes());
            extensions.extend(name.as_bytes());
        }
        hello.extend((extensions.len() as u16).to_be_bytes());
        hello.extend(extensions);
        let mut handshake = vec![CLIENT_HELLO, 0];
        handshake.extend((hello.len() as u16).to_be_bytes());
        handshake.extend(hello);
        let mut record = vec![HANDSHAKE, 0x03, record_version];
        record.extend((handshake.len() as u16).to_be_bytes());
        record.extend(handshake);
        record
    }

    #[test]
    fn client_hello_with_and_without_sni() {
        let with = client_hello(0x01, Some("broker-1.kafka.example"));
        assert_eq!(
            recognise(&with),
            Some(Seen::ClientHello {
                server_name: Some("broker-1.kafka.example".into())
            })
        );
        let without = client_hello(0x03, None);
        assert_eq!(
            recognise(&without),
            Some(Seen::ClientHello { server_name: None })
        );
        // cut anywhere after the handshake's version: still a ClientHello, the name
        // only when its bytes are all there
        for cut in 11..with.len() {
            let seen = recognise(&with[..cut]);
            let Some(Seen::ClientHello { server_name }) = seen else {
                panic!("cut at {cut}: {seen:?}");
            };
            assert_eq!(server_name.is_some(), cut == with.len(), "cut at {cut}");
        }
        // before the handshake's version is there, no judgement
        for cut in 0..11 {
            assert_eq!(recognise(&with[..cut]), None, "cut at {cut}");
        }
    }

    #[test]
    fn server_hello_and_application_data() {
        let server = [
            0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, 0x00, 0x00, 0x76, 0x03, 0x03,
        ];
        assert_eq!(recognise(&server), Some(Seen::ServerHello));
        let mut app = vec![0x17, 0x03, 0x03, 0x00, 0x20];
        app.extend([0xab; 0x20]);
        assert_eq!(recognise(&app), Some(Seen::ApplicationData));
        // a second record after it, whole or started
        app.extend([0x17, 0x03, 0x03, 0x01, 0x00, 0xcd]);
        assert_eq!(recognise(&app), Some(Seen::ApplicationData));
        assert_eq!(recognise(&app[..0x25 + 2]), Some(Seen::ApplicationData));
    }

    #[test]
    fn near_misses_are_not_tls() {
        // A Kafka request: size 0x00000016, ApiVersions v3.
        let kafka = [0x00, 0x00, 0x00, 0x16, 0x00, 0x12, 0x00, 0x03, 0, 0, 0, 1];
        assert_eq!(recognise(&kafka), None);
        // A handshake header with SSL 3.0's or a future version.
        for minor in [0x00, 0x05] {
            let bytes = [
                0x16, 0x03, minor, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c, 0x03, 0x03,
            ];
            assert_eq!(recognise(&bytes), None, "version 3.{minor}");
        }
        // Application data labelled TLS 1.0 (obsolete, RFC 8996): too weak a sign alone.
        assert_eq!(recognise(&[0x17, 0x03, 0x01, 0x00, 0x01, 0]), None);
        // A record longer than TLS allows, or empty.
        assert_eq!(recognise(&[0x17, 0x03, 0x03, 0x48, 0x01, 0]), None);
        assert_eq!(recognise(&[0x17, 0x03, 0x03, 0x00, 0x00, 0]), None);
        // A handshake that is neither hello (Certificate), or a hello with a bad version.
        let certificate = [
            0x16, 0x03, 0x03, 0x00, 0x40, 0x0b, 0x00, 0x00, 0x3c, 0x03, 0x03,
        ];
        assert_eq!(recognise(&certificate), None);
        let bad_hello = [
            0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c, 0x16, 0x03,
        ];
        assert_eq!(recognise(&bad_hello), None);
        // An alert alone is not enough to name TLS.
        assert_eq!(recognise(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]), None);
        // Application data followed by bytes that are no record header.
        let mut app = vec![0x17, 0x03, 0x03, 0x00, 0x02, 0xab, 0xcd];
        app.extend([0x00, 0x00, 0x00, 0x16, 0x00]);
        assert_eq!(recognise(&app), None);
        // The bytes of a Kafka frame whose size prefix starts 0x16 0x03 0x01 (a 369 MB
        // frame, which Kafka refuses) followed by a plausible request header.
        let big = [0x16, 0x03, 0x01, 0x00, 0x00, 0x12, 0x00, 0x03, 0, 0, 0, 1];
        assert_eq!(recognise(&big), None);
    }

    #[test]
    fn malformed_server_name_extensions_give_no_name() {
        let mut hello = client_hello(0x01, Some("a"));
        // make the name's length run past the end
        let at = hello.len() - 3;
        hello[at] = 0xff;
        let Some(Seen::ClientHello { server_name }) = recognise(&hello) else {
            panic!("still a ClientHello");
        };
        assert_eq!(server_name, None);
        let binary = client_hello(0x01, Some("a\u{1}b"));
        assert_eq!(
            recognise(&binary),
            Some(Seen::ClientHello { server_name: None })
        );
    }
}
