//! Issue 42: what two producers sharing one producer id wrote, on real clusters. The
//! rig's `shared-pid` scenario (scripts/kafka/rig, scripts/kafka/SharedPid.java) forces
//! two idempotent Java producers to hold one producer id and epoch, on Kafka 3.9.1 and
//! 4.4.0. Truth we did not write: each client's own record of every Produce attempt
//! (correlation id, the error it was told, and for a success the offset), and Kafka's
//! `DumpLogSegments` of the topic's partition logs (every batch appended: offsets,
//! producer id, epoch, sequences, CRC). pidshark's rows (`--format csv-writes`) and
//! `write_not_appended` findings must equal them batch for batch, and tshark must find
//! every Produce message where pidshark does.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::{pidshark, root};

const RELEASES: [&str; 2] = ["4.4.0", "3.9.1"];
const DIR: &str = "fixtures/kafka-real";

fn truth(release: &str) -> Value {
    let path = root().join(format!("{DIR}/{release}-shared-pid.truth.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn capture(release: &str) -> String {
    format!("{DIR}/{release}-shared-pid.pcap.gz")
}

/// pidshark's rows of `--format csv-writes` of a release's shared-pid capture.
fn rows(release: &str) -> Vec<BTreeMap<String, String>> {
    rows_of(&capture(release))
}

/// pidshark's rows of `--format csv-writes` of `file`, by column name.
pub(crate) fn rows_of(file: &str) -> Vec<BTreeMap<String, String>> {
    let out = pidshark()
        .args([file, "--format", "csv-writes"])
        .assert()
        .success();
    let mut reader = csv::Reader::from_reader(&out.get_output().stdout[..]);
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            header
                .iter()
                .cloned()
                .zip(r.iter().map(str::to_owned))
                .collect()
        })
        .collect()
}

fn report(release: &str) -> Value {
    let out = pidshark().arg(capture(release)).assert().success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// What a client was told, per Produce attempt: (client id, correlation id) to (partition,
/// error, and for the last attempt of a send its outcome and offset).
type Told = BTreeMap<(String, i64), (i64, String, Option<(String, i64)>)>;

fn told(truth: &Value) -> Told {
    let mut told = Told::new();
    for send in truth["client_sends"].as_array().unwrap() {
        if send["event"] != "send" {
            continue;
        }
        let client_id = send["client_id"].as_str().unwrap().to_owned();
        let attempts = send["produce_attempts"].as_array().unwrap();
        for (i, a) in attempts.iter().enumerate() {
            let last = i + 1 == attempts.len();
            let outcome = last.then(|| {
                let outcome = send["outcome"].as_str().unwrap().to_owned();
                (outcome, send["offset"].as_i64().unwrap_or(-1))
            });
            let key = (client_id.clone(), a["correlation_id"].as_i64().unwrap());
            let error = a["error"].as_str().unwrap().to_owned();
            told.insert(key, (send["partition"].as_i64().unwrap(), error, outcome));
        }
    }
    told
}

/// Every Produce attempt a client made is a row of pidshark's, with the answer the client
/// was told; every batch the clients were told was appended is in the log at its offset
/// with the row's producer id, epoch, sequence and CRC; every batch acknowledged and not
/// appended finds another batch (another CRC) at its offset in the log.
#[test]
fn every_write_is_what_the_clients_were_told_and_the_log_holds() {
    for release in RELEASES {
        let truth = truth(release);
        let told = told(&truth);
        let rows = rows(release);
        let by_attempt: BTreeMap<(String, i64), &BTreeMap<String, String>> = rows
            .iter()
            .map(|r| {
                let corr = r["correlation_id"].parse().unwrap();
                ((r["client_id"].clone(), corr), r)
            })
            .collect();
        assert_eq!(
            by_attempt.keys().collect::<BTreeSet<_>>(),
            told.keys().collect::<BTreeSet<_>>(),
            "{release}: the Produce attempts"
        );
        let log = &truth["appended_batches"];
        let topic = truth["topic"]["name"].as_str().unwrap();
        let (mut appended, mut lost) = (0, 0);
        for (key, (partition, error, outcome)) in &told {
            let row = by_attempt[key];
            let what = format!("{release} {key:?}");
            assert_eq!(row["partition"], partition.to_string(), "{what}");
            // by name: from the request (v11), or from a Metadata response for its id (v13)
            assert_eq!(row["topic"], topic, "{what}");
            if error != "NONE" {
                assert_eq!(row["outcome"], "rejected", "{what}");
                assert_eq!(&row["error"], error, "{what}");
                continue;
            }
            let Some((outcome, offset)) = outcome else {
                panic!("{what}: a success that was not the send's last attempt");
            };
            assert_eq!(row["offset"], offset.to_string(), "{what}");
            let in_log = log[format!("{topic}-{partition}")]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["base_offset"].as_i64() == Some(*offset))
                .unwrap_or_else(|| panic!("{what}: no batch at offset {offset} in the log"));
            let crc = in_log["crc"].as_u64().unwrap().to_string();
            match outcome.as_str() {
                "appended" => {
                    appended += 1;
                    assert_eq!(row["outcome"], "appended", "{what}");
                    assert_eq!(row["crc"], crc, "{what}: the batch in the log");
                    for (ours, theirs) in [
                        ("producer_id", "producer_id"),
                        ("producer_epoch", "producer_epoch"),
                        ("first_sequence", "base_sequence"),
                        ("last_sequence", "last_sequence"),
                    ] {
                        assert_eq!(row[ours], in_log[theirs].to_string(), "{what}: {ours}");
                    }
                }
                "acknowledged_not_appended" => {
                    lost += 1;
                    assert_eq!(row["outcome"], "not_appended", "{what}");
                    assert_ne!(row["crc"], crc, "{what}: another batch holds the offset");
                }
                other => panic!("{what}: outcome {other}"),
            }
        }
        assert!(
            appended >= 20 && lost >= 9,
            "{release}: {appended} appended, {lost} lost"
        );
        // Every batch of the producers in the log is a row told appended.
        let logged: usize = log
            .as_object()
            .unwrap()
            .values()
            .map(|batches| batches.as_array().unwrap().len())
            .sum();
        let rows_appended = rows.iter().filter(|r| r["outcome"] == "appended").count();
        assert_eq!(logged, rows_appended, "{release}: batches in the log");
    }
}

/// The findings: one `write_not_appended` per batch the clients were told was written and
/// never was, naming the client that wrote it and the one whose batch holds its offset;
/// the two producers of one id are a `write_shared_producer`; the verdict says so.
#[test]
fn each_batch_acknowledged_and_not_appended_is_a_finding() {
    for release in RELEASES {
        let truth = truth(release);
        let mut expected: BTreeSet<(i64, String, i64, i64)> = BTreeSet::new();
        for send in truth["client_sends"].as_array().unwrap() {
            if send["outcome"] == "acknowledged_not_appended" {
                expected.insert((
                    send["partition"].as_i64().unwrap(),
                    send["client_id"].as_str().unwrap().to_owned(),
                    send["seq"].as_i64().unwrap(),
                    send["offset"].as_i64().unwrap(),
                ));
            }
        }
        let report = report(release);
        let diagnostics = report["diagnostics"].as_array().unwrap();
        let found: BTreeSet<(i64, String, i64, i64)> = diagnostics
            .iter()
            .filter(|d| d["kind"] == "write_not_appended")
            .map(|d| {
                let f = &d["facts"];
                assert_ne!(
                    f["client_id"], f["other_client_id"],
                    "{release}: {}",
                    d["message"]
                );
                (
                    f["partition"].as_i64().unwrap(),
                    f["client_id"].as_str().unwrap().to_owned(),
                    f["first_sequence"].as_i64().unwrap(),
                    f["offset"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(found, expected, "{release}");
        assert_eq!(
            report["writes"]["not_appended"],
            expected.len(),
            "{release}"
        );
        let shared = diagnostics
            .iter()
            .filter(|d| d["kind"] == "write_shared_producer")
            .count();
        assert!(shared >= 1, "{release}: no write_shared_producer");
        let headline = report["verdict"]["headline"].as_str().unwrap();
        assert!(
            headline.contains("write_not_appended"),
            "{release}: {headline}"
        );
        // both clients wrote epoch 0 to every partition, each over one connection to each
        // of the two brokers
        let partitions = truth["topic"]["partitions"].as_array().unwrap().len();
        let connections = 2 * truth["broker_ids"].as_array().unwrap().len();
        let pid = truth["shared_pid"]["producer_id"].as_i64().unwrap();
        let named = format!(
            "producer id {pid} epoch 0 was written by two producers over {connections} connections to {partitions} partitions"
        );
        assert!(headline.contains(&named), "{release}: {headline}");
        // the text report's Writes part counts them and names each with its frames
        let text = pidshark()
            .args([&capture(release), "--format", "text", "--color", "never"])
            .assert()
            .success();
        let text = String::from_utf8(text.get_output().stdout.clone()).unwrap();
        let part = text
            .split("Writes (Produce)")
            .nth(1)
            .expect("a Writes part");
        assert!(
            part.contains(&format!(
                "{} batches acknowledged with success and never appended",
                expected.len()
            )),
            "{release}: {part}"
        );
        let named = part
            .lines()
            .filter(|l| l.contains("and never appended (frames"))
            .count();
        assert_eq!(named, expected.len(), "{release}: {part}");
        // the shared id, and what each connection wrote with it: B's first connection
        // to partition 0's leader wrote 3 batches there, all never appended
        let pid = truth["shared_pid"]["producer_id"].as_i64().unwrap();
        assert!(
            part.contains(&format!(
                "producer id {pid} epoch 0 written by two producers (write_shared_producer; the id granted at frame"
            )),
            "{release}: {part}"
        );
        let writers = part
            .lines()
            .filter(|l| l.starts_with("    ") && l.contains(" client_id \"shared-"))
            .count();
        assert!(writers >= 4, "{release}: {part}");
        // the page's table of them, by topic, partition and client
        let page = pidshark()
            .args([&capture(release), "--format", "html"])
            .assert()
            .success();
        let page = String::from_utf8(page.get_output().stdout.clone()).unwrap();
        assert!(page.contains("<h2>Writes (Produce)</h2>"), "{release}");
        let rows = page
            .matches("<tr class=\"bad\"><td>pidshark-shared</td>")
            .count();
        assert_eq!(rows, expected.len(), "{release}: never-appended rows");
        // a gate on the kind: this capture fails it, a healthy one passes
        pidshark()
            .args([
                &capture(release),
                "--quiet",
                "--fail-on",
                "write_not_appended",
            ])
            .assert()
            .code(1);
        let healthy = format!("{DIR}/{release}-transactions.pcap.gz");
        pidshark()
            .args([
                &healthy,
                "--quiet",
                "--fail-on",
                "write_not_appended,write_shared_producer",
            ])
            .assert()
            .code(0);
    }
}

/// tshark's Kafka responses from the brokers: (frame, stream, correlation id). Wireshark
/// 4.0 does not pair Produce v11 and v13 responses with their requests ("Request
/// missing"), so the answers are those on a request's stream with its correlation id.
fn tshark_responses(path: &str, ports: &[u16], brokers: &[u16]) -> BTreeSet<(u64, u64, i64)> {
    let out = std::process::Command::new("tshark")
        .args(["-r", path, "-n"])
        .args(crate::wireshark::decode_as(ports))
        .args(["-Y", "kafka && !kafka.request_key", "-T", "fields"])
        .args(["-E", "aggregator=;"])
        .args([
            "-e",
            "frame.number",
            "-e",
            "tcp.stream",
            "-e",
            "tcp.srcport",
        ])
        .args(["-e", "kafka.correlation_id"])
        .output()
        .expect("tshark runs");
    let mut responses = BTreeSet::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        let [frame, stream, port, corrs] = cols[..] else {
            panic!("unexpected tshark line {line:?}");
        };
        if !brokers.contains(&port.parse().unwrap()) {
            continue;
        }
        for corr in corrs.split(';').filter(|c| !c.is_empty()) {
            responses.insert((
                frame.parse().unwrap(),
                stream.parse().unwrap(),
                corr.parse().unwrap(),
            ));
        }
    }
    responses
}

/// tshark finds every Produce request and response where pidshark does: the same frame,
/// TCP stream and correlation id.
#[test]
fn wireshark_agrees_on_every_produce_message() {
    if !crate::wireshark::have_tshark() {
        return;
    }
    let captures = RELEASES
        .map(|r| format!("{r}-shared-pid"))
        .into_iter()
        .chain(["4.4.0-epoch-exhaustion".to_owned()]);
    for name in captures {
        let release = name.as_str();
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(root().join(format!("{DIR}/{name}.truth.json"))).unwrap(),
        )
        .unwrap();
        let ports = crate::kafka_real::ports(&truth);
        let brokers: Vec<u16> = (truth["broker_ports"].as_object().unwrap().values())
            .map(|p| p.as_u64().unwrap() as u16)
            .collect();
        let file = format!("{DIR}/{name}.pcap.gz");
        let path = root().join(&file);
        let path = path.to_str().unwrap();
        let mut theirs = crate::wireshark::tshark_frames_of_keys(path, &ports, &["0"]);
        let (their_requests, _) = theirs.remove(0);
        let their_responses: BTreeSet<(u64, u64, i64)> = tshark_responses(path, &ports, &brokers)
            .into_iter()
            .filter(|(_, stream, corr)| {
                their_requests
                    .iter()
                    .any(|(_, s, c)| (s, c) == (stream, corr))
            })
            .collect();
        let (mut requests, mut responses) = (BTreeSet::new(), BTreeSet::new());
        for r in rows_of(&file) {
            let n = |c: &str| r[c].parse::<u64>().unwrap();
            let (conn, corr) = (n("connection"), r["correlation_id"].parse::<i64>().unwrap());
            requests.insert((n("request_frame"), conn, corr));
            if !r["response_frame"].is_empty() {
                responses.insert((n("response_frame"), conn, corr));
            }
        }
        assert!(requests.len() >= 30, "{release}: {}", requests.len());
        assert_eq!(requests, their_requests, "{release}: Produce requests");
        assert_eq!(responses, their_responses, "{release}: Produce responses");
    }
}

/// A healthy cluster's writes raise nothing: the transactional and idempotent producers
/// of the `transactions` scenario write thousands of batches, and no `write_` finding of
/// warning or error comes of them.
#[test]
fn healthy_producers_raise_no_write_finding() {
    for release in RELEASES {
        let out = pidshark()
            .arg(format!("{DIR}/{release}-transactions.pcap.gz"))
            .assert()
            .success();
        let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        let writes = &report["writes"];
        assert!(
            writes["batches"].as_u64().unwrap() >= 2000,
            "{release}: {writes}"
        );
        assert_eq!(writes["not_appended"], 0, "{release}");
        let loud: Vec<&Value> = report["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].as_str().unwrap().starts_with("write_"))
            .filter(|d| d["severity"] != "info")
            .collect();
        assert!(loud.is_empty(), "{release}: {loud:#?}");
    }
}

/// Issue 42, point 1, on a real 4.4.0 cluster (transactions v2, the rig's
/// `epoch-exhaustion` scenario, scripts/kafka/EpochRun.java): one transactional id runs
/// 32,772 transactions, each EndTxn bumping its epoch, until the coordinator hands it a
/// new producer id at epoch 0 in the EndTxn answer to epoch 32766. The capture holds the
/// last 72; every EndTxn entry equals what the Java client itself sent and was told
/// (recorded by reflection on its TransactionManager), the new id is a grant that is not
/// an epoch bump and no duplicate, and every data batch is the one the client wrote.
#[test]
fn a_used_up_epoch_gets_a_new_producer_id_at_a_transactions_end() {
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("{DIR}/4.4.0-epoch-exhaustion.truth.json")))
            .unwrap(),
    )
    .unwrap();
    let capture = format!("{DIR}/4.4.0-epoch-exhaustion.pcap.gz");
    let out = pidshark().arg(&capture).assert().success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let entries: BTreeMap<i64, &Value> = report["producer_ids"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["api"] == "end_txn")
        .map(|e| (e["correlation_id"].as_i64().unwrap(), e))
        .collect();
    let recorded = truth["transactions_recorded"].as_array().unwrap();
    assert_eq!(entries.len(), recorded.len(), "EndTxn exchanges");
    let n = |v: &Value| v.as_i64().unwrap();
    let mut rotations = 0;
    for txn in recorded {
        let end = &txn["end_txn"];
        let e = entries[&n(&end["correlation_id"])];
        let (req, resp) = (&end["request"], &end["response"]);
        assert_eq!(n(&e["requested_producer_id"]), n(&req["producerId"]));
        assert_eq!(n(&e["requested_producer_epoch"]), n(&req["producerEpoch"]));
        assert_eq!(n(&e["producer_id"]), n(&resp["producerId"]));
        assert_eq!(n(&e["producer_epoch"]), n(&resp["producerEpoch"]));
        let bump = resp["producerId"] == req["producerId"];
        match bump {
            true => assert_eq!(e["placement"], "epoch_bump", "{e}"),
            false => {
                rotations += 1;
                assert_ne!(e["placement"], "epoch_bump", "{e}");
                assert_eq!(n(&req["producerEpoch"]), 32766, "{e}");
                assert_eq!(n(&resp["producerEpoch"]), 0, "{e}");
            }
        }
    }
    assert_eq!(rotations, 1, "one new producer id");
    let diagnostics = report["diagnostics"].as_array().unwrap();
    assert!(
        !diagnostics
            .iter()
            .any(|d| d["kind"] == "pid_duplicate_grant"),
        "a transactional producer going on with a new id is no duplicate"
    );
    // each transaction's data batch, as the client wrote it and the log holds it
    let rows = pidshark()
        .args([&capture, "--format", "csv-writes"])
        .assert()
        .success();
    let mut reader = csv::Reader::from_reader(&rows.get_output().stdout[..]);
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: BTreeMap<(i64, i64), (String, String, String)> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            let key = (
                r[col("producer_id")].parse().unwrap(),
                r[col("producer_epoch")].parse().unwrap(),
            );
            (
                key,
                (
                    r[col("crc")].to_owned(),
                    r[col("offset")].to_owned(),
                    r[col("outcome")].to_owned(),
                ),
            )
        })
        .collect();
    for txn in recorded {
        let batch = &txn["data_batch"];
        let key = (n(&batch["producer_id"]), n(&batch["producer_epoch"]));
        let (crc, offset, outcome) = &rows[&key];
        assert_eq!(crc, &batch["crc"].to_string(), "{key:?}");
        assert_eq!(offset, &batch["base_offset"].to_string(), "{key:?}");
        assert_eq!(outcome, "appended", "{key:?}");
    }
}

/// tshark finds every EndTxn request and response of the epoch exhaustion where pidshark
/// does (the new producer id's among them).
#[test]
fn wireshark_agrees_on_every_end_txn_of_the_epoch_exhaustion() {
    if !crate::wireshark::have_tshark() {
        return;
    }
    let name = "4.4.0-epoch-exhaustion";
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("{DIR}/{name}.truth.json"))).unwrap(),
    )
    .unwrap();
    let file = format!("{DIR}/{name}.pcap.gz");
    let path = root().join(&file);
    let ports = crate::kafka_real::ports(&truth);
    let mut theirs =
        crate::wireshark::tshark_frames_of_keys(path.to_str().unwrap(), &ports, &["26"]);
    let (their_requests, their_responses) = theirs.remove(0);
    let out = pidshark().arg(&file).assert().success();
    let report: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let (mut requests, mut responses) = (BTreeSet::new(), BTreeSet::new());
    for e in report["producer_ids"]["entries"].as_array().unwrap() {
        if e["api"] != "end_txn" {
            continue;
        }
        let (conn, corr) = (
            e["connection"].as_u64().unwrap(),
            e["correlation_id"].as_i64().unwrap(),
        );
        requests.insert((e["request_frame"].as_u64().unwrap(), conn, corr));
        if let Some(frame) = e["response_frame"].as_u64() {
            responses.insert((frame, conn, corr));
        }
    }
    assert_eq!(requests.len(), 72);
    assert_eq!(requests, their_requests, "EndTxn requests");
    assert_eq!(responses, their_responses, "EndTxn responses");
}

/// The shared producer id is listed in `writes.producers_of_interest` with both its
/// epochs (the clients bumped it together), each writer's partitions, sequence ranges
/// and outcomes equal to its rows (which equal the clients' record, above), the batches
/// each client was told were written and never were, and its one grant: the
/// InitProducerId answer that gave the id to A (B was given it by reflection).
#[test]
fn the_shared_producer_id_lists_what_each_client_wrote_and_its_grant() {
    for release in RELEASES {
        let truth = truth(release);
        let pid = truth["shared_pid"]["producer_id"].as_i64().unwrap();
        let report = report(release);
        let listed = report["writes"]["producers_of_interest"]
            .as_array()
            .unwrap();
        let keys: Vec<(i64, i64, bool)> = listed
            .iter()
            .map(|p| {
                let (id, epoch) = (p["producer_id"].as_i64(), p["producer_epoch"].as_i64());
                (id.unwrap(), epoch.unwrap(), p["shared"].as_bool().unwrap())
            })
            .collect();
        assert_eq!(keys, [(pid, 0, true), (pid, 1, true)], "{release}");
        // per writer and partition, what its rows say
        let mut from_rows: BTreeMap<(i64, String, i64), [i64; 5]> = BTreeMap::new();
        for r in rows(release) {
            let num = |c: &str| r[c].parse::<i64>().unwrap();
            let key = (
                num("producer_epoch"),
                r["connection"].clone(),
                num("partition"),
            );
            let e = from_rows.entry(key).or_insert([i64::MAX, -1, 0, 0, 0]);
            e[0] = e[0].min(num("first_sequence"));
            e[1] = e[1].max(num("last_sequence"));
            e[2] += 1;
            e[3] += i64::from(r["outcome"] == "not_appended");
            e[4] += i64::from(r["outcome"] == "rejected");
        }
        let mut from_listing = BTreeMap::new();
        let mut lost_by_client: BTreeMap<String, i64> = BTreeMap::new();
        for p in listed {
            for w in p["writers"].as_array().unwrap() {
                for s in w["partitions"].as_array().unwrap() {
                    let n = |f: &str| s[f].as_i64().unwrap();
                    let key = (
                        p["producer_epoch"].as_i64().unwrap(),
                        w["connection"].to_string(),
                        n("partition"),
                    );
                    let counts = [
                        n("first_sequence"),
                        n("last_sequence"),
                        n("batches"),
                        n("not_appended"),
                        n("rejected"),
                    ];
                    from_listing.insert(key, counts);
                    if p["producer_epoch"] == 0 {
                        let id = w["client_id"].as_str().unwrap().to_owned();
                        *lost_by_client.entry(id).or_default() += n("not_appended");
                    }
                }
            }
        }
        assert_eq!(from_listing, from_rows, "{release}");
        // what each client was told was written and never was
        let by_letter = &truth["shared_pid"]["acknowledged_not_appended"];
        for (client_id, letter) in truth["shared_pid"]["client_ids"].as_object().unwrap() {
            let told = by_letter[letter.as_str().unwrap()]
                .as_array()
                .unwrap()
                .len() as i64;
            assert_eq!(lost_by_client[client_id], told, "{release} {client_id}");
        }
        // the one grant of the id: A's InitProducerId answer
        let grants: Vec<&Value> = report["producer_ids"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["producer_id"] == pid && e["error"] == "NONE")
            .collect();
        assert_eq!(grants.len(), 1, "{release}");
        assert_eq!(grants[0]["client_id"], "shared-a");
        let granted_at = [grants[0]["response_frame"].clone()];
        for p in listed {
            assert_eq!(
                p["grant_frames"].as_array().unwrap(),
                &granted_at,
                "{release}"
            );
        }
    }
}

/// The CreateTopics response (v7) of each release's capture gives the topic id Kafka's
/// admin client recorded (the truth's `topic.topic_id`, Kafka's base64url form of the
/// Uuid), read by pidshark to the message's end: a Produce v13 request names a topic by
/// that id, and the id's name is known from the topic's creation as from a Metadata
/// response. Frames by tshark (`kafka.api_key==19`; it decodes CreateTopics only to v5).
#[test]
fn a_create_topics_response_gives_the_id_kafka_recorded() {
    for (release, frame) in [("4.4.0", 1049), ("3.9.1", 1196)] {
        let truth = truth(release);
        let id = truth["topic"]["topic_id"].as_str().unwrap();
        let hex: String = base64url(id).iter().map(|b| format!("{b:02x}")).collect();
        let out = pidshark()
            .args([
                &capture(release),
                "--frame",
                &frame.to_string(),
                "--format",
                "tree",
            ])
            .assert()
            .success();
        let tree = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(tree.contains("CreateTopics response"), "{release}: {tree}");
        let line = |field: &str| {
            tree.lines()
                .find(|l| l.contains(field))
                .unwrap_or_else(|| panic!("{release}: no {field} in {tree}"))
                .to_owned()
        };
        assert!(
            line("Topics.TopicId").contains(&format!("= 0x{hex}")),
            "{release}"
        );
        assert!(
            line("Topics.Name").contains("\"pidshark-shared\""),
            "{release}"
        );
        assert!(!tree.contains("decode error"), "{release}: {tree}");
    }
}

/// Kafka's `Uuid.toString()`: the 16 bytes in unpadded base64url.
fn base64url(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => panic!("not base64url: {text}"),
    };
    let bits: Vec<u8> = text.bytes().map(value).collect();
    let mut out = Vec::new();
    let (mut acc, mut n) = (0u32, 0);
    for v in bits {
        acc = (acc << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((acc >> n) as u8);
        }
    }
    assert_eq!(out.len(), 16, "{text}");
    out
}
