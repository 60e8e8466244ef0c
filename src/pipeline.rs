//! The capture thread's work on each packet, from decoding to pairing.
//!
//! In: packets in merged order, one at a time ([`Pipeline::packet`]). Each is decoded; a TCP
//! segment that another file already held is dropped as a copy; IP fragments are put back
//! together and their datagram decoded again; segments go through TCP reassembly and the
//! Kafka stage, and the messages it finds through pairing. Out: the exchanges each packet
//! completes, to the output thread as they complete, and, once every packet is through,
//! what the report needs besides them ([`Finished`]). A packet that cannot be read is a
//! diagnostic.

use std::collections::BTreeSet;

use crate::capture::{self, CaptureInfo, Packet};
use crate::config::Config;
use crate::copies::Copies;
use crate::decode::{self, Decoded, IpFragmentView, TcpSegmentView};
use crate::defrag::Defragmenter;
use crate::diag::obs;
use crate::diag::{Diagnostics, FragmentsDropped, Observation};
use crate::frame_watch::FrameWatch;
use crate::kafka::{Dissector, KafkaConfig, KafkaConn, Reading};
use crate::packet_ref::PacketRef;
use crate::pairing::Pairing;
use crate::resident;
use crate::tcp::Tracker;
use crate::worker::{Batcher, Item};

/// The stages a packet goes through on the capture thread, and where the exchanges they
/// complete go.
pub struct Pipeline<'a> {
    copies: Copies,
    defragmenter: Defragmenter,
    tracker: Tracker<KafkaConn>,
    dissector: Dissector,
    pairing: Pairing,
    /// The output thread's end of the channel.
    batcher: &'a mut Batcher,
    /// With `--frame`: what that frame holds, noted as it goes through the stages.
    watch: Option<FrameWatch>,
    /// Link types already reported as unsupported.
    unsupported: BTreeSet<i32>,
    /// The last packet taken: the time the connections still open end at.
    last: PacketRef,
}

/// What the pipeline leaves for the report once every packet is through: everything but
/// the exchanges, which went to the output thread as they completed.
#[derive(Debug)]
pub struct Finished {
    pub diagnostics: Diagnostics,
    pub captures: Vec<CaptureInfo>,
    pub tcp_connections: u64,
    /// Connections forgotten at a limit while followed: met again, each is counted twice.
    pub forgotten_connections: u64,
    pub kafka_connections: u64,
    pub not_kafka_connections: u64,
    pub encrypted_connections: u64,
    pub pairing: Pairing,
    /// With `--frame`: what that frame held, as a sentence.
    pub frame_holds: Option<String>,
}

impl<'a> Pipeline<'a> {
    /// Stages set up with `config`'s limits, completing exchanges into `batcher`.
    pub fn new(config: &Config, batcher: &'a mut Batcher) -> Self {
        let mut tracker = Tracker::with_limits(config.max_held_len, config.max_connections);
        // an eighth of the budget is the writes analysis's (see analysis::writes::memory)
        let writes = crate::analysis::writes::share_of(config.max_memory);
        tracker.set_max_memory_of(config.max_memory - writes, config.max_memory);
        tracker.watch_resident(resident::resident_bytes, resident::give_back);
        Self {
            copies: Copies::new(config.clock_skew_ns),
            defragmenter: Defragmenter::default(),
            tracker,
            // the watch reads every message of its frame, and how its connection is read
            dissector: Dissector::new(KafkaConfig {
                list_every_message: config.kafka.list_every_message
                    || config.filter.frame.is_some(),
                ..config.kafka.clone()
            }),
            pairing: Pairing::default(),
            batcher,
            watch: config.filter.frame.map(FrameWatch::new),
            unsupported: BTreeSet::new(),
            last: PacketRef::default(),
        }
    }

    /// One packet through decoding, reassembly, framing and pairing.
    pub fn packet(&mut self, packet: &Packet<'_>, diags: &mut Diagnostics) {
        self.last = packet.at;
        let decoded = decode::decode(packet);
        if let Some(watch) = self.watched(packet.at) {
            watch.packet(packet, &decoded);
        }
        match decoded {
            Decoded::Tcp(segment) => self.segment(&segment, packet.at, diags),
            Decoded::Fragment(fragment) => self.fragment(&fragment, packet.at, diags),
            Decoded::FragmentNotReassembled(reason) => {
                let what = Observation::IpFragmentsDropped(FragmentsDropped::NotReassembled {
                    reason: &reason,
                });
                diags.add(None, packet.at, what);
            }
            Decoded::Other => {}
            Decoded::UnsupportedLinkType => self.unsupported_link_type(packet, diags),
            Decoded::Malformed(reason) => {
                let what = Observation::PacketMalformed(obs::PacketMalformed {
                    fragments: None,
                    reason: &reason,
                });
                diags.add(None, packet.at, what);
            }
        }
    }

    /// A TCP segment as captured, unless another file's copy of it was read.
    fn segment(&mut self, segment: &TcpSegmentView<'_>, at: PacketRef, diags: &mut Diagnostics) {
        if let Some(original) = self.copy_of(segment, at, diags) {
            if let Some(watch) = self.watched(at) {
                watch.copy_of(original);
            }
            return;
        }
        // before, for a connection this segment ends; after, for one it starts
        self.watch_connection(segment, at);
        self.tracker
            .segment(segment, at, &mut self.dissector, diags);
        self.watch_connection(segment, at);
        self.drain();
    }

    /// An IP fragment: the datagram it completes, if it does, goes on as a TCP segment of
    /// this packet.
    fn fragment(&mut self, fragment: &IpFragmentView<'_>, at: PacketRef, diags: &mut Diagnostics) {
        let Some(datagram) = self.defragmenter.fragment(fragment, at, diags) else {
            return;
        };
        let cut = datagram.missing_len > 0;
        match decode::tcp_in_ip_payload(
            datagram.src,
            datagram.dst,
            &datagram.payload,
            datagram.missing_len,
            cut,
        ) {
            Decoded::Tcp(segment) => {
                if self.copy_of(&segment, at, diags).is_some() {
                    return;
                }
                self.tracker
                    .segment(&segment, at, &mut self.dissector, diags);
                self.drain();
            }
            Decoded::Malformed(reason) => {
                let what = Observation::PacketMalformed(obs::PacketMalformed {
                    fragments: Some(datagram.fragments as u64),
                    reason: &reason,
                });
                diags.add(None, at, what);
            }
            _ => {}
        }
    }

    /// Says once per link type that its packets are skipped.
    fn unsupported_link_type(&mut self, packet: &Packet<'_>, diags: &mut Diagnostics) {
        if !self.unsupported.insert(packet.link_type.0) {
            return;
        }
        let what = Observation::UnsupportedLinkType(obs::UnsupportedLinkType {
            link_type: &capture::link_type_name(packet.link_type),
            link_type_number: packet.link_type.0,
        });
        diags.add(None, packet.at, what);
    }

    /// The frame of another file's copy of `segment` already read, if it is one.
    fn copy_of(
        &mut self,
        segment: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> Option<u64> {
        // one file: no copies to look for (the common case, kept cheap)
        at.origin?;
        self.copies.copy_of(segment, at, diags)
    }

    /// Hands what the Kafka stage found to pairing, and the exchanges that completes to
    /// the output thread.
    fn drain(&mut self) {
        to_pairing(
            &mut self.dissector,
            &mut self.pairing,
            self.batcher,
            self.watch.as_mut(),
        );
    }

    /// The `--frame` watch, while its packet goes through.
    fn watched(&mut self, at: PacketRef) -> Option<&mut FrameWatch> {
        self.watch.as_mut().filter(|w| w.frame() == at.frame)
    }

    /// At `--frame`'s packet: notes which connection its segment belongs to, and has the
    /// Kafka stage note how that connection is read.
    fn watch_connection(&mut self, segment: &TcpSegmentView<'_>, at: PacketRef) {
        let Some(watch) = self.watch.as_mut().filter(|w| w.frame() == at.frame) else {
            return;
        };
        if let Some((index, state)) = self.tracker.connection_of(segment) {
            watch.connection(index, state.map_or(Reading::Undecided, KafkaConn::reading));
        }
    }

    /// Ends what is still open once the captures are read (`frames` packets in all):
    /// fragments never completed, connections never closed, their last messages paired.
    /// `captures` get the copies found in them.
    pub fn finish(
        self,
        mut captures: Vec<CaptureInfo>,
        frames: u64,
        mut diags: Diagnostics,
    ) -> Finished {
        for (capture, copies) in captures.iter_mut().zip(self.copies.found()) {
            capture.duplicate_packets = *copies;
        }
        let Self {
            tracker,
            mut dissector,
            mut pairing,
            mut defragmenter,
            batcher,
            mut watch,
            last,
            ..
        } = self;
        defragmenter.finish(&mut diags);
        let tcp_connections = tracker.connections();
        let forgotten_connections = tracker.forgotten();
        // Each connection's last requests go on before the next ends: thousands at once
        // would be a burst no budget charges.
        tracker.finish(last, &mut dissector, &mut diags, |dissector| {
            to_pairing(dissector, &mut pairing, batcher, watch.as_mut());
        });
        let frame_holds = watch.map(|w| w.sentence(frames));
        Finished {
            diagnostics: diags,
            captures,
            tcp_connections,
            forgotten_connections,
            kafka_connections: dissector.kafka_connections,
            not_kafka_connections: dissector.not_kafka_connections,
            encrypted_connections: dissector.encrypted_connections,
            pairing,
            frame_holds,
        }
    }
}

/// Pairs what the Kafka stage found and hands the exchanges it finished to the analysis
/// thread. Exchanges completed by the same packet go in report order, so that responses a
/// server sends together count as simultaneous.
fn to_pairing(
    dissector: &mut Dissector,
    pairing: &mut Pairing,
    batcher: &mut Batcher,
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
    pairing.counted(&mut dissector.out.counted);
    if pairing.exchanges.is_empty()
        && pairing.cluster_events.is_empty()
        && pairing.writes.is_empty()
    {
        batcher.tick();
        return;
    }
    pairing.sort_exchanges();
    // What the cluster said first: who leads and where brokers listen, for the exchanges
    // completed by the same packet.
    for ev in pairing.cluster_events.drain(..) {
        batcher.push(Item::Cluster(ev));
    }
    for ex in pairing.exchanges.drain(..) {
        batcher.push(Item::Exchange(ex));
    }
    for ex in pairing.writes.drain(..) {
        batcher.push(Item::Write(ex));
    }
    batcher.tick();
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
const KEPT_AFTER_BURST: usize = 1024;
