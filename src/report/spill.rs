//! Items of one array of the report (serialized exchanges or blocks), taken in the order
//! they come and written in key order. They are held in memory up to a bound; past it,
//! what is held is sorted and written to a temporary file as a run, and the runs are
//! merged when the array is written. So the report's memory stays flat however many
//! exchanges the capture holds, and a capture that fits stays off the disk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};

use crate::analysis::BlockOrder;
use crate::pairing::ExchangeOrder;
use crate::timestamp::Timestamp;

/// Bytes of serialized items per chunk: chunks are filled and never moved, so that
/// holding many megabytes costs no reallocation copies.
const CHUNK_LEN: usize = 1 << 20;
/// Items' bytes held in memory before they are written out as a run.
pub const DEFAULT_RUN_BYTES: usize = 4 << 20;
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
    /// Runs written so far, earliest arrivals first.
    runs: Vec<File>,
    count: u64,
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
            runs: Vec::new(),
            count: 0,
        }
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
        self.runs.len()
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
        if self.held >= self.run_bytes && self.spill().is_err() {
            // No room on disk (or no temporary directory): the items stay in memory, and
            // the next try waits for twice as many. The report is still written.
            self.run_bytes = self.run_bytes.saturating_mul(2);
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
        self.chunks
            .get(chunk as usize)
            .and_then(|c| c.get(start as usize..end as usize))
            .unwrap_or_default()
    }

    /// Sorts what is held (ties in arrival order) and writes it out as a run; on an error
    /// nothing held is let go.
    fn spill(&mut self) -> io::Result<()> {
        self.sort();
        let mut run = BufWriter::with_capacity(RUN_BUFFER, tempfile::tempfile()?);
        let mut head = Vec::with_capacity(K::LEN + 4);
        for (key, chunk, start, end) in &self.entries {
            head.clear();
            key.put(&mut head);
            head.extend((end - start).to_le_bytes()); // u32: see `push`
            run.write_all(&head)?;
            run.write_all(self.item(*chunk, *start, *end))?;
        }
        let mut file = run.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.rewind()?;
        self.runs.push(file);
        self.entries.clear();
        self.chunks.truncate(1);
        if let Some(chunk) = self.chunks.first_mut() {
            chunk.clear();
        }
        self.held = 0;
        Ok(())
    }

    /// Hands every item to `each` in key order (ties in arrival order), with its index.
    pub fn write_each(
        mut self,
        mut each: impl FnMut(u64, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.runs.is_empty() {
            self.sort();
            for (i, (_, chunk, start, end)) in self.entries.iter().enumerate() {
                each(i as u64, self.item(*chunk, *start, *end))?;
            }
            return Ok(());
        }
        if !self.entries.is_empty() {
            self.spill()?;
        }
        let runs = std::mem::take(&mut self.runs);
        drop(self); // the chunks' memory, before the merge's buffers
        let (runs, _) = fewer_runs::<K>(runs)?;
        let mut index = 0u64;
        merge::<K>(runs, |_, item| {
            let result = each(index, item);
            index += 1;
            result
        })
    }
}

/// At most [`FAN_IN`] runs, for one merge to take: as few runs as that needs are merged,
/// in groups of consecutive runs not merged before, each into one run in the group's
/// place (so ties keep the runs' order). Only their items are written again: a pass
/// merging every run in groups of `FAN_IN` wrote them all (of 91 runs, 91 items against
/// 28; of 192, 192 against 131). Returns the runs and the items written again.
fn fewer_runs<K: OrderKey>(mut runs: Vec<File>) -> io::Result<(Vec<File>, u64)> {
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
        let (merged, items) = merge_into_run::<K>(merging)?;
        written_again += items;
        runs.push(merged);
        unmerged_from = runs.len();
        runs.extend(rest);
    }
    Ok((runs, written_again))
}

/// Merges `runs` into one run of their items in order; returns it and how many items it
/// holds.
fn merge_into_run<K: OrderKey>(runs: Vec<File>) -> io::Result<(File, u64)> {
    let mut merged = BufWriter::with_capacity(RUN_BUFFER, tempfile::tempfile()?);
    let mut head = Vec::with_capacity(K::LEN + 4);
    let mut items = 0;
    merge::<K>(runs, |key, item| {
        items += 1;
        head.clear();
        key.put(&mut head);
        head.extend(item_len(item)?.to_le_bytes());
        merged.write_all(&head)?;
        merged.write_all(item)
    })?;
    let mut file = merged
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?;
    file.rewind()?;
    Ok((file, items))
}

/// An item's length as a run records it (items are far below 4 GiB: see `push`).
fn item_len(item: &[u8]) -> io::Result<u32> {
    u32::try_from(item.len()).map_err(|_| io::Error::other("one item of the report past 4 GiB"))
}

/// Longest head of an item in a run: its key and length.
const MAX_HEAD: usize = 64;

/// One run being read back: its next item, if any.
struct RunReader<K> {
    input: BufReader<File>,
    key: Option<K>,
    item: Vec<u8>,
}

impl<K: OrderKey> RunReader<K> {
    fn new(file: File) -> io::Result<Self> {
        let mut run = Self {
            input: BufReader::with_capacity(RUN_BUFFER, file),
            key: None,
            item: Vec::new(),
        };
        run.advance()?;
        Ok(run)
    }

    /// Reads the next item; `key` is `None` at the run's end.
    fn advance(&mut self) -> io::Result<()> {
        // the key and the item's length, on the stack: read once per item
        let mut head_bytes = [0u8; MAX_HEAD];
        let Some(head) = head_bytes.get_mut(..K::LEN + 4) else {
            return Err(io::Error::other("a sort key longer than a run's head"));
        };
        match self.input.read_exact(head) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                self.key = None;
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes(field(head, K::LEN)) as usize;
        self.item.resize(len, 0);
        self.input.read_exact(&mut self.item)?;
        self.key = Some(K::get(head.get(..K::LEN).unwrap_or_default()));
        Ok(())
    }
}

/// Merges sorted runs: `each` gets every item in key order, ties to the earlier run.
fn merge<K: OrderKey>(
    runs: Vec<File>,
    mut each: impl FnMut(K, &[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut readers = runs
        .into_iter()
        .map(RunReader::<K>::new)
        .collect::<io::Result<Vec<_>>>()?;
    let mut heap: BinaryHeap<Reverse<(K, usize)>> = readers
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some(Reverse((r.key?, i))))
        .collect();
    while let Some(Reverse((key, i))) = heap.pop() {
        let Some(reader) = readers.get_mut(i) else {
            continue;
        };
        each(key, &reader.item)?;
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
        // 20,000 items of about 9 bytes in runs of 1 KiB: about 170 runs, merged in passes
        let (spilled, runs) = round_trip(1024, 20_000);
        assert!(runs > FAN_IN, "{runs} runs");
        assert_eq!(spilled, expected);
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
            assert!(runs > 1);
            assert_eq!(spilled, expected, "{late} late, in runs");
        }
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
            for i in 0..items as u32 {
                list.push(i % 7, |out| {
                    out.extend(i.to_le_bytes());
                    Ok(())
                })
                .unwrap();
            }
            assert_eq!(list.runs(), items);
            let (runs, again) = fewer_runs::<u32>(std::mem::take(&mut list.runs)).unwrap();
            assert!(runs.len() <= FAN_IN, "{} runs left", runs.len());
            assert_eq!(again, written_again, "{items} runs");
        }
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
