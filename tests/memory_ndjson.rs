//! `--format ndjson` streams: memory must not grow with the number of exchanges. Two
//! generated captures, one ten times the other, are streamed through the library under
//! a counting allocator; the larger may not raise the peak of live heap bytes by more
//! than a small constant. Both have more exchanges than can be in flight between the
//! capture thread and the analysis thread (a bounded queue of batches), so that bound is
//! reached by both. (Its own test binary: the peak is process-wide.)

#[path = "it/common.rs"]
mod common;

use std::alloc::System;

use cap::Cap;
use common::*;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// A capture of `connections` connections with `per_connection` AllocateProducerIds
/// exchanges each, all granting contiguous blocks.
fn capture(path: &std::path::Path, connections: u32, per_connection: u32) {
    let mut w = PcapWriter::create(path);
    let mut next_start = 0i64;
    for conn in 0..connections {
        let mut c = Conn::new(
            &format!("10.0.{}.{}:40000", conn / 250, conn % 250 + 1),
            "10.9.9.9:9093",
        );
        c.handshake(&mut w);
        for corr in 0..per_connection {
            let req = request(67, 0, corr as i32, true, &apid_request_body(conn as i32, 7));
            let resp = response(corr as i32, true, &apid_response_body(0, next_start, 1000));
            next_start += 1000;
            c.send(&mut w, true, &req, 1460);
            c.send(&mut w, false, &resp, 1460);
        }
        c.close(&mut w);
    }
    w.finish();
}

fn stream(path: &std::path::Path) -> u64 {
    let mut config = pidshark::Config::for_inputs(vec![path.to_str().unwrap().to_owned()]);
    config.max_recent_blocks = 256;
    let mut lines = 0u64;
    let mut sink = |ex: &pidshark::report::model::Exchange| -> std::io::Result<()> {
        assert_eq!(ex.status, "complete");
        lines += 1;
        Ok(())
    };
    let report = pidshark::run_streaming(&config, &mut sink).expect("capture reads");
    assert!(report.exchanges.is_empty());
    assert_eq!(report.summary.exchanges.total, lines);
    lines
}

#[test]
fn streaming_memory_does_not_grow_with_exchanges() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("small.pcap"), dir.path().join("large.pcap"));
    capture(&small, 20, 400);
    capture(&large, 20, 4000);
    assert_eq!(stream(&small), 8_000);
    let after_small = ALLOCATOR.max_allocated();
    assert_eq!(stream(&large), 80_000);
    let after_large = ALLOCATOR.max_allocated();
    let growth = after_large.saturating_sub(after_small);
    eprintln!(
        "peak heap: {} KiB after 8,000 exchanges, {} KiB after 80,000",
        after_small >> 10,
        after_large >> 10
    );
    assert!(
        growth < 256 << 10,
        "peak heap grew by {growth} bytes for ten times the exchanges"
    );
}
