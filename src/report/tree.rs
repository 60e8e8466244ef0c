//! `--format tree`: each message pidshark decodes whole (AllocateProducerIds and
//! InitProducerId requests and responses) in packet order, drawn as an annotated
//! dissection: the object tree with wire types, values, `[offset, size]` and the schema's
//! descriptions, then the bytes as a hex dump. With `--frame N`, a cluster message (Fetch,
//! Vote, BrokerHeartbeat, ...) too: the fields its decoder reads, as [`trace`] records
//! them, and what it passes over, unread.
//!
//! The tree comes from decoding the captured bytes again with the same decoder that
//! filled the report, this time with a [`Recorder`] listening.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::address;
use super::model::{Exchange, Report};
use super::sink::{Analysed, Needs, Sink};
use super::spill::{field, OrderKey, Ordered, DEFAULT_RUN_BYTES};
use crate::analysis::Block;
use crate::kafka::apis::{self, Api, ClusterFact};
use crate::kafka::decoded::Undecoded;
use crate::kafka::header::{self, RequestPrefix};
use crate::kafka::layout::{Node, Recorder};
use crate::kafka::schema::Message;
use crate::kafka::tables::ApiKey;
use crate::kafka::trace;
use crate::kafka::KeepRaw;
use crate::pairing::{self, ApiExchange, ClusterEvent};

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

/// A recorded value as the tree shows it: an optional one as itself or `null`, a string
/// passed over as such.
fn shown(value: &str) -> String {
    match value {
        "()" => "(passed over)".to_owned(),
        "None" => "null".to_owned(),
        v if v.starts_with('[') => hex_of_list(v).unwrap_or_else(|| v.to_owned()),
        v => v
            .strip_prefix("Some(")
            .and_then(|inner| inner.strip_suffix(')'))
            .unwrap_or(v)
            .to_owned(),
    }
}

/// `[241, 163, 0]` (a UUID's bytes, as recorded) as `0xf1a300`.
fn hex_of_list(list: &str) -> Option<String> {
    let inner = list.strip_prefix('[')?.strip_suffix(']')?;
    let bytes: Option<Vec<u8>> = inner.split(", ").map(|b| b.parse().ok()).collect();
    Some(format!(
        "0x{}",
        bytes?
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ))
}

/// Bytes a cluster decoder passes over between two fields it reads (a tagged field it
/// does not know), at `offset` of the message.
fn passed_over(offset: usize, len: usize) -> Node {
    leaf(
        "(passed over)",
        "",
        None,
        offset + SIZE_LEN,
        len,
        "bytes the decoder skips: a tagged field it does not read",
    )
}

/// A cluster message's tree: what its decoder reads, field by field as [`trace`] records
/// it, then what it passes over, unread.
fn cluster_layout(is_request: bool, (api, version): (ApiKey, i16), raw: &[u8], rec: &mut Recorder) {
    let again = || ClusterFact::decode_again(is_request, (api, version), raw);
    let (decoded, mut reads) = trace::recording(again);
    let base = raw.as_ptr() as usize;
    // in wire order (a tagged field's data is read after its tag and size), the bytes
    // between two reads drawn as passed over
    reads.sort_by_key(|r| r.at);
    let mut end = 0;
    for read in &reads {
        let offset = read.at.saturating_sub(base);
        if offset < end {
            continue; // inside a read already drawn
        }
        if offset > end {
            rec.push(passed_over(end, offset - end));
        }
        end = offset + read.len;
        rec.push(leaf(
            read.field,
            read.wire,
            Some(shown(&read.value)),
            offset + SIZE_LEN,
            read.len,
            "",
        ));
    }
    if let Err(err) = decoded {
        rec.error = Some(err.shifted(SIZE_LEN).to_string());
    } else if end < raw.len() {
        rec.push(leaf(
            "(not read)",
            "",
            None,
            end + SIZE_LEN,
            raw.len() - end,
            "pidshark reads this message only as far as the facts it takes from it",
        ));
    }
}

/// The tree of one frame: root, `Frame` with its size, then what the decoder reads.
fn layout(api: ApiKey, is_request: bool, raw: &[u8], version: i16) -> (Node, Option<String>) {
    let total = raw.len() + SIZE_LEN;
    let side = if is_request { "Request" } else { "Response" };
    let name = format!("{}{side}", api.name());
    let root = leaf(&name, &format!("message v{version}"), None, 0, total, "");
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
    if !apis::pairs(api) {
        cluster_layout(is_request, (api, version), raw, &mut rec);
    } else if !is_request {
        apis::decode_paired_with((api, version), false, raw, &mut rec);
    } else {
        match RequestPrefix::parse(raw) {
            Ok(prefix) => apis::decode_paired_with((api, prefix.api_version), true, raw, &mut rec),
            Err(err) => rec.error = Some(err.to_string()),
        }
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

/// One message to draw, with where it sits and what it answers.
struct Drawn<'a> {
    api: ApiKey,
    is_request: bool,
    version: i16,
    connection: u64,
    /// Sender and receiver.
    ends: (String, String),
    frame: u64,
    first_frame: u64,
    timestamp: String,
    correlation_id: i32,
    /// `response in frame 40`, `request in frame 34`, `no response in the capture`.
    other: String,
    raw: &'a [u8],
    problem: Option<String>,
}

impl<'a> Drawn<'a> {
    /// A message of an AllocateProducerIds exchange; `None` for a response not there.
    fn allocate(ex: &'a Exchange, is_request: bool) -> Option<Self> {
        let (client, server) = (ex.client.clone(), ex.server.clone());
        let (ends, frames, timestamp, raw, other, problem) = if is_request {
            let r = &ex.request;
            let other = match &ex.response {
                Some(resp) => format!("response in frame {}", resp.frame),
                None => "no response in the capture".to_owned(),
            };
            let frames = (r.frame, r.first_frame);
            (
                (client, server),
                frames,
                &r.timestamp,
                &r.raw,
                other,
                &r.decode_error,
            )
        } else {
            let r = ex.response.as_ref()?;
            let other = format!("request in frame {}", ex.request.frame);
            let frames = (r.frame, r.first_frame);
            (
                (server, client),
                frames,
                &r.timestamp,
                &r.raw,
                other,
                &r.decode_error,
            )
        };
        Some(Self {
            api: ApiKey::ALLOCATE_PRODUCER_IDS,
            is_request,
            version: ex.request.api_version,
            connection: ex.connection,
            ends,
            frame: frames.0,
            first_frame: frames.1,
            timestamp: timestamp.clone(),
            correlation_id: ex.correlation_id,
            other,
            raw,
            problem: problem.clone(),
        })
    }

    /// A message of an exchange of a paired API other than AllocateProducerIds (drawn
    /// from its report entry); `None` for a response not there.
    fn paired<A: Api>(px: &'a ApiExchange<A>, is_request: bool) -> Option<Self> {
        let (client, server) = (address(px.endpoints.client), address(px.endpoints.server));
        let response = px.outcome.response();
        let (ends, meta, raw, other, problem) = if is_request {
            let other = match response {
                Some((meta, _)) => format!("response in frame {}", meta.frame),
                None => "no response in the capture".to_owned(),
            };
            let problem = px.request.problem();
            let raw = px.request.raw();
            ((client, server), &px.request_meta, raw, other, problem)
        } else {
            let (meta, r) = response?;
            let other = format!("request in frame {}", px.request_meta.frame);
            ((server, client), meta, r.raw(), other, r.problem())
        };
        Some(Self {
            api: <A::Request as Message>::API,
            is_request,
            version: px.api_version,
            connection: px.endpoints.connection,
            ends,
            frame: meta.frame,
            first_frame: meta.first_frame,
            timestamp: meta.timestamp.to_rfc3339(),
            correlation_id: px.correlation_id,
            other,
            raw,
            problem: problem.map(ToString::to_string),
        })
    }

    /// A cluster message whose bytes were kept; `None` without them.
    fn cluster(ev: &'a ClusterEvent) -> Option<Self> {
        let kept = ev.kept.as_deref()?;
        let (client, server) = (address(ev.endpoints.client), address(ev.endpoints.server));
        let correlation_id = match kept.is_request {
            true => RequestPrefix::parse(&kept.bytes).map(|p| p.correlation_id),
            false => header::response_correlation_id(&kept.bytes),
        };
        Some(Self {
            api: kept.api,
            is_request: kept.is_request,
            version: kept.version,
            connection: ev.endpoints.connection,
            ends: match kept.is_request {
                true => (client, server),
                false => (server, client),
            },
            frame: ev.meta.frame,
            first_frame: ev.meta.first_frame,
            timestamp: ev.meta.timestamp.to_rfc3339(),
            correlation_id: correlation_id.ok()?,
            other: "read as far as its facts".to_owned(),
            raw: &kept.bytes,
            problem: None,
        })
    }

    fn order(&self) -> MessageOrder {
        MessageOrder {
            frame: self.frame,
            is_response: !self.is_request,
            connection: self.connection,
            correlation_id: self.correlation_id,
        }
    }

    /// Whether `--frame` (when given) asks for this message.
    fn asked(&self, only_frame: Option<u64>) -> bool {
        only_frame.is_none_or(|f| (self.first_frame..=self.frame).contains(&f))
    }

    fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        let what = if self.is_request {
            "request"
        } else {
            "response"
        };
        let (frame, first_frame) = (self.frame, self.first_frame);
        let frames = if first_frame == frame {
            format!("frame {frame}")
        } else {
            format!("frames {first_frame}-{frame}")
        };
        let _ = writeln!(
            out,
            "== {} {what} · connection {} · {} -> {} · {frames} · {} · correlation id {} · {}",
            self.api.name(),
            self.connection,
            self.ends.0,
            self.ends.1,
            self.timestamp,
            self.correlation_id,
            self.other,
        );
        if self.raw.is_empty() {
            let _ = writeln!(
                out,
                "(the message was not kept: {})",
                self.problem.as_deref().unwrap_or("no bytes")
            );
            out.push('\n');
            return;
        }
        let (tree, error) = layout(self.api, self.is_request, self.raw, self.version);
        render_tree(&tree, out);
        if let Some(error) = error {
            let _ = writeln!(out, "!! decoding stopped: {error}");
        } else if let Some(problem) = &self.problem {
            let _ = writeln!(out, "!! {problem}");
        }
        out.push('\n');
        hex_dump(&frame_bytes(self.raw), out);
        out.push('\n');
    }
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

    fn draw(&mut self, drawn: &Drawn<'_>) -> io::Result<()> {
        if !drawn.asked(self.only_frame) {
            return Ok(());
        }
        self.messages.push(drawn.order(), |out| {
            out.extend(drawn.text().as_bytes());
            Ok(())
        })
    }

    fn allocate(&mut self, ex: &pairing::Exchange, _block: Option<&Block>) -> io::Result<()> {
        let ex = super::exchange(ex);
        for is_request in [true, false] {
            if let Some(drawn) = Drawn::allocate(&ex, is_request) {
                self.draw(&drawn)?;
            }
        }
        Ok(())
    }

    fn producer(&mut self, granting: &pairing::Granting) -> io::Result<()> {
        for is_request in [true, false] {
            let drawn = match granting {
                pairing::Granting::InitProducerId(ex) => Drawn::paired(ex, is_request),
                pairing::Granting::EndTxn(ex) => Drawn::paired(ex, is_request),
            };
            if let Some(drawn) = drawn {
                self.draw(&drawn)?;
            }
        }
        Ok(())
    }
}

impl Sink for TreeSink {
    fn needs(&self) -> Needs {
        Needs {
            blocks_in_report: false,
            // the cluster's messages are drawn only for `--frame`
            raw_messages: match self.only_frame {
                Some(_) => KeepRaw::Every,
                None => KeepRaw::ProducerIds,
            },
        }
    }

    fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
        match analysed {
            Analysed::Allocate(ex, block) => self.allocate(ex, block),
            Analysed::Producer(granting, _) => self.producer(granting),
        }
    }

    /// A cluster message is drawn when `--frame` asks for it: the tree of a capture is
    /// its producer-id messages.
    fn cluster(&mut self, ev: &ClusterEvent) -> io::Result<()> {
        match Drawn::cluster(ev).filter(|_| self.only_frame.is_some()) {
            Some(drawn) => self.draw(&drawn),
            None => Ok(()),
        }
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
                None => w.write_all(
                    b"no AllocateProducerIds, InitProducerId or EndTxn messages in the capture\n",
                )?,
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
            Some(_) => format!(" · {}", b.delivery.name().words()),
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
