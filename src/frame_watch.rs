//! What one frame held (`--frame N`), noted from what the pipeline hands on: what the
//! packet decoded to and which connection it is in, the Kafka messages drained after each
//! packet when a byte of theirs is in the frame, and how the Kafka stage came to read
//! the frame's connection (the readings it decides, drained with the messages). The
//! stages hold nothing for it. The sentence (`filters.frame_holds`) says what
//! frame N is when it is no AllocateProducerIds message, so a filter that draws nothing
//! says why.

use std::fmt::Write as _;
use std::net::SocketAddr;

use crate::decode::{self, Decoded};
use crate::kafka::message::Message;
use crate::kafka::tables::ApiKey;
use crate::kafka::Reading;

/// Messages of the frame described one by one; more are counted.
const MAX_DESCRIBED: usize = 3;

/// What the frame's packet decoded to.
#[derive(Debug)]
enum Packet {
    Tcp {
        src: SocketAddr,
        dst: SocketAddr,
        payload: usize,
    },
    Fragment,
    NotTcp(String),
    UnsupportedLinkType,
    Malformed(String),
}

/// One Kafka message with a byte in the frame.
#[derive(Debug)]
struct Held {
    request: bool,
    /// The request's API key and version (a response's, from the request it answers).
    api: Option<(ApiKey, i16)>,
    correlation_id: i32,
    connection: u64,
    first_frame: u64,
    frame: u64,
}

/// Notes on frame `frame` as the pipeline passes it.
#[derive(Debug)]
pub struct FrameWatch {
    frame: u64,
    packet: Option<Packet>,
    connection: Option<u64>,
    /// How the frame's connection is read, as far as is known.
    reading: Reading,
    /// The frame is a copy of this one, from another capture file, read instead.
    copy_of: Option<u64>,
    held: Vec<Held>,
    /// Messages in the frame past [`MAX_DESCRIBED`].
    more: u64,
}

impl FrameWatch {
    pub fn new(frame: u64) -> Self {
        Self {
            frame,
            packet: None,
            copy_of: None,
            connection: None,
            reading: Reading::Undecided,
            held: Vec::new(),
            more: 0,
        }
    }

    pub fn frame(&self) -> u64 {
        self.frame
    }

    /// The frame's packet, as decoded (called for that frame only).
    pub fn packet(&mut self, packet: &crate::capture::Packet<'_>, decoded: &Decoded<'_>) {
        self.packet = Some(match decoded {
            Decoded::Tcp(seg) => Packet::Tcp {
                src: seg.src,
                dst: seg.dst,
                payload: seg.payload.len(),
            },
            Decoded::Fragment(_) | Decoded::FragmentNotReassembled(_) => Packet::Fragment,
            Decoded::Other => Packet::NotTcp(decode::what_else(packet)),
            Decoded::UnsupportedLinkType => Packet::UnsupportedLinkType,
            Decoded::Malformed(reason) => Packet::Malformed(reason.clone()),
        });
    }

    /// The connection the frame's segment belongs to, and how the Kafka stage reads it
    /// now (asked before the segment and after it: a connection it ends or starts). A
    /// connection no longer followed shows as undecided: what was decided for it stands.
    pub fn connection(&mut self, index: u64, now: Reading) {
        if !(self.connection == Some(index) && now == Reading::Undecided) {
            self.reading = now;
        }
        self.connection = Some(index);
    }

    /// How the Kafka stage decided to read connection `index`.
    pub fn reading(&mut self, index: u64, reading: Reading) {
        if self.connection == Some(index) {
            self.reading = reading;
        }
    }

    /// The frame is a copy of frame `original`, from another file: not read again.
    pub fn copy_of(&mut self, original: u64) {
        self.copy_of = Some(original);
    }

    /// A message the Kafka stage found; kept when a byte of it is in the frame.
    pub fn message(&mut self, message: &Message) {
        let held = match message {
            Message::Request {
                ends,
                api_key,
                api_version,
                correlation_id,
                meta,
                ..
            } => Held {
                request: true,
                api: Some((*api_key, *api_version)),
                correlation_id: *correlation_id,
                connection: ends.connection,
                first_frame: meta.first_frame,
                frame: meta.frame,
            },
            Message::Response {
                ends,
                correlation_id,
                meta,
                answers,
                ..
            } => Held {
                request: false,
                api: *answers,
                correlation_id: *correlation_id,
                connection: ends.connection,
                first_frame: meta.first_frame,
                frame: meta.frame,
            },
            Message::GivenUp { .. } => return,
        };
        if !(held.first_frame..=held.frame).contains(&self.frame) {
            return;
        }
        if self.held.len() < MAX_DESCRIBED {
            self.held.push(held);
        } else {
            self.more += 1;
        }
    }

    /// The sentence: what the frame held, given the frames read.
    pub fn sentence(&self, frames: u64) -> String {
        let n = self.frame;
        if !self.held.is_empty() {
            return self.messages_sentence();
        }
        let Some(packet) = &self.packet else {
            let plural = if frames == 1 { "" } else { "s" };
            return format!("the capture has {frames} frame{plural}; there is no frame {n}");
        };
        if let Some(original) = self.copy_of {
            return format!(
                "frame {n} is a copy of frame {original}, the same packet captured in another file: it was read once, as frame {original} (--frame {original} shows what it holds)"
            );
        }
        match packet {
            Packet::Tcp { src, dst, payload } => {
                let bytes = match payload {
                    0 => "no payload".to_owned(),
                    1 => "1 byte of payload".to_owned(),
                    b => format!("{b} bytes of payload"),
                };
                let mut out = format!(
                    "frame {n} is TCP {src} -> {dst} with {bytes} and no Kafka message in it"
                );
                if let Some(index) = self.connection {
                    let reading = match self.reading {
                        Reading::Kafka => ", read as Kafka",
                        Reading::NotKafka => ", not read as Kafka: see its not_kafka diagnostic",
                        Reading::Encrypted => ", TLS: encrypted, not read",
                        Reading::Undecided => "",
                    };
                    let _ = write!(out, " (connection {index}{reading})");
                }
                out
            }
            Packet::Fragment => format!(
                "frame {n} is an IP fragment of a TCP datagram, with no Kafka message in it"
            ),
            Packet::NotTcp(what) => format!("frame {n} is not TCP ({what})"),
            Packet::UnsupportedLinkType => {
                format!("frame {n} is of a link type pidshark does not decode")
            }
            Packet::Malformed(reason) => {
                format!("frame {n} is a packet that could not be decoded ({reason})")
            }
        }
    }

    /// The frame's Kafka messages, and whether any is AllocateProducerIds.
    fn messages_sentence(&self) -> String {
        let n = self.frame;
        let connection = self.held.first().map_or(0, |h| h.connection);
        let allocate = self.held.iter().any(|h| {
            h.api
                .is_some_and(|(key, _)| key == ApiKey::ALLOCATE_PRODUCER_IDS)
        });
        let items: Vec<String> = self.held.iter().map(|h| self.item(h)).collect();
        let count = self.held.len() as u64 + self.more;
        let mut out = match (items.as_slice(), self.more) {
            ([one], 0) if self.whole(self.held.first()) => {
                format!("frame {n} is {one} on connection {connection}")
            }
            ([one], 0) => format!("frame {n} holds {one} on connection {connection}"),
            _ => {
                let mut list = items.join(", ");
                if self.more > 0 {
                    let _ = write!(list, " and {} more", self.more);
                }
                format!("frame {n} holds {count} Kafka messages on connection {connection}: {list}")
            }
        };
        if !allocate {
            out.push_str(match count {
                1 => ", not AllocateProducerIds",
                _ => ", none of them AllocateProducerIds",
            });
        }
        out
    }

    fn whole(&self, held: Option<&Held>) -> bool {
        held.is_some_and(|h| h.first_frame == self.frame && h.frame == self.frame)
    }

    /// One message as a phrase: `a Fetch request (api key 1, v13, correlation id 42)`,
    /// with the part of it the frame holds when it spans several.
    fn item(&self, h: &Held) -> String {
        let n = self.frame;
        let part = match (h.first_frame == n, h.frame == n) {
            (true, true) => "",
            (true, false) => "the start of ",
            (false, true) => "the end of ",
            (false, false) => "part of ",
        };
        let what = if h.request { "request" } else { "response" };
        let span = if h.first_frame == h.frame {
            String::new()
        } else {
            format!(", frames {}-{}", h.first_frame, h.frame)
        };
        let Some((key, version)) = h.api else {
            return format!(
                "{part}a response (correlation id {}{span}) to a request not in the capture",
                h.correlation_id
            );
        };
        let name = key.name();
        let article = match name.chars().next() {
            Some('A' | 'E' | 'I' | 'O' | 'U') => "an",
            _ => "a",
        };
        format!(
            "{part}{article} {name} {what} (api key {}, v{version}, correlation id {}{span})",
            key.0, h.correlation_id
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kafka::message::{Endpoints, MessageMeta};
    use crate::timestamp::Timestamp;

    fn meta(first_frame: u64, frame: u64) -> MessageMeta {
        MessageMeta {
            frame,
            first_frame,
            timestamp: Timestamp {
                secs: 0,
                nanos: 0,
                nano: false,
            },
            size: 100,
            origin: None,
        }
    }

    fn ends() -> Endpoints {
        Endpoints {
            connection: 4,
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:9092".parse().unwrap(),
        }
    }

    fn response(corr: i32, answers: Option<(ApiKey, i16)>, span: (u64, u64)) -> Message {
        Message::Response {
            ends: ends(),
            correlation_id: corr,
            meta: meta(span.0, span.1),
            answers,
            decoded: None,
            request: None,
        }
    }

    #[test]
    fn several_messages_are_listed_and_counted() {
        let mut watch = FrameWatch::new(7);
        watch.message(&response(1, Some((ApiKey(3), 12)), (7, 7)));
        watch.message(&response(9, None, (7, 7)));
        watch.message(&response(2, Some((ApiKey(1), 17)), (3, 6))); // not in frame 7
        watch.message(&response(
            3,
            Some((ApiKey::ALLOCATE_PRODUCER_IDS, 0)),
            (7, 9),
        ));
        watch.message(&response(4, Some((ApiKey(0), 9)), (7, 7)));
        let request = crate::kafka::apis::DecodedRequest::Allocate(Box::default());
        watch.message(&Message::GivenUp {
            ends: ends(),
            correlation_id: 5,
            unknown: false,
            request: Box::new((meta(5, 5), 0, request)),
        });
        assert_eq!(
            watch.sentence(100),
            "frame 7 holds 4 Kafka messages on connection 4: a Metadata response (api key 3, v12, correlation id 1), \
             a response (correlation id 9) to a request not in the capture, \
             the start of an AllocateProducerIds response (api key 67, v0, correlation id 3, frames 7-9) and 1 more"
        );
    }

    #[test]
    fn a_frame_never_read_is_past_the_last() {
        assert_eq!(
            FrameWatch::new(0).sentence(12),
            "the capture has 12 frames; there is no frame 0"
        );
    }
}
