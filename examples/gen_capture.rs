//! Writes a synthetic, deterministic classic pcap of protocol-correct Kafka traffic, with the
//! ground truth of the AllocateProducerIds exchanges in it, for benchmarks and tests.
//!
//! ```sh
//! cargo run --release --example gen_capture -- --shape bulk --size 1G -o bulk.pcap
//! cargo run --release --example gen_capture -- --shape control --packets 2000000 \
//!     -o control.pcap --truth control.truth.json
//! ```
//!
//! Every TCP connection (IPv4, client 10.x.y.z on an ephemeral port, server on port 9093) has
//! its handshake, data in segments of at most 1448 bytes with the sequence and acknowledgment
//! numbers a real stack would use (the receiver of a multi-segment message acknowledges every
//! second segment), and a FIN from each side. Every connection starts with ApiVersions v3, then
//! carries one kind of traffic, one request at a time, each answered 100-2000 µs later:
//!
//! - `bulk` (about `--size` bytes, default 1G): producers sending Produce v9 requests with a
//!   record batch of 64 KiB to 1 MiB, consumers receiving Fetch v12 responses of the same sizes
//!   (a few hundred connections at 1G), and brokers asking the controller for producer ids with
//!   AllocateProducerIds v0 a few dozen times (two of the answers are NOT_CONTROLLER);
//! - `control` (about `--packets` packets, default 2,000,000): tens of thousands of short
//!   connections (0.4 s to 8 s) opening and closing throughout the capture, carrying
//!   AllocateProducerIds v0 (brokers to the controller; about 0.2% of the answers are
//!   NOT_CONTROLLER) or Heartbeat v4 (consumers to their group coordinator); `--brokers`
//!   brokers (default 16) ask.
//!
//! Successful AllocateProducerIds responses grant contiguous blocks of 1000 ids, in the order the
//! responses are sent. The same options always give the same bytes. Record batches carry their
//! CRC-32C; IPv4 and TCP checksums are filled in.
//!
//! `--truth FILE` writes the ground truth: `exchanges` (AllocateProducerIds, in the order the
//! requests were sent), `packets`, `connections`, `sequence_wraps` (connections whose sequence
//! numbers pass 2^32: one initial sequence number in eight is chosen just below it) and
//! `api_frames` (request and response frames per API, named as pidshark's `summary.api_keys`
//! names them).

use std::cmp::{max, min, Reverse};
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};
use serde::Serialize;

/// Largest TCP payload in one segment (an Ethernet MTU less IPv4, TCP and timestamp options).
const MSS: usize = 1448;
/// The port every broker and the controller listen on.
const KAFKA_PORT: u16 = 9093;
/// The capture starts at 2026-11-29T12:00:00Z.
const EPOCH_US: u64 = 1_795_953_600 * 1_000_000;
/// Ids granted by one successful AllocateProducerIds response.
const BLOCK_LEN: i32 = 1000;
/// Bytes of filler from which record values are cut (a power of two).
const FILLER_LEN: usize = 1 << 16;
/// Average pcap bytes per packet of the control shape, to turn `--size` into packets.
const CONTROL_BYTES_PER_PACKET: u64 = 112;
/// Microseconds of capture planned per packet (packets are 10-50 µs apart when busy).
const US_PER_PACKET: u64 = 40;
/// A control connection lasts 0.5% to 10% of this (0.4 s to 8 s), however long the
/// capture: a longer capture has more connections, not longer ones, so that as many are
/// open at once, as on a real listener.
const CONTROL_SPAN_SCALE_US: u64 = 2_000_000 * US_PER_PACKET;
/// A bulk connection lasts 5% to 30% of this (the length of a 1 GiB capture), however
/// long the capture, for the same reason.
const BULK_SPAN_SCALE_US: u64 = ((1 << 30) / MSS as u64 * 3 / 2) * US_PER_PACKET;
/// Brokers asking the controller for producer ids in the control shape.
const CONTROL_BROKERS: usize = 16;

const C2S: usize = 0;
const S2C: usize = 1;

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// MSS 1460, NOP, window scale 7.
const SYN_OPTIONS: [u8; 8] = [2, 4, 0x05, 0xb4, 1, 3, 3, 7];

#[derive(Parser)]
#[command(about = "Writes a deterministic pcap of Kafka traffic and its ground truth")]
struct Args {
    /// The kind of traffic.
    #[arg(long, value_enum, default_value_t = Shape::Bulk)]
    shape: Shape,
    /// Approximate size of the capture (K, M, G are powers of 1024); bulk: default 1G;
    /// control: turned into packets when --packets is not given.
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Approximate number of packets (control only; default 2000000).
    #[arg(long)]
    packets: Option<u64>,
    /// Brokers asking the controller for producer ids (control only; default 16, at most
    /// 60000): a big cluster, for the pages and tables that must stay bounded.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=60000))]
    brokers: Option<u16>,
    /// How long control connections last, as a multiple of the default's 0.4 s to 8 s
    /// (control only): as many packets and exchanges, with more connections open at once
    /// (about 2,200 at 1 on 2 M packets, 260 at 0.1, 21,000 at 10). The work per packet is
    /// about the same; the state the packets touch is not.
    #[arg(long, value_parser = parse_span_scale)]
    span_scale: Option<f64>,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The pcap to write.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Where to write the ground truth (JSON).
    #[arg(long)]
    truth: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Shape {
    Bulk,
    Control,
}

fn parse_span_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(scale) if (0.001..=1000.0).contains(&scale) => Ok(scale),
        _ => Err(format!("{text}: a factor from 0.001 to 1000")),
    }
}

fn parse_size(text: &str) -> Result<u64, String> {
    let lower = text.trim().to_ascii_lowercase();
    let lower = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, unit) = match lower.char_indices().last() {
        Some((i, 'k')) => (&lower[..i], 1u64 << 10),
        Some((i, 'm')) => (&lower[..i], 1 << 20),
        Some((i, 'g')) => (&lower[..i], 1 << 30),
        _ => (lower, 1),
    };
    let n: u64 = digits.parse().map_err(|_| {
        format!("{text:?} is not a size (a number, optionally followed by K, M or G)")
    })?;
    n.checked_mul(unit)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text:?} is out of range"))
}

// ---------------------------------------------------------------------------------------------
// Randomness

/// xoshiro256**, seeded through splitmix64: fast, and the same everywhere.
struct Rng([u64; 4]);

impl Rng {
    fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Self([next(), next(), next(), next()])
    }

    fn next(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

// ---------------------------------------------------------------------------------------------
// Checksums

/// CRC-32C (Castagnoli), as Kafka record batches carry it; slice-by-8.
struct Crc32c {
    table: Vec<[u32; 256]>,
}

impl Crc32c {
    fn new() -> Self {
        let mut table = vec![[0u32; 256]; 8];
        for i in 0..256u32 {
            let mut c = i;
            for _ in 0..8 {
                c = if c & 1 == 1 {
                    (c >> 1) ^ 0x82f6_3b78
                } else {
                    c >> 1
                };
            }
            table[0][i as usize] = c;
        }
        for k in 1..8 {
            for i in 0..256 {
                let prev = table[k - 1][i];
                table[k][i] = (prev >> 8) ^ table[0][(prev & 0xff) as usize];
            }
        }
        let crc = Self { table };
        assert_eq!(
            !crc.update(!0, b"123456789"),
            0xe306_9283,
            "CRC-32C check value"
        );
        crc
    }

    /// Runs the (inverted) register `crc` over `data`.
    fn update(&self, mut crc: u32, data: &[u8]) -> u32 {
        let t = &self.table;
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let lo = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ crc;
            let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
            crc = t[7][(lo & 0xff) as usize]
                ^ t[6][((lo >> 8) & 0xff) as usize]
                ^ t[5][((lo >> 16) & 0xff) as usize]
                ^ t[4][(lo >> 24) as usize]
                ^ t[3][(hi & 0xff) as usize]
                ^ t[2][((hi >> 8) & 0xff) as usize]
                ^ t[1][((hi >> 16) & 0xff) as usize]
                ^ t[0][(hi >> 24) as usize];
        }
        for &b in chunks.remainder() {
            crc = t[0][((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
        }
        crc
    }
}

/// The ones'-complement sum of `data` as big-endian 16-bit words (RFC 1071), unfolded.
fn ones_sum(data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(4);
    let mut sum = 0u64;
    for c in &mut chunks {
        sum += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    let mut last = [0u8; 4];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    sum + u64::from(u32::from_be_bytes(last))
}

fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

// ---------------------------------------------------------------------------------------------
// Kafka messages

/// A Kafka API (request and response) this generator speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rpc {
    Produce,
    Fetch,
    Heartbeat,
    ApiVersions,
    AllocateProducerIds,
}

impl Rpc {
    const ALL: [Self; 5] = [
        Self::Produce,
        Self::Fetch,
        Self::Heartbeat,
        Self::ApiVersions,
        Self::AllocateProducerIds,
    ];

    fn key(self) -> i16 {
        match self {
            Self::Produce => 0,
            Self::Fetch => 1,
            Self::Heartbeat => 12,
            Self::ApiVersions => 18,
            Self::AllocateProducerIds => 67,
        }
    }

    /// As pidshark's `summary.api_keys` (and Kafka) names it.
    fn name(self) -> &'static str {
        match self {
            Self::Produce => "Produce",
            Self::Fetch => "Fetch",
            Self::Heartbeat => "Heartbeat",
            Self::ApiVersions => "ApiVersions",
            Self::AllocateProducerIds => "AllocateProducerIds",
        }
    }

    /// The version this generator speaks.
    fn version(self) -> i16 {
        match self {
            Self::Produce => 9,
            Self::Fetch => 12,
            Self::Heartbeat => 4,
            Self::ApiVersions => 3,
            Self::AllocateProducerIds => 0,
        }
    }

    /// The first version with compact types, tagged fields and the flexible headers.
    fn first_flexible_version(self) -> i16 {
        match self {
            Self::Produce => 9,
            Self::Fetch => 12,
            Self::Heartbeat => 4,
            Self::ApiVersions => 3,
            Self::AllocateProducerIds => 0,
        }
    }

    fn flexible(self) -> bool {
        self.version() >= self.first_flexible_version()
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|&a| a == self).unwrap_or(0)
    }
}

/// A message as it goes on the wire: `head`, then `fill` bytes of the filler starting at
/// `fill_at`, then `tail`. Only the small parts are held in memory.
struct Message {
    head: Vec<u8>,
    fill: u64,
    fill_at: usize,
    tail: Vec<u8>,
}

impl Message {
    fn len(&self) -> u64 {
        self.head.len() as u64 + self.fill + self.tail.len() as u64
    }

    /// Appends `n` bytes of the message from offset `from` to `out`.
    fn copy_to(&self, mut from: u64, mut n: usize, filler: &[u8], out: &mut Vec<u8>) {
        let head_end = self.head.len() as u64;
        if n > 0 && from < head_end {
            let at = from as usize;
            let take = min(n, self.head.len() - at);
            out.extend_from_slice(&self.head[at..at + take]);
            from += take as u64;
            n -= take;
        }
        let fill_end = head_end + self.fill;
        while n > 0 && from < fill_end {
            let at = (self.fill_at + (from - head_end) as usize) & (FILLER_LEN - 1);
            let take = min(n as u64, fill_end - from).min((FILLER_LEN - at) as u64) as usize;
            out.extend_from_slice(&filler[at..at + take]);
            from += take as u64;
            n -= take;
        }
        if n > 0 {
            let at = (from - fill_end) as usize;
            out.extend_from_slice(&self.tail[at..at + n]);
        }
    }
}

/// A big-endian Kafka encoder.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    /// Size placeholder and request header (v2 for flexible versions, else v1).
    fn request(api: Rpc, correlation_id: i32, client_id: Option<&str>) -> Self {
        let mut e = Self(vec![0; 4]);
        e.i16(api.key());
        e.i16(api.version());
        e.i32(correlation_id);
        e.string(client_id);
        if api.flexible() {
            e.tags();
        }
        e
    }

    /// Size placeholder and response header (v1 for flexible versions, else v0; ApiVersions
    /// responses always have v0 so that any client can read them).
    fn response(api: Rpc, correlation_id: i32) -> Self {
        let mut e = Self(vec![0; 4]);
        e.i32(correlation_id);
        if api.flexible() && api != Rpc::ApiVersions {
            e.tags();
        }
        e
    }

    fn i8(&mut self, v: i8) {
        self.0.extend(v.to_be_bytes());
    }
    fn i16(&mut self, v: i16) {
        self.0.extend(v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend(v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend(v.to_be_bytes());
    }
    fn uvarint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }
    fn varint(&mut self, v: i64) {
        self.uvarint(((v << 1) ^ (v >> 63)) as u64);
    }
    /// STRING / NULLABLE_STRING (int16 length).
    fn string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.i16(s.len() as i16);
                self.0.extend(s.as_bytes());
            }
            None => self.i16(-1),
        }
    }
    /// COMPACT_STRING / COMPACT_NULLABLE_STRING.
    fn compact_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.uvarint(s.len() as u64 + 1);
                self.0.extend(s.as_bytes());
            }
            None => self.uvarint(0),
        }
    }
    /// The length of a COMPACT_ARRAY.
    fn compact_len(&mut self, n: usize) {
        self.uvarint(n as u64 + 1);
    }
    /// An empty tagged-field section.
    fn tags(&mut self) {
        self.uvarint(0);
    }

    /// The message: the size prefix patched to cover `fill` filler bytes and `tail`.
    fn finish(mut self, fill: u64, fill_at: usize, tail: Vec<u8>) -> Message {
        let size = self.0.len() as u64 - 4 + fill + tail.len() as u64;
        let size = i32::try_from(size).expect("message fits Kafka's int32 size");
        self.0[..4].copy_from_slice(&size.to_be_bytes());
        Message {
            head: self.0,
            fill,
            fill_at,
            tail,
        }
    }
}

fn uvarint_len(mut v: u64) -> u64 {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn varint_len(v: i64) -> u64 {
    uvarint_len(((v << 1) ^ (v >> 63)) as u64)
}

/// One record batch (magic 2, uncompressed) holding one record whose value is `value_len`
/// bytes of filler from `fill_at`, as a COMPACT_RECORDS field: the part before the value is
/// appended to `e`; returns the tail (the record's header count), to which the caller appends
/// what follows the records field.
fn record_batch(
    e: &mut Enc,
    g: &Gen,
    base_offset: i64,
    ts_ms: i64,
    value_len: u64,
    fill_at: usize,
) -> Vec<u8> {
    let value = i64::try_from(value_len).expect("value length");
    // attributes, timestamp delta, offset delta, key length -1, value length, value, headers.
    let record_len = 4 + varint_len(value) + value_len + 1;
    let batch_len = 61 + varint_len(record_len as i64) + record_len;
    e.uvarint(batch_len + 1);
    e.i64(base_offset);
    e.i32((batch_len - 12) as i32);
    e.i32(0); // partition leader epoch
    e.i8(2); // magic
    let crc_at = e.0.len();
    e.i32(0); // crc, patched below
    let attributes_at = e.0.len();
    e.i16(0); // attributes: no compression, create time, not transactional
    e.i32(0); // last offset delta
    e.i64(ts_ms); // base timestamp
    e.i64(ts_ms); // max timestamp
    e.i64(-1); // producer id
    e.i16(-1); // producer epoch
    e.i32(-1); // base sequence
    e.i32(1); // records
    e.varint(record_len as i64);
    e.i8(0); // attributes
    e.varint(0); // timestamp delta
    e.varint(0); // offset delta
    e.varint(-1); // null key
    e.varint(value);
    let tail = vec![0]; // no headers
    let mut crc = g.crc.update(!0, &e.0[attributes_at..]);
    let mut at = fill_at;
    let mut left = value_len;
    while left > 0 {
        let take = min(left, (FILLER_LEN - at) as u64) as usize;
        crc = g.crc.update(crc, &g.filler[at..at + take]);
        left -= take as u64;
        at = (at + take) & (FILLER_LEN - 1);
    }
    let crc = !g.crc.update(crc, &tail);
    e.0[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    tail
}

/// Bytes of a Produce request or Fetch response around a record value (an estimate for
/// planning sizes).
const BULK_MESSAGE_OVERHEAD: u64 = 160;

// ---------------------------------------------------------------------------------------------
// Planning

#[derive(Clone, Copy)]
struct Endpoint {
    ip: [u8; 4],
    port: u16,
}

impl Endpoint {
    fn text(self) -> String {
        let [a, b, c, d] = self.ip;
        format!("{a}.{b}.{c}.{d}:{}", self.port)
    }
}

/// The client side of a connection and what it does.
enum Role {
    /// A broker asking the controller for producer ids.
    Broker { broker_id: i32, broker_epoch: i64 },
    /// Sends Produce requests with record values of these sizes.
    Producer {
        sizes: Vec<u32>,
        topic: String,
        partition: i32,
    },
    /// Receives Fetch responses with record values of these sizes.
    Consumer {
        sizes: Vec<u32>,
        topic: String,
        partition: i32,
    },
    /// A consumer group member heartbeating to its coordinator.
    Member {
        group: String,
        member: String,
        generation: i32,
    },
}

/// A connection to be opened.
struct Spec {
    start: u64,
    span: u64,
    /// Requests after ApiVersions.
    requests: u32,
    role: Role,
    client_id: String,
    client: Endpoint,
    server: Endpoint,
}

/// Ephemeral ports of client hosts, handed out as Linux does (upwards from a random start).
struct Hosts {
    next_port: Vec<u16>,
    prefix: [u8; 2],
}

impl Hosts {
    fn new(rng: &mut Rng, prefix: [u8; 2], count: usize) -> Self {
        let next_port = (0..count).map(|_| rng.range(32768, 40000) as u16).collect();
        Self { next_port, prefix }
    }

    fn ip(&self, host: usize) -> [u8; 4] {
        [
            self.prefix[0],
            self.prefix[1],
            (host / 250) as u8,
            (host % 250 + 1) as u8,
        ]
    }

    fn connect(&mut self, rng: &mut Rng, host: usize) -> Endpoint {
        let port = self.next_port[host];
        let next = u32::from(port) + rng.range(1, 2) as u32;
        assert!(next < 61000, "ephemeral ports of a host used up");
        self.next_port[host] = next as u16;
        Endpoint {
            ip: self.ip(host),
            port,
        }
    }
}

fn broker_ip(broker: usize) -> [u8; 4] {
    [10, 0, (broker / 250) as u8, (broker % 250 + 1) as u8]
}

const CONTROLLER_IP: [u8; 4] = [10, 255, 0, 1];

fn server(ip: [u8; 4]) -> Endpoint {
    Endpoint {
        ip,
        port: KAFKA_PORT,
    }
}

/// Estimated pcap bytes of one bulk message with a record value of `value` bytes, its
/// acknowledgments and its small answer.
fn bulk_message_bytes(value: u64) -> u64 {
    let len = value + BULK_MESSAGE_OVERHEAD;
    let segments = len.div_ceil(MSS as u64);
    len + (segments + segments / 2 + 1) * 70 + 100
}

/// The connections of the bulk shape, by start time, and the responses that say NOT_CONTROLLER.
fn plan_bulk(rng: &mut Rng, size: u64) -> (Vec<Spec>, Vec<u64>) {
    let duration = (size / MSS as u64 * 3 / 2).max(1000) * US_PER_PACKET;
    let brokers = rng.range(3, 5) as usize;
    let mut specs = Vec::new();
    let mut clients = Hosts::new(rng, [10, 1], 40);
    let mut planned = 24 + 512; // pcap header, controller traffic
    while planned < size {
        let host = rng.below(40) as usize;
        let producer = rng.chance(0.5);
        // 2 to 12 messages, fewer when the size is reached; the last one is cut to fit.
        let mut sizes = Vec::new();
        planned += 1000;
        for _ in 0..rng.range(2, 12) {
            if planned >= size {
                break;
            }
            let left = (size - planned).saturating_sub(bulk_message_bytes(0));
            let value = rng.range(64 << 10, 1 << 20).min(left).max(64 << 10);
            planned += bulk_message_bytes(value);
            sizes.push(value as u32);
        }
        let messages = sizes.len() as u64;
        let topic = format!(
            "{}-{}",
            ["orders", "payments", "clicks", "audit"][rng.below(4) as usize],
            rng.below(8)
        );
        let partition = rng.below(12) as i32;
        let start = (rng.unit() * 0.9 * duration as f64) as u64;
        let span = ((0.05 + 0.25 * rng.unit()) * BULK_SPAN_SCALE_US as f64) as u64;
        let broker = rng.below(brokers as u64) as usize;
        let (role, client_id) = if producer {
            (
                Role::Producer {
                    sizes,
                    topic,
                    partition,
                },
                format!("producer-{}", host + 1),
            )
        } else {
            (
                Role::Consumer {
                    sizes,
                    topic,
                    partition,
                },
                format!("consumer-group-{}-{}", host % 4, host + 1),
            )
        };
        specs.push(Spec {
            start,
            span,
            requests: messages as u32,
            role,
            client_id,
            client: clients.connect(rng, host),
            server: server(broker_ip(broker)),
        });
    }
    // A few dozen AllocateProducerIds, over one to three connections per broker, one after
    // the other.
    let exchanges = rng.range(24, 48);
    let mut controller = Hosts::new(rng, [10, 0], brokers);
    let mut per_connection = Vec::new();
    for broker in 0..brokers {
        let connections = rng.range(1, 3);
        for k in 0..connections {
            per_connection.push((broker, k, connections));
        }
    }
    let epochs: Vec<i64> = (0..brokers).map(|_| rng.range(10, 5000) as i64).collect();
    let count = per_connection.len() as u64;
    for (i, &(broker, k, of)) in per_connection.iter().enumerate() {
        let requests = exchanges / count + u64::from((i as u64) < exchanges % count);
        let slot = duration / of;
        let start = k * slot + (rng.unit() * 0.3 * slot as f64) as u64;
        let span = ((0.3 + 0.4 * rng.unit()) * slot as f64) as u64;
        specs.push(Spec {
            start,
            span,
            requests: requests as u32,
            role: Role::Broker {
                broker_id: broker as i32 + 1,
                broker_epoch: epochs[broker],
            },
            client_id: format!("broker-{}-to-controller", broker + 1),
            client: controller.connect(rng, broker),
            server: server(CONTROLLER_IP),
        });
    }
    let first = rng.below(exchanges);
    let mut second = rng.below(exchanges - 1);
    if second >= first {
        second += 1;
    }
    specs.sort_by_key(|s| s.start);
    (specs, vec![first, second])
}

/// The connections of the control shape, by start time.
fn plan_control(rng: &mut Rng, packets: u64, brokers: usize, span_scale: f64) -> Vec<Spec> {
    let duration = packets.max(1000) * US_PER_PACKET;
    // 8 packets of handshake, ApiVersions and FINs, then 2 per exchange, 5 to 40 exchanges.
    let connections = (packets / 53).max(1);
    // A cluster does not grow with the length of the capture (CONTROL_BROKERS is the count
    // that 2M packets had when it scaled with them, keeping that file as it was).
    let members = max(50, connections * 55 / 100 / 200) as usize;
    let mut broker_hosts = Hosts::new(rng, [10, 0], brokers);
    let mut member_hosts = Hosts::new(rng, [10, 1], members);
    let epochs: Vec<i64> = (0..brokers)
        .map(|_| rng.range(10, 100_000) as i64)
        .collect();
    let mut specs = Vec::new();
    let mut planned = 0;
    while planned < packets {
        let requests = rng
            .range(5, 40)
            .min(((packets - planned).saturating_sub(8) / 2).max(1));
        planned += 8 + 2 * requests;
        let start = (rng.unit() * 0.95 * duration as f64) as u64;
        let span =
            ((0.005 + 0.095 * rng.unit()) * CONTROL_SPAN_SCALE_US as f64 * span_scale) as u64;
        let spec = if rng.chance(0.45) {
            let broker = rng.below(brokers as u64) as usize;
            Spec {
                start,
                span,
                requests: requests as u32,
                role: Role::Broker {
                    broker_id: broker as i32 + 1,
                    broker_epoch: epochs[broker],
                },
                client_id: format!("broker-{}-to-controller", broker + 1),
                client: broker_hosts.connect(rng, broker),
                server: server(CONTROLLER_IP),
            }
        } else {
            let host = rng.below(members as u64) as usize;
            let group = format!("group-{}", host % 97);
            let client_id = format!("consumer-{group}-{}", host + 1);
            let member = format!(
                "{client_id}-{:08x}-{:04x}-{:04x}",
                rng.next() as u32,
                rng.next() as u16,
                rng.next() as u16
            );
            Spec {
                start,
                span,
                requests: requests as u32,
                role: Role::Member {
                    group,
                    member,
                    generation: rng.range(1, 50) as i32,
                },
                client_id,
                client: member_hosts.connect(rng, host),
                server: server(broker_ip(rng.below(brokers as u64) as usize)),
            }
        };
        specs.push(spec);
    }
    specs.sort_by_key(|s| s.start);
    specs
}

// ---------------------------------------------------------------------------------------------
// Writing

/// One AllocateProducerIds exchange, as the ground truth records it.
#[derive(Serialize)]
struct TruthExchange {
    client: String,
    server: String,
    correlation_id: i32,
    client_id: String,
    broker_id: i32,
    broker_epoch: i64,
    error_code: i16,
    producer_id_start: i64,
    producer_id_len: i32,
    #[serde(skip)]
    answered: bool,
}

#[derive(Serialize)]
struct FrameCount {
    api_key: i16,
    requests: u64,
    responses: u64,
}

/// The ground truth, streamed: exchanges are written in request order as soon as they and
/// all earlier ones are answered.
struct Truth {
    out: BufWriter<File>,
    waiting: VecDeque<TruthExchange>,
    /// Number of the first exchange in `waiting`.
    first: u64,
}

impl Truth {
    fn flush_answered(&mut self) -> io::Result<()> {
        while self.waiting.front().is_some_and(|x| x.answered) {
            let x = self.waiting.pop_front().expect("front");
            self.out.write_all(if self.first == 0 {
                b"\n    "
            } else {
                b",\n    "
            })?;
            serde_json::to_writer(&mut self.out, &x)?;
            self.first += 1;
        }
        Ok(())
    }
}

/// A TCP segment to write.
struct Segment<'a> {
    dir: usize,
    flags: u8,
    seq: u32,
    ack: u32,
    options: &'a [u8],
    payload: Option<(&'a Message, u64, usize)>,
}

impl Segment<'static> {
    /// A segment without data.
    fn bare(dir: usize, flags: u8, seq: u32, ack: u32, options: &'static [u8]) -> Self {
        Self {
            dir,
            flags,
            seq,
            ack,
            options,
            payload: None,
        }
    }
}

/// Everything shared by the connections: the output, counters, the controller's state.
struct Gen {
    out: BufWriter<File>,
    packet: Vec<u8>,
    rng: Rng,
    filler: Vec<u8>,
    crc: Crc32c,
    bytes: u64,
    packets: u64,
    last_us: u64,
    frames: [[u64; 2]; 5],
    exchanges: u64,
    wrapped_connections: u64,
    next_producer_id: i64,
    pid_responses: u64,
    not_controller_at: Vec<u64>,
    not_controller_rate: f64,
    truth: Option<Truth>,
}

impl Gen {
    fn write(&mut self, t: u64, conn: &mut Conn, seg: &Segment<'_>) -> io::Result<()> {
        let (src, dst) = if seg.dir == C2S {
            (conn.client, conn.server)
        } else {
            (conn.server, conn.client)
        };
        let len = seg.payload.map_or(0, |p| p.2);
        let tcp_len = 20 + seg.options.len() + len;
        let ip_len = 20 + tcp_len;
        let frame_len = (14 + ip_len) as u32;
        let p = &mut self.packet;
        p.clear();
        let ts = EPOCH_US + t;
        p.extend(((ts / 1_000_000) as u32).to_le_bytes());
        p.extend(((ts % 1_000_000) as u32).to_le_bytes());
        p.extend(frame_len.to_le_bytes());
        p.extend(frame_len.to_le_bytes());
        // Ethernet: locally administered MACs made from the IPs.
        p.extend([0x02, 0x00]);
        p.extend(dst.ip);
        p.extend([0x02, 0x00]);
        p.extend(src.ip);
        p.extend([0x08, 0x00]);
        // IPv4
        let ip_at = p.len();
        p.extend([0x45, 0x00]);
        p.extend((ip_len as u16).to_be_bytes());
        p.extend(conn.ip_id[seg.dir].to_be_bytes());
        conn.ip_id[seg.dir] = conn.ip_id[seg.dir].wrapping_add(1);
        p.extend([0x40, 0x00, 64, 6, 0, 0]); // DF, TTL 64, TCP, checksum
        p.extend(src.ip);
        p.extend(dst.ip);
        let ip_sum = fold(ones_sum(&p[ip_at..ip_at + 20]));
        p[ip_at + 10..ip_at + 12].copy_from_slice(&ip_sum.to_be_bytes());
        // TCP
        let tcp_at = p.len();
        p.extend(src.port.to_be_bytes());
        p.extend(dst.port.to_be_bytes());
        p.extend(seg.seq.to_be_bytes());
        p.extend(seg.ack.to_be_bytes());
        p.push((((20 + seg.options.len()) / 4) << 4) as u8);
        p.push(seg.flags);
        let window: u16 = if seg.flags & SYN != 0 { 64240 } else { 2048 };
        p.extend(window.to_be_bytes());
        p.extend([0, 0, 0, 0]); // checksum, urgent pointer
        p.extend(seg.options);
        if let Some((msg, from, n)) = seg.payload {
            msg.copy_to(from, n, &self.filler, p);
        }
        let pseudo = u64::from(u32::from_be_bytes(src.ip))
            + u64::from(u32::from_be_bytes(dst.ip))
            + 6
            + tcp_len as u64;
        let tcp_sum = fold(pseudo + ones_sum(&p[tcp_at..]));
        p[tcp_at + 16..tcp_at + 18].copy_from_slice(&tcp_sum.to_be_bytes());
        self.out.write_all(p)?;
        self.bytes += p.len() as u64;
        self.packets += 1;
        Ok(())
    }

    fn count(&mut self, api: Rpc, response: bool) {
        self.frames[api.index()][usize::from(response)] += 1;
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Syn,
    SynAck,
    HandshakeAck,
    Request,
    Send,
    PeerAck,
    Respond,
    Fin,
    PeerFin,
    LastAck,
}

/// A message being sent, segment by segment.
struct Sending {
    dir: usize,
    msg: Message,
    sent: u64,
    unacked: u32,
}

/// What the server owes.
struct Pending {
    api: Rpc,
    correlation_id: i32,
    /// Record value size of a Fetch response.
    value: u64,
    /// Number of the AllocateProducerIds exchange.
    exchange: u64,
}

/// An open connection.
struct Conn {
    spec: Spec,
    client: Endpoint,
    server: Endpoint,
    seq: [u32; 2],
    ip_id: [u16; 2],
    phase: Phase,
    next_correlation_id: i32,
    /// Requests sent after ApiVersions.
    done: u32,
    sending: Option<Sending>,
    pending: Option<Pending>,
    /// The side that sends the first FIN.
    closer: usize,
    /// Offset of the next record (Produce responses, Fetch requests).
    offset: i64,
    fetch_session: i32,
    fetch_epoch: i32,
    /// Whether a sequence number went past 2^32.
    wrapped: bool,
}

/// A random initial sequence number; one in eight is close below 2^32 (1 KiB to 4 MiB, on a
/// log scale), so that sequence numbers wrap within the connection.
fn initial_sequence(rng: &mut Rng) -> u32 {
    if rng.chance(0.125) {
        let scale = rng.range(10, 22);
        u32::MAX - rng.below(1 << scale) as u32
    } else {
        rng.next() as u32
    }
}

impl Conn {
    fn open(spec: Spec, rng: &mut Rng) -> Self {
        Self {
            client: spec.client,
            server: spec.server,
            seq: [initial_sequence(rng), initial_sequence(rng)],
            wrapped: false,
            ip_id: [rng.next() as u16, rng.next() as u16],
            phase: Phase::Syn,
            next_correlation_id: 0,
            done: 0,
            sending: None,
            pending: None,
            closer: if rng.chance(0.7) { C2S } else { S2C },
            offset: rng.range(0, 1 << 32) as i64,
            fetch_session: 0,
            fetch_epoch: 0,
            spec,
        }
    }

    /// Writes this connection's next packet at time `t`; returns when its next packet is
    /// due, or `None` once it is closed.
    fn step(&mut self, t: u64, g: &mut Gen) -> io::Result<Option<u64>> {
        let rtt = g.rng.range(30, 300);
        let (c, s) = (self.seq[C2S], self.seq[S2C]);
        match self.phase {
            Phase::Syn => {
                g.write(t, self, &Segment::bare(C2S, SYN, c, 0, &SYN_OPTIONS))?;
                self.advance(C2S, 1);
                self.phase = Phase::SynAck;
                Ok(Some(t + rtt))
            }
            Phase::SynAck => {
                g.write(t, self, &Segment::bare(S2C, SYN | ACK, s, c, &SYN_OPTIONS))?;
                self.advance(S2C, 1);
                self.phase = Phase::HandshakeAck;
                Ok(Some(t + rtt))
            }
            Phase::HandshakeAck => {
                g.write(t, self, &Segment::bare(C2S, ACK, c, s, &[]))?;
                self.phase = Phase::Request;
                Ok(Some(t + g.rng.range(20, 200)))
            }
            Phase::Request => match self.request(t, g) {
                Some(msg) => {
                    self.sending = Some(Sending {
                        dir: C2S,
                        msg,
                        sent: 0,
                        unacked: 0,
                    });
                    self.send(t, g)
                }
                None => {
                    self.phase = Phase::Fin;
                    self.step(t, g)
                }
            },
            Phase::Send => self.send(t, g),
            Phase::PeerAck => {
                let dir = self.sending.as_ref().map_or(C2S, |s| s.dir);
                let ack = Segment::bare(1 - dir, ACK, self.seq[1 - dir], self.seq[dir], &[]);
                g.write(t, self, &ack)?;
                if let Some(s) = &mut self.sending {
                    s.unacked = 0;
                }
                self.phase = Phase::Send;
                Ok(Some(t))
            }
            Phase::Respond => {
                let msg = self.response(t, g)?;
                self.sending = Some(Sending {
                    dir: S2C,
                    msg,
                    sent: 0,
                    unacked: 0,
                });
                self.send(t, g)
            }
            Phase::Fin => {
                let d = self.closer;
                let fin = Segment::bare(d, FIN | ACK, self.seq[d], self.seq[1 - d], &[]);
                g.write(t, self, &fin)?;
                self.advance(d, 1);
                self.phase = Phase::PeerFin;
                Ok(Some(t + rtt))
            }
            Phase::PeerFin => {
                let d = 1 - self.closer;
                let fin = Segment::bare(d, FIN | ACK, self.seq[d], self.seq[1 - d], &[]);
                g.write(t, self, &fin)?;
                self.advance(d, 1);
                self.phase = Phase::LastAck;
                Ok(Some(t + rtt))
            }
            Phase::LastAck => {
                let d = self.closer;
                let ack = Segment::bare(d, ACK, self.seq[d], self.seq[1 - d], &[]);
                g.write(t, self, &ack)?;
                g.wrapped_connections += u64::from(self.wrapped);
                Ok(None)
            }
        }
    }

    /// Moves the sequence number of direction `dir` past `n` bytes (or a SYN or FIN).
    fn advance(&mut self, dir: usize, n: u32) {
        let (seq, wrapped) = self.seq[dir].overflowing_add(n);
        self.seq[dir] = seq;
        self.wrapped |= wrapped;
    }

    /// The next segment of the message being sent.
    fn send(&mut self, t: u64, g: &mut Gen) -> io::Result<Option<u64>> {
        let Some(mut s) = self.sending.take() else {
            unreachable!("sending without a message")
        };
        let len = s.msg.len();
        let n = min(MSS as u64, len - s.sent) as usize;
        let last = s.sent + n as u64 == len;
        let (d, seq, ack) = (s.dir, self.seq[s.dir], self.seq[1 - s.dir]);
        let seg = Segment {
            dir: d,
            flags: if last { ACK | PSH } else { ACK },
            seq,
            ack,
            options: &[],
            payload: Some((&s.msg, s.sent, n)),
        };
        g.write(t, self, &seg)?;
        self.advance(d, n as u32);
        s.sent += n as u64;
        s.unacked += 1;
        if last {
            if d == C2S {
                self.phase = Phase::Respond;
                Ok(Some(t + g.rng.range(100, 2000)))
            } else {
                self.phase = Phase::Request;
                Ok(Some(self.next_request_time(t, g)))
            }
        } else {
            self.phase = if s.unacked == 2 {
                Phase::PeerAck
            } else {
                Phase::Send
            };
            self.sending = Some(s);
            Ok(Some(t))
        }
    }

    /// Requests are spread over the connection's span; the connection closes at its end.
    fn next_request_time(&self, t: u64, g: &mut Gen) -> u64 {
        let spec = &self.spec;
        let planned = if self.done < spec.requests {
            let at = (f64::from(self.done) + g.rng.unit()) / f64::from(spec.requests);
            spec.start + (at * spec.span as f64) as u64
        } else {
            spec.start + spec.span
        };
        max(t + g.rng.range(20, 200), planned)
    }

    fn request(&mut self, t: u64, g: &mut Gen) -> Option<Message> {
        let correlation_id = self.next_correlation_id;
        let client_id = Some(self.spec.client_id.as_str());
        let api_versions = self.pending.is_none() && correlation_id == 0;
        let api = if api_versions {
            Rpc::ApiVersions
        } else if self.done < self.spec.requests {
            match self.spec.role {
                Role::Broker { .. } => Rpc::AllocateProducerIds,
                Role::Producer { .. } => Rpc::Produce,
                Role::Consumer { .. } => Rpc::Fetch,
                Role::Member { .. } => Rpc::Heartbeat,
            }
        } else {
            return None;
        };
        let mut e = Enc::request(api, correlation_id, client_id);
        let mut value = 0;
        let exchange = g.exchanges;
        let msg = match &self.spec.role {
            _ if api_versions => {
                e.compact_string(Some("apache-kafka-java"));
                e.compact_string(Some("3.7.1"));
                e.tags();
                e.finish(0, 0, Vec::new())
            }
            Role::Broker {
                broker_id,
                broker_epoch,
            } => {
                e.i32(*broker_id);
                e.i64(*broker_epoch);
                e.tags();
                if let Some(truth) = &mut g.truth {
                    truth.waiting.push_back(TruthExchange {
                        client: self.client.text(),
                        server: self.server.text(),
                        correlation_id,
                        client_id: self.spec.client_id.clone(),
                        broker_id: *broker_id,
                        broker_epoch: *broker_epoch,
                        error_code: 0,
                        producer_id_start: 0,
                        producer_id_len: 0,
                        answered: false,
                    });
                }
                g.exchanges += 1;
                e.finish(0, 0, Vec::new())
            }
            Role::Producer {
                sizes,
                topic,
                partition,
            } => {
                e.compact_string(None); // transactional id
                e.i16(-1); // acks: all
                e.i32(30_000); // timeout ms
                e.compact_len(1);
                e.compact_string(Some(topic));
                e.compact_len(1);
                e.i32(*partition);
                let value = u64::from(sizes[self.done as usize]);
                let fill_at = g.rng.below(FILLER_LEN as u64) as usize;
                let ts_ms = ((EPOCH_US + t) / 1000) as i64;
                let mut tail = Enc(record_batch(&mut e, g, 0, ts_ms, value, fill_at));
                tail.tags(); // partition
                tail.tags(); // topic
                tail.tags(); // request
                e.finish(value, fill_at, tail.0)
            }
            Role::Consumer {
                sizes,
                topic,
                partition,
            } => {
                value = u64::from(sizes[self.done as usize]);
                e.i32(-1); // replica id: a consumer
                e.i32(500); // max wait ms
                e.i32(1); // min bytes
                e.i32(52_428_800); // max bytes
                e.i8(0); // isolation level: read uncommitted
                e.i32(self.fetch_session);
                e.i32(self.fetch_epoch);
                e.compact_len(1);
                e.compact_string(Some(topic));
                e.compact_len(1);
                e.i32(*partition);
                e.i32(0); // current leader epoch
                e.i64(self.offset); // fetch offset
                e.i32(0); // last fetched epoch
                e.i64(0); // log start offset
                e.i32(1_048_576 + 4096); // partition max bytes
                e.tags(); // partition
                e.tags(); // topic
                e.compact_len(0); // forgotten topics
                e.compact_string(Some("")); // rack id
                e.tags();
                e.finish(0, 0, Vec::new())
            }
            Role::Member {
                group,
                member,
                generation,
            } => {
                e.compact_string(Some(group));
                e.i32(*generation);
                e.compact_string(Some(member));
                e.compact_string(None); // group instance id
                e.tags();
                e.finish(0, 0, Vec::new())
            }
        };
        if !api_versions {
            self.done += 1;
        }
        g.count(api, false);
        self.pending = Some(Pending {
            api,
            correlation_id,
            value,
            exchange,
        });
        self.next_correlation_id += 1;
        Some(msg)
    }

    fn response(&mut self, t: u64, g: &mut Gen) -> io::Result<Message> {
        let Some(pending) = self.pending.as_ref() else {
            unreachable!("a response without a request")
        };
        let (api, value, exchange) = (pending.api, pending.value, pending.exchange);
        let mut e = Enc::response(api, pending.correlation_id);
        let msg = match api {
            Rpc::ApiVersions => {
                // The controller's and a broker's listeners, shortened.
                const BROKER: &[(i16, i16, i16)] = &[
                    (0, 0, 11),
                    (1, 0, 16),
                    (2, 1, 8),
                    (3, 0, 12),
                    (8, 2, 9),
                    (9, 1, 9),
                    (10, 0, 5),
                    (11, 2, 9),
                    (12, 0, 4),
                    (13, 0, 5),
                    (14, 0, 5),
                    (18, 0, 3),
                    (22, 0, 5),
                ];
                const CONTROLLER: &[(i16, i16, i16)] = &[
                    (1, 4, 16),
                    (7, 3, 3),
                    (17, 0, 1),
                    (18, 0, 3),
                    (36, 0, 2),
                    (55, 0, 2),
                    (62, 0, 3),
                    (63, 0, 1),
                    (67, 0, 0),
                ];
                let keys = if matches!(self.spec.role, Role::Broker { .. }) {
                    CONTROLLER
                } else {
                    BROKER
                };
                e.i16(0); // error code
                e.compact_len(keys.len());
                for &(key, min_version, max_version) in keys {
                    e.i16(key);
                    e.i16(min_version);
                    e.i16(max_version);
                    e.tags();
                }
                e.i32(0); // throttle time ms
                e.tags();
                e.finish(0, 0, Vec::new())
            }
            Rpc::AllocateProducerIds => {
                let k = g.pid_responses;
                g.pid_responses += 1;
                let not_controller =
                    g.not_controller_at.contains(&k) || g.rng.chance(g.not_controller_rate);
                let (error_code, start, len) = if not_controller {
                    (41, -1, 0)
                } else {
                    let start = g.next_producer_id;
                    g.next_producer_id += i64::from(BLOCK_LEN);
                    (0, start, BLOCK_LEN)
                };
                e.i32(0); // throttle time ms
                e.i16(error_code);
                e.i64(start);
                e.i32(len);
                e.tags();
                if let Some(truth) = &mut g.truth {
                    let x = &mut truth.waiting[(exchange - truth.first) as usize];
                    x.error_code = error_code;
                    x.producer_id_start = start;
                    x.producer_id_len = len;
                    x.answered = true;
                    truth.flush_answered()?;
                }
                e.finish(0, 0, Vec::new())
            }
            Rpc::Produce => {
                let Role::Producer {
                    topic, partition, ..
                } = &self.spec.role
                else {
                    unreachable!("Produce from a producer")
                };
                e.compact_len(1);
                e.compact_string(Some(topic));
                e.compact_len(1);
                e.i32(*partition);
                e.i16(0); // error code
                e.i64(self.offset); // base offset
                e.i64(-1); // log append time
                e.i64(0); // log start offset
                e.compact_len(0); // record errors
                e.compact_string(None); // error message
                e.tags(); // partition
                e.tags(); // topic
                e.i32(0); // throttle time ms
                e.tags();
                self.offset += 1;
                e.finish(0, 0, Vec::new())
            }
            Rpc::Fetch => {
                let Role::Consumer {
                    topic, partition, ..
                } = &self.spec.role
                else {
                    unreachable!("Fetch from a consumer")
                };
                if self.fetch_session == 0 {
                    self.fetch_session = g.rng.range(1, i32::MAX as u64) as i32;
                }
                self.fetch_epoch += 1;
                e.i32(0); // throttle time ms
                e.i16(0); // error code
                e.i32(self.fetch_session);
                e.compact_len(1);
                e.compact_string(Some(topic));
                e.compact_len(1);
                e.i32(*partition);
                e.i16(0); // error code
                e.i64(self.offset + 100); // high watermark
                e.i64(self.offset + 100); // last stable offset
                e.i64(0); // log start offset
                e.uvarint(0); // aborted transactions: null
                e.i32(-1); // preferred read replica
                let fill_at = g.rng.below(FILLER_LEN as u64) as usize;
                let ts_ms = ((EPOCH_US + t) / 1000) as i64 - 5000;
                let mut tail = Enc(record_batch(&mut e, g, self.offset, ts_ms, value, fill_at));
                tail.tags(); // partition
                tail.tags(); // topic
                tail.tags(); // response
                self.offset += 1;
                e.finish(value, fill_at, tail.0)
            }
            Rpc::Heartbeat => {
                e.i32(0); // throttle time ms
                e.i16(0); // error code
                e.tags();
                e.finish(0, 0, Vec::new())
            }
        };
        g.count(api, true);
        Ok(msg)
    }
}

// ---------------------------------------------------------------------------------------------

fn run(args: &Args) -> Result<(), String> {
    let began = Instant::now();
    let mut rng = Rng::new(args.seed);
    let (specs, not_controller_at, not_controller_rate) = match args.shape {
        Shape::Bulk => {
            if args.packets.is_some() || args.brokers.is_some() || args.span_scale.is_some() {
                return Err("--packets, --brokers and --span-scale are for --shape control".into());
            }
            let (specs, errors) = plan_bulk(&mut rng, args.size.unwrap_or(1 << 30));
            (specs, errors, 0.0)
        }
        Shape::Control => {
            let packets = args.packets.unwrap_or_else(|| {
                args.size
                    .map_or(2_000_000, |size| size / CONTROL_BYTES_PER_PACKET)
            });
            let brokers = args.brokers.map_or(CONTROL_BROKERS, usize::from);
            (
                plan_control(
                    &mut rng,
                    packets.max(1),
                    brokers,
                    args.span_scale.unwrap_or(1.0),
                ),
                Vec::new(),
                0.002,
            )
        }
    };
    let create = |path: &PathBuf| {
        File::create(path)
            .map(|f| BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let mut out = create(&args.output)?;
    let truth = match &args.truth {
        Some(path) => {
            let mut out = create(path)?;
            out.write_all(b"{\n  \"exchanges\": [")
                .map_err(|e| e.to_string())?;
            Some(Truth {
                out,
                waiting: VecDeque::new(),
                first: 0,
            })
        }
        None => None,
    };
    // pcap header: little-endian, microseconds, version 2.4, snaplen 262144, Ethernet.
    let mut header = Vec::with_capacity(24);
    header.extend(0xa1b2_c3d4u32.to_le_bytes());
    header.extend(2u16.to_le_bytes());
    header.extend(4u16.to_le_bytes());
    header.extend(0i32.to_le_bytes());
    header.extend(0u32.to_le_bytes());
    header.extend(262_144u32.to_le_bytes());
    header.extend(1u32.to_le_bytes());
    out.write_all(&header).map_err(|e| e.to_string())?;
    let mut filler = vec![0u8; FILLER_LEN];
    for chunk in filler.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes()[..chunk.len()]);
    }
    let first_producer_id = rng.range(0, 5000) as i64 * i64::from(BLOCK_LEN);
    let mut g = Gen {
        out,
        packet: Vec::with_capacity(2048),
        rng,
        filler,
        crc: Crc32c::new(),
        bytes: header.len() as u64,
        packets: 0,
        last_us: 0,
        frames: [[0; 2]; 5],
        exchanges: 0,
        wrapped_connections: 0,
        next_producer_id: first_producer_id,
        pid_responses: 0,
        not_controller_at,
        not_controller_rate,
        truth,
    };
    let connections = specs.len() as u64;
    let max_open = simulate(specs, &mut g).map_err(|e| e.to_string())?;
    g.out.flush().map_err(|e| e.to_string())?;
    if let Some(mut truth) = g.truth.take() {
        truth.flush_answered().map_err(|e| e.to_string())?;
        let frames: BTreeMap<&str, FrameCount> = Rpc::ALL
            .iter()
            .filter(|api| g.frames[api.index()] != [0, 0])
            .map(|&api| {
                let [requests, responses] = g.frames[api.index()];
                (
                    api.name(),
                    FrameCount {
                        api_key: api.key(),
                        requests,
                        responses,
                    },
                )
            })
            .collect();
        let frames = serde_json::to_string(&frames).map_err(|e| e.to_string())?;
        let end = format!(
            "\n  ],\n  \"packets\": {},\n  \"connections\": {connections},\n  \"open_at_most\": {max_open},\n  \"sequence_wraps\": {},\n  \"api_frames\": {frames}\n}}\n",
            g.packets, g.wrapped_connections
        );
        truth
            .out
            .write_all(end.as_bytes())
            .and_then(|()| truth.out.flush())
            .map_err(|e| e.to_string())?;
    }
    eprintln!(
        "gen_capture: {}: {} bytes, {} packets, {connections} connections (at most {max_open} open, \
         {} with wrapping sequence numbers), {} AllocateProducerIds exchanges, {:.1} s of traffic, \
         written in {:.2} s",
        args.output.display(),
        g.bytes,
        g.packets,
        g.wrapped_connections,
        g.exchanges,
        g.last_us as f64 / 1e6,
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Plays the connections: each packet goes out at the earliest time its connection is ready,
/// 10-50 µs after the previous packet of the capture. Returns the most connections open at once.
fn simulate(specs: Vec<Spec>, g: &mut Gen) -> io::Result<usize> {
    let mut specs = specs.into_iter().peekable();
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    // (ready at, connection number, slot), earliest first.
    let mut ready: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut opened = 0u64;
    let mut max_open = 0;
    let mut t = 0u64;
    loop {
        let next = ready.peek().map(|Reverse(r)| r.0);
        if let Some(spec) = specs.next_if(|s| next.is_none_or(|n| s.start <= n)) {
            let start = spec.start;
            let conn = Conn::open(spec, &mut g.rng);
            let slot = match free.pop() {
                Some(slot) => {
                    conns[slot] = Some(conn);
                    slot
                }
                None => {
                    conns.push(Some(conn));
                    conns.len() - 1
                }
            };
            ready.push(Reverse((start, opened, slot)));
            opened += 1;
            max_open = max(max_open, conns.len() - free.len());
            continue;
        }
        let Some(Reverse((at, number, slot))) = ready.pop() else {
            break;
        };
        t = max(at, t + g.rng.range(10, 50));
        g.last_us = t;
        let conn = conns[slot].as_mut().expect("ready connection is open");
        match conn.step(t, g)? {
            Some(at) => ready.push(Reverse((at, number, slot))),
            None => {
                conns[slot] = None;
                free.push(slot);
            }
        }
    }
    Ok(max_open)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_capture: {e}");
            ExitCode::FAILURE
        }
    }
}
