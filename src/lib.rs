//! pidshark: Kafka AllocateProducerIds (API key 67) exchanges from packet captures.
//!
//! The pipeline, one module per stage, data flowing one way:
//!
//! ```text
//! capture   pcap/pcapng records            -> Packet (frame number, time, link type, bytes)
//! decode    link layer, IPv4/IPv6, TCP      -> TcpSegmentView (borrowed)
//! tcp       connections, reassembly         -> ordered bytes per direction, gaps, FINs
//! kafka     framing, headers, API 67 decode -> request and response frames
//! pairing   correlation ids per connection  -> exchanges, per-API counts
//! report    ordering, statistics            -> the JSON report of report-v1.md
//! ```
//!
//! [`run`] drives it for a [`Config`]; findings about the input become diagnostics in the
//! report, and only a file that cannot be read as a capture at all is an [`Error`].

pub mod analysis;
pub mod capture;
pub mod cli;
pub mod decode;
pub mod diag;
pub mod error;
pub mod expect;
pub mod gate;
pub mod kafka;
pub mod pairing;
pub mod report;
pub mod tcp;

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use flate2::read::MultiGzDecoder;

pub use cli::Config;
pub use error::Error;

use capture::PacketRef;
use decode::Decoded;
use diag::{Diagnostics, Kind};
use kafka::{Dissector, KafkaConn};
use tcp::Tracker;

/// Out-of-order bytes held per direction before a hole is declared lost.
pub const DEFAULT_MAX_HELD_LEN: usize = 4 << 20;

/// gzip's magic bytes (RFC 1952): a compressed capture is recognised by content, not name.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

fn open(path: &str) -> Result<Box<dyn Read + Send>, Error> {
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
    let mut buffered = BufReader::with_capacity(64 * 1024, raw);
    let head = buffered.fill_buf().map_err(|source| Error::Read {
        path: path.to_owned(),
        source,
    })?;
    if head.starts_with(&GZIP_MAGIC) {
        Ok(Box::new(MultiGzDecoder::new(buffered)))
    } else {
        Ok(Box::new(buffered))
    }
}

/// Reads every capture of `config` as one and returns the report.
pub fn run(config: &Config) -> Result<report::model::Report, Error> {
    let mut diags = Diagnostics::default();
    let mut tracker: Tracker<KafkaConn> = Tracker::new(config.max_held_len);
    let mut dissector = Dissector::new(config.kafka.clone());
    let mut next_frame = 1u64;
    let mut last = PacketRef::default();
    let mut unsupported = BTreeSet::new();
    let mut captures = Vec::new();
    for path in &config.inputs {
        let input = open(path)?;
        let info =
            capture::read_capture(input, path, &mut next_frame, &mut diags, |packet, diags| {
                last = packet.at;
                match decode::decode(packet) {
                    Decoded::Tcp(segment) => {
                        tracker.segment(&segment, packet.at, &mut dissector, diags)
                    }
                    Decoded::Other => {}
                    Decoded::UnsupportedLinkType => {
                        if unsupported.insert(packet.link_type.0) {
                            diags.push(
                                Kind::UnsupportedLinkType,
                                None,
                                Some(packet.at.frame),
                                format!(
                                    "link type {} is not supported; its packets are skipped",
                                    capture::link_type_name(packet.link_type)
                                ),
                            );
                        }
                    }
                    Decoded::Malformed(reason) => diags.push(
                        Kind::PacketMalformed,
                        None,
                        Some(packet.at.frame),
                        format!("packet could not be decoded: {reason}"),
                    ),
                }
            })?;
        captures.push(info);
    }
    let tcp_connections = tracker.connections();
    tracker.finish(last, &mut dissector, &mut diags);
    dissector.pairing.sort_exchanges();
    let analysis = analysis::analyse(&dissector.pairing.exchanges, config.slow, &mut diags);
    Ok(report::build(report::Findings {
        captures,
        analysis,
        tcp_connections,
        kafka_connections: dissector.kafka_connections,
        pairing: dissector.pairing,
        diagnostics: diags,
    }))
}
