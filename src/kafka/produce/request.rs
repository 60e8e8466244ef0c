//! ProduceRequest, read as its bytes pass: a Produce request is most of a capture's
//! bytes, so it is never held. [`RequestReader`] takes the message's bytes in the pieces
//! the framer gets them in; each piece of structure (the header and top fields, a
//! topic's head, a partition's head, a batch's header, a tagged-field section) is read
//! where it lies, and held only while its bytes are split between packets; a batch's
//! records are stepped over, and a gap inside them costs nothing (the batch's length
//! says where the next one starts). What is read before a problem is kept.
//!
//! Schema: Apache Kafka `ProduceRequest.json` (versions 0 to 13 across 3.x and 4.x;
//! flexible from 9; `TopicId` instead of `Name` from 13).

use super::batch::{self, BatchHeader, MAGIC_END};
use crate::kafka::decoded::{Problem, LENGTH_PREFIX_LEN};
use crate::kafka::layout::Ignore;
use crate::kafka::reader::{DecodeError, Reader};
use crate::kafka::schema::{tagged_bytes, Header, RequestHeader};
use crate::kafka::tables::ApiKey;
use crate::kafka::MALLOC_OVERHEAD;

use super::vec_bytes;

/// The newest version whose schema this follows.
pub const NEWEST: i16 = 13;
/// The first version with a transactional id.
const TRANSACTIONAL_ID_FROM: i16 = 3;
/// The first version that names topics by id.
const TOPIC_ID_FROM: i16 = 13;
/// Longest piece of structure held while its bytes are split between packets: a
/// client_id or topic name (at most 32,767 bytes) with its neighbours, or a tagged-field
/// section. A longer one is not read.
pub const MAX_PIECE: usize = 64 * 1024;

/// A Produce request as far as it was read. `None` means "not read".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    pub header: RequestHeader,
    /// `TransactionalId` (v3+): `Some(None)` for a producer that is not transactional.
    pub transactional_id: Option<Option<String>>,
    /// `Acks`: 0 means the broker sends no response.
    pub acks: Option<i16>,
    pub timeout_ms: Option<i32>,
    /// `TopicData`, each as far as read.
    pub topics: Vec<TopicData>,
    pub problem: Option<Box<Problem>>,
    /// Bytes of the message that are not in the capture; `None` when it is whole.
    pub bytes_not_captured: Option<u32>,
}

/// One topic's data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicData {
    /// `Name` (v0 to 12).
    pub name: Option<String>,
    /// `TopicId` (v13+).
    pub topic_id: Option<[u8; 16]>,
    pub partitions: Vec<PartitionData>,
}

/// One partition's data: the headers of its record batches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionData {
    /// `Index`.
    pub index: i32,
    /// Bytes of `Records`; `None` for null.
    pub records_len: Option<u32>,
    /// The batches' headers, in order.
    pub batches: Vec<BatchHeader>,
    /// Every batch's header in the records was read.
    pub complete: bool,
}

impl Request {
    /// Heap it holds when boxed.
    pub fn boxed_heap_bytes(&self) -> usize {
        size_of::<Self>() + MALLOC_OVERHEAD + self.fields_heap_bytes()
    }

    fn fields_heap_bytes(&self) -> usize {
        let client_id = self
            .header
            .client_id
            .as_ref()
            .and_then(Option::as_ref)
            .map_or(0, crate::kafka::client_id::heap_bytes);
        let transactional_id = self
            .transactional_id
            .as_ref()
            .and_then(Option::as_ref)
            .map_or(0, String::capacity);
        let topics: usize = self.topics.iter().map(TopicData::heap_bytes).sum();
        client_id
            + tagged_bytes(self.header.tagged_fields.as_ref())
            + transactional_id
            + vec_bytes(&self.topics)
            + topics
            + Problem::heap_bytes(self.problem.as_deref())
    }

    /// Every batch header read, with its topic and partition.
    pub fn batches(&self) -> impl Iterator<Item = (&TopicData, &PartitionData, &BatchHeader)> {
        self.topics.iter().flat_map(|t| {
            t.partitions
                .iter()
                .flat_map(move |p| p.batches.iter().map(move |b| (t, p, b)))
        })
    }
}

impl TopicData {
    fn heap_bytes(&self) -> usize {
        let name = self.name.as_ref().map_or(0, String::capacity);
        let batches: usize = self.partitions.iter().map(|p| vec_bytes(&p.batches)).sum();
        name + vec_bytes(&self.partitions) + batches
    }
}

/// The piece of structure that comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// The request header, `TransactionalId`, `Acks`, `TimeoutMs` and the topic count.
    Head,
    /// A topic's name or id and its partition count.
    Topic,
    /// A partition's index and its records' length.
    Partition,
    /// A record batch's header.
    Batch,
    /// Bytes of a batch after its header, stepped over.
    Records(u32),
    PartitionTags,
    TopicTags,
    BodyTags,
    /// Every field was read.
    Done,
    /// Reading stopped (a problem, or a version without a schema here).
    Stopped,
}

impl Piece {
    /// The field a piece starts with, for a problem inside it.
    fn field(self) -> &'static str {
        match self {
            Self::Head => "RequestHeader",
            Self::Topic => "TopicData",
            Self::Partition => "PartitionData",
            Self::Batch | Self::Records(_) => "Records",
            Self::PartitionTags | Self::TopicTags | Self::BodyTags => "tagged fields",
            Self::Done | Self::Stopped => "end of message",
        }
    }
}

/// How much of the current topic, partition and records is still to come.
#[derive(Debug, Clone, Copy, Default)]
struct Left {
    topics: u32,
    partitions: u32,
    records: u32,
}

/// Reads one Produce request as its bytes pass (see the module's documentation).
#[derive(Debug)]
pub struct RequestReader {
    version: i16,
    flexible: bool,
    /// The message's length (after the size prefix).
    len: u32,
    /// Offset in the message of the next piece's first byte: bytes read, stepped over
    /// or lost before it.
    at: u32,
    /// The next piece's bytes, while they are split between packets.
    held: Vec<u8>,
    next: Piece,
    left: Left,
    missing: u32,
    request: Request,
    /// `request.fields_heap_bytes()`, worked out again at the end of a delivery that read
    /// a piece (the only time the request changes): the budget asks after every packet,
    /// and most of a long request's packets are records stepped over. Once a delivery,
    /// not once a piece: a sum over every partition after each of thousands of small
    /// partitions in one packet would be quadratic.
    fields_heap: usize,
    /// A piece was read since `fields_heap` was worked out.
    piece_read: bool,
    /// Times `fields_heap` was worked out.
    #[cfg(test)]
    pub(super) sums: u32,
}

impl RequestReader {
    /// A reader of a message of `len` bytes (without its size prefix) of `version`.
    pub fn new(version: i16, len: u32) -> Self {
        Self {
            version,
            flexible: ApiKey(0)
                .flexible_from()
                .is_some_and(|from| version >= from),
            len,
            at: 0,
            held: Vec::new(),
            next: Piece::Head,
            left: Left::default(),
            missing: 0,
            request: Request::default(),
            fields_heap: 0,
            piece_read: false,
            #[cfg(test)]
            sums: 0,
        }
    }

    /// Heap it holds: what it read, and the bytes of a piece split between packets.
    pub fn held_bytes(&self) -> usize {
        let held = match self.held.capacity() {
            0 => 0,
            n => n + MALLOC_OVERHEAD,
        };
        debug_assert_eq!(self.fields_heap, self.request.fields_heap_bytes());
        held + self.fields_heap
    }

    /// The request as read, once every byte of the message has gone by.
    pub fn finish(mut self) -> Request {
        if self.missing > 0 {
            self.request.bytes_not_captured = Some(self.missing);
        }
        let unfinished = !matches!(self.next, Piece::Done | Piece::Stopped);
        if self.request.problem.is_none() && unfinished {
            self.fail(self.short_here());
        }
        if self.request.problem.is_none() && !(0..=NEWEST).contains(&self.version) {
            self.request.problem =
                Problem::of_result(Ok(()), ApiKey(0), self.version, NEWEST).map(Box::new);
        }
        self.request
    }

    /// The message ended (or its bytes ran out) inside the next piece.
    fn short_here(&self) -> Problem {
        Problem::Decode(DecodeError::Short {
            field: self.next.field(),
            offset: self.at as usize + LENGTH_PREFIX_LEN,
            needed: 1,
            left: 0,
        })
    }

    /// The message's next bytes.
    pub fn bytes(&mut self, data: &[u8]) {
        self.read_bytes(data);
        if std::mem::take(&mut self.piece_read) {
            self.fields_heap = self.request.fields_heap_bytes();
            #[cfg(test)]
            {
                self.sums += 1;
            }
        }
    }

    fn read_bytes(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match self.next {
                Piece::Stopped => return,
                Piece::Done => {
                    let err = DecodeError::Trailing {
                        offset: self.at as usize + LENGTH_PREFIX_LEN,
                        left: data.len(),
                    };
                    self.fail(Problem::Decode(err));
                    return;
                }
                Piece::Records(left) => {
                    let take = (left as usize).min(data.len());
                    data = data.get(take..).unwrap_or_default();
                    self.advance(take);
                    self.next = self.after_records(left - take as u32);
                }
                _ if self.held.is_empty() => match self.piece(data) {
                    Some(used) => data = data.get(used..).unwrap_or_default(),
                    None => {
                        self.hold(data);
                        return;
                    }
                },
                _ => data = self.piece_from_held(data),
            }
        }
    }

    /// Adds to the held bytes and tries the piece again; returns what is left of `data`.
    fn piece_from_held<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        let before = self.held.len();
        let add = MAX_PIECE.saturating_sub(before).min(data.len());
        let (added, rest) = data.split_at(add);
        self.held.extend_from_slice(added);
        let held = std::mem::take(&mut self.held);
        let read = self.piece(&held);
        self.held = held;
        match read {
            Some(used) => {
                self.held = Vec::new();
                data.get(used.saturating_sub(before)..).unwrap_or_default()
            }
            None if self.held.len() >= MAX_PIECE => {
                self.too_long();
                &[]
            }
            None => rest,
        }
    }

    /// Holds the start of a piece whose bytes run on into the next packet.
    fn hold(&mut self, data: &[u8]) {
        match data.len() {
            _ if self.next == Piece::Stopped => {}
            n if n >= MAX_PIECE => self.too_long(),
            _ => self.held.extend_from_slice(data),
        }
    }

    /// A piece of structure runs on past [`MAX_PIECE`] bytes: reading stops.
    fn too_long(&mut self) {
        let reason = format!("a piece of structure longer than {MAX_PIECE} bytes");
        self.fail(Problem::Decode(DecodeError::Invalid {
            field: self.next.field(),
            offset: self.at as usize + LENGTH_PREFIX_LEN,
            reason,
        }));
    }

    /// `len` bytes of the message are not in the capture. Inside a batch's records they
    /// are stepped over; anywhere else reading stops.
    pub fn gap(&mut self, len: u32) {
        self.missing = self.missing.saturating_add(len);
        match self.next {
            Piece::Records(left) if len <= left => {
                self.advance(len as usize);
                self.next = self.after_records(left - len);
            }
            Piece::Done | Piece::Stopped => {}
            piece => {
                let problem = Problem::NotCaptured {
                    len: self.len,
                    captured: self.at.saturating_add(self.held.len() as u32),
                    field: Some((piece.field(), self.at as usize + LENGTH_PREFIX_LEN)),
                };
                self.fail(problem);
            }
        }
    }

    fn fail(&mut self, problem: Problem) {
        if self.request.problem.is_none() {
            self.request.problem = Some(Box::new(problem));
            // Rare: worked out again rather than kept up.
            self.fields_heap = self.request.fields_heap_bytes();
        }
        self.next = Piece::Stopped;
        self.held = Vec::new();
    }

    fn advance(&mut self, by: usize) {
        self.at = self
            .at
            .saturating_add(u32::try_from(by).unwrap_or(u32::MAX));
    }

    /// Bytes of the message after the current piece's start.
    fn message_left(&self) -> u32 {
        self.len.saturating_sub(self.at)
    }

    /// Reads the next piece from `bytes` (which start where it does): the bytes it took,
    /// or `None` when they run out before it ends and more of the message is to come.
    fn piece(&mut self, bytes: &[u8]) -> Option<usize> {
        self.piece_read = true;
        self.read_piece(bytes)
    }

    fn read_piece(&mut self, bytes: &[u8]) -> Option<usize> {
        let mut r = Reader::new(bytes);
        let result = match self.next {
            Piece::Head => self.head(&mut r),
            Piece::Topic => self.topic(&mut r),
            Piece::Partition => self.partition(&mut r),
            Piece::Batch => self.batch(bytes, &mut r),
            Piece::PartitionTags | Piece::TopicTags | Piece::BodyTags => self.tags(&mut r),
            Piece::Records(_) | Piece::Done | Piece::Stopped => Ok(()),
        };
        match result {
            Ok(()) => {
                let used = r.position();
                self.advance(used);
                Some(used)
            }
            Err(DecodeError::Short { .. })
                if (bytes.len() as u64) < u64::from(self.message_left()) =>
            {
                None
            }
            Err(err) => {
                self.fail(Problem::Decode(
                    err.shifted(self.at as usize + LENGTH_PREFIX_LEN),
                ));
                Some(bytes.len())
            }
        }
    }

    /// A count of elements that must fit in the message's bytes left, each at least
    /// `min` bytes.
    fn count(&self, r: &mut Reader<'_>, field: &'static str, min: u32) -> Result<u32, DecodeError> {
        let start = r.position();
        let count = match self.flexible {
            true => i64::from(r.uvarint(field)?) - 1,
            false => i64::from(r.i32(field)?),
        };
        let fits = u64::from(self.message_left()) / u64::from(min.max(1));
        match u32::try_from(count.max(0)) {
            Ok(n) if u64::from(n) <= fits => Ok(n),
            _ => Err(DecodeError::Invalid {
                field,
                offset: start,
                reason: format!(
                    "{count} elements cannot fit in the {} bytes left",
                    self.message_left()
                ),
            }),
        }
    }

    fn head(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        let mut header = RequestHeader::default();
        header.read(r, &mut Ignore, self.flexible)?;
        if !(0..=NEWEST).contains(&self.version) {
            self.request.header = header;
            self.next = Piece::Stopped;
            return Ok(());
        }
        let transactional_id = match self.version >= TRANSACTIONAL_ID_FROM {
            true if self.flexible => Some(r.compact_nullable_string("TransactionalId")?),
            true => Some(r.nullable_string("TransactionalId")?),
            false => None,
        };
        let acks = r.i16("Acks")?;
        let timeout_ms = r.i32("TimeoutMs")?;
        let topics = self.count(r, "TopicData", 2)?;
        self.request.header = header;
        self.request.transactional_id = transactional_id;
        self.request.acks = Some(acks);
        self.request.timeout_ms = Some(timeout_ms);
        self.left.topics = topics;
        self.next = self.after_topic();
        Ok(())
    }

    fn topic(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        let mut topic = TopicData::default();
        match (self.version >= TOPIC_ID_FROM, self.flexible) {
            (true, _) => topic.topic_id = Some(r.uuid("TopicId")?),
            (false, true) => topic.name = Some(r.compact_string("Name")?),
            (false, false) => topic.name = Some(r.string("Name")?),
        }
        let partitions = self.count(r, "PartitionData", 5)?;
        self.request.topics.push(topic);
        self.left.topics -= 1;
        self.left.partitions = partitions;
        self.next = self.after_partition();
        Ok(())
    }

    fn partition(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        let index = r.i32("Index")?;
        let start = r.position();
        let records = match self.flexible {
            true => i64::from(r.uvarint("Records")?) - 1,
            false => i64::from(r.i32("Records")?),
        };
        let records_len = match records {
            -1 => None,
            n => match u32::try_from(n) {
                Ok(n) if n <= self.message_left().saturating_sub(r.position() as u32) => Some(n),
                _ => {
                    return Err(DecodeError::Invalid {
                        field: "Records",
                        offset: start,
                        reason: format!("{n} bytes of records cannot fit in the message"),
                    });
                }
            },
        };
        let partition = PartitionData {
            index,
            records_len,
            ..PartitionData::default()
        };
        // A partition is read only inside a topic.
        if let Some(topic) = self.request.topics.last_mut() {
            topic.partitions.push(partition);
        }
        self.left.partitions -= 1;
        self.left.records = records_len.unwrap_or(0);
        self.next = self.after_records(0);
        Ok(())
    }

    fn batch(&mut self, bytes: &[u8], r: &mut Reader<'_>) -> Result<(), DecodeError> {
        let records = self.left.records;
        if (records as usize) < MAGIC_END {
            return Err(DecodeError::Invalid {
                field: "Records",
                offset: 0,
                reason: format!("{records} bytes of records left cannot hold a batch"),
            });
        }
        let first = r.slice("Records", MAGIC_END)?;
        let (size, head) = batch::size_and_head(first)?;
        if size > records {
            return Err(DecodeError::Invalid {
                field: "batchLength",
                offset: 8,
                reason: format!(
                    "a batch of {size} bytes runs past the {records} bytes of records left"
                ),
            });
        }
        r.slice("Records", head - MAGIC_END)?;
        let header = batch::read_header(bytes.get(..head).unwrap_or_default())?;
        // A batch is read only inside a partition.
        if let Some(partition) = self.current_partition() {
            partition.batches.push(header);
        }
        self.left.records -= size;
        self.next = self.after_records(size - head as u32);
        Ok(())
    }

    fn tags(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        r.tagged_fields()?;
        self.next = match self.next {
            Piece::PartitionTags => self.after_partition(),
            Piece::TopicTags => self.after_topic(),
            _ => Piece::Done,
        };
        Ok(())
    }

    /// What follows `left` bytes of a batch's records still to step over.
    fn after_records(&mut self, left: u32) -> Piece {
        if left > 0 {
            return Piece::Records(left);
        }
        if self.left.records > 0 {
            return Piece::Batch;
        }
        if let Some(p) = self.current_partition() {
            p.complete = true;
        }
        match self.flexible {
            true => Piece::PartitionTags,
            false => self.after_partition(),
        }
    }

    /// What follows a partition (its tagged fields read) or a topic's head.
    fn after_partition(&self) -> Piece {
        match (self.left.partitions > 0, self.flexible) {
            (true, _) => Piece::Partition,
            (false, true) => Piece::TopicTags,
            (false, false) => self.after_topic(),
        }
    }

    /// What follows a topic (its tagged fields read) or the head.
    fn after_topic(&self) -> Piece {
        match (self.left.topics > 0, self.flexible) {
            (true, _) => Piece::Topic,
            (false, true) => Piece::BodyTags,
            (false, false) => Piece::Done,
        }
    }

    fn current_partition(&mut self) -> Option<&mut PartitionData> {
        self.request.topics.last_mut()?.partitions.last_mut()
    }
}

impl crate::kafka::framing::Streamed for RequestReader {
    fn bytes(&mut self, data: &[u8]) {
        Self::bytes(self, data);
    }
    fn gap(&mut self, len: u32) {
        Self::gap(self, len);
    }
    fn held_bytes(&self) -> usize {
        Self::held_bytes(self)
    }
}
