//! pidshark: Kafka AllocateProducerIds (API key 67) exchanges from packet captures.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! ```text
//! readahead file or stdin, gzip inflated   -> bytes, read on a thread of their own
//! capture   pcap/pcapng records            -> Packet (frame number, time, link type, bytes)
//! decode    link layer, IPv4/IPv6, TCP      -> TcpSegmentView (borrowed), or an IP fragment
//! defrag    IP fragments of TCP datagrams   -> reassembled payloads, then TCP as decoded
//! tcp       connections, reassembly         -> ordered bytes per direction, gaps, FINs
//! kafka     framing, headers, API 67 decode -> messages: request and response frames
//! pairing   messages, by correlation id     -> exchanges, per-API counts
//! --------------------------- (worker: the rest on the output thread) ---------------------
//! analysis  blocks of ids, brokers, latency -> findings
//! report    ordering, statistics            -> the JSON report of report-v1.md
//! ```
//!
//! [`run`] drives it for a [`Config`]; findings about the input become diagnostics in the
//! report, and only a file that cannot be read as a capture at all is an [`Error`].

// No input may make us panic: no indexing, unwrap, expect or panic in library code
// (tests may); arithmetic on input values is checked or saturating where it could
// overflow (see README "Hostile input").
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

pub mod analysis;
pub mod capture;
pub mod cli;
pub mod copies;
pub mod decode;
pub mod defrag;
pub mod diag;
pub mod error;
pub mod expect;
pub mod frame_watch;
pub mod gate;
pub mod heap;
pub mod kafka;
pub mod merge;
pub mod pairing;
pub mod readahead;
pub mod report;
pub mod resident;
pub mod tcp;
pub mod worker;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use flate2::read::MultiGzDecoder;

pub use cli::Config;
pub use error::Error;

use analysis::Analyzer;
use capture::PacketRef;
use decode::Decoded;
use diag::{Diagnostics, Kind};
use frame_watch::FrameWatch;
use kafka::{Dissector, KafkaConn, Reading};
use readahead::{Blocks, ReadAhead, ReadBlocks};
use report::sink::Sink;
use tcp::Tracker;
use worker::Batcher;

/// Out-of-order bytes held per direction before a hole is declared lost.
pub const DEFAULT_MAX_HELD_LEN: usize = 4 << 20;

/// gzip's magic bytes (RFC 1952): a compressed capture is recognised by content, not name.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Bytes read first, to look for [`GZIP_MAGIC`].
const HEAD_LEN: usize = 64 << 10;

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn open(
    path: &str,
    bytes_read: Option<&Arc<AtomicU64>>,
    stop: Arc<AtomicBool>,
) -> Result<Box<dyn Blocks>, Error> {
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        let file = File::open(path).map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(Error::IsDirectory {
                path: path.to_owned(),
            });
        }
        Box::new(file)
    };
    let raw: Box<dyn Read + Send> = match bytes_read {
        Some(count) => Box::new(Counting {
            inner: raw,
            count: Arc::clone(count),
        }),
        None => raw,
    };
    // Reading (and inflating) goes on beside the parsing.
    let input = decompress(path, raw)?;
    Ok(Box::new(ReadAhead::new(input).stop_when(stop)))
}

/// Reads gzip-compressed input through a decoder, whatever its name.
fn decompress(path: &str, mut raw: Box<dyn Read + Send>) -> Result<Box<dyn Read + Send>, Error> {
    // Peek at the start and put it back in front. A whole first block, not just the two
    // bytes needed: the file is then read on at page-aligned offsets (reads at odd
    // offsets copy out of the page cache at half the speed).
    let mut head = vec![0u8; HEAD_LEN];
    let mut filled = 0;
    let read_error = |source| Error::Read {
        path: path.to_owned(),
        source,
    };
    while filled < GZIP_MAGIC.len() {
        match raw.read(head.get_mut(filled..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_error(e)),
        }
    }
    head.truncate(filled);
    let is_gzip = head.starts_with(&GZIP_MAGIC);
    let whole = std::io::Cursor::new(head).chain(raw);
    if is_gzip {
        let compressed = Arc::new(AtomicU64::new(0));
        let counted = Counting {
            inner: whole,
            count: Arc::clone(&compressed),
        };
        Ok(Box::new(BombGuard {
            inner: MultiGzDecoder::new(counted),
            compressed,
            produced: 0,
        }))
    } else {
        Ok(Box::new(whole))
    }
}

/// Largest expansion believed of gzip input: real captures compress a few times to a
/// few dozen times; a "gzip bomb" of zeros expands a thousandfold.
pub const MAX_GZIP_RATIO: u64 = 1000;

/// Stops decompression that expands more than [`MAX_GZIP_RATIO`] times (after the first
/// MiB), as an error: what was read before is still reported.
struct BombGuard<R> {
    inner: R,
    compressed: Arc<AtomicU64>,
    produced: u64,
}

/// What the gzip decoder's "unexpected end of file" means: the compressed file was cut
/// short (`head -c`, a copy stopped midway), as a plain capture cut inside a record is.
/// Kept an `UnexpectedEof`, which the capture reader reports as `capture_truncated`.
const GZIP_ENDS_EARLY: &str = "the compressed file ends in the middle of its gzip stream";

impl<R: Read> Read for BombGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, GZIP_ENDS_EARLY)
            }
            // bad deflate data, a checksum that does not match: corruption
            _ => e,
        })?;
        self.produced = self.produced.saturating_add(n as u64);
        let allowed = self
            .compressed
            .load(Ordering::Relaxed)
            .saturating_mul(MAX_GZIP_RATIO)
            .max(1 << 20);
        if self.produced > allowed {
            return Err(std::io::Error::other(format!(
                "gzip data expands more than {MAX_GZIP_RATIO} times; not read further"
            )));
        }
        Ok(n)
    }
}

/// Reads every capture of `config` as one, handing each exchange to `sink` as it is
/// analysed and the rest of the report once the captures are read; returns that report
/// (with its exchanges when the sink puts them in, as [`report::sink::Collect`] does).
pub fn run(config: &Config, sink: &mut dyn Sink) -> Result<report::model::Report, Error> {
    process(config, sink, None)
}

/// [`run`] over captures given as readers (name, bytes) instead of `config.inputs`: for
/// fuzzing and embedding. The bytes may be gzip-compressed, as files may; they are read
/// on the calling thread.
pub fn run_readers(
    config: &Config,
    readers: Vec<(String, Box<dyn Read + Send>)>,
    sink: &mut dyn Sink,
) -> Result<report::model::Report, Error> {
    let readers = readers
        .into_iter()
        .map(|(name, r)| {
            // Read on this thread: no thread outlives the run (a detached read-ahead
            // thread ending after it shows as a leak to the fuzzers' sanitizer).
            let blocks: Box<dyn Blocks> = Box::new(ReadBlocks::new(decompress(&name, r)?));
            Ok((name, blocks))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    process(config, sink, Some(readers))
}

/// The whole report, every exchange in it: [`run`] with a [`report::sink::Collect`].
pub fn report(config: &Config) -> Result<report::model::Report, Error> {
    run(config, &mut report::sink::Collect::default())
}

/// Pairs what the Kafka stage found and hands the exchanges it finished to the analysis
/// thread. Exchanges completed by the same packet go in report order, so that responses a
/// server sends together count as simultaneous.
fn drain(
    dissector: &mut Dissector,
    pairing: &mut pairing::Pairing,
    batcher: &mut Batcher,
    mut watch: Option<&mut FrameWatch>,
) {
    for message in dissector.out.messages.drain(..) {
        if let Some(watch) = watch.as_deref_mut() {
            watch.message(&message);
        }
        pairing.message(message);
    }
    pairing.counted(&mut dissector.out.counted);
    if pairing.exchanges.is_empty() {
        batcher.tick();
        return;
    }
    pairing.sort_exchanges();
    for ex in pairing.exchanges.drain(..) {
        batcher.push(ex);
    }
    batcher.tick();
    // A shed gives up thousands of requests at once: their room, charged nowhere, is
    // given back rather than kept for a burst that may not come again.
    shrink_after_burst(&mut dissector.out.messages);
    shrink_after_burst(&mut pairing.exchanges);
}

/// Gives back an emptied vector's room past [`KEPT_AFTER_BURST`] elements.
fn shrink_after_burst<T>(emptied: &mut Vec<T>) {
    if emptied.capacity() > KEPT_AFTER_BURST {
        emptied.shrink_to(KEPT_AFTER_BURST);
    }
}

/// Elements the per-packet queues keep room for between packets: a packet's own
/// messages and exchanges fit many times over.
const KEPT_AFTER_BURST: usize = 1024;

/// Reads the captures on this thread while a second one analyses the exchanges and hands
/// them to `sink` (see [`worker`]), then builds the rest of the report and finishes the
/// sink with it.
fn process(
    config: &Config,
    sink: &mut dyn Sink,
    readers: Option<Vec<(String, Box<dyn Blocks>)>>,
) -> Result<report::model::Report, Error> {
    // Every format shows the exchanges the filters pass (the analysis sees them all).
    let first_packet = OnceLock::new();
    let frame_holds = OnceLock::new();
    let mut filtered;
    let sink: &mut dyn Sink = if config.filter.is_empty() {
        sink
    } else {
        filtered = report::filter::Filtered::new(&config.filter, &first_packet, &frame_holds, sink);
        &mut filtered
    };
    let needs = sink.needs();
    let analyzer = Analyzer::new(
        config.slow,
        needs.blocks_in_report,
        needs.exact_latency,
        config.max_recent_blocks,
    );
    let (mut batcher, rx) = worker::channel();
    let (outcome, read) = std::thread::scope(|scope| {
        let analysis = std::thread::Builder::new()
            .name("pidshark-output".into())
            .spawn_scoped(scope, || worker::consume(rx, analyzer, &mut *sink))
            .map_err(|source| Error::Thread { source })?;
        let read = read_all(config, readers, &mut batcher, &first_packet);
        batcher.finish();
        match analysis.join() {
            Ok(outcome) => Ok((outcome, read)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })?;
    // A failed output first: reading stops early after it, and what that does to the
    // reading is not the error to report.
    if let Some(source) = outcome.sink_error {
        return Err(Error::Output { source });
    }
    let (mut diags, captures, tcp_connections, dissector, pairing, held) = read?;
    if let Some(sentence) = held {
        let _ = frame_holds.set(sentence);
    }
    let analysis = outcome.analyzer.finish(&mut diags);
    let mut report = report::build(report::Findings {
        captures,
        analysis,
        tcp_connections,
        kafka_connections: dissector.kafka_connections,
        not_kafka_connections: dissector.not_kafka_connections,
        encrypted_connections: dissector.encrypted_connections,
        pairing,
        diagnostics: diags,
    });
    sink.finish(&mut report)
        .map_err(|source| Error::Output { source })?;
    Ok(report)
}

/// Each input with the time of its first packet, for the merge to open it when its time
/// comes: `None` for standard input and other inputs that are not regular files (pipes
/// cannot be read twice), and for files with no packet or that cannot be read as a
/// capture: those are opened at once, and their real read reports what there is to report.
fn first_times(inputs: &[String]) -> Vec<(String, Option<capture::Timestamp>)> {
    let peek = |path: &str| -> Option<capture::Timestamp> {
        if path == "-" {
            return None;
        }
        let file = File::open(path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let input = decompress(path, Box::new(file)).ok()?;
        capture::first_timestamp(input, path)
    };
    inputs.iter().map(|p| (p.clone(), peek(p))).collect()
}

/// What reading the captures leaves for the report besides the exchanges: with
/// `--frame`, what that frame held too.
type ReadOutcome = (
    Diagnostics,
    Vec<capture::CaptureInfo>,
    u64,
    Dissector,
    pairing::Pairing,
    Option<String>,
);

/// For `--frame`: notes which connection the frame's segment belongs to, and has the
/// Kafka stage note how that connection is read.
fn watch_connection(
    watch: &mut FrameWatch,
    tracker: &Tracker<KafkaConn>,
    dissector: &mut Dissector,
    segment: &decode::TcpSegmentView<'_>,
) {
    if let Some((index, state)) = tracker.connection_of(segment) {
        watch.connection(index);
        dissector.watch(index, state.map_or(Reading::Undecided, KafkaConn::reading));
    }
}

/// The stages a packet goes through on the capture thread, decoding to pairing.
struct Stages {
    tracker: Tracker<KafkaConn>,
    dissector: Dissector,
    pairing: pairing::Pairing,
    defragmenter: defrag::Defragmenter,
    copies: copies::Copies,
    /// Link types already reported as unsupported.
    unsupported: BTreeSet<i32>,
    watch: Option<FrameWatch>,
}

impl Stages {
    fn new(config: &Config) -> Self {
        let mut tracker = Tracker::with_limits(config.max_held_len, config.max_connections);
        tracker.set_max_memory(config.max_memory);
        tracker.watch_resident(resident::resident_bytes);
        Self {
            tracker,
            dissector: Dissector::new(config.kafka.clone()),
            pairing: pairing::Pairing::default(),
            defragmenter: defrag::Defragmenter::default(),
            copies: copies::Copies::new(config.clock_skew_ns),
            unsupported: BTreeSet::new(),
            watch: config.filter.frame.map(FrameWatch::new),
        }
    }

    /// The frame of another file's copy of `segment` already read, if it is one.
    fn copy_of(
        copies: &mut copies::Copies,
        segment: &decode::TcpSegmentView<'_>,
        at: PacketRef,
        diags: &mut Diagnostics,
    ) -> Option<u64> {
        // one file: no copies to look for (the common case, kept cheap)
        at.origin?;
        copies.copy_of(segment, at, diags)
    }

    /// One packet through decoding, reassembly, framing and pairing; the exchanges it
    /// completes go to `batcher`.
    fn packet(
        &mut self,
        packet: &capture::Packet<'_>,
        batcher: &mut Batcher,
        diags: &mut Diagnostics,
    ) {
        let decoded = decode::decode(packet);
        let mut watched = self.watch.as_mut().filter(|w| w.frame() == packet.at.frame);
        if let Some(w) = watched.as_deref_mut() {
            w.packet(packet, &decoded);
        }
        match decoded {
            Decoded::Tcp(segment) => {
                if let Some(original) = Self::copy_of(&mut self.copies, &segment, packet.at, diags) {
                    if let Some(w) = watched {
                        w.copy_of(original);
                    }
                    return; // another file's copy of it was read
                }
                // before, for a connection this segment ends; after, for one it starts
                if let Some(w) = watched.as_deref_mut() {
                    watch_connection(w, &self.tracker, &mut self.dissector, &segment);
                }
                self.tracker.segment(&segment, packet.at, &mut self.dissector, diags);
                if let Some(w) = watched {
                    watch_connection(w, &self.tracker, &mut self.dissector, &segment);
                }
                drain(&mut self.dissector, &mut self.pairing, batcher, self.watch.as_mut());
            }
            Decoded::Fragment(fragment) => {
                let Some(datagram) = self.defragmenter.fragment(&fragment, packet.at, diags)
                else {
                    return;
                };
                let cut = datagram.missing_len > 0;
                match decode::tcp_in_ip_payload(
                    datagram.src,
                    datagram.dst,
                    &datagram.payload,
                    datagram.missing_len,
                    cut,
                ) {
                    Decoded::Tcp(segment) => {
                        if Self::copy_of(&mut self.copies, &segment, packet.at, diags).is_some() {
                            return;
                        }
                        self.tracker.segment(&segment, packet.at, &mut self.dissector, diags);
                        drain(&mut self.dissector, &mut self.pairing, batcher, self.watch.as_mut());
                    }
                    Decoded::Malformed(reason) => diags.push(
                        Kind::PacketMalformed,
                        None,
                        packet.at,
                        format!(
                            "the IP datagram reassembled from {} fragments could not be decoded: {reason}",
                            datagram.fragments
                        ),
                        vec![
                            ("fragments", (datagram.fragments as u64).into()),
                            ("reason", reason.into()),
                        ],
                    ),
                    _ => {}
                }
            }
            Decoded::FragmentNotReassembled(reason) => diags.push(
                Kind::IpFragmentsDropped,
                None,
                packet.at,
                format!("{reason} was dropped: such fragments are not reassembled; the TCP segment it carried is lost"),
                vec![("reason", reason.into())],
            ),
            Decoded::Other => {}
            Decoded::UnsupportedLinkType => {
                if self.unsupported.insert(packet.link_type.0) {
                    diags.push(
                        Kind::UnsupportedLinkType,
                        None,
                        packet.at,
                        format!(
                            "link type {} is not supported; its packets are skipped",
                            capture::link_type_name(packet.link_type)
                        ),
                        vec![
                            ("link_type", capture::link_type_name(packet.link_type).into()),
                            ("link_type_number", packet.link_type.0.into()),
                        ],
                    );
                }
            }
            Decoded::Malformed(reason) => diags.push(
                Kind::PacketMalformed,
                None,
                packet.at,
                format!("packet could not be decoded: {reason}"),
                vec![("reason", reason.into())],
            ),
        }
    }
}

/// Reads every capture, merged by time, through the [`Stages`]; exchanges go to
/// `batcher` as they complete.
fn read_all(
    config: &Config,
    mut readers: Option<Vec<(String, Box<dyn Blocks>)>>,
    batcher: &mut Batcher,
    first_packet: &OnceLock<capture::Timestamp>,
) -> Result<ReadOutcome, Error> {
    let mut diags = Diagnostics::default();
    let mut stages = Stages::new(config);
    let mut last = PacketRef::default();
    let stop = batcher.stop_flag();
    let inputs = match &readers {
        Some(given) => given.iter().map(|(name, _)| (name.clone(), None)).collect(),
        None => first_times(&config.inputs),
    };
    let open = |idx: usize, path: &str| -> Result<Box<dyn Blocks>, Error> {
        let given = readers
            .as_mut()
            .and_then(|given| given.get_mut(idx))
            .map(|(_, r)| std::mem::replace(r, Box::new(ReadBlocks::new(std::io::empty()))));
        match given {
            Some(r) => Ok(r),
            None => open(path, config.bytes_read.as_ref(), Arc::clone(&stop)),
        }
    };
    let mut merge = merge::Merge::new(inputs, config.max_record, Box::new(open), &mut diags)?;
    while let Some(packet) = merge.next(&mut diags)? {
        if stop.load(Ordering::Relaxed) {
            break; // the output failed: nothing more will be written
        }
        if last == PacketRef::default() {
            // for --since/--until in seconds after the first packet
            let _ = first_packet.set(packet.at.timestamp);
        }
        last = packet.at;
        stages.packet(&packet, batcher, &mut diags);
    }
    let next_frame = merge.frames() + 1;
    let mut captures = merge.finish();
    for (capture, copies) in captures.iter_mut().zip(stages.copies.found()) {
        capture.duplicate_packets = *copies;
    }
    merge::note_overlaps(&captures, &mut diags);
    let Stages {
        tracker,
        mut dissector,
        mut pairing,
        mut defragmenter,
        mut watch,
        ..
    } = stages;
    defragmenter.finish(&mut diags);
    let tcp_connections = tracker.connections();
    // Each connection's last requests go on before the next ends: thousands at once
    // would be a burst no budget charges.
    tracker.finish(last, &mut dissector, &mut diags, |dissector| {
        drain(dissector, &mut pairing, batcher, watch.as_mut());
    });
    let held = watch.map(|w| w.sentence(next_frame.saturating_sub(1), dissector.watched()));
    Ok((diags, captures, tcp_connections, dissector, pairing, held))
}
