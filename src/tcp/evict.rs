//! Forgetting open connections: the least recently active one (by the table's clock)
//! goes when a new connection would pass `--max-connections` or the table's share of the
//! memory budget, or when shedding could not get under the budget. One still followed is
//! ended as at the end of the capture and marked evicted, and each kind of eviction is
//! said in a diagnostic.

use super::pair::PairKey;
use super::{StreamHandler, Tracker};
use crate::diag::obs;
use crate::diag::{Diagnostics, GivenUp, Kind, Observation};
use crate::packet_ref::PacketRef;

/// Share of the memory budget the table of open connections and its clock may grow to:
/// past it a new connection replaces the least recently active one.
const TABLE_SHARE: usize = 4;

impl<C: Default> Tracker<C> {
    /// Room for a new connection on `key`, made before it is queued so that it is never
    /// the one forgotten (entries ahead of it get a second chance when they saw packets).
    pub(super) fn make_room<H: StreamHandler<Conn = C>>(
        &mut self,
        key: &PairKey,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        if self.open.contains(key) {
            return; // it replaces the connection there
        }
        loop {
            // the table's own room is the memory budget's, not --max-connections'
            let why = if self.open.len() >= self.max_connections {
                Forget::ForConnections
            } else if !self.open.has_room(self.budget.max_memory() / TABLE_SHARE) {
                Forget::ForMemory(None)
            } else {
                break;
            };
            if !self.evict_one(why, at, handler, diags) {
                break;
            }
        }
    }

    /// Still over `target` once every connection gave up what it holds (their own
    /// states fill it): the least recently active connections are forgotten until it is
    /// met, never the one on `current` (the packet's).
    pub(super) fn evict_for_memory<H: StreamHandler<Conn = C>>(
        &mut self,
        target: usize,
        current: &PairKey,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        while self.charged() > target
            && self.open.len() > 1
            && !self.budget.step_filled(handler.output_bytes())
            && self.evict_one(Forget::ForMemory(Some(current)), at, handler, diags)
        {}
    }

    /// Forgets the least recently active connection (but the one the packet being read is
    /// on, when the memory budget asks). Returns whether there was one to forget.
    fn evict_one<H: StreamHandler<Conn = C>>(
        &mut self,
        why: Forget<'_>,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) -> bool {
        let spare = match why {
            Forget::ForMemory(spare) => spare,
            Forget::ForConnections => None,
        };
        let Some(mut conn) = self.open.take_least_recent(spare) else {
            return false;
        };
        self.budget.uncharge(conn.charged);
        if conn.live.is_none() {
            return true;
        }
        conn.info.evicted = true;
        self.forgotten += 1;
        let index = conn.info.index;
        if let Forget::ForMemory(_) = why {
            let what = Observation::MemoryLimit(obs::MemoryLimit {
                connection: conn.info.ends(),
                given_up: GivenUp::Connection {
                    max_memory: self.budget.whole() as u64,
                },
            });
            diags.add(Some(index), at, what);
        } else {
            if self.evicted == 0 {
                let what = Observation::ConnectionLimit(obs::ConnectionLimit {
                    open: self.open.len() as u64,
                    max_connections: self.max_connections as u64,
                    first: conn.info.ends(),
                });
                diags.add(Some(index), at, what);
            } else {
                diags.count_more(Kind::ConnectionLimit, 1);
            }
            self.evicted += 1;
        }
        conn.end(at, handler, diags);
        true
    }
}

/// Why a connection is forgotten.
#[derive(Debug, Clone, Copy)]
enum Forget<'a> {
    /// The memory budget: what connections hold, or the table's room in it; never the
    /// connection the packet being read is on, when given.
    ForMemory(Option<&'a PairKey>),
    /// `--max-connections` open at once.
    ForConnections,
}
