//! The JSON formats as sinks. `--format json` serializes each exchange and block as it
//! comes (on the output thread, beside the reading) into [`Ordered`] lists, which hold
//! only text, and off the heap past a bound; the report is written around them at the
//! end. `--format ndjson` writes a line per exchange as it completes (and one for the
//! block it granted), then a line per finding and a line with the rest of the report.
//!
//! The bytes written are exactly those of `serde_json` on the whole report, compact or
//! pretty (`tests/it/serialized.rs` holds the two side by side for every fixture).

use std::io::{self, Write};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::model::{
    BrokerAddress, Capture, ControllerPiece, ControllerSpan, Diagnostic, Filters, MetadataLog,
    PidFinding, ProducerIdBlocks, ProducerIdCounts, ProducerIds, Report, Summary, Tool, Verdict,
};
use super::sink::{Needs, Sink};
use super::spill::{OrderKey, Ordered, DEFAULT_RUN_BYTES};
use super::{compact, exchange, pid_block, producer_id_entry};
use crate::analysis::{Block, BlockOrder, Placed};
use crate::pairing::{Exchange, ExchangeOrder, ProducerIdExchange};
use erased::Json as _;

/// Depth of the elements of `exchanges` and of `producer_id_blocks.blocks` in the
/// pretty report, and their indentation.
const EXCHANGE_DEPTH: usize = 2;
const BLOCK_DEPTH: usize = 3;
const EXCHANGE_INDENT: &[u8] = b"    ";
const BLOCK_INDENT: &[u8] = b"      ";
/// `producer_ids.entries` sit as deep as the blocks.
const ENTRY_INDENT: &[u8] = BLOCK_INDENT;

/// `--format json`: the report, its exchanges and blocks serialized as they come.
pub struct JsonSink {
    pretty: bool,
    exchanges: Ordered<ExchangeOrder>,
    blocks: Ordered<BlockOrder>,
    producers: Ordered<ExchangeOrder>,
    /// Whether `producer_ids.entries` is written (`--no-producer-entries`).
    producer_entries: bool,
    out: Box<dyn Write + Send>,
}

impl JsonSink {
    /// `pretty`: laid out as `serde_json::to_writer_pretty` lays the report out.
    pub fn new(pretty: bool, out: Box<dyn Write + Send>) -> Self {
        Self::with_run_bytes(pretty, out, DEFAULT_RUN_BYTES)
    }

    /// Holding at most `run_bytes` of each list in memory (see [`Ordered`]).
    pub fn with_run_bytes(pretty: bool, out: Box<dyn Write + Send>, run_bytes: usize) -> Self {
        Self {
            pretty,
            exchanges: Ordered::new(run_bytes),
            blocks: Ordered::new(run_bytes),
            producers: Ordered::new(run_bytes),
            producer_entries: true,
            out,
        }
    }

    /// Writes `producer_ids.entries`, or leaves it out (`--no-producer-entries`).
    pub fn producer_entries(self, producer_entries: bool) -> Self {
        Self {
            producer_entries,
            ..self
        }
    }
}

impl Sink for JsonSink {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: false,
            raw_messages: false,
        }
    }

    fn exchange(&mut self, ex: Exchange, block: Option<&Block>) -> io::Result<()> {
        let pretty = self.pretty;
        self.exchanges.push(ex.order(), |out| {
            let ex = exchange(&ex);
            if pretty {
                compact::exchange_at(out, &ex, EXCHANGE_DEPTH);
            } else {
                compact::exchange(out, &ex);
            }
            Ok(())
        })?;
        if let Some(block) = block {
            self.blocks.push(block.order(), |out| {
                let block = pid_block(block);
                if pretty {
                    compact::pid_block_at(out, &block, BLOCK_DEPTH);
                } else {
                    compact::pid_block(out, &block);
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    fn producer(&mut self, px: ProducerIdExchange, placed: &Placed) -> io::Result<()> {
        if !self.producer_entries {
            return Ok(());
        }
        let pretty = self.pretty;
        self.producers.push(px.order(), |out| {
            let entry = producer_id_entry(&px, placed);
            if pretty {
                indent_into(out, &serde_json::to_vec_pretty(&entry)?, ENTRY_INDENT);
            } else {
                serde_json::to_writer(&mut *out, &entry)?;
            }
            Ok(())
        })
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let exchanges = std::mem::replace(&mut self.exchanges, Ordered::new(1));
        let blocks = std::mem::replace(&mut self.blocks, Ordered::new(1));
        let producers = std::mem::replace(&mut self.producers, Ordered::new(1));
        let lists = Lists {
            exchanges,
            blocks,
            producers: self.producer_entries.then_some(producers),
        };
        write_report(report, self.pretty, Some(lists), &mut self.out)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

/// `--format ndjson`: a line per exchange as it completes, followed by a line for the
/// block it granted if it granted one, flushed within a tenth of a second; then a line per
/// finding, and a line with everything else the report holds (no `exchanges`, no
/// `producer_id_blocks.blocks`). Memory does not grow with the number of exchanges.
pub struct NdjsonSink {
    out: Box<dyn Write + Send>,
    line: Vec<u8>,
    last_flush: Instant,
    /// Whether a line is written per InitProducerId exchange (`--no-producer-entries`).
    producer_entries: bool,
}

/// Longest a written line waits in the buffer.
const NDJSON_FLUSH: Duration = Duration::from_millis(100);

impl NdjsonSink {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out,
            line: Vec::new(),
            last_flush: Instant::now(),
            producer_entries: true,
        }
    }

    /// Writes a `producer_id` line per InitProducerId exchange, or none.
    pub fn producer_entries(self, producer_entries: bool) -> Self {
        Self {
            producer_entries,
            ..self
        }
    }
}

/// Appends a line: the object `write_object` writes, with `start` (`{"type":"...",`) in
/// place of its `{`.
fn push_line(line: &mut Vec<u8>, start: &[u8], write_object: impl FnOnce(&mut Vec<u8>)) {
    let at = line.len();
    write_object(line);
    line.splice(at..at.saturating_add(1), start.iter().copied());
    line.push(b'\n');
}

impl Sink for NdjsonSink {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: false,
            raw_messages: false,
        }
    }

    fn exchange(&mut self, ex: Exchange, block: Option<&Block>) -> io::Result<()> {
        self.line.clear();
        push_line(&mut self.line, EXCHANGE_LINE_START, |out| {
            compact::exchange(out, &exchange(&ex));
        });
        if let Some(block) = block {
            push_line(&mut self.line, BLOCK_LINE_START, |out| {
                compact::pid_block(out, &pid_block(block));
            });
        }
        self.out.write_all(&self.line)?;
        if self.last_flush.elapsed() >= NDJSON_FLUSH {
            self.last_flush = Instant::now();
            self.out.flush()?;
        }
        Ok(())
    }

    fn producer(&mut self, px: ProducerIdExchange, placed: &Placed) -> io::Result<()> {
        if !self.producer_entries {
            return Ok(());
        }
        self.line.clear();
        let object = serde_json::to_vec(&producer_id_entry(&px, placed))?;
        push_line(&mut self.line, PRODUCER_LINE_START, |out| {
            out.extend_from_slice(&object);
        });
        self.out.write_all(&self.line)?;
        if self.last_flush.elapsed() >= NDJSON_FLUSH {
            self.last_flush = Instant::now();
            self.out.flush()?;
        }
        Ok(())
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        for finding in &report.producer_id_blocks.findings {
            self.line.clear();
            let object = serde_json::to_vec(finding)?;
            push_line(&mut self.line, FINDING_LINE_START, |out| {
                out.extend_from_slice(&object);
            });
            self.out.write_all(&self.line)?;
        }
        self.out.write_all(REPORT_LINE_START)?;
        write_report(report, false, None, &mut self.out)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

/// How each ndjson line starts: its `type`, then the object's fields.
const EXCHANGE_LINE_START: &[u8] = b"{\"type\":\"exchange\",";
const BLOCK_LINE_START: &[u8] = b"{\"type\":\"block\",";
const FINDING_LINE_START: &[u8] = b"{\"type\":\"finding\",";
const PRODUCER_LINE_START: &[u8] = b"{\"type\":\"producer_id\",";
const REPORT_LINE_START: &[u8] = b"{\"type\":\"report\",";

/// The ordered arrays of the JSON report.
struct Lists {
    exchanges: Ordered<ExchangeOrder>,
    blocks: Ordered<BlockOrder>,
    /// `None` with `--no-producer-entries`: no `entries` key.
    producers: Option<Ordered<ExchangeOrder>>,
}

/// Writes `list` as a JSON array, `[` to `]`, its items in key order.
fn write_list<K: OrderKey>(
    list: Ordered<K>,
    pretty: bool,
    indent: &[u8],
    out: &mut dyn Write,
) -> io::Result<()> {
    out.write_all(b"[")?;
    let any = !list.is_empty();
    list.write_each(|i, item| {
        if i > 0 {
            out.write_all(b",")?;
        }
        if pretty {
            out.write_all(b"\n")?;
            out.write_all(indent)?;
        }
        out.write_all(item)
    })?;
    if pretty && any {
        out.write_all(b"\n")?;
        out.write_all(indent.get(2..).unwrap_or_default())?;
    }
    out.write_all(b"]")
}

/// Writes `report` as JSON, with the `lists` in place of its own exchanges and blocks
/// (which are ignored); without them, with neither key (the last line of ndjson).
fn write_report(
    report: &Report,
    pretty: bool,
    lists: Option<Lists>,
    out: &mut dyn Write,
) -> io::Result<()> {
    #[derive(Serialize)]
    struct Head<'a> {
        format_version: u32,
        tool: &'a Tool,
        #[serde(skip_serializing_if = "Option::is_none")]
        filters: &'a Option<Filters>,
        verdict: &'a Verdict,
        captures: &'a [Capture],
        summary: &'a Summary,
    }
    #[derive(Serialize)]
    struct Tail<'a> {
        diagnostics: &'a [Diagnostic],
    }
    #[derive(Serialize)]
    struct Cluster<'a> {
        brokers_by_address: &'a [BrokerAddress],
        controllers: &'a [ControllerSpan],
        controller_timeline: &'a [ControllerPiece],
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata_log: &'a Option<MetadataLog>,
    }
    // Every field named, none skipped with `..`: a field added to the report fails
    // to compile here until it is written too.
    let Report {
        format_version,
        tool,
        filters,
        verdict,
        captures,
        summary,
        exchanges: _,
        producer_id_blocks,
        producer_ids,
        brokers_by_address,
        controllers,
        controller_timeline,
        metadata_log,
        diagnostics,
    } = report;
    // Each part is an object written without its braces: `{"a":1,"b":2}` gives
    // `"a":1,"b":2`, pretty at depth 1 or 2.
    let fields = |value: &dyn erased::Json, depth: usize| -> io::Result<Vec<u8>> {
        value.inner_fields(pretty, depth)
    };
    // ndjson's last line: `{"type":"report",` is written already
    if lists.is_some() {
        out.write_all(b"{")?;
    }
    out.write_all(&fields(
        &Head {
            format_version: *format_version,
            tool,
            filters,
            verdict,
            captures,
            summary,
        },
        1,
    )?)?;
    let whole = lists.is_some();
    let (exchanges, blocks, producers) = match lists {
        Some(l) => (Some(l.exchanges), Some(l.blocks), l.producers),
        None => (None, None, None),
    };
    match exchanges {
        Some(exchanges) => {
            out.write_all(&key(pretty, 1, "exchanges"))?;
            write_list(exchanges, pretty, EXCHANGE_INDENT, out)?;
        }
        // ndjson's last line keeps the diagnostics before the blocks' part: readers that
        // compare it byte for byte (`--expect`, goldens) rely on its key order.
        None => {
            out.write_all(b",")?;
            out.write_all(&fields(&Tail { diagnostics }, 1)?)?;
        }
    }
    write_blocks_part(producer_id_blocks, blocks, pretty, out)?;
    write_producers_part(producer_ids, producers, pretty, out)?;
    out.write_all(b",")?;
    let cluster = Cluster {
        brokers_by_address,
        controllers,
        controller_timeline,
        metadata_log,
    };
    out.write_all(&fields(&cluster, 1)?)?;
    if whole {
        out.write_all(b",")?;
        out.write_all(&fields(&Tail { diagnostics }, 1)?)?;
    }
    out.write_all(if pretty { b"\n}" } else { b"}" })
}

/// `,"producer_id_blocks":{...}`, with `blocks` in place of its own (none without them).
fn write_blocks_part(
    part: &ProducerIdBlocks,
    blocks: Option<Ordered<BlockOrder>>,
    pretty: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    #[derive(Serialize)]
    struct BlocksHead {
        usual_len: Option<i32>,
        slow_threshold_us: Option<f64>,
    }
    #[derive(Serialize)]
    struct BlocksTail<'a> {
        findings: &'a [PidFinding],
    }
    let ProducerIdBlocks {
        usual_len,
        slow_threshold_us,
        blocks: _,
        findings,
    } = part;
    out.write_all(&key(pretty, 1, "producer_id_blocks"))?;
    out.write_all(b"{")?;
    let head = BlocksHead {
        usual_len: *usual_len,
        slow_threshold_us: *slow_threshold_us,
    };
    out.write_all(&head.inner_fields(pretty, 2)?)?;
    if let Some(blocks) = blocks {
        out.write_all(&key(pretty, 2, "blocks"))?;
        write_list(blocks, pretty, BLOCK_INDENT, out)?;
    }
    out.write_all(b",")?;
    out.write_all(&BlocksTail { findings }.inner_fields(pretty, 2)?)?;
    out.write_all(if pretty { b"\n  }" } else { b"}" })
}

/// `,"producer_ids":{...}`, with `entries` in place of its own (none without them).
fn write_producers_part(
    part: &ProducerIds,
    entries: Option<Ordered<ExchangeOrder>>,
    pretty: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    #[derive(Serialize)]
    struct ProducersHead<'a> {
        summary: &'a ProducerIdCounts,
    }
    let ProducerIds {
        summary,
        entries: _,
    } = part;
    out.write_all(&key(pretty, 1, "producer_ids"))?;
    out.write_all(b"{")?;
    out.write_all(&ProducersHead { summary }.inner_fields(pretty, 2)?)?;
    if let Some(entries) = entries {
        out.write_all(&key(pretty, 2, "entries"))?;
        write_list(entries, pretty, ENTRY_INDENT, out)?;
    }
    out.write_all(if pretty { b"\n  }" } else { b"}" })
}

/// `,"name":` as it follows an earlier field at `depth`.
fn key(pretty: bool, depth: usize, name: &str) -> Vec<u8> {
    if pretty {
        format!(",\n{}\"{name}\": ", "  ".repeat(depth)).into_bytes()
    } else {
        format!(",\"{name}\":").into_bytes()
    }
}
/// Appends pretty JSON laid out at depth 0 as it sits `indent` deep: every line after the
/// first moves right (JSON strings hold no raw newline, so each one is layout).
fn indent_into(out: &mut Vec<u8>, json: &[u8], indent: &[u8]) {
    let mut lines = json.split(|b| *b == b'\n');
    if let Some(first) = lines.next() {
        out.extend_from_slice(first);
    }
    for line in lines {
        out.push(b'\n');
        out.extend_from_slice(indent);
        out.extend_from_slice(line);
    }
}

mod erased {
    //! Serializes a struct as the fields between its braces.

    use serde::Serialize;

    pub trait Json {
        /// The fields of this object at `depth`, without the braces (pretty: from the
        /// newline before the first field to the last field's end).
        fn inner_fields(&self, pretty: bool, depth: usize) -> std::io::Result<Vec<u8>>;
    }

    impl<T: Serialize> Json for T {
        fn inner_fields(&self, pretty: bool, depth: usize) -> std::io::Result<Vec<u8>> {
            let whole = if pretty {
                serde_json::to_vec_pretty(self)
            } else {
                serde_json::to_vec(self)
            }?;
            let (open, close): (&[u8], &[u8]) = if pretty { (b"{", b"\n}") } else { (b"{", b"}") };
            let inner = whole
                .strip_prefix(open)
                .and_then(|rest| rest.strip_suffix(close))
                .unwrap_or_default();
            if !pretty || depth <= 1 {
                return Ok(inner.to_vec());
            }
            let mut out = Vec::with_capacity(inner.len());
            super::indent_into(&mut out, inner, &b"  ".repeat(depth - 1));
            Ok(out)
        }
    }
}
