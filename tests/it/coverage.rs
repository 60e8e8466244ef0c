//! Issue 38, point 3: coverage is part of the verdict. A capture of one broker's host
//! (`4.4.0-two-hosts.broker-1`, cut by `scripts/kafka/rig` from the cluster's capture)
//! sees one broker's controller connection of the two the cluster has; its verdict says so
//! in every format that has a verdict, with the ids between its blocks that went to the
//! broker it does not see (the controllers' committed blocks, by the truth). A capture of
//! every listener sees every broker (each heartbeats the controller every two seconds), so
//! no limit of coverage appears on a healthy full capture.

use serde_json::Value;

use crate::common::{pidshark, report, root};

const DIR: &str = "fixtures/kafka-real";

fn truth(name: &str) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(root().join(format!("{DIR}/{name}.truth.json"))).unwrap(),
    )
    .unwrap()
}

/// The report of `path` read with the controllers' metadata logs of its `truth`.
fn report_with_logs(truth: &Value, path: &str) -> Value {
    let mut args = vec![path.to_owned(), "--quiet".to_owned()];
    args.push("--no-producer-entries".to_owned());
    for d in truth["metadata_log_dirs"].as_array().unwrap() {
        args.push("--metadata-log".to_owned());
        args.push(format!("{DIR}/{}", d.as_str().unwrap()));
    }
    report(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn limit<'a>(r: &'a Value, kind: &str) -> Option<&'a Value> {
    r["verdict"]["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == kind)
}

#[test]
fn a_full_capture_sees_every_broker_of_the_cluster() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join(DIR)).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".truth.json") else {
            continue;
        };
        let truth = truth(stem);
        let brokers = truth["broker_ids"].as_array().unwrap().len() as u64;
        // a ring's truth names its files in a list
        let files: Vec<String> = match (&truth["fixture"], &truth["capture_files"]) {
            (Value::String(file), _) => vec![file.clone()],
            (_, Value::Array(files)) => files
                .iter()
                .map(|f| f.as_str().unwrap().to_owned())
                .collect(),
            other => panic!("{stem}: {other:?}"),
        };
        for file in files {
            let path = format!("{DIR}/{file}");
            let r = report(&[&path, "--quiet", "--no-producer-entries"]);
            let facts = &r["verdict"]["facts"];
            assert_eq!(facts["brokers_seen_at_controllers"], brokers, "{file}");
            assert_eq!(facts["brokers_known"], brokers, "{file}");
            assert_eq!(facts["ids_not_seen"], 0, "{file}");
            // every follower fetches the quorum's log; a leader that sends no quorum
            // message of its own in the capture is not named by it
            let controllers = truth["controller_ids"].as_array().unwrap().len() as u64;
            let known = facts["controllers_known"].as_u64().unwrap();
            assert!((controllers - 1..=controllers).contains(&known), "{file}");
            assert_eq!(facts["controllers_seen"], known, "{file}");
            assert!(limit(&r, "controller_coverage").is_none(), "{file}");
            // the log's voters add no controller the capture does not show
            let with_log = report_with_logs(&truth, &path);
            let facts = &with_log["verdict"]["facts"];
            assert_eq!(
                facts["controllers_known"], controllers,
                "{file} with its log"
            );
            assert_eq!(
                facts["controllers_seen"], controllers,
                "{file} with its log"
            );
            assert!(limit(&with_log, "controller_coverage").is_none(), "{file}");
            assert!(limit(&r, "coverage").is_none(), "{file}");
            assert!(limit(&r, "ids_not_seen").is_none(), "{file}");
            checked += 1;
        }
    }
    assert!(checked >= 18, "{checked} captures");
}

/// The ids the controllers committed to other brokers between broker `id`'s first and
/// last block of `blocks`.
fn ids_of_others_between(truth: &Value, id: i64, first: i64, last: i64) -> u64 {
    truth["committed_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["broker_id"] != id)
        .filter(|b| (first..=last).contains(&b["start"].as_i64().unwrap()))
        .map(|b| b["len"].as_u64().unwrap())
        .sum()
}

#[test]
fn a_capture_of_one_brokers_host_names_what_it_cannot_see() {
    let truth = truth("4.4.0-two-hosts");
    let path = format!("{DIR}/4.4.0-two-hosts.broker-1.pcap.gz");
    let r = report(&[&path, "--quiet", "--no-producer-entries"]);
    let blocks: Vec<i64> = r["producer_id_blocks"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert_eq!(b["broker_id"], 1);
            b["start"].as_i64().unwrap()
        })
        .collect();
    let (first, last) = (blocks[0], blocks[blocks.len() - 1]);
    let others = ids_of_others_between(&truth, 1, first, last);
    assert!(others >= 5000, "{others}");
    assert_eq!(r["verdict"]["code"], "correct_as_far_as_captured");
    let unseen = limit(&r, "ids_not_seen").expect("the ids the other broker took");
    assert_eq!(unseen["count"], others);
    assert_eq!(unseen["damage"], false);
    let text = unseen["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("{others} ids between the blocks captured")),
        "{text}"
    );
    // the same sentence in each format that carries the verdict
    for format in ["text", "ndjson", "html"] {
        let out = pidshark()
            .args([&path, "--quiet", "--format", format])
            .output()
            .unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        assert!(out.contains(text), "{format}");
    }
    // with the controllers' metadata log, broker 2 is known, and said not seen
    let r = report_with_logs(&truth, &path);
    let coverage = limit(&r, "coverage").expect("a coverage limit");
    assert_eq!(coverage["count"], 1);
    assert_eq!(
        coverage["text"],
        "1 of 2 known brokers' controller connections captured (broker 2 not seen: no heartbeat, registration or AllocateProducerIds request)"
    );
    let headline = r["verdict"]["headline"].as_str().unwrap();
    assert!(headline.contains("1 of 2 known brokers'"), "{headline}");
    // the log names three voters; broker 1's host sees only the leaders that answered it
    let led: std::collections::BTreeSet<i64> = truth["controller_leaders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["leader_id"].as_i64().unwrap())
        .collect();
    let never_led: Vec<i64> = truth["controller_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_i64().unwrap())
        .filter(|c| !led.contains(c))
        .collect();
    assert_eq!(never_led, [102], "the rig's record");
    let facts = &r["verdict"]["facts"];
    assert_eq!(facts["controllers_known"], 3);
    assert_eq!(facts["controllers_seen"], led.len() as u64);
    let controllers = limit(&r, "controller_coverage").expect("a controller coverage limit");
    let text = "2 of 3 known controllers seen in the quorum (controller 102 not seen: no fetch of the metadata log, vote, epoch begun or ended, or answer as leader)";
    assert_eq!(controllers["text"], text);
    // the same sentence in each format that carries the verdict
    for format in ["text", "ndjson", "html"] {
        let mut args = vec![path.clone(), "--quiet".to_owned()];
        args.extend(["--format".to_owned(), format.to_owned()]);
        for d in truth["metadata_log_dirs"].as_array().unwrap() {
            args.push("--metadata-log".to_owned());
            args.push(format!("{DIR}/{}", d.as_str().unwrap()));
        }
        let out = pidshark().args(&args).output().unwrap();
        let out = String::from_utf8(out.stdout).unwrap();
        assert!(out.contains(text), "{format}");
    }
}

/// The controllers' hosts see every broker's heartbeats: nothing is missing.
#[test]
fn a_capture_of_the_controllers_hosts_sees_every_broker() {
    let r = report(&[
        &format!("{DIR}/4.4.0-two-hosts.controllers.pcap.gz"),
        "--quiet",
    ]);
    assert_eq!(r["verdict"]["facts"]["brokers_seen_at_controllers"], 2);
    assert!(limit(&r, "coverage").is_none());
    assert!(limit(&r, "ids_not_seen").is_none());
}
