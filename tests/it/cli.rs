//! The command line: options, exit codes and messages.

use predicates::prelude::*;

use crate::common::{
    apid_request_body, apid_response_body, fixture, pidshark, report, request, response, Conn,
    PcapWriter,
};

#[test]
fn missing_file_exits_2_naming_it() {
    pidshark()
        .arg("fixtures/does-not-exist.pcap")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "fixtures/does-not-exist.pcap: cannot open",
        ));
}

#[test]
fn empty_file_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.pcap");
    std::fs::write(&path, b"").unwrap();
    pidshark()
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("empty.pcap: the file is empty"));
}

#[test]
fn directory_exits_2() {
    pidshark()
        .arg("fixtures")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("fixtures: is a directory"));
}

#[test]
fn non_capture_exits_2() {
    pidshark()
        .arg("fixtures/not-a-capture.txt")
        .assert()
        .code(2)
        .stderr("pidshark: fixtures/not-a-capture.txt: not a pcap or pcapng capture\n");
}

#[test]
fn cut_header_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short.pcap");
    let bytes = std::fs::read(fixture("seed-v0.pcap")).unwrap();
    std::fs::write(&path, &bytes[..10]).unwrap();
    pidshark()
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "short.pcap: the capture header is cut short",
        ));
}

#[test]
fn unreadable_file_exits_2() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.pcap");
    std::fs::copy(fixture("seed-v0.pcap"), &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&path).is_ok() {
        return; // running as root: permissions do not stop us, nothing to test
    }
    pidshark()
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("secret.pcap: cannot open"));
}

#[test]
fn file_cut_inside_a_record_still_reports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pcap");
    let bytes = std::fs::read(fixture("seed-v0.pcap")).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    let out = pidshark()
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let kinds: Vec<_> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.contains(&"capture_truncated".to_owned()), "{kinds:?}");
    assert_eq!(report["summary"]["packets"], 9);
    // The exchange was complete before the cut (the cut is in the last FIN).
    assert_eq!(report["summary"]["exchanges"]["complete"], 1);
}

#[test]
fn output_file_and_compact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    pidshark()
        .args(["fixtures/seed-v0.pcap", "--compact", "-o"])
        .arg(&path)
        .assert()
        .success()
        .stdout("");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1, "compact is one line");
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["format_version"], 1);
    assert_eq!(report["tool"]["name"], "pidshark");
    assert_eq!(report["tool"]["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn default_output_is_indented() {
    let out = pidshark()
        .arg("fixtures/seed-v0.pcap")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("{\n  \"format_version\": 1,"));
    assert!(text.ends_with("}\n"));
}

#[test]
fn several_captures_are_one_run_with_frames_numbered_on() {
    let report = report(&["fixtures/seed-v0.pcap", "fixtures/controller-loopback.pcap"]);
    let captures = report["captures"].as_array().unwrap();
    assert_eq!(captures.len(), 2);
    assert_eq!(captures[0]["packets"], 10);
    assert_eq!(captures[0]["format"], "pcap");
    assert_eq!(captures[0]["link_types"], serde_json::json!(["ETHERNET"]));
    let alone = crate::common::report(&["fixtures/controller-loopback.pcap"]);
    let frames = |r: &serde_json::Value| -> Vec<u64> {
        r["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ex| ex["request"]["frame"].as_u64().unwrap())
            .collect()
    };
    let mut expected = vec![4];
    expected.extend(frames(&alone).iter().map(|f| f + 10));
    assert_eq!(frames(&report), expected);
    assert_eq!(
        report["summary"]["packets"],
        10 + alone["summary"]["packets"].as_u64().unwrap()
    );
    assert_eq!(report["summary"]["tcp_connections"], 5);
}

#[test]
fn port_option_forces_kafka_on_noise() {
    let plain = report(&["fixtures/noise.pcap"]);
    assert_eq!(plain["summary"]["kafka_connections"], 0);
    let forced = report(&["fixtures/noise.pcap", "--port", "19092"]);
    assert_eq!(forced["summary"]["kafka_connections"], 1);
    assert_eq!(forced["summary"]["exchanges"]["total"], 0);
}

#[test]
fn help_documents_exit_codes() {
    pidshark()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit status: 0").and(predicate::str::contains("--port")));
}

#[test]
fn no_capture_is_a_usage_error_that_names_both_modes() {
    let run = pidshark().assert().code(2);
    let stderr = String::from_utf8(run.get_output().stderr.clone()).unwrap();
    assert!(stderr.contains("no input:"), "{stderr}");
    // the error and -h show both modes: captures, or a metadata log alone
    let short = pidshark().arg("-h").assert().success();
    let short = String::from_utf8(short.get_output().stdout.clone()).unwrap();
    for text in [&stderr, &short] {
        assert!(text.contains("pidshark [OPTIONS] <CAPTURE>..."), "{text}");
        assert!(
            text.contains("pidshark [OPTIONS] --metadata-log <PATH>..."),
            "{text}"
        );
    }
    // and the README's usage is the same
    let readme = std::fs::read_to_string(crate::common::root().join("README.md")).unwrap();
    let usage: Vec<&str> = pidshark::cli::USAGE.lines().map(str::trim).collect();
    assert!(
        readme.contains(&format!("```\n{}\n```", usage.join("\n"))),
        "README's Usage block is not cli::USAGE"
    );
}

#[test]
fn dash_as_the_output_is_standard_output_not_a_file_named_dash() {
    let dir = tempfile::tempdir().unwrap();
    let out = pidshark()
        .current_dir(dir.path())
        .args([
            fixture("seed-v0.pcap").as_os_str(),
            "-o".as_ref(),
            "-".as_ref(),
        ])
        .arg("--compact")
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["summary"]["exchanges"]["complete"], 1);
    assert!(!dir.path().join("-").exists(), "no file named -");
}

#[test]
fn dash_reads_standard_input_from_a_slow_pipe() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let bytes = std::fs::read(fixture("seed-v0.pcap")).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("pidshark"))
        .args(["-", "--compact"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A slow producer: the first read sees 7 bytes of the 24-byte file header.
    stdin.write_all(&bytes[..7]).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    stdin.write_all(&bytes[7..]).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["captures"][0]["path"], "-");
    assert_eq!(report["summary"]["exchanges"]["complete"], 1);
}

/// A capture of 60,000 AllocateProducerIds exchanges on one connection left open.
fn many_exchanges(path: &std::path::Path) {
    let mut w = PcapWriter::create(path);
    let mut c = Conn::new("10.0.0.1:40000", "10.0.0.2:9093");
    c.handshake(&mut w);
    for corr in 0..60_000 {
        let req = request(67, 0, corr, true, &apid_request_body(1, 7));
        let resp = response(
            corr,
            true,
            &apid_response_body(0, i64::from(corr) * 1000, 1000),
        );
        c.send(&mut w, true, &req, 1460);
        c.send(&mut w, false, &resp, 1460);
    }
    w.finish(); // no FIN: the connection is still open
}

#[test]
fn ndjson_to_a_closed_pipe_with_more_files_stops_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.pcap");
    many_exchanges(&path);
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("pidshark"))
        .arg(&path)
        .arg(fixture("controller-loopback.pcap"))
        .args(["--format", "ndjson"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "a closed output ends the run as `head` expects"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Not "the file is empty" for the next file, read after the output had gone.
    assert_eq!(stderr, "", "nothing on stderr");
}

#[test]
fn ndjson_to_a_closed_pipe_stops_reading_a_live_input() {
    // `... | pidshark --format ndjson - | head -1`: once the reader of the output has
    // gone, pidshark must end although its input (a live capture) is still open.
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.pcap");
    many_exchanges(&path);
    let bytes = std::fs::read(&path).unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("pidshark"))
        .args(["-", "--format", "ndjson"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The producer writes the capture, then keeps its end open, like tcpdump would.
    let producer = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
        std::thread::sleep(Duration::from_secs(30));
        drop(stdin);
    });
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("\"correlation_id\":0"), "{first}");
    drop(stdout); // `head -1` exits
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("pidshark still reads its input after its output was closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        status.code(),
        Some(0),
        "a closed output ends the run quietly"
    );
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(stderr, "", "nothing on stderr");
    drop(producer); // detached: it ends with its sleep
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

#[test]
fn gzip_capture_is_recognised_by_content_not_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("capture.bin"); // no .gz: the magic decides
    std::fs::write(
        &path,
        gzip(&std::fs::read(fixture("controller-loopback.pcap")).unwrap()),
    )
    .unwrap();
    let plain = report(&["fixtures/controller-loopback.pcap", "--compact"]);
    let zipped = report(&[path.to_str().unwrap(), "--compact"]);
    assert_eq!(zipped["exchanges"], plain["exchanges"]);
    assert_eq!(zipped["summary"], plain["summary"]);
}

/// The diagnostics of `report` of `kind`.
fn diagnostics_of<'a>(report: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == kind)
        .collect()
}

#[test]
fn truncated_gzip_is_a_truncated_capture_not_a_corrupt_one() {
    // `head -c N x.pcap.gz`: a file that simply ends early, as a cut plain pcap does.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pcap.gz");
    let zipped = gzip(&std::fs::read(fixture("controller-loopback.pcap")).unwrap());
    // Cut inside the deflate data, and inside the 8-byte trailer after it.
    for cut in [zipped.len() / 2, zipped.len() - 4] {
        std::fs::write(&path, &zipped[..cut]).unwrap();
        let report = report(&[path.to_str().unwrap()]);
        assert!(report["summary"]["packets"].as_u64().unwrap() > 0);
        assert!(
            diagnostics_of(&report, "capture_corrupt").is_empty(),
            "cut at {cut}: {:?}",
            report["diagnostics"]
        );
        let truncated = diagnostics_of(&report, "capture_truncated");
        assert_eq!(
            truncated.len(),
            1,
            "cut at {cut}: {:?}",
            report["diagnostics"]
        );
        assert_eq!(truncated[0]["severity"], "warning");
        let message = truncated[0]["message"].as_str().unwrap();
        assert!(
            message.contains("the compressed file ends in the middle of its gzip stream"),
            "{message}"
        );
        assert_eq!(
            truncated[0]["facts"]["packets"], report["summary"]["packets"],
            "{message}"
        );
    }
}

#[test]
fn damaged_gzip_data_is_a_corrupt_capture() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.pcap.gz");
    let zipped = gzip(&std::fs::read(fixture("controller-loopback.pcap")).unwrap());
    // A flipped byte in the middle of the deflate data; a CRC-32 that does not match.
    let mut flipped = zipped.clone();
    flipped[zipped.len() / 2] ^= 0xff;
    let mut bad_crc = zipped.clone();
    bad_crc[zipped.len() - 8] ^= 0x01;
    for (what, bytes, reason) in [
        ("flipped byte", flipped, ""),
        ("bad checksum", bad_crc, "checksum"),
    ] {
        std::fs::write(&path, &bytes).unwrap();
        let report = report(&[path.to_str().unwrap()]);
        assert!(
            diagnostics_of(&report, "capture_truncated").is_empty(),
            "{what}: {:?}",
            report["diagnostics"]
        );
        let corrupt = diagnostics_of(&report, "capture_corrupt");
        assert!(!corrupt.is_empty(), "{what}: {:?}", report["diagnostics"]);
        assert!(corrupt.iter().all(|d| d["severity"] == "error"), "{what}");
        let message = corrupt[0]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{what}: {message}");
    }
}

#[test]
fn corrupt_gzip_header_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.gz");
    std::fs::write(
        &path,
        [
            0x1f, 0x8b, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 1, 2, 3,
        ],
    )
    .unwrap();
    pidshark()
        .arg(&path)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.gz"));
}

#[test]
fn progress_bar_only_on_a_terminal_and_not_with_quiet() {
    use std::process::Command;
    if !crate::common::have_program(
        "script",
        "util-linux `script` gives pidshark a terminal",
        "apt-get install util-linux (Debian, Ubuntu)",
    ) {
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("pidshark");
    let on_tty = |extra: &str| -> Option<Vec<u8>> {
        // util-linux `script` gives the command a terminal
        let cmd = format!(
            "{} {extra} fixtures/controller-loopback.pcap -o /dev/null",
            bin.display()
        );
        let out = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(crate::common::root())
            .output()
            .ok()?;
        Some(out.stdout)
    };
    let with_bar = on_tty("").expect("`script` runs (have_program checked it)");
    assert!(
        String::from_utf8_lossy(&with_bar).contains("KiB"),
        "a progress bar on a terminal"
    );
    assert_eq!(
        on_tty("--quiet").unwrap(),
        Vec::<u8>::new(),
        "--quiet: no bar"
    );
    // piped stderr: never a bar
    pidshark()
        .args(["fixtures/controller-loopback.pcap", "-o", "/dev/null"])
        .assert()
        .success()
        .stderr("");
}

#[test]
fn help_points_to_the_report_format_document() {
    pidshark()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("docs/report-format.md"));
    assert!(crate::common::root().join("docs/report-format.md").exists());
}

/// The JSON report of more exchanges than it holds in memory goes through temporary
/// files, copied whole into the output (a pipe here, a file with `-o`); without a usable
/// temporary directory it is held in memory instead, and the report is the same byte for
/// byte.
#[test]
fn the_json_report_is_written_whole_without_a_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.pcap");
    crate::common::apid_capture(&path, 4, 2000); // 8,000 exchanges: about 9 MB of JSON
    let report = |tmpdir: &std::path::Path| {
        pidshark()
            .arg(&path)
            .env("TMPDIR", tmpdir)
            .assert()
            .success()
            .stderr("")
            .get_output()
            .stdout
            .clone()
    };
    let spilled = report(dir.path());
    let in_memory = report(&dir.path().join("no-such-directory"));
    assert!(spilled.len() > 8 << 20, "{} bytes", spilled.len());
    assert!(spilled == in_memory, "the reports differ");
    let into_file = dir.path().join("report.json");
    pidshark()
        .arg(&path)
        .arg("-o")
        .arg(&into_file)
        .env("TMPDIR", dir.path())
        .assert()
        .success()
        .stderr("");
    let written = std::fs::read(&into_file).unwrap();
    assert!(written == in_memory, "the report written with -o differs");
    let parsed: serde_json::Value = serde_json::from_slice(&spilled).unwrap();
    assert_eq!(parsed["exchanges"].as_array().unwrap().len(), 8000);
}

#[test]
fn stats_print_the_time_and_the_process_own_peak() {
    let out = pidshark()
        .args(["fixtures/seed-v0.pcap", "--stats", "-q", "-o", "/dev/null"])
        .assert()
        .success();
    let stderr = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let line = stderr
        .lines()
        .find(|l| l.starts_with("pidshark: stats: "))
        .unwrap_or_else(|| panic!("no stats line: {stderr}"));
    if cfg!(target_os = "linux") {
        let kib: u64 = line
            .split_once("peak memory ")
            .and_then(|(_, p)| p.strip_suffix(" KiB"))
            .unwrap_or_else(|| panic!("{line}"))
            .parse()
            .unwrap();
        // the program itself, a few MiB; not the test process's memory
        assert!((1024..64 * 1024).contains(&kib), "{line}");
    }
}

/// Issue 40: options that would accept nonsense refuse it with the reason (exit 2): a
/// negative, NaN or infinite `--slow-ms` (`-5` told as a bad value, not as an unknown
/// flag), and `--frame 0` (frames count from 1).
#[test]
fn nonsense_values_are_refused_with_the_reason() {
    let capture = fixture("seed-v0.pcap");
    for (args, says) in [
        (&["--slow-ms=-5"][..], "a latency is a finite number"),
        (&["--slow-ms", "-5"][..], "a latency is a finite number"),
        (&["--slow-ms", "nan"][..], "a latency is a finite number"),
        (&["--slow-ms", "inf"][..], "a latency is a finite number"),
        (&["--frame", "0"][..], "0 is not in 1.."),
        (
            &["--since", "30", "--until", "10"][..],
            "--since is after --until",
        ),
        (
            &[
                "--since",
                "2026-11-29T13:55:00Z",
                "--until",
                "2026-11-29T13:54:00Z",
            ][..],
            "--since is after --until",
        ),
        (
            &["--format", "csv-committed"][..],
            "give one with --metadata-log",
        ),
        (
            &["--all"][..],
            "--all lists every exchange in --format text only",
        ),
        (&["--all", "--format", "html"][..], "--format text only"),
    ] {
        let out = pidshark().arg(&capture).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("-- -5"), "{stderr}");
    }
    pidshark()
        .arg(&capture)
        .args(["--slow-ms", "0.5", "--frame", "1", "--quiet"])
        .args(["--since", "10", "--until", "10"])
        .assert()
        .success();
    pidshark()
        .args([
            capture.to_str().unwrap(),
            "--all",
            "--format",
            "text",
            "--quiet",
        ])
        .assert()
        .success();
}

/// Issue 40: a bound given in seconds after the first packet is echoed with the
/// capture's own precision, not with nine digits it does not have.
#[test]
fn a_bound_in_seconds_is_echoed_with_the_captures_precision() {
    let out = pidshark()
        .arg(fixture("seed-v0.pcap"))
        .args(["--since", "1000", "--until", "1000.5", "--quiet"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = report["captures"][0]["first_timestamp"].as_str().unwrap();
    let since = report["filters"]["since"].as_str().unwrap();
    let until = report["filters"]["until"].as_str().unwrap();
    // the capture's microseconds: six digits, as its own times
    assert_eq!(since.len(), first.len(), "{since} against {first}");
    assert_eq!(until.len(), first.len(), "{until} against {first}");
    assert_eq!(since[20..26], first[20..26]);
}
