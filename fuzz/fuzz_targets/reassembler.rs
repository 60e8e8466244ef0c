//! The TCP reassembler on arbitrary segment sequences (structured input).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use pidshark::packet_ref::PacketRef;
use pidshark::tcp::assembler::{Assembler, Delivery, Segment, MAX_HELD_RUNS};

#[derive(Debug, Arbitrary)]
enum Event {
    Segment {
        seq: u32,
        syn: bool,
        fin: bool,
        payload: Vec<u8>,
        missing: u16,
    },
    Ack {
        ack: u32,
        carries_data: bool,
    },
    Flush,
}

fuzz_target!(|input: (u16, Vec<Event>)| {
    let (cap, events) = input;
    let mut asm = Assembler::new(usize::from(cap));
    let mut delivered = 0u64;
    let mut out = |d: Delivery<'_>| {
        if let Delivery::Data(bytes, _) = d {
            delivered += bytes.len() as u64;
        }
    };
    for (idx, event) in events.into_iter().enumerate() {
        let at = PacketRef {
            frame: idx as u64 + 1,
            ..PacketRef::default()
        };
        match event {
            Event::Segment {
                seq,
                syn,
                fin,
                payload,
                missing,
            } => asm.segment(
                Segment {
                    seq,
                    syn,
                    fin,
                    payload: &payload,
                    missing_len: u32::from(missing),
                    at,
                },
                &mut out,
            ),
            Event::Ack { ack, carries_data } => asm.acked(ack, carries_data, at, &mut out),
            Event::Flush => asm.flush(at, &mut out),
        }
        // the caps hold between segments: what held runs cost, and their number
        assert!(asm.held_len() <= usize::from(cap));
        assert!(asm.held_runs() <= MAX_HELD_RUNS);
    }
});
