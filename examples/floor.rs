//! The floor for `scripts/bench`: the least any tool must do with a capture, reading
//! every record with pcap-parser through a fixed buffer and slicing every packet down to
//! TCP with etherparse. Prints packets, TCP segments and TCP payload bytes.
//!
//! `cargo run --release --example floor -- FILE`

use std::fs::File;

use etherparse::{LaxSlicedPacket, TransportSlice};
use pcap_parser::{create_reader, PcapBlockOwned, PcapError};

fn main() {
    let path = std::env::args().nth(1).expect("usage: floor FILE");
    let file = File::open(&path).expect("capture opens");
    let mut reader = create_reader(1 << 20, file).expect("a pcap or pcapng file");
    let (mut packets, mut segments, mut payload) = (0u64, 0u64, 0u64);
    loop {
        match reader.next() {
            Ok((offset, block)) => {
                let data = match &block {
                    PcapBlockOwned::Legacy(b) => Some(b.data),
                    PcapBlockOwned::NG(pcap_parser::Block::EnhancedPacket(b)) => Some(b.data),
                    _ => None,
                };
                if let Some(data) = data {
                    packets += 1;
                    if let Ok(sliced) = LaxSlicedPacket::from_ethernet(data) {
                        if let Some(TransportSlice::Tcp(tcp)) = &sliced.transport {
                            segments += 1;
                            payload += tcp.payload().len() as u64;
                        }
                    }
                }
                reader.consume(offset);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => reader.refill().expect("refill"),
            Err(e) => panic!("{path}: {e:?}"),
        }
    }
    println!("{packets} packets, {segments} TCP segments, {payload} payload bytes");
}
