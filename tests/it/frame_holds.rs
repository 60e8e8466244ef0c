//! `--frame N` says what frame N is when it is no AllocateProducerIds message
//! (`filters.frame_holds`, and `--format tree`'s line when it draws nothing), checked
//! against Wireshark's reading of the same frame where there is one.

use std::process::Command;

use etherparse::PacketBuilder;
use serde_json::Value;

use crate::common::{have_program, pidshark, report, request, Conn, PcapWriter};

const CONTROLLER_KILL: &str = "fixtures/kafka-real/3.9.1-controller-kill.pcap.gz";
const TLS: &str = "fixtures/noise-real/tls-openssl-9093.pcap";
const POSTGRESQL: &str = "fixtures/noise-real/postgresql.pcap.gz";

/// `filters.frame_holds` of `--frame N` on `capture`, and the tree's first line.
fn frame_holds(capture: &str, frame: u64) -> (String, String) {
    let n = frame.to_string();
    let report = report(&[capture, "--frame", &n]);
    let holds = report["filters"]["frame_holds"]
        .as_str()
        .unwrap_or_else(|| panic!("no frame_holds: {}", report["filters"]))
        .to_owned();
    let tree = pidshark()
        .args([capture, "--format", "tree", "--frame", &n])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let first = String::from_utf8(tree)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    (holds, first)
}

/// tshark's fields of frame `frame` (its TCP ports read first, the lower one decoded as
/// Kafka, as in `tshark -d tcp.port==P,kafka`). Only the frames up to it are read.
fn tshark_fields(capture: &str, frame: u64, fields: &[&str]) -> Vec<String> {
    let run = |decode: Option<u16>, fields: &[&str]| {
        let mut cmd = Command::new("tshark");
        cmd.args(["-r", capture, "-n", "-c", &frame.to_string()]);
        if let Some(port) = decode {
            cmd.args(["-d", &format!("tcp.port=={port},kafka")]);
        }
        cmd.args(["-Y", &format!("frame.number=={frame}"), "-T", "fields"]);
        for f in fields {
            cmd.args(["-e", f]);
        }
        let out = cmd.output().unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .split('\t')
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    let ports = run(None, &["tcp.srcport", "tcp.dstport"]);
    let server = ports.iter().map(|p| p.parse::<u16>().unwrap()).min();
    run(server, fields)
}

fn have_tshark() -> bool {
    have_program(
        "tshark",
        "checking --frame against Wireshark",
        "apt-get install tshark",
    )
}

#[test]
fn frame_on_another_kafka_message_names_it_as_wireshark_does() {
    if !have_tshark() {
        return;
    }
    // ApiVersions request and response, Fetch request and response (Wireshark's reading)
    for frame in [31, 37, 39, 42] {
        let (holds, tree) = frame_holds(CONTROLLER_KILL, frame);
        let theirs = tshark_fields(
            CONTROLLER_KILL,
            frame,
            &["kafka.api_key", "kafka.correlation_id", "tcp.stream"],
        );
        let [key, corr, stream] = &theirs[..] else {
            panic!("tshark: {theirs:?}");
        };
        assert!(holds.starts_with(&format!("frame {frame} is a")), "{holds}");
        assert!(
            holds.contains(&format!("(api key {key}, v")),
            "{holds} against tshark's api key {key}"
        );
        assert!(
            holds.contains(&format!("correlation id {corr})")),
            "{holds} against tshark's correlation id {corr}"
        );
        assert!(
            holds.ends_with(&format!("on connection {stream}, not AllocateProducerIds")),
            "{holds} against tshark's tcp.stream {stream}"
        );
        // the tree draws a message pidshark reads (the small Fetch request), and says what
        // any other is, as the report does
        match tree.strip_prefix("== ") {
            Some(heading) => {
                let api = holds
                    .split(" is a ")
                    .nth(1)
                    .unwrap()
                    .split(" (")
                    .next()
                    .unwrap();
                assert!(heading.starts_with(api), "{heading} / {holds}");
                assert!(
                    heading.contains(&format!(" · connection {stream} · ")),
                    "{heading}"
                );
                assert!(
                    heading.contains(&format!(" · correlation id {corr} · ")),
                    "{heading}"
                );
            }
            None => assert_eq!(tree, holds, "the tree says the same"),
        }
    }
    let (holds, _) = frame_holds(CONTROLLER_KILL, 39);
    assert_eq!(
        holds,
        "frame 39 is a Fetch request (api key 1, v17, correlation id 14) on connection 10, not AllocateProducerIds"
    );
}

#[test]
fn frame_without_kafka_says_what_tcp_it_is() {
    if !have_tshark() {
        return;
    }
    for (capture, frame, reading) in [
        // a SYN of a connection that never carried a byte
        (CONTROLLER_KILL, 5, ")"),
        // a ClientHello
        (TLS, 4, ", TLS: encrypted, not read)"),
        // an ACK on a connection read as Kafka long before
        (CONTROLLER_KILL, 60, ", read as Kafka)"),
        // a PostgreSQL query: the connection is given up at this frame
        (
            POSTGRESQL,
            4,
            ", not read as Kafka: see its not_kafka diagnostic)",
        ),
    ] {
        let (holds, tree) = frame_holds(capture, frame);
        assert_eq!(tree, holds);
        let t = tshark_fields(
            capture,
            frame,
            &[
                "ip.src",
                "tcp.srcport",
                "ip.dst",
                "tcp.dstport",
                "tcp.len",
                "tcp.stream",
            ],
        );
        let [src, sport, dst, dport, len, stream] = &t[..] else {
            panic!("tshark: {t:?}");
        };
        let bytes = match len.as_str() {
            "0" => "no payload".to_owned(),
            n => format!("{n} bytes of payload"),
        };
        assert_eq!(
            holds,
            format!(
                "frame {frame} is TCP {src}:{sport} -> {dst}:{dport} with {bytes} and no Kafka message in it (connection {stream}{reading}"
            )
        );
    }
}

#[test]
fn frame_past_the_last_says_how_many_there_are() {
    let report = report(&[CONTROLLER_KILL]);
    let frames = report["summary"]["packets"].as_u64().unwrap();
    let (holds, tree) = frame_holds(CONTROLLER_KILL, frames + 1);
    assert_eq!(
        holds,
        format!(
            "the capture has {frames} frames; there is no frame {}",
            frames + 1
        )
    );
    assert_eq!(tree, holds);
}

#[test]
fn frame_on_an_allocate_producer_ids_message_is_drawn() {
    let report: Value = report(&[CONTROLLER_KILL]);
    let ex = &report["exchanges"][0];
    let (frame, connection, corr) = (
        ex["request"]["frame"].as_u64().unwrap(),
        &ex["connection"],
        &ex["correlation_id"],
    );
    let (holds, tree) = frame_holds(CONTROLLER_KILL, frame);
    assert_eq!(
        holds,
        format!(
            "frame {frame} is an AllocateProducerIds request (api key 67, v0, correlation id {corr}) on connection {connection}"
        )
    );
    assert!(
        tree.starts_with(&format!(
            "== AllocateProducerIds request · connection {connection} · "
        )),
        "{tree}"
    );
}

/// A capture of a UDP datagram, an ARP request and a Kafka request cut into four segments.
fn mixed_capture(path: &std::path::Path) {
    let mut w = PcapWriter::create(path);
    let mut udp = Vec::new();
    PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 53], 64)
        .udp(40000, 53)
        .write(&mut udp, b"query")
        .unwrap();
    w.record(&udp, 0);
    let mut arp = vec![0xff; 6];
    arp.extend([1; 6]);
    arp.extend([0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    arp.extend([1; 6]);
    arp.extend([10, 0, 0, 1]);
    arp.extend([0; 6]);
    arp.extend([10, 0, 0, 2]);
    w.record(&arp, 0);
    let mut c = Conn::new("10.0.0.1:40001", "10.0.0.2:9092");
    c.handshake(&mut w); // frames 3, 4
                         // Metadata v12: 300 bytes of body, in segments of 100 (frames 5-8)
    let metadata = request(3, 12, 1, true, &[0; 300]);
    c.send(&mut w, true, &metadata, 100);
    // three requests more prove the connection Kafka (one alone ends it unproven)
    for corr in 2..=4 {
        c.send(&mut w, true, &request(3, 12, corr, true, &[0; 4]), 100);
    }
    c.close(&mut w);
    w.finish();
}

#[test]
fn frame_not_tcp_or_inside_a_message_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.pcap");
    mixed_capture(&path);
    let path = path.to_str().unwrap();
    let holds = |frame| frame_holds(path, frame).0;
    assert_eq!(holds(1), "frame 1 is not TCP (UDP)");
    assert_eq!(holds(2), "frame 2 is not TCP (ARP)");
    let spans = |part: &str, frame: u64| {
        format!(
            "frame {frame} holds {part}a Metadata request (api key 3, v12, correlation id 1, frames 5-8) on connection 0, not AllocateProducerIds"
        )
    };
    assert_eq!(holds(5), spans("the start of ", 5));
    assert_eq!(holds(6), spans("part of ", 6));
    assert_eq!(holds(8), spans("the end of ", 8));
}
