//! Noise must stay noise: the length-prefixed binary protocols that run next to Kafka in real
//! clusters, written byte for byte as their specifications lay them out, with their
//! handshakes captured and picked up mid-stream. None may give an exchange, a Kafka frame
//! or a Kafka connection; each connection is given up out loud (`not_kafka`).

use serde_json::Value;

use crate::common::{report, Conn, PcapWriter};

fn be32(v: i32) -> [u8; 4] {
    v.to_be_bytes()
}

/// An int32 length, then `body` (ZooKeeper's jute framing, like Kafka's).
fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = be32(body.len() as i32).to_vec();
    out.extend(body);
    out
}

/// ZooKeeper 3.8: ConnectRequest / ConnectResponse, then getData, exists and ping with
/// their replies (xid, zxid, err, body). A fresh client's ConnectRequest reads as a
/// Produce v0 header with correlation id 0, and the ConnectResponse as its answer.
fn zookeeper_session(w: &mut PcapWriter, c: &mut Conn, ops: &[i32]) {
    zookeeper_connect(w, c);
    zookeeper_ops(w, c, ops);
}

/// ZooKeeper's ConnectRequest (jute: protocolVersion, lastZxidSeen, timeOut, sessionId,
/// passwd, readOnly) and the server's ConnectResponse.
fn zookeeper_connect(w: &mut PcapWriter, c: &mut Conn) {
    let mut connect = Vec::new();
    connect.extend(be32(0)); // protocolVersion
    connect.extend(0i64.to_be_bytes()); // lastZxidSeen
    connect.extend(be32(30_000)); // timeOut
    connect.extend(0i64.to_be_bytes()); // sessionId
    connect.extend(be32(16));
    connect.extend([0u8; 16]); // passwd
    connect.push(0); // readOnly
    c.send(w, true, &framed(&connect), 1448);
    let mut accept = Vec::new();
    accept.extend(be32(0));
    accept.extend(be32(30_000));
    accept.extend(0x0100_0000_0000_0001i64.to_be_bytes());
    accept.extend(be32(16));
    accept.extend([7u8; 16]);
    accept.push(0);
    c.send(w, false, &framed(&accept), 1448);
}

/// Requests (RequestHeader: xid, type; then the path and watch flag, none for ping) and
/// their replies (ReplyHeader: xid, zxid, err; then getData's data and Stat).
fn zookeeper_ops(w: &mut PcapWriter, c: &mut Conn, ops: &[i32]) {
    for (i, op) in ops.iter().enumerate() {
        let xid = if *op == 11 { -2 } else { i as i32 + 1 };
        let path = b"/brokers/ids/1";
        let mut req = Vec::new();
        req.extend(be32(xid));
        req.extend(be32(*op));
        if *op != 11 {
            req.extend(be32(path.len() as i32));
            req.extend(path);
            req.push(1); // watch
        }
        c.send(w, true, &framed(&req), 1448);
        let mut reply = Vec::new();
        reply.extend(be32(xid));
        reply.extend(0x42i64.to_be_bytes()); // zxid
        reply.extend(be32(0)); // err
        if *op == 4 {
            reply.extend(be32(40));
            reply.extend([b'{'; 40]);
            reply.extend([0u8; 68]); // Stat
        }
        c.send(w, false, &framed(&reply), 1448);
    }
}

/// PostgreSQL 16: a StartupMessage (length, protocol 3.0, parameter pairs), then the
/// server's AuthenticationOk, ParameterStatus and ReadyForQuery (a type byte, then length).
fn postgres_session(w: &mut PcapWriter, c: &mut Conn, long_user: bool) {
    let mut params = Vec::new();
    for (k, v) in [
        (
            "user",
            if long_user {
                "analytics_readonly_service_account"
            } else {
                "app"
            },
        ),
        ("database", "kafka_offsets"),
        ("application_name", "psql"),
        ("client_encoding", "UTF8"),
    ] {
        params.extend(k.as_bytes());
        params.push(0);
        params.extend(v.as_bytes());
        params.push(0);
    }
    params.push(0);
    let mut startup = be32(196_608).to_vec(); // protocol 3.0
    startup.extend(params);
    let mut msg = be32(startup.len() as i32 + 4).to_vec();
    msg.extend(startup);
    c.send(w, true, &msg, 1448);
    let mut answer = vec![b'R'];
    answer.extend(be32(8));
    answer.extend(be32(0));
    answer.push(b'S');
    answer.extend(be32(25));
    answer.extend(b"server_version\x0016.1\x00");
    answer.push(b'Z');
    answer.extend(be32(5));
    answer.push(b'I');
    c.send(w, false, &answer, 1448);
    let mut query = vec![b'Q'];
    query.extend(be32(13));
    query.extend(b"SELECT 1;\x00");
    c.send(w, true, &query, 1448);
}

/// A TLS 1.3 ClientHello and ServerHello on a Kafka port (a TLS listener read as plain).
fn tls_session(w: &mut PcapWriter, c: &mut Conn) {
    let mut hello = vec![
        0x16, 0x03, 0x01, 0x00, 0xc4, 0x01, 0x00, 0x00, 0xc0, 0x03, 0x03,
    ];
    hello.extend([0x5a; 32]);
    hello.extend([0x20; 1]);
    hello.extend([0x11; 32]);
    hello.extend([
        0x00, 0x08, 0x13, 0x01, 0x13, 0x02, 0x13, 0x03, 0x00, 0xff, 0x01, 0x00,
    ]);
    hello.extend([0u8; 113]); // to the record's length, 0xc4
    c.send(w, true, &hello, 1448);
    let mut server = vec![
        0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, 0x00, 0x00, 0x76, 0x03, 0x03,
    ];
    server.extend([0x33; 116]); // to the record's length, 0x7a
    c.send(w, false, &server, 1448);
}

/// HTTP/2 with prior knowledge: the client preface and SETTINGS, the server's SETTINGS.
fn http2_session(w: &mut PcapWriter, c: &mut Conn) {
    let mut client = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    client.extend([
        0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100, 0, 4, 0, 1, 0, 0,
    ]);
    c.send(w, true, &client, 1448);
    c.send(
        w,
        false,
        &[0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 128],
        1448,
    );
    c.send(w, false, &[0, 0, 0, 4, 1, 0, 0, 0, 0], 1448);
}

/// A made-up protocol of int32-length-prefixed messages of random bytes, both ways.
fn random_length_prefixed(w: &mut PcapWriter, c: &mut Conn, seed: u64) {
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..20 {
        let len = (next() % 300 + 10) as usize;
        let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        c.send(w, i % 2 == 0, &framed(&body), 1448);
    }
}

fn capture(build: impl FnOnce(&mut PcapWriter)) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise.pcap");
    let mut w = PcapWriter::create(&path);
    build(&mut w);
    w.finish();
    report(&[path.to_str().unwrap()])
}

fn assert_no_kafka(report: &Value, what: &str) {
    let s = &report["summary"];
    assert_eq!(
        s["kafka_connections"], 0,
        "{what}: {:?}",
        report["diagnostics"]
    );
    assert_eq!(s["kafka_requests"], 0, "{what}: {s}");
    assert_eq!(s["kafka_responses"], 0, "{what}: {s}");
    assert_eq!(report["exchanges"].as_array().unwrap().len(), 0, "{what}");
    let given_up =
        s["not_kafka_connections"].as_u64().unwrap() + s["encrypted_connections"].as_u64().unwrap();
    assert_eq!(
        Some(given_up),
        s["tcp_connections"].as_u64(),
        "{what}: every connection is given up out loud"
    );
}

#[test]
fn zookeeper_sessions_with_their_handshake_are_not_kafka() {
    // ops: getData, exists, getChildren, ping; create first (xid 1, op 1) as well
    for ops in [&[4, 3, 8, 11, 4][..], &[1, 4, 4, 3], &[12, 12, 11, 5]] {
        let report = capture(|w| {
            let mut c = Conn::new("10.0.0.1:41000", "10.0.0.2:2181");
            c.handshake(w);
            zookeeper_session(w, &mut c, ops);
            c.close(w);
        });
        assert_no_kafka(&report, &format!("zookeeper {ops:?}"));
    }
}

/// Issue 25, point 4: connect, one create, then the client goes without a closeSession
/// (13 packets with the ACKs a real stack adds). The ConnectRequest reads as a Produce v0
/// request sent with acks 0 (its zeros), which Kafka never answers: the ConnectResponse is
/// an answer to no request waiting for one, and refutes the trial. Not Kafka, out loud.
#[test]
fn a_short_zookeeper_session_that_ends_on_trial_is_not_kafka() {
    let report = capture(|w| {
        let mut c = Conn::new("10.0.0.1:41000", "10.0.0.2:2181");
        c.handshake(w);
        zookeeper_connect(w, &mut c);
        zookeeper_ops(w, &mut c, &[1]);
        c.close(w);
    });
    assert_no_kafka(&report, "a short zookeeper session");
    let not_kafka: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "not_kafka")
        .collect();
    assert_eq!(not_kafka.len(), 1);
    assert_eq!(not_kafka[0]["facts"]["reason"], "trial_answer");
    assert!(not_kafka[0]["message"]
        .as_str()
        .unwrap()
        .contains("run again with --port 2181"));
}

#[test]
fn postgres_tls_http2_and_random_framing_are_not_kafka() {
    let report = capture(|w| {
        for (i, long) in [false, true].into_iter().enumerate() {
            let mut c = Conn::new(&format!("10.0.0.1:4200{i}"), "10.0.0.2:5432");
            c.handshake(w);
            postgres_session(w, &mut c, long);
            c.close(w);
        }
        let mut c = Conn::new("10.0.0.1:42010", "10.0.0.2:9093");
        c.handshake(w);
        tls_session(w, &mut c);
        c.close(w);
        let mut c = Conn::new("10.0.0.1:42011", "10.0.0.2:8080");
        c.handshake(w);
        http2_session(w, &mut c);
        c.close(w);
        for seed in 1..=5 {
            let mut c = Conn::new(&format!("10.0.0.1:4202{seed}"), "10.0.0.2:7000");
            c.handshake(w);
            random_length_prefixed(w, &mut c, seed);
            c.close(w);
        }
    });
    assert_no_kafka(&report, "postgres, tls, http/2, random");
    // the TLS one is named as such, the others are not Kafka
    assert_eq!(report["summary"]["encrypted_connections"], 1);
    assert_eq!(report["summary"]["not_kafka_connections"], 8);
}

#[test]
fn noise_picked_up_mid_stream_is_not_kafka() {
    let report = capture(|w| {
        let mut c = Conn::new("10.0.0.1:43000", "10.0.0.2:2181");
        zookeeper_session(w, &mut c, &[4, 3, 8, 11, 4, 4, 3]);
        c.close(w);
        for seed in 1..=5 {
            let mut c = Conn::new(&format!("10.0.0.1:4300{seed}"), "10.0.0.2:7000");
            random_length_prefixed(w, &mut c, seed * 31);
            c.close(w);
        }
    });
    assert_no_kafka(&report, "mid-stream noise");
}
