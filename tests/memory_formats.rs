//! `--format text`, `--format tree` and `--expect`: like the JSON report, their memory must
//! not grow with the number of exchanges, although each writes or checks them all in
//! order. For each, two generated captures, one twice the other, go through the sink
//! under an allocator that tracks the peak heap; both hold more output than the sink
//! keeps in memory, so both go through sorted runs on disk. (Its own test binary: the
//! peak is process-wide.)

#[path = "it/common.rs"]
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use common::*;
use pidshark::expect::Check;
use pidshark::report::json::JsonSink;
use pidshark::report::model;
use pidshark::report::sink::{Each, Sink};
use pidshark::report::text::TextSink;
use pidshark::report::tree::TreeSink;

/// The system allocator, counting the bytes allocated now and at the peak since the
/// last [`Peak::reset`].
struct Peak {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Peak {
    fn reset(&self) {
        self.peak
            .store(self.now.load(Ordering::SeqCst), Ordering::SeqCst);
    }
    fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

// The one unsafe of the project: a global allocator must be an unsafe impl (the `cap`
// crate of the other memory tests has no peak to reset).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = self.now.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            self.peak.fetch_max(now, Ordering::SeqCst);
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        self.now.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOCATOR: Peak = Peak {
    now: AtomicUsize::new(0),
    peak: AtomicUsize::new(0),
};

/// One test at a time: the peak is process-wide, and tests run on parallel threads.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `path` through the sink `make` builds; returns the peak heap of the run, the
/// bytes written and their end.
fn peak_of(
    path: &Path,
    keep_raw: bool,
    make: impl FnOnce(Box<dyn Write + Send>) -> Box<dyn Sink>,
) -> (usize, u64, String) {
    let mut config = pidshark::Config::for_inputs(vec![path.to_str().unwrap().to_owned()]);
    config.kafka.keep_raw = match keep_raw {
        true => pidshark::kafka::KeepRaw::ProducerIds,
        false => pidshark::kafka::KeepRaw::Nothing,
    };
    config.max_recent_blocks = 256;
    let out = Counted::default();
    let mut sink = make(Box::new(out.clone()));
    ALLOCATOR.reset();
    pidshark::run(&config, sink.as_mut()).expect("capture reads");
    drop(sink);
    let peak = ALLOCATOR.peak();
    let (bytes, end) = out.seen();
    (peak, bytes, String::from_utf8_lossy(&end).into_owned())
}

/// The two captures, `per_connection` and twice that exchanges on each of 20 connections.
fn captures(dir: &Path, per_connection: u32) -> [std::path::PathBuf; 2] {
    let paths = [dir.join("small.pcap"), dir.join("large.pcap")];
    apid_capture(&paths[0], 20, per_connection);
    apid_capture(&paths[1], 20, 2 * per_connection);
    paths
}

/// Both runs wrote more than the sink holds in memory (4 MiB), and the larger one's peak
/// heap is within `slack` of the smaller one's and under 32 MiB.
fn assert_flat(
    format: &str,
    (small, small_bytes): (usize, u64),
    (large, large_bytes): (usize, u64),
    slack: usize,
) {
    eprintln!(
        "{format}: peak heap {} KiB writing {} MB, {} KiB writing {} MB",
        small >> 10,
        small_bytes / 1_000_000,
        large >> 10,
        large_bytes / 1_000_000
    );
    assert!(small_bytes > 5 << 20, "{format}: {small_bytes} bytes");
    assert!(large_bytes > 2 * small_bytes - small_bytes / 10);
    let growth = large.saturating_sub(small);
    assert!(
        growth < slack,
        "{format}: peak heap grew by {growth} bytes for twice the exchanges"
    );
    assert!(large < 32 << 20, "{format}: peak heap {large} bytes");
}

#[test]
fn the_text_report_memory_does_not_grow_with_exchanges() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let [small, large] = captures(dir.path(), 4000);
    let text = |out| -> Box<dyn Sink> { Box::new(TextSink::new(false, out).listing_all(true)) };
    let (a, a_bytes, end) = peak_of(&small, false, text);
    assert!(end.ends_with("\n"), "written to its end: {end:?}");
    let (b, b_bytes, _) = peak_of(&large, false, text);
    // 80,000 more lines at 13 bytes each already make 1 MiB.
    assert_flat("text", (a, a_bytes), (b, b_bytes), 1 << 20);
}

#[test]
fn the_tree_view_memory_does_not_grow_with_exchanges() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let [small, large] = captures(dir.path(), 500);
    let tree = |out| -> Box<dyn Sink> { Box::new(TreeSink::new(out)) };
    let (a, a_bytes, end) = peak_of(&small, true, tree);
    assert!(end.ends_with("\n\n"), "written to its end: {end:?}");
    let (b, b_bytes, _) = peak_of(&large, true, tree);
    // Twice the runs on disk, each read through 64 KiB while merging (0.6 MiB more);
    // 10,000 more exchanges at 150 bytes each, or their messages' text, show beyond that.
    assert_flat("tree", (a, a_bytes), (b, b_bytes), 2 << 20);
}

#[test]
fn checking_against_a_golden_file_does_not_grow_with_exchanges() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let [small, large] = captures(dir.path(), 2000);
    // A golden file without exchanges: every exchange of the run is a difference, the
    // first 50 listed and the rest counted.
    let golden = || pidshark::expect::Golden::parse(r#"{"exchanges": []}"#).unwrap();
    // The format's own sink keeps nothing: what is measured is the check's.
    let checked = |_out| -> Box<dyn Sink> {
        let nothing = Box::new(Each(|_: &model::Exchange| Ok(())));
        Box::new(Check::new(golden(), nothing))
    };
    let (a, _, _) = peak_of(&small, false, checked);
    let (b, _, _) = peak_of(&large, false, checked);
    // What the check keeps: each exchange's compact JSON, about 800 bytes.
    let kept = |exchanges: u64| exchanges * 800;
    // 40,000 more exchanges at 26 bytes each make 1 MiB.
    assert_flat("--expect", (a, kept(40_000)), (b, kept(80_000)), 1 << 20);
}

#[test]
fn a_check_lists_fifty_differences_and_counts_the_rest() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.pcap");
    apid_capture(&path, 2, 100);
    let config = pidshark::Config::for_inputs(vec![path.to_str().unwrap().to_owned()]);
    let golden = pidshark::expect::Golden::parse(r#"{"exchanges": []}"#).unwrap();
    let mut check = Check::new(golden, Box::new(JsonSink::new(false, Box::new(io::sink()))));
    pidshark::run(&config, &mut check).unwrap();
    let lines = check.differences();
    assert_eq!(lines.len(), 51);
    assert!(lines[0].ends_with("is new"), "{}", lines[0]);
    assert_eq!(lines[50], "... and 150 more differences");
}
