//! The JSON formats as sinks. `--format json` serializes each exchange and block as it
//! comes (on the output thread, beside the reading) into [`Ordered`] lists, which hold
//! only text, and off the heap past a bound; the report is written around them at the
//! end. `--format ndjson` writes a line per exchange as it completes (and one for the
//! block it granted), then a line per finding and a line with the rest of the report.
//!
//! The bytes written are exactly those of `serde_json` on the whole report, compact or
//! pretty (`tests/it/serialized.rs` holds the two side by side for every fixture).

use std::cell::Cell;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::model::{ProducerIdBlocks, ProducerIds, Report};
use super::out::{Plain, ReportOut};
use super::producer_id_entry;
use super::sink::{Analysed, Needs, Sink};
use super::spill::{OrderKey, Ordered, WholeRun, DEFAULT_RUN_BYTES};
use crate::analysis::{Block, BlockOrder, Placed};
use crate::pairing::{Exchange, ExchangeOrder, Granting};
use writer::Raw;

mod direct;
pub mod writer;

/// Depth of the elements of `exchanges`, `producer_id_blocks.blocks` and
/// `producer_ids.entries` in the report.
const EXCHANGE_DEPTH: usize = 2;
const BLOCK_DEPTH: usize = 3;
const ENTRY_DEPTH: usize = 3;

/// The buffer the end of the report is written through: twice the output's own
/// (`main.rs`), so that what it hands on (whole items, so a little less than full) is
/// past that buffer's size and goes by it, not copied into it.
const FINISH_BUFFER: usize = 512 << 10;

/// `--format json`: the report, its exchanges and blocks serialized as they come.
pub struct JsonSink {
    pretty: bool,
    exchanges: Ordered<ExchangeOrder>,
    blocks: Ordered<BlockOrder>,
    producers: Ordered<ExchangeOrder>,
    /// Whether `producer_ids.entries` is written (`--no-producer-entries`).
    producer_entries: bool,
    out: Box<dyn ReportOut>,
}

impl JsonSink {
    /// `pretty`: laid out as `serde_json::to_writer_pretty` lays the report out.
    pub fn new(pretty: bool, out: Box<dyn Write + Send>) -> Self {
        Self::with_run_bytes(pretty, out, DEFAULT_RUN_BYTES)
    }

    /// Into an output that takes the lists spilled to the disk whole (a file, a pipe:
    /// see [`ReportOut`]).
    pub fn to_output(pretty: bool, out: Box<dyn ReportOut>) -> Self {
        Self::output_with_run_bytes(pretty, out, DEFAULT_RUN_BYTES)
    }

    /// Holding at most `run_bytes` of each list in memory (see [`Ordered`]).
    pub fn with_run_bytes(pretty: bool, out: Box<dyn Write + Send>, run_bytes: usize) -> Self {
        Self::output_with_run_bytes(pretty, Box::new(Plain(out)), run_bytes)
    }

    /// Into `out`, holding at most `run_bytes` of each list in memory.
    pub fn output_with_run_bytes(pretty: bool, out: Box<dyn ReportOut>, run_bytes: usize) -> Self {
        Self {
            pretty,
            exchanges: list_at(EXCHANGE_DEPTH, pretty, run_bytes),
            blocks: list_at(BLOCK_DEPTH, pretty, run_bytes),
            producers: list_at(ENTRY_DEPTH, pretty, run_bytes),
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

    fn allocate(&mut self, ex: &Exchange, block: Option<&Block>) -> io::Result<()> {
        let pretty = self.pretty;
        self.exchanges.push(ex.order(), |out| {
            direct::exchange(out, ex, pretty, EXCHANGE_DEPTH, None);
            Ok(())
        })?;
        if let Some(block) = block {
            self.blocks.push(block.order(), |out| {
                direct::block(out, block, pretty, BLOCK_DEPTH, None);
                Ok(())
            })?;
        }
        Ok(())
    }

    fn producer(&mut self, px: &Granting, placed: &Placed) -> io::Result<()> {
        if !self.producer_entries {
            return Ok(());
        }
        let pretty = self.pretty;
        self.producers.push(px.order(), |out| {
            writer::item(out, &producer_id_entry(px, placed), pretty, ENTRY_DEPTH)
        })
    }
}

/// A list whose items sit `depth` deep in the report, held up to `run_bytes`.
fn list_at<K: OrderKey>(depth: usize, pretty: bool, run_bytes: usize) -> Ordered<K> {
    Ordered::new(run_bytes).between(writer::between_items(pretty, depth))
}

impl Sink for JsonSink {
    fn needs(&self) -> Needs {
        Needs::STREAMED
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, block) => self.allocate(ex, block),
            Analysed::Producer(px, placed) => self.producer(px, placed),
        }
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let exchanges = std::mem::replace(&mut self.exchanges, Ordered::new(1));
        let blocks = std::mem::replace(&mut self.blocks, Ordered::new(1));
        let producers = std::mem::replace(&mut self.producers, Ordered::new(1));
        let whole = Cell::new(None);
        let lists = Lists {
            exchanges: Spilled::new(exchanges, &whole),
            blocks: Spilled::new(blocks, &whole),
            producers: self
                .producer_entries
                .then(|| Spilled::new(producers, &whole)),
        };
        let written = Written {
            report,
            lists: Some(lists),
        };
        // The lists' hundreds of thousands of small writes land in a buffer of this
        // writer's own, not each through the output's `dyn Write`; a full buffer goes on
        // whole, past the output's own buffer.
        let mut out = FinishOut {
            buffer: io::BufWriter::with_capacity(FINISH_BUFFER, &mut *self.out),
            whole: &whole,
        };
        writer::write(&mut out, &written, self.pretty)?;
        out.write_all(b"\n")?;
        out.flush()?;
        drop(out);
        self.out.flush()
    }
}

/// The end of the report on its way out: through a buffer, and with a list's run
/// ([`Spilled`] leaves it in `whole`) copied whole by the output after the bytes written
/// before it and before those written after.
struct FinishOut<'a> {
    buffer: io::BufWriter<&'a mut dyn ReportOut>,
    whole: &'a Cell<Option<WholeRun>>,
}

impl FinishOut<'_> {
    fn copy_whole(&mut self) -> io::Result<()> {
        if let Some(run) = self.whole.take() {
            self.buffer.flush()?;
            run.copy_into(*self.buffer.get_mut())?;
        }
        Ok(())
    }
}

impl Write for FinishOut<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.copy_whole()?;
        self.buffer.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.copy_whole()?;
        self.buffer.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.copy_whole()?;
        self.buffer.flush()
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

    /// Appends a line: `item`'s object with `"type"` first.
    fn push_line(&mut self, kind: &'static str, item: &impl Serialize) -> io::Result<()> {
        writer::compact_typed(&mut self.line, kind, item)?;
        self.line.push(b'\n');
        Ok(())
    }

    /// Writes the lines pushed, flushing them if the last flush is old enough.
    fn write_lines(&mut self) -> io::Result<()> {
        self.out.write_all(&self.line)?;
        self.line.clear();
        if self.last_flush.elapsed() >= NDJSON_FLUSH {
            self.last_flush = Instant::now();
            self.out.flush()?;
        }
        Ok(())
    }

    fn allocate(&mut self, ex: &Exchange, block: Option<&Block>) -> io::Result<()> {
        direct::exchange(&mut self.line, ex, false, 0, Some("exchange"));
        self.line.push(b'\n');
        if let Some(block) = block {
            direct::block(&mut self.line, block, false, 0, Some("block"));
            self.line.push(b'\n');
        }
        self.write_lines()
    }

    fn producer(&mut self, px: &Granting, placed: &Placed) -> io::Result<()> {
        if !self.producer_entries {
            return Ok(());
        }
        self.push_line("producer_id", &producer_id_entry(px, placed))?;
        self.write_lines()
    }
}

impl Sink for NdjsonSink {
    fn needs(&self) -> Needs {
        Needs::STREAMED
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, block) => self.allocate(ex, block),
            Analysed::Producer(px, placed) => self.producer(px, placed),
        }
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        for finding in &report.producer_id_blocks.findings {
            self.push_line("finding", finding)?;
        }
        // the batches of interest as lines of their own, not in the report line
        if let Some(writes) = &mut report.writes {
            for batch in std::mem::take(&mut writes.of_interest) {
                self.push_line("write", &batch)?;
            }
        }
        let written = Written {
            report,
            lists: None,
        };
        self.push_line("report", &written)?;
        self.out.write_all(&self.line)?;
        self.line.clear();
        self.out.flush()
    }
}

/// The ordered arrays of the JSON report, each serialized once, from where it is held.
struct Lists<'a> {
    exchanges: Spilled<'a, ExchangeOrder>,
    blocks: Spilled<'a, BlockOrder>,
    /// `None` with `--no-producer-entries`: no `entries` key.
    producers: Option<Spilled<'a, ExchangeOrder>>,
}

/// A list of items held as JSON text, written as an array of [`Raw`] items in key
/// order. Its items were written for the depth it sits at; it can be written once.
/// When they lie in one run, the run is left in `whole` for the output to copy
/// ([`FinishOut`]) rather than read back here.
struct Spilled<'a, K> {
    list: Cell<Option<Ordered<K>>>,
    whole: &'a Cell<Option<WholeRun>>,
}

impl<'a, K> Spilled<'a, K> {
    fn new(list: Ordered<K>, whole: &'a Cell<Option<WholeRun>>) -> Self {
        Self {
            list: Cell::new(Some(list)),
            whole,
        }
    }
}

impl<K: OrderKey> Serialize for Spilled<'_, K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(list) = self.list.take() else {
            return Err(S::Error::custom("a spilled list is written once"));
        };
        let len = usize::try_from(list.len()).ok();
        let mut seq = serializer.serialize_seq(len)?;
        let list = match list.into_one_run().map_err(S::Error::custom)? {
            Ok(run) => {
                // What goes before the first item, then the run's text: every item, each
                // later one after its separator, copied in by the output before the
                // list's end is written.
                seq.serialize_element(&Raw(b""))?;
                let earlier = self.whole.replace(Some(run));
                debug_assert!(earlier.is_none(), "a run left uncopied");
                return seq.end();
            }
            Err(list) => list,
        };
        let mut failed = None;
        let read = list.write_each(|_, item| {
            seq.serialize_element(&Raw(item)).map_err(|e| {
                failed = Some(e);
                io::Error::other("writing stopped")
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        read.map_err(S::Error::custom)?;
        seq.end()
    }
}

/// The report as JSON, with `lists` in place of its own exchanges and blocks (which are
/// ignored); without them, with neither key (the last line of ndjson).
struct Written<'a> {
    report: &'a Report,
    lists: Option<Lists<'a>>,
}

impl Serialize for Written<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
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
            writes,
            diagnostics,
        } = self.report;
        let lists = self.lists.as_ref();
        let mut m = serializer.serialize_struct("Report", 15)?;
        m.serialize_field("format_version", format_version)?;
        m.serialize_field("tool", tool)?;
        if let Some(filters) = filters {
            m.serialize_field("filters", filters)?;
        }
        m.serialize_field("verdict", verdict)?;
        m.serialize_field("captures", captures)?;
        m.serialize_field("summary", summary)?;
        match lists {
            Some(lists) => m.serialize_field("exchanges", &lists.exchanges)?,
            // ndjson's last line keeps the diagnostics before the blocks' part: readers
            // that compare it byte for byte (`--expect`, goldens) rely on its key order.
            None => m.serialize_field("diagnostics", diagnostics)?,
        }
        let blocks = BlocksPart {
            part: producer_id_blocks,
            blocks: lists.map(|l| &l.blocks),
        };
        m.serialize_field("producer_id_blocks", &blocks)?;
        let producers = ProducersPart {
            part: producer_ids,
            entries: lists.and_then(|l| l.producers.as_ref()),
        };
        m.serialize_field("producer_ids", &producers)?;
        m.serialize_field("brokers_by_address", brokers_by_address)?;
        m.serialize_field("controllers", controllers)?;
        m.serialize_field("controller_timeline", controller_timeline)?;
        if let Some(log) = metadata_log {
            m.serialize_field("metadata_log", log)?;
        }
        if let Some(writes) = writes {
            m.serialize_field("writes", writes)?;
        }
        if lists.is_some() {
            m.serialize_field("diagnostics", diagnostics)?;
        }
        m.end()
    }
}

/// `producer_id_blocks`, with `blocks` in place of its own (none without them).
struct BlocksPart<'a> {
    part: &'a ProducerIdBlocks,
    blocks: Option<&'a Spilled<'a, BlockOrder>>,
}

impl Serialize for BlocksPart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ProducerIdBlocks {
            usual_len,
            slow_threshold_us,
            blocks: _,
            findings,
        } = self.part;
        let mut m = serializer.serialize_struct("ProducerIdBlocks", 4)?;
        m.serialize_field("usual_len", usual_len)?;
        m.serialize_field("slow_threshold_us", slow_threshold_us)?;
        if let Some(blocks) = self.blocks {
            m.serialize_field("blocks", blocks)?;
        }
        m.serialize_field("findings", findings)?;
        m.end()
    }
}

/// `producer_ids`, with `entries` in place of its own (none without them).
struct ProducersPart<'a> {
    part: &'a ProducerIds,
    entries: Option<&'a Spilled<'a, ExchangeOrder>>,
}

impl Serialize for ProducersPart<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ProducerIds {
            summary,
            end_txn,
            entries: _,
        } = self.part;
        let mut m = serializer.serialize_struct("ProducerIds", 3)?;
        m.serialize_field("summary", summary)?;
        if let Some(end_txn) = end_txn {
            m.serialize_field("end_txn", end_txn)?;
        }
        if let Some(entries) = self.entries {
            m.serialize_field("entries", entries)?;
        }
        m.end()
    }
}
