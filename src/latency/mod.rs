//! Latency statistics over complete exchanges: a leaf that the analysis (thresholds,
//! per-broker percentiles) and the report (the summary) both use.
//!
//! Percentiles use the nearest-rank method: pN is the smallest sample with at least N%
//! of the samples at or below it, so every reported value is a latency that occurred.
//! Every format keeps the samples (past a bound, in a temporary file), so a percentile and
//! a threshold are the same whatever the format. Only when that file cannot be read back
//! do percentiles come from a histogram with three significant digits (within 0.1%, kept
//! between the least and the largest sample), and the report says so; count, min, mean
//! and max stay exact.

mod samples;

use hdrhistogram::Histogram;

use samples::Samples;

/// Latencies summed up, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// False when the percentiles come from a histogram.
    pub percentiles_exact: bool,
}

/// Highest latency the histogram resolves, in nanoseconds (one day); above it, values
/// are counted at the top.
const HISTOGRAM_MAX_NS: u64 = 86_400 * 1_000_000_000;

/// Latency samples in microseconds, kept whole or folded into a histogram.
#[derive(Debug)]
pub enum Latencies {
    Exact(Samples),
    Approx(Histogrammed),
}

/// Latencies folded into a histogram: count, sum, min and max exact, percentiles within
/// the histogram's digits.
#[derive(Debug)]
pub struct Histogrammed {
    histogram: Box<Histogram<u64>>,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Histogrammed {
    /// Keeping `digits` significant digits; `None` if the histogram cannot be made.
    pub fn new(digits: u8) -> Option<Self> {
        let histogram = Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, digits).ok()?;
        Some(Self {
            histogram: Box::new(histogram),
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        })
    }

    pub fn record(&mut self, us: f64) {
        // negative latencies (timestamps out of order) count as 0
        self.histogram
            .saturating_record((us.max(0.0) * 1000.0) as u64);
        self.count += 1;
        self.sum += us;
        self.min = self.min.min(us);
        self.max = self.max.max(us);
    }

    /// The summary, its percentiles marked not exact; `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        if self.count == 0 {
            return None;
        }
        // a histogram's bucket may lie past the largest or below the smallest sample
        let pct = |q: f64| {
            (self.histogram.value_at_quantile(q) as f64 / 1000.0).clamp(self.min, self.max)
        };
        Some(Summary {
            count: self.count,
            min: self.min,
            mean: round3(self.sum / self.count as f64),
            p50: pct(0.50),
            p90: pct(0.90),
            p99: pct(0.99),
            max: self.max,
            percentiles_exact: false,
        })
    }
}

impl Latencies {
    /// Exact samples, or a histogram of bounded size when `exact` is false.
    pub fn new(exact: bool) -> Self {
        Self::with_digits(exact, 3)
    }

    /// Like [`Self::new`], the histogram keeping `digits` significant digits (2: within
    /// 1%, a tenth of the memory; for the per-broker table).
    pub fn with_digits(exact: bool, digits: u8) -> Self {
        // made only when wanted: a histogram is hundreds of KiB to zero
        match (!exact).then(|| Histogrammed::new(digits)).flatten() {
            Some(histogram) => Self::Approx(histogram),
            None => Self::Exact(Samples::default()),
        }
    }

    /// Exact samples for one row of a table with a row per broker (see
    /// [`Samples::in_a_row`]): the same percentiles in a tenth of the memory.
    pub fn in_a_row() -> Self {
        Self::Exact(Samples::in_a_row())
    }

    pub fn add(&mut self, us: f64) {
        if !us.is_finite() {
            return;
        }
        match self {
            Self::Exact(samples) => samples.push(us),
            Self::Approx(histogram) => histogram.record(us),
        }
    }

    /// The summary; `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        match self {
            Self::Exact(samples) => samples.summary(),
            Self::Approx(histogram) => histogram.summary(),
        }
    }

    /// How many samples are above `us`, when that is known exactly: not from a
    /// histogram, nor from spilled samples that did not read back.
    pub fn count_above(&self, us: f64) -> Option<u64> {
        match self {
            Self::Exact(samples) => samples.count_above(us),
            Self::Approx(_) => None,
        }
    }

    /// The median, for thresholds.
    pub fn median(&self) -> Option<f64> {
        self.summary().map(|l| l.p50)
    }
}

/// Summary of `samples` (microseconds); `None` when there are none. The percentiles are
/// selected, not sorted for: by their order-preserving integer keys (`total_cmp`'s
/// order), from the highest rank down, each selection leaving the lower ranks on its left.
pub fn summarise(samples: &[f64]) -> Option<Summary> {
    let mut keys: Vec<u64> = samples
        .iter()
        .filter(|v| v.is_finite())
        .map(|v| samples::key(*v))
        .collect();
    let (mut min, mut max) = (*keys.first()?, 0);
    let mut sum = CompensatedSum::default();
    for &k in &keys {
        min = min.min(k);
        max = max.max(k);
        sum.add(samples::value(k));
    }
    let count = keys.len();
    // ceil(pct/100 * count), at least 1, as an index
    let rank = |pct: usize| (pct * count).div_ceil(100).max(1) - 1;
    // Ranks below `count` and not rising: each is below what is left of the one before,
    // or is that one.
    let mut below = keys.as_mut_slice();
    let mut last: Option<(usize, u64)> = None;
    let [p99, p90, p50] = [rank(99), rank(90), rank(50)].map(|r| match last {
        Some((last_rank, key)) if last_rank == r => samples::value(key),
        _ => {
            let (left, nth, _) = std::mem::take(&mut below).select_nth_unstable(r);
            last = Some((r, *nth));
            below = left;
            samples::value(*nth)
        }
    });
    Some(Summary {
        count: count as u64,
        min: samples::value(min),
        mean: round3(sum.total() / count as f64),
        p50,
        p90,
        p99,
        max: samples::value(max),
        percentiles_exact: true,
    })
}

/// Neumaier's compensated sum: a mean not thrown off by the order of millions of samples,
/// nor by the order they come in.
#[derive(Default)]
struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    fn add(&mut self, v: f64) {
        let t = self.sum + v;
        self.compensation += if self.sum.abs() >= v.abs() {
            (self.sum - t) + v
        } else {
            (v - t) + self.sum
        };
        self.sum = t;
    }

    fn total(&self) -> f64 {
        self.sum + self.compensation
    }
}

/// Rounds to nanosecond resolution so the mean prints without float noise.
fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_without_samples() {
        assert_eq!(summarise(&[]), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        let l = summarise(&samples).unwrap();
        assert_eq!((l.count, l.min, l.max), (100, 1.0, 100.0));
        assert_eq!((l.p50, l.p90, l.p99), (50.0, 90.0, 99.0));
        assert_eq!(l.mean, 50.5);
    }

    #[test]
    fn histogram_percentiles_within_a_tenth_of_a_percent() {
        let mut exact = Latencies::new(true);
        let mut approx = Latencies::new(false);
        for v in 1..=10_000 {
            exact.add(f64::from(v) * 1.5);
            approx.add(f64::from(v) * 1.5);
        }
        let (e, a) = (exact.summary().unwrap(), approx.summary().unwrap());
        assert!(e.percentiles_exact && !a.percentiles_exact);
        assert_eq!(
            (a.count, a.min, a.max, a.mean),
            (e.count, e.min, e.max, e.mean)
        );
        for (x, y) in [(e.p50, a.p50), (e.p90, a.p90), (e.p99, a.p99)] {
            assert!((x - y).abs() / x < 0.001, "{x} vs {y}");
        }
    }

    /// ndjson's percentiles once came from a histogram and passed the maximum (p99
    /// 61308.927 against a max of 61287): a histogram's are kept within the samples.
    #[test]
    fn histogram_percentiles_never_pass_the_samples() {
        let mut approx = Latencies::new(false);
        for v in [61_287.0, 61_200.0, 10.0] {
            approx.add(v);
        }
        let a = approx.summary().unwrap();
        for p in [a.p50, a.p90, a.p99] {
            assert!(
                (a.min..=a.max).contains(&p),
                "{p} outside {}..={}",
                a.min,
                a.max
            );
        }
    }

    #[test]
    fn single_sample() {
        let l = summarise(&[12.5]).unwrap();
        assert_eq!(
            (l.min, l.p50, l.p99, l.max, l.mean),
            (12.5, 12.5, 12.5, 12.5, 12.5)
        );
    }
}
