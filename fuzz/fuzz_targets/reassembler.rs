//! The TCP reassembler on arbitrary segment sequences (structured input), run twice side
//! by side: once with every payload given a spot in a "file" (the payloads one after
//! another) that it reads again to compare retransmissions, once copying every byte.
//! Both must deliver and find the same.
#![no_main]

use std::sync::Mutex;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use pidshark::packet_ref::{FileSpot, NoRecall, PacketRef, Recall};
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

/// The payloads given so far, one after another: the "capture file" spots point into.
#[derive(Debug, Default)]
struct Written(Mutex<Vec<u8>>);

impl Recall for Written {
    fn recall(&self, spot: FileSpot, into: &mut [u8]) -> bool {
        let file = self.0.lock().expect("not poisoned");
        let Ok(from) = usize::try_from(spot.offset()) else {
            return false;
        };
        match file.get(from..from + into.len()) {
            Some(bytes) => {
                into.copy_from_slice(bytes);
                true
            }
            None => false,
        }
    }
}

/// What one assembler handed on, in order.
fn recorder(seen: &mut Vec<String>) -> impl FnMut(Delivery<'_>) + '_ {
    |d: Delivery<'_>| seen.push(format!("{d:?}"))
}

fuzz_target!(|input: (u16, Vec<Event>)| {
    let (cap, events) = input;
    let written = Written::default();
    let mut spotted = Assembler::new(usize::from(cap));
    let mut copied = Assembler::new(usize::from(cap));
    let (mut seen_spotted, mut seen_copied) = (Vec::new(), Vec::new());
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
            } => {
                let spot = {
                    let mut file = written.0.lock().expect("not poisoned");
                    let spot = FileSpot::new(0, file.len() as u64);
                    file.extend_from_slice(&payload);
                    spot
                };
                let seg = Segment {
                    seq,
                    syn,
                    fin,
                    payload: &payload,
                    missing_len: u32::from(missing),
                    at,
                    spot,
                    recall: &written,
                };
                spotted.segment(seg, &mut recorder(&mut seen_spotted));
                let seg = Segment {
                    spot: None,
                    recall: &NoRecall,
                    ..seg
                };
                copied.segment(seg, &mut recorder(&mut seen_copied));
            }
            Event::Ack { ack, carries_data } => {
                spotted.acked(ack, carries_data, at, &mut recorder(&mut seen_spotted));
                copied.acked(ack, carries_data, at, &mut recorder(&mut seen_copied));
            }
            Event::Flush => {
                spotted.flush(at, &mut recorder(&mut seen_spotted));
                copied.flush(at, &mut recorder(&mut seen_copied));
            }
        }
        assert_eq!(seen_spotted, seen_copied, "after event {idx}");
        // the caps hold between segments: what held runs cost, and their number
        assert!(spotted.held_len() <= usize::from(cap));
        assert!(spotted.held_runs() <= MAX_HELD_RUNS);
    }
});
