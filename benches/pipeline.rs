//! Criterion benchmarks per pipeline stage on a generated capture (a few MB of Kafka
//! traffic: AllocateProducerIds exchanges, Heartbeats and 256 KiB Produce requests over
//! several connections), in bytes per second, and the JSON output of its exchanges in
//! exchanges per second. `cargo bench`; the end-to-end comparison with cat, the floor and
//! tshark is `scripts/bench`.

#[path = "../tests/it/common.rs"]
mod common;

use std::hint::black_box;
use std::io::Cursor;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pidshark::capture::read_capture;
use pidshark::decode::{decode, Decoded};
use pidshark::diag::Diagnostics;
use pidshark::kafka::framing::{Decision, Frame, FrameHandler, Framer, NoStream};
use pidshark::packet_ref::PacketRef;
use pidshark::report::sink::Collect;

use common::*;

fn capture() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.pcap");
    let mut w = PcapWriter::create(&path);
    let produce_body = vec![0x5au8; 256 * 1024];
    for conn in 0..8u32 {
        let mut c = Conn::new(&format!("10.0.0.{}:40000", conn + 1), "10.0.1.1:9093");
        c.handshake(&mut w);
        for corr in 0..200i32 {
            let (req, resp) = if corr % 50 == 49 {
                (
                    request(0, 9, corr, true, &produce_body),
                    response(corr, true, &[0; 16]),
                )
            } else if corr % 2 == 0 {
                (
                    request(67, 0, corr, true, &apid_request_body(conn as i32, 5)),
                    response(
                        corr,
                        true,
                        &apid_response_body(0, i64::from(corr) * 1000, 1000),
                    ),
                )
            } else {
                (
                    request(12, 4, corr, true, &[0; 16]),
                    response(corr, true, &[0, 0, 0, 0, 0, 0, 0]),
                )
            };
            c.send(&mut w, true, &req, 1448);
            c.send(&mut w, false, &resp, 1448);
        }
        c.close(&mut w);
    }
    w.finish();
    std::fs::read(&path).unwrap()
}

/// Counts frames, keeping none.
struct Count(u64);

impl FrameHandler for Count {
    type Reader = NoStream;

    fn decide(&mut self, _len: i32, _prefix: &[u8], _at: PacketRef) -> Decision<NoStream> {
        Decision::Skip
    }
    fn frame(&mut self, _frame: Frame<'_, NoStream>) {
        self.0 += 1;
    }
    fn plausible(&mut self, _len: i32, _prefix: &[u8], _at: PacketRef) -> bool {
        true
    }
    fn resynced(&mut self, _skipped: u64, _at: PacketRef) {}
}

fn stages(c: &mut Criterion) {
    let bytes = capture();
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.sample_size(20);

    group.bench_function("capture: read records", |b| {
        b.iter(|| {
            let mut frame = 1;
            let mut n = 0u64;
            read_capture(
                Cursor::new(&bytes[..]),
                "bench",
                &mut frame,
                &mut Diagnostics::default(),
                |p, _| {
                    n += p.data.len() as u64;
                },
            )
            .unwrap();
            black_box(n)
        })
    });

    group.bench_function("decode: link, IP, TCP", |b| {
        b.iter(|| {
            let mut frame = 1;
            let mut payload = 0u64;
            read_capture(
                Cursor::new(&bytes[..]),
                "bench",
                &mut frame,
                &mut Diagnostics::default(),
                |p, _| {
                    if let Decoded::Tcp(seg) = decode(p) {
                        payload += seg.payload.len() as u64;
                    }
                },
            )
            .unwrap();
            black_box(payload)
        })
    });

    group.bench_function("framing: split the client streams", |b| {
        b.iter(|| {
            let mut frame = 1;
            let mut framers: Vec<Framer<NoStream>> = (0..8).map(|_| Framer::new(10)).collect();
            let mut count = Count(0);
            read_capture(
                Cursor::new(&bytes[..]),
                "bench",
                &mut frame,
                &mut Diagnostics::default(),
                |p, _| {
                    if let Decoded::Tcp(seg) = decode(p) {
                        if seg.dst.port() == 9093 && !seg.payload.is_empty() {
                            let idx = usize::from(seg.src.ip().to_string().ends_with('1'))
                                % framers.len();
                            if let Some(f) = framers.get_mut(idx) {
                                f.push(seg.payload, p.at, &mut count);
                            }
                        }
                    }
                },
            )
            .unwrap();
            black_box(count.0)
        })
    });

    group.bench_function("end to end: report", |b| {
        let config = pidshark::Config::for_inputs(Vec::new());
        b.iter(|| {
            let reader: Box<dyn std::io::Read + Send> = Box::new(Cursor::new(bytes.clone()));
            let report = pidshark::run_readers(
                &config,
                vec![("bench".into(), reader)],
                &mut Collect::default(),
            )
            .unwrap();
            black_box(report.summary.exchanges.total)
        })
    });
    group.finish();

    // The output stage: JSON of every exchange, serde_json against the field-by-field
    // writer used for --compact and ndjson (same bytes; a property test holds them equal).
    let config = pidshark::Config::for_inputs(Vec::new());
    let reader: Box<dyn std::io::Read + Send> = Box::new(Cursor::new(bytes.clone()));
    let exchanges = pidshark::run_readers(
        &config,
        vec![("bench".into(), reader)],
        &mut Collect::default(),
    )
    .unwrap()
    .exchanges;
    let mut group = c.benchmark_group("output");
    group.throughput(Throughput::Elements(exchanges.len() as u64));
    group.bench_function("exchanges as JSON: serde_json", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            out.clear();
            for ex in &exchanges {
                serde_json::to_writer(&mut out, ex).unwrap();
            }
            black_box(out.len())
        })
    });
    group.bench_function("exchanges as JSON: report::json::writer", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            out.clear();
            for ex in &exchanges {
                pidshark::report::json::writer::compact(&mut out, ex).unwrap();
            }
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
