//! Several capture files are one capture merged by time, as `mergecap` merges them: frame
//! numbers are those Wireshark shows for the merged file (checked against mergecap and
//! tshark), each file's own numbers stand beside them, and a packet two hosts both
//! captured is read once.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

const START: u64 = 1_700_000_000_000_000_000;
const SERVER_PORT: u16 = 29093;

fn path_str(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// One connection's packets, each with the time it was captured (ns since the epoch).
fn connection(client_port: u16, broker: i32, corrs: &[i32], start: u64) -> Vec<(u64, Vec<u8>)> {
    let mut c = Conn::new(
        &format!("10.0.0.1:{client_port}"),
        &format!("10.0.0.2:{SERVER_PORT}"),
    );
    let (mut packets, mut at) = (Vec::new(), start);
    let ack = Flags {
        ack: true,
        ..Flags::default()
    };
    let mut put = |bytes: Vec<u8>| {
        packets.push((at, bytes));
        at += 100_000;
    };
    let flags = |syn: bool, ack: bool, fin: bool| Flags {
        syn,
        ack,
        fin,
        ..Flags::default()
    };
    put(c.packet(true, c.client_seq, flags(true, false, false), &[]));
    put(c.packet(false, c.server_seq, flags(true, true, false), &[]));
    c.client_seq += 1;
    c.server_seq += 1;
    for &corr in corrs {
        let (req, resp) = apid_pair(corr, broker, i64::from(corr) * 1000);
        put(c.packet(true, c.client_seq, ack, &req));
        c.client_seq += req.len() as u32;
        put(c.packet(false, c.server_seq, ack, &resp));
        c.server_seq += resp.len() as u32;
    }
    put(c.packet(true, c.client_seq, flags(false, true, true), &[]));
    put(c.packet(false, c.server_seq, flags(false, true, true), &[]));
    packets
}

/// Writes `packets` (in the order given) at their times.
fn write(path: &Path, packets: &[(u64, Vec<u8>)]) {
    let mut w = PcapWriter::create(path);
    for (at, bytes) in packets {
        w.set_time(at - 100_123); // record() stamps 100.123 µs after the clock
        w.record(bytes, 0);
    }
    w.finish();
}

/// Each exchange's (client port, correlation id) -> (request frame, response frame).
fn frames(report: &Value) -> BTreeMap<(String, i64), (u64, u64)> {
    report["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|ex| {
            (
                (
                    ex["client"].as_str().unwrap().to_owned(),
                    ex["correlation_id"].as_i64().unwrap(),
                ),
                (
                    ex["request"]["frame"].as_u64().unwrap(),
                    ex["response"]["frame"].as_u64().unwrap(),
                ),
            )
        })
        .collect()
}

/// The same from tshark on `capture`, its Kafka dissector on the server port.
fn tshark_frames(capture: &Path) -> BTreeMap<(String, i64), (u64, u64)> {
    let out = Command::new("tshark")
        .args(["-r", capture.to_str().unwrap(), "-n"])
        .args(["-d", &format!("tcp.port=={SERVER_PORT},kafka")])
        .args(["-Y", "kafka", "-T", "fields", "-E", "separator=,"])
        .args(["-e", "frame.number", "-e", "ip.src", "-e", "tcp.srcport"])
        .args(["-e", "tcp.dstport", "-e", "kafka.correlation_id"])
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut frames: BTreeMap<(String, i64), (u64, u64)> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = line.split(',').collect();
        let (frame, src, sport, dport, corr) = (f[0], f[1], f[2], f[3], f[4]);
        let frame: u64 = frame.parse().unwrap();
        let from_client = dport == SERVER_PORT.to_string();
        let client = if from_client {
            format!("{src}:{sport}")
        } else {
            format!("10.0.0.1:{dport}")
        };
        let entry = frames.entry((client, corr.parse().unwrap())).or_default();
        if from_client {
            entry.0 = frame;
        } else {
            entry.1 = frame;
        }
    }
    frames
}

fn have_mergecap_and_tshark() -> bool {
    let install = "apt-get install tshark (mergecap comes with it)";
    have_program("mergecap", "merging captures as Wireshark does", install)
        && have_program("tshark", "Wireshark's frame numbers", install)
}

#[test]
fn files_are_merged_by_time_as_mergecap_merges_them() {
    let dir = tempfile::tempdir().unwrap();
    // a and b tie packet for packet (mergecap puts the file given last first); c starts
    // 250 µs later, so its packets fall between theirs.
    let files = [
        ("a.pcap", connection(40000, 1, &[1, 2], START)),
        ("b.pcap", connection(40001, 2, &[1, 2], START)),
        ("c.pcap", connection(40002, 3, &[1, 2], START + 250_000)),
    ];
    let paths: Vec<String> = files
        .iter()
        .map(|(name, packets)| {
            let path = dir.path().join(name);
            write(&path, packets);
            path_str(&path)
        })
        .collect();
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let merged = report(&args);
    let ours = frames(&merged);
    assert_eq!(ours.len(), 6, "{:#?}", merged["diagnostics"]);
    assert!(merged["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .all(|ex| ex["status"] == "complete"));
    assert_eq!(merged["summary"]["duplicate_packets"], 0);
    let paths_listed: Vec<&str> = merged["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths_listed, args,
        "captures[] by first packet, then by path"
    );
    // The first packets, in merged order: b's SYN, a's SYN (a tie), b's SYN-ACK, a's
    // SYN-ACK, c's SYN (250 µs in), ...: each file's numbers stand beside the merged ones.
    for ex in merged["exchanges"].as_array().unwrap() {
        let capture = ex["request"]["capture_index"].as_u64().unwrap() as usize;
        let alone = report(&[args[capture]]);
        let same = alone["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["correlation_id"] == ex["correlation_id"])
            .unwrap();
        for side in ["request", "response"] {
            assert_eq!(ex[side]["capture_frame"], same[side]["frame"], "{ex:#}");
            assert_eq!(ex[side]["capture_index"], capture, "{ex:#}");
        }
    }
    let overlaps = merged["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "capture_files_overlap")
        .count();
    assert_eq!(overlaps, 3, "each pair of files overlaps");
    if !have_mergecap_and_tshark() {
        return;
    }
    let merged_file = dir.path().join("merged.pcapng");
    // given in captures[] order, whatever order pidshark was given
    let status = Command::new("mergecap")
        .arg("-w")
        .arg(&merged_file)
        .args(&paths_listed)
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(ours, tshark_frames(&merged_file));
}

/// One connection seen by two hosts: the broker's capture and the controller's, whose
/// clock runs 2.5 ms ahead; the controller's also has a connection of its own.
fn two_hosts(dir: &Path) -> (String, String, usize) {
    let shared = connection(40000, 1, &[1, 2, 3], START);
    let own = connection(40001, 2, &[4], START + 1_000_000);
    let skew = 2_500_000;
    let mut controller: Vec<(u64, Vec<u8>)> = shared
        .iter()
        .map(|(at, bytes)| (at + skew, bytes.clone()))
        .chain(own)
        .collect();
    controller.sort_by_key(|(at, _)| *at);
    let (broker_path, controller_path) = (dir.join("broker.pcap"), dir.join("controller.pcap"));
    write(&broker_path, &shared);
    write(&controller_path, &controller);
    (
        path_str(&broker_path),
        path_str(&controller_path),
        shared.len(),
    )
}

#[test]
fn a_packet_in_two_files_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, controller, shared) = two_hosts(dir.path());
    let merged = report(&[&broker, &controller]);
    let ex = merged["exchanges"].as_array().unwrap();
    let ids: Vec<(&str, i64, i64)> = ex
        .iter()
        .map(|e| {
            (
                e["client"].as_str().unwrap(),
                e["correlation_id"].as_i64().unwrap(),
                e["response"]["producer_id_start"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("10.0.0.1:40000", 1, 1000),
            ("10.0.0.1:40000", 2, 2000),
            ("10.0.0.1:40000", 3, 3000),
            ("10.0.0.1:40001", 4, 4000),
        ],
        "{:#?}",
        merged["diagnostics"]
    );
    assert_eq!(merged["summary"]["duplicate_packets"], shared as u64);
    assert_eq!(merged["captures"][0]["duplicate_packets"], 0);
    assert_eq!(merged["captures"][1]["duplicate_packets"], shared as u64);
    assert_eq!(merged["summary"]["tcp_connections"], 2);
    assert_eq!(merged["summary"]["kafka_requests"], 4);
    let kinds = kinds(&merged);
    for bad in [
        "pid_block_regression",
        "pid_block_overlap",
        "tcp_overlap_conflict",
    ] {
        assert!(!kinds.contains(&bad.to_owned()), "{kinds:?}");
    }
    // The broker's copies come first (its clock is behind): the exchanges keep its times.
    assert_eq!(ex[0]["request"]["capture_index"], 0);
    assert_eq!(merged["verdict"]["code"], "correct");
    // Given the other way round, the same exchanges from the same packets.
    let swapped = report(&[&controller, &broker]);
    assert_eq!(frames(&swapped), frames(&merged));
    assert_eq!(swapped["summary"]["duplicate_packets"], shared as u64);
}

#[test]
fn copies_further_apart_than_the_clock_skew_are_read_as_retransmissions() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, controller, _) = two_hosts(dir.path());
    let merged = report(&[&broker, &controller, "--clock-skew", "1"]);
    assert_eq!(merged["summary"]["duplicate_packets"], 0);
    // not recognised as copies, their bytes are still read once by TCP reassembly
    assert_eq!(merged["summary"]["exchanges"]["complete"], 4);
    assert_eq!(merged["summary"]["kafka_requests"], 4);
}

#[test]
fn the_clock_skew_must_be_milliseconds_within_a_minute() {
    for bad in ["-1", "x", "60001", "NaN"] {
        pidshark()
            .args(["fixtures/seed-v0.pcap", "--clock-skew", bad])
            .assert()
            .code(2);
    }
}

#[test]
fn the_text_report_says_the_files_were_merged() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, controller, shared) = two_hosts(dir.path());
    let out = pidshark()
        .args([&broker, &controller, "--format", "text"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(&format!(
            "frame numbers are those of `mergecap -w merged.pcapng {broker} {controller}`"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{shared} packets were in two files")),
        "{text}"
    );
}

#[test]
fn the_page_spans_the_files_in_time_and_names_the_merge() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, controller, _) = two_hosts(dir.path());
    // the later-starting file given first: the span still runs from the earliest packet
    let page = dir.path().join("report.html");
    pidshark()
        .args([&controller, &broker, "--format", "html", "-o"])
        .arg(&page)
        .assert()
        .success();
    let page = std::fs::read_to_string(page).unwrap();
    let alone = report(&[&broker]);
    let first = alone["captures"][0]["first_timestamp"].as_str().unwrap();
    let last = report(&[&controller])["captures"][0]["last_timestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        page.contains(&format!("packets from {first} to {last};")),
        "{first} {last}"
    );
    // mergecap given the files in captures[] order: the earlier-starting first
    assert!(page.contains(&format!(
        "<summary>the mergecap command</summary><code class=\"f\">mergecap -w merged.pcapng {broker} {controller}</code>"
    )));
    // two files are named in the title
    assert!(
        page.contains(&format!(
            "AllocateProducerIds in {controller}, {broker}</h1>"
        )) || page.contains(&format!(
            "AllocateProducerIds in {broker}, {controller}</h1>"
        ))
    );
}

/// Issue 40: a long list of files (a ring) is not spelled out in the page's title: the
/// number of files and the time they span, the paths folded away below.
#[test]
fn the_page_of_many_files_names_their_number_and_span_and_folds_the_paths() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = (0..5u16)
        .map(|i| {
            let path = dir.path().join(format!("ring-{i}.pcap"));
            let at = START + u64::from(i) * 1_500_000_000;
            write(&path, &connection(40000 + i, i32::from(i) + 1, &[1, 2], at));
            path_str(&path)
        })
        .collect();
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let json = report(&args);
    let clock =
        |field: &str, i: usize| json["captures"][i][field].as_str().unwrap()[11..19].to_owned();
    let page = dir.path().join("ring.html");
    pidshark()
        .args(&args)
        .args(["--format", "html", "-o"])
        .arg(&page)
        .assert()
        .success();
    let page = std::fs::read_to_string(page).unwrap();
    let h1 = page
        .split("<h1>")
        .nth(1)
        .unwrap()
        .split("</h1>")
        .next()
        .unwrap();
    assert_eq!(
        h1,
        format!(
            "pidshark {}: AllocateProducerIds in 5 files, {} to {} (UTC)",
            env!("CARGO_PKG_VERSION"),
            clock("first_timestamp", 0),
            clock("last_timestamp", 4)
        )
    );
    let files = page.split("<details id=\"files\">").nth(1).unwrap();
    let files = files.split("</details>").next().unwrap();
    for path in &paths {
        assert!(
            files.contains(&format!("<li><code>{path}</code></li>")),
            "{path}"
        );
    }
}

#[test]
fn a_frame_that_is_a_copy_says_which_frame_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, controller, _) = two_hosts(dir.path());
    let merged = report(&[&broker, &controller]);
    let request = merged["exchanges"][0]["request"]["frame"].as_u64().unwrap();
    let frames = merged["summary"]["packets"].as_u64().unwrap();
    let copies: Vec<u64> = (1..=frames)
        .filter(|frame| {
            let with = report(&[&broker, &controller, "--frame", &frame.to_string()]);
            with["filters"]["frame_holds"]
                .as_str()
                .is_some_and(|s| s.contains(&format!("is a copy of frame {request},")))
        })
        .collect();
    assert_eq!(copies.len(), 1, "one copy of frame {request}: {copies:?}");
    assert!(copies[0] > request);
}

/// Issue 39: the same files in any order give the same report, byte for byte: a ring's
/// three files in each of their six orders, and the two hosts' captures of one incident
/// both ways round.
#[test]
fn the_same_files_in_any_order_give_the_same_report() {
    let dir = "fixtures/kafka-real";
    let ring: Vec<String> = (0..3)
        .map(|i| format!("{dir}/3.9.1-ring.{i}.pcap.gz"))
        .collect();
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let hosts = [
        format!("{dir}/4.4.0-two-hosts.broker-1.pcap.gz"),
        format!("{dir}/4.4.0-two-hosts.controllers.pcap.gz"),
    ];
    let out = |files: &[&String]| {
        let run = pidshark()
            .args(files)
            .args(["--quiet", "--compact"])
            .current_dir(root())
            .output()
            .unwrap();
        assert!(run.status.success(), "{files:?}");
        run.stdout
    };
    let first = out(&[&ring[0], &ring[1], &ring[2]]);
    for order in &orders[1..] {
        let files: Vec<&String> = order.iter().map(|i| &ring[*i]).collect();
        assert!(out(&files) == first, "{order:?}");
    }
    let report: Value = serde_json::from_slice(&first).unwrap();
    let paths: Vec<&str> = report["captures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths, ring,
        "the ring's files in the time order they were written"
    );
    assert!(out(&[&hosts[0], &hosts[1]]) == out(&[&hosts[1], &hosts[0]]));
}
