//! The granted ids' table (who holds each producer id and epoch, to find one granted
//! twice) against `--max-memory`: what it holds is charged at least what it takes on the
//! heap, and a capture of InitProducerId exchanges each naming a new transactional id of
//! 256 bytes stays within the promise (README "Hostile input"), forgetting the lowest
//! ids held and saying so.

#[path = "it/common.rs"]
mod common;
#[path = "support/counting.rs"]
mod counting;

use common::*;
use counting::held_now;
use std::path::Path;

use pidshark::analysis::producers::Tracker;
use pidshark::kafka::init_producer_id::{Request, Response};
use pidshark::kafka::tables::ErrorCode;
use pidshark::pairing::{Endpoints, MessageMeta, Outcome, ProducerIdExchange};
use pidshark::timestamp::Timestamp;

/// What pidshark holds beyond the budget: README "Hostile input".
const BEYOND_BUDGET_MIB: u64 = 32;

fn meta(frame: u64) -> MessageMeta {
    MessageMeta {
        frame,
        first_frame: frame,
        timestamp: Timestamp {
            secs: frame as i64,
            nanos: 0,
            nano: false,
        },
        size: 60,
        origin: None,
    }
}

/// An InitProducerId exchange on `connection` of `txn` (`None`: idempotent), granted `id`
/// at `epoch` in `frame`.
fn grant(
    connection: u64,
    txn: Option<&str>,
    (id, epoch): (i64, i16),
    frame: u64,
) -> ProducerIdExchange {
    ProducerIdExchange {
        endpoints: Endpoints {
            connection,
            client: format!("10.5.{}.{}:40000", connection / 256 % 256, connection % 256)
                .parse()
                .unwrap(),
            server: "10.0.0.2:9092".parse().unwrap(),
        },
        correlation_id: 1,
        api_version: 4,
        request_meta: meta(frame - 1),
        request: Request {
            transactional_id: Some(txn.map(str::to_owned)),
            ..Default::default()
        },
        outcome: Outcome::Complete {
            meta: meta(frame),
            response: Box::new(Response {
                error_code: Some(ErrorCode::NONE),
                producer_id: Some(id),
                producer_epoch: Some(epoch),
                ..Default::default()
            }),
        },
    }
}

/// What the granted ids' table is charged is at least what it takes on the heap, and not
/// far past it: idempotent producers, short and long transactional ids, ids held by two
/// producers, and a transactional id held at many epochs (one text for them all).
#[test]
fn the_granted_ids_are_charged_what_they_hold() {
    let long = "t".repeat(248);
    let shapes: [(&str, u32, u64, i16); 4] = [
        ("idempotent", 20_000, 1, 1),
        ("short", 20_000, 1, 1),
        ("long, two holders", 5_000, 2, 1),
        ("long, eight epochs", 2_000, 1, 8),
    ];
    for (shape, ids, holders, epochs) in shapes {
        let mut grants = Vec::new();
        for i in 0..ids {
            for h in 0..holders {
                let n = u64::from(i) * holders + h;
                let txn = match shape {
                    "idempotent" => None,
                    "short" => Some(format!("tx-{n}")),
                    _ => Some(format!("{n:08}{long}")),
                };
                for epoch in 0..epochs {
                    let frame = 2 + 2 * grants.len() as u64;
                    grants.push(grant(n, txn.as_deref(), (i64::from(i), epoch), frame));
                }
            }
        }
        let mut findings = Vec::with_capacity(16);
        let mut tracker = Tracker::default();
        let before = held_now();
        for g in &grants {
            drop(tracker.add(g, None, &mut findings));
            findings.clear();
        }
        let taken = (held_now() - before) as usize;
        let charged = tracker.held_bytes();
        let each = charged / grants.len();
        eprintln!(
            "{shape}: {} grants, taken {taken}, charged {charged} ({each} a grant)",
            grants.len()
        );
        assert_eq!(tracker.totals.grants_forgotten, 0);
        // an id held by one producer: room for one holder, not the four of a first push
        // (482 bytes a grant)
        if holders == 1 {
            assert!(each <= 300, "{shape}: {each} a grant");
        }
        assert!(
            charged >= taken,
            "{shape}: charged {charged} < taken {taken}"
        );
        assert!(
            charged <= taken + taken / 2,
            "{shape}: charged {charged}, taken {taken}"
        );
    }
}

/// Grants in the hostile capture: some 170 MiB held whole, ten times the share.
const GRANTS: u32 = 300_000;

/// `GRANTS` InitProducerId exchanges on 300 connections, each naming a transactional id
/// of 256 bytes of its own, two of them granted each producer id (the second a
/// duplicate), then the clean exchange. Held whole, the table took some 170 MiB.
fn grants_capture(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("grants.pcap");
    let mut w = PcapWriter::create(&path);
    let per_connection = GRANTS / 300;
    for conn in 0..300 {
        let client = format!("10.6.{}.{}:40000", conn / 256, conn % 256);
        let mut c = Conn::new(&client, "10.0.0.2:9092");
        c.handshake(&mut w);
        for n in 0..per_connection {
            let i = conn * per_connection + n;
            let id = format!("{i:08}{}", "t".repeat(248));
            init_pid(
                &mut w,
                &mut c,
                n as i32,
                Some(id.as_bytes()),
                i64::from(i / 2),
            );
        }
        c.close(&mut w);
    }
    clean_exchange(&mut w);
    w.finish();
    path
}

/// At 16 MiB the table forgets its oldest grants at its share (a sixteenth of the
/// budget), says so once, counts them in `grants_forgotten`, and the run stays within
/// the promise; every grant is still counted and the clean exchange read whole.
#[test]
fn many_grants_with_long_transactional_ids_stay_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = grants_capture(dir.path());
    let budget_mib = 16;
    let budget = format!("{budget_mib}M");
    let args = ["--max-memory", &budget, "--no-producer-entries"];
    let (report, peak, took) = run_measured(&path, &args);
    eprintln!("grants, budget {budget_mib} MiB: peak {peak} MiB in {took:?}");
    assert!(
        peak <= budget_mib + BEYOND_BUDGET_MIB,
        "peak {peak} MiB at a budget of {budget_mib} MiB"
    );
    assert!(took < HANG_GUARD, "{took:?}");
    let summary = &report["producer_ids"]["summary"];
    assert_eq!(summary["granted"], GRANTS, "{summary}");
    assert!(
        summary["grants_forgotten"].as_u64().unwrap() > 0,
        "{summary}"
    );
    let said: Vec<&serde_json::Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "analysis_limit" && d["facts"]["table"] == "grant_memory")
        .collect();
    assert_eq!(said.len(), 1, "{:?}", report["summary"]["diagnostics"]);
    assert_eq!(said[0]["facts"]["limit"], (budget_mib << 20) / 16);
    let listed = report["exchanges"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["status"], "complete");
    assert_eq!(listed[0]["response"]["producer_id_start"], 5000);
}
