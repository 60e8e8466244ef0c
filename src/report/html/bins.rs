//! Columns of equal time for a chart with too much to draw one by one: each thing goes
//! into the column of its time and its series (a broker), and when the columns would
//! number more than the chart holds, or the cells more than [`MAX_CELLS`], they double in
//! width, pairs merged. So every thing is in a cell, and the cells are bounded by the
//! series (themselves bounded by the caller) whatever the capture holds.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use crate::timestamp::Timestamp;

/// Columns the charts hold: a few pixels each.
pub const COLUMNS: i64 = 240;
/// Cells (column and series) held at most: a few megabytes.
pub const MAX_CELLS: usize = 50_000;

/// What a cell adds up.
pub trait Cell: Clone {
    fn merge(&mut self, other: Self);
}

/// How many things a cell holds, the first and last of their times and the range of
/// their frames.
#[derive(Clone)]
pub struct Held {
    pub count: u64,
    pub first: Timestamp,
    pub last: Timestamp,
    pub frames: (u64, u64),
}

impl Held {
    pub fn one(time: Timestamp, frame: u64) -> Self {
        Self {
            count: 1,
            first: time,
            last: time,
            frames: (frame, frame),
        }
    }
}

impl Cell for Held {
    fn merge(&mut self, other: Self) {
        self.count += other.count;
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
        self.frames = (
            self.frames.0.min(other.frames.0),
            self.frames.1.max(other.frames.1),
        );
    }
}

/// Things in columns of `width` seconds from `origin`, by series `K`.
pub struct TimeBins<K, C> {
    origin: f64,
    width: f64,
    cells: BTreeMap<(i64, K), C>,
    /// Things whose time is not a number: in no column.
    pub not_drawn: u64,
}

impl<K: Ord + Copy, C: Cell> TimeBins<K, C> {
    /// Columns over `from..to` seconds (a first guess: they widen as things come).
    pub fn new(from: f64, to: f64) -> Self {
        let width = ((to - from) / COLUMNS as f64).max(1e-6);
        Self {
            origin: from,
            width,
            cells: BTreeMap::new(),
            not_drawn: 0,
        }
    }

    fn column(&self, at: f64) -> i64 {
        ((at - self.origin) / self.width).floor() as i64
    }

    pub fn add(&mut self, at: f64, series: K, cell: C) {
        if !at.is_finite() {
            self.not_drawn += 1;
            return;
        }
        // a float's exponent bounds the doublings any finite time can need
        for _ in 0..2100 {
            let column = self.column(at);
            let first = self.cells.keys().next().map_or(column, |(c, _)| *c);
            let last = self.cells.keys().next_back().map_or(column, |(c, _)| *c);
            if column.max(last).saturating_sub(column.min(first)) < COLUMNS {
                break;
            }
            self.widen();
        }
        let column = self.column(at);
        match self.cells.entry((column, series)) {
            Entry::Occupied(mut e) => e.get_mut().merge(cell),
            Entry::Vacant(e) => {
                e.insert(cell);
            }
        }
        // as many series as columns fill the cells: fewer, wider columns hold them
        while self.cells.len() > MAX_CELLS && self.width.is_finite() {
            self.widen();
        }
    }

    /// Doubles the columns' width, each pair merged.
    fn widen(&mut self) {
        self.width *= 2.0;
        let cells = std::mem::take(&mut self.cells);
        for ((column, series), cell) in cells {
            match self.cells.entry((column.div_euclid(2), series)) {
                Entry::Occupied(mut e) => e.get_mut().merge(cell),
                Entry::Vacant(e) => {
                    e.insert(cell);
                }
            }
        }
    }

    /// Seconds each column spans.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// The cells again, their series mapped by `group` (cells of one column whose series
    /// map alike merged): the same columns, fewer series.
    pub fn grouped<G: Ord + Copy>(&self, group: impl Fn(K) -> G) -> TimeBins<G, C> {
        let mut cells = BTreeMap::new();
        for ((column, series), cell) in &self.cells {
            match cells.entry((*column, group(*series))) {
                Entry::Occupied(mut e) => Cell::merge(e.get_mut(), cell.clone()),
                Entry::Vacant(e) => {
                    e.insert(cell.clone());
                }
            }
        }
        TimeBins {
            origin: self.origin,
            width: self.width,
            cells,
            not_drawn: self.not_drawn,
        }
    }

    /// Each cell with the seconds its column starts and ends at.
    pub fn cells(&self) -> impl Iterator<Item = (f64, f64, K, &C)> {
        self.cells.iter().map(|((column, series), cell)| {
            let from = self.origin + *column as f64 * self.width;
            (from, from + self.width, *series, cell)
        })
    }
}

/// Where a thing goes: its time (seconds since the epoch) and its series.
pub trait Placed<K> {
    fn at(&self) -> f64;
    fn series(&self) -> K;
}

/// Things drawn one by one up to `limit`, past it in columns of time (all those held
/// then go into the columns).
pub struct OneByOne<T, K, C> {
    each: Vec<T>,
    bins: Option<TimeBins<K, C>>,
    limit: usize,
}

impl<T: Placed<K>, K: Ord + Copy, C: Cell + From<T>> OneByOne<T, K, C> {
    pub fn new(limit: usize) -> Self {
        Self {
            each: Vec::new(),
            bins: None,
            limit,
        }
    }

    /// Adds `item`; `span` is the times of everything so far (the columns' first guess).
    pub fn add(&mut self, item: T, span: (f64, f64)) {
        if self.bins.is_none() && self.each.len() < self.limit {
            self.each.push(item);
            return;
        }
        let bins = self
            .bins
            .get_or_insert_with(|| TimeBins::new(span.0, span.1));
        for t in self.each.drain(..).chain([item]) {
            bins.add(t.at(), t.series(), t.into());
        }
    }

    /// Those drawn one by one (none once in columns).
    pub fn each(&self) -> &[T] {
        &self.each
    }

    /// The columns, once there were too many to draw one by one.
    pub fn bins(&self) -> Option<&TimeBins<K, C>> {
        self.bins.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Cell for u64 {
        fn merge(&mut self, other: Self) {
            *self += other;
        }
    }

    #[test]
    fn columns_double_to_hold_any_span_and_count_everything() {
        let mut bins: TimeBins<i32, u64> = TimeBins::new(0.0, 1.0);
        for i in 0..100_000 {
            bins.add(f64::from(i) * 0.01, i % 3, 1);
        }
        bins.add(-50.0, 0, 1); // before the first: the columns widen that way too
        assert!(bins.cells().count() <= 3 * COLUMNS as usize);
        let counted: u64 = bins.cells().map(|(_, _, _, n)| *n).sum();
        assert_eq!(counted, 100_001);
        let width = bins.width();
        assert!(bins
            .cells()
            .all(|(from, to, _, _)| (to - from - width).abs() < 1e-9));
        let (first, ..) = bins.cells().next().unwrap();
        assert!(first <= -50.0);
    }

    /// A thousand series in every column are more cells than held: the columns widen
    /// until they fit, and nothing is left out.
    #[test]
    fn many_series_widen_the_columns_instead_of_leaving_things_out() {
        let mut bins: TimeBins<i32, u64> = TimeBins::new(0.0, 100.0);
        for i in 0..400_000 {
            bins.add(f64::from(i) * 0.00025, i % 1000, 1);
        }
        assert!(bins.cells().count() <= MAX_CELLS);
        assert_eq!(bins.not_drawn, 0);
        assert_eq!(bins.cells().map(|(_, _, _, n)| *n).sum::<u64>(), 400_000);
        let columns = bins
            .cells()
            .map(|(from, ..)| (from / bins.width()).round() as i64)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        assert!((20..=50).contains(&columns), "{columns} columns");
        // grouped: the same columns, the counts kept
        let grouped = bins.grouped(|s| s < 11);
        assert_eq!(grouped.cells().count(), 2 * columns);
        assert_eq!(grouped.cells().map(|(_, _, _, n)| *n).sum::<u64>(), 400_000);
    }
}
