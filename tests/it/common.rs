//! Test helpers: the built binary, fixture paths, and a writer of synthetic captures for
//! exact edge cases a kernel will not produce on demand.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use etherparse::PacketBuilder;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `program` runs here, for a test that needs it. Without it the test should return
/// at once: one line on the real stderr (past libtest's capture, so `cargo test` shows it)
/// says what is missing and how to install it. When `CI` is set a missing program fails the
/// test instead, so CI can never go green by skipping.
pub fn have_program(program: &str, needed_for: &str, install: &str) -> bool {
    if runs(program) {
        return true;
    }
    assert!(
        !ci(),
        "`{program}` is not installed ({needed_for}) and CI is set, so this test may not skip: {install}"
    );
    let line = format!("skipped: `{program}` not found ({needed_for}); install it: {install}\n");
    // Written to the file descriptor itself: libtest captures only the print macros.
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}

/// Whether `program --version` starts, asked once a test run per program: tshark's takes
/// half a second, and some thirty tests ask.
fn runs(program: &str) -> bool {
    static SEEN: Mutex<BTreeMap<String, bool>> = Mutex::new(BTreeMap::new());
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *seen.entry(program.to_owned()).or_insert_with(|| {
        Command::new(program)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    })
}

/// Whether this run is CI's (`CI` set, as `.ci/run` sets it, and not `false` or `0`).
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures").join(name)
}

/// The `pidshark` binary, run from the repository root so paths match the golden files.
pub fn pidshark() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("pidshark").expect("binary built");
    cmd.current_dir(root());
    cmd
}

/// Runs pidshark on `args`, which must succeed: its standard output.
pub fn stdout_text(args: &[&str]) -> String {
    let out = pidshark().args(args).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).expect("UTF-8 output")
}

/// Runs pidshark on `args` and parses its report.
pub fn report(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&stdout_text(args)).expect("report is JSON")
}

/// The fixtures with several exchanges, all little-endian microsecond pcap: what the cut
/// and snaplen sweeps rewrite.
pub const MULTI_EXCHANGE_FIXTURES: [&str; 7] = [
    "fixtures/controller-loopback.pcap",
    "fixtures/analysis/error-streak.pcap",
    "fixtures/analysis/failover-regression.pcap",
    "fixtures/analysis/gaps-irregular.pcap",
    "fixtures/analysis/healthy.pcap",
    "fixtures/analysis/overlap.pcap",
    "fixtures/analysis/slow.pcap",
];

/// One pcap record: its 16-byte header and its captured bytes.
pub type PcapRecord = ([u8; 16], Vec<u8>);

/// The gzipped capture `gz` (a path under the repository), written unpacked into `dir`
/// as `name`: for tests that cut or rewrite a shipped capture record by record.
pub fn gunzipped(gz: &str, dir: &Path, name: &str) -> PathBuf {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(root().join(gz)).unwrap())
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("{gz}: {e}"));
    let path = dir.join(name);
    std::fs::write(&path, &raw).unwrap();
    path
}

/// A little-endian microsecond pcap file: its 24-byte header and its records.
pub fn pcap_records(path: &Path) -> (Vec<u8>, Vec<PcapRecord>) {
    let data = std::fs::read(path).expect("capture readable");
    assert_eq!(
        &data[..4],
        &[0xd4, 0xc3, 0xb2, 0xa1],
        "little-endian µs pcap"
    );
    let mut records = Vec::new();
    let mut at = 24;
    while at + 16 <= data.len() {
        let head: [u8; 16] = data[at..at + 16].try_into().unwrap();
        let caplen = u32::from_le_bytes(head[8..12].try_into().unwrap()) as usize;
        records.push((head, data[at + 16..at + 16 + caplen].to_vec()));
        at += 16 + caplen;
    }
    (data[..24].to_vec(), records)
}

/// Runs pidshark on the capture at `path` (`--compact --quiet`) and parses its report.
pub fn compact_report(path: &Path) -> serde_json::Value {
    let out = pidshark()
        .arg(path)
        .args(["--compact", "--quiet"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("report is JSON")
}

/// The kinds of a report's listed diagnostics, in order.
pub fn kinds(report: &serde_json::Value) -> Vec<String> {
    report["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| d["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// An AllocateProducerIds v0 request from `broker` (epoch 7) and its NONE answer granting
/// 1000 ids from `start`.
pub fn apid_pair(corr: i32, broker: i32, start: i64) -> (Vec<u8>, Vec<u8>) {
    (
        request(67, 0, corr, true, &apid_request_body(broker, 7)),
        response(corr, true, &apid_response_body(0, start, 1000)),
    )
}

/// The clean AllocateProducerIds exchange a hostile capture ends with, on a connection of
/// its own (10.0.0.1:39999 to broker 7, granting 5000..5999): it must come out whole.
pub fn clean_exchange(w: &mut PcapWriter) {
    let mut clean = Conn::new("10.0.0.1:39999", "10.0.0.2:9093");
    clean.handshake(w);
    let (req, resp) = apid_pair(1, 7, 5000);
    clean.send(w, true, &req, 1448);
    clean.send(w, false, &resp, 1448);
    clean.close(w);
}

/// A Kafka request frame: size, header (v2 when `flexible`), body.
pub fn request(
    api_key: i16,
    version: i16,
    correlation_id: i32,
    flexible: bool,
    body: &[u8],
) -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend(api_key.to_be_bytes());
    msg.extend(version.to_be_bytes());
    msg.extend(correlation_id.to_be_bytes());
    msg.extend(4i16.to_be_bytes());
    msg.extend(b"test");
    if flexible {
        msg.push(0); // no header tagged fields
    }
    msg.extend(body);
    framed(&msg)
}

/// A response frame: size, correlation id, header tagged fields when `flexible`, body.
pub fn response(correlation_id: i32, flexible: bool, body: &[u8]) -> Vec<u8> {
    let mut msg = correlation_id.to_be_bytes().to_vec();
    if flexible {
        msg.push(0);
    }
    msg.extend(body);
    framed(&msg)
}

pub fn framed(message: &[u8]) -> Vec<u8> {
    let mut out = (message.len() as u32).to_be_bytes().to_vec();
    out.extend(message);
    out
}

/// AllocateProducerIds v0 request body.
pub fn apid_request_body(broker_id: i32, broker_epoch: i64) -> Vec<u8> {
    let mut body = broker_id.to_be_bytes().to_vec();
    body.extend(broker_epoch.to_be_bytes());
    body.push(0);
    body
}

/// AllocateProducerIds v0 response body.
pub fn apid_response_body(error: i16, start: i64, len: i32) -> Vec<u8> {
    let mut body = 0i32.to_be_bytes().to_vec();
    body.extend(error.to_be_bytes());
    body.extend(start.to_be_bytes());
    body.extend(len.to_be_bytes());
    body.push(0);
    body
}

/// `v` as an unsigned varint (the lengths of Kafka's flexible versions).
pub fn uvarint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// An InitProducerId version 4 request body: `transactional_id` (null: idempotent), no
/// producer id to keep.
pub fn init_pid_request_body(transactional_id: Option<&[u8]>) -> Vec<u8> {
    let mut body = Vec::new();
    match transactional_id {
        Some(id) => {
            uvarint(id.len() as u64 + 1, &mut body);
            body.extend(id);
        }
        None => body.push(0),
    }
    body.extend(60_000i32.to_be_bytes());
    body.extend((-1i64).to_be_bytes());
    body.extend((-1i16).to_be_bytes());
    body.push(0);
    body
}

/// Its answer: NONE, granting `producer_id` at epoch 0.
pub fn init_pid_response_body(producer_id: i64) -> Vec<u8> {
    let mut body = 0i32.to_be_bytes().to_vec();
    body.extend(0i16.to_be_bytes());
    body.extend(producer_id.to_be_bytes());
    body.extend(0i16.to_be_bytes());
    body.push(0);
    body
}

/// One InitProducerId exchange on `c`, granting `producer_id`.
pub fn init_pid(w: &mut PcapWriter, c: &mut Conn, corr: i32, txn: Option<&[u8]>, producer_id: i64) {
    let req = request(22, 4, corr, true, &init_pid_request_body(txn));
    let resp = response(corr, true, &init_pid_response_body(producer_id));
    c.send(w, true, &req, 60_000);
    c.send(w, false, &resp, 1448);
}

/// Writes a pcap, one packet per record, straight to a file so large captures never
/// sit in memory. Little-endian microseconds unless told otherwise.
pub struct PcapWriter {
    out: std::io::BufWriter<std::fs::File>,
    nanos: u64,
    pub packets: u64,
    big_endian: bool,
    nano: bool,
}

impl PcapWriter {
    pub fn create(path: &Path) -> Self {
        Self::with_link_type(path, 1)
    }

    pub fn with_link_type(path: &Path, link_type: u32) -> Self {
        Self::with_format(path, link_type, false, false)
    }

    /// `big_endian`: byte order of the file; `nano`: nanosecond timestamps.
    pub fn with_format(path: &Path, link_type: u32, big_endian: bool, nano: bool) -> Self {
        let mut w = Self {
            out: std::io::BufWriter::new(std::fs::File::create(path).unwrap()),
            nanos: 1_700_000_000_000_000_000,
            packets: 0,
            big_endian,
            nano,
        };
        w.u32(if nano { 0xa1b23c4d } else { 0xa1b2c3d4 });
        w.u16(2);
        w.u16(4);
        w.u32(0);
        w.u32(0);
        w.u32(262144);
        w.u32(link_type);
        w
    }

    /// Sets the clock: the next record is stamped 100.000123 µs after `nanos` (since
    /// the Unix epoch).
    pub fn set_time(&mut self, nanos: u64) {
        self.nanos = nanos;
    }

    fn u32(&mut self, v: u32) {
        let bytes = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.out.write_all(&bytes).unwrap();
    }

    fn u16(&mut self, v: u16) {
        let bytes = if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.out.write_all(&bytes).unwrap();
    }

    /// Writes one record; `cut` bytes are dropped from its end as snaplen would.
    /// Packets are 100.000123 µs apart, so nanosecond files show their extra digits.
    pub fn record(&mut self, data: &[u8], cut: usize) {
        self.nanos += 100_123;
        let caplen = data.len() - cut;
        let frac = self.nanos % 1_000_000_000;
        self.u32((self.nanos / 1_000_000_000) as u32);
        self.u32(if self.nano {
            frac as u32
        } else {
            (frac / 1000) as u32
        });
        self.u32(caplen as u32);
        self.u32(data.len() as u32);
        self.out.write_all(&data[..caplen]).unwrap();
        self.packets += 1;
    }

    pub fn finish(mut self) {
        self.out.flush().unwrap();
    }
}

/// TCP flags of a synthetic segment.
#[derive(Default, Clone, Copy)]
pub struct Flags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// One TCP connection between `client` and `server`, with sequence numbers kept.
pub struct Conn {
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub client_seq: u32,
    pub server_seq: u32,
}

impl Conn {
    pub fn new(client: &str, server: &str) -> Self {
        Self {
            client: client.parse().unwrap(),
            server: server.parse().unwrap(),
            client_seq: 1000,
            server_seq: 5000,
        }
    }

    /// Bytes of one Ethernet/IP/TCP packet.
    pub fn packet(&self, from_client: bool, seq: u32, flags: Flags, payload: &[u8]) -> Vec<u8> {
        let (src, dst) = if from_client {
            (self.client, self.server)
        } else {
            (self.server, self.client)
        };
        let eth = PacketBuilder::ethernet2([1; 6], [2; 6]);
        let ip = match (src, dst) {
            (SocketAddr::V4(s), SocketAddr::V4(d)) => {
                eth.ipv4(s.ip().octets(), d.ip().octets(), 64)
            }
            (SocketAddr::V6(s), SocketAddr::V6(d)) => {
                eth.ipv6(s.ip().octets(), d.ip().octets(), 64)
            }
            _ => panic!("mixed address families"),
        };
        let mut tcp = ip.tcp(src.port(), dst.port(), seq, 65535);
        if flags.syn {
            tcp = tcp.syn();
        }
        if flags.ack {
            // acknowledge everything the peer has sent so far, as a real stack would
            tcp = tcp.ack(if from_client {
                self.server_seq
            } else {
                self.client_seq
            });
        }
        if flags.fin {
            tcp = tcp.fin();
        }
        if flags.rst {
            tcp = tcp.rst();
        }
        let mut out = Vec::with_capacity(payload.len() + 80);
        tcp.write(&mut out, payload).unwrap();
        out
    }

    pub fn handshake(&mut self, w: &mut PcapWriter) {
        let syn = Flags {
            syn: true,
            ..Flags::default()
        };
        let synack = Flags {
            syn: true,
            ack: true,
            ..Flags::default()
        };
        w.record(&self.packet(true, self.client_seq, syn, &[]), 0);
        w.record(&self.packet(false, self.server_seq, synack, &[]), 0);
        self.client_seq = self.client_seq.wrapping_add(1);
        self.server_seq = self.server_seq.wrapping_add(1);
    }

    /// Sends `data` in segments of at most `mss` bytes.
    pub fn send(&mut self, w: &mut PcapWriter, from_client: bool, data: &[u8], mss: usize) {
        let ack = Flags {
            ack: true,
            ..Flags::default()
        };
        for chunk in data.chunks(mss) {
            let seq = if from_client {
                self.client_seq
            } else {
                self.server_seq
            };
            w.record(&self.packet(from_client, seq, ack, chunk), 0);
            if from_client {
                self.client_seq = self.client_seq.wrapping_add(chunk.len() as u32);
            } else {
                self.server_seq = self.server_seq.wrapping_add(chunk.len() as u32);
            }
        }
    }

    pub fn close(&mut self, w: &mut PcapWriter) {
        let fin = Flags {
            fin: true,
            ack: true,
            ..Flags::default()
        };
        w.record(&self.packet(true, self.client_seq, fin, &[]), 0);
        w.record(&self.packet(false, self.server_seq, fin, &[]), 0);
        self.client_seq = self.client_seq.wrapping_add(1);
        self.server_seq = self.server_seq.wrapping_add(1);
    }
}

/// A capture of `connections` connections with `per_connection` AllocateProducerIds
/// exchanges each, all granting contiguous blocks.
pub fn apid_capture(path: &Path, connections: u32, per_connection: u32) {
    let mut w = PcapWriter::create(path);
    // First 4 MiB of other traffic, so that the read-ahead of the input (a fixed few
    // MiB) is as full in the smaller capture as in the larger.
    let mut other = Conn::new("10.8.8.8:50000", "10.9.9.9:80");
    other.handshake(&mut w);
    other.send(&mut w, true, b"GET / HTTP/1.1\r\n\r\n", 1460);
    let filler = vec![0x41u8; 64 << 10];
    for _ in 0..64 {
        other.send(&mut w, false, &filler, 1460);
    }
    other.close(&mut w);
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

/// A writer that counts the bytes written and keeps the last 64, for tests of output too
/// big to keep.
#[derive(Clone, Default)]
pub struct Counted(pub std::sync::Arc<Mutex<(u64, Vec<u8>)>>);

impl Counted {
    /// Bytes written so far, and the last of them.
    pub fn seen(&self) -> (u64, Vec<u8>) {
        let seen = self.0.lock().unwrap();
        (seen.0, seen.1.clone())
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut seen = self.0.lock().unwrap();
        seen.0 += buf.len() as u64;
        seen.1.extend_from_slice(buf);
        let keep = seen.1.len().saturating_sub(64);
        seen.1.drain(..keep);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// ---- peak memory: for the tests that bound it (tests/adversarial.rs and others) ----

/// Runs pidshark on `path` with `args`; returns (report, peak RSS in MiB, wall time).
///
/// The peak is the one pidshark reports with `--stats`: its own high-water mark. Not the
/// child's `ru_maxrss`, into which Linux folds the high-water mark of the process that
/// spawned it (the test process: a backtrace printed by another test raises it).
/// A run that takes longer than this is hung. Only a hang guard: speed is measured by the
/// benchmarks, and a debug build on a loaded two-core machine takes minutes where an idle
/// one takes seconds.
pub const HANG_GUARD: Duration = Duration::from_secs(600);

pub fn run_measured(path: &Path, args: &[&str]) -> (serde_json::Value, u64, Duration) {
    let start = Instant::now();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("pidshark"))
        .arg(path)
        .args(["--compact", "--quiet", "--stats"])
        .args(["--threads", &threads_asked()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test build of pidshark starts");
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).map(|_| out)
    });
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut stderr)
        .expect("stderr is read");
    let status = child.wait().expect("wait on the child");
    let elapsed = start.elapsed();
    let stdout = reader.join().unwrap().expect("stdout is read");
    assert!(status.success(), "{stderr}");
    let report = serde_json::from_slice(&stdout).expect("a report");
    (report, peak_mib(&stderr), elapsed)
}

/// The workers the tests that bound memory run pidshark with: `PIDSHARK_TEST_THREADS`
/// (read by the tests, not by pidshark), or pidshark's default, 1. CI runs those tests
/// once more with it at 8, for issue 43's budget across workers (`.ci/run`).
pub fn threads_asked() -> String {
    std::env::var("PIDSHARK_TEST_THREADS").unwrap_or_else(|_| "1".into())
}

/// The peak `--stats` printed, in MiB (rounded down, as the bounds are stated).
pub fn peak_mib(stderr: &str) -> u64 {
    let kib: u64 = stderr
        .lines()
        .find_map(|l| l.split_once("peak memory ")?.1.strip_suffix(" KiB"))
        .unwrap_or_else(|| panic!("--stats printed no peak: {stderr}"))
        .parse()
        .expect("the peak is a number of KiB");
    kib / 1024
}

/// A pcapng interface description block: Ethernet, no snaplen, no options.
pub fn ethernet_idb() -> Vec<u8> {
    [
        1u32.to_le_bytes(),
        20u32.to_le_bytes(),
        1u32.to_le_bytes(),
        0u32.to_le_bytes(),
        20u32.to_le_bytes(),
    ]
    .concat()
}

/// A pcapng section with one Ethernet interface, then `blocks`.
pub fn pcapng(path: &Path, blocks: &[Vec<u8>]) {
    let mut f = std::fs::File::create(path).unwrap();
    let shb = [
        0x0a0d0d0a_u32.to_le_bytes(),
        28u32.to_le_bytes(),
        0x1a2b3c4d_u32.to_le_bytes(),
    ]
    .concat();
    f.write_all(&shb).unwrap();
    f.write_all(&[1, 0, 0, 0]).unwrap(); // version 1.0
    f.write_all(&(-1i64).to_le_bytes()).unwrap();
    f.write_all(&28u32.to_le_bytes()).unwrap();
    f.write_all(&ethernet_idb()).unwrap();
    for b in blocks {
        f.write_all(b).unwrap();
    }
}
