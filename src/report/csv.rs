//! `--format csv` (a row per exchange) and `--format csv-blocks` (a row per block) for
//! spreadsheets and pipelines: RFC 4180 (a header row, commas, fields quoted by the `csv`
//! crate when they need it, CRLF line ends). Rows are rendered as they come into a list in
//! report order (off the heap past a bound, see [`Ordered`]) and written at the end.

use std::io::{self, Write};

use super::model::{Exchange, PidBlock, Report};
use super::sink::{Needs, Sink};
use super::spill::{OrderKey, Ordered, DEFAULT_RUN_BYTES};
use super::{exchange, pid_block};
use crate::analysis::{Block, BlockOrder};
use crate::pairing::{self, ExchangeOrder};

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
}

/// `--format csv` and `--format csv-blocks`.
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

impl Sink for CsvSink {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: false,
            exact_latency: false,
        }
    }

    fn exchange(&mut self, ex: pairing::Exchange, block: Option<&Block>) -> io::Result<()> {
        match &mut self.rows {
            Rows::Exchanges(rows) => {
                rows.push(ex.order(), |out| record(out, &exchange_row(&exchange(&ex))))
            }
            Rows::Blocks(rows) => match block {
                Some(b) => rows.push(b.order(), |out| record(out, &block_row(&pid_block(b)))),
                None => Ok(()),
            },
        }
    }

    fn finish(&mut self, _report: &mut Report) -> io::Result<()> {
        let empty = Rows::Blocks(Ordered::new(1));
        match std::mem::replace(&mut self.rows, empty) {
            Rows::Exchanges(rows) => write_rows(&mut self.out, &EXCHANGE_COLUMNS, rows)?,
            Rows::Blocks(rows) => write_rows(&mut self.out, &BLOCK_COLUMNS, rows)?,
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
}
