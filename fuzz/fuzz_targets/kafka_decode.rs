//! The Kafka decoders on arbitrary bytes: AllocateProducerIds and InitProducerId requests
//! and responses (with the tree recorder listening), Produce requests read as they pass
//! (cut at arbitrary points, with gaps) and Produce responses, and the framer cut at
//! arbitrary points, streaming some frames.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pidshark::kafka::framing::{Decision, Frame, FrameHandler, Framer};
use pidshark::kafka::produce::{RequestReader, Response};
use pidshark::kafka::{allocate_producer_ids, init_producer_id};
use pidshark::kafka::header::RequestPrefix;
use pidshark::kafka::layout::{Node, Recorder};
use pidshark::kafka::schema::Message;
use pidshark::packet_ref::PacketRef;

struct Any(u8);

impl FrameHandler for Any {
    type Reader = RequestReader;

    fn decide(&mut self, len: i32, _prefix: &[u8], _at: PacketRef) -> Decision<RequestReader> {
        match (len.rem_euclid(3), self.0 & 1) {
            (0, _) => Decision::Reject,
            (1, 1) if len < 1 << 16 => Decision::Keep,
            (2, 1) => Decision::Stream(Box::new(RequestReader::new(9, len.unsigned_abs()))),
            _ => Decision::Skip,
        }
    }
    fn frame(&mut self, frame: Frame<'_, RequestReader>) {
        if let Some(reader) = frame.streamed {
            let _ = reader.finish();
        }
    }
    fn plausible(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        len < 1 << 20 && prefix.first().is_some_and(|b| *b == self.0)
    }
    fn wants_confirmation(&self) -> bool {
        self.0 & 2 == 0
    }
    fn resynced(&mut self, _skipped: u64, _at: PacketRef) {}
}


/// Every version of `M` we decode and the first we do not, and a negative one, whatever
/// the header says.
fn every_version<M: Message>(message: &[u8]) {
    for version in -1..=M::NEWEST + 1 {
        let mut rec = Recorder::new(Node::default(), 4);
        M::decode_with(message, version, &mut rec);
        let _ = rec.finish();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if let Ok(prefix) = RequestPrefix::parse(rest) {
        let mut rec = Recorder::new(Node::default(), 4);
        allocate_producer_ids::Request::decode_with(rest, prefix.api_version, &mut rec);
        let _ = rec.finish();
    }
    every_version::<allocate_producer_ids::Request>(rest);
    every_version::<allocate_producer_ids::Response>(rest);
    every_version::<init_producer_id::Request>(rest);
    every_version::<init_producer_id::Response>(rest);
    // Produce: every version, the request in pieces with a gap where a piece starts 0xff
    let len = u32::try_from(rest.len()).unwrap_or(u32::MAX);
    for version in -1..=14 {
        let mut reader = RequestReader::new(version, len);
        for piece in rest.chunks(usize::from(selector % 29) + 1) {
            match piece.first() {
                Some(0xff) => reader.gap(piece.len() as u32),
                _ => reader.bytes(piece),
            }
        }
        let _ = reader.finish();
        let _ = Response::decode(rest, version);
    }
    // the framer over the bytes cut into pieces of varying size, with gaps
    let mut framer = if selector & 4 == 0 {
        Framer::<RequestReader>::new(10)
    } else {
        Framer::<RequestReader>::resyncing(4)
    };
    let mut handler = Any(selector);
    let mut at = PacketRef::default();
    let mut chunks = rest.chunks(usize::from(selector % 17) + 1);
    while let Some(chunk) = chunks.next() {
        at.frame += 1;
        if chunk.first() == Some(&0xff) {
            framer.gap(u64::from(chunk.len() as u32), at, &mut handler);
        } else {
            framer.push(chunk, at, &mut handler);
        }
    }
    let _ = framer.unfinished();
});
