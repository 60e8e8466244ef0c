//! Latency statistics over complete exchanges.
//!
//! Percentiles use the nearest-rank method: pN is the smallest sample with at least N%
//! of the samples at or below it, so every reported value is a latency that occurred.

use super::model::Latency;

/// Summary of `samples` (microseconds); `None` when there are none.
pub fn latency(samples: &[f64]) -> Option<Latency> {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let count = sorted.len();
    let rank = |pct: usize| -> f64 {
        // ceil(pct/100 * count), at least 1, as an index
        let idx = (pct * count).div_ceil(100).max(1) - 1;
        sorted.get(idx).copied().unwrap_or(f64::NAN)
    };
    let sum: f64 = sorted.iter().sum();
    Some(Latency {
        count: count as u64,
        min: sorted.first().copied().unwrap_or(f64::NAN),
        mean: round3(sum / count as f64),
        p50: rank(50),
        p90: rank(90),
        p99: rank(99),
        max: sorted.last().copied().unwrap_or(f64::NAN),
    })
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
        assert_eq!(latency(&[]), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let samples: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        let l = latency(&samples).unwrap();
        assert_eq!((l.count, l.min, l.max), (100, 1.0, 100.0));
        assert_eq!((l.p50, l.p90, l.p99), (50.0, 90.0, 99.0));
        assert_eq!(l.mean, 50.5);
    }

    #[test]
    fn single_sample() {
        let l = latency(&[12.5]).unwrap();
        assert_eq!(
            (l.min, l.p50, l.p99, l.max, l.mean),
            (12.5, 12.5, 12.5, 12.5, 12.5)
        );
    }
}
