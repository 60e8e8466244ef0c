//! Items of one array of the report (serialized exchanges or blocks), taken in the order
//! they come and written in key order. They are held in memory up to a bound; past it,
//! what is held is sorted and written to a temporary file as a run, and runs are merged
//! when the array is written (one run is copied out whole). So the report's memory stays
//! flat however many exchanges the capture holds, and a capture that fits stays off the
//! disk.
//!
//! Items come nearly in key order, so once one run is written, each later spill appends
//! to it (the open run) what comes after its last key, keeping back in memory the last
//! items held, which later ones may still go before. Only an item later than all of
//! those starts a run of its own. A capture of control traffic makes one run, not one per
//! few megabytes: nothing is merged into longer runs at the end, and the one chunk held
//! between spills is filled again, not allocated anew.
//!
//! A run is a file of segments, each a head (its items' count and the length of their
//! text), an index (each item's key and length) and the items' text as the report lays
//! it out: each item but the run's first after the separator the list puts between two
//! items ([`Ordered::between`]). So the text of a list that is one run is the run's text
//! segments one after another, which the output copies whole ([`WholeRun`]); the index
//! serves only to merge runs.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, IoSlice, Read, Seek, SeekFrom, Write};

use super::out::ReportOut;
use crate::analysis::BlockOrder;
use crate::pairing::ExchangeOrder;
use crate::timestamp::Timestamp;

/// Bytes of serialized items per chunk: chunks are filled and never moved, so that
/// holding many megabytes costs no reallocation copies.
const CHUNK_LEN: usize = 1 << 20;
/// Items' bytes held in memory before they are written out as a run.
pub const DEFAULT_RUN_BYTES: usize = 4 << 20;
/// Items kept back at a spill, at most: the last of the open run's next items in key
/// order, which an item that comes later may still precede.
const KEPT_BACK: usize = 128;
/// Runs merged at once; past that, the earliest are first merged into one longer run.
const FAN_IN: usize = 64;
/// Read buffer per run while merging.
const RUN_BUFFER: usize = 64 << 10;
/// How far back an item is moved as it comes to keep what is held in key order. Items
/// come nearly in order (an exchange ends in its response's order and is listed in its
/// request's), so most need no sort at all; one that would go further leaves the rest to
/// a sort.
const MAX_STEPS_BACK: usize = 128;

/// A sort key written into runs as a fixed number of bytes.
pub trait OrderKey: Ord + Copy {
    const LEN: usize;
    fn put(&self, out: &mut Vec<u8>);
    /// The key `put` wrote; `bytes` is [`OrderKey::LEN`] long.
    fn get(bytes: &[u8]) -> Self;
}

/// Reads a fixed-size big-endian field from a key's bytes (written by `put`: never short).
pub fn field<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    bytes
        .get(at..at + N)
        .and_then(|b| b.try_into().ok())
        .unwrap_or([0; N])
}

// The keys of the report's lists: exchanges in report order, blocks by time.

impl OrderKey for ExchangeOrder {
    const LEN: usize = 20;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend(self.request_frame.to_be_bytes());
        out.extend(self.connection.to_be_bytes());
        out.extend(self.correlation_id.to_be_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        Self {
            request_frame: u64::from_be_bytes(field(bytes, 0)),
            connection: u64::from_be_bytes(field(bytes, 8)),
            correlation_id: i32::from_be_bytes(field(bytes, 16)),
        }
    }
}

impl OrderKey for BlockOrder {
    const LEN: usize = 21;
    fn put(&self, out: &mut Vec<u8>) {
        out.extend(self.timestamp.secs.to_be_bytes());
        out.extend(self.timestamp.nanos.to_be_bytes());
        out.push(u8::from(self.timestamp.nano));
        out.extend(self.response_frame.to_be_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        Self {
            timestamp: Timestamp {
                secs: i64::from_be_bytes(field(bytes, 0)),
                nanos: u32::from_be_bytes(field(bytes, 8)),
                nano: field::<1>(bytes, 12) != [0],
            },
            response_frame: u64::from_be_bytes(field(bytes, 13)),
        }
    }
}

/// The items, in memory and in runs.
#[derive(Debug)]
pub struct Ordered<K> {
    /// Filled chunks, then the one being filled (an item never spans two).
    chunks: Vec<Vec<u8>>,
    /// Key, chunk and byte range of each item held in memory: in key order (ties in
    /// arrival order) unless `unsorted`, else in arrival order.
    entries: Vec<(K, u32, u32, u32)>,
    unsorted: bool,
    held: usize,
    run_bytes: usize,
    /// Bytes held at which the next spill is made: `run_bytes` until the open run is
    /// made, then a chunk's worth (or less); twice as many after a failed spill.
    spill_at: usize,
    /// The run items are appended to while they come in key order; merged as the first
    /// run (its items came before any item of a later run with the same key).
    open: Option<OpenRun<K>>,
    /// Runs of items that came too late for the open run, earliest arrivals first.
    runs: Vec<Run>,
    /// The first runs of `runs` that are merges of others.
    merged: usize,
    /// Runs of late items at which those not merged yet are merged into one: each
    /// holds a temporary file open until the report is written, and a capture whose
    /// items keep coming late (a hostile one) must not use up the process's files.
    merge_at: usize,
    count: u64,
    /// What the list puts between two items: written before each item of a run but its
    /// first.
    between: Vec<u8>,
}

/// A temporary file of items in key order, in segments, and how many bytes of it are whole
/// segments.
#[derive(Debug)]
struct Run {
    file: File,
    len: u64,
}

/// The run spills append to, and the last key it holds.
#[derive(Debug)]
struct OpenRun<K> {
    run: Run,
    last: K,
}

impl<K: OrderKey> Ordered<K> {
    /// Holds up to `run_bytes` of items in memory before writing a run.
    pub fn new(run_bytes: usize) -> Self {
        Self {
            chunks: Vec::new(),
            entries: Vec::new(),
            unsorted: false,
            held: 0,
            run_bytes: run_bytes.max(1),
            spill_at: run_bytes.max(1),
            open: None,
            runs: Vec::new(),
            merged: 0,
            merge_at: FAN_IN,
            count: 0,
            between: Vec::new(),
        }
    }

    /// With `between` put between two items in the runs, as the list written will have
    /// it: a run's text is then the list's.
    pub fn between(self, between: Vec<u8>) -> Self {
        Self { between, ..self }
    }

    /// Items taken.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Runs written to temporary files so far.
    pub fn runs(&self) -> usize {
        self.runs.len() + usize::from(self.open.is_some())
    }

    /// Appends one item, whose bytes `write` appends to the buffer it is given (and only
    /// appends: what it wrote before an error is dropped).
    pub fn push(
        &mut self,
        key: K,
        write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.chunks.last().is_none_or(|c| c.len() >= CHUNK_LEN) {
            self.chunks
                .push(Vec::with_capacity(CHUNK_LEN + CHUNK_LEN / 8));
        }
        let chunk_index = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            return Ok(());
        };
        let start = chunk.len();
        if let Err(e) = write(chunk) {
            chunk.truncate(start);
            return Err(e);
        }
        let end = chunk.len();
        // A chunk stays far below 4 GiB: one item is at most a decoded message's text.
        let (Ok(chunk_index), Ok(start32), Ok(end32)) = (
            u32::try_from(chunk_index),
            u32::try_from(start),
            u32::try_from(end),
        ) else {
            chunk.truncate(start);
            return Err(io::Error::other("one item of the report past 4 GiB"));
        };
        self.entries.push((key, chunk_index, start32, end32));
        self.keep_order();
        self.held += end - start;
        self.count += 1;
        if self.held >= self.spill_at {
            if self.spill(true).is_ok() {
                self.spill_at = self.run_bytes.min(CHUNK_LEN);
                self.merge_late_runs()?;
            } else {
                // No room on disk (or no temporary directory): the items stay in memory,
                // and the next try waits for twice as many. The report is still written.
                self.spill_at = self.spill_at.saturating_mul(2);
            }
        }
        Ok(())
    }

    /// Merges the late runs not merged yet into one once there are [`Self::merge_at`]
    /// of them, and the merges into one once there are as many of those: at most twice
    /// that many files stay open. An error here loses the runs merged: the report is
    /// not written, and says why.
    fn merge_late_runs(&mut self) -> io::Result<()> {
        if self.runs.len() - self.merged >= self.merge_at {
            let unmerged = self.runs.split_off(self.merged);
            let (run, _) = merge_into_run::<K>(unmerged, &self.between)?;
            self.runs.push(run);
            self.merged += 1;
        }
        if self.merged >= self.merge_at {
            let merges = std::mem::take(&mut self.runs);
            let (run, _) = merge_into_run::<K>(merges, &self.between)?;
            self.runs.push(run);
            self.merged = 1;
        }
        Ok(())
    }

    /// Moves the item just pushed back to its place in key order, after the items of its
    /// key, if that is at most [`MAX_STEPS_BACK`] places back; else marks what is held
    /// unsorted.
    fn keep_order(&mut self) {
        if self.unsorted {
            return;
        }
        let from = self.entries.len().saturating_sub(MAX_STEPS_BACK + 1);
        let Some((&(key, ..), before)) = self.entries.get(from..).and_then(<[_]>::split_last)
        else {
            return;
        };
        if before.last().is_none_or(|(last, ..)| *last <= key) {
            return; // in order: the usual case
        }
        let at = before.partition_point(|(earlier, ..)| *earlier <= key);
        let further_back = at == 0
            && from
                .checked_sub(1)
                .and_then(|i| self.entries.get(i))
                .is_some_and(|(earlier, ..)| *earlier > key);
        if further_back {
            self.unsorted = true;
        } else if let Some(moved) = self.entries.get_mut(from + at..) {
            moved.rotate_right(1);
        }
    }

    /// Puts what is held in key order, ties in arrival order.
    fn sort(&mut self) {
        if std::mem::take(&mut self.unsorted) {
            self.entries.sort_by_key(|(key, ..)| *key);
        }
    }

    fn item(&self, chunk: u32, start: u32, end: u32) -> &[u8] {
        item_in(&self.chunks, chunk, start, end)
    }

    /// Sorts what is held (ties in arrival order) and writes it out: items before the open
    /// run's last key as a run of their own, the rest appended to the open run, but for
    /// the last few when `keep_back`. On an error nothing held is let go.
    fn spill(&mut self, keep_back: bool) -> io::Result<()> {
        self.sort();
        let late = match &self.open {
            Some(open) => self.entries.partition_point(|(key, ..)| *key < open.last),
            None => 0,
        };
        let kept_from = if keep_back {
            self.kept_back_from(late)
        } else {
            self.entries.len()
        };
        let (Some(too_late), Some(in_order)) =
            (self.entries.get(..late), self.entries.get(late..kept_from))
        else {
            return Ok(());
        };
        let late_run = match too_late {
            [] => None,
            items => {
                let mut run = Run {
                    file: tempfile::tempfile()?,
                    len: 0,
                };
                run.len = write_items(&mut run, items, &self.chunks, &self.between)?;
                Some(run)
            }
        };
        if let Some(&(last, ..)) = in_order.last() {
            let (mut run, before) = match self.open.take() {
                Some(open) => (open.run, Some(open.last)),
                None => (
                    Run {
                        file: tempfile::tempfile()?,
                        len: 0,
                    },
                    None,
                ),
            };
            match write_items(&mut run, in_order, &self.chunks, &self.between) {
                Ok(len) => {
                    run.len += len;
                    self.open = Some(OpenRun { run, last });
                }
                Err(e) => {
                    // What was written of these items is not the run's: cut off, or else
                    // left past `len`, where it is neither read nor kept on appending.
                    let _ = run.file.set_len(run.len);
                    self.open = before.map(|last| OpenRun { run, last });
                    return Err(e);
                }
            }
        }
        self.runs.extend(late_run);
        self.keep_only_from(kept_from);
        Ok(())
    }

    /// Where the items kept back at a spill begin: the last [`KEPT_BACK`] items held, at
    /// most, and not past `from`, nor more than half of what sets off a spill in bytes.
    fn kept_back_from(&self, from: usize) -> usize {
        let room = self.run_bytes.min(CHUNK_LEN) / 2;
        let mut bytes = 0;
        let mut kept_from = self.entries.len();
        for (i, (_, _, start, end)) in self.entries.iter().enumerate().rev().take(KEPT_BACK) {
            bytes += (end - start) as usize;
            if i < from || bytes > room {
                break;
            }
            kept_from = i;
        }
        kept_from
    }

    /// Lets go of the items held before `from`; those from it on move to the front of the
    /// first chunk, the one chunk kept, without a buffer between. The entries keep their
    /// room: the next spill's thousands would otherwise grow it again from the few kept.
    fn keep_only_from(&mut self, from: usize) {
        self.entries.drain(..from.min(self.entries.len()));
        let later_chunks = self.chunks.split_off(1.min(self.chunks.len()));
        // By where their bytes are: moved in that order, each lands at or before where it
        // was, never on bytes of an item still to move.
        let mut by_place: Vec<&mut (K, u32, u32, u32)> = self.entries.iter_mut().collect();
        by_place.sort_unstable_by_key(|(_, chunk, start, _)| (*chunk, *start));
        let mut at = 0u32;
        if let Some(first) = self.chunks.first_mut() {
            let first_ones = by_place.partition_point(|(_, chunk, ..)| *chunk == 0);
            let (in_first, in_later) = by_place.split_at_mut(first_ones);
            for (_, _, start, end) in in_first.iter_mut() {
                let bytes = *start as usize..*end as usize;
                if first.get(bytes.clone()).is_some() {
                    first.copy_within(bytes, at as usize); // at <= start: in the chunk too
                }
                (*start, *end) = (at, at + (*end - *start));
                at = *end;
            }
            first.truncate(at as usize);
            for (_, chunk, start, end) in in_later.iter_mut() {
                let bytes = item_in(&later_chunks, chunk.saturating_sub(1), *start, *end);
                first.extend_from_slice(bytes);
                // the first chunk holds at most half a chunk here: see `kept_back_from`
                (*chunk, *start, *end) = (0, at, first.len() as u32);
                at = *end;
            }
        }
        self.held = at as usize;
    }

    /// Hands every item to `each` in key order (ties in arrival order), with its index.
    pub fn write_each(
        mut self,
        mut each: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.runs.is_empty() && self.open.is_none() {
            self.sort();
            for (i, (_, chunk, start, end)) in self.entries.iter().enumerate() {
                each(i as u64, self.item(*chunk, *start, *end))?;
            }
            return Ok(());
        }
        if !self.entries.is_empty() {
            self.spill(false)?;
        }
        let open = self.open.take().map(|open| open.run);
        let runs: Vec<Run> = open.into_iter().chain(self.runs.drain(..)).collect();
        let between = std::mem::take(&mut self.between);
        drop(self); // the chunks' memory, before the merge's buffers
        let (runs, _) = fewer_runs::<K>(runs, &between)?;
        let mut index = 0u64;
        merge::<K>(runs, between.len(), |_, item| {
            let result = each(index, item);
            index += 1;
            result
        })
    }

    /// The items as one run, when they went to the disk in key order (the usual case
    /// past the bound): its text is the list's, to be copied whole. Otherwise the list
    /// back, for [`Self::write_each`]: held in memory, or in runs to merge.
    pub fn into_one_run(mut self) -> io::Result<Result<WholeRun, Self>> {
        if self.open.is_none() && self.runs.is_empty() {
            return Ok(Err(self));
        }
        if !self.entries.is_empty() {
            self.spill(false)?;
        }
        match self.open.take() {
            Some(OpenRun { run, .. }) if self.runs.is_empty() => Ok(Ok(WholeRun {
                run,
                index_entry: K::LEN + 4,
            })),
            open => {
                self.open = open;
                Ok(Err(self))
            }
        }
    }
}

/// A list's items in one run, in key order: its segments' text is the list's text.
#[derive(Debug)]
pub struct WholeRun {
    run: Run,
    /// Bytes of an item's entry in a segment's index.
    index_entry: usize,
}

impl WholeRun {
    /// Copies the list's text (every item, separators between them) into `out`, a
    /// segment's text at a time, past their heads and indexes. Each segment is found
    /// from where the last one ended, not from where `out` left the file's offset (an
    /// output that drops what it is given, a closed pipe under a gate, reads nothing).
    pub fn copy_into(self, out: &mut dyn ReportOut) -> io::Result<()> {
        let Run { mut file, len } = self.run;
        let mut at = 0;
        while at < len {
            file.seek(SeekFrom::Start(at))?;
            let mut head = [0u8; SEGMENT_HEAD];
            file.read_exact(&mut head)?;
            let (items, text_len) = segment_head(&head);
            let index_len = u64::from(items) * self.index_entry as u64;
            let skip = i64::try_from(index_len).map_err(io::Error::other)?;
            file.seek(SeekFrom::Current(skip))?;
            out.copy_from(&mut file, text_len)?;
            at += SEGMENT_HEAD as u64 + index_len + text_len;
        }
        Ok(())
    }
}

/// Bytes of a segment's head: its items' count (`u32`) and their text's length (`u64`),
/// little-endian.
const SEGMENT_HEAD: usize = 12;

/// A segment's head for `items` items of `text_len` bytes of text.
fn segment_head_of(items: u32, text_len: u64) -> [u8; SEGMENT_HEAD] {
    let mut head = [0; SEGMENT_HEAD];
    let (count, len) = head.split_at_mut(4);
    count.copy_from_slice(&items.to_le_bytes());
    len.copy_from_slice(&text_len.to_le_bytes());
    head
}

/// The items' count and text length a segment's head holds.
fn segment_head(head: &[u8; SEGMENT_HEAD]) -> (u32, u64) {
    (
        u32::from_le_bytes(field(head, 0)),
        u64::from_le_bytes(field(head, 4)),
    )
}

/// Appends `items` (held in `chunks`) to `run` as segments, each item after `between`
/// but the run's first; returns the bytes written, all on the file when it returns. The
/// items go from the chunks to the file as they lie, gathered by `write_vectored`, not
/// copied into a buffer first.
fn write_items<K: OrderKey>(
    run: &mut Run,
    items: &[(K, u32, u32, u32)],
    chunks: &[Vec<u8>],
    between: &[u8],
) -> io::Result<u64> {
    run.file.seek(SeekFrom::Start(run.len))?;
    let mut index = Vec::with_capacity((K::LEN + 4) * items.len().min(GATHERED));
    let mut written = 0;
    for batch in items.chunks(GATHERED) {
        let first_of_run = run.len + written == 0;
        let lead = |i: usize| {
            if first_of_run && i == 0 {
                0
            } else {
                between.len()
            }
        };
        let mut text_len = 0;
        index.clear();
        for (i, (key, chunk, start, end)) in batch.iter().enumerate() {
            let item = item_in(chunks, *chunk, *start, *end);
            key.put(&mut index);
            index.extend(item_len(item)?.to_le_bytes());
            text_len += (lead(i) + item.len()) as u64;
        }
        let head = segment_head_of(batch.len() as u32, text_len);
        let mut slices = Vec::with_capacity(2 + 2 * batch.len());
        slices.push(IoSlice::new(&head));
        slices.push(IoSlice::new(&index));
        for (i, (_, chunk, start, end)) in batch.iter().enumerate() {
            if lead(i) > 0 {
                slices.push(IoSlice::new(between));
            }
            slices.push(IoSlice::new(item_in(chunks, *chunk, *start, *end)));
        }
        write_all_gathered(&mut run.file, &mut slices)?;
        written += (head.len() + index.len()) as u64 + text_len;
    }
    Ok(written)
}

/// Items in one segment at most: with the head, the index and a separator each, within
/// Linux's `IOV_MAX` of 1,024 slices for one `write_vectored`.
const GATHERED: usize = 511;

/// Writes every byte of `slices`, as `Write::write_all` does for one buffer.
fn write_all_gathered(file: &mut File, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// An item's bytes held in `chunks` (see [`Ordered::entries`]).
fn item_in(chunks: &[Vec<u8>], chunk: u32, start: u32, end: u32) -> &[u8] {
    chunks
        .get(chunk as usize)
        .and_then(|c| c.get(start as usize..end as usize))
        .unwrap_or_default()
}

/// A run written an item at a time (a merge's), in segments of about [`RUN_BUFFER`]
/// bytes of text (or [`GATHERED`] items) held until they are written.
struct SegmentWriter<'a> {
    run: Run,
    between: &'a [u8],
    items: u32,
    index: Vec<u8>,
    text: Vec<u8>,
}

impl<'a> SegmentWriter<'a> {
    fn new(between: &'a [u8]) -> io::Result<Self> {
        Ok(Self {
            run: Run {
                file: tempfile::tempfile()?,
                len: 0,
            },
            between,
            items: 0,
            index: Vec::new(),
            text: Vec::with_capacity(RUN_BUFFER + RUN_BUFFER / 8),
        })
    }

    fn push<K: OrderKey>(&mut self, key: K, item: &[u8]) -> io::Result<()> {
        if self.run.len > 0 || self.items > 0 {
            self.text.extend_from_slice(self.between);
        }
        key.put(&mut self.index);
        self.index.extend(item_len(item)?.to_le_bytes());
        self.text.extend_from_slice(item);
        self.items += 1;
        if self.text.len() >= RUN_BUFFER || self.items as usize >= GATHERED {
            self.write_segment()?;
        }
        Ok(())
    }

    fn write_segment(&mut self) -> io::Result<()> {
        if self.items == 0 {
            return Ok(());
        }
        let head = segment_head_of(self.items, self.text.len() as u64);
        let mut slices = [
            IoSlice::new(&head),
            IoSlice::new(&self.index),
            IoSlice::new(&self.text),
        ];
        write_all_gathered(&mut self.run.file, &mut slices)?;
        self.run.len += (SEGMENT_HEAD + self.index.len() + self.text.len()) as u64;
        self.items = 0;
        self.index.clear();
        self.text.clear();
        Ok(())
    }

    fn finish(mut self) -> io::Result<Run> {
        self.write_segment()?;
        Ok(self.run)
    }
}

/// At most [`FAN_IN`] runs, for one merge to take: as few runs as that needs are merged,
/// in groups of consecutive runs not merged before, each into one run in the group's
/// place (so ties keep the runs' order). Only their items are written again: a pass
/// merging every run in groups of `FAN_IN` wrote them all (of 91 runs, 91 items against
/// 28; of 192, 192 against 131). Returns the runs and the items written again.
fn fewer_runs<K: OrderKey>(mut runs: Vec<Run>, between: &[u8]) -> io::Result<(Vec<Run>, u64)> {
    let mut written_again = 0;
    // the runs before this one are merges already
    let mut unmerged_from = 0;
    while runs.len() > FAN_IN {
        let group = (runs.len() - FAN_IN + 1).min(FAN_IN);
        // past FAN_IN² runs too few are left unmerged: merged ones are merged again
        let from = if runs.len() - unmerged_from >= group {
            unmerged_from
        } else {
            0
        };
        let mut merging = runs.split_off(from);
        let rest = merging.split_off(group);
        let (merged, items) = merge_into_run::<K>(merging, between)?;
        written_again += items;
        runs.push(merged);
        unmerged_from = runs.len();
        runs.extend(rest);
    }
    Ok((runs, written_again))
}

/// Merges `runs` into one run of their items in order; returns it and how many items it
/// holds.
fn merge_into_run<K: OrderKey>(runs: Vec<Run>, between: &[u8]) -> io::Result<(Run, u64)> {
    let mut merged = SegmentWriter::new(between)?;
    let mut items = 0;
    merge::<K>(runs, between.len(), |key, item| {
        items += 1;
        merged.push(key, item)
    })?;
    Ok((merged.finish()?, items))
}

/// An item's length as a run records it (items are far below 4 GiB: see `push`).
fn item_len(item: &[u8]) -> io::Result<u32> {
    u32::try_from(item.len()).map_err(|_| io::Error::other("one item of the report past 4 GiB"))
}

/// One run being read back: its next item, if any.
struct RunReader<K> {
    input: BufReader<io::Take<File>>,
    key: Option<K>,
    /// Where the current item lies: in `input`'s buffer (after its separator, not yet
    /// consumed), or, when it did not lie whole there, copied into `item`.
    place: Place,
    item: Vec<u8>,
    /// The current segment's index, and the next entry of it to read; the index's bytes
    /// as read.
    index: Vec<(K, u32)>,
    next: usize,
    index_bytes: Vec<u8>,
    /// The separator's length, and whether no item was read yet (the run's first has none).
    between: usize,
    first: bool,
}

/// Where a run's current item is held.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// In the reader's buffer: the separator and the item, `lead + len` bytes from its
    /// start.
    Buffered {
        lead: usize,
        len: usize,
    },
    Copied,
}

impl<K: OrderKey> RunReader<K> {
    fn new(Run { mut file, len }: Run, between: usize) -> io::Result<Self> {
        file.rewind()?;
        let mut run = Self {
            input: BufReader::with_capacity(RUN_BUFFER, file.take(len)),
            key: None,
            place: Place::Copied,
            item: Vec::new(),
            index: Vec::new(),
            next: 0,
            index_bytes: Vec::new(),
            between,
            first: true,
        };
        run.advance()?;
        Ok(run)
    }

    /// The current item (empty at the run's end).
    fn item(&self) -> &[u8] {
        match self.place {
            Place::Buffered { lead, len } => self
                .input
                .buffer()
                .get(lead..lead + len)
                .unwrap_or_default(),
            Place::Copied => &self.item,
        }
    }

    /// Reads the next item; `key` is `None` at the run's end. An item that lies whole in
    /// the read buffer is handed out from there, not copied.
    fn advance(&mut self) -> io::Result<()> {
        if let Place::Buffered { lead, len } = self.place {
            self.input.consume(lead + len);
            self.place = Place::Copied;
        }
        let Some((key, len)) = self.next_entry()? else {
            self.key = None;
            self.item.clear();
            return Ok(());
        };
        let lead = match std::mem::take(&mut self.first) {
            true => 0,
            false => self.between,
        };
        let len = len as usize;
        self.key = Some(key);
        if self.input.fill_buf()?.len() >= lead + len {
            self.place = Place::Buffered { lead, len };
            return Ok(());
        }
        // across the read buffer's end: the separator read past, then the item copied
        self.item.resize(lead, 0);
        self.input.read_exact(&mut self.item)?;
        self.item.resize(len, 0);
        self.input.read_exact(&mut self.item)
    }

    /// The next item's key and length, from the next segment's index when this one's is
    /// read through; `None` at the run's end.
    fn next_entry(&mut self) -> io::Result<Option<(K, u32)>> {
        while self.next == self.index.len() {
            let mut head = [0u8; SEGMENT_HEAD];
            match self.input.read_exact(&mut head) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(e),
            }
            let (items, _) = segment_head(&head);
            if items as usize > GATHERED {
                return Err(io::Error::other("a spilled run of the report is damaged"));
            }
            let entry = K::LEN + 4;
            self.index_bytes.resize(items as usize * entry, 0);
            self.input.read_exact(&mut self.index_bytes)?;
            self.index.clear();
            self.next = 0;
            for e in self.index_bytes.chunks_exact(entry) {
                let key = K::get(e.get(..K::LEN).unwrap_or_default());
                self.index.push((key, u32::from_le_bytes(field(e, K::LEN))));
            }
        }
        let entry = self.index.get(self.next).copied();
        self.next += 1;
        Ok(entry)
    }
}

/// Merges sorted runs (each item but a run's first after a separator `between` bytes
/// long): `each` gets every item in key order, ties to the earlier run.
fn merge<K: OrderKey>(
    runs: Vec<Run>,
    between: usize,
    mut each: impl FnMut(K, &[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut readers = runs
        .into_iter()
        .map(|run| RunReader::<K>::new(run, between))
        .collect::<io::Result<Vec<_>>>()?;
    if let [only] = readers.as_mut_slice() {
        // one run (items that came in order): read through, no heap
        while let Some(key) = only.key {
            each(key, only.item())?;
            only.advance()?;
        }
        return Ok(());
    }
    let mut heap: BinaryHeap<Reverse<(K, usize)>> = readers
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some(Reverse((r.key?, i))))
        .collect();
    while let Some(Reverse((key, i))) = heap.pop() {
        let Some(reader) = readers.get_mut(i) else {
            continue;
        };
        each(key, reader.item())?;
        reader.advance()?;
        if let Some(next) = reader.key {
            heap.push(Reverse((next, i)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    impl OrderKey for u32 {
        const LEN: usize = 4;
        fn put(&self, out: &mut Vec<u8>) {
            out.extend(self.to_be_bytes());
        }
        fn get(bytes: &[u8]) -> Self {
            Self::from_be_bytes(field(bytes, 0))
        }
    }

    /// Items pushed with keys in a scrambled order come out sorted, ties in arrival
    /// order, whether they stayed in memory or went through runs (and merge passes).
    fn round_trip(run_bytes: usize, n: u32) -> (Vec<(u32, u32)>, usize) {
        round_trip_keys(run_bytes, n, |i| (i * 7919) % 1000) // ties: each key about n/1000 times
    }

    fn round_trip_keys(
        run_bytes: usize,
        n: u32,
        key_of: impl Fn(u32) -> u32,
    ) -> (Vec<(u32, u32)>, usize) {
        let mut list = Ordered::<u32>::new(run_bytes);
        for i in 0..n {
            let key = key_of(i);
            list.push(key, |out| {
                out.extend(format!("{key}:{i}").as_bytes());
                Ok(())
            })
            .unwrap();
        }
        let runs = list.runs();
        let mut seen = Vec::new();
        list.write_each(|_, item| {
            let text = std::str::from_utf8(item).unwrap();
            let (key, arrival) = text.split_once(':').unwrap();
            seen.push((key.parse().unwrap(), arrival.parse().unwrap()));
            Ok(())
        })
        .unwrap();
        (seen, runs)
    }

    #[test]
    fn items_come_out_in_key_then_arrival_order_from_memory_and_from_runs() {
        let (in_memory, runs) = round_trip(usize::MAX, 20_000);
        assert_eq!(runs, 0);
        let mut expected = in_memory.clone();
        expected.sort();
        assert_eq!(in_memory, expected);
        // 20,000 items of about 9 bytes in runs of 1 KiB: about 170 runs, merged as
        // they come, never more than two merges' worth open
        let (spilled, runs) = round_trip(1024, 20_000);
        assert!(runs > 1 && runs <= 2 * FAN_IN, "{runs} runs");
        assert_eq!(spilled, expected);
    }

    /// Items of every length from a few bytes to past the read buffer, through one run
    /// (in order) and through many (scrambled): each comes back whole, whether it lay in
    /// the read buffer or across its end.
    #[test]
    fn items_long_and_short_come_back_whole_from_runs() {
        let len_of = |i: u32| match i % 7 {
            0 => RUN_BUFFER + 17 * i as usize,
            1 => RUN_BUFFER / 2 + 3,
            _ => 1 + (i as usize * 131) % 3000,
        };
        let item = |i: u32| -> Vec<u8> { (0..len_of(i)).map(|b| (b as u32 ^ i) as u8).collect() };
        for scrambled in [false, true] {
            let mut list = Ordered::<u32>::new(256 << 10).between(b",\n      ".to_vec());
            let key_of = |i: u32| if scrambled { (i * 37) % 101 } else { i };
            for i in 0..300 {
                list.push(key_of(i), |out| {
                    out.extend(item(i));
                    Ok(())
                })
                .unwrap();
            }
            assert!(list.runs() >= 1, "through runs");
            let mut expected: Vec<(u32, u32)> = (0..300).map(|i| (key_of(i), i)).collect();
            expected.sort();
            let mut seen = Vec::new();
            list.write_each(|_, got| {
                let (key, i) = expected[seen.len()];
                assert!(got == item(i), "item {i} (key {key}, {} bytes)", got.len());
                seen.push(i);
                Ok(())
            })
            .unwrap();
            assert_eq!(seen.len(), 300, "scrambled: {scrambled}");
        }
    }

    /// Keys that come a little late, by up to `late` places, some tied.
    fn nearly_in_order(late: u32) -> impl Fn(u32) -> u32 {
        move |i| (i / 2).saturating_sub(i * 7919 % (late + 1) / 2)
    }

    #[test]
    fn items_a_little_out_of_order_are_put_in_order_as_they_come() {
        for late in [1, 10, MAX_STEPS_BACK as u32, 4 * MAX_STEPS_BACK as u32] {
            let key_of = nearly_in_order(late);
            let mut expected: Vec<(u32, u32)> = (0..5_000).map(|i| (key_of(i), i)).collect();
            expected.sort();
            let (in_memory, _) = round_trip_keys(usize::MAX, 5_000, &key_of);
            assert_eq!(in_memory, expected, "{late} late, in memory");
            let (spilled, runs) = round_trip_keys(1024, 5_000, &key_of);
            assert!(runs >= 1);
            assert_eq!(spilled, expected, "{late} late, in runs");
        }
    }

    #[test]
    fn items_in_order_make_one_run_and_only_an_item_too_late_another() {
        // 10 bytes an item, a first spill at 1,000 bytes
        let ten_bytes = |out: &mut Vec<u8>| {
            out.extend(b"0123456789");
            Ok(())
        };
        let in_order = |late_by: u32| {
            let mut list = Ordered::<u32>::new(1000);
            for i in 0..5_000u32 {
                // every 100th item comes `late_by` places late
                let key = if i % 100 == 99 {
                    1000 + i - late_by
                } else {
                    1000 + i
                };
                list.push(key, ten_bytes).unwrap();
            }
            list
        };
        assert_eq!(in_order(0).runs(), 1);
        // kept back at a spill: the last 50 items, half of what sets one off; a spill
        // every 50 items writes those before the last 50
        assert_eq!(in_order(40).runs(), 1);
        let too_late = in_order(150);
        assert!(too_late.runs() > 1, "{} runs", too_late.runs());
        let mut written = 0;
        too_late
            .write_each(|_, _| {
                written += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(written, 5_000);
    }

    #[test]
    fn the_one_chunk_kept_between_spills_is_filled_again() {
        let mut list = Ordered::<u32>::new(CHUNK_LEN);
        for i in 0..20_000u32 {
            list.push(i, |out| {
                out.extend([b'x'; 500]);
                Ok(())
            })
            .unwrap();
            assert_eq!(list.chunks.len(), 1, "item {i}");
        }
        assert_eq!(list.runs(), 1);
    }

    /// The entries grow to hold one spill's items once, not again after every spill from
    /// the few kept back.
    #[test]
    fn the_entries_keep_their_room_between_spills() {
        let mut list = Ordered::<u32>::new(CHUNK_LEN);
        let mut room = list.entries.capacity();
        let mut grown = 0;
        for i in 0..20_000u32 {
            list.push(i, |out| {
                out.extend([b'x'; 500]);
                Ok(())
            })
            .unwrap();
            if list.entries.capacity() != room {
                room = list.entries.capacity();
                grown += 1;
            }
        }
        assert!(list.runs() >= 1);
        // doubling up to the 2,000-odd items of one spill: a dozen times, once
        assert!(grown <= 13, "grown {grown} times");
    }

    #[test]
    fn only_items_too_late_leave_a_sort_to_do() {
        let mut list = Ordered::<u32>::new(usize::MAX);
        let push = |list: &mut Ordered<u32>, key| list.push(key, |_| Ok(())).unwrap();
        for key in 1..=MAX_STEPS_BACK as u32 + 1 {
            push(&mut list, key);
        }
        push(&mut list, 1); // moved back past every item but the first
        assert!(!list.unsorted);
        assert!(list.entries.is_sorted_by_key(|(key, ..)| *key));
        push(&mut list, 0); // would go back past more
        assert!(list.unsorted);
    }

    #[test]
    fn only_the_earliest_runs_past_one_merge_are_written_again() {
        // a run per item
        for (items, written_again) in [(FAN_IN, 0), (91, 28), (3 * FAN_IN, 131)] {
            let mut list = Ordered::<u32>::new(1);
            list.merge_at = usize::MAX;
            for i in 0..items as u32 {
                // each later than every one before: a run of its own
                list.push(items as u32 - i, |out| {
                    out.extend(i.to_le_bytes());
                    Ok(())
                })
                .unwrap();
            }
            assert_eq!(list.runs(), items);
            let open = list.open.take().map(|open| open.run);
            let runs = open.into_iter().chain(list.runs.drain(..)).collect();
            let (runs, again) = fewer_runs::<u32>(runs, b"").unwrap();
            assert!(runs.len() <= FAN_IN, "{} runs left", runs.len());
            assert_eq!(again, written_again, "{items} runs");
        }
    }

    /// Items that came in key order lie in one run whose text is the list's: every item,
    /// each after the separator but the first, copied out past the segments' heads.
    #[test]
    fn a_list_in_one_run_is_copied_out_as_its_text() {
        let text_of = |i: u32| format!("{{\"item\": {i}}}");
        let mut list = Ordered::<u32>::new(4096).between(b",\n    ".to_vec());
        for i in 0..3000 {
            list.push(i, |out| {
                out.extend(text_of(i).as_bytes());
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(list.runs(), 1);
        let Ok(run) = list.into_one_run().unwrap() else {
            panic!("not one run");
        };
        let mut out = tempfile::tempfile().unwrap();
        run.copy_into(&mut out).unwrap();
        out.rewind().unwrap();
        let mut copied = String::new();
        out.read_to_string(&mut copied).unwrap();
        let expected: Vec<String> = (0..3000).map(text_of).collect();
        assert_eq!(copied, expected.join(",\n    "));
    }

    /// An output that drops what it is given (a closed pipe under a gate) reads nothing
    /// of the run: each segment is still found where the last one ended.
    #[test]
    fn a_run_is_copied_segment_by_segment_whatever_the_output_reads() {
        struct Dropping(Vec<u64>);
        impl Write for Dropping {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        impl ReportOut for Dropping {
            fn copy_from(&mut self, _: &mut File, len: u64) -> io::Result<()> {
                self.0.push(len);
                Ok(())
            }
        }
        let mut list = Ordered::<u32>::new(4096).between(b",".to_vec());
        for i in 0..3000 {
            list.push(i, |out| {
                out.extend(b"0123456789");
                Ok(())
            })
            .unwrap();
        }
        let Ok(run) = list.into_one_run().unwrap() else {
            panic!("not one run");
        };
        let mut out = Dropping(Vec::new());
        run.copy_into(&mut out).unwrap();
        assert!(out.0.len() >= 3000 / GATHERED, "{} segments", out.0.len());
        assert_eq!(out.0.iter().sum::<u64>(), 3000 * 10 + 2999);
    }

    /// Held in memory, or with items too late for the open run in runs of their own, a
    /// list is not one run: it is written an item at a time, each without a separator.
    #[test]
    fn a_list_in_memory_or_in_runs_to_merge_is_not_one_run() {
        let push_all = |list: &mut Ordered<u32>, keys: &[u32]| {
            for &key in keys {
                list.push(key, |out| {
                    out.extend(key.to_string().as_bytes());
                    Ok(())
                })
                .unwrap();
            }
        };
        let mut in_memory = Ordered::<u32>::new(usize::MAX).between(b",".to_vec());
        push_all(&mut in_memory, &[2, 1, 3]);
        assert!(in_memory.into_one_run().unwrap().is_err());

        let mut late = Ordered::<u32>::new(8).between(b", ".to_vec());
        let keys: Vec<u32> = (0..2000).map(|i| (i * 7919) % 1000).collect();
        push_all(&mut late, &keys);
        assert!(late.runs() > 1);
        let late = late.into_one_run().unwrap().expect_err("runs to merge");
        let mut seen = Vec::new();
        late.write_each(|_, item| {
            seen.push(std::str::from_utf8(item).unwrap().parse::<u32>().unwrap());
            Ok(())
        })
        .unwrap();
        let mut expected = keys;
        expected.sort();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_failed_item_leaves_nothing_behind() {
        let mut list = Ordered::<u32>::new(usize::MAX);
        list.push(1, |out| {
            out.extend(b"half");
            Err(io::Error::other("no"))
        })
        .unwrap_err();
        list.push(2, |out| {
            out.extend(b"whole");
            Ok(())
        })
        .unwrap();
        let mut seen = Vec::new();
        list.write_each(|_, item| {
            seen.push(item.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![b"whole".to_vec()]);
    }
}
