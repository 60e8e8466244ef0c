//! Records of closed connections: enough of each to tell its late packets (retransmitted
//! FINs, final ACKs) from the SYN of a new connection on the same address pair.
//!
//! Bounded by count and by a share of the memory budget, in two generations per address
//! family: a capture of many short connections keeps its memory flat.

use std::collections::HashMap;

use super::connection::starts_new;
use super::pair::PairKey;
use crate::decode::TcpSegmentView;
use crate::heap::{table_cost, ChargedTableHasher};

/// What stays of a closed connection. Twelve bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Closed {
    isn: u32,
    syn_ack_ack: u32,
    /// Bit 0: `isn` is known; bit 1: `syn_ack_ack` is.
    known: u8,
}

impl Closed {
    pub(super) fn new(isn: Option<u32>, syn_ack_ack: Option<u32>) -> Self {
        Self {
            isn: isn.unwrap_or(0),
            syn_ack_ack: syn_ack_ack.unwrap_or(0),
            known: u8::from(isn.is_some()) | u8::from(syn_ack_ack.is_some()) << 1,
        }
    }

    fn isn(&self) -> Option<u32> {
        (self.known & 1 != 0).then_some(self.isn)
    }

    fn syn_ack_ack(&self) -> Option<u32> {
        (self.known & 2 != 0).then_some(self.syn_ack_ack)
    }
}

/// The closed connections on IPv4 address pairs (keyed in twelve bytes), and on others.
#[derive(Debug)]
pub(super) struct ClosedRecords {
    v4: Generations<[u32; 3]>,
    other: Generations<PairKey>,
}

impl ClosedRecords {
    /// At most `max` records per address family.
    pub(super) fn new(max: usize) -> Self {
        Self {
            v4: Generations::new(max),
            other: Generations::new(max),
        }
    }

    /// At most `max` records, and no more than `bytes` of tables, per address family.
    pub(super) fn limit(&mut self, max: usize, bytes: usize) {
        self.v4.limit(max, bytes);
        self.other.limit(max, bytes);
    }

    /// What the records' tables take, at their capacity.
    pub(super) fn cost(&self) -> usize {
        self.v4.cost() + self.other.cost()
    }

    /// Whether `seg`, on an address pair with no open connection, is a late packet of the
    /// connection that closed there. A SYN starting a new connection forgets the record.
    pub(super) fn late_packet(&mut self, key: &PairKey, seg: &TcpSegmentView<'_>) -> bool {
        let Some(closed) = self.record(key) else {
            return false;
        };
        if !starts_new(closed.isn(), closed.syn_ack_ack(), seg) {
            if seg.syn && !seg.ack && closed.isn().is_none() {
                *closed = Closed::new(Some(seg.seq), closed.syn_ack_ack()); // its SYN, after the SYN+ACK
            }
            return true;
        }
        self.forget(key);
        false
    }

    /// Remembers a connection that just closed (its address pair has no record).
    pub(super) fn insert(&mut self, key: &PairKey, closed: Closed) {
        match key.v4() {
            Some(pair) => self.v4.insert(pair, closed),
            None => self.other.insert(*key, closed),
        }
    }

    /// The record of a closed connection on this address pair, if any. An empty table
    /// is not hashed into.
    fn record(&mut self, key: &PairKey) -> Option<&mut Closed> {
        match key.v4() {
            Some(pair) if !self.v4.is_empty() => self.v4.get_mut(&pair),
            Some(_) => None,
            None if !self.other.is_empty() => self.other.get_mut(key),
            None => None,
        }
    }

    fn forget(&mut self, key: &PairKey) {
        match key.v4() {
            Some(pair) => self.v4.remove(&pair),
            None => self.other.remove(key),
        }
    }

    /// [`Self::cost`] worked out from the tables as they are now.
    #[cfg(test)]
    pub(super) fn cost_now(&self) -> usize {
        self.v4.tables_cost() + self.other.tables_cost()
    }

    /// Records held on IPv4 address pairs, and on others.
    #[cfg(test)]
    pub(super) fn lens(&self) -> (usize, usize) {
        (self.v4.len(), self.other.len())
    }
}

/// Records of the most recently closed connections, in two generations: when the newer
/// holds `per_generation` records, the older is forgotten whole. No queue, no per-record
/// bookkeeping beyond the record itself.
#[derive(Debug)]
struct Generations<K> {
    current: HashMap<K, Closed, ChargedTableHasher>,
    previous: HashMap<K, Closed, ChargedTableHasher>,
    per_generation: usize,
    /// [`Self::cost`], worked out again only where the tables' capacities can change
    /// (an insert, a removal): the budget asks for it after every packet.
    cost: usize,
}

impl<K: std::hash::Hash + Eq> Generations<K> {
    fn new(max: usize) -> Self {
        Self {
            current: HashMap::default(),
            previous: HashMap::default(),
            per_generation: (max / 2).max(1),
            cost: 0,
        }
    }

    fn get_mut(&mut self, key: &K) -> Option<&mut Closed> {
        match self.current.get_mut(key) {
            Some(closed) => Some(closed),
            None => self.previous.get_mut(key),
        }
    }

    fn remove(&mut self, key: &K) {
        if self.current.remove(key).is_none() {
            self.previous.remove(key);
        }
        // The capacity a table reports drops when a removal leaves a tombstone.
        self.cost = self.tables_cost();
    }

    fn insert(&mut self, key: K, closed: Closed) {
        if self.current.len() >= self.per_generation {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, closed);
        self.cost = self.tables_cost();
    }

    fn is_empty(&self) -> bool {
        self.current.is_empty() && self.previous.is_empty()
    }

    /// What both generations' tables take, at their capacity.
    fn cost(&self) -> usize {
        debug_assert_eq!(self.cost, self.tables_cost(), "the kept cost is current");
        self.cost
    }

    fn tables_cost(&self) -> usize {
        table_cost(self.current.capacity(), size_of::<(K, Closed)>())
            + table_cost(self.previous.capacity(), size_of::<(K, Closed)>())
    }

    /// At most `max` records, and no more than `bytes` in both generations' tables,
    /// each of which may be at its worst load (just after it doubled).
    fn limit(&mut self, max: usize, bytes: usize) {
        let worst_record = 2 * (size_of::<(K, Closed)>() + 1) * 8 / 7;
        self.per_generation = (max / 2).min(bytes / 2 / worst_record).max(1);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }
}
