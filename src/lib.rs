//! pidshark: Kafka AllocateProducerIds (API key 67) exchanges from packet captures.
//!
//! The modules in stage order, data flowing down; below them the drivers that run the
//! stages, and at the bottom the leaves every module may use:
//!
//! ```text
//! input        a file or stdin, gzip inflated      -> bytes in blocks, read ahead on a thread
//! capture      pcap/pcapng records                 -> Packet (frame number, time, link type, bytes)
//! merge        several captures, by time           -> one run of Packets, numbered as mergecap's
//! decode       link layer, IPv4/IPv6, TCP          -> TcpSegmentView (borrowed), or an IP fragment
//! copies       a segment that two files both hold  -> read once, counted
//! defrag       IP fragments of TCP datagrams       -> reassembled payloads, decoded again
//! tcp          connections, reassembly             -> ordered bytes per direction, gaps, FINs
//! kafka        framing, headers, API 67 decode     -> messages: request and response frames
//! pairing      messages, by correlation id         -> exchanges, per-API counts
//! metadata_log a controller's __cluster_metadata log -> committed blocks, registrations
//! frame_watch  --frame's packet, as it goes through the stages above -> what it held
//! analysis     blocks of ids, brokers, latency     -> findings
//! report       ordering, statistics, a sink per format -> the report in each format
//! gate         --fail-on conditions                -> those the report meets
//! expect       --expect: the report and a golden   -> their differences
//! ----------------------------------------------------------------------------- drivers
//! config       what a run reads, and its limits    -> Config
//! worker       the output thread: exchanges through the analysis to the sink
//! connections  a thread's connections: reassembly, Kafka and pairing, segment by segment
//! shard        --threads: connections spread over workers, put back in packet order
//! pipeline     the capture thread: a packet at a time, from decode to the connections' work
//! (lib.rs)     run: input and merge into the pipeline, beside the worker; then the report
//! cli          the command line as clap types it   -> Config and the output's options
//! ------------------------------------------------------------------------------ leaves
//! names        closed sets of names, each declared once with its schema
//! timestamp    capture time, and the form the report writes it in
//! packet_ref   where a packet sits: frame number, time, file of origin
//! diag         diagnostics: findings about the input, for the report
//! latency      latency samples and their statistics, for the analysis and the report
//! error        fatal errors: no report can be made
//! heap         what an allocation costs, for the memory budget's charges
//! resident     the process's resident memory, for the memory budget
//! ```
//!
//! The rule that keeps the arrows pointing one way: a module imports only from modules
//! above it in this list and from the leaves, and a leaf only from other leaves. A stage
//! that needs something from further down is handed it as a parameter.
//!
//! [`run`] drives them for a [`Config`]; findings about the input become diagnostics in the
//! report, and only a file that cannot be read as a capture at all is an [`Error`].

// No input may make us panic: no indexing, unwrap, expect or panic in library code
// (tests may); arithmetic on input values is checked or saturating where it could
// overflow (see README "Hostile input").
#![forbid(unsafe_code)]
// The crate's docs are read with its private items (`cargo doc --document-private-items`),
// where links to them resolve.
#![allow(rustdoc::private_intra_doc_links)]
// issue 41: no function in src/ over 120 lines (clippy.toml sets the bound)
#![warn(clippy::too_many_lines)]
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
pub mod config;
pub mod connections;
pub mod copies;
pub mod decode;
pub mod defrag;
pub mod diag;
pub mod error;
pub mod expect;
pub mod frame_watch;
pub mod gate;
pub mod heap;
pub mod input;
pub mod kafka;
pub mod latency;
pub mod merge;
pub mod metadata_log;
mod names;
pub mod packet_ref;
pub mod pairing;
pub mod pipeline;
pub mod report;
pub mod resident;
pub mod shard;
pub mod tcp;
pub mod timestamp;
pub mod worker;

use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub use config::{Config, DEFAULT_MAX_HELD_LEN};
pub use error::Error;
pub use input::MAX_GZIP_RATIO;

use analysis::Analyzer;
use diag::Diagnostics;
use input::{Blocks, ReadBlocks};
use pipeline::{Finished, Pipeline};
use report::sink::Sink;

/// Reads every capture of `config` as one, handing each exchange to `sink` as it is
/// analysed and the rest of the report once the captures are read; returns that report
/// (with its exchanges when the sink puts them in, as [`report::sink::Collect`] does).
pub fn run(config: &Config, sink: &mut dyn Sink) -> Result<report::model::Report, Error> {
    process(config, sink, Source::Files { bytes_read: None })
}

/// [`run`], counting into `bytes_read` the capture bytes read, for a progress display.
pub fn run_counting(
    config: &Config,
    sink: &mut dyn Sink,
    bytes_read: &Arc<AtomicU64>,
) -> Result<report::model::Report, Error> {
    let bytes_read = Some(bytes_read);
    process(config, sink, Source::Files { bytes_read })
}

/// Where the captures come from.
enum Source<'a> {
    /// `config.inputs`, counting the bytes read when asked.
    Files {
        bytes_read: Option<&'a Arc<AtomicU64>>,
    },
    /// Readers given by the caller, by name.
    Readers(Vec<(String, Box<dyn Blocks>)>),
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
            let blocks = input::on_this_thread(&name, r)?;
            Ok((name, blocks))
        })
        .collect::<Result<Vec<_>, Error>>()?;
    process(config, sink, Source::Readers(readers))
}

/// The whole report, every exchange in it: [`run`] with a [`report::sink::Collect`].
pub fn report(config: &Config) -> Result<report::model::Report, Error> {
    run(config, &mut report::sink::Collect::default())
}

/// Reads the captures on this thread while a second one analyses the exchanges and hands
/// them to `sink` (see [`worker`]), then builds the rest of the report and finishes the
/// sink with it.
fn process(
    config: &Config,
    sink: &mut dyn Sink,
    source: Source<'_>,
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
    // what the sink asks of the decoder, asked for here, not by the command line
    let mut kafka = config.kafka.clone();
    kafka.keep_raw = kafka.keep_raw.max(needs.raw_messages);
    let config = &Config {
        kafka,
        ..config.clone()
    };
    let mut analyzer = Analyzer::new(
        config.slow,
        needs.blocks_in_report,
        config.max_recent_blocks,
    )
    .with_clock_skew(config.clock_skew_ns)
    .with_share_of(config.max_memory);
    // The controllers' log is small beside a capture: read whole first, then compared
    // with each exchange as it completes.
    let metadata_log = match config.metadata_logs.is_empty() {
        true => None,
        false => Some(metadata_log::read(
            &config.metadata_logs,
            metadata_log::Limits::default(),
        )?),
    };
    // a directory without one log file was not what the user meant to give
    if let Some(metadata_log::LogProblem::NoLogFiles { path }) = metadata_log
        .iter()
        .flat_map(|l| &l.problems)
        .find(|p| matches!(p, metadata_log::LogProblem::NoLogFiles { .. }))
    {
        return Err(Error::NotACapture {
            path: path.clone(),
            reason: format!(
                "not a metadata log: no .log segment or .checkpoint snapshot file in it (a controller's log is the {} folder of its data directory)",
                metadata_log::METADATA_DIR
            ),
        });
    }
    let mut log_diagnostics = Diagnostics::default();
    if let Some(log) = metadata_log {
        analysis::committed::log_problems(&log, &mut log_diagnostics);
        analyzer.compare_with(log, config.log_clock_skew_ms);
    }
    let (mut batcher, rx) = worker::channel();
    let stop = batcher.stop_flag();
    // the capture files that can be read again, as the merge opens them
    let reread = Arc::new(input::Reread::default());
    let recall: Arc<dyn packet_ref::Recall> = reread.clone();
    let (outcome, read) = std::thread::scope(|scope| {
        let analysis = std::thread::Builder::new()
            .name("pidshark-output".into())
            .spawn_scoped(scope, || worker::consume(rx, analyzer, &mut *sink))
            .map_err(|source| Error::Thread { source })?;
        // --frame follows its packet through every stage, on one thread
        let read = if config.threads > 1 && config.filter.frame.is_none() {
            shard::Dispatch::start(scope, config, config.threads, batcher, &recall).and_then(|d| {
                let pipeline = Pipeline::with_workers(config, d);
                read_all(config, source, pipeline, (&stop, reread), &first_packet)
            })
        } else {
            let pipeline = Pipeline::new(config, &mut batcher, recall);
            let read = read_all(config, source, pipeline, (&stop, reread), &first_packet);
            batcher.finish();
            read
        };
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
    let Finished {
        mut diagnostics,
        captures,
        connections,
        frame_holds: held,
    } = read?;
    let connections::Closed {
        tcp_connections,
        forgotten_connections,
        kafka_connections,
        not_kafka_connections,
        encrypted_connections,
        pairing,
    } = connections;
    if let Some(sentence) = held {
        let _ = frame_holds.set(sentence);
    }
    diagnostics.absorb(log_diagnostics);
    let mut analyzer = outcome.analyzer;
    let first = captures.iter().filter_map(|c| c.first_timestamp).min();
    let last = captures.iter().filter_map(|c| c.last_timestamp).max();
    if let (Some(first), Some(last)) = (first, last) {
        analyzer.capture_span(first, last);
    }
    let analysis = analyzer.finish(&mut diagnostics);
    let mut report = report::build(report::Findings {
        captures,
        analysis,
        tcp_connections,
        forgotten_connections,
        kafka_connections,
        not_kafka_connections,
        encrypted_connections,
        pairing,
        diagnostics,
        budget: analysis::verdict::Budget {
            max_memory: config.max_memory as u64,
            max_connections: config.max_connections as u64,
            forgotten_connections,
        },
    });
    sink.finish(&mut report)
        .map_err(|source| Error::Output { source })?;
    Ok(report)
}

/// Reads every capture, merged by time, through the [`Pipeline`]; exchanges go to
/// `batcher` as they complete.
fn read_all(
    config: &Config,
    source: Source<'_>,
    mut pipeline: Pipeline<'_>,
    (stop, reread): (&Arc<AtomicBool>, Arc<input::Reread>),
    first_packet: &OnceLock<timestamp::Timestamp>,
) -> Result<Finished, Error> {
    // with workers, each part of the work collects its own, put in order at the end
    let mut diags = match config.threads > 1 && config.filter.frame.is_none() {
        true => Diagnostics::placed_part(),
        false => Diagnostics::default(),
    };
    let (mut readers, bytes_read) = match source {
        Source::Files { bytes_read } => (None, bytes_read.cloned()),
        Source::Readers(readers) => (Some(readers), None),
    };
    let inputs = match &readers {
        Some(given) => given.iter().map(|(name, _)| (name.clone(), None)).collect(),
        None => merge::first_times(&config.inputs),
    };
    let open = |idx: usize, path: &str| -> Result<Box<dyn Blocks>, Error> {
        let given = readers
            .as_mut()
            .and_then(|given| given.get_mut(idx))
            .map(|(_, r)| std::mem::replace(r, Box::new(ReadBlocks::new(std::io::empty()))));
        match given {
            Some(r) => Ok(r),
            None => input::open(path, bytes_read.as_ref(), Arc::clone(stop)),
        }
    };
    let open = Box::new(open);
    let mut merge = merge::Merge::new(inputs, config.max_record, open, reread, &mut diags)?;
    let mut first = true;
    loop {
        pipeline.place_next(&mut diags);
        let Some(packet) = merge.next(&mut diags)? else {
            break;
        };
        if stop.load(Ordering::Relaxed) {
            break; // the output failed: nothing more will be written
        }
        if first {
            // for --since/--until in seconds after the first packet
            let _ = first_packet.set(packet.at.timestamp);
            first = false;
        }
        pipeline.packet(&packet, &mut diags);
    }
    let frames = merge.frames();
    let captures = merge.finish();
    merge::note_overlaps(&captures, &mut diags);
    Ok(pipeline.finish(captures, frames, diags))
}
