//! The work of connections, from their TCP segments to the exchanges they complete: TCP
//! reassembly, the Kafka stage and pairing. On the capture thread with `--threads 1`;
//! with more, on each worker for the connections it is given (see [`crate::shard`]).
//!
//! In: segments, each with its packet, in packet order ([`Connections::segment`]). Out:
//! the exchanges each segment completes, to an [`Emit`], and at the end what the report
//! needs besides them ([`Closed`]).

use std::sync::Arc;

use crate::config::Config;
use crate::decode::TcpSegmentView;
use crate::diag::Diagnostics;
use crate::frame_watch::FrameWatch;
use crate::kafka::{Dissector, KafkaConfig, KafkaConn, Reading};
use crate::packet_ref::{PacketRef, Recall};
use crate::pairing::Pairing;
use crate::resident;
use crate::tcp::{Closing, Tracker};
use crate::worker::{Batcher, Item};

/// Where the exchanges go as they complete: to the output thread ([`crate::worker`]),
/// or to be put back in packet order with the other workers' ([`crate::shard`]).
pub trait Emit {
    fn push(&mut self, item: Item);
    /// Once per packet.
    fn tick(&mut self);
}

impl Emit for Batcher {
    fn push(&mut self, item: Item) {
        Self::push(self, item);
    }

    fn tick(&mut self) {
        Self::tick(self);
    }
}

/// Reassembly, the Kafka stage and pairing, for the connections of one thread.
pub struct Connections {
    tracker: Tracker<KafkaConn>,
    dissector: Dissector,
    pairing: Pairing,
}

/// What the connections leave for the report once every one is closed: everything
/// but the exchanges, which went on as they completed.
#[derive(Debug, Default)]
pub struct Closed {
    pub tcp_connections: u64,
    /// Connections forgotten at a limit while followed: met again, each is counted twice.
    pub forgotten_connections: u64,
    pub kafka_connections: u64,
    pub not_kafka_connections: u64,
    pub encrypted_connections: u64,
    pub pairing: Pairing,
}

impl Closed {
    /// What `other`'s connections left, added to these.
    pub fn add(&mut self, other: Self) {
        self.tcp_connections += other.tcp_connections;
        self.forgotten_connections += other.forgotten_connections;
        self.kafka_connections += other.kafka_connections;
        self.not_kafka_connections += other.not_kafka_connections;
        self.encrypted_connections += other.encrypted_connections;
        self.pairing.add(other.pairing);
    }
}

impl Connections {
    /// With `config`'s limits, of which these connections have one `share`th (one
    /// worker of that many), after `reserved` bytes of `--max-memory` are set aside (for
    /// what is in flight between threads). Bytes delivered earlier are read again
    /// through `recall` where they were kept by their spot.
    pub fn new(config: &Config, share: usize, reserved: usize, recall: Arc<dyn Recall>) -> Self {
        let share = share.max(1);
        let max_connections = (config.max_connections / share).max(1);
        let mut tracker =
            Tracker::with_limits(config.max_held_len, max_connections).with_recall(recall);
        // an eighth of the budget is the analysis's (the writes', the granted ids')
        let analysis = crate::analysis::share_of(config.max_memory);
        let connections = (config.max_memory - analysis).saturating_sub(reserved) / share;
        tracker.set_max_memory_of(connections, config.max_memory);
        tracker.watch_resident(resident::resident_bytes, resident::give_back);
        Self {
            tracker,
            // the watch reads every message of its frame, and how its connection is read
            dissector: Dissector::new(KafkaConfig {
                list_every_message: config.kafka.list_every_message
                    || config.filter.frame.is_some(),
                ..config.kafka.clone()
            }),
            pairing: Pairing::default(),
        }
    }

    /// Connections numbered so far, in the order their first packets came.
    pub fn numbered(&self) -> u64 {
        self.tracker.connections()
    }

    /// One segment through reassembly, the Kafka stage and pairing.
    pub fn segment(
        &mut self,
        segment: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
        out: &mut impl Emit,
        watch: Option<&mut FrameWatch>,
    ) {
        self.tracker
            .segment(segment, at, &mut self.dissector, diags);
        to_pairing(&mut self.dissector, &mut self.pairing, out, watch);
    }

    /// The number of the connection `segment` belongs to, and how it is read.
    pub fn reading_of(&self, segment: &TcpSegmentView<'_>) -> Option<(u64, Reading)> {
        let (index, state) = self.tracker.connection_of(segment)?;
        Some((index, state.map_or(Reading::Undecided, KafkaConn::reading)))
    }

    /// Ends the connections still open once every packet is through (the last at
    /// `last`), in their order, each one's last messages paired before the next ends:
    /// thousands at once would be a burst no budget charges. `around` is told before
    /// and after each.
    pub fn finish<E: Emit>(
        self,
        last: PacketRef,
        diags: &mut Diagnostics,
        out: &mut E,
        mut watch: Option<&mut FrameWatch>,
        mut around: impl FnMut(Closing, &mut Diagnostics, &mut E),
    ) -> Closed {
        let Self {
            tracker,
            mut dissector,
            mut pairing,
        } = self;
        let tcp_connections = tracker.connections();
        let forgotten_connections = tracker.forgotten();
        tracker.finish(last, &mut dissector, diags, |closing, dissector, diags| {
            if let Closing::After(_) = closing {
                to_pairing(dissector, &mut pairing, out, watch.as_deref_mut());
            }
            around(closing, diags, out);
        });
        // Counts are only reported: taken once, not after every packet.
        pairing.counted(&mut dissector.out.counted);
        Closed {
            tcp_connections,
            forgotten_connections,
            kafka_connections: dissector.kafka_connections,
            not_kafka_connections: dissector.not_kafka_connections,
            encrypted_connections: dissector.encrypted_connections,
            pairing,
        }
    }
}

/// Pairs what the Kafka stage found and hands the exchanges it finished on. Exchanges
/// completed by the same packet go in report order, so that responses a server sends
/// together count as simultaneous.
fn to_pairing(
    dissector: &mut Dissector,
    pairing: &mut Pairing,
    out: &mut impl Emit,
    mut watch: Option<&mut FrameWatch>,
) {
    // empty unless a frame is watched: no drain per packet otherwise
    if !dissector.out.readings.is_empty() {
        for (index, reading) in dissector.out.readings.drain(..) {
            if let Some(watch) = watch.as_deref_mut() {
                watch.reading(index, reading);
            }
        }
    }
    if !dissector.out.messages.is_empty() {
        for message in dissector.out.messages.drain(..) {
            if let Some(watch) = watch.as_deref_mut() {
                watch.message(&message);
            }
            pairing.message(message);
        }
    }
    if pairing.exchanges.is_empty()
        && pairing.cluster_events.is_empty()
        && pairing.writes.is_empty()
    {
        out.tick();
        return;
    }
    pairing.sort_exchanges();
    // What the cluster said first: who leads and where brokers listen, for the exchanges
    // completed by the same packet.
    for ev in pairing.cluster_events.drain(..) {
        out.push(Item::Cluster(ev));
    }
    for ex in pairing.exchanges.drain(..) {
        out.push(Item::from(ex));
    }
    for ex in pairing.writes.drain(..) {
        out.push(Item::Write(ex));
    }
    out.tick();
    // A shed gives up thousands of requests at once: their room, charged nowhere, is
    // given back rather than kept for a burst that may not come again.
    shrink_after_burst(&mut dissector.out.messages);
    shrink_after_burst(&mut pairing.exchanges);
    shrink_after_burst(&mut pairing.cluster_events);
    shrink_after_burst(&mut pairing.writes);
}

/// Gives back an emptied vector's room past [`KEPT_AFTER_BURST`] elements.
fn shrink_after_burst<T>(emptied: &mut Vec<T>) {
    if emptied.capacity() > KEPT_AFTER_BURST {
        emptied.shrink_to(KEPT_AFTER_BURST);
    }
}

/// Elements the per-packet queues keep room for between packets: a packet's own
/// messages and exchanges fit many times over.
const KEPT_AFTER_BURST: usize = 128;
