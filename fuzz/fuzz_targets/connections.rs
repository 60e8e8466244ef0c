//! Many connections at once, generated from structured input: Kafka-shaped requests and
//! responses, raw bytes, bytes lost before a segment, SYNs, FINs and RSTs, repeated for
//! bulk, written as a pcap and run through the whole pipeline with the default caps but
//! a small memory budget, so that shedding (`--max-memory`) is reached with the rest.
#![no_main]

use arbitrary::Arbitrary;
use etherparse::PacketBuilder;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
enum Payload {
    Raw(Vec<u8>),
    Request {
        key: i16,
        version: i16,
        corr: i32,
        body: u16,
    },
    Response {
        corr: i32,
        body: u16,
    },
    Syn,
    Fin,
    Rst {
        ahead: u32,
    },
}

#[derive(Arbitrary, Debug)]
struct Op {
    conn: u8,
    from_client: bool,
    /// Bytes lost before this segment.
    lost: u8,
    /// Times the payload is sent (bulk for the budget).
    repeat: u8,
    payload: Payload,
}

fn framed(message: &[u8]) -> Vec<u8> {
    let mut out = (message.len() as u32).to_be_bytes().to_vec();
    out.extend(message);
    out
}

fn bytes(payload: &Payload) -> Vec<u8> {
    match payload {
        Payload::Raw(raw) => raw.clone(),
        Payload::Request {
            key,
            version,
            corr,
            body,
        } => {
            let mut m = key.to_be_bytes().to_vec();
            m.extend(version.to_be_bytes());
            m.extend(corr.to_be_bytes());
            m.extend(1i16.to_be_bytes());
            m.push(b'b');
            m.resize(m.len() + usize::from(*body), 0);
            framed(&m)
        }
        Payload::Response { corr, body } => {
            let mut m = corr.to_be_bytes().to_vec();
            m.resize(m.len() + usize::from(*body), 0);
            framed(&m)
        }
        Payload::Syn | Payload::Fin | Payload::Rst { .. } => Vec::new(),
    }
}

fn record(out: &mut Vec<u8>, n: u32, packet: &[u8]) {
    out.extend(n.to_le_bytes()); // seconds: one packet a second
    out.extend(0u32.to_le_bytes());
    out.extend((packet.len() as u32).to_le_bytes());
    out.extend((packet.len() as u32).to_le_bytes());
    out.extend(packet);
}

/// One Ethernet/IPv4/TCP packet of `op`'s direction at `seq`.
fn packet(op: &Op, seq: u32, payload: &[u8]) -> Vec<u8> {
    let client = [10, 0, 1, op.conn];
    let port = 40_000 + u16::from(op.conn);
    let ((src, sport), (dst, dport)) = if op.from_client {
        ((client, port), ([10, 0, 0, 2], 9092))
    } else {
        (([10, 0, 0, 2], 9092), (client, port))
    };
    let tcp = PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4(src, dst, 64)
        .tcp(sport, dport, seq, 65535);
    let tcp = match op.payload {
        Payload::Syn => tcp.syn(),
        Payload::Fin => tcp.fin().ack(0),
        Payload::Rst { .. } => tcp.rst(),
        _ => tcp.ack(0),
    };
    let mut out = Vec::with_capacity(payload.len() + 54);
    let _ = tcp.write(&mut out, payload);
    out
}

/// Packets and payload bytes written per input: enough to fill the budget many times
/// over, few enough that one input runs well under a second with the sanitizer, whose
/// instrumented compares make the framing search (a few compares a byte) ~50 times
/// slower than a release build: 15 MB of searched bytes took 2.2 s and, on a loaded
/// machine, went past the 10 s timeout.
const MAX_PACKETS: u32 = 20_000;
const MAX_PAYLOAD_BYTES: usize = 4 << 20;

fn capture(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(0xa1b2c3d4u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(4u16.to_le_bytes());
    out.extend([0; 8]);
    out.extend(65535u32.to_le_bytes());
    out.extend(1u32.to_le_bytes()); // Ethernet
                                    // the next sequence number of each connection's two directions
    let mut seqs = vec![[1000u32, 5000u32]; 256];
    let mut n = 0u32;
    let mut payload_bytes = 0usize;
    for op in ops {
        if n >= MAX_PACKETS || payload_bytes >= MAX_PAYLOAD_BYTES {
            break;
        }
        let Some(seq) = seqs
            .get_mut(usize::from(op.conn))
            .and_then(|s| s.get_mut(usize::from(!op.from_client)))
        else {
            continue;
        };
        *seq = seq.wrapping_add(u32::from(op.lost));
        let data = bytes(&op.payload);
        for _ in 0..=op.repeat {
            if n >= MAX_PACKETS || payload_bytes >= MAX_PAYLOAD_BYTES {
                break;
            }
            match op.payload {
                Payload::Syn | Payload::Fin => {
                    n += 1;
                    record(&mut out, n, &packet(op, *seq, &[]));
                    *seq = seq.wrapping_add(1);
                }
                Payload::Rst { ahead } => {
                    n += 1;
                    record(&mut out, n, &packet(op, seq.wrapping_add(ahead), &[]));
                }
                _ => {
                    for chunk in data.chunks(1448).take(64) {
                        n += 1;
                        payload_bytes += chunk.len();
                        record(&mut out, n, &packet(op, *seq, chunk));
                        *seq = seq.wrapping_add(chunk.len() as u32);
                    }
                }
            }
        }
    }
    out
}

fuzz_target!(|ops: Vec<Op>| {
    let mut config = pidshark::Config::for_inputs(Vec::new());
    config.max_memory = 16 * 1024; // the other caps as shipped
    let reader: Box<dyn std::io::Read + Send> = Box::new(std::io::Cursor::new(capture(&ops)));
    // The JSON report with lists of at most 4 KiB in memory: the spilled runs and their
    // merge run too.
    let mut sink =
        pidshark::report::json::JsonSink::with_run_bytes(true, Box::new(std::io::sink()), 4096);
    let _ = pidshark::run_readers(&config, vec![("fuzz".to_owned(), reader)], &mut sink);
});
