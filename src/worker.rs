//! The analysis thread. Exchanges (AllocateProducerIds's and InitProducerId's) go from
//! the capture thread (reading, reassembly, decoding, pairing), in batches and in the
//! order they complete, to a second thread that analyses them and hands them to the
//! report's sink: both cores work, and the order every exchange is seen in is the same
//! as on one thread.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::analysis::Analyzer;
use crate::kafka::allocate_producer_ids;
use crate::kafka::client_id::ClientId;
use crate::kafka::schema::Message;
use crate::pairing::{
    Api, ApiExchange, ClusterEvent, Exchange, Granting, Outcome, PairedExchange, WriteExchange,
};
use crate::report::sink::{Analysed, Sink};

/// What the analysis thread hands back at the end.
pub struct Finished {
    pub analyzer: Analyzer,
    /// The first error of the sink; later exchanges were not handed to it.
    pub sink_error: Option<io::Error>,
}

/// What goes to the analysis thread: each kind as the analysis and the sinks borrow it,
/// so that it is analysed and written where it lies in its batch, not moved before.
#[derive(Debug)]
pub enum Item {
    Cluster(ClusterEvent),
    Allocate(Exchange),
    Granting(Granting),
    Write(WriteExchange),
}

impl From<PairedExchange> for Item {
    fn from(ex: PairedExchange) -> Self {
        match ex {
            PairedExchange::Allocate(ex) => Self::Allocate(ex),
            PairedExchange::InitProducerId(ex) => Self::Granting(Granting::InitProducerId(ex)),
            PairedExchange::EndTxn(ex) => Self::Granting(Granting::EndTxn(ex)),
        }
    }
}

impl Item {
    /// Takes out what it holds on the heap into `spent`, where it can, and says whether
    /// it still holds some: then the item goes back too, with the rest of its heap, to
    /// the thread that allocated it (see [`consume`]). Cautious: only the kinds that
    /// control traffic sends by the thousand are looked into. A request's
    /// `fields_heap_bytes` counts every block it owns (its tagged fields, a problem's
    /// box, raw bytes) once the client id, whose count is its length, is taken out.
    fn hand_back(&mut self, spent: &mut Spent) -> bool {
        match self {
            Self::Cluster(ev) => ev.kept.is_some() || ev.fact.holds_heap(),
            Self::Allocate(ex) => {
                if let Some(Some(id)) = ex.request.header.client_id.take() {
                    spent.client_ids.push(id);
                }
                if let Outcome::Complete { response, .. } =
                    std::mem::replace(&mut ex.outcome, Outcome::Unanswered)
                {
                    spent.responses.push(response);
                }
                ex.request.fields_heap_bytes() > 0
            }
            Self::Granting(_) | Self::Write(_) => true,
        }
    }

    /// Its connection's ends (and number).
    pub fn endpoints_mut(&mut self) -> &mut crate::pairing::Endpoints {
        match self {
            Self::Cluster(ev) => &mut ev.endpoints,
            Self::Allocate(ex) => &mut ex.endpoints,
            Self::Granting(Granting::InitProducerId(ex)) => &mut ex.endpoints,
            Self::Granting(Granting::EndTxn(ex)) => &mut ex.endpoints,
            Self::Write(ex) => &mut ex.endpoints,
        }
    }
}

/// Exchanges sent at once: a channel operation per thousand exchanges, not per one. The
/// output thread has time to spare and waits for each batch; waking it costs the capture
/// thread a system call and, on a virtual machine, tens of microseconds (2 M control
/// packets: 256 a batch, 1,500 wakes, 1.29 s; 1,024, 1.23 s and 0.6 MiB more at peak).
const BATCH: usize = 1024;
/// Heap (as [`held_estimate`] reckons it) after which a batch goes even if shorter:
/// exchanges of large messages hold their decoded fields, so that the batches in flight
/// stay within a few MiB however large the messages.
const BATCH_BYTES: u64 = 1 << 20;
/// Batches queued before the capture thread waits: bounds the memory between the threads.
const QUEUE: usize = 4;
/// Longest an exchange waits in a partial batch (when more packets come), so that
/// streamed output stays prompt on a slow live capture.
const BATCH_WAIT: Duration = Duration::from_millis(20);

/// Heap an exchange may hold, over-estimated: its messages twice (decoded fields, and the
/// bytes kept for the tree view), and each tagged field's own record, which can outweigh
/// the two or three bytes it took on the wire.
pub fn held_estimate(item: &Item) -> u64 {
    match item {
        // A few listeners or quorum entries; Metadata's broker list can be long.
        Item::Cluster(ev) => ev.meta.size.saturating_mul(2).saturating_add(256),
        Item::Allocate(ex) => allocate_held_estimate(ex),
        // Small and fixed but for two strings and the tagged fields, as above.
        Item::Granting(Granting::InitProducerId(ex)) => small_held_estimate(ex),
        Item::Granting(Granting::EndTxn(ex)) => small_held_estimate(ex),
        // Batch headers and answers, never records: what the decoded messages hold.
        Item::Write(ex) => {
            let response = ex
                .outcome
                .response()
                .map_or(0, |(_, r)| r.boxed_heap_bytes());
            (ex.request.boxed_heap_bytes() + response) as u64
        }
    }
}

fn small_held_estimate<A: Api>(ex: &ApiExchange<A>) -> u64 {
    let response = ex.outcome.response().map_or(0, |(meta, _)| meta.size);
    ex.request_meta
        .size
        .saturating_add(response)
        .saturating_mul(2)
        .saturating_add(256)
}

fn allocate_held_estimate(ex: &Exchange) -> u64 {
    const PER_TAGGED_FIELD: u64 = 64;
    let tagged = |fields: &Option<Vec<crate::kafka::reader::TaggedField>>| {
        fields.as_ref().map_or(0, |f| f.len() as u64)
    };
    let (response_size, response_fields) = ex.outcome.response().map_or((0, 0), |(meta, r)| {
        (
            meta.size,
            tagged(&r.header.tagged_fields) + tagged(&r.tagged_fields),
        )
    });
    let fields = tagged(&ex.request.header.tagged_fields)
        + tagged(&ex.request.tagged_fields)
        + response_fields;
    ex.request_meta
        .size
        .saturating_add(response_size)
        .saturating_mul(2)
        .saturating_add(fields.saturating_mul(PER_TAGGED_FIELD))
}

/// Exchanges on their way to the output thread; on the way back, what they held that
/// the capture thread allocated, to be freed there (see [`consume`]), and the room.
struct Batch {
    items: Vec<Item>,
    spent: Spent,
}

/// What the output thread took out of the items it dropped. The vectors themselves grow
/// on the output thread: a spare batch the capture thread has no use for frees them
/// there, two blocks a batch at most.
#[derive(Default)]
struct Spent {
    // boxed as the Kafka stage decoded them: they come back to be freed, not moved
    #[allow(clippy::vec_box)]
    responses: Vec<Box<allocate_producer_ids::Response>>,
    client_ids: Vec<ClientId>,
}

impl Batch {
    fn with_capacity(items: usize) -> Self {
        Self {
            items: Vec::with_capacity(items),
            spent: Spent::default(),
        }
    }

    fn clear(&mut self) {
        self.items.clear();
        self.spent.responses.clear();
        self.spent.client_ids.clear();
    }
}

/// The capture thread's end: collects exchanges into batches.
pub struct Batcher {
    tx: mpsc::SyncSender<Batch>,
    /// Batches coming back with what the output thread is done with, so that both are
    /// freed or reused here, not freed on one thread and allocated again on the other.
    spare: mpsc::Receiver<Batch>,
    batch: Batch,
    /// Set by the output thread when its output failed: reading can stop.
    stop: Arc<AtomicBool>,
    /// [`held_estimate`] of the exchanges in `batch`.
    batch_bytes: u64,
    started: Option<Instant>,
    ticks: u32,
}

/// The analysis thread's end, for [`consume`].
pub struct Receiver {
    rx: mpsc::Receiver<Batch>,
    spare: mpsc::SyncSender<Batch>,
    stop: Arc<AtomicBool>,
}

/// A connected [`Batcher`] and [`Receiver`].
pub fn channel() -> (Batcher, Receiver) {
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    // Batches in flight are at most the queue, one being filled and one being read.
    let (spare_tx, spare_rx) = mpsc::sync_channel(QUEUE + 2);
    let stop = Arc::new(AtomicBool::new(false));
    let batcher = Batcher {
        stop: Arc::clone(&stop),
        tx,
        spare: spare_rx,
        batch: Batch::with_capacity(BATCH),
        batch_bytes: 0,
        started: None,
        ticks: 0,
    };
    (
        batcher,
        Receiver {
            rx,
            spare: spare_tx,
            stop,
        },
    )
}

/// Packets between two looks at the clock while a partial batch waits.
const TICKS_PER_CLOCK_READ: u32 = 32;

impl Batcher {
    /// Becomes true when nothing more will be written (the output failed, say a closed
    /// pipe): the input can be treated as ended.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    pub fn push(&mut self, item: Item) {
        let items = &mut self.batch.items;
        if items.is_empty() {
            self.started = Some(Instant::now());
        }
        self.batch_bytes = self.batch_bytes.saturating_add(held_estimate(&item));
        items.push(item);
        if items.len() >= BATCH || self.batch_bytes >= BATCH_BYTES {
            self.send();
        }
    }

    /// Once per packet: sends a partial batch that has waited long enough.
    pub fn tick(&mut self) {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(TICKS_PER_CLOCK_READ)
            && self.started.is_some_and(|t| t.elapsed() >= BATCH_WAIT)
        {
            self.send();
        }
    }

    fn send(&mut self) {
        self.started = None;
        self.batch_bytes = 0;
        if self.batch.items.is_empty() {
            return;
        }
        // Batches come back with what the output thread spent: freed here, on the thread
        // that allocated it (see `consume`); one is kept for its room.
        let mut next = None;
        while let Ok(mut spare) = self.spare.try_recv() {
            spare.clear();
            next.get_or_insert(spare);
        }
        let next = next.unwrap_or_else(|| Batch::with_capacity(BATCH));
        let batch = std::mem::replace(&mut self.batch, next);
        // The receiver only goes away after this end is dropped, unless it panicked,
        // which the join reports.
        let _ = self.tx.send(batch);
    }

    /// Sends what is left; dropping the batcher then ends [`consume`].
    pub fn finish(mut self) {
        self.send();
    }
}

/// The analysis thread's loop: every exchange through the analysis, then to the sink.
///
/// What the items hold on the heap goes back to the capture thread to be freed there
/// (with `--threads` above 1, to the merger thread, which runs the [`Batcher`]), taken
/// out of them or with them: glibc's free of a block another thread allocated waits on
/// that thread's arena lock, and with the capture thread allocating every decoded
/// message, the two threads took turns at it (control, 2 M packets: 37,776 context
/// switches, 84% of them the output thread waiting on that lock; 2.1-2.2 s of wall
/// time). The rest of each item is dropped here as soon as it is written, still in this
/// thread's cache: returned whole, the capture thread read every item again from memory
/// to drop it (callgrind's cache simulation, 200 k control packets: the capture
/// thread's last-level read misses 2.16-2.18 M then, 1.95-1.96 M now).
pub fn consume(rx: Receiver, mut analyzer: Analyzer, sink: &mut dyn Sink) -> Finished {
    let mut sink_error = None;
    for mut batch in rx.rx {
        let Batch { items, spent } = &mut batch;
        items.retain_mut(|item| {
            let written = analyse(&mut analyzer, sink, item, sink_error.is_none());
            if let Some(Err(e)) = written {
                sink_error = Some(e);
                rx.stop.store(true, Ordering::Relaxed);
            }
            item.hand_back(spent)
        });
        // when the capture thread has batches enough, dropped here
        let _ = rx.spare.try_send(batch);
    }
    Finished {
        analyzer,
        sink_error,
    }
}

/// One item through the analysis and, when `write`, to the sink; both only borrow it.
fn analyse(
    analyzer: &mut Analyzer,
    sink: &mut dyn Sink,
    item: &Item,
    write: bool,
) -> Option<io::Result<()>> {
    match item {
        Item::Cluster(ev) => {
            analyzer.add_cluster(ev);
            write.then(|| sink.cluster(ev))
        }
        Item::Allocate(ex) => {
            let block = analyzer.add(ex);
            write.then(|| sink.exchange(Analysed::Allocate(ex, block.as_ref())))
        }
        Item::Granting(granting) => {
            let placed = analyzer.add_granting(granting);
            write.then(|| sink.exchange(Analysed::Producer(granting, &placed)))
        }
        Item::Write(ex) => {
            let judged = analyzer.add_write(ex);
            write.then(|| sink.write(ex, &judged))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::test_support::exchange;
    use crate::analysis::SlowRule;
    use crate::report::sink::Collect;

    /// A cluster event as every AllocateProducerIds request sends one, with its bytes
    /// kept when `kept`.
    fn block_asked(frame: u64, kept: bool) -> Item {
        let ex = exchange(frame, 1, 5, None);
        Item::Cluster(ClusterEvent {
            endpoints: ex.endpoints,
            meta: ex.request_meta,
            is_request: true,
            fact: crate::kafka::apis::ClusterFact::BlockAsked { broker_id: Some(1) },
            kept: kept.then(|| {
                Box::new(crate::kafka::apis::Kept {
                    api: crate::kafka::tables::ApiKey::ALLOCATE_PRODUCER_IDS,
                    version: 0,
                    is_request: true,
                    bytes: vec![0; 16],
                })
            }),
        })
    }

    /// The blocks' starts of the exchanges the sink was handed, as it saw them.
    #[derive(Default)]
    struct Starts(Vec<Option<i64>>);

    impl Sink for Starts {
        fn needs(&self) -> crate::report::sink::Needs {
            Collect::default().needs()
        }

        fn exchange(&mut self, analysed: Analysed<'_>) -> io::Result<()> {
            if let Analysed::Allocate(ex, _) = analysed {
                let start = ex.outcome.response().and_then(|(_, r)| r.producer_id_start);
                self.0.push(start);
            }
            Ok(())
        }

        fn finish(&mut self, _: &mut crate::report::model::Report) -> io::Result<()> {
            Ok(())
        }
    }

    /// What comes back after the output thread is done with `items`.
    fn handed_back(items: Vec<Item>) -> (Batch, Starts) {
        let (mut batcher, rx) = channel();
        for item in items {
            batcher.push(item);
        }
        batcher.send();
        // the capture thread's end closed, its spare batches kept to look at
        let Batcher { tx, spare, .. } = batcher;
        drop(tx);
        let mut sink = Starts::default();
        let finished = consume(rx, Analyzer::new(SlowRule::Default, true, 16), &mut sink);
        assert!(finished.sink_error.is_none());
        (spare.try_recv().expect("the batch came back"), sink)
    }

    #[test]
    fn what_the_capture_thread_allocated_comes_back_to_it_and_nothing_else() {
        let mut items = Vec::new();
        for n in 1..=3 {
            let mut ex = exchange(n, 1, 5, Some((0, n as i64 * 1000, 1000, 2)));
            ex.request.header.client_id = Some(Some(ClientId::from("broker-1")));
            if n == 3 {
                // a tagged field the request holds: the whole exchange goes back
                ex.request.tagged_fields = Some(vec![crate::kafka::reader::TaggedField {
                    tag: 7,
                    data: vec![1, 2, 3],
                    cut: None,
                }]);
            }
            items.push(Item::Allocate(ex));
        }
        items.push(block_asked(40, false));
        items.push(block_asked(50, true));
        items.push(Item::Allocate(exchange(6, 1, 5, None)));
        // each other block a request can own sends it back whole too
        let mut raw = exchange(7, 1, 5, None);
        raw.request.raw = vec![0; 8];
        let mut problem = exchange(8, 1, 5, None);
        problem.request.problem = Some(Box::new(crate::kafka::decoded::Problem::Shed { len: 9 }));
        let mut header = exchange(9, 1, 5, None);
        header.request.header.tagged_fields = Some(vec![crate::kafka::reader::TaggedField {
            tag: 1,
            data: vec![],
            cut: None,
        }]);
        items.extend([raw, problem, header].map(Item::Allocate));
        let id = ClientId::from("broker-1");
        if let Some(Item::Allocate(ex)) = items.first_mut() {
            ex.request.header.client_id = Some(Some(Arc::clone(&id)));
        }
        let (back, sink) = handed_back(items);
        // every exchange was analysed and written whole before anything was taken out
        assert_eq!(
            sink.0,
            vec![Some(1000), Some(2000), Some(3000), None, None, None, None]
        );
        // the boxes and ids the capture thread allocated, taken out of the exchanges
        let starts: Vec<Option<i64>> = back
            .spent
            .responses
            .iter()
            .map(|r| r.producer_id_start)
            .collect();
        assert_eq!(starts, vec![Some(1000), Some(2000), Some(3000)]);
        assert_eq!(back.spent.client_ids.len(), 3);
        assert!(back
            .spent
            .client_ids
            .iter()
            .any(|back| Arc::ptr_eq(back, &id)));
        // whole: what still holds heap (the tagged field, the kept bytes); the event
        // without bytes and the exchanges with nothing left were dropped there
        let frames: Vec<u64> = back
            .items
            .iter()
            .map(|item| match item {
                Item::Allocate(ex) => ex.request_meta.frame,
                Item::Cluster(ev) => ev.meta.frame,
                _ => 0,
            })
            .collect();
        assert_eq!(frames, vec![30, 500, 70, 80, 90]);
    }
}
