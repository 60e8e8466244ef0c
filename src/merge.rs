//! Several capture files read as one, merged by time as `mergecap` merges them.
//!
//! In: the files, in the order given. Out: their packets one at a time, each file's in its
//! own order and the files interleaved by timestamp (on equal times the file given last
//! goes first, as with mergecap), numbered as Wireshark numbers the frames of `mergecap -w merged.pcap` of
//! the same files. With more than one file each packet also carries its [`Origin`]: the
//! file and its number there.
//!
//! A regular file is opened only when the merge reaches its first packet (peeked once at
//! the start), so rotated captures are read one or two at a time, not all at once.
//! Standard input and pipes cannot be peeked: they are opened from the start.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use std::fs::File;

use crate::capture::{self, CaptureInfo, CaptureReader, Packet};
use crate::diag::obs;
use crate::diag::{Diagnostics, Observation};
use crate::error::Error;
use crate::input::{self, Blocks, Reread};
use crate::packet_ref::Origin;
use crate::timestamp::Timestamp;

/// Opens input `index` (named `path`) for reading: the read-ahead and decompression of
/// the caller's choice.
pub type Opener<'a> = dyn FnMut(usize, &str) -> Result<Box<dyn Blocks>, Error> + 'a;

/// One input of the merge.
enum Source {
    /// A file not opened yet: its first packet is among the heads.
    Waiting {
        path: String,
    },
    Open {
        reader: Box<CaptureReader<Box<dyn Blocks>>>,
        /// Packets taken from it so far: the number of the last in its own file.
        taken: u64,
    },
    Done(CaptureInfo),
}

/// The files of one run, merged: see the module documentation.
pub struct Merge<'a> {
    sources: Vec<Source>,
    /// The next packet of each source with one, by time; on equal times the source given
    /// last first, as mergecap's merge_read_packet picks (its `is_earlier` holds on equal
    /// times, so the last file of a tie is kept).
    heads: BinaryHeap<Reverse<(i128, Reverse<usize>)>>,
    /// The source of the packet last handed out: it is peeked again at the next step.
    last: Option<usize>,
    next_frame: u64,
    max_record: usize,
    open: Box<Opener<'a>>,
    /// Whether packets carry their [`Origin`] (more than one file).
    several: bool,
    /// The files that can be read again, kept as they are opened.
    reread: Arc<Reread>,
}

impl<'a> Merge<'a> {
    /// A merge of `inputs` (path, and the time of its first packet when it could be peeked
    /// as a regular file; `None` opens it at once). Fails when an input opened at once is
    /// not a capture. A file that can be read again is kept in `reread` as it is opened,
    /// and its packets have spots.
    pub fn new(
        inputs: Vec<(String, Option<Timestamp>)>,
        max_record: usize,
        open: Box<Opener<'a>>,
        reread: Arc<Reread>,
        diags: &mut Diagnostics,
    ) -> Result<Self, Error> {
        let mut merge = Self {
            several: inputs.len() > 1,
            sources: Vec::with_capacity(inputs.len()),
            heads: BinaryHeap::with_capacity(inputs.len()),
            last: None,
            next_frame: 1,
            max_record,
            open,
            reread,
        };
        for (idx, (path, first)) in inputs.into_iter().enumerate() {
            match first {
                Some(first) => {
                    merge.heads.push(Reverse((first.as_nanos(), Reverse(idx))));
                    merge.sources.push(Source::Waiting { path });
                }
                None => {
                    let reader = merge.open_reader(idx, &path)?;
                    merge.sources.push(Source::Open {
                        reader: Box::new(reader),
                        taken: 0,
                    });
                    merge.peek(idx, diags);
                }
            }
        }
        Ok(merge)
    }

    /// The next packet in merged order; `None` when every file is read. Fails when a file
    /// opened on the way is not a capture.
    pub fn next(&mut self, diags: &mut Diagnostics) -> Result<Option<Packet<'_>>, Error> {
        if let Some(idx) = self.last.take() {
            if self.heads.is_empty() {
                // the only file left: nothing to interleave with it
                return Ok(self.next_of_only(idx, diags));
            }
            self.peek(idx, diags);
        }
        while let Some(Reverse((_, Reverse(idx)))) = self.heads.pop() {
            if let Some(Source::Waiting { path }) = self.sources.get(idx) {
                // Its time has come: open it and take its place by its first packet.
                let path = path.clone();
                let reader = self.open_reader(idx, &path)?;
                if let Some(source) = self.sources.get_mut(idx) {
                    *source = Source::Open {
                        reader: Box::new(reader),
                        taken: 0,
                    };
                }
                self.peek(idx, diags);
                continue;
            }
            self.last = Some(idx);
            return Ok(self.take(idx));
        }
        Ok(None)
    }

    /// Every file's [`CaptureInfo`], in the order given; files not opened (the merge was
    /// stopped early) say only their path.
    pub fn finish(self) -> Vec<CaptureInfo> {
        self.sources
            .into_iter()
            .map(|source| match source {
                Source::Done(info) => info,
                Source::Open { reader, .. } => reader.into_info(),
                Source::Waiting { path } => CaptureInfo::unread(path),
            })
            .collect()
    }

    /// Frames numbered so far.
    pub fn frames(&self) -> u64 {
        self.next_frame.saturating_sub(1)
    }

    /// The next packet of source `idx` when no other source has one (nor is waiting).
    fn next_of_only(&mut self, idx: usize, diags: &mut Diagnostics) -> Option<Packet<'_>> {
        let Some(Source::Open { reader, .. }) = self.sources.get_mut(idx) else {
            return None;
        };
        if reader.peek(self.next_frame, diags).is_none() {
            let info = reader.info().clone();
            if let Some(source) = self.sources.get_mut(idx) {
                *source = Source::Done(info);
            }
            return None;
        }
        self.last = Some(idx);
        self.take(idx)
    }

    /// Opens input `idx` and reads its header; its packets have spots if it can be read
    /// again.
    fn open_reader(
        &mut self,
        idx: usize,
        path: &str,
    ) -> Result<CaptureReader<Box<dyn Blocks>>, Error> {
        let mut blocks = (self.open)(idx, path)?;
        let again = blocks.take_reread();
        let reader = CaptureReader::open(blocks, path, self.max_record)?;
        Ok(match again.map(|file| self.reread.keep(idx, file)) {
            Some(true) => reader.with_spots(idx),
            _ => reader,
        })
    }

    /// Puts source `idx`'s next packet among the heads, or closes it at its end.
    fn peek(&mut self, idx: usize, diags: &mut Diagnostics) {
        let Some(source) = self.sources.get_mut(idx) else {
            return;
        };
        let Source::Open { reader, .. } = source else {
            return;
        };
        match reader.peek(self.next_frame, diags) {
            Some(at) => self.heads.push(Reverse((at.as_nanos(), Reverse(idx)))),
            None => {
                let info = reader.info().clone();
                *source = Source::Done(info);
            }
        }
    }

    /// Hands out source `idx`'s peeked packet as the next frame.
    fn take(&mut self, idx: usize) -> Option<Packet<'_>> {
        let Some(Source::Open { reader, taken }) = self.sources.get_mut(idx) else {
            return None;
        };
        *taken += 1;
        let frame = self.next_frame;
        self.next_frame += 1;
        let origin = if self.several {
            Origin::new(idx, *taken)
        } else {
            None
        };
        reader.take(frame, origin)
    }
}

/// Each input with the time of its first packet, for the merge to open it when its time
/// comes: `None` for standard input and other inputs that are not regular files (pipes
/// cannot be read twice), and for files with no packet or that cannot be read as a
/// capture: those are opened at once, and their real read reports what there is to report.
///
/// In the order of `captures[]`, whatever the order given: the files by the time of their
/// first packet, then the others; ties by path. So the same files in any order give the
/// same report, numbered as `mergecap` numbers them given in this order.
pub fn first_times(inputs: &[String]) -> Vec<(String, Option<Timestamp>)> {
    let peek = |path: &str| -> Option<Timestamp> {
        if path == input::STANDARD_STREAM {
            return None;
        }
        // stat before opening: opening a named pipe to look would pair with its writer,
        // which then fails on the reader's close and writes no more (a hang at the real
        // open)
        if !std::fs::metadata(path).ok()?.is_file() {
            return None;
        }
        let file = File::open(path).ok()?;
        let input = input::inflated(path, Box::new(file)).ok()?;
        capture::first_timestamp(input, path)
    };
    let mut timed: Vec<(String, Option<Timestamp>)> =
        inputs.iter().map(|p| (p.clone(), peek(p))).collect();
    timed.sort_by(|(a, at), (b, bt)| {
        let key = |t: &Option<Timestamp>| (t.is_none(), t.map(|t| t.as_nanos()));
        key(at).cmp(&key(bt)).then_with(|| a.cmp(b))
    });
    timed
}

/// Says which files overlap in time, once the merge is done: their packets were
/// interleaved, as `mergecap` interleaves them.
pub fn note_overlaps(captures: &[CaptureInfo], diags: &mut Diagnostics) {
    let spans: Vec<(&str, Timestamp, Timestamp)> = captures
        .iter()
        .filter_map(|c| Some((c.path.as_str(), c.first_timestamp?, c.last_timestamp?)))
        .collect();
    for (at, (path, first, last)) in spans.iter().enumerate() {
        for (other, other_first, other_last) in spans.iter().skip(at + 1) {
            if first.as_nanos() <= other_last.as_nanos()
                && other_first.as_nanos() <= last.as_nanos()
            {
                diags.add(
                    None,
                    None,
                    Observation::CaptureFilesOverlap(obs::CaptureFilesOverlap {
                        path,
                        other_path: other,
                    }),
                );
            }
        }
    }
}
