//! The records inside a batch (`DefaultRecord`): the records section, inflated -> each
//! record's offset delta, key and value, borrowed. Refuses (with a reason) a record whose
//! length does not match its fields, a count that does not match the batch's, and bytes
//! left after the last record.

use super::Reason;
use crate::kafka::reader::Reader;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub offset_delta: i32,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
}

/// Every record of a batch whose header says `count`.
pub fn parse(bytes: &[u8], count: i32) -> Result<Vec<Record<'_>>, Reason> {
    let mut c = Reader::new(bytes);
    // no capacity from `count`: a record takes at least 7 bytes, so `bytes` bounds it
    let mut out = Vec::with_capacity((count.max(0) as usize).min(bytes.len() / 7));
    for i in 0..count {
        let len = c.varint("record length")?;
        let len = usize::try_from(len).map_err(|_| format!("record {i}: length {len}"))?;
        let body = c.slice("record", len)?;
        out.push(one(body).map_err(|e| format!("record {i}: {e}"))?);
    }
    if c.remaining() > 0 {
        return Err(format!("{} bytes after the batch's {count} records", c.remaining()).into());
    }
    Ok(out)
}

fn one(body: &[u8]) -> Result<Record<'_>, Reason> {
    let mut c = Reader::new(body);
    let _attributes = c.i8("attributes")?;
    let _timestamp_delta = c.varlong("timestampDelta")?;
    let offset_delta = c.varint("offsetDelta")?;
    let key = c.varint_bytes("key")?;
    let value = c.varint_bytes("value")?;
    let headers = c.varint("header count")?;
    if headers < 0 {
        return Err(format!("header count {headers}").into());
    }
    for _ in 0..headers {
        match c.varint_bytes("header key")? {
            Some(_) => {}
            None => return Err("a header with a null key".into()),
        }
        c.varint_bytes("header value")?;
    }
    if c.remaining() > 0 {
        return Err(format!("{} bytes past its fields, inside its length", c.remaining()).into());
    }
    Ok(Record {
        offset_delta,
        key,
        value,
    })
}
