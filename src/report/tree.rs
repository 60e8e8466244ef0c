//! `--format tree`: each AllocateProducerIds request and response in packet order, drawn
//! as the seed document draws a message: the object tree with wire types, values,
//! `[offset, size]` and the schema's descriptions, then the bytes as a hex dump.
//!
//! The tree comes from decoding the captured bytes again with the same decoder that
//! filled the report, this time with a [`Recorder`] listening.

use std::fmt::Write as _;

use super::model::{Exchange, Report};
use crate::kafka::allocate_producer_ids::{decode_request_with, decode_response_with};
use crate::kafka::header::RequestPrefix;
use crate::kafka::layout::{Node, Recorder};

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
fn message(ex: &Exchange, is_request: bool, out: &mut String) {
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

/// The whole tree view of a report.
pub fn render(report: &Report) -> String {
    let mut messages: Vec<(u64, &Exchange, bool)> = Vec::new();
    for ex in &report.exchanges {
        messages.push((ex.request.frame, ex, true));
        if let Some(resp) = &ex.response {
            messages.push((resp.frame, ex, false));
        }
    }
    // Packet order; a request before a response completed by the same packet.
    messages.sort_by_key(|(frame, ex, is_request)| {
        (*frame, !*is_request, ex.connection, ex.correlation_id)
    });
    let mut out = String::new();
    for (_, ex, is_request) in messages {
        message(ex, is_request, &mut out);
    }
    if out.is_empty() {
        out.push_str("no AllocateProducerIds messages in the capture\n");
    }
    out
}
