//! Exchanges and blocks serialized as JSON as they complete (on the analysis thread), and
//! the JSON report written around them. What is held until the end is their text, a few
//! hundred bytes each, rather than their decoded and converted forms, and the
//! serialization runs beside the reading of the capture instead of after it.
//!
//! The bytes written are exactly those of `serde_json` on the whole [`Report`], compact
//! or pretty (a test holds the two side by side for every fixture).

use std::io::{self, Write};

use serde::Serialize;

use super::model::{Capture, Diagnostic, PidFinding, ProducerIdBlocks, Report, Summary, Tool};
use crate::analysis::Block;
use crate::capture::Timestamp;
use crate::pairing;

/// Bytes of serialized items per chunk: chunks are filled and never moved, so that
/// holding hundreds of megabytes costs no reallocation copies.
const CHUNK_LEN: usize = 1 << 20;

/// Items of one array of the report, serialized one by one in the order they come and
/// ordered by `K` (then arrival) when written.
#[derive(Debug)]
struct List<K> {
    /// Indentation of the array's elements in the pretty report.
    indent: &'static [u8],
    /// Filled chunks, then the one being filled (an item never spans two).
    chunks: Vec<Vec<u8>>,
    /// Sort key, arrival number, chunk and byte range of each item.
    entries: Vec<(K, usize, u32, u32, u32)>,
}

impl<K: Ord + Copy> List<K> {
    fn new(indent: &'static [u8]) -> Self {
        Self {
            indent,
            chunks: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Appends one item: `compact` writes its compact JSON (the same bytes as
    /// `serde_json::to_writer`).
    fn push<T: Serialize>(
        &mut self,
        key: K,
        item: &T,
        compact: fn(&mut Vec<u8>, &T),
        pretty: bool,
        scratch: &mut Vec<u8>,
    ) -> serde_json::Result<()> {
        if self.chunks.last().is_none_or(|c| c.len() >= CHUNK_LEN) {
            self.chunks
                .push(Vec::with_capacity(CHUNK_LEN + CHUNK_LEN / 8));
        }
        let chunk_index = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            return Ok(());
        };
        let start = chunk.len();
        let result = if pretty {
            scratch.clear();
            let result = serde_json::to_writer_pretty(&mut *scratch, item);
            indent_into(chunk, scratch, self.indent);
            result
        } else {
            compact(chunk, item);
            Ok(())
        };
        if result.is_err() {
            chunk.truncate(start);
            return result;
        }
        let end = chunk.len();
        // Chunks stay far below 4 GiB (one item is at most a decoded message's JSON).
        let (Ok(chunk_index), Ok(start32), Ok(end32)) = (
            u32::try_from(chunk_index),
            u32::try_from(start),
            u32::try_from(end),
        ) else {
            chunk.truncate(start);
            return Err(serde::ser::Error::custom(
                "serialized exchanges past 4 GiB per chunk",
            ));
        };
        let arrival = self.entries.len();
        self.entries
            .push((key, arrival, chunk_index, start32, end32));
        result
    }

    fn item(&self, chunk: u32, start: u32, end: u32) -> &[u8] {
        self.chunks
            .get(chunk as usize)
            .and_then(|c| c.get(start as usize..end as usize))
            .unwrap_or_default()
    }

    /// The array, `[` to `]`, its items in key order.
    fn write(&mut self, pretty: bool, out: &mut dyn Write) -> io::Result<()> {
        self.entries
            .sort_unstable_by_key(|(key, arrival, ..)| (*key, *arrival));
        out.write_all(b"[")?;
        for (i, (_, _, chunk, start, end)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            if pretty {
                out.write_all(b"\n")?;
                out.write_all(self.indent)?;
            }
            out.write_all(self.item(*chunk, *start, *end))?;
        }
        if pretty && !self.entries.is_empty() {
            out.write_all(b"\n")?;
            out.write_all(self.indent.get(2..).unwrap_or_default())?;
        }
        out.write_all(b"]")
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

/// The report's exchanges and blocks as JSON text.
#[derive(Debug)]
pub struct SerializedExchanges {
    pretty: bool,
    /// By request frame, connection, correlation id, as [`super::build`] orders them.
    exchanges: List<(u64, u64, i32)>,
    /// By response time and frame, as the analysis orders them.
    blocks: List<(Timestamp, u64)>,
    scratch: Vec<u8>,
    error: Option<String>,
}

impl SerializedExchanges {
    /// `pretty`: as `serde_json::to_writer_pretty` lays the report out; otherwise compact.
    pub fn new(pretty: bool) -> Self {
        Self {
            pretty,
            // elements of `exchanges` (depth 2) and of `producer_id_blocks.blocks` (3)
            exchanges: List::new(b"    "),
            blocks: List::new(b"      "),
            scratch: Vec::new(),
            error: None,
        }
    }

    /// Exchanges held.
    pub fn len(&self) -> usize {
        self.exchanges.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exchanges.entries.is_empty()
    }

    fn note(&mut self, result: serde_json::Result<()>) {
        if let Err(e) = result {
            self.error.get_or_insert_with(|| e.to_string());
        }
    }

    /// Converts one exchange to the report's form and serializes it.
    pub fn push(&mut self, ex: &pairing::Exchange) {
        let key = (
            ex.request_meta.frame,
            ex.endpoints.connection,
            ex.correlation_id,
        );
        let result = self.exchanges.push(
            key,
            &super::exchange(ex),
            super::compact::exchange,
            self.pretty,
            &mut self.scratch,
        );
        self.note(result);
    }

    /// Converts one block to the report's form and serializes it.
    pub fn push_block(&mut self, block: &Block) {
        let key = (block.timestamp, block.response_frame);
        let result = self.blocks.push(
            key,
            &super::pid_block(block),
            super::compact::pid_block,
            self.pretty,
            &mut self.scratch,
        );
        self.note(result);
    }

    /// Writes `report` as JSON with these exchanges and blocks in place of its own
    /// (which are ignored).
    pub fn write_report(mut self, report: &Report, out: &mut dyn Write) -> io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(io::Error::other(format!(
                "an exchange could not be serialized: {e}"
            )));
        }
        #[derive(Serialize)]
        struct Head<'a> {
            format_version: u32,
            tool: &'a Tool,
            captures: &'a [Capture],
            summary: &'a Summary,
        }
        #[derive(Serialize)]
        struct BlocksHead {
            usual_len: Option<i32>,
            slow_threshold_us: Option<f64>,
        }
        #[derive(Serialize)]
        struct BlocksTail<'a> {
            findings: &'a [PidFinding],
        }
        #[derive(Serialize)]
        struct Tail<'a> {
            diagnostics: &'a [Diagnostic],
        }
        let pretty = self.pretty;
        // Every field named, none skipped with `..`: a field added to the report fails
        // to compile here until it is written too.
        let Report {
            format_version,
            tool,
            captures,
            summary,
            exchanges: _,
            producer_id_blocks,
            diagnostics,
        } = report;
        let ProducerIdBlocks {
            usual_len,
            slow_threshold_us,
            blocks: _,
            findings,
        } = producer_id_blocks;
        // Each part is an object written without its braces: `{"a":1,"b":2}` gives
        // `"a":1,"b":2`, pretty at depth 1 or 2.
        let fields = |value: &dyn erased::Json, depth: usize| -> io::Result<Vec<u8>> {
            value.inner_fields(pretty, depth)
        };
        out.write_all(b"{")?;
        out.write_all(&fields(
            &Head {
                format_version: *format_version,
                tool,
                captures,
                summary,
            },
            1,
        )?)?;
        out.write_all(&key(pretty, 1, "exchanges"))?;
        self.exchanges.write(pretty, out)?;
        out.write_all(&key(pretty, 1, "producer_id_blocks"))?;
        out.write_all(b"{")?;
        out.write_all(&fields(
            &BlocksHead {
                usual_len: *usual_len,
                slow_threshold_us: *slow_threshold_us,
            },
            2,
        )?)?;
        out.write_all(&key(pretty, 2, "blocks"))?;
        self.blocks.write(pretty, out)?;
        out.write_all(b",")?;
        out.write_all(&fields(&BlocksTail { findings }, 2)?)?;
        out.write_all(if pretty { b"\n  }," } else { b"}," })?;
        out.write_all(&fields(&Tail { diagnostics }, 1)?)?;
        out.write_all(if pretty { b"\n}" } else { b"}" })
    }
}

/// `,"name":` as it follows an earlier field at `depth`.
fn key(pretty: bool, depth: usize, name: &str) -> Vec<u8> {
    if pretty {
        format!(",\n{}\"{name}\": ", "  ".repeat(depth)).into_bytes()
    } else {
        format!(",\"{name}\":").into_bytes()
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
