//! Exchanges of large AllocateProducerIds messages (a tagged field of 100 KB in every
//! request, kept whole as the message's raw bytes, as for the tree view; the decoded
//! field keeps only 1 KiB) streamed to a slow reader: the exchanges waiting
//! between the capture thread and the output thread are capped by their bytes, not only
//! by their number, so the heap stays within a few MiB although 60 MB of such exchanges
//! pass through. (Its own test binary: the peak is process-wide.)

#[path = "it/common.rs"]
mod common;

use std::alloc::System;
use std::time::Duration;

use cap::Cap;
use common::*;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const EXCHANGES: u32 = 600;
const TAG_LEN: usize = 100_000;

fn uvarint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A v0 request body whose tagged section carries one field of `len` bytes.
fn request_body_with_tag(broker_id: i32, len: usize) -> Vec<u8> {
    let mut body = broker_id.to_be_bytes().to_vec();
    body.extend(7i64.to_be_bytes());
    uvarint(&mut body, 1); // one tagged field
    uvarint(&mut body, 0); // tag 0
    uvarint(&mut body, len as u64);
    body.extend(std::iter::repeat_n(0x5a, len));
    body
}

#[test]
fn large_exchanges_in_flight_are_capped_by_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.pcap");
    {
        let mut w = PcapWriter::create(&path);
        let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:9093");
        c.handshake(&mut w);
        for corr in 0..EXCHANGES as i32 {
            let req = request(67, 0, corr, true, &request_body_with_tag(1, TAG_LEN));
            let resp = response(
                corr,
                true,
                &apid_response_body(0, i64::from(corr) * 1000, 1000),
            );
            c.send(&mut w, true, &req, 1460);
            c.send(&mut w, false, &resp, 1460);
        }
        c.close(&mut w);
        w.finish();
    }
    let before = ALLOCATOR.max_allocated();
    let mut config = pidshark::Config::for_inputs(vec![path.to_str().unwrap().to_owned()]);
    config.kafka.keep_raw = pidshark::kafka::KeepRaw::ProducerIds;
    let mut lines = 0u64;
    let mut sink = |ex: &pidshark::report::model::Exchange| -> std::io::Result<()> {
        let tags = ex
            .request
            .tagged_fields
            .as_ref()
            .expect("tagged fields read");
        assert_eq!(tags[0].data_len, Some(TAG_LEN as u64), "the field's length");
        assert!(ex.request.raw.len() > TAG_LEN, "the message's raw bytes");
        lines += 1;
        // A slow reader: the capture thread runs ahead until the queue is full.
        std::thread::sleep(Duration::from_micros(500));
        Ok(())
    };
    let report = pidshark::run(&config, &mut pidshark::report::sink::Each(&mut sink))
        .expect("capture reads");
    assert_eq!(lines, u64::from(EXCHANGES));
    assert_eq!(report.summary.exchanges.complete, u64::from(EXCHANGES));
    let peak = ALLOCATOR.max_allocated();
    eprintln!(
        "peak heap {} KiB (before streaming {} KiB) for {} MB of exchanges",
        peak >> 10,
        before >> 10,
        EXCHANGES as usize * TAG_LEN / 1_000_000
    );
    // Without the byte cap, up to six batches of 256 of these exchanges (each holding its
    // 100 KB field, and its hex on the output side) would wait: over 60 MB here.
    assert!(peak < 24 << 20, "peak heap {peak} bytes");
}
