//! `--format csv` (a row per exchange), `--format csv-blocks` (a row per block),
//! `--format csv-producers` (a row per InitProducerId exchange), `--format csv-writes`
//! (a row per record batch of every Produce request) and `--format
//! csv-committed` (a row per block the metadata log commits) for spreadsheets and
//! pipelines: RFC 4180 (a header row, commas, fields quoted by the `csv`
//! crate when they need it, CRLF line ends). Rows are rendered as they come into a list in
//! report order (off the heap past a bound, see [`Ordered`]) and written at the end.

use std::io::{self, Write};

use super::model::UnixTime;
use super::model::{CommittedBlock, Exchange, PidBlock, PidFinding, ProducerIdEntry, Report};
use super::sink::{Analysed, Needs, Sink};
use super::spill::{OrderKey, Ordered, DEFAULT_RUN_BYTES};
use super::{exchange, pid_block, producer_id_entry};
use crate::analysis::committed::Delivery;
use crate::analysis::writes::WriteJudged;
use crate::analysis::{Block, BlockOrder, Detail, Placed};
use crate::kafka::tables::ErrorCode;
use crate::pairing::{self, ExchangeOrder, Granting, WriteExchange};

/// Columns of `--format csv`.
pub const EXCHANGE_COLUMNS: [&str; 21] = [
    "connection",
    "client",
    "server",
    "correlation_id",
    "status",
    "broker_id",
    "broker_epoch",
    "request_frame",
    "request_timestamp",
    "request_unix_time",
    "response_frame",
    "response_timestamp",
    "response_unix_time",
    "error_code",
    "error",
    "producer_id_start",
    "producer_id_len",
    "producer_id_end",
    "latency_us",
    "request_decode_error",
    "response_decode_error",
];

/// Columns of `--format csv-blocks`.
pub const BLOCK_COLUMNS: [&str; 13] = [
    "start",
    "end",
    "len",
    "broker_id",
    "broker_epoch",
    "connection",
    "client",
    "server",
    "correlation_id",
    "request_frame",
    "response_frame",
    "timestamp",
    "unix_time",
];

/// Columns of `--format csv-producers`: the fields of `producer_ids.entries[]` in their
/// order, `block` flattened.
pub const PRODUCER_COLUMNS: [&str; 36] = [
    "api",
    "connection",
    "client",
    "server",
    "correlation_id",
    "api_version",
    "status",
    "broker_id",
    "broker_source",
    "client_id",
    "transactional_id",
    "transaction_timeout_ms",
    "requested_producer_id",
    "requested_producer_epoch",
    "committed",
    "error_code",
    "error",
    "producer_id",
    "producer_epoch",
    "ongoing_txn_producer_id",
    "ongoing_txn_producer_epoch",
    "placement",
    "placement_reason",
    "block_start",
    "block_end",
    "block_broker_id",
    "block_response_frame",
    "duplicate_of_frame",
    "request_frame",
    "request_timestamp",
    "request_unix_time",
    "response_frame",
    "response_timestamp",
    "unix_time",
    "latency_us",
    "decode_error",
];

/// Columns of `--format csv-committed`: the fields of `metadata_log.blocks[]`.
pub const COMMITTED_COLUMNS: [&str; 15] = [
    "offset",
    "broker_id",
    "broker_epoch",
    "producer_id_start",
    "producer_id_len",
    "next_producer_id",
    "missing_before_start",
    "missing_before_end",
    "timestamp",
    "unix_time",
    "leader_epoch",
    "delivery",
    "delivered_frame",
    "file",
    "findings",
];

/// Columns of `--format csv-writes`: a row per record batch of every Produce request.
pub const WRITE_COLUMNS: [&str; 29] = [
    "connection",
    "client",
    "server",
    "client_id",
    "transactional_id",
    "correlation_id",
    "api_version",
    "acks",
    "request_frame",
    "request_timestamp",
    "request_unix_time",
    "response_frame",
    "topic",
    "topic_id",
    "partition",
    "batch",
    "producer_id",
    "producer_epoch",
    "first_sequence",
    "last_sequence",
    "records",
    "crc",
    "transactional",
    "outcome",
    "offset",
    "error_code",
    "error",
    "request_decode_error",
    "response_decode_error",
];

/// Columns of `--format csv-committed` that compare with a capture, left out when the log
/// is read alone.
pub const CAPTURE_ONLY_COMMITTED_COLUMNS: [&str; 2] = ["delivery", "delivered_frame"];

fn text<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// One exchange's row: an absent field is an empty cell.
fn exchange_row(ex: &Exchange) -> Vec<String> {
    let (req, resp) = (&ex.request, ex.response.as_ref());
    let end = resp.and_then(|r| match (r.producer_id_start, r.producer_id_len) {
        (Some(start), Some(len)) if len > 0 => start.checked_add(i64::from(len) - 1),
        _ => None,
    });
    vec![
        ex.connection.to_string(),
        ex.client.clone(),
        ex.server.clone(),
        ex.correlation_id.to_string(),
        ex.status.as_str().to_owned(),
        text(req.broker_id),
        text(req.broker_epoch),
        req.frame.to_string(),
        req.timestamp.clone(),
        req.unix_time.seconds().to_string(),
        text(resp.map(|r| r.frame)),
        text(resp.map(|r| r.timestamp.clone())),
        text(resp.map(|r| r.unix_time.seconds())),
        text(resp.and_then(|r| r.error_code)),
        text(resp.and_then(|r| r.error.clone())),
        text(resp.and_then(|r| r.producer_id_start)),
        text(resp.and_then(|r| r.producer_id_len)),
        text(end),
        text(ex.latency_us),
        text(req.decode_error.clone()),
        text(resp.and_then(|r| r.decode_error.clone())),
    ]
}

/// The rows of one Produce exchange: one per batch, in the request's order, with what
/// became of it (`judged`, in the same order).
fn write_rows_of(ex: &WriteExchange, judged: &WriteJudged, out: &mut Vec<u8>) -> io::Result<()> {
    let req = &ex.request;
    let response = ex.outcome.response();
    let hex = |id: &[u8; 16]| id.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let head = [
        ex.endpoints.connection.to_string(),
        ex.endpoints.client.to_string(),
        ex.endpoints.server.to_string(),
        text(req.header.client_id.clone().flatten()),
        text(req.transactional_id.clone().flatten()),
        ex.correlation_id.to_string(),
        ex.api_version.to_string(),
        text(req.acks),
        ex.request_meta.frame.to_string(),
        ex.request_meta.timestamp.to_rfc3339(),
        UnixTime(ex.request_meta.timestamp).seconds().to_string(),
        text(response.map(|(meta, _)| meta.frame)),
    ];
    let mut batches = judged.batches.iter();
    for (t, topic) in req.topics.iter().enumerate() {
        let name = judged.topic_names.get(t).cloned().flatten();
        for partition in &topic.partitions {
            for (index, b) in partition.batches.iter().enumerate() {
                let j = batches.next();
                let mut row = head.to_vec();
                row.extend([
                    text(name.clone()),
                    text(topic.topic_id.as_ref().map(hex)),
                    partition.index.to_string(),
                    index.to_string(),
                    text(b.producer_id),
                    text(b.producer_epoch),
                    text(b.base_sequence),
                    text(b.last_sequence()),
                    text(b.records_count),
                    text(b.crc),
                    text(b.attributes.map(|_| b.is_transactional())),
                    text(j.map(|j| j.outcome.as_str())),
                    text(j.and_then(|j| j.offset)),
                    text(j.and_then(|j| j.error).map(|e| e.0)),
                    text(j.and_then(|j| j.error).map(ErrorCode::name)),
                    text(req.problem.as_ref()),
                    text(response.and_then(|(_, r)| r.problem.as_ref())),
                ]);
                record(out, &row)?;
            }
        }
    }
    Ok(())
}

fn block_row(b: &PidBlock) -> Vec<String> {
    vec![
        b.start.to_string(),
        b.end.to_string(),
        b.len.to_string(),
        b.broker_id.to_string(),
        b.broker_epoch.to_string(),
        b.connection.to_string(),
        b.client.clone(),
        b.server.clone(),
        b.correlation_id.to_string(),
        b.request_frame.to_string(),
        b.response_frame.to_string(),
        b.timestamp.clone(),
        b.unix_time.seconds().to_string(),
    ]
}

/// One InitProducerId exchange's row: an absent or null field is an empty cell.
fn producer_row(e: &ProducerIdEntry) -> Vec<String> {
    let block = e.block.as_ref();
    vec![
        e.api.as_str().to_owned(),
        e.connection.to_string(),
        e.client.clone(),
        e.server.clone(),
        e.correlation_id.to_string(),
        e.api_version.to_string(),
        e.status.as_str().to_owned(),
        text(e.broker_id),
        text(e.broker_source.map(|s| s.as_str())),
        text(e.client_id.clone().flatten()),
        text(e.transactional_id.clone().flatten()),
        text(e.transaction_timeout_ms),
        text(e.requested_producer_id),
        text(e.requested_producer_epoch),
        text(e.committed),
        text(e.error_code),
        text(e.error.clone()),
        text(e.producer_id),
        text(e.producer_epoch),
        text(e.ongoing_txn_producer_id),
        text(e.ongoing_txn_producer_epoch),
        text(e.placement.map(|p| p.as_str())),
        text(e.placement_reason.clone()),
        text(block.map(|b| b.start)),
        text(block.map(|b| b.end)),
        text(block.map(|b| b.broker_id)),
        text(block.map(|b| b.response_frame)),
        text(e.duplicate_of_frame),
        e.request_frame.to_string(),
        e.request_timestamp.clone(),
        text(Some(e.request_unix_time.seconds())),
        text(e.response_frame),
        text(e.response_timestamp.clone()),
        text(e.unix_time.map(|t| t.seconds())),
        text(e.latency_us),
        text(e.decode_error.clone()),
    ]
}

/// One committed block's row, with the kinds of the findings at its offset.
fn committed_row(b: &CommittedBlock, findings: &[&PidFinding]) -> Vec<String> {
    let kinds: Vec<&str> = findings
        .iter()
        .filter(|f| record_offset(f) == Some(b.offset))
        .map(|f| f.kind.as_str())
        .collect();
    vec![
        b.offset.to_string(),
        b.broker_id.to_string(),
        b.broker_epoch.to_string(),
        text(b.producer_id_start),
        text(b.producer_id_len),
        b.next_producer_id.to_string(),
        text(b.missing_before.map(|m| m.start)),
        text(b.missing_before.map(|m| m.end)),
        b.timestamp.clone(),
        b.unix_time.seconds().to_string(),
        b.leader_epoch.to_string(),
        b.delivery.name().as_str().to_owned(),
        text(match b.delivery {
            Delivery::Delivered { frame } => Some(frame),
            _ => None,
        }),
        b.file.clone(),
        kinds.join(" "),
    ]
}

/// The offset of the committed block's record a finding is about.
fn record_offset(f: &PidFinding) -> Option<i64> {
    match f.detail {
        Some(Detail::Record { offset }) => Some(offset),
        _ => None,
    }
}

/// `--format csv-committed`: the rows, from the finished report (the log is read whole
/// before the capture, and its blocks are few).
fn write_committed(out: &mut dyn Write, report: &Report) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(64 << 10, out);
    let mut buf = Vec::new();
    // a log read alone has no capture to deliver its blocks: no delivery columns
    let keep = |column: &str| {
        !report.captures.is_empty() || !CAPTURE_ONLY_COMMITTED_COLUMNS.contains(&column)
    };
    let kept = |row: Vec<String>| -> Vec<String> {
        COMMITTED_COLUMNS
            .iter()
            .zip(row)
            .filter(|(column, _)| keep(column))
            .map(|(_, cell)| cell)
            .collect()
    };
    let header: Vec<String> = COMMITTED_COLUMNS.iter().map(|h| (*h).to_owned()).collect();
    record(&mut buf, &kept(header))?;
    let findings: Vec<&PidFinding> = report
        .producer_id_blocks
        .findings
        .iter()
        .filter(|f| record_offset(f).is_some())
        .collect();
    for b in report.metadata_log.iter().flat_map(|log| &log.blocks) {
        record(&mut buf, &kept(committed_row(b, &findings)))?;
        w.write_all(&buf)?;
        buf.clear();
    }
    w.write_all(&buf)?;
    w.flush()
}

/// One CSV record, RFC 4180, appended to `out`.
fn record(out: &mut Vec<u8>, fields: &[String]) -> io::Result<()> {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .from_writer(out);
    w.write_record(fields).map_err(io::Error::other)?;
    w.flush()
}

/// What the rows are of.
enum Rows {
    Exchanges(Ordered<ExchangeOrder>),
    Blocks(Ordered<BlockOrder>),
    Producers(Ordered<ExchangeOrder>),
    Writes(Ordered<ExchangeOrder>),
    Committed,
}

/// `--format csv`, `--format csv-blocks` and `--format csv-producers`.
pub struct CsvSink {
    rows: Rows,
    out: Box<dyn Write + Send>,
}

impl CsvSink {
    /// A row per exchange, in report order.
    pub fn exchanges(out: Box<dyn Write + Send>) -> Self {
        let rows = Rows::Exchanges(Ordered::new(DEFAULT_RUN_BYTES));
        Self { rows, out }
    }

    /// A row per block, in the order of `producer_id_blocks.blocks`.
    pub fn blocks(out: Box<dyn Write + Send>) -> Self {
        let rows = Rows::Blocks(Ordered::new(DEFAULT_RUN_BYTES));
        Self { rows, out }
    }

    /// A row per committed block, in the order of `metadata_log.blocks`.
    pub fn committed(out: Box<dyn Write + Send>) -> Self {
        Self {
            rows: Rows::Committed,
            out,
        }
    }

    /// A row per record batch of every Produce request, by request frame, then
    /// connection, then correlation id, and in each request in its order.
    pub fn writes(out: Box<dyn Write + Send>) -> Self {
        let rows = Rows::Writes(Ordered::new(DEFAULT_RUN_BYTES));
        Self { rows, out }
    }

    /// A row per InitProducerId exchange, in the order of `producer_ids.entries`.
    pub fn producers(out: Box<dyn Write + Send>) -> Self {
        let rows = Rows::Producers(Ordered::new(DEFAULT_RUN_BYTES));
        Self { rows, out }
    }
}

/// Where a Produce exchange stands among the rows: as an exchange in the report.
fn order_of(ex: &WriteExchange) -> ExchangeOrder {
    ExchangeOrder {
        request_frame: ex.request_meta.frame,
        connection: ex.endpoints.connection,
        correlation_id: ex.correlation_id,
    }
}

fn write_rows<K: OrderKey>(
    out: &mut dyn Write,
    header: &[&str],
    rows: Ordered<K>,
) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(64 << 10, out);
    let mut head = Vec::new();
    let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
    record(&mut head, &header)?;
    w.write_all(&head)?;
    rows.write_each(|_, row| w.write_all(row))?;
    w.flush()
}

impl CsvSink {
    fn allocate(&mut self, ex: &pairing::Exchange, block: Option<&Block>) -> io::Result<()> {
        match &mut self.rows {
            Rows::Exchanges(rows) => {
                rows.push(ex.order(), |out| record(out, &exchange_row(&exchange(ex))))
            }
            Rows::Blocks(rows) => match block {
                Some(b) => rows.push(b.order(), |out| record(out, &block_row(&pid_block(b)))),
                None => Ok(()),
            },
            Rows::Producers(_) | Rows::Writes(_) | Rows::Committed => Ok(()),
        }
    }

    fn producer(&mut self, px: &Granting, placed: &Placed) -> io::Result<()> {
        match &mut self.rows {
            Rows::Producers(rows) => rows.push(px.order(), |out| {
                record(out, &producer_row(&producer_id_entry(px, placed)))
            }),
            Rows::Exchanges(_) | Rows::Blocks(_) | Rows::Writes(_) | Rows::Committed => Ok(()),
        }
    }
}

impl Sink for CsvSink {
    fn needs(&self) -> Needs {
        Needs::STREAMED
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, block) => self.allocate(ex, block),
            Analysed::Producer(px, placed) => self.producer(px, placed),
        }
    }

    fn write(&mut self, ex: &WriteExchange, judged: &WriteJudged) -> io::Result<()> {
        match &mut self.rows {
            Rows::Writes(rows) => rows.push(order_of(ex), |out| write_rows_of(ex, judged, out)),
            _ => Ok(()),
        }
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let empty = Rows::Blocks(Ordered::new(1));
        match std::mem::replace(&mut self.rows, empty) {
            Rows::Exchanges(rows) => write_rows(&mut self.out, &EXCHANGE_COLUMNS, rows)?,
            Rows::Blocks(rows) => write_rows(&mut self.out, &BLOCK_COLUMNS, rows)?,
            Rows::Producers(rows) => write_rows(&mut self.out, &PRODUCER_COLUMNS, rows)?,
            Rows::Writes(rows) => write_rows(&mut self.out, &WRITE_COLUMNS, rows)?,
            Rows::Committed => write_committed(&mut self.out, report)?,
        }
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        let mut out = Vec::new();
        let fields = ["plain", "a, b", "say \"hi\"", "two\nlines", ""].map(str::to_owned);
        record(&mut out, &fields).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain,\"a, b\",\"say \"\"hi\"\"\",\"two\nlines\",\r\n"
        );
    }

    /// `csv-producers` has a column per field of `producer_ids.entries[]`, in the same
    /// order, `block` flattened: a field added to the entry is a column too.
    #[test]
    fn producer_columns_are_the_entrys_fields_in_order() {
        let schema = serde_json::to_value(schemars::schema_for!(ProducerIdEntry)).unwrap();
        let fields: Vec<String> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .flat_map(|name| match name.as_str() {
                "block" => ["start", "end", "broker_id", "response_frame"]
                    .map(|f| format!("block_{f}"))
                    .to_vec(),
                _ => vec![name.clone()],
            })
            .collect();
        assert_eq!(fields, PRODUCER_COLUMNS);
    }
}
