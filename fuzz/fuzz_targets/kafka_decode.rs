//! The Kafka decoders on arbitrary bytes: AllocateProducerIds and InitProducerId requests
//! and responses (with the tree recorder listening), and the framer cut at arbitrary points.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pidshark::kafka::allocate_producer_ids::{decode_request_with, decode_response_with};
use pidshark::kafka::framing::{Decision, Frame, FrameHandler, Framer};
use pidshark::kafka::header::RequestPrefix;
use pidshark::kafka::init_producer_id;
use pidshark::kafka::layout::{Node, Recorder};
use pidshark::kafka::tables::ApiKey;
use pidshark::packet_ref::PacketRef;

struct Any(u8);

impl FrameHandler for Any {
    fn decide(&mut self, len: i32, _prefix: &[u8], _at: PacketRef) -> Decision {
        match (len.rem_euclid(3), self.0 & 1) {
            (0, _) => Decision::Reject,
            (1, 1) if len < 1 << 16 => Decision::Keep,
            _ => Decision::Skip,
        }
    }
    fn frame(&mut self, _frame: Frame<'_>) {}
    fn plausible(&mut self, len: i32, prefix: &[u8], _at: PacketRef) -> bool {
        len < 1 << 20 && prefix.first().is_some_and(|b| *b == self.0)
    }
    fn wants_confirmation(&self) -> bool {
        self.0 & 2 == 0
    }
    fn resynced(&mut self, _skipped: u64, _at: PacketRef) {}
}

fn root() -> Node {
    Node {
        name: String::new(),
        kind: String::new(),
        value: None,
        offset: 0,
        size: 0,
        about: String::new(),
        children: Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    if let Ok(prefix) = RequestPrefix::parse(rest) {
        let mut rec = Recorder::new(root(), 4);
        decode_request_with(rest, &prefix, &mut rec);
        let _ = rec.finish();
    }
    let mut rec = Recorder::new(root(), 4);
    decode_response_with(rest, i16::from(selector & 1), &mut rec);
    let _ = rec.finish();
    // every InitProducerId version we decode and the first we do not, whatever the header says
    for version in 0..=init_producer_id::MAX_VERSION + 1 {
        let prefix = RequestPrefix {
            api_key: ApiKey::INIT_PRODUCER_ID,
            api_version: version,
            correlation_id: 0,
        };
        let mut rec = Recorder::new(root(), 4);
        init_producer_id::decode_request_with(rest, &prefix, &mut rec);
        let _ = rec.finish();
        let mut rec = Recorder::new(root(), 4);
        init_producer_id::decode_response_with(rest, version, &mut rec);
        let _ = rec.finish();
    }
    // the framer over the bytes cut into pieces of varying size, with gaps
    let mut framer = if selector & 4 == 0 {
        Framer::new(10)
    } else {
        Framer::resyncing(4)
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
