//! Exit codes under pipes: a closed standard output or standard error is never a crash,
//! in any format, and never changes what a gate (`--fail-on`, `--expect`) says. The
//! streams are closed before pidshark starts (a pipe whose reader is dropped), so every
//! write to them fails, every run.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common::*;

/// Every format that reads a capture alone (`csv-committed` needs a metadata log: its own
/// test below).
const FORMATS: [&str; 8] = [
    "json",
    "ndjson",
    "text",
    "tree",
    "csv",
    "csv-blocks",
    "csv-producers",
    "html",
];

/// Which standard stream pidshark is given closed.
#[derive(Debug, Clone, Copy)]
enum Closed {
    Stdout,
    Stderr,
}

/// Runs pidshark on `args` with `closed` a pipe nobody reads; the other stream is captured.
fn run_closed(args: &[&str], closed: Closed) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("pidshark"));
    cmd.current_dir(root())
        .args(args)
        .arg("--quiet")
        .stdin(Stdio::null());
    match closed {
        Closed::Stdout => cmd.stdout(writer).stderr(Stdio::piped()),
        Closed::Stderr => cmd.stderr(writer).stdout(Stdio::piped()),
    };
    cmd.output().expect("pidshark runs")
}

/// Runs `args` in every format with each stream closed; asserts the exit code is `code`
/// (never 101, a panic) and hands the open stream's text to `check`.
fn assert_exit_in_every_format(args: &[&str], code: i32, check: impl Fn(Closed, &str, &str)) {
    for format in FORMATS {
        for closed in [Closed::Stdout, Closed::Stderr] {
            let mut all = args.to_vec();
            all.extend(["--format", format]);
            let out = run_closed(&all, closed);
            let other = match closed {
                Closed::Stdout => String::from_utf8_lossy(&out.stderr),
                Closed::Stderr => String::from_utf8_lossy(&out.stdout),
            };
            assert_ne!(
                out.status.code(),
                Some(101),
                "pidshark panicked: {all:?} with {closed:?} closed: {other}"
            );
            assert_eq!(
                out.status.code(),
                Some(code),
                "{all:?} with {closed:?} closed: {other}"
            );
            check(closed, format, &other);
        }
    }
}

#[test]
fn clean_run_exits_0_with_either_stream_closed() {
    assert_exit_in_every_format(
        &["fixtures/analysis/healthy.pcap"],
        0,
        |closed, format, other| match closed {
            Closed::Stdout => assert_eq!(other, "", "{format}: nothing on stderr"),
            Closed::Stderr => assert!(!other.is_empty(), "{format}: the report is written"),
        },
    );
}

#[test]
fn gate_that_does_not_hold_exits_0_with_either_stream_closed() {
    assert_exit_in_every_format(
        &[
            "fixtures/analysis/healthy.pcap",
            "--fail-on",
            "pid_block_overlap,error",
        ],
        0,
        |closed, format, other| {
            if let Closed::Stdout = closed {
                assert_eq!(other, "", "{format}: nothing on stderr");
            }
        },
    );
}

#[test]
fn fail_on_that_holds_exits_1_with_either_stream_closed() {
    assert_exit_in_every_format(
        &[
            "fixtures/analysis/overlap.pcap",
            "--fail-on",
            "pid_block_overlap",
        ],
        1,
        |closed, format, other| match closed {
            Closed::Stdout => assert!(
                other.contains("--fail-on conditions hold: pid_block_overlap (1)"),
                "{format}: the gate is named on stderr: {other}"
            ),
            Closed::Stderr => assert!(!other.is_empty(), "{format}: the report is written"),
        },
    );
}

#[test]
fn expect_that_differs_exits_1_with_either_stream_closed() {
    assert_exit_in_every_format(
        &[
            "fixtures/analysis/overlap.pcap",
            "--expect",
            "fixtures/analysis/healthy.report.json",
        ],
        1,
        |closed, format, other| {
            if let Closed::Stdout = closed {
                assert!(
                    other.contains("differ from fixtures/analysis/healthy.report.json"),
                    "{format}: the differences are listed on stderr: {other}"
                );
            }
        },
    );
}

#[test]
fn bad_input_exits_2_with_either_stream_closed() {
    assert_exit_in_every_format(
        &["fixtures/not-a-capture.txt", "--fail-on", "error"],
        2,
        |closed, format, other| match closed {
            Closed::Stdout => assert!(
                other.contains("pidshark: fixtures/not-a-capture.txt: "),
                "{format}: the file is named on stderr: {other}"
            ),
            Closed::Stderr => assert_eq!(other, "", "{format}: no report"),
        },
    );
}

#[test]
fn bad_expect_file_exits_2_with_either_stream_closed() {
    assert_exit_in_every_format(
        &[
            "fixtures/analysis/healthy.pcap",
            "--expect",
            "fixtures/not-a-capture.txt",
        ],
        2,
        |closed, format, other| {
            if let Closed::Stdout = closed {
                assert!(
                    other.contains("cannot use as --expect"),
                    "{format}: {other}"
                );
            }
        },
    );
}

#[test]
fn usage_error_exits_2_with_stderr_closed() {
    let out = run_closed(&["--format", "yaml", "x.pcap"], Closed::Stderr);
    assert_eq!(out.status.code(), Some(2));
}

/// Many exchanges of broker 1 granting disjoint blocks, then broker 2 granted the first
/// block again: the only overlap is at the very end.
fn overlap_at_the_end(path: &Path, exchanges: i32) {
    let mut w = PcapWriter::create(path);
    let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:9093");
    c.handshake(&mut w);
    for corr in 0..=exchanges {
        let (broker, start) = match corr {
            last if last == exchanges => (2, 0),
            _ => (1, i64::from(corr) * 1000),
        };
        let req = request(67, 0, corr, true, &apid_request_body(broker, 7));
        let resp = response(corr, true, &apid_response_body(0, start, 1000));
        c.send(&mut w, true, &req, 1460);
        c.send(&mut w, false, &resp, 1460);
    }
    c.close(&mut w);
    w.finish();
}

#[test]
fn closed_output_does_not_cut_a_gated_run_short() {
    // A reader that goes early (`| grep -q`) must not turn a gate that holds on the
    // whole capture into exit 0: the overlap is past the first few hundred kilobytes of
    // output that fill the pipe's buffers.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late-overlap.pcap");
    overlap_at_the_end(&path, 20_000);
    let path = path.to_str().unwrap();
    let whole = report(&[path, "--compact"]);
    assert_eq!(
        whole["summary"]["diagnostics"]["pid_block_overlap"], 1,
        "the capture has one overlap, at its end"
    );
    for format in ["ndjson", "csv", "json"] {
        let out = run_closed(
            &[path, "--format", format, "--fail-on", "pid_block_overlap"],
            Closed::Stdout,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
        assert!(
            stderr.contains("pid_block_overlap (1)"),
            "{format}: {stderr}"
        );
    }
}

#[test]
fn csv_committed_exits_0_with_either_stream_closed() {
    for closed in [Closed::Stdout, Closed::Stderr] {
        let args = [
            "--metadata-log",
            "fixtures/kafka-real/4.4.0-steady.metadata/101",
            "--format",
            "csv-committed",
        ];
        let out = run_closed(&args, closed);
        assert_eq!(out.status.code(), Some(0), "{closed:?} closed");
    }
}

/// A capture written into a named pipe (`mkfifo f; tcpdump -w f & pidshark f`) is read
/// once, whole: opening it to look at its first packet, as a regular file is, paired with
/// the writer, and a writer done by the time that look closed it (a capture that fits in
/// the pipe's buffer) left the real open waiting for a writer that was gone. Several
/// rounds, small and large, since whether the writer was done first is a race.
#[cfg(unix)]
#[test]
fn a_named_pipe_is_opened_once_and_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.pcap");
    let mut w = PcapWriter::create(&small);
    clean_exchange(&mut w);
    w.finish();
    let large = dir.path().join("large.pcap");
    apid_capture(&large, 20, 5); // over 4 MiB: far more than a pipe's buffer
    let fifo = dir.path().join("capture.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        assert!(!ci(), "mkfifo failed");
        eprintln!("skipped: mkfifo could not make a named pipe here");
        return;
    }
    for (capture, exchanges) in [(&small, 1); 8].into_iter().chain([(&large, 100)]) {
        let bytes = std::fs::read(capture).unwrap();
        let into = fifo.clone();
        let writer = std::thread::spawn(move || std::fs::write(into, bytes));
        let out = pidshark()
            .args([fifo.to_str().unwrap(), "--compact", "--quiet"])
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}: {out:?}", capture.display());
        writer
            .join()
            .unwrap()
            .expect("the writer's pipe stayed open");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["summary"]["exchanges"]["complete"], exchanges);
    }
}
