//! ProduceResponse: per partition, what the broker answered a batch with (its error and
//! the base offset it was given). Small (tens of bytes a partition), so decoded whole as
//! the other responses are; what is read before a cut is kept.
//!
//! Schema: Apache Kafka `ProduceResponse.json` (versions 0 to 13; flexible from 9;
//! `TopicId` instead of `Name` from 13; `CurrentLeader` a tagged field of a partition
//! from 10).

use super::request::NEWEST;
use crate::kafka::decoded::{partial, undecoded_fields, Problem};
use crate::kafka::layout::Ignore;
use crate::kafka::reader::{DecodeError, Reader};
use crate::kafka::schema::{tagged_bytes, Header, ResponseHeader};
use crate::kafka::tables::{ApiKey, ErrorCode};
use crate::kafka::MALLOC_OVERHEAD;

use super::vec_bytes;

/// The tag of a partition's `CurrentLeader` (v10+).
const CURRENT_LEADER_TAG: u32 = 0;

/// A Produce response as far as it was read. `None` means "not read" (or not in this
/// version).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub header: ResponseHeader,
    /// `Responses`, each as far as read.
    pub topics: Vec<TopicResponse>,
    /// `ThrottleTimeMs` (v1+).
    pub throttle_time_ms: Option<i32>,
    pub problem: Option<Box<Problem>>,
    /// Bytes of the message that are not in the capture; `None` when it is whole.
    pub bytes_not_captured: Option<u32>,
    /// The message as captured, kept for the tree view only.
    pub raw: Vec<u8>,
}

undecoded_fields!(Response);

/// One topic's answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicResponse {
    /// `Name` (v0 to 12).
    pub name: Option<String>,
    /// `TopicId` (v13+).
    pub topic_id: Option<[u8; 16]>,
    /// `PartitionResponses`: those read whole.
    pub partitions: Vec<PartitionResponse>,
}

/// What the broker answered for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionResponse {
    pub index: i32,
    pub error_code: ErrorCode,
    /// `BaseOffset`: the offset the first batch was appended at (or, for a duplicate,
    /// the one it had been appended at before); -1 with an error.
    pub base_offset: i64,
    /// `LogAppendTimeMs` (v2+).
    pub log_append_time_ms: Option<i64>,
    /// `LogStartOffset` (v5+).
    pub log_start_offset: Option<i64>,
    /// `RecordErrors` (v8+).
    pub record_errors: Vec<RecordError>,
    /// `ErrorMessage` (v8+): `Some(None)` for null.
    pub error_message: Option<Option<String>>,
    /// `CurrentLeader` (v10+, tagged): leader id and epoch.
    pub current_leader: Option<(i32, i32)>,
}

/// One record the broker refused a batch for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub batch_index: i32,
    pub message: Option<String>,
}

impl Response {
    /// Decodes a response (without its size prefix) of `version`.
    pub fn decode(message: &[u8], version: i16) -> Self {
        let mut out = Self::default();
        let flexible = ApiKey(0)
            .flexible_from()
            .is_some_and(|from| version >= from);
        let mut r = Reader::new(message);
        let result = (|| {
            out.header.read(&mut r, &mut Ignore, flexible)?;
            if !(0..=NEWEST).contains(&version) {
                return Ok(());
            }
            out.read_body(&mut r, version, flexible)?;
            r.finish()
        })();
        out.problem = Problem::of_result(result, ApiKey(0), version, NEWEST).map(Box::new);
        out
    }

    /// Decodes a response of `len` bytes of which `missing` are not in the capture and
    /// `message` holds those before the first gap.
    pub fn decode_partial(message: &[u8], len: u32, missing: u32, version: i16) -> Self {
        partial(Self::decode(message, version), message.len(), len, missing)
    }

    fn read_body(
        &mut self,
        r: &mut Reader<'_>,
        version: i16,
        flexible: bool,
    ) -> Result<(), DecodeError> {
        let topics = array_len(r, "Responses", flexible)?;
        for _ in 0..topics {
            let mut topic = TopicResponse::default();
            match (version >= 13, flexible) {
                (true, _) => topic.topic_id = Some(r.uuid("TopicId")?),
                (false, true) => topic.name = Some(r.compact_string("Name")?),
                (false, false) => topic.name = Some(r.string("Name")?),
            }
            self.topics.push(topic);
            let partitions = array_len(r, "PartitionResponses", flexible)?;
            for _ in 0..partitions {
                let partition = PartitionResponse::read(r, version, flexible)?;
                if let Some(topic) = self.topics.last_mut() {
                    topic.partitions.push(partition);
                }
            }
            if flexible {
                r.tagged_fields()?;
            }
        }
        if version >= 1 {
            self.throttle_time_ms = Some(r.i32("ThrottleTimeMs")?);
        }
        if flexible {
            r.tagged_fields()?;
        }
        Ok(())
    }

    /// Heap it holds when boxed.
    pub fn boxed_heap_bytes(&self) -> usize {
        let topics: usize = self
            .topics
            .iter()
            .map(|t| {
                let name = t.name.as_ref().map_or(0, String::capacity);
                let partitions: usize =
                    t.partitions.iter().map(PartitionResponse::heap_bytes).sum();
                name + vec_bytes(&t.partitions) + partitions
            })
            .sum();
        size_of::<Self>()
            + MALLOC_OVERHEAD
            + tagged_bytes(self.header.tagged_fields.as_ref())
            + vec_bytes(&self.topics)
            + topics
            + self.raw.capacity()
            + Problem::heap_bytes(self.problem.as_deref())
    }
}

impl PartitionResponse {
    fn read(r: &mut Reader<'_>, version: i16, flexible: bool) -> Result<Self, DecodeError> {
        let index = r.i32("Index")?;
        let error_code = ErrorCode(r.i16("ErrorCode")?);
        let base_offset = r.i64("BaseOffset")?;
        let log_append_time_ms = (version >= 2)
            .then(|| r.i64("LogAppendTimeMs"))
            .transpose()?;
        let log_start_offset = (version >= 5)
            .then(|| r.i64("LogStartOffset"))
            .transpose()?;
        let mut record_errors = Vec::new();
        let mut error_message = None;
        if version >= 8 {
            let errors = array_len(r, "RecordErrors", flexible)?;
            for _ in 0..errors {
                let batch_index = r.i32("BatchIndex")?;
                let message = nullable_string(r, "BatchIndexErrorMessage", flexible)?;
                if flexible {
                    r.tagged_fields()?;
                }
                record_errors.push(RecordError {
                    batch_index,
                    message,
                });
            }
            error_message = Some(nullable_string(r, "ErrorMessage", flexible)?);
        }
        let mut current_leader = None;
        if flexible {
            r.tagged_slices(|tag, data, _| {
                if tag == CURRENT_LEADER_TAG && version >= 10 {
                    let mut leader = Reader::new(data);
                    let id = leader.i32("LeaderId")?;
                    let epoch = leader.i32("LeaderEpoch")?;
                    current_leader = Some((id, epoch));
                }
                Ok(())
            })?;
        }
        Ok(Self {
            index,
            error_code,
            base_offset,
            log_append_time_ms,
            log_start_offset,
            record_errors,
            error_message,
            current_leader,
        })
    }

    fn heap_bytes(&self) -> usize {
        let messages: usize = self
            .record_errors
            .iter()
            .map(|e| e.message.as_ref().map_or(0, String::capacity))
            .sum();
        let message = self.error_message.as_ref().and_then(Option::as_ref);
        vec_bytes(&self.record_errors) + messages + message.map_or(0, String::capacity)
    }
}

/// An array's count; null is empty.
fn array_len(
    r: &mut Reader<'_>,
    field: &'static str,
    flexible: bool,
) -> Result<usize, DecodeError> {
    let len = match flexible {
        true => r.compact_array_len(field)?,
        false => r.array_len(field)?,
    };
    Ok(len.unwrap_or(0))
}

fn nullable_string(
    r: &mut Reader<'_>,
    field: &'static str,
    flexible: bool,
) -> Result<Option<String>, DecodeError> {
    match flexible {
        true => r.compact_nullable_string(field),
        false => r.nullable_string(field),
    }
}
