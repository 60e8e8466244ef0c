//! The verdict: one for the whole capture, the same in every format and under every
//! filter, a complete sentence for each code, and honest about what the capture cannot
//! show (snaplen, a file cut short, one direction only).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    apid_request_body, apid_response_body, pidshark, request, response, root, Conn, PcapWriter,
};

/// Every verdict code, most serious first.
const CODES: [&str; 9] = [
    "duplicate_producer_ids",
    "producer_ids_went_backwards",
    "incomplete_capture",
    "incomplete_reading",
    "no_producer_ids_granted",
    "correct_as_far_as_captured",
    "correct_with_warnings",
    "correct",
    "no_exchanges",
];

/// Where a case's capture comes from.
enum Source {
    Fixture(&'static str),
    /// Written by the test under this file name (a fault no fixture script plants).
    Made(&'static str, fn(&Path)),
}

/// A capture, the options it is run with, and the verdict it must get.
struct Case {
    name: &'static str,
    source: Source,
    args: &'static [&'static str],
    code: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "no-exchanges",
        source: Source::Fixture("fixtures/noise.pcap"),
        args: &[],
        code: "no_exchanges",
    },
    Case {
        name: "duplicate",
        source: Source::Fixture("fixtures/analysis/overlap.pcap"),
        args: &[],
        code: "duplicate_producer_ids",
    },
    Case {
        name: "backwards",
        source: Source::Made("backwards.pcap", backwards),
        args: &[],
        code: "producer_ids_went_backwards",
    },
    Case {
        name: "snaplen",
        source: Source::Fixture("fixtures/incident/incident-snaplen-96.pcap"),
        args: &[],
        code: "incomplete_capture",
    },
    // a real capture cut at 128 bytes: what the cut cost the answer (issue 38, point 1)
    Case {
        name: "snaplen-cost",
        source: Source::Made("cut-128.pcap", cut_at_128),
        args: &[],
        code: "incomplete_capture",
    },
    Case {
        name: "truncated",
        source: Source::Fixture("fixtures/truncated.pcap"),
        args: &[],
        code: "incomplete_capture",
    },
    Case {
        name: "cut-gzip",
        source: Source::Made("cut.pcap.gz", cut_gzip),
        args: &[],
        code: "incomplete_capture",
    },
    Case {
        name: "one-sided",
        source: Source::Fixture("fixtures/variants/one-sided.pcap"),
        args: &[],
        code: "incomplete_capture",
    },
    // pidshark's own budget, named as its own (issue 38, point 5)
    Case {
        name: "budget",
        source: Source::Fixture("fixtures/analysis/healthy.pcap"),
        args: &["--max-memory", "1K"],
        code: "incomplete_reading",
    },
    // one broker's host: the ids the other broker took (issue 38, point 3)
    Case {
        name: "ids-not-seen",
        source: Source::Fixture("fixtures/kafka-real/4.4.0-two-hosts.broker-1.pcap.gz"),
        args: &[],
        code: "correct_as_far_as_captured",
    },
    // and with the metadata log, which knows the broker not seen
    Case {
        name: "coverage",
        source: Source::Fixture("fixtures/kafka-real/4.4.0-two-hosts.broker-1.pcap.gz"),
        args: &[
            "--metadata-log",
            "fixtures/kafka-real/4.4.0-two-hosts.metadata/101",
        ],
        code: "correct_as_far_as_captured",
    },
    Case {
        name: "no-grant",
        source: Source::Made("no-grant.pcap", not_controller),
        args: &[],
        code: "no_producer_ids_granted",
    },
    Case {
        name: "as-far-as-captured",
        source: Source::Fixture("fixtures/controller-loopback.pcap"),
        args: &[],
        code: "correct_as_far_as_captured",
    },
    Case {
        name: "tls",
        source: Source::Fixture("fixtures/analysis/healthy.pcap"),
        args: &["fixtures/noise-real/tls-openssl-9093.pcap"],
        code: "correct_as_far_as_captured",
    },
    Case {
        name: "warnings",
        source: Source::Fixture("fixtures/analysis/slow.pcap"),
        args: &[],
        code: "correct_with_warnings",
    },
    Case {
        name: "correct",
        source: Source::Fixture("fixtures/analysis/healthy.pcap"),
        args: &[],
        code: "correct",
    },
    Case {
        name: "filtered",
        source: Source::Fixture("fixtures/analysis/healthy.pcap"),
        args: &["--broker", "1"],
        code: "correct",
    },
    Case {
        name: "empty-filter",
        source: Source::Fixture("fixtures/analysis/healthy.pcap"),
        args: &["--broker", "77"],
        code: "correct",
    },
    Case {
        name: "after-the-end",
        source: Source::Fixture("fixtures/analysis/healthy.pcap"),
        args: &["--since", "100"],
        code: "correct",
    },
];

/// Broker 1 is granted 1000..=1999, then broker 2 0..=999: below an earlier block, but
/// sharing no id with it.
fn backwards(path: &Path) {
    grants(path, &[(1, 0, 1000), (2, 0, 0)]);
}

/// A gzip-compressed capture cut short, as `head -c` leaves it.
fn cut_gzip(path: &Path) {
    let whole = std::fs::read(root().join("fixtures/variants/capture.pcap.gz")).unwrap();
    std::fs::write(path, &whole[..whole.len() * 2 / 3]).unwrap();
}

/// 4.4.0's controller kill as `tcpdump -s 128` would have captured it.
fn cut_at_128(path: &Path) {
    let dir = path.parent().unwrap();
    let whole = crate::common::gunzipped(
        "fixtures/kafka-real/4.4.0-controller-kill.pcap.gz",
        dir,
        "whole.pcap",
    );
    std::fs::write(path, crate::snaplen::with_snaplen(&whole, 128)).unwrap();
}

/// Every request answered NOT_CONTROLLER.
fn not_controller(path: &Path) {
    grants(path, &[(1, 41, -1), (2, 41, -1), (1, 41, -1)]);
}

/// One connection per broker; a request each `(broker, error, start)`, in order, its answer
/// granting 1000 ids from `start` (when `error` is 0).
fn grants(path: &Path, requests: &[(i32, i16, i64)]) {
    let mut w = PcapWriter::create(path);
    let mut conns: Vec<Conn> = (1..=2)
        .map(|b| Conn::new(&format!("10.0.0.{b}:40000"), "10.0.0.100:9093"))
        .collect();
    for c in &mut conns {
        c.handshake(&mut w);
    }
    for (corr, (broker, error, start)) in requests.iter().enumerate() {
        let c = &mut conns[*broker as usize - 1];
        let corr = corr as i32;
        let len = if *error == 0 { 1000 } else { 0 };
        c.send(
            &mut w,
            true,
            &request(67, 0, corr, true, &apid_request_body(*broker, 7)),
            1460,
        );
        c.send(
            &mut w,
            false,
            &response(corr, true, &apid_response_body(*error, *start, len)),
            1460,
        );
    }
    for c in &mut conns {
        c.close(&mut w);
    }
    w.finish();
}

/// The case's capture: the fixture, or one made in `dir`.
fn capture(case: &Case, dir: &Path) -> PathBuf {
    match case.source {
        Source::Fixture(path) => root().join(path),
        Source::Made(file, make) => {
            let path = dir.join(file);
            make(&path);
            path
        }
    }
}

/// pidshark's output for `capture` with `args`, the capture's path written as the
/// fixture's name (a made capture's directory is temporary).
fn output(capture: &Path, args: &[&str]) -> String {
    let out = pidshark()
        .arg(capture)
        .args(args)
        .output()
        .expect("pidshark runs");
    assert!(out.status.success(), "{capture:?} {args:?}: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let shown = capture.strip_prefix(root()).unwrap_or(capture);
    let name = capture.file_name().unwrap().to_string_lossy();
    let named = match shown.is_absolute() {
        true => name.to_string(),
        false => shown.to_string_lossy().into_owned(),
    };
    text.replace(&capture.to_string_lossy().into_owned(), &named)
}

fn json_verdict(capture: &Path, args: &[&str]) -> Value {
    let report: Value = serde_json::from_str(&output(capture, args)).unwrap();
    report["verdict"].clone()
}

/// The page's verdict paragraph, as a person reads it.
fn html_verdict(capture: &Path, args: &[&str]) -> String {
    let page = output(capture, &[args, &["--format", "html"]].concat());
    let doc = scraper::Html::parse_document(&page);
    let selector = scraper::Selector::parse("#verdict").unwrap();
    let el = doc.select(&selector).next().expect("a #verdict element");
    el.text().collect::<String>().trim().to_owned()
}

/// The text report's verdict: its third line.
fn text_verdict(text: &str) -> &str {
    text.lines().nth(2).unwrap_or_default()
}

/// Goldens of the text report for each verdict code and filter case
/// (`fixtures/verdicts/*.text.txt`), rewritten by `scripts/bless-golden`.
#[test]
fn text_goldens_of_every_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let bless = std::env::var_os("PIDSHARK_BLESS").is_some();
    let mut differ = Vec::new();
    for case in CASES {
        let capture = capture(case, dir.path());
        let text = output(&capture, &[case.args, &["--format", "text"]].concat());
        let golden = root().join(format!("fixtures/verdicts/{}.text.txt", case.name));
        if bless {
            std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
            std::fs::write(&golden, &text).unwrap();
        } else if std::fs::read_to_string(&golden).ok().as_deref() != Some(text.as_str()) {
            differ.push(format!("{}:\n{text}", golden.display()));
        }
    }
    assert!(differ.is_empty(), "differ:\n{}", differ.join("\n"));
}

/// Goldens of the HTML page's structure for each verdict code and filter case
/// (`fixtures/verdicts/*.html.txt`, as `tests/it/html.rs` extracts it), rewritten by
/// `scripts/bless-golden`.
#[test]
fn html_goldens_of_every_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let bless = std::env::var_os("PIDSHARK_BLESS").is_some();
    let mut differ = Vec::new();
    for case in CASES {
        let capture = capture(case, dir.path());
        let page = output(&capture, &[case.args, &["--format", "html"]].concat());
        let outline = crate::html::structure(&page);
        let golden = root().join(format!("fixtures/verdicts/{}.html.txt", case.name));
        if bless {
            std::fs::write(&golden, &outline).unwrap();
        } else if std::fs::read_to_string(&golden).ok().as_deref() != Some(outline.as_str()) {
            differ.push(format!("{}:\n{outline}", golden.display()));
        }
    }
    assert!(differ.is_empty(), "differ:\n{}", differ.join("\n"));
}

/// Each case gets its code; the JSON, text and HTML say the same sentence; every code
/// is among the cases, and every sentence is whole.
#[test]
fn each_code_has_a_case_and_a_whole_sentence_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for code in CODES {
        assert!(CASES.iter().any(|c| c.code == code), "no case for {code}");
    }
    for case in CASES {
        let capture = capture(case, dir.path());
        let verdict = json_verdict(&capture, case.args);
        assert_eq!(verdict["code"], case.code, "{}: {verdict}", case.name);
        let headline = verdict["headline"].as_str().unwrap();
        let title = match case.code {
            "no_exchanges" => "NO ALLOCATEPRODUCERIDS EXCHANGES".to_owned(),
            code => code.replace('_', " ").to_uppercase(),
        };
        assert!(
            headline.replace(',', "").starts_with(&format!("{title}: ")),
            "{}: {headline}",
            case.name
        );
        assert_whole(headline);
        let text = output(&capture, &[case.args, &["--format", "text"]].concat());
        assert_eq!(text_verdict(&text), headline, "{}", case.name);
        assert_eq!(html_verdict(&capture, case.args), headline, "{}", case.name);
    }
}

/// A sentence that ends where it should, with no list left empty.
fn assert_whole(sentence: &str) {
    let last = sentence.chars().last().unwrap();
    assert!(last.is_alphanumeric() || last == ')', "{sentence:?}");
    for torn in [": ,", ", ,", ": ;", "answered ;", "answered ,", "  "] {
        assert!(!sentence.contains(torn), "{torn:?} in {sentence:?}");
    }
}

/// Filters choose what is listed, never what is judged: the verdict is the same with and
/// without each filter, alone and combined, in every format that shows it.
#[test]
fn the_verdict_is_the_same_under_every_filter() {
    let filters: &[&[&str]] = &[
        &["--broker", "1"],
        &["--broker", "77"],
        &["--connection", "0"],
        &["--since", "0.1"],
        &["--since", "100"],
        &["--until", "0"],
        &["--errors-only"],
        &["--frame", "5"],
        &[
            "--broker",
            "2",
            "--since",
            "0.05",
            "--until",
            "0.2",
            "--errors-only",
        ],
    ];
    for fixture in [
        "fixtures/analysis/healthy.pcap",
        "fixtures/analysis/failover-regression.pcap",
        "fixtures/analysis/error-streak.pcap",
        "fixtures/controller-loopback.pcap",
        "fixtures/variants/snaplen.pcap",
    ] {
        let capture = root().join(fixture);
        let whole = json_verdict(&capture, &[]);
        let text = output(&capture, &["--format", "text"]);
        let html = html_verdict(&capture, &[]);
        assert_eq!(text_verdict(&text), whole["headline"], "{fixture}");
        assert_eq!(html, whole["headline"], "{fixture}");
        for args in filters {
            assert_eq!(json_verdict(&capture, args), whole, "{fixture} {args:?}");
            let filtered = output(&capture, &[args, &["--format", "text"][..]].concat());
            assert_eq!(
                text_verdict(&filtered),
                whole["headline"],
                "{fixture} {args:?}"
            );
            assert_eq!(
                html_verdict(&capture, args),
                whole["headline"],
                "{fixture} {args:?}"
            );
        }
    }
}

/// The combination from the issue on a real cluster's capture: it once turned `CORRECT AS
/// FAR AS CAPTURED: 44 blocks` into `NO PRODUCER IDS GRANTED: 46 requests`.
#[test]
fn a_real_capture_keeps_its_verdict_under_combined_filters() {
    let capture = root().join("fixtures/kafka-real/3.9.1-controller-kill.pcap.gz");
    let args = [
        "--broker",
        "2",
        "--since",
        "5",
        "--until",
        "15",
        "--errors-only",
    ];
    let whole = json_verdict(&capture, &[]);
    assert_eq!(whole["code"], "correct_as_far_as_captured");
    let text = output(&capture, &[&args[..], &["--format", "text"]].concat());
    assert_eq!(text_verdict(&text), whole["headline"]);
    // listed or not, the filters are named, and the verdict stays the whole capture's
    assert!(text.contains("(broker 2, requested from "), "{text}");
}

/// A filter that matches nothing says so in one line, and how many there were.
#[test]
fn a_filter_that_matches_nothing_says_so() {
    let capture = root().join("fixtures/analysis/healthy.pcap");
    for args in [&["--broker", "77"][..], &["--since", "100"]] {
        let text = output(&capture, &[args, &["--format", "text"]].concat());
        let said: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("No exchange matches the filters ("))
            .collect();
        assert_eq!(said.len(), 1, "{text}");
        assert!(
            said[0].ends_with("): none of the 9 is listed below"),
            "{text}"
        );
        let report: Value = serde_json::from_str(&output(&capture, args)).unwrap();
        assert_eq!(report["filters"]["exchanges_shown"], 0);
        assert_eq!(report["exchanges"].as_array().unwrap().len(), 0);
    }
    let report: Value = serde_json::from_str(&output(&capture, &["--broker", "1"])).unwrap();
    assert_eq!(report["filters"]["exchanges_shown"], 3);
    // --frame on a frame that is not AllocateProducerIds: what it is, in the same line
    let text = output(&capture, &["--frame", "1", "--format", "text"]);
    assert!(
        text.contains("none of the 9 is listed below; frame 1 is TCP "),
        "{text}"
    );
}

/// A capture of the client's direction only: each Kafka connection says so, and the
/// verdict says what to do.
#[test]
fn a_one_sided_capture_is_named_per_connection_and_in_the_verdict() {
    let capture = root().join("fixtures/variants/one-sided.pcap");
    let report: Value = serde_json::from_str(&output(&capture, &[])).unwrap();
    let one_sided: Vec<&Value> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "one_sided_connection")
        .collect();
    assert_eq!(
        one_sided.len() as u64,
        report["summary"]["kafka_connections"]
    );
    let waiting: u64 = one_sided
        .iter()
        .map(|d| d["facts"]["requests_waiting"].as_u64().unwrap())
        .sum();
    assert!(waiting >= report["summary"]["exchanges"]["total"].as_u64().unwrap());
    let limits = report["verdict"]["limits"].as_array().unwrap();
    assert_eq!(limits[0]["kind"], "one_sided");
    assert!(limits[0]["advice"]
        .as_str()
        .unwrap()
        .contains("both directions"));
    // the whole capture has no one-sided connection
    let base: Value =
        serde_json::from_str(&output(&root().join("fixtures/variants/base.pcap"), &[])).unwrap();
    assert_eq!(
        base["summary"]["diagnostics"]["one_sided_connection"],
        Value::Null
    );
}

/// Packets cut by the snaplen are counted with the length they were cut to, from the
/// file's records; the verdict says to capture again with `-s 0`.
#[test]
fn a_snaplen_capture_says_where_packets_were_cut_and_what_to_do() {
    let capture = root().join("fixtures/incident/incident-snaplen-96.pcap");
    let report: Value = serde_json::from_str(&output(&capture, &[])).unwrap();
    let cap = &report["captures"][0];
    assert_eq!(cap["cut_len"], 96);
    assert_eq!(
        cap["packets_cut"],
        report["summary"]["diagnostics"]["packet_truncated"]
    );
    let headline = report["verdict"]["headline"].as_str().unwrap();
    assert!(
        headline.starts_with("INCOMPLETE CAPTURE: 118 packets cut at 96 bytes by the snaplen"),
        "{headline}"
    );
    assert!(headline.contains("capture again with -s 0"), "{headline}");
    // the truth: the script captured with `tcpdump -s 96`
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("fixtures/incident/incident-snaplen-96.truth.json"))
            .unwrap(),
    )
    .unwrap();
    assert!(truth["recorded_with"].as_str().unwrap().contains(" -s 96 "));
}
