//! `--threads N`: the connections' work (reassembly, the Kafka stage, pairing) spread
//! over N workers, and put back in packet order, so that every report is the one a
//! single thread writes.
//!
//! The capture thread reads, decodes and hands each TCP segment to the worker of its
//! address pair ([`Dispatch`]), copying the segment's bytes into that worker's share of an
//! *epoch*: a run of packets that every worker is handed at once, its share empty or not.
//! Each worker numbers its own connections, tags what it completes with the packet that
//! completed it, and hands it back in parts, each saying which packet the worker has
//! reached: at the end of each epoch, and sooner when a part holds 256 KiB's worth. What is
//! handed to the merger and not yet sent on is counted from the moment it is handed
//! (`shard/progress.rs`): past a sixteenth of the budget (1 to 4 MiB), the capture thread
//! and the workers ahead of the slowest wait. The merger numbers the connections opened before the packet every worker
//! has reached in the order of the packets that opened them (as one thread numbers them),
//! renumbers the exchanges completed before it and sends them on to the output thread in
//! packet order. At the end the workers close their connections in their own order, which
//! the merger interleaves in the run's, and hand back their diagnostics, placed for
//! [`Diagnostics::merge_in_order`]. At the end of each epoch a worker tells the others what
//! it found ([`Found`]), so that none lists what the run's first thousand of a kind come
//! before.
//!
//! Limits are split: each worker holds at most its share of `--max-connections` and of
//! the connections' part of `--max-memory`. Where a limit is reached, which connection
//! is given up can depend on the number of threads; the report says so in its
//! `connection_limit` and `memory_limit` diagnostics either way.

mod merger;
mod progress;
mod segment;

use std::sync::{mpsc, Arc};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::connections::{Closed, Connections, Emit};
use crate::decode::TcpSegmentView;
use crate::diag::{Diagnostics, Found, Place, Stage};
use crate::error::Error;
use crate::packet_ref::{PacketRef, Recall};
use crate::tcp::Closing;
use crate::worker::{held_estimate, Batcher, Item};
use progress::{Ended, Progress};
use segment::{Epoch, Segment};

/// What an exchange takes while handed between threads: its heap, as [`held_estimate`]
/// reckons it, and its own place in a part (a few hundred bytes, which a small message's
/// heap is far below).
fn part_bytes(item: &Item) -> u64 {
    held_estimate(item).saturating_add(size_of::<(u64, Item)>() as u64)
}

/// Packets in an epoch at most: a few channel operations per thousand packets.
const EPOCH_PACKETS: usize = 1024;
/// Segment bytes in an epoch at most (all workers' shares together).
const EPOCH_BYTES: usize = 256 << 10;
/// Epochs queued for each worker before the capture thread waits, and parts queued
/// for the merger per worker: with one being filled and one being worked on, what is in
/// flight stays within a few epochs' bytes per worker.
const QUEUE: usize = 2;
/// Exchanges a worker holds (as [`part_bytes`] reckons them) before it hands them
/// on without waiting for its epoch to end: a packet that ends thousands of waiting
/// requests at once does not wait with them for the other workers.
const PART_BYTES: u64 = 256 << 10;
/// What a worker holds beside its connections' charges, as massif and heaptrack show it
/// on the budget tests: the diagnostics it lists before the others' counts reach it, its
/// tables, the room its queues keep.
const WORKER_OWN: usize = 512 << 10;
/// Longest a packet waits in an epoch not yet full, when more packets come slowly (a
/// live capture): streamed output stays prompt.
const EPOCH_WAIT: Duration = Duration::from_millis(20);
/// Packets between two looks at the clock while an epoch fills.
const PACKETS_PER_CLOCK_READ: usize = 32;

/// The workers `--threads` asks for. 0: the cores the reading and output threads leave
/// (at least 1, which does the work on the reading thread): on two cores, workers beside
/// those two threads only take turns with them (`docs/performance.md`).
pub fn threads(asked: usize) -> usize {
    match asked {
        0 => std::thread::available_parallelism()
            .map_or(1, |cores| usize::from(cores).saturating_sub(2))
            .max(1),
        n => n,
    }
}

/// What goes to a worker.
enum ToWorker {
    Epoch(Epoch),
    /// Every packet is through; the last was this one.
    End(PacketRef),
}

/// What a worker hands back, on the channel the workers share: which one, and what.
struct FromWorker {
    worker: usize,
    handed: Handed,
}

enum Handed {
    /// What the worker completed, up to [`Output::reached`].
    Part(Output),
    /// Connections closed at the end, `Output::items` tagged with their connection's
    /// number (the worker's own).
    Closing(Output),
    /// The worker is done.
    Done(Box<(Closed, Diagnostics)>),
}

/// What a worker completed since its last part.
#[derive(Default)]
struct Output {
    /// Exchanges, each with the packet that completed it (or, closing, its connection).
    items: Vec<(u64, Item)>,
    /// The packets that opened the worker's connections, in the worker's numbering.
    opened: Vec<u64>,
    /// Nothing more comes from this worker for a packet before this one.
    reached: u64,
}

/// The capture thread's end: hands each segment to its worker, an epoch at a time.
pub struct Dispatch<'scope> {
    workers: Vec<WorkerEnd>,
    /// Segments in the epoch being filled, and their bytes.
    packets: usize,
    bytes: usize,
    started: Option<Instant>,
    /// The packet after the last one dispatched: where an epoch sent now ends.
    next_packet: u64,
    progress: Arc<Progress>,
    merger: ScopedJoinHandle<'scope, merger::Merged>,
    handles: Vec<ScopedJoinHandle<'scope, ()>>,
}

/// A worker as the capture thread sees it.
struct WorkerEnd {
    tx: mpsc::SyncSender<ToWorker>,
    /// Epochs the worker is done with, for their room to be reused.
    spare: mpsc::Receiver<Epoch>,
    epoch: Epoch,
}

impl<'scope> Dispatch<'scope> {
    /// Starts `n` workers with `config`'s limits, and the merger, which sends the
    /// exchanges on through `batcher`.
    pub fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        config: &'env Config,
        n: usize,
        batcher: Batcher,
        recall: &Arc<dyn Recall>,
    ) -> Result<Self, Error> {
        let n = n.max(1);
        let mut workers = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        let (out_tx, outputs) = mpsc::sync_channel(QUEUE * n);
        let limit = progress::held_limit(config.max_memory);
        let progress = Arc::new(Progress::new(limit));
        // what is in flight between the threads, and each worker's own, are charged to
        // the one budget: the merger's limit, the epochs queued, and per worker a part
        // being filled and what it holds beside its connections
        let per_worker = PART_BYTES as usize + WORKER_OWN;
        let in_flight = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_add((QUEUE + 2) * EPOCH_BYTES)
            .saturating_add(n.saturating_mul(per_worker));
        let found = Found::new(n);
        for index in 0..n {
            let (tx, rx) = mpsc::sync_channel(QUEUE);
            let (spare_tx, spare) = mpsc::sync_channel(1);
            let out = Out {
                worker: index,
                tx: out_tx.clone(),
                progress: Arc::clone(&progress),
            };
            let diags = Diagnostics::placed_part_sharing(Arc::clone(&found), index);
            let recall = Arc::clone(recall);
            let handle = std::thread::Builder::new()
                .name(format!("pidshark-worker-{index}"))
                .spawn_scoped(scope, move || {
                    let connections = Connections::new(config, n, in_flight, recall);
                    work(connections, n, &rx, &spare_tx, &out, diags)
                })
                .map_err(|source| Error::Thread { source })?;
            handles.push(handle);
            workers.push(WorkerEnd {
                tx,
                spare,
                epoch: Epoch::default(),
            });
        }
        // the merger's channel closes when the last worker's end is dropped
        drop(out_tx);
        let merged = Arc::clone(&progress);
        let merger = std::thread::Builder::new()
            .name("pidshark-merger".into())
            .spawn_scoped(scope, move || {
                let _ended = Ended(&merged);
                merger::merge(&outputs, n, batcher, &merged)
            })
            .map_err(|source| Error::Thread { source })?;
        Ok(Self {
            workers,
            packets: 0,
            bytes: 0,
            started: None,
            next_packet: 0,
            progress,
            merger,
            handles,
        })
    }

    /// Hands the segment of packet `packet` (the how-manyth taken) to its worker.
    pub fn segment(&mut self, packet: u64, segment: &TcpSegmentView<'_>, at: PacketRef) {
        let worker = crate::tcp::shard_of(segment, self.workers.len());
        if let Some(end) = self.workers.get_mut(worker) {
            end.epoch
                .push(Segment::new(packet, segment, at), segment.payload);
        }
        if self.packets == 0 {
            self.started = Some(Instant::now());
        }
        self.next_packet = packet + 1;
        self.packets += 1;
        self.bytes += segment.payload.len();
        let full = self.packets >= EPOCH_PACKETS || self.bytes >= EPOCH_BYTES;
        let waited = || {
            self.packets.is_multiple_of(PACKETS_PER_CLOCK_READ)
                && self.started.is_some_and(|t| t.elapsed() >= EPOCH_WAIT)
        };
        if full || waited() {
            self.send();
        }
    }

    /// Sends the epoch: every worker its share, empty or not, so that each says it has
    /// reached the epoch's end and the merger can send on what came before.
    fn send(&mut self) {
        self.progress.wait_while(Progress::over);
        for end in &mut self.workers {
            let next = end.spare.try_recv().unwrap_or_default();
            let mut epoch = std::mem::replace(&mut end.epoch, next);
            epoch.end = self.next_packet;
            // a worker only goes away after its channel closes, unless it panicked,
            // which the join reports
            let _ = end.tx.send(ToWorker::Epoch(epoch));
        }
        self.packets = 0;
        self.bytes = 0;
        self.started = None;
    }

    /// Every packet is through (the last at `last`): the workers close their
    /// connections, the merger sends the last exchanges on. What the connections left,
    /// added up, and each worker's diagnostics, numbered as the run numbers connections.
    pub fn finish(mut self, last: PacketRef) -> (Closed, Vec<Diagnostics>) {
        if self.packets > 0 {
            self.send();
        }
        for end in &self.workers {
            let _ = end.tx.send(ToWorker::End(last));
        }
        drop(self.workers);
        for handle in self.handles {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        match self.merger.join() {
            Ok(merged) => (merged.closed, merged.diagnostics),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// Where a worker's exchanges go: tagged with the packet (or, closing, the connection)
/// they came from.
struct Tagged {
    tag: u64,
    output: Output,
    /// [`part_bytes`] of `output`'s exchanges.
    held: u64,
}

impl Tagged {
    /// The output so far, to be handed on.
    fn take(&mut self) -> Output {
        self.held = 0;
        std::mem::take(&mut self.output)
    }
}

impl Emit for Tagged {
    fn push(&mut self, item: Item) {
        self.held = self.held.saturating_add(part_bytes(&item));
        self.output.items.push((self.tag, item));
    }

    fn tick(&mut self) {}
}

/// A worker's end of the merger's channel.
struct Out {
    worker: usize,
    tx: mpsc::SyncSender<FromWorker>,
    progress: Arc<Progress>,
}

impl Out {
    /// Before the segment of `packet`: while the merger holds too much and this worker
    /// is ahead of the slowest, waits, its output handed on first so that the merger
    /// knows how far it is (the slowest never waits).
    fn wait_if_ahead(&self, tagged: &mut Tagged, packet: u64) {
        let ahead = |progress: &Progress| progress.over() && packet > progress.passed();
        if !ahead(&self.progress) {
            return;
        }
        self.send_part(tagged, packet);
        self.progress.wait_while(ahead);
    }

    /// Hands `part` to the merger, counted in what it holds from now on: on the
    /// channel as much as in the merger's lanes.
    fn send_part(&self, tagged: &mut Tagged, reached: u64) {
        self.progress.handed(tagged.held);
        let mut part = tagged.take();
        part.reached = reached;
        self.send(Handed::Part(part));
    }

    fn send(&self, handed: Handed) {
        let worker = self.worker;
        // the merger only goes away once every worker is done, unless it panicked,
        // which its join reports
        let _ = self.tx.send(FromWorker { worker, handed });
    }
}

/// A worker's loop: its connections' segments, an epoch at a time, then their end.
fn work(
    mut connections: Connections,
    of: usize,
    rx: &mpsc::Receiver<ToWorker>,
    spare: &mpsc::SyncSender<Epoch>,
    out: &Out,
    mut diags: Diagnostics,
) {
    let mut tagged = Tagged {
        tag: 0,
        output: Output::default(),
        held: 0,
    };
    while let Ok(message) = rx.recv() {
        match message {
            ToWorker::Epoch(mut epoch) => {
                for (segment, payload) in epoch.segments() {
                    out.wait_if_ahead(&mut tagged, segment.packet);
                    place(&mut diags, segment.packet, Stage::Connection, 0);
                    tagged.tag = segment.packet;
                    let before = connections.numbered();
                    let view = segment.view(payload);
                    connections.segment(&view, segment.at, &mut diags, &mut tagged, None);
                    if connections.numbered() > before {
                        tagged.output.opened.push(segment.packet);
                    }
                    if tagged.held >= PART_BYTES {
                        out.send_part(&mut tagged, segment.packet + 1);
                    }
                }
                out.send_part(&mut tagged, epoch.end);
                diags.publish_found(epoch.end);
                epoch.clear((EPOCH_PACKETS / of, EPOCH_BYTES / of));
                let _ = spare.try_send(epoch);
            }
            ToWorker::End(last) => {
                let closed = close(connections, last, &mut diags, &mut tagged, out);
                out.send(Handed::Done(Box::new((closed, diags))));
                return;
            }
        }
    }
}

/// The worker's connections closed in its order, their exchanges streamed to `out`.
fn close(
    connections: Connections,
    last: PacketRef,
    diags: &mut Diagnostics,
    tagged: &mut Tagged,
    out: &Out,
) -> Closed {
    let closed =
        connections.finish(
            last,
            diags,
            tagged,
            None,
            |closing, diags, tagged| match closing {
                Closing::Before(index) => {
                    place(diags, Place::END, Stage::Connection, index);
                    tagged.tag = index;
                }
                Closing::After(_) if tagged.held >= PART_BYTES => {
                    out.send(Handed::Closing(tagged.take()));
                }
                Closing::After(_) => {}
            },
        );
    if !tagged.output.items.is_empty() {
        out.send(Handed::Closing(tagged.take()));
    }
    closed
}

fn place(diags: &mut Diagnostics, packet: u64, stage: Stage, connection: u64) {
    diags.place_at(Place {
        packet,
        stage,
        connection,
    });
}
