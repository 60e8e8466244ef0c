//! The memory budget (`--max-memory`) against the Kafka stage's growing structures: many
//! connections with requests never answered, with frames cut mid-way while being read for
//! decoding, with framing searches in progress, and all of them in one capture. At budgets
//! of 16, 64 and 256 MiB, each capture holds more than its budget without one; pidshark's
//! own peak (`--stats`) stays under the budget plus README "Hostile input"'s 32 MiB, says
//! what it gave up (`memory_limit`), and still reads a clean exchange at the end whole.

#[path = "it/common.rs"]
mod common;
#[path = "support/counting.rs"]
mod counting;

use common::*;
use counting::held_now;
use std::path::Path;

use pidshark::kafka::waiting::table_bytes;
use pidshark::kafka::MALLOC_OVERHEAD;

#[test]
fn a_hash_table_costs_what_table_bytes_says() {
    // What std's HashMap asks of malloc, at sizes to each side of a doubling, for an
    // entry of 40 bytes (a waiting request's) and of 24; table_bytes adds malloc's
    // overhead to it.
    fn measured<E: Default>(n: i32) -> (isize, usize) {
        let before = held_now();
        let mut table = std::collections::HashMap::new();
        for key in 0..n {
            table.insert(key, E::default());
        }
        let asked = held_now() - before;
        let said = table_bytes(table.capacity(), size_of::<(i32, E)>());
        (asked, said)
    }
    for n in [1, 7, 8, 100, 1000, 1793, 4096] {
        for (asked, said) in [measured::<[u64; 4]>(n), measured::<[u64; 2]>(n)] {
            assert_eq!(
                said as isize,
                asked + MALLOC_OVERHEAD as isize,
                "{n} entries"
            );
        }
    }
}

/// What pidshark holds beyond the budget: README "Hostile input".
const BEYOND_BUDGET_MIB: u64 = 32;

/// One hostile connection's packets, `i` its number.
type Shape = dyn Fn(u32, &mut Conn, &mut PcapWriter);

/// Writes `conns` connections shaped by `each` and a clean AllocateProducerIds exchange,
/// runs pidshark with `--max-memory budget_mib`, and checks the bound, the diagnostic and
/// the clean exchange. Returns the report.
fn over_budget(budget_mib: u64, conns: u32, each: &Shape) -> serde_json::Value {
    over_budget_in(budget_mib, conns, each, false)
}

/// [`over_budget`], the capture written as a pcapng whose sections describe more
/// interfaces than are kept when `many_interfaces`.
fn over_budget_in(
    budget_mib: u64,
    conns: u32,
    each: &Shape,
    many_interfaces: bool,
) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.pcap");
    let mut w = PcapWriter::create(&path);
    for i in 0..conns {
        let client = format!(
            "10.{}.{}.{}:40000",
            1 + i / 65_536,
            (i / 256) % 256,
            i % 256
        );
        let mut c = Conn::new(&client, "10.0.0.2:9093");
        each(i, &mut c, &mut w);
    }
    clean_exchange(&mut w);
    w.finish();
    let path = if many_interfaces {
        let pcapng = dir.path().join("budget.pcapng");
        with_many_interfaces(&path, &pcapng);
        std::fs::remove_file(&path).unwrap();
        pcapng
    } else {
        path
    };
    let size_mib = std::fs::metadata(&path).unwrap().len() >> 20;
    let budget = format!("{budget_mib}M");
    let (report, peak, took) = run_measured(&path, &["--max-memory", &budget]);
    eprintln!("budget {budget_mib} MiB, capture {size_mib} MiB: peak {peak} MiB in {took:?}");
    assert!(
        peak <= budget_mib + BEYOND_BUDGET_MIB,
        "peak {peak} MiB at a budget of {budget_mib} MiB"
    );
    assert!(took < HANG_GUARD, "{took:?}");
    assert!(
        kinds(&report).contains(&"memory_limit".to_owned()),
        "{:?}",
        report["summary"]["diagnostics"]
    );
    let clean_ones: Vec<&serde_json::Value> = report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["client"] == "10.0.0.1:39999")
        .collect();
    assert_eq!(clean_ones.len(), 1);
    assert_eq!(clean_ones[0]["status"], "complete");
    assert_eq!(clean_ones[0]["response"]["producer_id_start"], 5000);
    report
}

/// Rewrites the pcap at `pcap` as a pcapng at `out`: 64 sections of 5,000 interfaces
/// each (4,096 are kept a section), then every packet, in order, on the last one kept.
fn with_many_interfaces(pcap: &Path, out: &Path) {
    use std::io::{Read, Write};
    let mut input = std::io::BufReader::new(std::fs::File::open(pcap).unwrap());
    let mut output = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
    let words = |ws: &[u32]| ws.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let shb = words(&[0x0a0d0d0a, 28, 0x1a2b3c4d, 1, u32::MAX, u32::MAX, 28]);
    let idb = words(&[1, 20, 1, 0, 20]);
    for _ in 0..64 {
        output.write_all(&shb).unwrap();
        for _ in 0..5000 {
            output.write_all(&idb).unwrap();
        }
    }
    let mut header = [0u8; 24];
    input.read_exact(&mut header).unwrap();
    let mut record = [0u8; 16];
    let mut packet = Vec::new();
    while input.read_exact(&mut record).is_ok() {
        let field = |i: usize| u32::from_le_bytes(record[i..i + 4].try_into().unwrap());
        let (secs, micros, len) = (field(0), field(4), field(8) as usize);
        packet.resize(len, 0);
        input.read_exact(&mut packet).unwrap();
        let stamp = u64::from(secs) * 1_000_000 + u64::from(micros);
        let padded = len.div_ceil(4) * 4;
        let block = 32 + padded as u32;
        let head = [6, block, 4095, (stamp >> 32) as u32, stamp as u32];
        output.write_all(&words(&head)).unwrap();
        output.write_all(&words(&[len as u32, len as u32])).unwrap();
        output.write_all(&packet).unwrap();
        output.write_all(&vec![0u8; padded - len]).unwrap();
        output.write_all(&block.to_le_bytes()).unwrap();
    }
    output.flush().unwrap();
}

/// Whether a `memory_limit` diagnostic says it gave up something described by `what`.
fn gave_up(report: &serde_json::Value, what: &str) -> bool {
    report["diagnostics"].as_array().unwrap().iter().any(|d| {
        d["kind"] == "memory_limit" && d["message"].as_str().unwrap_or_default().contains(what)
    })
}

/// The smallest requests of three APIs, correlation ids from `first`: ApiVersions v0 and
/// Metadata v0 with a null client id (14 and 18 bytes), and every 16th an
/// AllocateProducerIds v0 (28 bytes), which is decoded and waits with its fields.
fn unanswered_requests(first: i32, count: i32) -> Vec<u8> {
    let mut out = Vec::new();
    for corr in first..first + count {
        let mut msg = Vec::new();
        let (key, body): (i16, Vec<u8>) = match corr % 16 {
            0 => (67, apid_request_body(corr, 7)),
            n if n % 2 == 1 => (18, Vec::new()),
            _ => (3, 0i32.to_be_bytes().to_vec()),
        };
        msg.extend(key.to_be_bytes());
        msg.extend(0i16.to_be_bytes());
        msg.extend(corr.to_be_bytes());
        msg.extend((-1i16).to_be_bytes());
        if key == 67 {
            msg.push(0); // request header v2: no tagged fields
        }
        msg.extend(body);
        out.extend(framed(&msg));
    }
    out
}

/// Shape (a): 10,000 connections, each with requests that are never answered, several to
/// a segment (about 18 bytes each on the wire).
fn waiting(budget_mib: u64) -> serde_json::Value {
    let per_conn = (budget_mib as i32 * 2).max(48);
    let batch = unanswered_requests(1, per_conn);
    let report = over_budget(budget_mib, 10_000, &move |_, c, w| {
        c.handshake(w);
        c.send(w, true, &batch, 1448);
    });
    assert!(gave_up(&report, "waiting requests"));
    report
}

#[test]
fn requests_never_answered_16m() {
    waiting(16);
}

#[test]
fn requests_never_answered_64m() {
    waiting(64);
}

#[test]
fn requests_never_answered_256m() {
    waiting(256);
}

/// Shape (b): an AllocateProducerIds request that claims 1,000,000 bytes, of which
/// `sent` come: a message being kept for decoding, cut mid-way.
fn cut_frame(sent: usize) -> impl Fn(u32, &mut Conn, &mut PcapWriter) {
    let mut body = apid_request_body(1, 7);
    body.resize(1_000_000, 0);
    let mut req = request(67, 0, 1, true, &body);
    req.truncate(sent);
    move |_, c, w| {
        c.handshake(w);
        c.send(w, true, &req, 8948);
    }
}

/// Connections of shape (b) for a budget: together they would keep 1.25 times it.
fn cut_frames(budget_mib: u64) -> serde_json::Value {
    let conns = 1_000;
    let sent = (((budget_mib as usize) * 5 / 4) << 20) / conns as usize;
    let report = over_budget(budget_mib, conns, &cut_frame(sent));
    assert!(gave_up(&report, "of the client's stream being read"));
    report
}

#[test]
fn frames_cut_while_read_for_decoding_16m() {
    cut_frames(16);
}

#[test]
fn frames_cut_while_read_for_decoding_64m() {
    cut_frames(64);
}

#[test]
fn frames_cut_while_read_for_decoding_256m() {
    cut_frames(256);
}

/// Shape (c): a connection picked up mid-stream whose client sends 256 back-to-back
/// request heads (18 bytes each) that each claim 1,000,000 bytes: a framing search that
/// carries every one of them until the stream reaches where it says it ends.
fn searching() -> impl Fn(u32, &mut Conn, &mut PcapWriter) {
    let mut heads = Vec::new();
    for corr in 0..256 {
        let mut head = request(18, 3, corr, false, &[]);
        head.splice(..4, 1_000_000u32.to_be_bytes());
        heads.extend(head);
    }
    move |_, c, w| c.send(w, true, &heads, 1448)
}

fn searches(budget_mib: u64) -> serde_json::Value {
    let conns = (budget_mib as u32 * 80).max(2_000);
    let report = over_budget(budget_mib, conns, &searching());
    assert!(gave_up(&report, "stream being read"));
    report
}

#[test]
fn framing_searches_mid_stream_16m() {
    searches(16);
}

#[test]
fn framing_searches_mid_stream_64m() {
    searches(64);
}

#[test]
fn framing_searches_mid_stream_256m() {
    searches(256);
}

/// Shape (d): the three shapes above in turn, one connection each, in one capture.
fn mixed(budget_mib: u64) -> serde_json::Value {
    let per_conn = (budget_mib as i32 * 2).max(48);
    let batch = unanswered_requests(1, per_conn);
    let cut = cut_frame(((budget_mib as usize) << 20) / 2_000);
    let search = searching();
    let report = over_budget(budget_mib, 12_000, &move |i, c, w| match i % 3 {
        0 => {
            c.handshake(w);
            c.send(w, true, &batch, 1448);
        }
        1 => cut(i, c, w),
        _ => search(i, c, w),
    });
    // Only the first thousand memory_limit diagnostics are listed, and the cut frames'
    // connections, which hold most, come first: what the others gave up is counted.
    assert!(report["summary"]["diagnostics"]["memory_limit"].as_u64() > Some(1000));
    report
}

#[test]
fn all_kafka_shapes_in_one_capture_16m() {
    mixed(16);
}

#[test]
fn all_kafka_shapes_in_one_capture_64m() {
    mixed(64);
}

#[test]
fn all_kafka_shapes_in_one_capture_256m() {
    mixed(256);
}

/// Shape (e): every shape that grows memory, in turn, one connection each, in one capture:
/// requests never answered, frames cut while read for decoding, framing searches,
/// requests held behind a one-byte hole, and lone IP fragments, each of a datagram of its
/// own; in a pcapng whose sections describe more interfaces than are kept.
fn everything(budget_mib: u64) -> serde_json::Value {
    let per_conn = (budget_mib as i32 * 2).max(48);
    let batch = unanswered_requests(1, per_conn);
    let held = unanswered_requests(1, 900); // 16 KiB
    let cut = cut_frame(((budget_mib as usize) << 20) / 2_000);
    let search = searching();
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    let shapes = move |i: u32, c: &mut Conn, w: &mut PcapWriter| match i % 5 {
        0 => {
            c.handshake(w);
            c.send(w, true, &batch, 1448);
        }
        1 => cut(i, c, w),
        2 => search(i, c, w),
        3 => {
            c.handshake(w);
            c.client_seq = c.client_seq.wrapping_add(1); // the byte lost
            c.send(w, true, &held, 8 * 1024);
        }
        _ => {
            for id in 0..60u16 {
                let mut frame = c.packet(true, 1, ack, &[])[..14 + 20].to_vec();
                frame[14 + 2..14 + 4].copy_from_slice(&21u16.to_be_bytes()); // total length
                frame[14 + 4..14 + 6].copy_from_slice(&id.to_be_bytes());
                frame[14 + 6..14 + 8].copy_from_slice(&1u16.to_be_bytes()); // offset 8, last
                frame.push(0x41);
                w.record(&frame, 0);
            }
        }
    };
    let report = over_budget_in(budget_mib, 20_000, &shapes, true);
    let counts = &report["summary"]["diagnostics"];
    assert!(counts["memory_limit"].as_u64() > Some(1000));
    assert!(counts["ip_fragments_dropped"].as_u64() > Some(0));
    assert!(counts["capture_corrupt"].as_u64() > Some(0), "{counts}");
    report
}

#[test]
fn every_shape_in_one_capture_16m() {
    everything(16);
}

#[test]
fn every_shape_in_one_capture_64m() {
    everything(64);
}

#[test]
fn every_shape_in_one_capture_256m() {
    everything(256);
}

/// Shape (e): 2,000 connections, each holding 4,000 AllocateProducerIds requests that are
/// never answered (8 M requests, 235 MB), and the clean exchange last. The connections'
/// waiting tables grow and are shed over and over, and the room they free is split among
/// live neighbours, and pairing's one table of them all doubled (holding both sizes at
/// once) past what was charged for it: 298 MiB at a budget of 256 MiB before the Kafka
/// stage held the decoded requests itself. Written into `dir`, the test's own.
fn thousands_waiting_capture(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("thousands.pcap");
    let mut w = PcapWriter::create(&path);
    let mut batch = Vec::new();
    for corr in 1..=4000 {
        batch.extend(request(67, 0, corr, true, &apid_request_body(8, 7)));
    }
    for i in 0..2000u32 {
        let client = format!("10.1.{}.{}:40000", i / 256, i % 256);
        let mut c = Conn::new(&client, "10.0.0.2:9093");
        c.handshake(&mut w);
        c.send(&mut w, true, &batch, 1448);
    }
    clean_exchange(&mut w);
    w.finish();
    path
}

/// Runs pidshark on shape (e) at `budget_mib`, listing only the clean exchange's broker
/// (the rest would be 3 GB of report to read): pidshark's own peak stays within the
/// promise, it says what it gave up, and the clean exchange is read whole.
fn thousands_waiting(budget_mib: u64) {
    let budget = format!("{budget_mib}M");
    let args = ["--max-memory", &budget, "--broker", "7"];
    let dir = tempfile::tempdir().unwrap();
    let (report, peak, took) = run_measured(&thousands_waiting_capture(dir.path()), &args);
    eprintln!("thousands waiting, budget {budget_mib} MiB: peak {peak} MiB in {took:?}");
    assert!(
        peak <= budget_mib + BEYOND_BUDGET_MIB,
        "peak {peak} MiB at a budget of {budget_mib} MiB"
    );
    assert!(took < HANG_GUARD, "{took:?}");
    assert!(
        gave_up(&report, "waiting requests"),
        "{:?}",
        report["diagnostics"]
    );
    assert_eq!(report["summary"]["exchanges"]["total"], 8_000_001);
    let listed = report["exchanges"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["client"], "10.0.0.1:39999");
    assert_eq!(listed[0]["status"], "complete");
    assert_eq!(listed[0]["response"]["producer_id_start"], 5000);
}

#[test]
fn thousands_of_requests_waiting_on_each_connection_16m() {
    thousands_waiting(16);
}

#[test]
fn thousands_of_requests_waiting_on_each_connection_64m() {
    thousands_waiting(64);
}

#[test]
fn thousands_of_requests_waiting_on_each_connection_256m() {
    thousands_waiting(256);
}
