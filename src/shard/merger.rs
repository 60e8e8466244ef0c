//! The merger: the workers' parts back in packet order, their connections numbered as
//! one thread numbers them, on to the output thread.
//!
//! The workers share one channel to the merger, so that it never waits on one worker
//! while another waits on it. What it holds is what the other workers completed past
//! the slowest one: as far as the capture thread lets them run ahead, a few epochs.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::vec;

use super::{part_bytes, FromWorker, Handed, Output, Progress};
use crate::connections::Closed;
use crate::diag::Diagnostics;
use crate::worker::{Batcher, Item};

/// What the merger hands back once every worker is done.
pub(super) struct Merged {
    /// What the workers' connections left, added up.
    pub closed: Closed,
    /// Each worker's diagnostics, its connections numbered as the run numbers them.
    pub diagnostics: Vec<Diagnostics>,
}

/// Exchanges in the order a worker handed them on, each tagged (with the packet that
/// completed it, or its connection), kept in the parts they came in: each part's room
/// goes once it is sent on, and nothing is copied.
#[derive(Default)]
struct Parts(VecDeque<vec::IntoIter<(u64, Item)>>);

impl Parts {
    fn push(&mut self, items: Vec<(u64, Item)>) {
        if !items.is_empty() {
            self.0.push_back(items.into_iter());
        }
    }

    /// The next exchange's tag (no part held is empty).
    fn front(&self) -> Option<u64> {
        self.0
            .front()
            .and_then(|part| part.as_slice().first())
            .map(|(tag, _)| *tag)
    }

    fn pop(&mut self) -> Option<(u64, Item)> {
        let part = self.0.front_mut()?;
        let next = part.next();
        if part.as_slice().is_empty() {
            self.0.pop_front();
        }
        next
    }

    /// The exchanges tagged `tag` at the front, in order.
    fn pop_tagged(&mut self, tag: u64) -> Option<Item> {
        if self.front() == Some(tag) {
            self.pop().map(|(_, item)| item)
        } else {
            None
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One worker's parts, as far as they came.
#[derive(Default)]
struct Lane {
    /// Exchanges not yet sent on, each with the packet that completed it.
    items: Parts,
    /// Packets that opened connections not yet numbered.
    opened: VecDeque<u64>,
    /// Nothing more comes for a packet before this one ([`u64::MAX`] once closing).
    reached: u64,
    /// Exchanges of the connections it closed at the end, each with its own number.
    closing: Parts,
    /// Its connections' run numbers, by its own.
    numbers: Vec<u64>,
    done: Option<(Closed, Diagnostics)>,
    /// Gone without a word (a panic, which its join reports).
    gone: bool,
}

impl Lane {
    fn take(&mut self, handed: Handed) {
        match handed {
            Handed::Part(Output {
                items,
                opened,
                reached,
            }) => {
                self.items.push(items);
                self.opened.extend(opened);
                self.reached = self.reached.max(reached);
            }
            Handed::Closing(output) => {
                self.reached = u64::MAX;
                self.closing.push(output.items);
            }
            Handed::Done(done) => {
                self.reached = u64::MAX;
                self.done = Some(*done);
            }
        }
    }

    /// The run's number of its connection `local`: each was numbered when opened,
    /// before anything of it was sent on.
    fn number(&self, local: u64) -> u64 {
        let numbered = usize::try_from(local)
            .ok()
            .and_then(|local| self.numbers.get(local));
        // not numbered would be a fault of the workers' parts: u64::MAX says so
        numbered.copied().unwrap_or(u64::MAX)
    }

    /// `item` with the run's number of its connection.
    fn renumbered(&self, mut item: Item) -> Item {
        let ends = item.endpoints_mut();
        ends.connection = self.number(ends.connection);
        item
    }

    /// Whether its closing connections are all here or the next is.
    fn closing_ready(&self) -> bool {
        !self.closing.is_empty() || self.done.is_some() || self.gone
    }
}

/// Takes the workers' parts as they come, sending on in packet order what every worker
/// has passed, then their closing connections in the run's order; every exchange goes
/// through `batcher`.
/// `progress` is kept at what the lanes hold and how far every worker is, for the
/// threads that feed the merger to wait on.
pub(super) fn merge(
    rx: &mpsc::Receiver<FromWorker>,
    workers: usize,
    batcher: Batcher,
    progress: &Progress,
) -> Merged {
    let mut lanes: Vec<Lane> = (0..workers).map(|_| Lane::default()).collect();
    let mut batcher = Held {
        batcher,
        progress,
        sent: 0,
    };
    let mut next_number = 0;
    loop {
        let Ok(FromWorker { worker, handed }) = rx.recv() else {
            // every worker's end dropped: those not done are gone
            for lane in &mut lanes {
                lane.gone = lane.done.is_none();
                lane.reached = u64::MAX;
            }
            break;
        };
        if let Some(lane) = lanes.get_mut(worker) {
            lane.take(handed);
        }
        let passed = lanes.iter().map(|l| l.reached).min().unwrap_or(u64::MAX);
        number_opened(&mut lanes, passed, &mut next_number);
        send_passed(&mut lanes, passed, &mut batcher);
        send_closing(&mut lanes, &mut batcher);
        batcher.settle(passed);
        if lanes.iter().all(|l| l.done.is_some()) {
            break;
        }
    }
    send_closing(&mut lanes, &mut batcher);
    batcher.batcher.finish();
    let mut merged = Merged {
        closed: Closed::default(),
        diagnostics: Vec::with_capacity(lanes.len()),
    };
    for mut lane in lanes {
        let Some((closed, mut diagnostics)) = lane.done.take() else {
            continue;
        };
        merged.closed.add(closed);
        diagnostics.renumber(|local| lane.number(local));
        merged.diagnostics.push(diagnostics);
    }
    merged
}

/// The output thread's batcher, counting what passes it.
struct Held<'a> {
    batcher: Batcher,
    progress: &'a Progress,
    /// [`part_bytes`] of the exchanges sent since the last [`Held::settle`].
    sent: u64,
}

impl Held<'_> {
    fn push(&mut self, item: Item) {
        self.sent = self.sent.saturating_add(part_bytes(&item));
        self.batcher.push(item);
    }

    fn tick(&mut self) {
        self.batcher.tick();
    }

    /// Takes what was sent off what is held (closing exchanges were never counted in),
    /// and says every worker has passed `passed`.
    fn settle(&mut self, passed: u64) {
        let sent = std::mem::take(&mut self.sent);
        self.progress.sent(sent, passed);
    }
}

/// Numbers the connections opened before `passed`, in the order of the packets that
/// opened them (a packet opens at most one).
fn number_opened(lanes: &mut [Lane], passed: u64, next_number: &mut u64) {
    loop {
        let first = lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.opened.front().map(|packet| (*packet, i)))
            .filter(|(packet, _)| *packet < passed)
            .min();
        let Some((_, worker)) = first else {
            return;
        };
        if let Some(lane) = lanes.get_mut(worker) {
            lane.opened.pop_front();
            lane.numbers.push(*next_number);
            *next_number += 1;
        }
    }
}

/// Sends on, in packet order, the exchanges completed before `passed`.
fn send_passed(lanes: &mut [Lane], passed: u64, batcher: &mut Held<'_>) {
    loop {
        let first = lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.items.front().map(|packet| (packet, i)))
            .filter(|(packet, _)| *packet < passed)
            .min();
        let Some((packet, worker)) = first else {
            return;
        };
        let Some(lane) = lanes.get_mut(worker) else {
            return;
        };
        // the packet's exchanges, all its worker's, in the order it made them
        while let Some(item) = lane.items.pop_tagged(packet) {
            batcher.push(lane.renumbered(item));
        }
        batcher.tick();
    }
}

/// Once every worker is closing: sends on each closed connection's exchanges, lowest
/// run number first, while every worker's next is known (each closes its own in its
/// order, which is the run's).
fn send_closing(lanes: &mut [Lane], batcher: &mut Held<'_>) {
    if lanes.iter().any(|l| l.reached != u64::MAX) {
        return;
    }
    while lanes.iter().all(Lane::closing_ready) {
        let first = lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.closing.front().map(|local| (l.number(local), i)))
            .min();
        let Some((number, worker)) = first else {
            return;
        };
        let Some(lane) = lanes.get_mut(worker) else {
            return;
        };
        // the whole connection: a worker hands on a closing connection whole
        while let Some(local) = lane.closing.front() {
            if lane.number(local) != number {
                break;
            }
            if let Some((_, item)) = lane.closing.pop() {
                batcher.push(lane.renumbered(item));
            }
        }
    }
}
