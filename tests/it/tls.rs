//! TLS is named, not misread (issue 24): a connection whose bytes are TLS is given up as
//! `tls_encrypted` whatever its port, `--port` included, and counted in
//! `summary.encrypted_connections`; `not_kafka` advises `--port` only for bytes that did
//! look like Kafka frames.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

use crate::common::{apid_pair, fixture, have_program, report, Conn, PcapWriter};

fn diagnostics<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == kind)
        .collect()
}

fn messages(report: &Value) -> Vec<&str> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect()
}

/// `openssl s_server` on 9093 and eight `s_client`s (TLS 1.2 and 1.3, one with SNI):
/// eight encrypted connections, with and without `--port 9093`, and nothing read as Kafka.
#[test]
fn a_tls_listener_is_named_encrypted_with_or_without_its_port() {
    let path = fixture("noise-real/tls-openssl-9093.pcap");
    let path = path.to_str().unwrap();
    for extra in [&[][..], &["--port", "9093"]] {
        let mut args = vec![path];
        args.extend(extra);
        let report = report(&args);
        let s = &report["summary"];
        let what = format!("{args:?}");
        assert_eq!(s["tcp_connections"], 8, "{what}");
        assert_eq!(s["encrypted_connections"], 8, "{what}");
        assert_eq!(s["not_kafka_connections"], 0, "{what}");
        assert_eq!(s["kafka_connections"], 0, "{what}");
        assert_eq!(s["kafka_requests"], 0, "{what}");
        assert_eq!(s["kafka_responses"], 0, "{what}");
        let kinds: BTreeSet<&str> = s["diagnostics"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(kinds, BTreeSet::from(["tls_encrypted"]), "{what}");
        let tls = diagnostics(&report, "tls_encrypted");
        assert_eq!(tls.len(), 8, "{what}");
        let connections: BTreeSet<u64> = tls
            .iter()
            .map(|d| d["connection"].as_u64().unwrap())
            .collect();
        assert_eq!(connections.len(), 8, "{what}: one per connection");
        for d in &tls {
            assert_eq!(d["severity"], "warning");
            assert_eq!(d["facts"]["port"], 9093);
            assert_eq!(d["facts"]["seen"], "client_hello");
            assert!(d["facts"]["server"].as_str().unwrap().ends_with(":9093"));
            let m = d["message"].as_str().unwrap();
            assert!(
                m.contains("TLS on port 9093 (ClientHello seen") && m.contains("encrypted"),
                "{m}"
            );
        }
        // the s_client run with -servername
        let names: Vec<&str> = tls
            .iter()
            .filter_map(|d| d["facts"]["server_name"].as_str())
            .collect();
        assert_eq!(names, ["broker-1.kafka.example"], "{what}");
        for m in messages(&report) {
            assert!(
                !m.contains("--port"),
                "{what}: advice that cannot work: {m}"
            );
        }
    }
}

/// The connections named TLS are the ones Wireshark decodes as TLS on the server's
/// port, in every real-program capture (PostgreSQL's TLS after its SSLRequest, and
/// pgbench's picked up mid-stream, included).
#[test]
fn tls_connections_are_those_wireshark_reads_as_tls() {
    if !have_program("tshark", "the TLS comparison", "apt-get install tshark") {
        return;
    }
    let files = [
        ("zookeeper-3.8.4.pcap", 2181),
        ("postgresql.pcap.gz", 5432),
        ("postgresql-midstream.pcap", 5432),
        ("tls-openssl-9093.pcap", 9093),
        ("http2-nghttp2-9092.pcap.gz", 9092),
        ("random-length-prefixed-9092.pcap", 9092),
    ];
    for (file, port) in files {
        let path = fixture(&format!("noise-real/{file}"));
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args(["-d", &format!("tcp.port=={port},tls")])
            .args(["-Y", "tls.record.content_type"])
            .args(["-T", "fields", "-e", "tcp.stream"])
            .output()
            .unwrap();
        assert!(out.status.success(), "tshark on {file}");
        let theirs: BTreeSet<u64> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect();
        let report = report(&[path.to_str().unwrap()]);
        let ours: BTreeSet<u64> = diagnostics(&report, "tls_encrypted")
            .iter()
            .map(|d| d["connection"].as_u64().unwrap())
            .collect();
        assert_eq!(ours, theirs, "{file}: TLS connections against tshark's");
        assert_eq!(
            report["summary"]["encrypted_connections"].as_u64(),
            Some(theirs.len() as u64),
            "{file}"
        );
    }
}

/// TLS application data records, both ways, `records` of them each of `len` bytes.
fn application_data(w: &mut PcapWriter, c: &mut Conn, records: u8, len: u16) {
    for i in 0..records {
        let mut record = vec![0x17, 0x03, 0x03];
        record.extend(len.to_be_bytes());
        record.extend((0..len).map(|b| (b as u8).wrapping_mul(31).wrapping_add(i)));
        c.send(w, i % 2 == 0, &record, 1448);
    }
}

fn capture(build: impl FnOnce(&mut PcapWriter), extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tls.pcap");
    let mut w = PcapWriter::create(&path);
    build(&mut w);
    w.finish();
    let mut args = vec![path.to_str().unwrap()];
    args.extend(extra);
    report(&args)
}

/// A TLS connection picked up after its handshake, on a Kafka port, beside a Kafka
/// connection: the first is named by its application data records (with `--port` too),
/// the second is read as before.
#[test]
fn tls_picked_up_mid_stream_is_named_and_kafka_beside_it_is_read() {
    let build = |w: &mut PcapWriter| {
        let mut tls = Conn::new("10.0.0.1:51000", "10.0.0.2:9093");
        application_data(w, &mut tls, 6, 700);
        tls.close(w);
        let mut kafka = Conn::new("10.0.0.1:51001", "10.0.0.3:9093");
        kafka.handshake(w);
        let (req, resp) = apid_pair(7, 1, 0);
        kafka.send(w, true, &req, 1448);
        kafka.send(w, false, &resp, 1448);
        kafka.close(w);
    };
    for extra in [&[][..], &["--port", "9093"]] {
        let report = capture(build, extra);
        let s = &report["summary"];
        assert_eq!(s["encrypted_connections"], 1, "{extra:?}");
        assert_eq!(s["kafka_connections"], 1, "{extra:?}");
        assert_eq!(s["exchanges"]["complete"], 1, "{extra:?}");
        let tls = diagnostics(&report, "tls_encrypted");
        assert_eq!(tls.len(), 1);
        assert_eq!(tls[0]["connection"], 0);
        assert_eq!(tls[0]["facts"]["seen"], "application_data");
        assert_eq!(tls[0]["facts"]["client"], "10.0.0.1:51000");
        assert_eq!(tls[0]["facts"]["server"], "10.0.0.2:9093");
        assert!(!s["diagnostics"]
            .as_object()
            .unwrap()
            .contains_key("kafka_frame_too_large"));
    }
}

/// A capture of only a TLS server's side: its ServerHello names it, and the client is the
/// side it answers.
#[test]
fn a_server_hello_alone_names_tls() {
    let report = capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:52000", "10.0.0.2:8443");
            c.handshake(w);
            let mut hello = vec![
                0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, 0x00, 0x00, 0x76, 0x03, 0x03,
            ];
            hello.extend([0x33; 116]); // to the record's length, 0x7a
            c.send(w, false, &hello, 1448);
            c.close(w);
        },
        &[],
    );
    let tls = diagnostics(&report, "tls_encrypted");
    assert_eq!(tls.len(), 1, "{:?}", report["diagnostics"]);
    assert_eq!(tls[0]["facts"]["seen"], "server_hello");
    assert_eq!(tls[0]["facts"]["client"], "10.0.0.1:52000");
    assert_eq!(tls[0]["facts"]["port"], 8443);
    assert_eq!(report["summary"]["not_kafka_connections"], 0);
}

/// `not_kafka` names `--port` only where the bytes looked like Kafka frames, with what
/// would have to be true: not for a server that speaks first in text (SMTP's banner), nor
/// for a client whose first message is no Kafka request (PostgreSQL's StartupMessage),
/// but for a connection whose first frames read as Kafka before one refuted it.
#[test]
fn not_kafka_advises_port_only_for_bytes_that_looked_like_kafka() {
    let smtp = capture(
        |w| {
            let mut c = Conn::new("10.0.0.1:53000", "10.0.0.2:2525");
            c.handshake(w);
            c.send(w, false, b"220 mail.example ESMTP ready\r\n", 1448);
            c.send(w, true, b"EHLO client\r\n", 1448);
            c.close(w);
        },
        &[],
    );
    let not_kafka = diagnostics(&smtp, "not_kafka");
    assert_eq!(not_kafka.len(), 1);
    assert_eq!(not_kafka[0]["facts"]["reason"], "server_spoke_first");
    let m = not_kafka[0]["message"].as_str().unwrap();
    assert!(!m.contains("--port"), "{m}");

    let pg = report(&[fixture("noise-real/postgresql.pcap.gz").to_str().unwrap()]);
    let mut advised = 0;
    for d in diagnostics(&pg, "not_kafka") {
        let m = d["message"].as_str().unwrap();
        let looked_like_kafka = d["facts"]["reason"].as_str().unwrap().starts_with("trial_");
        assert_eq!(m.contains("--port"), looked_like_kafka, "{m}");
        if looked_like_kafka {
            assert!(
                m.contains("if it is Kafka and") && m.ends_with("--port 5432"),
                "{m}"
            );
            advised += 1;
        }
    }
    assert!(advised > 0, "the fixture has connections refuted on trial");
}

/// Issue 38, problem 4: what TLS hides is said for what was read. Beside plaintext
/// AllocateProducerIds exchanges, the verdict's `encrypted` limit says the grants to
/// producers are not checked (none read at all, or not those over TLS), and its advice no
/// longer asks for AllocateProducerIds in plaintext, which was read; without any, it does.
#[test]
fn tls_beside_plaintext_blocks_says_the_grants_are_not_checked() {
    let tls = fixture("noise-real/tls-openssl-9093.pcap");
    let tls = tls.to_str().unwrap();
    let encrypted = |args: &[&str]| -> (String, String, String) {
        let r = report(args);
        let limit = r["verdict"]["limits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["kind"] == "encrypted")
            .cloned()
            .unwrap_or_else(|| panic!("no encrypted limit: {}", r["verdict"]));
        (
            limit["text"].as_str().unwrap().to_owned(),
            limit["advice"].as_str().unwrap().to_owned(),
            r["verdict"]["headline"].as_str().unwrap().to_owned(),
        )
    };
    let healthy = fixture("analysis/healthy.pcap");
    let (text, advice, headline) = encrypted(&[healthy.to_str().unwrap(), tls]);
    assert!(
        text.ends_with(
            "encrypted (TLS), which cannot be read: no InitProducerId exchange was read, so no grant to a producer is checked"
        ),
        "{text}"
    );
    assert!(headline.contains(&text), "{headline}");
    assert!(
        advice.contains("the AllocateProducerIds exchanges were read in plaintext")
            && !advice.contains("capture where AllocateProducerIds travels"),
        "{advice}"
    );
    let producers = fixture("producers/prefetch-tail.pcap");
    let (text, _, _) = encrypted(&[producers.to_str().unwrap(), tls]);
    assert!(
        text.ends_with(": grants to producers over them are not checked"),
        "{text}"
    );
    let (_, advice, _) = encrypted(&[tls]);
    assert!(
        advice.contains("capture where AllocateProducerIds travels in plaintext"),
        "{advice}"
    );
}
