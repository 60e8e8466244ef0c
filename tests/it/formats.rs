//! The other output formats: `tree` against the seed document's own object trees, and
//! golden files for `tree`, `text` and `ndjson` on the fixtures.

use predicates::prelude::*;

use crate::common::{pidshark, root};

/// (name, type, value, offset, size) of every node line of an object tree, as the seed
/// draws it: `+-- name  type  = value  [0x0000, 4B]  about`. Values are compared by
/// their first word, as our tree adds names (`0 (NONE)`).
fn nodes(tree: &str) -> Vec<(String, String, String, usize, usize)> {
    let mut out = Vec::new();
    for line in tree.lines() {
        let Some((left, right)) = line.split_once('[') else {
            continue;
        };
        let Some((span, _)) = right.split_once(']') else {
            continue;
        };
        let Some((offset, size)) = span.split_once(", ") else {
            continue;
        };
        let Ok(offset) = usize::from_str_radix(offset.trim_start_matches("0x"), 16) else {
            continue;
        };
        let Ok(size) = size.trim_end_matches('B').parse::<usize>() else {
            continue;
        };
        let left = left.trim_start_matches(['|', '+', '-', ' ']);
        let (head, value) = match left.split_once("= ") {
            Some((h, v)) => (h, v.split_whitespace().next().unwrap_or("").to_owned()),
            None => (left, String::new()),
        };
        let mut words = head.split_whitespace();
        let name = words.next().unwrap_or("").to_owned();
        let kind = words.collect::<Vec<_>>().join(" ");
        out.push((name, kind, value, offset, size));
    }
    out
}

/// The seed document's object trees: the request's, then the response's.
fn seed_trees() -> (String, String) {
    let text =
        std::fs::read_to_string(root().join("fixtures/seed/allocate-producer-ids-v0.txt")).unwrap();
    let mut trees = text.split("object tree").skip(1).map(|part| {
        part.split("kafka message schema")
            .next()
            .unwrap_or("")
            .to_owned()
    });
    (trees.next().unwrap(), trees.next().unwrap())
}

#[test]
fn seed_copy_matches_the_shared_document() {
    let shared = root().join("../shared/seed/allocate-producer-ids-v0.txt");
    if let Ok(original) = std::fs::read(shared) {
        assert_eq!(
            std::fs::read(root().join("fixtures/seed/allocate-producer-ids-v0.txt")).unwrap(),
            original
        );
    }
}

#[test]
fn tree_of_the_seed_capture_draws_the_seed_trees() {
    let out = pidshark()
        .args(["fixtures/seed-v0.pcap", "--format", "tree"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let ours = String::from_utf8(out).unwrap();
    let (request, response) = seed_trees();
    let (our_request, our_response) = ours.split_once("== AllocateProducerIds response").unwrap();
    let want_req = nodes(&request);
    let want_resp = nodes(&response);
    assert_eq!(want_req.len(), 13, "seed request tree parsed");
    assert_eq!(want_resp.len(), 12, "seed response tree parsed");
    assert_eq!(nodes(our_request), want_req);
    assert_eq!(nodes(our_response), want_resp);
    // and the bytes follow each tree, 16 per row
    assert!(our_request
        .contains("0000  00 00 00 18 00 43 00 00 00 00 00 00 00 00 00 00  .....C.........."));
    assert!(our_request.contains("response in frame 6"));
    assert!(our_response.contains("request in frame 4"));
}

fn check_golden(args: &[&str], golden: &str) {
    let out = pidshark()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let expected = std::fs::read(root().join(golden))
        .unwrap_or_else(|_| panic!("{golden} missing: run scripts/bless-golden"));
    assert!(
        out == expected,
        "{golden} differs from `pidshark {}`",
        args.join(" ")
    );
}

#[test]
fn tree_golden_on_tagged_fields_and_errors() {
    check_golden(
        &["fixtures/controller-loopback.pcap", "--format", "tree"],
        "fixtures/controller-loopback.tree.txt",
    );
}

#[test]
fn text_golden_without_colour_when_piped() {
    check_golden(
        &[
            "fixtures/analysis/failover-regression.pcap",
            "--format",
            "text",
        ],
        "fixtures/analysis/failover-regression.text.txt",
    );
    let out = pidshark()
        .args(["fixtures/controller-loopback.pcap", "--format", "text"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(
        !out.contains(&0x1b),
        "no escape codes when stdout is not a terminal"
    );
}

#[test]
fn tree_shows_what_was_read_and_where_decoding_stopped() {
    use crate::common::*;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.pcap");
    let mut w = PcapWriter::create(&path);
    let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
    c.handshake(&mut w);
    // BrokerEpoch cut to 3 bytes
    c.send(
        &mut w,
        true,
        &request(67, 0, 6, true, &[0, 0, 0, 9, 0, 0, 0]),
        1000,
    );
    c.close(&mut w);
    w.finish();
    let out = pidshark()
        .arg(&path)
        .args(["--format", "tree"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("no response in the capture"), "{text}");
    assert!(text.contains("+-- BrokerId                int32"), "{text}");
    assert!(!text.contains("BrokerEpoch    "), "{text}");
    assert!(
        text.contains(
            "!! decoding stopped: BrokerEpoch at offset 23 needs 8 bytes but only 3 are left"
        ),
        "{text}"
    );
}

#[test]
fn ndjson_lines_are_the_reports_exchanges_then_the_rest() {
    let json = crate::common::report(&["fixtures/controller-loopback.pcap"]);
    let out = pidshark()
        .args(["fixtures/controller-loopback.pcap", "--format", "ndjson"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let lines: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is one JSON object"))
        .collect();
    let (last, exchanges) = lines.split_last().unwrap();
    assert_eq!(last["type"], "report");
    let mut ours: Vec<String> = exchanges
        .iter()
        .filter(|line| line["type"] != "block" && line["type"] != "finding")
        .map(|e| {
            assert_eq!(e["type"], "exchange", "{e}");
            let mut e = e.clone();
            e.as_object_mut().unwrap().shift_remove("type");
            e.to_string()
        })
        .collect();
    let mut theirs: Vec<String> = json["exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.to_string())
        .collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "the same exchanges, field for field");
    assert!(last.get("exchanges").is_none());
    assert_eq!(last["diagnostics"], json["diagnostics"]);
    assert_eq!(last["captures"], json["captures"]);
    assert_eq!(
        last["producer_id_blocks"]["findings"],
        json["producer_id_blocks"]["findings"]
    );
    // issue 39: one decision in every format, exact percentiles included
    assert_eq!(last["summary"], json["summary"], "the same summary");
    assert_eq!(last["summary"]["latency_us"]["percentiles_exact"], true);
    assert_eq!(
        last["producer_id_blocks"]["slow_threshold_us"],
        json["producer_id_blocks"]["slow_threshold_us"]
    );
}

/// The lines of `--format ndjson` on `capture`, parsed.
fn ndjson_lines(capture: &str) -> Vec<serde_json::Value> {
    let out = pidshark()
        .args([capture, "--format", "ndjson"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is one JSON object"))
        .collect()
}

/// The lines of `type`, without their `type` field.
fn of_type(lines: &[serde_json::Value], kind: &str) -> Vec<serde_json::Value> {
    lines
        .iter()
        .filter(|line| line["type"] == kind)
        .map(|line| {
            let mut line = line.clone();
            line.as_object_mut().unwrap().shift_remove("type");
            line
        })
        .collect()
}

#[test]
fn ndjson_has_a_line_per_block_after_its_exchange_and_per_finding_before_the_report() {
    let capture = "fixtures/analysis/overlap.pcap";
    let json = crate::common::report(&[capture]);
    let lines = ndjson_lines(capture);
    // A pipeline reading the lines sees every block with the report's values.
    let mut blocks = of_type(&lines, "block");
    let mut theirs = json["producer_id_blocks"]["blocks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(blocks.len(), 6, "overlap.pcap grants 6 blocks");
    let by_grant = |b: &serde_json::Value| (b["response_frame"].as_u64(), b["start"].as_i64());
    blocks.sort_by_key(by_grant);
    theirs.sort_by_key(by_grant);
    assert_eq!(blocks, theirs, "the same blocks, field for field");
    // Each block right after the exchange that granted it.
    for (at, line) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "block")
    {
        let exchange = &lines[at - 1];
        assert_eq!(exchange["type"], "exchange", "line {at}: {line}");
        assert_eq!(exchange["connection"], line["connection"]);
        assert_eq!(exchange["correlation_id"], line["correlation_id"]);
        assert_eq!(exchange["response"]["frame"], line["response_frame"]);
        assert_eq!(exchange["response"]["producer_id_start"], line["start"]);
    }
    // The findings, in the report's order, after every exchange and before the report.
    let findings = of_type(&lines, "finding");
    let kinds: Vec<&str> = findings
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["pid_block_overlap", "pid_block_regression"]);
    assert_eq!(
        serde_json::Value::from(findings),
        json["producer_id_blocks"]["findings"]
    );
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    let first_finding = types.iter().position(|t| *t == "finding").unwrap();
    assert!(types[..first_finding].iter().all(|t| *t != "finding"));
    assert!(types[first_finding..types.len() - 1]
        .iter()
        .all(|t| *t == "finding"));
    assert_eq!(types.last(), Some(&"report"));
    // The report line still holds the findings, as it always has.
    assert_eq!(
        lines.last().unwrap()["producer_id_blocks"]["findings"],
        json["producer_id_blocks"]["findings"]
    );
}

#[test]
fn ndjson_lines_follow_the_filters() {
    // Broker 1's exchanges and their blocks only; the findings are the whole capture's.
    let out = pidshark()
        .args(["fixtures/analysis/overlap.pcap", "--format", "ndjson"])
        .args(["--broker", "1"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let lines: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let blocks = of_type(&lines, "block");
    assert_eq!(blocks.len(), 3);
    assert!(blocks.iter().all(|b| b["broker_id"] == 1), "{blocks:?}");
    assert_eq!(of_type(&lines, "finding").len(), 2);
}

#[test]
fn ndjson_golden() {
    check_golden(
        &["fixtures/controller-loopback.pcap", "--format", "ndjson"],
        "fixtures/controller-loopback.ndjson",
    );
}

#[test]
fn expect_takes_an_ndjson_golden_and_checks_an_ndjson_run() {
    for (format, golden) in [
        ("json", "fixtures/controller-loopback.ndjson"),
        ("ndjson", "fixtures/controller-loopback.report.json"),
        ("ndjson", "fixtures/controller-loopback.ndjson"),
    ] {
        pidshark()
            .args(["fixtures/controller-loopback.pcap", "--format", format])
            .args(["--expect", golden])
            .assert()
            .code(0)
            .stderr("");
    }
    // against another capture's golden: differences
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--format", "ndjson"])
        .args(["--expect", "fixtures/controller-loopback.ndjson"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is missing"));
}

#[test]
fn text_survives_a_block_past_the_largest_producer_id() {
    use crate::common::*;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edge.pcap");
    let mut w = PcapWriter::create(&path);
    let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:29093");
    c.handshake(&mut w);
    c.send(
        &mut w,
        true,
        &request(67, 0, 1, true, &apid_request_body(1, 1)),
        1000,
    );
    c.send(
        &mut w,
        false,
        &response(1, true, &apid_response_body(0, i64::MAX - 5, 1000)),
        1000,
    );
    c.close(&mut w);
    w.finish();
    let out = pidshark()
        .arg(&path)
        .args(["--format", "text"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8(out).unwrap().contains("NONE (no block)"));
}

/// 300 requests answered NOT_CONTROLLER, on 3 brokers' connections.
fn many_errors(path: &std::path::Path) {
    use crate::common::*;
    let mut w = PcapWriter::create(path);
    let mut conns: Vec<Conn> = (1..=3)
        .map(|b| Conn::new(&format!("10.0.0.{b}:40000"), "10.0.0.100:9093"))
        .collect();
    for c in &mut conns {
        c.handshake(&mut w);
    }
    for corr in 0..100 {
        for (b, c) in conns.iter_mut().enumerate() {
            let req = request(67, 0, corr, true, &apid_request_body(b as i32 + 1, 7));
            c.send(&mut w, true, &req, 1460);
            let resp = response(corr, true, &apid_response_body(41, -1, 0));
            c.send(&mut w, false, &resp, 1460);
        }
    }
    w.finish();
}

#[test]
fn text_is_a_screenful_or_two_and_all_lists_every_exchange() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("errors.pcap");
    many_errors(&path);
    let text = |extra: &[&str]| {
        let out = pidshark()
            .arg(&path)
            .args(["--format", "text"])
            .args(extra)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let short = text(&[]);
    assert!(
        short.lines().count() <= 100,
        "{} lines:\n{short}",
        short.lines().count()
    );
    assert!(
        short.contains("(first 20 of 300 worth a look; --all lists every exchange)"),
        "{short}"
    );
    assert!(
        short
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("NO PRODUCER IDS GRANTED: 300 requests, none granted a block: answered NOT_CONTROLLER 300"),
        "{short}"
    );
    let all = text(&["--all"]);
    assert_eq!(all.matches("NOT_CONTROLLER  ").count(), 300, "{all}");
    assert!(all.contains("AllocateProducerIds exchanges: 300 (300 complete"));
}

/// The rows of a CSV output, read back by the `csv` crate as RFC 4180, by column name.
fn csv_rows(args: &[&str]) -> Vec<std::collections::BTreeMap<String, String>> {
    let out = pidshark()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(out.windows(2).any(|w| w == b"\r\n"), "CRLF line ends");
    let mut reader = csv::Reader::from_reader(out.as_slice());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn csv_blocks_are_the_blocks_the_truth_planted_and_csv_has_every_exchange() {
    for name in [
        "healthy",
        "overlap",
        "failover-regression",
        "gaps-irregular",
    ] {
        let pcap = format!("fixtures/analysis/{name}.pcap");
        let truth: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("fixtures/analysis/{name}.truth.json")))
                .unwrap(),
        )
        .unwrap();
        let rows = csv_rows(&[&pcap, "--format", "csv-blocks"]);
        let mut got: Vec<(i64, i64, i64)> = rows
            .iter()
            .map(|r| {
                let n = |c: &str| r[c].parse::<i64>().unwrap();
                (n("start"), n("end"), n("broker_id"))
            })
            .collect();
        let mut want: Vec<(i64, i64, i64)> = truth["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let n = |c: &str| b[c].as_i64().unwrap();
                (n("start"), n("end"), n("broker_id"))
            })
            .collect();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "{name}: blocks");
        let rows = csv_rows(&[&pcap, "--format", "csv"]);
        let exchanges = truth["exchanges"].as_array().unwrap();
        assert_eq!(rows.len(), exchanges.len(), "{name}: exchanges");
        for row in &rows {
            let planted = exchanges
                .iter()
                .find(|e| {
                    e["correlation_id"].as_i64().map(|c| c.to_string()).as_ref()
                        == Some(&row["correlation_id"])
                        && e["client"].as_str() == Some(row["client"].as_str())
                })
                .unwrap_or_else(|| panic!("{name}: {row:?} was not planted"));
            let resp = &planted["response"];
            let cell = |v: &serde_json::Value| match v {
                serde_json::Value::Null => String::new(),
                v => v.to_string(),
            };
            assert_eq!(
                row["error_code"],
                cell(&resp["error_code"]),
                "{name}: {row:?}"
            );
            assert_eq!(row["producer_id_start"], cell(&resp["producer_id_start"]));
            assert_eq!(row["broker_id"], cell(&planted["request"]["broker_id"]));
        }
    }
}

#[test]
fn csv_goldens_of_the_analysis_fixtures() {
    for name in [
        "healthy",
        "overlap",
        "failover-regression",
        "gaps-irregular",
        "slow",
        "error-streak",
    ] {
        let pcap = format!("fixtures/analysis/{name}.pcap");
        check_golden(
            &[&pcap, "--format", "csv"],
            &format!("fixtures/analysis/{name}.csv"),
        );
        check_golden(
            &[&pcap, "--format", "csv-blocks"],
            &format!("fixtures/analysis/{name}.blocks.csv"),
        );
    }
}

/// 200 brokers, each refused once (NOT_CONTROLLER) and then granted a block.
fn many_brokers(path: &std::path::Path) {
    use crate::common::*;
    let mut w = PcapWriter::create(path);
    let mut start = 0;
    for b in 1..=200 {
        let mut c = Conn::new(
            &format!("10.0.{}.{}:40000", b / 200, b % 200 + 1),
            "10.9.9.9:9093",
        );
        c.handshake(&mut w);
        let ask = request(67, 0, 1, true, &apid_request_body(b, 7));
        c.send(&mut w, true, &ask, 1460);
        let refused = response(1, true, &apid_response_body(41, -1, 0));
        c.send(&mut w, false, &refused, 1460);
        let (ask, granted) = apid_pair(2, b, start);
        start += 1000;
        c.send(&mut w, true, &ask, 1460);
        c.send(&mut w, false, &granted, 1460);
        c.close(&mut w);
    }
    w.finish();
}

/// Counts are counts: every number is the whole capture's, every list that is cut says
/// "first N of M", and the text stays within two screens however many brokers there are.
#[test]
fn text_of_many_brokers_keeps_to_two_screens_with_true_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("brokers.pcap");
    many_brokers(&path);
    let out = pidshark()
        .arg(&path)
        .args(["--format", "text"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.lines().count() <= 100,
        "{} lines:\n{text}",
        text.lines().count()
    );
    let has = |line: &str| assert!(text.contains(line), "{line:?} in:\n{text}");
    has("CORRECT: 200 blocks granted to 200 brokers without overlap or regression");
    has("Findings: 0 errors, 0 warnings, 200 info");
    has("(first 20 of 200; ");
    has("Brokers: 11 of 200, those with most errors and unanswered requests");
    has("(the other 189 brokers, 189 of them with errors or unanswered requests)");
    has("  189 others    |");
    has("(first 20 of 200 worth a look; --all lists every exchange)");
    // the others' row sums what the 11 rows leave out
    let others: Vec<u64> = text
        .lines()
        .find(|l| l.trim_start().starts_with("others "))
        .unwrap()
        .split_whitespace()
        .skip(1)
        .take(5)
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(others, vec![378, 378, 0, 0, 189_000], "{text}");
}

/// Issue 40, point 2: `--expect` reads back every output documented as a golden. A
/// capture whose ndjson holds every line type (exchange, block, producer_id, finding,
/// report) is written in each golden format, and each is read back clean.
#[test]
fn expect_reads_back_each_golden_format_with_every_ndjson_line_type() {
    let dir = tempfile::tempdir().unwrap();
    let capture = "fixtures/producers/kafka-20031.pcap";
    for format in ["json", "ndjson"] {
        let golden = dir.path().join(format!("golden.{format}"));
        pidshark()
            .args([capture, "--quiet", "--format", format, "-o"])
            .arg(&golden)
            .assert()
            .success();
        if format == "ndjson" {
            let text = std::fs::read_to_string(&golden).unwrap();
            let types: std::collections::BTreeSet<String> = text
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
                .collect();
            for want in ["exchange", "block", "producer_id", "finding", "report"] {
                assert!(types.contains(&format!("\"{want}\"")), "{want}: {types:?}");
            }
        }
        pidshark()
            .args([
                capture,
                "--quiet",
                "-o",
                "/dev/null",
                "--format",
                format,
                "--expect",
            ])
            .arg(&golden)
            .assert()
            .code(0)
            .stderr("");
    }
}

/// The tree asks the decoder for the cluster's messages' bytes only when it draws them
/// (`--frame`): without it, none of them is copied; with it, every one is kept.
#[test]
fn the_tree_keeps_cluster_messages_bytes_only_for_frame() {
    use pidshark::kafka::apis::ClusterFact;
    use pidshark::pairing::ClusterEvent;
    use pidshark::report::model::Report;
    use pidshark::report::sink::{Analysed, Needs, Sink};
    use pidshark::report::tree::TreeSink;

    /// The tree, counting the cluster events it is handed and those with bytes.
    struct Counting(TreeSink, u64, u64);
    impl Sink for Counting {
        fn needs(&self) -> Needs {
            self.0.needs()
        }
        fn exchange(&mut self, analysed: Analysed<'_>) -> std::io::Result<()> {
            self.0.exchange(analysed)
        }
        fn cluster(&mut self, ev: &ClusterEvent) -> std::io::Result<()> {
            // an AllocateProducerIds request's early word is no message of its own
            if !matches!(ev.fact, ClusterFact::BlockAsked { .. }) {
                self.1 += 1;
                self.2 += u64::from(ev.kept.is_some());
            }
            self.0.cluster(ev)
        }
        fn finish(&mut self, report: &mut Report) -> std::io::Result<()> {
            self.0.finish(report)
        }
    }
    let capture = root().join("fixtures/kafka-real/3.9.1-controller-kill.pcap.gz");
    let config = pidshark::Config::for_inputs(vec![capture.to_str().unwrap().to_owned()]);
    for frame in [None, Some(39)] {
        let tree = TreeSink::new(Box::new(std::io::sink())).only_frame(frame);
        let mut counting = Counting(tree, 0, 0);
        pidshark::run(&config, &mut counting).unwrap();
        let (events, kept) = (counting.1, counting.2);
        assert!(events > 100, "{events} cluster messages");
        match frame {
            None => assert_eq!(kept, 0),
            Some(_) => assert_eq!(kept, events),
        }
    }
}
