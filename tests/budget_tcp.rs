//! The memory budget holds on captures whose weight sits in the TCP/IP and capture stages:
//! out-of-order bytes behind holes (in large runs and in one-byte runs), IP fragments,
//! pcapng interfaces, and the connection table itself. For budgets of 16, 64 and 256 MiB
//! each capture holds more than the budget, pidshark's own peak (`--stats`, its `VmHWM`)
//! stays within the budget plus the fixed part README "Hostile input" states, the limit
//! says so in a diagnostic, and a clean AllocateProducerIds exchange at the end comes out
//! complete. Captures are written to disk as they are made, never held by the test.

#[path = "it/common.rs"]
mod common;

use std::io::Write;
use std::path::Path;

use common::*;

/// What pidshark holds beyond `--max-memory`: the read-ahead and the report, the program,
/// the exchanges between threads, and the IP fragments' own cap (README "Hostile input").
const BEYOND_BUDGET_MIB: u64 = 32;

/// Client address of the `i`th hostile connection: distinct for a million of them.
fn client(i: u32) -> String {
    format!(
        "10.{}.{}.{}:{}",
        1 + i / 65_536,
        (i / 256) % 256,
        i % 256,
        40_000 + i % 20_000
    )
}

/// Runs pidshark on `path` at `budget` MiB; checks the peak, the hang guard, the clean
/// exchange and that a diagnostic of `kind` whose message holds `says` was given.
/// Returns the peak in MiB.
fn assert_within(path: &Path, budget: u64, kind: &str, says: &str) -> u64 {
    assert_within_with(path, budget, &[], kind, says)
}

/// [`assert_within`] with more arguments for pidshark.
fn assert_within_with(path: &Path, budget: u64, args: &[&str], kind: &str, says: &str) -> u64 {
    let budget_arg = format!("{budget}M");
    let mut all = vec!["--max-memory", &budget_arg];
    all.extend(args);
    let (report, peak, took) = run_measured(path, &all);
    eprintln!("budget {budget} MiB: peak {peak} MiB in {took:?}");
    assert!(
        peak <= budget + BEYOND_BUDGET_MIB,
        "peak {peak} MiB at a budget of {budget} MiB"
    );
    assert!(took < HANG_GUARD, "{took:?}");
    let diags = report["diagnostics"].as_array().unwrap();
    assert!(
        diags
            .iter()
            .any(|d| d["kind"] == kind && d["message"].as_str().unwrap().contains(says)),
        "no {kind} saying {says:?}: {:?}",
        report["summary"]["diagnostics"]
    );
    let clean: Vec<&serde_json::Value> = report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["client"] == "10.0.0.1:39999")
        .collect();
    assert_eq!(clean.len(), 1, "{}", report["summary"]);
    assert_eq!(clean[0]["status"], "complete");
    assert_eq!(clean[0]["response"]["producer_id_start"], 5000);
    peak
}

/// Bytes the capture for `budget` holds in all: more than the budget, and than the budget
/// plus the fixed part.
fn beyond(budget: u64) -> u64 {
    (budget + BEYOND_BUDGET_MIB + 16) << 20
}

/// Connections each holding 16 KiB behind a one-byte hole, in two large segments: many
/// connections, so that what each costs beyond its bytes counts.
fn held_behind_holes(budget: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.pcap");
    let mut w = PcapWriter::create(&path);
    let each = vec![0xffu8; 16 * 1024];
    for i in 0..(beyond(budget) / each.len() as u64) as u32 {
        // Open before the capture began (so the Kafka stage's search for framing is
        // bounded by --max-frame): a first byte, the lost byte, then the bytes held.
        let mut c = Conn::new(&client(i), "10.0.0.2:9093");
        c.send(&mut w, true, &[0xff], 1);
        c.client_seq = c.client_seq.wrapping_add(1);
        c.send(&mut w, true, &each, 8 * 1024);
    }
    clean_exchange(&mut w);
    w.finish();
    // The bytes held are searched for Kafka framing once their hole is declared lost: that
    // search is the Kafka stage's (tested with it), and a small --max-frame ends it after
    // a kilobyte on a connection whose start was not captured, rather than over every
    // byte held (minutes in a debug build).
    let args = ["--max-frame", "1K"];
    assert_within_with(&path, budget, &args, "memory_limit", "out-of-order bytes");
}

#[test]
fn bytes_behind_holes_16() {
    held_behind_holes(16);
}

#[test]
fn bytes_behind_holes_64() {
    held_behind_holes(64);
}

#[test]
fn bytes_behind_holes_256() {
    held_behind_holes(256);
}

/// One-byte runs, each behind a hole of its own: the most a held byte costs. Each
/// connection holds 4,000 (under the 4,096 runs a direction may hold).
fn one_byte_runs(budget: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.pcap");
    let mut w = PcapWriter::create(&path);
    const RUNS: u32 = 4000;
    // at least 200 bytes a run, as measured (README "Hostile input")
    let conns = (beyond(budget) / 200 / u64::from(RUNS)) as u32;
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    for i in 0..conns {
        let mut c = Conn::new(&client(i), "10.0.0.2:9093");
        c.handshake(&mut w);
        for run in 0..RUNS {
            let seq = c.client_seq.wrapping_add(1 + 2 * run);
            w.record(&c.packet(true, seq, ack, b"x"), 0);
        }
    }
    clean_exchange(&mut w);
    w.finish();
    assert_within(&path, budget, "memory_limit", "out-of-order bytes");
}

#[test]
fn one_byte_runs_16() {
    one_byte_runs(16);
}

#[test]
fn one_byte_runs_64() {
    one_byte_runs(64);
}

#[test]
fn one_byte_runs_256() {
    one_byte_runs(256);
}

/// IP fragments, each the lone last fragment (one byte) of a datagram of its own: the
/// most a held fragment byte costs. They have their own cap, within the fixed part.
fn ip_fragments(budget: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fragments.pcap");
    let mut w = PcapWriter::create(&path);
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    for i in 0..300_000u32 {
        let c = Conn::new(&client(i / 60_000), "10.0.0.2:9093");
        let mut frame = c.packet(true, 1, ack, &[])[..14 + 20].to_vec();
        frame[14 + 2..14 + 4].copy_from_slice(&21u16.to_be_bytes()); // total length
        frame[14 + 4..14 + 6].copy_from_slice(&((i % 60_000) as u16).to_be_bytes());
        frame[14 + 6..14 + 8].copy_from_slice(&1u16.to_be_bytes()); // offset 8, last
        frame.push(0x41);
        w.record(&frame, 0);
    }
    clean_exchange(&mut w);
    w.finish();
    assert_within(
        &path,
        budget,
        "ip_fragments_dropped",
        "fragments held reached",
    );
}

#[test]
fn ip_fragments_16() {
    ip_fragments(16);
}

#[test]
fn ip_fragments_64() {
    ip_fragments(64);
}

#[test]
fn ip_fragments_256() {
    ip_fragments(256);
}

/// Connections that each sent a SYN and went quiet: only the table holds them. Past
/// `--max-connections` (50,000) the oldest are forgotten for it; a budget too small for
/// the table forgets them first, for the budget.
fn quiet_connections(budget: u64, conns: u32) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("table.pcap");
    let mut w = PcapWriter::create(&path);
    let syn = Flags {
        syn: true,
        ..Flags::default()
    };
    for i in 0..conns {
        let c = Conn::new(&client(i), "10.0.0.2:9093");
        w.record(&c.packet(true, 1, syn, &[]), 0);
    }
    clean_exchange(&mut w);
    w.finish();
    match budget {
        16 => assert_within(&path, budget, "memory_limit", "is no longer followed"),
        _ => assert_within(&path, budget, "connection_limit", "connections at once"),
    };
}

#[test]
fn connection_table_16() {
    quiet_connections(16, 400_000);
}

#[test]
fn connection_table_64() {
    quiet_connections(64, 400_000);
}

#[test]
fn connection_table_256() {
    quiet_connections(256, 400_000);
}

/// A pcapng file whose sections each describe more interfaces than are kept, the packets
/// on the last kept one.
fn many_interfaces(budget: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("interfaces.pcapng");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let shb = [
        0x0a0d0d0a_u32.to_le_bytes(),
        28u32.to_le_bytes(),
        0x1a2b3c4d_u32.to_le_bytes(),
        [1, 0, 0, 0],
        u32::MAX.to_le_bytes(),
        u32::MAX.to_le_bytes(),
        28u32.to_le_bytes(),
    ]
    .concat();
    let idb = ethernet_idb();
    for _ in 0..64 {
        out.write_all(&shb).unwrap();
        for _ in 0..5000 {
            out.write_all(&idb).unwrap();
        }
    }
    let tmp = dir.path().join("clean.pcap");
    let mut w = PcapWriter::create(&tmp);
    clean_exchange(&mut w);
    w.finish();
    for (_, packet) in pcap_records(&tmp).1 {
        out.write_all(&epb(4095, &packet)).unwrap();
    }
    out.flush().unwrap();
    drop(out);
    assert_within(
        &path,
        budget,
        "capture_corrupt",
        "interfaces; the rest are not kept",
    );
}

/// An enhanced packet block on interface `if_id`.
fn epb(if_id: u32, packet: &[u8]) -> Vec<u8> {
    let padded = packet.len().div_ceil(4) * 4;
    let len = 32 + padded as u32;
    let mut b = Vec::new();
    b.extend(6u32.to_le_bytes());
    b.extend(len.to_le_bytes());
    b.extend(if_id.to_le_bytes());
    b.extend([0u8; 8]);
    b.extend((packet.len() as u32).to_le_bytes());
    b.extend((packet.len() as u32).to_le_bytes());
    b.extend(packet);
    b.extend(vec![0u8; padded - packet.len()]);
    b.extend(len.to_le_bytes());
    b
}

#[test]
fn pcapng_interfaces_16() {
    many_interfaces(16);
}

#[test]
fn pcapng_interfaces_64() {
    many_interfaces(64);
}

#[test]
fn pcapng_interfaces_256() {
    many_interfaces(256);
}
