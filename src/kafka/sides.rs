//! The two frame handlers of a Kafka connection: the client's requests and the server's
//! responses. Each decides per frame what to keep, judges candidate heads while framing
//! is being searched for, decodes the messages of the APIs [`decodes_request`] and [`decodes_response`] name and puts
//! every finished frame in the connection's outbox, as a
//! [`Message`](super::message::Message).

use super::allocate_producer_ids::{reads_as_block, LONGEST_BLOCK_ANSWER};
use super::apis::{decodes_request, decodes_response, Captured, DecodedRequest, DecodedResponse};
use super::conn::Stage;
use super::decoded::Problem;
use super::framing::{Decision, Frame, FrameHandler, SIZE_LEN};
use super::header::{self, RequestPrefix, MIN_REQUEST_LEN, RESPONSE_PREFIX_LEN};
use super::message::{Endpoints, MessageMeta, Outbox};
use super::produce::RequestReader;
use super::tables::ApiKey;
use super::waiting::{RequestFrame, Waiting};
use super::KafkaConfig;
use crate::diag::obs;
pub use crate::diag::Side;
use crate::diag::{Diagnostics, FramingLost, NamedCode, Observation, Undecoded};
use crate::packet_ref::PacketRef;

/// Largest message we buffer to decode; real AllocateProducerIds and InitProducerId
/// messages are under 200 bytes.
pub const MAX_DECODED_LEN: u32 = 1024 * 1024;
/// While resynchronising, a request's correlation id must follow the last one seen
/// within this many (clients count up by one per request; a gap loses some).
const MAX_CORRELATION_STEP: i64 = 1 << 20;

/// How far below an ApiVersions request's correlation id the next request's may be.
const MAX_QUEUED_BEHIND_API_VERSIONS: u32 = 1024;

/// Whether correlation id `next` can follow `last` on one connection: a little higher,
/// modulo 2^32 (the Java client's counter wraps past `i32::MAX` to negative ids).
fn follows(last: i32, next: i32) -> bool {
    (1..=MAX_CORRELATION_STEP).contains(&i64::from(next.wrapping_sub(last) as u32))
}

/// Whether a request with correlation id `next` can follow request `last` (its API key
/// and correlation id). The Java client's NetworkClient sends ApiVersions first on a new
/// connection, numbered when it is sent, before the requests queued for that connection
/// earlier with lower numbers (a KRaft voter's Fetch numbered 9 after ApiVersions 10): after
/// ApiVersions the id may step back a little.
fn may_follow((key, last): (ApiKey, i32), next: i32) -> bool {
    follows(last, next)
        || (key == ApiKey::API_VERSIONS
            && (1..=MAX_QUEUED_BEHIND_API_VERSIONS)
                .contains(&last.wrapping_sub(next).cast_unsigned()))
}

fn meta(frame: &Frame<'_, RequestReader>) -> MessageMeta {
    MessageMeta {
        frame: frame.last.frame,
        first_frame: frame.first.frame,
        timestamp: frame.last.timestamp,
        size: u64::from(frame.len) + SIZE_LEN as u64,
        origin: frame.last.origin,
    }
}

/// Whether a size prefix can start a Kafka message of at least `min` bytes.
fn size_ok(len: i32, min: usize, max: u32) -> bool {
    usize::try_from(len).is_ok_and(|l| l >= min) && u32::try_from(len).is_ok_and(|l| l <= max)
}

/// Why a size prefix cannot start a Kafka message.
fn bad_size(len: i32, min: usize, max: u32, side: Side) -> Option<Observation<'static>> {
    if u32::try_from(len).is_ok_and(|l| l > max) {
        return Some(Observation::KafkaFrameTooLarge(obs::KafkaFrameTooLarge {
            side,
            size: len,
            limit: max,
        }));
    }
    if usize::try_from(len).map_or(true, |l| l < min) {
        let lost = FramingLost::SizeTooSmall { side, size: len };
        return Some(Observation::KafkaFramingLost(lost));
    }
    None
}

/// Why a frame of a message to decode came without its bytes.
fn not_read(frame: &Frame<'_, RequestReader>) -> Problem {
    if frame.shed {
        Problem::Shed { len: frame.len }
    } else {
        Problem::TooLarge {
            len: frame.len,
            limit: MAX_DECODED_LEN,
        }
    }
}

/// One diagnostic for a message that did not fully decode.
fn report_problem(
    diags: &mut Diagnostics,
    ends: Endpoints,
    meta: MessageMeta,
    (api, side): (ApiKey, Side),
    correlation_id: i32,
    problem: &Problem,
) {
    let written = problem.to_string();
    // the tables' name, allocated only for an API they lack
    let unknown;
    let name = match api.info() {
        Some(info) => info.name.as_str(),
        None => {
            unknown = api.name();
            unknown.as_str()
        }
    };
    let undecoded = Undecoded {
        api: NamedCode { code: api.0, name },
        side,
        correlation_id,
        problem: &written,
    };
    let what = match problem {
        Problem::UnsupportedVersion { .. } => Observation::KafkaUnsupportedVersion(undecoded),
        Problem::NotCaptured { .. } => Observation::KafkaMessageTruncated(undecoded),
        _ => Observation::KafkaDecodeError(undecoded),
    };
    diags.add(Some(ends.connection), meta.at(), what);
}

fn report_resync(
    diags: &mut Diagnostics,
    ends: Endpoints,
    side: Side,
    skipped: u64,
    at: PacketRef,
) {
    diags.add(
        Some(ends.connection),
        at,
        Observation::KafkaResync(obs::KafkaResync {
            side,
            skipped_bytes: skipped,
        }),
    );
}

/// Frame handler for the client's direction.
pub struct RequestSide<'a> {
    pub config: &'a KafkaConfig,
    pub waiting: &'a mut Waiting,
    pub out: &'a mut Outbox,
    pub ends: Endpoints,
    pub diags: &'a mut Diagnostics,
    /// API key and correlation id of the last request of this connection, to check
    /// candidates against when resynchronising.
    pub last_request: &'a mut Option<(ApiKey, i32)>,
    /// The APIs of the connection's requests read.
    pub apis: &'a mut super::conn::ApisRead,
    /// How far the connection is from being read as Kafka, which says how its heads are
    /// judged: while it is on trial every head must be plausible; while probing, the
    /// first plausible one recognises it.
    pub stage: Stage,
    /// What the heads of this delivery showed.
    pub probe: Probe,
}

/// What the request heads of one delivery showed while the connection was not yet
/// Kafka. Both may hold: a head recognised it, and a later one could not be Kafka.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probe {
    /// Probing found a plausible request.
    pub recognised: bool,
    /// A head that cannot be Kafka was met while probing or on trial.
    pub given_up: bool,
}

impl RequestSide<'_> {
    /// Still deciding whether this is Kafka: the first plausible head recognises it.
    fn probing(&self) -> bool {
        self.stage.probing() && !self.probe.recognised
    }

    /// Either side may turn out to be the client (mid-stream, ports tell nothing): a
    /// candidate needs a following head to be believed.
    fn role_unsure(&self) -> bool {
        self.stage == Stage::Searching
    }

    /// A plausible request head: a size Kafka accepts, an API key Kafka defines with a
    /// version some release may send, a client_id length that fits (header v1+), and a
    /// correlation id that follows the last one seen, if any.
    fn plausible_request(&self, len: i32, prefix: &[u8]) -> bool {
        if bad_size(
            len,
            MIN_REQUEST_LEN,
            self.config.max_frame_len,
            Side::Client,
        )
        .is_some()
        {
            return false;
        }
        let Ok(head) = RequestPrefix::parse(prefix) else {
            return false;
        };
        if !head.is_plausible() {
            return false;
        }
        let fits = header::client_id_len(prefix).is_some_and(|id_len| {
            id_len == -1 || (0..=len - MIN_REQUEST_LEN as i32).contains(&i32::from(id_len))
        });
        let follows = self
            .last_request
            .is_none_or(|last| may_follow(last, head.correlation_id));
        fits && follows
    }
}

impl FrameHandler for RequestSide<'_> {
    type Reader = RequestReader;

    fn decide(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> Decision<RequestReader> {
        // probing is a part of the trial
        if self.stage.on_trial() {
            if self.probe.given_up || !self.plausible_request(len, prefix) {
                self.probe.given_up = true;
                return Decision::Reject;
            }
            if self.probing() {
                self.probe.recognised = true;
            }
        }
        if let Some(what) = bad_size(
            len,
            MIN_REQUEST_LEN,
            self.config.max_frame_len,
            Side::Client,
        ) {
            self.diags.add(Some(self.ends.connection), at, what);
            return Decision::Reject;
        }
        let Ok(head) = RequestPrefix::parse(prefix) else {
            return Decision::Reject;
        };
        if head.api_key == ApiKey::PRODUCE {
            let len = u32::try_from(len).unwrap_or(0);
            return Decision::Stream(Box::new(RequestReader::new(head.api_version, len)));
        }
        if self.would_keep(len, prefix) {
            Decision::Keep
        } else {
            Decision::Skip // one too large to decode is reported with a decode error
        }
    }

    /// Requests of decoded APIs small enough to decode (Produce requests are streamed,
    /// not kept).
    fn would_keep(&mut self, len: i32, prefix: &[u8]) -> bool {
        let Ok(len) = u32::try_from(len) else {
            return false;
        };
        RequestPrefix::parse(prefix)
            .is_ok_and(|head| head.api_key != ApiKey::PRODUCE && decodes_request(head.api_key, len))
            && len <= MAX_DECODED_LEN
    }

    fn frame(&mut self, frame: Frame<'_, RequestReader>) {
        let Ok(head) = RequestPrefix::parse(frame.prefix) else {
            return;
        };
        *self.last_request = Some((head.api_key, head.correlation_id));
        self.apis.note(head.api_key);
        let meta = meta(&frame);
        let bytes = Captured {
            message: frame.message,
            len: frame.len,
            missing: frame.missing,
            keep_raw: self.config.keep_raw,
        };
        let decoded = match frame.streamed {
            Some(reader) => Some(DecodedRequest::Produce(Box::new(reader.finish()))),
            // One to stream, found by a search after its bytes had gone by.
            None if head.api_key == ApiKey::PRODUCE && !frame.shed => {
                let passed = Problem::PassedOver { len: frame.len };
                DecodedRequest::decode(&head, bytes, passed)
            }
            None => DecodedRequest::decode(&head, bytes, not_read(&frame)),
        };
        if let Some(problem) = decoded.as_ref().and_then(DecodedRequest::problem) {
            report_problem(
                self.diags,
                self.ends,
                meta,
                (head.api_key, Side::Client),
                head.correlation_id,
                problem,
            );
        }
        let frame = RequestFrame {
            ends: self.ends,
            api_key: head.api_key,
            api_version: head.api_version,
            correlation_id: head.correlation_id,
            meta,
        };
        let max_pending = self.config.max_pending;
        self.waiting
            .request(frame, decoded, max_pending, self.out, self.diags);
    }

    fn plausible(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        !self.probe.given_up && self.plausible_request(len, prefix)
    }

    /// The next request must be plausible and count up from the candidate: a response
    /// misread as a request gives the same made-up correlation id every time.
    fn confirms(&mut self, first: (i32, &[u8]), next: (i32, &[u8]), at: PacketRef) -> bool {
        let head = |prefix: &[u8]| RequestPrefix::parse(prefix).ok();
        let counts_up = match (head(first.1), head(next.1)) {
            (Some(first), Some(next)) => {
                may_follow((first.api_key, first.correlation_id), next.correlation_id)
            }
            _ => false,
        };
        self.plausible(next.0, next.1, at) && counts_up
    }

    fn resynced(&mut self, skipped: u64, at: PacketRef) {
        report_resync(self.diags, self.ends, Side::Client, skipped, at);
    }

    /// Only a request to decode: any other plausible head is met too often in the zeros
    /// of a record batch, and would hold the requests after it back until its end.
    fn holds_back(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        self.would_keep(len, prefix)
    }

    /// Request heads are easy to fake in zero-filled bytes (a small size, then key 0
    /// version 0): a candidate must be followed by another plausible head.
    fn wants_confirmation(&self) -> bool {
        true
    }

    fn confirms_at_data_end(&self) -> bool {
        !self.role_unsure()
    }

    /// Until it is known which direction is the client, a direction tried as one may
    /// turn out to carry responses, to be read again from its held bytes.
    fn rereads_held_bytes(&self) -> bool {
        self.role_unsure()
    }
}

/// Frame handler for the server's direction.
pub struct ResponseSide<'a> {
    pub config: &'a KafkaConfig,
    pub waiting: &'a mut Waiting,
    pub out: &'a mut Outbox,
    pub ends: Endpoints,
    pub diags: &'a mut Diagnostics,
    /// Set when a size prefix from the server cannot be Kafka.
    pub bad_size: bool,
    /// Frame where framing was found again after server bytes were passed over.
    pub resynced_at: Option<u64>,
}

impl ResponseSide<'_> {
    /// An answer of `len` bytes to a request of `api` is decoded: an API decoded, and
    /// small enough.
    fn decodes((api, _): (ApiKey, i16), len: i32) -> bool {
        decodes_response(api) && u32::try_from(len).is_ok_and(|l| l <= MAX_DECODED_LEN)
    }

    /// An answer to no request read, as short as a block's: kept, to tell whether its
    /// bytes read as one ([`reads_as_block`]).
    fn may_answer_for_a_block(len: i32) -> bool {
        u32::try_from(len).is_ok_and(|l| l <= LONGEST_BLOCK_ANSWER)
    }

    /// Counts an answer to no request read whose bytes read as a block's grant: rare
    /// (a capture's start), so kept off the path of every answer.
    #[cold]
    #[inline(never)]
    fn count_if_like_block(&mut self, frame: &Frame<'_, RequestReader>) {
        if frame.missing == 0 && frame.message.is_some_and(reads_as_block) {
            self.out.counted.unmatched_like_blocks += 1;
        }
    }
}

impl FrameHandler for ResponseSide<'_> {
    /// Never used: responses are not streamed.
    type Reader = RequestReader;

    fn decide(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> Decision<RequestReader> {
        if let Some(what) = bad_size(
            len,
            RESPONSE_PREFIX_LEN,
            self.config.max_frame_len,
            Side::Server,
        ) {
            self.bad_size = true;
            self.diags.add(Some(self.ends.connection), at, what);
            return Decision::Reject;
        }
        let Ok(corr) = header::response_correlation_id(prefix) else {
            return Decision::Reject;
        };
        // one lookup: an answer to a decoded API, or one to no request (see
        // [`Self::may_answer_for_a_block`])
        let keep = match self.waiting.answered_request(corr) {
            Some(answers) => Self::decodes(answers, len),
            None => Self::may_answer_for_a_block(len),
        };
        if keep {
            Decision::Keep
        } else {
            Decision::Skip
        }
    }

    /// Answers to requests of decoded APIs, small enough to decode. (Answers to no
    /// request are also kept when met in framing, see [`Self::may_answer_for_a_block`];
    /// a search carries them by their heads as before, and their bytes go unread.)
    fn would_keep(&mut self, len: i32, prefix: &[u8]) -> bool {
        header::response_correlation_id(prefix).is_ok_and(|corr| {
            self.waiting
                .answered_request(corr)
                .is_some_and(|answers| Self::decodes(answers, len))
        })
    }

    fn frame(&mut self, frame: Frame<'_, RequestReader>) {
        let Ok(correlation_id) = header::response_correlation_id(frame.prefix) else {
            return;
        };
        let meta = meta(&frame);
        let bytes = Captured {
            message: frame.message,
            len: frame.len,
            missing: frame.missing,
            keep_raw: self.config.keep_raw,
        };
        // The request stops waiting before its answer is decoded: one lookup, not two.
        let answered = self.waiting.answered(correlation_id);
        let answers = answered.0;
        if answers.is_none() {
            self.count_if_like_block(&frame);
        }
        let decoded =
            answers.and_then(|answers| DecodedResponse::decode(answers, bytes, not_read(&frame)));
        // An unsupported version was reported with the request already.
        if let Some(problem) = decoded
            .as_ref()
            .and_then(DecodedResponse::problem)
            .filter(|p| !matches!(p, Problem::UnsupportedVersion { .. }))
        {
            report_problem(
                self.diags,
                self.ends,
                meta,
                (answers.map_or(ApiKey(-1), |(api, _)| api), Side::Server),
                correlation_id,
                problem,
            );
        }
        let head = (self.ends, correlation_id, meta);
        Waiting::respond(answered, head, decoded, self.out);
    }

    /// A plausible response head has a size Kafka accepts and a correlation id.
    fn plausible(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        size_ok(len, RESPONSE_PREFIX_LEN, self.config.max_frame_len)
            && header::response_correlation_id(prefix).is_ok()
    }

    /// A response head is known for one when it answers a request we are waiting for, one
    /// sent before the packet that brought the candidate. Those before it in a chain are
    /// answers to requests the capture does not hold (counted as unmatched).
    fn anchors(&mut self, len: i32, prefix: &[u8], at: PacketRef) -> bool {
        self.plausible(len, prefix, at)
            && header::response_correlation_id(prefix).is_ok_and(|corr| {
                self.waiting
                    .request_frame(corr)
                    .is_some_and(|frame| frame < at.frame)
            })
    }

    /// An answer is confirmed by another answer right after it (or by ending where the
    /// data ends): one correlation id alone is too easy to meet inside another message.
    fn confirms(&mut self, _first: (i32, &[u8]), next: (i32, &[u8]), at: PacketRef) -> bool {
        self.anchors(next.0, next.1, at)
    }

    /// A response candidate must be followed by another answer to a waiting request
    /// (or end where the data ends): one correlation id alone is too easy to meet in
    /// the middle of another message.
    fn wants_confirmation(&self) -> bool {
        true
    }

    fn resynced(&mut self, skipped: u64, at: PacketRef) {
        self.resynced_at = Some(at.frame);
        report_resync(self.diags, self.ends, Side::Server, skipped, at);
    }
}
