//! The open connections, by address pair, and the clock that finds the least recently
//! active of them in amortised constant time.

use std::collections::{HashMap, VecDeque};

use super::connection::Connection;
use super::pair::PairKey;
use crate::heap::{heap_cost, table_cost, ChargedTableHasher};

/// Open connections and their clock.
#[derive(Debug)]
pub(super) struct Table<C> {
    conns: HashMap<PairKey, Connection<C>, ChargedTableHasher>,
    /// Address pairs in the order they were (re)queued, with the frame then. Each open
    /// connection has one current entry, the one whose frame is its `queued`; the others
    /// are stale and dropped when met or when they outnumber the open connections.
    clock: VecDeque<(PairKey, u64)>,
    /// [`Self::cost`], worked out again only where the capacities can change (an insert,
    /// a removal, a clock going round): the budget asks for it after every packet.
    cost: usize,
}

impl<C> Default for Table<C> {
    fn default() -> Self {
        Self {
            conns: HashMap::default(),
            clock: VecDeque::new(),
            cost: 0,
        }
    }
}

impl<C> Table<C> {
    pub(super) fn len(&self) -> usize {
        self.conns.len()
    }

    pub(super) fn contains(&self, key: &PairKey) -> bool {
        self.conns.contains_key(key)
    }

    pub(super) fn get(&self, key: &PairKey) -> Option<&Connection<C>> {
        self.conns.get(key)
    }

    pub(super) fn get_mut(&mut self, key: &PairKey) -> Option<&mut Connection<C>> {
        self.conns.get_mut(key)
    }

    /// Adds a connection that saw its first packet at `frame`, queued on the clock;
    /// returns the one it replaces on the same address pair.
    pub(super) fn insert(
        &mut self,
        key: PairKey,
        conn: Connection<C>,
        frame: u64,
    ) -> Option<Connection<C>> {
        let old = self.conns.insert(key, conn);
        self.clock.push_back((key, frame));
        self.compact_clock();
        self.cost = self.cost_at(self.conns.capacity());
        old
    }

    /// Takes a connection out; its clock entries become stale.
    pub(super) fn remove(&mut self, key: &PairKey) -> Option<Connection<C>> {
        let removed = self.conns.remove(key);
        // The capacity the table reports drops when a removal leaves a tombstone.
        self.cost = self.cost_at(self.conns.capacity());
        removed
    }

    /// Drops stale clock entries (of connections closed or replaced since) once they
    /// outnumber the open connections, each of which has one current entry: the clock
    /// stays within twice the open connections, in amortised constant time.
    pub(super) fn compact_clock(&mut self) {
        if self.clock.len() > 2 * self.conns.len() + 1024 {
            let conns = &self.conns;
            self.clock
                .retain(|(k, queued)| conns.get(k).is_some_and(|c| c.queued == *queued));
        }
    }

    /// Takes out the least recently active connection: one that saw a packet since it
    /// was queued goes round again, as does the one on `spare`. `None` only when the
    /// clock is empty, which cannot be while a connection is open.
    pub(super) fn take_least_recent(&mut self, spare: Option<&PairKey>) -> Option<Connection<C>> {
        let taken = self.least_recent(spare);
        self.cost = self.cost_at(self.conns.capacity());
        taken
    }

    fn least_recent(&mut self, spare: Option<&PairKey>) -> Option<Connection<C>> {
        while let Some((key, queued)) = self.clock.pop_front() {
            let Some(conn) = self.conns.get_mut(&key) else {
                continue; // already gone
            };
            if conn.queued != queued {
                continue; // stale
            }
            if conn.last_frame > queued || spare == Some(&key) {
                conn.queued = conn.last_frame;
                self.clock.push_back((key, conn.last_frame));
                continue;
            }
            if let Some(conn) = self.conns.remove(&key) {
                return Some(conn);
            }
        }
        None
    }

    /// The address pairs of the open connections, those charged most first, the earlier
    /// connection first among equals: the table's order is where its hasher put the keys,
    /// and what a budget gives up must not hang on that.
    pub(super) fn by_charge(&self) -> Vec<(usize, PairKey)> {
        let mut by_charge: Vec<(usize, u64, PairKey)> = self
            .conns
            .iter()
            .map(|(k, c)| (c.charged, c.info.index, *k))
            .collect();
        by_charge.sort_unstable_by_key(|(charged, index, _)| (std::cmp::Reverse(*charged), *index));
        by_charge
            .into_iter()
            .map(|(charged, _, key)| (charged, key))
            .collect()
    }

    /// The address pairs of the connections still followed, in connection order.
    pub(super) fn followed_in_order(&self) -> Vec<PairKey> {
        let mut followed: Vec<(u64, PairKey)> = self
            .conns
            .iter()
            .filter(|(_, conn)| conn.live.is_some())
            .map(|(key, conn)| (conn.info.index, *key))
            .collect();
        followed.sort_unstable_by_key(|(index, _)| *index);
        followed.into_iter().map(|(_, key)| key).collect()
    }

    /// What the table and its clock take, at their allocated capacity (a compaction
    /// leaves it).
    pub(super) fn cost(&self) -> usize {
        debug_assert_eq!(
            self.cost,
            self.cost_at(self.conns.capacity()),
            "the kept cost is current"
        );
        self.cost
    }

    /// The table at `capacity`, and its clock.
    fn cost_at(&self, capacity: usize) -> usize {
        table_cost(capacity, size_of::<(PairKey, Connection<C>)>())
            + heap_cost(self.clock.capacity() * size_of::<(PairKey, u64)>())
    }

    /// Whether one more connection fits without the table (and its clock, which grows
    /// with it) doubling past `bytes`; while it doubles, the old table is still allocated.
    pub(super) fn has_room(&self, bytes: usize) -> bool {
        let capacity = self.conns.capacity();
        if self.conns.len() < capacity {
            return true;
        }
        let slot = size_of::<(PairKey, Connection<C>)>();
        let doubling = self.cost_at(2 * capacity.max(4)) + table_cost(capacity, slot);
        doubling <= bytes
    }

    /// [`Self::cost`] worked out from the tables as they are now.
    #[cfg(test)]
    pub(super) fn cost_now(&self) -> usize {
        self.cost_at(self.conns.capacity())
    }

    /// Entries in the clock, current and stale.
    #[cfg(test)]
    pub(super) fn clock_len(&self) -> usize {
        self.clock.len()
    }

    /// Each open connection has one current clock entry, and the clock is within twice
    /// the open connections (plus slack): compaction is then amortised constant time.
    #[cfg(test)]
    pub(super) fn assert_clock_bounded(&self) {
        let n = self.conns.len();
        assert!(
            self.clock.len() <= 2 * n + 1025,
            "{} clock entries for {n} open connections",
            self.clock.len()
        );
        for (key, conn) in &self.conns {
            let current = self
                .clock
                .iter()
                .filter(|(k, q)| k == key && *q == conn.queued)
                .count();
            assert_eq!(current, 1, "connection {}", conn.info.index);
        }
    }
}
