//! The floor that matters for `scripts/bench`: one thread that maps the file and runs
//! pcap-parser's slice parsers (`parse_pcap_frame`, or the pcapng block parsers) and
//! etherparse's slicing on every packet, with no copy of the bytes at all. Prints
//! packets, TCP segments and TCP payload bytes, as `floor` does.
//!
//! `cargo run --release --example floor_mmap -- FILE`

// Mapping a file is `unsafe` in memmap2 (another process could change it meanwhile).
#![allow(unsafe_code)]

use std::fs::File;

use etherparse::{LaxSlicedPacket, TransportSlice};
use pcap_parser::pcap::{parse_pcap_frame, parse_pcap_frame_be, parse_pcap_header};
use pcap_parser::pcapng::{parse_block_be, parse_block_le, Block};

#[derive(Default)]
struct Counts {
    packets: u64,
    segments: u64,
    payload: u64,
}

impl Counts {
    fn packet(&mut self, data: &[u8]) {
        self.packets += 1;
        if let Ok(sliced) = LaxSlicedPacket::from_ethernet(data) {
            if let Some(TransportSlice::Tcp(tcp)) = &sliced.transport {
                self.segments += 1;
                self.payload += tcp.payload().len() as u64;
            }
        }
    }
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: floor_mmap FILE");
    let file = File::open(&path).expect("capture opens");
    // SAFETY: the map is unsafe only if another process changes the file while it is
    // mapped; nothing changes a benchmark's input during the run.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("capture maps");
    let mut counts = Counts::default();
    let mut rest: &[u8] = &map;
    if let Ok((after, header)) = parse_pcap_header(rest) {
        rest = after;
        let parse = if header.is_bigendian() {
            parse_pcap_frame_be
        } else {
            parse_pcap_frame
        };
        while let Ok((after, record)) = parse(rest) {
            counts.packet(record.data);
            rest = after;
        }
    } else {
        let mut big_endian = false;
        loop {
            let parsed = if big_endian {
                parse_block_be(rest)
            } else {
                parse_block_le(rest)
            };
            let Ok((after, block)) = parsed else {
                break;
            };
            match block {
                Block::SectionHeader(shb) => big_endian = shb.big_endian(),
                Block::EnhancedPacket(epb) => counts.packet(epb.data),
                _ => {}
            }
            rest = after;
        }
    }
    println!(
        "{} packets, {} TCP segments, {} payload bytes",
        counts.packets, counts.segments, counts.payload
    );
}
