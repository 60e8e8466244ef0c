//! The default `--format json` report: memory must not grow with the number of
//! exchanges, although the report lists them all (and their blocks) in order. Two
//! generated captures, one twice the other, are written through the JSON sink under a
//! counting allocator; both hold more serialized exchanges than the sink keeps in memory,
//! so both go through sorted runs on disk and their merge. (Its own test binary: the
//! peak is process-wide.)

#[path = "it/common.rs"]
mod common;

use std::alloc::System;

use cap::Cap;
use common::*;
use pidshark::report::json::JsonSink;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Writes the pretty JSON report of `path`; returns its exchanges and bytes.
fn report(path: &std::path::Path) -> (u64, u64) {
    let mut config = pidshark::Config::for_inputs(vec![path.to_str().unwrap().to_owned()]);
    config.max_recent_blocks = 256;
    let out = Counted::default();
    let mut sink = JsonSink::new(true, Box::new(out.clone()));
    let report = pidshark::run(&config, &mut sink).expect("capture reads");
    let (bytes, end) = out.seen();
    assert!(end.ends_with(b"}\n"), "the report is written to its end");
    (report.summary.exchanges.complete, bytes)
}

#[test]
fn the_json_report_memory_does_not_grow_with_exchanges() {
    let dir = tempfile::tempdir().unwrap();
    let (small, large) = (dir.path().join("small.pcap"), dir.path().join("large.pcap"));
    apid_capture(&small, 20, 2000);
    apid_capture(&large, 20, 4000);
    let after_writing = ALLOCATOR.max_allocated();
    let (exchanges, small_bytes) = report(&small);
    assert_eq!(exchanges, 40_000);
    let after_small = ALLOCATOR.max_allocated();
    let (exchanges, large_bytes) = report(&large);
    assert_eq!(exchanges, 80_000);
    let after_large = ALLOCATOR.max_allocated();
    let growth = after_large.saturating_sub(after_small);
    eprintln!(
        "peak heap: {} KiB writing the captures, {} KiB for 40,000 exchanges ({} MB of JSON), {} KiB for 80,000 ({} MB)",
        after_writing >> 10,
        after_small >> 10,
        small_bytes / 1_000_000,
        after_large >> 10,
        large_bytes / 1_000_000,
    );
    assert!(after_small > after_writing, "the report's peak is measured");
    // More JSON than the two lists hold in memory (4 MiB each), in both.
    assert!(small_bytes > 3 * (8 << 20), "{small_bytes} bytes");
    // Fixed: the lists' 4 MiB each, the pipeline's buffers, latency samples up to 8,192
    // per broker; a merge buffer (64 KiB) per run grows with the runs up to 64 of them.
    // Anything kept per exchange shows beyond that: 40,000 more exchanges at 26 bytes
    // each already make 1 MiB.
    assert!(
        growth < 2 << 20,
        "peak heap grew by {growth} bytes for twice the exchanges"
    );
    assert!(after_large < 32 << 20, "peak heap {after_large} bytes");
}
