//! Memory: frames of other APIs are skipped by their length, never buffered. A capture
//! holding a 100 MB Produce request is read under a counting allocator, and the peak of
//! live heap bytes must stay far below the frame's size.
//!
//! Its own test binary, so no other test allocates while it measures.

#[path = "it/common.rs"]
mod common;

use std::alloc::System;

use cap::Cap;
use common::*;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

#[test]
fn hundred_megabyte_produce_frame_is_not_buffered() {
    const FRAME_LEN: usize = 100 << 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big-produce.pcap");
    {
        let mut w = PcapWriter::create(&path);
        let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:9093");
        c.handshake(&mut w);
        let (req, resp) = (
            request(67, 0, 1, true, &apid_request_body(1, 1)),
            response(1, true, &apid_response_body(0, 0, 1000)),
        );
        c.send(&mut w, true, &req, 1460);
        // Produce v9 header, then filler: written in pieces so the test itself stays small.
        let produce = request(0, 9, 2, true, &[]);
        let mut head = ((FRAME_LEN - 4) as u32).to_be_bytes().to_vec();
        head.extend(&produce[4..]);
        c.send(&mut w, true, &head, 1460);
        let filler = vec![0x5au8; 60 * 1024];
        let mut left = FRAME_LEN - head.len();
        while left > 0 {
            let n = left.min(filler.len());
            c.send(&mut w, true, &filler[..n], filler.len());
            left -= n;
        }
        c.send(&mut w, false, &resp, 1460);
        c.send(&mut w, false, &response(2, true, &[0; 16]), 1460);
        c.close(&mut w);
        w.finish();
    }
    let config = pidshark::Config::for_inputs(vec![path.to_str().unwrap().to_owned()]);
    let report = pidshark::report(&config).expect("capture reads");
    // Peak of live heap bytes over the whole test process, writing the capture included.
    let peak = ALLOCATOR.max_allocated();
    assert_eq!(report.summary.exchanges.complete, 1);
    let produce = report
        .summary
        .api_keys
        .get("Produce")
        .expect("Produce counted");
    assert_eq!((produce.requests, produce.responses), (1, 1));
    assert!(
        peak < 8 << 20,
        "peak heap during the run was {peak} bytes for a {FRAME_LEN}-byte frame"
    );
    eprintln!("peak heap: {} KiB", peak >> 10);
}
