//! The reads of decoders that take no [`super::layout::Visitor`] (the cluster's messages),
//! recorded on request for `--format tree`: each read with its field, wire type, bytes and
//! value. Where the bytes lie is an address, so that a reader over a part of a message (a
//! tagged field's data) places its reads in the message too.
//!
//! Only the cluster decoders' cursor and the tagged-field walk call [`read`]: the hot
//! decoders (headers, AllocateProducerIds, InitProducerId) read without asking, so that
//! the tree costs them nothing.

use std::cell::{Cell, RefCell};
use std::fmt;

use super::reader::{DecodeError, Reader};

/// One read: `at` is the address of its first byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub field: &'static str,
    pub wire: &'static str,
    pub at: usize,
    pub len: usize,
    pub value: String,
}

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static READS: RefCell<Vec<Read>> = const { RefCell::new(Vec::new()) };
}

/// Runs `decode` and gives what it returned with the reads it made, in order.
pub fn recording<T>(decode: impl FnOnce() -> T) -> (T, Vec<Read>) {
    let outer = RECORDING.with(|r| r.replace(true));
    let saved = READS.with(|r| std::mem::take(&mut *r.borrow_mut()));
    let out = decode();
    RECORDING.with(|r| r.set(outer));
    let reads = READS.with(|r| std::mem::replace(&mut *r.borrow_mut(), saved));
    (out, reads)
}

/// Whether a [`recording`] runs on this thread.
pub fn is_recording() -> bool {
    RECORDING.with(Cell::get)
}

/// `read` on `r`, recorded as `field` of wire type `wire` when a [`recording`] runs on
/// this thread.
pub fn read<'a, T: fmt::Debug>(
    r: &mut Reader<'a>,
    (field, wire): (&'static str, &'static str),
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    if !is_recording() {
        return read(r);
    }
    let (at, start) = (r.address(), r.position());
    let out = read(r);
    if let Ok(value) = &out {
        let read = Read {
            field,
            wire,
            at,
            len: r.position().saturating_sub(start),
            value: format!("{value:?}"),
        };
        READS.with(|reads| reads.borrow_mut().push(read));
    }
    out
}
