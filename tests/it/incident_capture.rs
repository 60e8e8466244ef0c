//! Incident captures (issue 12): rotated files given out of time order, deep VLAN stacks,
//! TCP in IP fragments, and TCP headers cut inside their options. Each exchange that can
//! be recovered is; what cannot is said.

use std::path::Path;

use serde_json::Value;

use crate::common::*;

const START: u64 = 1_700_000_000_000_000_000;

fn diagnostics_of<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == kind)
        .collect()
}

fn path_str(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// One connection's packets, each passed through `shape` (which may turn one packet into
/// several, or none) before it is written: handshake, the exchanges, close.
fn write_exchanges(
    w: &mut PcapWriter,
    c: &mut Conn,
    pairs: &[(Vec<u8>, Vec<u8>)],
    shape: &dyn Fn(Vec<u8>, bool) -> Vec<Vec<u8>>,
) {
    let syn = Flags {
        syn: true,
        ..Flags::default()
    };
    let synack = Flags {
        syn: true,
        ack: true,
        ..Flags::default()
    };
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    let fin = Flags {
        fin: true,
        ack: true,
        ..Flags::default()
    };
    let put = |w: &mut PcapWriter, bytes: Vec<u8>, data: bool| {
        for packet in shape(bytes, data) {
            w.record(&packet, 0);
        }
    };
    put(w, c.packet(true, c.client_seq, syn, &[]), false);
    put(w, c.packet(false, c.server_seq, synack, &[]), false);
    c.client_seq += 1;
    c.server_seq += 1;
    for (req, resp) in pairs {
        put(w, c.packet(true, c.client_seq, ack, req), true);
        c.client_seq += req.len() as u32;
        put(w, c.packet(false, c.server_seq, ack, resp), true);
        c.server_seq += resp.len() as u32;
    }
    put(w, c.packet(true, c.client_seq, fin, &[]), false);
    put(w, c.packet(false, c.server_seq, fin, &[]), false);
}

fn run_one(build: impl FnOnce(&mut PcapWriter)) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("incident.pcap");
    let mut w = PcapWriter::create(&path);
    build(&mut w);
    w.finish();
    report(&[&path_str(&path)])
}

fn assert_complete(report: &Value, expected: &[(i32, i64)]) {
    let ex = report["exchanges"].as_array().unwrap();
    assert_eq!(ex.len(), expected.len(), "{:#?}", report["diagnostics"]);
    for (ex, (corr, start)) in ex.iter().zip(expected) {
        assert_eq!(ex["status"], "complete", "{ex:#}");
        assert_eq!(ex["correlation_id"], *corr);
        assert_eq!(ex["response"]["producer_id_start"], *start);
    }
}

// ---- A: inputs in time order ----------------------------------------------------------

/// A rotated capture: `cap2` holds the start of one connection and its first block,
/// `cap10` (later) the second block and the close; `empty` has no packets.
fn rotated(dir: &Path) -> (String, String, String) {
    let cap2 = dir.join("cap2.pcap");
    let cap10 = dir.join("cap10.pcap");
    let empty = dir.join("empty.pcap");
    let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
    let (req1, resp1) = apid_pair(1, 3, 0);
    let (req2, resp2) = apid_pair(2, 3, 1000);
    let mut w = PcapWriter::create(&cap2);
    c.handshake(&mut w);
    c.send(&mut w, true, &req1, 1000);
    c.send(&mut w, false, &resp1, 1000);
    w.finish();
    let mut w = PcapWriter::create(&cap10);
    w.set_time(START + 60_000_000_000);
    c.send(&mut w, true, &req2, 1000);
    c.send(&mut w, false, &resp2, 1000);
    c.close(&mut w);
    w.finish();
    PcapWriter::create(&empty).finish();
    (path_str(&cap2), path_str(&cap10), path_str(&empty))
}

/// The exchanges without the fields that say which file each packet came from (they
/// follow the order the files were given in).
fn without_origin(report: &Value) -> Value {
    let mut exchanges = report["exchanges"].clone();
    for ex in exchanges.as_array_mut().unwrap() {
        for side in ["request", "response"] {
            let msg = ex[side].as_object_mut().unwrap();
            msg.remove("capture_index");
            msg.remove("capture_frame");
        }
    }
    exchanges
}

#[test]
fn files_given_out_of_time_order_are_read_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let (cap2, cap10, empty) = rotated(dir.path());
    let right = report(&[&cap2, &cap10]);
    // shell-glob order: cap10 before cap2, an empty file first
    let wrong = report(&[&empty, &cap10, &cap2]);
    assert_complete(&wrong, &[(1, 0), (2, 1000)]);
    assert_eq!(without_origin(&wrong), without_origin(&right));
    assert_eq!(
        wrong["producer_id_blocks"]["blocks"],
        right["producer_id_blocks"]["blocks"]
    );
    let kinds = kinds(&wrong);
    assert!(
        !kinds.contains(&"pid_block_regression".to_owned()),
        "{kinds:?}"
    );
    assert!(!kinds.contains(&"midstream_start".to_owned()), "{kinds:?}");
    // captures[] in time order, the file without packets last, whatever the order
    // given; each exchange names the file its packets came from
    let paths: Vec<&str> = wrong["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [cap2.as_str(), cap10.as_str(), empty.as_str()]);
    let ex = wrong["exchanges"].as_array().unwrap();
    assert_eq!(ex[0]["request"]["capture_index"], 0);
    assert_eq!(ex[1]["request"]["capture_index"], 1);
    assert_eq!(ex[1]["request"]["capture_frame"], 1);
    // files that follow one another in time do not overlap
    assert!(!kinds.contains(&"capture_files_overlap".to_owned()));
    assert!(diagnostics_of(&right, "capture_files_overlap").is_empty());
}

#[test]
fn gzip_files_are_ordered_by_their_first_packet_too() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let (cap2, cap10, _) = rotated(dir.path());
    let gz = dir.path().join("cap2.pcap.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&std::fs::read(&cap2).unwrap()).unwrap();
    enc.finish().unwrap();
    let report = report(&[&cap10, &path_str(&gz)]);
    assert_complete(&report, &[(1, 0), (2, 1000)]);
    // the gzip file's first packet is the earlier: first in captures[]
    assert_eq!(report["captures"][0]["path"], path_str(&gz));
    assert_eq!(report["exchanges"][0]["request"]["capture_index"], 0);
}

#[test]
fn overlapping_files_are_merged_and_said_to_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.pcap");
    let b = dir.path().join("b.pcap");
    for (path, port, offset) in [(&a, 40000, 0), (&b, 40001, 250_000)] {
        let mut w = PcapWriter::create(path);
        w.set_time(START + offset);
        let mut c = Conn::new(&format!("10.0.0.1:{port}"), "10.0.0.2:29093");
        let (req, resp) = apid_pair(1, port, i64::from(port - 40000) * 1000);
        c.handshake(&mut w);
        c.send(&mut w, true, &req, 1000);
        c.send(&mut w, false, &resp, 1000);
        c.close(&mut w);
        w.finish();
    }
    let report = report(&[&path_str(&a), &path_str(&b)]);
    assert_complete(&report, &[(1, 0), (1, 1000)]);
    // a's packets every 100 µs from 100 µs, b's from 350 µs: b's request (its 3rd
    // packet, after SYN and SYN-ACK, at 550 µs) comes after a's 5 first packets
    assert_eq!(report["exchanges"][1]["request"]["frame"], 8);
    assert_eq!(report["exchanges"][1]["request"]["capture_frame"], 3);
    let overlap = diagnostics_of(&report, "capture_files_overlap");
    assert_eq!(overlap.len(), 1, "{:#?}", report["diagnostics"]);
    assert_eq!(overlap[0]["severity"], "info");
    let message = overlap[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&path_str(&a)) && message.contains(&path_str(&b)),
        "{message}"
    );
    assert!(message.contains("merged by timestamp"), "{message}");
}

// ---- B: VLAN stacks and IP fragments --------------------------------------------------

/// Inserts `tags` VLAN tags (802.1ad outermost, 802.1Q inside) after the MAC addresses.
fn vlan_tagged(frame: Vec<u8>, tags: usize) -> Vec<u8> {
    let mut out = frame[..12].to_vec();
    for n in 0..tags {
        let tpid: u16 = if n + 1 < tags { 0x88a8 } else { 0x8100 };
        out.extend(tpid.to_be_bytes());
        out.extend((100 + n as u16).to_be_bytes());
    }
    out.extend(&frame[12..]);
    out
}

#[test]
fn four_and_six_vlan_tags_carry_an_exchange() {
    for tags in [4, 6] {
        let report = run_one(|w| {
            let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
            write_exchanges(w, &mut c, &[apid_pair(5, 1, 2000)], &|frame, _| {
                vec![vlan_tagged(frame, tags)]
            });
        });
        assert_complete(&report, &[(5, 2000)]);
        assert_eq!(report["summary"]["tcp_connections"], 1, "{tags} tags");
        assert!(kinds(&report).is_empty(), "{:#?}", report["diagnostics"]);
    }
}

const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;

/// Splits an Ethernet/IPv4 frame into fragments of at most `size` (a multiple of 8)
/// payload bytes each, with identification `id`.
fn ipv4_fragments(frame: &[u8], size: usize, id: u16) -> Vec<Vec<u8>> {
    let head = &frame[..ETH_LEN + IPV4_LEN];
    let payload = &frame[ETH_LEN + IPV4_LEN..];
    let chunks: Vec<&[u8]> = payload.chunks(size).collect();
    chunks
        .iter()
        .enumerate()
        .map(|(idx, chunk)| {
            let mut out = head.to_vec();
            let total = (IPV4_LEN + chunk.len()) as u16;
            out[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&total.to_be_bytes());
            out[ETH_LEN + 4..ETH_LEN + 6].copy_from_slice(&id.to_be_bytes());
            let more = if idx + 1 < chunks.len() { 0x2000 } else { 0 };
            let flags = more | (idx * size / 8) as u16;
            out[ETH_LEN + 6..ETH_LEN + 8].copy_from_slice(&flags.to_be_bytes());
            out[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&[0, 0]); // checksum not checked
            out.extend(*chunk);
            out
        })
        .collect()
}

/// The same for an Ethernet/IPv6 frame without extension headers: a Fragment header
/// (RFC 8200 section 4.5) goes between the IPv6 header and each piece.
fn ipv6_fragments(frame: &[u8], size: usize, id: u32) -> Vec<Vec<u8>> {
    let head = &frame[..ETH_LEN + IPV6_LEN];
    let next_header = head[ETH_LEN + 6];
    let payload = &frame[ETH_LEN + IPV6_LEN..];
    let chunks: Vec<&[u8]> = payload.chunks(size).collect();
    chunks
        .iter()
        .enumerate()
        .map(|(idx, chunk)| {
            let mut out = head.to_vec();
            let len = (8 + chunk.len()) as u16;
            out[ETH_LEN + 4..ETH_LEN + 6].copy_from_slice(&len.to_be_bytes());
            out[ETH_LEN + 6] = 44; // Fragment
            out.extend([next_header, 0]);
            let more = u16::from(idx + 1 < chunks.len());
            out.extend((((idx * size / 8) as u16) << 3 | more).to_be_bytes());
            out.extend(id.to_be_bytes());
            out.extend(*chunk);
            out
        })
        .collect()
}

#[test]
fn exchange_in_ipv4_fragments_in_and_out_of_order_is_complete() {
    let report = run_one(|w| {
        let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
        let id = std::cell::Cell::new(1u16);
        let pairs = [apid_pair(1, 2, 0), apid_pair(2, 2, 1000)];
        write_exchanges(w, &mut c, &pairs, &|frame, data| {
            if !data {
                return vec![frame];
            }
            id.set(id.get() + 1);
            let mut frags = ipv4_fragments(&frame, 16, id.get());
            assert!(frags.len() >= 3);
            if id.get() % 2 == 1 {
                frags.reverse(); // the responses' fragments arrive last first
            }
            frags
        });
    });
    assert_complete(&report, &[(1, 0), (2, 1000)]);
    assert!(kinds(&report).is_empty(), "{:#?}", report["diagnostics"]);
    // a message is completed by the packet that completed its datagram
    let ex = &report["exchanges"][0];
    assert_eq!(ex["request"]["first_frame"], ex["request"]["frame"]);
    assert!(ex["request"]["frame"].as_u64().unwrap() > 3);
}

#[test]
fn exchange_in_ipv6_fragments_is_complete() {
    let report = run_one(|w| {
        let mut c = Conn::new("[fd00::1]:40000", "[fd00::2]:29093");
        write_exchanges(w, &mut c, &[apid_pair(3, 2, 5000)], &|frame, data| {
            if data {
                let mut frags = ipv6_fragments(&frame, 24, 77);
                frags.swap(0, 1);
                frags
            } else {
                vec![frame]
            }
        });
    });
    assert_complete(&report, &[(3, 5000)]);
    assert!(kinds(&report).is_empty(), "{:#?}", report["diagnostics"]);
}

#[test]
fn fragments_never_completed_are_reported() {
    let report = run_one(|w| {
        let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
        let first = std::cell::Cell::new(true);
        let pairs = [apid_pair(1, 2, 0), apid_pair(2, 2, 1000)];
        write_exchanges(w, &mut c, &pairs, &|frame, data| {
            if data && first.replace(false) {
                let mut frags = ipv4_fragments(&frame, 16, 9);
                frags.pop(); // the last fragment of the first request is lost
                frags
            } else {
                vec![frame]
            }
        });
    });
    let dropped = diagnostics_of(&report, "ip_fragments_dropped");
    assert_eq!(dropped.len(), 1, "{:#?}", report["diagnostics"]);
    assert_eq!(dropped[0]["severity"], "warning");
    let message = dropped[0]["message"].as_str().unwrap();
    assert!(message.contains("capture ended"), "{message}");
    assert!(
        message.contains("datagram 9 from 10.0.0.1 to 10.0.0.2"),
        "{message}"
    );
    // the lost request's bytes are a gap; the exchange after it is still found
    assert!(kinds(&report).contains(&"tcp_gap".to_owned()));
    let ex = report["exchanges"].as_array().unwrap();
    assert_eq!(ex.len(), 1, "{ex:#?}");
    assert_eq!(ex[0]["correlation_id"], 2);
    assert_eq!(ex[0]["status"], "complete");
}

// ---- C: TCP options cut by snaplen ----------------------------------------------------

/// A data packet with 12 bytes of TCP options (NOP, NOP, timestamps).
fn with_options(c: &Conn, payload: &[u8]) -> Vec<u8> {
    use etherparse::{PacketBuilder, TcpOptionElement};
    let eth = PacketBuilder::ethernet2([1; 6], [2; 6]);
    let ip = match (c.client, c.server) {
        (std::net::SocketAddr::V4(s), std::net::SocketAddr::V4(d)) => {
            eth.ipv4(s.ip().octets(), d.ip().octets(), 64)
        }
        (std::net::SocketAddr::V6(s), std::net::SocketAddr::V6(d)) => {
            eth.ipv6(s.ip().octets(), d.ip().octets(), 64)
        }
        _ => unreachable!(),
    };
    let tcp = ip
        .tcp(c.client.port(), c.server.port(), c.client_seq, 65535)
        .ack(c.server_seq)
        .options(&[
            TcpOptionElement::Noop,
            TcpOptionElement::Noop,
            TcpOptionElement::Timestamp(1, 2),
        ])
        .unwrap();
    let mut out = Vec::new();
    tcp.write(&mut out, payload).unwrap();
    out
}

fn options_cut_capture(client: &str, server: &str, ip_len: usize) -> (Value, usize) {
    let (req1, resp1) = apid_pair(1, 2, 0);
    let (lost, _) = apid_pair(2, 2, 1000);
    let (req3, resp3) = apid_pair(3, 2, 2000);
    let report = run_one(|w| {
        let mut c = Conn::new(client, server);
        c.handshake(w);
        c.send(w, true, &req1, 1000);
        c.send(w, false, &resp1, 1000);
        // cut 4 bytes into the options: the fixed header and 4 option bytes captured
        let packet = with_options(&c, &lost);
        let kept = ETH_LEN + ip_len + 24;
        w.record(&packet, packet.len() - kept);
        c.client_seq += lost.len() as u32;
        c.send(w, true, &req3, 1000);
        c.send(w, false, &resp3, 1000);
        c.close(w);
        // a connection seen only in one such packet is still a connection
        let other = Conn::new(&client.replace("40000", "40009"), server);
        let packet = with_options(&other, &lost);
        w.record(&packet, packet.len() - kept);
    });
    (report, lost.len())
}

#[test]
fn tcp_options_cut_by_snaplen_still_place_the_segment() {
    for (client, server, ip_len) in [
        ("10.0.0.1:40000", "10.0.0.2:29093", IPV4_LEN),
        ("[fd00::1]:40000", "[fd00::2]:29093", IPV6_LEN),
    ] {
        let (report, lost_len) = options_cut_capture(client, server, ip_len);
        let kinds = kinds(&report);
        assert!(!kinds.contains(&"packet_malformed".to_owned()), "{kinds:?}");
        assert_eq!(report["summary"]["tcp_connections"], 2, "{client}");
        let gaps = diagnostics_of(&report, "tcp_gap");
        assert!(!gaps.is_empty(), "{kinds:?}");
        let gap = gaps[0]["message"].as_str().unwrap();
        assert!(gap.starts_with(&format!("{lost_len} bytes from ")), "{gap}");
        assert_eq!(gaps[0]["frame"], 5, "{gap}"); // known at once, at the cut packet
        let truncated = diagnostics_of(&report, "packet_truncated");
        assert_eq!(truncated.len(), 2, "{kinds:?}");
        assert!(truncated[0]["message"]
            .as_str()
            .unwrap()
            .contains(&format!(" {lost_len} bytes")));
        // the exchange after the gap on the same connection is reported
        let ex = report["exchanges"].as_array().unwrap();
        let found: Vec<i64> = ex
            .iter()
            .map(|e| e["correlation_id"].as_i64().unwrap())
            .collect();
        assert_eq!(found, [1, 3], "{client}: {:#?}", report["diagnostics"]);
        assert!(ex.iter().all(|e| e["status"] == "complete"));
    }
}
