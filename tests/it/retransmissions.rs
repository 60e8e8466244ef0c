//! Retransmissions of long segments are compared with the first copy by reading the
//! capture file again where it lay (the ring of recent bytes keeps a long delivery's spot
//! in the file, not its bytes): what is found must be what copying every byte finds, on a
//! file read as it is, a gzip one (which cannot be read again: every byte is copied),
//! standard input, and with workers.

use std::io::Write;

use serde_json::Value;

use crate::common::*;

/// A client stream of one 20 kB Metadata request in segments of these sizes (the last
/// ones short and long, so that the ring holds copies and spots side by side), then
/// retransmissions over its tail, then an AllocateProducerIds exchange. Returns the
/// capture's bytes and the stream offsets and lengths of the retransmissions planted
/// with other bytes.
fn capture(path: &std::path::Path) -> Vec<(u64, u64)> {
    let mut w = PcapWriter::create(path);
    let mut c = Conn::new("10.0.0.1:40100", "10.0.0.2:9093");
    c.handshake(&mut w);
    let body: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    let big = request(3, 12, 1, true, &body);
    let origin = c.client_seq;
    // segment sizes: long ones, then in the last 4 KiB (what the ring holds) short,
    // long, short, long and a last one
    let tail = [100, 1400, 60, 1400, 700];
    let head = big.len() - tail.iter().sum::<usize>();
    let mut sizes: Vec<usize> = (0..head)
        .step_by(1400)
        .map(|at| (head - at).min(1400))
        .collect();
    sizes.extend(tail);
    let mut starts = Vec::new();
    let mut at = 0;
    for size in &sizes {
        starts.push(at);
        c.send(&mut w, true, &big[at..at + size], *size);
        at += size;
    }
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    let resend = |w: &mut PcapWriter, from: usize, bytes: &[u8]| {
        let seq = origin.wrapping_add(from as u32);
        w.record(&c.packet(true, seq, ack, bytes), 0);
    };
    let n = sizes.len();
    let (last_long, short, long_before) = (starts[n - 2], starts[n - 3], starts[n - 4]);
    let first_short = starts[n - 5];
    // the same bytes again: within a spot, across a copy and a spot, all the ring holds
    resend(&mut w, last_long, &big[last_long..]);
    resend(
        &mut w,
        first_short - 50,
        &big[first_short - 50..first_short + 500],
    );
    resend(&mut w, big.len() - 4096, &big[big.len() - 4096..]);
    let mut planted = Vec::new();
    // other bytes: one in a long segment kept by its spot, one in a short one copied,
    // one across both
    for (from, len, changed) in [
        (last_long, 1000, last_long + 999),
        (short, sizes[n - 3], short + 7),
        (long_before + 1000, 600, short + 30),
    ] {
        let mut bytes = big[from..from + len].to_vec();
        bytes[changed - from] ^= 0xff;
        resend(&mut w, from, &bytes);
        planted.push((from as u64, len as u64));
    }
    let (req, resp) = apid_pair(2, 7, 5000);
    c.send(&mut w, true, &req, 1448);
    c.send(&mut w, false, &resp, 1448);
    c.close(&mut w);
    w.finish();
    planted
}

/// The report's `tcp_overlap_conflict` diagnostics, as (offset, bytes), and whether the
/// exchange after them came out whole.
fn conflicts(report: &Value) -> (Vec<(u64, u64)>, bool) {
    let found = report["diagnostics"]
        .as_array()
        .expect("diagnostics listed")
        .iter()
        .filter(|d| d["kind"] == "tcp_overlap_conflict")
        .map(|d| {
            let facts = &d["facts"];
            let int = |name: &str| facts[name].as_u64().unwrap_or_else(|| panic!("{d}"));
            (int("offset"), int("bytes"))
        })
        .collect();
    let whole = report["exchanges"][0]["response"]["producer_id_start"] == 5000;
    (found, whole)
}

#[test]
fn retransmissions_are_compared_with_the_bytes_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("retransmitted.pcap");
    let planted = capture(&path);
    let plain = path.to_str().unwrap();
    let read_again = report(&[plain]);
    let (found, whole) = conflicts(&read_again);
    assert_eq!(found, planted, "{}", read_again["diagnostics"]);
    assert!(whole, "{}", read_again["exchanges"]);
    assert!(!kinds(&read_again).contains(&"tcp_overlap_unread".to_owned()));

    // gzip: no spots, every byte copied; the same findings
    let gz = dir.path().join("retransmitted.pcap.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(&path).unwrap()).unwrap();
    enc.finish().unwrap();
    let copied = report(&[gz.to_str().unwrap()]);
    assert_eq!(conflicts(&copied), (planted.clone(), true));

    // standard input, and workers (which read the file again from their threads)
    let stdin = pidshark()
        .arg("-")
        .pipe_stdin(&path)
        .unwrap()
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let stdin: Value = serde_json::from_slice(&stdin).unwrap();
    assert_eq!(conflicts(&stdin), (planted.clone(), true));
    let workers = report(&[plain, "--threads", "2"]);
    assert_eq!(conflicts(&workers), (planted.clone(), true));
    #[cfg(unix)]
    {
        // a named pipe (as `<(zcat capture.pcap.gz)` gives): not read again, so copied
        let fifo = dir.path().join("retransmitted.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let bytes = std::fs::read(&path).unwrap();
            let fifo_path = fifo.clone();
            let writer = std::thread::spawn(move || std::fs::write(fifo_path, bytes));
            let piped = report(&[fifo.to_str().unwrap()]);
            writer.join().unwrap().unwrap();
            assert_eq!(conflicts(&piped), (planted.clone(), true));
            assert!(!kinds(&piped).contains(&"tcp_overlap_unread".to_owned()));
        }
    }

    // pcapng (its packets at other offsets in their blocks), and the second of two files
    // (spots in capture 1)
    let ng = dir.path().join("retransmitted.pcapng");
    pcapng_of(&path, &ng);
    let ng = report(&[ng.to_str().unwrap()]);
    assert_eq!(conflicts(&ng).0, planted, "{}", ng["diagnostics"]);
    let other = dir.path().join("other.pcap");
    let mut w = PcapWriter::create(&other);
    clean_exchange(&mut w);
    w.finish();
    let second = report(&[other.to_str().unwrap(), plain]);
    assert_eq!(conflicts(&second).0, planted, "{}", second["diagnostics"]);
    assert!(!kinds(&second).contains(&"tcp_overlap_unread".to_owned()));
}

/// The little-endian microsecond pcap at `pcap` written again as pcapng at `ng`: one
/// Ethernet interface, an enhanced packet block a record, each with a comment option
/// before its end so that packets lie at other offsets than in the pcap.
fn pcapng_of(pcap: &std::path::Path, ng: &std::path::Path) {
    let (_, records) = pcap_records(pcap);
    let blocks: Vec<Vec<u8>> = records.iter().map(|(head, data)| epb(head, data)).collect();
    pcapng(ng, &blocks);
}

/// An enhanced packet block on interface 0 of one pcap record, its time kept, with a
/// comment option after the packet.
fn epb(head: &[u8; 16], data: &[u8]) -> Vec<u8> {
    let u32_at = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().unwrap());
    let micros = u64::from(u32_at(0)) * 1_000_000 + u64::from(u32_at(4));
    let padded = data.len().div_ceil(4) * 4;
    let comment = b"resent";
    let option = 4 + comment.len().div_ceil(4) * 4 + 4; // the comment, then opt_endofopt
    let len = (32 + padded + option) as u32;
    let mut out = Vec::new();
    for v in [6, len, 0, (micros >> 32) as u32, micros as u32] {
        out.extend(v.to_le_bytes());
    }
    out.extend((data.len() as u32).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out.extend(data);
    out.resize(out.len() + padded - data.len(), 0);
    out.extend(1u16.to_le_bytes());
    out.extend((comment.len() as u16).to_le_bytes());
    out.extend(comment);
    out.resize(out.len() + comment.len().div_ceil(4) * 4 - comment.len(), 0);
    out.extend([0u8; 4]);
    out.extend(len.to_le_bytes());
    out
}
