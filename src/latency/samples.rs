//! Latency samples kept for exact percentiles in bounded memory. Up to a few thousand
//! are held; past that they go, in blocks, to a temporary file, and each percentile is
//! found by selection over the file (a radix select on the samples' order-preserving
//! bit patterns, 16 bits a pass, then the last bucket sorted in memory). A capture with
//! millions of exchanges then holds a fixed amount of memory for its latencies, and
//! every percentile stays a latency that occurred.

use std::fs::File;
use std::io::{self, Read, Seek, Write};

use super::{round3, summarise, CompensatedSum, Histogrammed, Summary};

/// Samples held in memory before a block of them is written out.
const HELD: usize = 8192;
/// The same for a row of a table with a row per broker: up to 1,024 rows, each holding
/// 8 KiB here and a histogram of 1 digit (about 6 KiB) once spilled, not 64 and 40.
const HELD_IN_A_ROW: usize = 1024;
/// Values gathered and sorted in memory once a selection has narrowed to that many.
const GATHER: u64 = 1 << 16;
/// Buckets per pass: the next 16 bits of the key.
const BUCKET_BITS: u32 = 16;

/// The order of `f64::total_cmp` as an unsigned integer.
pub(super) fn key(value: f64) -> u64 {
    let bits = value.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

pub(super) fn value(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// Exact latency samples, in memory and spilled.
#[derive(Debug)]
pub struct Samples {
    /// How many are held before a spill, and the digits of the fallback histogram.
    held_max: usize,
    fallback_digits: u8,
    held: Vec<f64>,
    spilled: Option<File>,
    /// Samples written to `spilled`.
    spilled_count: u64,
    /// Once samples are spilled, every sample also goes into a histogram: should the file
    /// not read back, the summary comes from it, marked not exact, instead of no summary.
    fallback: Option<Histogrammed>,
    /// The summary once made, until the next sample: the analysis and the report both
    /// ask, and with samples spilled each summary reads the file several times.
    summary: std::cell::OnceCell<Option<Summary>>,
    /// A spill failed (no temporary file, a full disk, no descriptor left): from then on
    /// samples go only to `fallback`, and the summary comes from it, marked not exact,
    /// rather than the samples growing in memory with the capture.
    unspilled: bool,
    /// A spill of a row failed: it holds up to [`HELD`], exact, before trying again.
    spill_failed: bool,
}

impl Default for Samples {
    fn default() -> Self {
        Self {
            held_max: HELD,
            fallback_digits: 2,
            held: Vec::new(),
            spilled: None,
            spilled_count: 0,
            fallback: None,
            summary: std::cell::OnceCell::new(),
            unspilled: false,
            spill_failed: false,
        }
    }
}

impl Samples {
    /// Samples of one row of a table with a row per broker: fewer held before a spill,
    /// and a coarser fallback, as there may be a thousand such rows.
    pub fn in_a_row() -> Self {
        Self {
            held_max: HELD_IN_A_ROW,
            fallback_digits: 1,
            ..Self::default()
        }
    }

    pub fn push(&mut self, us: f64) {
        self.summary.take();
        if let Some(fallback) = &mut self.fallback {
            fallback.record(us);
            if self.unspilled {
                return;
            }
        }
        self.held.push(us);
        // a row whose spill failed holds on, as the others do, before giving up
        let held_max = if self.spill_failed {
            HELD
        } else {
            self.held_max
        };
        if self.held.len() >= held_max && self.spill().is_err() {
            match self.held.len() >= HELD {
                true => self.histogram_only(),
                false => self.spill_failed = true,
            }
        }
    }

    /// After a failed spill: the samples held go to the histogram (made now if the
    /// first spill failed), and later ones only there. Without a histogram (it could
    /// not be made) they stay in memory: exact still.
    fn histogram_only(&mut self) {
        if self.fallback.is_none() {
            self.fallback = Histogrammed::new(self.fallback_digits).map(|mut fallback| {
                self.held.iter().for_each(|us| fallback.record(*us));
                fallback
            });
        }
        if self.fallback.is_some() {
            self.unspilled = true;
            self.held = Vec::new();
        }
    }

    fn len(&self) -> u64 {
        self.spilled_count + self.held.len() as u64
    }

    fn spill(&mut self) -> io::Result<()> {
        let file = match &mut self.spilled {
            Some(file) => file,
            slot => {
                let file = slot.insert(tempfile::tempfile()?);
                // 2 digits: within 1%, in about 40 KiB (1 in a row: within 10%, 6 KiB)
                let digits = self.fallback_digits;
                self.fallback = Histogrammed::new(digits).map(|mut fallback| {
                    self.held.iter().for_each(|us| fallback.record(*us));
                    fallback
                });
                file
            }
        };
        let bytes: Vec<u8> = self.held.iter().flat_map(|v| v.to_le_bytes()).collect();
        if let Err(e) = file.write_all(&bytes) {
            // Whatever part was written goes: the file holds whole spills only.
            let whole = self.spilled_count.saturating_mul(8);
            file.set_len(whole)?;
            file.seek(io::SeekFrom::Start(whole))?;
            return Err(e);
        }
        self.spilled_count += self.held.len() as u64;
        self.held.clear();
        Ok(())
    }

    /// Calls `each` with every sample's key, spilled ones first.
    fn for_each_key(&self, mut each: impl FnMut(u64)) -> io::Result<()> {
        if let Some(file) = &self.spilled {
            let mut file = file;
            file.rewind()?;
            // Read in blocks of whole samples, not 8 bytes a call.
            let mut block = vec![0u8; 1 << 16];
            let mut left = self.spilled_count.saturating_mul(8);
            while left > 0 {
                let len = left.min(block.len() as u64) as usize;
                let part = block.get_mut(..len).unwrap_or_default();
                file.read_exact(part)?;
                for sample in part.chunks_exact(8) {
                    if let Ok(sample) = <[u8; 8]>::try_from(sample) {
                        each(key(f64::from_le_bytes(sample)));
                    }
                }
                left -= len as u64;
            }
        }
        self.held.iter().for_each(|v| each(key(*v)));
        Ok(())
    }

    /// The samples of 0-based ranks `ranks` in `total_cmp` order, found together: each
    /// pass over the samples narrows every rank by the next 16 bits of its key (ranks
    /// that share a prefix share its buckets), until a rank's bucket is small enough to
    /// gather and sort. `first_pass` also sees every key of the first pass, so the
    /// summary's own pass is that one. `None` for a rank past the samples.
    fn select<const N: usize>(
        &self,
        ranks: [u64; N],
        mut first_pass: impl FnMut(u64),
    ) -> io::Result<[Option<f64>; N]> {
        let mut hunts = ranks.map(Hunt::new);
        let mut first = true;
        loop {
            let mut groups = Group::of(&hunts);
            if groups.is_empty() {
                break;
            }
            self.for_each_key(|k| {
                if first {
                    first_pass(k);
                }
                groups.iter_mut().for_each(|g| g.see(k));
            })?;
            first = false;
            groups.iter_mut().for_each(Group::sort);
            for hunt in hunts.iter_mut().filter(|h| h.found.is_none()) {
                // Every hunt still on has its group.
                if let Some(group) = groups.iter().find(|g| g.prefix == (hunt.prefix, hunt.bits)) {
                    hunt.narrow(group);
                }
            }
        }
        Ok(hunts.map(|h| h.found.flatten()))
    }

    /// How many samples are above `us`, spilled ones read back; `None` when they do not
    /// read back.
    pub fn count_above(&self, us: f64) -> Option<u64> {
        let above = key(us);
        let mut count = 0u64;
        self.for_each_key(|k| count += u64::from(k > above)).ok()?;
        Some(count)
    }

    /// Count, min, mean, nearest-rank p50/p90/p99 and max.
    pub fn summary(&self) -> Option<Summary> {
        *self.summary.get_or_init(|| self.summarise())
    }

    fn summarise(&self) -> Option<Summary> {
        if self.unspilled {
            return self.fallback.as_ref().and_then(Histogrammed::summary);
        }
        if self.spilled.is_none() {
            return summarise(&self.held);
        }
        match self.spilled_summary() {
            Ok(summary) => summary,
            Err(_) => self.fallback.as_ref().and_then(Histogrammed::summary),
        }
    }

    fn spilled_summary(&self) -> io::Result<Option<Summary>> {
        let count = self.len();
        // A row spilled early (a tenth of the others) is most often this small: read back
        // whole in one pass and selected in memory, not counted in 65,536 buckets a pass.
        if count <= GATHER {
            let mut all = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
            self.for_each_key(|k| all.push(value(k)))?;
            return Ok(summarise(&all));
        }
        let (mut min, mut max) = (u64::MAX, 0u64);
        let mut sum = CompensatedSum::default();
        let stats = |k: u64| {
            min = min.min(k);
            max = max.max(k);
            sum.add(value(k));
        };
        let rank = |pct: u64| (pct * count).div_ceil(100).max(1) - 1;
        let [Some(p50), Some(p90), Some(p99)] =
            self.select([rank(50), rank(90), rank(99)], stats)?
        else {
            return Ok(None);
        };
        Ok(Some(Summary {
            count,
            min: value(min),
            mean: round3(sum.total() / count as f64),
            p50,
            p90,
            p99,
            max: value(max),
            percentiles_exact: true,
        }))
    }
}

/// One rank being looked for: the bits of its key found so far, and its rank among the
/// keys that start with them.
#[derive(Debug, Clone, Copy)]
struct Hunt {
    rank: u64,
    prefix: u64,
    bits: u32,
    /// The keys with the prefix are few enough to gather (or the prefix is whole).
    gather: bool,
    /// Done: the sample, or `None` when there are not enough samples.
    found: Option<Option<f64>>,
}

impl Hunt {
    fn new(rank: u64) -> Self {
        Self {
            rank,
            prefix: 0,
            bits: 0,
            gather: false,
            found: None,
        }
    }

    /// Narrows the hunt by the pass's counts of its group, or ends it by its gathered keys.
    fn narrow(&mut self, group: &Group) {
        if self.gather {
            let found = group.gathered.get(self.rank as usize).map(|k| value(*k));
            self.found = Some(found);
            return;
        }
        let mut below = 0u64;
        let bucket = group.counts.iter().enumerate().find(|(_, c)| {
            let found = below + **c > self.rank;
            if !found {
                below += **c;
            }
            found
        });
        let Some((bucket, count)) = bucket else {
            self.found = Some(None);
            return;
        };
        self.rank -= below;
        self.prefix = (self.prefix << BUCKET_BITS) | bucket as u64;
        self.bits += BUCKET_BITS;
        self.gather = *count <= GATHER || self.bits == 64;
    }
}

/// What one pass does for the keys with one prefix: counts them by their next 16 bits,
/// or gathers them.
struct Group {
    prefix: (u64, u32),
    counts: Vec<u64>,
    gathered: Vec<u64>,
    gather: bool,
}

impl Group {
    /// One a distinct prefix among the hunts still on.
    fn of(hunts: &[Hunt]) -> Vec<Self> {
        let mut groups: Vec<Self> = Vec::new();
        for hunt in hunts.iter().filter(|h| h.found.is_none()) {
            let prefix = (hunt.prefix, hunt.bits);
            if groups.iter().any(|g| g.prefix == prefix) {
                continue;
            }
            groups.push(Self {
                prefix,
                counts: if hunt.gather {
                    Vec::new()
                } else {
                    vec![0; 1 << BUCKET_BITS]
                },
                gathered: Vec::new(),
                gather: hunt.gather,
            });
        }
        groups
    }

    fn see(&mut self, k: u64) {
        let (prefix, bits) = self.prefix;
        if bits != 0 && k.checked_shr(64 - bits) != Some(prefix) {
            return;
        }
        if self.gather {
            self.gathered.push(k);
        } else if let Some(c) = self
            .counts
            .get_mut(((k >> (64 - bits - BUCKET_BITS)) & 0xffff) as usize)
        {
            *c += 1;
        }
    }

    fn sort(&mut self) {
        self.gathered.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_order_of_total_cmp() {
        let values = [-1e9, -2.5, -0.0, 0.0, 1e-300, 0.125, 145.407, 1e300];
        for pair in values.windows(2) {
            assert!(key(pair[0]) < key(pair[1]), "{pair:?}");
            assert_eq!(value(key(pair[0])).to_bits(), pair[0].to_bits());
        }
    }

    /// Spilled samples give the summary that sorting them all in memory gives.
    #[test]
    fn spilled_percentiles_are_those_of_the_sorted_samples() {
        // 200,003 samples: 24 blocks spilled; a few values repeated many times (one
        // bucket past what is gathered at once), the rest spread over decades
        let mut samples = Samples::default();
        let mut all = Vec::new();
        let mut x = 7u64;
        for i in 0..200_003u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = if i % 3 == 0 {
                145.407
            } else {
                (x >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((x % 7) as i32)
            };
            samples.push(v);
            all.push(v);
        }
        assert!(samples.spilled.is_some());
        let got = samples.summary().unwrap();
        let want = summarise(&all).unwrap();
        assert_eq!(
            (got.count, got.min, got.p50, got.p90, got.p99, got.max),
            (want.count, want.min, want.p50, want.p90, want.p99, want.max)
        );
        assert!(
            (got.mean - want.mean).abs() <= 0.001,
            "{} {}",
            got.mean,
            want.mean
        );
    }

    /// A row's samples spill sooner, into a coarser fallback, and give the same exact
    /// summary: a thousand brokers' rows hold some 14 MiB at most, not 104.
    #[test]
    fn a_rows_samples_spill_at_a_tenth_and_stay_exact() {
        let mut row = Samples::in_a_row();
        let mut whole = Samples::default();
        for i in 0..5_000u32 {
            let v = f64::from(i.wrapping_mul(7919) % 5_000) + 0.25;
            row.push(v);
            whole.push(v);
        }
        assert!(row.spilled.is_some() && whole.spilled.is_none());
        assert!(
            row.held.capacity() <= HELD_IN_A_ROW,
            "{}",
            row.held.capacity()
        );
        let fallback = |s: &Samples| s.fallback.as_ref().map(|f| f.histogram.distinct_values());
        let (row_histogram, global) = (fallback(&row).unwrap(), Histogrammed::new(2).unwrap());
        assert!(
            row_histogram * 6 < global.histogram.distinct_values(),
            "{row_histogram}"
        );
        let (got, want) = (row.summary().unwrap(), whole.summary().unwrap());
        assert_eq!(got, want);
        assert!(got.percentiles_exact);
        // its file unreadable: the coarse histogram's summary, within 10%, said so
        let dir = tempfile::tempdir().unwrap();
        row.spilled = Some(File::create(dir.path().join("w")).unwrap());
        row.summary.take();
        let approx = row.summary().unwrap();
        assert!(!approx.percentiles_exact);
        assert!(
            (approx.p50 - want.p50).abs() <= want.p50 / 10.0,
            "{}",
            approx.p50
        );
        assert!(
            (approx.p99 - want.p99).abs() <= want.p99 / 10.0,
            "{}",
            approx.p99
        );
    }

    /// A spill that does not read back gives the histogram's summary, said to be
    /// approximate, not none.
    #[test]
    fn unreadable_spilled_samples_give_an_approximate_summary() {
        let mut samples = Samples::default();
        for i in 0..20_000u32 {
            samples.push(f64::from(i % 1000) + 0.5);
        }
        assert!(samples.spilled.is_some());
        let exact = samples.summary().unwrap();
        assert!(exact.percentiles_exact);
        // The same temporary file, open for writing only: reading it fails.
        let dir = tempfile::tempdir().unwrap();
        let write_only = File::create(dir.path().join("w")).unwrap();
        samples.spilled = Some(write_only);
        samples.summary.take(); // the summary made from the readable file
        let approx = samples.summary().expect("a summary from the histogram");
        assert!(!approx.percentiles_exact);
        assert_eq!(approx.count, 20_000);
        assert_eq!((approx.min, approx.max), (exact.min, exact.max));
        assert!((approx.p50 - exact.p50).abs() <= exact.p50 / 100.0 + 0.01);
        assert!((approx.p99 - exact.p99).abs() <= exact.p99 / 100.0 + 0.01);
    }

    /// Once a spill fails (here, a file that cannot be written), samples are no longer
    /// held, however many come: the histogram counts them all, its summary approximate.
    #[test]
    fn a_failed_spill_keeps_samples_in_the_histogram_not_in_memory() {
        let mut samples = Samples::default();
        for i in 0..(HELD as u32 + 10) {
            samples.push(f64::from(i % 1000) + 0.5);
        }
        let dir = tempfile::tempdir().unwrap();
        File::create(dir.path().join("r")).unwrap();
        samples.spilled = Some(File::open(dir.path().join("r")).unwrap());
        let total = 10 * HELD as u32;
        for i in (HELD as u32 + 10)..total {
            samples.push(f64::from(i % 1000) + 0.5);
            assert!(samples.held.len() <= HELD, "{} held", samples.held.len());
        }
        let approx = samples.summary().expect("a summary from the histogram");
        assert!(!approx.percentiles_exact);
        assert_eq!(approx.count, u64::from(total));
        assert!((approx.p50 - 500.0).abs() <= 6.0, "{}", approx.p50);
    }
}
