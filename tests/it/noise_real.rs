//! Noise must stay noise, from real programs (issue 12): `fixtures/noise-real/`, made by
//! `scripts/make-noise-fixtures.py`, holds loopback captures of real ZooKeeper, PostgreSQL,
//! OpenSSL and nghttp2 servers and clients (and Python sockets exchanging random
//! int32-length-prefixed messages), some on Kafka ports, two picked up mid-stream. None is
//! Kafka: each is checked as `noise.rs`'s `assert_no_kafka` checks its synthetic captures
//! (no exchange, no Kafka frame or connection, every connection given up out loud).
//!
//! Every fixture whose check fails must be listed in [`KNOWN_FAILURES`], and every listed
//! one must fail, so the test passes today, fails on any other difference, and fails when
//! a known failure is fixed (remove it from the list then). What a fixture claims to hold
//! (its connections, on its port, with or without their handshakes) is checked apart and
//! has no exceptions, so an empty or wrong capture cannot pass.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{fixture, report};

/// One capture in `fixtures/noise-real/`.
struct Noise {
    /// The file, under `fixtures/noise-real/`.
    file: &'static str,
    /// The server's port: every connection in the capture is to it.
    port: u16,
    /// The TCP connections the script opened while capturing (the fewest the capture holds).
    connections: u64,
    /// Whether every connection was open before tcpdump started (no handshake captured).
    midstream: bool,
    /// Connections that are TLS, by Wireshark (`tshark -d tcp.port==P,tls -Y tls`): each
    /// is given up as `tls_encrypted`, the others as `not_kafka`.
    tls: u64,
}

const FIXTURES: [Noise; 9] = [
    // 12 zkCli sessions and two four-letter-word connections
    Noise {
        file: "zookeeper-3.8.4.pcap",
        port: 2181,
        connections: 14,
        midstream: false,
        tls: 0,
    },
    Noise {
        file: "zookeeper-3.9.3-port9092.pcap",
        port: 9092,
        connections: 14,
        midstream: false,
        tls: 0,
    },
    // three busy zkCli sessions
    Noise {
        file: "zookeeper-3.8.4-midstream.pcap",
        port: 2181,
        connections: 3,
        midstream: true,
        tls: 0,
    },
    // nine sessions of one request each (kazoo, the Java client API, zkCli one-shot)
    Noise {
        file: ZK_SHORT,
        port: 2181,
        connections: 9,
        midstream: false,
        tls: 0,
    },
    // 11 psql connections (one of them a CancelRequest), 2 × 3 of pgbench's
    Noise {
        file: "postgresql.pcap.gz",
        port: 5432,
        connections: 17,
        midstream: false,
        // psql's sslmode=prefer (the default) and =require, and pgbench's: after the
        // SSLRequest, TLS
        tls: 8,
    },
    // two pgbench clients
    Noise {
        file: "postgresql-midstream.pcap",
        port: 5432,
        connections: 2,
        midstream: true,
        // pgbench over TLS: application data records
        tls: 2,
    },
    // eight openssl s_client connections
    Noise {
        file: "tls-openssl-9093.pcap",
        port: 9093,
        connections: 8,
        midstream: false,
        tls: 8,
    },
    // six nghttp / curl connections and two of h2load's
    Noise {
        file: "http2-nghttp2-9092.pcap.gz",
        port: 9092,
        connections: 8,
        midstream: false,
        tls: 0,
    },
    Noise {
        file: "random-length-prefixed-9092.pcap",
        port: 9092,
        connections: 4,
        midstream: false,
        tls: 0,
    },
];

/// Short ZooKeeper sessions (connect, one request, close or exit) by real clients.
const ZK_SHORT: &str = "zookeeper-3.8.4-short.pcap";

/// Fixtures pidshark wrongly reads as Kafka today: (file, why). None: every real-program
/// session here is given up, ZooKeeper's ConnectRequest (a Produce v0 head) and the long
/// PostgreSQL StartupMessages (Metadata v0 heads) included.
const KNOWN_FAILURES: &[(&str, &str)] = &[];

fn noise_report(n: &Noise) -> Value {
    let path = fixture(&format!("noise-real/{}", n.file));
    report(&[path.to_str().unwrap()])
}

/// What `noise.rs`'s `assert_no_kafka` asserts, as lines (none when the capture is noise).
fn kafka_found(report: &Value) -> Vec<String> {
    let s = &report["summary"];
    let mut out = Vec::new();
    for key in ["kafka_connections", "kafka_requests", "kafka_responses"] {
        if s[key] != 0 {
            out.push(format!("{key} {}", s[key]));
        }
    }
    let exchanges = report["exchanges"].as_array().map_or(0, Vec::len);
    if exchanges != 0 {
        out.push(format!("{exchanges} exchanges"));
    }
    let given_up =
        s["not_kafka_connections"].as_u64().unwrap() + s["encrypted_connections"].as_u64().unwrap();
    if Some(given_up) != s["tcp_connections"].as_u64() {
        out.push(format!(
            "not_kafka_connections {} and encrypted_connections {} of tcp_connections {}: not every connection given up out loud",
            s["not_kafka_connections"], s["encrypted_connections"], s["tcp_connections"]
        ));
    }
    if !out.is_empty() {
        out.push(format!("api_keys {}", s["api_keys"]));
    }
    out
}

#[test]
fn real_programs_noise_is_not_kafka() {
    let mut failing = BTreeMap::new();
    for n in &FIXTURES {
        let found = kafka_found(&noise_report(n));
        if !found.is_empty() {
            failing.insert(n.file, found.join("; "));
        }
    }
    let known: BTreeMap<&str, &str> = KNOWN_FAILURES.iter().copied().collect();
    for (file, why) in &failing {
        assert!(
            known.contains_key(file),
            "{file} is read as Kafka: {why} (a known failure? list it in KNOWN_FAILURES)"
        );
    }
    for (file, reason) in &known {
        assert!(
            failing.contains_key(file),
            "{file} is no longer read as Kafka ({reason}): remove it from KNOWN_FAILURES"
        );
    }
}

/// Every session of `ZK_SHORT`, those that send `create` and end without closeSession
/// (kazoo exiting, zkCli's one-shot `create`) too, is refuted by its first answer: the
/// ConnectRequest reads as a Produce v0 request sent with acks 0 (its zeros), which Kafka
/// never answers, and the server answers it. (Before Produce was decoded, two of them
/// passed every check and ended unproven.)
#[test]
fn short_zookeeper_sessions_are_refuted_by_the_answer_to_their_connect_request() {
    let report = noise_report(FIXTURES.iter().find(|n| n.file == ZK_SHORT).unwrap());
    let reasons: Vec<(&str, &str)> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "not_kafka")
        .map(|d| {
            let reason = d["facts"]["reason"].as_str().unwrap();
            (reason, d["message"].as_str().unwrap())
        })
        .collect();
    assert_eq!(reasons.len(), 9, "{reasons:#?}");
    for (reason, message) in &reasons {
        assert_eq!(*reason, "trial_answer", "{message}");
        assert!(message.contains("run again with --port 2181"), "{message}");
    }
}

#[test]
fn real_programs_noise_fixtures_hold_what_they_claim() {
    for n in &FIXTURES {
        let report = noise_report(n);
        let s = &report["summary"];
        let what = n.file;
        let tcp = s["tcp_connections"].as_u64().unwrap();
        assert!(
            tcp >= n.connections,
            "{what}: {tcp} TCP connections, the script made {}",
            n.connections
        );
        assert!(
            s["packets"].as_u64().unwrap() >= 10 * n.connections,
            "{what}: {}",
            s["packets"]
        );
        // every connection is to the server's port
        let given_up: Vec<&str> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"] == "not_kafka" || d["kind"] == "tls_encrypted")
            .map(|d| d["message"].as_str().unwrap())
            .collect();
        let port = format!("127.0.0.1:{}", n.port);
        for m in &given_up {
            assert!(
                m.contains(&format!("{port} ")),
                "{what}: not on port {}: {m}",
                n.port
            );
        }
        // the TLS ones are named, and only those
        assert_eq!(s["encrypted_connections"], n.tls, "{what}");
        assert_eq!(
            s["diagnostics"]["tls_encrypted"].as_u64().unwrap_or(0),
            n.tls,
            "{what}"
        );
        // handshakes captured, or every connection picked up mid-stream
        let midstream = s["diagnostics"]["midstream_start"].as_u64().unwrap_or(0);
        let want = if n.midstream { tcp } else { 0 };
        assert_eq!(midstream, want, "{what}: connections already open");
    }
}

#[test]
fn every_noise_real_capture_is_checked() {
    let dir = fixture("noise-real");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".pcap") || f.ends_with(".pcap.gz"))
        .collect();
    files.sort();
    let mut listed: Vec<String> = FIXTURES.iter().map(|n| n.file.to_owned()).collect();
    listed.sort();
    assert_eq!(files, listed, "fixtures/noise-real/ against FIXTURES");
    for (file, _) in KNOWN_FAILURES {
        assert!(listed.iter().any(|f| f == file), "{file} is not a fixture");
    }
}
