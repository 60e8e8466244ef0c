//! The merger: the workers' outputs back in packet order, their connections numbered as
//! one thread numbers them, on to the output thread.

use std::collections::VecDeque;
use std::sync::mpsc;

use super::{FromWorker, Output};
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

/// Each worker's connections, by the worker's number: the run's number.
#[derive(Default)]
struct Numbers {
    of: Vec<Vec<u64>>,
    next: u64,
}

impl Numbers {
    /// Numbers the connections the workers opened in one epoch, in the order of the
    /// packets that opened them (a packet opens at most one).
    fn opened(&mut self, outputs: &[Output]) {
        let mut opened: Vec<(u64, usize)> = outputs
            .iter()
            .enumerate()
            .flat_map(|(worker, out)| out.opened.iter().map(move |packet| (*packet, worker)))
            .collect();
        opened.sort_unstable();
        for (_, worker) in opened {
            if let Some(numbers) = self.of.get_mut(worker) {
                numbers.push(self.next);
                self.next += 1;
            }
        }
    }

    /// The run's number of `worker`'s connection `local`: each was numbered when opened,
    /// before anything of it was handed on.
    fn of(&self, worker: usize, local: u64) -> u64 {
        let numbered = usize::try_from(local)
            .ok()
            .and_then(|local| self.of.get(worker)?.get(local));
        // not numbered would be a fault of the workers' outputs: u64::MAX says so
        numbered.copied().unwrap_or(u64::MAX)
    }

    /// `item` with the run's number of its connection.
    fn renumbered(&self, worker: usize, mut item: Item) -> Item {
        let ends = item.endpoints_mut();
        ends.connection = self.of(worker, ends.connection);
        item
    }
}

/// Takes the workers' outputs an epoch at a time until they end, then their closing
/// connections in the run's order; sends every exchange on through `batcher`.
pub(super) fn merge(outputs: Vec<mpsc::Receiver<FromWorker>>, mut batcher: Batcher) -> Merged {
    let mut numbers = Numbers {
        of: vec![Vec::new(); outputs.len()],
        next: 0,
    };
    let mut ends: Vec<Option<FromWorker>> = Vec::with_capacity(outputs.len());
    loop {
        let mut epoch = Vec::with_capacity(outputs.len());
        for rx in &outputs {
            match rx.recv() {
                Ok(FromWorker::Epoch(output)) => epoch.push(output),
                // the end, or a worker gone (its join reports why)
                other => {
                    epoch.push(Output::default());
                    ends.push(other.ok());
                }
            }
        }
        numbers.opened(&epoch);
        in_packet_order(epoch, &numbers, &mut batcher);
        batcher.tick();
        if !ends.is_empty() {
            break;
        }
    }
    // every worker ended together: the epochs go to all of them
    let merged = closing(&outputs, ends, &numbers, &mut batcher);
    batcher.finish();
    merged
}

/// One epoch's exchanges, in the order of the packets that completed them.
fn in_packet_order(epoch: Vec<Output>, numbers: &Numbers, batcher: &mut Batcher) {
    let mut items: Vec<(u64, usize, Item)> = Vec::new();
    for (worker, output) in epoch.into_iter().enumerate() {
        items.extend(
            output
                .items
                .into_iter()
                .map(|(packet, item)| (packet, worker, item)),
        );
    }
    // stable: a packet's exchanges are one worker's, in the order it made them
    items.sort_by_key(|(packet, _, _)| *packet);
    for (_, worker, item) in items {
        batcher.push(numbers.renumbered(worker, item));
    }
}

/// A worker's connections closing, as they come.
struct Closings<'a> {
    rx: &'a mpsc::Receiver<FromWorker>,
    /// Exchanges not yet sent on, each with its connection's run number.
    queue: VecDeque<(u64, Item)>,
    done: Option<(Closed, Diagnostics)>,
    gone: bool,
}

impl Closings<'_> {
    /// Fills the queue from the worker when it is empty; false once nothing is left.
    fn fill(&mut self, worker: usize, numbers: &Numbers) -> bool {
        while self.queue.is_empty() && self.done.is_none() && !self.gone {
            let next = self.rx.recv().ok();
            self.take(worker, numbers, next);
        }
        !self.queue.is_empty()
    }

    fn take(&mut self, worker: usize, numbers: &Numbers, message: Option<FromWorker>) {
        match message {
            Some(FromWorker::Closing(output)) => {
                let items = output.items.into_iter().map(|(local, item)| {
                    (numbers.of(worker, local), numbers.renumbered(worker, item))
                });
                self.queue.extend(items);
            }
            Some(FromWorker::Done(done)) => self.done = Some(*done),
            // an epoch after the end is not sent; a worker gone is reported by its join
            Some(FromWorker::Epoch(_)) | None => self.gone = true,
        }
    }
}

/// The workers' closing connections, interleaved in the run's numbering (each worker
/// closes its own in its order, which is the run's); then what they left.
fn closing(
    outputs: &[mpsc::Receiver<FromWorker>],
    ends: Vec<Option<FromWorker>>,
    numbers: &Numbers,
    batcher: &mut Batcher,
) -> Merged {
    let mut workers: Vec<Closings<'_>> = outputs
        .iter()
        .zip(ends)
        .enumerate()
        .map(|(worker, (rx, first))| {
            let mut closings = Closings {
                rx,
                queue: VecDeque::new(),
                done: None,
                gone: false,
            };
            closings.take(worker, numbers, first);
            closings
        })
        .collect();
    loop {
        let mut lowest: Option<(u64, usize)> = None;
        for (worker, closings) in workers.iter_mut().enumerate() {
            if !closings.fill(worker, numbers) {
                continue;
            }
            if let Some((connection, _)) = closings.queue.front() {
                if lowest.is_none_or(|(c, _)| *connection < c) {
                    lowest = Some((*connection, worker));
                }
            }
        }
        let Some((connection, worker)) = lowest else {
            break;
        };
        // the whole connection's exchanges, in the order its worker made them
        let Some(closings) = workers.get_mut(worker) else {
            break;
        };
        while closings
            .queue
            .front()
            .is_some_and(|(c, _)| *c == connection)
        {
            if let Some((_, item)) = closings.queue.pop_front() {
                batcher.push(item);
            }
            closings.fill(worker, numbers);
        }
    }
    let mut merged = Merged {
        closed: Closed::default(),
        diagnostics: Vec::with_capacity(workers.len()),
    };
    for (worker, closings) in workers.into_iter().enumerate() {
        let Some((closed, mut diagnostics)) = closings.done else {
            continue;
        };
        merged.closed.add(closed);
        diagnostics.renumber(|local| numbers.of(worker, local));
        merged.diagnostics.push(diagnostics);
    }
    merged
}
