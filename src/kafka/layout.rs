//! The structure of a decoded message: every field with its wire type, value, offset and
//! size, as `--format tree` draws it.
//!
//! The decoder reports what it reads to a [`Visitor`]. Decoding for the report uses
//! [`Ignore`], which does nothing; the tree view decodes the same bytes with a
//! [`Recorder`], so both views come from one decoder. Offsets are relative to the start
//! of the frame (its size prefix included), so that they match the byte offsets a hex
//! dump of the frame shows.

use super::reader::{DecodeError, TaggedField};

/// Receives a message's structure while it is decoded. Offsets are relative to the
/// message (after the size prefix); the recorder shifts them.
pub trait Visitor {
    /// A group of fields starts (a header, a struct body, a tagged-field section).
    fn open(&mut self, _name: &'static str, _kind: &str, _about: &'static str, _offset: usize) {}
    /// The innermost open group ends before `end`.
    fn close(&mut self, _end: usize) {}
    /// Gives the innermost open group a value (a tagged-field section: its count).
    fn value(&mut self, _value: &dyn Fn() -> String) {}
    /// One field: `value` is called only by visitors that show it.
    fn field(
        &mut self,
        _name: &str,
        _wire_type: &'static str,
        _value: &dyn Fn() -> String,
        _span: (usize, usize),
        _about: &'static str,
    ) {
    }
    /// One tagged field, kept as raw bytes.
    fn tagged(&mut self, _field: &TaggedField, _span: (usize, usize)) {}
    /// Decoding stopped here.
    fn failed(&mut self, _error: &DecodeError) {}
}

/// Decoding for the report: nothing is recorded.
#[derive(Debug, Default)]
pub struct Ignore;

impl Visitor for Ignore {}

/// One node of the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    /// Wire type of a field (`int32`, `uvarint`, ...) or kind of a group (`v2`, `struct`).
    pub kind: String,
    pub value: Option<String>,
    /// From the start of the frame.
    pub offset: usize,
    pub size: usize,
    pub about: String,
    pub children: Vec<Self>,
}

/// Builds the tree of one frame. `base` is where the message starts in the frame (4).
#[derive(Debug)]
pub struct Recorder {
    base: usize,
    /// Open groups, outermost first; the first is the root.
    stack: Vec<Node>,
    /// Where decoding stopped, if it did.
    pub error: Option<String>,
}

impl Recorder {
    /// A recorder whose tree starts at `root`; message offsets are shifted by `base`.
    pub fn new(root: Node, base: usize) -> Self {
        Self {
            base,
            stack: vec![root],
            error: None,
        }
    }

    /// Adds a finished node under the innermost open group.
    pub fn push(&mut self, node: Node) {
        if let Some(parent) = self.stack.last_mut() {
            parent.children.push(node);
        }
    }

    /// The tree: groups still open (decoding stopped inside them) end at their last child.
    pub fn finish(mut self) -> Node {
        while self.stack.len() > 1 {
            let end = self
                .stack
                .last()
                .and_then(|n| n.children.last().map(|c| c.offset + c.size))
                .unwrap_or(self.base);
            self.close_at(end);
        }
        self.stack.pop().unwrap_or_default()
    }

    fn close_at(&mut self, end_in_frame: usize) {
        if self.stack.len() <= 1 {
            return;
        }
        if let Some(mut node) = self.stack.pop() {
            node.size = end_in_frame.saturating_sub(node.offset);
            self.push(node);
        }
    }
}

impl Visitor for Recorder {
    fn open(&mut self, name: &'static str, kind: &str, about: &'static str, offset: usize) {
        self.stack.push(Node {
            name: name.to_owned(),
            kind: kind.to_owned(),
            value: None,
            offset: self.base + offset,
            size: 0,
            about: about.to_owned(),
            children: Vec::new(),
        });
    }

    fn close(&mut self, end: usize) {
        self.close_at(self.base + end);
    }

    fn value(&mut self, value: &dyn Fn() -> String) {
        if self.stack.len() > 1 {
            if let Some(node) = self.stack.last_mut() {
                node.value = Some(value());
            }
        }
    }

    fn field(
        &mut self,
        name: &str,
        wire_type: &'static str,
        value: &dyn Fn() -> String,
        (offset, size): (usize, usize),
        about: &'static str,
    ) {
        self.push(Node {
            name: name.to_owned(),
            kind: wire_type.to_owned(),
            value: Some(value()),
            offset: self.base + offset,
            size,
            about: about.to_owned(),
            children: Vec::new(),
        });
    }

    fn tagged(&mut self, field: &TaggedField, (offset, size): (usize, usize)) {
        let hex: String = field.data.iter().map(|b| format!("{b:02x}")).collect();
        self.push(Node {
            name: format!("tag {}", field.tag),
            kind: "tagged_field".to_owned(),
            value: Some(format!("{} bytes 0x{hex}", field.data.len())),
            offset: self.base + offset,
            size,
            about: "unknown tagged field, kept as raw bytes".to_owned(),
            children: Vec::new(),
        });
    }

    fn failed(&mut self, error: &DecodeError) {
        self.error = Some(error.clone().shifted(self.base).to_string());
    }
}
