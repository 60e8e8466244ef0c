//! The JSON report written from exchanges serialized on the analysis thread
//! (`run_serialized`, what the binary does for `--format json`) must be byte for byte
//! what `serde_json` writes for the whole report, compact and pretty, on every committed
//! capture: any field added to the report but not to the split writer shows up here.

use std::path::PathBuf;

use crate::common::{
    apid_request_body, apid_response_body, request, response, root, Conn, PcapWriter,
};

fn captures() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in [
        "fixtures",
        "fixtures/variants",
        "fixtures/analysis",
        "fixtures/regression",
    ] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".pcap") || name.ends_with(".pcapng") || name.ends_with(".gz") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn serialized_exchanges_write_the_same_report_as_serde() {
    let captures = captures();
    assert!(
        captures.len() > 40,
        "only {} captures found",
        captures.len()
    );
    let mut with_exchanges = 0;
    for path in captures {
        let config = pidshark::Config::for_inputs(vec![path.to_string_lossy().into_owned()]);
        let Ok(whole) = pidshark::run(&config) else {
            continue; // not a capture at all: the CLI tests cover those
        };
        if !whole.exchanges.is_empty() {
            with_exchanges += 1;
        }
        for pretty in [false, true] {
            let expected = if pretty {
                serde_json::to_vec_pretty(&whole).unwrap()
            } else {
                serde_json::to_vec(&whole).unwrap()
            };
            let (report, serialized) = pidshark::run_serialized(&config, pretty).unwrap();
            assert!(report.exchanges.is_empty());
            assert_eq!(serialized.len(), whole.exchanges.len());
            let mut actual = Vec::new();
            serialized.write_report(&report, &mut actual).unwrap();
            if actual != expected {
                let at = actual
                    .iter()
                    .zip(&expected)
                    .position(|(a, e)| a != e)
                    .unwrap_or(actual.len().min(expected.len()));
                let from = at.saturating_sub(80);
                panic!(
                    "{} (pretty: {pretty}) differs at byte {at}:\n got      {:?}\n expected {:?}",
                    path.display(),
                    String::from_utf8_lossy(&actual[from..(at + 80).min(actual.len())]),
                    String::from_utf8_lossy(&expected[from..(at + 80).min(expected.len())]),
                );
            }
        }
    }
    assert!(
        with_exchanges > 20,
        "only {with_exchanges} captures have exchanges"
    );
}

/// Past the sizes the fixtures reach: thousands of exchanges (many batches between the
/// threads), over 1 MiB of JSON (several chunks), completing out of request order across
/// connections (so the sort has work), pretty and compact.
#[test]
fn many_interleaved_exchanges_write_the_same_report_as_serde() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.pcap");
    {
        let mut w = PcapWriter::create(&path);
        let mut conns: Vec<Conn> = (0..6)
            .map(|i| Conn::new(&format!("10.0.0.{}:4000{i}", i + 1), "10.0.9.1:9093"))
            .collect();
        for c in &mut conns {
            c.handshake(&mut w);
        }
        let mut next_start = 0i64;
        for round in 0..500i32 {
            // Every connection sends its request, then the answers come in reverse.
            for (i, c) in conns.iter_mut().enumerate() {
                let req = request(67, 0, round, true, &apid_request_body(i as i32 + 1, 9));
                c.send(&mut w, true, &req, 1460);
            }
            for c in conns.iter_mut().rev() {
                let body = if round % 97 == 5 {
                    apid_response_body(41, -1, 0) // an error now and then
                } else {
                    next_start += 1000;
                    apid_response_body(0, next_start, 1000)
                };
                c.send(&mut w, false, &response(round, true, &body), 1460);
            }
        }
        w.finish(); // the connections stay open: their last requests are all answered
    }
    let config = pidshark::Config::for_inputs(vec![path.to_string_lossy().into_owned()]);
    let whole = pidshark::run(&config).unwrap();
    assert_eq!(whole.exchanges.len(), 3000);
    for pretty in [false, true] {
        let expected = if pretty {
            serde_json::to_vec_pretty(&whole).unwrap()
        } else {
            serde_json::to_vec(&whole).unwrap()
        };
        assert!(expected.len() > 2 << 20, "{} bytes", expected.len());
        let (report, serialized) = pidshark::run_serialized(&config, pretty).unwrap();
        let mut actual = Vec::new();
        serialized.write_report(&report, &mut actual).unwrap();
        assert!(actual == expected, "pretty: {pretty}: the reports differ");
    }
}
