//! `--format tree`: each AllocateProducerIds request and response in packet order, drawn
//! as an annotated dissection: the object tree with wire types, values, `[offset, size]`
//! and the schema's descriptions, then the bytes as a hex dump.
//!
//! The tree comes from decoding the captured bytes again with the same decoder that
//! filled the report, this time with a [`Recorder`] listening.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::model::{Exchange, Report};
use super::sink::{Needs, Sink};
use super::spill::{field, OrderKey, Ordered, DEFAULT_RUN_BYTES};
use crate::analysis::{Block, Placed};
use crate::kafka::allocate_producer_ids::{decode_request_with, decode_response_with};
use crate::kafka::header::RequestPrefix;
use crate::kafka::layout::{Node, Recorder};
use crate::pairing;

const SIZE_LEN: usize = 4;

fn leaf(
    name: &str,
    kind: &str,
    value: Option<String>,
    offset: usize,
    size: usize,
    about: &str,
) -> Node {
    Node {
        name: name.to_owned(),
        kind: kind.to_owned(),
        value,
        offset,
        size,
        about: about.to_owned(),
        children: Vec::new(),
    }
}

/// The tree of one frame: root, `Frame` with its size, then what the decoder reads.
fn layout(is_request: bool, raw: &[u8], version: i16) -> (Node, Option<String>) {
    let total = raw.len() + SIZE_LEN;
    let name = if is_request {
        "AllocateProducerIdsRequest"
    } else {
        "AllocateProducerIdsResponse"
    };
    let root = leaf(name, &format!("message v{version}"), None, 0, total, "");
    let mut rec = Recorder::new(root, SIZE_LEN);
    let mut frame = leaf("Frame", "", None, 0, SIZE_LEN, "length-delimited framing");
    frame.children.push(leaf(
        "size",
        "int32",
        Some(raw.len().to_string()),
        0,
        SIZE_LEN,
        "number of bytes that follow, patched after encoding",
    ));
    rec.push(frame);
    if is_request {
        match RequestPrefix::parse(raw) {
            Ok(prefix) => {
                decode_request_with(raw, &prefix, &mut rec);
            }
            Err(err) => rec.error = Some(err.to_string()),
        }
    } else {
        decode_response_with(raw, version, &mut rec);
    }
    let error = rec.error.take();
    (rec.finish(), error)
}

/// One line per node: the tree drawing and name, then aligned columns.
struct Line {
    name: String,
    kind: String,
    value: String,
    span: String,
    about: String,
}

fn flatten(node: &Node, prefix: &str, last: bool, top: bool, out: &mut Vec<Line>) {
    let (branch, child_prefix) = if top {
        (String::new(), String::new())
    } else if last {
        (format!("{prefix}+-- "), format!("{prefix}    "))
    } else {
        (format!("{prefix}+-- "), format!("{prefix}|   "))
    };
    out.push(Line {
        name: format!("{branch}{}", node.name),
        kind: node.kind.clone(),
        value: node
            .value
            .as_ref()
            .map(|v| format!("= {v}"))
            .unwrap_or_default(),
        span: format!("[0x{:04x}, {}B]", node.offset, node.size),
        about: node.about.clone(),
    });
    for (idx, child) in node.children.iter().enumerate() {
        flatten(
            child,
            &child_prefix,
            idx + 1 == node.children.len(),
            false,
            out,
        );
    }
}

fn render_tree(root: &Node, out: &mut String) {
    let mut lines = Vec::new();
    flatten(root, "", true, true, &mut lines);
    let width = |f: fn(&Line) -> &str| {
        lines
            .iter()
            .map(|l| f(l).chars().count())
            .max()
            .unwrap_or(0)
    };
    let (wn, wk, wv, ws) = (
        width(|l| &l.name),
        width(|l| &l.kind),
        width(|l| &l.value),
        width(|l| &l.span),
    );
    for l in &lines {
        let row = format!(
            "{:wn$}  {:wk$}  {:wv$}  {:ws$}  {}",
            l.name, l.kind, l.value, l.span, l.about
        );
        out.push_str(row.trim_end());
        out.push('\n');
    }
}

/// 16 bytes per row: offset, hex, printable ASCII.
fn hex_dump(bytes: &[u8], out: &mut String) {
    for (row, chunk) in bytes.chunks(16).enumerate() {
        let hex: Vec<String> = chunk.iter().map(|b| format!("{b:02x}")).collect();
        let ascii: String = chunk
            .iter()
            .map(|b| {
                if b.is_ascii_graphic() || *b == b' ' {
                    *b as char
                } else {
                    '.'
                }
            })
            .collect();
        let _ = writeln!(out, "{:04x}  {:<47}  {ascii}", row * 16, hex.join(" "));
    }
}

/// The frame's bytes as captured: size prefix and message.
fn frame_bytes(raw: &[u8]) -> Vec<u8> {
    let mut bytes = u32::try_from(raw.len())
        .unwrap_or(u32::MAX)
        .to_be_bytes()
        .to_vec();
    bytes.extend_from_slice(raw);
    bytes
}

/// One message, introduced by where it sits and what it answers.
fn message(ex: &Exchange, is_request: bool) -> String {
    let mut text = String::new();
    message_into(ex, is_request, &mut text);
    text
}

fn message_into(ex: &Exchange, is_request: bool, out: &mut String) {
    let (frame, first_frame, timestamp, raw, other, problem) = if is_request {
        let r = &ex.request;
        let other = match &ex.response {
            Some(resp) => format!("response in frame {}", resp.frame),
            None => "no response in the capture".to_owned(),
        };
        (
            r.frame,
            r.first_frame,
            &r.timestamp,
            &r.raw,
            other,
            &r.decode_error,
        )
    } else {
        let Some(r) = &ex.response else { return };
        (
            r.frame,
            r.first_frame,
            &r.timestamp,
            &r.raw,
            format!("request in frame {}", ex.request.frame),
            &r.decode_error,
        )
    };
    let what = if is_request { "request" } else { "response" };
    let frames = if first_frame == frame {
        format!("frame {frame}")
    } else {
        format!("frames {first_frame}-{frame}")
    };
    let _ = writeln!(
        out,
        "== AllocateProducerIds {what} · connection {} · {} -> {} · {frames} · {timestamp} · correlation id {} · {other}",
        ex.connection,
        if is_request { &ex.client } else { &ex.server },
        if is_request { &ex.server } else { &ex.client },
        ex.correlation_id,
    );
    if raw.is_empty() {
        let _ = writeln!(
            out,
            "(the message was not kept: {})",
            problem.as_deref().unwrap_or("no bytes")
        );
        out.push('\n');
        return;
    }
    let (tree, error) = layout(is_request, raw, ex.request.api_version);
    render_tree(&tree, out);
    if let Some(error) = error {
        let _ = writeln!(out, "!! decoding stopped: {error}");
    } else if let Some(problem) = problem {
        let _ = writeln!(out, "!! {problem}");
    }
    out.push('\n');
    hex_dump(&frame_bytes(raw), out);
    out.push('\n');
}

/// Where a message stands in the tree view: packet order; a request before a response
/// completed by the same packet; then connection and correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct MessageOrder {
    frame: u64,
    is_response: bool,
    connection: u64,
    correlation_id: i32,
}

impl OrderKey for MessageOrder {
    const LEN: usize = 21;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend(self.frame.to_be_bytes());
        out.push(u8::from(self.is_response));
        out.extend(self.connection.to_be_bytes());
        out.extend(self.correlation_id.to_be_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        Self {
            frame: u64::from_be_bytes(field(bytes, 0)),
            is_response: field::<1>(bytes, 8) != [0],
            connection: u64::from_be_bytes(field(bytes, 9)),
            correlation_id: i32::from_be_bytes(field(bytes, 17)),
        }
    }
}

/// `--format tree`: each message drawn as its exchange comes, into a list in packet
/// order (off the heap past a bound, see [`Ordered`]), written at the end. Memory does
/// not grow with the number of exchanges.
pub struct TreeSink {
    messages: Ordered<MessageOrder>,
    /// `--frame`: only the message in this frame is drawn.
    only_frame: Option<u64>,
    out: Box<dyn Write + Send>,
}

impl TreeSink {
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            messages: Ordered::new(DEFAULT_RUN_BYTES),
            only_frame: None,
            out,
        }
    }

    /// Draws only the message with a byte in `frame` (`--frame`), not its whole exchange.
    pub fn only_frame(mut self, frame: Option<u64>) -> Self {
        self.only_frame = frame;
        self
    }
}

impl Sink for TreeSink {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: false,
        }
    }

    fn exchange(&mut self, ex: pairing::Exchange, _block: Option<&Block>) -> io::Result<()> {
        let ex = super::exchange(&ex);
        let order = |frame, is_response| MessageOrder {
            frame,
            is_response,
            connection: ex.connection,
            correlation_id: ex.correlation_id,
        };
        let drawn =
            |first: u64, last: u64| self.only_frame.is_none_or(|f| (first..=last).contains(&f));
        if drawn(ex.request.first_frame, ex.request.frame) {
            self.messages.push(order(ex.request.frame, false), |out| {
                out.extend(message(&ex, true).as_bytes());
                Ok(())
            })?;
        }
        if let Some(resp) = ex
            .response
            .as_ref()
            .filter(|r| drawn(r.first_frame, r.frame))
        {
            self.messages.push(order(resp.frame, true), |out| {
                out.extend(message(&ex, false).as_bytes());
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The tree shows AllocateProducerIds messages only.
    fn producer(&mut self, _px: pairing::ProducerIdExchange, _placed: &Placed) -> io::Result<()> {
        Ok(())
    }

    fn finish(&mut self, report: &mut Report) -> io::Result<()> {
        let messages = std::mem::replace(&mut self.messages, Ordered::new(1));
        let mut w = io::BufWriter::with_capacity(64 << 10, &mut self.out);
        let log_alone = report.captures.is_empty() && report.metadata_log.is_some();
        if messages.is_empty() && !log_alone {
            // With `--frame`, what that frame is instead.
            let frame_holds = report
                .filters
                .as_ref()
                .and_then(|f| f.frame_holds.as_deref())
                .filter(|_| self.only_frame.is_some());
            match frame_holds {
                Some(sentence) => writeln!(w, "{sentence}")?,
                None => w.write_all(b"no AllocateProducerIds messages in the capture\n")?,
            }
        }
        messages.write_each(|_, text| w.write_all(text))?;
        if let Some(log) = &report.metadata_log {
            write_committed(&mut w, log)?;
        }
        w.flush()
    }
}

/// Each ProducerIdsRecord of the metadata log as a tree of its fields, as its schema
/// (metadata record type 15, version 0) names them.
fn write_committed(w: &mut dyn Write, log: &super::model::MetadataLog) -> io::Result<()> {
    writeln!(
        w,
        "== metadata log · {} file(s) · {} ProducerIdsRecord(s)",
        log.files.len(),
        log.blocks.len()
    )?;
    for b in &log.blocks {
        let ids = match b.producer_id_start {
            Some(start) => format!("ids {start}..={}", b.next_producer_id.saturating_sub(1)),
            None => "first id not read".to_owned(),
        };
        // without a capture, nothing was delivered or not
        let delivery = match log.comparison {
            Some(_) => format!(" · {}", b.delivery.words()),
            None => String::new(),
        };
        writeln!(
            w,
            "ProducerIdsRecord  offset {} · leader epoch {} · {} · {ids}{delivery}",
            b.offset, b.leader_epoch, b.timestamp
        )?;
        writeln!(w, "+-- BrokerId          int32  = {}", b.broker_id)?;
        writeln!(w, "+-- BrokerEpoch       int64  = {}", b.broker_epoch)?;
        writeln!(w, "+-- NextProducerId    int64  = {}", b.next_producer_id)?;
    }
    Ok(())
}
