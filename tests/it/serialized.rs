//! The JSON report written from exchanges serialized on the analysis thread
//! (`run_serialized`, what the binary does for `--format json`) must be byte for byte
//! what `serde_json` writes for the whole report, compact and pretty, on every committed
//! capture: any field added to the report but not to the split writer shows up here.

use std::path::PathBuf;

use crate::common::root;

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
