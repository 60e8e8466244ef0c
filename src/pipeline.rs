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
use std::sync::Arc;

use crate::capture::{self, CaptureInfo, Packet};
use crate::config::Config;
use crate::connections::{Closed, Connections};
use crate::copies::Copies;
use crate::decode::{self, Decoded, IpFragmentView, TcpSegmentView};
use crate::defrag::Defragmenter;
use crate::diag::obs;
use crate::diag::{Diagnostics, FragmentsDropped, Observation, Place, Stage};
use crate::frame_watch::FrameWatch;
use crate::packet_ref::{PacketRef, Recall};
use crate::shard::Dispatch;
use crate::worker::Batcher;

/// The stages a packet goes through on the capture thread, and where the connections'
/// work is done.
pub struct Pipeline<'a> {
    copies: Copies,
    defragmenter: Defragmenter,
    connections: Work<'a>,
    /// With `--frame`: what that frame holds, noted as it goes through the stages.
    watch: Option<FrameWatch>,
    /// Link types already reported as unsupported.
    unsupported: BTreeSet<i32>,
    /// The last packet taken: the time the connections still open end at.
    last: PacketRef,
    /// Packets taken so far: with workers, where the diagnostics found now are.
    taken: u64,
}

/// Where the connections' work is done.
// one a run: its size beside the workers' handles is of no matter
#[allow(clippy::large_enum_variant)]
enum Work<'a> {
    /// Here, completing exchanges into the output thread's batcher.
    Here(Connections, &'a mut Batcher),
    /// On workers, a share of the connections each, put back in order after them.
    Workers(Dispatch<'a>),
}

/// What the pipeline leaves for the report once every packet is through: everything but
/// the exchanges, which went to the output thread as they completed.
#[derive(Debug)]
pub struct Finished {
    pub diagnostics: Diagnostics,
    pub captures: Vec<CaptureInfo>,
    /// What the connections left.
    pub connections: Closed,
    /// With `--frame`: what that frame held, as a sentence.
    pub frame_holds: Option<String>,
}

impl<'a> Pipeline<'a> {
    /// Stages set up with `config`'s limits, doing the connections' work here and
    /// completing exchanges into `batcher`; bytes kept by their spot are read again
    /// through `recall`.
    pub fn new(config: &Config, batcher: &'a mut Batcher, recall: Arc<dyn Recall>) -> Self {
        let connections = Connections::new(config, 1, 0, recall);
        Self::with_work(config, Work::Here(connections, batcher))
    }

    /// Stages set up with `config`'s limits, handing the connections' work to workers.
    /// `--frame` watches its packet through every stage on one thread: not with this.
    pub fn with_workers(config: &Config, dispatch: Dispatch<'a>) -> Self {
        Self::with_work(config, Work::Workers(dispatch))
    }

    fn with_work(config: &Config, connections: Work<'a>) -> Self {
        Self {
            copies: Copies::new(config.clock_skew_ns),
            defragmenter: Defragmenter::default(),
            connections,
            watch: config.filter.frame.map(FrameWatch::new),
            unsupported: BTreeSet::new(),
            last: PacketRef::default(),
            taken: 0,
        }
    }

    /// Tells `diags` that what it is given now is found before the next packet's work
    /// (reading it, say), for putting diagnostics found on several threads in order.
    pub fn place_next(&self, diags: &mut Diagnostics) {
        diags.place_at(Place {
            packet: self.taken,
            stage: Stage::Capture,
            connection: 0,
        });
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
        self.taken += 1;
    }

    /// A TCP segment as captured, unless another file's copy of it was read.
    fn segment(&mut self, segment: &TcpSegmentView<'_>, at: PacketRef, diags: &mut Diagnostics) {
        if let Some(original) = self.copy_of(segment, at, diags) {
            if let Some(watch) = self.watched(at) {
                watch.copy_of(original);
            }
            return;
        }
        self.connection_work(segment, at, diags);
    }

    /// A segment to its connection's work, here or on its worker.
    fn connection_work(
        &mut self,
        segment: &TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) {
        match &mut self.connections {
            Work::Here(connections, batcher) => {
                let Some(watch) = self.watch.as_mut() else {
                    connections.segment(segment, at, diags, *batcher, None);
                    return;
                };
                // at its frame, before, for a connection this segment ends; after, for
                // one it starts
                let here = watch.frame() == at.frame;
                if let Some((index, reading)) = connections.reading_of(segment).filter(|_| here) {
                    watch.connection(index, reading);
                }
                connections.segment(segment, at, diags, *batcher, Some(&mut *watch));
                if let Some((index, reading)) = connections.reading_of(segment).filter(|_| here) {
                    watch.connection(index, reading);
                }
            }
            Work::Workers(dispatch) => dispatch.segment(self.taken, segment, at),
        }
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
                self.connection_work(&segment, at, diags);
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

    /// The `--frame` watch, while its packet goes through.
    fn watched(&mut self, at: PacketRef) -> Option<&mut FrameWatch> {
        self.watch.as_mut().filter(|w| w.frame() == at.frame)
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
            connections,
            mut defragmenter,
            mut watch,
            last,
            ..
        } = self;
        diags.place_at(Place {
            packet: Place::END,
            stage: Stage::Capture,
            connection: 0,
        });
        defragmenter.finish(&mut diags);
        let (closed, diagnostics): (Closed, Diagnostics) = match connections {
            Work::Here(connections, batcher) => {
                let closed =
                    connections.finish(last, &mut diags, batcher, watch.as_mut(), |_, _, _| {});
                (closed, diags)
            }
            Work::Workers(dispatch) => {
                let (closed, mut parts) = dispatch.finish(last);
                parts.insert(0, diags);
                (closed, Diagnostics::merge_in_order(parts))
            }
        };
        let frame_holds = watch.map(|w| w.sentence(frames));
        Finished {
            diagnostics,
            captures,
            connections: closed,
            frame_holds,
        }
    }
}
