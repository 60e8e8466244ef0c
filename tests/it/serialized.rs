//! The JSON report written from exchanges serialized on the analysis thread
//! (`JsonSink`, what the binary does for `--format json`) must be byte for byte what
//! `serde_json` writes for the whole report, compact and pretty, on every committed
//! capture, whether its lists stayed in memory or went through temporary files: any
//! field added to the report but not to the split writer shows up here.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pidshark::report::json::JsonSink;
use pidshark::report::out::ReportOut;

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

/// Bytes written by the output thread, read after the run.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What `--format json` writes, with lists held in memory up to `run_bytes`.
fn json_of(config: &pidshark::Config, pretty: bool, run_bytes: usize) -> Vec<u8> {
    let out = Shared::default();
    let mut sink = JsonSink::with_run_bytes(pretty, Box::new(out.clone()), run_bytes);
    let report = pidshark::run(config, &mut sink).unwrap();
    assert!(report.exchanges.is_empty());
    let bytes = out.0.lock().unwrap().clone();
    bytes
}

/// A file as the report's output, counting the stretches of spilled runs copied into it.
struct CountingFile {
    file: File,
    copies: Arc<Mutex<usize>>,
}

impl Write for CountingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl ReportOut for CountingFile {
    fn copy_from(&mut self, from: &mut File, len: u64) -> std::io::Result<()> {
        *self.copies.lock().unwrap() += 1;
        self.file.copy_from(from, len)
    }
}

/// What `--format json` writes into a file (as with `-o`), with lists held in memory up
/// to `run_bytes`, and how many stretches of spilled runs the kernel copied into it.
fn json_into_file(config: &pidshark::Config, pretty: bool, run_bytes: usize) -> (Vec<u8>, usize) {
    let mut file = tempfile::tempfile().unwrap();
    let copies = Arc::new(Mutex::new(0));
    let out = Box::new(CountingFile {
        file: file.try_clone().unwrap(),
        copies: Arc::clone(&copies),
    });
    let mut sink = JsonSink::output_with_run_bytes(pretty, out, run_bytes);
    pidshark::run(config, &mut sink).unwrap();
    drop(sink);
    file.seek(SeekFrom::Start(0)).unwrap();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    let copies = *copies.lock().unwrap();
    (bytes, copies)
}

/// What serde writes for the whole report, with the newline the binary adds.
fn serde_of(whole: &pidshark::report::model::Report, pretty: bool) -> Vec<u8> {
    let mut expected = if pretty {
        serde_json::to_vec_pretty(whole).unwrap()
    } else {
        serde_json::to_vec(whole).unwrap()
    };
    expected.push(b'\n');
    expected
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
        let Ok(whole) = pidshark::report(&config) else {
            continue; // not a capture at all: the CLI tests cover those
        };
        if !whole.exchanges.is_empty() {
            with_exchanges += 1;
        }
        for (pretty, run_bytes) in [
            (false, 8 << 20),
            (true, 8 << 20),
            (true, 1024),
            (false, 1024),
        ] {
            let expected = serde_of(&whole, pretty);
            let actual = json_of(&config, pretty, run_bytes);
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
    let whole = pidshark::report(&config).unwrap();
    assert_eq!(whole.exchanges.len(), 3000);
    for pretty in [false, true] {
        let expected = serde_of(&whole, pretty);
        assert!(expected.len() > 2 << 20, "{} bytes", expected.len());
        // in memory, and through runs of 64 KiB merged at the end
        for run_bytes in [8 << 20, 64 << 10] {
            let actual = json_of(&config, pretty, run_bytes);
            assert!(
                actual == expected,
                "pretty: {pretty}, runs of {run_bytes}: the reports differ"
            );
            let (into_file, copies) = json_into_file(&config, pretty, run_bytes);
            assert!(
                into_file == expected,
                "pretty: {pretty}, runs of {run_bytes}, into a file: the reports differ"
            );
            // spilled, the lists came in order enough to be one run each, copied whole
            let spilled = run_bytes < expected.len();
            assert_eq!(copies > 0, spilled, "runs of {run_bytes}: {copies} copies");
        }
    }
}
