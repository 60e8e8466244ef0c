//! Exchanges serialized as JSON as they complete (on the analysis thread), and the JSON
//! report written around them. What is held until the end is their text, a few hundred
//! bytes each, rather than their decoded and converted forms, and the serialization runs
//! beside the reading of the capture instead of after it.
//!
//! The bytes written are exactly those of `serde_json` on the whole [`Report`], compact
//! or pretty (a test holds the two side by side).

use std::io::{self, Write};

use serde::Serialize;

use super::model::{Capture, Diagnostic, ProducerIdBlocks, Report, Summary, Tool};
use crate::pairing;

/// Where one serialized exchange sits, and the key it is ordered by in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    request_frame: u64,
    connection: u64,
    correlation_id: i32,
    start: usize,
    end: usize,
}

/// The report's exchanges as JSON text, in the order they completed.
#[derive(Debug)]
pub struct SerializedExchanges {
    pretty: bool,
    bytes: Vec<u8>,
    scratch: Vec<u8>,
    entries: Vec<Entry>,
    error: Option<String>,
}

/// Indentation of an exchange in the pretty report: an element of a top-level array.
const PRETTY_DEPTH_INDENT: &[u8] = b"    ";

impl SerializedExchanges {
    /// `pretty`: as `serde_json::to_writer_pretty` lays the report out; otherwise compact.
    pub fn new(pretty: bool) -> Self {
        Self {
            pretty,
            bytes: Vec::new(),
            scratch: Vec::new(),
            entries: Vec::new(),
            error: None,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of JSON held.
    pub fn held_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Converts one exchange to the report's form and serializes it.
    pub fn push(&mut self, ex: &pairing::Exchange) {
        let model = super::exchange(ex);
        let start = self.bytes.len();
        let result = if self.pretty {
            self.scratch.clear();
            let result = serde_json::to_writer_pretty(&mut self.scratch, &model);
            // Every line after the first moves right to the exchange's depth in the
            // report (JSON strings hold no raw newline, so each one is layout).
            let mut lines = self.scratch.split(|b| *b == b'\n');
            if let Some(first) = lines.next() {
                self.bytes.extend_from_slice(first);
            }
            for line in lines {
                self.bytes.push(b'\n');
                self.bytes.extend_from_slice(PRETTY_DEPTH_INDENT);
                self.bytes.extend_from_slice(line);
            }
            result
        } else {
            serde_json::to_writer(&mut self.bytes, &model)
        };
        if let Err(e) = result {
            self.bytes.truncate(start);
            self.error.get_or_insert_with(|| e.to_string());
            return;
        }
        self.entries.push(Entry {
            request_frame: ex.request_meta.frame,
            connection: ex.endpoints.connection,
            correlation_id: ex.correlation_id,
            start,
            end: self.bytes.len(),
        });
    }

    /// Writes `report` as JSON with these exchanges in place of its own (which are
    /// ignored): ordered by request frame, connection and correlation id, as
    /// [`super::build`] orders them.
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
        struct Tail<'a> {
            producer_id_blocks: &'a ProducerIdBlocks,
            diagnostics: &'a [Diagnostic],
        }
        let head = Head {
            format_version: report.format_version,
            tool: &report.tool,
            captures: &report.captures,
            summary: &report.summary,
        };
        let tail = Tail {
            producer_id_blocks: &report.producer_id_blocks,
            diagnostics: &report.diagnostics,
        };
        self.entries.sort_unstable();
        let pretty = self.pretty;
        let head = if pretty {
            serde_json::to_vec_pretty(&head)
        } else {
            serde_json::to_vec(&head)
        }?;
        // The head object without its closing brace (and, pretty, the newline before it).
        let open = head
            .strip_suffix(if pretty { &b"\n}"[..] } else { &b"}"[..] })
            .unwrap_or(&head);
        out.write_all(open)?;
        out.write_all(if pretty {
            b",\n  \"exchanges\": ["
        } else {
            b",\"exchanges\":["
        })?;
        for (i, entry) in self.entries.iter().enumerate() {
            let separator: &[u8] = match (pretty, i) {
                (true, 0) => b"\n    ",
                (true, _) => b",\n    ",
                (false, 0) => b"",
                (false, _) => b",",
            };
            out.write_all(separator)?;
            out.write_all(self.bytes.get(entry.start..entry.end).unwrap_or_default())?;
        }
        out.write_all(if pretty && !self.entries.is_empty() {
            b"\n  ],"
        } else {
            b"],"
        })?;
        // The tail object without its opening brace, streamed (its block list is long).
        let mut rest = SkipFirst {
            inner: out,
            skipped: false,
        };
        if pretty {
            serde_json::to_writer_pretty(&mut rest, &tail)
        } else {
            serde_json::to_writer(&mut rest, &tail)
        }
        .map_err(io::Error::from)
    }
}

/// Drops the first byte written through it.
struct SkipFirst<'a> {
    inner: &'a mut dyn Write,
    skipped: bool,
}

impl Write for SkipFirst<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.skipped {
            let Some((_, rest)) = buf.split_first() else {
                return Ok(0);
            };
            self.skipped = true;
            return self.inner.write(rest).map(|n| n + 1);
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
