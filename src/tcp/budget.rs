//! The memory budget (`--max-memory`) for what the tracker holds: each connection is
//! charged what it holds after each of its packets, the tables what they take, and when
//! the sum, or the process's resident figure, grows past the budget, a shedding pass
//! gives up a quarter of it, a step a packet.

use super::pair::PairKey;
use super::{StreamHandler, Tracker};
use crate::diag::Diagnostics;
use crate::packet_ref::PacketRef;

/// Newly charged bytes between looks at the resident figure: a look reads a file of
/// `/proc`, some microseconds, paid for by a mebibyte of input held.
const RESIDENT_LOOK_EVERY: usize = 1 << 20;

/// Resident growth between two looks that is taken for the other threads' work, not
/// for what the budget charges.
const RESIDENT_NOISE: usize = 256 << 10;
/// Resident bytes past the budget taken for the program's own (its code, the analysis,
/// the report being written): 24 MiB of the 32 MiB the promise allows past the budget,
/// less a sixteenth of the budget, since what a large budget holds grows further between
/// two looks and frees nothing resident at once.
fn resident_slack(max_memory: usize) -> usize {
    (24usize << 20).saturating_sub(max_memory / 16)
}

/// Charge one packet's step of a shedding pass gives up: a sixty-fourth of the budget
/// (at least a mebibyte), so a pass of a quarter takes some sixteen packets.
fn shed_step(max_memory: usize) -> usize {
    (max_memory / 64).max(1 << 20)
}

/// What is charged against the budget and when to shed.
#[derive(Debug)]
pub(super) struct Budget {
    max_memory: usize,
    /// The whole of `--max-memory`, of which `max_memory` is the connections' share: the
    /// process's resident figure is judged against it.
    whole: usize,
    /// The sum of the open connections' charges (the tables' are counted apart).
    charged: usize,
    /// What was still charged after the last shedding pass: when shedding cannot get
    /// under the budget (the connections' own entries fill it), the next pass waits until
    /// a quarter of the budget more is charged, so each pass's look at every connection
    /// is paid for by that much new input.
    charged_after_shed: usize,
    /// Where the process's resident bytes are read, when they can be: the allocator keeps
    /// freed room the charges no longer count (see [`crate::resident`]).
    resident: Option<fn() -> Option<usize>>,
    /// Gives the allocator's free pages back to the system, before a look decides to shed.
    give_back: fn(),
    /// Bytes newly charged since the resident figure was last read, and that figure.
    grown_since_look: usize,
    resident_seen: usize,
    /// What the last shedding pass left charged: the resident figure sheds again only
    /// once the charges grew an eighth of the budget past it, since the room a pass
    /// frees stays resident, on the allocator's free lists, until it is reused.
    left_by_last_shed: usize,
    /// The charge a shedding pass under way sheds to, a step a packet.
    shedding_to: Option<usize>,
}

impl Budget {
    pub(super) fn new(max_memory: usize) -> Self {
        Self {
            max_memory,
            whole: max_memory,
            charged: 0,
            charged_after_shed: 0,
            resident: None,
            give_back: || {},
            grown_since_look: 0,
            resident_seen: 0,
            left_by_last_shed: 0,
            shedding_to: None,
        }
    }

    pub(super) fn max_memory(&self) -> usize {
        self.max_memory
    }

    /// `--max-memory`, of which the connections' budget is a share.
    pub(super) fn whole(&self) -> usize {
        self.whole
    }

    pub(super) fn set_max_memory(&mut self, max_memory: usize, whole: usize) {
        self.max_memory = max_memory;
        self.whole = whole.max(max_memory);
    }

    pub(super) fn watch_resident(&mut self, probe: fn() -> Option<usize>, give_back: fn()) {
        self.resident = Some(probe);
        self.give_back = give_back;
    }

    /// What the open connections are charged.
    pub(super) fn charged(&self) -> usize {
        self.charged
    }

    /// Charges a connection `cost` after a packet, in place of what it was `charged`:
    /// what it grew by counts toward the next look at the resident figure.
    pub(super) fn charge(&mut self, charged: &mut usize, cost: usize) {
        self.grown_since_look += cost.saturating_sub(*charged);
        self.recharge(charged, cost);
    }

    /// Charges a connection `cost` in place of what it was `charged`, after shedding.
    pub(super) fn recharge(&mut self, charged: &mut usize, cost: usize) {
        self.charged = self.charged.saturating_sub(*charged) + cost;
        *charged = cost;
    }

    /// Takes a connection leaving the table off the budget.
    pub(super) fn uncharge(&mut self, charged: usize) {
        self.charged = self.charged.saturating_sub(charged);
    }

    /// Given all that is charged now, the charge to shed to, if a pass is under way or
    /// due: three quarters of the budget once over it (and a quarter past what the last
    /// pass could not shed), or of the charge when the process outgrew the budget.
    fn shed_target(&mut self, charged: usize) -> Option<usize> {
        if charged <= self.max_memory {
            self.charged_after_shed = 0;
        }
        let quarter = self.max_memory / 4;
        if let Some(target) = self.shedding_to {
            Some(target)
        } else if charged
            > self
                .max_memory
                .max(self.charged_after_shed.saturating_add(quarter))
        {
            Some(self.max_memory / 4 * 3)
        } else if charged > self.left_by_last_shed.saturating_add(quarter / 2)
            && self.resident_grew_past_budget()
        {
            Some(charged / 4 * 3)
        } else {
            None
        }
    }

    /// Whether the process's resident bytes grew past the budget since
    /// they were last read: read once a [`RESIDENT_LOOK_EVERY`] newly charged. Growth,
    /// not size: the freed room a shed leaves is reused before the process grows again,
    /// so the figure staying high is no reason to shed once more.
    fn resident_grew_past_budget(&mut self) -> bool {
        if self.grown_since_look < RESIDENT_LOOK_EVERY {
            return false;
        }
        self.grown_since_look = 0;
        let Some(now) = self.resident.and_then(|probe| probe()) else {
            return false;
        };
        // Growth is counted from the figure last judged grown (or a lower one seen
        // since), so that slow growth adds up; growth within a few pages of it is the
        // other threads' noise (the analysis's tables, a batch in flight), which would
        // make what is given up differ from run to run.
        let grew = now > self.resident_seen.saturating_add(RESIDENT_NOISE);
        if grew || now < self.resident_seen {
            self.resident_seen = now;
        }
        if !grew || now <= self.whole {
            return false;
        }
        // The allocator's free pages go back first: that gives up nothing read. Only a
        // process still past the budget by more than the program's own share of the
        // promise (budget + 32 MiB) sheds what it holds: below that the growth is the
        // analysis's and the report's, which shedding the input would not bring down,
        // and whose timing would make what is given up differ from run to run.
        (self.give_back)();
        let after = self.resident.and_then(|probe| probe()).unwrap_or(now);
        self.resident_seen = after;
        after > self.whole.saturating_add(resident_slack(self.whole))
    }

    /// Where this packet's step of a pass to `target` stops, from `before` charged.
    fn step_stop(&self, before: usize, target: usize) -> usize {
        before
            .saturating_sub(shed_step(self.max_memory))
            .max(target)
    }

    /// A step from `before` left `after` charged: the pass goes on at the next packet
    /// unless it met `target` or could shed nothing.
    fn step_done(&mut self, target: usize, before: usize, after: usize) {
        if after <= target || after >= before {
            self.shedding_to = None;
            self.charged_after_shed = after;
            self.left_by_last_shed = after;
        } else {
            self.shedding_to = Some(target);
        }
    }

    /// Whether what a shedding step gave up already fills its share of output waiting
    /// to go downstream (`output_bytes`, a step's worth): the rest waits for the next packet.
    pub(super) fn step_filled(&self, output_bytes: usize) -> bool {
        output_bytes > shed_step(self.max_memory)
    }
}

impl<C: Default> Tracker<C> {
    /// After a packet of the connection on `key` was charged: a step of shedding when a
    /// pass is under way or due.
    pub(super) fn shed_if_over<H: StreamHandler<Conn = C>>(
        &mut self,
        key: &PairKey,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let charged = self.charged();
        if let Some(target) = self.budget.shed_target(charged) {
            self.shed_step(target, key, at, handler, diags);
        }
    }

    /// One packet's share of a shedding pass to `target`: at most [`shed_step`]'s worth
    /// is given up, so what the connections give up (requests that become exchanges of
    /// unknown outcome) goes downstream a step at a time, not in one burst the budget
    /// does not charge. When the connections cannot give up enough, the least recently
    /// active are forgotten, never the one on `current` (the packet's).
    fn shed_step<H: StreamHandler<Conn = C>>(
        &mut self,
        target: usize,
        current: &PairKey,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let before = self.charged();
        let stop_at = self.budget.step_stop(before, target);
        self.shed(stop_at, at, handler, diags);
        self.evict_for_memory(stop_at, current, at, handler, diags);
        let after = self.charged();
        self.budget.step_done(target, before, after);
    }

    /// The connections that hold most give up what they hold until `target` is charged,
    /// three quarters of the budget (or of what is charged, when the process outgrew
    /// its charges). Each pass frees a quarter, so its cost, one look at every
    /// connection, is paid rarely.
    fn shed<H: StreamHandler<Conn = C>>(
        &mut self,
        target: usize,
        at: PacketRef,
        handler: &mut H,
        diags: &mut Diagnostics,
    ) {
        let tables = self.tables_cost();
        for (_, key) in self.open.by_charge() {
            if self.budget.charged() + tables <= target
                || self.budget.step_filled(handler.output_bytes())
            {
                break;
            }
            let Some(conn) = self.open.get_mut(&key) else {
                continue;
            };
            conn.shed(at, handler, diags);
            let cost = conn.cost(handler);
            self.budget.recharge(&mut conn.charged, cost);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // Each test's probe and hook have statics of their own: tests run at once.
    static RESIDENT: AtomicUsize = AtomicUsize::new(0);
    static GIVEN_BACK: AtomicUsize = AtomicUsize::new(0);

    /// When a look finds the process grown past the budget, the allocator's free pages
    /// are given back; it sheds only when the process is still past the budget and the
    /// program's share of the promise. A look that finds it has not grown (or is within
    /// the budget) gives nothing back.
    #[test]
    fn outgrowing_the_budget_gives_the_allocators_free_pages_back() {
        let mut budget = Budget::new(16 << 20);
        budget.watch_resident(
            || Some(RESIDENT.load(Ordering::Relaxed)),
            || {
                GIVEN_BACK.fetch_add(1, Ordering::Relaxed);
            },
        );
        let mut charged = 0;
        let mut look = |budget: &mut Budget, resident: usize| {
            RESIDENT.store(resident, Ordering::Relaxed);
            let more = charged + RESIDENT_LOOK_EVERY;
            budget.charge(&mut charged, more);
            budget.resident_grew_past_budget()
        };
        assert!(!look(&mut budget, 8 << 20), "within the budget");
        assert_eq!(GIVEN_BACK.load(Ordering::Relaxed), 0);
        // past the budget, within the program's share of the promise: pages go back,
        // nothing read is given up
        assert!(!look(&mut budget, 30 << 20), "grown, within the slack");
        assert_eq!(GIVEN_BACK.load(Ordering::Relaxed), 1);
        assert!(look(&mut budget, 50 << 20), "grown past budget and slack");
        assert_eq!(GIVEN_BACK.load(Ordering::Relaxed), 2);
        assert!(!look(&mut budget, 45 << 20), "over it, but not grown");
        assert_eq!(GIVEN_BACK.load(Ordering::Relaxed), 2);
    }
}
